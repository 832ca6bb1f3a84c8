/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * TSC stamps at the datapath's hand-offs, for following one message
 * across two processes (the TSC is the machine's, so the two ends' stamps
 * line up): when a signalled WQE starts, when a transmit burst leaves,
 * when a receive burst arrives and is done, when a poll finds a completion
 * or starts to wait, and how long an app-driven engine went unturned.
 * devtools/stamps.py reads them (doc/performance.md, thirty-first round).
 *
 * Built only with meson -Dstamps=true (DROCE_STAMPS); recorded only while
 * DROCE_STAMPS=<path prefix> is set, one ring of the last
 * DROCE_STAMP_RING events a thread, written at exit to
 * <prefix>.<pid>.<tid>: "# tsc_hz N", then a line an event, "tsc event
 * a b c". Without the option every call below is empty.
 */
#ifndef DROCE_STAMP_H
#define DROCE_STAMP_H

#include <stdint.h>

enum droce_stamp_event {
	/* a, b: the first and last frame's (opcode << 24 | PSN) (~0 for a
	 * frame that is not RoCE); c: frames */
	DROCE_STAMP_TX = 1,		/* rte_eth_tx_burst returned */
	DROCE_STAMP_RX = 2,		/* rte_eth_rx_burst returned */
	DROCE_STAMP_RX_DONE = 3,	/* c: the burst's frames, handled */
	/* a: the first completion's wr_id (low 32 bits); c: completions, 0
	 * for the first poll that found none after one that did */
	DROCE_STAMP_POLL = 4,
	DROCE_STAMP_SIGNALED = 5,	/* a: its first PSN; b: its slot */
	DROCE_STAMP_GAP = 6,		/* a: TSC cycles from the start of
					 * a poll's turn of an app-driven
					 * engine that found nothing to the
					 * next one's, when over 10 000 */
	/* the port's own part: its transmit and its receive */
	DROCE_STAMP_TX_CALL = 7,	/* rte_eth_tx_burst called; a, b, c
					 * as TX's (what it was given) */
	DROCE_STAMP_RX_CALL = 8,	/* just before RX: a, TSC cycles the
					 * rte_eth_rx_burst call that brought
					 * frames took; c: frames */
};

#ifdef DROCE_STAMPS

#include <x86intrin.h>

#define DROCE_STAMP_RING (1u << 20)

struct droce_stamp {
	uint64_t tsc;
	uint32_t ev, a, b, c;
};

struct droce_stamp_ring {
	uint32_t n;	/* events so far; the ring keeps the last */
	struct droce_stamp ev[DROCE_STAMP_RING];
};

extern int droce_stamps_on;	/* DROCE_STAMPS was set at load */
extern __thread struct droce_stamp_ring *droce_stamp_mine
	__attribute__((tls_model("initial-exec")));
struct droce_stamp_ring *droce_stamp_ring_new(void);

/* A TSC read for a duration stamped later (0 without the option) */
static inline uint64_t droce_stamp_clock(void)
{
	return droce_stamps_on ? __rdtsc() : 0;
}

static inline void droce_stamp(uint32_t ev, uint32_t a, uint32_t b,
			       uint32_t c)
{
	struct droce_stamp_ring *r = droce_stamp_mine;
	struct droce_stamp *s;

	if (__builtin_expect(r == NULL, 0)) {
		if (!droce_stamps_on || (r = droce_stamp_ring_new()) == NULL)
			return;
	}
	s = &r->ev[r->n++ & (DROCE_STAMP_RING - 1)];
	s->tsc = __rdtsc();
	s->ev = ev;
	s->a = a;
	s->b = b;
	s->c = c;
}

/* A poll's outcome: every one that completed something, and the first
 * of a run that found nothing (where a wait begins). (The static state
 * here and in droce_stamp_turn is per translation unit: each has one
 * caller, rdma_cq.c and eth_engine.c.) */
static inline void droce_stamp_poll(int n, uint64_t wr_id)
{
	static __thread int found_last
		__attribute__((tls_model("initial-exec"))) = 1;

	if (n > 0 || found_last)
		droce_stamp(DROCE_STAMP_POLL, (uint32_t)wr_id, 0,
			    (uint32_t)(n > 0 ? n : 0));
	found_last = n > 0;
}

/* A poll's turn of an app-driven engine: before it (done < 0), and
 * after it with what it did. From the start of a turn that found nothing
 * (a few hundred cycles of work) to the start of the next, over 10 000
 * TSC cycles (~5 us here), the thread was away: the host's doing, for a
 * program that only polls. Busy turns are left out, their length their
 * own. */
static inline void droce_stamp_turn(int done)
{
	static __thread uint64_t start, idle_start
		__attribute__((tls_model("initial-exec")));
	uint64_t now;

	if (!droce_stamps_on)
		return;
	if (done >= 0) {
		idle_start = done == 0 ? start : 0;
		return;
	}
	now = __rdtsc();
	if (idle_start && now - idle_start > 10000)
		droce_stamp(DROCE_STAMP_GAP,
			    (uint32_t)(now - idle_start > UINT32_MAX ?
				       UINT32_MAX : now - idle_start), 0, 0);
	start = now;
}

#else

static inline uint64_t droce_stamp_clock(void)
{
	return 0;
}

static inline void droce_stamp(uint32_t ev, uint32_t a, uint32_t b,
			       uint32_t c)
{
	(void)ev;
	(void)a;
	(void)b;
	(void)c;
}

static inline void droce_stamp_poll(int n, uint64_t wr_id)
{
	(void)n;
	(void)wr_id;
}

static inline void droce_stamp_turn(int done)
{
	(void)done;
}

#endif /* DROCE_STAMPS */

/* A receive call begun at `call` (droce_stamp_clock() just before it)
 * that brought n frames: RX_CALL with its length, then RX with the first
 * and last frame's words, in that order (stamps.py finds a burst's call
 * as the RX_CALL just before its RX). droce's engine and droce-ceiling
 * stamp their calls alike with it. */
static inline void droce_stamp_rx(uint64_t call, uint32_t first,
				  uint32_t last, uint32_t n)
{
	droce_stamp(DROCE_STAMP_RX_CALL, (uint32_t)(droce_stamp_clock() - call),
		    0, n);
	droce_stamp(DROCE_STAMP_RX, first, last, n);
}

#endif /* DROCE_STAMP_H */
