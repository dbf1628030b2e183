#ifndef SLUICE_TEST_COPIES_FIXTURE_H
#define SLUICE_TEST_COPIES_FIXTURE_H
/*
 * The fixture of the rule copies' suites (worker/copies.c against a real
 * redis-server: check_copies.c, check_copies_drift.c): every shard's
 * <prefix>{k}:rules holds exactly the store's rules (field <name> = the
 * store's text, the canonical JSON of rule_to_text) and ":version" =
 * "<epoch>:<version>", as the client scripts that are called by rule name
 * read them (lua/README.md, the Keys table).
 *
 * The checks compare all 1024 copies with the store itself (HGETALL of
 * <prefix>rules and MGET of its version and epoch), so the expectation is
 * what Redis holds, not what the worker thinks it wrote; writes are counted
 * by Redis (INFO commandstats) and by the status.
 *
 * copies_suite_up/copies_suite_down are the tcase's unchecked fixture (the
 * harness's redis-server, the objects below), copies_flush its checked one.
 */
#include <hiredis/hiredis.h>

#include "core/layout.h"
#include "core/rconn.h"
#include "core/redis_target.h"
#include "worker/worker.h"

extern redisContext *C;     /* the test's own connection */
extern struct redis_target T;
extern struct layout *L;    /* sluice's default layouts, NL of them */
extern size_t NL;
extern struct rconn *RC;    /* for the rule store's calls */

void copies_suite_up(void);
void copies_suite_down(void);
/* FLUSHALL: every test starts on an empty server. */
void copies_flush(void);

/* A worker that keeps the rules copies (and the skew field with `skew`, 3000 ms). */
struct worker *copies_worker(int skew);
/* Store rule `name` (its JSON without the name), or delete it (it must exist). */
void put_rule(const char *name, const char *json);
void del_rule(const char *name);
/* Three rules of three algorithms: api (leaky_bucket), login (sliding_log), search (token_bucket). */
void three_rules(void);
/* The store's ":version" text, "<epoch>:<version>", into buf. */
const char *store_version(char *buf, size_t cap);
/* How many of the 1024 copies hold exactly the store's rules and version (and the skew field iff `skew`). */
int copies_exact_skew(int skew);
int copies_exact(void);
/* Calls of `cmd` (lower case: "hset") Redis ran since the last CONFIG RESETSTAT; hset_calls of "hset". */
long long cmd_calls(const char *cmd);
long long hset_calls(void);
/* One worker_step of `job` at `now` (ms), which must succeed. */
void step(struct worker *w, enum worker_job job, long long now);
struct worker_status status(struct worker *w);

#endif
