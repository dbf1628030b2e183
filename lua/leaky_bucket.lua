#!lua
-- sluice: leaky bucket (meter), client-side acquire.  Contract: lua/README.md,
-- "Calling a client script" (DESIGN.md, "Client scripts: the calling contract").
--
-- KEYS[1] bucket   <prefix>{k}:leaky_bucket:<path>: sorted set of admitted
--                  entries, score = admission ms, member "<ms>:<seq>"
-- KEYS[2] meta     <prefix>{k}:leaky_bucket_meta:<path>: hash
--                    last  = ms up to which leaks are accounted (the time mark),
--                    carry = fractional leak credit in [0, 1), seq = member counter,
--                    capacity, rate = the parameters last applied, rule = the rule
--                    named ("" for explicit parameters)
-- KEYS[3] registry <prefix>{k}:registry:leaky_bucket (due index: when the next entry
--                  leaks, + SKEW_MS: when the drain, at the horizon, has work)
-- KEYS[4] rules: the shard's rules copy (read: the rule, lib/rule.lua;
--                  max_clock_skew_ms, lib/skew.lua)
-- KEYS[5] stats: the shard's decision counters and clock lag (lib/contract.lua, contract_reply)
-- ARGV[1] path, ARGV[2] n (cost in entries, "" = 1), ARGV[3] now (ms, "" = Redis
-- TIME), ARGV[4] rule ("", a rule name or "*": lib/rule.lua; with a rule,
-- ARGV[5..] are absent or "" and the rule's apply), ARGV[5] capacity (entries, integer >= 1),
-- ARGV[6] rate (entries leaked per second, > 0)
-- Reply {allowed 0|1, remaining, retry_after_ms (-1: n > capacity), reset_ms, rule}
--
-- The leak is a meter: a non-empty bucket loses floor(rate * busy_ms / 1000)
-- entries, oldest first, computed over the whole span since `last` and keeping
-- the fraction in `carry`, so the result does not depend on how often (or by
-- whom: this script, the drain, several daemons) it is applied: lib/leak.lua,
-- shared with the drains and leaky_bucket_state.lua.  An empty bucket earns no
-- credit.  The meta's `last` is the bucket's time mark: a caller whose now is
-- older is served at it.  The drain leaks at the horizon max(last, Redis time
-- - SKEW_MS) (lib/skew.lua), never ahead of a client whose clock lags Redis by
-- up to SKEW_MS, so the bucket is due SKEW_MS after its next entry leaks, and
-- its keys are kept until it would be empty + SKEW_MS (+ GRACE_MS, so that the
-- drain, not Redis's expiry, removes and counts the last entries).

--@include lib/contract.lua
--@include lib/bucket.lua
--@include lib/leak.lua
--@include lib/due.lua

local MAX_N = 100000 -- cost of one request, in entries

local FIELDS = { 'capacity', 'rate' }
local path, base, k, err = contract_keys('leaky_bucket', FIELDS)
if err then return err end
-- n is capped: one sorted-set member per unit, so one call cannot fill Redis.
-- R: the parameters applied and the rule (lib/contract.lua); "*" keeps its
-- cache in the meta.
local n, now, R
n, now, R, err = contract_args('leaky_bucket', FIELDS, MAX_N, KEYS[2], k)
if err then return err end
-- the refused path may leak and keep a time mark too: the horizon first
skew_load(KEYS[4])
local cap_s, rate_s, rule = R[1], R[2], R.name
local capacity, rate
capacity, rate, err = arg_bucket(cap_s, rate_s, 'entries')
if err then return rule_failed(R, KEYS[4], err) end
local bucket, meta, registry = KEYS[1], KEYS[2], KEYS[3]

local m = redis.call('HMGET', meta, 'last', 'carry', 'seq', 'capacity', 'rate', 'rule')
if not m[1] then
  -- No time mark: the path is new (or long idle), the one time its shard is checked.
  err = contract_shard(path, k)
  if err then return err end
end
local level = redis.call('ZCARD', bucket)
local last, carry, t = leak_read(m, now)
local left, last2, carry2, what = leak_at(level, last, carry, rate, t)

local allowed, retry_after = 0, 0
if n > capacity or left + n > capacity then
  -- refused: apply the leak that was due (what the drain would do), nothing else
  level, last, carry = leak(bucket, meta, level, last, carry, rate, t, now)
  if n > capacity then retry_after = -1 end -- can never be admitted; nothing is stored
else
  allowed = 1
  local was = left
  -- the parameters applied, recorded when they change (the worker drains by them)
  local changed = m[4] ~= cap_s or m[5] ~= rate_s or m[6] ~= rule
  -- Due when the next entry leaks.  A bucket that had entries is in the due
  -- index already, at its next leak or earlier (the drain reschedules it,
  -- and removes it only once it is empty): only a bucket that was empty, or
  -- a change of parameters (a faster rate leaks sooner), registers.  First
  -- of the writes: a due index of another type refuses the call whole.
  if was == 0 or changed then
    local l0, c0 = last2, carry2
    if was == 0 then l0, c0 = t, 0 end
    err = due_register(registry, path, l0 + leak_ms_until(rate, c0, 1) + SKEW_MS, now, base, 'leaky_bucket')
    if err then return err end
  end
  -- Admitted: the leak and the admission in one write of the meta.  The
  -- leak's removal first (oldest entries; an emptied bucket goes whole).
  if what == 'leaked' then
    redis.call('ZREMRANGEBYRANK', bucket, '0', fmt_int(level - left - 1))
  elseif what == 'emptied' then
    redis.call('DEL', bucket)
  end
  level, last, carry = left, last2, carry2
  local seq = n
  local set = { 'HSET', meta, 'seq' }
  if level == 0 then
    -- an empty bucket earns no credit: accounting starts at t
    last, carry = t, 0
    set[4] = fmt_int(n)
    set[5], set[6], set[7], set[8] = 'last', fmt_int(t), 'carry', '0'
  else
    seq = (stored_int(m[3]) or 0) + n
    set[4] = fmt_int(seq)
    if what ~= 'none' then
      set[5], set[6], set[7], set[8] = 'last', fmt_int(last), 'carry', fmt_real(carry)
    end
  end
  if changed then
    set[#set + 1], set[#set + 2] = 'capacity', cap_s
    set[#set + 1], set[#set + 2] = 'rate', rate_s
    set[#set + 1], set[#set + 2] = 'rule', rule
  end
  if R.cache then -- "*" resolved afresh: cached against the copy's version
    set[#set + 1], set[#set + 2] = 'rv', R.cache
    set[#set + 1], set[#set + 2] = 'rn', rule
  end
  redis.call(unpack(set))
  -- Members t:(seq-n+1) .. t:seq.  NX and the retry loop keep them unique even
  -- if `seq` was lost while members stayed (meta deleted by hand, foreign
  -- writers); ZADD in slices because unpack() is limited to a few thousand values.
  local todo = n
  while todo > 0 do
    local args, added = { 'ZADD', bucket, 'NX' }, 0
    for s = seq - todo + 1, seq do
      args[#args + 1] = fmt_int(t)
      args[#args + 1] = fmt_int(t) .. ':' .. fmt_int(s)
      if #args >= 1003 or s == seq then
        added = added + redis.call(unpack(args))
        args = { 'ZADD', bucket, 'NX' }
      end
    end
    todo = todo - added
    if todo > 0 then seq = redis.call('HINCRBY', meta, 'seq', todo) end
  end
  level = level + n
  -- Keep the bucket and its meta (the time mark) until the drain would have
  -- emptied it, SKEW_MS after it would be empty, measured from the caller's
  -- `now` (not t, which may be later).
  local ttl = leak_ttl(level, last, carry, rate, now) + SKEW_MS
  expire_in(bucket, ttl)
  expire_in(meta, ttl)
end
if allowed == 0 and retry_after == 0 then
  retry_after = math.max(1, last + leak_ms_until(rate, carry, level + n - capacity) - t)
end
-- a shadow rule's denial is admitted, having written what a denial writes;
-- counted (and the clock's lag recorded) by contract_reply
return contract_reply(R, allowed, math.max(0, capacity - level), retry_after, leak_reset_ms(level, last, carry, rate, t))
