/*
 * vaai-lab sessions and the event loop.
 *
 * DESIGN (one thread): every session is a libiscsi context of its own,
 * logged in with its own initiator name (a "host"). lab_run_until() polls
 * all of their sockets with ppoll(), lets libiscsi service the ready ones
 * (which runs the completion callbacks of finished commands), and fires
 * the armed timers whose time has come. Timers live in their owners'
 * structures; the loop only keeps an array of pointers to the armed ones
 * (swap-remove on cancel), which stays short: one per session slot.
 * Set-up (login, capacity, VPD pages) uses libiscsi's blocking calls while
 * a session has nothing in flight; everything measured is asynchronous.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <netinet/in.h>
#include <linux/tcp.h>
#include "tools/lab/lab.h"

static struct lab_sess *sessions[LAB_MAX_SESS];
static unsigned n_sessions;
static struct lab_timer **armed;
static unsigned n_armed, cap_armed;

int lab_parse_url(const char *url, struct lab_url *u)
{
	struct iscsi_context *ctx = iscsi_create_context("iqn.2026-11.org.targetd:vaai-lab");
	struct iscsi_url *iu;

	if (!ctx)
		lab_die("cannot create a libiscsi context");
	iu = iscsi_parse_full_url(ctx, url);
	if (!iu) {
		lab_note("'%s' is not an iSCSI URL (%s); write iscsi://HOST[:PORT]/TARGET-IQN/LUN",
			 url, iscsi_get_error(ctx));
		iscsi_destroy_context(ctx);
		return -1;
	}
	snprintf(u->portal, sizeof(u->portal), "%s", iu->portal);
	snprintf(u->target, sizeof(u->target), "%s", iu->target);
	u->lun = iu->lun;
	iscsi_destroy_url(iu);
	iscsi_destroy_context(ctx);
	return 0;
}

static void sess_limits(struct lab_sess *s)
{
	struct scsi_task *t = iscsi_inquiry_sync(s->ctx, s->lun, 1, SCSI_INQUIRY_PAGECODE_BLOCK_LIMITS, 255);
	struct scsi_inquiry_block_limits *bl;

	if (!t || t->status != SCSI_STATUS_GOOD || !(bl = scsi_datain_unmarshall(t))) {
		if (t)
			scsi_free_scsi_task(t);
		return;   /* no VPD B0: no limits known */
	}
	s->max_caw_blocks = bl->max_cmp;
	s->max_unmap_blocks = bl->max_unmap;
	s->max_unmap_desc = bl->max_unmap_bdc;
	s->max_ws_blocks = bl->max_ws_len;
	s->max_xfer_blocks = bl->max_xfer_len;
	scsi_free_scsi_task(t);
}

static void sess_capacity(struct lab_sess *s, const char *url)
{
	struct scsi_task *t = iscsi_readcapacity16_sync(s->ctx, s->lun);
	struct scsi_readcapacity16 *rc;

	if (!t || t->status != SCSI_STATUS_GOOD || !(rc = scsi_datain_unmarshall(t))) {
		char buf[160];

		lab_die("%s: READ CAPACITY(16) on %s: %s", s->name, url,
			t ? lab_status_text(t->status, t, buf, sizeof(buf)) : iscsi_get_error(s->ctx));
	}
	s->bs = rc->block_length;
	s->nblocks = rc->returned_lba + 1;
	s->lbpme = rc->lbpme;
	s->lbprz = rc->lbprz;
	scsi_free_scsi_task(t);
	if (s->bs < 512 || s->bs > 65536 || (s->bs & (s->bs - 1)))
		lab_die("%s: %s reports a block size of %u bytes; vaai-lab needs a power of two from 512",
			s->name, url, s->bs);
}

/* URL may list several gateways of one LUN, comma-separated: sessions
 * take them in turn. The n-th URL of the list into buf. */
static const char *sess_url(const char *list, unsigned n, char *buf, size_t cap)
{
	unsigned count = 1;
	const char *p, *e;

	for (p = list; (p = strchr(p, ',')); p++)
		count++;
	n %= count;
	for (p = list; n; n--)
		p = strchr(p, ',') + 1;
	e = strchr(p, ',');
	snprintf(buf, cap, "%.*s", (int)(e ? (size_t)(e - p) : strlen(p)), p);
	return buf;
}

struct lab_sess *lab_sess_open(const struct lab_opts *o, const char *name)
{
	return lab_sess_login(o, name, true);
}

