/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A peer that answers wrongly: A's READ goes to a QP number that does not
 * exist on B, so B stays silent, and a hostile frame built here with
 * lib/roce (not droce's engine) is put on the wire towards A by enqueuing it
 * on the B->A ring of the net_ring pair: a READ response with the right
 * PSN but the wrong length. A must complete the READ with
 * IBV_WC_BAD_RESP_ERR (IBTA 9.9.2.3), move the QP to error and flush the
 * rest; a response for nothing outstanding is dropped and counted; and
 * nothing lands in A's memory outside the READ's buffer.
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

/* A frame from B to A's QP, as any peer could send it. */
static void inject(struct dt_env *env, uint8_t op, uint32_t qpn, uint32_t psn,
		   uint32_t payload_len)
{
	struct roce_pkt p;

	dt_pair_pkt_b_to_a(env, &p, op, qpn, psn);
	p.aeth_syndrome = ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID;
	p.aeth_msn = 1;
	p.payload_len = payload_len;
	dt_pair_inject_to_a(dt_roce_frame(pool, &p, NULL, 0xee));
}

int main(void)
{
	struct dt_env env;
	struct dt_dev *A, *B;
	struct dt_cq sa, ra;
	struct dt_conn_cfg cc;
	struct ibv_qp *qa;
	struct ibv_mr *mr;
	struct ibv_wc wc[2];
	struct droce_dev_stats s0, s1;
	uint8_t *buf = dt_alloc(3 * 4096);
	const uint32_t sq_psn = 0x1234, ghost_qpn = 0xabcd;

	dt_watchdog(60);
	dt_init(&env, "test_bad_resp", NULL, NULL);
	A = &env.dev[0];
	B = &env.dev[1];
	(void)B;
	pool = dt_frame_pool("bad_resp");
	dt_conn_cfg_default(&cc);
	cc.timeout = 20;	/* ~4 s: no retry before our answer arrives */
	qa = dt_qp_to_silent_b(&env, &sa, &ra, &cc, ghost_qpn, sq_psn);
	mr = dt_reg_mr(A->pd, buf, 3 * 4096, DT_ACCESS_ALL);
	CHECK_PTR(mr);
	memset(buf, 0x11, 3 * 4096);

	/* A response for nothing outstanding: dropped, counted, harmless. */
	CHECK_OK(droce_dev_stats_get(A->ctx, &s0));
	inject(&env, ROCE_OP_READ_RESP_ONLY, qa->qp_num, sq_psn, 64);
	for (int i = 0; i < 100; i++) {
		CHECK_EQ(dt_cq_poll(&sa, wc, 2), 0);
		usleep(1000);
	}
	CHECK_OK(droce_dev_stats_get(A->ctx, &s1));
	CHECK(s1.rx_pkts > s0.rx_pkts);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_RTS);

	/* READ 100 bytes into the middle page; the answer carries 64. */
	{
		struct ibv_sge sge = { (uintptr_t)buf + 4096, 100, mr->lkey };
		struct ibv_send_wr wr[2] = {
			{ .wr_id = 1, .sg_list = &sge, .num_sge = 1,
			  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
			  .next = &wr[1] },
			{ .wr_id = 2, .sg_list = &sge, .num_sge = 1,
			  .opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED },
		}, *bad;

		wr[0].wr.rdma.remote_addr = 0x10000;
		wr[0].wr.rdma.rkey = 0x4242;
		wr[1].wr.rdma = wr[0].wr.rdma;
		CHECK_OK(ibv_post_send(qa, wr, &bad));
	}
	usleep(20000);	/* the READs are out (and dropped by B) */
	inject(&env, ROCE_OP_READ_RESP_ONLY, qa->qp_num, sq_psn, 64);
	CHECK_EQ(dt_wait_wc(&sa, wc, 2, DT_WAIT_S, "READ answered badly"), 2);
	CHECK_EQ(wc[0].wr_id, 1u);
	CHECK_EQ(wc[0].status, IBV_WC_BAD_RESP_ERR);
	CHECK_EQ(wc[1].wr_id, 2u);
	CHECK_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(dt_qp_state(qa), IBV_QPS_ERR);
	/* Nothing of the hostile payload anywhere in A's buffer. */
	for (int i = 0; i < 3 * 4096; i++)
		if (buf[i] != 0x11)
			DT_FAIL_(1, "byte %d of A's buffer changed to 0x%02x", i, buf[i]);
	printf("READ with a wrong-length response: IBV_WC_BAD_RESP_ERR, QP in error, memory untouched\n");

	return dt_silent_b_finish(&env, "test_bad_resp", qa, &sa, &ra, mr, pool,
				  buf);
}
