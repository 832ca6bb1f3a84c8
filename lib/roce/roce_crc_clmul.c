/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * CRC32 by carry-less multiplication (PCLMULQDQ): the ICRC of a contiguous
 * frame without building the masked pseudo-header in memory, and a copy
 * that computes the CRC of the bytes it moves from the same loads.
 *
 * ICRC:
 * The CRC runs over the virtual message M = 8 bytes of 0xff || IP || UDP ||
 * BTH || the rest (roce_icrc.c says which fields are masked). M is read in
 * 16-byte blocks straight from the frame: block 0 is the 8 bytes of 1s and
 * the first 8 bytes of IP, block k > 0 is l3[16k - 8, 16k + 8); the masked
 * fields all lie in the first four blocks and are set to 1s with one OR
 * each. The blocks are folded four at a time while at least four remain,
 * then one at a time, the last len % 16 bytes as one more block
 * (fold_tail), and the last 128 bits reduced to the 32-bit CRC register
 * (Barrett); a long remainder goes to ISA-L instead, so the masked
 * headers cost one fold and large frames keep ISA-L's wider kernel. The
 * fold and Barrett constants are powers of x modulo the CRC polynomial,
 * bit-reflected; see
 * Intel's "Fast CRC Computation for Generic Polynomials Using PCLMULQDQ"
 * (Gopal et al., 2009). test_roce_unit compares every coverage length
 * against a byte-wise reference.
 *
 * A burst's ICRCs (roce_icrc_clmul_store_n, for the engine's transmit):
 * one frame's folds and reduction are a chain of multiplications each
 * waiting on the last, ~50 TSC cycles for a 64-byte WRITE's frame on a
 * Zen 5, while the multiplier could start one every ~1.3. Computed back
 * to back, several frames' chains overlap (~18 a frame); four frames of
 * one shape in the four 128-bit lanes of AVX-512 registers share each
 * multiplication (~8 a frame).
 *
 * Copy: roce_crc32_copy() loads 128 bytes, stores them and folds them
 * into eight accumulators (four left the multiplier's latency exposed: 1.5x
 * slower than ISA-L), so the CRC costs no second pass over the data and the
 * copy rides along: 4 KiB in ~460 cycles on the Intel machine it was
 * written on, against ~585 for memcpy and then ISA-L, ~440 for ISA-L alone
 * (test/roce/bench_crc32: the minimum of 20 000 runs, L1-hot). Where the
 * CPU has AVX-512 and VPCLMULQDQ, the same folding runs four 16-byte lanes
 * per instruction, 256 bytes per step: on an AMD EPYC (Zen 4) that took a
 * 4 KiB copy from ~730 cycles (the 128-bit kernel: one PCLMULQDQ every two
 * cycles there) to ~200, against ~310 for memcpy and then ISA-L
 * (DROCE_NO_VCLMUL=1 keeps the 128-bit kernel). A CPU with VPCLMULQDQ
 * but no AVX-512 (AMD Zen 3, Intel's client cores from Alder Lake) gets
 * two lanes per instruction in eight 256-bit accumulators instead
 * (DROCE_NO_AVX512=1 picks that kernel where the 512-bit one could run).
 *
 * Compiled for x86-64 only, with the instructions enabled per function
 * (PCLMULQDQ, SSE4.1, and AVX for the three-operand forms; AVX-512F or
 * AVX2, and VPCLMULQDQ, for the wide copies); callers ask
 * roce_icrc_clmul_usable() first (roce_icrc.c, roce_crc32.c), which also
 * settles the copy's width.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"
#include "roce_crc32_tab.h"	/* generated: roce_crc32_tab[8][256] */

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))

#include <immintrin.h>

#ifdef ROCE_HAVE_ISAL
#include <isa-l/crc.h>
#endif

#define CLMUL_TARGET __attribute__((target("pclmul,sse4.1,avx")))
#define VCLMUL_TARGET \
	__attribute__((target("pclmul,sse4.1,avx,avx512f,vpclmulqdq")))
#define VCLMUL256_TARGET \
	__attribute__((target("pclmul,sse4.1,avx,avx2,vpclmulqdq")))

/* Fold constants, as _mm_set_epi64x() arguments (high, low): what carries
 * a 128-bit block forward by the named distance d in bits, high x^(d-32)
 * and low x^(d+32) mod P, bit-reflected and shifted left by one.
 * FOLD_BARRETT is P and its Barrett quotient for the final reduction. */
#define FOLD_128	0x00ccaa009e, 0x01751997d0
#define FOLD_256	0x015a546366, 0x00f1da05aa
#define FOLD_512	0x01c6e41596, 0x0154442bd4
#define FOLD_1024	0x014a7fe880, 0x01e88ef372
#define FOLD_2048	0x01322d1430, 0x011542778a
#define FOLD_BARRETT	0x01f7011641, 0x01db710641

/* Coverage from which the bytes after the first 64 of M go to ISA-L
 * (without ISA-L, never: the folding loop below is the fast path). */
#ifdef ROCE_HAVE_ISAL
#define ICRC_CLMUL_ISAL_FROM 512
#else
#define ICRC_CLMUL_ISAL_FROM UINT32_MAX
#endif

/* Coverage from which the 256-bit path folds M's first 64 bytes as
 * icrc_reg() does and the rest with crc32_inplace_256() (>= 256 bytes
 * then). */
#define ICRC_WIDE_FROM 512

