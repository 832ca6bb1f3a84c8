/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Requester: turns send WQEs into request packets, PSN by PSN, within a
 * window and a per-activation budget; go-back-N restarts (NAK, timeout,
 * RNR); the QP error path and flushing.
 *
 * Requester state (per QP, engine-owned):
 *   req_acked <= req_cur <= req_hwm <= sq_db      WQE indexes
 *   [req_acked, req_hwm)  started at least once: PSN ranges known
 *   req_cur at req_off    next to (re)transmit; a go-back-N moves it back
 *   req_una_psn .. req_psn_max-1                   PSNs outstanding
 * A WQE completes when its PSNs are acknowledged (and its response data
 * is in), wherever req_cur stands: late responses may finish a WQE that a
 * rewind was about to send again.
 */
#include <string.h>
#include <endian.h>

#include "eth_int.h"

struct wqe_view {
	uint8_t op;
	uint8_t flags;		/* fm_ce_se */
	bool inl;
	uint32_t imm;
	uint64_t raddr;
	uint32_t rkey;
	const struct mlx5_wqe_data_seg *sge;
	uint32_t nsge;
	const uint8_t *inl_data;
	uint32_t length;
	uint64_t swap_add;	/* atomics */
	uint64_t compare;
	const struct droce_bind_seg *bind;	/* memory window bind */
	uint32_t dqpn;		/* UD: from the address vector */
	uint32_t qkey;
	const uint8_t *dst_gid;
	uint8_t tclass;
};


/*
 * Decode a WQE the application wrote. The application may scribble on its
 * own queue: every count is bounded by the slot, so a bad WQE can fail its
 * own completion but never make the engine read outside the ring.
 */
static int wqe_decode(const struct droce_qp *qp, uint32_t idx,
		      struct wqe_view *v)
{
	const uint8_t *w = droce_sq_slot(qp, idx);
	const struct mlx5_wqe_ctrl_seg *c = (const void *)w;
	uint32_t ds = be32toh(c->qpn_ds) & 0x3f, used = 1;
	uint64_t sum = 0;

	v->op = (uint8_t)(be32toh(c->opmod_idx_opcode) & 0xff);
	v->flags = c->fm_ce_se;
	v->imm = c->imm;
	v->inl = c->signature & DROCE_WQE_INLINE;
	if (ds == 0 || ds * DROCE_SEG > qp->sq_stride)
		return -1;
	if (qp->transport == ROCE_TRANSPORT_UD) {
		const struct mlx5_wqe_av *av = (const void *)(w + DROCE_SEG);

		if ((v->op != MLX5_OPCODE_SEND && v->op != MLX5_OPCODE_SEND_IMM) ||
		    ds < 1 + DROCE_UD_AV_SEGS)
			return -1;
		v->dqpn = be32toh(av->dqp_dct) & ROCE_QPN_MASK;
		v->qkey = be32toh(av->key.qkey.qkey);
		v->dst_gid = av->rgid;
		v->tclass = av->tclass;
		used = 1 + DROCE_UD_AV_SEGS;
	} else switch (v->op) {
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
	case MLX5_OPCODE_SEND_INVAL:
		break;
	case MLX5_OPCODE_LOCAL_INVAL:
		v->length = 0;
		v->nsge = 0;
		v->inl = false;
		return 0;
	case MLX5_OPCODE_UMR:
		if (ds < 1 + DROCE_BIND_SEGS)
			return -1;
		v->bind = (const struct droce_bind_seg *)(w + DROCE_SEG);
		v->length = 0;
		v->nsge = 0;
		v->inl = false;
		return 0;
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
	case MLX5_OPCODE_RDMA_READ: {
		const struct mlx5_wqe_raddr_seg *r = (const void *)(w + DROCE_SEG);

		if (ds < 2)
			return -1;
		v->raddr = be64toh(r->raddr);
		v->rkey = be32toh(r->rkey);
		used = 2;
		break;
	}
	case MLX5_OPCODE_ATOMIC_CS:
	case MLX5_OPCODE_ATOMIC_FA: {
		const struct mlx5_wqe_raddr_seg *r = (const void *)(w + DROCE_SEG);
		const struct mlx5_wqe_atomic_seg *a =
			(const void *)(w + 2 * DROCE_SEG);

		if (ds < 4 || v->inl)
			return -1;
		v->raddr = be64toh(r->raddr);
		v->rkey = be32toh(r->rkey);
		v->swap_add = be64toh(a->swap_add);
		v->compare = be64toh(a->compare);
		used = 3;
		break;
	}
	default:
		return -1;
	}
	if (v->inl) {
		const struct mlx5_wqe_inl_data_seg *in =
			(const void *)(w + DROCE_SEG * used);
		uint32_t n = be32toh(in->byte_count) & ~MLX5_INLINE_SEG;

		if (v->op == MLX5_OPCODE_RDMA_READ ||
		    n > qp->sq_stride - DROCE_SEG * used - sizeof(*in))
			return -1;
		v->inl_data = (const uint8_t *)(in + 1);
		v->length = n;
		v->nsge = 0;
		return 0;
	}
	v->sge = (const void *)(w + DROCE_SEG * used);
	v->nsge = ds - used;
	for (uint32_t i = 0; i < v->nsge; i++)
		sum += be32toh(v->sge[i].byte_count);
	if (sum > DROCE_MAX_MSG)
		return -1;
	v->length = (uint32_t)sum;
	if (op_is_atomic(v->op)) {
		/* The result lands in the first SGE: it must hold 8 bytes, or
		 * the WQE fails here, before the remote side executes it. */
		if (v->nsge < 1 || be32toh(v->sge[0].byte_count) < 8)
			return -1;
		v->length = 8;	/* the result's size, whatever the SGEs hold */
	}
	return 0;
}

/* ------------------------------------------------ scatter / gather */

int eth_sge_gather(struct droce_qp *qp, const struct mlx5_wqe_data_seg *d,
		   uint32_t nsge, uint32_t off, uint8_t *dst, uint32_t len,
		   uint32_t *crc)
{
	for (uint32_t i = 0; i < nsge && len; i++) {
		uint32_t sl = be32toh(d[i].byte_count);
		uint32_t n;
		const uint8_t *src;

		if (off >= sl) {
			off -= sl;
			continue;
		}
		n = RTE_MIN(sl - off, len);
		src = droce_mr_translate(qp->dev, qp->pd, be32toh(d[i].lkey),
					 be64toh(d[i].addr) + off, n, 0);
		if (unlikely(src == NULL))
			return ETH_SGE_PROT;
		if (crc != NULL)
			*crc = roce_crc32_copy(*crc, dst, src, n);
		else
			memcpy(dst, src, n);
		dst += n;
		len -= n;
		off = 0;
	}
	return len ? ETH_SGE_LEN : 0;
}

/*
 * Zero-copy: the packet's payload [off, off + len) of the SGE list, if it
 * lies in one SGE (one region, contiguous); its region in *mrp. NULL if
 * not (the caller gathers as usual, which also reports a bad key).
 */
static const uint8_t *sge_in_place(struct droce_qp *qp,
				   const struct mlx5_wqe_data_seg *d,
				   uint32_t nsge, uint32_t off, uint32_t len,
				   struct droce_mr **mrp)
{
	for (uint32_t i = 0; i < nsge; i++) {
		uint32_t sl = be32toh(d[i].byte_count);
		uint64_t iova;
		struct droce_mr *mr;

		if (off >= sl) {
			off -= sl;
			continue;
		}
		if (sl - off < len)
			return NULL;	/* spans SGEs: gather */
		mr = droce_mr_lookup(qp->dev, be32toh(d[i].lkey));
		iova = be64toh(d[i].addr) + off;
		if (mr == NULL || mr->pd != qp->pd || mr->kind != DROCE_KEY_MR ||
		    iova < mr->iova || len > mr->len ||
		    iova - mr->iova > mr->len - len)
			return NULL;
		*mrp = mr;
		return mr->host + (iova - mr->iova);
	}
	return NULL;
}

