/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * lib/roce: the RoCEv2 wire format and nothing else (IBTA Vol.1 ch.9 and
 * Annex A17). No DPDK state lives here, so it can be unit-tested and fuzzed
 * on its own. All multi-byte fields in the wire structs are big-endian.
 */
#ifndef ROCE_H
#define ROCE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#define ROCE_UDP_DPORT		4791
#define ROCE_ETH_HLEN		14
#define ROCE_VLAN_HLEN		4
#define ROCE_IPV4_HLEN		20	/* droce never sends IP options */
#define ROCE_IPV6_HLEN		40
#define ROCE_UDP_HLEN		8
#define ROCE_BTH_LEN		12
#define ROCE_RETH_LEN		16
#define ROCE_AETH_LEN		4
#define ROCE_ATMETH_LEN		28
#define ROCE_ATMACK_LEN		8
#define ROCE_DETH_LEN		8
#define ROCE_IMMDT_LEN		4
#define ROCE_IETH_LEN		4
#define ROCE_ICRC_LEN		4
#define ROCE_PSN_MASK		0xffffffu
#define ROCE_QPN_MASK		0xffffffu
#define ROCE_DEFAULT_PKEY	0xffff
#define ROCE_PKEY_FULL		0x8000	/* membership bit: full member */

/* BTH: opcode, SE|M|PadCnt(2)|TVer(4), P_Key, FECN|BECN|resv6, DestQP(24),
 * A|resv7, PSN(24). */
struct roce_bth {
	uint8_t opcode;
	uint8_t flags;
	uint16_t pkey;
	uint32_t qpn;		/* byte 0: FECN(7) BECN(6) resv; bytes 1-3: QPN */
	uint32_t apsn;		/* bit 31: AckReq; bits 23-0: PSN */
} __attribute__((packed));

#define ROCE_BTH_SE		0x80
#define ROCE_BTH_MIG		0x40
#define ROCE_BTH_PAD_SHIFT	4
#define ROCE_BTH_PAD_MASK	0x30
#define ROCE_BTH_TVER_MASK	0x0f
#define ROCE_BTH_FECN		0x80000000u
#define ROCE_BTH_BECN		0x40000000u
#define ROCE_BTH_ACKREQ		0x80000000u

struct roce_reth {
	uint64_t va;
	uint32_t rkey;
	uint32_t dma_len;
} __attribute__((packed));

struct roce_aeth {
	uint32_t syn_msn;	/* syndrome(8) | MSN(24) */
} __attribute__((packed));

struct roce_atmeth {
	uint64_t va;
	uint32_t rkey;
	uint64_t swap_add;
	uint64_t compare;
} __attribute__((packed));

struct roce_atmack {
	uint64_t orig;
} __attribute__((packed));

struct roce_deth {
	uint32_t qkey;
	uint32_t src_qp;	/* resv(8) | SrcQP(24) */
} __attribute__((packed));

/* AETH syndrome (IBTA 9.7.5.1.4 table 44): bits 7..5 select the class. */
#define ROCE_AETH_ACK		0x00	/* | credit count (5 bits) */
#define ROCE_AETH_RNR_NAK	0x20	/* | RNR timer code (5 bits) */
#define ROCE_AETH_NAK		0x60	/* | NAK code */
#define ROCE_AETH_CLASS_MASK	0x60
#define ROCE_AETH_CREDIT_INVALID 0x1f
#define ROCE_NAK_PSN_SEQ_ERR	0
#define ROCE_NAK_INVALID_REQ	1
#define ROCE_NAK_REMOTE_ACCESS	2
#define ROCE_NAK_REMOTE_OP	3
#define ROCE_NAK_INVALID_RD_REQ	4

/* Opcodes (IBTA table 38). The top three bits are the transport. */
enum roce_transport {
	ROCE_TRANSPORT_RC = 0x00,
	ROCE_TRANSPORT_UC = 0x20,
	ROCE_TRANSPORT_RD = 0x40,
	ROCE_TRANSPORT_UD = 0x60,
	ROCE_TRANSPORT_CNP = 0x80,
	ROCE_TRANSPORT_XRC = 0xa0,
};

