/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Responder: executes requests in PSN order and answers them. A state
 * machine over (expected PSN, "inside a SEND", "inside a WRITE"); every
 * check fails into one NAK class (IBTA 9.7.5.2):
 *
 *   PSN ahead of expected               -> NAK PSN sequence error (once)
 *   PSN behind expected                 -> duplicate: ACK again (READ: redo)
 *   opcode out of sequence, bad length,
 *   receive buffer too small            -> NAK invalid request   (QP error)
 *   bad R_Key, bounds, rights           -> NAK remote access     (QP error)
 *   bad local receive SGE               -> NAK remote operation  (QP error)
 *   no receive WQE for a SEND           -> RNR NAK
 *
 * ACKs are coalesced: a QP owing one is put on the active list and sends a
 * single ACK for everything received in the burst, after any READ
 * responses owed before it (responses leave in PSN order).
 */
#include <string.h>
#include <endian.h>

#include "eth_int.h"

/* What an rkey from the wire names for this QP, or NULL; *epoch for
 * droce_key_live() before any later use of the pointer. */
static inline uint8_t *rkey_ptr(const struct droce_qp *qp, uint32_t key,
				uint64_t va, uint64_t len, uint32_t need,
				uint64_t *epoch)
{
	return droce_rkey_translate(qp->dev, qp->pd, eth_qp_num(qp),
				    key, va, len, need, epoch);
}

/* Queue an ACK/NAK; a NAK is never replaced by a later ACK. */
static void owe_ack(struct droce_qp *qp, uint8_t syndrome, uint32_t psn)
{
	if ((qp->flags & DROCE_QPF_ACK_PENDING) &&
	    (qp->resp_ack_syndrome & ROCE_AETH_CLASS_MASK) != ROCE_AETH_ACK &&
	    (syndrome & ROCE_AETH_CLASS_MASK) == ROCE_AETH_ACK)
		return;
	qp->resp_ack_syndrome = syndrome;
	qp->resp_ack_psn = psn;
	qp->flags |= DROCE_QPF_ACK_PENDING;
	eth_qp_activate(qp->eng, qp);
}

/*
 * Claim a receive WQE for the message that starts: copy it out of the
 * ring and consume the slot at once, so QPs sharing an SRQ never race on
 * one and the application may refill it. False: nothing posted (RNR).
 */
