/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The order of an app-driven engine's iteration (lcore=app): work, transmit,
 * then receive. One verbs call that drives the engine sends what was posted
 * since the last one and returns with what arrived already in place (a
 * WRITE's bytes, a receive CQE); the answers that owes (the ACK, a READ
 * response) leave at the start of the next call, with what the
 * application posted in between, so a ping-pong's ACK is off its critical
 * path. An application that stops calling has them sent by the keeper
 * thread within a few milliseconds.
 *
 * Both devices of the net_ring pair are served by the one app-driven engine
 * of this process, so one call moves a frame from A to B and B's answer in
 * the next call back to A: WRITE, SEND and READ, random sizes, every CQE
 * field, every byte, the ACK counter at each step. A thread descheduled
 * between two calls for longer than the keeper's period would let the
 * keeper run in between: such a step is timed and left out, not failed.
 * Last, a poll turns the engine only when it finds its CQ empty: the
 * engine's loop count stays still across polls that take completions
 * already there, and moves by one at the poll that finds none.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "droce.h"
#include "droce_test.h"

#define BUF (1 << 16)
#define STEPS 60
#define GAP_MAX_NS 300000	/* well under the keeper's 1 ms of silence */

static struct dt_env env;
static struct dt_dev *A, *B;

static uint64_t acks_of(struct dt_dev *d)
{
	struct droce_dev_stats st;

	CHECK_OK(droce_dev_stats_get(d->ctx, &st));
	return st.tx_acks;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void check_wc(const struct ibv_wc *wc, uint64_t id,
		     enum ibv_wc_opcode op, uint32_t len, uint32_t qpn)
{
	CHECK_EQ(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ(wc->wr_id, id);
	CHECK_EQ(wc->opcode, op);
	CHECK_EQ(wc->qp_num, qpn);
	if (op == IBV_WC_RECV || op == IBV_WC_RDMA_READ)
		CHECK_EQ(wc->byte_len, len);
	if (op == IBV_WC_RECV)
		CHECK_EQ(wc->wc_flags & IBV_WC_WITH_IMM, 0u);
}

int main(void)
{
	struct dt_rc_pair rp;
	struct dt_conn_cfg cc;
	struct dt_qp_cfg qc;
	uint8_t *a_buf = dt_alloc(BUF), *b_buf = dt_alloc(BUF);
	struct ibv_mr *mra, *mrb;
	uint32_t checked = 0, timed_out = 0;

	dt_watchdog(120);
	dt_seed_init();
	dt_init(&env, "test_app_order", "ip=198.18.0.1,lcore=app,post_drive=0",
		"ip=198.18.0.2,lcore=app,post_drive=0");
	A = &env.dev[0];
	B = &env.dev[1];
	dt_qp_cfg_default(&qc);
	dt_conn_cfg_default(&cc);
	dt_rc_pair_open(&rp, A, B, 64, &qc, &cc, NULL, 0x300, 0x400);
	mra = dt_reg_mr(A->pd, a_buf, BUF, DT_ACCESS_ALL);
	mrb = dt_reg_mr(B->pd, b_buf, BUF, DT_ACCESS_ALL);
	CHECK_PTR(mra);
	CHECK_PTR(mrb);
	/* Resolve the peers' MACs first: ARP frames are not counted below. */
	dt_rdma_checked(&rp, IBV_WR_RDMA_WRITE, 1, a_buf, 64, mra->lkey,
			b_buf, mrb->rkey, "first WRITE");
	dt_post_one(rp.qb, IBV_WR_RDMA_WRITE, 2, b_buf, 64, mrb->lkey, a_buf,
		    mra->rkey, IBV_SEND_SIGNALED);
	{
		struct ibv_wc wc;

		CHECK_EQ(dt_wait_wc(&rp.sb, &wc, 1, DT_WAIT_S, "first WRITE back"), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	}

	for (uint32_t s = 0; s < STEPS; s++) {
		enum ibv_wr_opcode op = (enum ibv_wr_opcode[]){ IBV_WR_RDMA_WRITE,
			IBV_WR_SEND, IBV_WR_RDMA_READ }[s % 3];
		uint32_t len = (uint32_t)dt_rand_range(1, 256);
		uint32_t off = (uint32_t)dt_rand_range(0, BUF / 2 - 256);
		uint8_t *src = op == IBV_WR_RDMA_READ ? b_buf + off : a_buf + off;
		uint8_t *dst = op == IBV_WR_RDMA_READ ? a_buf + BUF / 2 + off :
						      b_buf + BUF / 2 + off;
		struct dt_cq *first = op == IBV_WR_SEND ? &rp.rb : &rp.sa;
		uint64_t acks0, acks1, t0, t1, t2;
		struct ibv_wc wc;
		int n1, n2 = 0, n3 = 0;
		bool placed;

		for (uint32_t i = 0; i < len; i++)
			src[i] = (uint8_t)dt_rand_range(1, 255);	/* never 0s */
		memset(dst, 0, len);
		if (op == IBV_WR_SEND) {
			struct ibv_sge sge = { (uintptr_t)dst, len, mrb->lkey };
			struct ibv_recv_wr wr = { .wr_id = 1000 + s,
				.sg_list = &sge, .num_sge = 1 }, *bad;

			CHECK_OK(ibv_post_recv(rp.qb, &wr, &bad));
		}
		acks0 = acks_of(B);
		/* post_drive=0: the post itself moves nothing */
		if (op == IBV_WR_RDMA_READ)
			dt_post_one(rp.qa, op, s, dst, len, mra->lkey, src,
				    mrb->rkey, IBV_SEND_SIGNALED);
		else
			dt_post_one(rp.qa, op, s, src, len, mra->lkey, dst,
				    mrb->rkey, IBV_SEND_SIGNALED);
		/* Call 1: the request goes out and is received. */
		t0 = now_ns();
		n1 = ibv_poll_cq(first->cq, 1, &wc);
		t1 = now_ns();
		placed = memcmp(dst, src, len) == 0;
		acks1 = acks_of(B);
		if (op == IBV_WR_SEND && n1 == 1)
			check_wc(&wc, 1000 + s, IBV_WC_RECV, len,
				 rp.qb->qp_num);
		/* Call 2: the answer (ACK, READ response) goes back. */
		n2 = ibv_poll_cq(rp.sa.cq, 1, &wc);
		t2 = now_ns();
		if (t1 - t0 > GAP_MAX_NS || t2 - t1 > GAP_MAX_NS) {
			/* (descheduled: the keeper may have run) */
			timed_out++;
		} else {
			checked++;
			if (op == IBV_WR_RDMA_READ) {
				/* the response leaves in call 2 */
				CHECK_EQ(n1, 0);
				CHECK(!placed);
				CHECK_EQ(n2, 1);
			} else {
				/* in place when call 1 returns, its ACK owed */
				CHECK(placed);
				CHECK_EQ(n1, op == IBV_WR_SEND ? 1 : 0);
				CHECK_EQ(acks1, acks0);
				CHECK_EQ(n2, 1);
				CHECK_EQ(acks_of(B), acks0 + 1);
			}
		}
		if (n2 == 1)
			check_wc(&wc, s, op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ :
				 op == IBV_WR_SEND ? IBV_WC_SEND : IBV_WC_RDMA_WRITE,
				 len, rp.qa->qp_num);
		else if (dt_wait_wc(&rp.sa, &wc, 1, DT_WAIT_S, "completion") == 1)
			check_wc(&wc, s, op == IBV_WR_RDMA_READ ? IBV_WC_RDMA_READ :
				 op == IBV_WR_SEND ? IBV_WC_SEND : IBV_WC_RDMA_WRITE,
				 len, rp.qa->qp_num);
		if (op == IBV_WR_SEND && n1 != 1) {
			n3 = dt_wait_wc(&rp.rb, &wc, 1, DT_WAIT_S, "receive");
			CHECK_EQ(n3, 1);
			if (n3 == 1)
				check_wc(&wc, 1000 + s, IBV_WC_RECV, len,
					 rp.qb->qp_num);
		}
		CHECK(memcmp(dst, src, len) == 0);
	}
	printf("%u steps checked call by call, %u left out (a gap over %d us)\n",
	       checked, timed_out, GAP_MAX_NS / 1000);
	CHECK(checked >= STEPS / 2);

	/* An application that stops calling: call 1 places a WRITE and owes
	 * its ACK; then silence. The keeper sends it and the CQE is written
	 * without another call (read straight off the ring below would need
	 * the provider's internals: a poll after the keeper ran returns it
	 * whatever the order, so the ACK counter is what tells). */
	{
		uint64_t acks0 = acks_of(B), deadline;
		struct ibv_wc wc;

		memset(b_buf + BUF / 2, 0, 128);
		dt_post_one(rp.qa, IBV_WR_RDMA_WRITE, 77, a_buf, 128, mra->lkey,
			    b_buf + BUF / 2, mrb->rkey, IBV_SEND_SIGNALED);
		CHECK_EQ(ibv_poll_cq(rp.sa.cq, 1, &wc), 0);
		CHECK(memcmp(b_buf + BUF / 2, a_buf, 128) == 0);
		deadline = now_ns() + 2000000000u;
		while (acks_of(B) == acks0 && now_ns() < deadline) {
			struct timespec ts = { 0, 1000000 };

			nanosleep(&ts, NULL);
		}
		CHECK_EQ(acks_of(B), acks0 + 1);
		CHECK_EQ(ibv_poll_cq(rp.sa.cq, 1, &wc), 1);
		check_wc(&wc, 77, IBV_WC_RDMA_WRITE, 128, rp.qa->qp_num);
	}

	/* A poll turns the engine only when it finds its CQ empty: two
	 * WRITEs' completions waiting are taken without a turn (eng_loops
	 * still), the poll that finds none turns it once. Turning on every
	 * poll sent send_lat's ACK in a burst of its own, between the send
	 * CQE's poll and the receive CQ's. */
	{
		struct droce_dev_stats s0, s1, s2, s3;
		struct ibv_wc wc;
		uint64_t t0, t1;
		int got = 0;

		for (int i = 0; i < 2; i++)
			dt_post_one(rp.qa, IBV_WR_RDMA_WRITE, 90 + i, a_buf, 64,
				    mra->lkey, b_buf, mrb->rkey,
				    IBV_SEND_SIGNALED);
		/* turns by polls of an empty CQ, until both ACKs are in
		 * (each turn moves a step: send, receive, ACK, ACK in) */
		for (int i = 0; i < 20; i++)
			CHECK_EQ(ibv_poll_cq(rp.rb.cq, 1, &wc), 0);
		t0 = now_ns();
		CHECK_OK(droce_dev_stats_get(A->ctx, &s0));
		got += ibv_poll_cq(rp.sa.cq, 1, &wc);
		CHECK_OK(droce_dev_stats_get(A->ctx, &s1));
		got += ibv_poll_cq(rp.sa.cq, 1, &wc);
		CHECK_OK(droce_dev_stats_get(A->ctx, &s2));
		CHECK_EQ(ibv_poll_cq(rp.sa.cq, 1, &wc), 0);
		CHECK_OK(droce_dev_stats_get(A->ctx, &s3));
		t1 = now_ns();
		CHECK_EQ(got, 2);
		printf("polls of a CQ holding 2 completions: engine turns %" PRIu64 ", %" PRIu64 "; the poll that found it empty: %" PRIu64 " (%.0f us)\n",
		       s1.eng_loops - s0.eng_loops, s2.eng_loops - s1.eng_loops,
		       s3.eng_loops - s2.eng_loops, (t1 - t0) / 1e3);
		if (t1 - t0 < GAP_MAX_NS) {	/* (else the keeper may have run) */
			CHECK_EQ(s1.eng_loops, s0.eng_loops);
			CHECK_EQ(s2.eng_loops, s1.eng_loops);
			CHECK_EQ(s3.eng_loops, s2.eng_loops + 1);
		}
	}

	dt_rc_pair_close(&rp);
	CHECK_OK(ibv_dereg_mr(mra));
	CHECK_OK(ibv_dereg_mr(mrb));
	free(a_buf);
	free(b_buf);
	return dt_finish(&env);
}
