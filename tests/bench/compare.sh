#!/usr/bin/env bash
# Side-by-side GET/SET throughput and memory per key of dfly and redis-server.
# Usage and targets: tests/bench/README.md.
set -euo pipefail

N=${N:-200000}                          # requests per redis-benchmark run
CLIENTS=${CLIENTS:-50}
PIPELINES=${PIPELINES:-"1 16"}
TESTS=${TESTS:-set,get}
ROUNDS=${ROUNDS:-1}                     # runs per row and server; the best counts
POPULATE=${POPULATE:-1000000}           # keys for the memory comparison; 0 skips it
DFLY_FLAGS=${DFLY_FLAGS:-}              # extra dfly flags, e.g. "--shards 2"
REDIS_FLAGS=${REDIS_FLAGS:-}            # extra redis-server flags
COMMANDS=${COMMANDS:-}                  # custom commands, "NAME=cmd args;..."
SETUP=${SETUP:-}                        # commands run once on each server before a phase, "cmd args;..."
BENCH_ARGS=${BENCH_ARGS:-}              # extra redis-benchmark flags, e.g. "-r 1000000"
DFLY_BIN=${DFLY_BIN:-}                  # prebuilt dfly (or a stand-in); built when empty
REDIS_SERVER=${REDIS_SERVER:-redis-server}
SERVER_CPU=${SERVER_CPU:-0}             # cores for the pinned phase
CLIENT_CPU=${CLIENT_CPU:-1}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
root=$(cd "$here/../.." && pwd)
work=$(mktemp -d -t dfly-bench.XXXXXX)
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

die() { echo "compare.sh: $*" >&2; exit 1; }

for tool in "$REDIS_SERVER" redis-cli redis-benchmark taskset awk; do
	command -v "$tool" >/dev/null || die "$tool not found"
done

if [[ -z $DFLY_BIN ]]; then
	echo "building dfly..." >&2
	(cd "$root" && go build -o "$work/dfly" ./cmd/dfly) || die "go build ./cmd/dfly failed"
	DFLY_BIN=$work/dfly
fi
[[ -x $DFLY_BIN ]] || die "DFLY_BIN=$DFLY_BIN is not executable"

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

# start NAME PIN: starts a server (pinned to SERVER_CPU when PIN=1) and sets
# PORT and PID. Exits the script if it does not answer PING within 10 s.
start() {
	local name=$1 pin=$2 port log
	port=$(free_port)
	log=$work/$name.$port.log
	local -a cmd
	if [[ $name == dfly ]]; then
		# shellcheck disable=SC2206 # DFLY_FLAGS is split on purpose
		cmd=("$DFLY_BIN" --port "$port" --bind 127.0.0.1 --dir "$work" $DFLY_FLAGS)
	else
		# shellcheck disable=SC2206
		cmd=("$REDIS_SERVER" --port "$port" --bind 127.0.0.1 --dir "$work" --save '' --appendonly no
			--enable-debug-command local $REDIS_FLAGS)
	fi
	if [[ $pin == 1 ]]; then
		cmd=(taskset -c "$SERVER_CPU" "${cmd[@]}")
	fi
	"${cmd[@]}" >"$log" 2>&1 &
	PID=$!
	PORT=$port
	pids+=("$PID")
	for _ in $(seq 200); do
		if [[ $(redis-cli -p "$port" ping 2>/dev/null) == PONG ]]; then
			return
		fi
		kill -0 "$PID" 2>/dev/null || { cat "$log" >&2; die "$name exited at startup: ${cmd[*]}"; }
		sleep 0.05
	done
	cat "$log" >&2
	die "$name did not answer PING within 10 s: ${cmd[*]}"
}

