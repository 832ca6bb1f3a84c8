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

/*
 * The ring pairs droce_create_ring_pair made: their rings, their ports'
 * names, and their devices' pools as each closes. A pair's frames are
 * mbufs of its own two pools and go nowhere else, so once both of its
 * devices are closed (droce_dev_destroy, droce_cleanup) its rings are
 * drained and freed, its ports' vdevs go and both pools are freed, while
 * any other device runs on.
 */
struct eth_pair {
	bool used;
	uint8_t open;				/* its devices not yet closed */
	struct rte_ring *ring[2];		/* a to b, b to a */
	char port[2][RTE_ETH_NAME_MAX_LEN];
	struct rte_mempool *pool[2];		/* a closed device's */
};
static struct eth_pair pairs[DROCE_MAX_DEVS / 2];

/*
 * Pools of closed net_ring devices, freed with the last device. A frame is
 * an mbuf of its sender's pool wherever it is until freed: in another
 * device's receive ring (net_ring passes pointers, not copies), that
 * device's link impairer, its hands. droce_cleanup closes devices one by
 * one while the engine keeps serving the rest, so a pool freed with its
 * own device let the engine receive (and return) mbufs of freed, zeroed
 * memory: UBSan caught a received frame with a NULL buffer at teardown
 * (rc_loss-zc). A count of the pool's free mbufs cannot say when the last
 * is back (another lcore's cache flush counts twice while it runs), so it
 * waits for the last device. Past this many, a pool is left, not freed.
 */
#define ETH_MAX_CLOSED_POOLS	(4 * DROCE_MAX_DEVS)
static struct rte_mempool *closed_pools[ETH_MAX_CLOSED_POOLS];
static uint32_t nb_closed_pools;

/* The last device is closed: every closed device's pool. */
static void free_closed(void)
{
	while (nb_closed_pools)
		rte_mempool_free(closed_pools[--nb_closed_pools]);
}

/* A port of a pair, if it is still there (a device that failed its probe
 * may have closed it already, which released it), and its vdev
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

/* A pair none of whose devices is open (or that never had one): its
 * ports, what its rings still carry, its rings, its pools. (net_ring's
 * ports made by rte_eth_from_rings only attach the rings: closing one
 * leaves them.) */
