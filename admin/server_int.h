#ifndef SLUICE_ADMIN_SERVER_INT_H
#define SLUICE_ADMIN_SERVER_INT_H
/*
 * Inside the admin server (private to admin/server*.c): the server object,
 * a connection's header deadline, a request's state between calls of the
 * access handler.  Everything here but the lanes' tasks is touched by the
 * loop thread only.
 */
#include <microhttpd.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "admin/api.h"
#include "admin/lanes.h"

/* A connection, for its header deadline (a list the loop thread keeps). */
struct hconn {
	struct hconn *prev, *next;
	int fd;
	int busy;            /* a thread works on its request: no deadline meanwhile */
	int shut;            /* shut down for missing its deadline */
	int64_t deadline_us; /* CLOCK_MONOTONIC */
};

struct server {
	struct MHD_Daemon *d;
	struct api_shared *shared;  /* owned */
	struct api *api;            /* owned: the loop thread's, for the inline routes */
	struct lane *probe, *pool;  /* owned */
	size_t max_body;
	int port;
	int64_t header_timeout_us;  /* 0: none */
	pthread_t loop;
	int loop_started;
	int wakefd;                 /* eventfd: wakes the loop (stop) */
	atomic_int stopping, quit;
	atomic_int active;          /* requests handed to a lane and not ended: the stop flushes their answers */
	int quiesced;
	struct hconn conns;         /* list head */
	int64_t janitor_us;         /* next deadline check */
	char *cert, *key;           /* owned PEM texts, or NULL */
};

/* A request handed to a lane. */
struct task {
	struct lane_task lt;        /* first: the lane sees this */
	struct MHD_Connection *c;
	struct server *s;
	struct api_request req;     /* its strings are the members below */
	char *method, *path, *match, *cursor, *count, *authorization, *if_match, *body;
	struct api_response res;
};

/* Per-request state, kept in *req_cls between calls of the access handler. */
struct req {
	char *body;
	size_t len, cap;
	size_t discarded;  /* bytes of an oversized chunked body read and dropped */
	int64_t start_us;  /* CLOCK_MONOTONIC, when its headers were read */
	int too_large;
	int must_close;    /* refused: Connection: close (a framing that cannot be trusted) */
	int route;         /* api_lane_of's, -1 none */
	enum api_lane lane_kind; /* api_lane_of's, from the headers */
	struct task *task; /* handed to `lane`, or NULL */
	struct lane *lane;
	int refused;       /* the lane refused it: answer 503 (1 busy, 2 stopping) */
	int counted;       /* in server.active: handed to a lane, its answer due */
};

/* server_req.c: libmicrohttpd's callbacks */
enum MHD_Result server_handle(void *cls, struct MHD_Connection *c, const char *url, const char *method,
			      const char *version, const char *upload_data, size_t *upload_size, void **req_cls);
void server_completed(void *cls, struct MHD_Connection *c, void **req_cls, enum MHD_RequestTerminationCode toe);
/* server.c: wake the loop thread (a connection was resumed, or the server stops). */
void server_wake(struct server *s);
/* The connection's hconn (its socket context), or NULL. */
struct hconn *server_hconn(struct MHD_Connection *c);

#endif