struct lab_sess *lab_sess_login(const struct lab_opts *o, const char *name, bool setup)
{
	static unsigned opened;
	struct lab_sess *s;
	struct lab_url u;
	char ubuf[1024];
	const char *url = sess_url(o->url, opened++, ubuf, sizeof(ubuf));

	if (n_sessions == LAB_MAX_SESS)
		lab_die("too many sessions (at most %d)", LAB_MAX_SESS);
	if (lab_parse_url(url, &u))
		exit(2);
	s = lab_xalloc(sizeof(*s));
	snprintf(s->name, sizeof(s->name), "%s", name);
	snprintf(s->initiator, sizeof(s->initiator), "%s:%s", o->initiator, name);
	s->ctx = iscsi_create_context(s->initiator);
	if (!s->ctx)
		lab_die("cannot create a libiscsi context");
	iscsi_set_session_type(s->ctx, ISCSI_SESSION_NORMAL);
	iscsi_set_header_digest(s->ctx, ISCSI_HEADER_DIGEST_NONE);
	iscsi_set_targetname(s->ctx, u.target);
	/* A lost connection ends the run with a message; a silent reconnect
	 * would hide it and lose the I_T nexus a reservation belongs to. */
	iscsi_set_noautoreconnect(s->ctx, 1);
	/* without setup no command at all: libiscsi's full connect would
	 * send TEST UNIT READY and take a pending unit attention */
	if (!setup && (iscsi_connect_sync(s->ctx, u.portal) || iscsi_login_sync(s->ctx)))
		lab_die("%s: cannot log in to %s at %s as %s: %s", name, u.target, u.portal,
			s->initiator, iscsi_get_error(s->ctx));
	if (setup && iscsi_full_connect_sync(s->ctx, u.portal, u.lun) != 0)
		lab_die("%s: cannot log in to %s LUN %d at %s as %s: %s", name, u.target, u.lun,
			u.portal, s->initiator, iscsi_get_error(s->ctx));
	s->lun = u.lun;
	if (!setup) {
		sessions[n_sessions++] = s;
		return s;
	}
	/* The first commands of a new nexus may report POWER ON and the like. */
	for (int i = 0; i < 8; i++) {
		struct scsi_task *t = iscsi_testunitready_sync(s->ctx, s->lun);
		bool good = t && t->status == SCSI_STATUS_GOOD;

		if (t)
			scsi_free_scsi_task(t);
		if (good)
			break;
	}
	sess_capacity(s, url);
	sess_limits(s);
	sessions[n_sessions++] = s;
	return s;
}

void lab_sess_close(struct lab_sess *s)
{
	for (unsigned i = 0; i < n_sessions; i++) {
		if (sessions[i] == s) {
			sessions[i] = sessions[--n_sessions];
			break;
		}
	}
	if (s->inflight)
		lab_die("%s: closing with %u commands in flight", s->name, s->inflight);
	iscsi_logout_sync(s->ctx);
	iscsi_destroy_context(s->ctx);
	free(s);
}

bool lab_sess_net_bytes(struct lab_sess *s, uint64_t *tx, uint64_t *rx)
{
	struct tcp_info ti;
	socklen_t len = sizeof(ti);

	memset(&ti, 0, sizeof(ti));
	if (getsockopt(iscsi_get_fd(s->ctx), IPPROTO_TCP, TCP_INFO, &ti, &len) ||
	    len < offsetof(struct tcp_info, tcpi_bytes_received) + sizeof(ti.tcpi_bytes_received))
		return false;
	*tx = ti.tcpi_bytes_acked;
	*rx = ti.tcpi_bytes_received;
	return true;
}

void lab_sess_naa(struct lab_sess *s, uint8_t naa[16])
{
	struct scsi_task *t = iscsi_inquiry_sync(s->ctx, s->lun, 1, SCSI_INQUIRY_PAGECODE_DEVICE_IDENTIFICATION, 255);
	struct scsi_inquiry_device_identification *di;

	if (!t || t->status != SCSI_STATUS_GOOD || !(di = scsi_datain_unmarshall(t)))
		lab_die("%s: INQUIRY of VPD page 0x83 (device identification) failed", s->name);
	for (struct scsi_inquiry_device_designator *d = di->designators; d; d = d->next) {
		if (d->designator_type == SCSI_DESIGNATOR_TYPE_NAA && d->association == 0 &&
		    d->designator_length == 16) {
			memcpy(naa, d->designator, 16);
			scsi_free_scsi_task(t);
			return;
		}
	}
	lab_die("%s: VPD page 0x83 has no 16-byte NAA designator of the logical unit, which "
		"EXTENDED COPY descriptors need", s->name);
}

