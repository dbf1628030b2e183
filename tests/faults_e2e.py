#!/usr/bin/python3
"""sluiced under Redis faults (issue 13), from outside: real redis-server processes on free ports
and a real sluiced.

    /usr/bin/python3 tests/faults_e2e.py <sluiced> <lua dir>      (lua dir: build/lua)

Each case starts its own redis-server (`--enable-debug-command yes`), one sluiced on it
(tests/daemons_e2e.py's Daemon: drain_interval_ms DRAIN_MS, lease_ttl_ms 1000,
max_clock_skew_ms 0, redis_timeout_ms TIMEOUT_MS, one rule), fills N leaky buckets (3,000; 1,000 under SLUICE_FLAVOUR=asan; FILL
entries each, RATE a second, explicit parameters, the leaks spread over a period:
daemons_e2e.fill), breaks Redis mid-sweep, and mends it.  Cases (CASES=kill9,sigstop,... picks some):

- kill9: kill -9 of Redis (no persistence) mid-sweep, restarted on its port after OUTAGE_S:
  it comes back empty; the daemon stores its rules again, the 1024 rules copies hold them,
  and a new fill drains exactly;
- kill9_aof: the same with appendonly yes, appendfsync always: every bucket comes back
  and drains exactly;
- sigstop: SIGSTOP of Redis for 5 s, then SIGCONT;
- empty: Redis restarted empty (FLUSHALL + SCRIPT FLUSH, as a replaced node) under the
  running daemon: rules, copies and the skew horizon written again, a new fill exact;
- oom: maxmemory below what Redis uses, maxmemory-policy noeviction: a client script is
  refused (OOM), a rule PUT answers 503 "Redis is out of memory (maxmemory): ...", the
  worker's scripts (allow-oom) keep draining; /readyz tells what the worker meets; then
  maxmemory 0;
- slow: DEBUG SLEEP shorter than the timeout, over and over for 2 s (the worker counts no
  error, the drain stays exact), then one DEBUG SLEEP of 1.5 s, longer than the timeout
  (the worker fails, /readyz 503, and recovers);
- stop_down: SIGTERM while Redis is away and every lease ran out (a prompt exit 0, no lease warning).

After every case, the state is exact: every bucket's level is FILL - floor(RATE x (T - t0))
within +-1 at Redis time T (one leak may be due within the last tick: the drain runs every
DRAIN_MS, and a leak period is 1000 / RATE ms, so at most one leak is pending), and exactly
floor(RATE x (mark - t0)) entries are gone by its time mark (daemons_e2e.check_exact: one
more would be a double drain, one less a lost one); every bucket still holding entries is in
its shard's registry (due index); the rule store holds the config's rule and every shard's
copy its version.  While Redis is broken, /readyz is 503 with the reason the worker meets
(error.reason), and the recovery time (from Redis back, as the test sees it: the first PING
answered, SIGCONT sent, the DEBUG SLEEP answered, maxmemory raised; to the first successful
drain tick, /v1/worker jobs.drain.recovered_ms, and every shard lease held again) is at most
RECOVERY_S (1 s; 2 s under SLUICE_FLAVOUR=asan, the sanitizer build); every measured time is
printed ("recovery: <case> <ms>").

Prints "ok   ..." / "FAIL ..." lines and a last line "faults_e2e: N passed, M failed"; exit
status 1 when one failed.  Every process started is killed at the end.  KEEP=1 keeps the
temporary directory (Redis files, configs and logs).
"""
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance  # noqa: E402
import daemons_e2e as de  # noqa: E402
from conformance import check, client_keys, free_port, http, shard  # noqa: E402

