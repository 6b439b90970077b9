/*
 * APTPL (SPC-4 5.13.4, "persist through power loss"): the persistent
 * reservation state of one LUN in a small text file in the state
 * directory, "pr-<target>-lun<N>.state":
 *
 *   targetd-pr 2
 *   generation 7
 *   reg 00000000000000ab 1 0 0 iqn.1994-05.com.example:host1,i,0x23d000000001
 *   resv 1 0 0                      (type, scope, holder index or -1)
 *   end 1a2b3c4d                    (CRC32C of every byte before this line)
 *
 * The initiator port name of a "reg" line is escaped: every byte other
 * than a-z, A-Z, 0-9, '.', ':', ',' and '-' is written %XX (two upper-case
 * hex digits), so no name, whatever bytes it holds, can end a field or a
 * line: a peer-chosen name can never add a line to the file. Names are
 * validated before they get here (login, TransportIDs); the escaping does
 * not rely on it. Version 1 files ("targetd-pr 1", names unescaped, as
 * written before) are still read; the next change rewrites them as
 * version 2.
 *
 * Written atomically: a temporary file in the same directory, fsync, rename
 * over the old one, fsync of the directory. A crash (kill -9, power loss)
 * leaves either the old or the new file, never a mix. Reading is strict:
 * a file that exists but is unreadable, truncated, fails its checksum or
 * has any line this code does not understand is an error naming the file
 * and line. It costs only its own LUN: pr_lun_load (scsi/pr.c) starts that
 * LUN without the file's registrations and without APTPL, and leaves the
 * file as it is for the operator.
 *
 * DESIGN (threads): called with the LUN's p->lock held (scsi/pr.c), so one
 * LUN's file has one writer at a time; files of different LUNs are
 * independent. pr_file_parse is pure (the fuzzer drives it).
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

#define PR_FILE_MAGIC_V1 "targetd-pr 1"
#define PR_FILE_MAGIC "targetd-pr 2"
#define PR_FILE_MAX (1u << 20)
#define PR_ESC_MAX (3 * PR_PORT_MAX)    /* longest escaped port name */

/* ---- writing ------------------------------------------------------------ */

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

static bool pr_esc_plain(unsigned char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
	       c == '.' || c == ':' || c == ',' || c == '-';
}

/* Escape s (at most PR_PORT_MAX - 1 bytes are taken) into out, which holds
 * PR_ESC_MAX + 1 bytes. */
static void pr_escape(const char *s, char *out)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t o = 0;

	for (size_t i = 0; s[i] && i < PR_PORT_MAX - 1; i++) {
		unsigned char c = (unsigned char)s[i];

		if (pr_esc_plain(c)) {
			out[o++] = (char)c;
		} else {
			out[o++] = '%';
			out[o++] = hex[c >> 4];
			out[o++] = hex[c & 15];
		}
	}
	out[o] = '\0';
}

/* The whole file in memory, checksum line included. */
char *pr_file_format(const struct pr_lun *p, size_t *lenp)
{
	size_t cap = 256 + (size_t)p->n * (PR_ESC_MAX + 64), len = 0;
	char *buf = malloc(cap), esc[PR_ESC_MAX + 1];

	if (!buf)
		return NULL;
	len += (size_t)snprintf(buf + len, cap - len, "%s\ngeneration %" PRIu32 "\n",
				PR_FILE_MAGIC, p->generation);
	for (unsigned i = 0; i < p->n; i++) {
		const struct pr_reg *r = &p->regs[i];

		pr_escape(r->port, esc);
		len += (size_t)snprintf(buf + len, cap - len, "reg %016" PRIx64 " %u %d %d %s\n",
					r->key, r->rtpi, r->all_tg_pt, r->name_only, esc);
	}
	if (p->resv)
		len += (size_t)snprintf(buf + len, cap - len, "resv %u %u %d\n",
					p->type, p->scope, p->holder);
	len += (size_t)snprintf(buf + len, cap - len, "end %08" PRIx32 "\n", crc32c(buf, len));
	*lenp = len;
	return buf;
}

int pr_file_save(const struct pr_lun *p, char *err, size_t errlen)
{
	size_t len = 0;
	char *buf = pr_file_format(p, &len), *tmp = NULL, *dir;
	int fd = -1, rc = -1;

	if (!buf || asprintf(&tmp, "%s.tmp", p->path) < 0) {
		snprintf(err, errlen, "out of memory");
		free(buf);
		return -1;
	}
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

/* ---- reading ------------------------------------------------------------ */

static int pr_load_fail(char *err, size_t errlen, const char *path, unsigned line,
			const char *what)
{
	if (line)
		snprintf(err, errlen, "%s:%u: %s", path, line, what);
	else
		snprintf(err, errlen, "%s: %s", path, what);
	return PR_LOAD_BAD;
}

/* What a file holds, before it replaces the LUN's state. */
struct pr_parsed {
	struct pr_reg *regs;
	unsigned n;
	uint32_t gen;
	bool have_gen, resv;
	unsigned type, scope;
	int holder;
	int version;
};

/* Version 1: the port name as written, printable ASCII without spaces. */
static bool pr_port_ok_v1(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n >= PR_PORT_MAX)
		return false;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] <= 0x20 || (unsigned char)s[i] >= 0x7f)
			return false;
	return true;
}

