/* GET /openapi.json: the OpenAPI document of this API, docs/openapi.json as built in. */
#include <string.h>

#include "admin/reply.h"
#include "admin/routes.h"

/* tools/embed_file.c's output of docs/openapi.json (build/<flavour>/gen/openapi_gen.c) */
extern const char admin_openapi_json[];
extern const size_t admin_openapi_json_len;

void route_openapi(struct api_response *res)
{
	/* a copy the server frees, as every text body (some 100 KB, asked for rarely) */
	reply_text(res, strndup(admin_openapi_json, admin_openapi_json_len), "application/json");
}
