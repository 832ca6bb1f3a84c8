/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The post path: work requests become mlx5-layout WQEs in the QP's rings,
 * then one doorbell record store and one notification per batch. What can be
 * judged from the WR alone fails here with the errno rdma-core's providers
 * return (EINVAL, ENOMEM) and *bad_wr set; what needs the engine (keys,
 * remote rights) completes with an IBV_WC_* error status instead.
 */
#include <errno.h>
#include <string.h>
#include <endian.h>

#include "droce_int.h"

static inline uint8_t mlx5_opcode_of(enum ibv_wr_opcode op, bool *ok)
{
	*ok = true;
	switch (op) {
	case IBV_WR_SEND: return MLX5_OPCODE_SEND;
	case IBV_WR_SEND_WITH_IMM: return MLX5_OPCODE_SEND_IMM;
	case IBV_WR_RDMA_WRITE: return MLX5_OPCODE_RDMA_WRITE;
	case IBV_WR_RDMA_WRITE_WITH_IMM: return MLX5_OPCODE_RDMA_WRITE_IMM;
	case IBV_WR_RDMA_READ: return MLX5_OPCODE_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP: return MLX5_OPCODE_ATOMIC_CS;
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return MLX5_OPCODE_ATOMIC_FA;
	case IBV_WR_SEND_WITH_INV: return MLX5_OPCODE_SEND_INVAL;
	case IBV_WR_LOCAL_INV: return MLX5_OPCODE_LOCAL_INVAL;
	case IBV_WR_BIND_MW: return MLX5_OPCODE_UMR;
	default:
		*ok = false;
		return 0;
	}
}

static inline bool op_is_atomic(uint8_t op)
{
	return op == MLX5_OPCODE_ATOMIC_CS || op == MLX5_OPCODE_ATOMIC_FA;
}

static inline bool op_has_raddr(uint8_t op)
{
	return op == MLX5_OPCODE_RDMA_WRITE || op == MLX5_OPCODE_RDMA_WRITE_IMM ||
	       op == MLX5_OPCODE_RDMA_READ || op_is_atomic(op);
}

/* The atomic segment follows the remote address segment (mlx5 layout). */
static inline void set_atomic_seg(uint8_t *seg, uint8_t op, uint64_t compare_add,
				  uint64_t swap)
{
	struct mlx5_wqe_atomic_seg *a = (void *)seg;

	if (op == MLX5_OPCODE_ATOMIC_CS) {
		a->swap_add = htobe64(swap);
		a->compare = htobe64(compare_add);
	} else {
		a->swap_add = htobe64(compare_add);
		a->compare = 0;
	}
}

/* Which operations a QP type may post (IBTA table 38 / ibv_post_send(3)). */
static inline bool op_allowed(const struct droce_qp *qp, uint8_t op)
{
	switch (qp->transport) {
	case ROCE_TRANSPORT_RC:
		return true;
	case ROCE_TRANSPORT_UC:
		return op != MLX5_OPCODE_RDMA_READ && !op_is_atomic(op) &&
		       op != MLX5_OPCODE_SEND_INVAL;
	default:
		return op == MLX5_OPCODE_SEND || op == MLX5_OPCODE_SEND_IMM;
	}
}

static inline uint64_t wr_length(const struct ibv_send_wr *wr)
{
	uint64_t n = 0;

	for (int i = 0; i < wr->num_sge; i++)
		n += wr->sg_list[i].length;
	return n;
}

/* The UD address vector, in mlx5's datagram segment layout. */
static inline void set_ud_av(uint8_t *seg, const struct droce_ah *ah,
			     uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct mlx5_wqe_av *av = (void *)seg;

	memset(av, 0, sizeof(*av));
	av->key.qkey.qkey = htobe32(remote_qkey);
	av->dqp_dct = htobe32(remote_qpn & ROCE_QPN_MASK);
	av->tclass = ah->attr.grh.traffic_class;
	av->hop_limit = ah->attr.grh.hop_limit;
	memcpy(av->rgid, ah->attr.grh.dgid.raw, 16);
}

static inline void set_bind_seg(uint8_t *seg, const struct ibv_mw *mw,
				uint32_t new_rkey,
				const struct ibv_mw_bind_info *bi)
{
	struct droce_bind_seg *b = (void *)seg;

	b->mw_key = mw->rkey;
	b->new_rkey = new_rkey;
	b->mr_lkey = bi->mr ? bi->mr->lkey : 0;
	b->access = bi->mw_access_flags;
	b->addr = bi->addr;
	b->length = bi->length;
}