static int pr_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Version 2: undo pr_escape exactly. Returns false on anything pr_escape
 * would not have written, a NUL byte or a name too long. */
static bool pr_unescape(const char *s, char out[PR_PORT_MAX])
{
	size_t o = 0;

	if (!*s)
		return false;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (o == PR_PORT_MAX - 1)
			return false;
		if (c == '%') {
			int hi = pr_hex_digit(s[1]), lo = hi < 0 ? -1 : pr_hex_digit(s[2]);

			if (lo < 0 || (hi == 0 && lo == 0) || pr_esc_plain((unsigned char)(hi << 4 | lo)))
				return false;
			out[o++] = (char)(hi << 4 | lo);
			s += 2;
		} else if (pr_esc_plain(c)) {
			out[o++] = (char)c;
		} else {
			return false;
		}
	}
	out[o] = '\0';
	return true;
}

/* The next field of a line: fields are separated by one space each.
 * Returns NULL at the end of the line. */
static char *pr_field(char **s)
{
	char *f = *s, *sp;

	if (!f || !*f)
		return NULL;
	sp = strchr(f, ' ');
	if (sp) {
		*sp = '\0';
		*s = sp + 1;
	} else {
		*s = NULL;
	}
	return f;
}

/* A number in the given base (10 or 16), digits only, at most max. */
static bool pr_number(const char *f, int base, uint64_t max, uint64_t *out)
{
	size_t n = f ? strspn(f, base == 16 ? "0123456789abcdefABCDEF" : "0123456789") : 0;
	unsigned long long v;
	char *e;

	if (n == 0 || f[n] || n > (base == 16 ? 16u : 20u))
		return false;
	errno = 0;
	v = strtoull(f, &e, base);
	if (errno || *e || v > max)
		return false;
	*out = v;
	return true;
}

/* "reg KEY RTPI ALL_TG_PT NAME_ONLY PORT" (after "reg ") */
static const char *pr_parse_reg(struct pr_parsed *f, char *rest)
{
	char *fk = pr_field(&rest), *fr = pr_field(&rest), *fa = pr_field(&rest);
	char *fn = pr_field(&rest), *fp = pr_field(&rest);
	uint64_t key, rtpi, atp, nonly;
	struct pr_reg *r;

	if (f->n >= PR_MAX_REGS)
		return "too many registrations";
	if (!pr_number(fk, 16, UINT64_MAX, &key) || !pr_number(fr, 10, 0xffff, &rtpi) ||
	    !pr_number(fa, 10, 1, &atp) || !pr_number(fn, 10, 1, &nonly) || !fp || rest)
		return "bad registration (expected: reg KEY RTPI ALL_TG_PT NAME_ONLY PORT)";
	r = &f->regs[f->n];
	memset(r, 0, sizeof(*r));
	if (f->version == 1) {
		if (!pr_port_ok_v1(fp))
			return "bad registration: bad initiator port name";
		snprintf(r->port, sizeof(r->port), "%s", fp);
	} else if (!pr_unescape(fp, r->port)) {
		return "bad registration: bad initiator port name (not escaped as targetd writes it)";
	}
	r->key = key;
	r->rtpi = (uint16_t)rtpi;
	r->all_tg_pt = atp;
	r->name_only = nonly;
	f->n++;
	return NULL;
}

/* "resv TYPE SCOPE HOLDER" (after "resv ") */
static const char *pr_parse_resv(struct pr_parsed *f, char *rest)
{
	char *ft = pr_field(&rest), *fs = pr_field(&rest), *fh = pr_field(&rest);
	uint64_t type, scope, holder = 0;

	if (f->resv)
		return "a second reservation";
	if (!pr_number(ft, 10, 0xff, &type) || !pr_type_valid((uint8_t)type) ||
	    !pr_number(fs, 10, 0, &scope) || !fh || rest ||
	    (strcmp(fh, "-1") && !pr_number(fh, 10, PR_MAX_REGS - 1, &holder)))
		return "bad reservation (expected: resv TYPE 0 HOLDER)";
	f->type = (unsigned)type;
	f->scope = (unsigned)scope;
	f->holder = strcmp(fh, "-1") ? (int)holder : -1;
	f->resv = true;
	return NULL;
}

/* One line (NUL-terminated, without its newline); NULL or what is wrong. */
static const char *pr_parse_line(struct pr_parsed *f, unsigned line, char *s)
{
	char *kw;

	if (line == 1) {
		if (!strcmp(s, PR_FILE_MAGIC))
			f->version = 2;
		else if (!strcmp(s, PR_FILE_MAGIC_V1))
			f->version = 1;
		else
			return "not a targetd reservation file (expected \"" PR_FILE_MAGIC "\")";
		return NULL;
	}
	kw = pr_field(&s);
	if (!kw)
		return "empty line";
	if (!strcmp(kw, "generation")) {
		uint64_t g;

		if (f->have_gen || !pr_number(pr_field(&s), 10, UINT32_MAX, &g) || s)
			return "bad generation";
		f->gen = (uint32_t)g;
		f->have_gen = true;
		return NULL;
	}
	if (!strcmp(kw, "reg"))
		return pr_parse_reg(f, s);
	if (!strcmp(kw, "resv"))
		return pr_parse_resv(f, s);
	return "unknown line";
}

