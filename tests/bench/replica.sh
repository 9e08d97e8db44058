#!/usr/bin/env bash
# Full sync into a replica, dfly next to redis-server, under write load.
#   master:  redis-server (diskless sync, no delay) holding DEBUG POPULATE $KEYS key 100
#            (default 1000000) plus $LOADKEYS strings the load writes;
#   load:    redis-benchmark -t set -r $LOADKEYS -d 100 -c $CLIENTS on the master, from
#            REPLICAOF until the replica's link is up;
#   up:      seconds from REPLICAOF until INFO says master_link_status:up;
#   caught:  seconds from REPLICAOF until, with the load stopped, the replica's
#            slave_repl_offset equals the master's master_repl_offset;
#   then both sides are digested (every key, value and expiry: repldigest) and must be equal.
# Replicas alternate dfly / redis-server, fresh processes each round ($ROUNDS, default 2).
# Prints seconds per round and the ratio redis/dfly of the means (> 1: dfly is faster).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KEYS=${KEYS:-1000000}
LOADKEYS=${LOADKEYS:-100000}
CLIENTS=${CLIENTS:-8}
ROUNDS=${ROUNDS:-2}
SHARDS=${SHARDS:-}

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly && go build -o "$work/repldigest" ./tests/bench/repldigest)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.3f", b - a }'; }
field() { redis-cli -p "$1" info replication | tr -d '\r' | awk -F: -v k="$2" '$1 == k { print $2 }'; }
wait_pong() { for _ in $(seq 500); do redis-cli -p "$1" ping 2>/dev/null | grep -q PONG && return; sleep 0.02; done; echo "no PONG on $1" >&2; exit 1; }

MPORT=$(free_port)
mkdir -p "$work/master"
redis-server --port "$MPORT" --save '' --appendonly no --enable-debug-command yes --dir "$work/master" \
	--repl-diskless-sync yes --repl-diskless-sync-delay 0 --repl-backlog-size 256mb \
	>"$work/master/redis.log" 2>&1 &
pids+=($!)
wait_pong "$MPORT"
redis-cli -p "$MPORT" debug populate "$KEYS" key 100 >/dev/null
# Create the load's keys first, so every round starts from the same dataset size.
redis-benchmark -p "$MPORT" -t set -r "$LOADKEYS" -d 100 -n $((LOADKEYS * 3)) -c 20 -P 16 -q >/dev/null
echo "master: $(redis-cli -p "$MPORT" dbsize) keys; load: SET -r $LOADKEYS -d 100 -c $CLIENTS"

declare -A sum_up sum_caught
run() {
	local kind=$1 port dir
	port=$(free_port)
	dir="$work/$kind-$port"
	mkdir -p "$dir"
	if [[ $kind == redis ]]; then
		redis-server --port "$port" --save '' --appendonly no --dir "$dir" >"$dir/log" 2>&1 &
	else
		"$work/dfly" --port "$port" --dir "$dir" ${SHARDS:+--shards $SHARDS} >"$dir/log" 2>&1 &
	fi
	local rpid=$!
	pids+=("$rpid")
	wait_pong "$port"
	redis-benchmark -p "$MPORT" -t set -r "$LOADKEYS" -d 100 -n 1000000000 -c "$CLIENTS" -q >/dev/null 2>&1 &
	local lpid=$!
	pids+=("$lpid")
	sleep 0.5
	local t0 up caught
	t0=$(now)
	redis-cli -p "$port" replicaof 127.0.0.1 "$MPORT" >/dev/null
	until [[ $(field "$port" master_link_status) == up ]]; do sleep 0.02; done
	up=$(since "$t0")
	kill "$lpid" 2>/dev/null || true
	wait "$lpid" 2>/dev/null || true
	until [[ $(field "$MPORT" master_repl_offset) == $(field "$port" slave_repl_offset) ]]; do sleep 0.02; done
	caught=$(since "$t0")
	local dm dr
	dm=$("$work/repldigest" -addr "127.0.0.1:$MPORT")
	dr=$("$work/repldigest" -addr "127.0.0.1:$port")
	if [[ $dm != "$dr" ]]; then
		echo "$kind: DIGESTS DIFFER: master $dm, replica $dr" >&2
		tail -20 "$dir/log" >&2
		exit 1
	fi
	printf "%-6s up %7ss  caught %7ss  digest %s (equal)\n" "$kind" "$up" "$caught" "$dm"
	sum_up[$kind]=$(awk -v a="${sum_up[$kind]:-0}" -v b="$up" 'BEGIN { print a + b }')
	sum_caught[$kind]=$(awk -v a="${sum_caught[$kind]:-0}" -v b="$caught" 'BEGIN { print a + b }')
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || kill "$rpid" 2>/dev/null || true
	wait "$rpid" 2>/dev/null || true
}

for r in $(seq "$ROUNDS"); do
	if ((r % 2)); then run dfly; run redis; else run redis; run dfly; fi
done
awk -v ud="${sum_up[dfly]}" -v ur="${sum_up[redis]}" -v cd="${sum_caught[dfly]}" -v cr="${sum_caught[redis]}" -v n="$ROUNDS" 'BEGIN {
	printf "mean over %d rounds:   dfly up %.3fs caught %.3fs | redis up %.3fs caught %.3fs\n", n, ud/n, cd/n, ur/n, cr/n
	printf "ratio redis/dfly:      up %.2fx   caught %.2fx   (> 1: dfly faster)\n", ur/ud, cr/cd
}'
