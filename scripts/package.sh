#!/usr/bin/env bash
# Build the Debian package of fibd and fibctl with the standard tooling
# (dpkg-buildpackage, debhelper, from debian/), in a copy of the tree so that
# nothing is written beside the checkout, then unpack it into a throwaway root
# and run fibd --version and fibctl help from there.
#   scripts/package.sh [OUTDIR]     (default build/deb; as root: installs what it needs)
set -euo pipefail
cd "$(dirname "$0")/.."
OUT=$(realpath -m "${1:-build/deb}")

scripts/setup.sh >/dev/null # debhelper, dpkg-dev, fakeroot among the rest

rm -rf "$OUT"
mkdir -p "$OUT/src"
git ls-files -z --cached --others --exclude-standard | xargs -0 cp --parents -t "$OUT/src"
(cd "$OUT/src" && dpkg-buildpackage -us -uc -b >"$OUT/build.log" 2>&1) || {
	tail -n 40 "$OUT/build.log"
	exit 1
}
deb=$(ls "$OUT"/fibd_*.deb)
echo "package: $(basename "$deb"), $(du -k "$deb" | cut -f1) KiB"
dpkg-deb --contents "$deb" | awk '{ print $6 }' | grep -E 'bin/|systemd|man8|etc/' | sed 's/^/  /'
root="$OUT/root"
dpkg-deb -x "$deb" "$root"
"$root/usr/sbin/fibd" --version
"$root/usr/bin/fibctl" help | head -n 1
