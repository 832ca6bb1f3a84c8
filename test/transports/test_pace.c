/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet pacing: ibv_modify_qp_rate_limit() and IBV_QP_RATE_LIMIT.
 *
 * 1. What the device reports (packet_pacing_caps) and the documented
 *    errors (EINVAL for a rate outside the caps, a burst too long, a
 *    comp_mask bit, the attribute in a transition that does not take it).
 * 2. RC WRITEs, UC SENDs and UD SENDs on a paced QP: every byte and every
 *    completion checked, and the run no shorter than the rate allows.
 *    Only that bound is asserted (a busy machine makes a run longer, never
 *    shorter), with a loose upper one (10x) so that a limiter that never
 *    lets go also fails.
 * 3. The rate changed in RTS (ibv_modify_qp, RTS -> RTS) and removed (0:
 *    the QP no longer waits); ibv_query_qp reports it.
 * 4. The same over a lossy link (B drops 4 % of the requests it gets):
 *    every byte lands, retransmissions are paced too.
 * 5. READs from a paced QP: its responses go at its rate.
 * 6. A QP moved to ERR and destroyed while it waits on the pacing wheel
 *    (1 kbit/s): its WRITE flushed, nothing else touched.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "tr_util.h"

#define QKEY 0x11111111u
/* Frame bytes of a packet beyond its payload and extended headers over
 * IPv4 without VLAN (Ethernet, IP, UDP, BTH, ICRC); a paced QP is charged
 * whole frames, extended headers included. */
#define OVH 58
#define RETH 16
#define AETH 4
#define DETH 8

static struct dt_env env;
static struct dt_dev *A, *B;

static struct droce_qp_stats qstats(struct ibv_qp *qp)
{
	struct droce_qp_stats s;

	CHECK_OK(droce_qp_stats_get(qp, &s));
	return s;
}

/* The shortest time `bytes` of frames may take at `kbps` after a burst of
 * `burst` bytes and one more packet of `pkt` (the clock lets one out ahead). */
static double min_time(uint64_t bytes, uint32_t kbps, uint32_t burst,
		       uint32_t pkt)
{
	double b = (double)bytes - burst - pkt;

	return b > 0 ? b * 8 / (kbps * 1000.0) : 0;
}

/* upper: also no slower than 10x (no limiter that never lets go); not
 * over a lossy link, where a lost last frame waits out an ACK timeout */
static void check_time_at(const char *what, double t, double tmin, bool upper)
{
	printf("  %s: %.3f s, at least %.3f s by the rate (%.2fx)\n", what, t,
	       tmin, tmin > 0 ? t / tmin : 0);
	/* (the engine's clock is the TSC at the rate DPDK found for it,
	 * which may be a little off in a VM: 3 % of slack; no limiter at
	 * all is 100x off) */
	CHECK(t >= tmin * 0.97);
	if (upper)
		CHECK(t <= tmin * 10 + 0.5);
}

static void check_time(const char *what, double t, double tmin)
{
	check_time_at(what, t, tmin, true);
}