int eth_sge_scatter(struct droce_qp *qp, const struct droce_pd *pd,
		    const struct mlx5_wqe_data_seg *d, uint32_t nsge, uint32_t off,
		    const struct rte_mbuf *m, const uint8_t *buf, uint32_t moff,
		    uint32_t len, uint32_t *crc)
{
	for (uint32_t i = 0; i < nsge && len; i++) {
		uint32_t sl = be32toh(d[i].byte_count);
		uint32_t n;
		uint8_t *dst;

		if (be32toh(d[i].lkey) == DROCE_INVALID_LKEY)
			break;
		if (off >= sl) {
			off -= sl;
			continue;
		}
		n = RTE_MIN(sl - off, len);
		dst = droce_mr_translate(qp->dev, pd, be32toh(d[i].lkey),
					 be64toh(d[i].addr) + off, n,
					 IBV_ACCESS_LOCAL_WRITE);
		if (unlikely(dst == NULL))
			return ETH_SGE_PROT;
		if (m == NULL)
			memcpy(dst, buf + moff, n);
		else if (crc != NULL) {
			if (unlikely((uint64_t)moff + n > m->data_len))
				return ETH_SGE_LEN;
			*crc = roce_crc32_copy(*crc, dst,
					       rte_pktmbuf_mtod_offset(m,
						const uint8_t *, moff), n);
		} else if (unlikely(eth_mbuf_copy(m, moff, dst, n)))
			return ETH_SGE_LEN;
		moff += n;
		len -= n;
		off = 0;
	}
	return len ? ETH_SGE_LEN : 0;
}

/*
 * Validate every SGE of a WQE before its first packet. A one-packet RC/UC
 * SEND or WRITE from one SGE is left to its gather, which checks the same
 * key, PD and bounds and fails the WQE with the same status: translated
 * once, not twice.
 */
static bool sges_ok(struct droce_qp *qp, const struct wqe_view *v,
		    uint32_t need)
{
	if (v->nsge == 1 && need == 0 && v->length != 0 &&
	    v->length <= qp->mtu && qp->transport != ROCE_TRANSPORT_UD)
		return true;
	for (uint32_t i = 0; i < v->nsge; i++) {
		uint32_t n = be32toh(v->sge[i].byte_count);

		if (droce_mr_translate(qp->dev, qp->pd, be32toh(v->sge[i].lkey),
				       be64toh(v->sge[i].addr), n, need) == NULL)
			return false;
	}
	return true;
}

/* ------------------------------------------------------ completions */

void eth_complete_send(struct droce_qp *qp, uint32_t idx, uint8_t status)
{
	const struct droce_swqe_state *st = &qp->sq_state[idx & (qp->sq_cnt - 1)];
	uint32_t byte_len = st->length;
	uint64_t wr_id;
	struct droce_cqe *d;
	uint8_t opcode;

	if (status == IBV_WC_SUCCESS && !(st->flags & DROCE_WQE_SIGNALED))
		return;
	wr_id = qp->sq_wrid[idx & (qp->sq_cnt - 1)];
	switch (st->opcode) {
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		opcode = IBV_WC_SEND;
		break;
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		opcode = IBV_WC_RDMA_WRITE;
		break;
	case MLX5_OPCODE_RDMA_READ:
		opcode = IBV_WC_RDMA_READ;
		break;
	case MLX5_OPCODE_ATOMIC_CS:
		opcode = IBV_WC_COMP_SWAP;
		break;
	case MLX5_OPCODE_ATOMIC_FA:
		opcode = IBV_WC_FETCH_ADD;
		break;
	case MLX5_OPCODE_UMR:
		opcode = IBV_WC_BIND_MW;
		break;
	case MLX5_OPCODE_LOCAL_INVAL:
		opcode = IBV_WC_LOCAL_INV;
		break;
	default:
		opcode = IBV_WC_SEND;
		break;
	}
	/*
	 * idx is always the oldest unretired WQE and nothing reads its slot
	 * (or its sq_wrid, read above) after this. Hand the slot back before
	 * the CQE becomes visible: a thread that polls this CQE and posts at
	 * once must find the room (the release store orders it before the
	 * CQE's owner byte, itself a release store).
	 */
	if ((int32_t)(idx + 1 - qp->sq_ci) > 0)
		__atomic_store_n(&qp->sq_ci, idx + 1, __ATOMIC_RELEASE);
	d = droce_cq_slot(qp->scq);
	if (unlikely(d == NULL)) {
		DROCE_LOG(ERR, "QP 0x%x: send CQ overrun",
			  qp->ex.qp_base.qp_num);
		return;
	}
	droce_cqe_fill(d, wr_id, status, opcode, byte_len, 0,
		       eth_qp_num(qp), 0, 0, 0, eth_now());
	droce_cq_commit(qp->scq, d);
}

/*
 * A local error on WQE idx. If older WQEs are still waiting for their ACK,
 * the error completion must not overtake them: stop sending and let the
 * completer report it once everything before it is acknowledged.
 */
static void fail_current(struct droce_qp *qp, uint32_t idx, uint8_t status)
{
	struct droce_swqe_state *st = &qp->sq_state[idx & (qp->sq_cnt - 1)];

	st->status = status;
	if (idx != qp->req_acked) {
		st->psn_first = qp->req_psn;
		st->psn_last = roce_psn_add(qp->req_psn, ROCE_PSN_MASK);
		st->npkts = 0;
		qp->req_cur = idx + 1;
		if ((int32_t)(qp->req_cur - qp->req_hwm) > 0)
			qp->req_hwm = qp->req_cur;
		qp->req_off = 0;
		qp->flags |= DROCE_QPF_REQ_STALL;
		return;
	}
	eth_qp_mark_send_error(qp, status);
	eth_complete_send(qp, idx, status);
	qp->req_acked = idx + 1;
	eth_qp_send_error(qp);
}

/* ---------------------------------------------------- the requester */

static void complete_sent(struct droce_qp *qp, uint32_t idx, uint8_t status);

static bool qp_resolve(struct droce_qp *qp)
{
	bool failed;

	if (eth_qp_resolve(qp, &failed)) {
		eth_qp_arp_done(qp->eng, qp);
		return true;
	}
	if (failed && qp->transport == ROCE_TRANSPORT_UD) {
		/* UD is unreliable: the datagram is lost (logged and counted
		 * by the neighbour table), the QP goes on with the next. */
		uint32_t idx = qp->req_cur;

		eth_qp_arp_done(qp->eng, qp);
		qp->req_cur++;
		complete_sent(qp, idx, IBV_WC_SUCCESS);
		eth_qp_activate(qp->eng, qp);
		return false;
	}
	if (failed) {
		eth_qp_arp_done(qp->eng, qp);
		if (qp->req_acked != __atomic_load_n(&qp->sq_db, __ATOMIC_ACQUIRE)) {
			/* Start the oldest WQE's record so its CQE is complete. */
			struct wqe_view v;
			struct droce_swqe_state *st =
				&qp->sq_state[qp->req_acked & (qp->sq_cnt - 1)];

			if (wqe_decode(qp, qp->req_acked, &v) == 0) {
				st->opcode = v.op;
				st->length = v.length;
			}
			st->flags = DROCE_WQE_SIGNALED;
			fail_current(qp, qp->req_acked, IBV_WC_RETRY_EXC_ERR);
		}
		return false;
	}
	eth_qp_arp_wait(qp->eng, qp);
	return false;
}

