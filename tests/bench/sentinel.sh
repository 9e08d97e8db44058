#!/usr/bin/env bash
# Failover under Redis Sentinel, dfly sets next to redis-server sets
# (issue 43): three servers (a master, two replicas, each started from a
# config file, as Sentinel's CONFIG REWRITE expects) and three Sentinels
# (redis-sentinel, or redis-server --sentinel), down-after 1000 ms. Each
# round kills the master (-9) and measures the time until a SET succeeds on
# the master Sentinel then names; the old master restarts from its config
# file (empty: nothing was saved) and Sentinel makes it a replica. The
# resyncs the new master served in the round are counted full or partial
# (INFO stats sync_full / sync_partial_ok, plus dfly_flow_syncs_* for dfly
# replicas). The two kinds run one after the other, ROUNDS failovers each.
# MODE=term stops the master with SIGTERM instead, the servers saving on
# shutdown (save 3600 1): the old master comes back from its file.
# Env: ROUNDS (default 10), MODE (kill or term), DFLY_BIN, DFLY_FLAGS
# (default "--shards 2").
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
ROUNDS=${ROUNDS:-10}
MODE=${MODE:-kill}
DFLY_FLAGS=${DFLY_FLAGS:---shards 2}
work=$(mktemp -d)
pids=()
cleanup() { for p in "${pids[@]}"; do kill -9 "$p" 2>/dev/null || true; done; rm -rf "$work"; }
trap cleanup EXIT
if [[ -n ${DFLY_BIN:-} ]]; then cp "$DFLY_BIN" "$work/dfly-bin"; else (cd "$here/../.." && go build -o "$work/dfly-bin" ./cmd/dfly); fi
sentinel=$(command -v redis-sentinel || command -v redis-server)
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ms() { date +%s%3N; }

# start_server KIND I: start server I of kind KIND from its config file.
start_server() {
	local kind=$1 i=$2 dir="$work/$1/s$2"
	if [[ $kind == redis ]]; then
		redis-server "$dir/server.conf" >"$dir/log" 2>&1 &
	else
		# shellcheck disable=SC2086
		"$work/dfly-bin" "$dir/server.conf" $DFLY_FLAGS >>"$dir/log" 2>&1 &
	fi
	spid[$i]=$!
	disown
	pids+=("${spid[$i]}")
	for _ in $(seq 100); do redis-cli -p "${sport[$i]}" ping >/dev/null 2>&1 && return; sleep 0.05; done
	echo "server $kind $i did not start" >&2
	exit 1
}

# counters PORT: "full partial" syncs the server at PORT served.
counters() {
	redis-cli -p "$1" info all 2>/dev/null | tr -d '\r' | awk -F: '
		/^sync_full:/ || /^dfly_flow_syncs_full:/ {f += $2}
		/^sync_partial_ok:/ || /^dfly_flow_syncs_partial:/ {p += $2}
		END {print f+0, p+0}'
}

