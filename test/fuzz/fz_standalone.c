/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A main() for the fuzz harnesses where libFuzzer is not available (gcc):
 * runs LLVMFuzzerTestOneInput once on every file named, and on every file
 * of every directory named (sorted), so the seed corpora and regression
 * inputs still run as tests. Arguments starting with '-' are ignored
 * (libFuzzer options).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static unsigned long n_run;

static void run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long len;

	if (f == NULL) {
		perror(path);
		exit(1);
	}
	if (fseek(f, 0, SEEK_END) != 0 || (len = ftell(f)) < 0 ||
	    fseek(f, 0, SEEK_SET) != 0) {
		perror(path);
		exit(1);
	}
	/* An exact-size copy: ASan sees a read past the input. */
	buf = malloc(len ? (size_t)len : 1);
	if (buf == NULL || fread(buf, 1, (size_t)len, f) != (size_t)len) {
		fprintf(stderr, "%s: read failed\n", path);
		exit(1);
	}
	fclose(f);
	if (getenv("FZ_SHOW"))
		fprintf(stderr, "input %s (%ld bytes)\n", path, len);
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	n_run++;
}

static int only_files(const struct dirent *d)
{
	return d->d_name[0] != '.';
}

int main(int argc, char **argv)
{
	LLVMFuzzerInitialize(&argc, &argv);
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (argv[i][0] == '-')
			continue;
		if (stat(argv[i], &st) != 0) {
			perror(argv[i]);
			return 1;
		}
		if (S_ISDIR(st.st_mode)) {
			struct dirent **ent;
			int n = scandir(argv[i], &ent, only_files, alphasort);

			if (n < 0) {
				perror(argv[i]);
				return 1;
			}
			for (int k = 0; k < n; k++) {
				char path[4096];

				snprintf(path, sizeof(path), "%s/%s", argv[i],
					 ent[k]->d_name);
				if (stat(path, &st) == 0 && S_ISREG(st.st_mode))
					run_file(path);
				free(ent[k]);
			}
			free(ent);
		} else {
			run_file(argv[i]);
		}
	}
	printf("%s: %lu inputs, no failure\n", argv[0], n_run);
	return 0;
}
