/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive: one burst from the port, each frame classified (ARP, RoCEv2,
 * other), parsed by lib/roce, its ICRC verified (across mbuf segments), and
 * handed to the responder (requests) or the completer (responses) of its QP.
 * A long frame whose memory the receiver picks (a MIDDLE or LAST of the
 * WRITE, SEND or READ response in progress, a READ response FIRST or ONLY,
 * a SEND FIRST or ONLY with its receive WQE certain) is the exception: the
 * responder or completer checks its ICRC as it copies the payload into
 * place (eth_resp_place_late, eth_comp_place_late), one pass over the
 * bytes instead of two.
 * The commonest frames take shorter parses with the same checks: an RC
 * ACK (rx_ack4: the whole walk in short) and one-packet RC SENDs, WRITEs,
 * READ requests and responses (roce_parse_only4, then the usual walk).
 * Whatever fails a check is dropped and counted; nothing here trusts a byte
 * of the frame before roce_parse_rx has bounded it.
 */
#include <string.h>
#include <netinet/in.h>

#include <rte_ethdev.h>

#include "eth_int.h"

int eth_mbuf_copy_segs(const struct rte_mbuf *m, uint32_t off, void *dst,
		       uint32_t len)
{
	uint8_t *d = dst;

	if (unlikely((uint64_t)off + len > m->pkt_len))
		return -1;
	while (m && off >= m->data_len) {
		off -= m->data_len;
		m = m->next;
	}
	while (len && m) {
		uint32_t n = RTE_MIN(len, (uint32_t)m->data_len - off);

		memcpy(d, rte_pktmbuf_mtod_offset(m, uint8_t *, off), n);
		d += n;
		len -= n;
		off = 0;
		m = m->next;
	}
	return len ? -1 : 0;
}

/* CRC over [off, off+len) of a segmented frame. */
static uint32_t mbuf_crc(uint32_t crc, const struct rte_mbuf *m, uint32_t off,
			 uint32_t len)
{
	while (m && off >= m->data_len) {
		off -= m->data_len;
		m = m->next;
	}
	while (len && m) {
		uint32_t n = RTE_MIN(len, (uint32_t)m->data_len - off);

		crc = roce_crc32(crc, rte_pktmbuf_mtod_offset(m, uint8_t *, off), n);
		len -= n;
		off = 0;
		m = m->next;
	}
	return crc;
}

static inline __attribute__((always_inline)) bool
icrc_ok(const struct rte_mbuf *m, const uint8_t *frame, const struct roce_pkt *p)
{
	uint32_t got, want, body;
	uint8_t tail[ROCE_ICRC_LEN];

	if (m->nb_segs == 1)
		return roce_icrc_fit(frame + p->l3_off,
				     p->payload_off - p->l3_off,
				     p->frame_len - ROCE_ICRC_LEN - p->l3_off,
				     p->ipv6) ==
		       roce_icrc_load(frame + p->frame_len - ROCE_ICRC_LEN);
	/* Headers are contiguous (roce_parse_rx checked); the rest may not be. */
	want = roce_icrc_hdrs(frame + p->l3_off, p->payload_off - p->l3_off,
			      p->ipv6);
	body = p->frame_len - ROCE_ICRC_LEN - p->payload_off;
	want = roce_icrc_final(mbuf_crc(want, m, p->payload_off, body));
	if (eth_mbuf_copy(m, p->frame_len - ROCE_ICRC_LEN, tail, sizeof(tail)))
		return false;
	got = roce_icrc_load(tail);
	return got == want;
}

uint32_t eth_rx_late_start(const struct rte_mbuf *m, const struct roce_pkt *p)
{
	return roce_icrc_hdrs(rte_pktmbuf_mtod_offset(m, const uint8_t *,
						      p->l3_off),
			      p->payload_off - p->l3_off, p->ipv6);
}

static bool late_verdict(struct droce_qp *qp, const struct rte_mbuf *m,
			 bool sound)
{
	if (likely(sound))
		return true;
	/* Counted as received by eth_rx_one before it knew. */
	qp->dev->st.rx_pkts--;
	qp->dev->st.rx_bytes -= m->pkt_len;
	qp->st.rx_pkts--;
	qp->dev->st.rx_icrc_err++;
	return false;
}

