/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_rc_datapath: the RC data path end to end over two real droce devices
 * joined back to back (droce_create_ring_pair, net_ring).
 *
 * Part 1, the matrix: SEND, SEND_WITH_IMM, RDMA_WRITE, RDMA_WRITE_WITH_IMM,
 * RDMA_READ x lengths 0, 1, MTU-1, MTU, MTU+1, 1 MiB x path MTU 1024 and
 * 4096 (256 spot-checked), each with a random number (1..max_send_sge) of
 * non-contiguous gather/scatter pieces, random direction, random
 * signaled/unsignaled, through three QP/CQ set-ups:
 *   A: ibv_create_qp + ibv_create_cq + ibv_post_send (legacy)
 *   B: ibv_create_qp_ex(SEND_OPS_FLAGS) + ibv_create_cq_ex + ibv_wr_*
 *   C: ibv_create_qp_ex, a classic CQ on one side and an extended one on
 *      the other, legacy and ibv_wr_* posting chosen per case
 * plus inline data up to max_inline_data (IBV_SEND_INLINE and
 * ibv_wr_set_inline_data[_list]), and ibv_wr_abort. Every byte is compared
 * (random fill, canaries around every destination), every completion field
 * is checked on both sides, unsignaled WRs must not produce completions.
 *
 * Part 2, stress: 8 QP pairs, both directions at once, queue depth 256,
 * thousands of mixed operations in flight, shared CQs, legacy chains and
 * ibv_wr_* batches, per-QP completion order checked, all data verified.
 *
 * Part 3, late receives: 32 SENDs posted before their receives (RNR NAK
 * and retry) must all complete once the receives are posted.
 *
 * DROCE_TEST_SEED replays a run; DROCE_TEST_STRESS_ROUNDS (default 20).
 */
#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "droce.h"
#include "droce_test.h"

#define MIB		(1u << 20)
#define BUF_SIZE	(4u * MIB)	/* per side: src area + dst area */
#define AREA		(2u * MIB)
#define INL_SIZE	(64u * 1024)	/* unregistered scratch for inline */
#define MAXSGE		64
#define NOPS		5

enum { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ };

static const enum ibv_wr_opcode op_wr[NOPS] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
};

static bool op_consumes_recv(int op)
{
	return op == OP_SEND || op == OP_SEND_IMM || op == OP_WRITE_IMM;
}

static bool op_has_imm(int op)
{
	return op == OP_SEND_IMM || op == OP_WRITE_IMM;
}

static bool op_is_rdma(int op)
{
	return op == OP_WRITE || op == OP_WRITE_IMM || op == OP_READ;
}

struct side {
	uint8_t *buf;		/* BUF_SIZE, registered */
	struct ibv_mr *mr;
	uint8_t *inl;		/* INL_SIZE, not registered */
};

struct pair {
	const char *name;
	struct ibv_qp *qp[2];
	struct ibv_qp_ex *qpx[2];	/* NULL: created with ibv_create_qp */
	struct dt_cq scq[2], rcq[2];
	struct ibv_qp_cap cap[2];
	enum ibv_mtu mtu;
};

static struct dt_env env;
static struct side S[2];
static uint8_t *msg;		/* the expected message */
static uint64_t g_wrid = 0x1000;
static unsigned int n_cases, n_bytes_mb;
static uint32_t g_inline_req = 256;

static void abort_hook(void)
{
	dt_dump_stats(&env);
}

/* ------------------------------------------------------------------ */
/* Layouts: a message split into k non-contiguous pieces                */

struct piece {
	uint64_t off;		/* offset in the base buffer */
	uint32_t len;
};

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Split len bytes into k pieces (each >= 1 byte) at random cut points and
 * place them in [base, base + size) in order, with random gaps (0..64
 * bytes) between them. len == 0: k pieces of 0 bytes (k may be 0).
 */
static int make_layout(uint32_t len, int k, uint64_t base, uint64_t size,
		       struct piece *p)
{
	uint32_t cuts[MAXSGE + 1];
	uint64_t pos;
	int i, n = 0;

	if (len == 0) {
		for (i = 0; i < k; i++) {
			p[i].off = base + dt_rand_range(0, 64);
			p[i].len = 0;
		}
		return k;
	}
	if ((uint32_t)k > len)
		k = (int)len;
	if (k < 1)
		k = 1;
	/* k - 1 distinct cut points in [1, len - 1] */
	while (n < k - 1) {
		uint32_t c = (uint32_t)dt_rand_range(1, len - 1);
		bool dup = false;

		for (i = 0; i < n; i++)
			if (cuts[i] == c)
				dup = true;
		if (!dup)
			cuts[n++] = c;
	}
	qsort(cuts, (size_t)n, sizeof(cuts[0]), cmp_u32);
	cuts[n] = len;
	pos = base + dt_rand_range(0, 63);
	for (i = 0; i < k; i++) {
		uint32_t from = i == 0 ? 0 : cuts[i - 1];

		p[i].off = pos;
		p[i].len = cuts[i] - from;
		pos += p[i].len + dt_rand_range(0, 64);
	}
	CHECK_CMP(pos, <=, base + size);
	return k;
}

static void scatter_msg(uint8_t *base, const struct piece *p, int k,
			const uint8_t *m)
{
	uint64_t o = 0;
	int i;

	for (i = 0; i < k; i++) {
		memcpy(base + p[i].off, m + o, p[i].len);
		o += p[i].len;
	}
}

/* Report the first mismatches of a byte comparison; returns true if equal. */
static bool cmp_bytes(const char *what, const uint8_t *got,
		      const uint8_t *exp, size_t len, uint64_t stream_off)
{
	size_t i, bad = 0, first = 0;

	if (memcmp(got, exp, len) == 0)
		return true;
	for (i = 0; i < len; i++)
		if (got[i] != exp[i]) {
			if (bad++ == 0)
				first = i;
		}
	DT_FAIL_(0, "%s: %zu of %zu bytes differ; first at message offset "
		 "%" PRIu64 ": got 0x%02x expected 0x%02x", what, bad, len,
		 stream_off + first, got[first], exp[first]);
	return false;
}

static bool check_canary(const char *what, const uint8_t *p, uint64_t from,
			 uint64_t to, uint8_t c)
{
	uint64_t i;

	for (i = from; i < to; i++)
		if (p[i] != c) {
			DT_FAIL_(0, "%s: byte at offset %" PRIu64 " outside "
				 "the destination was overwritten (0x%02x, "
				 "canary 0x%02x)", what, i, p[i], c);
			return false;
		}
	return true;
}

/* Check the pieces hold the message and everything else in [lo, hi) of
 * base still holds the canary. */
static bool verify_pieces(const char *what, const uint8_t *base,
			  const struct piece *p, int k, uint32_t len,
			  uint64_t lo, uint64_t hi, uint8_t canary)
{
	uint64_t o = 0, cur = lo;
	bool ok = true;
	int i;

	for (i = 0; i < k && ok; i++) {
		uint32_t take = p[i].len;

		if (o + take > len)
			take = (uint32_t)(len - o);
		ok = check_canary(what, base, cur, p[i].off, canary);
		if (ok && take)
			ok = cmp_bytes(what, base + p[i].off, msg + o, take, o);
		o += take;
		cur = p[i].off + take;
	}
	if (ok)
		ok = check_canary(what, base, cur, hi, canary);
	return ok;
}

/* ------------------------------------------------------------------ */
/* Pairs                                                                */

static void pair_create(struct pair *P, const char *name, enum ibv_mtu mtu,
			bool qp_ex, bool ex_cq0, bool ex_cq1, uint32_t depth)
{
	struct dt_conn_cfg cc;
	uint32_t psn[2];
	int s;

	memset(P, 0, sizeof(*P));
	P->name = name;
	P->mtu = mtu;
	for (s = 0; s < 2; s++) {
		struct dt_dev *d = &env.dev[s];
		bool ex = s == 0 ? ex_cq0 : ex_cq1;
		struct dt_qp_cfg cfg;

		dt_cq_create(d, (int)depth * 2, ex, &P->scq[s]);
		dt_cq_create(d, (int)depth * 2, ex, &P->rcq[s]);
		dt_qp_cfg_default(&cfg);
		cfg.max_send_wr = depth;
		cfg.max_recv_wr = depth;
		cfg.max_send_sge = (uint32_t)(d->attr.max_sge < MAXSGE ?
					      d->attr.max_sge : MAXSGE);
		cfg.max_recv_sge = cfg.max_send_sge;
		cfg.max_inline_data = g_inline_req;
		cfg.send_ops_flags = qp_ex ? DT_SEND_OPS_ALL : 0;
		for (;;) {
			P->qp[s] = dt_qp_create(d, P->scq[s].cq, P->rcq[s].cq,
						&cfg, &P->cap[s]);
			if (P->qp[s] != NULL || cfg.max_inline_data == 0)
				break;
			printf("  note: QP with max_inline_data=%u refused "
			       "(%s); trying %u\n", cfg.max_inline_data,
			       dt_errstr(errno), cfg.max_inline_data / 2);
			cfg.max_inline_data /= 2;
			g_inline_req = cfg.max_inline_data;
		}
		CHECK_PTR(P->qp[s]);
		CHECK_CMP(P->cap[s].max_send_wr, >=, cfg.max_send_wr);
		CHECK_CMP(P->cap[s].max_recv_wr, >=, cfg.max_recv_wr);
		CHECK_CMP(P->cap[s].max_send_sge, >=, cfg.max_send_sge);
		CHECK_CMP(P->cap[s].max_recv_sge, >=, cfg.max_recv_sge);
		CHECK_CMP(P->cap[s].max_inline_data, >=, cfg.max_inline_data);
		if (P->cap[s].max_send_sge > MAXSGE)
			P->cap[s].max_send_sge = MAXSGE;
		if (P->cap[s].max_recv_sge > MAXSGE)
			P->cap[s].max_recv_sge = MAXSGE;
		if (P->cap[s].max_inline_data > INL_SIZE / 2)
			P->cap[s].max_inline_data = INL_SIZE / 2;
		CHECK_EQ(P->qp[s]->qp_type, IBV_QPT_RC);
		CHECK_EQ(P->qp[s]->state, IBV_QPS_RESET);
		if (qp_ex) {
			P->qpx[s] = ibv_qp_to_qp_ex(P->qp[s]);
			CHECK_PTR(P->qpx[s]);
		}
		/* PSNs near the 24-bit wrap half of the time. */
		psn[s] = dt_chance(1, 2) ?
			 (uint32_t)dt_rand_range(0xffffff - 3000, 0xffffff) :
			 (uint32_t)dt_rand_range(0, 0xffffff);
	}
	dt_conn_cfg_default(&cc);
	cc.mtu = mtu;
	dt_connect(&env.dev[0], P->qp[0], psn[0], &env.dev[1], P->qp[1],
		   psn[1], &cc);
	printf("pair %s: mtu %u, qpn 0x%x <-> 0x%x, psn 0x%06x / 0x%06x, "
	       "max_sge %u, max_inline %u\n", name, dt_mtu_bytes(mtu),
	       P->qp[0]->qp_num, P->qp[1]->qp_num, psn[0], psn[1],
	       P->cap[0].max_send_sge, P->cap[0].max_inline_data);
}

