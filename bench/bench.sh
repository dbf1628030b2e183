#!/usr/bin/env bash
# sluice benchmark driver, run by `make bench` with
#   SLUICED=<sluiced binary> DRAIN_BENCH=<drain_bench binary>
#
# 1. Starts a private redis-server on a free loopback port, in a temporary
#    directory, without persistence; it is always killed on exit.
# 2. drain_bench: 100,000 leaky buckets, one full drain sweep of the worker
#    against the seed article's one-round-trip-per-path loop (median of 3).
# 3. The real sluiced against 10,000 then 100,000 paths: peak and current RSS
#    once it has done 3 drain sweeps.
# Figures, not pass/fail: the targets are reported, not enforced.  Exit status
# is non-zero only on a real error (Redis or sluiced not starting, a wrong
# drained count, the daemon not exiting 0 on SIGTERM).
#
# Knobs (environment): BENCH_PATHS (100000), BENCH_REPEAT (3),
# BENCH_BATCH (500, the daemon's default), BENCH_ALSO_BATCH (100,2000),
# BENCH_RSS_PATHS ("10000 100000").
set -euo pipefail

: "${SLUICED:?set SLUICED to the sluiced binary}"
: "${DRAIN_BENCH:?set DRAIN_BENCH to the drain_bench binary}"
PATHS=${BENCH_PATHS:-100000}
REPEAT=${BENCH_REPEAT:-3}
BATCH=${BENCH_BATCH:-500}
ALSO_BATCH=${BENCH_ALSO_BATCH:-100,2000}
RSS_PATHS=${BENCH_RSS_PATHS:-"10000 100000"}

for tool in redis-server redis-cli curl; do
	command -v "$tool" >/dev/null || { echo "bench: $tool not found" >&2; exit 1; }
done
for bin in "$SLUICED" "$DRAIN_BENCH"; do
	[ -x "$bin" ] || { echo "bench: $bin is not an executable" >&2; exit 1; }
done

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench.XXXXXX")
REDIS_PID=
DAEMON_PID=

# Stop one process we started: SIGTERM, then SIGKILL after 3 s; reap it.
stop_pid() {
	local pid=$1 i
	[ -n "$pid" ] || return 0
	kill -TERM "$pid" 2>/dev/null || return 0
	for i in $(seq 30); do
		kill -0 "$pid" 2>/dev/null || break
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	wait "$pid" 2>/dev/null || true
}

