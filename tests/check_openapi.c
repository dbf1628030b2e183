/*
 * Keeps docs/openapi.json true to the code.
 *
 *   document   the file parses, is OpenAPI 3.0.3, every $ref resolves, every
 *              operation has a summary, a description, its path parameters and
 *              responses of known statuses; error answers are Error objects
 *   routes     the (method, path template) pairs it documents are exactly the
 *              server's routes (api_route), both ways
 *   probes     every documented operation is called through api_handle against a
 *              private redis-server (tests/harness.h), with its template filled
 *              ({name} -> "doc-rule", {path} -> "%2Fdoc") and the body its
 *              requestBody example gives: it must reach that route (never 404 "no
 *              such route" nor 405), succeed on seeded state, answer a status the
 *              document lists for the operation, with a body valid against the
 *              documented schema (a small OpenAPI 3.0 schema validator below; it
 *              refuses keywords it does not enforce) and the documented headers
 *   errors     a table of error probes (bad bodies, queries, escapes, If-Match,
 *              wrong-typed keys, no worker, Redis down, a token) must answer the
 *              documented status and code; with a token, every operation but the
 *              probes answers 401 exactly as its `security` says
 *   codes      the ErrorCode enum equals the codes the admin/ sources
 *              can emit (read from every admin/ .c file)
 *   http       413 and the ETag header through the real HTTP server (libcurl)
 *
 * The document is docs/openapi.json relative to the working directory (the
 * repository root under `make test`), or $SLUICE_OPENAPI; the sources are read
 * from $SLUICE_SRCDIR (default ".").
 */
#include "admin/api.h"
#include "admin/server.h"
#include "core/config.h"
#include "core/layout.h"
#include "core/log.h"
#include "core/scripts.h"
#include "tests/harness.h"
#include "worker/worker.h"

#include <check.h>
#include <cjson/cJSON.h>
#include <curl/curl.h>
#include <errno.h>
#include <glob.h>
#include <hiredis/hiredis.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <regex.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#define PFX "sluice:"
#define LB_REG "sluice:registry:leaky_bucket"
#define SL_REG "sluice:registry:sliding_log"
#define HOUR_MS 3600000LL
#define TOKEN "doc-token"
#define MAX_OPS 64

static struct test_redis srv;
static redisContext *c;
static struct layout *layouts;
static size_t nlayouts;
static struct redis_target target;
static struct worker *w;
static struct api *api;
static cJSON *doc;
static char doc_path[512];

/* ---- failures, collected so one run shows every problem ------------------------ */

struct fails {
	char *buf;
	size_t len, cap;
	int n;
};

