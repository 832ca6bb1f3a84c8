/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A SEND's FIRST and ONLY of 512 bytes or more have their ICRC checked as
 * their payload is copied into the receive WQE's buffer (rx_icrc_late),
 * as MIDDLE and LAST do: the receive WQE, not the frame, picks that
 * memory. A damaged one is dropped and counted, never answered, completes
 * nothing, and the WQE it was given waits for the sound SEND, which
 * completes it byte for byte. With no receive posted a SEND is checked
 * first: a sound one draws an RNR NAK, a damaged one nothing at all.
 *
 * B stays silent (a QP number it does not have); the test speaks for it
 * with frames built by lib/roce onto the B->A ring.
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

#define MTU		1024
#define BUF		(2 * 4096)
#define ONLY_LEN	900
#define MULTI_LEN	(2 * MTU + 600)	/* a LAST long enough (ETH_RX_LATE_MIN) */
#define R1_OFF		256
#define R2_OFF		4096

static struct rte_mempool *pool;

/* A SEND frame from B to A's QP; damaged: its ICRC flipped. */
static struct rte_mbuf *send_pkt(struct dt_env *env, uint32_t qpn, uint8_t op,
				 uint32_t psn, const uint8_t *data,
				 uint32_t len, bool damaged)
{
	struct roce_pkt p;
	struct rte_mbuf *m;

	dt_pair_pkt_b_to_a(env, &p, op, qpn, psn);
	p.ack_req = op != ROCE_OP_SEND_FIRST && op != ROCE_OP_SEND_MIDDLE;
	p.payload_len = len;
	m = dt_roce_frame(pool, &p, data, 0);
	if (damaged)
		dt_frame_damage(m);
	return m;
}

