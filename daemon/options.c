#include "daemon/options.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "gen/paths.h" /* SLUICE_DEFAULT_CONFIG, from the Makefile's SYSCONFDIR */

enum {
	O_CONFIG = 'c',
	O_HELP = 'h',
	O_VERSION = 'V',
	O_REDIS = 256,
	O_LISTEN,
	O_DRAIN,
	O_PRUNE,
	O_LOG_LEVEL,
	O_BATCH,
	O_BUDGET,
	O_INSECURE,
	O_ID,
	O_LEASE_TTL,
	O_CHECK,
	O_NO_CONFIG,
	O_TOKEN_FILE,
	O_TLS_KEY_FILE,
	O_LOG_FORMAT,
};

static const struct option longopts[] = {
	{ "config", required_argument, NULL, O_CONFIG },
	{ "redis", required_argument, NULL, O_REDIS },
	{ "listen", required_argument, NULL, O_LISTEN },
	{ "drain-interval-ms", required_argument, NULL, O_DRAIN },
	{ "prune-interval-ms", required_argument, NULL, O_PRUNE },
	{ "batch-size", required_argument, NULL, O_BATCH },
	{ "sweep-budget-ms", required_argument, NULL, O_BUDGET },
	{ "log-level", required_argument, NULL, O_LOG_LEVEL },
	{ "insecure", no_argument, NULL, O_INSECURE },
	{ "id", required_argument, NULL, O_ID },
	{ "lease-ttl-ms", required_argument, NULL, O_LEASE_TTL },
	{ "check-config", no_argument, NULL, O_CHECK },
	{ "no-config", no_argument, NULL, O_NO_CONFIG },
	{ "token-file", required_argument, NULL, O_TOKEN_FILE },
	{ "tls-key-file", required_argument, NULL, O_TLS_KEY_FILE },
	{ "log-format", required_argument, NULL, O_LOG_FORMAT },
	{ "help", no_argument, NULL, O_HELP },
	{ "version", no_argument, NULL, O_VERSION },
	{ NULL, 0, NULL, 0 },
};

const char *options_default_config(void)
{
	return SLUICE_DEFAULT_CONFIG;
}

void options_usage(FILE *out)
{
	fprintf(out,
	      "Usage: sluiced [--config FILE] [OPTIONS]\n"
	      "\n"
	      "Rate-limit maintenance daemon for Redis: drains leaky buckets and prunes\n"
	      "sliding-window state, shard by shard, from each shard's due index of paths,\n"
	      "and serves an admin JSON API.\n"
	      "\n"
	      "Options (flags override the config file):\n"
	      "  -c, --config FILE            JSON config file (see sluiced(8)); without it,\n"
	      "                               %s when that exists\n"
	      "      --no-config              read no config file, not even the default one\n"
	      "      --redis URL              redis://[[user]:password@]host[:port][/db] or\n"
	      "                               unix:///path/to/socket[?db=N]\n"
	      "                               (default redis://127.0.0.1:6379/0); a Redis\n"
	      "                               Cluster: any node, or several to try in turn:\n"
	      "                               redis://host1:7000,host2:7001\n"
	      "      --listen HOST:PORT       admin API address (default 127.0.0.1:8080;\n"
	      "                               port 0 picks a free port)\n"
	      "      --drain-interval-ms N    leaky-bucket drain period (default 100)\n"
	      "      --prune-interval-ms N    period of the other jobs: prunes, repair, reclaim (default 1000)\n"
	      "      --batch-size N           paths per script call (default 500)\n"
	      "      --sweep-budget-ms N      time budget of one tick (default 80%% of the period)\n"
	      "      --log-level LEVEL        debug, info, warn or error (default info)\n"
	      "      --log-format FORMAT      text (key=value lines, the default) or json\n"
	      "                               (one JSON object per line)\n"
	      "      --id ID                  this daemon's id among several sharing the shards\n"
	      "                               (default <hostname>:<pid>:<6 hex random>)\n"
	      "      --lease-ttl-ms N         shard lease TTL: a dead daemon's shards are taken\n"
	      "                               over within it plus a tick (default 2000)\n"
	      "      --insecure               allow a non-loopback --listen address without an\n"
	      "                               admin token (writes then need no Authorization)\n"
	      "      --token-file FILE        read the admin token from FILE (over the config's\n"
	      "                               admin.token_file)\n"
	      "      --tls-key-file FILE      the admin API's TLS private key (over the config's\n"
	      "                               admin.tls_key; a systemd credential: %%d/tls.key)\n"
	      "      --check-config           read the config file and the flags as for a run,\n"
	      "                               print what they give and exit (0: valid, 2: not;\n"
	      "                               Redis is not contacted)\n"
	      "  -h, --help                   this text\n"
	      "  -V, --version                print the version\n"
	      "\n"
	      "The admin token (Authorization: Bearer) is read from --token-file or the file\n"
	      "named by admin.token_file in the config, else from $SLUICE_ADMIN_TOKEN\n"
	      "(admin.token_env names another variable); never from a flag's value.\n"
	      "SIGHUP reads the config again; SIGTERM or SIGINT stops, releasing the leases.\n"
	      "\n"
	      "Exit status: 0 after SIGTERM/SIGINT, 1 on a start-up failure, 2 on a bad\n"
	      "flag or config.\n",
	      SLUICE_DEFAULT_CONFIG);
}

static int parse_int(const char *s, const char *flag, long long min, long long max, int64_t *out,
		     struct sl_error *err)
{
	char *end;
	long long v;

	errno = 0;
	v = strtoll(s, &end, 10);
	/* digits only: strtoll would also take " 5" and "+5" */
	if (*s < '0' || *s > '9' || *end || errno || v < min || v > max)
		return sl_fail(err, flag, "must be an integer %lld..%lld (got \"%.32s\")", min, max, s);
	*out = v;
	return 0;
}

