#!/usr/bin/python3
"""sluiced on a real Redis Cluster (DESIGN.md, "Redis Cluster"; issue 10), from outside.

    /usr/bin/python3 tests/cluster_e2e.py <sluiced> <lua dir>

Starts 3 primaries and 3 replicas (tests/cluster.py), then one sluiced at a time
against one node's URL, the clients through redis-py's RedisCluster:

- drain on every node: leaky buckets filled once on every primary are drained
  exactly (entries removed = floor(rate x (mark - fill time)), within DESIGN's
  +-1), by a daemon that was given one node's address;
- live resharding while the worker drains and a client writes: the slots of busy
  shards moved to other primaries (SETSLOT MIGRATING/IMPORTING + MIGRATE); every
  bucket filled once is exact afterwards, every client call was answered, and
  the worker counted the MOVED/ASK replies;
- failover: kill -9 of a primary; /readyz is 503 (naming the slots) while they
  are uncovered, the replica is promoted, the drain resumes on it within the
  node timeout + 2 s of the kill, and stays exact;
- a node that hangs (SIGSTOP): the other nodes' buckets are drained meanwhile,
  and SIGTERM still ends sluiced with 0 in under 1 s;
- the admin API on the cluster: listing across nodes, path state, reset and bulk
  reset routed by slot, rules reaching the shards' copies on every node, per node
  status and metrics; and conformance.py's admin checks against the cluster;
- foreign layouts: seed 004's leaky bucket (its registry set on one node, its
  keys on all) drained and unregistered when empty, a SCAN layout pruned on
  every primary, and Redisson RRateLimiters (hash, value and permits in one slot)
  reclaimed on every primary.

The last line is "cluster_e2e: N passed, M failed"; exit status 1 when one failed.
"""
import json
import math
import os
import re
import shutil
import signal
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import cluster  # noqa: E402
import conformance  # noqa: E402
from conformance import check, client_keys, free_port, http, shard, spawn_sluiced, stop_daemon  # noqa: E402

NODE_TIMEOUT_MS = 2000   # cluster-node-timeout: a SIGSTOP of 1.2 s is no failure, a kill -9 fails over
SKEW_MS = 200            # max_clock_skew_ms: the drain acts this far behind Redis time
RATE = 20                # entries leaked per second
FILL = 40                # entries a bucket is filled with, once


