/*
 * Backstores: where blocks live. A backstore never sees a CDB; SCSI
 * semantics stay in scsi/. Every operation is asynchronous: submit() queues
 * the request on the calling thread's io_engine and the completion callback
 * io->done runs later on that same thread (never inside submit()).
 *
 * DESIGN: a struct backstore is shared by every network thread that has a
 * session on its LUN; it holds only immutable state after open (fd, size)
 * plus what the kernel synchronises (the file itself). All per-request state
 * lives in struct bs_io, owned by the submitting thread.
 */
#ifndef BACKSTORE_BACKSTORE_H
#define BACKSTORE_BACKSTORE_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/uio.h>
#include <time.h>

struct io_engine;
struct backstore;

enum bs_op {
	BS_OP_READ,          /* readv at offset into iov */
	BS_OP_WRITE,         /* writev at offset from iov; BS_IO_FUA = durable first */
	BS_OP_FLUSH,         /* make every completed write durable */
	BS_OP_WRITE_ZEROES,  /* offset/len read back as zeroes, blocks stay allocated */
	BS_OP_DISCARD,       /* offset/len deallocated (thin) and read back as zeroes */
	BS_OP_COPY,          /* copy len bytes from (src, src_offset) to (bs, offset) */
	BS_OP_COMPARE_AND_WRITE, /* atomic on the store: iov1 holds 2 * len bytes; if
	                      * [offset, offset + len) equals the first len, write
	                      * the second len there; else nothing is written and
	                      * result = -EILSEQ with io->miscompare set. Only where
	                      * backstore_caw_max() >= len (offset and len in 512s) */
};

#define BS_IO_FUA 0x1u     /* write through to stable storage before completing */
#define BS_IO_ATOMIC 0x2u  /* WRITE: whole or not at all, whatever happens to the
                            * daemon; one segment, len and offset as
                            * backstore_atomic_fits() says (else -EINVAL) */

struct bs_io {
	struct backstore *bs;
	enum bs_op op;
	unsigned flags;
	uint64_t offset;
	uint64_t len;             /* bytes; for READ/WRITE the sum of iov lengths */
	struct iovec *iov;
	int iovcnt;
	struct iovec iov1;        /* convenience: single-buffer requests point iov here */
	struct backstore *src;    /* BS_OP_COPY source */
	uint64_t src_offset;
	int64_t result;           /* set before done(): bytes done (>= 0) or -errno */
	uint64_t reflinked;       /* BS_OP_COPY, set before done(): bytes of len shared
	                           * with the source (reflink) rather than copied */
	uint64_t miscompare;      /* COMPARE_AND_WRITE -EILSEQ: offset in the request
	                           * of the first byte that differs */
	void (*done)(struct bs_io *io);
	void *priv;
	struct bs_io *next;       /* engine-private linkage */
	/* Engine-private state (set by io_engine; callers leave it alone). */
	struct io_engine *eng;    /* engine the request was queued on */
	void (*work)(struct bs_io *io); /* worker-pool function */
	uint64_t xfer_done;       /* READ/WRITE bytes already transferred */
	/* Backstore latency (CLOCK_MONOTONIC ns): set by backstore_submit()
	 * and by the engine just before done() runs. */
	uint64_t submit_ns, done_ns;
};

struct bs_params {
	const char *type;         /* "file", "block", "memory" */
	const char *path;         /* file or device; unused for memory */
	uint64_t size;            /* bytes; 0 = take from the file or device */
	uint32_t block_size;      /* logical block size the LUN exports */
	bool thin;                /* file: keep it sparse */
	bool read_only;
	bool direct;              /* O_DIRECT */
	bool create;              /* file: create if missing (needs size) */
	struct {                  /* type "rbd" (Ceph RBD) */
		const char *pool;     /* RADOS pool */
		const char *image;    /* image name in the pool */
		const char *conf;     /* ceph.conf path; NULL = librados' default */
		const char *client;   /* client id ("admin" = client.admin); NULL = admin */
	} rbd;
};

/* What a backstore holds on its medium (backstore_space()). */
struct bs_space {
	uint64_t allocated;       /* bytes allocated to it (a file's st_blocks, a
	                           * memory LUN's pages, a device's whole size) */
	uint64_t pool_size;       /* the file system (or device) it lives on, */
	uint64_t pool_free;       /* and what of it is free for it (0 if unknown);
	                           * filled only when asked for (BS_SPACE_POOL) */
	uint64_t shared;          /* bytes of allocated shared with other files
	                           * (reflink; FIEMAP_EXTENT_SHARED), when asked
	                           * for (BS_SPACE_SHARED); 0 where not known */
	bool shared_partial;      /* too many extents: shared is a lower bound */
};
#define BS_SPACE_POOL   0x1u  /* backstore_space(): pool_size, pool_free too */
#define BS_SPACE_SHARED 0x2u  /* and shared (walks the file's extents: not
                               * for the data path) */
