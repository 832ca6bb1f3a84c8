/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_rx: the whole receive path (eth_rx_one: ARP, parse, ICRC, QP
 * lookup, responder, completer) of real QPs, MRs and CQs, with frames
 * that come from the fuzzer instead of a port.
 *
 * Input: one set-up byte, then records:
 *
 *   H | ctl sel len_hi len_lo frame[len] | ctl sel len_hi len_lo frame | ...
 *
 * H (what happens before the frames, see setup_ops()):
 *   0x01 the peer is silent: its QPs go to ERR, so what the attacked
 *        device asked for stays outstanding and only the fuzzer answers
 *   0x02 A QP0: RDMA READ 3000 bytes      0x04 A QP0: FETCH_AND_ADD
 *   0x08 A QP2: RDMA WRITE 4864 bytes, 8 inline SENDs of 280 (2 packets
 *        each at MTU 256)                 0x10 A QP0: SEND 3000 bytes
 *   0x20 B QP0/QP2: SEND 3000 bytes to A  0x40 A QP3: READ 10000 + CMP_SWP
 *   0x80 run the engine once before the first frame
 * ctl (per frame; the fix-ups let inputs reach deep without the fuzzer
 * having to guess checksums and the QP numbers of this run):
 *   0x01 F_HDR   IPv4/UDP 4791 headers made consistent: lengths, IP
 *                checksum, MACs and addresses of the two devices,
 *                payload a multiple of 4
 *   0x02 F_QP    destination QP = QP (sel & 3) of the attacked device
 *   0x04 F_PSN   PSN = the QP's expected PSN (requests) or oldest
 *                unacknowledged PSN (responses) + ((sel >> 5) - 4)
 *   0x08 F_KEY   RETH/AtomicETH R_Key and VA = MR ((sel >> 2) & 7), the
 *                VA from 256 bytes before the region to 256 after it
 *   0x10 F_ICRC  correct ICRC (computed last)
 *   0x20 F_SEG   the frame in several mbuf segments (first: len_lo & 0x7f
 *                bytes, at least the headers when F_HDR)
 *   0x40 F_B     inject into device B (the peer) instead of A
 *   0x80 F_POLL  run the engine after this frame
 * A frame shorter than its record says takes what is left of the input.
 * A record of length 0 is an action of the application (app_action()).
 *
 * After every frame and at the end: every canary intact, every MR that
 * may not change unchanged (fz_check aborts otherwise); ASan/UBSan watch
 * the frame (each segment in an exact-size malloc()) and A's send rings.
 *
 * FZ_GEN_CORPUS=<dir>: instead of fuzzing, run droce's own traffic between
 * the two devices and write what arrives at A as inputs (seed corpus).
 */
#include <arpa/inet.h>
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "fz_env.h"

#define H_SILENT	0x01
#define H_READ		0x02
#define H_FADD		0x04
#define H_WRITE		0x08
#define H_SEND		0x10
#define H_B_SEND	0x20
#define H_BIG		0x40
#define H_POLL		0x80

#define F_HDR		0x01
#define F_QP		0x02
#define F_PSN		0x04
#define F_KEY		0x08
#define F_ICRC		0x10
#define F_SEG		0x20
#define F_B		0x40
#define F_POLL		0x80

#define MAX_FRAME	10240

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* ------------------------------------------------ what A and B post */

static void post(struct ibv_qp *qp, enum ibv_wr_opcode op, int lmr,
		 size_t loff, uint32_t len, int rmr, size_t roff)
{
	const struct fz_mr *l = &fz.mr[lmr], *r = &fz.mr[rmr];
	struct ibv_sge sg = { (uintptr_t)l->buf + loff, len, l->key };
	struct ibv_send_wr wr, *bad;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x5000 + op;
	wr.opcode = op;
	wr.send_flags = IBV_SEND_SIGNALED;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	wr.imm_data = htonl(0x1234);
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = r->iova + roff;
		wr.wr.atomic.rkey = r->key;
		wr.wr.atomic.compare_add = 0x4141414141414141ull;
		wr.wr.atomic.swap = 7;
	} else {
		wr.wr.rdma.remote_addr = r->iova + roff;
		wr.wr.rdma.rkey = r->key;
	}
	ret = ibv_post_send(qp, &wr, &bad);
	if (ret) {
		fprintf(stderr, "fuzz_rx: post_send(%d): %s\n", op, strerror(ret));
		abort();
	}
}

