"""The soak's reference model (tests/soak.py): what each path's state must be, from DESIGN.md.

The soak's client passes an explicit `now` (ms, the machine's clock, which is
Redis's: it is local) that only grows, so every call is served at that `now`
and the model knows the time of every admission.  The daemon's jobs act at the
horizon, max(mark, Redis time - max_clock_skew_ms) (README, "What works
now"), and late by at most `allow` ms (a tick, the due backlog's age, slack),
so each check bounds the state between what the model gives at the latest and
the earliest time the daemon can have acted at.  Every check returns None
when the state agrees, else a string saying what differs.
"""


class Leaky:
    """A leaky bucket (meter) that never fills: the level at t is admitted - floor((t - start) / period),
    clipped at 0, with start the call that found the bucket empty (an empty bucket earns no credit)."""
    __slots__ = ("period", "admitted", "start", "mark")

    def __init__(self, period_ms):
        self.period, self.admitted, self.start, self.mark = period_ms, 0, None, None

    def level(self, t):
        if self.start is None:
            return 0
        return max(0, self.admitted - max(0, t - self.start) // self.period)

    def call(self, now, n, capacity):
        """The reply the script must give at `now` with cost `n`: (allowed, remaining)."""
        lvl = self.level(now)
        if lvl + n > capacity:
            return 0, max(0, capacity - lvl)
        if lvl == 0:
            self.start, self.admitted = now, 0
        self.admitted += n
        self.mark = now
        return 1, capacity - (lvl + n)

    def reset(self):
        self.admitted, self.start = 0, None

    def check_stored(self, entries, t0, t1, skew, allow):
        """`entries`: the state zset's size read between Redis times t0 and t1 (ms)."""
        mark = self.mark if self.mark is not None else t0
        hi = self.level(max(mark, t0 - skew - allow)) + 1
        lo = self.level(max(mark, t1 - skew)) - 1
        if not lo <= entries <= hi:
            return "level %d, the model allows %d..%d (admitted %d since %r)" % (
                entries, max(lo, 0), hi, self.admitted, self.start)
        return None

    def check_shown(self, count, t0, t1):
        """`count`: GET /v1/paths/{path}'s count (the level at Redis time) read between t0 and t1."""
        lo, hi = self.level(t1) - 1, self.level(t0) + 1
        return None if lo <= count <= hi else "shown %d, the model %d..%d" % (count, max(lo, 0), hi)


class Log:
    """A sliding log: the entries admitted at times s count in [s, s + window)."""
    __slots__ = ("entries", "mark")

    def __init__(self):
        self.entries, self.mark = [], None

    def live(self, t, window):
        return sum(1 for s in self.entries if s > t - window)

    def call(self, now, n, limit, window, keep):
        live = self.live(now, window)
        allowed = live + n <= limit
        if allowed:
            self.entries = [s for s in self.entries if s > now - keep] + [now] * n
            self.mark = now
            live += n
        return int(allowed), max(0, limit - live)

    def reset(self):
        self.entries = []

    def check_stored(self, scores, window, t0, t1, skew, allow):
        """`scores`: the state zset's scores (ms) read between t0 and t1: nothing the model did not admit,
        everything the prune may not have removed yet, nothing older than the window + horizon + allow."""
        mark = self.mark if self.mark is not None else t0
        want = sorted(self.entries)
        if any(s not in want for s in scores) or len(scores) > len(want):
            return "holds %r, admitted %r" % (scores[:8], want[-8:])
        must = [s for s in want if s > max(mark, t1 - skew) - window]
        if sorted(s for s in scores if s in must) != must:
            return "holds %r, must hold %r" % (scores[:8], must[-8:])
        old = max(mark, t0 - skew - allow) - window
        if any(s <= old for s in scores):
            return "holds %r, older than %d (window + horizon + %d ms)" % (scores[:8], old, allow)
        return None

    def check_shown(self, count, window, t0, t1):
        lo, hi = self.live(t1, window), self.live(t0, window)
        return None if lo <= count <= hi else "shown %d, the model %d..%d" % (count, lo, hi)


class Fixed:
    """A fixed window: the count of window w is the admissions in [w * window, (w + 1) * window)."""
    __slots__ = ("w", "count", "mark")

    def __init__(self):
        self.w, self.count, self.mark = None, 0, None

    def call(self, now, n, limit, window):
        wi = now // window
        c = self.count if wi == self.w else 0
        if c + n > limit:
            return 0, max(0, limit - c)
        self.w, self.count, self.mark = wi, c + n, now
        return 1, limit - (c + n)

    def reset(self):
        self.w, self.count = None, 0

    def check_stored(self, fields, pttl, window, t0, t1, skew, allow):
        """`fields`: (count, window) of the state hash (bytes or None), `pttl` its PTTL, read between t0 and
        t1; the key lives until its window ends + the horizon (lua/lib/fixed.lua, fixed_ttl)."""
        count, w = fields
        if self.w is None:
            return None if count is None else "holds count %r, the model none" % count
        end = (self.w + 1) * window + skew
        if count is None:
            return None if t1 >= end - allow else "gone %d ms before its window + horizon ended" % (end - t1)
        if int(w) != self.w or int(count) != self.count:
            return "holds window %s count %s, the model window %d count %d" % (w, count, self.w, self.count)
        if pttl <= 0 or t0 > end + allow:
            return "PTTL %d at %d, window + horizon end %d" % (pttl, t0, end)
        return None

    def check_shown(self, count, window, t0, t1):
        ok = [self.count if t // window == self.w else 0 for t in (t0, t1)]
        return None if count in ok else "shown %d, the model %r" % (count, ok)
