#!/usr/bin/python3
"""The operator's daemon (issue 12), from outside: what `make install` puts
on a machine, the systemd unit, the man page, the default config file, the
json log format, and the Prometheus alert rules and metrics.

    /usr/bin/python3 tests/ops_e2e.py <sluiced> <lua dir>     (run by `make test`)

- install: `make install DESTDIR=<tmp>` installs the binary, scripts, unit,
  man page and $(SYSCONFDIR)/sluice/sluiced.json; a second install leaves a
  changed config alone; uninstall leaves it too;
- the unit: the sandbox directives, `systemd-analyze verify` clean (no
  output at all), and every system call the daemon makes in a run (strace:
  start, admin requests, SIGHUP, SIGTERM) allowed by its SystemCallFilter;
- the default config: sluiced without --config reads /etc/sluice/sluiced.json
  (absent: defaults; broken: exit 2 naming it), seen through a private mount
  namespace whose /etc is an overlay (unshare -m): the machine's /etc is
  neither read nor written;
- the man page renders without a warning (man, groff -ww) and names every
  long flag of `sluiced --help` and every config field of core/config.c and
  core/layout.c;
- log_format json: every line a daemon writes is a JSON object with ts,
  level and event; bad values exit 2 naming log_format;
- promtool: `check rules examples/alerts.yml` clean, every metric the rules
  use is served, and `check metrics` on a real daemon's /metrics prints
  nothing.
A tool that is missing (systemd-analyze, strace, unshare, man, groff,
promtool: tools/deps.sh installs them for `make test`) is a failure naming
it, never a skip.  Prints one line per check and "ops_e2e: N passed, M failed".
"""
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
import urllib.error  # noqa: E402
import urllib.request  # noqa: E402

import conformance  # noqa: E402
from conformance import check, client_keys, free_port, start_redis, wait_copies, wait_ready  # noqa: E402

RUN = {}

# The unit's sandbox, as the issue asks (key -> value; a key given twice is a list).
UNIT_WANT = {
    "DynamicUser": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "NoNewPrivileges": "yes",
    "PrivateTmp": "yes", "PrivateDevices": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "RestrictNamespaces": "yes", "LockPersonality": "yes",
    "MemoryDenyWriteExecute": "yes", "CapabilityBoundingSet": "", "Restart": "on-failure",
    "ExecReload": "/bin/kill -HUP $MAINPID", "ExecStart": "/usr/local/bin/sluiced --token-file %d/token",
    "LoadCredential": "token:/etc/sluice/token", "RestartPreventExitStatus": "2",
}

# Config fields documented ahead of the code (issue 12's other parts): checked in the man page only.
FIELDS_AHEAD = ["max_connections_per_ip", "header_timeout_ms", "admin_threads", "admin.tls_cert", "admin.tls_key"]
# The rule fields of DESIGN.md's contract.
RULE_FIELDS = ["name", "match", "algorithm", "mode", "capacity", "rate", "limit", "window_ms", "sub_windows"]


def http(port, method, path, body=None, headers=None):
    """One request to a daemon on loopback: (status, body bytes); `body` a dict is sent as JSON."""
    data = json.dumps(body).encode() if isinstance(body, dict) else body
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), method=method, data=data,
                                 headers=headers or {})
    try:
        with urllib.request.urlopen(req, timeout=10) as res:
            return res.status, res.read()
    except urllib.error.HTTPError as e:
        return e.code, e.read()
    except OSError as e:
        return 0, str(e).encode()


def tool(name):
    """The path of `name`, or None after a failed check naming it (tools/deps.sh installs it)."""
    p = shutil.which(name)
    check("%s is installed (tools/deps.sh)" % name, p is not None, "not on PATH: this check cannot run")
    return p


