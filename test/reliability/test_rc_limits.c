/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC limits and ordering rules the loss test does not reach:
 *  - IBV_SEND_FENCE: a SEND fenced behind a READ carries what the READ
 *    brought in (IBTA 10.8.3.3); unfenced, the requester may gather first.
 *  - max_rd_atomic: with 1, many READs and atomics still all complete, one
 *    at a time, against a responder that accepts 1 (max_dest_rd_atomic 1).
 *  - max_dest_rd_atomic is enforced: a requester allowed 8 against a
 *    responder that accepts 1 gets IBV_WC_REM_INV_REQ_ERR (NAK invalid
 *    request, IBTA 9.7.5.1.6) and its QP flushes.
 *  - max_rd_atomic 128 (rxe's limit, droce's too): 128 READs and atomics
 *    posted in one list are outstanding at once and all complete, with no
 *    NAK; the responder's queue then lives in an array of its own.
 *  - a responder whose READ responses are still queued (paced) grows its
 *    queue in SQD (max_dest_rd_atomic 16 -> 64): the responses owed move
 *    with it and arrive, none asked for twice.
 *  - a WQE the application scribbled on (unknown opcode in the ring)
 *    completes with IBV_WC_LOC_QP_OP_ERR; the engine reads nothing outside
 *    the slot and the QP goes to the error state.
 *  - send WQE slots are sized per QP type (as mlx5's): an RC or UC QP
 *    with one SGE and no inline data gets one 64-byte basic block, a UD
 *    QP two (its address vector); the caps returned are what the slot
 *    holds, and in one-block slots, the largest connected WQEs (an atomic,
 *    a memory window bind, inline data up to max_inline_data) still work
 *    while one byte or one SGE more is refused with EINVAL.
 *  - a send WQE's state slot packs into 20 bytes: the words the engine
 *    writes when it starts a WQE land in the members it reads back, and
 *    every member holds its largest value (a 2^31-byte message at path
 *    MTU 256 is 2^23 packets; PSNs are 24 bits).
 *  - many QPs: from the device's DROCE_MANY_QPS-th QP on, every QP of it
 *    (those there before too, and those created after the many are gone;
 *    not the peer device's) asks for its WQE slots ahead as it posts;
 *    WRITEs through ibv_wr_* and ibv_post_send that wrap its send queue
 *    four times still carry their bytes, each completion checked.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <endian.h>

#include "droce.h"
#include "droce_int.h"
#include "droce_test.h"

static struct dt_env env;
static struct dt_dev *A, *B;

static void conn_open(struct dt_rc_pair *c, uint8_t rd_a, uint8_t dest_rd_b)
{
	struct dt_qp_cfg qc;
	struct dt_conn_cfg ca, cb;

	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 256;
	dt_conn_cfg_default(&ca);
	ca.access = DT_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC;
	ca.timeout = 14;	/* 67 ms: grow_in_sqd paces responses ~1 ms apart */
	cb = ca;
	ca.max_rd_atomic = rd_a;
	cb.max_dest_rd_atomic = dest_rd_b;
	dt_rc_pair_open(c, A, B, 512, &qc, &ca, &cb, 0x400, 0x500);
}

static void fence(uint8_t *abuf, struct ibv_mr *amr, uint8_t *bbuf,
		  struct ibv_mr *bmr)
{
	struct dt_rc_pair c;
	struct ibv_wc wc[2];
	struct ibv_sge rs = { (uintptr_t)(bbuf + 8192), 4096, bmr->lkey };
	struct ibv_recv_wr rwr = { .wr_id = 7, .sg_list = &rs, .num_sge = 1 }, *rbad;

	conn_open(&c, 4, 4);
	for (int round = 0; round < 20; round++) {
		memset(abuf, 0, 4096);			/* stale local data */
		dt_fill_random(bbuf, 4096);		/* what the READ brings */
		CHECK_OK(ibv_post_recv(c.qb, &rwr, &rbad));
		/* READ B's bytes into L, then SEND L, fenced: B must get the
		 * bytes it had, never the zeros L held before the READ. */
		dt_post_one(c.qa, IBV_WR_RDMA_READ, 1, abuf, 4096, amr->lkey, bbuf,
			    bmr->rkey, IBV_SEND_SIGNALED);
		dt_post_one(c.qa, IBV_WR_SEND, 2, abuf, 4096, amr->lkey, NULL, 0,
			    IBV_SEND_SIGNALED | IBV_SEND_FENCE);
		CHECK_EQ(dt_wait_wc(&c.sa, wc, 2, DT_WAIT_S, "READ + fenced SEND"), 2);
		CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[1].status, IBV_WC_SUCCESS);
		CHECK_EQ(dt_wait_wc(&c.rb, wc, 1, DT_WAIT_S, "fenced SEND recv"), 1);
		CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
		if (memcmp(bbuf + 8192, bbuf, 4096) != 0)
			DT_FAIL_(1, "round %d: the fenced SEND carried data from before the READ",
				 round);
	}
	dt_rc_pair_close(&c);
	printf("fence: 20 READ + fenced SEND rounds carried the READ's data\n");
}

static void one_at_a_time(uint8_t *abuf, struct ibv_mr *amr, uint8_t *bbuf,
			  struct ibv_mr *bmr)
{
	struct dt_rc_pair c;
	struct ibv_wc wc[64];
	struct droce_dev_stats b0, b1;
	enum { N = 64 };

	CHECK_OK(droce_dev_stats_get(B->ctx, &b0));
	conn_open(&c, 1, 1);
	memset(bbuf, 0, 8);
	for (int i = 0; i < N; i++)
		dt_post_one(c.qa, i & 1 ? IBV_WR_ATOMIC_FETCH_AND_ADD : IBV_WR_RDMA_READ,
			    (uint64_t)i, abuf + 64 + 64 * (i % 32), i & 1 ? 8 : 64,
			    amr->lkey, i & 1 ? bbuf : bbuf + 64, bmr->rkey,
			    IBV_SEND_SIGNALED);
	CHECK_EQ(dt_wait_wc(&c.sa, wc, N, DT_WAIT_S, "64 READ/FAA, max 1"), N);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, (uint64_t)i);
	}
	CHECK_EQ(*(uint64_t *)bbuf, (uint64_t)N / 2);
	CHECK_OK(droce_dev_stats_get(B->ctx, &b1));
	/* Never more than one outstanding: the responder never refused. */
	CHECK_EQ(b1.tx_nak_inv_req, b0.tx_nak_inv_req);
	dt_rc_pair_close(&c);
	printf("max_rd_atomic 1: %d READs and atomics completed in order, no NAK\n", N);
}

