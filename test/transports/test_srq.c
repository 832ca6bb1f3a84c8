/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_srq: shared receive queues and the async events that go with them,
 * over two real droce devices (net_ring pair).
 *
 *  1. Three RC QPs on device B share one SRQ (ibv_create_srq; then
 *     ibv_create_srq_ex with two receive CQs); A sends N messages on each
 *     (SEND, SEND_WITH_IMM, RDMA_WRITE_WITH_IMM, 0..3000 bytes, several
 *     in flight per QP, QPs interleaved). Every completion on B has the
 *     right qp_num, opcode, flags, immediate and length, each QP's messages
 *     arrive in order, every byte is checked, and the SRQ WQEs consumed
 *     are exactly a contiguous run (none lost, none used twice).
 *  2. ibv_post_recv on an SRQ-attached QP: EINVAL with bad_wr.
 *     ibv_query_qp: the QP reports the SRQ and no receive queue of its own.
 *  3. srq_limit: ibv_query_srq values; ibv_modify_srq(IBV_SRQ_LIMIT) arms;
 *     consuming down to the limit raises nothing, one below raises exactly
 *     one IBV_EVENT_SRQ_LIMIT_REACHED (poll() on async_fd, then
 *     ibv_get_async_event: element.srq, ibv_ack_async_event), and nothing
 *     more until it is armed again; then again once. IBV_SRQ_MAX_WR and a
 *     limit above max_wr: EINVAL. Bad ibv_create_srq attributes. A
 *     non-blocking async_fd: ibv_get_async_event fails with EAGAIN.
 *  4. ibv_destroy_srq while QPs use it: EBUSY (and the SRQ still works).
 *  5. A QP on the SRQ moved to the error state: exactly one
 *     IBV_EVENT_QP_LAST_WQE_REACHED for it (element.qp), no SRQ receive
 *     flushed, the other QPs go on consuming the SRQ; a send posted to the
 *     errored QP is flushed without a second event. A QP in the error
 *     state with a receive it had claimed (a message cut short): that one
 *     receive is flushed, the rest of the SRQ is untouched. A QP
 *     failing on its own (a message too long for the claimed receive):
 *     LOC_LEN_ERR on that receive, IBV_EVENT_QP_REQ_ERR and the event,
 *     the others unaffected. A QP
 *     without an SRQ going to error raises no such event.
 */
#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_common.h>

#include "droce_impair.h"
#include "tr_util.h"

#define NQP		3
#define BUFSZ		(8u * 1024 * 1024)
#define SLOT		4096u
#define RECV_OFF	0u			/* B: SRQ receive slots */
#define NRSLOT		256u
#define WRITE_OFF	(2u * 1024 * 1024)	/* B: WRITE targets */
#define MAXLEN		3000u
#define WINDOW		8			/* per QP in flight */
#define CANARY		0x3c

static struct dt_env env;
static struct dt_dev *A, *B;

static void abort_hook(void)
{
	dt_dump_stats(&env);
}

/* ------------------------------------------------------------------ */

struct msg {
	enum ibv_wr_opcode op;
	uint32_t len;
	bool got;
};

struct setup {
	const char *name;
	struct ibv_srq *srq;
	uint32_t srq_max_wr;
	struct dt_cq ascq;		/* A: send completions */
	struct dt_cq arcq;		/* A: (unused) receives */
	struct dt_cq bscq;		/* B: send completions */
	struct dt_cq brcq[2];		/* B: receive CQs */
	int nrcq;
	struct ibv_qp *qa[NQP], *qb[NQP];
	uint8_t *abuf, *bbuf;
	struct ibv_mr *amr, *bmr;
	/* SRQ receives: wr_id = a running number, slot = wr_id % NRSLOT */
	uint64_t next_rid;		/* next wr_id to post */
	uint64_t posted_rids;		/* posted so far */
	uint8_t *rid_used;		/* per wr_id: completed */
	uint64_t rid_cap;
};

static uint8_t pat(uint32_t q, uint32_t seq, uint32_t i)
{
	return (uint8_t)(q * 97u + seq * 31u + i * 7u + (i >> 8) + 3);
}

static uint8_t *rslot(struct setup *S, uint64_t rid)
{
	return S->bbuf + RECV_OFF + (size_t)(rid % NRSLOT) * SLOT;
}

static void srq_post(struct setup *S, uint32_t n)
{
	for (uint32_t k = 0; k < n; k++) {
		uint64_t rid = S->next_rid++;
		uint8_t *p = rslot(S, rid);
		struct ibv_sge sg[2];
		int nsg = dt_chance(1, 2) ? 2 : 1;
		uint32_t cut = (uint32_t)dt_rand_range(1, SLOT - 1);

		CHECK_CMP(rid, <, S->rid_cap);
		memset(p, CANARY, SLOT);
		sg[0].addr = (uintptr_t)p;
		sg[0].length = nsg == 2 ? cut : SLOT;
		sg[0].lkey = S->bmr->lkey;
		sg[1].addr = (uintptr_t)(p + cut);
		sg[1].length = SLOT - cut;
		sg[1].lkey = S->bmr->lkey;
		tr_post_srq_recv(S->srq, rid, sg, nsg);
		S->posted_rids++;
	}
}

static struct ibv_srq *srq_make(struct dt_dev *d, bool ex, uint32_t max_wr,
				uint32_t max_sge, uint32_t *max_wr_out)
{
	struct ibv_srq *srq;
	struct ibv_srq_attr qa;

	if (!ex) {
		struct ibv_srq_init_attr a;

		memset(&a, 0, sizeof(a));
		a.srq_context = (void *)(uintptr_t)0x5e9;
		a.attr.max_wr = max_wr;
		a.attr.max_sge = max_sge;
		srq = ibv_create_srq(d->pd, &a);
		CHECK_PTR(srq);
		/* ibv_create_srq(3): the actual values are returned */
		CHECK_CMP(a.attr.max_wr, >=, max_wr);
		CHECK_CMP(a.attr.max_sge, >=, max_sge);
		CHECK(srq->srq_context == (void *)(uintptr_t)0x5e9);
	} else {
		struct ibv_srq_init_attr_ex a;

		memset(&a, 0, sizeof(a));
		a.srq_context = (void *)(uintptr_t)0x5ea;
		a.attr.max_wr = max_wr;
		a.attr.max_sge = max_sge;
		a.comp_mask = IBV_SRQ_INIT_ATTR_TYPE | IBV_SRQ_INIT_ATTR_PD;
		a.srq_type = IBV_SRQT_BASIC;
		a.pd = d->pd;
		srq = ibv_create_srq_ex(d->ctx, &a);
		CHECK_PTR(srq);
		CHECK_CMP(a.attr.max_wr, >=, max_wr);
		CHECK_CMP(a.attr.max_sge, >=, max_sge);
		CHECK(srq->srq_context == (void *)(uintptr_t)0x5ea);
	}
	CHECK(srq->context == d->ctx);
	CHECK(srq->pd == d->pd);
	memset(&qa, 0xa5, sizeof(qa));
	CHECK_OK(ibv_query_srq(srq, &qa));
	CHECK_CMP(qa.max_wr, >=, max_wr);
	CHECK_CMP(qa.max_sge, >=, max_sge);
	CHECK_EQ(qa.srq_limit, 0);		/* not armed */
	if (max_wr_out)
		*max_wr_out = qa.max_wr;
	return srq;
}

