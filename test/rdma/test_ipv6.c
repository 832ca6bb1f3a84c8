/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RoCEv2 over IPv6, with the link-local GIDs (index 0: fe80:: and the
 * MAC's EUI-64), which never leave the link: peers are found by neighbour
 * discovery, RC and UD work, frames on the wire are IPv6 (checked by an
 * rx callback on the peer's port), a flow label becomes the UDP source
 * port as ibv_flow_label_to_udp_sport() says, the UD GRH area is the IPv6
 * header, and ibv_create_ah_from_wc answers back. A GID that is not
 * link-local cannot be reached from GID 0.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "droce.h"
#include "droce_test.h"

#define FLOW 0x12345u

static uint64_t v6, icmp6, roce6_flow;

static uint16_t watch(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
		      uint16_t n, uint16_t max, void *arg)
{
	(void)port; (void)queue; (void)max; (void)arg;
	for (uint16_t i = 0; i < n; i++) {
		const uint8_t *f = rte_pktmbuf_mtod(pkts[i], const uint8_t *);

		if (pkts[i]->data_len < 14 + 40 + 8 || f[12] != 0x86 || f[13] != 0xdd)
			continue;
		__atomic_fetch_add(&v6, 1, __ATOMIC_RELAXED);
		if (f[14 + 6] == 58)
			__atomic_fetch_add(&icmp6, 1, __ATOMIC_RELAXED);
		/* UDP to 4791 with the source port the flow label gives */
		if (f[14 + 6] == 17 &&
		    ((uint32_t)f[14 + 40] << 8 | f[14 + 41]) ==
		    ibv_flow_label_to_udp_sport(FLOW))
			__atomic_fetch_add(&roce6_flow, 1, __ATOMIC_RELAXED);
	}
	return n;
}

static void rc(struct dt_env *env)
{
	struct dt_dev *A = &env->dev[0], *B = &env->dev[1];
	struct dt_rc_pair p;
	struct dt_conn_cfg cc;
	struct ibv_qp_attr at;
	uint8_t *buf = dt_alloc(16384);
	struct ibv_mr *ma = dt_reg_mr(A->pd, buf, 8192, DT_ACCESS_ALL);
	struct ibv_mr *mb = dt_reg_mr(B->pd, buf + 8192, 8192, DT_ACCESS_ALL);

	CHECK_PTR(ma);
	CHECK_PTR(mb);
	dt_conn_cfg_default(&cc);
	cc.sgid_index = 0;
	dt_rc_pair_open(&p, A, B, 16, NULL, NULL, NULL, 0, 0);
	CHECK_OK(dt_qp_to_init(p.qa, &cc));
	CHECK_OK(dt_qp_to_init(p.qb, &cc));
	/* A non-link-local destination is out of GID 0's reach. */
	dt_attr_rtr(&at, &cc, &B->gid[0], p.qb->qp_num, 7);
	at.ah_attr.grh.dgid.raw[0] = 0x20;
	CHECK_EQ(ibv_modify_qp(p.qa, &at, DT_MASK_RTR), EINVAL);
	dt_attr_rtr(&at, &cc, &B->gid[0], p.qb->qp_num, 7);
	at.ah_attr.grh.flow_label = FLOW;
	CHECK_OK(ibv_modify_qp(p.qa, &at, DT_MASK_RTR));
	CHECK_OK(dt_qp_to_rtr(p.qb, &cc, &A->gid[0], p.qa->qp_num, 9));
	CHECK_OK(dt_qp_to_rts(p.qa, &cc, 9));
	CHECK_OK(dt_qp_to_rts(p.qb, &cc, 7));
	dt_fill_random(buf, 8192);
	dt_rdma_checked(&p, IBV_WR_RDMA_WRITE, 1, buf, 5000, ma->lkey,
			buf + 8192, mb->rkey, "WRITE over IPv6");
	memset(buf, 0, 5000);
	dt_rdma_checked(&p, IBV_WR_RDMA_READ, 2, buf, 5000, ma->lkey,
			buf + 8192, mb->rkey, "READ over IPv6");
	/* Again, now that B's QP knows A's MAC. */
	dt_fill_random(buf, 5000);
	dt_rdma_checked(&p, IBV_WR_RDMA_WRITE, 3, buf, 5000, ma->lkey,
			buf + 8192, mb->rkey, "WRITE over IPv6");
	dt_rc_pair_close(&p);
	CHECK_OK(ibv_dereg_mr(ma));
	CHECK_OK(ibv_dereg_mr(mb));
	free(buf);
}

static void ud(struct dt_env *env)
{
	struct dt_dev *A = &env->dev[0], *B = &env->dev[1];
	struct ibv_cq *ca = ibv_create_cq(A->ctx, 16, NULL, NULL, 0);
	struct ibv_cq *cb = ibv_create_cq(B->ctx, 16, NULL, NULL, 0);
	struct ibv_qp_init_attr ia = { .send_cq = ca, .recv_cq = ca,
		.qp_type = IBV_QPT_UD,
		.cap = { .max_send_wr = 8, .max_recv_wr = 8, .max_send_sge = 1,
			 .max_recv_sge = 1 } };
	struct ibv_qp *qa, *qb;
	struct ibv_qp_attr at;
	uint8_t *buf = dt_alloc(8192);
	struct ibv_mr *ma = dt_reg_mr(A->pd, buf, 4096, DT_ACCESS_ALL);
	struct ibv_mr *mb = dt_reg_mr(B->pd, buf + 4096, 4096, DT_ACCESS_ALL);
	struct ibv_ah_attr aa = { .is_global = 1, .port_num = 1 };
	struct ibv_ah *ah, *back;
	struct ibv_wc wc;
	int n;

	CHECK_PTR(ca);
	CHECK_PTR(cb);
	qa = ibv_create_qp(A->pd, &ia);
	ia.send_cq = ia.recv_cq = cb;
	qb = ibv_create_qp(B->pd, &ia);
	CHECK_PTR(qa);
	CHECK_PTR(qb);
	for (int i = 0; i < 2; i++) {
		struct ibv_qp *q = i ? qb : qa;

		memset(&at, 0, sizeof(at));
		at.qp_state = IBV_QPS_INIT;
		at.port_num = 1;
		at.qkey = 0x11111111;
		CHECK_OK(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				       IBV_QP_PORT | IBV_QP_QKEY));
		at.qp_state = IBV_QPS_RTR;
		CHECK_OK(ibv_modify_qp(q, &at, IBV_QP_STATE));
		at.qp_state = IBV_QPS_RTS;
		at.sq_psn = 1;
		CHECK_OK(ibv_modify_qp(q, &at, IBV_QP_STATE | IBV_QP_SQ_PSN));
	}
	aa.grh.dgid = B->gid[0];
	aa.grh.sgid_index = 0;
	ah = ibv_create_ah(A->pd, &aa);
	CHECK_PTR(ah);
	{
		struct ibv_sge rs = { (uintptr_t)buf + 4096, 40 + 256, mb->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge s = { (uintptr_t)buf, 256, ma->lkey };
		struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

		dt_fill_random(buf, 256);
		CHECK_OK(ibv_post_recv(qb, &rwr, &rbad));
		wr.wr.ud.ah = ah;
		wr.wr.ud.remote_qpn = qb->qp_num;
		wr.wr.ud.remote_qkey = 0x11111111;
		CHECK_OK(ibv_post_send(qa, &wr, &bad));
	}
	for (n = 0; n < 2000 && ibv_poll_cq(cb, 1, &wc) == 0; n++)
		usleep(1000);
	CHECK(n < 2000);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK(wc.wc_flags & IBV_WC_GRH);
	CHECK_EQ(wc.src_qp, qa->qp_num);
	CHECK_EQ(wc.byte_len, 40u + 256);
	CHECK(memcmp(buf, buf + 4096 + 40, 256) == 0);
	/* the GRH area is the IPv6 header: version 6, from A's GID 0 */
	CHECK_EQ(buf[4096] >> 4, 6);
	CHECK(memcmp(buf + 4096 + 8, A->gid[0].raw, 16) == 0);
	CHECK(memcmp(buf + 4096 + 24, B->gid[0].raw, 16) == 0);
	back = ibv_create_ah_from_wc(B->pd, &wc, (struct ibv_grh *)(buf + 4096), 1);
	CHECK_PTR(back);
	CHECK_OK(ibv_destroy_ah(back));
	CHECK_OK(ibv_destroy_ah(ah));
	CHECK_OK(ibv_destroy_qp(qa));
	CHECK_OK(ibv_destroy_qp(qb));
	CHECK_OK(ibv_dereg_mr(ma));
	CHECK_OK(ibv_dereg_mr(mb));
	CHECK_OK(ibv_destroy_cq(ca));
	CHECK_OK(ibv_destroy_cq(cb));
	free(buf);
}

int main(void)
{
	struct dt_env env;
	const struct rte_eth_rxtx_callback *cb;
	struct droce_dev_stats st;

	dt_watchdog(60);
	dt_init(&env, "test_ipv6", NULL, NULL);
	CHECK_EQ(env.dev[0].gid[0].raw[0], 0xfe);
	cb = rte_eth_add_rx_callback((uint16_t)env.dev[1].port_id, 0, watch, NULL);
	CHECK_PTR(cb);
	rc(&env);
	/* Every frame of the READ's responses at A (5 at MTU 1024: the READ
	 * follows a completed WRITE, so its FIRST retires nothing either),
	 * and the MIDDLE and LAST frames (4 of 5) of the second WRITE at B,
	 * had their ICRC checked as they were placed, over IPv6, and were
	 * sound; the first WRITE's may or may not have been (B's QP learns
	 * A's MAC from it: a frame that could teach a MAC is checked first;
	 * a WRITE's FIRST always is, its RETH is trusted only after). */
	{
		struct droce_dev_stats sa, sb;

		CHECK_OK(droce_dev_stats_get(env.dev[0].ctx, &sa));
		CHECK_OK(droce_dev_stats_get(env.dev[1].ctx, &sb));
		CHECK_EQ(sa.rx_icrc_late, 5u);
		CHECK(sb.rx_icrc_late >= 4 && sb.rx_icrc_late <= 8);
		CHECK_EQ(sa.rx_icrc_err + sb.rx_icrc_err, 0u);
	}
	ud(&env);
	CHECK_OK(droce_dev_stats_get(env.dev[0].ctx, &st));
	printf("IPv6: RC WRITE/READ and UD over link-local GIDs ok; on B's wire %"
	       PRIu64 " IPv6 frames, %" PRIu64 " ICMPv6 (neighbour discovery), %"
	       PRIu64 " with the flow label's UDP port\n", v6, icmp6, roce6_flow);
	CHECK(icmp6 > 0);
	CHECK(roce6_flow > 0);
	CHECK(v6 > icmp6);
	CHECK_OK(rte_eth_remove_rx_callback((uint16_t)env.dev[1].port_id, 0, cb));
	return dt_finish(&env);
}
