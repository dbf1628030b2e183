#!/usr/bin/env bash
# `make run`: sluiced in the foreground on the example config, against
# $REDIS_URL when given, else a private redis-server on a free loopback port
# (no persistence, in a temporary directory, stopped when sluiced exits).
set -euo pipefail
SLUICED=${SLUICED:-./sluiced}
CONFIG=${CONFIG:-examples/sluiced.json}
LISTEN=${LISTEN:-127.0.0.1:8080}

redis_pid=""
dir=""
cleanup() {
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
	[ -n "$dir" ] && rm -rf "$dir"
	return 0
}
trap cleanup EXIT

if [ -z "${REDIS_URL:-}" ]; then
	command -v redis-server >/dev/null || { echo "run: redis-server is missing: apt-get install -y redis-server" >&2; exit 1; }
	dir=$(mktemp -d /tmp/sluice-run-XXXXXX)
	for _ in $(seq 1 50); do
		port=$((20000 + RANDOM % 20000))
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || break
	done
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
		--logfile redis.log --daemonize no &
	redis_pid=$!
	for _ in $(seq 1 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.05
	done
	redis-cli -p "$port" ping >/dev/null || { echo "run: redis-server did not start (see $dir/redis.log)" >&2; exit 1; }
	REDIS_URL="redis://127.0.0.1:$port/0"
	echo "run: private redis-server at $REDIS_URL (stopped when sluiced exits)" >&2
fi
host=${LISTEN%:*}; aport=${LISTEN##*:}
"$SLUICED" --config "$CONFIG" --redis "$REDIS_URL" --listen "$LISTEN" &
pid=$!
trap 'kill -TERM $pid 2>/dev/null' INT TERM
# wait until the admin API answers, or sluiced has died (port taken, bad config)
for _ in $(seq 1 50); do
	kill -0 "$pid" 2>/dev/null || break
	curl -sf "http://$host:$aport/healthz" >/dev/null 2>&1 && break
	sleep 0.1
done
if ! kill -0 "$pid" 2>/dev/null; then
	rc=0
	wait "$pid" || rc=$?
	echo "run: sluiced failed to start (exit $rc); see its message above" >&2
	exit "$rc"
fi
cat >&2 <<MSG
run: sluiced admin API on http://$LISTEN ; in another terminal, try:

  # 12 requests to /api/users through the client-side leaky bucket (capacity 10, 2 per second)
  # (/api/users is in shard 839: its keys carry {839}; lua/README.md, "Shards")
  for i in \$(seq 12); do redis-cli -u '$REDIS_URL' --eval build/lua/leaky_bucket.lua \\
      'sluice:{839}:leaky_bucket:/api/users' 'sluice:{839}:leaky_bucket_meta:/api/users' \\
      'sluice:{839}:registry:leaky_bucket' 'sluice:{839}:rules' 'sluice:{839}:stats' \\
      , /api/users '' '' '' 10 2 | head -1; done
  # watch it drain (count falls by 2 a second) and read the worker's counters
  curl -s http://$host:$aport/v1/paths/%2Fapi%2Fusers; echo
  curl -s http://$host:$aport/v1/worker; echo

Stop with Ctrl-C.
MSG
rc=0
wait "$pid" || rc=$?
# after Ctrl-C the first wait returns early: wait for the real exit status
if kill -0 "$pid" 2>/dev/null; then
	rc=0
	wait "$pid" || rc=$?
fi
exit "$rc"
