#!/usr/bin/env bash
# Build BIRD with the fibd protocol: BIRD 2.0.12 from Debian's source package
# (adding a bookworm deb-src entry if apt has none), or BIRD 2.19.2 or 3.3.2
# from upstream's source (a release tarball, a git archive of its tag, or a
# tree); apply that version's patch (bird-VERSION.patch), add the protocol
# (proto/common/ and proto/fibd/ for BIRD 2 or proto/fibd3/ for BIRD 3), link
# proto-shim, and leave bird, birdc and birdcl in OUTDIR. Fixes of
# BIRD itself that we carry until upstream has them (bird-VERSION-*.patch, each
# saying why) are applied after it. No BIRD is installed and a system BIRD is left
# alone; the Debian packages the build needs are (scripts/setup.sh --bird, as
# root). A second run rebuilds only what changed.
#   bird-glue/build.sh [--bird 2.0.12|2.19|3] [--src TARBALL|DIR] [--check] [--no-fixes] [--no-lto] [OUTDIR]
#   --bird      the BIRD to build: 2.0.12 (default), 2.19 or 3
#   --src       upstream's source for 2.19 or 3 (default: ../shared/bird/bird-VERSION.tar.gz
#               beside this repository, if there)
#   --check     also run BIRD's own unit tests (make check) on the patched tree
#   --no-fixes  leave out the carried fixes of BIRD (bird-VERSION-*.patch): upstream's
#               BIRD with only the protocol added
#   --no-lto    build without link-time optimization (faster, above all BIRD's unit
#               tests, each linked with the whole daemon; for CI, not for benchmarks)
#   OUTDIR      default build/bird for 2.0.12, build/bird-VERSION otherwise
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
GLUE=$REPO/bird-glue
CHECK=no
FIXES=yes
LTO=yes
BIRD=2.0.12
SRC=
usage() {
	sed -n 's/^#   //p' "$0" >&2
	exit 2
}
while [ $# -gt 0 ]; do
	case $1 in
	--check) CHECK=yes; shift ;;
	--no-fixes) FIXES=no; shift ;;
	--no-lto) LTO=no; shift ;;
	--bird) [ $# -ge 2 ] || usage; BIRD=$2; shift 2 ;;
	--src) [ $# -ge 2 ] || usage; SRC=$2; shift 2 ;;
	-*) usage ;;
	*) break ;;
	esac
done
# OUTDIR, if given, comes last: an option after it would be dropped unsaid.
[ $# -le 1 ] || { echo "build.sh: unexpected arguments after OUTDIR '$1': ${*:2}" >&2; usage; }
case $BIRD in
2.0.12) VERSION=2.0.12 ;;
2.19 | 2.19.2) VERSION=2.19.2 ;;
3 | 3.3 | 3.3.2) VERSION=3.3.2 ;;
*) usage ;;
esac
# The protocol's source: proto/common/ and the major version's own directory.
case $VERSION in
2.*) PROTO_DIR=fibd ;;
3.*) PROTO_DIR=fibd3 ;;
esac
if [ "$VERSION" = 2.0.12 ]; then
	if [ -n "$SRC" ]; then
		echo "build.sh: BIRD 2.0.12 comes from Debian's source package; --src is for 2.19 and 3" >&2
		exit 2
	fi
	OUT=$(realpath -m "${1:-$REPO/build/bird}")
else
	OUT=$(realpath -m "${1:-$REPO/build/bird-$VERSION}")
	SRC=${SRC:-$REPO/../shared/bird/bird-$VERSION.tar.gz}
	if [ ! -e "$SRC" ]; then
		echo "build.sh: no source of BIRD $VERSION at $SRC; give --src TARBALL|DIR" >&2
		exit 1
	fi
	SRC=$(realpath "$SRC")
fi
mkdir -p "$OUT"
# One build in OUTDIR at a time (two makes in one tree break it): a second waits.
exec {lock}>"$OUT/.build.lock"
flock "$lock"
# BIRD names its version after the git repository it is in: ours is not its.
export GIT_CEILING_DIRECTORIES=$OUT

# Build dependencies, and what apt-get source needs (dpkg-dev): only those, not the
# test suite's (as root it installs what is missing; otherwise it names it).
"$REPO/scripts/setup.sh" --bird

# 1. The source, once: Debian's into OUT/debian, upstream's into OUT/upstream.
if [ "$VERSION" = 2.0.12 ]; then
	if [ ! -d "$OUT/debian/bird2-$VERSION" ]; then
		if ! apt-get source --print-uris bird2 >/dev/null 2>&1; then
			if [ "$(id -u)" -ne 0 ]; then
				echo "build.sh: apt has no deb-src entry for bookworm; as root I would add one" >&2
				exit 1
			fi
			printf 'Types: deb-src\nURIs: http://deb.debian.org/debian\nSuites: bookworm\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
				>/etc/apt/sources.list.d/fibd-bookworm-src.sources
			apt-get update -qq
		fi
		rm -rf "$OUT/debian.tmp"
		mkdir -p "$OUT/debian.tmp"
		(cd "$OUT/debian.tmp" && apt-get source -qq "bird2=$VERSION-*" >/dev/null 2>&1 ||
			apt-get source -qq bird2 >/dev/null)
		if [ ! -d "$OUT/debian.tmp/bird2-$VERSION" ]; then
			echo "build.sh: apt-get source bird2 did not bring BIRD $VERSION:" \
				"$(ls "$OUT/debian.tmp")" >&2
			exit 1
		fi
		mv "$OUT/debian.tmp" "$OUT/debian"
	fi
	ORIG=$OUT/debian/bird2-$VERSION
