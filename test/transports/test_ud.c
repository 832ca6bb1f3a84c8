/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_ud: UD QPs end to end over two real droce devices (net_ring pair),
 * and between two QPs of one device (loopback).
 *
 *  1. datagrams of 0, 1, MTU-1 and MTU bytes (MTU: the port's active MTU),
 *     with and without immediate data, gathered from 1..max_send_sge pieces
 *     (or inline) and scattered into 1..4 pieces with canaries around
 *     them. Receiver: byte_len = 40 + len, IBV_WC_GRH, src_qp, imm, qp_num;
 *     the GRH area holds an IPv4 header in bytes 20..39 (version/IHL,
 *     total length, no fragmentation, protocol UDP, a valid checksum, the
 *     sender's and the receiver's addresses); the payload byte for byte.
 *     ibv_init_ah_from_wc / ibv_create_ah_from_wc give an AH back to the
 *     sender, and a reply through it must arrive.
 *  2. a burst of datagrams in flight at once, in order.
 *  3. the same on two QPs of device A (loopback): no frame leaves the port.
 *  4. the ibv_wr_* API: ibv_wr_send[_imm] + ibv_wr_set_ud_addr (before and
 *     after the data setter) + ibv_wr_set_sge / ibv_wr_set_inline_data,
 *     batches to two destinations, an extended CQ.
 *  5. Q_Key: a wrong one is dropped (rx_bad_qkey, no completion, the
 *     receive stays for the next datagram); the privileged rule (a
 *     remote_qkey with the high bit set sends the QP's own Q_Key).
 *  6. no receive posted: silently dropped (rx_no_recv), the QP lives on.
 *  7. errors at post: longer than the MTU, RDMA/atomic opcodes, no AH
 *     (EINVAL, bad_wr); ibv_create_ah without a GRH; *_ah_from_wc
 *     without IBV_WC_GRH. An AH destroyed right after the post. A bad
 *     lkey: LOC_PROT_ERR, Send Queue Error (the rest flushed, receives
 *     go on), back to RTS.
 *  8. the AH's traffic class reaches the IPv4 TOS (and comes back through
 *     ibv_init_ah_from_wc).
 *
 * argv[1] (optional): extra devargs for both devices, e.g. "mtu=4096".
 */
#include <arpa/inet.h>
#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_common.h>

#include "tr_util.h"

#define QKEY		0x11111111u
#define BUFSZ		(256u * 1024)
#define SEND_OFF	0u
#define RECV_OFF	(16u * 1024)
#define RECV_AREA	(8u * 1024)	/* per receive slot */
#define NSLOT		4		/* receive slots per end */
#define CANARY		0xc5
#define BURST		48

static struct dt_env env;
static struct dt_dev *A, *B;
static uint32_t MTU;
static unsigned int n_dgrams;

struct ud_end {
	const char *name;
	struct dt_dev *d;
	struct dt_cq scq, rcq;
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;
	struct ibv_qp_cap cap;
	uint8_t *buf;
	struct ibv_mr *mr;
	uint64_t wrid;
};

static void abort_hook(void)
{
	dt_dump_stats(&env);
}

static void end_create(struct ud_end *e, const char *name, struct dt_dev *d,
		       bool ex_cq, uint64_t send_ops, uint32_t qkey)
{
	struct tr_qp_cfg c;

	memset(e, 0, sizeof(*e));
	e->name = name;
	e->d = d;
	dt_cq_create(d, 256, ex_cq, &e->scq);
	dt_cq_create(d, 256, ex_cq, &e->rcq);
	tr_qp_cfg_default(&c, IBV_QPT_UD);
	c.max_send_wr = 128;
	c.max_recv_wr = 128;
	c.max_inline_data = 64;
	c.send_ops_flags = send_ops;
	e->qp = tr_qp_create(d, e->scq.cq, e->rcq.cq, &c, &e->cap);
	CHECK_PTR(e->qp);
	CHECK_EQ(e->qp->qp_type, IBV_QPT_UD);
	CHECK_CMP(e->cap.max_send_sge, >=, 4);
	CHECK_CMP(e->cap.max_recv_sge, >=, 4);
	if (send_ops) {
		e->qpx = ibv_qp_to_qp_ex(e->qp);
		CHECK_PTR(e->qpx);
	}
	tr_ud_up(e->qp, qkey, (uint32_t)dt_rand64());
	e->buf = dt_alloc(BUFSZ);
	e->mr = dt_reg_mr(d->pd, e->buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	CHECK_PTR(e->mr);
	e->wrid = (uint64_t)(uintptr_t)e << 16;
}

static void end_destroy(struct ud_end *e)
{
	CHECK_EQ(dt_cq_drain_unexpected(&e->scq, e->name), 0);
	CHECK_EQ(dt_cq_drain_unexpected(&e->rcq, e->name), 0);
	CHECK_EQ(dt_qp_state(e->qp), IBV_QPS_RTS);	/* nothing broke it */
	CHECK_OK(ibv_destroy_qp(e->qp));
	dt_cq_destroy(&e->scq);
	dt_cq_destroy(&e->rcq);
	CHECK_OK(ibv_dereg_mr(e->mr));
	free(e->buf);
}

static uint32_t ip_of(struct dt_dev *d)
{
	uint32_t ip;

	memcpy(&ip, &d->gid[1].raw[12], 4);
	return ip;
}

/* ------------------------------------------------------------------ */
/* Receive layouts: the GRH area and the payload, split into pieces     */

struct rlayout {
	int n;
	struct ibv_sge sge[4];
	uint32_t off[4];	/* offsets in the end's buffer */
	uint32_t slot_off;	/* the slot's start */
};

/* Post a receive of 40 + len + slack bytes in 1..max pieces with gaps,
 * the whole slot filled with the canary first. */
static void post_ud_recv(struct ud_end *r, int slot, uint32_t len,
			 uint64_t wr_id, struct rlayout *L)
{
	uint32_t total = TR_GRH + len + (uint32_t)dt_rand_range(0, 24);
	uint32_t pos, left;
	int i, n = (int)dt_rand_range(1, 4);

	if ((uint32_t)n > total)
		n = 1;
	memset(L, 0, sizeof(*L));
	L->slot_off = RECV_OFF + (uint32_t)slot * RECV_AREA;
	memset(r->buf + L->slot_off, CANARY, RECV_AREA);
	pos = L->slot_off + (uint32_t)dt_rand_range(0, 16);
	left = total;
	for (i = 0; i < n; i++) {
		uint32_t piece = i == n - 1 ? left :
			(uint32_t)dt_rand_range(1, left - (uint32_t)(n - 1 - i));

		L->off[i] = pos;
		L->sge[i].addr = (uintptr_t)(r->buf + pos);
		L->sge[i].length = piece;
		L->sge[i].lkey = r->mr->lkey;
		pos += piece + (uint32_t)dt_rand_range(0, 16);
		left -= piece;
	}
	CHECK_CMP(pos, <=, L->slot_off + RECV_AREA);
	L->n = n;
	tr_post_recv(r->qp, wr_id, L->sge, n);
}

/* Gather the received stream (GRH area + payload) out of the pieces, and
 * check that nothing outside [0, used) of the stream was written. */
static void collect(struct ud_end *r, const struct rlayout *L, uint8_t *out,
		    uint32_t used, const char *what)
{
	uint32_t o = 0, end = L->slot_off + RECV_AREA, prev_end = L->slot_off;

	for (int i = 0; i < L->n; i++) {
		const uint8_t *p = r->buf + L->off[i];
		uint32_t len = L->sge[i].length;
		uint32_t take = o >= used ? 0 : RTE_MIN(len, used - o);

		TR_ALL(what, r->buf + prev_end, L->off[i] - prev_end, CANARY);
		memcpy(out + o, p, take);
		TR_ALL(what, p + take, len - take, CANARY);
		o += len;
		prev_end = L->off[i] + len;
	}
	TR_ALL(what, r->buf + prev_end, end - prev_end, CANARY);
}

/* ------------------------------------------------------------------ */
/* The GRH area: an IPv4 header in its last 20 bytes                    */

static uint16_t ip_csum(const uint8_t *h)
{
	uint32_t s = 0;

	for (int i = 0; i < 20; i += 2)
		s += (uint32_t)(h[i] << 8 | h[i + 1]);
	while (s >> 16)
		s = (s & 0xffff) + (s >> 16);
	return (uint16_t)s;
}

static void check_grh(const uint8_t *g, uint32_t src, uint32_t dst,
		      uint32_t len, bool imm, uint8_t tos, const char *what)
{
	const uint8_t *h = g + 20;
	uint32_t pad = (4 - (len & 3)) & 3;
	/* UDP 8 + BTH 12 + DETH 8 + ImmDt 4 + payload + pad + ICRC 4 */
	uint32_t tot = 20 + 8 + 12 + 8 + (imm ? 4 : 0) + len + pad + 4;
	uint16_t frag = (uint16_t)(h[6] << 8 | h[7]);

	if (h[0] != 0x45)
		DT_FAIL_(0, "%s: GRH[20] (version/IHL) 0x%02x, expected 0x45",
			 what, h[0]);
	if (h[1] != tos)
		DT_FAIL_(0, "%s: GRH[21] (TOS) 0x%02x, expected 0x%02x "
			 "(the AH's traffic class)", what, h[1], tos);
	if ((uint32_t)(h[2] << 8 | h[3]) != tot)
		DT_FAIL_(0, "%s: IPv4 total length %u, expected %u", what,
			 h[2] << 8 | h[3], tot);
	if (frag & 0x3fff)
		DT_FAIL_(0, "%s: IPv4 MF/fragment offset set: 0x%04x", what,
			 frag);
	if (h[8] == 0)
		DT_FAIL_(0, "%s: IPv4 TTL 0", what);
	if (h[9] != 17)
		DT_FAIL_(0, "%s: IPv4 protocol %u, expected 17 (UDP)", what,
			 h[9]);
	if (ip_csum(h) != 0xffff)
		DT_FAIL_(0, "%s: IPv4 header checksum wrong (sum 0x%04x)",
			 what, ip_csum(h));
	if (memcmp(h + 12, &src, 4) != 0 || memcmp(h + 16, &dst, 4) != 0) {
		char s[INET_ADDRSTRLEN], d[INET_ADDRSTRLEN];
		char es[INET_ADDRSTRLEN], ed[INET_ADDRSTRLEN];

		inet_ntop(AF_INET, h + 12, s, sizeof(s));
		inet_ntop(AF_INET, h + 16, d, sizeof(d));
		inet_ntop(AF_INET, &src, es, sizeof(es));
		inet_ntop(AF_INET, &dst, ed, sizeof(ed));
		DT_FAIL_(0, "%s: IPv4 %s -> %s, expected %s -> %s", what, s, d,
			 es, ed);
	}
}

/* ------------------------------------------------------------------ */
/* One datagram S -> R, everything checked                              */

enum post_mode { PM_POST, PM_POST_INLINE, PM_WR, PM_WR_INLINE,
		 PM_WR_ADDR_LAST };

static const char *const mode_name[] = {
	"ibv_post_send", "ibv_post_send inline", "ibv_wr_*",
	"ibv_wr_* inline", "ibv_wr_* set_ud_addr last",
};

struct sent {
	uint64_t wr_id;
	uint32_t len;
	bool imm;
	uint32_t imm_val;
	uint32_t soff;
};

/* Post one datagram from S (data at S->buf + soff, random, gathered from
 * 1..4 pieces; PM_POST or one of the ibv_wr_* modes, not inline), returns
 * what was posted. Does not wait. */
static struct sent post_dgram(struct ud_end *s, struct ibv_ah *ah,
			      uint32_t dqpn, uint32_t qkey, uint32_t len,
			      bool imm, enum post_mode m, uint32_t soff)
{
	struct ibv_sge sg[4];
	struct sent t;
	int k = 0;

	t.wr_id = ++s->wrid;
	t.len = len;
	t.imm = imm;
	t.imm_val = (uint32_t)dt_rand64();
	t.soff = soff;
	dt_fill_random(s->buf + soff, len);
	if (len) {
		/* 1..4 pieces, in order, contiguous in the message */
		int want = (int)dt_rand_range(1, RTE_MIN(4u, len));
		uint32_t o = 0;

		for (k = 0; k < want; k++) {
			uint32_t piece = k == want - 1 ? len - o :
				(uint32_t)dt_rand_range(1, len - o -
						(uint32_t)(want - 1 - k));

			sg[k].addr = (uintptr_t)(s->buf + soff + o);
			sg[k].length = piece;
			sg[k].lkey = s->mr->lkey;
			o += piece;
		}
	}
	if (m == PM_POST || m == PM_POST_INLINE) {
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = t.wr_id;
		wr.sg_list = k ? sg : NULL;
		wr.num_sge = k;
		wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htobe32(t.imm_val);
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = dqpn;
		wr.wr.ud.remote_qkey = qkey;
		CHECK_OK(ibv_post_send(s->qp, &wr, &bad));
		return t;
	}
	CHECK_PTR(s->qpx);
	ibv_wr_start(s->qpx);
	s->qpx->wr_id = t.wr_id;
	s->qpx->wr_flags = IBV_SEND_SIGNALED;
	if (imm)
		ibv_wr_send_imm(s->qpx, htobe32(t.imm_val));
	else
		ibv_wr_send(s->qpx);
	if (m != PM_WR_ADDR_LAST)
		ibv_wr_set_ud_addr(s->qpx, ah, dqpn, qkey);
	if (k == 1 && dt_chance(1, 2)) {
		ibv_wr_set_sge(s->qpx, sg[0].lkey, sg[0].addr, sg[0].length);
	} else {
		ibv_wr_set_sge_list(s->qpx, (size_t)k, sg);
	}
	if (m == PM_WR_ADDR_LAST)
		ibv_wr_set_ud_addr(s->qpx, ah, dqpn, qkey);
	CHECK_OK(ibv_wr_complete(s->qpx));
	return t;
}

static void check_send_wc(struct ud_end *s, const struct ibv_wc *wc,
			  const struct sent *t)
{
	struct dt_wc_exp e = dt_exp_send(t->wr_id, t->imm ?
		IBV_WR_SEND_WITH_IMM : IBV_WR_SEND, t->len, s->qp->qp_num);

	CHECK_WC(wc, &e);
}

/* The receive completion of t on R, from S; fatal on a mismatch. */
static void check_recv_wc(struct ud_end *r, struct ud_end *s,
			  const struct ibv_wc *wc, uint64_t wr_id,
			  const struct sent *t)
{
	struct dt_wc_exp e;

	memset(&e, 0, sizeof(e));
	e.wr_id = wr_id;
	e.status = IBV_WC_SUCCESS;
	e.opcode = IBV_WC_RECV;
	e.byte_len = TR_GRH + t->len;
	e.qp_num = r->qp->qp_num;
	e.src_qp = s->qp->qp_num;
	/* ibv_poll_cq(3): IBV_WC_GRH "GRH is present (valid only for UD
	 * QPs)"; on RoCE every UD receive carries one. */
	e.wc_flags = IBV_WC_GRH | (t->imm ? IBV_WC_WITH_IMM : 0);
	e.imm_data = t->imm_val;
	CHECK_WC(wc, &e);
	/* src_qp is defined for UD (ibv_poll_cq(3)): it must be exact. */
	CHECK_EQ(wc->src_qp, s->qp->qp_num);
	if (r->rcq.cqx == NULL) {
		/* RoCE: no LIDs, SL 0, P_Key index 0 (GSI only) */
		CHECK_EQ(wc->slid, 0);
		CHECK_EQ(wc->sl, 0);
		CHECK_EQ(wc->dlid_path_bits, 0);
		CHECK_EQ(wc->vendor_err, 0);
	}
}

/* The AH back to the sender, from the completion and the GRH area. */
static struct ibv_ah *reply_ah(struct ud_end *r, struct ud_end *s,
			       struct ibv_wc *wc, uint8_t *grh, uint8_t tclass)
{
	struct ibv_ah_attr a;
	struct ibv_ah *ah;

	memset(&a, 0xa5, sizeof(a));
	CHECK_EQ(ibv_init_ah_from_wc(r->d->ctx, 1, wc, (struct ibv_grh *)grh,
				     &a), 0);
	CHECK_EQ(a.is_global, 1);
	CHECK_EQ(a.port_num, 1);
	CHECK_EQ(a.dlid, 0);
	CHECK_EQ(a.src_path_bits, 0);
	CHECK_EQ(a.grh.sgid_index, 1);	/* we were addressed at GID 1 */
	CHECK(memcmp(a.grh.dgid.raw, s->d->gid[1].raw, 16) == 0);
	EXPECT_EQ(a.grh.traffic_class, tclass);
	ah = ibv_create_ah_from_wc(r->d->pd, wc, (struct ibv_grh *)grh, 1);
	CHECK_PTR(ah);
	CHECK(ah->pd == r->d->pd);
	return ah;
}

/*
 * S -> R: one datagram of len bytes, all checked; then R answers through
 * an AH made from the completion, and S checks the answer.
 */
static void xfer(struct ud_end *s, struct ud_end *r, struct ibv_ah *ah,
		 uint32_t len, bool imm, enum post_mode m, uint8_t tclass)
{
	char what[160];
	struct rlayout L, L2;
	struct ibv_wc swc, rwc;
	struct sent t, t2;
	uint8_t got[TR_GRH + 4096 + 64];
	uint64_t rid = ++r->wrid;
	struct ibv_ah *back;

	snprintf(what, sizeof(what), "%s -> %s %s len %u%s", s->name,
		 r->name, mode_name[m], len, imm ? " imm" : "");
	post_ud_recv(r, 0, len, rid, &L);
	t = post_dgram(s, ah, r->qp->qp_num, QKEY, len, imm, m,
		       SEND_OFF + (uint32_t)dt_rand_range(0, 64));
	TR_WAIT(&s->scq, &swc, 1, what);
	check_send_wc(s, &swc, &t);
	TR_WAIT(&r->rcq, &rwc, 1, what);
	check_recv_wc(r, s, &rwc, rid, &t);
	collect(r, &L, got, TR_GRH + len, what);
	check_grh(got, ip_of(s->d), ip_of(r->d), len, imm, tclass, what);
	TR_CMP(what, got + TR_GRH, s->buf + t.soff, len);
	n_dgrams++;

	/* the answer */
	back = reply_ah(r, s, &rwc, got, tclass);
	rid = ++s->wrid;
	post_ud_recv(s, 1, len, rid, &L2);
	t2 = post_dgram(r, back, rwc.src_qp, QKEY, len, !imm, PM_POST,
			SEND_OFF + 4096);
	TR_WAIT(&r->scq, &swc, 1, what);
	check_send_wc(r, &swc, &t2);
	TR_WAIT(&s->rcq, &rwc, 1, what);
	check_recv_wc(s, r, &rwc, rid, &t2);
	collect(s, &L2, got, TR_GRH + len, what);
	check_grh(got, ip_of(r->d), ip_of(s->d), len, !imm, tclass, what);
	TR_CMP(what, got + TR_GRH, r->buf + t2.soff, len);
	CHECK_OK(ibv_destroy_ah(back));
	n_dgrams++;
	if (dt_failures)
		dt_abort();
}

/* Inline sends: the data is compared against a copy kept before the post. */
static void xfer_inline(struct ud_end *s, struct ud_end *r, struct ibv_ah *ah,
			uint32_t len, bool imm, enum post_mode m)
{
	char what[160];
	struct rlayout L;
	struct ibv_wc swc, rwc;
	struct sent t;
	uint8_t got[TR_GRH + 512], copy[512];
	uint64_t rid = ++r->wrid;

	snprintf(what, sizeof(what), "%s -> %s %s len %u%s", s->name,
		 r->name, mode_name[m], len, imm ? " imm" : "");
	CHECK_CMP(len, <=, sizeof(copy));
	post_ud_recv(r, 0, len, rid, &L);
	/* the source is overwritten right after the post: keep a copy */
	dt_fill_random(copy, len);
	memcpy(s->buf + SEND_OFF, copy, len);
	{
		struct ibv_sge sg = { .addr = (uintptr_t)(s->buf + SEND_OFF),
				      .length = len, .lkey = 0xdeadbeef };

		t.wr_id = ++s->wrid;
		t.len = len;
		t.imm = imm;
		t.imm_val = (uint32_t)dt_rand64();
		t.soff = SEND_OFF;
		if (m == PM_POST_INLINE) {
			struct ibv_send_wr wr, *bad = NULL;

			memset(&wr, 0, sizeof(wr));
			wr.wr_id = t.wr_id;
			wr.sg_list = &sg;
			wr.num_sge = 1;
			wr.opcode = imm ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
			wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
			wr.imm_data = htobe32(t.imm_val);
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = r->qp->qp_num;
			wr.wr.ud.remote_qkey = QKEY;
			CHECK_OK(ibv_post_send(s->qp, &wr, &bad));
		} else {
			ibv_wr_start(s->qpx);
			s->qpx->wr_id = t.wr_id;
			s->qpx->wr_flags = IBV_SEND_SIGNALED;
			if (imm)
				ibv_wr_send_imm(s->qpx, htobe32(t.imm_val));
			else
				ibv_wr_send(s->qpx);
			ibv_wr_set_ud_addr(s->qpx, ah, r->qp->qp_num, QKEY);
			ibv_wr_set_inline_data(s->qpx, s->buf + SEND_OFF, len);
			CHECK_OK(ibv_wr_complete(s->qpx));
		}
		/* inline: the buffer is free again at once */
		memset(s->buf + SEND_OFF, 0xee, len);
	}
	TR_WAIT(&s->scq, &swc, 1, what);
	check_send_wc(s, &swc, &t);
	TR_WAIT(&r->rcq, &rwc, 1, what);
	check_recv_wc(r, s, &rwc, rid, &t);
	collect(r, &L, got, TR_GRH + len, what);
	check_grh(got, ip_of(s->d), ip_of(r->d), len, imm, 0, what);
	TR_CMP(what, got + TR_GRH, copy, len);
	n_dgrams++;
	if (dt_failures)
		dt_abort();
}

static void matrix(struct ud_end *s, struct ud_end *r, bool wr_api)
{
	const uint32_t lens[] = { 0, 1, MTU - 1, MTU };
	struct ibv_ah *ah = tr_ah_to(s->d, r->d);

	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (int imm = 0; imm < 2; imm++) {
			if (!wr_api) {
				xfer(s, r, ah, lens[i], imm, PM_POST, 0);
			} else {
				xfer(s, r, ah, lens[i], imm, PM_WR, 0);
				xfer(s, r, ah, lens[i], imm, PM_WR_ADDR_LAST,
				     0);
			}
			if (lens[i] <= s->cap.max_inline_data)
				xfer_inline(s, r, ah, lens[i], imm,
					    wr_api ? PM_WR_INLINE :
						     PM_POST_INLINE);
		}
	CHECK_OK(ibv_destroy_ah(ah));
	printf("  %s -> %s (%s): lengths 0, 1, %u, %u, +/- imm, inline, "
	       "replies via ibv_create_ah_from_wc: ok\n", s->name, r->name,
	       wr_api ? "ibv_wr_*" : "ibv_post_send", MTU - 1, MTU);
}

/* Many datagrams in flight; each receive has its own slot. */
static void burst(struct ud_end *s, struct ud_end *r)
{
	struct ibv_ah *ah = tr_ah_to(s->d, r->d);
	struct ibv_wc wc[BURST];
	struct {
		uint32_t len;
		uint32_t imm;
		uint64_t rid, sid;
	} x[BURST];
	struct ibv_sge sge;
	uint8_t *src = s->buf, *dst = r->buf;
	uint32_t stride = MTU + TR_GRH;
	int i;

	CHECK_CMP((uint64_t)BURST * stride, <=, BUFSZ);
	memset(dst, CANARY, BUFSZ);
	for (i = 0; i < BURST; i++) {
		x[i].len = (uint32_t)dt_rand_range(0, MTU);
		x[i].rid = ++r->wrid;
		sge.addr = (uintptr_t)(dst + (size_t)i * stride);
		sge.length = TR_GRH + x[i].len;
		sge.lkey = r->mr->lkey;
		tr_post_recv(r->qp, x[i].rid, &sge, 1);
	}
	dt_fill_random(src, BUFSZ);
	for (i = 0; i < BURST; i++) {
		struct ibv_send_wr wr, *bad = NULL;

		x[i].sid = ++s->wrid;
		x[i].imm = (uint32_t)dt_rand64();
		sge.addr = (uintptr_t)(src + (size_t)i * stride);
		sge.length = x[i].len;
		sge.lkey = s->mr->lkey;
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = x[i].sid;
		wr.sg_list = &sge;
		wr.num_sge = 1;
		wr.opcode = i & 1 ? IBV_WR_SEND_WITH_IMM : IBV_WR_SEND;
		wr.imm_data = htobe32(x[i].imm);
		/* every other one unsignaled: only signaled ones complete */
		wr.send_flags = i % 3 == 2 ? 0 : IBV_SEND_SIGNALED;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = r->qp->qp_num;
		wr.wr.ud.remote_qkey = QKEY;
		CHECK_OK(ibv_post_send(s->qp, &wr, &bad));
	}
	TR_WAIT(&r->rcq, wc, BURST, "burst receives");
	for (i = 0; i < BURST; i++) {
		struct sent t = { .wr_id = x[i].sid, .len = x[i].len,
				  .imm = i & 1, .imm_val = x[i].imm };
		char what[64];

		snprintf(what, sizeof(what), "burst datagram %d", i);
		check_recv_wc(r, s, &wc[i], x[i].rid, &t);
		check_grh(dst + (size_t)i * stride, ip_of(s->d), ip_of(r->d),
			  x[i].len, i & 1, 0, what);
		TR_CMP(what, dst + (size_t)i * stride + TR_GRH,
		       src + (size_t)i * stride, x[i].len);
		TR_ALL(what, dst + (size_t)i * stride + TR_GRH + x[i].len,
		       stride - TR_GRH - x[i].len, CANARY);
	}
	{
		int n = 0;

		for (i = 0; i < BURST; i++)
			if (i % 3 != 2)
				n++;
		TR_WAIT(&s->scq, wc, n, "burst sends");
		for (i = 0, n = 0; i < BURST; i++) {
			struct sent t = { .wr_id = x[i].sid, .len = x[i].len,
					  .imm = i & 1 };

			if (i % 3 == 2)
				continue;
			check_send_wc(s, &wc[n++], &t);
		}
	}
	TR_QUIET(&s->scq, 20, "burst: unsignaled sends");
	CHECK_OK(ibv_destroy_ah(ah));
	n_dgrams += BURST;
	printf("  %s -> %s: %d datagrams in flight, in order: ok\n", s->name,
	       r->name, BURST);
	if (dt_failures)
		dt_abort();
}

/* ------------------------------------------------------------------ */
/* Q_Key                                                                */

static void set_qkey(struct ibv_qp *qp, uint32_t qkey)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.qkey = qkey;
	/* ibv_modify_qp(3), UD: RTS -> RTS, optional IBV_QP_QKEY */
	CHECK_OK(ibv_modify_qp(qp, &a, IBV_QP_STATE | IBV_QP_QKEY));
	{
		struct ibv_qp_init_attr ia;

		CHECK_OK(ibv_query_qp(qp, &a, IBV_QP_QKEY, &ia));
		CHECK_EQ(a.qkey, qkey);
	}
}

/* Send one datagram with remote_qkey; expect it to arrive or to be
 * dropped as a bad Q_Key. */
static void qkey_case(struct ud_end *s, struct ud_end *r, struct ibv_ah *ah,
		      uint32_t remote_qkey, bool arrives, const char *what)
{
	struct droce_dev_stats b0 = tr_stats(r->d), b1;
	struct ibv_wc wc;
	struct sent t;
	struct rlayout L;
	uint8_t got[TR_GRH + 64];
	uint64_t rid = ++r->wrid;

	post_ud_recv(r, 2, 32, rid, &L);
	t = post_dgram(s, ah, r->qp->qp_num, remote_qkey, 32, false, PM_POST,
		       SEND_OFF);
	/* UD: the sender completes whatever the receiver does */
	TR_WAIT(&s->scq, &wc, 1, what);
	check_send_wc(s, &wc, &t);
	if (arrives) {
		TR_WAIT(&r->rcq, &wc, 1, what);
		check_recv_wc(r, s, &wc, rid, &t);
		collect(r, &L, got, TR_GRH + 32, what);
		TR_CMP(what, got + TR_GRH, s->buf + SEND_OFF, 32);
		b1 = tr_stats(r->d);
		CHECK_EQ(TR_DELTA(b1, b0, rx_bad_qkey), 0);
		return;
	}
	/* dropped: counted, no completion; the receive stays posted and
	 * takes the next good datagram */
	{
		double end = dt_now() + DT_WAIT_S;

		do {
			b1 = tr_stats(r->d);
		} while (TR_DELTA(b1, b0, rx_bad_qkey) == 0 && dt_now() < end);
	}
	if (TR_DELTA(b1, b0, rx_bad_qkey) != 1)
		DT_FAIL_(1, "%s: rx_bad_qkey went up by %" PRIu64 ", expected 1",
			 what, TR_DELTA(b1, b0, rx_bad_qkey));
	TR_QUIET(&r->rcq, 30, what);
	t = post_dgram(s, ah, r->qp->qp_num, QKEY, 32, true, PM_POST, SEND_OFF);
	TR_WAIT(&s->scq, &wc, 1, what);
	check_send_wc(s, &wc, &t);
	TR_WAIT(&r->rcq, &wc, 1, what);
	check_recv_wc(r, s, &wc, rid, &t);
	collect(r, &L, got, TR_GRH + 32, what);
	TR_CMP(what, got + TR_GRH, s->buf + SEND_OFF, 32);
}

static void qkeys(struct ud_end *s, struct ud_end *r)
{
	struct ibv_ah *ah = tr_ah_to(s->d, r->d);

	qkey_case(s, r, ah, QKEY ^ 1, false, "wrong Q_Key");
	qkey_case(s, r, ah, 0, false, "Q_Key 0");
	/*
	 * IBTA 10.2.5 (ibv_post_send(3): "remote_qkey"): a Q_Key with its
	 * high-order bit set in the WR means "use the QP's own Q_Key".
	 */
	set_qkey(s->qp, QKEY);			/* the receiver's */
	qkey_case(s, r, ah, 0x80000000u, true, "privileged Q_Key -> own (good)");
	qkey_case(s, r, ah, 0x8000abcdu, true, "privileged Q_Key 0x8000abcd -> own (good)");
	set_qkey(s->qp, 0x22222222u);		/* not the receiver's */
	qkey_case(s, r, ah, 0x80000000u | QKEY, false,
		  "privileged Q_Key -> own (wrong)");
	qkey_case(s, r, ah, QKEY, true, "explicit Q_Key despite own");
	set_qkey(s->qp, QKEY);
	CHECK_OK(ibv_destroy_ah(ah));
	printf("  Q_Key: wrong ones dropped (rx_bad_qkey), privileged rule: ok\n");
	if (dt_failures)
		dt_abort();
}

/* ------------------------------------------------------------------ */
/* No receive posted                                                    */

static void no_recv(struct ud_end *s, struct ud_end *r)
{
	struct ibv_ah *ah = tr_ah_to(s->d, r->d);
	struct droce_dev_stats b0 = tr_stats(r->d), b1;
	struct ibv_wc wc;
	struct sent t;
	struct rlayout L;
	uint8_t got[TR_GRH + 64];
	uint64_t rid;
	double end;

	TR_QUIET(&r->rcq, 5, "no receive: before");
	t = post_dgram(s, ah, r->qp->qp_num, QKEY, 16, false, PM_POST, SEND_OFF);
	TR_WAIT(&s->scq, &wc, 1, "no receive");
	check_send_wc(s, &wc, &t);
	end = dt_now() + DT_WAIT_S;
	do {
		b1 = tr_stats(r->d);
	} while (TR_DELTA(b1, b0, rx_no_recv) == 0 && dt_now() < end);
	CHECK_EQ(TR_DELTA(b1, b0, rx_no_recv), 1);
	CHECK_EQ(TR_DELTA(b1, b0, tx_rnr_naks), 0);	/* UD: no RNR */
	CHECK_EQ(TR_DELTA(b1, b0, tx_naks), 0);
	TR_QUIET(&r->rcq, 30, "no receive");
	CHECK_EQ(dt_qp_state(r->qp), IBV_QPS_RTS);
	/* a receive posted now takes the next datagram, not the lost one */
	rid = ++r->wrid;
	post_ud_recv(r, 0, 16, rid, &L);
	TR_QUIET(&r->rcq, 30, "no receive: late receive");
	t = post_dgram(s, ah, r->qp->qp_num, QKEY, 16, true, PM_POST, SEND_OFF);
	TR_WAIT(&s->scq, &wc, 1, "no receive: next");
	check_send_wc(s, &wc, &t);
	TR_WAIT(&r->rcq, &wc, 1, "no receive: next");
	check_recv_wc(r, s, &wc, rid, &t);
	collect(r, &L, got, TR_GRH + 16, "no receive: next");
	TR_CMP("no receive: next", got + TR_GRH, s->buf + SEND_OFF, 16);
	CHECK_OK(ibv_destroy_ah(ah));
	printf("  no receive posted: dropped silently (rx_no_recv): ok\n");
}

/* ------------------------------------------------------------------ */
/* Errors at post                                                       */

static void post_errors(struct ud_end *s, struct ud_end *r)
{
	static const enum ibv_wr_opcode bad_ops[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
	};
	struct ibv_ah *ah = tr_ah_to(s->d, r->d);
	struct ibv_send_wr wr[2], *bad;
	struct ibv_sge sg[2];
	struct ibv_wc wc;
	struct sent t;

	memset(wr, 0, sizeof(wr));
	sg[0].addr = (uintptr_t)s->buf;
	sg[0].length = MTU + 1;
	sg[0].lkey = s->mr->lkey;
	wr[0].wr_id = 0xbad1;
	wr[0].sg_list = sg;
	wr[0].num_sge = 1;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	wr[0].wr.ud.ah = ah;
	wr[0].wr.ud.remote_qpn = r->qp->qp_num;
	wr[0].wr.ud.remote_qkey = QKEY;

	/* A datagram is one packet: longer than the path MTU is refused
	 * (mlx5 and rxe refuse a UD send larger than the MTU with EINVAL). */
	bad = NULL;
	CHECK_RET(ibv_post_send(s->qp, &wr[0], &bad), EINVAL);
	CHECK(bad == &wr[0]);
	/* the same split over two SGEs */
	sg[0].length = MTU / 2;
	sg[1] = sg[0];
	sg[1].addr += MTU / 2;
	sg[1].length = MTU / 2 + 1;
	wr[0].num_sge = 2;
	bad = NULL;
	CHECK_RET(ibv_post_send(s->qp, &wr[0], &bad), EINVAL);
	CHECK(bad == &wr[0]);
	/* inside a list: the first goes, bad_wr points at the second */
	sg[0].length = MTU;
	wr[0].num_sge = 1;
	wr[1] = wr[0];
	wr[1].wr_id = 0xbad2;
	wr[1].sg_list = &sg[1];
	sg[1].length = MTU + 1;
	wr[0].next = &wr[1];
	{
		struct rlayout L;
		uint64_t rid = ++r->wrid;

		post_ud_recv(r, 0, MTU, rid, &L);
		bad = NULL;
		CHECK_RET(ibv_post_send(s->qp, &wr[0], &bad), EINVAL);
		CHECK(bad == &wr[1]);
		TR_WAIT(&s->scq, &wc, 1, "list with a too long datagram");
		t.wr_id = 0xbad1;
		t.len = MTU;
		t.imm = false;
		check_send_wc(s, &wc, &t);
		TR_WAIT(&r->rcq, &wc, 1, "list with a too long datagram");
		check_recv_wc(r, s, &wc, rid, &t);
		TR_QUIET(&s->scq, 20, "list with a too long datagram");
	}
	wr[0].next = NULL;

	/* ibv_post_send(3): UD supports SEND and SEND_WITH_IMM only */
	for (size_t i = 0; i < sizeof(bad_ops) / sizeof(bad_ops[0]); i++) {
		memset(&wr[0], 0, sizeof(wr[0]));
		sg[0].length = 8;
		wr[0].sg_list = sg;
		wr[0].num_sge = 1;
		wr[0].opcode = bad_ops[i];
		wr[0].send_flags = IBV_SEND_SIGNALED;
		wr[0].wr.rdma.remote_addr = (uintptr_t)r->buf;
		wr[0].wr.rdma.rkey = r->mr->rkey;
		bad = NULL;
		if (ibv_post_send(s->qp, &wr[0], &bad) != EINVAL || bad != &wr[0])
			DT_FAIL_(0, "UD %s: ibv_post_send did not fail with "
				 "EINVAL and bad_wr", dt_wr_opcode_name(bad_ops[i]));
	}
	/* no address handle */
	memset(&wr[0], 0, sizeof(wr[0]));
	sg[0].length = 8;
	wr[0].sg_list = sg;
	wr[0].num_sge = 1;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].wr.ud.remote_qpn = r->qp->qp_num;
	wr[0].wr.ud.remote_qkey = QKEY;
	bad = NULL;
	CHECK_RET(ibv_post_send(s->qp, &wr[0], &bad), EINVAL);
	CHECK(bad == &wr[0]);
	TR_QUIET(&s->scq, 20, "refused posts");
	TR_QUIET(&r->rcq, 5, "refused posts");

	/* ibv_create_ah: RoCE needs a GRH (rdma-core's providers refuse an
	 * AH without one on an Ethernet port: EINVAL). */
	{
		struct ibv_ah_attr a;

		memset(&a, 0, sizeof(a));
		a.port_num = 1;
		a.dlid = 1;
		CHECK_NULL_ERRNO(ibv_create_ah(s->d->pd, &a), EINVAL);
	}
	/* *_ah_from_wc needs IBV_WC_GRH (ibv_create_ah_from_wc(3)) */
	{
		struct ibv_wc w;
		struct ibv_ah_attr a;
		uint8_t g[TR_GRH];

		memset(&w, 0, sizeof(w));
		memset(g, 0, sizeof(g));
		w.qp_num = r->qp->qp_num;
		w.src_qp = s->qp->qp_num;
		CHECK_NULL_ERRNO(ibv_create_ah_from_wc(r->d->pd, &w,
				 (struct ibv_grh *)g, 1), EINVAL);
		CHECK(ibv_init_ah_from_wc(r->d->ctx, 1, &w,
					  (struct ibv_grh *)g, &a) != 0);
	}
	CHECK_OK(ibv_destroy_ah(ah));
	printf("  post errors: too long (EINVAL, bad_wr), RDMA/atomics on UD, "
	       "no AH, AH without GRH: ok\n");
	if (dt_failures)
		dt_abort();
}