static void setup_create(struct setup *S, const char *name, bool ex,
			 int nrcq, struct dt_conn_cfg *cc)
{
	struct tr_qp_cfg c;
	struct dt_conn_cfg dflt;

	memset(S, 0, sizeof(*S));
	S->name = name;
	S->nrcq = nrcq;
	if (cc == NULL) {
		dt_conn_cfg_default(&dflt);
		cc = &dflt;
	}
	S->srq = srq_make(B, ex, 512, 2, &S->srq_max_wr);
	dt_cq_create(A, 1024, false, &S->ascq);
	dt_cq_create(A, 16, false, &S->arcq);
	dt_cq_create(B, 1024, ex, &S->bscq);
	for (int i = 0; i < nrcq; i++)
		dt_cq_create(B, 1024, ex && i == 1, &S->brcq[i]);
	S->abuf = dt_alloc(BUFSZ);
	S->bbuf = dt_alloc(BUFSZ);
	S->amr = dt_reg_mr(A->pd, S->abuf, BUFSZ, DT_ACCESS_ALL);
	S->bmr = dt_reg_mr(B->pd, S->bbuf, BUFSZ, DT_ACCESS_ALL);
	CHECK_PTR(S->amr);
	CHECK_PTR(S->bmr);
	S->rid_cap = 1u << 16;
	S->rid_used = calloc(S->rid_cap, 1);
	CHECK_PTR(S->rid_used);
	for (int i = 0; i < NQP; i++) {
		struct ibv_qp_cap cap;

		tr_qp_cfg_default(&c, IBV_QPT_RC);
		c.max_send_wr = 64;
		S->qa[i] = tr_qp_create(A, S->ascq.cq, S->arcq.cq, &c, NULL);
		CHECK_PTR(S->qa[i]);
		c.srq = S->srq;
		S->qb[i] = tr_qp_create(B, S->bscq.cq,
					S->brcq[i % nrcq].cq, &c, &cap);
		CHECK_PTR(S->qb[i]);
		CHECK(S->qb[i]->srq == S->srq);
		/* no receive queue of its own (IBTA 10.2.9) */
		CHECK_EQ(cap.max_recv_wr, 0);
		dt_connect(A, S->qa[i], (uint32_t)dt_rand64(), B, S->qb[i],
			   (uint32_t)dt_rand64(), cc);
	}
}

static void setup_destroy(struct setup *S)
{
	for (int i = 0; i < NQP; i++) {
		if (S->qa[i])
			CHECK_OK(ibv_destroy_qp(S->qa[i]));
		if (S->qb[i])
			CHECK_OK(ibv_destroy_qp(S->qb[i]));
	}
	CHECK_OK(ibv_destroy_srq(S->srq));
	dt_cq_destroy(&S->ascq);
	dt_cq_destroy(&S->arcq);
	dt_cq_destroy(&S->bscq);
	for (int i = 0; i < S->nrcq; i++)
		dt_cq_destroy(&S->brcq[i]);
	CHECK_OK(ibv_dereg_mr(S->amr));
	CHECK_OK(ibv_dereg_mr(S->bmr));
	free(S->abuf);
	free(S->bbuf);
	free(S->rid_used);
}

static int qp_index(struct setup *S, uint32_t qpn)
{
	for (int i = 0; i < NQP; i++)
		if (S->qb[i] && S->qb[i]->qp_num == qpn)
			return i;
	return -1;
}

/* ------------------------------------------------------------------ */
/* Part 1: traffic from A over all QPs into the shared queue            */

struct stream {
	struct msg *m;
	uint32_t n;		/* messages to send */
	uint32_t posted;	/* sent so far */
	uint32_t done;		/* completed at A */
	uint32_t rcvd;		/* received at B */
};

static uint8_t *src_slot(struct setup *S, int q, uint32_t seq)
{
	return S->abuf + ((size_t)q * 2 * WINDOW + seq % (2 * WINDOW)) * SLOT;
}

static uint8_t *write_target(struct setup *S, int q, uint32_t seq)
{
	return S->bbuf + WRITE_OFF + ((size_t)q * 256 + seq) * SLOT;
}

static void post_msg(struct setup *S, int q, uint32_t seq, const struct msg *m)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge;
	uint8_t *p = src_slot(S, q, seq);

	for (uint32_t i = 0; i < m->len; i++)
		p[i] = pat((uint32_t)q, seq, i);
	if (m->op == IBV_WR_SEND) {
		uint32_t hdr[2] = { (uint32_t)q, seq };

		memcpy(p, hdr, 8);
	}
	sge.addr = (uintptr_t)p;
	sge.length = m->len;
	sge.lkey = S->amr->lkey;
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = (uint64_t)q << 32 | seq;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = m->op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.imm_data = htobe32((uint32_t)q << 16 | seq);
	wr.wr.rdma.remote_addr = (uintptr_t)write_target(S, q, seq);
	wr.wr.rdma.rkey = S->bmr->rkey;
	CHECK_OK(ibv_post_send(S->qa[q], &wr, &bad));
}