static bool claim_recv(struct droce_qp *qp)
{
	struct droce_wq *wq = qp->rq;
	const struct mlx5_wqe_data_seg *d;
	uint32_t ci = wq->ci, n, left, limit;

	if (qp->resp_have_wqe)
		return true;	/* UC: the last message was dropped, reuse */
	if (ci == __atomic_load_n(&wq->db, __ATOMIC_ACQUIRE))
		return false;
	d = droce_wq_slot(wq, ci);
	for (n = 0; n < wq->max_sge; n++) {
		if (be32toh(d[n].lkey) == DROCE_INVALID_LKEY)
			break;
		qp->resp_sge[n] = d[n];
	}
	qp->resp_nsge = n;
	qp->resp_wr_id = wq->wrid[ci & (wq->cnt - 1)];
	qp->resp_have_wqe = true;
	__atomic_store_n(&wq->ci, ci + 1, __ATOMIC_RELEASE);
	/* srq_limit (ibv_modify_srq(3)): fire once when fewer remain. */
	limit = wq->srq ? __atomic_load_n(&wq->limit, __ATOMIC_ACQUIRE) : 0;
	left = __atomic_load_n(&wq->db, __ATOMIC_ACQUIRE) - (ci + 1);
	if (unlikely(limit && left < limit) &&
	    __atomic_compare_exchange_n(&wq->limit, &limit, 0, false,
					__ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		droce_async_event(wq->srq->ibv.context,
				  IBV_EVENT_SRQ_LIMIT_REACHED, &wq->srq->ibv);
	return true;
}

static inline const struct droce_pd *recv_pd(const struct droce_qp *qp)
{
	/* SRQ WQEs are checked against the SRQ's PD (IBTA 10.2.9.4). */
	return qp->srq ? qp->srq->pd : qp->pd;
}

static void recv_complete_from(struct droce_qp *qp, uint8_t opcode,
			       uint8_t status, uint32_t len, uint8_t wc_flags,
			       uint32_t imm, uint32_t src_qp, bool solicited)
{
	struct droce_cqe *d;

	qp->resp_have_wqe = false;
	d = droce_cq_slot(qp->rcq);
	if (unlikely(d == NULL)) {
		DROCE_LOG(ERR, "QP 0x%x: receive CQ overrun",
			  qp->ex.qp_base.qp_num);
		return;
	}
	droce_cqe_fill(d, qp->resp_wr_id, status, opcode, len,
		       (wc_flags & (IBV_WC_WITH_IMM | IBV_WC_WITH_INV)) ?
		       imm : 0,	/* ImmDt, or the invalidated rkey */
		       eth_qp_num(qp), src_qp, wc_flags, solicited,
		       eth_now());
	droce_cq_commit(qp->rcq, d);
}

static inline void recv_complete(struct droce_qp *qp, uint8_t opcode,
				 uint8_t status, uint32_t len, bool has_imm,
				 uint32_t imm, bool solicited)
{
	recv_complete_from(qp, opcode, status, len,
			   has_imm ? IBV_WC_WITH_IMM : 0, imm, qp->dest_qpn,
			   solicited);
}

/* Fatal responder error: NAK, complete the receive in error, QP error. */
#define resp_fail(qp, psn, nak, st) resp_fail_at(qp, psn, nak, st, __LINE__)
static void resp_fail_at(struct droce_qp *qp, uint32_t psn, uint8_t nak,
			 uint8_t recv_status, int line);

static void resp_fail_at(struct droce_qp *qp, uint32_t psn, uint8_t nak,
			 uint8_t recv_status, int line)
{
	DROCE_LOG(DEBUG, "QP 0x%x: responder error (eth_resp.c:%d): NAK %u at PSN 0x%06x, epsn 0x%06x",
		  qp->ex.qp_base.qp_num, line, nak, psn, qp->resp_epsn);
	if (qp->transport != ROCE_TRANSPORT_RC) {
		/* UC has no NAKs: a bad message is dropped (IBTA 9.8.3), the
		 * QP lives on unless a receive buffer was too small. */
		qp->resp_in_send = qp->resp_in_write = false;
		qp->dev->st.rx_malformed++;
		if (recv_status == IBV_WC_SUCCESS)
			return;
		eth_qp_mark_error(qp);
		if (qp->resp_have_wqe)
			recv_complete(qp, IBV_WC_RECV, recv_status, 0, false, 0, false);
		eth_qp_error(qp);
		return;
	}
	/* With responses still owed the QP stays up until they and the NAK
	 * have left (below); otherwise it is in ERR before the CQE. */
	if (qp->rd_head == qp->rd_tail)
		eth_qp_mark_error(qp);
	if (recv_status != IBV_WC_SUCCESS && qp->resp_have_wqe)
		recv_complete(qp, IBV_WC_RECV, recv_status, 0, false, 0, false);
	/* IBTA 11.6.3.1: the affiliated event for the responder's error. */
	droce_async_event(qp->ex.qp_base.context,
			  nak == ROCE_NAK_INVALID_REQ ? IBV_EVENT_QP_REQ_ERR :
			  nak == ROCE_NAK_REMOTE_ACCESS ? IBV_EVENT_QP_ACCESS_ERR :
							  IBV_EVENT_QP_FATAL,
			  &qp->ex.qp_base);
	if (qp->rd_head != qp->rd_tail) {
		/* Responses owed for earlier requests leave first (PSN order);
		 * the NAK follows them, then the QP errors. Nothing more is
		 * accepted meanwhile. */
		qp->flags &= ~DROCE_QPF_ACK_PENDING;
		owe_ack(qp, ROCE_AETH_NAK | nak, psn);
		qp->flags |= DROCE_QPF_RESP_DEAD;
		return;
	}
	eth_send_ack(qp, ROCE_AETH_NAK | nak, psn);
	qp->flags &= ~DROCE_QPF_ACK_PENDING;
	eth_qp_error(qp);
}

static void rnr_nak(struct droce_qp *qp, uint32_t psn)
{
	if (qp->transport != ROCE_TRANSPORT_RC) {
		/* UC: no receive, the message is lost. */
		qp->resp_in_send = qp->resp_in_write = false;
		qp->dev->st.rx_no_recv++;
		return;
	}
	/* Sent at once; the requester resends from psn after the timer. */
	eth_send_ack(qp, ROCE_AETH_RNR_NAK | (qp->min_rnr_timer & 0x1f), psn);
}

/* ------------------------------------------------ ICRC at placement */

/*
 * Whether eth_rx_one may leave this frame's ICRC to the copy of its
 * payload into place (one pass over the bytes instead of two): a MIDDLE or
 * LAST of the WRITE or SEND in progress, or a SEND's FIRST or ONLY, at the
 * expected PSN, that the checks on the way (eth_rx_one's after the ICRC,
 * eth_resp_rx's, do_write's and do_send's; kept in step with them here)
 * let through to the copy with nothing answered before it. A SEND that
 * starts goes to the memory of a receive WQE, which the frame does not
 * pick (a damaged one writes into a WQE that stays claimed for the sound
 * one); it is late only where that WQE is certain: one held already, or
 * the QP's own receive queue not empty (its engine alone takes from it; an
 * SRQ's may go to another QP first, and a missing WQE's RNR NAK must not
 * answer an unproved frame). A WRITE that starts is not: its RETH picks
 * the memory. Anything else, a frame that would be NAKed, dropped or taken
 * as a duplicate, is checked first as always: a damaged frame never draws
 * an answer.
 */
bool eth_resp_place_late(const struct droce_qp *qp, const struct roce_pkt *p)
{
	if ((p->opcode & 0xe0) != qp->transport ||
	    qp->transport == ROCE_TRANSPORT_UD || !qp->tmpl_ready ||
	    qp->state < IBV_QPS_RTR || qp->state == IBV_QPS_ERR ||
	    (qp->flags & DROCE_QPF_RESP_DEAD) || p->psn != qp->resp_epsn ||
	    p->payload_len > qp->mtu)
		return false;
	switch (p->opcode & 0x1f) {
	case ROCE_OP_WRITE_MIDDLE:
		return qp->resp_in_write && !qp->resp_in_send &&
		       p->payload_len == qp->mtu &&
		       p->payload_len <= qp->resp_write_left &&
		       droce_key_live(qp->dev, qp->resp_write_key,
				      qp->resp_write_epoch);
	case ROCE_OP_WRITE_LAST:
		return qp->resp_in_write && !qp->resp_in_send &&
		       p->payload_len == qp->resp_write_left &&
		       droce_key_live(qp->dev, qp->resp_write_key,
				      qp->resp_write_epoch);
	case ROCE_OP_SEND_MIDDLE:
		return qp->resp_in_send && p->payload_len == qp->mtu;
	case ROCE_OP_SEND_LAST:
	case ROCE_OP_SEND_LAST_IMM:
		return qp->resp_in_send;
	case ROCE_OP_SEND_FIRST:
	case ROCE_OP_SEND_ONLY:
	case ROCE_OP_SEND_ONLY_IMM:
		return !qp->resp_in_send && !qp->resp_in_write &&
		       ((p->opcode & 0x1f) != ROCE_OP_SEND_FIRST ||
			p->payload_len == qp->mtu) &&
		       (qp->resp_have_wqe ||
			(qp->srq == NULL && qp->rq != NULL &&
			 qp->rq->ci != __atomic_load_n(&qp->rq->db,
						       __ATOMIC_ACQUIRE)));
	default:
		return false;
	}
}

/* ------------------------------------------------------------- SEND */

static bool do_send(struct droce_qp *qp, const struct roce_pkt *p,
		    const struct rte_mbuf *m, uint32_t flags, bool late)
{
	uint32_t crc = late ? eth_rx_late_start(m, p) : 0;
	int ret;

	if (flags & ROCE_OPF_FIRST) {
		if (!claim_recv(qp)) {
			rnr_nak(qp, p->psn);
			return false;
		}
		qp->resp_recv_off = 0;
	}
	ret = eth_sge_scatter(qp, recv_pd(qp), qp->resp_sge, qp->resp_nsge,
			      qp->resp_recv_off, m, NULL, p->payload_off,
			      p->payload_len, late ? &crc : NULL);
	/* (A receive SGE that fails is an answer: the frame is checked whole
	 * before it is given one.) */
	if (late && !(ret == 0 ? eth_rx_late_done(qp, m, p, crc) :
				 eth_rx_late_whole(qp, m, p)))
		return false;
	if (ret == ETH_SGE_LEN) {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, IBV_WC_LOC_LEN_ERR);
		return false;
	}
	if (ret) {
		resp_fail(qp, p->psn, ROCE_NAK_REMOTE_OP, IBV_WC_LOC_PROT_ERR);
		return false;
	}
	qp->resp_recv_off += p->payload_len;
	qp->resp_in_send = !(flags & ROCE_OPF_LAST);
	if ((flags & ROCE_OPF_LAST) && (flags & ROCE_OPF_IETH)) {
		/* SEND with invalidate (IBTA 10.6.7.2.3): the rkey must name a
		 * type 2 window bound to this QP. */
		struct droce_mr *mw = droce_mr_lookup(qp->dev, p->ieth_rkey);

		if (mw == NULL || mw->kind != DROCE_KEY_MW || mw->mw_type != 2 ||
		    mw->pd != qp->pd || mw->mw_qpn != eth_qp_num(qp)) {
			resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ,
				  IBV_WC_REM_INV_REQ_ERR);
			return false;
		}
		if (mw->parent)
			mw->parent->nb_bound--;
		mw->parent = NULL;
		mw->valid = false;
		recv_complete_from(qp, IBV_WC_RECV, IBV_WC_SUCCESS,
				   qp->resp_recv_off, IBV_WC_WITH_INV,
				   p->ieth_rkey, qp->dest_qpn, p->se);
		qp->resp_msn = roce_psn_add(qp->resp_msn, 1);
		return true;
	}
	if (flags & ROCE_OPF_LAST) {
		recv_complete(qp, IBV_WC_RECV, IBV_WC_SUCCESS, qp->resp_recv_off,
			      flags & ROCE_OPF_IMMDT, p->imm, p->se);
		qp->resp_msn = roce_psn_add(qp->resp_msn, 1);
	}
	return true;
}