enum roce_op {	/* low five bits */
	ROCE_OP_SEND_FIRST = 0x00,
	ROCE_OP_SEND_MIDDLE = 0x01,
	ROCE_OP_SEND_LAST = 0x02,
	ROCE_OP_SEND_LAST_IMM = 0x03,
	ROCE_OP_SEND_ONLY = 0x04,
	ROCE_OP_SEND_ONLY_IMM = 0x05,
	ROCE_OP_WRITE_FIRST = 0x06,
	ROCE_OP_WRITE_MIDDLE = 0x07,
	ROCE_OP_WRITE_LAST = 0x08,
	ROCE_OP_WRITE_LAST_IMM = 0x09,
	ROCE_OP_WRITE_ONLY = 0x0a,
	ROCE_OP_WRITE_ONLY_IMM = 0x0b,
	ROCE_OP_READ_REQ = 0x0c,
	ROCE_OP_READ_RESP_FIRST = 0x0d,
	ROCE_OP_READ_RESP_MIDDLE = 0x0e,
	ROCE_OP_READ_RESP_LAST = 0x0f,
	ROCE_OP_READ_RESP_ONLY = 0x10,
	ROCE_OP_ACK = 0x11,
	ROCE_OP_ATOMIC_ACK = 0x12,
	ROCE_OP_CMP_SWAP = 0x13,
	ROCE_OP_FETCH_ADD = 0x14,
	ROCE_OP_SEND_LAST_INV = 0x16,
	ROCE_OP_SEND_ONLY_INV = 0x17,
};

#define ROCE_OPCODE(transport, op)	((uint8_t)((transport) | (op)))
#define ROCE_OPCODE_CNP			0x81

/* What each opcode carries and means: one table drives build and parse. */
enum roce_opf {
	ROCE_OPF_RETH = 1u << 0,
	ROCE_OPF_AETH = 1u << 1,
	ROCE_OPF_ATMETH = 1u << 2,
	ROCE_OPF_ATMACK = 1u << 3,
	ROCE_OPF_DETH = 1u << 4,
	ROCE_OPF_IMMDT = 1u << 5,
	ROCE_OPF_IETH = 1u << 6,
	ROCE_OPF_PAYLOAD = 1u << 7,
	ROCE_OPF_REQ = 1u << 8,		/* requester -> responder */
	ROCE_OPF_RESP = 1u << 9,	/* responder -> requester */
	ROCE_OPF_FIRST = 1u << 10,
	ROCE_OPF_MIDDLE = 1u << 11,
	ROCE_OPF_LAST = 1u << 12,	/* ONLY sets FIRST and LAST */
	ROCE_OPF_SEND = 1u << 13,
	ROCE_OPF_WRITE = 1u << 14,
	ROCE_OPF_READ = 1u << 15,
	ROCE_OPF_ATOMIC = 1u << 16,
	ROCE_OPF_ACK = 1u << 17,	/* ACK, ATOMIC ACK */
	ROCE_OPF_CNP = 1u << 18,
};

struct roce_opcode_info {
	const char *name;	/* NULL: opcode not supported/reserved */
	uint32_t flags;		/* ROCE_OPF_* */
	uint8_t hdr_len;	/* BTH + extended transport headers */
};

extern const struct roce_opcode_info roce_opcode_table[256];

static inline const struct roce_opcode_info *
roce_opcode_info(uint8_t opcode)
{
	return &roce_opcode_table[opcode];
}

/*
 * Every field of a RoCEv2 frame, in host order, as parsed or as to be built.
 * roce_build(roce_parse(frame)) gives back the same bytes for any frame that
 * droce or rxe emits (no IP options, UDP checksum 0).
 */
