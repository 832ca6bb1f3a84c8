/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_uc: UC QPs end to end over two real droce devices (net_ring pair).
 *
 *  1. SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM of 0, 1, MTU-1,
 *     MTU, MTU+1, 3 MTU + 17, 16 MTU and 64 KiB + 13 bytes at path MTU 256
 *     and 1024 (PSNs near the 24-bit wrap half of the time), gathered from
 *     1..4 pieces and scattered into 1..4 with canaries around every
 *     destination, through ibv_post_send and through ibv_wr_*; both
 *     directions. Every completion field, every byte. The sender completes
 *     without a single packet coming back (no ACKs: the receiving device
 *     transmits nothing at all).
 *  2. RDMA_READ and atomics on UC: EINVAL at post with bad_wr.
 *  3. A WRITE the responder may not take (no REMOTE_WRITE, bad R_Key) is
 *     dropped; the QP stays in RTS and the next message arrives.
 *  4. Loss: the receiving port's impairer drops 20 % of the frames
 *     (droce_dev_impair "seed=1,rx_drop=0.2"), 400 messages of 1..5
 *     packets, a mix of SEND, SEND_WITH_IMM, WRITE_WITH_IMM and WRITE,
 *     PSNs wrapping. Every message arrives whole and correct or not at
 *     all: each receive completion is a message that was sent, with its
 *     length and its bytes, in order; a WRITE's target holds only its own
 *     bytes or the untouched canary (UC may place part of a lost WRITE,
 *     IBTA 9.8.3, but never anything else). Messages after a gap arrive;
 *     the sender completes everything successfully; neither QP leaves RTS;
 *     with the impairer off again every message arrives.
 *  5. A receive too small for a SEND: IBV_WC_LOC_LEN_ERR on that receive
 *     and the receiving QP in the error state (IBTA 9.8.3 class D, as
 *     Linux rxe does).
 *  6. A WRITE with a bad lkey: IBV_WC_LOC_PROT_ERR and Send Queue Error
 *     (IBTA 10.3.1): the WR behind it flushed, receives go on, SQE -> RTS.
 *  7. Messages longer than the requester's window of unacknowledged PSNs
 *     (2 MiB + 5 bytes at path MTU 256: 8193 packets; nothing acknowledges
 *     a UC packet, so no window may hold one back): SEND and
 *     WRITE_WITH_IMM, every byte.
 */
#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "droce_impair.h"
#include "tr_util.h"

#define BUFSZ		(4u * 1024 * 1024)
#define SRC_OFF		0u			/* sources */
#define DST_OFF		(1u * 1024 * 1024)	/* receive / write targets */
#define CANARY		0x5a

static struct dt_env env;
static struct dt_dev *A, *B;
static unsigned int n_msgs;

struct side {
	struct dt_dev *d;
	struct dt_cq scq, rcq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	uint8_t *buf;
	struct ibv_mr *mr;
};

struct pair {
	const char *name;
	struct side s[2];	/* [0] on A, [1] on B */
	enum ibv_mtu mtu;
	uint32_t mtub;
	uint64_t wrid;
};

static void abort_hook(void)
{
	dt_dump_stats(&env);
}

static void pair_create(struct pair *p, const char *name, enum ibv_mtu mtu,
			bool ex, uint32_t psn_a, uint32_t psn_b, int access,
			uint32_t depth)
{
	struct tr_qp_cfg c;

	memset(p, 0, sizeof(*p));
	p->name = name;
	p->mtu = mtu;
	p->mtub = dt_mtu_bytes(mtu);
	for (int i = 0; i < 2; i++) {
		struct side *s = &p->s[i];

		s->d = &env.dev[i];
		dt_cq_create(s->d, (int)depth * 2, ex && i == 0, &s->scq);
		dt_cq_create(s->d, (int)depth * 2, ex && i == 1, &s->rcq);
		tr_qp_cfg_default(&c, IBV_QPT_UC);
		c.max_send_wr = depth;
		c.max_recv_wr = depth;
		c.max_inline_data = 64;
		if (ex)
			c.send_ops_flags = IBV_QP_EX_WITH_SEND |
				IBV_QP_EX_WITH_SEND_WITH_IMM |
				IBV_QP_EX_WITH_RDMA_WRITE |
				IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
		s->qp = tr_qp_create(s->d, s->scq.cq, s->rcq.cq, &c, NULL);
		CHECK_PTR(s->qp);
		CHECK_EQ(s->qp->qp_type, IBV_QPT_UC);
		if (ex) {
			s->qpx = ibv_qp_to_qp_ex(s->qp);
			CHECK_PTR(s->qpx);
		}
		s->buf = dt_alloc(BUFSZ);
		s->mr = dt_reg_mr(s->d->pd, s->buf, BUFSZ, DT_ACCESS_ALL);
		CHECK_PTR(s->mr);
	}
	tr_uc_connect(A, p->s[0].qp, psn_a, B, p->s[1].qp, psn_b, mtu, access);
	CHECK_EQ(dt_qp_state(p->s[0].qp), IBV_QPS_RTS);
	CHECK_EQ(dt_qp_state(p->s[1].qp), IBV_QPS_RTS);
	{
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;

		CHECK_OK(ibv_query_qp(p->s[0].qp, &a, IBV_QP_PATH_MTU |
				      IBV_QP_DEST_QPN | IBV_QP_SQ_PSN, &ia));
		CHECK_EQ(a.path_mtu, mtu);
		CHECK_EQ(a.dest_qp_num, p->s[1].qp->qp_num);
		CHECK_EQ(a.sq_psn, psn_a & 0xffffff);
		CHECK_EQ(ia.qp_type, IBV_QPT_UC);
	}
}