/* OR masks over M[0, 64): the masked fields, per IP version. */
static const uint8_t mask_v4[64] __attribute__((aligned(16))) = {
	[0 ... 7] = 0xff,
	[8 + 1] = 0xff,				/* TOS */
	[8 + 8] = 0xff,				/* TTL */
	[8 + 10] = 0xff, [8 + 11] = 0xff,	/* header checksum */
	[8 + 20 + 6] = 0xff, [8 + 20 + 7] = 0xff,	/* UDP checksum */
	[8 + 28 + 4] = 0xff,			/* BTH FECN, BECN, resv6 */
};
static const uint8_t mask_v6[64] __attribute__((aligned(16))) = {
	[0 ... 7] = 0xff,
	[8 + 0] = 0x0f,				/* traffic class, high nibble */
	[8 + 1] = 0xff, [8 + 2] = 0xff, [8 + 3] = 0xff,	/* TC, flow label */
	[8 + 7] = 0xff,				/* hop limit */
	[8 + 40 + 6] = 0xff, [8 + 40 + 7] = 0xff,	/* UDP checksum */
	[8 + 48 + 4] = 0xff,			/* BTH FECN, BECN, resv6 */
};

/*
 * Byte shuffles for a last partial block of r bytes (1..15): from
 * shift_tab + 16 + r, PSHUFB moves a register's bytes down by r; from
 * shift_tab + r, it moves its first r bytes to the top and zeroes the rest
 * (and the high bits of that load pick a blend's lanes).
 */
static const uint8_t shift_tab[48] = {
	[0 ... 15] = 0x80,
	0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
	[32 ... 47] = 0x80,
};

int8_t roce_clmul_state = -1;
/* The register width of roce_crc32_copy_clmul()'s kernel for 256 bytes
 * and more: 512, 256 or 128. Set before roce_clmul_state says usable,
 * read only after it does. */
static uint16_t copy_bits = 128;
/* roce_icrc_clmul_store_n() may run four frames a register (AVX-512F and
 * BW with VPCLMULQDQ): set with copy_bits. */
static bool lanes_ok;

static bool
env_off(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] == '1';
}

bool
roce_icrc_clmul_probe(void)
{
	/* DROCE_NO_CLMUL=1: the portable paths, as on a CPU without these
	 * instructions (the roce_unit-no-clmul test runs them here);
	 * DROCE_NO_VCLMUL=1: the 128-bit copy kernel where a wider one
	 * could run (roce_unit-no-vclmul); DROCE_NO_AVX512=1: the 256-bit one
	 * where the 512-bit one could (roce_unit-vclmul256). Threads racing
	 * here all store the same answers. */
	bool usable = __builtin_cpu_supports("pclmul") &&
		      __builtin_cpu_supports("sse4.1") &&
		      __builtin_cpu_supports("avx") && !env_off("DROCE_NO_CLMUL");
	bool vclmul = usable && __builtin_cpu_supports("vpclmulqdq") &&
		      !env_off("DROCE_NO_VCLMUL");
	uint16_t bits = 128;

	if (vclmul && __builtin_cpu_supports("avx512f") &&
	    !env_off("DROCE_NO_AVX512"))
		bits = 512;
	else if (vclmul && __builtin_cpu_supports("avx2"))
		bits = 256;
	__atomic_store_n(&copy_bits, bits, __ATOMIC_RELAXED);
	__atomic_store_n(&lanes_ok, bits == 512 &&
			 __builtin_cpu_supports("avx512bw"), __ATOMIC_RELAXED);
	__atomic_store_n(&roce_clmul_state, (int8_t)usable, __ATOMIC_RELEASE);
	return usable;
}

unsigned int
roce_crc32_copy_bits(void)
{
	if (!roce_icrc_clmul_usable())
		return 0;
	return __atomic_load_n(&copy_bits, __ATOMIC_RELAXED);
}

/* a(x) * b(x) mod P, both reflected (bit 31 holds x^0): one carry-less
 * multiply (the reflected product lands one bit low: shifted up), its
 * upper word already below x^32, its lower word times x^32 reduced
 * through the tables (four zero bytes). */
CLMUL_TARGET uint32_t
roce_crc32_mulmod_clmul(uint32_t a, uint32_t b)
{
	const uint32_t (*t)[256] = roce_crc32_tab;
	uint64_t v = (uint64_t)_mm_cvtsi128_si64(_mm_clmulepi64_si128(
		_mm_cvtsi32_si128((int)a), _mm_cvtsi32_si128((int)b), 0x00));
	uint32_t lo;

	v <<= 1;
	lo = (uint32_t)v;
	return (uint32_t)(v >> 32) ^ t[3][lo & 0xff] ^ t[2][(lo >> 8) & 0xff] ^
	       t[1][(lo >> 16) & 0xff] ^ t[0][lo >> 24];
}

#ifdef ROCE_HAVE_ISAL
static inline CLMUL_TARGET void
upper_clean(void)
{
	_mm256_zeroupper();
}

/*
 * ISA-L's CRC, leaving the vector registers' upper halves clean. Where
 * AVX-512 runs, ISA-L 2.30 dispatches to its 512-bit kernel
 * (crc32_gzip_refl_by16_10), which returns without VZEROUPPER. On Intel
 * cores each legacy-SSE instruction after that (droce and DPDK are built
 * for corei7: SSE without VEX) then merges into the dirty upper state
 * until some AVX code clears it: a 64 KiB WRITE with zero-copy transmit
 * (ISA-L's CRC a frame) took 2x the cycles of the copying path on an
 * Intel Xeon with AVX-512 (doc/performance.md, fifty-first round). AMD's
 * cores have no such penalty; VZEROUPPER costs a cycle there.
 */
uint32_t
roce_isal_crc(uint32_t crc, const void *buf, size_t len)
{
	uint32_t c = crc32_gzip_refl(crc, buf, len);

	if (__atomic_load_n(&copy_bits, __ATOMIC_RELAXED) == 512)
		upper_clean();
	return c;
}
#endif