static void responder_enforces(uint8_t *abuf, struct ibv_mr *amr,
			       uint8_t *bbuf, struct ibv_mr *bmr)
{
	struct dt_rc_pair c;
	struct ibv_wc wc[16];
	int n, bad = 0, flushed = 0, ok = 0;

	conn_open(&c, 8, 1);
	/* One list, one doorbell: posted one at a time, a slow engine (the
	 * sanitizer build) could send READ 1 alone and finish answering it
	 * before READ 2 arrived, which is then within the limit. */
	{
		struct ibv_sge sge[16];
		struct ibv_send_wr wr[16], *bad_wr;

		for (int i = 0; i < 16; i++) {
			sge[i] = (struct ibv_sge){ (uintptr_t)(abuf + 4096 * (i % 4)),
						   4096, amr->lkey };
			wr[i] = (struct ibv_send_wr){
				.wr_id = (uint64_t)i, .sg_list = &sge[i],
				.num_sge = 1, .opcode = IBV_WR_RDMA_READ,
				.send_flags = IBV_SEND_SIGNALED,
				.next = i + 1 < 16 ? &wr[i + 1] : NULL };
			wr[i].wr.rdma.remote_addr = (uintptr_t)bbuf;
			wr[i].wr.rdma.rkey = bmr->rkey;
		}
		CHECK_OK(ibv_post_send(c.qa, wr, &bad_wr));
	}
	n = dt_wait_wc(&c.sa, wc, 16, DT_WAIT_S, "16 READs vs max_dest 1");
	CHECK_EQ(n, 16);
	for (int i = 0; i < n; i++) {
		if (wc[i].status == IBV_WC_SUCCESS)
			ok++;
		else if (wc[i].status == IBV_WC_REM_INV_REQ_ERR)
			bad++;
		else if (wc[i].status == IBV_WC_WR_FLUSH_ERR)
			flushed++;
		else
			DT_FAIL_(1, "READ %d: unexpected status %s", i,
				 ibv_wc_status_str(wc[i].status));
	}
	printf("max_dest_rd_atomic 1 vs 8 outstanding: %d ok, %d REM_INV_REQ_ERR, %d flushed\n",
	       ok, bad, flushed);
	/* The first READ was within the limit: answered before the NAK. */
	CHECK_EQ(ok, 1);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(bad, 1);
	CHECK_EQ(wc[1].status, IBV_WC_REM_INV_REQ_ERR);
	CHECK_EQ(ok + bad + flushed, 16);
	CHECK_EQ(dt_qp_state(c.qa), IBV_QPS_ERR);
	dt_rc_pair_close(&c);
}

