/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Transmit: building a frame from a QP's header template, the ICRC, and a
 * per-device queue in front of rte_eth_tx_burst that keeps what the port
 * could not take (the link is treated as lossless: nothing is dropped here
 * unless the queue itself overflows, which back-pressure prevents).
 */
#include <string.h>

#include <rte_ethdev.h>

#include "eth_int.h"

/* A finished frame onto the device's transmit queue (eth_tx_enqueue()). */
static inline void tx_enqueue(struct droce_dev *dev, struct rte_mbuf *m)
{
	if (unlikely(dev->txq_len >= dev->txq_cap)) {
		/* Only reachable if back-pressure was ignored: count it. */
		dev->st.tx_dropped++;
		rte_pktmbuf_free(m);
		return;
	}
	dev->txq[dev->txq_len++] = m;
	dev->st.tx_pkts++;
	dev->st.tx_bytes += m->pkt_len;
}

/* One mbuf for a frame, from the device's stash, refilled in bulk (one
 * mempool call, one lcore lookup, per DROCE_MSTASH frames). A short pool
 * falls back to one at a time. */
static inline struct rte_mbuf *eth_mbuf_alloc(struct droce_dev *dev)
{
	if (unlikely(dev->mstash_n == 0)) {
		if (rte_pktmbuf_alloc_bulk(dev->pool, dev->mstash,
					   DROCE_MSTASH) != 0)
			return rte_pktmbuf_alloc(dev->pool);
		dev->mstash_n = DROCE_MSTASH;
	}
	return dev->mstash[--dev->mstash_n];
}

struct rte_mbuf *eth_build(struct droce_qp *qp, struct roce_pkt *p,
			   uint32_t payload_len, uint8_t **payload)
{
	struct droce_dev *dev = qp->dev;
	struct rte_mbuf *m = eth_mbuf_alloc(dev);
	uint8_t *buf;
	uint32_t hlen, pad;

	if (unlikely(m == NULL))
		return NULL;
	pad = (4 - (payload_len & 3)) & 3;
	p->payload_len = payload_len;
	p->pad = (uint8_t)pad;
	p->ip_id = dev->ip_id++;
	buf = rte_pktmbuf_mtod(m, uint8_t *);
	/* Ethernet..UDP come from the QP's last frame when they match. */
	hlen = roce_build_hdrs_cached(buf, p, &qp->hdr_cache);
	if (unlikely(hlen + payload_len + pad + ROCE_ICRC_LEN >
		     rte_pktmbuf_tailroom(m))) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	m->data_len = (uint16_t)(hlen + payload_len + pad + ROCE_ICRC_LEN);
	m->pkt_len = m->data_len;
	*payload = buf + hlen;
	return m;
}

/* ------------------------------------------------- zero-copy transmit */

/* The last reference to a zero-copy payload is gone (a port's transmit
 * copied it, a receiver in this process consumed it, or it was dropped):
 * on whatever thread freed the mbuf. The region may be freed by
 * ibv_dereg_mr as soon as this reaches 0: mr is not touched after. */
static void zc_free(void *addr, void *opaque)
{
	struct droce_mr *mr = opaque;

	(void)addr;
	__atomic_fetch_sub(&mr->zc_inflight, 1, __ATOMIC_RELEASE);
}

/*
 * A frame whose payload is not copied: [headers] -> [payload in place, an
 * external buffer in the application's registered memory] -> [pad, ICRC].
 * The wire bytes are those eth_build + eth_finish would give. The ICRC is
 * computed here, reading the payload in place once (eth_build's path
 * reads it twice: copy, then CRC). The shared info lives in the payload
 * mbuf's own (unused) data room, so nothing is allocated but mbufs.
 * Returns NULL if mbufs ran out (nothing was sent, nothing counted).
 */