/* x * k: fold a 128-bit remainder forward (by 128 or 512 bits, per k). */
static inline CLMUL_TARGET __m128i
fold(__m128i x, __m128i k)
{
	return _mm_xor_si128(_mm_clmulepi64_si128(x, k, 0x00),
			     _mm_clmulepi64_si128(x, k, 0x11));
}

/* Block k of M (k >= 1), masked if it is one of the first four. */
static inline CLMUL_TARGET __m128i
block(const uint8_t *l3, uint32_t k, const uint8_t *mask)
{
	__m128i b = _mm_loadu_si128((const __m128i *)(l3 + 16 * k - 8));

	if (k < 4)
		b = _mm_or_si128(b, _mm_load_si128((const __m128i *)
						   (mask + 16 * k)));
	return b;
}

/* The CRC register after the 16 bytes in x (the register already folded
 * into them). */
static inline CLMUL_TARGET uint32_t
reduce(__m128i x)
{
	const __m128i k3k4 = _mm_set_epi64x(FOLD_128);
	const __m128i k5 = _mm_set_epi64x(0, 0x0163cd6124);
	const __m128i poly = _mm_set_epi64x(FOLD_BARRETT);
	const __m128i lo32 = _mm_setr_epi32(-1, 0, -1, 0);
	__m128i t;

	/* 128 -> 64 bits */
	t = _mm_clmulepi64_si128(x, k3k4, 0x10);
	x = _mm_xor_si128(_mm_srli_si128(x, 8), t);
	/* 64 -> 32 bits (+32 of headroom for Barrett) */
	t = _mm_srli_si128(x, 4);
	x = _mm_clmulepi64_si128(_mm_and_si128(x, lo32), k5, 0x00);
	x = _mm_xor_si128(x, t);
	/* Barrett reduction to the 32-bit remainder */
	t = _mm_clmulepi64_si128(_mm_and_si128(x, lo32), poly, 0x10);
	t = _mm_clmulepi64_si128(_mm_and_si128(t, lo32), poly, 0x00);
	x = _mm_xor_si128(x, t);
	return (uint32_t)_mm_extract_epi32(x, 1);
}

/*
 * The state x of a message followed by the r (1..15) bytes that end at end:
 * M' = x || tail is the same CRC as (zeros || x[0, r)) || (x[r, 16) || tail),
 * two whole blocks, the first folded by 128 bits into the second. The tail
 * comes from one load of the 16 bytes before end (the bytes before it in
 * that load are the message's, already in x, and are blended out). Needs
 * 16 bytes readable before end; saves ~60 instructions a small frame over
 * a byte-table loop.
 */
static inline CLMUL_TARGET __m128i
fold_tail(__m128i x, const uint8_t *end, uint32_t r)
{
	const __m128i k3k4 = _mm_set_epi64x(FOLD_128);
	__m128i last = _mm_loadu_si128((const __m128i *)(end - 16));
	__m128i down = _mm_loadu_si128((const __m128i *)(shift_tab + 16 + r));
	__m128i up = _mm_loadu_si128((const __m128i *)(shift_tab + r));
	__m128i head = _mm_shuffle_epi8(x, up);
	__m128i rest = _mm_blendv_epi8(last, _mm_shuffle_epi8(x, down), up);

	return _mm_xor_si128(fold(head, k3k4), rest);
}

/* Fold the nblk blocks at p (as many as fill groups of four) into the
 * accumulators x1..x4, by 512 bits each. */
#define FOLD4_LOOP(p, nblk)						\
	do {								\
		for (uint32_t i_ = 0; i_ + 4 <= (nblk); i_ += 4) {		\
			const __m128i *s_ = (const __m128i *)(p) + i_;		\
			x1 = _mm_xor_si128(fold(x1, k1k2), _mm_loadu_si128(s_)); \
			x2 = _mm_xor_si128(fold(x2, k1k2),			\
					   _mm_loadu_si128(s_ + 1));		\
			x3 = _mm_xor_si128(fold(x3, k1k2),			\
					   _mm_loadu_si128(s_ + 2));		\
			x4 = _mm_xor_si128(fold(x4, k1k2),			\
					   _mm_loadu_si128(s_ + 3));		\
		}							\
	} while (0)

/* Block 0 of M: 1s, then IP bytes 0..7 (nothing read before l3); the
 * register's initial ~0 XORed into its first 4 bytes (zlib's
 * pre-inversion). */
static inline CLMUL_TARGET __m128i
block0(const uint8_t *l3, const uint8_t *mask)
{
	__m128i x = _mm_slli_si128(_mm_loadl_epi64((const __m128i *)l3), 8);

	x = _mm_or_si128(x, _mm_load_si128((const __m128i *)mask));
	return _mm_xor_si128(x, _mm_setr_epi32(-1, 0, 0, 0));
}

/*
 * The CRC register after M = 1s || masked l3[0, cover), cover >= 40 (IPv4,
 * IHL 5) or 60 (IPv6); with head, only M's first 64 bytes are folded here
 * and the rest of it is left to the caller (ISA-L, or the 256-bit kernel;
 * *done says how many bytes of l3 were covered). Inlined where called:
 * its two callers' head is known there (GCC left it out of line once it
 * had two, ~20 instructions a frame more).
 */