static uint64_t ack_timeout_tsc(struct droce_qp *qp)
{
	/* (converted once per timeout value: the double multiply and
	 * divide cost ~50 instructions of every WRITE's build) */
	if (unlikely(qp->req_timeout_for != qp->timeout + 1)) {
		uint64_t ns = 4096ull << qp->timeout;	/* 4.096 us * 2^timeout */

		qp->req_timeout_tsc = (uint64_t)((double)ns *
				      (double)qp->eng->tsc_hz / 1e9);
		qp->req_timeout_for = (uint8_t)(qp->timeout + 1);
	}
	/* Back off while no ACK comes: 1x, 2x, then 4x the programmed
	 * timeout until progress (ack_upto) resets req_retries. A peer
	 * slower than the timeout (rxe under emulation answered a 64-packet
	 * message after 11 timeouts' worth) is waited for over retry_cnt
	 * retries without resending whole messages at it every period;
	 * a dead peer is still found within 27 periods for retry_cnt 7. */
	return qp->req_timeout_tsc << RTE_MIN(qp->req_retries, 2u);
}

static void start_ack_timer(struct droce_qp *qp, uint64_t now)
{
	qp->req_timer_tsc = now + ack_timeout_tsc(qp);
	qp->req_stall_mark = qp->eng->stall_tsc;
	eth_qp_timer_arm(qp->eng, qp);
}

void eth_req_arm_timer(struct droce_qp *qp)
{
	if (qp->timeout == 0 || qp->req_timer_tsc ||
	    qp->transport != ROCE_TRANSPORT_RC)
		return;	/* timeout 0: wait for ever (IBTA 9.7.6.1.3); UC/UD: no ACKs */
	qp->req_timer_deferred = false;
	start_ack_timer(qp, eth_turn_tsc(qp->eng));
}

static inline uint8_t pick_opcode(uint8_t op, bool first, bool last)
{
	bool imm = op == MLX5_OPCODE_SEND_IMM || op == MLX5_OPCODE_RDMA_WRITE_IMM;

	if (op == MLX5_OPCODE_SEND_INVAL) {
		if (first && last)
			return ROCE_OP_SEND_ONLY_INV;
		if (last)
			return ROCE_OP_SEND_LAST_INV;
		return first ? ROCE_OP_SEND_FIRST : ROCE_OP_SEND_MIDDLE;
	}
	if (op == MLX5_OPCODE_SEND || op == MLX5_OPCODE_SEND_IMM) {
		if (first && last)
			return imm ? ROCE_OP_SEND_ONLY_IMM : ROCE_OP_SEND_ONLY;
		if (first)
			return ROCE_OP_SEND_FIRST;
		if (last)
			return imm ? ROCE_OP_SEND_LAST_IMM : ROCE_OP_SEND_LAST;
		return ROCE_OP_SEND_MIDDLE;
	}
	if (first && last)
		return imm ? ROCE_OP_WRITE_ONLY_IMM : ROCE_OP_WRITE_ONLY;
	if (first)
		return ROCE_OP_WRITE_FIRST;
	if (last)
		return imm ? ROCE_OP_WRITE_LAST_IMM : ROCE_OP_WRITE_LAST;
	return ROCE_OP_WRITE_MIDDLE;
}

/* UC and UD: nothing acknowledges a message; it completes once sent. */
static void complete_sent(struct droce_qp *qp, uint32_t idx, uint8_t status)
{
	eth_complete_send(qp, idx, status);
	qp->req_acked = qp->req_hwm = idx + 1;
	qp->req_una_psn = qp->req_psn_max = qp->req_psn;
	__atomic_store_n(&qp->sq_ci, qp->req_acked, __ATOMIC_RELEASE);
}

/*
 * The payload [off, off + len) of WQE v into the eth_build() frame m (pl),
 * its ICRC, and send; the gather's error (m freed, nothing sent) or 0.
 */
static inline __attribute__((always_inline)) int
send_wqe_payload(struct droce_qp *qp, const struct wqe_view *v,
		 struct rte_mbuf *m, const struct roce_pkt *p, uint8_t *pl,
		 uint32_t off, uint32_t len)
{
	bool fused = len >= ETH_CRC_COPY_MIN;
	uint32_t crc;
	int rc;

	if (v->inl) {
		eth_send_payload(qp->dev, m, p, pl, v->inl_data + off, len);
		return 0;
	}
	crc = fused ? eth_hdrs_crc(m, p) : 0;
	rc = eth_sge_gather(qp, v->sge, v->nsge, off, pl, len,
			    fused ? &crc : NULL);
	if (unlikely(rc != 0)) {
		rte_pktmbuf_free(m);
		return rc;
	}
	if (fused)
		eth_finish_crc(qp->dev, m, p, crc);
	else
		eth_finish(qp->dev, m, p);
	return 0;
}

/* One UD datagram: SEND ONLY (with immediate) and a DETH. */
static bool send_ud(struct droce_qp *qp, const struct wqe_view *v)
{
	struct roce_pkt p = qp->tmpl;
	struct rte_ether_addr mac;
	struct rte_mbuf *m;
	uint32_t idx = qp->req_cur;
	bool failed;
	uint8_t *pl;

	if (!eth_neigh_resolve(qp->dev, v->dst_gid, &mac, &failed)) {
		/* Wait for (or give up on) this destination's MAC; the QP's
		 * template stays ready: each datagram names its own. */
		memcpy(qp->dst_gid.raw, v->dst_gid, 16);
		qp_resolve(qp);
		return false;
	}
	if (v->length > qp->mtu) {
		qp->req_cur++;
		complete_sent(qp, idx, IBV_WC_LOC_LEN_ERR);
		return true;
	}
	memcpy(p.dst_mac, mac.addr_bytes, 6);
	p.tos = v->tclass;	/* the AH's traffic class, per datagram */
	eth_gid_to_pkt(v->dst_gid, &p.ipv6, p.dst_ip);
	if (p.ipv6)	/* from our link-local GID, as the AV's index 0 says */
		memcpy(p.src_ip, qp->dev->gid[0].raw, 16);
	else
		memcpy(p.src_ip, &qp->dev->args.ip, 4);
	p.dest_qp = v->dqpn;
	p.opcode = ROCE_OPCODE(ROCE_TRANSPORT_UD, v->op == MLX5_OPCODE_SEND_IMM ?
			       ROCE_OP_SEND_ONLY_IMM : ROCE_OP_SEND_ONLY);
	p.psn = qp->req_psn;
	p.se = v->flags & DROCE_WQE_SOLICITED;
	p.imm = v->imm;
	/* IBTA 10.2.5: a Q_Key with the high bit set means the QP's own. */
	p.deth_qkey = (v->qkey & 0x80000000u) ? qp->qkey : v->qkey;
	p.deth_src_qp = eth_qp_num(qp);
	m = eth_build(qp, &p, v->length, &pl);
	if (unlikely(m == NULL))
		return false;
	if (unlikely(send_wqe_payload(qp, v, m, &p, pl, 0, v->length))) {
		qp->req_cur++;
		complete_sent(qp, idx, IBV_WC_LOC_PROT_ERR);
		return true;
	}
	qp->req_psn = roce_psn_add(qp->req_psn, 1);
	qp->req_cur++;
	complete_sent(qp, idx, IBV_WC_SUCCESS);
	return true;
}

/*
 * The common message: an RC/UC SEND or WRITE (with or without immediate)
 * of one packet whose payload is copied (not zero-copy), built from the
 * QP's header image: no roce_pkt, no header cache compare. The packets of
 * longer such messages take the same way (send_img_packet); everything
 * else goes the general way (send_one).
 */
static inline bool is_send_write(uint8_t op)
{
	return op == MLX5_OPCODE_RDMA_WRITE || op == MLX5_OPCODE_SEND ||
	       op == MLX5_OPCODE_RDMA_WRITE_IMM || op == MLX5_OPCODE_SEND_IMM;
}

/* Would `len` bytes of this WQE's payload go out zero-copy (zc_min=)?
 * Inline data lives in the WQE, not in registered memory: never. */
static inline bool zc_wanted(const struct droce_qp *qp,
			     const struct wqe_view *v, uint32_t len)
{
	return qp->dev->zc_min && len >= qp->dev->zc_min && !v->inl;
}