/* ---- timers --------------------------------------------------------------- */

void lab_timer_init(struct lab_timer *t, void (*fn)(struct lab_timer *), void *arg)
{
	t->fn = fn;
	t->arg = arg;
	t->slot = -1;
	t->at_ns = 0;
}

void lab_timer_arm(struct lab_timer *t, uint64_t delay_ns)
{
	t->at_ns = lab_now_ns() + delay_ns;
	if (t->slot >= 0)
		return;
	if (n_armed == cap_armed) {
		unsigned nc = cap_armed ? cap_armed * 2 : 64;
		struct lab_timer **n = realloc(armed, nc * sizeof(*n));

		if (!n)
			lab_die("out of memory");
		armed = n;
		cap_armed = nc;
	}
	t->slot = (int)n_armed;
	armed[n_armed++] = t;
}

void lab_timer_cancel(struct lab_timer *t)
{
	unsigned i;

	if (t->slot < 0)
		return;
	i = (unsigned)t->slot;
	armed[i] = armed[--n_armed];
	armed[i]->slot = (int)i;
	t->slot = -1;
}

/* Fire the due timers; returns the nanoseconds to the next one (or a
 * tenth of a second when none is armed). */
static uint64_t timers_fire(void)
{
	uint64_t now = lab_now_ns(), next = LAB_NS / 10;

	for (unsigned i = 0; i < n_armed;) {
		struct lab_timer *t = armed[i];

		if (t->at_ns <= now) {
			lab_timer_cancel(t);
			t->fn(t);       /* may arm timers, including this one */
			now = lab_now_ns();
			i = 0;          /* the array may have changed */
			continue;
		}
		if (t->at_ns - now < next)
			next = t->at_ns - now;
		i++;
	}
	return next;
}

/* ---- the loop -------------------------------------------------------------- */

void lab_run_until(bool (*done)(void *arg), void *arg, double timeout_s, const char *what)
{
	uint64_t end = timeout_s > 0 ? lab_now_ns() + (uint64_t)(timeout_s * 1e9) : 0;
	struct pollfd pfd[LAB_MAX_SESS];

	for (;;) {
		uint64_t wait = timers_fire();
		struct timespec ts;
		int r;

		if (done(arg))
			return;
		if (end && lab_now_ns() > end) {
			unsigned n = 0;

			for (unsigned i = 0; i < n_sessions; i++)
				n += sessions[i]->inflight;
			lab_die("%s did not finish within %.0f s (%u commands in flight): is the "
				"target answering?", what, timeout_s, n);
		}
		for (unsigned i = 0; i < n_sessions; i++) {
			pfd[i].fd = iscsi_get_fd(sessions[i]->ctx);
			pfd[i].events = (short)iscsi_which_events(sessions[i]->ctx);
			pfd[i].revents = 0;
		}
		ts.tv_sec = (time_t)(wait / LAB_NS);
		ts.tv_nsec = (long)(wait % LAB_NS);
		r = ppoll(pfd, n_sessions, &ts, NULL);
		if (r < 0 && errno != EINTR)
			lab_die("ppoll: %s", strerror(errno));
		for (unsigned i = 0; r > 0 && i < n_sessions; i++) {
			if (!pfd[i].revents)
				continue;
			if (iscsi_service(sessions[i]->ctx, pfd[i].revents) < 0)
				lab_die("%s: the connection failed: %s", sessions[i]->name,
					iscsi_get_error(sessions[i]->ctx));
		}
	}
}

/* ---- commands ---------------------------------------------------------------- */

static void io_cb(struct iscsi_context *ctx, int status, void *command_data, void *priv)
{
	struct lab_io *io = priv;
	struct scsi_task *t = command_data;

	(void)ctx;
	io->s->inflight--;
	io->s->cmds++;
	io->busy = false;
	io->status = status;
	io->lat_ns = lab_now_ns() - io->t0_ns;
	if (status == SCSI_STATUS_ERROR || status == SCSI_STATUS_CANCELLED ||
	    status == SCSI_STATUS_TIMEOUT) {
		lab_die("%s: %s LBA %" PRIu64 ": %s: %s", io->s->name, io->what, io->lba,
			lab_status_text(status, t, (char[80]){ 0 }, 80), iscsi_get_error(io->s->ctx));
	}
	io->done(io, t);
	if (t)
		scsi_free_scsi_task(t);
}

