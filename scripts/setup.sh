#!/usr/bin/env bash
# Install what fibd needs, from Debian 12 packages:
#   scripts/setup.sh          everything: build, tests, benchmarks, the Debian package
#   scripts/setup.sh --bird   only what bird-glue/build.sh needs to build a BIRD
# Idempotent: when every package is already installed it changes nothing.
# Run as root (CI runs it as root on a fresh machine).
set -euo pipefail

# What building proto-shim and BIRD with the protocol takes (bird-glue/build.sh):
# the project's meson build (libmnl and libuv are required by it), and BIRD 2.0.12
# from Debian's source package (dpkg-dev) or upstream's tree (autoconf and the rest).
bird_packages=(
	gcc meson ninja-build pkg-config libmnl-dev libuv1-dev
	dpkg-dev patch autoconf bison flex m4 libncurses-dev libreadline-dev libssh-gcrypt-dev
)
packages=(
	"${bird_packages[@]}"
	# build
	clang
	# tests: cmocka, msgpack-c (the encoder's reference), libFuzzer runtime,
	# the netns suite, vector generator
	libcmocka-dev libmsgpack-dev libclang-rt-14-dev iproute2 iputils-ping procps python3 python3-msgpack
	# real BGP peers for netns/85-bgp.sh
	exabgp frr gobgpd openbgpd
	# the man pages are checked with groff
	groff-base
	# scripts/package.sh: the Debian package
	debhelper fakeroot build-essential
)
case "$#:${1:-}" in
0:) ;;
1:--bird) packages=("${bird_packages[@]}") ;;
*) echo "usage: scripts/setup.sh [--bird]" >&2; exit 2 ;;
esac

missing=()
for p in "${packages[@]}"; do
	# dpkg-query prints nothing useful for a package that is not installed
	if [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" != "install ok installed" ]; then
		missing+=("$p")
	fi
done

if [ ${#missing[@]} -eq 0 ]; then
	echo "setup: all ${#packages[@]} packages present"
	exit 0
fi

if [ "$(id -u)" -ne 0 ]; then
	echo "setup: missing packages: ${missing[*]}" >&2
	echo "setup: run as root (or: sudo apt-get install ${missing[*]})" >&2
	exit 1
fi

echo "setup: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup: done"
