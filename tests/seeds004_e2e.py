#!/usr/bin/python3
"""Seed 004's three other limiters, as the article writes them, kept by sluice (issue 14).

Article 004 (../shared/seeds/004_6b03a9db00cb4af2.txt) writes, through Redisson:
  - a sliding window: sorted set slidingWindowRateLimiter:<path>, member =
    score = the client's ms, the request added before the count is checked
    (rejected requests stay), under an RLock slidingWindowRateLimiter:LOCK:<path>;
  - a fixed window: RAtomicLong fixedWindowRateLimiter:<path>, INCR, then
    EXPIRE in a second call on the first hit, DECR of a rejected one, under an
    RLock fixedWindowRateLimiter:LOCK:<path> (a hash, as Redisson's locks are);
  - a token bucket that is Redisson's RRateLimiter: trySetRate(OVERALL, limit,
    rate, SECONDS) then tryAcquire() on TokenBucketRateLimiter:<path>.
The clients here do what those Java calls send to Redis, with redis-py; the
RRateLimiter's acquire and trySetRate are Lua scripts written from
Redisson's RedissonRateLimiter.java (>= 3.35: {name}:value, {name}:permits,
members struct.pack('Bc0I', #id, id, permits), the client's clock).

Part 1 (virtual time, sluice's batch job called directly): a long random
trace of several limiters and clients whose clocks lag Redis by up to the skew
horizon, run twice in lockstep in two databases, once alone and once with
redisson_reclaim.lua between the calls: every reply (admitted, or the delay
Redisson answers) and the value and permits after every call are the same;
the permits never hold more than the rate, and with the worker none older
than its horizon's interval; idle limiters are reclaimed to what a fresh
trySetRate gives.
Part 2 (a real sluiced with examples/seeds.json's layouts and rules, real
time): the three limiters found by SCAN (the lock hashes left out), pruned,
repaired and reclaimed; the admin API's state and reset of the RRateLimiter.

Usage: tests/seeds004_e2e.py SLUICED LUA_DIR   (run by `make test`)
Prints one line per check and "seeds004_e2e: N passed, M failed"; exit 1 on a failure.
"""
import json
import os
import random
import shutil
import sys
import tempfile
import time

import redis

import conformance as cf

SRC = os.path.dirname(os.path.abspath(__file__))
SKEW = 10000  # the batch scripts' skew horizon (lib/skew.lua's default)

# ---- Redisson's RRateLimiter, as its scripts act on Redis ----------------------------

# trySetRate(type, rate, interval, unit) with no keepAliveTime: the settings, if none yet.
TRY_SET_RATE = """
redis.call('HSETNX', KEYS[1], 'rate', ARGV[1])
redis.call('HSETNX', KEYS[1], 'interval', ARGV[2])
redis.call('HSETNX', KEYS[1], 'keepAliveTime', ARGV[4])
local set = redis.call('HSETNX', KEYS[1], 'type', ARGV[3])
if set == 1 and tonumber(ARGV[4]) > 0 then redis.call('PEXPIRE', KEYS[1], ARGV[4]) end
return set
"""

# tryAcquire(permits) of an OVERALL limiter: KEYS hash, {name}:value, {name}:permits;
# ARGV permits, the client's ms, the random id.  nil = acquired, else the ms to wait.
ACQUIRE = """
local s = redis.call('HMGET', KEYS[1], 'rate', 'interval', 'type')
assert(s[1] and s[2] and s[3], 'RateLimiter is not initialized')
local rate, interval, n, now = tonumber(s[1]), tonumber(s[2]), tonumber(ARGV[1]), tonumber(ARGV[2])
assert(rate >= n, 'Requested permits amount cannot exceed defined rate')
local function held(list)
  local total = 0
  for _, m in ipairs(list) do
    local _, p = struct.unpack('Bc0I', m)
    total = total + p
  end
  return total
end
local function take()
  redis.call('ZADD', KEYS[3], ARGV[2], struct.pack('Bc0I', string.len(ARGV[3]), ARGV[3], ARGV[1]))
  redis.call('DECRBY', KEYS[2], ARGV[1])
end
local wait
local cur = redis.call('GET', KEYS[2])
if cur then
  local back = held(redis.call('ZRANGEBYSCORE', KEYS[3], 0, now - interval))
  if back > 0 then
    redis.call('ZREMRANGEBYSCORE', KEYS[3], 0, now - interval)
    if tonumber(cur) + back > rate then
      cur = rate - held(redis.call('ZRANGE', KEYS[3], 0, -1))
    else
      cur = tonumber(cur) + back
    end
    redis.call('SET', KEYS[2], cur)
  end
  if tonumber(cur) < n then
    local first = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    wait = 3 + interval - (now - tonumber(first[2]))
  else
    take()
  end
else
  redis.call('SET', KEYS[2], s[1])
  take()
end
local keep = redis.call('HGET', KEYS[1], 'keepAliveTime')
if keep and tonumber(keep) > 0 then
  redis.call('PEXPIRE', KEYS[1], keep)
  redis.call('PEXPIRE', KEYS[2], keep)
  redis.call('PEXPIRE', KEYS[3], keep)
else
  local ttl = redis.call('PTTL', KEYS[1])
  if ttl > 0 then
    redis.call('PEXPIRE', KEYS[2], ttl)
    redis.call('PEXPIRE', KEYS[3], ttl)
  end
end
return wait
"""


