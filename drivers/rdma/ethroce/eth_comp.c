/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completer: what comes back to a requester (ACK, NAK, RNR NAK, READ
 * responses) retires send WQEs in order, places READ data, and maps each
 * NAK class to its work completion status (IBTA 9.7.5.1.4 and 10.8.3):
 *
 *   NAK PSN sequence error      -> go back N from the NAK's PSN
 *   RNR NAK                     -> wait the RNR timer, then go back N
 *   NAK invalid request         -> IBV_WC_REM_INV_REQ_ERR
 *   NAK remote access error     -> IBV_WC_REM_ACCESS_ERR
 *   NAK remote operational err  -> IBV_WC_REM_OP_ERR
 *   NAK invalid RD request      -> IBV_WC_REM_INV_RD_REQ_ERR
 */
#include <string.h>
#include <endian.h>

#include "eth_int.h"

/* RNR NAK timer field (IBTA table 45), in units of 10 us. */
static const uint32_t rnr_timer_10us[32] = {
	65536, 1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192,
	256, 384, 512, 768, 1024, 1536, 2048, 3072, 4096, 6144, 8192, 12288,
	16384, 24576, 32768, 49152,
};

static void publish_sq_ci(struct droce_qp *qp)
{
	__atomic_store_n(&qp->sq_ci, qp->req_acked, __ATOMIC_RELEASE);
}

/*
 * Retire, in order, the WQEs whose last PSN is at or before `psn` (and
 * whose response data arrived). Runs for any acknowledgement, new or
 * late: a WQE can finish after a go-back-N already moved req_cur back to
 * it, and then the requester skips ahead instead of sending it again.
 */
static void ack_upto(struct droce_qp *qp, uint32_t psn)
{
	uint32_t next = roce_psn_add(psn, 1);
	/* The walk in locals, not re-read after each call: nothing it
	 * calls moves them, and one ACK retires ~16 WQEs of a 64 B WRITE
	 * stream. */
	const struct droce_swqe_state *ring = qp->sq_state;
	const uint32_t hwm = qp->req_hwm, mask = qp->sq_cnt - 1;
	uint32_t i;

	if (roce_psn_diff(next, qp->req_psn_max) > 0)
		return;	/* acknowledges what we never sent: ignore */
	for (i = qp->req_acked; i != hwm; i++) {
		const struct droce_swqe_state *st = &ring[i & mask];

		if (roce_psn_diff(st->psn_last, psn) > 0)
			break;
		if (likely(st->status == IBV_WC_SUCCESS &&
			   !op_is_rd_atomic(st->opcode))) {
			/* (an unsignalled success has nothing to report: no
			 * call; publish_sq_ci below hands its slot back) */
			if (st->flags & DROCE_WQE_SIGNALED)
				eth_complete_send(qp, i, IBV_WC_SUCCESS);
			continue;
		}
		qp->req_acked = i;
		if (st->status != IBV_WC_SUCCESS) {
			/* A local error waited for the WQEs before it. */
			eth_qp_mark_error(qp);
			eth_complete_send(qp, qp->req_acked, st->status);
			qp->req_acked++;
			qp->flags &= ~DROCE_QPF_REQ_STALL;
			eth_qp_error(qp);
			return;
		}
		if (!st->done) {
			/* A later ACK implies the READ/atomic response was lost
			 * (IBTA 9.7.7.2.1 implied NAK): ask again, once per
			 * missing PSN, as for a gap in READ responses. Every
			 * response of the later READs still in flight implies
			 * the same: going back for each one made a slow
			 * responder replay whole READs hundreds of times
			 * (rxe under loss) until this QP ran out of retries.
			 * If the request is lost again, the timer resends. */
			uint32_t want = roce_psn_add(st->psn_first, st->rcvd);

			if (roce_psn_diff(qp->req_una_psn, st->psn_first) > 0)
				qp->req_una_psn = want;
			publish_sq_ci(qp);
			if (!qp->req_gap_seen || qp->req_gap_psn != want) {
				qp->req_gap_seen = true;
				qp->req_gap_psn = want;
				eth_req_retransmit(qp, want);
			}
			return;
		}
		/* A READ or atomic whose response has come (a CQE if
		 * signalled). */
		eth_complete_send(qp, i, IBV_WC_SUCCESS);
	}
	qp->req_acked = i;
	if ((int32_t)(qp->req_acked - qp->req_cur) > 0) {
		/* Completed past a rewind: resume after what is done. */
		const struct droce_swqe_state *prev =
			&qp->sq_state[(qp->req_acked - 1) & (qp->sq_cnt - 1)];

		qp->req_cur = qp->req_acked;
		qp->req_off = 0;
		qp->req_psn = roce_psn_add(prev->psn_last, 1);
	}
	if (roce_psn_diff(next, qp->req_una_psn) > 0) {
		bool rnr_over = qp->req_rnr_wait;

		qp->req_una_psn = next;
		qp->req_retries = 0;
		/* Progress restarts the clock for what is still outstanding. */
		qp->req_timer_tsc = 0;
		/* Acknowledged past the PSN an RNR NAK held us at (the
		 * responder took a copy of it after all, the link duplicated
		 * it): the wait is over. Left waiting, with its timer just
		 * cleared, the requester would never send again. Resend from
		 * here: what followed may have died as sequence errors. */
		qp->req_rnr_wait = false;
		if (qp->req_una_psn != qp->req_psn_max) {
			if (rnr_over)
				eth_req_retransmit(qp, qp->req_una_psn);
			eth_req_arm_timer(qp);
		}
	}
	publish_sq_ci(qp);
	/* A visit only for a requester with WQEs still to send (held back
	 * by the window, a fence, the READ limit, or rewound above): one
	 * that has sent all that was posted is woken by its next doorbell.
	 * A ping-pong's ACK otherwise bought an empty visit every hop. */
	if (qp->req_cur != __atomic_load_n(&qp->sq_db, __ATOMIC_ACQUIRE))
		eth_qp_activate(qp->eng, qp);
}

