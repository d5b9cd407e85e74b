#!/bin/sh
# shellcheck disable=SC2016  # sh -c '...' _ ARGS: the inner scripts expand their own arguments
# Install tests for the skinnylt packages (CI runs this after cargo build).
#
#   packaging/test-install.sh [--no-build] [--keep]
#
#   --no-build  do not run cargo (package the existing target/release artifacts)
#   --keep      keep the work directory (install roots, test programs, logs)
#
# 1. builds the .deb and .rpm with packaging/build-packages.sh;
# 2. inspects them (dpkg-deb -c/-I/-f, rpm -qp ...) and asserts the documented
#    layout, the soname symlinks, the metadata and that hipBLASLt/HIP are not
#    hard dependencies;
# 3. installs each into a throwaway root (dpkg --root / rpm --root, no
#    containers, no root needed) and, against each root: builds and runs a C
#    program through pkg-config and through CMake find_package(skinnylt), and
#    runs skinnylt-run (preload check through dlsym(RTLD_DEFAULT), env);
# 4. optionally installs the .deb for real (dpkg -i), repeats the checks
#    without any path hints, and purges it again.  On by default when CI=true
#    and running as root; SKINNYLT_TEST_SYSTEM_INSTALL=0/1 overrides.
#
# Ends with "test-install: N passed, M failed"; exits 1 on any failure.
# As root with CI=true, missing tools are installed with apt-get.
set -u

ROOT=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd -P)
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
case $TARGET_DIR in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
OUT="$TARGET_DIR/packages"
CC=${CC:-cc}
export LC_ALL=C
unset LD_PRELOAD LD_LIBRARY_PATH PKG_CONFIG_PATH PKG_CONFIG_SYSROOT_DIR PKG_CONFIG_LIBDIR \
      SKINNYLT_LIB CMAKE_PREFIX_PATH 2>/dev/null || true

build_args=""
keep=0
for a in "$@"; do
    case $a in
        --no-build) build_args="--no-build" ;;
        --keep) keep=1 ;;
        -h|--help) sed -n '2,/^set -u/{/^set -u/d;/shellcheck/d;s/^# \{0,1\}//;p;}' "$0"; exit 0 ;;
        *) echo "test-install.sh: unknown argument '$a'" >&2; exit 2 ;;
    esac
done

