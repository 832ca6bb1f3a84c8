/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce: the DPDK side of the API. Everything RDMA goes through rdma-core's
 * own <infiniband/verbs.h>; this header only says how droce devices come to
 * exist on top of DPDK ethdev ports, and how an application drives them.
 *
 * Two ways in:
 *  - A DPDK application calls rte_eal_init() itself, then droce_dev_create()
 *    for each ethdev port that should speak RoCEv2, then uses verbs.
 *  - A plain verbs program calls ibv_get_device_list() first; droce then
 *    initialises the EAL itself from the environment (droce_env_init()).
 */
#ifndef DROCE_H
#define DROCE_H

#include <stdint.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * Device arguments, kvargs style ("key=value,key=value"), as for a DPDK vdev:
 *   ip=A.B.C.D     IPv4 address of this RoCE port (required)
 *   mtu=N          maximum path MTU in bytes: 256, 512, 1024, 2048, 4096
 *                  (default 1024; the ethdev MTU is raised to fit it)
 *   lcore=N|app    engine lcore (default: the first worker lcore, or "app"
 *                  when there is none). "app": no engine thread; the
 *                  application's own verbs calls (poll_cq on an empty
 *                  CQ, every post_drive-th post) and droce_poll() drive
 *                  the engine; a keeper thread drives it once they stop
 *                  for 1 ms (it looks every 1-8 ms while they go on).
 *   name=S         device name reported by ibv_get_device_name
 *                  (default "droce<N>")
 *   idle_us=N      longest sleep of an idle engine, microseconds (default
 *                  200; 0 = never sleep, pure busy polling). After 256
 *                  empty iterations it sleeps 1, 2, 4 ... N us; a post or
 *                  a control call wakes it, a frame from the port waits
 *                  for the sleep under way (doc/performance.md,
 *                  eighteenth round). lcore=app: the keeper's longest
 *                  period while a program waits on events (20 us after
 *                  work, growing after 1 ms without; 1 ms at most)
 *   mac=xx:..:xx   override the port's MAC address
 *   nb_mbuf=N      mbufs in the device's pool (default 8191)
 *   arp_timeout_ms=N  give up resolving a peer after this long (default 1000)
 *   vlan=N         802.1Q VLAN 1..4094 for everything the device sends and
 *                  receives (default: untagged); prio=P its priority 0..7
 *   port_mtu=N     the port carries IP packets of N bytes (576..65535),
 *                  whatever its PMD reports: net_af_packet reports 1500
 *                  whatever its framesz (give it framesz/blocksz that hold
 *                  the frames, e.g. framesz=4352,blocksz=69632 for mtu=4096)
 *   linger_ms=N    lcore=app: ibv_destroy_qp of a connected QP that heard
 *                  from its peer in the last 200 ms first drives the
 *                  engine until the port has been quiet for N ms (10 N
 *                  at most), so ACKs it still owes reach the peer
 *                  (default 50, at most 1000; 0: destroy at once)
 *   post_drive=N   lcore=app: a post that brings the WQEs posted since the
 *                  last such turn to N runs one engine iteration itself,
 *                  so packets leave while the application is still posting
 *                  a window (default 32; 0: only polls drive the engine);
 *                  so does a post whose last WQE is signalled when the
 *                  one signalled before it was N or more posts earlier.
 *                  Such a turn sends; what arrives waits for a poll (or
 *                  20 us); a post refused for a full queue runs a whole
 *                  iteration
 *   rx_spin=N      lcore=app: a poll that finds nothing to send and
 *                  nothing received looks at the port up to N more times
 *                  before it returns (default 8, at most 1024; 0: once).
 *                  An engine serving several devices takes the largest
 *                  asked for; the keeper thread never spins
 *   icrc_batch=0|1 the ICRCs of the frames built from a QP's header image
 *                  computed together right before each tx burst, frames
 *                  of one shape four a 512-bit register where the CPU has
 *                  AVX-512 and VPCLMULQDQ (default 1; 0: each as it is
 *                  built; doc/performance.md, forty-fifth round)
 *   cycles=0|1     time the engine's stages with rte_rdtsc (default 0):
 *                  the eng_*_cycles counters below; four TSC reads per
 *                  engine iteration, so off unless measuring
 *   impair=k:v/k:v  impair the port's traffic with lib/impair (see
 *                  droce_impair.h and doc/impair.md), its kvargs written
 *                  with ':' for '=' and '/' for ',': impair=seed:7/rx_drop:0.01
 * Returns the droce device index (>= 0) or a negative errno.
 * The port is configured (one rx and one tx queue) and started by droce.
 */
