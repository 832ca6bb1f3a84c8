/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce_parse(): Ethernet [+ one 802.1Q tag] + IPv4|IPv6 + UDP/4791 + BTH +
 * extended headers, validated against each other and against the frame
 * length. Written to be fuzzed: every read is preceded by a check that the
 * bytes lie inside the first `contig` bytes, and every length from the wire
 * is checked before it is used.
 *
 * Deliberately rejected (droce never sends them, rxe neither):
 *   - IPv4 options (IHL != 5) and fragments (MF or offset != 0, or the
 *     reserved flag bit): ROCE_ERR_BAD_IP
 *   - IPv6 extension headers (next header != UDP): ROCE_ERR_NOT_ROCE
 *   - QinQ / more than one VLAN tag: ROCE_ERR_NOT_ROCE
 * Bytes after the IP datagram are accepted only as Ethernet minimum-size
 * padding (frame of at most 60 bytes, 64 with a VLAN tag, FCS stripped).
 * Reserved BTH/DETH bits are ignored. The UDP checksum is not verified
 * (RoCEv2 senders put 0); the ICRC is not verified (roce_icrc_frame).
 */
#include <string.h>

#include "roce.h"
#include "roce_bytes.h"

#define ETH_MIN_FRAME	60	/* without FCS */

static int
parse_ipv4(const uint8_t *ip, uint32_t room, struct roce_pkt *p,
	   uint32_t *ip_len, uint32_t *l4_len)
{
	uint32_t ihl, tot;

	if (room < ROCE_IPV4_HLEN)
		return ROCE_ERR_TRUNCATED;
	if ((ip[0] >> 4) != 4)
		return ROCE_ERR_BAD_IP;
	ihl = (uint32_t)(ip[0] & 0x0f) * 4;
	if (ihl < ROCE_IPV4_HLEN)
		return ROCE_ERR_BAD_IP;
	if (ip[9] != ROCE_IPPROTO_UDP)
		return ROCE_ERR_NOT_ROCE;
	p->frag_off = rd16(ip + 6);
	/* MF, a fragment offset, or the reserved (must be 0) flag bit. */
	if ((p->frag_off & ~0x4000u) != 0)
		return ROCE_ERR_BAD_IP;
	/* Look at the UDP port before complaining about options, so that
	 * non-RoCE traffic is reported as such. */
	if (room < ihl + ROCE_UDP_HLEN)
		return ROCE_ERR_TRUNCATED;
	if (rd16(ip + ihl + 2) != ROCE_UDP_DPORT)
		return ROCE_ERR_NOT_ROCE;
	if (ihl != ROCE_IPV4_HLEN)
		return ROCE_ERR_BAD_IP;	/* options: not supported */
	if (!ipv4_cksum20_ok(ip))	/* (ihl is 20 here) */
		return ROCE_ERR_BAD_IP;
	tot = rd16(ip + 2);
	if (tot < ihl + ROCE_UDP_HLEN)
		return ROCE_ERR_BAD_IP;
	p->tos = ip[1];
	p->ip_id = rd16(ip + 4);
	p->ttl = ip[8];
	memcpy(p->src_ip, ip + 12, 4);
	memcpy(p->dst_ip, ip + 16, 4);
	*ip_len = tot;
	*l4_len = tot - ihl;
	return ROCE_OK;
}

static int
parse_ipv6(const uint8_t *ip, uint32_t room, struct roce_pkt *p,
	   uint32_t *ip_len, uint32_t *l4_len)
{
	uint32_t w;

	if (room < ROCE_IPV6_HLEN)
		return ROCE_ERR_TRUNCATED;
	w = rd32(ip);
	if ((w >> 28) != 6)
		return ROCE_ERR_BAD_IP;
	if (ip[6] != ROCE_IPPROTO_UDP)
		return ROCE_ERR_NOT_ROCE;	/* incl. extension headers */
	if (room < ROCE_IPV6_HLEN + ROCE_UDP_HLEN)
		return ROCE_ERR_TRUNCATED;
	if (rd16(ip + ROCE_IPV6_HLEN + 2) != ROCE_UDP_DPORT)
		return ROCE_ERR_NOT_ROCE;
	p->ipv6 = true;
	p->tos = (uint8_t)(w >> 20);
	p->flow_label = w & 0xfffff;
	p->ttl = ip[7];
	memcpy(p->src_ip, ip + 8, 16);
	memcpy(p->dst_ip, ip + 24, 16);
	*l4_len = rd16(ip + 4);		/* 0 = jumbogram: rejected below */
	*ip_len = ROCE_IPV6_HLEN + *l4_len;
	return ROCE_OK;
}

