#!/usr/bin/env bash
# sluice admin API load benchmark, run by `make bench` with
#   SLUICED=<sluiced binary> bench/http.sh
#
# 1. Starts a private redis-server and sluiced (--log-level warn, so the access
#    log does not dominate) on free loopback ports, in a temporary directory;
#    PUTs ten rules and gives /api/users some leaky-bucket state.
# 2. Saves sluiced's GET /v1/rules body into a file and starts two nginx
#    (throw-away config in the temporary directory, `daemon off`,
#    `access_log off`, `nginx -p DIR -c CONF -e LOG`, nothing under /etc or /var)
#    serving that file at /v1/rules: one with worker_processes 1, one with 2.
# 3. wrk -t1 -cN -dS --latency, after a short warm-up, in rounds: each round
#    runs every case once (GET /v1/rules on sluiced and on nginx, GET
#    /v1/paths/%2Fapi%2Fusers on sluiced), so background load hits all alike.
#    The summary gives the median of the rounds [min-max] of requests/s and
#    p99, the ratio sluiced / nginx, CPU time per request (from /proc) and the
#    Redis round trips and commands per request (INFO stats, commandstats).
# Figures, not pass/fail: the targets (GET /v1/rules >= 0.5x nginx's rate, p99
# < 5 ms) are reported, not enforced.  Exit status is non-zero only on a real
# error: a server does not start, wrk fails, a response is not 2xx, a socket
# error, sluiced's body differs from the one nginx serves, or sluiced dies or
# logs an error.  See BENCHMARKS.md, "Admin API under load".
#
# 4. Reads during a sweep: HTTP_BENCH_SWEEP_PATHS (100000; 0 skips it) leaky
#    buckets (capacity 100, rate 0.2/s, filled with 100 by the client script,
#    bench/fill_buckets.py) under rule "sweep" (the same parameters), then
#    GET /v1/paths/{one of them} and GET
#    /v1/paths?count=100 at 16 connections, first with the worker draining
#    all of them (max_clock_skew_ms 0: every bucket leaks every 5 s, 20,000
#    drains a second for 100,000), every round, then with it idle
#    (max_clock_skew_ms an hour: nothing is due; its pass moves the due
#    scores an hour ahead, so no busy round can follow it), each once its due
#    backlog is empty; the p99s against
#    their targets (path < 5 ms, listing < 20 ms during the sweep) and the
#    ratio to the idle worker's.
#
# Knobs (environment): HTTP_BENCH_CONNS ("1 16"), HTTP_BENCH_DURATION (3 s a run),
# HTTP_BENCH_REPEAT (3 rounds), HTTP_BENCH_WARMUP (1 s per case, once),
# HTTP_BENCH_SWEEP_PATHS (100000).
set -euo pipefail

: "${SLUICED:?set SLUICED to the sluiced binary}"
CONNS=${HTTP_BENCH_CONNS:-"1 16"}
DURATION=${HTTP_BENCH_DURATION:-3}
REPEAT=${HTTP_BENCH_REPEAT:-3}
WARMUP=${HTTP_BENCH_WARMUP:-1}
SWEEP_PATHS=${HTTP_BENCH_SWEEP_PATHS:-100000}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
NGINX=$(command -v nginx || echo /usr/sbin/nginx)
PATH_ENC=%2Fapi%2Fusers

BENCH_NAME="http bench"
# shellcheck source=bench/lib.sh
. "$ROOT/bench/lib.sh"

require_tools " (BENCH=1 tools/deps.sh installs it)" redis-server redis-cli curl wrk
[ -x "$NGINX" ] || die "nginx not found (BENCH=1 tools/deps.sh installs it)"
[ -x "$SLUICED" ] || die "$SLUICED is not an executable"
for n in $CONNS "$DURATION" "$REPEAT" "$WARMUP" "$SWEEP_PATHS"; do
	[[ $n =~ ^[0-9]+$ ]] || die "HTTP_BENCH_* must be whole numbers (got \"$n\")"
