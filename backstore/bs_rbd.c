/*
 * Ceph RBD backstore: the blocks of a LUN are an RBD image in a RADOS pool,
 * reached through librbd. Several targetd gateways may open one image.
 *
 * DESIGN (threads and completions)
 *
 *  - Connections: one librados client per (ceph.conf, client id) pair,
 *    shared by every image opened through it and reference counted
 *    (bs_rbd_lock guards the list; open and close only). A client must be
 *    connected after the daemon forked (main() detaches through
 *    daemon_detach_start(), targetd/daemon.c, before it opens a
 *    backstore): a client forked after connecting reuses its parent's
 *    messenger address and hangs.
 *  - Requests: submit() (on the owning network thread) counts the request
 *    in flight on its engine (io_engine_remote_begin) and hands it to
 *    librbd with rbd_aio_*. librbd calls bs_rbd_aio_done() on one of its
 *    own threads; that sets io->result and passes the request back with
 *    io_engine_complete_remote(), so io->done runs on the owning thread
 *    like every other backstore's completions. Nothing else is touched
 *    from librbd's threads. COPY runs on the worker pool with blocking
 *    librbd calls (backstore_copy_work through ops.sync_rw).
 *  - The librbd cache is off (rbd_cache = false): a write librbd completes
 *    is on the OSDs, so FUA needs nothing more and FLUSH is cheap.
 *  - Ranges: librbd silently truncates requests past the end of the image;
 *    bs_check_io() refuses them first (-EINVAL), against the size read at
 *    open.
 *
 *  READ          rbd_aio_readv
 *  WRITE         rbd_aio_writev; a request whose iovecs all name the same
 *                buffer (WRITE SAME of a pattern) is one rbd_aio_writesame
 *  FLUSH         rbd_aio_flush
 *  WRITE_ZEROES  rbd_aio_write_zeroes(THICK_PROVISION): the objects stay
 *  DISCARD       thin: rbd_aio_discard, with rbd_skip_partial_discard off so
 *                that every discarded byte reads back zeroes (LBPRZ); whole
 *                objects are removed. Thick: as WRITE_ZEROES.
 *  COMPARE_AND_WRITE  rbd_aio_compare_and_write: the OSD compares and
 *                writes in one operation, atomic against every client of
 *                the image on every host. librbd 1.16 (Ceph 16) takes one
 *                aligned 512-byte sector per request (caw_max), returns
 *                -EILSEQ on a mismatch and reports the mismatch offset as
 *                the image offset of the object plus the offset in the
 *                request (bs_rbd_mismatch() accepts either form).
 *  lba_status    rbd_diff_iterate2 over a bounded number of objects: an
 *                object that exists is mapped over the extent RADOS
 *                reports, one that does not is deallocated. Synchronous.
 *
 * Shared records (backstore.h, bs_shared_ops): RADOS objects
 * "targetd.<image id>.<name>" in the image's pool. The object starts with a
 * fixed-size header holding the version ("targetd <16 hex digits>\n");
 * compare-and-set is one RADOS write operation that compares the header
 * (cmpext) or creates the object exclusively, then writes it whole, so the
 * OSD applies it or nothing. Notes are RADOS notifies on the object (every
 * watcher acknowledges, bounded by BS_RBD_NOTIFY_MS); watches call the
 * caller's function on librados' thread, then acknowledge.
 */
#include "config.h"
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <rados/librados.h>
#include <rbd/librbd.h>
#include "backstore/bs_impl.h"
#include "common/util.h"
#include "common/log.h"

#if LIBRBD_VERSION_CODE < LIBRBD_VERSION(1, 12, 0)
#error "the RBD backstore needs librbd 1.12 or later (Ceph 14): compare-and-write, write-zeroes"
#endif

/* The most bytes one rbd_aio_compare_and_write takes (measured with
 * librbd 1.16: longer or unaligned requests give -EINVAL). */
#define BS_RBD_CAW_MAX 512u
/* lba_status looks at this many objects per call at most (one RADOS
 * request each without the fast-diff feature). */
#define BS_RBD_STATUS_OBJECTS 8u

/* Shared records: the version header, how long a note may wait for the
 * other watchers, and the longest record. */
#define BS_RBD_REC_HDR 25
#define BS_RBD_NOTIFY_MS 5000
#define BS_RBD_REC_MAX (1u << 20)