def rkeys(name):
    """Redisson's keys of RRateLimiter `name` (bytes): hash, {name}:value, {name}:permits (suffixName)."""
    base = name if b"{" in name else b"{" + name + b"}"
    return [name, base + b":value", base + b":permits"]


class Redisson:
    """The calls article 004's TokenBucketRateLimiter makes, on one connection."""

    def __init__(self, r):
        self.r = r
        self.set_rate = r.register_script(TRY_SET_RATE)
        self.acquire = r.register_script(ACQUIRE)

    def try_set_rate(self, name, rate, interval_ms, keep_alive_ms=0):
        return self.set_rate(keys=[name], args=[rate, interval_ms, 0, keep_alive_ms])

    def try_acquire(self, name, permits, now_ms, rid):
        """None when acquired, else the delay Redisson answers (ms)."""
        return self.acquire(keys=rkeys(name), args=[permits, now_ms, rid])


def permits_of(r, name):
    """{member: score} and the permits they hold."""
    z = r.zrange(rkeys(name)[2], 0, -1, withscores=True)
    total = 0
    for m, _ in z:
        assert len(m) == 1 + m[0] + 4, repr(m)
        total += int.from_bytes(m[1 + m[0]:], "little")
    return z, total


# ---- part 1: the random trace, with the worker's job and without ----------------------

LIMITERS = [  # name, rate (permits per interval), interval ms, keepAliveTime ms
    (b"TokenBucketRateLimiter:/test", 10, 1000, 0),
    (b"TokenBucketRateLimiter:/api/orders", 3, 250, 0),
    (b"TokenBucketRateLimiter:{user7}/upload", 50, 5000, 3600000),
    (b"TokenBucketRateLimiter:/burst", 1, 100, 0),
]


def job_call(script, now, skew):
    """The job over every limiter of LIMITERS at `now`, with horizon `skew` (None: the script's default)."""
    return script(keys=[b"TokenBucketRateLimiter:\x01noregistry"] + [k for l in LIMITERS for k in rkeys(l[0])],
                  args=[now] + [l[0][len(b"TokenBucketRateLimiter:"):] for l in LIMITERS]
                  + ([] if skew is None else [skew]))


