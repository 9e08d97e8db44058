#!/usr/bin/env bash
# Full sync under write load (issue 8's figures), three pairs:
#   - dfly>redis: a real redis-server replica of a dfly master (PSYNC, one RDB stream),
#   - dfly>dfly: a dfly replica of a dfly master (per-shard flows, tagged snapshot + journal),
#   - redis>redis: redis-server on both sides (diskless sync, no delay: its fastest full sync),
# each master holding KEYS keys (DEBUG POPULATE KEYS key SIZE). replload drives
# redis-benchmark's SET load (CLIENTS clients, one request in flight each, random keys
# key:NNNNNNNNNNNN of the same space) through three phases: IDLE seconds with no replica,
# then REPLICAOF until the replica's link is up (the sync), then STABLE seconds more.
# Printed per pair:
#   up_s      time from REPLICAOF to the replica's master_link_status:up
#   equal_s   time from the end of the load until the replica's digest equals the
#             master's (repldigest): "eq", or "DIFF" after 60 s
#   rps/p99   SET throughput and p99 (ms) of each phase: idle, sync, stable
#   cpu_m/r   CPU seconds the master (with its fork children) and the replica used
#             during the sync
# and on a second line each process's CPU microseconds per SET in each phase (the
# steadier figure on a shared machine, where neighbours move latency far more than cost),
# and the ratios: link up dfly>dfly / redis>redis and dfly>redis / redis>redis, and each
# pair's sync p99 / idle p99 (the target is <= 2x).
# Env: KEYS (default 1000000), SIZE (100), CLIENTS (50), RATE (SETs per second at fixed
# times, an open loop: latency then measures the stalls a sync causes rather than the
# queue of a saturated closed loop; default none: every client sends again at once),
# IDLE (3), STABLE (3) seconds,
# PAIRS (default "dfly:redis dfly:dfly redis:redis"), DFLY_BIN (a dfly binary to run
# instead of a fresh build of ./cmd/dfly), REPLICA_NICE (run replicas at this nice value:
# on a shared machine, an approximation of a replica on a machine of its own),
# REPLICA_FLAGS (more flags for dfly replicas, e.g. "--shards 3"), MASTER_FLAGS (more flags for
# dfly masters, e.g. "--point_in_time_snapshot=false"), PIN (default 1 where there are 2
# CPUs or more: master and load on the first half of the CPUs, the replica on the other
# half, see below; PIN=0: every process anywhere), TIMELINE (a
# directory: each pair's replies and longest latency per 10 ms window go to
# TIMELINE/MASTER-REPLICA-ROUND.txt, lines "ms phase replies max_us c500 ... c8000", phase 0 idle, 1 sync, 2 stable),
# SYNC_CMD (a shell command run during each sync, from REPLICAOF until the link is up, then
# sent SIGINT; $MPID and $RPID are the master's and the replica's process ids: a profiler,
# e.g. SYNC_CMD='perf record -g -p $MPID -o /tmp/m.data'),
# LOGS (a directory: the servers' logs go to LOGS/m-MASTER-REPLICA-ROUND.log and r-...; with
# GODEBUG=gctrace=1 exported they show the collector's cycles),
# ROUNDS (default 1: every pair runs once per round, the pairs alternating; with more, the
# ratios of each round and their medians: on a shared machine one run's p99 moves by a
# quarter either way).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
KEYS=${KEYS:-1000000}
SIZE=${SIZE:-100}
CLIENTS=${CLIENTS:-50}
IDLE=${IDLE:-3}
STABLE=${STABLE:-3}
PAIRS=${PAIRS:-dfly:redis dfly:dfly redis:redis}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
(cd "$here/../.." && go build -o "$work/repldigest" ./tests/bench/repldigest && go build -o "$work/replload" ./tests/bench/replload)
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly"; else (cd "$here/../.." && go build -o "$work/dfly" ./cmd/dfly); fi
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_up() { for _ in $(seq 100); do redis-cli -p "$1" ping >/dev/null 2>&1 && return; sleep 0.1; done; echo "repl.sh: port $1 did not start" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
# PIN=1: the master and the load share the first half of the CPUs, the replica has the
# other half (a replica on a machine of its own, as in production; idle is measured the
# same way, so the ratios compare like with like). Unpinned on a small machine, the
# replica's load competes with its master for the same cores, and the master's p99 during
# the sync measures that contention as much as the sync: dfly's replica loads in parallel
# and fast, taking a core the master's clients need (on 2 cores, dfly>dfly 3.6-5.3x
# unpinned against 1.4-2.4x pinned; redis>redis 1.2-2.2x unpinned, 1.8-3.7x pinned).
ncpu=$(nproc)
if [[ -z ${PIN+set} ]]; then PIN=$(( ncpu >= 2 ? 1 : 0 )); fi
[[ $PIN == 0 ]] && PIN=
if [[ -n ${PIN:-} ]]; then
	(( ncpu >= 2 )) || { echo "repl.sh: PIN needs 2 CPUs" >&2; exit 1; }
	mcpus="0-$((ncpu / 2 - 1))" rcpus="$((ncpu / 2))-$((ncpu - 1))"
	echo "# pinned: master and load on CPUs $mcpus, replica on CPUs $rcpus (PIN=0: unpinned)"
else
	echo "# unpinned: every process on any CPU"
fi
# on CPUS CMD...: CMD pinned to CPUS when PIN is set
on() { local c=$1; shift; if [[ -n ${PIN:-} ]]; then taskset -c "$c" "$@"; else "$@"; fi; }
# start KIND PORT DIR [NICE [FLAGS [CPUS]]] -> PID: a server with no persistence
start() {
	local -a pre=() flags=(${5:-})
	[[ -n ${PIN:-} ]] && pre=(taskset -c "$6")
	[[ -n ${4:-} ]] && pre+=(nice -n "$4")
	[[ ${#flags[@]} -gt 0 ]] || flags=()
	if [[ $1 == redis ]]; then
		"${pre[@]}" redis-server --port "$2" --save '' --appendonly no --enable-debug-command yes \
			--repl-diskless-sync yes --repl-diskless-sync-delay 0 --dir "$3" >"$3.log" 2>&1 &
	else
		"${pre[@]}" "$work/dfly" --port "$2" --dir "$3" "${flags[@]}" >"$3.log" 2>&1 &
	fi
	PID=$!
	pids+=("$PID")
	wait_up "$2"
}

printf '%-11s %6s %8s %6s %9s %8s %9s %8s %9s %8s %6s %6s\n' pair up_s equal_s digest \
	rps_idle p99_idle rps_sync p99_sync rps_stab p99_stab cpu_m cpu_r
ROUNDS=${ROUNDS:-1}
declare -A up p99 p99s ups
for round in $(seq "$ROUNDS"); do
for pair in $PAIRS; do
	master=${pair%%:*} replica=${pair##*:}
	MPORT=$(free_port) RPORT=$(free_port)
	rm -rf "$work/m-$pair" "$work/r-$pair"
	mkdir -p "$work/m-$pair" "$work/r-$pair"
	start "$master" "$MPORT" "$work/m-$pair" "" "$([[ $master == dfly ]] && echo "${MASTER_FLAGS:-}")" "${mcpus:-}"; mpid=$PID
	start "$replica" "$RPORT" "$work/r-$pair" "${REPLICA_NICE:-}" "$([[ $replica == dfly ]] && echo "${REPLICA_FLAGS:-}")" "${rcpus:-}"; rpid=$PID
	export MPID=$mpid RPID=$rpid
	redis-cli -p "$MPORT" debug populate "$KEYS" key "$SIZE" >/dev/null
	read -r u ri pi rs ps rt pt cm cr mui mus mut rui rus rut < <(on "${mcpus:-}" "$work/replload" -master "127.0.0.1:$MPORT" -replica "127.0.0.1:$RPORT" \
		-c "$CLIENTS" ${RATE:+-rate "$RATE"} -r "$KEYS" -d "$SIZE" -idle "${IDLE}s" -stable "${STABLE}s" -pids "$mpid,$rpid" \
		${TIMELINE:+-timeline "$TIMELINE/$master-$replica-$round.txt"} ${SYNC_CMD:+-sync-cmd "$SYNC_CMD"})
	up[$pair]=$u p99[$pair]=$(awk -v a="$ps" -v b="$pi" 'BEGIN { printf "%.2f", a / b }')
	ups[$pair]+=" $u" p99s[$pair]+=" ${p99[$pair]}"
	t1=$(now)
	same=DIFF
	for _ in $(seq 600); do
		dm=$("$work/repldigest" -addr "127.0.0.1:$MPORT")
		dr=$("$work/repldigest" -addr "127.0.0.1:$RPORT")
		if [[ $dm == "$dr" ]]; then same=eq; break; fi
		sleep 0.1
	done
	printf '%-11s %6s %8s %6s %9s %8s %9s %8s %9s %8s %6s %6s\n' "${master}>${replica}" "$u" "$(since "$t1")" "$same" \
		"$ri" "$pi" "$rs" "$ps" "$rt" "$pt" "$cm" "$cr"
	printf '  CPU us per SET: master idle %s sync %s stable %s; replica sync %s stable %s\n' \
		"$mui" "$mus" "$mut" "$rus" "$rut"
	[[ $same == eq ]] || echo "  master $dm / replica $dr"
	redis-cli -p "$RPORT" shutdown nosave >/dev/null 2>&1 || true
	redis-cli -p "$MPORT" shutdown nosave >/dev/null 2>&1 || true
	sleep 0.5
	if [[ -n ${LOGS:-} ]]; then
		cp "$work/m-$pair.log" "$LOGS/m-$master-$replica-$round.log"
		cp "$work/r-$pair.log" "$LOGS/r-$master-$replica-$round.log"
	fi
done
done
# median WORDS...: the median of numbers
median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { printf "%.2f", NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
for pair in $PAIRS; do
	if (( ROUNDS == 1 )); then
		echo "${pair/:/>}: p99 during the sync / idle ${p99[$pair]}x"
	else
		# shellcheck disable=SC2086
		echo "${pair/:/>}: p99 during the sync / idle, by round:${p99s[$pair]}; median $(median ${p99s[$pair]})x"
	fi
done
# upratio A B: link-up time ratios A/B, one per round
upratio() {
	paste <(printf '%s\n' ${ups[$1]}) <(printf '%s\n' ${ups[$2]}) | awk '{ printf " %.2f", $1 / $2 }'
}
for a in dfly:dfly dfly:redis; do
	[[ -n ${ups[redis:redis]:-} && -n ${ups[$a]:-} ]] || continue
	r=$(upratio "$a" redis:redis)
	# shellcheck disable=SC2086
	echo "full sync to link up: ${a/:/>} / redis>redis by round:$r; median $(median $r)x"
done
