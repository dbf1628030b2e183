#ifndef SLUICE_TEST_API_FIXTURE_H
#define SLUICE_TEST_API_FIXTURE_H
/*
 * The fixture of the admin API suites (check_api.c, check_rules_api.c,
 * check_paths_api.c, check_reset_api.c, check_worker_api.c, check_metrics.c,
 * check_http.c): an api object (admin/api.h) and a worker on sluice's default
 * layouts, against the harness's private redis-server, or its private Redis
 * Cluster of 3 primaries in cluster mode (SLUICE_TEST_REDIS=cluster,
 * tests/harness_mode.h: `make test` runs each suite both ways).  Where the
 * contract differs on a cluster (/readyz's mode and primaries, the worker's
 * nodes, connections and round trips counted per node), the tests expect the
 * mode's exact value (ready_body, primary_of, test_srv_primaries).
 *
 * Most tests call api_handle() directly (call_on and its short forms) and
 * compare the rendered body (cJSON_PrintUnformatted) with the exact text
 * expected (ck_res), or status, error code and field (ck_err).  State is made
 * the way a client makes it: EVAL of the embedded client scripts by the
 * calling contract (key layout 2) with an explicit `now` (lb_admit,
 * lb_admit_bin, sl_admit), or written directly where only its keys matter
 * (put_state: a reset or a listing takes keys of any content).
 *
 * Time: the admin state scripts read Redis TIME.  Entries the state must report
 * exactly are admitted at explicit times AHEAD_MS (9 s) ahead of the server
 * clock (the client scripts refuse more than the skew horizon, 10 s); the
 * scripts never move stored time backward, so they evaluate at the stored
 * time and every value (count, remaining, reset_ms, due_ms) is exact while
 * the test runs.  Only ttl_ms (a PTTL) runs on the real clock: it is checked
 * in a range and removed before the whole body is compared.
 *
 * Tests marked "BUG:" show defects found while writing these suites.
 *
 * Sets up: api_setup/api_teardown are a suite's checked fixture (test_tcase):
 * the objects of tests/api_objects.h (the connection `c`, layouts, target,
 * worker `w` and `api`) per test.  The suite also gets `res`, the last
 * response, and next_auth/next_if_match, all owned here.
 */
#include "core/shard.h"
#include "tests/api_objects.h"

#define RULES_HASH "sluice:rules"
#define RULES_VER "sluice:rules:version"

/* A valid leaky bucket rule body, and its echo under the name "api". */
#define API_BODY "{\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}"
#define API_ECHO "{\"name\":\"api\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2}"
/* GET /v1/rules/api of that rule before the worker summed any decisions for it */
#define API_VIEW "{\"name\":\"api\",\"match\":\"/api/*\",\"algorithm\":\"leaky_bucket\",\"capacity\":10,\"rate\":2,\"decisions\":null}"

/*
 * GET /readyz's 200 body on the suites' Redis (tests/harness_mode.h):
 * {"status":"ready","redis":"up","mode":"single","primaries":1}, or mode
 * "cluster" with its primaries.  A static buffer.
 */
const char *ready_body(void);

/* The i-th primary of the suites' Redis, in slot order (0 .. test_srv_primaries()), as the daemon names it. */
struct primary {
	char addr[64];    /* "127.0.0.1:<port>" */
	long long slots;  /* slots it owns */
	char ranges[96];  /* "0-5460", as GET /v1/worker's ranges */
};
void primary_of(int i, struct primary *p);

/* The last response: status, rendered text, the text parsed back, Allow. */
struct last_response {
	char what[300];    /* "METHOD path", for failure messages */
	int status;
	char *text;        /* owned (freed by res_clear) */
	cJSON *json;       /* owned; tests may edit it (take_int) */
	const char *allow;
	int challenge;
	char etag[24];
	char location[48];
};
/* Set by every call_on; cleared by res_clear and the teardown. */
extern struct last_response res;

/* Free and zero `res`. */
void res_clear(void);
/* objects_up / res_clear, objects_down. */
void api_setup(void);
void api_teardown(void);

/* ---- requests --------------------------------------------------------------- */

/* Authorization and If-Match headers for the next call_on (then reset), or NULL. */
extern const char *next_auth, *next_if_match;

