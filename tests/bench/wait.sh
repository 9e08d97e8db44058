#!/usr/bin/env bash
# WAIT latency: what a client waits for its write to reach a replica. One
# connection sends SET then WAIT 1 1000, N times, one request in flight
# (waitlat), against a master with one replica, for three pairs:
#   dfly>dfly (flows), dfly>redis (a redis-server replica of dfly), redis>redis.
# Prints each pair's mean and p99 SET+WAIT round trip (ms) and the ratios to
# redis>redis. Env: N (default 2000), ROUNDS (default 1: every pair once per
# round, alternating), DFLY_BIN (a dfly binary instead of a fresh build).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N=${N:-2000}
ROUNDS=${ROUNDS:-1}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/waitlat" ./tests/bench/waitlat)
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.1; done; echo "wait.sh: port $1 did not start" >&2; exit 1; }
start() { # start KIND PORT DIR
	if [[ $1 == redis ]]; then
		redis-server --port "$2" --save '' --appendonly no --dir "$3" >"$3.log" 2>&1 &
	else
		"$work/dfly" --port "$2" --dir "$3" >"$3.log" 2>&1 &
	fi
	pids+=("$!")
	wait_up "$2"
}
declare -A mean p99
printf '%-12s %9s %9s\n' pair mean_ms p99_ms
for round in $(seq "$ROUNDS"); do
	for pair in dfly:dfly dfly:redis redis:redis; do
		m=${pair%%:*} r=${pair##*:}
		mp=$(free_port) rp=$(free_port)
		mkdir -p "$work/$round-$pair-m" "$work/$round-$pair-r"
		start "$m" "$mp" "$work/$round-$pair-m"
		start "$r" "$rp" "$work/$round-$pair-r"
		redis-cli -p "$rp" replicaof 127.0.0.1 "$mp" >/dev/null
		for _ in $(seq 300); do
			redis-cli -p "$rp" info replication | grep -q '^master_link_status:up' && break
			sleep 0.1
		done
		sleep 0.5 # the master sees the replica online
		read -r a b < <("$work/waitlat" -addr "127.0.0.1:$mp" -n "$N")
		printf '%-12s %9s %9s\n' "${m}>${r}" "$a" "$b"
		mean[$pair]+=" $a" p99[$pair]+=" $b"
		redis-cli -p "$rp" shutdown nosave >/dev/null 2>&1 || true
		redis-cli -p "$mp" shutdown nosave >/dev/null 2>&1 || true
	done
done
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.3f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
# shellcheck disable=SC2086
for pair in dfly:dfly dfly:redis; do
	echo "${pair/:/>} / redis>redis, median of rounds: mean $(awk -v a="$(median ${mean[$pair]})" -v b="$(median ${mean[redis:redis]})" 'BEGIN { printf "%.2f", a / b }')x, p99 $(awk -v a="$(median ${p99[$pair]})" -v b="$(median ${p99[redis:redis]})" 'BEGIN { printf "%.2f", a / b }')x"
done
