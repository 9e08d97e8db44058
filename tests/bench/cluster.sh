#!/usr/bin/env bash
# Cluster mode's figures (issue 44), two comparisons, alternating the sides
# round by round so the load of other jobs falls on both alike:
#   1. emulated vs standalone: one dfly with --cluster_mode=emulated next to a
#      plain one, redis-benchmark SET and GET at -P 1 and -P 16 over RANGE
#      random keys (the slot check's cost; target: within 5%);
#   2. three dfly nodes (--cluster_mode=yes, DFLYCLUSTER CONFIG, one loop
#      each) vs three redis-server cluster nodes (redis-cli --cluster
#      create), driven by redis-benchmark --cluster at -P 16 (target: dfly >=
#      Redis).
# Prints requests/s per side and round and the ratio of the best rounds.
# Env: N (requests per run, default 200000), ROUNDS (2), CLIENTS (50),
# RANGE (100000), DFLY_BIN (a prebuilt dfly; default: a fresh build).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
N=${N:-200000}
ROUNDS=${ROUNDS:-2}
CLIENTS=${CLIENTS:-50}
RANGE=${RANGE:-100000}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
for tool in redis-server redis-cli redis-benchmark python3; do
	command -v "$tool" >/dev/null || { echo "cluster.sh: $tool not found" >&2; exit 1; }
done
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
# free_port: a free port below 55535 (a Redis Cluster node's bus port is its port + 10000).
free_port() {
	python3 -c '
import random, socket
while True:
    p = random.randint(20000, 55000)
    try:
        for q in (p, p + 10000):
            s = socket.socket(); s.bind(("127.0.0.1", q)); s.close()
        print(p); break
    except OSError:
        pass'
}
wait_up() { for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.1; done; echo "cluster.sh: port $1 did not start" >&2; tail -n 3 "$work"/*.log >&2; exit 1; }
# bench PORT TEST P [--cluster] -> requests/s
bench() { redis-benchmark -p "$1" -q --csv -t "$2" -n "$N" -c "$CLIENTS" -P "$3" -r "$RANGE" ${4:-} | awk -F'"' -v t="$2" '$2 == toupper(t) { print $4 }'; }
best() { tr ' ' '\n' | sort -g | tail -1; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }

echo "# 1. emulated vs standalone (one dfly each, every core)"
declare -A port
for side in standalone emulated; do
	port[$side]=$(free_port)
	flags=()
	[[ $side == emulated ]] && flags=(--cluster_mode emulated)
	"$work/dfly" --port "${port[$side]}" --bind 127.0.0.1 --dir "$work" "${flags[@]}" >"$work/$side.log" 2>&1 &
	pids+=($!)
	wait_up "${port[$side]}"
done
printf '%-6s %3s %-10s %s\n' test P side "requests/s by round"
for t in set get; do
	for p in 1 16; do
		declare -A runs=([standalone]="" [emulated]="")
		for _ in $(seq "$ROUNDS"); do
			for side in standalone emulated; do runs[$side]+="$(bench "${port[$side]}" "$t" "$p") "; done
		done
		for side in standalone emulated; do printf '%-6s %3s %-10s %s\n' "$t" "$p" "$side" "${runs[$side]}"; done
		printf '%-6s %3s %-10s %s\n' "$t" "$p" "ratio" "$(ratio "$(echo "${runs[emulated]}" | best)" "$(echo "${runs[standalone]}" | best)") (emulated / standalone, best rounds)"
	done
done

echo "# 2. three dfly nodes vs three redis-server cluster nodes (redis-benchmark --cluster -P 16)"
dports=() rports=() ids=()
for i in 0 1 2; do
	p=$(free_port); dports+=("$p"); ids+=("node$i")
	"$work/dfly" --port "$p" --bind 127.0.0.1 --dir "$work" --cluster_mode yes --cluster_node_id "node$i" --proactor_threads 1 >"$work/d$i.log" 2>&1 &
	pids+=($!)
	p=$(free_port); rports+=("$p"); mkdir -p "$work/r$i"
	redis-server --port "$p" --bind 127.0.0.1 --dir "$work/r$i" --save '' --appendonly no --cluster-enabled yes >"$work/r$i.log" 2>&1 &
	pids+=($!)
done
for i in 0 1 2; do wait_up "${dports[$i]}"; wait_up "${rports[$i]}"; done
doc=$(python3 - "${dports[@]}" <<'PY'
import json, sys
ports = [int(p) for p in sys.argv[1:]]
ranges = [(0, 5460), (5461, 10922), (10923, 16383)]
print(json.dumps([{"slot_ranges": [{"start": s, "end": e}], "master": {"id": "node%d" % i, "ip": "127.0.0.1", "port": ports[i]}, "replicas": []}
                  for i, (s, e) in enumerate(ranges)]))
PY
)
for p in "${dports[@]}"; do redis-cli -p "$p" dflycluster config "$doc" >/dev/null; done
redis-cli --cluster create "127.0.0.1:${rports[0]}" "127.0.0.1:${rports[1]}" "127.0.0.1:${rports[2]}" --cluster-replicas 0 --cluster-yes >/dev/null
for p in "${rports[@]}"; do
	for _ in $(seq 200); do
		redis-cli -p "$p" cluster info | grep -q cluster_state:ok && break
		sleep 0.1
	done
done
sleep 1 # the nodes' gossip settles the epochs
printf '%-6s %3s %-10s %s\n' test P side "requests/s by round"
for t in set get; do
	declare -A runs=([dfly]="" [redis]="")
	for _ in $(seq "$ROUNDS"); do
		runs[dfly]+="$(bench "${dports[0]}" "$t" 16 --cluster) "
		runs[redis]+="$(bench "${rports[0]}" "$t" 16 --cluster) "
	done
	for side in dfly redis; do printf '%-6s %3s %-10s %s\n' "$t" 16 "$side" "${runs[$side]}"; done
	printf '%-6s %3s %-10s %s\n' "$t" 16 "ratio" "$(ratio "$(echo "${runs[dfly]}" | best)" "$(echo "${runs[redis]}" | best)") (dfly / redis, best rounds)"
done
echo "# load average: $(cut -d' ' -f1-3 /proc/loadavg)"
