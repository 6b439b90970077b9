/*
 * conf/ unit tests: the configuration file, its defaults and every error it
 * reports. Error cases are a table of config texts with the exact
 * "FILE:LINE: key: message" beginnings they must produce, in order. "@D@"
 * in a text or an expected message stands for a temporary directory that
 * the fixture fills with files of known kinds and removes afterwards.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include "conf/config.h"
#include "common/util.h"
#include "tests/check_suites.h"

#define EXAMPLE_CONF TEST_SRCDIR "/../conf/targetd.conf.example"

static char tmpdir[64];

/* ---- fixture --------------------------------------------------------- */

static void make_file(const char *name, size_t size, mode_t mode)
{
	char path[256];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	fd = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0644);
	ck_assert_msg(fd >= 0, "%s: %s", path, strerror(errno));
	ck_assert_int_eq(ftruncate(fd, (off_t)size), 0);
	close(fd);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void make_dir(const char *name, mode_t mode)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	ck_assert_int_eq(mkdir(path, mode), 0);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static void conf_fixture_setup(void)
{
	char path[256], lpath[256];

	snprintf(tmpdir, sizeof(tmpdir), "/tmp/check_conf.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	/* traversable by the unprivileged user of the permission tests */
	ck_assert_int_eq(chmod(tmpdir, 0755), 0);
	make_file("exists.img", 1 << 20, 0644);
	make_file("empty.img", 0, 0644);
	make_file("odd.img", 1000, 0644);
	make_file("ro.img", 1 << 20, 0444);
	make_file("noread.img", 1 << 20, 0200);
	make_dir("sub", 0755);
	make_dir("rodir", 0555);
	snprintf(path, sizeof(path), "%s/exists.img", tmpdir);
	snprintf(lpath, sizeof(lpath), "%s/link.img", tmpdir);
	ck_assert_int_eq(link(path, lpath), 0);
}

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)ftw;
	return flag == FTW_DP ? rmdir(path) : unlink(path);
}

