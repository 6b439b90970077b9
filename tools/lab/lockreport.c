/*
 * vaai-lab locking: the report of the phases — a table on stdout (or the
 * JSON with --json) and, with --plot, the VM's IOPS over time with the
 * modes as phases and conflicts/s on a second axis, above a bar chart of
 * the modes.
 */
#include "config.h"
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include "tools/lab/locking.h"

static double per_s(uint64_t n, double s)
{
	return s > 0 ? (double)n / s : 0;
}

/* The rate in bucket i of a phase: the last bucket may be partial. */
static double bucket_len(const struct lock_phase *p, unsigned i)
{
	double len = p->seconds - (double)i;

	return len >= 1.0 ? 1.0 : len > 0.05 ? len : 0.05;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median over the rounds of a mode: VM IOPS (what = 0) or client
 * conflicts/s (what = 1); -1 when the mode did not run. */
static double mode_median(const struct lock_phase *ph, unsigned n, enum lock_mode mode, int what)
{
	double v[200];
	unsigned k = 0;

	for (unsigned i = 0; i < n && k < 200; i++)
		if (ph[i].mode == mode)
			v[k++] = what ? per_s(lock_phase_conflicts(&ph[i]), ph[i].seconds)
				      : per_s(ph[i].vm_ios, ph[i].seconds);
	if (!k)
		return -1;
	qsort(v, k, sizeof(v[0]), cmp_double);
	return k % 2 ? v[k / 2] : (v[k / 2 - 1] + v[k / 2]) / 2;
}

static const char *phase_name(const struct lab_opts *o, const struct lock_phase *p, char *buf, size_t n)
{
	if (o->rounds > 1)
		snprintf(buf, n, "%s #%u", lab_mode_names[p->mode], p->round);
	else
		snprintf(buf, n, "%s", lab_mode_names[p->mode]);
	return buf;
}

static void report_table(const struct lab_opts *o, const struct lock_phase *ph, unsigned n,
			 const char *workload)
{
	static const char *const head[] = { "mode", "VM IOPS", "VM MB/s", "p50 us", "p99 us", "max us",
					    "updates/s", "CONS/s", "td CONS/s", "MISC/s", "td MISC/s",
					    "lost", "CPU client/td" };
	static const char *const head2[] = { "mode", "conflicts", "targetd conflicts", "miscompares",
					     "targetd miscompares", "targetd ATS ok", "lock busy" };
	double none = mode_median(ph, n, LOCK_NONE, 0);
	struct lab_table t;
	char c[13][32];

	printf("locking: %s\n\n", workload);
	lab_table_init(&t, 13, head);
	for (unsigned i = 0; i < n; i++) {
		const struct lock_phase *p = &ph[i];
		bool td = p->c0.valid && p->c1.valid;

		lab_table_row(&t, phase_name(o, p, c[0], 32),
			      lab_fmt(c[1], 32, "%.0f", per_s(p->vm_ios, p->seconds)),
			      lab_fmt(c[2], 32, "%.2f", per_s(p->vm_bytes, p->seconds) / 1e6),
			      lab_fmt(c[3], 32, "%.0f", lab_hist_quantile_us(&p->vm_lat, 0.5)),
			      lab_fmt(c[4], 32, "%.0f", lab_hist_quantile_us(&p->vm_lat, 0.99)),
			      lab_fmt(c[5], 32, "%.0f", (double)p->vm_lat.max_ns / 1e3),
			      lab_fmt(c[6], 32, "%.0f", per_s(p->updates, p->seconds)),
			      lab_fmt(c[7], 32, "%.1f", per_s(lock_phase_conflicts(p), p->seconds)),
			      td ? lab_fmt(c[8], 32, "%.1f", per_s(p->c1.conflicts - p->c0.conflicts, p->seconds)) : "-",
			      lab_fmt(c[9], 32, "%.1f", per_s(p->miscompares, p->seconds)),
			      td ? lab_fmt(c[10], 32, "%.1f", per_s(p->c1.ats_miscompare - p->c0.ats_miscompare, p->seconds)) : "-",
			      lab_fmt(c[11], 32, "%" PRIu64, p->lost_updates),
			      p->target_cpu >= 0
				      ? lab_fmt(c[12], 32, "%.0f/%.0f %%", 100 * p->client_cpu / p->seconds,
						100 * p->target_cpu / p->seconds)
				      : lab_fmt(c[12], 32, "%.0f %%", 100 * p->client_cpu / p->seconds));
	}
	lab_table_print(&t);
	putchar('\n');
	lab_table_init(&t, 7, head2);
	for (unsigned i = 0; i < n; i++) {
		const struct lock_phase *p = &ph[i];
		bool td = p->c0.valid && p->c1.valid;

		lab_table_row(&t, phase_name(o, p, c[0], 32),
			      lab_fmt(c[1], 32, "%" PRIu64, lock_phase_conflicts(p)),
			      td ? lab_fmt(c[2], 32, "%" PRIu64, p->c1.conflicts - p->c0.conflicts) : "-",
			      lab_fmt(c[3], 32, "%" PRIu64, p->miscompares),
			      td ? lab_fmt(c[4], 32, "%" PRIu64, p->c1.ats_miscompare - p->c0.ats_miscompare) : "-",
			      td ? lab_fmt(c[5], 32, "%" PRIu64, p->c1.ats_ok - p->c0.ats_ok) : "-",
			      lab_fmt(c[6], 32, "%" PRIu64, p->lock_busy));
	}
	lab_table_print(&t);
	if (none > 0) {
		printf("\nVM IOPS against none%s:", o->rounds > 1 ? " (medians of the rounds)" : "");
		for (unsigned i = 0; i < o->n_modes; i++)
			if (o->modes[i] != LOCK_NONE)
				printf("  %s %.1f %%", lab_mode_names[o->modes[i]],
				       100.0 * mode_median(ph, n, o->modes[i], 0) / none);
		putchar('\n');
	}
	printf("\nCONS/s, MISC/s: RESERVATION CONFLICTs and ATS MISCOMPAREs per second as the "
	       "client saw them; td: as targetd counted them%s.\n",
	       o->control ? "" : " (give --control SOCKET)");
	printf("lost: metadata updates missing from the counters after the phase (no lock, "
	       "shared files).\n");
}

static struct json_object *phase_json(const struct lock_phase *p)
{
	struct json_object *m = json_object_new_object(), *x, *a;
	bool td = p->c0.valid && p->c1.valid;

	json_object_object_add(m, "mode", json_object_new_string(lab_mode_names[p->mode]));
	json_object_object_add(m, "round", json_object_new_int((int)p->round));
	json_object_object_add(m, "seconds", lab_json_double(p->seconds));
	json_object_object_add(m, "client_cpu_s", lab_json_double(p->client_cpu));
	json_object_object_add(m, "targetd_cpu_s", p->target_cpu >= 0 ? lab_json_double(p->target_cpu) : NULL);
	x = json_object_new_object();
	json_object_object_add(x, "ios", lab_json_u64(p->vm_ios));
	json_object_object_add(x, "iops", lab_json_double(per_s(p->vm_ios, p->seconds)));
	json_object_object_add(x, "mb_s", lab_json_double(per_s(p->vm_bytes, p->seconds) / 1e6));
	json_object_object_add(x, "latency", lab_hist_json(&p->vm_lat));
	json_object_object_add(x, "conflicts", lab_json_u64(p->vm_conflicts));
	json_object_object_add(x, "unit_attentions", lab_json_u64(p->vm_retries_ua));
	json_object_object_add(m, "vm", x);
	x = json_object_new_object();
	json_object_object_add(x, "updates", lab_json_u64(p->updates));
	json_object_object_add(x, "updates_per_s", lab_json_double(per_s(p->updates, p->seconds)));
	json_object_object_add(x, "latency", lab_hist_json(&p->upd_lat));
	json_object_object_add(x, "conflicts", lab_json_u64(p->host_conflicts));
	json_object_object_add(x, "miscompares", lab_json_u64(p->miscompares));
	json_object_object_add(x, "lock_busy", lab_json_u64(p->lock_busy));
	json_object_object_add(x, "lost_updates", lab_json_u64(p->lost_updates));
	json_object_object_add(m, "hosts", x);
	x = json_object_new_object();
	json_object_object_add(x, "conflicts", lab_json_u64(lock_phase_conflicts(p)));
	json_object_object_add(x, "conflicts_per_s", lab_json_double(per_s(lock_phase_conflicts(p), p->seconds)));
	json_object_object_add(x, "miscompares", lab_json_u64(p->miscompares));
	json_object_object_add(x, "miscompares_per_s", lab_json_double(per_s(p->miscompares, p->seconds)));
	json_object_object_add(m, "client", x);
	if (td) {
		x = json_object_new_object();
		json_object_object_add(x, "conflicts", lab_json_u64(p->c1.conflicts - p->c0.conflicts));
		json_object_object_add(x, "conflicts_per_s",
				       lab_json_double(per_s(p->c1.conflicts - p->c0.conflicts, p->seconds)));
		json_object_object_add(x, "miscompares", lab_json_u64(p->c1.ats_miscompare - p->c0.ats_miscompare));
		json_object_object_add(x, "miscompares_per_s",
				       lab_json_double(per_s(p->c1.ats_miscompare - p->c0.ats_miscompare, p->seconds)));
		json_object_object_add(x, "ats_success", lab_json_u64(p->c1.ats_ok - p->c0.ats_ok));
		json_object_object_add(m, "targetd", x);
	} else {
		json_object_object_add(m, "targetd", NULL);
	}
	a = json_object_new_array();
	for (unsigned i = 0; i < p->nsec; i++) {
		const struct lock_sample *s = &p->series[i];
		double len = bucket_len(p, i);

		x = json_object_new_object();
		json_object_object_add(x, "t", json_object_new_int((int)i));
		json_object_object_add(x, "vm_iops", lab_json_double((double)s->vm_ios / len));
		json_object_object_add(x, "conflicts_per_s", lab_json_double((double)s->conflicts / len));
		json_object_object_add(x, "miscompares_per_s", lab_json_double((double)s->miscompares / len));
		json_object_object_add(x, "updates_per_s", lab_json_double((double)s->updates / len));
		json_object_array_add(a, x);
	}
	json_object_object_add(m, "series", a);
	return m;
}

static void report_json(const struct lab_opts *o, const struct lock_phase *ph, unsigned n,
			const char *workload)
{
	struct json_object *r = json_object_new_object(), *a = json_object_new_array(), *v, *md;
	double none = mode_median(ph, n, LOCK_NONE, 0);

	json_object_object_add(r, "command", json_object_new_string("locking"));
	json_object_object_add(r, "url", json_object_new_string(o->url));
	json_object_object_add(r, "workload", json_object_new_string(workload));
	json_object_object_add(r, "hosts", json_object_new_int((int)o->hosts));
	json_object_object_add(r, "scenario", json_object_new_string(o->snapshots ? "snapshots" : "touch"));
	for (unsigned i = 0; i < n; i++)
		json_object_array_add(a, phase_json(&ph[i]));
	json_object_object_add(r, "modes", a);
	json_object_object_add(r, "rounds", json_object_new_int((int)o->rounds));
	v = json_object_new_object();
	md = json_object_new_object();
	for (unsigned i = 0; i < o->n_modes; i++) {
		struct json_object *e = json_object_new_object();
		double iops = mode_median(ph, n, o->modes[i], 0);

		json_object_object_add(e, "vm_iops", lab_json_double(iops));
		json_object_object_add(e, "conflicts_per_s", lab_json_double(mode_median(ph, n, o->modes[i], 1)));
		json_object_object_add(md, lab_mode_names[o->modes[i]], e);
		if (none > 0)
			json_object_object_add(v, lab_mode_names[o->modes[i]], lab_json_double(iops / none));
	}
	json_object_object_add(r, "median", md);
	json_object_object_add(r, "vm_iops_vs_none", v);
	lab_json_print(r);
}

/* The chart: data files for the time series and the modes, then gnuplot. */
static void report_plot(const struct lab_opts *o, const struct lock_phase *ph, unsigned n,
			const char *workload)
{
	struct lab_plot *p = lab_plot_new(o->plot);
	const char *series, *modes;
	FILE *fs = lab_plot_data(p, "series.dat", &series), *fm = lab_plot_data(p, "modes.dat", &modes);
	size_t cap = 16384, len = 0;
	char *sc = lab_xalloc(cap), q[600];
	double t = 0;
	bool misc = false;

#define SC(...) (len += (size_t)snprintf(sc + len, len < cap ? cap - len : 0, __VA_ARGS__))
	SC("set multiplot layout 2,1 title %s font ',12'\n", lab_plot_str(workload, q, sizeof(q)));
	SC("set title 'VM IOPS over time (seconds), the modes as phases; RESERVATION CONFLICTs on the right axis'\n"
	   "unset xlabel\nset ylabel 'VM IOPS'\nset y2label 'conflicts/s'\nset ytics nomirror\n"
	   "set y2tics\nset yrange [0:*]\nset y2range [0:*]\nset key below horizontal\n"
	   "set offsets 0, 0, graph 0.15, 0\n");
	for (unsigned i = 0; i < n; i++) {
		const struct lock_phase *ph_i = &ph[i];

		for (unsigned k = 0; k < ph_i->nsec; k++) {
			const struct lock_sample *s = &ph_i->series[k];
			double l = bucket_len(ph_i, k);

			fprintf(fs, "%.3f %.1f %.1f %.1f\n", t + k + l / 2, (double)s->vm_ios / l,
				(double)s->conflicts / l, (double)s->miscompares / l);
			misc |= s->miscompares > 0;
		}
		fputs("\n\n", fs);
		if (i)
			SC("set arrow from %.3f, graph 0 to %.3f, graph 1 nohead dt 2 lc rgb '#888888'\n", t, t);
		SC("set label %s at %.3f, graph 0.96\n",
		   lab_plot_str(lab_mode_names[ph_i->mode], q, sizeof(q)), t + 0.1);
		t += ph_i->seconds;
	}
	for (unsigned i = 0; i < o->n_modes; i++)
		fprintf(fm, "%s %.1f %.1f\n", lab_mode_names[o->modes[i]],
			mode_median(ph, n, o->modes[i], 0), mode_median(ph, n, o->modes[i], 1));
	SC("set xrange [0:%.3f]\n", t);
	SC("plot %s using 1:2 with lines lw 2 lc rgb '#1f77b4' title 'VM IOPS', "
	   "%s using 1:3 axes x1y2 with lines lw 1.5 lc rgb '#d62728' title 'conflicts/s'", series, series);
	if (misc)
		SC(", %s using 1:4 axes x1y2 with lines lw 1.5 lc rgb '#2ca02c' title 'miscompares/s'", series);
	SC("\nunset arrow\nunset label\nset title 'per mode%s: VM IOPS and conflicts/s'\n"
	   "set style fill solid 0.85 border -1\nset boxwidth 0.36 absolute\nset xrange [-0.6:%.1f]\nset xtics (",
	   o->rounds > 1 ? " (medians of the rounds)" : "", o->n_modes - 0.4);
	for (unsigned i = 0; i < o->n_modes; i++)
		SC("%s%s %u", i ? ", " : "", lab_plot_str(lab_mode_names[o->modes[i]], q, sizeof(q)), i);
	SC(")\nset yrange [0:*]\nset y2range [0:*]\n"
	   "plot %s using ($0-0.19):2 with boxes lc rgb '#1f77b4' title 'VM IOPS', "
	   "%s using ($0-0.19):2:(sprintf('%%.0f', $2)) with labels offset 0,0.7 notitle, "
	   "%s using ($0+0.19):3 axes x1y2 with boxes lc rgb '#d62728' title 'conflicts/s', "
	   "%s using ($0+0.19):3:(sprintf('%%.0f', $3)) axes x1y2 with labels offset 0,0.7 notitle\n"
	   "unset multiplot\n", modes, modes, modes, modes);
#undef SC
	if (len >= cap)
		lab_die("internal error: chart script too long");
	lab_plot_run(p, 1000, 760, sc);
	free(sc);
}

void lock_report(const struct lab_opts *o, const struct lock_phase *ph, unsigned n,
		 const char *workload)
{
	if (o->json)
		report_json(o, ph, n, workload);
	else
		report_table(o, ph, n, workload);
	if (o->plot)
		report_plot(o, ph, n, workload);
}
