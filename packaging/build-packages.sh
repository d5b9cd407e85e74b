#!/bin/sh
# Build the skinnylt .deb and .rpm packages from a staged install tree.
#
#   packaging/build-packages.sh [--no-build] [--deb-only | --rpm-only] [--out DIR]
#
# Steps:
#   1. `cargo build --release` (a no-op when the artifacts are current;
#      skipped with --no-build or SKINNYLT_NO_BUILD=1);
#   2. check the artifacts (ELF type, DT_SONAME, exported symbols, no link-time
#      dependency on hipBLASLt / HIP / CUDA);
#   3. stage an install tree with prefix /usr (lib dir /usr/lib/<multiarch> for
#      the .deb, /usr/lib64 for the .rpm);
#   4. dpkg-deb --build and rpmbuild -bb on those trees.
#
# Output: target/packages/skinnylt_<version>-<release>_<debarch>.deb and
#         target/packages/skinnylt-<version>-<release>.<rpmarch>.rpm
#         (the staged trees stay in target/packages/stage/ for inspection).
#
# Environment:
#   CARGO_TARGET_DIR      cargo's target directory (default: <repo>/target)
#   SKINNYLT_NO_BUILD=1   same as --no-build: package the existing artifacts
#   SKINNYLT_PKG_RELEASE  package release / Debian revision (default: 1)
#   SKINNYLT_MAINTAINER   "Name <email>" for the package metadata
#   SKINNYLT_STRIP=0      do not strip the library and the CLI
#
# Needs: sh, coreutils, sed, awk, readelf (binutils), dpkg-deb (.deb),
#        rpmbuild (.rpm; Debian/Ubuntu: apt-get install rpm).
set -eu

ROOT=$(CDPATH='' cd -- "$(dirname -- "$0")/.." && pwd -P)
PKGDIR="$ROOT/packaging"
TARGET_DIR=${CARGO_TARGET_DIR:-$ROOT/target}
case $TARGET_DIR in /*) ;; *) TARGET_DIR="$ROOT/$TARGET_DIR" ;; esac
OUT="$TARGET_DIR/packages"

build=1
want_deb=1
want_rpm=1
[ "${SKINNYLT_NO_BUILD:-0}" = 1 ] && build=0

usage() {
    sed -n '2,/^set -eu/{/^set -eu/d;s/^# \{0,1\}//;p;}' "$0"
}

while [ $# -gt 0 ]; do
    case $1 in
        --no-build) build=0 ;;
        --deb-only) want_rpm=0 ;;
        --rpm-only) want_deb=0 ;;
        --out) [ $# -ge 2 ] || { echo "--out needs a directory" >&2; exit 2; }
               OUT=$2; shift ;;
        --out=*) OUT=${1#--out=} ;;
        -h|--help) usage; exit 0 ;;
        *) echo "build-packages.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
    esac
    shift
done
mkdir -p "$OUT"
OUT=$(cd "$OUT" && pwd -P)

say() { printf 'build-packages: %s\n' "$*"; }
die() { printf 'build-packages: error: %s\n' "$*" >&2; exit 1; }
need() { command -v "$1" >/dev/null 2>&1 || die "'$1' not found ($2)"; }

umask 022
export LC_ALL=C

# --------------------------------------------------------------------------
# Metadata from Cargo.toml.
# --------------------------------------------------------------------------
. "$ROOT/packaging/metadata.sh"

VERSION=$(cargo_field version)
[ -n "$VERSION" ] || die "cannot read the package version from Cargo.toml"
# Library file name: numeric MAJOR.MINOR.PATCH only (0.2.0-rc.1 -> libskinnylt.so.0.2.0).
LIBVER=$(printf '%s\n' "$VERSION" | sed 's/[-+].*//')
# Package version: SemVer pre-release "-" becomes "~" so that it sorts before
# the release in both dpkg and rpm.
PKGVER=$(printf '%s\n' "$VERSION" | sed 's/-/~/')
PKGREL=${SKINNYLT_PKG_RELEASE:-1}
LICENSE=$(cargo_field license)
HOMEPAGE=$(cargo_field homepage)
[ -n "$HOMEPAGE" ] || HOMEPAGE=$(cargo_field repository)
MAINTAINER=${SKINNYLT_MAINTAINER:-"skinnylt developers <skinnylt@invalid>"}
# Timestamps: SOURCE_DATE_EPOCH when set (reproducible builds), else now.
EPOCH=${SOURCE_DATE_EPOCH:-$(date +%s)}
YEAR=$(date -u -d "@$EPOCH" +%Y)
CHANGELOG_DATE=$(date -u -R -d "@$EPOCH")