static void conf_fixture_teardown(void)
{
	char path[256];

	snprintf(path, sizeof(path), "%s/rodir", tmpdir);
	chmod(path, 0755);
	nftw(tmpdir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* ---- helpers --------------------------------------------------------- */

/* Replace every "@D@" by the temporary directory. */
static char *expand(const char *s)
{
	size_t dlen = strlen(tmpdir), n = 0;
	char *out, *o;

	for (const char *p = s; (p = strstr(p, "@D@")); p += 3)
		n++;
	out = o = malloc(strlen(s) + n * dlen + 1);
	ck_assert_ptr_nonnull(out);
	while (*s) {
		if (!strncmp(s, "@D@", 3)) {
			memcpy(o, tmpdir, dlen);
			o += dlen;
			s += 3;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

static char *join_errors(const struct conf_errors *e)
{
	size_t len = 1;
	char *s;

	for (unsigned i = 0; i < e->n; i++)
		len += strlen(e->msgs[i]) + 3;
	s = malloc(len);
	ck_assert_ptr_nonnull(s);
	s[0] = '\0';
	for (unsigned i = 0; i < e->n; i++) {
		strcat(s, "  ");
		strcat(s, e->msgs[i]);
		strcat(s, "\n");
	}
	return s;
}

static bool is_zeroed(const struct conf *c)
{
	static const struct conf zero;

	return !memcmp(c, &zero, sizeof(zero));
}

/* The messages must begin with want[0..], in this order, and be no more. */
static void assert_messages(const struct conf_errors *e, const char *const *want)
{
	unsigned n = 0;
	char *all = join_errors(e);

	while (want[n])
		n++;
	ck_assert_msg(e->n == n, "got %u messages, want %u:\n%s", e->n, n, all);
	for (unsigned i = 0; i < n; i++) {
		char *w = expand(want[i]);

		ck_assert_msg(!strncmp(e->msgs[i], w, strlen(w)),
			      "message %u is \"%s\", want it to begin with \"%s\"", i, e->msgs[i], w);
		free(w);
	}
	free(all);
}

static void load_bad(const char *text, unsigned flags, const char *const *want)
{
	char *t = expand(text);
	struct conf c;
	struct conf_errors e;

	memset(&c, 0x5a, sizeof(c));
	ck_assert_msg(conf_load_string_opts(&c, t, "t.conf", flags, &e) == -1,
		      "config loaded but should not:\n%s", t);
	ck_assert_msg(is_zeroed(&c), "a failed load left state behind");
	assert_messages(&e, want);
	conf_free(&c);
	conf_errors_free(&e);
	free(t);
}

static void load_good(struct conf *c, const char *text, unsigned flags)
{
	char *t = expand(text);
	struct conf_errors e;
	int rc = conf_load_string_opts(c, t, "t.conf", flags, &e);
	char *all = join_errors(&e);

	ck_assert_msg(rc == 0 && e.n == 0, "config rejected:\n%s\n%s", t, all);
	free(all);
	free(t);
	conf_errors_free(&e);
}

/* ---- config texts ---------------------------------------------------- */

#define IQN "iqn.2026-11.org.example:t"
#define LUN0 "{ lun = 0; backstore = \"memory\"; size = \"1M\"; }"
/* A valid targets list, on one line. */
#define T_OK "targets = ( { iqn = \"" IQN "\"; luns = ( " LUN0 " ); } );\n"
/* body on line 3, inside targets[0] */
#define TGT(body) "targets = (\n  { iqn = \"" IQN "\";\n    " body "\n    luns = ( " LUN0 " );\n  }\n);\n"
/* body on line 4, inside targets[0].luns[0] */
#define LUN(body) "targets = (\n  { iqn = \"" IQN "\";\n    luns = (\n      { " body " }\n    );\n  }\n);\n"
/* target name on line 1 */
#define NAME(n) "targets = ( { iqn = \"" n "\"; luns = ( " LUN0 " ); } );\n"
#define INIT(n) TGT("initiators = [ \"" n "\" ];")
/* LUN 0 a file (line 4), LUN 1 a file with body (line 5) */
#define SNAP(body) "targets = (\n  { iqn = \"" IQN "\";\n    luns = (\n" \
	"      { lun = 0; backstore = \"file\"; path = \"/v.img\"; },\n" \
	"      { lun = 1; backstore = \"file\"; path = \"/v@a.img\"; " body " }\n    );\n  }\n);\n"
#define CHAP(body) TGT("chap = { " body " };")
#define SECRET1 "0123456789ab"
#define SECRET2 "ba9876543210"

struct bad_case {
	const char *text;
	unsigned flags;
	const char *want[8];
};

#define NOPATH CONF_NO_PATH_CHECKS

static const struct bad_case bad_cases[] = {
	/* syntax */
	{ "threads = 4;\nqueue_depth = ;\n" T_OK, 0, { "t.conf:2: syntax error near 'queue_depth = ;' (a value missing" } },
	{ "threads = 4;\nthreads = 5;\n" T_OK, 0, { "t.conf:2: syntax error: duplicate setting name near 'threads = 5;'" } },
	{ "listen = [ \"1.2.3.4\",\n 5 ];\n" T_OK, 0,
	  { "t.conf:2: syntax error: mismatched element type in array" } },

	/* top level: unknown keys, types, ranges */
	{ "wat = 1;\n" T_OK, 0, { "t.conf:1: wat: unknown key" } },
	{ "Threads = 1;\n" T_OK, 0, { "t.conf:1: Threads: unknown key" } },
	{ "threads = \"4\";\n" T_OK, 0, { "t.conf:1: threads: must be an integer" } },
	{ "threads = 1.5;\n" T_OK, 0, { "t.conf:1: threads: must be an integer" } },
	{ "threads = 1025;\n" T_OK, 0, { "t.conf:1: threads: 1025 is out of range (0 to 1024)" } },
	{ "threads = -1;\n" T_OK, 0, { "t.conf:1: threads: -1 is out of range (0 to 1024)" } },
	{ "queue_depth = 0;\n" T_OK, 0, { "t.conf:1: queue_depth: 0 is out of range (1 to 4096)" } },
	{ "queue_depth = 4097;\n" T_OK, 0, { "t.conf:1: queue_depth: 4097 is out of range (1 to 4096)" } },
	{ "nop_interval = 3601;\n" T_OK, 0, { "t.conf:1: nop_interval: 3601 is out of range (0 to 3600)" } },
	{ "nop_timeout = 0;\n" T_OK, 0, { "t.conf:1: nop_timeout: 0 is out of range (1 to 3600)" } },
	{ "login_timeout = 0;\n" T_OK, 0, { "t.conf:1: login_timeout: 0 is out of range (1 to 3600)" } },
	{ "max_recv_data_segment_length = 511;\n" T_OK, 0,
	  { "t.conf:1: max_recv_data_segment_length: 511 is out of range (512 to 16777215)" } },
	{ "max_recv_data_segment_length = 16777216;\n" T_OK, 0,
	  { "t.conf:1: max_recv_data_segment_length: 16777216 is out of range (512 to 16777215)" } },
	{ "max_burst_length = 100;\n" T_OK, 0,
	  { "t.conf:1: max_burst_length: 100 is out of range (512 to 16777215)" } },
	{ "first_burst_length = 16777216;\n" T_OK, 0,
	  { "t.conf:1: first_burst_length: 16777216 is out of range (512 to 16777215)" } },
	{ "max_burst_length = 8192;\nfirst_burst_length = 16384;\n" T_OK, 0,
	  { "t.conf:2: first_burst_length: 16384 exceeds max_burst_length 8192" } },
	{ "first_burst_length = 2097152;\n" T_OK, 0,
	  { "t.conf:1: first_burst_length: 2097152 exceeds max_burst_length 1048576 (the default)" } },
	{ "max_outstanding_r2t = 0;\n" T_OK, 0,
	  { "t.conf:1: max_outstanding_r2t: 0 is out of range (1 to 65535)" } },
	{ "max_buffer_per_connection = \"1M\";\n" T_OK, 0,
	  { "t.conf:1: max_buffer_per_connection: 1048576 bytes is out of range (16777216 to 1099511627776)" } },
	{ "max_buffer_total = \"lots\";\n" T_OK, 0,
	  { "t.conf:1: max_buffer_total: \"lots\" is not a size (bytes, or a number with K, M, G or T)" } },
	{ "max_pending_tx_per_connection = true;\n" T_OK, 0,
	  { "t.conf:1: max_pending_tx_per_connection: must be a size: bytes, or a string such as \"64M\"" } },
	{ "max_buffer_per_connection = \"2G\";\n" T_OK, 0,
	  { "t.conf:1: max_buffer_per_connection: 2147483648 exceeds max_buffer_total 1073741824 (the default)" } },
	{ "max_connections = 10;\nmax_connections_per_target = 20;\n" T_OK, 0,
	  { "t.conf:2: max_connections_per_target: 20 exceeds max_connections 10" } },
	{ "data_out_timeout = 0;\n" T_OK, 0,
	  { "t.conf:1: data_out_timeout: 0 is out of range (1 to 3600)" } },
	{ "max_text_response = 100;\n" T_OK, 0,
	  { "t.conf:1: max_text_response: 100 is out of range (8192 to 16777216)" } },
	{ "io_uring = 1;\n" T_OK, 0, { "t.conf:1: io_uring: must be true or false" } },
	{ "immediate_data = \"yes\";\n" T_OK, 0, { "t.conf:1: immediate_data: must be true or false" } },
	{ "initial_r2t = 0;\n" T_OK, 0, { "t.conf:1: initial_r2t: must be true or false" } },
	{ "state_dir = 5;\n" T_OK, 0, { "t.conf:1: state_dir: must be a string" } },
	{ "state_dir = \"\";\n" T_OK, 0, { "t.conf:1: state_dir: must not be empty" } },
	{ "control_socket = \"/run/" "0123456789012345678901234567890123456789"
	  "0123456789012345678901234567890123456789" "0123456789012345678901234567890123456789"
	  "\";\n" T_OK, 0, { "t.conf:1: control_socket: longer than 107 bytes" } },
	{ "control_socket = [ \"/run/x\" ];\n" T_OK, 0, { "t.conf:1: control_socket: must be a string" } },
	{ "metrics_listen = \"127.0.0.1\";\n" T_OK, 0,
	  { "t.conf:1: metrics_listen: \"127.0.0.1\" is not a numeric address and port" } },
	{ "metrics_listen = \"localhost:9100\";\n" T_OK, 0,
	  { "t.conf:1: metrics_listen: \"localhost:9100\" is not a numeric address and port" } },

	/* listen */
	{ "listen = \"127.0.0.1\";\n" T_OK, 0, { "t.conf:1: listen: must be a list of addresses" } },
	{ "listen = [ ];\n" T_OK, 0, { "t.conf:1: listen: at least one address is required" } },
	{ "listen = [ \"localhost:3260\" ];\n" T_OK, 0,
	  { "t.conf:1: listen[0]: \"localhost:3260\": numeric address expected: 127.0.0.1:3260 "
	    "(host names such as 'localhost' are not resolved" } },
	{ "listen = [ \"iscsi.example.org\" ];\n" T_OK, 0,
	  { "t.conf:1: listen[0]: \"iscsi.example.org\": numeric address expected: A.B.C.D:3260" } },
	{ "listen = [ \"1.2.3.4:0\" ];\n" T_OK, 0, { "t.conf:1: listen[0]: \"1.2.3.4:0\" is not a numeric" } },
	{ "listen = [ \"1.2.3.4:65536\" ];\n" T_OK, 0, { "t.conf:1: listen[0]: \"1.2.3.4:65536\" is not" } },
	{ "listen = [ \"1.2.3.4:\" ];\n" T_OK, 0, { "t.conf:1: listen[0]: \"1.2.3.4:\" is not" } },
	{ "listen = [ \"[::1\" ];\n" T_OK, 0, { "t.conf:1: listen[0]: \"[::1\" is not" } },
	{ "listen = [ \"1.2.3.4\", \"[::1]x\" ];\n" T_OK, 0, { "t.conf:1: listen[1]: \"[::1]x\" is not" } },
	{ "listen = [ \"127.0.0.1:3260\",\n  \"127.0.0.1\" ];\n" T_OK, 0,
	  { "t.conf:2: listen[1]: \"127.0.0.1\" is listed twice" } },
	{ "listen = [ \"[::1]:3260\", \"[0:0::1]\" ];\n" T_OK, 0,
	  { "t.conf:1: listen[1]: \"[0:0::1]\" is listed twice" } },
	{ "listen = ( { address = \"127.0.0.1\"; tpgt = 0; } );\n" T_OK, 0,
	  { "t.conf:1: listen[0].tpgt: 0 is out of range (1 to 65535)" } },
	{ "listen = ( { tpgt = 2; } );\n" T_OK, 0, { "t.conf:1: listen[0].address: missing" } },
	{ "listen = ( { address = \"127.0.0.1\"; port = 1; } );\n" T_OK, 0,
	  { "t.conf:1: listen[0].port: unknown key" } },
	{ "listen = ( { address = 1; } );\n" T_OK, 0, { "t.conf:1: listen[0].address: must be a string" } },
	{ "listen = [ 3260 ];\n" T_OK, 0, { "t.conf:1: listen[0]: must be an address string or a group" } },

	/* targets */
	{ "threads = 1;\n", 0, { "t.conf: targets: missing: the list of targets" } },
	{ "targets = { iqn = \"" IQN "\"; };\n", 0, { "t.conf:1: targets: must be a list of groups" } },
	{ "targets = ( 5 );\n", 0, { "t.conf:1: targets[0]: must be a group" } },
	{ TGT("lunz = 1;"), 0, { "t.conf:3: targets[0].lunz: unknown key" } },
	{ "targets = (\n  {\n    luns = ( " LUN0 " );\n  }\n);\n", 0,
	  { "t.conf:2: targets[0].iqn: missing" } },
	{ "targets = (\n  { iqn = \"" IQN "\"; }\n);\n", 0, { "t.conf:2: targets[0].luns: missing" } },
	{ "targets = ( { iqn = \"" IQN "\"; luns = { lun = 0; }; } );\n", 0,
	  { "t.conf:1: targets[0].luns: must be a list of groups" } },
	{ "targets = ( { iqn = \"" IQN "\"; luns = ( 1 ); } );\n", 0,
	  { "t.conf:1: targets[0].luns[0]: must be a group" } },
	{ "targets = (\n  { iqn = \"" IQN "\"; luns = ( " LUN0 " ); },\n  { iqn = \"" IQN "\"; luns = ( "
	  LUN0 " ); }\n);\n", 0,
	  { "t.conf:3: targets[1].iqn: \"" IQN "\" is already the name of targets[0] (line 2)" } },

	/* names */
	{ NAME("iqn.2026-11.org.Example:t"), 0,
	  { "t.conf:1: targets[0].iqn: \"iqn.2026-11.org.Example:t\": must be lower-case" } },
	{ NAME("iqn.2026-11.org.example:t_1"), 0,
	  { "t.conf:1: targets[0].iqn: \"iqn.2026-11.org.example:t_1\": may contain only a-z, 0-9" } },
	{ NAME("iqn.26-11.org.example"), 0,
	  { "t.conf:1: targets[0].iqn: \"iqn.26-11.org.example\": an iqn. name is iqn.YYYY-MM." } },
	{ NAME("iqn.2026-11"), 0, { "t.conf:1: targets[0].iqn: \"iqn.2026-11\": an iqn. name is" } },
	{ NAME("iqn.2026-13.org.example"), 0,
	  { "t.conf:1: targets[0].iqn: \"iqn.2026-13.org.example\": the month in an iqn. name must be 01 to 12" } },
	{ NAME("iqn.2026-11."), 0,
	  { "t.conf:1: targets[0].iqn: \"iqn.2026-11.\": an iqn. name needs a naming authority" } },
	{ NAME("disk1"), 0, { "t.conf:1: targets[0].iqn: \"disk1\": must start with iqn., eui. or naa." } },
	{ NAME(""), 0, { "t.conf:1: targets[0].iqn: must not be empty" } },
	{ NAME("eui.0123"), 0, { "t.conf:1: targets[0].iqn: \"eui.0123\": an eui. name is eui. followed by 16" } },
	{ NAME("eui.0123456789abcdeg"), 0, { "t.conf:1: targets[0].iqn: \"eui.0123456789abcdeg\": an eui." } },
	{ NAME("naa.0123456789abcdef0"), 0,
	  { "t.conf:1: targets[0].iqn: \"naa.0123456789abcdef0\": a naa. name is naa. followed by 16 or 32" } },
	{ "targets = ( { iqn = 5; luns = ( " LUN0 " ); } );\n", 0,
	  { "t.conf:1: targets[0].iqn: must be a string" } },

	/* alias and initiators */
	{ TGT("alias = \"a\\tb\";"), 0, { "t.conf:3: targets[0].alias: must not contain control characters" } },
	{ TGT("alias = \"\";"), 0, { "t.conf:3: targets[0].alias: must not be empty" } },
	{ TGT("initiators = \"" IQN "\";"), 0, { "t.conf:3: targets[0].initiators: must be a list of initiator names" } },
	{ INIT("iqn.1998-01.com.VMware:esx"), 0,
	  { "t.conf:3: targets[0].initiators[0]: \"iqn.1998-01.com.VMware:esx\": must be lower-case" } },
	{ INIT("esx-a"), 0, { "t.conf:3: targets[0].initiators[0]: \"esx-a\": must start with iqn." } },
	{ TGT("initiators = [ \"iqn.1998-01.com.vmware:a\", \"iqn.1998-01.com.vmware:a\" ];"), 0,
	  { "t.conf:3: targets[0].initiators[1]: \"iqn.1998-01.com.vmware:a\" is listed twice" } },
	{ TGT("initiators = [ 1 ];"), 0, { "t.conf:3: targets[0].initiators[0]: must be a string" } },

	/* CHAP */
	{ TGT("chap = \"x\";"), 0, { "t.conf:3: targets[0].chap: must be a group" } },
	{ CHAP(""), 0, { "t.conf:3: targets[0].chap: user and secret are required in a chap group" } },
	{ CHAP("user = \"u\";"), 0, { "t.conf:3: targets[0].chap.secret: missing: user and secret go together" } },
	{ CHAP("secret = \"" SECRET1 "\";"), 0,
	  { "t.conf:3: targets[0].chap.user: missing: user and secret go together" } },
	{ CHAP("user = \"u\"; secret = \"" SECRET1 "\"; mutual_user = \"m\";"), 0,
	  { "t.conf:3: targets[0].chap.mutual_secret: missing: mutual_user and mutual_secret go together" } },
	{ CHAP("user = \"u\"; secret = \"" SECRET1 "\"; mutual_secret = \"" SECRET2 "\";"), 0,
	  { "t.conf:3: targets[0].chap.mutual_user: missing: mutual_user and mutual_secret go together" } },
	{ CHAP("mutual_user = \"m\"; mutual_secret = \"" SECRET2 "\";"), 0,
	  { "t.conf:3: targets[0].chap: user and secret are required in a chap group",
	    "t.conf:3: targets[0].chap.mutual_user: mutual CHAP needs one-way CHAP" } },
	{ CHAP("user = \"u\"; secret = \"0123456789a\";"), 0,
	  { "t.conf:3: targets[0].chap.secret: must be 12 to 255 bytes long (it is 11)" } },
	{ CHAP("user = \"u\"; secret = \"" SECRET1 "\"; mutual_user = \"m\"; mutual_secret = \"short\";"), 0,
	  { "t.conf:3: targets[0].chap.mutual_secret: must be 12 to 255 bytes long (it is 5)" } },
	{ CHAP("user = \"u\"; secret = \"" SECRET1 "\"; mutual_user = \"m\"; mutual_secret = \"" SECRET1 "\";"), 0,
	  { "t.conf:3: targets[0].chap.mutual_secret: must differ from secret" } },
	{ CHAP("user = \"u\"; secret = \"" SECRET1 "\"; password = \"x\";"), 0,
	  { "t.conf:3: targets[0].chap.password: unknown key" } },
	{ CHAP("user = 5; secret = \"" SECRET1 "\";"), 0, { "t.conf:3: targets[0].chap.user: must be a string" } },

	/* LUN keys */
	{ LUN("backstore = \"memory\"; size = \"1M\";"), 0, { "t.conf:4: targets[0].luns[0].lun: missing" } },
	{ LUN("lun = 256; backstore = \"memory\"; size = \"1M\";"), 0,
	  { "t.conf:4: targets[0].luns[0].lun: 256 is out of range (0 to 255)" } },
	{ LUN("lun = -1; backstore = \"memory\"; size = \"1M\";"), 0,
	  { "t.conf:4: targets[0].luns[0].lun: -1 is out of range (0 to 255)" } },
	{ LUN("lun = \"0\"; backstore = \"memory\"; size = \"1M\";"), 0,
	  { "t.conf:4: targets[0].luns[0].lun: must be an integer" } },
	{ LUN("lun = 0; size = \"1M\";"), 0, { "t.conf:4: targets[0].luns[0].backstore: missing" } },
	{ LUN("lun = 0; backstore = \"tape\";"), 0,
	  { "t.conf:4: targets[0].luns[0].backstore: must be \"file\", \"block\", \"memory\" or \"rbd\", not \"tape\"" } },
#ifdef HAVE_RBD
	/* rbd: pool and image instead of a path */
	{ LUN("lun = 0; backstore = \"rbd\"; image = \"i\";"), 0,
	  { "t.conf:4: targets[0].luns[0].pool: required for an rbd backstore" } },
	{ LUN("lun = 0; backstore = \"rbd\"; pool = \"p\"; image = \"a@snap\";"), 0,
	  { "t.conf:4: targets[0].luns[0].image: \"a@snap\" must not contain '/' or '@'" } },
	{ LUN("lun = 0; backstore = \"rbd\"; pool = \"p\"; image = \"i\"; path = \"/x\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: not applicable to an rbd backstore" } },
	{ LUN("lun = 0; backstore = \"rbd\"; pool = \"p\"; image = \"i\"; client = \"a b\";"), 0,
	  { "t.conf:4: targets[0].luns[0].client: \"a b\" must be printable ASCII without spaces" } },
	{ LUN("lun = 0; backstore = \"rbd\"; pool = \"p\"; image = \"i\"; hard_limit = \"80%\";"), 0,
	  { "t.conf:4: targets[0].luns[0].hard_limit: not applicable to an rbd backstore" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; image = \"i\";"), 0,
	  { "t.conf:4: targets[0].luns[0].image: only for backstore = \"rbd\"" } },
#else
	{ LUN("lun = 0; backstore = \"rbd\"; pool = \"p\"; image = \"i\";"), 0,
	  { "t.conf:4: targets[0].luns[0].backstore: this targetd is built without Ceph RBD" } },
#endif
	{ LUN("lun = 0; backstore = 1;"), 0, { "t.conf:4: targets[0].luns[0].backstore: must be a string" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; block_size = 1024;"), 0,
	  { "t.conf:4: targets[0].luns[0].block_size: must be 512 or 4096" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; block_size = \"512\";"), 0,
	  { "t.conf:4: targets[0].luns[0].block_size: must be an integer" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"10X\";"), 0,
	  { "t.conf:4: targets[0].luns[0].size: \"10X\" is not a size" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"10 G\";"), 0,
	  { "t.conf:4: targets[0].luns[0].size: \"10 G\" is not a size" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = 0;"), 0,
	  { "t.conf:4: targets[0].luns[0].size: must be greater than 0" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"0G\";"), 0,
	  { "t.conf:4: targets[0].luns[0].size: must be greater than 0" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = -512;"), 0,
	  { "t.conf:4: targets[0].luns[0].size: must not be negative" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = true;"), 0,
	  { "t.conf:4: targets[0].luns[0].size: must be an integer or a string" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = 1000;"), 0,
	  { "t.conf:4: targets[0].luns[0].size: 1000 bytes is not a multiple of block_size 512" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"6K\"; block_size = 4096;"), 0,
	  { "t.conf:4: targets[0].luns[0].size: 6144 bytes is not a multiple of block_size 4096" } },
	{ LUN("lun = 0; backstore = \"memory\";"), 0,
	  { "t.conf:4: targets[0].luns[0].size: required for a memory backstore" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; path = \"/tmp/x\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: not allowed for a memory backstore" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; direct = true;"), 0,
	  { "t.conf:4: targets[0].luns[0].direct: not applicable to a memory backstore" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; zero_detect = \"yes\";"), 0,
	  { "t.conf:4: targets[0].luns[0].zero_detect: must be \"off\", \"on\" or \"unmap\", not \"yes\"" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; zero_detect = true;"), 0,
	  { "t.conf:4: targets[0].luns[0].zero_detect: must be a string" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; thin = false; zero_detect = \"unmap\";"), 0,
	  { "t.conf:4: targets[0].luns[0].zero_detect: needs a thin, writable LUN" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; hard_limit = \"101%\";"), 0,
	  { "t.conf:4: targets[0].luns[0].hard_limit: \"101%\" is not a percentage of the LUN (1% to 100%)" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; hard_limit = \"x%\";"), 0,
	  { "t.conf:4: targets[0].luns[0].hard_limit: \"x%\" is not a percentage" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; hard_limit = \"lots\";"), 0,
	  { "t.conf:4: targets[0].luns[0].hard_limit: \"lots\" is not a size" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; hard_limit = 0;"), 0,
	  { "t.conf:4: targets[0].luns[0].hard_limit: 0 bytes is out of range" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; thin = false; hard_limit = \"90%\";"), 0,
	  { "t.conf:4: targets[0].luns[0].hard_limit: needs thin = true" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; thin = false; soft_threshold = \"80%\";"), 0,
	  { "t.conf:4: targets[0].luns[0].soft_threshold: needs thin = true" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; soft_threshold = \"0%\";"), 0,
	  { "t.conf:4: targets[0].luns[0].soft_threshold: \"0%\" is not a percentage" } },
	{ "pool_soft_threshold = \"1G\";\n" T_OK, 0,
	  { "t.conf:1: pool_soft_threshold: must be a percentage of the file system" } },
	{ LUN("lun = 0; backstore = \"block\"; path = \"/dev/sdz\"; size = \"1G\";"), NOPATH,
	  { "t.conf:4: targets[0].luns[0].size: not allowed for a block backstore" } },
	{ LUN("lun = 0; backstore = \"block\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: required for a block backstore" } },
	{ LUN("lun = 0; backstore = \"file\"; size = \"1G\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: required for a file backstore" } },
	{ LUN("lun = 0; backstore = \"file\"; path = \"\"; size = \"1G\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: must not be empty" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; vendor = \"123456789\";"), 0,
	  { "t.conf:4: targets[0].luns[0].vendor: longer than 8 characters" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; product = \"12345678901234567\";"), 0,
	  { "t.conf:4: targets[0].luns[0].product: longer than 16 characters" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; serial = \"123456789012345678901234567890123\";"), 0,
	  { "t.conf:4: targets[0].luns[0].serial: longer than 32 characters" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; serial = \"ab\\x01\";"), 0,
	  { "t.conf:4: targets[0].luns[0].serial: must be printable ASCII" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; product = \"caf\\xc3\\xa9\";"), 0,
	  { "t.conf:4: targets[0].luns[0].product: must be printable ASCII" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; vendor = \"\";"), 0,
	  { "t.conf:4: targets[0].luns[0].vendor: must not be empty" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; thin = 1;"), 0,
	  { "t.conf:4: targets[0].luns[0].thin: must be true or false" } },
	{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; fua = true;"), 0,
	  { "t.conf:4: targets[0].luns[0].fua: unknown key" } },
	{ "targets = (\n  { iqn = \"" IQN "\";\n    luns = (\n      " LUN0 ",\n      { lun = 0; backstore = "
	  "\"memory\"; size = \"2M\"; }\n    );\n  }\n);\n", 0,
	  { "t.conf:5: targets[0].luns[1].lun: LUN 0 is already defined at line 4" } },

	/* paths on disk */
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/nodir/x.img\"; size = \"1M\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: directory @D@/nodir: No such file or directory" } },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/new.img\";"), 0,
	  { "t.conf:4: targets[0].luns[0].size: required: @D@/new.img does not exist and will be created" } },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/new.img\"; size = \"1M\"; read_only = true;"), 0,
	  { "t.conf:4: targets[0].luns[0].path: @D@/new.img does not exist (a read-only LUN is not created)" } },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/exists.img/x\"; size = \"1M\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: @D@/exists.img/x: Not a directory" } },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/empty.img\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: @D@/empty.img is empty: give a size" } },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/odd.img\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: @D@/odd.img: file size 1000 is not a multiple of block_size 512" } },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/exists.img\"; block_size = 4096; size = 1536;"), 0,
	  { "t.conf:4: targets[0].luns[0].size: 1536 bytes is not a multiple of block_size 4096" } },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/sub\"; size = \"1M\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: @D@/sub is a directory" } },
	{ LUN("lun = 0; backstore = \"block\"; path = \"@D@/exists.img\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: @D@/exists.img is not a block device (use backstore = \"file\")" } },
	{ LUN("lun = 0; backstore = \"block\"; path = \"@D@/sub\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: @D@/sub is not a block device" } },
	{ LUN("lun = 0; backstore = \"block\"; path = \"@D@/nope\";"), 0,
	  { "t.conf:4: targets[0].luns[0].path: @D@/nope: No such file or directory" } },
	{ "targets = (\n  { iqn = \"" IQN "\";\n    luns = (\n"
	  "      { lun = 0; backstore = \"file\"; path = \"@D@/exists.img\"; },\n"
	  "      { lun = 1; backstore = \"file\"; path = \"@D@/exists.img\"; }\n    );\n  }\n);\n", 0,
	  { "t.conf:5: targets[0].luns[1].path: @D@/exists.img is already used by targets[0].luns[0] (line 4)" } },
	{ "targets = (\n  { iqn = \"" IQN "\";\n    luns = (\n"
	  "      { lun = 0; backstore = \"file\"; path = \"@D@/exists.img\"; },\n"
	  "      { lun = 1; backstore = \"file\"; path = \"@D@/link.img\"; }\n    );\n  }\n);\n", 0,
	  { "t.conf:5: targets[0].luns[1].path: @D@/link.img is already used by targets[0].luns[0] (line 4)" } },
	{ "targets = (\n  { iqn = \"" IQN "\";\n    luns = ( { lun = 0; backstore = \"block\"; path = \"/dev/x\"; } ); },\n"
	  "  { iqn = \"" IQN ":2\";\n    luns = ( { lun = 0; backstore = \"block\"; path = \"/dev/x\"; } ); }\n);\n",
	  NOPATH, { "t.conf:5: targets[1].luns[0].path: /dev/x is already used by targets[0].luns[0] (line 3)" } },

	/* snapshots (targetctl lun snapshot): LUN 0 a file, the snapshot on line 5 */
	{ SNAP("read_only = true; snapshot_of = 0;"), NOPATH,
	  { "t.conf:5: targets[0].luns[1].snapshot_name: required with snapshot_of" } },
	{ SNAP("read_only = true; snapshot_name = \"a\";"), NOPATH,
	  { "t.conf:5: targets[0].luns[1].snapshot_of: required with snapshot_name" } },
	{ SNAP("snapshot_of = 0; snapshot_name = \"a\";"), NOPATH,
	  { "t.conf:5: targets[0].luns[1].read_only: a snapshot is read-only: set read_only = true" } },
	{ SNAP("read_only = true; snapshot_of = 1; snapshot_name = \"a\";"), NOPATH,
	  { "t.conf:5: targets[0].luns[1].snapshot_of: LUN 1 cannot be a snapshot of itself" } },
	{ SNAP("read_only = true; snapshot_of = 7; snapshot_name = \"a\";"), NOPATH,
	  { "t.conf:5: targets[0].luns[1].snapshot_of: names LUN 7, which the target does not have" } },
	{ SNAP("read_only = true; snapshot_of = 256; snapshot_name = \"a\";"), NOPATH,
	  { "t.conf:5: targets[0].luns[1].snapshot_of: 256 is out of range (0 to 255)" } },
	{ SNAP("read_only = true; snapshot_of = 0; snapshot_name = \"../x\";"), NOPATH,
	  { "t.conf:5: targets[0].luns[1].snapshot_name: \"../x\" must not start with '.' or '-'" } },
	{ SNAP("read_only = true; snapshot_of = 0; snapshot_name = \"a/b\";"), NOPATH,
	  { "t.conf:5: targets[0].luns[1].snapshot_name: \"a/b\" may hold only letters, digits" } },
	{ SNAP("read_only = true; snapshot_time = \"now\";"), NOPATH,
	  { "t.conf:5: targets[0].luns[1].snapshot_time: only for a snapshot" } },
	{ "targets = (\n  { iqn = \"" IQN "\";\n    luns = (\n"
	  "      { lun = 0; backstore = \"file\"; path = \"/v.img\"; },\n"
	  "      { lun = 1; backstore = \"file\"; path = \"/v@a.img\"; read_only = true; snapshot_of = 0; snapshot_name = \"a\"; },\n"
	  "      { lun = 2; backstore = \"file\"; path = \"/v@b.img\"; read_only = true; snapshot_of = 1; snapshot_name = \"a\"; },\n"
	  "      { lun = 3; backstore = \"file\"; path = \"/v@c.img\"; read_only = true; snapshot_of = 0; snapshot_name = \"a\"; }\n"
	  "    );\n  }\n);\n", NOPATH,
	  { "t.conf:6: targets[0].luns[2].snapshot_of: LUN 1 is a snapshot itself",
	    "t.conf:7: targets[0].luns[3].snapshot_name: LUN 0 has a snapshot \"a\" already (LUN 1, line 5)" } },
};

