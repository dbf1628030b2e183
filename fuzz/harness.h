#ifndef SLUICE_FUZZ_HARNESS_H
#define SLUICE_FUZZ_HARNESS_H
/*
 * What the fuzz targets share (README.md, "Fuzzing"): libFuzzer's entry point, the
 * private redis-server that fuzz/run.sh starts (its port in
 * SLUICE_FUZZ_REDIS_PORT), and the assembled Lua probes of build/lua-fuzz/.
 * A fuzz target is a program of its own: what it keeps between inputs (one
 * Redis connection, a script's SHA) is its process's, like main's.
 */
#include <stddef.h>
#include <stdint.h>

#include <hiredis/hiredis.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/*
 * The port of the private redis-server (SLUICE_FUZZ_REDIS_PORT), or 0 when
 * it is not set.
 */
int fuzz_redis_port(void);
/*
 * The connection to it, made at the first call (1 s timeouts) and kept;
 * borrowed.  Aborts, saying why, when SLUICE_FUZZ_REDIS_PORT is not set or
 * Redis does not answer: a target that needs Redis cannot test anything
 * without it.
 */
redisContext *fuzz_redis(void);
/*
 * SCRIPT LOAD of the file `path` (an assembled probe, build/lua-fuzz/...) on
 * fuzz_redis(), once: the SHA1 (static storage) for EVALSHA.  Aborts when
 * the file cannot be read or Redis refuses the script.
 */
const char *fuzz_script(const char *path);
/* Print `n` bytes of `s` to stderr as a C string literal (octal escapes outside printable ASCII). */
void fuzz_show(const char *label, const char *s, size_t n);

#endif