/*
 * Publish the WQEs (release: their bytes before the index), then notify.
 * The notify's exchange on db_pending is a full barrier (a locked
 * instruction on x86, an RCsc RMW after a release store on Arm), so this
 * store is visible before db_pending is read: the engine, which clears
 * db_pending with a full barrier before it reads sq_db, cannot miss it.
 * One locked instruction per post instead of two; none on an app
 * engine's fast poster while a doorbell is pending (eth_qp_notify: the
 * other draining threads fence with a membarrier instead).
 */
static inline void ring_doorbell(struct droce_qp *qp, uint32_t pi)
{
	__atomic_store_n(&qp->sq_db, pi, __ATOMIC_RELEASE);
	droce_drv->qp_notify(qp);
}

/*
 * lcore=app: the engine runs only inside the application's verbs calls,
 * and a bandwidth loop posts a whole window before it polls; the wire
 * then idles while it posts, and the peer while it waits. Every
 * post_drive WQEs, the post turns the engine once (drive_after_post),
 * so the first packets leave, and ACKs come in, while the rest are being
 * posted. Decided under the SQ lock; 0 for an engine thread of its own.
 */
static inline bool post_drives(struct droce_qp *qp, uint32_t pi)
{
	uint32_t n = qp->dev->args.post_drive;
	const struct mlx5_wqe_ctrl_seg *last;
	bool sparse;

	if (qp->dev->args.lcore >= 0 || n == 0)
		return false;
	/*
	 * A signalled WQE among unsignalled ones (perftest's cq_mod: one in
	 * 100) is the one the program will wait for, its window full behind
	 * it: it leaves at once, not up to post_drive - 1 posts later, and
	 * its ACK is back that much sooner. Where signalled WQEs come closer
	 * together than post_drive, the usual pace (a turn a post would cost
	 * more than the wait it saves).
	 */
	last = (const void *)droce_sq_slot(qp, pi - 1);
	sparse = (last->fm_ce_se & DROCE_WQE_SIGNALED) &&
		 pi - qp->sq_pi_signaled >= n;
	if (last->fm_ce_se & DROCE_WQE_SIGNALED)
		qp->sq_pi_signaled = pi;
	if (pi - qp->sq_pi_driven < n && !sparse)
		return false;
	qp->sq_pi_driven = pi;
	return true;
}

/*
 * Without the SQ lock: the engine may complete and flush this very QP.
 * `full`: the post was refused for want of room. A post's turn leaves
 * receiving to the polls, but only ACKs make room: a program that retries
 * the post (and does not poll) would wait for the keeper; with post_drive
 * on, such a post turns the engine whole.
 */
static inline void drive_after_post(struct droce_qp *qp, bool full)
{
	if (!full && droce_drv->post_turn)
		droce_drv->post_turn(qp->dev);
	else
		droce_drv->poll(qp->dev);
}

/* A post refused with ENOMEM turns the engine (drive_after_post). */
static inline bool full_drives(const struct droce_qp *qp, int err)
{
	return unlikely(err == ENOMEM) && qp->dev->args.lcore < 0 &&
	       qp->dev->args.post_drive != 0;
}

/* Room is judged from the consumer index last seen, and sq_ci (a line the
 * engine writes) is read again only when that says full: most posts then
 * touch no line of the engine's. A stale value only under-estimates the
 * room (or, after a reset, looks out of range): either way it is re-read. */
static inline bool sq_full(struct droce_qp *qp, uint32_t pi)
{
	if (likely(pi - qp->sq_ci_seen < qp->sq_cnt))
		return false;
	qp->sq_ci_seen = __atomic_load_n(&qp->sq_ci, __ATOMIC_ACQUIRE);
	return pi - qp->sq_ci_seen >= qp->sq_cnt;
}

/*
 * Many QPs on the device (sq_ahead): by a QP's next post its WQE slots
 * have left the cache (16384 QPs at -t 16 come back to a QP every ~65
 * ms), and each slot written costs a miss. Ask for the slot two ahead,
 * for writing, as this one is written: phase A/B at 16384 QPs, frames
 * sent +1.5-4 % (one ahead +2 %, three +2.7 %, four +0.8-1.5 %, eight
 * none; doc/performance.md, forty-first round). Below DROCE_MANY_QPS the
 * slots are warm and the test is all it costs.
 */