struct roce_pkt {
	/* L2 */
	uint8_t dst_mac[6];
	uint8_t src_mac[6];
	bool has_vlan;
	uint16_t vlan_tci;
	/* L3 */
	bool ipv6;
	uint8_t tos;		/* IPv4 TOS / IPv6 traffic class */
	uint8_t ttl;		/* IPv4 TTL / IPv6 hop limit */
	uint16_t ip_id;		/* IPv4 only */
	uint16_t frag_off;	/* IPv4 flags+fragment offset field (DF = 0x4000) */
	uint32_t flow_label;	/* IPv6 only */
	uint8_t src_ip[16];	/* IPv4: first 4 bytes */
	uint8_t dst_ip[16];
	/* L4 */
	uint16_t udp_sport;
	uint16_t udp_dport;	/* parse: always ROCE_UDP_DPORT; build: 0 means
				 * ROCE_UDP_DPORT (and is set so in `p`) */
	uint16_t udp_csum;	/* as found on the wire; built as given */
	/* BTH */
	uint8_t opcode;
	bool se;
	bool mig;
	uint8_t pad;		/* 0..3 */
	uint8_t tver;
	uint16_t pkey;
	bool fecn;
	bool becn;
	uint32_t dest_qp;
	bool ack_req;
	uint32_t psn;
	/* extended transport headers, valid per roce_opcode_table[opcode].flags */
	uint64_t reth_va;
	uint32_t reth_rkey;
	uint32_t reth_len;
	uint8_t aeth_syndrome;
	uint32_t aeth_msn;
	uint64_t atm_va;
	uint32_t atm_rkey;
	uint64_t atm_swap_add;
	uint64_t atm_compare;
	uint64_t atmack_orig;
	uint32_t deth_qkey;
	uint32_t deth_src_qp;
	uint32_t imm;		/* ImmDt in network order, as ibv_wc.imm_data */
	uint32_t ieth_rkey;
	/* layout, filled by parse and by build */
	uint16_t l3_off;	/* start of the IP header */
	uint16_t l4_off;
	uint16_t bth_off;
	uint16_t payload_off;
	uint32_t payload_len;	/* without pad and ICRC */
	uint32_t frame_len;	/* whole frame including ICRC */
	uint32_t icrc;		/* as found on the wire (parse) */
};

enum roce_parse_err {
	ROCE_OK = 0,
	ROCE_ERR_TRUNCATED = -1,	/* shorter than its headers say */
	ROCE_ERR_NOT_ROCE = -2,		/* not IPv4/IPv6 + UDP to 4791 */
	ROCE_ERR_BAD_IP = -3,		/* bad version, IHL, checksum, length or fragment */
	ROCE_ERR_BAD_UDP = -4,		/* UDP length inconsistent */
	ROCE_ERR_BAD_OPCODE = -5,	/* reserved/unsupported opcode */
	ROCE_ERR_BAD_TVER = -6,
	ROCE_ERR_BAD_LENGTH = -7,	/* pad/payload inconsistent with the opcode */
};

/*
 * Parse a whole frame starting at the Ethernet header. `len` is the frame
 * length. Only the first `contig` bytes need be contiguous at `frame`: all
 * headers must lie there (else ROCE_ERR_TRUNCATED); payload and ICRC may
 * extend beyond (then p->icrc is left 0 and the caller reads it). Validates
 * L2/L3/L4 consistency and the opcode table, not the ICRC. Returns ROCE_OK or
 * a negative roce_parse_err.
 * Bytes after the IP datagram are accepted only as Ethernet minimum-frame
 * padding (len <= 60, 64 with a VLAN tag): then p->frame_len < len, and the
 * ICRC is at frame + p->frame_len - 4, not at the end of the buffer. IPv4
 * options and fragments are rejected (ROCE_ERR_BAD_IP), IPv6 extension
 * headers and more than one VLAN tag are ROCE_ERR_NOT_ROCE.
 */
int roce_parse(const uint8_t *frame, uint32_t contig, uint32_t len,
	       struct roce_pkt *p);
/* The same without the fast path for common frames: the reference that
 * path is tested against (test_roce_parse_diff). */
int roce_parse_full(const uint8_t *frame, uint32_t contig, uint32_t len,
		    struct roce_pkt *p);
/*
 * The receive datapath's parse: accepts and rejects exactly what
 * roce_parse() does, with the same return codes, but fills only the fields
 * a receiver reads; every other field is 0 (or, when the frame missed the
 * fast path, what roce_parse() gives). ROCE_RX_FIELDS lists them; a field
 * read on receive must be added to the list (and is then compared by
 * test_roce_parse_diff). Saves ~60 instructions per frame (doc/performance.md,
 * eighth round): the fields left out are the L2/L3/L4 ones nobody checks
 * (destination MAC, TOS, TTL, ID, flags, flow label, UDP ports and
 * checksum), BTH bits droce ignores (MigReq, TVer once checked, FECN, BECN,
 * AckReq, pad once used) and the offsets of L4, BTH and the ICRC.
 */
#define ROCE_RX_FIELDS(X) \
	X(src_mac) X(has_vlan) X(vlan_tci) X(ipv6) X(src_ip) X(dst_ip) \
	X(opcode) X(se) X(pkey) X(dest_qp) X(psn) \
	X(reth_va) X(reth_rkey) X(reth_len) X(aeth_syndrome) X(aeth_msn) \
	X(atm_va) X(atm_rkey) X(atm_swap_add) X(atm_compare) X(atmack_orig) \
	X(deth_qkey) X(deth_src_qp) X(imm) X(ieth_rkey) \
	X(l3_off) X(payload_off) X(payload_len) X(frame_len)
