-- lib/state_each.lua: one state script call for many paths (lua/README.md,
-- "The state scripts"): the admin listing reads a registry page of one shard
-- in one call, not one call a path, so the script's set-up (its definitions,
-- some 2/3 of a one-path call) is paid once a page.
--
-- state_each(read) with KEYS holding n > 1 pairs (state, meta) and the
-- ARGV of a one-path call: {read(pair 1, ARGV), ..., read(pair n, ARGV)},
-- a pair whose read raises an error (a key of another type) answered by that
-- error in its place, the others read all the same.  With one pair (or KEYS
-- not pairs: the one-path usage error) it is read(KEYS, ARGV) itself.
local function state_each(read)
  local n = #KEYS
  if n <= 2 or n % 2 ~= 0 then return read(KEYS, ARGV) end
  local out = {}
  for i = 1, n / 2 do
    local ok, r = pcall(read, { KEYS[2 * i - 1], KEYS[2 * i] }, ARGV)
    if ok then
      out[i] = r
    elseif type(r) == 'table' and r.err then
      out[i] = r
    else
      out[i] = redis.error_reply(tostring(r))
    end
  end
  return out
end