/* One request to api `a`; the response lands in `res`.  Returns the status. */
int call_on(struct api *a, const char *method, const char *path, const char *body, size_t len,
	    const char *match, const char *cursor, const char *count);
/* call_on(api, ...) with a C string body (or NULL) and no query; and its short forms. */
int call(const char *method, const char *path, const char *body);
int get(const char *path);
int put(const char *path, const char *body);
/*
 * POST /v1/reset `body` to api `a`, and when it answers 202 (a job: its
 * Location, state and id checked), GET /v1/jobs/{id} until the job ended;
 * then `res` holds what the reset did as one answer: 200 and
 * {"match", "dry_run", "paths", "keys", "entries"[, "skipped_registries"]}
 * from the done job (its walked >= paths checked), or the failed job's
 * {"error"} with 503 (redis_unavailable) or 500.  Any other first answer (400)
 * stays in `res` as it came.  Returns res.status.
 */
int reset_wait_on(struct api *a, const char *body);
int reset_wait(const char *body);
/* GET /v1/paths with the query parameters given (NULL: absent). */
int list(const char *match, const char *cursor, const char *count);

/* Item at a dotted path ("error.code") in the last body, or NULL. */
cJSON *jat(const char *dotted);
/* The string / number at a dotted path of the last body (fails the test when it is not one). */
const char *jstr(const char *dotted);
long long jint(const char *dotted);
/* Remove top-level integer `key` from the parsed body, returning it. */
long long take_int(const char *key);

/*
 * Fails the test unless `got` (may be NULL) equals `want`, showing both from
 * a little before where they first differ, a bounded excerpt (Check passes a
 * failure's message through a pipe of limited size: a whole long body would
 * end the test with "Message string too long" and no message at all).
 */
void check_same_text(const char *what, const char *got, const char *want);

/* The parsed body (after take_int edits) printed again equals `want`. */
#define ck_json_is(want)                                               \
	do {                                                           \
		char *got_ = cJSON_PrintUnformatted(res.json);         \
		check_same_text(res.what, got_, (want));               \
		free(got_);                                            \
	} while (0)

/* Status and exact body. */
#define ck_res(st, body)                                                                         \
	do {                                                                                     \
		ck_assert_msg(res.status == (st), "%s: status %d, want %d; body %.2000s", res.what, \
			      res.status, (st), res.text);                                       \
		check_same_text(res.what, res.text, (body));                                     \
	} while (0)

/* An error body {"error":{"code","message"[,"field"]}} with nothing else, and its status. */
void check_err(const char *file, int line, int status, const char *code, const char *field);
#define ck_err(status, code, field) check_err(__FILE__, __LINE__, (status), (code), (field))

/* ---- Redis state -------------------------------------------------------------- */

/* One request through the client leaky bucket script (lua/leaky_bucket.lua) at `now`; must be admitted. */
void lb_admit(const char *path, long long capacity, const char *rate, long long now);
/*
 * lb_admit for a path of `len` bytes (NUL bytes allowed, any length), by the
 * calling contract with the keys core/keys.h makes; must be admitted.
 */
void lb_admit_bin(const char *path, size_t len, long long capacity, const char *rate, long long now);
/* One request through lua/sliding_log.lua at `now`; must be admitted. */
void sl_admit(const char *path, long long limit, long long window_ms, long long now);
/*
 * State of `algorithm` for `path` as its client leaves it, written directly
 * (for the reset and listing tests, which take any keys): `entries` members
 * in the state key (a sorted set: scores now, now + 1, ...; a hash for the
 * hash algorithms, "count" = entries), the path in its shard's due index at
 * `due` ms.  No meta.
 */
void put_state(const char *algorithm, const char *path, int entries, long long now, long long due);
/* The path's due time in its shard's due index of `algorithm` (ms), or -1 when it is not there. */
long long due_of_path(const char *algorithm, const char *path);
/* "/v1/paths/" + every byte of `path` percent-encoded + `suffix`, into a new string (caller frees). */
char *encoded_url(const char *path, size_t len, const char *suffix);
/* The rules hash and version as text: "<HLEN>/<version or nil>/<HGET api or nil>". */
void rules_snapshot(char *buf, size_t cap);
/* The stored rules version (0 when none). */
long long rules_version(void);
/* PUT /v1/rules/<name> with `body`; must answer 200 or 201. */
void put_ok(const char *name, const char *body);

#endif