static inline __attribute__((always_inline)) CLMUL_TARGET uint32_t
icrc_reg(const uint8_t *l3, uint32_t cover, bool ipv6, bool head,
	 uint32_t *done)
{
	const __m128i k1k2 = _mm_set_epi64x(FOLD_512);
	const __m128i k3k4 = _mm_set_epi64x(FOLD_128);
	const uint8_t *mask = ipv6 ? mask_v6 : mask_v4;
	uint32_t nb = head ? 4 : (8 + cover) / 16, k;
	__m128i x1, x2, x3, x4;

	x1 = block0(l3, mask);
	k = 1;
	if (nb >= 4) {
		x2 = block(l3, 1, mask);
		x3 = block(l3, 2, mask);
		x4 = block(l3, 3, mask);
		FOLD4_LOOP(l3 + 56, nb - 4);
		k = 4 + ((nb - 4) & ~3u);
		x1 = _mm_xor_si128(fold(x1, k3k4), x2);
		x1 = _mm_xor_si128(fold(x1, k3k4), x3);
		x1 = _mm_xor_si128(fold(x1, k3k4), x4);
	}
	for (; k < nb; k++)
		x1 = _mm_xor_si128(fold(x1, k3k4), block(l3, k, mask));
	if (head) {
		*done = 56;
		return reduce(x1);
	}
	/* The rest of M, from byte 16 * nb: past the masked fields (IPv6's
	 * end before M's byte 61 and nb >= 4 there; IPv4's before byte 41,
	 * nb >= 3), with 16 frame bytes before its end. */
	if ((8 + cover) & 15)
		x1 = fold_tail(x1, l3 + cover, (8 + cover) & 15);
	*done = cover;
	return reduce(x1);
}

static inline VCLMUL256_TARGET __m256i
fold_256(__m256i y1, __m256i k, __m256i y2);

/*
 * icrc_reg() for 8 blocks and more (cover >= 120: a 64-byte WRITE's or
 * SEND's frame and up), without ISA-L's part, two blocks a register where
 * the CPU has VPCLMULQDQ: blocks 0-1 and 2-3 (the masked ones) in two
 * accumulators, folded by 512 bits over each next four, the two by 256
 * bits into one, its two lanes by 128; the blocks left one at a time and
 * the tail as icrc_reg() does. A 64-byte WRITE's 8 blocks: 13
 * multiplications instead of 19, three folds deep instead of five.
 */
static inline __attribute__((always_inline)) VCLMUL256_TARGET uint32_t
icrc_reg_256_body(const uint8_t *l3, uint32_t cover, bool ipv6)
{
	const __m256i k4 = _mm256_broadcastsi128_si256(
		_mm_set_epi64x(FOLD_512));
	const __m256i k2 = _mm256_broadcastsi128_si256(
		_mm_set_epi64x(FOLD_256));
	const __m128i k3k4 = _mm_set_epi64x(FOLD_128);
	const uint8_t *mask = ipv6 ? mask_v6 : mask_v4;
	uint32_t nb = (8 + cover) / 16, k;
	__m128i x, b1;
	__m256i y0, y1;

	x = block0(l3, mask);
	b1 = block(l3, 1, mask);
	y0 = _mm256_inserti128_si256(_mm256_castsi128_si256(x), b1, 1);
	y1 = _mm256_or_si256(_mm256_loadu_si256((const __m256i *)(l3 + 24)),
			     _mm256_loadu_si256((const __m256i *)(mask + 32)));
	for (k = 4; k + 4 <= nb; k += 4) {
		y0 = fold_256(y0, k4, _mm256_loadu_si256((const __m256i *)
							 (l3 + 16 * k - 8)));
		y1 = fold_256(y1, k4, _mm256_loadu_si256((const __m256i *)
							 (l3 + 16 * k + 24)));
	}
	y1 = fold_256(y0, k2, y1);
	x = _mm_xor_si128(fold(_mm256_castsi256_si128(y1), k3k4),
			  _mm256_extracti128_si256(y1, 1));
	for (; k < nb; k++)
		x = _mm_xor_si128(fold(x, k3k4), block(l3, k, mask));
	if ((8 + cover) & 15)
		x = fold_tail(x, l3 + cover, (8 + cover) & 15);
	return reduce(x);
}

static VCLMUL256_TARGET uint32_t
icrc_reg_256(const uint8_t *l3, uint32_t cover, bool ipv6)
{
	return icrc_reg_256_body(l3, cover, ipv6);
}

static VCLMUL256_TARGET uint32_t
crc32_inplace_256(uint32_t reg, const void *src, size_t len);

CLMUL_TARGET uint32_t
roce_icrc_clmul(const uint8_t *l3, uint32_t cover, bool ipv6)
{
	unsigned int bits = __atomic_load_n(&copy_bits, __ATOMIC_RELAXED);
	uint32_t done, reg;

	if (cover >= 120 && bits >= 256) {
		if (cover < ICRC_WIDE_FROM)
			return ~icrc_reg_256(l3, cover, ipv6);
		/* Past the masked blocks, the copy kernel's folding without
		 * its stores: eight 256-bit accumulators, twice ISA-L's
		 * 128-bit kernel on a Zen 3 (bench_crc32). Where AVX-512
		 * runs, ISA-L has its own wide one (by16_10): left to it. */
		if (bits == 256) {
			reg = icrc_reg(l3, cover, ipv6, true, &done);
			return crc32_inplace_256(reg, l3 + done, cover - done);
		}
	}
	reg = icrc_reg(l3, cover, ipv6, cover >= ICRC_CLMUL_ISAL_FROM, &done);
#ifdef ROCE_HAVE_ISAL
	if (done < cover)
		return roce_isal_crc(~reg, l3 + done, cover - done);
#endif
	return ~reg;
}

#define LANES_TARGET __attribute__((target( \
	"pclmul,sse4.1,avx,avx2,avx512f,avx512bw,vpclmulqdq")))

