# shellcheck shell=bash
# Shell functions shared by bench/bench.sh and bench/http.sh (sourced, not run).
#
# A script sets BENCH_NAME (the prefix of its error messages), calls
# bench_init PREFIX (temporary directory $TMP, traps) and may define
# stop_started, which the EXIT trap calls before it stops redis-server and
# removes $TMP: there it stops whatever else it started, with stop_pid.
# start_redis sets REDIS_PID and REDIS_PORT.
#
# Pinning: with 2 or more CPUs and taskset (util-linux), redis-server runs on
# CPU 0 and a script runs its clients with "${PIN_CLIENT[@]}" on CPU 1, so
# Redis's CPU figures are not shared with the client's; BENCH_PIN=0 turns it
# off (both arrays empty).

BENCH_NAME=${BENCH_NAME:-bench}
REDIS_PID=
REDIS_PORT=
TMP=
PIN_REDIS=()
PIN_CLIENT=()
if [ "${BENCH_PIN:-1}" != 0 ] && [ "$(nproc)" -ge 2 ] && command -v taskset >/dev/null; then
	PIN_REDIS=(taskset -c 0)
	# shellcheck disable=SC2034 # used by the scripts that source this file
	PIN_CLIENT=(taskset -c 1)
fi

die() {
	echo "$BENCH_NAME: $*" >&2
	exit 1
}

# require_tools HINT TOOL...: die naming the first TOOL not on PATH, with HINT.
require_tools() {
	local hint=$1 tool
	shift
	for tool in "$@"; do
		command -v "$tool" >/dev/null || die "$tool not found$hint"
	done
}

# Stop one process we started (and its direct children, for nginx's workers):
# SIGTERM, then SIGKILL after 3 s; reap it.
stop_pid() {
	local pid=$1
	local -a kids
	[ -n "$pid" ] || return 0
	read -ra kids <<<"$(pgrep -P "$pid" 2>/dev/null | tr '\n' ' ')"
	kill -TERM "$pid" 2>/dev/null || return 0
	for _ in $(seq 30); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" "${kids[@]}" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

# shellcheck disable=SC2317 # called by the EXIT trap
cleanup() {
	if declare -F stop_started >/dev/null; then
		stop_started
	fi
	stop_pid "$REDIS_PID"
	[ -z "$TMP" ] || rm -rf "$TMP"
}

# bench_init PREFIX: a temporary directory $TMP (PREFIX.XXXXXX under $TMPDIR or
# /tmp), removed on exit with everything the script started.
bench_init() {
	TMP=$(mktemp -d "${TMPDIR:-/tmp}/$1.XXXXXX")
	trap cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

# 1 when something listens on 127.0.0.1:$1 or the wildcard address (state 0A in /proc/net/tcp*).
port_busy() {
	local hex
	hex=$(printf '%04X' "$1")
	grep -qiE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:[0-9A-F]+ 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# A port below the ephemeral range (32768-60999), so no client socket holds it.
free_port() {
	local port
	while :; do
		port=$((20000 + RANDOM % 12000))
		port_busy "$port" || break
	done
	echo "$port"
}

# A private redis-server on a free loopback port, without persistence, in $TMP.
start_redis() {
	local port
	for _ in $(seq 20); do # 20 ports, 5 s each
		port=$(free_port)
		"${PIN_REDIS[@]}" redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
			--dir "$TMP" --logfile "$TMP/redis.log" --databases 1 &
		REDIS_PID=$!
		for _ in $(seq 50); do
			kill -0 "$REDIS_PID" 2>/dev/null || break # lost the port: try another one
			if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
				REDIS_PORT=$port
				return 0
			fi
			sleep 0.1
		done
		stop_pid "$REDIS_PID"
		REDIS_PID=
	done
	tail -5 "$TMP/redis.log" >&2 2>/dev/null || true
	die "redis-server did not start"
}

# The header lines of a run: the machine and the private Redis.
print_machine() {
	echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
		"$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r);" \
		"load average $(cut -d' ' -f1-3 /proc/loadavg)"
	if [ -z "$REDIS_PORT" ]; then
		echo "redis: $(redis-server --version | sed 's/^Redis server //') (no private Redis of this script's)"
		return 0
	fi
	echo "redis: $(redis-server --version | sed 's/^Redis server //') on 127.0.0.1:$REDIS_PORT (private, no persistence)"
	if [ "${#PIN_REDIS[@]}" -gt 0 ]; then
		echo "pinned: redis-server to CPU 0, the clients to CPU 1 (taskset)"
	else
		echo "pinned: no (BENCH_PIN=0, one CPU, or no taskset)"
	fi
}
