#!/usr/bin/python3
"""The five client scripts on a real Redis Cluster, through redis-py's RedisCluster
(DESIGN.md, "Client scripts: the calling contract" and "Redis Cluster").

A private cluster of 3 primaries and 3 replicas (tests/cluster.py).  An
application calls each script the way DESIGN.md says, with one key function
(conformance.py's client_keys: every key of a call carries its shard's tag
{k}) and EVALSHA through RedisCluster, with explicit parameters (ARGV[4] "")
and explicit times.  Checked:

  - every reply is exactly what the algorithm's definition gives
    (conformance.py's models decide; the other three numbers follow from the
    model's state by lua/README.md's definitions), for paths spread so that
    every primary serves some; no call is refused CROSSSLOT;
  - each path's keys are in slot keyslot("{k}") (CLUSTER KEYSLOT), held by the
    primary that owns that slot, and no other primary holds a key of it;
  - a leaky bucket's trace crosses a live resharding of its (busy) shard's
    slot to another primary while the client keeps calling (redis-py follows
    ASK, TRYAGAIN and MOVED): every reply matches the model;
  - a failover of a primary (SIGKILL, a replica takes over) loses nothing the
    primary had replicated: the trace goes on exactly on the new primary;
  - tests/cluster.py leaves nothing behind: stop(), and a process that
    started a cluster and was killed (SIGKILL: the nodes' PR_SET_PDEATHSIG) or
    terminated (SIGTERM: its handler and atexit).

No sluiced runs here: the daemon's cluster layer is tested on its own.

Usage: tests/cluster_clients.py LUA_DIR   (run by `make test`; `make lua` builds LUA_DIR)
Prints one line per check and "cluster_clients: N passed, M failed"; exit 1 on
a failure.  Needs Debian's python3-redis (4.3) and redis-server 7.
"""
import logging
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import redis

import cluster
import conformance as cf
from conformance import check

ALGS = ("leaky_bucket", "token_bucket", "sliding_log", "sliding_counter", "fixed_window")
# explicit parameters (ARGV[5..]) per algorithm, small enough that traces reach denials
PARAMS = {"leaky_bucket": ["5", "4"], "token_bucket": ["5", "4"], "sliding_log": ["4", "1000"],
          "sliding_counter": ["4", "1000", "5"], "fixed_window": ["4", "1000"]}
EPS = 1e-9


# ---- the replies' four numbers, from conformance.py's models ------------------------
#
# conformance.py's models say whether a call is admitted; lua/README.md defines
# the rest of the reply from the state after the call, at t = max(now, mark):
# remaining, retry_after_ms (0 when admitted, -1 when n exceeds the capacity or
# limit, else at least 1) and reset_ms.


def _first_ms(ok, lo):
    """The smallest whole ms x >= lo with ok(x) (ok monotone), found by doubling then bisecting."""
    if ok(lo):
        return lo
    step = 1
    while not ok(lo + step):
        step *= 2
    a, b = lo + step // 2, lo + step  # ok(b), not ok(a) (a == lo when step is 1)
    while b - a > 1:
        m = (a + b) // 2
        a, b = (a, m) if ok(m) else (m, b)
    return b