done
if [ "$REPEAT" -lt 1 ] || [ "$DURATION" -lt 1 ]; then
	die "HTTP_BENCH_REPEAT and HTTP_BENCH_DURATION must be >= 1"
fi

bench_init sluice-http-bench
# nginx's workers run as `nobody` when the master is root: they must reach the file
chmod 755 "$TMP"
SLUICED_PID=
declare -A NGINX_PID NGINX_PORT

# shellcheck disable=SC2317 # called by cleanup (lib.sh) on exit
stop_started() {
	local k
	for k in "${!NGINX_PID[@]}"; do
		stop_pid "${NGINX_PID[$k]}"
	done
	stop_pid "$SLUICED_PID"
}

# HTTP status of GET $1 ("000" when nothing answers)
http_status() {
	curl -s -o /dev/null -w '%{http_code}' --max-time 2 "$1" 2>/dev/null || true
}

# start_sluiced [CONFIG]: sluiced on a free port (SLUICED_PORT), with the JSON config file CONFIG when given.
start_sluiced() {
	local port i conf=(--no-config)
	[ -n "${1:-}" ] && conf=(--config "$1")
	for _ in $(seq 10); do
		port=$(free_port)
		"$SLUICED" "${conf[@]}" --redis "redis://127.0.0.1:$REDIS_PORT/0" --listen "127.0.0.1:$port" \
			--log-level warn 2>"$TMP/sluiced.log" &
		SLUICED_PID=$!
		for i in $(seq 50); do
			kill -0 "$SLUICED_PID" 2>/dev/null || break
			if [ "$(http_status "http://127.0.0.1:$port/healthz")" = 200 ]; then
				SLUICED_PORT=$port
				return 0
			fi
			sleep 0.1
		done
		if kill -0 "$SLUICED_PID" 2>/dev/null || ! grep -q 'cannot listen' "$TMP/sluiced.log"; then
			cat "$TMP/sluiced.log" >&2
			die "sluiced did not answer /healthz in 5 s"
		fi
		wait "$SLUICED_PID" 2>/dev/null || true # lost the port: try another one
		SLUICED_PID=
	done
	die "sluiced found no free port"
}

# start_nginx NAME WORKERS FILE: nginx serving FILE at /v1/rules, in $TMP/NAME.
start_nginx() {
	local name=$1 workers=$2 file=$3 dir="$TMP/$1" port i pid
	mkdir -p "$dir"
	for _ in $(seq 10); do
		port=$(free_port)
		cat >"$dir/nginx.conf" <<-EOF
			# throw-away config of sluice's bench/http.sh
			daemon off;
			master_process on;
			worker_processes $workers;
			pid $dir/nginx.pid;
			lock_file $dir/nginx.lock;
			error_log $dir/error.log warn;
			events {
			    worker_connections 1024;
			}
			http {
			    access_log off;
			    sendfile on;
			    # like libmicrohttpd, which keeps a connection as long as the client does
			    keepalive_requests 1000000;
			    client_body_temp_path $dir/body;
			    proxy_temp_path $dir/proxy;
			    fastcgi_temp_path $dir/fastcgi;
			    uwsgi_temp_path $dir/uwsgi;
			    scgi_temp_path $dir/scgi;
			    types { }
			    default_type application/json;
			    server {
			        listen 127.0.0.1:$port;
			        location = /v1/rules {
			            alias $file;
			        }
			    }
			}
		EOF
		"$NGINX" -t -q -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" ||
			{ cat "$dir/error.log" >&2 2>/dev/null || true; die "nginx -t refused $dir/nginx.conf"; }
		"$NGINX" -p "$dir" -c "$dir/nginx.conf" -e "$dir/error.log" 2>>"$dir/stderr.log" &
		pid=$!
		NGINX_PID[$name]=$pid
		for i in $(seq 50); do
			kill -0 "$pid" 2>/dev/null || break
			if [ "$(http_status "http://127.0.0.1:$port/v1/rules")" = 200 ]; then
				NGINX_PORT[$name]=$port
				return 0
			fi
			sleep 0.1
		done
		if kill -0 "$pid" 2>/dev/null || ! grep -qs 'in use' "$dir/error.log" "$dir/stderr.log"; then
			tail -5 "$dir/error.log" "$dir/stderr.log" >&2 2>/dev/null || true
			die "nginx ($name) did not serve /v1/rules in 5 s"
		fi
		wait "$pid" 2>/dev/null || true # lost the port: try another one
		unset "NGINX_PID[$name]"
	done
	die "nginx found no free port"
}

# CPU time (user + system) of processes, all their threads, in clock ticks.
cpu_ticks() {
	local p t=0 s
	local -a f
	for p in "$@"; do
		s=$(cat "/proc/$p/stat" 2>/dev/null) || continue
		read -ra f <<<"${s##*) }" # the fields after the command name: f[0] is field 3
		t=$((t + f[11] + f[12]))  # utime (14) + stime (15), all threads
	done
	echo "$t"
}

# the processes whose CPU counts for a server: nginx master + workers
server_pids() {
	case $1 in
	sluiced) echo "$SLUICED_PID" ;;
	*) echo "${NGINX_PID[$1]}" "$(pgrep -P "${NGINX_PID[$1]}" | tr '\n' ' ')" ;;
	esac
}

