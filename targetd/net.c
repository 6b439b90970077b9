/*
 * Network threads, the acceptor, and cross-thread messages.
 *
 * DESIGN: see net.h and conn.h. Each network thread loops:
 *   flush the io_engine and every connection with pending output;
 *   epoll_wait (timeout 0 while the engine has ready completions, else up
 *   to one second for the timers);
 *   handle socket events, engine completions and messages.
 * The acceptor thread blocks in epoll on the listening sockets and hands
 * each accepted socket to the next network thread (round robin) through
 * that thread's message queue (mutex + eventfd: off the data path).
 *
 * Connection limits: past max_connections the acceptor closes a new
 * socket at once. At the file descriptor limit (EMFILE/ENFILE) it gives
 * up a reserve descriptor to accept the waiting connection and close it
 * (the peer sees a clean close, not a connection left hanging in the
 * backlog), then stops watching the listening sockets for a while that
 * doubles up to a second while the shortage lasts: no busy loop, and the
 * log says so once per 10 seconds (limits.h).
 */
#include "config.h"
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "backstore/io_engine.h"
#include "scsi/histo.h"
#include "scsi/stats.h"
#include "targetd/conn.h"
#include "targetd/fault.h"
#include "targetd/session.h"
#include "targetd/limits.h"
#include "targetd/net.h"
#include "targetd/target.h"

__thread struct net_thread *net_self;

static struct net_thread *threads;
static unsigned n_threads;
static pthread_t acceptor_tid;
static int acceptor_epfd = -1;
static int acceptor_stop_fd = -1;
static bool acceptor_running;
/* Portals closed at runtime (net_portal_remove): the acceptor thread
 * closes them itself, woken through acceptor_wake_fd, so that it never
 * accepts on a descriptor that is gone. */
static int acceptor_wake_fd = -1;
static int acceptor_wake_tag;
static pthread_mutex_t portal_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t portal_cond = PTHREAD_COND_INITIALIZER;

void net_assert_owner(const struct net_thread *owner, const char *what, const char *where)
{
	char self[48] = "a thread that is no network thread";

	if (net_self == owner)
		return;
	if (net_self)
		snprintf(self, sizeof(self), "network thread %u", net_self->idx);
	if (owner)
		log_err("BUG: %s: %s owned by network thread %u touched by %s", where, what, owner->idx,
			self);
	else
		log_err("BUG: %s: %s owned by no network thread touched by %s", where, what, self);
	abort();
}

uint64_t net_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

int net_epoll_add(struct net_thread *t, int fd, uint32_t events, int *tag)
{
	struct epoll_event ev = { .events = events, .data.ptr = tag };

	return epoll_ctl(t->epfd, EPOLL_CTL_ADD, fd, &ev);
}

int net_epoll_mod(struct net_thread *t, int fd, uint32_t events, int *tag)
{
	struct epoll_event ev = { .events = events, .data.ptr = tag };

	return epoll_ctl(t->epfd, EPOLL_CTL_MOD, fd, &ev);
}

void net_epoll_del(struct net_thread *t, int fd)
{
	epoll_ctl(t->epfd, EPOLL_CTL_DEL, fd, NULL);
}

void net_send(struct net_thread *t, enum net_msg_type type, int fd, void *ptr, uint64_t arg)
{
	struct net_msg *m = calloc(1, sizeof(*m));
	uint64_t one = 1;

	if (!m) {
		log_err("out of memory sending a thread message");
		if (fd >= 0)
			close(fd);
		return;
	}
	m->type = type;
	m->fd = fd;
	m->ptr = ptr;
	m->arg = arg;
	pthread_mutex_lock(&t->mq_lock);
	list_add_tail(&m->link, &t->mq);
	pthread_mutex_unlock(&t->mq_lock);
	if (write(t->msg_fd, &one, sizeof(one)) < 0)
		log_warn("eventfd write failed: %m");
}