static inline bool is_one_packet(const struct droce_qp *qp,
				 const struct wqe_view *v)
{
	return qp->req_off == 0 && v->length <= qp->mtu &&
	       is_send_write(v->op) && qp->transport != ROCE_TRANSPORT_UD &&
	       !zc_wanted(qp, v, v->length);
}

/*
 * The packet [off, off + seg) of such a message, from the header image:
 * the RETH on the first packet of a WRITE, the immediate (or a SEND with
 * invalidate's IETH) on the last, AckReq and SE on the last. Inlined
 * twice: for the one-packet message (first, last and off fold to
 * constants) and for each packet of a longer one, which went through
 * eth_build and its header cache compare before (about twice the
 * instructions per packet). `inv`: a SEND with invalidate (never the
 * one-packet copy, whose constant false keeps it out of the 64 B path).
 */
static inline __attribute__((always_inline)) bool
send_img_packet(struct droce_qp *qp, const struct wqe_view *v,
		struct droce_swqe_state *st, uint32_t off, uint32_t seg,
		bool first, bool last, bool inv)
{
	bool fused = seg >= ETH_CRC_COPY_MIN;
	bool late = fused && !first && eth_hdrs_crc_late(seg);
	uint32_t crc = 0;
	bool write = v->op == MLX5_OPCODE_RDMA_WRITE ||
		     v->op == MLX5_OPCODE_RDMA_WRITE_IMM;
	bool imm = v->op == MLX5_OPCODE_RDMA_WRITE_IMM ||
		   v->op == MLX5_OPCODE_SEND_IMM;
	bool ieth = inv && last;
	bool reth = write && first, immdt = imm && last;
	uint32_t ext_len = (reth ? ROCE_RETH_LEN : 0) +
			   (immdt ? ROCE_IMMDT_LEN : 0) +
			   (ieth ? ROCE_IETH_LEN : 0);
	uint8_t rop;
	/* Solicited event: on the last packet of SENDs and WRITE with
	 * immediate only. */
	uint8_t se = last && (v->flags & DROCE_WQE_SOLICITED) &&
		     v->op != MLX5_OPCODE_RDMA_WRITE ? ROCE_BTH_SE : 0;
	uint32_t psn = qp->req_psn;
	struct rte_mbuf *m;
	uint8_t *ext;

	if (first && last && !inv)
		rop = write ? (imm ? ROCE_OP_WRITE_ONLY_IMM : ROCE_OP_WRITE_ONLY) :
			      (imm ? ROCE_OP_SEND_ONLY_IMM : ROCE_OP_SEND_ONLY);
	else
		rop = pick_opcode(v->op, first, last);
	m = eth_img_build(qp, ROCE_OPCODE(qp->transport, rop), se,
			  (last && qp->transport == ROCE_TRANSPORT_RC ?
			   ROCE_BTH_ACKREQ : 0) | psn, ext_len, seg, &ext);
	if (unlikely(m == NULL))
		return false;
	if (reth)
		roce_put_reth(ext, v->raddr, v->rkey, v->length);
	if (immdt)	/* already big-endian */
		memcpy(ext + ext_len - ROCE_IMMDT_LEN, &v->imm, ROCE_IMMDT_LEN);
	if (ieth)	/* the rkey to invalidate, host order in the WQE */
		roce_put_be32(ext + ext_len - ROCE_IETH_LEN, v->imm);
	if (fused && !late)
		crc = eth_img_hdrs_crc(qp, m, ext_len);
	if (v->inl) {
		if (fused)
			crc = roce_crc32_copy(crc, ext + ext_len,
					      v->inl_data + off, seg);
		else
			roce_copy_small(ext + ext_len, v->inl_data + off, seg);
	} else if (!fused && v->nsge == 1 && seg) {
		/* One SGE holds the whole message (off + seg <= its length):
		 * eth_sge_gather's one step, inline. */
		const uint8_t *src = droce_mr_translate(qp->dev, qp->pd,
				be32toh(v->sge[0].lkey),
				be64toh(v->sge[0].addr) + off, seg, 0);

		if (unlikely(src == NULL)) {
			rte_pktmbuf_free(m);
			fail_current(qp, qp->req_cur, IBV_WC_LOC_PROT_ERR);
			return false;
		}
		roce_copy_small(ext + ext_len, src, seg);
	} else if (unlikely(eth_sge_gather(qp, v->sge, v->nsge, off,
					   ext + ext_len, seg,
					   fused ? &crc : NULL))) {
		rte_pktmbuf_free(m);
		fail_current(qp, qp->req_cur, IBV_WC_LOC_PROT_ERR);
		return false;
	}
	if (late)
		crc = roce_crc32_combine(eth_img_hdrs_crc(qp, m, ext_len), crc,
					 seg);
	eth_img_send(qp, m, ext_len, fused ? &crc : NULL);
	qp->req_psn = roce_psn_add(psn, 1);
	if (!last) {
		qp->req_off = off + seg;
		return true;
	}
	st->psn_last = psn;
	qp->req_cur++;
	qp->req_off = 0;
	if (qp->transport == ROCE_TRANSPORT_UC)
		complete_sent(qp, qp->req_cur - 1, IBV_WC_SUCCESS);
	return true;
}

/*
 * A READ or atomic request packet at req_psn, from the header image: BTH
 * (AckReq), then RETH (a READ of len bytes at raddr) or AtomicETH. False:
 * no mbuf.
 */
static inline __attribute__((always_inline)) bool
send_rd_request(struct droce_qp *qp, uint8_t op, uint64_t raddr,
		uint32_t rkey, uint32_t len, uint64_t swap_add,
		uint64_t compare)
{
	uint8_t ext[ROCE_ATMETH_LEN];		/* (the longer of the two) */

	if (op == MLX5_OPCODE_RDMA_READ) {
		roce_put_reth(ext, raddr, rkey, len);
		return eth_img_short(qp, ROCE_OPCODE(ROCE_TRANSPORT_RC,
						     ROCE_OP_READ_REQ),
				     0, ROCE_BTH_ACKREQ | qp->req_psn, ext,
				     ROCE_RETH_LEN, NULL, 0);
	}
	roce_put_atmeth(ext, raddr, rkey, swap_add, compare);
	return eth_img_short(qp, ROCE_OPCODE(ROCE_TRANSPORT_RC,
					     op == MLX5_OPCODE_ATOMIC_CS ?
					     ROCE_OP_CMP_SWAP :
					     ROCE_OP_FETCH_ADD),
			     0, ROCE_BTH_ACKREQ | qp->req_psn, ext,
			     ROCE_ATMETH_LEN, NULL, 0);
}

static bool send_one_packet(struct droce_qp *qp, const struct wqe_view *v,
			    struct droce_swqe_state *st)
{
	return send_img_packet(qp, v, st, 0, v->length, true, true, false);
}

/* Send the next packet of WQE req_cur. Returns false if the QP must stop. */
static bool send_one(struct droce_qp *qp, const struct wqe_view *v,
		     struct droce_swqe_state *st)
{
	struct roce_pkt p;
	struct rte_mbuf *m;
	uint8_t *pl;

