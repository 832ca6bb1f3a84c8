/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Invariant CRC (IBTA Annex A17.8). The ICRC is a CRC32 (zlib conventions)
 * over
 *   8 bytes of 0xff                 (stands for the IB LRH, absent in RoCEv2)
 *   the IP header, with the fields routers may change set to all 1s:
 *     IPv4: TOS (DSCP+ECN), TTL, header checksum
 *     IPv6: traffic class, flow label, hop limit
 *   the UDP header, with the checksum set to all 1s
 *   the BTH, with byte 4 (FECN, BECN, resv6) set to all 1s
 *   the extended headers, payload and pad, unmasked
 * and is stored little-endian in the last 4 bytes of the frame. The L2
 * header (MACs, VLAN tag) is not covered.
 */
#include <string.h>

#include "roce.h"

/* Offsets of the masked fields. */
#define IP4_TOS		1
#define IP4_TTL		8
#define IP4_CSUM	10
#define IP6_HOP		7
#define UDP_CSUM	6
#define BTH_RESV8A	4
#define IP4_MAX_HLEN	60

static void
mask(uint8_t *b, uint32_t have, uint32_t off, uint32_t n)
{
	/* Only bytes actually copied: hdr_len may be short (garbage in,
	 * garbage ICRC out, but never an overrun). */
	for (uint32_t i = off; i < off + n && i < have; i++)
		b[i] = 0xff;
}

/* The fixed-offset masks of an IPv4 (IHL 5) + UDP + BTH copy at h. */
static inline void
mask_ipv4_fixed(uint8_t *h)
{
	h[IP4_TOS] = 0xff;
	h[IP4_TTL] = 0xff;
	h[IP4_CSUM] = 0xff;
	h[IP4_CSUM + 1] = 0xff;
	h[ROCE_IPV4_HLEN + UDP_CSUM] = 0xff;
	h[ROCE_IPV4_HLEN + UDP_CSUM + 1] = 0xff;
	h[ROCE_IPV4_HLEN + ROCE_UDP_HLEN + BTH_RESV8A] = 0xff;
}

/* Headers roce_icrc_clmul() takes: an IPv4 header of 20 bytes or IPv6,
 * with UDP and BTH after it, on a CPU that has the instructions. */
static inline bool
clmul_fits(const uint8_t *l3, uint32_t hdr_len, bool ipv6)
{
	if (!__builtin_expect(roce_icrc_clmul_usable(), 1))
		return false;
	return ipv6 ? hdr_len >= ROCE_IPV6_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN :
		      hdr_len >= ROCE_IPV4_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN &&
		      (l3[0] & 0x0f) == 5;
}

/*
 * CRC over the 8 bytes of 1s and the masked IP + UDP + BTH at l3 (hdr_len
 * bytes of headers there); *used says how many header bytes it covered.
 */
static inline uint32_t
icrc_masked(const uint8_t *l3, uint32_t hdr_len, bool ipv6, uint32_t *used)
{
	uint8_t m[8 + IP4_MAX_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN];
	uint8_t *h = m + 8;
	uint32_t iphl, n;

	if (ipv6) {
		iphl = ROCE_IPV6_HLEN;
	} else {
		/* droce and roce_parse use IHL 5 only; honour IHL anyway. */
		iphl = hdr_len > 0 ? (uint32_t)(l3[0] & 0x0f) * 4 : 0;
		if (iphl < ROCE_IPV4_HLEN)
			iphl = ROCE_IPV4_HLEN;
	}
	n = iphl + ROCE_UDP_HLEN + ROCE_BTH_LEN;
	memset(m, 0xff, 8);
	if (__builtin_expect(n <= hdr_len && !ipv6 && iphl == ROCE_IPV4_HLEN, 1)) {
		/* The usual frame: fixed offsets, no bounds to watch. */
		memcpy(h, l3, ROCE_IPV4_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN);
		mask_ipv4_fixed(h);
		*used = ROCE_IPV4_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN;
		return roce_crc32(0, m, 8 + *used);
	}
	if (n > hdr_len)
		n = hdr_len;
	memcpy(h, l3, n);
	if (ipv6) {
		/* Keep the version nibble; TC + flow label are the rest of
		 * the first word. */
		if (n > 0)
			h[0] |= 0x0f;
		mask(h, n, 1, 3);
		mask(h, n, IP6_HOP, 1);
	} else {
		mask(h, n, IP4_TOS, 1);
		mask(h, n, IP4_TTL, 1);
		mask(h, n, IP4_CSUM, 2);
	}
	mask(h, n, iphl + UDP_CSUM, 2);
	mask(h, n, iphl + ROCE_UDP_HLEN + BTH_RESV8A, 1);
	*used = n;
	return roce_crc32(0, m, 8 + n);
}

uint32_t
roce_icrc_hdrs(const uint8_t *l3, uint32_t hdr_len, bool ipv6)
{
	uint32_t n, crc;

	if (clmul_fits(l3, hdr_len, ipv6))
		return roce_icrc_clmul(l3, hdr_len, ipv6);
	crc = icrc_masked(l3, hdr_len, ipv6, &n);

	return roce_crc32(crc, l3 + n, hdr_len - n);
}

/* Frames whose ICRC coverage fits here are checksummed with one CRC call
 * over a masked copy (ISA-L's cost per call dominates small frames). */
#define ICRC_SMALL	256

/* Without the instructions (or for an IPv4 header with options): out of
 * line, so that the usual path sets up no stack frame for its buffer. */
static __attribute__((noinline)) uint32_t
icrc_l3_sw(const uint8_t *l3, uint32_t hdr_len, uint32_t cover, bool ipv6)
{
	uint32_t n, crc;

	if (!ipv6 && cover <= ICRC_SMALL &&
	    hdr_len >= ROCE_IPV4_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN &&
	    (l3[0] & 0x0f) == 5) {
		uint8_t m[8 + ICRC_SMALL];

		memset(m, 0xff, 8);
		memcpy(m + 8, l3, cover);
		mask_ipv4_fixed(m + 8);
		return roce_icrc_final(roce_crc32(0, m, 8 + cover));
	}
	/* The extended headers, payload and pad are contiguous: one call. */
	crc = icrc_masked(l3, hdr_len, ipv6, &n);
	crc = roce_crc32(crc, l3 + n, cover - n);
	return roce_icrc_final(crc);
}

uint32_t
roce_icrc_l3(const uint8_t *l3, uint32_t hdr_len, uint32_t cover, bool ipv6)
{
	if (clmul_fits(l3, hdr_len, ipv6))
		return roce_icrc_clmul(l3, cover, ipv6);
	return icrc_l3_sw(l3, hdr_len, cover, ipv6);
}

uint32_t
roce_icrc_frame(const uint8_t *frame, const struct roce_pkt *p)
{
	const uint8_t *l3 = frame + p->l3_off;
	uint32_t hdr_len = (uint32_t)p->payload_off - p->l3_off;
	uint32_t cover = p->frame_len - ROCE_ICRC_LEN - p->l3_off;

	if (clmul_fits(l3, hdr_len, p->ipv6))
		return roce_icrc_clmul(l3, cover, p->ipv6);
	return icrc_l3_sw(l3, hdr_len, cover, p->ipv6);
}
