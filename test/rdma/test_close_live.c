/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_close_live: ibv_close_device() on a context that still has objects.
 * ibv_close_device(3) leaves releasing them to the application; the kernel
 * destroys a closed context's objects anyway, and so must droce: nothing
 * of the context may be reached afterwards (an rkey of it, its QPN), the
 * engine must not touch its memory (the sanitizer pass runs this), and
 * the device's counts and huge-page memory must come back.
 *
 * Each round opens a second context on device A and makes one of every
 * kind of object on it: a thread domain, a parent domain on it, a
 * completion channel, a classic CQ on the channel and an extended one in
 * the parent domain, an SRQ with receives posted, an RC QP connected to
 * one on device B and one on the SRQ, two MRs (through the PD and the
 * parent domain), memory windows of both types and an AH. Traffic runs
 * both ways over the connected pair; the channel's event is taken and not
 * acknowledged, and 16 WRITEs from the closing side are left in flight.
 * Then ibv_close_device() must return 0 at once, and:
 * - B's WRITE to the closed context's MR completes with
 *   IBV_WC_RETRY_EXC_ERR, and the region's bytes and canaries stay;
 * - the DPDK heap holds what it held before the round;
 * - the first context on A still carries a checked WRITE.
 * At the end dt_fini() checks droce_cleanup() finds no object left.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "droce_test.h"
#include "dt_heap.h"

#define ROUNDS		3
#define LEN		4096
#define CANARY		64
#define NWR		16
#define WR_LEN		256

static struct dt_env env;

static void abort_hook(void)
{
	dt_dump_stats(&env);
}

static void post_write(struct ibv_qp *qp, uint64_t wr_id, void *src,
		       uint32_t lkey, uint64_t raddr, uint32_t rkey)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)src, .length = WR_LEN, .lkey = lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = wr_id, .sg_list = &sge, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED,
		.wr.rdma = { .remote_addr = raddr, .rkey = rkey },
	}, *bad = NULL;

	CHECK_OK(ibv_post_send(qp, &wr, &bad));
}

/* n signalled WRITEs' completions on c, in order, all successful */
static void wait_writes(struct dt_cq *c, struct ibv_qp *qp, int n)
{
	struct ibv_wc wc[NWR];

	CHECK_EQ(dt_wait_wc(c, wc, n, DT_WAIT_S, "WRITE completions"), n);
	for (int i = 0; i < n; i++) {
		CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
		CHECK_EQ(wc[i].opcode, IBV_WC_RDMA_WRITE);
		CHECK_EQ(wc[i].wr_id, (uint64_t)i);
		CHECK_EQ(wc[i].qp_num, qp->qp_num);
	}
}