run_kind() {
	local kind=$1
	mkdir -p "$work/$kind"
	sport=() spid=()
	for i in 0 1 2; do
		sport[$i]=$(free_port)
		mkdir -p "$work/$kind/s$i"
		save='""'
		[[ $MODE == term ]] && save='3600 1'
		printf 'port %s\nbind 127.0.0.1\ndir %s\nsave %s\n' "${sport[$i]}" "$work/$kind/s$i" "$save" >"$work/$kind/s$i/server.conf"
		[[ $kind == redis ]] && echo 'appendonly no' >>"$work/$kind/s$i/server.conf"
		[[ $i != 0 ]] && echo "replicaof 127.0.0.1 ${sport[0]}" >>"$work/$kind/s$i/server.conf"
	done
	for i in 0 1 2; do start_server "$kind" "$i"; done
	local sent=() sentpids=()
	for j in 0 1 2; do
		sent[$j]=$(free_port)
		printf 'port %s\nbind 127.0.0.1\ndir %s\nsentinel monitor m 127.0.0.1 %s 2\nsentinel down-after-milliseconds m 1000\nsentinel failover-timeout m 10000\n' \
			"${sent[$j]}" "$work/$kind" "${sport[0]}" >"$work/$kind/sentinel$j.conf"
		"$sentinel" "$work/$kind/sentinel$j.conf" --sentinel >"$work/$kind/sentinel$j.log" 2>&1 &
		pids+=($!)
		sentpids+=($!)
		disown
	done
	# Every Sentinel must know both replicas and the other two, or the
	# first failover's election can fail and wait out failover-timeout.
	for j in 0 1 2; do
		for _ in $(seq 300); do
			m=$(redis-cli -p "${sent[$j]}" sentinel master m 2>/dev/null | paste - - | tr -d '\r' | awk '$1=="num-slaves"{s=$2} $1=="num-other-sentinels"{o=$2} END{print s+0, o+0}')
			[[ $m == "2 2" ]] && break
			sleep 0.1
		done
	done
	local times=() fulls=0 partials=0
	for r in $(seq "$ROUNDS"); do
		local mport
		mport=$(redis-cli -p "${sent[0]}" sentinel get-master-addr-by-name m | tr -d '\r' | sed -n 2p)
		local mi=-1 before=()
		for i in 0 1 2; do
			[[ ${sport[$i]} == "$mport" ]] && mi=$i
			before[$i]=$(counters "${sport[$i]}")
		done
		redis-cli -p "$mport" set before-kill "$r" >/dev/null
		local t0 t1 newport=""
		t0=$(now_ms)
		if [[ $MODE == term ]]; then
			kill -TERM "${spid[$mi]}"
		else
			kill -9 "${spid[$mi]}"
		fi
		while :; do
			newport=$(redis-cli -p "${sent[0]}" sentinel get-master-addr-by-name m 2>/dev/null | tr -d '\r' | sed -n 2p)
			if [[ -n $newport && $newport != "$mport" ]] && [[ $(redis-cli -p "$newport" set after-kill "$r" 2>/dev/null) == OK ]]; then
				break
			fi
			sleep 0.01
			(($(now_ms) - t0 > 60000)) && { echo "round $r: no new master after 60 s" >&2; exit 1; }
		done
		t1=$(now_ms)
		times+=($((t1 - t0)))
		# SIGTERM: wait until it saved and exited (gone, or a zombie).
		while [[ $(ps -o stat= -p "${spid[$mi]}" 2>/dev/null) == [^Z]* ]]; do sleep 0.05; done
		start_server "$kind" "$mi"
		for _ in $(seq 600); do
			[[ $(redis-cli -p "$mport" info replication 2>/dev/null | tr -d '\r' | grep -c -e '^role:slave' -e '^master_link_status:up') == 2 ]] && break
			sleep 0.1
		done
		[[ $(redis-cli -p "$newport" wait 2 10000) == 2 ]] || echo "round $r: WAIT 2 on the new master failed" >&2
		local ni
		for i in 0 1 2; do [[ ${sport[$i]} == "$newport" ]] && ni=$i; done
		read -r f0 p0 <<<"${before[$ni]}"
		read -r f1 p1 <<<"$(counters "$newport")"
		fulls=$((fulls + f1 - f0))
		partials=$((partials + p1 - p0))
		echo "$kind round $r: new master after $((t1 - t0)) ms; resyncs so far full $fulls partial $partials" >&2
	done
	for p in "${spid[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	for p in "${sentpids[@]}"; do kill -9 "$p" 2>/dev/null || true; done
	local sorted
	sorted=$(printf '%s\n' "${times[@]}" | sort -n | tr '\n' ' ')
	printf '%-6s %s failovers %2d  first write on the new master ms: min %s median %s max %s  resyncs full %d partial %d\n' \
		"$kind" "$MODE" "$ROUNDS" "$(echo "$sorted" | awk '{print $1}')" "$(echo "$sorted" | awk '{print $(int((NF+1)/2))}')" \
		"$(echo "$sorted" | awk '{print $NF}')" "$fulls" "$partials"
}

declare -a sport spid
run_kind redis
run_kind dfly