WORK=$(mktemp -d "${TMPDIR:-/tmp}/skinnylt-install-test.XXXXXX")
WORK=$(cd "$WORK" && pwd -P)
LOG="$WORK/check.log"
ERR="$WORK/stderr.log"
SYSTEM_INSTALLED=0
cleanup() {
    if [ "$SYSTEM_INSTALLED" = 1 ]; then dpkg --purge skinnylt >/dev/null 2>&1 || true; fi
    if [ "$keep" = 1 ]; then echo "test-install: work directory kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

PASSED=0
FAILED=0
FAILED_LIST=""

pass() { PASSED=$((PASSED + 1)); printf 'PASS: %s\n' "$1"; }
fail() {
    FAILED=$((FAILED + 1))
    FAILED_LIST="$FAILED_LIST
  - $1"
    printf 'FAIL: %s\n' "$1"
    if [ -s "$LOG" ]; then tail -n 40 "$LOG" | sed 's/^/    | /'; fi
}
skip() { printf 'SKIP: %s\n' "$1"; }
# check DESCRIPTION COMMAND...: passes when COMMAND exits 0 (output goes to $LOG).
check() {
    d=$1; shift
    if "$@" >"$LOG" 2>&1; then pass "$d"; else fail "$d"; fi
}
# check_not DESCRIPTION COMMAND...: passes when COMMAND exits non-zero.
check_not() {
    d=$1; shift
    if "$@" >"$LOG" 2>&1; then fail "$d (unexpectedly succeeded)"; else pass "$d"; fi
}
# expect_eq DESCRIPTION EXPECTED ACTUAL (stderr of ACTUAL may be in $ERR)
expect_eq() {
    if [ "$2" = "$3" ]; then pass "$1"; else
        printf 'expected: %s\n  actual: %s\n' "$2" "$3" >"$LOG"
        if [ -s "$ERR" ]; then echo "stderr:"; cat "$ERR"; fi >>"$LOG"
        fail "$1"
    fi
    rm -f "$ERR"
}
summary() {
    echo
    if [ "$FAILED" -gt 0 ]; then printf 'Failed checks:%s\n' "$FAILED_LIST"; fi
    printf 'test-install: %d passed, %d failed\n' "$PASSED" "$FAILED"
    [ "$FAILED" -eq 0 ]
}
abort() { : >"$LOG"; fail "$1"; summary; exit 1; }
section() { printf '\n== %s\n' "$1"; }

# ---------------------------------------------------------------------------
section "tools"
missing=""
command -v dpkg-deb >/dev/null 2>&1          || missing="$missing dpkg"
command -v dpkg-architecture >/dev/null 2>&1 || missing="$missing dpkg-dev"
command -v rpmbuild >/dev/null 2>&1          || missing="$missing rpm"
command -v cmake >/dev/null 2>&1             || missing="$missing cmake"
command -v make >/dev/null 2>&1              || missing="$missing make"
command -v pkg-config >/dev/null 2>&1        || missing="$missing pkg-config"
command -v "$CC" >/dev/null 2>&1             || missing="$missing gcc"
command -v readelf >/dev/null 2>&1           || missing="$missing binutils"
[ -f /usr/include/stdio.h ]                  || missing="$missing libc6-dev"
if [ -n "$missing" ]; then
    if [ "$(id -u)" = 0 ] && [ "${CI:-}" = true ] && command -v apt-get >/dev/null 2>&1; then
        echo "installing:$missing"
        # shellcheck disable=SC2086
        { apt-get update -qq &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $missing
        } >"$LOG" 2>&1 || abort "apt-get install$missing"
    else
        : >"$LOG"
        abort "missing tools:$missing (as root with CI=true they are installed automatically)"
    fi
fi
command -v "$CC" >/dev/null 2>&1 || CC=gcc
pass "tools present (dpkg-deb, rpmbuild, cmake, make, pkg-config, $CC, readelf)"

# ---------------------------------------------------------------------------
section "build packages"
# shellcheck disable=SC2086
if sh "$ROOT/packaging/build-packages.sh" $build_args >"$LOG" 2>&1; then
    cat "$LOG"; pass "build-packages.sh $build_args"
else
    fail "build-packages.sh $build_args"; summary; exit 1
fi

. "$ROOT/packaging/metadata.sh"
VERSION=$(cargo_field version)
LIBVER=$(printf '%s\n' "$VERSION" | sed 's/[-+].*//')
PKGVER=$(printf '%s\n' "$VERSION" | sed 's/-/~/')
SONAME="libskinnylt.so.${LIBVER%%.*}"
REALLIB="libskinnylt.so.$LIBVER"
TUNING=$(cd "$ROOT/tuning" 2>/dev/null && ls -- *.json 2>/dev/null)
[ -n "$TUNING" ] || abort "no tuning/*.json in the source tree"

set -- "$OUT"/skinnylt_*.deb; DEB=$1
set -- "$OUT"/skinnylt-*.rpm; RPM=$1
[ -f "$DEB" ] || abort "no .deb in $OUT"
[ -f "$RPM" ] || abort "no .rpm in $OUT"
echo "deb: $DEB"
echo "rpm: $RPM"
echo "version $VERSION, soname $SONAME, tuning: $(echo "$TUNING" | tr '\n' ' ')"

case $(uname -m) in
    x86_64) MULTIARCH=x86_64-linux-gnu; DEBARCH=amd64 ;;
    aarch64) MULTIARCH=aarch64-linux-gnu; DEBARCH=arm64 ;;
    *) MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH); DEBARCH=$(dpkg-architecture -qDEB_HOST_ARCH) ;;
esac
if command -v dpkg-architecture >/dev/null 2>&1; then
    MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH)
    DEBARCH=$(dpkg-architecture -qDEB_HOST_ARCH)
fi
DEB_LIBDIR="/usr/lib/$MULTIARCH"
RPM_LIBDIR="/usr/lib64"

# expected_files LIBDIR: one "path<TAB>kind[<TAB>link target]" per line.
expected_files() {
    L=$1
    printf '%s\tfile\n' "$L/$REALLIB"
    [ "$SONAME" = "$REALLIB" ] || printf '%s\tlink\t%s\n' "$L/$SONAME" "$REALLIB"
    printf '%s\tlink\t%s\n' "$L/libskinnylt.so" "$SONAME"
    printf '%s\tfile\n' "$L/pkgconfig/skinnylt.pc" \
        "$L/cmake/skinnylt/skinnylt-config.cmake" \
        "$L/cmake/skinnylt/skinnylt-config-version.cmake" \
        /usr/include/skinnylt.h /usr/share/doc/skinnylt/README.md /usr/share/doc/skinnylt/copyright
    printf '%s\texec\n' /usr/bin/skinnylt /usr/bin/skinnylt-run
    for t in $TUNING; do printf '%s\tfile\n' "/usr/share/skinnylt/tuning/$t"; done
}