static void nak_fail(struct droce_qp *qp, uint32_t psn, uint8_t status)
{
	ack_upto(qp, roce_psn_add(psn, ROCE_PSN_MASK));
	if (qp->state == IBV_QPS_ERR || qp->req_acked == qp->req_hwm)
		return;
	eth_qp_mark_error(qp);
	eth_complete_send(qp, qp->req_acked, status);
	qp->req_acked++;
	publish_sq_ci(qp);
	eth_qp_error(qp);
}

static void rx_ack(struct droce_qp *qp, uint8_t syn, uint32_t psn)
{
	switch (syn & ROCE_AETH_CLASS_MASK) {
	case ROCE_AETH_ACK:
		qp->req_rnr_retries = 0;
		ack_upto(qp, psn);
		return;
	case ROCE_AETH_RNR_NAK: {
		uint64_t wait;

		qp->dev->st.rx_naks++;
		qp->dev->st.rx_rnr_naks++;
		qp->st.naks_rx++;
		qp->st.rnr_naks_rx++;
		ack_upto(qp, roce_psn_add(psn, ROCE_PSN_MASK));
		if (qp->state != IBV_QPS_RTS)
			return;
		/* rnr_retry 7 means retry for ever (IBTA 9.7.5.2.8). */
		if (qp->rnr_retry != 7 && qp->req_rnr_retries >= qp->rnr_retry) {
			qp->dev->st.rnr_retry_exc++;
			nak_fail(qp, psn, IBV_WC_RNR_RETRY_EXC_ERR);
			return;
		}
		qp->req_rnr_retries++;
		qp->req_rnr_wait = true;
		wait = (uint64_t)rnr_timer_10us[syn & 0x1f] * qp->eng->tsc_hz / 100000;
		qp->req_timer_tsc = eth_turn_tsc(qp->eng) + wait;
		/* Resend from the NAKed PSN when the timer fires. */
		qp->req_una_psn = psn;
		eth_qp_timer_arm(qp->eng, qp);
		return;
	}
	case ROCE_AETH_NAK:
		qp->dev->st.rx_naks++;
		qp->st.naks_rx++;
		switch (syn & 0x1f) {
		case ROCE_NAK_PSN_SEQ_ERR:
			qp->dev->st.rx_nak_seq++;
			/* The responder NAKs an expected PSN once; the same
			 * NAK again is a copy of that one (the link duplicated
			 * it): going back twice would resend all twice. */
			if (qp->req_seq_nak_seen && qp->req_seq_nak_psn == psn) {
				qp->dev->st.rx_dup++;
				return;
			}
			qp->req_seq_nak_seen = true;
			qp->req_seq_nak_psn = psn;
			ack_upto(qp, roce_psn_add(psn, ROCE_PSN_MASK));
			if (qp->state == IBV_QPS_RTS)
				eth_req_retransmit(qp, psn);
			return;
		case ROCE_NAK_INVALID_REQ:
			qp->dev->st.rx_nak_inv_req++;
			nak_fail(qp, psn, IBV_WC_REM_INV_REQ_ERR);
			return;
		case ROCE_NAK_REMOTE_ACCESS:
			qp->dev->st.rx_nak_rem_access++;
			nak_fail(qp, psn, IBV_WC_REM_ACCESS_ERR);
			return;
		case ROCE_NAK_REMOTE_OP:
			qp->dev->st.rx_nak_rem_op++;
			nak_fail(qp, psn, IBV_WC_REM_OP_ERR);
			return;
		case ROCE_NAK_INVALID_RD_REQ:
			nak_fail(qp, psn, IBV_WC_REM_INV_RD_REQ_ERR);
			return;
		default:
			nak_fail(qp, psn, IBV_WC_BAD_RESP_ERR);
			return;
		}
	default:	/* reserved class */
		qp->dev->st.rx_malformed++;
		return;
	}
}