stop() {
	local pid=$1
	kill "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# bench PORT PIPELINE PIN: prints "TEST RPS" lines.
bench() {
	local port=$1 pipeline=$2 pin=$3
	local -a cmd=(redis-benchmark -p "$port" -q --csv -t "$TESTS" -n "$N" -c "$CLIENTS" -P "$pipeline")
	# shellcheck disable=SC2206
	cmd+=($BENCH_ARGS)
	if [[ $pin == 1 ]]; then
		cmd=(taskset -c "$CLIENT_CPU" "${cmd[@]}")
	fi
	"${cmd[@]}" | awk -F, 'NR > 1 { gsub(/"/, "", $1); gsub(/"/, "", $2); print $1, $2 }'
	# Custom commands: COMMANDS="NAME=cmd args;NAME=cmd args" (e.g. ZRANGE, XADD,
	# which redis-benchmark -t has no test for); SETUP runs once per server first.
	local entry name
	local -a custom
	IFS=';' read -ra custom <<<"$COMMANDS"
	for entry in "${custom[@]}"; do
		[[ -z $entry ]] && continue
		name=${entry%%=*}
		local -a words
		read -ra words <<<"${entry#*=}" # no globbing: XADD's * stays literal
		cmd=(redis-benchmark -p "$port" -q --csv -n "$N" -c "$CLIENTS" -P "$pipeline" "${words[@]}")
		if [[ $pin == 1 ]]; then
			cmd=(taskset -c "$CLIENT_CPU" "${cmd[@]}")
		fi
		"${cmd[@]}" | awk -F, -v name="$name" 'NR > 1 { gsub(/"/, "", $2); print name, $2 }'
	done
}

# setup PORT: runs the SETUP commands ("cmd args;cmd args") once.
setup() {
	local entry
	local -a cmds
	IFS=';' read -ra cmds <<<"$SETUP"
	for entry in "${cmds[@]}"; do
		[[ -z $entry ]] && continue
		# shellcheck disable=SC2086
		redis-cli -p "$1" $entry >/dev/null
	done
}

results=$work/results # lines: MODE PIPELINE TEST SERVER RPS

# phase MODE PIN: fresh servers, then every row alternating redis and dfly.
phase() {
	local mode=$1 pin=$2 redis_port redis_pid dfly_port dfly_pid p round server port
	start redis "$pin"; redis_port=$PORT; redis_pid=$PID
	start dfly "$pin"; dfly_port=$PORT; dfly_pid=$PID
	setup "$redis_port"
	setup "$dfly_port"
	for p in $PIPELINES; do
		for round in $(seq "$ROUNDS"); do
			for server in redis dfly; do
				port=$redis_port
				[[ $server == dfly ]] && port=$dfly_port
				echo "$mode -P $p round $round: $server" >&2
				bench "$port" "$p" "$pin" | while read -r test rps; do
					echo "$mode $p $test $server $rps"
				done >>"$results"
			done
		done
	done
	stop "$dfly_pid"
	stop "$redis_pid"
}

: >"$results"
phase pinned 1
phase unpinned 0

echo
echo "Throughput (requests/s; best of $ROUNDS; -n $N -c $CLIENTS; pinned: server on CPU $SERVER_CPU, benchmark on CPU $CLIENT_CPU)"
awk '
	{ key = $1 " " $2 " " $3; if (!(key in seen)) { seen[key] = 1; order[++n] = key }
	  if ($5 > best[key, $4]) best[key, $4] = $5 }
	END {
		printf "%-9s %3s %-8s %12s %12s %7s %7s\n", "mode", "-P", "test", "redis", "dfly", "ratio", "target"
		for (i = 1; i <= n; i++) {
			split(order[i], f, " ")
			r = best[order[i], "redis"]; d = best[order[i], "dfly"]
			target = (f[1] == "pinned" && f[2] == 1) ? 0.8 : 1.0
			if (f[3] != "SET" && f[3] != "GET") target = 0.8
			ratio = r > 0 ? d / r : 0
			printf "%-9s %3s %-8s %12.0f %12.0f %6.2fx %6.1fx%s\n", f[1], f[2], f[3], r, d, ratio, target,
				ratio < target ? "  BELOW" : ""
		}
	}' "$results"

# Memory: used_memory (INFO memory) and VmRSS (/proc) around DEBUG POPULATE.
used_memory() { redis-cli -p "$1" info memory | tr -d '\r' | awk -F: '$1 == "used_memory" { print $2 }'; }
rss_bytes() { awk '$1 == "VmRSS:" { print $2 * 1024 }' "/proc/$1/status"; }

if ((POPULATE > 0)); then
	echo
	echo "Memory for DEBUG POPULATE $POPULATE (bytes per key)"
	printf "%-6s %14s %14s %10s %14s %14s %10s\n" server used_before used_after used/key rss_before rss_after rss/key
	declare -A per_key_used per_key_rss
	for server in redis dfly; do
		start "$server" 0
		ub=$(used_memory "$PORT"); rb=$(rss_bytes "$PID")
		reply=$(redis-cli -p "$PORT" debug populate "$POPULATE")
		[[ $reply == OK ]] || die "$server: DEBUG POPULATE: $reply"
		keys=$(redis-cli -p "$PORT" dbsize)
		[[ $keys == "$POPULATE" ]] || die "$server: DBSIZE $keys after DEBUG POPULATE $POPULATE"
		redis-cli -p "$PORT" debug gc >/dev/null 2>&1 || true # dfly: count live data, not garbage
		ua=$(used_memory "$PORT"); ra=$(rss_bytes "$PID")
		[[ -n $ub && -n $ua ]] || die "$server: INFO memory has no used_memory"
		per_key_used[$server]=$(awk -v a="$ua" -v b="$ub" -v n="$POPULATE" 'BEGIN { printf "%.1f", (a - b) / n }')
		per_key_rss[$server]=$(awk -v a="$ra" -v b="$rb" -v n="$POPULATE" 'BEGIN { printf "%.1f", (a - b) / n }')
		printf "%-6s %14d %14d %10s %14d %14d %10s\n" "$server" "$ub" "$ua" "${per_key_used[$server]}" "$rb" "$ra" "${per_key_rss[$server]}"
		stop "$PID"
	done
	awk -v du="${per_key_used[dfly]}" -v ru="${per_key_used[redis]}" -v dr="${per_key_rss[dfly]}" -v rr="${per_key_rss[redis]}" 'BEGIN {
		printf "ratio dfly/redis: used_memory %.2fx, RSS %.2fx (target <= 1.5x)\n", du / ru, dr / rr }'
fi
