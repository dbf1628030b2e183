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

BENCH_NAME=bench
# shellcheck source=bench/lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

require_tools "" redis-server redis-cli curl
for bin in "$SLUICED" "$DRAIN_BENCH"; do
	[ -x "$bin" ] || die "$bin is not an executable"
done

bench_init sluice-bench
DAEMON_PID=

# shellcheck disable=SC2317 # called by cleanup (lib.sh) on exit
stop_started() {
	stop_pid "$DAEMON_PID"
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
	local n=$1 log="$TMP/sluiced.$1.log" port='' json='' sweeps=0 i
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
	if [ -z "$sweeps" ] || [ "$sweeps" -lt 3 ]; then
		die "sluiced did not finish 3 drain sweeps of $n paths in 60 s"
	fi
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
print_machine
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
