-- lib/skew.lua: the skew horizon (DESIGN.md, "Time").
--
-- Every path keeps the highest time ever applied to it (its time mark: the
-- leaky bucket's meta `last`, the token bucket's `last`, the windows' `t` or
-- newest entry), and a call with an older `now` is served at that mark.  When
-- a path's state empties, the mark is kept SKEW_MS longer, so a client whose
-- clock lags Redis by up to SKEW_MS is never admitted more than the rule
-- allows, with or without the daemon.  The worker never acts ahead of a
-- path's own timeline except by real time (the leak); what it deletes as
-- "empty" or "full" is what any client within the horizon would see as such.
-- (sluiced's max_clock_skew_ms; 10000 ms until the shard's rules copy of key
-- layout 2 carries the configured value to the client scripts.)

local SKEW_MS = 10000
