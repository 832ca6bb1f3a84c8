/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Neighbours: ARP for IPv4 peers, neighbour discovery (RFC 4861) for IPv6
 * ones. Addresses are GIDs (IPv4 as ::ffff:a.b.c.d), as RoCEv2 names them.
 * We answer for our own addresses, resolve peers, and learn from what
 * arrives. A small table per device; an unresolved peer is asked again
 * every ETH_ARP_RETRY_MS and given up after the device's arp_timeout_ms,
 * at which point the QPs waiting for it fail (eth_req.c) instead of
 * hanging.
 */
#include <string.h>
#include <arpa/inet.h>

#include <rte_arp.h>
#include <rte_ether.h>
#include <rte_ip.h>

#include "eth_int.h"

#define ICMP6_NS	135
#define ICMP6_NA	136
#define ND_OPT_SLLA	1
#define ND_OPT_TLLA	2
#define ICMP6_NEXT_HDR	58

static inline bool neigh_is_pending(const struct droce_neigh *n)
{
	return n->used && !n->resolved;
}

static struct droce_neigh *neigh_find(struct droce_dev *dev, const uint8_t *a)
{
	for (uint32_t i = 0; i < DROCE_NB_NEIGH; i++)
		if (dev->neigh[i].used && memcmp(dev->neigh[i].addr, a, 16) == 0)
			return &dev->neigh[i];
	return NULL;
}

static struct droce_neigh *neigh_alloc(struct droce_dev *dev, const uint8_t *a)
{
	struct droce_neigh *n = NULL, *victim = &dev->neigh[0];

	for (uint32_t i = 0; i < DROCE_NB_NEIGH && n == NULL; i++)
		if (!dev->neigh[i].used)
			n = &dev->neigh[i];
	if (n == NULL) {
		/* Table full: recycle a resolved entry (it is re-learnt). */
		for (uint32_t i = 0; i < DROCE_NB_NEIGH; i++)
			if (dev->neigh[i].resolved)
				victim = &dev->neigh[i];
		n = victim;
	}
	{
		/* QPs resolved from a recycled entry keep the MAC they have
		 * (as before recycling); a later change of the new owner's
		 * MAC only makes them resolve again. */
		uint32_t gen = n->gen;

		if (!neigh_is_pending(n))
			dev->neigh_pending++;	/* used, not yet resolved */
		memset(n, 0, sizeof(*n));
		n->gen = gen;
	}
	memcpy(n->addr, a, 16);
	n->used = true;
	return n;
}

/* Ethernet header (+ the device's VLAN tag) for ethertype; returns the
 * byte after it. */
static uint8_t *l2_hdr(struct droce_dev *dev, struct rte_mbuf *m,
		       const struct rte_ether_addr *dst, uint16_t type)
{
	struct rte_ether_hdr *eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);

	rte_ether_addr_copy(dst, &eh->dst_addr);
	rte_ether_addr_copy(&dev->mac, &eh->src_addr);
	if (dev->args.vlan_tci) {
		struct rte_vlan_hdr *vh = (struct rte_vlan_hdr *)(eh + 1);

		eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vh->vlan_tci = rte_cpu_to_be_16(dev->args.vlan_tci);
		vh->eth_proto = rte_cpu_to_be_16(type);
		return (uint8_t *)(vh + 1);
	}
	eh->ether_type = rte_cpu_to_be_16(type);
	return (uint8_t *)(eh + 1);
}

static void finish_frame(struct droce_dev *dev, struct rte_mbuf *m,
			 const uint8_t *end)
{
	uint32_t len = (uint32_t)(end - rte_pktmbuf_mtod(m, uint8_t *));
	uint32_t min = RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN +
		       (dev->args.vlan_tci ? RTE_VLAN_HLEN : 0);

	if (len < min) {	/* pad to the Ethernet minimum */
		memset(rte_pktmbuf_mtod_offset(m, uint8_t *, len), 0, min - len);
		len = min;
	}
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	eth_tx_enqueue(dev, m);
}

/* ------------------------------------------------------------- ARP */

