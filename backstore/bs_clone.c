/*
 * Whole-file clones of a file backstore (targetctl lun clone, snapshot,
 * revert): the new file shares every block of the source by reflink
 * (FICLONE: O(1) in the file's size on XFS with reflink=1 and on btrfs),
 * or, asked for, is a copy that keeps the source's holes.
 *
 * Data is sacred here too: the new file is created with O_EXCL (never an
 * existing file, never through a symbolic link), and only a file this
 * call created is ever removed (when the clone fails). The source is only
 * read.
 *
 * DESIGN (threads): synchronous, on the caller's thread (the control
 * thread); the caller keeps the source's writers away meanwhile
 * (scsi_lun_freeze()), so the clone is one point in time.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include "backstore/bs_impl.h"
#include "common/util.h"

#define BS_CLONE_BOUNCE (1u << 20)

/* The name of the file system fd lives on, for messages. */
static const char *bs_clone_fs_name(int fd, char *buf, size_t cap)
{
	static const struct { unsigned long magic; const char *name; } fs[] = {
		{ EXT4_SUPER_MAGIC, "ext4" },          /* also ext2 and ext3 */
		{ XFS_SUPER_MAGIC, "xfs" },
		{ BTRFS_SUPER_MAGIC, "btrfs" },
		{ TMPFS_MAGIC, "tmpfs" },
		{ OVERLAYFS_SUPER_MAGIC, "overlayfs" },
		{ NFS_SUPER_MAGIC, "nfs" },
		{ F2FS_SUPER_MAGIC, "f2fs" },
		{ 0x2fc12fc1, "zfs" },
		{ 0x65735546, "fuse" },
	};
	struct statfs sf;

	if (fstatfs(fd, &sf) < 0)
		return "an unknown file system";
	for (size_t i = 0; i < ARRAY_SIZE(fs); i++)
		if ((unsigned long)sf.f_type == fs[i].magic)
			return fs[i].name;
	snprintf(buf, cap, "a file system of type 0x%lx", (unsigned long)sf.f_type);
	return buf;
}

