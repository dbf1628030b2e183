#!/usr/bin/env bash
# fuzz/run.sh BINDIR TARGET...: run each libFuzzer target FUZZ_SECONDS
# (default 60) on a scratch copy of its seed corpus (fuzz/corpus/<target>/,
# so the committed one does not grow), with its dictionary
# (fuzz/dict/<target>.dict) when there is one, beside a private
# redis-server on a free loopback port (SLUICE_FUZZ_REDIS_PORT) that is
# stopped at the end whatever happens.  Prints per target the executions
# (libFuzzer's stat::number_of_executed_units); exits 1 when any target
# crashed, leaked, ran out of time or memory, naming it and the reproducer.
# Run from the repository root (the targets read build/lua-fuzz/).
set -u
bindir=$1
shift
secs=${FUZZ_SECONDS:-60}
work=build/fuzz/run
rm -rf "$work"
mkdir -p "$work"

port=$(/usr/bin/python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --logfile "$PWD/$work/redis.log" &
rpid=$!
trap 'kill "$rpid" 2>/dev/null; wait "$rpid" 2>/dev/null' EXIT
for _ in $(seq 100); do
	[ "$(redis-cli -p "$port" ping 2>/dev/null)" = PONG ] && break
	kill -0 "$rpid" 2>/dev/null || { echo "fuzz: redis-server did not start ($work/redis.log)" >&2; exit 1; }
	sleep 0.05
done
export SLUICE_FUZZ_REDIS_PORT=$port

# The longest input per target (bytes): room for the seeds' 10 kB paths and bodies.
max_len() {
	case $1 in
	fuzz_lua_glob) echo 1024 ;;   # a pattern of at most 255 bytes and a path (Lua's glob is quadratic)
	fuzz_router) echo 16384 ;;
	*) echo 12288 ;;
	esac
}

fail=0
for t in "$@"; do
	dir=$work/$t
	mkdir -p "$dir/corpus"
	cp fuzz/corpus/"$t"/* "$dir/corpus/" 2>/dev/null
	seeds=$(ls "$dir/corpus" | wc -l)
	dict=()
	[ -f fuzz/dict/"$t".dict ] && dict=(-dict=fuzz/dict/"$t".dict)
	"$bindir/$t" -max_total_time="$secs" -print_final_stats=1 -timeout=10 -rss_limit_mb=2048 \
		-max_len="$(max_len "$t")" -artifact_prefix="$dir/" "${dict[@]}" "$dir/corpus" >"$dir/log" 2>&1
	rc=$?
	execs=$(awk '/^stat::number_of_executed_units:/ { print $2 }' "$dir/log")
	if [ $rc -ne 0 ]; then
		fail=1
		repro=$(ls "$dir"/crash-* "$dir"/leak-* "$dir"/timeout-* "$dir"/oom-* "$dir"/slow-unit-* 2>/dev/null | head -1)
		echo "fuzz: $t: FAILED (exit $rc) after ${execs:-?} executions; reproducer: ${repro:-none written}; log: $dir/log"
		grep -E '^(==[0-9]+==ERROR|SUMMARY|fuzz_|fuzz:)|runtime error' "$dir/log" | head -20 | sed 's/^/  /'
		[ -n "$repro" ] && echo "  reproduce: SLUICE_FUZZ_REDIS_PORT=<a redis-server's port> $bindir/$t $repro"
	else
		echo "fuzz: $t: ${execs:-?} executions in ${secs} s, corpus $seeds -> $(ls "$dir/corpus" | wc -l) inputs"
	fi
done
exit $fail