	if (is_one_packet(qp, v))
		return send_one_packet(qp, v, st);
	if (qp->transport == ROCE_TRANSPORT_UD)
		return send_ud(qp, v);
	if (is_send_write(v->op) || v->op == MLX5_OPCODE_SEND_INVAL) {
		uint32_t seg = RTE_MIN(qp->mtu, v->length - qp->req_off);

		/* (zero-copy candidates: below) */
		if (!zc_wanted(qp, v, seg))
			return send_img_packet(qp, v, st, qp->req_off, seg,
					       qp->req_off == 0,
					       qp->req_off + seg == v->length,
					       v->op == MLX5_OPCODE_SEND_INVAL);
	}
	if (op_is_atomic(v->op)) {
		if (unlikely(!send_rd_request(qp, v->op, v->raddr, v->rkey, 8,
					      v->swap_add, v->compare)))
			return false;
		st->psn_last = qp->req_psn;
		qp->req_psn = roce_psn_add(qp->req_psn, 1);
		eth_rd_count(qp, st);
		qp->req_cur++;
		qp->req_off = 0;
		return true;
	}
	if (v->op == MLX5_OPCODE_RDMA_READ) {
		/* req_off > 0: the first responses arrived before a loss; ask
		 * for the rest only, from the first missing PSN (IBTA 9.7.4.1.4:
		 * a READ may be re-issued for the remaining part). */
		if (unlikely(!send_rd_request(qp, v->op,
					      v->raddr + qp->req_off, v->rkey,
					      v->length - qp->req_off, 0, 0)))
			return false;
		qp->req_psn = roce_psn_add(st->psn_first, st->npkts);
		st->psn_last = roce_psn_add(qp->req_psn, ROCE_PSN_MASK);
		eth_rd_count(qp, st);
		qp->req_cur++;
		qp->req_off = 0;
		return true;
	}
	p = qp->tmpl;
	{
		uint32_t seg = RTE_MIN(qp->mtu, v->length - qp->req_off);
		bool first = qp->req_off == 0;
		bool last = qp->req_off + seg == v->length;
		uint8_t rop = pick_opcode(v->op, first, last);

		p.opcode = ROCE_OPCODE(qp->transport, rop);
		p.psn = qp->req_psn;
		p.ack_req = last && qp->transport == ROCE_TRANSPORT_RC;
		p.se = last && (v->flags & DROCE_WQE_SOLICITED) &&
		       (v->op == MLX5_OPCODE_SEND || v->op == MLX5_OPCODE_SEND_IMM ||
			v->op == MLX5_OPCODE_SEND_INVAL ||
			v->op == MLX5_OPCODE_RDMA_WRITE_IMM);
		if (first && (v->op == MLX5_OPCODE_RDMA_WRITE ||
			      v->op == MLX5_OPCODE_RDMA_WRITE_IMM)) {
			p.reth_va = v->raddr;
			p.reth_rkey = v->rkey;
			p.reth_len = v->length;
		}
		if (last) {
			p.imm = v->imm;
			p.ieth_rkey = v->imm;	/* SEND with invalidate */
		}
		if (zc_wanted(qp, v, seg)) {
			struct droce_mr *mr;
			const uint8_t *src = sge_in_place(qp, v->sge, v->nsge,
							  qp->req_off, seg, &mr);

			if (src != NULL) {
				m = eth_build_zc(qp, &p, mr, src, seg);
				if (unlikely(m == NULL))
					return false;
				eth_xmit(qp->dev, m, &p);
				goto sent;
			}
		}
		m = eth_build(qp, &p, seg, &pl);
		if (unlikely(m == NULL))
			return false;
		if (unlikely(send_wqe_payload(qp, v, m, &p, pl, qp->req_off,
					      seg))) {
			fail_current(qp, qp->req_cur, IBV_WC_LOC_PROT_ERR);
			return false;
		}
sent:
		qp->req_psn = roce_psn_add(qp->req_psn, 1);
		qp->req_off += seg;
		if (last) {
			st->psn_last = p.psn;
			qp->req_cur++;
			qp->req_off = 0;
			if (qp->transport == ROCE_TRANSPORT_UC)
				complete_sent(qp, qp->req_cur - 1, IBV_WC_SUCCESS);
		}
	}
	return true;
}

/*
 * Bind a memory window (IBTA 10.6.7.2): the region must be valid, in the
 * QP's PD, allow MW_BIND, contain the range; remote write or atomic
 * through the window need local write on the region; a type 2 window must
 * be unbound, keeps its index and is tied to this QP. Executed on the
 * engine, in send queue order.
 */
static uint8_t do_bind(struct droce_qp *qp, const struct droce_bind_seg *b)
{
	struct droce_dev *dev = qp->dev;
	struct droce_mr *mw = droce_mr_lookup(dev, b->mw_key);
	struct droce_mr *mr;
	uint32_t acc = b->access;

	if (mw == NULL)	/* droce_mr_lookup wants it valid: look by index */
		mw = (b->mw_key >> 8) < DROCE_MAX_MR ? dev->mr_tbl[b->mw_key >> 8] : NULL;
	if (mw == NULL || mw->kind != DROCE_KEY_MW || mw->key != b->mw_key ||
	    mw->pd != qp->pd || (b->new_rkey >> 8) != (mw->key >> 8))
		return IBV_WC_MW_BIND_ERR;
	if (b->mr_lkey == 0 && b->length == 0) {	/* type 1 unbind */
		if (mw->mw_type != 1)
			return IBV_WC_MW_BIND_ERR;
		if (mw->valid && mw->parent)
			mw->parent->nb_bound--;
		mw->valid = false;
		mw->parent = NULL;
		mw->key = b->new_rkey;
		return IBV_WC_SUCCESS;
	}
	mr = droce_mr_lookup(dev, b->mr_lkey);
	if (mr == NULL || mr->kind != DROCE_KEY_MR || mr->pd != qp->pd ||
	    !(mr->access & IBV_ACCESS_MW_BIND) ||
	    (acc & ~(uint32_t)(IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			       IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_ZERO_BASED)) ||
	    ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	     !(mr->access & IBV_ACCESS_LOCAL_WRITE)) ||
	    b->addr < mr->iova || b->length > mr->len ||
	    b->addr - mr->iova > mr->len - b->length)
		return IBV_WC_MW_BIND_ERR;
	if (mw->mw_type == 2 && mw->valid)
		return IBV_WC_MW_BIND_ERR;	/* invalidate it first */
	if (mw->valid && mw->parent)
		mw->parent->nb_bound--;
	mw->parent = mr;
	mr->nb_bound++;
	mw->host = mr->host + (b->addr - mr->iova);
	mw->iova = b->addr;
	mw->len = b->length;
	mw->access = acc;
	mw->mw_qpn = eth_qp_num(qp);
	mw->key = b->new_rkey;
	/* Whatever the responder kept through the old binding is void. */
	mw->epoch = droce_key_epoch_next(dev);
	mw->valid = true;
	return IBV_WC_SUCCESS;
}

/* Local invalidate: a type 2 window of this QP's PD. */
static uint8_t do_local_inv(struct droce_qp *qp, uint32_t rkey)
{
	struct droce_mr *mw = droce_mr_lookup(qp->dev, rkey);

	if (mw == NULL || mw->kind != DROCE_KEY_MW || mw->mw_type != 2 ||
	    mw->pd != qp->pd)
		return IBV_WC_MW_BIND_ERR;
	if (mw->parent)
		mw->parent->nb_bound--;
	mw->parent = NULL;
	mw->valid = false;
	return IBV_WC_SUCCESS;
}

/*
 * A local WQE (bind, local invalidate) runs when the requester reaches it
 * and completes in order: at once if nothing before it waits for an ACK,
 * else with the ACK that covers the packets before it.
 */
static void run_local(struct droce_qp *qp, const struct wqe_view *v,
		      struct droce_swqe_state *st, uint32_t idx)
{
	uint8_t status = st->done ? st->status :
			 v->op == MLX5_OPCODE_UMR ? do_bind(qp, v->bind) :
			 do_local_inv(qp, v->imm);

	st->done = 1;	/* never run twice, whatever a go-back-N does */
	st->status = status;
	st->psn_first = qp->req_psn;
	st->psn_last = roce_psn_add(qp->req_psn, ROCE_PSN_MASK);
	st->npkts = 0;
	qp->req_cur = idx + 1;
	qp->req_off = 0;
	if ((int32_t)(qp->req_cur - qp->req_hwm) > 0)
		qp->req_hwm = qp->req_cur;
	if (qp->req_acked != idx)
		return;		/* ack_upto completes it in its turn */
	if (status != IBV_WC_SUCCESS)
		eth_qp_mark_send_error(qp, status);
	eth_complete_send(qp, idx, status);
	qp->req_acked = idx + 1;
	__atomic_store_n(&qp->sq_ci, qp->req_acked, __ATOMIC_RELEASE);
	if (status != IBV_WC_SUCCESS)
		eth_qp_send_error(qp);
}