static void check_recv(struct setup *S, struct stream *st,
		       const struct ibv_wc *w)
{
	int q = qp_index(S, w->qp_num);
	uint32_t seq;
	const struct msg *m;
	const uint8_t *data;
	struct dt_wc_exp e;
	char what[128];

	if (w->status != IBV_WC_SUCCESS || q < 0) {
		dt_print_wc(stderr, "SRQ receive", w);
		DT_FAIL_(1, "%s: receive completion: status %s, qp_num 0x%x "
			 "(ours: 0x%x 0x%x 0x%x)", S->name,
			 dt_wc_status_name(w->status), w->qp_num,
			 S->qb[0]->qp_num, S->qb[1]->qp_num, S->qb[2]->qp_num);
	}
	CHECK_CMP(w->wr_id, <, S->next_rid);
	if (S->rid_used[w->wr_id]++)
		DT_FAIL_(1, "%s: SRQ receive 0x%" PRIx64 " completed twice",
			 S->name, w->wr_id);
	if (w->wc_flags & IBV_WC_WITH_IMM) {
		uint32_t imm = be32toh(w->imm_data);

		CHECK_EQ(imm >> 16, (uint32_t)q);	/* sent on this QP */
		seq = imm & 0xffff;
	} else {
		uint32_t hdr[2];

		memcpy(hdr, rslot(S, w->wr_id), 8);
		CHECK_EQ(hdr[0], (uint32_t)q);		/* sent on this QP */
		seq = hdr[1];
	}
	/* RC: each QP's messages in order */
	CHECK_EQ(seq, st[q].rcvd);
	m = &st[q].m[seq];
	snprintf(what, sizeof(what), "%s: QP %d message %u (%s, %u bytes) in "
		 "SRQ receive 0x%" PRIx64, S->name, q, seq,
		 dt_wr_opcode_name(m->op), m->len, w->wr_id);
	e = dt_exp_recv(w->wr_id, m->op, m->len, S->qb[q]->qp_num,
			S->qa[q]->qp_num, (uint32_t)q << 16 | seq);
	CHECK_WC(w, &e);
	if (m->op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		data = write_target(S, q, seq);
		/* the receive buffer is untouched */
		TR_ALL(what, rslot(S, w->wr_id), SLOT, CANARY);
	} else {
		data = rslot(S, w->wr_id);
		TR_ALL(what, data + m->len, SLOT - m->len, CANARY);
	}
	for (uint32_t i = m->op == IBV_WR_SEND ? 8 : 0; i < m->len; i++)
		if (data[i] != pat((uint32_t)q, seq, i)) {
			DT_FAIL_(1, "%s: byte %u is 0x%02x, expected 0x%02x",
				 what, i, data[i], pat((uint32_t)q, seq, i));
		}
	if (m->op == IBV_WR_RDMA_WRITE_WITH_IMM)
		TR_ALL(what, data + m->len, SLOT - m->len, 0);
	st[q].rcvd++;
	if (dt_failures)
		dt_abort();
}

/* Run n messages per QP over the QPs in `use` (bit mask), refilling the
 * SRQ as receives complete. Returns the number of receives consumed. */
static uint32_t traffic(struct setup *S, uint32_t n, unsigned int use)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE_WITH_IMM,
	};
	struct stream st[NQP];
	struct ibv_wc wc[32];
	uint32_t total = 0, left = 0, consumed = 0;
	double deadline = dt_now() + 30;

	memset(st, 0, sizeof(st));
	for (int q = 0; q < NQP; q++) {
		if (!(use & (1u << q)))
			continue;
		st[q].n = n;
		st[q].m = calloc(n, sizeof(*st[q].m));
		CHECK_PTR(st[q].m);
		for (uint32_t i = 0; i < n; i++) {
			st[q].m[i].op = ops[dt_rand_range(0, 2)];
			st[q].m[i].len = (uint32_t)dt_rand_range(
				st[q].m[i].op == IBV_WR_SEND ? 8 : 0, MAXLEN);
		}
		total += n;
		memset(S->bbuf + WRITE_OFF + (size_t)q * 256 * SLOT, 0,
		       (size_t)256 * SLOT);
	}
	CHECK_CMP(n, <=, 256);
	left = total;
	while (left) {
		bool progress = false;

		/* post: QPs in random order, a few each */
		for (int k = 0; k < NQP; k++) {
			int q = (int)dt_rand_range(0, NQP - 1);
			uint32_t burst = (uint32_t)dt_rand_range(1, 4);

			while (burst-- && st[q].posted < st[q].n &&
			       st[q].posted - st[q].done < WINDOW) {
				post_msg(S, q, st[q].posted,
					 &st[q].m[st[q].posted]);
				st[q].posted++;
			}
		}
		/* A's completions: in order per QP */
		for (int r; (r = dt_cq_poll(&S->ascq, wc, 32)) > 0;) {
			for (int k = 0; k < r; k++) {
				int q = (int)(wc[k].wr_id >> 32);
				uint32_t seq = (uint32_t)wc[k].wr_id;
				struct dt_wc_exp e;

				CHECK(q >= 0 && q < NQP);
				CHECK_EQ(seq, st[q].done);
				e = dt_exp_send(wc[k].wr_id, st[q].m[seq].op,
						st[q].m[seq].len,
						S->qa[q]->qp_num);
				CHECK_WC(&wc[k], &e);
				st[q].done++;
			}
			progress = true;
		}
		/* B's completions, refilling the SRQ */
		for (int c = 0; c < S->nrcq; c++) {
			int r = dt_cq_poll(&S->brcq[c], wc, 32);

			CHECK_CMP(r, >=, 0);
			for (int k = 0; k < r; k++) {
				int q = qp_index(S, wc[k].qp_num);

				/* each QP completes on its own CQ */
				if (q >= 0 && q % S->nrcq != c)
					DT_FAIL_(1, "QP %d completed on receive "
						 "CQ %d", q, c);
				check_recv(S, st, &wc[k]);
				left--;
				consumed++;
			}
			if (r > 0) {
				srq_post(S, (uint32_t)r);
				progress = true;
			}
		}
		if (!progress && dt_now() > deadline) {
			for (int q = 0; q < NQP; q++)
				fprintf(stderr, "QP %d: posted %u done %u rcvd "
					"%u of %u\n", q, st[q].posted,
					st[q].done, st[q].rcvd, st[q].n);
			DT_FAIL_(1, "%s: traffic stalled", S->name);
		}
	}
	/* A's last completions */
	for (int q = 0; q < NQP; q++)
		while (st[q].done < st[q].n) {
			CHECK_EQ(dt_wait_wc(&S->ascq, wc, 1, DT_WAIT_S, "A"), 1);
			CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
			st[(int)(wc[0].wr_id >> 32)].done++;
		}
	for (int q = 0; q < NQP; q++) {
		CHECK_EQ(st[q].rcvd, st[q].n);
		free(st[q].m);
	}
	return consumed;
}