int roce_parse_rx(const uint8_t *frame, uint32_t contig, uint32_t len,
		  struct roce_pkt *p);

/* An RC ACK in its usual shape: untagged Ethernet, IPv4 with a 20-byte
 * header, UDP, BTH, AETH, ICRC. */
#define ROCE_ACK4_LEN	(ROCE_ETH_HLEN + ROCE_IPV4_HLEN + ROCE_UDP_HLEN + \
			 ROCE_BTH_LEN + ROCE_AETH_LEN + ROCE_ICRC_LEN)
struct roce_ack4 {
	uint8_t src_ip[4];	/* as on the wire */
	uint8_t dst_ip[4];
	uint32_t dest_qp;
	uint32_t psn;
	uint32_t msn;
	uint16_t pkey;
	uint8_t syndrome;
	bool se;
};
/*
 * Is the frame an RC ACK of that shape (len and contig ROCE_ACK4_LEN or
 * more) that roce_parse_rx() accepts? Then true, and the fields an ACK's
 * receiver reads in *a. The same checks as roce_parse_rx() at fixed
 * offsets, for the small frame a requester receives most: false for
 * anything else, which roce_parse_rx() then takes. test_roce_parse_diff:
 * it accepts exactly the frames of that shape roce_parse_rx() accepts,
 * with the same fields.
 */
bool roce_parse_ack4(const uint8_t *frame, uint32_t contig, uint32_t len,
		     struct roce_ack4 *a);

/* A one-packet RC message in its usual shape: untagged Ethernet, IPv4
 * with a 20-byte header, UDP, BTH, the opcode's headers, then payload, pad
 * and ICRC. The opcodes: SEND ONLY and WRITE ONLY (with immediate or
 * not), READ request and READ response ONLY, the atomics and their
 * ATOMIC ACKNOWLEDGE (what the two ends of a SEND, WRITE, READ or atomic
 * stream receive most; ACKs: roce_parse_ack4). */
#define ROCE_ONLY4_BTH_END (ROCE_ETH_HLEN + ROCE_IPV4_HLEN + ROCE_UDP_HLEN + \
			    ROCE_BTH_LEN)
#define ROCE_ONLY4_OPCODE_OFF (ROCE_ETH_HLEN + ROCE_IPV4_HLEN + ROCE_UDP_HLEN)
#define ROCE_ONLY4_OPCODES (1u << ROCE_OP_SEND_ONLY | \
			    1u << ROCE_OP_SEND_ONLY_IMM | \
			    1u << ROCE_OP_WRITE_ONLY | \
			    1u << ROCE_OP_WRITE_ONLY_IMM | \
			    1u << ROCE_OP_READ_REQ | 1u << ROCE_OP_READ_RESP_ONLY | \
			    1u << ROCE_OP_CMP_SWAP | 1u << ROCE_OP_FETCH_ADD | \
			    1u << ROCE_OP_ATOMIC_ACK)
static inline bool roce_only4_opcode(uint8_t opcode)
{
	/* (RC opcodes are 0x00-0x1f) */
	return opcode < 32 && (ROCE_ONLY4_OPCODES >> opcode & 1);
}
/*
 * Is the frame one of those, in that shape, its headers within the first
 * contig bytes and nothing after its ICRC, that roce_parse_rx() accepts?
 * Then true and *p as roce_parse_rx() fills it (every other field 0).
 * The same checks at fixed offsets: false for anything else, which
 * roce_parse_rx() then takes. test_roce_parse_diff: it accepts only what
 * roce_parse_rx() accepts, with the same fields, and every frame of its
 * shape.
 */
bool roce_parse_only4(const uint8_t *frame, uint32_t contig, uint32_t len,
		      struct roce_pkt *p);

/* A copy of up to 64 bytes (a small payload into a frame) in a few
 * overlapping 16-, 8- or 4-byte moves, without a call; longer ones are
 * memcpy's. dst and src do not overlap. */
