/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_verbs: the control path with a hostile application. The input is a
 * program of verbs calls with arbitrary arguments over a small table of
 * objects of its own (PDs, thread and parent domains, completion channels,
 * CQs, SRQs, QPs, MRs, MWs, AHs) on both devices and on a third context
 * that the program opens and closes with objects left on it (op 239:
 * ibv_close_device destroys them), interleaved with posts (ibv_post_send,
 * or ibv_wr_* on a QP made with builders), polls and engine turns, so
 * that objects are modified, resized, deregistered and destroyed while
 * traffic is in flight. After the program every object left is destroyed.
 *
 * What must hold:
 * - nothing crashes, ASan and UBSan stay quiet;
 * - a call that fails returns (or sets errno to) an errno rdma-core
 *   documents for it; ibv_rereg_mr one of enum ibv_rereg_mr_err_code;
 * - a PD, thread domain, CQ, SRQ or channel still in use cannot be freed
 *   (EBUSY), and once its users are gone it can;
 * - what a successful call reports holds: a QP's state after
 *   ibv_modify_qp, capacities at least those asked for;
 * - async events name live objects;
 * - no byte outside the registered part of the buffer arena changes (the
 *   guard after it and the canaries around it), and the fixed world of
 *   fz_env (its MRs' canaries, immutable MRs) stays intact;
 * - the DPDK heap holds no more than before once everything is destroyed.
 *
 * Input: a sequence of records, an op byte then its arguments (missing
 * bytes read as zero); at most MAX_OPS records an input.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <rte_malloc.h>

#include "fz_env.h"
#include "dt_heap.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_OPS		64
#define MAX_WR		4	/* work requests a post */
#define ARENA_MR	65536	/* registrations stay inside this */
#define ARENA_GUARD	4096	/* never registered: must not change */
#define ARENA_LEN	(ARENA_MR + ARENA_GUARD)
#define ARENA_FILL	0x5a

enum { NPD = 4, NTD = 2, NCH = 2, NCQ = 4, NSRQ = 2, NQP = 6, NMR = 6,
       NMW = 3, NAH = 3 };

static struct {
	struct ibv_pd *pd[NPD];		/* PDs and parent domains */
	struct ibv_pd *pd_base[NPD];	/* a parent domain's PD */
	struct ibv_td *pd_td[NPD];	/* a parent domain's thread domain */
	struct ibv_td *td[NTD];
	struct ibv_comp_channel *ch[NCH];
	struct ibv_cq *cq[NCQ];
	bool cq_ex[NCQ];
	uint64_t cq_wc_flags[NCQ];	/* what a CQE of an extended CQ has */
	struct ibv_pd *cq_pd[NCQ];	/* the parent domain it was made in */
	struct ibv_srq *srq[NSRQ];
	struct ibv_qp *qp[NQP];
	uint64_t qp_ops[NQP];		/* its send_ops_flags: ibv_wr_* */
	struct ibv_mr *mr[NMR];
	struct ibv_mw *mw[NMW];
	struct ibv_ah *ah[NAH];
} o;

static bool trace;		/* FZ_TRACE=1: each call and its result */
static uint8_t *arena_alloc;	/* canary | arena | canary */
static uint8_t *arena;
static struct dt_heap_watch heap_watch;	/* the DPDK heap with no object of ours */

#define DIE(...) do {							\
		fprintf(stderr, "fuzz_verbs: " __VA_ARGS__);		\
		fprintf(stderr, "\n");					\
		abort();						\
	} while (0)

#define TRACE(...) do {							\
		if (trace)						\
			fprintf(stderr, "fuzz_verbs: " __VA_ARGS__);	\
	} while (0)

/* A third context, on either device, that the program opens and closes
 * with objects left on it (ibv_close_device destroys them) */
static struct ibv_context *ctx_c;

static struct ibv_context *ctx_of(uint8_t sel)
{
	if ((sel & 3) == 2 && ctx_c != NULL)
		return ctx_c;
	return (sel & 3) == 3 ? fz.ctx_b : fz.ctx_a;
}

/* ------------------------------------------------------------ errnos */

/* The errnos a failing call may give: those rdma-core's man pages and
 * the kernel's uverbs give for bad arguments, exhaustion and objects in
 * use. Anything else (0 or a negative value above all) is a bug. */
static void want_errno(const char *call, int e)
{
	switch (e) {
	case EINVAL: case ENOMEM: case EBUSY: case EOPNOTSUPP: case ENOSYS:
	case EPERM: case EACCES: case EFAULT: case ENOENT: case EAGAIN:
	case ENODEV: case ERANGE: case EEXIST:
		return;
	default:
		DIE("%s failed with errno %d (%s)", call, e, strerror(e > 0 ? e : 0));
	}
}

static void check_ret(const char *call, int ret)
{
	if (ret)
		want_errno(call, ret);
}

/* --------------------------------------------------------- the world */

static bool pd_used(const struct ibv_pd *pd)
{
	for (int i = 0; i < NQP; i++)
		if (o.qp[i] && o.qp[i]->pd == pd)
			return true;
	for (int i = 0; i < NSRQ; i++)
		if (o.srq[i] && o.srq[i]->pd == pd)
			return true;
	for (int i = 0; i < NMR; i++)
		if (o.mr[i] && o.mr[i]->pd == pd)
			return true;
	for (int i = 0; i < NMW; i++)
		if (o.mw[i] && o.mw[i]->pd == pd)
			return true;
	for (int i = 0; i < NAH; i++)
		if (o.ah[i] && o.ah[i]->pd == pd)
			return true;
	for (int i = 0; i < NPD; i++)
		if (o.pd[i] && o.pd_base[i] == pd)
			return true;
	for (int i = 0; i < NCQ; i++)
		if (o.cq[i] && o.cq_pd[i] == pd)
			return true;
	return false;
}

static bool td_used(const struct ibv_td *td)
{
	for (int i = 0; i < NPD; i++)
		if (o.pd[i] && o.pd_td[i] == td)
			return true;
	return false;
}

static bool cq_used(const struct ibv_cq *cq)
{
	for (int i = 0; i < NQP; i++)
		if (o.qp[i] && (o.qp[i]->send_cq == cq || o.qp[i]->recv_cq == cq))
			return true;
	return false;
}

static bool srq_used(const struct ibv_srq *srq)
{
	for (int i = 0; i < NQP; i++)
		if (o.qp[i] && o.qp[i]->srq == srq)
			return true;
	return false;
}

static bool ch_used(const struct ibv_comp_channel *ch)
{
	for (int i = 0; i < NCQ; i++)
		if (o.cq[i] && o.cq[i]->channel == ch)
			return true;
	return false;
}

static bool is_live(const void *p)
{
	for (int i = 0; i < NQP; i++)
		if (p == o.qp[i])
			return true;
	for (int i = 0; i < NCQ; i++)
		if (p == o.cq[i])
			return true;
	for (int i = 0; i < NSRQ; i++)
		if (p == o.srq[i])
			return true;
	for (int i = 0; i < FZ_NQP; i++)
		if (p == fz.q[i].qp || p == fz.q[i].peer)
			return true;
	return p == fz.cq_a || p == fz.cq_b || p == fz.srq;
}

static void drain_async(struct ibv_context *ctx)
{
	struct ibv_async_event e;

	while (ibv_get_async_event(ctx, &e) == 0) {
		switch (e.event_type) {
		case IBV_EVENT_PORT_ACTIVE:
		case IBV_EVENT_PORT_ERR:
		case IBV_EVENT_DEVICE_FATAL:
			break;
		case IBV_EVENT_CQ_ERR:
			if (!is_live(e.element.cq))
				DIE("async event %d names a dead CQ", e.event_type);
			break;
		case IBV_EVENT_SRQ_ERR:
		case IBV_EVENT_SRQ_LIMIT_REACHED:
			if (!is_live(e.element.srq))
				DIE("async event %d names a dead SRQ", e.event_type);
			break;
		default:
			if (!is_live(e.element.qp))
				DIE("async event %d names a dead QP", e.event_type);
			break;
		}
		ibv_ack_async_event(&e);
	}
	if (errno != EAGAIN)
		DIE("ibv_get_async_event: %s", strerror(errno));
}