static void addf(struct fails *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void addf(struct fails *f, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t n;

	if (!f)
		return;
	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	n = strlen(line);
	if (f->len + n + 2 > f->cap) {
		size_t cap = f->cap ? f->cap * 2 : 4096;
		char *b;

		while (cap < f->len + n + 2)
			cap *= 2;
		b = realloc(f->buf, cap);
		ck_assert_ptr_nonnull(b);
		f->buf = b;
		f->cap = cap;
	}
	memcpy(f->buf + f->len, line, n);
	f->len += n;
	f->buf[f->len++] = '\n';
	f->buf[f->len] = '\0';
	f->n++;
}

/* Fail the test with every collected problem (Check's message is cut near 8 KB). */
static void fails_done(struct fails *f, const char *what)
{
	int n = f->n;
	char *b = f->buf;

	f->buf = NULL;
	f->len = f->cap = 0;
	f->n = 0;
	if (n && strlen(b) > 6000) {
		fprintf(stderr, "%s: %d problem(s):\n%s", what, n, b); /* in full */
		strcpy(b + 5980, "\n... (cut; in full on stderr)\n");
	}
	ck_assert_msg(n == 0, "%s: %d problem(s):\n%s", what, n, b ? b : "");
	free(b);
}

/* ---- the document --------------------------------------------------------------- */

static char *slurp(const char *path, size_t *len)
{
	FILE *fp = fopen(path, "rb");
	char *buf = NULL;
	size_t cap = 0, n = 0;

	if (!fp)
		return NULL;
	for (;;) {
		size_t got;

		if (n + 4096 + 1 > cap) {
			char *b;

			cap = cap ? cap * 2 : 65536;
			b = realloc(buf, cap);
			if (!b) {
				free(buf);
				fclose(fp);
				return NULL;
			}
			buf = b;
		}
		got = fread(buf + n, 1, cap - n - 1, fp);
		n += got;
		if (got == 0)
			break;
	}
	fclose(fp);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}

static void doc_load(void)
{
	const char *env = getenv("SLUICE_OPENAPI");
	size_t len;
	char *text;

	snprintf(doc_path, sizeof(doc_path), "%s", env && *env ? env : "docs/openapi.json");
	text = slurp(doc_path, &len);
	ck_assert_msg(text != NULL, "cannot read %s: %s (run from the repository root, or set SLUICE_OPENAPI)",
		      doc_path, strerror(errno));
	doc = cJSON_ParseWithLength(text, len);
	ck_assert_msg(doc != NULL, "%s is not valid JSON (near byte %ld)", doc_path,
		      cJSON_GetErrorPtr() ? (long)(cJSON_GetErrorPtr() - text) : -1L);
	free(text);
}

static const cJSON *jget(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = jget(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* A local JSON pointer ("#/components/schemas/Rule") in the document, or NULL. */
static const cJSON *pointer(const char *ref)
{
	const cJSON *n = doc;
	const char *p = ref;

	if (strncmp(p, "#/", 2) != 0)
		return NULL;
	p += 2;
	while (n && *p) {
		char seg[256];
		size_t k = 0;

		for (; *p && *p != '/'; p++) {
			char ch = *p;

			if (ch == '~' && (p[1] == '0' || p[1] == '1'))
				ch = *++p == '0' ? '~' : '/';
			if (k + 1 < sizeof(seg))
				seg[k++] = ch;
		}
		seg[k] = '\0';
		if (*p == '/')
			p++;
		n = cJSON_IsArray(n) ? cJSON_GetArrayItem(n, atoi(seg)) : jget(n, seg);
	}
	return n;
}

/* Follow $ref (chains too); NULL when one does not resolve. */
static const cJSON *resolve(const cJSON *n)
{
	for (int i = 0; n && i < 16; i++) {
		const char *ref = jstr(n, "$ref");

		if (!ref)
			return n;
		n = pointer(ref);
	}
	return NULL;
}

/* The documented operations: path template, lower-case method, operation object. */
struct op {
	const char *path;
	const char *method;
	char upper[16];
	const cJSON *obj;
};

static const char *const http_methods[] = { "get", "put", "post", "delete", "options", "head", "patch", "trace" };

static size_t doc_ops(struct op *out, size_t cap)
{
	const cJSON *paths = jget(doc, "paths"), *item;
	size_t n = 0;

	ck_assert_msg(cJSON_IsObject(paths), "%s has no \"paths\" object", doc_path);
	cJSON_ArrayForEach(item, paths) {
		const cJSON *pi = resolve(item);

		for (size_t m = 0; m < sizeof(http_methods) / sizeof(http_methods[0]); m++) {
			const cJSON *o = jget(pi, http_methods[m]);

			if (!o)
				continue;
			ck_assert_uint_lt(n, cap);
			out[n].path = item->string;
			out[n].method = http_methods[m];
			for (size_t i = 0; i <= strlen(http_methods[m]); i++)
				out[n].upper[i] = (char)(http_methods[m][i] >= 'a' && http_methods[m][i] <= 'z'
							 ? http_methods[m][i] - 32 : http_methods[m][i]);
			out[n].obj = o;
			n++;
		}
	}
	return n;
}

static const struct op *find_op(const struct op *ops, size_t n, const char *method, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (strcasecmp(ops[i].method, method) == 0 && strcmp(ops[i].path, path) == 0)
			return &ops[i];
	return NULL;
}

/* The documented response of `op` for `status`, resolved, or NULL. */
static const cJSON *op_response(const struct op *op, int status)
{
	char key[8];

	snprintf(key, sizeof(key), "%d", status);
	return resolve(jget(jget(op->obj, "responses"), key));
}

static void op_statuses(const struct op *op, char *buf, size_t cap)
{
	const cJSON *r;
	size_t len = 0;

	buf[0] = '\0';
	cJSON_ArrayForEach(r, jget(op->obj, "responses"))
		len += (size_t)snprintf(buf + len, len < cap ? cap - len : 0, "%s%s", len ? ", " : "", r->string);
}

/* ---- a small OpenAPI 3.0 schema validator ---------------------------------------- */

static const char *const keywords[] = {
	"type", "nullable", "enum", "required", "properties", "additionalProperties", "items", "oneOf",
	"allOf", "anyOf", "minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum", "minLength",
	"maxLength", "pattern", "minItems", "maxItems",
	/* annotations: nothing to enforce */
	"description", "title", "example", "default", "discriminator", "format", "deprecated", "externalDocs",
};

static int is_keyword(const char *k)
{
	for (size_t i = 0; i < sizeof(keywords) / sizeof(keywords[0]); i++)
		if (strcmp(keywords[i], k) == 0)
			return 1;
	return 0;
}

static size_t utf8_chars(const char *s)
{
	size_t n = 0;

	for (; *s; s++)
		if (((unsigned char)*s & 0xC0) != 0x80)
			n++;
	return n;
}

static int type_ok(const char *type, const cJSON *v)
{
	if (strcmp(type, "object") == 0)
		return cJSON_IsObject(v);
	if (strcmp(type, "array") == 0)
		return cJSON_IsArray(v);
	if (strcmp(type, "string") == 0)
		return cJSON_IsString(v);
	if (strcmp(type, "boolean") == 0)
		return cJSON_IsBool(v);
	if (strcmp(type, "number") == 0)
		return cJSON_IsNumber(v) && isfinite(v->valuedouble);
	if (strcmp(type, "integer") == 0)
		return cJSON_IsNumber(v) && isfinite(v->valuedouble) && v->valuedouble == floor(v->valuedouble);
	return 0;
}

static int validate(const cJSON *schema, const cJSON *v, const char *at, struct fails *f);

/* Does `v` validate against `schema` (no messages)? */
static int valid_quiet(const cJSON *schema, const cJSON *v)
{
	return validate(schema, v, "", NULL);
}

static int validate(const cJSON *schema_in, const cJSON *v, const char *at, struct fails *f)
{
	const cJSON *schema = resolve(schema_in), *k, *t, *e;
	char sub[512];
	int ok = 1, is_null = cJSON_IsNull(v), nullable;

	if (!cJSON_IsObject(schema)) {
		addf(f, "%s: schema does not resolve (%s)", at, jstr(schema_in, "$ref") ? jstr(schema_in, "$ref") : "?");
		return 0;
	}
	cJSON_ArrayForEach(k, schema)
		if (!is_keyword(k->string)) {
			/* never pass what is not checked */
			addf(f, "%s: the validator does not know the schema keyword \"%s\"", at, k->string);
			ok = 0;
		}
	nullable = cJSON_IsTrue(jget(schema, "nullable"));
	if ((t = jget(schema, "type")) && !(is_null && nullable) && !type_ok(t->valuestring, v)) {
		addf(f, "%s: not of type %s%s", at, t->valuestring, is_null ? " (null, and not nullable)" : "");
		return 0;
	}
	if (is_null && !t && !nullable && !jget(schema, "enum") && !jget(schema, "oneOf") &&
	    !jget(schema, "allOf") && !jget(schema, "anyOf")) {
		addf(f, "%s: null where the schema is not nullable", at);
		return 0;
	}
	if ((e = jget(schema, "enum"))) {
		const cJSON *it;
		int found = 0;

		cJSON_ArrayForEach(it, e)
			found = found || cJSON_Compare(it, v, 1);
		if (!found) {
			char *s = cJSON_PrintUnformatted(v);

			addf(f, "%s: %s is not one of the enum", at, s ? s : "?");
			free(s);
			return 0;
		}
	}
	if (cJSON_IsString(v)) {
		const cJSON *mn = jget(schema, "minLength"), *mx = jget(schema, "maxLength"), *pat = jget(schema, "pattern");
		size_t n = utf8_chars(v->valuestring);

		if (mn && (double)n < mn->valuedouble)
			addf(f, "%s: \"%s\" shorter than %g", at, v->valuestring, mn->valuedouble), ok = 0;
		if (mx && (double)n > mx->valuedouble)
			addf(f, "%s: string longer than %g", at, mx->valuedouble), ok = 0;
		if (cJSON_IsString(pat)) {
			regex_t re;

			if (regcomp(&re, pat->valuestring, REG_EXTENDED | REG_NOSUB) != 0) {
				addf(f, "%s: pattern %s does not compile", at, pat->valuestring);
				ok = 0;
			} else {
				if (regexec(&re, v->valuestring, 0, NULL, 0) != 0)
					addf(f, "%s: \"%s\" does not match %s", at, v->valuestring, pat->valuestring), ok = 0;
				regfree(&re);
			}
		}
	}
	if (cJSON_IsNumber(v)) {
		const cJSON *mn = jget(schema, "minimum"), *mx = jget(schema, "maximum");
		int exmn = cJSON_IsTrue(jget(schema, "exclusiveMinimum")), exmx = cJSON_IsTrue(jget(schema, "exclusiveMaximum"));

		if (mn && (exmn ? !(v->valuedouble > mn->valuedouble) : !(v->valuedouble >= mn->valuedouble)))
			addf(f, "%s: %.17g below the minimum %.17g%s", at, v->valuedouble, mn->valuedouble,
			     exmn ? " (exclusive)" : ""), ok = 0;
		if (mx && (exmx ? !(v->valuedouble < mx->valuedouble) : !(v->valuedouble <= mx->valuedouble)))
			addf(f, "%s: %.17g above the maximum %.17g%s", at, v->valuedouble, mx->valuedouble,
			     exmx ? " (exclusive)" : ""), ok = 0;
	}
	if (cJSON_IsObject(v)) {
		const cJSON *req = jget(schema, "required"), *props = jget(schema, "properties"),
			    *addl = jget(schema, "additionalProperties"), *it;

		cJSON_ArrayForEach(it, req)
			if (cJSON_IsString(it) && !jget(v, it->valuestring))
				addf(f, "%s: required member \"%s\" missing", at, it->valuestring), ok = 0;
		cJSON_ArrayForEach(it, v) {
			const cJSON *ps = jget(props, it->string);

			snprintf(sub, sizeof(sub), "%s.%s", at, it->string);
			if (ps)
				ok = validate(ps, it, sub, f) && ok;
			else if (cJSON_IsFalse(addl))
				addf(f, "%s: member \"%s\" is not documented (additionalProperties false)", at, it->string), ok = 0;
			else if (cJSON_IsObject(addl))
				ok = validate(addl, it, sub, f) && ok;
		}
	}
	if (cJSON_IsArray(v)) {
		const cJSON *items = jget(schema, "items"), *it, *mn = jget(schema, "minItems"), *mx = jget(schema, "maxItems");
		int i = 0;

		if (mn && cJSON_GetArraySize(v) < mn->valueint)
			addf(f, "%s: fewer than %d items", at, mn->valueint), ok = 0;
		if (mx && cJSON_GetArraySize(v) > mx->valueint)
			addf(f, "%s: more than %d items", at, mx->valueint), ok = 0;
		cJSON_ArrayForEach(it, v) {
			snprintf(sub, sizeof(sub), "%s[%d]", at, i++);
			if (items)
				ok = validate(items, it, sub, f) && ok;
		}
	}
	if ((e = jget(schema, "allOf"))) {
		const cJSON *it;

		cJSON_ArrayForEach(it, e)
			ok = validate(it, v, at, f) && ok;
	}
	if ((e = jget(schema, "anyOf"))) {
		const cJSON *it;
		int any = 0;

		cJSON_ArrayForEach(it, e)
			any = any || valid_quiet(it, v);
		if (!any)
			addf(f, "%s: matches none of anyOf", at), ok = 0;
	}
	if ((e = jget(schema, "oneOf"))) {
		const cJSON *it;
		int matches = 0, i = 0;

		cJSON_ArrayForEach(it, e)
			matches += valid_quiet(it, v);
		if (matches != 1 && f) {
			char *s = cJSON_PrintUnformatted(v);

			addf(f, "%s: matches %d of the %d oneOf schemas (exactly one wanted): %.300s", at, matches,
			     cJSON_GetArraySize(e), s ? s : "?");
			free(s);
			if (matches == 0)
				cJSON_ArrayForEach(it, e) {
					struct fails g = { 0 };
					const cJSON *r = resolve(it);

					validate(it, v, at, &g);
					addf(f, "   oneOf[%d] %s: %.300s", i++, jstr(r, "title") ? jstr(r, "title") : "",
					     g.buf ? g.buf : "");
					free(g.buf);
				}
		}
		ok = ok && matches == 1;
	}
	return ok;
}

/* ---- Redis state and requests -------------------------------------------------- */

static void srv_start(void)
{
	if (test_redis_start(&srv) != 0)
		abort();
}

static void srv_stop(void)
{
	test_redis_stop(&srv);
}

static struct api *api_make(const struct redis_target *t, struct worker *wk, const char *token, int auth_reads)
{
	struct api_config ac = { .redis = t, .timeout_ms = 2000, .prefix = PFX, .layouts = layouts,
				 .nlayouts = nlayouts, .worker = wk, .token = token, .auth_reads = auth_reads };
	struct api *a = api_new(&ac);

	ck_assert_ptr_nonnull(a);
	return a;
}

static struct worker *worker_make(const struct redis_target *t)
{
	struct worker_config wc = { .redis = t, .timeout_ms = 2000, .prefix = PFX, .batch_size = 100,
				    .layouts = layouts, .nlayouts = nlayouts };
	struct worker *wk = worker_new(&wc);

	ck_assert_ptr_nonnull(wk);
	return wk;
}

static void setup(void)
{
	struct sl_error err = { 0 };

	log_set_level(LOG_WARN);
	doc_load();
	c = test_redis_connect(&srv);
	test_redis_flush(c);
	ck_assert_int_eq(layouts_default(PFX, &layouts, &nlayouts), 0);
	ck_assert_msg(redis_url_parse(srv.url, &target, &err) == 0, "%s: %s", err.field, err.message);
	w = worker_make(&target);
	api = api_make(&target, w, NULL, 0);
}

static void teardown(void)
{
	api_free(api);
	api = NULL;
	worker_free(w);
	w = NULL;
	layouts_free(layouts, nlayouts);
	layouts = NULL;
	redis_target_clear(&target);
	redisFree(c);
	c = NULL;
	cJSON_Delete(doc);
	doc = NULL;
}

/* One request through the client script `id` with `argv` after the script body; must be admitted. */
static void admit(enum script_id id, int argc, const char **args)
{
	const struct script_src *s = script_get(id);
	const char *argv[16];
	redisReply *r;

	ck_assert_ptr_nonnull(s);
	ck_assert_int_le(argc + 2, 16);
	argv[0] = "EVAL";
	argv[1] = s->body;
	for (int i = 0; i < argc; i++)
		argv[i + 2] = args[i];
	r = redisCommandArgv(c, argc + 2, argv, NULL);
	ck_assert_msg(r != NULL, "redis I/O error: %s", c->errstr);
	ck_assert_msg(r->type == REDIS_REPLY_ARRAY && r->elements >= 1 && r->element[0]->type == REDIS_REPLY_INTEGER &&
			      r->element[0]->integer == 1,
		      "%s not admitted (%s)", s->name, r->type == REDIS_REPLY_ERROR ? r->str : "rejected");
	freeReplyObject(r);
}

static void lb_admit(const char *path, const char *capacity, const char *rate, long long now)
{
	char nowb[24];
	const char *args[9] = { "3", test_lb_key(path), test_lb_meta(path), LB_REG, path, capacity, rate, "1", nowb };

	snprintf(nowb, sizeof(nowb), "%lld", now);
	admit(SCRIPT_LEAKY_BUCKET, 9, args);
}

static void sl_admit(const char *path, const char *limit, const char *window, long long now)
{
	char nowb[24];
	const char *args[7] = { "2", test_sl_key(path), SL_REG, path, limit, window, nowb };

	snprintf(nowb, sizeof(nowb), "%lld", now);
	admit(SCRIPT_SLIDING_LOG, 7, args);
}

static void redis_do(const char **argv, int argc)
{
	redisReply *r = redisCommandArgv(c, argc, argv, NULL);

	ck_assert_msg(r != NULL, "redis I/O error: %s", c->errstr);
	ck_assert_msg(r->type != REDIS_REPLY_ERROR, "%s: %s", argv[0], r->str);
	freeReplyObject(r);
}

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
};

static void answer_clear(struct answer *a)
{
	cJSON_Delete(a->json);
	free(a->text);
	memset(a, 0, sizeof(*a));
}

struct request {
	const char *method;
	const char *path;
	const char *match, *cursor, *count;
	const char *body;
	const char *auth, *if_match;
};

static void call(struct api *a, const struct request *rq, struct answer *out)
{
	struct api_request req = { 0 };
	struct api_response res;

	memset(out, 0, sizeof(*out));
	req.method = rq->method;
	req.path = rq->path;
	req.query_match = rq->match;
	req.query_cursor = rq->cursor;
	req.query_count = rq->count;
	req.body = rq->body;
	req.body_len = rq->body ? strlen(rq->body) : 0;
	req.authorization = rq->auth;
	req.if_match = rq->if_match;
	api_handle(a, &req, &res);
	out->status = res.status;
	out->route = res.route;
	out->allow = res.allow;
	out->challenge = res.challenge;
	snprintf(out->etag, sizeof(out->etag), "%s", res.etag);
	if (res.text) {
		out->text = res.text;
		out->is_text = 1;
		out->ctype = res.content_type;
	} else if (res.body) {
		out->text = cJSON_PrintUnformatted(res.body);
		ck_assert_ptr_nonnull(out->text);
		out->json = cJSON_Parse(out->text);
		ck_assert_msg(out->json != NULL, "%s %s: body is not JSON: %s", rq->method, rq->path, out->text);
	}
	cJSON_Delete(res.body);
}

/* Plays the daemon's main loop: serves sweep requests on the worker's own thread until told to stop. */
struct server_thread {
	struct worker *wk;
	int stop[2]; /* a pipe: readable once the request is answered */
};

static void *serve_sweeps(void *arg)
{
	struct server_thread *st = arg;
	struct pollfd pfd[2] = { { .fd = worker_request_fd(st->wk), .events = POLLIN },
				 { .fd = st->stop[0], .events = POLLIN } };

	while (poll(pfd, 2, 30000) > 0 && !(pfd[1].revents & POLLIN))
		if (pfd[0].revents & POLLIN)
			worker_serve_requests(st->wk);
	return NULL;
}

/* As call(); with a worker, a thread serves sweep requests meanwhile (POST /v1/worker/sweep). */
static void call_serving(struct api *a, struct worker *wk, const struct request *rq, struct answer *out)
{
	struct server_thread st = { .wk = wk };
	pthread_t th;

	if (!wk) {
		call(a, rq, out);
		return;
	}
	ck_assert_int_eq(pipe(st.stop), 0);
	ck_assert_int_eq(pthread_create(&th, NULL, serve_sweeps, &st), 0);
	call(a, rq, out);
	ck_assert_int_eq(write(st.stop[1], "x", 1), 1);
	pthread_join(th, NULL);
	close(st.stop[0]);
	close(st.stop[1]);
}

/* Does a header schema's pattern (if any) accept `value`? */
static int header_value_ok(const cJSON *hdr, const char *value)
{
	const cJSON *schema = resolve(jget(hdr, "schema"));
	cJSON *s = cJSON_CreateString(value);
	int ok = schema ? valid_quiet(schema, s) : 1;

	cJSON_Delete(s);
	return ok;
}

/*
 * The answer `a` to `rq`, meant for operation `op`: reached that route (when it
 * reached one), is neither 404 "no such route" nor 405, has a status the
 * operation documents, the documented content type, a body valid against the
 * documented schema, and exactly the documented ETag / WWW-Authenticate headers.
 */
static void check_answer(const struct op *op, const struct request *rq, const struct answer *a, struct fails *f)
{
	char what[400], statuses[128], at[64];
	const cJSON *resp, *content, *headers, *msg;

	snprintf(what, sizeof(what), "%s %s (for %s %s)", rq->method, rq->path, op->upper, op->path);
	msg = jget(jget(a->json, "error"), "message");
	if (a->status == 404 && cJSON_IsString(msg) && strcmp(msg->valuestring, "no such route") == 0)
		addf(f, "%s: 404 \"no such route\": the documented route is not served", what);
	if (a->status == 405)
		addf(f, "%s: 405 (Allow: %s): the documented method is not served", what, a->allow ? a->allow : "?");
	if (a->route >= 0) {
		const struct api_route *r = api_route((size_t)a->route);

		if (!r || strcmp(r->method, op->upper) != 0 || strcmp(r->pattern, op->path) != 0)
			addf(f, "%s: answered by route %s %s, not the documented one", what, r ? r->method : "?",
			     r ? r->pattern : "?");
	}
	resp = op_response(op, a->status);
	if (!resp) {
		op_statuses(op, statuses, sizeof(statuses));
		addf(f, "%s: status %d is not documented (documented: %s); body %.300s", what, a->status, statuses,
		     a->text ? a->text : "(none)");
		return;
	}
	content = jget(resp, "content");
	if (a->is_text) {
		const cJSON *mt = jget(content, "text/plain");

		if (!mt)
			addf(f, "%s: a text body (%s) where %d documents no text/plain content", what, a->ctype, a->status);
		if (!a->ctype || strncmp(a->ctype, "text/plain", 10) != 0)
			addf(f, "%s: content type %s, documented text/plain", what, a->ctype ? a->ctype : "(none)");
		if (mt && jget(mt, "schema")) {
			cJSON *s = cJSON_CreateString(a->text);

			if (!valid_quiet(jget(mt, "schema"), s))
				addf(f, "%s: the text body does not match the text/plain schema of %d", what, a->status);
			cJSON_Delete(s);
		}
	} else if (a->json) {
		const cJSON *mt = jget(content, "application/json");

		snprintf(at, sizeof(at), "%d $", a->status);
		if (!mt)
			addf(f, "%s: a JSON body where %d documents no application/json content: %.200s", what, a->status,
			     a->text);
		else {
			struct fails g = { 0 };

			if (!validate(jget(mt, "schema"), a->json, at, &g))
				addf(f, "%s: the body does not match the documented schema: %.600s\n  body: %.600s", what,
				     g.buf ? g.buf : "?", a->text);
			free(g.buf);
		}
	} else if (a->status != 500) {
		addf(f, "%s: %d without a body", what, a->status);
	}
	headers = jget(resp, "headers");
	if (a->etag[0] && !jget(headers, "ETag"))
		addf(f, "%s: sends ETag %s, undocumented for %d", what, a->etag, a->status);
	if (!a->etag[0] && jget(headers, "ETag") && a->status < 300)
		addf(f, "%s: %d documents an ETag header, none sent", what, a->status);
	if (a->etag[0] && jget(headers, "ETag") && !header_value_ok(resolve(jget(headers, "ETag")), a->etag))
		addf(f, "%s: ETag %s does not match its documented schema", what, a->etag);
	if (a->challenge != (jget(headers, "WWW-Authenticate") != NULL))
		addf(f, "%s: WWW-Authenticate %s, documented %s", what, a->challenge ? "sent" : "not sent",
		     jget(headers, "WWW-Authenticate") ? "yes" : "no");
	if (a->allow)
		addf(f, "%s: an Allow header (%s) on %d", what, a->allow, a->status);
}

/* ---- probes of documented operations --------------------------------------------- */

/* "/v1/rules/{name}" -> "/v1/rules/doc-rule"; {path} -> "%2Fdoc"; any other {x} -> "doc-x". */
static void fill_template(const char *tpl, char *out, size_t cap)
{
	size_t o = 0;

	for (const char *p = tpl; *p && o + 1 < cap;) {
		if (*p == '{') {
			const char *end = strchr(p, '}');
			char name[64], val[80];
			size_t n = end ? (size_t)(end - p - 1) : 0;

			ck_assert_ptr_nonnull(end);
			snprintf(name, sizeof(name), "%.*s", (int)n, p + 1);
			if (strcmp(name, "name") == 0)
				snprintf(val, sizeof(val), "doc-rule");
			else if (strcmp(name, "path") == 0)
				snprintf(val, sizeof(val), "%%2Fdoc");
			else
				snprintf(val, sizeof(val), "doc-%s", name);
			o += (size_t)snprintf(out + o, cap - o, "%s", val);
			p = end + 1;
		} else {
			out[o++] = *p++;
		}
	}
	out[o < cap ? o : cap - 1] = '\0';
}

/* The operation's requestBody example as text (caller frees), or NULL when it takes no body. */
static char *example_body(const struct op *op)
{
	const cJSON *rb = resolve(jget(op->obj, "requestBody"));
	const cJSON *ex = jget(jget(jget(rb, "content"), "application/json"), "example");

	if (!rb)
		return NULL;
	return ex ? cJSON_PrintUnformatted(ex) : strdup("{}");
}

#define RULE_BODY "{\"match\":\"/doc*\",\"algorithm\":\"leaky_bucket\",\"capacity\":20,\"rate\":5}"

/*
 * State every probe starts from: rule "doc-rule" (leaky bucket, "/doc*"), a
 * bucket at /doc under it, a sliding log at /doc-log (a rule of another
 * algorithm governs it), a bucket at /free (no rule), a wrong-typed key at
 * /doc-bad, and a registry member that is not UTF-8.
 */
static void seed(void)
{
	const char *bad[] = { "SET", "sluice:{/doc-bad}:leaky_bucket", "a string" };
	const char *addbad[] = { "SADD", LB_REG, "/doc-bad", "\xff/bin" };
	long long t = test_server_ms(c) + HOUR_MS;
	struct request rq = { .method = "PUT", .path = "/v1/rules/doc-rule", .body = RULE_BODY };
	struct answer a;

	test_redis_flush(c);
	call(api, &rq, &a);
	ck_assert_msg(a.status == 201, "seeding PUT %s: %d %s", rq.path, a.status, a.text);
	answer_clear(&a);
	lb_admit("/doc", "20", "5", t);
	lb_admit("/doc", "20", "5", t + 1);
	lb_admit("/free", "20", "5", t);
	sl_admit("/doc-log", "10", "60000", t);
	redis_do(bad, 3);
	redis_do(addbad, 4);
}

START_TEST(test_document_well_formed)
{
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n;
	const cJSON *codes = jget(resolve(pointer("#/components/schemas/ErrorCode")), "enum");
	static const char *const statuses[] = { "200", "201", "400", "401", "404", "405", "412", "413", "500", "503" };

	if (!cJSON_IsString(jget(doc, "openapi")) || strcmp(jstr(doc, "openapi"), "3.0.3") != 0)
		addf(&f, "\"openapi\" is not \"3.0.3\"");
	if (!jstr(jget(doc, "info"), "title") || !jstr(jget(doc, "info"), "version"))
		addf(&f, "info.title or info.version missing");
	if (!cJSON_IsArray(codes) || cJSON_GetArraySize(codes) == 0)
		addf(&f, "components.schemas.ErrorCode has no enum");
	if (!pointer("#/components/schemas/Error"))
		addf(&f, "components.schemas.Error missing");
	if (!cJSON_IsObject(pointer("#/components/securitySchemes/bearerAuth")))
		addf(&f, "components.securitySchemes.bearerAuth missing");

	/* every $ref in the document resolves */
	{
		const cJSON *stack[4096];
		int top = 0;

		stack[top++] = doc;
		while (top) {
			const cJSON *node = stack[--top], *ch;

			if (cJSON_IsObject(node) && jstr(node, "$ref") && !resolve(node))
				addf(&f, "$ref %s does not resolve", jstr(node, "$ref"));
			for (ch = node->child; ch; ch = ch->next)
				if ((cJSON_IsObject(ch) || cJSON_IsArray(ch)) && top < 4096)
					stack[top++] = ch;
		}
	}

	n = doc_ops(ops, MAX_OPS);
	if (n == 0)
		addf(&f, "no operations");
	for (size_t i = 0; i < n; i++) {
		const struct op *op = &ops[i];
		const cJSON *responses = jget(op->obj, "responses"), *r, *p, *sec = jget(op->obj, "security");
		char what[200];
		int probe = strcmp(op->path, "/healthz") == 0 || strcmp(op->path, "/readyz") == 0;

		snprintf(what, sizeof(what), "%s %s", op->upper, op->path);
		if (!jstr(op->obj, "summary") || !*jstr(op->obj, "summary"))
			addf(&f, "%s: no summary", what);
		if (!jstr(op->obj, "description") || !*jstr(op->obj, "description"))
			addf(&f, "%s: no description", what);
		if (!jstr(op->obj, "operationId"))
			addf(&f, "%s: no operationId", what);
		for (size_t j = 0; j < i; j++)
			if (jstr(op->obj, "operationId") && jstr(ops[j].obj, "operationId") &&
			    strcmp(jstr(op->obj, "operationId"), jstr(ops[j].obj, "operationId")) == 0)
				addf(&f, "%s: operationId %s used twice", what, jstr(op->obj, "operationId"));
		if (!cJSON_IsObject(responses) || !responses->child)
			addf(&f, "%s: no responses", what);
		cJSON_ArrayForEach(r, responses) {
			const cJSON *rr = resolve(r), *mt, *sch, *first, *codeenum, *it;
			int known = 0, st = atoi(r->string);

			for (size_t k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++)
				known = known || strcmp(statuses[k], r->string) == 0;
			if (!known)
				addf(&f, "%s: response %s is no status the server answers", what, r->string);
			if (!jstr(rr, "description"))
				addf(&f, "%s: response %s has no description", what, r->string);
			if (st < 400)
				continue;
			/* an error answer: Error, or allOf [Error, {code: enum subset}] */
			mt = jget(jget(rr, "content"), "application/json");
			if (!mt) {
				if (st != 500)
					addf(&f, "%s: error response %s has no application/json content", what, r->string);
				continue;
			}
			sch = jget(mt, "schema");
			first = jget(sch, "allOf") ? cJSON_GetArrayItem(jget(sch, "allOf"), 0) : sch;
			if (!jstr(first, "$ref") || strcmp(jstr(first, "$ref"), "#/components/schemas/Error") != 0)
				addf(&f, "%s: error response %s is not an Error", what, r->string);
			codeenum = jget(jget(jget(jget(jget(cJSON_GetArrayItem(jget(sch, "allOf"), 1), "properties"), "error"),
						  "properties"), "code"), "enum");
			cJSON_ArrayForEach(it, codeenum) {
				const cJSON *cd;
				int in = 0;

				cJSON_ArrayForEach(cd, codes)
					in = in || cJSON_Compare(cd, it, 1);
				if (!in)
					addf(&f, "%s: response %s lists code %s, not in ErrorCode", what, r->string,
					     cJSON_IsString(it) ? it->valuestring : "?");
			}
		}
		/* path parameters: each {x} of the template declared (in: path, required), and no other */
		for (const char *q = strchr(op->path, '{'); q; q = strchr(q + 1, '{')) {
			char name[64];
			const char *end = strchr(q, '}');
			int found = 0;

			snprintf(name, sizeof(name), "%.*s", end ? (int)(end - q - 1) : 0, q + 1);
			cJSON_ArrayForEach(p, jget(op->obj, "parameters")) {
				const cJSON *pp = resolve(p);

				if (jstr(pp, "in") && strcmp(jstr(pp, "in"), "path") == 0 && jstr(pp, "name") &&
				    strcmp(jstr(pp, "name"), name) == 0) {
					found = 1;
					if (!cJSON_IsTrue(jget(pp, "required")))
						addf(&f, "%s: path parameter %s is not required: true", what, name);
				}
			}
			if (!found)
				addf(&f, "%s: path parameter {%s} is not declared", what, name);
		}
		cJSON_ArrayForEach(p, jget(op->obj, "parameters")) {
			const cJSON *pp = resolve(p);
			char needle[80];

			if (!pp || !jstr(pp, "name") || !jstr(pp, "in"))
				addf(&f, "%s: a parameter without name or in", what);
			else if (strcmp(jstr(pp, "in"), "path") == 0 &&
				 (snprintf(needle, sizeof(needle), "{%s}", jstr(pp, "name")), !strstr(op->path, needle)))
				addf(&f, "%s: path parameter %s is not in the template", what, jstr(pp, "name"));
		}
		/* auth: every operation but the probes can answer 401; every write can get a body too large */
		if (!probe && !jget(responses, "401"))
			addf(&f, "%s: 401 not documented", what);
		if (probe && !(cJSON_IsArray(sec) && cJSON_GetArraySize(sec) == 0))
			addf(&f, "%s: a probe must have security: []", what);
		if (!probe && !cJSON_IsArray(sec) && !cJSON_IsArray(jget(doc, "security")))
			addf(&f, "%s: no security requirement", what);
		if (strcmp(op->method, "get") != 0 && !jget(responses, "413"))
			addf(&f, "%s: 413 not documented for a write", what);
		if (jget(op->obj, "requestBody")) {
			const cJSON *rb = resolve(jget(op->obj, "requestBody"));
			const cJSON *mt = jget(jget(rb, "content"), "application/json");

			if (!mt || !jget(mt, "schema") || !jget(mt, "example"))
				addf(&f, "%s: requestBody needs application/json with a schema and an example", what);
			else if (!validate(jget(mt, "schema"), jget(mt, "example"), "requestBody example", &f))
				addf(&f, "%s: its requestBody example does not match its schema", what);
			if (!jget(responses, "400"))
				addf(&f, "%s: takes a body but documents no 400", what);
		}
	}
	fails_done(&f, doc_path);
}
END_TEST

START_TEST(test_routes_match_server)
{
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n = doc_ops(ops, MAX_OPS), nroutes = 0;
	const struct api_route *r;

	for (size_t i = 0; (r = api_route(i)); i++) {
		nroutes++;
		if (!find_op(ops, n, r->method, r->pattern))
			addf(&f, "the server's route %s %s is missing from %s", r->method, r->pattern, doc_path);
	}
	for (size_t i = 0; i < n; i++) {
		int found = 0;

		for (size_t k = 0; (r = api_route(k)); k++)
			found = found || (strcmp(r->method, ops[i].upper) == 0 && strcmp(r->pattern, ops[i].path) == 0);
		if (!found)
			addf(&f, "%s documents %s %s, which is no route of the server (admin/router.c routes[])", doc_path,
			     ops[i].upper, ops[i].path);
	}
	ck_assert_uint_gt(nroutes, 0);
	fails_done(&f, "routes");
}
END_TEST

/* Every documented operation, filled in and sent on seeded state, succeeds as documented. */
START_TEST(test_probe_every_operation)
{
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n = doc_ops(ops, MAX_OPS);

	for (size_t i = 0; i < n; i++) {
		char path[256], *body = example_body(&ops[i]);
		struct request rq = { .method = ops[i].upper, .path = path, .body = body };
		struct answer a;

		seed();
		fill_template(ops[i].path, path, sizeof(path));
		call_serving(api, w, &rq, &a);
		check_answer(&ops[i], &rq, &a, &f);
		if (a.status < 200 || a.status > 299)
			addf(&f, "%s %s: %d on seeded state, want a 2xx: %.300s", rq.method, rq.path, a.status,
			     a.text ? a.text : "");
		if (a.route < 0)
			addf(&f, "%s %s: answered by no route", rq.method, rq.path);
		answer_clear(&a);
		free(body);
	}
	fails_done(&f, "probes");
}
END_TEST

/* ---- error probes ------------------------------------------------------------------ */

enum which_api { A_NORMAL, A_NO_WORKER, A_DOWN, A_TOKEN };

static const struct eprobe {
	enum which_api which;
	const char *method, *tpl, *path;  /* the operation probed (tpl) and the concrete path */
	const char *match, *cursor, *count;
	const char *body, *if_match, *auth;
	const char *pre[2];               /* Redis commands (split on spaces) run after seeding */
	int status;
	const char *code, *field;         /* expected error code and field, or NULL */
} eprobes[] = {
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-new", .body = RULE_BODY, .status = 201 },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule", .body = RULE_BODY, .if_match = "*", .status = 200 },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/bad%20name", .body = RULE_BODY, .status = 400,
	  .code = "invalid_rule", .field = "name" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule", .body = "{", .status = 400, .code = "invalid_json" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule",
	  .body = "{\"match\":\"/doc*\",\"algorithm\":\"leaky_bucket\",\"capacity\":0,\"rate\":5}", .status = 400,
	  .code = "invalid_rule", .field = "capacity" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule",
	  .body = "{\"match\":\"/doc*\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000,\"rate\":1}",
	  .status = 400, .code = "invalid_rule", .field = "rate" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule", .body = RULE_BODY,
	  .if_match = "\"0000000000000000\"", .status = 412, .code = "precondition_failed" },
	{ A_NORMAL, "PUT", "/v1/rules/{name}", "/v1/rules/%zz", .body = RULE_BODY, .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "GET", "/v1/rules/{name}", "/v1/rules/%zz", .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "GET", "/v1/rules/{name}", "/v1/rules/nope", .status = 404, .code = "not_found" },
	{ A_NORMAL, "GET", "/v1/rules/{name}", "/v1/rules/doc-sc",
	  .pre = { "HSET sluice:rules doc-sc {\"name\":\"doc-sc\",\"match\":\"/sc\",\"algorithm\":\"sliding_counter\",\"limit\":5,\"window_ms\":1000,\"sub_windows\":10}",
		   "INCR sluice:rules:version" }, .status = 200 },
	{ A_NORMAL, "DELETE", "/v1/rules/{name}", "/v1/rules/nope", .status = 404, .code = "not_found" },
	{ A_NORMAL, "DELETE", "/v1/rules/{name}", "/v1/rules/doc-rule", .if_match = "\"0000000000000000\"",
	  .status = 412, .code = "precondition_failed" },
	{ A_NORMAL, "DELETE", "/v1/rules/{name}", "/v1/rules/%zz", .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "GET", "/v1/rules", "/v1/rules", .pre = { "DEL sluice:rules", "SET sluice:rules oops" },
	  .status = 500, .code = "redis_refused" },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .count = "0", .status = 400, .code = "invalid_query", .field = "count" },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .cursor = "x", .status = 400, .code = "invalid_query",
	  .field = "cursor" },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .count = "1", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .match = "/doc*", .count = "1000", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths", "/v1/paths", .cursor = "1-0",
	  .pre = { "DEL " SL_REG, "SET " SL_REG " oops" }, .status = 500, .code = "redis_refused" },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Fnowhere", .status = 404, .code = "not_found" },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%zz", .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Fdoc-bad", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Ffree", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Fdoc-log", .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Fsl",
	  .pre = { "HSET sluice:rules doc-sl {\"name\":\"doc-sl\",\"match\":\"/sl\",\"algorithm\":\"sliding_log\",\"limit\":5,\"window_ms\":1000}",
		   "INCR sluice:rules:version" }, .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Ftb",
	  .pre = { "HSET sluice:rules doc-tb {\"name\":\"doc-tb\",\"match\":\"/tb\",\"algorithm\":\"token_bucket\",\"capacity\":4,\"rate\":1}",
		   "INCR sluice:rules:version" }, .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/%2Ffw",
	  .pre = { "HSET sluice:rules doc-fw {\"name\":\"doc-fw\",\"match\":\"/fw\",\"algorithm\":\"fixed_window\",\"limit\":5,\"window_ms\":1000}",
		   "INCR sluice:rules:version" }, .status = 200 },
	{ A_NORMAL, "GET", "/v1/paths/{path}", "/v1/paths/a%00b", .status = 404, .code = "not_found" },
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%zz/reset", .status = 400, .code = "invalid_path" },
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%2Fdoc-bad/reset", .status = 200 },
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%2Fnothing/reset", .status = 200 },
	{ A_NORMAL, "POST", "/v1/paths/{path}/reset", "/v1/paths/%2Fdoc/reset",
	  .pre = { "DEL " SL_REG, "SET " SL_REG " oops" }, .status = 500, .code = "redis_refused" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{}", .status = 400, .code = "invalid_body",
	  .field = "match" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "[", .status = 400, .code = "invalid_json" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"*\",\"dry_run\":\"yes\"}", .status = 400,
	  .code = "invalid_body", .field = "dry_run" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"*\",\"force\":true}", .status = 400,
	  .code = "invalid_body", .field = "force" },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"*\"}", .status = 200 },
	{ A_NORMAL, "POST", "/v1/reset", "/v1/reset", .body = "{\"match\":\"*\"}",
	  .pre = { "DEL " SL_REG, "SET " SL_REG " oops" }, .status = 500, .code = "redis_refused" },
	{ A_NO_WORKER, "GET", "/v1/worker", "/v1/worker", .status = 503, .code = "no_worker" },
	{ A_NO_WORKER, "POST", "/v1/worker/sweep", "/v1/worker/sweep", .status = 503, .code = "no_worker" },
	{ A_NO_WORKER, "GET", "/metrics", "/metrics", .status = 200 },
	{ A_DOWN, "GET", "/readyz", "/readyz", .status = 503, .code = "redis_unavailable" },
	{ A_DOWN, "GET", "/healthz", "/healthz", .status = 200 },
	{ A_DOWN, "GET", "/metrics", "/metrics", .status = 200 },
	{ A_DOWN, "GET", "/v1/rules", "/v1/rules", .status = 503, .code = "redis_unavailable" },
	{ A_DOWN, "PUT", "/v1/rules/{name}", "/v1/rules/doc-rule", .body = RULE_BODY, .status = 503,
	  .code = "redis_unavailable" },
	{ A_DOWN, "GET", "/v1/worker", "/v1/worker", .status = 200 },
	{ A_DOWN, "POST", "/v1/worker/sweep", "/v1/worker/sweep", .status = 503, .code = "redis_unavailable" },
	{ A_TOKEN, "GET", "/v1/rules", "/v1/rules", .status = 401, .code = "unauthorized" },
	{ A_TOKEN, "GET", "/v1/rules", "/v1/rules", .auth = "Bearer wrong", .status = 401, .code = "unauthorized" },
	{ A_TOKEN, "GET", "/v1/rules", "/v1/rules", .auth = "Bearer " TOKEN, .status = 200 },
	{ A_TOKEN, "GET", "/readyz", "/readyz", .status = 200 },
	{ A_TOKEN, "DELETE", "/v1/rules/{name}", "/v1/rules/doc-rule", .auth = "bearer " TOKEN, .status = 200 },
};