class Reference:
    """One path's reference: conformance.py's model of `alg` with `params`; call() gives the reply's
    four integers."""

    def __init__(self, alg, params):
        self.alg = alg
        self.m = cf.MODELS[alg](*[float(p) if "." in p else int(p) for p in params])

    def call(self, now, n):
        m, alg = self.m, self.alg
        if alg == "token_bucket":
            before = (m.tokens, m.last)  # its state at t, for a denial (which writes nothing)
        ok = m.call(now, n)
        return getattr(self, "_" + alg)(now, n, ok, *([before] if alg == "token_bucket" else []))

    def _leaky_bucket(self, now, n, ok):
        m = self.m
        t = now if m.last is None else max(now, m.last)
        leaked = lambda x: int(m.rate * (x - m.last) / 1000 + m.carry + EPS)  # noqa: E731
        remaining = max(0, m.cap - m.level)
        if ok:
            retry = 0
        elif n > m.cap:
            retry = -1
        else:
            need = m.level + n - m.cap
            retry = max(1, _first_ms(lambda x: leaked(x) >= need, t) - t)
        reset = 0 if m.level == 0 else _first_ms(lambda x: leaked(x) >= 1, t) - t
        return [int(ok), remaining, retry, reset]

    def _token_bucket(self, now, n, ok, before):
        m = self.m
        tokens, last = (m.tokens, m.last) if ok else before
        t = now if last is None else max(now, last)
        cur = m.cap if last is None else min(m.cap, tokens + m.rate * (t - last) / 1000)
        at = lambda x: cur + m.rate * (x - t) / 1000 + EPS  # noqa: E731
        if ok:
            retry = 0
        elif n > m.cap:
            retry = -1
        else:
            retry = max(1, _first_ms(lambda x: at(x) >= n, t) - t)
        reset = 0 if cur + EPS >= m.cap else _first_ms(lambda x: at(x) >= m.cap, t) - t
        return [int(ok), int(cur + EPS), retry, reset]

    def _sliding_log(self, now, n, ok):
        m = self.m
        t = max([now] + m.entries[-1:])
        live = [s for s in m.entries if s > t - m.window]
        if ok:
            retry = 0
        elif n > m.limit:
            retry = -1
        else:
            retry = max(1, live[len(live) + n - m.limit - 1] + m.window - t)
        return [int(ok), max(0, m.limit - len(live)), retry, live[0] + m.window - t if live else 0]

    def _sliding_counter(self, now, n, ok):
        m = self.m
        t = now if m.mark is None else max(now, m.mark)
        cur = t // m.sub
        js = [j for j in range(cur - m.n + 1, cur + 1) if m.counts.get(j, 0)]
        total = sum(m.counts[j] for j in js)
        if ok:
            retry = 0
        elif n > m.limit:
            retry = -1
        else:
            acc, retry = 0, None
            for j in js:
                acc += m.counts[j]
                if acc >= total + n - m.limit:
                    retry = max(1, (j + m.n) * m.sub - t)
                    break
        return [int(ok), max(0, m.limit - total), retry, (js[0] + m.n) * m.sub - t if js else 0]

    def _fixed_window(self, now, n, ok):
        m = self.m
        t = now if m.mark is None else max(now, m.mark)
        w = t // m.window
        count = m.count if m.index == w else 0
        end = (w + 1) * m.window - t
        retry = 0 if ok else -1 if n > m.limit else end
        return [int(ok), max(0, m.limit - count), retry, end]


# ---- calling through RedisCluster ----------------------------------------------------


class Redirects(logging.Handler):
    """Counts what redis-py's RedisCluster followed, from the records it logs (at ERROR, with the
    exception's class name as the message): AskError, MovedError, TryAgainError, ..."""

    def __init__(self):
        super().__init__()
        self.counts = {}

    def emit(self, record):
        m = record.getMessage()
        if m.endswith("Error") or m.endswith("Error'>"):
            key = m.split(".")[-1].rstrip("'>")
            self.counts[key] = self.counts.get(key, 0) + 1

    def take(self):
        """The counts since the last take(), as a dict; reset."""
        out, self.counts = self.counts, {}
        return out


class Caller:
    """EVALSHA of the client scripts through a RedisCluster.  Counts what came back other than a
    reply (CROSSSLOT, other errors); sends a call again when it did not run: TRYAGAIN past
    redis-py's own retries ("TTL exhausted"), a node gone (a failover), NOSCRIPT (a promoted
    replica has no script: SCRIPT LOAD is not replicated; the script is loaded on the slot's
    node, which redis-py 4.3 still calls a replica, so its script_load, sent to the primaries
    it knows, misses it)."""

    def __init__(self, rc, lua_dir):
        self.rc, self.sha, self.src = rc, {}, {}
        for alg in ALGS:
            self.src[alg] = open(os.path.join(lua_dir, alg + ".lua")).read()
            self.sha[alg] = rc.script_load(self.src[alg])  # redis-py: SCRIPT LOAD on every primary
        self.crossslot, self.errors, self.retried, self.noscript = 0, [], 0, 0
        self.longest_retry = 0.0
        self.redirects = Redirects()
        logging.getLogger("redis.cluster").addHandler(self.redirects)

    def call(self, alg, path, n, now, params=None):
        keys = cf.client_keys(alg, path)
        args = [path, str(n), str(now), ""] + (PARAMS[alg] if params is None else params)
        t0, loads = None, 0
        try:
            while True:
                try:
                    return self.rc.evalsha(self.sha[alg], 5, *keys, *args)
                except redis.exceptions.NoScriptError as e:
                    loads += 1
                    if loads > 3:
                        self.errors.append("NOSCRIPT after 3 loads: %r" % e)
                        return None
                    self.noscript += 1
                    self.rc.execute_command("SCRIPT LOAD", self.src[alg],
                                            target_nodes=self.rc.get_node_from_key(keys[0]))
                except (redis.exceptions.TryAgainError, redis.exceptions.ClusterError,
                        redis.exceptions.ConnectionError) as e:
                    if isinstance(e, redis.exceptions.ClusterError) and "TTL exhausted" not in str(e):
                        self.errors.append(repr(e))
                        return None
                    t0 = t0 or time.monotonic()
                    if time.monotonic() - t0 > 10:
                        self.errors.append("not run for 10 s: %r" % e)
                        return None
                    self.retried += 1
                    time.sleep(0.005)
                except (redis.exceptions.ResponseError, redis.exceptions.RedisClusterException) as e:
                    if "CROSSSLOT" in str(e) or "same key slot" in str(e) or "same slot" in str(e):
                        self.crossslot += 1
                    self.errors.append(repr(e))
                    return None
        finally:
            if t0 is not None:
                self.longest_retry = max(self.longest_retry, time.monotonic() - t0)


