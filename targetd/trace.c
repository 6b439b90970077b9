/*
 * Command traces. DESIGN (threads, rings, dropping, stopping): see
 * targetd/trace.h; the file format: common/trace_format.h.
 */
#include "config.h"
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>
#include "common/crc32c.h"
#include "common/log.h"
#include "common/trace_format.h"
#include "targetd/session.h"
#include "targetd/net.h"
#include "targetd/target.h"
#include "targetd/trace.h"

/* One producer's ring of records. A PAD header of length 0 means "the
 * rest of the ring is empty, go on at its start". */
struct trace_ring {
	uint8_t *buf;
	size_t head;                     /* producer; atomic */
	size_t tail;                     /* writer; atomic */
	uint64_t dropped;                /* producer; atomic */
} __attribute__((aligned(64)));

struct trace_state {
	struct iscsi_target *target;
	int lun;
	char initiator[224];
	bool data;
	uint32_t gen;                    /* sessions compare their trace_gen */
	uint64_t start_mono, start_real;
	unsigned n_rings;                /* network threads + the shared one */
	struct trace_ring *rings;
	pthread_mutex_t shared_lock;     /* the last ring's producers */
	int fd;
	char path[4096];
	uint64_t max_bytes;
	pthread_t writer;
	_Atomic bool stop;
	/* the writer's (read by trace_get_status: atomics) */
	uint64_t bytes, commands, dropped_seen, dropped_full;
	bool full;
	uint8_t *wbuf;                   /* records on their way to the file */
	size_t wlen;
};

#define TRACE_WBUF (256u << 10)

_Atomic bool trace_running;
static struct trace_state *_Atomic trace_cur;
static pthread_mutex_t trace_ctl_lock = PTHREAD_MUTEX_INITIALIZER;   /* start/stop/status */
static uint32_t trace_gen_next = 1;