/*
 * Whether eth_rx_one may leave this frame's ICRC to the copy of its
 * payload into the READ's buffer (eth_rx_late_start): a long response of
 * the oldest outstanding READ, the next one it waits for, that the checks
 * of rx_read_resp (kept in step with it here) let through to the copy.
 * The frame does not pick that memory, the requester's own WQE does: a
 * damaged frame writes only into the buffer of a READ not complete, which
 * the sound response, asked for again, overwrites before the completion
 * (a WRITE's RETH, by contrast, is checked before it is trusted). Its
 * implied acknowledgement of the PSNs before it is taken after the copy
 * proved the frame sound; with the READ the oldest WQE and everything
 * before it acknowledged (a FIRST or ONLY: the unacknowledged PSN is the
 * READ's first; a MIDDLE or LAST: responses already placed) it retires
 * nothing. A FIRST or ONLY that would retire WQEs before the READ, a
 * response out of order, past a rewind: checked first.
 */
bool eth_comp_place_late(const struct droce_qp *qp, const struct roce_pkt *p)
{
	uint8_t op = p->opcode & 0x1f;
	const struct droce_swqe_state *st;
	uint32_t off;

	if (qp->transport != ROCE_TRANSPORT_RC ||
	    (p->opcode & 0xe0) != ROCE_TRANSPORT_RC || !qp->tmpl_ready ||
	    qp->state != IBV_QPS_RTS || qp->req_acked == qp->req_hwm ||
	    (int32_t)(qp->req_acked - qp->req_cur) > 0)
		return false;
	st = &qp->sq_state[qp->req_acked & (qp->sq_cnt - 1)];
	if (st->opcode != MLX5_OPCODE_RDMA_READ || st->done)
		return false;
	switch (op) {
	case ROCE_OP_READ_RESP_FIRST:
	case ROCE_OP_READ_RESP_ONLY:
		if (st->rcvd != 0 || p->psn != st->psn_first ||
		    qp->req_una_psn != p->psn)
			return false;
		return op == ROCE_OP_READ_RESP_FIRST ?
		       p->payload_len == qp->mtu && st->npkts > 1 :
		       p->payload_len == RTE_MIN(qp->mtu, st->length) &&
		       st->npkts == 1;
	case ROCE_OP_READ_RESP_MIDDLE:
	case ROCE_OP_READ_RESP_LAST:
		if (st->rcvd == 0 ||
		    p->psn != roce_psn_add(st->psn_first, st->rcvd))
			return false;
		off = st->rcvd * qp->mtu;
		return op == ROCE_OP_READ_RESP_MIDDLE ?
		       p->payload_len == qp->mtu && st->rcvd + 1 < st->npkts :
		       p->payload_len == RTE_MIN(qp->mtu, st->length -
						 RTE_MIN(off, st->length)) &&
		       st->rcvd + 1 == st->npkts;
	default:
		return false;
	}
}

/*
 * The common response taken straight: the READ RESPONSE ONLY of the
 * oldest outstanding WQE, a READ of one packet, with everything before it
 * retired and acknowledged (so the implied acknowledgement rx_read_resp
 * starts with retires nothing). rx_read_resp's checks for such a frame,
 * its scatter, its completion; false, with nothing changed, for anything
 * else, a scatter that fails among it (rx_read_resp then fails the WQE).
 */