static void pair_destroy(struct pair *p, bool check_rts)
{
	for (int i = 0; i < 2; i++) {
		struct side *s = &p->s[i];

		CHECK_EQ(dt_cq_drain_unexpected(&s->scq, p->name), 0);
		if (check_rts)
			CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_RTS);
		CHECK_OK(ibv_destroy_qp(s->qp));
		dt_cq_destroy(&s->scq);
		/* a destroyed QP's outstanding receives vanish (RESET) */
		dt_cq_destroy(&s->rcq);
		CHECK_OK(ibv_dereg_mr(s->mr));
		free(s->buf);
	}
}

/* ------------------------------------------------------------------ */

static void make_layout(struct side *s, uint32_t base, uint32_t total,
			struct tr_layout *L)
{
	tr_make_layout(s->buf, s->mr->lkey, BUFSZ, base, total, TR_PIECES, L);
}

static void check_scatter(struct side *s, const struct tr_layout *L,
			  const uint8_t *exp, uint32_t used, const char *what)
{
	tr_check_scatter(s->buf, L, exp, used, CANARY, what);
}

static bool op_recv(enum ibv_wr_opcode op)
{
	return op != IBV_WR_RDMA_WRITE;
}

static bool op_write(enum ibv_wr_opcode op)
{
	return op == IBV_WR_RDMA_WRITE || op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

/* Post one WR from side s (ibv_post_send or ibv_wr_*). */
static void post(struct pair *p, struct side *s, uint64_t wr_id,
		 enum ibv_wr_opcode op, const struct tr_layout *src,
		 uint64_t raddr, uint32_t rkey, uint32_t imm, bool wr_api,
		 bool signaled)
{
	if (!wr_api) {
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = wr_id;
		wr.sg_list = src->n ? (struct ibv_sge *)src->sge : NULL;
		wr.num_sge = src->n;
		wr.opcode = op;
		wr.send_flags = signaled ? IBV_SEND_SIGNALED : 0;
		wr.imm_data = htobe32(imm);
		wr.wr.rdma.remote_addr = raddr;
		wr.wr.rdma.rkey = rkey;
		CHECK_OK(ibv_post_send(s->qp, &wr, &bad));
		return;
	}
	(void)p;
	ibv_wr_start(s->qpx);
	s->qpx->wr_id = wr_id;
	s->qpx->wr_flags = signaled ? IBV_SEND_SIGNALED : 0;
	switch (op) {
	case IBV_WR_SEND:
		ibv_wr_send(s->qpx);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(s->qpx, htobe32(imm));
		break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(s->qpx, rkey, raddr);
		break;
	default:
		ibv_wr_rdma_write_imm(s->qpx, rkey, raddr, htobe32(imm));
		break;
	}
	ibv_wr_set_sge_list(s->qpx, (size_t)src->n, src->sge);
	CHECK_OK(ibv_wr_complete(s->qpx));
}

/* A 0-byte SEND behind a WRITE: when it is received, the WRITE landed. */
static void fence_send(struct pair *p, struct side *s, struct side *r)
{
	struct ibv_wc wc;
	struct tr_layout none;
	struct dt_wc_exp e;
	uint64_t sid = ++p->wrid, rid = ++p->wrid;

	memset(&none, 0, sizeof(none));
	tr_post_recv(r->qp, rid, NULL, 0);
	post(p, s, sid, IBV_WR_SEND, &none, 0, 0, 0, false, true);
	TR_WAIT(&s->scq, &wc, 1, "marker send");
	e = dt_exp_send(sid, IBV_WR_SEND, 0, s->qp->qp_num);
	CHECK_WC(&wc, &e);
	TR_WAIT(&r->rcq, &wc, 1, "marker receive");
	e = dt_exp_recv(rid, IBV_WR_SEND, 0, r->qp->qp_num, s->qp->qp_num, 0);
	CHECK_WC(&wc, &e);
}

/* One message from side `from` of pair p, everything checked. */
static void one_op(struct pair *p, int from, enum ibv_wr_opcode op,
		   uint32_t len, bool wr_api)
{
	struct side *s = &p->s[from], *r = &p->s[!from];
	struct tr_layout src, dst;
	struct ibv_wc wc;
	struct dt_wc_exp e;
	char what[160];
	uint8_t *exp;
	uint32_t imm = (uint32_t)dt_rand64();
	uint64_t sid = ++p->wrid, rid = ++p->wrid;
	uint32_t woff = 0;

	snprintf(what, sizeof(what), "%s %s %s len %u mtu %u%s", p->name,
		 from ? "B->A" : "A->B", dt_wr_opcode_name(op), len, p->mtub,
		 wr_api ? " ibv_wr_*" : "");
	make_layout(s, SRC_OFF, len, &src);
	exp = malloc(len ? len : 1);
	CHECK_PTR(exp);
	dt_fill_random(exp, len);
	{
		uint32_t o = 0;

		for (int i = 0; i < src.n; i++) {
			memcpy(s->buf + src.off[i], exp + o, src.sge[i].length);
			o += src.sge[i].length;
		}
	}
	if (op_write(op)) {
		/* the target: contiguous, canaries around it */
		woff = DST_OFF + 64 + (uint32_t)dt_rand_range(0, 64);
		memset(r->buf + DST_OFF, CANARY, len + 256);
		if (op == IBV_WR_RDMA_WRITE_WITH_IMM) {
			/* consumes a receive; its buffer is untouched */
			make_layout(r, DST_OFF + len + 256, 16, &dst);
			memset(r->buf + dst.start, CANARY, dst.end - dst.start);
			tr_post_recv(r->qp, rid, dst.sge, dst.n);
		}
	} else {
		make_layout(r, DST_OFF, len + (uint32_t)dt_rand_range(0, 40),
			    &dst);
		memset(r->buf + dst.start, CANARY, dst.end - dst.start);
		tr_post_recv(r->qp, rid, dst.sge, dst.n);
	}
	post(p, s, sid, op, &src, (uintptr_t)(r->buf + woff), r->mr->rkey,
	     imm, wr_api, true);
	TR_WAIT(&s->scq, &wc, 1, what);
	e = dt_exp_send(sid, op, len, s->qp->qp_num);
	CHECK_WC(&wc, &e);
	if (op_recv(op)) {
		TR_WAIT(&r->rcq, &wc, 1, what);
		e = dt_exp_recv(rid, op, len, r->qp->qp_num, s->qp->qp_num,
				imm);
		CHECK_WC(&wc, &e);
	} else {
		fence_send(p, s, r);
	}
	if (op_write(op)) {
		TR_ALL(what, r->buf + DST_OFF, woff - DST_OFF, CANARY);
		TR_CMP(what, r->buf + woff, exp, len);
		TR_ALL(what, r->buf + woff + len,
		       DST_OFF + len + 256 - woff - len, CANARY);
		if (op == IBV_WR_RDMA_WRITE_WITH_IMM)
			check_scatter(r, &dst, exp, 0, what);
	} else {
		check_scatter(r, &dst, exp, len, what);
	}
	free(exp);
	n_msgs++;
	if (dt_failures)
		dt_abort();
}

static void matrix(enum ibv_mtu mtu, bool ex)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM,
	};
	struct pair p;
	uint32_t m = dt_mtu_bytes(mtu);
	const uint32_t lens[] = { 0, 1, m - 1, m, m + 1, 3 * m + 17, 16 * m,
				  65536 + 13 };
	bool wrap = dt_chance(1, 2);
	uint32_t psn_a = wrap ? 0xffffff - (uint32_t)dt_rand_range(0, 40) :
			 (uint32_t)dt_rand64();
	uint32_t psn_b = wrap ? 0xffffff - (uint32_t)dt_rand_range(0, 40) :
			 (uint32_t)dt_rand64();
	struct droce_dev_stats a0 = tr_stats(A), b0 = tr_stats(B), a1, b1;

	pair_create(&p, ex ? "uc-ex" : "uc", mtu, ex, psn_a, psn_b,
		    DT_ACCESS_ALL, 64);
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
			one_op(&p, 0, ops[o], lens[i], ex && dt_chance(1, 2));
	/* A -> B only so far: B must not have sent a single frame */
	a1 = tr_stats(A);
	b1 = tr_stats(B);
	/* (ARP replies aside) */
	CHECK_EQ(TR_DELTA(b1, b0, tx_pkts) - TR_DELTA(b1, b0, arp_tx), 0);
	CHECK_EQ(TR_DELTA(a1, a0, rx_pkts), 0);
	CHECK_EQ(TR_DELTA(b1, b0, tx_acks), 0);
	CHECK_EQ(TR_DELTA(b1, b0, tx_naks), 0);
	CHECK_EQ(TR_DELTA(a1, a0, retransmits), 0);
	CHECK_EQ(TR_DELTA(b1, b0, rx_seq_err), 0);
	for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
		for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i += 2)
			one_op(&p, 1, ops[o], lens[i], false);
	a1 = tr_stats(A);
	b1 = tr_stats(B);
	CHECK_EQ(TR_DELTA(a1, a0, tx_acks) + TR_DELTA(b1, b0, tx_acks), 0);
	CHECK_EQ(TR_DELTA(a1, a0, tx_naks) + TR_DELTA(b1, b0, tx_naks), 0);
	printf("  path MTU %u%s, PSNs 0x%06x/0x%06x: SEND, SEND_IMM, WRITE, "
	       "WRITE_IMM x %zu lengths up to %u, both directions, no ACKs: "
	       "ok\n", m, ex ? " (ibv_wr_* and ibv_post_send)" : "",
	       psn_a & 0xffffff, psn_b & 0xffffff,
	       sizeof(lens) / sizeof(lens[0]), 65536 + 13);
	pair_destroy(&p, true);
}

