#ifndef SLUICE_CONFIG_H
#define SLUICE_CONFIG_H
/*
 * Daemon configuration: defaults, then the JSON config file, then flags
 * (daemon/options.c).  Every error names the field and changes nothing.
 * Where Redis is lives in core/redis_target.h, the admin token in core/token.h.
 */
#include <stddef.h>
#include <stdint.h>

#include "core/error.h"
#include "core/layout.h"
#include "core/log.h"
#include "core/redis_target.h"
#include "core/rules.h"

/* Shard leases (DESIGN.md "Several daemons"; worker/lease.h): their TTL, ms */
#define CONFIG_LEASE_TTL_DEFAULT_MS 2000
#define CONFIG_LEASE_TTL_MIN_MS 300
#define CONFIG_LEASE_TTL_MAX_MS 600000
/* Longest daemon id, bytes */
#define CONFIG_ID_MAX 64

/* The scripts' own default skew horizon (lua/lib/skew.lua SKEW_MS), ms. */
#define CONFIG_SKEW_DEFAULT_MS 10000

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
	int64_t max_clock_skew_ms;   /* the skew horizon (DESIGN.md "Time"), 0..3600000, default
				      * CONFIG_SKEW_DEFAULT_MS: how far a client's clock may lag Redis and
				      * still be held to its rule; written into every shard's rules copy */
	char *id;                    /* owned or NULL: this daemon's id among several ("id"; NULL: the
				      * daemon makes one, "<hostname>:<pid>:<6 hex random>") */
	int64_t lease_ttl_ms;        /* shard leases' TTL, CONFIG_LEASE_TTL_MIN_MS..MAX, default 2000 */
	int64_t max_body_bytes;      /* admin request bodies, default 65536 */
	int64_t max_connections;     /* admin connections, default 1024 */
	int64_t max_connections_per_ip; /* admin connections one client address may hold, default 64 (0: no limit) */
	int64_t header_timeout_ms;   /* a request's headers must have come this long after the connection
				      * opened or its previous answer, default 5000 (0: no deadline) */
	int64_t admin_threads;       /* threads answering the admin requests that read Redis, default 4 */
	int64_t idle_timeout_s;      /* admin connections idle this long are closed, default 30 */
	enum log_level log_level;    /* default info */
	enum log_format log_format;  /* "log_format": text (default) or json, core/log.h */
	char *admin_token_file;      /* owned or NULL: file holding the admin bearer token */
	int admin_token_file_flag;   /* it came from --token-file (errors name the flag) */
	char *admin_token_env;       /* owned: environment variable with the token, default SLUICE_ADMIN_TOKEN */
	int admin_auth_reads;        /* 1: reads need the token too (probes stay open) */
	char *admin_tls_cert;        /* owned or NULL: PEM certificate (chain) of the admin API's HTTPS */
	char *admin_tls_key;         /* owned or NULL: PEM private key of admin_tls_cert */
	int insecure;                /* --insecure: allow a non-loopback listen address without a token */
	char *admin_token;           /* owned or NULL: the token, filled by config_load_token() */
	struct rule **rules;         /* owned, from the config file's "rules" */
	size_t nrules;
	struct layout *layouts;      /* owned, foreign layouts from the config file's "layouts" */
	size_t nlayouts;
};

/* Fill the defaults (all of `cfg` is overwritten).  0, or -ENOMEM with nothing to free. */
int config_defaults(struct config *cfg);
/*
 * Apply the JSON text of a config file (`len` bytes, borrowed) over `cfg`:
 * the members it names replace the current values ("rules" and "layouts"
 * as a whole).  -EINVAL with `err` naming the field (e.g. "rules[1].rate",
 * "admin.token_file", "config" for the text itself), or -ENOMEM; on any
 * error `cfg` is unchanged.
 */
int config_apply_json(struct config *cfg, const char *text, size_t len, struct sl_error *err);
/*
 * Read the file `path` (at most 4 MiB) and apply it as config_apply_json().
 * -errno or -EINVAL with `err` (field = the path) when it cannot be read.
 */
int config_apply_file(struct config *cfg, const char *path, struct sl_error *err);
/*
 * Set redis_url (a copy of `url`) and the parsed target.  -EINVAL with `err`
 * (field = `field`, e.g. "--redis"), or -ENOMEM; cfg unchanged on error.
 */
int config_set_redis(struct config *cfg, const char *url, const char *field, struct sl_error *err);
/*
 * Fill cfg->admin_token (owned, replacing any) with token_load() from
 * admin_token_file or, when no file is named, the environment variable
 * admin_token_env: see core/token.h for the rules and errors.  No token at
 * all is not an error (cfg->admin_token is then NULL).
 */
int config_load_token(struct config *cfg, struct sl_error *err);
/*
 * 0 when `id` may be a daemon id: 1..CONFIG_ID_MAX bytes of printable
 * ASCII, no space; else -EINVAL with `why` (static storage).
 */
int config_id_check(const char *id, const char **why);
/* Set cfg->id to a copy of `id` (checked).  -EINVAL with `err` (field = `field`), or -ENOMEM; cfg unchanged on error. */
int config_set_id(struct config *cfg, const char *id, const char *field, struct sl_error *err);
/* Free everything `cfg` owns (the token zeroed first) and zero it. */
void config_free(struct config *cfg);

#endif