struct bs_rbd_cluster {
	struct bs_rbd_cluster *next;
	char *conf, *client;          /* as configured (NULL = default) */
	rados_t rados;
	unsigned refs;
};

struct bs_rbd {
	struct bs_rbd_cluster *cl;
	rados_ioctx_t ioctx;
	rbd_image_t image;
	uint64_t obj_size;            /* bytes per RADOS object */
	char ident[160];              /* the image's identity (backstore.identity) */
	char id[64];                  /* the image id (names the shared records) */
	char location[260];           /* "pool/image" (backstore.location) */
};

struct bs_rbd_watch {
	rados_ioctx_t ioctx;
	char oid[200];
	uint64_t cookie;
	void (*cb)(void *arg, const void *note, size_t len);
	void *arg;
};

static pthread_mutex_t bs_rbd_lock = PTHREAD_MUTEX_INITIALIZER;
static struct bs_rbd_cluster *bs_rbd_clusters;

static bool bs_rbd_str_eq(const char *a, const char *b)
{
	return (!a && !b) || (a && b && !strcmp(a, b));
}

/* Connect a new client: ceph.conf first, then the settings the
 * backstore depends on (they override the file). */
static int bs_rbd_connect(struct bs_rbd_cluster *cl, char *err, size_t errlen)
{
	char name[128];
	int r;

	snprintf(name, sizeof(name), "client.%s", cl->client ? cl->client : "admin");
	r = rados_create2(&cl->rados, "ceph", name, 0);
	if (r < 0) {
		snprintf(err, errlen, "rados_create2(%s): %s", name, strerror(-r));
		return r;
	}
	/* a cluster that does not answer fails the open within a minute */
	rados_conf_set(cl->rados, "client_mount_timeout", "60");
	r = rados_conf_read_file(cl->rados, cl->conf);
	if (r < 0) {
		snprintf(err, errlen, "%s: %s (the Ceph configuration, key conf)",
			 cl->conf ? cl->conf : "ceph.conf", strerror(-r));
		goto fail;
	}
	if (rados_conf_set(cl->rados, "rbd_cache", "false") < 0 ||
	    rados_conf_set(cl->rados, "rbd_skip_partial_discard", "false") < 0) {
		snprintf(err, errlen, "librados refuses rbd_cache/rbd_skip_partial_discard");
		r = -EINVAL;
		goto fail;
	}
	r = rados_connect(cl->rados);
	if (r < 0) {
		snprintf(err, errlen, "cannot connect to the Ceph cluster of %s as %s: %s",
			 cl->conf ? cl->conf : "the default ceph.conf", name, strerror(-r));
		goto fail;
	}
	return 0;
fail:
	rados_shutdown(cl->rados);
	return r;
}

static struct bs_rbd_cluster *bs_rbd_cluster_get(const char *conf, const char *client, char *err,
						 size_t errlen, int *rc)
{
	struct bs_rbd_cluster *cl;

	pthread_mutex_lock(&bs_rbd_lock);
	for (cl = bs_rbd_clusters; cl; cl = cl->next)
		if (bs_rbd_str_eq(cl->conf, conf) && bs_rbd_str_eq(cl->client, client))
			break;
	if (cl) {
		cl->refs++;
		pthread_mutex_unlock(&bs_rbd_lock);
		return cl;
	}
	cl = calloc(1, sizeof(*cl));
	if (!cl || (conf && !(cl->conf = strdup(conf))) ||
	    (client && !(cl->client = strdup(client)))) {
		*rc = -ENOMEM;
		snprintf(err, errlen, "out of memory");
		goto fail;
	}
	*rc = bs_rbd_connect(cl, err, errlen);
	if (*rc < 0)
		goto fail;
	cl->refs = 1;
	cl->next = bs_rbd_clusters;
	bs_rbd_clusters = cl;
	pthread_mutex_unlock(&bs_rbd_lock);
	return cl;
fail:
	pthread_mutex_unlock(&bs_rbd_lock);
	if (cl) {
		free(cl->conf);
		free(cl->client);
		free(cl);
	}
	return NULL;
}