/* The ibv_wr_* path with a datagram longer than the MTU: either
 * ibv_wr_complete refuses it (EINVAL) or it completes in error
 * (IBV_WC_LOC_LEN_ERR); never does a frame leave, and the QP goes on. */
static void wr_too_long(struct ud_end *s, struct ud_end *r)
{
	struct ibv_ah *ah = tr_ah_to(s->d, r->d);
	struct droce_dev_stats b0 = tr_stats(s->d), b1;
	struct ibv_wc wc;
	int ret;

	ibv_wr_start(s->qpx);
	s->qpx->wr_id = 0x70015;
	s->qpx->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(s->qpx);
	ibv_wr_set_ud_addr(s->qpx, ah, r->qp->qp_num, QKEY);
	ibv_wr_set_sge(s->qpx, s->mr->lkey, (uintptr_t)s->buf, MTU + 1);
	ret = ibv_wr_complete(s->qpx);
	if (ret == 0) {
		struct dt_wc_exp e = dt_exp_err(0x70015, IBV_WC_LOC_LEN_ERR,
						s->qp->qp_num);

		TR_WAIT(&s->scq, &wc, 1, "ibv_wr_* too long");
		CHECK_WC(&wc, &e);
		printf("  note: ibv_wr_* with a datagram > MTU: accepted by "
		       "ibv_wr_complete, completes with LOC_LEN_ERR "
		       "(ibv_post_send gives EINVAL)\n");
	} else {
		CHECK_EQ(ret, EINVAL);
	}
	b1 = tr_stats(s->d);
	CHECK_EQ(TR_DELTA(b1, b0, tx_pkts), 0);
	TR_QUIET(&r->rcq, 20, "ibv_wr_* too long");
	if (dt_qp_state(s->qp) != IBV_QPS_RTS) {
		/* an error completion may move the QP to SQE (IBTA 10.3.1);
		 * back to RTS as ibv_modify_qp(3) allows for UD */
		CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_SQE);
		CHECK_OK(dt_qp_to_state(s->qp, IBV_QPS_RTS));
	}
	CHECK_OK(ibv_destroy_ah(ah));
}

