/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * roce_build_hdrs(): the inverse of roce_parse() for everything up to the
 * payload. Lengths (IP total/payload length, UDP length) are derived from
 * the opcode's header length, p->payload_len and p->pad; every other field
 * is written exactly as given, so that parse -> build is the identity on
 * any frame parse accepts (IPv4 without options, no Ethernet padding).
 */
#include <string.h>

#include "roce.h"
#include "roce_bytes.h"

/* One's-complement sum of len bytes in native 16-bit words (RFC 1071:
 * the sum is byte-order independent, up to a swap of the result). */
static inline uint64_t
sum_native(const uint8_t *b, uint32_t len)
{
	uint64_t sum = 0;
	uint32_t i = 0;

	for (; i + 4 <= len; i += 4) {
		uint32_t w;

		memcpy(&w, b + i, 4);
		sum += w;
	}
	for (; i + 2 <= len; i += 2) {
		uint16_t w;

		memcpy(&w, b + i, 2);
		sum += w;
	}
	if (len & 1) {
		uint8_t last[2] = { b[len - 1], 0 };
		uint16_t w;

		memcpy(&w, last, 2);
		sum += w;
	}
	return sum;
}

uint16_t
roce_ipv4_cksum(const uint8_t *hdr, uint32_t len)
{
	uint64_t sum;
	uint16_t c;

	if (__builtin_expect(len == ROCE_IPV4_HLEN, 1))
		return ipv4_cksum20(hdr);	/* the only size droce uses */
	sum = sum_native(hdr, len);
	if (len >= 12)
		sum -= ld16n(hdr + 10);	/* the checksum field counts as 0 */
	c = (uint16_t)~fold16(sum);
	/* As a host-order value of the big-endian field. */
	return rd16((const uint8_t *)&c);
}

static uint32_t
build_bth_ext(uint8_t *b, const struct roce_pkt *p, uint32_t flags)
{
	uint8_t *s = b;

	b[0] = p->opcode;
	b[1] = (uint8_t)((p->se ? ROCE_BTH_SE : 0) |
			 (p->mig ? ROCE_BTH_MIG : 0) |
			 ((p->pad << ROCE_BTH_PAD_SHIFT) & ROCE_BTH_PAD_MASK) |
			 (p->tver & ROCE_BTH_TVER_MASK));
	wr16(b + 2, p->pkey);
	roce_put_be32(b + 4, (p->fecn ? ROCE_BTH_FECN : 0) |
			     (p->becn ? ROCE_BTH_BECN : 0) |
			     (p->dest_qp & ROCE_QPN_MASK));
	roce_put_be32(b + 8, (p->ack_req ? ROCE_BTH_ACKREQ : 0) |
			     (p->psn & ROCE_PSN_MASK));
	b += ROCE_BTH_LEN;

	if (flags & ROCE_OPF_DETH) {
		roce_put_be32(b, p->deth_qkey);
		roce_put_be32(b + 4, p->deth_src_qp & ROCE_QPN_MASK);
		b += ROCE_DETH_LEN;
	}
	if (flags & ROCE_OPF_RETH) {
		roce_put_reth(b, p->reth_va, p->reth_rkey, p->reth_len);
		b += ROCE_RETH_LEN;
	}
	if (flags & ROCE_OPF_ATMETH) {
		roce_put_atmeth(b, p->atm_va, p->atm_rkey, p->atm_swap_add,
				p->atm_compare);
		b += ROCE_ATMETH_LEN;
	}
	if (flags & ROCE_OPF_AETH) {
		roce_put_aeth(b, p->aeth_syndrome, p->aeth_msn);
		b += ROCE_AETH_LEN;
	}
	if (flags & ROCE_OPF_ATMACK) {
		roce_put_be64(b, p->atmack_orig);
		b += ROCE_ATMACK_LEN;
	}
	if (flags & ROCE_OPF_IMMDT) {
		memcpy(b, &p->imm, ROCE_IMMDT_LEN);	/* already big-endian */
		b += ROCE_IMMDT_LEN;
	}
	if (flags & ROCE_OPF_IETH) {
		roce_put_be32(b, p->ieth_rkey);
		b += ROCE_IETH_LEN;
	}
	return (uint32_t)(b - s);
}