static __rte_always_inline void sq_slot_ahead(const struct droce_qp *qp,
					      uint32_t pi)
{
	if (__atomic_load_n(&qp->sq_ahead, __ATOMIC_RELAXED))
		__builtin_prefetch(droce_sq_slot(qp, pi + 2), 1, 3);
}

static inline void set_ctrl(struct droce_qp *qp, uint8_t *wqe, uint32_t pi,
			    uint8_t op, uint32_t ds, uint8_t fm_ce_se,
			    uint32_t imm, uint8_t sig)
{
	struct mlx5_wqe_ctrl_seg *c = (struct mlx5_wqe_ctrl_seg *)wqe;

	c->opmod_idx_opcode = htobe32((pi & 0xffff) << 8 | op);
	c->qpn_ds = htobe32(qp->sq_ctrl_qpn | (ds & 0x3f));
	c->signature = sig;
	c->dci_stream_channel_id = 0;
	c->fm_ce_se = fm_ce_se;
	c->imm = imm;
}

static inline uint8_t fm_ce_se_of(struct droce_qp *qp, unsigned int flags)
{
	uint8_t f = 0;

	if ((flags & IBV_SEND_SIGNALED) || qp->sq_sig_all)
		f |= DROCE_WQE_SIGNALED;
	if (flags & IBV_SEND_SOLICITED)
		f |= DROCE_WQE_SOLICITED;
	if (flags & IBV_SEND_FENCE)
		f |= DROCE_WQE_FENCE;
	return f;
}

