#!/usr/bin/python3
"""Hostile paths stay in their own keys and slot (issue 13), end to end.

A path is any bytes (DESIGN.md, "Client scripts: the calling contract").  For
each path of HOSTILE (braces, NUL, CR/LF, invalid UTF-8, '%' and %2F-like
text, spaces, glob characters, 10 kB) and each of the five algorithms, this
suite checks, on a one-node Redis Cluster (a real cluster-enabled
redis-server owning all 16384 slots: it refuses a script whose keys are in two
slots, and answers CLUSTER KEYSLOT):

- the client script (lua/<algorithm>.lua, DESIGN.md's five KEYS and ARGV)
  wrote only the keys key layout 2 names for the path's shard
  (shard = keyslot(path) mod 1024, every key tagged {k}), nothing else
  appeared (a full SCAN before and after), and every key it wrote is in the
  slot of {k} by the server's CLUSTER KEYSLOT;
- the running sluiced's worker maintained it: its state after the drain,
  prune, repair or reclaim is exactly what the recorded rate and the times
  give, and the worker's counters moved by exactly that;
- every admin route that takes a path, with the path percent-encoded as a
  client does (urllib.parse.quote(path, safe='')), %00 and invalid UTF-8
  included: GET /v1/paths/{path} answers that path's exact state, the path in
  its JSON as README says ("path_encoding": "percent" for bytes that are not
  UTF-8 or hold NUL), and the shown form is accepted back in the URL; the
  listing (by an escaped match, and the whole listing) shows it once with the
  same state; POST /v1/paths/{path}/reset and POST /v1/reset (a job, with and
  without dry_run) remove exactly its keys and nothing else;
- the foreign layouts of examples/seeds.json (seed 004's leaky bucket with
  its registry set, seeds 000 and 002's sliding logs and seed 001's counters
  found by SCAN): the worker drains, prunes and repairs keys holding the
  hostile paths, keeps a seed-004 bucket's meta at the one name in the data
  key's slot, and the admin routes read and reset them.

Usage: tests/hostile_e2e.py SLUICED LUA_DIR   (run by `make test`)
Prints one line per check and "hostile_e2e: N passed, M failed"; exit 1 on a
failure.  Uses tests/conformance.py (shard function, key names, daemon
helpers) and tests/cluster.py (the cluster harness).
"""
import itertools
import json
import os
import shutil
import sys
import tempfile
import time
import urllib.parse

import redis

import cluster
import conformance as cf
from conformance import check

HOSTILE = [
    b"{", b"}", b"{}", b"}{", b"{a}b", b"a{b{c}}d", b"{{x}}", b"{}{y}", b"x{839}y", b"{839}",
    b"a\x00b", b"\x00", b"\x00{\x00}", b"line\nbreak", b"cr\r\nlf\r",
    b"\xff\xfe", b"/bad/\xc3\x28", b"\xed\xa0\x80", b"\xc0\xaf",
    b"/100%", b"/a%2Fb", b"%00", b"%zz%", b"/with space", b" ", b"+plus+",
    b"/glob*", b"/q?", b"/[set]", b"[", b"\\", b"*", b"#frag?q=1&x=%41",
    "/ü€😀".encode(), b"/sluice:{5}:registry:leaky_bucket", b":",
    b"x" * 10240, (b"{}\x00%\xff\n/ " * 1300)[:10240],
]
ALGS = ["leaky_bucket", "sliding_log", "sliding_counter", "fixed_window", "token_bucket"]
ZSET_ALGS = ("leaky_bucket", "sliding_log")  # the ones with a meta hash beside the state
SKEW = 1000  # the daemon's max_clock_skew_ms
WAIT = 30.0  # s to wait for the worker (ASan builds are slow)
SEEDS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "examples", "seeds.json")


def shown(p):
    """How README says the JSON shows path `p`: (string, path_encoding or None)."""
    if b"\0" not in p:
        try:
            return p.decode("utf-8"), None
        except UnicodeDecodeError:
            pass
    return "".join(chr(c) if 0x20 < c < 0x7f and c != 0x25 else "%%%02X" % c for c in p), "percent"


def url_of(p):
    return urllib.parse.quote(p, safe="")


def glob_escape(p):
    """A glob (core/glob.h's dialect) that matches exactly the bytes `p`."""
    return b"".join(b"\\" + bytes([c]) if c in b"*?[]\\" else bytes([c]) for c in p)


def name(p):
    return repr(p[:24]) + ("... (%d bytes)" % len(p) if len(p) > 24 else "")


def key_set(r):
    return set(r.scan_iter(count=5000))


def volatile(k):
    """Keys the daemon rewrites on its own (leases, heartbeats): not compared by value."""
    return k.endswith(b":lease") or k == b"sluice:daemons"


