#!/usr/bin/env bash
# Tiered storage: GET/SET throughput and resident memory of dfly with
# maxmemory at half the dataset and --tiered_prefix, against the same
# dataset all in memory. Prints both rows and the tiered/in-memory ratios.
# Targets (issue #9): resident memory <= 0.6x at >= 0.5x the GET throughput.
set -euo pipefail

KEYS=${KEYS:-200000}            # distinct keys
SIZE=${SIZE:-1024}              # value size
FILL=${FILL:-$((KEYS * 3))}     # SETs of random keys to fill (covers ~95% of KEYS)
N=${N:-200000}                  # GETs per run
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-1}
SETTLE=${SETTLE:-30}            # seconds at most to wait for offloading to settle
DFLY_FLAGS=${DFLY_FLAGS:-}      # extra flags for both runs
DFLY_BIN=${DFLY_BIN:-}
SERVER_CPU=${SERVER_CPU:-0}     # the server is pinned to one core, the client to another
CLIENT_CPU=${CLIENT_CPU:-1}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d -t dfly-tiered.XXXXXX)
pids=()

cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "tiered.sh: $*" >&2; exit 1; }

for tool in redis-cli redis-benchmark taskset awk; do
	command -v "$tool" >/dev/null || die "$tool not found"
done

if [[ -z $DFLY_BIN ]]; then
	echo "building dfly..." >&2
	(cd "$root" && go build -o "$work/dfly" ./cmd/dfly) || die "go build ./cmd/dfly failed"
	DFLY_BIN=$work/dfly
fi

free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
	die "no free port found"
}

# start FLAGS...: starts dfly pinned to SERVER_CPU, sets PORT and PID.
start() {
	local port log
	port=$(free_port)
	log=$work/dfly.$port.log
	# shellcheck disable=SC2206 # DFLY_FLAGS is split on purpose
	taskset -c "$SERVER_CPU" "$DFLY_BIN" --port "$port" --bind 127.0.0.1 --dir "$work" $DFLY_FLAGS "$@" >"$log" 2>&1 &
	PID=$!
	PORT=$port
	pids+=("$PID")
	for _ in $(seq 200); do
		[[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]] && return
		kill -0 "$PID" 2>/dev/null || { cat "$log" >&2; die "dfly exited at startup"; }
		sleep 0.05
	done
	die "dfly did not answer PING within 10 s"
}

stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

info() { redis-cli -p "$1" info "$2" | tr -d '\r' | awk -F: -v k="$3" '$1 == k { print $2 }'; }
rss_bytes() { awk '$1 == "VmRSS:" { print $2 * 1024 }' "/proc/$1/status"; }

# rps PORT TEST ARGS...: requests per second of one redis-benchmark run.
rps() {
	local port=$1 test=$2
	shift 2
	taskset -c "$CLIENT_CPU" redis-benchmark -p "$port" -q --csv -t "$test" -c "$CLIENTS" -P "$PIPELINE" \
		-r "$KEYS" -d "$SIZE" "$@" | awk -F, 'NR > 1 { gsub(/"/, "", $2); print int($2) }'
}

# settle PORT: waits until tiered writes stop (offloaded entries stable).
settle() {
	local port=$1 last=-1 cur i
	for ((i = 0; i < SETTLE * 2; i++)); do
		cur=$(info "$port" tiered tiered_entries)
		[[ -z $cur ]] && return
		[[ $cur == "$last" ]] && return
		last=$cur
		sleep 0.5
	done
}

half=$((KEYS * SIZE / 2))
declare -A set_rps get_rps rss rss_get used keys offloaded
for mode in memory tiered; do
	if [[ $mode == tiered ]]; then
		start --maxmemory "$half" --tiered_prefix "$work/tier"
	else
		start
	fi
	set_rps[$mode]=$(rps "$PORT" set -n "$FILL")
	settle "$PORT"
	redis-cli -p "$PORT" debug gc >/dev/null
	sleep 1
	rss[$mode]=$(rss_bytes "$PID")
	used[$mode]=$(info "$PORT" memory used_memory)
	keys[$mode]=$(redis-cli -p "$PORT" dbsize)
	offloaded[$mode]=$(info "$PORT" tiered tiered_entries)
	offloaded[$mode]=${offloaded[$mode]:-0}
	get_rps[$mode]=$(rps "$PORT" get -n "$N")
	rss_get[$mode]=$(rss_bytes "$PID")
	if [[ $mode == tiered ]]; then
		echo "INFO tiered after the GET run:" >&2
		redis-cli -p "$PORT" info tiered | tr -d '\r' | grep -E 'entries|reads|serves|loads|writes|errors|file|step' >&2
	fi
	stop "$PID"
done

echo "Tiered storage: $KEYS keys of $SIZE bytes, maxmemory $half (half the values), pipeline $PIPELINE, $CLIENTS clients"
echo "rss: after the fill and DEBUG GC; rss_get: after the GET run (steady state)"
printf "%-8s %10s %10s %12s %12s %12s %10s %10s %10s\n" mode SET/s GET/s rss rss_get used_mem keys offloaded rss_get/key
for mode in memory tiered; do
	printf "%-8s %10d %10d %12d %12d %12d %10d %10d %10d\n" "$mode" "${set_rps[$mode]}" "${get_rps[$mode]}" \
		"${rss[$mode]}" "${rss_get[$mode]}" "${used[$mode]}" "${keys[$mode]}" "${offloaded[$mode]}" \
		$((rss_get[$mode] / keys[$mode]))
done
awk -v rm="${rss[memory]}" -v rt="${rss[tiered]}" -v um="${used[memory]}" -v ut="${used[tiered]}" \
	-v rgm="${rss_get[memory]}" -v rgt="${rss_get[tiered]}" \
	-v gm="${get_rps[memory]}" -v gt="${get_rps[tiered]}" -v sm="${set_rps[memory]}" -v st="${set_rps[tiered]}" \
	-v off="${offloaded[tiered]}" -v keys="${keys[tiered]}" 'BEGIN {
	printf "ratios tiered/memory: rss %.2f after fill, %.2f after GETs (target <= 0.6), used_memory %.2f, GET %.2f (target >= 0.5), SET %.2f\n",
		rt / rm, rgt / rgm, ut / um, gt / gm, st / sm
	if (off > 0) {
		printf "resident memory saved per offloaded key: %d bytes (after GETs)\n", (rgm - rgt) / off
		printf "resident memory per key: %d bytes in memory, %d tiered (%d of %d offloaded)\n", rgm / keys, rgt / keys, off, keys
	}
}'