/* rx: only the ROCE_RX_FIELDS (a constant: two copies of the body). */
static inline __attribute__((always_inline)) int
parse_bth_ext(const uint8_t *b, struct roce_pkt *p, uint32_t flags, bool rx)
{
	uint8_t f = b[1];
	uint32_t w;

	p->se = (f & ROCE_BTH_SE) != 0;
	if (!rx) {
		p->mig = (f & ROCE_BTH_MIG) != 0;
		p->pad = (uint8_t)((f & ROCE_BTH_PAD_MASK) >>
				   ROCE_BTH_PAD_SHIFT);
		p->tver = f & ROCE_BTH_TVER_MASK;
	}
	p->pkey = rd16(b + 2);
	w = rd32(b + 4);
	if (!rx) {
		p->fecn = (w & ROCE_BTH_FECN) != 0;
		p->becn = (w & ROCE_BTH_BECN) != 0;
	}
	p->dest_qp = w & ROCE_QPN_MASK;
	w = rd32(b + 8);
	if (!rx)
		p->ack_req = (w & ROCE_BTH_ACKREQ) != 0;
	p->psn = w & ROCE_PSN_MASK;
	b += ROCE_BTH_LEN;

	/* IBTA order; the caller checked that hdr_len bytes are there. */
	if (flags & ROCE_OPF_DETH) {
		p->deth_qkey = rd32(b);
		p->deth_src_qp = rd32(b + 4) & ROCE_QPN_MASK;
		b += ROCE_DETH_LEN;
	}
	if (flags & ROCE_OPF_RETH) {
		p->reth_va = rd64(b);
		p->reth_rkey = rd32(b + 8);
		p->reth_len = rd32(b + 12);
		b += ROCE_RETH_LEN;
	}
	if (flags & ROCE_OPF_ATMETH) {
		p->atm_va = rd64(b);
		p->atm_rkey = rd32(b + 8);
		p->atm_swap_add = rd64(b + 12);
		p->atm_compare = rd64(b + 20);
		b += ROCE_ATMETH_LEN;
	}
	if (flags & ROCE_OPF_AETH) {
		p->aeth_syndrome = b[0];
		p->aeth_msn = rd24(b + 1);
		b += ROCE_AETH_LEN;
	}
	if (flags & ROCE_OPF_ATMACK) {
		p->atmack_orig = rd64(b);
		b += ROCE_ATMACK_LEN;
	}
	if (flags & ROCE_OPF_IMMDT) {
		memcpy(&p->imm, b, sizeof(p->imm));	/* stays big-endian */
		b += ROCE_IMMDT_LEN;
	}
	if (flags & ROCE_OPF_IETH)
		p->ieth_rkey = rd32(b);
	return ROCE_OK;
}

/* Every frame the fast path does not take, and the reason for a reject. */
static __attribute__((noinline)) int
parse_full(const uint8_t *frame, uint32_t contig, uint32_t len,
	   struct roce_pkt *p);

int
roce_parse_full(const uint8_t *frame, uint32_t contig, uint32_t len,
		struct roce_pkt *p)
{
	if (contig > len)
		contig = len;
	return parse_full(frame, contig, len, p);
}

static __attribute__((noinline)) int
parse_full(const uint8_t *frame, uint32_t contig, uint32_t len,
	   struct roce_pkt *p)
{
	const struct roce_opcode_info *oi;
	uint32_t off, etype, ip_len, l4_len, udp_len, body, hlen, end;
	int rc;

	memset(p, 0, sizeof(*p));