ASAN = os.environ.get("SLUICE_FLAVOUR") == "asan"
RECOVERY_S = 2.0 if ASAN else 1.0   # the bound (the sanitizer build is several times slower)
# buckets per case: 3,000 leaks a second to keep up with; the sanitizer build, several times slower
# on a shared 2-CPU host, gets a third (the drain is as exact, the load lighter)
N = 1000 if ASAN else 3000
RATE = 1.0                # entries leaked per second: FILL entries last longer than any case
FILL = de.FILL = 30       # entries a bucket is filled with (daemons_e2e's fill and model read it): 30 s of leaks
OUTAGE_S = 3.0            # kill -9 cases: Redis away this long
STOP_S = 5.0              # SIGSTOP case
TIMEOUT_MS = 500          # config redis_timeout_ms (the default)
DRAIN_MS = de.DRAIN_MS
RULE = {"name": "api", "match": "/api/*", "algorithm": "leaky_bucket", "capacity": 50, "rate": 2}
RECOVERIES = []           # (case, ms)
REPLY_OOM = "Redis is out of memory (maxmemory)"   # core/reply.h REPLY_OOM_TEXT


def log(msg):
    de.log(msg)


class Server:
    """One redis-server on a port of its own, restartable on the same port (and dir: its AOF)."""

    def __init__(self, tmp, name, aof=False):
        self.port = free_port()
        self.dir = os.path.join(tmp, name)
        os.makedirs(self.dir, exist_ok=True)
        self.aof = aof
        self.proc = None
        self.start()

    def args(self):
        a = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--dir", self.dir,
             "--enable-debug-command", "yes", "--appendonly", "yes" if self.aof else "no"]
        if self.aof:
            a += ["--appendfsync", "always"]
        return a

    def start(self):
        """Start it and wait until it answers PING (not LOADING): time.time() of that answer."""
        self.proc = subprocess.Popen(self.args(), stdout=subprocess.DEVNULL)
        PROCS.append(self.proc)
        return self.wait_ping()

    def wait_ping(self, timeout=10.0):
        r = conformance.redis.Redis(port=self.port, socket_timeout=1)
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            try:
                if r.ping():
                    return time.time()
            except (conformance.redis.ConnectionError, conformance.redis.exceptions.BusyLoadingError,
                    conformance.redis.TimeoutError):
                pass
            time.sleep(0.005)
        raise RuntimeError("redis-server on %d did not answer PING within %.0f s" % (self.port, timeout))

    def client(self):
        return conformance.redis.Redis(port=self.port, socket_timeout=10)

    def kill9(self):
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGCONT)
            self.proc.kill()
            self.proc.wait()


PROCS = []


def worker(d):
    try:
        return d.worker()
    except OSError:
        return {}


def readyz(d):
    st, body = http(d.port, "GET", "/readyz")
    return st, conformance.error_of(body)