/* ------------------------------------------------------------------ */

static void post_errors(void)
{
	static const enum ibv_wr_opcode bad_ops[] = {
		IBV_WR_RDMA_READ, IBV_WR_ATOMIC_CMP_AND_SWP,
		IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	struct pair p;
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sg;
	struct ibv_wc wc;

	pair_create(&p, "uc-errors", IBV_MTU_1024, false, 1, 2, DT_ACCESS_ALL |
		    IBV_ACCESS_REMOTE_ATOMIC, 16);
	sg.addr = (uintptr_t)p.s[0].buf;
	sg.length = 8;
	sg.lkey = p.s[0].mr->lkey;
	/* ibv_post_send(3): UC supports SEND and RDMA WRITE (with and
	 * without immediate) only */
	for (size_t i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		memset(wr, 0, sizeof(wr));
		wr[0].wr_id = 0xe0 + i;
		wr[0].sg_list = &sg;
		wr[0].num_sge = 1;
		wr[0].opcode = bad_ops[i];
		wr[0].send_flags = IBV_SEND_SIGNALED;
		wr[0].wr.atomic.remote_addr = (uintptr_t)p.s[1].buf;
		wr[0].wr.atomic.rkey = p.s[1].mr->rkey;
		bad = NULL;
		if (ibv_post_send(p.s[0].qp, &wr[0], &bad) != EINVAL ||
		    bad != &wr[0])
			DT_FAIL_(0, "UC %s: not refused with EINVAL/bad_wr",
				 dt_wr_opcode_name(bad_ops[i]));
		/* second in a list: the first (a WRITE) goes */
		wr[1] = wr[0];
		wr[0].opcode = IBV_WR_RDMA_WRITE;
		wr[0].wr.rdma.remote_addr = (uintptr_t)p.s[1].buf;
		wr[0].wr.rdma.rkey = p.s[1].mr->rkey;
		wr[0].next = &wr[1];
		bad = NULL;
		CHECK_RET(ibv_post_send(p.s[0].qp, &wr[0], &bad), EINVAL);
		CHECK(bad == &wr[1]);
		TR_WAIT(&p.s[0].scq, &wc, 1, "WRITE before a refused WR");
		{
			struct dt_wc_exp e = dt_exp_send(0xe0 + i,
				IBV_WR_RDMA_WRITE, 8, p.s[0].qp->qp_num);

			CHECK_WC(&wc, &e);
		}
	}
	TR_QUIET(&p.s[0].scq, 20, "refused UC posts");
	/* the ibv_wr_* API: a UC QP asking for READ/atomic builders is
	 * refused at creation (mlx5: EOPNOTSUPP/EINVAL), or the builder
	 * fails ibv_wr_complete with EINVAL */
	{
		struct tr_qp_cfg c;
		struct ibv_qp *q;

		tr_qp_cfg_default(&c, IBV_QPT_UC);
		c.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_RDMA_READ |
				   IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		errno = 0;
		q = tr_qp_create(A, p.s[0].scq.cq, p.s[0].rcq.cq, &c, NULL);
		if (q == NULL) {
			CHECK(errno == EINVAL || errno == EOPNOTSUPP);
			printf("  ibv_create_qp_ex(UC, WITH_RDMA_READ): refused "
			       "(%s)\n", dt_errstr(errno));
		} else {
			struct ibv_qp *peer;
			struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q);

			tr_qp_cfg_default(&c, IBV_QPT_UC);
			peer = tr_qp_create(B, p.s[1].scq.cq, p.s[1].rcq.cq, &c,
					    NULL);
			CHECK_PTR(peer);
			tr_uc_connect(A, q, 5, B, peer, 6, IBV_MTU_1024,
				      DT_ACCESS_ALL);
			CHECK_PTR(x);
			if (x->wr_rdma_read) {
				ibv_wr_start(x);
				x->wr_id = 1;
				ibv_wr_rdma_read(x, p.s[1].mr->rkey,
						 (uintptr_t)p.s[1].buf);
				ibv_wr_set_sge(x, p.s[0].mr->lkey,
					       (uintptr_t)p.s[0].buf, 8);
				CHECK_RET(ibv_wr_complete(x), EINVAL);
			}
			if (x->wr_atomic_fetch_add) {
				ibv_wr_start(x);
				x->wr_id = 2;
				ibv_wr_atomic_fetch_add(x, p.s[1].mr->rkey,
							(uintptr_t)p.s[1].buf, 1);
				ibv_wr_set_sge(x, p.s[0].mr->lkey,
					       (uintptr_t)p.s[0].buf, 8);
				CHECK_RET(ibv_wr_complete(x), EINVAL);
			}
			printf("  note: ibv_create_qp_ex(UC, WITH_RDMA_READ | "
			       "WITH_ATOMIC_FETCH_AND_ADD) is accepted; the "
			       "builders fail ibv_wr_complete with EINVAL\n");
			TR_QUIET(&p.s[0].scq, 20, "refused UC ibv_wr_*");
			CHECK_OK(ibv_destroy_qp(q));
			CHECK_OK(ibv_destroy_qp(peer));
		}
	}
	pair_destroy(&p, true);
	printf("  RDMA_READ, CMP_AND_SWP, FETCH_AND_ADD on UC: EINVAL at post: "
	       "ok\n");
}