	/* L2 */
	if (contig < ROCE_ETH_HLEN)
		return ROCE_ERR_TRUNCATED;
	memcpy(p->dst_mac, frame, 6);
	memcpy(p->src_mac, frame + 6, 6);
	etype = rd16(frame + 12);
	off = ROCE_ETH_HLEN;
	if (etype == ROCE_ETHERTYPE_VLAN) {
		if (contig < ROCE_ETH_HLEN + ROCE_VLAN_HLEN)
			return ROCE_ERR_TRUNCATED;
		p->has_vlan = true;
		p->vlan_tci = rd16(frame + 14);
		etype = rd16(frame + 16);
		off += ROCE_VLAN_HLEN;
	}

	/* L3 */
	p->l3_off = (uint16_t)off;
	if (etype == ROCE_ETHERTYPE_IPV4)
		rc = parse_ipv4(frame + off, contig - off, p, &ip_len, &l4_len);
	else if (etype == ROCE_ETHERTYPE_IPV6)
		rc = parse_ipv6(frame + off, contig - off, p, &ip_len, &l4_len);
	else
		rc = ROCE_ERR_NOT_ROCE;
	if (rc != ROCE_OK)
		return rc;
	/* ip_len <= 40 + 65535: no overflow below. */
	end = off + ip_len;
	if (end > len)
		return ROCE_ERR_TRUNCATED;
	if (end < len && len > ETH_MIN_FRAME + (p->has_vlan ? 4u : 0u))
		return ROCE_ERR_BAD_IP;	/* trailing bytes, not padding */
	off += ip_len - l4_len;

	/* L4: the parse_ipv* checked the 8 bytes are within contig. */
	p->l4_off = (uint16_t)off;
	p->udp_sport = rd16(frame + off);
	p->udp_dport = rd16(frame + off + 2);
	udp_len = rd16(frame + off + 4);
	p->udp_csum = rd16(frame + off + 6);
	if (udp_len != l4_len || udp_len < ROCE_UDP_HLEN)
		return ROCE_ERR_BAD_UDP;
	off += ROCE_UDP_HLEN;
	body = udp_len - ROCE_UDP_HLEN;	/* BTH .. ICRC */

	/* BTH and extended headers */
	p->bth_off = (uint16_t)off;
	if (body < ROCE_BTH_LEN + ROCE_ICRC_LEN)
		return ROCE_ERR_BAD_LENGTH;
	if (contig - off < ROCE_BTH_LEN)
		return ROCE_ERR_TRUNCATED;
	p->opcode = frame[off];
	oi = roce_opcode_info(p->opcode);
	if (oi->name == NULL)
		return ROCE_ERR_BAD_OPCODE;
	if ((frame[off + 1] & ROCE_BTH_TVER_MASK) != 0)
		return ROCE_ERR_BAD_TVER;
	hlen = oi->hdr_len;
	if (body < hlen + ROCE_ICRC_LEN)
		return ROCE_ERR_BAD_LENGTH;
	if (contig - off < hlen)
		return ROCE_ERR_TRUNCATED;
	parse_bth_ext(frame + off, p, oi->flags, false);

	/* Payload, pad and ICRC */
	body -= hlen + ROCE_ICRC_LEN;	/* payload + pad */
	if (oi->flags & ROCE_OPF_PAYLOAD) {
		/* Payloads are whole 4-byte words; only the last packet of
		 * a message can be short, so only it may carry pad. */
		if (body % 4 != 0 || p->pad > body)
			return ROCE_ERR_BAD_LENGTH;
		if (p->pad != 0 && !(oi->flags & ROCE_OPF_LAST))
			return ROCE_ERR_BAD_LENGTH;
	} else if (body != 0 || p->pad != 0) {
		return ROCE_ERR_BAD_LENGTH;
	}
	p->payload_off = (uint16_t)(off + hlen);
	p->payload_len = body - p->pad;
	p->frame_len = end;
	if (end <= contig)
		p->icrc = roce_icrc_load(frame + end - ROCE_ICRC_LEN);
	return ROCE_OK;
}

/*
 * The common case in one pass: IPv4 without options or IPv6 without
 * extension headers, at most one VLAN tag, a supported opcode, lengths that
 * agree. It makes every check parse_full makes (the frame's bytes are read
 * only after the one `contig` check that covers them), without the error
 * codes: a frame failing any of them goes to parse_full, which finds it bad
 * again and says why. So both accept exactly the same frames, with the
 * same fields (test_roce_parse_diff compares it with the old parser field
 * by field on the fuzz corpora, the rxe captures and mutated frames).
 */