struct rte_mbuf *eth_build_zc(struct droce_qp *qp, struct roce_pkt *p,
			      struct droce_mr *mr, const uint8_t *src,
			      uint32_t len)
{
	static const uint8_t zero[4];
	struct droce_dev *dev = qp->dev;
	struct rte_mbuf *h, *x, *t;
	struct rte_mbuf_ext_shared_info *shi;
	uint8_t *buf, *tail;
	uint32_t hlen, pad, crc;

	h = eth_mbuf_alloc(dev);
	x = eth_mbuf_alloc(dev);
	t = eth_mbuf_alloc(dev);
	if (unlikely(h == NULL || x == NULL || t == NULL)) {
		rte_pktmbuf_free(h);
		rte_pktmbuf_free(x);
		rte_pktmbuf_free(t);
		return NULL;
	}
	pad = (4 - (len & 3)) & 3;
	p->payload_len = len;
	p->pad = (uint8_t)pad;
	p->ip_id = dev->ip_id++;
	buf = rte_pktmbuf_mtod(h, uint8_t *);
	hlen = roce_build_hdrs_cached(buf, p, &qp->hdr_cache);
	h->data_len = (uint16_t)hlen;
	crc = roce_crc32(eth_hdrs_crc(h, p), src, len);
	crc = roce_icrc_final(roce_crc32(crc, zero, pad));
	/* Pad bytes are zero (IBTA 9.2.3) and covered by the ICRC. */
	tail = rte_pktmbuf_mtod(t, uint8_t *);
	memset(tail, 0, pad);
	roce_icrc_store(tail + pad, crc);
	t->data_len = (uint16_t)(pad + ROCE_ICRC_LEN);

	shi = (struct rte_mbuf_ext_shared_info *)((uint8_t *)x +
		sizeof(struct rte_mbuf) + rte_pktmbuf_priv_size(x->pool));
	shi->free_cb = zc_free;
	shi->fcb_opaque = mr;
	rte_mbuf_ext_refcnt_set(shi, 1);
	__atomic_fetch_add(&mr->zc_inflight, 1, __ATOMIC_RELAXED);
	/* Only ports that never DMA take these (eth_port.c): the IOVA is
	 * the address, as with --iova-mode=va, and nobody maps it. */
	rte_pktmbuf_attach_extbuf(x, (void *)(uintptr_t)src,
				  (rte_iova_t)(uintptr_t)src, (uint16_t)len, shi);
	x->data_len = (uint16_t)len;

	h->next = x;
	x->next = t;
	h->nb_segs = 3;
	h->pkt_len = hlen + len + pad + ROCE_ICRC_LEN;
	dev->st.tx_zc++;
	return h;
}

/* Zero a frame's 0-3 pad bytes (IBTA 9.2.3; the ICRC covers them) before
 * `end`, the ICRC's slot: one 4-byte store, whose overflow lands in that
 * slot and is overwritten when the ICRC is stored (memset's call costs
 * more than the frame's whole header patch). */
static inline void zero_pad(uint8_t *end, uint32_t pad)
{
	const uint32_t zero = 0;

	memcpy(end - pad, &zero, sizeof(zero));
}

void eth_finish(struct droce_dev *dev, struct rte_mbuf *m,
		const struct roce_pkt *p)
{
	uint8_t *buf = rte_pktmbuf_mtod(m, uint8_t *);
	uint8_t *end = buf + m->data_len - ROCE_ICRC_LEN;

	zero_pad(end, p->pad);
	roce_icrc_store(end, roce_icrc_frame(buf, p));
	eth_xmit(dev, m, p);
}

uint32_t eth_hdrs_crc(const struct rte_mbuf *m, const struct roce_pkt *p)
{
	const uint8_t *buf = rte_pktmbuf_mtod(m, const uint8_t *);

	return roce_icrc_hdrs(buf + p->l3_off, p->payload_off - p->l3_off,
			      p->ipv6);
}

/* The frame's tail: pad bytes zeroed (IBTA 9.2.3) and carried into crc,
 * the ICRC so far over everything before them; the ICRC stored. */
static inline void finish_padded(struct rte_mbuf *m, uint32_t pad,
				 uint32_t crc)
{
	uint8_t *end = rte_pktmbuf_mtod_offset(m, uint8_t *,
					       m->data_len - ROCE_ICRC_LEN);

	if (pad) {
		zero_pad(end, pad);
		crc = roce_crc32(crc, end - pad, pad);
	}
	roce_icrc_store(end, roce_icrc_final(crc));
}