static void describe_addr(const struct sockaddr_storage *ss, char *buf, size_t len, bool with_port)
{
	char host[INET6_ADDRSTRLEN] = "?";
	unsigned port = 0;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const void *)ss;
		inet_ntop(AF_INET, &a->sin_addr, host, sizeof(host));
		port = ntohs(a->sin_port);
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const void *)ss;
		inet_ntop(AF_INET6, &a->sin6_addr, host, sizeof(host));
		port = ntohs(a->sin6_port);
	}
	if (with_port)
		snprintf(buf, len, ss->ss_family == AF_INET6 ? "[%s]:%u" : "%s:%u", host, port);
	else
		snprintf(buf, len, "%s", host);
}

struct iscsi_conn *net_thread_add_conn(struct net_thread *t, int fd, struct iscsi_portal *portal)
{
	struct iscsi_conn *c;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c = iscsi_conn_new(t, fd, portal);
	if (!c) {
		close(fd);
		limit_conn_closed();
		return NULL;
	}
	if (!getpeername(fd, (struct sockaddr *)&ss, &sl))
		describe_addr(&ss, c->peer, sizeof(c->peer), true);
	sl = sizeof(ss);
	if (!getsockname(fd, (struct sockaddr *)&ss, &sl))
		describe_addr(&ss, c->local, sizeof(c->local), false);
	list_add_tail(&c->thread_link, &t->conns);
	t->n_conns++;
	if (net_epoll_add(t, fd, EPOLLIN, &c->epoll_tag)) {
		log_err("epoll_ctl: %m");
		iscsi_conn_close(c, "epoll failed");
		return NULL;
	}
	return c;
}

/* A logged-in connection handed over by another thread. */
void iscsi_conn_adopt(struct iscsi_conn *c, struct net_thread *t)
{
	struct iscsi_session *s = c->pending_session;

	c->thread = t;
	ASSERT_OWNER(c);   /* a message of t's own queue */
	c->pending_session = NULL;
	list_add_tail(&c->thread_link, &t->conns);
	t->n_conns++;
	c->last_rx_ms = t->now_ms;
	c->ev_mask = iscsi_conn_events(c);
	if (s->closing || net_epoll_add(t, c->fd, c->ev_mask, &c->epoll_tag)) {
		/* never joined: give its slot back (the session may end now) */
		atomic_fetch_sub(&s->conn_slots, 1);
		iscsi_conn_close(c, s->closing ? "session is closing" : "epoll failed");
		iscsi_session_put(s);
		return;
	}
	iscsi_conn_join(c, s);
	/* Bytes may already wait in the receive buffer. */
	iscsi_conn_event(c, EPOLLIN | EPOLLOUT);
}

static void close_session_by_id(struct net_thread *t, uint64_t id)
{
	struct list_head *pos, *tmp;

	list_for_each_safe(pos, tmp, &t->conns) {
		struct iscsi_conn *c = list_entry(pos, struct iscsi_conn, thread_link);

		ASSERT_OWNER(c);
		if (c->sess && c->sess->id == id)
			iscsi_conn_close(c, "session reinstated");
	}
}

struct net_call {
	net_call_fn fn;
	void *arg;
	pthread_mutex_t lock;
	pthread_cond_t cond;
	unsigned left;
};

void net_async(struct net_thread *t, struct net_async *a, uint64_t arg)
{
	net_send(t, MSG_ASYNC, -1, a, arg);
}

void net_call_all(net_call_fn fn, void *arg)
{
	struct net_call nc = { .fn = fn, .arg = arg, .left = n_threads };

	pthread_mutex_init(&nc.lock, NULL);
	pthread_cond_init(&nc.cond, NULL);
	for (unsigned i = 0; i < n_threads; i++)
		net_send(&threads[i], MSG_CALL, -1, &nc, 0);
	pthread_mutex_lock(&nc.lock);
	while (nc.left)
		pthread_cond_wait(&nc.cond, &nc.lock);
	pthread_mutex_unlock(&nc.lock);
	pthread_cond_destroy(&nc.cond);
	pthread_mutex_destroy(&nc.lock);
}