static void arp_send(struct droce_dev *dev, uint16_t op, uint32_t tip,
		     const struct rte_ether_addr *tha)
{
	static const struct rte_ether_addr bcast = {
		.addr_bytes = { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff } };
	struct rte_mbuf *m = rte_pktmbuf_alloc(dev->pool);
	struct rte_arp_hdr *ah;

	if (m == NULL)
		return;
	ah = (struct rte_arp_hdr *)l2_hdr(dev, m, op == RTE_ARP_OP_REQUEST ?
					  &bcast : tha, RTE_ETHER_TYPE_ARP);
	ah->arp_hardware = rte_cpu_to_be_16(RTE_ARP_HRD_ETHER);
	ah->arp_protocol = rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4);
	ah->arp_hlen = RTE_ETHER_ADDR_LEN;
	ah->arp_plen = 4;
	ah->arp_opcode = rte_cpu_to_be_16(op);
	rte_ether_addr_copy(&dev->mac, &ah->arp_data.arp_sha);
	ah->arp_data.arp_sip = dev->args.ip;
	if (op == RTE_ARP_OP_REQUEST)
		memset(&ah->arp_data.arp_tha, 0, RTE_ETHER_ADDR_LEN);
	else
		rte_ether_addr_copy(tha, &ah->arp_data.arp_tha);
	ah->arp_data.arp_tip = tip;
	dev->st.arp_tx++;
	finish_frame(dev, m, (uint8_t *)(ah + 1));
}

static void v4_gid(uint8_t *g, uint32_t ip)
{
	memset(g, 0, 10);
	g[10] = 0xff;
	g[11] = 0xff;
	memcpy(&g[12], &ip, 4);
}

void eth_arp_rx(struct droce_dev *dev, struct rte_mbuf *m, uint32_t off)
{
	const struct rte_arp_hdr *ah;
	struct rte_arp_hdr copy;
	uint8_t g[16];

	if (eth_mbuf_copy(m, off, &copy, sizeof(copy))) {
		dev->st.rx_malformed++;
		return;
	}
	ah = &copy;
	if (ah->arp_hardware != rte_cpu_to_be_16(RTE_ARP_HRD_ETHER) ||
	    ah->arp_protocol != rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV4) ||
	    ah->arp_hlen != RTE_ETHER_ADDR_LEN || ah->arp_plen != 4) {
		dev->st.rx_malformed++;
		return;
	}
	dev->st.arp_rx++;
	/* Learn the sender whenever the exchange concerns us (RFC 826). */
	if (ah->arp_data.arp_tip == dev->args.ip &&
	    !rte_is_zero_ether_addr(&ah->arp_data.arp_sha) &&
	    !rte_is_multicast_ether_addr(&ah->arp_data.arp_sha)) {
		v4_gid(g, ah->arp_data.arp_sip);
		eth_neigh_learn(dev->eng, dev, g, &ah->arp_data.arp_sha);
	}
	if (ah->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) &&
	    ah->arp_data.arp_tip == dev->args.ip)
		arp_send(dev, RTE_ARP_OP_REPLY, ah->arp_data.arp_sip,
			 &ah->arp_data.arp_sha);
}

/* ------------------------------------------------------------- NDP */