def wait_failing(d, timeout=5.0):
    """Until the daemon's drain job is failing (its last tick failed as a whole): the /v1/worker answer."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        w = worker(d)
        if w.get("jobs", {}).get("drain", {}).get("failing"):
            return w
        time.sleep(0.02)
    return worker(d)


def wait_recovered(d, t_back, since_ms, timeout=10.0):
    """After Redis is back at time.time() t_back: until the drain tick succeeds (recovered_ms after
    since_ms, failing false) and every shard lease is held again.  Returns the recovery in ms
    (from t_back to the later of recovered_ms and the poll that saw the leases held), or None."""
    end = time.monotonic() + timeout
    t_rec = t_owned = None
    while time.monotonic() < end:
        w = worker(d)
        dj = w.get("jobs", {}).get("drain", {})
        now = time.time()
        if t_rec is None and not dj.get("failing", True) and (dj.get("recovered_ms") or 0) > since_ms:
            t_rec = dj["recovered_ms"] / 1000.0
        if t_owned is None and (w.get("leases") or {}).get("owned") == de.SHARDS:
            t_owned = now
        if t_rec is not None and t_owned is not None:
            return round((max(t_rec, t_owned) - t_back) * 1000)
        time.sleep(0.01)
    return None


def log_since(d, t):
    """The daemon's log lines stamped at time.time() t or later, without the http ones: what it did
    while it came back (printed with a recovery that took too long, so a CI log names the cause)."""
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(t)) + ".%03dZ" % int((t % 1) * 1000)
    try:
        with open(os.path.join(RUN["tmp"], d.name + ".log"), errors="replace") as f:
            lines = [ln for ln in f.read().splitlines() if ln[:24] >= stamp and "event=http " not in ln]
    except OSError:
        return "?"
    return " | ".join(lines[:20])


def note_recovery(case, ms, d=None, t_back=None):
    RECOVERIES.append((case, ms))
    print("recovery: %s %s ms" % (case, ms))
    ok = ms is not None and ms <= RECOVERY_S * 1000
    why = "no recovery seen within 10 s" if ms is None else ""
    if not ok and d is not None:
        w = worker(d)
        ls, dj = w.get("leases") or {}, w.get("jobs", {}).get("drain", {})
        why += " (leases acquired %s refused %s lost %s last_error %r; drain ticks %s last_error %r)" % (
            ls.get("acquired"), ls.get("refused"), ls.get("lost"), ls.get("last_error"), dj.get("ticks"),
            dj.get("last_error"))
        why += " the daemon's log since Redis is back: " + log_since(d, t_back - 1.0)
    check("%s: the worker is back %s ms after Redis is (at most %.0f ms)" % (case, ms, RECOVERY_S * 1000), ok, why)


def start_daemon(srv, case):
    d = de.Daemon("f-" + case, "redis://127.0.0.1:%d/0" % srv.port, case,
                  {"redis_timeout_ms": TIMEOUT_MS, "rules": [RULE]})
    store = de.Store(r=srv.client())
    if not de.wait_up(store, [d]):
        raise RuntimeError("sluiced not ready: " + d.log_tail())
    return d, store


def fill(srv, store, stem):
    sha = store.load(RUN["lb_src"])
    return de.fill(store, sha, N, stem, RATE)


def check_registry(store, buckets, case):
    """Every bucket that still holds entries is in its shard's registry: no path lost from its due index."""
    r = store.any()
    pipe = r.pipeline(transaction=False)
    for p in buckets:
        k = client_keys("leaky_bucket", p)
        pipe.zcard(k[0])
        pipe.zscore(k[2], p)
    got = pipe.execute()
    lost = [p for i, p in enumerate(buckets) if got[2 * i] > 0 and got[2 * i + 1] is None]
    held = sum(1 for i in range(len(buckets)) if got[2 * i] > 0)
    check("%s: each of the %d buckets holding entries is in its shard's registry" % (case, held),
          not lost and held > 0, "%d lost, the first %r (shard %d)" % (len(lost), lost[0], shard(lost[0])) if lost
          else "no bucket holds entries: the check proves nothing")


def check_rules(store, case):
    r = store.any()
    conformance.wait_copies(r)
    stored = r.hget(b"sluice:rules", b"api")
    v, e = r.get(b"sluice:rules:version"), r.get(b"sluice:rules:epoch")
    want = (e or b"") + b":" + (v or b"0")
    pipe = r.pipeline(transaction=False)
    for k in range(de.SHARDS):
        pipe.hget(b"sluice:{%d}:rules" % k, ":version")
        pipe.hexists(b"sluice:{%d}:rules" % k, "api")
    got = pipe.execute()
    bad = [k for k in range(de.SHARDS) if got[2 * k] != want or not got[2 * k + 1]]
    check("%s: the rule store holds the config's rule and all 1024 shards' copies hold it at version %r" % (
        case, want.decode()), stored is not None and json.loads(stored).get("rate") == RULE["rate"] and not bad,
        "rule %r, %d copies behind (shard %s)" % (stored, len(bad), bad[:1]))


def settle(d, timeout=5.0):
    """Until two drain sweeps ended from now on with no due backlog: a whole pass that started after
    now, so the leaks an outage held back are applied (a pass over thousands of due buckets may
    take several ticks, each within its budget: more under the sanitizer build)."""
    j0 = worker(d).get("jobs", {}).get("drain", {})
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        j = worker(d).get("jobs", {}).get("drain", {})
        if j.get("sweeps", 0) >= j0.get("sweeps", 0) + 2 and j.get("due_backlog") == 0:
            return True
        time.sleep(DRAIN_MS / 1000.0)
    return False


def check_after(d, store, buckets, case):
    check("%s: the drain's sweeps go on (two ended, no due backlog)" % case, settle(d))
    de.check_exact(store, buckets, RATE, case)
    check_registry(store, buckets, case)
    check_rules(store, case)