def paths_on(c, prefix, per_primary, alg=None):
    """`per_primary` paths prefix<i> for each primary (by the owner of their shard's slot)."""
    smap = c.slot_map()
    want = {p: [] for _, _, p, _ in smap}
    i = 0
    while any(len(v) < per_primary for v in want.values()):
        p = b"%s%d" % (prefix, i)
        owner = c.owner_in(smap, cluster.keyslot(b"{%d}" % cf.shard(p)))
        if len(want[owner]) < per_primary:
            want[owner].append(p)
        i += 1
    return [p for v in want.values() for p in v]


# ---- the checks ------------------------------------------------------------------------


def run_traces(c, caller, t0):
    """Each algorithm on 4 paths per primary: a trace of 30 calls at random steps and costs."""
    rnd = random.Random(20261202)
    smap = c.slot_map()
    for alg in ALGS:
        paths = paths_on(c, ("/cl/%s/" % alg).encode(), 4)
        bad, first_bad, calls = 0, "", 0
        before = len(caller.errors)
        for path in paths:
            ref, now = Reference(alg, PARAMS[alg]), t0
            for _ in range(30):
                now += rnd.choice((0, 1, 7, 60, 150, 250, 400, 999))
                n = rnd.choice((1, 1, 1, 2, 3))
                want, got = ref.call(now, n) + [b""], caller.call(alg, path, n, now)
                calls += 1
                if got != want:
                    bad += 1
                    first_bad = first_bad or "%r at %d n=%d: got %r, want %r" % (path, now - t0, n, got, want)
        owners = {c.owner_in(smap, cluster.keyslot(b"{%d}" % cf.shard(p))) for p in paths}
        check("%s: %d calls on %d paths over %d primaries, every reply as the model gives" % (
            alg, calls, len(paths), len(owners)),
            bad == 0 and owners == set(c.primaries), first_bad or "errors %r" % caller.errors[before:before + 2])
        # where the keys are
        wrong = []
        for path in paths:
            k = cf.shard(path)
            slot = cluster.keyslot(b"{%d}" % k)
            keys = cf.client_keys(alg, path)
            owner = c.owner_in(smap, slot)
            with c.conn(owner) as r:
                slots = {r.execute_command("CLUSTER", "KEYSLOT", key) for key in keys}
                held = r.exists(keys[0]) == 1 and r.zscore(keys[2], path) is not None
            elsewhere = []
            for p in c.primaries:
                if p != owner:
                    with c.conn(p) as r:
                        if r.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot):
                            elsewhere.append(p)
            if slots != {slot} or not held or elsewhere:
                wrong.append("%r: slots %s (want %d), state and registry on %d: %s, keys of the slot on %s" % (
                    path, slots, slot, owner, held, elsewhere))
        check("%s: every key of a path is in slot keyslot({k}) (CLUSTER KEYSLOT), the state and the due "
              "index entry on that slot's primary, nothing of it on the others" % alg, not wrong, "; ".join(wrong[:2]))
    check("no call was refused CROSSSLOT (nor with any other error)", caller.crossslot == 0 and not caller.errors,
          "%d CROSSSLOT, errors %r" % (caller.crossslot, caller.errors[:3]))
    # ... and CROSSSLOT is what a call would get with keys of two shards: the check above can fail
    p1, p2 = paths_on(c, b"/cl/x/", 1)[:2]
    owner = c.node_for_slot(cluster.keyslot(b"{%d}" % cf.shard(p1)))
    keys = cf.client_keys("leaky_bucket", p1)[:4] + cf.client_keys("leaky_bucket", p2)[4:]
    with c.conn(owner) as r:
        try:
            r.evalsha(caller.sha["leaky_bucket"], 5, *keys, p1, "", "", "", *PARAMS["leaky_bucket"])
            err = ""
        except redis.ResponseError as e:
            err = str(e)
    check("(keys of two shards in one call are refused CROSSSLOT by the node itself)", "CROSSSLOT" in err, err)


