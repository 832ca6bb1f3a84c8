/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * One droce device on a net_ring port whose other end is this test: it
 * plays the peer with frames built here (lib/roce, ARP by hand), reads
 * every reply, and controls when the device may send (the ring to the
 * test is small: when the test stops reading, the device's transmit queue
 * fills and its READ responses stall mid-stream). doc/security.md
 * findings 2, 4 and 6.
 *
 * ibv_dereg_mr() while the responder still owes work through the region:
 *
 *  1. A multi-packet WRITE: FIRST lands, the region is deregistered and
 *     its pages made inaccessible (PROT_NONE: any later access by the
 *     engine kills the test), MIDDLE and LAST follow. Expected: NAK
 *     remote access error at MIDDLE's PSN, QP in error, the region's
 *     bytes past FIRST untouched, the replies to the requester's MAC.
 *  2. Three READs (kept region, deregistered region, kept region) whose
 *     responses stall in the middle of the second; the second's region is
 *     deregistered and made inaccessible, then the test reads again.
 *     Expected: every response of the first READ and those of the second
 *     built before ibv_dereg_mr() returned, byte for byte, in PSN order,
 *     then a NAK remote access error at the first PSN not sent, nothing
 *     for the third, QP in error.
 *
 * Replies before the peer is resolved, and a peer that changes MAC:
 *  3. A fresh QP whose peer address never answers ARP gets a fatal request
 *     and, on another QP, a SEND without a receive, from another address:
 *     the NAK and the RNR NAK go to the MAC the requests came from, never
 *     to 00:00:00:00:00:00.
 *  4. The peer's MAC changes (ARP) back and forth many times between
 *     requests: every ACK goes to the MAC of the latest ARP.
 */
#include <arpa/inet.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <rte_arp.h>
#include <rte_ethdev.h>
#include <rte_eth_ring.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "droce.h"
#include "droce_test.h"
#include "roce.h"
#include "dt_roce_frame.h"

#define RING_SIZE	64		/* device -> test: 63 frames */
#define PEER_QPN	0x99

static struct rte_ring *to_dev, *from_dev;
static struct rte_mempool *pool;
static const uint8_t peer_mac[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x02 };
static uint8_t dev_mac[6];
static const uint8_t *want_mac = peer_mac;	/* where replies must go,
						 * the peer's source MAC */
static uint32_t dev_ip, peer_ip;

static void free_rings(void)
{
	rte_ring_free(to_dev);
	rte_ring_free(from_dev);
	rte_mempool_free(pool);
}

/* A request from the peer, as any requester could send it. */
static void inject(uint8_t op, uint32_t qpn, uint32_t psn, uint64_t va,
		   uint32_t rkey, uint32_t dlen, const uint8_t *pl,
		   uint32_t pl_len)
{
	struct roce_pkt p;
	struct rte_mbuf *m;

	/* from the peer's current MAC */
	dt_roce_pkt_init(&p, want_mac, dev_mac, &peer_ip, &dev_ip, op, qpn, psn);
	p.ack_req = true;
	p.reth_va = va;
	p.reth_rkey = rkey;
	p.reth_len = dlen;
	p.payload_len = pl_len;
	m = dt_roce_frame(pool, &p, pl_len ? pl : NULL, 0);
	CHECK_EQ(rte_ring_enqueue(to_dev, m), 0);
}

struct reply {
	struct roce_pkt p;
	uint8_t data[4096];
};

/*
 * Read the device's RoCE replies (ARP and the like are skipped) until a
 * NAK arrives, max replies, or timeout_s of silence.
 */
static int collect(struct reply *r, int max, double timeout_s)
{
	double last = dt_now();
	int n = 0;

	while (n < max && dt_now() - last < timeout_s) {
		struct rte_mbuf *m;
		const uint8_t *f;

		if (rte_ring_dequeue(from_dev, (void **)&m) != 0) {
			usleep(100);
			continue;
		}
		last = dt_now();
		f = rte_pktmbuf_mtod(m, const uint8_t *);
		CHECK_EQ(m->nb_segs, 1);
		if (roce_parse(f, m->data_len, m->pkt_len, &r[n].p) != ROCE_OK) {
			rte_pktmbuf_free(m);
			continue;
		}
		CHECK(r[n].p.payload_len <= sizeof(r[n].data));
		memcpy(r[n].data, f + r[n].p.payload_off, r[n].p.payload_len);
		rte_pktmbuf_free(m);
		/* every reply goes to the requester's MAC (finding 4) */
		if (memcmp(r[n].p.dst_mac, want_mac, 6) != 0)
			DT_FAIL_(0, "reply PSN 0x%x to %02x:%02x:%02x:%02x:%02x:%02x",
				 r[n].p.psn, r[n].p.dst_mac[0], r[n].p.dst_mac[1],
				 r[n].p.dst_mac[2], r[n].p.dst_mac[3],
				 r[n].p.dst_mac[4], r[n].p.dst_mac[5]);
		n++;
		if ((r[n - 1].p.opcode & 0x1f) == ROCE_OP_ACK &&
		    (r[n - 1].p.aeth_syndrome & ROCE_AETH_CLASS_MASK) == ROCE_AETH_NAK)
			break;
	}
	return n;
}