/* A WRITE the responder must not execute is dropped; the QP lives on. */
static void bad_writes(void)
{
	struct pair p;

	pair_create(&p, "uc-access", IBV_MTU_1024, false, 100, 200,
		    IBV_ACCESS_LOCAL_WRITE, 32);	/* no REMOTE_WRITE */
	for (int k = 0; k < 2; k++) {
		struct side *s = &p.s[0], *r = &p.s[1];
		struct tr_layout src;
		struct ibv_wc wc;
		struct dt_wc_exp e;
		uint64_t sid = ++p.wrid;
		uint32_t rkey = k == 0 ? r->mr->rkey : r->mr->rkey ^ 0x100;
		const char *what = k == 0 ? "WRITE to a QP without REMOTE_WRITE"
					  : "WRITE with a bad R_Key";

		make_layout(s, SRC_OFF, 3000, &src);
		memset(r->buf + DST_OFF, CANARY, 4096);
		post(&p, s, sid, IBV_WR_RDMA_WRITE, &src,
		     (uintptr_t)(r->buf + DST_OFF), rkey, 0, false, true);
		TR_WAIT(&s->scq, &wc, 1, what);
		e = dt_exp_send(sid, IBV_WR_RDMA_WRITE, 3000, s->qp->qp_num);
		CHECK_WC(&wc, &e);
		/* the SEND behind it arrives: the QP is still in business */
		fence_send(&p, s, r);
		TR_ALL(what, r->buf + DST_OFF, 4096, CANARY);
		CHECK_EQ(dt_qp_state(r->qp), IBV_QPS_RTS);
		TR_QUIET(&r->rcq, 10, what);
		/* the next round: access rights good, bad R_Key */
		if (k == 0) {
			struct ibv_qp_attr a;

			memset(&a, 0, sizeof(a));
			a.qp_state = IBV_QPS_RTS;
			a.qp_access_flags = DT_ACCESS_ALL;
			CHECK_OK(ibv_modify_qp(r->qp, &a, IBV_QP_STATE |
					       IBV_QP_ACCESS_FLAGS));
		}
	}
	pair_destroy(&p, true);
	printf("  WRITEs the responder refuses are dropped, the QP stays in RTS: "
	       "ok\n");
}

