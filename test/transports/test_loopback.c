/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_loopback: QPs of one device talking to each other. The frame never
 * leaves: the port transmits nothing and the other device receives
 * nothing.
 *
 *  1. An RC pair on device A: SEND, SEND_WITH_IMM, RDMA_WRITE,
 *     RDMA_WRITE_WITH_IMM, RDMA_READ of 0, 1, MTU-1, MTU, MTU+1, 5 MTU + 3
 *     and 1 MiB bytes at path MTU 256, 1024 and 4096, both directions,
 *     gathered from and scattered into 1..4 pieces with canaries;
 *     FETCH_AND_ADD and CMP_AND_SWP (hit and miss). Every completion
 *     field on both sides, every byte.
 *  2. Pipelined: 48 mixed operations in flight (up to 48 KiB each, 16
 *     FETCH_AND_ADDs on one counter among them), through ibv_wr_* and
 *     ibv_post_send, completions in order, all data checked, the counter
 *     exact.
 *  3. The same at once on a loopback pair and on a pair between the two
 *     devices, both devices on one engine.
 *  4. A UC pair on device A (SEND, WRITE_WITH_IMM, multi-packet).
 *  5. A flood deeper than the ring pair: 32 RC pairs from A to B post
 *     4096 MTU-256 frames of WRITEs at once; the ring fills (tx_full), and
 *     back-pressure holds the rest: nothing dropped or resent, every byte
 *     and every completion right.
 */
#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "tr_util.h"

#define BUFSZ		(4u * 1024 * 1024)
#define SRC_OFF		0u
#define DST_OFF		(2u * 1024 * 1024)
#define CANARY		0xa7
#define PIPE		48
#define PIPE_SLOT	(40u * 1024)

static struct dt_env env;
static struct dt_dev *A, *B;
static unsigned int n_ops;

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
	struct side s[2];
	uint32_t mtub;
	uint64_t wrid;
};

static void abort_hook(void)
{
	dt_dump_stats(&env);
}

static void pair_create(struct pair *p, const char *name, struct dt_dev *d0,
			struct dt_dev *d1, enum ibv_qp_type type,
			enum ibv_mtu mtu)
{
	struct tr_qp_cfg c;

	memset(p, 0, sizeof(*p));
	p->name = name;
	p->mtub = dt_mtu_bytes(mtu);
	for (int i = 0; i < 2; i++) {
		struct side *s = &p->s[i];

		s->d = i ? d1 : d0;
		dt_cq_create(s->d, 256, i == 1, &s->scq);
		dt_cq_create(s->d, 256, false, &s->rcq);
		tr_qp_cfg_default(&c, type);
		c.max_send_wr = 64;
		c.max_recv_wr = 128;
		c.send_ops_flags = IBV_QP_EX_WITH_SEND |
			IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
			IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM;
		if (type == IBV_QPT_RC)
			c.send_ops_flags |= IBV_QP_EX_WITH_RDMA_READ |
				IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
		s->qp = tr_qp_create(s->d, s->scq.cq, s->rcq.cq, &c, NULL);
		CHECK_PTR(s->qp);
		s->qpx = ibv_qp_to_qp_ex(s->qp);
		CHECK_PTR(s->qpx);
		s->buf = dt_alloc(BUFSZ);
		s->mr = dt_reg_mr(s->d->pd, s->buf, BUFSZ, DT_ACCESS_ALL |
				  IBV_ACCESS_REMOTE_ATOMIC);
		CHECK_PTR(s->mr);
	}
	if (type == IBV_QPT_RC) {
		struct dt_conn_cfg cc;

		dt_conn_cfg_default(&cc);
		cc.mtu = mtu;
		cc.access = DT_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC;
		/* ~1 s (4.096 us * 2^18): the lossless loop below expects no
		 * retransmission, and a 67 ms timer fires when the engine is
		 * descheduled that long (sanitizer build, loaded machine) */
		cc.timeout = 18;
		dt_connect(d0, p->s[0].qp, (uint32_t)dt_rand64(), d1,
			   p->s[1].qp, (uint32_t)dt_rand64(), &cc);
	} else {
		tr_uc_connect(d0, p->s[0].qp, (uint32_t)dt_rand64(), d1,
			      p->s[1].qp, (uint32_t)dt_rand64(), mtu,
			      DT_ACCESS_ALL);
	}
}

