/*
 * The documents built into the binary: GET /openapi.json (docs/openapi.json)
 * and GET / (the operator page, admin/page/index.html).  Neither touches Redis.
 */
#include <string.h>

#include "admin/reply.h"
#include "admin/routes.h"

/* tools/embed_file.c's output of docs/openapi.json and admin/page/index.html (build/<flavour>/gen/) */
extern const char admin_openapi_json[];
extern const size_t admin_openapi_json_len;
extern const char admin_page_html[];
extern const size_t admin_page_html_len;

void route_openapi(struct api_response *res)
{
	/* a copy the server frees, as every text body (some 100 KB, asked for rarely) */
	reply_text(res, strndup(admin_openapi_json, admin_openapi_json_len), "application/json");
}

void route_page(struct api_response *res)
{
	/* some 30 KB, copied as above; asked for once per page load (its data comes from the JSON routes) */
	reply_text(res, strndup(admin_page_html, admin_page_html_len), "text/html; charset=utf-8");
	res->cache_control = "no-cache"; /* a new binary's page is used at the next load */
}
