/*
 * Workload histograms as JSON and as Prometheus histograms. See
 * targetd/histo_out.h; what is measured: scsi/histo.h.
 */
#include "config.h"
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "scsi/scsi.h"
#include "scsi/histo.h"
#include "targetd/histo_out.h"

/* Times are kept in ns and shown in us (JSON) or seconds (Prometheus). */
static bool kind_is_time(const struct scsi_histo_desc *d)
{
	return !strcmp(d->unit, "ns");
}

static struct json_object *class_json(const struct scsi_histo_snap *s, unsigned k, unsigned c)
{
	const struct scsi_histo_desc *d = scsi_histo_desc(k);
	struct json_object *o = json_object_new_object();
	struct json_object *b = json_object_new_array();

	for (unsigned i = 0; i < d->n_buckets; i++)
		json_object_array_add(b, json_object_new_uint64(s->b[k][c][i]));
	json_object_object_add(o, "buckets", b);
	json_object_object_add(o, "count", json_object_new_uint64(s->count[k][c]));
	if (kind_is_time(d))
		json_object_object_add(o, "sum", json_object_new_double((double)s->sum[k][c] / 1000.0));
	else
		json_object_object_add(o, "sum", json_object_new_int64(s->sum[k][c]));
	if (kind_is_time(d) && s->count[k][c]) {
		json_object_object_add(o, "p50", json_object_new_double(
			scsi_histo_quantile(s, k, c, 0.50) / 1000.0));
		json_object_object_add(o, "p99", json_object_new_double(
			scsi_histo_quantile(s, k, c, 0.99) / 1000.0));
	}
	return o;
}

struct json_object *histo_lun_json(const char *target, struct scsi_lun *lun, const char *initiator)
{
	struct scsi_histo_snap *s = malloc(sizeof(*s));
	struct json_object *o, *h, *inits;

	if (!s)
		return NULL;
	if (scsi_histo_snapshot(lun, initiator, s)) {
		free(s);
		return NULL;
	}
	o = json_object_new_object();
	json_object_object_add(o, "target", json_object_new_string(target));
	json_object_object_add(o, "lun", json_object_new_uint64(lun->id));
	json_object_object_add(o, "enabled", json_object_new_boolean(scsi_histo_enabled(lun)));
	json_object_object_add(o, "initiator", initiator ? json_object_new_string(initiator) : NULL);
	inits = json_object_new_array();
	for (unsigned k = 0; k < HISTO_MAX_INITIATORS; k++) {
		const char *iqn = scsi_histo_initiator(lun, k);

		if (iqn)
			json_object_array_add(inits, json_object_new_string(iqn));
	}
	json_object_object_add(o, "initiators", inits);
	h = json_object_new_object();
	for (unsigned k = 0; k < HISTO__KINDS; k++) {
		const struct scsi_histo_desc *d = scsi_histo_desc(k);
		struct json_object *one = json_object_new_object();
		struct json_object *edges = json_object_new_array();
		bool t = kind_is_time(d);

		json_object_object_add(one, "title", json_object_new_string(d->title));
		json_object_object_add(one, "unit", json_object_new_string(t ? "us" : d->unit));
		for (unsigned i = 0; i + 1 < d->n_buckets; i++)
			json_object_array_add(edges, json_object_new_int64(t ? d->edges[i] / 1000
									      : d->edges[i]));
		json_object_object_add(one, "edges", edges);
		for (unsigned c = 0; c < HISTO__CLASSES; c++)
			json_object_object_add(one, scsi_histo_class_name(c), class_json(s, k, c));
		json_object_object_add(h, d->name, one);
	}
	json_object_object_add(o, "histograms", h);
	free(s);
	return o;
}

/* ---- Prometheus --------------------------------------------------------- */

