#!/usr/bin/env bash
# Fuzz smoke test: builds every cargo-fuzz target in fuzz/ and runs each for
# $SKINNYLT_FUZZ_SECONDS (default 60) seconds from a scratch copy of its
# checked-in corpus (fuzz/corpus/<target>/ is never modified). Fails on any
# crash, panic, failed check, leak or hang (see fuzz/README.md).
#
# Toolchain: cargo +nightly where rustup has it (with AddressSanitizer); else
# the stable toolchain with RUSTC_BOOTSTRAP=1, which lets it take the -Z flag
# of AddressSanitizer (stable 1.95 ships its runtime); else without a sanitizer
# (`--sanitizer none`, which plain stable builds too). When no way builds,
# it prints "fuzz smoke skipped: <reason>" and exits 0. SKINNYLT_FUZZ_NIGHTLY=0
# skips nightly (to check what a stable-only machine, such as CI's, does).
# Installs cargo-fuzz (`cargo install cargo-fuzz --locked`) when it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${SKINNYLT_FUZZ_SECONDS:-60}"
targets=(c_api c_api_stub tuning_parse env_parse)
start=$(date +%s)

skip() {
    echo "fuzz smoke skipped: $*"
    exit 0
}

command -v cargo >/dev/null 2>&1 || skip "cargo not found"
command -v c++ >/dev/null 2>&1 || command -v g++ >/dev/null 2>&1 || skip "no C++ compiler (libFuzzer is built from source)"

if ! cargo fuzz --version >/dev/null 2>&1; then
    echo "fuzz smoke: installing cargo-fuzz"
    t0=$(date +%s)
    cargo install cargo-fuzz --locked || skip "cargo install cargo-fuzz failed"
    echo "fuzz smoke: cargo-fuzz installed in $(( $(date +%s) - t0 )) s"
fi

# Which toolchain and sanitizer build the targets: the first that works.
toolchain=()
export_bootstrap=""
sanitizer=""
build() {
    # $1: sanitizer (address|none); the rest: environment assignments.
    local san="$1"
    shift
    (cd fuzz && env "$@" cargo "${toolchain[@]}" fuzz build --sanitizer "$san")
}
log="$(mktemp)"
trap 'rm -f "$log"' EXIT
if [ "${SKINNYLT_FUZZ_NIGHTLY:-1}" != 0 ] && command -v rustup >/dev/null 2>&1 && cargo +nightly --version >/dev/null 2>&1; then
    toolchain=(+nightly)
    if build address >"$log" 2>&1; then
        sanitizer=address
    fi
fi
if [ -z "$sanitizer" ]; then
    toolchain=()
    for san in address none; do
        if build "$san" RUSTC_BOOTSTRAP=1 >"$log" 2>&1; then
            sanitizer="$san"
            export_bootstrap=1
            break
        fi
    done
fi
# cargo-fuzz passes no -Z flag without a sanitizer: plain stable builds that too.
if [ -z "$sanitizer" ] && build none >"$log" 2>&1; then
    sanitizer=none
fi
if [ -z "$sanitizer" ]; then
    tail -n 30 "$log"
    skip "no toolchain builds the fuzz targets (tried cargo +nightly, stable with RUSTC_BOOTSTRAP=1, stable without a sanitizer)"
fi
if [ -n "$export_bootstrap" ]; then export RUSTC_BOOTSTRAP=1; fi
echo "fuzz smoke: built with $(cargo "${toolchain[@]}" --version) (${toolchain[*]:-default toolchain}${export_bootstrap:+, RUSTC_BOOTSTRAP=1}), sanitizer $sanitizer, in $(( $(date +%s) - start )) s"

scratch="$(mktemp -d)"
trap 'rm -f "$log"; rm -rf "$scratch"' EXIT
failed=()
for t in "${targets[@]}"; do
    mkdir -p "$scratch/$t"
    cp -R "fuzz/corpus/$t/." "$scratch/$t/"
    echo "fuzz smoke: $t for ${secs} s"
    # -timeout: one input taking 30 s is a hang; artifacts (crash-*, timeout-*)
    # land in fuzz/artifacts/<target>/, as with `cargo fuzz run`.
    if (cd fuzz && cargo "${toolchain[@]}" fuzz run --sanitizer "$sanitizer" "$t" "$scratch/$t" -- \
            -max_total_time="$secs" -timeout=30 -print_final_stats=1 >"$scratch/$t.log" 2>&1); then
        grep -E "^stat::number_of_executed_units|^#[0-9]+ +DONE" "$scratch/$t.log" | tail -n 2 | sed "s/^/fuzz smoke: $t: /"
    else
        tail -n 60 "$scratch/$t.log"
        echo "fuzz smoke: $t FAILED (artifacts in fuzz/artifacts/$t/)"
        failed+=("$t")
    fi
done
echo "fuzz smoke: $(( ${#targets[@]} - ${#failed[@]} )) passed, ${#failed[@]} failed in $(( $(date +%s) - start )) s"
[ ${#failed[@]} -eq 0 ]
