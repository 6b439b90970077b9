/*
 * Detaching, logs to the journal, the pid file, the portal check
 * (daemon.h).
 *
 * DESIGN (threads): the journal sink is called by whichever thread logs;
 * it keeps its buffers on the stack and sd_journal_sendv() is safe to call
 * from several threads. The pid file is created and removed by the main
 * thread only.
 */
#include "config.h"
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include <systemd/sd-journal.h>
#include "targetd/daemon.h"

bool daemon_stderr_is_journal(void)
{
	const char *e = getenv("JOURNAL_STREAM");
	unsigned long long dev, ino;
	struct stat st;

	if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2 || fstat(STDERR_FILENO, &st))
		return false;
	return (unsigned long long)st.st_dev == dev && (unsigned long long)st.st_ino == ino;
}

/* Append "NAME=value" to buf; one iovec for it. */
static bool field(struct iovec *iov, size_t *k, size_t max, char *buf, size_t cap, size_t *used,
		  const char *name, const char *value)
{
	int w;

	if (*k >= max || *used >= cap)
		return false;
	w = snprintf(buf + *used, cap - *used, "%s=%s", name, value);
	if (w < 0 || (size_t)w >= cap - *used)
		return false;
	iov[*k].iov_base = buf + *used;
	iov[*k].iov_len = (size_t)w;
	(*k)++;
	*used += (size_t)w + 1;
	return true;
}

size_t daemon_journal_fields(int level, const char *line, const char *event,
			     const struct log_kv *kv, size_t n, struct iovec *iov, size_t max,
			     char *buf, size_t cap)
{
	size_t k = 0, used = 0;
	char prio[4];

	snprintf(prio, sizeof(prio), "%d", level & 7);
	field(iov, &k, max, buf, cap, &used, "MESSAGE", line);
	field(iov, &k, max, buf, cap, &used, "PRIORITY", prio);
	field(iov, &k, max, buf, cap, &used, "SYSLOG_IDENTIFIER", "targetd");
	if (!event)
		return k;
	field(iov, &k, max, buf, cap, &used, "TARGETD_EVENT", event);
	for (size_t i = 0; i < n; i++) {
		char name[64], val[512];
		size_t j = 0;

		/* journal field names: upper case, digits, underscore */
		j = (size_t)snprintf(name, sizeof(name), "TARGETD_");
		for (const char *p = kv[i].key; *p && j + 1 < sizeof(name); p++)
			name[j++] = isalnum((unsigned char)*p) ? (char)toupper((unsigned char)*p) : '_';
		name[j] = 0;
		if (kv[i].type == LOG_KV_STR)
			snprintf(val, sizeof(val), "%s", kv[i].s ? kv[i].s : "");
		else
			log_kv_format(&kv[i], val, sizeof(val));
		/* a newline would end the field in the journal's native protocol
		 * as sd_journal_sendv writes it: replace control characters */
		for (char *p = val; *p; p++)
			if ((unsigned char)*p < 0x20)
				*p = '?';
		field(iov, &k, max, buf, cap, &used, name, val);
	}
	return k;
}

static int journal_sink(int level, const char *line, const char *event, const struct log_kv *kv,
			size_t n)
{
	struct iovec iov[40];
	char buf[8192];
	size_t k = daemon_journal_fields(level, line, event, kv, n, iov, 40, buf, sizeof(buf));

	return sd_journal_sendv(iov, (int)k) < 0 ? -1 : 0;
}

void daemon_log_to_journal(void)
{
	log_set_sink(journal_sink);
}

/* ---- detaching ------------------------------------------------------------- */

int daemon_detach_start(void)
{
	int p[2];
	pid_t pid;
	ssize_t n;
	char c = 1;

	if (pipe2(p, O_CLOEXEC)) {
		perror("targetd: pipe");
		return -1;
	}
	pid = fork();
	if (pid < 0) {
		perror("targetd: fork");
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid > 0) {
		close(p[1]);
		do {
			n = read(p[0], &c, 1);
		} while (n < 0 && errno == EINTR);
		_exit(n == 1 && c == 0 ? 0 : 1);
	}
	close(p[0]);
	if (setsid() < 0) {
		perror("targetd: setsid");
		close(p[1]);
		return -1;
	}
	return p[1];
}