/* The completed SRQ receives are exactly [0, n): none lost or doubled. */
static void check_contiguous(struct setup *S, uint64_t n, const char *what)
{
	for (uint64_t r = 0; r < S->rid_cap; r++) {
		bool want = r < n;

		if ((S->rid_used[r] != 0) != want)
			DT_FAIL_(1, "%s: SRQ receive 0x%" PRIx64 " %s", what, r,
				 want ? "never completed" : "completed");
	}
}

static void sharing(bool ex)
{
	struct setup S;
	uint32_t n = 60, got;

	setup_create(&S, ex ? "srq_ex/2 CQs" : "srq/1 CQ", ex, ex ? 2 : 1,
		     NULL);
	srq_post(&S, 128);
	got = traffic(&S, n, 7);
	CHECK_EQ(got, NQP * n);
	check_contiguous(&S, got, S.name);
	for (int c = 0; c < S.nrcq; c++)
		TR_QUIET(&S.brcq[c], 5, S.name);
	printf("  %s: %d RC QPs x %u messages through one SRQ: every "
	       "completion's QP, order, length and bytes; %u SRQ receives "
	       "used, contiguous: ok\n", S.name, NQP, n, got);
	setup_destroy(&S);
}

/* UD and UC QPs take their receives from an SRQ too, next to RC ones. */
static void other_transports(void)
{
	struct setup S;
	struct tr_qp_cfg c;
	struct ibv_qp *uda, *udb, *uca, *ucb;
	struct ibv_ah *ah;
	struct ibv_wc wc;
	struct dt_wc_exp e;
	uint64_t rid;

	setup_create(&S, "UD/UC on an SRQ", false, 1, NULL);
	srq_post(&S, 16);
	/* UD: A.uda -> B.udb (on the SRQ) */
	tr_qp_cfg_default(&c, IBV_QPT_UD);
	uda = tr_qp_create(A, S.ascq.cq, S.arcq.cq, &c, NULL);
	CHECK_PTR(uda);
	c.srq = S.srq;
	udb = tr_qp_create(B, S.bscq.cq, S.brcq[0].cq, &c, NULL);
	CHECK_PTR(udb);
	tr_ud_up(uda, 0x1234, 1);
	tr_ud_up(udb, 0x1234, 2);
	ah = tr_ah_to(A, B);
	for (int k = 0; k < 3; k++) {
		struct ibv_send_wr wr, *bad = NULL;
		struct ibv_sge sge = { .addr = (uintptr_t)S.abuf,
				       .length = 700, .lkey = S.amr->lkey };

		dt_fill_random(S.abuf, 700);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0xd0 + k;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htobe32(0xabc0 + k);
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = udb->qp_num;
		wr.wr.ud.remote_qkey = 0x1234;
		CHECK_OK(ibv_post_send(uda, &wr, &bad));
		TR_WAIT(&S.ascq, &wc, 1, "UD on SRQ: send");
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		TR_WAIT(&S.brcq[0], &wc, 1, "UD on SRQ: receive");
		rid = wc.wr_id;
		memset(&e, 0, sizeof(e));
		e.wr_id = (uint64_t)k;
		e.status = IBV_WC_SUCCESS;
		e.opcode = IBV_WC_RECV;
		e.byte_len = TR_GRH + 700;
		e.qp_num = udb->qp_num;
		e.src_qp = uda->qp_num;
		e.wc_flags = IBV_WC_GRH | IBV_WC_WITH_IMM;
		e.imm_data = 0xabc0 + k;
		CHECK_WC(&wc, &e);
		CHECK_EQ(wc.src_qp, uda->qp_num);
		TR_CMP("UD on SRQ", rslot(&S, rid) + TR_GRH, S.abuf, 700);
		S.rid_used[rid]++;
	}
	CHECK_OK(ibv_destroy_ah(ah));
	/* UC: A.uca -> B.ucb (on the SRQ), multi-packet */
	tr_qp_cfg_default(&c, IBV_QPT_UC);
	uca = tr_qp_create(A, S.ascq.cq, S.arcq.cq, &c, NULL);
	CHECK_PTR(uca);
	c.srq = S.srq;
	ucb = tr_qp_create(B, S.bscq.cq, S.brcq[0].cq, &c, NULL);
	CHECK_PTR(ucb);
	tr_uc_connect(A, uca, 100, B, ucb, 200, IBV_MTU_1024, DT_ACCESS_ALL);
	for (int k = 0; k < 3; k++) {
		struct ibv_send_wr wr, *bad = NULL;
		struct ibv_sge sge = { .addr = (uintptr_t)S.abuf,
				       .length = 3500, .lkey = S.amr->lkey };

		dt_fill_random(S.abuf, 3500);
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0xe0 + k;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK_OK(ibv_post_send(uca, &wr, &bad));
		TR_WAIT(&S.ascq, &wc, 1, "UC on SRQ: send");
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		TR_WAIT(&S.brcq[0], &wc, 1, "UC on SRQ: receive");
		rid = wc.wr_id;
		e = dt_exp_recv(3 + (uint64_t)k, IBV_WR_SEND, 3500,
				ucb->qp_num, uca->qp_num, 0);
		CHECK_WC(&wc, &e);
		TR_CMP("UC on SRQ", rslot(&S, rid), S.abuf, 3500);
		S.rid_used[rid]++;
	}
	/* and an RC QP of the same SRQ after them */
	CHECK_EQ(traffic(&S, 5, 1), 5);
	check_contiguous(&S, 11, "UD, UC and RC on one SRQ");
	CHECK_OK(ibv_destroy_qp(uda));
	CHECK_OK(ibv_destroy_qp(udb));
	CHECK_OK(ibv_destroy_qp(uca));
	CHECK_OK(ibv_destroy_qp(ucb));
	setup_destroy(&S);
	printf("  UD (GRH, src_qp, imm) and UC (multi-packet) QPs on the SRQ "
	       "next to RC ones: ok\n");
}

/* ------------------------------------------------------------------ */
/* Part 2: posting to an SRQ-attached QP                                */