static void deep_queue(uint8_t *abuf, struct ibv_mr *amr, uint8_t *bbuf,
		       struct ibv_mr *bmr)
{
	enum { N = 128 };
	struct dt_rc_pair c;
	struct ibv_wc wc[N];
	struct ibv_sge sge[N];
	struct ibv_send_wr wr[N], *bad_wr;
	struct droce_dev_stats a0, a1, b0, b1;

	CHECK_OK(droce_dev_stats_get(A->ctx, &a0));
	CHECK_OK(droce_dev_stats_get(B->ctx, &b0));
	conn_open(&c, N, N);
	/* 16 and fewer fit in the QP; 128 and a replay's room do not. */
	CHECK_EQ(droce_qp_of(c.qb)->rd_mask, 2 * N - 1);
	CHECK_EQ(droce_qp_of(c.qa)->rd_mask, 31);
	memset(bbuf, 0, 8);
	dt_fill_random(bbuf + 64, 64 * N);
	memset(abuf, 0, 64 * (N + 1));
	/* Every fourth a fetch-and-add on B's counter, the others READs of
	 * 64 distinct bytes each: one list, one doorbell. */
	for (int i = 0; i < N; i++) {
		bool faa = i % 4 == 3;

		sge[i] = (struct ibv_sge){ (uintptr_t)(abuf + 64 + 64 * i),
					   faa ? 8 : 64, amr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = (uint64_t)i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = faa ? IBV_WR_ATOMIC_FETCH_AND_ADD :
					IBV_WR_RDMA_READ,
			.send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < N ? &wr[i + 1] : NULL };
		if (faa) {
			wr[i].wr.atomic.remote_addr = (uintptr_t)bbuf;
			wr[i].wr.atomic.compare_add = 1;
			wr[i].wr.atomic.rkey = bmr->rkey;
		} else {
			wr[i].wr.rdma.remote_addr = (uintptr_t)(bbuf + 64 + 64 * i);
			wr[i].wr.rdma.rkey = bmr->rkey;
		}
	}
	CHECK_OK(ibv_post_send(c.qa, wr, &bad_wr));
	CHECK_EQ(dt_wait_wc(&c.sa, wc, N, DT_WAIT_S, "128 READ/FAA outstanding"), N);
	for (int i = 0, faa = 0; i < N; i++) {
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, (uint64_t)i);
		CHECK_EQ(wc[i].opcode, i % 4 == 3 ? IBV_WC_FETCH_ADD : IBV_WC_RDMA_READ);
		CHECK_EQ(wc[i].byte_len, i % 4 == 3 ? 8u : 64u);
		if (i % 4 == 3) {
			/* each saw the counter as the ones before left it */
			CHECK_EQ(*(uint64_t *)(abuf + 64 + 64 * i), (uint64_t)faa);
			faa++;
		} else if (memcmp(abuf + 64 + 64 * i, bbuf + 64 + 64 * i, 64)) {
			DT_FAIL_(1, "READ %d brought the wrong bytes", i);
		}
	}
	CHECK_EQ(*(uint64_t *)bbuf, (uint64_t)N / 4);
	CHECK_OK(droce_dev_stats_get(A->ctx, &a1));
	CHECK_OK(droce_dev_stats_get(B->ctx, &b1));
	CHECK_EQ(b1.tx_nak_inv_req, b0.tx_nak_inv_req);
	CHECK_EQ(a1.retransmits, a0.retransmits);
	CHECK_EQ(b1.read_replays, b0.read_replays);
	dt_rc_pair_close(&c);
	printf("max_rd_atomic 128: %d READs and atomics outstanding at once, all complete, no NAK\n",
	       N);
}