uint32_t
roce_build_hdrs(uint8_t *buf, struct roce_pkt *p)
{
	const struct roce_opcode_info *oi = roce_opcode_info(p->opcode);
	uint32_t off = 0, l4_len, hlen;
	uint8_t *ip;

	/* L2 */
	memcpy(buf, p->dst_mac, 6);
	memcpy(buf + 6, p->src_mac, 6);
	off = 12;
	if (p->has_vlan) {
		wr16(buf + off, ROCE_ETHERTYPE_VLAN);
		wr16(buf + off + 2, p->vlan_tci);
		off += ROCE_VLAN_HLEN;
	}
	wr16(buf + off, p->ipv6 ? ROCE_ETHERTYPE_IPV6 : ROCE_ETHERTYPE_IPV4);
	off += 2;

	/* Lengths. A reserved opcode gets just a BTH (it is the caller's
	 * bug; roce_parse would reject the result). */
	hlen = oi->name != NULL ? oi->hdr_len : ROCE_BTH_LEN;
	l4_len = ROCE_UDP_HLEN + hlen + p->payload_len + (p->pad & 3u) +
		 ROCE_ICRC_LEN;

	/* L3 */
	p->l3_off = (uint16_t)off;
	ip = buf + off;
	if (p->ipv6) {
		roce_put_be32(ip, 6u << 28 | (uint32_t)p->tos << 20 |
				  (p->flow_label & 0xfffff));
		wr16(ip + 4, (uint16_t)l4_len);
		ip[6] = ROCE_IPPROTO_UDP;
		ip[7] = p->ttl;
		memcpy(ip + 8, p->src_ip, 16);
		memcpy(ip + 24, p->dst_ip, 16);
		off += ROCE_IPV6_HLEN;
	} else {
		ip[0] = 0x45;
		ip[1] = p->tos;
		wr16(ip + 2, (uint16_t)(ROCE_IPV4_HLEN + l4_len));
		wr16(ip + 4, p->ip_id);
		wr16(ip + 6, p->frag_off);
		ip[8] = p->ttl;
		ip[9] = ROCE_IPPROTO_UDP;
		memcpy(ip + 12, p->src_ip, 4);
		memcpy(ip + 16, p->dst_ip, 4);
		wr16(ip + 10, roce_ipv4_cksum(ip, ROCE_IPV4_HLEN));
		off += ROCE_IPV4_HLEN;
	}

	/* L4 */
	if (p->udp_dport == 0)
		p->udp_dport = ROCE_UDP_DPORT;
	p->l4_off = (uint16_t)off;
	wr16(buf + off, p->udp_sport);
	wr16(buf + off + 2, p->udp_dport);
	wr16(buf + off + 4, (uint16_t)l4_len);
	wr16(buf + off + 6, p->udp_csum);
	off += ROCE_UDP_HLEN;

	/* BTH + extended headers */
	p->bth_off = (uint16_t)off;
	off += build_bth_ext(buf + off, p, oi->name != NULL ? oi->flags : 0);
	p->payload_off = (uint16_t)off;
	p->frame_len = p->l3_off + (p->ipv6 ? ROCE_IPV6_HLEN : ROCE_IPV4_HLEN) +
		       l4_len;
	return off;
}

/*
 * A connection's frames differ in the IPv4 header only by total length
 * and ID: the sum of the rest (native order, folded: the 64-bit sum of
 * 32-bit words does not fit the field) is kept, and each frame's checksum
 * follows from it and the two fields (RFC 1624).
 */
static inline uint32_t
ipv4_fixed_sum(const uint8_t *ip)
{
	return fold16(sum_native(ip, ROCE_IPV4_HLEN) - ld16n(ip + 2) -
		      ld16n(ip + 4) - ld16n(ip + 10));
}

static inline void
ipv4_set_len_id(uint8_t *ip, uint32_t fixed_sum, uint16_t tot, uint16_t id)
{
	uint16_t ck;

	wr16(ip + 2, tot);
	wr16(ip + 4, id);
	ck = (uint16_t)~fold16((uint64_t)fixed_sum + ld16n(ip + 2) +
			       ld16n(ip + 4));
	memcpy(ip + 10, &ck, 2);	/* native sum: store as is */
}

uint32_t
roce_build_hdrs_cached(uint8_t *buf, struct roce_pkt *p,
		       struct roce_hdr_cache *c)
{
	const struct roce_opcode_info *oi = roce_opcode_info(p->opcode);
	uint16_t id = p->ip_id;
	uint32_t hlen, l4_len, off;
	bool hit;

