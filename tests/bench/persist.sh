#!/usr/bin/env bash
# Snapshot speed, dfly next to redis-server: SAVE and start-up load of the same dataset.
#   dataset: DEBUG POPULATE $KEYS key 100 (default 1000000), plus $BIG keys of 1 KiB (default 0);
#   save:    redis SAVE; dfly SAVE with --dbformat rdb and with --dbformat dfly (a file per shard);
#   load:    from process start until DBSIZE answers with every key loaded.
# dfly runs with $SHARDS shards (default 2). Prints seconds per row and the ratio redis/dfly,
# and the server's CPU seconds (user+system) for the save and the load: on a shared machine
# the wall clock depends on what else runs, the CPU time much less.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KEYS=${KEYS:-1000000}
BIG=${BIG:-0}
SHARDS=${SHARDS:-2}
want=$((KEYS + BIG))

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
dfly=$work/dfly
(cd "$here/../.." && go build -o "$dfly" ./cmd/dfly)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
# cpu PID: the process's user+system CPU seconds
cpu() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
minus() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a - b }'; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }

# start KIND DIR FORMAT -> PORT PID T0 (process start time)
start() {
	PORT=$(free_port)
	T0=$(now)
	if [[ $1 == redis ]]; then
		redis-server --port "$PORT" --save '' --appendonly no --enable-debug-command yes \
			--dir "$2" --dbfilename dump.rdb >"$2/redis.log" 2>&1 &
	else
		"$dfly" --port "$PORT" --shards "$SHARDS" --dir "$2" --dbformat "$3" >"$2/dfly.log" 2>&1 &
	fi
	PID=$!
	pids+=("$PID")
}
# wait_keys N: until DBSIZE = N
wait_keys() {
	for _ in $(seq 6000); do
		[[ $(redis-cli -p "$PORT" dbsize 2>/dev/null) == "$1" ]] && return
		sleep 0.01
	done
	echo "server on $PORT never reached $1 keys" >&2
	exit 1
}
stop() { redis-cli -p "$PORT" shutdown nosave >/dev/null 2>&1 || kill "$PID" 2>/dev/null || true; wait "$PID" 2>/dev/null || true; }

# run KIND FORMAT: fill, SAVE, restart and time the load. Sets SAVE_T LOAD_T SIZE.
run() {
	local dir=$work/$1-$2
	mkdir -p "$dir"
	start "$1" "$dir" "$2"
	wait_keys 0
	redis-cli -p "$PORT" debug populate "$KEYS" key 100 >/dev/null
	if [[ $BIG -gt 0 ]]; then redis-cli -p "$PORT" debug populate "$BIG" big 1024 >/dev/null; fi
	wait_keys "$want"
	local t0 c0
	c0=$(cpu "$PID")
	t0=$(now)
	[[ $(redis-cli -p "$PORT" save) == OK ]] || { echo "$1 $2: SAVE failed" >&2; exit 1; }
	SAVE_T=$(elapsed "$t0")
	SAVE_C=$(minus "$(cpu "$PID")" "$c0")
	SIZE=$(shopt -s nullglob; cat "$dir"/*.rdb "$dir"/*.dfs | wc -c)
	stop
	start "$1" "$dir" "$2"
	wait_keys "$want"
	LOAD_T=$(elapsed "$T0")
	LOAD_C=$(cpu "$PID")
	stop
	rm -rf "$dir"
}

echo "dataset: $KEYS keys of 100 B + $BIG keys of 1 KiB; dfly --shards $SHARDS; $(nproc) cores"
run redis rdb;  rs=$SAVE_T rl=$LOAD_T rz=$SIZE rsc=$SAVE_C rlc=$LOAD_C
run dfly rdb;   ds=$SAVE_T dl=$LOAD_T dz=$SIZE dsc=$SAVE_C dlc=$LOAD_C
run dfly dfly;  fs=$SAVE_T fl=$LOAD_T fz=$SIZE fsc=$SAVE_C flc=$LOAD_C
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
row() { printf '%-22s %8s %8s %12s %8s %8s %10s %10s\n' "$@"; }
row server save_s load_s bytes save_x load_x save_cpu_s load_cpu_s
row redis "$rs" "$rl" "$rz" 1.00 1.00 "$rsc" "$rlc"
row "dfly --dbformat rdb" "$ds" "$dl" "$dz" "$(ratio "$rs" "$ds")" "$(ratio "$rl" "$dl")" "$dsc" "$dlc"
row "dfly --dbformat dfly" "$fs" "$fl" "$fz" "$(ratio "$rs" "$fs")" "$(ratio "$rl" "$fl")" "$fsc" "$flc"
echo "save_x, load_x: redis time / dfly time (higher is faster than redis); load_cpu_s includes start-up"