/*
 * A send WR with an unknown lkey (IBTA 10.3.1, SQEr): IBV_WC_LOC_PROT_ERR
 * and the QP in SQE; the WR posted behind it in the same list, and one
 * posted while in SQE, complete with IBV_WC_WR_FLUSH_ERR; no frame leaves;
 * receives still work in SQE; ibv_modify_qp(SQE -> RTS) and datagrams go
 * again.
 */
static void send_queue_error(struct ud_end *s, struct ud_end *r)
{
	struct ibv_ah *ah = tr_ah_to(s->d, r->d), *back = tr_ah_to(r->d, s->d);
	struct droce_dev_stats b0 = tr_stats(s->d), b1;
	struct ibv_sge bad = { (uintptr_t)s->buf, 64, s->mr->lkey ^ 0x5a5a00u };
	struct ibv_sge good = { (uintptr_t)s->buf, 64, s->mr->lkey };
	struct ibv_send_wr w[3], *badwr = NULL;
	struct ibv_wc wc[2];
	struct dt_wc_exp e;
	struct rlayout L;
	struct sent t;
	uint8_t got[TR_GRH + 128];
	uint64_t id = ++s->wrid, rid;

	memset(w, 0, sizeof(w));
	for (int i = 0; i < 3; i++) {
		w[i].wr_id = id + (uint64_t)i;
		w[i].sg_list = i == 0 ? &bad : &good;
		w[i].num_sge = 1;
		w[i].opcode = IBV_WR_SEND;
		w[i].send_flags = IBV_SEND_SIGNALED;
		w[i].wr.ud.ah = ah;
		w[i].wr.ud.remote_qpn = r->qp->qp_num;
		w[i].wr.ud.remote_qkey = QKEY;
	}
	w[0].next = &w[1];
	s->wrid += 2;
	CHECK_OK(ibv_post_send(s->qp, &w[0], &badwr));
	TR_WAIT(&s->scq, wc, 2, "bad lkey, then a good WR");
	e = dt_exp_err(id, IBV_WC_LOC_PROT_ERR, s->qp->qp_num);
	CHECK_WC(&wc[0], &e);
	e = dt_exp_err(id + 1, IBV_WC_WR_FLUSH_ERR, s->qp->qp_num);
	CHECK_WC(&wc[1], &e);
	CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_SQE);
	/* posted while in SQE: flushed */
	CHECK_OK(ibv_post_send(s->qp, &w[2], &badwr));
	TR_WAIT(&s->scq, wc, 1, "posted in SQE");
	e = dt_exp_err(id + 2, IBV_WC_WR_FLUSH_ERR, s->qp->qp_num);
	CHECK_WC(&wc[0], &e);
	b1 = tr_stats(s->d);
	CHECK_EQ(TR_DELTA(b1, b0, tx_pkts), 0);
	TR_QUIET(&r->rcq, 20, "sends of a QP in SQE");
	/* the receive side of a QP in SQE works */
	rid = ++s->wrid;
	post_ud_recv(s, 0, 100, rid, &L);
	t = post_dgram(r, back, s->qp->qp_num, QKEY, 100, false, PM_POST,
		       SEND_OFF + 4096);
	TR_WAIT(&r->scq, wc, 1, "to a QP in SQE");
	check_send_wc(r, &wc[0], &t);
	TR_WAIT(&s->rcq, wc, 1, "to a QP in SQE");
	check_recv_wc(s, r, &wc[0], rid, &t);
	collect(s, &L, got, TR_GRH + 100, "to a QP in SQE");
	TR_CMP("to a QP in SQE", got + TR_GRH, r->buf + t.soff, 100);
	CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_SQE);
	/* ibv_modify_qp(3): SQE -> RTS, then sending works again */
	CHECK_OK(dt_qp_to_state(s->qp, IBV_QPS_RTS));
	CHECK_EQ(dt_qp_state(s->qp), IBV_QPS_RTS);
	xfer(s, r, ah, 64, false, PM_POST, 0);
	CHECK_OK(ibv_destroy_ah(ah));
	CHECK_OK(ibv_destroy_ah(back));
	printf("  bad lkey: LOC_PROT_ERR, QP in SQE, the rest flushed, "
	       "receives go on, SQE -> RTS sends again: ok\n");
}