def dumps(r, keys):
    keys = sorted(k for k in keys if not volatile(k))
    p = r.pipeline(transaction=False)
    for k in keys:
        p.dump(k)
    return dict(zip(keys, p.execute()))


def slot_of_server(r, key):
    return r.execute_command("CLUSTER", "KEYSLOT", key)


def http(port, method, path, body=None):
    st, b = cf.http(port, method, path, body)
    try:
        return st, json.loads(b)
    except ValueError:
        return st, b


def slot_tags():
    """core/slottag.h's table, from README: per slot the first string over [0-9A-Za-z], shortest first."""
    alpha = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
    tags = [None] * 16384
    left = 16384
    for n in (1, 2, 3):
        for t in itertools.product(alpha, repeat=n):
            s = "".join(t).encode()
            slot = cf.keyslot(s)
            if tags[slot] is None:
                tags[slot] = s
                left -= 1
                if not left:
                    return tags
    return tags


# ---- the five algorithms: the calls, and the state the worker leaves ------------------------


def fixed_window_ms(now):
    """A window length whose current window ends more than 10 minutes after `now`."""
    w = 3600000
    while w - now % w < 600000:
        w += 1000
    return w


def counter_t1(S):
    """The middle of the oldest sub-window (100 s) that a call at S - 300 s still counts."""
    return ((S - 300000) // 100000 - 5) * 100000 + 50000


def plans(S):
    """Per algorithm: the calls (n, now, params) a client makes at Redis time S, and what changes by hand
    before the worker's turn.  The expected states are in expect_after()."""
    fw = fixed_window_ms(S)
    return {
        # capacity 20 leaking 1 per 100 s: 10 entries at T0 = S - 451 s; the drain at the horizon
        # (Redis time - 1 s) removes floor(0.01 * 450 + ...) = 4 for the next 49 s
        "leaky_bucket": [(10, S - 451000, ["20", "0.01"])],
        # 10 per 10 min: 3 at S - 850 s, 2 at S - 300 s (the second call keeps the first 3: in its
        # window); the prune at the horizon removes the 3, keeps the 2 for 5 more minutes
        "sliding_log": [(3, S - 850000, ["10", "600000"]), (2, S - 300000, ["10", "600000"])],
        # the same in 6 sub-windows of 100 s: 3 in the oldest sub-window the second call still
        # counts, 2 in its own; the prune deletes the older sub-window's field
        "sliding_counter": [(3, counter_t1(S), ["10", "600000", "6"]), (2, S - 300000, ["10", "600000", "6"])],
        # 3 now, in a window that ends > 10 min later; then the TTL is taken away and the path made due
        "fixed_window": [(3, "", ["10", str(fw)])],
        # 3 tokens taken 60 s ago (full since 57 s: reclaimed), then 2 now from a bucket refilling 1 per 100 s
        "token_bucket": [(3, S - 60000, ["5", "1"]), (2, "", ["5", "0.01"])],
    }


def after_worker(r, alg, p, S):
    """(done, ok, detail): is the worker's job on `p` done, and is the state then exactly as expected."""
    ks = cf.client_keys(alg, p)
    if alg == "leaky_bucket":
        z = r.zrange(ks[0], 0, -1, withscores=True)
        done = len(z) < 10
        return done, [m for m, _ in z] == [b"%d:%d" % (S - 451000, i) for i in range(4, 10)], repr([m for m, _ in z])
    if alg == "sliding_log":
        z = r.zrange(ks[0], 0, -1, withscores=True)
        return len(z) < 5, len(z) == 2 and all(s == S - 300000 for _, s in z), repr(z)
    if alg == "sliding_counter":
        h = r.hgetall(ks[0])
        subs = {k: v for k, v in h.items() if k.isdigit()}
        return len(subs) < 2, subs == {b"%d" % ((S - 300000) // 100000): b"2"}, repr(h)
    if alg == "fixed_window":
        h = r.hgetall(ks[0])
        ttl = r.pttl(ks[0])
        due = r.zscore(ks[2], p)
        w = int(h.get(b"window_ms", b"0"))
        end = (int(h.get(b"window", b"0")) + 1) * w
        return ttl > 0, h.get(b"count") == b"3" and due == end + SKEW and 0 < ttl <= end + SKEW + 2000 - S, \
            "count %r ttl %d due %r end %d" % (h.get(b"count"), ttl, due, end)
    # token bucket: the first bucket reclaimed (gone, out of the due index); the second call is
    # made after that (run_alg), so here only the reclaim
    gone = r.exists(ks[0]) == 0 and r.zscore(ks[2], p) is None
    return gone, gone, "exists %d" % r.exists(ks[0])


def expect_get(alg, p, S):
    """The fields GET /v1/paths/{path} must answer (at Redis time within a minute after S)."""
    s, enc = shown(p)
    base = {"path": s, "algorithm": alg, "layout": alg, "rule": None, "shard": cf.shard(p)}
    if enc:
        base["path_encoding"] = enc
    if alg == "leaky_bucket":
        base.update(count=6, capacity=20, remaining=14, recorded={"capacity": 20, "rate": 0.01})
    elif alg == "sliding_log":
        base.update(count=2, limit=10, remaining=8, recorded={"limit": 10, "window_ms": 600000})
    elif alg == "sliding_counter":
        base.update(count=2, limit=10, remaining=8, recorded={"limit": 10, "window_ms": 600000, "sub_windows": 6})
    elif alg == "fixed_window":
        base.update(count=3, limit=10, remaining=7, recorded={"limit": 10, "window_ms": fixed_window_ms(S)})
    else:
        base.update(count=2, capacity=5, remaining=3, recorded={"capacity": 5, "rate": 0.01})
    return base


def sub(got, want):
    """The fields of `want` that `got` (a dict) has otherwise."""
    if not isinstance(got, dict):
        return {"not an object": got}
    return {k: (got.get(k, "<absent>"), v) for k, v in want.items() if got.get(k, "<absent>") != v}


def call(r, sha, alg, p, n, now, params):
    ks = cf.client_keys(alg, p)
    return r.evalsha(sha, 5, *ks, p, str(n), str(now), "", *params)


def check_script_call(r, sha, alg, p, n, now, params, first=True):
    """One client call: only the path's keys of DESIGN.md's layout appear or change, all in {k}'s slot
    (a first call on the path writes its state, its meta where its algorithm has one, and its registry)."""
    ks = cf.client_keys(alg, p)
    before = key_set(r)
    old = dumps(r, ks)
    rep = call(r, sha, alg, p, n, now, params)
    after = key_set(r)
    new = after - before
    changed = {k for k in ks if r.dump(k) != old.get(k)}
    must = ({ks[0], ks[2]} | ({ks[1]} if alg in ZSET_ALGS else set())) if first else {ks[0]}
    slot = cf.keyslot(b"{%d}" % cf.shard(p))
    slots = {slot_of_server(r, k) for k in new | changed}
    ok = rep[0] == 1 and new <= set(ks) and must <= changed | new and slots == {slot} and r.zscore(ks[2], p) is not None
    if alg not in ZSET_ALGS:
        ok = ok and r.exists(ks[1]) == 0
    return ok, "reply %r; appeared %r; changed %r; slots %r (want %d)" % (
        rep, [k[:48] for k in new - set(ks)], [k[:48] for k in changed], slots, slot)


def listing(port, match=None):
    """Every entry of GET /v1/paths (paged until cursor "0"): (entries, error or None)."""
    out, cursor = [], "0"
    for _ in range(1000):
        q = "/v1/paths?count=1000&cursor=" + urllib.parse.quote(cursor, safe="")
        if match is not None:
            q += "&match=" + urllib.parse.quote(match, safe="")
        st, b = http(port, "GET", q)
        if st != 200:
            return out, "%d %r" % (st, b)
        out += b["paths"]
        cursor = b["cursor"]
        if cursor == "0":
            return out, None
    return out, "no end"


def wait_job(port, body):
    """POST /v1/reset `body` (bytes), then its job until it ended: (status, job)."""
    st, b = cf.http(port, "POST", "/v1/reset", body)
    if st != 202:
        return st, b
    job = json.loads(b)
    end = time.monotonic() + WAIT
    while job.get("state") in ("queued", "running") and time.monotonic() < end:
        time.sleep(0.01)
        job = http(port, "GET", "/v1/jobs/" + job["id"])[1]
    return st, job


def reset_diff(r, before_keys, before_dump, path_keys, regs, p):
    """After a reset of `p`: what differs from the state before other than path_keys gone and `p` out of regs."""
    after_keys = key_set(r)
    bad = []
    gone = before_keys - after_keys
    appeared = after_keys - before_keys
    if appeared:
        bad.append("appeared %r" % [k[:48] for k in appeared])
    for k in gone:
        if k not in path_keys and not (k in regs and set(before_dump_members(before_dump, k)) <= {p}):
            bad.append("gone %r" % k[:48])
    for k in path_keys:
        if k in after_keys:
            bad.append("kept %r" % k[:48])
    now = dumps(r, after_keys)
    for k, v in now.items():
        if k in regs:
            continue
        if before_dump.get(k) != v:
            bad.append("changed %r" % k[:48])
    return bad


def before_dump_members(before_dump, k):
    return before_dump.get((b"members", k), [])


def snapshot_for_reset(r, regs):
    keys = key_set(r)
    d = dumps(r, keys)
    for k in regs:
        t = r.type(k)
        if t == b"zset":
            d[(b"members", k)] = r.zrange(k, 0, -1)
        elif t == b"set":
            d[(b"members", k)] = list(r.smembers(k))
    return keys, d


HOLDER = b"hostile-e2e:1"


def hold_leases(r):
    """Take every shard's lease from the daemon (DESIGN.md, "Several daemons": a daemon that lost a lease
    changes nothing in that shard), so that its worker does not act on a path between a script call and
    the look at what the call wrote."""
    p = r.pipeline(transaction=False)
    for k in range(1024):
        p.set(b"sluice:{%d}:lease" % k, HOLDER, px=120000)
    p.execute()


def release_leases(r):
    p = r.pipeline(transaction=False)
    for k in range(1024):
        p.execute_command("EVAL", "if redis.call('GET', KEYS[1]) == ARGV[1] then redis.call('DEL', KEYS[1]) end",
                          1, b"sluice:{%d}:lease" % k, HOLDER)
    p.execute()


def wait_copies(port, timeout=10.0):
    """Until the daemon holds every shard's lease and has written every rules and skew copy (none
    pending): the keyspace a phase starts from is then the one it keeps (a copy still being written
    when the phase looks first would show up later as a key the phase made)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        w = http(port, "GET", "/v1/worker")[1]
        if ((w.get("leases") or {}).get("owned") == 1024 and w.get("rule_copies", {}).get("shards_pending") == 0
                and w.get("skew", {}).get("shards_pending") == 0):
            return True
        time.sleep(0.05)
    return False


def run_alg(r, port, alg, sha, S, paths):
    plan = plans(S)[alg]
    check("%s: the daemon holds every lease and its rules and skew copies are all written" % alg, wait_copies(port))
    base_keys = key_set(r)
    w0 = http(port, "GET", "/v1/worker")[1]
    ok_all, bad = True, []
    hold_leases(r)
    time.sleep(0.2)  # a script call of the worker's in flight ends
    for p in paths:
        for n, now, params in plan[:1]:
            ok, detail = check_script_call(r, sha, alg, p, n, now, params)
            if not ok:
                ok_all = False
                bad.append("%s: %s" % (name(p), detail))
        if len(plan) > 1 and alg != "token_bucket":
            n, now, params = plan[1]
            ok, detail = check_script_call(r, sha, alg, p, n, now, params, first=False)
            if not ok:
                ok_all = False
                bad.append("%s (2nd call): %s" % (name(p), detail))
        if alg == "fixed_window":
            ks = cf.client_keys(alg, p)
            r.persist(ks[0])          # a counter without its TTL (a foreign writer, a hand) ...
            r.zadd(ks[2], {p: 0}, xx=True)  # ... and due now: the repair must find it
    release_leases(r)
    check("%s: %d hostile paths: the script writes only their keys of key layout 2, in {k}'s slot" % (
        alg, len(paths)), ok_all, "; ".join(bad[:4]))

    # the worker's job, by the recorded parameters at the recorded times
    end = time.monotonic() + WAIT
    pending = list(paths)
    while pending and time.monotonic() < end:
        pending = [p for p in pending if not after_worker(r, alg, p, S)[0]]
        time.sleep(0.05)
    res = [(p, after_worker(r, alg, p, S)) for p in paths]
    wrong = ["%s: %s" % (name(p), d) for p, (done, ok, d) in res if not (done and ok)]
    check("%s: the worker's %s left every hostile path exactly as the rate and times say" % (
        alg, {"leaky_bucket": "drain", "fixed_window": "repair", "token_bucket": "reclaim"}.get(alg, "prune")),
        not wrong, "; ".join(wrong[:4]))
    w1 = http(port, "GET", "/v1/worker")[1]
    per = {"leaky_bucket": ("drained", 4), "sliding_log": ("pruned", 3), "sliding_counter": ("pruned", 1),
           "fixed_window": ("pruned", 1), "token_bucket": ("pruned", 1)}[alg]
    moved = w1.get(per[0], 0) - w0.get(per[0], 0)
    check("%s: the worker's %s moved by exactly %d x %d paths" % (alg, per[0], per[1], len(paths)),
          moved == per[1] * len(paths) and w1.get("errors") == w0.get("errors"),
          "%d; errors %r -> %r, last %r" % (moved, w0.get("errors"), w1.get("errors"), w1.get("last_error")))
    if alg == "token_bucket":
        ok_all, bad = True, []
        for p in paths:
            ok, detail = check_script_call(r, sha, alg, p, *plan[1])
            if not ok:
                ok_all, bad = False, bad + ["%s: %s" % (name(p), detail)]
        check("token_bucket: a new bucket on each reclaimed path writes only its keys", ok_all, "; ".join(bad[:4]))

    # nothing but the paths' keys appeared (the shards' stats too: they hold the client clock lag)
    expected = set()
    for p in paths:
        ks = cf.client_keys(alg, p)
        expected |= {ks[0], ks[2], ks[4]} | ({ks[1]} if alg in ZSET_ALGS else set())
    extra = key_set(r) - base_keys - expected
    check("%s: a full SCAN finds no key but the paths' own" % alg, not extra, repr([k[:48] for k in extra][:5]))

    # GET /v1/paths/{path}, percent-encoded as a client does, and as the JSON shows it
    wrong = []
    answers = {}
    for p in paths:
        st, b = http(port, "GET", "/v1/paths/" + url_of(p))
        d = sub(b, expect_get(alg, p, S)) if st == 200 else {"status": st, "body": b}
        if d:
            wrong.append("%s: %r" % (name(p), d))
            continue
        answers[p] = b
        s, enc = shown(p)
        if enc:  # the shown form, back in the URL: its %XX kept, its '/', '?', '#' ... encoded
            st2, b2 = http(port, "GET", "/v1/paths/" + urllib.parse.quote(s, safe="%"))
            if st2 != 200 or sub(b2, expect_get(alg, p, S)):
                wrong.append("%s as shown: %d %r" % (name(p), st2, b2))
    check("%s: GET /v1/paths/{path} answers each path's exact state, the path faithfully" % alg, not wrong,
          "; ".join(w[:300] for w in wrong[:3]))

    # the listing: each path once, with the same state
    ents, err = listing(port)
    got = sorted((e.get("path"), e.get("path_encoding") or "") for e in ents)
    want = sorted((s, enc or "") for s, enc in map(shown, paths))
    check("%s: the whole listing shows each hostile path once, faithfully" % alg, err is None and got == want,
          "%s; %d entries, want %d; first differing %r" % (
              err, len(got), len(want), next(((a, b) for a, b in zip(got, want) if a != b), None)))
    wrong = []
    for p in paths:
        if b"\0" in p:
            continue  # a match with NUL is refused (400 invalid_query); checked below
        ents, err = listing(port, glob_escape(p))
        want = {k: v for k, v in answers.get(p, {}).items() if k not in ("shard", "daemon", "ttl_ms", "reset_ms")}
        if err or len(ents) != 1 or sub(ents[0], want):
            wrong.append("%s: %s %r" % (name(p), err, [sub(e, want) for e in ents][:2]))
    check("%s: GET /v1/paths?match=<the path, glob-escaped> lists exactly that path, with its state" % alg,
          not wrong, "; ".join(w[:300] for w in wrong[:3]))

    # resets: half by POST /v1/paths/{path}/reset, the others by a bulk reset job of an exact match
    # (a match holds no NUL and is at most 1024 bytes: those paths are reset by the path route)
    wrong = []
    for i, p in enumerate(paths):
        ks = cf.client_keys(alg, p)
        path_keys = {ks[0], ks[1]}
        regs = {ks[2]}
        bk, bd = snapshot_for_reset(r, regs)
        present = [k for k in (ks[0], ks[1]) if k in bk]
        by_job = i % 2 == 1 and b"\0" not in p and len(glob_escape(p)) <= 1024
        if by_job:
            body = b'{"match":' + json_bytes(glob_escape(p)) + b',"dry_run":true}'
            st, job = wait_job(port, body)
            if st != 202 or job.get("state") != "done" or job.get("paths") != 1 or job.get("keys") != len(present):
                wrong.append("%s dry run: %d %r" % (name(p), st, job))
            if key_set(r) != bk:
                wrong.append("%s: the dry run changed the keys" % name(p))
            body = b'{"match":' + json_bytes(glob_escape(p)) + b"}"
            st, job = wait_job(port, body)
            ms, menc = shown(glob_escape(p))
            if st != 202 or job.get("state") != "done" or job.get("paths") != 1 or job.get("keys") != len(present) \
                    or job.get("match") != ms or job.get("match_encoding") != menc:
                wrong.append("%s job: %d %r" % (name(p), st, job))
        else:
            st, b = http(port, "POST", "/v1/paths/%s/reset" % url_of(p))
            s, enc = shown(p)
            want_keys = sorted(shown(k) for k in present)
            got_keys = sorted((k.get("key"), k.get("key_encoding")) for k in b.get("keys", [])) \
                if isinstance(b, dict) else None
            if st != 200 or b.get("path") != s or b.get("path_encoding") != enc or \
                    b.get("keys_removed") != len(present) or got_keys != want_keys or b.get("registries_removed") != 1:
                wrong.append("%s: %d %r" % (name(p), st, b if len(repr(b)) < 400 else repr(b)[:400]))
        diff = reset_diff(r, bk, bd, path_keys, regs, p)
        for k in regs:
            if r.exists(k) and (r.zscore(k, p) is not None or
                                set(r.zrange(k, 0, -1)) != set(before_dump_members(bd, k)) - {p}):
                diff.append("registry %r holds %r" % (k[:40], r.zrange(k, 0, 3)))
        if diff:
            wrong.append("%s (%s): %s" % (name(p), "job" if by_job else "route", "; ".join(diff[:3])))
    check("%s: each reset (the path route, or a bulk job of its exact glob) removes exactly its keys" % alg,
          not wrong, "; ".join(w[:300] for w in wrong[:3]))
    left = key_set(r) - base_keys
    stats = {cf.client_keys(alg, p)[4] for p in paths}
    check("%s: afterwards Redis holds what it held before (and the shards' stats)" % alg, left <= stats,
          repr([k[:48] for k in left - stats][:5]))


def json_bytes(b):
    """A JSON string of the bytes `b`: ASCII escaped by json.dumps, other bytes raw (as a client sends them)."""
    out = b'"'
    for c in b:
        ch = bytes([c])
        if c >= 0x80:
            out += ch
        else:
            out += json.dumps(chr(c)).encode()[1:-1]
    return out + b'"'


# ---- the foreign layouts of examples/seeds.json -------------------------------------------


FOREIGN_RATE = 2  # entries per second of the rule for seed 004's buckets


def foreign_paths(h):
    """The seeds' keys for hostile path part h: (layout, path, data key), each matched by a seed rule."""
    return [("seed004-leaky", b"/test" + h, b"LeakyBucket:/test" + h),
            ("seed000-log", b"u" + h + b":/x", b"limit:u" + h + b":/x"),
            ("seed002-log", b"api-" + h, b"rate_limit:api-" + h),
            ("seed001-fixed", b"login" + h, b"rate_limit:login" + h)]


def run_foreign(r, port, S, hostile, tags):
    base = key_set(r)
    for h in hostile:
        for lay, p, key in foreign_paths(h):
            if lay == "seed004-leaky":  # member = score = ms, the registry set beside it
                r.zadd(key, {b"%d" % (S - i): S - i for i in range(10)})
                r.sadd(b"LeakyBucket::pathSet", p)
            elif lay == "seed001-fixed":  # INCR, and the client died before its EXPIRE
                for _ in range(3):
                    r.incr(key)
            else:  # two expired entries, three live
                r.zadd(key, {b"old-%d" % i: S - 90000 + i for i in range(2)})
                r.zadd(key, {b"new-%d" % i: S - 10000 + i for i in range(3)})
    metas = {}
    for h in hostile:
        lay, p, key = foreign_paths(h)[0]
        metas[key] = b"sluice:{" + tags[cf.keyslot(key)] + b"}:seed004-leaky_meta:" + key

    # the drain accounts a bucket from the first time it sees it: between two looks at a bucket
    # and its meta (one MULTI: the same slot), exactly floor(rate x time + carry) entries left
    seen = {}
    meter_bad = []
    end = time.monotonic() + WAIT
    while time.monotonic() < end:
        busy = False
        for key, mk in metas.items():
            p = r.pipeline(transaction=True)
            p.zcard(key)
            p.hmget(mk, "last", "carry")
            n, (last, carry) = p.execute()
            if n and last is not None:
                busy = True
                if key not in seen:
                    seen[key] = (n, int(last), float(carry or 0))
                else:
                    n0, l0, c0 = seen[key]
                    due = FOREIGN_RATE * (int(last) - l0) / 1000 + c0
                    if n0 - n != min(n0, int(due + 1e-9)) or (n and abs((due - int(due + 1e-9)) - float(carry)) > 1e-6):
                        meter_bad.append("%r: %d -> %d over %d ms (carry %s -> %s)" % (
                            key[:40], n0, n, int(last) - l0, c0, carry))
            elif n:
                busy = True
        if not busy and all(r.exists(mk) == 0 for mk in metas.values()):  # a meta outlives its bucket by SKEW
            break
        time.sleep(0.05)
    check("foreign seed004: every hostile bucket drained at the rule's rate between two looks",
          not meter_bad and len(seen) == len(metas), "%d of %d seen; %s" % (len(seen), len(metas), meter_bad[:3]))
    left = [k for k in metas if r.exists(k) or r.exists(metas[k])]
    check("foreign seed004: ... then emptied: bucket gone, the path out of LeakyBucket::pathSet, the meta gone "
          "after the skew horizon",
          not left and r.scard(b"LeakyBucket::pathSet") == 0, "%d left, set %d" % (
              len(left), r.scard(b"LeakyBucket::pathSet")))

    # the logs pruned of their expired entries, the counters given their TTL
    def foreign_done():
        bad = []
        for h in hostile:
            for lay, p, key in foreign_paths(h)[1:]:
                if lay == "seed001-fixed":
                    t = r.pttl(key)
                    if not (0 < t <= 60000 and r.get(key) == b"3"):
                        bad.append("%r ttl %d" % (key[:40], t))
                elif sorted(r.zrange(key, 0, -1)) != [b"new-0", b"new-1", b"new-2"]:
                    bad.append("%r %r" % (key[:40], r.zrange(key, 0, -1)))
        return bad
    end = time.monotonic() + WAIT
    while foreign_done() and time.monotonic() < end:
        time.sleep(0.1)
    bad = foreign_done()
    check("foreign seeds 000/002/001 (SCAN): logs pruned to their 3 live entries, counters given a TTL",
          not bad, "; ".join(bad[:3]))
    extra = key_set(r) - base - {k for h in hostile for _, _, k in foreign_paths(h)[1:]}
    check("foreign: a full SCAN finds nothing else (the metas, in their keys' slots, gone with the buckets)",
          not extra, repr([k[:48] for k in extra][:4]))
    slot_bad = [k for k, mk in metas.items() if slot_of_server(r, k) != slot_of_server(r, mk)]
    check("foreign seed004: each meta name is in its data key's slot (CLUSTER KEYSLOT)", not slot_bad,
          repr(slot_bad[:3]))

    # the admin routes on the foreign paths
    wrong = []
    for h in hostile:
        for lay, p, key in foreign_paths(h)[1:3]:
            st, b = http(port, "GET", "/v1/paths/" + url_of(p))
            s, enc = shown(p)
            want = {"path": s, "layout": lay, "algorithm": "sliding_log", "count": 3,
                    "rule": "seed000-users" if lay == "seed000-log" else "seed002-api"}
            if enc:
                want["path_encoding"] = enc
            if st != 200 or sub(b, want):
                wrong.append("%s: %d %r" % (name(p), st, sub(b, want) if st == 200 else b))
    check("foreign: GET /v1/paths/{path} answers the seed logs' state (3 entries, the seed rule)", not wrong,
          "; ".join(w[:300] for w in wrong[:3]))
    wrong = []
    for h in hostile:
        for lay, p, key in foreign_paths(h)[1:]:
            bk = key_set(r)
            st, b = http(port, "POST", "/v1/paths/%s/reset" % url_of(p))
            s, enc = shown(p)
            gone = bk - key_set(r)
            if st != 200 or b.get("path") != s or b.get("path_encoding") != enc or gone != {key} or \
                    [(k.get("key"), k.get("key_encoding")) for k in b.get("keys", [])] != [shown(key)]:
                wrong.append("%s: %d %r gone %r" % (name(p), st, b, [k[:40] for k in gone]))
    check("foreign: POST /v1/paths/{path}/reset removes exactly the seed key", not wrong,
          "; ".join(w[:300] for w in wrong[:3]))
    # seed 004's buckets again, listed and reset at once (registry set and bucket in two slots: two calls)
    wrong = []
    for h in hostile:
        lay, p, key = foreign_paths(h)[0]
        now = int(r.time()[0]) * 1000
        r.zadd(key, {b"%d" % (now - i): now - i for i in range(10)})
        r.sadd(b"LeakyBucket::pathSet", p)
        s, enc = shown(p)
        if b"\0" not in p:
            ents, err = listing(port, glob_escape(p))
            got = [(e.get("path"), e.get("path_encoding"), e.get("layout")) for e in ents]
            if err or got != [(s, enc, "seed004-leaky")]:
                wrong.append("%s listed: %s %r" % (name(p), err, got))
        bk = key_set(r)
        st, b = http(port, "POST", "/v1/paths/%s/reset" % url_of(p))
        gone = bk - key_set(r)
        if st != 200 or b.get("path") != s or b.get("registries_removed") != 1 or key not in gone or \
                not gone <= {key, metas[key], b"LeakyBucket::pathSet"} or r.sismember(b"LeakyBucket::pathSet", p):
            wrong.append("%s: %d %r gone %r" % (name(p), st, b, [k[:40] for k in gone]))
    check("foreign seed004: listed by its exact glob, and POST /v1/paths/{path}/reset removes the bucket, "
          "its meta and its member of LeakyBucket::pathSet, nothing else", not wrong,
          "; ".join(w[:300] for w in wrong[:3]))
    end = time.monotonic() + WAIT
    while any(r.exists(mk) for mk in metas.values()) and time.monotonic() < end:
        time.sleep(0.05)
    check("foreign: afterwards Redis holds what it held before", key_set(r) == base,
          repr([k[:48] for k in key_set(r) ^ base][:4]))


def run_empty(r, port, shas):
    """The empty path: refused by every script, writing nothing; no admin route takes it."""
    before = dumps(r, key_set(r))
    errs = []
    for alg, sha in shas.items():
        try:
            call(r, sha, alg, b"", 1, "", plans(0)[alg][0][2])
            errs.append(alg + ": no error")
        except redis.ResponseError as e:
            if "path" not in str(e):
                errs.append("%s: %s" % (alg, e))
    check("the empty path: every script refuses it naming the path", not errs, "; ".join(errs))
    check("... and writes nothing", dumps(r, key_set(r)) == before)
    st, b = http(port, "GET", "/v1/paths/")
    st2, b2 = http(port, "POST", "/v1/paths//reset")
    st3, b3 = cf.http(port, "POST", "/v1/reset", '{"match":""}')
    check("the empty path: GET /v1/paths/ and POST /v1/paths//reset are 404, a bulk match \"\" is 400",
          st == 404 and st2 == 404 and st3 == 400 and cf.is_error(b3, "invalid_body"),
          "%d %d %d %r" % (st, st2, st3, b3))
    check("... and nothing changed", dumps(r, key_set(r)) == before)
    # a rule's match is JSON text, stored and answered: UTF-8 ("/ü€*" is), else refused naming match
    st, b = cf.http(port, "PUT", "/v1/rules/hostile-utf8",
                    '{"match":"/\u00fc\u20ac*","algorithm":"sliding_log","limit":2,"window_ms":1000}')
    st2, b2 = cf.http(port, "PUT", "/v1/rules/hostile-bytes",
                      b'{"match":"/\xff*","algorithm":"sliding_log","limit":2,"window_ms":1000}')
    st3, b3 = cf.http(port, "GET", "/v1/rules")
    try:
        listed = [x["match"] for x in json.loads(b3.decode("utf-8"))["rules"]]
    except (UnicodeDecodeError, ValueError, KeyError) as e:
        listed = repr(e)
    check("a rule's match that is not UTF-8 is 400 invalid_rule (field match); GET /v1/rules stays UTF-8 JSON",
          st == 201 and st2 == 400 and cf.error_of(b2).get("field") == "match" and "/\u00fc\u20ac*" in listed,
          "%d %d %r %r" % (st, st2, b2, listed))
    cf.http(port, "DELETE", "/v1/rules/hostile-utf8")
    st, b = cf.http(port, "GET", "/v1/paths?match=a%00b")
    check("a listing match holding NUL (%00) is 400 invalid_query", st == 400 and cf.is_error(b, "invalid_query"),
          "%d %r" % (st, b))


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: hostile_e2e.py SLUICED LUA_DIR")
    sluiced, lua_dir = sys.argv[1], sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="sluice-hostile-")
    t_start = time.monotonic()
    c = cluster.start_cluster(tmp, primaries=1, replicas=0)
    d = log = None
    try:
        r = redis.Redis(port=c.ports[0])
        tags = slot_tags()
        check("the slot tag table as README says (slot 2094 is \"4be\")", tags[2094] == b"4be" and None not in tags)
        check("shard of every hostile path is keyslot mod 1024 (the server's CLUSTER KEYSLOT)",
              all(slot_of_server(r, p) == cf.keyslot(p) for p in HOSTILE if p))
        seeds = json.load(open(SEEDS))
        rules = seeds["rules"] + [{"name": "hostile-leaky", "match": "/test*", "algorithm": "leaky_bucket",
                                   "capacity": 20, "rate": FOREIGN_RATE}]
        port = cf.free_port()
        d, log = cf.spawn_sluiced(sluiced, tmp, "hostile", {
            "redis": c.url(), "listen": "127.0.0.1:%d" % port, "max_clock_skew_ms": SKEW,
            "drain_interval_ms": 50, "prune_interval_ms": 50, "layouts": seeds["layouts"], "rules": rules,
            # small pages: a registry set (10 kB members: a hashtable) is SSCANned a few members at a time,
            # so a step meets pages of no member due after pages of members in other slots
            "batch_size": 2})
        cf.wait_ready(port)
        shas = {a: r.script_load(open(os.path.join(lua_dir, a + ".lua")).read()) for a in ALGS}
        S = int(r.time()[0]) * 1000
        for alg in ALGS:
            t0 = time.monotonic()
            run_alg(r, port, alg, shas[alg], S, HOSTILE)
            print("hostile_e2e: %s took %.1f s" % (alg, time.monotonic() - t0))
        t0 = time.monotonic()
        run_foreign(r, port, int(r.time()[0]) * 1000, HOSTILE, tags)
        print("hostile_e2e: the foreign layouts took %.1f s" % (time.monotonic() - t0))
        run_empty(r, port, shas)
        st, w = http(port, "GET", "/v1/worker")
        check("the worker counted no error over the run", st == 200 and w.get("errors") == 0,
              "%d %r" % (st, w.get("last_error") if isinstance(w, dict) else w))
    finally:
        if d is not None:
            rc = cf.stop_daemon(d, log)
            check("sluiced exits 0 on SIGTERM", rc == 0, repr(rc))
            if cf.FAILED:
                with open(os.path.join(tmp, "hostile.log"), errors="replace") as f:
                    print("".join(f.readlines()[-30:]))
        c.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    print("hostile_e2e: %.1f s" % (time.monotonic() - t_start))
    print("hostile_e2e: %d passed, %d failed" % (cf.PASSED, cf.FAILED))
    sys.exit(1 if cf.FAILED else 0)


if __name__ == "__main__":
    main()