static void modify_b(struct ibv_qp *qp, enum ibv_qp_state st, int mask,
		     uint8_t max_dest)
{
	struct ibv_qp_attr a = { .qp_state = st, .max_dest_rd_atomic = max_dest };

	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | mask));
}

static void grow_in_sqd(uint8_t *abuf, struct ibv_mr *amr, uint8_t *bbuf,
			struct ibv_mr *bmr)
{
	enum { N = 16, LEN = 4096 };
	struct dt_rc_pair c;
	struct ibv_wc wc[N];
	struct ibv_sge sge[N];
	struct ibv_send_wr wr[N], *bad_wr;
	struct droce_dev_stats a0, a1, b0, b1;
	struct ibv_qp_rate_limit_attr rl = { .rate_limit = 8000 }; /* 1 MB/s */
	struct droce_qp *qb;
	uint32_t queued = 0;
	double t0;

	conn_open(&c, N, N);
	qb = droce_qp_of(c.qb);
	CHECK_EQ(qb->rd_mask, 31);
	/* B's responses leave at ~1 MB/s, a READ every ~4 ms: most of the
	 * 16 stay queued for tens of milliseconds (a test thread kept off
	 * its core that long still finds some). */
	CHECK_OK(ibv_modify_qp_rate_limit(c.qb, &rl));
	dt_fill_random(bbuf, N * LEN);
	memset(abuf, 0, N * LEN);
	CHECK_OK(droce_dev_stats_get(A->ctx, &a0));
	CHECK_OK(droce_dev_stats_get(B->ctx, &b0));
	for (int i = 0; i < N; i++) {
		sge[i] = (struct ibv_sge){ (uintptr_t)(abuf + LEN * i), LEN, amr->lkey };
		wr[i] = (struct ibv_send_wr){
			.wr_id = (uint64_t)i, .sg_list = &sge[i], .num_sge = 1,
			.opcode = IBV_WR_RDMA_READ, .send_flags = IBV_SEND_SIGNALED,
			.next = i + 1 < N ? &wr[i + 1] : NULL };
		wr[i].wr.rdma.remote_addr = (uintptr_t)(bbuf + LEN * i);
		wr[i].wr.rdma.rkey = bmr->rkey;
	}
	CHECK_OK(ibv_post_send(c.qa, wr, &bad_wr));
	t0 = dt_now();
	while (dt_now() - t0 < DT_WAIT_S &&
	       (queued = __atomic_load_n(&qb->rd_tail, __ATOMIC_ACQUIRE) -
			 __atomic_load_n(&qb->rd_head, __ATOMIC_ACQUIRE)) < N / 4)
		;
	if (queued < N / 4)
		DT_FAIL_(1, "the responder never held %d READs (%u)", N / 4, queued);
	modify_b(c.qb, IBV_QPS_SQD, 0, 0);
	modify_b(c.qb, IBV_QPS_SQD, IBV_QP_MAX_DEST_RD_ATOMIC, 64);
	CHECK_EQ(qb->rd_mask, 127);
	modify_b(c.qb, IBV_QPS_RTS, 0, 0);
	CHECK_EQ(dt_wait_wc(&c.sa, wc, N, DT_WAIT_S, "READs across the growth"), N);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[i].wr_id, (uint64_t)i);
		CHECK_EQ(wc[i].byte_len, (uint32_t)LEN);
	}
	if (memcmp(abuf, bbuf, N * LEN))
		DT_FAIL_(1, "READs across the queue's growth brought the wrong bytes");
	CHECK_OK(droce_dev_stats_get(A->ctx, &a1));
	CHECK_OK(droce_dev_stats_get(B->ctx, &b1));
	/* Nothing was lost in the move: nothing asked for twice. */
	CHECK_EQ(a1.retransmits, a0.retransmits);
	CHECK_EQ(a1.timeouts, a0.timeouts);
	CHECK_EQ(b1.read_replays, b0.read_replays);
	dt_rc_pair_close(&c);
	printf("grown in SQD with %u READ responses queued: all arrived, none asked twice\n",
	       queued);
}

