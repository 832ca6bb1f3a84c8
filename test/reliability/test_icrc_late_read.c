/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A READ's FIRST and ONLY responses have their ICRC checked as their
 * payload is copied into the READ's buffer (rx_icrc_late), as MIDDLE and
 * LAST do: the requester's own WQE, not the frame, picks that memory. A
 * damaged one is dropped and counted, completes nothing, leaves the QP in
 * RTS, and the sound response that follows completes the READ byte for
 * byte, nothing outside its buffer touched. A response that also
 * acknowledges a WRITE before the READ is checked first, as before.
 *
 * A's READs go to a QP number B does not have, so B stays silent and the
 * test answers for it (frames built with lib/roce onto the B->A ring).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "droce.h"
#include "droce_test.h"
#include "roce.h"
#include "dt_roce_frame.h"

#define MTU	1024
#define BUF	(3 * 4096)
#define ONLY_OFF	256	/* READ 1: one response, ONLY */
#define ONLY_LEN	900
#define MULTI_OFF	(4096 + 100)	/* READ 2: FIRST, MIDDLE, LAST */
#define MULTI_LEN	(2 * MTU + 600)	/* a LAST long enough (ETH_RX_LATE_MIN) */
#define AFTER_OFF	(2 * 4096 + 64)	/* READ 4, behind WRITE 3 */

static struct rte_mempool *pool;
static uint32_t msn;

/* A READ response from B to A's QP; damaged: its ICRC flipped. */
static struct rte_mbuf *resp(struct dt_env *env, uint32_t qpn, uint8_t op,
			     uint32_t psn, const uint8_t *data, uint32_t len,
			     bool damaged)
{
	struct roce_pkt p;
	struct rte_mbuf *m;

	dt_pair_pkt_b_to_a(env, &p, op, qpn, psn);
	p.aeth_syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID;
	p.aeth_msn = ++msn;
	p.payload_len = len;
	m = dt_roce_frame(pool, &p, data, 0);
	if (damaged)
		dt_frame_damage(m);
	return m;
}

/* A's WQE towards B's nonexistent memory (B never answers for itself). */
#define POST(op, wr_id, local, len)					\
	dt_post_one(qa, op, wr_id, local, len, mr->lkey,		\
		    (void *)(uintptr_t)0x10000, 0x4242, IBV_SEND_SIGNALED)