/* An AH may be destroyed as soon as the post returned. */
static void ah_destroyed_after_post(struct ud_end *s, struct ud_end *r)
{
	struct ibv_ah *ah = tr_ah_to(s->d, r->d);
	struct rlayout L;
	struct ibv_wc wc;
	struct sent t;
	uint8_t got[TR_GRH + 256];
	uint64_t rid = ++r->wrid;

	post_ud_recv(r, 0, 200, rid, &L);
	t = post_dgram(s, ah, r->qp->qp_num, QKEY, 200, true, PM_POST,
		       SEND_OFF);
	CHECK_OK(ibv_destroy_ah(ah));
	TR_WAIT(&s->scq, &wc, 1, "AH destroyed after post");
	check_send_wc(s, &wc, &t);
	TR_WAIT(&r->rcq, &wc, 1, "AH destroyed after post");
	check_recv_wc(r, s, &wc, rid, &t);
	collect(r, &L, got, TR_GRH + 200, "AH destroyed after post");
	TR_CMP("AH destroyed after post", got + TR_GRH, s->buf + SEND_OFF, 200);
	printf("  AH destroyed right after the post: datagram intact: ok\n");
}

/*
 * A UD QP receives from RTR on (ibv_modify_qp(3): RTR = "ready to
 * receive"); in INIT it takes nothing; a datagram for a QPN nobody has
 * is dropped (rx_no_qp). Posting a send below RTS: EINVAL.
 */