# assert_layout LISTING LIBDIR: LISTING has "path<TAB>mode<TAB>owner<TAB>link" lines.
assert_layout() {
    listing=$1
    expected_files "$2" | while IFS="$(printf '\t')" read -r path kind target; do
        line=$(awk -F'\t' -v p="$path" '$1 == p' "$listing")
        if [ -z "$line" ]; then echo "missing: $path"; continue; fi
        mode=$(printf '%s\n' "$line" | cut -f2)
        link=$(printf '%s\n' "$line" | cut -f4)
        case $kind in
            file) case $mode in -rw-r--r--) ;; *) echo "$path: mode $mode, want -rw-r--r--" ;; esac ;;
            exec) case $mode in -rwxr-xr-x) ;; *) echo "$path: mode $mode, want -rwxr-xr-x" ;; esac ;;
            link) case $mode in l*) [ "$link" = "$target" ] || echo "$path -> '$link', want -> $target" ;;
                                *) echo "$path: not a symlink ($mode)" ;; esac ;;
        esac
    done > "$LOG.layout"
    cat "$LOG.layout"
    [ ! -s "$LOG.layout" ]
}
only_under_usr() { ! grep -v -e '^/usr$' -e '^/usr/' "$1"; }
no_foreign_owner() { ! awk -F'\t' '$3 != "root:root" {print}' "$1" | grep .; }

# ---------------------------------------------------------------------------
section "inspect the .deb"
DEB_LIST="$WORK/deb.list"
# dpkg-deb -c: perms owner/group size date time ./path [-> target]
dpkg-deb -c "$DEB" | awk '{
        p = $6; sub(/^\./, "", p); sub(/\/$/, "", p); if (p == "") next
        owner = $2; sub(/\//, ":", owner)
        printf "%s\t%s\t%s\t%s\n", p, $1, owner, ($7 == "->" ? $8 : "") }' > "$DEB_LIST"
awk -F'\t' '{print $1}' "$DEB_LIST" > "$DEB_LIST.paths"
check "deb: documented layout present (lib + soname links, header, .pc, CMake config, bin, tuning, docs)" \
    assert_layout "$DEB_LIST" "$DEB_LIBDIR"
check "deb: every path is under /usr (nothing in /etc, no ld.so.preload)" only_under_usr "$DEB_LIST.paths"
check "deb: files owned by root:root" no_foreign_owner "$DEB_LIST"

field() { dpkg-deb -f "$DEB" "$1"; }
expect_eq "deb: Package" "skinnylt" "$(field Package)"
expect_eq "deb: Version" "$PKGVER-${SKINNYLT_PKG_RELEASE:-1}" "$(field Version)"
expect_eq "deb: Architecture" "$DEBARCH" "$(field Architecture)"
check "deb: Maintainer set" test -n "$(field Maintainer)"
DEPENDS=$(field Depends)
check "deb: Depends is only libc6 (got '$DEPENDS')" \
    sh -c 'printf "%s\n" "$1" | grep -Eqx "libc6( \(>= [0-9.]+\))?"' _ "$DEPENDS"
check_not "deb: no hipBLASLt/HIP/ROCm in Depends/Pre-Depends" \
    sh -c 'printf "%s %s\n" "$1" "$2" | grep -Ei "hipblas|amdhip|rocm|hip-runtime"' _ "$DEPENDS" "$(field Pre-Depends)"
check "deb: Recommends libhipblaslt (got '$(field Recommends)')" \
    sh -c 'printf "%s\n" "$1" | grep -q "libhipblaslt1 | libhipblaslt0"' _ "$(field Recommends)"
check "deb: Suggests libamdhip64 (got '$(field Suggests)')" \
    sh -c 'printf "%s\n" "$1" | grep -q "libamdhip64"' _ "$(field Suggests)"
check "deb: Description says it is not preloaded by default" \
    sh -c 'printf "%s\n" "$1" | grep -qi "does NOT preload"' _ "$(field Description)"
