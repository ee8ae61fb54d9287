#!/usr/bin/env bash
# Install everything fibd needs to build and test, from Debian 12 packages.
# Idempotent: when every package is already installed it changes nothing.
# Run as root (CI runs it as root on a fresh machine).
set -euo pipefail

packages=(
	# build
	gcc clang meson ninja-build pkg-config
	libmnl-dev libuv1-dev
	# tests: cmocka, msgpack-c (the encoder's reference), libFuzzer runtime,
	# the netns suite, vector generator
	libcmocka-dev libmsgpack-dev libclang-rt-14-dev iproute2 iputils-ping procps python3 python3-msgpack
	# real BGP peers for netns/85-bgp.sh
	exabgp frr gobgpd openbgpd
	# the man pages are checked with groff
	groff-base
	# bird-glue/build.sh: BIRD 2.0.12 from Debian's source package
	dpkg-dev patch autoconf bison flex m4 libncurses-dev libreadline-dev libssh-gcrypt-dev
	# scripts/package.sh: the Debian package
	debhelper fakeroot build-essential
)

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