# --------------------------------------------------------------------------
# Architecture names.
# --------------------------------------------------------------------------
MACHINE=$(uname -m)
case $MACHINE in
    x86_64|amd64)  DEBARCH=amd64; RPMARCH=x86_64;  MULTIARCH=x86_64-linux-gnu ;;
    aarch64|arm64) DEBARCH=arm64; RPMARCH=aarch64; MULTIARCH=aarch64-linux-gnu ;;
    *) die "unsupported machine '$MACHINE'" ;;
esac
if command -v dpkg-architecture >/dev/null 2>&1; then
    MULTIARCH=$(dpkg-architecture -qDEB_HOST_MULTIARCH 2>/dev/null || echo "$MULTIARCH")
    DEBARCH=$(dpkg-architecture -qDEB_HOST_ARCH 2>/dev/null || echo "$DEBARCH")
fi
DEB_LIBDIR="usr/lib/$MULTIARCH"
RPM_LIBDIR="usr/lib64"

# --------------------------------------------------------------------------
# 1. Build.
# --------------------------------------------------------------------------
LIB_SRC="$TARGET_DIR/release/libskinnylt.so"
BIN_SRC="$TARGET_DIR/release/skinnylt"
HEADER="$ROOT/include/skinnylt.h"

if [ "$build" = 1 ]; then
    if command -v cargo >/dev/null 2>&1; then
        say "cargo build --release"
        (cd "$ROOT" && cargo build --release)
    elif [ -f "$LIB_SRC" ] && [ -f "$BIN_SRC" ]; then
        say "cargo not found; packaging the existing artifacts in $TARGET_DIR/release"
    else
        die "cargo not found and no release artifacts in $TARGET_DIR/release"
    fi
fi

# --------------------------------------------------------------------------
# 2. Check the inputs.
# --------------------------------------------------------------------------
need readelf "install binutils"
[ -f "$LIB_SRC" ] || die "missing $LIB_SRC (run cargo build --release)"
[ -f "$BIN_SRC" ] || die "missing $BIN_SRC (run cargo build --release)"
[ -f "$HEADER" ]  || die "missing $HEADER (the cbindgen header)"
set -- "$ROOT"/tuning/*.json
[ -f "$1" ] || die "no tuning files in $ROOT/tuning/*.json"
TUNING_COUNT=$#

readelf -h "$LIB_SRC" 2>/dev/null | grep -q 'Type:[[:space:]]*DYN' \
    || die "$LIB_SRC is not an ELF shared object"
SONAME=$(readelf -d "$LIB_SRC" | sed -n 's/.*Library soname: \[\(.*\)\].*/\1/p')
case $SONAME in
    libskinnylt.so.[0-9]*) ;;
    "") die "$LIB_SRC has no DT_SONAME (build.rs must pass -Wl,-soname,libskinnylt.so.<major>)" ;;
    *) die "$LIB_SRC has an unexpected DT_SONAME '$SONAME'" ;;
esac
BAD_NEEDED=$(readelf -d "$LIB_SRC" "$BIN_SRC" | sed -n 's/.*(NEEDED).*\[\(.*\)\].*/\1/p' \
    | grep -Ei 'hipblas|amdhip|hiprtc|rocblas|libcuda|cublas|cudart|nvrtc' || true)
[ -z "$BAD_NEEDED" ] || die "the artifacts link GPU libraries ($BAD_NEEDED); they must be loaded at run time"
readelf --dyn-syms -W "$LIB_SRC" | awk '$7 != "UND" {print $8}' | grep -qx 'skinnylt_version' \
    || die "$LIB_SRC does not export skinnylt_version"

# Highest GLIBC_x.y symbol version the artifacts need -> libc6 (>= x.y).
GLIBC_MIN=$(readelf -V -W "$LIB_SRC" "$BIN_SRC" | grep -o 'GLIBC_[0-9][0-9.]*' \
    | sed 's/GLIBC_//' | sort -t. -k1,1n -k2,2n -k3,3n -u | tail -n 1)
