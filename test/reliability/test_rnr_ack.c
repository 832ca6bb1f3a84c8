/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * An RNR NAK, then an ACK past the PSN it named: the responder took a copy
 * of that request after all (a duplicate the link made, say, once a
 * receive was posted). The requester must leave its RNR wait at once and
 * send the rest again, not sit until the RNR timer, nor (what happened: the
 * ACK cleared the RNR timer and left the wait on) for ever.
 *
 * A's QP talks to a QP number that does not exist on B, so B stays silent;
 * the RNR NAK and the ACKs are built here with lib/roce and put on the wire
 * towards A (the B->A ring of the net_ring pair). A's ACK timeout is ~4 s
 * and the RNR NAK asks for 655 ms: a resend within 200 ms of the ACK can
 * only be the wait ending.
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

static struct rte_mempool *pool;

static uint64_t tx_of(struct dt_dev *d)
{
	struct droce_dev_stats st;

	CHECK_OK(droce_dev_stats_get(d->ctx, &st));
	return st.tx_pkts;
}

int main(void)
{
	struct dt_env env;
	struct dt_dev *A;
	struct dt_cq sa, ra;
	struct dt_conn_cfg cc;
	struct ibv_qp *qa;
	struct ibv_mr *mr;
	struct ibv_wc wc[2];
	struct droce_dev_stats st;
	uint8_t *buf = dt_alloc(4096);
	const uint32_t sq_psn = 0x2000, ghost_qpn = 0xabce;
	uint64_t tx0, tx1 = 0;
	double t;

	dt_watchdog(60);
	dt_init(&env, "test_rnr_ack", NULL, NULL);
	A = &env.dev[0];
	pool = dt_frame_pool("rnr_ack");
	dt_conn_cfg_default(&cc);
	cc.timeout = 20;	/* ~4 s: no ACK timeout inside this test */
	cc.rnr_retry = 7;
	qa = dt_qp_to_silent_b(&env, &sa, &ra, &cc, ghost_qpn, sq_psn);
	mr = dt_reg_mr(A->pd, buf, 4096, DT_ACCESS_ALL);
	CHECK_PTR(mr);
	memset(buf, 0x5a, 4096);

	/* Two SENDs: PSNs sq_psn and sq_psn + 1, both out (B drops them). */
	dt_post_one(qa, IBV_WR_SEND, 1, buf, 64, mr->lkey, NULL, 0,
		    IBV_SEND_SIGNALED);
	dt_post_one(qa, IBV_WR_SEND, 2, buf + 64, 64, mr->lkey, NULL, 0,
		    IBV_SEND_SIGNALED);
	usleep(20000);
	CHECK_EQ(dt_cq_poll(&sa, wc, 2), 0);

	/* RNR NAK for the first, timer code 0: 655.36 ms (IBTA table 45). */
	dt_pair_aeth_to_a(&env, pool, qa->qp_num, sq_psn, ROCE_AETH_RNR_NAK | 0, 0);
	usleep(20000);
	CHECK_EQ(dt_cq_poll(&sa, wc, 2), 0);
	tx0 = tx_of(A);

	/* The first acknowledged after all: its CQE, and the second resent
	 * at once. */
	dt_pair_aeth_to_a(&env, pool, qa->qp_num, sq_psn,
			  ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID, 1);
	CHECK_EQ(dt_wait_wc(&sa, wc, 1, DT_WAIT_S, "SEND 1 acknowledged"), 1);
	CHECK_EQ(wc[0].wr_id, 1u);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_SEND);
	CHECK_EQ(wc[0].qp_num, qa->qp_num);
	t = dt_now();
	while (dt_now() - t < 0.2 && (tx1 = tx_of(A)) == tx0) {
		(void)dt_cq_poll(&sa, wc, 2);	/* (drives an app engine) */
		usleep(1000);
	}
	if (tx1 == tx0)
		DT_FAIL_(0, "SEND 2 not resent within 200 ms of the ACK that ended the RNR wait");
	printf("RNR NAK, then ACK of its PSN: SEND 1 complete, SEND 2 resent after %.1f ms\n",
	       (dt_now() - t) * 1e3);

	dt_pair_aeth_to_a(&env, pool, qa->qp_num, sq_psn + 1,
			  ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID, 2);
	CHECK_EQ(dt_wait_wc(&sa, wc, 1, DT_WAIT_S, "SEND 2 acknowledged"), 1);
	CHECK_EQ(wc[0].wr_id, 2u);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);
	CHECK_OK(droce_dev_stats_get(A->ctx, &st));
	CHECK_EQ(st.rx_rnr_naks, 1u);

	return dt_silent_b_finish(&env, "test_rnr_ack", qa, &sa, &ra, mr, pool,
				  buf);
}
