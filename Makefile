# sluice — GNU make build.
#
#   make            build ./sluiced (objects in build/normal)
#   make test       unit, integration and end-to-end suites (real redis-server)
#   make asan       the same suites built with ASan + UBSan (objects in build/asan)
#   make run        private redis-server + example config + sluiced in the foreground
#                   (CLUSTER=1: a private Redis Cluster of 3 primaries instead)
#   make bench      due-driven ticks, sweep, prune, client scripts, daemon idle/RSS, HTTP and Lua shard benchmarks (figures, not pass/fail; BENCHMARKS.md)
#   make soak       SOAK_MINUTES=10: sluiced and a private redis-server under constant load over
#                   100,000 paths, with rule changes, resets and a Redis restart; fails on RSS or
#                   fd growth or any drift from the exact counts (tests/soak.py; not in make test)
#   make lua        assemble the Lua scripts into build/lua/ (lua/README.md)
#   make install    PREFIX=/usr/local DESTDIR= SYSCONFDIR=/etc : binary, Lua scripts, examples,
#                   systemd unit, man page, $(SYSCONFDIR)/sluice/sluiced.json (kept when present)
#   make deps       install the Debian packages, or name the command to run
#   make fuzz       libFuzzer targets of fuzz/ (clang, ASan + UBSan; objects in build/fuzz),
#                   each run FUZZ_SECONDS (default 60) from fuzz/corpus/<target>/ (README.md, "Fuzzing")

PREFIX  ?= /usr/local
DESTDIR ?=
# The default config file, $(SYSCONFDIR)/sluice/sluiced.json, is compiled
# into sluiced (daemon/options.c, through $(B)/gen/paths.h).
SYSCONFDIR ?= /etc
BINDIR  ?= $(PREFIX)/bin
MANDIR  ?= $(PREFIX)/share/man
SYSTEMDUNITDIR ?= $(PREFIX)/lib/systemd/system
FLAVOUR ?= normal
VERSION := 0.1.0

CC      ?= cc
SHELL   := /bin/bash
PKGS    := hiredis libmicrohttpd libcjson
TESTPKGS:= check libcurl
OPT     ?= -O2 -g

FLAVOURS := normal asan fuzz
ifneq ($(words $(FLAVOUR)) $(filter $(FLAVOURS),$(FLAVOUR)),1 $(FLAVOUR))
$(error FLAVOUR="$(FLAVOUR)" is unknown; the flavours are: $(FLAVOURS))
endif
ifeq ($(FLAVOUR),asan)
SANFLAGS := -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT      := -O1 -g
endif
# The fuzz flavour (make fuzz): the library built with clang for libFuzzer's
# coverage, ASan and UBSan; the targets link -fsanitize=fuzzer (fuzz/fuzz.mk).
ifeq ($(FLAVOUR),fuzz)
CC       := clang
SANFLAGS := -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=undefined
OPT      := -O1 -g
endif

B        := build/$(FLAVOUR)
CPPFLAGS += -I. -D_GNU_SOURCE -DSLUICE_VERSION='"$(VERSION)"'
CFLAGS   += -std=c11 -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes \
            $(OPT) $(SANFLAGS) -MMD -MP
# Quiet here (these run once per compile); check-deps shows pkg-config's own message.
PKG_CFLAGS = $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
PKG_LIBS   = $(shell pkg-config --libs $(PKGS) 2>/dev/null)
TEST_CFLAGS = $(shell pkg-config --cflags $(TESTPKGS) 2>/dev/null)
TEST_LIBS   = $(shell pkg-config --libs $(TESTPKGS) 2>/dev/null)
LDLIBS     = $(PKG_LIBS) -lpthread -lm

