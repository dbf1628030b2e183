/*
 * The admin server's life: libmicrohttpd started on our own loop thread
 * (epoll, suspend/resume), the lanes and their api objects, the header
 * deadline, TLS, and the stop that answers every waiting client.
 */
#include "admin/server.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "admin/server_int.h"
#include "core/clock.h"
#include "core/log.h"

#define LOOP_TICK_MS 50        /* the loop wakes at least this often (header deadlines) */
#define FLUSH_MS 200           /* when stopping: time for the 503s to go out */
#define THREADS_DEFAULT 4
#define QUEUE_MAX 4096         /* requests waiting for a lane's thread */
#define TLS_FILE_MAX (1 << 20) /* bytes of a PEM file */

/* Leave the URL and arguments percent-encoded: the API decodes path segments one by one. */
static size_t keep_escapes(void *cls, struct MHD_Connection *c, char *s)
{
	(void)cls;
	(void)c;
	return strlen(s);
}

static void mhd_log(void *cls, const char *fmt, va_list ap)
{
	char msg[256], q[300];
	size_t n;

	(void)cls;
	vsnprintf(msg, sizeof(msg), fmt, ap);
	n = strlen(msg);
	while (n && (msg[n - 1] == '\n' || msg[n - 1] == '\r'))
		msg[--n] = '\0';
	/* mostly a client's malformed request: at debug, or any client could fill the log */
	log_event(LOG_DEBUG, "http_error", "message=%s", log_quote(q, sizeof(q), msg, n));
}

/* A connection opened or closed: kept in the list the header deadline walks. */
static void notify_conn(void *cls, struct MHD_Connection *c, void **socket_context,
			enum MHD_ConnectionNotificationCode toe)
{
	struct server *s = cls;
	struct hconn *h = *socket_context;

	if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
		const union MHD_ConnectionInfo *ci = MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);

		if (!ci || !(h = calloc(1, sizeof(*h))))
			return; /* no deadline for it: the idle timeout still applies */
		h->fd = ci->connect_fd;
		h->deadline_us = clock_mono_us() + s->header_timeout_us;
		h->next = s->conns.next;
		h->prev = &s->conns;
		s->conns.next->prev = h;
		s->conns.next = h;
		*socket_context = h;
	} else if (h) {
		h->prev->next = h->next;
		h->next->prev = h->prev;
		free(h);
		*socket_context = NULL;
	}
}

/*
 * Close the connections that waited past their deadline for a request's
 * headers.  libmicrohttpd has no call for it: the socket is shut down (not
 * closed: the fd stays libmicrohttpd's) and it sees the end of the stream.
 * On the loop thread, between MHD_run calls, so the fd is still open.
 */
static void janitor(struct server *s)
{
	int64_t now = clock_mono_us();

	if (!s->header_timeout_us || now < s->janitor_us)
		return;
	s->janitor_us = now + LOOP_TICK_MS * 1000;
	for (struct hconn *h = s->conns.next; h != &s->conns; h = h->next) {
		if (h->busy || h->shut || now < h->deadline_us)
			continue;
		shutdown(h->fd, SHUT_RDWR);
		h->shut = 1;
		log_event(LOG_DEBUG, "http_header_timeout", "fd=%d", h->fd);
	}
}

static void *loop_main(void *arg)
{
	struct server *s = arg;
	const union MHD_DaemonInfo *ep = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_EPOLL_FD);

	while (!atomic_load(&s->quit)) {
		struct pollfd pfd[2] = { { .fd = ep ? ep->epoll_fd : -1, .events = POLLIN },
					 { .fd = s->wakefd, .events = POLLIN } };
		MHD_UNSIGNED_LONG_LONG to = 0;
		int ms = LOOP_TICK_MS;
		uint64_t v;

		if (MHD_get_timeout(s->d, &to) == MHD_YES && to < (MHD_UNSIGNED_LONG_LONG)ms)
			ms = (int)to;
		if (poll(pfd, 2, ms) > 0 && (pfd[1].revents & POLLIN))
			(void)!read(s->wakefd, &v, sizeof(v));
		MHD_run(s->d);
		if (atomic_load(&s->stopping) && !s->quiesced) {
			MHD_socket fd = MHD_quiesce_daemon(s->d);

			if (fd != MHD_INVALID_SOCKET)
				close(fd); /* no new connections */
			s->quiesced = 1;
		}
		janitor(s);
	}
	return NULL;
}