/* Bytes [l3 + off - 8, l3 + off + 8) of four frames, one a lane. */
static inline __attribute__((always_inline)) LANES_TARGET __m512i
lanes4(uint8_t *const *l3, uint32_t off)
{
	__m512i z = _mm512_castsi128_si512(
		_mm_loadu_si128((const __m128i *)(l3[0] + off - 8)));

	z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)
						  (l3[1] + off - 8)), 1);
	z = _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)
						  (l3[2] + off - 8)), 2);
	return _mm512_inserti32x4(z, _mm_loadu_si128((const __m128i *)
						     (l3[3] + off - 8)), 3);
}

/*
 * The ICRCs of four frames of one shape (the same cover and IP version,
 * (8 + cover) % 16 == 0, 8 bytes readable before each l3: a frame's
 * Ethernet header), one frame a 128-bit lane: icrc_reg()'s block-by-block
 * fold and reduce() done lane-wise, so one multiplication serves four
 * frames. Stored after each frame's covered bytes.
 */
static LANES_TARGET void
icrc_store_4(uint8_t *const *l3, uint32_t cover, bool ipv6)
{
	const __m512i k128 = _mm512_broadcast_i32x4(_mm_set_epi64x(FOLD_128));
	const __m512i k5 = _mm512_broadcast_i32x4(_mm_set_epi64x(0, 0x0163cd6124));
	const __m512i poly = _mm512_broadcast_i32x4(_mm_set_epi64x(FOLD_BARRETT));
	const __m512i lo32 = _mm512_broadcast_i32x4(_mm_setr_epi32(-1, 0, -1, 0));
	const uint8_t *mask = ipv6 ? mask_v6 : mask_v4;
	uint32_t nb = (8 + cover) / 16;
	__m512i x, t;
	__m128i r;

	/* block 0: M's 8 bytes of 1s over the Ethernet header's last 8, the
	 * register's initial ~0 XORed into its first 4 (zlib's pre-inversion) */
	x = _mm512_or_si512(lanes4(l3, 0), _mm512_broadcast_i32x4(
		_mm_load_si128((const __m128i *)mask)));
	x = _mm512_xor_si512(x, _mm512_broadcast_i32x4(
		_mm_setr_epi32(-1, 0, 0, 0)));
	for (uint32_t k = 1; k < nb; k++) {
		__m512i b = lanes4(l3, 16 * k);

		if (k < 4)
			b = _mm512_or_si512(b, _mm512_broadcast_i32x4(
				_mm_load_si128((const __m128i *)(mask + 16 * k))));
		x = _mm512_ternarylogic_epi64(
			_mm512_clmulepi64_epi128(x, k128, 0x00),
			_mm512_clmulepi64_epi128(x, k128, 0x11), b, 0x96);
	}
	/* reduce(), lane-wise */
	t = _mm512_clmulepi64_epi128(x, k128, 0x10);
	x = _mm512_xor_si512(_mm512_bsrli_epi128(x, 8), t);
	t = _mm512_bsrli_epi128(x, 4);
	x = _mm512_clmulepi64_epi128(_mm512_and_si512(x, lo32), k5, 0x00);
	x = _mm512_xor_si512(x, t);
	t = _mm512_clmulepi64_epi128(_mm512_and_si512(x, lo32), poly, 0x10);
	t = _mm512_clmulepi64_epi128(_mm512_and_si512(t, lo32), poly, 0x00);
	x = _mm512_xor_si512(x, t);
	/* each lane's dword 1, inverted */
	r = _mm512_castsi512_si128(_mm512_permutexvar_epi32(
		_mm512_setr_epi32(1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0),
		_mm512_ternarylogic_epi32(x, x, x, 0x55)));
	for (int i = 0; i < 4; i++) {
		uint32_t c = (uint32_t)_mm_extract_epi32(r, 0);

		memcpy(l3[i] + cover, &c, sizeof(c));
		r = _mm_srli_si128(r, 4);
	}
}

/* The 256-bit kernel's ICRCs of n frames, stored: one loop, nothing between
 * one frame's folds and the next's, so the core runs several frames' chains
 * at once. */
static VCLMUL256_TARGET void
icrc_store_n_256(uint8_t *const *l3, const uint16_t *cover,
		 const uint8_t *ipv6, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++) {
		uint32_t c = cover[i] >= 120 && cover[i] < ICRC_WIDE_FROM ?
			     ~icrc_reg_256_body(l3[i], cover[i], ipv6[i]) :
			     roce_icrc_clmul(l3[i], cover[i], ipv6[i]);

		memcpy(l3[i] + cover[i], &c, sizeof(c));
	}
}

/* Four frames icrc_store_4() takes */
static inline bool
four_alike(const uint16_t *cover, const uint8_t *ipv6)
{
	return cover[0] < ICRC_WIDE_FROM && ((8 + cover[0]) & 15) == 0 &&
	       cover[1] == cover[0] && cover[2] == cover[0] &&
	       cover[3] == cover[0] && ipv6[1] == ipv6[0] &&
	       ipv6[2] == ipv6[0] && ipv6[3] == ipv6[0];
}