static void io_start(struct lab_io *io, const char *what, uint64_t lba)
{
	if (io->busy)
		lab_die("internal error: %s: %s queued twice", io->s->name, what);
	io->what = what;
	io->lba = lba;
	io->t0_ns = lab_now_ns();
	io->busy = true;
}

static void io_queued(struct lab_io *io, struct scsi_task *t)
{
	if (!t)
		lab_die("%s: cannot queue %s: %s", io->s->name, io->what, iscsi_get_error(io->s->ctx));
	io->s->inflight++;
}

void lab_raw(struct lab_io *io, const uint8_t *cdb, unsigned cdb_len, int dir, uint32_t xfer,
	     void *buf)
{
	struct lab_sess *s = io->s;
	struct scsi_task *t = scsi_create_task((int)cdb_len, (unsigned char *)cdb,
					       xfer ? dir : SCSI_XFER_NONE, (int)xfer);

	if (!t)
		lab_die("%s: out of memory for a command", s->name);
	io_start(io, "command", 0);
	io->iov.iov_base = buf;
	io->iov.iov_len = xfer;
	if (xfer && dir == SCSI_XFER_WRITE)
		scsi_task_set_iov_out(t, &io->iov, 1);
	else if (xfer && dir == SCSI_XFER_READ)
		scsi_task_set_iov_in(t, &io->iov, 1);
	if (iscsi_scsi_command_async(s->ctx, s->lun, t, io_cb, NULL, io)) {
		scsi_free_scsi_task(t);
		t = NULL;
	}
	io_queued(io, t);
}

void lab_read16(struct lab_io *io, uint64_t lba, uint32_t nblocks, void *buf)
{
	struct lab_sess *s = io->s;
	uint32_t len = nblocks * s->bs;

	io_start(io, "READ(16)", lba);
	io->iov.iov_base = buf;
	io->iov.iov_len = len;
	io_queued(io, iscsi_read16_iov_task(s->ctx, s->lun, lba, len, (int)s->bs, 0, 0, 0, 0, 0,
					    io_cb, io, &io->iov, 1));
}

void lab_write16(struct lab_io *io, uint64_t lba, uint32_t nblocks, const void *buf)
{
	struct lab_sess *s = io->s;
	uint32_t len = nblocks * s->bs;

	io_start(io, "WRITE(16)", lba);
	io->iov.iov_base = (void *)buf;
	io->iov.iov_len = len;
	io_queued(io, iscsi_write16_iov_task(s->ctx, s->lun, lba, NULL, len, (int)s->bs, 0, 0, 0, 0,
					     0, io_cb, io, &io->iov, 1));
}

void lab_caw(struct lab_io *io, uint64_t lba, const void *cmp_and_write)
{
	struct lab_sess *s = io->s;

	io_start(io, "COMPARE AND WRITE", lba);
	io->iov.iov_base = (void *)cmp_and_write;
	io->iov.iov_len = 2 * (size_t)s->bs;
	io_queued(io, iscsi_compareandwrite_iov_task(s->ctx, s->lun, lba, NULL, 2 * s->bs, (int)s->bs,
						     0, 0, 0, 0, 0, io_cb, io, &io->iov, 1));
}

void lab_writesame16(struct lab_io *io, uint64_t lba, uint32_t nblocks, const void *blk, bool unmap)
{
	struct lab_sess *s = io->s;

	io_start(io, "WRITE SAME(16)", lba);
	/* libiscsi keeps the pointer to the one block until the command ends */
	io_queued(io, iscsi_writesame16_task(s->ctx, s->lun, lba, (unsigned char *)blk, s->bs, nblocks,
					     0, unmap ? 1 : 0, 0, 0, io_cb, io));
}

void lab_unmap(struct lab_io *io, uint64_t lba, uint32_t nblocks)
{
	struct unmap_list d = { .lba = lba, .num = nblocks };

	io_start(io, "UNMAP", lba);
	/* libiscsi builds the parameter list into the task's own memory */
	io_queued(io, iscsi_unmap_task(io->s->ctx, io->s->lun, 0, 0, &d, 1, io_cb, io));
}