void daemon_detach_ready(int fd)
{
	int nul = open("/dev/null", O_RDWR | O_CLOEXEC);
	char ok = 0;

	if (chdir("/"))
		log_warn("chdir /: %s", strerror(errno));
	if (nul >= 0) {
		dup2(nul, STDIN_FILENO);
		dup2(nul, STDOUT_FILENO);
		dup2(nul, STDERR_FILENO);
		if (nul > STDERR_FILENO)
			close(nul);
	}
	if (write(fd, &ok, 1) != 1)
		log_warn("cannot tell the starting process that the daemon is ready");
	close(fd);
}

/* ---- pid file ------------------------------------------------------------- */

static char *pid_path;
static int pid_fd = -1;

int daemon_pidfile_create(const char *path)
{
	char buf[32], line[32];
	struct stat st;
	ssize_t r;
	int fd;

	if (pid_fd >= 0) {
		/* called again: the same locked file, our pid */
		snprintf(line, sizeof(line), "%ld\n", (long)getpid());
		if (ftruncate(pid_fd, 0) || pwrite(pid_fd, line, strlen(line), 0) != (ssize_t)strlen(line)) {
			log_err("--pidfile %s: cannot write: %m", pid_path);
			return -1;
		}
		return 0;
	}
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0644);
	if (fd < 0) {
		log_err("--pidfile %s: %m", path);
		return -1;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_size > 16) {
		log_err("--pidfile %s: exists and is not a pid file (a regular file holding a "
			"number); it is left as it is", path);
		close(fd);
		return -1;
	}
	r = pread(fd, buf, sizeof(buf) - 1, 0);
	buf[r > 0 ? r : 0] = 0;
	if (r > 0 && strspn(buf, "0123456789\n") != (size_t)r) {
		log_err("--pidfile %s: holds something else than a process id; it is left as it is",
			path);
		close(fd);
		return -1;
	}
	if (flock(fd, LOCK_EX | LOCK_NB)) {
		log_err("--pidfile %s: another targetd (pid %s) holds it", path,
			r > 0 ? strtok(buf, "\n") : "?");
		close(fd);
		return -1;
	}
	snprintf(line, sizeof(line), "%ld\n", (long)getpid());
	if (ftruncate(fd, 0) || pwrite(fd, line, strlen(line), 0) != (ssize_t)strlen(line)) {
		log_err("--pidfile %s: cannot write: %m", path);
		close(fd);
		return -1;
	}
	pid_fd = fd;
	pid_path = strdup(path);
	return 0;
}

void daemon_pidfile_remove(void)
{
	if (pid_fd < 0)
		return;
	if (pid_path)
		unlink(pid_path);
	close(pid_fd);
	pid_fd = -1;
	free(pid_path);
	pid_path = NULL;
}

/* ---- portals ---------------------------------------------------------------- */

unsigned daemon_check_portals(const struct conf *c)
{
	unsigned bad = 0;

	for (unsigned i = 0; i < c->n_listen; i++) {
		const struct conf_listen *l = &c->listen[i];
		struct addrinfo hints = { .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV | AI_PASSIVE,
					  .ai_socktype = SOCK_STREAM };
		struct addrinfo *ai = NULL;
		bool v6 = strchr(l->host, ':') != NULL;
		int fd, one = 1, e = 0;

		if (getaddrinfo(l->host, l->port, &hints, &ai) || !ai) {
			fprintf(stderr, "targetd: warning: listen %s%s%s:%s: not an address\n", v6 ? "[" : "",
				l->host, v6 ? "]" : "", l->port);
			bad++;
			continue;
		}
		fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, 0);
		if (fd < 0)
			e = errno;
		else {
			setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
			if (ai->ai_family == AF_INET6)
				setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
			if (bind(fd, ai->ai_addr, ai->ai_addrlen))
				e = errno;
			close(fd);
		}
		freeaddrinfo(ai);
		if (!e)
			continue;
		bad++;
		fprintf(stderr, "targetd: warning: listen %s%s%s:%s cannot be bound now: %s%s\n", v6 ? "[" : "",
			l->host, v6 ? "]" : "", l->port, strerror(e),
			e == EADDRNOTAVAIL ? " (no interface of this host has that address)"
			: e == EADDRINUSE  ? " (another program listens on that port)"
			: e == EACCES      ? " (a port below 1024 needs root or CAP_NET_BIND_SERVICE)"
					   : "");
	}
	return bad;
}
