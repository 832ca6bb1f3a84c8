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
 *                  application's own verbs calls (poll_cq, post_*) and
 *                  droce_poll() drive the engine.
 *   name=S         device name reported by ibv_get_device_name
 *                  (default "droce<N>")
 *   idle_us=N      longest sleep of an idle engine, microseconds (default
 *                  200; 0 = never sleep, pure busy polling)
 *   mac=xx:..:xx   override the port's MAC address
 *   nb_mbuf=N      mbufs in the device's pool (default 8191)
 *   arp_timeout_ms=N  give up resolving a peer after this long (default 1000)
 * Returns the droce device index (>= 0) or a negative errno.
 * The port is configured (one rx and one tx queue) and started by droce.
 */
int droce_dev_create(uint16_t port_id, const char *devargs);

/* Same, naming the port by its ethdev name (e.g. "net_memif0"). */
int droce_dev_create_by_name(const char *port_name, const char *devargs);

/* Number of droce devices. */
int droce_dev_count(void);

/*
 * Stop all engines, destroy every device and release its ports. Every verbs
 * object must have been destroyed first (otherwise -EBUSY).
 */
int droce_cleanup(void);

/*
 * The embedded default: create two ethdev ports joined back to back by a
 * pair of rte_rings (net_ring) and a droce device on each, with the given
 * devargs (NULL: "ip=198.18.0.1" and "ip=198.18.0.2"). Requires the EAL.
 * Returns 0 or a negative errno.
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
 */
int droce_env_init(void);

/*
 * Drive the engine of an "app" mode device once (rx, timers, tx). Returns the
 * number of packets processed. Harmless for devices with an engine lcore.
 */
int droce_poll(struct ibv_context *ctx);

/* Per-device counters (a stable subset; more are in telemetry later). */
struct droce_dev_stats {
	uint64_t tx_pkts;
	uint64_t rx_pkts;
	uint64_t tx_bytes;
	uint64_t rx_bytes;
	uint64_t rx_icrc_err;		/* dropped: bad ICRC */
	uint64_t rx_malformed;		/* dropped: failed roce_parse */
	uint64_t rx_no_qp;		/* dropped: unknown/destroyed QP */
	uint64_t rx_not_roce;		/* not RoCE and not ARP for us */
	uint64_t rx_seq_err;		/* out-of-sequence requests */
	uint64_t rx_dup;		/* duplicate requests */
	uint64_t tx_acks;
	uint64_t tx_naks;
	uint64_t rx_naks;
	uint64_t arp_tx;
	uint64_t arp_rx;
	uint64_t arp_fail;		/* peers that never answered */
	uint64_t tx_full;		/* tx_burst returned short (retried) */
	uint64_t retransmits;
};
int droce_dev_stats_get(struct ibv_context *ctx, struct droce_dev_stats *st);
void droce_dev_stats_dump(struct ibv_context *ctx, FILE *f);

/* The ethdev port behind a droce device, or -1. */
int droce_dev_port_id(struct ibv_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* DROCE_H */