static void pair_destroy(struct pair *p)
{
	for (int i = 0; i < 2; i++) {
		struct side *s = &p->s[i];

		CHECK_EQ(dt_cq_drain_unexpected(&s->scq, p->name), 0);
		CHECK_EQ(dt_cq_drain_unexpected(&s->rcq, p->name), 0);
		CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_RTS);
		CHECK_OK(ibv_destroy_qp(s->qp));
		dt_cq_destroy(&s->scq);
		dt_cq_destroy(&s->rcq);
		CHECK_OK(ibv_dereg_mr(s->mr));
		free(s->buf);
	}
}

/* ------------------------------------------------------------------ */

static void make_layout_n(struct side *s, uint32_t base, uint32_t total,
			  struct tr_layout *L, uint32_t max_pieces)
{
	tr_make_layout(s->buf, s->mr->lkey, BUFSZ, base, total, max_pieces, L);
}

static void make_layout(struct side *s, uint32_t base, uint32_t total,
			struct tr_layout *L)
{
	make_layout_n(s, base, total, L, TR_PIECES);
}

/*
 * The 8-byte result of an atomic: one SGE. (droce writes the result into
 * the first SGE only and fails the WR with LOC_PROT_ERR, after the remote
 * executed it, when that SGE is shorter than 8 bytes although the post
 * path accepted the split; see the report of this test's author.)
 */
static void make_atomic_layout(struct side *s, uint32_t base, struct tr_layout *L)
{
	make_layout_n(s, base, 8, L, 1);
}

static void put_stream(struct side *s, const struct tr_layout *L,
		       const uint8_t *data)
{
	tr_put_stream(s->buf, L, data);
}

static void check_scatter(struct side *s, const struct tr_layout *L,
			  const uint8_t *exp, uint32_t used, const char *what)
{
	tr_check_scatter(s->buf, L, exp, used, CANARY, what);
}

struct op {
	enum ibv_wr_opcode op;
	uint64_t wr_id;
	struct tr_layout src;	/* S: gather (READ/atomic: the result) */
	struct tr_layout dst;	/* R: receive, if it takes one */
	uint32_t len;
	uint32_t roff;		/* R: WRITE target / READ source / atomic */
	uint32_t imm;
	uint64_t add, cmp, swap, orig;
	uint8_t *data;		/* the message */
	uint64_t rid;
};

static bool takes_recv(enum ibv_wr_opcode op)
{
	return op == IBV_WR_SEND || op == IBV_WR_SEND_WITH_IMM ||
	       op == IBV_WR_RDMA_WRITE_WITH_IMM;
}

static bool is_atomic(enum ibv_wr_opcode op)
{
	return op == IBV_WR_ATOMIC_FETCH_AND_ADD ||
	       op == IBV_WR_ATOMIC_CMP_AND_SWP;
}

