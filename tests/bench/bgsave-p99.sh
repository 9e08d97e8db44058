#!/usr/bin/env bash
# Write p99 with and without a BGSAVE, without memory sampling (bgsave.sh reads
# /proc/PID/smaps_rollup every 20 ms, which itself moves the idle p99).
# Usage: tests/bench/bgsave-p99.sh [BIN|redis ...]   (default: a fresh build of ./cmd/dfly, then redis)
# For each server: DEBUG POPULATE $KEYS key $SIZE, then $ROUNDS times a SET run without a save
# and one with a BGSAVE started 0.2 s in; prints p99 and rps of both and the save's duration.
# Env: KEYS (1000000), SIZE (1024), N (200000 requests per run), ROUNDS (2), FLAGS (more dfly flags),
# R (the load's key range, default 100000) and PREFILL (SETs of that range first, default
# 500000: the load overwrites; see bgsave.sh).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KEYS=${KEYS:-1000000}
SIZE=${SIZE:-1024}
N=${N:-200000}
ROUNDS=${ROUNDS:-2}
R=${R:-100000}
PREFILL=${PREFILL:-500000}
work=$(mktemp -d)
pid=
cleanup() { [[ -n $pid ]] && kill "$pid" 2>/dev/null; rm -rf "$work"; }
trap cleanup EXIT
bins=("$@")
if [[ ${#bins[@]} -eq 0 ]]; then
	(cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly)
	bins=("$work/dfly" redis)
fi
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
field() { sed -n 2p "$1" | awk -F, -v i="$2" '{ gsub(/"/, ""); print $i }'; }
for b in "${bins[@]}"; do
	rm -rf "$work/data" && mkdir -p "$work/data"
	if [[ $b == redis ]]; then
		redis-server --port "$port" --save '' --appendonly no --enable-debug-command yes --dir "$work/data" >/dev/null 2>&1 &
	else
		# shellcheck disable=SC2086
		"$b" --port "$port" --dir "$work/data" ${FLAGS:-} >/dev/null 2>&1 &
	fi
	pid=$!
	for _ in $(seq 100); do redis-cli -p "$port" ping >/dev/null 2>&1 && break; sleep 0.1; done
	redis-cli -p "$port" debug populate "$KEYS" key "$SIZE" >/dev/null
	if ((PREFILL > 0)); then
		redis-benchmark -p "$port" -q -t set -r "$R" -d "$SIZE" -n "$PREFILL" -c 50 -P 16 >/dev/null
	fi
	line="$(basename "$b"):"
	for _ in $(seq "$ROUNDS"); do
		redis-benchmark -p "$port" -q --csv -t set -r "$R" -d "$SIZE" -n "$N" -c 50 >"$work/base.csv"
		redis-benchmark -p "$port" -q --csv -t set -r "$R" -d "$SIZE" -n "$N" -c 50 >"$work/save.csv" &
		bench=$!
		sleep 0.2
		t0=$(date +%s.%N)
		redis-cli -p "$port" bgsave >/dev/null
		while redis-cli -p "$port" info persistence | grep -q 'rdb_bgsave_in_progress:1'; do sleep 0.05; done
		t1=$(date +%s.%N)
		wait "$bench"
		pb=$(field "$work/base.csv" 7) ps=$(field "$work/save.csv" 7)
		line+=$(awk -v pb="$pb" -v ps="$ps" -v rb="$(field "$work/base.csv" 2)" -v rs="$(field "$work/save.csv" 2)" -v t0="$t0" -v t1="$t1" \
			'BEGIN { printf " | p99 %s -> %s ms (%.2fx), rps %d -> %d, save %.1f s", pb, ps, ps / pb, rb, rs, t1 - t0 }')
	done
	[[ $b != redis ]] && line+=" | max stall $(redis-cli -p "$port" info persistence | tr -d '\r' | awk -F: '$1 ~ /snapshot_max_stall_usec|snapshot_parked|snapshot_congested|snapshot_copied|snapshot_max_stall_wall/ { printf "%s=%s ", $1, $2 }') us"
	echo "$line"
	redis-cli -p "$port" shutdown nosave >/dev/null 2>&1 || true
	wait "$pid" 2>/dev/null || true
	pid=
done
