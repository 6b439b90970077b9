/*
 * targetd configuration: the libconfig file (targetd.conf(5)) parsed and
 * validated into plain structs. Nothing here opens backstores or sockets;
 * targetd/ turns a validated config into runtime objects.
 */
#ifndef CONF_CONFIG_H
#define CONF_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The defaults follow configure's directories (--sysconfdir,
 * --localstatedir, --runstatedir; Makefile.am passes them). */
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#ifndef LOCALSTATEDIR
#define LOCALSTATEDIR "/var"
#endif
#ifndef RUNSTATEDIR
#define RUNSTATEDIR "/run"
#endif
#define CONF_DEFAULT_FILE SYSCONFDIR "/targetd/targetd.conf"
#define CONF_DEFAULT_STATE_DIR LOCALSTATEDIR "/lib/targetd"
#define CONF_DEFAULT_CONTROL_SOCKET RUNSTATEDIR "/targetd/control.sock"
#define CONF_DEFAULT_IQN "iqn.2026-11.org.targetd:default"
#define CONF_DEFAULT_PORT "3260"

struct conf_chap {
	char *user, *secret;              /* initiator authenticates to us */
	char *mutual_user, *mutual_secret;/* we authenticate to the initiator */
};

/* An amount of space: bytes, or a percentage of the LUN's size (pct > 0). */
struct conf_space {
	uint64_t bytes;
	unsigned pct;           /* 1..100; 0: bytes applies */
};
/* The bytes of a conf_space for a LUN of lun_size bytes (0: not set). */
static inline uint64_t conf_space_bytes(const struct conf_space *s, uint64_t lun_size)
{
	return s->pct ? lun_size / 100 * s->pct + lun_size % 100 * s->pct / 100 : s->bytes;
}

/* conf_lun.zero_detect: "off", "on" (zero in place), "unmap" (deallocate) */
enum { CONF_ZD_OFF = 0, CONF_ZD_ON, CONF_ZD_UNMAP };

struct conf_fault;   /* conf/fault.h */

struct conf_lun {
	unsigned lun;
	char *backstore;        /* "file", "block", "memory", "rbd" */
	char *path;             /* file/block; NULL for memory */
	uint64_t size;          /* bytes; 0 = from the file or device */
	unsigned block_size;    /* 512 (default) or 4096 */
	bool thin;              /* default true */
	bool read_only;
	bool removable;
	bool sanitize;          /* allow SANITIZE */
	bool direct;            /* O_DIRECT */
	unsigned zero_detect;   /* CONF_ZD_*: what a WRITE of zeroes does (thin) */
	struct conf_space hard_limit;  /* space the LUN may hold (thin); 0 = none */
	struct conf_space soft_threshold; /* space held that warns (thin); 0 = none */

	bool offline;           /* media access answers NOT READY (targetctl lun offline) */
	char *serial, *vendor, *product;  /* NULL = derived */
	struct conf_fault *faults;        /* fault-injection rules (targetd-faults(7)) */
	unsigned n_faults;
	/* A snapshot (targetctl lun snapshot): a read-only LUN whose file was
	 * cloned from LUN snapshot_of of the same target (-1: not a
	 * snapshot), named snapshot_name, taken at snapshot_time (UTC,
	 * "2026-12-01T13:20:00Z"; informational). */
	int snapshot_of;
	char *snapshot_name;
	char *snapshot_time;
	char *rbd_pool, *rbd_image;       /* rbd: the image */
	char *rbd_conf, *rbd_client;      /* rbd: ceph.conf, client id (NULL = defaults) */
	int line;
};

/* A snapshot name: 1 to CONF_SNAPSHOT_NAME_MAX of [A-Za-z0-9._+-], not
 * starting with '.' or '-' (it becomes part of a file name). NULL when
 * name is one, else why not. */
#define CONF_SNAPSHOT_NAME_MAX 64
static inline bool conf_lun_is_snapshot(const struct conf_lun *l)
{
	return l->snapshot_name && l->snapshot_of >= 0;
}
const char *conf_snapshot_name_error(const char *name);

struct conf_target {
	char *iqn;
	char *alias;
	char **initiators;      /* allow-list; n_initiators == 0 and !has_acl = anyone */
	unsigned n_initiators;
	bool has_acl;
	struct conf_chap *chap; /* NULL = no CHAP */
	struct conf_lun *luns;
	unsigned n_luns;
	struct conf_fault *faults;  /* rules of the target's connections, or of all its LUNs */
	unsigned n_faults;
	int line;
};

struct conf_listen {
	char *host;             /* numeric address, IPv6 without brackets */
	char *port;             /* numeric port */
	unsigned tpgt;          /* target portal group tag (1 default) */
};

