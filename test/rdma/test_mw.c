/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows and invalidation (ibv_alloc_mw(3), ibv_bind_mw(3),
 * ibv_post_send(3) IBV_WR_BIND_MW / LOCAL_INV / SEND_WITH_INV):
 *  - type 2 bound by a work request, the new rkey from ibv_inc_rkey; the
 *    window's range and rights are what a peer gets, the old rkey is dead;
 *  - remote invalidation by SEND_WITH_INV (IBV_WC_WITH_INV and the rkey in
 *    the receive completion) and local invalidation (IBV_WC_LOCAL_INV):
 *    after either the rkey is refused with a remote access error;
 *  - a type 2 window answers only the QP it is bound to;
 *  - type 1 with ibv_bind_mw() and unbinding;
 *  - a region without MW_BIND cannot be bound (IBV_WC_MW_BIND_ERR), a
 *    region with windows bound cannot be deregistered (EBUSY).
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "droce.h"
#include "droce_test.h"

static struct dt_env env;
static struct dt_dev *A, *B;
static uint8_t *abuf, *bbuf;
static struct ibv_mr *amr, *bmr, *bmr_nobind;

static void pair_open(struct dt_rc_pair *p)
{
	struct dt_conn_cfg cc;

	dt_conn_cfg_default(&cc);
	dt_rc_pair_open(p, A, B, 64, NULL, &cc, NULL, 0x100, 0x200);
}

/* One signalled WR on qp; returns its completion status. */
static enum ibv_wc_status one(struct ibv_qp *qp, struct dt_cq *cq,
			      struct ibv_send_wr *wr, struct ibv_wc *out)
{
	struct ibv_send_wr *bad;
	struct ibv_wc wc;

	wr->send_flags |= IBV_SEND_SIGNALED;
	CHECK_OK(ibv_post_send(qp, wr, &bad));
	CHECK_EQ(dt_wait_wc(cq, &wc, 1, DT_WAIT_S, "one WR"), 1);
	if (out)
		*out = wc;
	return wc.status;
}

static enum ibv_wc_status rdma(struct dt_rc_pair *p, enum ibv_wr_opcode op,
			       uint64_t raddr, uint32_t rkey, uint32_t len)
{
	struct ibv_sge s = { (uintptr_t)abuf, len, amr->lkey };
	struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1, .opcode = op };

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return one(p->qa, &p->sa, &wr, NULL);
}

static enum ibv_wc_status bind2(struct dt_rc_pair *p, struct ibv_mw *mw,
				uint32_t *rkey, struct ibv_mr *mr,
				uint64_t addr, uint64_t len, unsigned int acc)
{
	struct ibv_send_wr wr = { .opcode = IBV_WR_BIND_MW };
	struct ibv_wc wc;
	enum ibv_wc_status st;

	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info.mr = mr;
	wr.bind_mw.bind_info.addr = addr;
	wr.bind_mw.bind_info.length = len;
	wr.bind_mw.bind_info.mw_access_flags = acc;
	st = one(p->qb, &p->sb, &wr, &wc);
	if (st == IBV_WC_SUCCESS) {
		CHECK_EQ(wc.opcode, IBV_WC_BIND_MW);
		mw->rkey = wr.bind_mw.rkey;
		*rkey = mw->rkey;
	}
	return st;
}