def trace(caller, path, ref, now, calls, step=37, until=None):
    """`calls` calls of the leaky bucket on `path` (costs 1, 2, 1, 3, ...), `step` ms apart from
    `now` (and then on while until() is false, when given); (calls made, mismatches, the first
    one, the last now)."""
    made, bad, first = 0, 0, ""
    while made < calls or (until is not None and not until()):
        now += step
        n = (1, 2, 1, 3)[made % 4]
        want, got = ref.call(now, n) + [b""], caller.call("leaky_bucket", path, n, now)
        made += 1
        if got != want:
            bad += 1
            first = first or "%r call at +%d n=%d: got %r, want %r" % (path, now % 3600000, n, got, want)
    return made, bad, first, now


def run_resharding(c, caller, t0):
    """A leaky bucket's trace on a busy shard across moves of the shard's slot: step by step
    (ASK for certain), then back by move_slots in a thread while the client calls."""
    # The busy shard: 600 more leaky buckets in it (1200+ keys to migrate), and the rules copy
    # that a running sluiced writes into every shard: a multi-key call on a migrating slot whose
    # keys are not all on one node is answered TRYAGAIN, so without it every call of the
    # migration would be (the rules copy is one of the five keys).
    path = paths_on(c, b"/cl/busy/", 1)[0]
    k = cf.shard(path)
    slot = cluster.keyslot(b"{%d}" % k)
    src = c.node_for_slot(slot)
    dst = next(p for p in c.primaries if p != src)
    tag = next(t for t in (b"t%d" % i for i in range(100000)) if cf.shard(b"{%s}" % t) == k)
    with c.conn(src) as r:
        r.hset(b"sluice:{%d}:rules" % k, ":max_clock_skew_ms", "10000")
        pipe = r.pipeline(transaction=False)
        for i in range(600):
            p = b"{%s}/busy/%d" % (tag, i)
            pipe.evalsha(caller.sha["leaky_bucket"], 5, *cf.client_keys("leaky_bucket", p), p, "2", str(t0), "",
                         "100", "0.001")
        pipe.execute()
    ref = Reference("leaky_bucket", PARAMS["leaky_bucket"])
    keys = cf.client_keys("leaky_bucket", path)
    made, bad, first, now = trace(caller, path, ref, t0, 20)
    caller.redirects.take()

    # step by step: MIGRATING/IMPORTING, then every other key, then the path's own five, then NODE
    steps, counts = [], []
    c.begin_migration(slot, dst)
    steps.append(("begun", trace(caller, path, ref, now, 20)))
    now = steps[-1][1][3]
    counts.append(caller.redirects.take())
    with c.conn(src) as r:
        others = [x for x in r.execute_command("CLUSTER", "GETKEYSINSLOT", slot, 100000) if x not in keys]
    c.migrate_keys(slot, keys=others)
    steps.append(("the other keys moved", trace(caller, path, ref, now, 20)))
    now = steps[-1][1][3]
    counts.append(caller.redirects.take())
    c.migrate_keys(slot, keys=keys)
    steps.append(("its keys moved", trace(caller, path, ref, now, 20)))
    now = steps[-1][1][3]
    counts.append(caller.redirects.take())
    c.finish_migration(slot)
    c.wait_ok()
    steps.append(("finished", trace(caller, path, ref, now, 20)))
    now = steps[-1][1][3]
    counts.append(caller.redirects.take())
    bad = sum(s[1][1] for s in steps)
    check("resharding step by step (slot %d of shard %d, %d keys, %d to %d): every reply as the model gives" % (
        slot, k, len(others) + len(keys), src, dst), bad == 0 and len(others) >= 1200,
        next((s[1][2] for s in steps if s[1][1]), ""))
    check("... served by the source while it held the path's keys (no redirection): %r, %r" % (counts[0], counts[1]),
          not counts[0] and not counts[1])
    check("... ASK to the target once they moved (%r), MOVED once the slot is its (%r)" % (counts[2], counts[3]),
          counts[2].get("AskError", 0) >= 20 and counts[3].get("MovedError", 0) >= 1 and
          not counts[3].get("AskError"))
    with c.conn(src) as s, c.conn(dst) as d:
        left, there = s.execute_command("CLUSTER", "COUNTKEYSINSLOT", slot), d.exists(*keys)
    check("... the path's five keys on the new owner, none of the slot's left on the old",
          there == 5 and left == 0 and c.node_for_slot(slot) == dst, "on %d: %d, left on %d: %d" % (
              dst, there, src, left))

    # a token bucket keeps no meta key: on a migrating slot, its calls are TRYAGAIN throughout
    tb = b"{%s}/tb" % tag
    caller.call("token_bucket", tb, 1, now)
    c.begin_migration(slot, src)
    t = time.monotonic()
    retried = caller.retried
    try:
        caller.rc.evalsha(caller.sha["token_bucket"], 5, *cf.client_keys("token_bucket", tb), tb, "1", str(now), "",
                          *PARAMS["token_bucket"])
        note = "served"
    except redis.exceptions.RedisError as e:
        note = repr(e)
    print("     note: a token bucket (no meta key) on a migrating slot whose keys are all on the source: %s "
          "after %.0f ms of redis-py's retries %r" % (note, (time.monotonic() - t) * 1000, caller.redirects.take()))
    caller.retried = retried

    # back to the source by move_slots, in a thread, while the client calls
    moved, done = [], threading.Event()

    def reshard():
        try:
            moved.append(c.move_slots([slot], src, batch=20, pause=0.002))
        except Exception as e:  # reported by the check
            moved.append(e)
        done.set()

    # the slot is MIGRATING to src already (the note's begin): move_slots picks it up from there
    th = threading.Thread(target=reshard)
    th.start()
    made, bad, first, now = trace(caller, path, ref, now, 20, until=done.is_set)
    th.join()
    after = trace(caller, path, ref, now, 20)
    now = after[3]
    ok_move = len(moved) == 1 and isinstance(moved[0], int)
    check("resharding by move_slots while a client calls (%s keys back to %d): %d calls during it, %d after, every "
          "reply as the model gives" % (moved[0] if ok_move else "?", src, made, after[0]),
          ok_move and bad == 0 and after[1] == 0 and c.node_for_slot(slot) == src, first or after[2] or repr(moved))
    print("     (redis-py followed %r; %d calls sent again after redis-py's own TRYAGAIN retries, the longest "
          "wait %.0f ms)" % (caller.redirects.take(), caller.retried, caller.longest_retry * 1000))
    return path, ref, now