uint32_t
roce_icrc_clmul_store_n(uint8_t *const *l3, const uint16_t *cover,
			const uint8_t *ipv6, uint32_t n)
{
	unsigned int bits = __atomic_load_n(&copy_bits, __ATOMIC_RELAXED);
	uint32_t i = 0, lanes = 0;

	if (__atomic_load_n(&lanes_ok, __ATOMIC_RELAXED)) {
		uint32_t from = 0;

		while (i + 4 <= n) {
			if (!four_alike(cover + i, ipv6 + i)) {
				i++;
				continue;
			}
			if (from < i)
				icrc_store_n_256(l3 + from, cover + from,
						 ipv6 + from, i - from);
			icrc_store_4(l3 + i, cover[i], ipv6[i]);
			i += 4;
			lanes += 4;
			from = i;
		}
		i = from;
	}
	if (bits >= 256) {
		icrc_store_n_256(l3 + i, cover + i, ipv6 + i, n - i);
		return lanes;
	}
	for (; i < n; i++) {
		uint32_t c = roce_icrc_clmul(l3[i], cover[i], ipv6[i]);

		memcpy(l3[i] + cover[i], &c, sizeof(c));
	}
	return lanes;
}

/* Load block i of s, store it to d, fold accumulator x by k into it. */
#define COPY_FOLD(x, i, k)						\
	do {								\
		__m128i b_ = _mm_loadu_si128(s + (i));			\
		_mm_storeu_si128(d + (i), b_);				\
		(x) = _mm_xor_si128(fold((x), (k)), b_);			\
	} while (0)

/*
 * The end of every copy kernel (copy: a compile-time constant; false for
 * the in-place CRC, which stores nothing): x holds the CRC state of
 * [0, off) folded into 128 bits; the whole 16-byte blocks left fold in one
 * by one, then the last len % 16 bytes (len >= 16).
 */
static inline __attribute__((always_inline)) CLMUL_TARGET uint32_t
fold_tail_body(__m128i x, uint8_t *d, const uint8_t *s, size_t off,
	       size_t len, bool copy)
{
	const __m128i k3k4 = _mm_set_epi64x(FOLD_128);
	size_t whole = len & ~(size_t)15;

	for (; off < whole; off += 16) {
		__m128i b = _mm_loadu_si128((const __m128i *)(s + off));

		if (copy)
			_mm_storeu_si128((__m128i *)(d + off), b);
		x = _mm_xor_si128(fold(x, k3k4), b);
	}
	if (off < len) {
		/* The last 16 bytes again: their first 16 - r are stored
		 * already, with the same values. */
		if (copy)
			_mm_storeu_si128((__m128i *)(d + len - 16),
					 _mm_loadu_si128((const __m128i *)
							 (s + len - 16)));
		x = fold_tail(x, s + len, (uint32_t)(len - off));
	}
	return ~reduce(x);
}

static inline CLMUL_TARGET uint32_t
copy_fold_tail(__m128i x, uint8_t *d, const uint8_t *s, size_t off,
	       size_t len)
{
	return fold_tail_body(x, d, s, off, len, true);
}

/* Fold each 16-byte lane of x by k (its four lanes alike) and XOR in b. */
static inline VCLMUL_TARGET __m512i
fold_wide(__m512i x, __m512i k, __m512i b)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(x, k, 0x00),
					 _mm512_clmulepi64_epi128(x, k, 0x11),
					 b, 0x96);
}

/* Load 64 bytes of s at off, store them to d, fold accumulator z by k. */
#define COPY_FOLD_WIDE(z, off, k)					\
	do {								\
		__m512i b_ = _mm512_loadu_si512(s + (off));		\
		_mm512_storeu_si512(d + (off), b_);			\
		(z) = fold_wide((z), (k), b_);				\
	} while (0)

/*
 * roce_crc32_copy_clmul() for len >= 256 on AVX-512 with VPCLMULQDQ: the
 * 128-bit kernel's scheme with four lanes per register. Four accumulators
 * hold sixteen blocks, each folded by 2048 bits per step of 256 bytes;
 * then by 512 bits per 64 bytes, the four lanes by 128 bits into one, the
 * last whole blocks one by one and the last len % 16 bytes as one more.
 */
static VCLMUL_TARGET uint32_t
crc32_copy_wide(uint32_t reg, void *dst, const void *src, size_t len)
{
	const __m512i k16 = _mm512_broadcast_i32x4(
		_mm_set_epi64x(FOLD_2048));
	const __m128i k1k2 = _mm_set_epi64x(FOLD_512);
	const __m128i k3k4 = _mm_set_epi64x(FOLD_128);
	const __m512i k4 = _mm512_broadcast_i32x4(k1k2);
	const uint8_t *s = src;
	uint8_t *d = dst;
	size_t off;
	__m512i z1, z2, z3, z4;
	__m128i x;

	z1 = _mm512_loadu_si512(s);
	z2 = _mm512_loadu_si512(s + 64);
	z3 = _mm512_loadu_si512(s + 128);
	z4 = _mm512_loadu_si512(s + 192);
	_mm512_storeu_si512(d, z1);
	_mm512_storeu_si512(d + 64, z2);
	_mm512_storeu_si512(d + 128, z3);
	_mm512_storeu_si512(d + 192, z4);
	z1 = _mm512_xor_si512(z1, _mm512_zextsi128_si512(
				      _mm_cvtsi32_si128((int)reg)));
	for (off = 256; off + 256 <= len; off += 256) {
		COPY_FOLD_WIDE(z1, off, k16);
		COPY_FOLD_WIDE(z2, off + 64, k16);
		COPY_FOLD_WIDE(z3, off + 128, k16);
		COPY_FOLD_WIDE(z4, off + 192, k16);
	}
	z1 = fold_wide(z1, k4, z2);
	z1 = fold_wide(z1, k4, z3);
	z1 = fold_wide(z1, k4, z4);
	for (; off + 64 <= len; off += 64)
		COPY_FOLD_WIDE(z1, off, k4);
	x = _mm512_castsi512_si128(z1);
	x = _mm_xor_si128(fold(x, k3k4), _mm512_extracti32x4_epi32(z1, 1));
	x = _mm_xor_si128(fold(x, k3k4), _mm512_extracti32x4_epi32(z1, 2));
	x = _mm_xor_si128(fold(x, k3k4), _mm512_extracti32x4_epi32(z1, 3));
	return copy_fold_tail(x, d, s, off, len);
}