static inline void roce_copy_small(uint8_t *dst, const uint8_t *src, uint32_t n)
{
	if (n >= 16) {
		if (n > 64) {
			memcpy(dst, src, n);
			return;
		}
		if (n > 32) {
			__builtin_memcpy(dst + 16, src + 16, 16);
			__builtin_memcpy(dst + n - 32, src + n - 32, 16);
		}
		__builtin_memcpy(dst, src, 16);
		__builtin_memcpy(dst + n - 16, src + n - 16, 16);
	} else if (n >= 8) {
		__builtin_memcpy(dst, src, 8);
		__builtin_memcpy(dst + n - 8, src + n - 8, 8);
	} else if (n >= 4) {
		__builtin_memcpy(dst, src, 4);
		__builtin_memcpy(dst + n - 4, src + n - 4, 4);
	} else if (n) {
		dst[0] = src[0];
		dst[n / 2] = src[n / 2];
		dst[n - 1] = src[n - 1];
	}
}

/*
 * The extended transport headers, big-endian at any alignment: written
 * here once, for roce_build_hdrs() and for frames built from a header
 * image (the driver writes them behind the image's BTH).
 */
static inline void roce_put_be32(uint8_t *b, uint32_t x)
{
	x = __builtin_bswap32(x);
	memcpy(b, &x, 4);
}

static inline void roce_put_be64(uint8_t *b, uint64_t x)
{
	x = __builtin_bswap64(x);
	memcpy(b, &x, 8);
}

static inline void roce_put_reth(uint8_t *b, uint64_t va, uint32_t rkey,
				 uint32_t len)
{
	roce_put_be64(b, va);
	roce_put_be32(b + 8, rkey);
	roce_put_be32(b + 12, len);
}

static inline void roce_put_atmeth(uint8_t *b, uint64_t va, uint32_t rkey,
				   uint64_t swap_add, uint64_t compare)
{
	roce_put_be64(b, va);
	roce_put_be32(b + 8, rkey);
	roce_put_be64(b + 12, swap_add);
	roce_put_be64(b + 20, compare);
}

/* Syndrome, then the 24-bit MSN. */
static inline void roce_put_aeth(uint8_t *b, uint8_t syndrome, uint32_t msn)
{
	roce_put_be32(b, (uint32_t)syndrome << 24 | (msn & 0xffffff));
}

/*
 * Write all headers of `p` (Ethernet .. last extended header) into `buf`
 * (at least ROCE_MAX_HDR_LEN bytes), taking `p->payload_len` and `p->pad`
 * for the length fields. Fills the layout fields of `p` and computes the IPv4
 * header checksum. Returns the header length. The ICRC is not written: see
 * roce_icrc_*.
 */
#define ROCE_MAX_HDR_LEN (ROCE_ETH_HLEN + ROCE_VLAN_HLEN + ROCE_IPV6_HLEN + \
			  ROCE_UDP_HLEN + ROCE_BTH_LEN + ROCE_ATMETH_LEN + 16)
uint32_t roce_build_hdrs(uint8_t *buf, struct roce_pkt *p);

/*
 * roce_build_hdrs() for a stream of frames that share their L2..UDP fields
 * (a connected QP's): the first call, and any call whose L2..L4 fields of
 * `p` (dst_mac .. udp_csum, the IPv4 ID aside) differ from the cached ones,
 * builds normally and keeps the Ethernet/VLAN/IP/UDP bytes; the others copy
 * them and patch the lengths, the IPv4 ID and the IPv4 checksum
 * (incrementally, RFC 1624). Same bytes, same `p` layout fields as
 * roce_build_hdrs(). Zero the cache before first use.
 */
#define ROCE_L2L4_KEY_LEN	offsetof(struct roce_pkt, opcode)
struct roce_hdr_cache {
	uint8_t key[ROCE_L2L4_KEY_LEN];	/* p's L2..L4 fields, ip_id 0 */
	bool valid;
	uint8_t len;			/* Ethernet + VLAN + IP + UDP bytes */
	uint8_t l3_off;
	uint8_t l4_off;
	uint32_t ip_sum;		/* IPv4: 16-bit sum (native order) of
					 * the header without length, ID and
					 * checksum */
	uint8_t hdr[ROCE_ETH_HLEN + ROCE_VLAN_HLEN + ROCE_IPV6_HLEN +
		    ROCE_UDP_HLEN];
};
uint32_t roce_build_hdrs_cached(uint8_t *buf, struct roce_pkt *p,
				struct roce_hdr_cache *c);