static void post_inline(struct ibv_qp *qp, uint32_t len)
{
	struct ibv_sge sg = { (uintptr_t)fz.mr[FZ_MR_LOCAL].buf, len, 0 };
	struct ibv_send_wr wr, *bad;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x5100;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	wr.sg_list = &sg;
	wr.num_sge = 1;
	ret = ibv_post_send(qp, &wr, &bad);
	if (ret) {
		fprintf(stderr, "fuzz_rx: inline post_send: %s\n", strerror(ret));
		abort();
	}
}

static void setup_ops(uint8_t h, bool gen)
{
	if ((h & H_SILENT) && !gen)
		for (int i = 0; i < FZ_NQP; i++) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

			ibv_modify_qp(fz.q[i].peer, &a, IBV_QP_STATE);
		}
	if (h & H_READ)
		post(fz.q[0].qp, IBV_WR_RDMA_READ, FZ_MR_LOCAL, 0, 3000,
		     FZ_MR_B_LOCAL, 0);
	if (h & H_FADD)
		post(fz.q[0].qp, IBV_WR_ATOMIC_FETCH_AND_ADD, FZ_MR_LOCAL, 8192, 8,
		     FZ_MR_B_LOCAL, 4096);
	if (h & H_WRITE) {
		/* 19 packets at MTU 256, then 2-packet inline SENDs: the
		 * engine's budget (32 a turn) ends in the middle of one */
		post(fz.q[2].qp, IBV_WR_RDMA_WRITE, FZ_MR_LOCAL, 0, 4864,
		     FZ_MR_B_LOCAL, 8192);
		for (int i = 0; i < 8; i++)
			post_inline(fz.q[2].qp, 280);
	}
	if (h & H_SEND)
		post(fz.q[0].qp, IBV_WR_SEND, FZ_MR_LOCAL, 0, 3000, FZ_MR_B_LOCAL, 0);
	if (h & H_B_SEND) {
		post(fz.q[0].peer, IBV_WR_SEND, FZ_MR_B_LOCAL, 0, 3000, FZ_MR_RW, 0);
		post(fz.q[2].peer, IBV_WR_SEND_WITH_IMM, FZ_MR_B_LOCAL, 0, 700,
		     FZ_MR_RW, 0);
	}
	if (h & H_BIG) {
		post(fz.q[3].qp, IBV_WR_RDMA_READ, FZ_MR_LOCAL, 16384, 10000,
		     FZ_MR_B_LOCAL, 16384);
		post(fz.q[3].qp, IBV_WR_ATOMIC_CMP_AND_SWP, FZ_MR_LOCAL, 8200, 8,
		     FZ_MR_B_LOCAL, 4104);
	}
	if (h & H_POLL)
		fz_poll(1);
}

/* ------------------------------------------------------------ fix-ups */

static inline void put16(uint8_t *p, uint16_t v) { p[0] = (uint8_t)(v >> 8); p[1] = (uint8_t)v; }
static inline void put32(uint8_t *p, uint32_t v) { put16(p, (uint16_t)(v >> 16)); put16(p + 2, (uint16_t)v); }
static inline void put64(uint8_t *p, uint64_t v) { put32(p, (uint32_t)(v >> 32)); put32(p + 4, (uint32_t)v); }
static inline uint16_t get16(const uint8_t *p) { return (uint16_t)(p[0] << 8 | p[1]); }
static inline uint32_t get32(const uint8_t *p) { return (uint32_t)get16(p) << 16 | get16(p + 2); }

/* Offsets of L3 and BTH as a receiver would find them, or false. */
static bool locate(const uint8_t *f, uint32_t len, uint32_t *l3, uint32_t *bth)
{
	uint32_t o = ROCE_ETH_HLEN, et;

	if (len < ROCE_ETH_HLEN)
		return false;
	et = get16(f + 12);
	if (et == 0x8100) {
		if (len < o + 4)
			return false;
		et = get16(f + 16);
		o += 4;
	}
	*l3 = o;
	if (len < o + 1)
		return false;
	if (et == 0x86dd)
		o += ROCE_IPV6_HLEN;
	else
		o += (uint32_t)(f[o] & 0x0f) * 4;
	o += ROCE_UDP_HLEN;
	*bth = o;
	return o + ROCE_BTH_LEN <= len;
}