def check_readyz_down(d, case, reasons):
    st, err = readyz(d)
    check("%s: /readyz is 503 %s while Redis is broken (reason %s)" % (case, "/".join(reasons), err.get("reason")),
          st == 503 and err.get("code") == "redis_unavailable" and err.get("reason") in reasons,
          "%d %r" % (st, err))


def admin_recovery(d, case, t_back):
    """The admin side after Redis is back: a request thread's connection (GET /v1/rules) and the
    metrics sampler's (/metrics sluice_redis_up 1) answer again; ms from t_back to each."""
    end = time.monotonic() + 10
    got = {}
    while len(got) < 2 and time.monotonic() < end:
        if "rules" not in got and http(d.port, "GET", "/v1/rules")[0] == 200:
            got["rules"] = round((time.time() - t_back) * 1000)
        if "metrics" not in got:
            st, body = http(d.port, "GET", "/metrics")
            if st == 200 and b"\nsluice_redis_up 1\n" in body:
                got["metrics"] = round((time.time() - t_back) * 1000)
        time.sleep(0.01)
    for what, route in (("rules", "GET /v1/rules 200"), ("metrics", "/metrics sluice_redis_up 1")):
        ms = got.get(what)
        RECOVERIES.append(("%s admin %s" % (case, what), ms))
        print("recovery: %s admin %s %s ms" % (case, what, ms))
        check("%s: the admin API's %s again %s ms after Redis is back (at most %.0f ms)" % (
            case, route, ms, RECOVERY_S * 1000), ms is not None and ms <= RECOVERY_S * 1000)


def check_readyz_up(d, case):
    """/readyz 200 again within RECOVERY_S of now (the worker is back; after a Redis that lost its data
    the config's rules are stored again at the next tick, and readiness waits for them)."""
    end = time.monotonic() + RECOVERY_S
    while True:
        st, body = http(d.port, "GET", "/readyz")
        if st == 200 or time.monotonic() > end:
            break
        time.sleep(0.01)
    check("%s: /readyz is 200 again" % case, st == 200, "%d %r" % (st, body[:300]))


def log_has(d, event, min_count=1):
    try:
        with open(os.path.join(RUN["tmp"], d.name + ".log"), errors="replace") as f:
            return [ln for ln in f.read().splitlines() if ("event=" + event) in ln]
    except OSError:
        return []


def check_log_once(d, case):
    """The outage is logged once (job_failed) and the recovery once (job_recovered, with how long it failed)."""
    failed = [ln for ln in log_has(d, "job_failed") if "job=drain" in ln]
    rec = [ln for ln in log_has(d, "job_recovered") if "job=drain" in ln]
    check("%s: the log says the drain failed once and recovered once, with the time it failed" % case,
          len(failed) == 1 and len(rec) == 1 and "failed_ms=" in rec[0], "%r %r" % (failed[:3], rec[:3]))
    return failed, rec


# ---- the cases ---------------------------------------------------------------------------


def case_kill9(aof):
    case = "kill9_aof" if aof else "kill9"
    srv = Server(RUN["tmp"], case, aof=aof)
    d, store = start_daemon(srv, case)
    buckets = fill(srv, store, b"/f/%s/" % case.encode())
    time.sleep(0.5)                     # the drain well under way: the kill lands mid-sweep
    t_down = time.time()
    srv.kill9()
    w = wait_failing(d)
    check("%s: the worker's drain is failing while Redis is away (%r)" % (case, w.get("jobs", {}).get("drain", {}).get(
        "last_error")), w.get("jobs", {}).get("drain", {}).get("failing") is True)
    check_readyz_down(d, case, ["redis_down"])
    # the admin side meets the outage too: its request thread and sampler connections are down
    check("%s: GET /v1/rules answers 503 redis_unavailable meanwhile" % case,
          http(d.port, "GET", "/v1/rules")[0] == 503)
    time.sleep(max(0.0, OUTAGE_S - (time.time() - t_down)))
    t_back = srv.start()
    th = threading.Thread(target=admin_recovery, args=(d, case, t_back))
    th.start()
    note_recovery(case, wait_recovered(d, t_back, t_down * 1000), d, t_back)
    th.join()
    check_readyz_up(d, case)
    failed, _ = check_log_once(d, case)
    check("%s: the outage's log line names the cause (connection refused or lost)" % case,
          failed and ("refused" in failed[0] or "connection" in failed[0].lower() or "EOF" in failed[0]), repr(failed))
    if aof:
        check_after(d, store, buckets, case)
    else:
        r = store.any()
        check("%s: Redis came back empty (no persistence): none of the first 200 of %d buckets" % (case, N),
              sum(r.exists(client_keys("leaky_bucket", p)[0]) for p in list(buckets)[:200]) == 0)
        buckets = fill(srv, store, b"/f/%s/again/" % case.encode())
        time.sleep(1.5)
        check_after(d, store, buckets, case)
    d.terminate()
    srv.stop()


