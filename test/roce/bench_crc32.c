/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * bench_crc32 [seconds-per-case]: throughput in MB/s (10^6 bytes/s) of
 * roce_crc32 (ISA-L when built with it), roce_crc32_slice8, memcpy,
 * memcpy followed by roce_crc32 over the copy (what a transmit path did)
 * and roce_crc32_copy (the two in one pass), for 64 B, 256 B, 1 KiB,
 * 4 KiB and 64 KiB buffers (hot in cache), then TSC cycles of the fused
 * copy and of the ICRC in place over a frame (roce_icrc_clmul, as the
 * datapath calls it). Not a test: the numbers go to
 * doc/wire-format.md and doc/performance.md.
 */
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "roce.h"

static volatile uint32_t sink;

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int
cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

enum kind { K_ROCE, K_SLICE8, K_MEMCPY, K_COPY_THEN_CRC, K_CRC_COPY };

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
			case K_COPY_THEN_CRC:
				memcpy(dst, src, len);
				crc = roce_crc32(crc, dst, len);
				break;
			case K_CRC_COPY:
				crc = roce_crc32_copy(crc, dst, src, len);
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
	static const size_t sizes[] = { 64, 256, 1024, 4096, 65536 };
	double secs = argc > 1 ? atof(argv[1]) : 0.5;
	uint8_t *src = aligned_alloc(64, 65536), *dst = aligned_alloc(64, 65536);
	const char *impl = roce_crc32_impl();

	if (src == NULL || dst == NULL)
		return 1;
	for (size_t i = 0; i < 65536; i++)
		src[i] = (uint8_t)(i * 131 + 7);
	printf("roce_crc32 = %s, roce_crc32_copy = %s; MB/s (10^6 B/s), "
	       "%.2f s per case\n", impl,
	       roce_crc32_copy_bits() == 512 ? "512-bit vpclmulqdq (pclmul below 256 B)" :
	       roce_crc32_copy_bits() == 256 ? "256-bit vpclmulqdq (pclmul below 256 B)" :
	       roce_icrc_clmul_usable() ? "pclmul" : "memcpy + roce_crc32",
	       secs);
	printf("%8s %12s %12s %12s %14s %12s\n", "size", "roce_crc32", "slice8",
	       "memcpy", "memcpy+crc32", "crc32_copy");
	for (size_t i = 0; i < sizeof(sizes) / sizeof(sizes[0]); i++) {
		size_t n = sizes[i];
		char isal[32] = "n/a";

		if (strcmp(impl, "slice8") != 0)
			snprintf(isal, sizeof(isal), "%.0f",
				 run(K_ROCE, src, dst, n, secs));
		printf("%8zu %12s %12.0f %12.0f %14.0f %12.0f\n", n, isal,
		       run(K_SLICE8, src, dst, n, secs),
		       run(K_MEMCPY, src, dst, n, secs),
		       run(K_COPY_THEN_CRC, src, dst, n, secs),
		       run(K_CRC_COPY, src, dst, n, secs));
	}
#if defined(__x86_64__)
	/* Throughputs swing with the neighbours on a shared machine; the
	 * minimum TSC count of many runs does not. */
	printf("\nTSC cycles, minimum of 20000 runs (L1-hot)\n");
	printf("%8s %14s %12s %12s\n", "size", "memcpy+crc32", "crc32_copy",
	       "crc32");
	for (size_t n = 256; n <= 4096; n *= 4) {
		uint64_t best[3] = { UINT64_MAX, UINT64_MAX, UINT64_MAX };
		uint32_t crc = 0;

		for (int rep = 0; rep < 20000; rep++)
			for (int k = 0; k < 3; k++) {
				uint64_t t0 = __rdtsc(), t;

				if (k == 0) {
					memcpy(dst, src, n);
					__asm__ volatile("" : : "r"(dst) : "memory");
					crc = roce_crc32(crc, dst, n);
				} else if (k == 1) {
					crc = roce_crc32_copy(crc, dst, src, n);
				} else {
					crc = roce_crc32(crc, src, n);
				}
				t = __rdtsc() - t0;
				if (t < best[k])
					best[k] = t;
			}
		sink = crc;
		printf("%8zu %14" PRIu64 " %12" PRIu64 " %12" PRIu64 "\n", n,
		       best[0], best[1], best[2]);
	}
	if (roce_icrc_clmul_usable()) {
		/* The ICRC in place over a received or built frame, as the
		 * datapath calls it a frame: 32 frames a timed run (different
		 * buffers, independent calls), cycles a frame. */
		static const uint32_t covers[] = { 40, 120, 264, 504, 1000,
						   4152 };
		enum { STRIDE = 4416 };	/* a 4 KiB WRITE's frame and more */
		uint64_t *t = malloc(sizeof(*t) * 20001);
		uint8_t *fr = aligned_alloc(64, 32 * STRIDE);

		if (t == NULL || fr == NULL)
			return 1;
		for (size_t i = 0; i < 32 * STRIDE; i++)
			fr[i] = (uint8_t)(i * 151 + 3);
		printf("\nroce_icrc_clmul in place (IPv4), TSC cycles a frame, "
		       "32 frames a run, 20001 runs (%s)\n",
		       roce_crc32_copy_bits() == 256 ?
		       "two blocks a register from 120 bytes, eight registers from 512" :
		       roce_crc32_copy_bits() == 512 ?
		       "two blocks a register from 120 bytes, ISA-L from 512" :
		       "one block a register, ISA-L from 512");
		printf("%8s %8s %8s\n", "cover", "min", "median");
		for (size_t c = 0; c < sizeof(covers) / sizeof(covers[0]); c++) {
			uint32_t crc = 0;

			for (int f = 0; f < 32; f++)
				fr[f * STRIDE + 14] = 0x45;
			for (int rep = 0; rep < 20001; rep++) {
				uint64_t t0 = __rdtsc();

				for (int f = 0; f < 32; f++)
					crc += roce_icrc_clmul(fr + f * STRIDE + 14,
							       covers[c], false);
				t[rep] = __rdtsc() - t0;
			}
			sink = crc;
			qsort(t, 20001, sizeof(*t), cmp_u64);
			printf("%8u %8.1f %8.1f\n", covers[c],
			       (double)t[0] / 32, (double)t[10000] / 32);
		}
		free(t);
		free(fr);
	}
#endif
	free(src);
	free(dst);
	return 0;
}