/* Prepare o (buffers, receive) and post it from s to r. */
static void op_post(struct pair *p, struct side *s, struct side *r,
		    struct op *o, uint32_t soff, uint32_t doff, bool wr_api)
{
	o->wr_id = ++p->wrid;
	o->imm = (uint32_t)dt_rand64();
	o->data = malloc(o->len ? o->len : 1);
	CHECK_PTR(o->data);
	dt_fill_random(o->data, o->len);
	if (is_atomic(o->op)) {
		o->len = 8;
		o->roff = doff;
		memcpy(&o->orig, o->data, 8);	/* initial remote value */
		memcpy(r->buf + doff, &o->orig, 8);
		o->add = dt_rand64();
		o->cmp = dt_chance(1, 2) ? o->orig : o->orig ^ 1;
		o->swap = dt_rand64();
		make_atomic_layout(s, soff, &o->src);
		memset(s->buf + soff, CANARY, o->src.end - soff);
	} else if (o->op == IBV_WR_RDMA_READ) {
		o->roff = doff + (uint32_t)dt_rand_range(0, 64);
		memcpy(r->buf + o->roff, o->data, o->len);
		make_layout(s, soff, o->len, &o->src);
		memset(s->buf + soff, CANARY, o->src.end - soff);
	} else {
		make_layout(s, soff, o->len, &o->src);
		put_stream(s, &o->src, o->data);
		if (o->op == IBV_WR_RDMA_WRITE ||
		    o->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
			o->roff = doff + 64;
			memset(r->buf + doff, CANARY, o->len + 128);
		}
	}
	if (takes_recv(o->op)) {
		uint32_t rb = doff + (o->op == IBV_WR_RDMA_WRITE_WITH_IMM ?
				      o->len + 128 : 0);

		make_layout(r, rb, o->op == IBV_WR_RDMA_WRITE_WITH_IMM ? 8 :
			    o->len + (uint32_t)dt_rand_range(0, 16), &o->dst);
		memset(r->buf + rb, CANARY, o->dst.end - rb);
		o->rid = ++p->wrid;
		tr_post_recv(r->qp, o->rid, o->dst.sge, o->dst.n);
	}
	if (!wr_api) {
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = o->wr_id;
		wr.sg_list = o->src.n ? o->src.sge : NULL;
		wr.num_sge = o->src.n;
		wr.opcode = o->op;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htobe32(o->imm);
		if (is_atomic(o->op)) {
			wr.wr.atomic.remote_addr = (uintptr_t)(r->buf + o->roff);
			wr.wr.atomic.rkey = r->mr->rkey;
			wr.wr.atomic.compare_add =
				o->op == IBV_WR_ATOMIC_FETCH_AND_ADD ? o->add
								     : o->cmp;
			wr.wr.atomic.swap = o->swap;
		} else {
			wr.wr.rdma.remote_addr = (uintptr_t)(r->buf + o->roff);
			wr.wr.rdma.rkey = r->mr->rkey;
		}
		CHECK_OK(ibv_post_send(s->qp, &wr, &bad));
		return;
	}
	ibv_wr_start(s->qpx);
	s->qpx->wr_id = o->wr_id;
	s->qpx->wr_flags = IBV_SEND_SIGNALED;
	switch (o->op) {
	case IBV_WR_SEND:
		ibv_wr_send(s->qpx);
		break;
	case IBV_WR_SEND_WITH_IMM:
		ibv_wr_send_imm(s->qpx, htobe32(o->imm));
		break;
	case IBV_WR_RDMA_WRITE:
		ibv_wr_rdma_write(s->qpx, r->mr->rkey,
				  (uintptr_t)(r->buf + o->roff));
		break;
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		ibv_wr_rdma_write_imm(s->qpx, r->mr->rkey,
				      (uintptr_t)(r->buf + o->roff),
				      htobe32(o->imm));
		break;
	case IBV_WR_RDMA_READ:
		ibv_wr_rdma_read(s->qpx, r->mr->rkey,
				 (uintptr_t)(r->buf + o->roff));
		break;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		ibv_wr_atomic_fetch_add(s->qpx, r->mr->rkey,
					(uintptr_t)(r->buf + o->roff), o->add);
		break;
	default:
		ibv_wr_atomic_cmp_swp(s->qpx, r->mr->rkey,
				      (uintptr_t)(r->buf + o->roff), o->cmp,
				      o->swap);
		break;
	}
	ibv_wr_set_sge_list(s->qpx, (size_t)o->src.n, o->src.sge);
	CHECK_OK(ibv_wr_complete(s->qpx));
}

