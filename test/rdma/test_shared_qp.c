/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Threads sharing one QP and one CQ: the locks that make ibv_post_send()
 * and ibv_poll_cq() safe to call from several threads at once (a QP or CQ
 * made without a thread domain), and the app engine's lock that its
 * turns take from whichever thread posts or polls; each taken by an
 * exchange and let go by a release store (droce_spin_unlock). THREADS
 * threads, spread over the CPUs (EAL pins the main thread to one: the
 * threads it makes would share that one and take turns only where the
 * scheduler preempts them), post WRITEs to the same RC QP, each its own
 * slots of B's buffer, and poll the same send CQ: every completion is
 * claimed by whichever thread polls it. At the end
 * each WR must have completed exactly once, successfully, as a WRITE of
 * this QP, and each slot must hold the bytes its thread wrote. A lock
 * that let two posts into the queue at once loses or doubles WQEs (a
 * wr_id missing or seen twice, a slot's bytes wrong); one that was never
 * let go hangs the next post (the watchdog).
 */
#include <inttypes.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "droce_test.h"

#define THREADS 4
#define PER_THREAD 4000
#define SLOT 32
#define SQ_WR 64

static struct dt_env env;
static struct dt_rc_pair rp;
static uint8_t *src, *dst;
static struct ibv_mr *mra, *mrb;
static atomic_uint_fast64_t polled;
static atomic_uint_fast32_t bad_wc, full_posts;
static _Atomic uint8_t seen[THREADS][PER_THREAD];

static uint8_t pattern(unsigned int t, unsigned int i, unsigned int k)
{
	return (uint8_t)(t * 131u + i * 7u + k * 29u + 1u);
}

/* Poll the shared CQ once; each completion checked and counted. */
static int poll_some(void)
{
	struct ibv_wc wc[16];
	int n = ibv_poll_cq(rp.sa.cq, 16, wc);

	for (int k = 0; k < n; k++) {
		unsigned int t = (unsigned int)(wc[k].wr_id >> 32);
		unsigned int i = (unsigned int)wc[k].wr_id;

		if (wc[k].status != IBV_WC_SUCCESS ||
		    wc[k].opcode != IBV_WC_RDMA_WRITE ||
		    wc[k].qp_num != rp.qa->qp_num || t >= THREADS ||
		    i >= PER_THREAD) {
			if (atomic_fetch_add(&bad_wc, 1) < 5)
				fprintf(stderr, "bad completion: wr_id %#" PRIx64
					" status %d opcode %d qp %u\n",
					wc[k].wr_id, wc[k].status,
					wc[k].opcode, wc[k].qp_num);
			continue;
		}
		atomic_fetch_add(&seen[t][i], 1);
	}
	if (n > 0)
		atomic_fetch_add(&polled, (uint64_t)n);
	return n;
}

static void *poster_main(void *arg)
{
	unsigned int t = (unsigned int)(uintptr_t)arg;
	long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
	cpu_set_t set;

	CPU_ZERO(&set);
	CPU_SET((int)(t % (unsigned long)(ncpu > 0 ? ncpu : 1)), &set);
	(void)pthread_setaffinity_np(pthread_self(), sizeof(set), &set);

	for (unsigned int i = 0; i < PER_THREAD; i++) {
		size_t off = ((size_t)t * PER_THREAD + i) * SLOT;
		struct ibv_sge sge = { (uintptr_t)(src + off), SLOT, mra->lkey };
		struct ibv_send_wr wr = {
			.wr_id = (uint64_t)t << 32 | i, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED,
		}, *bad;
		int ret;

		for (unsigned int k = 0; k < SLOT; k++)
			src[off + k] = pattern(t, i, k);
		wr.wr.rdma.remote_addr = (uintptr_t)(dst + off);
		wr.wr.rdma.rkey = mrb->rkey;
		while ((ret = ibv_post_send(rp.qa, &wr, &bad)) == ENOMEM) {
			atomic_fetch_add(&full_posts, 1);
			poll_some();
		}
		if (ret != 0) {
			fprintf(stderr, "thread %u: post %u: %d\n", t, i, ret);
			atomic_fetch_add(&bad_wc, 1);
			return NULL;
		}
		if (i % 8 == 7)
			poll_some();
	}
	return NULL;
}

int main(void)
{
	const size_t len = (size_t)THREADS * PER_THREAD * SLOT;
	const uint64_t want = (uint64_t)THREADS * PER_THREAD;
	pthread_t th[THREADS];
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	uint64_t missing = 0, doubled = 0, wrong_bytes = 0, got;
	unsigned int bad, full;
	double t0;

	dt_watchdog(120);
	dt_seed_init();
	/* app engines: the posting threads drive them too, on both CPUs */
	dt_init(&env, "test_shared_qp", "ip=198.18.0.1,lcore=app",
		"ip=198.18.0.2,lcore=app");
	src = dt_alloc(len);
	dst = dt_alloc(len);
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = SQ_WR;
	dt_conn_cfg_default(&cc);
	dt_rc_pair_open(&rp, &env.dev[0], &env.dev[1], 4096, &qc, &cc, NULL,
			(uint32_t)dt_rand_range(0, 0xffffff),
			(uint32_t)dt_rand_range(0, 0xffffff));
	mra = dt_reg_mr(env.dev[0].pd, src, len, DT_ACCESS_ALL);
	mrb = dt_reg_mr(env.dev[1].pd, dst, len, DT_ACCESS_ALL);
	CHECK_PTR(mra);
	CHECK_PTR(mrb);
	memset(dst, 0, len);

	for (unsigned int t = 0; t < THREADS; t++)
		CHECK_OK(pthread_create(&th[t], NULL, poster_main,
					(void *)(uintptr_t)t));
	for (unsigned int t = 0; t < THREADS; t++)
		CHECK_OK(pthread_join(th[t], NULL));
	/* what the posters left unpolled */
	t0 = dt_now();
	while (atomic_load(&polled) + atomic_load(&bad_wc) < want &&
	       dt_now() - t0 < 20)
		poll_some();

	for (unsigned int t = 0; t < THREADS; t++)
		for (unsigned int i = 0; i < PER_THREAD; i++) {
			size_t off = ((size_t)t * PER_THREAD + i) * SLOT;
			uint8_t n = atomic_load(&seen[t][i]);

			missing += n == 0;
			doubled += n > 1;
			for (unsigned int k = 0; k < SLOT; k++)
				wrong_bytes += dst[off + k] != pattern(t, i, k);
		}
	printf("%d threads x %d WRITEs on one QP and one CQ: %" PRIu64
	       " completions, %" PRIu64 " missing, %" PRIu64 " twice, %u bad, "
	       "%" PRIu64 " wrong bytes; %u posts found the queue full\n",
	       THREADS, PER_THREAD, (uint64_t)atomic_load(&polled), missing,
	       doubled, (unsigned int)atomic_load(&bad_wc), wrong_bytes,
	       (unsigned int)atomic_load(&full_posts));

	got = atomic_load(&polled);
	bad = atomic_load(&bad_wc);
	full = atomic_load(&full_posts);
	CHECK_EQ(got, want);
	CHECK_EQ(bad, 0);
	CHECK_EQ(missing, 0);
	CHECK_EQ(doubled, 0);
	CHECK_EQ(wrong_bytes, 0);
	/* the queue was shared for real: posts ran into each other's WQEs */
	CHECK(full > 0);

	dt_rc_pair_close(&rp);
	CHECK_OK(ibv_dereg_mr(mra));
	CHECK_OK(ibv_dereg_mr(mrb));
	free(src);
	free(dst);
	return dt_finish(&env);
}