static void bs_rbd_cluster_put(struct bs_rbd_cluster *cl)
{
	struct bs_rbd_cluster **pp;

	pthread_mutex_lock(&bs_rbd_lock);
	if (--cl->refs) {
		pthread_mutex_unlock(&bs_rbd_lock);
		return;
	}
	for (pp = &bs_rbd_clusters; *pp; pp = &(*pp)->next)
		if (*pp == cl) {
			*pp = cl->next;
			break;
		}
	pthread_mutex_unlock(&bs_rbd_lock);
	rados_shutdown(cl->rados);
	free(cl->conf);
	free(cl->client);
	free(cl);
}

/* Create the image (layering only: no exclusive lock, which several
 * gateways writing at once would pass back and forth). -EEXIST when
 * another gateway was quicker is success. */
static int bs_rbd_create(struct bs_rbd *r, const struct bs_params *p)
{
	int order = 0;
	int e = rbd_create2(r->ioctx, p->rbd.image, p->size, RBD_FEATURE_LAYERING, &order);

	if (e == 0)
		log_event(LOG_LVL_INFO, "rbd_image_created", KV_S("pool", p->rbd.pool),
			  KV_S("image", p->rbd.image), KV_U("bytes", p->size),
			  KV_S("features", "layering"));
	return e == -EEXIST ? 0 : e;
}

static int bs_rbd_no_progress(uint64_t done, uint64_t total, void *arg)
{
	(void)done;
	(void)total;
	(void)arg;
	return 0;
}

/* Grow the image to size bytes, never shrinking it (another gateway may
 * have grown it further meanwhile: that is success). 0 or -errno. */
static int bs_rbd_grow(struct bs_rbd *r, uint64_t size)
{
	uint64_t now = 0;
	int e = rbd_resize2(r->image, size, false, bs_rbd_no_progress, NULL);

	if (e < 0 && rbd_get_size(r->image, &now) == 0 && now >= size)
		e = 0;
	return e;
}

/* The LUN's size against the image's (*size, the image's on entry, the
 * LUN's on return), as for a file: an image shorter than size is grown;
 * a longer one stays whole and the LUN is its first size bytes (an image
 * is cut only by an asked-for shrink, bs_rbd_resize). */
static int bs_rbd_fit(struct bs_rbd *r, const struct bs_params *p, uint64_t *size, char *err,
		      size_t errlen)
{
	int e;

	if (!p->size || p->size == *size)
		return 0;
	if (p->size > *size) {
		if (p->read_only) {
			snprintf(err, errlen, "rbd %s/%s: the image has %" PRIu64 " bytes, size says %"
				 PRIu64 ": a read-only LUN does not grow it (remove size, or rbd "
				 "resize the image)", p->rbd.pool, p->rbd.image, *size, p->size);
			return -EINVAL;
		}
		e = bs_rbd_grow(r, p->size);
		if (e < 0) {
			snprintf(err, errlen, "rbd %s/%s: cannot grow the image from %" PRIu64 " to %"
				 PRIu64 " bytes: %s", p->rbd.pool, p->rbd.image, *size, p->size,
				 strerror(-e));
			return e;
		}
		log_event(LOG_LVL_INFO, "rbd_image_grown", KV_S("pool", p->rbd.pool),
			  KV_S("image", p->rbd.image), KV_U("from_bytes", *size),
			  KV_U("to_bytes", p->size));
	} else {
		log_event(LOG_LVL_WARN, "rbd_image_longer", KV_S("pool", p->rbd.pool),
			  KV_S("image", p->rbd.image), KV_U("image_bytes", *size),
			  KV_U("lun_bytes", p->size),
			  KV_S("note", "the image stays whole; the LUN is its first size bytes"));
	}
	*size = p->size;
	return 0;
}

