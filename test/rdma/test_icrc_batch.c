/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ICRCs of header-image frames computed at the tx burst (icrc_batch=1,
 * the default; drivers/rdma/ethroce/eth_tx.c): A batches, B (icrc_batch=0)
 * computes each frame's as it builds it. Each side's receive path checks
 * every frame the other sends, so a wrong ICRC is a frame dropped and
 * counted (rx_icrc_err), then a retransmission.
 *
 * 1. One shape: windows of 32 WRITEs of 64 bytes, A to B (where the CPU
 *    runs the 512-bit kernel, four frames share each multiplication).
 * 2. Mixed windows both ways: WRITEs and SENDs of 1..300 bytes, READs
 *    (their requests are image frames), FETCH_ADDs, all unsignalled but the
 *    last: every byte compared, every receive completion and the
 *    signalled one checked field by field, each FETCH_ADD's old value.
 * 3. The counters: A's tx_icrc_batched covers most of its image frames
 *    (the first after each burst is computed at once) and tx_icrc_lanes
 *    half of the 64-byte WRITEs at least on such a CPU (0 elsewhere); B's
 *    both 0; no rx_icrc_err, no retransmission on either side.
 * 4. icrc_batch=2 and icrc_batch=x are refused.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "droce.h"
#include "droce_test.h"

#define BUF		(1u << 20)
#define MAXW		64
#define RECV_SZ		512

struct side {
	struct dt_dev *dev;
	struct ibv_qp *qp;
	struct dt_cq *scq, *rcq;
	uint8_t *buf;		/* registered: sources, targets, receives */
	struct ibv_mr *mr;
};

enum { OP_WRITE, OP_SEND, OP_READ, OP_FADD };
static const enum ibv_wr_opcode wr_op[] = {
	IBV_WR_RDMA_WRITE, IBV_WR_SEND, IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_FETCH_AND_ADD
};

/* buf layout: [0, 256K) sources; [256K, 512K) WRITE and READ targets;
 * [512K, 512K + MAXW * RECV_SZ) receive buffers; the last 4 KiB: the
 * FETCH_ADD counter (8 bytes) and old values */
#define TGT		(BUF / 4)
#define RCV		(BUF / 2)
#define CNT		(BUF - 4096)

static uint64_t read_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, sizeof(v));
	return v;
}

static void stats(struct dt_dev *d, struct droce_dev_stats *st)
{
	CHECK_OK(droce_dev_stats_get(d->ctx, st));
}

static void post_recvs(struct side *y, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge sg = { (uintptr_t)(y->buf + RCV + i * RECV_SZ),
				      RECV_SZ, y->mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 1000 + (uint64_t)i,
					  .sg_list = &sg, .num_sge = 1 }, *bad;

		CHECK_OK(ibv_post_recv(y->qp, &wr, &bad));
	}
}

/*
 * One window of n operations from x to y, the last signalled; mixed
 * false: 64-byte WRITEs only. Returns the frames x built from its header
 * image (every operation here is one such frame).
 */