/* A CQE names a work request the program posted (0x7700 + i send,
 * 0x8800 + i receive, 0x9900 bind) with a known status and opcode. */
static void check_cqe(uint64_t wr_id, int status, int opcode)
{
	TRACE("  CQE wr_id 0x%" PRIx64 " status %d opcode %d\n", wr_id, status,
	      opcode);
	if (!((wr_id >= 0x7700 && wr_id < 0x7700 + MAX_WR) ||
	      (wr_id >= 0x8800 && wr_id < 0x8800 + MAX_WR) || wr_id == 0x9900))
		DIE("a CQE with wr_id 0x%" PRIx64 ", never posted", wr_id);
	if (status < 0 || status > IBV_WC_GENERAL_ERR)
		DIE("a CQE with status %d", status);
	if (status == IBV_WC_SUCCESS &&
	    !(opcode <= IBV_WC_FETCH_ADD || opcode == IBV_WC_BIND_MW ||
	      opcode == IBV_WC_LOCAL_INV || opcode == IBV_WC_RECV ||
	      opcode == IBV_WC_RECV_RDMA_WITH_IMM))
		DIE("a successful CQE with opcode %d", opcode);
}

static void poll_cq(int i, int max)
{
	struct ibv_cq *cq = o.cq[i];

	if (cq == NULL)
		return;
	if (o.cq_ex[i]) {
		struct ibv_cq_ex *x = (struct ibv_cq_ex *)cq;
		struct ibv_poll_cq_attr pa = { 0 };
		int ret = ibv_start_poll(x, &pa);

		if (ret == ENOENT)
			return;
		if (ret)
			DIE("ibv_start_poll: %d", ret);
		for (int n = 0; n < max; n++) {
			check_cqe(x->wr_id, x->status, ibv_wc_read_opcode(x));
			if (o.cq_wc_flags[i] & IBV_WC_EX_WITH_BYTE_LEN)
				(void)ibv_wc_read_byte_len(x);
			if (o.cq_wc_flags[i] & IBV_WC_EX_WITH_QP_NUM)
				(void)ibv_wc_read_qp_num(x);
			ret = ibv_next_poll(x);
			if (ret == ENOENT)
				break;
			if (ret)
				DIE("ibv_next_poll: %d", ret);
		}
		ibv_end_poll(x);
	} else {
		struct ibv_wc wc[16];
		int n = ibv_poll_cq(cq, RTE_MIN(max, 16), wc);

		if (n < 0)
			DIE("ibv_poll_cq: %d", n);
		for (int k = 0; k < n; k++)
			check_cqe(wc[k].wr_id, wc[k].status, wc[k].opcode);
	}
}

static void check_arena(const char *when)
{
	for (size_t k = 0; k < FZ_CANARY; k++)
		if (arena_alloc[k] != FZ_CANARY_BYTE ||
		    arena[ARENA_LEN + k] != FZ_CANARY_BYTE)
			DIE("%s: a canary around the arena changed", when);
	for (size_t k = ARENA_MR; k < ARENA_LEN; k++)
		if (arena[k] != ARENA_FILL)
			DIE("%s: the arena's guard changed at %zu", when,
			    k - ARENA_MR);
}

/* --------------------------------------------------------- arguments */

/* An address and length inside the registrable part of the arena. */
static void arena_range(struct fz_in *in, uint64_t *addr, uint64_t *len)
{
	uint32_t off = fz_u16(in) % ARENA_MR;
	uint32_t n = fz_u16(in);

	if (n > ARENA_MR - off)
		n = ARENA_MR - off;
	*addr = (uintptr_t)arena + off;
	*len = n;
}

static uint32_t pick_lkey(struct fz_in *in)
{
	uint8_t s = fz_u8(in);

	if (s < 0xf0) {
		struct ibv_mr *mr = o.mr[s % NMR];

		if (mr)
			return mr->lkey;
	}
	return fz_u32(in);
}

static uint32_t pick_rkey(struct fz_in *in)
{
	uint8_t s = fz_u8(in);

	if (s < 0x80) {
		struct ibv_mr *mr = o.mr[s % NMR];

		if (mr)
			return mr->rkey;
	} else if (s < 0xf0) {
		struct ibv_mw *mw = o.mw[s % NMW];

		if (mw)
			return mw->rkey;
	}
	return fz_u32(in);
}

/* A remote address: in the arena, as the iova of a registration, or any. */
static uint64_t pick_raddr(struct fz_in *in)
{
	uint8_t s = fz_u8(in);
	uint16_t off = fz_u16(in);

	if (s < 0xc0) {
		struct ibv_mr *mr = o.mr[s % NMR];

		if (mr)
			return (uintptr_t)mr->addr + off % 8192;
		return (uintptr_t)arena + off % ARENA_MR;
	}
	return fz_u64(in);
}

static uint32_t pick_qpn(struct fz_in *in)
{
	uint8_t s = fz_u8(in);

	if (s < 0xe0 && o.qp[s % NQP])
		return o.qp[s % NQP]->qp_num;
	return fz_u32(in);
}

/* A GID: the other device's or this one's (IPv4-mapped), or any bytes. */
static void pick_gid(struct fz_in *in, union ibv_gid *g)
{
	uint8_t s = fz_u8(in);

	memset(g, 0, sizeof(*g));
	if (s < 0xc0) {
		uint32_t ip = (s & 1) ? fz.ip_a : fz.ip_b;

		g->raw[10] = 0xff;
		g->raw[11] = 0xff;
		memcpy(&g->raw[12], &ip, 4);
	} else {
		for (int k = 0; k < 16; k++)
			g->raw[k] = fz_u8(in);
	}
}

static void pick_ah_attr(struct fz_in *in, struct ibv_ah_attr *a)
{
	uint8_t f = fz_u8(in);

	memset(a, 0, sizeof(*a));
	a->is_global = f & 0x80 ? 0 : 1;
	a->port_num = f & 0x40 ? (uint8_t)(fz_u8(in) % 4) : 1;
	a->grh.sgid_index = f & 0x20 ? fz_u8(in) : (uint8_t)(f & 1);
	a->grh.hop_limit = f & 0x10 ? fz_u8(in) : 64;
	a->grh.traffic_class = f & 0x08 ? fz_u8(in) : 0;
	a->grh.flow_label = f & 0x04 ? fz_u32(in) : 0;
	a->sl = f & 0x02 ? fz_u8(in) : 0;
	a->static_rate = f & 0x02 ? fz_u8(in) : 0;
	pick_gid(in, &a->grh.dgid);
}

static int pick_access(struct fz_in *in)
{
	uint8_t s = fz_u8(in);

	if (s & 0x80)
		return (int)fz_u32(in);
	return s & 0x3f;	/* LOCAL_WRITE .. MW_BIND, ZERO_BASED */
}

/* ------------------------------------------------------------- posts */

#define MAX_SG	5

static void fill_sges(struct fz_in *in, struct ibv_sge *sg, int n, bool inl)
{
	for (int k = 0; k < n; k++) {
		uint64_t addr, len;

		arena_range(in, &addr, &len);
		if (!inl && (fz_u8(in) & 0x80))
			addr = fz_u64(in);		/* the lkey must stop it */
		if (!inl)
			len = (len & 0xff) ? len % 5000 : fz_u32(in);
		sg[k].addr = addr;
		sg[k].length = (uint32_t)len;
		sg[k].lkey = pick_lkey(in);
	}
}