static int bs_clone_fsync_dir(const char *path)
{
	char *copy = strdup(path);
	int fd, rc = -ENOMEM;

	if (!copy)
		return rc;
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	rc = fd < 0 ? -errno : (fsync(fd) ? -errno : 0);
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

/* Copy [off, off + len) from in to out at the same offset: copy_file_range
 * (which may itself share blocks), else through a buffer. 0 or -errno. */
static int bs_clone_copy_range(int in, int out, uint64_t off, uint64_t len, uint8_t **bounce)
{
	bool plain = false;

	while (len) {
		ssize_t n;

		if (!plain) {
			loff_t a = (loff_t)off, b = (loff_t)off;

			n = copy_file_range(in, &a, out, &b, MIN(len, (uint64_t)1 << 30), 0);
			if (n < 0 && (errno == EXDEV || errno == ENOSYS || errno == EOPNOTSUPP ||
				      errno == EINVAL)) {
				plain = true;
				continue;
			}
		} else {
			size_t want = (size_t)MIN(len, (uint64_t)BS_CLONE_BOUNCE);

			if (!*bounce && !(*bounce = malloc(BS_CLONE_BOUNCE)))
				return -ENOMEM;
			n = pread(in, *bounce, want, (off_t)off);
			if (n > 0) {
				for (ssize_t w = 0; w < n;) {
					ssize_t k = pwrite(out, *bounce + w, (size_t)(n - w), (off_t)(off + (uint64_t)w));

					if (k < 0 && errno == EINTR)
						continue;
					if (k <= 0)
						return k < 0 ? -errno : -EIO;
					w += k;
				}
			}
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EIO;    /* the source is shorter than it said */
		off += (uint64_t)n;
		len -= (uint64_t)n;
	}
	return 0;
}

/* The data of in (size bytes) into out, hole for hole: SEEK_DATA finds
 * each run of data, SEEK_HOLE its end; what lies between stays a hole of
 * out (out is new and empty; its size is set at the end). A file system
 * without SEEK_DATA reports one run of data: then it is a plain copy. */
static int bs_clone_sparse_copy(int in, int out, uint64_t size, uint64_t *copied)
{
	uint8_t *bounce = NULL;
	uint64_t pos = 0;
	int rc = 0;

	*copied = 0;
	while (pos < size) {
		off_t d = lseek(in, (off_t)pos, SEEK_DATA), h;

		if (d < 0 && errno == ENXIO)
			break;                       /* only a hole up to the end */
		if (d < 0) {
			rc = -errno;
			break;
		}
		h = lseek(in, d, SEEK_HOLE);
		if (h < 0) {
			rc = -errno;
			break;
		}
		if ((uint64_t)h > size)
			h = (off_t)size;
		if (h > d) {
			rc = bs_clone_copy_range(in, out, (uint64_t)d, (uint64_t)(h - d), &bounce);
			if (rc)
				break;
			*copied += (uint64_t)(h - d);
		}
		pos = (uint64_t)h;
	}
	free(bounce);
	if (!rc && ftruncate(out, (off_t)size) < 0)   /* out is ours and shorter: extends */
		rc = -errno;
	return rc;
}

/* The --copy way: through a descriptor of its own (the LUN's may be
 * O_DIRECT, and its file offset is not ours to move). */
static int bs_clone_copy_file(struct backstore *bs, int out, uint64_t size, uint64_t *copied,
			      const char *path, char *err, size_t cap)
{
	char src_path[64];
	int in, rc;

	snprintf(src_path, sizeof(src_path), "/proc/self/fd/%d", bs->fd);
	in = open(src_path, O_RDONLY | O_CLOEXEC);
	if (in < 0) {
		rc = -errno;
		snprintf(err, cap, "%s: cannot open it again for the copy: %s", bs->path, strerror(-rc));
		return rc;
	}
	rc = bs_clone_sparse_copy(in, out, size, copied);
	if (rc)
		snprintf(err, cap, "copying %s to %s: %s", bs->path, path, strerror(-rc));
	close(in);
	return rc;
}

int backstore_clone(struct backstore *bs, const char *path, unsigned flags,
		    struct bs_clone_result *res, char *err, size_t cap)
{
	char fsname[64];
	struct stat st;
	int out, rc = 0;

	memset(res, 0, sizeof(*res));
	if (bs->ops != &bs_file_ops) {
		snprintf(err, cap, "a %s backstore cannot be cloned: only file LUNs can", bs->ops->name);
		return -EOPNOTSUPP;
	}
	if (fstat(bs->fd, &st) < 0) {
		rc = -errno;
		snprintf(err, cap, "%s: stat: %s", bs->path, strerror(-rc));
		return rc;
	}
	/* what was written is on stable storage before it is shared */
	if (!bs->read_only && fdatasync(bs->fd) < 0) {
		rc = -errno;
		snprintf(err, cap, "%s: fdatasync: %s", bs->path, strerror(-rc));
		return rc;
	}
	out = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, st.st_mode & 0666);
	if (out < 0) {
		rc = -errno;
		snprintf(err, cap, "cannot create %s: %s%s", path, strerror(-rc),
			 rc == -EEXIST ? " (an existing file is never overwritten: name another one)" : "");
		return rc;
	}
	res->created = true;
	if (fchown(out, st.st_uid, st.st_gid) < 0 && errno != EPERM)
		log_warn("%s: cannot give it the owner of %s: %m", path, bs->path);
	if (ioctl(out, FICLONE, bs->fd) == 0) {
		res->reflinked = true;
	} else if (errno != EOPNOTSUPP && errno != EXDEV && errno != EINVAL && errno != ENOTTY &&
		   errno != ENOSYS) {
		rc = -errno;
		snprintf(err, cap, "cannot clone %s to %s (FICLONE): %s", bs->path, path, strerror(-rc));
	} else if (flags & BS_CLONE_COPY) {
		rc = bs_clone_copy_file(bs, out, (uint64_t)st.st_size, &res->copied, path, err, cap);
	} else if (errno == EXDEV) {
		rc = -EOPNOTSUPP;
		snprintf(err, cap, "%s and %s are on different file systems: blocks are shared only "
			 "within one. Nothing was created; --copy copies the %llu bytes (holes stay "
			 "holes), or give a --path on the same file system", path, bs->path,
			 (unsigned long long)st.st_size);
	} else {
		rc = -EOPNOTSUPP;
		snprintf(err, cap, "%s is on %s, which cannot share blocks (no reflink): a clone would "
			 "be a full copy of its %llu bytes. Nothing was created; --copy copies it (holes "
			 "stay holes), or keep the LUN on XFS (mkfs.xfs -m reflink=1) or btrfs, which "
			 "clone in O(1)", bs->path, bs_clone_fs_name(bs->fd, fsname, sizeof(fsname)),
			 (unsigned long long)st.st_size);
	}
	if (!rc && fsync(out) < 0) {
		rc = -errno;
		snprintf(err, cap, "%s: fsync: %s", path, strerror(-rc));
	}
	if (close(out) < 0 && !rc) {
		rc = -errno;
		snprintf(err, cap, "%s: close: %s", path, strerror(-rc));
	}
	if (rc) {
		unlink(path);       /* ours: created above with O_EXCL */
		res->created = false;
		return rc;
	}
	res->file_bytes = (uint64_t)st.st_size;
	if ((rc = bs_clone_fsync_dir(path)) < 0)
		log_warn("%s: cannot sync its directory: %s", path, strerror(-rc));
	return 0;
}