/*
 * A connection's frames from a byte image of their headers, Ethernet
 * through BTH, for frames whose fields past the BTH are few and written by
 * the caller (a requester's one-packet SEND or WRITE, an ACK): no packet
 * struct per frame, no key compare. roce_image_init() once from a packet
 * holding the connection's L2..BTH fields (the BTH's opcode, flags and PSN
 * aside); roce_image_build() per frame writes Ethernet .. BTH into buf
 * (which must have sizeof(img->bytes) bytes of room), with the lengths,
 * the IPv4 ID and checksum, the BTH's opcode, byte 1 (SE, MigReq, pad,
 * TVer) and its last word (AckReq, PSN), and returns the frame length
 * including the ICRC. The ext_len bytes of extended headers after the BTH,
 * the payload and its pad bytes are the caller's. The bytes equal
 * roce_build_hdrs()'s for the same fields (test_roce_unit).
 */
struct roce_hdr_image {
	uint8_t bytes[ROCE_ETH_HLEN + ROCE_VLAN_HLEN + ROCE_IPV6_HLEN +
		      ROCE_UDP_HLEN + ROCE_BTH_LEN + 2];	/* 80: whole stores */
	uint8_t l3_off;
	uint8_t bth_off;
	bool ipv6;
	uint32_t ip_sum;	/* IPv4: as roce_hdr_cache's */
};
void roce_image_init(struct roce_hdr_image *img, const struct roce_pkt *t);

/*
 * A connection's ACK (or NAK) whole but for its BTH's last word (AckReq,
 * PSN), its AETH and the IPv4 ID, and the ICRC's running CRC over what
 * comes before those 8 bytes, taken with ID 0. roce_ack_build() writes the
 * frame and gets its ICRC from that CRC (roce_crc32_ack: CRC is linear,
 * so the ID adds a share from two table lookups, and the last 8 bytes are
 * one slice-by-8 step), where a whole frame's ICRC reads all ~60 bytes.
 * The bytes equal roce_image_build()'s with an AETH (test_roce_unit).
 */
struct roce_ack_image {
	uint8_t bytes[ROCE_ETH_HLEN + ROCE_VLAN_HLEN + ROCE_IPV6_HLEN +
		      ROCE_UDP_HLEN + ROCE_BTH_LEN + ROCE_AETH_LEN +
		      ROCE_ICRC_LEN + 10];	/* 96: whole stores */
	uint8_t len;		/* frame length, ICRC included */
	uint8_t l3_off;
	uint8_t bth_off;
	bool ipv6;
	uint32_t ip_sum;	/* IPv4: as roce_hdr_image's */
	uint32_t crc_pre;	/* running CRC up to the BTH's last word */
};
void roce_ack_image_init(struct roce_ack_image *a,
			 const struct roce_hdr_image *img);
/* The ICRC of an ACK: prefix CRC (ID 0), the frame's IPv4 ID (0 for
 * IPv6), its last 8 covered bytes (BTH word 3, AETH). */
uint32_t roce_crc32_ack(uint32_t crc_pre, uint16_t ip_id,
			const uint8_t *tail);

uint32_t roce_image_build(uint8_t *buf, const struct roce_hdr_image *img,
			  uint8_t opcode, uint8_t bth1, uint32_t bth_psn,
			  uint32_t ext_len, uint32_t payload_pad_len,
			  uint16_t ip_id);

/*
 * CRC32 (IEEE 802.3, reflected, poly 0xEDB88320) with zlib's conventions:
 * start from 0, chain as roce_crc32(roce_crc32(0, a, la), b, lb) ==
 * roce_crc32(0, ab, la + lb). Runs at memory speed (ISA-L when available).
 */
uint32_t roce_crc32(uint32_t crc, const void *buf, size_t len);
/* Which implementation roce_crc32 uses: "isal" or "slice8". */
const char *roce_crc32_impl(void);
/* The portable slice-by-8 implementation, always built (same conventions
 * as roce_crc32; for tests and benchmarks). */
uint32_t roce_crc32_slice8(uint32_t crc, const void *buf, size_t len);

/*
 * ICRC (IBTA A17.8): CRC32 over 8 bytes of 0xff, then the IP header with
 * IPv4 TOS/TTL/checksum (IPv6 traffic class, flow label, hop limit) set to
 * 1s, the UDP header with its checksum set to 1s, the BTH with its resv8a
 * byte (FECN/BECN) set to 1s, then everything up to the ICRC.
 *
 * roce_icrc_hdrs() returns the running CRC over the masked pseudo-header and
 * the headers from `l3` (IP header start) for `hdr_len` bytes (IP + UDP +
 * BTH + extended headers, i.e. payload_off - l3_off); chain the
 * payload and pad with roce_crc32(); roce_icrc_final() turns the running CRC
 * into the value stored little-endian in the last 4 bytes of the frame.
 */
