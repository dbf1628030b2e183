#!/bin/sh
# Check that the build, test and run dependencies are present; install the
# Debian packages when running as root, otherwise print the exact command.
# Used by `make test`, `make run`, `make bench` (with BENCH=1: wrk and nginx too),
# `make fuzz` (with FUZZ=1: clang and its libFuzzer runtime)
# and .ci/run; `make test` and `make asan` pass TEST=1 for the tools that only
# tests/ops_e2e.py needs (systemd-analyze, strace, man, groff, promtool, unshare).
set -u
pkgs=""
need() { pkg-config --exists "$1" 2>/dev/null || pkgs="$pkgs $2"; }
command -v pkg-config >/dev/null 2>&1 || pkgs="$pkgs pkg-config"
command -v cc >/dev/null 2>&1 || pkgs="$pkgs gcc"
command -v make >/dev/null 2>&1 || pkgs="$pkgs make"
need hiredis libhiredis-dev
need libmicrohttpd libmicrohttpd-dev
need libcjson libcjson-dev
need check check
need libcurl libcurl4-openssl-dev
command -v redis-server >/dev/null 2>&1 || pkgs="$pkgs redis-server"
command -v redis-cli >/dev/null 2>&1 || pkgs="$pkgs redis-tools"
command -v curl >/dev/null 2>&1 || pkgs="$pkgs curl"
# redis-py for Debian's python3, the application client library of the tests
# (tests/check_shard.c runs lua/README.md's Python shard function with it)
/usr/bin/python3 -c 'import redis.crc' >/dev/null 2>&1 || pkgs="$pkgs python3-redis"
# only for `make bench` (BENCH=1): the load generator and the baseline of bench/http.sh
if [ "${BENCH:-}" = 1 ]; then
	command -v wrk >/dev/null 2>&1 || pkgs="$pkgs wrk"
	command -v nginx >/dev/null 2>&1 || [ -x /usr/sbin/nginx ] || pkgs="$pkgs nginx"
fi
# only for `make fuzz` (FUZZ=1): clang and libFuzzer's runtime (README.md, "Fuzzing")
if [ "${FUZZ:-}" = 1 ]; then
	command -v clang >/dev/null 2>&1 || pkgs="$pkgs clang"
	# libFuzzer's runtime, in clang's resource dir (Debian: libclang-rt-14-dev, through libclang-rt-dev)
	[ -f "$(clang --print-resource-dir 2>/dev/null)/lib/linux/libclang_rt.fuzzer-$(uname -m).a" ] ||
		pkgs="$pkgs libclang-rt-dev"
fi
# only for the tests (TEST=1): the unit, the man page and the Prometheus files
# are checked with the tools operators use; the page in a browser; TLS.  prometheus is 22.5 MB to fetch,
# 98 MB installed (promtool and the server), some 11 s to install.
if [ "${TEST:-}" = 1 ]; then
	command -v systemd-analyze >/dev/null 2>&1 || pkgs="$pkgs systemd"
	command -v strace >/dev/null 2>&1 || pkgs="$pkgs strace"
	command -v man >/dev/null 2>&1 || pkgs="$pkgs man-db"
	command -v groff >/dev/null 2>&1 || pkgs="$pkgs groff-base"
	command -v promtool >/dev/null 2>&1 || pkgs="$pkgs prometheus"
	command -v unshare >/dev/null 2>&1 || pkgs="$pkgs util-linux"
	# headless Chromium, the browser of tests/page_e2e.py (the operator page, GET /)
	[ -x /usr/bin/chromium ] || pkgs="$pkgs chromium"
	# the self-signed certificates of tests/admin_e2e.py's TLS phase
	command -v openssl >/dev/null 2>&1 || pkgs="$pkgs openssl"
fi
[ -z "$pkgs" ] && exit 0

if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
	echo "deps: installing:$pkgs" >&2
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends $pkgs >/dev/null || {
		echo "deps: apt-get install failed; run: apt-get install -y$pkgs" >&2
		exit 1
	}
	# the tests want promtool only: the server the package starts under a running systemd is stopped
	case " $pkgs " in
	*" prometheus "*)
		if [ -d /run/systemd/system ] && systemctl is-enabled --quiet prometheus.service 2>/dev/null; then
			systemctl disable --now prometheus.service >/dev/null 2>&1 &&
				echo "deps: stopped and disabled prometheus.service (the tests use only promtool)" >&2
		fi
		;;
	esac
	exit 0
fi
echo "deps: missing packages. Run, as root:" >&2
echo "  apt-get update && apt-get install -y$pkgs" >&2
exit 1