static void states(struct ud_end *s)
{
	struct ud_end r;
	struct tr_qp_cfg c;
	struct ibv_ah *ah = tr_ah_to(s->d, B);
	struct ibv_qp_attr a;
	struct droce_dev_stats b0, b1;
	struct rlayout L;
	struct ibv_wc wc;
	struct sent t;
	uint8_t got[TR_GRH + 64];
	uint64_t rid;
	double end;

	/* an end on B left in INIT */
	memset(&r, 0, sizeof(r));
	r.name = "B.ud-init";
	r.d = B;
	dt_cq_create(B, 16, false, &r.scq);
	dt_cq_create(B, 16, false, &r.rcq);
	tr_qp_cfg_default(&c, IBV_QPT_UD);
	r.qp = tr_qp_create(B, r.scq.cq, r.rcq.cq, &c, &r.cap);
	CHECK_PTR(r.qp);
	r.buf = dt_alloc(BUFSZ);
	r.mr = dt_reg_mr(B->pd, r.buf, BUFSZ, IBV_ACCESS_LOCAL_WRITE);
	CHECK_PTR(r.mr);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qkey = QKEY;
	CHECK_OK(ibv_modify_qp(r.qp, &a, TR_MASK_UD_INIT));
	rid = ++r.wrid;
	post_ud_recv(&r, 0, 32, rid, &L);
	t = post_dgram(s, ah, r.qp->qp_num, QKEY, 32, false, PM_POST, SEND_OFF);
	TR_WAIT(&s->scq, &wc, 1, "to a UD QP in INIT");
	check_send_wc(s, &wc, &t);
	TR_QUIET(&r.rcq, 30, "UD QP in INIT: takes nothing");
	/* RTR: receives (the receive posted in INIT takes it) */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	CHECK_OK(ibv_modify_qp(r.qp, &a, TR_MASK_UD_RTR));
	{
		struct ibv_send_wr wr, *bad = NULL;

		memset(&wr, 0, sizeof(wr));
		wr.opcode = IBV_WR_SEND;
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = s->qp->qp_num;
		wr.wr.ud.remote_qkey = QKEY;
		/* ibv_post_send(3) on a QP below RTS */
		CHECK_RET(ibv_post_send(r.qp, &wr, &bad), EINVAL);
		CHECK(bad == &wr);
	}
	t = post_dgram(s, ah, r.qp->qp_num, QKEY, 32, true, PM_POST, SEND_OFF);
	TR_WAIT(&s->scq, &wc, 1, "to a UD QP in RTR");
	check_send_wc(s, &wc, &t);
	TR_WAIT(&r.rcq, &wc, 1, "UD QP in RTR");
	check_recv_wc(&r, s, &wc, rid, &t);
	collect(&r, &L, got, TR_GRH + 32, "UD QP in RTR");
	TR_CMP("UD QP in RTR", got + TR_GRH, s->buf + SEND_OFF, 32);
	/* a QPN nobody has: dropped at B */
	b0 = tr_stats(B);
	t = post_dgram(s, ah, 0xfff0, QKEY, 32, false, PM_POST, SEND_OFF);
	TR_WAIT(&s->scq, &wc, 1, "to an unknown QPN");
	check_send_wc(s, &wc, &t);
	end = dt_now() + DT_WAIT_S;
	do {
		b1 = tr_stats(B);
	} while (TR_DELTA(b1, b0, rx_no_qp) == 0 && dt_now() < end);
	CHECK_EQ(TR_DELTA(b1, b0, rx_no_qp), 1);
	TR_QUIET(&r.rcq, 10, "to an unknown QPN");
	CHECK_OK(ibv_destroy_ah(ah));
	CHECK_OK(ibv_destroy_qp(r.qp));
	dt_cq_destroy(&r.scq);
	dt_cq_destroy(&r.rcq);
	CHECK_OK(ibv_dereg_mr(r.mr));
	free(r.buf);
	printf("  UD QP in INIT takes nothing, in RTR receives (sending "
	       "refused), unknown QPN dropped (rx_no_qp): ok\n");
}

