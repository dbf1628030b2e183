#include "tests/openapi_fixture.h"

#include "core/log.h"

#include <math.h>
#include <regex.h>
#include <stdarg.h>
#include <strings.h>

cJSON *doc;
char doc_path[512];

void addf(struct fails *f, const char *fmt, ...)
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

void fails_done(struct fails *f, const char *what)
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

char *slurp(const char *path, size_t *len)
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

const cJSON *jget(const cJSON *o, const char *key)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, key) : NULL;
}

const char *jget_str(const cJSON *o, const char *key)
{
	const cJSON *v = jget(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

const cJSON *pointer(const char *ref)
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

const cJSON *resolve(const cJSON *n)
{
	for (int i = 0; n && i < 16; i++) {
		const char *ref = jget_str(n, "$ref");

		if (!ref)
			return n;
		n = pointer(ref);
	}
	return NULL;
}

const char *const http_methods[N_HTTP_METHODS] = { "get", "put", "post", "delete", "options", "head", "patch", "trace" };

size_t doc_ops(struct op *out, size_t cap)
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

const struct op *find_op(const struct op *ops, size_t n, const char *method, const char *path)
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

/* Does `v` validate against `schema` (no messages)? */
static int valid_quiet(const cJSON *schema, const cJSON *v)
{
	return validate(schema, v, "", NULL);
}

int validate(const cJSON *schema_in, const cJSON *v, const char *at, struct fails *f)
{
	const cJSON *schema = resolve(schema_in), *k, *t, *e;
	char sub[512];
	int ok = 1, is_null = cJSON_IsNull(v), nullable;

	if (!cJSON_IsObject(schema)) {
		addf(f, "%s: schema does not resolve (%s)", at, jget_str(schema_in, "$ref") ? jget_str(schema_in, "$ref") : "?");
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
					addf(f, "   oneOf[%d] %s: %.300s", i++, jget_str(r, "title") ? jget_str(r, "title") : "",
					     g.buf ? g.buf : "");
					free(g.buf);
				}
		}
		ok = ok && matches == 1;
	}
	return ok;
}

/* ---- Redis state and requests -------------------------------------------------- */

void redis_do(const char **argv, int argc)
{
	redisReply *r = test_cmd_argv(c, argc, argv, NULL);

	ck_assert_msg(r->type != REDIS_REPLY_ERROR, "%s: %s", argv[0], r->str);
	freeReplyObject(r);
}

void answer_clear(struct answer *a)
{
	cJSON_Delete(a->json);
	free(a->text);
	memset(a, 0, sizeof(*a));
}

void call_answer(struct api *a, const struct request *rq, struct answer *out)
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
	out->cache_control = res.cache_control;
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

