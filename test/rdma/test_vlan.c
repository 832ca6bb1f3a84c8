/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * 802.1Q: devices with vlan=100,prio=3 tag everything they send (RoCE and
 * ARP; checked on the wire by an rx callback on the peer's port) and RC
 * works through it; devices on different VLANs never hear each other: the
 * first send fails with IBV_WC_RETRY_EXC_ERR once ARP gives up.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "droce.h"
#include "droce_test.h"

static uint64_t seen, tagged_ok;

static uint16_t count_tags(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
			   uint16_t n, uint16_t max, void *arg)
{
	(void)port; (void)queue; (void)max; (void)arg;
	for (uint16_t i = 0; i < n; i++) {
		const struct rte_ether_hdr *eh =
			rte_pktmbuf_mtod(pkts[i], const struct rte_ether_hdr *);
		const struct rte_vlan_hdr *vh = (const void *)(eh + 1);

		__atomic_fetch_add(&seen, 1, __ATOMIC_RELAXED);
		if (eh->ether_type == rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN) &&
		    rte_be_to_cpu_16(vh->vlan_tci) == (3 << 13 | 100))
			__atomic_fetch_add(&tagged_ok, 1, __ATOMIC_RELAXED);
	}
	return n;
}

/*
 * Every frame of the READ's responses at a (npl + 1: the READ follows a
 * completed WRITE, so its FIRST retires nothing either), and the MIDDLE
 * and LAST frames (npl) of the second WRITE at b, had their ICRC checked
 * as they were placed, behind the tag, and were sound; the first WRITE's
 * may or may not have been (b's QP learns a's MAC from it: a frame that
 * could teach a MAC is checked first; a WRITE's FIRST always is, its RETH
 * is trusted only after).
 */
static void check_placed(struct dt_dev *a, struct dt_dev *b, uint64_t npl)
{
	struct droce_dev_stats sa, sb;

	CHECK_OK(droce_dev_stats_get(a->ctx, &sa));
	CHECK_OK(droce_dev_stats_get(b->ctx, &sb));
	printf("ICRC checked at placement: %" PRIu64 " frames at A, %" PRIu64
	       " at B\n", sa.rx_icrc_late, sb.rx_icrc_late);
	CHECK_EQ(sa.rx_icrc_late, npl + 1);
	CHECK(sb.rx_icrc_late >= npl && sb.rx_icrc_late <= 2 * npl);
	CHECK_EQ(sa.rx_icrc_err + sb.rx_icrc_err, 0u);
}

static void rc_write_read(struct dt_dev *a, struct dt_dev *b, bool expect_ok)
{
	struct dt_rc_pair p;
	struct dt_conn_cfg cc;
	uint8_t *buf = dt_alloc(8192);
	struct ibv_mr *ma = dt_reg_mr(a->pd, buf, 4096, DT_ACCESS_ALL);
	struct ibv_mr *mb = dt_reg_mr(b->pd, buf + 4096, 4096, DT_ACCESS_ALL);
	struct ibv_wc wc;
	struct dt_wc_exp e;

	CHECK_PTR(ma);
	CHECK_PTR(mb);
	dt_conn_cfg_default(&cc);
	dt_rc_pair_open(&p, a, b, 16, NULL, &cc, NULL, 1, 2);
	dt_fill_random(buf, 4096);
	dt_post_one(p.qa, IBV_WR_RDMA_WRITE, 1, buf, 3000, ma->lkey, buf + 4096,
		    mb->rkey, IBV_SEND_SIGNALED);
	CHECK_EQ(dt_wait_wc(&p.sa, &wc, 1, DT_WAIT_S, "WRITE"), 1);
	if (expect_ok) {
		e = dt_exp_send(1, IBV_WR_RDMA_WRITE, 3000, p.qa->qp_num);
		CHECK_WC(&wc, &e);
		CHECK(memcmp(buf, buf + 4096, 3000) == 0);
		memset(buf, 0, 3000);
		dt_rdma_checked(&p, IBV_WR_RDMA_READ, 2, buf, 3000, ma->lkey,
				buf + 4096, mb->rkey, "READ");
		/* Again, now that b's QP knows a's MAC (main checks how the
		 * frames' ICRCs were checked). */
		dt_fill_random(buf, 3000);
		dt_rdma_checked(&p, IBV_WR_RDMA_WRITE, 3, buf, 3000, ma->lkey,
				buf + 4096, mb->rkey, "WRITE");
	} else {
		e = dt_exp_err(1, IBV_WC_RETRY_EXC_ERR, p.qa->qp_num);
		CHECK_WC(&wc, &e);
	}
	dt_rc_pair_close(&p);
	CHECK_OK(ibv_dereg_mr(ma));
	CHECK_OK(ibv_dereg_mr(mb));
	free(buf);
}

int main(void)
{
	struct dt_env env;
	struct ibv_device **list;
	struct dt_dev x[2];
	const struct rte_eth_rxtx_callback *cb;
	int n;

	dt_watchdog(60);
	dt_init(&env, "test_vlan", "ip=198.18.0.1,vlan=100,prio=3",
		"ip=198.18.0.2,vlan=100,prio=3");
	cb = rte_eth_add_rx_callback((uint16_t)env.dev[1].port_id, 0,
				     count_tags, NULL);
	CHECK_PTR(cb);
	rc_write_read(&env.dev[0], &env.dev[1], true);
	printf("VLAN 100 prio 3: WRITE and READ ok; %" PRIu64 " of %" PRIu64
	       " frames on B's wire tagged 0x%04x\n", tagged_ok, seen, 3 << 13 | 100);
	CHECK(seen > 0);
	CHECK_EQ(tagged_ok, seen);
	check_placed(&env.dev[0], &env.dev[1], 2);
	CHECK_OK(rte_eth_remove_rx_callback((uint16_t)env.dev[1].port_id, 0, cb));

	/* Two devices on different VLANs, joined by another ring pair. */
	CHECK_EQ(droce_create_ring_pair("ip=198.18.1.1,vlan=100,arp_timeout_ms=300",
					"ip=198.18.1.2,vlan=200"), 0);
	list = ibv_get_device_list(&n);
	CHECK(list != NULL && n == 4);
	memset(x, 0, sizeof(x));
	for (int i = 0; i < 2; i++) {
		x[i].ctx = ibv_open_device(list[2 + i]);
		CHECK_PTR(x[i].ctx);
		x[i].pd = ibv_alloc_pd(x[i].ctx);
		CHECK_PTR(x[i].pd);
		CHECK_OK(ibv_query_gid(x[i].ctx, 1, 1, &x[i].gid[1]));
	}
	rc_write_read(&x[0], &x[1], false);
	printf("VLAN 100 vs 200: no ARP answer, first WRITE: RETRY_EXC_ERR\n");
	for (int i = 0; i < 2; i++) {
		CHECK_OK(ibv_dealloc_pd(x[i].pd));
		CHECK_OK(ibv_close_device(x[i].ctx));
	}
	ibv_free_device_list(list);
	/* bad devargs */
	CHECK(droce_create_ring_pair("ip=198.18.2.1,vlan=4095", NULL) < 0);
	CHECK(droce_create_ring_pair("ip=198.18.2.1,prio=3", NULL) < 0);
	return dt_finish(&env);
}
