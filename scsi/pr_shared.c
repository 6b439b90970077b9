/*
 * Reservations shared by several gateways (DESIGN.md, "Seams"). The
 * reservation state of a LUN lives either in this process only (the local
 * implementation: p->shared == NULL, scsi/pr.c alone, with the APTPL state
 * file), or, when the backstore offers shared records (rbd: RADOS objects
 * beside the image), in one record "pr" that every gateway exporting the
 * LUN reads and writes (this file).
 *
 * DESIGN (threads and locks)
 *  - struct pr_lun stays the working copy that pr_check() and the handlers
 *    read under p->lock, as for a local LUN; shared->version is the version
 *    of the record it reflects.
 *  - A change (PERSISTENT RESERVE OUT, RESERVE, RELEASE, a reset, a nexus
 *    loss that ends an SPC-2 reservation) is decided on the working copy
 *    and committed with the record's compare-and-set while p->lock is held
 *    (pr_shared_commit). When another gateway changed the record first,
 *    the working copy is reloaded from it and the caller decides again (at
 *    most PR_SHARED_TRIES times), so two gateways never both win.
 *  - After p->lock is released the committing thread sends a note (the
 *    new state and the unit attentions the change establishes) to every
 *    gateway watching the record and waits for them to take it
 *    (pr_shared_announce): when the command completes, every gateway
 *    enforces the same reservation. Never under p->lock: two gateways
 *    announcing at once would each wait for the other's callback.
 *  - A note arrives on a librados thread (pr_shared_note_cb): under p->lock
 *    it replaces the working copy when it is newer, and establishes its
 *    unit attentions for this gateway's nexuses (p->lock, then
 *    target->lock, the order used everywhere).
 *  - When notes may have been missed (the watch broke), shared->stale is
 *    set and the next pr_check() or command reads the record (pr_shared_sync).
 *  - These calls block on the store (RADOS round trips, and a note waits
 *    for the acknowledgements, a few seconds at most when a gateway died):
 *    reservation commands are rare; pr_check() on the data path reads only
 *    the working copy.
 *
 * The record is text: "spc2 HELD GATEWAY NEXUS", "aptpl 0|1", then the
 * APTPL state-file format of scsi/pr_file.c (registrations with escaped
 * names, the reservation, a checksum). An SPC-2 holder is named by its
 * gateway (a random 64-bit id per process) and nexus id; on the other
 * gateways the working copy names PR_NEXUS_REMOTE, which no nexus has. A
 * gateway that dies holding an SPC-2 reservation leaves it in the record:
 * a LOGICAL UNIT RESET (or target reset) through any gateway releases it,
 * as SPC-2 5.5.1 says. Shared LUNs keep no APTPL state file (APTPL is
 * refused); the record itself outlives every gateway.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>
#include "scsi/scsi_int.h"
#include "scsi/pr_int.h"
#include "backstore/backstore.h"

#define PR_SHARED_NAME "pr"
#define PR_SHARED_MAX (256u << 10)

struct pr_shared {
	struct scsi_lun *lun;
	struct backstore *bs;
	const struct bs_shared_ops *ops;
	uint64_t version;             /* of the record the working copy reflects */
	uint64_t handle;              /* the watch */
	atomic_bool stale;            /* notes may have been missed */
	uint64_t spc2_gw, spc2_rnexus;/* the SPC-2 holder when it is remote */
};

static uint64_t pr_gw;              /* this gateway: random, once per process */
static pthread_once_t pr_gw_once = PTHREAD_ONCE_INIT;

static void pr_gw_init(void)
{
	while (pr_gw == 0) {
		if (getrandom(&pr_gw, sizeof(pr_gw), 0) != (ssize_t)sizeof(pr_gw))
			pr_gw = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL);
	}
}

/* The record (or a note's state part) for the working copy. */
static char *pr_shared_format(const struct pr_lun *p, size_t *len)
{
	const struct pr_shared *sh = p->shared;
	uint64_t gw = pr_gw, nx = p->spc2_nexus;
	size_t blen, hlen;
	char head[128], *body, *out;

	if (p->spc2 && p->spc2_nexus == PR_NEXUS_REMOTE) {
		gw = sh->spc2_gw;
		nx = sh->spc2_rnexus;
	}
	hlen = (size_t)snprintf(head, sizeof(head), "spc2 %d %016" PRIx64 " %016" PRIx64 "\naptpl %d\n",
				p->spc2, p->spc2 ? gw : 0, p->spc2 ? nx : 0, p->aptpl);
	body = pr_file_format(p, &blen);
	if (!body)
		return NULL;
	out = malloc(hlen + blen + 1);
	if (out) {
		memcpy(out, head, hlen);
		memcpy(out + hlen, body, blen);
		out[hlen + blen] = '\0';
		*len = hlen + blen;
	}
	free(body);
	return out;
}

/* Make buf (len bytes, room for one more) the working copy. 0 or -1 (the
 * copy is unchanged; logged). */