# Lua: each script source lua/<name>.lua and the fragments it names in lua/lib/
# are assembled into one self-contained build/lua/<name>.lua, which is what is
# embedded, tested and installed.
LUA_SRC  := $(sort $(wildcard lua/*.lua))
LUA_LIB  := $(sort $(wildcard lua/lib/*.lua))
LUA      := $(LUA_SRC:lua/%=build/lua/%)
# Test-only scripts (tests/lua/<name>.lua) of the same fragments, assembled
# into build/lua-test/ (neither embedded nor installed): the suites read them.
LUA_TEST := $(patsubst tests/lua/%,build/lua-test/%,$(sort $(wildcard tests/lua/*.lua)))
LIB_SRC  := $(sort $(wildcard core/*.c core/alg/*.c scheduler/*.c worker/*.c admin/*.c))
LIB_OBJ  := $(LIB_SRC:%.c=$(B)/%.o) $(B)/gen/scripts_gen.o $(B)/gen/slottag_gen.o $(B)/gen/openapi_gen.o \
            $(B)/gen/page_gen.o
TEST_SRC := $(sort $(wildcard tests/check_*.c))
TEST_BIN := $(TEST_SRC:tests/%.c=$(B)/tests/%)
# Every tests/*.c that is not a suite is a module of the suites (the harness,
# the fixtures): compiled once per flavour into an archive, so that a suite
# links only the modules it uses (and no fixture's code runs in a suite that
# does not use it).
TEST_LIB_OBJ := $(patsubst tests/%.c,$(B)/tests/%.o,$(filter-out $(TEST_SRC),$(sort $(wildcard tests/*.c))))

.PHONY: all test asan run bench soak install uninstall clean deps check-deps check-run lua check-lua
# keep every object (the test objects are intermediates of a pattern chain)
.SECONDARY:
.DEFAULT_GOAL := all

all: $(B)/bin/sluiced
ifeq ($(FLAVOUR),normal)
# ./sluiced is the normal build, so the README's commands work from the root.
all: sluiced
sluiced: $(B)/bin/sluiced
	cp $< $@.tmp && mv -f $@.tmp $@  # a new inode: a running ./sluiced keeps its old one
endif

$(B)/%.o: %.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

# Lua scripts are assembled from their fragments, then embedded as byte arrays,
# by tools built for the host.
build/lua-assemble: tools/lua_assemble.c
	@mkdir -p build
	$(CC) -std=c11 -Wall -Wextra -O1 $< -o $@

# Every script depends on every fragment: 16 small files, rebuilt in a blink.
build/lua/%.lua: lua/%.lua $(LUA_LIB) build/lua-assemble
	@mkdir -p $(dir $@)
	build/lua-assemble $< > $@.$$$$.tmp || { rm -f $@.$$$$.tmp; exit 1; }; mv -f $@.$$$$.tmp $@

lua: $(LUA)

build/lua-test/%.lua: tests/lua/%.lua $(LUA_LIB) build/lua-assemble
	@mkdir -p $(dir $@)
	build/lua-assemble $< lua > $@.$$$$.tmp || { rm -f $@.$$$$.tmp; exit 1; }; mv -f $@.$$$$.tmp $@

# The assembler's errors (missing fragment, cycle, bad directive) on scratch trees.
check-lua: build/lua-assemble
	@tools/lua_assemble_test.sh build/lua-assemble

build/embed-lua: tools/embed_lua.c
	@mkdir -p build
	$(CC) -std=c11 -Wall -Wextra -O1 $< -o $@

$(B)/gen/scripts_gen.c: build/embed-lua $(LUA)
	@mkdir -p $(dir $@)
	build/embed-lua $(LUA) > $@.tmp && mv $@.tmp $@

$(B)/gen/scripts_gen.o: $(B)/gen/scripts_gen.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# docs/openapi.json, served by GET /openapi.json (admin/routes_docs.c)
build/embed-file: tools/embed_file.c
	@mkdir -p build
	$(CC) -std=c11 -Wall -Wextra -O1 $< -o $@

$(B)/gen/openapi_gen.c: build/embed-file docs/openapi.json
	@mkdir -p $(dir $@)
	build/embed-file admin_openapi_json docs/openapi.json > $@.tmp && mv $@.tmp $@

$(B)/gen/openapi_gen.o: $(B)/gen/openapi_gen.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-variable-declarations -c $< -o $@

# the operator page, one self-contained HTML file, served by GET / (admin/routes_docs.c)
$(B)/gen/page_gen.c: build/embed-file admin/page/index.html
	@mkdir -p $(dir $@)
	build/embed-file admin_page_html admin/page/index.html > $@.tmp && mv $@.tmp $@

$(B)/gen/page_gen.o: $(B)/gen/page_gen.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -Wno-missing-variable-declarations -c $< -o $@

# The slot tag table (core/slottag.h), computed once at build time by the
# search in core/slottag.c.
build/slottag-gen: tools/slottag_gen.c core/slottag.c core/slottag.h core/shard.c core/shard.h
	@mkdir -p build
	$(CC) -std=c11 -Wall -Wextra -O1 -I. tools/slottag_gen.c core/slottag.c core/shard.c -o $@.$$$$.tmp && \
	  mv -f $@.$$$$.tmp $@

$(B)/gen/slottag_gen.c: build/slottag-gen
	@mkdir -p $(dir $@)
	build/slottag-gen > $@.tmp && mv $@.tmp $@

$(B)/gen/slottag_gen.o: $(B)/gen/slottag_gen.c
	$(CC) $(CPPFLAGS) $(CFLAGS) -c $< -o $@

# The compiled-in default config path: rewritten only when SYSCONFDIR changes
# (so `make install SYSCONFDIR=...` rebuilds options.o, and nothing else does).
.PHONY: FORCE
$(B)/gen/paths.h: FORCE
	@mkdir -p $(dir $@)
	@printf '#define SLUICE_DEFAULT_CONFIG "%s/sluice/sluiced.json"\n' '$(SYSCONFDIR)' > $@.tmp; \
	  if cmp -s $@.tmp $@; then rm -f $@.tmp; else mv -f $@.tmp $@; fi

$(B)/daemon/options.o: $(B)/gen/paths.h
$(B)/daemon/options.o: CPPFLAGS += -I$(B)

$(B)/libsluice.a: $(LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

DAEMON_OBJ := $(patsubst %.c,$(B)/%.o,$(sort $(wildcard daemon/*.c)))
$(B)/bin/sluiced: $(DAEMON_OBJ) $(B)/libsluice.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) $^ $(LDFLAGS) $(LDLIBS) -o $@

# --- tests -----------------------------------------------------------------
$(B)/tests/%.o: tests/%.c | check-test-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) $(TEST_CFLAGS) -c $< -o $@

$(B)/tests/libfixture.a: $(TEST_LIB_OBJ)
	@rm -f $@
	ar rcs $@ $^

$(B)/tests/check_%: $(B)/tests/check_%.o $(B)/tests/libfixture.a $(B)/daemon/options.o $(B)/libsluice.a
	$(CC) $(CFLAGS) $^ $(LDFLAGS) $(TEST_LIBS) $(LDLIBS) -o $@

# The suite that runs tests/lua/glob_probe.lua reads it at run time.
$(B)/tests/check_glob_lua: | build/lua-test/glob_probe.lua

test:
	@TEST=1 tools/deps.sh
	@$(MAKE) --no-print-directory check-run

# Forbidden includes between modules, one line per rule (check-run runs it first).
.PHONY: check-includes
check-includes:
	@tools/check_includes.sh

# Runs the include rules and the README's rule examples check
# (tools/check_readme_rules.py), then every suite even when one fails (the
# admin suites, ADMIN_SUITES below, a second time on a cluster), then
# prints one closing line for all (the first two count in it) and, when one
# failed, every failing check's line again.
#
# The Python suites, each ending with "<name>: N passed, M failed" (counted in the
# closing line): conformance (DESIGN.md from outside), rules_e2e (rules obeyed,
# through redis-py and the admin API), seeds004_e2e (article 004's sliding and fixed
# windows and Redisson's RRateLimiter as their clients write them, kept by sluiced and
# its batch job: a long random trace with the job and without), cluster_clients (the client scripts on a real
# Redis Cluster; takes only the Lua folder), cluster_e2e (sluiced on a real cluster:
# drain, resharding, failover, a hung node, admin), daemons_e2e (several sluiced
# sharing the shards by leases, on one Redis and a cluster), admin_e2e (the admin
# server under load), ops_e2e (make install, the systemd unit, sluiced(8), the
# default config file, log_format json, promtool), page_e2e (the operator page in
# headless Chromium; screenshots in $(B)/page.png and $(B)/page-auth.png), faults_e2e
# (Redis killed with and without AOF, stopped, emptied, at maxmemory, slow: exact state
# afterwards, /readyz's reasons, and the worker back within 1 s of Redis), seeds004_e2e
# (article 004's sliding and fixed windows and Redisson's RRateLimiter, maintained),
# hostile_e2e (paths of braces, NUL, CR/LF, invalid UTF-8, '%', globs and 10 kB through
# the five client scripts, the worker and every path route, and seeds.json's foreign
# layouts, on a one-node cluster: only their keys, in their slot).
# The admin API's suites run a second time on a private Redis Cluster of 3
# primaries (SLUICE_TEST_REDIS=cluster: tests/harness_mode.h), their failure
# lines marked "[cluster]"; both runs count in the closing line.
ADMIN_SUITES := api rules_api paths_api reset_api worker_api metrics http openapi_probes
PY_SUITES := conformance rules_e2e seeds004_e2e cluster_clients cluster_e2e daemons_e2e admin_e2e ops_e2e page_e2e faults_e2e hostile_e2e
empty :=
space := $(empty) $(empty)

check-run: all $(TEST_BIN) check-lua $(LUA) $(LUA_TEST)
	@fail=0; log=$$(mktemp); \
	tools/check_includes.sh | tee -a $$log; [ $${PIPESTATUS[0]} -eq 0 ] || fail=1; \
	/usr/bin/python3 tools/check_readme_rules.py | tee -a $$log; [ $${PIPESTATUS[0]} -eq 0 ] || fail=1; \
	for t in $(TEST_BIN); do \
	  echo "== $$t"; SLUICED=$(B)/bin/sluiced $$t 2>&1 | tee -a $$log; \
	  [ $${PIPESTATUS[0]} -eq 0 ] || fail=1; \
	done; \
	for t in $(ADMIN_SUITES:%=$(B)/tests/check_%); do \
	  echo "== $$t (cluster)"; SLUICE_TEST_REDIS=cluster SLUICED=$(B)/bin/sluiced $$t 2>&1 | \
	    sed -u -E 's/^([^ ]+:[0-9]+:[FES]:)/[cluster] \1/' | tee -a $$log; \
	  [ $${PIPESTATUS[0]} -eq 0 ] || fail=1; \
	done; \
	for s in $(PY_SUITES); do \
	  args="$(B)/bin/sluiced build/lua"; [ $$s != cluster_clients ] || args=build/lua; \
	  echo "== tests/$$s.py"; SLUICE_FLAVOUR=$(FLAVOUR) /usr/bin/python3 tests/$$s.py $$args 2>&1 | tee -a $$log; \
	  [ $${PIPESTATUS[0]} -eq 0 ] || fail=1; \
	done; \
	awk -F'[:,] *' '/^[0-9]+%: Checks: /{ n += $$3; f += $$5 + $$7 } \
	  /^(includes|readme|$(subst $(space),|,$(PY_SUITES))): [0-9]+ passed, [0-9]+ failed$$/{ n += $$2 + $$3; f += $$3 } \
	  END { printf "tests ($(FLAVOUR)): %d passed, %d failed\n", n - f, f }' $$log; \
	if [ $$fail -ne 0 ]; then echo "failures ($(FLAVOUR)), again here so the end of the output names them:"; \
	  grep -E '^FAIL |:[FES]:|: FAILED$$' $$log | cut -c1-400; fi; \
	rm -f $$log; exit $$fail

asan:
	@TEST=1 tools/deps.sh
	@$(MAKE) --no-print-directory FLAVOUR=asan check-run

# --- running ---------------------------------------------------------------
run: deps
	@$(MAKE) --no-print-directory all
	SLUICED=$(B)/bin/sluiced $(if $(CLUSTER),CLUSTER='$(CLUSTER)' )tools/run.sh

bench:
	@BENCH=1 tools/deps.sh
	@$(MAKE) --no-print-directory $(B)/bin/sluiced $(B)/bench/drain_bench $(B)/bench/copies_bench
	SLUICED=$(B)/bin/sluiced DRAIN_BENCH=$(B)/bench/drain_bench COPIES_BENCH=$(B)/bench/copies_bench bench/bench.sh
	SLUICED=$(B)/bin/sluiced bench/http.sh
	bench/shard_lua.sh
	@$(MAKE) --no-print-directory lua
	/usr/bin/python3 bench/rule_ref.py

# The soak (tests/soak.py): the normal build's sluiced, for SOAK_MINUTES (default 10).
SOAK_MINUTES ?= 10
soak:
	@$(MAKE) --no-print-directory FLAVOUR=normal build/normal/bin/sluiced lua
	SOAK_MINUTES=$(SOAK_MINUTES) /usr/bin/python3 tests/soak.py build/normal/bin/sluiced build/lua

$(B)/bench/%.o: bench/%.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

# --wrap: drain_bench counts the Redis layer's round trips (rbatch_run) of the
# worker it drives (bench/drain_bench.c, mode cluster); sluiced is not wrapped.
$(B)/bench/drain_bench: $(B)/bench/drain_bench.o $(B)/libsluice.a
	$(CC) $(CFLAGS) $^ $(LDFLAGS) -Wl,--wrap=rbatch_run $(LDLIBS) -o $@

$(B)/bench/copies_bench: $(B)/bench/copies_bench.o $(B)/libsluice.a
	$(CC) $(CFLAGS) $^ $(LDFLAGS) $(LDLIBS) -o $@

# Before any compile (order-only, so nothing rebuilds for it), in a recipe and
# not when the Makefile is read, so `make deps`, `make test` and `make run` can
# install the packages first: pkg-config names what is missing.
.PHONY: check-deps check-test-deps
check-deps:
	@pkg-config --print-errors --exists $(PKGS) || \
	  { echo "Makefile: missing packages (above); 'make deps' installs them" >&2; exit 1; }

check-test-deps: check-deps
	@pkg-config --print-errors --exists $(TESTPKGS) || \
	  { echo "Makefile: missing packages (above); 'make deps' installs them" >&2; exit 1; }

deps:
	@tools/deps.sh

# $(SYSCONFDIR)/sluice/sluiced.json is the operator's: installed only when
# absent (the shipped one is also in $(PREFIX)/share/doc/sluice/), never
# overwritten, and left by uninstall, as is the token beside it.
ETC_SLUICE = $(DESTDIR)$(SYSCONFDIR)/sluice
install: $(B)/bin/sluiced $(LUA)
	install -d $(DESTDIR)$(BINDIR) $(DESTDIR)$(PREFIX)/share/sluice/lua \
	           $(DESTDIR)$(PREFIX)/share/doc/sluice/examples $(DESTDIR)$(SYSTEMDUNITDIR) \
	           $(DESTDIR)$(MANDIR)/man8 $(ETC_SLUICE)
	install -m 0755 $(B)/bin/sluiced $(DESTDIR)$(BINDIR)/sluiced
	install -m 0644 $(LUA) lua/README.md $(DESTDIR)$(PREFIX)/share/sluice/lua/
	install -m 0644 examples/*.json examples/alerts.yml $(DESTDIR)$(PREFIX)/share/doc/sluice/examples/
	install -m 0644 docs/openapi.json packaging/sluiced.json $(DESTDIR)$(PREFIX)/share/doc/sluice/
	sed -e 's|@BINDIR@|$(BINDIR)|g' -e 's|@SYSCONFDIR@|$(SYSCONFDIR)|g' packaging/sluiced.service.in \
	  > $(DESTDIR)$(SYSTEMDUNITDIR)/sluiced.service.tmp && \
	  chmod 0644 $(DESTDIR)$(SYSTEMDUNITDIR)/sluiced.service.tmp && \
	  mv -f $(DESTDIR)$(SYSTEMDUNITDIR)/sluiced.service.tmp $(DESTDIR)$(SYSTEMDUNITDIR)/sluiced.service
	sed -e 's|/etc/sluice/|$(SYSCONFDIR)/sluice/|g' -e 's|/usr/local/lib/systemd/system/|$(SYSTEMDUNITDIR)/|g' \
	    -e 's|/usr/local/|$(PREFIX)/|g' docs/sluiced.8 > $(DESTDIR)$(MANDIR)/man8/sluiced.8.tmp && \
	  chmod 0644 $(DESTDIR)$(MANDIR)/man8/sluiced.8.tmp && \
	  mv -f $(DESTDIR)$(MANDIR)/man8/sluiced.8.tmp $(DESTDIR)$(MANDIR)/man8/sluiced.8
	@if [ -e $(ETC_SLUICE)/sluiced.json ]; then \
	  echo "install: kept $(ETC_SLUICE)/sluiced.json (the shipped one: $(PREFIX)/share/doc/sluice/sluiced.json)"; \
	else \
	  echo "install -m 0644 packaging/sluiced.json $(ETC_SLUICE)/sluiced.json"; \
	  install -m 0644 packaging/sluiced.json $(ETC_SLUICE)/sluiced.json; \
	fi

uninstall:
	rm -f $(DESTDIR)$(BINDIR)/sluiced $(DESTDIR)$(SYSTEMDUNITDIR)/sluiced.service $(DESTDIR)$(MANDIR)/man8/sluiced.8
	rm -rf $(DESTDIR)$(PREFIX)/share/sluice $(DESTDIR)$(PREFIX)/share/doc/sluice
	@echo "uninstall: left $(ETC_SLUICE) (your config and token)"

clean:
	rm -rf build sluiced

include fuzz/fuzz.mk

-include $(shell find build -name '*.d' 2>/dev/null)
