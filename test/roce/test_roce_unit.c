/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_roce_unit: lib/roce without captures.
 *   crc32      known vectors; slice8 against a bitwise reference; chaining
 *              across random splits; ISA-L against slice8 when built with it
 *   psn        24-bit PSN arithmetic around the wrap
 *   opcodes    table sanity (hdr_len = BTH + flagged headers, expected set
 *              of opcodes, flag consistency)
 *   roundtrip  build -> parse for every opcode, IPv4/IPv6, with/without
 *              VLAN; ICRC against an independent reference implementation
 *   rejects    hand-made bad frames get the right error code
 *   mutations  every truncation and every byte value at every header byte
 *              (parse must never crash/overrun: run once under ASan/UBSan),
 *              every single-bit flip vs the ICRC check
 * Random data comes from a seeded PRNG; the seed is printed and can be
 * forced with ROCE_TEST_SEED=<n>. Exit 0 pass, 1 fail.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "roce.h"
#include "roce_test_rng.h"

static int failures;

#define CHECK(cond, ...) do { \
	if (!(cond)) { \
		failures++; \
		if (failures <= 30) { \
			printf("FAIL %s:%d: %s: ", __func__, __LINE__, #cond); \
			printf(__VA_ARGS__); \
			printf("\n"); \
		} \
	} \
} while (0)

/* ---- reference CRC32, one bit at a time, zlib conventions ---- */
static uint32_t
ref_crc32(uint32_t crc, const uint8_t *b, size_t n)
{
	crc = ~crc;
	for (size_t i = 0; i < n; i++) {
		crc ^= b[i];
		for (int k = 0; k < 8; k++)
			crc = (crc >> 1) ^ (0xedb88320u & (0u - (crc & 1)));
	}
	return ~crc;
}

static void
test_crc32(void)
{
	static const struct {
		const char *s;
		uint32_t crc;
	} vec[] = {
		{ "", 0x00000000 },
		{ "a", 0xe8b7be43 },
		{ "abc", 0x352441c2 },
		{ "123456789", 0xcbf43926 },
		{ "The quick brown fox jumps over the lazy dog", 0x414fa339 },
	};
	static uint8_t buf[70000];
	/* ISA-L, and from 256 bytes the 256-bit kernel where it runs */
	int not_slice8 = strcmp(roce_crc32_impl(), "slice8") != 0;

	for (size_t i = 0; i < sizeof(vec) / sizeof(vec[0]); i++) {
		size_t n = strlen(vec[i].s);

		CHECK(roce_crc32(0, vec[i].s, n) == vec[i].crc, "\"%s\": %08x",
		      vec[i].s, roce_crc32(0, vec[i].s, n));
		CHECK(roce_crc32_slice8(0, vec[i].s, n) == vec[i].crc,
		      "\"%s\": %08x", vec[i].s,
		      roce_crc32_slice8(0, vec[i].s, n));
		CHECK(ref_crc32(0, (const uint8_t *)vec[i].s, n) == vec[i].crc,
		      "reference \"%s\"", vec[i].s);
	}
	/* 32 zero bytes and 32 0xff bytes (well-known CRC-32 check values). */
	memset(buf, 0, 32);
	CHECK(roce_crc32(0, buf, 32) == 0x190a55ad, "zeros %08x",
	      roce_crc32(0, buf, 32));
	memset(buf, 0xff, 32);
	CHECK(roce_crc32(0, buf, 32) == 0xff6cab0b, "ones %08x",
	      roce_crc32(0, buf, 32));

	rnd_fill(buf, sizeof(buf));
	/* slice8 vs bitwise at every alignment and many lengths. */
	for (int i = 0; i < 400; i++) {
		size_t off = rnd_below(16), n = rnd_below(i < 200 ? 40 : 3000);
		uint32_t seed = i & 1 ? (uint32_t)rnd() : 0;

		CHECK(roce_crc32_slice8(seed, buf + off, n) ==
		      ref_crc32(seed, buf + off, n), "off %zu len %zu", off, n);
	}
	/* Chaining: any split gives the one-shot CRC, for both. */
	for (int i = 0; i < 300; i++) {
		size_t n = rnd_below(sizeof(buf) - 16), pos = 0;
		size_t off = rnd_below(16);
		uint32_t one = roce_crc32(0, buf + off, n), c = 0, c8 = 0;

		while (pos < n) {
			size_t k = rnd_below(i & 1 ? 17 : (uint32_t)(n - pos) + 1);

			if (k > n - pos)
				k = n - pos;
			c = roce_crc32(c, buf + off + pos, k);
			c8 = roce_crc32_slice8(c8, buf + off + pos, k);
			pos += k;	/* k == 0: empty pieces chain too */
		}
		CHECK(c == one, "chained %08x one-shot %08x len %zu", c, one, n);
		CHECK(c8 == one, "slice8 chained %08x one-shot %08x len %zu",
		      c8, one, n);
	}
	/* ISA-L vs slice8 on random buffers. */
	if (not_slice8) {
		for (int i = 0; i < 3000; i++) {
			size_t off = rnd_below(64);
			size_t n = rnd_below(i % 3 == 0 ? 70 : 65536);
			uint32_t seed = (uint32_t)rnd();

			CHECK(roce_crc32(seed, buf + off, n) ==
			      roce_crc32_slice8(seed, buf + off, n),
			      "%s vs slice8: off %zu len %zu",
			      roce_crc32_impl(), off, n);
		}
		printf("crc32: %s == slice8 on 3000 random buffers\n",
		       roce_crc32_impl());
	} else {
		printf("crc32: slice8 only (no ISA-L, no 256-bit kernel)\n");
	}
	/* The 256-bit kernel's entry point answers any length on any CPU
	 * (below 256 bytes, or without the instructions: slice-by-8). */
	for (size_t n = 0; n < 1200; n += 1 + n / 3) {
		uint32_t seed = (uint32_t)rnd();

		CHECK(roce_crc32_wide(seed, buf + 3, n) ==
		      roce_crc32_slice8(seed, buf + 3, n),
		      "roce_crc32_wide vs slice8: len %zu", n);
	}
}

static void
test_psn(void)
{
	CHECK(roce_psn_add(0xffffff, 1) == 0, "wrap");
	CHECK(roce_psn_add(0xfffffe, 5) == 3, "wrap +5");
	CHECK(roce_psn_add(7, 0) == 7, "+0");
	CHECK(roce_psn_add(0x123456, 0x1000000) == 0x123456, "+2^24");
	CHECK(roce_psn_diff(0, 0xffffff) == 1, "0 - 0xffffff = %d",
	      roce_psn_diff(0, 0xffffff));
	CHECK(roce_psn_diff(0xffffff, 0) == -1, "0xffffff - 0 = %d",
	      roce_psn_diff(0xffffff, 0));
	CHECK(roce_psn_diff(5, 3) == 2, "5-3");
	CHECK(roce_psn_diff(3, 5) == -2, "3-5");
	CHECK(roce_psn_diff(0x7fffff, 0) == 0x7fffff, "max positive");
	CHECK(roce_psn_diff(0x800000, 0) == -0x800000, "half way is behind");
	for (int i = 0; i < 100000; i++) {
		uint32_t a = (uint32_t)rnd() & ROCE_PSN_MASK;
		int32_t n = (int32_t)rnd_below(0x1000000) - 0x800000;
		uint32_t b = roce_psn_add(a, (uint32_t)n);

		CHECK(b <= ROCE_PSN_MASK, "add range");
		CHECK(roce_psn_diff(b, a) == n, "diff(%06x+%d, %06x) = %d",
		      a, n, a, roce_psn_diff(b, a));
		CHECK(roce_psn_diff(a, b) == (n == -0x800000 ? n : -n),
		      "antisymmetry %d", n);
	}
	CHECK(roce_mtu_bytes(1) == 256 && roce_mtu_bytes(3) == 1024 &&
	      roce_mtu_bytes(5) == 4096 && roce_mtu_bytes(0) == 0 &&
	      roce_mtu_bytes(6) == 0, "mtu");
}