static void caps_and_errors(void)
{
	struct ibv_device_attr_ex ax;
	struct ibv_qp_rate_limit_attr rl;
	struct dt_rc_pair rp;
	struct dt_conn_cfg cc;
	struct ibv_qp_attr qa;
	struct ibv_qp_init_attr ia;

	printf("1. caps and errors\n");
	memset(&ax, 0, sizeof(ax));
	CHECK_OK(ibv_query_device_ex(A->ctx, NULL, &ax));
	CHECK_EQ(ax.packet_pacing_caps.qp_rate_limit_min, 1u);
	CHECK_EQ(ax.packet_pacing_caps.qp_rate_limit_max, 100000000u);
	CHECK_EQ(ax.packet_pacing_caps.supported_qpts,
		 1u << IBV_QPT_RC | 1u << IBV_QPT_UC | 1u << IBV_QPT_UD);

	dt_conn_cfg_default(&cc);
	dt_rc_pair_open(&rp, A, B, 16, NULL, NULL, NULL, 0, 0);
	memset(&rl, 0, sizeof(rl));
	CHECK_EQ(ibv_modify_qp_rate_limit(rp.qa, NULL), EINVAL);
	rl.rate_limit = 100000001;
	CHECK_EQ(ibv_modify_qp_rate_limit(rp.qa, &rl), EINVAL);
	rl.rate_limit = 1000;
	rl.comp_mask = 1;
	CHECK_EQ(ibv_modify_qp_rate_limit(rp.qa, &rl), EINVAL);
	rl.comp_mask = 0;
	rl.max_burst_sz = (16u << 20) + 1;
	CHECK_EQ(ibv_modify_qp_rate_limit(rp.qa, &rl), EINVAL);
	rl.max_burst_sz = 16u << 20;
	CHECK_OK(ibv_modify_qp_rate_limit(rp.qa, &rl));	/* in RESET: kept */
	memset(&qa, 0, sizeof(qa));
	CHECK_OK(ibv_query_qp(rp.qa, &qa, IBV_QP_RATE_LIMIT, &ia));
	CHECK_EQ(qa.rate_limit, 1000u);
	rl.rate_limit = 0;
	CHECK_OK(ibv_modify_qp_rate_limit(rp.qa, &rl));

	/* RESET -> INIT does not take the attribute (nor INIT -> RTR). */
	dt_attr_init(&qa, &cc);
	qa.rate_limit = 1000;
	CHECK_EQ(ibv_modify_qp(rp.qa, &qa, DT_MASK_INIT | IBV_QP_RATE_LIMIT),
		 EINVAL);
	CHECK_EQ(dt_qp_state(rp.qa), IBV_QPS_RESET);
	CHECK_OK(dt_qp_to_init(rp.qa, &cc));
	CHECK_OK(dt_qp_to_init(rp.qb, &cc));
	dt_attr_rtr(&qa, &cc, &B->gid[1], rp.qb->qp_num, 0);
	qa.rate_limit = 1000;
	CHECK_EQ(ibv_modify_qp(rp.qa, &qa, DT_MASK_RTR | IBV_QP_RATE_LIMIT),
		 EINVAL);
	CHECK_EQ(dt_qp_state(rp.qa), IBV_QPS_INIT);
	CHECK_OK(dt_qp_to_rtr(rp.qa, &cc, &B->gid[1], rp.qb->qp_num, 0));
	/* RTR -> RTS takes it; a rate beyond the caps is refused there too. */
	dt_attr_rts(&qa, &cc, 0);
	qa.rate_limit = 100000001;
	CHECK_EQ(ibv_modify_qp(rp.qa, &qa, DT_MASK_RTS | IBV_QP_RATE_LIMIT),
		 EINVAL);
	qa.rate_limit = 2500;
	CHECK_OK(ibv_modify_qp(rp.qa, &qa, DT_MASK_RTS | IBV_QP_RATE_LIMIT));
	memset(&qa, 0, sizeof(qa));
	CHECK_OK(ibv_query_qp(rp.qa, &qa, IBV_QP_RATE_LIMIT, &ia));
	CHECK_EQ(qa.rate_limit, 2500u);
	CHECK_EQ(qa.qp_state, IBV_QPS_RTS);
	dt_rc_pair_close(&rp);
}

/* RC: WRITEs of `len` bytes, n of them, posted at once. */
static double rc_writes(struct dt_rc_pair *rp, uint8_t *src, uint8_t *dst,
			struct ibv_mr *ms, struct ibv_mr *md, uint32_t len,
			int n, uint32_t mtu, uint64_t *charged)
{
	struct ibv_wc wc[64];
	double t0;
	int got = 0;

	dt_fill_random(src, (size_t)len * n);
	memset(dst, 0, (size_t)len * n);
	t0 = dt_now();
	for (int i = 0; i < n; i++)
		dt_post_one(rp->qa, IBV_WR_RDMA_WRITE, (uint64_t)i,
			    src + (size_t)i * len, len, ms->lkey,
			    dst + (size_t)i * len, md->rkey, IBV_SEND_SIGNALED);
	while (got < n) {
		int k = dt_wait_wc(&rp->sa, wc, 1, 30, "paced WRITE");

		if (k != 1)
			break;
		struct dt_wc_exp e = dt_exp_send((uint64_t)got,
						 IBV_WR_RDMA_WRITE, len,
						 rp->qa->qp_num);
		CHECK_WC(&wc[0], &e);
		got++;
	}
	CHECK_EQ(got, n);
	CHECK(memcmp(src, dst, (size_t)len * n) == 0);
	*charged = (uint64_t)n * (len + ((len + mtu - 1) / mtu) * OVH + RETH);
	return dt_now() - t0;
}