/* Load 32 bytes of s at off, store them to d (if copy), fold accumulator
 * y by k (both lanes alike). */
#define COPY_FOLD_256(y, off, k)					\
	do {								\
		__m256i b_ = _mm256_loadu_si256(			\
			(const __m256i *)(s + (off)));			\
		if (copy)						\
			_mm256_storeu_si256((__m256i *)(d + (off)), b_); \
		(y) = _mm256_xor_si256(_mm256_xor_si256(		\
			_mm256_clmulepi64_epi128((y), (k), 0x00),	\
			_mm256_clmulepi64_epi128((y), (k), 0x11)), b_);	\
	} while (0)

/* y1 folded forward by k (the distance from y1's lanes to y2's) onto y2. */
static inline VCLMUL256_TARGET __m256i
fold_256(__m256i y1, __m256i k, __m256i y2)
{
	return _mm256_xor_si256(_mm256_xor_si256(
		_mm256_clmulepi64_epi128(y1, k, 0x00),
		_mm256_clmulepi64_epi128(y1, k, 0x11)), y2);
}

/*
 * roce_crc32_copy_clmul() for len >= 256 with VPCLMULQDQ and AVX2 but not
 * AVX-512: two lanes per register, so eight accumulators (sixteen blocks,
 * as the 512-bit kernel's four) fold by 2048 bits per 256-byte step; then
 * the eight into four by 1024 bits, the four into two by 512 bits, more
 * 64-byte steps by 512 bits, and the four lanes by 128 bits into one.
 * copy false (a constant: two functions below): the CRC alone, dst unused.
 */
static inline __attribute__((always_inline)) VCLMUL256_TARGET uint32_t
crc32_256_body(uint32_t reg, void *dst, const void *src, size_t len,
	       bool copy)
{
	const __m256i k16 = _mm256_broadcastsi128_si256(
		_mm_set_epi64x(FOLD_2048));
	const __m256i k8 = _mm256_broadcastsi128_si256(
		_mm_set_epi64x(FOLD_1024));
	const __m128i k1k2 = _mm_set_epi64x(FOLD_512);
	const __m128i k3k4 = _mm_set_epi64x(FOLD_128);
	const __m256i k4 = _mm256_broadcastsi128_si256(k1k2);
	const uint8_t *s = src;
	uint8_t *d = dst;
	size_t off;
	__m256i y0, y1, y2, y3, y4, y5, y6, y7;
	__m128i x;

	/* named registers, not an array: GCC keeps an array on the stack */
	y0 = _mm256_loadu_si256((const __m256i *)s);
	y1 = _mm256_loadu_si256((const __m256i *)(s + 32));
	y2 = _mm256_loadu_si256((const __m256i *)(s + 64));
	y3 = _mm256_loadu_si256((const __m256i *)(s + 96));
	y4 = _mm256_loadu_si256((const __m256i *)(s + 128));
	y5 = _mm256_loadu_si256((const __m256i *)(s + 160));
	y6 = _mm256_loadu_si256((const __m256i *)(s + 192));
	y7 = _mm256_loadu_si256((const __m256i *)(s + 224));
	if (copy) {
		_mm256_storeu_si256((__m256i *)d, y0);
		_mm256_storeu_si256((__m256i *)(d + 32), y1);
		_mm256_storeu_si256((__m256i *)(d + 64), y2);
		_mm256_storeu_si256((__m256i *)(d + 96), y3);
		_mm256_storeu_si256((__m256i *)(d + 128), y4);
		_mm256_storeu_si256((__m256i *)(d + 160), y5);
		_mm256_storeu_si256((__m256i *)(d + 192), y6);
		_mm256_storeu_si256((__m256i *)(d + 224), y7);
	}
	y0 = _mm256_xor_si256(y0, _mm256_zextsi128_si256(
				      _mm_cvtsi32_si128((int)reg)));
	for (off = 256; off + 256 <= len; off += 256) {
		COPY_FOLD_256(y0, off, k16);
		COPY_FOLD_256(y1, off + 32, k16);
		COPY_FOLD_256(y2, off + 64, k16);
		COPY_FOLD_256(y3, off + 96, k16);
		COPY_FOLD_256(y4, off + 128, k16);
		COPY_FOLD_256(y5, off + 160, k16);
		COPY_FOLD_256(y6, off + 192, k16);
		COPY_FOLD_256(y7, off + 224, k16);
	}
	y4 = fold_256(y0, k8, y4);
	y5 = fold_256(y1, k8, y5);
	y6 = fold_256(y2, k8, y6);
	y7 = fold_256(y3, k8, y7);
	y6 = fold_256(y4, k4, y6);
	y7 = fold_256(y5, k4, y7);
	for (; off + 64 <= len; off += 64) {
		COPY_FOLD_256(y6, off, k4);
		COPY_FOLD_256(y7, off + 32, k4);
	}
	x = _mm256_castsi256_si128(y6);
	x = _mm_xor_si128(fold(x, k3k4), _mm256_extracti128_si256(y6, 1));
	x = _mm_xor_si128(fold(x, k3k4), _mm256_castsi256_si128(y7));
	x = _mm_xor_si128(fold(x, k3k4), _mm256_extracti128_si256(y7, 1));
	return fold_tail_body(x, d, s, off, len, copy);
}

static VCLMUL256_TARGET uint32_t
crc32_copy_256(uint32_t reg, void *dst, const void *src, size_t len)
{
	return crc32_256_body(reg, dst, src, len, true);
}

