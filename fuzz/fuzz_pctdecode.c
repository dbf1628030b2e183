/*
 * fuzz_pctdecode: the admin API's percent-decoding.  Paths and query values
 * are decoded by libmicrohttpd's MHD_http_unescape (admin/router.c's
 * segs_split, admin/server_req.c's query_arg), which keeps a malformed
 * %-sequence as it is without saying so; the router refuses those itself
 * (400 invalid_path).  The input is a path segment (up to its first NUL: a
 * URL carries none).  Checked against the decoder of RFC 3986 section 2.1
 * written here:
 *   - a well-formed segment decodes to exactly the reference's bytes;
 *   - GET /v1/paths/<segment> (one segment: no '/') is routed to
 *     GET /v1/paths/{path} when it is well formed, to no route when not
 *     (api_lane_of, the route lookup api_handle uses).
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "admin/api.h"
#include "fuzz/harness.h"

static int hexval(unsigned char c)
{
	return isdigit(c) ? c - '0' : tolower(c) - 'a' + 10;
}

/* RFC 3986's decoding of `n` bytes of `s` into `out` (room for n): its length, or -1 when malformed. */
static long ref_decode(const char *s, size_t n, char *out)
{
	size_t o = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c != '%') {
			out[o++] = (char)c;
			continue;
		}
		if (i + 2 >= n || !isxdigit((unsigned char)s[i + 1]) || !isxdigit((unsigned char)s[i + 2]))
			return -1;
		out[o++] = (char)(hexval((unsigned char)s[i + 1]) * 16 + hexval((unsigned char)s[i + 2]));
		i += 2;
	}
	return (long)o;
}

/* The index of route GET /v1/paths/{path} (api_route). */
static int path_get_route(void)
{
	const struct api_route *r;

	for (size_t i = 0; (r = api_route(i)); i++)
		if (!strcmp(r->method, "GET") && !strcmp(r->pattern, "/v1/paths/{path}"))
			return (int)i;
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = strnlen((const char *)data, size);
	char *seg = strndup((const char *)data, n), *ref = malloc(n + 1), *url = malloc(n + 16);
	long want;
	size_t got;
	int route;

	if (!seg || !ref || !url)
		abort();
	want = ref_decode(seg, n, ref);
	snprintf(url, n + 16, "/v1/paths/%s", seg);
	got = MHD_http_unescape(seg);
	if (want >= 0 && ((size_t)want != got || memcmp(seg, ref, got) != 0)) {
		fuzz_show("segment", (const char *)data, n);
		fuzz_show("MHD_http_unescape", seg, got);
		fuzz_show("RFC 3986", ref, (size_t)want);
		abort();
	}
	api_lane_of("GET", url, &route);
	if (n && !memchr(data, '/', n) && route != (want >= 0 ? path_get_route() : -1)) {
		fuzz_show("segment", (const char *)data, n);
		fprintf(stderr, "fuzz_pctdecode: %s, yet GET /v1/paths/<it> routes to %d\n",
			want >= 0 ? "well formed" : "malformed", route);
		abort();
	}
	free(seg);
	free(ref);
	free(url);
	return 0;
}
