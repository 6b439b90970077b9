/*
 * targetctl: the commands that change what the daemon serves, and the
 * configuration commands. Each builds the parameters of one control
 * method (targetctl(8), PROTOCOL) and prints what changed, or the
 * daemon's JSON with -j.
 */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tools/targetctl.h"

#define ARRAY_SIZE(a) (sizeof(a) / sizeof((a)[0]))

/* An option of a command: --name (a flag) or --name VALUE / --name=VALUE. */
struct opt {
	const char *name;
	bool has_arg;
	bool set;
	const char *val;
};

/* Split argv[1..] into options (of opts) and positional arguments (at most
 * max, at least min). 0, or a usage error (2). */
static int parse(int argc, char **argv, struct opt *opts, size_t n_opts, char **pos, int min,
		 int max, int *n_pos, const char *usage)
{
	*n_pos = 0;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		size_t k;

		if (a[0] != '-' || !a[1] || (a[1] != '-' && strcmp(a, "-f"))) {
			if (*n_pos == max)
				return tc_usage_error("usage: targetctl %s", usage);
			pos[(*n_pos)++] = argv[i];
			continue;
		}
		if (!strcmp(a, "-f"))
			a = "--force";
		for (k = 0; k < n_opts; k++) {
			size_t l = strlen(opts[k].name);

			if (strncmp(a + 2, opts[k].name, l) || (a[2 + l] && a[2 + l] != '='))
				continue;
			opts[k].set = true;
			if (!opts[k].has_arg) {
				if (a[2 + l])
					return tc_usage_error("--%s takes no value", opts[k].name);
			} else if (a[2 + l] == '=') {
				opts[k].val = a + 3 + l;
			} else if (i + 1 < argc) {
				opts[k].val = argv[++i];
			} else {
				return tc_usage_error("--%s needs a value", opts[k].name);
			}
			break;
		}
		if (k == n_opts)
			return tc_usage_error("unknown option %s; usage: targetctl %s", argv[i], usage);
	}
	if (*n_pos < min)
		return tc_usage_error("usage: targetctl %s", usage);
	return 0;
}

static struct opt *opt_find(struct opt *opts, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(opts[i].name, name))
			return &opts[i];
	return NULL;
}

static void put_str(struct json_object *p, const char *k, const char *v)
{
	if (v)
		json_object_object_add(p, k, json_object_new_string(v));
}

static void put_true(struct json_object *p, const char *k, bool v)
{
	if (v)
		json_object_object_add(p, k, json_object_new_boolean(1));
}

/* What a change did: its lines, then where it was written. */
static void show_change(struct json_object *r)
{
	struct json_object *ch = tc_get(r, "changes"), *pers = tc_get(r, "persisted");

	for (size_t i = 0; ch && i < json_object_array_length(ch); i++)
		printf("%s\n", json_object_get_string(json_object_array_get_idx(ch, i)));
	if (pers && json_object_get_boolean(pers))
		printf("saved in %s\n", tc_gets(r, "file"));
	else if (pers)
		fprintf(stderr, "targetctl: warning: applied but NOT saved in %s: %s\n"
				"  the change is lost at the next restart\n",
			tc_gets(r, "file"), tc_gets(r, "warning"));
	if (tc_get(r, "warning") && pers && json_object_get_boolean(pers))
		fprintf(stderr, "targetctl: warning: %s\n", tc_gets(r, "warning"));
}

static int change(const char *method, struct json_object *params)
{
	return tc_show(method, params, show_change);
}

/* ---- targets ------------------------------------------------------------------ */

int tc_target_add(int argc, char **argv)
{
	struct opt o[] = { { "alias", true, false, NULL } };
	char *pos[1];
	int n, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 1, 1, &n, "target add IQN [--alias TEXT]");
	struct json_object *p;

	if (rc)
		return rc;
	p = json_object_new_object();
	put_str(p, "iqn", pos[0]);
	put_str(p, "alias", o[0].val);
	return change("target.add", p);
}

int tc_target_remove(int argc, char **argv)
{
	struct opt o[] = { { "force", false, false, NULL } };
	char *pos[1];
	int n, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 1, 1, &n, "target remove IQN [--force]");
	struct json_object *p;

	if (rc)
		return rc;
	p = json_object_new_object();
	put_str(p, "iqn", pos[0]);
	put_true(p, "force", o[0].set);
	return change("target.remove", p);
}