static void rc_paced(void)
{
	enum { LEN = 16384, N = 48 };
	uint8_t *src = dt_alloc((size_t)LEN * N), *dst = dt_alloc((size_t)LEN * N);
	struct ibv_mr *ms = dt_reg_mr(A->pd, src, (size_t)LEN * N, DT_ACCESS_ALL);
	struct ibv_mr *md = dt_reg_mr(B->pd, dst, (size_t)LEN * N, DT_ACCESS_ALL);
	struct ibv_qp_rate_limit_attr rl = { .rate_limit = 40000,
					     .max_burst_sz = 8192 };
	struct droce_qp_stats q0, q1, b0, b1;
	struct ibv_qp_init_attr ia;
	struct dt_rc_pair rp;
	struct dt_conn_cfg cc;
	struct ibv_qp_attr qa;
	uint32_t mtu = 1024;
	uint64_t bytes;
	double t;

	printf("2. RC WRITE, 40 Mbit/s, bursts of 8 KiB\n");
	CHECK_PTR(ms);
	CHECK_PTR(md);
	dt_conn_cfg_default(&cc);
	cc.mtu = IBV_MTU_1024;
	dt_rc_pair_open(&rp, A, B, 64, NULL, &cc, NULL, 0x10, 0x20);
	CHECK_OK(ibv_modify_qp_rate_limit(rp.qa, &rl));
	q0 = qstats(rp.qa);
	b0 = qstats(rp.qb);
	t = rc_writes(&rp, src, dst, ms, md, LEN, N, mtu, &bytes);
	q1 = qstats(rp.qa);
	b1 = qstats(rp.qb);
	check_time("768 KiB", t, min_time(bytes, rl.rate_limit, 8192, mtu + OVH));
	printf("  waits %" PRIu64 "\n", q1.pace_waits - q0.pace_waits);
	CHECK(q1.pace_waits - q0.pace_waits >= 10);
	CHECK_EQ(b1.pace_waits - b0.pace_waits, 0u);	/* the peer is not paced */

	printf("3. the rate changed in RTS: 20 Mbit/s, the default burst\n");
	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_RTS;
	qa.rate_limit = 20000;
	CHECK_OK(ibv_modify_qp(rp.qa, &qa, IBV_QP_STATE | IBV_QP_RATE_LIMIT));
	memset(&qa, 0, sizeof(qa));
	CHECK_OK(ibv_query_qp(rp.qa, &qa, IBV_QP_RATE_LIMIT, &ia));
	CHECK_EQ(qa.rate_limit, 20000u);
	t = rc_writes(&rp, src, dst, ms, md, LEN, N / 2, mtu, &bytes);
	/* the default burst: 64 us at the rate, at least two frames */
	check_time("384 KiB", t, min_time(bytes, 20000, 2 * (mtu + 78), mtu + OVH));

	printf("   and removed (0)\n");
	qa.qp_state = IBV_QPS_RTS;
	qa.rate_limit = 0;
	CHECK_OK(ibv_modify_qp(rp.qa, &qa, IBV_QP_STATE | IBV_QP_RATE_LIMIT));
	q0 = qstats(rp.qa);
	t = rc_writes(&rp, src, dst, ms, md, LEN, N, mtu, &bytes);
	q1 = qstats(rp.qa);
	printf("  768 KiB unpaced: %.3f s, waits %" PRIu64 "\n", t,
	       q1.pace_waits - q0.pace_waits);
	CHECK_EQ(q1.pace_waits - q0.pace_waits, 0u);

	printf("4. paced over a lossy link: 4 %% of the requests B receives dropped\n");
	{
		char imp[96];
		struct droce_dev_stats a0, a1;

		rl.rate_limit = 40000;
		rl.max_burst_sz = 8192;
		CHECK_OK(ibv_modify_qp_rate_limit(rp.qa, &rl));
		snprintf(imp, sizeof(imp), "seed=%" PRIu64 ",rx_drop=0.04,match=requests",
			 dt_seed());
		CHECK_OK(droce_dev_impair(B->ctx, imp));
		a0 = tr_stats(A);
		q0 = qstats(rp.qa);
		t = rc_writes(&rp, src, dst, ms, md, LEN, N / 3, mtu, &bytes);
		q1 = qstats(rp.qa);
		a1 = tr_stats(A);
		CHECK_OK(droce_dev_impair(B->ctx, "rx_drop=0"));
		/* retransmitted frames are paced too: the bound still holds */
		check_time_at("256 KiB, lossy", t, min_time(bytes, rl.rate_limit,
							    8192, mtu + OVH), false);
		printf("  retransmits %" PRIu64 ", waits %" PRIu64 "\n",
		       TR_DELTA(a1, a0, retransmits), q1.pace_waits - q0.pace_waits);
		CHECK(TR_DELTA(a1, a0, retransmits) > 0);
		CHECK(q1.pace_waits > q0.pace_waits);
	}

	printf("5. READs from a paced peer: B's QP answers at 40 Mbit/s\n");
	{
		struct ibv_qp_rate_limit_attr off = { .rate_limit = 0 };
		struct ibv_wc wc;
		struct droce_qp_stats b0r, b1r;
		enum { RN = 16 };
		double t0;
		int got = 0;

		CHECK_OK(ibv_modify_qp_rate_limit(rp.qa, &off));
		rl.rate_limit = 40000;
		rl.max_burst_sz = 8192;
		CHECK_OK(ibv_modify_qp_rate_limit(rp.qb, &rl));
		dt_fill_random(dst, (size_t)LEN * RN);
		memset(src, 0, (size_t)LEN * RN);
		b0r = qstats(rp.qb);
		q0 = qstats(rp.qa);
		t0 = dt_now();
		for (int i = 0; i < RN; i++)
			dt_post_one(rp.qa, IBV_WR_RDMA_READ, (uint64_t)i,
				    src + (size_t)i * LEN, LEN, ms->lkey,
				    dst + (size_t)i * LEN, md->rkey,
				    IBV_SEND_SIGNALED);
		while (got < RN && dt_wait_wc(&rp.sa, &wc, 1, 30, "READ from a paced peer") == 1) {
			struct dt_wc_exp e = dt_exp_send((uint64_t)got, IBV_WR_RDMA_READ,
							 LEN, rp.qa->qp_num);

			CHECK_WC(&wc, &e);
			got++;
		}
		t = dt_now() - t0;
		CHECK_EQ(got, RN);
		CHECK(memcmp(src, dst, (size_t)LEN * RN) == 0);
		b1r = qstats(rp.qb);
		q1 = qstats(rp.qa);
		/* (an AETH in the first and the last response) */
		bytes = (uint64_t)RN * (LEN + ((LEN + mtu - 1) / mtu) * OVH +
					2 * AETH);
		check_time("256 KiB of READ responses", t,
			   min_time(bytes, rl.rate_limit, 8192, mtu + OVH));
		printf("  the responder's waits %" PRIu64 "\n",
		       b1r.pace_waits - b0r.pace_waits);
		CHECK(b1r.pace_waits - b0r.pace_waits >= 10);
		CHECK_EQ(q1.pace_waits - q0.pace_waits, 0u);	/* the reader is not paced */
		CHECK_OK(ibv_modify_qp_rate_limit(rp.qb, &off));
	}

	printf("6. 64-byte WRITEs at 4 Mbit/s: the RETH is 16 of each frame's 138 bytes\n");
	{
		enum { SN = 1000, WIN = 32 };
		struct ibv_qp_rate_limit_attr small = { .rate_limit = 4000,
			.max_burst_sz = 1024, .typical_pkt_sz = 64 + OVH + RETH };
		struct ibv_wc wc[WIN];
		int posted = 0, done = 0;
		double t0;

		CHECK_OK(ibv_modify_qp_rate_limit(rp.qa, &small));
		dt_fill_random(src, (size_t)64 * SN);
		memset(dst, 0, (size_t)64 * SN);
		q0 = qstats(rp.qa);
		t0 = dt_now();
		while (done < SN) {
			while (posted < SN && posted - done < WIN) {
				dt_post_one(rp.qa, IBV_WR_RDMA_WRITE,
					    (uint64_t)posted, src + 64 * posted,
					    64, ms->lkey, dst + 64 * posted,
					    md->rkey, IBV_SEND_SIGNALED);
				posted++;
			}
			/* (a window at a time: 32 frames take 9 ms at the
			 * rate, the ACK of the last ~50 us) */
			int k = dt_wait_wc(&rp.sa, wc, posted - done, 30,
					   "64-byte WRITEs");

			if (k <= 0)
				break;
			for (int i = 0; i < k; i++, done++) {
				struct dt_wc_exp e = dt_exp_send((uint64_t)done,
					IBV_WR_RDMA_WRITE, 64, rp.qa->qp_num);

				CHECK_WC(&wc[i], &e);
			}
		}
		t = dt_now() - t0;
		q1 = qstats(rp.qa);
		CHECK_EQ(done, SN);
		CHECK(memcmp(src, dst, (size_t)64 * SN) == 0);
		bytes = (uint64_t)SN * (64 + OVH + RETH);
		/* (without the RETH charged it ran 16/138 fast: 0.88x) */
		check_time("1000 x 64 B", t, min_time(bytes, small.rate_limit,
						      small.max_burst_sz,
						      small.typical_pkt_sz));
		CHECK(q1.pace_waits - q0.pace_waits >= SN / 4);
	}

	printf("7. ERR and destroy while waiting (1 kbit/s)\n");
	rl.rate_limit = 1;
	rl.max_burst_sz = 0;
	CHECK_OK(ibv_modify_qp_rate_limit(rp.qa, &rl));
	q0 = qstats(rp.qa);
	/* the first packet leaves (the clock starts), the second waits ~8 s */
	dt_post_one(rp.qa, IBV_WR_RDMA_WRITE, 7, src, 4 * mtu, ms->lkey, dst,
		    md->rkey, IBV_SEND_SIGNALED);
	for (int i = 0; i < 200; i++) {
		q1 = qstats(rp.qa);
		if (q1.pace_waits > q0.pace_waits)
			break;
		tr_sleep_ms(5);
	}
	CHECK_EQ(q1.pace_waits - q0.pace_waits, 1u);
	CHECK_EQ(tr_stats(A).eng_paced, 1u);
	CHECK_OK(dt_qp_to_state(rp.qa, IBV_QPS_ERR));
	{
		struct ibv_wc wc;
		struct dt_wc_exp e = dt_exp_err(7, IBV_WC_WR_FLUSH_ERR,
						rp.qa->qp_num);

		CHECK_EQ(dt_wait_wc(&rp.sa, &wc, 1, 5, "flushed WRITE"), 1);
		CHECK_WC(&wc, &e);
	}
	CHECK_EQ(tr_stats(A).eng_paced, 1u);	/* still waiting, in ERR */
	dt_rc_pair_close(&rp);	/* destroyed on the pacing wheel: off it */
	CHECK_EQ(tr_stats(A).eng_paced, 0u);
	CHECK_OK(ibv_dereg_mr(ms));
	CHECK_OK(ibv_dereg_mr(md));
	free(src);
	free(dst);
}