def case_sigstop():
    case = "sigstop"
    srv = Server(RUN["tmp"], case)
    d, store = start_daemon(srv, case)
    buckets = fill(srv, store, b"/f/stop/")
    time.sleep(0.5)
    t_down = time.time()
    srv.proc.send_signal(signal.SIGSTOP)
    w = wait_failing(d, timeout=4.0)
    check("%s: the worker's drain is failing while Redis is stopped (%r)" % (case, w.get("jobs", {}).get("drain", {}).get(
        "last_error")), w.get("jobs", {}).get("drain", {}).get("failing") is True)
    check_readyz_down(d, case, ["redis_down"])
    time.sleep(max(0.0, STOP_S - (time.time() - t_down)))
    srv.proc.send_signal(signal.SIGCONT)
    t_back = time.time()
    note_recovery(case, wait_recovered(d, t_back, t_down * 1000), d, t_back)
    check_readyz_up(d, case)
    failed, _ = check_log_once(d, case)
    check("%s: the outage's log line says the calls timed out" % case, failed and "timed out" in failed[0], repr(failed))
    check_after(d, store, buckets, case)
    d.terminate()
    srv.stop()


def case_empty():
    case = "empty"
    srv = Server(RUN["tmp"], case)
    d, store = start_daemon(srv, case)
    r = store.any()
    fill(srv, store, b"/f/empty/")
    time.sleep(0.3)
    # a Redis replaced by an empty one under the daemon: all its data and scripts gone, the connections cut
    r.flushall()
    r.script_flush()
    t_back = time.time()
    me = r.client_id()
    for c in r.client_list():
        if int(c["id"]) != me:
            try:
                r.client_kill_filter(_id=c["id"])
            except conformance.redis.ResponseError:
                pass
    # the daemon stores its rules, copies and horizon again: wait until it did
    end = time.monotonic() + 5
    while time.monotonic() < end and not (r.hget(b"sluice:rules", b"api") and
                                          r.hget(b"sluice:{1023}:rules", ":max_clock_skew_ms") == b"0"):
        time.sleep(0.01)
    took = round((time.time() - t_back) * 1000)
    print("recovery: %s (rules and horizon stored again) %d ms" % (case, took))
    RECOVERIES.append((case, took))
    check("%s: the rules and the skew horizon are stored again %d ms after Redis lost them (at most %.0f ms)" % (
        case, took, RECOVERY_S * 1000), took <= RECOVERY_S * 1000)
    # readiness followed the rules: not ready from rules_lost until rules_ready (once at start, once after)
    lost, ready = log_has(d, "rules_lost"), log_has(d, "rules_ready")
    check("%s: the log says rules_lost, then rules_ready again (/readyz 503 rules_not_loaded between)" % case,
          len(lost) == 1 and len(ready) == 2, "%r %r" % (lost, ready))
    buckets = fill(srv, store, b"/f/empty/again/")
    time.sleep(1.5)
    check_after(d, store, buckets, case)
    check_readyz_up(d, case)
    d.terminate()
    srv.stop()


