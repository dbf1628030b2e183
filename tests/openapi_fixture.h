#ifndef SLUICE_TEST_OPENAPI_FIXTURE_H
#define SLUICE_TEST_OPENAPI_FIXTURE_H
/*
 * The fixture of the suites that keep docs/openapi.json true to the code
 * (check_openapi.c: the document itself, its routes and error codes;
 * check_openapi_probes.c: every documented operation called as documented):
 * the document and its operations, a small OpenAPI 3.0 schema validator (it
 * refuses keywords it does not enforce), failures collected so that one run
 * shows every problem, requests through api_handle checked against the
 * document (check_answer), and the state every probe starts from (seed).
 *
 * The document is docs/openapi.json relative to the working directory (the
 * repository root under `make test`), or $SLUICE_OPENAPI; the sources are read
 * from $SLUICE_SRCDIR (default ".").
 *
 * Sets up: openapi_setup/openapi_teardown are a suite's checked fixture
 * (test_tcase): the document, loaded per test into `doc`, and the objects of
 * tests/api_objects.h (the connection `c`, layouts, target, worker `w` and
 * `api`).  `doc` is owned here; everything a function below returns points
 * into it unless it says the caller frees it.
 */
#include "tests/api_objects.h"

#include <errno.h>

#define TOKEN "doc-token"
#define MAX_OPS 64

/* The parsed document, and where it was read from. */
extern cJSON *doc;
extern char doc_path[512];

/* log level warn, doc loaded, objects_up / objects_down, doc freed. */
void openapi_setup(void);
void openapi_teardown(void);

/* ---- failures, collected so one run shows every problem ------------------------ */

struct fails {
	char *buf; /* owned; fails_done frees it */
	size_t len, cap;
	int n;
};

/* Add one problem line to `f` (nothing when f is NULL). */
void addf(struct fails *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Fail the test with every collected problem (Check's message is cut near 8 KB); empties f. */
void fails_done(struct fails *f, const char *what);

/* ---- the document --------------------------------------------------------------- */

/* The whole file as a NUL-terminated string (caller frees), its length in *len; NULL when unreadable. */
char *slurp(const char *path, size_t *len);

/* Member `key` of object `o` (NULL when o is no object or has none); as a string, or NULL. */
const cJSON *jget(const cJSON *o, const char *key);
const char *jget_str(const cJSON *o, const char *key);
/* A local JSON pointer ("#/components/schemas/Rule") in the document, or NULL. */
const cJSON *pointer(const char *ref);
/* Follow $ref (chains too); NULL when one does not resolve. */
const cJSON *resolve(const cJSON *n);

/* The documented operations: path template, lower-case method, operation object. */
struct op {
	const char *path;
	const char *method;
	char upper[16];
	const cJSON *obj;
};

/* The methods a path item may hold, lower case. */
#define N_HTTP_METHODS 8
extern const char *const http_methods[N_HTTP_METHODS];

/* The document's operations into out[0..cap); returns how many. */
size_t doc_ops(struct op *out, size_t cap);
/* The operation for `method` (any case) and path template `path`, or NULL. */
const struct op *find_op(const struct op *ops, size_t n, const char *method, const char *path);

/* ---- a small OpenAPI 3.0 schema validator ---------------------------------------- */

/* Does `v` validate against `schema`?  Each problem is added to `f` (may be NULL), `at` naming where. */
int validate(const cJSON *schema, const cJSON *v, const char *at, struct fails *f);

/* ---- Redis state and requests -------------------------------------------------- */

/* One command on `c`, as argv; fails the test on an error reply. */
void redis_do(const char **argv, int argc);

/* The answer of one api_handle call, the JSON body rendered and parsed back (as a client sees it). */
struct answer {
	int status;
	cJSON *json;        /* NULL when no JSON body */
	char *text;         /* the rendered JSON, or the text body (GET /metrics) */
	int is_text;
	const char *ctype;  /* for a text body */
	int route;
	const char *allow;
	int challenge;
	char etag[64];
	const char *cache_control; /* the Cache-Control header (static), or NULL */
};

/* Free what `a` holds and zero it. */
void answer_clear(struct answer *a);

struct request {
	const char *method;
	const char *path;
	const char *match, *cursor, *count;
	const char *body;
	const char *auth, *if_match;
};

/* `rq` through api_handle of `a`; the answer in `out` (answer_clear frees it). */
void call_answer(struct api *a, const struct request *rq, struct answer *out);
/* As call_answer(); with a worker, a thread serves sweep requests meanwhile (POST /v1/worker/sweep). */
void call_serving(struct api *a, struct worker *wk, const struct request *rq, struct answer *out);

/*
 * The answer `a` to `rq`, meant for operation `op`: reached that route (when it
 * reached one), is neither 404 "no such route" nor 405, has a status the
 * operation documents, the documented content type, a body valid against the
 * documented schema, and exactly the documented ETag / WWW-Authenticate headers.
 */
void check_answer(const struct op *op, const struct request *rq, const struct answer *a, struct fails *f);

/* ---- probes of documented operations --------------------------------------------- */

/* "/v1/rules/{name}" -> "/v1/rules/doc-rule"; {path} -> "%2Fdoc"; any other {x} -> "doc-x". */
void fill_template(const char *tpl, char *out, size_t cap);
/*
 * Make `n` bulk reset jobs (dry runs of "*") through the fixture's api; the
 * last one's id is what fill_template puts for {id} from now on (with n >= 3
 * it still waits or runs a moment later: the jobs run one after another).
 */
void seed_jobs(int n);
/* The operation's requestBody example as text (caller frees), or NULL when it takes no body. */
char *example_body(const struct op *op);

/* The rule "doc-rule" of the seeded state. */
#define RULE_BODY "{\"match\":\"/doc*\",\"algorithm\":\"leaky_bucket\",\"capacity\":20,\"rate\":5}"

/*
 * State every probe starts from (key layout 2): rule "doc-rule" (leaky
 * bucket, "/doc*"), a bucket at /doc under it and one at /free (no rule),
 * both made by the client script with explicit parameters; a sliding log at
 * /doc-log (a rule of another algorithm matches it) as its client leaves
 * it; a wrong-typed key at /doc-bad, registered; and a due index member
 * that is not UTF-8.
 */
void seed(void);

#endif