void eth_finish_crc(struct droce_dev *dev, struct rte_mbuf *m,
		    const struct roce_pkt *p, uint32_t crc)
{
	finish_padded(m, p->pad, crc);
	eth_xmit(dev, m, p);
}

void eth_send_payload(struct droce_dev *dev, struct rte_mbuf *m,
		      const struct roce_pkt *p, uint8_t *pl, const void *src,
		      uint32_t len)
{
	if (len >= ETH_CRC_COPY_MIN) {
		eth_finish_crc(dev, m, p,
			       roce_crc32_copy(eth_hdrs_crc(m, p), pl, src, len));
		return;
	}
	if (len)	/* src may be NULL then */
		memcpy(pl, src, len);
	eth_finish(dev, m, p);
}

static inline bool to_self(const struct droce_dev *dev, bool ipv6,
			   const uint8_t *dst_ip)
{
	return ipv6 ? memcmp(dst_ip, dev->gid[0].raw, 16) == 0 :
		      memcmp(dst_ip, &dev->args.ip, 4) == 0;
}

/* Two QPs of one device: the frame never leaves (the port could not loop
 * it back anyway); it is received on the next poll. */
static void loop_enqueue(struct droce_dev *dev, struct rte_mbuf *m)
{
	if (dev->loopq_len < ETH_LOOPQ_CAP) {
		dev->loopq[dev->loopq_len++] = m;
		dev->st.tx_pkts++;
		dev->st.tx_bytes += m->pkt_len;
	} else {
		dev->st.tx_dropped++;
		rte_pktmbuf_free(m);
	}
}

/* A finished frame (ICRC in place) to the port, or to ourselves. */
void eth_xmit(struct droce_dev *dev, struct rte_mbuf *m,
	      const struct roce_pkt *p)
{
	DROCE_TRACE("tx", dev->args.name, p);
	if (unlikely(to_self(dev, p->ipv6, p->dst_ip)))
		loop_enqueue(dev, m);
	else
		eth_tx_enqueue(dev, m);
}

/* ------------------------------------------ frames from the header image */

/* The QP's images from its template, when void (first use, or the template
 * changed: a new path, the peer's MAC learnt again). */
static inline void img_ready(struct droce_qp *qp)
{
	if (unlikely(!qp->img_valid)) {
		roce_image_init(&qp->img, &qp->tmpl);
		roce_ack_image_init(&qp->ack_img, &qp->img);
		qp->img_loop = to_self(qp->dev, qp->tmpl.ipv6,
				       qp->tmpl.dst_ip);
		qp->img_valid = true;
	}
}

static inline __attribute__((always_inline)) struct rte_mbuf *
img_build(struct droce_qp *qp, uint8_t opcode, uint8_t bth1, uint32_t bth_psn,
	  uint32_t ext_len, uint32_t payload_len, uint8_t **ext)
{
	struct droce_dev *dev = qp->dev;
	struct rte_mbuf *m = eth_mbuf_alloc(dev);
	uint32_t pad = (4 - (payload_len & 3)) & 3, len;
	uint8_t *buf;

	if (unlikely(m == NULL))
		return NULL;
	img_ready(qp);
	buf = rte_pktmbuf_mtod(m, uint8_t *);
	/* The image is written whole: room for it and for the frame. */
	if (unlikely(RTE_MAX((uint32_t)qp->img.bth_off + ROCE_BTH_LEN + ext_len +
			     payload_len + pad + ROCE_ICRC_LEN,
			     (uint32_t)sizeof(qp->img.bytes)) >
		     rte_pktmbuf_tailroom(m))) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	len = roce_image_build(buf, &qp->img, opcode,
			       (uint8_t)(bth1 | pad << ROCE_BTH_PAD_SHIFT),
			       bth_psn, ext_len, payload_len + pad,
			       dev->ip_id++);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	*ext = buf + qp->img.bth_off + ROCE_BTH_LEN;
	return m;
}

