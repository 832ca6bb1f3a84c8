/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ARP: answer for our address, resolve peers, learn from what arrives.
 * A small table per device; an unresolved peer is retried every
 * ETH_ARP_RETRY_MS and given up after the device's arp_timeout_ms, at which
 * point the QPs waiting for it fail (eth_req.c) instead of hanging.
 */
#include <string.h>
#include <arpa/inet.h>

#include <rte_arp.h>
#include <rte_ether.h>

#include "eth_int.h"

static struct droce_neigh *neigh_find(struct droce_dev *dev, uint32_t ip)
{
	for (uint32_t i = 0; i < DROCE_NB_NEIGH; i++)
		if (dev->neigh[i].ip == ip)
			return &dev->neigh[i];
	return NULL;
}

static struct droce_neigh *neigh_alloc(struct droce_dev *dev, uint32_t ip)
{
	struct droce_neigh *n = neigh_find(dev, 0), *victim = &dev->neigh[0];

	if (n == NULL) {
		/* Table full: recycle a resolved entry (it is re-learnt). */
		for (uint32_t i = 0; i < DROCE_NB_NEIGH; i++)
			if (dev->neigh[i].resolved)
				victim = &dev->neigh[i];
		n = victim;
	}
	memset(n, 0, sizeof(*n));
	n->ip = ip;
	return n;
}

static void arp_send(struct droce_dev *dev, uint16_t op, uint32_t tip,
		     const struct rte_ether_addr *tha)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(dev->pool);
	struct rte_ether_hdr *eh;
	struct rte_arp_hdr *ah;

	if (m == NULL)
		return;
	eh = rte_pktmbuf_mtod(m, struct rte_ether_hdr *);
	if (op == RTE_ARP_OP_REQUEST)
		memset(&eh->dst_addr, 0xff, RTE_ETHER_ADDR_LEN);
	else
		rte_ether_addr_copy(tha, &eh->dst_addr);
	rte_ether_addr_copy(&dev->mac, &eh->src_addr);
	if (dev->args.vlan_tci) {
		struct rte_vlan_hdr *vh = (struct rte_vlan_hdr *)(eh + 1);

		eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN);
		vh->vlan_tci = rte_cpu_to_be_16(dev->args.vlan_tci);
		vh->eth_proto = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
		ah = (struct rte_arp_hdr *)(vh + 1);
	} else {
		eh->ether_type = rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP);
		ah = (struct rte_arp_hdr *)(eh + 1);
	}
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
	/* Pad to the Ethernet minimum (60 bytes without FCS). */
	m->data_len = RTE_ETHER_MIN_LEN - RTE_ETHER_CRC_LEN +
		      (dev->args.vlan_tci ? 4 : 0);
	m->pkt_len = m->data_len;
	memset((uint8_t *)(ah + 1), 0,
	       m->data_len - (uint32_t)((uint8_t *)(ah + 1) - (uint8_t *)eh));
	dev->st.arp_tx++;
	eth_tx_enqueue(dev, m);
}

void eth_arp_rx(struct droce_dev *dev, struct rte_mbuf *m, uint32_t off)
{
	const struct rte_arp_hdr *ah;
	struct rte_arp_hdr copy;

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
	    !rte_is_multicast_ether_addr(&ah->arp_data.arp_sha))
		eth_neigh_learn(dev->eng, dev, ah->arp_data.arp_sip,
				&ah->arp_data.arp_sha);
	if (ah->arp_opcode == rte_cpu_to_be_16(RTE_ARP_OP_REQUEST) &&
	    ah->arp_data.arp_tip == dev->args.ip)
		arp_send(dev, RTE_ARP_OP_REPLY, ah->arp_data.arp_sip,
			 &ah->arp_data.arp_sha);
}

void eth_neigh_learn(struct droce_engine *eng, struct droce_dev *dev,
		     uint32_t ip, const struct rte_ether_addr *mac)
{
	struct droce_neigh *n = neigh_find(dev, ip);
	bool was = n && n->resolved;

	if (ip == 0)
		return;
	if (n == NULL) {
		/* Only learn from RoCE/ARP senders: our peers. */
		n = neigh_alloc(dev, ip);
	}
	if (was && rte_is_same_ether_addr(&n->mac, mac))
		return;
	rte_ether_addr_copy(mac, &n->mac);
	n->resolved = true;
	/* Wake the QPs that waited for this peer. */
	for (struct droce_qp *qp = eng->arp_wait, *next; qp; qp = next) {
		next = qp->arp_next;
		if (qp->dev == dev && qp->dst_ip == ip) {
			eth_qp_arp_done(eng, qp);
			eth_qp_activate(eng, qp);
		}
	}
	/* A changed MAC must reach templates of QPs not on the timer list. */
	if (was)
		for (uint32_t i = 0; i < DROCE_MAX_QP; i++) {
			struct droce_qp *qp = dev->qp_tbl[i];

			if (qp && qp->dst_ip == ip)
				qp->tmpl_ready = false;
		}
}

bool eth_neigh_resolve(struct droce_dev *dev, uint32_t ip,
		       struct rte_ether_addr *mac, bool *failed)
{
	struct droce_neigh *n = neigh_find(dev, ip);
	uint64_t now = eth_now(), hz = rte_get_tsc_hz();

	*failed = false;
	if (ip == dev->args.ip) {	/* ourselves: loopback */
		rte_ether_addr_copy(&dev->mac, mac);
		return true;
	}
	if (n && n->resolved) {
		rte_ether_addr_copy(&n->mac, mac);
		return true;
	}
	if (n == NULL) {
		n = neigh_alloc(dev, ip);
		n->deadline_tsc = now + hz / 1000 * dev->args.arp_timeout_ms;
		n->next_tsc = now + hz / 1000 * ETH_ARP_RETRY_MS;
		n->tries = 1;
		arp_send(dev, RTE_ARP_OP_REQUEST, ip, NULL);
		return false;
	}
	if (n->deadline_tsc && now >= n->deadline_tsc) {
		*failed = true;
		return false;
	}
	return false;
}

void eth_arp_timer(struct droce_dev *dev, uint64_t now)
{
	uint64_t hz = rte_get_tsc_hz();

	for (uint32_t i = 0; i < DROCE_NB_NEIGH; i++) {
		struct droce_neigh *n = &dev->neigh[i];

		if (n->ip == 0 || n->resolved || now < n->next_tsc)
			continue;
		if (now >= n->deadline_tsc) {
			char ip[INET_ADDRSTRLEN];

			if (n->tries != 0xff) {
				inet_ntop(AF_INET, &n->ip, ip, sizeof(ip));
				DROCE_LOG(ERR, "%s: no ARP reply from %s after %u ms: its QPs fail",
					  dev->args.name, ip, dev->args.arp_timeout_ms);
				dev->st.arp_fail++;
				n->tries = 0xff;	/* reported */
			}
			/* Keep the entry a while so waiting QPs see the failure;
			 * a later resolve starts over. */
			if (now >= n->deadline_tsc + hz) {
				n->ip = 0;
			}
			continue;
		}
		n->next_tsc = now + hz / 1000 * ETH_ARP_RETRY_MS;
		n->tries++;
		arp_send(dev, RTE_ARP_OP_REQUEST, n->ip, NULL);
	}
}