static int window(struct side *x, struct side *y, int n, bool mixed,
		  uint32_t *fadd_base)
{
	int op[MAXW], sends = 0;
	uint32_t len[MAXW], off[MAXW], sent_off[MAXW];
	uint64_t cnt0 = read_u64(y->buf + CNT);
	uint32_t fadds = 0;
	struct ibv_wc wc;
	struct dt_wc_exp e;

	memset(y->buf + TGT, 0, BUF / 4);
	memset(x->buf + TGT, 0, BUF / 4);
	for (int i = 0; i < n; i++) {
		op[i] = mixed ? (int)dt_rand_range(0, 3) : OP_WRITE;
		len[i] = mixed ? (uint32_t)dt_rand_range(1, 300) : 64;
		off[i] = (uint32_t)i * 512;
		if (op[i] == OP_SEND)
			sends++;
	}
	post_recvs(y, sends);
	dt_fill_random(x->buf, TGT);
	dt_fill_random(y->buf, TGT);
	for (int i = 0, s = 0; i < n; i++) {
		unsigned int fl = i == n - 1 ? IBV_SEND_SIGNALED : 0;
		uint64_t id = 77000 + (uint64_t)i;

		switch (op[i]) {
		case OP_WRITE:
			dt_post_one(x->qp, IBV_WR_RDMA_WRITE, id, x->buf + off[i],
				    len[i], x->mr->lkey, y->buf + TGT + off[i],
				    y->mr->rkey, fl);
			break;
		case OP_SEND:
			sent_off[s++] = off[i];
			dt_post_one(x->qp, IBV_WR_SEND, id, x->buf + off[i],
				    len[i], x->mr->lkey, NULL, 0, fl);
			break;
		case OP_READ:
			dt_post_one(x->qp, IBV_WR_RDMA_READ, id,
				    x->buf + TGT + off[i], len[i], x->mr->lkey,
				    y->buf + off[i], y->mr->rkey, fl);
			break;
		default:
			dt_post_one(x->qp, IBV_WR_ATOMIC_FETCH_AND_ADD, id,
				    x->buf + CNT + 8 + 8 * fadds, 8, x->mr->lkey,
				    y->buf + CNT, y->mr->rkey, fl);
			fadds++;
			break;
		}
	}
	CHECK_EQ(dt_wait_wc(x->scq, &wc, 1, 10.0, "the window's last"), 1);
	e = dt_exp_send(77000 + (uint64_t)(n - 1), wr_op[op[n - 1]],
			op[n - 1] == OP_FADD ? 8 : len[n - 1], x->qp->qp_num);
	CHECK_WC(&wc, &e);
	/* nothing else completes on x's send queue (all unsignalled) */
	CHECK_EQ(ibv_poll_cq(x->scq->cq, 1, &wc), 0);
	for (int s = 0, i = 0; s < sends; s++, i++) {
		while (op[i] != OP_SEND)
			i++;
		CHECK_EQ(dt_wait_wc(y->rcq, &wc, 1, 10.0, "a receive"), 1);
		e = dt_exp_recv(1000 + (uint64_t)s, IBV_WR_SEND, len[i],
				y->qp->qp_num, x->qp->qp_num, 0);
		CHECK_WC(&wc, &e);
	}
	for (int i = 0, s = 0; i < n; i++) {
		switch (op[i]) {
		case OP_WRITE:
			CHECK(memcmp(y->buf + TGT + off[i], x->buf + off[i],
				     len[i]) == 0);
			break;
		case OP_SEND:
			CHECK(memcmp(y->buf + RCV + s * RECV_SZ,
				     x->buf + sent_off[s], len[i]) == 0);
			s++;
			break;
		case OP_READ:
			CHECK(memcmp(x->buf + TGT + off[i], y->buf + off[i],
				     len[i]) == 0);
			break;
		default:
			break;
		}
	}
	for (uint32_t f = 0; f < fadds; f++)
		CHECK_EQ(read_u64(x->buf + CNT + 8 + 8 * f), cnt0 + f);
	CHECK_EQ(read_u64(y->buf + CNT), cnt0 + fadds);
	*fadd_base += fadds;
	return n;
}

static bool lanes_expected(void)
{
	static const char *const off[] = { "DROCE_NO_CLMUL", "DROCE_NO_VCLMUL",
					   "DROCE_NO_AVX512" };

	for (size_t i = 0; i < sizeof(off) / sizeof(off[0]); i++) {
		const char *v = getenv(off[i]);

		if (v != NULL && v[0] == '1')
			return false;
	}
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") &&
	       __builtin_cpu_supports("avx512bw") &&
	       __builtin_cpu_supports("vpclmulqdq") &&
	       __builtin_cpu_supports("pclmul");
}