/* The AH's traffic class is the IPv4 TOS (RoCEv2: the GRH maps onto the
 * IP header), and ibv_init_ah_from_wc gives it back. Non-fatal. */
static void traffic_class(struct ud_end *s, struct ud_end *r)
{
	struct ibv_ah_attr a;
	struct ibv_ah *ah;
	unsigned int before = dt_failures;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.grh.dgid = r->d->gid[1];
	a.grh.sgid_index = 1;
	a.grh.hop_limit = 64;
	a.grh.traffic_class = 0x68;	/* DSCP 26 */
	a.port_num = 1;
	ah = ibv_create_ah(s->d->pd, &a);
	CHECK_PTR(ah);
	{
		char what[] = "traffic class 0x68";
		struct rlayout L;
		struct ibv_wc swc, rwc;
		struct sent t;
		uint8_t got[TR_GRH + 64];
		uint64_t rid = ++r->wrid;

		post_ud_recv(r, 0, 40, rid, &L);
		t = post_dgram(s, ah, r->qp->qp_num, QKEY, 40, false, PM_POST,
			       SEND_OFF);
		TR_WAIT(&s->scq, &swc, 1, what);
		check_send_wc(s, &swc, &t);
		TR_WAIT(&r->rcq, &rwc, 1, what);
		check_recv_wc(r, s, &rwc, rid, &t);
		collect(r, &L, got, TR_GRH + 40, what);
		check_grh(got, ip_of(s->d), ip_of(r->d), 40, false, 0x68, what);
		memset(&a, 0, sizeof(a));
		CHECK_EQ(ibv_init_ah_from_wc(r->d->ctx, 1, &rwc,
					     (struct ibv_grh *)got, &a), 0);
		EXPECT_EQ(a.grh.traffic_class, 0x68);
	}
	CHECK_OK(ibv_destroy_ah(ah));
	printf("  AH traffic class -> IPv4 TOS: %s\n",
	       dt_failures == before ? "ok" : "FAILED");
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	char da[128], db[128];
	struct ud_end a0, b0, l1, l2, wa, wb;
	uint64_t opk;
	struct droce_dev_stats sb0, sb1;
	unsigned int soft_failures;

	dt_watchdog(150);
	snprintf(da, sizeof(da), "ip=198.18.0.1%s%s", argc > 1 ? "," : "",
		 argc > 1 ? argv[1] : "");
	snprintf(db, sizeof(db), "ip=198.18.0.2%s%s", argc > 1 ? "," : "",
		 argc > 1 ? argv[1] : "");
	dt_init(&env, argv[0], da, db);
	dt_set_abort_hook(abort_hook);
	A = &env.dev[0];
	B = &env.dev[1];
	MTU = dt_mtu_bytes(A->port.active_mtu);
	CHECK_EQ(dt_mtu_bytes(B->port.active_mtu), MTU);
	CHECK_CMP(MTU, >=, 256);
	printf("test_ud: devices %s / %s, port active MTU %u\n", da, db, MTU);

	end_create(&a0, "A.ud0", A, false, 0, QKEY);
	end_create(&b0, "B.ud0", B, false, 0, QKEY);

	printf("1. two devices\n");
	matrix(&a0, &b0, false);
	matrix(&b0, &a0, false);
	printf("2. burst\n");
	burst(&a0, &b0);

	printf("3. loopback (two UD QPs on device A)\n");
	end_create(&l1, "A.ud1", A, false, 0, QKEY);
	end_create(&l2, "A.ud2", A, true, 0, QKEY);
	/* ARP for B may still be answered: let the link settle */
	tr_sleep_ms(20);
	opk = tr_port_opackets(A);
	sb0 = tr_stats(B);
	matrix(&l1, &l2, false);
	burst(&l2, &l1);
	sb1 = tr_stats(B);
	CHECK_EQ(tr_port_opackets(A) - opk, 0);		/* nothing left */
	CHECK_EQ(TR_DELTA(sb1, sb0, rx_pkts), 0);	/* nothing reached B */
	CHECK_EQ(TR_DELTA(sb1, sb0, rx_not_roce), 0);
	printf("  loopback: no frame left port %d: ok\n", A->port_id);

	printf("4. ibv_wr_* API\n");
	end_create(&wa, "A.udx", A, true,
		   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM, QKEY);
	end_create(&wb, "B.udx", B, true,
		   IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM, QKEY);
	CHECK(wa.qpx->wr_set_ud_addr != NULL);
	matrix(&wa, &wb, true);
	matrix(&wb, &wa, true);
	/* one batch to two destinations */
	{
		struct ibv_ah *ah1 = tr_ah_to(A, B), *ah2 = tr_ah_to(A, A);
		struct rlayout L1, L2;
		struct ibv_wc wc[2];
		uint64_t r1 = ++wb.wrid, r2 = ++l1.wrid;
		uint8_t got[TR_GRH + 128];

		post_ud_recv(&wb, 0, 100, r1, &L1);
		post_ud_recv(&l1, 1, 60, r2, &L2);
		dt_fill_random(wa.buf, 256);
		ibv_wr_start(wa.qpx);
		wa.qpx->wr_id = 0xb1;
		wa.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(wa.qpx);
		ibv_wr_set_ud_addr(wa.qpx, ah1, wb.qp->qp_num, QKEY);
		ibv_wr_set_sge(wa.qpx, wa.mr->lkey, (uintptr_t)wa.buf, 100);
		wa.qpx->wr_id = 0xb2;
		wa.qpx->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send_imm(wa.qpx, htobe32(0xfeedf00d));
		ibv_wr_set_sge(wa.qpx, wa.mr->lkey, (uintptr_t)wa.buf + 128, 60);
		ibv_wr_set_ud_addr(wa.qpx, ah2, l1.qp->qp_num, QKEY);
		CHECK_OK(ibv_wr_complete(wa.qpx));
		TR_WAIT(&wa.scq, wc, 2, "wr batch");
		{
			struct sent t1 = { .wr_id = 0xb1, .len = 100 };
			struct sent t2 = { .wr_id = 0xb2, .len = 60, .imm = true,
					   .imm_val = 0xfeedf00d };

			check_send_wc(&wa, &wc[0], &t1);
			check_send_wc(&wa, &wc[1], &t2);
			TR_WAIT(&wb.rcq, wc, 1, "wr batch: B");
			check_recv_wc(&wb, &wa, &wc[0], r1, &t1);
			collect(&wb, &L1, got, TR_GRH + 100, "wr batch: B");
			check_grh(got, ip_of(A), ip_of(B), 100, false, 0, "wr batch: B");
			TR_CMP("wr batch: B", got + TR_GRH, wa.buf, 100);
			TR_WAIT(&l1.rcq, wc, 1, "wr batch: A loopback");
			check_recv_wc(&l1, &wa, &wc[0], r2, &t2);
			collect(&l1, &L2, got, TR_GRH + 60, "wr batch: A loopback");
			check_grh(got, ip_of(A), ip_of(A), 60, true, 0, "wr batch: A");
			TR_CMP("wr batch: A", got + TR_GRH, wa.buf + 128, 60);
		}
		CHECK_OK(ibv_destroy_ah(ah1));
		CHECK_OK(ibv_destroy_ah(ah2));
		printf("  one ibv_wr_* batch to two destinations: ok\n");
	}
	wr_too_long(&wa, &wb);

	printf("5. Q_Key\n");
	qkeys(&a0, &b0);
	qkeys(&l1, &l2);
	printf("6. no receive posted\n");
	no_recv(&a0, &b0);
	no_recv(&l2, &l1);
	printf("7. errors\n");
	post_errors(&a0, &b0);
	ah_destroyed_after_post(&a0, &b0);
	ah_destroyed_after_post(&l1, &l2);
	send_queue_error(&a0, &b0);
	states(&a0);
	printf("8. traffic class\n");
	soft_failures = dt_failures;
	traffic_class(&a0, &b0);
	soft_failures = dt_failures - soft_failures;

	end_destroy(&a0);
	end_destroy(&b0);
	end_destroy(&l1);
	end_destroy(&l2);
	end_destroy(&wa);
	end_destroy(&wb);
	dt_fini(&env);
	printf("test_ud: %u datagrams checked, %u failure(s)\n", n_dgrams,
	       dt_failures);
	if (dt_failures) {
		fprintf(stderr, "test_ud: FAILED%s; DROCE_TEST_SEED=%" PRIu64 "\n",
			soft_failures == dt_failures ? " (traffic class only)" : "",
			dt_seed());
		return 1;
	}
	return 0;
}