/*
 * The same work requests through ibv_wr_*: each through its builder when
 * the QP was made with it (calling one it was not made with is the
 * application's crash, as with mlx5), then its address vector (UD) and
 * its data, the list whole or in turn inline; completed, or aborted.
 */
static int post_wr_api(struct ibv_qp *qp, uint64_t ops, struct ibv_send_wr *wr,
		       bool abort_it)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(x);
	for (struct ibv_send_wr *w = wr; w != NULL; w = w->next) {
		struct ibv_data_buf db[MAX_SG];
		uint64_t need;

		x->wr_id = w->wr_id;
		x->wr_flags = w->send_flags & ~(unsigned int)IBV_SEND_INLINE;
		switch (w->opcode) {
		case IBV_WR_RDMA_WRITE: need = IBV_QP_EX_WITH_RDMA_WRITE; break;
		case IBV_WR_RDMA_WRITE_WITH_IMM: need = IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM; break;
		case IBV_WR_SEND: need = IBV_QP_EX_WITH_SEND; break;
		case IBV_WR_SEND_WITH_IMM: need = IBV_QP_EX_WITH_SEND_WITH_IMM; break;
		case IBV_WR_RDMA_READ: need = IBV_QP_EX_WITH_RDMA_READ; break;
		case IBV_WR_ATOMIC_CMP_AND_SWP: need = IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP; break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD: need = IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD; break;
		case IBV_WR_LOCAL_INV: need = IBV_QP_EX_WITH_LOCAL_INV; break;
		case IBV_WR_BIND_MW: need = IBV_QP_EX_WITH_BIND_MW; break;
		case IBV_WR_SEND_WITH_INV: need = IBV_QP_EX_WITH_SEND_WITH_INV; break;
		default: need = 0; break;
		}
		if (need == 0 || !(ops & need))
			continue;
		switch (w->opcode) {
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(x, w->wr.rdma.rkey, w->wr.rdma.remote_addr);
			break;
		case IBV_WR_RDMA_WRITE_WITH_IMM:
			ibv_wr_rdma_write_imm(x, w->wr.rdma.rkey,
					      w->wr.rdma.remote_addr, w->imm_data);
			break;
		case IBV_WR_SEND: ibv_wr_send(x); break;
		case IBV_WR_SEND_WITH_IMM: ibv_wr_send_imm(x, w->imm_data); break;
		case IBV_WR_RDMA_READ:
			ibv_wr_rdma_read(x, w->wr.rdma.rkey, w->wr.rdma.remote_addr);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			ibv_wr_atomic_cmp_swp(x, w->wr.atomic.rkey,
					      w->wr.atomic.remote_addr,
					      w->wr.atomic.compare_add,
					      w->wr.atomic.swap);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			ibv_wr_atomic_fetch_add(x, w->wr.atomic.rkey,
						w->wr.atomic.remote_addr,
						w->wr.atomic.compare_add);
			break;
		case IBV_WR_LOCAL_INV: ibv_wr_local_inv(x, w->invalidate_rkey); break;
		case IBV_WR_BIND_MW:
			ibv_wr_bind_mw(x, w->bind_mw.mw, w->bind_mw.rkey,
				       &w->bind_mw.bind_info);
			break;
		default: ibv_wr_send_inv(x, w->invalidate_rkey); break;
		}
		if (qp->qp_type == IBV_QPT_UD)
			ibv_wr_set_ud_addr(x, w->wr.ud.ah, w->wr.ud.remote_qpn,
					   w->wr.ud.remote_qkey);
		if (w->opcode == IBV_WR_BIND_MW || w->opcode == IBV_WR_LOCAL_INV)
			continue;
		if (!(w->send_flags & IBV_SEND_INLINE)) {
			ibv_wr_set_sge_list(x, (size_t)w->num_sge, w->sg_list);
			continue;
		}
		for (int k = 0; k < w->num_sge; k++) {
			db[k].addr = (void *)(uintptr_t)w->sg_list[k].addr;
			db[k].length = w->sg_list[k].length;
		}
		ibv_wr_set_inline_data_list(x, (size_t)w->num_sge, db);
	}
	if (abort_it) {
		ibv_wr_abort(x);
		return 0;
	}
	return ibv_wr_complete(x);
}

static void op_post_send(struct fz_in *in)
{
	static const enum ibv_wr_opcode ops[] = {
		IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND,
		IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ,
		IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
		IBV_WR_LOCAL_INV, IBV_WR_BIND_MW, IBV_WR_SEND_WITH_INV,
	};
	uint8_t q = fz_u8(in);
	struct ibv_qp *qp = o.qp[q % NQP];
	/* the QP made with builders: through them, when the op says so */
	bool wr_api = (q & 0x80) && qp != NULL && o.qp_ops[q % NQP];
	struct ibv_send_wr wr[MAX_WR], *bad = NULL;
	struct ibv_sge sg[MAX_WR][MAX_SG];
	int nwr = 1 + fz_u8(in) % MAX_WR, ret;

	if (qp == NULL)
		return;
	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < nwr; i++) {
		uint8_t s = fz_u8(in);
		struct ibv_send_wr *w = &wr[i];

		w->wr_id = 0x7700 + (uint64_t)i;
		w->opcode = s < 0xf8 ? ops[s % RTE_DIM(ops)] :
				       (enum ibv_wr_opcode)fz_u8(in);
		w->send_flags = fz_u8(in) & (IBV_SEND_FENCE | IBV_SEND_SIGNALED |
					  IBV_SEND_SOLICITED | IBV_SEND_INLINE);
		w->num_sge = fz_u8(in) % (MAX_SG + 1);
		w->sg_list = sg[i];
		fill_sges(in, sg[i], w->num_sge, w->send_flags & IBV_SEND_INLINE);
		w->imm_data = fz_u32(in);
		if (i + 1 < nwr)
			w->next = &wr[i + 1];
		switch (w->opcode) {
		case IBV_WR_ATOMIC_CMP_AND_SWP:
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			w->wr.atomic.remote_addr = pick_raddr(in);
			w->wr.atomic.rkey = pick_rkey(in);
			w->wr.atomic.compare_add = fz_u64(in);
			w->wr.atomic.swap = fz_u64(in);
			break;
		case IBV_WR_BIND_MW: {
			struct ibv_mw *mw = o.mw[fz_u8(in) % NMW];
			struct ibv_mr *mr = o.mr[fz_u8(in) % NMR];
			uint64_t addr, len;

			if (mw == NULL || mr == NULL) {	/* an application's crash */
				w->opcode = IBV_WR_SEND;
				break;
			}
			w->bind_mw.mw = mw;
			w->bind_mw.rkey = fz_u8(in) & 0x80 ? fz_u32(in) :
					  ibv_inc_rkey(mw->rkey);
			w->bind_mw.bind_info.mr = mr;
			arena_range(in, &addr, &len);
			w->bind_mw.bind_info.addr = addr;
			w->bind_mw.bind_info.length = len;
			w->bind_mw.bind_info.mw_access_flags =
				(unsigned int)pick_access(in);
			break;
		}
		case IBV_WR_LOCAL_INV:
		case IBV_WR_SEND_WITH_INV:
			w->invalidate_rkey = pick_rkey(in);
			break;
		default:
			w->wr.rdma.remote_addr = pick_raddr(in);
			w->wr.rdma.rkey = pick_rkey(in);
			break;
		}
		if (qp->qp_type == IBV_QPT_UD) {
			struct ibv_ah *ah = o.ah[fz_u8(in) % NAH];

			if (ah == NULL)		/* an application's crash */
				return;
			w->wr.ud.ah = ah;
			w->wr.ud.remote_qpn = pick_qpn(in);
			w->wr.ud.remote_qkey = fz_u8(in) & 1 ? fz_u32(in) : 0x11111111;
		}
	}
	if (wr_api) {
		ret = post_wr_api(qp, o.qp_ops[q % NQP], wr, q & 0x40);
		TRACE("ibv_wr_* QP 0x%x %d WRs, first opcode %d, %s: %d\n",
		      qp->qp_num, nwr, wr[0].opcode,
		      q & 0x40 ? "aborted" : "completed", ret);
		if (ret)
			want_errno("ibv_wr_complete", ret);
		return;
	}
	ret = ibv_post_send(qp, wr, &bad);
	TRACE("post_send QP 0x%x %d WRs, first opcode %d: %d\n", qp->qp_num,
	      nwr, wr[0].opcode, ret);
	if (ret) {
		want_errno("ibv_post_send", ret);
		if (bad < wr || bad >= wr + nwr)
			DIE("ibv_post_send: bad_wr outside the list");
	}
}

