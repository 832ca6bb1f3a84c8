/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-ceiling: what the link and the core allow, measured the way droce
 * would use them, to put droce-perf's figures beside.
 *
 *   droce-ceiling [EAL args] -- <mode> [options]
 *
 * Modes over droce's embedded link (two net_ring ports joined back to back
 * by rte_rings, created exactly as droce_create_ring_pair does):
 *   pps   -f <frame bytes> -D <sec> [--cores 1|2]
 *         txonly on port A, rxonly on port B. --cores 1: one thread does
 *         both (as droce's one engine lcore serves both ends of the pair);
 *         --cores 2: tx on the main lcore, rx on the first worker.
 *   rtt   -f <frame bytes> -n <iters> [--cores 1|2] [--ack <bytes>]
 *         ping-pong: a frame from A to B and straight back. --cores 2: the
 *         reflector runs on the worker lcore. --ack: each way carries a
 *         frame of that size ahead of the -f frame, as an RC ping-pong
 *         does (the ACK of the request that came, then the next request:
 *         droce sends the two in one burst), and the round trip ends when
 *         both are back.
 * Modes over one port of this process (two processes, e.g. a memif pair;
 * the port is the first ethdev, or --port <name>):
 *   tx    -f <frame> -D <sec>     send as fast as the port takes
 *   rx    -D <sec>                count what arrives (reports the rate over
 *                                 the middle of the busy period)
 *   ping  -f <frame> -n <iters> [--ack <bytes>]
 *                                 send, wait for the echo, repeat
 *   pong  -D <sec> [-n <iters>] [--ack <bytes>]
 *                                 echo everything back (with -n: the
 *                                 ping's iterations and warm-up, then stop;
 *                                 --ack as ping's, to count its frames)
 *   --room <bytes>: mbufs of at least that data room (a port whose frames
 *                 are bigger than the frame sent, as net_af_packet's
 *                 framesz, needs room for them to start)
 *
 * Two-process modes end quietly: memif (DPDK 22.11) unmaps its shared
 * rings when the peer disconnects, with nothing ordering that against a
 * burst in progress (test/examples/README.md), so neither side may be in
 * a burst when the other exits. The receiver stops polling when its window
 * ends and waits, the sender waits QUIET_S after its last burst before it
 * exits, and pong stops after the last frame ping waits for.
 * Modes of one core, no link:
 *   memcpy -s <size> -D <sec>     copy bandwidth of memcpy() for that size
 *   crc    -s <size> -D <sec>     CRC32 bandwidth of droce's ICRC routine
 *   clmul  -D <sec>               the carry-less multiplier's rate at the
 *                                 width droce's CRC folds with, and the
 *                                 bandwidth no CRC by folding can pass
 *
 * Frames carry a fixed Ethernet/IPv4/UDP header (destination port 4791)
 * written into each mbuf, the rest untouched, as testpmd's txonly does:
 * this is the link's and the PMD's cost per packet, not a copy.
 *
 * Output: one line "CEILING mode=... key=value ..." per measurement.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_pause.h>
#include <rte_ring.h>

#include "droce_stamp.h"
#include "roce.h"

#define BURST		32
#define NB_MBUF		8191
#define RING_SIZE	4096	/* as droce's pair */

static struct {
	const char *mode;
	uint32_t frame;
	double secs;
	uint64_t iters;
	bool iters_set;		/* -n given (pong: how many to echo) */
	int cores;
	uint32_t ack;		/* rtt, ping, pong: a second frame a way */
	uint32_t room;		/* --room: the mbufs' data room at least */
	uint64_t size;
	const char *port;
} o = { .frame = 138, .secs = 1, .iters = 100000, .cores = 1,
	.size = 65536 };

static struct rte_mempool *pool;
static uint16_t port_a, port_b;
static uint8_t hdr[64];
static volatile bool stop;
static uint64_t hz;

/* This thread's time on a CPU, ns (/proc/thread-self/schedstat): rates
 * per CPU-second do not depend on what other work took. */
static uint64_t cpu_ns(void)
{
	FILE *f = fopen("/proc/thread-self/schedstat", "r");
	uint64_t run = 0;

	if (f) {
		if (fscanf(f, "%" SCNu64, &run) != 1)
			run = 0;
		fclose(f);
	}
	return run;
}

static double now_s(void)
{
	return (double)rte_rdtsc() / (double)hz;
}

static void make_hdr(void)
{
	/* dst 02:00:c6:12:00:02, src 02:00:c6:12:00:01, IPv4, UDP 4791 */
	static const uint8_t h[42] = {
		0x02, 0x00, 0xc6, 0x12, 0x00, 0x02, 0x02, 0x00, 0xc6, 0x12,
		0x00, 0x01, 0x08, 0x00,
		0x45, 0x00, 0x00, 0x00, 0x00, 0x00, 0x40, 0x00, 0x40, 0x11,
		0x00, 0x00, 198, 18, 0, 1, 198, 18, 0, 2,
		0xc0, 0x00, 0x12, 0xb7, 0x00, 0x00, 0x00, 0x00,
	};

	memset(hdr, 0, sizeof(hdr));
	memcpy(hdr, h, sizeof(h));
}

static int alloc_sized(struct rte_mbuf **m, unsigned int n, uint32_t frame)
{
	if (rte_pktmbuf_alloc_bulk(pool, m, n))
		return 0;
	for (unsigned int i = 0; i < n; i++) {
		uint8_t *d = rte_pktmbuf_mtod(m[i], uint8_t *);

		memcpy(d, hdr, sizeof(hdr));
		m[i]->data_len = (uint16_t)frame;
		m[i]->pkt_len = frame;
	}
	return (int)n;
}

static int alloc_frames(struct rte_mbuf **m, unsigned int n)
{
	return alloc_sized(m, n, o.frame);
}

static int port_setup(uint16_t port)
{
	struct rte_eth_conf conf;
	struct rte_eth_dev_info info;
	int ret;

	memset(&conf, 0, sizeof(conf));
	/* An MTU for the frame, within what the PMD reports: ethdev refuses
	 * more, though memif (with bsize= as large as the frame) and
	 * af_packet carry bigger frames than they report (droce's port_mtu=
	 * relies on the same). */
	if (rte_eth_dev_info_get(port, &info) == 0 && info.max_mtu &&
	    o.frame > RTE_ETHER_MAX_LEN - RTE_ETHER_CRC_LEN) {
		uint32_t mtu = RTE_MIN(info.max_mtu,
				       o.frame - RTE_ETHER_HDR_LEN);
		uint32_t l2 = RTE_ETHER_HDR_LEN + RTE_ETHER_CRC_LEN;

		if (info.max_rx_pktlen > l2)
			mtu = RTE_MIN(mtu, info.max_rx_pktlen - l2);
		conf.rxmode.mtu = mtu;
	}
	ret = rte_eth_dev_configure(port, 1, 1, &conf);
	if (ret == 0)
		ret = rte_eth_rx_queue_setup(port, 0, 1024,
					     (unsigned int)rte_socket_id(), NULL, pool);
	if (ret == 0)
		ret = rte_eth_tx_queue_setup(port, 0, 1024,
					     (unsigned int)rte_socket_id(), NULL);
	if (ret == 0)
		ret = rte_eth_dev_start(port);
	if (ret == 0)
		rte_eth_promiscuous_enable(port);
	if (ret)
		fprintf(stderr, "port %u setup: %s\n", port, strerror(-ret));
	return ret;
}

static int make_pool(void)
{
	uint32_t room = RTE_MAX(RTE_MAX(o.frame + 256u, o.room),
				(uint32_t)RTE_MBUF_DEFAULT_DATAROOM);

	pool = rte_pktmbuf_pool_create("ceiling_mb", NB_MBUF, 256, 0,
				       (uint16_t)(RTE_PKTMBUF_HEADROOM + room),
				       (int)rte_socket_id());
	if (pool == NULL) {
		fprintf(stderr, "mbuf pool: %s\n", rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

static int ring_pair(void)
{
	struct rte_ring *ab, *ba;
	int a, b;

	ab = rte_ring_create("ceil_ab", RING_SIZE, SOCKET_ID_ANY,
			     RING_F_SP_ENQ | RING_F_SC_DEQ);
	ba = rte_ring_create("ceil_ba", RING_SIZE, SOCKET_ID_ANY,
			     RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (ab == NULL || ba == NULL)
		return -1;
	a = rte_eth_from_rings("net_ring_ceil_a", &ba, 1, &ab, 1, SOCKET_ID_ANY);
	b = rte_eth_from_rings("net_ring_ceil_b", &ab, 1, &ba, 1, SOCKET_ID_ANY);
	if (a < 0 || b < 0)
		return -1;
	port_a = (uint16_t)a;
	port_b = (uint16_t)b;
	return port_setup(port_a) || port_setup(port_b) ? -1 : 0;
}

/* The one port of this process; `announce`: say "ready" once the port
 * is set up (a memif server's peer can attach from then on), then wait
 * for the link. */
static int one_port(const char *announce)
{
	uint16_t p;

	if (o.port) {
		if (rte_eth_dev_get_port_by_name(o.port, &p)) {
			fprintf(stderr, "no ethdev port %s\n", o.port);
			return -1;
		}
	} else {
		p = (uint16_t)rte_eth_find_next(0);
		if (p >= RTE_MAX_ETHPORTS) {
			fprintf(stderr, "no ethdev port (give --vdev=...)\n");
			return -1;
		}
	}
	port_a = port_b = p;
	if (port_setup(p))
		return -1;
	if (announce) {
		printf("CEILING mode=%s ready\n", announce);
		fflush(stdout);
	}
	/* wait for the link (memif: the peer process) */
	for (int i = 0; i < 3000; i++) {
		struct rte_eth_link l;

		if (rte_eth_link_get_nowait(p, &l) == 0 && l.link_status)
			return 0;
		rte_delay_ms(10);
	}
	fprintf(stderr, "port %u: no link after 30 s\n", p);
	return -1;
}

/* ------------------------------------------------------------ tx / rx */

/*
 * Send for as long as asked. What the port refuses is kept and offered
 * again (as droce's engine does), with a pause in between: re-allocating
 * and hammering a full ring would mostly measure the contention on the
 * ring's shared indexes, slowing the receiver down.
 */
static uint64_t tx_loop(uint16_t port, uint64_t end_tsc, uint64_t *dropped)
{
	struct rte_mbuf *m[BURST];
	uint64_t sent = 0;
	int have = 0, off = 0;

	while (rte_rdtsc() < end_tsc && !stop) {
		uint16_t k;

		if (have == 0) {
			have = alloc_frames(m, BURST);
			off = 0;
			if (have == 0)
				continue;
		}
		k = rte_eth_tx_burst(port, 0, m + off, (uint16_t)have);
		sent += k;
		off += k;
		have -= k;
		if (k == 0) {
			(*dropped)++;		/* counts refusals, not frames */
			for (int i = 0; i < 16; i++)
				rte_pause();
		}
	}
	if (have)
		rte_pktmbuf_free_bulk(m + off, (unsigned int)have);
	return sent;
}

struct rx_stats {
	uint64_t cpu_ns;		/* the rx thread's CPU time */
	uint64_t cpu_pkts;		/* packets over that time */
	uint64_t pkts;
	uint64_t t_first, t_last;
	uint64_t win_pkts, win_t0, win_t1;	/* middle of the busy period */
};

static struct rx_stats rxs;

static void rx_count(struct rx_stats *r, uint16_t n, uint64_t now)
{
	if (r->pkts == 0)
		r->t_first = now;
	r->pkts += n;
	r->t_last = now;
}

static int rx_worker(void *arg)
{
	struct rte_mbuf *m[BURST];
	uint16_t port = *(uint16_t *)arg;
	uint64_t c0 = cpu_ns();

	while (!stop) {
		uint16_t n = rte_eth_rx_burst(port, 0, m, BURST);

		if (n) {
			rx_count(&rxs, n, rte_rdtsc());
			rte_pktmbuf_free_bulk(m, n);
		}
	}
	rxs.cpu_ns = cpu_ns() - c0;
	rxs.cpu_pkts = rxs.pkts;
	return 0;
}

static int mode_pps(void)
{
	uint64_t t0, end, dropped = 0, sent = 0, warm;
	struct rte_mbuf *m[BURST], *r[BURST];
	uint64_t rx0 = 0, t_rx0 = 0;

	if (ring_pair())
		return 1;
	warm = (uint64_t)(0.1 * (double)hz);
	if (o.cores == 2) {
		unsigned int w = rte_get_next_lcore(-1, 1, 0);

		if (w >= RTE_MAX_LCORE) {
			fprintf(stderr, "--cores 2 needs a worker lcore (-l 0-1)\n");
			return 1;
		}
		uint64_t c0, ctx;

		rte_eal_remote_launch(rx_worker, &port_b, w);
		t0 = rte_rdtsc();
		c0 = cpu_ns();
		end = t0 + warm + (uint64_t)(o.secs * (double)hz);
		tx_loop(port_a, t0 + warm, &dropped);
		rx0 = rxs.pkts;
		t_rx0 = rte_rdtsc();
		sent = tx_loop(port_a, end, &dropped);
		ctx = cpu_ns() - c0;
		stop = true;
		rte_eal_wait_lcore(w);
		printf("CEILING mode=pps link=ring cores=2 frame=%u pps=%.1f sent=%" PRIu64
		       " rx=%" PRIu64 " tx_full_polls=%" PRIu64 " secs=%.3f"
		       " tx_cyc_per_pkt=%.1f rx_cyc_per_pkt=%.1f\n",
		       o.frame, (double)(rxs.pkts - rx0) * (double)hz /
		       (double)(rxs.t_last - t_rx0), sent, rxs.pkts - rx0, dropped,
		       (double)(rxs.t_last - t_rx0) / (double)hz,
		       (double)ctx * (double)hz / 1e9 / (double)(sent ? sent : 1),
		       (double)rxs.cpu_ns * (double)hz / 1e9 /
		       (double)(rxs.cpu_pkts ? rxs.cpu_pkts : 1));
		return 0;
	}
	/* one core: tx on A, rx on B, as droce's single engine does */
	uint64_t c0 = 0, c1;

	t0 = rte_rdtsc();
	end = t0 + warm + (uint64_t)(o.secs * (double)hz);
	for (uint64_t now = t0; now < end; now = rte_rdtsc()) {
		int n = alloc_frames(m, BURST);
		uint16_t k = n ? rte_eth_tx_burst(port_a, 0, m, (uint16_t)n) : 0;

		if (k < n) {
			rte_pktmbuf_free_bulk(m + k, (unsigned int)(n - k));
			dropped += (uint64_t)(n - k);
		}
		if (now >= t0 + warm)
			sent += k;
		for (int d = 0; d < 2; d++) {	/* drain what is there */
			uint16_t g = rte_eth_rx_burst(port_b, 0, r, BURST);

			if (g == 0)
				break;
			if (now >= t0 + warm) {
				if (t_rx0 == 0) {
					t_rx0 = now;
					c0 = cpu_ns();
				}
				rx0 += g;
			}
			rte_pktmbuf_free_bulk(r, g);
		}
	}
	c1 = cpu_ns();
	printf("CEILING mode=pps link=ring cores=1 frame=%u pps=%.1f sent=%" PRIu64
	       " rx=%" PRIu64 " tx_refused=%" PRIu64 " secs=%.3f cyc_per_pkt=%.1f"
	       " pps_per_cpu=%.1f\n",
	       o.frame, (double)rx0 * (double)hz / (double)(end - t_rx0), sent,
	       rx0, dropped, (double)(end - t_rx0) / (double)hz,
	       (double)(c1 - c0) * (double)hz / 1e9 / (double)(rx0 ? rx0 : 1),
	       (double)rx0 / ((double)(c1 - c0) / 1e9));
	return 0;
}

/* How long a two-process sender stays alive, not bursting, after its last
 * burst; the receiver leaves half-way through it (see the top). */
#define QUIET_S 0.4

static void quiet_until(uint64_t tsc)
{
	uint64_t now = rte_rdtsc();

	if (tsc > now)
		rte_delay_us_sleep((unsigned int)((tsc - now) * 1000000 / hz));
}

static int mode_tx(void)
{
	uint64_t dropped = 0, sent, t0;

	if (one_port(NULL))
		return 1;
	rte_delay_ms(200);	/* let the receiver see the link too */
	uint64_t c0 = cpu_ns();

	t0 = rte_rdtsc();
	sent = tx_loop(port_a, t0 + (uint64_t)(o.secs * (double)hz), &dropped);
	quiet_until(rte_rdtsc() + (uint64_t)(QUIET_S * (double)hz));
	printf("CEILING mode=tx frame=%u sent=%" PRIu64 " sent_pps=%.1f tx_full_polls=%" PRIu64
	       " cyc_per_pkt=%.1f\n", o.frame, sent, (double)sent / o.secs, dropped,
	       (double)(cpu_ns() - c0) * (double)hz / 1e9 / (double)(sent ? sent : 1));
	return 0;
}

/*
 * rx: wait for traffic, then count for the middle 80% of o.secs (the
 * sender's window), so start-up and the sender's stop don't count.
 */
static int mode_rx(void)
{
	struct rte_mbuf *m[BURST];
	uint64_t first = 0, w0, w1, n_w = 0, total = 0, t_w0 = 0, t_w1 = 0;
	double deadline = now_s() + 30 + o.secs;

	if (one_port("rx"))
		return 1;
	while (first == 0 && now_s() < deadline) {
		uint16_t n = rte_eth_rx_burst(port_b, 0, m, BURST);

		if (n) {
			first = rte_rdtsc();
			total += n;
			rte_pktmbuf_free_bulk(m, n);
		}
	}
	if (first == 0) {
		fprintf(stderr, "rx: nothing arrived\n");
		return 1;
	}
	w0 = first + (uint64_t)(0.1 * o.secs * (double)hz);
	w1 = first + (uint64_t)(0.9 * o.secs * (double)hz);
	uint64_t c_w0 = 0, c_w1 = 0;

	for (uint64_t now = rte_rdtsc(); now < w1; now = rte_rdtsc()) {
		uint16_t n = rte_eth_rx_burst(port_b, 0, m, BURST);

		if (n == 0)
			continue;
		total += n;
		if (now >= w0) {
			if (t_w0 == 0) {
				t_w0 = now;
				c_w0 = cpu_ns();
			}
			n_w += n;
			t_w1 = now;
		}
		rte_pktmbuf_free_bulk(m, n);
	}
	c_w1 = cpu_ns();
	/* No more bursts: leave while the sender waits after its last one
	 * (it sends until first + o.secs, then waits QUIET_S). */
	quiet_until(first + (uint64_t)((o.secs + QUIET_S / 2) * (double)hz));
	printf("CEILING mode=rx frame=%u pps=%.1f rx=%" PRIu64 " total=%" PRIu64 " secs=%.3f"
	       " cyc_per_pkt=%.1f cpu_share=%.3f\n",
	       o.frame, t_w1 > t_w0 ? (double)n_w * (double)hz / (double)(t_w1 - t_w0) : 0,
	       n_w, total, (double)(t_w1 - t_w0) / (double)hz,
	       (double)(c_w1 - c_w0) * (double)hz / 1e9 / (double)(n_w ? n_w : 1),
	       t_w1 > t_w0 ? (double)(c_w1 - c_w0) / 1e9 /
	       ((double)(t_w1 - t_w0) / (double)hz) : 0);
	return 0;
}

/* ------------------------------------------------------------ RTT */

static int reflector(void *arg)
{
	uint16_t port = *(uint16_t *)arg;
	struct rte_mbuf *m[BURST];

	while (!stop) {
		uint16_t n = rte_eth_rx_burst(port, 0, m, BURST);
		uint16_t k = 0;

		while (k < n && !stop)
			k += rte_eth_tx_burst(port, 0, m + k, (uint16_t)(n - k));
		if (k < n)
			rte_pktmbuf_free_bulk(m + k, (unsigned int)(n - k));
	}
	return 0;
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static void rtt_report(const char *mode, const char *link, int cores,
		       uint64_t *s, uint64_t n)
{
	double us = 1e6 / (double)hz, sum = 0;

	qsort(s, n, sizeof(*s), cmp_u64);
	for (uint64_t i = 0; i < n; i++)
		sum += (double)s[i];
	printf("CEILING mode=%s link=%s cores=%d frame=%u ack=%u iters=%" PRIu64
	       " rtt_min=%.3f rtt_median=%.3f rtt_avg=%.3f rtt_p99=%.3f rtt_p999=%.3f rtt_max=%.3f\n",
	       mode, link, cores, o.frame, o.ack, n, (double)s[0] * us,
	       (double)s[n / 2] * us, sum / (double)n * us,
	       (double)s[(uint64_t)((double)(n - 1) * 0.99)] * us,
	       (double)s[(uint64_t)((double)(n - 1) * 0.999)] * us,
	       (double)s[n - 1] * us);
}

/*
 * The port's two calls, stamped as droce's engine stamps them (a build
 * with -Dstamps=true, DROCE_STAMPS set; lib/rdma/droce_stamp.h): a
 * ping-pong's hop then reads apart as droce's does, in the same minutes
 * (devtools/stamps.py). Frames are not RoCE here: their words are ~0.
 */
static inline uint16_t tx_stamped(uint16_t port, struct rte_mbuf **m,
				  uint16_t n)
{
	uint16_t k;

	droce_stamp(DROCE_STAMP_TX_CALL, ~0u, ~0u, n);
	k = rte_eth_tx_burst(port, 0, m, n);
	droce_stamp(DROCE_STAMP_TX, ~0u, ~0u, k);
	return k;
}

static inline uint16_t rx_stamped(uint16_t port, struct rte_mbuf **m,
				  uint16_t n)
{
	uint64_t call = droce_stamp_clock();
	uint16_t k = rte_eth_rx_burst(port, 0, m, n);

	if (k)
		droce_stamp_rx(call, ~0u, ~0u, k);
	return k;
}

/* All `want` frames out on `port`, in as many bursts as it takes */
static void send_all(uint16_t port, struct rte_mbuf **m, uint16_t want)
{
	uint16_t k = 0;

	while (k < want)
		k += tx_stamped(port, m + k, (uint16_t)(want - k));
}

/* `want` frames in on `port` (into m), or false after t_end */
static bool recv_all(uint16_t port, struct rte_mbuf **m, uint16_t want,
		     uint64_t t_end)
{
	uint16_t k = 0;

	while (k < want) {
		k += rx_stamped(port, m + k, (uint16_t)(want - k));
		if (k < want && rte_rdtsc() > t_end) {
			rte_pktmbuf_free_bulk(m, k);
			return false;
		}
	}
	return true;
}

/* One frame (with --ack, an ACK-sized one and then it, in one burst) out
 * on `out`, back in on `in` (reflected by someone). */
static int ping_loop(uint16_t out, uint16_t in, bool self_reflect,
		     uint64_t *samples, uint64_t n)
{
	uint64_t warm = n / 10 + 10;
	const uint16_t per = o.ack ? 2 : 1;

	for (uint64_t i = 0; i < n + warm; i++) {
		struct rte_mbuf *m[2], *r[2];
		uint64_t t0, t_end;

		if (alloc_frames(m + per - 1, 1) != 1)
			return -1;
		if (o.ack && alloc_sized(m, 1, o.ack) != 1) {
			rte_pktmbuf_free(m[1]);
			return -1;
		}
		t0 = rte_rdtsc();
		t_end = t0 + hz * 2;
		send_all(out, m, per);
		if (self_reflect) {
			/* the same thread plays the far end */
			uint16_t far = in == port_a ? port_b : port_a;

			if (!recv_all(far, r, per, t_end))
				goto lost;
			send_all(far, r, per);
		}
		if (!recv_all(in, r, per, t_end))
			goto lost;
		if (i >= warm)
			samples[i - warm] = rte_rdtsc() - t0;
		rte_pktmbuf_free_bulk(r, per);
		continue;
lost:
		fprintf(stderr, "ping: frame %" PRIu64 " not back in 2 s\n", i);
		return -1;
	}
	return 0;
}

static int mode_rtt(void)
{
	uint64_t *s = calloc(o.iters, sizeof(*s));
	int ret = 1;

	if (s == NULL)
		fprintf(stderr, "no memory for %" PRIu64 " samples\n", o.iters);
	if (s == NULL || ring_pair())
		goto out;
	if (o.cores == 2) {
		unsigned int w = rte_get_next_lcore(-1, 1, 0);

		if (w >= RTE_MAX_LCORE) {
			fprintf(stderr, "--cores 2 needs a worker lcore (-l 0-1)\n");
			goto out;
		}
		rte_eal_remote_launch(reflector, &port_b, w);
		ret = ping_loop(port_a, port_a, false, s, o.iters) ? 1 : 0;
		stop = true;
		rte_eal_wait_lcore(w);
	} else {
		ret = ping_loop(port_a, port_a, true, s, o.iters) ? 1 : 0;
	}
	if (ret == 0)
		rtt_report("rtt", "ring", o.cores, s, o.iters);
out:
	free(s);
	return ret;
}

static int mode_ping(void)
{
	uint64_t *s = calloc(o.iters, sizeof(*s));
	int ret = 1;

	if (s == NULL)
		fprintf(stderr, "no memory for %" PRIu64 " samples\n", o.iters);
	else if (one_port(NULL) == 0) {
		rte_delay_ms(100);	/* let the pong side settle */
		ret = ping_loop(port_a, port_a, false, s, o.iters) ? 1 : 0;
		if (ret == 0)
			rtt_report("ping", "port", 2, s, o.iters);
	}
	free(s);
	return ret;
}

/* Echo until o.secs have passed, or traffic stopped for a second. */
static int mode_pong(void)
{
	uint64_t end, last = 0;
	struct rte_mbuf *m[BURST];

	/* ping_loop's frames: the iterations and the warm-up */
	uint64_t want = o.iters_set ?
			(o.iters + o.iters / 10 + 10) * (o.ack ? 2 : 1) : UINT64_MAX;
	uint64_t echoed = 0;

	if (one_port("pong"))
		return 1;
	end = rte_rdtsc() + (uint64_t)(o.secs * (double)hz);
	for (uint64_t now = rte_rdtsc(); now < end && echoed < want;
	     now = rte_rdtsc()) {
		uint16_t n = rx_stamped(port_a, m, BURST), k = 0;

		if (n == 0) {
			if (last && now - last > hz)
				break;
			continue;
		}
		last = now;
		while (k < n)
			k += tx_stamped(port_a, m + k, (uint16_t)(n - k));
		echoed += n;
	}
	printf("CEILING mode=pong echoed=%" PRIu64 "\n", echoed);
	fflush(stdout);
	/* ping has its last echo and is leaving: no burst when it does */
	quiet_until(rte_rdtsc() + (uint64_t)(QUIET_S * (double)hz));
	return 0;
}

/* ------------------------------------------------------- one core */

static int mode_memcpy(void)
{
	size_t sz = (size_t)o.size;
	/* (aligned_alloc takes whole multiples of the alignment) */
	size_t room = RTE_ALIGN_CEIL(sz + 4096, 4096);
	uint8_t *a = aligned_alloc(4096, room), *b = aligned_alloc(4096, room);
	uint64_t n = 0, t0, end;

	if (!a || !b) {
		fprintf(stderr, "no memory for two buffers of %zu bytes\n", sz);
		free(a);
		free(b);
		return 1;
	}
	memset(a, 1, sz);
	memset(b, 2, sz);
	uint64_t c0 = cpu_ns();

	t0 = rte_rdtsc();
	end = t0 + (uint64_t)(o.secs * (double)hz);
	while (rte_rdtsc() < end) {
		for (int i = 0; i < 16; i++) {
			memcpy(b, a, sz);
			__asm__ volatile("" : : "r"(b) : "memory");
		}
		n += 16;
	}
	end = rte_rdtsc();
	printf("CEILING mode=memcpy size=%zu copies=%" PRIu64 " Bps=%.1f cpu_Bps=%.1f\n", sz, n,
	       (double)n * (double)sz * (double)hz / (double)(end - t0),
	       (double)n * (double)sz / ((double)(cpu_ns() - c0) / 1e9));
	free(a);
	free(b);
	return 0;
}

static int mode_crc(void)
{
	size_t sz = (size_t)o.size;
	uint8_t *a = aligned_alloc(4096, RTE_ALIGN_CEIL(sz + 4096, 4096));
	uint64_t n = 0, t0, end;
	uint32_t c = 0;

	if (!a) {
		fprintf(stderr, "no memory for a buffer of %zu bytes\n", sz);
		return 1;
	}
	memset(a, 3, sz);
	uint64_t c0 = cpu_ns();

	t0 = rte_rdtsc();
	end = t0 + (uint64_t)(o.secs * (double)hz);
	while (rte_rdtsc() < end) {
		for (int i = 0; i < 16; i++)
			c = roce_crc32(c, a, sz);
		n += 16;
	}
	end = rte_rdtsc();
	printf("CEILING mode=crc impl=%s size=%zu crcs=%" PRIu64 " Bps=%.1f cpu_Bps=%.1f (crc %08x)\n",
	       roce_crc32_impl(), sz, n,
	       (double)n * (double)sz * (double)hz / (double)(end - t0),
	       (double)n * (double)sz / ((double)(cpu_ns() - c0) / 1e9), c);
	free(a);
	return 0;
}

/*
 * clmul: a CRC by folding (droce's, ISA-L's) multiplies each 64 bits of
 * data once by a constant, carry-less, and does little else; the rate of
 * independent multiplies is the most it can fold. Measured at the width
 * roce_crc32_copy_bits() says droce folds with (a 128-bit lane a 64-bit
 * product, so a multiply covers bits/16 bytes), twelve chains so that no
 * latency hides the rate.
 */
#if defined(__x86_64__)
#define CLMUL_CHAINS(T, zero, mul, xor, seed)				\
	T a0 = seed(1), a1 = seed(2), a2 = seed(3), a3 = seed(4);	\
	T a4 = seed(5), a5 = seed(6), a6 = seed(7), a7 = seed(8);	\
	T a8 = seed(9), a9 = seed(10), a10 = seed(11), a11 = seed(12);	\
	T k = seed(0x1db71064);						\
	for (uint64_t i = 0; i < n; i++) {				\
		a0 = mul(a0, k); a1 = mul(a1, k); a2 = mul(a2, k);	\
		a3 = mul(a3, k); a4 = mul(a4, k); a5 = mul(a5, k);	\
		a6 = mul(a6, k); a7 = mul(a7, k); a8 = mul(a8, k);	\
		a9 = mul(a9, k); a10 = mul(a10, k); a11 = mul(a11, k);	\
	}								\
	a0 = xor(xor(xor(a0, a1), xor(a2, a3)), xor(xor(a4, a5), xor(a6, a7))); \
	a0 = xor(a0, xor(xor(a8, a9), xor(a10, a11)));			\
	(void)zero;							\
	memcpy(out, &a0, sizeof(*out));					\
	__asm__ volatile("" : : "r"(out) : "memory")

#define SEED128(v) _mm_set1_epi64x(v)
#define MUL128(a, k) _mm_clmulepi64_si128(a, k, 0x00)
__attribute__((target("pclmul,sse4.1"), noinline)) static void
clmul_run128(uint64_t n, uint64_t *out)
{
	CLMUL_CHAINS(__m128i, 0, MUL128, _mm_xor_si128, SEED128);
}

#define SEED256(v) _mm256_set1_epi64x(v)
#define MUL256(a, k) _mm256_clmulepi64_epi128(a, k, 0x00)
__attribute__((target("avx2,vpclmulqdq"), noinline)) static void
clmul_run256(uint64_t n, uint64_t *out)
{
	CLMUL_CHAINS(__m256i, 0, MUL256, _mm256_xor_si256, SEED256);
}

#define SEED512(v) _mm512_set1_epi64(v)
#define MUL512(a, k) _mm512_clmulepi64_epi128(a, k, 0x00)
__attribute__((target("avx512f,vpclmulqdq"), noinline)) static void
clmul_run512(uint64_t n, uint64_t *out)
{
	CLMUL_CHAINS(__m512i, 0, MUL512, _mm512_xor_si512, SEED512);
}

static int mode_clmul(void)
{
	unsigned int bits = roce_crc32_copy_bits();
	void (*run)(uint64_t, uint64_t *) = bits == 512 ? clmul_run512 :
					    bits == 256 ? clmul_run256 :
							  clmul_run128;
	uint64_t out[8], n = 0, t0, end, step = 1 << 16;

	run(step, out);	/* warm: the wide units power up on first use */
	t0 = rte_rdtsc();
	end = t0 + (uint64_t)(o.secs * (double)hz);
	do {
		run(step, out);
		n += step;
	} while (rte_rdtsc() < end);
	end = rte_rdtsc();
	{
		double per_tsc = (double)n * 12 / (double)(end - t0);

		printf("CEILING mode=clmul bits=%u mults_per_tsc=%.3f fold_Bps=%.1f\n",
		       bits, per_tsc, per_tsc * (bits / 16) * (double)hz);
	}
	return 0;
}
#else
static int mode_clmul(void)
{
	printf("CEILING mode=clmul unsupported=1\n");
	return 0;
}
#endif

/*
 * stalls: what the host takes from a core that spins. A loop reads the
 * TSC for -D seconds; every step longer than STALL_US is time this vCPU
 * did not run (the guest's own scheduler aside: run it on an EAL core).
 * In a nested VM that is ~1 000-5 000 times a second, 10-50 us each: a
 * stall of the receiving end is covered by a raw pair's ring (1 024
 * frames here) but not by perftest's window (28 posts after the
 * signalled one at -t 128, a few us), so bench.sh prints it beside the
 * two-process rows (doc/performance.md, thirty-first round).
 */
#define STALL_US 5

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int mode_stalls(void)
{
	enum { MAX_STALLS = 1 << 16 };
	uint32_t *len = malloc(MAX_STALLS * sizeof(*len));
	uint64_t min_gap = hz / 1000000 * STALL_US, lost = 0, n = 0;
	uint64_t t0, end, last, now;

	if (len == NULL)
		return 1;
	printf("CEILING mode=stalls ready\n");	/* (a test stops us then) */
	fflush(stdout);
	t0 = last = rte_rdtsc();
	end = t0 + (uint64_t)(o.secs * (double)hz);
	while ((now = rte_rdtsc()) < end) {
		uint64_t g = now - last;

		last = now;
		if (g < min_gap)
			continue;
		lost += g;
		if (n < MAX_STALLS)
			len[n] = (uint32_t)RTE_MIN(g * 1000000 / hz, (uint64_t)UINT32_MAX);
		n++;
	}
	qsort(len, RTE_MIN(n, (uint64_t)MAX_STALLS), sizeof(*len), cmp_u32);
	printf("CEILING mode=stalls lcore=%u secs=%.3f min_us=%d stalls=%" PRIu64
	       " per_s=%.0f lost=%.4f median_us=%u max_us=%u\n", rte_lcore_id(),
	       (double)(now - t0) / (double)hz, STALL_US, n,
	       (double)n * (double)hz / (double)(now - t0),
	       (double)lost / (double)(now - t0),
	       n ? len[RTE_MIN(n, (uint64_t)MAX_STALLS) / 2] : 0,
	       n ? len[RTE_MIN(n, (uint64_t)MAX_STALLS) - 1] : 0);
	free(len);
	return 0;
}

/* Ports closed before the EAL's own clean-up: a memif port left open was
 * torn down there while the EAL's interrupt thread still watched its
 * socket (a SIGSEGV in rte_intr_fd_get at exit, seen under valgrind).
 * Promiscuous mode off first: over net_af_packet and net_af_xdp it is the
 * kernel interface's flag, and would outlive the process. */
static void close_ports(void)
{
	uint16_t p;

	RTE_ETH_FOREACH_DEV(p) {
		if (rte_eth_promiscuous_get(p) == 1)
			(void)rte_eth_promiscuous_disable(p);
		(void)rte_eth_dev_stop(p);
		(void)rte_eth_dev_close(p);
	}
}

/* ------------------------------------------------------- options */

#define MAX_ITERS	(UINT64_C(1) << 27)	/* rtt, ping: 1 GiB of samples */
#define MAX_SIZE	(UINT64_C(1) << 30)	/* memcpy, crc: two 1 GiB buffers */

/* A whole number in [lo, hi], all of s. */
static int parse_u64(const char *s, uint64_t lo, uint64_t hi, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (strchr(s, '-'))	/* (strtoull takes " -1" as 2^64 - 1) */
		return -1;
	errno = 0;
	v = strtoull(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/* Seconds: finite (strtod takes "inf" and "nan", and either as TSC
 * cycles is undefined: a NaN window never ended) and in range. */
static int parse_secs(const char *s, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < 0.001 ||
	    v > INT_MAX)
		return -1;
	*out = v;
	return 0;
}

/* An option's name and what it takes, for the message that refuses it. */
static void opt_refused(int c, const char *arg)
{
	static const struct {
		int c;
		const char *name, *range;
	} doc[] = {
		{ 'f', "-f", "60 to 9000 bytes" },
		{ 'D', "-D", "0.001 to 2147483647 seconds" },
		{ 'n', "-n", "10 to 134217728" },
		{ 's', "-s", "1 to 1073741824 bytes" },
		{ 'c', "--cores", "1 or 2" },
		{ 'a', "--ack", "0, or 60 to 9000 bytes" },
		{ 'r', "--room", "0 to 65407 bytes" },
	};

	for (size_t i = 0; i < RTE_DIM(doc); i++)
		if (doc[i].c == c)
			fprintf(stderr, "bad %s %s (%s)\n", doc[i].name, arg,
				doc[i].range);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cores", 1, NULL, 'c' }, { "port", 1, NULL, 'P' },
		{ "ack", 1, NULL, 'a' }, { "room", 1, NULL, 'r' },
		{ NULL, 0, NULL, 0 }
	};
	int ret, c;

	ret = rte_eal_init(argc, argv);
	if (ret < 0) {
		fprintf(stderr, "EAL init: %s\n", rte_strerror(rte_errno));
		return 1;
	}
	argc -= ret;
	argv += ret;
	hz = rte_get_tsc_hz();
	if (argc < 2) {
		fprintf(stderr, "usage: droce-ceiling [EAL args] -- pps|rtt|tx|rx|ping|pong|memcpy|crc|clmul|stalls [-f frame] [-D sec] [-n iters] [-s size] [--cores 1|2] [--port name] [--ack bytes] [--room bytes]\n");
		return 2;
	}
	o.mode = argv[1];
	argv[1] = argv[0];
	argv++;
	argc--;
	optind = 1;
	while ((c = getopt_long(argc, argv, "f:D:n:s:", lo, NULL)) != -1) {
		uint64_t v = 0;
		bool ok;

		switch (c) {
		case 'f':
			ok = !parse_u64(optarg, 60, 9000, &v);
			o.frame = (uint32_t)v;
			break;
		case 'D': ok = !parse_secs(optarg, &o.secs); break;
		case 'n':
			ok = !parse_u64(optarg, 10, MAX_ITERS, &o.iters);
			o.iters_set = true;
			break;
		case 's': ok = !parse_u64(optarg, 1, MAX_SIZE, &o.size); break;
		case 'c':
			ok = !parse_u64(optarg, 1, 2, &v);
			o.cores = (int)v;
			break;
		case 'P': ok = true; o.port = optarg; break;
		case 'a':
			/* 0: none; else a frame, no bigger than -f's (checked
			 * below, -f may come later) */
			ok = !parse_u64(optarg, 0, 9000, &v) && (v == 0 || v >= 60);
			o.ack = (uint32_t)v;
			break;
		case 'r':
			ok = !parse_u64(optarg, 0, UINT16_MAX - RTE_PKTMBUF_HEADROOM, &v);
			o.room = (uint32_t)v;
			break;
		default: return 2;
		}
		if (!ok) {
			opt_refused(c, optarg);
			return 2;
		}
	}
	if (optind < argc) {
		fprintf(stderr, "unexpected argument %s\n", argv[optind]);
		return 2;
	}
	if (o.ack > o.frame) {
		fprintf(stderr, "bad --ack %u (no bigger than the frame, %u bytes)\n",
			o.ack, o.frame);
		return 2;
	}
	make_hdr();
	if (strcmp(o.mode, "memcpy") == 0)
		ret = mode_memcpy();
	else if (strcmp(o.mode, "crc") == 0)
		ret = mode_crc();
	else if (strcmp(o.mode, "clmul") == 0)
		ret = mode_clmul();
	else if (strcmp(o.mode, "stalls") == 0)
		ret = mode_stalls();
	else if (make_pool())
		ret = 1;
	else if (strcmp(o.mode, "pps") == 0)
		ret = mode_pps();
	else if (strcmp(o.mode, "rtt") == 0)
		ret = mode_rtt();
	else if (strcmp(o.mode, "tx") == 0)
		ret = mode_tx();
	else if (strcmp(o.mode, "rx") == 0)
		ret = mode_rx();
	else if (strcmp(o.mode, "ping") == 0)
		ret = mode_ping();
	else if (strcmp(o.mode, "pong") == 0)
		ret = mode_pong();
	else {
		fprintf(stderr, "unknown mode %s\n", o.mode);
		ret = 2;
	}
	fflush(stdout);
	close_ports();
	rte_eal_cleanup();
	return ret;
}
