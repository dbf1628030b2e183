#!lua flags=allow-oom
-- sluice: a daemon's heartbeat into the set of live daemons (DESIGN.md,
-- "Several daemons"), for the daemon.  Contract: lua/README.md.
--
-- KEYS[1] <prefix>daemons (sorted set: daemon id -> ms of its last heartbeat)
-- ARGV[1] id, ARGV[2] op: "beat" (ZADD at Redis TIME) or "leave" (ZREM),
-- ARGV[3] forget_ms: members silent this long are removed (integer >= 1),
-- ARGV[4] ahead_ms: members scored more than this after now are removed
--         (a clock that stepped back, or a score written by hand: such a
--         member would seem alive for as long; integer >= 1)
-- Reply {now (Redis TIME, ms), repaired, id1, ms1, id2, ms2, ...}: repaired
-- is "" or the type the key held instead of a sorted set (it is replaced:
-- the set is heartbeats only, written again at every daemon's next tick),
-- then every member after the update (the 256 heard from last, when there
-- are more), by id.
--
-- One clock for every daemon: the scores are this node's TIME, and so is
-- the now the daemons compare them with.  The key expires forget_ms after
-- the last heartbeat, so no daemon left running leaves it behind.

if #KEYS ~= 1 or #ARGV ~= 4 then
  return redis.error_reply('ERR sluice: daemons takes KEYS <prefix>daemons, ARGV id, op, forget_ms, ahead_ms')
end
local key, id, op = KEYS[1], ARGV[1], ARGV[2]
local forget, ahead = tonumber(ARGV[3]), tonumber(ARGV[4])
if id == '' then return redis.error_reply('ERR sluice: ARGV[1] (id) is empty') end
if op ~= 'beat' and op ~= 'leave' then
  return redis.error_reply('ERR sluice: ARGV[2] (op) must be beat or leave')
end
if not forget or forget < 1 or forget ~= math.floor(forget) or forget > 2^53 then
  return redis.error_reply('ERR sluice: ARGV[3] (forget_ms) must be an integer >= 1')
end
if not ahead or ahead < 1 or ahead ~= math.floor(ahead) or ahead > 2^53 then
  return redis.error_reply('ERR sluice: ARGV[4] (ahead_ms) must be an integer >= 1')
end
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local repaired = ''
local kind = redis.call('TYPE', key).ok
if kind ~= 'zset' and kind ~= 'none' then
  repaired = kind
  redis.call('DEL', key)
end
if op == 'beat' then
  redis.call('ZADD', key, now, id)
  redis.call('PEXPIRE', key, forget)
else
  redis.call('ZREM', key, id)
end
redis.call('ZREMRANGEBYSCORE', key, '-inf', '(' .. string.format('%d', now - forget))
redis.call('ZREMRANGEBYSCORE', key, '(' .. string.format('%d', now + ahead), '+inf')
local all = redis.call('ZREVRANGE', key, '0', '255', 'WITHSCORES')
local ids = {}
for i = 1, #all, 2 do ids[#ids + 1] = { all[i], all[i + 1] } end
table.sort(ids, function(a, b) return a[1] < b[1] end)
local out = { now, repaired }
for _, e in ipairs(ids) do
  out[#out + 1] = e[1]
  out[#out + 1] = e[2]
end
return out