int droce_dev_create(uint16_t port_id, const char *devargs);

/* Same, naming the port by its ethdev name (e.g. "net_memif0"). */
int droce_dev_create_by_name(const char *port_name, const char *devargs);

/* Number of droce devices. */
int droce_dev_count(void);

/*
 * Destroy one device: the one droce_dev_create() returned `index` for.
 * Its engine stops serving it and its port is stopped and closed (a vdev
 * stays registered: rte_vdev_uninit() is the caller's; the two ports of a
 * droce_create_ring_pair() go, with their rings and both devices' mbuf
 * pools, once both of its devices are destroyed); every verbs object
 * of it must have been destroyed and every context on it closed first.
 * The other devices keep their indices; the next device created takes the
 * lowest free one. An ibv_device an earlier ibv_get_device_list() gave
 * for it goes with it, as with droce_cleanup().
 * Returns 0, -ENODEV (no such device) or -EBUSY.
 */
int droce_dev_destroy(int index);

/*
 * Stop all engines, destroy every device and release its ports. Every verbs
 * object must have been destroyed first (otherwise -EBUSY).
 */
int droce_cleanup(void);

/*
 * The embedded default: create two ethdev ports joined back to back by a
 * pair of rte_rings (net_ring) and a droce device on each, with the given
 * devargs (NULL: "ip=198.18.0.1" and "ip=198.18.0.2"). Requires the EAL.
 * Returns 0 or a negative errno, and on an error leaves nothing, no ports
 * and no device: -EINVAL for bad devargs (either side: every key needs a
 * value), or what droce_dev_create returned for either device.
 */
int droce_create_ring_pair(const char *devargs_a, const char *devargs_b);

/*
 * Initialise from the environment if nothing is set up yet; called by
 * ibv_get_device_list(). If the EAL is not running it is initialised from
 *   DROCE_EAL_ARGS   EAL arguments, whitespace separated (default:
 *                    "-l 0-1 --in-memory --no-pci --log-level=*:warning"
 *                    with a single-lcore fallback)
 * then devices are created from
 *   DROCE_DEVICES    ';'-separated list of "port=<ethdev name>,<devargs>";
 *                    when unset, the embedded default ring pair above.
 * Returns 0 or a negative errno. Safe to call more than once.
 * At the process's exit (an atexit handler) the engines stop and the ports
 * over kernel interfaces (net_af_xdp, net_af_packet) close, so that their
 * XDP program and promiscuous mode do not outlive it; nothing else is torn
 * down. With such a port, SIGINT, SIGTERM and SIGHUP left at their default
 * action are caught to do the same first; the signal then ends the process.
 */
int droce_env_init(void);

/*
 * Complete an EAL argument vector the way droce's own programs do, for an
 * application that starts the EAL itself. argv[0..argc) stays (the program
 * name, then the caller's arguments, if any). When argc is 1 the words of
 * `defaults` follow (NULL: $DROCE_EAL_ARGS if set, else droce's default
 * "-l 0-1 --in-memory --no-pci --log-level=*:warning", "-l 0" on one CPU);
 * then, always, the words of $DROCE_EAL_EXTRA_ARGS (devtools/setup.sh puts
 * "--no-huge -m N" there on a machine without hugepages). With --no-huge
 * anywhere, --in-memory becomes --no-shconf (DPDK 22.11 refuses the two
 * together; either way nothing is left on disk). Added words are copied
 * into buf (len bytes); argv holds max pointers, the closing NULL included.
 * Needs no EAL. Returns the new argc, -EINVAL, or -ENOSPC.
 */
int droce_eal_argv(char **argv, int argc, int max, const char *defaults,
		   char *buf, size_t len);

/*
 * Drive the engine of an "app" mode device once (rx, timers, tx). Returns the
 * number of packets processed. Harmless for devices with an engine lcore.
 */
int droce_poll(struct ibv_context *ctx);

