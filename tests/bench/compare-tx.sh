#!/usr/bin/env bash
# MULTI/EXEC of two SETs and an EVAL that INCRs two keys (keys random over a
# large space, so usually on different shards), dfly next to redis-server:
#   1. pinned: each server on CPU 0, the client (txbench) on CPU 1 -> ratio per core;
#   2. dfly with --shards 1 and --shards 2 (2 event loops each) -> does
#      throughput grow with shards;
#   3. dfly with --proactor_threads 1 and 2 (threads = shards = 1, 2), with
#      growth_cpu, a capacity model: (threads2/us_2)/(threads1/us_1), the
#      growth if each thread had a core to itself and the client none.
# Each row is measured with the go-redis client (the stated comparison) and
# with txbench -raw, a lean client (pre-encoded RESP, -P transactions in
# flight per connection) whose own CPU bounds the figure less. Besides
# ops/s, each row gives the server's CPU time per transaction (utime+stime
# of the server process over the run, divided by the transactions): on a
# shared machine that figure is steadier than throughput, and
# redis_us/dfly_us is the per-core ratio the server would reach if it had
# its core to itself.
# Env: DUR (seconds per run, default 3), CLIENTS (default 50), ROUNDS
# (default 2; the best run of each row counts), RAW_P (default "1 8"),
# DFLY_BIN (a prebuilt dfly instead of building this tree's).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
DUR=${DUR:-3}
CLIENTS=${CLIENTS:-50}
ROUNDS=${ROUNDS:-2}
RAW_P=${RAW_P:-1 8}
TCK=$(getconf CLK_TCK)
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/txbench" ./tests/bench/txbench)
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi

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
ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }
# run CLIENTPIN PORT PID TEST MODE -> "OPS_PER_S CPU_US_PER_OP"; MODE is
# "goredis" or "rawN" (txbench -raw -P N).
run() {
	local -a cmd=("$work/txbench" -addr "127.0.0.1:$2" -c "$CLIENTS" -d "${DUR}s" -t "$4")
	[[ $5 == raw* ]] && cmd+=(-raw -P "${5#raw}")
	[[ $1 == 1 ]] && cmd=(taskset -c 1 "${cmd[@]}")
	local t0 t1 out
	t0=$(ticks "$3")
	out=$("${cmd[@]}")
	t1=$(ticks "$3")
	awk -v n="${out#* }" -v d="$DUR" -v c=$((t1 - t0)) -v hz="$TCK" 'BEGIN { printf "%d %.2f\n", n, c / hz * 1e6 / (n * d) }'
}
modes=(goredis)
for p in $RAW_P; do modes+=("raw$p"); done
label() { [[ $1 == goredis ]] && echo "go-redis" || echo "raw -P ${1#raw}"; }

# best KEY OPS US: keep the highest ops/s and the lowest CPU per op.
declare -A ops us
best() {
	[[ ${ops[$1]:-0} -lt $2 ]] && ops[$1]=$2
	if [[ -z ${us[$1]:-} ]] || awk -v a="$3" -v b="${us[$1]}" 'BEGIN { exit !(a < b) }'; then us[$1]=$3; fi
}

# measure CLIENTPIN KEY_A PORT_A PID_A KEY_B PORT_B PID_B: every client mode
# and test once against server A then B (alternating), keeping the best of
# each under "KEY,mode,test".
measure() {
	local m t n c
	for m in "${modes[@]}"; do
		for t in multi eval; do
			read -r n c < <(run "$1" "$3" "$4" "$t" "$m"); best "$2,$m,$t" "$n" "$c"
			read -r n c < <(run "$1" "$6" "$7" "$t" "$m"); best "$5,$m,$t" "$n" "$c"
		done
	done
}

# rows A B KIND [COLUMN]: a row per client mode and test comparing the runs
# kept under A and B (ops/s, CPU us per transaction): b/a, then the CPU
# column: ua/ub, or for KIND threads (2/ub)/(1/ua), the growth model of
# threads = shards. KIND ratio marks rows below the 0.7x target. COLUMN,
# when given, is printed before the figures.
rows() {
	local a=$1 b=$2 kind=$3 col=${4-} m t
	for m in "${modes[@]}"; do
		for t in multi eval; do
			awk -v t="$t" -v m="$(label "$m")" -v col="$col" -v kind="$kind" \
				-v a="${ops[$a,$m,$t]}" -v b="${ops[$b,$m,$t]}" -v ua="${us[$a,$m,$t]}" -v ub="${us[$b,$m,$t]}" \
				'BEGIN {
					x = b / a
					c = kind == "threads" ? (2 / ub) / (1 / ua) : ua / ub
					printf "%-6s %-10s ", t, m
					if (col != "") printf "%-11s ", col
					printf "%9d %9d %6.2fx %8.2f %8.2f %10.2fx%s\n", a, b, x, ua, ub, c, (kind == "ratio" && x < 0.7 ? "  BELOW 0.7x" : "")
				}'
		done
	done
}

start 1 redis; rp=$PORT; rpid=$PID
start 1 dfly; dp=$PORT; dpid=$PID
for round in $(seq "$ROUNDS"); do
	measure 1 r "$rp" "$rpid" d "$dp" "$dpid"
done
echo "Pinned (server CPU 0, client CPU 1), best of $ROUNDS; ops/s, server CPU us per transaction"
printf "%-6s %-10s %9s %9s %7s %8s %8s %11s\n" test client redis dfly ratio redis_us dfly_us cpu_ratio
rows r d ratio

kill "$rpid" "$dpid" 2>/dev/null || true
start 0 dfly --shards 1; p1=$PORT; pid1=$PID
start 0 dfly --shards 2; p2=$PORT; pid2=$PID
# Client placements: unpinned (client and server share both cores), and
# the client pinned to CPU 1 with the server unpinned.
for round in $(seq "$ROUNDS"); do
	for cpin in 0 1; do
		measure "$cpin" "1,$cpin" "$p1" "$pid1" "2,$cpin" "$p2" "$pid2"
	done
done
echo
echo "dfly unpinned, 2 threads (event loops), by shard count, best of $ROUNDS; ops/s, server CPU us per transaction"
echo "growth_cpu is a MODEL, not a measurement: (2/us_2)/(2/us_1), both runs having 2 threads"
printf "%-6s %-10s %-11s %9s %9s %7s %8s %8s %11s\n" test client "client cpu" shards=1 shards=2 growth us_1 us_2 growth_cpu
rows 1,0 2,0 growth any
rows 1,1 2,1 growth "CPU 1"

kill "$pid1" "$pid2" 2>/dev/null || true
start 0 dfly --proactor_threads 1; p1=$PORT; pid1=$PID
start 0 dfly --proactor_threads 2; p2=$PORT; pid2=$PID
for round in $(seq "$ROUNDS"); do
	measure 0 t1 "$p1" "$pid1" t2 "$p2" "$pid2"
done
echo
echo "dfly unpinned, threads = shards (--proactor_threads 1 vs 2), client anywhere, best of $ROUNDS; ops/s, server CPU us per transaction"
echo "growth_cpu is a MODEL, not a measurement: (2/us_2)/(1/us_1), the growth if each thread had a core to itself"
printf "%-6s %-10s %9s %9s %7s %8s %8s %11s\n" test client threads=1 threads=2 growth us_1 us_2 growth_cpu
rows t1 t2 threads
