#!/usr/bin/env bash
# BGSAVE under write load, dfly next to redis-server (issue 7's figures):
#   - peak memory during BGSAVE under a write load / peak under the same load without a
#     save, as the sum of PSS over the server and its children (Redis's forked child
#     shares pages copy-on-write: PSS counts each shared page once overall);
#   - BGSAVE wall time;
#   - SET throughput and p99 of a redis-benchmark run with a BGSAVE started at its
#     beginning, against the same run without one;
#   - dfly's longest shard stall during the save (INFO snapshot_max_stall_usec).
# Rows: redis, dfly writing .rdb, dfly writing its own per-shard files (dfs).
# Env: KEYS (default 1000000), SIZE (value bytes, default 1024), N (requests, default 300000),
# DFLY_BIN (a dfly binary to run instead of a fresh build of ./cmd/dfly).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KEYS=${KEYS:-1000000}
SIZE=${SIZE:-1024}
N=${N:-300000}
# The SET load's key range (redis-benchmark -r). Its keys (key:000000012345) are not DEBUG
# POPULATE's (key:12345). By default the load overwrites: PREFILL SETs that many random keys
# of the range first (pipelined, R=100000 PREFILL=500000 fills 99%), so the peak measures
# what the save itself holds. R=$KEYS PREFILL=0 is the load the figures before session 5
# used: it inserts a new key with most SETs, so the dataset grows ~14% during the 300000
# SETs of the measured run whatever the save does (redis and dfly alike), and a longer
# save reads as a bigger peak.
R=${R:-100000}
PREFILL=${PREFILL:-500000}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
if [[ -n ${DFLY_BIN:-} ]]; then
	cp "$DFLY_BIN" "$work/dfly" # another build, to compare
else
	(cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly)
fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() {
	PORT=$(free_port)
	mkdir -p "$work/data-$1"
	if [[ $1 == redis ]]; then
		redis-server --port "$PORT" --save '' --appendonly no --enable-debug-command yes --dir "$work/data-$1" >/dev/null 2>&1 &
	elif [[ $1 == dfs ]]; then
		"$work/dfly" --port "$PORT" --dir "$work/data-$1" --dbformat dfly >/dev/null 2>&1 &
	else
		"$work/dfly" --port "$PORT" --dir "$work/data-$1" >/dev/null 2>&1 &
	fi
	PID=$!
	pids+=("$PID")
	for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && return; sleep 0.1; done
	echo "bgsave.sh: $1 did not start" >&2; exit 1
}
# pss PID: kB of PSS of PID and its children.
pss() {
	local total=0 p
	for p in "$1" $(pgrep -P "$1" || true); do
		total=$((total + $(awk '/^Pss:/ { print $2 }' "/proc/$p/smaps_rollup" 2>/dev/null || echo 0)))
	done
	echo "$total"
}
in_progress() { redis-cli -p "$PORT" info persistence | tr -d '\r' | awk -F: '$1 == "rdb_bgsave_in_progress" { print $2 }'; }
p99() { awk -F, 'NR > 1 { gsub(/"/, "", $7); print $7 }'; }
rps() { awk -F, 'NR > 1 { gsub(/"/, "", $2); print $2 }'; }
stall() { redis-cli -p "$PORT" info persistence | tr -d '\r' | awk -F: '$1 == "snapshot_max_stall_usec" { print $2 / 1000 }'; }

printf '%-6s %12s %12s %8s %8s %10s %10s %8s %8s %8s %9s\n' server steady_kB peak_kB peak_x save_s rps_base rps_save p99_base p99_save p99_x stall_ms
for server in redis dfly dfs; do
	start "$server"
	redis-cli -p "$PORT" debug populate "$KEYS" key "$SIZE" >/dev/null
	if ((PREFILL > 0)); then
		redis-benchmark -p "$PORT" -q -t set -r "$R" -d "$SIZE" -n "$PREFILL" -c 50 -P 16 >/dev/null
	fi
	sleep 1
	# Steady state: the peak under the same write load without a save (the
	# load alone moves memory: Redis's allocator, dfly's GC headroom).
	redis-benchmark -p "$PORT" -q --csv -t set -r "$R" -d "$SIZE" -n "$N" -c 50 >"$work/base.csv" &
	bench=$!
	steady=$(pss "$PID")
	while kill -0 "$bench" 2>/dev/null; do
		m=$(pss "$PID")
		((m > steady)) && steady=$m
		sleep 0.02
	done
	wait "$bench" || true
	base=$(p99 <"$work/base.csv")
	base_rps=$(rps <"$work/base.csv")
	redis-cli -p "$PORT" config resetstat >/dev/null
	redis-benchmark -p "$PORT" -q --csv -t set -r "$R" -d "$SIZE" -n "$N" -c 50 >"$work/load.csv" &
	bench=$!
	sleep 0.2
	t0=$(date +%s.%N)
	redis-cli -p "$PORT" bgsave >/dev/null
	peak=$steady
	while [[ $(in_progress) == 1 ]]; do
		m=$(pss "$PID")
		((m > peak)) && peak=$m
		sleep 0.02
	done
	secs=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.2f", b - a }')
	wait "$bench"
	during=$(p99 <"$work/load.csv")
	during_rps=$(rps <"$work/load.csv")
	st=-
	[[ $server != redis ]] && st=$(stall)
	awk -v s="$server" -v a="$steady" -v b="$peak" -v t="$secs" -v p="$base" -v q="$during" \
		-v r1="$base_rps" -v r2="$during_rps" -v st="$st" \
		'BEGIN { printf "%-6s %12d %12d %7.2fx %8s %10s %10s %8s %8s %7.2fx %9s\n", s, a, b, b / a, t, r1, r2, p, q, q / p, st }'
	redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || true
	sleep 0.5
done
