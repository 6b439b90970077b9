/*
 * tcp-stream -- the loopback TCP baseline for targetd-bench.
 *
 * DESIGN: one process, two threads, one TCP connection over 127.0.0.1.
 * It moves bytes the way an iSCSI 1 MiB sequential read stream does:
 *   - the client thread ("initiator") keeps DEPTH requests in flight; each
 *     request is a 48-byte message (the size of an iSCSI Basic Header
 *     Segment);
 *   - the server thread ("target") answers each request with a 48-byte
 *     header followed by SIZE bytes of payload, written with one writev()
 *     from memory (no disk, no copy in user space): by default always the
 *     same SIZE bytes, which stay in the CPU caches; with --span, the next
 *     SIZE bytes of a SPAN-byte buffer each time, wrapping around;
 *   - the client reads the 48-byte header, then the payload into its own
 *     buffer, and sends the next request.
 * Both sockets have TCP_NODELAY set, as iSCSI initiators and targets do.
 * Nothing is shared between the two threads but the socket pair and the
 * read-only settings: no locks. After --seconds the client stops sending
 * new requests, drains the ones in flight, and closes its end; the server
 * sees end-of-file and returns.
 *
 * Output: one line,
 *   tcp-stream: msgs N seconds S msgs/s R MiB/s B sender-cpu% X receiver-cpu% Y
 * where msgs/s is comparable to iscsi-perf's "iops" for 1 MiB reads,
 * MiB/s counts payload bytes only (2^20 bytes per MiB, as iscsi-perf does)
 * and the CPU figures are each thread's CPU time over the wall time, in
 * percent of one CPU: the side near 100 % is the one that limits the rate.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <getopt.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define TS_HDR_LEN 48

struct ts_opts {
	double seconds;
	unsigned depth;
	size_t size;
	size_t span;
};

struct ts_server {
	int listen_fd;
	size_t size;
	size_t span;   /* the sender walks through this many bytes of payload */
	const uint8_t *payload;
	int rc;
	uint64_t answered;
	double cpu_start, cpu_end;  /* the server thread's CPU seconds */
};

static double ts_clock(clockid_t id)
{
	struct timespec t;

	clock_gettime(id, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static double ts_now(void)
{
	return ts_clock(CLOCK_MONOTONIC);
}

/* CPU seconds the calling thread has used. */
static double ts_thread_cpu(void)
{
	return ts_clock(CLOCK_THREAD_CPUTIME_ID);
}

/* ts_read_full: read exactly len bytes; 0 on success, 1 on a clean EOF
 * before the first byte, -1 on error or a short message. */
static int ts_read_full(int fd, void *buf, size_t len)
{
	uint8_t *p = buf;
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, p + done, len - done);
		if (n > 0) {
			done += (size_t)n;
			continue;
		}
		if (n == 0)
			return done == 0 ? 1 : -1;
		if (errno != EINTR)
			return -1;
	}
	return 0;
}

/* ts_writev_full: write every byte of iov[0..cnt-1]; modifies iov. */
static int ts_writev_full(int fd, struct iovec *iov, int cnt)
{
	while (cnt > 0) {
		ssize_t n = writev(fd, iov, cnt);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		while (cnt > 0 && (size_t)n >= iov->iov_len) {
			n -= (ssize_t)iov->iov_len;
			iov++;
			cnt--;
		}
		if (cnt > 0) {
			iov->iov_base = (uint8_t *)iov->iov_base + n;
			iov->iov_len -= (size_t)n;
		}
	}
	return 0;
}

static void ts_nodelay(int fd)
{
	int one = 1;

	setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
}