def case_oom():
    case = "oom"
    srv = Server(RUN["tmp"], case)
    d, store = start_daemon(srv, case)
    r = store.any()
    buckets = fill(srv, store, b"/f/oom/")
    time.sleep(0.3)
    w0 = worker(d)
    errors0, drained0 = w0["errors"], w0["drained"]
    t_down = time.time()
    r.config_set("maxmemory-policy", "noeviction")
    r.config_set("maxmemory", "1")      # 1 byte: over it whatever the drain frees
    sha = store.load(RUN["lb_src"])
    try:
        rep = r.evalsha(sha, 5, *client_keys("leaky_bucket", b"/f/oom/new"), b"/f/oom/new", "1", "", "", "10", "1")
        refused = "admitted: %r" % (rep,)
    except conformance.redis.ResponseError as e:
        refused = str(e)
    check("%s: a client script is refused at maxmemory (OOM)" % case, refused.startswith("OOM "), refused)
    st, body = http(d.port, "PUT", "/v1/rules/other", json.dumps(
        {"match": "/other/*", "algorithm": "leaky_bucket", "capacity": 5, "rate": 1}))
    err = conformance.error_of(body)
    check("%s: a rule PUT answers 503 naming it: %r" % (case, err.get("message")),
          st == 503 and err.get("message", "").startswith("Redis is out of memory (maxmemory)"), "%d %r" % (st, body))
    time.sleep(2.5)                     # ticks of both jobs at maxmemory (prune_interval_ms 1000)
    w = worker(d)
    st, rerr = readyz(d)
    # the drain's scripts are allow-oom: they run (and free memory), the rest only reads: the worker ticks
    check("%s: the worker's allow-oom scripts run at maxmemory (errors %d -> %d, %d drained), /readyz stays 200" % (
        case, errors0, w["errors"], w["drained"] - drained0), w["errors"] == errors0 and w["drained"] > drained0 and
        st == 200, "%d %r" % (st, rerr))
    loose = de.Store(r=r)
    loose.single = False
    # no MULTI at maxmemory (its queued commands are refused): reads without a transaction, TIME
    # before and after (daemons_e2e.drain_state's cluster way: the mark may then be one off)
    de.check_exact(loose, buckets, RATE, case + " (at maxmemory)")
    # a rule gone from a shard's rules copy (HDEL runs at maxmemory): the worker must write it again,
    # and Redis refuses (that shard's clients would not find the rule): /readyz says so, naming
    # maxmemory (the buckets, with explicit parameters, and the horizon in the copy are untouched)
    r.hdel(b"sluice:{5}:rules", "api")
    end = time.monotonic() + 3.0
    st, rerr = readyz(d)
    while st == 200 and time.monotonic() < end:
        time.sleep(0.02)
        st, rerr = readyz(d)
    check("%s: a rules copy the worker cannot write: /readyz 503 redis_oom, %r" % (case, rerr.get("message")),
          st == 503 and rerr.get("reason") == "redis_oom" and REPLY_OOM in rerr.get("message", "") and
          "rule copies" in rerr.get("message", ""), "%d %r" % (st, rerr))
    lines = log_has(d, "rule_copies_sync_failed")
    check("%s: the log names the cause once: %r" % (case, lines[:1]), len(lines) == 1 and REPLY_OOM in lines[0],
          repr(lines[:3]))
    # a daemon started at maxmemory cannot store its config's rules: /readyz says why (not only
    # "not stored yet"), and it is ready once Redis takes them
    d2 = de.Daemon("f-oom-start", "redis://127.0.0.1:%d/0" % srv.port, case, {
        "redis_timeout_ms": TIMEOUT_MS, "rules": [RULE, {"name": "late", "match": "/late/*",
                                                          "algorithm": "fixed_window", "limit": 5, "window_ms": 1000}]})
    end = time.monotonic() + 5.0
    st2, rerr2 = 0, {}
    while time.monotonic() < end:
        try:
            st2, rerr2 = readyz(d2)
        except OSError:
            st2, rerr2 = 0, {}
        if st2 == 503 and rerr2.get("reason") != "rules_not_loaded":
            break
        time.sleep(0.02)
    check("%s: a daemon started at maxmemory: /readyz 503 redis_oom naming it (%r)" % (case, rerr2.get("message")),
          st2 == 503 and rerr2.get("reason") == "redis_oom" and rerr2.get("message") ==
          "not ready: the config file's rules cannot be stored: " + REPLY_OOM, "%d %r" % (st2, rerr2))
    st2, body2 = http(d2.port, "GET", "/v1/rules")
    check("%s: ... and its rule routes answer 503 redis_oom too" % case,
          st2 == 503 and conformance.error_of(body2).get("reason") == "redis_oom", "%d %r" % (st2, body2[:300]))
    r.config_set("maxmemory", "0")
    t_back = time.time()
    end = time.monotonic() + 10
    while http(d.port, "GET", "/readyz")[0] != 200 and time.monotonic() < end:
        time.sleep(0.01)
    note_recovery(case, round((time.time() - t_back) * 1000) if time.monotonic() < end else None)
    end = time.monotonic() + 5.0
    while http(d2.port, "GET", "/readyz")[0] != 200 and time.monotonic() < end:
        time.sleep(0.02)
    st2, body2 = http(d2.port, "GET", "/v1/rules/late")
    check("%s: ... ready once maxmemory is raised, its rules stored (GET /v1/rules/late %d)" % (case, st2),
          st2 == 200 and json.loads(body2).get("limit") == 5, "%d %r" % (st2, body2[:300]))
    d2.terminate()
    st, body = http(d.port, "PUT", "/v1/rules/other", json.dumps(
        {"match": "/other/*", "algorithm": "leaky_bucket", "capacity": 5, "rate": 1}))
    check("%s: the rule PUT is stored once maxmemory is raised" % case, st in (200, 201), "%d %r" % (st, body))
    check_after(d, store, buckets, case)
    d.terminate()
    srv.stop()