/*
 * Counters. One X-macro list drives the struct, droce_dev_stats_dump() and
 * the telemetry endpoints (/droce/stats,<dev>), so the three never disagree.
 */
#define DROCE_DEV_STATS(X) \
	X(tx_pkts, "frames sent") \
	X(rx_pkts, "RoCE frames accepted (ICRC good, for us)") \
	X(tx_bytes, "bytes sent") \
	X(rx_bytes, "bytes accepted") \
	X(rx_icrc_err, "dropped: bad ICRC") \
	X(rx_icrc_late, "frames whose ICRC was checked as their payload was copied into place (long MIDDLE/LAST frames; good or bad, counted there too)") \
	X(rx_malformed, "dropped: failed parsing or wrong transport") \
	X(rx_no_qp, "dropped: unknown or destroyed QP") \
	X(rx_not_roce, "not RoCE (or not for our address), not ARP") \
	X(rx_seq_err, "requests out of sequence (PSN ahead)") \
	X(rx_dup, "duplicate requests or stale responses") \
	X(rx_bad_qkey, "UD datagrams with the wrong Q_Key, dropped") \
	X(rx_bad_pkey, "dropped: BTH P_Key matches nothing in the port's table") \
	X(rx_no_recv, "UD/UC messages dropped: no receive posted") \
	X(tx_acks, "ACKs sent") \
	X(tx_naks, "NAKs sent, all kinds, RNR included") \
	X(rx_naks, "NAKs received, all kinds, RNR included") \
	X(tx_nak_seq, "NAK PSN sequence error sent") \
	X(tx_nak_inv_req, "NAK invalid request sent") \
	X(tx_nak_rem_access, "NAK remote access error sent") \
	X(tx_nak_rem_op, "NAK remote operational error sent") \
	X(tx_rnr_naks, "RNR NAKs sent") \
	X(rx_nak_seq, "NAK PSN sequence error received") \
	X(rx_nak_inv_req, "NAK invalid request received") \
	X(rx_nak_rem_access, "NAK remote access error received") \
	X(rx_nak_rem_op, "NAK remote operational error received") \
	X(rx_rnr_naks, "RNR NAKs received") \
	X(retransmits, "go-back-N restarts") \
	X(timeouts, "local ACK timeouts") \
	X(timeouts_stalled, "local ACK timeouts put off, not counted: the engine had been stalled") \
	X(stalls, "engine iterations late by 0.5 ms (lcore=app: 4 ms) beyond its idle sleep: its thread was not running") \
	X(stall_us, "those iterations' lateness beyond their idle sleep, summed, microseconds") \
	X(retry_exc, "QPs failed: transport retries exhausted") \
	X(rnr_retry_exc, "QPs failed: RNR retries exhausted") \
	X(atomic_replays, "duplicate atomics answered from the cache") \
	X(read_replays, "duplicate READs executed again") \
	X(arp_tx, "ARP frames sent") \
	X(arp_rx, "ARP frames received") \
	X(arp_fail, "peers that never answered ARP") \
	X(tx_full, "tx bursts the port took only in part (the rest retried, nothing lost)") \
	X(tx_bursts, "tx bursts handed to the port (tx_pkts / tx_bursts: frames per burst)") \
	X(tx_dropped, "frames dropped: the device's transmit (or loopback) queue was full") \
	X(tx_zc, "frames sent zero-copy (payload read in place, zc_min=)") \
	X(eng_loops, "iterations of the engine serving this device (all its devices')") \
	X(eng_busy_loops, "of those, iterations that found work") \
	X(eng_rx_cycles, "engine TSC cycles receiving: rx bursts, parse, responder and completer (cycles=1)") \
	X(eng_work_cycles, "engine TSC cycles in doorbells and the QPs' turns: requests, responses and ACKs built (cycles=1)") \
	X(eng_tx_cycles, "engine TSC cycles handing frames to the port: tx bursts (cycles=1)") \
	X(eng_timer_cycles, "engine TSC cycles in its timers: the timer and pacing wheels, and what fires (cycles=1)") \
	X(eng_waiters, "now (not a count): threads in ibv_get_cq_event plus CQs armed for an event; lcore=app: while any and 1 ms after, the keeper turns every eng_keeper_us, not every 1 ms") \
	X(eng_keeper_us, "now (not a count), lcore=app: the keeper's period while a program waits, us: 20 after work, doubling after 1 ms without up to idle_us (0: an lcore engine)") \
	X(eng_keeper_looks, "lcore=app: the keeper's wake-ups (it sleeps 1 ms, doubling while the program drives the engine itself, up to 8 ms; 20 us while a thread waits on an event)") \
	X(eng_keeper_drives, "lcore=app: of those, wake-ups at which the keeper drove the engine (the program had not for 1 ms, or for 20 us while a thread waits on an event)") \
	X(pace_waits, "times a QP's send queue waited for its rate limit (ibv_modify_qp_rate_limit, IBV_QP_RATE_LIMIT)") \
	X(eng_paced, "now (not a count): QPs of the engine waiting for their rate limit's next send time") \
	X(eng_wakes, "idle back-off sleeps of an lcore engine cut short by a post or a control call (a futex wake: the first call after a pause)") \
	X(eng_prefetch, "now (not a count): 1 while the engine prefetches QPs ahead (a device of it has 256 QPs or more)") \
	X(eng_deep_turns, "engine turns whose active list was prefetched a QP further ahead, with the next QP's source bytes (prefetching, and the turn before averaged 4 packets a visit or more)") \
	X(eng_rx_spins, "lcore=app: looks at the ports that polls with nothing to do took beyond their first (rx_spin)") \
	X(eng_rx_idle_cycles, "of eng_rx_cycles, the receive stages that found no frame: waiting, not work (cycles=1)") \
	X(eng_fast_poster, "now (not a count), lcore=app: 1 while a thread (the last to drive the engine) rings doorbells without the locked exchange while one is pending") \
	X(eng_fast_moves, "lcore=app: times that role went to another thread (a membarrier each; after 8, nobody has it)") \
	X(eng_db_skips, "lcore=app: posts whose doorbell skipped the locked exchange (one was pending)") \
	X(tx_icrc_batched, "frames whose ICRC was computed with the others of their tx burst (icrc_batch=1)") \
	X(tx_icrc_lanes, "of those, frames whose ICRC shared a 512-bit register with three others of their shape")