static void pair_destroy(struct pair *P)
{
	int s;

	for (s = 0; s < 2; s++) {
		CHECK_OK(ibv_destroy_qp(P->qp[s]));
		dt_cq_destroy(&P->scq[s]);
		dt_cq_destroy(&P->rcq[s]);
	}
	memset(P, 0, sizeof(*P));
}

/* ------------------------------------------------------------------ */
/* One operation                                                        */

struct tcase {
	int op;
	uint32_t len;
	int from;		/* initiating side */
	int ksend, krecv;	/* SGE counts (ksend: local side, READ too) */
	bool zero_sge;		/* len 0: one 0-byte SGE instead of none */
	bool inl;
	bool signaled;
	bool wrapi;
};

static void post_legacy(struct pair *P, const struct tcase *c,
			struct ibv_sge *lsge, int nl, uint64_t sid,
			uint64_t raddr, uint32_t rkey, uint32_t imm,
			uint64_t mid, uint64_t maddr, uint32_t mrkey)
{
	struct ibv_send_wr wr[2], *bad = NULL;
	int ret;

	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = sid;
	wr[0].sg_list = lsge;
	wr[0].num_sge = nl;
	wr[0].opcode = op_wr[c->op];
	wr[0].send_flags = (c->signaled ? IBV_SEND_SIGNALED : 0) |
			   (c->inl ? IBV_SEND_INLINE : 0);
	if (op_has_imm(c->op))
		wr[0].imm_data = htobe32(imm);
	if (op_is_rdma(c->op)) {
		wr[0].wr.rdma.remote_addr = raddr;
		wr[0].wr.rdma.rkey = rkey;
	}
	if (!c->signaled) {
		/* a signaled 0-byte RDMA WRITE behind it: RC completes in
		 * order, so its completion means the first is done too */
		wr[0].next = &wr[1];
		wr[1].wr_id = mid;
		wr[1].opcode = IBV_WR_RDMA_WRITE;
		wr[1].send_flags = IBV_SEND_SIGNALED;
		wr[1].wr.rdma.remote_addr = maddr;
		wr[1].wr.rdma.rkey = mrkey;
	}
	ret = ibv_post_send(P->qp[c->from], wr, &bad);
	if (ret != 0)
		DT_FAIL_(1, "%s: ibv_post_send(%s len %u nsge %d%s) = %d (%s), "
			 "bad_wr %s", P->name, dt_wr_opcode_name(op_wr[c->op]),
			 c->len, nl, c->inl ? " inline" : "", ret,
			 dt_errstr(ret), bad == &wr[0] ? "wr[0]" :
			 bad == &wr[1] ? "wr[1]" : "?");
}

static void post_wrapi(struct pair *P, const struct tcase *c,
		       struct ibv_sge *lsge, int nl, uint64_t sid,
		       uint64_t raddr, uint32_t rkey, uint32_t imm,
		       uint64_t mid, uint64_t maddr, uint32_t mrkey)
{
	struct ibv_qp_ex *x = P->qpx[c->from];
	struct ibv_data_buf db[MAXSGE];
	int i, ret;

	ibv_wr_start(x);
	x->wr_id = sid;
	x->wr_flags = c->signaled ? IBV_SEND_SIGNALED : 0;
	switch (c->op) {
	case OP_SEND:
		ibv_wr_send(x);
		break;
	case OP_SEND_IMM:
		ibv_wr_send_imm(x, htobe32(imm));
		break;
	case OP_WRITE:
		ibv_wr_rdma_write(x, rkey, raddr);
		break;
	case OP_WRITE_IMM:
		ibv_wr_rdma_write_imm(x, rkey, raddr, htobe32(imm));
		break;
	case OP_READ:
		ibv_wr_rdma_read(x, rkey, raddr);
		break;
	}
	if (c->inl) {
		for (i = 0; i < nl; i++) {
			db[i].addr = (void *)(uintptr_t)lsge[i].addr;
			db[i].length = lsge[i].length;
		}
		if (nl == 1)
			ibv_wr_set_inline_data(x, db[0].addr, db[0].length);
		else
			ibv_wr_set_inline_data_list(x, (size_t)nl, db);
	} else if (nl == 1) {
		ibv_wr_set_sge(x, lsge[0].lkey, lsge[0].addr, lsge[0].length);
	} else {
		ibv_wr_set_sge_list(x, (size_t)nl, lsge);
	}
	if (!c->signaled) {
		x->wr_id = mid;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_rdma_write(x, mrkey, maddr);
		ibv_wr_set_sge_list(x, 0, lsge);
	}
	ret = ibv_wr_complete(x);
	if (ret != 0)
		DT_FAIL_(1, "%s: ibv_wr_complete(%s len %u nsge %d%s) = %d (%s)",
			 P->name, dt_wr_opcode_name(op_wr[c->op]), c->len, nl,
			 c->inl ? " inline" : "", ret, dt_errstr(ret));
}

/* Make sure no side has a completion nobody asked for. */
static void expect_all_cqs_empty(struct pair *P, const char *tag)
{
	int s, n = 0;

	for (s = 0; s < 2; s++) {
		n += dt_cq_drain_unexpected(&P->scq[s], tag);
		n += dt_cq_drain_unexpected(&P->rcq[s], tag);
	}
	if (n)
		DT_FAIL_(0, "%s: %d unexpected completion(s)", tag, n);
}

