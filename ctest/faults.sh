#!/usr/bin/env bash
# Fault injection: sets up one fault in skinnylt's environment (a bad real
# library, a log or tuning file that is a FIFO, a device, a directory, junk
# configuration values), runs the client (faults.c) under a time limit, and
# checks its exit status and what skinnylt wrote to stderr.
#
# usage: faults.sh <case>    (ctest runs one case per test; see CMakeLists.txt)
# env:   FAULTS_BIN             the client
#        FAULTS_SKINNYLT        libskinnylt.so under test
#        FAULTS_STUB_REENTRANT  the stub whose constructor calls hipBLASLt
#        FAULTS_SCRATCH         a directory for the case's files
# Exits 0 (pass), 1 (fail) or 77 (skipped: a system hipBLASLt would be found).
set -u
case_name="${1:?usage: faults.sh <case>}"
: "${FAULTS_BIN:?}" "${FAULTS_SKINNYLT:?}" "${FAULTS_STUB_REENTRANT:?}" "${FAULTS_SCRATCH:?}"
scratch="$FAULTS_SCRATCH/$case_name"
rm -rf "$scratch" && mkdir -p "$scratch" || exit 1

# Each run starts with no skinnylt variable: only what the case sets counts.
for v in $(env | sed -n 's/^\(SKINNYLT_[A-Za-z0-9_]*\)=.*/\1/p'); do unset "$v"; done
unset LD_PRELOAD

LIMIT=10 # seconds per run: a hang fails the run instead of blocking the suite
failures=0
fail() { echo "FAIL $case_name: $*"; failures=$((failures + 1)); }

# run LABEL [VAR=value...] -- [client options...]
# Runs the client with a time limit; its stdout and stderr go to $scratch/LABEL.*
run() {
    local label=$1 envs=()
    shift
    while [ "$1" != "--" ]; do envs+=("$1"); shift; done
    shift
    timeout -k 2 "$LIMIT" env "${envs[@]}" "$FAULTS_BIN" "$@" >"$scratch/$label.out" 2>"$scratch/$label.err"
    local rc=$?
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        fail "$label: hung (killed after ${LIMIT} s) with ${envs[*]}"
    elif [ "$rc" != 0 ]; then
        fail "$label: exit status $rc with ${envs[*]}"
        sed 's/^/    /' "$scratch/$label.out" "$scratch/$label.err"
    fi
}

# lines LABEL MIN MAX PATTERN...: MIN..MAX lines of LABEL's stderr contain every PATTERN.
lines() {
    local label=$1 min=$2 max=$3
    shift 3
    local n
    n=$(awk -v pats="$(printf '%s\n' "$@")" '
        BEGIN { np = split(pats, p, "\n") }
        { ok = 1; for (i = 1; i <= np; i++) if (p[i] != "" && index($0, p[i]) == 0) ok = 0; n += ok }
        END { print n + 0 }' "$scratch/$label.err")
    if [ "$n" -lt "$min" ] || [ "$n" -gt "$max" ]; then
        local want="$min to $max"
        [ "$min" = "$max" ] && want="$min"
        fail "$label: $n stderr line(s) containing [$*], want $want"
        sed 's/^/    stderr: /' "$scratch/$label.err"
    fi
}

# A system hipBLASLt would be found after a refused candidate: those cases then
# cannot tell "refused" from "fell back to the system library".
no_system_hipblaslt() {
    if { ldconfig -p 2>/dev/null || /sbin/ldconfig -p 2>/dev/null; } | grep -q 'libhipblaslt\.so'; then
        echo "a system libhipblaslt is installed: skipped"
        exit 77
    fi
}

# The unusable SKINNYLT_REAL_LIB values of case (c), as label=path.
real_lib_faults() {
    : >"$scratch/empty.so"
    mkdir -p "$scratch/dir.so"
    echo "not a shared library" >"$scratch/text.so"
    echo "missing=$scratch/missing/libhipblaslt.so.1"
    echo "empty=$scratch/empty.so"
    echo "directory=$scratch/dir.so"
    echo "libm=libm.so.6"
    echo "text=$scratch/text.so"
}

# The unusable SKINNYLT_TUNING_FILE values of case (d), as label=path.
tuning_faults() {
    mkfifo "$scratch/tuning.fifo"
    mkdir -p "$scratch/tuning.dir"
    : >"$scratch/empty.json"
    printf '{"arch": "gfx942", "entries": [{"dtype": "bf16", "n": 40' >"$scratch/truncated.json"
    echo "fifo=$scratch/tuning.fifo"
    echo "devzero=/dev/zero"
    echo "directory=$scratch/tuning.dir"
    echo "missing=$scratch/missing.json"
    echo "empty=$scratch/empty.json"
    echo "truncated=$scratch/truncated.json"
}

case "$case_name" in
# ---------------------------------------------------------------- (a) re-entrant constructor
reentrant)
    run reentrant SKINNYLT_REAL_LIB="$FAULTS_STUB_REENTRANT" -- \
        --real 1 --stub "$FAULTS_STUB_REENTRANT" --reentrant --version 100202
    cat "$scratch/reentrant.out"
    ;;