void server_wake(struct server *s)
{
	uint64_t one = 1;

	(void)!write(s->wakefd, &one, sizeof(one));
}

/* Read PEM file `path` (at most TLS_FILE_MAX bytes) into a new string.  NULL with `err` filled. */
static char *read_pem(const char *what, const char *path, char *err, size_t cap)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	char *buf = NULL;
	ssize_t n;

	if (fd < 0 || fstat(fd, &st) || st.st_size <= 0 || st.st_size > TLS_FILE_MAX) {
		snprintf(err, cap, "%s %s: %s", what, path,
			 fd < 0 ? strerror(errno) : st.st_size <= 0 ? "empty" : "larger than 1 MiB");
		goto out;
	}
	if (!(buf = calloc(1, (size_t)st.st_size + 1))) {
		snprintf(err, cap, "out of memory");
		goto out;
	}
	n = read(fd, buf, (size_t)st.st_size);
	if (n != st.st_size || !strstr(buf, "-----BEGIN ")) {
		snprintf(err, cap, "%s %s: %s", what, path, n != st.st_size ? "short read" : "not a PEM file");
		free(buf);
		buf = NULL;
	}
out:
	if (fd >= 0)
		close(fd);
	return buf;
}

static void opt(struct MHD_OptionItem *o, size_t *n, enum MHD_OPTION which, intptr_t value, void *ptr)
{
	o[*n].option = which;
	o[*n].value = value;
	o[*n].ptr_value = ptr;
	(*n)++;
}

/* Start libmicrohttpd (not its thread: ours runs it).  0, or -1 with `err`. */
static int start_mhd(struct server *s, const struct server_config *cfg, char *err, size_t cap)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai = NULL;
	unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ITC | MHD_USE_ERROR_LOG;
	struct MHD_OptionItem o[16];
	const union MHD_DaemonInfo *info;
	size_t n = 0;
	char port[8];
	int rc;

	snprintf(port, sizeof(port), "%d", cfg->port);
	if ((rc = getaddrinfo(cfg->host, port, &hints, &ai))) {
		snprintf(err, cap, "listen address %s: %s", cfg->host, gai_strerror(rc));
		return -1;
	}
	if (ai->ai_family == AF_INET6)
		flags |= MHD_USE_IPv6;
	if (s->cert) {
		if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
			snprintf(err, cap, "admin.tls_cert: this libmicrohttpd was built without TLS");
			freeaddrinfo(ai);
			return -1;
		}
		flags |= MHD_USE_TLS;
	}
	/* the logger first, to catch every message */
	opt(o, &n, MHD_OPTION_EXTERNAL_LOGGER, (intptr_t)mhd_log, NULL);
	opt(o, &n, MHD_OPTION_SOCK_ADDR, 0, ai->ai_addr);
	opt(o, &n, MHD_OPTION_CONNECTION_LIMIT, (intptr_t)cfg->max_connections, NULL);
	if (cfg->max_connections_per_ip)
		opt(o, &n, MHD_OPTION_PER_IP_CONNECTION_LIMIT, (intptr_t)cfg->max_connections_per_ip, NULL);
	/* room for a 10,000-byte path percent-encoded (30 KB) in the request line */
	opt(o, &n, MHD_OPTION_CONNECTION_MEMORY_LIMIT, 128 * 1024, NULL);
	opt(o, &n, MHD_OPTION_CONNECTION_TIMEOUT, (intptr_t)cfg->idle_timeout_s, NULL);
	opt(o, &n, MHD_OPTION_UNESCAPE_CALLBACK, (intptr_t)keep_escapes, NULL);
	opt(o, &n, MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)server_completed, s);
	opt(o, &n, MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)notify_conn, s);
	if (s->cert) {
		opt(o, &n, MHD_OPTION_HTTPS_MEM_CERT, 0, s->cert);
		opt(o, &n, MHD_OPTION_HTTPS_MEM_KEY, 0, s->key);
	}
	opt(o, &n, MHD_OPTION_END, 0, NULL);
	s->d = MHD_start_daemon(flags, (uint16_t)cfg->port, NULL, NULL, server_handle, s, MHD_OPTION_ARRAY, o,
				MHD_OPTION_END);
	freeaddrinfo(ai);
	if (!s->d) {
		snprintf(err, cap, s->cert ? "admin.tls_cert, admin.tls_key: cannot serve HTTPS on %s:%d (the "
					     "certificate and key do not load or do not match: see the log line "
					     "before; or the address is in use)"
					   : "cannot listen on %s:%d (address in use, or not permitted)",
			 cfg->host, cfg->port);
		return -1;
	}
	info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
	s->port = info ? info->port : cfg->port;
	return 0;
}