check "deb: triggers = activate-noawait ldconfig" \
    sh -c 'dpkg-deb -I "$1" triggers | grep -qx "activate-noawait ldconfig"' _ "$DEB"
check "deb: md5sums cover every regular file" sh -c '
    dpkg-deb -I "$1" md5sums | awk "{print \"/\" \$2}" | sort > "$2.md5"
    awk -F"\t" "\$2 ~ /^-/ {print \$1}" "$2" | sort | diff - "$2.md5"' _ "$DEB" "$DEB_LIST"
check_not "deb: no maintainer scripts (nothing runs at install time)" \
    sh -c 'dpkg-deb -I "$1" | grep -E "^ +[0-9]+ bytes.* (preinst|postinst|prerm|postrm|config)( |$)"' _ "$DEB"

# ---------------------------------------------------------------------------
section "inspect the .rpm"
RPM_LIST="$WORK/rpm.list"
rpm -qp --qf '[%{FILENAMES}\t%{FILEMODES:perms}\t%{FILEUSERNAME}:%{FILEGROUPNAME}\t%{FILELINKTOS}\n]' \
    "$RPM" 2>/dev/null > "$RPM_LIST"
awk -F'\t' '{print $1}' "$RPM_LIST" > "$RPM_LIST.paths"
check "rpm: documented layout present (lib64 + soname links, header, .pc, CMake config, bin, tuning, docs)" \
    assert_layout "$RPM_LIST" "$RPM_LIBDIR"
check "rpm: every path is under /usr" only_under_usr "$RPM_LIST.paths"
check "rpm: files owned by root:root" no_foreign_owner "$RPM_LIST"
expect_eq "rpm: Name-Version" "skinnylt-$PKGVER" "$(rpm -qp --qf '%{NAME}-%{VERSION}' "$RPM" 2>/dev/null)"
rpm -qp --provides "$RPM" 2>/dev/null > "$WORK/rpm.provides"
rpm -qp --requires "$RPM" 2>/dev/null > "$WORK/rpm.requires"
rpm -qp --recommends "$RPM" 2>/dev/null > "$WORK/rpm.recommends"
check "rpm: Provides $SONAME()(64bit) (generated from DT_SONAME)" grep -qx "$SONAME()(64bit)" "$WORK/rpm.provides"
check "rpm: Provides pkgconfig(skinnylt) and cmake(skinnylt)" \
    sh -c 'grep -q "^pkgconfig(skinnylt) = " "$1" && grep -q "^cmake(skinnylt) = " "$1"' _ "$WORK/rpm.provides"
check_not "rpm: no hipBLASLt/HIP/ROCm/CUDA in Requires" grep -Ei 'hipblas|amdhip|rocm|hip-runtime|cuda' "$WORK/rpm.requires"
check "rpm: Recommends hipblaslt" grep -qx 'hipblaslt' "$WORK/rpm.recommends"
check_not "rpm: no scriptlets" sh -c 'rpm -qp --scripts "$1" 2>/dev/null | grep .' _ "$RPM"
check "rpm: digests OK" rpm -K --nosignature "$RPM"

# ---------------------------------------------------------------------------
section "test programs"
cat > "$WORK/consumer.c" <<'EOF'
/* Links libskinnylt through skinnylt.h, prints skinnylt_version(). */
#include <stdio.h>
#include <skinnylt.h>