server_port() {
	case $1 in
	sluiced) echo "$SLUICED_PORT" ;;
	*) echo "${NGINX_PORT[$1]}" ;;
	esac
}

# Fill /api/users afresh: reset, then 20 entries with the client script on
# key layout 2 (its shard k by lib/shard.lua, as lua/README.md, "Shards",
# shows for redis-cli; the parameters of rule "users", capacity 60, rate 1/s,
# passed explicitly), so the state lives through a run.
fill_users() {
	local code k
	code=$(curl -s -o /dev/null -w '%{http_code}' -X POST "http://127.0.0.1:$SLUICED_PORT/v1/paths/$PATH_ENC/reset")
	[ "$code" = 200 ] || die "POST /v1/paths/$PATH_ENC/reset answered $code"
	k=$(redis-cli -h 127.0.0.1 -p "$REDIS_PORT" EVAL "$(cat "$ROOT/lua/lib/shard.lua") return shard_of(ARGV[1])" 0 /api/users)
	[[ $k =~ ^[0-9]+$ ]] || die "lib/shard.lua: no shard for /api/users ($k)"
	redis-cli -h 127.0.0.1 -p "$REDIS_PORT" --eval "$ROOT/build/lua/leaky_bucket.lua" \
		"sluice:{$k}:leaky_bucket:/api/users" "sluice:{$k}:leaky_bucket_meta:/api/users" \
		"sluice:{$k}:registry:leaky_bucket" "sluice:{$k}:rules" "sluice:{$k}:stats" \
		, /api/users 20 '' '' 60 1 >"$TMP/fill.out" ||
		die "leaky_bucket.lua failed: $(cat "$TMP/fill.out")"
	[ "$(head -1 "$TMP/fill.out")" = 1 ] || die "leaky_bucket.lua did not admit: $(tr '\n' ' ' <"$TMP/fill.out")"
}