static void scribbled_wqe(uint8_t *abuf, struct ibv_mr *amr, uint8_t *bbuf,
			  struct ibv_mr *bmr)
{
	struct dt_rc_pair c;
	struct ibv_wc wc[2];
	struct droce_qp *qp;
	struct mlx5_wqe_ctrl_seg *ctrl;

	conn_open(&c, 4, 4);
	qp = droce_qp_of(c.qa);
	/* A good WRITE; then the application writes garbage into its next
	 * ring slot itself and posts a good WRITE behind it, whose doorbell
	 * hands both to the engine. */
	dt_post_one(c.qa, IBV_WR_RDMA_WRITE, 1, abuf, 64, amr->lkey, bbuf, bmr->rkey,
		    IBV_SEND_SIGNALED);
	CHECK_EQ(dt_wait_wc(&c.sa, wc, 1, DT_WAIT_S, "good WRITE"), 1);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	ctrl = (struct mlx5_wqe_ctrl_seg *)droce_sq_slot(qp, qp->sq_pi_app);
	memset(ctrl, 0, qp->sq_stride);
	ctrl->opmod_idx_opcode = htobe32(0x7f);		/* no such opcode */
	ctrl->qpn_ds = htobe32(c.qa->qp_num << 8 | 63);	/* past the slot */
	ctrl->fm_ce_se = DROCE_WQE_SIGNALED;
	qp->sq_wrid[qp->sq_pi_app & (qp->sq_cnt - 1)] = 0xbad;
	qp->sq_pi_app++;
	dt_post_one(c.qa, IBV_WR_RDMA_WRITE, 3, abuf, 64, amr->lkey, bbuf, bmr->rkey,
		    IBV_SEND_SIGNALED);
	CHECK_EQ(dt_wait_wc(&c.sa, wc, 2, DT_WAIT_S, "scribbled WQE"), 2);
	CHECK_EQ(wc[0].wr_id, 0xbad);
	CHECK_EQ(wc[0].status, IBV_WC_LOC_QP_OP_ERR);
	CHECK_EQ(wc[1].wr_id, 3);
	CHECK_EQ(wc[1].status, IBV_WC_WR_FLUSH_ERR);
	CHECK_EQ(dt_qp_state(c.qa), IBV_QPS_ERR);
	dt_rc_pair_close(&c);
	printf("scribbled WQE: IBV_WC_LOC_QP_OP_ERR, QP in error\n");
}

/* Slot sizes and the caps they give, per QP type (see the top). */
static void slot_sizes(uint8_t *abuf, struct ibv_mr *amr, uint8_t *bbuf,
		       struct ibv_mr *bmr)
{
	static const struct {
		enum ibv_qp_type type;
		uint32_t sge, inl;	/* asked for */
		uint32_t stride, max_sge, max_inl;	/* given */
	} t[] = {
		{ IBV_QPT_RC, 1, 0, 64, 1, 12 },
		{ IBV_QPT_UC, 1, 0, 64, 1, 12 },
		{ IBV_QPT_UD, 1, 0, 128, 4, 60 },
		{ IBV_QPT_RC, 2, 0, 128, 5, 76 },
		{ IBV_QPT_RC, 1, 13, 128, 5, 76 },
		{ IBV_QPT_RC, 1, 220, 320, 16, 268 },
		{ IBV_QPT_UD, 1, 220, 320, 16, 252 },
		{ IBV_QPT_RC, 16, 512, 576, 16, 512 },
	};
	struct dt_cq cq;
	struct dt_rc_pair c;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	struct ibv_wc wc[4];
	struct ibv_sge sg[2];
	struct ibv_send_wr wr, *bad;
	struct ibv_mr *mwmr;
	struct ibv_mw *mw;
	uint64_t v = 41;

	dt_cq_create(A, 16, false, &cq);
	for (size_t i = 0; i < RTE_DIM(t); i++) {
		struct ibv_qp_init_attr ia = {
			.send_cq = cq.cq, .recv_cq = cq.cq, .qp_type = t[i].type,
			.cap = { .max_send_wr = 8, .max_recv_wr = 8,
				 .max_send_sge = t[i].sge, .max_recv_sge = 1,
				 .max_inline_data = t[i].inl } };
		struct ibv_qp *qp = ibv_create_qp(A->pd, &ia);

		CHECK_PTR(qp);
		CHECK_EQ(droce_qp_of(qp)->sq_stride, t[i].stride);
		CHECK_EQ(ia.cap.max_send_sge, t[i].max_sge);
		CHECK_EQ(ia.cap.max_inline_data, t[i].max_inl);
		CHECK_OK(ibv_destroy_qp(qp));
	}
	dt_cq_destroy(&cq);