if [ -n "$GLIBC_MIN" ]; then DEB_DEPENDS="libc6 (>= $GLIBC_MIN)"; else DEB_DEPENDS="libc6"; fi

say "version $VERSION (package $PKGVER-$PKGREL), soname $SONAME, $TUNING_COUNT tuning files"

# --------------------------------------------------------------------------
# 3. Stage.
# --------------------------------------------------------------------------
STAGE="$OUT/stage"
rm -rf "$STAGE"
mkdir -p "$STAGE"

SUMMARY="Low-latency skinny GEMMs behind the hipBLASLt C API"

install_elf() { # src dst mode
    if [ "${SKINNYLT_STRIP:-1}" = 1 ] && command -v strip >/dev/null 2>&1; then
        strip --strip-unneeded -o "$2" "$1"
    else
        cp "$1" "$2"
    fi
    chmod "$3" "$2"
}

write_pc() { # file libdir
    {
        echo "prefix=/usr"
        echo "exec_prefix=\${prefix}"
        echo "libdir=\${prefix}/${2#usr/}"
        echo "includedir=\${prefix}/include"
        echo "datarootdir=\${prefix}/share"
        echo "tuningdir=\${datarootdir}/skinnylt/tuning"
        echo
        echo "Name: skinnylt"
        echo "Description: $SUMMARY"
        [ -z "$HOMEPAGE" ] || echo "URL: $HOMEPAGE"
        echo "Version: $VERSION"
        echo "Libs: -L\${libdir} -lskinnylt"
        echo "Cflags: -I\${includedir}"
    } > "$1"
}

