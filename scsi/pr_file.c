/*
 * APTPL (SPC-4 5.13.4, "persist through power loss"): the persistent
 * reservation state of one LUN in a small text file in the state
 * directory, "pr-<target>-lun<N>.state":
 *
 *   targetd-pr 1
 *   generation 7
 *   reg 00000000000000ab 1 0 0 iqn.1994-05.com.example:host1,i,0x23d000000001
 *   resv 1 0 0                      (type, scope, holder index or -1)
 *   end 1a2b3c4d                    (CRC32C of every byte before this line)
 *
 * Written atomically: a temporary file in the same directory, fsync, rename
 * over the old one, fsync of the directory. A crash (kill -9, power loss)
 * leaves either the old or the new file, never a mix. Reading is strict:
 * a file that exists but is unreadable, truncated, fails its checksum or
 * has any line this code does not understand is an error naming the file
 * and line, and the caller refuses to start; registrations are never
 * dropped silently.
 *
 * DESIGN (threads): called with the LUN's p->lock held (scsi/pr.c), so one
 * LUN's file has one writer at a time; files of different LUNs are
 * independent.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "scsi/pr_int.h"
#include "common/crc32c.h"
#include "common/util.h"

#define PR_FILE_MAGIC "targetd-pr 1"
#define PR_FILE_MAX (1u << 20)

static int pr_fsync_dir(const char *path, char *err, size_t errlen)
{
	char *copy = strdup(path);
	int fd, rc = 0;

	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	fd = open(dirname(copy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0 || fsync(fd)) {
		snprintf(err, errlen, "cannot sync the directory of %s: %s", path, strerror(errno));
		rc = -1;
	}
	if (fd >= 0)
		close(fd);
	free(copy);
	return rc;
}

static int pr_write_all(int fd, const char *buf, size_t len)
{
	while (len) {
		ssize_t n = write(fd, buf, len);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		buf += n;
		len -= (size_t)n;
	}
	return 0;
}

int pr_file_save(const struct pr_lun *p, char *err, size_t errlen)
{
	size_t cap = 256 + (size_t)p->n * (PR_PORT_MAX + 64), len = 0;
	char *buf = malloc(cap), *tmp = NULL, *dir;
	int fd = -1, rc = -1;

	if (!buf || asprintf(&tmp, "%s.tmp", p->path) < 0) {
		snprintf(err, errlen, "out of memory");
		free(buf);
		return -1;
	}
	len += (size_t)snprintf(buf + len, cap - len, "%s\ngeneration %" PRIu32 "\n",
				PR_FILE_MAGIC, p->generation);
	for (unsigned i = 0; i < p->n; i++) {
		const struct pr_reg *r = &p->regs[i];

		len += (size_t)snprintf(buf + len, cap - len, "reg %016" PRIx64 " %u %d %d %s\n",
					r->key, r->rtpi, r->all_tg_pt, r->name_only, r->port);
	}
	if (p->resv)
		len += (size_t)snprintf(buf + len, cap - len, "resv %u %u %d\n",
					p->type, p->scope, p->holder);
	len += (size_t)snprintf(buf + len, cap - len, "end %08" PRIx32 "\n", crc32c(buf, len));

	/* the state directory may not exist yet */
	dir = strdup(p->path);
	if (dir) {
		if (mkdir(dirname(dir), 0700) && errno != EEXIST)
			log_warn("cannot create %s: %m", dir);
		free(dir);
	}
	fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0) {
		snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (pr_write_all(fd, buf, len) || fsync(fd)) {
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	if (close(fd)) {
		fd = -1;
		snprintf(err, errlen, "cannot write %s: %s", tmp, strerror(errno));
		goto out;
	}
	fd = -1;
	if (rename(tmp, p->path)) {
		snprintf(err, errlen, "cannot rename %s to %s: %s", tmp, p->path, strerror(errno));
		goto out;
	}
	rc = pr_fsync_dir(p->path, err, errlen);
out:
	if (fd >= 0)
		close(fd);
	if (rc)
		unlink(tmp);
	free(tmp);
	free(buf);
	return rc;
}

int pr_file_remove(const struct pr_lun *p, char *err, size_t errlen)
{
	if (unlink(p->path) && errno != ENOENT) {
		snprintf(err, errlen, "cannot remove %s: %s", p->path, strerror(errno));
		return -1;
	}
	return pr_fsync_dir(p->path, err, errlen);
}

static int pr_load_fail(char *err, size_t errlen, const char *path, unsigned line,
			const char *what)
{
	if (line)
		snprintf(err, errlen, "%s:%u: %s; the file is kept as it is: repair or remove it "
			 "(removing it drops the persistent reservations it holds)", path, line, what);
	else
		snprintf(err, errlen, "%s: %s; the file is kept as it is: repair or remove it "
			 "(removing it drops the persistent reservations it holds)", path, what);
	return -1;
}

static bool pr_port_ok(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= PR_PORT_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

int pr_file_load(struct pr_lun *p, char *err, size_t errlen)
{
	const char *path = p->path;
	struct pr_reg *regs = NULL;
	unsigned n = 0, line = 0, type = 0, scope = 0;
	int holder = -1, fd, rc = -1;
	bool resv = false, have_gen = false, have_end = false;
	uint32_t gen = 0;
	char *buf = NULL, *pos, *end_line;
	struct stat st;
	size_t len = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;
		snprintf(err, errlen, "cannot open %s: %s", path, strerror(errno));
		return -1;
	}
	if (fstat(fd, &st) || st.st_size > PR_FILE_MAX) {
		close(fd);
		return pr_load_fail(err, errlen, path, 0, "unreadable or too large");
	}
	buf = malloc((size_t)st.st_size + 1);
	regs = calloc(PR_MAX_REGS, sizeof(*regs));
	if (!buf || !regs) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		goto out;
	}
	while (len < (size_t)st.st_size) {
		ssize_t k = read(fd, buf + len, (size_t)st.st_size - len);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		len += (size_t)k;
	}
	close(fd);
	if (len != (size_t)st.st_size) {
		pr_load_fail(err, errlen, path, 0, "short read");
		goto out;
	}
	buf[len] = '\0';
	if (strlen(buf) != len) {
		pr_load_fail(err, errlen, path, 0, "contains a NUL byte");
		goto out;
	}

	/* the checksum line closes the file */
	end_line = NULL;
	for (pos = buf; (pos = strstr(pos, "end ")) != NULL; pos++)
		if (pos == buf || pos[-1] == '\n')
			end_line = pos;
	if (!end_line || len == 0 || buf[len - 1] != '\n') {
		pr_load_fail(err, errlen, path, 0, "truncated: no closing \"end\" line");
		goto out;
	}
	{
		unsigned long want;
		char *e;

		want = strtoul(end_line + 4, &e, 16);
		if (e != end_line + 12 || *e != '\n' || e + 1 != buf + len) {
			pr_load_fail(err, errlen, path, 0, "malformed \"end\" line");
			goto out;
		}
		if (crc32c(buf, (size_t)(end_line - buf)) != (uint32_t)want) {
			pr_load_fail(err, errlen, path, 0, "checksum mismatch (the file is damaged)");
			goto out;
		}
	}

	for (pos = buf; pos < buf + len;) {
		char *nl = strchr(pos, '\n'), kw[16], port[PR_PORT_MAX + 1];
		int used = 0;

		*nl = '\0';
		line++;
		if (line == 1) {
			if (strcmp(pos, PR_FILE_MAGIC)) {
				pr_load_fail(err, errlen, path, line, "not a targetd reservation file "
					     "(expected \"" PR_FILE_MAGIC "\")");
				goto out;
			}
		} else if (sscanf(pos, "%15s", kw) != 1) {
			pr_load_fail(err, errlen, path, line, "empty line");
			goto out;
		} else if (!strcmp(kw, "generation")) {
			if (sscanf(pos, "generation %" SCNu32 "%n", &gen, &used) != 1 || pos[used]) {
				pr_load_fail(err, errlen, path, line, "bad generation");
				goto out;
			}
			have_gen = true;
		} else if (!strcmp(kw, "reg")) {
			uint64_t key;
			unsigned rtpi;
			int atp, nonly;

			if (n >= PR_MAX_REGS) {
				pr_load_fail(err, errlen, path, line, "too many registrations");
				goto out;
			}
			if (sscanf(pos, "reg %" SCNx64 " %u %d %d %300s%n", &key, &rtpi, &atp,
				   &nonly, port, &used) != 5 || pos[used] || rtpi > 0xffff ||
			    (atp != 0 && atp != 1) || (nonly != 0 && nonly != 1) || !pr_port_ok(port)) {
				pr_load_fail(err, errlen, path, line, "bad registration");
				goto out;
			}
			regs[n].key = key;
			regs[n].rtpi = (uint16_t)rtpi;
			regs[n].all_tg_pt = atp;
			regs[n].name_only = nonly;
			snprintf(regs[n].port, sizeof(regs[n].port), "%s", port);
			n++;
		} else if (!strcmp(kw, "resv")) {
			if (resv || sscanf(pos, "resv %u %u %d%n", &type, &scope, &holder, &used) != 3 ||
			    pos[used] || !pr_type_valid((uint8_t)type) || scope != 0) {
				pr_load_fail(err, errlen, path, line, "bad reservation");
				goto out;
			}
			resv = true;
		} else if (!strcmp(kw, "end")) {
			have_end = true;
		} else {
			pr_load_fail(err, errlen, path, line, "unknown line");
			goto out;
		}
		pos = nl + 1;
	}
	if (!have_gen || !have_end) {
		pr_load_fail(err, errlen, path, 0, "incomplete");
		goto out;
	}
	if (resv && (pr_type_all_reg((uint8_t)type) ? (holder != -1 || n == 0)
						   : (holder < 0 || (unsigned)holder >= n))) {
		pr_load_fail(err, errlen, path, 0, "the reservation names no registration");
		goto out;
	}
	free(p->regs);
	p->regs = regs;
	p->cap = PR_MAX_REGS;
	p->n = n;
	regs = NULL;
	p->generation = gen;
	p->resv = resv;
	p->type = (uint8_t)type;
	p->scope = (uint8_t)scope;
	p->holder = resv ? holder : -1;
	p->aptpl = true;
	log_info("%s: restored %u registration%s%s", path, n, n == 1 ? "" : "s",
		 resv ? " and a reservation" : "");
	rc = 0;
out:
	free(regs);
	free(buf);
	return rc;
}