else
	# A tarball (upstream's release, or a git archive of the tag) or a tree; a
	# tree is known by its files' names, sizes and times, so that an edit in it
	# is copied again.
	srcstamp=$( (if [ -d "$SRC" ]; then
		echo "$SRC"
		find "$SRC" -type f -printf '%P %s %T@\n' | LC_ALL=C sort
	else sha256sum "$SRC"; fi) | sha256sum | cut -c1-16)
	if [ ! -f "$OUT/upstream/.src-$srcstamp" ]; then
		rm -rf "$OUT/upstream"
		mkdir -p "$OUT/upstream"
		if [ -d "$SRC" ]; then
			cp -a "$SRC" "$OUT/upstream/bird"
		else
			tar -C "$OUT/upstream" -xf "$SRC"
			top=$(ls "$OUT/upstream")
			if [ "$(echo "$top" | wc -l)" -ne 1 ]; then
				echo "build.sh: $SRC does not hold one directory" >&2
				exit 1
			fi
			mv "$OUT/upstream/$top" "$OUT/upstream/bird"
		fi
		if ! grep -q "$VERSION" "$OUT/upstream/bird/VERSION" 2>/dev/null &&
			! grep -q "$VERSION" "$OUT/upstream/bird/NEWS" 2>/dev/null; then
			echo "build.sh: $SRC does not look like BIRD $VERSION" >&2
			exit 1
		fi
		touch "$OUT/upstream/.src-$srcstamp"
	fi
	ORIG=$OUT/upstream/bird
fi

# 2. proto-shim, as a static library, from this repository's meson build.
if [ -f "$OUT/shim/build.ninja" ]; then
	meson setup --reconfigure "$OUT/shim" "$REPO" -Dbuildtype=release -Dtests=disabled >/dev/null
else
	meson setup "$OUT/shim" "$REPO" -Dbuildtype=release -Dtests=disabled >/dev/null
fi
ninja -C "$OUT/shim" proto-shim/libproto-shim.a >/dev/null
SHIM_LIB=$OUT/shim/proto-shim/libproto-shim.a

# 3. The patched tree: made again when a patch changes; proto/fibd/ is synced
# file by file, so that make rebuilds only what changed.
patches=("$GLUE/bird-$VERSION.patch")
if [ "$FIXES" = yes ]; then
	for f in "$GLUE/bird-$VERSION"-*.patch; do
		if [ -e "$f" ]; then patches+=("$f"); fi
	done
fi
# (the source's stamp too: a new --src makes the tree again)
stamp=$({
	echo "${srcstamp:-debian}"
	echo "lto=$LTO"
	for f in "${patches[@]}"; do basename "$f"; sha256sum <"$f"; done
} | sha256sum | cut -c1-16)
TREE=$OUT/tree
if [ ! -f "$TREE/.fibd-patch-$stamp" ]; then
	rm -rf "$TREE"
	cp -a "$ORIG" "$TREE"
	for f in "${patches[@]}"; do
		# (no fuzz: a hunk that does not fit exactly may land in the wrong place)
		patch -d "$TREE" -p1 --quiet --fuzz=0 <"$f"
	done
	mkdir -p "$TREE/proto/fibd"
	touch "$TREE/.fibd-patch-$stamp"
fi
for f in "$GLUE"/proto/common/* "$GLUE/proto/$PROTO_DIR"/*; do
	cmp -s "$f" "$TREE/proto/fibd/$(basename "$f")" || cp "$f" "$TREE/proto/fibd/"
done

cd "$TREE"
if [ ! -f Makefile ]; then
	# Upstream's git archives ship no configure (-f: make it whole).
	if [ "$VERSION" = 2.0.12 ]; then autoreconf -i; else autoreconf -fi; fi >/dev/null 2>&1
	# BIRD 3 has --disable-lto; BIRD 2 decides in a cached check, preset here.
	lto=()
	if [ "$LTO" = no ]; then
		case $VERSION in
		2.*) lto=(bird_cv_c_lto=no) ;;
		3.*) lto=(--disable-lto) ;;
		esac
	fi
	./configure --quiet "${lto[@]}" CPPFLAGS="-I$REPO/proto-shim/include" FIBD_LIBS="$SHIM_LIB" >/dev/null
fi
if ! grep -q '^#define CONFIG_FIBD' obj/sysdep/autoconf.h; then
	echo "build.sh: configure left the fibd protocol out (proto-shim not found);" \
		"see $TREE/config.log" >&2
	exit 1
fi
# The proto-shim library is no make prerequisite: relink bird when it is newer.
if [ "$SHIM_LIB" -nt bird ]; then rm -f bird; fi
# BIRD 2.0.12's nest/proto-build.c rule lacks the object directories as a
# prerequisite (upstream added it later), so a parallel make can race their
# creation ("cannot create obj/nest/proto-build.c"): make them first.
make obj/.dir-stamp >/dev/null
make -j"$(nproc)" >/dev/null
for b in bird birdc birdcl; do
	cmp -s "$b" "$OUT/$b" || cp "$b" "$OUT/$b"
done
if [ "$CHECK" = yes ]; then
	make -j"$(nproc)" check
fi
echo "build.sh: $("$OUT/bird" --version 2>&1) with the fibd protocol${patches[1]:+ and $(( ${#patches[@]} - 1 )) carried fix(es)} in $OUT"