/* ICMPv6 checksum (RFC 4443 2.3): over the pseudo header and the message. */
static uint16_t icmp6_cksum(const uint8_t *src, const uint8_t *dst,
			    const uint8_t *msg, uint32_t len)
{
	uint32_t sum = 0;

	for (int i = 0; i < 16; i += 2)
		sum += (uint32_t)(src[i] << 8 | src[i + 1]) +
		       (uint32_t)(dst[i] << 8 | dst[i + 1]);
	sum += len + ICMP6_NEXT_HDR;
	for (uint32_t i = 0; i + 1 < len; i += 2)
		sum += (uint32_t)(msg[i] << 8 | msg[i + 1]);
	if (len & 1)
		sum += (uint32_t)msg[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

/* Neighbour solicitation (to the target's solicited-node group) or
 * advertisement (to the asker), always from our link-local address. */
static void ndp_send(struct droce_dev *dev, uint8_t type, const uint8_t *target,
		     const uint8_t *to, const struct rte_ether_addr *to_mac)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dev->pool);
	struct rte_ether_addr dmac;
	uint8_t dst[16], *ip, *icmp;
	const uint32_t icmp_len = 32;	/* header 8, target 16, option 8 */
	uint16_t ck;

	if (m == NULL)
		return;
	if (type == ICMP6_NS) {
		/* ff02::1:ffXX:XXXX and 33:33:ff:XX:XX:XX (RFC 4291 2.7.1) */
		static const uint8_t sn[13] = { 0xff, 0x02, 0, 0, 0, 0, 0, 0, 0, 0,
						0, 0x01, 0xff };

		memcpy(dst, sn, 13);
		memcpy(&dst[13], &target[13], 3);
		dmac.addr_bytes[0] = 0x33;
		dmac.addr_bytes[1] = 0x33;
		memcpy(&dmac.addr_bytes[2], &dst[12], 4);
	} else {
		memcpy(dst, to, 16);
		dmac = *to_mac;
	}
	ip = l2_hdr(dev, m, &dmac, RTE_ETHER_TYPE_IPV6);
	ip[0] = 0x60;
	memset(ip + 1, 0, 3);
	ip[4] = 0;
	ip[5] = (uint8_t)icmp_len;
	ip[6] = ICMP6_NEXT_HDR;
	ip[7] = 255;	/* RFC 4861 7.1: hop limit 255, checked by receivers */
	memcpy(ip + 8, dev->gid[0].raw, 16);
	memcpy(ip + 24, dst, 16);
	icmp = ip + 40;
	memset(icmp, 0, icmp_len);
	icmp[0] = type;
	if (type == ICMP6_NA)
		icmp[4] = 0x60;	/* Solicited | Override */
	memcpy(icmp + 8, target, 16);
	icmp[24] = type == ICMP6_NS ? ND_OPT_SLLA : ND_OPT_TLLA;
	icmp[25] = 1;	/* length in units of 8 bytes */
	memcpy(icmp + 26, dev->mac.addr_bytes, 6);
	ck = icmp6_cksum(ip + 8, ip + 24, icmp, icmp_len);
	icmp[2] = (uint8_t)(ck >> 8);
	icmp[3] = (uint8_t)ck;
	dev->st.arp_tx++;
	finish_frame(dev, m, icmp + icmp_len);
}

/* An IPv6 frame carrying ICMPv6 whose IPv6 header starts at off: NS for
 * our link-local address gets an NA; NS and NA teach us the sender. */
void eth_ndp_rx(struct droce_dev *dev, struct rte_mbuf *m, uint32_t off)
{
	uint8_t b[40 + 32];
	const uint8_t *ip = b, *icmp = b + 40;
	uint32_t plen;

	if (eth_mbuf_copy(m, off, b, sizeof(b)) || ip[6] != ICMP6_NEXT_HDR) {
		dev->st.rx_not_roce++;
		return;
	}
	plen = (uint32_t)ip[4] << 8 | ip[5];
	if (ip[7] != 255 || plen < 32 || (icmp[0] != ICMP6_NS && icmp[0] != ICMP6_NA) ||
	    icmp6_cksum(ip + 8, ip + 24, icmp, 32) != 0 || plen != 32) {
		/* Only the exact NS/NA form with one link-layer option. */
		dev->st.rx_not_roce++;
		return;
	}
	dev->st.arp_rx++;
	if (icmp[24] == (icmp[0] == ICMP6_NS ? ND_OPT_SLLA : ND_OPT_TLLA) &&
	    icmp[25] == 1) {
		const uint8_t *who = icmp[0] == ICMP6_NS ? ip + 8 : icmp + 8;

		eth_neigh_learn(dev->eng, dev, who,
				(const struct rte_ether_addr *)(icmp + 26));
	}
	if (icmp[0] == ICMP6_NS && memcmp(icmp + 8, dev->gid[0].raw, 16) == 0)
		ndp_send(dev, ICMP6_NA, dev->gid[0].raw, ip + 8,
			 (const struct rte_ether_addr *)(icmp + 26));
}

/* ------------------------------------------------------- the table */

static bool is_v4(const uint8_t *g)
{
	static const uint8_t p[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g, p, sizeof(p)) == 0;
}

static void solicit(struct droce_dev *dev, const uint8_t *g)
{
	uint32_t ip;

	if (is_v4(g)) {
		memcpy(&ip, &g[12], 4);
		arp_send(dev, RTE_ARP_OP_REQUEST, ip, NULL);
	} else {
		ndp_send(dev, ICMP6_NS, g, NULL, NULL);
	}
}

