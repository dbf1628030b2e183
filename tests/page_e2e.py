#!/usr/bin/python3
"""The operator page (GET /, admin/page/index.html) in a real browser, from outside.

    /usr/bin/python3 tests/page_e2e.py <sluiced> <lua dir>      (lua dir: build/lua, after `make lua`)

Starts a private redis-server (tests/conformance.py's start_redis) and a real sluiced with
known state: four rules from its config file (api: leaky bucket capacity 10 at 0.001/s, so
a level stays put for the test; drip: a leaky bucket that drains; login: a sliding log;
search: a sliding counter in shadow mode), paths written by the real client scripts of
<lua dir> calling by rule name (/api/users at level 7 of 10, /api/full at 10 of 10 with 2
calls denied, /login 2 of 5, a path holding markup), once the daemon has taken the rules'
baselines (GET /v1/rules/{name}'s decisions not null), so every call counts in them.  Then it loads the page in
Debian's headless Chromium (CHROMIUM, default /usr/bin/chromium; as root in a container:
--no-sandbox) and reads the rendered DOM (--dump-dom after --virtual-time-budget), by the
page's ids and data-* attributes:

- open (no token): the rule names, match, algorithm and parameters, the shadow mark, the
  api rule's decisions (18 allowed, 2 denied: exactly the calls made); the paths' levels
  exactly ("7 / 10"), fullest first; the path with markup shown as text (no element made
  of it); the worker's tick count between GET /v1/worker's before and after the page
  loaded, the chart's samples likewise; Redis's node and the shards owned; a screenshot
  (1280x900) saved as <build>/page.png, where <build> is the folder above the sluiced
  binary (build/normal), its path printed;
- auth (admin.token_file and admin.auth_reads): GET / is served without a token while the
  API answers 401; the page asks for the token (the form shown, "needed"), says a wrong
  one is wrong ("#token=wrong": "wrong"), and with "#token=<token>" shows the data;
  <build>/page-auth.png is the form.

Prints "ok   ..." / "FAIL ..." lines and a last line "page_e2e: N passed, M failed"; exit
status 1 when one failed.  KEEP=1 keeps the temporary directory (configs, logs, DOMs).
"""
import html.parser
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import conformance  # noqa: E402
from conformance import check, client_keys, free_port, http, spawn_sluiced, start_redis, stop_daemon, wait_ready  # noqa: E402

TOKEN = "page-test-token"
MARKUP_PATH = b"/api/<img src=x onerror=alert(1)>"
RULES = [
    {"name": "api", "match": "/api/*", "algorithm": "leaky_bucket", "capacity": 10, "rate": 0.001},
    {"name": "drip", "match": "/drip/*", "algorithm": "leaky_bucket", "capacity": 100, "rate": 5},
    {"name": "login", "match": "/login", "algorithm": "sliding_log", "limit": 5, "window_ms": 60000},
    {"name": "search", "match": "/search*", "algorithm": "sliding_counter", "limit": 100, "window_ms": 60000,
     "sub_windows": 6, "mode": "shadow"},
]
PARAMS = {"api": "capacity 10, leaks 0.001/s", "drip": "capacity 100, leaks 5/s", "login": "5 per 60 s",
          "search": "100 per 60 s, 6 sub-windows"}
LEVELS = {"/api/full": "10 / 10", "/api/users": "7 / 10", "/login": "2 / 5", MARKUP_PATH.decode(): "1 / 10"}


# ---- a small DOM from Chromium's --dump-dom ------------------------------------------------


class Node:
    def __init__(self, tag, attrs, parent):
        self.tag, self.attrs, self.parent, self.children = tag, dict(attrs), parent, []

    def text(self):
        return "".join(c if isinstance(c, str) else c.text() for c in self.children)

    def walk(self):
        yield self
        for c in self.children:
            if isinstance(c, Node):
                yield from c.walk()

    def find(self, pred):
        return [n for n in self.walk() if pred(n)]

    def by_id(self, i):
        found = self.find(lambda n: n.attrs.get("id") == i)
        return found[0] if found else None

    def hidden(self):
        n = self
        while n is not None:
            if "hidden" in n.attrs:
                return True
            n = n.parent
        return False


VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}


