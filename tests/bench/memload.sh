#!/usr/bin/env bash
# Resident memory at rest and under a mixed write load, dfly next to
# redis-server: memload (tests/bench/memload) loads SMALL keys of 16-byte
# values, BIG keys of 1 KiB values and 2,000 accounts, then runs DUR of
# SETs (same sizes), GETs and MULTI transfers while sampling RSS. Prints
# bytes per key at rest, at the load's peak and after it, and RSS as a
# multiple of the data (keys and values).
# Env: SMALL (default 1000000), BIG (default 300000), DUR (default 60s),
# CLIENTS (8), P (8), DFLY_BIN, DFLY_FLAGS, REDIS_FLAGS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
SMALL=${SMALL:-1000000}
BIG=${BIG:-300000}
DUR=${DUR:-60s}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/memload" ./tests/bench/memload)
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

printf "%-6s %9s %12s %9s %9s %9s %7s %7s %7s %10s %9s\n" server keys data_MB rest_B/k max_B/k after_B/k rest/d max/d after/d ops/s cpu_us/op
for server in redis dfly; do
	port=$(free_port)
	if [[ $server == redis ]]; then
		# shellcheck disable=SC2086
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" ${REDIS_FLAGS:-} >"$work/redis.log" 2>&1 &
	else
		# shellcheck disable=SC2086
		"$work/dfly" --port "$port" --bind 127.0.0.1 --dir "$work" ${DFLY_FLAGS:-} >"$work/dfly.log" 2>&1 &
	fi
	pid=$!; pids+=("$pid")
	for _ in $(seq 100); do [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]] && break; sleep 0.05; done
	read -r keys data rest max after ops cpu < <("$work/memload" -addr "127.0.0.1:$port" -pid "$pid" \
		-small "$SMALL" -big "$BIG" -dur "$DUR" -clients "${CLIENTS:-8}" -P "${P:-8}")
	awk -v s="$server" -v k="$keys" -v d="$data" -v r="$rest" -v m="$max" -v a="$after" -v o="$ops" -v c="$cpu" -v dur="${DUR%s}" \
		'BEGIN { printf "%-6s %9d %12.1f %9.1f %9.1f %9.1f %6.2fx %6.2fx %6.2fx %10.0f %8.2f\n", s, k, d/1e6, r/k, m/k, a/k, r/d, m/d, a/d, o/dur, c }'
	kill "$pid"; wait "$pid" 2>/dev/null || true
done