/* A target portal group (the portals whose listen entries carry its tpgt):
 * one SCSI target port and one ALUA target port group. */
enum conf_alua_state {
	CONF_ALUA_ACTIVE_OPTIMIZED = 0,
	CONF_ALUA_ACTIVE_NON_OPTIMIZED = 1,
	CONF_ALUA_STANDBY = 2,
	CONF_ALUA_UNAVAILABLE = 3,
};
struct conf_portal_group {
	unsigned tpgt;
	enum conf_alua_state state;  /* default active/optimized */
	bool preferred;              /* RTPG PREF bit */
	bool remote;                 /* served by another gateway of the same targets
	                              * (shared storage): reported, no portal here */
	int line;
};

/* Resource limits (targetd.conf(5), RESOURCE LIMITS): what one peer or
 * all of them together may make the daemon hold. */
struct conf_limits {
	unsigned max_connections;            /* TCP connections, all portals (1024) */
	unsigned max_connections_per_target; /* logged-in connections of one target (256) */
	unsigned max_sessions_per_initiator; /* sessions of one initiator name, all targets (64) */
	uint64_t max_buffer_per_connection;  /* data buffer bytes of one connection's commands (64 MiB) */
	uint64_t max_buffer_total;           /* data buffer bytes of all commands (1 GiB) */
	uint64_t max_pending_tx_per_connection; /* queued unsent bytes of responses (NOP-In echoes,
	                                      * Rejects, text) before the connection stops
	                                      * being read (16 MiB) */
	unsigned max_text_response;          /* bytes of one Text Response (1 MiB) */
	unsigned data_out_timeout;           /* seconds a WRITE waits for its Data-Out (20) */
};

struct conf {
	char *file;             /* name used in messages ("<embedded>" for default) */
	struct conf_listen *listen;
	unsigned n_listen;
	unsigned threads;       /* 0 = one per CPU */
	char *state_dir;
	char *control_socket;
	unsigned queue_depth;   /* CmdSN window per session, default 128 */
	unsigned nop_interval;  /* seconds of idleness before a NOP-In ping (default 15, 0 = off) */
	unsigned nop_timeout;   /* seconds to wait for the NOP-Out answer (default 30) */
	unsigned login_timeout; /* seconds a connection may take to log in (default 15) */
	unsigned max_recv_data_segment_length; /* what we accept, default 262144 */
	unsigned max_burst_length;             /* default 1048576 */
	unsigned first_burst_length;           /* default 65536 */
	bool immediate_data;                   /* default true */
	bool initial_r2t;                      /* default false */
	unsigned max_outstanding_r2t;          /* default 1 */
	bool use_io_uring;                     /* default true */
	struct conf_target *targets;
	unsigned n_targets;
	unsigned pool_soft_threshold; /* percent of a file LUN's file system used
	                               * that warns thin LUNs (06/38/07); 0 = none */

	struct conf_chap *discovery_chap; /* discovery sessions authenticate (NULL: no) */
	char *metrics_listen;   /* "address:port" of the metrics endpoint; NULL = off */
	char *http_listen;      /* "address:port" of the dashboard; NULL = off */
	struct conf_portal_group *portal_groups; /* ALUA states per tpgt; groups not
	                                          * listed are active/optimized */
	unsigned n_portal_groups;
	struct conf_limits limits;
};

/* Collected errors, each "FILE:LINE: message" (or "FILE: message"). */
struct conf_errors {
	char **msgs;
	unsigned n;
};

/* Parse and validate. Returns 0, or -1 with every problem in errs.
 * c and errs need not be initialised: both are overwritten (previous
 * contents are not freed). On -1, c is left zeroed (conf_free-safe) and
 * errs holds the messages (free with conf_errors_free); errs may be NULL. */
int conf_load_file(struct conf *c, const char *path, struct conf_errors *errs);
int conf_load_string(struct conf *c, const char *text, const char *name, struct conf_errors *errs);
/* The file's whole text (malloc'ed), or NULL with "FILE: cannot open: ..."
 * in errs. */
char *conf_read_file(const char *path, struct conf_errors *errs);
/* Parse text read from path: messages name path, @include is relative to
 * its directory. As conf_load_file_opts otherwise. */
int conf_load_text(struct conf *c, const char *text, const char *path, unsigned flags,
		   struct conf_errors *errs);

/* Flags for the _opts variants. */
#define CONF_NO_PATH_CHECKS 0x1u  /* do not stat/access backstore paths */
int conf_load_file_opts(struct conf *c, const char *path, unsigned flags, struct conf_errors *errs);
int conf_load_string_opts(struct conf *c, const char *text, const char *name, unsigned flags,
			  struct conf_errors *errs);