/* Run a Redis command given as one string split on spaces (no argument holds a space). */
static void redis_line(const char *line)
{
	char buf[512], *argv[8], *save = NULL;
	int argc = 0;

	snprintf(buf, sizeof(buf), "%s", line);
	for (char *t = strtok_r(buf, " ", &save); t && argc < 8; t = strtok_r(NULL, " ", &save))
		argv[argc++] = t;
	redis_do((const char **)argv, argc);
}

START_TEST(test_error_probes)
{
	const struct eprobe *p = &eprobes[_i];
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n = doc_ops(ops, MAX_OPS);
	const struct op *op = find_op(ops, n, p->method, p->tpl);
	struct request rq = { .method = p->method, .path = p->path, .match = p->match, .cursor = p->cursor,
			      .count = p->count, .body = p->body, .auth = p->auth, .if_match = p->if_match };
	struct redis_target dead = { 0 };
	struct worker *wk = w, *dead_w = NULL;
	struct api *a = api, *own = NULL;
	struct answer ans;
	const cJSON *code, *field;

	ck_assert_msg(op != NULL, "probe %d: %s %s is not documented", _i, p->method, p->tpl);
	seed();
	for (int i = 0; i < 2 && p->pre[i]; i++)
		redis_line(p->pre[i]);
	if (p->which == A_NO_WORKER) {
		a = own = api_make(&target, NULL, NULL, 0);
		wk = NULL;
	} else if (p->which == A_TOKEN) {
		a = own = api_make(&target, w, TOKEN, 1);
	} else if (p->which == A_DOWN) {
		struct sl_error err = { 0 };
		char url[64];

		snprintf(url, sizeof(url), "redis://127.0.0.1:%d/0", test_free_port());
		ck_assert_int_eq(redis_url_parse(url, &dead, &err), 0);
		wk = dead_w = worker_make(&dead);
		a = own = api_make(&dead, dead_w, NULL, 0);
	}
	call_serving(a, wk, &rq, &ans);
	check_answer(op, &rq, &ans, &f);
	if (ans.status != p->status)
		addf(&f, "%s %s: status %d, want %d: %.300s", p->method, p->path, ans.status, p->status,
		     ans.text ? ans.text : "");
	code = jget(jget(ans.json, "error"), "code");
	field = jget(jget(ans.json, "error"), "field");
	if (p->code && !(cJSON_IsString(code) && strcmp(code->valuestring, p->code) == 0))
		addf(&f, "%s %s: code %s, want %s", p->method, p->path, cJSON_IsString(code) ? code->valuestring : "(none)",
		     p->code);
	if (p->field && !(cJSON_IsString(field) && strcmp(field->valuestring, p->field) == 0))
		addf(&f, "%s %s: field %s, want %s", p->method, p->path,
		     cJSON_IsString(field) ? field->valuestring : "(none)", p->field);
	answer_clear(&ans);
	api_free(own);
	worker_free(dead_w);
	redis_target_clear(&dead);
	fails_done(&f, "error probe");
}
END_TEST

