/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_post_after_cqe: a send queue kept exactly full. Every completion
 * polled frees one slot, and the verbs contract says a post into it must
 * succeed at once. With the engine on its own lcore, the engine once made
 * the CQE visible before it published the send queue's consumer index, so
 * a post right after the poll could fail with ENOMEM (seen by droce-perf
 * send_bw at 64 KiB in 5 of 8 runs).
 *
 * An RC pair between the two devices (engine on lcore 1 when there are two
 * lcores), a send queue of DEPTH, DEPTH signalled 8-byte WRITEs in flight
 * at all times for ITERS messages or BUDGET_S seconds: each completion is
 * checked (in order, status, opcode, length) and answered by exactly one
 * post, which must return 0. Every WRITE puts its sequence number into one
 * of SLOTS 8-byte slots of the peer's buffer; at the end every slot holds
 * the last sequence number written to it, byte for byte.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "droce_test.h"

#define DEPTH		16
#define ITERS		200000u
#define BUDGET_S	8.0
#define SLOTS		64u

static struct dt_env env;

static void abort_hook(void)
{
	dt_dump_stats(&env);
}

static int post_write(struct ibv_qp *qp, uint64_t seq, uint64_t *src,
		      struct ibv_mr *smr, uint64_t raddr, uint32_t rkey)
{
	uint64_t *s = &src[seq % (2 * DEPTH)];
	struct ibv_sge sge = {
		.addr = (uintptr_t)s, .length = 8, .lkey = smr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = seq, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr + (seq % SLOTS) * 8,
			     .rkey = rkey },
	}, *bad = NULL;

	/* A source slot is reused only after its WRITE completed (2 x DEPTH
	 * slots, DEPTH in flight). */
	*s = seq;
	return ibv_post_send(qp, &wr, &bad);
}

int main(int argc, char **argv)
{
	struct dt_dev *A, *B;
	struct dt_cq scq, rcq, scq_b, rcq_b;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	struct ibv_qp_cap cap;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *smr, *dmr;
	uint64_t *src, *dst, next_post = 0, next_done = 0, enomem = 0;
	double t0;

	(void)argc;
	dt_seed_init();
	dt_watchdog(60);
	dt_set_abort_hook(abort_hook);
	dt_init(&env, argv[0], NULL, NULL);
	A = &env.dev[0];
	B = &env.dev[1];

	dt_cq_create(A, 4 * DEPTH, false, &scq);
	dt_cq_create(A, 4 * DEPTH, false, &rcq);
	dt_cq_create(B, 4 * DEPTH, false, &scq_b);
	dt_cq_create(B, 4 * DEPTH, false, &rcq_b);
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = DEPTH;
	qc.max_inline_data = 0;
	qa = dt_qp_create(A, scq.cq, rcq.cq, &qc, &cap);
	CHECK_PTR(qa);
	CHECK_EQ(cap.max_send_wr, DEPTH);
	qb = dt_qp_create(B, scq_b.cq, rcq_b.cq, &qc, NULL);
	CHECK_PTR(qb);
	dt_conn_cfg_default(&cc);
	dt_connect(A, qa, 0x123, B, qb, 0x456, &cc);

	src = dt_alloc(2 * DEPTH * 8);
	dst = dt_alloc(SLOTS * 8);
	smr = dt_reg_mr(A->pd, src, 2 * DEPTH * 8, IBV_ACCESS_LOCAL_WRITE);
	CHECK_PTR(smr);
	dmr = dt_reg_mr(B->pd, dst, SLOTS * 8, DT_ACCESS_ALL);
	CHECK_PTR(dmr);

	for (; next_post < DEPTH; next_post++)
		CHECK_OK(post_write(qa, next_post, src, smr, (uintptr_t)dst,
				    dmr->rkey));
	t0 = dt_now();
	while (next_done < next_post) {
		struct ibv_wc wc;
		int n = ibv_poll_cq(scq.cq, 1, &wc);
		int ret;

		CHECK_CMP(n, >=, 0);
		if (n == 0) {
			if (dt_now() - t0 > BUDGET_S + DT_WAIT_S) {
				printf("no completion for message %" PRIu64 "\n",
				       next_done);
				dt_abort();
			}
			continue;
		}
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.opcode, IBV_WC_RDMA_WRITE);
		CHECK_EQ(wc.wr_id, next_done);
		CHECK_EQ(wc.qp_num, qa->qp_num);
		next_done++;
		if (next_post >= ITERS || dt_now() - t0 > BUDGET_S)
			continue;	/* drain */
		/* The slot just completed is free: this post must succeed. */
		ret = post_write(qa, next_post, src, smr, (uintptr_t)dst,
				 dmr->rkey);
		if (ret == ENOMEM) {
			if (enomem++ < 5)
				printf("ENOMEM posting message %" PRIu64
				       " right after completion %" PRIu64 "\n",
				       next_post, next_done - 1);
			/* Carry on to count how often; fail below. */
			while ((ret = post_write(qa, next_post, src, smr,
						 (uintptr_t)dst, dmr->rkey)) == ENOMEM)
				;
		}
		CHECK_OK(ret);
		next_post++;
	}
	printf("%" PRIu64 " WRITEs in %.2f s, queue of %d kept full; "
	       "ENOMEM after a completion: %" PRIu64 "\n", next_done,
	       dt_now() - t0, DEPTH, enomem);
	EXPECT_EQ(enomem, 0);
	CHECK_CMP(next_done, >=, 10 * DEPTH);

	/* Slot k holds the last sequence number written to it. */
	for (uint64_t k = 0; k < SLOTS && k < next_done; k++)
		EXPECT_EQ(dst[k], next_done - 1 - ((next_done - 1 - k) % SLOTS));
	EXPECT_EQ(dt_cq_drain_unexpected(&rcq_b, "B recv CQ"), 0);

	CHECK_OK(ibv_destroy_qp(qa));
	CHECK_OK(ibv_destroy_qp(qb));
	CHECK_OK(ibv_dereg_mr(smr));
	CHECK_OK(ibv_dereg_mr(dmr));
	dt_cq_destroy(&scq);
	dt_cq_destroy(&rcq);
	dt_cq_destroy(&scq_b);
	dt_cq_destroy(&rcq_b);
	free(src);
	free(dst);
	return dt_finish(&env);
}