/* ---- opcode table ---- */
static const uint8_t supported[] = {
	/* RC */
	0x00, 0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x09, 0x0a,
	0x0b, 0x0c, 0x0d, 0x0e, 0x0f, 0x10, 0x11, 0x12, 0x13, 0x14, 0x16,
	0x17,
	/* UC */
	0x20, 0x21, 0x22, 0x23, 0x24, 0x25, 0x26, 0x27, 0x28, 0x29, 0x2a,
	0x2b,
	/* UD */
	0x64, 0x65,
	/* CNP */
	0x81,
};
#define N_SUPPORTED (sizeof(supported) / sizeof(supported[0]))

static void
test_opcodes(void)
{
	static const struct {
		uint32_t f;
		int len;
	} ext[] = {
		{ ROCE_OPF_RETH, 16 }, { ROCE_OPF_AETH, 4 },
		{ ROCE_OPF_ATMETH, 28 }, { ROCE_OPF_ATMACK, 8 },
		{ ROCE_OPF_DETH, 8 }, { ROCE_OPF_IMMDT, 4 },
		{ ROCE_OPF_IETH, 4 },
	};
	bool want[256] = { false };

	for (size_t i = 0; i < N_SUPPORTED; i++)
		want[supported[i]] = true;
	for (int op = 0; op < 256; op++) {
		const struct roce_opcode_info *oi = roce_opcode_info((uint8_t)op);
		uint32_t f = oi->flags;
		int len = 12;
		const char *n = oi->name;

		CHECK(oi == &roce_opcode_table[op], "accessor");
		CHECK((n != NULL) == want[op], "opcode 0x%02x: name %s", op,
		      n ? n : "NULL");
		if (n == NULL) {
			CHECK(f == 0 && oi->hdr_len == 0,
			      "reserved 0x%02x has flags/len", op);
			continue;
		}
		for (size_t k = 0; k < sizeof(ext) / sizeof(ext[0]); k++)
			if (f & ext[k].f)
				len += ext[k].len;
		CHECK(oi->hdr_len == len, "0x%02x %s: hdr_len %u, flags say %d",
		      op, n, oi->hdr_len, len);
		CHECK(oi->hdr_len + ROCE_ETH_HLEN + ROCE_VLAN_HLEN +
		      ROCE_IPV6_HLEN + ROCE_UDP_HLEN <= ROCE_MAX_HDR_LEN,
		      "0x%02x exceeds ROCE_MAX_HDR_LEN", op);
		if (op == ROCE_OPCODE_CNP) {
			CHECK(f == (ROCE_OPF_CNP | ROCE_OPF_PAYLOAD),
			      "CNP flags %x", f);
			continue;
		}
		/* requester xor responder; middle excludes first/last */
		CHECK(!(f & ROCE_OPF_REQ) != !(f & ROCE_OPF_RESP),
		      "0x%02x %s REQ/RESP", op, n);
		CHECK(!(f & ROCE_OPF_MIDDLE) ||
		      !(f & (ROCE_OPF_FIRST | ROCE_OPF_LAST)), "%s middle", n);
		CHECK(f & (ROCE_OPF_FIRST | ROCE_OPF_MIDDLE | ROCE_OPF_LAST),
		      "%s has no position", n);
		/* exactly one kind */
		{
			uint32_t k = f & (ROCE_OPF_SEND | ROCE_OPF_WRITE |
					  ROCE_OPF_READ | ROCE_OPF_ATOMIC |
					  ROCE_OPF_ACK);
			bool one = k && !(k & (k - 1));

			CHECK(one || op == 0x12, "%s kind flags %x", n, k);
		}
		CHECK(!!(f & ROCE_OPF_IMMDT) == !!strstr(n, "_IMM"), "%s IMM", n);
		CHECK(!!(f & ROCE_OPF_IETH) == !!strstr(n, "_INV"), "%s INV", n);
		CHECK(!!(f & ROCE_OPF_DETH) == ((op & 0xe0) == 0x60),
		      "%s DETH iff UD", n);
		CHECK(!!(f & ROCE_OPF_PAYLOAD) ==
		      !!(f & (ROCE_OPF_SEND | ROCE_OPF_WRITE)) ||
		      (f & ROCE_OPF_READ && f & ROCE_OPF_RESP),
		      "%s payload", n);
		if ((op & 0xe0) == 0x20)
			CHECK(!(f & (ROCE_OPF_READ | ROCE_OPF_ATOMIC |
				     ROCE_OPF_ACK | ROCE_OPF_IETH)),
			      "UC %s", n);
	}
	/* The specific ones the brief spells out. */
	CHECK(roce_opcode_table[0x0d].flags & ROCE_OPF_AETH, "RR first");
	CHECK(!(roce_opcode_table[0x0e].flags & ROCE_OPF_AETH), "RR middle");
	CHECK(roce_opcode_table[0x0f].flags & ROCE_OPF_AETH, "RR last");
	CHECK(roce_opcode_table[0x10].flags & ROCE_OPF_AETH, "RR only");
	CHECK(roce_opcode_table[0x11].hdr_len == 16, "ACK");
	CHECK(roce_opcode_table[0x12].hdr_len == 24, "ATOMIC ACK");
	CHECK(roce_opcode_table[0x13].hdr_len == 40, "CMP_SWAP");
	CHECK(roce_opcode_table[0x14].hdr_len == 40, "FETCH_ADD");
	CHECK(roce_opcode_table[0x16].hdr_len == 16, "SEND_LAST_INV");
	CHECK(roce_opcode_table[0x17].hdr_len == 16, "SEND_ONLY_INV");
	CHECK(roce_opcode_table[0x64].hdr_len == 20, "UD SEND_ONLY");
	CHECK(roce_opcode_table[0x65].hdr_len == 24, "UD SEND_ONLY_IMM");
	CHECK(roce_opcode_table[0x0b].hdr_len == 32, "WRITE_ONLY_IMM");
	CHECK(roce_opcode_table[0x0c].hdr_len == 28, "READ_REQ");
}

/* ---- independent ICRC reference (A17.8), straight from the frame ---- */
static uint32_t
ref_icrc(const uint8_t *f, uint32_t l3, uint32_t frame_len, bool ipv6)
{
	static uint8_t m[20000];
	uint32_t n = frame_len - ROCE_ICRC_LEN - l3;
	uint32_t udp = ipv6 ? 40 : 20;

	memset(m, 0xff, 8);
	memcpy(m + 8, f + l3, n);
	if (ipv6) {
		m[8] = (uint8_t)(m[8] | 0x0f);	/* traffic class high nibble */
		m[9] = m[10] = m[11] = 0xff;	/* TC low nibble, flow label */
		m[8 + 7] = 0xff;		/* hop limit */
	} else {
		m[8 + 1] = 0xff;		/* TOS */
		m[8 + 8] = 0xff;		/* TTL */
		m[8 + 10] = m[8 + 11] = 0xff;	/* header checksum */
	}
	m[8 + udp + 6] = m[8 + udp + 7] = 0xff;	/* UDP checksum */
	m[8 + udp + 8 + 4] = 0xff;		/* BTH FECN/BECN/resv6 */
	return ref_crc32(0, m, 8 + n);
}

/* Is byte `i` of the frame outside the ICRC or in one of its masked fields? */
static bool
icrc_ignores(const struct roce_pkt *p, uint32_t i, uint8_t bitmask)
{
	uint32_t r;

	if (i < p->l3_off)
		return true;
	r = i - p->l3_off;
	if (p->ipv6) {
		if (r == 0)
			return (bitmask & 0x0f) != 0;
		if (r <= 3 || r == 7)
			return true;
	} else if (r == 1 || r == 8 || r == 10 || r == 11) {
		return true;
	}
	return i == p->l4_off + 6u || i == p->l4_off + 7u ||
	       i == p->bth_off + 4u;
}

/*
 * The in-place PCLMULQDQ ICRC against the byte-wise reference: every
 * coverage length from the smallest header to 2 KiB and a spread up to
 * 9 KiB (the fold-by-4 loop, the one-block folds, the byte tail and the
 * ISA-L hand-off all change with it), every alignment of the IP header,
 * random bytes everywhere including the masked fields.
 */
