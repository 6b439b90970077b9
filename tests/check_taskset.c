/* Check suite for SAM task sets and task attributes (scsi/taskset.c):
 * table-driven scripts of tasks entering and leaving one task set, with
 * the tasks enabled after each step and those each leave woke up. */
#include "config.h"
#include <string.h>
#include "scsi/taskset.h"
#include "tests/check_suites.h"

#define S SCSI_TASK_SIMPLE
#define O SCSI_TASK_ORDERED
#define H SCSI_TASK_HEAD_OF_QUEUE
#define U SCSI_TASK_UNTAGGED

/* One step: task `id` (a letter) enters with attr, or leaves (attr -1).
 * After it, `enabled` lists every task in the set that is enabled (in
 * letter order) and `woke` the tasks the leave enabled, oldest first. */
struct ts_step {
	char id;
	int attr;
	const char *enabled;
	const char *woke;
};

#define LEAVE -1
#define MAX_STEPS 12

static const struct {
	const char *name;
	struct ts_step steps[MAX_STEPS];
} ts_cases[] = {
	{ "SIMPLE tasks overlap", {
		{ 'a', S, "a", "" }, { 'b', S, "ab", "" }, { 'c', U, "abc", "" },
		{ 'b', LEAVE, "ac", "" }, { 'a', LEAVE, "c", "" }, { 'c', LEAVE, "", "" } } },
	{ "ORDERED waits for every older task, in any order of ending", {
		{ 'a', S, "a", "" }, { 'b', S, "ab", "" }, { 'c', O, "ab", "" },
		{ 'b', LEAVE, "a", "" }, { 'a', LEAVE, "c", "c" }, { 'c', LEAVE, "", "" } } },
	{ "ORDERED into an empty set runs at once", {
		{ 'a', O, "a", "" }, { 'a', LEAVE, "", "" } } },
	{ "SIMPLE waits for an older ORDERED, then all run together", {
		{ 'a', O, "a", "" }, { 'b', S, "a", "" }, { 'c', S, "a", "" },
		{ 'a', LEAVE, "bc", "bc" }, { 'c', LEAVE, "b", "" }, { 'b', LEAVE, "", "" } } },
	{ "ORDERED after ORDERED: one at a time", {
		{ 'a', O, "a", "" }, { 'b', O, "a", "" }, { 'c', S, "a", "" }, { 'd', O, "a", "" },
		{ 'a', LEAVE, "b", "b" }, { 'b', LEAVE, "c", "c" }, { 'c', LEAVE, "d", "d" },
		{ 'd', LEAVE, "", "" } } },
	{ "HEAD OF QUEUE passes dormant tasks", {
		{ 'a', S, "a", "" }, { 'b', O, "a", "" }, { 'c', S, "a", "" }, { 'd', H, "ad", "" },
		{ 'd', LEAVE, "a", "" }, { 'a', LEAVE, "b", "b" }, { 'b', LEAVE, "c", "c" },
		{ 'c', LEAVE, "", "" } } },
	{ "SIMPLE waits for an older HEAD OF QUEUE, not a younger one", {
		{ 'a', H, "a", "" }, { 'b', S, "a", "" }, { 'c', H, "ac", "" },
		{ 'a', LEAVE, "bc", "b" }, { 'c', LEAVE, "b", "" }, { 'b', LEAVE, "", "" } } },
	{ "ORDERED is not held by a younger HEAD OF QUEUE", {
		{ 'a', S, "a", "" }, { 'b', O, "a", "" }, { 'c', H, "ac", "" },
		{ 'a', LEAVE, "bc", "b" }, { 'b', LEAVE, "c", "" }, { 'c', LEAVE, "", "" } } },
	{ "a dormant task that leaves (aborted) lets younger ones run", {
		{ 'a', S, "a", "" }, { 'b', O, "a", "" }, { 'c', S, "a", "" }, { 'd', S, "a", "" },
		{ 'b', LEAVE, "acd", "cd" }, { 'a', LEAVE, "cd", "" }, { 'c', LEAVE, "d", "" },
		{ 'd', LEAVE, "", "" } } },
	{ "reserved attribute codes run as SIMPLE", {
		{ 'a', 5, "a", "" }, { 'b', 7, "ab", "" }, { 'c', O, "ab", "" }, { 'd', 6, "ab", "" },
		{ 'a', LEAVE, "b", "" }, { 'b', LEAVE, "c", "c" }, { 'c', LEAVE, "d", "d" },
		{ 'd', LEAVE, "", "" } } },
};

static struct scsi_task_entry ents[26];
static char woke[27];

static void on_enable(struct scsi_task_entry *e, void *arg)
{
	size_t n = strlen(woke);

	ck_assert_ptr_eq(arg, (void *)ents);
	woke[n] = (char)('a' + (e - ents));
	woke[n + 1] = 0;
}

static void enabled_now(struct scsi_taskset *ts, char *out)
{
	struct list_head *pos;
	char seen[27] = { 0 };
	size_t n = 0;

	list_for_each(pos, &ts->tasks) {
		struct scsi_task_entry *e = list_entry(pos, struct scsi_task_entry, link);
		if (e->enabled)
			seen[e - ents] = 1;
	}
	for (int i = 0; i < 26; i++)
		if (seen[i])
			out[n++] = (char)('a' + i);
	out[n] = 0;
}

