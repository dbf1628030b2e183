#!/usr/bin/env bash
# The cost of lua/lib/shard.lua per script call, run by `make bench` (or
# alone, from the repository root): the shard of a 20-byte and a 200-byte
# path, against the other ways to compute CRC16 in Redis's Lua 5.1 that
# lib/shard.lua's comment weighs.
#
# Each variant is one script, called by redis-benchmark with EVALSHA on a
# private redis-server; the figure is Redis's own time per call
# (INFO commandstats, usec_per_call of evalsha, which leaves the network
# out) less that of a script that only returns #ARGV[1] (the call's
# overhead). Median of BENCH_SHARD_REPEAT (5) runs of BENCH_SHARD_CALLS
# (20000) calls each, and the fastest run (the machine's other jobs only
# ever add time). Figures, not pass/fail; the exit status is non-zero
# only when Redis does not start or a variant computes a wrong shard.
set -euo pipefail

CALLS=${BENCH_SHARD_CALLS:-20000}
REPEAT=${BENCH_SHARD_REPEAT:-5}
FRAGMENT=${SLUICE_SRCDIR:-.}/lua/lib/shard.lua

for tool in redis-server redis-cli redis-benchmark; do
	command -v "$tool" >/dev/null || { echo "bench: $tool not found" >&2; exit 1; }
done
[ -r "$FRAGMENT" ] || { echo "bench: cannot read $FRAGMENT (run from the repository root)" >&2; exit 1; }

TMP=$(mktemp -d "${TMPDIR:-/tmp}/sluice-bench-shard.XXXXXX")
REDIS_PID=
cleanup() {
	if [ -n "$REDIS_PID" ]; then
		kill "$REDIS_PID" 2>/dev/null || true
		wait "$REDIS_PID" 2>/dev/null || true
	fi
	rm -rf "$TMP"
}
trap cleanup EXIT

PORT=
for _ in $(seq 20); do
	port=$((20000 + RANDOM % 40000))
	redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no --dir "$TMP" \
		--logfile "$TMP/redis.log" --daemonize no &
	REDIS_PID=$!
	for _ in $(seq 100); do
		redis-cli -p "$port" ping >/dev/null 2>&1 && { PORT=$port; break 2; }
		kill -0 "$REDIS_PID" 2>/dev/null || break
		sleep 0.05
	done
	kill "$REDIS_PID" 2>/dev/null || true
	wait "$REDIS_PID" 2>/dev/null || true
	REDIS_PID=
done
[ -n "$PORT" ] || { echo "bench: redis-server did not start" >&2; exit 1; }
cli() { redis-cli -p "$PORT" "$@"; }

# The alternatives, on the whole string (the paths have no braces): CRC16/XMODEM
# of s[i..j], as lib/shard.lua's keyslot computes it.
BITWISE='
local function crc16(s, i, j)
  local crc = 0
  for k = i, j do
    crc = bit.bxor(crc, string.byte(s, k) * 256)
    for _ = 1, 8 do
      crc = crc * 2
      if crc >= 65536 then crc = bit.bxor(crc - 65536, 0x1021) end
    end
  end
  return crc
end'
COMPUTED='
local function crc16(s, i, j)
  local t = {}
  for n = 0, 255 do
    local c = n * 256
    for _ = 1, 8 do
      c = c * 2
      if c >= 65536 then c = bit.bxor(c - 65536, 0x1021) end
    end
    t[n] = c
  end
  local crc = 0
  for k = i, j do
    local lo = crc % 256
    crc = bit.bxor(lo * 256, t[bit.bxor((crc - lo) / 256, string.byte(s, k))])
  end
  return crc
end'

# (associative: the variants' names are their labels)
declare -A BODY=(
	[overhead]='return #ARGV[1]'
	[lib/shard.lua]="$(cat "$FRAGMENT")
return shard_of(ARGV[1])"
	[bitwise]="$BITWISE
return crc16(ARGV[1], 1, #ARGV[1]) % 16384 % 1024"
	[computed_table]="$COMPUTED
return crc16(ARGV[1], 1, #ARGV[1]) % 16384 % 1024"
)
VARIANTS="overhead lib/shard.lua bitwise computed_table"

# "median min" of usec_per_call of evalsha over REPEAT runs
per_call() {
	local sha=$1 path=$2 r runs=()
	for r in $(seq "$REPEAT"); do
		cli config resetstat >/dev/null
		redis-benchmark -p "$PORT" -n "$CALLS" -c 4 -q EVALSHA "$sha" 0 "$path" >/dev/null
		runs+=("$(cli info commandstats | sed -n 's/^cmdstat_evalsha:.*usec_per_call=\([0-9.]*\).*/\1/p')")
	done
	printf '%s\n' "${runs[@]}" | sort -g | awk -v n="$REPEAT" \
		'NR == 1 { min = $1 } NR == int((n + 1) / 2) { med = $1 } END { print med, min }'
}

echo "shard of a path in Lua: Redis's time per EVALSHA in us, median (min) of $REPEAT x $CALLS calls;"
echo "after the '|': less the overhead's median"
printf '%-16s %16s %16s | %8s %8s\n' variant 20-byte 200-byte 20-byte 200-byte
BASE20= BASE200=
for v in $VARIANTS; do
	sha=$(cli script load "${BODY[$v]}")
	out=()
	for n in 20 200; do
		path=/$(head -c $((n - 1)) /dev/zero | tr '\0' 'p')
		if [ "$v" != overhead ]; then
			got=$(cli evalsha "$sha" 0 "$path")
			want=$(cli evalsha "$(cli script load "${BODY[lib/shard.lua]}")" 0 "$path")
			[ "$got" = "$want" ] || { echo "bench: $v computes shard $got for a $n-byte path, lib/shard.lua $want" >&2; exit 1; }
		fi
		out+=($(per_call "$sha" "$path"))
	done
	[ "$v" = overhead ] && BASE20=${out[0]} BASE200=${out[2]}
	awk -v v="$v" -v a="${out[0]}" -v am="${out[1]}" -v b="${out[2]}" -v bm="${out[3]}" \
		-v a0="$BASE20" -v b0="$BASE200" \
		'BEGIN { printf "%-16s %7s (%6s) %7s (%6s) | %8.1f %8.1f\n", v, a, am, b, bm, a - a0, b - b0 }'
done
