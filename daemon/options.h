#ifndef SLUICE_OPTIONS_H
#define SLUICE_OPTIONS_H
/*
 * Command line of sluiced: defaults, then --config FILE, then the other flags
 * (which override the file whatever their order on the line).
 */
#include <stdio.h>

#include "core/config.h"

/* OPT_CHECK: --check-config, the config and flags parsed as for a run, then exit */
enum options_action { OPT_RUN = 0, OPT_HELP, OPT_VERSION, OPT_CHECK };

/*
 * Fill `cfg` (which must hold config_defaults()) from argv.  0 and *action,
 * or -EINVAL with `err` naming the flag or config field (cfg may then hold a
 * part of the flags and must only be freed).  Does not touch Redis.
 * *config_path (may be NULL) receives the --config value, borrowed from argv.
 */
int options_parse(int argc, char **argv, struct config *cfg, enum options_action *action,
		  const char **config_path, struct sl_error *err);
/* Print the --help text to `out`. */
void options_usage(FILE *out);

#endif