static void type2(void)
{
	struct dt_rc_pair p;
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_2);
	uint32_t old, rkey = 0;
	uint64_t win = (uintptr_t)bbuf + 4096;

	CHECK_PTR(mw);
	old = mw->rkey;
	pair_open(&p);
	CHECK_EQ(bind2(&p, mw, &rkey, bmr, win, 4096, IBV_ACCESS_REMOTE_WRITE),
		 IBV_WC_SUCCESS);
	CHECK_NE(rkey, old);
	CHECK_EQ(rkey >> 8, old >> 8);	/* same window, next key */
	memset(abuf, 0x77, 4096);
	memset(bbuf, 0, 3 * 4096);
	CHECK_EQ(rdma(&p, IBV_WR_RDMA_WRITE, win, rkey, 4096), IBV_WC_SUCCESS);
	CHECK(bbuf[4096] == 0x77 && bbuf[2 * 4096 - 1] == 0x77);
	CHECK(bbuf[4095] == 0 && bbuf[2 * 4096] == 0);	/* nothing outside */
	/* a bound type 2 window cannot be bound again */
	CHECK_EQ(bind2(&p, mw, &rkey, bmr, win, 64, IBV_ACCESS_REMOTE_WRITE),
		 IBV_WC_MW_BIND_ERR);
	dt_rc_pair_close(&p);

	pair_open(&p);	/* a window answers only the QP it is bound to */
	CHECK_EQ(rdma(&p, IBV_WR_RDMA_WRITE, win, rkey, 64), IBV_WC_REM_ACCESS_ERR);
	dt_rc_pair_close(&p);
	CHECK_OK(ibv_dealloc_mw(mw));

	/* Bound, then: outside its range, without the right, old rkey. */
	for (int c = 0; c < 3; c++) {
		mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_2);
		CHECK_PTR(mw);
		old = mw->rkey;
		pair_open(&p);
		CHECK_EQ(bind2(&p, mw, &rkey, bmr, win, 4096,
			       IBV_ACCESS_REMOTE_WRITE), IBV_WC_SUCCESS);
		CHECK_EQ(rdma(&p, c == 1 ? IBV_WR_RDMA_READ : IBV_WR_RDMA_WRITE,
			      c == 0 ? win + 4000 : win, c == 2 ? old : rkey, 200),
			 IBV_WC_REM_ACCESS_ERR);
		dt_rc_pair_close(&p);
		CHECK_OK(ibv_dealloc_mw(mw));
	}
	printf("type 2: bind, range, rights, QP binding, stale rkey: ok\n");
}

/* remote: a SEND_WITH_INV of len bytes (more than one packet at MTU 1024
 * from 1025: FIRST, MIDDLE..., LAST_INV), its data compared; else LOCAL_INV. */
static void invalidate(bool remote, uint32_t len)
{
	struct dt_rc_pair p;
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_2);
	uint32_t rkey = 0;
	uint64_t win = (uintptr_t)bbuf + 8192;
	struct ibv_wc wc;

	CHECK_PTR(mw);
	pair_open(&p);
	CHECK_EQ(bind2(&p, mw, &rkey, bmr, win, 4096,
		       IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ),
		 IBV_WC_SUCCESS);
	CHECK_EQ(rdma(&p, IBV_WR_RDMA_READ, win, rkey, 64), IBV_WC_SUCCESS);
	/* while bound, its region cannot go */
	CHECK_EQ(ibv_dereg_mr(bmr), EBUSY);
	if (remote) {
		struct ibv_sge rs = { (uintptr_t)bbuf + 3 * 4096, len, bmr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 9, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge s = { (uintptr_t)abuf, len, amr->lkey };

		for (uint32_t i = 0; i < len; i++)
			abuf[i] = (uint8_t)(i * 7 + len);
		memset(bbuf + 3 * 4096, 0, len + 1);
		struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1,
					  .opcode = IBV_WR_SEND_WITH_INV,
					  .invalidate_rkey = rkey };

		CHECK_OK(ibv_post_recv(p.qb, &rwr, &rbad));
		CHECK_EQ(one(p.qa, &p.sa, &wr, NULL), IBV_WC_SUCCESS);
		CHECK_EQ(dt_wait_wc(&p.rb, &wc, 1, DT_WAIT_S, "SEND_WITH_INV"), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		CHECK_EQ(wc.opcode, IBV_WC_RECV);
		CHECK(wc.wc_flags & IBV_WC_WITH_INV);
		CHECK_EQ(wc.invalidated_rkey, rkey);
		CHECK_EQ(wc.byte_len, len);
		CHECK(memcmp(bbuf + 3 * 4096, abuf, len) == 0);
		CHECK_EQ(bbuf[3 * 4096 + len], 0);
	} else {
		struct ibv_send_wr wr = { .opcode = IBV_WR_LOCAL_INV,
					  .invalidate_rkey = rkey };

		CHECK_EQ(one(p.qb, &p.sb, &wr, &wc), IBV_WC_SUCCESS);
		CHECK_EQ(wc.opcode, IBV_WC_LOCAL_INV);
	}
	CHECK_EQ(rdma(&p, IBV_WR_RDMA_READ, win, rkey, 64), IBV_WC_REM_ACCESS_ERR);
	dt_rc_pair_close(&p);
	CHECK_OK(ibv_dealloc_mw(mw));
	printf("%s invalidation%s: rkey refused afterwards: ok\n",
	       remote ? "remote (SEND_WITH_INV)" : "local (LOCAL_INV)",
	       remote && len > 1024 ? ", a message of several packets" : "");
}

