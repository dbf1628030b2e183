#ifndef SLUICE_CONFIG_H
#define SLUICE_CONFIG_H
/*
 * Daemon configuration: defaults, then the JSON config file, then flags
 * (sluiced/options.c).  Every error names the field and changes nothing.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/layout.h"
#include "core/log.h"
#include "core/rules.h"

/* Where Redis is: redis://[[user]:password@]host[:port][/db] or unix:///path[?db=N]. */
struct redis_target {
	char *host;      /* TCP host, or NULL for a unix socket */
	int port;        /* TCP port, default 6379 */
	char *socket;    /* unix socket path, or NULL */
	char *user;      /* ACL user, or NULL */
	char *password;  /* or NULL */
	int db;          /* SELECT index, default 0 */
};

/* Parse `url`; 0 and *out (caller calls redis_target_clear), or -EINVAL with `err`. */
int redis_url_parse(const char *url, struct redis_target *out, struct sl_error *err);
void redis_target_clear(struct redis_target *t);
/* "host:port/db" or "unix:/path" (no password) for logs; writes `buf`, returns it. */
const char *redis_target_describe(const struct redis_target *t, char *buf, size_t cap);

/* Parse "HOST:PORT" or "[V6]:PORT"; port 0..65535 (0 = any). 0 or -EINVAL with `err`. */
int listen_parse(const char *s, const char *field, char **host, int *port, struct sl_error *err);

struct config {
	char *redis_url;             /* owned; default redis://127.0.0.1:6379/0 */
	struct redis_target redis;
	char *listen_host;           /* owned; default 127.0.0.1 */
	int listen_port;             /* default 8080 */
	char *prefix;                /* key prefix, default "sluice:" */
	int64_t drain_interval_ms;   /* default 100 */
	int64_t prune_interval_ms;   /* default 1000 */
	int64_t sweep_budget_ms;     /* per tick; 0 = 80% of the job's interval */
	int64_t batch_size;          /* paths per SSCAN and per script call, default 500 */
	int64_t redis_timeout_ms;    /* connect and command timeout, default 500 (bounds SIGTERM's wait) */
	int64_t max_body_bytes;      /* admin request bodies, default 65536 */
	int64_t max_connections;     /* admin connections, default 64 */
	int64_t idle_timeout_s;      /* admin connections idle this long are closed, default 30 */
	enum log_level log_level;    /* default info */
	char *admin_token_file;      /* owned or NULL: file holding the admin bearer token */
	char *admin_token_env;       /* owned: environment variable with the token, default SLUICE_ADMIN_TOKEN */
	int admin_auth_reads;        /* 1: reads need the token too (probes stay open) */
	int insecure;                /* --insecure: allow a non-loopback listen address without a token */
	char *admin_token;           /* owned or NULL: the token, filled by config_load_token() */
	struct rule **rules;         /* owned, from the config file's "rules" */
	size_t nrules;
	struct layout *layouts;      /* owned, foreign layouts from the config file's "layouts" */
	size_t nlayouts;
};

/* Fill the defaults; 0 or -ENOMEM. */
int config_defaults(struct config *cfg);
/*
 * Apply the JSON text of a config file over `cfg`.  On error returns -EINVAL
 * with `err` naming the field, and `cfg` is unchanged.
 */
int config_apply_json(struct config *cfg, const char *text, size_t len, struct sl_error *err);
/* Read `path` and apply it; -errno with `err` (field = the path) when it cannot be read. */
int config_apply_file(struct config *cfg, const char *path, struct sl_error *err);
/* Set redis_url (and the parsed target) from `url`; -EINVAL with `err`, cfg unchanged. */
int config_set_redis(struct config *cfg, const char *url, const char *field, struct sl_error *err);
/*
 * Fill cfg->admin_token from admin_token_file (trailing newline stripped) or,
 * when no file is named, from the environment variable admin_token_env; a
 * token is never taken from a flag (it would show in ps).  No token at all is
 * not an error (cfg->admin_token stays NULL).  -EINVAL with `err` when the
 * file cannot be read, is empty, larger than 4 KiB or holds NUL bytes.
 */
int config_load_token(struct config *cfg, struct sl_error *err);
void config_free(struct config *cfg);

#endif
