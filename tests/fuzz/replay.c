/*
 * The corpus replayer: a main() for a fuzz harness in a build without
 * libFuzzer (gcc, make check). Feeds every file named on the command line
 * (directories: every regular file in them, in name order) to the
 * harness's LLVMFuzzerTestOneInput once. With no argument it replays
 * $SRCDIR/tests/fuzz/corpus/NAME, NAME being the program's name less its
 * "replay_" prefix (tests/fuzz/replay_ffp replays corpus/ffp), so that
 * make check runs every seed and every regression input of every harness.
 * A harness that finds a problem aborts; the replayer then names the file.
 * Prints "N passed, 0 failed".
 */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv) __attribute__((weak));

static unsigned replayed;

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	size_t len = 0, cap = 0;

	if (!f) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	for (;;) {
		size_t n;
		if (cap - len < 65536) {
			uint8_t *nb = realloc(buf, cap + 65536);
			if (!nb) {
				fclose(f);
				free(buf);
				return -1;
			}
			buf = nb;
			cap += 65536;
		}
		n = fread(buf + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	fclose(f);
	fprintf(stderr, "replay: %s (%zu bytes)\n", path, len);
	/* an exact-size copy: a read past the input is seen by ASan */
	uint8_t *exact = malloc(len ? len : 1);
	if (!exact) {
		free(buf);
		return -1;
	}
	memcpy(exact, buf, len);
	free(buf);
	LLVMFuzzerTestOneInput(exact, len);
	free(exact);
	replayed++;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int replay_path(const char *path)
{
	struct stat st;
	DIR *d;
	struct dirent *e;
	char **names = NULL;
	size_t n = 0;
	int rc = 0;

	if (stat(path, &st)) {
		fprintf(stderr, "replay: %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (!S_ISDIR(st.st_mode))
		return replay_file(path);
	d = opendir(path);
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		char **nn;
		if (e->d_name[0] == '.')
			continue;
		nn = realloc(names, (n + 1) * sizeof(*names));
		if (!nn)
			break;
		names = nn;
		if (asprintf(&names[n], "%s/%s", path, e->d_name) < 0)
			break;
		n++;
	}
	closedir(d);
	qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		if (!rc && stat(names[i], &st) == 0 && S_ISREG(st.st_mode))
			rc = replay_file(names[i]);
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = 0;

	if (LLVMFuzzerInitialize)
		LLVMFuzzerInitialize(&argc, &argv);
	if (argc > 1) {
		for (int i = 1; i < argc && !rc; i++)
			rc = replay_path(argv[i]);
	} else {
		const char *src = getenv("SRCDIR");
		const char *base = strrchr(argv[0], '/');
		char *dir = NULL;

		base = base ? base + 1 : argv[0];
		if (!strncmp(base, "replay_", 7))
			base += 7;
		/* libtool wrappers run the program as lt-NAME */
		if (!strncmp(base, "lt-replay_", 10))
			base += 10;
		if (asprintf(&dir, "%s/tests/fuzz/corpus/%s", src ? src : ".", base) < 0)
			return 99;
		rc = replay_path(dir);
		free(dir);
	}
	if (rc)
		return 99;
	if (!replayed) {
		fprintf(stderr, "replay: no input found (give files or directories, or set SRCDIR)\n");
		return 99;
	}
	printf("%u passed, 0 failed\n", replayed);
	return 0;
}
