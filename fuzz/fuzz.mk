# make fuzz: the libFuzzer targets of fuzz/ (README.md, "Fuzzing"), included by the Makefile.
#
#   make fuzz                       build every target, run each FUZZ_SECONDS (default 60)
#   make fuzz FUZZ_TARGETS=fuzz_rules FUZZ_SECONDS=10
#   make fuzz-build                 build them only (build/fuzz/fuzz/<target>)
#
# The targets link the library built in the fuzz flavour (clang,
# -fsanitize=fuzzer-no-link,address,undefined, in build/fuzz); fuzz/run.sh
# starts the private redis-server the Redis-backed targets talk to, runs each
# target on a scratch copy of its seed corpus and fails naming the reproducer.
FUZZ_ALL     := $(patsubst fuzz/%.c,%,$(sort $(wildcard fuzz/fuzz_*.c)))
FUZZ_TARGETS ?= $(FUZZ_ALL)
FUZZ_SECONDS ?= 60
FUZZ_LUA     := $(patsubst fuzz/lua/%,build/lua-fuzz/%,$(sort $(wildcard fuzz/lua/*.lua)))

.PHONY: fuzz fuzz-build fuzz-run

fuzz:
	@FUZZ=1 tools/deps.sh
	@$(MAKE) --no-print-directory FLAVOUR=fuzz fuzz-build
	@$(MAKE) --no-print-directory FLAVOUR=fuzz fuzz-run

fuzz-run:
	FUZZ_SECONDS=$(FUZZ_SECONDS) fuzz/run.sh build/fuzz/fuzz $(FUZZ_TARGETS)

ifeq ($(FLAVOUR),fuzz)
fuzz-build: $(FUZZ_ALL:%=$(B)/fuzz/%) $(FUZZ_LUA)

$(B)/fuzz/%.o: fuzz/%.c | check-deps
	@mkdir -p $(dir $@)
	$(CC) $(CPPFLAGS) $(CFLAGS) $(PKG_CFLAGS) -c $< -o $@

$(B)/fuzz/fuzz_%: $(B)/fuzz/fuzz_%.o $(B)/fuzz/harness.o $(B)/libsluice.a
	$(CC) $(CFLAGS) -fsanitize=fuzzer $^ $(LDFLAGS) $(LDLIBS) -o $@
else
fuzz-build:
	@$(MAKE) --no-print-directory FLAVOUR=fuzz fuzz-build
endif

# the Lua side of fuzz_lua_shard and fuzz_lua_glob, assembled as build/lua-test/ is
build/lua-fuzz/%.lua: fuzz/lua/%.lua $(LUA_LIB) build/lua-assemble
	@mkdir -p $(dir $@)
	build/lua-assemble $< lua > $@.$$$$.tmp || { rm -f $@.$$$$.tmp; exit 1; }; mv -f $@.$$$$.tmp $@