static void run_case(struct pair *P, const struct tcase *c)
{
	int i = c->from, j = 1 - c->from;
	struct side *L = &S[i], *R = &S[j];
	enum ibv_wr_opcode wop = op_wr[c->op];
	uint32_t len = c->len, imm = (uint32_t)dt_rand64();
	uint8_t canary = (uint8_t)dt_rand64();
	struct piece lp[MAXSGE], rp[MAXSGE];
	struct ibv_sge lsge[MAXSGE], rsge[MAXSGE];
	int nl, nr = 0, k;
	uint64_t sid = g_wrid++, rid = g_wrid++, mid = g_wrid++;
	uint64_t raddr = 0, roff = 0;
	uint32_t rcap = 0;
	struct ibv_wc wc[2];
	struct dt_wc_exp e;
	char tag[160];
	bool ok = true;

	snprintf(tag, sizeof(tag), "%s mtu %u %s %s len %u from %d nsge %d/%d%s%s",
		 P->name, dt_mtu_bytes(P->mtu), c->wrapi ? "wr_api" : "post_send",
		 dt_wr_opcode_name(wop), len, i, c->ksend, c->krecv,
		 c->inl ? " inline" : "", c->signaled ? "" : " unsignaled");
	n_cases++;

	dt_fill_random(msg, len);

	/* local side */
	if (c->op == OP_READ) {
		roff = dt_rand_range(0, 4095);
		memcpy(R->buf + roff, msg, len);
		raddr = (uintptr_t)(R->buf + roff);
		memset(L->buf + AREA, canary, AREA);
		nl = make_layout(len, len == 0 ? (c->zero_sge ? 1 : 0) :
				 c->ksend, AREA, AREA, lp);
		for (k = 0; k < nl; k++) {
			lsge[k].addr = (uintptr_t)(L->buf + lp[k].off);
			lsge[k].length = lp[k].len;
			lsge[k].lkey = L->mr->lkey;
		}
	} else {
		uint8_t *gbase = c->inl ? L->inl : L->buf;
		uint64_t gsize = c->inl ? INL_SIZE : AREA;

		nl = make_layout(len, len == 0 ? (c->zero_sge ? 1 : 0) :
				 c->ksend, 0, gsize, lp);
		scatter_msg(gbase, lp, nl, msg);
		for (k = 0; k < nl; k++) {
			lsge[k].addr = (uintptr_t)(gbase + lp[k].off);
			lsge[k].length = lp[k].len;
			/* ibv_post_send(3), IBV_SEND_INLINE: "The L_Key will
			 * not be checked." */
			lsge[k].lkey = c->inl ? 0xdeadbeef : L->mr->lkey;
		}
	}

	/* remote side */
	if (c->op == OP_WRITE || c->op == OP_WRITE_IMM) {
		memset(R->buf + AREA, canary, AREA);
		roff = AREA + dt_rand_range(0, 4095);
		raddr = (uintptr_t)(R->buf + roff);
	}
	if (c->op == OP_SEND || c->op == OP_SEND_IMM) {
		memset(R->buf + AREA, canary, AREA);
		rcap = len + (dt_chance(1, 2) ? 0 : (uint32_t)dt_rand_range(1, 100));
		nr = make_layout(rcap, rcap == 0 ? (c->zero_sge ? 1 : 0) :
				 c->krecv, AREA, AREA, rp);
		for (k = 0; k < nr; k++) {
			rsge[k].addr = (uintptr_t)(R->buf + rp[k].off);
			rsge[k].length = rp[k].len;
			rsge[k].lkey = R->mr->lkey;
		}
	}
	if (c->op == OP_WRITE_IMM && dt_chance(1, 2)) {
		/* a scatter list the RDMA WRITE must not touch (the canary
		 * check of the destination area covers it) */
		rsge[0].addr = (uintptr_t)(R->buf + AREA + AREA / 8 * 7);
		rsge[0].length = AREA / 16;
		rsge[0].lkey = R->mr->lkey;
		nr = 1;
	}
	if (op_consumes_recv(c->op)) {
		struct ibv_recv_wr rwr, *rbad = NULL;

		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = rid;
		rwr.sg_list = rsge;
		rwr.num_sge = nr;	/* WRITE_IMM: no scatter list */
		CHECK_OK(ibv_post_recv(P->qp[j], &rwr, &rbad));
	}

	if (c->wrapi)
		post_wrapi(P, c, lsge, nl, sid, raddr, R->mr->rkey, imm, mid,
			   (uintptr_t)R->buf, R->mr->rkey);
	else
		post_legacy(P, c, lsge, nl, sid, raddr, R->mr->rkey, imm, mid,
			    (uintptr_t)R->buf, R->mr->rkey);
	if (c->inl)	/* the data was copied by the post: scribble */
		for (k = 0; k < nl; k++)
			dt_fill_random(L->inl + lp[k].off, lp[k].len);

	/* requester completion: the op's, or the marker's */
	if (dt_wait_wc(&P->scq[i], wc, 1, DT_WAIT_S, tag) != 1)
		DT_FAIL_(1, "%s: no requester completion", tag);
	if (c->signaled)
		e = dt_exp_send(sid, wop, len, P->qp[i]->qp_num);
	else
		e = dt_exp_send(mid, IBV_WR_RDMA_WRITE, 0, P->qp[i]->qp_num);
	if (wc[0].status != e.status)
		CHECK_WC(&wc[0], &e);
	if (!EXPECT_WC(&wc[0], &e))
		fprintf(stderr, "  in case: %s\n", tag);

	if (op_consumes_recv(c->op)) {
		if (dt_wait_wc(&P->rcq[j], wc, 1, DT_WAIT_S, tag) != 1)
			DT_FAIL_(1, "%s: no responder completion", tag);
		e = dt_exp_recv(rid, wop, len, P->qp[j]->qp_num,
				P->qp[i]->qp_num, imm);
		if (wc[0].status != e.status)
			CHECK_WC(&wc[0], &e);
		if (!EXPECT_WC(&wc[0], &e))
			fprintf(stderr, "  in case: %s\n", tag);
	}
	expect_all_cqs_empty(P, tag);

	/* the data */
	switch (c->op) {
	case OP_READ:
		ok = verify_pieces(tag, L->buf, lp, nl, len, AREA, 2 * AREA,
				   canary);
		break;
	case OP_WRITE:
	case OP_WRITE_IMM:
		ok = check_canary(tag, R->buf, AREA, roff, canary) &&
		     cmp_bytes(tag, R->buf + roff, msg, len, 0) &&
		     check_canary(tag, R->buf, roff + len, 2 * AREA, canary);
		break;
	default:
		ok = verify_pieces(tag, R->buf, rp, nr, len, AREA, 2 * AREA,
				   canary);
		break;
	}
	if (!ok)
		fprintf(stderr, "  in case: %s\n", tag);
	n_bytes_mb += len >> 20;
}

static int rand_sge(uint32_t max)
{
	return (int)dt_rand_range(1, max);
}

static void fill_case(struct pair *P, struct tcase *c, int op, uint32_t len,
		      int api /* 0 legacy, 1 wr, 2 random */)
{
	memset(c, 0, sizeof(*c));
	c->op = op;
	c->len = len;
	c->from = (int)dt_rand_range(0, 1);
	c->ksend = rand_sge(P->cap[c->from].max_send_sge);
	c->krecv = rand_sge(P->cap[1 - c->from].max_recv_sge);
	if (len >= MIB) {	/* the full SGE lists at least here */
		c->ksend = (int)P->cap[c->from].max_send_sge;
		c->krecv = (int)P->cap[1 - c->from].max_recv_sge;
	}
	c->zero_sge = dt_chance(1, 2);
	c->signaled = !dt_chance(1, 3);
	c->wrapi = api == 1 || (api == 2 && dt_chance(1, 2));
}

static void run_matrix(struct pair *P, int api)
{
	uint32_t mtu = dt_mtu_bytes(P->mtu);
	const uint32_t lens[] = { 0, 1, mtu - 1, mtu, mtu + 1, MIB };
	struct tcase c;
	unsigned int li;
	int op;

	for (op = 0; op < NOPS; op++)
		for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
			fill_case(P, &c, op, lens[li], api);
			run_case(P, &c);
		}
}

static void run_inline(struct pair *P, int api)
{
	uint32_t maxi = P->cap[0].max_inline_data < P->cap[1].max_inline_data ?
			P->cap[0].max_inline_data : P->cap[1].max_inline_data;
	const uint32_t lens[] = { 0, 1, maxi / 2, maxi };
	struct tcase c;
	unsigned int li;
	int op;

	if (maxi == 0) {
		printf("  note: %s: max_inline_data is 0, no inline cases\n",
		       P->name);
		return;
	}
	for (op = 0; op < NOPS; op++) {
		if (op == OP_READ)	/* inline is for SEND and WRITE only */
			continue;
		for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
			fill_case(P, &c, op, lens[li], api);
			c.inl = true;
			if (c.len == 0 && c.wrapi)
				c.zero_sge = true;
			run_case(P, &c);
		}
	}
}

/* ibv_wr_abort(): everything since ibv_wr_start() is discarded. */
static void run_abort(struct pair *P)
{
	int i = (int)dt_rand_range(0, 1), j = 1 - i;
	struct side *L = &S[i], *R = &S[j];
	struct ibv_qp_ex *x = P->qpx[i];
	struct ibv_recv_wr rwr, *rbad = NULL;
	struct ibv_sge rsge;
	struct ibv_wc wc;
	struct dt_wc_exp e;
	uint64_t rid = g_wrid++, sid = g_wrid++;
	uint8_t canary = (uint8_t)dt_rand64();
	double until;
	int n = 0;

	n_cases++;
	memset(R->buf + AREA, canary, AREA);
	rsge.addr = (uintptr_t)(R->buf + AREA);
	rsge.length = 4096;
	rsge.lkey = R->mr->lkey;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = rid;
	rwr.sg_list = &rsge;
	rwr.num_sge = 1;
	CHECK_OK(ibv_post_recv(P->qp[j], &rwr, &rbad));

	dt_fill_random(L->buf, 4096);
	ibv_wr_start(x);
	x->wr_id = 0xdead0001;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, L->mr->lkey, (uintptr_t)L->buf, 100);
	x->wr_id = 0xdead0002;
	ibv_wr_rdma_write(x, R->mr->rkey, (uintptr_t)(R->buf + AREA + 8192));
	ibv_wr_set_sge(x, L->mr->lkey, (uintptr_t)L->buf, 200);
	ibv_wr_abort(x);

	/* nothing may happen: give it 50 ms */
	until = dt_now() + 0.05;
	while (dt_now() < until) {
		n += dt_cq_poll(&P->scq[i], &wc, 1) > 0;
		n += dt_cq_poll(&P->rcq[j], &wc, 1) > 0;
	}
	if (n)
		DT_FAIL_(0, "%s: ibv_wr_abort: %d completion(s) for aborted "
			 "WRs", P->name, n);

	/* the receive is still there for the next, real, send */
	dt_fill_random(msg, 77);
	memcpy(L->buf + 8192, msg, 77);
	ibv_wr_start(x);
	x->wr_id = sid;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, L->mr->lkey, (uintptr_t)(L->buf + 8192), 77);
	CHECK_OK(ibv_wr_complete(x));
	CHECK_EQ(dt_wait_wc(&P->scq[i], &wc, 1, DT_WAIT_S, "abort"), 1);
	e = dt_exp_send(sid, IBV_WR_SEND, 77, P->qp[i]->qp_num);
	EXPECT_WC(&wc, &e);
	CHECK_EQ(dt_wait_wc(&P->rcq[j], &wc, 1, DT_WAIT_S, "abort"), 1);
	e = dt_exp_recv(rid, IBV_WR_SEND, 77, P->qp[j]->qp_num,
			P->qp[i]->qp_num, 0);
	EXPECT_WC(&wc, &e);
	cmp_bytes("after ibv_wr_abort", R->buf + AREA, msg, 77, 0);
	check_canary("after ibv_wr_abort", R->buf, AREA + 77, 2 * AREA, canary);
	expect_all_cqs_empty(P, "abort");
}

