/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_impair: the link impairer (lib/impair) on a real EAL and a net_ring
 * pair. Port p0 transmits into port p1 (ring r01); the impairer sits on
 * p0's Tx ("tx" direction) or on p1's Rx ("rx" direction). Synthetic
 * RoCEv2 frames (UDP/4791, sequence number stored three times so that a
 * flipped bit cannot hide which frame it was) and ARP frames go through,
 * and everything that arrives is compared with the frame that was sent.
 *
 * Exit 0 = pass, 77 = skipped (with the reason), anything else = fail.
 * Environment: DROCE_TEST_SEED=<n> replays a run (the seed is printed);
 * DROCE_EAL_EXTRA_ARGS (space separated) or DROCE_NO_HUGE=1 for the EAL.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <limits.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_eth_ring.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "droce_impair.h"

#define NB_MBUF		32767
#define RING_SIZE	8192
#define BURST		32
#define N_RATE		100000
#define FRAME_MAX	192
#define SIGMAS		5.0

enum { K_ROCE, K_ARP, K_FILLER, K_BAD };

static struct rte_mempool *g_pool;
static uint16_t g_p0, g_p1;	/* p0 transmits into p1 */
static int g_fail;
static uint64_t g_seed_state;
static uint64_t g_hz;
/* RoCE frames carry mixed BTH opcodes (op_of()) instead of RC SEND only */
static bool g_op_mix;

#define CHECK(cond, ...) do {						\
	if (!(cond)) {							\
		printf("FAIL %s:%d: %s: ", __func__, __LINE__, #cond);	\
		printf(__VA_ARGS__);					\
		printf("\n");						\
		g_fail++;						\
	}								\
} while (0)

