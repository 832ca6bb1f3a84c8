/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to lib/roce: big-endian loads/stores at any alignment. */
#ifndef ROCE_BYTES_H
#define ROCE_BYTES_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define ROCE_ETHERTYPE_IPV4	0x0800
#define ROCE_ETHERTYPE_IPV6	0x86dd
#define ROCE_ETHERTYPE_VLAN	0x8100
#define ROCE_IPPROTO_UDP	17

/*
 * Big-endian field access as one load or store and a byte swap (gcc does
 * not always merge the byte-wise forms, the stores least of all).
 */
static inline __attribute__((always_inline)) uint16_t
rd16(const uint8_t *p)
{
	uint16_t v;

	memcpy(&v, p, 2);
	return __builtin_bswap16(v);
}

static inline __attribute__((always_inline)) uint32_t
rd24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)rd16(p + 1);
}

static inline __attribute__((always_inline)) uint32_t
rd32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return __builtin_bswap32(v);
}

static inline __attribute__((always_inline)) uint64_t
rd64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return __builtin_bswap64(v);
}

static inline __attribute__((always_inline)) void
wr16(uint8_t *p, uint16_t v)
{
	v = __builtin_bswap16(v);
	memcpy(p, &v, 2);
}

static inline __attribute__((always_inline)) void
wr24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	wr16(p + 1, (uint16_t)v);
}

/* (32 and 64 bits: roce_put_be32/64 in roce.h) */

static inline uint16_t
fold16(uint64_t sum)
{
	sum = (sum & 0xffffffff) + (sum >> 32);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)sum;
}

/* Native-order 16-bit word at b (for sums). */
static inline uint16_t
ld16n(const uint8_t *b)
{
	uint16_t w;

	memcpy(&w, b, 2);
	return w;
}

/* roce_ipv4_cksum() of a 20-byte header, the value to write into its
 * field: five 32-bit loads, the checksum field taken out of the sum. (A
 * received header is checked by ipv4_cksum20_ok() instead.) */
static inline uint16_t
ipv4_cksum20(const uint8_t *hdr)
{
	uint32_t w[5];
	uint64_t sum;
	uint16_t c;

	memcpy(w, hdr, sizeof(w));
	sum = (uint64_t)w[0] + w[1] + w[2] + w[3] + w[4] - ld16n(hdr + 10);
	c = (uint16_t)~fold16(sum);
	/* As a host-order value of the big-endian field. */
	return rd16((const uint8_t *)&c);
}

/*
 * A received 20-byte IPv4 header's checksum right? Its ones' complement
 * sum with the checksum field in is all ones (RFC 1071): two 64-bit words
 * and a 32-bit one added with end-around carries, then folded; no field
 * taken out, no byte swap (all ones read the same either way). A field of
 * 0xffff over a sum of all ones passes, as 0x0000 does (RFC 1624's other
 * zero; Linux's check takes both). About 10 instructions fewer a frame than
 * comparing ipv4_cksum20() with the field.
 */
static inline bool
ipv4_cksum20_ok(const uint8_t *hdr)
{
	uint64_t a, b, s;
	uint32_t c;

	memcpy(&a, hdr, 8);
	memcpy(&b, hdr + 8, 8);
	memcpy(&c, hdr + 16, 4);
	s = a + b;
	s += s < a;
	a = s + c;
	a += a < s;
	return fold16(a) == 0xffff;
}

#endif /* ROCE_BYTES_H */