bool eth_rx_late_done(struct droce_qp *qp, const struct rte_mbuf *m,
		      const struct roce_pkt *p, uint32_t crc)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t end = p->payload_off + p->payload_len;
	uint32_t pad = p->frame_len - ROCE_ICRC_LEN - end;

	if (pad)
		crc = roce_crc32(crc, frame + end, pad);
	return late_verdict(qp, m, roce_icrc_final(crc) ==
			    roce_icrc_load(frame + p->frame_len - ROCE_ICRC_LEN));
}

bool eth_rx_late_whole(struct droce_qp *qp, const struct rte_mbuf *m,
		       const struct roce_pkt *p)
{
	return late_verdict(qp, m, icrc_ok(m, rte_pktmbuf_mtod(m,
					const uint8_t *), p));
}

/*
 * An RC ACK of its usual shape (roce_parse_ack4) for a QP ready for it:
 * eth_rx_one's walk in short, every check and count the same, without the
 * general parse, the packet struct it fills and the dispatch (~200
 * instructions of the ~570 an ACK cost, half of it per write_lat hop).
 * False for anything else, or any check failed: the walk then takes the
 * frame and counts what is wrong with it.
 */
static inline bool rx_ack4(struct droce_engine *eng, struct droce_dev *dev,
			   const struct rte_mbuf *m, const uint8_t *frame)
{
	const uint32_t cover = ROCE_ACK4_LEN - ROCE_ETH_HLEN - ROCE_ICRC_LEN;
	struct roce_ack4 a;
	struct droce_qp *qp;

	if (m->nb_segs != 1 || (dev->args.vlan_tci & 0xfff) != 0 ||
	    unlikely(droce_trace_on) ||
	    !roce_parse_ack4(frame, m->data_len, m->pkt_len, &a) ||
	    memcmp(a.dst_ip, &dev->args.ip, 4) != 0 ||
	    (a.pkey | ROCE_PKEY_FULL) != ROCE_DEFAULT_PKEY)
		return false;
	qp = droce_qp_lookup(dev, a.dest_qp);
	if (qp == NULL || qp->state == IBV_QPS_RESET || !qp->tmpl_ready ||
	    qp->transport != ROCE_TRANSPORT_RC ||
	    roce_icrc_fit(frame + ROCE_ETH_HLEN, cover, cover, false) !=
	    roce_icrc_load(frame + ROCE_ACK4_LEN - ROCE_ICRC_LEN))
		return false;
	dev->st.rx_pkts++;
	dev->st.rx_bytes += m->pkt_len;
	qp->st.rx_pkts++;
	qp->last_rx_tsc = eng->rx_tsc;
	eth_comp_rx_ack(qp, a.syndrome, a.psn);
	return true;
}

void eth_rx_one(struct droce_engine *eng, struct droce_dev *dev,
		struct rte_mbuf *m)
{
	const uint8_t *frame = rte_pktmbuf_mtod(m, const uint8_t *);
	const struct roce_opcode_info *oi;
	struct droce_qp *qp = NULL;
	struct roce_pkt p;
	bool late = false;
	int ret;

	if (m->data_len == ROCE_ACK4_LEN && rx_ack4(eng, dev, m, frame))
		return;
	/* The common one-packet messages, parsed at fixed offsets (the same
	 * checks). */
	if (m->data_len > ROCE_ONLY4_OPCODE_OFF &&
	    roce_only4_opcode(frame[ROCE_ONLY4_OPCODE_OFF]) &&
	    roce_parse_only4(frame, m->data_len, m->pkt_len, &p))
		goto parsed;