static const struct {
	const char *family;
	const char *help;
} prom[HISTO__KINDS] = {
	[HISTO_IO_LENGTH] = { "targetd_workload_io_length_bytes",
			      "Data transfer length the CDB asks for, per command." },
	[HISTO_SEEK] = { "targetd_workload_seek_distance_blocks",
			 "LBAs from the last block of the previous command of the class "
			 "to the first block of this one (1: sequential)." },
	[HISTO_SEEK_CLOSEST] = { "targetd_workload_seek_closest_blocks",
				 "Seek distance from the closest of the last 16 commands of the class." },
	[HISTO_OUTSTANDING] = { "targetd_workload_outstanding_commands",
				"Commands of the class in flight when one arrived, itself included." },
	[HISTO_INTERARRIVAL] = { "targetd_workload_interarrival_seconds",
				 "Time since the previous command of the class arrived." },
	[HISTO_LATENCY] = { "targetd_workload_latency_seconds",
			    "Command PDU received to its status sent." },
	[HISTO_LATENCY_BS] = { "targetd_workload_backstore_latency_seconds",
			       "The command's backstore request, submitted to completed." },
};

static void put_label(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

struct prom_set {
	const char *iqn;
	unsigned lun;
	const char *initiator;      /* "all" or an iSCSI name */
	struct scsi_histo_snap s;
};

static void labels(FILE *f, const struct prom_set *p, unsigned c)
{
	fputs("target=\"", f);
	put_label(f, p->iqn);
	fprintf(f, "\",lun=\"%u\",initiator=\"", p->lun);
	put_label(f, p->initiator);
	fprintf(f, "\",op=\"%s\"", scsi_histo_class_name(c));
}

static void prom_one(FILE *f, unsigned k, const struct prom_set *p)
{
	const struct scsi_histo_desc *d = scsi_histo_desc(k);
	double scale = kind_is_time(d) ? 1e9 : 1;

	for (unsigned c = 0; c < HISTO__CLASSES; c++) {
		uint64_t cum = 0;

		for (unsigned i = 0; i < d->n_buckets; i++) {
			cum += p->s.b[k][c][i];
			fprintf(f, "%s_bucket{", prom[k].family);
			labels(f, p, c);
			if (i + 1 == d->n_buckets)
				fprintf(f, ",le=\"+Inf\"} %llu\n", (unsigned long long)cum);
			else
				fprintf(f, ",le=\"%.9g\"} %llu\n", (double)d->edges[i] / scale,
					(unsigned long long)cum);
		}
		fprintf(f, "%s_sum{", prom[k].family);
		labels(f, p, c);
		fprintf(f, "} %.9g\n", (double)p->s.sum[k][c] / scale);
		fprintf(f, "%s_count{", prom[k].family);
		labels(f, p, c);
		fprintf(f, "} %llu\n", (unsigned long long)cum);
	}
}

/* The sets to render: every LUN's all-initiators set (unless off and
 * empty) and its initiator sets. */
static struct prom_set *prom_collect(const struct histo_lun_ref *l, unsigned n, unsigned *out_n)
{
	struct prom_set *v = NULL;
	unsigned cnt = 0, cap = 0;

	for (unsigned i = 0; i < n; i++) {
		for (int k = -1; k < HISTO_MAX_INITIATORS; k++) {
			const char *who = k < 0 ? NULL : scsi_histo_initiator(l[i].lun, (unsigned)k);
			struct prom_set *p;

			if (k >= 0 && !who)
				continue;
			if (cnt == cap) {
				struct prom_set *x = realloc(v, (cap ? cap * 2 : 4) * sizeof(*x));

				if (!x)
					goto out;
				v = x;
				cap = cap ? cap * 2 : 4;
			}
			p = &v[cnt];
			if (scsi_histo_snapshot(l[i].lun, who, &p->s))
				continue;
			if (k < 0 && !scsi_histo_enabled(l[i].lun) && !p->s.count[HISTO_IO_LENGTH][HISTO_ALL])
				continue;
			p->iqn = l[i].iqn;
			p->lun = l[i].lun->id;
			p->initiator = who ? who : "all";
			cnt++;
		}
	}
out:
	*out_n = cnt;
	return v;
}

void histo_prometheus(FILE *f, const struct histo_lun_ref *l, unsigned n)
{
	unsigned cnt;
	struct prom_set *v = prom_collect(l, n, &cnt);

	for (unsigned k = 0; k < HISTO__KINDS; k++) {
		fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", prom[k].family, prom[k].help,
			prom[k].family);
		for (unsigned i = 0; i < cnt; i++)
			prom_one(f, k, &v[i]);
	}
	free(v);
}