/* The api objects: the shared state, the loop thread's, and the lanes'.  0 or -1 with `err`. */
static int start_apis(struct server *s, const struct server_config *cfg, const struct api_config *ac, char *err,
		      size_t cap)
{
	struct api_config c = *ac;
	unsigned threads = cfg->threads ? cfg->threads : THREADS_DEFAULT;

	if (!(s->shared = api_shared_new(ac)))
		goto oom;
	c.shared = s->shared;
	c.no_redis = 0;
	if (!(s->probe = lane_new(1, QUEUE_MAX, &c)) || !(s->pool = lane_new(threads, QUEUE_MAX, &c)))
		goto oom;
	c.no_redis = 1; /* the loop thread's: it never waits on Redis */
	if (!(s->api = api_new(&c)))
		goto oom;
	return 0;
oom:
	snprintf(err, cap, "out of memory, or a thread could not start");
	return -1;
}

static void free_server(struct server *s)
{
	if (s->d)
		MHD_stop_daemon(s->d);
	lane_free(s->probe);
	lane_free(s->pool);
	api_free(s->api);
	api_shared_free(s->shared);
	while (s->conns.next && s->conns.next != &s->conns) {
		struct hconn *h = s->conns.next;

		s->conns.next = h->next;
		free(h);
	}
	if (s->wakefd >= 0)
		close(s->wakefd);
	free(s->cert);
	if (s->key) {
		explicit_bzero(s->key, strlen(s->key));
		free(s->key);
	}
	free(s);
}

struct server *server_start(const struct server_config *cfg, const struct api_config *ac, char *err, size_t cap)
{
	struct server *s = calloc(1, sizeof(*s));

	if (!s) {
		snprintf(err, cap, "out of memory");
		return NULL;
	}
	s->wakefd = -1;
	s->conns.next = s->conns.prev = &s->conns;
	s->max_body = cfg->max_body_bytes;
	s->header_timeout_us = (int64_t)cfg->header_timeout_ms * 1000;
	if (!cfg->tls_cert != !cfg->tls_key) {
		snprintf(err, cap, "admin.tls_cert and admin.tls_key go together: give both or neither");
		goto fail;
	}
	if (cfg->tls_cert && (!(s->cert = read_pem("admin.tls_cert", cfg->tls_cert, err, cap)) ||
			      !(s->key = read_pem("admin.tls_key", cfg->tls_key, err, cap))))
		goto fail;
	if ((s->wakefd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK)) < 0) {
		snprintf(err, cap, "eventfd: %s", strerror(errno));
		goto fail;
	}
	if (start_apis(s, cfg, ac, err, cap) || start_mhd(s, cfg, err, cap))
		goto fail;
	if (pthread_create(&s->loop, NULL, loop_main, s)) {
		snprintf(err, cap, "cannot start the admin server's thread");
		goto fail;
	}
	s->loop_started = 1;
	return s;
