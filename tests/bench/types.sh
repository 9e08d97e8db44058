#!/usr/bin/env bash
# Data-type throughput and memory, dfly next to redis-server.
#   throughput: LPUSH LPOP HSET SADD ZADD (redis-benchmark -t) plus ZRANGE and XADD as
#               custom commands, through compare.sh (pinned and unpinned, as ratios);
#   memory:     bytes per element of a 1M-member hash, set and zset (used_memory delta),
#               loaded with redis-cli --pipe on fresh servers.
# Env: N (requests, default 200000), MEMBERS (default 1000000), SKIP_THROUGHPUT=1, SKIP_MEMORY=1.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
MEMBERS=${MEMBERS:-1000000}

if [[ -z ${SKIP_THROUGHPUT:-} ]]; then
	zset=""
	for i in $(seq 1 100); do zset+=" $i m$i"; done
	TESTS=lpush,lpop,hset,sadd,zadd \
		COMMANDS="ZRANGE=zrange bench:z 0 9;XADD=xadd bench:s * f v" \
		SETUP="zadd bench:z$zset" \
		POPULATE=0 PIPELINES="${PIPELINES:-1 16}" "$here/compare.sh"
fi

[[ -n ${SKIP_MEMORY:-} ]] && exit 0

work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
dfly=$work/dfly
(cd "$here/../.." && go build -o "$dfly" ./cmd/dfly)

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() { # start NAME -> PORT PID
	PORT=$(free_port)
	if [[ $1 == redis ]]; then
		redis-server --port "$PORT" --save '' --appendonly no --dir "$work" >/dev/null 2>&1 &
	else
		"$dfly" --port "$PORT" --dir "$work" >/dev/null 2>&1 &
	fi
	PID=$!
	pids+=("$PID")
	for _ in $(seq 100); do redis-cli -p "$PORT" ping >/dev/null 2>&1 && return; sleep 0.1; done
	echo "types.sh: $1 did not start" >&2; exit 1
}
used() { redis-cli -p "$1" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'; }

# gen TYPE: RESP commands adding MEMBERS members to one key, 1000 per command.
gen() {
	awk -v type="$1" -v n="$MEMBERS" 'BEGIN {
		for (i = 0; i < n; i += 1000) {
			m = (n - i < 1000) ? n - i : 1000
			if (type == "hash") { printf "*%d\r\n$4\r\nHSET\r\n$6\r\nbigkey\r\n", 2 + 2 * m }
			if (type == "set")  { printf "*%d\r\n$4\r\nSADD\r\n$6\r\nbigkey\r\n", 2 + m }
			if (type == "zset") { printf "*%d\r\n$4\r\nZADD\r\n$6\r\nbigkey\r\n", 2 + 2 * m }
			for (j = i; j < i + m; j++) {
				f = "member:" j
				if (type == "zset") { s = j * 7 % 1000003; printf "$%d\r\n%s\r\n", length(s), s }
				printf "$%d\r\n%s\r\n", length(f), f
				if (type == "hash") { v = "value:" j; printf "$%d\r\n%s\r\n", length(v), v }
			}
		}
	}'
}

echo
echo "Memory per element, $MEMBERS members in one key (used_memory delta)"
printf "%-5s %12s %12s %8s\n" type redis dfly ratio
for type in hash set zset; do
	gen "$type" >"$work/$type.resp"
	declare -A per
	for server in redis dfly; do
		start "$server"
		before=$(used "$PORT")
		redis-cli -p "$PORT" --pipe <"$work/$type.resp" >/dev/null
		redis-cli -p "$PORT" debug gc >/dev/null 2>&1 || true # dfly: live data, not garbage
		after=$(used "$PORT")
		per[$server]=$(awk -v a="$after" -v b="$before" -v n="$MEMBERS" 'BEGIN { printf "%.1f", (a - b) / n }')
		kill "$PID"; wait "$PID" 2>/dev/null || true
	done
	awk -v t="$type" -v r="${per[redis]}" -v d="${per[dfly]}" 'BEGIN { printf "%-5s %12s %12s %7.2fx%s\n", t, r, d, d / r, (d / r > 1.5 ? "  ABOVE 1.5x" : "") }'
done