static void pair_free(struct eth_pair *p)
{
	void *m;

	for (int i = 0; i < 2; i++)
		pair_port_close(p->port[i]);
	for (int i = 0; i < 2; i++) {
		while (p->ring[i] && rte_ring_dequeue(p->ring[i], &m) == 0)
			rte_pktmbuf_free(m);
		rte_ring_free(p->ring[i]);
	}
	for (int i = 0; i < 2; i++)
		rte_mempool_free(p->pool[i]);
	memset(p, 0, sizeof(*p));
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

/* (under the registry's lock: devices are made one at a time) */
static uint32_t pool_seq;

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
	/* Every other PMD copies a frame (or DMAs it) and gives its mbuf
	 * back by the time its port is closed. */
	dev->port_passes_mbufs = port_driver_is(&info, "net_ring");
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
	/* (a pool outlives its port while a ring pair's other device runs,
	 * and a new port may take the id: a name of its own each time) */
	snprintf(name, sizeof(name), "droce_mb_%u_%u", port, pool_seq++);
	room = RTE_MAX(dev->args.max_mtu + 256u, (uint32_t)RTE_MBUF_DEFAULT_DATAROOM);
	dev->pool = rte_pktmbuf_pool_create(name, dev->args.nb_mbuf, 256, 0,
					    (uint16_t)(RTE_PKTMBUF_HEADROOM + room),
					    socket);
	if (dev->pool == NULL) {
		ret = rte_errno == EEXIST ? -EEXIST : -ENOMEM;
		DROCE_LOG(ERR, "port %u: no pool of %u mbufs: %s", port,
			  dev->args.nb_mbuf, rte_strerror(-ret));
		return ret;
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
	 * and its pool's name with it; so does one whose port copied every
	 * frame it sent; a ring pair's goes with the pair) */
	if (dev->ring_pair) {
		struct eth_pair *p = &pairs[dev->ring_pair - 1];

		p->pool[dev->ring_pair_side] = dev->pool;
		dev->ring_pair = 0;
		if (--p->open == 0)
			pair_free(p);
	} else if (!served || !dev->port_passes_mbufs)
		rte_mempool_free(dev->pool);
	else if (nb_closed_pools < ETH_MAX_CLOSED_POOLS)
		closed_pools[nb_closed_pools++] = dev->pool;
	else
		DROCE_LOG(WARNING, "%s: its pool stays until the process ends (%u closed net_ring devices' pools wait for the last device)",
			  dev->args.name, nb_closed_pools);
	dev->pool = NULL;
	if (droce_nb_devs == 0)
		free_closed();
}

int droce_create_ring_pair(const char *devargs_a, const char *devargs_b)
{
	static uint32_t seq;
	struct droce_devargs check;
	char name[RTE_RING_NAMESIZE];
	struct eth_pair *p = NULL;
	int port[2], dev[2] = { -1, -1 }, ret;

	/* Bad arguments make nothing: no rings, no ports, no half a pair. */
	for (int i = 0; i < 2; i++) {
		const char *a = i ? devargs_b : devargs_a;

		if (a != NULL && (ret = droce_parse_devargs(a, &check)) < 0) {
			DROCE_LOG(ERR, "ring pair: bad devargs \"%s\"", a);
			return ret;
		}
	}
	for (size_t i = 0; i < RTE_DIM(pairs) && p == NULL; i++)
		if (!pairs[i].used)
			p = &pairs[i];
	if (p == NULL)
		return -ENOSPC;
	p->used = true;
	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "droce_pair%u_%s", seq,
			 i ? "ba" : "ab");
		p->ring[i] = rte_ring_create(name, ETH_RING_PAIR_SIZE,
					     SOCKET_ID_ANY,
					     RING_F_SP_ENQ | RING_F_SC_DEQ);
	}
	if (p->ring[0] == NULL || p->ring[1] == NULL) {
		pair_free(p);
		return -ENOMEM;
	}
	for (int i = 0; i < 2; i++) {
		snprintf(name, sizeof(name), "net_ring_droce%u%c", seq,
			 i ? 'b' : 'a');
		/* a receives what b sends: ring b to a; a sends on a to b */
		port[i] = rte_eth_from_rings(name, &p->ring[!i], 1,
					     &p->ring[i], 1, SOCKET_ID_ANY);
		/* (the port's own name: net_ring prefixes the one given) */
		if (port[i] >= 0)
			rte_eth_dev_get_name_by_port((uint16_t)port[i],
						     p->port[i]);
	}
	seq++;
	if (port[0] < 0 || port[1] < 0) {
		pair_free(p);
		return -ENODEV;
	}
	/* The arguments parse, yet a device can still fail: an lcore that
	 * is not a worker, an impairer's own arguments, no room left. Then
	 * neither device stays: half a pair is no use, and its port, its
	 * device slot and its rings would be gone for good. */
	for (int i = 0; i < 2; i++) {
		const char *a = i ? devargs_b : devargs_a;

		dev[i] = droce_dev_create((uint16_t)port[i], a ? a :
					  i ? "ip=198.18.0.2" : "ip=198.18.0.1");
		if (dev[i] < 0) {
			ret = dev[i];
			break;
		}
		droce_devs[dev[i]]->ring_pair = (uint8_t)(p - pairs + 1);
		droce_devs[dev[i]]->ring_pair_side = (uint8_t)i;
		p->open++;
	}
	if (dev[1] >= 0)
		return 0;
	/* (a's close frees the pair: it is its last open device) */
	if (dev[0] >= 0 && droce_dev_destroy(dev[0]) < 0) {
		DROCE_LOG(ERR, "ring pair: its first device %d stays", dev[0]);
		return ret;
	}
	if (p->used)
		pair_free(p);
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
