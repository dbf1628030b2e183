#!/usr/bin/env bash
# `make run`: sluiced in the foreground on the example config, against
# $REDIS_URL when given, else a private redis-server on a free loopback port
# (no persistence, in a temporary directory, stopped when sluiced exits).
# `make run CLUSTER=1` (CLUSTER=1 tools/run.sh): a private Redis Cluster of
# 3 primaries and a replica each instead (free ports, their own bus ports,
# cluster-node-timeout 1000 ms, so a killed primary fails over), and sluiced
# against one of its nodes.
set -euo pipefail
SLUICED=${SLUICED:-./sluiced}
CONFIG=${CONFIG:-examples/sluiced.json}
LISTEN=${LISTEN:-127.0.0.1:8080}
CLUSTER=${CLUSTER:-}

redis_pid=""
cluster_pids=()
dir=""
cleanup() {
	[ -n "$redis_pid" ] && kill "$redis_pid" 2>/dev/null && wait "$redis_pid" 2>/dev/null
	for p in "${cluster_pids[@]}"; do
		kill "$p" 2>/dev/null && wait "$p" 2>/dev/null
	done
	[ -n "$dir" ] && rm -rf "$dir"
	return 0
}
trap cleanup EXIT

# A loopback port nobody listens on, not one of "$@": below Linux's range of
# ports for outgoing connections (32768 and up), which a connection may hold
# without anybody listening on it (then bind fails: "Address already in use").
free_port() {
	local port
	for _ in $(seq 1 100); do
		port=$((10000 + RANDOM % 22000))
		case " $* " in *" $port "*) continue ;; esac
		(exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null || { echo "$port"; return 0; }
	done
	echo "run: no free port found" >&2
	return 1
}

case "${CLUSTER:-}" in 0|no|false) CLUSTER= ;; esac
if [ -n "$CLUSTER" ] && [ -z "${REDIS_URL:-}" ]; then
	for tool in redis-server redis-cli; do
		command -v "$tool" >/dev/null || { echo "run: $tool is missing: apt-get install -y redis-server" >&2; exit 1; }
	done
	dir=$(mktemp -d /tmp/sluice-run-XXXXXX)
	ports=() used=""
	for i in 0 1 2 3 4 5; do
		port=$(free_port $used); used="$used $port"
		bus=$(free_port $used); used="$used $bus"
		mkdir "$dir/node-$i"
		redis-server --port "$port" --bind 127.0.0.1 --cluster-enabled yes \
			--cluster-config-file "$dir/node-$i/nodes.conf" --cluster-port "$bus" \
			--cluster-node-timeout 1000 --save "" --appendonly no --dir "$dir/node-$i" \
			--logfile redis.log --daemonize no &
		cluster_pids+=("$!")
		ports+=("$port")
	done
	for i in 0 1 2 3 4 5; do
		for _ in $(seq 1 100); do
			redis-cli -p "${ports[$i]}" ping >/dev/null 2>&1 && break
			sleep 0.05
		done
		redis-cli -p "${ports[$i]}" ping >/dev/null 2>&1 ||
			{ echo "run: cluster node ${ports[$i]} did not start; its log:" >&2; tail -5 "$dir/node-$i/redis.log" >&2; exit 1; }
	done
	# the first three are the primaries, the last three their replicas
	redis-cli --cluster create "127.0.0.1:${ports[0]}" "127.0.0.1:${ports[1]}" "127.0.0.1:${ports[2]}" \
		"127.0.0.1:${ports[3]}" "127.0.0.1:${ports[4]}" "127.0.0.1:${ports[5]}" \
		--cluster-replicas 1 --cluster-yes >"$dir/create.log" 2>&1 ||
		{ echo "run: redis-cli --cluster create failed:" >&2; cat "$dir/create.log" >&2; exit 1; }
	for port in "${ports[@]}"; do
		for _ in $(seq 1 200); do
			redis-cli -p "$port" cluster info 2>/dev/null | grep -q '^cluster_state:ok' && break
			sleep 0.05
		done
		redis-cli -p "$port" cluster info | grep -q '^cluster_state:ok' ||
			{ echo "run: cluster node $port is not cluster_state:ok after 10 s" >&2; exit 1; }
	done
	for port in "${ports[@]:3}"; do
		for _ in $(seq 1 200); do
			redis-cli -p "$port" info replication 2>/dev/null | grep -q '^master_link_status:up' && break
			sleep 0.05
		done
	done
	REDIS_URL="redis://127.0.0.1:${ports[0]}"
	cat >&2 <<MSG
run: private Redis Cluster in $dir (stopped and removed when sluiced exits):
     primaries on ports ${ports[0]} ${ports[1]} ${ports[2]} (pids ${cluster_pids[0]} ${cluster_pids[1]} ${cluster_pids[2]}),
     their replicas on ${ports[3]} ${ports[4]} ${ports[5]}; sluiced gets $REDIS_URL (any node of a cluster).
     In another terminal:

  redis-cli -p ${ports[0]} cluster nodes            # who owns which slots
  redis-cli -p ${ports[0]} cluster keyslot '{839}'  # shard 839's keys are in this slot
  redis-cli -c -p ${ports[0]} hgetall 'sluice:{839}:leaky_bucket_meta:/api/users'  # -c follows MOVED
  kill -9 ${cluster_pids[1]}    # a primary dies: /readyz 503 naming its slots, its replica takes over in ~2-3 s

MSG
fi

if [ -z "${REDIS_URL:-}" ]; then
	command -v redis-server >/dev/null || { echo "run: redis-server is missing: apt-get install -y redis-server" >&2; exit 1; }
	dir=$(mktemp -d /tmp/sluice-run-XXXXXX)
	port=$(free_port) || exit 1
	redis-server --port "$port" --bind 127.0.0.1 --save "" --appendonly no --dir "$dir" \
		--logfile redis.log --daemonize no &
	redis_pid=$!
	for _ in $(seq 1 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && break
		sleep 0.05
	done
	redis-cli -p "$port" ping >/dev/null || { echo "run: redis-server did not start; its log:" >&2; tail -5 "$dir/redis.log" >&2; exit 1; }
	REDIS_URL="redis://127.0.0.1:$port/0"
	echo "run: private redis-server at $REDIS_URL (stopped when sluiced exits)" >&2
fi
# with a cluster, redis-cli -c follows MOVED to the node that owns a key's slot
cli="redis-cli${CLUSTER:+ -c}"
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
  for i in \$(seq 12); do $cli -u '$REDIS_URL' --eval build/lua/leaky_bucket.lua \\
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