static uint64_t clock_ns(clockid_t id)
{
	struct timespec ts;

	clock_gettime(id, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* ---- producers ---------------------------------------------------------- */

/* Room for len bytes (8-aligned) in r, or NULL: the record is dropped. */
static uint8_t *ring_reserve(struct trace_ring *r, size_t len)
{
	size_t head = __atomic_load_n(&r->head, __ATOMIC_RELAXED);   /* ours */
	size_t tail = __atomic_load_n(&r->tail, __ATOMIC_ACQUIRE);
	size_t pos = head & (TRACE_RING_BYTES - 1);
	size_t need = len;

	if (pos + len > TRACE_RING_BYTES)
		need += TRACE_RING_BYTES - pos;   /* skip to the start */
	if (TRACE_RING_BYTES - (head - tail) < need)
		return NULL;
	if (need != len) {
		struct trace_rec_hdr pad = { TRACE_REC_PAD, 0 };

		memcpy(r->buf + pos, &pad, sizeof(pad));
		head += TRACE_RING_BYTES - pos;
		__atomic_store_n(&r->head, head, __ATOMIC_RELEASE);
		pos = 0;
	}
	return r->buf + pos;
}

static void ring_commit(struct trace_ring *r, size_t len)
{
	__atomic_store_n(&r->head, __atomic_load_n(&r->head, __ATOMIC_RELAXED) + len,
			 __ATOMIC_RELEASE);
}

static void ring_drop(struct trace_ring *r)
{
	__atomic_store_n(&r->dropped, __atomic_load_n(&r->dropped, __ATOMIC_RELAXED) + 1,
			 __ATOMIC_RELAXED);
}

static size_t nexus_record(uint8_t *p, const struct iscsi_session *s)
{
	struct trace_rec_nexus n = { 0 };
	size_t il = strnlen(s->nexus.initiator_port, sizeof(s->nexus.initiator_port));
	size_t tl = s->target ? strnlen(s->target->iqn, sizeof(s->target->iqn)) : 0;
	size_t len = TRACE_ALIGN(sizeof(n) + il + tl);

	if (!p)
		return len;
	memset(p, 0, len);
	n.h.type = htole16(TRACE_REC_NEXUS);
	n.h.len = htole16((uint16_t)len);
	n.tpgt = htole16(s->nexus.tpgt);
	n.initiator_len = htole16((uint16_t)il);
	n.target_len = htole16((uint16_t)tl);
	n.nexus = htole64(s->nexus.id);
	memcpy(n.isid, s->isid, 6);
	memcpy(p, &n, sizeof(n));
	memcpy(p + sizeof(n), s->nexus.initiator_port, il);
	if (tl)
		memcpy(p + sizeof(n) + il, s->target->iqn, tl);
	return len;
}

static uint32_t data_crc(const struct iscsi_task *t, uint32_t *len)
{
	const struct scsi_cmd *cmd = &t->cmd;
	const uint8_t *p = NULL;

	*len = 0;
	if (cmd->dir == SCSI_DIR_READ && !t->parse_failed && t->sent_status) {
		p = cmd->data_ptr ? cmd->data_ptr : cmd->buf;
		*len = t->tx_len;
	} else if (cmd->dir == SCSI_DIR_WRITE) {
		p = cmd->buf;
		*len = cmd->buf_len;
	}
	if (!p || !*len) {
		*len = 0;
		return crc32c(NULL, 0);
	}
	return crc32c(p, *len);
}

/* SPC-4 4.2.5.1: the CDB's length from its group code (the iSCSI PDU
 * always carries 16 bytes). */
static uint8_t trace_cdb_len(const struct scsi_cmd *cmd)
{
	switch (cmd->cdb[0] >> 5) {
	case 0: return 6;
	case 1: case 2: return 10;
	case 4: return 16;
	case 5: return 12;
	default: return cmd->cdb_len >= 6 && cmd->cdb_len <= 32 ? cmd->cdb_len : 16;
	}
}

static size_t command_record(uint8_t *p, const struct trace_state *ts, const struct iscsi_task *t)
{
	const struct scsi_cmd *cmd = &t->cmd;
	uint8_t cdb_len = trace_cdb_len(cmd);
	uint8_t sense_len = MIN(cmd->sense_len, 96);
	size_t len = TRACE_ALIGN(sizeof(struct trace_rec_command) + cdb_len + sense_len);
	struct trace_rec_command c = { 0 };
	uint64_t now = clock_ns(CLOCK_MONOTONIC);
	uint32_t dlen = 0;

	if (!p)
		return len;
	memset(p, 0, len);
	c.h.type = htole16(TRACE_REC_COMMAND);
	c.h.len = htole16((uint16_t)len);
	c.cdb_len = cdb_len;
	c.sense_len = sense_len;
	c.status = t->sent_status ? cmd->status : 0;
	c.flags = (uint8_t)((t->sent_status ? TRACE_C_SENT : 0) |
			    (cmd->exp_dir == SCSI_DIR_READ ? TRACE_C_READ : 0) |
			    (cmd->exp_dir == SCSI_DIR_WRITE ? TRACE_C_WRITE : 0) |
			    (t->immediate ? TRACE_C_IMMEDIATE : 0));
	c.arrival_ns = htole64(cmd->start_ns > ts->start_mono ? cmd->start_ns - ts->start_mono : 0);
	c.nexus = htole64(t->sess->nexus.id);
	c.lun = htole64(cmd->lun_id);
	c.cmdsn = htole32(t->cmdsn);
	c.itt = htole32(t->itt);
	c.exp_xfer_len = htole32(cmd->exp_xfer_len);
	c.latency_ns = htole64(now > cmd->start_ns ? now - cmd->start_ns : 0);
	c.task_attr = cmd->task_attr;
	if (ts->data) {
		c.data_crc = htole32(data_crc(t, &dlen));
		c.flags |= TRACE_C_CRC;
	} else if (cmd->dir == SCSI_DIR_READ && t->sent_status) {
		dlen = t->tx_len;
	} else if (cmd->dir == SCSI_DIR_WRITE) {
		dlen = cmd->buf_len;
	}
	c.data_len = htole32(dlen);
	memcpy(p, &c, sizeof(c));
	memcpy(p + sizeof(c), cmd->cdb, cdb_len);
	memcpy(p + sizeof(c) + cdb_len, cmd->sense, sense_len);
	return len;
}

static bool trace_wants(const struct trace_state *ts, const struct iscsi_task *t)
{
	const struct iscsi_session *s = t->sess;

	if (!s || s->target != ts->target)
		return false;
	if (ts->lun >= 0 && t->cmd.lun_id != (uint64_t)ts->lun)
		return false;
	return !ts->initiator[0] || !strcasecmp(ts->initiator, s->initiator);
}

static void trace_emit(struct trace_state *ts, struct trace_ring *r, struct iscsi_task *t)
{
	struct iscsi_session *s = t->sess;
	uint8_t *p;
	size_t len;

	if (s->trace_gen != ts->gen) {
		len = nexus_record(NULL, s);
		p = ring_reserve(r, len);
		if (!p) {
			ring_drop(r);
			return;
		}
		nexus_record(p, s);
		ring_commit(r, len);
		s->trace_gen = ts->gen;
	}
	len = command_record(NULL, ts, t);
	p = ring_reserve(r, len);
	if (!p) {
		ring_drop(r);
		return;
	}
	command_record(p, ts, t);
	ring_commit(r, len);
}

void trace_task_end_slow(struct iscsi_task *t)
{
	struct trace_state *ts = atomic_load_explicit(&trace_cur, memory_order_acquire);
	unsigned idx;

	if (!ts || !trace_wants(ts, t))
		return;
	idx = net_self && net_self->idx + 1 < ts->n_rings ? net_self->idx : ts->n_rings - 1;
	if (idx == ts->n_rings - 1) {
		pthread_mutex_lock(&ts->shared_lock);
		trace_emit(ts, &ts->rings[idx], t);
		pthread_mutex_unlock(&ts->shared_lock);
	} else {
		trace_emit(ts, &ts->rings[idx], t);
	}
}

/* ---- the writer --------------------------------------------------------- */

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		p += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Write out what wbuf holds. */
static void writer_flush(struct trace_state *ts)
{
	if (!ts->wlen)
		return;
	if (write_all(ts->fd, ts->wbuf, ts->wlen)) {
		log_err("trace %s: write: %m; the trace stops recording", ts->path);
		ts->full = true;
	}
	ts->wlen = 0;
}

static void writer_put(struct trace_state *ts, const uint8_t *rec, size_t len)
{
	struct trace_rec_hdr h;

	memcpy(&h, rec, sizeof(h));
	/* room for a DROPPED and the END after the last record */
	if (ts->full || ts->bytes + len + sizeof(struct trace_rec_dropped) +
			sizeof(struct trace_rec_end) > ts->max_bytes) {
		if (!ts->full)
			log_warn("trace %s: reached %llu bytes; no more commands are recorded",
				 ts->path, (unsigned long long)ts->max_bytes);
		ts->full = true;
		if (le16toh(h.type) == TRACE_REC_COMMAND)
			__atomic_add_fetch(&ts->dropped_full, 1, __ATOMIC_RELAXED);
		return;
	}
	if (ts->wlen + len > TRACE_WBUF)
		writer_flush(ts);
	memcpy(ts->wbuf + ts->wlen, rec, len);
	ts->wlen += len;
	__atomic_add_fetch(&ts->bytes, len, __ATOMIC_RELAXED);
	if (le16toh(h.type) == TRACE_REC_COMMAND)
		__atomic_add_fetch(&ts->commands, 1, __ATOMIC_RELAXED);
}

static void writer_dropped(struct trace_state *ts, bool force_room)
{
	struct trace_rec_dropped d = { 0 };
	uint64_t sum = 0;

	for (unsigned i = 0; i < ts->n_rings; i++)
		sum += __atomic_load_n(&ts->rings[i].dropped, __ATOMIC_RELAXED);
	if (sum == ts->dropped_seen)
		return;
	d.h.type = htole16(TRACE_REC_DROPPED);
	d.h.len = htole16(sizeof(d));
	d.count = htole64(sum - ts->dropped_seen);
	d.at_ns = htole64(clock_ns(CLOCK_MONOTONIC) - ts->start_mono);
	if (ts->full && !force_room)
		return;   /* counted in the END record */
	writer_flush(ts);
	if (!write_all(ts->fd, (const uint8_t *)&d, sizeof(d))) {
		__atomic_add_fetch(&ts->bytes, sizeof(d), __ATOMIC_RELAXED);
		ts->dropped_seen = sum;
	}
}

/* Move what every ring holds to the file; how many bytes it moved. */
static size_t writer_drain(struct trace_state *ts)
{
	size_t moved = 0;

	for (unsigned i = 0; i < ts->n_rings; i++) {
		struct trace_ring *r = &ts->rings[i];
		size_t head = __atomic_load_n(&r->head, __ATOMIC_ACQUIRE);
		size_t tail = r->tail;

		while (tail != head) {
			size_t pos = tail & (TRACE_RING_BYTES - 1);
			struct trace_rec_hdr h;
			uint16_t len;

			memcpy(&h, r->buf + pos, sizeof(h));
			len = le16toh(h.len);
			if (le16toh(h.type) == TRACE_REC_PAD && len == 0) {
				tail += TRACE_RING_BYTES - pos;
				continue;
			}
			writer_put(ts, r->buf + pos, len);
			tail += len;
			moved += len;
		}
		writer_flush(ts);   /* the ring's space goes back only once written */
		__atomic_store_n(&r->tail, tail, __ATOMIC_RELEASE);
	}
	writer_dropped(ts, false);
	return moved;
}

static void *trace_writer_main(void *arg)
{
	struct trace_state *ts = arg;
	const struct timespec nap = { 0, 2 * 1000 * 1000 };

	while (!atomic_load(&ts->stop))
		if (!writer_drain(ts))
			nanosleep(&nap, NULL);
	return NULL;
}

/* ---- control ------------------------------------------------------------ */

static void state_free(struct trace_state *ts)
{
	if (ts->rings)
		for (unsigned i = 0; i < ts->n_rings; i++)
			free(ts->rings[i].buf);
	free(ts->rings);
	free(ts->wbuf);
	if (ts->fd >= 0)
		close(ts->fd);
	pthread_mutex_destroy(&ts->shared_lock);
	free(ts);
}

static int write_header(struct trace_state *ts)
{
	struct trace_file_header h = { 0 };

	memcpy(h.magic, TRACE_MAGIC, 8);
	h.version = htole16(TRACE_VERSION);
	h.header_len = htole16(TRACE_HEADER_LEN);
	h.flags = htole32(ts->data ? TRACE_F_DATA_CRC : 0);
	h.start_real_ns = htole64(ts->start_real);
	h.start_mono_ns = htole64(ts->start_mono);
	h.max_bytes = htole64(ts->max_bytes);
	h.lun = htole16(ts->lun < 0 ? 0xffff : (uint16_t)ts->lun);
	if (write_all(ts->fd, (const uint8_t *)&h, sizeof(h)))
		return -1;
	ts->bytes = sizeof(h);
	return 0;
}

static struct trace_state *state_new(const struct trace_params *p, char *err, size_t errlen)
{
	struct trace_state *ts = calloc(1, sizeof(*ts));

	if (!ts) {
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	ts->fd = -1;
	pthread_mutex_init(&ts->shared_lock, NULL);
	ts->target = p->target;
	ts->lun = p->lun;
	snprintf(ts->initiator, sizeof(ts->initiator), "%s", p->initiator ? p->initiator : "");
	snprintf(ts->path, sizeof(ts->path), "%s", p->path);
	ts->data = p->data;
	ts->max_bytes = p->max_bytes ? p->max_bytes : TRACE_DEFAULT_MAX;
	ts->n_rings = (p->n_threads ? p->n_threads : 1) + 1;
	ts->rings = calloc(ts->n_rings, sizeof(*ts->rings));
	ts->wbuf = malloc(TRACE_WBUF);
	if (!ts->rings || !ts->wbuf)
		goto nomem;
	for (unsigned i = 0; i < ts->n_rings; i++) {
		ts->rings[i].buf = aligned_alloc(64, TRACE_RING_BYTES);
		if (!ts->rings[i].buf)
			goto nomem;
	}
	return ts;
nomem:
	snprintf(err, errlen, "out of memory for %u rings of %u bytes", ts->n_rings, TRACE_RING_BYTES);
	state_free(ts);
	return NULL;
}

int trace_start(const struct trace_params *p, char *err, size_t errlen)
{
	struct trace_state *ts;

	pthread_mutex_lock(&trace_ctl_lock);
	if (atomic_load(&trace_cur)) {
		snprintf(err, errlen, "a trace runs already (%s); stop it first (targetctl trace stop)",
			 atomic_load(&trace_cur)->path);
		goto fail;
	}
	if (p->max_bytes && p->max_bytes < 4096) {
		snprintf(err, errlen, "max size %llu bytes: too small for a trace (at least 4096)",
			 (unsigned long long)p->max_bytes);
		goto fail;
	}
	ts = state_new(p, err, errlen);
	if (!ts)
		goto fail;
	/* never an existing file: a trace does not overwrite anything */
	ts->fd = open(p->path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (ts->fd < 0) {
		snprintf(err, errlen, "%s: %s%s", p->path, strerror(errno),
			 errno == EEXIST ? " (a trace never overwrites a file: name a new one)" : "");
		state_free(ts);
		goto fail;
	}
	ts->start_mono = clock_ns(CLOCK_MONOTONIC);
	ts->start_real = clock_ns(CLOCK_REALTIME);
	ts->gen = trace_gen_next++;
	if (!ts->gen)
		ts->gen = trace_gen_next++;   /* 0 is "never traced" */
	if (write_header(ts) || pthread_create(&ts->writer, NULL, trace_writer_main, ts)) {
		snprintf(err, errlen, "%s: cannot write the trace: %s", p->path, strerror(errno));
		unlink(p->path);   /* ours, created just now and empty */
		state_free(ts);
		goto fail;
	}
	atomic_store_explicit(&trace_cur, ts, memory_order_release);
	atomic_store_explicit(&trace_running, true, memory_order_release);
	pthread_mutex_unlock(&trace_ctl_lock);
	log_info("trace %s started: target %s, LUN %s%s%s%s", ts->path, ts->target->iqn,
		 ts->lun < 0 ? "all" : "", ts->initiator[0] ? ", initiator " : "", ts->initiator,
		 ts->data ? ", with data CRC32C" : "");
	return 0;
fail:
	pthread_mutex_unlock(&trace_ctl_lock);
	return -1;
}

static void status_of(const struct trace_state *ts, struct trace_status *o)
{
	uint64_t dropped = 0;

	memset(o, 0, sizeof(*o));
	o->active = true;
	snprintf(o->path, sizeof(o->path), "%s", ts->path);
	snprintf(o->target, sizeof(o->target), "%s", ts->target->iqn);
	o->lun = ts->lun;
	snprintf(o->initiator, sizeof(o->initiator), "%s", ts->initiator);
	o->data = ts->data;
	o->max_bytes = ts->max_bytes;
	o->commands = __atomic_load_n(&ts->commands, __ATOMIC_RELAXED);
	for (unsigned i = 0; i < ts->n_rings; i++)
		dropped += __atomic_load_n(&ts->rings[i].dropped, __ATOMIC_RELAXED);
	o->dropped = dropped;
	o->dropped_full = __atomic_load_n(&ts->dropped_full, __ATOMIC_RELAXED);
	o->bytes = __atomic_load_n(&ts->bytes, __ATOMIC_RELAXED);
	o->started_real_ns = ts->start_real;
}

void trace_get_status(struct trace_status *out)
{
	struct trace_state *ts;

	pthread_mutex_lock(&trace_ctl_lock);
	ts = atomic_load(&trace_cur);
	if (ts)
		status_of(ts, out);
	else
		memset(out, 0, sizeof(*out));
	pthread_mutex_unlock(&trace_ctl_lock);
}

int trace_stop(struct trace_status *out)
{
	struct trace_state *ts;
	struct trace_rec_end e = { 0 };

	pthread_mutex_lock(&trace_ctl_lock);
	ts = atomic_load(&trace_cur);
	if (!ts) {
		pthread_mutex_unlock(&trace_ctl_lock);
		return -1;
	}
	atomic_store_explicit(&trace_running, false, memory_order_release);
	atomic_store_explicit(&trace_cur, NULL, memory_order_release);
	net_synchronize();   /* no network thread is inside trace_emit() now */
	atomic_store(&ts->stop, true);
	pthread_join(ts->writer, NULL);
	writer_drain(ts);
	writer_dropped(ts, true);
	status_of(ts, out);
	e.h.type = htole16(TRACE_REC_END);
	e.h.len = htole16(sizeof(e));
	e.commands = htole64(out->commands);
	e.dropped = htole64(out->dropped + out->dropped_full);
	e.bytes = htole64(out->bytes + sizeof(e));
	e.at_ns = htole64(clock_ns(CLOCK_MONOTONIC) - ts->start_mono);
	if (!write_all(ts->fd, (const uint8_t *)&e, sizeof(e)))
		out->bytes += sizeof(e);
	if (fsync(ts->fd))
		log_warn("trace %s: fsync: %m", ts->path);
	out->active = false;
	log_info("trace %s stopped: %llu commands, %llu dropped, %llu bytes", ts->path,
		 (unsigned long long)out->commands,
		 (unsigned long long)(out->dropped + out->dropped_full),
		 (unsigned long long)out->bytes);
	state_free(ts);
	pthread_mutex_unlock(&trace_ctl_lock);
	return 0;
}