/* The embedded default: 127.0.0.1:3260, one target, LUN 0 = 1 GiB sparse
 * file "lun0.img" in state_dir. */
void conf_default(struct conf *c, const char *state_dir);
void conf_free(struct conf *c);
void conf_errors_free(struct conf_errors *e);
/* What the command line puts over the file: -s DIR (state_dir, and with
 * the embedded default the control socket beside it) and -l (the whole
 * listen list). */
struct conf_overrides {
	const char *state_dir;        /* NULL: none */
	const char *control_socket;   /* NULL: none */
	const char *const *listen;    /* n_listen addresses, 0: none */
	unsigned n_listen;
};
/* Apply o to c. 0, or -1 with the reason in err (an address that is not
 * one). */
int conf_apply_overrides(struct conf *c, const struct conf_overrides *o, char *err, size_t cap);

/* "10G" -> bytes; accepts K/M/G/T (powers of 1024), optional "iB"/"B".
 * Returns 0 or -1. */
int conf_parse_size(const char *s, uint64_t *out);
/* bytes as conf_parse_size reads it back exactly: "32M", "1536K", "1000". */
void conf_format_size(uint64_t bytes, char *buf, size_t cap);
/* "127.0.0.1:3260", "[::1]:3260", "host" (port 3260). Returns 0 or -1.
 * Hosts are numeric only (inet_pton): "1.2.3.4", "[::1]", or a bare IPv6
 * address such as "::1" (which then cannot carry a port). Ports are 1..65535
 * and come back in canonical decimal. On -1 *host and *port are NULL;
 * on 0 both are malloc'ed. */
int conf_parse_listen(const char *s, char **host, char **port);
/* Why s is not a listen address, written into buf: "is not a numeric
 * address ...", or "numeric address expected: 127.0.0.1:P (...)" for
 * "localhost:P"; NULL when it is one. */
const char *conf_listen_error(const char *s, char *buf, size_t cap);

/* ---- editing (conf/edit.c) ---------------------------------------------
 * A configuration as a libconfig document, changed by targetctl's
 * commands and then validated whole (conf_load_text) like the file. The
 * edits return 0 or one of CONF_EDIT_* with a message in err. */
enum { CONF_EDIT_NOT_FOUND = 1, CONF_EDIT_EXISTS = 2, CONF_EDIT_BAD = 3 };
struct conf_doc;
struct conf_doc *conf_doc_parse(const char *text, const char *name, char *err, size_t cap);
void conf_doc_free(struct conf_doc *d);
char *conf_doc_text(struct conf_doc *d);   /* malloc'ed; libconfig keeps no comments */
int conf_doc_target_add(struct conf_doc *d, const char *iqn, const char *alias, char *err,
			size_t cap);
int conf_doc_target_remove(struct conf_doc *d, const char *iqn, char *err, size_t cap);
/* A LUN to add: strings as the file would hold them; -1 = key left out. */
struct conf_lun_spec {
	unsigned lun;
	const char *backstore, *path, *size;
	unsigned block_size;       /* 0 = left out */
	int thin, read_only, removable, direct;
	const char *serial, *vendor, *product;
	/* a snapshot (snapshot_name not NULL): of LUN snapshot_of */
	unsigned snapshot_of;
	const char *snapshot_name, *snapshot_time;
	const char *pool, *image, *ceph_conf, *client;  /* rbd: pool, image, conf, client */
};
int conf_doc_lun_add(struct conf_doc *d, const char *iqn, const struct conf_lun_spec *l,
		     char *err, size_t cap);
int conf_doc_lun_remove(struct conf_doc *d, const char *iqn, unsigned lun, char *err, size_t cap);
/* Set key of a LUN to the string str, or (str NULL) a boolean: true is
 * written, false removes the key (its default). */
int conf_doc_lun_set(struct conf_doc *d, const char *iqn, unsigned lun, const char *key,
		     const char *str, int boolean, char *err, size_t cap);
int conf_doc_acl(struct conf_doc *d, const char *iqn, const char *initiator, bool add, char *err,
		 size_t cap);
/* Replace the target's chap group by c (NULL: no CHAP). */
int conf_doc_chap(struct conf_doc *d, const char *iqn, const struct conf_chap *c, char *err,
		  size_t cap);
/* Add or remove a listen address (a missing listen key is the default
 * portal, kept when one is added). */
int conf_doc_portal(struct conf_doc *d, const char *addr, unsigned tpgt, bool add, char *err,
		    size_t cap);

#endif