static void thread_messages(struct net_thread *t)
{
	struct list_head q;
	uint64_t v;

	if (read(t->msg_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("eventfd read failed: %m");
	list_init(&q);
	pthread_mutex_lock(&t->mq_lock);
	if (!list_empty(&t->mq)) {
		q.next = t->mq.next;
		q.prev = t->mq.prev;
		q.next->prev = &q;
		q.prev->next = &q;
		list_init(&t->mq);
	}
	pthread_mutex_unlock(&t->mq_lock);
	while (!list_empty(&q)) {
		struct net_msg *m = list_entry(q.next, struct net_msg, link);
		list_del(&m->link);
		switch (m->type) {
		case MSG_NEW_CONN:
			if (t->stopping) {
				close(m->fd);
				limit_conn_closed();
			} else
				net_thread_add_conn(t, m->fd, m->ptr);
			break;
		case MSG_ADOPT_CONN:
			iscsi_conn_adopt(m->ptr, t);
			break;
		case MSG_CLOSE_SESSION:
			close_session_by_id(t, m->arg);
			break;
		case MSG_STOP:
			t->stopping = true;
			break;
		case MSG_ASYNC: {
			struct net_async *a = m->ptr;
			a->fn(t, a, m->arg);
			break;
		}
		case MSG_CALL: {
			struct net_call *nc = m->ptr;
			nc->fn(t, nc->arg);
			pthread_mutex_lock(&nc->lock);
			nc->left--;
			pthread_cond_signal(&nc->cond);
			pthread_mutex_unlock(&nc->lock);
			break;
		}
		}
		free(m);
	}
}

static void flush_dirty(struct net_thread *t)
{
	while (!list_empty(&t->dirty)) {
		struct iscsi_conn *c = list_entry(t->dirty.next, struct iscsi_conn, dirty_link);
		list_del(&c->dirty_link);
		iscsi_conn_flush(c);
	}
}

/* Connections that may hold unread bytes in their receive buffer (read
 * again after a pause). */
static void read_kicked(struct net_thread *t)
{
	while (!list_empty(&t->kick)) {
		struct iscsi_conn *c = list_entry(t->kick.next, struct iscsi_conn, kick_link);
		list_del(&c->kick_link);
		iscsi_conn_event(c, EPOLLIN);
	}
}

int net_thread_turn(struct net_thread *t, int max_wait_ms)
{
	struct epoll_event evs[64];
	int n, timeout;
	bool msgs = false;

	iscsi_conn_reap(t);
	flush_dirty(t);
	read_kicked(t);
	flush_dirty(t);
	io_engine_flush(t->eng);
	if (t->stopping) {
		/* Shutdown: close connections, then wait for the backstore. */
		struct list_head *pos, *tmp;
		list_for_each_safe(pos, tmp, &t->conns)
			iscsi_conn_close(list_entry(pos, struct iscsi_conn, thread_link), "shutting down");
		if (!t->stop_deadline)
			t->stop_deadline = t->now_ms + 30000;
		if (!io_engine_inflight(t->eng) || t->now_ms > t->stop_deadline)
			return 1;
		max_wait_ms = MIN(max_wait_ms, 100);
	}
	timeout = io_engine_busy(t->eng) ? 0 : max_wait_ms;
	__atomic_add_fetch(&t->epoch, 1, __ATOMIC_SEQ_CST);   /* idle: quiescent */
	n = epoll_wait(t->epfd, evs, (int)ARRAY_SIZE(evs), timeout);
	__atomic_add_fetch(&t->epoch, 1, __ATOMIC_SEQ_CST);
	t->now_ms = t->clock_ms();
	if (n < 0) {
		if (errno != EINTR) {
			log_err("epoll_wait: %m");
			return -1;
		}
		n = 0;
	}
	for (int i = 0; i < n; i++) {
		int *tag = evs[i].data.ptr;
		switch (*tag) {
		case TAG_CONN:
			iscsi_conn_event(container_of(tag, struct iscsi_conn, epoll_tag), evs[i].events);
			break;
		case TAG_ENGINE:
			break;   /* polled below */
		case TAG_MSG:
			msgs = true;   /* after the batch: a message may free a
					* connection that has an event below */
			break;
		default:
			break;
		}
	}
	if (msgs)
		thread_messages(t);
	io_engine_poll(t->eng);
	if (t->now_ms - t->last_tick >= 1000) {
		struct list_head *pos, *tmp;
		t->last_tick = t->now_ms;
		list_for_each_safe(pos, tmp, &t->conns)
			iscsi_conn_timer(list_entry(pos, struct iscsi_conn, thread_link), t->now_ms);
	}
	return 0;
}

static void *net_thread_main(void *arg)
{
	struct net_thread *t = arg;

	net_self = t;
	scsi_stats_thread_init(t->idx);
	scsi_histo_thread_init(t->idx);
	t->now_ms = t->clock_ms();
	while (net_thread_turn(t, 1000) == 0)
		;
	return NULL;
}

/* ---- listeners ------------------------------------------------------ */

/* Bind and listen on one portal. 0, or -1 with the reason in err. */
static int portal_listen(struct iscsi_portal *p, char *err, size_t cap)
{
	struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *ai;
	int fd, one = 1, rc;

	rc = getaddrinfo(p->host, p->port, &hints, &ai);
	if (rc) {
		snprintf(err, cap, "listen %s:%s: %s", p->host, p->port, gai_strerror(rc));
		return -1;
	}
	fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0) {
		snprintf(err, cap, "socket: %s", strerror(errno));
		freeaddrinfo(ai);
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	if (ai->ai_family == AF_INET6)
		setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
	if (bind(fd, ai->ai_addr, ai->ai_addrlen) || listen(fd, 128)) {
		snprintf(err, cap, "cannot listen on %s:%s: %s", p->host, p->port, strerror(errno));
		close(fd);
		freeaddrinfo(ai);
		return -1;
	}
	freeaddrinfo(ai);
	p->fd = fd;
	return 0;
}

int net_open_listeners(void)
{
	char err[256];

	for (unsigned i = 0; i < target_runtime->n_portals; i++) {
		if (portal_listen(&target_runtime->portals[i], err, sizeof(err))) {
			log_err("%s", err);
			return -1;
		}
	}
	return 0;
}

static int reserve_fd = -1;   /* given up to refuse a connection at the fd limit */

/* Watch the listening sockets (on) or not (off: backing off). */
static void acceptor_arm(bool on)
{
	for (unsigned i = 0; i < __atomic_load_n(&target_runtime->n_portals, __ATOMIC_ACQUIRE); i++) {
		struct epoll_event ev = { .events = on ? EPOLLIN : 0, .data.ptr = &target_runtime->portals[i] };

		if (target_runtime->portals[i].fd >= 0)
			epoll_ctl(acceptor_epfd, EPOLL_CTL_MOD, target_runtime->portals[i].fd, &ev);
	}
}

/* accept() failed with EMFILE/ENFILE: refuse the waiting connection with
 * the reserve descriptor, so it is closed rather than left hanging. */
static void accept_at_fd_limit(struct iscsi_portal *p)
{
	int fd;

	limit_hit(LIM_FD_EXHAUSTED, "accept on %s:%s: %s; refusing connections (raise the descriptor "
		  "limit, LimitNOFILE=, or lower max_connections)", p->host, p->port, strerror(errno));
	if (reserve_fd < 0)
		return;
	close(reserve_fd);
	reserve_fd = -1;
	fd = accept4(p->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
	if (fd >= 0)
		close(fd);
	reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
}

/* Accept what waits on p. Returns false at the descriptor limit. */
static bool accept_portal(struct iscsi_portal *p, unsigned *next)
{
	if (p->fd < 0)
		return true;   /* closed by net_portal_remove (earlier in this batch) */
	for (;;) {
		int fd = accept4(p->fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE) {
				accept_at_fd_limit(p);
				return false;
			}
			if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR &&
			    errno != ECONNABORTED)
				log_warn("accept on %s:%s: %m", p->host, p->port);
			return true;
		}
		if (fault_conn_on() && fault_conn_refuse_accept(p)) {
			close(fd);   /* fault injection: the portal is down */
			continue;
		}
		if (target_runtime->res.max_connections && limit_conn_count() >= target_runtime->res.max_connections) {
			close(fd);
			limit_hit(LIM_MAX_CONNECTIONS, "%u connections open; a new one on %s:%s closed",
				  limit_conn_count(), p->host, p->port);
			continue;
		}
		limit_conn_opened();
		net_send(&threads[(*next)++ % n_threads], MSG_NEW_CONN, fd, p, 0);
	}
}

int net_portal_add(struct iscsi_portal *p, char *err, size_t cap)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = p };

	if (portal_listen(p, err, cap))
		return -1;
	if (acceptor_running && epoll_ctl(acceptor_epfd, EPOLL_CTL_ADD, p->fd, &ev)) {
		snprintf(err, cap, "epoll_ctl: %s", strerror(errno));
		close(p->fd);
		p->fd = -1;
		return -1;
	}
	return 0;
}