def make(*args):
    """`make -C ROOT args` with the environment of a top-level make (no jobserver of ours): (rc, output)."""
    env = {k: v for k, v in os.environ.items() if k not in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL", "MAKEOVERRIDES")}
    p = subprocess.run(["make", "--no-print-directory", "-C", ROOT] + list(args), env=env, capture_output=True,
                       text=True, timeout=600)
    return p.returncode, p.stdout + p.stderr


def unit_keys(path):
    """The [Service]/[Unit] assignments of a unit file: key -> list of values, in order."""
    keys = {}
    for line in open(path):
        line = line.strip()
        if not line or line[0] in "#;[" or "=" not in line:
            continue
        k, v = line.split("=", 1)
        keys.setdefault(k.strip(), []).append(v.strip())
    return keys


def flavour():
    """FLAVOUR of the binary under test (build/<flavour>/bin/sluiced), so install takes that build."""
    m = re.search(r"build/([a-z]+)/bin/sluiced$", RUN["sluiced"])
    return m.group(1) if m else "normal"


# ---- make install ----------------------------------------------------------------


def run_install(tmp):
    dest = os.path.join(tmp, "root")
    rc, out = make("install", "DESTDIR=" + dest, "FLAVOUR=" + flavour())
    check("make install DESTDIR=<tmp> succeeds", rc == 0, out[-2000:])
    want = {
        "usr/local/bin/sluiced": 0o755,
        "usr/local/lib/systemd/system/sluiced.service": 0o644,
        "usr/local/share/man/man8/sluiced.8": 0o644,
        "usr/local/share/sluice/lua/leaky_bucket.lua": 0o644,
        "usr/local/share/sluice/lua/README.md": 0o644,
        "usr/local/share/doc/sluice/examples/alerts.yml": 0o644,
        "usr/local/share/doc/sluice/examples/sluiced.json": 0o644,
        "usr/local/share/doc/sluice/openapi.json": 0o644,
        "usr/local/share/doc/sluice/sluiced.json": 0o644,
        "etc/sluice/sluiced.json": 0o644,
    }
    for rel, mode in sorted(want.items()):
        p = os.path.join(dest, rel)
        got = os.stat(p).st_mode & 0o7777 if os.path.exists(p) else None
        check("installed %s, mode %o" % (rel, mode), got == mode, "mode %s" % (oct(got) if got is not None else "absent"))
    etc = os.path.join(dest, "etc/sluice/sluiced.json")
    shipped = open(os.path.join(ROOT, "packaging/sluiced.json")).read()
    check("/etc/sluice/sluiced.json is packaging/sluiced.json",
          os.path.exists(etc) and open(etc).read() == shipped)
    check("no token is installed (the operator makes it)", not os.path.exists(os.path.join(dest, "etc/sluice/token")))
    man = os.path.join(dest, "usr/local/share/man/man8/sluiced.8")
    check("the installed man page is docs/sluiced.8 (PREFIX and SYSCONFDIR at their defaults)",
          os.path.exists(man) and open(man).read() == open(os.path.join(ROOT, "docs/sluiced.8")).read())
    binary = os.path.join(dest, "usr/local/bin/sluiced")
    p = subprocess.run([binary, "--check-config", "--config", etc], capture_output=True, text=True, timeout=10)
    check("the installed config is valid (sluiced --check-config)", p.returncode == 0 and "config=" + etc in p.stdout,
          p.stdout + p.stderr)
    p = subprocess.run([binary, "--help"], capture_output=True, text=True, timeout=10)
    check("the installed sluiced names its default config, /etc/sluice/sluiced.json, in --help",
          "/etc/sluice/sluiced.json when that exists" in p.stdout, p.stdout[:400])

    # a second install keeps the operator's config
    mine = '{"listen": "127.0.0.1:9999", "log_format": "json"}\n'
    with open(etc, "w") as f:
        f.write(mine)
    rc, out = make("install", "DESTDIR=" + dest, "FLAVOUR=" + flavour())
    check("a second make install succeeds and says it kept the config",
          rc == 0 and "install: kept %s" % etc in out, out[-1500:])
    check("... and leaves the changed config as it was", open(etc).read() == mine)

    unit = os.path.join(dest, "usr/local/lib/systemd/system/sluiced.service")
    if os.path.exists(unit):
        run_unit(tmp, dest, unit, binary)
    rc, out = make("uninstall", "DESTDIR=" + dest)
    check("make uninstall removes the binary, the unit and the man page",
          rc == 0 and not any(os.path.exists(os.path.join(dest, r)) for r in
                              ("usr/local/bin/sluiced", "usr/local/lib/systemd/system/sluiced.service",
                               "usr/local/share/man/man8/sluiced.8", "usr/local/share/sluice")), out[-1000:])
    check("... and leaves /etc/sluice/sluiced.json", os.path.exists(etc) and open(etc).read() == mine)


# ---- the systemd unit ------------------------------------------------------------


def run_unit(tmp, dest, unit, binary):
    keys = unit_keys(unit)
    for k, v in sorted(UNIT_WANT.items()):
        check("the unit has %s=%s" % (k, v), v in keys.get(k, []), "has %r" % keys.get(k))
    check("the unit's filter is @system-service", "@system-service" in keys.get("SystemCallFilter", []))
    check("the unit is wanted by multi-user.target", keys.get("WantedBy") == ["multi-user.target"])
    sa = tool("systemd-analyze")
    if sa:
        # the unit as installed, but its ExecStart names the DESTDIR binary (the one file not
        # at its final place); man(1) finds sluiced(8) (Documentation=) in the DESTDIR too
        d = os.path.join(tmp, "verify")
        os.makedirs(d)
        text = open(unit).read()
        check("ExecStart names the installed path", "ExecStart=/usr/local/bin/sluiced " in text)
        with open(os.path.join(d, "sluiced.service"), "w") as f:
            f.write(text.replace("ExecStart=/usr/local/bin/sluiced ", "ExecStart=%s " % binary))
        env = dict(os.environ, MANPATH=os.path.join(dest, "usr/local/share/man"))
        p = subprocess.run([sa, "verify", os.path.join(d, "sluiced.service")], capture_output=True, text=True,
                           env=env, timeout=60)
        check("systemd-analyze verify: exit 0 and no output at all (no unknown key, no missing command)",
              p.returncode == 0 and not (p.stdout + p.stderr).strip(), "rc %d: %s" % (p.returncode, p.stdout + p.stderr))
        p = subprocess.run([sa, "security", "--offline=yes", "--threshold=30", os.path.join(d, "sluiced.service")],
                           capture_output=True, text=True, env=env, timeout=60)
        m = re.search(r"Overall exposure level for sluiced.service: ([0-9.]+)", p.stdout)
        check("systemd-analyze security --offline: exposure under 3.0 (\"OK\")",
              p.returncode == 0 and m is not None and float(m.group(1)) < 3.0, (m.group(0) if m else p.stdout[-500:]))
        run_syscalls(tmp, keys.get("SystemCallFilter", []), sa)


def filter_set(sa, spec):
    """The system calls a SystemCallFilter group names, nested groups expanded."""
    out = subprocess.run([sa, "syscall-filter", spec], capture_output=True, text=True, timeout=30).stdout
    calls = set()
    for line in out.splitlines():
        w = line.strip()
        if not w or w.startswith("#"):
            continue
        if w.startswith("@"):
            if w != spec:
                calls |= filter_set(sa, w)
        else:
            calls.add(w)
    return calls


def run_syscalls(tmp, filters, sa):
    """Every system call of a daemon's run is allowed by the unit's SystemCallFilter= lines."""
    st = tool("strace")
    if not st:
        return
    allowed = set()
    for spec in filters:
        deny = spec.startswith("~")
        calls = set()
        for g in spec.lstrip("~").split():
            calls |= filter_set(sa, g) if g.startswith("@") else {g}
        allowed = allowed - calls if deny else allowed | calls
    check("the unit's SystemCallFilter allows a few hundred calls", len(allowed) > 200, str(len(allowed)))
    srv, r = start_redis(tmp)
    port, trace = free_port(), os.path.join(tmp, "strace.txt")
    token = os.path.join(tmp, "token")
    with open(token, "w") as f:
        f.write("t0ken\n")
    log = open(os.path.join(tmp, "strace-daemon.log"), "w")
    # an ASan build's LeakSanitizer cannot run under ptrace (it exits 1): not for this run
    env = dict(os.environ, ASAN_OPTIONS=(os.environ.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":"))
    d = subprocess.Popen([st, "-f", "-qq", "-o", trace, RUN["sluiced"], "--no-config", "--redis",
                          "redis://127.0.0.1:%d/0" % r.connection_pool.connection_kwargs["port"],
                          "--listen", "127.0.0.1:%d" % port, "--token-file", token], stdout=log, stderr=log, env=env)
    try:
        wait_ready(port)
        auth = {"Authorization": "Bearer t0ken"}
        http(port, "PUT", "/v1/rules/api", {"match": "/api/*", "algorithm": "sliding_log", "limit": 5,
                                            "window_ms": 1000}, auth)
        for path in ("/metrics", "/v1/worker", "/v1/paths", "/v1/rules/api", "/openapi.json", "/nope"):
            http(port, "GET", path)
        http(port, "POST", "/v1/reset", {"match": "*"}, auth)
        http(port, "POST", "/v1/worker/sweep", None, auth)
        time.sleep(1.2)  # a prune tick or so
        pid = daemon_child(d.pid)
        if pid:
            os.kill(pid, signal.SIGHUP)
            time.sleep(0.3)
            os.kill(pid, signal.SIGTERM)
        rc = d.wait(15)
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
        log.close()
        srv.terminate()
        srv.wait(10)
    used = set()
    for line in open(trace):
        m = re.match(r"^\d+\s+([a-z_0-9]+)\(", line)
        if m:
            used.add(m.group(1))
    check("strace saw the daemon run and stop (exit 0 after SIGTERM)", rc == 0 and len(used) > 20,
          "rc %r, %d calls" % (rc, len(used)))
    check("every system call of that run is allowed by the unit's SystemCallFilter",
          used and not (used - allowed), "not allowed: %s" % sorted(used - allowed))


def daemon_child(tracer):
    """The pid of the sluiced that strace (pid `tracer`) started."""
    for _ in range(50):
        try:
            kids = open("/proc/%d/task/%d/children" % (tracer, tracer)).read().split()
        except OSError:
            kids = []
        if kids:
            return int(kids[0])
        time.sleep(0.05)
    return None


# ---- the default config file ----------------------------------------------------


def in_etc_overlay(tmp, name, text, argv, timeout=15):
    """Run argv in a private mount namespace whose /etc/sluice holds only sluiced.json = text (None: absent)."""
    if not RUN.get("unshare"):
        return None
    top = os.path.join(tmp, "etc-" + name)
    os.makedirs(os.path.join(top, "sluice"))
    files = os.path.join(tmp, "files-" + name)
    os.makedirs(files)
    if text is not None:
        with open(os.path.join(files, "sluiced.json"), "w") as f:
            f.write(text)
    # /etc as an overlay with our sluice/ on top, then an empty tmpfs on /etc/sluice (the
    # machine's own /etc/sluice, if any, hidden) into which the case's file is copied
    script = ('mount -t overlay overlay -o lowerdir="$1":/etc /etc && mount -t tmpfs tmpfs /etc/sluice && '
              'cp -a "$2"/. /etc/sluice/ && shift 2 && exec "$@"')
    flags = ["-m"] if os.geteuid() == 0 else ["-r", "-m"]
    return subprocess.run([RUN["unshare"]] + flags + ["sh", "-c", script, "sh", top, files] + argv,
                          capture_output=True, text=True, timeout=timeout)


def run_default_config(tmp):
    RUN["unshare"] = tool("unshare")
    if not RUN["unshare"]:
        return
    s = RUN["sluiced"]
    p = in_etc_overlay(tmp, "absent", None, [s, "--check-config"])
    check("without --config and without /etc/sluice/sluiced.json: the defaults (config=none)",
          p.returncode == 0 and " drain_interval_ms=100 " in p.stdout and "config=none" in p.stdout,
          p.stdout + p.stderr)
    p = in_etc_overlay(tmp, "present", '{"drain_interval_ms": 77, "log_format": "json"}', [s, "--check-config"])
    check("without --config: /etc/sluice/sluiced.json is read (drain_interval_ms=77, log_format=json)",
          p.returncode == 0 and " drain_interval_ms=77 " in p.stdout and
          "config=/etc/sluice/sluiced.json log_format=json" in p.stdout, p.stdout + p.stderr)
    p = in_etc_overlay(tmp, "flag", '{"drain_interval_ms": 77}', [s, "--check-config", "--drain-interval-ms", "9"])
    check("... and a flag still overrides it", p.returncode == 0 and " drain_interval_ms=9 " in p.stdout,
          p.stdout + p.stderr)
    p = in_etc_overlay(tmp, "noconf", '{"drain_interval_ms": 77}', [s, "--check-config", "--no-config"])
    check("--no-config does not read it", p.returncode == 0 and " drain_interval_ms=100 " in p.stdout and
          "config=none" in p.stdout, p.stdout + p.stderr)
    other = os.path.join(tmp, "other.json")
    with open(other, "w") as f:
        f.write('{"drain_interval_ms": 55}')
    p = in_etc_overlay(tmp, "explicit", '{"drain_interval_ms": 0}', [s, "--check-config", "--config", other])
    check("--config FILE replaces it (a broken default is not read)",
          p.returncode == 0 and " drain_interval_ms=55 " in p.stdout, p.stdout + p.stderr)
    p = in_etc_overlay(tmp, "broken", '{"log_format": "yaml"}', [s, "--check-config"])
    check("a broken /etc/sluice/sluiced.json: exit 2 naming the file, then the field",
          p.returncode == 2 and p.stderr == "sluiced: /etc/sluice/sluiced.json: log_format: must be text or json\n"
          and p.stdout == "", repr((p.returncode, p.stdout, p.stderr)))
    p = in_etc_overlay(tmp, "badjson", '{"drain_interval_ms": ', [s])
    check("... not JSON: exit 2 naming the file, before any connection",
          p.returncode == 2 and p.stderr.startswith("sluiced: /etc/sluice/sluiced.json: config: "),
          repr((p.returncode, p.stderr)))
    # a real run from the default file: its listen address and log format are used
    srv, r = start_redis(tmp)
    try:
        port = free_port()
        conf = json.dumps({"redis": "redis://127.0.0.1:%d/0" % r.connection_pool.connection_kwargs["port"],
                           "listen": "127.0.0.1:%d" % port, "log_format": "json"})
        top = os.path.join(tmp, "etc-run")
        files = os.path.join(tmp, "files-run")
        os.makedirs(os.path.join(top, "sluice"))
        os.makedirs(files)
        with open(os.path.join(files, "sluiced.json"), "w") as f:
            f.write(conf)
        script = ('mount -t overlay overlay -o lowerdir="$1":/etc /etc && mount -t tmpfs tmpfs /etc/sluice && '
                  'cp -a "$2"/. /etc/sluice/ && exec "$3"')
        flags = ["-m"] if os.geteuid() == 0 else ["-r", "-m"]
        logf = open(os.path.join(tmp, "default-run.log"), "w")
        d = subprocess.Popen([RUN["unshare"]] + flags + ["sh", "-c", script, "sh", top, files, s],
                             stdout=logf, stderr=logf)
        wait_ready(port)
        st = http(port, "GET", "/readyz")[0]
        d.send_signal(signal.SIGTERM)  # unshare and sh exec'd: this pid is sluiced's
        rc = d.wait(10)
        logf.close()
        lines = open(os.path.join(tmp, "default-run.log")).read().splitlines()
        started = [json.loads(x) for x in lines if x.startswith("{") and '"event":"started"' in x]
        check("sluiced run without flags listens where /etc/sluice/sluiced.json says, logs json, stops with 0",
              st == 200 and rc == 0 and len(started) == 1 and started[0].get("config") == "/etc/sluice/sluiced.json",
              "readyz %r rc %r log %r" % (st, rc, lines[:3]))
    finally:
        srv.terminate()
        srv.wait(10)


# ---- the man page ----------------------------------------------------------------


def config_fields():
    """Every config field name the code accepts: core/config.c's tables and admin members, core/layout.c's."""
    c = open(os.path.join(ROOT, "core/config.c")).read()
    ints = re.search(r"int_fields\[\] = \{(.*?)\n\};", c, re.S)
    secs = re.search(r"\} sections\[\] = \{(.*?)\n\};", c, re.S)
    fields = set(re.findall(r'\{ "([a-z_]+)",', ints.group(1) if ints else ""))
    fields |= set(re.findall(r'\{ "([a-z_]+)", apply_', secs.group(1) if secs else ""))
    fields |= {"admin." + a for a in re.findall(r'a->string, "([a-z_]+)"', c)}
    lay = re.search(r"known\[\] = \{(.*?)\};", open(os.path.join(ROOT, "core/layout.c")).read(), re.S)
    fields |= set(re.findall(r'"([a-z_]+)"', lay.group(1) if lay else ""))
    return fields


def run_man(tmp):
    page = os.path.join(ROOT, "docs/sluiced.8")
    groff, man = tool("groff"), tool("man")
    if groff:
        p = subprocess.run([groff, "-man", "-Tutf8", "-ww", "-z", page], capture_output=True, text=True, timeout=60)
        check("groff -man -ww renders docs/sluiced.8 without a warning", p.returncode == 0 and not p.stderr.strip(),
              p.stderr[:1000])
    if man:
        env = dict(os.environ, MANWIDTH="80", LC_ALL="C.UTF-8", MAN_KEEP_FORMATTING="")
        p = subprocess.run([man, "--warnings", "-l", page], capture_output=True, text=True, env=env, timeout=60)
        check("man --warnings -l docs/sluiced.8: no warning, a page of text",
              p.returncode == 0 and not p.stderr.strip() and "SLUICED(8)" in p.stdout and len(p.stdout) > 5000,
              p.stderr[:1000])
    if not groff:
        return
    text = subprocess.run([groff, "-man", "-Tascii", "-P-cbu", page], capture_output=True, text=True,
                          timeout=60).stdout
    text = re.sub(r"-\n\s*", "-", text)  # a word broken at its hyphen by the line's end
    words = set(re.findall(r"[A-Za-z0-9_.\-]+", text))
    helptext = subprocess.run([RUN["sluiced"], "--help"], capture_output=True, text=True, timeout=10).stdout
    flags = sorted(set(re.findall(r"(?<![\w-])--[a-z][a-z-]*", helptext)))
    check("sluiced --help prints its flags (at least 15 long ones)", len(flags) >= 15, str(flags))
    missing = [f for f in flags if f not in words and f.rstrip(".") not in words]
    check("sluiced(8) names every long flag of --help", not missing, "missing: %s" % missing)
    fields = config_fields()
    check("the config's field names are found in the code (at least 20)", len(fields) >= 20, str(sorted(fields)))
    missing = sorted(f for f in fields | set(FIELDS_AHEAD) | set(RULE_FIELDS) if f not in words)
    check("sluiced(8) names every config field (core/config.c, core/layout.c, the rules, and those coming)",
          not missing, "missing: %s" % missing)
    for sig in ("SIGTERM", "SIGINT", "SIGHUP"):
        check("sluiced(8) describes %s" % sig, sig in words)
    for f in ("/etc/sluice/sluiced.json", "/etc/sluice/token"):
        check("sluiced(8) lists the file %s" % f, f in text)
    for route in ("/healthz", "/readyz", "/metrics", "/v1/rules", "/v1/paths", "/v1/reset", "/v1/jobs",
                  "/v1/worker", "/v1/worker/sweep", "/openapi.json"):
        check("sluiced(8) names the route %s" % route, route in text)
    check("sluiced(8) has the exit statuses 0, 1 and 2",
          re.search(r"EXIT STATUS\n(.*\n)*?\s+0\s+Stopped(.*\n)*?\s+1\s+It\s+could\s+not\s+start(.*\n)*?\s+2\s+A\s+bad",
                    text) is not None)


# ---- log_format json ------------------------------------------------------------


def run_log_json(tmp):
    s = RUN["sluiced"]
    p = subprocess.run([s, "--no-config", "--check-config", "--log-format", "yaml"], capture_output=True, text=True,
                       timeout=10)
    check("--log-format yaml: exit 2 naming the flag",
          p.returncode == 2 and p.stderr == "sluiced: --log-format: must be text or json\n", repr(p.stderr))
    conf = os.path.join(tmp, "badlog.json")
    with open(conf, "w") as f:
        f.write('{"log_format": "JSON"}')
    p = subprocess.run([s, "--config", conf], capture_output=True, text=True, timeout=10)
    check("config log_format \"JSON\": exit 2 naming the file, then log_format",
          p.returncode == 2 and p.stderr == "sluiced: %s: log_format: must be text or json\n" % conf, repr(p.stderr))

    srv, r = start_redis(tmp)
    rport = r.connection_pool.connection_kwargs["port"]
    port = free_port()
    conf = os.path.join(tmp, "json.json")
    cfg = {"redis": "redis://127.0.0.1:%d/0" % rport, "listen": "127.0.0.1:%d" % port, "log_level": "debug",
           "prune_interval_ms": 200,
           "rules": [{"name": "api", "match": "/api/*", "algorithm": "leaky_bucket", "capacity": 3, "rate": 1}]}
    with open(conf, "w") as f:
        json.dump(cfg, f)
    logp = os.path.join(tmp, "json.log")
    logf = open(logp, "w")
    d = subprocess.Popen([s, "--config", conf, "--log-format", "json"], stdout=logf, stderr=logf)
    try:
        wait_ready(port)
        http(port, "GET", "/v1/paths/%2Fapi%2F%22quoted%20%C3%A9%22%FF")
        http(port, "PUT", "/v1/rules/x", {"match": "/x", "algorithm": "nope"})
        http(port, "GET", "/metrics")
        cfg["listen"] = "127.0.0.1:%d" % free_port()  # needs a restart: reload_partial
        with open(conf, "w") as f:
            json.dump(cfg, f)
        d.send_signal(signal.SIGHUP)
        time.sleep(0.5)
        d.send_signal(signal.SIGTERM)
        rc = d.wait(10)
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
        logf.close()
        srv.terminate()
        srv.wait(10)
    raw = open(logp, "rb").read()
    lines = raw.split(b"\n")
    check("the daemon's output ends with a newline", raw.endswith(b"\n"), repr(raw[-80:]))
    bad, objs = [], []
    for line in lines[:-1]:
        try:
            o = json.loads(line.decode("utf-8"))
        except (ValueError, UnicodeDecodeError):
            bad.append(line[:200])
            continue
        ok = isinstance(o, dict) and re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", str(o.get("ts"))) \
            and o.get("level") in ("debug", "info", "warn", "error") and isinstance(o.get("event"), str) \
            and list(o)[:3] == ["ts", "level", "event"]
        (objs if ok else bad).append(o if ok else line[:200])
    check("with --log-format json every line is a JSON object starting with ts, level, event (%d lines)" % len(objs),
          rc == 0 and not bad and len(objs) >= 8, "rc %r, bad lines: %r" % (rc, bad[:3]))
    ev = [o["event"] for o in objs]
    for want in ("started", "rules_ready", "http", "reload_partial", "reloaded", "stopping", "leases_released",
                 "stopped"):
        check("... the json log has a %s event" % want, want in ev, str(sorted(set(ev))))
    started = [o for o in objs if o["event"] == "started"]
    check("... started has the members of the text line, numbers as numbers",
          started and started[0].get("listen") == "127.0.0.1:%d" % port and started[0].get("rules") == 1 and
          started[0].get("config") == conf, str(started[:1]))
    paths = [o.get("path") for o in objs if o["event"] == "http"]
    check("... an http line's quoted path comes back as sent",
          "/v1/paths/%2Fapi%2F%22quoted%20%C3%A9%22%FF" in paths, str(paths))
    partial = [o for o in objs if o["event"] == "reload_partial"]
    check("... reload_partial names what needs a restart", partial and partial[0].get("changed") == "listen" and
          partial[0].get("level") == "warn", str(partial))


# ---- Prometheus: the alert rules and the metrics --------------------------------


def run_prometheus(tmp):
    pt = tool("promtool")
    alerts = os.path.join(ROOT, "examples/alerts.yml")
    if pt:
        p = subprocess.run([pt, "check", "rules", alerts], capture_output=True, text=True, timeout=60)
        check("promtool check rules examples/alerts.yml: SUCCESS", p.returncode == 0 and "SUCCESS" in p.stdout,
              p.stdout + p.stderr)
    used = sorted(set(re.findall(r"\b(sluice_[a-z_]+)", open(alerts).read())))
    srv, r = start_redis(tmp)
    rport = r.connection_pool.connection_kwargs["port"]
    port = free_port()
    conf = os.path.join(tmp, "prom.json")
    with open(conf, "w") as f:
        json.dump({"redis": "redis://127.0.0.1:%d/0" % rport, "listen": "127.0.0.1:%d" % port,
                   "prune_interval_ms": 100, "drain_interval_ms": 50,
                   "rules": [{"name": "api", "match": "/api/*", "algorithm": "leaky_bucket", "capacity": 3,
                              "rate": 1},
                             {"name": "login", "match": "/login", "algorithm": "sliding_log", "limit": 2,
                              "window_ms": 60000, "mode": "shadow"}]}, f)
    logf = open(os.path.join(tmp, "prom.log"), "w")
    d = subprocess.Popen([RUN["sluiced"], "--config", conf], stdout=logf, stderr=logf)
    try:
        wait_ready(port)
        wait_copies(r)  # the scripts read the rules from their shard's copy
        # decisions (allowed and denied) so that the labelled series exist, and an admin 404 and 400
        lb = open(os.path.join(RUN["lua"], "leaky_bucket.lua")).read()
        sl = open(os.path.join(RUN["lua"], "sliding_log.lua")).read()
        for _ in range(5):
            r.eval(lb, 5, *client_keys("leaky_bucket", b"/api/users"), b"/api/users", b"", b"", b"api")
            r.eval(sl, 5, *client_keys("sliding_log", b"/login"), b"/login", b"", b"", b"login")
        http(port, "GET", "/v1/rules/none")
        http(port, "PUT", "/v1/rules/bad", {"match": "/b"})
        body = b""
        for _ in range(100):  # the decision counters are summed every 5 s
            st, body = http(port, "GET", "/metrics")
            if b'sluice_decisions_total{rule="api",decision="denied"}' in body:
                break
            time.sleep(0.1)
        check("/metrics has the decision counters (a rule's allowed and denied)",
              b'sluice_decisions_total{rule="api",decision="denied"}' in body, body[-300:].decode(errors="replace"))
        served = set(re.findall(r"^# HELP (\S+) ", body.decode(), re.M))
        # a histogram's series are <name>_bucket, _sum and _count of the <name> its HELP line names
        missing = [m for m in used if m not in served and re.sub(r"_(bucket|sum|count)$", "", m) not in served]
        check("every sluice_* metric examples/alerts.yml uses is served (%d)" % len(used), used and not missing,
              "not served: %s" % missing)
        if pt:
            p = subprocess.run([pt, "check", "metrics"], input=body, capture_output=True, timeout=60)
            out = (p.stdout + p.stderr).decode(errors="replace")
            check("promtool check metrics on a real daemon's /metrics: exit 0, no lint problem",
                  p.returncode == 0 and not out.strip(), out[:2000])
        d.send_signal(signal.SIGTERM)
        check("the daemon exits 0", d.wait(10) == 0)
    finally:
        if d.poll() is None:
            d.kill()
            d.wait()
        logf.close()
        srv.terminate()
        srv.wait(10)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: ops_e2e.py SLUICED LUA_DIR")
    RUN["sluiced"], RUN["lua"] = os.path.abspath(sys.argv[1]), sys.argv[2]
    tmp = tempfile.mkdtemp(prefix="sluice-ops-")
    try:
        for part in (run_install, run_default_config, run_man, run_log_json, run_prometheus):
            try:
                part(tmp)
            except Exception as e:  # one part's crash is a failure, the others still run
                check("%s ran to its end" % part.__name__, False, repr(e))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    print("ops_e2e: %d passed, %d failed" % (conformance.PASSED, conformance.FAILED))
    sys.exit(1 if conformance.FAILED else 0)


if __name__ == "__main__":
    main()
