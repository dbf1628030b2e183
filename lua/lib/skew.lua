-- lib/skew.lua: the skew horizon (DESIGN.md, "Time").
--
-- Every path keeps the highest time ever applied to it (its time mark: the
-- leaky bucket's meta `last`, the token bucket's `last`, the windows' `t` or
-- newest entry), and a call with an older `now` is served at that mark.  When
-- a path's state empties, the mark is kept SKEW_MS longer, so a client whose
-- clock lags Redis by up to SKEW_MS is never admitted more than the rule
-- allows, with or without the daemon.  The worker never acts ahead of the
-- horizon max(mark, Redis time - SKEW_MS): it drains, prunes and reclaims at
-- that time, so what it removes (leaked entries, expired ones) and deletes as
-- "empty" or "full" is what any client within the horizon sees as such.
--
-- SKEW_MS is sluiced's max_clock_skew_ms (config, default 10000): the daemon
-- writes it into every shard's rules copy, field ":max_clock_skew_ms" (a
-- name no rule can take: rule names hold no ":"), and each
-- script sets SKEW_MS from there when it needs it (skew_load); a shard whose copy
-- has none (no daemon yet) uses the default.  Every fragment's function reads
-- the one SKEW_MS, so the assignment reaches them all.
--@include lib/num.lua

local SKEW_MS = 10000

-- SKEW_MS from the shard's rules copy `rules` (a hash), read once per call
-- and only when it is needed (a client's admission: its TTL and due time,
-- an explicit now; a shard job: first thing), so a refused call, the traffic
-- of an overload, does not pay the HGET.  Whole ms from 0 to 2^53 - 1; the
-- default when the copy has none, and also when it holds another type (a key
-- nothing of sluice's wrote; the daemon's skew sync reports it), so that one
-- bad key stops neither the shard's clients nor its jobs.  (One function, not
-- a reader and a loader: Lua defines every top-level local function of a
-- script anew at each call.)
local SKEW_LOADED = false
local function skew_load(rules)
  if not SKEW_LOADED then
    local v = redis.pcall('HGET', rules, ':max_clock_skew_ms')
    if type(v) ~= 'table' then SKEW_MS = stored_int(v) or SKEW_MS end
    SKEW_LOADED = true
  end
end