/* Make L3/L4 consistent with the frame length; may shorten the frame. */
static uint32_t fix_hdr(uint8_t *f, uint32_t len, uint32_t dst_ip,
			uint32_t src_ip, const uint8_t *dst_mac,
			const uint8_t *src_mac)
{
	uint32_t l3 = ROCE_ETH_HLEN, bth, body, hlen, want;
	const struct roce_opcode_info *oi;
	uint8_t *ip;

	if (len >= 18 && get16(f + 12) == 0x8100)
		l3 += 4;
	else if (len >= 14)
		put16(f + 12, 0x0800);
	bth = l3 + ROCE_IPV4_HLEN + ROCE_UDP_HLEN;
	if (len < bth + ROCE_BTH_LEN + ROCE_ICRC_LEN)
		return len;
	oi = roce_opcode_info(f[bth]);
	hlen = oi->name ? oi->hdr_len : ROCE_BTH_LEN;
	f[bth + 1] &= (uint8_t)~ROCE_BTH_TVER_MASK;
	want = bth + hlen + ROCE_ICRC_LEN;
	if (len < want)
		return len;
	body = len - want;			/* payload + pad */
	if (oi->flags & ROCE_OPF_PAYLOAD) {
		uint8_t pad = (f[bth + 1] & ROCE_BTH_PAD_MASK) >> ROCE_BTH_PAD_SHIFT;

		len -= body % 4;
		body -= body % 4;
		if (!(oi->flags & ROCE_OPF_LAST) || pad > body)
			f[bth + 1] &= (uint8_t)~ROCE_BTH_PAD_MASK;
	} else {
		len = want;
		f[bth + 1] &= (uint8_t)~ROCE_BTH_PAD_MASK;
	}
	/* the peer's MACs: a source MAC that keeps changing must cost the
	 * engine O(1) per frame (doc/security.md, finding 6) */
	memcpy(f, dst_mac, 6);
	memcpy(f + 6, src_mac, 6);
	ip = f + l3;
	ip[0] = 0x45;
	put16(ip + 2, (uint16_t)(len - l3));
	ip[6] &= 0x40;				/* DF at most */
	ip[7] = 0;
	ip[9] = 17;
	memcpy(ip + 12, &src_ip, 4);
	memcpy(ip + 16, &dst_ip, 4);
	put16(ip + 20 + 2, ROCE_UDP_DPORT);
	put16(ip + 20 + 4, (uint16_t)(len - l3 - ROCE_IPV4_HLEN));
	put16(ip + 10, roce_ipv4_cksum(ip, ROCE_IPV4_HLEN));
	return len;
}

static void fix_icrc(uint8_t *f, uint32_t len)
{
	struct roce_pkt p;

	if (roce_parse(f, len, len, &p) != ROCE_OK)
		return;
	roce_icrc_store(f + p.frame_len - ROCE_ICRC_LEN, roce_icrc_frame(f, &p));
}

static void fix_psn(uint8_t *f, uint32_t bth, const struct droce_qp *qp,
		    int delta)
{
	const struct roce_opcode_info *oi = roce_opcode_info(f[bth]);
	uint32_t base, w;

	if (oi->flags & ROCE_OPF_RESP)
		base = qp->req_una_psn;
	else
		base = qp->resp_epsn;
	w = get32(f + bth + 8) & ~ROCE_PSN_MASK;
	put32(f + bth + 8, w | ((base + (uint32_t)delta) & ROCE_PSN_MASK));
}

static void fix_key(uint8_t *f, uint32_t len, uint32_t bth, bool on_b,
		    unsigned int ksel)
{
	static const int a_keys[8] = {
		FZ_MR_RW, FZ_MR_RO, FZ_MR_RECV, FZ_MR_HI, FZ_MR_NONE,
		FZ_MR_DEAD, FZ_MR_OTHERPD, FZ_MR_LOCAL,
	};
	static const int b_keys[8] = {
		FZ_MR_B_LOCAL, FZ_MR_B_RECV, FZ_MR_B_LOCAL, FZ_MR_RW,
		FZ_MR_B_LOCAL, FZ_MR_DEAD, FZ_MR_B_RECV, FZ_MR_B_LOCAL,
	};
	const struct roce_opcode_info *oi = roce_opcode_info(f[bth]);
	const struct fz_mr *m = &fz.mr[on_b ? b_keys[ksel & 7] : a_keys[ksel & 7]];
	uint32_t o = bth + ROCE_BTH_LEN, span;
	uint16_t low;
	uint64_t va;

	if (!(oi->flags & (ROCE_OPF_RETH | ROCE_OPF_ATMETH)) ||
	    o + 12 > len)
		return;
	low = get16(f + o + 6);
	span = (uint32_t)m->len + 512;
	va = m->iova + (low % span) - 256;
	if (oi->flags & ROCE_OPF_ATMETH)
		va &= ~3ull;	/* mostly 4-aligned: the fuzzer finds 8 */
	put64(f + o, va);
	put32(f + o + 8, m->key);
}