/* UC SEND or UD SEND of len bytes, n of them, paced at kbps. */
static void datagrams(enum ibv_qp_type type, uint32_t kbps, uint32_t len,
		      int n)
{
	struct tr_qp_cfg qc;
	struct dt_cq sa, ra, sb, rb;
	struct ibv_qp *qa, *qb;
	struct ibv_ah *ah = NULL;
	uint32_t slot = len + (type == IBV_QPT_UD ? TR_GRH : 0);
	uint8_t *src = dt_alloc((size_t)len * n), *dst = dt_alloc((size_t)slot * n);
	struct ibv_mr *ms = dt_reg_mr(A->pd, src, (size_t)len * n, DT_ACCESS_ALL);
	struct ibv_mr *md = dt_reg_mr(B->pd, dst, (size_t)slot * n, DT_ACCESS_ALL);
	struct ibv_qp_rate_limit_attr rl = { .rate_limit = kbps };
	struct droce_qp_stats q0, q1;
	struct ibv_wc wc;
	uint64_t bytes;
	double t0, t;
	int sent = 0, got = 0;

	printf("%s. %s SEND of %u bytes, %u kbit/s\n",
	       type == IBV_QPT_UD ? "8" : "9", type == IBV_QPT_UD ? "UD" : "UC",
	       len, kbps);
	CHECK_PTR(ms);
	CHECK_PTR(md);
	dt_cq_create(A, 2 * n, false, &sa);
	dt_cq_create(A, 2 * n, false, &ra);
	dt_cq_create(B, 2 * n, false, &sb);
	dt_cq_create(B, 2 * n, false, &rb);
	tr_qp_cfg_default(&qc, type);
	qc.max_send_wr = (uint32_t)n;
	qc.max_recv_wr = (uint32_t)n;
	qa = tr_qp_create(A, sa.cq, ra.cq, &qc, NULL);
	qb = tr_qp_create(B, sb.cq, rb.cq, &qc, NULL);
	CHECK_PTR(qa);
	CHECK_PTR(qb);
	if (type == IBV_QPT_UD) {
		tr_ud_up(qa, QKEY, 1);
		tr_ud_up(qb, QKEY, 2);
		ah = tr_ah_to(A, B);
	} else {
		tr_uc_connect(A, qa, 1, B, qb, 2, IBV_MTU_1024, DT_ACCESS_ALL);
	}
	CHECK_OK(ibv_modify_qp_rate_limit(qa, &rl));
	for (int i = 0; i < n; i++) {
		struct ibv_sge s = { (uintptr_t)(dst + (size_t)i * slot), slot,
				     md->lkey };

		tr_post_recv(qb, (uint64_t)i, &s, 1);
	}
	dt_fill_random(src, (size_t)len * n);
	q0 = qstats(qa);
	t0 = dt_now();
	for (int i = 0; i < n; i++) {
		struct ibv_sge s = { (uintptr_t)(src + (size_t)i * len), len,
				     ms->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &s,
			.num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED }, *bad;

		if (ah) {
			wr.wr.ud.ah = ah;
			wr.wr.ud.remote_qpn = qb->qp_num;
			wr.wr.ud.remote_qkey = QKEY;
		}
		CHECK_OK(ibv_post_send(qa, &wr, &bad));
	}
	while (got < n) {
		if (dt_wait_wc(&rb, &wc, 1, 30, "paced datagram") != 1)
			break;
		struct dt_wc_exp e = dt_exp_recv((uint64_t)got, IBV_WR_SEND,
			len + (ah ? TR_GRH : 0), qb->qp_num,
			ah ? qa->qp_num : 0, 0);

		if (!ah)
			e.src_qp = DT_ANY;
		CHECK_WC(&wc, &e);
		got++;
	}
	t = dt_now() - t0;
	CHECK_EQ(got, n);
	while (sent < n && dt_wait_wc(&sa, &wc, 1, 5, "send CQE") == 1) {
		struct dt_wc_exp e = dt_exp_send((uint64_t)sent, IBV_WR_SEND,
						 len, qa->qp_num);

		CHECK_WC(&wc, &e);
		sent++;
	}
	CHECK_EQ(sent, n);
	for (int i = 0; i < n; i++)
		CHECK(TR_CMP("payload", dst + (size_t)i * slot + (ah ? TR_GRH : 0),
			     src + (size_t)i * len, len));
	q1 = qstats(qa);
	bytes = (uint64_t)n * (len + OVH + (ah ? DETH : 0));
	check_time("datagrams", t, min_time(bytes, kbps, 2 * (1024 + 78),
					    len + OVH + (ah ? DETH : 0)));
	CHECK(q1.pace_waits - q0.pace_waits >= (uint64_t)n / 2);
	if (ah)
		CHECK_OK(ibv_destroy_ah(ah));
	CHECK_OK(ibv_destroy_qp(qa));
	CHECK_OK(ibv_destroy_qp(qb));
	dt_cq_destroy(&sa);
	dt_cq_destroy(&ra);
	dt_cq_destroy(&sb);
	dt_cq_destroy(&rb);
	CHECK_OK(ibv_dereg_mr(ms));
	CHECK_OK(ibv_dereg_mr(md));
	free(src);
	free(dst);
}

int main(int argc, char **argv)
{
	char da[128], db[128];

	dt_watchdog(100);
	dt_seed_init();
	snprintf(da, sizeof(da), "ip=198.18.0.1%s%s", argc > 1 ? "," : "",
		 argc > 1 ? argv[1] : "");
	snprintf(db, sizeof(db), "ip=198.18.0.2%s%s", argc > 1 ? "," : "",
		 argc > 1 ? argv[1] : "");
	dt_init(&env, argv[0], da, db);
	A = &env.dev[0];
	B = &env.dev[1];
	caps_and_errors();
	rc_paced();
	datagrams(IBV_QPT_UD, 8000, 1000, 120);
	datagrams(IBV_QPT_UC, 8000, 1000, 120);
	return dt_finish(&env);
}
