/*
 * Plain replay driver: runs a fuzz target's entry point on every file in the
 * folders named on the command line (corpus/<decoder>/ and repro/<decoder>/),
 * so CI checks the corpus with any compiler and under the sanitizers.
 * Exits non-zero if no input was found: an empty corpus must not pass quietly.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"

static int
replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long n;

	if (!f) {
		perror(path);
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fclose(f);
		return -1;
	}
	buf = malloc((size_t)n + 1);
	if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
		fprintf(stderr, "%s: cannot read\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	LLVMFuzzerTestOneInput(buf, (size_t)n);
	free(buf);
	return 0;
}

int
main(int argc, char **argv)
{
	unsigned n = 0;

	for (int i = 1; i < argc; i++) {
		DIR *d = opendir(argv[i]);
		struct dirent *de;
		if (!d) {
			perror(argv[i]);
			return 1;
		}
		while ((de = readdir(d))) {
			char path[4096];
			if (de->d_name[0] == '.')
				continue;
			snprintf(path, sizeof(path), "%s/%s", argv[i], de->d_name);
			if (replay_file(path) < 0)
				return 1;
			n++;
		}
		closedir(d);
	}
	if (n == 0) {
		fprintf(stderr, "no inputs found\n");
		return 1;
	}
	printf("%u inputs replayed without a fault\n", n);
	return 0;
}