/* Check o's completions (already polled) and data. */
static void op_check(struct pair *p, struct side *s, struct side *r,
		     struct op *o, const struct ibv_wc *swc,
		     const struct ibv_wc *rwc, const char *what)
{
	struct dt_wc_exp e = dt_exp_send(o->wr_id, o->op, o->len,
					 s->qp->qp_num);

	(void)p;
	CHECK_WC(swc, &e);
	if (takes_recv(o->op)) {
		e = dt_exp_recv(o->rid, o->op, o->len, r->qp->qp_num,
				s->qp->qp_num, o->imm);
		CHECK_WC(rwc, &e);
	}
	switch (o->op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		check_scatter(r, &o->dst, o->data, o->len, what);
		break;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		TR_ALL(what, r->buf + o->roff - 64, 64, CANARY);
		TR_CMP(what, r->buf + o->roff, o->data, o->len);
		TR_ALL(what, r->buf + o->roff + o->len, 64, CANARY);
		if (o->op == IBV_WR_RDMA_WRITE_WITH_IMM)
			check_scatter(r, &o->dst, o->data, 0, what);
		break;
	case IBV_WR_RDMA_READ:
		check_scatter(s, &o->src, o->data, o->len, what);
		break;
	default: {
		uint64_t now, want;

		check_scatter(s, &o->src, (const uint8_t *)&o->orig, 8, what);
		memcpy(&now, r->buf + o->roff, 8);
		if (o->op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			want = o->orig + o->add;
		else
			want = o->orig == o->cmp ? o->swap : o->orig;
		if (now != want)
			DT_FAIL_(0, "%s: target 0x%" PRIx64 ", expected 0x%"
				 PRIx64, what, now, want);
		break;
	}
	}
	free(o->data);
	o->data = NULL;
	n_ops++;
	if (dt_failures)
		dt_abort();
}

static void one(struct pair *p, int from, enum ibv_wr_opcode op, uint32_t len,
		bool wr_api)
{
	struct side *s = &p->s[from], *r = &p->s[!from];
	struct op o;
	struct ibv_wc swc, rwc;
	char what[160];

	memset(&o, 0, sizeof(o));
	o.op = op;
	o.len = len;
	snprintf(what, sizeof(what), "%s %s %s len %u mtu %u%s", p->name,
		 from ? "1->0" : "0->1", dt_wr_opcode_name(op), len, p->mtub,
		 wr_api ? " ibv_wr_*" : "");
	op_post(p, s, r, &o, SRC_OFF, DST_OFF + 64 * (uint32_t)dt_rand_range(0, 7),
		wr_api);
	TR_WAIT(&s->scq, &swc, 1, what);
	if (takes_recv(op))
		TR_WAIT(&r->rcq, &rwc, 1, what);
	op_check(p, s, r, &o, &swc, &rwc, what);
}

static void matrix(struct pair *p)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	};
	uint32_t m = p->mtub;
	const uint32_t lens[] = { 0, 1, m - 1, m, m + 1, 5 * m + 3,
				  1024 * 1024 };

	for (int from = 0; from < 2; from++) {
		for (size_t o = 0; o < sizeof(ops) / sizeof(ops[0]); o++)
			for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
				one(p, from, ops[o], lens[i], dt_chance(1, 2));
		for (int k = 0; k < 4; k++) {
			one(p, from, IBV_WR_ATOMIC_FETCH_AND_ADD, 8, k & 1);
			one(p, from, IBV_WR_ATOMIC_CMP_AND_SWP, 8, k & 1);
		}
	}
	printf("  %s, path MTU %u: SEND, SEND_IMM, WRITE, WRITE_IMM, READ x "
	       "0..1 MiB, FETCH_AND_ADD, CMP_AND_SWP, both ways: ok\n",
	       p->name, m);
}

/* ------------------------------------------------------------------ */
/* Pipelined                                                            */

struct pipe {
	struct pair *p;
	int from;
	struct op o[PIPE];
	uint64_t counter_off;	/* R: a shared FETCH_AND_ADD counter */
	uint64_t counter_sum;
	int nfaa;
};

