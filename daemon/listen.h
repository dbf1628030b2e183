#ifndef SLUICE_DAEMON_LISTEN_H
#define SLUICE_DAEMON_LISTEN_H
/*
 * The admin listener's checks before the server starts: where it may
 * listen without a token, the TLS files, the fd limit its connections need,
 * and the warning for a token sent in clear text.
 */
#include "core/config.h"

/*
 * 0 when the listen address and the TLS files may be used: a non-loopback
 * address needs a token (or --insecure); admin.tls_cert and admin.tls_key
 * both or neither, both readable, and a certificate with its own key
 * (server_tls_check).  Else -1 after printing the reason to
 * stderr (the caller exits 2).
 */
int listen_check(const struct config *cfg);
/*
 * Log a warning when a token would cross the network in clear text (a
 * non-loopback address, a token, no TLS).
 */
void listen_warn(const struct config *cfg);
/*
 * Raise the soft RLIMIT_NOFILE (up to the hard limit) so that `connections`
 * admin connections and the daemon's own descriptors fit; a warning names
 * the shortfall when the hard limit is lower.
 */
void listen_raise_fd_limit(long long connections);

#endif