/* ------------------------------------------------------------ WRITE */

static bool do_write(struct droce_qp *qp, const struct roce_pkt *p,
		     const struct rte_mbuf *m, uint32_t flags, bool late)
{
	if (flags & ROCE_OPF_FIRST) {
		uint8_t *dst = NULL;

		if (!(qp->access & IBV_ACCESS_REMOTE_WRITE)) {
			resp_fail(qp, p->psn, ROCE_NAK_REMOTE_ACCESS, 0);
			return false;
		}
		/* C9-88: a zero-length WRITE carries an R_Key nobody checks. */
		if (p->reth_len) {
			dst = rkey_ptr(qp, p->reth_rkey,
				       p->reth_va, p->reth_len,
				       IBV_ACCESS_REMOTE_WRITE,
				       &qp->resp_write_epoch);
			if (dst == NULL) {
				resp_fail(qp, p->psn, ROCE_NAK_REMOTE_ACCESS, 0);
				return false;
			}
		}
		/* An ONLY must carry exactly its DMA length; FIRST a full MTU
		 * of a longer one. */
		if ((flags & ROCE_OPF_LAST) ? p->payload_len != p->reth_len :
		    p->reth_len <= qp->mtu) {
			resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
			return false;
		}
		qp->resp_write_ptr = dst;
		qp->resp_write_key = p->reth_rkey;
		qp->resp_write_left = p->reth_len;
		qp->resp_write_len = p->reth_len;
	} else if (!late &&	/* (eth_resp_place_late just looked) */
		   unlikely(!droce_key_live(qp->dev, qp->resp_write_key,
					    qp->resp_write_epoch))) {
		/* The R_Key went (ibv_dereg_mr, invalidation, rebind, rereg)
		 * in the middle of the message: the rest of it meets a key
		 * that is no longer valid, a remote access error. */
		resp_fail(qp, p->psn, ROCE_NAK_REMOTE_ACCESS, 0);
		return false;
	}
	if (p->payload_len > qp->resp_write_left ||
	    ((flags & ROCE_OPF_LAST) && p->payload_len != qp->resp_write_left)) {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
		return false;
	}
	/* WRITE with immediate consumes a receive: claim before writing. */
	if ((flags & ROCE_OPF_IMMDT) && !claim_recv(qp)) {
		rnr_nak(qp, p->psn);
		return false;
	}
	if (p->payload_len) {
		/* (A zero-length WRITE has no pointer at all: no rkey check.) */
		if (late) {
			/* One segment (eth_rx_one), bounded by the parse. */
			uint32_t crc = roce_crc32_copy(eth_rx_late_start(m, p),
					qp->resp_write_ptr,
					rte_pktmbuf_mtod_offset(m, const uint8_t *,
								p->payload_off),
					p->payload_len);

			if (!eth_rx_late_done(qp, m, p, crc))
				return false;
		} else if (eth_mbuf_copy(m, p->payload_off, qp->resp_write_ptr,
					 p->payload_len)) {
			resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
			return false;
		}
		qp->resp_write_ptr += p->payload_len;
		qp->resp_write_left -= p->payload_len;
	}
	qp->resp_in_write = !(flags & ROCE_OPF_LAST);
	if (flags & ROCE_OPF_LAST) {
		if (flags & ROCE_OPF_IMMDT)
			recv_complete(qp, IBV_WC_RECV_RDMA_WITH_IMM, IBV_WC_SUCCESS,
				      qp->resp_write_len, true, p->imm, p->se);
		qp->resp_msn = roce_psn_add(qp->resp_msn, 1);
	}
	return true;
}