int droce_post_send(struct ibv_qp *ibqp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr)
{
	struct droce_qp *qp = droce_qp_of(ibqp);
	enum ibv_qp_state st;
	uint32_t pi;
	bool drive = false;
	int err = 0;

	droce_qlock(&qp->sq_lock, qp->sq_nolock);
	pi = qp->sq_pi_app;
	st = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	/* The SQ accepts work from RTS on (and in error, to flush it). */
	if (unlikely(st < IBV_QPS_RTS || st == IBV_QPS_UNKNOWN)) {
		err = EINVAL;
		goto out;
	}
	for (; wr; wr = wr->next) {
		uint8_t *wqe, *seg, op;
		uint64_t total = 0;	/* 64-bit: SGE lengths must not wrap */
		uint32_t ds;
		bool ok;
		int i;

		op = mlx5_opcode_of(wr->opcode, &ok);
		if (unlikely(!ok || wr->num_sge < 0 ||
			     (uint32_t)wr->num_sge > qp->sq_max_sge ||
			     !op_allowed(qp, op))) {
			err = EINVAL;
			goto out;
		}
		if (qp->transport == ROCE_TRANSPORT_UD &&
		    unlikely(wr->wr.ud.ah == NULL ||
			     wr_length(wr) > qp->dev->args.max_mtu)) {
			err = EINVAL;	/* a datagram is one packet */
			goto out;
		}
		if (unlikely(sq_full(qp, pi))) {
			err = ENOMEM;
			goto out;
		}
		wqe = droce_sq_slot(qp, pi);
		sq_slot_ahead(qp, pi);
		seg = wqe + DROCE_SEG;
		ds = 1;
		if (op == MLX5_OPCODE_UMR) {
			/* Memory window bind: no data, checked by the engine. */
			if (unlikely(wr->bind_mw.mw == NULL)) {
				err = EINVAL;
				goto out;
			}
			set_bind_seg(seg, wr->bind_mw.mw, wr->bind_mw.rkey,
				     &wr->bind_mw.bind_info);
			set_ctrl(qp, wqe, pi, op, 1 + DROCE_BIND_SEGS,
				 fm_ce_se_of(qp, wr->send_flags), 0, 0);
			qp->sq_wrid[pi & (qp->sq_cnt - 1)] = wr->wr_id;
			pi++;
			continue;
		}
		if (qp->transport == ROCE_TRANSPORT_UD) {
			set_ud_av(seg, container_of(wr->wr.ud.ah, struct droce_ah, ibv),
				  wr->wr.ud.remote_qpn, wr->wr.ud.remote_qkey);
			seg += DROCE_UD_AV_SEGS * DROCE_SEG;
			ds += DROCE_UD_AV_SEGS;
		} else if (op_is_atomic(op)) {
			struct mlx5_wqe_raddr_seg *r = (void *)seg;
			uint64_t len = 0;

			/* The original value lands in 8 local bytes. */
			for (i = 0; i < wr->num_sge; i++)
				len += wr->sg_list[i].length;
			/* The result lands in the first SGE (one SGE of 8
			 * bytes, as providers require). */
			if (unlikely(wr->num_sge != 1 || len < 8 ||
				     (wr->send_flags & IBV_SEND_INLINE))) {
				err = EINVAL;
				goto out;
			}
			r->raddr = htobe64(wr->wr.atomic.remote_addr);
			r->rkey = htobe32(wr->wr.atomic.rkey);
			r->reserved = 0;
			set_atomic_seg(seg + DROCE_SEG, op, wr->wr.atomic.compare_add,
				       wr->wr.atomic.swap);
			seg += 2 * DROCE_SEG;
			ds += 2;
		} else if (op_has_raddr(op)) {
			struct mlx5_wqe_raddr_seg *r = (void *)seg;

			r->raddr = htobe64(wr->wr.rdma.remote_addr);
			r->rkey = htobe32(wr->wr.rdma.rkey);
			r->reserved = 0;
			seg += DROCE_SEG;
			ds++;
		}
		if (wr->send_flags & IBV_SEND_INLINE) {
			struct mlx5_wqe_inl_data_seg *in = (void *)seg;
			uint8_t *p = seg + sizeof(*in);

			if (unlikely(op == MLX5_OPCODE_RDMA_READ)) {
				err = EINVAL;
				goto out;
			}
			for (i = 0; i < wr->num_sge; i++)
				total += wr->sg_list[i].length;
			if (unlikely(total > qp->sq_max_inline)) {
				err = EINVAL;
				goto out;
			}
			for (i = 0; i < wr->num_sge; i++) {
				memcpy(p, (void *)(uintptr_t)wr->sg_list[i].addr,
				       wr->sg_list[i].length);
				p += wr->sg_list[i].length;
			}
			in->byte_count = htobe32((uint32_t)total | MLX5_INLINE_SEG);
			ds += (uint32_t)(sizeof(*in) + total + DROCE_SEG - 1) / DROCE_SEG;
		} else {
			struct mlx5_wqe_data_seg *d = (void *)seg;
			uint64_t sum = 0;

			for (i = 0; i < wr->num_sge; i++) {
				sum += wr->sg_list[i].length;
				d[i].byte_count = htobe32(wr->sg_list[i].length);
				d[i].lkey = htobe32(wr->sg_list[i].lkey);
				d[i].addr = htobe64(wr->sg_list[i].addr);
			}
			if (unlikely(sum > DROCE_MAX_MSG)) {
				err = EINVAL;
				goto out;
			}
			ds += (uint32_t)wr->num_sge;
		}
		set_ctrl(qp, wqe, pi, op, ds, fm_ce_se_of(qp, wr->send_flags),
			 (op == MLX5_OPCODE_SEND_IMM ||
			  op == MLX5_OPCODE_RDMA_WRITE_IMM) ? wr->imm_data :
			 /* the key to invalidate travels in the imm field */
			 (op == MLX5_OPCODE_SEND_INVAL ||
			  op == MLX5_OPCODE_LOCAL_INVAL) ? wr->invalidate_rkey : 0,
			 (wr->send_flags & IBV_SEND_INLINE) ? DROCE_WQE_INLINE : 0);
		qp->sq_wrid[pi & (qp->sq_cnt - 1)] = wr->wr_id;
		pi++;
	}
out:
	if (pi != qp->sq_pi_app) {
		qp->sq_pi_app = pi;
		ring_doorbell(qp, pi);
		drive = post_drives(qp, pi);
	}
	droce_qunlock(&qp->sq_lock, qp->sq_nolock);
	if (drive || full_drives(qp, err))
		drive_after_post(qp, err == ENOMEM);
	if (err && bad_wr)
		*bad_wr = wr;
	return err;
}

/* Write receive WQEs into a receive queue (a QP's or an SRQ's). */
static int wq_post(struct droce_wq *wq, struct ibv_recv_wr *wr,
		   struct ibv_recv_wr **bad_wr)
{
	uint32_t pi;
	int err = 0;