#define PARSE_SLOW 1

/*
 * memset(p, 0, sizeof(*p)) as twelve 16-byte stores: gcc makes `rep stos`
 * of a memset of this size, whose start-up costs more than the stores.
 * Padding bytes too, so that parsed structs compare with memcmp().
 */
static inline void
pkt_zero(struct roce_pkt *p)
{
	typedef uint8_t v16 __attribute__((vector_size(16), aligned(1),
					   may_alias));
	v16 *d = (v16 *)(void *)p;

	_Static_assert(sizeof(*p) % 16 == 0, "struct roce_pkt: whole 16-byte blocks");
	d[0] = (v16){ 0 }; d[1] = (v16){ 0 }; d[2] = (v16){ 0 };
	d[3] = (v16){ 0 }; d[4] = (v16){ 0 }; d[5] = (v16){ 0 };
	d[6] = (v16){ 0 }; d[7] = (v16){ 0 }; d[8] = (v16){ 0 };
	d[9] = (v16){ 0 }; d[10] = (v16){ 0 }; d[11] = (v16){ 0 };
	_Static_assert(sizeof(*p) == 12 * 16, "struct roce_pkt changed size: adjust pkt_zero");
}

/* rx: fill only the ROCE_RX_FIELDS (a constant: two copies). */
static inline __attribute__((always_inline)) int
parse_fast(const uint8_t *frame, uint32_t contig, uint32_t len,
	   struct roce_pkt *p, bool rx)
{
	const struct roce_opcode_info *oi;
	const uint8_t *ip, *udp, *b;
	uint32_t off, etype, hl, ip_len, l4_len, body, hlen, end, flags, w = 0;
	uint32_t tci = 0;
	uint8_t pad;
	bool vlan = false, v6;

	/* The smallest accepted frame: Ethernet, IPv4, UDP, BTH (+ ICRC). */
	if (contig < ROCE_ETH_HLEN + ROCE_IPV4_HLEN + ROCE_UDP_HLEN +
		     ROCE_BTH_LEN)
		return PARSE_SLOW;
	etype = rd16(frame + 12);
	off = ROCE_ETH_HLEN;
	if (etype == ROCE_ETHERTYPE_VLAN) {
		vlan = true;
		tci = rd16(frame + 14);
		etype = rd16(frame + 16);
		off += ROCE_VLAN_HLEN;
	}
	ip = frame + off;
	if (etype == ROCE_ETHERTYPE_IPV4) {
		hl = ROCE_IPV4_HLEN;
		if (contig < off + hl + ROCE_UDP_HLEN + ROCE_BTH_LEN)
			return PARSE_SLOW;
		/* Version 4 and IHL 5; UDP; no fragment, no reserved flag;
		 * to 4791; the header checksum; a length that holds UDP. */
		if (ip[0] != 0x45 || ip[9] != ROCE_IPPROTO_UDP ||
		    (rd16(ip + 6) & ~0x4000u) != 0 ||
		    rd16(ip + hl + 2) != ROCE_UDP_DPORT ||
		    !ipv4_cksum20_ok(ip))
			return PARSE_SLOW;
		ip_len = rd16(ip + 2);
		if (ip_len < hl + ROCE_UDP_HLEN)
			return PARSE_SLOW;
		l4_len = ip_len - hl;
		v6 = false;
	} else if (etype == ROCE_ETHERTYPE_IPV6) {
		hl = ROCE_IPV6_HLEN;
		if (contig < off + hl + ROCE_UDP_HLEN + ROCE_BTH_LEN)
			return PARSE_SLOW;
		w = rd32(ip);
		if ((w >> 28) != 6 || ip[6] != ROCE_IPPROTO_UDP ||
		    rd16(ip + hl + 2) != ROCE_UDP_DPORT)
			return PARSE_SLOW;
		l4_len = rd16(ip + 4);
		ip_len = hl + l4_len;
		v6 = true;
	} else {
		return PARSE_SLOW;
	}
	end = off + ip_len;
	if (end > len ||
	    (end < len && len > ETH_MIN_FRAME + (vlan ? 4u : 0u)))
		return PARSE_SLOW;
	udp = ip + hl;
	/* UDP length = the IP payload, and room for BTH and ICRC. */
	if (rd16(udp + 4) != l4_len ||
	    l4_len < ROCE_UDP_HLEN + ROCE_BTH_LEN + ROCE_ICRC_LEN)
		return PARSE_SLOW;
	body = l4_len - ROCE_UDP_HLEN;
	b = udp + ROCE_UDP_HLEN;
	oi = roce_opcode_info(b[0]);
	hlen = oi->hdr_len;
	flags = oi->flags;
	if (oi->name == NULL || (b[1] & ROCE_BTH_TVER_MASK) != 0 ||
	    body < hlen + ROCE_ICRC_LEN ||
	    contig - (off + hl + ROCE_UDP_HLEN) < hlen)
		return PARSE_SLOW;
	body -= hlen + ROCE_ICRC_LEN;	/* payload + pad */
	pad = (uint8_t)((b[1] & ROCE_BTH_PAD_MASK) >> ROCE_BTH_PAD_SHIFT);
	if (flags & ROCE_OPF_PAYLOAD) {
		if (body % 4 != 0 || pad > body ||
		    (pad != 0 && !(flags & ROCE_OPF_LAST)))
			return PARSE_SLOW;
	} else if (body != 0 || pad != 0) {
		return PARSE_SLOW;
	}

