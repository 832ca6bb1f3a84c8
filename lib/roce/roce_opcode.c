/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The opcode table (IBTA Vol.1 9.2 table 38 and Annex A17.9.2 for CNP): for
 * each BTH opcode, which extended transport headers follow the BTH (and so
 * the header length), whether a payload follows, and what the packet means.
 * Reserved or unsupported opcodes (RD, XRC, RESYNC, ...) have name NULL and
 * are rejected by roce_parse().
 *
 * The extended headers always appear in the IBTA order
 *   BTH, DETH, RETH, AtomicETH, AETH, AtomicAckETH, ImmDt, IETH, payload
 * which is the order roce_parse/roce_build_hdrs use.
 */
#include "roce.h"

#define X_RETH		(ROCE_OPF_RETH)
#define X_AETH		(ROCE_OPF_AETH)
#define X_ATMETH	(ROCE_OPF_ATMETH)
#define X_ATMACK	(ROCE_OPF_ATMACK)
#define X_DETH		(ROCE_OPF_DETH)
#define X_IMM		(ROCE_OPF_IMMDT)
#define X_IETH		(ROCE_OPF_IETH)
#define PL		(ROCE_OPF_PAYLOAD)
#define REQ		(ROCE_OPF_REQ)
#define RESP		(ROCE_OPF_RESP)
#define FIRST		(ROCE_OPF_FIRST)
#define MIDDLE		(ROCE_OPF_MIDDLE)
#define LAST		(ROCE_OPF_LAST)
#define ONLY		(ROCE_OPF_FIRST | ROCE_OPF_LAST)

/* Header length implied by the flags: every entry is consistent by
 * construction (test_roce_unit re-checks it independently). */
#define HLEN(f)	(ROCE_BTH_LEN + \
		 (((f) & ROCE_OPF_DETH) ? ROCE_DETH_LEN : 0) + \
		 (((f) & ROCE_OPF_RETH) ? ROCE_RETH_LEN : 0) + \
		 (((f) & ROCE_OPF_ATMETH) ? ROCE_ATMETH_LEN : 0) + \
		 (((f) & ROCE_OPF_AETH) ? ROCE_AETH_LEN : 0) + \
		 (((f) & ROCE_OPF_ATMACK) ? ROCE_ATMACK_LEN : 0) + \
		 (((f) & ROCE_OPF_IMMDT) ? ROCE_IMMDT_LEN : 0) + \
		 (((f) & ROCE_OPF_IETH) ? ROCE_IETH_LEN : 0))

#define OP(tr, op, nm, f) \
	[ROCE_OPCODE(ROCE_TRANSPORT_##tr, ROCE_OP_##op)] = \
		{ .name = #tr "_" nm, .flags = (f), .hdr_len = HLEN(f) }

/* SEND: First/Middle/Last/Only, with Immediate or Invalidate variants. */
#define S	(ROCE_OPF_SEND | REQ | PL)
/* RDMA WRITE: RETH on the first (or only) packet of the message. */
#define W	(ROCE_OPF_WRITE | REQ | PL)
/* RDMA READ response: AETH on First/Last/Only, none on Middle. */
#define RR	(ROCE_OPF_READ | RESP | PL)
#define ATM	(ROCE_OPF_ATOMIC | REQ | ONLY | X_ATMETH)

/* Both RC and UC: SEND and RDMA WRITE (UC has no READ, ATOMIC or ACKs). */
#define SEND_WRITE_OPS(tr) \
	OP(tr, SEND_FIRST, "SEND_FIRST", S | FIRST), \
	OP(tr, SEND_MIDDLE, "SEND_MIDDLE", S | MIDDLE), \
	OP(tr, SEND_LAST, "SEND_LAST", S | LAST), \
	OP(tr, SEND_LAST_IMM, "SEND_LAST_IMM", S | LAST | X_IMM), \
	OP(tr, SEND_ONLY, "SEND_ONLY", S | ONLY), \
	OP(tr, SEND_ONLY_IMM, "SEND_ONLY_IMM", S | ONLY | X_IMM), \
	OP(tr, WRITE_FIRST, "WRITE_FIRST", W | FIRST | X_RETH), \
	OP(tr, WRITE_MIDDLE, "WRITE_MIDDLE", W | MIDDLE), \
	OP(tr, WRITE_LAST, "WRITE_LAST", W | LAST), \
	OP(tr, WRITE_LAST_IMM, "WRITE_LAST_IMM", W | LAST | X_IMM), \
	OP(tr, WRITE_ONLY, "WRITE_ONLY", W | ONLY | X_RETH), \
	OP(tr, WRITE_ONLY_IMM, "WRITE_ONLY_IMM", W | ONLY | X_RETH | X_IMM)

const struct roce_opcode_info roce_opcode_table[256] = {
	SEND_WRITE_OPS(RC),
	OP(RC, READ_REQ, "READ_REQ",
	   ROCE_OPF_READ | REQ | ONLY | X_RETH),
	OP(RC, READ_RESP_FIRST, "READ_RESP_FIRST", RR | FIRST | X_AETH),
	OP(RC, READ_RESP_MIDDLE, "READ_RESP_MIDDLE", RR | MIDDLE),
	OP(RC, READ_RESP_LAST, "READ_RESP_LAST", RR | LAST | X_AETH),
	OP(RC, READ_RESP_ONLY, "READ_RESP_ONLY", RR | ONLY | X_AETH),
	OP(RC, ACK, "ACK", ROCE_OPF_ACK | RESP | ONLY | X_AETH),
	OP(RC, ATOMIC_ACK, "ATOMIC_ACK",
	   ROCE_OPF_ACK | ROCE_OPF_ATOMIC | RESP | ONLY | X_AETH | X_ATMACK),
	OP(RC, CMP_SWAP, "CMP_SWAP", ATM),
	OP(RC, FETCH_ADD, "FETCH_ADD", ATM),
	OP(RC, SEND_LAST_INV, "SEND_LAST_INV", S | LAST | X_IETH),
	OP(RC, SEND_ONLY_INV, "SEND_ONLY_INV", S | ONLY | X_IETH),

	SEND_WRITE_OPS(UC),

	/* UD: only SEND Only, always with a DETH (Q_Key, source QP). */
	OP(UD, SEND_ONLY, "SEND_ONLY", S | ONLY | X_DETH),
	OP(UD, SEND_ONLY_IMM, "SEND_ONLY_IMM", S | ONLY | X_DETH | X_IMM),

	/*
	 * RoCEv2 CNP (A17.9.2): a BTH (DestQP = the QP being throttled; see
	 * the annex for the other field values) followed by 16 reserved
	 * bytes, which this table treats as the payload so that
	 * hdr_len stays "BTH + extended headers": build a CNP with
	 * payload_len = 16 (zeros) and pad = 0.
	 */
	[ROCE_OPCODE_CNP] = { .name = "CNP",
			      .flags = ROCE_OPF_CNP | PL,
			      .hdr_len = ROCE_BTH_LEN },
};
