/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_crc32 [seconds-per-case]: throughput in MB/s (10^6 bytes/s) of
 * roce_crc32 (ISA-L when built with it), roce_crc32_slice8 and memcpy, for
 * 64 B, 1 KiB, 4 KiB and 64 KiB buffers (hot in cache). Not a test: the
 * numbers go to doc/wire-format.md.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "roce.h"

static volatile uint32_t sink;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

enum kind { K_ROCE, K_SLICE8, K_MEMCPY };

static double
run(enum kind k, const uint8_t *src, uint8_t *dst, size_t len, double secs)
{
	uint64_t iters = 0, batch = (1u << 22) / len + 1;
	uint32_t crc = 0;
	double t0 = now(), t;

	do {
		for (uint64_t i = 0; i < batch; i++) {
			switch (k) {
			case K_ROCE:
				crc = roce_crc32(crc, src, len);
				break;
			case K_SLICE8:
				crc = roce_crc32_slice8(crc, src, len);
				break;
			case K_MEMCPY:
				memcpy(dst, src, len);
				__asm__ volatile("" : : "r"(dst) : "memory");
				break;
			}
		}
		iters += batch;
		t = now() - t0;
	} while (t < secs);
	sink = crc;
	return (double)iters * (double)len / t / 1e6;
}

int
main(int argc, char **argv)
{
	static const size_t sizes[] = { 64, 1024, 4096, 65536 };
	double secs = argc > 1 ? atof(argv[1]) : 0.5;
	uint8_t *src = aligned_alloc(64, 65536), *dst = aligned_alloc(64, 65536);
	const char *impl = roce_crc32_impl();

	if (src == NULL || dst == NULL)
		return 1;
	for (size_t i = 0; i < 65536; i++)
		src[i] = (uint8_t)(i * 131 + 7);
	printf("roce_crc32 = %s; MB/s (10^6 B/s), %.2f s per case\n", impl,
	       secs);
	printf("%8s %12s %12s %12s\n", "size", "isal", "slice8", "memcpy");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		char isal[32] = "n/a";

		if (strcmp(impl, "isal") == 0)
			snprintf(isal, sizeof(isal), "%.0f",
				 run(K_ROCE, src, dst, n, secs));
		printf("%8zu %12s %12.0f %12.0f\n", n, isal,
		       run(K_SLICE8, src, dst, n, secs),
		       run(K_MEMCPY, src, dst, n, secs));
	}
	free(src);
	free(dst);
	return 0;
}