int main(void)
{
	struct dt_env env;
	struct dt_rc_pair rp;
	struct dt_conn_cfg cc;
	struct dt_qp_cfg qc;
	struct droce_dev_stats a0, a1, b0, b1;
	struct side A, B;
	uint32_t fadds = 0;
	int a_frames = 0, b_frames = 0;

	dt_watchdog(120);
	dt_seed_init();
	dt_init(&env, "test_icrc_batch", "ip=198.18.0.1,mtu=1024",
		"ip=198.18.0.2,mtu=1024,icrc_batch=0");
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 128;
	qc.max_recv_wr = 128;
	qc.sq_sig_all = 0;
	dt_conn_cfg_default(&cc);
	cc.access |= IBV_ACCESS_REMOTE_ATOMIC;
	dt_rc_pair_open(&rp, &env.dev[0], &env.dev[1], 256, &qc, &cc, NULL,
			(uint32_t)dt_rand_range(0, 0xffffff),
			(uint32_t)dt_rand_range(0, 0xffffff));
	A = (struct side){ &env.dev[0], rp.qa, &rp.sa, &rp.ra, dt_alloc(BUF),
			   NULL };
	B = (struct side){ &env.dev[1], rp.qb, &rp.sb, &rp.rb, dt_alloc(BUF),
			   NULL };
	A.mr = dt_reg_mr(env.dev[0].pd, A.buf, BUF, DT_ACCESS_ALL |
			 IBV_ACCESS_REMOTE_ATOMIC);
	B.mr = dt_reg_mr(env.dev[1].pd, B.buf, BUF, DT_ACCESS_ALL |
			 IBV_ACCESS_REMOTE_ATOMIC);
	CHECK_PTR(A.mr);
	CHECK_PTR(B.mr);
	stats(A.dev, &a0);
	stats(B.dev, &b0);

	for (int w = 0; w < 60; w++)
		a_frames += window(&A, &B, 32, false, &fadds);
	for (int w = 0; w < 120; w++) {
		int n = (int)dt_rand_range(8, MAXW);

		if (w & 1)
			b_frames += window(&B, &A, n, true, &fadds);
		else
			a_frames += window(&A, &B, n, true, &fadds);
	}

	stats(A.dev, &a1);
	stats(B.dev, &b1);
	printf("A (icrc_batch=1): %d image frames, %" PRIu64 " ICRCs at the "
	       "burst, %" PRIu64 " four a register; B (icrc_batch=0): %d, "
	       "%" PRIu64 "; FETCH_ADDs %u\n", a_frames,
	       a1.tx_icrc_batched - a0.tx_icrc_batched,
	       a1.tx_icrc_lanes - a0.tx_icrc_lanes, b_frames,
	       b1.tx_icrc_batched - b0.tx_icrc_batched, fadds);
	/* every request A sent was an image frame, each but the first after
	 * a burst left to the burst (so were A's READ responses and atomic
	 * answers under 512 bytes) */
	CHECK(a1.tx_icrc_batched - a0.tx_icrc_batched >= (uint64_t)a_frames / 2);
	CHECK(a1.tx_icrc_lanes <= a1.tx_icrc_batched);
	if (lanes_expected())
		CHECK(a1.tx_icrc_lanes - a0.tx_icrc_lanes >= 60 * 32 / 2);
	else
		CHECK_EQ(a1.tx_icrc_lanes - a0.tx_icrc_lanes, 0u);
	CHECK_EQ(b1.tx_icrc_batched - b0.tx_icrc_batched, 0u);
	CHECK_EQ(b1.tx_icrc_lanes - b0.tx_icrc_lanes, 0u);
	CHECK_EQ(a1.rx_icrc_err - a0.rx_icrc_err, 0u);
	CHECK_EQ(b1.rx_icrc_err - b0.rx_icrc_err, 0u);
	CHECK_EQ(a1.retransmits - a0.retransmits, 0u);
	CHECK_EQ(b1.retransmits - b0.retransmits, 0u);

	CHECK(droce_create_ring_pair("ip=198.18.2.1,icrc_batch=2", NULL) < 0);
	CHECK(droce_create_ring_pair("ip=198.18.2.1,icrc_batch=x", NULL) < 0);

	CHECK_OK(ibv_dereg_mr(A.mr));
	CHECK_OK(ibv_dereg_mr(B.mr));
	dt_rc_pair_close(&rp);
	free(A.buf);
	free(B.buf);
	if (dt_failures)
		dt_dump_stats(&env);
	return dt_finish(&env);
}