	/* Accepted. */
	pkt_zero(p);
	if (!rx)
		memcpy(p->dst_mac, frame, 6);
	memcpy(p->src_mac, frame + 6, 6);
	p->has_vlan = vlan;
	p->vlan_tci = (uint16_t)tci;
	p->ipv6 = v6;
	if (!v6) {
		if (!rx) {
			p->tos = ip[1];
			p->ttl = ip[8];
			p->ip_id = rd16(ip + 4);
			p->frag_off = rd16(ip + 6);
		}
		memcpy(p->src_ip, ip + 12, 4);
		memcpy(p->dst_ip, ip + 16, 4);
	} else {
		if (!rx) {
			p->tos = (uint8_t)(w >> 20);
			p->ttl = ip[7];
			p->flow_label = w & 0xfffff;
		}
		memcpy(p->src_ip, ip + 8, 16);
		memcpy(p->dst_ip, ip + 24, 16);
	}
	if (!rx) {
		p->udp_sport = rd16(udp);
		p->udp_dport = ROCE_UDP_DPORT;
		p->udp_csum = rd16(udp + 6);
	}
	p->opcode = b[0];
	parse_bth_ext(b, p, flags, rx);
	p->l3_off = (uint16_t)off;
	if (!rx) {
		p->l4_off = (uint16_t)(off + hl);
		p->bth_off = (uint16_t)(off + hl + ROCE_UDP_HLEN);
	}
	p->payload_off = (uint16_t)(off + hl + ROCE_UDP_HLEN + hlen);
	p->payload_len = body - pad;
	p->frame_len = end;
	if (!rx && end <= contig)
		p->icrc = roce_icrc_load(frame + end - ROCE_ICRC_LEN);
	return ROCE_OK;
}

/* The fast path, else the full parser (which also says why a frame is bad). */
static inline __attribute__((always_inline)) int
parse(const uint8_t *frame, uint32_t contig, uint32_t len, struct roce_pkt *p,
      bool rx)
{
	if (contig > len)
		contig = len;
	if (__builtin_expect(parse_fast(frame, contig, len, p, rx) == ROCE_OK, 1))
		return ROCE_OK;
	return parse_full(frame, contig, len, p);
}

int
roce_parse(const uint8_t *frame, uint32_t contig, uint32_t len,
	   struct roce_pkt *p)
{
	return parse(frame, contig, len, p, false);
}

int
roce_parse_rx(const uint8_t *frame, uint32_t contig, uint32_t len,
	      struct roce_pkt *p)
{
	return parse(frame, contig, len, p, true);
}