/* ---- LUNs ------------------------------------------------------------------------ */

static struct json_object *target_lun(char **pos, int *rc)
{
	int lun = tc_lun_arg(pos[1]);
	struct json_object *p;

	if (lun < 0) {
		*rc = 2;
		return NULL;
	}
	p = json_object_new_object();
	put_str(p, "target", pos[0]);
	json_object_object_add(p, "lun", json_object_new_int(lun));
	return p;
}

const char tc_lun_add_usage[] =
	"lun add TARGET LUN file|block|memory|rbd [PATH] [--size SIZE] [--block-size 512|4096]\n"
		"    [--thick] [--read-only] [--removable] [--direct] [--serial S] [--vendor V] "
		"[--product P]\n"
		"    [--pool POOL --image IMAGE [--ceph-conf FILE] [--client ID]]   (rbd)";

int tc_lun_add(int argc, char **argv)
{
	const char *usage = tc_lun_add_usage;
	struct opt o[] = {
		{ "size", true, false, NULL }, { "block-size", true, false, NULL },
		{ "thick", false, false, NULL }, { "thin", false, false, NULL },
		{ "read-only", false, false, NULL }, { "removable", false, false, NULL },
		{ "direct", false, false, NULL }, { "serial", true, false, NULL },
		{ "vendor", true, false, NULL }, { "product", true, false, NULL },
		{ "pool", true, false, NULL }, { "image", true, false, NULL },
		{ "ceph-conf", true, false, NULL }, { "client", true, false, NULL },
	};
	char *pos[4], *end;
	int n, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 3, 4, &n, usage);
	struct json_object *p;
	struct opt *bs;

	if (rc)
		return rc;
	if (!(p = target_lun(pos, &rc)))
		return rc;
	put_str(p, "backstore", pos[2]);
	if (n > 3)
		put_str(p, "path", pos[3]);
	put_str(p, "size", opt_find(o, ARRAY_SIZE(o), "size")->val);
	bs = opt_find(o, ARRAY_SIZE(o), "block-size");
	if (bs->set) {
		long v = strtol(bs->val, &end, 10);

		if (*end || v <= 0) {
			json_object_put(p);
			return tc_usage_error("--block-size wants 512 or 4096, not '%s'", bs->val);
		}
		json_object_object_add(p, "block_size", json_object_new_int((int)v));
	}
	if (opt_find(o, ARRAY_SIZE(o), "thick")->set)
		json_object_object_add(p, "thin", json_object_new_boolean(0));
	put_true(p, "thin", opt_find(o, ARRAY_SIZE(o), "thin")->set);
	put_true(p, "read_only", opt_find(o, ARRAY_SIZE(o), "read-only")->set);
	put_true(p, "removable", opt_find(o, ARRAY_SIZE(o), "removable")->set);
	put_true(p, "direct", opt_find(o, ARRAY_SIZE(o), "direct")->set);
	put_str(p, "serial", opt_find(o, ARRAY_SIZE(o), "serial")->val);
	put_str(p, "vendor", opt_find(o, ARRAY_SIZE(o), "vendor")->val);
	put_str(p, "product", opt_find(o, ARRAY_SIZE(o), "product")->val);
	put_str(p, "pool", opt_find(o, ARRAY_SIZE(o), "pool")->val);
	put_str(p, "image", opt_find(o, ARRAY_SIZE(o), "image")->val);
	put_str(p, "conf", opt_find(o, ARRAY_SIZE(o), "ceph-conf")->val);
	put_str(p, "client", opt_find(o, ARRAY_SIZE(o), "client")->val);
	return change("lun.add", p);
}

int tc_lun_remove(int argc, char **argv)
{
	struct opt o[] = { { "force", false, false, NULL } };
	char *pos[2];
	int n, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 2, 2, &n,
			  "lun remove TARGET LUN [--force]");
	struct json_object *p;

	if (rc || !(p = target_lun(pos, &rc)))
		return rc;
	put_true(p, "force", o[0].set);
	return change("lun.remove", p);
}

int tc_lun_resize(int argc, char **argv)
{
	struct opt o[] = { { "shrink", false, false, NULL }, { "force", false, false, NULL } };
	char *pos[3];
	int n, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 3, 3, &n,
			  "lun resize TARGET LUN SIZE [--shrink --force]");
	struct json_object *p;

	if (rc || !(p = target_lun(pos, &rc)))
		return rc;
	put_str(p, "size", pos[2]);
	put_true(p, "shrink", o[0].set);
	put_true(p, "force", o[1].set);
	return change("lun.resize", p);
}

