/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet pacing: a QP given a rate (ibv_modify_qp_rate_limit, or
 * IBV_QP_RATE_LIMIT in ibv_modify_qp) sends no faster than that many kbit/s
 * of frame bytes, in bursts of at most its burst size: its requests and
 * its READ responses, one clock for both (ACKs and atomic responses do not
 * wait). The requester and the responder ask eth_pace_hold() before each
 * such packet; a QP that must wait is filed on the
 * engine's pacing wheel under its next send time and is not visited until
 * then, so a paced QP costs nothing while it waits and an unpaced one one
 * branch per packet.
 *
 * The clock is a GCRA (the "virtual scheduling" form of a token bucket):
 * pace_tat is when the QP's bytes so far would have left at exactly its
 * rate; a packet may leave while pace_tat is less than the burst ahead of
 * now. Over any interval a QP sends at most its rate times the interval
 * plus one burst and one packet.
 */
#include "eth_int.h"

/* Frame bytes of a typical packet when the QP names none: a path MTU's
 * payload and its headers. */
static uint32_t typical_frame(const struct droce_qp *qp)
{
	uint32_t mtu = qp->mtu ? qp->mtu : qp->dev->args.max_mtu;

	return qp->rate_typical_pkt ? qp->rate_typical_pkt : mtu + 78;
}

/* On the engine, from the control path: derive the clock's figures. */
void eth_pace_changed(struct droce_qp *qp)
{
	struct droce_engine *eng = qp->eng;
	uint64_t burst;

	if (qp->rate_limit == 0) {
		qp->pace_cyc_q16 = 0;
		qp->pace_burst_tsc = 0;
	} else {
		/* cycles per byte = tsc_hz * 8 / (kbps * 1000), << 16 */
		qp->pace_cyc_q16 = (eng->tsc_hz * 8 << 16) /
				   ((uint64_t)qp->rate_limit * 1000);
		if (qp->pace_cyc_q16 == 0)
			qp->pace_cyc_q16 = 1;
		burst = qp->rate_max_burst;
		/* The default: ETH_PACE_BURST_US at the rate, and at least two
		 * frames, so that a packet sent late (the engine's wake-up, a
		 * busy port) is made up by the next instead of lost to the
		 * rate. */
		if (burst == 0)
			burst = RTE_MAX((uint64_t)qp->rate_limit * 1000 / 8 *
					ETH_PACE_BURST_US / 1000000,
					2 * (uint64_t)typical_frame(qp));
		/* The clock may run one packet ahead of now whatever the
		 * burst: a burst shorter than a packet still lets one out. */
		burst = RTE_MAX(burst, (uint64_t)typical_frame(qp));
		/* (the first packet is always allowed: it starts the clock) */
		qp->pace_burst_tsc = ((burst - RTE_MIN(burst, typical_frame(qp))) *
				      qp->pace_cyc_q16) >> 16;
	}
	/* A waiting QP looks again under the new figures. */
	if (qp->flags & DROCE_QPF_ON_PACE) {
		eth_pace_unlink(eng, qp);
		eth_qp_activate(eng, qp);
	}
}

void eth_pace_init(struct droce_engine *eng)
{
	eng->pace_shift = 0;
	while ((2ull << eng->pace_shift) <= eng->tsc_hz / 1000000)
		eng->pace_shift++;
	eng->pace_tick = eth_now() >> eng->pace_shift;
}

static void file_qp(struct droce_engine *eng, struct droce_qp *qp)
{
	uint64_t tick = qp->pace_due >> eng->pace_shift;

	/* Due in this tick or before: the next tick processed. Beyond the
	 * wheel's reach: its last slot, and filed again from there. */
	tick = RTE_MAX(tick, eng->pace_tick + 1);
	tick = RTE_MIN(tick, eng->pace_tick + ETH_PACE_SLOTS - 1);
	LIST_INSERT_HEAD(&eng->pace_wheel[tick & (ETH_PACE_SLOTS - 1)], qp,
			 pace_link);
}