/* The checksum line closes the file: "end XXXXXXXX\n", the CRC32C of every
 * byte before it. Returns NULL and the offset of that line, or what is
 * wrong. */
static const char *pr_check_end(const char *buf, size_t len, size_t *end_off)
{
	const char *end_line;
	unsigned long want;
	char *e;

	if (len < 13 || buf[len - 1] != '\n')
		return "truncated: no closing \"end\" line";
	end_line = buf + len - 13;
	if (memcmp(end_line, "end ", 4) || (end_line != buf && end_line[-1] != '\n'))
		return "truncated: no closing \"end\" line";
	if (strspn(end_line + 4, "0123456789abcdef") != 8)
		return "malformed \"end\" line";
	want = strtoul(end_line + 4, &e, 16);
	if (e != end_line + 12 || *e != '\n')
		return "malformed \"end\" line";
	if (crc32c(buf, (size_t)(end_line - buf)) != (uint32_t)want)
		return "checksum mismatch (the file is damaged)";
	*end_off = (size_t)(end_line - buf);
	return NULL;
}

/* The parsed state replaces the LUN's (p->lock held). */
static void pr_parsed_apply(struct pr_lun *p, struct pr_parsed *f)
{
	free(p->regs);
	p->regs = f->regs;
	p->cap = PR_MAX_REGS;
	p->n = f->n;
	f->regs = NULL;
	p->generation = f->gen;
	p->resv = f->resv;
	p->type = (uint8_t)f->type;
	p->scope = (uint8_t)f->scope;
	p->holder = f->resv ? f->holder : -1;
	p->aptpl = true;
}

int pr_file_parse(struct pr_lun *p, char *buf, size_t len, const char *path, char *err,
		  size_t errlen)
{
	struct pr_parsed f = { .holder = -1 };
	const char *what;
	unsigned line = 0;
	size_t end_off = 0;
	int rc = PR_LOAD_BAD;

	if (memchr(buf, '\0', len))
		return pr_load_fail(err, errlen, path, 0, "contains a NUL byte");
	buf[len] = '\0';
	what = pr_check_end(buf, len, &end_off);
	if (what)
		return pr_load_fail(err, errlen, path, 0, what);
	f.regs = calloc(PR_MAX_REGS, sizeof(*f.regs));
	if (!f.regs) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	/* every line before the "end" line ends with a newline */
	for (char *pos = buf; pos < buf + end_off;) {
		char *nl = strchr(pos, '\n');

		*nl = '\0';
		what = pr_parse_line(&f, ++line, pos);
		if (what) {
			pr_load_fail(err, errlen, path, line, what);
			goto out;
		}
		pos = nl + 1;
	}
	if (!f.version) {
		pr_load_fail(err, errlen, path, 1, "not a targetd reservation file (no header line)");
		goto out;
	}
	if (!f.have_gen) {
		pr_load_fail(err, errlen, path, 0, "incomplete: no generation line");
		goto out;
	}
	if (f.resv && (pr_type_all_reg((uint8_t)f.type) ? (f.holder != -1 || f.n == 0)
						       : (f.holder < 0 || (unsigned)f.holder >= f.n))) {
		pr_load_fail(err, errlen, path, 0, "the reservation names no registration");
		goto out;
	}
	pr_parsed_apply(p, &f);
	rc = 0;
out:
	free(f.regs);
	return rc;
}

/* Read the whole file into a buffer with room for a NUL (*bufp stays NULL
 * when there is no file). */
static int pr_file_read(const char *path, char **bufp, size_t *lenp, char *err, size_t errlen)
{
	struct stat st;
	size_t len = 0;
	char *buf;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	*bufp = NULL;
	if (fd < 0) {
		if (errno == ENOENT)
			return 0;   /* no file: nothing to restore */
		snprintf(err, errlen, "%s: cannot open: %s", path, strerror(errno));
		return PR_LOAD_BAD;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > PR_FILE_MAX) {
		close(fd);
		return pr_load_fail(err, errlen, path, 0, "unreadable, not a regular file or too large");
	}
	buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return -1;
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
		free(buf);
		return pr_load_fail(err, errlen, path, 0, "short read");
	}
	*bufp = buf;
	*lenp = len;
	return 0;
}

int pr_file_load(struct pr_lun *p, char *err, size_t errlen)
{
	char *buf = NULL;
	size_t len = 0;
	int rc = pr_file_read(p->path, &buf, &len, err, errlen);

	if (rc || !buf)
		return rc;
	rc = pr_file_parse(p, buf, len, p->path, err, errlen);
	free(buf);
	if (!rc)
		log_info("%s: restored %u registration%s%s", p->path, p->n, p->n == 1 ? "" : "s",
			 p->resv ? " and a reservation" : "");
	return rc;
}
