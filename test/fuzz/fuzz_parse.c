/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_parse: lib/roce on arbitrary bytes (no DPDK).
 *
 * Input: ctl byte, then a frame (mode "parse") or the raw bytes of a
 * struct roce_pkt followed by a payload (mode "build", ctl & 0x40).
 *
 * parse: roce_parse() sees only the first `contig` bytes (ctl & 0x80:
 *   (ctl & 0x3f) * 2 + 14 of them, else all), held in an exact-size
 *   malloc() so that ASan reports any read past them. An accepted frame
 *   must have a consistent layout; if it is all contiguous, its ICRC is
 *   computed three ways (roce_icrc_frame, roce_icrc_hdrs + roce_crc32 in
 *   two pieces, and the portable slice-by-8 CRC) which must agree; then
 *   roce_build_hdrs() must give back the same header bytes (reserved bits
 *   apart) and the rebuilt frame must parse to the same fields.
 * build: roce_build_hdrs() of arbitrary field values into a buffer of
 *   exactly ROCE_MAX_HDR_LEN bytes; if the frame made of it parses, the
 *   fields must match what was asked (modulo their wire widths).
 */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define FAIL(...) do {							\
		fprintf(stderr, "fuzz_parse: " __VA_ARGS__);		\
		fprintf(stderr, "\n");					\
		abort();						\
	} while (0)

static void check_layout(const struct roce_pkt *p, uint32_t contig,
			 uint32_t len)
{
	const struct roce_opcode_info *oi = roce_opcode_info(p->opcode);

	if (oi->name == NULL)
		FAIL("accepted reserved opcode 0x%02x", p->opcode);
	if (p->l3_off != (p->has_vlan ? 18 : 14))
		FAIL("l3_off %u", p->l3_off);
	if (p->l4_off != p->l3_off + (p->ipv6 ? ROCE_IPV6_HLEN : ROCE_IPV4_HLEN))
		FAIL("l4_off %u", p->l4_off);
	if (p->bth_off != p->l4_off + ROCE_UDP_HLEN)
		FAIL("bth_off %u", p->bth_off);
	if (p->payload_off != p->bth_off + oi->hdr_len)
		FAIL("payload_off %u", p->payload_off);
	if (p->payload_off > contig)
		FAIL("headers (%u bytes) beyond contig %u", p->payload_off, contig);
	if (p->pad > 3 || (p->pad && !(oi->flags & ROCE_OPF_LAST)))
		FAIL("pad %u on opcode 0x%02x", p->pad, p->opcode);
	if ((uint64_t)p->payload_off + p->payload_len + p->pad + ROCE_ICRC_LEN !=
	    p->frame_len)
		FAIL("lengths: payload_off %u + payload %u + pad %u + 4 != frame %u",
		     p->payload_off, p->payload_len, p->pad, p->frame_len);
	if (p->frame_len > len)
		FAIL("frame_len %u > len %u", p->frame_len, len);
	if (p->frame_len < len && len > 60u + (p->has_vlan ? 4u : 0u))
		FAIL("trailing bytes accepted: frame %u of %u", p->frame_len, len);
	if (!(oi->flags & ROCE_OPF_PAYLOAD) && (p->payload_len || p->pad))
		FAIL("payload on opcode 0x%02x", p->opcode);
	if (p->dest_qp > ROCE_QPN_MASK || p->psn > ROCE_PSN_MASK ||
	    p->udp_dport != ROCE_UDP_DPORT)
		FAIL("field out of range");
}

/* The header bytes, with the bits parse ignores (BTH resv6/resv7, DETH
 * reserved byte) cleared. */
static void mask_reserved(uint8_t *h, const struct roce_pkt *p)
{
	h[p->bth_off + 4] &= 0xc0;
	h[p->bth_off + 8] &= 0x80;
	if (roce_opcode_info(p->opcode)->flags & ROCE_OPF_DETH)
		h[p->bth_off + ROCE_BTH_LEN + 4] = 0;
}