/* ------------------------------------------------------------- READ */

static uint32_t read_npkts(const struct droce_qp *qp, uint32_t len)
{
	return len ? (len + qp->mtu - 1) / qp->mtu : 1;
}

/*
 * Room for a new READ/atomic: IBTA 9.7.5.1.6: more requests outstanding
 * than max_dest_rd_atomic is an invalid request. Replays of duplicates
 * reuse their request's resources and do not count; if they fill the
 * queue itself they go (the requester asks again for what it misses).
 */
static bool rd_slot_for_new(struct droce_qp *qp, uint32_t limit)
{
	uint32_t queued = qp->rd_tail - qp->rd_head;

	if (queued - qp->rd_replays >= limit)
		return false;
	if (queued > qp->rd_mask) {
		uint32_t k = qp->rd_head;

		for (uint32_t i = qp->rd_head; i != qp->rd_tail; i++) {
			const struct droce_read_job *j =
				&qp->rd_jobs[i & qp->rd_mask];

			if (!j->replay)
				qp->rd_jobs[k++ & qp->rd_mask] = *j;
		}
		qp->rd_tail = k;
		qp->rd_replays = 0;
	}
	return true;
}

/* Owe the responses of READ request p (src validated through its rkey at
 * epoch), as of the current MSN; replay: it repeats an executed one. */
static void queue_read(struct droce_qp *qp, const struct roce_pkt *p,
		       uint8_t *src, uint64_t epoch, bool replay)
{
	struct droce_read_job *j =
		&qp->rd_jobs[qp->rd_tail & qp->rd_mask];

	j->atomic = false;
	j->replay = replay;
	j->host = src;
	j->key = p->reth_rkey;
	j->epoch = epoch;
	j->len = p->reth_len;
	j->sent = 0;
	j->psn = p->psn;
	j->psn_first = p->psn;
	j->npkts = p->reth_len <= qp->mtu ? 1 : read_npkts(qp, p->reth_len);
	j->msn = qp->resp_msn;
	qp->rd_tail++;
	eth_qp_activate(qp->eng, qp);
}

static bool do_read(struct droce_qp *qp, const struct roce_pkt *p)
{
	uint8_t *src = NULL;
	uint64_t epoch = 0;
	uint32_t limit = RTE_MAX(qp->max_dest_rd_atomic, (uint8_t)1);

	if (!(qp->access & IBV_ACCESS_REMOTE_READ)) {
		resp_fail(qp, p->psn, ROCE_NAK_REMOTE_ACCESS, 0);
		return false;
	}
	if (p->reth_len) {
		src = rkey_ptr(qp, p->reth_rkey, p->reth_va,
			       p->reth_len, IBV_ACCESS_REMOTE_READ, &epoch);
		if (src == NULL) {
			resp_fail(qp, p->psn, ROCE_NAK_REMOTE_ACCESS, 0);
			return false;
		}
	}
	if (!rd_slot_for_new(qp, limit)) {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
		return false;
	}
	qp->resp_msn = roce_psn_add(qp->resp_msn, 1);
	queue_read(qp, p, src, epoch, false);
	return true;
}

/* ---------------------------------------------------------- ATOMIC */

static void queue_atomic_ack(struct droce_qp *qp, uint32_t psn, uint64_t orig,
			     bool replay)
{
	struct droce_read_job *j = &qp->rd_jobs[qp->rd_tail & qp->rd_mask];

	j->atomic = true;
	j->replay = replay;
	qp->rd_replays += replay;
	j->orig = orig;
	j->host = NULL;
	j->len = 0;
	j->sent = 0;
	j->psn = psn;
	j->psn_first = psn;
	j->npkts = 1;
	j->msn = qp->resp_msn;
	qp->rd_tail++;
	eth_qp_activate(qp->eng, qp);
}