START_TEST(test_taskset_script)
{
	struct scsi_taskset ts;
	unsigned in_set = 0;

	memset(ents, 0, sizeof(ents));
	scsi_taskset_init(&ts);
	for (unsigned k = 0; k < MAX_STEPS && ts_cases[_i].steps[k].id; k++) {
		const struct ts_step *st = &ts_cases[_i].steps[k];
		struct scsi_task_entry *e = &ents[st->id - 'a'];
		char en[27];

		woke[0] = 0;
		if (st->attr == LEAVE) {
			ck_assert(scsi_task_in_set(e));
			scsi_taskset_leave(e, on_enable, ents);
			ck_assert(!scsi_task_in_set(e));
			in_set--;
		} else {
			bool now = scsi_taskset_enter(&ts, e, (uint8_t)st->attr);
			ck_assert_int_eq(now, e->enabled);
			in_set++;
		}
		enabled_now(&ts, en);
		ck_assert_msg(!strcmp(en, st->enabled), "%s, step %u (%c): enabled \"%s\", want \"%s\"",
			      ts_cases[_i].name, k, st->id, en, st->enabled);
		ck_assert_msg(!strcmp(woke, st->woke), "%s, step %u (%c): woke \"%s\", want \"%s\"",
			      ts_cases[_i].name, k, st->id, woke, st->woke);
		ck_assert_uint_eq(ts.n_tasks, in_set);
	}
	ck_assert(list_empty(&ts.tasks));
	ck_assert_uint_eq(ts.n_blocking, 0);
	ck_assert_uint_eq(ts.n_dormant, 0);
}
END_TEST

START_TEST(test_taskset_attr_check)
{
	ck_assert_int_eq(scsi_task_attr_check(SCSI_TASK_UNTAGGED), SR_OK);
	ck_assert_int_eq(scsi_task_attr_check(SCSI_TASK_SIMPLE), SR_OK);
	ck_assert_int_eq(scsi_task_attr_check(SCSI_TASK_ORDERED), SR_OK);
	ck_assert_int_eq(scsi_task_attr_check(SCSI_TASK_HEAD_OF_QUEUE), SR_OK);
	ck_assert_int_eq(scsi_task_attr_check(SCSI_TASK_ACA), SR_INVALID_MESSAGE);
	for (uint8_t a = 5; a < 8; a++)
		ck_assert_int_eq(scsi_task_attr_check(a), SR_OK);
}
END_TEST

static unsigned n_woke;
static void count_enable(struct scsi_task_entry *e, void *arg)
{
	(void)e;
	(void)arg;
	n_woke++;
}

/* Leaving twice, or without having entered, changes nothing. */
START_TEST(test_taskset_leave_not_in_set)
{
	struct scsi_taskset ts;
	struct scsi_task_entry a = { 0 }, b = { 0 };

	scsi_taskset_init(&ts);
	n_woke = 0;
	scsi_taskset_leave(&a, count_enable, NULL);
	ck_assert_uint_eq(ts.n_tasks, 0);
	ck_assert(scsi_taskset_enter(&ts, &a, SCSI_TASK_ORDERED));
	ck_assert(!scsi_taskset_enter(&ts, &b, SCSI_TASK_SIMPLE));
	scsi_taskset_leave(&a, count_enable, NULL);
	ck_assert(b.enabled);
	ck_assert_uint_eq(n_woke, 1);
	scsi_taskset_leave(&a, count_enable, NULL);
	ck_assert_uint_eq(ts.n_tasks, 1);
	scsi_taskset_leave(&b, count_enable, NULL);
	ck_assert_uint_eq(ts.n_tasks, 0);
	ck_assert_uint_eq(n_woke, 1);
}
END_TEST

/* Many SIMPLE tasks and one ORDERED: the ORDERED one runs exactly when the
 * last older one leaves, and the SIMPLE ones after it only then, all at
 * once. */
START_TEST(test_taskset_many)
{
	static struct scsi_task_entry e[200];
	struct scsi_taskset ts;

	memset(e, 0, sizeof(e));
	scsi_taskset_init(&ts);
	n_woke = 0;
	for (int i = 0; i < 100; i++)
		ck_assert(scsi_taskset_enter(&ts, &e[i], SCSI_TASK_SIMPLE));
	ck_assert(!scsi_taskset_enter(&ts, &e[100], SCSI_TASK_ORDERED));
	for (int i = 101; i < 200; i++)
		ck_assert(!scsi_taskset_enter(&ts, &e[i], SCSI_TASK_SIMPLE));
	for (int i = 99; i >= 0; i--) {
		ck_assert(!e[100].enabled);
		scsi_taskset_leave(&e[i], count_enable, NULL);
	}
	ck_assert(e[100].enabled);
	ck_assert_uint_eq(n_woke, 1);
	for (int i = 101; i < 200; i++)
		ck_assert(!e[i].enabled);
	ck_assert_uint_eq(ts.n_dormant, 99);
	scsi_taskset_leave(&e[100], count_enable, NULL);
	ck_assert_uint_eq(n_woke, 100);
	ck_assert_uint_eq(ts.n_dormant, 0);
	for (int i = 101; i < 200; i++)
		ck_assert(e[i].enabled);
}
END_TEST

Suite *taskset_suite(void)
{
	Suite *s = suite_create("taskset");
	TCase *tc = tcase_create("taskset");

	tcase_add_loop_test(tc, test_taskset_script, 0, (int)ARRAY_SIZE(ts_cases));
	tcase_add_test(tc, test_taskset_attr_check);
	tcase_add_test(tc, test_taskset_leave_not_in_set);
	tcase_add_test(tc, test_taskset_many);
	suite_add_tcase(s, tc);
	return s;
}