static void
test_icrc_clmul(void)
{
	static uint8_t f[16 + 9200];
	int n = 0;

	if (!roce_icrc_clmul_usable()) {
		printf("icrc clmul: off (CPU, or DROCE_NO_CLMUL=1), not tested\n");
		return;
	}
	for (int v6 = 0; v6 < 2; v6++) {
		uint32_t min = v6 ? 60 : 40;

		for (uint32_t cover = min; cover <= 9100;
		     cover += cover < 2100 ? 1 : 1 + rnd_below(97)) {
			uint32_t l3 = 14 + rnd_below(16), want, got;

			rnd_fill(f, l3 + cover + 4);
			f[l3] = (uint8_t)(v6 ? 0x60 | (f[l3] & 0x0f) :
					  0x45);
			want = ref_icrc(f, l3, l3 + cover + 4, v6);
			got = roce_icrc_clmul(f + l3, cover, v6);
			CHECK(got == want, "icrc clmul %s cover %u l3 %u: "
			      "%08x, reference %08x", v6 ? "IPv6" : "IPv4",
			      cover, l3, got, want);
			/* roce_icrc_hdrs takes the same path for headers */
			got = roce_icrc_final(roce_icrc_hdrs(f + l3, cover, v6));
			CHECK(got == want, "icrc hdrs %s cover %u l3 %u: "
			      "%08x, reference %08x", v6 ? "IPv6" : "IPv4",
			      cover, l3, got, want);
			n++;
		}
	}
	printf("icrc clmul == reference on %d lengths\n", n);
}

/*
 * roce_icrc_clmul_store_n against the byte-wise reference: bursts of up to
 * 70 frames, runs of one shape (the four-a-register path: lengths with
 * 8 + cover a multiple of 16, both IP versions) broken by frames of other
 * lengths and versions at random places, so every grouping of the four and
 * the one-at-a-time rest between them runs; each ICRC lands right after
 * its cover and nothing else in the buffers moves.
 */
static void
test_icrc_store_n(void)
{
	enum { NF = 70, SZ = 1200 };
	static uint8_t f[NF][SZ], keep[NF][SZ];
	uint8_t *l3[NF];
	uint16_t cover[NF];
	uint8_t v6[NF];
	uint32_t off[NF], want[NF], frames = 0, lanes = 0;

	if (!roce_icrc_clmul_usable()) {
		printf("icrc store_n: off (CPU, or DROCE_NO_CLMUL=1), not tested\n");
		return;
	}
	for (int round = 0; round < 3000; round++) {
		uint32_t n = 1 + rnd_below(NF);
		uint32_t shape = 16 * (3 + rnd_below(28)) - 8;	/* 40..472 */
		bool sv6 = rnd_below(3) == 0;

		if (sv6 && shape < 60)
			shape += 16;
		for (uint32_t i = 0; i < n; i++) {
			bool odd = rnd_below(5) == 0;

			v6[i] = odd ? (uint8_t)rnd_below(2) : sv6;
			cover[i] = (uint16_t)(odd ? (v6[i] ? 60 : 40) +
					      rnd_below(1100) : shape);
			off[i] = 8 + rnd_below(24);	/* an Ethernet header's */
			rnd_fill(f[i], SZ);
			f[i][off[i]] = (uint8_t)(v6[i] ? 0x60 : 0x45);
			l3[i] = f[i] + off[i];
			want[i] = ref_icrc(f[i], off[i],
					   off[i] + cover[i] + 4, v6[i]);
			memcpy(keep[i], f[i], SZ);
		}
		lanes += roce_icrc_clmul_store_n(l3, cover, v6, n);
		for (uint32_t i = 0; i < n; i++) {
			uint32_t end = off[i] + cover[i];

			CHECK(roce_icrc_load(f[i] + end) == want[i],
			      "store_n round %d frame %u/%u %s cover %u: %08x, "
			      "reference %08x", round, i, n,
			      v6[i] ? "IPv6" : "IPv4", cover[i],
			      roce_icrc_load(f[i] + end), want[i]);
			CHECK(memcmp(f[i], keep[i], end) == 0 &&
			      memcmp(f[i] + end + 4, keep[i] + end + 4,
				     SZ - end - 4) == 0,
			      "store_n round %d frame %u: bytes beside the ICRC "
			      "changed", round, i);
		}
		frames += n;
	}
	printf("icrc store_n == reference on %u frames (%u four a register, "
	       "%u-bit kernel)\n", frames, lanes, roce_crc32_copy_bits());
	/* where the CPU has the four-lane kernel it must have run */
	if (__builtin_cpu_supports("avx512f") &&
	    __builtin_cpu_supports("avx512bw") &&
	    __builtin_cpu_supports("vpclmulqdq") && roce_crc32_copy_bits() == 512)
		CHECK(lanes > frames / 4, "four a register: %u of %u", lanes,
		      frames);
	else
		CHECK(lanes == 0, "four a register without the kernel: %u",
		      lanes);
}

static bool
env_set(const char *name)
{
	const char *v = getenv(name);

	return v != NULL && v[0] == '1';
}

/*
 * The copy kernel this CPU and the DROCE_NO_* variables call for, worked
 * out here apart from lib/roce's probe: a roce_unit-* variant whose
 * variable stopped taking effect would otherwise test the default kernel
 * again and pass.
 */
static unsigned int
expected_copy_bits(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	bool vclmul;

	if (!__builtin_cpu_supports("pclmul") ||
	    !__builtin_cpu_supports("sse4.1") ||
	    !__builtin_cpu_supports("avx") || env_set("DROCE_NO_CLMUL"))
		return 0;
	vclmul = __builtin_cpu_supports("vpclmulqdq") &&
		 !env_set("DROCE_NO_VCLMUL");
	if (vclmul && __builtin_cpu_supports("avx512f") &&
	    !env_set("DROCE_NO_AVX512"))
		return 512;
	if (vclmul && __builtin_cpu_supports("avx2"))
		return 256;
	return 128;
#else
	return 0;
#endif
}

/*
 * roce_crc32_copy: the bytes land exactly in [dst, dst + len) and the CRC
 * is the reference's, for every length to 2 KiB and a spread to 64 KiB,
 * any alignment of source and destination, any running CRC.
 */
static void
test_crc32_copy(void)
{
	static uint8_t src[65536 + 64], dst[65536 + 96];
	int n = 0;

	for (size_t len = 0; len <= 65536;
	     len += len < 2100 ? 1 : 1 + rnd_below(4099)) {
		size_t so = rnd_below(32), dof = 16 + rnd_below(32);
		uint32_t crc = (uint32_t)rnd(), got, want;
		bool bytes_ok;

		rnd_fill(src + so, len);
		memset(dst, 0xa5, sizeof(dst));
		want = ref_crc32(crc, src + so, len);
		got = roce_crc32_copy(crc, dst + dof, src + so, len);
		CHECK(got == want, "crc32_copy len %zu src+%zu dst+%zu: "
		      "%08x, reference %08x", len, so, dof, got, want);
		bytes_ok = memcmp(dst + dof, src + so, len) == 0;
		for (size_t i = 0; i < dof; i++)
			bytes_ok = bytes_ok && dst[i] == 0xa5;
		for (size_t i = dof + len; i < sizeof(dst); i++)
			bytes_ok = bytes_ok && dst[i] == 0xa5;
		CHECK(bytes_ok, "crc32_copy len %zu src+%zu dst+%zu: bytes",
		      len, so, dof);
		n++;
	}
	CHECK(roce_crc32_copy_bits() == expected_copy_bits(),
	      "crc32_copy runs the %u-bit kernel, expected %u",
	      roce_crc32_copy_bits(), expected_copy_bits());
	printf("crc32_copy == memcpy + reference on %d lengths (%s)\n", n,
	       roce_crc32_copy_bits() == 512 ? "512-bit vpclmulqdq from 256 B, pclmul below" :
	       roce_crc32_copy_bits() == 256 ? "256-bit vpclmulqdq from 256 B, pclmul below" :
	       roce_icrc_clmul_usable() ? "pclmul" : "fallback");
}