	/* One-block RC slots: the largest WQEs they must hold. */
	dt_qp_cfg_default(&qc);
	qc.max_send_sge = 1;
	qc.max_inline_data = 0;
	dt_conn_cfg_default(&cc);
	cc.access = DT_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC;
	dt_rc_pair_open(&c, A, B, 64, &qc, &cc, NULL, 0x600, 0x700);
	CHECK_EQ(droce_qp_of(c.qa)->sq_stride, 64);
	CHECK_EQ(c.capa.max_inline_data, 12);
	/* ctrl + raddr + atomic + data: the whole block */
	memcpy(bbuf, &v, 8);
	dt_post_one(c.qa, IBV_WR_ATOMIC_FETCH_AND_ADD, 1, abuf, 8, amr->lkey,
		    bbuf, bmr->rkey, IBV_SEND_SIGNALED);
	CHECK_EQ(dt_wait_wc(&c.sa, wc, 1, DT_WAIT_S, "FETCH_AND_ADD"), 1);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_FETCH_ADD);
	CHECK_EQ(wc[0].wr_id, 1);
	memcpy(&v, abuf, 8);
	CHECK_EQ(v, 41);
	memcpy(&v, bbuf, 8);
	CHECK_EQ(v, 42);
	/* inline WRITE of max_inline_data bytes (ctrl + raddr + 16) */
	dt_fill_random(abuf + 64, 12);
	memset(bbuf + 64, 0, 16);
	dt_post_one(c.qa, IBV_WR_RDMA_WRITE, 2, abuf + 64, 12, amr->lkey,
		    bbuf + 64, bmr->rkey, IBV_SEND_SIGNALED | IBV_SEND_INLINE);
	CHECK_EQ(dt_wait_wc(&c.sa, wc, 1, DT_WAIT_S, "inline WRITE"), 1);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(wc[0].wr_id, 2);
	CHECK(memcmp(abuf + 64, bbuf + 64, 12) == 0);
	CHECK(bbuf[64 + 12] == 0);
	/* one byte or one SGE more: refused, nothing posted */
	sg[0] = (struct ibv_sge){ (uintptr_t)(abuf + 64), 13, amr->lkey };
	sg[1] = sg[0];
	wr = (struct ibv_send_wr){ .wr_id = 3, .sg_list = sg, .num_sge = 1,
				   .opcode = IBV_WR_RDMA_WRITE,
				   .send_flags = IBV_SEND_SIGNALED |
						 IBV_SEND_INLINE };
	wr.wr.rdma.remote_addr = (uintptr_t)(bbuf + 64);
	wr.wr.rdma.rkey = bmr->rkey;
	CHECK_EQ(ibv_post_send(c.qa, &wr, &bad), EINVAL);
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.num_sge = 2;
	CHECK_EQ(ibv_post_send(c.qa, &wr, &bad), EINVAL);
	/* a type 2 window bound through the send queue: ctrl + bind */
	mwmr = dt_reg_mr(A->pd, abuf + 8192, 4096, IBV_ACCESS_LOCAL_WRITE |
			 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_MW_BIND);
	CHECK_PTR(mwmr);
	mw = ibv_alloc_mw(A->pd, IBV_MW_TYPE_2);
	CHECK_PTR(mw);
	wr = (struct ibv_send_wr){ .wr_id = 4, .opcode = IBV_WR_BIND_MW,
				   .send_flags = IBV_SEND_SIGNALED };
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = (struct ibv_mw_bind_info){
		.mr = mwmr, .addr = (uintptr_t)(abuf + 8192), .length = 4096,
		.mw_access_flags = IBV_ACCESS_REMOTE_READ };
	CHECK_OK(ibv_post_send(c.qa, &wr, &bad));
	CHECK_EQ(dt_wait_wc(&c.sa, wc, 1, DT_WAIT_S, "BIND_MW"), 1);
	CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
	CHECK_EQ(wc[0].opcode, IBV_WC_BIND_MW);
	CHECK_EQ(wc[0].wr_id, 4);
	CHECK_EQ(dt_cq_drain_unexpected(&c.sa, "after the slot checks"), 0);
	dt_rc_pair_close(&c);
	CHECK_OK(ibv_dealloc_mw(mw));
	CHECK_OK(ibv_dereg_mr(mwmr));
}