/*
 * WQE idx (re)starts at req_psn: its slot's state from scratch. A slot's
 * flag from its previous use (completed or flushed) means nothing now:
 * retransmits un-count before they restart a WQE.
 */
static inline void swqe_start(struct droce_qp *qp, uint32_t idx,
			      struct droce_swqe_state *st, uint8_t op,
			      uint8_t flags, uint32_t length, uint32_t npkts)
{
	if (flags & DROCE_WQE_SIGNALED)
		droce_stamp(DROCE_STAMP_SIGNALED, qp->req_psn, idx, 0);
	st->word[0] = droce_swqe_word(qp->req_psn, op);
	st->word[1] = droce_swqe_word(roce_psn_add(qp->req_psn, npkts - 1),
				      flags);
	st->word[2] = droce_swqe_word(npkts, IBV_WC_SUCCESS);
	st->word[3] = 0;	/* rcvd, done, rd_counted */
	st->word[4] = length;
	if ((int32_t)(idx + 1 - qp->req_hwm) > 0)
		qp->req_hwm = idx + 1;
}

/* (out of line: a second copy of the translation inlined in
 * eth_req_progress made GCC take both out of line, +10 instructions a
 * WRITE) */
static __attribute__((noinline)) bool
rd_sge_writable(const struct droce_qp *qp,
		const struct mlx5_wqe_data_seg *d, uint32_t len)
{
	return droce_mr_translate(qp->dev, qp->pd, be32toh(d->lkey),
				  be64toh(d->addr), len,
				  IBV_ACCESS_LOCAL_WRITE) != NULL;
}

/*
 * An RC READ or atomic into one SGE taken straight, as send_straight
 * takes a WRITE: its one request packet (BTH with AckReq, then RETH or
 * AtomicETH) from the header image, its slot's state as the general way
 * starts it (a 64 B READ's or an atomic's requester ~6 % fewer
 * instructions, forty-eighth round). Fenced or inline, more SGEs or
 * none, an empty READ, an atomic's SGE under 8 bytes, as many READs and
 * atomics in flight as max_rd_atomic allows (the general way waits), an
 * SGE that does not translate with local write (the general way fails
 * it): 0, nothing changed; -1: no mbuf.
 */
static inline __attribute__((always_inline)) int
rd_straight(struct droce_qp *qp, uint32_t idx, struct droce_swqe_state *st,
	    const uint8_t *w, uint32_t ds, uint8_t op, uint8_t flags)
{
	const bool atomic = op != MLX5_OPCODE_RDMA_READ;
	/* ctrl, raddr, [atomic,] SGE: within any RC slot (rdma_qp.c sizes
	 * one for ctrl + raddr + atomic and an SGE at least) */
	const uint32_t segs = atomic ? 4 : 3;
	const struct mlx5_wqe_raddr_seg *r = (const void *)(w + DROCE_SEG);
	const struct mlx5_wqe_data_seg *d =
		(const void *)(w + (segs - 1) * DROCE_SEG);
	const struct mlx5_wqe_ctrl_seg *c = (const void *)w;
	uint32_t len, npkts = 1;
	bool built;

	if (qp->transport != ROCE_TRANSPORT_RC || ds != segs ||
	    (flags & DROCE_WQE_FENCE) || (c->signature & DROCE_WQE_INLINE) ||
	    qp->req_rd_outstanding >= (uint32_t)RTE_MAX(qp->max_rd_atomic, 1))
		return 0;
	len = be32toh(d->byte_count);
	if ((atomic ? len < 8 : len == 0 || len > DROCE_MAX_MSG) ||
	    !rd_sge_writable(qp, d, len))
		return 0;
	if (atomic) {
		const struct mlx5_wqe_atomic_seg *a =
			(const void *)(w + 2 * DROCE_SEG);

		/* (its CQE says 8 bytes: the result's) */
		swqe_start(qp, idx, st, op, flags, 8, 1);
		built = send_rd_request(qp, op, be64toh(r->raddr),
					be32toh(r->rkey), 8,
					be64toh(a->swap_add),
					be64toh(a->compare));
	} else {
		npkts = len <= qp->mtu ? 1 : (len + qp->mtu - 1) / qp->mtu;
		swqe_start(qp, idx, st, op, flags, len, npkts);
		built = send_rd_request(qp, MLX5_OPCODE_RDMA_READ,
					be64toh(r->raddr), be32toh(r->rkey),
					len, 0, 0);
	}
	if (unlikely(!built))
		return -1;
	qp->req_psn = roce_psn_add(qp->req_psn, npkts);
	eth_rd_count(qp, st);
	qp->req_cur = idx + 1;
	return 1;
}

/*
 * The common message taken straight: an RC or UC WRITE or SEND, with or
 * without immediate, unfenced, whose payload (one SGE or inline, 1 byte to
 * the path MTU, short of the fused copy's threshold and of zc_min) makes
 * one packet. Its WQE is read where it lies, not decoded into a view,
 * and it goes out as send_img_packet() would send it, with the same start
 * of its slot's state: 1. Anything else (or an SGE that does not
 * translate, or a slot the general way would fail) returns 0 before
 * changing anything, and the general way takes the WQE and fails it with
 * the right status; -1: no mbuf, the QP stops for this turn as there.
 * An RC READ or atomic of one SGE goes by rd_straight, the same returns.
 */
static inline __attribute__((always_inline)) int
send_straight(struct droce_qp *qp, uint32_t idx, struct droce_swqe_state *st)
{
	const uint8_t *w = droce_sq_slot(qp, idx);
	const struct mlx5_wqe_ctrl_seg *c = (const void *)w;
	uint32_t ds = be32toh(c->qpn_ds) & 0x3f, used, len;
	uint8_t op = (uint8_t)(be32toh(c->opmod_idx_opcode) & 0xff);
	uint8_t flags = c->fm_ce_se, rop, se;
	const struct mlx5_wqe_raddr_seg *r = (const void *)(w + DROCE_SEG);
	const uint8_t *src;
	uint32_t psn = qp->req_psn, ext_len;
	uint8_t ext[ROCE_RETH_LEN + ROCE_IMMDT_LEN];

	switch (op) {
	case MLX5_OPCODE_RDMA_WRITE:
		rop = ROCE_OP_WRITE_ONLY;
		ext_len = ROCE_RETH_LEN;
		used = 2;
		break;
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		rop = ROCE_OP_WRITE_ONLY_IMM;
		ext_len = ROCE_RETH_LEN + ROCE_IMMDT_LEN;
		used = 2;
		break;
	case MLX5_OPCODE_SEND:
		rop = ROCE_OP_SEND_ONLY;
		ext_len = 0;
		used = 1;
		break;
	case MLX5_OPCODE_SEND_IMM:
		rop = ROCE_OP_SEND_ONLY_IMM;
		ext_len = ROCE_IMMDT_LEN;
		used = 1;
		break;
	case MLX5_OPCODE_RDMA_READ:
	case MLX5_OPCODE_ATOMIC_CS:
	case MLX5_OPCODE_ATOMIC_FA:
		return rd_straight(qp, idx, st, w, ds, op, flags);
	default:
		return 0;
	}
	if ((flags & DROCE_WQE_FENCE) || qp->transport == ROCE_TRANSPORT_UD ||
	    ds < used || ds * DROCE_SEG > qp->sq_stride)
		return 0;
	if (c->signature & DROCE_WQE_INLINE) {
		const struct mlx5_wqe_inl_data_seg *in =
			(const void *)(w + DROCE_SEG * used);

		len = be32toh(in->byte_count) & ~MLX5_INLINE_SEG;
		if (len == 0 || len > qp->mtu || len >= ETH_CRC_COPY_MIN ||
		    len > qp->sq_stride - DROCE_SEG * used - sizeof(*in))
			return 0;
		src = (const uint8_t *)(in + 1);
	} else {
		const struct mlx5_wqe_data_seg *d =
			(const void *)(w + DROCE_SEG * used);

		if (ds != used + 1)
			return 0;
		len = be32toh(d->byte_count);
		if (len == 0 || len > qp->mtu || len >= ETH_CRC_COPY_MIN ||
		    (qp->dev->zc_min && len >= qp->dev->zc_min))
			return 0;
		src = droce_mr_translate(qp->dev, qp->pd, be32toh(d->lkey),
					 be64toh(d->addr), len, 0);
		if (src == NULL)
			return 0;
	}
	/* Solicited event: SENDs and WRITE with immediate only. */
	se = (flags & DROCE_WQE_SOLICITED) && op != MLX5_OPCODE_RDMA_WRITE ?
	     ROCE_BTH_SE : 0;
	if (used == 2)
		roce_put_reth(ext, be64toh(r->raddr), be32toh(r->rkey), len);
	if (op == MLX5_OPCODE_RDMA_WRITE_IMM || op == MLX5_OPCODE_SEND_IMM)
		memcpy(ext + ext_len - ROCE_IMMDT_LEN, &c->imm,
		       ROCE_IMMDT_LEN);	/* already big-endian */
	swqe_start(qp, idx, st, op, flags, len, 1);
	if (unlikely(!eth_img_short(qp, ROCE_OPCODE(qp->transport, rop), se,
				    (qp->transport == ROCE_TRANSPORT_RC ?
				     ROCE_BTH_ACKREQ : 0) | psn,
				    ext, ext_len, src, len)))
		return -1;
	qp->req_psn = roce_psn_add(psn, 1);
	qp->req_cur = idx + 1;
	if (qp->transport == ROCE_TRANSPORT_UC)
		complete_sent(qp, idx, IBV_WC_SUCCESS);
	return 1;
}