int main(void) {
    const char *v = skinnylt_version();
    if (v == NULL || v[0] == '\0') {
        fprintf(stderr, "skinnylt_version() returned nothing\n");
        return 1;
    }
    printf("%s\n", v);
    return 0;
}
EOF
cat > "$WORK/preload-check.c" <<'EOF'
/* Succeeds only when libskinnylt is in the global scope (LD_PRELOAD) and
 * provides hipblasLtCreate. Prints the version, then the file it came from. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(void) {
    void *sym = dlsym(RTLD_DEFAULT, "skinnylt_version");
    if (sym == NULL) {
        fprintf(stderr, "preload-check: skinnylt_version not found: skinnylt is not preloaded\n");
        return 1;
    }
    const char *(*version)(void);
    *(void **)&version = sym;
    Dl_info info;
    if (!dladdr(sym, &info) || info.dli_fname == NULL) {
        fprintf(stderr, "preload-check: dladdr failed\n");
        return 1;
    }
    char from[4096];
    snprintf(from, sizeof from, "%s", info.dli_fname);
    void *create = dlsym(RTLD_DEFAULT, "hipblasLtCreate");
    if (create == NULL || !dladdr(create, &info) || strcmp(info.dli_fname, from) != 0) {
        fprintf(stderr, "preload-check: hipblasLtCreate is not provided by %s\n", from);
        return 1;
    }
    printf("%s\n%s\n", version(), from);
    return 0;
}
EOF
printf 'int skinnylt_test_dummy;\n' > "$WORK/dummy.c"
mkdir -p "$WORK/cmake-src"
cp "$WORK/consumer.c" "$WORK/cmake-src/consumer.c"
cat > "$WORK/cmake-src/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.13)
project(skinnylt_consumer C)

# CMake on Debian/Ubuntu does not search lib64 (Fedora/RHEL/SUSE do); the test
# of the .rpm tree on a Debian host turns it on to behave like an RPM host.
if(SEARCH_LIB64)
  set_property(GLOBAL PROPERTY FIND_LIBRARY_USE_LIB64_PATHS TRUE)
endif()

# An incompatible version must be rejected (checked in a function scope).
function(expect_incompatible)
  find_package(skinnylt 99.0 QUIET CONFIG)
  if(skinnylt_FOUND)
    message(FATAL_ERROR "find_package(skinnylt 99.0) accepted version ${skinnylt_VERSION}")
  endif()
endfunction()
set(_hint "${skinnylt_DIR}")
expect_incompatible()
if(_hint)
  set(skinnylt_DIR "${_hint}" CACHE PATH "skinnylt config dir" FORCE)
else()
  unset(skinnylt_DIR CACHE)
endif()

find_package(skinnylt ${SKINNYLT_WANT_VERSION} REQUIRED CONFIG)
message(STATUS "skinnylt_DIR=${skinnylt_DIR}")
message(STATUS "skinnylt_VERSION=${skinnylt_VERSION}")
if(NOT TARGET skinnylt::skinnylt)
  message(FATAL_ERROR "no imported target skinnylt::skinnylt")
endif()
if(DEFINED EXPECT_PREFIX)
  string(FIND "${skinnylt_DIR}" "${EXPECT_PREFIX}/" _pos)
  if(NOT _pos EQUAL 0)
    message(FATAL_ERROR "skinnylt_DIR=${skinnylt_DIR} is not under ${EXPECT_PREFIX}")
  endif()
endif()
if(NOT EXISTS "${skinnylt_TUNING_DIR}")
  message(FATAL_ERROR "skinnylt_TUNING_DIR=${skinnylt_TUNING_DIR} does not exist")
endif()
add_executable(consumer consumer.c)
target_link_libraries(consumer PRIVATE skinnylt::skinnylt)
EOF
check "compile preload-check.c" "$CC" -std=c11 -Wall -Wextra -Werror -o "$WORK/preload-check" "$WORK/preload-check.c" -ldl
check "compile a dummy preload library" "$CC" -shared -fPIC -o "$WORK/libdummy.so" "$WORK/dummy.c"
check_not "preload-check fails without skinnylt (negative control)" "$WORK/preload-check"

needed_has_soname() { readelf -d "$1" | grep -F "(NEEDED)" | grep -qF "[$SONAME]"; }

# ---------------------------------------------------------------------------
# Checks against an installed tree. Usage: test_tree NAME ROOT LIBDIR
test_tree() {
    n=$1; R=$2; L=$3
    lib="$R$L/$SONAME"

    check "$n: $SONAME and libskinnylt.so resolve to the real $REALLIB" sh -c '
        real=$(readlink -f "$1/$2") && [ -f "$real" ] && [ ! -L "$1/$2" ] &&
        [ "$(readlink -f "$1/$3")" = "$real" ] && [ "$(readlink -f "$1/libskinnylt.so")" = "$real" ]' \
        _ "$R$L" "$REALLIB" "$SONAME"
    expect_eq "$n: DT_SONAME of $REALLIB" "$SONAME" \
        "$(readelf -d "$R$L/$REALLIB" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')"
    check_not "$n: library does not link hipBLASLt/HIP/CUDA (loaded at run time)" \
        sh -c 'readelf -d "$1" | grep "(NEEDED)" | grep -Ei "hipblas|amdhip|hiprtc|cuda|cublas"' _ "$R$L/$REALLIB"
    check "$n: library exports skinnylt_version and the hipBLASLt C API" sh -c '
        readelf --dyn-syms -W "$1" | awk "\$7 != \"UND\" {print \$8}" | sed "s/@.*//" | sort -u > "$2"
        for s in skinnylt_version hipblasLtCreate hipblasLtDestroy hipblasLtMatmul \
                 hipblasLtMatmulDescCreate hipblasLtMatrixLayoutCreate hipblasLtMatmulAlgoGetHeuristic; do
            grep -qx "$s" "$2" || { echo "not exported: $s"; exit 1; }
        done' _ "$R$L/$REALLIB" "$WORK/$n.syms"
    check "$n: tuning files in /usr/share/skinnylt/tuning" \
        sh -c 'for t in $2; do test -s "$1/usr/share/skinnylt/tuning/$t" || { echo "missing $t"; exit 1; }; done' _ "$R" "$TUNING"

    # pkg-config against the root.
    pc() {
        PKG_CONFIG_SYSROOT_DIR=$R PKG_CONFIG_LIBDIR="$R$L/pkgconfig:$R/usr/share/pkgconfig" PKG_CONFIG_PATH='' \
        PKG_CONFIG_ALLOW_SYSTEM_CFLAGS=1 PKG_CONFIG_ALLOW_SYSTEM_LIBS=1 pkg-config "$@"
    }
    expect_eq "$n: pkg-config --modversion skinnylt" "$VERSION" "$(pc --modversion skinnylt 2>&1)"
    cflags=$(pc --cflags skinnylt 2>/dev/null); libs=$(pc --libs skinnylt 2>/dev/null)
    # shellcheck disable=SC2086,SC2116  # $(echo $x) squeezes the whitespace
    expect_eq "$n: pkg-config --cflags/--libs point into the root" \
        "-I$R/usr/include | -L$R$L -lskinnylt" "$(echo $cflags) | $(echo $libs)"
    tdir=$(pc --variable=tuningdir skinnylt 2>/dev/null)
    check "$n: pkg-config tuningdir ($tdir) exists in the root" \
        sh -c 'test -d "$1${2#$1}"' _ "$R" "$tdir"
    # shellcheck disable=SC2086
    check "$n: build consumer.c with pkg-config (-Wall -Werror)" \
        "$CC" -std=c11 -Wall -Wextra -Werror -o "$WORK/$n-pc" "$WORK/consumer.c" $cflags $libs
    check "$n: pkg-config consumer needs $SONAME (not the dev symlink)" needed_has_soname "$WORK/$n-pc"
    expect_eq "$n: pkg-config consumer prints skinnylt_version()" "$VERSION" \
        "$(LD_LIBRARY_PATH="$R$L" "$WORK/$n-pc" 2>"$ERR")"
    check "$n: the consumer loads the library from the root (ldd)" sh -c '
        LD_LIBRARY_PATH="$2" ldd "$1" | tee /dev/stderr | grep -F "$3 => $2/$3"' _ "$WORK/$n-pc" "$R$L" "$SONAME"
    if command -v c++ >/dev/null 2>&1; then
        # shellcheck disable=SC2086
        check "$n: skinnylt.h compiles as C++ (-Wall -Werror)" \
            c++ -x c++ -Wall -Wextra -Werror -o "$WORK/$n-cxx" "$WORK/consumer.c" $cflags $libs
    else
        skip "$n: skinnylt.h as C++ (no c++ compiler)"
    fi

    # CMake find_package(skinnylt) against the root, two ways.
    for how in prefix dir; do
        B="$WORK/$n-cmake-$how"
        if [ $how = prefix ]; then hint="-DCMAKE_PREFIX_PATH=$R/usr"; else hint="-Dskinnylt_DIR=$R$L/cmake/skinnylt"; fi
        lib64=""
        [ "$L" = /usr/lib64 ] && lib64="-DSEARCH_LIB64=ON"
        # shellcheck disable=SC2086
        check "$n: cmake find_package(skinnylt ${LIBVER%.*}) with ${hint%%=*}" \
            cmake -S "$WORK/cmake-src" -B "$B" "$hint" $lib64 -DEXPECT_PREFIX="$R" -DSKINNYLT_WANT_VERSION="${LIBVER%.*}"
        check "$n: cmake build ($how)" cmake --build "$B"
        check "$n: cmake consumer needs $SONAME" needed_has_soname "$B/consumer"
        expect_eq "$n: cmake consumer prints skinnylt_version()" "$VERSION" \
            "$(LD_LIBRARY_PATH="$R$L" "$B/consumer" 2>"$ERR")"
    done

    # The launcher.
    run="$R/usr/bin/skinnylt-run"
    check "$n: skinnylt-run --help" sh -c '"$1" --help | grep -q "^Usage: skinnylt-run"' _ "$run"
    check_not "$n: skinnylt-run without a command fails" "$run"
    expect_eq "$n: skinnylt-run --print-lib finds the library of its own prefix" "$lib" "$("$run" --print-lib 2>&1)"
    expect_eq "$n: skinnylt-run preload-check (dlsym(RTLD_DEFAULT) finds skinnylt_version + hipblasLtCreate)" \
        "$VERSION|$lib" "$("$run" "$WORK/preload-check" 2>"$ERR" | paste -sd'|' -)"
    expect_eq "$n: skinnylt-run --record sets SKINNYLT_RECORD" "SKINNYLT_RECORD=$WORK/rec.jsonl" \
        "$(env -u SKINNYLT_RECORD "$run" --record "$WORK/rec.jsonl" env | grep '^SKINNYLT_RECORD=')"
    expect_eq "$n: skinnylt-run env shows LD_PRELOAD=<lib>" "LD_PRELOAD=$lib" \
        "$("$run" env 2>"$ERR" | grep '^LD_PRELOAD=')"
    expect_eq "$n: skinnylt-run prepends to an existing LD_PRELOAD" "LD_PRELOAD=$lib:$WORK/libdummy.so" \
        "$(LD_PRELOAD="$WORK/libdummy.so" "$run" env 2>"$ERR" | grep '^LD_PRELOAD=')"
    mkdir -p "$WORK/$n-bin" && ln -sf "$run" "$WORK/$n-bin/skinnylt-run"
    expect_eq "$n: skinnylt-run through a symlink" "$lib" "$("$WORK/$n-bin/skinnylt-run" --print-lib 2>&1)"
    expect_eq "$n: skinnylt-run found through PATH" "$lib" \
        "$(PATH="$R/usr/bin:$PATH" skinnylt-run --print-lib 2>&1)"
    expect_eq "$n: SKINNYLT_LIB overrides the library" "LD_PRELOAD=$WORK/libdummy.so" \
        "$(SKINNYLT_LIB="$WORK/libdummy.so" "$run" env 2>"$ERR" | grep '^LD_PRELOAD=')"
    check_not "$n: SKINNYLT_LIB pointing nowhere fails" env SKINNYLT_LIB=/nonexistent/libskinnylt.so.0 "$run" true
    "$run" sh -c 'exit 7' >"$LOG" 2>&1
    expect_eq "$n: skinnylt-run passes the exit status through" 7 $?

    # The CLI.
    check "$n: skinnylt --help" "$R/usr/bin/skinnylt" --help
    check "$n: skinnylt info" env SKINNYLT_TUNING_DIR="$R/usr/share/skinnylt/tuning" "$R/usr/bin/skinnylt" info
    sed 's/^/    > /' "$LOG" | head -n 30
}

