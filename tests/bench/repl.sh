#!/usr/bin/env bash
# Full sync under write load (issue 8's figures), three pairs:
#   - dfly>redis: a real redis-server replica of a dfly master (PSYNC, one RDB stream),
#   - dfly>dfly: a dfly replica of a dfly master (per-shard flows, tagged snapshot + journal),
#   - redis>redis: redis-server on both sides (diskless sync, no delay: its fastest full sync),
# each holding KEYS keys (DEBUG POPULATE KEYS key SIZE) while redis-benchmark SETs
# random keys of the same space. Printed per master:
#   up_s      time from starting the replica to its master_link_status:up
#   equal_s   time from the end of the load until the replica's digest equals the
#             master's (repldigest): "eq", or "DIFF" after 60 s
#   rps/p99   SET throughput and p99 (ms) during the sync, and in a run without one
# and the ratios of up_s: dfly>dfly / redis>redis and dfly>redis / redis>redis.
# Env: KEYS (default 1000000), SIZE (default 100), N (requests during the sync,
# default 600000), CLIENTS (50), PAIRS (default "dfly:redis dfly:dfly redis:redis"),
# DFLY_BIN (a dfly binary to run instead of a fresh build of ./cmd/dfly).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KEYS=${KEYS:-1000000}
SIZE=${SIZE:-100}
N=${N:-600000}
CLIENTS=${CLIENTS:-50}
PAIRS=${PAIRS:-dfly:redis dfly:dfly redis:redis}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/repldigest" ./tests/bench/repldigest)
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.1; done; echo "repl.sh: port $1 did not start" >&2; exit 1; }
field() { redis-cli -p "$1" info "$2" | tr -d '\r' | awk -F: -v k="$3" '$1 == k { print $2 }'; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
rps() { awk -F, 'NR > 1 { gsub(/"/, "", $2); print $2 }'; }
p99() { awk -F, 'NR > 1 { gsub(/"/, "", $7); print $7 }'; }

printf '%-11s %8s %9s %6s %10s %9s %10s %9s\n' pair up_s equal_s digest rps_base p99_base rps_sync p99_sync
declare -A up
for pair in $PAIRS; do
	master=${pair%%:*} replica=${pair##*:}
	MPORT=$(free_port)
	mkdir -p "$work/m-$pair" "$work/r-$pair"
	if [[ $master == redis ]]; then
		redis-server --port "$MPORT" --save '' --appendonly no --enable-debug-command yes \
			--repl-diskless-sync yes --repl-diskless-sync-delay 0 --dir "$work/m-$pair" >/dev/null 2>&1 &
	else
		"$work/dfly" --port "$MPORT" --dir "$work/m-$pair" >"$work/dfly-$master.log" 2>&1 &
	fi
	pids+=($!)
	wait_up "$MPORT"
	redis-cli -p "$MPORT" debug populate "$KEYS" key "$SIZE" >/dev/null
	redis-benchmark -p "$MPORT" -q --csv -t set -r "$KEYS" -d "$SIZE" -n "$N" -c "$CLIENTS" >"$work/base.csv"
	redis-benchmark -p "$MPORT" -q --csv -t set -r "$KEYS" -d "$SIZE" -n "$N" -c "$CLIENTS" >"$work/load.csv" &
	bench=$!
	sleep 0.5
	RPORT=$(free_port)
	t0=$(now)
	if [[ $replica == redis ]]; then
		redis-server --port "$RPORT" --save '' --appendonly no --dir "$work/r-$pair" \
			--replicaof 127.0.0.1 "$MPORT" >"$work/replica.log" 2>&1 &
		pids+=($!)
	else
		"$work/dfly" --port "$RPORT" --dir "$work/r-$pair" >"$work/replica.log" 2>&1 &
		pids+=($!)
		wait_up "$RPORT"
		redis-cli -p "$RPORT" replicaof 127.0.0.1 "$MPORT" >/dev/null
	fi
	until [[ $(field "$RPORT" replication master_link_status 2>/dev/null) == up ]]; do sleep 0.05; done
	up[$pair]=$(since "$t0")
	wait "$bench"
	t1=$(now)
	same=DIFF
	for _ in $(seq 600); do
		dm=$("$work/repldigest" -addr "127.0.0.1:$MPORT")
		dr=$("$work/repldigest" -addr "127.0.0.1:$RPORT")
		if [[ $dm == "$dr" ]]; then same=eq; break; fi
		sleep 0.1
	done
	eq=$(since "$t1")
	printf '%-11s %8s %9s %6s %10s %9s %10s %9s\n' "${master}>${replica}" "${up[$pair]}" "$eq" "$same" \
		"$(rps <"$work/base.csv")" "$(p99 <"$work/base.csv")" "$(rps <"$work/load.csv")" "$(p99 <"$work/load.csv")"
	[[ $same == eq ]] || echo "  master $dm / replica $dr"
	redis-cli -p "$RPORT" shutdown nosave >/dev/null 2>&1 || true
	redis-cli -p "$MPORT" shutdown nosave >/dev/null 2>&1 || true
	sleep 0.5
done
[[ -n ${up[redis:redis]:-} && -n ${up[dfly:dfly]:-} && -n ${up[dfly:redis]:-} ]] || exit 0
awk -v a="${up[dfly:dfly]}" -v c="${up[dfly:redis]}" -v b="${up[redis:redis]}" \
	'BEGIN { printf "full sync to link up: dfly>dfly / redis>redis %.2fx, dfly>redis / redis>redis %.2fx\n", a / b, c / b }'