bool
roce_parse_ack4(const uint8_t *frame, uint32_t contig, uint32_t len,
		struct roce_ack4 *a)
{
	const uint8_t *ip = frame + ROCE_ETH_HLEN;
	const uint8_t *udp = ip + ROCE_IPV4_HLEN;
	const uint8_t *b = udp + ROCE_UDP_HLEN;
	const uint32_t l3_len = ROCE_ACK4_LEN - ROCE_ETH_HLEN;

	/* parse_fast's checks for this one shape: no trailing bytes (62 is
	 * past the Ethernet minimum, so none are padding); IPv4, IHL 5, UDP,
	 * no fragment, the lengths of exactly BTH + AETH + ICRC; the
	 * opcode; TVer 0 and no pad (an ACK has no payload); the header
	 * checksum last, the dearest. */
	if (len != ROCE_ACK4_LEN || contig < ROCE_ACK4_LEN ||
	    rd16(frame + 12) != ROCE_ETHERTYPE_IPV4 || ip[0] != 0x45 ||
	    ip[9] != ROCE_IPPROTO_UDP || (rd16(ip + 6) & ~0x4000u) != 0 ||
	    rd16(ip + 2) != l3_len || rd16(udp + 2) != ROCE_UDP_DPORT ||
	    rd16(udp + 4) != l3_len - ROCE_IPV4_HLEN ||
	    b[0] != ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_ACK) ||
	    (b[1] & (ROCE_BTH_TVER_MASK | ROCE_BTH_PAD_MASK)) != 0 ||
	    !ipv4_cksum20_ok(ip))
		return false;
	memcpy(a->src_ip, ip + 12, 4);
	memcpy(a->dst_ip, ip + 16, 4);
	a->se = (b[1] & ROCE_BTH_SE) != 0;
	a->pkey = rd16(b + 2);
	a->dest_qp = rd32(b + 4) & ROCE_QPN_MASK;
	a->psn = rd32(b + 8) & ROCE_PSN_MASK;
	a->syndrome = b[ROCE_BTH_LEN];
	a->msn = rd24(b + ROCE_BTH_LEN + 1);
	return true;
}

/*
 * roce_parse_only4 for an opcode whose extended headers are hlen bytes
 * (payload: may it carry one): parse_fast's checks for these shapes, the
 * BTH and where the payload lies. The datagram ends where the frame does
 * (a SEND ONLY without payload, 58 bytes, padded to the Ethernet minimum
 * goes the general way, which takes it); IPv4, IHL 5, UDP, no fragment;
 * UDP length = the IP payload; TVer 0; payload + pad a multiple of 4
 * holding the pad (none where there is no payload); the header checksum
 * last.
 */
static inline __attribute__((always_inline)) bool
only4_checked(const uint8_t *frame, uint32_t contig, uint32_t len,
	      struct roce_pkt *p, uint32_t hlen, bool payload)
{
	const uint8_t *ip = frame + ROCE_ETH_HLEN;
	const uint8_t *udp = ip + ROCE_IPV4_HLEN;
	const uint8_t *b = udp + ROCE_UDP_HLEN;
	uint32_t ip_len, body;
	uint8_t pad;

	if (contig < ROCE_ONLY4_BTH_END + hlen ||
	    len < ROCE_ONLY4_BTH_END + hlen + ROCE_ICRC_LEN ||
	    rd16(frame + 12) != ROCE_ETHERTYPE_IPV4 || ip[0] != 0x45 ||
	    ip[9] != ROCE_IPPROTO_UDP || (rd16(ip + 6) & ~0x4000u) != 0 ||
	    rd16(udp + 2) != ROCE_UDP_DPORT || (b[1] & ROCE_BTH_TVER_MASK) != 0)
		return false;
	ip_len = rd16(ip + 2);
	if (ROCE_ETH_HLEN + ip_len != len ||
	    rd16(udp + 4) != ip_len - ROCE_IPV4_HLEN)
		return false;
	body = len - ROCE_ONLY4_BTH_END - hlen - ROCE_ICRC_LEN; /* payload + pad */
	pad = (uint8_t)((b[1] & ROCE_BTH_PAD_MASK) >> ROCE_BTH_PAD_SHIFT);
	if (payload ? body % 4 != 0 || pad > body : body != 0 || pad != 0)
		return false;
	if (!ipv4_cksum20_ok(ip))
		return false;
	pkt_zero(p);
	memcpy(p->src_mac, frame + 6, 6);
	memcpy(p->src_ip, ip + 12, 4);
	memcpy(p->dst_ip, ip + 16, 4);
	p->opcode = b[0];
	p->se = (b[1] & ROCE_BTH_SE) != 0;
	p->pkey = rd16(b + 2);
	p->dest_qp = rd32(b + 4) & ROCE_QPN_MASK;
	p->psn = rd32(b + 8) & ROCE_PSN_MASK;
	p->l3_off = ROCE_ETH_HLEN;
	p->payload_off = (uint16_t)(ROCE_ONLY4_BTH_END + hlen);
	p->payload_len = body - pad;
	p->frame_len = len;
	return true;
}