/*
 * With a token: writes answer 401 unless authorized, reads too with auth_reads,
 * probes never; and each operation's `security` says the same (the anonymous
 * alternative {} exactly where a request without a token passes auth_reads off).
 */
START_TEST(test_auth_matches_security)
{
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n = doc_ops(ops, MAX_OPS);

	for (int reads = 0; reads <= 1; reads++) {
		struct api *a = api_make(&target, w, TOKEN, reads);

		for (size_t i = 0; i < n; i++) {
			const cJSON *sec = jget(ops[i].obj, "security"), *it;
			char path[256], *body = example_body(&ops[i]);
			struct request rq = { .method = ops[i].upper, .path = path, .body = body };
			struct answer ans;
			int anonymous = 0, bearer = 0, empty = cJSON_IsArray(sec) && cJSON_GetArraySize(sec) == 0;

			if (!sec)
				sec = jget(doc, "security");
			cJSON_ArrayForEach(it, sec) {
				anonymous = anonymous || (cJSON_IsObject(it) && !it->child);
				bearer = bearer || jget(it, "bearerAuth");
			}
			fill_template(ops[i].path, path, sizeof(path));
			seed();
			call_serving(a, w, &rq, &ans);
			check_answer(&ops[i], &rq, &ans, &f);
			if (empty && ans.status == 401)
				addf(&f, "%s %s: 401 although its security is []", rq.method, rq.path);
			if (!empty && reads && ans.status != 401)
				addf(&f, "%s %s: %d without a token under auth_reads, want 401", rq.method, rq.path,
				     ans.status);
			if (!empty && !bearer)
				addf(&f, "%s %s: answers 401 without a token but its security lists no bearerAuth",
				     rq.method, rq.path);
			if (!empty && !reads && (ans.status == 401) == anonymous)
				addf(&f, "%s %s: %d without a token (auth_reads off), but its security %s the anonymous {}",
				     rq.method, rq.path, ans.status, anonymous ? "lists" : "does not list");
			answer_clear(&ans);
			free(body);
		}
		api_free(a);
	}
	fails_done(&f, "auth");
}
END_TEST