/*
 * Records shared by every host that opens the same store (rbd: small RADOS
 * objects beside the image), for state that every gateway of a shared LUN
 * must agree on (reservations). A record is a byte string with a version;
 * a write succeeds only while the record still has the version the writer
 * last saw (compare-and-set), so two hosts never both win. A note sent to
 * a record reaches every host watching it. All calls block on the store
 * (network round trips): never on the data path.
 */
struct bs_shared_ops {
	/* Up to cap bytes into buf, the length in *len and the version in
	 * *version (0 and length 0 when there is no record yet). 0 or -errno
	 * (-EFBIG: longer than cap). */
	int (*read)(struct backstore *bs, const char *name, void *buf, size_t cap, size_t *len,
		    uint64_t *version);
	/* Replace the record with buf if its version is still *version (0:
	 * create it); *version becomes the new version. -ECANCELED when
	 * another host changed (or created) it first. */
	int (*cas)(struct backstore *bs, const char *name, const void *buf, size_t len,
		   uint64_t *version);
	/* Send note to every watcher of the record (this host's too) and
	 * wait, a few seconds at most, for them to take it. 0 or -errno. */
	int (*notify)(struct backstore *bs, const char *name, const void *note, size_t len);
	/* Until unwatch: cb(arg, note, len) on a store thread for every note,
	 * and cb(arg, NULL, 0) when notes may have been missed (read the
	 * record again). The record must exist. */
	int (*watch)(struct backstore *bs, const char *name,
		     void (*cb)(void *arg, const void *note, size_t len), void *arg,
		     uint64_t *handle);
	/* No callback runs once this returns. */
	void (*unwatch)(struct backstore *bs, uint64_t handle);
};

struct backstore_ops {
	const char *name;
	int (*open)(struct backstore *bs, const struct bs_params *p, char *err, size_t errlen);
	void (*close)(struct backstore *bs);
	void (*submit)(struct io_engine *eng, struct bs_io *io);
	/* Provisioning status of the run starting at offset: *mapped and the
	 * length of the run with that status (<= max_len). Synchronous. */
	int (*lba_status)(struct backstore *bs, uint64_t offset, uint64_t max_len,
			  bool *mapped, uint64_t *run_len);
	/* Change the size; optional. Growing keeps every byte: a file is
	 * extended, never cut (it may be longer than the LUN). Shrinking
	 * discards the data past the new end (a file is truncated), so it
	 * happens only with BS_RESIZE_SHRINK; without it a smaller size is
	 * -EPERM and nothing changes. */
	int (*resize)(struct backstore *bs, uint64_t new_size, unsigned flags);
	/* Space held and space left; optional (see backstore_space()). */
	int (*space)(struct backstore *bs, struct bs_space *out, unsigned what);
	/* Zero-copy reads; optional (see backstore_zc_ptr()). */
	const uint8_t *(*zc_ptr)(struct backstore *bs, uint64_t offset, uint64_t len);
	/* Open the file at bs->path again in place of the one open; optional
	 * (see backstore_reopen()). */
	int (*reopen)(struct backstore *bs, uint64_t size, char *err, size_t cap);
	/* Blocking read (write = false) or write of len bytes at off, for
	 * COPY between backstores without a file descriptor (rbd); called
	 * on the worker pool only. Optional. 0 or -errno. */
	int (*sync_rw)(struct backstore *bs, bool write, void *buf, uint64_t len, uint64_t off);
	/* Records shared with other hosts of the same store; optional. */
	const struct bs_shared_ops *shared;
};

#define BS_RESIZE_SHRINK 0x1u   /* resize: the caller was told to destroy data */

/* What users of a backstore (scsi/, the daemon) may read: ops, path,
 * size, read_only, thin, discard_zeroes, caw_max, discard_granularity,
 * identity, location, and the facts through the accessors below. The rest belongs to the backstore implementations. */