static int lun_state(int argc, char **argv, const char *method, const char *usage)
{
	char *pos[2];
	int n, rc = parse(argc, argv, NULL, 0, pos, 2, 2, &n, usage);
	struct json_object *p;

	if (rc || !(p = target_lun(pos, &rc)))
		return rc;
	return change(method, p);
}

int tc_lun_offline(int argc, char **argv)
{
	return lun_state(argc, argv, "lun.offline", "lun offline TARGET LUN");
}

int tc_lun_online(int argc, char **argv)
{
	return lun_state(argc, argv, "lun.online", "lun online TARGET LUN");
}

/* ---- clones and snapshots ------------------------------------------------------------ */

/* What a clone or snapshot made. */
static void show_clone(struct json_object *r)
{
	bool ref = json_object_get_boolean(tc_get(r, "reflinked"));
	char sz[32], cp[32];

	tc_size(tc_getu(r, tc_get(r, "path") ? "file_bytes" : "size_bytes"), sz, sizeof(sz));
	tc_size(tc_getu(r, "copied_bytes"), cp, sizeof(cp));
	if (tc_get(r, "path") && ref)
		printf("LUN %llu: %s, a reflink of its %s (no block copied)\n",
		       (unsigned long long)tc_getu(r, "lun"), tc_gets(r, "path"), sz);
	else if (tc_get(r, "path"))
		printf("LUN %llu: %s, a copy of its %s: %s of data copied, holes kept\n",
		       (unsigned long long)tc_getu(r, "lun"), tc_gets(r, "path"), sz, cp);
	else
		printf("LUN %llu reverted to snapshot LUN %llu (%s, by %s)\n",
		       (unsigned long long)tc_getu(r, "lun"), (unsigned long long)tc_getu(r, "snapshot_lun"),
		       sz, ref ? "reflink" : "copy");
	show_change(r);
}

/* The options every clone command takes; p gets target, copy, path. */
static struct json_object *clone_params(struct opt *o, size_t n, int lun, int *rc)
{
	struct json_object *p;

	if (lun < 0) {
		*rc = 2;
		return NULL;
	}
	p = json_object_new_object();
	json_object_object_add(p, "lun", json_object_new_int(lun));
	put_str(p, "target", opt_find(o, n, "target")->val);
	put_true(p, "copy", opt_find(o, n, "copy")->set);
	if (opt_find(o, n, "path"))
		put_str(p, "path", opt_find(o, n, "path")->val);
	return p;
}

int tc_lun_clone(int argc, char **argv)
{
	static const char usage[] = "lun clone SRC NEW [--target IQN] [--path FILE] [--copy]";
	struct opt o[] = { { "target", true, false, NULL }, { "path", true, false, NULL },
			   { "copy", false, false, NULL } };
	char *pos[2];
	int n, nl, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 2, 2, &n, usage);
	struct json_object *p;

	if (rc || !(p = clone_params(o, ARRAY_SIZE(o), tc_lun_arg(pos[0]), &rc)))
		return rc;
	if ((nl = tc_lun_arg(pos[1])) < 0) {
		json_object_put(p);
		return 2;
	}
	json_object_object_add(p, "new", json_object_new_int(nl));
	return tc_show("lun.clone", p, show_clone);
}

int tc_lun_snapshot(int argc, char **argv)
{
	static const char usage[] =
		"lun snapshot LUN NAME [--target IQN] [--lun N] [--path FILE] [--copy]";
	struct opt o[] = { { "target", true, false, NULL }, { "path", true, false, NULL },
			   { "copy", false, false, NULL }, { "lun", true, false, NULL } };
	char *pos[2];
	int n, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 2, 2, &n, usage);
	struct json_object *p;

	if (rc || !(p = clone_params(o, ARRAY_SIZE(o), tc_lun_arg(pos[0]), &rc)))
		return rc;
	put_str(p, "name", pos[1]);
	if (o[3].set) {
		int nl = tc_lun_arg(o[3].val);

		if (nl < 0) {
			json_object_put(p);
			return 2;
		}
		json_object_object_add(p, "new", json_object_new_int(nl));
	}
	return tc_show("lun.snapshot", p, show_clone);
}