# ---------------------------------------------------------------- (b) skinnylt as its own real library
# The same file under hipBLASLt's name (a symlink): one loaded object, refused by address.
self-link)
    no_system_hipblaslt
    mkdir -p "$scratch/lib" && ln -s "$FAULTS_SKINNYLT" "$scratch/lib/libhipblaslt.so.1"
    run explicit SKINNYLT_REAL_LIB="$scratch/lib/libhipblaslt.so.1" -- --real 0 --version 100200
    run search LD_LIBRARY_PATH="$scratch/lib" -- --real 0 --version 100200
    ;;
# A copy: a second skinnylt at another address, to be recognised by its marker symbol.
self-copy-explicit)
    no_system_hipblaslt
    mkdir -p "$scratch/lib" && cp "$FAULTS_SKINNYLT" "$scratch/lib/libhipblaslt.so.1"
    run explicit SKINNYLT_REAL_LIB="$scratch/lib/libhipblaslt.so.1" -- --real 0 --version 100200
    lines explicit 1 1000 SKINNYLT_REAL_LIB
    ;;
self-copy-search)
    no_system_hipblaslt
    mkdir -p "$scratch/lib" && cp "$FAULTS_SKINNYLT" "$scratch/lib/libhipblaslt.so.1"
    run search LD_LIBRARY_PATH="$scratch/lib" -- --real 0 --version 100200
    ;;

# ---------------------------------------------------------------- (c) unusable SKINNYLT_REAL_LIB
# No crash and no real library, whatever the path holds.
real-lib-unusable)
    no_system_hipblaslt
    while IFS== read -r label path; do
        run "$label" SKINNYLT_REAL_LIB="$path" -- --real 0 --version 100200
    done < <(real_lib_faults)
    ;;
# ... and one warning line naming the variable, with logging off.
real-lib-missing | real-lib-empty | real-lib-directory | real-lib-libm | real-lib-text)
    no_system_hipblaslt
    want="${case_name#real-lib-}"
    while IFS== read -r label path; do
        [ "$label" = "$want" ] || continue
        run "$label" SKINNYLT_REAL_LIB="$path" -- --real 0 --version 100200
        lines "$label" 1 1 SKINNYLT_REAL_LIB
    done < <(real_lib_faults)
    ;;

# ---------------------------------------------------------------- (d) environment faults
# Logging is off by default: a clean run writes nothing to stderr.
quiet)
    run quiet SKINNYLT_STANDALONE=1 -- --real 0 --max-m 128
    lines quiet 0 0 ""
    ;;
# A regular log file (%i: the pid) receives the log, down to the counters at exit.
log-file)
    run log SKINNYLT_STANDALONE=1 SKINNYLT_LOG="info:$scratch/log-%i.txt" -- --real 0
    if ! cat "$scratch"/log-*.txt 2>/dev/null | grep -q 'matmul calls'; then
        fail "log: no counters ('matmul calls') in $scratch/log-<pid>.txt"
    fi
    lines log 0 0 ""
    ;;