def wait_http_ready(port, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if http(port, "GET", "/readyz")[0] == 200:
                return True
        except OSError:
            pass
        time.sleep(0.05)
    return False


def daemon(sluiced, tmp, name, url, extra=None):
    port = free_port()
    cfg = {"redis": url, "listen": "127.0.0.1:%d" % port, "drain_interval_ms": 50, "prune_interval_ms": 200,
           "max_clock_skew_ms": SKEW_MS, "redis_timeout_ms": 300,
           "rules": [{"name": "api", "match": "/api/*", "algorithm": "leaky_bucket", "capacity": 1000, "rate": RATE},
                     {"name": "fapi", "match": "/f/*", "algorithm": "leaky_bucket", "capacity": 1000, "rate": RATE},
                     {"name": "slog", "match": "/s/*", "algorithm": "sliding_log", "limit": 100,
                      "window_ms": 1000}]}
    cfg.update(extra or {})
    d, log = spawn_sluiced(sluiced, tmp, name, cfg)
    DAEMONS.append(d)
    ok = wait_http_ready(port)
    # and the rules and the skew horizon in every shard's copy, where the client scripts read them
    deadline = time.monotonic() + 10
    while ok and time.monotonic() < deadline:
        w = worker_json(port)
        if w.get("rule_copies", {}).get("shards_pending") == 0 and w.get("skew", {}).get("shards_pending") == 0:
            break
        time.sleep(0.05)
    return d, log, port, ok


def paths_on_every_primary(c, stem, per_node):
    """Paths stem0, stem1, ... until each primary owns `per_node` of them: {port: [path]}."""
    want = {p: [] for p in c.current_primaries()}
    smap = c.slot_map()
    i = 0
    while any(len(v) < per_node for v in want.values()):
        p = b"%s%d" % (stem, i)
        i += 1
        owner = c.owner_in(smap, cluster.keyslot(b"{%d}" % shard(p)))
        if len(want[owner]) < per_node:
            want[owner].append(p)
    return want


class Client:
    def __init__(self, r, lua_dir):
        self.r = r
        self.lb = open(os.path.join(lua_dir, "leaky_bucket.lua")).read()

    def fill(self, path, n=FILL, rule="api"):
        """One call of cost n at Redis time: the bucket's fill time (its meta's mark)."""
        k = client_keys("leaky_bucket", path)
        rep = self.r.eval(self.lb, 5, *k, path, str(n), "", rule)
        return rep[0] == 1, int(self.r.hget(k[1], "last"))

    def acquire(self, path, rule="api"):
        return self.r.eval(self.lb, 5, *client_keys("leaky_bucket", path), path, "", "", rule)


def exact(r, buckets):
    """(number of buckets whose removed count is floor(rate x (mark - fill)) within +-1, total, worst line)."""
    good, worst = 0, ""
    for path, t0 in buckets.items():
        t0, fill = t0 if isinstance(t0, tuple) else (t0, FILL)
        k = client_keys("leaky_bucket", path)
        level = r.zcard(k[0])
        last = r.hget(k[1], "last")
        removed = fill - level
        if last is None:
            want_removed = fill  # emptied: its meta went with it
        else:
            want_removed = min(fill, math.floor(RATE * (int(last) - t0) / 1000.0 + 1e-9))
        if abs(removed - want_removed) <= 1:
            good += 1
        elif not worst:
            worst = "%r: removed %d, rate says %d (mark %s, fill %d)" % (path, removed, want_removed, last, t0)
    return good, len(buckets), worst


def worker_json(port):
    st, body = http(port, "GET", "/v1/worker")
    return json.loads(body) if st == 200 else {}


# ---- the phases ---------------------------------------------------------------------


def run_drain(c, cl, sluiced, tmp):
    d, log, port, ok = daemon(sluiced, tmp, "drain", c.url(c.primaries[1]))
    check("sluiced given one node's URL is ready on the cluster (/readyz 200)", ok)
    st, body = http(port, "GET", "/readyz")
    rd = json.loads(body) if st == 200 else {}
    check("/readyz says mode cluster, 3 primaries", rd.get("mode") == "cluster" and rd.get("primaries") == 3,
          "%d %r" % (st, body))
    per = paths_on_every_primary(c, b"/api/d", 8)
    buckets = {}
    admitted = 0
    for ps in per.values():
        for p in ps:
            a, t0 = cl.fill(p)
            admitted += a
            buckets[p] = t0
    check("the client script admits on every primary through RedisCluster (no CROSSSLOT)",
          admitted == len(buckets), "%d of %d" % (admitted, len(buckets)))
    time.sleep(1.2)
    w = worker_json(port)
    nodes = w.get("redis", {}).get("nodes", [])
    check("/v1/worker shows 3 primaries, all up, slots summing to 16384",
          len(nodes) == 3 and all(n["up"] for n in nodes) and sum(n["slots"] for n in nodes) == 16384, repr(nodes))
    st, body = http(port, "GET", "/metrics")
    text = body.decode() if st == 200 else ""
    check("/metrics has sluice_redis_node_up 1 for each primary",
          sum(1 for line in text.splitlines() if line.startswith("sluice_redis_node_up{") and line.endswith(" 1")) == 3)
    rc = stop_daemon(d, log)
    good, n, worst = exact(cl.r, buckets)
    check("drain exact on every node: %d buckets on 3 primaries lose floor(rate x busy time) +-1" % n,
          good == n, worst)
    moved = [FILL - cl.r.zcard(client_keys("leaky_bucket", p)[0]) for p in buckets]
    check("... and every bucket was drained (at least 10 entries each)", min(moved) >= 10, repr(moved))
    check("sluiced exits 0", rc == 0, repr(rc))


def run_reshard(c, cl, sluiced, tmp):
    d, log, port, ok = daemon(sluiced, tmp, "reshard", c.url(c.primaries[0]))
    check("sluiced ready for the resharding", ok)
    per = paths_on_every_primary(c, b"/api/r", 6)
    buckets = {}
    for ps in per.values():
        for p in ps:
            buckets[p] = cl.fill(p)[1]
    # the busy shards: those of the first two paths of each primary; a client writes in them meanwhile
    busy = [ps[i] for ps in per.values() for i in range(2)]
    writers = []
    for p in busy:
        k = shard(p)
        j = 0
        while True:
            q = b"/api/w%d" % j
            j += 1
            if shard(q) == k:
                writers.append(q)
                break
    stop = threading.Event()
    res = {"calls": 0, "errors": 0, "last": ""}

    def write():
        wr = c.client()
        wcl = Client(wr, LUA_DIR)
        while not stop.is_set():
            for q in writers:
                try:
                    rep = wcl.acquire(q)
                    res["calls"] += 1 if rep[0] == 1 else 0
                except Exception as e:  # noqa: BLE001 - any failure is the test's finding
                    res["errors"] += 1
                    res["last"] = repr(e)
            time.sleep(0.005)
        wr.close()

    t = threading.Thread(target=write)
    t.start()
    time.sleep(0.3)
    primaries = c.current_primaries()
    moved_keys = 0
    try:
        for p in busy:
            slot = cluster.keyslot(b"{%d}" % shard(p))
            src = c.node_for_slot(slot)
            dst = primaries[(primaries.index(src) + 1) % len(primaries)]
            moved_keys += c.move_slots([slot], dst, batch=2, pause=0.02)
    finally:
        time.sleep(0.5)
        stop.set()
        t.join()
    time.sleep(0.8)
    w = worker_json(port)
    nodes = w.get("redis", {}).get("nodes", [])
    redirects = sum(n["moved"] + n["ask"] for n in nodes)
    check("resharding: %d slots of busy shards moved (%d keys) while the worker drained" % (len(busy), moved_keys),
          moved_keys > 0)
    check("... every client call answered and admitted (%d calls)" % res["calls"],
          res["errors"] == 0 and res["calls"] > 0, res["last"])
    check("... the worker counted the MOVED/ASK replies (%d)" % redirects, redirects > 0, repr(nodes))
    rc = stop_daemon(d, log)
    good, n, worst = exact(cl.r, buckets)
    check("... every bucket filled once is exact afterwards (%d buckets: nothing drained twice, nothing missed)" % n,
          good == n, worst)
    check("sluiced exits 0", rc == 0, repr(rc))


def run_failover(c, cl, sluiced, tmp):
    d, log, port, ok = daemon(sluiced, tmp, "failover", c.url(c.primaries[0]))
    check("sluiced ready for the failover", ok)
    per = paths_on_every_primary(c, b"/api/f", 6)
    victim = c.current_primaries()[-1]
    buckets = {}
    probe = per[victim][0]
    for ps in per.values():
        for p in ps:
            # the probe holds enough not to empty before the failover ends: its drain is seen to resume
            n = 400 if p == probe else FILL
            buckets[p] = (cl.fill(p, n)[1], n)
    time.sleep(0.4)
    # buckets of the other primaries, filled large enough not to empty before the promotion
    others = [p for port_, ps in paths_on_every_primary(c, b"/api/g", 2).items() if port_ != victim for p in ps]
    for p in others:
        cl.fill(p, 300)
    level_at_kill = {p: cl.r.zcard(client_keys("leaky_bucket", p)[0]) for p in others}
    t_kill = time.monotonic()
    c.kill(victim)
    saw_503, why = False, ""
    odd_503 = []
    new = None
    resumed = None
    level0 = None
    while time.monotonic() - t_kill < 15:
        st, body = http(port, "GET", "/readyz")
        if st == 503:
            e = json.loads(body)["error"]
            if not saw_503:
                saw_503, why = True, e["message"]
            if e["code"] != "redis_unavailable" or e.get("reason") != "cluster_down" or not any(
                    re.match(x, e["message"]) for x in (
                    r"redis unavailable: \d+ slots have no node \(slot \d+ among them\)$",
                    r"redis unavailable: slots [\d -]+ \(127\.0\.0\.1:\d+\): cluster_state:fail \(the cluster lacks "
                    r"a node's slots\)$",
                    r"redis unavailable: slots [\d -]+ \(127\.0\.0\.1:%d\): \S" % victim,
                    # the worker's last tick failed on the dead primary, or on a node that said CLUSTERDOWN
                    r"the worker cannot tick: (drain|prune): .*(127\.0\.0\.1:%d|CLUSTERDOWN: the cluster is down)" % victim)):
                odd_503.append(e)
        if new is None:
            try:
                smap = c.slot_map()
                o = c.owner_in(smap, cluster.keyslot(b"{%d}" % shard(probe)))
                if o != victim and o is not None:
                    new = o
                    t_promoted = time.monotonic()
                    level_at_promotion = {p: cl.r.zcard(client_keys("leaky_bucket", p)[0]) for p in others}
            except cluster.ClusterError:
                pass
        if new is not None:
            try:
                r = c.conn(new)
                lv = r.zcard(client_keys("leaky_bucket", probe)[0])
                r.close()
                if os.environ.get("DEBUG"):
                    print("t=%.2f new=%s lv=%s level0=%s" % (time.monotonic() - t_kill, new, lv, level0))
                if level0 is None:
                    level0 = lv
                elif lv < level0:
                    resumed = time.monotonic()
                    break
            except Exception as e:  # noqa: BLE001
                if os.environ.get("DEBUG"):
                    print("probe:", repr(e))
        time.sleep(0.02)
    check("failover: /readyz is 503 while the dead primary's slots are uncovered, naming them",
          saw_503 and "slots" in why, why)
    check("... every such 503 is redis_unavailable, reason cluster_down, with a message DESIGN's routes give: slots "
          "with no node, cluster_state:fail, the dead primary's slots and address, or the worker's tick that "
          "failed on it", saw_503 and not odd_503, repr(odd_503[:2]))
    check("... its replica is promoted", new is not None)
    if new is not None:
        # until the cluster marks the dead primary FAIL (about the node timeout) the other primaries'
        # buckets are drained at their rate; from then to the promotion the whole cluster answers
        # CLUSTERDOWN (cluster-require-full-coverage yes, Redis's default), so nothing can be
        want = int(RATE * (NODE_TIMEOUT_MS / 1000.0 - 0.5))
        least = min(level_at_kill[p] - level_at_promotion[p] for p in others)
        check("... meanwhile the other primaries' buckets kept draining until the cluster refused all (least %d, "
              "at least %d)" % (least, want), least >= want, repr(level_at_promotion))
    took = (resumed - t_kill) if resumed else None
    after = (resumed - t_promoted) if resumed else None
    # the daemon's part is from the promotion on; Redis's own (failure detection, election) is before it
    print("failover: replica promoted %.2f s after the kill (node timeout %.1f s), drain resumed %s s after the kill"
          % (t_promoted - t_kill if new else -1, NODE_TIMEOUT_MS / 1000.0, "%.2f" % took if took else "never"))
    check("... the drain resumes on the new primary within 1 s of its promotion (%s s)"
          % ("%.2f" % after if after is not None else "never"), after is not None and after <= 1.0)
    check("... /readyz is 200 again", wait_http_ready(port, 5.0))
    time.sleep(0.5)
    rc = stop_daemon(d, log)
    good, n, worst = exact(cl.r, buckets)
    check("... and the drain stays exact on every bucket (%d)" % n, good == n, worst)
    check("sluiced exits 0", rc == 0, repr(rc))
    c.restart(victim)  # it comes back as a replica


def run_hang(c, cl, sluiced, tmp):
    d, log, port, ok = daemon(sluiced, tmp, "hang", c.url(c.current_primaries()[0]))
    check("sluiced ready for the hung node", ok)
    per = paths_on_every_primary(c, b"/api/h", 4)
    victim = c.current_primaries()[1]
    others = [p for port_, ps in per.items() if port_ != victim for p in ps]
    for ps in per.values():
        for p in ps:
            cl.fill(p)
    time.sleep(0.3)
    before = {p: cl.r.zcard(client_keys("leaky_bucket", p)[0]) for p in others}
    http(port, "GET", "/v1/rules")  # the admin API holds the rules from here on
    c.kill(victim, signal.SIGSTOP)
    try:
        time.sleep(1.2)
        after = {}
        for p in others:
            after[p] = cl.r.zcard(client_keys("leaky_bucket", p)[0])
        drained = min(before[p] - after[p] for p in others)
        check("a hung primary (SIGSTOP) stalls only its own shards: the others' buckets lose >= 15 in 1.2 s (least %d)"
              % drained, drained >= 15)
        # the admin API on a path of a node that is up, while the one holding the rule store's version hangs
        up_path = [p for port_, ps in per.items() if port_ != victim for p in ps][0]
        t = time.monotonic()
        st, body = http(port, "GET", "/v1/paths/" + up_path.decode().replace("/", "%2F"))
        check("... GET /v1/paths/{path} of a node that is up answers 200 meanwhile (%.2f s; the rule store's "
              "version is on the hung node: %s)" % (time.monotonic() - t, victim == c.node_for_key(b"sluice:rules:version")),
              st == 200, "%d %r" % (st, body))
        t = time.monotonic()
        d.send_signal(signal.SIGTERM)
        try:
            rc = d.wait(5)
        except Exception:  # noqa: BLE001
            d.kill()
            rc = None
        took = time.monotonic() - t
        log.close()
        check("... SIGTERM while it hangs: sluiced exits 0 in under 1 s (%.2f s)" % took, rc == 0 and took < 1.0,
              repr(rc))
    finally:
        c.resume(victim)


def run_admin(c, cl, sluiced, tmp):
    d, log, port, ok = daemon(sluiced, tmp, "admin", c.url(c.current_primaries()[2]))
    check("sluiced ready for the admin checks", ok)
    per = paths_on_every_primary(c, b"/api/e", 3)
    allp = [p for ps in per.values() for p in ps]
    for p in allp:
        cl.fill(p, 3)
    st, body = http(port, "GET", "/v1/paths?match=%2Fapi%2Fe*&count=1000")
    got = sorted(x["path"].encode() for x in json.loads(body).get("paths", [])) if st == 200 else []
    check("GET /v1/paths lists the paths of every node (%d)" % len(allp), got == sorted(allp), "%d %r" % (st, body))
    one = per[c.current_primaries()[1]][0]
    st, body = http(port, "GET", "/v1/paths/" + one.decode().replace("/", "%2F"))
    s = json.loads(body) if st == 200 else {}
    # its 3 entries leak at 20/s: on a slow run they may have gone, its meta (recorded) is still read there
    check("GET /v1/paths/{path} of a path on another node: rule api, capacity 1000, its recorded parameters",
          st == 200 and s.get("rule") == "api" and s.get("capacity") == 1000 and s.get("count") in (0, 1, 2, 3)
          and s.get("recorded") == {"capacity": 1000, "rate": 20}, "%d %r" % (st, body))
    st, body = http(port, "POST", "/v1/paths/" + one.decode().replace("/", "%2F") + "/reset")
    check("POST /v1/paths/{path}/reset on its node deletes its keys",
          st == 200 and cl.r.exists(client_keys("leaky_bucket", one)[0]) == 0, "%d %r" % (st, body))
    st, job = conformance.reset_job(port, '{"match":"/api/e*"}')
    left = sum(cl.r.exists(client_keys("leaky_bucket", p)[0]) for p in allp)
    check("POST /v1/reset by glob (a job) resets the paths of every node (%d left)" % left,
          st == 202 and job.get("state") == "done" and job.get("paths") == len(allp) - 1 and left == 0,
          "%d %r" % (st, job))
    st, body = http(port, "PUT", "/v1/rules/late", '{"match":"/late/*","algorithm":"sliding_log","limit":3,'
                    '"window_ms":1000}')
    check("PUT /v1/rules/{name} on a cluster (201)", st == 201, "%d %r" % (st, body))
    deadline = time.monotonic() + 5
    sample = [0, 1, 517, 1023] + [shard(ps[0]) for ps in per.values()]
    have = 0
    while time.monotonic() < deadline:
        have = sum(1 for k in sample if cl.r.hget(b"sluice:{%d}:rules" % k, "late") is not None)
        if have == len(sample):
            break
        time.sleep(0.1)
    check("... the rule reaches the shards' copies on every node (%d of %d sampled)" % (have, len(sample)),
          have == len(sample))
    # the node holding the rule store's version comes back empty (the version's key alone is lost,
    # the rules hash lives in another slot): the rules edited through the API stay, the store
    # gets a version again
    st, body = http(port, "PUT", "/v1/rules/api", '{"match":"/api/*","algorithm":"leaky_bucket","capacity":20,'
                    '"rate":%d}' % RATE)
    check("PUT /v1/rules/api changes the config's rule (capacity 20)", st == 200, "%d %r" % (st, body))
    cl.r.delete("sluice:rules:version")
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline and cl.r.get("sluice:rules:version") is None:
        time.sleep(0.05)
    time.sleep(0.3)
    st, body = http(port, "GET", "/v1/rules/api")
    rule = json.loads(body) if st == 200 else {}
    check("the rule store's version lost alone: a version again, the API's edit kept (capacity %s)"
          % rule.get("capacity"), cl.r.get("sluice:rules:version") is not None and rule.get("capacity") == 20,
          "%d %r" % (st, body))
    with open(os.path.join(tmp, "admin.log")) as f:
        text = f.read()
    check("... and logged rules_version_lost, not rules_lost", "event=rules_version_lost" in text
          and "event=rules_lost" not in text)
    # the rules hash's node comes back empty (the version's did not): the config's rules are stored again
    cl.r.delete("sluice:rules")
    deadline = time.monotonic() + 10
    # the reseed stores the config's three rules one after another: wait for all of them
    while time.monotonic() < deadline and any(cl.r.hget("sluice:rules", n) is None for n in ("api", "fapi", "slog")):
        time.sleep(0.05)
    st, body = http(port, "GET", "/v1/rules/api")
    check("the rules hash lost alone: the config's rules stored again (api, capacity %s)"
          % (json.loads(body).get("capacity") if st == 200 else st), st == 200 and json.loads(body)["capacity"] == 1000,
          "%d %r" % (st, body))
    # every rule deleted through the API is no loss: nothing comes back
    for name in [x["name"] for x in json.loads(http(port, "GET", "/v1/rules")[1])["rules"]]:
        http(port, "DELETE", "/v1/rules/" + name)
    time.sleep(1.5)
    st, body = http(port, "GET", "/v1/rules")
    check("deleting every rule through the API leaves none, and none comes back",
          st == 200 and json.loads(body)["rules"] == [] and cl.r.hkeys("sluice:rules") == [b":empty"],
          "%d %r %r" % (st, body, cl.r.hkeys("sluice:rules")))
    rc = stop_daemon(d, log)
    check("sluiced exits 0", rc == 0, repr(rc))
    with open(os.path.join(tmp, "admin.log")) as f:
        text = f.read()
    check("... and logged rules_lost once", text.count("event=rules_lost") == 1, str(text.count("event=rules_lost")))


def run_foreign(c, cl, sluiced, tmp):
    layouts = [{"name": "seed004", "algorithm": "leaky_bucket", "key_prefix": "LeakyBucket:",
                "registry": "LeakyBucket::pathSet"},
               {"name": "seed002", "algorithm": "sliding_log", "key_prefix": "rate_limit:", "scan": True},
               {"name": "seed004-token", "algorithm": "token_bucket", "kind": "redisson",
                "key_prefix": "TokenBucketRateLimiter:", "scan": True}]
    d, log, port, ok = daemon(sluiced, tmp, "foreign", c.url(c.current_primaries()[0]), {"layouts": layouts})
    check("sluiced ready with foreign layouts", ok)
    r = cl.r
    now = int(r.time()[0]) * 1000
    keys_by_node = {}
    fpaths = []
    for i in range(30):
        p = "/f/%d" % i
        key = "LeakyBucket:" + p
        for j in range(3):
            r.zadd(key, {"%d-%d" % (now, j): now})
        r.sadd("LeakyBucket::pathSet", p)
        fpaths.append(p)
        keys_by_node.setdefault(c.node_for_key(key.encode()), 0)
        keys_by_node[c.node_for_key(key.encode())] += 1
    old = now - 60000
    logs = []
    for i in range(30):
        key = "rate_limit:/s/%d" % i
        r.zadd(key, {"a%d" % i: old, "b%d" % i: old + 1})
        logs.append(key)
    # Redisson RRateLimiters (5 per second) idle for a minute: value 3, two permits of 1 out
    limiters, rnodes = [], set()
    for i in range(30):
        name = "TokenBucketRateLimiter:/r/%d" % i
        r.hset(name, mapping={"rate": 5, "interval": 1000, "keepAliveTime": 0, "type": 0})
        r.set("{%s}:value" % name, 3)
        r.zadd("{%s}:permits" % name, {b"\x10" + bytes([i, j]) * 8 + b"\x01\x00\x00\x00": old + j for j in range(2)})
        limiters.append(name)
        rnodes.add(c.node_for_key(name.encode()))

    def rleft():
        return sum(r.exists("{%s}:value" % n) + r.exists("{%s}:permits" % n) for n in limiters)

    deadline = time.monotonic() + 6
    while time.monotonic() < deadline:
        left = sum(r.exists("LeakyBucket:" + p) for p in fpaths) + sum(r.exists(k) for k in logs) + rleft()
        if left == 0 and r.scard("LeakyBucket::pathSet") == 0:
            break
        time.sleep(0.1)
    check("foreign leaky buckets on %d primaries (registry set on one) drained empty" % len(keys_by_node),
          sum(r.exists("LeakyBucket:" + p) for p in fpaths) == 0 and len(keys_by_node) == 3)
    check("... and taken out of their registry set when empty (%d left)" % r.scard("LeakyBucket::pathSet"),
          r.scard("LeakyBucket::pathSet") == 0)
    check("a SCAN layout's expired logs pruned on every primary (%d left)" % sum(r.exists(k) for k in logs),
          sum(r.exists(k) for k in logs) == 0)
    check("Redisson RRateLimiters idle for their interval on %d primaries: value and permits reclaimed (%d keys "
          "left), their hashes kept" % (len(rnodes), rleft()),
          rleft() == 0 and len(rnodes) == 3 and all(r.hget(n, "rate") == b"5" for n in limiters))
    rc = stop_daemon(d, log)
    check("sluiced exits 0", rc == 0, repr(rc))


def run_conformance_admin(c, cl, sluiced, tmp):
    """conformance.py's admin checks, with the cluster as the Redis."""
    conformance.run_admin(cl.r, sluiced, LUA_DIR, tmp, url=c.url(c.current_primaries()[0]))


LUA_DIR = None
DAEMONS = []  # every sluiced started: a phase that raised is not left running
PHASES = [globals()[n] for n in os.environ.get('PHASES', '').split(',') if n]


def main():
    global LUA_DIR
    sluiced, LUA_DIR = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="sluice-cluster-e2e-")
    c = None
    try:
        t = time.monotonic()
        c = cluster.start_cluster(tmp, primaries=3, replicas=1, node_timeout_ms=NODE_TIMEOUT_MS)
        print("cluster_e2e: 3 primaries + 3 replicas up in %.2f s" % (time.monotonic() - t))
        cl = Client(c.client(), LUA_DIR)
        for phase in PHASES or (run_conformance_admin, run_drain, run_admin, run_foreign, run_reshard, run_hang, run_failover):
            print("== %s" % phase.__name__)
            try:
                phase(c, cl, sluiced, tmp)
            except Exception as e:  # noqa: BLE001 - a phase that raised is a failure, the others still run
                check("%s ran to its end" % phase.__name__, False, repr(e))
                cl = Client(c.client(), LUA_DIR)
    finally:
        for d in DAEMONS:
            if d.poll() is None:
                d.kill()
                d.wait()
        if c:
            c.stop()
        if not os.environ.get('KEEP'):
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print('kept', tmp)
    print("cluster_e2e: %d passed, %d failed" % (conformance.PASSED, conformance.FAILED))
    sys.exit(1 if conformance.FAILED else 0)


if __name__ == "__main__":
    main()