void eth_req_progress(struct droce_qp *qp, uint32_t *budget)
{
	uint32_t pi;

	if (qp->state != IBV_QPS_RTS || qp->req_rnr_wait ||
	    (qp->flags & (DROCE_QPF_ARP_WAIT | DROCE_QPF_REQ_STALL)))
		return;
	pi = __atomic_load_n(&qp->sq_db, __ATOMIC_ACQUIRE);
	if (qp->req_cur == pi)
		return;
	if (unlikely(!eth_qp_tmpl_ok(qp)) && !qp_resolve(qp))
		return;
	/* The WQE decoded last in this call: the packets of one message
	 * share it (the application may not touch a posted WQE). */
	struct wqe_view v;
	uint32_t v_idx = qp->req_cur - 1;
	/* (the rate changes only between engine turns) */
	const bool paced = qp->pace_cyc_q16 != 0;

	while (*budget && qp->req_cur != pi && qp->state == IBV_QPS_RTS &&
	       !(qp->flags & DROCE_QPF_REQ_STALL)) {
		uint32_t idx = qp->req_cur;
		struct droce_swqe_state *st = &qp->sq_state[idx & (qp->sq_cnt - 1)];

		/* Only RC waits for ACKs: a UC message (UD has one packet)
		 * completes once sent, so until then its PSNs stay "unacked"
		 * and a long one would stop here for ever. */
		if (unlikely(roce_psn_diff(qp->req_psn, qp->req_una_psn) >=
			     ETH_REQ_WINDOW) &&
		    qp->transport == ROCE_TRANSPORT_RC)
			break;
		if (eth_tx_busy(qp->dev)) {
			*budget = 0;	/* requeue: the port is full, not us */
			break;
		}
		if (unlikely(paced) && eth_pace_hold(qp))
			break;		/* on the pacing wheel until its time */
		if (qp->req_off != 0) {
			if (idx == v_idx)
				goto decoded;	/* the same message's next packet */
		} else {
			int r = send_straight(qp, idx, st);

			if (r > 0)
				goto sent;
			if (r < 0)
				break;
		}
		v_idx = idx;
		if (unlikely(wqe_decode(qp, idx, &v))) {
			st->opcode = 0;
			st->length = 0;
			st->flags = DROCE_WQE_SIGNALED;
			fail_current(qp, idx, IBV_WC_LOC_QP_OP_ERR);
			return;
		}
		if (unlikely(qp->req_off != 0 &&
			     (v.op != st->opcode || v.length != st->length))) {
			/* A message part sent (or rewound to by go-back-N)
			 * whose WQE the application has since rewritten: the
			 * rest no longer fits it. Send none of it: an inline
			 * payload now shorter than req_off would be read past
			 * its slot, out of the ring. */
			fail_current(qp, idx, IBV_WC_LOC_QP_OP_ERR);
			return;
		}
		if (v.op == MLX5_OPCODE_UMR || v.op == MLX5_OPCODE_LOCAL_INVAL) {
			if (qp->req_off == 0 && (int32_t)(idx - qp->req_hwm) >= 0) {
				/* First time here: a fresh slot. */
				st->opcode = v.op;
				st->flags = v.flags;
				st->length = 0;
				st->done = 0;
				st->rd_counted = 0;
			}
			run_local(qp, &v, st, idx);
			(*budget)--;
			continue;
		}
		if (qp->req_off == 0) {
			bool rd = op_is_rd_atomic(v.op);

			/* IBTA 10.8.3.3: a fenced WQE waits for reads ahead. */
			if ((v.flags & DROCE_WQE_FENCE) && qp->req_rd_outstanding)
				break;
			if (rd && qp->req_rd_outstanding >=
				  (uint32_t)RTE_MAX(qp->max_rd_atomic, 1))
				break;
			/* (no division for the common one-packet message) */
			swqe_start(qp, idx, st, v.op, v.flags, v.length,
				   v.length <= qp->mtu || op_is_atomic(v.op) ?
				   1 : (v.length + qp->mtu - 1) / qp->mtu);
			if (unlikely(!v.inl && !sges_ok(qp, &v, rd ?
					IBV_ACCESS_LOCAL_WRITE : 0))) {
				fail_current(qp, idx, IBV_WC_LOC_PROT_ERR);
				return;
			}
		}
decoded:
		/* (one call site: send_one stays inlined) */
		if (!send_one(qp, &v, st))
			break;
sent:
		droce_ab_probe(DROCE_AB_PROBE_REQ);
		if (unlikely(paced))
			eth_pace_charge(qp);
		if (roce_psn_diff(qp->req_psn, qp->req_psn_max) > 0)
			qp->req_psn_max = qp->req_psn;
		qp->st.tx_pkts++;
		(*budget)--;
	}
	if (qp->req_una_psn != qp->req_psn_max)
		eth_req_arm_timer(qp);
}

/* Go back to `psn` (IBTA 9.9.2.1 go-back-N) and resend from there. */
void eth_req_retransmit(struct droce_qp *qp, uint32_t psn)
{
	uint32_t w = qp->req_acked;

	while (w != qp->req_cur && w != qp->req_hwm) {
		struct droce_swqe_state *st = &qp->sq_state[w & (qp->sq_cnt - 1)];

		if (roce_psn_diff(psn, st->psn_last) <= 0)
			break;
		w++;
	}
	if (w == qp->req_cur && qp->req_off == 0 &&
	    roce_psn_diff(psn, qp->req_psn) >= 0) {
		/* Already rewound (a NAK came before the RNR timer, say): what
		 * remains is to send, which a waiting QP may not be doing. */
		eth_qp_activate(qp->eng, qp);
		return;
	}
	if (w != qp->req_cur || qp->req_off) {
		struct droce_swqe_state *st = &qp->sq_state[w & (qp->sq_cnt - 1)];
		int32_t d = roce_psn_diff(psn, st->psn_first);

		qp->req_cur = w;
		if (st->opcode == MLX5_OPCODE_RDMA_READ && st->rcvd && !st->done) {
			/* Resume the READ at its first missing response. */
			qp->req_off = st->rcvd * qp->mtu;
			qp->req_psn = roce_psn_add(st->psn_first, st->rcvd);
		} else if (op_is_rd_atomic(st->opcode) || d <= 0 ||
			   (uint32_t)d >= st->npkts) {
			/* (A PSN past this message can only come from a bad or
			 * hostile NAK: resend the message whole, never from an
			 * offset beyond its end.) */
			qp->req_off = 0;
			qp->req_psn = st->psn_first;
		} else {
			qp->req_off = (uint32_t)d * qp->mtu;
			qp->req_psn = psn;
		}
	}
	/* What will be requested again is not outstanding until it is. */
	for (uint32_t i = qp->req_cur; i != qp->req_hwm; i++)
		eth_rd_uncount(qp, &qp->sq_state[i & (qp->sq_cnt - 1)]);
	qp->st.retransmits++;
	qp->dev->st.retransmits++;
	eth_qp_activate(qp->eng, qp);
}