/* An undocumented method on every documented path: 405 with Allow = the documented methods. */
START_TEST(test_405_allow_matches_document)
{
	struct fails f = { 0 };
	const cJSON *item, *nmna = resolve(pointer("#/components/responses/MethodNotAllowed"));
	const cJSON *nr = resolve(pointer("#/components/responses/NoRoute"));
	struct answer ans;

	ck_assert_msg(nmna && nr, "components.responses MethodNotAllowed and NoRoute are needed");
	cJSON_ArrayForEach(item, jget(doc, "paths")) {
		char path[256], want[128] = "", got[128] = "";
		struct request rq = { .method = "PATCH", .path = path };
		size_t wl = 0;
		const char *names[8];
		int nn = 0;

		fill_template(item->string, path, sizeof(path));
		for (size_t m = 0; m < sizeof(http_methods) / sizeof(http_methods[0]); m++)
			if (jget(item, http_methods[m]))
				names[nn++] = http_methods[m];
		/* as sets: upper-case, sorted */
		for (int i = 0; i < nn; i++)
			for (int j = i + 1; j < nn; j++)
				if (strcmp(names[j], names[i]) < 0) {
					const char *t = names[i];

					names[i] = names[j];
					names[j] = t;
				}
		for (int i = 0; i < nn; i++) {
			wl += (size_t)snprintf(want + wl, sizeof(want) - wl, "%s%s", i ? "," : "", names[i]);
		}
		for (char *q = want; *q; q++)
			*q = (char)(*q >= 'a' && *q <= 'z' ? *q - 32 : *q);
		call(api, &rq, &ans);
		if (ans.status != 405) {
			addf(&f, "PATCH %s: %d, want 405", path, ans.status);
		} else {
			/* the Allow header, sorted */
			char tmp[128], *parts[8], *save = NULL;
			int np = 0;
			size_t gl = 0;

			snprintf(tmp, sizeof(tmp), "%s", ans.allow ? ans.allow : "");
			for (char *t = strtok_r(tmp, ", ", &save); t && np < 8; t = strtok_r(NULL, ", ", &save))
				parts[np++] = t;
			for (int i = 0; i < np; i++)
				for (int j = i + 1; j < np; j++)
					if (strcmp(parts[j], parts[i]) < 0) {
						char *t = parts[i];

						parts[i] = parts[j];
						parts[j] = t;
					}
			for (int i = 0; i < np; i++)
				gl += (size_t)snprintf(got + gl, sizeof(got) - gl, "%s%s", i ? "," : "", parts[i]);
			if (strcmp(got, want) != 0)
				addf(&f, "%s: Allow %s, the document has %s", item->string, got, want);
			if (!validate(jget(jget(jget(nmna, "content"), "application/json"), "schema"), ans.json, "405 $", &f))
				addf(&f, "PATCH %s: the 405 body does not match MethodNotAllowed", path);
		}
		answer_clear(&ans);
	}
	{
		struct request rq = { .method = "GET", .path = "/v1/doc-no-such-route" };

		call(api, &rq, &ans);
		if (ans.status != 404 || !validate(jget(jget(jget(nr, "content"), "application/json"), "schema"), ans.json,
						   "404 $", &f))
			addf(&f, "GET %s: %d %s, want a 404 matching NoRoute", rq.path, ans.status, ans.text);
		answer_clear(&ans);
	}
	fails_done(&f, "405");
}
END_TEST