static void post_recv_on_srq_qp(void)
{
	struct setup S;
	struct ibv_recv_wr wr[2], *bad;
	struct ibv_sge sge;
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	setup_create(&S, "post_recv", false, 1, NULL);
	sge.addr = (uintptr_t)S.bbuf;
	sge.length = 64;
	sge.lkey = S.bmr->lkey;
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 1;
	wr[0].sg_list = &sge;
	wr[0].num_sge = 1;
	bad = NULL;
	/* ibv_post_recv(3): "If the QP is associated with a Shared Receive
	 * Queue, you must use ibv_post_srq_recv() and not ibv_post_recv(),
	 * since the QP's own receive queue will not be used"; mlx5 and rxe
	 * return EINVAL. */
	CHECK_RET(ibv_post_recv(S.qb[0], &wr[0], &bad), EINVAL);
	CHECK(bad == &wr[0]);
	CHECK_OK(ibv_query_qp(S.qb[1], &a, IBV_QP_CAP, &ia));
	CHECK(ia.srq == S.srq);
	CHECK_EQ(ia.cap.max_recv_wr, 0);
	CHECK_EQ(a.cap.max_recv_wr, 0);
	/* and nothing reached the SRQ: one message takes receive 0 */
	srq_post(&S, 1);
	CHECK_EQ(traffic(&S, 1, 1), 1);
	check_contiguous(&S, 1, "after ibv_post_recv refused");
	printf("  ibv_post_recv on an SRQ QP: EINVAL, bad_wr; ibv_query_qp: "
	       "srq set, max_recv_wr 0: ok\n");
	setup_destroy(&S);
}

/* ------------------------------------------------------------------ */
/* Part 3: srq_limit                                                     */

/* Send k SENDs A.qa[0] -> B and take their receives (no refill). */
static void consume(struct setup *S, uint32_t k, uint64_t *taken)
{
	struct ibv_wc wc[64];

	for (uint32_t i = 0; i < k; i++) {
		struct ibv_send_wr wr, *bad = NULL;
		struct ibv_sge sge = { .addr = (uintptr_t)S->abuf,
				       .length = 16, .lkey = S->amr->lkey };

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0xc0000 + i;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK_OK(ibv_post_send(S->qa[0], &wr, &bad));
		TR_WAIT(&S->ascq, wc, 1, "srq_limit: send");
		CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
		TR_WAIT(&S->brcq[0], wc, 1, "srq_limit: receive");
		CHECK_EQ(wc[0].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[0].wr_id, *taken);		/* FIFO */
		CHECK_EQ(wc[0].qp_num, S->qb[0]->qp_num);
		S->rid_used[wc[0].wr_id]++;
		(*taken)++;
	}
}

static void expect_limit_event(struct setup *S, const char *what)
{
	struct ibv_async_event ev;
	unsigned int before = S->srq->events_completed;

	if (!tr_async_wait(B->ctx, (int)(DT_WAIT_S * 1000), &ev))
		DT_FAIL_(1, "%s: no async event within %.0f s", what, DT_WAIT_S);
	if (ev.event_type != IBV_EVENT_SRQ_LIMIT_REACHED ||
	    ev.element.srq != S->srq)
		DT_FAIL_(1, "%s: got %s for %p, expected SRQ_LIMIT_REACHED "
			 "for SRQ %p", what, tr_event_name(ev.event_type),
			 (void *)ev.element.srq, (void *)S->srq);
	ibv_ack_async_event(&ev);
	/* ibv_get_async_event(3): the ack is counted on the SRQ */
	CHECK_EQ(S->srq->events_completed, before + 1);
}

static void set_limit(struct ibv_srq *srq, uint32_t limit)
{
	struct ibv_srq_attr a;

	memset(&a, 0, sizeof(a));
	a.srq_limit = limit;
	CHECK_OK(ibv_modify_srq(srq, &a, IBV_SRQ_LIMIT));
	memset(&a, 0xa5, sizeof(a));
	CHECK_OK(ibv_query_srq(srq, &a));
	CHECK_EQ(a.srq_limit, limit);
}