/* The "target": answer every 48-byte request with a header and the payload. */
static void *ts_server_main(void *arg)
{
	struct ts_server *s = arg;
	uint8_t req[TS_HDR_LEN], hdr[TS_HDR_LEN];
	const uint8_t *payload = s->payload;
	int fd;

	s->rc = -1;
	fd = accept(s->listen_fd, NULL, NULL);
	if (fd < 0) {
		perror("tcp-stream: accept");
		return NULL;
	}
	ts_nodelay(fd);
	s->cpu_start = ts_thread_cpu();
	memset(hdr, 0, sizeof(hdr));
	hdr[0] = 0x25; /* looks like a SCSI Data-In, for anyone watching with tcpdump */
	for (size_t off = 0;;) {
		struct iovec iov[2];
		int r = ts_read_full(fd, req, sizeof(req));
		if (r == 1)
			break;
		if (r < 0) {
			perror("tcp-stream: server read");
			goto out;
		}
		memcpy(hdr + 16, req + 16, 4); /* echo the task tag */
		iov[0] = (struct iovec){ .iov_base = hdr, .iov_len = sizeof(hdr) };
		iov[1] = (struct iovec){ .iov_base = (void *)(payload + off), .iov_len = s->size };
		off = off + 2 * s->size <= s->span ? off + s->size : 0;
		if (ts_writev_full(fd, iov, 2)) {
			perror("tcp-stream: server write");
			goto out;
		}
		s->answered++;
	}
	s->cpu_end = ts_thread_cpu();
	s->rc = 0;
out:
	close(fd);
	return NULL;
}

static int ts_send_request(int fd, uint32_t tag)
{
	uint8_t req[TS_HDR_LEN];
	struct iovec iov = { .iov_base = req, .iov_len = sizeof(req) };

	memset(req, 0, sizeof(req));
	req[0] = 0x01; /* a SCSI Command opcode */
	req[16] = (uint8_t)(tag >> 24);
	req[17] = (uint8_t)(tag >> 16);
	req[18] = (uint8_t)(tag >> 8);
	req[19] = (uint8_t)tag;
	return ts_writev_full(fd, &iov, 1);
}

static void ts_usage(FILE *f)
{
	fprintf(f,
		"Usage: tcp-stream [--seconds N] [--depth N] [--size BYTES] [--span BYTES]\n"
		"Measure loopback TCP throughput for a stream of SIZE-byte answers\n"
		"(default 1048576) to 48-byte requests, DEPTH (default 8) in flight,\n"
		"for N seconds (default 5). The sender's answers come one after the\n"
		"other from a buffer of SPAN bytes (default SIZE: always the same,\n"
		"cache-hot bytes; a SPAN larger than the CPU caches makes the sender\n"
		"read memory, as a target serving a large LUN does).\n");
}