void eth_req_timer(struct droce_qp *qp, uint64_t now)
{
	if ((qp->flags & DROCE_QPF_ARP_WAIT) && now >= qp->arp_poll_tsc) {
		if (qp_resolve(qp))
			eth_qp_activate(qp->eng, qp);
	}
	if (qp->req_timer_tsc == 0 || now < qp->req_timer_tsc)
		return;
	qp->req_timer_tsc = 0;
	if (qp->state != IBV_QPS_RTS)
		return;
	if (qp->req_rnr_wait) {
		qp->req_rnr_wait = false;
		eth_req_retransmit(qp, qp->req_una_psn);
		return;
	}
	if (qp->req_una_psn == qp->req_psn_max)
		return;	/* everything was acknowledged meanwhile */
	/* If this engine was stalled for half the period or more, the peer
	 * was not given the time the timeout promises it, and its answer may
	 * be sitting unread in the receive queue: wait one more full period,
	 * uncounted, instead of spending a retry (a VM that lost its vCPU
	 * for 30 ms would otherwise fail every QP with a short timeout).
	 * Once per arming, so a dead peer is still found, in twice the
	 * time at worst, however often the engine stalls. */
	if (!qp->req_timer_deferred &&
	    (qp->eng->stall_tsc - qp->req_stall_mark) * 2 >= ack_timeout_tsc(qp)) {
		qp->req_timer_deferred = true;
		qp->dev->st.timeouts_stalled++;
		start_ack_timer(qp, now);
		return;
	}
	qp->st.timeouts++;
	qp->dev->st.timeouts++;
	if (qp->req_retries >= qp->retry_cnt) {
		qp->dev->st.retry_exc++;
		DROCE_LOG(ERR, "QP 0x%x: no response from QP 0x%x after %u retries",
			  qp->ex.qp_base.qp_num, qp->dest_qpn, qp->retry_cnt);
		fail_current(qp, qp->req_acked, IBV_WC_RETRY_EXC_ERR);
		return;
	}
	qp->req_retries++;
	eth_req_retransmit(qp, qp->req_una_psn);
	eth_req_arm_timer(qp);
}

/* ------------------------------------------------------ error paths */

static bool flush_recv(struct droce_qp *qp, uint64_t wr_id)
{
	struct droce_cqe *d = droce_cq_slot(qp->rcq);

	if (d == NULL)
		return false;
	droce_cqe_fill(d, wr_id, IBV_WC_WR_FLUSH_ERR, IBV_WC_RECV, 0, 0,
		       eth_qp_num(qp), 0, 0, 0, eth_now());
	droce_cq_commit(qp->rcq, d);
	return true;
}

/* A claimed receive, then the QP's own queue; never an SRQ's WQEs, which
 * other QPs may still take (IBTA 10.3.1: they stay on the SRQ). */
static void flush_rq(struct droce_qp *qp)
{
	struct droce_wq *wq = &qp->own_rq;
	uint32_t pi, ci;

	if (qp->resp_have_wqe && flush_recv(qp, qp->resp_wr_id))
		qp->resp_have_wqe = false;
	if (qp->srq) {
		/* IBTA 11.6.3.1: once per entry into the error state, the
		 * last WQE of an SRQ QP is reached. */
		if (!(qp->flags & DROCE_QPF_LAST_WQE)) {
			qp->flags |= DROCE_QPF_LAST_WQE;
			droce_async_event(qp->ex.qp_base.context,
					  IBV_EVENT_QP_LAST_WQE_REACHED,
					  &qp->ex.qp_base);
		}
		return;
	}
	pi = __atomic_load_n(&wq->db, __ATOMIC_ACQUIRE);
	for (ci = wq->ci; ci != pi; ci++)
		if (!flush_recv(qp, wq->wrid[ci & (wq->cnt - 1)]))
			break;
	__atomic_store_n(&wq->ci, ci, __ATOMIC_RELEASE);
}

void eth_qp_flush_sq(struct droce_qp *qp)
{
	uint32_t pi = __atomic_load_n(&qp->sq_db, __ATOMIC_ACQUIRE);
	uint32_t i = qp->req_acked;

	for (; i != pi; i++) {
		struct droce_swqe_state *st = &qp->sq_state[i & (qp->sq_cnt - 1)];
		struct wqe_view v;

		if (wqe_decode(qp, i, &v) == 0) {
			st->opcode = v.op;
			st->length = v.length;
		}
		if (qp->scq->pi - __atomic_load_n(&qp->scq->ci_db, __ATOMIC_ACQUIRE) >=
		    qp->scq->size)
			break;
		eth_complete_send(qp, i, IBV_WC_WR_FLUSH_ERR);
	}
	qp->req_acked = qp->req_cur = qp->req_hwm = i;
	qp->req_off = 0;
	qp->req_timer_tsc = 0;
	qp->req_rnr_wait = false;
	qp->req_rd_outstanding = 0;
	__atomic_store_n(&qp->sq_ci, i, __ATOMIC_RELEASE);
}

void eth_qp_flush(struct droce_qp *qp)
{
	eth_qp_flush_sq(qp);
	qp->rd_head = qp->rd_tail = qp->rd_replays = 0;
	flush_rq(qp);
}

/* Idempotent: callers may have marked the QP before writing the error
 * CQE, and flushing twice finds nothing the second time. */
void eth_qp_error(struct droce_qp *qp)
{
	eth_qp_mark_error(qp);
	eth_qp_flush(qp);
}

void eth_qp_send_error(struct droce_qp *qp)
{
	if (qp->state == IBV_QPS_SQE)
		eth_qp_flush_sq(qp);
	else
		eth_qp_error(qp);
}

void eth_qp_reset(struct droce_qp *qp)
{
	qp->flags = 0;	/* (off every engine list by now: unlink_qp) */
	qp->pace_tat = 0;
	qp->req_next = qp->req_cur = qp->req_acked = qp->req_hwm = 0;
	qp->req_seq_nak_seen = qp->req_gap_seen = false;
	qp->req_off = 0;
	qp->req_timer_tsc = 0;
	qp->req_retries = qp->req_rnr_retries = 0;
	qp->req_rnr_wait = false;
	qp->req_rd_outstanding = 0;
	qp->resp_in_send = qp->resp_in_write = false;
	qp->resp_recv_off = 0;
	qp->resp_recv_err = false;
	qp->rd_head = qp->rd_tail = qp->rd_replays = 0;
	memset(qp->atm_cache, 0, sizeof(*qp->atm_cache) * (qp->rd_mask + 1));
	qp->atm_next = 0;
	qp->tmpl_ready = false;
	/* IBTA 10.3.1: RESET empties both queues without completions. */
	qp->resp_have_wqe = false;
	qp->sq_pi_app = 0;
	qp->sq_ci_seen = 0;
	__atomic_store_n(&qp->sq_db, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->sq_ci, 0, __ATOMIC_RELEASE);
	qp->own_rq.pi_app = 0;
	__atomic_store_n(&qp->own_rq.db, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->own_rq.ci, 0, __ATOMIC_RELEASE);
}