/* --------------------------------------------------------------- input */

static uint8_t frame[MAX_FRAME];

/* FZ_VERBOSE=1: the state of the QP a frame went to. */
static void dump_qp(const char *when, const struct droce_qp *qp)
{
	fprintf(stderr, "%s: QP 0x%x state %d | req: acked %u cur %u off %u hwm %u "
		"psn 0x%06x una 0x%06x max 0x%06x sq_db %u | resp: epsn 0x%06x "
		"in_send %d in_write %d rd %u..%u flags 0x%x tmpl %d dbp %u\n", when,
		qp->ex.qp_base.qp_num, qp->state, qp->req_acked, qp->req_cur,
		qp->req_off, qp->req_hwm, qp->req_psn, qp->req_una_psn,
		qp->req_psn_max, qp->sq_db, qp->resp_epsn, qp->resp_in_send,
		qp->resp_in_write, qp->rd_head, qp->rd_tail, qp->flags,
		qp->tmpl_ready, qp->db_pending);
}

static void inject(uint8_t ctl, uint8_t sel, const uint8_t *src, uint32_t len)
{
	bool on_b = ctl & F_B;
	struct droce_dev *dev = on_b ? fz.dev_b : fz.dev_a;
	const struct fz_qp *q = &fz.q[sel & 3];
	const struct droce_qp *qp = on_b ? q->dpeer : q->dq;
	uint32_t l3, bth, seg1 = 0;
	struct rte_mbuf *m;

	memcpy(frame, src, len);
	if (ctl & F_HDR)
		len = fix_hdr(frame, len, on_b ? fz.ip_b : fz.ip_a,
			      on_b ? fz.ip_a : fz.ip_b,
			      (on_b ? fz.dev_b : fz.dev_a)->mac.addr_bytes,
			      (on_b ? fz.dev_a : fz.dev_b)->mac.addr_bytes);
	if (locate(frame, len, &l3, &bth)) {
		if (ctl & F_QP) {
			uint32_t w = get32(frame + bth + 4) & ~ROCE_QPN_MASK;

			put32(frame + bth + 4, w | qp->ex.qp_base.qp_num);
		}
		if (ctl & F_PSN)
			fix_psn(frame, bth, qp, (int)(sel >> 5) - 4);
		if (ctl & F_KEY)
			fix_key(frame, len, bth, on_b, (sel >> 2) & 7);
	}
	if (ctl & F_ICRC)
		fix_icrc(frame, len);
	if (ctl & F_SEG) {
		seg1 = len > 0 ? (src[len - 1] & 0x7f) + 1 : 1;
		if ((ctl & F_HDR) && locate(frame, len, &l3, &bth))
			seg1 += bth + ROCE_BTH_LEN + ROCE_ATMETH_LEN;
	}
	m = fz_mbuf(frame, len, seg1);
	if (m == NULL)
		return;
	fz_lock();
	if (fz.eng->prefetch_always) {
		/* what a burst does for frames ahead of the one received */
		const struct droce_qp *last = NULL;

		eth_rx_prefetch_qp(dev, m, &last);
		eth_rx_prefetch_slots(dev, m);
	}
	eth_rx_one(fz.eng, dev, m);
	fz_unlock();
	fz_mbuf_free(m);
	if (fz.verbose)
		dump_qp("after rx", qp);
	if (ctl & F_POLL)
		fz_poll(1);
	if (fz.verbose)
		dump_qp("after poll", qp);
}