/* ------------------------------------------------------------------ */
/* Loss                                                                 */

#define LOSS_MSGS	400
#define LOSS_SLOT	2048	/* per message: write target / receive buffer */
#define LOSS_DEPTH	64

static uint8_t pat(uint32_t seq, uint32_t i)
{
	return (uint8_t)(seq * 151u + i * 13u + (i >> 7) + 1);
}

struct lmsg {
	enum ibv_wr_opcode op;
	uint32_t len;
	bool arrived;
};

static void loss(enum ibv_mtu mtu, const char *impair, unsigned int nmsgs)
{
	struct pair p;
	struct side *s, *r;
	struct lmsg *msg = calloc(nmsgs + 16, sizeof(*msg));
	uint32_t m = dt_mtu_bytes(mtu), posted = 0, done = 0, nrecv = 0;
	uint32_t got = 0, last_seq = 0, first_lost = UINT32_MAX;
	uint32_t after_gap = 0, partial_writes = 0, whole_writes = 0;
	uint32_t nrecv_msgs = 0;
	bool have_last = false;
	struct droce_dev_stats b0, b1;
	struct droce_impair_stats is;
	struct ibv_wc wc[LOSS_DEPTH];
	double quiet;
	int ret;

	CHECK_PTR(msg);
	pair_create(&p, "uc-loss", mtu, false, 0xffffff - 100, 77,
		    DT_ACCESS_ALL, 1024);
	s = &p.s[0];
	r = &p.s[1];
	CHECK_CMP((uint64_t)(nmsgs + 16) * LOSS_SLOT * 2, <=, BUFSZ - DST_OFF);
	memset(r->buf, CANARY, BUFSZ);
	/* the messages: 1..5 packets (at least 8 bytes: the sequence number
	 * opens every SEND) */
	for (uint32_t i = 0; i < nmsgs + 16; i++) {
		static const enum ibv_wr_opcode ops[] = {
			IBV_WR_SEND, IBV_WR_SEND_WITH_IMM,
			IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_WRITE,
		};

		msg[i].op = i >= nmsgs ? IBV_WR_SEND :
			    ops[dt_rand_range(0, 3)];
		msg[i].len = (uint32_t)dt_rand_range(8, RTE_MIN(5 * m,
						     (uint32_t)LOSS_SLOT));
		if (op_recv(msg[i].op))
			nrecv_msgs++;
	}
	/* one receive per message that takes one (the lost ones leave
	 * theirs posted); receive i lands in slot i */
	for (uint32_t i = 0; i < nrecv_msgs; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)(r->buf + DST_OFF +
					    (size_t)i * LOSS_SLOT),
			.length = LOSS_SLOT, .lkey = r->mr->lkey,
		};

		tr_post_recv(r->qp, i, &sge, 1);
	}
	b0 = tr_stats(B);
	ret = droce_dev_impair(B->ctx, impair);
	if (ret != 0)
		DT_FAIL_(1, "droce_dev_impair(%s) = %d (%s)", impair, ret,
			 dt_errstr(ret));
	printf("  impairer on B's port: \"%s\"\n", impair);

	/* send, LOSS_DEPTH in flight, all signaled */
	for (uint32_t phase = 0; phase < 2; phase++) {
		uint32_t end = phase == 0 ? nmsgs : nmsgs + 16;

		if (phase == 1) {
			/* the link is clean again: everything must arrive */
			CHECK_EQ(droce_dev_impair(B->ctx, "rx_drop=0"), 0);
		}
		while (done < end) {
			while (posted < end && posted - done < LOSS_DEPTH) {
				struct lmsg *x = &msg[posted];
				uint8_t *src = s->buf + SRC_OFF +
					(size_t)(posted % (2 * LOSS_DEPTH)) *
					LOSS_SLOT;
				struct ibv_sge sge = {
					.addr = (uintptr_t)src,
					.length = x->len, .lkey = s->mr->lkey,
				};
				struct tr_layout L;

				for (uint32_t i = 0; i < x->len; i++)
					src[i] = pat(posted, i);
				if (!op_write(x->op))
					memcpy(src, &posted, 4);	/* seq */
				memset(&L, 0, sizeof(L));
				L.n = 1;
				L.sge[0] = sge;
				post(&p, s, posted, x->op, &L,
				     (uintptr_t)(r->buf + DST_OFF +
						 (size_t)(nrecv_msgs + posted) *
						 LOSS_SLOT),
				     r->mr->rkey, posted, false, true);
				posted++;
			}
			ret = dt_wait_wc(&s->scq, wc, 1, DT_WAIT_S, "UC loss: sends");
			CHECK_EQ(ret, 1);
			{
				struct dt_wc_exp e = dt_exp_send(done,
					msg[done].op, msg[done].len,
					s->qp->qp_num);

				CHECK_WC(&wc[0], &e);
			}
			done++;
		}
		if (phase == 0) {
			/* let what is in flight land or be lost */
			tr_sleep_ms(50);
		}
	}

	/* the receive side: until 300 ms pass without a completion */
	quiet = dt_now() + 0.3;
	while (dt_now() < quiet) {
		int n = dt_cq_poll(&r->rcq, wc, LOSS_DEPTH);

		CHECK_CMP(n, >=, 0);
		if (n)
			quiet = dt_now() + 0.3;
		for (int k = 0; k < n; k++) {
			struct ibv_wc *w = &wc[k];
			uint8_t *buf;
			uint32_t seq;
			char what[96];

			if (w->status != IBV_WC_SUCCESS ||
			    w->qp_num != r->qp->qp_num ||
			    w->wr_id != nrecv) {
				dt_print_wc(stderr, "UC loss: bad receive", w);
				DT_FAIL_(1, "UC loss: receive %u (wr_id 0x%" PRIx64
					 ") status %s", nrecv, w->wr_id,
					 dt_wc_status_name(w->status));
			}
			buf = r->buf + DST_OFF + (size_t)nrecv * LOSS_SLOT;
			if (w->wc_flags & IBV_WC_WITH_IMM)
				seq = be32toh(w->imm_data);
			else
				memcpy(&seq, buf, 4);
			snprintf(what, sizeof(what), "UC loss: receive %u = "
				 "message %u", nrecv, seq);
			if (seq >= nmsgs + 16 || !op_recv(msg[seq].op) ||
			    (have_last && seq <= last_seq)) {
				dt_print_wc(stderr, what, w);
				DT_FAIL_(1, "%s: not a message expected here "
					 "(last was %u)", what, last_seq);
			}
			/* the opcode and flags the message implies */
			{
				struct dt_wc_exp e = dt_exp_recv(nrecv,
					msg[seq].op, msg[seq].len,
					r->qp->qp_num, s->qp->qp_num, seq);

				CHECK_WC(w, &e);
			}
			if (msg[seq].op == IBV_WR_RDMA_WRITE_WITH_IMM)
				buf = r->buf + DST_OFF +
				      (size_t)(nrecv_msgs + seq) * LOSS_SLOT;
			for (uint32_t i = op_write(msg[seq].op) ? 0 : 4;
			     i < msg[seq].len; i++)
				if (buf[i] != pat(seq, i))
					DT_FAIL_(1, "%s (%s, %u bytes): byte %u "
						 "is 0x%02x, expected 0x%02x",
						 what,
						 dt_wr_opcode_name(msg[seq].op),
						 msg[seq].len, i, buf[i],
						 pat(seq, i));
			if (!op_write(msg[seq].op))
				CHECK_EQ(memcmp(buf, &seq, 4), 0);
			for (uint32_t x = have_last ? last_seq + 1 : 0; x < seq;
			     x++)
				if (op_recv(msg[x].op) && first_lost == UINT32_MAX)
					first_lost = x;
			if (first_lost != UINT32_MAX && seq > first_lost)
				after_gap++;
			msg[seq].arrived = true;
			last_seq = seq;
			have_last = true;
			nrecv++;
			got++;
		}
	}
	/* WRITEs: each target holds its own bytes or the canary */
	for (uint32_t seq = 0; seq < nmsgs; seq++) {
		uint8_t *t = r->buf + DST_OFF +
			     (size_t)(nrecv_msgs + seq) * LOSS_SLOT;
		uint32_t mine = 0, ambiguous = 0;

		if (!op_write(msg[seq].op))
			continue;
		for (uint32_t i = 0; i < msg[seq].len; i++) {
			if (pat(seq, i) == CANARY)
				ambiguous++;	/* tells nothing */
			else if (t[i] == pat(seq, i))
				mine++;
			else if (t[i] != CANARY)
				DT_FAIL_(1, "UC loss: WRITE %u target byte %u "
					 "is 0x%02x: neither its own 0x%02x nor "
					 "the canary", seq, i, t[i],
					 pat(seq, i));
		}
		TR_ALL("UC loss: past a WRITE target", t + msg[seq].len,
		       LOSS_SLOT - msg[seq].len, CANARY);
		if (mine + ambiguous == msg[seq].len)
			whole_writes++;
		else if (mine)
			partial_writes++;
		if (msg[seq].op == IBV_WR_RDMA_WRITE_WITH_IMM &&
		    msg[seq].arrived && mine + ambiguous != msg[seq].len)
			DT_FAIL_(1, "UC loss: WRITE_IMM %u completed but its "
				 "data is partial", seq);
	}
	/* the clean tail: all 16 SENDs arrived */
	for (uint32_t i = nmsgs; i < nmsgs + 16; i++)
		if (!msg[i].arrived)
			DT_FAIL_(0, "UC loss: message %u sent on a clean link "
				 "did not arrive", i);
	b1 = tr_stats(B);
	CHECK_EQ(droce_impair_stats(droce_dev_impairer(B->ctx), &is), 0);
	printf("  path MTU %u, %u messages: %u of the %u that take a receive "
	       "arrived (%u after a gap), %u WRITEs whole, %u partly placed; "
	       "impairer dropped %" PRIu64 " frames, rx_seq_err +%" PRIu64 "\n",
	       m, nmsgs, got, nrecv_msgs, after_gap, whole_writes,
	       partial_writes, is.rx.dropped, TR_DELTA(b1, b0, rx_seq_err));
	CHECK_CMP(is.rx.dropped, >, 0);
	CHECK_CMP(got, <, nrecv_msgs);		/* something was lost */
	CHECK_CMP(after_gap, >, 0);		/* and later ones arrived */
	CHECK_CMP(TR_DELTA(b1, b0, rx_seq_err), >, 0);
	/* UC: nothing comes back (ARP aside) */
	CHECK_EQ(TR_DELTA(b1, b0, tx_pkts) - TR_DELTA(b1, b0, arp_tx), 0);
	CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_RTS);
	CHECK_EQ(dt_qp_state(r->qp), IBV_QPS_RTS);
	TR_QUIET(&s->scq, 10, "UC loss: sender");
	pair_destroy(&p, true);
	free(msg);
	if (dt_failures)
		dt_abort();
}