static struct ibv_qp *make_qp_to(struct dt_dev *d, struct dt_cq *cq,
				 enum ibv_mtu mtu, uint32_t rq_psn,
				 uint32_t to_ip)
{
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	union ibv_gid peer = { 0 };
	struct ibv_qp *qp;

	dt_qp_cfg_default(&qc);
	qp = dt_qp_create(d, cq->cq, cq->cq, &qc, NULL);
	CHECK_PTR(qp);
	dt_conn_cfg_default(&cc);
	cc.mtu = mtu;
	cc.access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	cc.max_dest_rd_atomic = 4;
	peer.raw[10] = 0xff;
	peer.raw[11] = 0xff;
	memcpy(&peer.raw[12], &to_ip, 4);
	CHECK_OK(dt_qp_to_init(qp, &cc));
	CHECK_OK(dt_qp_to_rtr(qp, &cc, &peer, PEER_QPN, rq_psn));
	CHECK_OK(dt_qp_to_rts(qp, &cc, 0x10));
	return qp;
}

static struct ibv_qp *make_qp(struct dt_dev *d, struct dt_cq *cq,
			      enum ibv_mtu mtu, uint32_t rq_psn)
{
	return make_qp_to(d, cq, mtu, rq_psn, peer_ip);
}

/* An ARP reply from the peer's address with MAC mac. */
static void inject_arp(const uint8_t *mac)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	struct rte_ether_hdr *eh;
	struct rte_arp_hdr *ah;

	CHECK_PTR(m);
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	memcpy(&eh->dst_addr, dev_mac, 6);
	memcpy(&eh->src_addr, mac, 6);
	eh->ether_type = htons(RTE_ETHER_TYPE_ARP);
	ah = (struct rte_arp_hdr *)(eh + 1);
	ah->arp_hardware = htons(RTE_ARP_HRD_ETHER);
	ah->arp_protocol = htons(RTE_ETHER_TYPE_IPV4);
	ah->arp_hlen = 6;
	ah->arp_plen = 4;
	ah->arp_opcode = htons(RTE_ARP_OP_REPLY);
	memcpy(&ah->arp_data.arp_sha, mac, 6);
	ah->arp_data.arp_sip = peer_ip;
	memcpy(&ah->arp_data.arp_tha, dev_mac, 6);
	ah->arp_data.arp_tip = dev_ip;
	m->data_len = m->pkt_len = 60;
	CHECK_EQ(rte_ring_enqueue(to_dev, m), 0);
}

static uint8_t *map_pages(size_t len, uint8_t fill)
{
	uint8_t *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	CHECK(p != MAP_FAILED);
	memset(p, fill, len);
	return p;
}

static bool is_nak(const struct roce_pkt *p, uint8_t code)
{
	return (p->opcode & 0x1f) == ROCE_OP_ACK &&
	       p->aeth_syndrome == (ROCE_AETH_NAK | code);
}

/* The responder's error is reported (IBTA 11.6.3.1); read before the QP
 * goes (ibv_destroy_qp forgets unread events). */