static void srq_limit(void)
{
	struct setup S;
	struct ibv_srq_attr a;
	uint64_t taken = 0;
	int fl;

	setup_create(&S, "srq_limit", false, 1, NULL);
	tr_async_none(B->ctx, 20, "srq_limit: at start");
	/* async_fd is pollable and, made non-blocking, ibv_get_async_event
	 * fails with EAGAIN when nothing is queued (ibv_get_async_event(3)) */
	fl = fcntl(B->ctx->async_fd, F_GETFL);
	CHECK_CMP(fl, >=, 0);
	CHECK_OK(fcntl(B->ctx->async_fd, F_SETFL, fl | O_NONBLOCK));
	{
		struct ibv_async_event ev;

		errno = 0;
		CHECK_EQ(ibv_get_async_event(B->ctx, &ev), -1);
		CHECK_EQ(errno, EAGAIN);
	}
	CHECK_OK(fcntl(B->ctx->async_fd, F_SETFL, fl));

	srq_post(&S, 20);			/* 20 outstanding */
	/* bad modifications leave it as it was (ibv_modify_srq(3): resizing
	 * is optional, IBV_DEVICE_SRQ_RESIZE is not set) */
	CHECK_EQ(B->attr.device_cap_flags & IBV_DEVICE_SRQ_RESIZE, 0);
	memset(&a, 0, sizeof(a));
	a.max_wr = 1024;
	CHECK_RET(ibv_modify_srq(S.srq, &a, IBV_SRQ_MAX_WR), EINVAL);
	a.srq_limit = S.srq_max_wr + 1;
	CHECK_RET(ibv_modify_srq(S.srq, &a, IBV_SRQ_LIMIT), EINVAL);
	memset(&a, 0xa5, sizeof(a));
	CHECK_OK(ibv_query_srq(S.srq, &a));
	CHECK_EQ(a.max_wr, S.srq_max_wr);
	CHECK_EQ(a.srq_limit, 0);

	set_limit(S.srq, 10);
	tr_async_none(B->ctx, 30, "srq_limit: just armed");
	consume(&S, 10, &taken);		/* 10 left: not below 10 */
	tr_async_none(B->ctx, 50, "srq_limit: 10 left of limit 10");
	consume(&S, 1, &taken);			/* 9 left */
	expect_limit_event(&S, "srq_limit: 9 left of limit 10");
	/* fired once: disarmed (ibv_modify_srq(3)); rxe reports 0 now */
	memset(&a, 0xa5, sizeof(a));
	CHECK_OK(ibv_query_srq(S.srq, &a));
	CHECK_EQ(a.srq_limit, 0);
	consume(&S, 5, &taken);			/* 4 left */
	tr_async_none(B->ctx, 50, "srq_limit: after it fired");
	/* armed again, above the level: once more, exactly once */
	srq_post(&S, 16);			/* 20 left */
	set_limit(S.srq, 8);
	consume(&S, 12, &taken);		/* 8 left */
	tr_async_none(B->ctx, 50, "srq_limit: 8 left of limit 8");
	consume(&S, 1, &taken);			/* 7 left */
	expect_limit_event(&S, "srq_limit: 7 left of limit 8");
	consume(&S, 3, &taken);
	tr_async_none(B->ctx, 50, "srq_limit: after it fired twice");
	/* armed, then refilled above: nothing */
	set_limit(S.srq, 3);
	srq_post(&S, 10);			/* 14 left */
	consume(&S, 5, &taken);			/* 9 left */
	tr_async_none(B->ctx, 50, "srq_limit: refilled above the limit");
	set_limit(S.srq, 0);			/* disarm */
	consume(&S, 9, &taken);			/* 0 left */
	tr_async_none(B->ctx, 50, "srq_limit: disarmed");
	check_contiguous(&S, taken, "srq_limit");
	printf("  srq_limit: one SRQ_LIMIT_REACHED per arming, none at the "
	       "limit, none when disarmed; query values; EINVAL for "
	       "IBV_SRQ_MAX_WR: ok\n");
	setup_destroy(&S);

	/* ibv_create_srq attribute checks (EINVAL, as mlx5/rxe) */
	{
		struct ibv_srq_init_attr ia;

		memset(&ia, 0, sizeof(ia));
		ia.attr.max_wr = B->attr.max_srq_wr + 1;
		ia.attr.max_sge = 1;
		CHECK_NULL_ERRNO(ibv_create_srq(B->pd, &ia), EINVAL);
		ia.attr.max_wr = 16;
		ia.attr.max_sge = B->attr.max_srq_sge + 1;
		CHECK_NULL_ERRNO(ibv_create_srq(B->pd, &ia), EINVAL);
		ia.attr.max_wr = 0;
		ia.attr.max_sge = 1;
		CHECK_NULL_ERRNO(ibv_create_srq(B->pd, &ia), EINVAL);
	}
}

/* ------------------------------------------------------------------ */
/* Part 4: destroy while in use                                          */

static void destroy_busy(void)
{
	struct setup S;

	setup_create(&S, "destroy", false, 1, NULL);
	srq_post(&S, 8);
	CHECK_RET(ibv_destroy_srq(S.srq), EBUSY);
	/* still in working order */
	CHECK_EQ(traffic(&S, 4, 7), 12);
	CHECK_OK(ibv_destroy_qp(S.qb[0]));
	S.qb[0] = NULL;
	CHECK_RET(ibv_destroy_srq(S.srq), EBUSY);	/* two QPs left */
	CHECK_OK(ibv_destroy_qp(S.qb[1]));
	S.qb[1] = NULL;
	CHECK_RET(ibv_destroy_srq(S.srq), EBUSY);
	setup_destroy(&S);	/* the last QP, then the SRQ: 0 */
	printf("  ibv_destroy_srq with attached QPs: EBUSY; after the last "
	       "QP: destroyed: ok\n");
}

/* ------------------------------------------------------------------ */
/* Part 5: a QP on the SRQ in error                                      */

static void expect_last_wqe(struct ibv_qp *qp, const char *what)
{
	struct ibv_async_event ev;
	unsigned int before = qp->events_completed;

	if (!tr_async_wait(B->ctx, (int)(DT_WAIT_S * 1000), &ev))
		DT_FAIL_(1, "%s: no async event", what);
	if (ev.event_type != IBV_EVENT_QP_LAST_WQE_REACHED ||
	    ev.element.qp != qp)
		DT_FAIL_(1, "%s: got %s for %p, expected QP_LAST_WQE_REACHED "
			 "for QP %p (0x%x)", what, tr_event_name(ev.event_type),
			 (void *)ev.element.qp, (void *)qp, qp->qp_num);
	ibv_ack_async_event(&ev);
	CHECK_EQ(qp->events_completed, before + 1);
}

/*
 * A responder error on an SRQ QP: its affiliated error event (IBTA
 * 11.6.3.1, ibv_get_async_event(3): IBV_EVENT_QP_REQ_ERR for an invalid
 * request) and the QP's one LAST_WQE_REACHED, in either order.
 */
static void expect_req_err_and_last_wqe(struct ibv_qp *qp, const char *what)
{
	bool req = false, last = false;

	while (!req || !last) {
		struct ibv_async_event ev;

		if (!tr_async_wait(B->ctx, (int)(DT_WAIT_S * 1000), &ev))
			DT_FAIL_(1, "%s: %s missing", what, req ?
				 "QP_LAST_WQE_REACHED" : "QP_REQ_ERR");
		if (ev.element.qp != qp ||
		    (ev.event_type == IBV_EVENT_QP_REQ_ERR ? req :
		     ev.event_type == IBV_EVENT_QP_LAST_WQE_REACHED ? last : true))
			DT_FAIL_(1, "%s: unexpected %s for %p (QP %p)", what,
				 tr_event_name(ev.event_type),
				 (void *)ev.element.qp, (void *)qp);
		if (ev.event_type == IBV_EVENT_QP_REQ_ERR)
			req = true;
		else
			last = true;
		ibv_ack_async_event(&ev);
	}
}

/* Post one SEND of len bytes on A's QP q; no wait. */
static void send_raw(struct setup *S, int q, uint64_t wr_id, uint32_t len)
{
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_sge sge = { .addr = (uintptr_t)S->abuf, .length = len,
			       .lkey = S->amr->lkey };

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND_WITH_IMM;
	wr.imm_data = htobe32((uint32_t)q << 16);
	wr.send_flags = IBV_SEND_SIGNALED;
	CHECK_OK(ibv_post_send(S->qa[q], &wr, &bad));
}

