/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The ethdev port under a droce device: configuration (one rx and one tx
 * queue, an MTU that fits the largest path MTU), its mbuf pool, its MAC,
 * and the embedded default: two ports joined back to back by rte_rings.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_errno.h>
#include <rte_bus_vdev.h>
#include <rte_eth_ring.h>
#include <rte_devargs.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>
#include <rte_malloc.h>
#include <rte_ring.h>

#include "droce_impair.h"
#include "eth_int.h"

#define ETH_NB_DESC		1024
/*
 * A ring pair's depth: frames between one engine's transmit and the other's
 * receive. Both ends in one process on one engine, with thousands of busy
 * QPs the sender outruns the receiver until the ring is full, and every
 * frame waits a whole ring before it is read: 4096 frames (~4 lines each
 * with their mbuf) were the size of L2, so each was cold when received.
 * 512 frames still take several receive bursts of every iteration (16384
 * QPs, 64 B WRITE: 5-25 % fewer engine cycles a message, twenty-first
 * round of doc/performance.md); fewer (256) lost again.
 */
#define ETH_RING_PAIR_SIZE	512
/* L3 bytes around a payload: IPv6 (the larger) + UDP + BTH + largest ext
 * header + ICRC */
#define ETH_L3_OVERHEAD		(ROCE_IPV6_HLEN + ROCE_UDP_HLEN + ROCE_BTH_LEN + \
				 ROCE_ATMETH_LEN + ROCE_ICRC_LEN)

static struct rte_ring *pair_rings[DROCE_MAX_DEVS];
static uint32_t nb_pair_rings;

/*
 * Pools of closed devices, freed with the last one. A frame is an mbuf of
 * its sender's pool wherever it is until freed: in another device's
 * receive ring (net_ring passes pointers, not copies), that device's link
 * impairer, its hands. droce_cleanup closes devices one by one while the
 * engine keeps serving the rest, so a pool freed with its own device let
 * the engine receive (and return) mbufs of freed, zeroed memory: UBSan
 * caught a received frame with a NULL buffer at teardown (rc_loss-zc).
 */
static struct rte_mempool *closed_pools[DROCE_MAX_DEVS];
static uint32_t nb_closed_pools;

/* The last device is closed: what the pair's rings still carry, then
 * the rings and every closed device's pool. */