	if (m->data_len >= ROCE_ETH_HLEN + ROCE_VLAN_HLEN) {
		const struct rte_ether_hdr *eh = (const void *)frame;
		uint16_t type = eh->ether_type;
		uint32_t off = ROCE_ETH_HLEN;
		uint16_t tci = 0;

		if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_VLAN)) {
			const struct rte_vlan_hdr *vh = (const void *)(eh + 1);

			tci = rte_be_to_cpu_16(vh->vlan_tci);
			type = vh->eth_proto;
			off += ROCE_VLAN_HLEN;
		}
		if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_ARP)) {
			if ((tci & 0xfff) == (dev->args.vlan_tci & 0xfff))
				eth_arp_rx(dev, m, off);
			else
				dev->st.rx_not_roce++;	/* another VLAN's */
			return;
		}
		/* IPv6 neighbour discovery: ICMPv6 (next header 58). */
		if (type == rte_cpu_to_be_16(RTE_ETHER_TYPE_IPV6) &&
		    m->data_len > off + 6 && frame[off + 6] == 58) {
			if ((tci & 0xfff) == (dev->args.vlan_tci & 0xfff))
				eth_ndp_rx(dev, m, off);
			else
				dev->st.rx_not_roce++;
			return;
		}
	}
	/* Only the fields a receiver reads (ROCE_RX_FIELDS); the rest are 0. */
	ret = roce_parse_rx(frame, m->data_len, m->pkt_len, &p);
	if (ret == ROCE_ERR_NOT_ROCE) {
		dev->st.rx_not_roce++;
		return;
	}
	if (unlikely(ret != ROCE_OK)) {
		dev->st.rx_malformed++;
		return;
	}
parsed:
	if (unlikely((p.ipv6 ? memcmp(p.dst_ip, dev->gid[0].raw, 16) :
			       memcmp(p.dst_ip, &dev->args.ip, 4)) != 0 ||
		     (p.has_vlan ? p.vlan_tci & 0xfff : 0) !=
		     (dev->args.vlan_tci & 0xfff))) {
		dev->st.rx_not_roce++;	/* not for this port (or its VLAN) */
		return;
	}
	/* A long frame whose memory the receiver picks (place_late says
	 * which): its ICRC is checked as its payload is copied into place
	 * (the P_Key is checked first, as it would be right after the
	 * ICRC). */
	if (p.payload_len >= ETH_RX_LATE_MIN && m->nb_segs == 1 &&
	    !droce_trace_on &&
	    (p.pkey | ROCE_PKEY_FULL) == ROCE_DEFAULT_PKEY) {
		qp = droce_qp_lookup(dev, p.dest_qp);
		late = qp != NULL && (roce_opcode_info(p.opcode)->flags &
				      ROCE_OPF_REQ ? eth_resp_place_late(qp, &p) :
				      eth_comp_place_late(qp, &p));
		dev->st.rx_icrc_late += late;
	}
	if (!late && unlikely(!icrc_ok(m, frame, &p))) {
		dev->st.rx_icrc_err++;
		return;
	}
	/* IBA 10.9.3: the packet's P_Key must match one in the port's table,
	 * which holds the default key alone (ibv_query_pkey). Two keys match
	 * when their low 15 bits are equal and one is a full member: 0xFFFF
	 * is, so 0x7FFF (a limited member) is accepted too, as rxe does.
	 * After the ICRC check, so that a damaged frame counts as one. */
	if (unlikely((p.pkey | ROCE_PKEY_FULL) != ROCE_DEFAULT_PKEY)) {
		dev->st.rx_bad_pkey++;
		return;
	}
	dev->st.rx_pkts++;
	dev->st.rx_bytes += m->pkt_len;
	if (unlikely(droce_trace_on))
		eth_trace_frame("rx", dev, m);
	/* (From here to the dispatch, eth_resp_place_late and
	 * eth_comp_place_late predict every check for a late frame.) */
	if (!late)
		qp = droce_qp_lookup(dev, p.dest_qp);
	if (unlikely(qp == NULL || qp->state == IBV_QPS_RESET)) {
		dev->st.rx_no_qp++;
		return;
	}
	/* A QP still waiting for its peer's MAC learns it from the peer, and
	 * its template is made ready now, not when it next sends: the next
	 * frame of this burst (a MIDDLE behind this FIRST, say) then takes
	 * the same path as any later one (eth_resp_place_late wants a ready
	 * template), whatever the burst boundaries. */
	if (unlikely(!qp->tmpl_ready)) {
		uint8_t g[16] = { [10] = 0xff, [11] = 0xff };
		bool failed;

		if (p.ipv6)
			memcpy(g, p.src_ip, 16);
		else
			memcpy(&g[12], p.src_ip, 4);
		if (memcmp(g, qp->dst_gid.raw, 16) == 0 &&
		    eth_neigh_learn(eng, dev, g,
				    (const struct rte_ether_addr *)p.src_mac))
			(void)eth_qp_resolve(qp, &failed);
	}
	oi = roce_opcode_info(p.opcode);
	/* A QP takes its own transport's opcodes only (IBTA 9.6.1.1). */
	if (unlikely((p.opcode & 0xe0) != qp->transport)) {
		dev->st.rx_malformed++;
		return;
	}
	qp->st.rx_pkts++;
	qp->last_rx_tsc = eng->rx_tsc;	/* 200 ms resolution is plenty */
	if (oi->flags & ROCE_OPF_REQ) {
		dev->rx_req_mac = p.src_mac;	/* for a NAK before ARP */
		droce_ab_probe(DROCE_AB_PROBE_RESP);
		eth_resp_rx(qp, &p, m, late);
		dev->rx_req_mac = NULL;
	}
	else if (oi->flags & ROCE_OPF_RESP)
		eth_comp_rx(qp, &p, m, late);
	else
		dev->st.rx_malformed++;
}

