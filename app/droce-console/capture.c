/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Packet capture to pcapng with DPDK's pcapng library: rx and tx callbacks
 * on the port's queue 0 (the engine's) copy each frame with
 * rte_pcapng_copy() into a ring; the console's main loop writes the ring
 * out with rte_pcapng_write_packets(), so the engine never waits for the
 * file. Wireshark/tshark decode the frames as RoCEv2 (UDP 4791).
 *
 * (DPDK 22.11 has no rte_eth_add_first_tx_callback; tx callbacks run
 * before the driver's burst function anyway.) A frame the port refuses
 * (tx_burst short) and the engine sends again is seen twice.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <sys/utsname.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_pcapng.h>
#include <rte_ring.h>

#include "console.h"

#define CAP_NB_MBUF	8191
#define CAP_RING	8192
#define CAP_SNAP_DEF	4352	/* a 4096-byte path MTU frame and its headers */
#define CAP_SNAP_MAX	9216

static struct {
	bool active;
	rte_pcapng_t *pcap;
	struct rte_mempool *mp;
	struct rte_ring *ring;
	uint32_t snaplen;
	int nports;
	uint16_t ports[RTE_MAX_ETHPORTS];
	const struct rte_eth_rxtx_callback *rx_cb[RTE_MAX_ETHPORTS];
	const struct rte_eth_rxtx_callback *tx_cb[RTE_MAX_ETHPORTS];
	/* written by the engine threads */
	uint64_t copied[RTE_MAX_ETHPORTS];
	uint64_t drops[RTE_MAX_ETHPORTS];
	/* main loop */
	uint64_t written, bytes;
	uint64_t t_start;
	char file[256];
	unsigned int seq;
} cap;

static void cap_copy(uint16_t port, uint16_t queue, struct rte_mbuf **pkts,
		     uint16_t nb, enum rte_pcapng_direction dir)
{
	uint64_t ts = rte_get_tsc_cycles();

	for (uint16_t i = 0; i < nb;) {
		struct rte_mbuf *c[32];
		unsigned int n = 0, enq;

		for (; i < nb && n < RTE_DIM(c); i++) {
			struct rte_mbuf *m = rte_pcapng_copy(port, queue, pkts[i], cap.mp,
							     cap.snaplen, ts, dir);

			if (m)
				c[n++] = m;
			else
				__atomic_fetch_add(&cap.drops[port], 1, __ATOMIC_RELAXED);
		}
		enq = rte_ring_enqueue_burst(cap.ring, (void **)c, n, NULL);
		if (enq < n) {
			rte_pktmbuf_free_bulk(c + enq, n - enq);
			__atomic_fetch_add(&cap.drops[port], n - enq, __ATOMIC_RELAXED);
		}
		__atomic_fetch_add(&cap.copied[port], enq, __ATOMIC_RELAXED);
	}
}

static uint16_t cap_rx(uint16_t port, uint16_t queue, struct rte_mbuf *pkts[],
		       uint16_t nb, uint16_t max, void *arg)
{
	(void)max;
	(void)arg;
	if (nb)
		cap_copy(port, queue, pkts, nb, RTE_PCAPNG_DIRECTION_IN);
	return nb;
}

static uint16_t cap_tx(uint16_t port, uint16_t queue, struct rte_mbuf *pkts[],
		       uint16_t nb, void *arg)
{
	(void)arg;
	if (nb)
		cap_copy(port, queue, pkts, nb, RTE_PCAPNG_DIRECTION_OUT);
	return nb;
}

/* Write out what the callbacks queued: at most max packets (the engine
 * keeps adding while we write), or all when max is 0 (after stop). */
static void drain(unsigned int max)
{
	struct rte_mbuf *m[64];
	unsigned int n, done = 0;

	while ((max == 0 || done < max) &&
	       (n = rte_ring_dequeue_burst(cap.ring, (void **)m, RTE_DIM(m), NULL)) > 0) {
		ssize_t w = rte_pcapng_write_packets(cap.pcap, m, (uint16_t)n);

		if (w > 0) {
			cap.written += n;
			cap.bytes += (uint64_t)w;
		}
		rte_pktmbuf_free_bulk(m, n);
		done += n;
	}
}

void capture_service(void)
{
	if (cap.active)
		drain(512);
}

bool capture_active(void)
{
	return cap.active;
}

static void remove_callbacks(void)
{
	for (int i = 0; i < cap.nports; i++) {
		uint16_t p = cap.ports[i];

		if (cap.rx_cb[p])
			rte_eth_remove_rx_callback(p, 0, cap.rx_cb[p]);
		if (cap.tx_cb[p])
			rte_eth_remove_tx_callback(p, 0, cap.tx_cb[p]);
	}
	/* A burst that already took the callback finishes within
	 * microseconds; then nothing refers to it any more. */
	rte_delay_us_sleep(20000);
	for (int i = 0; i < cap.nports; i++) {
		uint16_t p = cap.ports[i];

		rte_free((void *)(uintptr_t)cap.rx_cb[p]);
		rte_free((void *)(uintptr_t)cap.tx_cb[p]);
		cap.rx_cb[p] = cap.tx_cb[p] = NULL;
	}
}

static void cap_free(void)
{
	if (cap.pcap)
		rte_pcapng_close(cap.pcap);
	cap.pcap = NULL;
	rte_ring_free(cap.ring);
	cap.ring = NULL;
	rte_mempool_free(cap.mp);
	cap.mp = NULL;
}

static int capture_start(int argc, char **argv)
{
	const char *cmd = "capture start";
	uint64_t snaplen = CAP_SNAP_DEF;
	struct con_opt o[] = {
		{ "snaplen", OPT_U64, &snaplen, NULL, CAP_SNAP_MAX },
		{ NULL, 0, NULL, NULL, 0 },
	};
	char name[RTE_MEMPOOL_NAMESIZE], tmp[256], *save = NULL;
	struct utsname un;
	char os[300];
	int fd;

	if (argc < 2)
		return con_err("capture start: usage: capture start <port>[,<port>...]|all <file.pcapng> [snaplen <n>]");
	if (cap.active)
		return con_err("capture start: a capture to %s is running (capture stop first)", cap.file);
	if (con_opts(cmd, argc - 2, argv + 2, o))
		return -1;
	if (snaplen < 64)
		return con_err("capture start: snaplen must be 64..%d", CAP_SNAP_MAX);
	memset(&cap.rx_cb, 0, sizeof(cap.rx_cb));
	memset(&cap.tx_cb, 0, sizeof(cap.tx_cb));
	memset(&cap.copied, 0, sizeof(cap.copied));
	memset(&cap.drops, 0, sizeof(cap.drops));
	cap.nports = 0;
	if (strcmp(argv[0], "all") == 0) {
		for (int i = 0; i < g.nb_devs; i++)
			cap.ports[cap.nports++] = g.devs[i].port;
	} else {
		snprintf(tmp, sizeof(tmp), "%s", argv[0]);
		for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			uint64_t p;

			if (con_arg_u64(cmd, "port", t, &p, RTE_MAX_ETHPORTS - 1))
				return -1;
			if (!rte_eth_dev_is_valid_port((uint16_t)p))
				return con_err("capture start: no port %" PRIu64 " (see 'show ports')", p);
			for (int k = 0; k < cap.nports; k++)
				if (cap.ports[k] == p)
					return con_err("capture start: port %" PRIu64 " listed twice", p);
			cap.ports[cap.nports++] = (uint16_t)p;
		}
	}
	if (cap.nports == 0)
		return con_err("capture start: no port");
	fd = open(argv[1], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return con_err("capture start: %s: %s", argv[1], strerror(errno));
	cap.snaplen = (uint32_t)snaplen;
	snprintf(name, sizeof(name), "con_cap_mp%u", cap.seq);
	cap.mp = rte_pktmbuf_pool_create(name, CAP_NB_MBUF, 0, 0,
					 (uint16_t)rte_pcapng_mbuf_size(cap.snaplen),
					 SOCKET_ID_ANY);
	snprintf(name, sizeof(name), "con_cap_ring%u", cap.seq++);
	cap.ring = rte_ring_create(name, CAP_RING, SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (cap.mp == NULL || cap.ring == NULL) {
		close(fd);
		cap_free();
		return con_err("capture start: no memory for the capture buffers");
	}
	if (uname(&un) == 0)
		snprintf(os, sizeof(os), "%s %s", un.sysname, un.release);
	else
		snprintf(os, sizeof(os), "Linux");
	cap.pcap = rte_pcapng_fdopen(fd, os, NULL, "droce-console", NULL);
	if (cap.pcap == NULL) {
		int e = rte_errno;

		close(fd);
		cap_free();
		return con_err("capture start: rte_pcapng_fdopen: %s", rte_strerror(e));
	}
	snprintf(cap.file, sizeof(cap.file), "%s", argv[1]);
	cap.written = cap.bytes = 0;
	cap.t_start = con_now_us();
	cap.active = true;
	for (int i = 0; i < cap.nports; i++) {
		uint16_t p = cap.ports[i];

		cap.rx_cb[p] = rte_eth_add_rx_callback(p, 0, cap_rx, NULL);
		cap.tx_cb[p] = rte_eth_add_tx_callback(p, 0, cap_tx, NULL);
		if (cap.rx_cb[p] == NULL || cap.tx_cb[p] == NULL) {
			int e = rte_errno;

			remove_callbacks();
			cap.active = false;
			cap_free();
			return con_err("capture start: cannot hook port %u: %s", p, rte_strerror(e));
		}
	}
	printf("capturing port%s", cap.nports > 1 ? "s" : "");
	for (int i = 0; i < cap.nports; i++)
		printf("%s%u", i ? "," : " ", cap.ports[i]);
	printf(" (rx and tx) to %s, snaplen %u\n", cap.file, cap.snaplen);
	return 0;
}

static int do_stop(bool quiet)
{
	uint64_t drops = 0, copied = 0;

	if (!cap.active)
		return -1;
	remove_callbacks();
	drain(0);
	for (int i = 0; i < cap.nports; i++) {
		uint16_t p = cap.ports[i];

		copied += cap.copied[p];
		drops += cap.drops[p];
		rte_pcapng_write_stats(cap.pcap, p, NULL, 0, 0, cap.copied[p], cap.drops[p]);
	}
	cap.active = false;
	cap_free();
	if (!quiet)
		printf("capture stopped: %" PRIu64 " packets (%" PRIu64 " bytes) written to %s, %" PRIu64
		       " dropped\n", cap.written, cap.bytes, cap.file, drops);
	(void)copied;
	return 0;
}

static int capture_stop(int argc, char **argv)
{
	(void)argv;
	if (argc)
		return con_err("capture stop takes no arguments");
	if (!cap.active)
		return con_err("capture stop: no capture running");
	return do_stop(false);
}

void capture_stop_all(void)
{
	if (cap.active)
		do_stop(false);
}

static int capture_show(int argc, char **argv)
{
	uint64_t copied = 0, drops = 0;

	(void)argv;
	if (argc)
		return con_err("capture show takes no arguments");
	if (!cap.active) {
		printf("no capture running%s%s\n", cap.file[0] ? "; last file " : "", cap.file);
		return 0;
	}
	drain(CAP_RING);
	for (int i = 0; i < cap.nports; i++) {
		copied += __atomic_load_n(&cap.copied[cap.ports[i]], __ATOMIC_RELAXED);
		drops += __atomic_load_n(&cap.drops[cap.ports[i]], __ATOMIC_RELAXED);
	}
	printf("capturing to %s for %.1f s: %" PRIu64 " packets copied, %" PRIu64 " written (%" PRIu64
	       " bytes), %" PRIu64 " dropped\n", cap.file, (double)(con_now_us() - cap.t_start) / 1e6,
	       copied, cap.written, cap.bytes, drops);
	return 0;
}

const struct con_cmd con_cmds_capture[] = {
	{ "capture", "capture start", "<port>[,<port>...]|all <file.pcapng> [snaplen <n>]",
	  "write the ports' rx and tx frames to a pcapng file (rte_pcapng); Wireshark decodes them as RoCEv2", capture_start },
	{ "capture", "capture stop", "", "stop and close the file (statistics blocks at the end)", capture_stop },
	{ "capture", "capture show", "", "packets written and dropped so far", capture_show },
	{ NULL, NULL, NULL, NULL, NULL },
};