static void pipe_post(struct pipe *P)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
		IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	struct pair *p = P->p;
	struct side *s = &p->s[P->from], *r = &p->s[!P->from];
	uint64_t zero = 0;

	/* the counter lives past the slots */
	P->counter_off = DST_OFF + (uint64_t)PIPE * PIPE_SLOT / 2 + 4096;
	CHECK_CMP(P->counter_off + 8, <=, BUFSZ);
	memcpy(r->buf + P->counter_off, &zero, 8);
	P->counter_sum = 0;
	P->nfaa = 0;
	for (int i = 0; i < PIPE; i++) {
		struct op *o = &P->o[i];
		uint32_t half = PIPE_SLOT / 2;

		memset(o, 0, sizeof(*o));
		o->op = ops[dt_rand_range(0, 5)];
		if (o->op == IBV_WR_ATOMIC_FETCH_AND_ADD && P->nfaa >= 16)
			o->op = IBV_WR_RDMA_WRITE;
		o->len = (uint32_t)dt_rand_range(0, 48 * 1024 - 512);
		if (o->op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			/* on the shared counter: the fetched values are
			 * checked as a set below */
			o->wr_id = ++p->wrid;
			o->len = 8;
			o->add = dt_rand_range(1, 1u << 20);
			o->roff = (uint32_t)P->counter_off;
			o->orig = P->counter_sum;	/* RC: in PSN order */
			make_atomic_layout(s, SRC_OFF + (uint32_t)i * half,
					   &o->src);
			memset(s->buf + SRC_OFF + (size_t)i * half, CANARY,
			       o->src.end - (SRC_OFF + (uint32_t)i * half));
			P->counter_sum += o->add;
			P->nfaa++;
			{
				struct ibv_send_wr wr, *bad = NULL;

				memset(&wr, 0, sizeof(wr));
				wr.wr_id = o->wr_id;
				wr.sg_list = o->src.sge;
				wr.num_sge = o->src.n;
				wr.opcode = o->op;
				wr.send_flags = IBV_SEND_SIGNALED;
				wr.wr.atomic.remote_addr =
					(uintptr_t)(r->buf + o->roff);
				wr.wr.atomic.rkey = r->mr->rkey;
				wr.wr.atomic.compare_add = o->add;
				CHECK_OK(ibv_post_send(s->qp, &wr, &bad));
			}
			continue;
		}
		/* sources in S's first 2 MiB, targets in R's second:
		 * slot i is half a PIPE_SLOT on each side */
		o->len = RTE_MIN(o->len, half - 1024);
		op_post(p, s, r, o, SRC_OFF + (uint32_t)i * half,
			DST_OFF + (uint32_t)i * half, dt_chance(1, 2));
	}
}

static void pipe_check(struct pipe *P)
{
	struct pair *p = P->p;
	struct side *s = &p->s[P->from], *r = &p->s[!P->from];
	struct ibv_wc swc[PIPE], rwc[PIPE];
	int nrecv = 0, k = 0;
	uint64_t fetched[PIPE], total;
	int nf = 0;
	char what[96];

	for (int i = 0; i < PIPE; i++)
		nrecv += takes_recv(P->o[i].op);
	TR_WAIT(&s->scq, swc, PIPE, "pipelined: sender");
	TR_WAIT(&r->rcq, rwc, nrecv, "pipelined: receiver");
	for (int i = 0; i < PIPE; i++) {
		struct op *o = &P->o[i];

		snprintf(what, sizeof(what), "%s pipelined op %d %s len %u",
			 p->name, i, dt_wr_opcode_name(o->op), o->len);
		if (o->op == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			struct dt_wc_exp e = dt_exp_send(o->wr_id, o->op, 8,
							 s->qp->qp_num);
			uint8_t res[8];
			uint32_t got = 0;

			CHECK_WC(&swc[i], &e);
			for (int j = 0; j < o->src.n; j++) {
				memcpy(res + got, s->buf + o->src.off[j],
				       o->src.sge[j].length);
				got += o->src.sge[j].length;
			}
			memcpy(&fetched[nf++], res, 8);
			/* one QP executes its atomics in order: each fetched
			 * the sum of the adds posted before it */
			if (fetched[nf - 1] != o->orig)
				DT_FAIL_(1, "%s: fetched 0x%" PRIx64 ", expected "
					 "0x%" PRIx64, what, fetched[nf - 1],
					 o->orig);
			check_scatter(s, &o->src, res, 8, what);
			n_ops++;
			continue;
		}
		/* RC: completions in posting order on both sides */
		op_check(p, s, r, o, &swc[i], takes_recv(o->op) ? &rwc[k] :
			 NULL, what);
		k += takes_recv(o->op);
	}
	/* the counter: the exact sum */
	memcpy(&total, r->buf + P->counter_off, 8);
	CHECK_EQ(total, P->counter_sum);
	TR_QUIET(&s->scq, 5, "pipelined");
}

