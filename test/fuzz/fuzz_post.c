/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_post: the send path with a hostile application. An application
 * owns its send queue memory and may write anything there; the engine
 * decodes what it finds (eth_req.c wqe_decode) and must neither crash nor
 * touch memory outside what the application registered. Also the verbs
 * entry points with arbitrary work requests.
 *
 * Input: mode byte M, parameter byte P, then data.
 *   M & 3  0 raw: WQE slots of A's QP written straight from the input,
 *            then the doorbell record and the engine's notify path
 *          1 ibv_post_send() with work requests decoded from the input
 *          2 ibv_wr_start/ibv_wr_* /ibv_wr_complete or _abort (QP 0)
 *          3 raw, and the same slots scribbled over again while the
 *            engine is in the middle of sending them
 *   M & 4  the peer is silent (its QPs in ERR)
 *   M & 8  raw: make the control segment plausible (valid opcode and
 *          segment count) and data segments point at real keys, so that
 *          the engine goes past decoding
 *   (M >> 4) & 3  which QP of A
 *   M & 0x40  run the engine only once (no settling) before the checks
 *   M & 0x80  raw: doorbell record from the input (any 32-bit value)
 *   P & 7  raw: number of WQEs - 1
 *   P & 8  the QP posted to is paced first, P >> 4 says how (fz_pace)
 *   P & 0x80 with P & 8 clear: the engine prefetches as it does for
 *          thousands of QPs (fz_prefetch_always)
 * Memory the application may legitimately touch: its MRs and a scratch
 * buffer (what ibv_post_send reads for inline data). Canaries, immutable
 * MRs and ASan (A's send rings are malloc()ed) check the rest.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fz_env.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define SCRATCH_LEN	65536
static uint8_t *scratch;

/* A local key and address: mostly inside one of A's MRs. */
static const int lkeys[8] = {
	FZ_MR_LOCAL, FZ_MR_RECV, FZ_MR_RW, FZ_MR_RO, FZ_MR_NONE, FZ_MR_DEAD,
	FZ_MR_OTHERPD, FZ_MR_HI,
};
/* Remote keys: B's MRs, and some that B does not know. */
static const int rkeys[4] = {
	FZ_MR_B_LOCAL, FZ_MR_B_RECV, FZ_MR_B_LOCAL, FZ_MR_RW,
};

static uint64_t addr_in(const struct fz_mr *m, uint16_t off)
{
	/* from 64 bytes before the region to 64 after it */
	return m->iova + (off % (m->len + 128)) - 64;
}

/* ------------------------------------------------------------ raw ring */

static const uint8_t mlx5_ops[8] = {
	MLX5_OPCODE_SEND, MLX5_OPCODE_SEND_IMM, MLX5_OPCODE_RDMA_WRITE,
	MLX5_OPCODE_RDMA_WRITE_IMM, MLX5_OPCODE_RDMA_READ,
	MLX5_OPCODE_ATOMIC_CS, MLX5_OPCODE_ATOMIC_FA, MLX5_OPCODE_NOP,
};

static void make_plausible(uint8_t *w, uint32_t stride, const struct fz_qp *q)
{
	struct mlx5_wqe_ctrl_seg *c = (void *)w;
	uint8_t op = mlx5_ops[w[3] & 7];
	uint32_t maxds = stride / DROCE_SEG, ds, first = 1;

	ds = 1 + (be32toh(c->qpn_ds) & 0x3f) % maxds;
	c->opmod_idx_opcode = htobe32((be32toh(c->opmod_idx_opcode) & ~0xffu) | op);
	c->qpn_ds = htobe32(q->qp->qp_num << 8 | ds);
	if (op == MLX5_OPCODE_RDMA_WRITE || op == MLX5_OPCODE_RDMA_WRITE_IMM ||
	    op == MLX5_OPCODE_RDMA_READ || op == MLX5_OPCODE_ATOMIC_CS ||
	    op == MLX5_OPCODE_ATOMIC_FA) {
		struct mlx5_wqe_raddr_seg *r = (void *)(w + DROCE_SEG);
		const struct fz_mr *m = &fz.mr[rkeys[w[DROCE_SEG + 12] & 3]];

		r->raddr = htobe64(addr_in(m, (uint16_t)be64toh(r->raddr)));
		r->rkey = htobe32(m->key);
		first = op == MLX5_OPCODE_ATOMIC_CS ||
			op == MLX5_OPCODE_ATOMIC_FA ? 3 : 2;
	}
	if (c->signature & DROCE_WQE_INLINE)
		return;
	for (uint32_t i = first; i < ds; i++) {
		struct mlx5_wqe_data_seg *d = (void *)(w + i * DROCE_SEG);
		const struct fz_mr *m = &fz.mr[lkeys[be32toh(d->lkey) & 7]];

		d->byte_count = htobe32(be32toh(d->byte_count) % 12000);
		d->addr = htobe64(addr_in(m, (uint16_t)be64toh(d->addr)));
		d->lkey = htobe32(m->key);
	}
}

static void write_slots(const struct fz_qp *q, struct fz_in *in, uint32_t n,
			bool plausible)
{
	struct droce_qp *dq = q->dq;

	for (uint32_t i = 0; i < n; i++) {
		uint8_t *w = droce_sq_slot(dq, i);

		memset(w, 0, dq->sq_stride);
		for (uint32_t k = 0; k < dq->sq_stride && in->n; k++)
			w[k] = fz_u8(in);
		if (plausible)
			make_plausible(w, dq->sq_stride, q);
		dq->sq_wrid[i & (dq->sq_cnt - 1)] = 0xf000 + i;
	}
}

static void mode_raw(const struct fz_qp *q, uint8_t m, uint8_t p,
		     struct fz_in *in, bool again)
{
	struct droce_qp *dq = q->dq;
	uint32_t n = (p & 7) + 1, db = n;
	size_t half = in->n / 2;
	struct fz_in second = { in->p + half, in->n - half };

	if (again)
		in->n = half;
	if (m & 0x80)
		db = fz_u32(in);
	fz_lock();
	write_slots(q, in, n, m & 8);
	/* What ibv_post_send does: the doorbell record, then notify. */
	__atomic_store_n(&dq->sq_db, db, __ATOMIC_SEQ_CST);
	fz_unlock();
	droce_drv->qp_notify(dq);
	fz_poll(1);
	if (again) {
		fz_lock();
		write_slots(q, &second, n, m & 8);
		fz_unlock();
		droce_drv->qp_notify(dq);
		fz_poll(1);
	}
}

/* --------------------------------------------------------- verbs API */

static void sge_of(struct fz_in *in, struct ibv_sge *sg, bool inl)
{
	uint8_t s = fz_u8(in);
	uint16_t off = fz_u16(in);
	uint32_t len = fz_u16(in);

	if (s == 0xee) {
		/* an application that lies about its buffer's length: only
		 * ever harmful if droce believes it (the lengths of an inline
		 * WR must be checked before anything is copied) */
		sg->addr = (uintptr_t)scratch;
		sg->length = fz_u32(in);
		sg->lkey = 0;
		return;
	}
	if ((s & 0xf0) == 0xf0) {
		/* unregistered application memory (inline data only) */
		sg->addr = (uintptr_t)scratch + off % SCRATCH_LEN;
		sg->length = RTE_MIN(len, (uint32_t)(SCRATCH_LEN - off % SCRATCH_LEN));
		sg->lkey = fz_u32(in);
		return;
	}
	{
		const struct fz_mr *m = &fz.mr[lkeys[s & 7]];
		size_t o = off % m->len;

		sg->addr = (uintptr_t)m->buf + o;
		sg->lkey = (s & 8) ? fz_u32(in) : m->key;
		/* The application's own buffer: inline data is copied from
		 * it, so it must be readable; otherwise the engine checks. */
		if (inl || !(s & 0x10))
			sg->length = RTE_MIN(len, (uint32_t)(m->len - o));
		else
			sg->length = (s & 0x20) ? fz_u32(in) : len;
	}
}

static void mode_verbs(const struct fz_qp *q, struct fz_in *in)
{
	struct ibv_send_wr wr[4], *bad = NULL;
	struct ibv_sge sg[4][20];
	int nwr = 1 + (fz_u8(in) & 3), ret;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < nwr; i++) {
		uint8_t op = fz_u8(in), fl = fz_u8(in), ns = fz_u8(in);
		const struct fz_mr *r = &fz.mr[rkeys[op >> 6]];
		bool inl;

		wr[i].wr_id = 0xe000 + (uint64_t)i;
		wr[i].next = i + 1 < nwr ? &wr[i + 1] : NULL;
		wr[i].opcode = (enum ibv_wr_opcode)(op & 0x0f);
		wr[i].send_flags = fl & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
					 IBV_SEND_SOLICITED | IBV_SEND_INLINE);
		inl = wr[i].send_flags & IBV_SEND_INLINE;
		/* up to 20 (the QPs take 16), or negative */
		wr[i].num_sge = (ns & 0x80) ? (int8_t)ns : ns % 21;
		wr[i].sg_list = sg[i];
		memset(sg[i], 0, sizeof(sg[i]));
		for (int k = 0; k < wr[i].num_sge; k++)
			sge_of(in, &sg[i][k], inl);
		wr[i].imm_data = fz_u32(in);
		if (fl & 0x80) {
			wr[i].wr.atomic.remote_addr = fz_u64(in);
			wr[i].wr.atomic.rkey = fz_u32(in);
		} else if (wr[i].opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
			   wr[i].opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr[i].wr.atomic.remote_addr = addr_in(r, fz_u16(in));
			wr[i].wr.atomic.rkey = r->key;
		} else {
			wr[i].wr.rdma.remote_addr = addr_in(r, fz_u16(in));
			wr[i].wr.rdma.rkey = r->key;
		}
		if (wr[i].opcode == IBV_WR_ATOMIC_CMP_AND_SWP ||
		    wr[i].opcode == IBV_WR_ATOMIC_FETCH_AND_ADD) {
			wr[i].wr.atomic.compare_add = fz_u64(in);
			wr[i].wr.atomic.swap = fz_u64(in);
		}
	}
	ret = ibv_post_send(q->qp, wr, &bad);
	if (ret && (bad < wr || bad >= wr + nwr)) {
		fprintf(stderr, "fuzz_post: ibv_post_send %d without a bad_wr\n", ret);
		abort();
	}
	fz_poll(1);
}