void call_serving(struct api *a, struct worker *wk, const struct request *rq, struct answer *out)
{
	struct sweeps sw;

	if (!wk) {
		call_answer(a, rq, out);
		return;
	}
	sweeps_start(&sw, wk);
	call_answer(a, rq, out);
	sweeps_stop(&sw);
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

void check_answer(const struct op *op, const struct request *rq, const struct answer *a, struct fails *f)
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
	if (a->is_text && a->ctype && strncmp(a->ctype, "application/json", 16) == 0) {
		/* a JSON document served as it is (GET /openapi.json): parsed, checked as a JSON body */
		const cJSON *mt = jget(content, "application/json");
		cJSON *served = cJSON_Parse(a->text);
		struct fails g = { 0 };

		snprintf(at, sizeof(at), "%d $", a->status);
		if (!served)
			addf(f, "%s: an application/json text body that is not JSON", what);
		else if (!mt)
			addf(f, "%s: a JSON body where %d documents no application/json content", what, a->status);
		else if (!validate(jget(mt, "schema"), served, at, &g))
			addf(f, "%s: the body does not match the documented schema: %.600s", what, g.buf ? g.buf : "?");
		free(g.buf);
		cJSON_Delete(served);
	} else if (a->is_text) {
		/* a text body: its media type (the content type before any parameter) documented */
		char media[64];
		const cJSON *mt;

		snprintf(media, sizeof(media), "%.*s", a->ctype ? (int)strcspn(a->ctype, "; ") : 0, a->ctype ? a->ctype : "");
		mt = jget(content, media);
		if (!mt)
			addf(f, "%s: a text body (%s) where %d documents no %s content", what, a->ctype ? a->ctype : "(none)",
			     a->status, media[0] ? media : "(no type)");
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
	if ((a->cache_control != NULL) != (jget(headers, "Cache-Control") != NULL))
		addf(f, "%s: Cache-Control %s, documented %s", what, a->cache_control ? a->cache_control : "not sent",
		     jget(headers, "Cache-Control") ? "yes" : "no");
	else if (a->cache_control && !header_value_ok(resolve(jget(headers, "Cache-Control")), a->cache_control))
		addf(f, "%s: Cache-Control %s does not match its documented schema", what, a->cache_control);
}

/* ---- probes of documented operations --------------------------------------------- */

/* The id fill_template puts for {id}: seed_jobs's last job. */
static char job_id[24] = "0";

void seed_jobs(int n)
{
	for (int i = 0; i < n; i++) {
		struct request rq = { .method = "POST", .path = "/v1/reset", .body = "{\"match\":\"*\",\"dry_run\":true}" };
		struct answer a;
		cJSON *o, *id;

		call_answer(api, &rq, &a);
		ck_assert_msg(a.status == 202, "seeding POST /v1/reset: %d %s", a.status, a.text);
		o = cJSON_Parse(a.text);
		id = cJSON_GetObjectItemCaseSensitive(o, "id");
		ck_assert_msg(cJSON_IsString(id), "a job id: %s", a.text);
		snprintf(job_id, sizeof(job_id), "%s", id->valuestring);
		cJSON_Delete(o);
		answer_clear(&a);
	}
}

void fill_template(const char *tpl, char *out, size_t cap)
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
			else if (strcmp(name, "id") == 0)
				snprintf(val, sizeof(val), "%s", job_id);
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

char *example_body(const struct op *op)
{
	const cJSON *rb = resolve(jget(op->obj, "requestBody"));
	const cJSON *ex = jget(jget(jget(rb, "content"), "application/json"), "example");

	if (!rb)
		return NULL;
	return ex ? cJSON_PrintUnformatted(ex) : strdup("{}");
}

void seed(void)
{
	long long t = test_server_ms(c) + AHEAD_MS;
	const char *bad[] = { "SET", test_key("/doc-bad", "leaky_bucket"), "a string" };
	const char *regbad[] = { "ZADD", test_registry("leaky_bucket", "/doc-bad"), "5", "/doc-bad" };
	const char *regbin[] = { "ZADD", test_registry("leaky_bucket", "\xff/bin"), "5", "\xff/bin" };
	/* a sliding log as its client leaves it (key layout 2): entries, the recorded parameters, its due time */
	const char *log[] = { "ZADD", test_key("/doc-log", "sliding_log"), test_num(t), "a" };
	const char *logmeta[] = { "HSET", test_key("/doc-log", "sliding_log_meta"), "limit", "10", "window_ms", "60000", "rule", "" };
	const char *logreg[] = { "ZADD", test_registry("sliding_log", "/doc-log"), test_num(t + 60000), "/doc-log" };
	struct request rq = { .method = "PUT", .path = "/v1/rules/doc-rule", .body = RULE_BODY };
	struct answer a;

	test_redis_flush(c);
	call_answer(api, &rq, &a);
	ck_assert_msg(a.status == 201, "seeding PUT %s: %d %s", rq.path, a.status, a.text);
	answer_clear(&a);
	ck_assert_int_eq(test_acquire(c, TEST_EVAL, "leaky_bucket", "/doc", t, "20", "5", NULL), 1);
	ck_assert_int_eq(test_acquire(c, TEST_EVAL, "leaky_bucket", "/doc", t + 1, "20", "5", NULL), 1);
	ck_assert_int_eq(test_acquire(c, TEST_EVAL, "leaky_bucket", "/free", t, "20", "5", NULL), 1);
	redis_do(log, 4);
	redis_do(logmeta, 8);
	redis_do(logreg, 4);
	redis_do(bad, 3);
	redis_do(regbad, 4);
	redis_do(regbin, 4);
}

void openapi_setup(void)
{
	log_set_level(LOG_WARN);
	doc_load();
	objects_up();
}

void openapi_teardown(void)
{
	objects_down();
	cJSON_Delete(doc);
	doc = NULL;
}