	droce_qlock(&wq->lock, wq->nolock);
	pi = wq->pi_app;
	for (; wr; wr = wr->next) {
		struct mlx5_wqe_data_seg *d;
		uint32_t ci = __atomic_load_n(&wq->ci, __ATOMIC_ACQUIRE);
		int i;

		if (unlikely(wr->num_sge < 0 ||
			     (uint32_t)wr->num_sge > wq->max_sge)) {
			err = EINVAL;
			break;
		}
		if (unlikely(pi - ci >= wq->cnt)) {
			err = ENOMEM;
			break;
		}
		d = droce_wq_slot(wq, pi);
		for (i = 0; i < wr->num_sge; i++) {
			d[i].byte_count = htobe32(wr->sg_list[i].length);
			d[i].lkey = htobe32(wr->sg_list[i].lkey);
			d[i].addr = htobe64(wr->sg_list[i].addr);
		}
		if ((uint32_t)i < wq->max_sge) {
			d[i].byte_count = 0;
			d[i].lkey = htobe32(DROCE_INVALID_LKEY);
			d[i].addr = 0;
		}
		wq->wrid[pi & (wq->cnt - 1)] = wr->wr_id;
		pi++;
	}
	if (pi != wq->pi_app) {
		wq->pi_app = pi;
		/* Nothing to notify: the engine looks when a SEND comes. */
		__atomic_store_n(&wq->db, pi, __ATOMIC_RELEASE);
	}
	droce_qunlock(&wq->lock, wq->nolock);
	if (err && bad_wr)
		*bad_wr = wr;
	return err;
}

int droce_post_recv(struct ibv_qp *ibqp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr)
{
	struct droce_qp *qp = droce_qp_of(ibqp);
	enum ibv_qp_state st = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	int err;

	/* A QP attached to an SRQ takes its receives from there only. */
	if (unlikely(st == IBV_QPS_RESET || st == IBV_QPS_UNKNOWN || qp->srq)) {
		if (bad_wr)
			*bad_wr = wr;
		return EINVAL;
	}
	err = wq_post(qp->rq, wr, bad_wr);
	/* An errored QP flushes what is posted: tell the engine. */
	if (unlikely(st == IBV_QPS_ERR))
		droce_drv->qp_notify(qp);
	return err;
}

int droce_post_srq_recv(struct ibv_srq *ibsrq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr)
{
	return wq_post(&container_of(ibsrq, struct droce_srq, ibv)->wq, wr,
		       bad_wr);
}

/* ------------------------------------------------------ ibv_wr_* API */

static inline struct droce_qp *qpx(struct ibv_qp_ex *ex)
{
	return container_of(ex, struct droce_qp, ex);
}

static void wr_start(struct ibv_qp_ex *ex)
{
	struct droce_qp *qp = qpx(ex);

	droce_qlock(&qp->sq_lock, qp->sq_nolock);
	qp->sq_pi_start = qp->sq_pi_app;
	qp->wr_err = 0;
	qp->wr_cur = NULL;
	qp->wr_last = NULL;
}

/*
 * Open a new WQE for a builder with its first ds segments (control, and a
 * remote address or an address vector); NULL (and wr_err set) if it can't
 * be. No opcode check here: the builders a QP has were installed at create
 * time for its transport and send_ops_flags (IBTA table 38 was checked
 * then), as mlx5 does.
 */
static __rte_always_inline uint8_t *wr_open(struct droce_qp *qp, uint8_t op,
					    uint32_t imm, uint32_t ds)
{
	uint32_t pi = qp->sq_pi_app;
	struct ibv_qp_ex *ex = &qp->ex;
	uint8_t *wqe;

	qp->wr_cur = NULL;
	if (unlikely(qp->wr_err))
		return NULL;
	if (unlikely(sq_full(qp, pi))) {
		qp->wr_err = ENOMEM;
		return NULL;
	}
	wqe = droce_sq_slot(qp, pi);
	sq_slot_ahead(qp, pi);
	set_ctrl(qp, wqe, pi, op, ds, fm_ce_se_of(qp, ex->wr_flags), imm, 0);
	qp->sq_wrid[pi & (qp->sq_cnt - 1)] = ex->wr_id;
	qp->sq_pi_app = pi + 1;
	qp->wr_cur = wqe;
	qp->wr_last = wqe;
	qp->wr_ds = ds;
	return wqe;
}

/* A connected QP's request with a remote address (WRITE, READ, atomics). */
static __rte_always_inline uint8_t *wr_open_raddr(struct droce_qp *qp,
						  uint8_t op, uint32_t imm,
						  uint32_t ds, uint32_t rkey,
						  uint64_t remote_addr)
{
	uint8_t *wqe = wr_open(qp, op, imm, ds);
	struct mlx5_wqe_raddr_seg *r;

	if (wqe == NULL)
		return NULL;
	r = (void *)(wqe + DROCE_SEG);
	r->raddr = htobe64(remote_addr);
	r->rkey = htobe32(rkey);
	r->reserved = 0;
	return wqe;
}