static void pipelined(struct pair *p)
{
	struct pipe P;

	memset(&P, 0, sizeof(P));
	P.p = p;
	P.from = (int)dt_rand_range(0, 1);
	pipe_post(&P);
	pipe_check(&P);
	printf("  %s: %d mixed operations in flight (%d FETCH_AND_ADDs on one "
	       "counter): ok\n", p->name, PIPE, P.nfaa);
}

/* ------------------------------------------------------------------ */

#define FLOOD_QPS	32
#define FLOOD_WRS	4
#define FLOOD_LEN	(8u * 1024)	/* 32 frames at MTU 256 */
#define FLOOD_SPAN	(FLOOD_QPS * FLOOD_WRS * FLOOD_LEN)

/*
 * More frames at once than the ring pair between A and B holds (512 each
 * way): all QPs are started in one engine iteration, so A's transmit queue
 * meets a full ring and must hold frames back rather than drop them.
 */
static void flood(void)
{
	struct dt_cq acq, bcq;
	struct ibv_qp *qa[FLOOD_QPS], *qb[FLOOD_QPS];
	uint8_t *src = dt_alloc(FLOOD_SPAN), *dst = dt_alloc(FLOOD_SPAN + 4096);
	struct ibv_mr *smr, *dmr;
	struct droce_dev_stats a0, a1, b0, b1;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	uint32_t next[FLOOD_QPS] = { 0 };
	int done = 0;

	for (uint32_t i = 0; i < FLOOD_SPAN; i++)
		src[i] = (uint8_t)dt_rand64();
	memset(dst + FLOOD_SPAN, CANARY, 4096);
	smr = dt_reg_mr(A->pd, src, FLOOD_SPAN, DT_ACCESS_ALL);
	dmr = dt_reg_mr(B->pd, dst, FLOOD_SPAN + 4096, DT_ACCESS_ALL);
	CHECK_PTR(smr);
	CHECK_PTR(dmr);
	dt_cq_create(A, FLOOD_QPS * FLOOD_WRS, false, &acq);
	dt_cq_create(B, 16, false, &bcq);
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = FLOOD_WRS;
	dt_conn_cfg_default(&cc);
	cc.mtu = IBV_MTU_256;
	cc.timeout = 18;	/* ~1 s: a lossless run resends nothing */
	for (int k = 0; k < FLOOD_QPS; k++) {
		qa[k] = dt_qp_create(A, acq.cq, acq.cq, &qc, NULL);
		qb[k] = dt_qp_create(B, bcq.cq, bcq.cq, &qc, NULL);
		CHECK_PTR(qa[k]);
		CHECK_PTR(qb[k]);
		dt_connect(A, qa[k], (uint32_t)dt_rand64(), B, qb[k],
			   (uint32_t)dt_rand64(), &cc);
	}
	a0 = tr_stats(A);
	b0 = tr_stats(B);
	for (int k = 0; k < FLOOD_QPS; k++) {
		struct ibv_sge sge[FLOOD_WRS];
		struct ibv_send_wr wr[FLOOD_WRS], *bad = NULL;

		for (int j = 0; j < FLOOD_WRS; j++) {
			uint64_t off = ((uint64_t)k * FLOOD_WRS + (uint64_t)j) *
				       FLOOD_LEN;

			sge[j] = (struct ibv_sge){
				.addr = (uintptr_t)(src + off),
				.length = FLOOD_LEN, .lkey = smr->lkey };
			wr[j] = (struct ibv_send_wr){
				.wr_id = (uint64_t)k << 8 | (uint64_t)j,
				.next = j + 1 < FLOOD_WRS ? &wr[j + 1] : NULL,
				.sg_list = &sge[j], .num_sge = 1,
				.opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
				.wr.rdma = { .remote_addr = (uintptr_t)(dst + off),
					     .rkey = dmr->rkey } };
		}
		CHECK_EQ(ibv_post_send(qa[k], wr, &bad), 0);
	}
	while (done < FLOOD_QPS * FLOOD_WRS) {
		struct ibv_wc wc[16];
		int n = dt_wait_wc(&acq, wc, 1, 30, "flood");

		CHECK_EQ(n, 1);
		n += dt_cq_poll(&acq, wc + 1, 15);
		for (int i = 0; i < n; i++) {
			int k = (int)(wc[i].wr_id >> 8);
			struct dt_wc_exp e;

			CHECK(k >= 0 && k < FLOOD_QPS);
			/* per QP in posting order (IBTA C10-24) */
			e = (struct dt_wc_exp){
				.wr_id = (uint64_t)k << 8 | next[k],
				.status = IBV_WC_SUCCESS,
				.opcode = IBV_WC_RDMA_WRITE, .byte_len = DT_ANY,
				.qp_num = qa[k]->qp_num, .src_qp = DT_ANY };
			CHECK_WC(&wc[i], &e);
			next[k]++;
			done++;
		}
	}
	for (int k = 0; k < FLOOD_QPS; k++)
		CHECK_EQ(next[k], (uint32_t)FLOOD_WRS);
	CHECK_EQ(dt_cq_drain_unexpected(&acq, "flood A"), 0);
	CHECK_EQ(dt_cq_drain_unexpected(&bcq, "flood B"), 0);
	CHECK(memcmp(dst, src, FLOOD_SPAN) == 0);
	for (uint32_t i = 0; i < 4096; i++)
		CHECK_EQ(dst[FLOOD_SPAN + i], CANARY);
	a1 = tr_stats(A);
	b1 = tr_stats(B);
	/* the ring did fill, and nothing was lost for it */
	EXPECT(TR_DELTA(a1, a0, tx_full) > 0);
	EXPECT_EQ(TR_DELTA(a1, a0, tx_dropped), 0);
	EXPECT_EQ(TR_DELTA(a1, a0, retransmits), 0);
	EXPECT_EQ(TR_DELTA(b1, b0, rx_seq_err), 0);
	EXPECT_EQ(TR_DELTA(b1, b0, rx_pkts),
		  (uint64_t)FLOOD_QPS * FLOOD_WRS * (FLOOD_LEN / 256));
	printf("  %d RC pairs A->B, %u frames at once (ring: 512), %" PRIu64
	       " full-ring transmits held back, nothing dropped or resent: ok\n",
	       FLOOD_QPS, FLOOD_QPS * FLOOD_WRS * (FLOOD_LEN / 256),
	       TR_DELTA(a1, a0, tx_full));
	n_ops += FLOOD_QPS * FLOOD_WRS;
	for (int k = 0; k < FLOOD_QPS; k++) {
		CHECK_EQ(ibv_destroy_qp(qa[k]), 0);
		CHECK_EQ(ibv_destroy_qp(qb[k]), 0);
	}
	dt_cq_destroy(&acq);
	dt_cq_destroy(&bcq);
	CHECK_EQ(ibv_dereg_mr(smr), 0);
	CHECK_EQ(ibv_dereg_mr(dmr), 0);
	free(src);
	free(dst);
}