static void qp_error(void)
{
	struct setup S;
	struct ibv_wc wc[4];
	struct dt_wc_exp e;

	setup_create(&S, "QP error", false, 1, NULL);
	srq_post(&S, 64);

	/* 5a: an idle QP moved to ERR: the event, nothing flushed */
	CHECK_OK(dt_qp_to_state(S.qb[1], IBV_QPS_ERR));
	expect_last_wqe(S.qb[1], "QP 1 -> ERR");
	TR_QUIET(&S.brcq[0], 30, "QP 1 -> ERR: no SRQ receive flushed");
	tr_async_none(B->ctx, 30, "QP 1 -> ERR: one event");
	/* the other two go on with the same receives */
	CHECK_EQ(traffic(&S, 20, 1 | 4), 40);
	check_contiguous(&S, 40, "after QP 1 -> ERR");
	/* a send posted to the errored QP is flushed, without a second
	 * LAST_WQE_REACHED: the event says the QP is in the error state and
	 * will take no further WQE from the SRQ (ibv_get_async_event(3),
	 * IBTA "Last WQE Reached"), which becomes true once per entry into
	 * the error state */
	{
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0xf1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK_OK(ibv_post_send(S.qb[1], &wr, &bad));
		TR_WAIT(&S.bscq, wc, 1, "send on an errored SRQ QP");
		e = dt_exp_err(0xf1, IBV_WC_WR_FLUSH_ERR, S.qb[1]->qp_num);
		CHECK_WC(&wc[0], &e);
		tr_async_none(B->ctx, 100, "flush of a send on an errored SRQ "
			      "QP: LAST_WQE_REACHED must not come again");
		TR_QUIET(&S.brcq[0], 5, "send on an errored SRQ QP");
	}
	/* ... nor does a second ibv_modify_qp(ERR) */
	CHECK_OK(dt_qp_to_state(S.qb[1], IBV_QPS_ERR));
	tr_async_none(B->ctx, 50, "ERR -> ERR: no second LAST_WQE_REACHED");
	printf("  idle SRQ QP -> ERR: one LAST_WQE_REACHED, no SRQ receive "
	       "flushed, the other QPs unaffected: %s\n",
	       dt_failures ? "FAILED" : "ok");

	setup_destroy(&S);
}

/*
 * A QP holding a claimed SRQ receive in the middle of a message (the
 * message's first packet arrived, the rest did not), moved to ERR: that
 * one receive is flushed; the other receives stay on the SRQ.
 */
static bool hold_claim(struct setup *S, int q)
{
	struct ibv_wc wc;

	for (uint32_t t = 1; t <= 200; t++) {
		if (t > 1 && t % 20 == 1)
			printf("  (cutting a message after its first packet: "
			       "try %u)\n", t);
		char kv[64];
		struct droce_dev_stats b0 = tr_stats(B), b1;
		uint64_t id = 0x4000 + t;

		/* each setting restarts the impairer's streams: the fate of
		 * the next two frames depends on the seed only */
		snprintf(kv, sizeof(kv), "seed=%u,rx_drop=0.5", t);
		CHECK_EQ(droce_dev_impair(B->ctx, kv), 0);
		send_raw(S, q, id, 1500);	/* two packets at MTU 1024 */
		tr_sleep_ms(15);		/* < the ACK timeout */
		CHECK_EQ(droce_dev_impair(B->ctx, "rx_drop=1"), 0);
		tr_sleep_ms(2);
		b1 = tr_stats(B);
		if (TR_DELTA(b1, b0, rx_pkts) == 1 &&
		    TR_DELTA(b1, b0, rx_seq_err) == 0 &&
		    TR_DELTA(b1, b0, rx_dup) == 0 &&
		    dt_cq_poll(&S->brcq[0], &wc, 1) == 0)
			return true;	/* the FIRST alone: a receive claimed */
		/* let this one finish (the ACK timer resends) and retry */
		CHECK_EQ(droce_dev_impair(B->ctx, "rx_drop=0"), 0);
		TR_WAIT(&S->ascq, &wc, 1, "hold_claim: sender");
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.wr_id, id);
		TR_WAIT(&S->brcq[0], &wc, 1, "hold_claim: receive");
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.qp_num, S->qb[q]->qp_num);
		S->rid_used[wc.wr_id]++;
		srq_post(S, 1);
	}
	return false;
}

/* n completions of sends on A, those of QP `skip` (which may fail) aside */
static void wait_sends(struct setup *S, int n, int skip, const char *what)
{
	struct ibv_wc wc;

	while (n > 0) {
		TR_WAIT(&S->ascq, &wc, 1, what);
		if (S->qa[skip] && wc.qp_num == S->qa[skip]->qp_num)
			continue;
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		n--;
	}
}

/* The receives completed in w[0..n) are exactly first..first+n-1. */
static void check_rid_set(const struct ibv_wc *w, int n, uint64_t first,
			  const char *what)
{
	uint64_t seen = 0;

	CHECK_CMP(n, <=, 64);
	for (int k = 0; k < n; k++) {
		uint64_t o = w[k].wr_id - first;

		if (w[k].wr_id < first || o >= (uint64_t)n || (seen >> o & 1))
			DT_FAIL_(1, "%s: SRQ receive 0x%" PRIx64 " is not one of "
				 "the next %d (from 0x%" PRIx64 ") or came twice",
				 what, w[k].wr_id, n, first);
		seen |= 1ull << o;
	}
}