struct rte_mbuf *eth_img_build(struct droce_qp *qp, uint8_t opcode,
			       uint8_t bth1, uint32_t bth_psn, uint32_t ext_len,
			       uint32_t payload_len, uint8_t **ext)
{
	return img_build(qp, opcode, bth1, bth_psn, ext_len, payload_len, ext);
}

/* For a path with no full struct roce_pkt to trace from: parse the frame
 * (out of line, off the path). */
__attribute__((noinline)) void eth_trace_frame(const char *dir,
					       const struct droce_dev *dev,
					       const struct rte_mbuf *m)
{
	struct roce_pkt p;

	if (roce_parse(rte_pktmbuf_mtod(m, const uint8_t *), m->data_len,
		       m->pkt_len, &p) == ROCE_OK)
		DROCE_TRACE(dir, dev->args.name, &p);
}

uint32_t eth_img_hdrs_crc(const struct droce_qp *qp, const struct rte_mbuf *m,
			  uint32_t ext_len)
{
	const struct roce_hdr_image *img = &qp->img;

	return roce_icrc_hdrs(rte_pktmbuf_mtod_offset(m, const uint8_t *,
						      img->l3_off),
			      img->bth_off + ROCE_BTH_LEN + ext_len - img->l3_off,
			      img->ipv6);
}

/* A frame of the QP's images onto its way: the loop queue if the peer is
 * this very device, else the port's transmit queue. */
static inline void img_enqueue(struct droce_qp *qp, struct rte_mbuf *m)
{
	if (unlikely(droce_trace_on))
		eth_trace_frame("tx", qp->dev, m);
	if (unlikely(qp->img_loop))
		loop_enqueue(qp->dev, m);
	else
		tx_enqueue(qp->dev, m);
}

/*
 * The frame onto the transmit queue with its ICRC still due, computed by
 * eth_tx_flush with the rest of the burst's (icrc_batch=1): false where it
 * must be computed now. Not for a frame to this very device (the loop
 * queue is read without a flush) or one traced (the trace shows the
 * frame whole), nor past a full queue (a frame dropped must not be
 * written to later), nor for the first image frame after a burst: alone
 * (a write_lat hop), its ICRC's chain overlaps what the engine does until
 * the burst instead of standing right before it (1.4 % of the round
 * trip). A frame's ICRC computed on its own waits for its multiplications
 * one after another, ~50 TSC cycles, and the frame built after it waits
 * behind them; a burst's, back to back, take ~8 a frame four a register
 * (forty-fifth round).
 */
static inline bool icrc_later(struct droce_qp *qp, struct rte_mbuf *m,
			      uint8_t *l3, uint32_t cover)
{
	struct droce_dev *dev = qp->dev;

	if (dev->icrc_l3 == NULL || qp->img_loop || droce_trace_on ||
	    unlikely(dev->txq_len >= dev->txq_cap))
		return false;
	if (dev->icrc_first) {
		dev->icrc_first = false;
		return false;
	}
	dev->icrc_l3[dev->icrc_n] = l3;
	dev->icrc_cover[dev->icrc_n] = (uint16_t)cover;
	dev->icrc_v6[dev->icrc_n] = qp->img.ipv6;
	dev->icrc_n++;
	tx_enqueue(dev, m);
	return true;
}

static inline __attribute__((always_inline)) void
img_send(struct droce_qp *qp, struct rte_mbuf *m, uint32_t ext_len,
	 const uint32_t *crc)
{
	const struct roce_hdr_image *img = &qp->img;
	uint8_t *buf = rte_pktmbuf_mtod(m, uint8_t *);
	uint8_t *end = buf + m->data_len - ROCE_ICRC_LEN;
	uint32_t pad = (buf[img->bth_off + 1] & ROCE_BTH_PAD_MASK) >>
		       ROCE_BTH_PAD_SHIFT;

	if (crc != NULL) {
		finish_padded(m, pad, *crc);
	} else {
		zero_pad(end, pad);
		if (icrc_later(qp, m, buf + img->l3_off,
			       (uint32_t)(end - buf) - img->l3_off))
			return;
		roce_icrc_store(end, roce_icrc_fit(buf + img->l3_off,
						   img->bth_off + ROCE_BTH_LEN +
						   ext_len - img->l3_off,
						   (uint32_t)(end - buf) -
						   img->l3_off, img->ipv6));
	}
	img_enqueue(qp, m);
}