/* ---- roce_crc32_combine: crc(A then B) from crc(A), crc(B), |B| ---- */
static void
test_crc32_combine(void)
{
	static uint8_t buf[300000];
	static const uint32_t fixed[] = { 0, 1, 2, 3, 4, 7, 8, 64, 256, 512,
					  1024, 2048, 4096, 4097, 65535,
					  65536, 65537, 131072, 200000 };
	int n = 0;

	rnd_fill(buf, sizeof(buf));
	for (int i = 0; i < 80; i++) {
		uint32_t la = rnd_below(5000), lb, init = (uint32_t)rnd();
		uint32_t ca, cb, want, got;

		lb = i < (int)(sizeof(fixed) / sizeof(fixed[0])) ? fixed[i] :
		     i % 2 ? 1u << rnd_below(17) : rnd_below(70000);
		ca = ref_crc32(init, buf, la);
		cb = ref_crc32(0, buf + la, lb);
		want = ref_crc32(init, buf, (size_t)la + lb);
		got = roce_crc32_combine(ca, cb, lb);
		CHECK(got == want, "combine |A| %u |B| %u: %08x, reference %08x",
		      la, lb, got, want);
		n++;
	}
	printf("crc32_combine == the reference on %d splits (%s)\n", n,
	       roce_icrc_clmul_usable() ? "pclmul" : "bitwise");
}

/* ---- the vector registers' upper halves after a CRC ----
 *
 * ISA-L's AVX-512 kernel returns with the upper halves of zmm0-15 dirty;
 * on Intel cores each legacy-SSE instruction after that (droce and DPDK
 * are built for corei7) pays for merging into them, 2x the cycles of a
 * 64 KiB zero-copy WRITE (doc/performance.md, fifty-first round).
 * XGETBV with ECX=1 (XINUSE) says which state components are in use: bit
 * 2 the upper halves of ymm0-15, bit 6 bits 256-511 of zmm0-15 (zmm16-31,
 * bit 7, are no legacy instruction's concern). */
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <cpuid.h>

/* ISA-L itself, when linked (the control: the instrument sees its dirt) */
extern uint32_t crc32_gzip_refl(uint32_t, const unsigned char *, uint64_t)
	__attribute__((weak));

static bool
xinuse_readable(void)
{
	unsigned int a, b, c, d;

	if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE))
		return false;
	return __get_cpuid_count(0xd, 1, &a, &b, &c, &d) && (a & (1u << 2));
}

static inline uint64_t
xinuse(void)
{
	uint32_t lo, hi;

	__asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(1));
	return (uint64_t)hi << 32 | lo;
}

#define UPPER_DIRT ((1u << 2) | (1u << 6))

static void
test_upper_clean(void)
{
	static uint8_t buf[4096 + 64], dst[4096];
	uint64_t after[4];
	uint32_t sink = 0;
	int control = -1;

	if (roce_crc32_copy_bits() != 512 || !xinuse_readable()) {
		printf("upper halves after a CRC: not checked (the %u-bit "
		       "kernel, or no XINUSE)\n", roce_crc32_copy_bits());
		return;
	}
	rnd_fill(buf, sizeof(buf));
	if (crc32_gzip_refl != NULL) {
		sink ^= crc32_gzip_refl(0, buf, 4096);
		control = (xinuse() & UPPER_DIRT) != 0;
	}
	sink ^= roce_crc32(0, buf, 4096);
	after[0] = xinuse();
	sink ^= roce_crc32(0, buf + 1, 777);
	after[1] = xinuse();
	sink ^= roce_icrc_l3(buf, 48, 2048, false);
	after[2] = xinuse();
	sink ^= roce_crc32_copy(0, dst, buf, 4096);
	after[3] = xinuse();
	for (int i = 0; i < 4; i++)
		CHECK(!(after[i] & UPPER_DIRT), "call %d left XINUSE %#" PRIx64,
		      i, after[i]);
	printf("upper halves clean after roce_crc32, roce_icrc_l3 and "
	       "roce_crc32_copy (ISA-L alone leaves them %s; %08x)\n",
	       control < 0 ? "unseen: not linked" :
	       control ? "dirty" : "clean", sink);
}
#else
static void
test_upper_clean(void)
{
}
#endif

/* ---- frame generator ---- */
static uint32_t
make_frame(uint8_t *buf, struct roce_pkt *p, uint8_t op, bool ipv6,
	   bool vlan, uint32_t max_payload)
{
	uint32_t f = roce_opcode_info(op)->flags, hl;

	memset(p, 0, sizeof(*p));
	rnd_fill(p->dst_mac, 6);
	rnd_fill(p->src_mac, 6);
	p->has_vlan = vlan;
	p->vlan_tci = vlan ? (uint16_t)rnd() : 0;
	p->ipv6 = ipv6;
	p->tos = (uint8_t)rnd();
	p->ttl = (uint8_t)rnd();
	if (ipv6) {
		p->flow_label = (uint32_t)rnd() & 0xfffff;
		rnd_fill(p->src_ip, 16);
		rnd_fill(p->dst_ip, 16);
	} else {
		p->ip_id = (uint16_t)rnd();
		p->frag_off = rnd() & 1 ? 0x4000 : 0;
		rnd_fill(p->src_ip, 4);
		rnd_fill(p->dst_ip, 4);
	}
	p->udp_sport = (uint16_t)rnd();
	p->udp_dport = rnd() & 1 ? ROCE_UDP_DPORT : 0;	/* 0: default */
	p->udp_csum = rnd() & 1 ? 0 : (uint16_t)rnd();
	p->opcode = op;
	p->se = rnd() & 1;
	p->mig = rnd() & 1;
	p->pkey = (uint16_t)rnd();
	p->fecn = rnd() & 1;
	p->becn = rnd() & 1;
	p->dest_qp = (uint32_t)rnd() & ROCE_QPN_MASK;
	p->ack_req = rnd() & 1;
	p->psn = (uint32_t)rnd() & ROCE_PSN_MASK;
	if (f & ROCE_OPF_RETH) {
		p->reth_va = rnd();
		p->reth_rkey = (uint32_t)rnd();
		p->reth_len = (uint32_t)rnd();
	}
	if (f & ROCE_OPF_AETH) {
		p->aeth_syndrome = (uint8_t)rnd();
		p->aeth_msn = (uint32_t)rnd() & 0xffffff;
	}
	if (f & ROCE_OPF_ATMETH) {
		p->atm_va = rnd();
		p->atm_rkey = (uint32_t)rnd();
		p->atm_swap_add = rnd();
		p->atm_compare = rnd();
	}
	if (f & ROCE_OPF_ATMACK)
		p->atmack_orig = rnd();
	if (f & ROCE_OPF_DETH) {
		p->deth_qkey = (uint32_t)rnd();
		p->deth_src_qp = (uint32_t)rnd() & ROCE_QPN_MASK;
	}
	if (f & ROCE_OPF_IMMDT)
		p->imm = (uint32_t)rnd();
	if (f & ROCE_OPF_IETH)
		p->ieth_rkey = (uint32_t)rnd();
	if (op == ROCE_OPCODE_CNP) {
		p->payload_len = 16;
	} else if (f & ROCE_OPF_PAYLOAD) {
		if (f & ROCE_OPF_LAST) {
			p->payload_len = rnd_below(max_payload + 1);
			p->pad = (uint8_t)(-p->payload_len & 3);
		} else {
			p->payload_len = 4 + 4 * rnd_below(max_payload / 4);
		}
	}
	hl = roce_build_hdrs(buf, p);
	rnd_fill(buf + hl, p->payload_len);
	memset(buf + hl + p->payload_len, 0, p->pad);
	roce_icrc_store(buf + p->frame_len - ROCE_ICRC_LEN,
			roce_icrc_frame(buf, p));
	return p->frame_len;
}

#define SAME(field) CHECK(a->field == b->field, "%s: " #field " %" PRIu64 \
			  " != %" PRIu64, what, (uint64_t)a->field, \
			  (uint64_t)b->field)
