#!/usr/bin/python3
"""Fill N leaky buckets through sluice's client script (key layout 2, explicit parameters), for the benches.

    /usr/bin/python3 bench/fill_buckets.py <redis port> <lua dir> <n> <capacity> <rate> <cost> <prefix>

Path i is <prefix><i>; each bucket gets one call of cost <cost> at Redis time. Prints "filled N in S s"
and exits non-zero when a call is refused or fails.
"""
import binascii
import os
import sys
import time

import redis


def shard(path):
    s = path.find(b"{")
    if s >= 0:
        e = path.find(b"}", s + 1)
        if e > s + 1:
            path = path[s + 1:e]
    return (binascii.crc_hqx(path, 0) % 16384) % 1024


def main():
    port, lua, n, cap, rate, cost, prefix = sys.argv[1:8]
    r = redis.Redis(port=int(port))
    with open(os.path.join(lua, "leaky_bucket.lua"), "rb") as f:
        sha = r.script_load(f.read())
    t0 = time.monotonic()
    n = int(n)
    for base in range(0, n, 5000):
        p = r.pipeline(transaction=False)
        for i in range(base, min(n, base + 5000)):
            path = (prefix + str(i)).encode()
            tag = b"sluice:{%d}" % shard(path)
            p.evalsha(sha, 5, tag + b":leaky_bucket:" + path, tag + b":leaky_bucket_meta:" + path,
                      tag + b":registry:leaky_bucket", tag + b":rules", tag + b":stats", path, cost, "", "", cap, rate)
        for rep in p.execute():
            if rep[0] != 1:
                print("not admitted: %r" % (rep,), file=sys.stderr)
                return 1
    print("filled %d in %.1f s" % (n, time.monotonic() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