/* Facts a LUN on the image depends on, checked after it is open. */
static int bs_rbd_check_image(struct backstore *bs, struct bs_rbd *r, const struct bs_params *p,
			      char *err, size_t errlen)
{
	rbd_image_info_t info;
	uint64_t size, features = 0;
	char id[64] = "", fsid[64] = "";
	int e;

	e = rbd_stat(r->image, &info, sizeof(info));
	if (e == 0)
		e = rbd_get_size(r->image, &size);
	if (e == 0)
		e = rbd_get_features(r->image, &features);
	if (e == 0)
		e = rbd_get_id(r->image, id, sizeof(id));
	if (e == 0)
		e = rados_cluster_fsid(r->cl->rados, fsid, sizeof(fsid)) < 0 ? -EIO : 0;
	if (e < 0) {
		snprintf(err, errlen, "rbd %s/%s: cannot read the image's facts: %s", p->rbd.pool,
			 p->rbd.image, strerror(-e));
		return e;
	}
	e = bs_rbd_fit(r, p, &size, err, errlen);
	if (e < 0)
		return e;
	if (size == 0) {
		snprintf(err, errlen, "rbd %s/%s: the image is empty", p->rbd.pool, p->rbd.image);
		return -EINVAL;
	}
	if (features & RBD_FEATURE_EXCLUSIVE_LOCK) {
		/* when several gateways (or clients) write it, the lock moves
		 * between them on every write: a few hundred writes per second */
		char fix[600];

		snprintf(fix, sizeof(fix), "rbd feature disable %s/%s journaling fast-diff "
			 "object-map exclusive-lock (those it has)", p->rbd.pool, p->rbd.image);
		log_event(LOG_LVL_WARN, "rbd_exclusive_lock", KV_S("pool", p->rbd.pool),
			  KV_S("image", p->rbd.image),
			  KV_S("effect", "slow when several gateways write the image"),
			  KV_S("fix", fix));
	}
	r->obj_size = info.obj_size ? info.obj_size : (4u << 20);
	snprintf(r->id, sizeof(r->id), "%s", id);
	snprintf(r->ident, sizeof(r->ident), "rbd:%s:%" PRId64 ":%s", fsid,
		 rados_ioctx_get_id(r->ioctx), id);
	bs->size = size;
	return 0;
}

/* librbd's discard unit (rbd_discard_granularity_bytes, 64 KiB by
 * default), at most one object: what VPD B0 reports as the OPTIMAL UNMAP
 * GRANULARITY. */
static uint32_t bs_rbd_granularity(struct bs_rbd *r)
{
	char v[32] = "";
	unsigned long long g;

	if (rados_conf_get(r->cl->rados, "rbd_discard_granularity_bytes", v, sizeof(v)) < 0 ||
	    sscanf(v, "%llu", &g) != 1 || g == 0 || (g & (g - 1)))
		g = 64u << 10;
	return (uint32_t)MIN(g, r->obj_size);
}

static int bs_rbd_open(struct backstore *bs, const struct bs_params *p, char *err, size_t errlen)
{
	struct bs_rbd *r;
	int e;

	if (!p->rbd.pool || !p->rbd.pool[0] || !p->rbd.image || !p->rbd.image[0]) {
		snprintf(err, errlen, "rbd backstore needs a pool and an image");
		return -EINVAL;
	}
	r = calloc(1, sizeof(*r));
	if (!r) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->cl = bs_rbd_cluster_get(p->rbd.conf, p->rbd.client, err, errlen, &e);
	if (!r->cl)
		goto fail_free;
	e = rados_ioctx_create(r->cl->rados, p->rbd.pool, &r->ioctx);
	if (e < 0) {
		snprintf(err, errlen, "pool %s: %s%s", p->rbd.pool, strerror(-e),
			 e == -ENOENT ? " (create it: ceph osd pool create; rbd pool init)" : "");
		goto fail_cluster;
	}
	e = p->read_only ? rbd_open_read_only(r->ioctx, p->rbd.image, &r->image, NULL)
			 : rbd_open(r->ioctx, p->rbd.image, &r->image, NULL);
	if (e == -ENOENT && p->create && p->size && !p->read_only) {
		e = bs_rbd_create(r, p);
		if (e == 0)
			e = rbd_open(r->ioctx, p->rbd.image, &r->image, NULL);
	}
	if (e < 0) {
		snprintf(err, errlen, "rbd %s/%s: %s%s", p->rbd.pool, p->rbd.image, strerror(-e),
			 e == -ENOENT ? " (give a size to create it, or rbd create)" : "");
		goto fail_ioctx;
	}
	e = bs_rbd_check_image(bs, r, p, err, errlen);
	if (e < 0)
		goto fail_image;
	bs->priv = r;
	bs->identity = r->ident;
	snprintf(r->location, sizeof(r->location), "%s/%s", p->rbd.pool, p->rbd.image);
	bs->location = r->location;
	bs->discard_zeroes = true;
	bs->discard_granularity = bs_rbd_granularity(r);
	bs->caw_max = BS_RBD_CAW_MAX;
	bs->dev_block_size = 512;
	if (p->block_size > BS_RBD_CAW_MAX)
		/* librbd compares less than a block: the SCSI layer compares and
		 * writes under its own lock, atomic within this gateway only */
		log_event(LOG_LVL_WARN, "rbd_caw_local", KV_S("pool", p->rbd.pool),
			  KV_S("image", p->rbd.image), KV_U("block_size", p->block_size),
			  KV_U("caw_max_bytes", BS_RBD_CAW_MAX),
			  KV_S("fix", "block_size = 512 for a LUN that several gateways serve"));
	return 0;
fail_image:
	rbd_close(r->image);
fail_ioctx:
	rados_ioctx_destroy(r->ioctx);
fail_cluster:
	bs_rbd_cluster_put(r->cl);
fail_free:
	free(r);
	return e;
}

