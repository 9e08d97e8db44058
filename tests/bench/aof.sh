#!/usr/bin/env bash
# The append-only file, dfly next to redis-server (issue 46):
#   throughput: redis-benchmark SET (-c $CLIENTS, -P $PIPE, -r $RANGE random keys, -d $SIZE bytes)
#               with appendonly no, appendonly yes + appendfsync everysec, and + always;
#               requests/s and p99 (ms) per server, and the ratios dfly/redis and dfly/its own no-AOF run;
#   replay:     $REPLAY_N SETs written into the AOF (auto rewrite off, so all in incremental files),
#               SHUTDOWN, restart with appendonly yes and time until DBSIZE is back: seconds per GB of AOF.
# dfly runs with $SHARDS shards (default 2); the servers alternate row by row.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N=${N:-200000}
CLIENTS=${CLIENTS:-50}
PIPE=${PIPE:-1}
RANGE=${RANGE:-100000}
SIZE=${SIZE:-100}
SHARDS=${SHARDS:-2}
REPLAY_N=${REPLAY_N:-1000000}

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
dfly=${DFLY_BIN:-$work/dfly}
[[ -n ${DFLY_BIN:-} ]] || (cd "$here/../.." && go build -o "$dfly" ./cmd/dfly)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }

# start KIND DIR FLAGS... -> PORT PID T0
start() {
	local kind=$1 dir=$2
	shift 2
	PORT=$(free_port)
	T0=$(now)
	if [[ $kind == redis ]]; then
		redis-server --port "$PORT" --save '' --dir "$dir" "$@" >"$dir/redis.log" 2>&1 &
	else
		"$dfly" --port "$PORT" --shards "$SHARDS" --dir "$dir" "$@" >"$dir/dfly.log" 2>&1 &
	fi
	PID=$!
	pids+=("$PID")
	for _ in $(seq 3000); do
		[[ $(redis-cli -p "$PORT" ping 2>/dev/null) == PONG ]] && return
		sleep 0.01
	done
	echo "$kind on $PORT did not start" >&2
	exit 1
}
stop() { redis-cli -p "$PORT" shutdown >/dev/null 2>&1 || true; wait "$PID" 2>/dev/null || true; }

# bench KIND FLAGS... -> RPS P99
bench() {
	local kind=$1
	shift
	local dir=$work/$kind-bench
	rm -rf "$dir" && mkdir -p "$dir"
	start "$kind" "$dir" "$@"
	local line
	line=$(redis-benchmark -p "$PORT" -t set -n "$N" -c "$CLIENTS" -P "$PIPE" -r "$RANGE" -d "$SIZE" --csv | grep -i '"SET"')
	RPS=$(echo "$line" | awk -F'"' '{ printf "%.0f", $4 }')
	P99=$(echo "$line" | awk -F'"' '{ print $14 }')
	stop
	rm -rf "$dir"
}

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b == 0) print "-"; else printf "%.2f", a / b }'; }
row() { printf '%-20s %10s %8s %10s %8s %8s %10s\n' "$@"; }

echo "SET -n $N -c $CLIENTS -P $PIPE -r $RANGE -d $SIZE; dfly --shards $SHARDS; $(nproc) cores; load: $(cut -d' ' -f1-3 /proc/loadavg)"
row mode redis_rps r_p99 dfly_rps d_p99 d/redis d/d_noaof
declare -A R D
for mode in no everysec always; do
	flags=(--appendonly no)
	[[ $mode != no ]] && flags=(--appendonly yes --appendfsync "$mode" --auto-aof-rewrite-percentage 0)
	bench redis "${flags[@]}"
	R[$mode]=$RPS rp=$P99
	bench dfly "${flags[@]}"
	D[$mode]=$RPS
	row "$mode" "${R[$mode]}" "$rp" "$RPS" "$P99" "$(ratio "$RPS" "${R[$mode]}")" "$(ratio "$RPS" "${D[no]}")"
done

# replay KIND -> SECS BYTES
replay() {
	local kind=$1 dir=$work/$1-replay
	rm -rf "$dir" && mkdir -p "$dir"
	start "$kind" "$dir" --appendonly yes --appendfsync no --auto-aof-rewrite-percentage 0
	redis-benchmark -p "$PORT" -t set -n "$REPLAY_N" -c 50 -P 32 -r $((REPLAY_N * 10)) -d "$SIZE" -q >/dev/null
	local keys
	keys=$(redis-cli -p "$PORT" dbsize)
	stop
	BYTES=$(cat "$dir"/appendonlydir/* | wc -c)
	start "$kind" "$dir" --appendonly yes --auto-aof-rewrite-percentage 0
	for _ in $(seq 60000); do
		[[ $(redis-cli -p "$PORT" dbsize 2>/dev/null) == "$keys" ]] && break
		sleep 0.01
	done
	SECS=$(awk -v a="$T0" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }')
	stop
	rm -rf "$dir"
}
replay redis
rs=$SECS rb=$BYTES
replay dfly
ds=$SECS db=$BYTES
per_gb() { awk -v s="$1" -v b="$2" 'BEGIN { printf "%.2f", s / (b / 1e9) }'; }
echo
printf '%-8s %12s %10s %10s\n' server aof_bytes replay_s s_per_GB
printf '%-8s %12s %10s %10s\n' redis "$rb" "$rs" "$(per_gb "$rs" "$rb")"
printf '%-8s %12s %10s %10s\n' dfly "$db" "$ds" "$(per_gb "$ds" "$db")"
echo "replay: dfly $(ratio "$(per_gb "$rs" "$rb")" "$(per_gb "$ds" "$db")")x redis's speed per GB (start-up included); load: $(cut -d' ' -f1-3 /proc/loadavg)"