static void expect_access_err(struct dt_dev *d, struct ibv_qp *qp)
{
	struct ibv_async_event ev;

	CHECK_OK(ibv_get_async_event(d->ctx, &ev));
	EXPECT_EQ(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
	EXPECT(ev.element.qp == qp);
	ibv_ack_async_event(&ev);
}

/* 1: WRITE FIRST, ibv_dereg_mr, MIDDLE, LAST. */
static void write_across_dereg(struct dt_dev *d, struct dt_cq *cq)
{
	const uint32_t psn = 0x200, len = 3000, mtu = 1024;
	uint8_t *buf = map_pages(8192, 0x5a);
	uint8_t pl[1024];
	struct reply *r = calloc(8, sizeof(*r));
	struct ibv_qp *qp = make_qp(d, cq, IBV_MTU_1024, psn);
	struct ibv_mr *mr = dt_reg_mr(d->pd, buf, 8192, DT_ACCESS_ALL);
	struct droce_dev_stats s0, s1;
	double t0;
	int n;

	CHECK_PTR(r);
	CHECK_PTR(mr);
	dt_fill_random(pl, sizeof(pl));
	inject(ROCE_OP_WRITE_FIRST, qp->qp_num, psn, (uintptr_t)buf, mr->rkey,
	       len, pl, mtu);
	for (t0 = dt_now(); memcmp(buf, pl, mtu) != 0; usleep(100))
		CHECK(dt_now() - t0 < DT_WAIT_S);
	/* the ACK coalesced for FIRST, if any: PSN psn only */
	n = collect(r, 8, 0.1);
	for (int i = 0; i < n; i++)
		CHECK((r[i].p.opcode & 0x1f) == ROCE_OP_ACK &&
		      r[i].p.aeth_syndrome < 0x20 && r[i].p.psn == psn);
	CHECK_OK(droce_dev_stats_get(d->ctx, &s0));
	CHECK_OK(ibv_dereg_mr(mr));
	/* from here on any access by the engine is a SIGSEGV */
	CHECK_OK(mprotect(buf, 8192, PROT_NONE));
	inject(ROCE_OP_WRITE_MIDDLE, qp->qp_num, psn + 1, 0, 0, 0, pl, mtu);
	inject(ROCE_OP_WRITE_LAST, qp->qp_num, psn + 2, 0, 0, 0, pl, len - 2 * mtu);
	n = collect(r, 8, 2.0);
	CHECK_EQ(n, 1);
	printf("WRITE across dereg: reply opcode 0x%02x syndrome 0x%02x PSN 0x%x\n",
	       r[0].p.opcode, r[0].p.aeth_syndrome, r[0].p.psn);
	CHECK(is_nak(&r[0].p, ROCE_NAK_REMOTE_ACCESS));
	CHECK_EQ(r[0].p.psn, psn + 1);
	CHECK_EQ(r[0].p.dest_qp, PEER_QPN);
	CHECK_EQ(collect(r, 8, 0.2), 0);
	CHECK_EQ(dt_qp_state(qp), IBV_QPS_ERR);
	CHECK_OK(droce_dev_stats_get(d->ctx, &s1));
	CHECK_EQ(s1.tx_nak_rem_access - s0.tx_nak_rem_access, 1);
	CHECK_OK(mprotect(buf, 8192, PROT_READ));
	CHECK(memcmp(buf, pl, mtu) == 0);
	for (uint32_t i = mtu; i < 8192; i++)
		if (buf[i] != 0x5a)
			DT_FAIL_(1, "byte %u written after ibv_dereg_mr: 0x%02x",
				 i, buf[i]);
	expect_access_err(d, qp);
	CHECK_OK(ibv_destroy_qp(qp));
	munmap(buf, 8192);
	free(r);
}

/* 2: READ responses stalled mid-stream, ibv_dereg_mr, the rest. */
static void read_across_dereg(struct dt_dev *d, struct dt_cq *cq)
{
	const uint32_t psn = 0x7000, mtu = 256;
	const uint32_t len1 = 4096, len2 = 256 * 1024, len3 = 512;
	const uint32_t np1 = len1 / mtu, np2 = len2 / mtu;
	uint8_t *keep = map_pages(len1, 0), *gone = map_pages(len2, 0);
	struct reply *r = calloc(np1 + np2 + 8, sizeof(*r));
	struct ibv_qp *qp = make_qp(d, cq, IBV_MTU_256, psn);
	struct ibv_mr *mk = dt_reg_mr(d->pd, keep, len1, DT_ACCESS_ALL);
	struct ibv_mr *mg = dt_reg_mr(d->pd, gone, len2, DT_ACCESS_ALL);
	struct droce_dev_stats s0, s1;
	uint8_t *ref = malloc(len2);
	unsigned int prev = 0, cur;
	int n, k;
	double t0;

	CHECK_PTR(r);
	CHECK_PTR(ref);
	CHECK_PTR(mk);
	CHECK_PTR(mg);
	dt_fill_random(keep, len1);
	dt_fill_random(gone, len2);
	memcpy(ref, gone, len2);
	inject(ROCE_OP_READ_REQ, qp->qp_num, psn, (uintptr_t)keep, mk->rkey,
	       len1, NULL, 0);
	inject(ROCE_OP_READ_REQ, qp->qp_num, psn + np1, (uintptr_t)gone,
	       mg->rkey, len2, NULL, 0);
	inject(ROCE_OP_READ_REQ, qp->qp_num, psn + np1 + np2, (uintptr_t)keep,
	       mk->rkey, len3, NULL, 0);
	/* Wait until the device stops: the ring full, its queue too. */
	t0 = dt_now();
	for (;;) {
		usleep(20000);
		CHECK_OK(droce_dev_stats_get(d->ctx, &s0));
		cur = (unsigned int)s0.tx_pkts;
		if (cur == prev && rte_ring_count(from_dev) == RING_SIZE - 1)
			break;
		prev = cur;
		CHECK(dt_now() - t0 < DT_WAIT_S);
	}
	CHECK_OK(ibv_dereg_mr(mg));
	CHECK_OK(mprotect(gone, len2, PROT_NONE));
	n = collect(r, (int)(np1 + np2 + 8), 2.0);
	CHECK_OK(droce_dev_stats_get(d->ctx, &s1));
	CHECK_CMP(n, >, (int)np1 + 1);
	/* The first READ whole, then a prefix of the second, then the NAK. */
	for (k = 0; k < n - 1; k++) {
		const struct roce_pkt *p = &r[k].p;
		uint32_t off = k < (int)np1 ? (uint32_t)k * mtu :
			       (uint32_t)(k - (int)np1) * mtu;
		const uint8_t *src = k < (int)np1 ? keep + off : ref + off;
		uint8_t op = p->opcode & 0x1f;

		CHECK_EQ(p->psn, psn + (uint32_t)k);
		CHECK(op >= ROCE_OP_READ_RESP_FIRST && op <= ROCE_OP_READ_RESP_ONLY);
		CHECK_EQ(p->payload_len, mtu);
		if (memcmp(r[k].data, src, mtu) != 0)
			DT_FAIL_(1, "READ response PSN 0x%x: wrong data", p->psn);
	}
	printf("READ across dereg: %d responses of the second READ sent before "
	       "ibv_dereg_mr, then opcode 0x%02x syndrome 0x%02x PSN 0x%x\n",
	       n - 1 - (int)np1, r[n - 1].p.opcode, r[n - 1].p.aeth_syndrome,
	       r[n - 1].p.psn);
	CHECK_CMP(n - 1, <, (int)(np1 + np2));	/* it did stall mid-stream */
	CHECK(is_nak(&r[n - 1].p, ROCE_NAK_REMOTE_ACCESS));
	CHECK_EQ(r[n - 1].p.psn, psn + (uint32_t)(n - 1));
	CHECK_EQ(collect(r, 8, 0.2), 0);
	CHECK_EQ(dt_qp_state(qp), IBV_QPS_ERR);
	CHECK_EQ(s1.tx_nak_rem_access - s0.tx_nak_rem_access, 1);
	expect_access_err(d, qp);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_dereg_mr(mk));
	munmap(keep, len1);
	munmap(gone, len2);
	free(ref);
	free(r);
}