int main(void)
{
	struct dt_env env;
	struct dt_dev *A;
	struct dt_cq sa, ra;
	struct dt_conn_cfg cc;
	struct droce_dev_stats s0, s1, s2;
	struct ibv_qp *qa;
	struct ibv_mr *mr;
	struct ibv_wc wc[4];
	struct dt_wc_exp e;
	struct rte_mbuf *m[3];
	uint8_t *buf = dt_alloc(BUF), data[MULTI_LEN], bad[MTU];
	const uint32_t sq_psn = 0x2468, ghost_qpn = 0xabd1;
	uint32_t ranges[3][2] = {
		{ ONLY_OFF, ONLY_LEN }, { MULTI_OFF, MULTI_LEN },
		{ AFTER_OFF, ONLY_LEN },
	};

	dt_watchdog(60);
	dt_init(&env, "test_icrc_late_read", NULL, NULL);
	A = &env.dev[0];
	pool = dt_frame_pool("icrc_late_read");
	dt_conn_cfg_default(&cc);
	CHECK_EQ(dt_mtu_bytes(cc.mtu), (uint32_t)MTU);
	cc.timeout = 20;	/* ~4 s: no retry before the answers */
	qa = dt_qp_to_silent_b(&env, &sa, &ra, &cc, ghost_qpn, sq_psn);
	mr = dt_reg_mr(A->pd, buf, BUF, DT_ACCESS_ALL);
	CHECK_PTR(mr);
	memset(buf, 0x11, BUF);
	for (uint32_t i = 0; i < MULTI_LEN; i++)
		data[i] = (uint8_t)(i * 29 + 7);
	memset(bad, 'Z', sizeof(bad));

	/* READ 1, one response: a damaged ONLY, then the sound one. */
	POST(IBV_WR_RDMA_READ, 1, buf + ONLY_OFF, ONLY_LEN);
	usleep(20000);	/* out, and dropped by B */
	CHECK_OK(droce_dev_stats_get(A->ctx, &s0));
	m[0] = resp(&env, qa->qp_num, ROCE_OP_READ_RESP_ONLY, sq_psn, bad,
		    ONLY_LEN, true);
	dt_pair_inject_burst_to_a(m, 1);
	dt_wait_verdicts(A, &sa, &s0, 1, &s1);
	printf("damaged ONLY: rx_pkts +%" PRIu64 ", rx_icrc_err +%" PRIu64
	       ", rx_icrc_late +%" PRIu64 "\n", s1.rx_pkts - s0.rx_pkts,
	       s1.rx_icrc_err - s0.rx_icrc_err,
	       s1.rx_icrc_late - s0.rx_icrc_late);
	DT_CHECK_RX_DELTA(s0, s1, 0, 1, 1);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);
	m[0] = resp(&env, qa->qp_num, ROCE_OP_READ_RESP_ONLY, sq_psn, data,
		    ONLY_LEN, false);
	dt_pair_inject_burst_to_a(m, 1);
	CHECK_EQ(dt_wait_wc(&sa, wc, 1, DT_WAIT_S, "READ 1"), 1);
	e = dt_exp_send(1, IBV_WR_RDMA_READ, ONLY_LEN, qa->qp_num);
	CHECK_WC(&wc[0], &e);
	CHECK_OK(droce_dev_stats_get(A->ctx, &s2));
	DT_CHECK_RX_DELTA(s1, s2, 1, 0, 1);
	dt_check_ranges(buf, BUF, 0x11, data, ranges, 1);
	printf("READ 1 (ONLY) complete byte for byte\n");

	/* READ 2, three responses: a damaged FIRST, then all three sound. */
	POST(IBV_WR_RDMA_READ, 2, buf + MULTI_OFF, MULTI_LEN);
	usleep(20000);
	CHECK_OK(droce_dev_stats_get(A->ctx, &s0));
	m[0] = resp(&env, qa->qp_num, ROCE_OP_READ_RESP_FIRST, sq_psn + 1,
		    bad, MTU, true);
	dt_pair_inject_burst_to_a(m, 1);
	dt_wait_verdicts(A, &sa, &s0, 1, &s1);
	DT_CHECK_RX_DELTA(s0, s1, 0, 1, 1);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);
	m[0] = resp(&env, qa->qp_num, ROCE_OP_READ_RESP_FIRST, sq_psn + 1,
		    data, MTU, false);
	m[1] = resp(&env, qa->qp_num, ROCE_OP_READ_RESP_MIDDLE, sq_psn + 2,
		    data + MTU, MTU, false);
	m[2] = resp(&env, qa->qp_num, ROCE_OP_READ_RESP_LAST, sq_psn + 3,
		    data + 2 * MTU, MULTI_LEN - 2 * MTU, false);
	dt_pair_inject_burst_to_a(m, 3);
	CHECK_EQ(dt_wait_wc(&sa, wc, 1, DT_WAIT_S, "READ 2"), 1);
	e = dt_exp_send(2, IBV_WR_RDMA_READ, MULTI_LEN, qa->qp_num);
	CHECK_WC(&wc[0], &e);
	CHECK_OK(droce_dev_stats_get(A->ctx, &s2));
	DT_CHECK_RX_DELTA(s1, s2, 3, 0, 3);
	dt_check_ranges(buf, BUF, 0x11, data, ranges, 2);
	printf("READ 2 (FIRST, MIDDLE, LAST) complete byte for byte\n");

	/* WRITE 3 (B never acknowledges it), READ 4: its ONLY response
	 * acknowledges the WRITE too, so its ICRC is checked first. */
	POST(IBV_WR_RDMA_WRITE, 3, buf, 64);
	POST(IBV_WR_RDMA_READ, 4, buf + AFTER_OFF, ONLY_LEN);
	usleep(20000);
	CHECK_OK(droce_dev_stats_get(A->ctx, &s0));
	m[0] = resp(&env, qa->qp_num, ROCE_OP_READ_RESP_ONLY, sq_psn + 5,
		    data, ONLY_LEN, false);
	dt_pair_inject_burst_to_a(m, 1);
	CHECK_EQ(dt_wait_wc(&sa, wc, 2, DT_WAIT_S, "WRITE 3, READ 4"), 2);
	e = dt_exp_send(3, IBV_WR_RDMA_WRITE, 64, qa->qp_num);
	CHECK_WC(&wc[0], &e);
	e = dt_exp_send(4, IBV_WR_RDMA_READ, ONLY_LEN, qa->qp_num);
	CHECK_WC(&wc[1], &e);
	CHECK_OK(droce_dev_stats_get(A->ctx, &s1));
	DT_CHECK_RX_DELTA(s0, s1, 1, 0, 0);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);
	dt_check_ranges(buf, BUF, 0x11, data, ranges, 3);
	printf("READ 4 behind an unacknowledged WRITE: checked first, both "
	       "complete\n");

	return dt_silent_b_finish(&env, "test_icrc_late_read", qa, &sa, &ra,
				  mr, pool, buf);
}
