#!/usr/bin/env bash
# The main job, as far as it exists today: set up, build, and show what the build
# holds. fibd, fibctl and the BIRD protocol come with the next issues; until then
# the demo prints the versions and decodes a sample proto-shim session (every
# message type, from tests/vectors) with psdump.
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/setup.sh
if [ -f build/build.ninja ]; then
	meson setup --reconfigure build >/dev/null
else
	meson setup build >/dev/null
fi
ninja -C build >/dev/null

echo "== versions"
build/proto-shim/psdump --version
for lib in libmnl libuv msgpack cmocka; do
	printf '%-8s %s\n' "$lib" "$(pkg-config --modversion "$lib" 2>/dev/null || echo missing)"
done
echo "kernel   $(uname -r)"

echo "== a sample session, decoded (psdump)"
python3 - tests/vectors > build/demo-session.bin <<'PY'
import os, sys
d = sys.argv[1]
out = sys.stdout.buffer
for name in sorted(os.listdir(d)):
    if name.endswith(".vec") and not name.startswith("bad-"):
        hexs = "".join(l[7:] for l in open(os.path.join(d, name)) if l.startswith("bytes: "))
        out.write(bytes.fromhex(hexs.replace(" ", "")))
PY
build/proto-shim/psdump build/demo-session.bin
