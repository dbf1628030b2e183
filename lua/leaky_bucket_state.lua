#!lua flags=no-writes
-- sluice: leaky bucket state, an admin read.  Contract: lua/README.md.
-- The no-writes flag (Redis >= 7.0) makes Redis refuse any write from this
-- script, and lets it run with EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] bucket sorted set, KEYS[2] meta hash (last, carry, seq, and the
--         parameters leaky_bucket.lua recorded: capacity, rate, rule); a
--         foreign layout passes its own meta, or any key that holds none
-- KEYS may hold several such pairs, of paths of one shard (the admin
-- listing reads a registry page in one call): the reply is then an
-- array of the replies, one per pair, in order, a pair whose read fails
-- (a key of another type) answered by its error (lib/state_each.lua).
-- ARGV[1] capacity (entries, integer >= 1), ARGV[2] rate (entries per second):
--         each "" = the one the meta records (given ones win: foreign
--         layouts record nothing); ARGV[3] now (ms; absent or "" = Redis TIME)
-- Reply {level, remaining, reset_ms, last_ms (stored `last`, -1 if none),
--        ttl_ms (PTTL of the bucket: -2 absent, -1 no TTL),
--        recorded (flat array of the recorded parameters, field then value,
--        as the client passed them: {"capacity", "10", "rate", "2"}; empty
--        when none), rule (the recorded rule, "" when none)}
-- With no rate (none given, none recorded) the level is the bucket's size,
-- no leak applied, and reset_ms is -1; with no capacity remaining is -1.
--
-- Reports what the leak of leaky_bucket.lua would leave at t, without doing it
-- (lib/leak.lua's leak_at, on values only).

--@include lib/leak.lua
--@include lib/state_each.lua

local function read(KEYS, ARGV)
  if #KEYS ~= 2 or #ARGV < 2 or #ARGV > 3 then
    return usage('leaky_bucket_state takes 2 KEYS (bucket, meta) and ARGV capacity, rate, now'
      .. ' (each may be "": the recorded parameters, Redis TIME)')
  end
  local bucket, meta = KEYS[1], KEYS[2]
  local m = redis.call('HMGET', meta, 'last', 'carry', 'capacity', 'rate', 'rule')
  local capacity, rate, now, err
  if ARGV[1] ~= '' then
    capacity, err = arg_int(ARGV[1], 'capacity')
    if err then return err end
  else
    capacity = int_arg(m[3], 1)
  end
  if ARGV[2] ~= '' then
    rate, err = arg_rate(ARGV[2], 'entries')
    if err then return err end
  else
    rate = rate_arg(m[4])
  end
  now, err = arg_now(ARGV[3])
  if err then return err end

  local level = redis.call('ZCARD', bucket)
  local stored_last, carry, t = leak_read(m, now)
  local last, reset_ms = stored_last, -1
  if rate then
    level, last, carry = leak_at(level, stored_last, carry, rate, t)
    reset_ms = leak_reset_ms(level, last, carry, rate, t)
  end
  local recorded = {}
  if m[3] then recorded[#recorded + 1], recorded[#recorded + 2] = 'capacity', m[3] end
  if m[4] then recorded[#recorded + 1], recorded[#recorded + 2] = 'rate', m[4] end

  return {
    level,
    capacity and math.max(0, capacity - level) or -1,
    reset_ms,
    stored_last and math.floor(stored_last) or -1,
    redis.call('PTTL', bucket),
    recorded,
    m[5] or '',
  }
end

return state_each(read, 3)