/* A SEND larger than its receive: IBV_WC_LOC_LEN_ERR, the QP in error. */
static void recv_too_small(void)
{
	struct pair p;
	struct side *s, *r;
	struct tr_layout src;
	struct ibv_sge sge;
	struct ibv_wc wc;
	struct dt_wc_exp e;

	pair_create(&p, "uc-len", IBV_MTU_1024, false, 10, 20, DT_ACCESS_ALL,
		    16);
	s = &p.s[0];
	r = &p.s[1];
	sge.addr = (uintptr_t)(r->buf + DST_OFF);
	sge.length = 1500;
	sge.lkey = r->mr->lkey;
	tr_post_recv(r->qp, 0x1e4, &sge, 1);
	tr_post_recv(r->qp, 0x1e5, &sge, 1);
	make_layout(s, SRC_OFF, 3000, &src);
	post(&p, s, 0x5e4, IBV_WR_SEND, &src, 0, 0, 0, false, true);
	TR_WAIT(&s->scq, &wc, 1, "UC SEND > receive");
	e = dt_exp_send(0x5e4, IBV_WR_SEND, 3000, s->qp->qp_num);
	CHECK_WC(&wc, &e);
	TR_WAIT(&r->rcq, &wc, 1, "UC SEND > receive");
	e = dt_exp_err(0x1e4, IBV_WC_LOC_LEN_ERR, r->qp->qp_num);
	CHECK_WC(&wc, &e);
	TR_WAIT(&r->rcq, &wc, 1, "UC SEND > receive: flush");
	e = dt_exp_err(0x1e5, IBV_WC_WR_FLUSH_ERR, r->qp->qp_num);
	CHECK_WC(&wc, &e);
	CHECK_EQ(dt_qp_state(r->qp), IBV_QPS_ERR);
	CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_RTS);
	pair_destroy(&p, false);
	printf("  SEND larger than the receive: LOC_LEN_ERR, receiver in ERR: "
	       "ok\n");
}