/* Many errors at once, from every level: all reported, in file order. */
static const char many_errors[] =
	"threads = -2;\n"
	"listen = [ \"1.2.3.4:99999\" ];\n"
	"bogus = true;\n"
	"targets = (\n"
	"  { iqn = \"iqn.2026-11.org.example:a\";\n"
	"    chap = { user = \"u\"; secret = \"tooshort\"; };\n"
	"    luns = (\n"
	"      { lun = 0; backstore = \"memory\"; size = \"1M\"; block_size = 1000; },\n"
	"      { lun = 1; backstore = \"block\"; path = \"/dev/sdq\"; size = \"1G\"; },\n"
	"      { lun = 2; backstore = \"file\"; path = \"@D@/nodir/f\"; }\n"
	"    );\n"
	"  },\n"
	"  { iqn = \"iqn.2026-11.org.example:a\"; luns = ( { lun = 300; backstore = \"memory\"; } ); }\n"
	");\n";

START_TEST(test_bad_case)
{
	load_bad(bad_cases[_i].text, bad_cases[_i].flags, bad_cases[_i].want);
}
END_TEST

START_TEST(test_many_errors)
{
	static const char *const want[] = {
		"t.conf:1: threads: -2 is out of range",
		"t.conf:2: listen[0]: \"1.2.3.4:99999\" is not a numeric address",
		"t.conf:3: bogus: unknown key",
		"t.conf:6: targets[0].chap.secret: must be 12 to 255 bytes long (it is 8)",
		"t.conf:8: targets[0].luns[0].block_size: must be 512 or 4096",
		"t.conf:9: targets[0].luns[1].size: not allowed for a block backstore",
		"t.conf:9: targets[0].luns[1].path: /dev/sdq: No such file or directory",
		"t.conf:10: targets[0].luns[2].size: required: @D@/nodir/f does not exist",
		"t.conf:10: targets[0].luns[2].path: directory @D@/nodir: No such file or directory",
		"t.conf:13: targets[1].luns[0].lun: 300 is out of range (0 to 255)",
		"t.conf:13: targets[1].luns[0].size: required for a memory backstore",
		"t.conf:13: targets[1].iqn: \"iqn.2026-11.org.example:a\" is already the name of targets[0] (line 5)",
		NULL
	};

	load_bad(many_errors, 0, want);
}
END_TEST

