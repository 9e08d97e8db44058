#!/usr/bin/env bash
# Eviction as a cache, dfly next to redis-server (issue 41): for each
# Zipf skew in SKEWS, the evict driver (tests/bench/evict) runs a
# GET/SET-on-miss workload over KEYS keys of VALUE-byte values against a
# fresh server whose maxmemory leaves room for about a fifth of them
# (ROOM_MB over what the empty server uses, the same for both), with each
# policy: redis-server's allkeys-lru and allkeys-lfu, dfly's allkeys-lru,
# allkeys-lfu and allkeys-tinylfu. Then, without maxmemory, the same
# workload (nothing evicted: throughput without eviction, bytes per key).
# Prints hit ratio, requests (GETs and SETs) per second and bytes per key
# (used_memory / DBSIZE after the run).
# Env: KEYS (100000), VALUE (200), ROOM_MB (6), SKEWS ("0.7 0.9 1.1"),
# WARM (300000), GETS (400000), CLIENTS (4), P (32), DFLY_BIN, DFLY_FLAGS.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KEYS=${KEYS:-100000}
VALUE=${VALUE:-200}
ROOM_MB=${ROOM_MB:-6}
SKEWS=${SKEWS:-0.7 0.9 1.1}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/evict" ./tests/bench/evict)
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# run SERVER POLICY SKEW: one fresh server, one run; POLICY "off": no maxmemory.
run() {
	local server=$1 policy=$2 s=$3 port pid used
	port=$(free_port)
	if [[ $server == redis ]]; then
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
	else
		# shellcheck disable=SC2086
		"$work/dfly" --port "$port" --bind 127.0.0.1 --dir "$work" ${DFLY_FLAGS:-} >"$work/dfly.log" 2>&1 &
	fi
	pid=$!; pids+=("$pid")
	for _ in $(seq 100); do [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]] && break; sleep 0.05; done
	if [[ $policy != off ]]; then
		used=$(redis-cli -p "$port" info memory | tr -d '\r' | awk -F: '$1=="used_memory"{print $2}')
		redis-cli -p "$port" config set maxmemory $((used + ROOM_MB * 1048576)) >/dev/null
		redis-cli -p "$port" config set maxmemory-policy "$policy" >/dev/null
	fi
	read -r gets hits sets secs mem keys < <("$work/evict" -addr "127.0.0.1:$port" -keys "$KEYS" -value "$VALUE" \
		-skew "$s" -warm "${WARM:-300000}" -gets "${GETS:-400000}" -clients "${CLIENTS:-4}" -P "${P:-32}")
	awk -v srv="$server" -v p="$policy" -v s="$s" -v g="$gets" -v h="$hits" -v st="$sets" -v t="$secs" -v m="$mem" -v k="$keys" \
		'BEGIN { printf "%-5s %-6s %-16s %7.2f%% %10.0f %9d %8.0f\n", s, srv, p, 100*h/g, (g+st)/t, k, m/k }'
	kill "$pid"; wait "$pid" 2>/dev/null || true
}

echo "load: $(uptime | sed 's/.*load average: //')"
printf "%-5s %-6s %-16s %8s %10s %9s %8s\n" skew server policy hit req/s keys B/key
for s in $SKEWS; do
	for p in allkeys-lru allkeys-lfu; do run redis $p "$s"; done
	for p in allkeys-lru allkeys-lfu allkeys-tinylfu; do run dfly $p "$s"; done
	run redis off "$s"
	run dfly off "$s"
done
echo "load: $(uptime | sed 's/.*load average: //')"