struct backstore {
	const struct backstore_ops *ops;
	char *path;
	_Atomic uint64_t size;    /* bytes; changed by resize (release store) */
	bool read_only;
	bool thin;
	bool discard_zeroes;      /* DISCARD reads back zeroes (LBPRZ) */
	uint32_t phys_block_size; /* unit of allocation and caching, set at open:
	                           * the device's physical block, the file
	                           * system's block, a page (0: not known) */
	/* Atomic writes (BS_IO_ATOMIC), set at open (backstore/bs_atomic.c):
	 * power-of-two lengths from atomic_min to atomic_max bytes, at offsets
	 * aligned to their length, are written whole or not at all, also when
	 * the daemon is killed. 0: none. atomic_any: every write is (memory:
	 * nothing of it outlives the daemon), with no limit of its own. */
	uint32_t atomic_min, atomic_max;
	bool atomic_any;
	uint32_t caw_max;         /* bytes BS_OP_COMPARE_AND_WRITE takes (0: not offered) */
	uint32_t discard_granularity; /* bytes: DISCARD gives space back in units of this
	                           * (0: the backstore's physical block) */
	const char *identity;     /* names the stored data the same way wherever it is
	                           * opened (rbd: cluster fsid, pool id, image id), so
	                           * that gateways sharing it show one LUN identity;
	                           * NULL for local backstores */
	const char *location;     /* where the data is, for people, when there is
	                           * no path: "pool/image" (rbd); NULL elsewhere */
	/* --- private to backstore/ --- */
	int fd;                   /* -1 for memory */
	int atomic_fd;            /* O_DIRECT descriptor for atomic writes, or -1 */
	uint32_t dio_mem_align;   /* buffer alignment of direct I/O on atomic_fd */
	uint32_t dev_block_size;  /* block device logical block size, else 512 */
	bool direct;
	bool is_blockdev;
	uint8_t *mem_base;        /* memory backstore: the whole LUN (tests peek) */
	uint8_t *map_base;        /* page-cache file: a read-only shared mapping */
	uint64_t map_len;         /* bytes of map_base (the size at open) */
	/* File: buffered WRITEs copied on the submitting thread (bs_file.c);
	 * shared by every thread that submits, hence atomics. */
	atomic_int wr_inline_mode;            /* enum bs_file_wr_mode, below */
	_Atomic uint64_t wr_inline_off_until; /* ns: after a stall, not before */
	_Atomic uint64_t wr_inline_last_stall;/* ns of the last stall, 0: none */
	atomic_uint wr_inline_strikes;        /* stalls close together (backoff) */
	_Atomic uint64_t wr_inline;           /* writes done that way (tests) */
	void *priv;
};

/* bs->wr_inline_mode: not known yet; the file system writes into the page
 * cache without blocking (io_uring does it inline); it cannot (copy on the
 * submitting thread, bs_file.c). */
enum bs_file_wr_mode { BS_FILE_WR_PROBE, BS_FILE_WR_URING, BS_FILE_WR_INLINE };

/* Open by p->type. On failure returns -errno (or -EINVAL) and writes a
 * human-readable reason into err. */
int backstore_open(struct backstore **out, const struct bs_params *p, char *err, size_t errlen);
void backstore_close(struct backstore *bs);

static inline uint64_t backstore_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static inline void backstore_submit(struct io_engine *eng, struct bs_io *io)
{
	io->submit_ns = backstore_now_ns();
	io->done_ns = 0;
	io->bs->ops->submit(eng, io);
}

static inline uint64_t backstore_size(const struct backstore *bs)
{
	return atomic_load_explicit(&bs->size, memory_order_acquire);
}

/* The backstore's unit of allocation and caching in bytes (a power of
 * two): what READ CAPACITY(16) reports as the physical block. A page when
 * the backstore does not know better. */
static inline uint32_t backstore_phys_block_size(const struct backstore *bs)
{
	return bs && bs->phys_block_size ? bs->phys_block_size : 4096;
}

/* Zero-copy reads (scsi_cmd.zc_ok): a pointer to the bytes [offset,
 * offset + len) that the transport may hand to the kernel instead of
 * reading them into a buffer, or NULL. Only where the bytes are there
 * already: the memory backstore, and the pages of a mapped file that are
 * resident in the page cache (so the kernel's copy into the socket never
 * waits for the disk). The daemon itself never touches these bytes: only
 * the kernel copies them, in sendmsg(), so a file truncated behind our
 * back gives EFAULT there, not SIGBUS. Synchronous and cheap (mincore). */
static inline const uint8_t *backstore_zc_ptr(struct backstore *bs, uint64_t offset, uint64_t len)
{
	return bs && bs->ops->zc_ptr ? bs->ops->zc_ptr(bs, offset, len) : NULL;
}

/* Provisioning status of the run starting at offset (see ops.lba_status);
 * a backstore that cannot tell reports every byte mapped. 0 or -errno. */
static inline int backstore_lba_status(struct backstore *bs, uint64_t offset, uint64_t max_len,
				       bool *mapped, uint64_t *run_len)
{
	if (!bs->ops->lba_status) {
		*mapped = true;
		*run_len = max_len;
		return 0;
	}
	return bs->ops->lba_status(bs, offset, max_len, mapped, run_len);
}