cleanup() {
	stop_pid "$DAEMON_PID"
	stop_pid "$REDIS_PID"
	rm -rf "$TMP"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

die() {
	echo "bench: $*" >&2
	exit 1
}

# 1 when something listens on 127.0.0.1:$1 or the wildcard address (state 0A in /proc/net/tcp*).
port_busy() {
	local hex
	hex=$(printf '%04X' "$1")
	grep -qiE "^ *[0-9]+: [0-9A-F]+:$hex [0-9A-F]+:[0-9A-F]+ 0A" /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

start_redis() {
	local try port i
	for try in $(seq 20); do
		port=$((20000 + RANDOM % 40000))
		port_busy "$port" && continue
		redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
			--dir "$TMP" --logfile "$TMP/redis.log" --databases 1 &
		REDIS_PID=$!
		for i in $(seq 50); do
			if ! kill -0 "$REDIS_PID" 2>/dev/null; then
				break # lost the port to someone else: try another one
			fi
			if [ "$(redis-cli -h 127.0.0.1 -p "$port" ping 2>/dev/null)" = PONG ]; then
				REDIS_PORT=$port
				return 0
			fi
			sleep 0.1
		done
		stop_pid "$REDIS_PID"
		REDIS_PID=
	done
	[ -f "$TMP/redis.log" ] && tail -5 "$TMP/redis.log" >&2
	die "redis-server did not start"
}

# "key": number from the flat JSON of /v1/worker, inside the object that follows "$2": { (or top level)
json_num() {
	local json=$1 obj=$2 key=$3
	if [ -n "$obj" ]; then
		json=${json#*\""$obj"\":\{}
	fi
	if [[ $json =~ \"$key\":(-?[0-9]+) ]]; then
		echo "${BASH_REMATCH[1]}"
	else
		echo ""
	fi
}

kib_of() { # VmHWM / VmRSS in kB from /proc/<pid>/status
	awk -v k="$2:" '$1 == k { print $2 }' "/proc/$1/status"
}

mib() { awk -v k="$1" 'BEGIN { printf "%.1f", k / 1024 }'; }

# Run sluiced against $1 filled paths; sets RSS_HWM_KB, RSS_NOW_KB, SWEEP_US, DRAINED.
rss_run() {
	local n=$1 log="$TMP/sluiced.$1.log" port= json= sweeps=0 i
	"$DRAIN_BENCH" fill --redis "$URL" --paths "$n" --age-ms 100000 >"$TMP/fill.$n.out" ||
		die "fill of $n paths failed"
	"$SLUICED" --redis "$URL" --listen 127.0.0.1:0 --drain-interval-ms 100 2>"$log" &
	DAEMON_PID=$!
	for i in $(seq 100); do
		kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$log" >&2; die "sluiced exited at start"; }
		port=$(sed -n 's/.*event=started .*listen=127\.0\.0\.1:\([0-9][0-9]*\).*/\1/p' "$log" | head -1)
		[ -n "$port" ] && break
		sleep 0.1
	done
	[ -n "$port" ] || { cat "$log" >&2; die "sluiced did not log its listen port"; }
	for i in $(seq 600); do # 60 s at most
		json=$(curl -sf --max-time 2 "http://127.0.0.1:$port/v1/worker" || true)
		sweeps=$(json_num "$json" drain sweeps)
		[ -n "$sweeps" ] && [ "$sweeps" -ge 3 ] && break
		kill -0 "$DAEMON_PID" 2>/dev/null || { cat "$log" >&2; die "sluiced died"; }
		sleep 0.1
	done
	[ -n "$sweeps" ] && [ "$sweeps" -ge 3 ] || die "sluiced did not finish 3 drain sweeps of $n paths in 60 s"
	RSS_HWM_KB=$(kib_of "$DAEMON_PID" VmHWM)
	RSS_NOW_KB=$(kib_of "$DAEMON_PID" VmRSS)
	SWEEP_US=$(json_num "$json" drain last_sweep_us)
	DRAINED=$(json_num "$json" drain drained)
	local errors paths
	errors=$(json_num "$json" drain errors)
	paths=$(json_num "$json" drain paths)
	kill -TERM "$DAEMON_PID"
	local rc=0
	wait "$DAEMON_PID" || rc=$?
	DAEMON_PID=
	[ "$rc" -eq 0 ] || { tail -5 "$log" >&2; die "sluiced exited $rc after SIGTERM (expected 0)"; }
	[ "$errors" = 0 ] || { tail -5 "$log" >&2; die "sluiced counted $errors drain errors"; }
	# the fill is 100 s old: the first sweep leaks exactly one entry per bucket, the next ones none
	[ "$DRAINED" = "$n" ] || die "sluiced drained $DRAINED entries from $n paths, expected $n"
	echo "  $n paths: $sweeps sweeps ($paths paths visited), $DRAINED drained, last sweep $(awk -v u="$SWEEP_US" 'BEGIN { printf "%.3f", u / 1e6 }') s;" \
		"VmHWM $(mib "$RSS_HWM_KB") MiB ($RSS_HWM_KB kB), VmRSS $(mib "$RSS_NOW_KB") MiB ($RSS_NOW_KB kB)"
}

start_redis
URL="redis://127.0.0.1:$REDIS_PORT/0"

echo "== sluice bench: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
echo "machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1)," \
	"$(awk '/MemTotal/ { printf "%.1f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)"
echo "redis: $(redis-server --version | sed 's/^Redis server //') on 127.0.0.1:$REDIS_PORT (private, no persistence)"
echo

echo "== drain sweep vs one round trip per path"
"$DRAIN_BENCH" bench --redis "$URL" --paths "$PATHS" --repeat "$REPEAT" --batch-size "$BATCH" \
	--also-batch "$ALSO_BATCH" | tee "$TMP/drain.out"
echo

echo "== sluiced memory (drain every 100 ms, batch 500; RSS after 3 full sweeps)"
declare -a RSS_N RSS_H RSS_R RSS_S
for n in $RSS_PATHS; do
	rss_run "$n"
	RSS_N+=("$n")
	RSS_H+=("$RSS_HWM_KB")
	RSS_R+=("$RSS_NOW_KB")
	RSS_S+=("$SWEEP_US")
done
echo

echo "== summary"
sed -n 's/^RESULT //p' "$TMP/drain.out"
line="sluiced peak RSS (VmHWM)"
for i in "${!RSS_N[@]}"; do
	line+=" $((RSS_N[i] / 1000))k paths: $(mib "${RSS_H[i]}") MiB"
	[ "$i" -lt $((${#RSS_N[@]} - 1)) ] && line+=","
done
last=$((${#RSS_N[@]} - 1))
if [ "$last" -ge 1 ]; then
	line+=" (ratio $(awk -v a="${RSS_H[last]}" -v b="${RSS_H[0]}" 'BEGIN { printf "%.2f", a / b }'))"
fi
echo "$line"
line="sluiced RSS now (VmRSS)  "
for i in "${!RSS_N[@]}"; do
	line+=" $((RSS_N[i] / 1000))k paths: $(mib "${RSS_R[i]}") MiB"
	[ "$i" -lt "$last" ] && line+=","
done
[ "$last" -ge 1 ] &&
	line+=" (ratio $(awk -v a="${RSS_R[last]}" -v b="${RSS_R[0]}" 'BEGIN { printf "%.2f", a / b }'))"
echo "$line"
line="sluiced last sweep       "
for i in "${!RSS_N[@]}"; do
	line+=" $((RSS_N[i] / 1000))k paths: $(awk -v u="${RSS_S[i]}" 'BEGIN { printf "%.3f", u / 1e6 }') s"
	[ "$i" -lt "$last" ] && line+=","
done
echo "$line (nothing due: one HMGET per bucket; spread over 80 ms ticks)"
