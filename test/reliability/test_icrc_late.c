/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A damaged WRITE MIDDLE right behind its FIRST, both in one receive
 * burst, at a QP that has never sent (its template is not ready: the peer's
 * MAC comes with the FIRST). The MIDDLE's ICRC is checked as its payload
 * is copied into place (rx_icrc_late), as it is for any later MIDDLE; it
 * is dropped, counted, never answered, and the MIDDLE and LAST sent again
 * complete the WRITE byte for byte.
 *
 * The hostile suite's bad_icrc_middle found the ICRC checked before
 * placement once in many runs: its FIRST and MIDDLE had come in one burst,
 * and the QP's template, waiting for its first send, was not ready for the
 * MIDDLE. Here the burst is certain: both frames go onto the B->A ring of
 * the net_ring pair in one bulk enqueue, built with lib/roce for a QP
 * number B does not have (B stays silent; the test speaks for it).
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
#define LEN	(2 * MTU + 952)
#define OFF	256		/* where the WRITE lands in the MR */

static struct rte_mempool *pool;

static struct rte_mbuf *write_pkt(struct dt_env *env, uint32_t qpn,
				  uint8_t op, uint32_t psn,
				  const struct ibv_mr *mr, const uint8_t *data,
				  uint32_t len, bool ackreq)
{
	struct roce_pkt p;

	dt_pair_pkt_b_to_a(env, &p, op, qpn, psn);
	p.ack_req = ackreq;
	if (op == ROCE_OP_WRITE_FIRST) {
		p.reth_va = (uintptr_t)mr->addr + OFF;
		p.reth_rkey = mr->rkey;
		p.reth_len = LEN;
	}
	p.payload_len = len;
	return dt_roce_frame(pool, &p, data, 0);
}

int main(void)
{
	struct dt_env env;
	struct dt_dev *A;
	struct dt_cq sa, ra;
	struct dt_conn_cfg cc;
	struct droce_dev_stats s0, s1, s2;
	struct ibv_qp *qa;
	struct ibv_mr *mr;
	struct rte_mbuf *burst[2];
	uint8_t *buf = dt_alloc(4096), data[LEN], bad[MTU];
	const uint32_t rq_psn = 0x777, ghost_qpn = 0xabcf;

	dt_watchdog(60);
	dt_init(&env, "test_icrc_late", NULL, NULL);
	A = &env.dev[0];
	pool = dt_frame_pool("icrc_late");
	dt_conn_cfg_default(&cc);
	CHECK_EQ(dt_mtu_bytes(cc.mtu), (uint32_t)MTU);
	/* (dt_qp_to_silent_b: RQ PSN 0x777) */
	qa = dt_qp_to_silent_b(&env, &sa, &ra, &cc, ghost_qpn, 0x100);
	mr = dt_reg_mr(A->pd, buf, 4096, DT_ACCESS_ALL);
	CHECK_PTR(mr);
	memset(buf, 0xc5, 4096);
	for (uint32_t i = 0; i < LEN; i++)
		data[i] = (uint8_t)(i * 13 + 5);
	memset(bad, 'Z', sizeof(bad));
	CHECK_OK(droce_dev_stats_get(A->ctx, &s0));
	CHECK_EQ(s0.tx_pkts, 0u);	/* the QP has never sent */

	/* FIRST, and a MIDDLE whose ICRC is wrong, in one burst. */
	burst[0] = write_pkt(&env, qa->qp_num, ROCE_OP_WRITE_FIRST, rq_psn, mr,
			     data, MTU, false);
	burst[1] = write_pkt(&env, qa->qp_num, ROCE_OP_WRITE_MIDDLE,
			     rq_psn + 1, mr, bad, MTU, false);
	dt_frame_damage(burst[1]);
	dt_pair_inject_burst_to_a(burst, 2);
	dt_wait_verdicts(A, &ra, &s0, 2, &s1);
	printf("FIRST + damaged MIDDLE in one burst: rx_pkts +%" PRIu64
	       ", rx_icrc_err +%" PRIu64 ", rx_icrc_late +%" PRIu64
	       ", tx_acks +%" PRIu64 ", tx_naks +%" PRIu64 "\n",
	       s1.rx_pkts - s0.rx_pkts, s1.rx_icrc_err - s0.rx_icrc_err,
	       s1.rx_icrc_late - s0.rx_icrc_late, s1.tx_acks - s0.tx_acks,
	       s1.tx_naks - s0.tx_naks);
	DT_CHECK_RX_DELTA(s0, s1, 1, 1, 1);
	CHECK_EQ(s1.tx_naks - s0.tx_naks, 0u);
	/* droce acknowledges what it took at the end of a burst, AckReq or
	 * not: the FIRST's, at most (the hostile suite checks its PSN). */
	CHECK(s1.tx_acks - s0.tx_acks <= 1u);
	CHECK_EQ(s1.rx_seq_err - s0.rx_seq_err, 0u);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);

	/* The MIDDLE again, undamaged, and the LAST asking for an ACK. */
	burst[0] = write_pkt(&env, qa->qp_num, ROCE_OP_WRITE_MIDDLE,
			     rq_psn + 1, mr, data + MTU, MTU, false);
	burst[1] = write_pkt(&env, qa->qp_num, ROCE_OP_WRITE_LAST, rq_psn + 2,
			     mr, data + 2 * MTU, LEN - 2 * MTU, true);
	dt_pair_inject_burst_to_a(burst, 2);
	dt_wait_verdicts(A, &ra, &s1, 2, &s2);
	DT_CHECK_RX_DELTA(s1, s2, 2, 0, 2);
	CHECK_EQ(s2.tx_acks - s1.tx_acks, 1u);
	CHECK_EQ(s2.tx_naks - s1.tx_naks, 0u);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);
	CHECK(memcmp(buf + OFF, data, LEN) == 0);
	for (uint32_t i = 0; i < 4096; i++)
		if (i < OFF || i >= OFF + LEN)
			CHECK_EQ(buf[i], 0xc5);
	printf("MIDDLE and LAST again: the WRITE complete byte for byte, one "
	       "ACK, the QP in RTS\n");

	return dt_silent_b_finish(&env, "test_icrc_late", qa, &sa, &ra, mr, pool,
				  buf);
}
