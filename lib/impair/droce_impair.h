/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce_impair: a seeded, reproducible link impairer for any ethdev port.
 *
 * It sits on the port's Rx and Tx bursts through ethdev's public packet
 * callbacks (rte_eth_add_first_rx_callback, rte_eth_add_tx_callback) and
 * drops, duplicates, reorders, delays and corrupts frames at given rates,
 * separately per direction. Decisions come from a per-queue, per-direction
 * splitmix64 stream seeded from "seed": the same seed and the same frame
 * sequence give the same decisions. See doc/impair.md.
 *
 * Arguments, kvargs style ("key=value,key=value"; applied left to right, so
 * a later key overrides an earlier one):
 *   seed=N            PRNG seed (default 1); given to droce_impair_set() it
 *                     restarts every stream
 *   hold_max=N        frames one queue and direction may hold (delay line;
 *                     rounded up to a power of two, default 4096; attach only)
 * and per direction: prefix "rx_" or "tx_", no prefix = both directions:
 *   drop=P            drop with probability P (0 <= P <= 1, e.g. 0.01 = 1 %)
 *   dup=P             send a copy right behind the frame
 *   reorder=P         hold the frame back until 1..reorder_depth later
 *                     frames have passed
 *   reorder_depth=K   1..256 (default 3)
 *   reorder_max_us=N  a reorder-held frame leaves after N us even if not
 *                     enough frames followed (default 1000)
 *   delay_us=N        hold every impaired frame at least N us, in order
 *   corrupt=P         flip one random bit of one random byte after the
 *                     Ethernet (and VLAN) header
 *   match=roce|all|requests
 *                     impair only RoCEv2 frames (UDP destination port 4791,
 *                     over IPv4 or IPv6, default), every frame, or RoCEv2
 *                     frames but RC/XRC responses (READ responses, ACKs,
 *                     atomic ACKs) and CNPs; frames that do not match pass
 *                     untouched and unheld
 *
 * Threads: attach, set, stats and detach may be called from any thread
 * (set and stats while traffic flows). The callbacks run on whatever
 * thread calls rte_eth_rx_burst / rte_eth_tx_burst; droce_impair_flush()
 * must be called from the thread that transmits on the port.
 */
#ifndef DROCE_IMPAIR_H
#define DROCE_IMPAIR_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct droce_impair;

/* Counters of one direction, summed over the port's queues. */
struct droce_impair_dir_stats {
	uint64_t seen;		/* frames that entered the impairer */
	uint64_t matched;	/* of which subject to impairment (match=) */
	uint64_t dropped;	/* dropped on purpose (drop=) */
	uint64_t duplicated;	/* copies added (dup=) */
	uint64_t reordered;	/* frames held back by reorder= */
	uint64_t delayed;	/* frames put on the delay line */
	uint64_t corrupted;	/* frames with one bit flipped (corrupt=) */
	uint64_t released;	/* frames that left the reorder hold or the
				 * delay line (a frame both reordered and
				 * delayed counts once for each) */
	uint64_t held;		/* frames the impairer holds right now */
	uint64_t fillers;	/* Tx: filler frames sent in place of frames
				 * that were dropped or held (see doc) */
	uint64_t overflow;	/* frames lost because hold_max was reached */
	uint64_t nomem;		/* a copy or a filler could not be allocated
				 * (the dup/corruption was skipped, or a frame
				 * was handed back to the caller as unsent) */
};

struct droce_impair_stats {
	struct droce_impair_dir_stats rx;
	struct droce_impair_dir_stats tx;
};

/*
 * Start impairing port_id: every Rx and Tx queue configured at this time
 * (call it after rte_eth_dev_configure and the queue setup, before or
 * after rte_eth_dev_start; detach before reconfiguring the queues).
 * kvargs may be NULL or "" (then nothing is impaired until
 * droce_impair_set()). Returns NULL with rte_errno set on error: EINVAL
 * (bad argument, no queues), ENODEV (no such port), ENOMEM, ENOTSUP
 * (DPDK built without RTE_ETHDEV_RXTX_CALLBACKS).
 */
struct droce_impair *droce_impair_attach(uint16_t port_id, const char *kvargs);

/*
 * Change the configuration while traffic flows. Keys not given keep their
 * value. The callbacks pick up the new snapshot at their next burst; this
 * call returns once no burst still uses the old one. Held frames stay held
 * and leave under the new rules. Returns 0, or -EINVAL (nothing changed).
 */
int droce_impair_set(struct droce_impair *imp, const char *kvargs);

/* Current counters; 0 or -EINVAL. */
int droce_impair_stats(const struct droce_impair *imp,
		       struct droce_impair_stats *st);

/*
 * Tx: send the held frames that are due now (delay elapsed, reorder hold
 * timed out) without waiting for the application's next tx burst; for idle
 * periods. Call it from the thread that transmits on the port (all of its
 * Tx queues). Rx-held frames leave on the next rte_eth_rx_burst, even an
 * empty one, so nothing is needed for them. Returns the number of frames
 * handed to the driver, or -EINVAL.
 */
int droce_impair_flush(struct droce_impair *imp);

/*
 * Stop impairing: remove the callbacks, wait until no burst is inside
 * them, free every frame still held (they are lost) and the impairer.
 * Call droce_impair_flush() first to send the Tx frames that are due.
 * NULL is ignored.
 */
void droce_impair_detach(struct droce_impair *imp);

#ifdef __cplusplus
}
#endif
#endif /* DROCE_IMPAIR_H */