# wrk_run URL CONNS SECONDS OUT: sets W_RPS, W_P99 (ms), W_REQS; dies on any error.
wrk_run() {
	local url=$1 c=$2 secs=$3 out=$4 rc=0 line
	wrk -t1 -c"$c" -d"${secs}s" --latency "$url" >"$out" 2>&1 || rc=$?
	[ "$rc" -eq 0 ] || { cat "$out" >&2; die "wrk exited $rc on $url"; }
	line=$(awk '
		function ms(v) {
			if (v ~ /us$/) return v / 1000
			if (v ~ /ms$/) return v + 0
			if (v ~ /m$/) return v * 60000
			if (v ~ /s$/) return v * 1000
			return -1
		}
		/^ *99%/ { p99 = ms($2) }
		/requests in/ { reqs = $1 }
		/^Requests\/sec:/ { rps = $2 }
		/Non-2xx or 3xx responses:/ { bad = $NF }
		/Socket errors:/ { sock = $0 }
		END { printf "%s %s %s %s|%s\n", rps, p99, reqs, bad + 0, sock }' "$out")
	read -r W_RPS W_P99 W_REQS W_BAD <<<"${line%%|*}"
	if [ -z "$W_RPS" ] || [ -z "$W_P99" ] || [ -z "$W_REQS" ] || [ "$W_REQS" -eq 0 ]; then
		cat "$out" >&2
		die "could not read wrk's output for $url"
	fi
	[ "$W_BAD" = 0 ] || { cat "$out" >&2; die "$W_BAD responses were not 2xx/3xx on $url"; }
	[ -z "${line#*|}" ] || { cat "$out" >&2; die "wrk saw socket errors on $url: ${line#*|}"; }
}

# Per request since CONFIG RESETSTAT: "round trips|commands|us in commands| cmd calls ...".
# Round trips are the reads Redis processed (a pipeline arrives as one read);
# commands include those a Lua script calls.
redis_stats() {
	{
		redis-cli -h 127.0.0.1 -p "$REDIS_PORT" info stats
		redis-cli -h 127.0.0.1 -p "$REDIS_PORT" info commandstats
	} | tr -d '\r' | awk -F'[:,=]' -v n="$1" '
		/^total_reads_processed:/ { reads = $2 }
		/^cmdstat_/ { sub(/^cmdstat_/, "", $1); calls[$1] = $3; us += $5; tot += $3 }
		END {
			line = ""
			for (c in calls) if (calls[c] / n >= 0.01) line = line sprintf(" %s %.2f", c, calls[c] / n)
			printf "%.2f|%.2f|%.1f|%s\n", reads / n, tot / n, us / n, line
		}'
}

stat_median() { tr ' ' '\n' | grep . | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }'; }
stat_min() { tr ' ' '\n' | grep . | sort -g | head -1; }
stat_max() { tr ' ' '\n' | grep . | sort -g | tail -1; }
fmt0() { awk -v v="$1" 'BEGIN { printf "%.0f", v }'; }
fmt2() { awk -v v="$1" 'BEGIN { printf "%.2f", v }'; }
div() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", (b > 0 ? a / b : 0) }'; }

TICK_US=$((1000000 / $(getconf CLK_TCK)))

# ---- set-up ------------------------------------------------------------------
start_redis
start_sluiced
BASE="http://127.0.0.1:$SLUICED_PORT"

put_rule() {
	local name=$1 body=$2 code
	code=$(curl -s -o "$TMP/put.out" -w '%{http_code}' -X PUT "$BASE/v1/rules/$name" -d "$body")
	[ "$code" = 201 ] || die "PUT /v1/rules/$name answered $code: $(cat "$TMP/put.out")"
}
put_rule api '{"match":"/api/*","algorithm":"leaky_bucket","capacity":100,"rate":50}'
put_rule users '{"match":"/api/users","algorithm":"leaky_bucket","capacity":60,"rate":1}'
put_rule uploads '{"match":"/api/v2/uploads/*","algorithm":"leaky_bucket","capacity":5,"rate":0.2}'
put_rule search '{"match":"/search*","algorithm":"leaky_bucket","capacity":20,"rate":5}'
put_rule graphql '{"match":"/graphql","algorithm":"leaky_bucket","capacity":50,"rate":25}'
put_rule login '{"match":"/login","algorithm":"sliding_log","limit":5,"window_ms":60000}'
put_rule signup '{"match":"/signup","algorithm":"sliding_log","limit":3,"window_ms":3600000}'
put_rule password-reset '{"match":"/account/password/reset","algorithm":"sliding_log","limit":3,"window_ms":900000}'
put_rule webhooks '{"match":"/hooks/*/deliver","algorithm":"sliding_log","limit":100,"window_ms":1000}'
put_rule reports.export '{"match":"/reports/[0-9]*/export","algorithm":"sliding_log","limit":2,"window_ms":60000}'
fill_users

mkdir -p "$TMP/www"
curl -sf -o "$TMP/www/rules.json" "$BASE/v1/rules" || die "GET /v1/rules failed"
chmod 644 "$TMP/www/rules.json"
nrules=$(grep -o '"name":' "$TMP/www/rules.json" | wc -l)
[ "$nrules" = 10 ] || die "GET /v1/rules lists $nrules rules, expected 10"
code=$(curl -s -o "$TMP/path.json" -w '%{http_code}' "$BASE/v1/paths/$PATH_ENC")
[ "$code" = 200 ] || die "GET /v1/paths/$PATH_ENC answered $code"
# the state records explicit parameters (rule null) and names the rule that matches the path
if ! grep -q '"matching_rule":"users"' "$TMP/path.json" || ! grep -q '"count":20' "$TMP/path.json"; then
	die "GET /v1/paths/$PATH_ENC: not 20 entries under rule users: $(cat "$TMP/path.json")"
fi

start_nginx nginx1 1 "$TMP/www/rules.json"
start_nginx nginx2 2 "$TMP/www/rules.json"

# the same body from both (sluiced's is fetched again: it must not have changed)
curl -s -D "$TMP/h.sluiced" -o "$TMP/b.sluiced" "$BASE/v1/rules"
curl -s -D "$TMP/h.nginx" -o "$TMP/b.nginx" "http://127.0.0.1:${NGINX_PORT[nginx1]}/v1/rules"
cmp -s "$TMP/b.sluiced" "$TMP/b.nginx" || die "nginx serves another /v1/rules body than sluiced answers"
for h in "$TMP/h.sluiced" "$TMP/h.nginx"; do
	grep -qi '^content-type: application/json' "$h" || die "no Content-Type: application/json in $(cat "$h")"
done

echo "== sluice admin API under load: $(date -u +%Y-%m-%dT%H:%M:%SZ)"
print_machine
echo "sluiced: $SLUICED on 127.0.0.1:$SLUICED_PORT (--log-level warn), 10 rules, /api/users under rule \"users\""
echo "nginx: $("$NGINX" -v 2>&1 | sed 's/^nginx version: //'), worker_processes 1 on 127.0.0.1:${NGINX_PORT[nginx1]}," \
	"worker_processes 2 on 127.0.0.1:${NGINX_PORT[nginx2]}"
echo "wrk: $(wrk -v 2>&1 | head -1 | cut -d' ' -f1-2), -t1, --latency; connections: $CONNS; $REPEAT rounds of ${DURATION} s per case, ${WARMUP} s warm-up"
echo "body: GET /v1/rules is $(wc -c <"$TMP/b.sluiced") bytes, the same from sluiced and nginx;" \
	"GET /v1/paths/$PATH_ENC is $(wc -c <"$TMP/path.json") bytes"
echo

# ---- cases -------------------------------------------------------------------
# id: "server|path|connections"
CASES=()
for c in $CONNS; do
	CASES+=("sluiced|/v1/rules|$c" "nginx1|/v1/rules|$c")
	[ "$c" -gt 1 ] && CASES+=("nginx2|/v1/rules|$c")
	CASES+=("sluiced|/v1/paths/$PATH_ENC|$c")
done
declare -A RPS P99 CPU RTRIPS RCALLS RUS RCPU RCMDS

label() {
	local srv=${1%%|*} rest=${1#*|}
	local p=${rest%|*} c=${rest##*|} name
	case $srv in
	sluiced) name="sluiced" ;;
	nginx1) name="nginx (1 worker)" ;;
	nginx2) name="nginx (2 workers)" ;;
	esac
	printf '%-18s GET %-26s c=%-3s' "$name" "$p" "$c"
}

