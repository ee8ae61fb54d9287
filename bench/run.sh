#!/usr/bin/env bash
# Run a benchmark from a release build (NDEBUG: no debug assertions).
#   bench/run.sh slab
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?usage: bench/run.sh slab|feed [ROUTES]|rescan [N]|dump [N]|bird [N4 N6 STEADY_S]}
shift

scripts/setup.sh >/dev/null
if [ ! -f build-bench/build.ninja ]; then
	meson setup build-bench --buildtype=release -Db_ndebug=true -Dtests=disabled >/dev/null
fi
ninja -C build-bench >/dev/null
case "$which" in
slab) exec build-bench/bench/bench_slab ;;
feed) BUILD_DIR=build-bench exec bench/feed.sh "$@" ;;
rescan) BUILD_DIR=build-bench exec bench/rescan.sh "$@" ;;
dump) BUILD_DIR=build-bench exec bench/dump.sh "$@" ;;
bird)
	bird-glue/build.sh build/bird >/dev/null
	BUILD_DIR=build-bench exec bench/bird.sh "$@"
	;;
*) echo "bench/run.sh: unknown benchmark '$which' (known: slab, feed, rescan, dump, bird)" >&2; exit 2 ;;
esac