static void bs_rbd_close(struct backstore *bs)
{
	struct bs_rbd *r = bs->priv;

	if (!r)
		return;
	rbd_close(r->image);
	rados_ioctx_destroy(r->ioctx);
	bs_rbd_cluster_put(r->cl);
	free(r);
	bs->priv = NULL;
	bs->identity = NULL;
	bs->location = NULL;
}

/* The offset in the request of the first differing byte, from what librbd
 * reported: the object's image offset plus the offset in the request
 * (librbd 1.16), the image offset of the byte, or the offset in the
 * request. 0 when it fits none of these (logged once). */
static uint64_t bs_rbd_mismatch(const struct bs_rbd *r, const struct bs_io *io, uint64_t mm)
{
	static bool logged;
	uint64_t base = io->offset - io->offset % r->obj_size;

	if (mm >= base && mm - base < io->len)
		return mm - base;
	if (mm >= io->offset && mm - io->offset < io->len)
		return mm - io->offset;
	if (mm < io->len)
		return mm;
	if (!__atomic_exchange_n(&logged, true, __ATOMIC_RELAXED))
		log_warn("rbd: compare-and-write reported mismatch offset %" PRIu64
			 " for a request at %" PRIu64 ": MISCOMPARE offsets are then 0", mm,
			 io->offset);
	return 0;
}

/* On a librbd thread: the request is done; give it back to its owner. */
static void bs_rbd_aio_done(rbd_completion_t c, void *arg)
{
	struct bs_io *io = arg;
	ssize_t r = rbd_aio_get_return_value(c);

	rbd_aio_release(c);
	if (r == -EILSEQ && io->op == BS_OP_COMPARE_AND_WRITE)
		io->miscompare = bs_rbd_mismatch(io->bs->priv, io, io->miscompare);
	if (r >= 0)
		r = io->op == BS_OP_FLUSH ? 0 : (ssize_t)io->len;
	io->result = r;
	io_engine_complete_remote(io);
}

/* A WRITE whose iovecs all name one buffer of one length (a WRITE SAME
 * pattern): that length, else 0. */
static size_t bs_rbd_pattern(const struct bs_io *io)
{
	int i;

	if (io->iovcnt < 2)
		return 0;
	for (i = 1; i < io->iovcnt; i++)
		if (io->iov[i].iov_base != io->iov[0].iov_base ||
		    io->iov[i].iov_len != io->iov[0].iov_len)
			return 0;
	return io->iov[0].iov_len;
}