int tc_lun_revert(int argc, char **argv)
{
	static const char usage[] = "lun revert LUN SNAPSHOT [--target IQN] [--copy]";
	struct opt o[] = { { "target", true, false, NULL }, { "copy", false, false, NULL } };
	char *pos[2];
	int n, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 2, 2, &n, usage);
	struct json_object *p;

	if (rc || !(p = clone_params(o, ARRAY_SIZE(o), tc_lun_arg(pos[0]), &rc)))
		return rc;
	put_str(p, "snapshot", pos[1]);
	return tc_show("lun.revert", p, show_clone);
}

/* ---- ACL and CHAP -------------------------------------------------------------------- */

static int acl(int argc, char **argv, const char *method, const char *usage)
{
	char *pos[2];
	int n, rc = parse(argc, argv, NULL, 0, pos, 2, 2, &n, usage);
	struct json_object *p;

	if (rc)
		return rc;
	p = json_object_new_object();
	put_str(p, "target", pos[0]);
	put_str(p, "initiator", pos[1]);
	return change(method, p);
}

int tc_acl_add(int argc, char **argv)
{
	return acl(argc, argv, "acl.add", "acl add TARGET INITIATOR");
}

int tc_acl_remove(int argc, char **argv)
{
	return acl(argc, argv, "acl.remove", "acl remove TARGET INITIATOR");
}

/* A secret given as "-" is read from standard input (one line), so that
 * it does not show in ps or the shell's history. */
static const char *secret_arg(const char *s, char *buf, size_t cap)
{
	size_t n;

	if (strcmp(s, "-"))
		return s;
	if (isatty(STDIN_FILENO))
		fprintf(stderr, "secret: ");
	if (!fgets(buf, (int)cap, stdin))
		tc_die("no secret on standard input");
	n = strcspn(buf, "\r\n");
	buf[n] = 0;
	return buf;
}

int tc_chap_set(int argc, char **argv)
{
	static const char usage[] =
		"chap set TARGET USER SECRET [--mutual-user USER --mutual-secret SECRET]\n"
		"       targetctl chap set TARGET --off       (SECRET - : read from stdin)";
	struct opt o[] = { { "mutual-user", true, false, NULL },
			   { "mutual-secret", true, false, NULL },
			   { "off", false, false, NULL } };
	char *pos[3], b1[512], b2[512];
	int n, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 1, 3, &n, usage);
	struct json_object *p;

	if (rc)
		return rc;
	if (o[2].set ? n != 1 : n != 3)
		return tc_usage_error("usage: targetctl %s", usage);
	p = json_object_new_object();
	put_str(p, "target", pos[0]);
	if (o[2].set) {
		put_true(p, "off", true);
		return change("chap.set", p);
	}
	put_str(p, "user", pos[1]);
	put_str(p, "secret", secret_arg(pos[2], b1, sizeof(b1)));
	put_str(p, "mutual_user", o[0].val);
	if (o[1].val)
		put_str(p, "mutual_secret", secret_arg(o[1].val, b2, sizeof(b2)));
	return change("chap.set", p);
}

/* ---- sessions and portals ---------------------------------------------------------------- */

static void show_closed(struct json_object *r)
{
	printf("session %llu: %llu connection%s closed\n", (unsigned long long)tc_getu(r, "tsih"),
	       (unsigned long long)tc_getu(r, "connections_closed"),
	       tc_getu(r, "connections_closed") == 1 ? "" : "s");
}

static int number(const char *s, long max, long *out)
{
	char *end;

	errno = 0;
	*out = strtol(s, &end, 0);
	return *s && !*end && !errno && *out >= 0 && *out <= max ? 0 : -1;
}

int tc_session_close(int argc, char **argv)
{
	struct opt o[] = { { "cid", true, false, NULL } };
	char *pos[1];
	int n, rc = parse(argc, argv, o, ARRAY_SIZE(o), pos, 1, 1, &n,
			  "session close TSIH [--cid CID]");
	struct json_object *p;
	long v;

	if (rc)
		return rc;
	if (number(pos[0], 65535, &v))
		return tc_usage_error("TSIH is a number (targetctl sessions shows it), not '%s'", pos[0]);
	p = json_object_new_object();
	json_object_object_add(p, "tsih", json_object_new_int((int)v));
	if (o[0].set) {
		if (number(o[0].val, 65535, &v)) {
			json_object_put(p);
			return tc_usage_error("--cid wants a number, not '%s'", o[0].val);
		}
		json_object_object_add(p, "cid", json_object_new_int((int)v));
	}
	return tc_show("session.close", p, show_closed);
}

