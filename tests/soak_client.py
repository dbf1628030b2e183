"""The soak's application and its checks (tests/soak.py): calls and reads, against tests/soak_model.py.

An application, Debian's python3-redis calling sluice's own client scripts
(register_script: EVALSHA, in pipelines) with DESIGN.md's five KEYS and ARGV
and rule references (a name or `*`), on 100,000 paths of four rules.  It
passes an explicit `now` that only grows, so the model knows every path's
state: every reply is compared with it, and a sample of paths (or all of
them) is read from Redis and from the admin API and compared too.
"""
import fnmatch
import json
import os
import random
import time
import urllib.parse

import conformance as cf
from soak_model import Fixed, Leaky, Log

SKEW = 10000           # max_clock_skew_ms (the default, stated in the config)
PRUNE_MS = 1000        # prune_interval_ms (the default)
BATCH = 200            # calls per pipeline

# (group, algorithm, path prefix, paths, rule reference, cost, rule); the rules' numbers are what
# the model obeys; "alt" is the field a rule change flips between its two values
GROUPS = [
    ("lb_slow", "leaky_bucket", "/soak/lb/s/", 20000, "soak_lb_slow", 3,
     {"name": "soak_lb_slow", "match": "/soak/lb/s/*", "algorithm": "leaky_bucket", "capacity": 100000,
      "rate": 0.05}, ("capacity", 100000, 50000)),
    ("lb_fast", "leaky_bucket", "/soak/lb/f/", 20000, "*", 2,
     {"name": "soak_lb_fast", "match": "/soak/lb/f/*", "algorithm": "leaky_bucket", "capacity": 100000,
      "rate": 0.5}, ("capacity", 100000, 60000)),
    ("log", "sliding_log", "/soak/log/", 30000, "*", 1,
     {"name": "soak_log", "match": "/soak/log/*", "algorithm": "sliding_log", "limit": 3,
      "window_ms": 20000}, ("limit", 3, 2)),
    ("fw", "fixed_window", "/soak/fw/", 30000, "soak_fw", 1,
     {"name": "soak_fw", "match": "/soak/fw/*", "algorithm": "fixed_window", "limit": 4,
      "window_ms": 10000}, ("limit", 4, 6)),
]
HOT = 500  # per group, the paths called most (denials, long logs); the rest are swept in turn