/*
 * Apply the config file `path` (the --config one or the default): 0, else the
 * error of config_apply_file(), with `err` naming the file first (field
 * "/etc/sluice/sluiced.json", message "rules[0].rate: must be ...").
 */
static int apply_file(struct config *cfg, const char *path, struct sl_error *err)
{
	int rc = config_apply_file(cfg, path, err);

	if (rc && rc != -ENOENT && err && strcmp(err->field, path)) {
		char msg[sizeof(err->field) + sizeof(err->message) + 2]; /* cut to fit by sl_fail */

		snprintf(msg, sizeof(msg), "%s: %s", err->field, err->message);
		sl_fail(err, path, "%s", msg);
	}
	return rc;
}

/* The default config file `path` when it exists: 1 when it was applied, 0
 * when it does not exist, else apply_file()'s error. */
static int apply_default(struct config *cfg, const char *path, struct sl_error *err)
{
	int rc = apply_file(cfg, path, err);

	if (rc == -ENOENT) {
		if (err)
			*err = (struct sl_error){ 0 };
		return 0;
	}
	return rc ? rc : 1;
}

int options_parse(int argc, char **argv, const char *default_config, struct config *cfg,
		  enum options_action *action, const char **config_path, struct sl_error *err)
{
	const char *config = NULL;
	int c, rc, check = 0, no_config = 0;

	*action = OPT_RUN;
	/* pass 1: --config, --help, --version, and unknown flags */
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":c:hV", longopts, NULL)) != -1) {
		if (c == O_CONFIG)
			config = optarg;
		else if (c == O_HELP)
			*action = OPT_HELP;
		else if (c == O_VERSION && *action != OPT_HELP)
			*action = OPT_VERSION;
		else if (c == O_CHECK)
			check = 1;
		else if (c == O_NO_CONFIG)
			no_config = 1;
		else if (c == ':')
			return sl_fail(err, argv[optind - 1], "needs a value");
		else if (c == '?')
			return sl_fail(err, optopt ? (char[]){ '-', (char)optopt, 0 } : argv[optind - 1],
				       "unknown option (see --help)");
	}
	if (optind < argc)
		return sl_fail(err, argv[optind], "unexpected argument (see --help)");
	if (*action != OPT_RUN) {
		if (config_path)
			*config_path = NULL;
		return 0;
	}
	if (config && !*config)
		return sl_fail(err, "--config", "needs a file name");
	if (config && no_config)
		return sl_fail(err, "--no-config", "cannot be given with --config");
	if (config && (rc = apply_file(cfg, config, err)))
		return rc;
	if (!config && !no_config && default_config) {
		if ((rc = apply_default(cfg, default_config, err)) < 0)
			return rc;
		if (rc)
			config = default_config;
	}

	/* pass 2: the flags, over the file */
	optind = 1;
	while ((c = getopt_long(argc, argv, ":c:hV", longopts, NULL)) != -1) {
		switch (c) {
		case O_REDIS:
			rc = config_set_redis(cfg, optarg, "--redis", err);
			break;
		case O_LISTEN: {
			char *host = NULL;
			int port;

			rc = listen_parse(optarg, "--listen", &host, &port, err);
			if (!rc) {
				free(cfg->listen_host);
				cfg->listen_host = host;
				cfg->listen_port = port;
			}
			break;
		}
		case O_DRAIN:
			rc = parse_int(optarg, "--drain-interval-ms", 1, 3600000, &cfg->drain_interval_ms, err);
			break;
		case O_PRUNE:
			rc = parse_int(optarg, "--prune-interval-ms", 1, 3600000, &cfg->prune_interval_ms, err);
			break;
		case O_BATCH:
			rc = parse_int(optarg, "--batch-size", 1, 100000, &cfg->batch_size, err);
			break;
		case O_BUDGET:
			rc = parse_int(optarg, "--sweep-budget-ms", 0, 3600000, &cfg->sweep_budget_ms, err);
			break;
		case O_ID:
			rc = config_set_id(cfg, optarg, "--id", err);
			break;
		case O_LEASE_TTL:
			rc = parse_int(optarg, "--lease-ttl-ms", CONFIG_LEASE_TTL_MIN_MS, CONFIG_LEASE_TTL_MAX_MS,
				       &cfg->lease_ttl_ms, err);
			break;
		case O_INSECURE:
			cfg->insecure = 1;
			rc = 0;
			break;
		case O_LOG_LEVEL:
			rc = log_level_parse(optarg, &cfg->log_level)
				     ? sl_fail(err, "--log-level", "must be debug, info, warn or error")
				     : 0;
			break;
		case O_LOG_FORMAT:
			rc = log_format_parse(optarg, &cfg->log_format)
				     ? sl_fail(err, "--log-format", "must be text or json")
				     : 0;
			break;
		case O_TOKEN_FILE:
		case O_TLS_KEY_FILE: {
			const char *flag = c == O_TOKEN_FILE ? "--token-file" : "--tls-key-file";
			char **dst = c == O_TOKEN_FILE ? &cfg->admin_token_file : &cfg->admin_tls_key;
			char *copy;

			if (!*optarg) {
				rc = sl_fail(err, flag, "needs a file name");
				break;
			}
			if (!(copy = strdup(optarg)))
				return -ENOMEM;
			free(*dst);
			*dst = copy;
			if (c == O_TOKEN_FILE)
				cfg->admin_token_file_flag = 1;
			rc = 0;
			break;
		}
		default:
			rc = 0;
		}
		if (rc)
			return rc;
	}
	if (check)
		*action = OPT_CHECK;
	if (config_path)
		*config_path = config;
	return 0;
}
