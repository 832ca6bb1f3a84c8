/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Zero-copy transmit (zc_min=): payloads leave as external mbufs pointing
 * into the application's registered memory.
 *
 * 1. Data: WRITEs and SENDs of random lengths (one and several SGEs, some
 *    packets crossing an SGE boundary and so copied) arrive byte for byte,
 *    and most packets were sent zero-copy (tx_zc).
 * 2. Dereg in flight: the peer's port holds every received frame for
 *    HOLD_US (lib/impair rx delay), so a 1 MiB WRITE's frames, pointing
 *    into the source region, sit in the peer's hands when ibv_dereg_mr is
 *    called. dereg must wait for them; the region is then made
 *    inaccessible (mprotect PROT_NONE): any later read of it by anyone is
 *    a SIGSEGV and fails the test.
 * 3. The same with ibv_rereg_mr changing the translation.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "droce.h"
#include "droce_test.h"

#define HOLD_US		20000
#define BIG		(1u << 20)

struct rig {
	struct dt_env env;
	struct dt_cq sa, ra, sb, rb;
	struct ibv_qp *qa, *qb;
};

static uint64_t zc_count(struct dt_dev *d)
{
	struct droce_dev_stats st;

	CHECK_OK(droce_dev_stats_get(d->ctx, &st));
	return st.tx_zc;
}

static void *map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	return p;
}

static void post_write(struct ibv_qp *qp, struct ibv_sge *sg, int nsge,
		       uint64_t raddr, uint32_t rkey, uint64_t id)
{
	struct ibv_send_wr wr = { .wr_id = id, .sg_list = sg, .num_sge = nsge,
				  .opcode = IBV_WR_RDMA_WRITE,
				  .send_flags = IBV_SEND_SIGNALED }, *bad;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	CHECK_OK(ibv_post_send(qp, &wr, &bad));
}