def run_failover(c, caller, path, ref, now):
    """SIGKILL of the primary of `path`'s slot after WAIT: its replica takes over with the state."""
    slot = cluster.keyslot(b"{%d}" % cf.shard(path))
    old = c.node_for_slot(slot)
    with c.conn(old) as r:
        acked = r.execute_command("WAIT", 1, 2000)
    t = time.monotonic()
    c.kill(old, signal.SIGKILL)
    try:
        new = c.wait_failover(old, timeout=15)
        took, err = time.monotonic() - t, ""
    except cluster.ClusterError as e:
        new, took, err = None, time.monotonic() - t, str(e)
    check("failover: SIGKILL of primary %d (WAIT acked by %d); a replica owns its slots, cluster_state:ok "
          "everywhere, in %.1f s" % (old, acked, took), new is not None and new != old, err[:600])
    if new is None:
        return
    made, bad, first_bad, now = trace(caller, path, ref, now, 40)
    check("failover: the trace goes on exactly on the new primary %d (NOSCRIPT reloads: %d)" % (new, caller.noscript),
          bad == 0, "%s; errors %r" % (first_bad, caller.errors[-2:]))
    t = time.monotonic()
    c.restart(old)
    # cluster_state is ok before the restarted node has heard who took its slots: wait until the
    # map lists it as a replica (it learns so by gossip, usually within a node timeout).
    rejoined, err, deadline = False, "", time.monotonic() + 15
    while not rejoined and time.monotonic() < deadline:
        try:
            smap = c.wait_ok(timeout=max(0.1, deadline - time.monotonic()))
            rejoined = any(old in reps for _, _, _, reps in smap)
            err = "" if rejoined else "not a replica in the map after 15 s: " + repr(smap)
        except cluster.ClusterError as e:
            err = str(e)
        if not rejoined:
            time.sleep(0.05)
    check("failover: the old primary, restarted, rejoins as a replica (%.1f s)" % (time.monotonic() - t), rejoined,
          err[:600])