static void op_post_recv(struct fz_in *in)
{
	uint8_t s = fz_u8(in);
	struct ibv_recv_wr wr[MAX_WR], *bad = NULL;
	struct ibv_sge sg[MAX_WR][MAX_SG];
	int nwr = 1 + fz_u8(in) % MAX_WR, ret;

	memset(wr, 0, sizeof(wr));
	for (int i = 0; i < nwr; i++) {
		wr[i].wr_id = 0x8800 + (uint64_t)i;
		wr[i].num_sge = fz_u8(in) % (MAX_SG + 1);
		wr[i].sg_list = sg[i];
		fill_sges(in, sg[i], wr[i].num_sge, false);
		if (i + 1 < nwr)
			wr[i].next = &wr[i + 1];
	}
	if (s & 0x80) {
		struct ibv_srq *srq = o.srq[s % NSRQ];

		if (srq == NULL)
			return;
		ret = ibv_post_srq_recv(srq, wr, &bad);
	} else {
		struct ibv_qp *qp = o.qp[s % NQP];

		if (qp == NULL)
			return;
		ret = ibv_post_recv(qp, wr, &bad);
	}
	TRACE("post_recv %d WRs: %d\n", nwr, ret);
	if (ret) {
		want_errno("ibv_post_recv", ret);
		if (bad < wr || bad >= wr + nwr)
			DIE("ibv_post_recv: bad_wr outside the list");
	}
}

/* -------------------------------------------------------------- QPs */

/* To ERR first: a QP of an app-driven device destroyed while it talks
 * lingers (rdma_qp.c linger; 1 ms of quiet here, fz_env's linger_ms) for
 * its peer's last requests; op_destroy_qp does that now and then, the
 * cleanup never. */
static void qp_to_err(struct ibv_qp *qp)
{
	struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };
	int ret;

	if (qp->state == IBV_QPS_RESET)	/* RESET -> ERR is no transition */
		return;
	ret = ibv_modify_qp(qp, &a, IBV_QP_STATE);
	if (ret)
		DIE("ibv_modify_qp to ERR: %d", ret);
}

static void op_create_qp(struct fz_in *in)
{
	static const enum ibv_qp_type types[] = {
		IBV_QPT_RC, IBV_QPT_UC, IBV_QPT_UD, IBV_QPT_RC,
	};
	int slot = fz_u8(in) % NQP;
	uint8_t f = fz_u8(in);
	struct ibv_pd *pd = o.pd[fz_u8(in) % NPD];
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp_cap want;
	struct ibv_qp *qp;
	uint8_t c = fz_u8(in);

	if (o.qp[slot] || pd == NULL)
		return;
	memset(&a, 0, sizeof(a));
	a.qp_type = f & 0x80 ? (enum ibv_qp_type)fz_u8(in) : types[f & 3];
	a.send_cq = (c & 0x40) ? NULL : o.cq[c % NCQ];
	a.recv_cq = (c & 0x80) ? a.send_cq : o.cq[(c >> 2) % NCQ];
	a.srq = (f & 0x10) ? o.srq[(f >> 2) % NSRQ] : NULL;
	if (f & 0x20) {
		a.cap.max_send_wr = fz_u16(in);
		a.cap.max_recv_wr = fz_u16(in);
		a.cap.max_send_sge = fz_u8(in);
		a.cap.max_recv_sge = fz_u8(in);
		a.cap.max_inline_data = fz_u16(in);
	} else {
		a.cap.max_send_wr = fz_u8(in) % 70;
		a.cap.max_recv_wr = fz_u8(in) % 70;
		a.cap.max_send_sge = fz_u8(in) % 6;
		a.cap.max_recv_sge = fz_u8(in) % 6;
		a.cap.max_inline_data = fz_u8(in) % 4 * 100;
	}
	a.sq_sig_all = f & 0x08 ? 1 : 0;
	want = a.cap;
	if (f & 0x40) {
		a.comp_mask = IBV_QP_INIT_ATTR_PD;
		a.pd = pd;
		if (fz_u8(in) & 1) {
			a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			a.send_ops_flags = fz_u16(in);
		}
		if (fz_u8(in) & 1)
			a.comp_mask |= fz_u32(in);
		if (fz_u8(in) & 1)
			a.create_flags = fz_u32(in);
		qp = ibv_create_qp_ex(pd->context, &a);
	} else {
		struct ibv_qp_init_attr b;

		memset(&b, 0, sizeof(b));
		b.qp_type = a.qp_type;
		b.send_cq = a.send_cq;
		b.recv_cq = a.recv_cq;
		b.srq = a.srq;
		b.cap = a.cap;
		b.sq_sig_all = a.sq_sig_all;
		qp = ibv_create_qp(pd, &b);
		a.cap = b.cap;
	}
	TRACE("create_qp type %d: %s 0x%x\n", a.qp_type,
	      qp ? "QP" : strerror(errno), qp ? qp->qp_num : 0);
	if (qp == NULL) {
		want_errno("ibv_create_qp", errno);
		return;
	}
	if (a.cap.max_send_wr < want.max_send_wr ||
	    a.cap.max_send_sge < want.max_send_sge ||
	    a.cap.max_inline_data < want.max_inline_data ||
	    (a.srq == NULL && (a.cap.max_recv_wr < want.max_recv_wr ||
			       a.cap.max_recv_sge < want.max_recv_sge)))
		DIE("ibv_create_qp: capacities below those asked for");
	if (qp->state != IBV_QPS_RESET || qp->pd != pd)
		DIE("ibv_create_qp: a new QP not in RESET or not on its PD");
	/* Objects of another context are not the caller's (uverbs looks
	 * handles up in the caller's file: EINVAL); of another device they
	 * would be written by another engine. */
	if (a.send_cq->context != pd->context ||
	    a.recv_cq->context != pd->context ||
	    (a.srq && a.srq->context != pd->context))
		DIE("ibv_create_qp took a CQ or SRQ of another context");
	o.qp[slot] = qp;
	o.qp_ops[slot] = a.comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS ?
			 a.send_ops_flags : 0;
}

static void op_destroy_qp(struct fz_in *in)
{
	uint8_t s = fz_u8(in);
	int slot = s % NQP;
	int ret;

	if (o.qp[slot] == NULL)
		return;
	/* Now and then as it is, to linger (few, for the rate). */
	if ((s & 0xe0) != 0xe0)
		qp_to_err(o.qp[slot]);
	ret = ibv_destroy_qp(o.qp[slot]);
	if (ret)
		DIE("ibv_destroy_qp: %d", ret);
	o.qp[slot] = NULL;
}