static void many_qps(uint8_t *abuf, struct ibv_mr *amr, uint8_t *bbuf,
		     struct ibv_mr *bmr)
{
	enum { ROUND = 128, ROUNDS = 4 };
	static struct ibv_qp *extra[DROCE_MANY_QPS];
	struct dt_rc_pair c;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	struct droce_qp *qa;
	struct ibv_wc wc[ROUND];
	int n = 0;

	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 128;	/* a ring of 128 slots: ROUNDS wrap it */
	qc.send_ops_flags = DT_SEND_OPS_ALL;
	dt_conn_cfg_default(&cc);
	cc.access = DT_ACCESS_ALL;
	dt_rc_pair_open(&c, A, B, 512, &qc, &cc, NULL, 0x600, 0x700);
	qa = droce_qp_of(c.qa);
	CHECK_EQ(qa->sq_cnt, 128u);
	CHECK(!qa->sq_ahead);
	while (qa->dev->nb_qp < DROCE_MANY_QPS - 1) {
		extra[n] = dt_qp_create(A, c.sa.cq, c.ra.cq, &qc, NULL);
		CHECK_PTR(extra[n]);
		n++;
	}
	CHECK(!qa->sq_ahead);
	CHECK(!droce_qp_of(extra[n - 1])->sq_ahead);
	extra[n] = dt_qp_create(A, c.sa.cq, c.ra.cq, &qc, NULL);
	CHECK_PTR(extra[n]);
	n++;
	CHECK(qa->sq_ahead);
	for (int i = 0; i < n; i++)
		CHECK(droce_qp_of(extra[i])->sq_ahead);
	CHECK(!droce_qp_of(c.qb)->sq_ahead);

	for (int r = 0; r < ROUNDS; r++) {
		struct ibv_sge sge[ROUND];
		struct ibv_send_wr wr[ROUND], *bad_wr;
		struct ibv_qp_ex *x = ibv_qp_to_qp_ex(c.qa);

		dt_fill_random(abuf, 64 * ROUND);
		memset(bbuf, 0, 64 * ROUND);
		if (r % 2 == 0) {
			/* one ibv_wr_start .. ibv_wr_complete: one doorbell */
			ibv_wr_start(x);
			for (int i = 0; i < ROUND; i++) {
				x->wr_id = (uint64_t)(r * ROUND + i);
				x->wr_flags = IBV_SEND_SIGNALED;
				ibv_wr_rdma_write(x, bmr->rkey,
						  (uintptr_t)(bbuf + 64 * i));
				ibv_wr_set_sge(x, amr->lkey,
					       (uintptr_t)(abuf + 64 * i), 64);
			}
			CHECK_OK(ibv_wr_complete(x));
		} else {
			for (int i = 0; i < ROUND; i++) {
				sge[i] = (struct ibv_sge){
					(uintptr_t)(abuf + 64 * i), 64, amr->lkey };
				wr[i] = (struct ibv_send_wr){
					.wr_id = (uint64_t)(r * ROUND + i),
					.sg_list = &sge[i], .num_sge = 1,
					.opcode = IBV_WR_RDMA_WRITE,
					.send_flags = IBV_SEND_SIGNALED,
					.next = i + 1 < ROUND ? &wr[i + 1] : NULL };
				wr[i].wr.rdma.remote_addr =
					(uintptr_t)(bbuf + 64 * i);
				wr[i].wr.rdma.rkey = bmr->rkey;
			}
			CHECK_OK(ibv_post_send(c.qa, wr, &bad_wr));
		}
		CHECK_EQ(dt_wait_wc(&c.sa, wc, ROUND, DT_WAIT_S,
				    "WRITEs with many QPs"), ROUND);
		for (int i = 0; i < ROUND; i++) {
			struct dt_wc_exp e = dt_exp_send(
				(uint64_t)(r * ROUND + i), IBV_WR_RDMA_WRITE,
				64, c.qa->qp_num);

			CHECK_WC(&wc[i], &e);
		}
		CHECK(memcmp(abuf, bbuf, 64 * ROUND) == 0);
	}
	for (int i = 0; i < n; i++)
		CHECK_OK(ibv_destroy_qp(extra[i]));
	/* the device has had many QPs: a QP created now has it too */
	CHECK(qa->dev->nb_qp < DROCE_MANY_QPS);
	extra[0] = dt_qp_create(A, c.sa.cq, c.ra.cq, &qc, NULL);
	CHECK_PTR(extra[0]);
	CHECK(droce_qp_of(extra[0])->sq_ahead);
	CHECK_OK(ibv_destroy_qp(extra[0]));
	dt_rc_pair_close(&c);
	printf("many QPs: from QP %d on every QP of the device posts with its slots asked for ahead; %d WRITEs through both post paths carried their bytes\n",
	       DROCE_MANY_QPS, ROUND * ROUNDS);
}