/* ibv_create_qp(3) sq_sig_all: "If set, each Work Request (WR) submitted
 * to the SQ generates a completion entry". */
static void run_sig_all(void)
{
	struct dt_cq scq[2], rcq[2];
	struct ibv_qp *qp[2];
	struct ibv_qp_cap cap;
	struct dt_qp_cfg cfg;
	struct dt_conn_cfg cc;
	struct ibv_send_wr wr[8], *bad = NULL;
	struct ibv_sge sge[8];
	struct ibv_wc wc[8];
	struct dt_wc_exp e;
	int s, k;

	for (s = 0; s < 2; s++) {
		dt_cq_create(&env.dev[s], 64, s == 1, &scq[s]);
		dt_cq_create(&env.dev[s], 64, s == 0, &rcq[s]);
		dt_qp_cfg_default(&cfg);
		cfg.sq_sig_all = 1;
		cfg.send_ops_flags = s == 1 ? DT_SEND_OPS_ALL : 0;
		qp[s] = dt_qp_create(&env.dev[s], scq[s].cq, rcq[s].cq, &cfg,
				     &cap);
		CHECK_PTR(qp[s]);
	}
	dt_conn_cfg_default(&cc);
	dt_connect(&env.dev[0], qp[0], 1, &env.dev[1], qp[1], 2, &cc);
	n_cases++;

	/* legacy: 8 RDMA WRITEs, none with IBV_SEND_SIGNALED */
	memset(wr, 0, sizeof(wr));
	for (k = 0; k < 8; k++) {
		sge[k].addr = (uintptr_t)(S[0].buf + 1000 * k);
		sge[k].length = 100 + (uint32_t)k;
		sge[k].lkey = S[0].mr->lkey;
		wr[k].wr_id = 0x5100 + (uint64_t)k;
		wr[k].next = k < 7 ? &wr[k + 1] : NULL;
		wr[k].sg_list = &sge[k];
		wr[k].num_sge = 1;
		wr[k].opcode = IBV_WR_RDMA_WRITE;
		wr[k].wr.rdma.remote_addr = (uintptr_t)(S[1].buf + AREA + 1000 * k);
		wr[k].wr.rdma.rkey = S[1].mr->rkey;
	}
	CHECK_OK(ibv_post_send(qp[0], wr, &bad));
	CHECK_EQ(dt_wait_wc(&scq[0], wc, 8, DT_WAIT_S, "sq_sig_all"), 8);
	for (k = 0; k < 8; k++) {
		e = dt_exp_send(0x5100 + (uint64_t)k, IBV_WR_RDMA_WRITE,
				100 + (uint32_t)k, qp[0]->qp_num);
		EXPECT_WC(&wc[k], &e);
	}

	/* ibv_wr_*: wr_flags 0 */
	{
		struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp[1]);

		CHECK_PTR(x);
		ibv_wr_start(x);
		for (k = 0; k < 4; k++) {
			x->wr_id = 0x5200 + (uint64_t)k;
			x->wr_flags = 0;
			ibv_wr_rdma_write(x, S[0].mr->rkey,
					  (uintptr_t)(S[0].buf + AREA + 64 * k));
			ibv_wr_set_sge(x, S[1].mr->lkey,
				       (uintptr_t)(S[1].buf + 64 * k), 64);
		}
		CHECK_OK(ibv_wr_complete(x));
		CHECK_EQ(dt_wait_wc(&scq[1], wc, 4, DT_WAIT_S, "sq_sig_all"), 4);
		for (k = 0; k < 4; k++) {
			e = dt_exp_send(0x5200 + (uint64_t)k, IBV_WR_RDMA_WRITE,
					64, qp[1]->qp_num);
			EXPECT_WC(&wc[k], &e);
		}
	}
	for (s = 0; s < 2; s++) {
		if (dt_cq_drain_unexpected(&scq[s], "sq_sig_all") +
		    dt_cq_drain_unexpected(&rcq[s], "sq_sig_all"))
			DT_FAIL_(0, "sq_sig_all: unexpected completions");
	}
	for (s = 0; s < 2; s++) {
		CHECK_OK(ibv_destroy_qp(qp[s]));
		dt_cq_destroy(&scq[s]);
		dt_cq_destroy(&rcq[s]);
	}
	printf("sq_sig_all: ok\n");
}

/* ------------------------------------------------------------------ */
/* Stress                                                               */

#define NQP		8
#define SLOT		8192u

struct sop {
	uint8_t op;
	bool signaled, inl;
	uint8_t nsge;
	uint32_t len;
	uint32_t imm;
	int recv_idx;		/* -1: no receive consumed */
};

struct sdir {			/* one direction of one stress pair */
	struct sop *ops;
	int nops, nrecv;
	int *recv_op;		/* recv index -> op index */
	int next_send;		/* next expected signaled op index */
	int next_recv;
	int send_cqes, recv_cqes, exp_send_cqes;
};

struct spair {
	struct ibv_qp *qp[2];
	struct ibv_qp_ex *qpx[2];
	struct ibv_qp_cap cap[2];
	uint8_t *mem[2];	/* per side: src | dst | rbuf, depth slots each */
	struct ibv_mr *mr[2];
	bool wrapi;
	struct sdir dir[2];	/* dir d: initiated by side d */
};

static uint32_t g_depth;

static uint8_t *slot_src(struct spair *p, int s, int k)
{
	return p->mem[s] + (size_t)k * SLOT;
}

static uint8_t *slot_dst(struct spair *p, int s, int k)
{
	return p->mem[s] + ((size_t)g_depth + (size_t)k) * SLOT;
}

static uint8_t *slot_rbuf(struct spair *p, int s, int k)
{
	return p->mem[s] + (2 * (size_t)g_depth + (size_t)k) * SLOT;
}

#define WRID(kind, pair, dir, idx) (((uint64_t)(kind) << 56) |		\
				    ((uint64_t)(pair) << 48) |		\
				    ((uint64_t)(dir) << 40) | (uint64_t)(idx))
#define WRID_KIND(w)	((int)((w) >> 56))
#define WRID_PAIR(w)	((int)(((w) >> 48) & 0xff))
#define WRID_DIR(w)	((int)(((w) >> 40) & 0xff))
#define WRID_IDX(w)	((int)((w) & 0xffffffff))

static uint32_t stress_len(void)
{
	uint64_t r = dt_rand_range(0, 99);

	if (r < 2)
		return 0;
	if (r < 42)
		return (uint32_t)dt_rand_range(1, 256);
	if (r < 82)
		return (uint32_t)dt_rand_range(257, 4096);
	return (uint32_t)dt_rand_range(4097, SLOT);
}

static int stress_op(void)
{
	uint64_t r = dt_rand_range(0, 99);

	if (r < 30)
		return OP_SEND;
	if (r < 40)
		return OP_SEND_IMM;
	if (r < 65)
		return OP_WRITE;
	if (r < 75)
		return OP_WRITE_IMM;
	return OP_READ;
}

static uint8_t stress_canary(int k)
{
	return (uint8_t)(0x5a ^ k);
}

static void stress_sges(struct spair *p, int s, int k, const struct sop *o,
			uint8_t *base, struct ibv_sge *sge)
{
	uint32_t off = 0, rem = o->len;
	int n;

	(void)k;
	for (n = 0; n < o->nsge; n++) {
		uint32_t l = n == o->nsge - 1 ? rem :
			     (uint32_t)dt_rand_range(1, rem - (uint32_t)(o->nsge - 1 - n));

		sge[n].addr = (uintptr_t)(base + off);
		sge[n].length = l;
		sge[n].lkey = p->mr[s]->lkey;
		off += l;
		rem -= l;
	}
}

static void stress_prepare(struct spair *p, int d, int pidx)
{
	struct sdir *D = &p->dir[d];
	int i = d, j = 1 - d, k, nmax;

	(void)pidx;
	D->nops = 0;
	D->nrecv = 0;
	D->next_send = 0;
	D->next_recv = 0;
	D->send_cqes = D->recv_cqes = D->exp_send_cqes = 0;
	nmax = (int)g_depth;
	for (k = 0; k < nmax; k++) {
		struct sop *o = &D->ops[k];
		uint32_t maxs = p->cap[i].max_send_sge < 4 ?
				p->cap[i].max_send_sge : 4;

		memset(o, 0, sizeof(*o));
		o->op = (uint8_t)stress_op();
		o->len = stress_len();
		o->imm = (uint32_t)dt_rand64();
		o->signaled = k == nmax - 1 || dt_chance(1, 2);
		o->nsge = o->len == 0 ? 0 :
			  (uint8_t)dt_rand_range(1, o->len < maxs ? o->len : maxs);
		o->inl = o->op != OP_READ && o->len <= p->cap[i].max_inline_data &&
			 dt_chance(1, 4);
		o->recv_idx = -1;
		if (op_consumes_recv(o->op)) {
			o->recv_idx = D->nrecv;
			D->recv_op[D->nrecv++] = k;
			memset(slot_rbuf(p, j, o->recv_idx),
			       stress_canary(k), SLOT);
		}
		if (o->signaled)
			D->exp_send_cqes++;
		if (o->op == OP_READ) {
			dt_fill_random(slot_dst(p, j, k), o->len);
			memset(slot_src(p, i, k), stress_canary(k), SLOT);
		} else {
			dt_fill_random(slot_src(p, i, k), o->len);
			if (op_is_rdma(o->op))
				memset(slot_dst(p, j, k), stress_canary(k), SLOT);
		}
	}
	D->nops = nmax;
}

