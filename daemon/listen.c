/* The admin listener's checks (daemon/listen.h). */
#include "daemon/listen.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "admin/server.h"
#include "core/log.h"

#define FDS_OWN 256 /* descriptors the daemon keeps beside the admin connections (Redis, files) */

int listen_check(const struct config *cfg)
{
	const char *files[2] = { cfg->admin_tls_cert, cfg->admin_tls_key };
	static const char *const names[2] = { "admin.tls_cert", "admin.tls_key" };

	if (!cfg->admin_token && !cfg->insecure && !server_host_is_loopback(cfg->listen_host)) {
		fprintf(stderr, "sluiced: --listen: %s is not a loopback address; set an admin token "
			"(admin.token_file, or $%s) or pass --insecure\n", cfg->listen_host, cfg->admin_token_env);
		return -1;
	}
	if (!files[0] != !files[1]) {
		fprintf(stderr, "sluiced: %s: admin.tls_cert and admin.tls_key go together: give both or neither\n",
			names[files[0] ? 1 : 0]);
		return -1;
	}
	for (int i = 0; i < 2; i++) {
		if (files[i] && access(files[i], R_OK)) {
			fprintf(stderr, "sluiced: %s: %s: %s\n", names[i], files[i], strerror(errno));
			return -1;
		}
	}
	if (files[0]) {
		char err[600];

		if (server_tls_check(files[0], files[1], err, sizeof(err))) {
			fprintf(stderr, "sluiced: %s\n", err);
			return -1;
		}
	}
	return 0;
}

void listen_warn(const struct config *cfg)
{
	if (cfg->admin_token && !cfg->admin_tls_cert && !server_host_is_loopback(cfg->listen_host))
		log_event(LOG_WARN, "admin_token_in_clear", "listen=%s hint=\"the bearer token crosses the network "
			  "in clear text: set admin.tls_cert and admin.tls_key, or listen on loopback behind a TLS "
			  "proxy\"", cfg->listen_host);
}

void listen_raise_fd_limit(long long connections)
{
	struct rlimit rl;
	rlim_t want = (rlim_t)connections + FDS_OWN;

	if (getrlimit(RLIMIT_NOFILE, &rl) || rl.rlim_cur >= want)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= want ? want : rl.rlim_max;
	if (setrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur >= want)
		return;
	log_event(LOG_WARN, "fd_limit_low", "max_connections=%lld nofile=%llu hint=\"raise the hard RLIMIT_NOFILE "
		  "(LimitNOFILE= in the unit) or lower max_connections\"", connections,
		  (unsigned long long)rl.rlim_cur);
}