void lab_xcopy(struct lab_io *io, void *list, size_t len)
{
	struct iscsi_data d = { .size = (size_t)len, .data = list };

	io_start(io, "EXTENDED COPY", 0);
	io_queued(io, iscsi_extended_copy_task(io->s->ctx, io->s->lun, &d, io_cb, io));
}

void lab_reserve6(struct lab_io *io)
{
	io_start(io, "RESERVE(6)", 0);
	io_queued(io, iscsi_reserve6_task(io->s->ctx, io->s->lun, io_cb, io));
}

void lab_release6(struct lab_io *io)
{
	io_start(io, "RELEASE(6)", 0);
	io_queued(io, iscsi_release6_task(io->s->ctx, io->s->lun, io_cb, io));
}

void lab_pr_out(struct lab_io *io, int sa, int type, uint64_t key, uint64_t sa_key)
{
	struct scsi_persistent_reserve_out_basic b = {
		.reservation_key = key,
		.service_action_reservation_key = sa_key,
	};

	io_start(io, "PERSISTENT RESERVE OUT", 0);
	io_queued(io, iscsi_persistent_reserve_out_task(io->s->ctx, io->s->lun, sa,
							SCSI_PERSISTENT_RESERVE_SCOPE_LU, type, &b,
							io_cb, io));
}

/* ---- blocking helpers ---------------------------------------------------------- */

static void sync_check(struct lab_sess *s, struct scsi_task *t, const char *what, uint64_t lba)
{
	char buf[160];

	if (!t)
		lab_die("%s: %s LBA %" PRIu64 ": %s", s->name, what, lba, iscsi_get_error(s->ctx));
	if (t->status != SCSI_STATUS_GOOD)
		lab_die("%s: %s LBA %" PRIu64 ": %s", s->name, what, lba,
			lab_status_text(t->status, t, buf, sizeof(buf)));
}

void lab_sync_write(struct lab_sess *s, uint64_t lba, uint32_t nblocks, const void *buf)
{
	struct scsi_task *t = iscsi_write16_sync(s->ctx, s->lun, lba, (unsigned char *)buf,
						 nblocks * s->bs, (int)s->bs, 0, 0, 0, 0, 0);

	sync_check(s, t, "WRITE(16)", lba);
	scsi_free_scsi_task(t);
}

void lab_sync_read(struct lab_sess *s, uint64_t lba, uint32_t nblocks, void *buf)
{
	struct scsi_task *t = iscsi_read16_sync(s->ctx, s->lun, lba, nblocks * s->bs, (int)s->bs,
						0, 0, 0, 0, 0);

	sync_check(s, t, "READ(16)", lba);
	if (t->datain.size < (int)(nblocks * s->bs))
		lab_die("%s: READ(16) LBA %" PRIu64 ": %d bytes came back, %u expected", s->name, lba,
			t->datain.size, nblocks * s->bs);
	memcpy(buf, t->datain.data, (size_t)nblocks * s->bs);
	scsi_free_scsi_task(t);
}

uint64_t lab_sync_mapped(struct lab_sess *s, uint64_t lba, uint64_t nblocks)
{
	uint64_t end = lba + nblocks, mapped = 0;

	while (lba < end) {
		struct scsi_task *t = iscsi_get_lba_status_sync(s->ctx, s->lun, lba, 4096);
		struct scsi_get_lba_status *st;
		uint64_t next = lba;

		sync_check(s, t, "GET LBA STATUS", lba);
		st = scsi_datain_unmarshall(t);
		if (!st || !st->num_descriptors)
			lab_die("%s: GET LBA STATUS LBA %" PRIu64 ": no descriptors", s->name, lba);
		for (uint32_t i = 0; i < st->num_descriptors; i++) {
			const struct scsi_lba_status_descriptor *d = &st->descriptors[i];
			uint64_t a = d->lba > lba ? d->lba : lba, b = d->lba + d->num_blocks;

			if (b > end)
				b = end;
			if (b <= a)
				continue;
			if (d->provisioning == SCSI_PROVISIONING_TYPE_MAPPED)
				mapped += b - a;
			if (b > next)
				next = b;
		}
		scsi_free_scsi_task(t);
		if (next <= lba)
			lab_die("%s: GET LBA STATUS LBA %" PRIu64 " did not describe that block", s->name, lba);
		lba = next;
	}
	return mapped;
}
