/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CRC32 (IEEE 802.3, reflected, polynomial 0xEDB88320) with zlib's
 * conventions: the CRC of nothing is 0, and roce_crc32(roce_crc32(0, a), b)
 * is the CRC of a followed by b (the pre/post inversion happens inside).
 *
 * roce_crc32() uses ISA-L's crc32_gzip_refl (same conventions; runtime
 * dispatch to a PCLMULQDQ folding kernel) when meson found libisal, else the
 * portable slice-by-8 below. roce_crc32_slice8() is always compiled so that
 * the two can be compared (test_roce_unit, bench_crc32).
 */
#include <stdint.h>
#include <stddef.h>
#include <string.h>

#include "roce.h"
#include "roce_crc32_tab.h"	/* generated: roce_crc32_tab[8][256] */

#ifdef ROCE_HAVE_ISAL
#include <isa-l/crc.h>
#endif

static inline uint32_t
le32(const uint8_t *p)
{
	/* Compiles to one load on little-endian targets. */
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 |
	       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Eight bytes into a (non-inverted) CRC register. */
static inline uint32_t
slice8_step(uint32_t crc, const uint8_t *p)
{
	const uint32_t (*t)[256] = roce_crc32_tab;
	uint32_t lo = le32(p) ^ crc;
	uint32_t hi = le32(p + 4);

	return t[7][lo & 0xff] ^ t[6][(lo >> 8) & 0xff] ^
	       t[5][(lo >> 16) & 0xff] ^ t[4][lo >> 24] ^
	       t[3][hi & 0xff] ^ t[2][(hi >> 8) & 0xff] ^
	       t[1][(hi >> 16) & 0xff] ^ t[0][hi >> 24];
}

uint32_t
roce_crc32_slice8(uint32_t crc, const void *buf, size_t len)
{
	const uint32_t (*t)[256] = roce_crc32_tab;
	const uint8_t *p = buf;

	crc = ~crc;
	/* Byte-wise up to 8-byte alignment, then 8 bytes per step. */
	while (len > 0 && ((uintptr_t)p & 7) != 0) {
		crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		crc = slice8_step(crc, p);
		p += 8;
		len -= 8;
	}
	while (len > 0) {
		crc = t[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	return ~crc;
}

/* The ID's trail in roce_crc32_gentab.c: the IPv4 header after the ID,
 * UDP, the BTH before its last word. */
_Static_assert(ROCE_ACK_ID_TRAIL == ROCE_IPV4_HLEN - 6 + ROCE_UDP_HLEN +
	       ROCE_BTH_LEN - 4, "roce_crc32_gentab.c: ACK_ID_TRAIL");

uint32_t
roce_crc32_ack(uint32_t crc_pre, uint16_t ip_id, const uint8_t *tail)
{
	uint32_t c = ~(crc_pre ^ roce_crc32_ackid_tab[0][ip_id >> 8] ^
		       roce_crc32_ackid_tab[1][ip_id & 0xff]);

	return ~slice8_step(c, tail);
}

uint32_t
roce_crc32(uint32_t crc, const void *buf, size_t len)
{
	/* A CPU with VPCLMULQDQ but no AVX-512: eight 256-bit accumulators,
	 * ~2x ISA-L's 128-bit kernel there (bench_crc32). */
	if (len >= 256 && roce_crc32_copy_bits() == 256)
		return roce_crc32_wide(crc, buf, len);
#ifdef ROCE_HAVE_ISAL
	return roce_isal_crc(crc, buf, len);
#else
	return roce_crc32_slice8(crc, buf, len);
#endif
}

/* a(x) * b(x) mod P, both reflected (bit 31 holds x^0), one bit of a a
 * step: for a CPU without a carry-less multiply. */
static uint32_t
mulmod_bits(uint32_t a, uint32_t b)
{
	uint32_t p = 0;

	for (int i = 0; i < 32; i++) {
		if (a & (0x80000000u >> i))
			p ^= b;
		b = (b & 1) ? (b >> 1) ^ 0xedb88320u : b >> 1;
	}
	return p;
}

static inline uint32_t
mulmod(uint32_t a, uint32_t b)
{
	if (__builtin_expect(roce_icrc_clmul_usable(), 1))
		return roce_crc32_mulmod_clmul(a, b);
	return mulmod_bits(a, b);
}

uint32_t
roce_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint32_t len_b)
{
	uint32_t sq = roce_crc32_shift_tab[16];

	/* crc(A) moved past |B| zero bytes: times x^(8 |B|), from the
	 * powers x^(8 * 2^k) of len_b's bits; crc(B) is then added (the
	 * zlib conventions' inversions cancel). A power of two (the path
	 * MTU's frames) straight. */
	if ((len_b & (len_b - 1)) == 0 && len_b != 0 && len_b <= 65536)
		return mulmod(crc_a, roce_crc32_shift_tab[
				      __builtin_ctz(len_b)]) ^ crc_b;
	for (unsigned int k = 0; len_b != 0; k++, len_b >>= 1) {
		if (k > 16)
			sq = mulmod(sq, sq);
		if (len_b & 1)
			crc_a = mulmod(crc_a, k <= 16 ?
				       roce_crc32_shift_tab[k] : sq);
	}
	return crc_a ^ crc_b;
}

uint32_t
roce_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len)
{
	if (len >= 64 && roce_icrc_clmul_usable())
		return roce_crc32_copy_clmul(crc, dst, src, len);
	memcpy(dst, src, len);
	return roce_crc32(crc, src, len);
}

const char *
roce_crc32_impl(void)
{
#ifdef ROCE_HAVE_ISAL
	return roce_crc32_copy_bits() == 256 ? "vpclmul256+isal" : "isal";
#else
	return roce_crc32_copy_bits() == 256 ? "vpclmul256+slice8" : "slice8";
#endif
}
