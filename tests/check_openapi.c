/*
 * Keeps docs/openapi.json true to the code, the document itself:
 *
 *   document   the file parses, is OpenAPI 3.0.3, every $ref resolves, every
 *              operation has a summary, a description, its path parameters and
 *              responses of known statuses; error answers are Error objects
 *   routes     the (method, path template) pairs it documents are exactly the
 *              server's routes (api_route), both ways
 *   codes      the ErrorCode enum equals the codes the admin/ sources
 *              can emit (read from every admin/ .c file)
 *
 * check_openapi_probes.c calls every documented operation.  The fixture is
 * tests/openapi_fixture.h's.
 */
#include "tests/openapi_fixture.h"

#include <glob.h>

START_TEST(test_document_well_formed)
{
	struct fails f = { 0 };
	struct op ops[MAX_OPS];
	size_t n;
	const cJSON *codes = jget(resolve(pointer("#/components/schemas/ErrorCode")), "enum");
	static const char *const statuses[] = { "200", "201", "202", "400", "401", "404", "405", "409",
						"412", "413", "429", "500", "503" };

	if (!cJSON_IsString(jget(doc, "openapi")) || strcmp(jget_str(doc, "openapi"), "3.0.3") != 0)
		addf(&f, "\"openapi\" is not \"3.0.3\"");
	if (!jget_str(jget(doc, "info"), "title") || !jget_str(jget(doc, "info"), "version"))
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

			if (cJSON_IsObject(node) && jget_str(node, "$ref") && !resolve(node))
				addf(&f, "$ref %s does not resolve", jget_str(node, "$ref"));
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
		/* the probes, and the operator page (static, no data): open even with auth_reads */
		int probe = strcmp(op->path, "/healthz") == 0 || strcmp(op->path, "/readyz") == 0 ||
			    strcmp(op->path, "/") == 0;

		snprintf(what, sizeof(what), "%s %s", op->upper, op->path);
		if (!jget_str(op->obj, "summary") || !*jget_str(op->obj, "summary"))
			addf(&f, "%s: no summary", what);
		if (!jget_str(op->obj, "description") || !*jget_str(op->obj, "description"))
			addf(&f, "%s: no description", what);
		if (!jget_str(op->obj, "operationId"))
			addf(&f, "%s: no operationId", what);
		for (size_t j = 0; j < i; j++)
			if (jget_str(op->obj, "operationId") && jget_str(ops[j].obj, "operationId") &&
			    strcmp(jget_str(op->obj, "operationId"), jget_str(ops[j].obj, "operationId")) == 0)
				addf(&f, "%s: operationId %s used twice", what, jget_str(op->obj, "operationId"));
		if (!cJSON_IsObject(responses) || !responses->child)
			addf(&f, "%s: no responses", what);
		cJSON_ArrayForEach(r, responses) {
			const cJSON *rr = resolve(r), *mt, *sch, *first, *codeenum, *it;
			int known = 0, st = atoi(r->string);

			for (size_t k = 0; k < sizeof(statuses) / sizeof(statuses[0]); k++)
				known = known || strcmp(statuses[k], r->string) == 0;
			if (!known)
				addf(&f, "%s: response %s is no status the server answers", what, r->string);
			if (!jget_str(rr, "description"))
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
			if (!jget_str(first, "$ref") || strcmp(jget_str(first, "$ref"), "#/components/schemas/Error") != 0)
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

				if (jget_str(pp, "in") && strcmp(jget_str(pp, "in"), "path") == 0 && jget_str(pp, "name") &&
				    strcmp(jget_str(pp, "name"), name) == 0) {
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

			if (!pp || !jget_str(pp, "name") || !jget_str(pp, "in"))
				addf(&f, "%s: a parameter without name or in", what);
			else if (strcmp(jget_str(pp, "in"), "path") == 0 &&
				 (snprintf(needle, sizeof(needle), "{%s}", jget_str(pp, "name")), !strstr(op->path, needle)))
				addf(&f, "%s: path parameter %s is not in the template", what, jget_str(pp, "name"));
		}
		/* auth: every operation but the probes can answer 401; every write can get a body too large */
		if (!probe && !jget(responses, "401"))
			addf(&f, "%s: 401 not documented", what);
		if (probe && !(cJSON_IsArray(sec) && cJSON_GetArraySize(sec) == 0))
			addf(&f, "%s: a probe (or the page) must have security: []", what);
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
	static const char *const calls[] = { "fail(res,", "send_error(s, c,", "refuse(s, c, r, method, url," };
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

static Suite *openapi_suite(void)
{
	Suite *s = suite_create("openapi");
	TCase *tc;

	tc = test_tcase(s, "document", openapi_setup, openapi_teardown, 120);
	tcase_add_test(tc, test_document_well_formed);
	tcase_add_test(tc, test_routes_match_server);
	tcase_add_test(tc, test_error_codes_match_source);
	return s;
}

int main(void)
{
	return test_run_suite(openapi_suite());
}