static int bs_rbd_start(struct bs_rbd *r, struct bs_io *io, rbd_completion_t c)
{
	const int thick = RBD_WRITE_ZEROES_FLAG_THICK_PROVISION;
	uint8_t *buf;
	size_t pat;

	switch (io->op) {
	case BS_OP_READ:
		return rbd_aio_readv(r->image, io->iov, io->iovcnt, io->offset, c);
	case BS_OP_WRITE:
		pat = bs_rbd_pattern(io);
		if (pat && io->len % pat == 0)
			return rbd_aio_writesame(r->image, io->offset, io->len, io->iov[0].iov_base,
						 pat, c, 0);
		return rbd_aio_writev(r->image, io->iov, io->iovcnt, io->offset, c);
	case BS_OP_FLUSH:
		return rbd_aio_flush(r->image, c);
	case BS_OP_DISCARD:
		if (io->bs->thin)
			return rbd_aio_discard(r->image, io->offset, io->len, c);
		/* a thick LUN keeps its objects */
		return rbd_aio_write_zeroes(r->image, io->offset, io->len, c, thick, 0);
	case BS_OP_WRITE_ZEROES:
		return rbd_aio_write_zeroes(r->image, io->offset, io->len, c, thick, 0);
	case BS_OP_COMPARE_AND_WRITE:
		buf = io->iov1.iov_base;
		if (io->len == 0 || io->len > BS_RBD_CAW_MAX || (io->offset | io->len) & 511 ||
		    io->iov1.iov_len < 2 * io->len)
			return -EINVAL;
		io->miscompare = 0;
		return (int)rbd_aio_compare_and_write(r->image, io->offset, io->len,
						      (const char *)buf,
						      (const char *)buf + io->len, c,
						      &io->miscompare, 0);
	case BS_OP_COPY:
		break;
	}
	return -EINVAL;
}

static void bs_rbd_submit(struct io_engine *eng, struct bs_io *io)
{
	struct bs_rbd *r = io->bs->priv;
	rbd_completion_t c;
	int e;

	if (io->op == BS_OP_COMPARE_AND_WRITE) {
		/* two halves in one buffer; bs_check_io sees the range only */
		if (io->iov && io->iov != &io->iov1) {
			bs_complete(eng, io, -EINVAL);
			return;
		}
		io->iov = &io->iov1;
		io->iovcnt = 1;
	}
	e = bs_check_io(io);
	if (unlikely(e < 0)) {
		bs_complete(eng, io, e);
		return;
	}
	if (io->op != BS_OP_READ && io->op != BS_OP_WRITE && io->op != BS_OP_FLUSH &&
	    io->len == 0) {
		bs_complete(eng, io, 0);
		return;
	}
	if (io->op == BS_OP_COPY) {
		io_engine_offload(eng, io, backstore_copy_work);
		return;
	}
	io_engine_remote_begin(eng, io);
	e = rbd_aio_create_completion(io, bs_rbd_aio_done, &c);
	if (e == 0) {
		e = bs_rbd_start(r, io, c);
		if (e >= 0)
			return;
		rbd_aio_release(c);
	}
	io->result = e;
	io_engine_complete_remote(io);
}

/* Worker pool: blocking transfers for COPY. */
static int bs_rbd_sync_rw(struct backstore *bs, bool write, void *buf, uint64_t len, uint64_t off)
{
	struct bs_rbd *r = bs->priv;
	uint8_t *p = buf;

	while (len > 0) {
		size_t n = (size_t)MIN(len, (uint64_t)(64u << 20));
		ssize_t k = write ? rbd_write(r->image, off, n, (const char *)p)
				  : rbd_read(r->image, off, n, (char *)p);

		if (k < 0)
			return (int)k;
		if (k == 0)
			return -EIO;
		p += k;
		off += (uint64_t)k;
		len -= (uint64_t)k;
	}
	return 0;
}

struct bs_rbd_status {
	uint64_t start, end;          /* the range asked about */
	uint64_t first, first_end;    /* the first run of existing extents */
	bool found;
};

static int bs_rbd_status_cb(uint64_t off, size_t len, int exists, void *arg)
{
	struct bs_rbd_status *s = arg;
	uint64_t e = off + len;

	if (!exists || len == 0)
		return 0;
	off = MAX(off, s->start);
	e = MIN(e, s->end);
	if (off >= e)
		return 0;
	if (!s->found) {
		s->found = true;
		s->first = off;
		s->first_end = e;
	} else if (off <= s->first_end && e > s->first_end) {
		s->first_end = e;     /* contiguous with the first run */
	}
	return 0;
}

