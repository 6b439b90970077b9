/*
 * Network threads, listeners and cross-thread messages.
 *
 * DESIGN: see conn.h. Each net_thread runs an epoll loop over its
 * connections, its io_engine's completion fd and its message eventfd. An
 * acceptor thread owns the listening sockets and deals accepted connections
 * round-robin to the network threads. The main thread only waits for
 * signals.
 */
#ifndef TARGETD_NET_H
#define TARGETD_NET_H

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include "common/bufpool.h"
#include "common/util.h"

struct io_engine;
struct iscsi_conn;
struct iscsi_portal;
struct iscsi_session;
struct iscsi_portal;

enum epoll_tag { TAG_CONN = 1, TAG_ENGINE, TAG_MSG, TAG_LISTEN };

enum net_msg_type {
	MSG_NEW_CONN,       /* fd accepted on a portal */
	MSG_ADOPT_CONN,     /* a logged-in connection joining a session here */
	MSG_CLOSE_SESSION,  /* reinstatement / reset: close every connection */
	MSG_STOP,
	MSG_CALL,           /* run ptr (net_call_fn) with the message on this thread */
	MSG_ASYNC,          /* run ptr (struct net_async) here, nobody waits */
};

struct net_msg {
	struct list_head link;
	enum net_msg_type type;
	int fd;
	void *ptr;
	uint64_t arg;
};

struct net_thread {
	unsigned idx;
	pthread_t tid;
	int epfd;
	int msg_fd;                 /* eventfd */
	int engine_tag;
	int msg_tag;
	struct io_engine *eng;
	struct bufpool pool;
	pthread_mutex_t mq_lock;
	struct list_head mq;
	struct list_head conns;
	struct list_head dirty;     /* connections with output to flush */
	struct list_head graveyard; /* closed connections, freed between epoll batches */
	struct list_head kick;      /* connections to read again (resumed, bytes buffered) */
	unsigned n_conns;
	bool stopping;
	uint64_t now_ms;
	uint64_t last_tick;         /* connection timers last run (now_ms) */
	uint64_t stop_deadline;     /* stopping: give the backstore until then */
	uint64_t (*clock_ms)(void); /* net_now_ms; a test harness may set its own */
	uint64_t epoch;             /* odd while idle in epoll_wait (atomic; net_synchronize) */
};

extern __thread struct net_thread *net_self;

/*
 * ASSERT_OWNER(obj): obj (a connection or a session: anything with a
 * ->thread) is touched by the network thread that owns it (conn.h,
 * DESIGN), checked where a thread starts work on one: socket events,
 * flushes and timers of a connection, a connection adopted, a SCSI
 * completion coming back, a message or asynchronous call run for a
 * session. A violation is logged with both threads named and aborts the
 * daemon. On in every build that keeps assert(), the default and the one
 * `make check` runs, and always with TARGETD_DEBUG; compiled away with
 * NDEBUG (configure --disable-assert, a release build).
 */
#if defined(NDEBUG) && !defined(TARGETD_DEBUG)
#define ASSERT_OWNER(obj) ((void)sizeof((obj)->thread))
#else
#define ASSERT_OWNER(obj) net_assert_owner((obj)->thread, #obj, __func__)
#endif
void net_assert_owner(const struct net_thread *owner, const char *what, const char *where);

int net_start(unsigned n_threads);

/* The pieces net_start() runs each network thread from, for programs that
 * drive a loop themselves (tests/fuzz/): set up t (epoll, message
 * eventfd, I/O engine, buffer pool) without starting a thread; one turn
 * of its loop on the calling thread (flush output, wait in epoll up to
 * max_wait_ms, handle socket events, messages and completions, run the
 * connection timers once a second of t->clock_ms()): 0, or 1 once a
 * stopping thread has drained, -1 if epoll failed; and the teardown.
 * The caller sets net_self = t and calls scsi_stats_thread_init(idx) and
 * scsi_histo_thread_init(idx). */
int net_thread_init(struct net_thread *t, unsigned idx, bool use_uring);
int net_thread_turn(struct net_thread *t, int max_wait_ms);
void net_thread_destroy(struct net_thread *t);
/* A new connection on fd (accepted on portal, NULL: tpgt 1) owned by t,
 * as the acceptor hands it over; NULL if it could not be set up (fd is
 * closed then). */
struct iscsi_conn *net_thread_add_conn(struct net_thread *t, int fd, struct iscsi_portal *portal);
/* A logged-in connection handed over by another thread (MSG_ADOPT_CONN)
 * joins its session on t. */
void iscsi_conn_adopt(struct iscsi_conn *c, struct net_thread *t);
/* Stop accepting, drain, close everything, join. */
void net_stop(void);
void net_send(struct net_thread *t, enum net_msg_type type, int fd, void *ptr, uint64_t arg);
int net_epoll_add(struct net_thread *t, int fd, uint32_t events, int *tag);
int net_epoll_mod(struct net_thread *t, int fd, uint32_t events, int *tag);
void net_epoll_del(struct net_thread *t, int fd);
uint64_t net_now_ms(void);
int net_open_listeners(void);
/* Runtime portals (targetctl portal add|remove), on the control thread
 * while the network runs. add: listen on p and accept from it (0, or -1
 * with the reason in err). remove: stop accepting and close its socket
 * (the acceptor thread closes it; this waits); established connections
 * stay. */
int net_portal_add(struct iscsi_portal *p, char *err, size_t cap);
void net_portal_remove(struct iscsi_portal *p);
/* Wait until every network thread has passed a quiescent point (finished
 * the loop iteration it was in, or sat idle): after it, no thread still
 * uses a pointer it loaded before the call. Not from a network thread. */
void net_synchronize(void);
/* Run fn(thread, arg) on every network thread, one after another, and
 * return when all have run (the admin interface reads per-thread state
 * this way). Not from a network thread. */
typedef void (*net_call_fn)(struct net_thread *t, void *arg);
void net_call_all(net_call_fn fn, void *arg);
/* Run a->fn(thread, a, arg) on thread t, asynchronously (from any thread,
 * network threads included). a stays the caller's: fn may free it. */
struct net_async {
	void (*fn)(struct net_thread *t, struct net_async *a, uint64_t arg);
};
void net_async(struct net_thread *t, struct net_async *a, uint64_t arg);

#endif