static void type1(void)
{
	struct dt_rc_pair p;
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_1);
	struct ibv_mw_bind b = { .wr_id = 5, .send_flags = IBV_SEND_SIGNALED };
	struct ibv_wc wc;
	uint32_t old;
	uint64_t win = (uintptr_t)bbuf + 16384;

	CHECK_PTR(mw);
	old = mw->rkey;
	pair_open(&p);
	b.bind_info.mr = bmr;
	b.bind_info.addr = win;
	b.bind_info.length = 1024;
	b.bind_info.mw_access_flags = IBV_ACCESS_REMOTE_WRITE;
	CHECK_OK(ibv_bind_mw(p.qb, mw, &b));
	CHECK_EQ(dt_wait_wc(&p.sb, &wc, 1, DT_WAIT_S, "bind type 1"), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(wc.opcode, IBV_WC_BIND_MW);
	CHECK_EQ(wc.wr_id, 5u);
	CHECK_EQ(mw->rkey, ibv_inc_rkey(old));
	CHECK_EQ(rdma(&p, IBV_WR_RDMA_WRITE, win, mw->rkey, 1024), IBV_WC_SUCCESS);
	/* unbind: no region, no length */
	memset(&b.bind_info, 0, sizeof(b.bind_info));
	CHECK_OK(ibv_bind_mw(p.qb, mw, &b));
	CHECK_EQ(dt_wait_wc(&p.sb, &wc, 1, DT_WAIT_S, "unbind type 1"), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK_EQ(rdma(&p, IBV_WR_RDMA_WRITE, win, mw->rkey, 64),
		 IBV_WC_REM_ACCESS_ERR);
	dt_rc_pair_close(&p);
	/* the verbs.h wrapper's own checks */
	b.bind_info.addr = 1;
	CHECK_EQ(ibv_bind_mw(p.qb, mw, &b), EINVAL);
	CHECK_OK(ibv_dealloc_mw(mw));
	printf("type 1: ibv_bind_mw, next rkey, unbind: ok\n");
}

static void no_bind_right(void)
{
	struct dt_rc_pair p;
	struct ibv_mw *mw = ibv_alloc_mw(B->pd, IBV_MW_TYPE_2);
	uint32_t rkey;

	CHECK_PTR(mw);
	pair_open(&p);
	CHECK_EQ(bind2(&p, mw, &rkey, bmr_nobind, (uintptr_t)bbuf, 64,
		       IBV_ACCESS_REMOTE_READ), IBV_WC_MW_BIND_ERR);
	CHECK_EQ(dt_qp_state(p.qb), IBV_QPS_ERR);
	dt_rc_pair_close(&p);
	CHECK_OK(ibv_dealloc_mw(mw));
	printf("region without MW_BIND: IBV_WC_MW_BIND_ERR: ok\n");
}

int main(void)
{
	struct ibv_device_attr da;

	dt_watchdog(120);
	dt_init(&env, "test_mw", NULL, NULL);
	A = &env.dev[0];
	B = &env.dev[1];
	CHECK_OK(ibv_query_device(B->ctx, &da));
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW);
	CHECK(da.device_cap_flags & IBV_DEVICE_MEM_WINDOW_TYPE_2B);
	CHECK(da.max_mw > 0);
	abuf = dt_alloc(1 << 16);
	bbuf = dt_alloc(1 << 16);
	amr = dt_reg_mr(A->pd, abuf, 1 << 16, DT_ACCESS_ALL);
	bmr = dt_reg_mr(B->pd, bbuf, 1 << 16, DT_ACCESS_ALL | IBV_ACCESS_MW_BIND);
	bmr_nobind = dt_reg_mr(B->pd, bbuf, 1 << 16, DT_ACCESS_ALL);
	CHECK_PTR(amr);
	CHECK_PTR(bmr);
	CHECK_PTR(bmr_nobind);
	type2();
	invalidate(true, 16);
	invalidate(true, 3000);
	invalidate(false, 0);
	type1();
	no_bind_right();
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	CHECK_OK(ibv_dereg_mr(bmr_nobind));
	dt_fini(&env);
	free(abuf);
	free(bbuf);
	printf("test_mw: %s\n", dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}