fail:
	free_server(s);
	return NULL;
}

static void quiet_log(void *cls, const char *fmt, va_list ap)
{
	char *why = cls;

	vsnprintf(why, 200, fmt, ap);
}

int server_tls_check(const char *cert, const char *key, char *err, size_t cap)
{
	char *c = read_pem("admin.tls_cert", cert, err, cap), *k = c ? read_pem("admin.tls_key", key, err, cap) : NULL;
	char why[200] = "";
	struct MHD_Daemon *d = NULL;
	int rc = -1;

	if (!c || !k)
		goto out;
	if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
		snprintf(err, cap, "admin.tls_cert: this libmicrohttpd was built without TLS");
		goto out;
	}
	d = MHD_start_daemon(MHD_USE_TLS | MHD_USE_NO_LISTEN_SOCKET | MHD_USE_ERROR_LOG, 0, NULL, NULL, server_handle, NULL,
			     MHD_OPTION_EXTERNAL_LOGGER, quiet_log, why, MHD_OPTION_HTTPS_MEM_CERT, c,
			     MHD_OPTION_HTTPS_MEM_KEY, k, MHD_OPTION_END);
	if (!d) {
		size_t n = strlen(why);

		while (n && (why[n - 1] == '\n' || why[n - 1] == '.'))
			why[--n] = '\0';
		snprintf(err, cap, "admin.tls_cert, admin.tls_key: %s and %s do not load as a certificate and its key (%s)",
			 cert, key, *why ? why : "libmicrohttpd refused them");
		goto out;
	}
	MHD_stop_daemon(d);
	rc = 0;
out:
	free(c);
	if (k) {
		explicit_bzero(k, strlen(k));
		free(k);
	}
	return rc;
}

int server_host_is_loopback(const char *host)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL, *p;
	int loop = 1;

	if (getaddrinfo(host, NULL, &hints, &ai))
		return 0;
	for (p = ai; p; p = p->ai_next) {
		if (p->ai_family == AF_INET) {
			const struct sockaddr_in *sa = (const struct sockaddr_in *)p->ai_addr;

			loop = loop && (ntohl(sa->sin_addr.s_addr) >> 24) == 127;
		} else if (p->ai_family == AF_INET6) {
			const struct sockaddr_in6 *sa = (const struct sockaddr_in6 *)p->ai_addr;

			loop = loop && IN6_IS_ADDR_LOOPBACK(&sa->sin6_addr);
		} else {
			loop = 0;
		}
	}
	freeaddrinfo(ai);
	return loop;
}

int server_port(const struct server *s)
{
	return s->port;
}

static void sleep_ms(int ms)
{
	struct timespec ts = { 0, (long)ms * 1000000L };

	nanosleep(&ts, NULL);
}

void server_stop(struct server *s)
{
	int64_t until;

	if (!s)
		return;
	atomic_store(&s->stopping, 1);
	server_wake(s);
	api_shared_stop(s->shared); /* jobs: cancelled at their next batch */
	lane_close(s->probe);       /* waiting requests: 503 now */
	lane_close(s->pool);
	until = clock_mono_us() + SERVER_STOP_GRACE_MS * 1000;
	/* a job ends at its next batch; a request runs to its end: both normally within the grace */
	while ((lane_running(s->pool) + lane_running(s->probe) || api_shared_busy(s->shared)) &&
	       clock_mono_us() < until)
		sleep_ms(5);
	lane_abandon_running(s->probe); /* still running: 503 too, and their Redis calls cut short */
	lane_abandon_running(s->pool);
	lane_abort(s->probe);
	lane_abort(s->pool);
	api_shared_abort(s->shared);
	until = clock_mono_us() + FLUSH_MS * 1000;
	while (atomic_load(&s->active) > 0 && clock_mono_us() < until)
		sleep_ms(5);
	atomic_store(&s->quit, 1);
	server_wake(s);
	if (s->loop_started)
		pthread_join(s->loop, NULL);
	free_server(s);
}