static void
same_pkt(const char *what, const struct roce_pkt *a, const struct roce_pkt *b)
{
	CHECK(!memcmp(a->dst_mac, b->dst_mac, 6) &&
	      !memcmp(a->src_mac, b->src_mac, 6), "%s: macs", what);
	CHECK(!memcmp(a->src_ip, b->src_ip, 16) &&
	      !memcmp(a->dst_ip, b->dst_ip, 16), "%s: ips", what);
	SAME(has_vlan); SAME(vlan_tci); SAME(ipv6); SAME(tos); SAME(ttl);
	SAME(ip_id); SAME(frag_off); SAME(flow_label); SAME(udp_sport);
	SAME(udp_dport); SAME(udp_csum); SAME(opcode); SAME(se); SAME(mig);
	SAME(pad); SAME(tver); SAME(pkey); SAME(fecn); SAME(becn);
	SAME(dest_qp); SAME(ack_req); SAME(psn); SAME(reth_va);
	SAME(reth_rkey); SAME(reth_len); SAME(aeth_syndrome); SAME(aeth_msn);
	SAME(atm_va); SAME(atm_rkey); SAME(atm_swap_add); SAME(atm_compare);
	SAME(atmack_orig); SAME(deth_qkey); SAME(deth_src_qp); SAME(imm);
	SAME(ieth_rkey); SAME(l3_off); SAME(l4_off); SAME(bth_off);
	SAME(payload_off); SAME(payload_len); SAME(frame_len);
}

static void
test_roundtrip(void)
{
	static uint8_t buf[ROCE_MAX_HDR_LEN + 8192];
	struct roce_pkt p, q;
	char what[96];
	int n = 0;

	for (size_t i = 0; i < N_SUPPORTED; i++)
		for (int v = 0; v < 4; v++)
			for (int rep = 0; rep < 8; rep++) {
				uint8_t op = supported[i];
				uint32_t len, hl;
				int rc;

				len = make_frame(buf, &p, op, v & 1, v & 2,
						 rep < 4 ? 64 : 4096);
				snprintf(what, sizeof(what), "%s %s%s len %u",
					 roce_opcode_info(op)->name,
					 v & 1 ? "IPv6" : "IPv4",
					 v & 2 ? "+VLAN" : "", len);
				hl = p.payload_off;
				CHECK(hl == (uint32_t)(v & 2 ? 18 : 14) +
				      (v & 1 ? 40 : 20) + 8 +
				      roce_opcode_info(op)->hdr_len,
				      "%s: header length %u", what, hl);
				CHECK(p.udp_dport == ROCE_UDP_DPORT,
				      "%s: dport default", what);
				rc = roce_parse(buf, len, len, &q);
				CHECK(rc == ROCE_OK, "%s: parse %d", what, rc);
				if (rc != ROCE_OK)
					continue;
				same_pkt(what, &p, &q);
				CHECK(q.icrc == roce_icrc_load(buf + len - 4),
				      "%s: icrc field", what);
				CHECK(q.icrc == ref_icrc(buf, p.l3_off, len,
							 p.ipv6),
				      "%s: ICRC %08x, reference %08x", what,
				      q.icrc, ref_icrc(buf, p.l3_off, len,
						       p.ipv6));
				n++;
			}
	printf("roundtrip: %d frames built, parsed, ICRC-checked\n", n);
}

/* ---- specific rejections ---- */
static uint32_t
base_frame(uint8_t *buf, struct roce_pkt *p, uint8_t op, bool ipv6,
	   uint32_t payload)
{
	uint32_t hl;

	memset(p, 0, sizeof(*p));
	p->ipv6 = ipv6;
	p->ttl = 64;
	p->frag_off = 0x4000;
	p->src_ip[0] = 10;
	p->dst_ip[0] = 10;
	p->udp_sport = 0xc000;
	p->opcode = op;
	p->pkey = ROCE_DEFAULT_PKEY;
	p->dest_qp = 0x11;
	p->payload_len = payload;
	p->pad = (uint8_t)(-payload & 3);
	hl = roce_build_hdrs(buf, p);
	memset(buf + hl, 0x5a, payload);
	memset(buf + hl + payload, 0, p->pad);
	roce_icrc_store(buf + p->frame_len - 4, roce_icrc_frame(buf, p));
	return p->frame_len;
}

static void
refix_ipv4(uint8_t *ip)
{
	uint16_t c = roce_ipv4_cksum(ip, 20);

	ip[10] = (uint8_t)(c >> 8);
	ip[11] = (uint8_t)c;
}