static bool do_atomic(struct droce_qp *qp, const struct roce_pkt *p, uint8_t op)
{
	uint32_t limit = RTE_MAX(qp->max_dest_rd_atomic, (uint8_t)1);
	uint64_t *t, orig, epoch;

	if (!(qp->access & IBV_ACCESS_REMOTE_ATOMIC)) {
		resp_fail(qp, p->psn, ROCE_NAK_REMOTE_ACCESS, 0);
		return false;
	}
	/* C9-? (IBTA 9.4.5): the target must be naturally aligned. */
	if (p->atm_va & 7) {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
		return false;
	}
	/* Executed at once: the pointer is not kept. */
	t = (uint64_t *)rkey_ptr(qp, p->atm_rkey, p->atm_va, 8,
				 IBV_ACCESS_REMOTE_ATOMIC, &epoch);
	if (t == NULL) {
		resp_fail(qp, p->psn, ROCE_NAK_REMOTE_ACCESS, 0);
		return false;
	}
	if (!rd_slot_for_new(qp, limit)) {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
		return false;
	}
	/* CPU atomics: atomic against every engine and the application. */
	if (op == ROCE_OP_CMP_SWAP) {
		orig = p->atm_compare;
		__atomic_compare_exchange_n(t, &orig, p->atm_swap_add, false,
					    __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
	} else {
		orig = __atomic_fetch_add(t, p->atm_swap_add, __ATOMIC_SEQ_CST);
	}
	/* The last `limit` results, for duplicates (no division: atm_next
	 * wraps by hand; a limit lowered since restarts the ring). */
	if (qp->atm_next >= limit)
		qp->atm_next = 0;
	qp->atm_cache[qp->atm_next].psn = p->psn;
	qp->atm_cache[qp->atm_next].orig = orig;
	qp->atm_cache[qp->atm_next].valid = true;
	qp->atm_next++;
	qp->resp_msn = roce_psn_add(qp->resp_msn, 1);
	queue_atomic_ack(qp, p->psn, orig, false);
	return true;
}

/* Send up to *budget READ response packets, then an owed ACK. */
void eth_resp_progress(struct droce_qp *qp, uint32_t *budget)
{
	/* (the rate changes only between engine turns) */
	const bool paced = qp->pace_cyc_q16 != 0;

	while (*budget && qp->rd_head != qp->rd_tail) {
		struct droce_read_job *j =
			&qp->rd_jobs[qp->rd_head & qp->rd_mask];
		uint32_t seg = RTE_MIN(qp->mtu, j->len - j->sent);
		bool first = j->sent == 0, last = j->sent + seg == j->len;

		if (unlikely(!eth_qp_tmpl_ok(qp))) {
			bool failed;

			if (!eth_qp_resolve(qp, &failed))
				return;	/* the requester's MAC arrives with its packets */
		}
		if (eth_tx_busy(qp->dev)) {
			*budget = 0;
			return;
		}
		if (seg && unlikely(!droce_key_live(qp->dev, j->key, j->epoch))) {
			/* The region went while its data was owed (see
			 * do_write): the READ ends in a remote access error
			 * at the first response not sent, nothing after it
			 * is answered, the QP errors. */
			uint32_t psn = j->psn;

			qp->rd_tail = qp->rd_head;
			qp->rd_replays = 0;
			resp_fail(qp, psn, ROCE_NAK_REMOTE_ACCESS, 0);
			(*budget)--;
			return;
		}
		if (j->atomic) {
			if (unlikely(!eth_img_response(qp, ROCE_OP_ATOMIC_ACK,
						       j->psn, j->msn, &j->orig,
						       NULL, 0)))
				return;
			qp->st.tx_pkts++;
			(*budget)--;
			qp->rd_replays -= j->replay;
			qp->rd_head++;
			continue;
		}
		/* A paced QP's READ responses go at its rate too (what it
		 * sends for its peer's READs is most of what it sends then);
		 * its ACKs and atomic responses do not wait. */
		if (unlikely(paced) && eth_pace_hold(qp))
			return;		/* on the pacing wheel until its time */
		/* A zero-length READ has no source (host NULL). */
		if (unlikely(!eth_img_response(qp,
				first && last ? ROCE_OP_READ_RESP_ONLY :
				first ? ROCE_OP_READ_RESP_FIRST :
				last ? ROCE_OP_READ_RESP_LAST :
				       ROCE_OP_READ_RESP_MIDDLE,
				j->psn, j->msn, NULL,
				seg ? j->host + j->sent : NULL, seg)))
			return;
		if (unlikely(paced))
			eth_pace_charge(qp);
		j->sent += seg;
		j->psn = roce_psn_add(j->psn, 1);
		qp->st.tx_pkts++;
		(*budget)--;
		if (last) {
			qp->rd_replays -= j->replay;
			qp->rd_head++;
		}
	}
	if ((qp->flags & DROCE_QPF_ACK_PENDING) && qp->rd_head == qp->rd_tail &&
	    *budget) {
		bool failed;

		if (unlikely(!eth_qp_tmpl_ok(qp)) && !eth_qp_resolve(qp, &failed))
			return;
		qp->flags &= ~DROCE_QPF_ACK_PENDING;
		eth_send_ack(qp, qp->resp_ack_syndrome, qp->resp_ack_psn);
		(*budget)--;
		if (qp->flags & DROCE_QPF_RESP_DEAD) {
			qp->flags &= ~DROCE_QPF_RESP_DEAD;
			eth_qp_error(qp);
		}
	}
}

/*
 * A duplicate READ or atomic at `psn` means the requester went back to
 * psn and will ask again for everything after it, in order: responses
 * still queued for psn or later are obsolete. Dropping them keeps the
 * queue to what is really outstanding (so max_dest_rd_atomic counts
 * requests, not replays) and avoids sending the same data twice.
 */
static void drop_responses_from(struct droce_qp *qp, uint32_t psn)
{
	while (qp->rd_tail != qp->rd_head) {
		const struct droce_read_job *j =
			&qp->rd_jobs[(qp->rd_tail - 1) & qp->rd_mask];

		if (roce_psn_diff(j->psn_first, psn) < 0)
			break;
		qp->rd_replays -= j->replay;
		qp->rd_tail--;
	}
}

/* -------------------------------------------------------- dispatch */

static bool opcode_in_sequence(const struct droce_qp *qp, uint8_t op)
{
	bool send_cont = op == ROCE_OP_SEND_MIDDLE || op == ROCE_OP_SEND_LAST ||
			 op == ROCE_OP_SEND_LAST_IMM || op == ROCE_OP_SEND_LAST_INV;
	bool write_cont = op == ROCE_OP_WRITE_MIDDLE || op == ROCE_OP_WRITE_LAST ||
			  op == ROCE_OP_WRITE_LAST_IMM;

	/* IBTA 9.7.5.1.1 / C9-?: MIDDLE and LAST only inside their message,
	 * and a new message only after the previous one ended. */
	if (qp->resp_in_send)
		return send_cont;
	if (qp->resp_in_write)
		return write_cont;
	return !send_cont && !write_cont;
}

/*
 * A UD datagram: Q_Key check (IBTA 10.2.5), a receive or a silent drop,
 * then the 40-byte GRH area and the payload. For RoCEv2 over IPv4 the GRH
 * area holds the IPv4 header in its last 20 bytes, as applications expect.
 */
static void resp_rx_ud(struct droce_qp *qp, const struct roce_pkt *p,
		       const struct rte_mbuf *m)
{
	uint8_t op = p->opcode & 0x1f;
	uint8_t grh[40];
	int ret;

	if (op != ROCE_OP_SEND_ONLY && op != ROCE_OP_SEND_ONLY_IMM) {
		qp->dev->st.rx_malformed++;
		return;
	}
	if (p->deth_qkey != qp->qkey) {
		qp->dev->st.rx_bad_qkey++;
		return;
	}
	if (!claim_recv(qp)) {
		qp->dev->st.rx_no_recv++;
		return;
	}
	/* IPv6: the GRH is the IPv6 header itself; IPv4: the last 20 bytes. */
	memset(grh, 0, sizeof(grh));
	if (p->ipv6 ? eth_mbuf_copy(m, p->l3_off, grh, 40) :
		      eth_mbuf_copy(m, p->l3_off, grh + 20, 20))
		return;
	ret = eth_sge_scatter(qp, recv_pd(qp), qp->resp_sge, qp->resp_nsge, 0,
			      NULL, grh, 0, sizeof(grh), NULL);
	if (ret == 0)
		ret = eth_sge_scatter(qp, recv_pd(qp), qp->resp_sge,
				      qp->resp_nsge, sizeof(grh), m, NULL,
				      p->payload_off, p->payload_len, NULL);
	recv_complete_from(qp, IBV_WC_RECV,
			   ret == 0 ? IBV_WC_SUCCESS :
			   ret == ETH_SGE_LEN ? IBV_WC_LOC_LEN_ERR :
						IBV_WC_LOC_PROT_ERR,
			   (uint32_t)sizeof(grh) + p->payload_len,
			   IBV_WC_GRH | (op == ROCE_OP_SEND_ONLY_IMM ?
					 IBV_WC_WITH_IMM : 0),
			   p->imm, p->deth_src_qp, p->se);
}

/*
 * May an RC request be taken straight (below)? The QP takes requests (RTR
 * on, not in error, IBTA 10.3.1), the frame is the PSN expected and no
 * message is in progress: the general way's checks up to the opcode's own
 * would all pass, and it would only clear NAK_SENT on the way.
 */
static inline bool straight_ok(const struct droce_qp *qp,
			       const struct roce_pkt *p)
{
	return qp->state >= IBV_QPS_RTR && qp->state != IBV_QPS_ERR &&
	       !(qp->flags & DROCE_QPF_RESP_DEAD) && p->psn == qp->resp_epsn &&
	       !qp->resp_in_send && !qp->resp_in_write;
}

/*
 * The common request taken straight: an RC WRITE ONLY carrying data, at
 * the expected PSN, with no message in progress, whose R_Key grants it.
 * It makes the checks of the general way below (eth_resp_rx, do_write)
 * that such a frame meets, and leaves the QP as that way would; false,
 * with nothing changed, sends every other frame (a duplicate, a gap, a
 * zero-length WRITE, one that draws a NAK) the general way. (An ONLY's
 * ICRC is never left for the copy: eth_resp_place_late.)
 */
static inline bool write_only_straight(struct droce_qp *qp,
				       const struct roce_pkt *p,
				       const struct rte_mbuf *m)
{
	uint32_t len = p->payload_len;
	uint64_t epoch;
	uint8_t *dst;

	if (!straight_ok(qp, p) || len > qp->mtu || len == 0 ||
	    p->reth_len != len ||
	    !(qp->access & IBV_ACCESS_REMOTE_WRITE))
		return false;
	dst = rkey_ptr(qp, p->reth_rkey, p->reth_va, len,
		       IBV_ACCESS_REMOTE_WRITE, &epoch);
	if (unlikely(dst == NULL))
		return false;
	qp->flags &= ~DROCE_QPF_NAK_SENT;
	qp->resp_write_epoch = epoch;
	qp->resp_write_key = p->reth_rkey;
	qp->resp_write_len = len;
	qp->resp_write_left = 0;
	qp->resp_write_ptr = dst + len;
	if (unlikely(eth_mbuf_copy(m, p->payload_off, dst, len))) {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
		return true;
	}
	qp->resp_msn = roce_psn_add(qp->resp_msn, 1);
	qp->resp_epsn = roce_psn_add(p->psn, 1);
	owe_ack(qp, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID, p->psn);
	return true;
}

/* The same for an RC SEND ONLY (with or without immediate): do_send's
 * way for a message of one packet; false, with nothing changed, when it
 * may not be taken straight or finds no receive (the general way then
 * answers with an RNR NAK). */
static inline bool send_only_straight(struct droce_qp *qp,
				      const struct roce_pkt *p,
				      const struct rte_mbuf *m, bool imm)
{
	uint32_t len = p->payload_len;
	int ret;

	if (!straight_ok(qp, p) || len > qp->mtu || !claim_recv(qp))
		return false;
	qp->flags &= ~DROCE_QPF_NAK_SENT;
	qp->resp_recv_off = 0;
	ret = eth_sge_scatter(qp, recv_pd(qp), qp->resp_sge, qp->resp_nsge, 0,
			      m, NULL, p->payload_off, len, NULL);
	if (unlikely(ret == ETH_SGE_LEN)) {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, IBV_WC_LOC_LEN_ERR);
		return true;
	}
	if (unlikely(ret)) {
		resp_fail(qp, p->psn, ROCE_NAK_REMOTE_OP, IBV_WC_LOC_PROT_ERR);
		return true;
	}
	qp->resp_recv_off = len;
	recv_complete(qp, IBV_WC_RECV, IBV_WC_SUCCESS, len, imm, p->imm,
		      p->se);
	qp->resp_msn = roce_psn_add(qp->resp_msn, 1);
	qp->resp_epsn = roce_psn_add(p->psn, 1);
	owe_ack(qp, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID, p->psn);
	return true;
}

