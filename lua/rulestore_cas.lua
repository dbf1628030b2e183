#!lua
-- sluice: the rule store's compare-and-set, a daemon write.  Contract:
-- lua/README.md, "rulestore_cas.lua"; the store: core/rulestore.h.
--
-- One key per call: the store's three keys (<prefix>rules, :version,
-- :epoch) hash to three slots, so no command may name two of them on a
-- Redis Cluster.  A change is this script on the rules hash, then the
-- version's bump; an If-Match is exact without WATCH because the write
-- checks, atomically, that the rule's field still holds what the
-- precondition was evaluated on.
--
-- KEYS[1] the rules hash <prefix>rules (ops hset, hdel), or the version
--         counter <prefix>rules:version (op incr)
-- ARGV[1] op:
--   hset  ARGV[2] field, ARGV[3] expect, ARGV[4] expected value (read only
--         with expect "equal"; "" otherwise), ARGV[5] the new value
--   hdel  ARGV[2] field, ARGV[3] expect, ARGV[4] expected value as hset's
--   incr  ARGV[2] the version expected, decimal (an absent counter is "0")
-- expect: "any" (no condition), "absent" (the field must not exist) or
--   "equal" (the field must hold ARGV[4], byte for byte)
-- Reply {status, found}: status 1 done; 0 not done, the key holds another
-- value than expected (found: what it holds, nil when absent); 2 nothing to
-- do (hset: the field holds the new value already; hdel: it is absent),
-- whatever was expected, so a call sent twice (a reconnect) or a writer
-- that lost a race to the same value is told the change is in place.
-- incr: {1, new version} or {0, found}.  A key of another type is Redis's
-- WRONGTYPE error reply before anything is written.
--
-- "#!lua" without flags: at maxmemory Redis refuses the call before it runs
-- (OOM), so a change is refused whole, as a MULTI of it was before.

--@include lib/args.lua

local key, op = KEYS[1], ARGV[1]
if #KEYS ~= 1 then
  return usage('rulestore_cas takes 1 KEY (the rules hash, or the version counter)')
end

if op == 'incr' then
  if #ARGV ~= 2 or type(ARGV[2]) ~= 'string' or not ARGV[2]:find('^%d+$') then
    return usage('rulestore_cas incr takes ARGV incr, the version expected (decimal)')
  end
  local found = redis.call('GET', key)
  local have = found or '0'
  -- compared as text without leading zeros: versions pass 2^53 never, but exactly
  if have:gsub('^0+(%d)', '%1') ~= ARGV[2]:gsub('^0+(%d)', '%1') then return { 0, found } end
  return { 1, redis.call('INCR', key) }
end

if op ~= 'hset' and op ~= 'hdel' then
  return usage('rulestore_cas op (ARGV[1]) must be hset, hdel or incr')
end
local field, expect, want = ARGV[2], ARGV[3], ARGV[4]
if (op == 'hset' and #ARGV ~= 5) or (op == 'hdel' and #ARGV ~= 4) then
  return usage('rulestore_cas ' .. op .. ' takes ARGV ' .. op .. ', field, expect, expected value' ..
    (op == 'hset' and ', new value' or ''))
end
if field == '' then return fail('field', 'a non-empty string') end
if expect ~= 'any' and expect ~= 'absent' and expect ~= 'equal' then
  return fail('expect', '"any", "absent" or "equal"')
end

local found = redis.call('HGET', key, field)
if op == 'hset' then
  if found == ARGV[5] then return { 2, found } end
elseif not found then
  return { 2, false }
end
if (expect == 'absent' and found) or (expect == 'equal' and found ~= want) then
  return { 0, found }
end
if op == 'hset' then
  redis.call('HSET', key, field, ARGV[5])
else
  redis.call('HDEL', key, field)
  -- The last rule deleted leaves a field no rule can be named (':empty'), so
  -- the hash never goes away by a delete: a rules hash that is gone while
  -- its version (another key, on a cluster another node) says it existed was
  -- lost with its node's data, and the daemons store their config's rules
  -- again (rulestore.h, -ENODATA).
  if redis.call('HLEN', key) == 0 then redis.call('HSET', key, ':empty', '1') end
end
return { 1, found }