uint32_t roce_icrc_hdrs(const uint8_t *l3, uint32_t hdr_len, bool ipv6);
static inline uint32_t roce_icrc_final(uint32_t crc) { return crc; }

/* ICRC of a whole contiguous frame (`frame_len` includes the ICRC slot). */
uint32_t roce_icrc_frame(const uint8_t *frame, const struct roce_pkt *p);
/* The same from the IP header at l3: hdr_len bytes of IP .. extended
 * headers, cover bytes of IP header through pad (no struct needed). */
uint32_t roce_icrc_l3(const uint8_t *l3, uint32_t hdr_len, uint32_t cover,
		      bool ipv6);
/*
 * The ICRC over cover bytes at l3 (IP header through pad, contiguous) by
 * carry-less multiplication, reading the frame in place (roce_crc_clmul.c).
 * Only if roce_icrc_clmul_usable() (x86-64 with PCLMULQDQ, SSE4.1, AVX), and
 * only for IPv4 with a 20-byte header and cover >= 40, or IPv6 and
 * cover >= 60; roce_icrc_frame() uses it when it can.
 */
bool roce_icrc_clmul_probe(void);
/* 1 usable, 0 not, -1 not asked yet: read inline on every frame (a call
 * per frame cost ~10 instructions of a 64 B WRITE's ~2200). */
extern int8_t roce_clmul_state;
static inline bool roce_icrc_clmul_usable(void)
{
	int8_t s = __atomic_load_n(&roce_clmul_state, __ATOMIC_RELAXED);

	return __builtin_expect(s >= 0, 1) ? s != 0 : roce_icrc_clmul_probe();
}
uint32_t roce_icrc_clmul(const uint8_t *l3, uint32_t cover, bool ipv6);
/*
 * roce_icrc_clmul() of n frames, each stored (little-endian, as
 * roce_icrc_store) right after its covered bytes, at l3[i] + cover[i]; each
 * frame needs 8 readable bytes before l3[i] (its Ethernet header). One
 * loop with nothing between one frame's chain of multiplications and the
 * next's, so the core overlaps them; with AVX-512 (F, BW) and VPCLMULQDQ,
 * four frames of one shape (the same cover and IP version, 8 + cover a
 * multiple of 16, cover < 512: a burst of one size's WRITEs or SENDs) share
 * each multiplication, a frame a 128-bit lane. Needs
 * roce_icrc_clmul_usable(). Returns how many frames went four a register.
 */
uint32_t roce_icrc_clmul_store_n(uint8_t *const *l3, const uint16_t *cover,
				 const uint8_t *ipv6, uint32_t n);

/*
 * roce_icrc_l3() for headers known to fit roce_icrc_clmul(): IPv4 with
 * IHL 5 or IPv6, and a whole BTH (what roce_parse_rx() accepts and the
 * header images build). Straight to the carry-less kernel where it runs:
 * the checks and two calls of the general entry cost ~25 instructions a
 * small frame.
 */
static inline uint32_t
roce_icrc_fit(const uint8_t *l3, uint32_t hdr_len, uint32_t cover, bool ipv6)
{
	if (__builtin_expect(roce_icrc_clmul_usable(), 1))
		return roce_icrc_clmul(l3, cover, ipv6);
	return roce_icrc_l3(l3, hdr_len, cover, ipv6);
}

/*
 * Copy len bytes from src to dst (not overlapping) and return
 * roce_crc32(crc, src, len), reading src once: a transmit path that gathers
 * payload into a frame gets its CRC with the copy. The _clmul form needs
 * roce_icrc_clmul_usable(); roce_crc32_copy() picks.
 */
uint32_t roce_crc32_copy(uint32_t crc, void *dst, const void *src, size_t len);
uint32_t roce_crc32_copy_clmul(uint32_t crc, void *dst, const void *src,
			       size_t len);
/* The register width, in bits, of the kernel roce_crc32_copy() of 256
 * bytes or more runs: 512 (AVX-512 VPCLMULQDQ), 256 (VPCLMULQDQ with AVX2),
 * 128 (PCLMULQDQ), 0 (no carry-less multiply: memcpy and a table CRC).
 * Tests and benchmarks say which one they ran. */