static void mode_wr(const struct fz_qp *q, struct fz_in *in)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(q->qp);
	int nops = 1 + (fz_u8(in) & 7);

	if (x == NULL)
		return;
	ibv_wr_start(x);
	for (int i = 0; i < nops; i++) {
		uint8_t op = fz_u8(in), data = fz_u8(in);
		const struct fz_mr *r = &fz.mr[rkeys[op >> 6]];
		uint64_t ra = addr_in(r, fz_u16(in));
		struct ibv_sge sg[20];
		struct ibv_data_buf db[20];
		unsigned int nsg = (data >> 3) % 21;

		x->wr_id = 0xd000 + (uint64_t)i;
		x->wr_flags = fz_u8(in) & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
					IBV_SEND_SOLICITED);
		switch (op & 7) {
		case 0: ibv_wr_send(x); break;
		case 1: ibv_wr_send_imm(x, fz_u32(in)); break;
		case 2: ibv_wr_rdma_write(x, r->key, ra); break;
		case 3: ibv_wr_rdma_write_imm(x, r->key, ra, fz_u32(in)); break;
		case 4: ibv_wr_rdma_read(x, r->key, ra); break;
		case 5: ibv_wr_atomic_cmp_swp(x, r->key, ra & ~7ull, fz_u64(in), fz_u64(in)); break;
		case 6: ibv_wr_atomic_fetch_add(x, r->key, ra & ~7ull, fz_u64(in)); break;
		default: break;	/* data without an open WQE */
		}
		memset(sg, 0, sizeof(sg));
		memset(db, 0, sizeof(db));
		for (unsigned int k = 0; k < RTE_MAX(nsg, 2u); k++) {
			sge_of(in, &sg[k], true);
			db[k].addr = (void *)(uintptr_t)sg[k].addr;
			db[k].length = sg[k].length;
		}
		switch (data & 7) {
		case 0: ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, sg[0].length); break;
		case 1: ibv_wr_set_sge_list(x, nsg, sg); break;
		case 2: ibv_wr_set_inline_data(x, db[0].addr, db[0].length); break;
		case 3: ibv_wr_set_inline_data_list(x, nsg, db); break;
		case 4:	/* twice */
			ibv_wr_set_sge(x, sg[0].lkey, sg[0].addr, sg[0].length);
			ibv_wr_set_sge(x, sg[1].lkey, sg[1].addr, sg[1].length);
			break;
		case 5:	/* inline after an SGE list */
			ibv_wr_set_sge_list(x, nsg, sg);
			ibv_wr_set_inline_data(x, db[1].addr, db[1].length);
			break;
		default: break;	/* no data at all */
		}
	}
	if (fz_u8(in) & 1)
		ibv_wr_abort(x);
	else
		(void)ibv_wr_complete(x);
	fz_poll(1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data + 2, size >= 2 ? size - 2 : 0 };
	const struct fz_qp *q;
	uint8_t m, p;

	if (size < 2)
		return 0;
	m = data[0];
	p = data[1];
	q = &fz.q[(m >> 4) & 3];
	fz_reset();
	if (p & 8)
		fz_pace((m & 3) == 2 ? fz.q[0].qp : q->qp, p >> 4);
	else if (p & 0x80)
		fz_prefetch_always();
	if (m & 4)
		for (int i = 0; i < FZ_NQP; i++) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

			ibv_modify_qp(fz.q[i].peer, &a, IBV_QP_STATE);
		}
	switch (m & 3) {
	case 0: mode_raw(q, m, p, &in, false); break;
	case 1: mode_verbs(q, &in); break;
	case 2: mode_wr(&fz.q[0], &in); break;
	default: mode_raw(q, m, p, &in, true); break;
	}
	fz_check("after posting");
	if (!(m & 0x40))
		fz_settle();
	fz_drain_cqs();
	fz_check("after the input");
	return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	fz_env_init(argc && *argc > 0 ? (*argv)[0] : "fuzz_post");
	scratch = malloc(SCRATCH_LEN);
	if (scratch == NULL)
		abort();
	memset(scratch, 0x5a, SCRATCH_LEN);
	return 0;
}