/* A UD SEND: its address vector comes from wr_set_ud_addr (zero until
 * then, which the engine refuses). */
static __rte_always_inline void wr_open_ud(struct droce_qp *qp, uint8_t op,
					   uint32_t imm)
{
	uint8_t *wqe = wr_open(qp, op, imm, 1 + DROCE_UD_AV_SEGS);

	if (wqe != NULL)
		memset(wqe + DROCE_SEG, 0, DROCE_UD_AV_SEGS * DROCE_SEG);
}

static void wr_send_inv(struct ibv_qp_ex *ex, uint32_t invalidate_rkey)
{
	wr_open(qpx(ex), MLX5_OPCODE_SEND_INVAL, invalidate_rkey, 1);
}

static void wr_local_inv(struct ibv_qp_ex *ex, uint32_t invalidate_rkey)
{
	struct droce_qp *qp = qpx(ex);

	wr_open(qp, MLX5_OPCODE_LOCAL_INVAL, invalidate_rkey, 1);
	qp->wr_cur = NULL;	/* no data */
}

static void wr_bind_mw(struct ibv_qp_ex *ex, struct ibv_mw *mw, uint32_t rkey,
		       const struct ibv_mw_bind_info *bind_info)
{
	struct droce_qp *qp = qpx(ex);
	uint8_t *wqe;

	if (mw == NULL || bind_info == NULL) {
		qp->wr_err = EINVAL;
		return;
	}
	wqe = wr_open(qp, MLX5_OPCODE_UMR, 0, 1 + DROCE_BIND_SEGS);
	if (wqe == NULL)
		return;
	set_bind_seg(wqe + DROCE_SEG, mw, rkey, bind_info);
	qp->wr_cur = NULL;
}

static void wr_set_ud_addr(struct ibv_qp_ex *ex, struct ibv_ah *ah,
			   uint32_t remote_qpn, uint32_t remote_qkey)
{
	struct droce_qp *qp = qpx(ex);

	if (unlikely(qp->wr_last == NULL || ah == NULL)) {
		if (!qp->wr_err)
			qp->wr_err = EINVAL;
		return;
	}
	set_ud_av(qp->wr_last + DROCE_SEG, container_of(ah, struct droce_ah, ibv),
		  remote_qpn, remote_qkey);
}

static void wr_send(struct ibv_qp_ex *ex)
{
	wr_open(qpx(ex), MLX5_OPCODE_SEND, 0, 1);
}

static void wr_send_imm(struct ibv_qp_ex *ex, __be32 imm)
{
	wr_open(qpx(ex), MLX5_OPCODE_SEND_IMM, imm, 1);
}

static void wr_send_ud(struct ibv_qp_ex *ex)
{
	wr_open_ud(qpx(ex), MLX5_OPCODE_SEND, 0);
}

static void wr_send_imm_ud(struct ibv_qp_ex *ex, __be32 imm)
{
	wr_open_ud(qpx(ex), MLX5_OPCODE_SEND_IMM, imm);
}

static void wr_rdma_write(struct ibv_qp_ex *ex, uint32_t rkey,
			  uint64_t remote_addr)
{
	wr_open_raddr(qpx(ex), MLX5_OPCODE_RDMA_WRITE, 0, 2, rkey, remote_addr);
}

static void wr_rdma_write_imm(struct ibv_qp_ex *ex, uint32_t rkey,
			      uint64_t remote_addr, __be32 imm)
{
	wr_open_raddr(qpx(ex), MLX5_OPCODE_RDMA_WRITE_IMM, imm, 2, rkey,
		      remote_addr);
}

static void wr_rdma_read(struct ibv_qp_ex *ex, uint32_t rkey,
			 uint64_t remote_addr)
{
	wr_open_raddr(qpx(ex), MLX5_OPCODE_RDMA_READ, 0, 2, rkey, remote_addr);
}

static void wr_atomic(struct droce_qp *qp, uint8_t op, uint32_t rkey,
		      uint64_t remote_addr, uint64_t compare_add, uint64_t swap)
{
	uint8_t *wqe = wr_open_raddr(qp, op, 0, 3, rkey, remote_addr);

	if (wqe != NULL)
		set_atomic_seg(wqe + 2 * DROCE_SEG, op, compare_add, swap);
}