/* 3: NAKs of QPs whose peer is not resolved. */
static void naks_before_arp(struct dt_dev *d, struct dt_cq *cq)
{
	const uint32_t psn = 0x300, silent_ip = htonl(0xc6120063);
	struct reply r[8];
	struct ibv_qp *qa = make_qp_to(d, cq, IBV_MTU_1024, psn, silent_ip);
	struct ibv_qp *qb = make_qp_to(d, cq, IBV_MTU_1024, psn, silent_ip);
	uint8_t pl[64] = { 0 };
	int n;

	/* a WRITE with an R_Key nobody gave: NAK remote access error */
	inject(ROCE_OP_WRITE_ONLY, qa->qp_num, psn, 0x1000, 0x4242, 64, pl, 64);
	n = collect(r, 8, 0.3);
	CHECK_EQ(n, 1);
	CHECK(is_nak(&r[0].p, ROCE_NAK_REMOTE_ACCESS));
	CHECK_EQ(r[0].p.psn, psn);
	expect_access_err(d, qa);
	/* a SEND without a receive: RNR NAK, the QP lives on */
	inject(ROCE_OP_SEND_ONLY, qb->qp_num, psn, 0, 0, 0, pl, 64);
	n = collect(r, 8, 0.3);
	CHECK_EQ(n, 1);
	CHECK_EQ(r[0].p.opcode & 0x1f, ROCE_OP_ACK);
	CHECK_EQ(r[0].p.aeth_syndrome & ROCE_AETH_CLASS_MASK, ROCE_AETH_RNR_NAK);
	CHECK_EQ(r[0].p.psn, psn);
	CHECK_EQ(dt_qp_state(qb), IBV_QPS_RTS);
	printf("NAKs before ARP: sent to the requests' source MAC\n");
	CHECK_OK(ibv_destroy_qp(qa));
	CHECK_OK(ibv_destroy_qp(qb));
}