/*
 * A WRITE with an unknown lkey (IBTA 10.3.1, SQEr): IBV_WC_LOC_PROT_ERR,
 * the QP in SQE, the WR behind it flushed, nothing written at the peer;
 * the QP still receives; ibv_modify_qp(SQE -> RTS) and it sends again.
 */
static void send_queue_error(void)
{
	struct pair p;
	struct side *s, *r;
	struct tr_layout bad, good;
	struct ibv_wc wc;
	struct dt_wc_exp e;
	struct droce_dev_stats a0 = tr_stats(A), a1;

	pair_create(&p, "uc-sqe", IBV_MTU_1024, false, 30, 40, DT_ACCESS_ALL,
		    16);
	s = &p.s[0];
	r = &p.s[1];
	make_layout(s, SRC_OFF, 2000, &bad);
	bad.sge[bad.n - 1].lkey ^= 0x5a5a00u;
	make_layout(s, SRC_OFF, 100, &good);
	memset(r->buf + DST_OFF, CANARY, 4096);
	post(&p, s, 0x5e0, IBV_WR_RDMA_WRITE, &bad, (uintptr_t)(r->buf + DST_OFF),
	     r->mr->rkey, 0, false, true);
	post(&p, s, 0x5e1, IBV_WR_RDMA_WRITE, &good,
	     (uintptr_t)(r->buf + DST_OFF), r->mr->rkey, 0, false, true);
	TR_WAIT(&s->scq, &wc, 1, "UC WRITE, bad lkey");
	e = dt_exp_err(0x5e0, IBV_WC_LOC_PROT_ERR, s->qp->qp_num);
	CHECK_WC(&wc, &e);
	TR_WAIT(&s->scq, &wc, 1, "UC WRITE behind it");
	e = dt_exp_err(0x5e1, IBV_WC_WR_FLUSH_ERR, s->qp->qp_num);
	CHECK_WC(&wc, &e);
	CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_SQE);
	CHECK_EQ(dt_qp_state(r->qp), IBV_QPS_RTS);
	/* a multi-packet WRITE fails before its first packet: nothing sent */
	a1 = tr_stats(A);
	CHECK_EQ(TR_DELTA(a1, a0, tx_pkts), 0);
	TR_ALL("UC WRITE, bad lkey", r->buf + DST_OFF, 4096, CANARY);
	one_op(&p, 1, IBV_WR_SEND, 300, false);		/* to the QP in SQE */
	CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_SQE);
	CHECK_OK(dt_qp_to_state(s->qp, IBV_QPS_RTS));
	one_op(&p, 0, IBV_WR_RDMA_WRITE, 3000, false);
	one_op(&p, 0, IBV_WR_SEND_WITH_IMM, 100, false);
	pair_destroy(&p, true);
	printf("  bad lkey: LOC_PROT_ERR, QP in SQE, the rest flushed, "
	       "receives go on, SQE -> RTS sends again: ok\n");
}