static void
test_rejects(void)
{
	static uint8_t b[2048], c[2048];
	struct roce_pkt p, q;
	uint32_t len, ip, udp, bth;
	const uint8_t send_only = 0x04, ack = 0x11;
	/* RFC 1071-style example header (checksum 0xb861). */
	static const uint8_t hdr[20] = {
		0x45, 0x00, 0x00, 0x73, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
		0xb8, 0x61, 0xc0, 0xa8, 0x00, 0x01, 0xc0, 0xa8, 0x00, 0xc7
	};

#define RESET() memcpy(b, c, len)
#define EXPECT(l, want, why) do { \
	int rc_ = roce_parse(b, (l), (l), &q); \
	CHECK(rc_ == (want), "%s: got %d want %d", why, rc_, want); \
} while (0)

	CHECK(roce_ipv4_cksum(hdr, 20) == 0xb861, "cksum %04x",
	      roce_ipv4_cksum(hdr, 20));

	len = base_frame(c, &p, send_only, false, 64);
	ip = p.l3_off;
	udp = p.l4_off;
	bth = p.bth_off;
	RESET();
	EXPECT(len, ROCE_OK, "base");
	EXPECT(0, ROCE_ERR_TRUNCATED, "empty");
	CHECK(roce_parse(NULL, 0, 0, &q) == ROCE_ERR_TRUNCATED, "NULL/0");

	b[12] = 0x08; b[13] = 0x06;
	EXPECT(len, ROCE_ERR_NOT_ROCE, "ARP ethertype");
	RESET(); b[12] = 0x88; b[13] = 0xa8;
	EXPECT(len, ROCE_ERR_NOT_ROCE, "QinQ ethertype");
	RESET(); b[ip + 9] = 6; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_NOT_ROCE, "TCP");
	RESET(); b[ip + 9] = 1; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_NOT_ROCE, "ICMP");
	RESET(); b[udp + 3] = 0xb6;	/* dport 4790 */
	EXPECT(len, ROCE_ERR_NOT_ROCE, "other UDP port");
	RESET(); b[ip] = 0x65; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_BAD_IP, "version 6 in an IPv4 ethertype");
	RESET(); b[ip] = 0x44; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_BAD_IP, "IHL 4");
	RESET(); b[ip] = 0x46; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_NOT_ROCE, "IHL 6, so the UDP port is elsewhere");
	/* A real options header (4 NOPs): rejected, options unsupported. */
	memcpy(b, c, ip + 20);
	memset(b + ip + 20, 1, 4);
	memcpy(b + ip + 24, c + ip + 20, len - ip - 20);
	b[ip] = 0x46;
	b[ip + 3] += 4;
	b[ip + 10] = (uint8_t)(roce_ipv4_cksum(b + ip, 24) >> 8);
	b[ip + 11] = (uint8_t)roce_ipv4_cksum(b + ip, 24);
	EXPECT(len + 4, ROCE_ERR_BAD_IP, "IPv4 options");
	RESET(); b[ip + 11] ^= 1;
	EXPECT(len, ROCE_ERR_BAD_IP, "IPv4 checksum");
	/* A header whose sum without the checksum is all ones: its checksum
	 * is 0x0000, and 0xffff (the other zero, from an incremental update,
	 * RFC 1624) is as good: a receiver sums the whole header (RFC 1071),
	 * as Linux does. The ID makes the sum so. */
	{
		struct roce_pkt o;
		uint16_t k;

		RESET();
		b[ip + 4] = 0;
		b[ip + 5] = 0;
		b[ip + 10] = 0;
		b[ip + 11] = 0;
		k = roce_ipv4_cksum(b + ip, 20);
		b[ip + 4] = (uint8_t)(k >> 8);
		b[ip + 5] = (uint8_t)k;
		CHECK(roce_ipv4_cksum(b + ip, 20) == 0, "the sum is all ones: %04x",
		      roce_ipv4_cksum(b + ip, 20));
		EXPECT(len, ROCE_OK, "IPv4 checksum 0x0000 over a sum of all ones");
		CHECK(roce_parse_only4(b, len, len, &o), "only4, checksum 0x0000");
		b[ip + 10] = 0xff;
		b[ip + 11] = 0xff;
		EXPECT(len, ROCE_OK, "IPv4 checksum 0xffff over a sum of all ones");
		CHECK(roce_parse_only4(b, len, len, &o), "only4, checksum 0xffff");
		b[ip + 11] = 0xfe;
		EXPECT(len, ROCE_ERR_BAD_IP, "IPv4 checksum 0xfffe there");
		CHECK(!roce_parse_only4(b, len, len, &o), "only4, checksum 0xfffe");
	}
	RESET(); b[ip + 6] = 0x20; b[ip + 7] = 0; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_BAD_IP, "MF");
	RESET(); b[ip + 6] = 0x40; b[ip + 7] = 8; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_BAD_IP, "fragment offset");
	RESET(); b[ip + 6] = 0x80; b[ip + 7] = 0; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_BAD_IP, "reserved flag");
	RESET(); b[ip + 3] += 4; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_TRUNCATED, "IP total length > frame");
	RESET(); b[ip + 3] -= 4; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_BAD_IP, "IP total length < frame");
	RESET(); b[ip + 2] = 0; b[ip + 3] = 20; refix_ipv4(b + ip);
	EXPECT(len, ROCE_ERR_BAD_IP, "IP total length without UDP");
	RESET(); b[udp + 5] += 4;
	EXPECT(len, ROCE_ERR_BAD_UDP, "UDP length > IP");
	RESET(); b[udp + 5] -= 4;
	EXPECT(len, ROCE_ERR_BAD_UDP, "UDP length < IP");
	RESET(); b[bth] = 0x15;
	EXPECT(len, ROCE_ERR_BAD_OPCODE, "reserved RC opcode 0x15");
	RESET(); b[bth] = 0x40;
	EXPECT(len, ROCE_ERR_BAD_OPCODE, "RD opcode");
	RESET(); b[bth] = 0xa0;
	EXPECT(len, ROCE_ERR_BAD_OPCODE, "XRC opcode");
	RESET(); b[bth + 1] |= 1;
	EXPECT(len, ROCE_ERR_BAD_TVER, "TVer 1");
	RESET(); b[bth] = ack;		/* ACK needs no payload */
	EXPECT(len, ROCE_ERR_BAD_LENGTH, "ACK with payload");
	RESET(); b[bth] = 0x00;		/* SEND_FIRST with pad */
	b[bth + 1] |= 0x10;
	EXPECT(len, ROCE_ERR_BAD_LENGTH, "pad on a FIRST packet");

	/* Odd payload: pad 1 fine, pad 0 means a non-multiple of 4. */
	len = base_frame(c, &p, send_only, false, 63);
	RESET();
	EXPECT(len, ROCE_OK, "63 bytes + pad 1");
	CHECK(q.payload_len == 63 && q.pad == 1, "pad parse");
	/* 63 bytes without pad: not a whole number of words. */
	p.pad = 0;
	p.payload_len = 63;
	len = roce_build_hdrs(b, &p) + 63 + ROCE_ICRC_LEN;
	EXPECT(len, ROCE_ERR_BAD_LENGTH, "payload not a multiple of 4");

	/* Pad larger than the payload. */
	len = base_frame(c, &p, send_only, false, 0);
	RESET(); b[bth + 1] |= 0x30;
	EXPECT(len, ROCE_ERR_BAD_LENGTH, "pad 3 with no payload");

	/* UDP too short for BTH+ICRC, and for the opcode's headers. */
	len = base_frame(c, &p, ack, false, 0);
	RESET();
	EXPECT(len, ROCE_OK, "ACK");
	b[bth] = 0x13;			/* CMP_SWAP: 28 more header bytes */
	EXPECT(len, ROCE_ERR_BAD_LENGTH, "headers longer than UDP");

	/* Ethernet minimum-frame padding: 58-byte frame padded to 60. */
	len = base_frame(c, &p, send_only, false, 0);
	CHECK(len == 58, "empty SEND ONLY is %u bytes", len);
	RESET(); b[58] = b[59] = 0;
	EXPECT(60, ROCE_OK, "Ethernet padding to 60");
	CHECK(q.frame_len == 58, "frame_len %u with padding", q.frame_len);
	b[60] = 0;
	EXPECT(61, ROCE_ERR_BAD_IP, "61 bytes: not padding");

	/* One VLAN tag OK, two not. */
	memset(&p, 0, sizeof(p));
	p.has_vlan = true;
	p.vlan_tci = 0x2005;
	p.opcode = ack;
	p.ttl = 1;
	len = p.frame_len = 0;
	len = roce_build_hdrs(c, &p) + ROCE_ICRC_LEN;
	roce_icrc_store(c + len - 4, roce_icrc_frame(c, &p));
	RESET();
	EXPECT(len, ROCE_OK, "VLAN");
	CHECK(q.has_vlan && q.vlan_tci == 0x2005 && q.l3_off == 18, "tag");
	b[16] = 0x81; b[17] = 0x00;
	EXPECT(len, ROCE_ERR_NOT_ROCE, "two VLAN tags");

	/* IPv6 */
	len = base_frame(c, &p, send_only, true, 64);
	ip = p.l3_off;
	udp = p.l4_off;
	RESET();
	EXPECT(len, ROCE_OK, "IPv6");
	b[ip] = 0x45;
	EXPECT(len, ROCE_ERR_BAD_IP, "IPv6 version");
	RESET(); b[ip + 6] = 0;	/* hop-by-hop options header */
	EXPECT(len, ROCE_ERR_NOT_ROCE, "IPv6 extension header");
	RESET(); b[ip + 5] += 4;
	EXPECT(len, ROCE_ERR_TRUNCATED, "IPv6 payload length > frame");
	RESET(); b[ip + 5] -= 4;
	EXPECT(len, ROCE_ERR_BAD_IP, "IPv6 payload length < frame");
	RESET(); b[ip + 4] = b[ip + 5] = 0;
	b[udp + 4] = b[udp + 5] = 0;
	EXPECT(len, ROCE_ERR_BAD_IP, "IPv6 jumbogram");

	/* Headers contiguous, payload not: OK, ICRC left 0. */
	len = base_frame(c, &p, send_only, false, 64);
	RESET();
	CHECK(roce_parse(b, p.payload_off, len, &q) == ROCE_OK && q.icrc == 0,
	      "split frame");
	CHECK(roce_parse(b, len + 100, len, &q) == ROCE_OK &&
	      q.icrc == roce_icrc_load(b + len - 4), "contig > len");
#undef RESET
#undef EXPECT
}

/* ---- mutations ---- */
static void
check_invariants(const char *what, const struct roce_pkt *q, uint32_t len)
{
	const struct roce_opcode_info *oi = roce_opcode_info(q->opcode);

	CHECK(oi->name != NULL, "%s: accepted reserved opcode", what);
	CHECK(q->frame_len <= len && q->l3_off < q->l4_off &&
	      q->l4_off < q->bth_off && q->bth_off < q->payload_off &&
	      q->payload_off == q->bth_off + oi->hdr_len &&
	      (uint64_t)q->payload_off + q->payload_len + q->pad +
	      ROCE_ICRC_LEN == q->frame_len && q->pad <= 3,
	      "%s: inconsistent layout", what);
}

