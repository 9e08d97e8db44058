#!/usr/bin/env bash
# Committed read-modify-writes per second on 10 hot keys with 50 clients
# (issue 42, tests/bench/txnloop): Redis's WATCH/MULTI/EXEC retry loop on
# redis-server and on dfly, and dfly's TXN IF VERSION loop, side by side,
# the servers alternating within each round. Every run checks that each
# key ends equal to its commits (a lost update fails it). Prints the best
# round's commits/s and retries/s and the ratio to redis-server's WATCH
# loop. Env: DUR (default 10s), ROUNDS (default 3), KEYS (10), CLIENTS
# (50), SHARDS (dfly's, default 2), DFLY_BIN.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
KEYS=${KEYS:-10}
CLIENTS=${CLIENTS:-50}
SHARDS=${SHARDS:-2}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/txnloop" ./tests/bench/txnloop)
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

declare -A port
port[redis]=$(free_port)
redis-server --port "${port[redis]}" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
port[dfly]=$(free_port)
"$work/dfly" --port "${port[dfly]}" --bind 127.0.0.1 --dir "$work" --shards "$SHARDS" >"$work/dfly.log" 2>&1 &
pids+=($!)
for s in redis dfly; do
	for _ in $(seq 100); do [[ $(redis-cli -p "${port[$s]}" ping 2>/dev/null) == PONG ]] && break; sleep 0.05; done
done

runs=("redis watch" "dfly watch" "dfly txn")
declare -A best_c=() best_r=()
for r in $(seq "$ROUNDS"); do
	for run in "${runs[@]}"; do
		read -r s mode <<<"$run"
		read -r c rt < <("$work/txnloop" -addr "127.0.0.1:${port[$s]}" -mode "$mode" -keys "$KEYS" -clients "$CLIENTS" -dur "$DUR")
		echo "round $r: $s $mode: $c commits/s, $rt retries/s" >&2
		if awk -v a="$c" -v b="${best_c[$run]:-0}" 'BEGIN { exit !(a > b) }'; then best_c[$run]=$c best_r[$run]=$rt; fi
	done
done
printf "%-6s %-6s %10s %10s %9s\n" server loop commits/s retries/s vs_redis
for run in "${runs[@]}"; do
	read -r s mode <<<"$run"
	awk -v s="$s" -v m="$mode" -v c="${best_c[$run]}" -v rt="${best_r[$run]}" -v base="${best_c[redis watch]}" \
		'BEGIN { printf "%-6s %-6s %10.0f %10.0f %8.2fx\n", s, m, c, rt, c/base }'
done
