#!/usr/bin/env bash
# Run a benchmark from a release build (NDEBUG: no debug assertions).
#   bench/run.sh slab
set -euo pipefail
cd "$(dirname "$0")/.."
which=${1:?usage: bench/run.sh slab|feed [--uniform] [--no-dev] [ROUTES]|rescan [N]|scale [N4 N6]|dump [N]|bird|bgp [--bird 2.0.12|2.19|3] [--uniform] [N4 N6 STEADY_S]|churn [--bird 2.0.12|2.19|3] [--uniform] [N4 N6 CHURN ROUNDS STEADY_S]}
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
scale) BUILD_DIR=build-bench exec bench/scale.sh "$@" ;;
dump) BUILD_DIR=build-bench exec bench/dump.sh "$@" ;;
bird | bgp | churn)
	# --bird VERSION: the BIRD to measure (default 2.0.12), built by bird-glue/build.sh.
	# bgp: BIRD over BGP into fibd beside BIRD's kernel protocol, FRR's zebra and fibctl feed.
	# churn: the table over BGP into the BIRD measured, part of it withdrawn and announced again.
	[ "$which" = bgp ] && export BENCH_ONLY=bgp
	version=2.0.12
	shape=()
	while [ $# -gt 0 ]; do
		case $1 in
		--bird) version=${2:?bench/run.sh bird --bird 2.0.12|2.19|3}; shift 2 ;;
		--uniform) shape=(--uniform); shift ;;
		*) break ;;
		esac
	done
	case $version in
	2.0.12) out=build/bird ;;
	2.19 | 2.19.2) out=build/bird-2.19.2 ;;
	3 | 3.3 | 3.3.2) out=build/bird-3.3.2 ;;
	*) echo "bench/run.sh: unknown BIRD '$version' (2.0.12, 2.19, 3)" >&2; exit 2 ;;
	esac
	if ! bird-glue/build.sh --bird "$version" "$out" >"$out.build.log" 2>&1; then
		tail -n 30 "$out.build.log" >&2
		exit 1
	fi
	script=bench/bird.sh
	[ "$which" = churn ] && script=bench/churn.sh
	BUILD_DIR=build-bench BIRD_DIR=$PWD/$out exec "$script" "${shape[@]}" "$@"
	;;
*) echo "bench/run.sh: unknown benchmark '$which' (known: slab, feed, rescan, scale, dump, bird, bgp, churn)" >&2; exit 2 ;;
esac