static void wr_atomic_cmp_swp(struct ibv_qp_ex *ex, uint32_t rkey,
			      uint64_t remote_addr, uint64_t compare,
			      uint64_t swap)
{
	wr_atomic(qpx(ex), MLX5_OPCODE_ATOMIC_CS, rkey, remote_addr, compare, swap);
}

static void wr_atomic_fetch_add(struct ibv_qp_ex *ex, uint32_t rkey,
				uint64_t remote_addr, uint64_t add)
{
	wr_atomic(qpx(ex), MLX5_OPCODE_ATOMIC_FA, rkey, remote_addr, add, 0);
}

/* Where the data segments of the open WQE start, and its current ds. */
static inline uint8_t *wr_data_start(struct droce_qp *qp, uint32_t *ds)
{
	*ds = qp->wr_ds;
	return qp->wr_cur + DROCE_SEG * *ds;
}

static inline void wr_set_ds(struct droce_qp *qp, uint32_t ds)
{
	struct mlx5_wqe_ctrl_seg *c = (void *)qp->wr_cur;

	/* qpn_ds is big-endian: its last byte holds ds (6 bits) alone */
	((uint8_t *)&c->qpn_ds)[3] = (uint8_t)ds;
	qp->wr_cur = NULL;	/* data is set once per WQE */
}

/* No data set yet for an open WQE? Else the batch fails with EINVAL. */
static inline bool wr_data_ok(struct droce_qp *qp)
{
	if (likely(qp->wr_cur != NULL))
		return true;
	if (!qp->wr_err)
		qp->wr_err = EINVAL;
	return false;
}

static inline void set_data_seg(struct mlx5_wqe_data_seg *d, uint32_t lkey,
				uint64_t addr, uint32_t length)
{
	d->byte_count = htobe32(length);
	d->lkey = htobe32(lkey);
	d->addr = htobe64(addr);
}

static void wr_set_sge_list(struct ibv_qp_ex *ex, size_t num_sge,
			    const struct ibv_sge *sg)
{
	struct droce_qp *qp = qpx(ex);
	struct mlx5_wqe_data_seg *d;
	uint32_t ds;

	if (unlikely(!wr_data_ok(qp)))
		return;
	if (unlikely(num_sge > qp->sq_max_sge)) {
		qp->wr_err = EINVAL;
		qp->wr_cur = NULL;
		return;
	}
	d = (void *)wr_data_start(qp, &ds);
	for (size_t i = 0; i < num_sge; i++)
		set_data_seg(&d[i], sg[i].lkey, sg[i].addr, sg[i].length);
	wr_set_ds(qp, ds + (uint32_t)num_sge);
}

/* One SGE: every QP holds at least one (sq_max_sge >= 1). */
static void wr_set_sge(struct ibv_qp_ex *ex, uint32_t lkey, uint64_t addr,
		       uint32_t length)
{
	struct droce_qp *qp = qpx(ex);
	uint32_t ds;

	if (unlikely(!wr_data_ok(qp)))
		return;
	set_data_seg((void *)wr_data_start(qp, &ds), lkey, addr, length);
	wr_set_ds(qp, ds + 1);
}

/*
 * The open WQE's inline segment for `total` bytes: where they go, or NULL
 * (the batch fails with EINVAL: data set twice, inline on a READ or an
 * atomic, more than the QP's max_inline_data).
 */
static inline uint8_t *inline_begin(struct droce_qp *qp, size_t total,
				    uint32_t *ds)
{
	struct mlx5_wqe_ctrl_seg *c;
	struct mlx5_wqe_inl_data_seg *in;
	uint32_t op;

	if (unlikely(!wr_data_ok(qp)))
		return NULL;
	c = (void *)qp->wr_cur;
	op = be32toh(c->opmod_idx_opcode) & 0xff;
	if (unlikely(op == MLX5_OPCODE_RDMA_READ || op_is_atomic(op) ||
		     total > qp->sq_max_inline)) {
		qp->wr_err = EINVAL;
		qp->wr_cur = NULL;
		return NULL;
	}
	in = (void *)wr_data_start(qp, ds);
	in->byte_count = htobe32((uint32_t)total | MLX5_INLINE_SEG);
	c->signature = DROCE_WQE_INLINE;
	return (uint8_t *)in + sizeof(*in);
}

