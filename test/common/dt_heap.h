/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The DPDK heap's allocated bytes over every socket: what a test or a
 * harness compares before and after objects come and go, to see that
 * droce gave back what it took (rte_malloc'ed rings, tables, CQ and QP
 * memory). Header only: the fuzz harnesses do not link the test library.
 */
#ifndef DT_HEAP_H
#define DT_HEAP_H

#include <stddef.h>

#include <rte_malloc.h>

static inline size_t dt_heap_bytes(void)
{
	struct rte_malloc_socket_stats st;
	size_t sum = 0;

	for (int s = 0; s < RTE_MAX_NUMA_NODES; s++)
		if (rte_malloc_get_socket_stats(s, &st) == 0)
			sum += st.heap_allocsz_bytes;
	return sum;
}

/*
 * A harness's heap across inputs: the first few inputs set the base (what
 * stays allocated once made: caches, pools), and so does any smaller
 * reading; after them, the bytes the heap holds more than the base (0:
 * everything came back).
 */
struct dt_heap_watch {
	size_t base;
	unsigned long n;
};

static inline size_t dt_heap_grew(struct dt_heap_watch *w)
{
	size_t heap = dt_heap_bytes();

	if (w->n++ < 4 || heap < w->base) {
		w->base = heap;
		return 0;
	}
	return heap - w->base;
}

#endif