class Client:
    """The application: the models of every path, the scripts, the counts of checks and calls."""

    def __init__(self, lua_dir):
        self.lua_dir = lua_dir
        self.checks, self.failed, self.shown = 0, 0, 0
        self.calls, self.last_now, self.allow = 0, 0, PRUNE_MS + 2000
        self.groups = []
        for name, alg, prefix, n, ref, cost, rule, alt in GROUPS:
            make = {"leaky_bucket": lambda rate=rule.get("rate"): Leaky(int(round(1000 / rate))),
                    "sliding_log": Log, "fixed_window": Fixed}[alg]
            self.groups.append({"name": name, "alg": alg, "prefix": prefix, "ref": ref, "cost": cost,
                                "rule": dict(rule), "alt": alt, "models": [make() for _ in range(n)],
                                "sweep": 0})

    def connect(self, r, aport):
        """Talk to Redis through `r` (redis.Redis) and to the admin API on `aport`; loads the scripts."""
        self.r, self.aport, self.scripts = r, aport, {}
        for g in self.groups:
            if g["alg"] not in self.scripts:
                with open(os.path.join(self.lua_dir, g["alg"] + ".lua")) as f:
                    self.scripts[g["alg"]] = r.register_script(f.read())

    # ---- verdicts ------------------------------------------------------------

    def check(self, ok, what):
        self.checks += 1
        if not ok:
            self.failed += 1
            if self.shown < 40:
                self.shown += 1
                print("FAIL " + what, flush=True)

    # ---- paths -------------------------------------------------------------------

    def path(self, g, i):
        return (g["prefix"] + str(i)).encode()

    def keys(self, g, i):
        return cf.client_keys(g["alg"], self.path(g, i))

    def pick(self, g):
        """The next path of group g: every other call one of the hot paths, else the next in the sweep."""
        if random.random() < 0.5:
            return random.randrange(HOT)
        i = g["sweep"]
        g["sweep"] = (i + 1) % len(g["models"])
        return i

    # ---- the application ----------------------------------------------------------

    def predict(self, g, m, now):
        rule, cost = g["rule"], g["cost"]
        if g["alg"] == "leaky_bucket":
            return m.call(now, cost, rule["capacity"])
        if g["alg"] == "sliding_log":
            return m.call(now, cost, rule["limit"], rule["window_ms"], rule["window_ms"] + SKEW + 60000)
        return m.call(now, cost, rule["limit"], rule["window_ms"])

    def batch(self):
        """One pipeline of BATCH calls over the groups in turn; each reply compared with the model."""
        now = max(self.last_now + 1, int(time.time() * 1000))
        self.last_now = now
        pipe = self.r.pipeline(transaction=False)
        sent = []
        for j in range(BATCH):
            g = self.groups[j % len(self.groups)]
            i = self.pick(g)
            p = self.path(g, i)
            self.scripts[g["alg"]](keys=self.keys(g, i), args=[p, str(g["cost"]), str(now), g["ref"]],
                                   client=pipe)
            sent.append((g, i))
        replies = pipe.execute(raise_on_error=False)
        bad = 0
        for (g, i), rep in zip(sent, replies):
            want = self.predict(g, g["models"][i], now)
            ok = isinstance(rep, list) and rep[0] == want[0] and rep[4] == g["rule"]["name"].encode() and \
                abs(rep[1] - want[1]) <= (1 if g["alg"] == "leaky_bucket" else 0)
            if not ok:
                bad += 1
                self.check(False, "%s %s at %d: reply %r, the model (allowed, remaining) %r" % (
                    g["name"], self.path(g, i).decode(), now, rep, want))
        self.checks += len(sent) - bad
        self.calls += len(sent)

    def drive(self, until):
        while time.monotonic() < until:
            self.batch()

    # ---- reading the state ----------------------------------------------------------

    def read_stored(self, picks):
        """For (group, index) pairs: the Redis state of each, read in one pipeline, and the times around it."""
        pipe = self.r.pipeline(transaction=False)
        for g, i in picks:
            k = self.keys(g, i)
            if g["alg"] == "leaky_bucket":
                pipe.zcard(k[0])
            elif g["alg"] == "sliding_log":
                pipe.zrange(k[0], 0, -1, withscores=True)
            else:
                pipe.hmget(k[0], "count", "window")
                pipe.pttl(k[0])
            pipe.zscore(k[2], self.path(g, i))
        t0 = int(time.time() * 1000)
        out = pipe.execute()
        t1 = int(time.time() * 1000)
        return out, t0, t1

    def check_stored(self, picks):
        out, t0, t1 = self.read_stored(picks)
        it = iter(out)
        for g, i in picks:
            m, rule = g["models"][i], g["rule"]
            if g["alg"] == "leaky_bucket":
                state = next(it)
                err = m.check_stored(state, t0, t1, SKEW, self.allow)
                has = state > 0
            elif g["alg"] == "sliding_log":
                state = [int(s) for _, s in next(it)]
                err = m.check_stored(state, rule["window_ms"], t0, t1, SKEW, self.allow)
                has = bool(state)
            else:
                fields, pttl = next(it), next(it)
                err = m.check_stored(fields, pttl, rule["window_ms"], t0, t1, SKEW, self.allow)
                has = fields[0] is not None and m.w is not None and \
                    t1 < (m.w + 1) * rule["window_ms"] + SKEW - self.allow
            registered = next(it) is not None
            if err is None and has and not registered:
                err = "has state but is not in its shard's due index"
            self.check(err is None, "%s %s: %s" % (g["name"], self.path(g, i).decode(), err))

    def check_shown(self, g, i):
        """GET /v1/paths/{path}: its count against the model at Redis time."""
        p = self.path(g, i)
        t0 = int(time.time() * 1000)
        st, body = self.http("GET", "/v1/paths/" + urllib.parse.quote(p, safe=""))
        t1 = int(time.time() * 1000)
        m = g["models"][i]
        try:
            count = json.loads(body)["count"] if st == 200 else None
        except (ValueError, KeyError):
            count = None
        if count is None:
            err = "GET answered %d %r" % (st, body[:200])
        elif g["alg"] == "leaky_bucket":
            err = m.check_shown(count, t0, t1)
        else:
            err = m.check_shown(count, g["rule"]["window_ms"], t0, t1)
        self.check(err is None, "GET /v1/paths/%s: %s" % (p.decode(), err))

    def check_sample(self, per_group):
        picks = []
        for g in self.groups:
            picks += [(g, random.randrange(HOT)) for _ in range(per_group // 5)]
            picks += [(g, random.randrange(len(g["models"]))) for _ in range(per_group)]
            for _ in range(3):
                self.check_shown(g, random.randrange(HOT))
        self.check_stored(picks)

    def check_all(self):
        for g in self.groups:
            n = len(g["models"])
            for base in range(0, n, 2000):
                self.check_stored([(g, i) for i in range(base, min(n, base + 2000))])

    def http(self, method, path, body=None):
        """The admin API as conformance.http, with a transport error (a timeout) as status 0 and its text."""
        try:
            return cf.http(self.aport, method, path, body)
        except OSError as e:
            return 0, repr(e).encode()

    # ---- what the operator changed -------------------------------------------------------

    def forget(self, g, i):
        """Path i of group g was reset: its model starts again from nothing."""
        g["models"][i].reset()

    def forget_matching(self, glob):
        """A bulk reset of `glob` ended: every path it matches starts again from nothing. Answers how many."""
        n = 0
        for g in self.groups:
            for i, m in enumerate(g["models"]):
                if fnmatch.fnmatchcase(self.path(g, i).decode(), glob):
                    m.reset()
                    n += 1
        return n