class Builder(html.parser.HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.root = Node("#document", {}, None)
        self.cur = self.root

    def handle_starttag(self, tag, attrs):
        n = Node(tag, attrs, self.cur)
        self.cur.children.append(n)
        if tag not in VOID:
            self.cur = n

    def handle_startendtag(self, tag, attrs):
        self.cur.children.append(Node(tag, attrs, self.cur))

    def handle_endtag(self, tag):
        n = self.cur
        while n is not None and n.tag != tag:
            n = n.parent
        if n is not None and n.parent is not None:
            self.cur = n.parent

    def handle_data(self, data):
        self.cur.children.append(data)


def parse(dom):
    b = Builder()
    b.feed(dom)
    b.close()
    return b.root


# ---- Chromium -------------------------------------------------------------------------------


def chromium(args, url, tmp, name):
    """Headless Chromium on url with args; stdout as text ('' after a failure, which is printed)."""
    exe = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    profile = os.path.join(tmp, "chrome-" + name)
    cmd = [exe, "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--no-first-run",
           "--disable-extensions", "--user-data-dir=" + profile, "--virtual-time-budget=8000"] + args + [url]
    try:
        p = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    except subprocess.TimeoutExpired:
        print("     chromium timed out: %s" % " ".join(cmd))
        return ""
    with open(os.path.join(tmp, name + ".stderr"), "wb") as f:
        f.write(p.stderr)
    if p.returncode != 0:
        print("     chromium exited %d: %s" % (p.returncode, p.stderr.decode(errors="replace")[-600:]))
        return ""
    out = p.stdout.decode(errors="replace")
    with open(os.path.join(tmp, name + ".html"), "w") as f:
        f.write(out)
    return out


def dump(url, tmp, name):
    return parse(chromium(["--dump-dom"], url, tmp, name))


def screenshot(url, tmp, name, path):
    if os.path.exists(path):
        os.remove(path)
    chromium(["--screenshot=" + os.path.abspath(path), "--window-size=1280,900", "--hide-scrollbars"], url, tmp, name)
    with open(path, "rb") if os.path.exists(path) else open(os.devnull, "rb") as f:
        head = f.read(8)
    ok = head == b"\x89PNG\r\n\x1a\n" and os.path.getsize(path) > 10000
    check("screenshot saved: %s" % path, ok)
    print("page screenshot: %s" % path)


# ---- the daemon and its state ---------------------------------------------------------------


def get_json(port, path, token=None):
    import urllib.request
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path))
    if token:
        req.add_header("Authorization", "Bearer " + token)
    with urllib.request.urlopen(req, timeout=10) as res:
        return json.loads(res.read())


def wait_for(what, fn, timeout=20.0):
    end = time.monotonic() + timeout
    while True:
        v = fn()
        if v or time.monotonic() > end:
            check(what, bool(v))
            return v
        time.sleep(0.2)


def start(sluiced, tmp, rport, name, admin=None):
    listen = free_port()
    conf = {"redis": "redis://127.0.0.1:%d/0" % rport, "listen": "127.0.0.1:%d" % listen, "id": "page-1",
            "drain_interval_ms": 100, "prune_interval_ms": 1000, "max_clock_skew_ms": 0, "rules": RULES}
    if admin:
        conf["admin"] = admin
    d, log = spawn_sluiced(sluiced, tmp, name, conf)
    wait_ready(listen)
    return d, log, listen


def fill(r, lua_dir):
    """The client calls, by rule name (ARGV[4]): every one counts in its rule's decisions."""
    sha = {a: r.script_load(open(os.path.join(lua_dir, a + ".lua")).read())
           for a in ("leaky_bucket", "sliding_log", "sliding_counter")}

    def call(alg, path, rule, n=1):
        return r.evalsha(sha[alg], 5, *client_keys(alg, path), path, str(n), "", rule)

    got = [call("leaky_bucket", b"/api/users", "api")[0] for _ in range(7)]
    got += [call("leaky_bucket", b"/api/full", "api")[0] for _ in range(12)]
    got += [call("leaky_bucket", MARKUP_PATH, "api")[0]]
    got += [call("sliding_log", b"/login", "login")[0] for _ in range(2)]
    got += [call("sliding_counter", b"/search", "search")[0] for _ in range(3)]
    # 5 buckets that drain (in 10 s), so that every path of the test is among the page's 20
    got += [call("leaky_bucket", b"/drip/%d" % i, "drip", 50)[0] for i in range(5)]
    check("the client scripts admit 7 + 10 + 1 + 2 + 3 + 5 calls and deny 2", sum(got) == 28 and len(got) == 30,
          repr(got))


# ---- the page -------------------------------------------------------------------------------


def rule_rows(doc):
    return {n.attrs["data-rule"]: n for n in doc.find(lambda n: n.tag == "tr" and "data-rule" in n.attrs)}


def col(row, name):
    found = row.find(lambda n: n.attrs.get("data-col") == name)
    return found[0] if found else None


