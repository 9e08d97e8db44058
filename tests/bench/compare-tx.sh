#!/usr/bin/env bash
# MULTI/EXEC of two SETs and an EVAL that INCRs two keys (keys random over a
# large space, so usually on different shards), dfly next to redis-server:
#   1. pinned: each server on CPU 0, the client (txbench) on CPU 1 -> ratio per core;
#   2. dfly unpinned with --shards 1 and --shards 2 -> does throughput grow with shards.
# Env: DUR (seconds per run, default 3), CLIENTS (default 50).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DUR=${DUR:-3}
CLIENTS=${CLIENTS:-50}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly && go build -o "$work/txbench" ./tests/bench/txbench)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # start PIN NAME [flags...] -> PORT PID
	local pin=$1 name=$2; shift 2
	PORT=$(free_port)
	local -a cmd
	if [[ $name == redis ]]; then cmd=(redis-server --port "$PORT" --save '' --appendonly no --dir "$work")
	else cmd=("$work/dfly" --port "$PORT" --dir "$work" "$@"); fi
	[[ $pin == 1 ]] && cmd=(taskset -c 0 "${cmd[@]}")
	"${cmd[@]}" >/dev/null 2>&1 &
	PID=$!
	pids+=("$PID")
	for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && return; sleep 0.1; done
	echo "compare-tx.sh: $name did not start" >&2; exit 1
}
run() { # run PIN PORT -> "multi N\neval N"
	local -a cmd=("$work/txbench" -addr "127.0.0.1:$2" -c "$CLIENTS" -d "${DUR}s")
	[[ $1 == 1 ]] && cmd=(taskset -c 1 "${cmd[@]}")
	"${cmd[@]}"
}

start 1 redis; rp=$PORT
start 1 dfly; dp=$PORT
declare -A r d
for round in 1 2; do
	while read -r t n; do [[ ${r[$t]:-0} -lt $n ]] && r[$t]=$n; done < <(run 1 "$rp")
	while read -r t n; do [[ ${d[$t]:-0} -lt $n ]] && d[$t]=$n; done < <(run 1 "$dp")
done
echo "Pinned (server CPU 0, client CPU 1), best of 2, ops/s"
printf "%-6s %10s %10s %7s %7s\n" test redis dfly ratio target
for t in multi eval; do
	awk -v t="$t" -v a="${r[$t]}" -v b="${d[$t]}" 'BEGIN { x = b / a; printf "%-6s %10d %10d %6.2fx %6.1fx%s\n", t, a, b, x, 0.7, (x < 0.7 ? "  BELOW" : "") }'
done

declare -A s1 s2
start 0 dfly --shards 1; p1=$PORT
start 0 dfly --shards 2; p2=$PORT
while read -r t n; do s1[$t]=$n; done < <(run 0 "$p1")
while read -r t n; do s2[$t]=$n; done < <(run 0 "$p2")
echo
echo "dfly unpinned, ops/s by shard count"
printf "%-6s %10s %10s %7s\n" test shards=1 shards=2 growth
for t in multi eval; do
	awk -v t="$t" -v a="${s1[$t]}" -v b="${s2[$t]}" 'BEGIN { printf "%-6s %10d %10d %6.2fx\n", t, a, b, b / a }'
done