static void stress_post_recvs(struct spair *p, int d, int pidx)
{
	struct sdir *D = &p->dir[d];
	int j = 1 - d, r = 0;

	while (r < D->nrecv) {
		struct ibv_recv_wr wr[32], *bad = NULL;
		struct ibv_sge sge[32][2];
		int n = (int)dt_rand_range(1, 32), m;

		if (n > D->nrecv - r)
			n = D->nrecv - r;
		memset(wr, 0, sizeof(wr));
		for (m = 0; m < n; m++, r++) {
			const struct sop *o = &D->ops[D->recv_op[r]];
			uint8_t *b = slot_rbuf(p, j, r);

			wr[m].wr_id = WRID(2, pidx, d, r);
			wr[m].next = m + 1 < n ? &wr[m + 1] : NULL;
			wr[m].sg_list = sge[m];
			if (o->op == OP_WRITE_IMM) {
				wr[m].num_sge = 0;
			} else if (p->cap[j].max_recv_sge >= 2 &&
				   dt_chance(1, 3)) {
				uint32_t cut = (uint32_t)dt_rand_range(1, SLOT - 1);

				sge[m][0].addr = (uintptr_t)b;
				sge[m][0].length = cut;
				sge[m][0].lkey = p->mr[j]->lkey;
				sge[m][1].addr = (uintptr_t)(b + cut);
				sge[m][1].length = SLOT - cut;
				sge[m][1].lkey = p->mr[j]->lkey;
				wr[m].num_sge = 2;
			} else {
				sge[m][0].addr = (uintptr_t)b;
				sge[m][0].length = SLOT;
				sge[m][0].lkey = p->mr[j]->lkey;
				wr[m].num_sge = 1;
			}
		}
		CHECK_OK(ibv_post_recv(p->qp[j], wr, &bad));
	}
}

static void stress_post_sends(struct spair *p, int d, int pidx)
{
	struct sdir *D = &p->dir[d];
	int i = d, j = 1 - d, k = 0;

	while (k < D->nops) {
		int n = (int)dt_rand_range(1, 16), m;

		if (n > D->nops - k)
			n = D->nops - k;
		if (p->wrapi) {
			struct ibv_qp_ex *x = p->qpx[i];

			ibv_wr_start(x);
			for (m = 0; m < n; m++, k++) {
				const struct sop *o = &D->ops[k];
				struct ibv_sge sge[4];
				uint64_t raddr = (uintptr_t)slot_dst(p, j, k);
				uint32_t rkey = p->mr[j]->rkey;

				stress_sges(p, i, k, o, slot_src(p, i, k), sge);
				x->wr_id = WRID(1, pidx, d, k);
				x->wr_flags = o->signaled ? IBV_SEND_SIGNALED : 0;
				switch (o->op) {
				case OP_SEND:
					ibv_wr_send(x);
					break;
				case OP_SEND_IMM:
					ibv_wr_send_imm(x, htobe32(o->imm));
					break;
				case OP_WRITE:
					ibv_wr_rdma_write(x, rkey, raddr);
					break;
				case OP_WRITE_IMM:
					ibv_wr_rdma_write_imm(x, rkey, raddr,
							      htobe32(o->imm));
					break;
				default:
					ibv_wr_rdma_read(x, rkey, raddr);
					break;
				}
				if (o->inl) {
					ibv_wr_set_inline_data(x, slot_src(p, i, k),
							       o->len);
				} else if (o->nsge == 1) {
					ibv_wr_set_sge(x, sge[0].lkey,
						       sge[0].addr,
						       sge[0].length);
				} else {
					ibv_wr_set_sge_list(x, o->nsge, sge);
				}
			}
			CHECK_OK(ibv_wr_complete(x));
		} else {
			struct ibv_send_wr wr[16], *bad = NULL;
			struct ibv_sge sge[16][4];
			int ret;

			memset(wr, 0, sizeof(wr));
			for (m = 0; m < n; m++, k++) {
				const struct sop *o = &D->ops[k];

				stress_sges(p, i, k, o, slot_src(p, i, k),
					    sge[m]);
				wr[m].wr_id = WRID(1, pidx, d, k);
				wr[m].next = m + 1 < n ? &wr[m + 1] : NULL;
				wr[m].sg_list = sge[m];
				wr[m].num_sge = o->nsge;
				wr[m].opcode = op_wr[o->op];
				wr[m].send_flags =
					(o->signaled ? IBV_SEND_SIGNALED : 0) |
					(o->inl ? IBV_SEND_INLINE : 0);
				wr[m].imm_data = htobe32(o->imm);
				wr[m].wr.rdma.remote_addr =
					(uintptr_t)slot_dst(p, j, k);
				wr[m].wr.rdma.rkey = p->mr[j]->rkey;
			}
			ret = ibv_post_send(p->qp[i], wr, &bad);
			if (ret != 0)
				DT_FAIL_(1, "stress: ibv_post_send chain of %d "
					 "= %d (%s), bad_wr index %d", n, ret,
					 dt_errstr(ret),
					 bad ? (int)(bad - wr) : -1);
		}
	}
}

static struct spair SP[NQP];

static void stress_on_wc(const struct ibv_wc *wc)
{
	uint64_t w = wc->wr_id;
	int kind = WRID_KIND(w), pi = WRID_PAIR(w), d = WRID_DIR(w);
	int idx = WRID_IDX(w);
	struct spair *p;
	struct sdir *D;
	struct dt_wc_exp e;

	if ((kind != 1 && kind != 2) || pi >= NQP || d > 1) {
		dt_print_wc(stderr, "stress: unknown completion", wc);
		DT_FAIL_(1, "stress: completion with a wr_id never posted");
	}
	p = &SP[pi];
	D = &p->dir[d];
	if (wc->status != IBV_WC_SUCCESS) {
		/* error completions come for unsignaled WRs too: report the
		 * status itself, not an ordering problem */
		dt_print_wc(stderr, "stress: error completion", wc);
		DT_FAIL_(1, "stress pair %d dir %d: %s %d completed with %s (QP "
			 "0x%x went to error; droce counters below)", pi, d,
			 kind == 1 ? "op" : "receive", idx,
			 dt_wc_status_name(wc->status), wc->qp_num);
	}
	if (kind == 1) {
		const struct sop *o;

		/* RC: requester completions come back in posting order;
		 * skip the unsignaled ones */
		while (D->next_send < D->nops && !D->ops[D->next_send].signaled)
			D->next_send++;
		if (idx != D->next_send) {
			dt_print_wc(stderr, "stress: out of order", wc);
			DT_FAIL_(1, "stress pair %d dir %d: send completion "
				 "for op %d, expected op %d", pi, d, idx,
				 D->next_send);
		}
		o = &D->ops[idx];
		e = dt_exp_send(w, op_wr[o->op], o->len, p->qp[d]->qp_num);
		if (wc->status != IBV_WC_SUCCESS)
			CHECK_WC(wc, &e);
		EXPECT_WC(wc, &e);
		D->next_send++;
		D->send_cqes++;
	} else {
		const struct sop *o;

		if (idx != D->next_recv) {
			dt_print_wc(stderr, "stress: out of order", wc);
			DT_FAIL_(1, "stress pair %d dir %d: receive completion "
				 "%d, expected %d", pi, d, idx, D->next_recv);
		}
		o = &D->ops[D->recv_op[idx]];
		e = dt_exp_recv(w, op_wr[o->op], o->len, p->qp[1 - d]->qp_num,
				p->qp[d]->qp_num, o->imm);
		if (wc->status != IBV_WC_SUCCESS)
			CHECK_WC(wc, &e);
		EXPECT_WC(wc, &e);
		D->next_recv++;
		D->recv_cqes++;
	}
}

static int stress_verify(struct spair *p, int d, int pi)
{
	struct sdir *D = &p->dir[d];
	int i = d, j = 1 - d, k, bad = 0;
	char what[96];

	for (k = 0; k < D->nops; k++) {
		const struct sop *o = &D->ops[k];
		const uint8_t *src, *dst;

		snprintf(what, sizeof(what), "stress pair %d dir %d op %d (%s "
			 "len %u%s)", pi, d, k, dt_wr_opcode_name(op_wr[o->op]),
			 o->len, o->inl ? " inline" : "");
		switch (o->op) {
		case OP_READ:
			src = slot_dst(p, j, k);
			dst = slot_src(p, i, k);
			break;
		case OP_WRITE:
		case OP_WRITE_IMM:
			src = slot_src(p, i, k);
			dst = slot_dst(p, j, k);
			break;
		default:
			src = slot_src(p, i, k);
			dst = slot_rbuf(p, j, o->recv_idx);
			break;
		}
		if (!cmp_bytes(what, dst, src, o->len, 0) ||
		    !check_canary(what, dst, o->len, SLOT, stress_canary(k)))
			if (++bad > 5)
				DT_FAIL_(1, "stress: too many data errors");
	}
	return bad;
}