CHILD = r"""
import os, sys, time
sys.path.insert(0, %r)
import cluster
c = cluster.start_cluster(sys.argv[1], primaries=3, replicas=0)
print(" ".join(str(p) for p in c.pids()), flush=True)
time.sleep(60)
"""


def gone(pids, timeout=5.0):
    """Until none of `pids` is running (kill(pid, 0) fails, zombies of ours reaped); the ones left."""
    deadline = time.monotonic() + timeout
    while True:
        left = []
        for pid in pids:
            try:
                os.kill(pid, 0)
                try:
                    st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
                except OSError:
                    st = "?"
                if st != "Z":
                    left.append(pid)
            except ProcessLookupError:
                pass
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.02)


def run_cleanup(tmp):
    """A process that started a cluster dies by SIGKILL (PDEATHSIG) or SIGTERM (its handler): no node is left."""
    here = os.path.dirname(os.path.abspath(__file__))
    kids = {}
    for sig in (signal.SIGKILL, signal.SIGTERM):
        d = os.path.join(tmp, "child-%d" % sig)
        os.makedirs(d)
        kids[sig] = subprocess.Popen([sys.executable, "-c", CHILD % here, d], stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
    for sig, kid in kids.items():
        line = kid.stdout.readline().decode()
        pids = [int(x) for x in line.split()]
        if len(pids) != 3:
            check("cleanup: a child started a cluster", False, line + kid.stderr.read().decode()[-600:])
            kid.kill()
            continue
        kid.send_signal(sig)
        kid.wait(10)
        left = gone(pids)
        check("cleanup: the 3 nodes of a process killed by %s are gone (kill(pid, 0) fails)" % signal.Signals(sig).name,
              not left, "left %s" % left)


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: cluster_clients.py LUA_DIR")
    lua_dir = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="sluice-cluster-")
    c = None
    try:
        t = time.monotonic()
        c = cluster.start_cluster(os.path.join(tmp, "main"), primaries=3, replicas=1)
        check("a cluster of 3 primaries and 3 replicas started (%.2f s), every node cluster_state:ok with one map"
              % c.start_s, len(c.primaries) == 3 and all(len(c.replicas_of[p]) == 1 for p in c.primaries),
              repr(c.replicas_of))
        smap = c.slot_map()
        check("its map covers the 16384 slots, one replica per primary",
              sum(e - s + 1 for s, e, _, _ in smap) == cluster.SLOTS and all(len(r) == 1 for _, _, _, r in smap),
              repr(smap))
        # DESIGN: shard(path) = keyslot(path) mod 1024, keyslot as CLUSTER KEYSLOT answers it
        odd = [b"/api/users", b"}x", b"{a}b", b"{}x", b"{", b"a{b}c{d}", b"a\0b", b"\xff\xfe", b"x" * 1000]
        with c.conn(c.primaries[0]) as r:
            bad = [(q, cf.shard(q), r.execute_command("CLUSTER", "KEYSLOT", q)) for q in odd]
        bad = [x for x in bad if x[1] != x[2] % 1024]
        check("shard(path) is CLUSTER KEYSLOT(path) mod 1024 on the cluster, for %d awkward paths" % len(odd),
              not bad, repr(bad[:3]))
        rc = c.client()
        caller = Caller(rc, lua_dir)
        with c.conn(c.primaries[0]) as r:
            t0 = (int(r.time()[0]) - 600) * 1000  # a whole second, 10 minutes ago: explicit times
        run_traces(c, caller, t0)
        path, ref, now = run_resharding(c, caller, t0)
        run_failover(c, caller, path, ref, now)
        pids = c.pids()
        t = time.monotonic()
        c.stop()
        took = time.monotonic() - t
        left = gone(pids, 1.0)
        check("stop() ends every node (%d) in %.2f s: kill(pid, 0) fails for each" % (len(pids), took), not left,
              "left %s" % left)
        run_cleanup(tmp)
    except cluster.ClusterError as e:
        check("the cluster harness", False, str(e))
    finally:
        if c is not None:
            c.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print("cluster_clients: %d passed, %d failed" % (cf.PASSED, cf.FAILED))
    sys.exit(1 if cf.FAILED else 0)


if __name__ == "__main__":
    main()