# ---------------------------------------------------------------------------
section "install the .deb into a throwaway root (dpkg --root)"
RD="$WORK/root-deb"
mkdir -p "$RD/var/lib/dpkg/info" "$RD/var/lib/dpkg/updates"
touch "$RD/var/lib/dpkg/status"
check "dpkg --root -i" dpkg --root="$RD" --force-script-chrootless --force-not-root --force-depends -i "$DEB"
check "dpkg --root -s: installed" sh -c 'dpkg --root="$1" -s skinnylt | grep -qx "Status: install ok installed"' _ "$RD"
check "dpkg --root --verify (md5sums match)" sh -c 'out=$(dpkg --root="$1" --verify skinnylt) && [ -z "$out" ] || { echo "$out"; exit 1; }' _ "$RD"
test_tree deb "$RD" "$DEB_LIBDIR"
check "dpkg --root -r removes every file" sh -c '
    dpkg --root="$1" --force-script-chrootless --force-not-root -r skinnylt &&
    ! find "$1/usr" ! -type d | grep .' _ "$RD"

# ---------------------------------------------------------------------------
section "install the .rpm into a throwaway root (rpm --root)"
RR="$WORK/root-rpm"
mkdir -p "$RR"
RPMOPT=""
rpm --help 2>/dev/null | grep -q -- '--force-debian' && RPMOPT="--force-debian"
check "rpm --root --initdb" rpm --root "$RR" --dbpath /var/lib/rpm --initdb
# shellcheck disable=SC2086
check "rpm --root -ivh --nodeps --noscripts" \
    rpm --root "$RR" --dbpath /var/lib/rpm -ivh --nodeps --noscripts $RPMOPT "$RPM"