static uint64_t next_seed(void)
{
	uint64_t z = (g_seed_state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return (z ^ (z >> 31)) & 0xffffffffffffULL;
}

/* ------------------------------------------------------------------ */
/* Frames                                                               */

static const uint8_t mac0[6] = { 0x02, 0, 0, 0, 0, 0x01 };
static const uint8_t mac1[6] = { 0x02, 0, 0, 0, 0, 0x02 };

static uint32_t frame_len(uint32_t seq, int kind)
{
	return kind == K_ARP ? 60 : 70 + (seq % 7) * 16;
}

static void put32le(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

static uint32_t get32le(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 |
	       (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* where the three copies of the sequence number live */
static uint32_t seq_off(int kind)
{
	return kind == K_ARP ? 44 : 54;
}

/*
 * The BTH opcode of RoCE frame seq: RC SEND only, or with g_op_mix one of
 * requests and non-requests of every transport (match=requests' two sides).
 */
static const uint8_t op_mix[] = {
	0x04,	/* RC SEND only */
	0x11,	/* RC Acknowledge */
	0x0a,	/* RC RDMA WRITE only */
	0x10,	/* RC RDMA READ response only */
	0x0c,	/* RC RDMA READ request */
	0x12,	/* RC Atomic Acknowledge */
	0x13,	/* RC CmpSwap */
	0x0d,	/* RC RDMA READ response first */
	0x24,	/* UC SEND only */
	0x81,	/* CNP */
	0x64,	/* UD SEND only */
	0xb1,	/* XRC Acknowledge */
	0xa4,	/* XRC SEND only */
	0x17,	/* RC SEND only with invalidate */
};

static uint8_t op_of(uint32_t seq)
{
	return g_op_mix ? op_mix[seq % sizeof(op_mix)] : 0x04;
}

/* the test's own answer to "is it a request", from the tables above */
static bool op_is_request(uint8_t op)
{
	switch (op) {
	case 0x11: case 0x10: case 0x12: case 0x0d: case 0x81: case 0xb1:
		return false;
	default:
		return true;
	}
}

static void frame_build(uint8_t *b, uint32_t seq, int kind)
{
	uint32_t len = frame_len(seq, kind), o = seq_off(kind);

	memset(b, 0, len);
	memcpy(b, mac1, 6);
	memcpy(b + 6, mac0, 6);
	if (kind == K_ARP) {
		static const uint8_t arp[] = {
			0x08, 0x06, 0x00, 0x01, 0x08, 0x00, 6, 4, 0x00, 0x01,
			0x02, 0, 0, 0, 0, 0x01, 198, 18, 0, 1,
			0, 0, 0, 0, 0, 0, 198, 18, 0, 2,
		};
		memcpy(b + 12, arp, sizeof(arp));
	} else {
		uint8_t *ip = b + 14, *udp = b + 34, *bth = b + 42;
		uint32_t sum = 0;

		b[12] = 0x08;
		b[13] = 0x00;
		ip[0] = 0x45;
		ip[2] = (uint8_t)((len - 14) >> 8);
		ip[3] = (uint8_t)(len - 14);
		ip[4] = (uint8_t)(seq >> 8);
		ip[5] = (uint8_t)seq;
		ip[6] = 0x40;		/* DF */
		ip[8] = 64;
		ip[9] = 17;
		ip[12] = 198; ip[13] = 18; ip[14] = 0; ip[15] = 1;
		ip[16] = 198; ip[17] = 18; ip[18] = 0; ip[19] = 2;
		for (int i = 0; i < 20; i += 2)
			sum += (uint32_t)ip[i] << 8 | ip[i + 1];
		while (sum >> 16)
			sum = (sum & 0xffff) + (sum >> 16);
		ip[10] = (uint8_t)(~sum >> 8);
		ip[11] = (uint8_t)~sum;
		udp[0] = (uint8_t)(0xc0 | ((seq >> 8) & 0x3f));
		udp[1] = (uint8_t)seq;
		udp[2] = 4791 >> 8;
		udp[3] = 4791 & 0xff;
		udp[4] = (uint8_t)((len - 34) >> 8);
		udp[5] = (uint8_t)(len - 34);
		bth[0] = op_of(seq);
		bth[2] = 0xff;
		bth[3] = 0xff;
		bth[7] = 0x11;		/* dest QP 0x11 */
		bth[9] = (uint8_t)(seq >> 16);
		bth[10] = (uint8_t)(seq >> 8);
		bth[11] = (uint8_t)seq;
		for (uint32_t i = o + 12; i < len; i++)
			b[i] = (uint8_t)(seq * 31 + i * 7);
	}
	put32le(b + o, seq);
	put32le(b + o + 4, seq);
	put32le(b + o + 8, seq);
}

struct rec {
	uint32_t seq;
	uint8_t kind;
	uint8_t ham;		/* bits that differ from what was sent */
	uint16_t off;		/* first differing byte */
};

struct result {
	struct rec *rec;
	uint32_t nrec, cap;
	uint32_t n;		/* frames sent */
	uint8_t *count;		/* per sequence number, saturating */
	uint64_t *sent_tsc;	/* per sequence number, or NULL */
	uint64_t min_lat;	/* smallest arrival - send, intact RoCE frames */
	uint32_t roce, arp, fillers, bad, corrupted, bad_corrupt;
	uint32_t inversions, max_ahead;	/* RoCE frames behind a later one */
	int64_t max_roce, max_arp;
	bool arp_in_order;
	uint32_t tx_refused;
	bool drained;
};

static void result_init(struct result *r, uint32_t n, bool lat)
{
	memset(r, 0, sizeof(*r));
	r->n = n;
	r->cap = 2 * n + 1024;
	r->rec = calloc(r->cap, sizeof(*r->rec));
	r->count = calloc(n, 1);
	r->sent_tsc = lat ? calloc(n, sizeof(uint64_t)) : NULL;
	r->min_lat = UINT64_MAX;
	r->max_roce = -1;
	r->max_arp = -1;
	r->arp_in_order = true;
	if (r->rec == NULL || r->count == NULL || (lat && r->sent_tsc == NULL)) {
		printf("out of memory\n");
		exit(1);
	}
}

static void result_free(struct result *r)
{
	free(r->rec);
	free(r->count);
	free(r->sent_tsc);
}

static void frame_check(struct result *r, struct rte_mbuf *m, uint64_t now)
{
	uint8_t buf[FRAME_MAX], want[FRAME_MAX];
	const uint8_t *p;
	struct rec x = { 0, K_BAD, 0, 0 };
	uint32_t len = m->pkt_len;

	p = len <= FRAME_MAX ? rte_pktmbuf_read(m, 0, len, buf) : NULL;
	if (p == NULL || len < 60) {
		r->bad++;
		goto out;
	}
	if (p[12] == 0x88 && p[13] == 0xb5) {
		x.kind = K_FILLER;
		r->fillers++;
		if (len != 60 || memcmp(p + 14, "droce-impair filler", 19) != 0)
			r->bad++;
		goto out;
	}
	if (p[12] == 0x08 && p[13] == 0x00)
		x.kind = K_ROCE;
	else if (p[12] == 0x08 && p[13] == 0x06)
		x.kind = K_ARP;
	else {
		r->bad++;
		goto out;
	}
	{
		uint32_t o = seq_off(x.kind);
		uint32_t a = get32le(p + o), b = get32le(p + o + 4),
			 c = get32le(p + o + 8);

		x.seq = (a & b) | (a & c) | (b & c);	/* majority */
	}
	if (x.seq >= r->n || frame_len(x.seq, x.kind) != len) {
		x.kind = K_BAD;
		r->bad++;
		goto out;
	}
	frame_build(want, x.seq, x.kind);
	for (uint32_t i = 0; i < len; i++) {
		uint8_t d = p[i] ^ want[i];

		if (d != 0 && x.ham == 0)
			x.off = (uint16_t)i;
		x.ham = (uint8_t)(x.ham + __builtin_popcount(d));
	}
	if (r->count[x.seq] < 255)
		r->count[x.seq]++;
	if (x.ham != 0) {
		r->corrupted++;
		if (x.ham != 1 || x.off < 14)
			r->bad_corrupt++;
	}
	if (x.kind == K_ROCE) {
		r->roce++;
		if (r->max_roce > (int64_t)x.seq) {
			uint32_t ahead = (uint32_t)(r->max_roce - x.seq);

			r->inversions++;
			if (ahead > r->max_ahead)
				r->max_ahead = ahead;
		} else {
			r->max_roce = x.seq;
		}
		if (r->sent_tsc != NULL && x.ham == 0 &&
		    now - r->sent_tsc[x.seq] < r->min_lat)
			r->min_lat = now - r->sent_tsc[x.seq];
	} else {
		r->arp++;
		if (r->max_arp >= (int64_t)x.seq)
			r->arp_in_order = false;
		r->max_arp = x.seq;
	}
out:
	if (r->nrec < r->cap)
		r->rec[r->nrec++] = x;
	rte_pktmbuf_free(m);
}

static int rx_poll(struct result *r)
{
	struct rte_mbuf *pk[BURST];
	uint16_t k = rte_eth_rx_burst(g_p1, 0, pk, BURST);
	uint64_t now = rte_get_timer_cycles();

	for (uint16_t i = 0; i < k; i++)
		frame_check(r, pk[i], now);
	return k;
}

static uint64_t held_now(const struct droce_impair *imp)
{
	struct droce_impair_stats st;

	if (imp == NULL || droce_impair_stats(imp, &st) != 0)
		return 0;
	return st.rx.held + st.tx.held;
}

/* Poll (and flush) until the impairer holds nothing and the ring is dry. */
static void drain(struct droce_impair *imp, struct result *r, double secs)
{
	uint64_t end = rte_get_timer_cycles() + (uint64_t)(secs * (double)g_hz);
	int quiet = 0;

	while (rte_get_timer_cycles() < end) {
		if (imp != NULL)
			droce_impair_flush(imp);
		if (rx_poll(r) == 0) {
			if (held_now(imp) == 0 && ++quiet >= 3) {
				r->drained = true;
				return;
			}
		} else {
			quiet = 0;
		}
	}
}

/*
 * Send n frames p0 -> p1 (every arp_every-th an ARP frame), in bursts of
 * 1..32, receiving as we go, then drain.
 */
static void run_traffic(struct droce_impair *imp, struct result *r,
			uint32_t arp_every, double drain_secs)
{
	struct rte_mbuf *pk[BURST];
	uint32_t seq = 0, round = 0;

	while (seq < r->n) {
		uint16_t b = (uint16_t)RTE_MIN(1 + (round++ * 7) % BURST, r->n - seq);
		uint16_t sent;
		uint64_t now;

		if (rte_pktmbuf_alloc_bulk(g_pool, pk, b) != 0) {
			/* everything in flight is bounded; wait for it */
			rx_poll(r);
			if (imp != NULL)
				droce_impair_flush(imp);
			continue;
		}
		for (uint16_t i = 0; i < b; i++) {
			uint32_t s = seq + i;
			int kind = arp_every && s % arp_every == arp_every - 1 ?
				   K_ARP : K_ROCE;
			uint32_t len = frame_len(s, kind);

			frame_build((uint8_t *)rte_pktmbuf_append(pk[i], (uint16_t)len),
				    s, kind);
		}
		now = rte_get_timer_cycles();
		if (r->sent_tsc != NULL)
			for (uint16_t i = 0; i < b; i++)
				r->sent_tsc[seq + i] = now;
		sent = rte_eth_tx_burst(g_p0, 0, pk, b);
		if (sent < b) {
			r->tx_refused += (uint32_t)(b - sent);
			rte_pktmbuf_free_bulk(pk + sent, b - sent);
		}
		seq += b;
		while (rx_poll(r) > 0)
			;
	}
	drain(imp, r, drain_secs);
}

static bool binom_ok(uint64_t obs, uint64_t n, double p, double *z)
{
	double mu = (double)n * p, sd = sqrt((double)n * p * (1.0 - p));

	*z = sd > 0 ? ((double)obs - mu) / sd : 0;
	return fabs((double)obs - mu) <= SIGMAS * sd + 1.0;
}

static void check_pool_full(const char *what)
{
	struct result r;

	/* anything left in the ring (fillers, frames sent after detach) */
	result_init(&r, 1, false);
	drain(NULL, &r, 0.2);
	result_free(&r);
	CHECK(rte_mempool_avail_count(g_pool) == NB_MBUF,
	      "%s: %u of %u mbufs back in the pool", what,
	      rte_mempool_avail_count(g_pool), NB_MBUF);
}

static struct droce_impair *attach_dir(int tx, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static struct droce_impair *attach_dir(int tx, const char *fmt, ...)
{
	char kv[512];
	struct droce_impair *imp;
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(kv, sizeof(kv), fmt, ap);
	va_end(ap);
	imp = droce_impair_attach(tx ? g_p0 : g_p1, kv);
	if (imp == NULL) {
		if (rte_errno == ENOTSUP) {
			printf("SKIP: ethdev Rx/Tx callbacks not available\n");
			exit(77);
		}
		printf("FAIL: attach(%s) failed: %s\n", kv, rte_strerror(rte_errno));
		exit(1);
	}
	return imp;
}

static const char *dname(int tx)
{
	return tx ? "tx" : "rx";
}

static const struct droce_impair_dir_stats *dstats(const struct droce_impair_stats *st,
						   int tx)
{
	return tx ? &st->tx : &st->rx;
}

/* ------------------------------------------------------------------ */
/* Tests                                                                */

static void test_rates(int tx)
{
	static const double rates[] = { 0.001, 0.01, 0.05, 0.1 };
	static const char *const kinds[] = { "drop", "dup", "corrupt" };

	for (int k = 0; k < 3; k++) {
		for (unsigned int ri = 0; ri < RTE_DIM(rates); ri++) {
			uint64_t seed = next_seed();
			struct droce_impair *imp;
			struct droce_impair_stats st;
			const struct droce_impair_dir_stats *s;
			struct result r;
			uint32_t uniq = 0, twice = 0, more = 0;
			uint64_t obs, stat;
			double z;
			bool ok;

			imp = attach_dir(tx, "seed=%" PRIu64 ",%s_%s=%g", seed,
					 dname(tx), kinds[k], rates[ri]);
			result_init(&r, N_RATE, false);
			run_traffic(imp, &r, 0, 2.0);
			droce_impair_stats(imp, &st);
			s = dstats(&st, tx);
			for (uint32_t i = 0; i < r.n; i++) {
				uniq += r.count[i] != 0;
				twice += r.count[i] == 2;
				more += r.count[i] > 2;
			}
			if (k == 0) {
				obs = r.n - uniq;
				stat = s->dropped;
			} else if (k == 1) {
				obs = r.roce - r.n;
				stat = s->duplicated;
			} else {
				obs = r.corrupted;
				stat = s->corrupted;
			}
			ok = binom_ok(obs, r.n, rates[ri], &z);
			printf("  %s %-7s p=%-5g seed=%-15" PRIu64 " observed %6" PRIu64
			       " expected %8.1f z=%+.2f fillers %u\n",
			       dname(tx), kinds[k], rates[ri], seed, obs,
			       r.n * rates[ri], z, r.fillers);
			CHECK(r.drained, "%s %s: not drained", dname(tx), kinds[k]);
			CHECK(r.tx_refused == 0, "tx refused %u", r.tx_refused);
			CHECK(ok, "%s %s p=%g seed=%" PRIu64 ": %" PRIu64
			      " outside %.0f sigma (z=%.2f)", dname(tx), kinds[k],
			      rates[ri], seed, obs, SIGMAS, z);
			CHECK(obs == stat, "%s %s: observed %" PRIu64 " counted %" PRIu64,
			      dname(tx), kinds[k], obs, stat);
			CHECK(r.bad == 0 && r.bad_corrupt == 0, "%u bad frames, %u bad corruptions",
			      r.bad, r.bad_corrupt);
			CHECK(s->seen == r.n && s->matched == r.n,
			      "seen %" PRIu64 " matched %" PRIu64, s->seen, s->matched);
			if (k != 0)
				CHECK(uniq == r.n, "%u of %u arrived", uniq, r.n);
			if (k != 1)
				CHECK(twice == 0 && more == 0, "duplicates without dup=");
			else
				CHECK(more == 0, "%u frames arrived 3+ times", more);
			if (k != 2)
				CHECK(r.corrupted == 0, "corruption without corrupt=");
			CHECK(r.fillers == s->fillers, "fillers seen %u counted %" PRIu64,
			      r.fillers, s->fillers);
			if (!tx)
				CHECK(r.fillers == 0, "fillers on rx");
			else if (k == 0)
				/* every dropped frame leaves a slot to fill */
				CHECK(r.fillers == obs, "tx drop: %u fillers for %" PRIu64
				      " drops", r.fillers, obs);
			CHECK(s->held == 0, "still holding %" PRIu64, s->held);
			droce_impair_detach(imp);
			result_free(&r);
			check_pool_full("rates");
		}
	}
}

static void test_reorder(int tx)
{
	static const struct { double p; unsigned int depth; } cases[] = {
		{ 0.2, 3 }, { 0.5, 8 }, { 1.0, 2 },
	};

	for (unsigned int ci = 0; ci < RTE_DIM(cases); ci++) {
		uint64_t seed = next_seed();
		struct droce_impair *imp;
		struct droce_impair_stats st;
		const struct droce_impair_dir_stats *s;
		struct result r;
		uint32_t once = 0;
		double z;

		imp = attach_dir(tx, "seed=%" PRIu64 ",%s_reorder=%g,%s_reorder_depth=%u",
				 seed, dname(tx), cases[ci].p, dname(tx), cases[ci].depth);
		result_init(&r, N_RATE, false);
		run_traffic(imp, &r, 0, 2.0);
		droce_impair_stats(imp, &st);
		s = dstats(&st, tx);
		for (uint32_t i = 0; i < r.n; i++)
			once += r.count[i] == 1;
		printf("  %s reorder p=%g depth=%u seed=%" PRIu64 ": held back %" PRIu64
		       ", %u arrived behind a later frame, at most %u behind\n",
		       dname(tx), cases[ci].p, cases[ci].depth, seed, s->reordered,
		       r.inversions, r.max_ahead);
		CHECK(r.drained, "not drained");
		CHECK(once == r.n && r.roce == r.n, "%u of %u arrived exactly once (%u frames)",
		      once, r.n, r.roce);
		CHECK(r.inversions > 0, "nothing was reordered");
		CHECK(r.max_ahead <= cases[ci].depth, "a frame arrived %u behind (depth %u)",
		      r.max_ahead, cases[ci].depth);
		CHECK(binom_ok(s->reordered, r.n, cases[ci].p, &z), "reordered %" PRIu64
		      " z=%.2f", s->reordered, z);
		CHECK(s->released == s->reordered && s->held == 0,
		      "released %" PRIu64 " of %" PRIu64 ", %" PRIu64 " held",
		      s->released, s->reordered, s->held);
		CHECK(r.bad == 0 && r.corrupted == 0, "bad %u corrupted %u", r.bad, r.corrupted);
		CHECK(r.fillers == s->fillers, "fillers seen %u counted %" PRIu64,
		      r.fillers, s->fillers);
		droce_impair_detach(imp);
		result_free(&r);
		check_pool_full("reorder");
	}
}

static void test_delay(int tx)
{
	const uint32_t delay_us = 500, n = 20000;
	const uint64_t delay_tsc = delay_us * g_hz / 1000000;
	uint64_t seed = next_seed();
	struct droce_impair *imp;
	struct droce_impair_stats st;
	const struct droce_impair_dir_stats *s;
	struct result r;

	imp = attach_dir(tx, "seed=%" PRIu64 ",hold_max=16384,%s_delay_us=%u",
			 seed, dname(tx), delay_us);
	result_init(&r, n, true);
	run_traffic(imp, &r, 0, 2.0);
	droce_impair_stats(imp, &st);
	s = dstats(&st, tx);
	printf("  %s delay_us=%u: shortest transit %.1f us, %" PRIu64
	       " delayed, %u fillers\n", dname(tx), delay_us,
	       (double)r.min_lat * 1e6 / (double)g_hz, s->delayed, r.fillers);
	CHECK(r.drained, "not drained");
	CHECK(r.roce == n && r.inversions == 0, "%u of %u, %u out of order",
	      r.roce, n, r.inversions);
	CHECK(r.min_lat >= delay_tsc, "a frame took %.1f us < %u us",
	      (double)r.min_lat * 1e6 / (double)g_hz, delay_us);
	CHECK(s->delayed == n && s->released == n && s->held == 0,
	      "delayed %" PRIu64 " released %" PRIu64 " held %" PRIu64,
	      s->delayed, s->released, s->held);
	CHECK(r.fillers == s->fillers, "fillers seen %u counted %" PRIu64,
	      r.fillers, s->fillers);
	if (tx)
		CHECK(r.fillers > 0, "tx delay without fillers");
	CHECK(r.bad == 0, "bad %u", r.bad);
	droce_impair_detach(imp);
	result_free(&r);
	check_pool_full("delay");
}

static bool same_recs(const struct result *a, const struct result *b)
{
	return a->nrec == b->nrec &&
	       memcmp(a->rec, b->rec, a->nrec * sizeof(*a->rec)) == 0;
}

static void det_run(int tx, uint64_t seed, struct result *r)
{
	struct droce_impair *imp;

	imp = attach_dir(tx, "seed=%" PRIu64 ",drop=0.03,dup=0.03,corrupt=0.03,"
			 "reorder=0.05,reorder_max_us=200000", seed);
	result_init(r, 50000, false);
	run_traffic(imp, r, 0, 2.0);
	CHECK(r->drained, "not drained");
	droce_impair_detach(imp);
	check_pool_full("determinism");
}

static void test_determinism(int tx)
{
	uint64_t seed = next_seed();
	struct result a, b, c;

	det_run(tx, seed, &a);
	det_run(tx, seed, &b);
	det_run(tx, seed + 1, &c);
	printf("  %s seed=%" PRIu64 ": %u records twice %s; seed+1 %s\n",
	       dname(tx), seed, a.nrec, same_recs(&a, &b) ? "identical" : "DIFFERENT",
	       same_recs(&a, &c) ? "IDENTICAL" : "differs");
	CHECK(same_recs(&a, &b), "same seed, different outcome");
	CHECK(!same_recs(&a, &c), "different seed, same outcome");
	CHECK(a.bad == 0 && a.bad_corrupt == 0, "bad %u/%u", a.bad, a.bad_corrupt);
	result_free(&a);
	result_free(&b);
	result_free(&c);
}

static void test_match(int tx)
{
	const uint32_t n = 30000, every = 3;
	uint64_t seed = next_seed();
	struct droce_impair *imp;
	struct result r;
	uint32_t arp_ok = 0, arp_lost = 0;

	imp = attach_dir(tx, "seed=%" PRIu64 ",drop=0.3,dup=0.3,corrupt=0.3,"
			 "reorder=0.3,delay_us=20", seed);
	result_init(&r, n, false);
	run_traffic(imp, &r, every, 2.0);
	for (uint32_t i = every - 1; i < n; i += every)
		arp_ok += r.count[i] == 1;
	for (uint32_t i = 0; i < r.nrec; i++)
		if (r.rec[i].kind == K_ARP)
			CHECK(r.rec[i].ham == 0, "ARP %u altered", r.rec[i].seq);
	printf("  %s match=roce seed=%" PRIu64 ": %u/%u ARP frames intact, in order: %s\n",
	       dname(tx), seed, arp_ok, n / every, r.arp_in_order ? "yes" : "NO");
	CHECK(r.drained, "not drained");
	CHECK(arp_ok == n / every && r.arp == n / every, "ARP: %u once, %u received",
	      arp_ok, r.arp);
	CHECK(r.arp_in_order, "ARP frames reordered");
	CHECK(r.bad == 0 && r.bad_corrupt == 0, "bad %u/%u", r.bad, r.bad_corrupt);
	droce_impair_detach(imp);
	result_free(&r);
	check_pool_full("match=roce");

	/* match=all: ARP is fair game */
	imp = attach_dir(tx, "seed=%" PRIu64 ",match=all,drop=0.3", seed);
	result_init(&r, n, false);
	run_traffic(imp, &r, every, 2.0);
	for (uint32_t i = every - 1; i < n; i += every)
		arp_lost += r.count[i] == 0;
	printf("  %s match=all: %u/%u ARP frames dropped\n", dname(tx), arp_lost, n / every);
	CHECK(arp_lost > 0, "match=all left ARP alone");
	droce_impair_detach(imp);
	result_free(&r);
	check_pool_full("match=all");
}

/*
 * match=requests: with every impairment at 30 %, each response and CNP
 * arrives once, intact, and in the order they were sent, while requests of
 * every transport are dropped, copied and corrupted.
 */
static void test_match_requests(int tx)
{
	const uint32_t n = 28000;
	uint64_t seed = next_seed();
	struct droce_impair *imp;
	struct result r;
	uint32_t resp = 0, resp_ok = 0, req_lost = 0, req_dup = 0, req_bent = 0;
	int64_t last_resp = -1;
	bool resp_order = true;

	g_op_mix = true;
	imp = attach_dir(tx, "seed=%" PRIu64 ",%s_match=requests,drop=0.3,"
			 "dup=0.3,corrupt=0.3,reorder=0.3,delay_us=20", seed,
			 dname(tx));
	result_init(&r, n, false);
	run_traffic(imp, &r, 0, 2.0);
	for (uint32_t i = 0; i < n; i++) {
		if (op_is_request(op_of(i))) {
			req_lost += r.count[i] == 0;
			req_dup += r.count[i] > 1;
		} else {
			resp++;
			resp_ok += r.count[i] == 1;
		}
	}
	for (uint32_t i = 0; i < r.nrec; i++) {
		const struct rec *x = &r.rec[i];

		if (x->kind != K_ROCE)
			continue;
		if (op_is_request(op_of(x->seq))) {
			req_bent += x->ham != 0;
			continue;
		}
		CHECK(x->ham == 0, "response %u (opcode 0x%02x) altered",
		      x->seq, op_of(x->seq));
		if ((int64_t)x->seq < last_resp)
			resp_order = false;
		last_resp = x->seq;
	}
	printf("  %s match=requests seed=%" PRIu64 ": %u/%u responses and CNPs"
	       " once, in order: %s; requests %u lost, %u copied, %u corrupted\n",
	       dname(tx), seed, resp_ok, resp, resp_order ? "yes" : "NO",
	       req_lost, req_dup, req_bent);
	CHECK(r.drained, "not drained");
	CHECK(resp_ok == resp, "responses: %u of %u arrived once", resp_ok, resp);
	CHECK(resp_order, "responses reordered");
	CHECK(req_lost > 0 && req_dup > 0 && req_bent > 0,
	      "requests spared: %u lost, %u copied, %u corrupted",
	      req_lost, req_dup, req_bent);
	CHECK(r.bad == 0 && r.bad_corrupt == 0, "bad %u/%u", r.bad, r.bad_corrupt);
	droce_impair_detach(imp);
	result_free(&r);
	g_op_mix = false;
	check_pool_full("match=requests");
}

static void test_detach(int tx)
{
	const uint32_t n = 3000;
	uint64_t seed = next_seed();
	struct droce_impair *imp;
	struct droce_impair_stats st;
	struct result r;
	uint64_t held;

	imp = attach_dir(tx, "seed=%" PRIu64 ",delay_us=5000000,reorder=0.5,dup=0.2",
			 seed);
	result_init(&r, n, false);
	run_traffic(imp, &r, 0, 0.01);
	droce_impair_stats(imp, &st);
	held = dstats(&st, tx)->held;
	printf("  %s: %" PRIu64 " frames held at detach, %u mbufs out of the pool\n",
	       dname(tx), held, NB_MBUF - rte_mempool_avail_count(g_pool));
	CHECK(held >= n, "only %" PRIu64 " held", held);
	CHECK(r.roce == 0, "%u frames escaped a 5 s delay", r.roce);
	droce_impair_detach(imp);
	result_free(&r);
	check_pool_full("detach");
}

static void test_set(int tx)
{
	const char *d = dname(tx);
	uint64_t seed = next_seed();
	struct droce_impair *imp = attach_dir(tx, "%s", "");
	struct droce_impair_stats st;
	struct result r, a, b;
	double z;
	char kv[128];

	result_init(&r, 10000, false);
	run_traffic(imp, &r, 0, 1.0);
	CHECK(r.roce == r.n, "inactive impairer lost %u", r.n - r.roce);
	result_free(&r);

	snprintf(kv, sizeof(kv), "%s_drop=1", d);
	CHECK(droce_impair_set(imp, kv) == 0, "set(%s)", kv);
	result_init(&r, 5000, false);
	run_traffic(imp, &r, 0, 1.0);
	CHECK(r.roce == 0 && r.fillers == (tx ? r.n : 0),
	      "drop=1: %u arrived, %u fillers", r.roce, r.fillers);
	result_free(&r);

	/* rejected: nothing changes */
	CHECK(droce_impair_set(imp, "bogus=1") == -EINVAL, "bogus key accepted");
	CHECK(droce_impair_set(imp, "drop=1.5") == -EINVAL, "drop=1.5 accepted");
	CHECK(droce_impair_set(imp, "drop=0,dup=x") == -EINVAL, "dup=x accepted");
	CHECK(droce_impair_set(imp, "hold_max=64") == -EINVAL, "hold_max at run time");
	CHECK(droce_impair_set(imp, "rx_seed=1") == -EINVAL, "rx_seed accepted");
	result_init(&r, 2000, false);
	run_traffic(imp, &r, 0, 1.0);
	CHECK(r.roce == 0, "a rejected set() changed something: %u arrived", r.roce);
	result_free(&r);

	snprintf(kv, sizeof(kv), "%s_drop=0.2,seed=%" PRIu64, d, seed);
	CHECK(droce_impair_set(imp, kv) == 0, "set(%s)", kv);
	result_init(&a, 20000, false);
	run_traffic(imp, &a, 0, 1.0);
	CHECK(binom_ok(a.n - a.roce, a.n, 0.2, &z), "drop=0.2: %u lost z=%.2f",
	      a.n - a.roce, z);
	/* seed= restarts the stream: the same decisions again */
	CHECK(droce_impair_set(imp, kv) == 0, "set(%s)", kv);
	result_init(&b, 20000, false);
	run_traffic(imp, &b, 0, 1.0);
	printf("  %s set(): drop 1 -> 0.2 (%u of %u lost, z=%+.2f), reseed %s\n",
	       d, a.n - a.roce, a.n, z, same_recs(&a, &b) ? "replays" : "DIFFERS");
	CHECK(same_recs(&a, &b), "seed= at run time did not replay");
	result_free(&a);
	result_free(&b);

	CHECK(droce_impair_set(imp, "drop=0") == 0, "set(drop=0)");
	result_init(&r, 5000, false);
	run_traffic(imp, &r, 0, 1.0);
	CHECK(r.roce == r.n, "drop=0: %u lost", r.n - r.roce);
	result_free(&r);
	droce_impair_stats(imp, &st);
	CHECK(dstats(&st, tx)->held == 0, "held");
	droce_impair_detach(imp);
	check_pool_full("set");
}

static volatile int g_stop;
static struct droce_impair *g_imp;
static unsigned long g_nset;

static void *setter(void *arg)
{
	const char *d = arg;
	char kv[3][128];

	snprintf(kv[0], sizeof(kv[0]), "%s_reorder=0.5,%s_reorder_depth=7", d, d);
	snprintf(kv[1], sizeof(kv[1]), "%s_reorder=0.1,%s_reorder_depth=2,%s_delay_us=30",
		 d, d, d);
	snprintf(kv[2], sizeof(kv[2]), "%s_reorder=0,%s_delay_us=0", d, d);
	while (!g_stop) {
		if (droce_impair_set(g_imp, kv[g_nset % 3]) != 0)
			return (void *)1;
		g_nset++;
		usleep(200);
	}
	return NULL;
}

static void test_concurrent_set(int tx)
{
	uint64_t seed = next_seed();
	struct result r;
	pthread_t th;
	uint32_t once = 0;
	void *ret = NULL;

	g_imp = attach_dir(tx, "seed=%" PRIu64 ",%s_reorder=0.2", seed, dname(tx));
	g_stop = 0;
	g_nset = 0;
	if (pthread_create(&th, NULL, setter, (void *)(uintptr_t)dname(tx)) != 0) {
		printf("FAIL: pthread_create\n");
		exit(1);
	}
	result_init(&r, N_RATE, false);
	run_traffic(g_imp, &r, 0, 0);
	g_stop = 1;
	pthread_join(th, &ret);
	drain(g_imp, &r, 2.0);
	for (uint32_t i = 0; i < r.n; i++)
		once += r.count[i] == 1;
	printf("  %s: %lu set() calls during %u frames, %u arrived exactly once\n",
	       dname(tx), g_nset, r.n, once);
	CHECK(ret == NULL, "set() failed in the setter thread");
	CHECK(g_nset >= 10, "only %lu set() calls", g_nset);
	CHECK(once == r.n && r.roce == r.n, "lost or duplicated: %u once of %u (%u)",
	      once, r.n, r.roce);
	CHECK(r.drained && r.bad == 0, "drained %d bad %u", r.drained, r.bad);
	droce_impair_detach(g_imp);
	g_imp = NULL;
	result_free(&r);
	check_pool_full("concurrent set");
}

/*
 * Tx with no filler to be had (frames shared, their pool empty): the frames
 * the impairer cannot send or replace come back to the caller as unsent,
 * never a stale pointer, and nothing leaks.
 */
static void test_tx_no_fillers(void)
{
	enum { SMALL = 64, NB = 32 };
	static const char *const cfgs[] = { "tx_drop=1", "tx_delay_us=1000000" };
	struct rte_mempool *mp;
	struct rte_mbuf *pk[NB], *orig[NB], *ref[NB], *hog[SMALL];
	unsigned int nhog = 0;

	mp = rte_pktmbuf_pool_create("imp_small", SMALL, 0, 0,
				     RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	if (mp == NULL) {
		CHECK(mp != NULL, "small pool: %s", rte_strerror(rte_errno));
		return;
	}
	for (unsigned int c = 0; c < RTE_DIM(cfgs); c++) {
		struct droce_impair *imp = attach_dir(1, "%s", cfgs[c]);
		struct droce_impair_stats st;
		uint16_t sent, back = 0;
		bool shared = c == 0;

		CHECK(rte_pktmbuf_alloc_bulk(mp, pk, NB) == 0, "alloc");
		for (unsigned int i = 0; i < NB; i++) {
			frame_build((uint8_t *)rte_pktmbuf_append(pk[i],
					(uint16_t)frame_len(i, K_ROCE)), i, K_ROCE);
			if (shared)	/* not ours alone: cannot become a filler */
				rte_mbuf_refcnt_update(pk[i], 1);
			orig[i] = pk[i];
			ref[i] = pk[i];
		}
		while ((hog[nhog] = rte_pktmbuf_alloc(mp)) != NULL)
			nhog++;
		sent = rte_eth_tx_burst(g_p0, 0, pk, NB);
		droce_impair_stats(imp, &st);
		for (unsigned int i = sent; i < NB; i++)
			for (unsigned int j = 0; j < NB; j++)
				if (pk[i] == orig[j]) {
					back++;
					orig[j] = NULL;
					break;
				}
		printf("  tx %s, no fillers: %u sent, %u handed back, nomem %" PRIu64
		       ", held %" PRIu64 "\n", cfgs[c], sent, back, st.tx.nomem,
		       st.tx.held);
		CHECK(sent == 0 && back == NB, "%u sent, %u of the caller's frames back",
		      sent, back);
		CHECK(st.tx.nomem == NB && st.tx.held == 0 && st.tx.fillers == 0,
		      "nomem %" PRIu64 " held %" PRIu64 " fillers %" PRIu64,
		      st.tx.nomem, st.tx.held, st.tx.fillers);
		/* the caller owns them again */
		rte_pktmbuf_free_bulk(pk + sent, NB - sent);
		while (nhog > 0)
			rte_pktmbuf_free(hog[--nhog]);
		droce_impair_detach(imp);
		if (shared) {
			CHECK(rte_mempool_avail_count(mp) == SMALL - NB,
			      "small pool: %u free", rte_mempool_avail_count(mp));
			for (unsigned int i = 0; i < NB; i++)
				rte_pktmbuf_free(ref[i]);	/* our extra reference */
		}
		CHECK(rte_mempool_avail_count(mp) == SMALL, "small pool: %u of %u free",
		      rte_mempool_avail_count(mp), SMALL);
	}
	rte_mempool_free(mp);
	check_pool_full("no fillers");
}

static void test_attach_errors(void)
{
	CHECK(droce_impair_attach(RTE_MAX_ETHPORTS - 1, "") == NULL &&
	      rte_errno == ENODEV, "bad port");
	CHECK(droce_impair_attach(g_p1, "drop=2") == NULL && rte_errno == EINVAL,
	      "drop=2");
	CHECK(droce_impair_attach(g_p1, "nonsense") == NULL && rte_errno == EINVAL,
	      "nonsense");
	CHECK(droce_impair_attach(g_p1, "reorder_depth=0") == NULL &&
	      rte_errno == EINVAL, "reorder_depth=0");
	CHECK(droce_impair_attach(g_p1, "match=udp") == NULL && rte_errno == EINVAL,
	      "match=udp");
	CHECK(droce_impair_attach(g_p1, "delay_us=-1") == NULL && rte_errno == EINVAL,
	      "delay_us=-1");
	CHECK(droce_impair_set(NULL, "") == -EINVAL, "set(NULL)");
	droce_impair_detach(NULL);
}

/* ------------------------------------------------------------------ */
/* Setup                                                                */

static int port_setup(const char *name, struct rte_ring *rx, struct rte_ring *tx)
{
	struct rte_eth_conf conf;
	int port = rte_eth_from_rings(name, &rx, 1, &tx, 1, (unsigned int)rte_socket_id());

	if (port < 0)
		return port;
	memset(&conf, 0, sizeof(conf));
	if (rte_eth_dev_configure((uint16_t)port, 1, 1, &conf) != 0 ||
	    rte_eth_rx_queue_setup((uint16_t)port, 0, 512, rte_socket_id(), NULL,
				   g_pool) != 0 ||
	    rte_eth_tx_queue_setup((uint16_t)port, 0, 512, rte_socket_id(), NULL) != 0 ||
	    rte_eth_dev_start((uint16_t)port) != 0)
		return -1;
	return port;
}

static void eal_init(const char *prog)
{
	const char *extra = getenv("DROCE_EAL_EXTRA_ARGS");
	const char *nh = getenv("DROCE_NO_HUGE");
	static char copy[512], prefix[64];
	char *argv[48], *save = NULL, *tok;
	bool no_huge = nh != NULL && strcmp(nh, "1") == 0;
	int argc = 0;

	snprintf(prefix, sizeof(prefix), "--file-prefix=droce-impair-%d", (int)getpid());
	argv[argc++] = (char *)(uintptr_t)prog;
	argv[argc++] = (char *)(uintptr_t)"-l";
	argv[argc++] = (char *)(uintptr_t)"0";
	argv[argc++] = (char *)(uintptr_t)"--no-pci";
	argv[argc++] = (char *)(uintptr_t)"--no-telemetry";
	argv[argc++] = (char *)(uintptr_t)"--log-level=*:warning";
	argv[argc++] = prefix;
	if (extra != NULL && *extra != '\0') {
		snprintf(copy, sizeof(copy), "%s", extra);
		for (tok = strtok_r(copy, " \t", &save); tok != NULL && argc < 44;
		     tok = strtok_r(NULL, " \t", &save))
			argv[argc++] = tok;
		no_huge = strstr(extra, "--no-huge") != NULL;
	} else if (no_huge) {
		argv[argc++] = (char *)(uintptr_t)"--no-huge";
		argv[argc++] = (char *)(uintptr_t)"-m";
		argv[argc++] = (char *)(uintptr_t)"1024";
	}
	/* DPDK 22.11 refuses --in-memory with --no-huge (legacy memory) */
	if (!no_huge)
		argv[argc++] = (char *)(uintptr_t)"--in-memory";
	else if (extra == NULL || strstr(extra, "--no-shconf") == NULL)
		argv[argc++] = (char *)(uintptr_t)"--no-shconf";
	argv[argc] = NULL;
	printf("EAL:");
	for (int i = 1; i < argc; i++)
		printf(" %s", argv[i]);
	printf("\n");
	if (rte_eal_init(argc, argv) < 0) {
		printf("SKIP: rte_eal_init failed: %s%s\n", rte_strerror(rte_errno),
		       no_huge ? "" : " (no hugepages? try DROCE_NO_HUGE=1)");
		exit(77);
	}
}

int main(int argc __rte_unused, char **argv)
{
	const char *env = getenv("DROCE_TEST_SEED");
	struct rte_ring *r01, *r10;
	uint64_t seed, t0;
	int p0, p1;

	setvbuf(stdout, NULL, _IOLBF, 0);
	seed = env != NULL ? strtoull(env, NULL, 0) : (uint64_t)time(NULL) ^ (uint64_t)getpid() << 20;
	g_seed_state = seed;
	printf("test_impair: DROCE_TEST_SEED=%" PRIu64 "\n", seed);
	eal_init(argv[0]);
	g_hz = rte_get_timer_hz();
	t0 = rte_get_timer_cycles();

	g_pool = rte_pktmbuf_pool_create("imp_test_pool", NB_MBUF, 0, 0,
					 RTE_MBUF_DEFAULT_BUF_SIZE, (int)rte_socket_id());
	r01 = rte_ring_create("imp_r01", RING_SIZE, (int)rte_socket_id(),
			      RING_F_SP_ENQ | RING_F_SC_DEQ);
	r10 = rte_ring_create("imp_r10", RING_SIZE, (int)rte_socket_id(),
			      RING_F_SP_ENQ | RING_F_SC_DEQ);
	if (g_pool == NULL || r01 == NULL || r10 == NULL) {
		printf("SKIP: no memory for the pool or rings: %s\n", rte_strerror(rte_errno));
		return 77;
	}
	p0 = port_setup("net_ring_imp0", r10, r01);
	p1 = port_setup("net_ring_imp1", r01, r10);
	if (p0 < 0 || p1 < 0) {
		printf("FAIL: net_ring ports: %d %d\n", p0, p1);
		return 1;
	}
	g_p0 = (uint16_t)p0;
	g_p1 = (uint16_t)p1;

	test_attach_errors();
	test_tx_no_fillers();
	for (int tx = 0; tx <= 1; tx++) {
		printf("%s direction\n", dname(tx));
		test_rates(tx);
		test_reorder(tx);
		test_delay(tx);
		test_determinism(tx);
		test_match(tx);
		test_match_requests(tx);
		test_detach(tx);
		test_set(tx);
		test_concurrent_set(tx);
	}

	printf("%.1f s\n", (double)(rte_get_timer_cycles() - t0) / (double)g_hz);
	rte_eth_dev_stop(g_p0);
	rte_eth_dev_stop(g_p1);
	rte_eth_dev_close(g_p0);
	rte_eth_dev_close(g_p1);
	rte_ring_free(r01);
	rte_ring_free(r10);
	rte_mempool_free(g_pool);
	{
		char rundir[PATH_MAX];

		snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
		rte_eal_cleanup();
		/* --in-memory/--no-shconf still create an empty runtime directory */
		if (rundir[0] != '\0')
			(void)rmdir(rundir);
	}
	if (g_fail) {
		printf("test_impair: %d check(s) FAILED (DROCE_TEST_SEED=%" PRIu64 ")\n",
		       g_fail, seed);
		return 1;
	}
	printf("test_impair: PASS\n");
	return 0;
}