/* ---- error codes: the document's enum and the source's codes ----------------------- */

struct strset {
	char v[64][48];
	int n;
};

static void set_add(struct strset *s, const char *str, size_t len)
{
	if (len == 0 || len >= sizeof(s->v[0]))
		return;
	for (int i = 0; i < s->n; i++)
		if (strlen(s->v[i]) == len && memcmp(s->v[i], str, len) == 0)
			return;
	ck_assert_int_lt(s->n, 64);
	memcpy(s->v[s->n], str, len);
	s->v[s->n++][len] = '\0';
}

static int set_has(const struct strset *s, const char *str)
{
	for (int i = 0; i < s->n; i++)
		if (strcmp(s->v[i], str) == 0)
			return 1;
	return 0;
}

/*
 * The codes a source file emits: the string literals of the code argument of
 * [reply_]fail(res, status, <code>, ...) and send_error(c, status, <code>, ...) (a
 * ternary gives two), and the literal "\"code\":\"<code>\"" of a canned body.
 */
static void scan_codes(const char *src, struct strset *out)
{
	static const char *const calls[] = { "fail(res,", "send_error(c," };
	static const char canned[] = "\\\"code\\\":\\\"";

	for (size_t k = 0; k < sizeof(calls) / sizeof(calls[0]); k++)
		for (const char *p = strstr(src, calls[k]); p; p = strstr(p + 1, calls[k])) {
			const char *q = p + strlen(calls[k]);
			int depth = 0;

			q = strchr(q, ','); /* past the status */
			if (!q)
				break;
			for (q++; *q && !(depth == 0 && (*q == ',' || *q == ')')); q++) {
				if (*q == '(')
					depth++;
				else if (*q == ')')
					depth--;
				else if (*q == '"') {
					const char *s = ++q;

					while (*q && *q != '"')
						q += *q == '\\' ? 2 : 1;
					if (strspn(s, "abcdefghijklmnopqrstuvwxyz_") == (size_t)(q - s))
						set_add(out, s, (size_t)(q - s));
				}
			}
		}
	for (const char *p = strstr(src, canned); p; p = strstr(p + 1, canned)) {
		const char *s = p + strlen(canned);

		set_add(out, s, strspn(s, "abcdefghijklmnopqrstuvwxyz_"));
	}
}