/* Unknown keys close to a known one name it; others do not guess. */
START_TEST(test_suggestions)
{
	static const struct {
		const char *text, *msg;
	} cases[] = {
		{ "Threads = 1;\n" T_OK, "t.conf:1: Threads: unknown key (did you mean threads?)" },
		{ "queue_dept = 1;\n" T_OK, "t.conf:1: queue_dept: unknown key (did you mean queue_depth?)" },
		{ "io-uring = true;\n" T_OK, "t.conf:1: io-uring: unknown key (did you mean io_uring?)" },
		{ "wat = 1;\n" T_OK, "t.conf:1: wat: unknown key" },
		{ TGT("initiator = [];"), "t.conf:3: targets[0].initiator: unknown key (did you mean initiators?)" },
		{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; blocksize = 512;"),
		  "t.conf:4: targets[0].luns[0].blocksize: unknown key (did you mean block_size?)" },
		{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; readonly = true;"),
		  "t.conf:4: targets[0].luns[0].readonly: unknown key (did you mean read_only?)" },
		{ LUN("lun = 0; backstore = \"memory\"; size = \"1M\"; fua = true;"),
		  "t.conf:4: targets[0].luns[0].fua: unknown key" },
		{ CHAP("user = \"u\"; secret = \"" SECRET1 "\"; mutual_secrets = \"" SECRET2 "\";"),
		  "t.conf:3: targets[0].chap.mutual_secrets: unknown key (did you mean mutual_secret?)" },
	};

	for (size_t i = 0; i < ARRAY_SIZE(cases); i++) {
		struct conf c;
		struct conf_errors e;

		ck_assert_int_eq(conf_load_string(&c, cases[i].text, "t.conf", &e), -1);
		ck_assert_uint_ge(e.n, 1);
		ck_assert_str_eq(e.msgs[0], cases[i].msg);
		conf_errors_free(&e);
	}
}
END_TEST

/* Names too long to write in the table. */
START_TEST(test_long_values)
{
	char name[300], text[1024];
	static const char *const want_iqn[] = {
		"t.conf:1: targets[0].iqn: \"iqn.2026-11.org.example:", NULL };
	static const char *const want_secret[] = {
		"t.conf:3: targets[0].chap.secret: must be 12 to 255 bytes long (it is 256)", NULL };
	static const char *const want_alias[] = {
		"t.conf:3: targets[0].alias: longer than 255 bytes", NULL };
	struct conf c;

	/* 223 bytes is the longest name */
	memset(name, 'x', sizeof(name));
	memcpy(name, "iqn.2026-11.org.example:", 24);
	name[223] = '\0';
	snprintf(text, sizeof(text), NAME("%s"), name);
	load_good(&c, text, 0);
	ck_assert_str_eq(c.targets[0].iqn, name);
	conf_free(&c);
	name[223] = 'x';
	name[224] = '\0';
	snprintf(text, sizeof(text), NAME("%s"), name);
	load_bad(text, 0, want_iqn);
	{
		struct conf_errors e;

		conf_load_string(&c, text, "t.conf", &e);
		ck_assert_uint_eq(e.n, 1);
		ck_assert_ptr_nonnull(strstr(e.msgs[0], "longer than 223 bytes"));
		conf_errors_free(&e);
	}

	memset(name, 's', 256);
	name[256] = '\0';
	snprintf(text, sizeof(text), CHAP("user = \"u\"; secret = \"%s\";"), name);
	load_bad(text, 0, want_secret);
	name[255] = '\0';
	snprintf(text, sizeof(text), CHAP("user = \"u\"; secret = \"%s\";"), name);
	load_good(&c, text, 0);
	ck_assert_uint_eq(strlen(c.targets[0].chap->secret), 255);
	conf_free(&c);

	memset(name, 'a', 256);
	name[256] = '\0';
	snprintf(text, sizeof(text), TGT("alias = \"%s\";"), name);
	load_bad(text, 0, want_alias);
}
END_TEST

/* Permission checks, as a user who does not own the fixture's files: as
 * root, in a child that drops to nobody (root passes every access()). */
struct perm_case {
	const char *text;
	const char *want;   /* NULL = loads */
};

static const struct perm_case perm_cases[] = {
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/ro.img\";"),
	  "t.conf:4: targets[0].luns[0].path: @D@/ro.img is not writable (or set read_only = true): Permission denied" },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/ro.img\"; read_only = true;"), NULL },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/noread.img\"; read_only = true;"),
	  "t.conf:4: targets[0].luns[0].path: @D@/noread.img is not readable: Permission denied" },
	{ LUN("lun = 0; backstore = \"file\"; path = \"@D@/rodir/new.img\"; size = \"1M\";"),
	  "t.conf:4: targets[0].luns[0].path: cannot create @D@/rodir/new.img: directory @D@/rodir is not writable: Permission denied" },
};