static void swqe_state_layout(void)
{
	struct droce_swqe_state st;

	memset(&st, 0, sizeof(st));
	st.word[0] = droce_swqe_word(0xabcdef, MLX5_OPCODE_RDMA_READ);
	st.word[1] = droce_swqe_word(0x1abcdef0, 0x5a);	/* PSN wraps to 24 bits */
	st.word[2] = droce_swqe_word(DROCE_MAX_MSG / 256, IBV_WC_RETRY_EXC_ERR);
	st.word[3] = 0;
	st.word[4] = DROCE_MAX_MSG;
	CHECK_EQ(st.psn_first, 0xabcdefu);
	CHECK_EQ(st.opcode, (uint32_t)MLX5_OPCODE_RDMA_READ);
	CHECK_EQ(st.psn_last, 0xbcdef0u);
	CHECK_EQ(st.flags, 0x5au);
	CHECK_EQ(st.npkts, DROCE_MAX_MSG / 256);
	CHECK_EQ(st.status, (uint32_t)IBV_WC_RETRY_EXC_ERR);
	CHECK_EQ(st.rcvd, 0u);
	CHECK_EQ(st.done, 0u);
	CHECK_EQ(st.rd_counted, 0u);
	CHECK_EQ(st.length, DROCE_MAX_MSG);
	/* members written one at a time leave their neighbours alone */
	st.rcvd = DROCE_MAX_MSG / 256;
	st.done = 1;
	st.rd_counted = 1;
	CHECK_EQ(st.word[3], (DROCE_MAX_MSG / 256) | 3u << 24);
	st.status = IBV_WC_SUCCESS;
	CHECK_EQ(st.npkts, DROCE_MAX_MSG / 256);
	st.psn_last = 0xffffff;
	CHECK_EQ(st.flags, 0x5au);
	CHECK_EQ(st.word[0], 0xabcdefu | (uint32_t)MLX5_OPCODE_RDMA_READ << 24);
}

int main(void)
{
	uint8_t *abuf = dt_alloc(1 << 16), *bbuf = dt_alloc(1 << 16);
	struct ibv_mr *amr, *bmr;
	int acc = DT_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC;

	dt_watchdog(120);
	swqe_state_layout();
	dt_init(&env, "test_rc_limits", NULL, NULL);
	A = &env.dev[0];
	B = &env.dev[1];
	amr = dt_reg_mr(A->pd, abuf, 1 << 16, acc);
	bmr = dt_reg_mr(B->pd, bbuf, 1 << 16, acc);
	CHECK_PTR(amr);
	CHECK_PTR(bmr);
	fence(abuf, amr, bbuf, bmr);
	one_at_a_time(abuf, amr, bbuf, bmr);
	responder_enforces(abuf, amr, bbuf, bmr);
	deep_queue(abuf, amr, bbuf, bmr);
	grow_in_sqd(abuf, amr, bbuf, bmr);
	scribbled_wqe(abuf, amr, bbuf, bmr);
	slot_sizes(abuf, amr, bbuf, bmr);
	many_qps(abuf, amr, bbuf, bmr);
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	dt_fini(&env);
	free(abuf);
	free(bbuf);
	printf("test_rc_limits: %s\n", dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}