static inline void inline_end(struct droce_qp *qp, uint32_t ds, size_t total)
{
	wr_set_ds(qp, ds + (uint32_t)(sizeof(struct mlx5_wqe_inl_data_seg) +
				      total + DROCE_SEG - 1) / DROCE_SEG);
}

static void wr_set_inline_data_list(struct ibv_qp_ex *ex, size_t num_buf,
				    const struct ibv_data_buf *buf)
{
	struct droce_qp *qp = qpx(ex);
	size_t total = 0;
	uint32_t ds;
	uint8_t *p;

	for (size_t i = 0; i < num_buf; i++)
		total += buf[i].length;
	p = inline_begin(qp, total, &ds);
	if (unlikely(p == NULL))
		return;
	for (size_t i = 0; i < num_buf; i++) {
		memcpy(p, buf[i].addr, buf[i].length);
		p += buf[i].length;
	}
	inline_end(qp, ds, total);
}

/* One buffer (perftest's latency tools post so, 8 bytes at a time): no
 * list to walk, and a short copy in a few moves instead of a call. */
static void wr_set_inline_data(struct ibv_qp_ex *ex, void *addr, size_t length)
{
	struct droce_qp *qp = qpx(ex);
	uint32_t ds;
	uint8_t *p = inline_begin(qp, length, &ds);

	if (unlikely(p == NULL))
		return;
	roce_copy_small(p, addr, (uint32_t)length);
	inline_end(qp, ds, length);
}

static int wr_complete(struct ibv_qp_ex *ex)
{
	struct droce_qp *qp = qpx(ex);
	enum ibv_qp_state st = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	int err = qp->wr_err;
	bool drive = false;

	if (!err && (st < IBV_QPS_RTS || st == IBV_QPS_UNKNOWN))
		err = EINVAL;
	if (err) {
		qp->sq_pi_app = qp->sq_pi_start;
	} else if (qp->sq_pi_app != qp->sq_pi_start) {
		ring_doorbell(qp, qp->sq_pi_app);
		drive = post_drives(qp, qp->sq_pi_app);
	}
	qp->wr_cur = NULL;
	droce_qunlock(&qp->sq_lock, qp->sq_nolock);
	if (drive || full_drives(qp, err))
		drive_after_post(qp, err == ENOMEM);
	return err;
}

static void wr_abort(struct ibv_qp_ex *ex)
{
	struct droce_qp *qp = qpx(ex);

	qp->sq_pi_app = qp->sq_pi_start;
	qp->wr_cur = NULL;
	droce_qunlock(&qp->sq_lock, qp->sq_nolock);
}

void droce_qp_install_wr_ops(struct droce_qp *qp)
{
	struct ibv_qp_ex *ex = &qp->ex;
	uint64_t f = qp->send_ops_flags;
	bool ud = qp->transport == ROCE_TRANSPORT_UD;

	ex->wr_start = wr_start;
	ex->wr_complete = wr_complete;
	ex->wr_abort = wr_abort;
	if (f & IBV_QP_EX_WITH_SEND)
		ex->wr_send = ud ? wr_send_ud : wr_send;
	if (f & IBV_QP_EX_WITH_SEND_WITH_IMM)
		ex->wr_send_imm = ud ? wr_send_imm_ud : wr_send_imm;
	if (f & IBV_QP_EX_WITH_RDMA_WRITE)
		ex->wr_rdma_write = wr_rdma_write;
	if (f & IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM)
		ex->wr_rdma_write_imm = wr_rdma_write_imm;
	if (f & IBV_QP_EX_WITH_RDMA_READ)
		ex->wr_rdma_read = wr_rdma_read;
	if (f & IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP)
		ex->wr_atomic_cmp_swp = wr_atomic_cmp_swp;
	if (f & IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD)
		ex->wr_atomic_fetch_add = wr_atomic_fetch_add;
	if (f & IBV_QP_EX_WITH_SEND_WITH_INV)
		ex->wr_send_inv = wr_send_inv;
	if (f & IBV_QP_EX_WITH_LOCAL_INV)
		ex->wr_local_inv = wr_local_inv;
	if (f & IBV_QP_EX_WITH_BIND_MW)
		ex->wr_bind_mw = wr_bind_mw;
	if (ud)
		ex->wr_set_ud_addr = wr_set_ud_addr;
	ex->wr_set_sge = wr_set_sge;
	ex->wr_set_sge_list = wr_set_sge_list;
	ex->wr_set_inline_data = wr_set_inline_data;
	ex->wr_set_inline_data_list = wr_set_inline_data_list;
}