static int ts_parse(int argc, char **argv, struct ts_opts *o)
{
	static const struct option longopts[] = {
		{ "seconds", required_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 'd' },
		{ "size", required_argument, NULL, 'b' },
		{ "span", required_argument, NULL, 'p' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c;
	char *end;

	o->seconds = 5;
	o->depth = 8;
	o->size = 1048576;
	o->span = 0;
	while ((c = getopt_long(argc, argv, "s:d:b:p:h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			o->seconds = strtod(optarg, &end);
			if (*end || o->seconds <= 0 || o->seconds > 3600) {
				fprintf(stderr, "tcp-stream: bad --seconds '%s'\n", optarg);
				return 2;
			}
			break;
		case 'd': {
			unsigned long v = strtoul(optarg, &end, 10);
			if (*end || v < 1 || v > 1024) {
				fprintf(stderr, "tcp-stream: bad --depth '%s' (1 to 1024)\n", optarg);
				return 2;
			}
			o->depth = (unsigned)v;
			break;
		}
		case 'b': {
			unsigned long long v = strtoull(optarg, &end, 10);
			if (*end || v < 1 || v > (1ull << 30)) {
				fprintf(stderr, "tcp-stream: bad --size '%s' (1 to 1073741824)\n", optarg);
				return 2;
			}
			o->size = (size_t)v;
			break;
		}
		case 'p': {
			unsigned long long v = strtoull(optarg, &end, 10);
			if (*end || v < 1 || v > (16ull << 30)) {
				fprintf(stderr, "tcp-stream: bad --span '%s' (1 to 17179869184)\n", optarg);
				return 2;
			}
			o->span = (size_t)v;
			break;
		}
		case 'h':
			ts_usage(stdout);
			exit(0);
		default:
			ts_usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "tcp-stream: unexpected argument '%s'\n", argv[optind]);
		return 2;
	}
	if (o->span < o->size)
		o->span = o->size;
	return 0;
}

int main(int argc, char **argv)
{
	struct ts_opts o;
	struct ts_server srv = { .listen_fd = -1 };
	struct sockaddr_in sa = { .sin_family = AF_INET };
	socklen_t salen = sizeof(sa);
	pthread_t tid;
	uint8_t hdr[TS_HDR_LEN];
	uint8_t *buf, *payload;
	uint64_t received = 0, sent = 0;
	unsigned inflight = 0;
	double t0, t1, deadline, cpu0, cpu1;
	int fd, rc;

	rc = ts_parse(argc, argv, &o);
	if (rc)
		return rc;
	signal(SIGPIPE, SIG_IGN);
	buf = malloc(o.size);
	payload = malloc(o.span);
	if (!buf || !payload) {
		fprintf(stderr, "tcp-stream: out of memory\n");
		return 1;
	}
	memset(buf, 0, o.size);
	/* Touch every page before the clock starts, so that the sender's first
	 * pass measures TCP, not page faults. */
	for (size_t i = 0; i < o.span; i++)
		payload[i] = (uint8_t)(i * 131u + 7u);

	sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	srv.listen_fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (srv.listen_fd < 0 || bind(srv.listen_fd, (struct sockaddr *)&sa, sizeof(sa)) ||
	    listen(srv.listen_fd, 1) ||
	    getsockname(srv.listen_fd, (struct sockaddr *)&sa, &salen)) {
		perror("tcp-stream: listen on 127.0.0.1");
		return 1;
	}
	srv.size = o.size;
	srv.span = o.span;
	srv.payload = payload;
	if (pthread_create(&tid, NULL, ts_server_main, &srv)) {
		fprintf(stderr, "tcp-stream: cannot start the server thread\n");
		return 1;
	}
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || connect(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		perror("tcp-stream: connect");
		return 1;
	}
	ts_nodelay(fd);

	t0 = ts_now();
	cpu0 = ts_thread_cpu();
	deadline = t0 + o.seconds;
	rc = 0;
	for (; inflight < o.depth; inflight++)
		if (ts_send_request(fd, (uint32_t)sent++)) {
			perror("tcp-stream: client write");
			rc = 1;
			break;
		}
	while (rc == 0 && inflight > 0) {
		int r = ts_read_full(fd, hdr, sizeof(hdr));
		if (r == 0)
			r = ts_read_full(fd, buf, o.size);
		if (r != 0) {
			fprintf(stderr, "tcp-stream: client read: %s\n",
				r > 0 ? "unexpected end of stream" : strerror(errno));
			rc = 1;
			break;
		}
		inflight--;
		received++;
		if (ts_now() < deadline) {
			if (ts_send_request(fd, (uint32_t)sent++)) {
				perror("tcp-stream: client write");
				rc = 1;
				break;
			}
			inflight++;
		}
	}
	t1 = ts_now();
	cpu1 = ts_thread_cpu();
	shutdown(fd, SHUT_WR);
	pthread_join(tid, NULL);
	close(fd);
	close(srv.listen_fd);
	free(buf);
	free(payload);
	if (rc || srv.rc)
		return 1;
	printf("tcp-stream: msgs %llu seconds %.3f msgs/s %.1f MiB/s %.1f "
	       "sender-cpu%% %.0f receiver-cpu%% %.0f\n",
	       (unsigned long long)received, t1 - t0, (double)received / (t1 - t0),
	       (double)received * (double)o.size / (t1 - t0) / 1048576.0,
	       100.0 * (srv.cpu_end - srv.cpu_start) / (t1 - t0),
	       100.0 * (cpu1 - cpu0) / (t1 - t0));
	return 0;
}