static void check_icrc(const uint8_t *f, const struct roce_pkt *p)
{
	uint32_t a = roce_icrc_frame(f, p);
	uint32_t hl = (uint32_t)p->payload_off - p->l3_off;
	uint32_t body = p->frame_len - ROCE_ICRC_LEN - p->payload_off;
	uint32_t b = roce_icrc_hdrs(f + p->l3_off, hl, p->ipv6);
	uint32_t half = body / 2;

	b = roce_crc32(b, f + p->payload_off, half);
	b = roce_crc32(b, f + p->payload_off + half, body - half);
	if (a != roce_icrc_final(b))
		FAIL("ICRC: whole frame 0x%08x, in pieces 0x%08x", a, b);
	/* The two CRC32 implementations agree on anything. */
	if (roce_crc32(0, f, p->frame_len) !=
	    roce_crc32_slice8(0, f, p->frame_len))
		FAIL("roce_crc32 (%s) and slice-by-8 disagree", roce_crc32_impl());
}

static void round_trip(const uint8_t *f, uint32_t len, const struct roce_pkt *p)
{
	struct roce_pkt q = *p, r;
	uint8_t *h = malloc(ROCE_MAX_HDR_LEN);
	uint8_t *orig = malloc(p->payload_off);
	uint8_t *g;
	uint32_t n;
	int ret;

	if (h == NULL || orig == NULL)
		abort();
	n = roce_build_hdrs(h, &q);
	if (n != p->payload_off || q.l3_off != p->l3_off ||
	    q.l4_off != p->l4_off || q.bth_off != p->bth_off ||
	    q.payload_off != p->payload_off || q.frame_len != p->frame_len)
		FAIL("build: header length %u (parsed %u), frame %u (parsed %u)",
		     n, p->payload_off, q.frame_len, p->frame_len);
	memcpy(orig, f, n);
	mask_reserved(orig, p);
	mask_reserved(h, p);
	for (uint32_t i = 0; i < n; i++)
		if (h[i] != orig[i])
			FAIL("build differs from the parsed frame at byte %u: "
			     "0x%02x, was 0x%02x", i, h[i], orig[i]);
	(void)len;
	/* The whole frame again: headers as built, payload, pad and ICRC
	 * as they were. It must parse to the same fields. */
	g = malloc(p->frame_len);
	if (g == NULL)
		abort();
	memcpy(g, h, n);
	memcpy(g + n, f + n, p->frame_len - n);
	ret = roce_parse(g, p->frame_len, p->frame_len, &r);
	if (ret != ROCE_OK)
		FAIL("rebuilt frame does not parse: %d", ret);
	r.icrc = p->icrc;
	q = *p;
	/* What parse ignores was zeroed by build: compare the rest. */
	if (memcmp(&q, &r, sizeof(q)) != 0)
		FAIL("rebuilt frame parses differently");
	free(g);
	free(h);
	free(orig);
}

static void mode_parse(const uint8_t *data, size_t size, uint8_t ctl)
{
	uint32_t len = (uint32_t)size, contig = len;
	struct roce_pkt p;
	uint8_t *f;
	int ret;

	if (ctl & 0x80) {
		contig = (uint32_t)(ctl & 0x3f) * 2 + 14;
		if (contig > len)
			contig = len;
	}
	f = malloc(contig ? contig : 1);
	if (f == NULL)
		abort();
	memcpy(f, data, contig);
	ret = roce_parse(f, contig, len, &p);
	if (ret > 0 || ret < ROCE_ERR_BAD_LENGTH)
		FAIL("roce_parse returned %d", ret);
	if (ret == ROCE_OK) {
		check_layout(&p, contig, len);
		if (p.frame_len <= contig) {
			if (p.icrc != roce_icrc_load(f + p.frame_len - ROCE_ICRC_LEN))
				FAIL("p.icrc 0x%08x is not the frame's", p.icrc);
			check_icrc(f, &p);
			round_trip(f, len, &p);
		} else if (p.icrc != 0) {
			FAIL("p.icrc set although the ICRC lies beyond contig");
		}
	}
	free(f);
}

