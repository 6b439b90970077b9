/*
 * Charts: vaai-lab writes the figures as data files into a private
 * directory, then runs gnuplot (Debian package gnuplot-nox) on a script
 * that sets the terminal from the output's extension (.png: pngcairo,
 * .svg: svg) and draws. The directory is removed afterwards.
 */
#include "config.h"
#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tools/lab/lab.h"

extern char **environ;

#define PLOT_MAX_FILES 16

struct lab_plot {
	char out[4096];
	char dir[4096];
	bool svg;
	unsigned n;
	char names[PLOT_MAX_FILES][4160];
	char quoted[PLOT_MAX_FILES][8400];
	FILE *files[PLOT_MAX_FILES];
};

const char *lab_plot_str(const char *s, char *buf, size_t n)
{
	size_t o = 0;

	if (n < 3)
		lab_die("internal error: plot string buffer");
	buf[o++] = '\'';
	for (; *s && o + 3 < n; s++) {
		if (*s == '\n' || *s == '\r')
			continue;
		if (*s == '\'')
			buf[o++] = '\'';     /* gnuplot: '' inside '...' is a quote */
		buf[o++] = *s;
	}
	buf[o++] = '\'';
	buf[o] = 0;
	return buf;
}

struct lab_plot *lab_plot_new(const char *out)
{
	struct lab_plot *p = lab_xalloc(sizeof(*p));
	const char *dot = strrchr(out, '.');
	const char *tmp = getenv("TMPDIR");

	if (!dot || (strcmp(dot, ".png") && strcmp(dot, ".svg")))
		lab_die("--plot %s: the file name must end in .png or .svg", out);
	p->svg = !strcmp(dot, ".svg");
	if (strlen(out) >= sizeof(p->out))
		lab_die("--plot: the file name is too long");
	strcpy(p->out, out);
	snprintf(p->dir, sizeof(p->dir), "%s/vaai-lab-plot.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(p->dir))
		lab_die("--plot: cannot create a temporary directory %s: %s", p->dir, strerror(errno));
	return p;
}

void *lab_plot_data(struct lab_plot *p, const char *name, const char **path)
{
	unsigned i = p->n;

	if (i == PLOT_MAX_FILES)
		lab_die("internal error: too many plot data files");
	snprintf(p->names[i], sizeof(p->names[i]), "%s/%s", p->dir, name);
	p->files[i] = fopen(p->names[i], "w");
	if (!p->files[i])
		lab_die("--plot: cannot write %s: %s", p->names[i], strerror(errno));
	lab_plot_str(p->names[i], p->quoted[i], sizeof(p->quoted[i]));
	*path = p->quoted[i];
	p->n++;
	return p->files[i];
}

static void plot_cleanup(struct lab_plot *p, const char *script)
{
	for (unsigned i = 0; i < p->n; i++)
		unlink(p->names[i]);
	if (script)
		unlink(script);
	rmdir(p->dir);
	free(p);
}

void lab_plot_run(struct lab_plot *p, unsigned width, unsigned height, const char *script)
{
	char spath[4200], out_q[8400];
	char *argv[] = { "gnuplot", spath, NULL };
	FILE *f;
	pid_t pid;
	int st, e;

	for (unsigned i = 0; i < p->n; i++)
		if (fclose(p->files[i]))
			lab_die("--plot: writing %s: %s", p->names[i], strerror(errno));
	snprintf(spath, sizeof(spath), "%s/chart.gp", p->dir);
	f = fopen(spath, "w");
	if (!f)
		lab_die("--plot: cannot write %s: %s", spath, strerror(errno));
	if (p->svg)
		fprintf(f, "set terminal svg size %u,%u dynamic enhanced font 'sans,11' background rgb 'white'\n",
			width, height);
	else
		fprintf(f, "set terminal pngcairo size %u,%u enhanced font 'sans,10'\n", width, height);
	fprintf(f, "set output %s\n", lab_plot_str(p->out, out_q, sizeof(out_q)));
	fputs("set encoding utf8\nset grid ytics lc rgb '#dddddd'\nset border 3\nset tics nomirror\n", f);
	fputs(script, f);
	fputs("\nset output\n", f);
	if (fclose(f))
		lab_die("--plot: writing %s: %s", spath, strerror(errno));
	fflush(stdout);
	e = posix_spawnp(&pid, "gnuplot", NULL, NULL, argv, environ);
	if (e) {
		plot_cleanup(p, spath);
		lab_die("--plot: cannot run gnuplot: %s (install the Debian package gnuplot-nox)",
			strerror(e));
	}
	while (waitpid(pid, &st, 0) < 0) {
		if (errno != EINTR)
			lab_die("--plot: waitpid: %s", strerror(errno));
	}
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		lab_note("--plot: gnuplot failed (its messages are above); the script was %s", spath);
		lab_die("--plot: no chart written to %s", p->out);
	}
	lab_note("chart written to %s", p->out);
	plot_cleanup(p, spath);
}

/* Bars: one panel per quantity (side by side), one bar per item. A
 * negative value is "not measured" and drawn as no bar. */
void lab_plot_bars(const char *out, const char *title, const char *const *items, unsigned n_items,
		   const struct lab_plot_panel *panels, unsigned n_panels)
{
	static const char *const colours[] = { "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd" };
	struct lab_plot *p = lab_plot_new(out);
	size_t cap = 16384, len = 0;
	char *sc = lab_xalloc(cap), q[600];

#define SC(...) (len += (size_t)snprintf(sc + len, len < cap ? cap - len : 0, __VA_ARGS__))
	SC("set multiplot layout 1,%u title %s font ',12'\n", n_panels, lab_plot_str(title, q, sizeof(q)));
	SC("set style fill solid 0.85 border -1\nset boxwidth 0.6 absolute\nset yrange [0:*]\n"
	   "set xrange [-0.6:%.1f]\nset xtics rotate by -20 (", n_items - 0.4);
	for (unsigned i = 0; i < n_items; i++)
		SC("%s%s %u", i ? ", " : "", lab_plot_str(items[i], q, sizeof(q)), i);
	SC(")\nunset key\n");
	for (unsigned k = 0; k < n_panels; k++) {
		char name[32];
		const char *path;
		FILE *f;

		snprintf(name, sizeof(name), "panel%u.dat", k);
		f = lab_plot_data(p, name, &path);
		for (unsigned i = 0; i < n_items; i++) {
			if (panels[k].values[i] < 0)
				fprintf(f, "%u NaN\n", i);
			else
				fprintf(f, "%u %.6g\n", i, panels[k].values[i]);
		}
		SC("set title %s\n", lab_plot_str(panels[k].title, q, sizeof(q)));
		SC("plot %s using 1:2 with boxes lc rgb '%s', "
		   "%s using 1:2:(sprintf('%%.3g', $2)) with labels offset 0,0.7\n",
		   path, colours[k % 5], path);
	}
	SC("unset multiplot\n");
#undef SC
	if (len >= cap)
		lab_die("internal error: chart script too long");
	lab_plot_run(p, 330 * n_panels + 100, 480, sc);
	free(sc);
}
