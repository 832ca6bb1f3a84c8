/* SPDX-License-Identifier: BSD-3-Clause */
/* Helpers of the transport tests, see tr_util.h. */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <time.h>

#include <rte_ethdev.h>

#include "tr_util.h"

void tr_qp_cfg_default(struct tr_qp_cfg *c, enum ibv_qp_type type)
{
	memset(c, 0, sizeof(*c));
	c->type = type;
	c->max_send_wr = 64;
	c->max_recv_wr = 64;
	c->max_send_sge = 4;
	c->max_recv_sge = 4;
}

struct ibv_qp *tr_qp_create(struct dt_dev *d, struct ibv_cq *scq,
			    struct ibv_cq *rcq, const struct tr_qp_cfg *c,
			    struct ibv_qp_cap *cap_out)
{
	struct ibv_pd *pd = c->pd ? c->pd : d->pd;
	struct ibv_qp *qp;

	if (c->send_ops_flags) {
		struct ibv_qp_init_attr_ex a;

		memset(&a, 0, sizeof(a));
		a.qp_type = c->type;
		a.send_cq = scq;
		a.recv_cq = rcq;
		a.srq = c->srq;
		a.cap.max_send_wr = c->max_send_wr;
		a.cap.max_recv_wr = c->srq ? 0 : c->max_recv_wr;
		a.cap.max_send_sge = c->max_send_sge;
		a.cap.max_recv_sge = c->srq ? 0 : c->max_recv_sge;
		a.cap.max_inline_data = c->max_inline_data;
		a.sq_sig_all = c->sq_sig_all;
		a.comp_mask = IBV_QP_INIT_ATTR_PD |
			      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.pd = pd;
		a.send_ops_flags = c->send_ops_flags;
		qp = ibv_create_qp_ex(d->ctx, &a);
		if (qp && cap_out)
			*cap_out = a.cap;
	} else {
		struct ibv_qp_init_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_type = c->type;
		a.send_cq = scq;
		a.recv_cq = rcq;
		a.srq = c->srq;
		a.cap.max_send_wr = c->max_send_wr;
		a.cap.max_recv_wr = c->srq ? 0 : c->max_recv_wr;
		a.cap.max_send_sge = c->max_send_sge;
		a.cap.max_recv_sge = c->srq ? 0 : c->max_recv_sge;
		a.cap.max_inline_data = c->max_inline_data;
		a.sq_sig_all = c->sq_sig_all;
		qp = ibv_create_qp(pd, &a);
		if (qp && cap_out)
			*cap_out = a.cap;
	}
	return qp;
}

void tr_ud_up(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qkey = qkey;
	CHECK_OK(ibv_modify_qp(qp, &a, TR_MASK_UD_INIT));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	CHECK_OK(ibv_modify_qp(qp, &a, TR_MASK_UD_RTR));
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = sq_psn & 0xffffff;
	CHECK_OK(ibv_modify_qp(qp, &a, TR_MASK_UD_RTS));
	CHECK_EQ(dt_qp_state(qp), IBV_QPS_RTS);
}

static void uc_rtr(struct ibv_qp *qp, const union ibv_gid *dgid,
		   uint32_t dqpn, uint32_t rq_psn, enum ibv_mtu mtu)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dqpn;
	a.rq_psn = rq_psn & 0xffffff;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = *dgid;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	CHECK_OK(ibv_modify_qp(qp, &a, TR_MASK_UC_RTR));
}

void tr_uc_connect(struct dt_dev *da, struct ibv_qp *qa, uint32_t psn_a,
		   struct dt_dev *db, struct ibv_qp *qb, uint32_t psn_b,
		   enum ibv_mtu mtu, int access)
{
	struct ibv_qp *q[2] = { qa, qb };
	struct ibv_qp_attr a;

	for (int i = 0; i < 2; i++) {
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.port_num = 1;
		a.qp_access_flags = (unsigned int)access;
		CHECK_OK(ibv_modify_qp(q[i], &a, TR_MASK_UC_INIT));
	}
	uc_rtr(qa, &db->gid[1], qb->qp_num, psn_b, mtu);
	uc_rtr(qb, &da->gid[1], qa->qp_num, psn_a, mtu);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = psn_a & 0xffffff;
	CHECK_OK(ibv_modify_qp(qa, &a, TR_MASK_UC_RTS));
	a.sq_psn = psn_b & 0xffffff;
	CHECK_OK(ibv_modify_qp(qb, &a, TR_MASK_UC_RTS));
}

struct ibv_ah *tr_ah_to(struct dt_dev *from, struct dt_dev *to)
{
	struct ibv_ah_attr a;
	struct ibv_ah *ah;

	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.grh.dgid = to->gid[1];
	a.grh.sgid_index = 1;
	a.grh.hop_limit = 64;
	a.port_num = 1;
	ah = ibv_create_ah(from->pd, &a);
	CHECK_PTR(ah);
	CHECK(ah->context == from->ctx);
	CHECK(ah->pd == from->pd);
	return ah;
}

void tr_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge,
		  int n)
{
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = n;
	CHECK_OK(ibv_post_recv(qp, &wr, &bad));
}

void tr_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id,
		      struct ibv_sge *sge, int n)
{
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = n;
	CHECK_OK(ibv_post_srq_recv(srq, &wr, &bad));
}

const char *tr_event_name(enum ibv_event_type t)
{
	return ibv_event_type_str(t);
}

bool tr_async_wait(struct ibv_context *ctx, int timeout_ms,
		   struct ibv_async_event *ev)
{
	struct pollfd pfd = { .fd = ctx->async_fd, .events = POLLIN };
	double deadline = dt_now() + timeout_ms / 1000.0;
	int r;

