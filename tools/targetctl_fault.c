/*
 * targetctl fault: arm, list and clear fault-injection rules of a running
 * targetd (targetd-faults(7)) through the control methods fault.add,
 * fault.list, fault.stats and fault.clear. Entries of targetctl's command
 * table (targetctl.c):
 *
 *   targetctl fault add TARGET [LUN] KEY=VALUE...
 *   targetctl fault list [TARGET [LUN]]
 *   targetctl fault stats [TARGET [LUN]]
 *   targetctl fault clear [TARGET [LUN]] [ID | name=NAME | all]
 *
 * The daemon checks every KEY=VALUE (the same vocabulary as the
 * configuration's `faults`); targetctl only splits the words. -j prints
 * the daemon's JSON, as for every command.
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <json-c/json.h>
#include <libsmartcols.h>
#include "tools/targetctl.h"

/* A word that is a LUN number (not KEY=VALUE, not a rule id keyword). */
static bool is_lun(const char *s, int *lun)
{
	char *end;
	long v;

	if (!*s || strchr(s, '='))
		return false;
	errno = 0;
	v = strtol(s, &end, 10);
	if (*end || errno || v < 0 || v > 255)
		return false;
	*lun = (int)v;
	return true;
}

/* Take TARGET and LUN off the front of argv[1..]: the scope's params (a
 * new object), *first = the index of the first word after them. With
 * need_target the first word is always the target; without, a word with
 * '=' or a number (a rule id) is not one. */
static struct json_object *scope(int argc, char **argv, bool need_target, int *first)
{
	struct json_object *p = json_object_new_object();
	int i = 1, lun;

	if (i < argc && (need_target || (!strchr(argv[i], '=') && !is_lun(argv[i], &lun) &&
					 strcmp(argv[i], "all")))) {
		json_object_object_add(p, "target", json_object_new_string(argv[i++]));
		if (i < argc && is_lun(argv[i], &lun)) {
			json_object_object_add(p, "lun", json_object_new_int(lun));
			i++;
		}
	}
	*first = i;
	return p;
}

static int no_options(int argc, char **argv, const char *usage)
{
	for (int i = 1; i < argc; i++)
		if (argv[i][0] == '-' && argv[i][1])
			return tc_usage_error("%s: unknown option %s", usage, argv[i]);
	return 0;
}

/* "0,1,2", or "-" for a connection rule. */
static const char *luns_text(struct json_object *l, char *buf, size_t len)
{
	size_t off = 0;

	if (!l)
		return "-";
	buf[0] = 0;
	for (size_t k = 0; k < json_object_array_length(l) && off + 8 < len; k++)
		off += (size_t)snprintf(buf + off, len - off, "%s%d", k ? "," : "",
					json_object_get_int(json_object_array_get_idx(l, k)));
	return buf;
}

static void show_added(struct json_object *r)
{
	char luns[1024];

	printf("rule %llu (%s) armed on %s", (unsigned long long)tc_getu(r, "id"), tc_gets(r, "name"),
	       tc_gets(r, "target"));
	if (tc_get(r, "luns"))
		printf(" LUN %s", luns_text(tc_get(r, "luns"), luns, sizeof(luns)));
	printf(": %s\n", tc_gets(r, "rule"));
}

int tc_fault_add(int argc, char **argv)
{
	static const char usage[] = "fault add TARGET [LUN] KEY=VALUE... (targetd-faults(7))";
	struct json_object *p, *rule;
	int i, rc;

	if ((rc = no_options(argc, argv, usage)))
		return rc;
	if (argc < 3)
		return tc_usage_error("usage: targetctl %s", usage);
	p = scope(argc, argv, true, &i);
	if (i >= argc) {
		json_object_put(p);
		return tc_usage_error("fault add: no KEY=VALUE (an action or a scenario at least); "
				      "usage: targetctl %s", usage);
	}
	rule = json_object_new_object();
	json_object_object_add(p, "rule", rule);
	for (; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq || eq == argv[i]) {
			json_object_put(p);
			return tc_usage_error("fault add: '%s' is not KEY=VALUE", argv[i]);
		}
		*eq = 0;
		if (json_object_object_get_ex(rule, argv[i], NULL)) {
			json_object_put(p);
			return tc_usage_error("fault add: %s given twice", argv[i]);
		}
		json_object_object_add(rule, argv[i], json_object_new_string(eq + 1));
	}
	return tc_show("fault.add", p, show_added);
}

