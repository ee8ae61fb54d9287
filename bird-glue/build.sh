#!/usr/bin/env bash
# Build BIRD 2.0.12 from Debian's source package with the fibd protocol: fetch
# the source (adding a bookworm deb-src entry if apt has none), apply
# bird-2.0.12.patch, add proto/fibd/, link proto-shim and msgpack-c, and leave
# bird, birdc and birdcl in OUTDIR. Nothing is installed; a system BIRD is left
# alone. A second run rebuilds only what changed.
#   bird-glue/build.sh [--check] [OUTDIR]     (default OUTDIR: build/bird)
#   --check  also run BIRD's own unit tests (make check) on the patched tree
set -euo pipefail

REPO=$(cd "$(dirname "$0")/.." && pwd)
GLUE=$REPO/bird-glue
CHECK=no
if [ "${1:-}" = --check ]; then
	CHECK=yes
	shift
fi
OUT=$(realpath -m "${1:-$REPO/build/bird}")
VERSION=2.0.12
mkdir -p "$OUT"

# Build dependencies, and what apt-get source needs (dpkg-dev).
"$REPO/scripts/setup.sh"

# 1. Debian's source, fetched once into OUT/debian.
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

# 2. proto-shim, as a static library, from this repository's meson build.
if [ -f "$OUT/shim/build.ninja" ]; then
	meson setup --reconfigure "$OUT/shim" "$REPO" -Dbuildtype=release -Dtests=disabled >/dev/null
else
	meson setup "$OUT/shim" "$REPO" -Dbuildtype=release -Dtests=disabled >/dev/null
fi
ninja -C "$OUT/shim" proto-shim/libproto-shim.a >/dev/null
SHIM_LIB=$OUT/shim/proto-shim/libproto-shim.a

# 3. The patched tree: made again when the patch changes; proto/fibd/ is synced
# file by file, so that make rebuilds only what changed.
stamp=$(sha256sum "$GLUE/bird-$VERSION.patch" | cut -c1-16)
TREE=$OUT/tree
if [ ! -f "$TREE/.fibd-patch-$stamp" ]; then
	rm -rf "$TREE"
	cp -a "$OUT/debian/bird2-$VERSION" "$TREE"
	patch -d "$TREE" -p1 --quiet <"$GLUE/bird-$VERSION.patch"
	mkdir -p "$TREE/proto/fibd"
	touch "$TREE/.fibd-patch-$stamp"
fi
for f in "$GLUE"/proto/fibd/*; do
	cmp -s "$f" "$TREE/proto/fibd/$(basename "$f")" || cp "$f" "$TREE/proto/fibd/"
done

cd "$TREE"
if [ ! -f Makefile ]; then
	autoreconf -i >/dev/null 2>&1
	./configure --quiet CPPFLAGS="-I$REPO/proto-shim/include" FIBD_LIBS="$SHIM_LIB" >/dev/null
fi
if ! grep -q '^#define CONFIG_FIBD' obj/sysdep/autoconf.h; then
	echo "build.sh: configure left the fibd protocol out (proto-shim or msgpack-c not found);" \
		"see $TREE/config.log" >&2
	exit 1
fi
# The proto-shim library is no make prerequisite: relink bird every time.
rm -f bird
make -j"$(nproc)" >/dev/null
for b in bird birdc birdcl; do
	cmp -s "$b" "$OUT/$b" || cp "$b" "$OUT/$b"
done
if [ "$CHECK" = yes ]; then
	make check
fi
echo "build.sh: $("$OUT/bird" --version 2>&1) with the fibd protocol in $OUT"