static void round_once(int r, size_t *heap_before)
{
	struct dt_dev *B = &env.dev[1], d2;
	struct ibv_td_init_attr tda = { 0 };
	struct ibv_parent_domain_init_attr pda = { 0 };
	struct ibv_cq_init_attr_ex cqa = { 0 };
	struct ibv_srq_init_attr sa = { 0 };
	struct ibv_qp_init_attr qsa = { 0 };
	struct ibv_ah_attr aha = { 0 };
	struct ibv_td *td;
	struct ibv_pd *pdom;
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq, *evcq;
	struct ibv_cq_ex *cqx;
	struct ibv_srq *srq;
	struct ibv_qp *qa, *qs, *qb;
	struct ibv_mr *mr2, *mr2p, *mrb, *src2mr;
	struct ibv_mw *mw1, *mw2;
	struct ibv_ah *ah;
	struct dt_cq scq_b, rcq_b, cq_a;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	struct ibv_wc wc;
	uint8_t *buf2, *bufb, *src2, *expect;
	uint64_t raddr;
	uint32_t rkey;
	void *evctx;

	if (heap_before)
		*heap_before = dt_heap_bytes();
	dt_dev_open(&d2, env.dev[0].dev);

	td = ibv_alloc_td(d2.ctx, &tda);
	CHECK_PTR(td);
	pda.pd = d2.pd;
	pda.td = td;
	pdom = ibv_alloc_parent_domain(d2.ctx, &pda);
	CHECK_PTR(pdom);
	ch = ibv_create_comp_channel(d2.ctx);
	CHECK_PTR(ch);
	cq = ibv_create_cq(d2.ctx, 64, NULL, ch, 0);
	CHECK_PTR(cq);
	cqa.cqe = 64;
	cqa.wc_flags = IBV_WC_EX_WITH_BYTE_LEN;
	cqa.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD;
	cqa.parent_domain = pdom;
	cqx = ibv_create_cq_ex(d2.ctx, &cqa);
	CHECK_PTR(cqx);
	sa.attr.max_wr = 16;
	sa.attr.max_sge = 1;
	srq = ibv_create_srq(d2.pd, &sa);
	CHECK_PTR(srq);

	/* Memory: A's second context's region (canaries around it), its
	 * source, B's region */
	buf2 = dt_alloc(LEN + 2 * CANARY);
	bufb = dt_alloc(LEN);
	src2 = dt_alloc(LEN);
	expect = malloc(LEN + 2 * CANARY);
	CHECK_PTR(expect);
	memset(buf2, 0xc5, LEN + 2 * CANARY);
	dt_fill_random(src2, LEN);
	mr2 = dt_reg_mr(d2.pd, buf2 + CANARY, LEN, DT_ACCESS_ALL);
	CHECK_PTR(mr2);
	mr2p = dt_reg_mr(pdom, buf2 + CANARY, LEN / 2, DT_ACCESS_ALL);
	CHECK_PTR(mr2p);
	src2mr = dt_reg_mr(d2.pd, src2, LEN, IBV_ACCESS_LOCAL_WRITE);
	CHECK_PTR(src2mr);
	mrb = dt_reg_mr(B->pd, bufb, LEN, DT_ACCESS_ALL);
	CHECK_PTR(mrb);
	mw1 = ibv_alloc_mw(d2.pd, IBV_MW_TYPE_1);
	CHECK_PTR(mw1);
	mw2 = ibv_alloc_mw(d2.pd, IBV_MW_TYPE_2);
	CHECK_PTR(mw2);
	aha.is_global = 1;
	aha.grh.dgid = B->gid[1];
	aha.grh.sgid_index = 1;
	aha.grh.hop_limit = 64;
	aha.port_num = 1;
	ah = ibv_create_ah(d2.pd, &aha);
	CHECK_PTR(ah);

	/* QPs: qa (classic CQ on the channel, the parent domain's extended
	 * CQ) connected to qb; qs on the SRQ, never connected */
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 2 * NWR;
	qa = dt_qp_create(&d2, cq, ibv_cq_ex_to_cq(cqx), &qc, NULL);
	CHECK_PTR(qa);
	qsa.send_cq = cq;
	qsa.recv_cq = cq;
	qsa.srq = srq;
	qsa.cap.max_send_wr = 4;
	qsa.cap.max_send_sge = 1;
	qsa.qp_type = IBV_QPT_RC;
	qs = ibv_create_qp(d2.pd, &qsa);
	CHECK_PTR(qs);
	for (int i = 0; i < 8; i++) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)src2, .length = 64,
			.lkey = src2mr->lkey,
		};
		struct ibv_recv_wr rw = {
			.wr_id = (uint64_t)i, .sg_list = &sge, .num_sge = 1,
		}, *bad = NULL;

		CHECK_OK(ibv_post_srq_recv(srq, &rw, &bad));
	}
	dt_cq_create(B, 4 * NWR, false, &scq_b);
	dt_cq_create(B, 4 * NWR, false, &rcq_b);
	qb = dt_qp_create(B, scq_b.cq, rcq_b.cq, &qc, NULL);
	CHECK_PTR(qb);
	dt_conn_cfg_default(&cc);
	cc.timeout = 10;	/* 4 ms */
	cc.retry_cnt = 1;
	dt_connect(&d2, qa, 0x1000u + (uint32_t)r, B, qb, 0x2000u, &cc);

	/* Both ways work before the close: B writes the region, the closing
	 * side writes B's, its completions raise the channel's event */
	CHECK_OK(ibv_req_notify_cq(cq, 0));
	for (int i = 0; i < NWR; i++)
		post_write(qb, (uint64_t)i, bufb, mrb->lkey,
			   (uintptr_t)mr2->addr + (uint64_t)i * WR_LEN,
			   mr2->rkey);
	wait_writes(&scq_b, qb, NWR);
	for (int i = 0; i < NWR; i++)
		post_write(qa, (uint64_t)i, src2 + i * WR_LEN, src2mr->lkey,
			   (uintptr_t)bufb + (uint64_t)i * WR_LEN, mrb->rkey);
	memset(&cq_a, 0, sizeof(cq_a));
	cq_a.cq = cq;
	wait_writes(&cq_a, qa, NWR);
	CHECK_OK(memcmp(bufb, src2, NWR * WR_LEN));
	/* The event is taken and never acknowledged (ibv_get_cq_event(3)):
	 * destroying the CQ would wait for the acknowledgement; a closing
	 * context must not. */
	CHECK_OK(ibv_get_cq_event(ch, &evcq, &evctx));
	CHECK(evcq == cq);

	/* The region as it must stay from here on */
	memset(buf2 + CANARY, 0x3a, LEN);
	memcpy(expect, buf2, LEN + 2 * CANARY);
	/* WRITEs left in flight as the context goes */
	for (int i = 0; i < NWR; i++)
		post_write(qa, (uint64_t)i, src2, src2mr->lkey,
			   (uintptr_t)bufb, mrb->rkey);

	/* (the objects are gone with the context: what B was told of the
	 * region is all that is left of it) */
	raddr = (uintptr_t)mr2->addr;
	rkey = mr2->rkey;
	CHECK_OK(ibv_close_device(d2.ctx));

	/* B's WRITE to the closed context's QP and region: nothing answers */
	post_write(qb, 77, bufb, mrb->lkey, raddr, rkey);
	CHECK_EQ(dt_wait_wc(&scq_b, &wc, 1, DT_WAIT_S, "B's last WRITE"), 1);
	CHECK_EQ(wc.wr_id, 77);
	CHECK_EQ(wc.status, IBV_WC_RETRY_EXC_ERR);
	CHECK_EQ(wc.qp_num, qb->qp_num);
	CHECK_OK(memcmp(buf2, expect, LEN + 2 * CANARY));
	printf("round %d: closed with 15 objects, 16 WRITEs in flight and an "
	       "unacknowledged CQ event; B's WRITE to it: %s\n", r,
	       dt_wc_status_name(wc.status));

	CHECK_OK(ibv_destroy_qp(qb));
	dt_cq_destroy(&scq_b);
	dt_cq_destroy(&rcq_b);
	CHECK_OK(ibv_dereg_mr(mrb));
	if (heap_before)
		EXPECT_EQ(dt_heap_bytes(), *heap_before);
	free(buf2);
	free(bufb);
	free(src2);
	free(expect);
}