/*
 * Received frames' mbufs go back where the next transmit takes them from: a
 * plain one (direct, one segment, no other reference) of one of this
 * engine's device pools (a net_ring peer in this process sent it, or the
 * port receives into that pool) goes onto that device's stash, reset as
 * rte_pktmbuf_alloc() leaves it. That saves a mempool put and a get per
 * frame. Plain ones the stash has no room for (a receiver sends little)
 * go back to their pool in one put, as rte_mbuf_raw_free() would return
 * each (rte_pktmbuf_free_bulk()'s per-mbuf checks, out of line, cost a
 * receiving server ~40 instructions a frame); the rest is freed in one
 * bulk call. Only this engine touches its devices' stashes, so no lock.
 */
static __rte_noinline void rx_release_rest(struct rte_mbuf **rest,
					   uint32_t k)
{
	void *back[ETH_RX_BURST];
	struct rte_mempool *pool = rest[0]->pool;
	uint32_t j = 0, f = 0;

	for (uint32_t i = 0; i < k; i++) {
		struct rte_mbuf *m = rest[i];

		if (m->pool == pool && RTE_MBUF_DIRECT(m) && m->next == NULL &&
		    m->nb_segs == 1 && rte_mbuf_refcnt_read(m) == 1)
			back[j++] = m;
		else
			rest[f++] = m;
	}
	if (j)
		rte_mempool_put_bulk(pool, back, j);
	if (f)
		rte_pktmbuf_free_bulk(rest, f);
}

static void eth_rx_release(struct droce_engine *eng, struct rte_mbuf **b,
			   uint32_t n)
{
	struct rte_mbuf *rest[ETH_RX_BURST];
	uint32_t nd = eng->nb_devs, k = 0;

	for (uint32_t i = 0; i < n; i++) {
		struct rte_mbuf *m = b[i];
		struct droce_dev *owner = NULL;

		for (uint32_t d = 0; d < nd; d++)
			if (eng->devs[d]->pool == m->pool) {
				owner = eng->devs[d];
				break;
			}
		if (likely(owner && owner->mstash_n < DROCE_MSTASH_CAP &&
			   RTE_MBUF_DIRECT(m) && m->next == NULL &&
			   rte_mbuf_refcnt_read(m) == 1)) {
			rte_pktmbuf_reset(m);
			owner->mstash[owner->mstash_n++] = m;
		} else {
			rest[k++] = m;
		}
	}
	if (k)
		rx_release_rest(rest, k);
}

/* (6 / 4 / 2 until the twenty-third round of doc/performance.md: at
 * 16384 QPs on a Zen 5, receive ~5 % cheaper a frame with these, in 11 of
 * 12 alternating pairs) */
#define RX_AHEAD_BYTES	8
#define RX_AHEAD_QP	6
#define RX_AHEAD_SLOTS	3

/* rx_hint_bth's other cases: a VLAN tag, IPv6; 0 if neither. */
static __rte_noinline uint32_t rx_hint_bth_off(const uint8_t *f)
{
	uint32_t off = ROCE_ETH_HLEN;
	uint16_t type = (uint16_t)(f[12] << 8 | f[13]);

	if (type == RTE_ETHER_TYPE_VLAN) {
		type = (uint16_t)(f[16] << 8 | f[17]);
		off += ROCE_VLAN_HLEN;
	}
	if (type == RTE_ETHER_TYPE_IPV4 && f[off] == 0x45)
		return off + ROCE_IPV4_HLEN + ROCE_UDP_HLEN;
	if (type == RTE_ETHER_TYPE_IPV6 && f[off + 6] == IPPROTO_UDP)
		return off + ROCE_IPV6_HLEN + ROCE_UDP_HLEN;
	return 0;
}