/* Past the RC window (ETH_REQ_WINDOW, 1024 PSNs): a UC message of
 * 8193 packets went out 1024 packets far and then never on. */
static void long_messages(void)
{
	struct pair p;
	const uint32_t len = 2u * 1024 * 1024 + 5;

	pair_create(&p, "uc-long", IBV_MTU_256, true, 0xfffff0, 50,
		    DT_ACCESS_ALL, 16);
	one_op(&p, 0, IBV_WR_SEND, len, false);
	one_op(&p, 1, IBV_WR_RDMA_WRITE_WITH_IMM, len, true);
	one_op(&p, 0, IBV_WR_SEND_WITH_IMM, 300, false);
	pair_destroy(&p, true);
	printf("  %u-byte SEND and WRITE_WITH_IMM at MTU 256 (%u packets): "
	       "ok\n", len, (len + 255) / 256);
}

int main(int argc, char **argv)
{
	(void)argc;
	dt_watchdog(200);
	dt_init(&env, argv[0], NULL, NULL);
	dt_set_abort_hook(abort_hook);
	A = &env.dev[0];
	B = &env.dev[1];

	printf("1. data path\n");
	matrix(IBV_MTU_256, false);
	matrix(IBV_MTU_1024, false);
	matrix(IBV_MTU_256, true);
	matrix(IBV_MTU_1024, true);
	printf("2. READ and atomics\n");
	post_errors();
	printf("3. refused WRITEs\n");
	bad_writes();
	printf("4. loss\n");
	loss(IBV_MTU_256, "seed=1,rx_drop=0.2", LOSS_MSGS);
	loss(IBV_MTU_1024, "seed=7,rx_drop=0.1", LOSS_MSGS / 2);
	printf("5. receive too small\n");
	recv_too_small();
	printf("6. send queue error\n");
	send_queue_error();
	printf("7. long messages\n");
	long_messages();
	dt_fini(&env);
	printf("test_uc: %u messages checked, %u failure(s)\n", n_msgs,
	       dt_failures);
	return dt_failures ? 1 : 0;
}