void net_portal_remove(struct iscsi_portal *p)
{
	uint64_t one = 1;

	pthread_mutex_lock(&portal_lock);
	__atomic_store_n(&p->closing, true, __ATOMIC_RELEASE);
	if (write(acceptor_wake_fd, &one, sizeof(one)) < 0)
		log_warn("eventfd write: %m");
	while (p->fd >= 0)
		pthread_cond_wait(&portal_cond, &portal_lock);
	pthread_mutex_unlock(&portal_lock);
}

/* On the acceptor thread: close the portals asked to close. */
static void acceptor_close_portals(void)
{
	uint64_t v;

	if (read(acceptor_wake_fd, &v, sizeof(v)) < 0 && errno != EAGAIN)
		log_warn("eventfd read: %m");
	pthread_mutex_lock(&portal_lock);
	for (unsigned i = 0; i < __atomic_load_n(&target_runtime->n_portals, __ATOMIC_ACQUIRE); i++) {
		struct iscsi_portal *p = &target_runtime->portals[i];

		if (!__atomic_load_n(&p->closing, __ATOMIC_ACQUIRE) || p->fd < 0)
			continue;
		epoll_ctl(acceptor_epfd, EPOLL_CTL_DEL, p->fd, NULL);
		close(p->fd);
		p->fd = -1;
	}
	pthread_cond_broadcast(&portal_cond);
	pthread_mutex_unlock(&portal_lock);
}