def case_slow():
    case = "slow"
    srv = Server(RUN["tmp"], case)
    d, store = start_daemon(srv, case)
    buckets = fill(srv, store, b"/f/slow/")
    time.sleep(0.3)
    errors0 = worker(d)["jobs"]["drain"]["errors"]
    sleeper = srv.client()
    end = time.monotonic() + 2.0
    n = 0
    while time.monotonic() < end:
        sleeper.execute_command("DEBUG", "SLEEP", "0.2")   # Redis answers nothing for 200 ms, under the timeout
        time.sleep(0.2)
        n += 1
    errors1 = worker(d)["jobs"]["drain"]["errors"]
    check("%s: %d stalls of 200 ms (timeout %d ms) cost the drain no error (%d -> %d)" % (
        case, n, TIMEOUT_MS, errors0, errors1), errors1 == errors0)
    settle(d)                           # Redis was away half the time: the leaks it held back
    de.check_exact(store, buckets, RATE, case + " (200 ms stalls)")
    # one stall longer than the timeout: the worker's calls time out, and it is back once Redis answers
    t_down = time.time()
    done = {}
    th = threading.Thread(target=lambda: done.update(t=(sleeper.execute_command("DEBUG", "SLEEP", "1.5"), time.time())[1]))
    th.start()
    w = wait_failing(d, timeout=1.4)
    failing = w.get("jobs", {}).get("drain", {}).get("failing") is True
    st, rerr = readyz(d) if failing else (None, {})
    th.join()
    check("%s: a 1.5 s stall fails the drain (%r), /readyz 503 redis_down meanwhile" % (
        case, w.get("jobs", {}).get("drain", {}).get("last_error")),
        failing and st == 503 and rerr.get("reason") == "redis_down", "%r %r" % (st, rerr))
    note_recovery(case, wait_recovered(d, done["t"], t_down * 1000), d, done["t"])
    check_readyz_up(d, case)
    check_after(d, store, buckets, case)
    d.terminate()
    srv.stop()