/* Can the backstore write [offset, offset + len) with BS_IO_ATOMIC? */
static inline bool backstore_atomic_fits(const struct backstore *bs, uint64_t offset, uint64_t len)
{
	if (bs->atomic_any)
		return true;
	return bs->atomic_min && len >= bs->atomic_min && len <= bs->atomic_max &&
	       !(len & (len - 1)) && !(offset & (len - 1));
}

/* Space the backstore holds (and, with BS_SPACE_POOL, the size and free
 * space of the file system or device under it; with BS_SPACE_SHARED, what
 * of it is shared by reflink): 0, or -ENOTSUP where it cannot tell.
 * Synchronous; cheap (fstat, fstatvfs) without BS_SPACE_SHARED. */
static inline int backstore_space(struct backstore *bs, struct bs_space *out, unsigned what)
{
	memset(out, 0, sizeof(*out));
	if (!bs->ops->space)
		return -ENOTSUP;
	return bs->ops->space(bs, out, what);
}

/* Whole-file clones (backstore/bs_clone.c; file backstores only). */
#define BS_CLONE_COPY 0x1u      /* no reflink here: copy (holes stay holes) */
struct bs_clone_result {
	bool created;             /* path was created (and is kept on success) */
	bool reflinked;           /* its blocks are shared with the source (FICLONE) */
	uint64_t file_bytes;      /* the new file's size (the source file's) */
	uint64_t copied;          /* bytes copied (data runs, not holes); 0 for a reflink */
};
/*
 * A new file at path (created O_EXCL with the source's mode and owner:
 * never an existing file) holding the whole of bs's file as it is now,
 * after an fdatasync of bs: its blocks shared by reflink (FICLONE) where
 * the file system can, else, with BS_CLONE_COPY, copied (copy_file_range,
 * data runs only: SEEK_DATA/SEEK_HOLE keep holes as holes). The new file
 * and its directory are fsynced. The caller keeps bs's writers away
 * meanwhile (scsi_lun_freeze()) for a point-in-time clone. 0, or -errno
 * with the reason in err and nothing left behind: -EOPNOTSUPP where the
 * file system cannot share blocks and BS_CLONE_COPY was not given (the
 * message names the file system and --copy), -EEXIST where path exists.
 */
int backstore_clone(struct backstore *bs, const char *path, unsigned flags,
		    struct bs_clone_result *res, char *err, size_t cap);

/*
 * The file at bs->path, replaced by rename (targetctl lun revert), takes
 * the place of the one bs has open: the same descriptor (dup3), so the
 * swap is atomic for the kernel, and bs->size becomes size (the file is
 * at least that long). Nothing may be in flight on bs, and no zero-copy
 * pointer may be in use (the mapping is made again). 0 or -errno with err;
 * on failure bs is unchanged. -ENOTSUP for backstores that cannot.
 */
static inline int backstore_reopen(struct backstore *bs, uint64_t size, char *err, size_t cap)
{
	if (!bs->ops->reopen) {
		snprintf(err, cap, "a %s backstore cannot be reopened", bs->ops->name);
		return -ENOTSUP;
	}
	return bs->ops->reopen(bs, size, err, cap);
}

/* COMPARE AND WRITE done atomically by the store itself (shared by several
 * hosts, such as Ceph RBD): the most bytes one request may cover, 0 when
 * the backstore does not offer it (the SCSI layer then compares and writes
 * under its own range lock). */
static inline uint32_t backstore_caw_max(const struct backstore *bs)
{
	return bs ? bs->caw_max : 0;
}

/* Request contract (every backstore):
 *  - READ/WRITE: io->iov/iovcnt (or iov NULL: the single buffer io->iov1),
 *    len = sum of the iov lengths. With O_DIRECT (params.direct) buffers,
 *    offsets and lengths must be aligned: the caller allocates 4096-aligned
 *    buffers.
 *  - offset + len (and src_offset + len for COPY) must lie inside the
 *    backstore, else result = -EINVAL.
 *  - Success: result = len (0 for FLUSH). Failure: -errno, e.g. -EIO,
 *    -ENOSPC; any modifying op on a read-only backstore: -EROFS.
 *  - A READ that meets the end of the underlying file (a file shorter than
 *    the backstore) reads zeroes there. */
/* Run one request to completion on a private engine (start-up, tools,
 * tests, shutdown flush). Returns io->result. */
int64_t backstore_sync_io(struct bs_io *io);

extern const struct backstore_ops bs_file_ops;
extern const struct backstore_ops bs_block_ops;
extern const struct backstore_ops bs_memory_ops;
#ifdef HAVE_RBD
extern const struct backstore_ops bs_rbd_ops;
#endif

#endif
