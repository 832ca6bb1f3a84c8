/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Thread domains and parent domains (ibv_alloc_td(3),
 * ibv_alloc_parent_domain(3)), as perftest's --no_lock uses them: the
 * errno of each bad call; a parent domain stands for its PD (an MR
 * registered on either serves a QP made on either, an MR of another PD
 * does not: LOC_PROT_ERR); QPs, SRQ-less receive queues and CQs made in
 * a thread domain post and poll without locks, and carry a stream whose
 * every byte is compared; a PD, TD or parent domain still in use cannot
 * be freed (EBUSY), and all of them can once their objects are gone.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "droce.h"
#include "droce_test.h"

#define SLOT 64
#define STREAM 2000

static struct dt_env env;
static struct dt_dev *A, *B;

/* An extended CQ made in parent domain pad (single-threaded, by its TD). */
static struct ibv_cq_ex *cq_in(struct ibv_pd *pad)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = 256,
		.wc_flags = IBV_WC_EX_WITH_BYTE_LEN,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
		.parent_domain = pad,
	};

	return ibv_create_cq_ex(A->ctx, &ca);
}

static void wait_one(struct ibv_cq_ex *cq, uint64_t wr_id,
		     enum ibv_wc_status st)
{
	struct ibv_poll_cq_attr pa = { 0 };
	double t0 = dt_now();
	int r;

	while ((r = ibv_start_poll(cq, &pa)) == ENOENT &&
	       dt_now() - t0 < DT_WAIT_S)
		;
	CHECK_EQ(r, 0);
	if (r)
		return;
	CHECK_EQ(cq->wr_id, wr_id);
	CHECK_EQ(cq->status, st);
	if (st == IBV_WC_SUCCESS)
		CHECK_EQ(ibv_wc_read_opcode(cq), IBV_WC_RDMA_WRITE);
	CHECK_EQ(ibv_next_poll(cq), ENOENT);
	ibv_end_poll(cq);
}