	p->ip_id = 0;
	hit = c->valid && memcmp(c->key, p, ROCE_L2L4_KEY_LEN) == 0;
	if (__builtin_expect(!hit, 0)) {
		/* Build the slow way and keep what every frame shares. */
		memcpy(c->key, p, ROCE_L2L4_KEY_LEN);
		p->ip_id = id;
		off = roce_build_hdrs(buf, p);
		c->len = (uint8_t)p->bth_off;
		c->l3_off = (uint8_t)p->l3_off;
		c->l4_off = (uint8_t)p->l4_off;
		memcpy(c->hdr, buf, c->len);
		if (!p->ipv6)
			c->ip_sum = ipv4_fixed_sum(buf + p->l3_off);
		c->valid = true;
		return off;
	}
	p->ip_id = id;
	if (p->udp_dport == 0)
		p->udp_dport = ROCE_UDP_DPORT;
	hlen = oi->name != NULL ? oi->hdr_len : ROCE_BTH_LEN;
	l4_len = ROCE_UDP_HLEN + hlen + p->payload_len + (p->pad & 3u) +
		 ROCE_ICRC_LEN;
	memcpy(buf, c->hdr, sizeof(c->hdr));	/* fixed size: no call */
	p->l3_off = c->l3_off;
	p->l4_off = c->l4_off;
	if (p->ipv6) {
		wr16(buf + c->l3_off + 4, (uint16_t)l4_len);
		p->frame_len = c->l3_off + ROCE_IPV6_HLEN + l4_len;
	} else {
		ipv4_set_len_id(buf + c->l3_off, c->ip_sum,
				(uint16_t)(ROCE_IPV4_HLEN + l4_len), id);
		p->frame_len = c->l3_off + ROCE_IPV4_HLEN + l4_len;
	}
	wr16(buf + c->l4_off + 4, (uint16_t)l4_len);
	p->bth_off = c->len;
	off = c->len + build_bth_ext(buf + c->len, p,
				     oi->name != NULL ? oi->flags : 0);
	p->payload_off = (uint16_t)off;
	return off;
}

void
roce_image_init(struct roce_hdr_image *img, const struct roce_pkt *t)
{
	uint8_t buf[ROCE_MAX_HDR_LEN];
	struct roce_pkt p = *t;

	/* An opcode with no extended header: the image ends with the BTH. */
	p.opcode = ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_SEND_ONLY);
	p.payload_len = 0;
	p.pad = 0;
	p.ip_id = 0;
	roce_build_hdrs(buf, &p);
	memset(img, 0, sizeof(*img));
	memcpy(img->bytes, buf, (size_t)p.bth_off + ROCE_BTH_LEN);
	img->l3_off = (uint8_t)p.l3_off;
	img->bth_off = (uint8_t)p.bth_off;
	img->ipv6 = p.ipv6;
	if (!p.ipv6)
		img->ip_sum = ipv4_fixed_sum(buf + p.l3_off);
}

void
roce_ack_image_init(struct roce_ack_image *a, const struct roce_hdr_image *img)
{
	uint32_t pre;

	memset(a, 0, sizeof(*a));
	/* (roce_image_build writes sizeof(img->bytes) <= sizeof(a->bytes)) */
	a->len = (uint8_t)roce_image_build(a->bytes, img,
					   ROCE_OPCODE(ROCE_TRANSPORT_RC,
						       ROCE_OP_ACK),
					   0, 0, ROCE_AETH_LEN, 0, 0);
	a->l3_off = img->l3_off;
	a->bth_off = img->bth_off;
	a->ipv6 = img->ipv6;
	if (!img->ipv6)	/* the ID's share is added per frame */
		a->ip_sum = fold16((uint64_t)img->ip_sum +
				   ld16n(a->bytes + a->l3_off + 2));
	/* Everything the ICRC covers before the BTH's last word. */
	pre = (uint32_t)a->bth_off + ROCE_BTH_LEN - 4 - a->l3_off;
	a->crc_pre = roce_icrc_hdrs(a->bytes + a->l3_off, pre, a->ipv6);
}

uint32_t
roce_image_build(uint8_t *buf, const struct roce_hdr_image *img,
		 uint8_t opcode, uint8_t bth1, uint32_t bth_psn,
		 uint32_t ext_len, uint32_t payload_pad_len, uint16_t ip_id)
{
	uint32_t l4_len = ROCE_UDP_HLEN + ROCE_BTH_LEN + ext_len +
			  payload_pad_len + ROCE_ICRC_LEN;
	uint8_t *ip = buf + img->l3_off, *bth = buf + img->bth_off;

	memcpy(buf, img->bytes, sizeof(img->bytes));	/* fixed size: no call */
	wr16(bth - ROCE_UDP_HLEN + 4, (uint16_t)l4_len);
	bth[0] = opcode;
	bth[1] = bth1;
	roce_put_be32(bth + 8, bth_psn);
	if (img->ipv6) {
		wr16(ip + 4, (uint16_t)l4_len);
		return img->l3_off + ROCE_IPV6_HLEN + l4_len;
	}
	ipv4_set_len_id(ip, img->ip_sum, (uint16_t)(ROCE_IPV4_HLEN + l4_len),
			ip_id);
	return img->l3_off + ROCE_IPV4_HLEN + l4_len;
}