/* The CRC of len >= 256 bytes at src (reg: the register before them, as
 * for the copy; returns the finished CRC), nothing stored. */
static VCLMUL256_TARGET uint32_t
crc32_inplace_256(uint32_t reg, const void *src, size_t len)
{
	return crc32_256_body(reg, NULL, src, len, false);
}

uint32_t
roce_crc32_wide(uint32_t crc, const void *buf, size_t len)
{
	/* (the kernel reads 256 bytes before it looks at len, and would
	 * fault on a CPU without the instructions: a caller that did not ask
	 * gets the portable CRC) */
	if (__builtin_expect(len < 256 || roce_crc32_copy_bits() != 256, 0))
		return roce_crc32_slice8(crc, buf, len);
	return crc32_inplace_256(~crc, buf, len);
}

CLMUL_TARGET uint32_t
roce_crc32_copy_clmul(uint32_t crc, void *dst, const void *src, size_t len)
{
	/* Folding by 1024 bits (eight accumulators: the multiplier's latency
	 * hidden), by 512, by 128; constants as above. */
	const __m128i k8 = _mm_set_epi64x(FOLD_1024);
	const __m128i k1k2 = _mm_set_epi64x(FOLD_512);
	const __m128i k3k4 = _mm_set_epi64x(FOLD_128);
	const __m128i *s = src;
	__m128i *d = dst;
	uint32_t reg = ~crc;
	__m128i x1, x2, x3, x4, x5, x6, x7, x8;
	size_t nb = len / 16, k = 0;

	if (len >= 256) {
		unsigned int bits = __atomic_load_n(&copy_bits,
						    __ATOMIC_RELAXED);

		if (bits == 512)
			return crc32_copy_wide(reg, dst, src, len);
		if (bits == 256)
			return crc32_copy_256(reg, dst, src, len);
	}

	if (nb >= 8) {
		x1 = _mm_loadu_si128(s);
		x2 = _mm_loadu_si128(s + 1);
		x3 = _mm_loadu_si128(s + 2);
		x4 = _mm_loadu_si128(s + 3);
		x5 = _mm_loadu_si128(s + 4);
		x6 = _mm_loadu_si128(s + 5);
		x7 = _mm_loadu_si128(s + 6);
		x8 = _mm_loadu_si128(s + 7);
		_mm_storeu_si128(d, x1);
		_mm_storeu_si128(d + 1, x2);
		_mm_storeu_si128(d + 2, x3);
		_mm_storeu_si128(d + 3, x4);
		_mm_storeu_si128(d + 4, x5);
		_mm_storeu_si128(d + 5, x6);
		_mm_storeu_si128(d + 6, x7);
		_mm_storeu_si128(d + 7, x8);
		x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)reg));
		for (k = 8; k + 8 <= nb; k += 8) {
			COPY_FOLD(x1, k, k8);
			COPY_FOLD(x2, k + 1, k8);
			COPY_FOLD(x3, k + 2, k8);
			COPY_FOLD(x4, k + 3, k8);
			COPY_FOLD(x5, k + 4, k8);
			COPY_FOLD(x6, k + 5, k8);
			COPY_FOLD(x7, k + 6, k8);
			COPY_FOLD(x8, k + 7, k8);
		}
		x1 = _mm_xor_si128(fold(x1, k1k2), x5);
		x2 = _mm_xor_si128(fold(x2, k1k2), x6);
		x3 = _mm_xor_si128(fold(x3, k1k2), x7);
		x4 = _mm_xor_si128(fold(x4, k1k2), x8);
		x1 = _mm_xor_si128(fold(x1, k3k4), x2);
		x1 = _mm_xor_si128(fold(x1, k3k4), x3);
		x1 = _mm_xor_si128(fold(x1, k3k4), x4);
	} else if (nb >= 1) {
		x1 = _mm_loadu_si128(s);
		_mm_storeu_si128(d, x1);
		x1 = _mm_xor_si128(x1, _mm_cvtsi32_si128((int)reg));
		k = 1;
	}
	if (nb >= 1)
		return copy_fold_tail(x1, dst, src, 16 * k, len);
	for (size_t i = 0; i < len; i++) {
		((uint8_t *)dst)[i] = ((const uint8_t *)src)[i];
		reg = roce_crc32_tab[0][(reg ^ ((const uint8_t *)src)[i]) &
					0xff] ^ (reg >> 8);
	}
	return ~reg;
}

#else /* not x86-64 */

int8_t roce_clmul_state = 0;

bool
roce_icrc_clmul_probe(void)
{
	return false;
}

uint32_t
roce_icrc_clmul(const uint8_t *l3, uint32_t cover, bool ipv6)
{
	(void)l3;
	(void)cover;
	(void)ipv6;
	return 0;
}

unsigned int
roce_crc32_copy_bits(void)
{
	return 0;
}

uint32_t
roce_crc32_mulmod_clmul(uint32_t a, uint32_t b)
{
	(void)a;
	(void)b;
	return 0;
}

uint32_t
roce_crc32_copy_clmul(uint32_t crc, void *dst, const void *src, size_t len)
{
	memcpy(dst, src, len);
	return roce_crc32(crc, src, len);
}

uint32_t
roce_crc32_wide(uint32_t crc, const void *buf, size_t len)
{
	return roce_crc32_slice8(crc, buf, len);
}

#ifdef ROCE_HAVE_ISAL
#include <isa-l/crc.h>

uint32_t
roce_isal_crc(uint32_t crc, const void *buf, size_t len)
{
	return crc32_gzip_refl(crc, buf, len);
}
#endif

#endif
