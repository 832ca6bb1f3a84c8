/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine's timer wheel (struct eth_tcell lists), from the outside:
 *
 * 1. A deadline moved earlier. A's SEND goes to a silent B with an ACK
 *    timeout of ~17 ms, so it is filed ~17 ms on; an RNR NAK asking for
 *    0.03 ms moves the deadline earlier, and the resend must come then,
 *    not when the ACK timeout's slot comes round.
 * 2. Neighbours kept when a QP leaves. Twelve QPs send at once to a silent
 *    B (timeout 12, ~17 ms; retry_cnt 2), so they are filed in the same few
 *    slots; every other one is destroyed or moved to RESET while filed. The
 *    rest must each fail with RETRY_EXC_ERR after three timeouts, as must
 *    six QPs made afterwards (which may reuse the destroyed QPs' numbers
 *    and cells): a removal that lost its neighbours' links loses their
 *    timers, and they would wait for ever.
 */
#include <inttypes.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "droce.h"
#include "droce_test.h"
#include "roce.h"
#include "dt_roce_frame.h"

#define NB_QP	12
#define NB_NEW	6

static struct rte_mempool *pool;

static struct droce_dev_stats stats_of(struct dt_dev *d)
{
	struct droce_dev_stats st;

	CHECK_OK(droce_dev_stats_get(d->ctx, &st));
	return st;
}

/*
 * Part 1: an RNR NAK's short wait under a longer ACK timeout, 0.03 ms
 * against ~17 ms. The wheel is hashed: 4096 ticks of a power of two of
 * TSC cycles, at most 50 us (at 2.6 GHz 25 us, a lap ~105 ms), so the
 * timeout is within one lap: a QP left in the timeout's slot would be
 * resent ~17 ms after its SEND, ~15 ms after the NAK. One try late may be
 * this noisy host (the engine not running); three late in a row is the
 * wheel.
 */
static double earlier_once(struct dt_env *env, struct ibv_mr *mr,
			   uint8_t *buf, uint32_t k)
{
	struct dt_dev *A = &env->dev[0];
	const uint32_t sq_psn = 0x3000 + 0x100 * k;
	struct dt_conn_cfg cc;
	struct dt_cq sa, ra;
	struct ibv_wc wc[2];
	struct ibv_qp *qa;
	uint64_t tx0, tx1 = 0;
	double t, late = 1.0;

	dt_conn_cfg_default(&cc);
	cc.timeout = 12;	/* ~17 ms */
	cc.rnr_retry = 7;
	qa = dt_qp_to_silent_b(env, &sa, &ra, &cc, 0xabc0 + k, sq_psn);
	tx0 = stats_of(A).tx_pkts;
	dt_post_one(qa, IBV_WR_SEND, 7, buf, 64, mr->lkey, NULL, 0,
		    IBV_SEND_SIGNALED);
	t = dt_now();
	while (dt_now() - t < 1.0 && stats_of(A).tx_pkts == tx0)
		(void)dt_cq_poll(&sa, wc, 2);	/* (drives an app engine) */
	/* Past any earlier slot it was filed in (an ARP poll's, 1 ms on):
	 * filed for the ACK timeout now. */
	t = dt_now();
	while (dt_now() - t < 0.002)
		(void)dt_cq_poll(&sa, wc, 2);
	CHECK_EQ(dt_cq_poll(&sa, wc, 2), 0);
	tx0 = stats_of(A).tx_pkts;
	/* RNR NAK, timer code 3: 0.03 ms (IBTA table 45). */
	dt_pair_aeth_to_a(env, pool, qa->qp_num, sq_psn, ROCE_AETH_RNR_NAK | 3, 0);
	t = dt_now();
	while (dt_now() - t < 1.0 && (tx1 = stats_of(A).tx_pkts) == tx0)
		(void)dt_cq_poll(&sa, wc, 2);
	if (tx1 != tx0)
		late = dt_now() - t;
	CHECK_EQ(tx1, tx0 + 1);
	dt_pair_aeth_to_a(env, pool, qa->qp_num, sq_psn,
			  ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID, 1);
	CHECK_EQ(dt_wait_wc(&sa, wc, 1, DT_WAIT_S, "SEND acknowledged"), 1);
	CHECK_EQ(wc[0].wr_id, 7u);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_SEND);
	CHECK_EQ(wc[0].qp_num, qa->qp_num);
	CHECK_OK(ibv_destroy_qp(qa));
	dt_cq_destroy(&sa);
	dt_cq_destroy(&ra);
	return late;
}

static void earlier(struct dt_env *env, struct ibv_mr *mr, uint8_t *buf)
{
	struct droce_dev_stats st0 = stats_of(&env->dev[0]), st;
	uint32_t k;
	double late = 1.0;

	for (k = 0; k < 3; k++) {
		late = earlier_once(env, mr, buf, k);
		printf("earlier deadline: resent %.2f ms after an RNR NAK asking for 0.03 ms (ACK timeout ~17 ms)\n",
		       late * 1e3);
		if (late < 0.008)
			break;
	}
	if (k == 3)
		DT_FAIL_(0, "three RNR waits of 0.03 ms took 8 ms or more each: left in the ACK timeout's slot?");
	st = stats_of(&env->dev[0]);
	CHECK_EQ(st.rx_rnr_naks - st0.rx_rnr_naks, k < 3 ? k + 1 : 3u);
}