static int pr_shared_apply(struct pr_lun *p, char *buf, size_t len)
{
	struct pr_shared *sh = p->shared;
	unsigned long long gw, nx;
	int held, aptpl, n = 0;
	char err[256];

	buf[len] = '\0';
	if (sscanf(buf, "spc2 %d %llx %llx\naptpl %d\n%n", &held, &gw, &nx, &aptpl, &n) != 4 ||
	    n == 0) {
		log_event(LOG_LVL_ERR, "pr_shared_bad_record", KV_U("lun", sh->lun->id),
			  KV_S("error", "not a record targetd wrote"));
		return -1;
	}
	if (pr_file_parse(p, buf + n, len - (size_t)n, "the shared reservation record", err,
			  sizeof(err))) {
		log_event(LOG_LVL_ERR, "pr_shared_bad_record", KV_U("lun", sh->lun->id),
			  KV_S("error", err));
		return -1;
	}
	p->aptpl = aptpl != 0;
	p->spc2 = held != 0;
	if (p->spc2 && gw == pr_gw) {
		p->spc2_nexus = nx;
	} else if (p->spc2) {
		p->spc2_nexus = PR_NEXUS_REMOTE;
		sh->spc2_gw = gw;
		sh->spc2_rnexus = nx;
	}
	return 0;
}

/* Under p->lock: read the record into the working copy. 0 or -errno. */
static int pr_shared_reload(struct pr_lun *p)
{
	struct pr_shared *sh = p->shared;
	char *buf = malloc(PR_SHARED_MAX + 1);
	uint64_t ver;
	size_t len;
	int e;

	if (!buf)
		return -ENOMEM;
	e = sh->ops->read(sh->bs, PR_SHARED_NAME, buf, PR_SHARED_MAX, &len, &ver);
	if (e == 0 && ver && pr_shared_apply(p, buf, len))
		e = -EBADMSG;
	if (e == 0) {
		sh->version = ver;
		atomic_store(&sh->stale, false);
	}
	free(buf);
	return e;
}

/* The note a change sends: "tdnote GATEWAY VERSION UA RELEASED STATELEN
 * REMOVEDLEN ALLUA", the new state (none when STATELEN is 0), then the
 * removed registrations (in the state-file format) whose nexuses get UA;
 * ALLUA (>= 0) is a unit attention for every nexus of the LUN (a LOGICAL
 * UNIT RESET through another gateway). */
static void pr_shared_note_cb(void *arg, const void *data, size_t len)
{
	struct pr_shared *sh = arg;
	struct scsi_lun *lun = sh->lun;
	struct pr_lun *p = lun->priv_pr, rm;
	unsigned long long gw, ver, slen, rlen;
	int ua, released, all_ua, n = 0;
	char *buf, err[256];

	if (!data) {
		atomic_store(&sh->stale, true);
		return;
	}
	if (len > 2 * PR_SHARED_MAX || !(buf = malloc(len + 1)))
		return;
	memcpy(buf, data, len);
	buf[len] = '\0';
	if (sscanf(buf, "tdnote %llx %llx %d %d %llu %llu %d\n%n", &gw, &ver, &ua, &released,
		   &slen, &rlen, &all_ua, &n) != 7 || n == 0 || slen + rlen != len - (size_t)n ||
	    ua < 0 || ua >= UA__COUNT || all_ua >= UA__COUNT) {
		free(buf);
		return;
	}
	if (gw == pr_gw) {            /* our own change */
		free(buf);
		return;
	}
	memset(&rm, 0, sizeof(rm));
	rm.holder = -1;
	pthread_mutex_lock(&p->lock);
	if (slen && ver > sh->version) {
		char save = buf[n + slen];

		if (pr_shared_apply(p, buf + n, (size_t)slen) == 0)
			sh->version = ver;
		else
			atomic_store(&sh->stale, true);
		buf[n + slen] = save;
		pr_publish(p);
	}
	if (rlen && pr_file_parse(&rm, buf + n + slen, (size_t)rlen, "a reservation note", err,
				  sizeof(err)) == 0)
		pr_ua_regs(lun, rm.regs, rm.n, (enum scsi_ua)ua, NULL);
	if (released)
		pr_ua_regs(lun, p->regs, p->n, UA_RESERVATIONS_RELEASED, NULL);
	if (all_ua >= 0)
		scsi_ua_establish(lun->target, lun->id, (enum scsi_ua)all_ua, NULL);
	pthread_mutex_unlock(&p->lock);
	free(rm.regs);
	free(buf);
}