START_TEST(test_error_codes_match_source)
{
	const char *dir = getenv("SLUICE_SRCDIR") && *getenv("SLUICE_SRCDIR") ? getenv("SLUICE_SRCDIR") : ".";
	const cJSON *codes = jget(resolve(pointer("#/components/schemas/ErrorCode")), "enum"), *it;
	struct strset src = { .n = 0 }, documented = { .n = 0 };
	struct fails f = { 0 };
	char pattern[600];
	glob_t files;

	snprintf(pattern, sizeof(pattern), "%s/admin/*.c", dir);
	ck_assert_msg(glob(pattern, 0, NULL, &files) == 0 && files.gl_pathc >= 2,
		      "cannot find %s (run from the repository root, or set SLUICE_SRCDIR)", pattern);
	for (size_t i = 0; i < files.gl_pathc; i++) {
		char *text = slurp(files.gl_pathv[i], NULL);

		ck_assert_msg(text != NULL, "cannot read %s: %s", files.gl_pathv[i], strerror(errno));
		scan_codes(text, &src);
		free(text);
	}
	globfree(&files);
	ck_assert_msg(src.n >= 5, "found only %d error codes in admin/*.c: the scan is broken", src.n);
	cJSON_ArrayForEach(it, codes)
		if (cJSON_IsString(it))
			set_add(&documented, it->valuestring, strlen(it->valuestring));
	for (int i = 0; i < src.n; i++)
		if (!set_has(&documented, src.v[i]))
			addf(&f, "the code \"%s\" of admin/*.c is missing from ErrorCode in %s", src.v[i], doc_path);
	for (int i = 0; i < documented.n; i++)
		if (!set_has(&src, documented.v[i]))
			addf(&f, "ErrorCode lists \"%s\", which no admin/*.c emits", documented.v[i]);
	fails_done(&f, "error codes");
}
END_TEST