static void qp_error_claimed(void)
{
	struct setup S;
	struct dt_conn_cfg cc;
	struct ibv_wc wc;
	struct dt_wc_exp e;
	uint64_t claimed = 0;

	/* the default ACK timeout (14: 67 ms): the requester's resends are
	 * dropped by the impairer once the claim is held */
	dt_conn_cfg_default(&cc);
	setup_create(&S, "QP error, claimed receive", false, 1, &cc);
	srq_post(&S, 32);
	if (!hold_claim(&S, 2))
		DT_FAIL_(1, "could not get a message cut after its first "
			 "packet in 200 tries");
	/* FIFO: the claimed receive is the one after those completed */
	for (uint64_t r = 0; r < S.rid_cap; r++)
		claimed += S.rid_used[r] != 0;
	CHECK_OK(dt_qp_to_state(S.qb[2], IBV_QPS_ERR));
	TR_WAIT(&S.brcq[0], &wc, 1, "claimed receive flushed");
	e = dt_exp_err(claimed, IBV_WC_WR_FLUSH_ERR, S.qb[2]->qp_num);
	CHECK_WC(&wc, &e);
	S.rid_used[wc.wr_id]++;
	expect_last_wqe(S.qb[2], "QP 2 -> ERR holding a claimed receive");
	TR_QUIET(&S.brcq[0], 30, "only the claimed receive is flushed");
	tr_async_none(B->ctx, 30, "QP 2 -> ERR: one event");
	CHECK_EQ(droce_dev_impair(B->ctx, "rx_drop=0"), 0);
	/* QP 0 and 1 take the following receives, none skipped */
	{
		struct ibv_wc w[16];

		for (int k = 0; k < 10; k++)
			send_raw(&S, k & 1, 0x9000 + k, 2000);
		TR_WAIT(&S.brcq[0], w, 10, "after the flush");
		for (int k = 0; k < 10; k++) {
			CHECK_EQ(w[k].status, IBV_WC_SUCCESS);
			CHECK_EQ(w[k].byte_len, 2000);
			CHECK(w[k].qp_num == S.qb[0]->qp_num ||
			      w[k].qp_num == S.qb[1]->qp_num);
		}
		check_rid_set(w, 10, claimed + 1, "after the flush");
		wait_sends(&S, 10, 2, "after the flush: senders");
	}
	/* A's QP 2 never got its message through */
	CHECK_OK(ibv_destroy_qp(S.qa[2]));
	S.qa[2] = NULL;
	while (dt_cq_poll(&S.ascq, &wc, 1) > 0)
		;
	printf("  SRQ QP -> ERR holding a claimed receive: that receive "
	       "flushed (WR_FLUSH_ERR), one LAST_WQE_REACHED, the following "
	       "receives go to the other QPs: %s\n",
	       dt_failures ? "FAILED" : "ok");
	setup_destroy(&S);
}

/* A message too long for the receive the QP claimed: LOC_LEN_ERR on that
 * receive, the QP in ERR with its event, the other QPs unaffected. */
static void qp_error_len(void)
{
	struct setup S;
	struct ibv_wc wc[16];
	struct dt_wc_exp e;
	struct ibv_sge sge;

	setup_create(&S, "QP error, too long", false, 1, NULL);
	/* receive 0: 1500 bytes (a first packet of 1024 fits, not the
	 * rest); 1..16: full slots */
	sge.addr = (uintptr_t)rslot(&S, 0);
	sge.length = 1500;
	sge.lkey = S.bmr->lkey;
	memset(rslot(&S, 0), CANARY, SLOT);
	tr_post_srq_recv(S.srq, S.next_rid++, &sge, 1);
	S.posted_rids++;
	srq_post(&S, 16);
	send_raw(&S, 1, 0x7001, 1800);	/* 2 packets: FIRST fits, LAST not */
	TR_WAIT(&S.brcq[0], wc, 1, "too long for the claimed receive");
	e = dt_exp_err(0, IBV_WC_LOC_LEN_ERR, S.qb[1]->qp_num);
	CHECK_WC(&wc[0], &e);
	TR_WAIT(&S.ascq, wc, 1, "too long: sender");
	/* the requester learns it from a NAK (invalid request) */
	e = dt_exp_err(0x7001, IBV_WC_REM_INV_REQ_ERR, S.qa[1]->qp_num);
	CHECK_WC(&wc[0], &e);
	expect_req_err_and_last_wqe(S.qb[1], "QP 1 failed on a too long message");
	tr_async_none(B->ctx, 30, "QP 1 failed: nothing more");
	CHECK_EQ(dt_qp_state(S.qb[1]), IBV_QPS_ERR);
	TR_QUIET(&S.brcq[0], 20, "too long: nothing else flushed");
	for (int k = 0; k < 6; k++)
		send_raw(&S, k % 2 ? 2 : 0, 0x7100 + k, 3000);
	TR_WAIT(&S.brcq[0], wc, 6, "too long: the others");
	for (int k = 0; k < 6; k++) {
		CHECK_EQ(wc[k].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[k].byte_len, 3000);
	}
	check_rid_set(wc, 6, 1, "too long: the others");
	wait_sends(&S, 6, 1, "too long: the others' senders");
	CHECK_OK(ibv_destroy_qp(S.qa[1]));
	S.qa[1] = NULL;
	setup_destroy(&S);
	printf("  SRQ QP failing on a message too long for its receive: "
	       "LOC_LEN_ERR on it, QP_REQ_ERR and LAST_WQE_REACHED once, the "
	       "others go on: ok\n");
}

/* A QP with its own receive queue going to ERR raises no LAST_WQE. */
static void no_event_without_srq(void)
{
	struct dt_cq c;
	struct dt_qp_cfg cfg;
	struct ibv_qp *qp;

	dt_cq_create(B, 16, false, &c);
	dt_qp_cfg_default(&cfg);
	qp = dt_qp_create(B, c.cq, c.cq, &cfg, NULL);
	CHECK_PTR(qp);
	{
		struct dt_conn_cfg cc;

		dt_conn_cfg_default(&cc);
		CHECK_OK(dt_qp_to_init(qp, &cc));
	}
	CHECK_OK(dt_qp_to_state(qp, IBV_QPS_ERR));
	tr_async_none(B->ctx, 50, "QP without an SRQ -> ERR");
	CHECK_OK(ibv_destroy_qp(qp));
	dt_cq_destroy(&c);
	printf("  QP without an SRQ -> ERR: no async event: ok\n");
}

int main(int argc, char **argv)
{
	(void)argc;
	dt_watchdog(150);
	dt_init(&env, argv[0], NULL, NULL);
	dt_set_abort_hook(abort_hook);
	A = &env.dev[0];
	B = &env.dev[1];
	CHECK_CMP(B->attr.max_srq, >, 0);
	CHECK_CMP(B->attr.max_srq_wr, >=, 512);
	CHECK_CMP(B->attr.max_srq_sge, >=, 2);

	printf("1. sharing\n");
	sharing(false);
	sharing(true);
	other_transports();
	printf("2. ibv_post_recv on an SRQ QP\n");
	post_recv_on_srq_qp();
	printf("3. srq_limit\n");
	srq_limit();
	printf("4. destroy\n");
	destroy_busy();
	printf("5. QPs in error\n");
	no_event_without_srq();
	qp_error_len();
	qp_error_claimed();
	qp_error();
	dt_fini(&env);
	printf("test_srq: %u failure(s)\n", dt_failures);
	return dt_failures ? 1 : 0;
}