/*
 * Where a RoCEv2 frame's BTH would start, for the hints below: untagged or
 * one 802.1Q tag, IPv4 without options or IPv6 with UDP next, and room for
 * the BTH; NULL for anything else. Nothing here is trusted: eth_rx_one
 * parses and checks the frame.
 */
static inline const uint8_t *rx_hint_bth(const struct rte_mbuf *m)
{
	const uint8_t *f = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t off;

	/* (no RoCEv2 frame is shorter: IPv4 with a bare BTH and ICRC; and
	 * it covers every byte rx_hint_bth_off reads) */
	if (m->data_len < ROCE_ETH_HLEN + ROCE_VLAN_HLEN + ROCE_IPV6_HLEN)
		return NULL;
	if (likely(f[12] == 0x08 && f[13] == 0x00 && f[14] == 0x45))
		off = ROCE_ETH_HLEN + ROCE_IPV4_HLEN + ROCE_UDP_HLEN;
	else if ((off = rx_hint_bth_off(f)) == 0)
		return NULL;
	if (m->data_len < off + ROCE_BTH_LEN)
		return NULL;
	return f + off;
}

/* The QP a BTH names (bytes 5-7). */
static inline const struct droce_qp *rx_hint_qp(const struct droce_dev *dev,
						const uint8_t *bth)
{
	return droce_qp_lookup(dev, (uint32_t)bth[5] << 16 |
			       (uint32_t)bth[6] << 8 | bth[7]);
}

/* The destination QP of a RoCEv2 frame, prefetched (a hint). */
void eth_rx_prefetch_qp(const struct droce_dev *dev, const struct rte_mbuf *m,
			const struct droce_qp **last)
{
	const uint8_t *bth = rx_hint_bth(m);
	const struct droce_qp *qp;

	if (bth == NULL || (qp = rx_hint_qp(dev, bth)) == NULL)
		return;
	/* (a run of frames for one QP: its lines once) */
	if (qp != *last)
		eth_qp_prefetch(qp);
	*last = qp;
	/* A WRITE's first bytes land at its RETH's address: a cold line
	 * per message with thousands of QPs (the region's, if the key
	 * names one; the responder checks rights and bounds later). */
	if ((roce_opcode_info(bth[0])->flags & (ROCE_OPF_RETH | ROCE_OPF_WRITE)) ==
	    (ROCE_OPF_RETH | ROCE_OPF_WRITE) &&
	    (uint32_t)(bth - rte_pktmbuf_mtod(m, const uint8_t *)) +
	    ROCE_BTH_LEN + ROCE_RETH_LEN <= m->data_len) {
		const struct droce_mr *mr;
		uint64_t va;
		uint32_t key;

		rte_prefetch0(&qp->resp_wr_id);	/* the responder's WRITE state */
		memcpy(&va, bth + ROCE_BTH_LEN, sizeof(va));
		memcpy(&key, bth + ROCE_BTH_LEN + 8, sizeof(key));
		va = rte_be_to_cpu_64(va);
		mr = droce_mr_lookup(dev, rte_be_to_cpu_32(key));
		/* (for writing; DPDK 22.11's rte_prefetch0_write is
		 * experimental) */
		if (mr && mr->kind == DROCE_KEY_MR && va - mr->iova < mr->len)
			__builtin_prefetch(mr->host + (va - mr->iova), 1, 3);
	}
}

/*
 * An ACK (or a READ or atomic response) completes the QP's oldest WQEs:
 * their state slots, once the QP's lines (asked for RX_AHEAD_QP frames
 * before) tell where they are. A hint, as above.
 */
