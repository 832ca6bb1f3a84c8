/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Phase A/B: one run, an experiment switched on and off every few
 * milliseconds, the completions the application polls counted per phase.
 *
 * Why: this lab's host moves the two vCPUs between modes every few
 * seconds (one mode runs memif three times faster than the other, and
 * DRAM-bound work twice as slow), so two builds, or two settings, run one
 * after the other differ by ±30 % for reasons of their own, and a 5 %
 * change drowns. Within one run, phases of 2^24 TSC cycles (~7 ms here)
 * see the same modes, the same neighbours and the same QPs: the count
 * of the "on" phases over that of the "off" ones is the experiment's
 * effect on the rate, to ±0.5 % in a 5 s run at one QP, ±4 % at 16384
 * QPs (control runs, DROCE_AB=0; doc/performance.md, thirty-ninth
 * round). For what acts at once and changes what a step costs (a
 * prefetch, a copy, a check): an effect that needs more than a phase to
 * build up (a cache warmed by what the last phase did) is diluted toward
 * 1. What changes which step runs first (a threshold, a batch, a budget)
 * can instead move work from one phase into the other wherever work
 * waits in a queue (16384 QPs keep ~15 000 CQEs waiting): the "on" phases
 * then look faster by leaving their work to the "off" ones. So the
 * frames the engine hands to the port are counted per phase too; where
 * their ratio and the completions' disagree, the experiment moved work,
 * and only whole runs can judge it (a transmit queue cut from 512 frames
 * to 64: completions 1.61-1.72 in the "on" phases, frames 0.88-0.92, and
 * whole runs slower).
 *
 * Two bits are probes rather than experiments: in their "on" phases a
 * fixed wait, DROCE_AB_PROBE_CYC TSC cycles (default 100), is added to
 * each request frame the responder takes (DROCE_AB_PROBE_RESP) or the
 * requester sends (DROCE_AB_PROBE_REQ). Each end of a two-process run
 * has one role, so the ratio says how much that end bounds the rate:
 * roughly T / (T + wait) where it alone sets the pace at T cycles a
 * message (the TSC reads and the overlap the spin prevents add to the
 * wait), 1 where it waits on the other: compare the two ends at one
 * wait rather than read T off (the forty-second round: 100 cycles cost
 * a 64 B write_bw's requester 16 % of the rate at perftest's defaults and
 * at -t 512 --no_lock, its responder 20 % and 4 %).
 *
 * Built only with meson -Dab=true (DROCE_AB_BUILD); active only while
 * DROCE_AB=<bits>[:<shift>] is set (strtoul base 0: DROCE_AB=0x10:24).
 * An experiment is code under DROCE_AB_ON(bit): it runs while the TSC's
 * bit <shift> (default 24) is 1 and <bits> has that bit; DROCE_AB=0
 * alternates nothing and measures the instrument (ratios near 1). The
 * phase is taken again at every engine turn and every poll (the TSC is
 * the machine's: an engine thread, an application thread and the other
 * process agree on it). At exit, a line on stderr:
 *   DROCE_AB bits=0x10 shift=24 off=N on=N ratio=R tx_off=N tx_on=N tx_ratio=R
 * off, on: completions returned by polls in each phase (ibv_poll_cq, and
 * each ibv_start_poll / ibv_next_poll that found one); tx_off, tx_on:
 * frames the engine handed to the port (rte_eth_tx_burst took them).
 * devtools/ab.sh runs this over a memif pair or loopback and gives the
 * medians.
 *
 * Without the option DROCE_AB_ON() is 0 and the calls below are empty: an
 * experiment left in the code costs the default build nothing, and the
 * tree keeps none (doc/performance.md says what was tried with it).
 */
#ifndef DROCE_AB_H
#define DROCE_AB_H

#include <stdint.h>

#define DROCE_AB_PROBE_RESP	0x40000000u	/* a wait a request received */
#define DROCE_AB_PROBE_REQ	0x80000000u	/* a wait a request packet sent */

#ifdef DROCE_AB_BUILD

#include <x86intrin.h>

extern uint32_t droce_ab_bits;		/* DROCE_AB's bits; 0 also when unset */
extern uint32_t droce_ab_shift;		/* the TSC bit that switches phases */
extern int droce_ab_active;		/* DROCE_AB was set at load */
extern uint32_t droce_ab_phase;		/* 1: on; 0: off */
extern uint32_t droce_ab_now;		/* droce_ab_bits when on, else 0 */
extern uint64_t droce_ab_done[2];	/* completions polled: off, on */
extern uint64_t droce_ab_sent[2];	/* frames handed to the port: off, on */
extern uint32_t droce_ab_probe_cyc;	/* DROCE_AB_PROBE_CYC */

/* Take the phase from the TSC (several threads may: they agree but at
 * the edges, where either answer is right). */
static inline void droce_ab_turn(void)
{
	uint32_t on;

	if (!droce_ab_active)
		return;
	on = (uint32_t)(__rdtsc() >> droce_ab_shift) & 1;
	__atomic_store_n(&droce_ab_phase, on, __ATOMIC_RELAXED);
	__atomic_store_n(&droce_ab_now, on ? droce_ab_bits : 0,
			 __ATOMIC_RELAXED);
}

/* n more in this phase's slot of a per-phase count. Not a locked add:
 * right after a transmit burst it would wait for the port's stores into
 * the other process's lines, and hide what an experiment that drops a
 * locked instruction of its own gains. Each array has one writer at a
 * time (polls: the application's thread; transmits: the engine's turn). */
static inline void droce_ab_add(uint64_t per_phase[2], uint64_t n)
{
	if (droce_ab_active && n > 0) {
		uint64_t *c = &per_phase[__atomic_load_n(&droce_ab_phase,
							 __ATOMIC_RELAXED)];

		__atomic_store_n(c, __atomic_load_n(c, __ATOMIC_RELAXED) + n,
				 __ATOMIC_RELAXED);
	}
}

/* n completions returned to the application in this phase */
static inline void droce_ab_count(int n)
{
	if (n > 0)
		droce_ab_add(droce_ab_done, (uint64_t)n);
}

/* n frames handed to the port in this phase */
static inline void droce_ab_count_tx(uint32_t n)
{
	droce_ab_add(droce_ab_sent, n);
}

#define DROCE_AB_ON(bit) \
	__builtin_expect((__atomic_load_n(&droce_ab_now, __ATOMIC_RELAXED) & \
			  (uint32_t)(bit)) != 0, 0)

/* A probe's wait (DROCE_AB_PROBE_*), in its "on" phases only */
static inline void droce_ab_probe(uint32_t bit)
{
	if (DROCE_AB_ON(bit)) {
		uint64_t end = __rdtsc() + droce_ab_probe_cyc;

		while (__rdtsc() < end)
			;
	}
}

#else

static inline void droce_ab_turn(void)
{
}

static inline void droce_ab_count(int n)
{
	(void)n;
}

static inline void droce_ab_count_tx(uint32_t n)
{
	(void)n;
}

static inline void droce_ab_probe(uint32_t bit)
{
	(void)bit;
}

#define DROCE_AB_ON(bit) 0

#endif /* DROCE_AB_BUILD */

#endif /* DROCE_AB_H */