static void op_modify_qp(struct fz_in *in)
{
	static const int mask_of[] = {
		/* RESET->INIT */
		IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
		IBV_QP_ACCESS_FLAGS,
		/* INIT->RTR */
		IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
		IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
		IBV_QP_MIN_RNR_TIMER,
		/* RTR->RTS */
		IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
		IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
		/* UD */
		IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
		IBV_QP_STATE,
		IBV_QP_STATE | IBV_QP_SQ_PSN,
	};
	static const enum ibv_qp_state next_of[] = {
		IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_INIT,
	};
	struct ibv_qp *qp = o.qp[fz_u8(in) % NQP];
	uint8_t f = fz_u8(in), g = fz_u8(in);
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	int mask, ret;

	if (qp == NULL)
		return;
	memset(&a, 0, sizeof(a));
	if (f & 0x80)
		mask = (int)(fz_u32(in) & ((IBV_QP_RATE_LIMIT << 1) - 1));
	else
		mask = mask_of[f % RTE_DIM(mask_of)];
	a.qp_state = (g & 0x80) ? (enum ibv_qp_state)(fz_u8(in) % 9) :
		     (f % RTE_DIM(mask_of)) < RTE_DIM(next_of) ?
		     next_of[f % RTE_DIM(mask_of)] : (enum ibv_qp_state)(g % 7);
	a.cur_qp_state = (enum ibv_qp_state)(fz_u8(in) % 8);
	a.path_mtu = (g & 0x40) ? (enum ibv_mtu)fz_u8(in) :
				  (enum ibv_mtu)(1 + g % 5);
	a.qkey = 0x11111111;
	a.rq_psn = (g & 0x20) ? fz_u32(in) : 0x100;
	a.sq_psn = (g & 0x20) ? fz_u32(in) : 0x100;
	a.dest_qp_num = pick_qpn(in);
	a.qp_access_flags = (unsigned int)pick_access(in);
	pick_ah_attr(in, &a.ah_attr);
	if (mask & IBV_QP_ALT_PATH)
		pick_ah_attr(in, &a.alt_ah_attr);
	a.pkey_index = (uint16_t)(fz_u8(in) % 3);
	a.alt_pkey_index = 0;
	a.en_sqd_async_notify = fz_u8(in) & 1;
	a.sq_draining = 0;
	if (g & 0x10) {
		a.max_rd_atomic = fz_u8(in);
		a.max_dest_rd_atomic = fz_u8(in);
		a.min_rnr_timer = fz_u8(in);
		a.timeout = fz_u8(in);
		a.retry_cnt = fz_u8(in);
		a.rnr_retry = fz_u8(in);
	} else {
		a.max_rd_atomic = 4;
		a.max_dest_rd_atomic = 4;
		a.min_rnr_timer = 1;
		a.timeout = (uint8_t)(g & 0x0f);	/* 0: no timeout */
		a.retry_cnt = 7;
		a.rnr_retry = (uint8_t)(g & 7);
	}
	a.port_num = (uint8_t)((g & 8) ? fz_u8(in) % 3 : 1);
	a.alt_port_num = 1;
	a.path_mig_state = (enum ibv_mig_state)(fz_u8(in) % 4);
	a.rate_limit = fz_u32(in);
	ret = ibv_modify_qp(qp, &a, mask);
	TRACE("modify_qp 0x%x mask 0x%x state %d: %d\n", qp->qp_num, mask,
	      a.qp_state, ret);
	if (ret) {
		want_errno("ibv_modify_qp", ret);
		return;
	}
	memset(&q, 0, sizeof(q));
	ret = ibv_query_qp(qp, &q, mask, &qi);
	if (ret)
		DIE("ibv_query_qp after a modify: %d", ret);
	if ((mask & IBV_QP_STATE) && q.qp_state != a.qp_state &&
	    q.qp_state != IBV_QPS_ERR)
		DIE("ibv_modify_qp to state %d succeeded, ibv_query_qp says %d",
		    a.qp_state, q.qp_state);
	/* What was accepted is what is reported, to the width of its IBTA
	 * field (mlx5 and rxe keep those bits of a wider value: a PSN's 24,
	 * the retry counts' 3, the timers' 5). */
#define SAME(bit, field, width) do {					\
		uint64_t m_ = (1ull << (width)) - 1;			\
									\
		if ((mask & (bit)) &&					\
		    ((uint64_t)q.field & m_) != ((uint64_t)a.field & m_)) \
			DIE("ibv_modify_qp took " #field " %llu, "	\
			    "ibv_query_qp says %llu",			\
			    (unsigned long long)a.field,		\
			    (unsigned long long)q.field);		\
	} while (0)
	SAME(IBV_QP_SQ_PSN, sq_psn, 24);
	SAME(IBV_QP_RQ_PSN, rq_psn, 24);
	SAME(IBV_QP_DEST_QPN, dest_qp_num, 24);
	SAME(IBV_QP_QKEY, qkey, 32);
	SAME(IBV_QP_PATH_MTU, path_mtu, 32);
	SAME(IBV_QP_TIMEOUT, timeout, 5);
	SAME(IBV_QP_RETRY_CNT, retry_cnt, 3);
	SAME(IBV_QP_RNR_RETRY, rnr_retry, 3);
	SAME(IBV_QP_MIN_RNR_TIMER, min_rnr_timer, 5);
	SAME(IBV_QP_ACCESS_FLAGS, qp_access_flags, 32);
	SAME(IBV_QP_PKEY_INDEX, pkey_index, 16);
#undef SAME
	if (((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	     q.max_rd_atomic < a.max_rd_atomic) ||
	    ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	     q.max_dest_rd_atomic < a.max_dest_rd_atomic))
		DIE("ibv_modify_qp: fewer reads and atomics than asked for");
}

static void op_query_qp(struct fz_in *in)
{
	struct ibv_qp *qp = o.qp[fz_u8(in) % NQP];
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr qi;

	if (qp == NULL)
		return;
	check_ret("ibv_query_qp", ibv_query_qp(qp, &a, (int)fz_u32(in), &qi));
}

static void op_rate_limit(struct fz_in *in)
{
	struct ibv_qp *qp = o.qp[fz_u8(in) % NQP];
	struct ibv_qp_rate_limit_attr a = { 0 };

	if (qp == NULL)
		return;
	a.rate_limit = fz_u8(in) & 0x80 ? fz_u32(in) : (uint32_t)fz_u8(in) * 1000;
	a.max_burst_sz = fz_u8(in) & 1 ? fz_u32(in) : 0;
	a.typical_pkt_sz = fz_u8(in) & 1 ? fz_u16(in) : 0;
	a.comp_mask = fz_u8(in) & 0x80 ? fz_u32(in) : 0;
	check_ret("ibv_modify_qp_rate_limit", ibv_modify_qp_rate_limit(qp, &a));
}

static void op_mcast(struct fz_in *in)
{
	struct ibv_qp *qp = o.qp[fz_u8(in) % NQP];
	union ibv_gid g;
	uint16_t lid = fz_u16(in);
	uint8_t s = fz_u8(in);

	if (qp == NULL)
		return;
	pick_gid(in, &g);
	if (s & 1)
		g.raw[0] = 0xff;	/* a multicast GID */
	if (s & 2)
		check_ret("ibv_detach_mcast", ibv_detach_mcast(qp, &g, lid));
	else
		check_ret("ibv_attach_mcast", ibv_attach_mcast(qp, &g, lid));
}

/* --------------------------------------------------- CQs and friends */