static void free_closed(void)
{
	void *m;

	while (nb_pair_rings) {
		struct rte_ring *r = pair_rings[--nb_pair_rings];

		while (rte_ring_dequeue(r, &m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(r);
	}
	while (nb_closed_pools)
		rte_mempool_free(closed_pools[--nb_closed_pools]);
}

/* memif's buffer size when its devargs give none (DPDK 22.11). */
#define MEMIF_DEFAULT_BSIZE	2048

/* Whether the port's driver is `name` (a port may report none). */
static bool port_driver_is(const struct rte_eth_dev_info *info,
			   const char *name)
{
	return info->driver_name != NULL &&
	       strcmp(info->driver_name, name) == 0;
}

/*
 * A memif port whose frames need more than one of its buffers: warn.
 * memif then sends a frame as chained descriptors, and DPDK's copy-mode
 * transmit (22.11, and main as of 2026) takes one slot too many for a
 * chain when its ring is nearly full: it writes a descriptor and buffer
 * the receiver has not yet read, which splits or garbles a frame in
 * flight (measured: 2-14 frames in 2 M of 4154 bytes over 2048-byte
 * buffers; devtools/memif-chain). RC recovers (the ICRC drops the
 * remains, a NAK resends), UC and UD lose messages. Frames that fit one
 * buffer never chain; a zero-copy memif (zero-copy=yes) sends mbufs, not
 * copies, and counts its slots right.
 */
static void
memif_check_bsize(uint16_t port, const struct rte_eth_dev_info *info,
		  uint32_t frame)
{
	const struct rte_devargs *da;
	struct rte_kvargs *kv = NULL;
	const char *v;
	uint32_t bsize = MEMIF_DEFAULT_BSIZE;

	if (!port_driver_is(info, "net_memif") || info->device == NULL)
		return;
	da = rte_dev_devargs(info->device);
	if (da != NULL && da->args != NULL)
		kv = rte_kvargs_parse(da->args, NULL);
	v = kv != NULL ? rte_kvargs_get(kv, "bsize") : NULL;
	if (v != NULL)
		bsize = (uint32_t)strtoul(v, NULL, 0);
	v = kv != NULL ? rte_kvargs_get(kv, "zero-copy") : NULL;
	if (v != NULL && strcmp(v, "yes") == 0)
		bsize = UINT32_MAX;
	rte_kvargs_free(kv);
	if (frame > bsize)
		DROCE_LOG(WARNING, "port %u: frames up to %u bytes over memif buffers of %u (bsize=): "
			  "memif chains them and its transmit then corrupts frames in flight; give memif bsize=%u or more",
			  port, frame, bsize, frame);
}

int eth_port_setup(struct droce_dev *dev)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	uint16_t port = dev->port_id;
	int socket = rte_eth_dev_socket_id(port);
	uint32_t mtu, room;
	char name[RTE_MEMPOOL_NAMESIZE];
	int ret;

	if (socket < 0)
		socket = (int)rte_socket_id();
	ret = rte_eth_dev_info_get(port, &info);
	if (ret)
		return ret;
	/* Ports whose state in the kernel outlives the process unless they
	 * close: net_af_xdp's XDP program, and both PMDs' promiscuous mode
	 * (the interface's IFF_PROMISC). droce_exit_release closes them. */
	dev->port_kernel = port_driver_is(&info, "net_af_xdp") ||
			   port_driver_is(&info, "net_af_packet");
	/* The largest path MTU whose frames the port takes (its MTU, and its
	 * frame limit: memif, for one, carries 1518-byte frames at most). */
	{
		uint32_t lim = info.max_mtu ? info.max_mtu : UINT16_MAX;
		uint32_t m = dev->args.max_mtu;

		uint32_t l2 = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN +
			      (dev->args.vlan_tci ? RTE_VLAN_HLEN : 0);

		if (info.max_rx_pktlen > l2)
			lim = RTE_MIN(lim, info.max_rx_pktlen - l2);
		/* port_mtu= overrides a PMD that under-reports: net_af_packet
		 * says 1518-byte frames whatever its framesz */
		if (dev->args.port_mtu)
			lim = dev->args.port_mtu;
		while (m > 256 && m + ETH_L3_OVERHEAD > lim)
			m >>= 1;
		if (m + ETH_L3_OVERHEAD > lim) {
			DROCE_LOG(ERR, "port %u: frames of at most %u bytes carry no RoCE path MTU",
				  port, lim);
			return -EINVAL;
		}
		if (m != dev->args.max_mtu)
			DROCE_LOG(WARNING, "port %u: MTU limit %u bytes; path MTU limited to %u",
				  port, lim, m);
		dev->args.max_mtu = m;
		mtu = m + ETH_L3_OVERHEAD;
		if (info.min_mtu && mtu < info.min_mtu)
			mtu = info.min_mtu;
		/* ethdev refuses an MTU over what the PMD reports (its MTU,
		 * its frame length), even when port_mtu= says it carries more */
		if (dev->args.port_mtu) {
			if (info.max_mtu && mtu > info.max_mtu)
				mtu = info.max_mtu;
			if (info.max_rx_pktlen > l2 &&
			    mtu > info.max_rx_pktlen - l2)
				mtu = info.max_rx_pktlen - l2;
		}
		/* (a frame in a memif buffer has no FCS) */
		memif_check_bsize(port, &info,
				  m + ETH_L3_OVERHEAD + l2 - RTE_ETHER_CRC_LEN);
	}
	memset(&conf, 0, sizeof(conf));
	conf.rxmode.mtu = mtu;
	if (info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS)
		conf.txmode.offloads |= RTE_ETH_TX_OFFLOAD_MULTI_SEGS;
	if (info.rx_offload_capa & RTE_ETH_RX_OFFLOAD_SCATTER)
		conf.rxmode.offloads |= RTE_ETH_RX_OFFLOAD_SCATTER;
	/* Zero-copy transmit (zc_min=) chains an external buffer in the
	 * application's memory, which is not DMA-mapped (rte_extmem is not
	 * used): only ports that never DMA and take chains (all three
	 * virtual ports report RTE_ETH_TX_OFFLOAD_MULTI_SEGS in 22.11)
	 * qualify. net_ring passes the mbuf by pointer to a receiver in this
	 * process, which handles chains; net_af_packet copies the frame
	 * into the TPACKET ring it shares with the kernel. memif is left
	 * out: in its zero-copy mode the buffers must lie in its shared
	 * regions. See doc/performance.md for when it pays. */
	dev->zc_min = 0;
	if (dev->args.zc_min) {
		if ((info.tx_offload_capa & RTE_ETH_TX_OFFLOAD_MULTI_SEGS) &&
		    (port_driver_is(&info, "net_ring") ||
		     port_driver_is(&info, "net_af_packet")))
			dev->zc_min = dev->args.zc_min;
		else
			DROCE_LOG(WARNING, "port %u (%s): no zero-copy transmit on this port",
				  port, info.driver_name ? info.driver_name : "?");
	}
	ret = rte_eth_dev_configure(port, 1, 1, &conf);
	if (ret) {
		DROCE_LOG(ERR, "port %u: configure failed: %s", port, strerror(-ret));
		return ret;
	}
	snprintf(name, sizeof(name), "droce_mb_%u", port);
	room = RTE_MAX(dev->args.max_mtu + 256u, (uint32_t)RTE_MBUF_DEFAULT_DATAROOM);
	dev->pool = rte_pktmbuf_pool_create(name, dev->args.nb_mbuf, 256, 0,
					    (uint16_t)(RTE_PKTMBUF_HEADROOM + room),
					    socket);
	if (dev->pool == NULL) {
		DROCE_LOG(ERR, "port %u: no memory for %u mbufs", port,
			  dev->args.nb_mbuf);
		return -ENOMEM;
	}
	ret = rte_eth_rx_queue_setup(port, 0, ETH_NB_DESC, (unsigned)socket,
				     NULL, dev->pool);
	if (ret == 0)
		ret = rte_eth_tx_queue_setup(port, 0, ETH_NB_DESC,
					     (unsigned)socket, NULL);
	if (ret) {
		DROCE_LOG(ERR, "port %u: queue setup failed: %s", port,
			  strerror(-ret));
		goto fail;
	}
	dev->txq = rte_zmalloc_socket("droce_txq", sizeof(*dev->txq) * ETH_TXQ_CAP,
				      RTE_CACHE_LINE_SIZE, socket);
	if (dev->txq == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	dev->txq_cap = ETH_TXQ_CAP;
	if (dev->args.icrc_batch && roce_icrc_clmul_usable()) {
		/* one block: the frames' l3 pointers, covers, IP versions */
		uint8_t *b = rte_zmalloc_socket("droce_icrc_due", ETH_TXQ_CAP *
				(sizeof(uint8_t *) + sizeof(uint16_t) + 1),
				RTE_CACHE_LINE_SIZE, socket);

		if (b == NULL) {
			ret = -ENOMEM;
			goto fail;
		}
		dev->icrc_l3 = (uint8_t **)(void *)b;
		dev->icrc_cover = (uint16_t *)(void *)(b + ETH_TXQ_CAP *
						       sizeof(uint8_t *));
		dev->icrc_v6 = b + ETH_TXQ_CAP * (sizeof(uint8_t *) +
						  sizeof(uint16_t));
		dev->icrc_n = 0;
		dev->icrc_first = true;
	}
	dev->loopq = rte_zmalloc_socket("droce_loopq",
			sizeof(*dev->loopq) * ETH_LOOPQ_CAP, RTE_CACHE_LINE_SIZE,
			socket);
	if (dev->loopq == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	ret = rte_eth_dev_start(port);
	if (ret) {
		DROCE_LOG(ERR, "port %u: start failed: %s", port, strerror(-ret));
		goto fail;
	}
	/* Our MAC: as given, else the port's, else 02:00 + the IPv4 address. */
	rte_eth_macaddr_get(port, &dev->mac);
	if (dev->args.mac_set) {
		dev->mac = dev->args.mac;
	} else if (rte_is_zero_ether_addr(&dev->mac)) {
		dev->mac.addr_bytes[0] = 0x02;
		dev->mac.addr_bytes[1] = 0x00;
		memcpy(&dev->mac.addr_bytes[2], &dev->args.ip, 4);
	}
	/* A MAC the port does not know needs promiscuous rx; harmless else.
	 * Off again at close when droce turned it on: over net_af_packet and
	 * net_af_xdp it is the kernel interface's flag, and outlives us. */
	dev->promisc_ours = rte_eth_promiscuous_get(port) == 0 &&
			    rte_eth_promiscuous_enable(port) == 0;
	{
		struct rte_eth_link link;

		memset(&link, 0, sizeof(link));
		rte_eth_link_get_nowait(port, &link);
		dev->link_up = link.link_status;
	}
	if (dev->args.impair[0]) {
		dev->impair = droce_impair_attach(port, dev->args.impair);
		if (dev->impair == NULL) {
			DROCE_LOG(ERR, "port %u: impair \"%s\": %s", port,
				  dev->args.impair, rte_strerror(rte_errno));
			ret = -EINVAL;
			if (dev->promisc_ours)
				rte_eth_promiscuous_disable(port);
			rte_eth_dev_stop(port);
			goto fail;
		}
	}
	return 0;
fail:
	rte_free(dev->loopq);
	dev->loopq = NULL;
	rte_free(dev->txq);
	dev->txq = NULL;
	rte_free(dev->icrc_l3);
	dev->icrc_l3 = NULL;
	dev->icrc_n = 0;
	rte_mempool_free(dev->pool);
	dev->pool = NULL;
	return ret;
}

/* The port quiet: no impairer, promiscuous rx as droce found it, stopped. */
static void port_stop(struct droce_dev *dev)
{
	if (dev->impair) {
		droce_impair_detach(dev->impair);
		dev->impair = NULL;
	}
	if (dev->promisc_ours)
		rte_eth_promiscuous_disable(dev->port_id);
	dev->promisc_ours = false;
	rte_eth_dev_stop(dev->port_id);
}

void eth_port_release(struct droce_dev *dev)
{
	if (dev->port_closed)
		return;
	port_stop(dev);
	rte_eth_dev_close(dev->port_id);
	dev->port_closed = true;
}

void eth_port_close(struct droce_dev *dev, bool served)
{
	bool closed = dev->port_closed;

	if (!closed)
		port_stop(dev);
	rte_pktmbuf_free_bulk(dev->txq, dev->txq_len);
	dev->txq_len = 0;
	dev->icrc_n = 0;
	rte_pktmbuf_free_bulk(dev->loopq, dev->loopq_len);
	dev->loopq_len = 0;
	rte_pktmbuf_free_bulk(dev->mstash, dev->mstash_n);
	dev->mstash_n = 0;
	rte_free(dev->loopq);
	dev->loopq = NULL;
	if (!closed)
		rte_eth_dev_close(dev->port_id);
	rte_free(dev->txq);
	dev->txq = NULL;
	rte_free(dev->icrc_l3);
	dev->icrc_l3 = NULL;
	/* (one that never ran goes now: a probe of its port may come again,
	 * and its pool's name with it) */
	if (served && nb_closed_pools < DROCE_MAX_DEVS)
		closed_pools[nb_closed_pools++] = dev->pool;
	else
		rte_mempool_free(dev->pool);
	dev->pool = NULL;
	if (droce_nb_devs == 0)
		free_closed();
}

/* A port of a refused pair, if it is still there (a device that failed
 * its probe may have closed it already, which released it), and its vdev
 * (rte_eth_from_rings made one; closing the port leaves it). */
static void pair_port_close(const char *name)
{
	uint16_t port;

	if (name[0] == '\0')
		return;
	if (rte_eth_dev_get_port_by_name(name, &port) == 0) {
		rte_eth_dev_stop(port);
		rte_eth_dev_close(port);
	}
	rte_vdev_uninit(name);
}

/*
 * Undo a pair that failed after its rings: its ports, then its rings
 * unless free_closed() took them with the last device, then the pool of
 * its first device if that was made and removed again: with the rings
 * drained no frame of it is left anywhere, and a program that retries
 * must not pile up pools until its last device goes. (net_ring's ports
 * made by rte_eth_from_rings only attach the rings: closing one leaves
 * them, and its peer still open, whole.)
 */
static void pair_undo(const char *name_a, const char *name_b,
		      struct rte_ring *ab, struct rte_ring *ba,
		      struct rte_mempool *pool_a)
{
	void *m;

	pair_port_close(name_a);
	pair_port_close(name_b);
	if (nb_pair_rings < 2 || pair_rings[nb_pair_rings - 1] != ba ||
	    pair_rings[nb_pair_rings - 2] != ab)
		return;
	nb_pair_rings -= 2;
	for (int i = 0; i < 2; i++) {
		struct rte_ring *r = i ? ba : ab;

		while (rte_ring_dequeue(r, &m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(r);
	}
	for (uint32_t i = 0; pool_a != NULL && i < nb_closed_pools; i++) {
		if (closed_pools[i] == pool_a) {
			closed_pools[i] = closed_pools[--nb_closed_pools];
			rte_mempool_free(pool_a);
			break;
		}
	}
}

int droce_create_ring_pair(const char *devargs_a, const char *devargs_b)
{
	static uint32_t seq;
	struct rte_ring *ab, *ba;
	struct droce_devargs check;
	char name[RTE_RING_NAMESIZE];
	char port_a[RTE_ETH_NAME_MAX_LEN], port_b[RTE_ETH_NAME_MAX_LEN];
	struct rte_mempool *pool_a = NULL;
	int pa, pb, ret, dev_a;

	/* Bad arguments make nothing, not even what pair_undo would take
	 * back: no rings, no ports, no half a pair. */
	for (int i = 0; i < 2; i++) {
		const char *a = i ? devargs_b : devargs_a;

		if (a != NULL && (ret = droce_parse_devargs(a, &check)) < 0) {
			DROCE_LOG(ERR, "ring pair: bad devargs \"%s\"", a);
			return ret;
		}
	}
	if (nb_pair_rings + 2 > DROCE_MAX_DEVS)
		return -ENOSPC;
	snprintf(name, sizeof(name), "droce_pair%u_ab", seq);
	ab = rte_ring_create(name, ETH_RING_PAIR_SIZE, SOCKET_ID_ANY,
			     RING_F_SP_ENQ | RING_F_SC_DEQ);
	snprintf(name, sizeof(name), "droce_pair%u_ba", seq);
	ba = rte_ring_create(name, ETH_RING_PAIR_SIZE, SOCKET_ID_ANY,
			     RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (ab == NULL || ba == NULL) {
		rte_ring_free(ab);
		rte_ring_free(ba);
		return -ENOMEM;
	}
	pair_rings[nb_pair_rings++] = ab;
	pair_rings[nb_pair_rings++] = ba;
	snprintf(name, sizeof(name), "net_ring_droce%ua", seq);
	pa = rte_eth_from_rings(name, &ba, 1, &ab, 1, SOCKET_ID_ANY);
	snprintf(name, sizeof(name), "net_ring_droce%ub", seq);
	pb = rte_eth_from_rings(name, &ab, 1, &ba, 1, SOCKET_ID_ANY);
	seq++;
	/* (the ports' own names: net_ring prefixes the one it was given) */
	port_a[0] = port_b[0] = '\0';
	if (pa >= 0)
		rte_eth_dev_get_name_by_port((uint16_t)pa, port_a);
	if (pb >= 0)
		rte_eth_dev_get_name_by_port((uint16_t)pb, port_b);
	if (pa < 0 || pb < 0) {
		ret = -ENODEV;
		goto undo;
	}
	/* The arguments parse, yet a device can still fail: an lcore that
	 * is not a worker, an impairer's own arguments, no room left. Then
	 * neither device stays: half a pair is no use, and its port, its
	 * device slot and its rings would be gone for good. */
	dev_a = droce_dev_create((uint16_t)pa, devargs_a ? devargs_a : "ip=198.18.0.1");
	if (dev_a < 0) {
		ret = dev_a;
		goto undo;
	}
	ret = droce_dev_create((uint16_t)pb, devargs_b ? devargs_b : "ip=198.18.0.2");
	if (ret >= 0)
		return 0;
	pool_a = droce_devs[dev_a]->pool;
	/* (port_b first: removing the last device frees every pair ring) */
	pair_port_close(port_b);
	if (droce_dev_remove_newest(dev_a) < 0) {
		DROCE_LOG(ERR, "ring pair: its first device %d stays", dev_a);
		return ret;
	}
undo:
	pair_undo(port_a, port_b, ab, ba, pool_a);
	return ret;
}

int droce_dev_impair(struct ibv_context *ctx, const char *kvargs)
{
	struct droce_dev *dev;

	if (ctx == NULL || kvargs == NULL)
		return -EINVAL;
	dev = droce_dev_of_ctx(ctx);
	if (dev->impair)
		return droce_impair_set(dev->impair, kvargs);
	dev->impair = droce_impair_attach(dev->port_id, kvargs);
	return dev->impair ? 0 : -rte_errno;
}

struct droce_impair *droce_dev_impairer(struct ibv_context *ctx)
{
	return ctx ? droce_dev_of_ctx(ctx)->impair : NULL;
}

/*
 * Port events (IBV_EVENT_PORT_ACTIVE / PORT_ERR) from the link state,
 * sampled at ETH_LINK_CHECK_MS: a PMD may have no link interrupt
 * (net_ring has none), and reading the state is cheap at that rate.
 */
void eth_port_check(struct droce_dev *dev, uint64_t now)
{
	struct rte_eth_link link;

	if (now < dev->link_check_tsc)
		return;
	dev->link_check_tsc = now + rte_get_tsc_hz() / 1000 * ETH_LINK_CHECK_MS;
	memset(&link, 0, sizeof(link));
	if (rte_eth_link_get_nowait(dev->port_id, &link) != 0)
		return;
	if ((bool)link.link_status == dev->link_up)
		return;
	dev->link_up = link.link_status;
	DROCE_LOG(INFO, "%s: link %s", dev->args.name, dev->link_up ? "up" : "down");
	droce_port_event(dev, dev->link_up ? IBV_EVENT_PORT_ACTIVE :
			 IBV_EVENT_PORT_ERR);
}