static void run_stress(void)
{
	struct dt_cq scq0, rcq0, cq1;
	struct dt_conn_cfg cc;
	const char *r = getenv("DROCE_TEST_STRESS_ROUNDS");
	int rounds = r ? atoi(r) : 20, round, pi, d, s;
	uint32_t depth = 256, cqe;
	double t0 = dt_now();
	unsigned long long total_ops = 0, total_bytes = 0;

	for (s = 0; s < 2; s++) {
		if ((uint32_t)env.dev[s].attr.max_qp_wr < depth)
			depth = (uint32_t)env.dev[s].attr.max_qp_wr;
		if ((uint32_t)env.dev[s].attr.max_cqe < 2 * NQP * depth)
			depth = (uint32_t)env.dev[s].attr.max_cqe / (2 * NQP);
	}
	CHECK_CMP(depth, >=, 16);
	g_depth = depth;
	cqe = 2 * NQP * depth;
	/* side 0: separate classic send / extended recv CQs shared by all
	 * QPs; side 1: one extended CQ for everything */
	dt_cq_create(&env.dev[0], (int)cqe, false, &scq0);
	dt_cq_create(&env.dev[0], (int)cqe, true, &rcq0);
	dt_cq_create(&env.dev[1], (int)cqe, true, &cq1);

	dt_conn_cfg_default(&cc);
	for (pi = 0; pi < NQP; pi++) {
		struct spair *p = &SP[pi];

		memset(p, 0, sizeof(*p));
		p->wrapi = pi >= NQP / 2;
		for (s = 0; s < 2; s++) {
			struct dt_qp_cfg cfg;
			size_t msz = 3 * (size_t)depth * SLOT;

			dt_qp_cfg_default(&cfg);
			cfg.max_send_wr = depth;
			cfg.max_recv_wr = depth;
			cfg.max_send_sge = env.dev[s].attr.max_sge < 4 ?
					   (uint32_t)env.dev[s].attr.max_sge : 4;
			cfg.max_recv_sge = env.dev[s].attr.max_sge < 2 ?
					   (uint32_t)env.dev[s].attr.max_sge : 2;
			cfg.max_inline_data = g_inline_req;
			cfg.send_ops_flags = p->wrapi ? DT_SEND_OPS_ALL : 0;
			p->qp[s] = dt_qp_create(&env.dev[s],
						s == 0 ? scq0.cq : cq1.cq,
						s == 0 ? rcq0.cq : cq1.cq,
						&cfg, &p->cap[s]);
			CHECK_PTR(p->qp[s]);
			if (p->wrapi) {
				p->qpx[s] = ibv_qp_to_qp_ex(p->qp[s]);
				CHECK_PTR(p->qpx[s]);
			}
			p->mem[s] = dt_alloc(msz);
			p->mr[s] = dt_reg_mr(env.dev[s].pd, p->mem[s], msz,
					     DT_ACCESS_ALL);
			CHECK_PTR(p->mr[s]);
			p->dir[s].ops = calloc(depth, sizeof(struct sop));
			p->dir[s].recv_op = calloc(depth, sizeof(int));
			CHECK(p->dir[s].ops && p->dir[s].recv_op);
		}
		cc.mtu = (enum ibv_mtu)dt_rand_range(IBV_MTU_256, IBV_MTU_4096);
		dt_connect(&env.dev[0], p->qp[0],
			   (uint32_t)dt_rand_range(0, 0xffffff), &env.dev[1],
			   p->qp[1], (uint32_t)dt_rand_range(0xfff000, 0xffffff),
			   &cc);
	}
	printf("stress: %d QP pairs, depth %u, %d rounds, %u ops in flight "
	       "per round\n", NQP, depth, rounds, 2 * NQP * depth);

	for (round = 0; round < rounds; round++) {
		int exp_total = 0, got_total = 0;
		double deadline;
		unsigned long long bytes = 0;

		for (pi = 0; pi < NQP; pi++)
			for (d = 0; d < 2; d++) {
				stress_prepare(&SP[pi], d, pi);
				exp_total += SP[pi].dir[d].exp_send_cqes +
					     SP[pi].dir[d].nrecv;
			}
		for (pi = 0; pi < NQP; pi++)
			for (d = 0; d < 2; d++)
				stress_post_recvs(&SP[pi], d, pi);
		for (pi = 0; pi < NQP; pi++)
			for (d = 0; d < 2; d++)
				stress_post_sends(&SP[pi], d, pi);

		deadline = dt_now() + 30.0;
		while (got_total < exp_total) {
			struct dt_cq *cqs[3] = { &scq0, &rcq0, &cq1 };
			struct ibv_wc wc[64];
			int c, n, m;

			for (c = 0; c < 3; c++) {
				n = dt_cq_poll(cqs[c], wc, 64);
				CHECK_CMP(n, >=, 0);
				for (m = 0; m < n; m++)
					stress_on_wc(&wc[m]);
				got_total += n;
			}
			if (dt_now() > deadline) {
				for (pi = 0; pi < NQP; pi++)
					for (d = 0; d < 2; d++)
						fprintf(stderr, "pair %d dir %d: "
							"%d/%d send, %d/%d recv "
							"completions\n", pi, d,
							SP[pi].dir[d].send_cqes,
							SP[pi].dir[d].exp_send_cqes,
							SP[pi].dir[d].recv_cqes,
							SP[pi].dir[d].nrecv);
				DT_FAIL_(1, "stress round %d: %d of %d "
					 "completions after 30 s", round,
					 got_total, exp_total);
			}
		}
		for (pi = 0; pi < NQP; pi++)
			for (d = 0; d < 2; d++) {
				struct sdir *D = &SP[pi].dir[d];
				int k;

				CHECK_EQ(D->send_cqes, D->exp_send_cqes);
				CHECK_EQ(D->recv_cqes, D->nrecv);
				stress_verify(&SP[pi], d, pi);
				for (k = 0; k < D->nops; k++)
					bytes += D->ops[k].len;
				total_ops += (unsigned long long)D->nops;
			}
		total_bytes += bytes;
		if (dt_cq_drain_unexpected(&scq0, "stress") +
		    dt_cq_drain_unexpected(&rcq0, "stress") +
		    dt_cq_drain_unexpected(&cq1, "stress"))
			DT_FAIL_(1, "stress: unexpected completions");
	}
	printf("stress: %llu ops, %.1f MiB in %.2f s\n", total_ops,
	       (double)total_bytes / MIB, dt_now() - t0);

	for (pi = 0; pi < NQP; pi++) {
		struct spair *p = &SP[pi];

		for (s = 0; s < 2; s++) {
			CHECK_OK(ibv_destroy_qp(p->qp[s]));
			CHECK_OK(ibv_dereg_mr(p->mr[s]));
			free(p->mem[s]);
			free(p->dir[s].ops);
			free(p->dir[s].recv_op);
		}
	}
	dt_cq_destroy(&scq0);
	dt_cq_destroy(&rcq0);
	dt_cq_destroy(&cq1);
}

/* ------------------------------------------------------------------ */
/* Tiny queues: SQ/RQ depth 2 and CQs of 2 entries, thousands of round
 * trips, so every ring index wraps many times (classic CQ on one side,
 * extended on the other). */

static void run_tiny_queues(void)
{
	struct dt_cq scq[2], rcq[2];
	struct ibv_qp *qp[2];
	struct ibv_qp_cap cap[2];
	struct dt_qp_cfg cfg;
	struct dt_conn_cfg cc;
	struct dt_wc_exp e;
	struct ibv_wc wc[2];
	double t = dt_now();
	int s, it, iters = 3000, cqe = 0;

	for (s = 0; s < 2; s++) {
		dt_cq_create(&env.dev[s], 2, s == 1, &scq[s]);
		dt_cq_create(&env.dev[s], 2, s == 0, &rcq[s]);
		dt_qp_cfg_default(&cfg);
		cfg.max_send_wr = 2;
		cfg.max_recv_wr = 2;
		cfg.send_ops_flags = s == 1 ? DT_SEND_OPS_ALL : 0;
		qp[s] = dt_qp_create(&env.dev[s], scq[s].cq, rcq[s].cq, &cfg,
				     &cap[s]);
		CHECK_PTR(qp[s]);
	}
	dt_conn_cfg_default(&cc);
	dt_connect(&env.dev[0], qp[0], 0xfffff0, &env.dev[1], qp[1], 0xffffe0,
		   &cc);
	cqe = scq[0].cq->cqe;
	for (it = 0; it < iters; it++) {
		int i = it & 1, j = 1 - i;
		uint32_t len = (uint32_t)dt_rand_range(0, 2048);
		int op = (int)dt_rand_range(0, NOPS - 1);
		uint8_t *src = S[i].buf + 8192, *dst = S[j].buf + AREA + 8192;
		struct ibv_sge sge, rsge;
		struct ibv_send_wr wr, *bad = NULL;
		struct ibv_recv_wr rwr, *rbad = NULL;
		uint32_t imm = (uint32_t)it;

		if (op == OP_READ) {
			dt_fill_random(dst, len);
			sge.addr = (uintptr_t)src;
		} else {
			dt_fill_random(src, len);
			sge.addr = (uintptr_t)src;
		}
		sge.length = len;
		sge.lkey = S[i].mr->lkey;
		if (op_consumes_recv(op)) {
			rsge.addr = (uintptr_t)dst;
			rsge.length = 4096;
			rsge.lkey = S[j].mr->lkey;
			memset(&rwr, 0, sizeof(rwr));
			rwr.wr_id = 0x9000 + (uint64_t)it;
			rwr.sg_list = &rsge;
			rwr.num_sge = op == OP_WRITE_IMM ? 0 : 1;
			CHECK_OK(ibv_post_recv(qp[j], &rwr, &rbad));
		}
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0xa000 + (uint64_t)it;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op_wr[op];
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htobe32(imm);
		wr.wr.rdma.remote_addr = (uintptr_t)dst;
		wr.wr.rdma.rkey = S[j].mr->rkey;
		CHECK_OK(ibv_post_send(qp[i], &wr, &bad));
		if (dt_wait_wc(&scq[i], wc, 1, DT_WAIT_S, "tiny queues") != 1)
			DT_FAIL_(1, "tiny queues: iteration %d (%s len %u): no "
				 "completion", it, dt_wr_opcode_name(op_wr[op]),
				 len);
		e = dt_exp_send(wr.wr_id, op_wr[op], len, qp[i]->qp_num);
		if (wc[0].status != IBV_WC_SUCCESS)
			CHECK_WC(&wc[0], &e);
		EXPECT_WC(&wc[0], &e);
		if (op_consumes_recv(op)) {
			if (dt_wait_wc(&rcq[j], wc, 1, DT_WAIT_S,
				       "tiny queues") != 1)
				DT_FAIL_(1, "tiny queues: iteration %d: no "
					 "receive completion", it);
			e = dt_exp_recv(rwr.wr_id, op_wr[op], len,
					qp[j]->qp_num, qp[i]->qp_num, imm);
			if (wc[0].status != IBV_WC_SUCCESS)
				CHECK_WC(&wc[0], &e);
			EXPECT_WC(&wc[0], &e);
		}
		if (!cmp_bytes("tiny queues", op == OP_READ ? src : dst,
			       op == OP_READ ? dst : src, len, 0))
			break;
	}
	for (s = 0; s < 2; s++) {
		if (dt_cq_drain_unexpected(&scq[s], "tiny queues") +
		    dt_cq_drain_unexpected(&rcq[s], "tiny queues"))
			DT_FAIL_(0, "tiny queues: unexpected completions");
		CHECK_OK(ibv_destroy_qp(qp[s]));
		dt_cq_destroy(&scq[s]);
		dt_cq_destroy(&rcq[s]);
	}
	printf("tiny queues: %d round trips (depth %u/%u, cqe %d) in %.2f s\n",
	       iters, cap[0].max_send_wr, cap[0].max_recv_wr, cqe,
	       dt_now() - t);
}