static void
test_mutations(void)
{
	static uint8_t orig[ROCE_MAX_HDR_LEN + 256];
	struct roce_pkt p, q;
	uint64_t parses = 0, ok = 0, bits = 0;
	char what[96];

	for (size_t i = 0; i < N_SUPPORTED; i++)
		for (int v = 0; v < 4; v++) {
			uint8_t op = supported[i];
			uint32_t len = make_frame(orig, &p, op, v & 1, v & 2, 48);
			uint32_t want = roce_icrc_load(orig + len - 4);
			uint8_t *m;

			snprintf(what, sizeof(what), "%s %s%s",
				 roce_opcode_info(op)->name,
				 v & 1 ? "IPv6" : "IPv4", v & 2 ? "+VLAN" : "");

			/* Truncated frames, in exactly-sized heap buffers
			 * so that ASan sees any overrun. */
			for (uint32_t l = 0; l < len; l++) {
				int rc;

				m = malloc(l ? l : 1);
				memcpy(m, orig, l);
				rc = roce_parse(m, l, l, &q);
				CHECK(rc != ROCE_OK, "%s cut at %u: OK", what, l);
				free(m);
				/* Same, with only `contig` bytes valid. */
				rc = roce_parse(orig, l, len, &q);
				if (l < p.payload_off)
					CHECK(rc == ROCE_ERR_TRUNCATED,
					      "%s contig %u: %d", what, l, rc);
				else
					CHECK(rc == ROCE_OK && q.icrc == 0,
					      "%s contig %u: %d", what, l, rc);
				parses += 2;
			}

			/* Every value of every header byte (+ IPv4 checksum
			 * repaired, to get past it). */
			m = malloc(len);
			for (uint32_t at = 0; at < p.payload_off; at++)
				for (int x = 1; x < 256; x++)
					for (int fix = 0; fix < 2; fix++) {
						bool v4 = !p.ipv6 &&
							at >= p.l3_off &&
							at < p.l3_off + 20u;

						if (fix && !v4)
							continue;
						memcpy(m, orig, len);
						m[at] ^= (uint8_t)x;
						if (fix)
							refix_ipv4(m + p.l3_off);
						parses++;
						if (roce_parse(m, len, len, &q) !=
						    ROCE_OK)
							continue;
						ok++;
						check_invariants(what, &q, len);
					}
			free(m);

			/* Every single-bit flip vs the ICRC check. */
			m = malloc(len);
			for (uint32_t at = 0; at < len; at++)
				for (int bit = 0; bit < 8; bit++) {
					bool match;

					memcpy(m, orig, len);
					m[at] ^= (uint8_t)(1u << bit);
					match = roce_icrc_frame(m, &p) ==
						roce_icrc_load(m + len - 4);
					bits++;
					if (icrc_ignores(&p, at,
							 (uint8_t)(1u << bit)))
						CHECK(match, "%s: bit %u.%d is "
						      "not covered, yet ICRC "
						      "changed", what, at, bit);
					else
						CHECK(!match, "%s: bit %u.%d "
						      "flipped, ICRC still "
						      "matches", what, at, bit);
				}
			free(m);
			CHECK(roce_icrc_frame(orig, &p) == want, "%s", what);
		}
	/* Several random bytes at once (lengths, opcode, pad together), at a
	 * random cut, again in exactly-sized heap buffers. */
	for (int i = 0; i < 200000; i++) {
		uint8_t op = supported[rnd_below(N_SUPPORTED)];
		uint32_t len = make_frame(orig, &p, op, rnd() & 1, rnd() & 1,
					  48);
		uint32_t cut = rnd_below(4) ? len : rnd_below(len + 1);
		uint32_t nmut = 1 + rnd_below(4);
		uint8_t *m = malloc(cut ? cut : 1);

		memcpy(m, orig, cut);
		for (uint32_t k = 0; k < nmut && cut > 0; k++) {
			/* Mostly the headers, where the lengths are. */
			uint32_t at = rnd_below(rnd() & 1 ? p.payload_off : cut);

			if (at < cut)
				m[at] = (uint8_t)rnd();
		}
		if (!p.ipv6 && cut >= p.l3_off + 20u && rnd() & 1)
			refix_ipv4(m + p.l3_off);
		parses++;
		if (roce_parse(m, cut, cut, &q) == ROCE_OK) {
			ok++;
			check_invariants("random mutation", &q, cut);
		}
		free(m);
	}
	printf("mutations: %" PRIu64 " parses (%" PRIu64 " mutated frames "
	       "still valid), %" PRIu64 " single-bit ICRC checks\n",
	       parses, ok, bits);
}

/* ---- the IPv4 checksum and the header cache ---- */

/* Reference: the RFC 1071 loop over big-endian 16-bit words. */
static uint16_t
ref_ipv4_cksum(const uint8_t *h, uint32_t len)
{
	uint32_t sum = 0;

	for (uint32_t i = 0; i + 1 < len; i += 2)
		if (i != 10)
			sum += (uint32_t)h[i] << 8 | h[i + 1];
	if (len & 1)
		sum += (uint32_t)h[len - 1] << 8;
	while (sum >> 16)
		sum = (sum & 0xffff) + (sum >> 16);
	return (uint16_t)~sum;
}

static int
first_diff(const uint8_t *a, const uint8_t *b, uint32_t n)
{
	for (uint32_t i = 0; i < n; i++)
		if (a[i] != b[i])
			return (int)i;
	return -1;
}

/*
 * roce_build_hdrs_cached() must give exactly roce_build_hdrs()'s bytes and
 * layout: for a run of frames of one "connection" (opcodes, lengths, PSNs,
 * IP IDs changing; cache hits), and when an L2..L4 field changes (misses).
 */
static void
test_hdr_cache(void)
{
	static uint8_t fa[ROCE_MAX_HDR_LEN + 64], fb[ROCE_MAX_HDR_LEN + 64];
	unsigned int hits = 0, runs = 300;

	for (uint32_t n = 0; n < 20000; n++) {
		uint8_t h[60];
		uint32_t len = 1 + rnd_below(60);

		rnd_fill(h, sizeof(h));
		CHECK(roce_ipv4_cksum(h, len) == ref_ipv4_cksum(h, len),
		      "ipv4 cksum len %u: %04x != %04x", len,
		      roce_ipv4_cksum(h, len), ref_ipv4_cksum(h, len));
	}
	for (unsigned int r = 0; r < runs; r++) {
		struct roce_hdr_cache cache;
		struct roce_pkt base, a, b;

		memset(&cache, 0, sizeof(cache));
		make_frame(fa, &base, supported[rnd_below(N_SUPPORTED)],
			   rnd() & 1, rnd() & 1, 64);
		for (unsigned int k = 0; k < 40; k++) {
			uint8_t op = supported[rnd_below(N_SUPPORTED)];
			uint32_t f = roce_opcode_info(op)->flags, ha, hb;
			bool was_valid = cache.valid;
			struct roce_hdr_cache before = cache;

			if (rnd_below(8) == 0) {
				/* A field the cache keys on changes. */
				switch (rnd_below(4)) {
				case 0: base.dst_mac[rnd_below(6)]++; break;
				case 1: base.tos++; break;
				case 2: base.udp_sport++; break;
				default: base.dst_ip[rnd_below(base.ipv6 ? 16 : 4)]++;
				}
			}
			base.opcode = op;
			base.ip_id = (uint16_t)rnd();
			base.psn = (uint32_t)rnd() & ROCE_PSN_MASK;
			base.ack_req = rnd() & 1;
			base.payload_len = (f & ROCE_OPF_PAYLOAD) ? rnd_below(5000) : 0;
			base.pad = (uint8_t)(-base.payload_len & 3);
			a = base;
			b = base;
			ha = roce_build_hdrs(fa, &a);
			hb = roce_build_hdrs_cached(fb, &b, &cache);
			CHECK(ha == hb, "hdr cache: length %u != %u", hb, ha);
			CHECK(memcmp(fa, fb, ha) == 0,
			      "hdr cache: bytes differ (op 0x%02x, ipv6 %d, vlan %d, "
			      "first at %d)", op, base.ipv6, base.has_vlan,
			      first_diff(fa, fb, ha));
			CHECK(a.l3_off == b.l3_off && a.l4_off == b.l4_off &&
			      a.bth_off == b.bth_off &&
			      a.payload_off == b.payload_off &&
			      a.frame_len == b.frame_len &&
			      a.udp_dport == b.udp_dport,
			      "hdr cache: layout differs (op 0x%02x)", op);
			if (!base.ipv6)
				CHECK(ref_ipv4_cksum(fb + b.l3_off, 20) ==
				      (uint16_t)(fb[b.l3_off + 10] << 8 |
						 fb[b.l3_off + 11]),
				      "hdr cache: IPv4 checksum wrong");
			if (was_valid && memcmp(before.hdr, cache.hdr,
						sizeof(cache.hdr)) == 0)
				hits++;
		}
	}
	CHECK(hits > runs * 20, "hdr cache: only %u hits", hits);
	if (!failures)
		printf("ipv4 cksum == reference; hdr cache == roce_build_hdrs on "
		       "%u frames (%u hits)\n", runs * 40, hits);
}