void eth_pace_wait(struct droce_engine *eng, struct droce_qp *qp, uint64_t due)
{
	if (qp->flags & DROCE_QPF_ON_PACE) {
		/* Activated meanwhile (a post, an ACK) and still early:
		 * it stays where it is, under the same clock. */
		return;
	}
	qp->st.pace_waits++;
	qp->dev->st.pace_waits++;
	qp->pace_due = due;
	qp->flags |= DROCE_QPF_ON_PACE;
	eng->pace_nb++;
	file_qp(eng, qp);
}

void eth_pace_unlink(struct droce_engine *eng, struct droce_qp *qp)
{
	if (!(qp->flags & DROCE_QPF_ON_PACE))
		return;
	LIST_REMOVE(qp, pace_link);
	qp->flags &= ~DROCE_QPF_ON_PACE;
	eng->pace_nb--;
}

/* Put the QPs whose time has come back on the active list; how many. */
int eth_pace_run(struct droce_engine *eng, uint64_t now)
{
	uint64_t now_tick = now >> eng->pace_shift;
	int n = 0;

	/* After a long sleep or stall, one lap visits every waiting QP. */
	if (now_tick - eng->pace_tick > ETH_PACE_SLOTS)
		eng->pace_tick = now_tick - ETH_PACE_SLOTS;
	while (eng->pace_tick < now_tick && eng->pace_nb) {
		struct eth_qp_slot *slot;
		struct droce_qp *qp, *next;

		eng->pace_tick++;
		slot = &eng->pace_wheel[eng->pace_tick & (ETH_PACE_SLOTS - 1)];
		qp = LIST_FIRST(slot);
		LIST_INIT(slot);
		for (; qp; qp = next) {
			next = LIST_NEXT(qp, pace_link);
			if (qp->pace_due <= now) {
				qp->flags &= ~DROCE_QPF_ON_PACE;
				eng->pace_nb--;
				eth_qp_activate(eng, qp);
				n++;
			} else {
				file_qp(eng, qp);	/* later than this lap */
			}
		}
	}
	eng->pace_tick = now_tick;
	return n;
}

/* The start of the earliest tick holding a waiting QP (0: none): an idle
 * engine sleeps no longer than that. */
uint64_t eth_pace_next_tsc(const struct droce_engine *eng)
{
	if (eng->pace_nb == 0)
		return 0;
	for (uint64_t t = eng->pace_tick + 1;
	     t < eng->pace_tick + ETH_PACE_SLOTS; t++)
		if (!LIST_EMPTY(&eng->pace_wheel[t & (ETH_PACE_SLOTS - 1)]))
			return t << eng->pace_shift;
	return (eng->pace_tick + ETH_PACE_SLOTS) << eng->pace_shift;
}

bool eth_pace_hold(struct droce_qp *qp)
{
	uint64_t now = eth_now();

	if (qp->pace_tat <= now + qp->pace_burst_tsc) {
		/* What the charge needs, kept in the QP: one read of the
		 * clock a packet, and the frame's bytes as the port was given
		 * them (tx_bytes counts every frame queued). */
		qp->pace_now = now;
		qp->pace_tx_bytes = qp->dev->st.tx_bytes;
		return false;
	}
	eth_pace_wait(qp->eng, qp, qp->pace_tat - qp->pace_burst_tsc);
	return true;
}

/* The frame is everything from Ethernet on: the extended headers (RETH,
 * AETH, DETH ...), the pad and the ICRC count, as on the wire. */
void eth_pace_charge(struct droce_qp *qp)
{
	uint64_t bytes = qp->dev->st.tx_bytes - qp->pace_tx_bytes;

	if (qp->pace_tat < qp->pace_now)
		qp->pace_tat = qp->pace_now;	/* an idle QP saves no credit beyond its burst */
	qp->pace_tat += (bytes * qp->pace_cyc_q16) >> 16;
}