START_TEST(test_permissions)
{
	const struct perm_case *pc = &perm_cases[_i];
	char *text = expand(pc->text);
	char out[2048] = "";
	int pfd[2], status;
	ssize_t got = 0, r;
	pid_t pid;

	ck_assert_int_eq(pipe(pfd), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct conf c;
		struct conf_errors e;
		int rc;

		close(pfd[0]);
		if (geteuid() == 0 && (setgroups(0, NULL) < 0 || setgid(65534) < 0 || setuid(65534) < 0))
			_exit(3);
		rc = conf_load_string(&c, text, "t.conf", &e);
		if (dprintf(pfd[1], "%d\n", rc) < 0)
			_exit(4);
		for (unsigned i = 0; i < e.n; i++)
			if (dprintf(pfd[1], "%s\n", e.msgs[i]) < 0)
				_exit(4);
		conf_free(&c);
		conf_errors_free(&e);
		free(text);
		close(pfd[1]);
		_exit(0);
	}
	close(pfd[1]);
	while ((r = read(pfd[0], out + got, sizeof(out) - 1 - (size_t)got)) > 0)
		got += r;
	out[got] = '\0';
	close(pfd[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "child failed: %d", status);
	if (pc->want) {
		char *w = expand(pc->want);
		char *expect = malloc(strlen(w) + 8);

		sprintf(expect, "-1\n%s\n", w);
		ck_assert_str_eq(out, expect);
		free(expect);
		free(w);
	} else {
		ck_assert_str_eq(out, "0\n");
	}
	free(text);
}
END_TEST

START_TEST(test_good_paths)
{
	struct conf c;
	struct stat st;
	char path[256];

	load_good(&c, "targets = (\n  { iqn = \"" IQN "\";\n    luns = (\n"
		  "      { lun = 0; backstore = \"file\"; path = \"@D@/exists.img\"; },\n"
		  "      { lun = 1; backstore = \"file\"; path = \"@D@/odd.img\"; size = \"1M\"; },\n"
		  "      { lun = 2; backstore = \"file\"; path = \"@D@/sub/new.img\"; size = \"4G\"; block_size = 4096; },\n"
		  "      { lun = 3; backstore = \"file\"; path = \"@D@/ro.img\"; read_only = true; }\n"
		  "    );\n  }\n);\n", 0);
	ck_assert_uint_eq(c.targets[0].n_luns, 4);
	ck_assert_uint_eq(c.targets[0].luns[0].size, 0);   /* taken from the file at open */
	ck_assert_uint_eq(c.targets[0].luns[1].size, 1 << 20);
	ck_assert_uint_eq(c.targets[0].luns[2].size, 4ULL << 30);
	ck_assert_uint_eq(c.targets[0].luns[2].block_size, 4096);
	ck_assert(c.targets[0].luns[3].read_only);
	conf_free(&c);
	/* validating never creates anything */
	snprintf(path, sizeof(path), "%s/sub/new.img", tmpdir);
	ck_assert_int_ne(stat(path, &st), 0);
}
END_TEST

/* A block device, if this machine has one we can see. */
static const char *find_block_device(void)
{
	static const char *const cands[] = { "/dev/loop0", "/dev/vda", "/dev/sda", "/dev/nvme0n1",
					     "/dev/zram0", "/dev/xvda", "/dev/ram0" };
	struct stat st;

	for (size_t i = 0; i < ARRAY_SIZE(cands); i++)
		if (stat(cands[i], &st) == 0 && S_ISBLK(st.st_mode) && access(cands[i], R_OK | W_OK) == 0)
			return cands[i];
	return NULL;
}

START_TEST(test_block_device)
{
	const char *dev = find_block_device();
	char text[512];
	struct conf c;
	struct conf_errors e;

	if (!dev)
		return;   /* nothing to test against on this machine */
	snprintf(text, sizeof(text), LUN("lun = 0; backstore = \"block\"; path = \"%s\"; direct = true;"), dev);
	load_good(&c, text, 0);
	ck_assert_str_eq(c.targets[0].luns[0].backstore, "block");
	ck_assert_str_eq(c.targets[0].luns[0].path, dev);
	ck_assert_uint_eq(c.targets[0].luns[0].size, 0);
	ck_assert(c.targets[0].luns[0].direct);
	conf_free(&c);

	snprintf(text, sizeof(text), LUN("lun = 0; backstore = \"file\"; path = \"%s\";"), dev);
	ck_assert_int_eq(conf_load_string(&c, text, "t.conf", &e), -1);
	ck_assert_uint_eq(e.n, 1);
	ck_assert_msg(strstr(e.msgs[0], "t.conf:4: targets[0].luns[0].path: ") == e.msgs[0] &&
		      strstr(e.msgs[0], "is a block device (use backstore = \"block\")"), "%s", e.msgs[0]);
	conf_errors_free(&e);
}
END_TEST

/* ---- good configs ---------------------------------------------------- */

static const char issue_example[] =
	"listen = [ \"127.0.0.1:3260\", \"[::1]:3260\" ];\n"
	"threads = 0;\n"
	"state_dir = \"/var/lib/targetd\";\n"
	"control_socket = \"/run/targetd/control.sock\";\n"
	"targets = (\n"
	"  { iqn = \"iqn.2026-11.org.example:lab\";\n"
	"    initiators = [ \"iqn.1998-01.com.vmware:esx-a\" ];\n"
	"    chap = { user = \"esx\"; secret = \"0123456789abcdef\"; mutual_user = \"array\"; mutual_secret = \"fedcba9876543210\"; };\n"
	"    luns = (\n"
	"      { lun = 0; backstore = \"file\";  path = \"/var/lib/targetd/lun0.img\"; size = \"10G\"; },\n"
	"      { lun = 1; backstore = \"block\"; path = \"/dev/vdb\"; }\n"
	"    );\n"
	"  }\n"
	");\n";

START_TEST(test_issue_example)
{
	struct conf c;
	const struct conf_target *t;

	load_good(&c, issue_example, CONF_NO_PATH_CHECKS);
	ck_assert_str_eq(c.file, "t.conf");
	ck_assert_uint_eq(c.n_listen, 2);
	ck_assert_str_eq(c.listen[0].host, "127.0.0.1");
	ck_assert_str_eq(c.listen[0].port, "3260");
	ck_assert_uint_eq(c.listen[0].tpgt, 1);
	ck_assert_str_eq(c.listen[1].host, "::1");
	ck_assert_str_eq(c.listen[1].port, "3260");
	ck_assert_uint_eq(c.listen[1].tpgt, 1);
	ck_assert_uint_eq(c.threads, 0);
	ck_assert_str_eq(c.state_dir, "/var/lib/targetd");
	ck_assert_str_eq(c.control_socket, "/run/targetd/control.sock");
	ck_assert_uint_eq(c.n_targets, 1);
	t = &c.targets[0];
	ck_assert_str_eq(t->iqn, "iqn.2026-11.org.example:lab");
	ck_assert_ptr_null(t->alias);
	ck_assert(t->has_acl);
	ck_assert_uint_eq(t->n_initiators, 1);
	ck_assert_str_eq(t->initiators[0], "iqn.1998-01.com.vmware:esx-a");
	ck_assert_ptr_nonnull(t->chap);
	ck_assert_str_eq(t->chap->user, "esx");
	ck_assert_str_eq(t->chap->secret, "0123456789abcdef");
	ck_assert_str_eq(t->chap->mutual_user, "array");
	ck_assert_str_eq(t->chap->mutual_secret, "fedcba9876543210");
	ck_assert_int_eq(t->line, 6);
	ck_assert_uint_eq(t->n_luns, 2);
	ck_assert_uint_eq(t->luns[0].lun, 0);
	ck_assert_str_eq(t->luns[0].backstore, "file");
	ck_assert_str_eq(t->luns[0].path, "/var/lib/targetd/lun0.img");
	ck_assert_uint_eq(t->luns[0].size, 10ULL << 30);
	ck_assert_uint_eq(t->luns[0].block_size, 512);
	ck_assert(t->luns[0].thin);
	ck_assert(!t->luns[0].read_only);
	ck_assert_int_eq(t->luns[0].line, 10);
	ck_assert_uint_eq(t->luns[1].lun, 1);
	ck_assert_str_eq(t->luns[1].backstore, "block");
	ck_assert_str_eq(t->luns[1].path, "/dev/vdb");
	ck_assert_uint_eq(t->luns[1].size, 0);
	ck_assert_int_eq(t->luns[1].line, 11);
	conf_free(&c);
	ck_assert(is_zeroed(&c));
}
END_TEST

/* With path checks, the issue's example stops at the paths (which do not
 * exist here) and at nothing else. */
START_TEST(test_issue_example_paths)
{
	struct conf c;
	struct conf_errors e;
	struct stat st;

	if (stat("/var/lib/targetd", &st) == 0 || stat("/dev/vdb", &st) == 0)
		return;   /* a machine that has them: nothing to assert */
	ck_assert_int_eq(conf_load_string(&c, issue_example, "targetd.conf", &e), -1);
	ck_assert_uint_eq(e.n, 2);
	ck_assert_str_eq(e.msgs[0], "targetd.conf:10: targets[0].luns[0].path: directory /var/lib/targetd: "
			 "No such file or directory");
	ck_assert_str_eq(e.msgs[1], "targetd.conf:11: targets[0].luns[1].path: /dev/vdb: No such file or directory");
	conf_errors_free(&e);
}
END_TEST

static void assert_defaults(const struct conf *c)
{
	ck_assert_uint_eq(c->n_listen, 1);
	ck_assert_str_eq(c->listen[0].host, "127.0.0.1");
	ck_assert_str_eq(c->listen[0].port, "3260");
	ck_assert_uint_eq(c->listen[0].tpgt, 1);
	ck_assert_uint_eq(c->threads, 0);
	ck_assert_str_eq(c->control_socket, CONF_DEFAULT_CONTROL_SOCKET);
	ck_assert_uint_eq(c->queue_depth, 128);
	ck_assert_uint_eq(c->nop_interval, 15);
	ck_assert_uint_eq(c->nop_timeout, 30);
	ck_assert_uint_eq(c->login_timeout, 15);
	ck_assert_uint_eq(c->max_recv_data_segment_length, 262144);
	ck_assert_uint_eq(c->max_burst_length, 1048576);
	ck_assert_uint_eq(c->first_burst_length, 65536);
	ck_assert(c->immediate_data);
	ck_assert(!c->initial_r2t);
	ck_assert_uint_eq(c->max_outstanding_r2t, 1);
	ck_assert(c->use_io_uring);
	ck_assert_ptr_null(c->metrics_listen);
}

START_TEST(test_defaults)
{
	struct conf c;
	const struct conf_lun *l;

	load_good(&c, T_OK, 0);
	assert_defaults(&c);
	ck_assert_str_eq(c.state_dir, CONF_DEFAULT_STATE_DIR);
	ck_assert_uint_eq(c.n_targets, 1);
	ck_assert_ptr_null(c.targets[0].alias);
	ck_assert_ptr_null(c.targets[0].chap);
	ck_assert(!c.targets[0].has_acl);
	ck_assert_uint_eq(c.targets[0].n_initiators, 0);
	l = &c.targets[0].luns[0];
	ck_assert_str_eq(l->backstore, "memory");
	ck_assert_ptr_null(l->path);
	ck_assert_uint_eq(l->size, 1 << 20);
	ck_assert_uint_eq(l->block_size, 512);
	ck_assert(l->thin);
	ck_assert(!l->read_only && !l->removable && !l->sanitize && !l->direct);
	ck_assert_uint_eq(l->zero_detect, CONF_ZD_OFF);
	ck_assert_ptr_null(l->serial);
	ck_assert_ptr_null(l->vendor);
	ck_assert_ptr_null(l->product);
	conf_free(&c);
}
END_TEST

/* Every key set away from its default. */
START_TEST(test_every_key)
{
	struct conf c;
	const struct conf_target *t;
	const struct conf_lun *l;

	load_good(&c,
		  "listen = ( \"0.0.0.0:3261\", { address = \"[2001:db8::7]\"; tpgt = 7; }, \"::\" );\n"
		  "threads = 6;\n"
		  "state_dir = \"/srv/targetd\";\n"
		  "control_socket = \"/tmp/t.sock\";\n"
		  "queue_depth = 4096;\n"
		  "nop_interval = 0;\n"
		  "nop_timeout = 5;\n"
		  "login_timeout = 3600;\n"
		  "max_recv_data_segment_length = 16777215;\n"
		  "max_burst_length = 512;\n"
		  "first_burst_length = 512;\n"
		  "immediate_data = false;\n"
		  "initial_r2t = true;\n"
		  "max_outstanding_r2t = 65535;\n"
		  "io_uring = false;\n"
		  "metrics_listen = \"[::1]:9100\";\n"
		  "pool_soft_threshold = \"85%\";\n"
		  "targets = (\n"
		  "  { iqn = \"eui.0123456789abcdef\"; alias = \"lab disk \xc3\xa9\"; initiators = [];\n"
		  "    chap = { user = \"u\"; secret = \"" SECRET1 "\"; };\n"
		  "    luns = ( { lun = 255; backstore = \"memory\"; size = 10737418240L; block_size = 4096;\n"
		  "               thin = false; read_only = true; removable = true; sanitize = true;\n"
		  "               serial = \"S 0001 ~!\"; vendor = \"ACME\"; product = \"0123456789abcdef\"; } ); },\n"
		  "  { iqn = \"naa.60014055f1c2b3a4d5e6f708192a3b4c\"; initiators = ( \"naa.0123456789abcdef\" );\n"
		  "    luns = ( { lun = 1; backstore = \"memory\"; size = 1048576; direct = false;\n"
		  "               zero_detect = \"unmap\"; hard_limit = \"90%\";\n"
		  "               soft_threshold = \"64K\"; } ); }\n"
		  ");\n", 0);
	ck_assert_uint_eq(c.n_listen, 3);
	ck_assert_str_eq(c.listen[0].host, "0.0.0.0");
	ck_assert_str_eq(c.listen[0].port, "3261");
	ck_assert_uint_eq(c.listen[0].tpgt, 1);
	ck_assert_str_eq(c.listen[1].host, "2001:db8::7");
	ck_assert_str_eq(c.listen[1].port, "3260");
	ck_assert_uint_eq(c.listen[1].tpgt, 7);
	ck_assert_str_eq(c.listen[2].host, "::");
	ck_assert_uint_eq(c.threads, 6);
	ck_assert_str_eq(c.state_dir, "/srv/targetd");
	ck_assert_str_eq(c.control_socket, "/tmp/t.sock");
	ck_assert_uint_eq(c.queue_depth, 4096);
	ck_assert_uint_eq(c.nop_interval, 0);
	ck_assert_uint_eq(c.nop_timeout, 5);
	ck_assert_uint_eq(c.login_timeout, 3600);
	ck_assert_uint_eq(c.max_recv_data_segment_length, 16777215);
	ck_assert_uint_eq(c.max_burst_length, 512);
	ck_assert_uint_eq(c.first_burst_length, 512);
	ck_assert(!c.immediate_data);
	ck_assert(c.initial_r2t);
	ck_assert_uint_eq(c.max_outstanding_r2t, 65535);
	ck_assert(!c.use_io_uring);
	ck_assert_str_eq(c.metrics_listen, "[::1]:9100");
	ck_assert_uint_eq(c.n_targets, 2);
	t = &c.targets[0];
	ck_assert_str_eq(t->iqn, "eui.0123456789abcdef");
	ck_assert_str_eq(t->alias, "lab disk \xc3\xa9");
	ck_assert(t->has_acl);   /* an empty list admits nobody */
	ck_assert_uint_eq(t->n_initiators, 0);
	ck_assert_str_eq(t->chap->user, "u");
	ck_assert_ptr_null(t->chap->mutual_user);
	ck_assert_ptr_null(t->chap->mutual_secret);
	l = &t->luns[0];
	ck_assert_uint_eq(l->lun, 255);
	ck_assert_uint_eq(l->size, 10ULL << 30);
	ck_assert_uint_eq(l->block_size, 4096);
	ck_assert(!l->thin && l->read_only && l->removable && l->sanitize && !l->direct);
	ck_assert_str_eq(l->serial, "S 0001 ~!");
	ck_assert_str_eq(l->vendor, "ACME");
	ck_assert_str_eq(l->product, "0123456789abcdef");
	t = &c.targets[1];
	ck_assert_str_eq(t->iqn, "naa.60014055f1c2b3a4d5e6f708192a3b4c");
	ck_assert_uint_eq(t->n_initiators, 1);
	ck_assert_str_eq(t->initiators[0], "naa.0123456789abcdef");
	ck_assert_uint_eq(t->luns[0].size, 1048576);
	ck_assert_uint_eq(t->luns[0].zero_detect, CONF_ZD_UNMAP);
	ck_assert_uint_eq(t->luns[0].hard_limit.pct, 90);
	ck_assert_uint_eq(t->luns[0].soft_threshold.bytes, 65536);
	ck_assert_uint_eq(c.pool_soft_threshold, 85);
	ck_assert_uint_eq(conf_space_bytes(&t->luns[0].hard_limit, 1000), 900);
	conf_free(&c);
}
END_TEST

/* A snapshot's keys (targetctl lun snapshot writes them). */
START_TEST(test_snapshot_keys)
{
	struct conf c;
	const struct conf_lun *l;

	load_good(&c, SNAP("read_only = true; snapshot_of = 0; snapshot_name = \"mon-1.2_x+y\"; "
			   "snapshot_time = \"2026-12-01T13:20:00Z\";"), NOPATH);
	ck_assert(!conf_lun_is_snapshot(&c.targets[0].luns[0]));
	l = &c.targets[0].luns[1];
	ck_assert(conf_lun_is_snapshot(l));
	ck_assert_int_eq(l->snapshot_of, 0);
	ck_assert_str_eq(l->snapshot_name, "mon-1.2_x+y");
	ck_assert_str_eq(l->snapshot_time, "2026-12-01T13:20:00Z");
	ck_assert(l->read_only);
	conf_free(&c);
	ck_assert_ptr_null(conf_snapshot_name_error("a"));
	ck_assert_ptr_nonnull(conf_snapshot_name_error(""));
	ck_assert_ptr_nonnull(conf_snapshot_name_error("-a"));
	ck_assert_ptr_nonnull(conf_snapshot_name_error("a b"));
	ck_assert_ptr_nonnull(conf_snapshot_name_error(
		"0123456789012345678901234567890123456789012345678901234567890123x"));
}
END_TEST

/* Resource limits: the defaults, sizes as strings or integers, and a
 * smaller max_buffer_total pulling the default per-connection limit down. */
START_TEST(test_limits)
{
	struct conf c;

	load_good(&c, T_OK, 0);
	ck_assert_uint_eq(c.limits.max_connections, 1024);
	ck_assert_uint_eq(c.limits.max_connections_per_target, 256);
	ck_assert_uint_eq(c.limits.max_sessions_per_initiator, 64);
	ck_assert_uint_eq(c.limits.max_buffer_per_connection, 64u << 20);
	ck_assert_uint_eq(c.limits.max_buffer_total, 1u << 30);
	ck_assert_uint_eq(c.limits.max_pending_tx_per_connection, 16u << 20);
	ck_assert_uint_eq(c.limits.max_text_response, 1u << 20);
	ck_assert_uint_eq(c.limits.data_out_timeout, 20);
	conf_free(&c);
	load_good(&c, "max_connections = 10; max_connections_per_target = 3; max_sessions_per_initiator = 2;\n"
		  "max_buffer_per_connection = 33554432; max_buffer_total = \"2G\";\n"
		  "max_pending_tx_per_connection = \"64K\"; max_text_response = 8192; data_out_timeout = 3600;\n"
		  T_OK, 0);
	ck_assert_uint_eq(c.limits.max_connections, 10);
	ck_assert_uint_eq(c.limits.max_connections_per_target, 3);
	ck_assert_uint_eq(c.limits.max_sessions_per_initiator, 2);
	ck_assert_uint_eq(c.limits.max_buffer_per_connection, 32u << 20);
	ck_assert_uint_eq(c.limits.max_buffer_total, 2ull << 30);
	ck_assert_uint_eq(c.limits.max_pending_tx_per_connection, 65536);
	ck_assert_uint_eq(c.limits.max_text_response, 8192);
	ck_assert_uint_eq(c.limits.data_out_timeout, 3600);
	conf_free(&c);
	load_good(&c, "max_buffer_total = \"32M\"; max_connections = 100;\n" T_OK, 0);
	ck_assert_uint_eq(c.limits.max_buffer_per_connection, 32u << 20);
	ck_assert_uint_eq(c.limits.max_connections_per_target, 100);
	conf_free(&c);
}
END_TEST

/* A smaller max_burst_length pulls the default first_burst_length down. */
START_TEST(test_first_burst_follows_max)
{
	struct conf c;

	load_good(&c, "max_burst_length = 16384;\n" T_OK, 0);
	ck_assert_uint_eq(c.max_burst_length, 16384);
	ck_assert_uint_eq(c.first_burst_length, 16384);
	conf_free(&c);
}
END_TEST

START_TEST(test_conf_default)
{
	struct conf c;
	const struct conf_lun *l;

	conf_default(&c, "/srv/td");
	ck_assert_str_eq(c.file, "<embedded>");
	assert_defaults(&c);
	ck_assert_str_eq(c.state_dir, "/srv/td");
	ck_assert_uint_eq(c.n_targets, 1);
	ck_assert_str_eq(c.targets[0].iqn, CONF_DEFAULT_IQN);
	ck_assert(!c.targets[0].has_acl);
	ck_assert_ptr_null(c.targets[0].chap);
	ck_assert_uint_eq(c.targets[0].n_luns, 1);
	l = &c.targets[0].luns[0];
	ck_assert_uint_eq(l->lun, 0);
	ck_assert_str_eq(l->backstore, "file");
	ck_assert_str_eq(l->path, "/srv/td/lun0.img");
	ck_assert_uint_eq(l->size, 1ULL << 30);
	ck_assert_uint_eq(l->block_size, 512);
	ck_assert(l->thin && !l->read_only);
	conf_free(&c);
	ck_assert(is_zeroed(&c));

	conf_default(&c, NULL);
	ck_assert_str_eq(c.state_dir, CONF_DEFAULT_STATE_DIR);
	ck_assert_str_eq(c.targets[0].luns[0].path, CONF_DEFAULT_STATE_DIR "/lun0.img");
	conf_free(&c);
}
END_TEST

/* ---- files ------------------------------------------------------------ */

static void write_file(const char *name, const char *text)
{
	char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", tmpdir, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

START_TEST(test_load_file)
{
	char path[256], *w;
	struct conf c;
	struct conf_errors e;

	/* the name in messages is the one the caller gave */
	write_file("good.conf", "threads = 2;\n" T_OK);
	snprintf(path, sizeof(path), "%s/good.conf", tmpdir);
	ck_assert_int_eq(conf_load_file(&c, path, &e), 0);
	ck_assert_uint_eq(e.n, 0);
	ck_assert_str_eq(c.file, path);
	ck_assert_uint_eq(c.threads, 2);
	conf_free(&c);
	conf_errors_free(&e);

	write_file("bad.conf", "threads = 2;\nqueue_depth = 0;\n" T_OK);
	snprintf(path, sizeof(path), "%s/bad.conf", tmpdir);
	ck_assert_int_eq(conf_load_file(&c, path, &e), -1);
	ck_assert_uint_eq(e.n, 1);
	w = expand("@D@/bad.conf:2: queue_depth: 0 is out of range (1 to 4096)");
	ck_assert_str_eq(e.msgs[0], w);
	free(w);
	conf_errors_free(&e);

	/* a syntax error names the line's text */
	write_file("syntax.conf", "threads = 2;\n\ntargets = ( { iqn = ; } );\n");
	snprintf(path, sizeof(path), "%s/syntax.conf", tmpdir);
	ck_assert_int_eq(conf_load_file(&c, path, &e), -1);
	ck_assert_uint_eq(e.n, 1);
	w = expand("@D@/syntax.conf:3: syntax error near 'targets = ( { iqn = ; } );' (a value missing");
	ck_assert_msg(!strncmp(e.msgs[0], w, strlen(w)), "%s", e.msgs[0]);
	free(w);
	conf_errors_free(&e);

	snprintf(path, sizeof(path), "%s/none.conf", tmpdir);
	ck_assert_int_eq(conf_load_file(&c, path, &e), -1);
	ck_assert(is_zeroed(&c));
	ck_assert_uint_eq(e.n, 1);
	w = expand("@D@/none.conf: cannot open: No such file or directory");
	ck_assert_str_eq(e.msgs[0], w);
	free(w);
	conf_errors_free(&e);

	/* errors may be dropped */
	ck_assert_int_eq(conf_load_file(&c, path, NULL), -1);
	ck_assert_int_eq(conf_load_string(&c, "threads = -1;", NULL, NULL), -1);
}
END_TEST

/* @include is resolved next to the including file, and its errors name it. */
START_TEST(test_include)
{
	char path[256], *w;
	struct conf c;
	struct conf_errors e;

	write_file("targets.inc", T_OK);
	write_file("main.conf", "threads = 3;\n@include \"targets.inc\"\n");
	snprintf(path, sizeof(path), "%s/main.conf", tmpdir);
	ck_assert_int_eq(conf_load_file(&c, path, &e), 0);
	ck_assert_uint_eq(c.threads, 3);
	ck_assert_str_eq(c.targets[0].iqn, IQN);
	conf_free(&c);
	conf_errors_free(&e);

	write_file("bad.inc", "queue_depth = 2;\nthreadz = 1;\n");
	write_file("main2.conf", "@include \"bad.inc\"\n" T_OK);
	snprintf(path, sizeof(path), "%s/main2.conf", tmpdir);
	ck_assert_int_eq(conf_load_file(&c, path, &e), -1);
	ck_assert_uint_eq(e.n, 1);
	w = expand("@D@/bad.inc:2: threadz: unknown key (did you mean threads?)");
	ck_assert_str_eq(e.msgs[0], w);
	free(w);
	conf_errors_free(&e);
}
END_TEST

static const char *const example_keys[] = {
	"listen", "tpgt", "threads", "state_dir", "control_socket", "queue_depth", "nop_interval",
	"nop_timeout", "login_timeout", "max_recv_data_segment_length", "max_burst_length",
	"first_burst_length", "immediate_data", "initial_r2t", "max_outstanding_r2t", "io_uring",
	"metrics_listen", "discovery_chap", "targets", "iqn", "alias", "initiators", "chap", "user", "secret",
	"mutual_user", "mutual_secret", "luns", "lun", "backstore", "path", "size", "block_size",
	"thin", "read_only", "removable", "sanitize", "direct", "offline", "serial", "vendor",
	"product",
};

START_TEST(test_example_file)
{
	struct conf c;
	struct conf_errors e;
	char *all, buf[65536];
	size_t n;
	FILE *f;

	int rc = conf_load_file_opts(&c, EXAMPLE_CONF, CONF_NO_PATH_CHECKS, &e);

	all = join_errors(&e);
	ck_assert_msg(rc == 0 && e.n == 0, "the example does not validate:\n%s", all);
	free(all);
	ck_assert_uint_ge(c.n_listen, 1);
	ck_assert_uint_ge(c.n_targets, 1);
	ck_assert_ptr_nonnull(c.metrics_listen);
	conf_free(&c);
	conf_errors_free(&e);

	/* it shows every key, each as a setting ("key =") */
	f = fopen(EXAMPLE_CONF, "r");
	ck_assert_ptr_nonnull(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	for (size_t i = 0; i < ARRAY_SIZE(example_keys); i++) {
		char pat[64];

		snprintf(pat, sizeof(pat), "%s =", example_keys[i]);
		ck_assert_msg(strstr(buf, pat), "the example does not show %s", example_keys[i]);
	}
}
END_TEST

/* ---- sizes and addresses ---------------------------------------------- */

static const struct {
	const char *s;
	int rc;
	uint64_t v;
} size_cases[] = {
	{ "0", 0, 0 },
	{ "512", 0, 512 },
	{ "512B", 0, 512 },
	{ "1K", 0, 1024 },
	{ "1k", 0, 1024 },
	{ "4KiB", 0, 4096 },
	{ "4KB", 0, 4096 },
	{ "10M", 0, 10ULL << 20 },
	{ "10G", 0, 10ULL << 30 },
	{ "10g", 0, 10ULL << 30 },
	{ "2T", 0, 2ULL << 40 },
	{ "0010G", 0, 10ULL << 30 },
	{ "16777215T", 0, 16777215ULL << 40 },
	{ "18446744073709551615", 0, UINT64_MAX },
	{ "18446744073709551616", -1, 0 },
	{ "16777216T", -1, 0 },
	{ "", -1, 0 },
	{ "G", -1, 0 },
	{ "-1", -1, 0 },
	{ "+1", -1, 0 },
	{ " 1", -1, 0 },
	{ "1 G", -1, 0 },
	{ "1G ", -1, 0 },
	{ "1.5G", -1, 0 },
	{ "1P", -1, 0 },
	{ "1Gi", -1, 0 },
	{ "1GiBx", -1, 0 },
	{ "1Gb", -1, 0 },
	{ "1BB", -1, 0 },
	{ "0x10", -1, 0 },
};

START_TEST(test_parse_size)
{
	uint64_t v = 12345;
	int rc = conf_parse_size(size_cases[_i].s, &v);

	ck_assert_msg(rc == size_cases[_i].rc, "\"%s\": rc %d", size_cases[_i].s, rc);
	if (rc == 0)
		ck_assert_msg(v == size_cases[_i].v, "\"%s\": %llu", size_cases[_i].s, (unsigned long long)v);
	else
		ck_assert_uint_eq(v, 12345);
}
END_TEST

static const struct {
	const char *s;
	const char *host, *port;   /* NULL host = rejected */
} listen_cases[] = {
	{ "127.0.0.1:3260", "127.0.0.1", "3260" },
	{ "1.2.3.4:860", "1.2.3.4", "860" },
	{ "10.0.0.1", "10.0.0.1", "3260" },
	{ "0.0.0.0:1", "0.0.0.0", "1" },
	{ "1.2.3.4:65535", "1.2.3.4", "65535" },
	{ "1.2.3.4:03260", "1.2.3.4", "3260" },
	{ "[::1]:3260", "::1", "3260" },
	{ "[::1]:3261", "::1", "3261" },
	{ "[::1]", "::1", "3260" },
	{ "[fe80::1:2]:860", "fe80::1:2", "860" },
	{ "::1", "::1", "3260" },
	{ "::", "::", "3260" },
	{ "[::ffff:1.2.3.4]:1", "::ffff:1.2.3.4", "1" },
	{ "", NULL, NULL },
	{ "host", NULL, NULL },
	{ "localhost:3260", NULL, NULL },
	{ "256.1.1.1", NULL, NULL },
	{ "1.2.3", NULL, NULL },
	{ "1.2.3.4:0", NULL, NULL },
	{ "1.2.3.4:65536", NULL, NULL },
	{ "1.2.3.4:003260", NULL, NULL },
	{ "1.2.3.4:", NULL, NULL },
	{ "1.2.3.4:+1", NULL, NULL },
	{ "1.2.3.4: 1", NULL, NULL },
	{ "1.2.3.4:32a", NULL, NULL },
	{ ":3260", NULL, NULL },
	{ "[1.2.3.4]:3260", NULL, NULL },
	{ "[::1", NULL, NULL },
	{ "[::1]:", NULL, NULL },
	{ "[::1]x", NULL, NULL },
	{ "[]:3260", NULL, NULL },
	{ "[::g]", NULL, NULL },
	{ "fe80::1%eth0", NULL, NULL },
};

START_TEST(test_parse_listen)
{
	char *host = (char *)"x", *port = (char *)"y";
	int rc = conf_parse_listen(listen_cases[_i].s, &host, &port);

	if (!listen_cases[_i].host) {
		ck_assert_msg(rc == -1, "\"%s\" accepted", listen_cases[_i].s);
		ck_assert_ptr_null(host);
		ck_assert_ptr_null(port);
		return;
	}
	ck_assert_msg(rc == 0, "\"%s\" rejected", listen_cases[_i].s);
	ck_assert_str_eq(host, listen_cases[_i].host);
	ck_assert_str_eq(port, listen_cases[_i].port);
	free(host);
	free(port);
}
END_TEST

/* ---- editing (conf/edit.c) -------------------------------------------- */

#ifdef HAVE_RBD
/* targetctl lun add of an rbd LUN: its keys are written as the file's,
 * and checked as the file's. */
START_TEST(test_doc_edit_rbd)
{
	static const char base[] = "targets = ( { iqn = \"" IQN "\"; } );\n";
	struct conf_lun_spec rbd = { .lun = 1, .backstore = "rbd", .size = "1G", .thin = -1,
				     .read_only = -1, .removable = -1, .direct = -1,
				     .pool = "rbd", .image = "vmfs1", .ceph_conf = "/etc/ceph/x.conf",
				     .client = "gw1" };
	struct conf_lun_spec bad = { .lun = 2, .backstore = "rbd", .thin = -1, .read_only = -1,
				     .removable = -1, .direct = -1, .pool = "rbd" };
	struct conf_errors errs = { 0 };
	struct conf_doc *d;
	struct conf c;
	char err[256], *text;

	d = conf_doc_parse(base, "t.conf", err, sizeof(err));
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(conf_doc_lun_add(d, IQN, &rbd, err, sizeof(err)), 0);
	text = conf_doc_text(d);
	ck_assert_ptr_nonnull(strstr(text, "image = \"vmfs1\""));
	ck_assert_ptr_nonnull(strstr(text, "conf = \"/etc/ceph/x.conf\""));
	load_good(&c, text, NOPATH);
	ck_assert_str_eq(c.targets[0].luns[0].backstore, "rbd");
	ck_assert_str_eq(c.targets[0].luns[0].rbd_pool, "rbd");
	ck_assert_str_eq(c.targets[0].luns[0].rbd_image, "vmfs1");
	ck_assert_str_eq(c.targets[0].luns[0].rbd_conf, "/etc/ceph/x.conf");
	ck_assert_str_eq(c.targets[0].luns[0].rbd_client, "gw1");
	ck_assert_uint_eq(c.targets[0].luns[0].size, 1u << 30);
	ck_assert_ptr_null(c.targets[0].luns[0].path);
	conf_free(&c);
	free(text);

	/* no image: refused with the file's message */
	ck_assert_int_eq(conf_doc_lun_add(d, IQN, &bad, err, sizeof(err)), 0);
	text = conf_doc_text(d);
	memset(&c, 0, sizeof(c));
	ck_assert_int_ne(conf_load_text(&c, text, "t.conf", CONF_NO_PATH_CHECKS, &errs), 0);
	ck_assert_uint_ge(errs.n, 1);
	ck_assert_ptr_nonnull(strstr(errs.msgs[0], "targets[0].luns[1].image: required for an rbd "
				     "backstore"));
	conf_errors_free(&errs);
	conf_free(&c);
	free(text);
	conf_doc_free(d);
}
END_TEST
#endif

/* Apply edits to a text, load the result: what targetctl does. */
START_TEST(test_doc_edits)
{
	static const char base[] = "listen = [ \"127.0.0.1:3260\" ];\ntargets = ( );\n";
	struct conf_lun_spec mem = { .lun = 3, .backstore = "memory", .size = "4M", .thin = -1,
				     .read_only = 1, .removable = -1, .direct = -1 };
	struct conf_chap chap = { .user = (char *)"alice", .secret = (char *)SECRET1 };
	struct conf_doc *d;
	struct conf c;
	char err[256], *text;

	d = conf_doc_parse(base, "t.conf", err, sizeof(err));
	ck_assert_ptr_nonnull(d);
	ck_assert_int_eq(conf_doc_target_add(d, IQN, "lab", err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_target_add(d, IQN, NULL, err, sizeof(err)), CONF_EDIT_EXISTS);
	ck_assert_int_eq(conf_doc_lun_add(d, IQN, &mem, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_lun_add(d, IQN, &mem, err, sizeof(err)), CONF_EDIT_EXISTS);
	ck_assert_int_eq(conf_doc_lun_add(d, "iqn.2026-11.org.example:none", &mem, err, sizeof(err)),
			 CONF_EDIT_NOT_FOUND);
	ck_assert_int_eq(conf_doc_lun_set(d, IQN, 3, "size", "8M", 0, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_lun_set(d, IQN, 3, "offline", NULL, 1, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_acl(d, IQN, "iqn.2026-11.org.example:h1", true, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_acl(d, IQN, "iqn.2026-11.org.example:h1", true, err, sizeof(err)),
			 CONF_EDIT_EXISTS);
	ck_assert_int_eq(conf_doc_chap(d, IQN, &chap, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_portal(d, "127.0.0.1:3261", 1, true, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_portal(d, "127.0.0.1", 1, true, err, sizeof(err)), CONF_EDIT_EXISTS);
	text = conf_doc_text(d);
	ck_assert_ptr_nonnull(text);
	load_good(&c, text, NOPATH);
	ck_assert_uint_eq(c.n_listen, 2);
	ck_assert_str_eq(c.listen[1].port, "3261");
	ck_assert_uint_eq(c.n_targets, 1);
	ck_assert_str_eq(c.targets[0].alias, "lab");
	ck_assert_uint_eq(c.targets[0].n_luns, 1);
	ck_assert_uint_eq(c.targets[0].luns[0].size, 8u << 20);
	ck_assert(c.targets[0].luns[0].offline && c.targets[0].luns[0].read_only);
	ck_assert_uint_eq(c.targets[0].n_initiators, 1);
	ck_assert_str_eq(c.targets[0].chap->user, "alice");
	conf_free(&c);
	free(text);

	/* and back */
	ck_assert_int_eq(conf_doc_lun_set(d, IQN, 3, "offline", NULL, 0, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_acl(d, IQN, "iqn.2026-11.org.example:h1", false, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_chap(d, IQN, NULL, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_portal(d, "127.0.0.1:3261", 1, false, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_portal(d, "127.0.0.1:3261", 1, false, err, sizeof(err)),
			 CONF_EDIT_NOT_FOUND);
	ck_assert_int_eq(conf_doc_lun_remove(d, IQN, 3, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_lun_remove(d, IQN, 3, err, sizeof(err)), CONF_EDIT_NOT_FOUND);
	text = conf_doc_text(d);
	load_good(&c, text, NOPATH);
	ck_assert_uint_eq(c.n_listen, 1);
	ck_assert_uint_eq(c.targets[0].n_luns, 0);
	ck_assert(c.targets[0].has_acl && c.targets[0].n_initiators == 0);   /* nobody, as asked */
	ck_assert_ptr_null(c.targets[0].chap);
	conf_free(&c);
	free(text);
	ck_assert_int_eq(conf_doc_target_remove(d, IQN, err, sizeof(err)), 0);
	ck_assert_int_eq(conf_doc_target_remove(d, IQN, err, sizeof(err)), CONF_EDIT_NOT_FOUND);
	conf_doc_free(d);

	/* a file without listen: the default portal stays when one is added */
	d = conf_doc_parse("targets = ( );\n", "t.conf", err, sizeof(err));
	ck_assert_int_eq(conf_doc_portal(d, "127.0.0.1:3270", 2, true, err, sizeof(err)), 0);
	text = conf_doc_text(d);
	load_good(&c, text, NOPATH);
	ck_assert_uint_eq(c.n_listen, 2);
	ck_assert_str_eq(c.listen[0].port, "3260");
	ck_assert_uint_eq(c.listen[1].tpgt, 2);
	conf_free(&c);
	free(text);
	conf_doc_free(d);
}
END_TEST

START_TEST(test_format_size)
{
	char b[32];
	uint64_t v;
	static const uint64_t sizes[] = { 1, 1000, 1024, 1536 * 1024, 32ull << 20, 3ull << 30,
					  5ull << 40, (5ull << 40) + 512 };

	for (size_t i = 0; i < ARRAY_SIZE(sizes); i++) {
		conf_format_size(sizes[i], b, sizeof(b));
		ck_assert_int_eq(conf_parse_size(b, &v), 0);
		ck_assert_uint_eq(v, sizes[i]);
	}
	conf_format_size(32ull << 20, b, sizeof(b));
	ck_assert_str_eq(b, "32M");
}
END_TEST

Suite *conf_suite(void)
{
	Suite *s = suite_create("conf");
	TCase *tc;

	tc = tcase_create("errors");
	tcase_add_unchecked_fixture(tc, conf_fixture_setup, conf_fixture_teardown);
	tcase_add_loop_test(tc, test_bad_case, 0, ARRAY_SIZE(bad_cases));
	tcase_add_test(tc, test_snapshot_keys);
	tcase_add_test(tc, test_many_errors);
	tcase_add_test(tc, test_suggestions);
	tcase_add_test(tc, test_long_values);
	tcase_add_loop_test(tc, test_permissions, 0, ARRAY_SIZE(perm_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("good");
	tcase_add_unchecked_fixture(tc, conf_fixture_setup, conf_fixture_teardown);
	tcase_add_test(tc, test_issue_example);
	tcase_add_test(tc, test_issue_example_paths);
	tcase_add_test(tc, test_defaults);
	tcase_add_test(tc, test_every_key);
	tcase_add_test(tc, test_first_burst_follows_max);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_conf_default);
	tcase_add_test(tc, test_good_paths);
	tcase_add_test(tc, test_block_device);
	suite_add_tcase(s, tc);

	tc = tcase_create("files");
	tcase_add_unchecked_fixture(tc, conf_fixture_setup, conf_fixture_teardown);
	tcase_add_test(tc, test_load_file);
	tcase_add_test(tc, test_include);
	tcase_add_test(tc, test_example_file);
	tcase_add_test(tc, test_doc_edits);
#ifdef HAVE_RBD
	tcase_add_test(tc, test_doc_edit_rbd);
#endif
	tcase_add_test(tc, test_format_size);
	suite_add_tcase(s, tc);

	tc = tcase_create("parse");
	tcase_add_loop_test(tc, test_parse_size, 0, ARRAY_SIZE(size_cases));
	tcase_add_loop_test(tc, test_parse_listen, 0, ARRAY_SIZE(listen_cases));
	suite_add_tcase(s, tc);
	return s;
}
