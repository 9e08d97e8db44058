#!/usr/bin/env bash
# Two dfly builds side by side (before/after a change), alternating run by
# run on the same machine at the same time, so that the load of other jobs
# falls on both alike. For each workload it prints, per build and round:
#   ops/s        throughput (the noisiest figure on a shared machine);
#   us/op        the server's CPU time per request or transaction
#                (utime+stime of the process over the run / operations);
#   allocs/op    heap allocations per operation (runtime MemStats.Mallocs
#                through /debug/pprof, DFLY_PPROF): deterministic, so a
#                change in it is never noise.
# Workloads: redis-benchmark SET and GET at -P 1 and 16, and txbench -raw
# MULTI/EXEC and EVAL at -P 1 and 8. Server on SERVER_CPU, client on
# CLIENT_CPU.
# Usage: tests/bench/ab.sh /tmp/dfly-before /tmp/dfly-after
# Env: ROUNDS (default 3), N (redis-benchmark requests, default 500000),
# DUR (txbench seconds, default 3), DFLY_FLAGS (extra flags for both),
# TXBENCH_ARGS (more txbench flags, e.g. "-place same": a transaction's keys
# under one hash tag), WORKLOADS (default "SET:1 SET:16 GET:1 GET:16 multi:1
# multi:8 eval:1 eval:8").
set -euo pipefail
(($# == 2)) || { echo "usage: $0 DFLY_BIN_A DFLY_BIN_B" >&2; exit 2; }
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-3}
N=${N:-500000}
DUR=${DUR:-3}
SERVER_CPU=${SERVER_CPU:-0}
CLIENT_CPU=${CLIENT_CPU:-1}
TCK=$(getconf CLK_TCK)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
for tool in redis-benchmark redis-cli curl taskset python3; do
	command -v "$tool" >/dev/null || { echo "ab.sh: $tool not found" >&2; exit 1; }
done
(cd "$here/../.." && go build -o "$work/txbench" ./tests/bench/txbench)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
declare -A port pprof pid
for b in A B; do
	bin=$1; shift
	port[$b]=$(free_port); pprof[$b]=$(free_port)
	# shellcheck disable=SC2086 # DFLY_FLAGS is split on purpose
	DFLY_PPROF=127.0.0.1:${pprof[$b]} taskset -c "$SERVER_CPU" "$bin" --port "${port[$b]}" \
		--bind 127.0.0.1 --dir "$work" ${DFLY_FLAGS:-} >"$work/$b.log" 2>&1 &
	pid[$b]=$!; pids+=("${pid[$b]}")
	for _ in $(seq 100); do
		[[ $(redis-cli -p "${port[$b]}" ping 2>/dev/null) == PONG ]] && break
		sleep 0.05
	done
	echo "$b: $bin (port ${port[$b]})"
done

cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
mallocs() { curl -s "http://127.0.0.1:$1/debug/pprof/heap?debug=1" | awk '$2 == "Mallocs" { print $4 }'; }

# run B WORKLOAD P: prints "ops/s us/op allocs/op" for one run on build B.
run() {
	local b=$1 w=$2 p=$3 rate ops c0 c1 m0 m1
	c0=$(cpu_ticks "${pid[$b]}"); m0=$(mallocs "${pprof[$b]}")
	case $w in
	SET | GET)
		rate=$(taskset -c "$CLIENT_CPU" redis-benchmark -p "${port[$b]}" -q --csv -t "$w" -n "$N" -c 50 -P "$p" |
			awk -F, 'NR > 1 { gsub(/"/, "", $2); print $2 }')
		ops=$N ;;
	*)
		# shellcheck disable=SC2086 # TXBENCH_ARGS is split on purpose
		rate=$(taskset -c "$CLIENT_CPU" "$work/txbench" -raw -P "$p" -t "$w" -d "${DUR}s" ${TXBENCH_ARGS:-} \
			-addr "127.0.0.1:${port[$b]}" | awk '{ print $2 }')
		ops=$((${rate%.*} * DUR)) ;;
	esac
	c1=$(cpu_ticks "${pid[$b]}"); m1=$(mallocs "${pprof[$b]}")
	awk -v rate="$rate" -v ops="$ops" -v c="$((c1 - c0))" -v m="$((m1 - m0))" -v tck="$TCK" \
		'BEGIN { printf "%.0f %.2f %.2f", rate, c / tck * 1e6 / ops, m / ops }'
}

printf "%-6s %3s %5s %3s %12s %8s %10s\n" work P round b ops/s us/op allocs/op
for spec in ${WORKLOADS:-SET:1 SET:16 GET:1 GET:16 multi:1 multi:8 eval:1 eval:8}; do
	w=${spec%:*} p=${spec#*:}
	for r in $(seq "$ROUNDS"); do
		for b in A B; do
			read -r ops us allocs <<<"$(run "$b" "$w" "$p")"
			printf "%-6s %3s %5s %3s %12s %8s %10s\n" "$w" "$p" "$r" "$b" "$ops" "$us" "$allocs"
		done
	done
done