int main(void)
{
	struct ibv_td_init_attr ta = { 0 };
	struct ibv_parent_domain_init_attr pa = { 0 };
	struct ibv_td *td, *td_b;
	struct ibv_pd *pad, *pad_plain, *other_pd;
	struct ibv_cq_ex *scq, *rcq;
	struct dt_cq sb, rb;
	struct ibv_qp *qa, *qb;
	struct ibv_mr *mr_base, *mr_pad, *mr_other, *mr_b;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	uint8_t *src = dt_alloc(1 << 16), *dst = dt_alloc(1 << 16);
	uint8_t *osrc = dt_alloc(4096);

	dt_watchdog(120);
	dt_seed_init();
	dt_init(&env, "test_thread_domain", NULL, NULL);
	A = &env.dev[0];
	B = &env.dev[1];

	/* Bad calls. */
	CHECK_NULL_ERRNO(ibv_alloc_td(A->ctx, NULL), EINVAL);
	ta.comp_mask = 1;
	CHECK_NULL_ERRNO(ibv_alloc_td(A->ctx, &ta), EINVAL);
	ta.comp_mask = 0;
	td = ibv_alloc_td(A->ctx, &ta);
	CHECK_PTR(td);
	td_b = ibv_alloc_td(B->ctx, &ta);
	CHECK_PTR(td_b);
	CHECK_NULL_ERRNO(ibv_alloc_parent_domain(A->ctx, NULL), EINVAL);
	pa.td = td;
	CHECK_NULL_ERRNO(ibv_alloc_parent_domain(A->ctx, &pa), EINVAL);
	pa.pd = B->pd;		/* another device's PD */
	CHECK_NULL_ERRNO(ibv_alloc_parent_domain(A->ctx, &pa), EINVAL);
	pa.pd = A->pd;
	pa.td = td_b;		/* another device's TD */
	CHECK_NULL_ERRNO(ibv_alloc_parent_domain(A->ctx, &pa), EINVAL);
	pa.td = td;
	pa.comp_mask = 1u << 7;
	CHECK_NULL_ERRNO(ibv_alloc_parent_domain(A->ctx, &pa), EOPNOTSUPP);
	pa.comp_mask = IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT;
	pa.pd_context = (void *)0x5eed;
	pad = ibv_alloc_parent_domain(A->ctx, &pa);
	CHECK_PTR(pad);
	CHECK(pad != A->pd);
	CHECK_EQ(pad->context, A->ctx);
	pa.pd = pad;		/* a parent domain's parent domain */
	CHECK_NULL_ERRNO(ibv_alloc_parent_domain(A->ctx, &pa), EINVAL);
	pa.pd = A->pd;
	pa.td = NULL;
	pa.comp_mask = 0;
	pad_plain = ibv_alloc_parent_domain(A->ctx, &pa);	/* no TD */
	CHECK_PTR(pad_plain);
	{
		struct ibv_cq_init_attr_ex ca = {
			.cqe = 16, .comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
			.parent_domain = A->pd,	/* not a parent domain */
		};

		CHECK_NULL_ERRNO(ibv_create_cq_ex(A->ctx, &ca), EINVAL);
		ca.parent_domain = NULL;
		CHECK_NULL_ERRNO(ibv_create_cq_ex(A->ctx, &ca), EINVAL);
	}
	/* In use: EBUSY. */
	CHECK_RET(ibv_dealloc_td(td), EBUSY);
	CHECK_OK(ibv_dealloc_td(td_b));
	other_pd = ibv_alloc_pd(A->ctx);
	CHECK_PTR(other_pd);

	/* QP A in the thread domain, its CQs too; B as usual. */
	scq = cq_in(pad);
	rcq = cq_in(pad);
	CHECK_PTR(scq);
	CHECK_PTR(rcq);
	CHECK_RET(ibv_dealloc_pd(pad), EBUSY);
	CHECK_RET(ibv_dealloc_pd(A->pd), EBUSY);
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 256;
	qc.send_ops_flags = IBV_QP_EX_WITH_RDMA_WRITE;
	qc.pd = pad;
	qa = dt_qp_create(A, ibv_cq_ex_to_cq(scq), ibv_cq_ex_to_cq(rcq), &qc,
			  NULL);
	CHECK_PTR(qa);
	CHECK(qa->pd == pad);
	qc.pd = NULL;
	dt_cq_create(B, 256, false, &sb);
	dt_cq_create(B, 256, false, &rb);
	qb = dt_qp_create(B, sb.cq, rb.cq, &qc, NULL);
	CHECK_PTR(qb);
	dt_conn_cfg_default(&cc);
	dt_connect(A, qa, 100, B, qb, 200, &cc);

	mr_base = dt_reg_mr(A->pd, src, 1 << 15, DT_ACCESS_ALL);
	mr_pad = dt_reg_mr(pad, src + (1 << 15), 1 << 15, DT_ACCESS_ALL);
	mr_other = dt_reg_mr(other_pd, osrc, 4096, DT_ACCESS_ALL);
	mr_b = dt_reg_mr(B->pd, dst, 1 << 16, DT_ACCESS_ALL);
	CHECK_PTR(mr_base);
	CHECK_PTR(mr_pad);
	CHECK_PTR(mr_other);
	CHECK_PTR(mr_b);
	CHECK(mr_pad->pd == pad);
	dt_fill_random(src, 1 << 16);

	/* A stream from both MRs (one signalled in 50), then the bytes. */
	for (uint32_t i = 0; i < STREAM; i++) {
		uint32_t off = (i % 512) * SLOT * 2 % (1 << 16);
		struct ibv_mr *m = off < (1 << 15) ? mr_base : mr_pad;
		bool sig = i % 50 == 49;

		dt_wr_write_one(qa, i, src + off, SLOT, m->lkey,
			  (uintptr_t)dst + off, mr_b->rkey, sig);
		if (sig)
			wait_one(scq, i, IBV_WC_SUCCESS);
	}
	for (uint32_t i = 0; i < 512; i++) {
		uint32_t off = i * SLOT * 2 % (1 << 16);

		if (memcmp(dst + off, src + off, SLOT) != 0) {
			printf("WRITE %u differs\n", i);
			CHECK(!"data");
			break;
		}
	}
	printf("%d WRITEs from a thread domain's QP, MRs on the PD and on the parent domain: data equal\n",
	       STREAM);

	/* An MR of another PD: a local protection error, not a transfer. */
	dt_wr_write_one(qa, 7777, osrc, SLOT, mr_other->lkey, (uintptr_t)dst,
		  mr_b->rkey, true);
	wait_one(scq, 7777, IBV_WC_LOC_PROT_ERR);

	/* Teardown: each in use until what uses it is gone. */
	CHECK_OK(ibv_destroy_qp(qa));
	CHECK_OK(ibv_destroy_qp(qb));
	CHECK_OK(ibv_dereg_mr(mr_pad));
	CHECK_RET(ibv_dealloc_pd(pad), EBUSY);	/* the CQs */
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(scq)));
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(rcq)));
	CHECK_OK(ibv_dealloc_pd(pad));
	CHECK_OK(ibv_dealloc_td(td));
	CHECK_RET(ibv_dealloc_pd(A->pd), EBUSY);	/* pad_plain, MRs */
	CHECK_OK(ibv_dealloc_pd(pad_plain));
	CHECK_OK(ibv_dereg_mr(mr_base));
	CHECK_OK(ibv_dereg_mr(mr_other));
	CHECK_OK(ibv_dereg_mr(mr_b));
	CHECK_OK(ibv_dealloc_pd(other_pd));
	dt_cq_destroy(&sb);
	dt_cq_destroy(&rb);
	free(osrc);
	free(src);
	free(dst);
	return dt_finish(&env);
}