static void *acceptor_main(void *arg)
{
	unsigned next = 0;
	int backoff_ms = 0;
	(void)arg;

	reserve_fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
	for (;;) {
		struct epoll_event evs[16];
		int n = epoll_wait(acceptor_epfd, evs, 16, backoff_ms ? backoff_ms : -1);
		bool starved = false;

		if (n < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (n == 0 && backoff_ms) {
			/* the pause is over: look again (every portal) */
			for (unsigned i = 0; i < __atomic_load_n(&target_runtime->n_portals, __ATOMIC_ACQUIRE); i++)
				if (!accept_portal(&target_runtime->portals[i], &next))
					starved = true;
		}
		for (int i = 0; i < n; i++) {
			struct iscsi_portal *p = evs[i].data.ptr;
			if (!p)
				goto out;   /* stop */
			if (evs[i].data.ptr == &acceptor_wake_tag) {
				acceptor_close_portals();
				continue;
			}
			if (!accept_portal(p, &next))
				starved = true;
		}
		if (starved) {
			if (!backoff_ms)
				acceptor_arm(false);
			backoff_ms = backoff_ms ? MIN(backoff_ms * 2, 1000) : 50;
		} else if (backoff_ms && n == 0) {
			acceptor_arm(true);
			backoff_ms = 0;
		}
	}
out:
	if (reserve_fd >= 0)
		close(reserve_fd);
	reserve_fd = -1;
	return NULL;
}

int net_thread_init(struct net_thread *t, unsigned idx, bool use_uring)
{
	memset(t, 0, sizeof(*t));
	t->idx = idx;
	t->clock_ms = net_now_ms;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	t->msg_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	t->eng = io_engine_create(256, use_uring);
	if (t->epfd < 0 || t->msg_fd < 0 || !t->eng) {
		log_err("cannot set up network thread %u", idx);
		return -1;
	}
	bufpool_init(&t->pool, 256u << 20);
	pthread_mutex_init(&t->mq_lock, NULL);
	list_init(&t->mq);
	list_init(&t->conns);
	list_init(&t->dirty);
	list_init(&t->graveyard);
	list_init(&t->kick);
	t->engine_tag = TAG_ENGINE;
	t->msg_tag = TAG_MSG;
	net_epoll_add(t, io_engine_fd(t->eng), EPOLLIN, &t->engine_tag);
	net_epoll_add(t, t->msg_fd, EPOLLIN, &t->msg_tag);
	return 0;
}

void net_thread_destroy(struct net_thread *t)
{
	/* drain messages that raced with the stop */
	while (!list_empty(&t->mq)) {
		struct net_msg *m = list_entry(t->mq.next, struct net_msg, link);
		list_del(&m->link);
		if (m->fd >= 0) {
			close(m->fd);
			limit_conn_closed();
		}
		free(m);
	}
	iscsi_conn_reap(t);
	io_engine_destroy(t->eng);
	bufpool_destroy(&t->pool);
	close(t->epfd);
	close(t->msg_fd);
	pthread_mutex_destroy(&t->mq_lock);
}

int net_start(unsigned count)
{
	n_threads = count;
	/* A fixed mmap threshold: glibc would otherwise raise it after large
	 * frees and keep peer-sized buffers (NOP-Out data, echoes) in the
	 * heap after their connection is gone. */
	mallopt(M_MMAP_THRESHOLD, 128 * 1024);
	threads = calloc(count, sizeof(*threads));
	if (!threads)
		return -1;
	for (unsigned i = 0; i < count; i++) {
		struct net_thread *t = &threads[i];
		if (net_thread_init(t, i, target_runtime->conf->use_io_uring))
			return -1;
		if (pthread_create(&t->tid, NULL, net_thread_main, t)) {
			log_err("pthread_create failed");
			return -1;
		}
	}
	acceptor_epfd = epoll_create1(EPOLL_CLOEXEC);
	acceptor_stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	acceptor_wake_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (acceptor_epfd < 0 || acceptor_stop_fd < 0 || acceptor_wake_fd < 0)
		return -1;
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &acceptor_wake_tag };
		epoll_ctl(acceptor_epfd, EPOLL_CTL_ADD, acceptor_wake_fd, &ev);
	}
	for (unsigned i = 0; i < target_runtime->n_portals; i++) {
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = &target_runtime->portals[i] };
		epoll_ctl(acceptor_epfd, EPOLL_CTL_ADD, target_runtime->portals[i].fd, &ev);
	}
	{
		struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
		epoll_ctl(acceptor_epfd, EPOLL_CTL_ADD, acceptor_stop_fd, &ev);
	}
	if (pthread_create(&acceptor_tid, NULL, acceptor_main, NULL))
		return -1;
	acceptor_running = true;
	return 0;
}