	for (;;) {
		int left = (int)((deadline - dt_now()) * 1000.0);

		if (left < 0)
			left = 0;
		r = poll(&pfd, 1, left);
		if (r > 0)
			break;
		if (r < 0 && errno == EINTR)
			continue;
		CHECK_CMP(r, >=, 0);
		return false;
	}
	CHECK(pfd.revents & POLLIN);
	memset(ev, 0, sizeof(*ev));
	CHECK_EQ(ibv_get_async_event(ctx, ev), 0);
	return true;
}

void tr_async_expect_none_at(const char *file, int line,
			     struct ibv_context *ctx, int ms, const char *what)
{
	struct ibv_async_event ev;

	if (!tr_async_wait(ctx, ms, &ev))
		return;
	dt_report(file, line, "%s: unexpected async event %s (%d), "
		  "element %p", what, tr_event_name(ev.event_type),
		  ev.event_type, (void *)ev.element.qp);
	ibv_ack_async_event(&ev);
}

bool tr_cmp_at(const char *file, int line, const char *what,
	       const uint8_t *got, const uint8_t *exp, size_t len)
{
	size_t i, bad = 0, first = 0;

	if (memcmp(got, exp, len) == 0)
		return true;
	for (i = 0; i < len; i++)
		if (got[i] != exp[i] && bad++ == 0)
			first = i;
	dt_report(file, line, "%s: %zu of %zu bytes differ, first at offset "
		  "%zu: got 0x%02x, expected 0x%02x", what, bad, len, first,
		  got[first], exp[first]);
	return false;
}

bool tr_all_at(const char *file, int line, const char *what,
	       const uint8_t *p, size_t len, uint8_t c)
{
	for (size_t i = 0; i < len; i++)
		if (p[i] != c) {
			dt_report(file, line, "%s: byte %zu is 0x%02x, "
				  "expected 0x%02x (untouched)", what, i, p[i],
				  c);
			return false;
		}
	return true;
}

struct droce_dev_stats tr_stats(struct dt_dev *d)
{
	struct droce_dev_stats s;

	memset(&s, 0, sizeof(s));
	CHECK_EQ(droce_dev_stats_get(d->ctx, &s), 0);
	return s;
}

void tr_wait_n_at(const char *file, int line, struct dt_cq *c,
		  struct ibv_wc *wc, int n, const char *what)
{
	int got = dt_wait_wc(c, wc, n, DT_WAIT_S, what);

	if (got != n) {
		dt_report(file, line, "%s: %d of %d completions", what, got, n);
		for (int i = 0; i < got; i++)
			dt_print_wc(stderr, "  got", &wc[i]);
		dt_abort();
	}
}

void tr_sleep_ms(int ms)
{
	struct timespec ts = { .tv_sec = ms / 1000,
			       .tv_nsec = (long)(ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

void tr_quiet_at(const char *file, int line, struct dt_cq *c, int ms,
		 const char *what)
{
	double end = dt_now() + ms / 1000.0;
	int n = 0;

	while (dt_now() < end) {
		n += dt_cq_drain_unexpected(c, what);
		tr_sleep_ms(1);
	}
	n += dt_cq_drain_unexpected(c, what);
	if (n)
		dt_report(file, line, "%s: %d unexpected completion(s)", what,
			  n);
}

uint64_t tr_port_opackets(struct dt_dev *d)
{
	struct rte_eth_stats s;

	memset(&s, 0, sizeof(s));
	CHECK_EQ(rte_eth_stats_get((uint16_t)d->port_id, &s), 0);
	return s.opackets;
}

void tr_make_layout(uint8_t *buf, uint32_t lkey, size_t bufsz, uint32_t base,
		    uint32_t total, uint32_t max_pieces, struct tr_layout *L)
{
	int n = total ? (int)dt_rand_range(1, RTE_MIN(RTE_MIN(max_pieces, (uint32_t)TR_PIECES), total))
		      : (int)dt_rand_range(0, 1);
	uint32_t pos = base + (uint32_t)dt_rand_range(0, 32), left = total;

	memset(L, 0, sizeof(*L));
	L->start = base;
	for (int i = 0; i < n; i++) {
		uint32_t piece = i == n - 1 ? left :
			(uint32_t)dt_rand_range(1, left - (uint32_t)(n - 1 - i));

		L->off[i] = pos;
		L->sge[i].addr = (uintptr_t)(buf + pos);
		L->sge[i].length = piece;
		L->sge[i].lkey = lkey;
		pos += piece + (uint32_t)dt_rand_range(0, 32);
		left -= piece;
	}
	L->n = n;
	L->end = pos + 32;
	CHECK_CMP(L->end, <=, bufsz);
}

void tr_put_stream(uint8_t *buf, const struct tr_layout *L, const uint8_t *data)
{
	uint32_t o = 0;

	for (int i = 0; i < L->n; i++) {
		memcpy(buf + L->off[i], data + o, L->sge[i].length);
		o += L->sge[i].length;
	}
}

void tr_check_scatter(const uint8_t *buf, const struct tr_layout *L,
		      const uint8_t *exp, uint32_t used, uint8_t canary,
		      const char *what)
{
	uint32_t o = 0, prev = L->start;

	for (int i = 0; i < L->n; i++) {
		uint32_t len = L->sge[i].length;
		uint32_t take = o >= used ? 0 : RTE_MIN(len, used - o);

		TR_ALL(what, buf + prev, L->off[i] - prev, canary);
		TR_CMP(what, buf + L->off[i], exp + o, take);
		TR_ALL(what, buf + L->off[i] + take, len - take, canary);
		o += len;
		prev = L->off[i] + len;
	}
	TR_ALL(what, buf + prev, L->end - prev, canary);
	if (o < used)
		DT_FAIL_(0, "%s: layout holds %u of %u bytes", what, o, used);
}