/* 4: the peer changes MAC, again and again. */
static void mac_changes(struct dt_dev *d, struct dt_cq *cq)
{
	static const uint8_t mac2[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x22 };
	const uint32_t psn = 0x400, rounds = 200;
	uint8_t *buf = map_pages(4096, 0);
	struct ibv_qp *qp = make_qp(d, cq, IBV_MTU_1024, psn);
	struct ibv_mr *mr = dt_reg_mr(d->pd, buf, 4096, DT_ACCESS_ALL);
	struct reply r[8];
	uint8_t pl[8];

	CHECK_PTR(mr);
	for (uint32_t i = 0; i < rounds; i++) {
		/* a few flips per request, ending on the one wanted */
		const uint8_t *m = (i & 1) ? peer_mac : mac2;
		uint32_t flips = 1 + (uint32_t)dt_rand_range(0, 3) * 2;

		for (uint32_t k = 0; k < flips; k++)
			inject_arp((flips - k) & 1 ? m : (m == mac2 ? peer_mac : mac2));
		memset(pl, (int)i, sizeof(pl));
		want_mac = m;
		inject(ROCE_OP_WRITE_ONLY, qp->qp_num, psn + i, (uintptr_t)buf,
		       mr->rkey, sizeof(pl), pl, sizeof(pl));
		CHECK_EQ(collect(r, 1, 1.0), 1);
		CHECK_EQ(r[0].p.opcode & 0x1f, ROCE_OP_ACK);
		CHECK_EQ(r[0].p.aeth_syndrome & ROCE_AETH_CLASS_MASK, ROCE_AETH_ACK);
		CHECK_EQ(r[0].p.psn, psn + i);
		if (dt_failures)
			DT_FAIL_(1, "round %u: ACK not to the latest MAC", i);
	}
	CHECK_EQ(buf[0], (uint8_t)(rounds - 1));
	want_mac = peer_mac;
	inject_arp(peer_mac);
	printf("MAC changes: %u requests, each ACK to the MAC of the latest ARP\n",
	       rounds);
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_dereg_mr(mr));
	munmap(buf, 4096);
}

int main(int argc, char **argv)
{
	struct dt_env env;
	struct dt_dev *d;
	struct dt_cq cq;
	int port, n = -1;

	(void)argc;
	dt_watchdog(120);
	memset(&env, 0, sizeof(env));
	dt_eal_init(argv[0]);
	to_dev = rte_ring_create("dw_to_dev", RING_SIZE, SOCKET_ID_ANY,
				 RING_F_SP_ENQ | RING_F_SC_DEQ);
	from_dev = rte_ring_create("dw_from_dev", RING_SIZE, SOCKET_ID_ANY,
				   RING_F_SP_ENQ | RING_F_SC_DEQ);
	pool = rte_pktmbuf_pool_create("dw_pool", 255, 0, 0,
				       RTE_MBUF_DEFAULT_BUF_SIZE, SOCKET_ID_ANY);
	CHECK(to_dev && from_dev && pool);
	dt_set_fini_hook(free_rings);
	port = rte_eth_from_rings("net_ring_dw", &to_dev, 1, &from_dev, 1,
				  SOCKET_ID_ANY);
	CHECK_CMP(port, >=, 0);
	CHECK_CMP(droce_dev_create((uint16_t)port, "ip=198.18.0.1"), >=, 0);
	env.list = ibv_get_device_list(&n);
	CHECK_PTR(env.list);
	CHECK_EQ(n, 1);
	d = &env.dev[0];
	d->ctx = ibv_open_device(env.list[0]);
	CHECK_PTR(d->ctx);
	d->pd = ibv_alloc_pd(d->ctx);
	CHECK_PTR(d->pd);
	CHECK_OK(rte_eth_macaddr_get((uint16_t)port,
				     (struct rte_ether_addr *)dev_mac));
	dev_ip = htonl(0xc6120001);	/* 198.18.0.1 */
	peer_ip = htonl(0xc6120002);
	dt_cq_create(d, 64, false, &cq);

	write_across_dereg(d, &cq);
	read_across_dereg(d, &cq);
	naks_before_arp(d, &cq);
	mac_changes(d, &cq);
	dt_cq_drain_unexpected(&cq, "after the QPs were destroyed");
	dt_cq_destroy(&cq);
	dt_fini(&env);
	if (dt_failures)
		return 1;
	printf("PASS\n");
	return 0;
}