static inline bool read_only_straight(struct droce_qp *qp,
				      const struct roce_pkt *p,
				      const struct rte_mbuf *m)
{
	struct droce_swqe_state *st;
	const struct mlx5_wqe_data_seg *sge;
	const struct mlx5_wqe_ctrl_seg *c;
	uint32_t nsge;

	if (qp->state != IBV_QPS_RTS || qp->req_acked == qp->req_hwm ||
	    (int32_t)(qp->req_acked - qp->req_cur) > 0 ||
	    qp->req_una_psn != p->psn)
		return false;
	st = &qp->sq_state[qp->req_acked & (qp->sq_cnt - 1)];
	if (st->opcode != MLX5_OPCODE_RDMA_READ || st->done || st->rcvd != 0 ||
	    st->npkts != 1 || st->psn_first != p->psn ||
	    p->payload_len != st->length)
		return false;
	c = (const void *)droce_sq_slot(qp, qp->req_acked);
	nsge = (be32toh(c->qpn_ds) & 0x3f);
	nsge = nsge > 2 ? nsge - 2 : 0;
	sge = (const void *)((const uint8_t *)c + 2 * DROCE_SEG);
	if (nsge * DROCE_SEG + 2 * DROCE_SEG > qp->sq_stride ||
	    unlikely(eth_sge_scatter(qp, qp->pd, sge, nsge, 0, m, NULL,
				     p->payload_off, p->payload_len, NULL)))
		return false;
	st->rcvd = 1;
	st->done = 1;
	eth_rd_uncount(qp, st);
	ack_upto(qp, p->psn);
	return true;
}

/* (eth_comp_place_late predicts the checks here for a response it lets
 * through: a check added before the scatter must be added there too.) */
static void rx_read_resp(struct droce_qp *qp, const struct roce_pkt *p,
			 const struct rte_mbuf *m, uint8_t op, bool late)
{
	struct droce_swqe_state *st;
	const struct mlx5_wqe_data_seg *sge;
	const struct mlx5_wqe_ctrl_seg *c;
	uint32_t off, want, nsge, crc = 0;
	int ret;

	/* Everything before the READ is implicitly acknowledged (a frame
	 * still to be proved sound: once it is, below). */
	if (!late)
		ack_upto(qp, roce_psn_add(p->psn, ROCE_PSN_MASK));
	if (qp->state != IBV_QPS_RTS || qp->req_acked == qp->req_hwm)
		return;
	st = &qp->sq_state[qp->req_acked & (qp->sq_cnt - 1)];
	if (st->opcode != MLX5_OPCODE_RDMA_READ || st->done) {
		qp->dev->st.rx_dup++;
		return;
	}
	{
		uint32_t want_psn = roce_psn_add(st->psn_first, st->rcvd);
		int32_t gap = roce_psn_diff(p->psn, want_psn);

		if (gap < 0) {
			qp->dev->st.rx_dup++;	/* already placed */
			return;
		}
		if (gap > 0) {
			/* A response was lost (IBTA 9.7.5.1.5): ask again from
			 * the first missing one, once per missing PSN. */
			qp->dev->st.rx_dup++;
			qp->req_una_psn = want_psn;	/* not past the hole */
			if (!qp->req_gap_seen || qp->req_gap_psn != want_psn) {
				qp->req_gap_seen = true;
				qp->req_gap_psn = want_psn;
				eth_req_retransmit(qp, want_psn);
			}
			return;
		}
	}
	off = st->rcvd * qp->mtu;
	want = RTE_MIN(qp->mtu, st->length - RTE_MIN(off, st->length));
	/* C9-?: FIRST/MIDDLE are full MTU; LAST/ONLY carry what is left. */
	if ((op == ROCE_OP_READ_RESP_FIRST || op == ROCE_OP_READ_RESP_MIDDLE) ?
	    (p->payload_len != qp->mtu || st->rcvd + 1 >= st->npkts) :
	    (p->payload_len != want || st->rcvd + 1 != st->npkts)) {
		nak_fail(qp, p->psn, IBV_WC_BAD_RESP_ERR);
		return;
	}
	c = (const void *)droce_sq_slot(qp, qp->req_acked);
	nsge = (be32toh(c->qpn_ds) & 0x3f);
	nsge = nsge > 2 ? nsge - 2 : 0;
	sge = (const void *)((const uint8_t *)c + 2 * DROCE_SEG);
	if (nsge * DROCE_SEG + 2 * DROCE_SEG > qp->sq_stride)
		nsge = 0;
	if (late)
		crc = eth_rx_late_start(m, p);
	ret = eth_sge_scatter(qp, qp->pd, sge, nsge, off, m, NULL, p->payload_off,
			      p->payload_len, late ? &crc : NULL);
	if (late) {
		if (!(ret == 0 ? eth_rx_late_done(qp, m, p, crc) :
				 eth_rx_late_whole(qp, m, p)))
			return;
		ack_upto(qp, roce_psn_add(p->psn, ROCE_PSN_MASK));
	}
	if (unlikely(ret)) {
		st->status = ret == ETH_SGE_LEN ? IBV_WC_LOC_LEN_ERR :
						  IBV_WC_LOC_PROT_ERR;
		eth_qp_mark_error(qp);
		eth_complete_send(qp, qp->req_acked, st->status);
		qp->req_acked++;
		publish_sq_ci(qp);
		eth_qp_error(qp);
		return;
	}
	st->rcvd++;
	if (st->rcvd == st->npkts) {
		st->done = 1;
		eth_rd_uncount(qp, st);
		ack_upto(qp, p->psn);
	}
}