/* The same for an RC READ request of one response packet (do_read's
 * way): false, with nothing changed, for anything else, an R_Key that
 * does not grant it, or a queue of owed responses that is full (the
 * general way NAKs) or holds replays to drop first. */
static inline bool read_one_straight(struct droce_qp *qp,
				     const struct roce_pkt *p)
{
	uint32_t len = p->reth_len, queued = qp->rd_tail - qp->rd_head;
	uint32_t limit = RTE_MAX(qp->max_dest_rd_atomic, (uint8_t)1);
	uint64_t epoch;
	uint8_t *src;

	if (!straight_ok(qp, p) || p->payload_len != 0 || len == 0 ||
	    len > qp->mtu ||
	    !(qp->access & IBV_ACCESS_REMOTE_READ) ||
	    queued - qp->rd_replays >= limit || queued > qp->rd_mask)
		return false;
	src = rkey_ptr(qp, p->reth_rkey, p->reth_va, len,
		       IBV_ACCESS_REMOTE_READ, &epoch);
	if (unlikely(src == NULL))
		return false;
	qp->flags &= ~DROCE_QPF_NAK_SENT;
	qp->resp_msn = roce_psn_add(qp->resp_msn, 1);
	queue_read(qp, p, src, epoch, false);
	qp->resp_epsn = roce_psn_add(p->psn, 1);
	return true;
}

