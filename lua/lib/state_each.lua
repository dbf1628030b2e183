-- lib/state_each.lua: one state script call for many paths (lua/README.md,
-- "The state scripts"): the admin listing reads a registry page of one shard
-- in one call, not one call a path, so the script's set-up (its definitions,
-- some 2/3 of a one-path call) is paid once a page.
--
-- state_each(read, now_at) with KEYS holding n > 1 pairs (state, meta) and
-- the ARGV of a one-path call: {read(pair 1, ARGV), ..., read(pair n, ARGV)},
-- a pair whose read raises an error (a key of another type) answered by that
-- error in its place, the others read all the same.  With one pair (or KEYS
-- not pairs: the one-path usage error) it is read(KEYS, ARGV) itself.
-- ARGV[now_at] is the call's `now`: when it is "" (or absent, the last one),
-- Redis TIME is read once and every pair is read at that instant, as the
-- ARGV of the call with that `now` (one TIME a page, not one a path).

--@include lib/time.lua

local function state_each(read, now_at)
  local n = #KEYS
  if n <= 2 or n % 2 ~= 0 then return read(KEYS, ARGV) end
  local argv = ARGV
  if ARGV[now_at] == '' or (ARGV[now_at] == nil and #ARGV == now_at - 1) then
    argv = {}
    for i = 1, #ARGV do argv[i] = ARGV[i] end
    argv[now_at] = fmt_int(arg_now(''))
  end
  local out = {}
  for i = 1, n / 2 do
    local ok, r = pcall(read, { KEYS[2 * i - 1], KEYS[2 * i] }, argv)
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