void eth_img_send(struct droce_qp *qp, struct rte_mbuf *m, uint32_t ext_len,
		  const uint32_t *crc)
{
	img_send(qp, m, ext_len, crc);
}

bool eth_img_short(struct droce_qp *qp, uint8_t opcode, uint8_t bth1,
		   uint32_t bth_psn, const uint8_t *ext, uint32_t ext_len,
		   const uint8_t *payload, uint32_t len)
{
	uint8_t *e;
	struct rte_mbuf *m = img_build(qp, opcode, bth1, bth_psn, ext_len,
				       len, &e);

	if (unlikely(m == NULL))
		return false;
	roce_copy_small(e, ext, ext_len);
	roce_copy_small(e + ext_len, payload, len);
	img_send(qp, m, ext_len, NULL);
	return true;
}

void eth_tx_enqueue(struct droce_dev *dev, struct rte_mbuf *m)
{
	tx_enqueue(dev, m);
}

/* rte_eth_tx_burst, and with -Dstamps=true its stamp (the frames named
 * before the port may free them) */
static inline uint16_t tx_burst(struct droce_dev *dev, struct rte_mbuf **m,
				uint16_t want)
{
#ifdef DROCE_STAMPS
	uint32_t w[64];
	uint16_t n;

	for (uint16_t i = 0; i < want; i++)
		w[i] = eth_stamp_word(m[i]);
	droce_stamp(DROCE_STAMP_TX_CALL, w[0], w[want - 1], want);
	n = rte_eth_tx_burst(dev->port_id, 0, m, want);
	if (n)
		droce_stamp(DROCE_STAMP_TX, w[0], w[n - 1], n);
	return n;
#else
	return rte_eth_tx_burst(dev->port_id, 0, m, want);
#endif
}

int eth_tx_flush(struct droce_dev *dev)
{
	uint32_t sent = 0;

	if (dev->icrc_n) {
		dev->st.tx_icrc_lanes += roce_icrc_clmul_store_n(
			dev->icrc_l3, dev->icrc_cover, dev->icrc_v6,
			dev->icrc_n);
		dev->st.tx_icrc_batched += dev->icrc_n;
		dev->icrc_n = 0;
	}
	dev->icrc_first = true;

	while (sent < dev->txq_len) {
		uint16_t want = (uint16_t)RTE_MIN(dev->txq_len - sent, 64u);
		uint16_t n = tx_burst(dev, dev->txq + sent, want);

		dev->st.tx_bursts++;
		sent += n;
		if (n < want) {
			dev->st.tx_full++;
			break;
		}
	}
	droce_ab_count_tx(sent);
	if (sent && sent < dev->txq_len)
		memmove(dev->txq, dev->txq + sent,
			(dev->txq_len - sent) * sizeof(*dev->txq));
	dev->txq_len -= sent;
	return (int)sent;
}

static void count_ack_tx(struct droce_qp *qp, uint8_t syndrome)
{
	struct droce_dev_stats *d = &qp->dev->st;

	switch (syndrome & ROCE_AETH_CLASS_MASK) {
	case ROCE_AETH_ACK:
		d->tx_acks++;
		return;
	case ROCE_AETH_RNR_NAK:
		d->tx_rnr_naks++;
		qp->st.rnr_naks_tx++;
		break;
	default:
		switch (syndrome & 0x1f) {
		case ROCE_NAK_PSN_SEQ_ERR: d->tx_nak_seq++; break;
		case ROCE_NAK_INVALID_REQ: d->tx_nak_inv_req++; break;
		case ROCE_NAK_REMOTE_ACCESS: d->tx_nak_rem_access++; break;
		default: d->tx_nak_rem_op++; break;
		}
		break;
	}
	d->tx_naks++;
	qp->st.naks_tx++;
}