/* (eth_resp_place_late predicts the checks here and in do_write/do_send
 * for the frames it lets through (MIDDLE and LAST, a SEND's FIRST and
 * ONLY): a check added before their copy must be added there too, or a
 * damaged frame could draw an answer.
 * write_only_straight, send_only_straight and read_one_straight repeat
 * the ones their frames meet.) */
void eth_resp_rx(struct droce_qp *qp, const struct roce_pkt *p,
		 const struct rte_mbuf *m, bool icrc_late)
{
	uint8_t op;
	uint32_t flags;
	int32_t d;

	if (!icrc_late) {
		switch (p->opcode) {
		case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_WRITE_ONLY):
			if (write_only_straight(qp, p, m))
				return;
			break;
		case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_SEND_ONLY):
		case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_SEND_ONLY_IMM):
			if (send_only_straight(qp, p, m, p->opcode ==
					       ROCE_OPCODE(ROCE_TRANSPORT_RC,
							   ROCE_OP_SEND_ONLY_IMM)))
				return;
			break;
		case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_READ_REQ):
			if (read_one_straight(qp, p))
				return;
			break;
		case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_CMP_SWAP):
		case ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_FETCH_ADD):
			/* (do_atomic makes the rest of the checks) */
			if (!straight_ok(qp, p) || p->payload_len != 0)
				break;
			qp->flags &= ~DROCE_QPF_NAK_SENT;
			if (do_atomic(qp, p, p->opcode & 0x1f))
				qp->resp_epsn = roce_psn_add(p->psn, 1);
			return;
		}
	}
	op = p->opcode & 0x1f;
	flags = roce_opcode_info(p->opcode)->flags;

	/* Requests are taken from RTR on (IBTA 10.3.1); not in error. */
	if (qp->state < IBV_QPS_RTR || qp->state == IBV_QPS_ERR ||
	    (qp->flags & DROCE_QPF_RESP_DEAD))
		return;
	if (qp->transport == ROCE_TRANSPORT_UD) {
		resp_rx_ud(qp, p, m);
		return;
	}
	d = roce_psn_diff(p->psn, qp->resp_epsn);
	if (qp->transport == ROCE_TRANSPORT_UC) {
		/* IBTA 9.8.3: a gap loses the message in progress; the QP
		 * picks up again at the next FIRST or ONLY, whatever its PSN. */
		if (d != 0 || !opcode_in_sequence(qp, op)) {
			qp->resp_in_send = qp->resp_in_write = false;
			qp->st.seq_err++;
			qp->dev->st.rx_seq_err++;
			if (!(flags & ROCE_OPF_FIRST))
				return;
			qp->resp_epsn = p->psn;
		}
		d = 0;
	}
	if (d > 0) {
		/* A gap: NAK once per expected PSN, drop until it arrives. */
		qp->st.seq_err++;
		qp->dev->st.rx_seq_err++;
		if (!(qp->flags & DROCE_QPF_NAK_SENT)) {
			qp->flags |= DROCE_QPF_NAK_SENT;
			owe_ack(qp, ROCE_AETH_NAK | ROCE_NAK_PSN_SEQ_ERR,
				qp->resp_epsn);
		}
		return;
	}
	if (d < 0) {
		/* Duplicate (IBTA 9.7.5.1.2): acknowledge, never re-execute a
		 * SEND or WRITE. A duplicate READ is answered again. */
		qp->st.dup++;
		qp->dev->st.rx_dup++;
		if (op == ROCE_OP_READ_REQ || op == ROCE_OP_CMP_SWAP ||
		    op == ROCE_OP_FETCH_ADD)
			drop_responses_from(qp, p->psn);
		if (op == ROCE_OP_CMP_SWAP || op == ROCE_OP_FETCH_ADD) {
			/* Answer from the cache; never execute twice. */
			for (uint32_t i = 0; i <= qp->rd_mask; i++) {
				if (qp->atm_cache[i].valid &&
				    qp->atm_cache[i].psn == p->psn &&
				    qp->rd_tail - qp->rd_head <= qp->rd_mask) {
					qp->dev->st.atomic_replays++;
					queue_atomic_ack(qp, p->psn,
							 qp->atm_cache[i].orig, true);
					break;
				}
			}
			return;
		}
		if (op == ROCE_OP_READ_REQ) {
			uint8_t *src = NULL;
			uint64_t epoch = 0;

			if (qp->rd_tail - qp->rd_head > qp->rd_mask)
				return;
			if (p->reth_len) {
				src = rkey_ptr(qp, p->reth_rkey, p->reth_va,
					       p->reth_len, IBV_ACCESS_REMOTE_READ,
					       &epoch);
				if (src == NULL)
					return;
			}
			qp->dev->st.read_replays++;
			qp->rd_replays++;
			queue_read(qp, p, src, epoch, true);
			return;
		}
		owe_ack(qp, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID,
			roce_psn_add(qp->resp_epsn, ROCE_PSN_MASK));
		return;
	}
	if (!icrc_late)		/* (else once it proved sound, below) */
		qp->flags &= ~DROCE_QPF_NAK_SENT;
	if (!opcode_in_sequence(qp, op)) {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
		return;
	}
	/* FIRST and MIDDLE carry exactly a path MTU, LAST and ONLY at most
	 * one (IBTA 9.7.5.1.3; a violation is an invalid request). */
	if (p->payload_len > qp->mtu ||
	    (!(flags & ROCE_OPF_LAST) && (flags & ROCE_OPF_PAYLOAD) &&
	     p->payload_len != qp->mtu)) {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
		return;
	}
	if (flags & ROCE_OPF_SEND) {
		if (!do_send(qp, p, m, flags, icrc_late))
			return;
	} else if (flags & ROCE_OPF_WRITE) {
		if (!do_write(qp, p, m, flags, icrc_late))
			return;
	} else if (op == ROCE_OP_READ_REQ) {
		if (!do_read(qp, p))
			return;
		qp->resp_epsn = roce_psn_add(qp->resp_epsn,
					     read_npkts(qp, p->reth_len));
		return;	/* the responses acknowledge it */
	} else if (op == ROCE_OP_CMP_SWAP || op == ROCE_OP_FETCH_ADD) {
		if (!do_atomic(qp, p, op))
			return;
		qp->resp_epsn = roce_psn_add(p->psn, 1);
		return;	/* the ATOMIC ACKNOWLEDGE acknowledges it */
	} else {
		resp_fail(qp, p->psn, ROCE_NAK_INVALID_REQ, 0);
		return;
	}
	qp->resp_epsn = roce_psn_add(p->psn, 1);
	if (icrc_late)
		qp->flags &= ~DROCE_QPF_NAK_SENT;
	if (qp->transport == ROCE_TRANSPORT_RC)
		owe_ack(qp, ROCE_AETH_ACK | ROCE_AETH_CREDIT_INVALID, p->psn);
}