/* ------------------------------------------------------------------ */
/* Atomics (device atomic_cap != IBV_ATOMIC_NONE): FETCH_AND_ADD and
 * CMP_AND_SWP through both APIs, the 8-byte original value lands in the
 * local buffer (ibv_post_send(3)); then two QPs hammer one counter and
 * every returned value must be distinct and the sum exact. */

static uint64_t atomic_post_wait(struct ibv_qp *qp, struct ibv_qp_ex *x,
				 struct dt_cq *cq, enum ibv_wr_opcode op,
				 uint64_t *res, uint32_t lkey, uint64_t raddr,
				 uint32_t rkey, uint64_t a, uint64_t b)
{
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad = NULL;
	struct ibv_wc wc;
	struct dt_wc_exp e;
	uint64_t id = g_wrid++;

	*res = 0x5a5a5a5a5a5a5a5aull;
	sge.addr = (uintptr_t)res;
	sge.length = 8;
	sge.lkey = lkey;
	if (x != NULL) {
		ibv_wr_start(x);
		x->wr_id = id;
		x->wr_flags = IBV_SEND_SIGNALED;
		if (op == IBV_WR_ATOMIC_FETCH_AND_ADD)
			ibv_wr_atomic_fetch_add(x, rkey, raddr, a);
		else
			ibv_wr_atomic_cmp_swp(x, rkey, raddr, a, b);
		ibv_wr_set_sge(x, lkey, (uintptr_t)res, 8);
		CHECK_OK(ibv_wr_complete(x));
	} else {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = id;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = op;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.wr.atomic.remote_addr = raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = a;
		wr.wr.atomic.swap = b;
		CHECK_OK(ibv_post_send(qp, &wr, &bad));
	}
	CHECK_EQ(dt_wait_wc(cq, &wc, 1, DT_WAIT_S, "atomic"), 1);
	/* byte_len 8: rxe make_send_cqe (dma.length), mlx5 handle_good_req */
	e = dt_exp_send(id, op, 8, qp->qp_num);
	if (wc.status != IBV_WC_SUCCESS)
		CHECK_WC(&wc, &e);
	EXPECT_WC(&wc, &e);
	n_cases++;
	return *res;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void run_atomics(void)
{
	enum { NQ = 2, PER_QP = 512 };
	struct dt_cq scq[NQ][2], rcq[NQ][2];
	struct ibv_qp *qp[NQ][2];
	struct ibv_qp_ex *qx[NQ][2];
	uint8_t *mem[2];
	struct ibv_mr *mr[2];
	struct dt_qp_cfg cfg;
	struct dt_conn_cfg cc;
	volatile uint64_t *target;
	uint64_t *res, v0, r, *seen;
	double t = dt_now();
	int q, s, api, k, posted[NQ], done[NQ], nseen = 0;

	if (env.dev[0].attr.atomic_cap == IBV_ATOMIC_NONE ||
	    env.dev[1].attr.atomic_cap == IBV_ATOMIC_NONE) {
		printf("atomics: atomic_cap is IBV_ATOMIC_NONE, not tested\n");
		return;
	}
	for (s = 0; s < 2; s++) {
		mem[s] = dt_alloc(8 * (NQ * PER_QP + 64));
		mr[s] = dt_reg_mr(env.dev[s].pd, mem[s], 8 * (NQ * PER_QP + 64),
				  DT_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC);
		CHECK_PTR(mr[s]);
	}
	dt_conn_cfg_default(&cc);
	cc.access = DT_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC;
	for (q = 0; q < NQ; q++) {
		for (s = 0; s < 2; s++) {
			dt_cq_create(&env.dev[s], 2 * PER_QP, q == 1, &scq[q][s]);
			dt_cq_create(&env.dev[s], 16, false, &rcq[q][s]);
			dt_qp_cfg_default(&cfg);
			cfg.max_send_wr = 64;
			cfg.send_ops_flags = DT_SEND_OPS_ALL |
					     IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
					     IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
			qp[q][s] = dt_qp_create(&env.dev[s], scq[q][s].cq,
						rcq[q][s].cq, &cfg, NULL);
			CHECK_PTR(qp[q][s]);
			qx[q][s] = ibv_qp_to_qp_ex(qp[q][s]);
			CHECK_PTR(qx[q][s]);
		}
		dt_connect(&env.dev[0], qp[q][0], (uint32_t)dt_rand64(),
			   &env.dev[1], qp[q][1], (uint32_t)dt_rand64(), &cc);
	}

	/* semantics, both directions, both APIs */
	for (s = 0; s < 2; s++)
		for (api = 0; api < 2; api++) {
			int j = 1 - s;
			uint64_t add = dt_rand64(), sw = dt_rand64();
			uint64_t *lres = (uint64_t *)(void *)mem[s] + 8;

			target = (volatile uint64_t *)(void *)mem[j] +
				 dt_rand_range(16, 63);
			v0 = dt_rand64();
			*target = v0;
			r = atomic_post_wait(qp[0][s], api ? qx[0][s] : NULL,
					     &scq[0][s], IBV_WR_ATOMIC_FETCH_AND_ADD,
					     lres, mr[s]->lkey, (uintptr_t)target,
					     mr[j]->rkey, add, 0);
			EXPECT_EQ(r, v0);
			EXPECT_EQ(*target, v0 + add);
			/* compare matches: swapped */
			r = atomic_post_wait(qp[0][s], api ? qx[0][s] : NULL,
					     &scq[0][s], IBV_WR_ATOMIC_CMP_AND_SWP,
					     lres, mr[s]->lkey, (uintptr_t)target,
					     mr[j]->rkey, v0 + add, sw);
			EXPECT_EQ(r, v0 + add);
			EXPECT_EQ(*target, sw);
			/* compare does not match: unchanged */
			r = atomic_post_wait(qp[0][s], api ? qx[0][s] : NULL,
					     &scq[0][s], IBV_WR_ATOMIC_CMP_AND_SWP,
					     lres, mr[s]->lkey, (uintptr_t)target,
					     mr[j]->rkey, ~sw, v0);
			EXPECT_EQ(r, sw);
			EXPECT_EQ(*target, sw);
		}

	/* contention: NQ QPs x PER_QP FETCH_AND_ADD(1) on one counter of
	 * side 1, pipelined */
	target = (volatile uint64_t *)(void *)mem[1];
	v0 = dt_rand64() >> 1;
	*target = v0;
	res = (uint64_t *)(void *)mem[0] + 64;
	memset(res, 0, 8 * NQ * PER_QP);
	memset(posted, 0, sizeof(posted));
	memset(done, 0, sizeof(done));
	while (done[0] < PER_QP || done[NQ - 1] < PER_QP) {
		double deadline = dt_now() + DT_WAIT_S;

		for (q = 0; q < NQ; q++) {
			struct ibv_wc wc[32];
			int n, m;

			while (posted[q] < PER_QP && posted[q] - done[q] < 32) {
				struct ibv_sge sge;
				struct ibv_send_wr wr, *bad = NULL;
				int idx = q * PER_QP + posted[q];

				sge.addr = (uintptr_t)&res[idx];
				sge.length = 8;
				sge.lkey = mr[0]->lkey;
				memset(&wr, 0, sizeof(wr));
				wr.wr_id = (uint64_t)idx;
				wr.sg_list = &sge;
				wr.num_sge = 1;
				wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
				wr.send_flags = IBV_SEND_SIGNALED;
				wr.wr.atomic.remote_addr = (uintptr_t)target;
				wr.wr.atomic.rkey = mr[1]->rkey;
				wr.wr.atomic.compare_add = 1;
				CHECK_OK(ibv_post_send(qp[q][0], &wr, &bad));
				posted[q]++;
			}
			n = dt_cq_poll(&scq[q][0], wc, 32);
			CHECK_CMP(n, >=, 0);
			for (m = 0; m < n; m++) {
				struct dt_wc_exp e = dt_exp_send(
					(uint64_t)(q * PER_QP + done[q]),
					IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
					qp[q][0]->qp_num);

				if (wc[m].status != IBV_WC_SUCCESS)
					CHECK_WC(&wc[m], &e);
				EXPECT_WC(&wc[m], &e);
				done[q]++;
			}
		}
		if (dt_now() > deadline)
			DT_FAIL_(1, "atomics: no progress (%d/%d, %d/%d)",
				 done[0], PER_QP, done[NQ - 1], PER_QP);
	}
	n_cases += NQ * PER_QP;
	EXPECT_EQ(*target, v0 + NQ * PER_QP);
	seen = calloc(NQ * PER_QP, sizeof(*seen));
	CHECK_PTR(seen);
	for (k = 0; k < NQ * PER_QP; k++)
		seen[nseen++] = res[k];
	qsort(seen, (size_t)nseen, sizeof(*seen), cmp_u64);
	for (k = 0; k < nseen; k++)
		if (seen[k] != v0 + (uint64_t)k) {
			DT_FAIL_(0, "atomics: fetched values are not v0..v0+%d "
				 "exactly once: sorted[%d] = v0%+lld", nseen - 1,
				 k, (long long)(seen[k] - v0));
			break;
		}
	free(seen);

	for (q = 0; q < NQ; q++)
		for (s = 0; s < 2; s++) {
			CHECK_OK(ibv_destroy_qp(qp[q][s]));
			dt_cq_destroy(&scq[q][s]);
			dt_cq_destroy(&rcq[q][s]);
		}
	for (s = 0; s < 2; s++) {
		CHECK_OK(ibv_dereg_mr(mr[s]));
		free(mem[s]);
	}
	printf("atomics: ok in %.2f s\n", dt_now() - t);
}

/* ------------------------------------------------------------------ */
/* Late receives: SENDs that arrive before their receives are RNR NAKed
 * and retried (rnr_retry 7 = forever, IBA 9.7.5.2.8) until the receives
 * show up; then everything completes in order with the right data. */

static void run_late_recv(void)
{
	enum { N = 32 };
	struct pair P;
	struct ibv_wc wc[N];
	struct dt_wc_exp e;
	uint32_t len[N], off[N], o = 0;
	int k, n, i;
	bool ok = true;

	pair_create(&P, "late-recv", IBV_MTU_1024, false, false, false, 64);
	for (k = 0; k < N; k++) {
		struct ibv_sge sge;
		struct ibv_send_wr wr, *bad = NULL;

		len[k] = (uint32_t)dt_rand_range(1, 8192);
		off[k] = o;
		o += len[k];
		dt_fill_random(S[0].buf + off[k], len[k]);
		sge.addr = (uintptr_t)(S[0].buf + off[k]);
		sge.length = len[k];
		sge.lkey = S[0].mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x7000 + (uint64_t)k;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		CHECK_OK(ibv_post_send(P.qp[0], &wr, &bad));
	}
	{
		double until = dt_now() + 0.005;

		while (dt_now() < until)
			;
	}
	for (k = 0; k < N; k++) {
		struct ibv_sge sge;
		struct ibv_recv_wr rwr, *rbad = NULL;

		sge.addr = (uintptr_t)(S[1].buf + AREA + 8192 * (size_t)k);
		sge.length = 8192;
		sge.lkey = S[1].mr->lkey;
		memset(&rwr, 0, sizeof(rwr));
		rwr.wr_id = 0x8000 + (uint64_t)k;
		rwr.sg_list = &sge;
		rwr.num_sge = 1;
		CHECK_OK(ibv_post_recv(P.qp[1], &rwr, &rbad));
	}
	n = dt_wait_wc(&P.scq[0], wc, N, DT_WAIT_S, "late-recv");
	if (n != N) {
		DT_FAIL_(0, "late receives: %d of %d SENDs completed %.0f s "
			 "after the receives were posted (RNR recovery)", n, N,
			 DT_WAIT_S);
		ok = false;
	}
	for (i = 0; i < n; i++) {
		e = dt_exp_send(0x7000 + (uint64_t)i, IBV_WR_SEND, len[i],
				P.qp[0]->qp_num);
		EXPECT_WC(&wc[i], &e);
	}
	if (ok) {
		n = dt_wait_wc(&P.rcq[1], wc, N, DT_WAIT_S, "late-recv");
		EXPECT_EQ(n, N);
		for (i = 0; i < n; i++) {
			e = dt_exp_recv(0x8000 + (uint64_t)i, IBV_WR_SEND,
					len[i], P.qp[1]->qp_num,
					P.qp[0]->qp_num, 0);
			EXPECT_WC(&wc[i], &e);
			cmp_bytes("late-recv",
				  S[1].buf + AREA + 8192 * (size_t)i,
				  S[0].buf + off[i], len[i], 0);
		}
	}
	pair_destroy(&P);
	printf("late receives: %s\n", ok ? "ok" : "FAILED");
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	static const enum ibv_mtu mtus[] = { IBV_MTU_1024, IBV_MTU_4096 };
	struct pair P;
	double t0, t;
	unsigned int m;
	int s;

	(void)argc;
	dt_watchdog(200);
	/* 4096-byte path MTUs need the port to allow them (droce.h: mtu=N,
	 * default 1024). */
	dt_init(&env, argv[0], "ip=198.18.0.1,mtu=4096",
		"ip=198.18.0.2,mtu=4096");
	dt_set_abort_hook(abort_hook);
	t0 = dt_now();

	for (s = 0; s < 2; s++) {
		CHECK_EQ(env.dev[s].port.state, IBV_PORT_ACTIVE);
		CHECK_EQ(env.dev[s].port.active_mtu, IBV_MTU_4096);
		S[s].buf = dt_alloc(BUF_SIZE);
		S[s].inl = dt_alloc(INL_SIZE);
		S[s].mr = dt_reg_mr(env.dev[s].pd, S[s].buf, BUF_SIZE,
				    DT_ACCESS_ALL);
		CHECK_PTR(S[s].mr);
	}
	msg = dt_alloc(MIB + 4096);

	for (m = 0; m < sizeof(mtus) / sizeof(mtus[0]); m++) {
		t = dt_now();
		pair_create(&P, "A(create_qp,cq,post_send)", mtus[m], false,
			    false, false, 64);
		run_matrix(&P, 0);
		run_inline(&P, 0);
		pair_destroy(&P);

		pair_create(&P, "B(create_qp_ex,cq_ex,wr_*)", mtus[m], true,
			    true, true, 64);
		run_matrix(&P, 1);
		run_inline(&P, 1);
		run_abort(&P);
		pair_destroy(&P);

		pair_create(&P, "C(create_qp_ex,mixed cq,mixed api)", mtus[m],
			    true, dt_chance(1, 2), true, 64);
		run_matrix(&P, 2);
		run_inline(&P, 2);
		pair_destroy(&P);
		printf("mtu %u: matrix done in %.2f s\n", dt_mtu_bytes(mtus[m]),
		       dt_now() - t);
	}

	/* random lengths, MTUs and ops */
	t = dt_now();
	pair_create(&P, "C(random)", dt_chance(1, 2) ? IBV_MTU_2048 : IBV_MTU_512,
		    true, true, false, 64);
	for (m = 0; m < 60; m++) {
		struct tcase c;
		uint32_t len = dt_chance(1, 4) ?
			       (uint32_t)dt_rand_range(MIB / 2, MIB) :
			       (uint32_t)dt_rand_range(0, 3 * dt_mtu_bytes(P.mtu));

		fill_case(&P, &c, (int)dt_rand_range(0, NOPS - 1), len, 2);
		run_case(&P, &c);
	}
	pair_destroy(&P);
	printf("random lengths: done in %.2f s\n", dt_now() - t);

	/* sq_sig_all = 1: every WR completes, signaled or not */
	run_sig_all();

	/* spot check at 256 */
	{
		const uint32_t lens[] = { 1, 255, 256, 257, 65536 };
		struct tcase c;
		unsigned int li;
		int op;

		t = dt_now();
		pair_create(&P, "C256", IBV_MTU_256, true, false, true, 64);
		for (op = 0; op < NOPS; op++)
			for (li = 0; li < sizeof(lens) / sizeof(lens[0]); li++) {
				fill_case(&P, &c, op, lens[li], 2);
				run_case(&P, &c);
			}
		/* max_inline_data above the MTU: inline data split over
		 * packets (the requester copies each from the WQE) */
		CHECK_CMP(P.cap[0].max_inline_data, >, 256u);
		run_inline(&P, 2);
		pair_destroy(&P);
		printf("mtu 256: spot check done in %.2f s\n", dt_now() - t);
	}
	printf("matrix: %u cases, %u MiB, %.2f s\n", n_cases, n_bytes_mb,
	       dt_now() - t0);

	run_tiny_queues();
	run_atomics();
	run_stress();
	/* last: a failure here must not hide the results above */
	run_late_recv();

	for (s = 0; s < 2; s++) {
		CHECK_OK(ibv_dereg_mr(S[s].mr));
		free(S[s].buf);
		free(S[s].inl);
	}
	free(msg);
	if (dt_failures)
		dt_dump_stats(&env);
	dt_fini(&env);
	printf("test_rc_datapath: %s (%u failure(s)) in %.2f s\n",
	       dt_failures ? "FAILED" : "PASSED", dt_failures, dt_now() - t0);
	if (dt_failures)
		printf("reproduce with DROCE_TEST_SEED=%" PRIu64 "\n", dt_seed());
	return dt_failures ? 1 : 0;
}