# A FIFO nobody reads: opening it for writing would block (at the latest at exit,
# when the counters are logged).
log-fifo)
    mkfifo "$scratch/log.fifo"
    run fifo SKINNYLT_STANDALONE=1 SKINNYLT_LOG="warn:$scratch/log.fifo" -- --real 0
    lines fifo 1 1000 SKINNYLT_LOG
    ;;
# SKINNYLT_RECORD: a regular file gets one line per distinct GEMM ...
record-file)
    run record SKINNYLT_STANDALONE=1 SKINNYLT_RECORD="$scratch/record-%i.jsonl" -- --real 0 --max-m 128
    n=$(cat "$scratch"/record-*.jsonl 2>/dev/null | wc -l)
    [ "$n" = 2 ] || fail "record: $n lines in $scratch/record-<pid>.jsonl, want 2 (two distinct GEMMs)"
    lines record 0 0 ""
    ;;
# ... and a FIFO nobody reads must not block it (as for SKINNYLT_LOG): today the
# first call hangs, opening it while the process state is made.
record-fifo)
    mkfifo "$scratch/record.fifo"
    run fifo SKINNYLT_STANDALONE=1 SKINNYLT_RECORD="$scratch/record.fifo" -- --real 0 --max-m 128
    lines fifo 1 1000 SKINNYLT_RECORD
    ;;
# No hang and the embedded table (routing as usual), whatever the file is.
tuning-unusable)
    while IFS== read -r label path; do
        run "$label" SKINNYLT_STANDALONE=1 SKINNYLT_TUNING_FILE="$path" -- --real 0 --max-m 128
    done < <(tuning_faults)
    ;;
# ... and a warning naming the variable.
tuning-fifo | tuning-devzero | tuning-directory | tuning-missing | tuning-empty | tuning-truncated)
    want="${case_name#tuning-}"
    while IFS== read -r label path; do
        [ "$label" = "$want" ] || continue
        run "$label" SKINNYLT_STANDALONE=1 SKINNYLT_TUNING_FILE="$path" -- --real 0 --max-m 128
        lines "$label" 1 1000 SKINNYLT_TUNING_FILE
    done < <(tuning_faults)
    ;;
# SKINNYLT_DISABLE as documented (lower case), and values that leave it enabled.
disable)
    for v in 1 true yes on; do
        run "disable-$v" SKINNYLT_STANDALONE=1 SKINNYLT_DISABLE="$v" -- --enabled 0 --max-m 128
    done
    for v in 0 false no off ""; do
        run "enable-${v:-empty}" SKINNYLT_STANDALONE=1 SKINNYLT_DISABLE="$v" -- --enabled 1 --max-m 128
    done
    ;;
# Any case.
disable-case)
    for v in TRUE Yes ON True; do
        run "disable-$v" SKINNYLT_STANDALONE=1 SKINNYLT_DISABLE="$v" -- --enabled 0 --max-m 128
    done
    ;;
# 2^44 MiB is 2^64 bytes: no workspace size; the default (32 MiB) and a warning.
workspace-huge)
    run huge SKINNYLT_STANDALONE=1 SKINNYLT_WORKSPACE_MB=17592186044416 -- --real 0 --max-m 128
    lines huge 1 1000 SKINNYLT_WORKSPACE_MB 32
    ;;
# Not a token count: the default (128) is used...
max-m-bad)
    for v in -1 abc 1e9; do
        run "max-m-$v" SKINNYLT_STANDALONE=1 SKINNYLT_MAX_M="$v" -- --real 0 --max-m 128
    done
    ;;
# ... and a warning names the variable and the default.
max-m-bad-warning)
    for v in -1 abc 1e9; do
        run "max-m-$v" SKINNYLT_STANDALONE=1 SKINNYLT_MAX_M="$v" -- --real 0 --max-m 128
        lines "max-m-$v" 1 1000 SKINNYLT_MAX_M 128
    done
    ;;
*)
    echo "faults.sh: unknown case $case_name" >&2
    exit 2
    ;;
esac

if [ "$failures" -ne 0 ]; then
    echo "$case_name: $failures failure(s)"
    exit 1
fi
echo "$case_name: passed"