static void op_create_cq(struct fz_in *in)
{
	int slot = fz_u8(in) % NCQ;
	uint8_t f = fz_u8(in);
	struct ibv_context *ctx = ctx_of(f);
	struct ibv_comp_channel *ch = (f & 0x10) ? o.ch[(f >> 5) % NCH] : NULL;
	uint32_t cqe = (f & 0x08) ? fz_u32(in) : fz_u8(in);
	int vec = (f & 0x04) ? fz_u8(in) : 0;
	struct ibv_cq *cq;

	if (o.cq[slot])
		return;
	o.cq_pd[slot] = NULL;
	o.cq_wc_flags[slot] = 0;
	if (f & 0x80) {
		struct ibv_cq_init_attr_ex a;

		memset(&a, 0, sizeof(a));
		a.cqe = cqe;
		a.channel = ch;
		a.comp_vector = (uint32_t)vec;
		a.wc_flags = fz_u8(in) & 0x80 ? fz_u64(in) :
			     IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_QP_NUM;
		a.comp_mask = fz_u8(in) & 0x80 ? fz_u32(in) : 0;
		a.flags = fz_u8(in) & 0x80 ? fz_u32(in) : 0;
		if (a.comp_mask & IBV_CQ_INIT_ATTR_MASK_PD)
			a.parent_domain = o.pd[fz_u8(in) % NPD];
		cq = (struct ibv_cq *)ibv_create_cq_ex(ctx, &a);
		o.cq_wc_flags[slot] = a.wc_flags;
		o.cq_pd[slot] = cq && (a.comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) ?
				a.parent_domain : NULL;
	} else {
		cq = ibv_create_cq(ctx, (int)cqe, NULL, ch, vec);
	}
	TRACE("create_cq %u in parent domain %p: %s\n", cqe,
	      (void *)o.cq_pd[slot], cq ? "ok" : strerror(errno));
	if (cq == NULL) {
		want_errno("ibv_create_cq", errno);
		return;
	}
	if (cq->cqe < (int)RTE_MIN(cqe, (uint32_t)INT32_MAX))
		DIE("ibv_create_cq: %d entries, %u asked for", cq->cqe, cqe);
	o.cq[slot] = cq;
	o.cq_ex[slot] = f & 0x80;
}

static void op_destroy_cq(struct fz_in *in)
{
	int slot = fz_u8(in) % NCQ;
	struct ibv_cq *cq = o.cq[slot];
	bool used;
	int ret;

	if (cq == NULL)
		return;
	used = cq_used(cq);
	ret = ibv_destroy_cq(cq);
	TRACE("destroy_cq slot %d (in use: %d): %d\n", slot, used, ret);
	if (used) {
		if (ret != EBUSY)
			DIE("ibv_destroy_cq of a CQ in use: %d, not EBUSY", ret);
		return;
	}
	if (ret)
		DIE("ibv_destroy_cq: %d", ret);
	o.cq[slot] = NULL;
}

static void op_resize_cq(struct fz_in *in)
{
	struct ibv_cq *cq = o.cq[fz_u8(in) % NCQ];
	uint32_t n = fz_u8(in) & 0x80 ? fz_u32(in) : fz_u8(in);
	int ret;

	if (cq == NULL)
		return;
	ret = ibv_resize_cq(cq, (int)n);
	if (ret) {
		want_errno("ibv_resize_cq", ret);
		return;
	}
	if ((uint32_t)cq->cqe < n)
		DIE("ibv_resize_cq: %d entries, %u asked for", cq->cqe, n);
}

static void op_cq_misc(struct fz_in *in)
{
	int slot = fz_u8(in) % NCQ;
	uint8_t f = fz_u8(in);

	if (o.cq[slot] == NULL)
		return;
	if (f & 1) {
		check_ret("ibv_req_notify_cq",
			  ibv_req_notify_cq(o.cq[slot], (f >> 1) & 1));
	} else if (f & 2) {
		struct ibv_modify_cq_attr a;

		a.attr_mask = fz_u8(in);	/* one read a statement: in order */
		a.moderate.cq_count = fz_u16(in);
		a.moderate.cq_period = fz_u16(in);

		check_ret("ibv_modify_cq", ibv_modify_cq(o.cq[slot], &a));
	} else {
		poll_cq(slot, 1 + f % 64);
	}
}

static void op_channel(struct fz_in *in)
{
	int slot = fz_u8(in) % NCH;
	uint8_t f = fz_u8(in);
	bool used;
	int ret;

	if (o.ch[slot] == NULL) {
		o.ch[slot] = ibv_create_comp_channel(ctx_of(f));
		if (o.ch[slot] == NULL)
			want_errno("ibv_create_comp_channel", errno);
		return;
	}
	used = ch_used(o.ch[slot]);
	ret = ibv_destroy_comp_channel(o.ch[slot]);
	if (used) {
		if (ret != EBUSY)
			DIE("ibv_destroy_comp_channel in use: %d", ret);
		return;
	}
	if (ret)
		DIE("ibv_destroy_comp_channel: %d", ret);
	o.ch[slot] = NULL;
}

/* -------------------------------------------------------------- SRQs */

static void op_srq(struct fz_in *in)
{
	int slot = fz_u8(in) % NSRQ;
	uint8_t f = fz_u8(in);
	struct ibv_srq *srq = o.srq[slot];
	struct ibv_srq_attr a;
	int ret;

	memset(&a, 0, sizeof(a));
	a.max_wr = f & 0x08 ? fz_u32(in) : fz_u8(in);
	a.max_sge = f & 0x08 ? fz_u32(in) : fz_u8(in) % 6;
	a.srq_limit = f & 0x04 ? fz_u32(in) : fz_u8(in) % 8;
	if (srq == NULL) {
		struct ibv_pd *pd = o.pd[(f >> 4) % NPD];
		struct ibv_srq_init_attr ia = { .attr = a };

		if (pd == NULL)
			return;
		srq = ibv_create_srq(pd, &ia);
		if (srq == NULL) {
			want_errno("ibv_create_srq", errno);
			return;
		}
		if (ia.attr.max_wr < a.max_wr || ia.attr.max_sge < a.max_sge)
			DIE("ibv_create_srq: capacities below those asked for");
		o.srq[slot] = srq;
		return;
	}
	switch (f & 3) {
	case 0: {
		bool used = srq_used(srq);

		ret = ibv_destroy_srq(srq);
		if (used) {
			if (ret != EBUSY)
				DIE("ibv_destroy_srq in use: %d", ret);
			return;
		}
		if (ret)
			DIE("ibv_destroy_srq: %d", ret);
		o.srq[slot] = NULL;
		break;
	}
	case 1:
		check_ret("ibv_modify_srq",
			  ibv_modify_srq(srq, &a, (int)(fz_u8(in) & 7)));
		break;
	default:
		check_ret("ibv_query_srq", ibv_query_srq(srq, &a));
		break;
	}
}

/* ------------------------------------------------ PDs, MRs, MWs, AHs */

/*
 * f: bits 0-1 the context, 0x40 a parent domain over PD slot (f >> 2) & 3
 * (in the base's context unless 0x80), with thread domain (f >> 4) & 1 if
 * 0x20 (made first if there is none). On a taken slot, 0x40 frees that
 * thread domain instead of the PD.
 */
