#!lua flags=no-writes
-- sluice: token bucket state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] bucket hash (tokens, last, and sluice's own: capacity, rate, rule);
-- KEYS[2] meta (accepted, not read: the bucket keeps its own fields; a
--         foreign layout passes any name)
-- KEYS may hold several such pairs, of paths of one shard (the admin
-- listing reads a registry page in one call): the reply is then an
-- array of the replies, one per pair, in order, a pair whose read fails
-- (a key of another type) answered by its error (lib/state_each.lua).
-- ARGV[1] capacity (tokens, integer >= 1), ARGV[2] rate (tokens per second),
--         each "" = the one the bucket records; ARGV[3] now (ms; absent or
--         "" = Redis TIME)
-- Reply {used (capacity - remaining), remaining (whole tokens at t), reset_ms
--        (until full, 0 when full), last_ms (stored `last`, -1 if none),
--        ttl_ms (PTTL of the bucket: -2 absent, -1 no TTL),
--        recorded (flat {field, value, ...} of the recorded capacity and
--        rate, as stored; empty when none), rule (recorded, "" when none)}
-- With no capacity or no rate, given or recorded: used, remaining and
-- reset_ms are -1.
--
-- What token_bucket.lua would find at t = max(now, last), without writing
-- (lib/refill.lua), by the parameters given, else the recorded ones.

--@include lib/bucket.lua
--@include lib/refill.lua
--@include lib/state_each.lua

local function read(KEYS, ARGV)
  if #KEYS ~= 2 or #ARGV < 2 or #ARGV > 3 then
    return usage('token_bucket_state takes 2 KEYS (state, meta) and ARGV capacity, rate ("" = recorded), now')
  end
  local bucket = KEYS[1]
  local capacity, rate, err
  if ARGV[1] ~= '' then
    capacity, err = arg_int(ARGV[1], 'capacity')
    if err then return err end
  end
  if ARGV[2] ~= '' then
    rate, err = arg_rate(ARGV[2], 'tokens')
    if err then return err end
  end
  local now
  now, err = arg_now(ARGV[3])
  if err then return err end

  local m = redis.call('HMGET', bucket, 'tokens', 'last', 'capacity', 'rate', 'rule')
  local recorded = {}
  if m[3] then recorded[#recorded + 1], recorded[#recorded + 2] = 'capacity', m[3] end
  if m[4] then recorded[#recorded + 1], recorded[#recorded + 2] = 'rate', m[4] end
  capacity = capacity or int_arg(m[3], 1)
  rate = rate or rate_arg(m[4])
  local last_ms = stored(m[1]) and stored_int(m[2]) or -1
  local ttl = redis.call('PTTL', bucket)
  -- No parameters at all: what is used and left is unknown (-1); an absent
  -- bucket (full, the same as none) uses nothing.
  if not (capacity and rate) then return { ttl == -2 and 0 or -1, -1, -1, last_ms, ttl, recorded, m[5] or '' } end

  local tokens0, last, t, _, tokens = refill_read(m, capacity, rate, now)
  local remaining = refill_whole(tokens, capacity)
  return {
    capacity - remaining,
    remaining,
    refill_reset_ms(tokens, tokens0, last, capacity, rate, t),
    last_ms,
    ttl,
    recorded,
    m[5] or '',
  }
end

return state_each(read, 3)