int main(int argc, char **argv)
{
	struct pair p;
	uint64_t opk;
	struct droce_dev_stats a0, a1, b0, b1;

	(void)argc;
	dt_watchdog(150);
	dt_init(&env, argv[0], "ip=198.18.0.1,mtu=4096",
		"ip=198.18.0.2,mtu=4096");
	dt_set_abort_hook(abort_hook);
	A = &env.dev[0];
	B = &env.dev[1];
	CHECK_EQ(dt_mtu_bytes(A->port.active_mtu), 4096);
	CHECK_EQ(A->attr.atomic_cap, IBV_ATOMIC_HCA);

	printf("1. RC loopback on device A\n");
	opk = tr_port_opackets(A);
	b0 = tr_stats(B);
	a0 = tr_stats(A);
	{
		const enum ibv_mtu mtus[] = { IBV_MTU_256, IBV_MTU_1024,
					      IBV_MTU_4096 };

		for (size_t i = 0; i < 3; i++) {
			pair_create(&p, "RC A<->A", A, A, IBV_QPT_RC, mtus[i]);
			matrix(&p);
			pair_destroy(&p);
		}
	}
	printf("2. pipelined\n");
	pair_create(&p, "RC A<->A", A, A, IBV_QPT_RC, IBV_MTU_1024);
	for (int k = 0; k < 3; k++)
		pipelined(&p);
	pair_destroy(&p);
	b1 = tr_stats(B);
	a1 = tr_stats(A);
	CHECK_EQ(tr_port_opackets(A) - opk, 0);
	/* one device's loop is lossless: nothing dropped, nothing resent */
	EXPECT_EQ(TR_DELTA(a1, a0, tx_full), 0);
	EXPECT_EQ(TR_DELTA(a1, a0, tx_dropped), 0);
	EXPECT_EQ(TR_DELTA(a1, a0, retransmits), 0);
	EXPECT_EQ(TR_DELTA(a1, a0, rx_seq_err), 0);
	EXPECT_EQ(TR_DELTA(a1, a0, tx_pkts), TR_DELTA(a1, a0, rx_pkts));
	CHECK_EQ(TR_DELTA(b1, b0, rx_pkts), 0);
	CHECK_EQ(TR_DELTA(b1, b0, rx_not_roce), 0);
	printf("  nothing left port %d, nothing reached device B: ok\n",
	       A->port_id);

	printf("3. loopback and cross-device at once\n");
	{
		struct pair l, x;
		struct pipe PL, PX;

		pair_create(&l, "RC A<->A", A, A, IBV_QPT_RC, IBV_MTU_1024);
		pair_create(&x, "RC A<->B", A, B, IBV_QPT_RC, IBV_MTU_1024);
		for (int k = 0; k < 3; k++) {
			memset(&PL, 0, sizeof(PL));
			memset(&PX, 0, sizeof(PX));
			PL.p = &l;
			PX.p = &x;
			PL.from = k & 1;
			PX.from = (k >> 1) & 1;
			pipe_post(&PL);
			pipe_post(&PX);
			pipe_check(&PL);
			pipe_check(&PX);
		}
		pair_destroy(&l);
		pair_destroy(&x);
		printf("  RC A<->A and RC A<->B, %d operations each in flight "
		       "together, 3 rounds: ok\n", PIPE);
	}

	printf("4. UC loopback on device A\n");
	pair_create(&p, "UC A<->A", A, A, IBV_QPT_UC, IBV_MTU_1024);
	{
		const uint32_t lens[] = { 0, 1, 1023, 1024, 1025, 5000,
					  256 * 1024 };

		for (int from = 0; from < 2; from++)
			for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++) {
				one(&p, from, IBV_WR_SEND, lens[i], false);
				one(&p, from, IBV_WR_SEND_WITH_IMM, lens[i], true);
				one(&p, from, IBV_WR_RDMA_WRITE_WITH_IMM, lens[i],
				    false);
			}
	}
	pair_destroy(&p);
	printf("  UC A<->A: SEND, SEND_IMM, WRITE_IMM up to 256 KiB: ok\n");

	printf("5. a flood deeper than the ring pair\n");
	flood();

	dt_fini(&env);
	printf("test_loopback: %u operations checked, %u failure(s)\n", n_ops,
	       dt_failures);
	return dt_failures ? 1 : 0;
}
