#!/usr/bin/env bash
# The contended-transaction workload of issue 40 (tests/bench/bank): 2,000
# accounts, 8 clients transferring between random accounts (MULTI, or one
# EVAL) while 2 readers sum every account in one MULTI of 20 MGETs of 100
# keys; redis-server next to dfly at 1 and 2 shards, unpinned, default
# flags otherwise. Prints transfers/s and reads/s and their ratios to
# Redis's; every reader's sum is checked (a torn read fails the run).
# Env: DUR (default 10s), ROUNDS (default 1; the best counts), DFLY_BIN.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DUR=${DUR:-10s}
ROUNDS=${ROUNDS:-1}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/bank" ./tests/bench/bank)
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

declare -A port
port[redis]=$(free_port)
redis-server --port "${port[redis]}" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
for n in 1 2; do
	port[dfly$n]=$(free_port)
	"$work/dfly" --port "${port[dfly$n]}" --bind 127.0.0.1 --dir "$work" --shards "$n" >"$work/dfly$n.log" 2>&1 &
	pids+=($!)
done
for s in redis dfly1 dfly2; do
	for _ in $(seq 100); do [[ $(redis-cli -p "${port[$s]}" ping 2>/dev/null) == PONG ]] && break; sleep 0.05; done
done

printf "%-6s %-7s %12s %9s %9s %9s\n" mode server transfers/s reads/s xfer_ratio read_ratio
for mode in multi eval; do
	declare -A best_t=() best_r=()
	for r in $(seq "$ROUNDS"); do
		for s in redis dfly1 dfly2; do
			read -r t rd torn < <("$work/bank" -addr "127.0.0.1:${port[$s]}" -mode "$mode" -dur "$DUR")
			((torn == 0)) || { echo "bank.sh: $s $mode: $torn torn reads" >&2; exit 1; }
			awk -v a="$t" -v b="${best_t[$s]:-0}" 'BEGIN { exit !(a > b) }' && best_t[$s]=$t
			awk -v a="$rd" -v b="${best_r[$s]:-0}" 'BEGIN { exit !(a > b) }' && best_r[$s]=$rd
		done
	done
	for s in redis dfly1 dfly2; do
		awk -v m="$mode" -v s="$s" -v t="${best_t[$s]}" -v r="${best_r[$s]}" -v rt="${best_t[redis]}" -v rr="${best_r[redis]}" \
			'BEGIN { printf "%-6s %-7s %12.0f %9.1f %8.2fx %8.2fx\n", m, s, t, r, t/rt, r/rr }'
	done
done
