/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An lcore engine asleep in its idle back-off is woken by the first post
 * (and the first control call) after a pause instead of sleeping out its
 * period. Both devices on the engine of lcore 1 with idle_us=1000000, so
 * that after 2 s of silence the engine sleeps a second at a time: a WRITE
 * must still complete within 0.25 s (woken: microseconds; not woken, it
 * waits out the rest of a sleep, 0.5 s on average), the engine's wake
 * count must move, the data must land, and the sleeps the wakes cut
 * short must not count as stall time (the sleep taken, not the one
 * chosen, is the engine's own: counted, each round would add up to a
 * second). Real stalls after a wake are allowed, a few milliseconds a
 * round: on some hosts the first touch of each page after seconds of
 * idleness costs ~2 us (an Intel Xeon VM, 2026-12-07: 16 384 pages in 35
 * ms after 2 s idle, 0.4 ms without), and the engine's first iterations
 * after the wake run late by a millisecond or two, twice a round.
 * An MR's deregistration (a control call the engine serves) likewise.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "droce.h"
#include "droce_test.h"

#define ROUNDS 3
#define PAUSE_US 2000000
#define LIMIT_S 0.25
#define LEN 4096
/* stall time allowed a round (the host's, after the idle; see above) */
#define STALL_ROUND_US 20000

static struct dt_env env;

static void stats(struct dt_dev *d, struct droce_dev_stats *st)
{
	CHECK_OK(droce_dev_stats_get(d->ctx, st));
}

int main(void)
{
	struct dt_rc_pair rp;
	struct dt_dev *A, *B;
	struct dt_conn_cfg cc;
	struct dt_qp_cfg qc;
	uint8_t *src = dt_alloc(LEN), *dst = dt_alloc(LEN);
	struct ibv_mr *mra, *mrb;
	struct droce_dev_stats s0, s1;
	struct ibv_wc wc;
	uint64_t stalls = 0, stall_us = 0;

	dt_watchdog(60);
	dt_seed_init();
	dt_init(&env, "test_engine_wake", "ip=198.18.0.1,lcore=1,idle_us=1000000",
		"ip=198.18.0.2,lcore=1,idle_us=1000000");
	A = &env.dev[0];
	B = &env.dev[1];
	dt_qp_cfg_default(&qc);
	dt_conn_cfg_default(&cc);
	dt_rc_pair_open(&rp, A, B, 16, &qc, &cc, NULL, 0x100, 0x200);
	mra = dt_reg_mr(A->pd, src, LEN, DT_ACCESS_ALL);
	mrb = dt_reg_mr(B->pd, dst, LEN, DT_ACCESS_ALL);
	CHECK_PTR(mra);
	CHECK_PTR(mrb);
	for (int r = 0; r < ROUNDS; r++) {
		struct ibv_sge sge = { (uintptr_t)src, LEN, mra->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)r, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED }, *bad;
		double t0, t;

		for (int i = 0; i < LEN; i++)
			src[i] = (uint8_t)dt_rand_range(0, 255);
		wr.wr.rdma.remote_addr = (uintptr_t)dst;
		wr.wr.rdma.rkey = mrb->rkey;
		usleep(PAUSE_US);
		stats(A, &s0);
		t0 = dt_now();
		CHECK_OK(ibv_post_send(rp.qa, &wr, &bad));
		CHECK_EQ(dt_wait_wc(&rp.sa, &wc, 1, DT_WAIT_S, "WRITE after a pause"), 1);
		t = dt_now() - t0;
		stats(A, &s1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK(memcmp(src, dst, LEN) == 0);
		printf("round %d: WRITE after %.1f s of silence completed in %.3f ms; wakes +%" PRIu64 ", stalls +%" PRIu64 " (%.3f ms)\n",
		       r, PAUSE_US / 1e6, t * 1e3, s1.eng_wakes - s0.eng_wakes,
		       s1.stalls - s0.stalls, (s1.stall_us - s0.stall_us) / 1e3);
		CHECK(t < LIMIT_S);
		CHECK(s1.eng_wakes > s0.eng_wakes);
		stalls += s1.stalls - s0.stalls;
		stall_us += s1.stall_us - s0.stall_us;
		/* a control call after a pause: deregistration waits for the
		 * engine to let go of the MR */
		if (r == ROUNDS - 1) {
			struct ibv_mr *m = dt_reg_mr(A->pd, src, LEN, DT_ACCESS_ALL);

			CHECK_PTR(m);
			usleep(PAUSE_US);
			stats(A, &s0);
			t0 = dt_now();
			CHECK_OK(ibv_dereg_mr(m));
			t = dt_now() - t0;
			stats(A, &s1);
			printf("ibv_dereg_mr after %.1f s of silence: %.3f ms; wakes +%" PRIu64 "\n",
			       PAUSE_US / 1e6, t * 1e3, s1.eng_wakes - s0.eng_wakes);
			CHECK(t < LIMIT_S);
			CHECK(s1.eng_wakes > s0.eng_wakes);
		}
	}
	/* Not subtracted as sleep, a woken engine's sleep cut short would
	 * count as a stall of up to a second at every wake (its part of a
	 * 1 s sleep); the host's own are milliseconds */
	printf("stalls after the wakes: %" PRIu64 ", %.3f ms in all\n", stalls,
	       stall_us / 1e3);
	CHECK(stall_us < (uint64_t)ROUNDS * STALL_ROUND_US);
	dt_rc_pair_close(&rp);
	CHECK_OK(ibv_dereg_mr(mra));
	CHECK_OK(ibv_dereg_mr(mrb));
	free(src);
	free(dst);
	return dt_finish(&env);
}