/* The rules as a table; with_text: the rule's KEY=VALUE words. */
static void rules_table(struct json_object *arr, bool with_text)
{
	static const struct tc_col cols[] = {
		{ "ID", 0, SCOLS_FL_RIGHT },   { "NAME", 0, 0 },
		{ "TARGET", 0, 0 },            { "LUNS", 0, 0 },
		{ "KIND", 0, 0 },              { "MATCHED", 0, SCOLS_FL_RIGHT },
		{ "INJECTED", 0, SCOLS_FL_RIGHT }, { "RULE", 0.4, SCOLS_FL_WRAP },
	};
	struct libscols_table *tb;

	if (!arr || !json_object_array_length(arr)) {
		printf("no fault rules armed\n");
		return;
	}
	tb = tc_table(cols, with_text ? 8 : 7);
	for (size_t i = 0; i < json_object_array_length(arr); i++) {
		struct json_object *r = json_object_array_get_idx(arr, i);
		struct libscols_line *ln = tc_row(tb);
		char luns[1024];

		tc_cellf(ln, 0, "%llu", (unsigned long long)tc_getu(r, "id"));
		tc_cell(ln, 1, tc_gets(r, "name"));
		tc_cell(ln, 2, tc_get(r, "target") ? tc_gets(r, "target") : "any");
		tc_cell(ln, 3, luns_text(tc_get(r, "luns"), luns, sizeof(luns)));
		tc_cell(ln, 4, tc_gets(r, "kind"));
		tc_cellf(ln, 5, "%llu", (unsigned long long)tc_getu(r, "matched"));
		tc_cellf(ln, 6, "%llu", (unsigned long long)tc_getu(r, "injected"));
		if (with_text)
			tc_cell(ln, 7, tc_gets(r, "rule"));
	}
	tc_print_table(tb);
}

static void show_list(struct json_object *r)
{
	rules_table(r, true);
}

static void show_stats(struct json_object *r)
{
	static const struct tc_col cols[] = {
		{ "TARGET", 0, 0 }, { "LUN", 0, SCOLS_FL_RIGHT }, { "FAULTS", 0, SCOLS_FL_RIGHT },
	};
	struct json_object *luns = tc_get(r, "luns");
	struct libscols_table *tb;

	rules_table(tc_get(r, "rules"), false);
	printf("commands held now: %llu\n", (unsigned long long)tc_getu(r, "held"));
	if (!luns || !json_object_array_length(luns))
		return;
	tb = tc_table(cols, sizeof(cols) / sizeof(cols[0]));
	for (size_t i = 0; i < json_object_array_length(luns); i++) {
		struct json_object *l = json_object_array_get_idx(luns, i);
		struct libscols_line *ln = tc_row(tb);

		tc_cell(ln, 0, tc_gets(l, "target"));
		tc_cellf(ln, 1, "%llu", (unsigned long long)tc_getu(l, "lun"));
		tc_cellf(ln, 2, "%llu", (unsigned long long)tc_getu(l, "faults_injected"));
	}
	tc_print_table(tb);
}

static int list_or_stats(int argc, char **argv, const char *method, const char *usage,
			 void (*human)(struct json_object *))
{
	struct json_object *p;
	int i, rc;

	if ((rc = no_options(argc, argv, usage)))
		return rc;
	p = scope(argc, argv, false, &i);
	if (i < argc) {
		json_object_put(p);
		return tc_usage_error("usage: targetctl %s", usage);
	}
	return tc_show(method, p, human);
}

int tc_fault_list(int argc, char **argv)
{
	return list_or_stats(argc, argv, "fault.list", "fault list [TARGET [LUN]]", show_list);
}

int tc_fault_stats(int argc, char **argv)
{
	return list_or_stats(argc, argv, "fault.stats", "fault stats [TARGET [LUN]]", show_stats);
}

static void show_cleared(struct json_object *r)
{
	printf("%llu rule(s) cleared\n", (unsigned long long)tc_getu(r, "cleared"));
}

int tc_fault_clear(int argc, char **argv)
{
	static const char usage[] = "fault clear [TARGET [LUN]] [ID | name=NAME | all]";
	struct json_object *p;
	int i, rc;

	if ((rc = no_options(argc, argv, usage)))
		return rc;
	p = scope(argc, argv, false, &i);
	for (; i < argc; i++) {
		const char *w = argv[i];
		char *end;
		long id;

		if (!strncmp(w, "name=", 5) && w[5]) {
			json_object_object_add(p, "name", json_object_new_string(w + 5));
			continue;
		}
		if (!strcmp(w, "all"))
			continue;
		if (!strncmp(w, "id=", 3))
			w += 3;
		errno = 0;
		id = strtol(w, &end, 10);
		if (!*w || *end || errno || id <= 0 || id > 0x7fffffff) {
			json_object_put(p);
			return tc_usage_error("fault clear: '%s' is not a rule id (targetctl fault list), "
					      "name=NAME or all", argv[i]);
		}
		json_object_object_add(p, "id", json_object_new_int((int)id));
	}
	return tc_show("fault.clear", p, show_cleared);
}
