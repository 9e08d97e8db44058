#!/usr/bin/env bash
# Latency percentiles of SET and GET, dfly next to redis-server in one run:
# redis-benchmark, CLIENTS connections, with and without pipelining, pinned
# (each server on SERVER_CPU, the benchmark on CLIENT_CPU) and unpinned,
# ROUNDS alternating runs per row (the run with the lowest p99 counts for
# each server). p50, p99 and p99.9 come from redis-benchmark's "latency by
# percentile" table (the first bucket at or above each), in ms; ratio is
# dfly / redis (at most 1.0 is issue 40's target for p99).
# Env: N (requests per run, default 200000), CLIENTS (50), PIPELINES ("1 16"),
# TESTS ("set get"), ROUNDS (3), DFLY_BIN, DFLY_FLAGS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N=${N:-200000}
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-1 16}
TESTS=${TESTS:-set get}
ROUNDS=${ROUNDS:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start NAME PIN -> PORT, PID
start() {
	local -a cmd
	PORT=$(free_port)
	if [[ $1 == redis ]]; then
		cmd=(redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$work")
	else
		# shellcheck disable=SC2206
		cmd=("$work/dfly" --port "$PORT" --bind 127.0.0.1 --dir "$work" ${DFLY_FLAGS:-})
	fi
	[[ $2 == 1 ]] && cmd=(taskset -c "$SERVER_CPU" "${cmd[@]}")
	"${cmd[@]}" >"$work/$1.log" 2>&1 &
	PID=$!; pids+=("$PID")
	for _ in $(seq 100); do [[ $(redis-cli -p "$PORT" ping 2>/dev/null) == PONG ]] && return; sleep 0.05; done
	echo "latency.sh: $1 did not start" >&2; exit 1
}

# bench PORT TEST P PIN -> "p50 p99 p99.9 rps"
bench() {
	local -a cmd=(redis-benchmark -p "$1" -t "$2" -n "$N" -c "$CLIENTS" -P "$3" -r 100000)
	[[ $4 == 1 ]] && cmd=(taskset -c "$CLIENT_CPU" "${cmd[@]}")
	"${cmd[@]}" 2>/dev/null | tr '\r' '\n' | awk '
		/Latency by percentile distribution/ { on = 1; next }
		on && /%/ { p = $1; sub("%", "", p); v = $3
			if (!have50 && p >= 50) { p50 = v; have50 = 1 }
			if (!have99 && p >= 99) { p99 = v; have99 = 1 }
			if (!have999 && p >= 99.9) { p999 = v; have999 = 1 } }
		on && /^$/ { on = 0 }
		/throughput summary/ { rps = $3 }
		END { print p50, p99, p999, rps }'
}

printf "%-9s %3s %-4s %-6s %8s %8s %8s %10s\n" mode -P test server p50 p99 p99.9 rps
for pin in 1 0; do
	mode=unpinned; [[ $pin == 1 ]] && mode=pinned
	start redis "$pin"; rport=$PORT
	start dfly "$pin"; dport=$PORT
	for p in $PIPELINES; do
		for t in $TESTS; do
			declare -A best=()
			for _ in $(seq "$ROUNDS"); do
				for s in redis dfly; do
					port=$rport; [[ $s == dfly ]] && port=$dport
					line=$(bench "$port" "$t" "$p" "$pin")
					read -r _ p99 _ _ <<<"$line"
					read -r _ b99 _ _ <<<"${best[$s]:-x 1e9 x x}"
					awk -v a="$p99" -v b="$b99" 'BEGIN { exit !(a < b) }' && best[$s]=$line
				done
			done
			for s in redis dfly; do
				read -r a b c d <<<"${best[$s]}"
				printf "%-9s %3s %-4s %-6s %8s %8s %8s %10s\n" "$mode" "$p" "$t" "$s" "$a" "$b" "$c" "$d"
			done
			read -r _ r99 _ _ <<<"${best[redis]}"; read -r _ d99 _ _ <<<"${best[dfly]}"
			awk -v d="$d99" -v r="$r99" 'BEGIN { printf "%-9s %3s %-4s p99 dfly/redis %.2fx\n", "", "", "", d / r }'
		done
	done
	kill "${pids[@]}" 2>/dev/null || true; wait 2>/dev/null || true; pids=()
done
