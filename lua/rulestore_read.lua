#!lua flags=no-writes
-- sluice: the rule store's hash and its digest, a daemon read.  Contract:
-- lua/README.md, "rulestore_read.lua"; the store: core/rulestore.h.
-- The no-writes flag (Redis >= 7.0) lets it run at maxmemory, with
-- EVAL_RO / EVALSHA_RO and on replicas.
--
-- KEYS[1] the rules hash <prefix>rules
-- ARGV[1] "digest" (the digest only) or "all" (the digest and the hash)
-- Reply {digest} or {digest, field, value, field, value, ...} (HGETALL's
-- order), read in one step, so the digest is the one of the fields beside it.
--
-- The digest is "<fields>:<40 hex digits>": the number of fields, then five
-- sums mod 2^32 of the matching 8-digit parts of SHA1("<#field>:<field>
-- <value>") over the fields.  A sum does not depend on HGETALL's order,
-- which Redis may change without a write (a rehash step), and needs no sort
-- (Lua compares strings by the server's locale).  It tells a daemon that the
-- hash changed while the version did not (a writer that stopped between its
-- write and the version's bump, an edit by hand): core/rulestore.c.
-- A key of another type is Redis's WRONGTYPE error reply.

--@include lib/args.lua

if #KEYS ~= 1 or #ARGV ~= 1 or (ARGV[1] ~= 'digest' and ARGV[1] ~= 'all') then
  return usage('rulestore_read takes 1 KEY (the rules hash) and ARGV "digest" or "all"')
end
local flat = redis.call('HGETALL', KEYS[1])
local sum = { 0, 0, 0, 0, 0 }
for i = 1, #flat, 2 do
  local h = redis.sha1hex(#flat[i] .. ':' .. flat[i] .. flat[i + 1])
  for j = 1, 5 do
    sum[j] = (sum[j] + tonumber(h:sub(8 * j - 7, 8 * j), 16)) % 4294967296
  end
end
local digest = string.format('%d:%08x%08x%08x%08x%08x', #flat / 2, sum[1], sum[2], sum[3], sum[4], sum[5])
if ARGV[1] == 'digest' then return { digest } end
table.insert(flat, 1, digest)
return flat
