#ifndef SLUICE_OPTIONS_H
#define SLUICE_OPTIONS_H
/*
 * Command line of sluiced: defaults, then --config FILE (else the default
 * config file, when it exists and --no-config is not given), then the other
 * flags (which override the file whatever their order on the line).
 */
#include <stdio.h>

#include "core/config.h"

/* OPT_CHECK: --check-config, the config and flags parsed as for a run, then exit */
enum options_action { OPT_RUN = 0, OPT_HELP, OPT_VERSION, OPT_CHECK };

/*
 * Fill `cfg` (which must hold config_defaults()) from argv.  Without
 * --config or --no-config, the file `default_config` (borrowed; NULL: none,
 * as the tests pass) is read when it exists: absent, the defaults stand;
 * present but broken, the error names it (field = its path, message
 * "<field>: <why>").  0 and *action, or -EINVAL (-errno for a file that
 * cannot be read, -ENOMEM) with `err` naming the flag or config field (cfg
 * may then hold a part of the flags and must only be freed).  Does not
 * touch Redis.  *config_path (may be NULL) receives the file read (the
 * --config value or `default_config`, borrowed), or NULL when none was.
 */
int options_parse(int argc, char **argv, const char *default_config, struct config *cfg,
		  enum options_action *action, const char **config_path, struct sl_error *err);
/* The default config file's path, $(SYSCONFDIR)/sluice/sluiced.json at build time (static storage). */
const char *options_default_config(void);
/* Print the --help text to `out`. */
void options_usage(FILE *out);

#endif