static int portal(int argc, char **argv, bool add)
{
	struct opt o[] = { { "tpgt", true, false, NULL } };
	char *pos[1];
	int n, rc = parse(argc, argv, o, add ? 1 : 0, pos, 1, 1, &n,
			  add ? "portal add ADDRESS:PORT [--tpgt N]" : "portal remove ADDRESS:PORT");
	struct json_object *p;
	long v;

	if (rc)
		return rc;
	p = json_object_new_object();
	put_str(p, "address", pos[0]);
	if (o[0].set) {
		if (number(o[0].val, 65535, &v)) {
			json_object_put(p);
			return tc_usage_error("--tpgt wants a number, not '%s'", o[0].val);
		}
		json_object_object_add(p, "tpgt", json_object_new_int((int)v));
	}
	return change(add ? "portal.add" : "portal.remove", p);
}

int tc_portal_add(int argc, char **argv)
{
	return portal(argc, argv, true);
}

int tc_portal_remove(int argc, char **argv)
{
	return portal(argc, argv, false);
}

/* ---- the configuration ---------------------------------------------------------------------- */

static void show_overrides(struct json_object *o)
{
	json_object_object_foreach(o, key, val)
		printf("# from the command line: %s = %s\n", key, json_object_to_json_string(val));
}

static void show_config(struct json_object *r)
{
	if (!tc_get(r, "text") || !json_object_get_string(tc_get(r, "text"))) {
		printf("# the embedded default configuration (no file)\n");
		return;
	}
	fputs(tc_gets(r, "text"), stdout);
	show_overrides(tc_get(r, "overrides"));
}

int tc_config_show(int argc, char **argv)
{
	return tc_plain_args(argc, argv, 0, 0, "config show") ?: tc_show("config.show", NULL, show_config);
}

/* Write text into a new temporary file; its name in path. */
static int temp_with(char *path, size_t cap, const char *what, const char *text)
{
	const char *dir = getenv("TMPDIR");
	FILE *f;
	int fd;

	snprintf(path, cap, "%s/targetctl-%s.XXXXXX", dir && *dir ? dir : "/tmp", what);
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		return -1;
	}
	fputs(text ? text : "", f);
	return fclose(f);
}

/* diff -u between the file on disk and the running configuration; exit
 * status 0 when they are the same, 1 when they differ (like diff). */
int tc_config_diff(int argc, char **argv)
{
	struct json_object *rep, *r;
	char a[512], b[512], la[600], lb[600];
	int rc, st;
	pid_t pid;

	if ((rc = tc_plain_args(argc, argv, 0, 0, "config diff")))
		return rc;
	rep = tc_rpc("config.diff", NULL);
	r = tc_result(rep);
	if (tc_json) {
		tc_print_json(r);
		rc = json_object_get_boolean(tc_get(r, "same")) ? 0 : 1;
		json_object_put(rep);
		return rc;
	}
	if (tc_get(r, "error"))
		tc_die("%s", tc_gets(r, "error"));
	if (json_object_get_boolean(tc_get(r, "same"))) {
		printf("%s is what the daemon runs\n", tc_gets(r, "file"));
		show_overrides(tc_get(r, "overrides"));
		json_object_put(rep);
		return 0;
	}
	if (temp_with(a, sizeof(a), "file", tc_gets(r, "on_disk")) ||
	    temp_with(b, sizeof(b), "running", tc_gets(r, "running")))
		tc_die("cannot write a temporary file: %s", strerror(errno));
	snprintf(la, sizeof(la), "%s (the file)", tc_gets(r, "file"));
	snprintf(lb, sizeof(lb), "the running configuration");
	fflush(stdout);
	pid = fork();
	if (pid == 0) {
		execlp("diff", "diff", "-u", "--label", la, "--label", lb, a, b, (char *)NULL);
		fprintf(stderr, "targetctl: diff: %s\n", strerror(errno));
		_exit(2);
	}
	st = 0;
	if (pid < 0 || waitpid(pid, &st, 0) < 0)
		st = 2 << 8;
	unlink(a);
	unlink(b);
	printf("# `targetctl reload` makes the daemon run the file\n");
	json_object_put(rep);
	return WIFEXITED(st) ? WEXITSTATUS(st) : 2;
}