void eth_rx_prefetch_slots(const struct droce_dev *dev,
			   const struct rte_mbuf *m)
{
	const uint8_t *bth = rx_hint_bth(m);
	const struct droce_qp *qp;

	if (bth == NULL || !(roce_opcode_info(bth[0])->flags & ROCE_OPF_AETH))
		return;
	qp = rx_hint_qp(dev, bth);
	if (qp) {
		uint32_t n = RTE_MIN(qp->req_hwm - qp->req_acked,
				     (uint32_t)ETH_QP_BUDGET);

		eth_qp_prefetch_slots(qp, qp->req_acked, n);
		/* ... and their wr_ids, which a signaled one's CQE carries
		 * (an array of its own: 8 a line) */
		for (uint32_t k = 0; k < n; k += 8)
			rte_prefetch0(&qp->sq_wrid[(qp->req_acked + k) &
						   (qp->sq_cnt - 1)]);
		/* An ACK that moves the oldest PSN re-arms the timer, which
		 * writes the QP's timer cell. */
		rte_prefetch0(eth_tcell(qp->eng, eth_tcell_id(qp)));
	}
}

/*
 * A burst with thousands of QPs (eng->prefetch): ahead of the frame being
 * received, the bytes of the one RX_AHEAD_BYTES on, and the QP named by
 * the one RX_AHEAD_QP on (its bytes asked for a few frames ago). A frame
 * or two (~250-450 cycles each) is not long enough to fetch a cold QP from
 * memory.
 */
static void rx_burst_ahead(struct droce_engine *eng, struct droce_dev *dev,
			   uint16_t n)
{
	const struct droce_qp *last = NULL;

	for (uint16_t i = 0; i < RTE_MIN(n, (uint16_t)RX_AHEAD_BYTES); i++)
		rte_prefetch0(rte_pktmbuf_mtod(eng->rx[i], void *));
	for (uint16_t i = 0; i < RTE_MIN(n, (uint16_t)RX_AHEAD_QP); i++)
		eth_rx_prefetch_qp(dev, eng->rx[i], &last);
	for (uint16_t i = 0; i < n; i++) {
		if (i + RX_AHEAD_BYTES < n)
			rte_prefetch0(rte_pktmbuf_mtod(eng->rx[i + RX_AHEAD_BYTES],
						       void *));
		if (i + RX_AHEAD_QP < n)
			eth_rx_prefetch_qp(dev, eng->rx[i + RX_AHEAD_QP], &last);
		if (i + RX_AHEAD_SLOTS < n)
			eth_rx_prefetch_slots(dev, eng->rx[i + RX_AHEAD_SLOTS]);
		eth_rx_one(eng, dev, eng->rx[i]);
	}
}

int eth_rx(struct droce_engine *eng, struct droce_dev *dev)
{
	uint64_t call;	/* (stamps: when the receive call began) */
	uint16_t n;

	if (unlikely(dev->loopq_len)) {
		/* Frames we sent to ourselves; what they cause loops next time. */
		uint32_t k = RTE_MIN(dev->loopq_len, (uint32_t)ETH_RX_BURST);
		struct rte_mbuf *b[ETH_RX_BURST];

		memcpy(b, dev->loopq, k * sizeof(*b));
		memmove(dev->loopq, dev->loopq + k,
			(dev->loopq_len - k) * sizeof(*b));
		dev->loopq_len -= k;
		eng->rx_tsc = eng->tsc_hz ? eth_turn_tsc(eng) : 0;
		for (uint32_t i = 0; i < k; i++)
			eth_rx_one(eng, dev, b[i]);
		eth_rx_release(eng, b, k);
		return (int)k;
	}
	call = droce_stamp_clock();
	n = rte_eth_rx_burst(dev->port_id, 0, eng->rx, ETH_RX_BURST);
	if (n) {
		eng->rx_tsc = eng->tsc_hz ? eth_turn_tsc(eng) : 0;
		droce_stamp_rx(call, eth_stamp_word(eng->rx[0]),
			       eth_stamp_word(eng->rx[n - 1]), n);
	}

	if (unlikely(eng->prefetch)) {
		rx_burst_ahead(eng, dev, n);
	} else {
		for (uint16_t i = 0; i < n; i++) {
			if (i + 1 < n)
				rte_prefetch0(rte_pktmbuf_mtod(eng->rx[i + 1],
							       void *));
			eth_rx_one(eng, dev, eng->rx[i]);
		}
	}
	/* eth_rx_one keeps nothing. */
	if (n) {
		droce_stamp(DROCE_STAMP_RX_DONE, 0, 0, n);
		eth_rx_release(eng, eng->rx, n);
	}
	return n;
}