/*
 * roce_image_build() must write roce_build_hdrs()'s bytes, Ethernet through
 * BTH, and give its frame length, for any connection (IPv4/IPv6, VLAN or
 * not, any L2..L4 field values) and any per-frame opcode, BTH flags, PSN,
 * IP ID and lengths; the extended headers after the BTH are the caller's.
 */
static void
test_hdr_image(void)
{
	static uint8_t fa[ROCE_MAX_HDR_LEN + 64], fb[ROCE_MAX_HDR_LEN + 64];
	unsigned int frames = 0;

	for (unsigned int r = 0; r < 300; r++) {
		struct roce_hdr_image img;
		struct roce_pkt base, a;

		make_frame(fa, &base, supported[rnd_below(N_SUPPORTED)],
			   rnd() & 1, rnd() & 1, 64);
		base.fecn = base.becn = false;	/* never set by a sender */
		base.udp_dport = ROCE_UDP_DPORT;
		roce_image_init(&img, &base);
		for (unsigned int k = 0; k < 40; k++, frames++) {
			uint8_t op = supported[rnd_below(N_SUPPORTED)];
			const struct roce_opcode_info *oi = roce_opcode_info(op);
			uint32_t ha, len;
			uint8_t bth1;

			a = base;
			a.opcode = op;
			a.se = rnd() & 1;
			a.mig = rnd() & 1;
			a.ack_req = rnd() & 1;
			a.psn = (uint32_t)rnd() & ROCE_PSN_MASK;
			a.ip_id = a.ipv6 ? 0 : (uint16_t)rnd();
			a.payload_len = (oi->flags & ROCE_OPF_PAYLOAD) ?
					rnd_below(5000) : 0;
			a.pad = (uint8_t)(-a.payload_len & 3);
			ha = roce_build_hdrs(fa, &a);
			memset(fb, 0xa5, sizeof(fb));
			bth1 = (uint8_t)((a.se ? ROCE_BTH_SE : 0) |
					 (a.mig ? ROCE_BTH_MIG : 0) |
					 a.pad << ROCE_BTH_PAD_SHIFT);
			len = roce_image_build(fb, &img, op, bth1,
					       (a.ack_req ? ROCE_BTH_ACKREQ : 0) |
					       a.psn, oi->hdr_len - ROCE_BTH_LEN,
					       a.payload_len + a.pad, a.ip_id);
			CHECK(len == a.frame_len,
			      "hdr image: frame length %u != %u (op 0x%02x)", len,
			      a.frame_len, op);
			CHECK((uint32_t)a.bth_off + ROCE_BTH_LEN <= ha &&
			      memcmp(fa, fb, a.bth_off + ROCE_BTH_LEN) == 0,
			      "hdr image: bytes differ (op 0x%02x, ipv6 %d, vlan %d, "
			      "first at %d)", op, a.ipv6, a.has_vlan,
			      first_diff(fa, fb, a.bth_off + ROCE_BTH_LEN));
			if (!a.ipv6)
				CHECK(ref_ipv4_cksum(fb + a.l3_off, 20) ==
				      (uint16_t)(fb[a.l3_off + 10] << 8 |
						 fb[a.l3_off + 11]),
				      "hdr image: IPv4 checksum wrong");
		}
	}
	if (!failures)
		printf("hdr image == roce_build_hdrs on %u frames\n", frames);
}

/*
 * roce_ack_build: the bytes of roce_build_hdrs' ACK for the same fields, and
 * an ICRC equal to the bit-by-bit reference (the ID's share and the last 8
 * bytes come by linearity): IPv4 and IPv6, VLAN or not; the first IPv4
 * template takes every one of the 65536 IDs.
 */
/* roce_copy_small against memcpy for every length it takes (and a few it
 * hands to memcpy), at every source and destination offset within 16:
 * the bytes copied, none written before or after. */
static void
test_copy_small(void)
{
	uint8_t src[128], dst[128], want[128];

	for (uint32_t n = 0; n <= 80; n++)
		for (uint32_t so = 0; so < 16; so++)
			for (uint32_t doff = 0; doff < 16; doff += 3) {
				rnd_fill(src, sizeof(src));
				memset(dst, 0xa5, sizeof(dst));
				memset(want, 0xa5, sizeof(want));
				memcpy(want + 16 + doff, src + so, n);
				roce_copy_small(dst + 16 + doff, src + so, n);
				CHECK(memcmp(dst, want, sizeof(dst)) == 0,
				      "n %u src +%u dst +%u", n, so, doff);
			}
}

static void
test_ack_image(void)
{
	static uint8_t fa[ROCE_MAX_HDR_LEN + 64], fb[ROCE_MAX_HDR_LEN + 64];
	unsigned int frames = 0;
	bool all_ids = false;

	for (unsigned int r = 0; r < 300; r++) {
		struct roce_hdr_image img;
		struct roce_ack_image ai;
		struct roce_pkt base, a;
		unsigned int nk = 60;

		make_frame(fa, &base, supported[rnd_below(N_SUPPORTED)],
			   rnd() & 1, rnd() & 1, 64);
		base.fecn = base.becn = false;
		base.udp_dport = ROCE_UDP_DPORT;
		roce_image_init(&img, &base);
		roce_ack_image_init(&ai, &img);
		if (!base.ipv6 && !all_ids) {	/* (IPv4: a.ipv6 == base.ipv6) */
			all_ids = true;
			nk = 65536;
		}
		for (unsigned int k = 0; k < nk; k++, frames++) {
			uint32_t len, want;

			a = base;
			a.opcode = ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_ACK);
			a.se = a.mig = a.ack_req = false;
			a.psn = (uint32_t)rnd() & ROCE_PSN_MASK;
			a.ip_id = a.ipv6 ? 0 : nk == 65536 ? (uint16_t)k :
				  (uint16_t)rnd();
			a.aeth_syndrome = (uint8_t)rnd();
			a.aeth_msn = (uint32_t)rnd() & 0xffffff;
			a.payload_len = 0;
			a.pad = 0;
			roce_build_hdrs(fa, &a);
			want = ref_icrc(fa, a.l3_off, a.frame_len, a.ipv6);
			roce_icrc_store(fa + a.frame_len - ROCE_ICRC_LEN, want);
			memset(fb, 0xa5, sizeof(fb));
			len = roce_ack_build(fb, &ai, a.psn, a.aeth_syndrome,
					     a.aeth_msn, a.ip_id);
			CHECK(len == a.frame_len,
			      "ack image: frame length %u != %u", len,
			      a.frame_len);
			CHECK(memcmp(fa, fb, a.frame_len) == 0,
			      "ack image: bytes differ (ipv6 %d, vlan %d, id 0x%04x, "
			      "first at %d)", a.ipv6, a.has_vlan, a.ip_id,
			      first_diff(fa, fb, a.frame_len));
		}
	}
	if (!failures)
		printf("ack image == roce_build_hdrs + reference ICRC on %u frames\n",
		       frames);
}

int
main(void)
{
	const char *s = getenv("ROCE_TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);

	setvbuf(stdout, NULL, _IOLBF, 0);
	rng_state = seed ? seed : 1;
	printf("seed %" PRIu64 " (set ROCE_TEST_SEED to repeat), crc32 %s\n",
	       seed, roce_crc32_impl());
	test_crc32();
	test_psn();
	test_opcodes();
	test_roundtrip();
	test_icrc_clmul();
	test_icrc_store_n();
	test_crc32_copy();
	test_upper_clean();
	test_crc32_combine();
	test_rejects();
	test_mutations();
	test_hdr_cache();
	test_hdr_image();
	test_ack_image();
	test_copy_small();
	if (failures) {
		printf("FAILED: %d checks (seed %" PRIu64 ")\n", failures, seed);
		return 1;
	}
	printf("PASSED\n");
	return 0;
}
