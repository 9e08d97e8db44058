#!/usr/bin/env bash
# What Prometheus costs the server (issue 47), dfly next to redis-server:
#  1. one scrape's server CPU at KEYS keys (DEBUG POPULATE) with 2 shards:
#     dfly's GET /metrics against redis's INFO ALL (what redis_exporter asks
#     per scrape), SCRAPES of them back to back, the process's utime+stime
#     (/proc/PID/stat) over them minus the same wall time idle;
#  2. SET and GET throughput (redis-benchmark -P PIPELINE, random keys)
#     with a scrape every second vs none, ROUNDS alternating rounds;
#  3. the same throughput with latency-tracking on vs off (CONFIG SET).
# The target is < 1% for 2 and 3. Ratios are with/without per server.
# Env: KEYS (1000000), SCRAPES (200), N (requests per run, 300000),
# CLIENTS (50), PIPELINE (16), ROUNDS (3), DFLY_BIN, DFLY_FLAGS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KEYS=${KEYS:-1000000}
SCRAPES=${SCRAPES:-200}
N=${N:-300000}
CLIENTS=${CLIENTS:-50}
PIPELINE=${PIPELINE:-16}
ROUNDS=${ROUNDS:-3}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
tck=$(getconf CLK_TCK)

# start NAME -> PORT, PID
start() {
	local -a cmd
	PORT=$(free_port)
	if [[ $1 == redis ]]; then
		cmd=(redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no --dir "$work")
	else
		# shellcheck disable=SC2206
		cmd=("$work/dfly" --port "$PORT" --bind 127.0.0.1 --dir "$work" --shards 2 --proactor_threads 2 ${DFLY_FLAGS:-})
	fi
	"${cmd[@]}" >"$work/$1.log" 2>&1 &
	PID=$!; pids+=("$PID")
	for _ in $(seq 100); do [[ $(redis-cli -p "$PORT" ping 2>/dev/null) == PONG ]] && return; sleep 0.05; done
	echo "metrics.sh: $1 did not start" >&2; exit 1
}

cpu_us() { awk -v t="$tck" '{ printf "%d", ($14 + $15) * 1e6 / t }' "/proc/$1/stat"; }
# scrape NAME PORT: what a Prometheus scrape asks of that server.
scrape() {
	if [[ $1 == redis ]]; then redis-cli -p "$2" info all >/dev/null; else curl -sf -o /dev/null "http://127.0.0.1:$2/metrics"; fi
}

# scrape_cost NAME PORT PID -> µs of server CPU per scrape
scrape_cost() {
	local c0 t0 c1 t1 c2
	c0=$(cpu_us "$3"); t0=$(date +%s%N)
	for _ in $(seq "$SCRAPES"); do scrape "$1" "$2"; done
	c1=$(cpu_us "$3"); t1=$(date +%s%N)
	sleep "$(awk -v d=$((t1 - t0)) 'BEGIN { printf "%.3f", d / 1e9 }')"
	c2=$(cpu_us "$3")
	awk -v a=$((c1 - c0)) -v idle=$((c2 - c1)) -v n="$SCRAPES" 'BEGIN { printf "%.0f", (a - idle) / n }'
}

# rps PORT TEST -> requests/s
rps() {
	redis-benchmark -p "$1" -t "$2" -n "$N" -c "$CLIENTS" -P "$PIPELINE" -r "$KEYS" 2>/dev/null | tr '\r' '\n' |
		awk '/throughput summary/ { print $3 }'
}

# scraper NAME PORT: a scrape every second until killed.
scraper() { while true; do scrape "$1" "$2" || true; sleep 1; done; }

echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
start redis; rport=$PORT; rpid=$PID
start dfly; dport=$PORT; dpid=$PID
for p in "$rport" "$dport"; do redis-cli -p "$p" debug populate "$KEYS" >/dev/null; done
sleep 1
echo "== one scrape's server CPU at $KEYS keys ($SCRAPES scrapes; redis: INFO ALL, dfly: GET /metrics)"
rc=$(scrape_cost redis "$rport" "$rpid"); dc=$(scrape_cost dfly "$dport" "$dpid")
printf "redis %8s us   dfly %8s us   (at one a second: %.3f%% of a core)\n" "$rc" "$dc" "$(awk -v d="$dc" 'BEGIN { print d / 1e4 }')"

# compare LABEL SETUP_ON SETUP_OFF: throughput with the thing on vs off,
# rounds alternating; prints the medians' ratio per server and test.
compare() {
	local label=$1 on=$2 off=$3
	echo "== $label"
	printf "%-6s %-4s %12s %12s %8s\n" server test on off on/off
	for s in redis dfly; do
		local port=$rport; [[ $s == dfly ]] && port=$dport
		for t in set get; do
			local ons=() offs=()
			for r in $(seq "$ROUNDS"); do # alternating which goes first
				if ((r % 2)); then
					$on "$s" "$port"; ons+=("$(rps "$port" "$t")"); $off "$s" "$port"; offs+=("$(rps "$port" "$t")")
				else
					offs+=("$(rps "$port" "$t")"); $on "$s" "$port"; ons+=("$(rps "$port" "$t")"); $off "$s" "$port"
				fi
			done
			printf "%s\n" "${ons[@]}" | sort -n >"$work/on"; printf "%s\n" "${offs[@]}" | sort -n >"$work/off"
			local mon moff
			mon=$(awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' "$work/on")
			moff=$(awk '{ a[NR] = $1 } END { print a[int((NR + 1) / 2)] }' "$work/off")
			printf "%-6s %-4s %12s %12s %8.3f\n" "$s" "$t" "$mon" "$moff" "$(awk -v a="$mon" -v b="$moff" 'BEGIN { print a / b }')"
		done
	done
}
scraping_on() { scraper "$1" "$2" & SCRAPER=$!; }
scraping_off() { kill "${SCRAPER:-}" 2>/dev/null || true; wait "${SCRAPER:-}" 2>/dev/null || true; }
compare "SET/GET with a scrape every second (on) vs none (off), -P $PIPELINE" scraping_on scraping_off
tracking_on() { redis-cli -p "$2" config set latency-tracking yes >/dev/null; }
tracking_off() { redis-cli -p "$2" config set latency-tracking no >/dev/null; }
compare "SET/GET with latency-tracking on vs off, -P $PIPELINE" tracking_on tracking_off
echo "load average: $(cut -d' ' -f1-3 /proc/loadavg)"