/*
 * A READ response packet (rop READ_RESP_*, len bytes from src) or an
 * atomic ACK (rop ATOMIC_ACK, *orig) from the header image (eth_qp_tmpl_ok()
 * must hold), queued: the bytes eth_build and eth_send_payload gave, with
 * no roce_pkt copied from the template and no header cache compare. The
 * AETH (an ACK, credits invalid, msn) on all but a READ MIDDLE (IBTA
 * 9.7.5.1, table 38). False if mbufs ran out (nothing sent).
 */
bool eth_img_response(struct droce_qp *qp, uint8_t rop, uint32_t psn,
		      uint32_t msn, const uint64_t *orig, const uint8_t *src,
		      uint32_t len)
{
	uint32_t ext_len = rop == ROCE_OP_READ_RESP_MIDDLE ? 0 :
			   ROCE_AETH_LEN + (orig ? ROCE_ATMACK_LEN : 0);
	bool fused = len >= ETH_CRC_COPY_MIN;
	struct rte_mbuf *m;
	uint32_t crc = 0;
	uint8_t *ext;

	m = eth_img_build(qp, ROCE_OPCODE(ROCE_TRANSPORT_RC, rop), 0,
			  psn & ROCE_PSN_MASK, ext_len, len, &ext);
	if (unlikely(m == NULL))
		return false;
	if (ext_len)
		roce_put_aeth(ext, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID,
			      msn);
	if (orig)
		roce_put_be64(ext + ROCE_AETH_LEN, *orig);
	if (fused && (rop == ROCE_OP_READ_RESP_MIDDLE ||
		      rop == ROCE_OP_READ_RESP_LAST) && eth_hdrs_crc_late(len))
		crc = roce_crc32_combine(eth_img_hdrs_crc(qp, m, ext_len),
					 roce_crc32_copy(0, ext + ext_len, src,
							 len), len);
	else if (fused)
		crc = roce_crc32_copy(eth_img_hdrs_crc(qp, m, ext_len),
				      ext + ext_len, src, len);
	else if (len)	/* src may be NULL then */
		memcpy(ext + ext_len, src, len);
	eth_img_send(qp, m, ext_len, fused ? &crc : NULL);
	return true;
}

void eth_send_ack(struct droce_qp *qp, uint8_t syndrome, uint32_t psn)
{
	struct roce_pkt p;
	struct rte_mbuf *m;
	uint32_t msn = qp->resp_msn & ROCE_PSN_MASK;
	uint8_t *pl;
	bool failed;

	if (unlikely(!eth_qp_tmpl_ok(qp)) && !eth_qp_resolve(qp, &failed)) {
		/* A NAK of the first request of a fresh QP, its peer not
		 * resolved (the request came from another address): answer
		 * the frame's sender rather than MAC 0 (which nobody gets). */
		const uint8_t *mac = qp->dev->rx_req_mac;

		if (mac == NULL ||
		    rte_is_zero_ether_addr((const struct rte_ether_addr *)mac) ||
		    rte_is_multicast_ether_addr((const struct rte_ether_addr *)mac))
			return;	/* the requester's timer recovers */
		p = qp->tmpl;
		memcpy(p.dst_mac, mac, 6);
		p.opcode = ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_ACK);
		p.psn = psn;
		p.aeth_syndrome = syndrome;
		p.aeth_msn = msn;
		m = eth_build(qp, &p, 0, &pl);
		if (unlikely(m == NULL))
			return;
		count_ack_tx(qp, syndrome);
		eth_finish(qp->dev, m, &p);
		return;
	}
	/* From the ACK image: its ICRC from a running CRC kept with it. */
	m = eth_mbuf_alloc(qp->dev);
	if (unlikely(m == NULL))
		return;	/* the requester's timer recovers a lost ACK */
	img_ready(qp);
	if (unlikely(rte_pktmbuf_tailroom(m) < sizeof(qp->ack_img.bytes))) {
		rte_pktmbuf_free(m);
		return;
	}
	m->data_len = (uint16_t)roce_ack_build(rte_pktmbuf_mtod(m, uint8_t *),
					       &qp->ack_img,
					       psn & ROCE_PSN_MASK, syndrome,
					       msn, qp->dev->ip_id++);
	m->pkt_len = m->data_len;
	count_ack_tx(qp, syndrome);
	img_enqueue(qp, m);
}