static void mode_build(const uint8_t *data, size_t size)
{
	static const size_t bools[] = {
		offsetof(struct roce_pkt, has_vlan), offsetof(struct roce_pkt, ipv6),
		offsetof(struct roce_pkt, se), offsetof(struct roce_pkt, mig),
		offsetof(struct roce_pkt, fecn), offsetof(struct roce_pkt, becn),
		offsetof(struct roce_pkt, ack_req),
	};
	uint8_t raw[sizeof(struct roce_pkt)];
	struct roce_pkt p, r;
	uint8_t *h, *f;
	uint32_t n, plen;
	int ret;

	if (size < sizeof(p))
		return;
	memcpy(raw, data, sizeof(raw));
	data += sizeof(p);
	size -= sizeof(p);
	/* bools must hold 0 or 1 (anything else is undefined behaviour in
	 * the caller, not a bug of the library) */
	for (size_t i = 0; i < sizeof(bools) / sizeof(bools[0]); i++)
		raw[bools[i]] &= 1;
	memcpy(&p, raw, sizeof(p));
	p.pad &= 3;
	p.payload_len %= 9001;
	if (size < p.payload_len)
		p.payload_len = (uint32_t)size;
	h = malloc(ROCE_MAX_HDR_LEN);
	if (h == NULL)
		abort();
	n = roce_build_hdrs(h, &p);
	if (n > ROCE_MAX_HDR_LEN || n != p.payload_off)
		FAIL("build: %u header bytes, payload_off %u", n, p.payload_off);
	plen = n + p.payload_len + p.pad + ROCE_ICRC_LEN;
	if (plen != p.frame_len) {
		free(h);
		return;	/* lengths wrapped in 16 bits: not a frame */
	}
	f = malloc(plen);
	if (f == NULL)
		abort();
	memcpy(f, h, n);
	memcpy(f + n, data, p.payload_len);
	memset(f + n + p.payload_len, 0, p.pad + ROCE_ICRC_LEN);
	roce_icrc_store(f + plen - ROCE_ICRC_LEN, roce_icrc_frame(f, &p));
	ret = roce_parse(f, plen, plen, &r);
	if (ret == ROCE_OK) {
		const uint32_t fl = roce_opcode_info(p.opcode)->flags;

		check_layout(&r, plen, plen);
		if (r.opcode != p.opcode || r.psn != (p.psn & ROCE_PSN_MASK) ||
		    r.dest_qp != (p.dest_qp & ROCE_QPN_MASK) ||
		    r.payload_len != p.payload_len || r.pad != p.pad ||
		    r.ipv6 != p.ipv6 || r.has_vlan != p.has_vlan ||
		    r.pkey != p.pkey || r.udp_sport != p.udp_sport ||
		    memcmp(r.dst_ip, p.dst_ip, p.ipv6 ? 16 : 4) != 0 ||
		    memcmp(r.src_ip, p.src_ip, p.ipv6 ? 16 : 4) != 0 ||
		    ((fl & ROCE_OPF_RETH) && (r.reth_va != p.reth_va ||
					      r.reth_rkey != p.reth_rkey ||
					      r.reth_len != p.reth_len)) ||
		    ((fl & ROCE_OPF_ATMETH) && (r.atm_va != p.atm_va ||
						r.atm_compare != p.atm_compare ||
						r.atm_swap_add != p.atm_swap_add)) ||
		    ((fl & ROCE_OPF_AETH) && (r.aeth_syndrome != p.aeth_syndrome ||
					      r.aeth_msn != (p.aeth_msn & 0xffffff))) ||
		    ((fl & ROCE_OPF_IMMDT) && r.imm != p.imm) ||
		    r.icrc != roce_icrc_frame(f, &r))
			FAIL("built frame parses to other fields (opcode 0x%02x)",
			     p.opcode);
	}
	free(f);
	free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t ctl;

	if (size < 1)
		return 0;
	ctl = data[0];
	if (ctl & 0x40)
		mode_build(data + 1, size - 1);
	else
		mode_parse(data + 1, size - 1, ctl);
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	return 0;
}