def check_data(doc, port, before, after, what):
    body = doc.find(lambda n: n.tag == "body")
    check(what + ": the page rendered every section (body data-state ok)",
          bool(body) and body[0].attrs.get("data-state") == "ok", body[0].attrs.get("data-state") if body else "no body")
    rows = rule_rows(doc)
    check(what + ": the four rules by name", sorted(rows) == ["api", "drip", "login", "search"], repr(sorted(rows)))
    for r in RULES:
        row = rows.get(r["name"])
        if not row:
            continue
        m, a, p = col(row, "match"), col(row, "algorithm"), col(row, "params")
        check(what + ": rule %s shows its match, algorithm and parameters" % r["name"],
              m is not None and m.text() == r["match"] and a is not None and a.text() == r["algorithm"] and
              p is not None and p.text() == PARAMS[r["name"]],
              "%r %r %r" % (m and m.text(), a and a.text(), p and p.text()))
    search = rows.get("search")
    check(what + ": the shadow rule is marked", search is not None and "shadow" in col(search, "name").text())
    api = rows.get("api")
    if api:
        got = {k: col(api, k).attrs.get("data-value") for k in ("allowed", "denied", "shadow_denied")}
        check(what + ": rule api's decisions: 18 allowed, 2 denied (the calls made)",
              got == {"allowed": "18", "denied": "2", "shadow_denied": "0"}, repr(got))
        check(what + ": the counts are shown as text", col(api, "allowed").text().startswith("18"))
    paths = [n for n in doc.find(lambda n: n.tag == "tr" and "data-path" in n.attrs)]
    levels = {n.attrs["data-path"]: col(n, "level").text() for n in paths}
    for p, want in LEVELS.items():
        check(what + ": path %s at level %s" % (p, want), levels.get(p) == want, repr(levels.get(p)))
    check(what + ": the fullest path first", bool(paths) and paths[0].attrs["data-path"] == "/api/full",
          repr([n.attrs["data-path"] for n in paths[:3]]))
    markup = [n for n in paths if n.attrs["data-path"] == MARKUP_PATH.decode()]
    check(what + ": a path holding markup is shown as text, no element made of it",
          bool(markup) and col(markup[0], "path").text().startswith(MARKUP_PATH.decode()) and
          not doc.find(lambda n: n.tag == "img"))
    ticks = doc.by_id("w-ticks")
    t = int(ticks.attrs.get("data-value", "-1")) if ticks is not None else -1
    check(what + ": the worker's ticks (%d) between GET /v1/worker's before and after (%d..%d)" %
          (t, before["ticks"], after["ticks"]), before["ticks"] <= t <= after["ticks"])
    check(what + ": ticks shown as text", ticks is not None and ticks.text().replace(",", "") == str(t))
    chart = doc.by_id("chart")
    n = int(chart.attrs.get("data-samples", "-1")) if chart is not None else -1
    nb, na = len(before["history"]["samples"]), len(after["history"]["samples"])
    check(what + ": the chart has the history's samples (%d, GET /v1/worker: %d..%d) and draws both series" % (n, nb, na),
          nb <= n <= na and len(chart.find(lambda e: e.tag == "polyline")) == 2)
    nodes = doc.by_id("nodes")
    addrs = [c.text() for c in nodes.find(lambda e: e.attrs.get("data-col") == "address")] if nodes else []
    ranges = [c.text() for c in nodes.find(lambda e: e.attrs.get("data-col") == "ranges")] if nodes else []
    check(what + ": Redis's node and its slots", addrs == ["127.0.0.1:%d" % port] and ranges == ["0-16383"],
          repr((addrs, ranges)))
    leases = doc.by_id("leases")
    check(what + ": the shards this daemon holds (1024)", leases is not None and leases.attrs.get("data-owned") == "1024"
          and "page-1" in leases.text(), leases.text() if leases else "")
    ready = doc.by_id("ready")
    check(what + ": /readyz shown", ready is not None and ready.attrs.get("data-ready") == "ready")


def run_open(sluiced, lua_dir, tmp, build, r, rport):
    d, log, port = start(sluiced, tmp, rport, "open")
    try:
        st, body = http(port, "GET", "/")
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "admin", "page", "index.html"),
                  "rb") as f:
            check("GET / answers admin/page/index.html", st == 200 and body == f.read(), "status %d" % st)
        wait_for("the daemon took the rules' baselines (decisions not null)",
                 lambda: all(get_json(port, "/v1/rules/" + r["name"])["decisions"] is not None for r in RULES))
        fill(r, lua_dir)
        wait_for("GET /v1/rules/api counts the calls (18 allowed, 2 denied)",
                 lambda: (get_json(port, "/v1/rules/api")["decisions"] or {}).get("allowed") == 18 and
                 get_json(port, "/v1/rules/api")["decisions"]["denied"] == 2)
        wait_for("the worker's history has two samples and something drained",
                 lambda: len(get_json(port, "/v1/worker")["history"]["samples"]) >= 2 and
                 get_json(port, "/v1/worker")["drained"] > 0, timeout=25)
        url = "http://127.0.0.1:%d/" % port
        before = get_json(port, "/v1/worker")
        doc = dump(url, tmp, "open")
        after = get_json(port, "/v1/worker")
        check_data(doc, rport, before, after, "open")
        screenshot(url, tmp, "open-shot", os.path.join(build, "page.png"))
    finally:
        check("sluiced exits 0 on SIGTERM", stop_daemon(d, log) == 0)


