/*
 * Reading a command trace file (format: common/trace_format.h). The file
 * is read whole and every record is checked against its own length and
 * the file's before anything in it is used.
 */
#include "config.h"
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "common/trace_format.h"

#define TRACE_READ_MAX (4ull << 30)   /* larger files are refused */

static int slurp(const char *path, uint8_t **out, size_t *len, char *err, size_t errlen)
{
	FILE *f = fopen(path, "rb");
	uint8_t *p = NULL;
	size_t cap = 0, n = 0;

	if (!f) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	for (;;) {
		size_t r;

		if (n == cap) {
			uint8_t *x;

			cap = cap ? cap * 2 : 1 << 20;
			if (cap > TRACE_READ_MAX) {
				snprintf(err, errlen, "%s: larger than 4 GiB", path);
				goto fail;
			}
			x = realloc(p, cap);
			if (!x) {
				snprintf(err, errlen, "%s: out of memory", path);
				goto fail;
			}
			p = x;
		}
		r = fread(p + n, 1, cap - n, f);
		n += r;
		if (r == 0)
			break;
	}
	if (ferror(f)) {
		snprintf(err, errlen, "%s: read error", path);
		goto fail;
	}
	fclose(f);
	*out = p;
	*len = n;
	return 0;
fail:
	fclose(f);
	free(p);
	return -1;
}

static void copy_name(char *dst, size_t cap, const uint8_t *src, size_t n)
{
	size_t j = 0;

	for (size_t i = 0; i < n && j + 1 < cap; i++)
		dst[j++] = (src[i] >= 0x20 && src[i] < 0x7f) ? (char)src[i] : '?';
	dst[j] = '\0';
}

static int add_nexus(struct trace_file *t, const uint8_t *p, uint16_t len)
{
	struct trace_rec_nexus r;
	struct trace_nexus_info *x, *n;
	size_t ilen, tlen;

	if (len < sizeof(r))
		return -1;
	memcpy(&r, p, sizeof(r));
	ilen = le16toh(r.initiator_len);
	tlen = le16toh(r.target_len);
	if (sizeof(r) + ilen + tlen > len)
		return -1;
	x = realloc(t->nexus, (t->n_nexus + 1) * sizeof(*x));
	if (!x)
		return -1;
	t->nexus = x;
	n = &x[t->n_nexus++];
	memset(n, 0, sizeof(*n));
	n->id = le64toh(r.nexus);
	n->tpgt = le16toh(r.tpgt);
	memcpy(n->isid, r.isid, 6);
	copy_name(n->initiator, sizeof(n->initiator), p + sizeof(r), ilen);
	copy_name(n->target, sizeof(n->target), p + sizeof(r) + ilen, tlen);
	return 0;
}

static int add_command(struct trace_file *t, size_t *cap, const uint8_t *p, uint16_t len)
{
	struct trace_rec_command r;
	struct trace_cmd_info *c;

	if (len < sizeof(r))
		return -1;
	memcpy(&r, p, sizeof(r));
	if (r.cdb_len < 6 || r.cdb_len > 32 || r.sense_len > 96 ||
	    sizeof(r) + r.cdb_len + r.sense_len > len)
		return -1;
	if (t->n_cmds == *cap) {
		size_t nc = *cap ? *cap * 2 : 1024;
		struct trace_cmd_info *x = realloc(t->cmds, nc * sizeof(*x));

		if (!x)
			return -1;
		t->cmds = x;
		*cap = nc;
	}
	c = &t->cmds[t->n_cmds++];
	memset(c, 0, sizeof(*c));
	c->arrival_ns = le64toh(r.arrival_ns);
	c->nexus = le64toh(r.nexus);
	c->lun = le64toh(r.lun);
	c->cmdsn = le32toh(r.cmdsn);
	c->itt = le32toh(r.itt);
	c->exp_xfer_len = le32toh(r.exp_xfer_len);
	c->data_len = le32toh(r.data_len);
	c->latency_ns = le64toh(r.latency_ns);
	c->data_crc = le32toh(r.data_crc);
	c->status = r.status;
	c->flags = r.flags;
	c->task_attr = r.task_attr;
	c->cdb_len = r.cdb_len;
	c->sense_len = r.sense_len;
	memcpy(c->cdb, p + sizeof(r), r.cdb_len);
	memcpy(c->sense, p + sizeof(r) + r.cdb_len, r.sense_len);
	return 0;
}