struct droce_dev_stats {
#define DROCE_STAT_FIELD(name, help) uint64_t name;
	DROCE_DEV_STATS(DROCE_STAT_FIELD)
#undef DROCE_STAT_FIELD
};

#define DROCE_QP_STATS(X) \
	X(tx_pkts, "packets sent (requests and responses)") \
	X(rx_pkts, "packets received") \
	X(retransmits, "go-back-N restarts") \
	X(timeouts, "local ACK timeouts") \
	X(dup, "duplicate requests or stale responses") \
	X(seq_err, "requests out of sequence") \
	X(naks_tx, "NAKs sent (RNR included)") \
	X(naks_rx, "NAKs received (RNR included)") \
	X(rnr_naks_tx, "RNR NAKs sent") \
	X(rnr_naks_rx, "RNR NAKs received") \
	X(pace_waits, "times the send queue waited for its rate limit (ibv_modify_qp_rate_limit)")

struct droce_qp_stats {
#define DROCE_STAT_FIELD(name, help) uint64_t name;
	DROCE_QP_STATS(DROCE_STAT_FIELD)
#undef DROCE_STAT_FIELD
};

/* A QP's counters and transport state; 0 or a negative errno. */
int droce_qp_stats_get(struct ibv_qp *qp, struct droce_qp_stats *st);

int droce_dev_stats_get(struct ibv_context *ctx, struct droce_dev_stats *st);
void droce_dev_stats_dump(struct ibv_context *ctx, FILE *f);

/*
 * Attach the link impairer to a device's port, or change its settings while
 * traffic flows (kvargs as in droce_impair.h). 0 or a negative errno.
 * droce_dev_impairer() gives the handle (for droce_impair_stats), or NULL.
 */
struct droce_impair;
int droce_dev_impair(struct ibv_context *ctx, const char *kvargs);
struct droce_impair *droce_dev_impairer(struct ibv_context *ctx);

/* The ethdev port behind a droce device, or -1. */
int droce_dev_port_id(struct ibv_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* DROCE_H */