static int bs_rbd_lba_status(struct backstore *bs, uint64_t offset, uint64_t max_len,
			     bool *mapped, uint64_t *run_len)
{
	struct bs_rbd *r = bs->priv;
	uint64_t size = backstore_size(bs);
	struct bs_rbd_status s = { 0 };
	uint64_t win;
	int e;

	if (offset >= size)
		return -EINVAL;
	max_len = MIN(max_len, size - offset);
	/* up to the end of the BS_RBD_STATUS_OBJECTS-th object */
	win = (offset / r->obj_size + BS_RBD_STATUS_OBJECTS) * r->obj_size - offset;
	s.start = offset;
	s.end = offset + MIN(max_len, win);
	e = rbd_diff_iterate2(r->image, NULL, s.start, s.end - s.start, 1, 0, bs_rbd_status_cb, &s);
	if (e < 0)
		return e;
	if (!s.found) {
		*mapped = false;
		*run_len = s.end - s.start;
	} else if (s.first > s.start) {
		*mapped = false;
		*run_len = s.first - s.start;
	} else {
		*mapped = true;
		*run_len = s.first_end - s.start;
	}
	return 0;
}

/* ---- shared records ------------------------------------------------- */

static void bs_rbd_oid(const struct bs_rbd *r, const char *name, char *oid, size_t cap)
{
	snprintf(oid, cap, "targetd.%s.%s", r->id, name);
}

static int bs_rbd_rec_read(struct backstore *bs, const char *name, void *buf, size_t cap,
			   size_t *len, uint64_t *version)
{
	struct bs_rbd *r = bs->priv;
	size_t want = BS_RBD_REC_HDR + MIN(cap, (size_t)BS_RBD_REC_MAX) + 1;
	char oid[200], *tmp = malloc(want), *e;
	int n;

	*len = 0;
	*version = 0;
	if (!tmp)
		return -ENOMEM;
	bs_rbd_oid(r, name, oid, sizeof(oid));
	n = rados_read(r->ioctx, oid, tmp, want, 0);
	if (n == -ENOENT) {
		free(tmp);
		return 0;
	}
	if (n >= 0 && (n < BS_RBD_REC_HDR || memcmp(tmp, "targetd ", 8) ||
		       tmp[BS_RBD_REC_HDR - 1] != '\n'))
		n = -EBADMSG;
	if (n >= 0) {
		*version = strtoull(tmp + 8, &e, 16);
		if (e != tmp + BS_RBD_REC_HDR - 1 || *version == 0)
			n = -EBADMSG;
	}
	if (n >= 0 && (size_t)n - BS_RBD_REC_HDR > cap)
		n = -EFBIG;
	if (n >= 0) {
		*len = (size_t)n - BS_RBD_REC_HDR;
		memcpy(buf, tmp + BS_RBD_REC_HDR, *len);
		n = 0;
	}
	free(tmp);
	return n;
}

static int bs_rbd_rec_cas(struct backstore *bs, const char *name, const void *buf, size_t len,
			  uint64_t *version)
{
	struct bs_rbd *r = bs->priv;
	char oid[200], old[BS_RBD_REC_HDR + 1], *out;
	rados_write_op_t op;
	int prval = 0, e;

	if (len > BS_RBD_REC_MAX)
		return -EFBIG;
	out = malloc(BS_RBD_REC_HDR + len + 1);
	if (!out)
		return -ENOMEM;
	bs_rbd_oid(r, name, oid, sizeof(oid));
	snprintf(old, sizeof(old), "targetd %016" PRIx64 "\n", *version);
	snprintf(out, BS_RBD_REC_HDR + 1, "targetd %016" PRIx64 "\n", *version + 1);
	memcpy(out + BS_RBD_REC_HDR, buf, len);
	op = rados_create_write_op();
	if (!op) {
		free(out);
		return -ENOMEM;
	}
	if (*version == 0)
		rados_write_op_create(op, LIBRADOS_CREATE_EXCLUSIVE, NULL);
	else
		rados_write_op_cmpext(op, old, BS_RBD_REC_HDR, 0, &prval);
	rados_write_op_write_full(op, out, BS_RBD_REC_HDR + len);
	e = rados_write_op_operate(op, r->ioctx, oid, NULL, 0);
	rados_release_write_op(op);
	free(out);
	/* another host first: the object exists already, or its header
	 * differs (cmpext fails with -MAX_ERRNO - offset, or -ECANCELED) */
	if (e == -EEXIST || e == -ECANCELED || e <= -4095 || (e < 0 && prval < 0))
		return -ECANCELED;
	if (e < 0)
		return e;
	(*version)++;
	return 0;
}