/*
 * A record of length 0 is something the application does between two
 * frames (ctl & 3):
 *   1  deregister MR rw, free() its memory, register a new buffer: the
 *      engine must never touch the old one again (ASan: use after free)
 *   2  move A's QP (sel & 3) to the error state
 *   3  post receives again
 *   0  with ctl & 4: pace A's QP (sel & 3), its requests and the READ
 *      responses it owes (B's peer QP with ctl & 8), as fz_pace(sel >> 2)
 *      says; with ctl & 0x10: the engine prefetches as it does for
 *      thousands of QPs (frames ahead in a burst, QPs ahead in a list)
 */
static void app_action(uint8_t ctl, uint8_t sel)
{
	struct fz_mr *m = &fz.mr[FZ_MR_RW];

	switch (ctl & 3) {
	case 1:
		if (ibv_dereg_mr(m->mr)) {
			fprintf(stderr, "fuzz_rx: ibv_dereg_mr failed\n");
			abort();
		}
		fz_mr_renew(FZ_MR_RW);
		break;
	case 2: {
		struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

		ibv_modify_qp(fz.q[sel & 3].qp, &a, IBV_QP_STATE);
		break;
	}
	case 3:
		fz_post_recvs();
		break;
	default:
		if (ctl & 4)
			fz_pace(ctl & 8 ? fz.q[sel & 3].peer : fz.q[sel & 3].qp,
				sel >> 2);
		if (ctl & 0x10)
			fz_prefetch_always();
		break;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t off = 1;
	int nrec = 0;

	if (size < 1)
		return 0;
	fz_reset();
	setup_ops(data[0], false);
	if (fz.verbose)
		for (int i = 0; i < FZ_NQP; i++)
			dump_qp("set-up", fz.q[i].dq);
	while (off + 4 <= size && nrec < 16) {
		uint8_t ctl = data[off], sel = data[off + 1];
		uint32_t len = (uint32_t)data[off + 2] << 8 | data[off + 3];

		off += 4;
		if (len > size - off)
			len = (uint32_t)(size - off);
		if (len > MAX_FRAME)
			len = MAX_FRAME;
		if (len > 0)
			inject(ctl, sel, data + off, len);
		else
			app_action(ctl, sel);
		off += len;
		nrec++;
		fz_check("after a frame");
	}
	fz_settle();
	fz_drain_cqs();
	fz_check("after the input");
	return 0;
}

/* ----------------------------------------------------- corpus maker */

struct gen_case {
	const char *name;
	uint8_t h;		/* set-up byte of the written input */
	void (*b_ops)(void);	/* what B sends to A (requests) */
};

static void b_send(void)
{
	post(fz.q[0].peer, IBV_WR_SEND, FZ_MR_B_LOCAL, 0, 3000, FZ_MR_RW, 0);
	post(fz.q[2].peer, IBV_WR_SEND_WITH_IMM, FZ_MR_B_LOCAL, 0, 300, FZ_MR_RW, 0);
	post(fz.q[3].peer, IBV_WR_SEND, FZ_MR_B_LOCAL, 0, 64, FZ_MR_RW, 0);
}

static void b_write(void)
{
	post(fz.q[0].peer, IBV_WR_RDMA_WRITE, FZ_MR_B_LOCAL, 0, 3000, FZ_MR_RW, 16);
	post(fz.q[2].peer, IBV_WR_RDMA_WRITE_WITH_IMM, FZ_MR_B_LOCAL, 0, 600,
	     FZ_MR_HI, 100);
	post(fz.q[1].peer, IBV_WR_RDMA_WRITE, FZ_MR_B_LOCAL, 0, 64, FZ_MR_RW, 0);
}

static void b_read(void)
{
	post(fz.q[0].peer, IBV_WR_RDMA_READ, FZ_MR_B_LOCAL, 0, 2500, FZ_MR_RO, 8);
	post(fz.q[3].peer, IBV_WR_RDMA_READ, FZ_MR_B_LOCAL, 4096, 0, FZ_MR_RW, 0);
}

static void b_atomic(void)
{
	post(fz.q[0].peer, IBV_WR_ATOMIC_FETCH_AND_ADD, FZ_MR_B_LOCAL, 0, 8,
	     FZ_MR_RW, 64);
	post(fz.q[2].peer, IBV_WR_ATOMIC_CMP_AND_SWP, FZ_MR_B_LOCAL, 8, 8,
	     FZ_MR_HI, 8);
}

static void b_none(void)
{
}

static const struct gen_case gen_cases[] = {
	{ "droce_send", 0, b_send },
	{ "droce_write", 0, b_write },
	{ "droce_read_req", 0, b_read },
	{ "droce_atomic_req", 0, b_atomic },
	{ "droce_read_resp", H_SILENT | H_READ, b_none },
	{ "droce_atomic_ack", H_SILENT | H_FADD, b_none },
	{ "droce_write_ack", H_SILENT | H_WRITE, b_none },
	{ "droce_send_ack", H_SILENT | H_SEND, b_none },
	{ "droce_big", H_SILENT | H_BIG, b_none },
};

static int qp_index_of(bool on_b, uint32_t qpn)
{
	for (int i = 0; i < FZ_NQP; i++)
		if ((on_b ? fz.q[i].peer : fz.q[i].qp)->qp_num == qpn)
			return i;
	return 0;
}

static void gen_corpus(const char *dir)
{
	for (size_t c = 0; c < RTE_DIM(gen_cases); c++) {
		const struct gen_case *g = &gen_cases[c];
		uint8_t *all = malloc(1 << 20);
		size_t all_len = 1;
		int nframe = 0;

		if (all == NULL)
			abort();
		fz_reset();
		setup_ops(g->h & ~H_SILENT, true);
		g->b_ops();
		all[0] = g->h;
		for (int it = 0; it < 200; it++) {
			struct rte_mbuf *rx[32];
			uint16_t n;

			fz_lock();
			n = rte_eth_rx_burst(fz.dev_a->port_id, 0, rx, 32);
			for (uint16_t i = 0; i < n; i++) {
				struct rte_mbuf *m = rx[i];
				uint32_t len = m->pkt_len, l3, bth;
				uint8_t rec[4 + MAX_FRAME], sel = 4 << 5;
				char path[512];
				FILE *fp;

				if (len > MAX_FRAME || m->nb_segs != 1)
					goto next;
				memcpy(rec + 4, rte_pktmbuf_mtod(m, uint8_t *), len);
				if (locate(rec + 4, len, &l3, &bth) &&
				    get16(rec + 4 + 12) == 0x0800) {
					int qi = qp_index_of(false,
						get32(rec + 4 + bth + 4) & ROCE_QPN_MASK);
					const struct droce_qp *q = fz.q[qi].dq;
					uint32_t psn = get32(rec + 4 + bth + 8) &
						       ROCE_PSN_MASK;
					int32_t d = roce_psn_diff(psn,
						(roce_opcode_info(rec[4 + bth])->flags &
						 ROCE_OPF_RESP) ? q->req_una_psn :
						q->resp_epsn);

					/* F_PSN rebuilds this PSN from the
					 * state the input will have here */
					d = RTE_MAX(-4, RTE_MIN(3, d));
					sel = (uint8_t)((d + 4) << 5 | qi);
				}
				rec[0] = get16(rec + 4 + 12) == 0x0800 ?
					 F_HDR | F_QP | F_PSN | F_ICRC | F_POLL :
					 F_POLL;	/* ARP: as it is */
				rec[1] = sel;
				rec[2] = (uint8_t)(len >> 8);
				rec[3] = (uint8_t)len;
				if (all_len + 4 + len <= (1 << 20) && nframe < 16) {
					memcpy(all + all_len, rec, 4 + len);
					all_len += 4 + len;
				}
				snprintf(path, sizeof(path), "%s/%s_%02d", dir,
					 g->name, nframe++);
				fp = fopen(path, "wb");
				if (fp) {
					fputc(g->h, fp);
					fwrite(rec, 1, 4 + len, fp);
					fclose(fp);
				}
next:
				eth_rx_one(fz.eng, fz.dev_a, m);
				rte_pktmbuf_free(m);
			}
			fz_unlock();
			fz_poll(1);
		}
		if (nframe > 1) {
			char path[512];
			FILE *fp;

			snprintf(path, sizeof(path), "%s/%s_all", dir, g->name);
			fp = fopen(path, "wb");
			if (fp) {
				fwrite(all, 1, all_len, fp);
				fclose(fp);
			}
		}
		printf("%s: %d frames\n", g->name, nframe);
		free(all);
	}
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *gen = getenv("FZ_GEN_CORPUS");

	fz_env_init(argc && *argc > 0 ? (*argv)[0] : "fuzz_rx");
	if (gen && *gen) {
		gen_corpus(gen);
		exit(0);
	}
	return 0;
}