check "rpm --root -q: installed" rpm --root "$RR" --dbpath /var/lib/rpm -q skinnylt
check "rpm --root -V (files match)" rpm --root "$RR" --dbpath /var/lib/rpm -V --nodeps skinnylt
test_tree rpm "$RR" "$RPM_LIBDIR"
# shellcheck disable=SC2086
check "rpm --root -e removes every file" sh -c '
    rpm --root "$1" --dbpath /var/lib/rpm -e --nodeps --noscripts $2 skinnylt &&
    ! find "$1/usr" ! -type d | grep .' _ "$RR" "$RPMOPT"

# ---------------------------------------------------------------------------
section "real install of the .deb (dpkg -i)"
sys=${SKINNYLT_TEST_SYSTEM_INSTALL:-}
if [ -z "$sys" ]; then
    if [ "${CI:-}" = true ] && [ "$(id -u)" = 0 ]; then sys=1; else sys=0; fi
fi
if [ "$sys" != 1 ]; then
    skip "real install (set SKINNYLT_TEST_SYSTEM_INSTALL=1 as root; on by default with CI=true)"
elif [ "$(id -u)" != 0 ]; then
    skip "real install (needs root)"
elif dpkg -s skinnylt >/dev/null 2>&1; then
    skip "real install (skinnylt is already installed on this machine; not touching it)"
