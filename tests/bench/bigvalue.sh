#!/usr/bin/env bash
# Receiving large values: SET of 1, 16, 64 and 256 MB values, dfly next to
# redis-server. Each SET runs on a fresh server (bigset: the value sent in
# one write, timed to the reply); per size and server it prints the seconds,
# the server's CPU seconds, its peak RSS (VmHWM) and its RSS after, and the
# ratios dfly/redis. A last row plays a slow client: it declares a 512 MB
# value, sends SLOW_SENT of it in 1 MB pieces and stops, and gives each
# server's RSS growth while the connection stays open (target: about the
# bytes sent, as Redis). Targets (issue 37): time and peak RSS grow linearly
# with the size.
#
#   tests/bench/bigvalue.sh                    # about a minute
#   ROUNDS=3 SIZES="64mb 256mb" tests/bench/bigvalue.sh
#   DFLY_BIN=/tmp/dfly-main tests/bench/bigvalue.sh
set -euo pipefail

SIZES=${SIZES:-1mb 16mb 64mb 256mb}
ROUNDS=${ROUNDS:-1}          # runs per size and server, alternating; the fastest counts
SLOW_SENT=${SLOW_SENT:-64mb} # the slow client's bytes ("" skips the row)
DFLY_BIN=${DFLY_BIN:-}
DFLY_FLAGS=${DFLY_FLAGS:-}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
REDIS_FLAGS=${REDIS_FLAGS:-}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d -t dfly-bigvalue.XXXXXX)
pids=()

cleanup() {
	local pid
	for pid in "${pids[@]}"; do
		kill "$pid" 2>/dev/null || true
	done
	for pid in "${pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

die() { echo "bigvalue.sh: $*" >&2; exit 1; }

for tool in redis-cli "$REDIS_SERVER" awk; do
	command -v "$tool" >/dev/null || die "$tool not found"
done

echo "building..." >&2
(cd "$root" && go build -o "$work/bigset" ./tests/bench/bigset) || die "go build ./tests/bench/bigset failed"
if [[ -z $DFLY_BIN ]]; then
	(cd "$root" && go build -o "$work/dfly" ./cmd/dfly) || die "go build ./cmd/dfly failed"
	DFLY_BIN=$work/dfly
fi

free_port() {
	local port
	for _ in $(seq 100); do
		port=$((20000 + RANDOM % 20000))
		if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
			echo "$port"
			return
		fi
	done
	die "no free port found"
}

# start dfly|redis: a fresh server; sets PORT and PID.
start() {
	local port log
	port=$(free_port)
	log=$work/$1.$port.log
	if [[ $1 == dfly ]]; then
		# shellcheck disable=SC2086 # DFLY_FLAGS is split on purpose
		"$DFLY_BIN" --port "$port" --bind 127.0.0.1 --dir "$work" $DFLY_FLAGS >"$log" 2>&1 &
	else
		# shellcheck disable=SC2086
		"$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --dir "$work" --save '' --appendonly no $REDIS_FLAGS >"$log" 2>&1 &
	fi
	PID=$!
	PORT=$port
	pids+=("$PID")
	for _ in $(seq 200); do
		[[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]] && return
		kill -0 "$PID" 2>/dev/null || { cat "$log" >&2; die "$1 exited at startup"; }
		sleep 0.05
	done
	die "$1 did not answer PING within 10 s"
}

stop() { kill "$1" 2>/dev/null || true; wait "$1" 2>/dev/null || true; }

status_mb() { awk -v k="$2:" '$1 == k { printf "%.0f", $2 / 1024 }' "/proc/$1/status"; }
cpu_s() { awk -v hz="$(getconf CLK_TCK)" '{ printf "%.2f", ($14 + $15) / hz }' "/proc/$1/stat"; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2fx", a / b; else print "-" }'; }

declare -A secs cpu peak after
for size in $SIZES; do
	for ((r = 0; r < ROUNDS; r++)); do
		for srv in dfly redis; do
			start "$srv"
			t=$("$work/bigset" -addr "127.0.0.1:$PORT" -size "$size") || die "$srv: SET of $size failed"
			c=$(cpu_s "$PID")
			k=$srv.$size
			if [[ -z ${secs[$k]:-} ]] || awk -v a="$t" -v b="${secs[$k]}" 'BEGIN { exit !(a < b) }'; then
				secs[$k]=$t cpu[$k]=$c peak[$k]=$(status_mb "$PID" VmHWM) after[$k]=$(status_mb "$PID" VmRSS)
			fi
			stop "$PID"
		done
	done
done

printf '%-8s %9s %9s %7s %8s %8s %7s %10s %10s %7s %9s %9s\n' size dfly_s redis_s ratio dfly_cpu redis_cpu ratio \
	dfly_peak redis_peak ratio dfly_rss redis_rss
for size in $SIZES; do
	d=dfly.$size x=redis.$size
	printf '%-8s %9s %9s %7s %8s %8s %7s %8sMB %8sMB %7s %7sMB %7sMB\n' "$size" \
		"${secs[$d]}" "${secs[$x]}" "$(ratio "${secs[$d]}" "${secs[$x]}")" \
		"${cpu[$d]}" "${cpu[$x]}" "$(ratio "${cpu[$d]}" "${cpu[$x]}")" \
		"${peak[$d]}" "${peak[$x]}" "$(ratio "${peak[$d]}" "${peak[$x]}")" \
		"${after[$d]}" "${after[$x]}"
done

if [[ -n $SLOW_SENT ]]; then
	echo
	printf '%-34s %10s %10s %10s\n' "slow client, $SLOW_SENT of 512mb sent" rss_before rss_held growth
	for srv in dfly redis; do
		start "$srv"
		before=$(status_mb "$PID" VmRSS)
		out=$work/slow.$srv
		"$work/bigset" -addr "127.0.0.1:$PORT" -declare 512mb -size "$SLOW_SENT" -piece 1mb -hold 3s >"$out" &
		client=$!
		pids+=("$client")
		for _ in $(seq 600); do
			[[ -s $out ]] && break
			sleep 0.1
		done
		[[ -s $out ]] || die "$srv: the slow client did not finish sending"
		sleep 0.5
		held=$(status_mb "$PID" VmRSS)
		printf '%-34s %8sMB %8sMB %8sMB\n' "$srv" "$before" "$held" "$((held - before))"
		wait "$client" || true
		stop "$PID"
	done
fi