static void rx_atomic_ack(struct droce_qp *qp, const struct roce_pkt *p)
{
	struct droce_swqe_state *st;
	const struct mlx5_wqe_ctrl_seg *c;
	const struct mlx5_wqe_data_seg *sge;
	uint8_t *dst;

	/* Everything before it is implicitly acknowledged; when it answers
	 * the oldest WQE, with all before retired and acknowledged, that
	 * retires nothing and is skipped (as read_only_straight). */
	st = &qp->sq_state[qp->req_acked & (qp->sq_cnt - 1)];
	if (qp->state != IBV_QPS_RTS || qp->req_acked == qp->req_hwm ||
	    (int32_t)(qp->req_acked - qp->req_cur) > 0 ||
	    qp->req_una_psn != p->psn || st->psn_first != p->psn ||
	    !op_is_atomic(st->opcode) || st->done)
		ack_upto(qp, roce_psn_add(p->psn, ROCE_PSN_MASK));
	if (qp->state != IBV_QPS_RTS || qp->req_acked == qp->req_hwm)
		return;
	st = &qp->sq_state[qp->req_acked & (qp->sq_cnt - 1)];
	if (!op_is_atomic(st->opcode) || st->done || st->psn_first != p->psn) {
		qp->dev->st.rx_dup++;
		return;
	}
	/* The original value, in host order, into the first 8 local bytes
	 * (the post path required the SGEs to hold at least 8). */
	c = (const void *)droce_sq_slot(qp, qp->req_acked);
	sge = (const void *)((const uint8_t *)c + 3 * DROCE_SEG);
	dst = droce_mr_translate(qp->dev, qp->pd, be32toh(sge->lkey),
				 be64toh(sge->addr), 8, IBV_ACCESS_LOCAL_WRITE);
	if (unlikely(dst == NULL || be32toh(sge->byte_count) < 8)) {
		st->status = IBV_WC_LOC_PROT_ERR;
		eth_qp_mark_error(qp);
		eth_complete_send(qp, qp->req_acked, st->status);
		qp->req_acked++;
		publish_sq_ci(qp);
		eth_qp_error(qp);
		return;
	}
	memcpy(dst, &p->atmack_orig, 8);
	st->done = 1;
	eth_rd_uncount(qp, st);
	ack_upto(qp, p->psn);
}

void eth_comp_rx(struct droce_qp *qp, const struct roce_pkt *p,
		 const struct rte_mbuf *m, bool icrc_late)
{
	uint8_t op = p->opcode & 0x1f;

	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	switch (op) {
	case ROCE_OP_ACK:
		rx_ack(qp, p->aeth_syndrome, p->psn);
		break;
	case ROCE_OP_READ_RESP_ONLY:
		if (!icrc_late && read_only_straight(qp, p, m))
			break;
		/* fall through */
	case ROCE_OP_READ_RESP_FIRST:
	case ROCE_OP_READ_RESP_MIDDLE:
	case ROCE_OP_READ_RESP_LAST:
		rx_read_resp(qp, p, m, op, icrc_late);
		break;
	case ROCE_OP_ATOMIC_ACK:
		rx_atomic_ack(qp, p);
		break;
	default:
		qp->dev->st.rx_malformed++;
		break;
	}
}

void eth_comp_rx_ack(struct droce_qp *qp, uint8_t syndrome, uint32_t psn)
{
	if (qp->state != IBV_QPS_RTS && qp->state != IBV_QPS_SQD)
		return;
	rx_ack(qp, syndrome, psn);
}