def trace(lua_dir, r0, r1, seed, steps, skew):
    """One random trace on r0 (Redisson alone) and r1 (with the job at horizon `skew`, None: 10000 ms,
    the script's default); returns its figures."""
    rng = random.Random(seed)
    reclaim = r1.register_script(open(os.path.join(lua_dir, "redisson_reclaim.lua")).read())
    alone, kept = Redisson(r0), Redisson(r1)
    horizon = SKEW if skew is None else skew
    lags = sorted({0, 1, horizon // 4, horizon})  # the clients' clocks behind Redis, ms
    redis_ms = 1700000000000
    stats = {"calls": 0, "acquired": 0, "denied": 0, "jobs": 0, "reclaimed": 0, "job_first": 0, "edges": 0, "idle_gaps": 0}
    same = ok_bound = ok_horizon = True
    first_diff = ""
    for name, rate, interval, keep in LIMITERS:
        for c in (alone, kept):
            c.try_set_rate(name, rate, interval, keep)
    for step in range(steps):
        # time goes on irregularly: mostly a few ms (often none), sometimes an idle gap
        u = rng.random()
        if u < 0.02:
            redis_ms += rng.randint(1000, 12000)
            stats["idle_gaps"] += 1
        elif u < 0.5:
            redis_ms += rng.choice((0, 0, 1, 2, 5, 10, 40, 99, 100, 101, 250))
        else:
            redis_ms += rng.randint(0, 300)
        name, rate, interval, _ = LIMITERS[rng.randrange(len(LIMITERS))]
        lag = rng.choice(lags)
        job = rng.random() < 0.3
        z, _ = permits_of(r0, name)
        if z and rng.random() < 0.1:
            # the edge of the interval: the job, then a client as far behind as the horizon
            # allows, 1 ms before or at the ms the oldest permit leaves
            t = int(z[0][1]) + interval + horizon + rng.choice((-1, 0))
            if t >= redis_ms:
                redis_ms, job, lag = t, True, horizon
                stats["edges"] += 1
        if job:
            # the worker's tick: the batch of every limiter, at Redis time
            rep = job_call(reclaim, redis_ms, skew)
            stats["jobs"] += 1
            stats["reclaimed"] += rep[0]
            if rep[1] != rep[0] or rep[2:] != [len(LIMITERS), 0]:
                same = False
                first_diff = first_diff or "job reply %r at step %d" % (rep, step)
            for l in LIMITERS:
                z, _ = permits_of(r1, l[0])
                if z and z[0][1] <= redis_ms - horizon - l[2]:
                    ok_horizon = False
                    first_diff = first_diff or "%r keeps %r at %d" % (l[0], z[0], redis_ms)
            if lag != horizon or rng.random() < 0.5:
                continue
        now = redis_ms - lag
        n = rng.choice((1, 1, 1, 2, rate)) if rate > 1 else 1
        n = min(n, rate)
        rid = rng.getrandbits(128).to_bytes(16, "little")
        if (r0.get(rkeys(name)[1]), permits_of(r0, name)) != (r1.get(rkeys(name)[1]), permits_of(r1, name)):
            stats["job_first"] += 1  # the job credited or reclaimed before this call: it finds another state
        a = alone.try_acquire(name, n, now, rid)
        b = kept.try_acquire(name, n, now, rid)
        stats["calls"] += 1
        stats["acquired" if a is None else "denied"] += 1
        sa = (r0.get(rkeys(name)[1]), permits_of(r0, name))
        sb = (r1.get(rkeys(name)[1]), permits_of(r1, name))
        if a != b or sa != sb:
            same = False
            first_diff = first_diff or "step %d %r n=%d now=%d: %r %r / %r %r" % (step, name, n, now, a, sa, b, sb)
        if sa[1][1] > rate or sb[1][1] > rate:
            ok_bound = False
    return stats, same, ok_bound, ok_horizon, first_diff, redis_ms


def run_trace(lua_dir, r):
    r0 = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=2)
    r1 = redis.Redis(port=r.connection_pool.connection_kwargs["port"], db=3)
    total = {}
    for seed, skew in ((1, None), (2, 300), (3, 0)):
        r0.flushdb()
        r1.flushdb()
        stats, same, bound, horizon, diff, end_ms = trace(lua_dir, r0, r1, seed, 4000, skew)
        for k, v in stats.items():
            total[k] = total.get(k, 0) + v
        print("seeds004_e2e: trace %d (horizon %s ms): %s" % (seed, skew if skew is not None else SKEW,
                                                             json.dumps(stats)))
        cf.check("trace %d: %d calls, every reply and every value and permit set the same with the job and "
                 "without" % (seed, stats["calls"]), same and stats["acquired"] > 0 and stats["denied"] > 0
                 and stats["reclaimed"] > 0 and stats["job_first"] > 100, diff)
        cf.check("trace %d: the permits never hold more than the rate, alone or with the job" % seed, bound)
        cf.check("trace %d: after each job no permit older than its horizon's interval is left" % seed, horizon, diff)
        # the clients stop: the job at the end reclaims every limiter, the hashes stay
        reclaim = r1.register_script(open(os.path.join(lua_dir, "redisson_reclaim.lua")).read())
        later = end_ms + SKEW + 5000 + 1
        present = sum(r1.exists(rkeys(l[0])[1]) for l in LIMITERS)
        rep = job_call(reclaim, later, skew)
        left0 = sorted(r0.keys())
        left1 = sorted(r1.keys())
        cf.check("trace %d: idle for their interval, every limiter is reclaimed (value and permits), its hash "
                 "stays" % seed, rep[0] == present
                 and left1 == sorted(l[0] for l in LIMITERS), "%r %r" % (rep, left1))
        cf.check("trace %d: without the job they live on (%d keys)" % (seed, len(left0)),
                 left0 == sorted(k for l in LIMITERS for k in rkeys(l[0])), repr(left0))
        # and the next call sees what it sees alone: a fresh limiter either way
        rid = b"\x01" * 16
        for name, rate, interval, _ in LIMITERS:
            a = Redisson(r0).try_acquire(name, rate, later, rid)
            b = Redisson(r1).try_acquire(name, rate, later, rid)
            if a is not None or b is not None or r0.get(rkeys(name)[1]) != r1.get(rkeys(name)[1]) \
                    or permits_of(r0, name) != permits_of(r1, name):
                cf.check("trace %d: %r after the reclaim is what it is alone" % (seed, name), False,
                         "%r %r" % (a, b))
                break
        else:
            cf.check("trace %d: after the reclaim, the whole rate is acquired at once, as alone" % seed, True)
    print("seeds004_e2e: traces: %s" % json.dumps(total))
    return total


def run_edges(lua_dir, r):
    """The job on states Redisson's own calls leave or refuse, checked one by one."""
    r.flushdb()
    reclaim = r.register_script(open(os.path.join(lua_dir, "redisson_reclaim.lua")).read())
    c = Redisson(r)
    name = b"TokenBucketRateLimiter:/e"
    h, v, p = rkeys(name)

    def job(now):
        return reclaim(keys=[b"TokenBucketRateLimiter:\x01noregistry", h, v, p], args=[now, b"/e"])

    c.try_set_rate(name, 5, 1000)
    cf.check("a limiter with no value yet: nothing to do", job(10 ** 6) == [0, 0, 1, 0] and r.exists(h) == 1)
    for i, t in enumerate((1000, 1200, 1400)):
        c.try_acquire(name, 1 + i, t, bytes([i]) * 16)
    # value 5 - 6 < 0 is refused by Redisson (3 > 5 - 3 = 2 left): 1, 2 taken, 3 denied
    cf.check("Redisson took 1 and 2 of 5, denied 3", r.get(v) == b"2" and permits_of(r, name)[1] == 3,
             repr(r.get(v)))
    cf.check("the job at horizon 1999 (now 11999) gives back nothing: the permit of 1000 is in its interval",
             job(11999) == [0, 0, 1, 0] and r.get(v) == b"2")
    cf.check("at horizon 2000 the permit of 1000 (1 permit) has left, that of 1200 not: value 3",
             job(12000) == [0, 0, 1, 0] and r.get(v) == b"3" and permits_of(r, name)[1] == 2)
    cf.check("the value keeps no TTL it had none of (SET KEEPTTL)", r.pttl(v) == -1)
    cf.check("at horizon 2200 the permit of 1200 (2) is back: value 5 with no permit is a fresh limiter, deleted",
             job(12200) == [1, 1, 1, 0] and r.exists(v, p) == 0 and r.exists(h) == 1)
    cf.check("the job again: nothing (idempotent)", job(12200) == [0, 0, 1, 0] and r.exists(v, p) == 0)
    # a value above what the permits account for (release() added to it): credited as Redisson does, capped
    c.try_acquire(name, 2, 20000, b"\x07" * 16)
    r.set(v, 5)  # as release(2) leaves it: min(3 + 2, 5)
    cf.check("value 5 and a permit of 2 left at 20000: at horizon 21000 the rate less the permits left",
             job(31000) == [1, 1, 1, 0] and r.exists(v, p) == 0)
    # a value below the rate less the permits (the rate raised by hand): credited, not reclaimed
    c.try_acquire(name, 1, 40000, b"\x08" * 16)
    r.hset(h, "rate", 8)
    cf.check("the rate raised to 8 by hand (value 4, 1 out): credited to 5, kept (Redisson gives 5, not 8)",
             job(51000) == [0, 0, 1, 0] and r.get(v) == b"5" and r.zcard(p) == 0)
    r.hset(h, "rate", 5)
    r.delete(v, p)
    # PER_CLIENT (type 1) and a hash that is not a limiter: skipped, untouched
    r.hset(h, "type", 1)
    r.set(v, 1)
    cf.check("a PER_CLIENT limiter is skipped", job(10 ** 9) == [0, 0, 1, 1] and r.get(v) == b"1")
    r.delete(h)
    r.hset(h, "owner", "x")
    cf.check("a hash with no rate settings is skipped", job(10 ** 9) == [0, 0, 1, 1] and r.get(v) == b"1")
    r.delete(h, v)
    c.try_set_rate(name, 5, 1000)
    r.zadd(p, {b"\x00\x00": 1})
    r.set(v, 4)
    rep = job(10 ** 9)
    cf.check("a member Redisson could not read either fails that limiter alone, naming it",
             rep[:5] == [0, 0, 1, 0, 1] and rep[5] == b"/e" and r.get(v) == b"4", repr(rep))


# ---- part 2: a real sluiced with examples/seeds.json ---------------------------------


def rlock(r, key):
    """Redisson's RLock.lock(leaseTime): a hash <client id>:<thread> -> 1 with a TTL."""
    r.hset(key, "7a3f0c2e-1b4d-4e5f-9a6b-0c1d2e3f4a5b:1", 1)
    r.pexpire(key, 60000)


def runlock(r, key):
    r.delete(key)


def sliding_hit(r, path, limit, window_s, now_ms):
    """SlidingWindowRateLimiter.triggerLimit: True when limited (the article's return value)."""
    key, lock = "slidingWindowRateLimiter:" + path, "slidingWindowRateLimiter:LOCK:" + path
    rlock(r, lock)
    try:
        r.zremrangebyscore(key, 0, "(%d" % (now_ms - window_s * 1000))  # removeRangeByScore(0, true, start, false)
        r.zadd(key, {str(now_ms): now_ms})
        return r.zcard(key) > limit
    finally:
        runlock(r, lock)


def fixed_hit(r, path, limit, window_s, crash=False):
    """FixedWindowRateLimiter.triggerLimit: True when limited; `crash`: dies between INCR and EXPIRE."""
    key, lock = "fixedWindowRateLimiter:" + path, "fixedWindowRateLimiter:LOCK:" + path
    rlock(r, lock)
    count = r.incr(key)
    if count == 1:
        if crash:
            return False  # the lock's lease ends it; the counter has no TTL
        r.pexpire(key, window_s * 1000)
    limited = count > limit
    if limited:
        r.decr(key)
    runlock(r, lock)
    return limited


def wait_for(pred, timeout):
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        if pred():
            return True
        time.sleep(0.02)
    return pred()


def layout_status(port, name):
    st, body = cf.http(port, "GET", "/v1/worker")
    return json.loads(body).get("layouts", {}).get(name) if st == 200 else None


def run_daemon(r, sluiced, tmp):
    r.flushall()
    seeds = json.load(open(os.path.join(SRC, "..", "examples", "seeds.json")))
    port = cf.free_port()
    skew = 1000
    conf = dict(seeds, redis="redis://127.0.0.1:%d/0" % r.connection_pool.connection_kwargs["port"],
                listen="127.0.0.1:%d" % port, prune_interval_ms=100, max_clock_skew_ms=skew)
    d, log = cf.spawn_sluiced(sluiced, tmp, "seeds004", conf)
    rc = None
    try:
        cf.wait_ready(port)
        # the article's clients, beside the running daemon: 20 at once on /test of each
        now = int(time.time() * 1000)
        limited = [sliding_hit(r, "/test", 10, 1, now) for _ in range(20)]
        cf.check("sliding window, 20 at one ms: the same member, counted once (the article's collapse): none limited",
                 limited == [False] * 20 and r.zcard("slidingWindowRateLimiter:/test") == 1)
        limited = [sliding_hit(r, "/test", 10, 1, now + i) for i in range(1, 20)]
        cf.check("sliding window, 19 more ms: 9 admitted, then limited, and the refused ones stay in the log",
                 limited == [False] * 9 + [True] * 10 and r.zcard("slidingWindowRateLimiter:/test") == 20)
        limited = [fixed_hit(r, "/ok", 10, 60) for _ in range(20)]
        cf.check("fixed window, 20 calls: 10 admitted, 10 limited, the counter 10 with a 60 s TTL",
                 limited == [False] * 10 + [True] * 10 and r.get("fixedWindowRateLimiter:/ok") == b"10"
                 and 59000 < r.pttl("fixedWindowRateLimiter:/ok") <= 60000)
        limited = [fixed_hit(r, "/test", 10, 60, crash=(i == 0)) for i in range(20)]
        # the client set no TTL; the running daemon (prune every 100 ms) may already have given it
        # one (its repair, checked below): -1, or at most the window
        pttl = r.pttl("fixedWindowRateLimiter:/test")
        cf.check("a client dying between its first INCR and EXPIRE: 10 admitted, then limited, and no TTL of "
                 "its own ends that window", limited == [False] * 10 + [True] * 10 and
                 r.get("fixedWindowRateLimiter:/test") == b"10" and (pttl == -1 or 0 < pttl <= 60000), str(pttl))
        # locks of other clients, held (hashes, as Redisson's RLock): SCAN TYPE must leave them out
        rlock(r, "fixedWindowRateLimiter:LOCK:/test")
        rlock(r, "slidingWindowRateLimiter:LOCK:/test")
        r.persist("fixedWindowRateLimiter:LOCK:/test")
        locks = {k: r.hgetall(k) for k in (b"fixedWindowRateLimiter:LOCK:/test", b"slidingWindowRateLimiter:LOCK:/test")}
        rs = Redisson(r)
        name = b"TokenBucketRateLimiter:/test"
        # a name whose '{' opens no hash tag: its {name}:value would be in another slot (Redis
        # Cluster refuses the pair), so sluiced leaves it alone and shows it without its state
        odd = b"TokenBucketRateLimiter:{odd"
        rs.try_set_rate(odd, 5, 1000)
        rs.try_acquire(odd, 1, int(time.time() * 1000) - 60000, b"\x02" * 16)
        admitted = 0
        for i in range(12):
            rs.try_set_rate(name, 10, 1000)
            admitted += rs.try_acquire(name, 1, int(time.time() * 1000), os.urandom(16)) is None
        last_acquire = time.time()
        cf.check("RRateLimiter 10 per second, 12 tryAcquire: 10 acquired", admitted == 10 and r.get(rkeys(name)[1]) == b"0")

        st, body = cf.http(port, "GET", "/v1/paths?match=%2Ftest&count=100")
        items = {i["layout"]: i for i in json.loads(body)["paths"]} if st == 200 else {}
        tok = items.get("seed004-token", {})
        cf.check("GET /v1/paths shows the RRateLimiter's live state: 10 of 10 used, by its own settings",
                 tok.get("algorithm") == "token_bucket" and tok.get("count") == 10 and tok.get("remaining") == 0
                 and tok.get("capacity") == 10 and tok.get("rate") == 10 and tok.get("rule") is None
                 and tok.get("recorded") == {"capacity": 10, "rate": 10, "interval_ms": 1000, "type": 0}
                 and 0 < tok.get("reset_ms", -1) <= 1000, repr(tok))
        sl = items.get("seed004-sliding", {})
        cf.check("... the sliding window's by the rule seed004-sliding (limit 10 per 1000 ms)",
                 sl.get("rule") == "seed004-sliding" and sl.get("limit") == 10, repr(sl))
        fx = items.get("seed004-fixed", {})
        cf.check("... the fixed window's by seed004-fixed (10 per 60000 ms): count 10",
                 fx.get("rule") == "seed004-fixed" and fx.get("count") == 10 and fx.get("limit") == 10, repr(fx))
        cf.check("no LOCK key is listed as a path", not any("LOCK" in i["path"] for i in json.loads(body)["paths"]),
                 body.decode()[:400])
        # the worker: the crashed counter gets its window, the healthy one keeps its TTL
        cf.check("the counter left without TTL gets its rule's window (60 s); no rule of /ok: left as it is",
                 wait_for(lambda: 0 < r.pttl("fixedWindowRateLimiter:/test") <= 60000, 5)
                 and r.get("fixedWindowRateLimiter:/test") == b"10" and r.pttl("fixedWindowRateLimiter:/ok") > 0,
                 str(r.pttl("fixedWindowRateLimiter:/test")))
        # the sliding log: every entry (admitted or refused) leaves once out of the window, by Redis time
        t0 = time.time()
        gone = wait_for(lambda: r.exists("slidingWindowRateLimiter:/test") == 0, 8)
        took = time.time() - t0
        cf.check("the sliding log is pruned to nothing once its entries left the window, not before",
                 gone and time.time() * 1000 >= now + 19 + 1000, str(r.zcard("slidingWindowRateLimiter:/test")))
        # the RRateLimiter: not before its interval and the skew horizon have passed since the last acquire
        while time.time() < last_acquire + (1000 + skew - 300) / 1000.0:
            time.sleep(0.02)
        cf.check("RRateLimiter: its value and permits are still there 300 ms before interval + skew (%d ms)"
                 % (1000 + skew), r.exists(*rkeys(name)[1:]) == 2)
        cf.check("RRateLimiter idle for its interval: value and permits reclaimed, the hash stays",
                 wait_for(lambda: r.exists(*rkeys(name)[1:]) == 0, 8) and r.hgetall(name) ==
                 {b"rate": b"10", b"interval": b"1000", b"keepAliveTime": b"0", b"type": b"0"},
                 repr(r.keys("*TokenBucket*")))
        cf.check("the locks are untouched (SCAN TYPE zset / string never returns them)",
                 {k: r.hgetall(k) for k in locks} == locks and r.pttl("fixedWindowRateLimiter:LOCK:/test") == -1)
        for lname in ("seed004-sliding", "seed004-fixed"):
            lo = layout_status(port, lname)
            cf.check("/v1/worker: %s walked, nothing skipped or failed" % lname,
                     lo is not None and lo.get("skipped") == 0 and lo.get("failed") == 0, repr(lo))
        lo = layout_status(port, "seed004-token")
        cf.check("/v1/worker: seed004-token skipped only the odd name, failed nothing",
                 lo is not None and lo.get("skipped", 0) >= 1 and lo.get("failed") == 0 and
                 r.get(rkeys(odd)[1]) == b"4", repr(lo))
        st, body = cf.http(port, "GET", "/v1/paths?match=%7Bodd&count=100")
        got = json.loads(body)["paths"] if st == 200 else []
        cf.check("GET /v1/paths lists the odd name without its state (count null), the rest of the page intact",
                 st == 200 and [(i["layout"], i["count"], i["capacity"]) for i in got] == [("seed004-token", None, None)],
                 "%d %r" % (st, body[:300]))
        lo = layout_status(port, "seed004-token")
        cf.check("/v1/worker: seed004-token reclaimed its 1 limiter",
                 lo is not None and lo.get("reclaimed") == 1 and lo.get("emptied") == 1 and lo.get("paths", 0) > 0,
                 repr(lo))
        print("seeds004_e2e: sliding log emptied %.2f s after the state checks (window 1 s)" % took)
        # after the reclaim Redisson starts afresh; the admin reset does the same
        admitted = sum(rs.try_acquire(name, 1, int(time.time() * 1000), os.urandom(16)) is None for _ in range(12))
        cf.check("after the reclaim: 10 of 12 acquired again", admitted == 10)
        st, body = cf.http(port, "POST", "/v1/paths/%2Ftest/reset")
        res = json.loads(body) if st == 200 else {}
        removed = {k["key"]: k.get("entries") for k in res.get("keys", [])}
        cf.check("POST /v1/paths/%2Ftest/reset removes the RRateLimiter's value (0 left) and permits (10 out), "
                 "not its hash; and /test's fixed-window counter (10)",
                 st == 200 and r.exists(*rkeys(name)[1:]) == 0 and r.exists(name) == 1 and removed ==
                 {"{TokenBucketRateLimiter:/test}:value": 0, "{TokenBucketRateLimiter:/test}:permits": 10,
                  "fixedWindowRateLimiter:/test": 10}, "%d %r" % (st, body))
        admitted = sum(rs.try_acquire(name, 1, int(time.time() * 1000), os.urandom(16)) is None for _ in range(12))
        cf.check("after the reset: 10 of 12 acquired at once", admitted == 10, "%d %r" % (admitted, res))
    finally:
        rc = cf.stop_daemon(d, log)
    cf.check("sluiced exits 0 on SIGTERM", rc == 0, repr(rc))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: seeds004_e2e.py SLUICED LUA_DIR")
    sluiced, lua_dir = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="sluice-seeds004-")
    srv, r = cf.start_redis(tmp)
    try:
        run_edges(lua_dir, r)
        run_trace(lua_dir, r)
        run_daemon(r, sluiced, tmp)
    finally:
        srv.terminate()
        srv.wait(10)
        shutil.rmtree(tmp, ignore_errors=True)
    print("seeds004_e2e: %d passed, %d failed" % (cf.PASSED, cf.FAILED))
    sys.exit(1 if cf.FAILED else 0)


if __name__ == "__main__":
    main()