int pr_shared_attach(struct scsi_lun *lun, char *err, size_t errlen)
{
	struct pr_lun *p = lun->priv_pr;
	struct pr_shared *sh;
	char *rec;
	size_t len = 0;
	int e, tries;

	if (!lun->bs || !lun->bs->ops->shared)
		return 0;
	pthread_once(&pr_gw_once, pr_gw_init);
	sh = calloc(1, sizeof(*sh));
	if (!sh) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	sh->lun = lun;
	sh->bs = lun->bs;
	sh->ops = lun->bs->ops->shared;
	atomic_init(&sh->stale, false);
	pthread_mutex_lock(&p->lock);
	p->shared = sh;
	/* the record exists (created empty by the first gateway), then the
	 * working copy is what it holds */
	for (tries = 0, e = -ECANCELED; e == -ECANCELED && tries < PR_SHARED_TRIES; tries++) {
		e = pr_shared_reload(p);
		if (e || sh->version)
			break;
		rec = pr_shared_format(p, &len);
		e = rec ? sh->ops->cas(sh->bs, PR_SHARED_NAME, rec, len, &sh->version) : -ENOMEM;
		free(rec);
	}
	if (e == 0)
		e = sh->ops->watch(sh->bs, PR_SHARED_NAME, pr_shared_note_cb, sh, &sh->handle);
	if (e) {
		p->shared = NULL;
		pthread_mutex_unlock(&p->lock);
		free(sh);
		snprintf(err, errlen, "the shared reservation record: %s", strerror(-e));
		return -1;
	}
	pr_publish(p);
	pthread_mutex_unlock(&p->lock);
	return 0;
}

void pr_shared_detach(struct pr_lun *p)
{
	struct pr_shared *sh = p->shared;

	if (!sh)
		return;
	sh->ops->unwatch(sh->bs, sh->handle);    /* no note callback after this */
	p->shared = NULL;
	free(sh);
}

bool pr_shared_stale(const struct pr_lun *p)
{
	return p->shared && atomic_load_explicit(&p->shared->stale, memory_order_relaxed);
}

int pr_shared_sync(struct pr_lun *p)
{
	int e;

	if (!pr_shared_stale(p))
		return 0;
	e = pr_shared_reload(p);
	if (e)
		log_event(LOG_LVL_ERR, "pr_shared_unreadable", KV_U("lun", p->shared->lun->id),
			  KV_S("error", strerror(-e)));
	pr_publish(p);
	return e;
}

int pr_shared_commit(struct pr_lun *p, const struct pr_reg *removed, unsigned n_removed,
		     enum scsi_ua ua, bool released, struct pr_note *note)
{
	struct pr_shared *sh = p->shared;
	struct pr_lun rm;
	size_t slen = 0, rlen = 0;
	char *state, *rlist = NULL, head[160];
	int e, hlen;

	note->buf = NULL;
	note->len = 0;
	state = pr_shared_format(p, &slen);
	if (!state)
		return -ENOMEM;
	e = sh->ops->cas(sh->bs, PR_SHARED_NAME, state, slen, &sh->version);
	if (e == -ECANCELED) {
		/* another gateway first: decide again on what it wrote */
		free(state);
		e = pr_shared_reload(p);
		return e ? e : -ECANCELED;
	}
	if (e) {
		free(state);
		return e;
	}
	if (n_removed) {
		memset(&rm, 0, sizeof(rm));
		rm.regs = (struct pr_reg *)removed;
		rm.n = n_removed;
		rm.holder = -1;
		rlist = pr_file_format(&rm, &rlen);
		if (!rlist)
			rlen = 0;
	}
	hlen = snprintf(head, sizeof(head), "tdnote %016" PRIx64 " %016" PRIx64 " %d %d %zu %zu -1\n",
			pr_gw, sh->version, (int)ua, released, slen, rlen);
	note->buf = malloc((size_t)hlen + slen + rlen);
	if (note->buf) {
		memcpy(note->buf, head, (size_t)hlen);
		memcpy(note->buf + hlen, state, slen);
		if (rlen)
			memcpy(note->buf + hlen + slen, rlist, rlen);
		note->len = (size_t)hlen + slen + rlen;
	}
	free(rlist);
	free(state);
	return 0;
}

int pr_shared_ua_note(struct pr_lun *p, enum scsi_ua ua, struct pr_note *note)
{
	note->buf = NULL;
	note->len = 0;
	if (!p->shared)
		return 0;
	if (asprintf(&note->buf, "tdnote %016" PRIx64 " %016" PRIx64 " 0 0 0 0 %d\n", pr_gw,
		     p->shared->version, (int)ua) < 0) {
		note->buf = NULL;
		return -ENOMEM;
	}
	note->len = strlen(note->buf);
	return 0;
}

void pr_shared_announce(struct scsi_lun *lun, struct pr_note *note)
{
	struct pr_lun *p = lun->priv_pr;
	struct pr_shared *sh = p ? p->shared : NULL;
	int e;

	if (!note->buf)
		return;
	if (sh) {
		e = sh->ops->notify(sh->bs, PR_SHARED_NAME, note->buf, note->len);
		if (e)
			log_event(LOG_LVL_WARN, "pr_shared_notify_failed", KV_U("lun", lun->id),
				  KV_S("error", strerror(-e)),
				  KV_S("effect", "the other gateways read the record again when "
						 "their watch recovers"));
	}
	free(note->buf);
	note->buf = NULL;
}