bool eth_neigh_learn(struct droce_engine *eng, struct droce_dev *dev,
		     const uint8_t *g, const struct rte_ether_addr *mac)
{
	struct droce_neigh *n = neigh_find(dev, g);
	bool was = n && n->resolved;

	if (rte_is_zero_ether_addr(mac) || rte_is_multicast_ether_addr(mac))
		return false;
	if (n == NULL)
		n = neigh_alloc(dev, g);
	if (was && rte_is_same_ether_addr(&n->mac, mac))
		return true;
	rte_ether_addr_copy(mac, &n->mac);
	if (neigh_is_pending(n))
		dev->neigh_pending--;
	n->resolved = true;
	/* A changed MAC reaches the templates of the QPs using it when they
	 * next send (eth_qp_tmpl_ok): O(1) here whatever the number of QPs,
	 * however often a peer changes its source MAC. */
	if (was)
		n->gen++;
	/* Wake the QPs that waited for this peer. */
	for (struct droce_qp *qp = eng->arp_wait, *next; qp; qp = next) {
		next = qp->arp_next;
		if (qp->dev == dev && memcmp(qp->dst_gid.raw, g, 16) == 0) {
			eth_qp_arp_done(eng, qp);
			eth_qp_activate(eng, qp);
		}
	}
	return true;
}

bool eth_qp_resolve(struct droce_qp *qp, bool *failed)
{
	struct droce_dev *dev = qp->dev;
	const uint8_t *g = qp->dst_gid.raw;
	struct rte_ether_addr mac;
	struct droce_neigh *n;

	if (!eth_neigh_resolve(dev, g, &mac, failed))
		return false;
	memcpy(qp->tmpl.dst_mac, mac.addr_bytes, 6);
	qp->img_valid = false;	/* the header image has the old MAC */
	n = neigh_find(dev, g);
	if (n != NULL) {
		qp->neigh_genp = &n->gen;
		qp->neigh_gen = n->gen;
	} else {
		qp->neigh_genp = &qp->neigh_gen;	/* ourselves */
	}
	qp->tmpl_ready = true;
	return true;
}

bool eth_neigh_resolve(struct droce_dev *dev, const uint8_t *g,
		       struct rte_ether_addr *mac, bool *failed)
{
	struct droce_neigh *n;
	uint64_t now = eth_now(), hz = rte_get_tsc_hz();

	*failed = false;
	if (memcmp(g, dev->gid[0].raw, 16) == 0 ||
	    memcmp(g, dev->gid[1].raw, 16) == 0) {	/* ourselves: loopback */
		rte_ether_addr_copy(&dev->mac, mac);
		return true;
	}
	n = neigh_find(dev, g);
	if (n && n->resolved) {
		rte_ether_addr_copy(&n->mac, mac);
		return true;
	}
	if (n == NULL) {
		n = neigh_alloc(dev, g);
		n->deadline_tsc = now + hz / 1000 * dev->args.arp_timeout_ms;
		n->next_tsc = now + hz / 1000 * ETH_ARP_RETRY_MS;
		n->tries = 1;
		solicit(dev, g);
		return false;
	}
	if (n->deadline_tsc && now >= n->deadline_tsc)
		*failed = true;
	return false;
}

void eth_arp_timer(struct droce_dev *dev, uint64_t now)
{
	uint64_t hz;

	/* Nothing asked and unanswered: no scan of the table each tick. */
	if (likely(dev->neigh_pending == 0))
		return;
	hz = rte_get_tsc_hz();
	for (uint32_t i = 0; i < DROCE_NB_NEIGH; i++) {
		struct droce_neigh *n = &dev->neigh[i];

		if (!n->used || n->resolved || now < n->next_tsc)
			continue;
		if (now >= n->deadline_tsc) {
			char a[INET6_ADDRSTRLEN];

			if (n->tries != 0xff) {
				inet_ntop(AF_INET6, n->addr, a, sizeof(a));
				DROCE_LOG(ERR, "%s: no answer from %s after %u ms: connections to it fail, datagrams to it are dropped",
					  dev->args.name, a, dev->args.arp_timeout_ms);
				dev->st.arp_fail++;
				n->tries = 0xff;	/* reported */
			}
			/* Keep the entry a while so waiting QPs see the failure;
			 * a later resolve starts over. */
			if (now >= n->deadline_tsc + hz) {
				n->used = false;
				dev->neigh_pending--;
			}
			continue;
		}
		n->next_tsc = now + hz / 1000 * ETH_ARP_RETRY_MS;
		n->tries++;
		solicit(dev, n->addr);
	}
}