def run_auth(sluiced, lua_dir, tmp, build, r, rport):
    tf = os.path.join(tmp, "token")
    with open(tf, "w") as f:
        f.write(TOKEN + "\n")
    d, log, port = start(sluiced, tmp, rport, "auth", {"token_file": tf, "auth_reads": True})
    try:
        st, body = http(port, "GET", "/")
        check("auth_reads: GET / is served without a token", st == 200 and b"<title>sluice</title>" in body)
        st, _ = http(port, "GET", "/v1/rules")
        check("auth_reads: GET /v1/rules without the token is 401", st == 401)
        url = "http://127.0.0.1:%d/" % port
        doc = dump(url, tmp, "auth-none")
        form, msg, data = doc.by_id("auth"), doc.by_id("auth-message"), doc.by_id("data")
        check("auth_reads: the page asks for the token (the form shown, the data hidden)",
              form is not None and not form.hidden() and doc.by_id("token-input") is not None and data.hidden() and
              msg.attrs.get("data-auth") == "needed" and "token" in msg.text(), msg.text() if msg else "")
        check("auth_reads: no data without the token", not rule_rows(doc))
        doc = dump(url + "#token=wrong", tmp, "auth-wrong")
        msg = doc.by_id("auth-message")
        check("auth_reads: a wrong token is said to be wrong",
              msg is not None and msg.attrs.get("data-auth") == "wrong" and "Wrong token" in msg.text() and
              not doc.by_id("auth").hidden(), msg.text() if msg else "")
        wait_for("the second daemon summed the stats", lambda: get_json(port, "/v1/worker", TOKEN)["decisions"]["aggregations"] >= 1)
        before = get_json(port, "/v1/worker", TOKEN)
        doc = dump(url + "#token=" + TOKEN, tmp, "auth-token")
        after = get_json(port, "/v1/worker", TOKEN)
        check("auth_reads: with the token the form is gone", doc.by_id("auth").hidden() and not doc.by_id("data").hidden())
        rows = rule_rows(doc)
        levels = {n.attrs["data-path"]: col(n, "level").text()
                  for n in doc.find(lambda n: n.tag == "tr" and "data-path" in n.attrs)}
        check("auth_reads: with the token the rules are shown", sorted(rows) == ["api", "drip", "login", "search"])
        check("auth_reads: with the token /api/users is at 7 / 10", levels.get("/api/users") == "7 / 10",
              repr(levels.get("/api/users")))
        t = int(doc.by_id("w-ticks").attrs.get("data-value", "-1"))
        check("auth_reads: with the token the ticks (%d) are GET /v1/worker's (%d..%d)" % (t, before["ticks"], after["ticks"]),
              before["ticks"] <= t <= after["ticks"])
        screenshot(url, tmp, "auth-shot", os.path.join(build, "page-auth.png"))
    finally:
        check("sluiced (auth) exits 0 on SIGTERM", stop_daemon(d, log) == 0)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: page_e2e.py SLUICED LUA_DIR")
    sluiced, lua_dir = sys.argv[1], sys.argv[2]
    build = os.path.dirname(os.path.dirname(os.path.abspath(sluiced)))
    exe = os.environ.get("CHROMIUM", "/usr/bin/chromium")
    tmp = tempfile.mkdtemp(prefix="sluice-page-")
    srv = None
    try:
        check("Chromium is installed (%s; tools/deps.sh installs Debian's chromium)" % exe, os.access(exe, os.X_OK))
        if os.access(exe, os.X_OK):
            srv, r = start_redis(tmp)
            rport = r.connection_pool.connection_kwargs["port"]
            for phase in (run_open, run_auth):
                try:
                    phase(sluiced, lua_dir, tmp, build, r, rport)
                except Exception as e:  # one phase's failure is counted, the next still runs
                    check("%s raised nothing" % phase.__name__, False, "%s: %s" % (type(e).__name__, e))
    finally:
        if srv:
            srv.kill()
            srv.wait()
        if os.environ.get("KEEP") == "1":
            print("     kept %s" % tmp)
        else:
            shutil.rmtree(tmp, ignore_errors=True)
    print("page_e2e: %d passed, %d failed" % (conformance.PASSED, conformance.FAILED))
    sys.exit(1 if conformance.FAILED else 0)


if __name__ == "__main__":
    main()
