#!/usr/bin/env bash
# Lock grants per second (issue 42, tests/bench/lockbench): 50 clients,
# 1,000 lock names, acquire + release round trips; redis-server with SET
# NX PX + the compare-and-delete script next to dfly's LOCK.ACQUIRE /
# LOCK.RELEASE (and dfly running the SET NX path too), alternating rounds
# in one run. Env: DUR (default 10s), ROUNDS (default 3), SHARDS (dfly's,
# default 2), DFLY_BIN.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-3}
SHARDS=${SHARDS:-2}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/lockbench" ./tests/bench/lockbench)
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
rp=$(free_port)
dp=$(free_port)
redis-server --port "$rp" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
"$work/dfly" --port "$dp" --bind 127.0.0.1 --dir "$work" --shards "$SHARDS" >"$work/dfly.log" 2>&1 &
pids+=($!)
for p in "$rp" "$dp"; do
	for _ in $(seq 100); do [[ $(redis-cli -p "$p" ping 2>/dev/null) == PONG ]] && break; sleep 0.05; done
done
printf "%-5s %-20s %10s %10s\n" round server grants/s misses/s
for r in $(seq "$ROUNDS"); do
	read -r g m < <("$work/lockbench" -addr "127.0.0.1:$rp" -mode setnx -dur "$DUR")
	printf "%-5s %-20s %10s %10s\n" "$r" "redis SET NX PX" "$g" "$m"
	read -r g m < <("$work/lockbench" -addr "127.0.0.1:$dp" -mode dfly -dur "$DUR")
	printf "%-5s %-20s %10s %10s\n" "$r" "dfly LOCK.*" "$g" "$m"
	read -r g m < <("$work/lockbench" -addr "127.0.0.1:$dp" -mode setnx -dur "$DUR")
	printf "%-5s %-20s %10s %10s\n" "$r" "dfly SET NX PX" "$g" "$m"
done