int main(int argc, char **argv)
{
	struct dt_rc_pair p;
	struct dt_conn_cfg cc;
	struct ibv_mr *ma, *mb;
	uint8_t *a, *b;
	size_t heap;

	(void)argc;
	dt_seed_init();
	dt_watchdog(120);
	dt_set_abort_hook(abort_hook);
	dt_init(&env, argv[0], NULL, NULL);

	/* The first round leaves what stays for good (pools, caches); the
	 * heap must come back to its level after each later one. */
	round_once(0, NULL);
	for (int r = 1; r < ROUNDS; r++)
		round_once(r, &heap);

	/* The device's first context still works */
	a = dt_alloc(LEN);
	b = dt_alloc(LEN);
	dt_fill_random(a, LEN);
	ma = dt_reg_mr(env.dev[0].pd, a, LEN, DT_ACCESS_ALL);
	CHECK_PTR(ma);
	mb = dt_reg_mr(env.dev[1].pd, b, LEN, DT_ACCESS_ALL);
	CHECK_PTR(mb);
	dt_conn_cfg_default(&cc);
	dt_rc_pair_open(&p, &env.dev[0], &env.dev[1], 16, NULL, &cc, NULL,
			0x10, 0x20);
	dt_rdma_checked(&p, IBV_WR_RDMA_WRITE, 1, a, LEN, ma->lkey, b,
			mb->rkey, "WRITE on the first context");
	dt_rc_pair_close(&p);
	CHECK_OK(ibv_dereg_mr(ma));
	CHECK_OK(ibv_dereg_mr(mb));
	free(a);
	free(b);
	return dt_finish(&env);
}