void net_synchronize(void)
{
	for (unsigned i = 0; i < n_threads; i++) {
		struct net_thread *t = &threads[i];
		uint64_t e = __atomic_load_n(&t->epoch, __ATOMIC_SEQ_CST);

		if (e & 1)
			continue;   /* idle now: holds nothing loaded earlier */
		for (unsigned k = 0; k < 10000 && __atomic_load_n(&t->epoch, __ATOMIC_SEQ_CST) == e; k++) {
			struct timespec ts = { 0, 1000000 };
			nanosleep(&ts, NULL);
		}
	}
}

void net_stop(void)
{
	uint64_t one = 1;

	if (acceptor_running) {
		if (write(acceptor_stop_fd, &one, sizeof(one)) < 0)
			log_warn("eventfd write: %m");
		pthread_join(acceptor_tid, NULL);
		acceptor_running = false;
	}
	for (unsigned i = 0; i < target_runtime->n_portals; i++) {
		if (target_runtime->portals[i].fd >= 0)
			close(target_runtime->portals[i].fd);
		target_runtime->portals[i].fd = -1;
	}
	for (unsigned i = 0; i < n_threads; i++)
		net_send(&threads[i], MSG_STOP, -1, NULL, 0);
	for (unsigned i = 0; i < n_threads; i++) {
		struct net_thread *t = &threads[i];
		pthread_join(t->tid, NULL);
		net_thread_destroy(t);
	}
	free(threads);
	threads = NULL;
	if (acceptor_epfd >= 0)
		close(acceptor_epfd);
	if (acceptor_stop_fd >= 0)
		close(acceptor_stop_fd);
	if (acceptor_wake_fd >= 0)
		close(acceptor_wake_fd);
	acceptor_epfd = acceptor_stop_fd = acceptor_wake_fd = -1;
}