struct silent_qp {
	struct ibv_qp *qp;
	struct dt_cq sa, ra;
	bool gone;
};

static void start(struct dt_env *env, struct silent_qp *q, uint32_t i,
		  struct ibv_mr *mr, uint8_t *buf)
{
	struct dt_conn_cfg cc;

	dt_conn_cfg_default(&cc);
	cc.timeout = 12;	/* ~17 ms, then 34 and 67 (backed off) */
	cc.retry_cnt = 2;
	q->qp = dt_qp_to_silent_b(env, &q->sa, &q->ra, &cc, 0xac00 + i,
				  0x100 * i);
	q->gone = false;
	dt_post_one(q->qp, IBV_WR_SEND, 100 + i, buf + 64 * i, 64, mr->lkey,
		    NULL, 0, IBV_SEND_SIGNALED);
}

/* Each live QP's one completion: RETRY_EXC_ERR for its SEND, in time. */
static void expect_retry_exc(struct silent_qp *q, uint32_t n, uint32_t first)
{
	for (uint32_t i = 0; i < n; i++) {
		struct ibv_wc wc[2];

		if (q[i].gone)
			continue;
		if (dt_wait_wc(&q[i].sa, wc, 1, 5.0, "RETRY_EXC_ERR") != 1) {
			DT_FAIL_(0, "QP %u: its timer never fired", first + i);
			continue;
		}
		CHECK_EQ(wc[0].wr_id, 100u + first + i);
		CHECK_EQ(wc[0].status, IBV_WC_RETRY_EXC_ERR);
		CHECK_EQ(wc[0].qp_num, q[i].qp->qp_num);
		CHECK_EQ(dt_qp_state(q[i].qp), IBV_QPS_ERR);
	}
}

static void teardown(struct silent_qp *q, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		if (q[i].qp)
			CHECK_OK(ibv_destroy_qp(q[i].qp));
		dt_cq_destroy(&q[i].sa);
		dt_cq_destroy(&q[i].ra);
	}
}

/* Part 2: QPs leave the wheel from between others. */
static void neighbours(struct dt_env *env, struct ibv_mr *mr, uint8_t *buf)
{
	struct dt_dev *A = &env->dev[0];
	struct silent_qp q[NB_QP], q2[NB_NEW];
	struct droce_dev_stats st0 = stats_of(A), st;
	uint32_t live = 0;

	for (uint32_t i = 0; i < NB_QP; i++)
		start(env, &q[i], i, mr, buf);
	usleep(5000);	/* all sent and filed, none timed out (17 ms) */
	for (uint32_t i = 1; i < NB_QP; i += 2) {
		if (i % 4 == 1) {
			CHECK_OK(ibv_destroy_qp(q[i].qp));
			q[i].qp = NULL;
		} else {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

			CHECK_OK(ibv_modify_qp(q[i].qp, &a, IBV_QP_STATE));
		}
		q[i].gone = true;
	}
	for (uint32_t i = 0; i < NB_NEW; i++)
		start(env, &q2[i], NB_QP + i, mr, buf);
	expect_retry_exc(q, NB_QP, 0);
	expect_retry_exc(q2, NB_NEW, NB_QP);
	for (uint32_t i = 0; i < NB_QP; i++)
		live += !q[i].gone;
	live += NB_NEW;
	/* Each live QP: three timeouts (retry_cnt 2), then failed. A QP
	 * gone in RESET or destroyed times out no more (~17 ms after the
	 * 5 ms it had, its deadline would have come). */
	usleep(300000);
	st = stats_of(A);
	CHECK_EQ(st.retry_exc - st0.retry_exc, live);
	CHECK_EQ(st.timeouts - st0.timeouts, 3u * live);
	printf("neighbours: %u QPs timed out and failed, %u left the wheel early\n",
	       live, NB_QP - (live - NB_NEW));
	teardown(q, NB_QP);
	teardown(q2, NB_NEW);
}

int main(void)
{
	struct dt_env env;
	struct ibv_mr *mr;
	uint8_t *buf = dt_alloc(4096);

	dt_watchdog(60);
	dt_init(&env, "test_timer_wheel", NULL, NULL);
	pool = dt_frame_pool("timer_wheel");
	mr = dt_reg_mr(env.dev[0].pd, buf, 4096, DT_ACCESS_ALL);
	CHECK_PTR(mr);
	memset(buf, 0x3c, 4096);

	earlier(&env, mr, buf);
	neighbours(&env, mr, buf);

	CHECK_OK(ibv_dereg_mr(mr));
	rte_mempool_free(pool);
	dt_fini(&env);
	free(buf);
	printf("test_timer_wheel: %s\n", dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}
