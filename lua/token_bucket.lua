#!lua
-- sluice: token bucket, client-side acquire.  Contract: lua/README.md,
-- "Calling a client script" (DESIGN.md, "Client scripts: the calling contract").
--
-- KEYS[1] bucket   <prefix>{k}:token_bucket:<path>: hash
--                    tokens = tokens held at `last` ('%.17g', may be fractional),
--                    last   = ms of the latest admission (the time mark),
--                    capacity, rate = the parameters last applied (as passed),
--                    rule   = the rule named ("" for explicit parameters)
-- KEYS[2] meta     <prefix>{k}:token_bucket_meta:<path>: accepted and left
--                  alone (the bucket keeps its bookkeeping in its own hash)
-- KEYS[3] registry <prefix>{k}:registry:token_bucket (due index: when the
--                  bucket will have been full for the skew horizon)
-- KEYS[4] rules: the shard's rules copy (read: the rule, lib/rule.lua;
--                  max_clock_skew_ms, lib/skew.lua)
-- KEYS[5] stats: the shard's decision counters and clock lag (lib/contract.lua, contract_reply)
-- ARGV[1] path, ARGV[2] n (cost in tokens, "" = 1), ARGV[3] now (ms, "" =
-- Redis TIME), ARGV[4] rule ("", a rule name or "*": lib/rule.lua; with a rule,
-- ARGV[5..] are absent or "" and the rule's apply), ARGV[5] capacity (tokens, integer
-- >= 1), ARGV[6] rate (tokens added per second, > 0)
-- Reply {allowed 0|1, remaining (whole tokens), retry_after_ms (-1: n >
--        capacity), reset_ms (until the bucket is full), rule}
--
-- Lazy refill (lib/refill.lua, shared with the reclaims and
-- token_bucket_state.lua): at t = max(now, last) the bucket holds
-- min(capacity, tokens + rate * (t - last) / 1000).  An absent bucket is
-- full, and so is the same as a bucket that has refilled to capacity, but
-- for `last`, the bucket's time mark: a caller whose now is older is served
-- at it.  So the key expires SKEW_MS after the bucket is full (lib/skew.lua),
-- and the worker's reclaim deletes only buckets full for that long, by the
-- capacity and rate recorded here.  Only an admission writes; a rejected
-- request takes nothing and writes nothing.

--@include lib/contract.lua
--@include lib/bucket.lua
--@include lib/refill.lua
--@include lib/due.lua

local FIELDS = { 'capacity', 'rate' }
local path, base, k, err = contract_keys('token_bucket', FIELDS)
if err then return err end
-- R: the parameters applied and the rule (lib/contract.lua); "*" keeps its
-- cache in the bucket's hash.
local n, now, R
n, now, R, err = contract_args('token_bucket', FIELDS, nil, KEYS[1], k)
if err then return err end
local cap_s, rate_s, rule = R[1], R[2], R.name
local capacity, rate
capacity, rate, err = arg_bucket(cap_s, rate_s, 'tokens')
if err then return rule_failed(R, KEYS[4], err) end
local bucket = KEYS[1]

local m = redis.call('HMGET', bucket, 'tokens', 'last', 'capacity', 'rate', 'rule')
local tokens0, last, t, found, tokens = refill_read(m, capacity, rate, now)
if not found then
  -- No state: the path is new (or its bucket was full and went), the one
  -- time its shard is checked.
  err = contract_shard(path, k)
  if err then return err end
end

local allowed, retry_after, reset = 0, 0, nil
if n > capacity then
  retry_after = -1 -- can never be admitted; nothing is stored
  reset = refill_reset_ms(tokens, tokens0, last, capacity, rate, t)
elseif tokens + EPS >= n then -- EPS: see lib/num.lua
  allowed = 1
  skew_load(KEYS[4]) -- the TTL and the due time need the horizon
  tokens = math.max(0, tokens - n)
  -- Not full now (n >= 1 was taken): full in `reset` ms.  Keep the bucket
  -- until it has been full for SKEW_MS (then it is the same as absent to
  -- every caller within the horizon), measured from the caller's now, + 1 ms
  -- for the expiry clock's rounding (refills in 2^53 ms or more: never
  -- expire); due for the reclaim at that time.  The due index first of the
  -- writes: one of another type refuses the call whole.
  reset = refill_ms_until(tokens, rate, capacity)
  local due = refill_due(t, reset)
  err = due_register(KEYS[3], path, due, now, base, 'token_bucket', true)
  if err then return err end
  -- the parameters applied, recorded when they change (the reclaim goes by them)
  local set = { 'HSET', bucket, 'tokens', fmt_real(tokens), 'last', fmt_int(t) }
  if m[3] ~= cap_s or m[4] ~= rate_s or m[5] ~= rule then
    set[7], set[8], set[9], set[10], set[11], set[12] = 'capacity', cap_s, 'rate', rate_s, 'rule', rule
  end
  if R.cache then -- "*" resolved afresh: cached against the copy's version
    set[#set + 1], set[#set + 2] = 'rv', R.cache
    set[#set + 1], set[#set + 2] = 'rn', rule
  end
  redis.call(unpack(set))
  expire_in(bucket, due < MAX_INT and due - now + 1 or MAX_INT)
else
  retry_after = math.max(1, last + refill_ms_until(tokens0, rate, n) - t)
  reset = refill_reset_ms(tokens, tokens0, last, capacity, rate, t)
end

-- a shadow rule's denial is admitted, writing nothing as a denial;
-- counted (and the clock's lag recorded) by contract_reply
return contract_reply(R, allowed, refill_whole(tokens, capacity), retry_after, reset)