static void data(struct rig *r)
{
	struct dt_dev *A = &r->env.dev[0], *B = &r->env.dev[1];
	uint8_t *src = dt_alloc(2 * BIG), *dst = dt_alloc(2 * BIG);
	struct ibv_mr *ms = dt_reg_mr(A->pd, src, 2 * BIG, DT_ACCESS_ALL);
	struct ibv_mr *md = dt_reg_mr(B->pd, dst, 2 * BIG, DT_ACCESS_ALL);
	uint64_t z0 = zc_count(A);
	struct ibv_wc wc;

	CHECK_PTR(ms);
	CHECK_PTR(md);
	for (int it = 0; it < 40; it++) {
		uint32_t len = (uint32_t)dt_rand_range(1, BIG - 1);
		uint32_t off = (uint32_t)dt_rand_range(0, BIG - 1);

		int nsge = (int)dt_rand_range(1, 4);
		struct ibv_sge sg[4];
		uint32_t left = len, at = off;
		struct ibv_recv_wr rw = { .wr_id = 7, .num_sge = 1 }, *rbad;
		struct ibv_sge rs = { (uintptr_t)dst + BIG, len, md->lkey };
		bool send = it & 1;

		dt_fill_random(src, 2 * BIG);
		memset(dst, 0, 2 * BIG);
		for (int i = 0; i < nsge; i++) {
			uint32_t n = i + 1 == nsge ? left :
				     (uint32_t)dt_rand_range(0, left);

			sg[i].addr = (uintptr_t)src + at;
			sg[i].length = n;
			sg[i].lkey = ms->lkey;
			at += n + 64;	/* non-contiguous pieces */
			left -= n;
		}
		if (at > 2 * BIG) {
			off = 0;
			at = 0;
			for (int i = 0; i < nsge; i++) {
				sg[i].addr = (uintptr_t)src + at;
				at += sg[i].length + 64;
			}
		}
		if (send) {
			struct ibv_send_wr wr = { .wr_id = (uint64_t)it,
				.sg_list = sg, .num_sge = nsge,
				.opcode = IBV_WR_SEND,
				.send_flags = IBV_SEND_SIGNALED }, *bad;

			rw.sg_list = &rs;
			CHECK_OK(ibv_post_recv(r->qb, &rw, &rbad));
			CHECK_OK(ibv_post_send(r->qa, &wr, &bad));
		} else {
			post_write(r->qa, sg, nsge, (uintptr_t)dst, md->rkey,
				   (uint64_t)it);
		}
		CHECK_EQ(dt_wait_wc(&r->sa, &wc, 1, 10.0, "zc send"), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
		if (send) {
			CHECK_EQ(dt_wait_wc(&r->rb, &wc, 1, 10.0, "zc recv"), 1);
			CHECK_EQ(wc.status, IBV_WC_SUCCESS);
			CHECK_EQ(wc.byte_len, len);
		}
		/* byte for byte, and nothing past the end */
		for (int i = 0, o = 0; i < nsge; o += (int)sg[i].length, i++) {
			const uint8_t *d = send ? dst + BIG : dst;

			if (memcmp(d + o, (const void *)(uintptr_t)sg[i].addr,
				   sg[i].length) != 0)
				DT_FAIL_(1, "iteration %d (%s, %u bytes, %d SGEs): piece %d differs",
					 it, send ? "SEND" : "WRITE", len, nsge, i);
		}
		CHECK_EQ((send ? dst + BIG : dst)[len], 0);
	}
	printf("data: 40 WRITE/SEND ok, %" PRIu64 " frames zero-copy\n",
	       zc_count(A) - z0);
	CHECK(zc_count(A) - z0 > 40);
	CHECK_OK(ibv_dereg_mr(ms));
	CHECK_OK(ibv_dereg_mr(md));
	free(src);
	free(dst);
}

/* A 1 MiB WRITE, then dereg (or rereg) of its source once frames are in
 * the peer's delay line; the source made inaccessible right after. */
static void in_flight(struct rig *r, bool rereg)
{
	struct dt_dev *A = &r->env.dev[0], *B = &r->env.dev[1];
	uint8_t *src = map(BIG), *other = map(4096);
	uint8_t *dst = dt_alloc(BIG);
	struct ibv_mr *ms = dt_reg_mr(A->pd, src, BIG, DT_ACCESS_ALL);
	struct ibv_mr *md = dt_reg_mr(B->pd, dst, BIG, DT_ACCESS_ALL);
	struct ibv_sge sg = { (uintptr_t)src, BIG, 0 };
	uint64_t z0 = zc_count(A);
	struct ibv_wc wc;
	double t0, t_dereg;

	CHECK_PTR(ms);
	CHECK_PTR(md);
	sg.lkey = ms->lkey;
	memset(src, 0xa5, BIG);
	post_write(r->qa, &sg, 1, (uintptr_t)dst, md->rkey, 1);
	t0 = dt_now();
	while (zc_count(A) - z0 < 16)
		CHECK(dt_now() - t0 < 5.0);
	t0 = dt_now();
	if (rereg)
		CHECK_OK(ibv_rereg_mr(ms, IBV_REREG_MR_CHANGE_TRANSLATION, NULL,
				      other, 4096, 0));
	else
		CHECK_OK(ibv_dereg_mr(ms));
	t_dereg = dt_now() - t0;
	/* from here on any access to the old range is a SIGSEGV */
	CHECK_OK(mprotect(src, BIG, PROT_NONE));
	/* The WRITE ends either way: whole (every frame was out) or failed
	 * locally (the key went away mid-message). */
	CHECK_EQ(dt_wait_wc(&r->sa, &wc, 1, 10.0, "write across dereg"), 1);
	printf("%s with %" PRIu64 " zero-copy frames out: returned after %.1f ms; WRITE status %s\n",
	       rereg ? "rereg_mr" : "dereg_mr", zc_count(A) - z0,
	       t_dereg * 1e3, ibv_wc_status_str(wc.status));
	/* The peer held them HOLD_US: dereg cannot have returned sooner
	 * than the first of them was consumed. */
	CHECK(t_dereg > HOLD_US * 1e-6 / 4);
	/* let the peer's delay line empty, then reset both QPs (the WRITE
	 * may have failed half way) for what follows */
	for (t0 = dt_now(); dt_now() - t0 < 3 * HOLD_US * 1e-6;)
		ibv_poll_cq(r->sb.cq, 0, &wc);
	CHECK_OK(dt_qp_to_state(r->qa, IBV_QPS_RESET));
	CHECK_OK(dt_qp_to_state(r->qb, IBV_QPS_RESET));
	if (rereg)
		CHECK_OK(ibv_dereg_mr(ms));
	CHECK_OK(ibv_dereg_mr(md));
	CHECK_OK(munmap(src, BIG));
	CHECK_OK(munmap(other, 4096));
	free(dst);
}

static void connect_rig(struct rig *r)
{
	struct dt_conn_cfg cc;
	struct dt_dev *A = &r->env.dev[0], *B = &r->env.dev[1];

	dt_conn_cfg_default(&cc);
	cc.mtu = IBV_MTU_4096;
	dt_connect(A, r->qa, 100, B, r->qb, 200, &cc);
}

int main(void)
{
	struct rig r;
	struct dt_qp_cfg qc;

	dt_watchdog(120);
	dt_seed_init();
	dt_init(&r.env, "test_zc_tx", "ip=198.18.0.1,mtu=4096,zc_min=1024",
		"ip=198.18.0.2,mtu=4096");
	dt_cq_create(&r.env.dev[0], 64, false, &r.sa);
	dt_cq_create(&r.env.dev[0], 64, false, &r.ra);
	dt_cq_create(&r.env.dev[1], 64, false, &r.sb);
	dt_cq_create(&r.env.dev[1], 64, false, &r.rb);
	dt_qp_cfg_default(&qc);
	qc.max_send_sge = 4;
	qc.max_recv_sge = 4;
	r.qa = dt_qp_create(&r.env.dev[0], r.sa.cq, r.ra.cq, &qc, NULL);
	r.qb = dt_qp_create(&r.env.dev[1], r.sb.cq, r.rb.cq, &qc, NULL);
	CHECK_PTR(r.qa);
	CHECK_PTR(r.qb);
	connect_rig(&r);
	data(&r);
	/* from here the peer holds what it receives */
	CHECK_OK(droce_dev_impair(r.env.dev[1].ctx, "rx_delay_us=20000"));
	in_flight(&r, false);
	connect_rig(&r);
	in_flight(&r, true);
	CHECK_OK(ibv_destroy_qp(r.qa));
	CHECK_OK(ibv_destroy_qp(r.qb));
	dt_cq_destroy(&r.sa);
	dt_cq_destroy(&r.ra);
	dt_cq_destroy(&r.sb);
	dt_cq_destroy(&r.rb);
	dt_fini(&r.env);
	printf("test_zc_tx: %s\n", dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}