/* roce_parse_only4's rarer opcodes (the caller looked at contig): a SEND
 * or WRITE ONLY with immediate, an atomic, an ATOMIC ACKNOWLEDGE. Their
 * extended headers in IBTA order, as parse_bth_ext. */
static __attribute__((noinline)) bool
only4_rare(const uint8_t *frame, uint32_t contig, uint32_t len,
	   struct roce_pkt *p)
{
	const uint8_t *b = frame + ROCE_ONLY4_BTH_END;

	switch (frame[ROCE_ONLY4_OPCODE_OFF]) {
	case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_SEND_ONLY_IMM):
		if (!only4_checked(frame, contig, len, p, ROCE_IMMDT_LEN, true))
			return false;
		memcpy(&p->imm, b, sizeof(p->imm));	/* stays big-endian */
		return true;
	case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_WRITE_ONLY_IMM):
		if (!only4_checked(frame, contig, len, p,
				   ROCE_RETH_LEN + ROCE_IMMDT_LEN, true))
			return false;
		p->reth_va = rd64(b);
		p->reth_rkey = rd32(b + 8);
		p->reth_len = rd32(b + 12);
		memcpy(&p->imm, b + ROCE_RETH_LEN, sizeof(p->imm));
		return true;
	case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_CMP_SWAP):
	case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_FETCH_ADD):
		if (!only4_checked(frame, contig, len, p, ROCE_ATMETH_LEN,
				   false))
			return false;
		p->atm_va = rd64(b);
		p->atm_rkey = rd32(b + 8);
		p->atm_swap_add = rd64(b + 12);
		p->atm_compare = rd64(b + 20);
		return true;
	case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_ATOMIC_ACK):
		if (!only4_checked(frame, contig, len, p,
				   ROCE_AETH_LEN + ROCE_ATMACK_LEN, false))
			return false;
		p->aeth_syndrome = b[0];
		p->aeth_msn = rd24(b + 1);
		p->atmack_orig = rd64(b + ROCE_AETH_LEN);
		return true;
	default:
		return false;
	}
}

bool
roce_parse_only4(const uint8_t *frame, uint32_t contig, uint32_t len,
		 struct roce_pkt *p)
{
	const uint8_t *b = frame + ROCE_ONLY4_BTH_END;

	if (contig < ROCE_ONLY4_BTH_END)
		return false;
	switch (frame[ROCE_ONLY4_OPCODE_OFF]) {
	case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_SEND_ONLY):
		return only4_checked(frame, contig, len, p, 0, true);
	case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_WRITE_ONLY):
	case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_READ_REQ):
		if (!only4_checked(frame, contig, len, p, ROCE_RETH_LEN,
				   frame[ROCE_ONLY4_OPCODE_OFF] ==
				   ROCE_OPCODE(ROCE_TRANSPORT_RC,
					       ROCE_OP_WRITE_ONLY)))
			return false;
		p->reth_va = rd64(b);
		p->reth_rkey = rd32(b + 8);
		p->reth_len = rd32(b + 12);
		return true;
	case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_READ_RESP_ONLY):
		if (!only4_checked(frame, contig, len, p, ROCE_AETH_LEN, true))
			return false;
		p->aeth_syndrome = b[0];
		p->aeth_msn = rd24(b + 1);
		return true;
	default:
		return only4_rare(frame, contig, len, p);
	}
}
