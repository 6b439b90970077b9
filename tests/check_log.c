/* Logging: key=value events, quoting of peer-chosen values, the journal
 * fields, the sink; the pid file. */
#include "config.h"
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "common/log.h"
#include "targetd/daemon.h"
#include "tests/check_suites.h"

static char last_line[4096], last_event[64];
static size_t last_n;

static int capture(int level, const char *line, const char *event, const struct log_kv *kv,
		   size_t n)
{
	(void)level;
	(void)kv;
	snprintf(last_line, sizeof(last_line), "%s", line);
	snprintf(last_event, sizeof(last_event), "%s", event ? event : "");
	last_n = n;
	return 0;
}

START_TEST(test_event_line)
{
	log_set_sink(capture);
	log_event(LOG_LVL_INFO, "login", KV_S("initiator", "iqn.1994-05.com.redhat:h1"),
		  KV_U("tsih", 3), KV_X("status", 0x201), KV_S("target", NULL));
	ck_assert_str_eq(last_line, "login initiator=iqn.1994-05.com.redhat:h1 tsih=3 status=0x201 target=-");
	ck_assert_str_eq(last_event, "login");
	ck_assert_uint_eq(last_n, 4);
	/* a value cannot forge a field or a line */
	log_event(LOG_LVL_INFO, "x", KV_S("reason", "a b=c \"d\"\nfake=1\\"), KV_S("e", ""));
	ck_assert_str_eq(last_line, "x reason=\"a b=c \\\"d\\\"\\nfake=1\\\\\" e=\"\"");
	log_info("plain %d", 5);
	ck_assert_str_eq(last_line, "plain 5");
	ck_assert_str_eq(last_event, "");
	/* below the level: nothing */
	last_line[0] = 0;
	log_event(LOG_LVL_DEBUG, "quiet", KV_U("n", 1));
	ck_assert_str_eq(last_line, "");
	log_set_sink(NULL);
}
END_TEST

START_TEST(test_journal_fields)
{
	struct iovec iov[16];
	char buf[2048];
	const struct log_kv kv[] = { KV_S("initiator", "iqn.x:y"), KV_U("max_burst", 262144),
				     KV_S("reason", "two\nlines") };
	size_t n = daemon_journal_fields(6, "login initiator=iqn.x:y", "login", kv, 3, iov, 16, buf,
					 sizeof(buf));
	const char *want[] = { "MESSAGE=login initiator=iqn.x:y", "PRIORITY=6",
			       "SYSLOG_IDENTIFIER=targetd", "TARGETD_EVENT=login",
			       "TARGETD_INITIATOR=iqn.x:y", "TARGETD_MAX_BURST=262144",
			       "TARGETD_REASON=two?lines" };

	ck_assert_uint_eq(n, 7);
	for (size_t i = 0; i < n; i++) {
		ck_assert_uint_eq(iov[i].iov_len, strlen(want[i]));
		ck_assert(!memcmp(iov[i].iov_base, want[i], iov[i].iov_len));
	}
	/* a plain message has no TARGETD_ fields */
	ck_assert_uint_eq(daemon_journal_fields(4, "hello", NULL, NULL, 0, iov, 16, buf, sizeof(buf)), 3);
}
END_TEST

START_TEST(test_pidfile)
{
	char dir[] = "/tmp/check_log.XXXXXX", path[128], text[64];
	FILE *f;
	int fd;

	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/other", dir);
	/* something that is not a pid file is never overwritten */
	f = fopen(path, "w");
	fputs("important data\n", f);
	fclose(f);
	ck_assert_int_eq(daemon_pidfile_create(path), -1);
	f = fopen(path, "r");
	ck_assert_ptr_nonnull(fgets(text, sizeof(text), f));
	fclose(f);
	ck_assert_str_eq(text, "important data\n");
	unlink(path);

	snprintf(path, sizeof(path), "%s/targetd.pid", dir);
	ck_assert_int_eq(daemon_pidfile_create(path), 0);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_gt(read(fd, text, sizeof(text) - 1), 0);
	close(fd);
	ck_assert_int_eq(atol(text), (long)getpid());
	daemon_pidfile_remove();
	ck_assert_int_eq(access(path, F_OK), -1);
	rmdir(dir);
}
END_TEST

Suite *log_suite(void)
{
	Suite *s = suite_create("log");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, test_event_line);
	tcase_add_test(tc, test_journal_fields);
	tcase_add_test(tc, test_pidfile);
	suite_add_tcase(s, tc);
	return s;
}