/* One record at p (left bytes of the file): its length, or 0 when it
 * cannot be trusted (t->error says why). */
static size_t one_record(struct trace_file *t, size_t *cap, const uint8_t *p, size_t left, size_t off)
{
	struct trace_rec_hdr h;
	uint16_t type, len;
	int rc = 0;

	if (left < sizeof(h)) {
		snprintf(t->error, sizeof(t->error), "offset %zu: a record cut short", off);
		return 0;
	}
	memcpy(&h, p, sizeof(h));
	type = le16toh(h.type);
	len = le16toh(h.len);
	if (len < 8 || len % 8 || len > left || len > TRACE_REC_MAX) {
		snprintf(t->error, sizeof(t->error), "offset %zu: record of %u bytes%s", off, len,
			 len > left ? " past the end (the trace was not stopped cleanly?)" : "");
		return 0;
	}
	switch (type) {
	case TRACE_REC_NEXUS:
		rc = add_nexus(t, p, len);
		break;
	case TRACE_REC_COMMAND:
		rc = add_command(t, cap, p, len);
		break;
	case TRACE_REC_DROPPED: {
		struct trace_rec_dropped d;

		if (len < sizeof(d)) {
			rc = -1;
			break;
		}
		memcpy(&d, p, sizeof(d));
		t->dropped += le64toh(d.count);
		break;
	}
	case TRACE_REC_END: {
		struct trace_rec_end e;

		if (len < sizeof(e)) {
			rc = -1;
			break;
		}
		memcpy(&e, p, sizeof(e));
		t->ended = true;
		t->end_commands = le64toh(e.commands);
		t->end_dropped = le64toh(e.dropped);
		break;
	}
	default:
		break;   /* PAD, or a type of a later version: skipped */
	}
	if (rc) {
		snprintf(t->error, sizeof(t->error), "offset %zu: a malformed record of type %u",
			 off, type);
		return 0;
	}
	return len;
}

int trace_file_read(const char *path, struct trace_file *t, char *err, size_t errlen)
{
	uint8_t *p;
	size_t len, off, cap = 0;

	memset(t, 0, sizeof(*t));
	if (slurp(path, &p, &len, err, errlen))
		return -1;
	if (len < TRACE_HEADER_LEN || memcmp(p, TRACE_MAGIC, 8)) {
		snprintf(err, errlen, "%s: not a targetd trace file", path);
		free(p);
		return -1;
	}
	memcpy(&t->hdr, p, sizeof(t->hdr));
	t->hdr.version = le16toh(t->hdr.version);
	t->hdr.header_len = le16toh(t->hdr.header_len);
	t->hdr.flags = le32toh(t->hdr.flags);
	t->hdr.start_real_ns = le64toh(t->hdr.start_real_ns);
	t->hdr.start_mono_ns = le64toh(t->hdr.start_mono_ns);
	t->hdr.max_bytes = le64toh(t->hdr.max_bytes);
	t->hdr.lun = le16toh(t->hdr.lun);
	if (t->hdr.version != TRACE_VERSION) {
		snprintf(err, errlen, "%s: trace format version %u; this program reads version %u",
			 path, t->hdr.version, TRACE_VERSION);
		free(p);
		return -1;
	}
	if (t->hdr.header_len < TRACE_HEADER_LEN || t->hdr.header_len % 8 || t->hdr.header_len > len) {
		snprintf(err, errlen, "%s: damaged header", path);
		free(p);
		return -1;
	}
	for (off = t->hdr.header_len; off < len;) {
		size_t n = one_record(t, &cap, p + off, len - off, off);

		if (!n)
			break;
		off += n;
	}
	free(p);
	return 0;
}

void trace_file_free(struct trace_file *t)
{
	free(t->nexus);
	free(t->cmds);
	memset(t, 0, sizeof(*t));
}

const struct trace_nexus_info *trace_file_nexus(const struct trace_file *t, uint64_t id)
{
	for (unsigned i = 0; i < t->n_nexus; i++)
		if (t->nexus[i].id == id)
			return &t->nexus[i];
	return NULL;
}