static void op_pd(struct fz_in *in)
{
	int slot = fz_u8(in) % NPD;
	uint8_t f = fz_u8(in);
	int t = (f >> 4) & 1;
	bool used;
	int ret;

	if (o.pd[slot] == NULL && (f & 0x40)) {
		struct ibv_parent_domain_init_attr pa;
		struct ibv_pd *base = o.pd[(f >> 2) % NPD];

		if (base == NULL)
			return;
		if ((f & 0x20) && o.td[t] == NULL) {
			struct ibv_td_init_attr ta = { .comp_mask = 0 };

			o.td[t] = ibv_alloc_td(base->context, &ta);
			if (o.td[t] == NULL)
				DIE("ibv_alloc_td: %s", strerror(errno));
		}
		memset(&pa, 0, sizeof(pa));
		pa.pd = base;
		pa.td = (f & 0x20) ? o.td[t] : NULL;
		pa.comp_mask = fz_u8(in) & 0x80 ? fz_u32(in) : 0;
		o.pd[slot] = ibv_alloc_parent_domain(f & 0x80 ? ctx_of(f) :
						     base->context, &pa);
		TRACE("alloc_parent_domain slot %d over slot %d, td %p: %s %p\n",
		      slot, (f >> 2) % NPD, (void *)pa.td,
		      o.pd[slot] ? "ok" : strerror(errno), (void *)o.pd[slot]);
		if (o.pd[slot] == NULL) {
			want_errno("ibv_alloc_parent_domain", errno);
			return;
		}
		if (o.pd_base[(f >> 2) % NPD] ||
		    o.pd[slot]->context != base->context)
			DIE("ibv_alloc_parent_domain over a parent domain or "
			    "a PD of another context");
		o.pd_base[slot] = base;
		o.pd_td[slot] = pa.td;
		return;
	}
	if (o.pd[slot] == NULL) {
		o.pd[slot] = ibv_alloc_pd(ctx_of(f));
		TRACE("alloc_pd slot %d: %p\n", slot, (void *)o.pd[slot]);
		if (o.pd[slot] == NULL)
			want_errno("ibv_alloc_pd", errno);
		return;
	}
	if ((f & 0x40) && o.td[t]) {
		used = td_used(o.td[t]);
		ret = ibv_dealloc_td(o.td[t]);
		if (used ? ret != EBUSY : ret != 0)
			DIE("ibv_dealloc_td (in use: %d): %d", used, ret);
		if (!used)
			o.td[t] = NULL;
		return;
	}
	used = pd_used(o.pd[slot]);
	ret = ibv_dealloc_pd(o.pd[slot]);
	TRACE("dealloc_pd slot %d (in use: %d): %d\n", slot, used, ret);
	if (used) {
		if (ret != EBUSY)
			DIE("ibv_dealloc_pd of a PD in use: %d, not EBUSY", ret);
		return;
	}
	if (ret)
		DIE("ibv_dealloc_pd: %d", ret);
	o.pd[slot] = NULL;
	o.pd_base[slot] = NULL;
	o.pd_td[slot] = NULL;
}

static void op_mr(struct fz_in *in)
{
	int slot = fz_u8(in) % NMR;
	uint8_t f = fz_u8(in);
	struct ibv_pd *pd = o.pd[(f >> 4) % NPD];
	uint64_t addr, len;
	int access, ret;

	arena_range(in, &addr, &len);
	access = pick_access(in);
	if (o.mr[slot] == NULL) {
		struct ibv_mr *mr;

		if (pd == NULL)
			return;
		if (f & 1)
			mr = ibv_reg_mr_iova(pd, (void *)(uintptr_t)addr, len,
					     fz_u64(in), access);
		else
			mr = ibv_reg_mr(pd, (void *)(uintptr_t)addr, len, access);
		TRACE("reg_mr %" PRIu64 " bytes: %s\n", len,
		      mr ? "ok" : strerror(errno));
		if (mr == NULL) {
			want_errno("ibv_reg_mr", errno);
			return;
		}
		if (mr->pd != pd || mr->addr != (void *)(uintptr_t)addr ||
		    mr->length != len)
			DIE("ibv_reg_mr: the MR does not say what was registered");
		o.mr[slot] = mr;
		return;
	}
	if (f & 2) {
		int flags = (f & 4) ? (int)fz_u32(in) : (int)(fz_u8(in) & 7);

		ret = ibv_rereg_mr(o.mr[slot], flags, pd, (void *)(uintptr_t)addr,
				   len, access);
		if (ret < IBV_REREG_MR_ERR_CMD_AND_DO_FORK_NEW || ret > 0)
			DIE("ibv_rereg_mr: %d is not an ibv_rereg_mr_err_code", ret);
		if (ret)
			want_errno("ibv_rereg_mr", errno);
		return;
	}
	ret = ibv_dereg_mr(o.mr[slot]);
	if (ret) {
		/* EBUSY: type-1 windows still bound (as mlx5, IBTA 10.6.7) */
		want_errno("ibv_dereg_mr", ret);
		return;
	}
	o.mr[slot] = NULL;
}

static void op_mw(struct fz_in *in)
{
	int slot = fz_u8(in) % NMW;
	uint8_t f = fz_u8(in);

	if (o.mw[slot] == NULL) {
		struct ibv_pd *pd = o.pd[(f >> 4) % NPD];

		if (pd == NULL)
			return;
		o.mw[slot] = ibv_alloc_mw(pd, (f & 8) ? (enum ibv_mw_type)fz_u8(in) :
					  (enum ibv_mw_type)(1 + (f & 1)));
		if (o.mw[slot] == NULL)
			want_errno("ibv_alloc_mw", errno);
		return;
	}
	if (f & 2) {
		struct ibv_qp *qp = o.qp[fz_u8(in) % NQP];
		struct ibv_mr *mr = o.mr[fz_u8(in) % NMR];
		struct ibv_mw_bind b;
		uint64_t addr, len;

		if (qp == NULL)
			return;
		memset(&b, 0, sizeof(b));
		b.wr_id = 0x9900;
		b.send_flags = fz_u8(in) & IBV_SEND_SIGNALED;
		b.bind_info.mr = mr;
		arena_range(in, &addr, &len);
		b.bind_info.addr = addr;
		b.bind_info.length = mr ? len : 0;	/* no MR: an unbind */
		b.bind_info.mw_access_flags = (unsigned int)pick_access(in);
		check_ret("ibv_bind_mw", ibv_bind_mw(qp, o.mw[slot], &b));
		return;
	}
	check_ret("ibv_dealloc_mw", ibv_dealloc_mw(o.mw[slot]));
	o.mw[slot] = NULL;
}

static void op_ah(struct fz_in *in)
{
	int slot = fz_u8(in) % NAH;
	uint8_t f = fz_u8(in);
	struct ibv_ah_attr a;

	if (o.ah[slot] == NULL) {
		struct ibv_pd *pd = o.pd[(f >> 4) % NPD];

		if (pd == NULL)
			return;
		pick_ah_attr(in, &a);
		o.ah[slot] = ibv_create_ah(pd, &a);
		TRACE("create_ah: %s\n", o.ah[slot] ? "ok" : strerror(errno));
		if (o.ah[slot] == NULL)
			want_errno("ibv_create_ah", errno);
		return;
	}
	check_ret("ibv_destroy_ah", ibv_destroy_ah(o.ah[slot]));
	o.ah[slot] = NULL;
}

static void op_query(struct fz_in *in)
{
	uint8_t f = fz_u8(in);
	struct ibv_context *ctx = ctx_of(f);
	uint8_t port = (f & 0x10) ? fz_u8(in) : 1;

	/* A device destroyed under the program: the harness's two hold
	 * contexts (EBUSY), every other index names none (ENODEV); either
	 * way nothing may change. */
	if (f & 0x20) {
		int idx = (int8_t)fz_u8(in);
		int want = idx == 0 || idx == 1 ? -EBUSY : -ENODEV;
		int ret = droce_dev_destroy(idx);

		if (ret != want || droce_dev_count() != 2)
			DIE("droce_dev_destroy(%d) = %d, %d devices left; expected %d",
			    idx, ret, droce_dev_count(), want);
		return;
	}
	switch ((f >> 2) & 3) {
	case 0: {
		struct ibv_port_attr pa;

		check_ret("ibv_query_port", ibv_query_port(ctx, port, &pa));
		break;
	}
	case 1: {
		union ibv_gid g;

		check_ret("ibv_query_gid", ibv_query_gid(ctx, port, fz_u8(in), &g) ?
			  EINVAL : 0);
		break;
	}
	case 2: {
		__be16 pkey;

		check_ret("ibv_query_pkey",
			  ibv_query_pkey(ctx, port, fz_u8(in), &pkey) ? EINVAL : 0);
		break;
	}
	default: {
		struct ibv_device_attr_ex da;

		check_ret("ibv_query_device_ex",
			  ibv_query_device_ex(ctx, NULL, &da));
		break;
	}
	}
}

