#!/usr/bin/env bash
# EVAL throughput of dfly next to redis-server: a script that INCRs two keys,
# measured with redis-benchmark, alternating between the servers.
#   tests/bench/scripting.sh                 # N=100000, 50 clients
#   N=200000 ROUNDS=3 DFLY_FLAGS="--shards 2" tests/bench/scripting.sh
set -euo pipefail

N=${N:-100000}
CLIENTS=${CLIENTS:-50}
ROUNDS=${ROUNDS:-1}
DFLY_FLAGS=${DFLY_FLAGS:-}
DFLY_BIN=${DFLY_BIN:-}
REDIS_SERVER=${REDIS_SERVER:-redis-server}
SCRIPT="redis.call('incr',KEYS[1]); return redis.call('incr',KEYS[2])"

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d -t dfly-bench-eval.XXXXXX)
pids=()
cleanup() {
	local pid
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
die() { echo "scripting.sh: $*" >&2; exit 1; }

for tool in "$REDIS_SERVER" redis-cli redis-benchmark awk; do
	command -v "$tool" >/dev/null || die "$tool not found"
done
if [[ -z $DFLY_BIN ]]; then
	(cd "$root" && go build -o "$work/dfly" ./cmd/dfly) || die "go build ./cmd/dfly failed"
	DFLY_BIN=$work/dfly
fi

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_ready() {
	for _ in $(seq 100); do
		redis-cli -p "$1" ping >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	die "server on port $1 did not start"
}

dport=$(free_port)
# shellcheck disable=SC2086
"$DFLY_BIN" --port "$dport" --bind 127.0.0.1 --dir "$work" $DFLY_FLAGS >"$work/dfly.log" 2>&1 &
pids+=($!)
rport=$(free_port)
"$REDIS_SERVER" --port "$rport" --bind 127.0.0.1 --save '' --appendonly no --dir "$work" >"$work/redis.log" 2>&1 &
pids+=($!)
wait_ready "$dport"
wait_ready "$rport"

# Keys with a hash tag would share a shard; these two usually do not.
bench() {
	redis-benchmark -p "$1" -q --csv -n "$N" -c "$CLIENTS" eval "$SCRIPT" 2 k1 k2 2>/dev/null |
		awk -F'","' 'NR>0 && $2 ~ /^[0-9.]+$/ {print $2; exit}'
}

best_d=0 best_r=0
for _ in $(seq "$ROUNDS"); do
	d=$(bench "$dport"); r=$(bench "$rport")
	best_d=$(awk -v a="$best_d" -v b="$d" 'BEGIN{print (b>a)?b:a}')
	best_r=$(awk -v a="$best_r" -v b="$r" 'BEGIN{print (b>a)?b:a}')
done
[[ $(redis-cli -p "$dport" get k1) == $(redis-cli -p "$dport" get k2) ]] || die "dfly: k1 and k2 differ"
printf '%-28s %14s %14s %8s\n' "EVAL incr 2 keys" "dfly req/s" "redis req/s" "ratio"
awk -v d="$best_d" -v r="$best_r" -v n="$N" -v c="$CLIENTS" \
	'BEGIN{printf "%-28s %14.0f %14.0f %7.2fx\n", "n=" n " c=" c, d, r, (r>0)?d/r:0}'