else
    SYSTEM_INSTALLED=1
    check "dpkg -i" dpkg -i "$DEB"
    lib="$DEB_LIBDIR/$SONAME"
    # (with merged /usr, ldconfig may report /lib/<multiarch>/... instead of /usr/lib/...)
    check "ldconfig trigger ran: ld.so.cache knows $SONAME" sh -c '
        ldconfig -p | grep -F "$1 " | tee /dev/stderr | grep -qE "=> (/usr)?${2#/usr}\$"' _ "$SONAME" "$lib"
    check_not "not preloaded globally (/etc/ld.so.preload does not mention skinnylt)" \
        grep -s skinnylt /etc/ld.so.preload
    expect_eq "system: pkg-config --modversion skinnylt" "$VERSION" "$(pkg-config --modversion skinnylt 2>&1)"
    # shellcheck disable=SC2046
    check "system: build consumer.c with pkg-config" \
        "$CC" -std=c11 -Wall -Werror -o "$WORK/sys-pc" "$WORK/consumer.c" $(pkg-config --cflags --libs skinnylt)
    expect_eq "system: consumer runs without LD_LIBRARY_PATH" "$VERSION" "$("$WORK/sys-pc" 2>"$ERR")"
    check "system: cmake find_package(skinnylt) without hints" \
        cmake -S "$WORK/cmake-src" -B "$WORK/sys-cmake" -DEXPECT_PREFIX="$DEB_LIBDIR" -DSKINNYLT_WANT_VERSION="${LIBVER%.*}"
    check "system: cmake build" cmake --build "$WORK/sys-cmake"
    expect_eq "system: cmake consumer runs" "$VERSION" "$("$WORK/sys-cmake/consumer" 2>"$ERR")"
    expect_eq "system: skinnylt-run (from PATH) preload-check" "$VERSION|$lib" \
        "$(skinnylt-run "$WORK/preload-check" 2>"$ERR" | paste -sd'|' -)"
    expect_eq "system: skinnylt-run env" "LD_PRELOAD=$lib" "$(skinnylt-run env 2>"$ERR" | grep '^LD_PRELOAD=')"
    check "system: skinnylt info (default tuning dir)" skinnylt info
    sed 's/^/    > /' "$LOG" | head -n 30
    check "dpkg --purge removes the files and the ld.so.cache entry" sh -c '
        dpkg --purge skinnylt && ! ls "$2" 2>/dev/null && ! ldconfig -p | grep -F "$1 "' _ "$SONAME" "$lib"
    SYSTEM_INSTALLED=0
fi

summary