/* Open the third context, or close it with whatever the program left on
 * it: the table forgets those objects first (they go with it). */
static void ctx_c_close(void)
{
	struct ibv_context *c = ctx_c;
	int n = 0;

#define FORGET(tbl) do {						\
		for (size_t i_ = 0; i_ < RTE_DIM(o.tbl); i_++)		\
			if (o.tbl[i_] && o.tbl[i_]->context == c) {	\
				o.tbl[i_] = NULL;			\
				n++;					\
			}						\
	} while (0)
	if (c == NULL)
		return;
	drain_async(c);		/* (its events name objects still in the table) */
	for (int i = 0; i < NPD; i++)
		if (o.pd[i] && o.pd[i]->context == c)
			o.pd_base[i] = NULL, o.pd_td[i] = NULL;
	for (int i = 0; i < NCQ; i++)
		if (o.cq[i] && o.cq[i]->context == c)
			o.cq_pd[i] = NULL, o.cq_ex[i] = false;
	FORGET(pd);
	FORGET(td);
	FORGET(ch);
	FORGET(cq);
	FORGET(srq);
	FORGET(qp);
	FORGET(mr);
	FORGET(mw);
	FORGET(ah);
#undef FORGET
	ctx_c = NULL;
	if (ibv_close_device(c))
		DIE("ibv_close_device with %d objects on it failed", n);
	TRACE("close_device: %d objects left on it\n", n);
}

static void op_context(struct fz_in *in)
{
	uint8_t f = fz_u8(in);
	int fl;

	if (ctx_c != NULL) {
		ctx_c_close();
		return;
	}
	ctx_c = ibv_open_device((f & 1 ? fz.ctx_b : fz.ctx_a)->device);
	if (ctx_c == NULL)
		DIE("ibv_open_device: %s", strerror(errno));
	fl = fcntl(ctx_c->async_fd, F_GETFL);
	if (fl < 0 || fcntl(ctx_c->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
		DIE("async_fd: O_NONBLOCK");
	TRACE("open_device %c\n", f & 1 ? 'b' : 'a');
}

/* ----------------------------------------------------------- cleanup */

static void destroy_all(void)
{
	ctx_c_close();	/* with what is left on it */
	for (int i = 0; i < NQP; i++)
		if (o.qp[i])
			qp_to_err(o.qp[i]);
	for (int i = 0; i < NQP; i++)
		if (o.qp[i] && ibv_destroy_qp(o.qp[i]))
			DIE("cleanup: ibv_destroy_qp");
	for (int i = 0; i < NAH; i++)
		if (o.ah[i] && ibv_destroy_ah(o.ah[i]))
			DIE("cleanup: ibv_destroy_ah");
	for (int i = 0; i < NMW; i++)
		if (o.mw[i] && ibv_dealloc_mw(o.mw[i]))
			DIE("cleanup: ibv_dealloc_mw");
	for (int i = 0; i < NSRQ; i++)
		if (o.srq[i] && ibv_destroy_srq(o.srq[i]))
			DIE("cleanup: ibv_destroy_srq");
	for (int i = 0; i < NMR; i++)
		if (o.mr[i] && ibv_dereg_mr(o.mr[i]))
			DIE("cleanup: ibv_dereg_mr");
	for (int i = 0; i < NCQ; i++)
		if (o.cq[i] && ibv_destroy_cq(o.cq[i]))
			DIE("cleanup: ibv_destroy_cq");
	for (int i = 0; i < NCH; i++)
		if (o.ch[i] && ibv_destroy_comp_channel(o.ch[i]))
			DIE("cleanup: ibv_destroy_comp_channel");
	for (int pass = 0; pass < 2; pass++)	/* parent domains first */
		for (int i = 0; i < NPD; i++)
			if (o.pd[i] && (pass || o.pd_base[i]) &&
			    ibv_dealloc_pd(o.pd[i]))
				DIE("cleanup: ibv_dealloc_pd");
			else if (pass || o.pd_base[i])
				o.pd[i] = NULL;
	for (int i = 0; i < NTD; i++)
		if (o.td[i] && ibv_dealloc_td(o.td[i]))
			DIE("cleanup: ibv_dealloc_td");
	memset(&o, 0, sizeof(o));
}

/* ------------------------------------------------------------ driver */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *t = getenv("FZ_TRACE");

	(void)argc;
	trace = t && *t && *t != '0';
	fz_env_init((*argv)[0]);
	arena_alloc = malloc(ARENA_LEN + 2 * FZ_CANARY);
	if (arena_alloc == NULL)
		DIE("malloc");
	arena = arena_alloc + FZ_CANARY;
	memset(arena_alloc, FZ_CANARY_BYTE, ARENA_LEN + 2 * FZ_CANARY);
	memset(arena, ARENA_FILL, ARENA_LEN);
	for (int i = 0; i < 2; i++) {
		struct ibv_context *c = i ? fz.ctx_b : fz.ctx_a;
		int fl = fcntl(c->async_fd, F_GETFL);

		if (fl < 0 || fcntl(c->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
			DIE("async_fd: O_NONBLOCK");
	}
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz_in in = { data, size };
	size_t heap;

	for (int n = 0; n < MAX_OPS && in.n; n++) {
		uint8_t op = fz_u8(&in);

		switch (op % 20) {
		case 0: op_pd(&in); break;
		case 1: op_channel(&in); break;
		case 2: op_create_cq(&in); break;
		case 3: op_destroy_cq(&in); break;
		case 4: op_resize_cq(&in); break;
		case 5: op_cq_misc(&in); break;
		case 6: op_srq(&in); break;
		case 7: op_create_qp(&in); break;
		case 8: op_destroy_qp(&in); break;
		case 9: case 10: op_modify_qp(&in); break;
		case 11: op_query_qp(&in); break;
		case 12: op_rate_limit(&in); break;
		case 13: op_mcast(&in); break;
		case 14: op_mr(&in); break;
		case 15: op_mw(&in); break;
		case 16: op_ah(&in); break;
		case 17: op_post_send(&in); break;
		case 18: op_post_recv(&in); break;
		default:
			if (op == 239)
				op_context(&in);
			else if (op & 0x80)
				op_query(&in);
			else
				fz_poll(1 + fz_u8(&in) % 64);
			break;
		}
		drain_async(fz.ctx_a);
		drain_async(fz.ctx_b);
		if (ctx_c)
			drain_async(ctx_c);
	}
	fz_settle();
	for (int i = 0; i < NCQ; i++)
		poll_cq(i, 4096);
	drain_async(fz.ctx_a);
	drain_async(fz.ctx_b);
	check_arena("after the program");
	destroy_all();
	fz_settle();
	drain_async(fz.ctx_a);
	drain_async(fz.ctx_b);
	check_arena("after cleanup");
	fz_check("after cleanup");
	/* Traffic of the program may have reached fz_env's own QPs. */
	fz_reset();
	memset(arena, ARENA_FILL, ARENA_LEN);
	heap = dt_heap_grew(&heap_watch);
	if (heap)
		DIE("the DPDK heap holds %zu bytes more than before the input",
		    heap);
	return 0;
}