unsigned int roce_crc32_copy_bits(void);
/* roce_crc32() of len >= 256 bytes by the 256-bit kernel, for when
 * roce_crc32_copy_bits() says 256 (roce_crc32() asks it first). */
uint32_t roce_crc32_wide(uint32_t crc, const void *buf, size_t len);
/* ISA-L's crc32_gzip_refl (built with ISA-L only), the vector registers'
 * upper halves left clean where its AVX-512 kernel ran: roce_crc32() and
 * the ICRC call it rather than ISA-L. */
uint32_t roce_isal_crc(uint32_t crc, const void *buf, size_t len);
/* The CRC of A then B (zlib conventions) from crc(A), crc(B) and |B|: so
 * that a frame's headers, written just before its payload is copied, are
 * read for their CRC after the copy, when their stores have long
 * committed (read at once, the load waits for every store before it: the
 * previous frame's payload too). One carry-less multiply for each bit set
 * in len_b; for len_b a power of two, one. */
uint32_t roce_crc32_combine(uint32_t crc_a, uint32_t crc_b, uint32_t len_b);
/* a(x) * b(x) mod the CRC's polynomial, reflected (roce_crc32_combine's;
 * only where roce_icrc_clmul_usable()). */
uint32_t roce_crc32_mulmod_clmul(uint32_t a, uint32_t b);

/* Write/read the 4-byte little-endian ICRC at `dst`. */
static inline void roce_icrc_store(uint8_t *dst, uint32_t icrc)
{
	dst[0] = (uint8_t)icrc;
	dst[1] = (uint8_t)(icrc >> 8);
	dst[2] = (uint8_t)(icrc >> 16);
	dst[3] = (uint8_t)(icrc >> 24);
}

static inline uint32_t roce_icrc_load(const uint8_t *src)
{
	return (uint32_t)src[0] | (uint32_t)src[1] << 8 |
	       (uint32_t)src[2] << 16 | (uint32_t)src[3] << 24;
}

/* Write the ACK into buf (sizeof(a->bytes) bytes of room); its length. */
static inline uint32_t
roce_ack_build(uint8_t *buf, const struct roce_ack_image *a, uint32_t bth_psn,
	       uint8_t syndrome, uint32_t msn, uint16_t ip_id)
{
	uint8_t *bth = buf + a->bth_off;
	uint16_t id = a->ipv6 ? 0 : ip_id;

	memcpy(buf, a->bytes, sizeof(a->bytes));	/* fixed size: no call */
	roce_put_be32(bth + 8, bth_psn);
	roce_put_aeth(bth + 12, syndrome, msn);
	if (!a->ipv6) {
		uint8_t *ip = buf + a->l3_off;
		uint16_t idn, ck;
		uint32_t s;

		ip[4] = (uint8_t)(id >> 8);
		ip[5] = (uint8_t)id;
		memcpy(&idn, ip + 4, 2);	/* the sum is native */
		s = a->ip_sum + idn;
		s = (s & 0xffff) + (s >> 16);
		s = (s & 0xffff) + (s >> 16);
		ck = (uint16_t)~s;
		memcpy(ip + 10, &ck, 2);
	}
	roce_icrc_store(bth + 16, roce_crc32_ack(a->crc_pre, id, bth + 8));
	return a->len;
}

/* PSN arithmetic modulo 2^24 (IBTA 9.7.1): signed distance a - b. */
static inline int32_t roce_psn_diff(uint32_t a, uint32_t b)
{
	return (int32_t)((a - b) << 8) >> 8;
}

static inline uint32_t roce_psn_add(uint32_t psn, uint32_t n)
{
	return (psn + n) & ROCE_PSN_MASK;
}

/* Path MTU enum (IBV_MTU_256 = 1 .. IBV_MTU_4096 = 5) to bytes. */
static inline uint32_t roce_mtu_bytes(int mtu_enum)
{
	return mtu_enum >= 1 && mtu_enum <= 5 ? 128u << mtu_enum : 0;
}

/* The IPv4 header checksum of `hdr` (IHL*4 bytes), as stored on the wire:
 * the value to write big-endian at bytes 10-11 (returned in host order).
 * The current contents of bytes 10-11 are ignored (counted as 0), so this
 * both fills in and verifies a checksum: valid iff equal to bytes 10-11. */
uint16_t roce_ipv4_cksum(const uint8_t *hdr, uint32_t len);

#ifdef __cplusplus
}
#endif
#endif /* ROCE_H */
