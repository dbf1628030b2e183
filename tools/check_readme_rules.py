#!/usr/bin/python3
"""The README's rule examples must not break the demo they sit in (issue 9).

Every shell command in a fenced code block of README.md and lua/README.md
that writes a rule (curl -X PUT or -X DELETE of /v1/rules/<name>) must name
a rule that no example config (examples/*.json) holds: else following the
README silently replaces or deletes that config's rule.  Prints one line per
such command and "readme: N passed, M failed" last; exit 1 when one failed.
Run from the repository root (or give it as the first argument).
"""
import glob
import json
import os
import re
import sys

root = sys.argv[1] if len(sys.argv) > 1 else "."
os.chdir(root)

config_rules = {}
for path in sorted(glob.glob("examples/*.json")):
    with open(path, encoding="utf-8") as f:
        for rule in json.load(f).get("rules", []):
            config_rules.setdefault(rule.get("name"), path)


def commands(md):
    """The shell commands of md's fenced blocks, continuation lines joined."""
    fenced, cmd = False, ""
    for line in md.splitlines():
        if line.lstrip().startswith("```"):
            fenced, cmd = not fenced, ""
            continue
        if not fenced:
            continue
        cmd += line
        if line.endswith("\\"):
            cmd = cmd[:-1] + " "
            continue
        yield cmd
        cmd = ""


passed = failed = 0
for doc in ("README.md", "lua/README.md"):
    if not os.path.exists(doc):
        continue
    with open(doc, encoding="utf-8") as f:
        text = f.read()
    for cmd in commands(text):
        if not re.search(r"-X\s*(PUT|DELETE)\b", cmd):
            continue
        for name in re.findall(r"/v1/rules/([A-Za-z0-9_.-]+)", cmd):
            if name in config_rules:
                print(f"readme: {doc}: writes rule \"{name}\", which {config_rules[name]} holds: FAILED\n  {cmd.strip()}")
                failed += 1
            else:
                print(f"readme: {doc}: writes rule \"{name}\" (no example config holds it): ok")
                passed += 1
print(f"readme: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
