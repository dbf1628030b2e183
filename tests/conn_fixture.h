#ifndef SLUICE_TEST_CONN_FIXTURE_H
#define SLUICE_TEST_CONN_FIXTURE_H
/*
 * The running test's connection to the harness's redis-server (test_srv), or
 * to its cluster in cluster mode (tests/harness_mode.h: the harness routes
 * its commands),
 * shared by the script suites (tests/script_fixture.h) and the admin suites
 * (tests/api_objects.h): conn_up in a checked fixture's setup, conn_down in
 * its teardown.
 */
#include <hiredis/hiredis.h>
#include <stdlib.h>
#include <string.h>

#include "tests/harness.h"
#include "tests/harness_mode.h"

/*
 * The connection, owned here: set by conn_up (after FLUSHALL and SCRIPT
 * FLUSH, so every test starts on an empty server), freed and NULL again after
 * conn_down.  One per suite process.
 */
extern redisContext *c;

void conn_up(void);
void conn_down(void);

/* The keyspace equals the snapshot `before` (test_snapshot): nothing was written. */
#define ck_snapshot_same(before)                                                            \
	do {                                                                                \
		char *after_ = test_snapshot(c);                                            \
		ck_assert_msg(strcmp((before), after_) == 0, "keyspace changed:\n%s---\n%s", \
			      (before), after_);                                            \
		free(after_);                                                               \
	} while (0)

/* The same, without the key `skip` (test_snapshot_except). */
#define ck_snapshot_same_except(before, skip)                                               \
	do {                                                                                \
		char *after_ = test_snapshot_except(c, (skip));                             \
		ck_assert_msg(strcmp((before), after_) == 0, "keyspace changed:\n%s---\n%s", \
			      (before), after_);                                            \
		free(after_);                                                               \
	} while (0)

#endif