def case_stop_down():
    """SIGTERM while Redis is away and the leases ran out: exit 0 at once, and the log says only that
    the members set was not left (no lease was held: no leases_not_released warning)."""
    case = "stop_down"
    srv = Server(RUN["tmp"], case)
    d, store = start_daemon(srv, case)
    srv.kill9()
    end = time.monotonic() + 3.0 * de.LEASE_TTL_MS / 1000.0 + 2.0
    owned = None
    while time.monotonic() < end:
        owned = (worker(d).get("leases") or {}).get("owned")
        if owned == 0:
            break
        time.sleep(0.05)
    check("%s: the leases run out while Redis is away (owned %r)" % (case, owned), owned == 0)
    # a daemon started while Redis is away: its rules wait, but /readyz names Redis first
    d2 = de.Daemon("f-start-down", "redis://127.0.0.1:%d/0" % srv.port, case,
                   {"redis_timeout_ms": TIMEOUT_MS, "rules": [RULE]})
    end, st2, rerr2 = time.monotonic() + 5.0, 0, {}
    while time.monotonic() < end:
        try:
            st2, rerr2 = readyz(d2)
            break
        except OSError:
            time.sleep(0.05)
    check("%s: a daemon started with Redis away: /readyz 503 redis_down naming it (%r)" % (case, rerr2.get("message")),
          st2 == 503 and rerr2.get("reason") == "redis_down" and
          rerr2.get("message") == "redis unavailable: connect: Connection refused", "%d %r" % (st2, rerr2))
    st2, body2 = http(d2.port, "GET", "/v1/rules")
    check("%s: ... its rule routes 503 rules_not_loaded" % case,
          st2 == 503 and conformance.error_of(body2).get("reason") == "rules_not_loaded", "%d %r" % (st2, body2[:200]))
    d2.terminate()
    t = time.monotonic()
    rc = d.terminate()
    took = time.monotonic() - t
    check("%s: SIGTERM exits 0 in %.2f s (at most 1 s)" % (case, took), rc == 0 and took <= 1.0, "exit %r" % rc)
    left, warned = log_has(d, "members_not_left"), log_has(d, "leases_not_released")
    check("%s: the log says members_not_left, not leases_not_released (%r)" % (case, left[:1]),
          len(left) == 1 and "redis unavailable" in left[0] and not warned, repr(warned[:1]))


CASES = {"kill9": lambda: case_kill9(False), "kill9_aof": lambda: case_kill9(True), "sigstop": case_sigstop,
         "empty": case_empty, "oom": case_oom, "slow": case_slow, "stop_down": case_stop_down}
RUN = de.RUN


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: faults_e2e.py SLUICED LUA_DIR")
    RUN["sluiced"], lua_dir = sys.argv[1], sys.argv[2]
    names = [n for n in os.environ.get("CASES", "").split(",") if n]
    unknown = [n for n in names if n not in CASES]
    if unknown:
        sys.exit("faults_e2e: unknown case %s (cases: %s)" % (", ".join(unknown), ", ".join(CASES)))
    RUN["tmp"] = tempfile.mkdtemp(prefix="sluice-faults-e2e-")
    with open(os.path.join(lua_dir, "leaky_bucket.lua")) as f:
        RUN["lb_src"] = f.read()
    signal.signal(signal.SIGTERM, lambda *a: sys.exit(143))
    t_all = time.monotonic()
    try:
        for name in names or list(CASES):
            print("== %s" % name)
            sys.stdout.flush()
            t = time.monotonic()
            try:
                CASES[name]()
            except Exception as e:  # noqa: BLE001 - a case that raised is a failure, the others still run
                check("%s ran to its end" % name, False, repr(e))
            finally:
                de.kill_all()
                for p in PROCS:
                    if p.poll() is None:
                        p.send_signal(signal.SIGCONT)
                        p.kill()
                        p.wait()
            log("%s: %.1f s" % (name, time.monotonic() - t))
    finally:
        de.kill_all()
        for p in PROCS:
            if p.poll() is None:
                p.kill()
                p.wait()
        if not os.environ.get("KEEP"):
            shutil.rmtree(RUN["tmp"], ignore_errors=True)
        else:
            print("kept", RUN["tmp"])
    print("faults_e2e: recovery times (ms): " + ", ".join("%s %s" % c for c in RECOVERIES))
    print("faults_e2e: %.1f s in all" % (time.monotonic() - t_all))
    print("faults_e2e: %d passed, %d failed" % (conformance.PASSED, conformance.FAILED))
    sys.exit(1 if conformance.FAILED else 0)


if __name__ == "__main__":
    main()