if [ "$WARMUP" -gt 0 ]; then
	for id in "${CASES[@]}"; do
		IFS='|' read -r srv p c <<<"$id"
		[[ $p == /v1/paths/* ]] && fill_users
		wrk_run "http://127.0.0.1:$(server_port "$srv")$p" "$c" "$WARMUP" "$TMP/warmup.out"
	done
fi

for round in $(seq "$REPEAT"); do
	echo "== round $round of $REPEAT"
	for id in "${CASES[@]}"; do
		IFS='|' read -r srv p c <<<"$id"
		[[ $p == /v1/paths/* ]] && fill_users
		read -ra pids <<<"$(server_pids "$srv")"
		redis-cli -h 127.0.0.1 -p "$REDIS_PORT" config resetstat >/dev/null
		t0=$(cpu_ticks "${pids[@]}")
		r0=$(cpu_ticks "$REDIS_PID")
		wrk_run "http://127.0.0.1:$(server_port "$srv")$p" "$c" "$DURATION" "$TMP/wrk.out"
		t1=$(cpu_ticks "${pids[@]}")
		r1=$(cpu_ticks "$REDIS_PID")
		cpu=$(awk -v t=$((t1 - t0)) -v n="$W_REQS" -v u="$TICK_US" 'BEGIN { printf "%.1f", t * u / n }')
		busy=$(awk -v t=$((t1 - t0)) -v s="$DURATION" -v u="$TICK_US" 'BEGIN { printf "%.0f", t * u / 1e6 / s * 100 }')
		RPS[$id]+="$W_RPS "
		P99[$id]+="$W_P99 "
		CPU[$id]+="$cpu "
		extra=""
		if [ "$srv" = sluiced ]; then
			IFS='|' read -r trips calls rus cmds <<<"$(redis_stats "$W_REQS")"
			rcpu=$(awk -v t=$((r1 - r0)) -v n="$W_REQS" -v u="$TICK_US" 'BEGIN { printf "%.1f", t * u / n }')
			RTRIPS[$id]+="$trips "
			RCALLS[$id]+="$calls "
			RUS[$id]+="$rus "
			RCPU[$id]+="$rcpu "
			RCMDS[$id]=${cmds# }
			extra="; redis: $trips round trips/req, $calls commands/req (${cmds# }), $rus us/req in commands, $rcpu us CPU/req"
		fi
		printf '%s %8.0f req/s  p99 %6.2f ms  (%s requests; server CPU %s us/req, %s%% of a CPU%s)\n' \
			"$(label "$id")" "$W_RPS" "$W_P99" "$W_REQS" "$cpu" "$busy" "$extra"
	done
done
echo

# ---- summary -----------------------------------------------------------------
echo "== summary (median of $REPEAT runs of ${DURATION} s [min-max])"
for id in "${CASES[@]}"; do
	printf '%s %8s req/s [%s-%s]  p99 %s ms [%s-%s]  server CPU %s us/req\n' "$(label "$id")" \
		"$(fmt0 "$(stat_median <<<"${RPS[$id]}")")" "$(fmt0 "$(stat_min <<<"${RPS[$id]}")")" \
		"$(fmt0 "$(stat_max <<<"${RPS[$id]}")")" \
		"$(fmt2 "$(stat_median <<<"${P99[$id]}")")" "$(fmt2 "$(stat_min <<<"${P99[$id]}")")" \
		"$(fmt2 "$(stat_max <<<"${P99[$id]}")")" "$(stat_median <<<"${CPU[$id]}")"
done
echo
for c in $CONNS; do
	s="sluiced|/v1/rules|$c"
	srps=$(stat_median <<<"${RPS[$s]}")
	sp99=$(stat_median <<<"${P99[$s]}")
	for n in nginx1 nginx2; do
		id="$n|/v1/rules|$c"
		[ -n "${RPS[$id]:-}" ] || continue
		nrps=$(stat_median <<<"${RPS[$id]}")
		ratio=$(div "$srps" "$nrps")
		# the same ratio round by round (the pairs ran seconds apart)
		read -ra a <<<"${RPS[$s]}"
		read -ra b <<<"${RPS[$id]}"
		per=""
		for i in "${!a[@]}"; do per+="$(div "${a[i]}" "${b[i]}") "; done
		verdict=$(awk -v r="$ratio" 'BEGIN { print (r >= 0.5 ? "met" : "NOT met") }')
		[ "$n" = nginx1 ] && w="1 worker" || w="2 workers"
		echo "RATIO GET /v1/rules c=$c: sluiced / nginx ($w) = $ratio (rounds: ${per% }); target >= 0.5: $verdict"
	done
	verdict=$(awk -v p="$sp99" 'BEGIN { print (p < 5 ? "met" : "NOT met") }')
	echo "P99   GET /v1/rules c=$c: sluiced $(fmt2 "$sp99") ms; target < 5 ms: $verdict"
	s="sluiced|/v1/paths/$PATH_ENC|$c"
	echo "P99   GET /v1/paths/$PATH_ENC c=$c: sluiced $(fmt2 "$(stat_median <<<"${P99[$s]}")") ms (no target)"
done
for id in "${CASES[@]}"; do
	[ "${id%%|*}" = sluiced ] || continue
	IFS='|' read -r srv p c <<<"$id"
	echo "REDIS GET $p c=$c: per request $(stat_median <<<"${RTRIPS[$id]}") round trips," \
		"$(stat_median <<<"${RCALLS[$id]}") commands (${RCMDS[$id]}; with those a script calls)," \
		"$(stat_median <<<"${RUS[$id]}") us in commands, $(stat_median <<<"${RCPU[$id]}") us of redis-server CPU"
done

kill -0 "$SLUICED_PID" 2>/dev/null || die "sluiced died during the benchmark"
if grep -q 'level=error' "$TMP/sluiced.log"; then
	grep 'level=error' "$TMP/sluiced.log" | tail -5 >&2
	die "sluiced logged errors"
fi

# ---- reads during a sweep -------------------------------------------------------
if [ "$SWEEP_PATHS" -gt 0 ]; then
	echo
	echo "== reads during a sweep: $SWEEP_PATHS leaky buckets (capacity 100, rate 0.2/s, 100 entries), c=16"
	/usr/bin/python3 "$ROOT/bench/fill_buckets.py" "$REDIS_PORT" "$ROOT/build/lua" "$SWEEP_PATHS" 100 0.2 100 /sweep/ ||
		die "bench/fill_buckets.py failed"
	# idle: a skew horizon of an hour, so nothing is due (one pass finds that); busy: horizon 0,
	# every bucket leaks every 5 s at Redis time: $SWEEP_PATHS / 5 drains a second, once caught up
	printf '{"max_clock_skew_ms": 3600000}\n' >"$TMP/idle.json"
	printf '{"max_clock_skew_ms": 0}\n' >"$TMP/busy.json"
	declare -A SW_P99 SW_RPS SW_CPU
	# Every busy round before the idle ones: an idle worker's pass moves each due score it
	# meets an hour ahead (its skew horizon), so a busy worker after it finds nothing due
	# for an hour (the round-2 busy run drained nothing and the bench stopped).
	for mode in busy idle; do
		for round in $(seq "$REPEAT"); do
			stop_pid "$SLUICED_PID"
			start_sluiced "$TMP/$mode.json"
			# the paths' rule, as an operator has one (each path's recorded parameters compared with it)
			code=$(curl -s -o "$TMP/put.out" -w '%{http_code}' -X PUT "http://127.0.0.1:$SLUICED_PORT/v1/rules/sweep" \
				-d '{"match":"/sweep/*","algorithm":"leaky_bucket","capacity":100,"rate":0.2}')
			[ "$code" = 201 ] || [ "$code" = 200 ] || die "PUT /v1/rules/sweep answered $code: $(cat "$TMP/put.out")"
			# caught up: the drain's due backlog empty (the busy one first drains what came due meanwhile)
			for _ in $(seq 300); do
				w=$(curl -s "http://127.0.0.1:$SLUICED_PORT/v1/worker")
				b=$(grep -o '"due_backlog":[0-9]*' <<<"$w" | head -1 | cut -d: -f2)
				[ "${b:-1}" = 0 ] && break
				sleep 0.1
			done
			d0=$(curl -s "http://127.0.0.1:$SLUICED_PORT/v1/worker" | grep -o '"drained":[0-9]*' | head -1 | cut -d: -f2)
			t0=$(cpu_ticks "$REDIS_PID")
			for what in path list; do
				[ $what = path ] && url="http://127.0.0.1:$SLUICED_PORT/v1/paths/%2Fsweep%2F7" ||
					url="http://127.0.0.1:$SLUICED_PORT/v1/paths?count=100"
				s0=$(cpu_ticks "$SLUICED_PID")
				wrk_run "$url" 16 "$DURATION" "$TMP/wrk.out"
				s1=$(cpu_ticks "$SLUICED_PID")
				cpu=$(awk -v t=$((s1 - s0)) -v n="$W_REQS" -v u="$TICK_US" 'BEGIN { printf "%.1f", t * u / n }')
				SW_P99[$mode-$what]+="$W_P99 "
				SW_RPS[$mode-$what]+="$W_RPS "
				SW_CPU[$mode-$what]+="$cpu "
				printf 'round %s  worker %-4s GET %-24s c=16 %8.0f req/s  p99 %6.2f ms  sluiced CPU %s us/req\n' "$round" "$mode" \
					"$([ $what = path ] && echo /v1/paths/%2Fsweep%2F7 || echo '/v1/paths?count=100')" "$W_RPS" "$W_P99" "$cpu"
			done
			t1=$(cpu_ticks "$REDIS_PID")
			d1=$(curl -s "http://127.0.0.1:$SLUICED_PORT/v1/worker" | grep -o '"drained":[0-9]*' | head -1 | cut -d: -f2)
			echo "         worker $mode: drained $((d1 - d0)) entries meanwhile ($(div $((d1 - d0)) $((2 * DURATION)))/s)," \
				"redis-server CPU $(awk -v t=$((t1 - t0)) -v s=$((2 * DURATION)) -v u="$TICK_US" 'BEGIN { printf "%.0f", t * u / 1e6 / s * 100 }')%"
			[ $mode = busy ] && [ $((d1 - d0)) -le 0 ] && die "the busy worker drained nothing"
			[ $mode = idle ] && [ $((d1 - d0)) -ne 0 ] && die "the idle worker drained $((d1 - d0)) entries"
		done
	done
	for what in path list; do
		ip=$(stat_median <<<"${SW_P99[idle-$what]}")
		bp=$(stat_median <<<"${SW_P99[busy-$what]}")
		ir=$(stat_median <<<"${SW_RPS[idle-$what]}")
		br=$(stat_median <<<"${SW_RPS[busy-$what]}")
		[ $what = path ] && target=5 || target=20
		verdict=$(awk -v p="$bp" -v t="$target" 'BEGIN { print (p < t ? "met" : "NOT met") }')
		echo "SWEEP GET $([ $what = path ] && echo '/v1/paths/{path}' || echo '/v1/paths?count=100') c=16:" \
			"p99 $(fmt2 "$bp") ms during the sweep [$(fmt2 "$(stat_min <<<"${SW_P99[busy-$what]}")")-$(fmt2 "$(stat_max <<<"${SW_P99[busy-$what]}")")]," \
			"$(fmt2 "$ip") ms with the worker idle (ratio $(div "$bp" "$ip")); $(fmt0 "$br") req/s vs $(fmt0 "$ir")" \
			"(ratio $(div "$br" "$ir")); sluiced CPU $(stat_median <<<"${SW_CPU[busy-$what]}") us/req;" \
			"target p99 < $target ms: $verdict"
	done
	kill -0 "$SLUICED_PID" 2>/dev/null || die "sluiced died during the sweep part"
	if grep -q 'level=error' "$TMP/sluiced.log"; then
		grep 'level=error' "$TMP/sluiced.log" | tail -5 >&2
		die "sluiced logged errors during the sweep part"
	fi
fi

exit 0
