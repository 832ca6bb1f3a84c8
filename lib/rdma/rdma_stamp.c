/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The stamp rings of droce_stamp.h (meson -Dstamps=true): one a thread,
 * made at its first stamp while DROCE_STAMPS is set, each written to
 * <prefix>.<pid>.<tid> when the process exits.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <rte_cycles.h>

#include "droce_stamp.h"

#define STAMP_THREADS 64

int droce_stamps_on;
__thread struct droce_stamp_ring *droce_stamp_mine
	__attribute__((tls_model("initial-exec")));

static pthread_mutex_t rings_lock = PTHREAD_MUTEX_INITIALIZER;
static struct {
	struct droce_stamp_ring *ring;
	long tid;
} rings[STAMP_THREADS];
static int nb_rings;

struct droce_stamp_ring *droce_stamp_ring_new(void)
{
	struct droce_stamp_ring *r = NULL;

	pthread_mutex_lock(&rings_lock);
	if (nb_rings < STAMP_THREADS && (r = calloc(1, sizeof(*r))) != NULL) {
		rings[nb_rings].ring = r;
		rings[nb_rings].tid = syscall(SYS_gettid);
		nb_rings++;
	}
	pthread_mutex_unlock(&rings_lock);
	if (r == NULL)		/* no more rings: threads without one stay quiet */
		droce_stamps_on = 0;
	droce_stamp_mine = r;
	return r;
}

__attribute__((constructor)) static void stamps_load(void)
{
	droce_stamps_on = getenv("DROCE_STAMPS") != NULL;
}

/* Threads may still stamp while this runs (an engine lcore being torn
 * down): a ring is read as it stands, the last event or two possibly
 * torn, which the reader drops as it drops anything unmatched. */
__attribute__((destructor)) static void stamps_write(void)
{
	const char *prefix = getenv("DROCE_STAMPS");

	if (prefix == NULL)
		return;
	pthread_mutex_lock(&rings_lock);
	for (int i = 0; i < nb_rings; i++) {
		struct droce_stamp_ring *r = rings[i].ring;
		uint32_t n = r->n, first;
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s.%d.%ld", prefix, (int)getpid(),
			 rings[i].tid);
		f = fopen(path, "w");
		if (f == NULL) {
			fprintf(stderr, "droce stamps: %s: cannot write\n", path);
			continue;
		}
		fprintf(f, "# tsc_hz %llu\n",
			(unsigned long long)rte_get_tsc_hz());
		first = n > DROCE_STAMP_RING ? n - DROCE_STAMP_RING : 0;
		for (uint32_t k = first; k != n; k++) {
			const struct droce_stamp *s =
				&r->ev[k & (DROCE_STAMP_RING - 1)];

			fprintf(f, "%llu %u %u %u %u\n",
				(unsigned long long)s->tsc, s->ev, s->a, s->b,
				s->c);
		}
		fclose(f);
	}
	pthread_mutex_unlock(&rings_lock);
}