/* ---- through the HTTP server: 413, ETag ---------------------------------------------- */

/* A request with a JSON body (no Expect: 100-continue), through the harness's client. */
static void http(int port, const char *method, const char *path, const char *body, struct test_http_res *h)
{
	test_http(port, method, path, body, TEST_HTTP_NO_EXPECT, h);
}

/* An HTTP answer checked as check_answer does (content type, schema, ETag). */
static void check_http(const struct op *op, const char *method, const char *path, const struct test_http_res *h,
		       struct fails *f)
{
	struct request rq = { .method = method, .path = path };
	struct answer a = { 0 };

	a.status = (int)h->status;
	a.route = -1;
	snprintf(a.etag, sizeof(a.etag), "%s", h->etag);
	if (strncmp(h->ctype, "application/json", 16) == 0) {
		a.json = cJSON_Parse(h->body);
		a.text = strdup(h->body);
		if (!a.json)
			addf(f, "%s %s: Content-Type %s but the body is not JSON: %.200s", method, path, h->ctype, h->body);
	} else {
		a.is_text = 1;
		a.text = strdup(h->body);
		a.ctype = h->ctype;
	}
	check_answer(op, &rq, &a, f);
	answer_clear(&a);
}

START_TEST(test_http_413_and_headers)
{
	struct server_config sc = { .host = "127.0.0.1", .port = 0, .max_body_bytes = 256, .max_connections = 8,
				    .idle_timeout_s = 5 };
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n = doc_ops(ops, MAX_OPS);
	const struct op *put = find_op(ops, n, "PUT", "/v1/rules/{name}"), *get = find_op(ops, n, "GET", "/v1/rules/{name}");
	const struct op *metrics = find_op(ops, n, "GET", "/metrics"), *reset = find_op(ops, n, "POST", "/v1/reset");
	char err[256] = "", big[1024];
	struct server *s;
	struct test_http_res h;
	int port;

	ck_assert_msg(put && get && metrics && reset, "PUT and GET /v1/rules/{name}, GET /metrics, POST /v1/reset documented");
	ck_assert_int_eq(curl_global_init(CURL_GLOBAL_DEFAULT), 0);
	s = server_start(&sc, api_make(&target, w, NULL, 0), err, sizeof(err));
	ck_assert_msg(s != NULL, "server_start: %s", err);
	port = server_port(s);

	http(port, "PUT", "/v1/rules/doc-rule", RULE_BODY, &h);
	check_http(put, "PUT", "/v1/rules/doc-rule", &h, &f);
	if (h.status != 201)
		addf(&f, "PUT /v1/rules/doc-rule over HTTP: %ld %s", h.status, h.body);
	http(port, "GET", "/v1/rules/doc-rule", NULL, &h);
	check_http(get, "GET", "/v1/rules/doc-rule", &h, &f);
	if (h.status != 200 || !h.etag[0])
		addf(&f, "GET /v1/rules/doc-rule over HTTP: %ld, ETag \"%s\"", h.status, h.etag);
	http(port, "GET", "/metrics", NULL, &h);
	check_http(metrics, "GET", "/metrics", &h, &f);

	/* a body over max_body_bytes: 413 from the server, as documented for writes */
	memset(big, ' ', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, RULE_BODY, strlen(RULE_BODY));
	http(port, "PUT", "/v1/rules/doc-rule", big, &h);
	check_http(put, "PUT", "/v1/rules/doc-rule", &h, &f);
	if (h.status != 413)
		addf(&f, "PUT with a %zu-byte body over HTTP (limit 256): %ld, want 413", strlen(big), h.status);
	memcpy(big, "{\"match\":\"*\"}", 13);
	http(port, "POST", "/v1/reset", big, &h);
	check_http(reset, "POST", "/v1/reset", &h, &f);
	if (h.status != 413)
		addf(&f, "POST /v1/reset with a %zu-byte body over HTTP: %ld, want 413", strlen(big), h.status);

	server_stop(s);
	curl_global_cleanup();
	fails_done(&f, "http");
}
END_TEST

/* ---- suite ---------------------------------------------------------------------- */

static Suite *openapi_suite(void)
{
	Suite *s = suite_create("openapi");
	TCase *tc;

#define TC(name)                                                      \
	do {                                                          \
		tc = tcase_create(name);                              \
		tcase_add_unchecked_fixture(tc, srv_start, srv_stop); \
		tcase_add_checked_fixture(tc, setup, teardown);       \
		tcase_set_timeout(tc, 120);                           \
		suite_add_tcase(s, tc);                               \
	} while (0)

	TC("document");
	tcase_add_test(tc, test_document_well_formed);
	tcase_add_test(tc, test_routes_match_server);
	tcase_add_test(tc, test_error_codes_match_source);

	TC("probes");
	tcase_add_test(tc, test_probe_every_operation);
	tcase_add_loop_test(tc, test_error_probes, 0, (int)(sizeof(eprobes) / sizeof(eprobes[0])));
	tcase_add_test(tc, test_auth_matches_security);
	tcase_add_test(tc, test_405_allow_matches_document);

	TC("http");
	tcase_add_test(tc, test_http_413_and_headers);
#undef TC
	return s;
}

int main(void)
{
	return test_run_suite(openapi_suite());
}