static void post_recv(struct ibv_qp *qa, struct ibv_mr *mr, uint64_t wr_id,
		      uint8_t *local, uint32_t len)
{
	struct ibv_sge sge = { (uintptr_t)local, len, mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = wr_id, .sg_list = &sge,
				  .num_sge = 1 }, *bad;

	CHECK_OK(ibv_post_recv(qa, &wr, &bad));
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
	struct ibv_wc wc[2];
	struct dt_wc_exp e;
	struct rte_mbuf *m[3];
	uint8_t *buf = dt_alloc(BUF), data[MULTI_LEN], bad[MTU];
	const uint32_t psn = 0x777, ghost_qpn = 0xabd2;	/* (RQ PSN 0x777) */
	uint32_t ranges[2][2] = { { R1_OFF, ONLY_LEN }, { R2_OFF, MULTI_LEN } };

	dt_watchdog(60);
	dt_init(&env, "test_icrc_late_send", NULL, NULL);
	A = &env.dev[0];
	pool = dt_frame_pool("icrc_late_send");
	dt_conn_cfg_default(&cc);
	CHECK_EQ(dt_mtu_bytes(cc.mtu), (uint32_t)MTU);
	qa = dt_qp_to_silent_b(&env, &sa, &ra, &cc, ghost_qpn, 0x100);
	mr = dt_reg_mr(A->pd, buf, BUF, DT_ACCESS_ALL);
	CHECK_PTR(mr);
	memset(buf, 0x11, BUF);
	for (uint32_t i = 0; i < MULTI_LEN; i++)
		data[i] = (uint8_t)(i * 31 + 3);
	memset(bad, 'Z', sizeof(bad));

	/* No receive posted: a damaged ONLY is checked first and dropped,
	 * unanswered; a sound one draws an RNR NAK (checked first too). The
	 * first frame also gives A's QP B's MAC: no frame that could teach a
	 * MAC is placed late, so the QP sends once (the RNR NAK) before the
	 * late cases below. */
	CHECK_OK(droce_dev_stats_get(A->ctx, &s0));
	m[0] = send_pkt(&env, qa->qp_num, ROCE_OP_SEND_ONLY, psn, bad,
			ONLY_LEN, true);
	dt_pair_inject_burst_to_a(m, 1);
	dt_wait_verdicts(A, &ra, &s0, 1, &s1);
	DT_CHECK_RX_DELTA(s0, s1, 0, 1, 0);
	CHECK_EQ(s1.tx_pkts - s0.tx_pkts, 0u);
	m[0] = send_pkt(&env, qa->qp_num, ROCE_OP_SEND_ONLY, psn, data,
			ONLY_LEN, false);
	dt_pair_inject_burst_to_a(m, 1);
	dt_wait_verdicts(A, &ra, &s1, 1, &s2);
	DT_CHECK_RX_DELTA(s1, s2, 1, 0, 0);
	CHECK_EQ(s2.tx_rnr_naks - s1.tx_rnr_naks, 1u);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);
	printf("no receive posted: a damaged ONLY dropped unanswered, a sound "
	       "one RNR NAKed, both checked first\n");

	/* A damaged ONLY, then the sound one, into receive 1. */
	post_recv(qa, mr, 1, buf + R1_OFF, 1000);
	post_recv(qa, mr, 2, buf + R2_OFF, 4000);
	CHECK_OK(droce_dev_stats_get(A->ctx, &s0));
	m[0] = send_pkt(&env, qa->qp_num, ROCE_OP_SEND_ONLY, psn, bad,
			ONLY_LEN, true);
	dt_pair_inject_burst_to_a(m, 1);
	dt_wait_verdicts(A, &ra, &s0, 1, &s1);
	printf("damaged ONLY: rx_pkts +%" PRIu64 ", rx_icrc_err +%" PRIu64
	       ", rx_icrc_late +%" PRIu64 ", tx_pkts +%" PRIu64 "\n",
	       s1.rx_pkts - s0.rx_pkts, s1.rx_icrc_err - s0.rx_icrc_err,
	       s1.rx_icrc_late - s0.rx_icrc_late, s1.tx_pkts - s0.tx_pkts);
	DT_CHECK_RX_DELTA(s0, s1, 0, 1, 1);
	CHECK_EQ(s1.tx_pkts - s0.tx_pkts, 0u);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);
	m[0] = send_pkt(&env, qa->qp_num, ROCE_OP_SEND_ONLY, psn, data,
			ONLY_LEN, false);
	dt_pair_inject_burst_to_a(m, 1);
	CHECK_EQ(dt_wait_wc(&ra, wc, 1, DT_WAIT_S, "receive 1"), 1);
	e = dt_exp_recv(1, IBV_WR_SEND, ONLY_LEN, qa->qp_num, ghost_qpn, 0);
	CHECK_WC(&wc[0], &e);
	usleep(20000);
	CHECK_OK(droce_dev_stats_get(A->ctx, &s2));
	DT_CHECK_RX_DELTA(s1, s2, 1, 0, 1);
	CHECK_EQ(s2.tx_acks - s1.tx_acks, 1u);
	CHECK_EQ(s2.tx_naks - s1.tx_naks, 0u);
	dt_check_ranges(buf, BUF, 0x11, data, ranges, 1);
	printf("SEND 1 (ONLY) received byte for byte, one ACK\n");

	/* A damaged FIRST, then FIRST, MIDDLE, LAST sound, into receive 2. */
	CHECK_OK(droce_dev_stats_get(A->ctx, &s0));
	m[0] = send_pkt(&env, qa->qp_num, ROCE_OP_SEND_FIRST, psn + 1, bad,
			MTU, true);
	dt_pair_inject_burst_to_a(m, 1);
	dt_wait_verdicts(A, &ra, &s0, 1, &s1);
	DT_CHECK_RX_DELTA(s0, s1, 0, 1, 1);
	CHECK_EQ(s1.tx_pkts - s0.tx_pkts, 0u);
	m[0] = send_pkt(&env, qa->qp_num, ROCE_OP_SEND_FIRST, psn + 1, data,
			MTU, false);
	m[1] = send_pkt(&env, qa->qp_num, ROCE_OP_SEND_MIDDLE, psn + 2,
			data + MTU, MTU, false);
	m[2] = send_pkt(&env, qa->qp_num, ROCE_OP_SEND_LAST, psn + 3,
			data + 2 * MTU, MULTI_LEN - 2 * MTU, false);
	dt_pair_inject_burst_to_a(m, 3);
	CHECK_EQ(dt_wait_wc(&ra, wc, 1, DT_WAIT_S, "receive 2"), 1);
	e = dt_exp_recv(2, IBV_WR_SEND, MULTI_LEN, qa->qp_num, ghost_qpn, 0);
	CHECK_WC(&wc[0], &e);
	usleep(20000);
	CHECK_OK(droce_dev_stats_get(A->ctx, &s2));
	DT_CHECK_RX_DELTA(s1, s2, 3, 0, 3);
	CHECK_EQ(s2.tx_naks - s1.tx_naks, 0u);
	CHECK(s2.tx_acks - s1.tx_acks >= 1u);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);
	dt_check_ranges(buf, BUF, 0x11, data, ranges, 2);
	printf("SEND 2 (FIRST, MIDDLE, LAST) received byte for byte\n");

	return dt_silent_b_finish(&env, "test_icrc_late_send", qa, &sa, &ra,
				  mr, pool, buf);
}