write_cmake() { # dir libdir
    # The config computes the prefix from its own location, so it also works
    # inside a DESTDIR / --root tree (skinnylt_DIR or CMAKE_PREFIX_PATH).
    up=$(printf '%s\n' "$2/cmake/skinnylt" | sed 's|[^/][^/]*|..|g')  # usr/lib/x/cmake/skinnylt -> ../../../../..
    up=${up#../}                                                   # minus "usr" -> prefix
    cat > "$1/skinnylt-config.cmake" <<EOF
# CMake package configuration for skinnylt $VERSION (generated by packaging/build-packages.sh).
#
#   find_package(skinnylt 0.1 REQUIRED)
#   target_link_libraries(app PRIVATE skinnylt::skinnylt)
#
# Sets skinnylt_FOUND, skinnylt_VERSION, skinnylt_INCLUDE_DIRS, skinnylt_LIBRARIES,
# skinnylt_TUNING_DIR and defines the imported target skinnylt::skinnylt.

get_filename_component(_skinnylt_prefix "\${CMAKE_CURRENT_LIST_DIR}/$up" ABSOLUTE)
if(NOT EXISTS "\${_skinnylt_prefix}/include/skinnylt.h")
  # Reached through a symlinked directory (e.g. /lib -> /usr/lib): use the real path.
  get_filename_component(_skinnylt_dir "\${CMAKE_CURRENT_LIST_DIR}" REALPATH)
  get_filename_component(_skinnylt_prefix "\${_skinnylt_dir}/$up" ABSOLUTE)
  unset(_skinnylt_dir)
endif()

set(_skinnylt_lib "\${_skinnylt_prefix}/${2#usr/}/libskinnylt.so.$LIBVER")
set(_skinnylt_inc "\${_skinnylt_prefix}/include")

if(NOT EXISTS "\${_skinnylt_lib}" OR NOT EXISTS "\${_skinnylt_inc}/skinnylt.h")
  set(skinnylt_FOUND FALSE)
  set(skinnylt_NOT_FOUND_MESSAGE
      "skinnylt: \${_skinnylt_lib} or \${_skinnylt_inc}/skinnylt.h is missing")
  unset(_skinnylt_lib)
  unset(_skinnylt_inc)
  unset(_skinnylt_prefix)
  return()
endif()

if(NOT TARGET skinnylt::skinnylt)
  add_library(skinnylt::skinnylt SHARED IMPORTED)
  set_target_properties(skinnylt::skinnylt PROPERTIES
    IMPORTED_LOCATION "\${_skinnylt_lib}"
    IMPORTED_SONAME "$SONAME"
    INTERFACE_INCLUDE_DIRECTORIES "\${_skinnylt_inc}")
endif()

set(skinnylt_VERSION "$VERSION")
set(skinnylt_INCLUDE_DIRS "\${_skinnylt_inc}")
set(skinnylt_LIBRARIES skinnylt::skinnylt)
set(skinnylt_TUNING_DIR "\${_skinnylt_prefix}/share/skinnylt/tuning")
set(skinnylt_FOUND TRUE)

unset(_skinnylt_lib)
unset(_skinnylt_inc)
unset(_skinnylt_prefix)
EOF
    cat > "$1/skinnylt-config-version.cmake" <<EOF
# Version check for skinnylt (generated by packaging/build-packages.sh).
# Compatible: same major version (for 0.x: same major.minor), not older than requested.
set(PACKAGE_VERSION "$LIBVER")

if(NOT PACKAGE_FIND_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
elseif(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION)
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  string(REGEX MATCH "^([0-9]+)\\\\.([0-9]+)" _skinnylt_have "\${PACKAGE_VERSION}")
  set(_skinnylt_have_major "\${CMAKE_MATCH_1}")
  set(_skinnylt_have_minor "\${CMAKE_MATCH_2}")
  if(NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL _skinnylt_have_major)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  elseif(_skinnylt_have_major EQUAL 0 AND PACKAGE_FIND_VERSION_COUNT GREATER 1
         AND NOT PACKAGE_FIND_VERSION_MINOR STREQUAL _skinnylt_have_minor)
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
    if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
      set(PACKAGE_VERSION_EXACT TRUE)
    endif()
  endif()
  unset(_skinnylt_have)
  unset(_skinnylt_have_major)
  unset(_skinnylt_have_minor)
endif()

# 64-bit library: unsuitable for a 32-bit build.
if(DEFINED CMAKE_SIZEOF_VOID_P AND NOT CMAKE_SIZEOF_VOID_P STREQUAL "8")
  set(PACKAGE_VERSION "\${PACKAGE_VERSION} (64bit)")
  set(PACKAGE_VERSION_UNSUITABLE TRUE)
endif()
EOF
}

write_copyright() { # file
    {
        echo "Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"
        echo "Upstream-Name: skinnylt"
        [ -z "$HOMEPAGE" ] || echo "Source: $HOMEPAGE"
        echo
        echo "Files: *"
        echo "Copyright: $YEAR skinnylt developers"
        echo "License: ${LICENSE:-unspecified}"
        for f in "$ROOT"/LICENSE*; do
            [ -f "$f" ] || continue
            echo " ."
            sed -e 's/^[[:space:]]*$/./' -e 's/^/ /' "$f"
        done
        if [ -z "$LICENSE" ] && ! ls "$ROOT"/LICENSE* >/dev/null 2>&1; then
            echo " The license has not been specified yet (no 'license' in Cargo.toml,"
            echo " no LICENSE file in the source tree)."
        fi
    } > "$1"
}

stage_tree() { # destroot libdir
    D=$1; L=$2
    mkdir -p "$D/$L/pkgconfig" "$D/$L/cmake/skinnylt" "$D/usr/include" "$D/usr/bin" \
             "$D/usr/share/skinnylt/tuning" "$D/usr/share/doc/skinnylt"

    install_elf "$LIB_SRC" "$D/$L/libskinnylt.so.$LIBVER" 0644
    [ "$SONAME" = "libskinnylt.so.$LIBVER" ] || ln -s "libskinnylt.so.$LIBVER" "$D/$L/$SONAME"
    ln -s "$SONAME" "$D/$L/libskinnylt.so"

    install_elf "$BIN_SRC" "$D/usr/bin/skinnylt" 0755
    sed -e "s|^packaged_libdir=.*|packaged_libdir=\"${L#usr/}\"|" \
        -e "s|^soname=.*|soname=\"$SONAME\"|" \
        -e "s|^launcher_version=.*|launcher_version=\"$VERSION\"|" \
        "$PKGDIR/skinnylt-run" > "$D/usr/bin/skinnylt-run"
    chmod 0755 "$D/usr/bin/skinnylt-run"

    cp "$HEADER" "$D/usr/include/skinnylt.h"
    cp "$ROOT"/tuning/*.json "$D/usr/share/skinnylt/tuning/"

    write_pc "$D/$L/pkgconfig/skinnylt.pc" "$L"
    write_cmake "$D/$L/cmake/skinnylt" "$L"

    if [ -f "$ROOT/README.md" ]; then
        cp "$ROOT/README.md" "$D/usr/share/doc/skinnylt/README.md"
    else
        cp "$PKGDIR/README.md" "$D/usr/share/doc/skinnylt/README.md"
    fi
    cp "$PKGDIR/README.md" "$D/usr/share/doc/skinnylt/README.packaging.md"
    write_copyright "$D/usr/share/doc/skinnylt/copyright"

    find "$D" -type d -exec chmod 0755 {} +
    find "$D" -type f ! -path '*/usr/bin/*' -exec chmod 0644 {} +
}

DESCRIPTION_BODY=$(cat <<EOF
skinnylt is a shared library (libskinnylt.so.0) that exports the hipBLASLt C
API. Loaded ahead of hipBLASLt, it runs the small-M ("skinny") GEMMs of LLM
decoding on its own low-latency split-K GPU kernels and forwards every other
call to the real hipBLASLt. hipBLASLt and the HIP runtime are opened at run
time (dlopen), never linked, so neither is a hard dependency. C and C++
engines can also link it directly (skinnylt.h, pkg-config, CMake
find_package(skinnylt)).

Installing this package does NOT preload skinnylt into any process.
Enable it per command with "skinnylt-run <command>", per service
with LD_PRELOAD=<libdir>/$SONAME
in the service environment, or system-wide through /etc/ld.so.preload
(affects every process; not recommended).
See /usr/share/doc/skinnylt/README.packaging.md.
EOF
)

# --------------------------------------------------------------------------
# 4a. .deb
# --------------------------------------------------------------------------
rm -f "$OUT"/skinnylt_*.deb "$OUT"/skinnylt-*.rpm
if [ "$want_deb" = 1 ]; then
    need dpkg-deb "install dpkg"
    D="$STAGE/deb"
    stage_tree "$D" "$DEB_LIBDIR"
    {
        echo "skinnylt ($PKGVER-$PKGREL) unstable; urgency=medium"
        echo
        echo "  * Built from the skinnylt $VERSION source tree by packaging/build-packages.sh."
        echo
        echo " -- $MAINTAINER  $CHANGELOG_DATE"
    } | gzip -9n > "$D/usr/share/doc/skinnylt/changelog.Debian.gz"
    chmod 0644 "$D/usr/share/doc/skinnylt/changelog.Debian.gz"
    mkdir -p "$D/DEBIAN"
    INSTALLED_SIZE=$(du -sk --exclude=DEBIAN "$D" | cut -f1)
    {
        echo "Package: skinnylt"
        echo "Version: $PKGVER-$PKGREL"
        echo "Architecture: $DEBARCH"
        echo "Maintainer: $MAINTAINER"
        echo "Installed-Size: $INSTALLED_SIZE"
        echo "Depends: $DEB_DEPENDS"
        echo "Recommends: libhipblaslt1 | libhipblaslt0"
        echo "Suggests: libamdhip64-6 | libamdhip64-7"
        echo "Section: libs"
        echo "Priority: optional"
        [ -z "$HOMEPAGE" ] || echo "Homepage: $HOMEPAGE"
        echo "Description: $SUMMARY"
        printf '%s\n' "$DESCRIPTION_BODY" | sed -e "s|<libdir>|/$DEB_LIBDIR|" \
            -e 's/^$/./' -e 's/^/ /'
    } > "$D/DEBIAN/control"
    echo "activate-noawait ldconfig" > "$D/DEBIAN/triggers"
    # shlibs: lets dpkg-shlibdeps give packages that link skinnylt a dependency on it.
    echo "${SONAME%%.so.*} ${SONAME##*.so.} skinnylt (>= $PKGVER)" > "$D/DEBIAN/shlibs"
    (cd "$D" && find usr -type f | sort | xargs md5sum) > "$D/DEBIAN/md5sums"
    # Reproducible file times when SOURCE_DATE_EPOCH is set.
    [ -z "${SOURCE_DATE_EPOCH:-}" ] || find "$D" -exec touch -h -d "@$EPOCH" {} +
    chmod 0644 "$D"/DEBIAN/*
    DEB="$OUT/skinnylt_${PKGVER}-${PKGREL}_${DEBARCH}.deb"
    dpkg-deb --root-owner-group -Zxz --build "$D" "$DEB" >/dev/null
    say "wrote $DEB"
fi

# --------------------------------------------------------------------------
# 4b. .rpm
# --------------------------------------------------------------------------
if [ "$want_rpm" = 1 ]; then
    need rpmbuild "Debian/Ubuntu: apt-get install rpm; Fedora/RHEL: dnf install rpm-build"
    D="$STAGE/rpm"
    stage_tree "$D" "$RPM_LIBDIR"
    TOP="$OUT/rpmbuild"
    rm -rf "$TOP"
    mkdir -p "$TOP/SPECS" "$TOP/BUILD" "$TOP/BUILDROOT" "$TOP/RPMS" "$TOP/SOURCES" "$TOP/SRPMS"
    SPEC="$TOP/SPECS/skinnylt.spec"
    {
        cat <<EOF
# Generated by packaging/build-packages.sh: packages a pre-staged tree.
%global debug_package %{nil}
%global __os_install_post %{nil}
%global _build_id_links none
%global __pkgconfig_provides %{nil}
%global __pkgconfig_requires %{nil}

Name:           skinnylt
Version:        $PKGVER
Release:        $PKGREL
Summary:        $SUMMARY
License:        ${LICENSE:-Unspecified}
EOF
        [ -z "$HOMEPAGE" ] || echo "URL:            $HOMEPAGE"
        cat <<EOF
Packager:       $MAINTAINER
# hipBLASLt and the HIP runtime are dlopen()ed at run time, never linked.
Recommends:     hipblaslt
Suggests:       hip-runtime-amd
# Explicit, so the result does not depend on the build host having pkg-config:
Provides:       pkgconfig(skinnylt) = $PKGVER
Provides:       cmake(skinnylt) = $PKGVER

%description
$(printf '%s\n' "$DESCRIPTION_BODY" | sed "s|<libdir>|/$RPM_LIBDIR|")

%prep
%build

%install
rm -rf %{buildroot}
mkdir -p %{buildroot}
cp -a "$D/." %{buildroot}/

%files
%defattr(-,root,root,-)
/$RPM_LIBDIR/libskinnylt.so.$LIBVER
EOF
        [ "$SONAME" = "libskinnylt.so.$LIBVER" ] || echo "/$RPM_LIBDIR/$SONAME"
        cat <<EOF
/$RPM_LIBDIR/libskinnylt.so
/$RPM_LIBDIR/pkgconfig/skinnylt.pc
%dir /$RPM_LIBDIR/cmake/skinnylt
/$RPM_LIBDIR/cmake/skinnylt/skinnylt-config.cmake
/$RPM_LIBDIR/cmake/skinnylt/skinnylt-config-version.cmake
/usr/include/skinnylt.h
/usr/bin/skinnylt
/usr/bin/skinnylt-run
%dir /usr/share/skinnylt
%dir /usr/share/skinnylt/tuning
EOF
        for f in "$D"/usr/share/skinnylt/tuning/*.json; do
            echo "/usr/share/skinnylt/tuning/${f##*/}"
        done
        cat <<EOF
%dir /usr/share/doc/skinnylt
%doc /usr/share/doc/skinnylt/README.md
%doc /usr/share/doc/skinnylt/README.packaging.md
%license /usr/share/doc/skinnylt/copyright
EOF
    } > "$SPEC"
    # Note: no ldconfig scriptlet; glibc's rpm file triggers (Fedora >= 28, RHEL >= 8)
    # refresh the cache for /usr/lib64.
    set --
    [ -z "${SOURCE_DATE_EPOCH:-}" ] || set -- --define "use_source_date_epoch_as_buildtime 1" \
        --define "clamp_mtime_to_source_date_epoch 1"
    rpmbuild -bb --quiet "$@" \
        --define "_topdir $TOP" \
        --define "_rpmdir $OUT" \
        --define "_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm" \
        --define "_binary_payload w6.xzdio" \
        --define "_buildhost skinnylt-build" \
        --target "$RPMARCH" \
        "$SPEC" >"$TOP/rpmbuild.log" 2>&1 || { cat "$TOP/rpmbuild.log" >&2; die "rpmbuild failed"; }
    RPM="$OUT/skinnylt-${PKGVER}-${PKGREL}.${RPMARCH}.rpm"
    [ -f "$RPM" ] || { cat "$TOP/rpmbuild.log" >&2; die "rpmbuild did not write $RPM"; }
    say "wrote $RPM"
fi