static int bs_rbd_rec_notify(struct backstore *bs, const char *name, const void *note,
			     size_t len)
{
	struct bs_rbd *r = bs->priv;
	char oid[200], *reply = NULL;
	size_t rlen = 0;
	int e;

	if (len > BS_RBD_REC_MAX)
		return -EFBIG;
	bs_rbd_oid(r, name, oid, sizeof(oid));
	e = rados_notify2(r->ioctx, oid, note, (int)len, BS_RBD_NOTIFY_MS, &reply, &rlen);
	if (reply)
		rados_buffer_free(reply);
	return e;
}

static void bs_rbd_watch_cb(void *arg, uint64_t notify_id, uint64_t handle, uint64_t notifier,
			    void *data, size_t len)
{
	struct bs_rbd_watch *w = arg;

	(void)notifier;
	w->cb(w->arg, data, len);
	rados_notify_ack(w->ioctx, w->oid, notify_id, handle, NULL, 0);
}

static void bs_rbd_watch_err(void *arg, uint64_t cookie, int err)
{
	struct bs_rbd_watch *w = arg;

	(void)cookie;
	log_event(LOG_LVL_WARN, "rbd_watch_lost", KV_S("object", w->oid),
		  KV_S("error", strerror(-err)), KV_S("effect", "the record is read again"));
	w->cb(w->arg, NULL, 0);
}

static int bs_rbd_rec_watch(struct backstore *bs, const char *name,
			    void (*cb)(void *arg, const void *note, size_t len), void *arg,
			    uint64_t *handle)
{
	struct bs_rbd *r = bs->priv;
	struct bs_rbd_watch *w = calloc(1, sizeof(*w));
	int e;

	if (!w)
		return -ENOMEM;
	w->ioctx = r->ioctx;
	w->cb = cb;
	w->arg = arg;
	bs_rbd_oid(r, name, w->oid, sizeof(w->oid));
	e = rados_watch3(r->ioctx, w->oid, &w->cookie, bs_rbd_watch_cb, bs_rbd_watch_err, 30, w);
	if (e < 0) {
		free(w);
		return e;
	}
	*handle = (uint64_t)(uintptr_t)w;
	return 0;
}

static void bs_rbd_rec_unwatch(struct backstore *bs, uint64_t handle)
{
	struct bs_rbd *r = bs->priv;
	struct bs_rbd_watch *w = (struct bs_rbd_watch *)(uintptr_t)handle;

	if (!w)
		return;
	rados_unwatch2(w->ioctx, w->cookie);
	rados_watch_flush(r->cl->rados);
	free(w);
}

static const struct bs_shared_ops bs_rbd_shared_ops = {
	.read = bs_rbd_rec_read,
	.cas = bs_rbd_rec_cas,
	.notify = bs_rbd_rec_notify,
	.watch = bs_rbd_rec_watch,
	.unwatch = bs_rbd_rec_unwatch,
};

/* Grow (the image only where it is shorter), or shrink with
 * BS_RESIZE_SHRINK: the image is cut to new_size, which destroys the
 * data past it for every gateway and client of the image. Blocking (the
 * reload path, never the data path). */
static int bs_rbd_resize(struct backstore *bs, uint64_t new_size, unsigned flags)
{
	struct bs_rbd *r = bs->priv;
	uint64_t old = backstore_size(bs), img = 0;
	bool shrink = new_size < old;
	int e;

	if (bs->read_only)
		return -EROFS;
	if (new_size == 0)
		return -EINVAL;
	if (shrink && !(flags & BS_RESIZE_SHRINK))
		return -EPERM;
	e = rbd_get_size(r->image, &img);
	if (e < 0)
		return e;
	if (shrink)
		e = rbd_resize2(r->image, new_size, true, bs_rbd_no_progress, NULL);
	else if (img < new_size)
		e = bs_rbd_grow(r, new_size);
	if (e < 0)
		return e;
	atomic_store_explicit(&bs->size, new_size, memory_order_release);
	return 0;
}

const struct backstore_ops bs_rbd_ops = {
	.name = "rbd",
	.open = bs_rbd_open,
	.close = bs_rbd_close,
	.submit = bs_rbd_submit,
	.lba_status = bs_rbd_lba_status,
	.resize = bs_rbd_resize,
	.sync_rw = bs_rbd_sync_rw,
	.shared = &bs_rbd_shared_ops,
};
