/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce_impair: a seeded link impairer on ethdev's public Rx/Tx callbacks.
 * Interface in droce_impair.h, behaviour and guarantees in doc/impair.md.
 *
 * One struct imp_q per queue and direction, touched only by the thread
 * that runs that queue's bursts (and by attach/detach when no burst can be
 * inside). A frame goes through
 *
 *   match? ─ no ─────────────────────────────────────────────────► out
 *     │ yes: 8 draws                                                 ▲
 *   drop? ─ yes ─► freed (Tx: recycled as a filler, see below)      │
 *     │                                                              │
 *   dup? (copy taken before corruption) ─► copy ─► delay line ──────┤
 *   corrupt? (flip one bit, on a private copy if the mbuf is shared) │
 *   reorder? ─ yes ─► reorder hold: leaves after k = 1..depth later  │
 *     │                frames, or after reorder_max_us ─► delay line ┤
 *     └───────────────────────────────────────────────► delay line ─┘
 *                                  (FIFO, leaves when arrival+delay <= now)
 *
 * and "out" (a FIFO) feeds the burst: on Rx up to the caller's array
 * capacity, the rest next time; on Tx see imp_tx_emit().
 *
 * The configuration is an immutable snapshot behind an atomic pointer. A
 * callback goes RCU-online (rte_rcu_qsbr, one reader id per queue and
 * direction) for the length of one burst; set() swaps the pointer and frees
 * the old snapshot after rte_rcu_qsbr_synchronize(). An idle queue is
 * offline, so it never holds set() up.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <netinet/in.h>

#include <rte_byteorder.h>
#include <rte_common.h>
#include <rte_cycles.h>
#include <rte_debug.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_ether.h>
#include <rte_log.h>
#include <rte_malloc.h>
#include <rte_mbuf.h>
#include <rte_rcu_qsbr.h>

#include "droce_impair.h"

RTE_LOG_REGISTER(droce_impair_logtype, droce.impair, NOTICE);
#define IMP_LOG(level, fmt, ...)					\
	rte_log(RTE_LOG_ ## level, droce_impair_logtype,		\
		"droce_impair: " fmt "\n", ##__VA_ARGS__)

#define IMP_RX		0
#define IMP_TX		1
#define IMP_DRAWS	8	/* PRNG outputs used by every matched frame */
#define IMP_REORDER_MAX	256	/* also the largest reorder_depth */
#define IMP_HOLD_DEFAULT 4096u
#define IMP_HOLD_LIMIT	(1u << 20)
#define IMP_US_LIMIT	60000000u	/* 60 s */
#define IMP_ROCE_PORT	4791
#define IMP_FILLER_TYPE	0x88B5		/* IEEE 802 local experimental */
#define IMP_FILLER_LEN	60
#define IMP_P_ONE	9007199254740992.0	/* 2^53 */

/* What match= selects for impairment. */
enum imp_match {
	IMP_MATCH_ROCE,		/* RoCEv2 frames */
	IMP_MATCH_ALL,		/* every frame */
	IMP_MATCH_REQUESTS,	/* RoCEv2 frames but responses and CNPs */
};

/* ------------------------------------------------------------------ */
/* Configuration                                                        */

struct imp_dparams {		/* what the user said, one direction */
	double drop, dup, reorder, corrupt;
	uint32_t delay_us, reorder_depth, reorder_max_us;
	enum imp_match match;
};

struct imp_params {
	uint64_t seed;
	uint32_t hold_max;
	struct imp_dparams d[2];
};

struct imp_dcfg {		/* what the data path uses, one direction */
	uint64_t thr_drop, thr_dup, thr_reorder, thr_corrupt; /* of 2^53 */
	uint64_t delay_tsc;
	uint64_t reorder_max_tsc;
	uint32_t reorder_depth;
	enum imp_match match;
	bool active;		/* anything to do at all */
};

struct imp_cfg {		/* immutable once published */
	struct imp_dcfg d[2];
	uint64_t seed;
	uint64_t seed_gen;	/* bumped by every seed= */
};

/* ------------------------------------------------------------------ */
/* Per queue and direction                                              */

struct imp_ro {			/* a frame held back by reorder= */
	struct rte_mbuf *m;
	uint64_t t0;		/* arrival */
	uint32_t left;		/* frames still to pass before it leaves */
	uint64_t burst;		/* burst it arrived in */
};

struct imp_slot {		/* a frame on the delay line */
	struct rte_mbuf *m;
	uint64_t due;
};

struct imp_q {
	struct droce_impair *imp;
	const struct rte_eth_rxtx_callback *cb;
	uint16_t port_id;
	uint16_t queue_id;
	uint8_t dir;
	uint8_t in_tx;		/* Tx: our own rte_eth_tx_burst() runs */
	uint8_t cb_removed;
	unsigned int tid;	/* RCU reader id */
	uint64_t burst;		/* bursts processed */
	uint64_t rng;		/* splitmix64 state */
	uint64_t seed_gen;
	struct rte_mempool *pool; /* Tx: where fresh fillers come from */
	/* Tx, during one burst: discarded input frames, kept in the
	 * caller's array (slot i is free once frame i has been read) */
	struct rte_mbuf **sp;
	uint16_t nsp;
	uint16_t cur;		/* index of the input frame being processed */
	uint32_t mask;		/* hold_max - 1 */
	uint32_t line_head, line_tail;
	uint32_t out_head, out_tail;
	uint32_t ro_n;
	struct imp_slot *line;
	struct rte_mbuf **out;
	struct droce_impair_dir_stats st;
	struct imp_ro ro[IMP_REORDER_MAX];
} __rte_cache_aligned;

struct droce_impair {
	struct imp_cfg *cfg;	/* current snapshot (atomic pointer) */
	struct rte_rcu_qsbr *rcu;
	pthread_mutex_t lock;	/* set() against set() */
	struct imp_params params;
	struct rte_ether_addr mac;
	uint16_t port_id;
	uint16_t nb_rxq, nb_txq;
	struct imp_q **q;	/* nb_rxq Rx queues, then nb_txq Tx queues */
};

/* Single writer (the queue's thread); stats readers load relaxed. */
#define IMP_ADD(q, f, v)						\
	__atomic_store_n(&(q)->st.f, (q)->st.f + (uint64_t)(v),	\
			 __ATOMIC_RELAXED)

/* ------------------------------------------------------------------ */
/* PRNG: splitmix64                                                     */

static inline uint64_t imp_mix(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline uint64_t imp_next(uint64_t *s)
{
	*s += UINT64_C(0x9e3779b97f4a7c15);
	return imp_mix(*s);
}

/* The stream of one queue and direction: distinct for every (dir, queue). */
static uint64_t imp_stream_seed(uint64_t seed, unsigned int dir,
				unsigned int queue)
{
	return imp_mix(seed ^ imp_mix(((uint64_t)(dir + 1) << 32) | queue));
}

static inline bool imp_below(uint64_t draw, uint64_t thr)
{
	return (draw >> 11) < thr;
}

/* ------------------------------------------------------------------ */
/* Parsing                                                              */

static void imp_params_default(struct imp_params *p)
{
	memset(p, 0, sizeof(*p));
	p->seed = 1;
	p->hold_max = IMP_HOLD_DEFAULT;
	for (int d = 0; d < 2; d++) {
		p->d[d].reorder_depth = 3;
		p->d[d].reorder_max_us = 1000;
	}
}

static int imp_parse_rate(const char *v, double *out)
{
	char *end;
	double x;

	errno = 0;
	x = strtod(v, &end);
	if (end == v || *end != '\0' || errno != 0 || !(x >= 0.0 && x <= 1.0))
		return -EINVAL;
	*out = x;
	return 0;
}

static int imp_parse_u64(const char *v, int base, uint64_t lo, uint64_t hi,
			 uint64_t *out)
{
	unsigned long long x;
	char *end;

	if (*v == '\0' || strchr(v, '-') != NULL)
		return -EINVAL;
	errno = 0;
	x = strtoull(v, &end, base);
	if (*end != '\0' || errno != 0 || x < lo || x > hi)
		return -EINVAL;
	*out = x;
	return 0;
}

static char *imp_trim(char *s)
{
	char *e;

	while (*s == ' ' || *s == '\t')
		s++;
	e = s + strlen(s);
	while (e > s && (e[-1] == ' ' || e[-1] == '\t'))
		*--e = '\0';
	return s;
}

/* One key=value, applied to *p. */
static int imp_parse_one(struct imp_params *p, char *key, char *val,
			 bool attach, bool *seed_given)
{
	unsigned int mask = (1u << IMP_RX) | (1u << IMP_TX);
	const char *k = key;
	uint64_t u;
	double x;
	int d;

	if (strncmp(k, "rx_", 3) == 0) {
		mask = 1u << IMP_RX;
		k += 3;
	} else if (strncmp(k, "tx_", 3) == 0) {
		mask = 1u << IMP_TX;
		k += 3;
	}
	if (mask == 3 && strcmp(k, "seed") == 0) {
		if (imp_parse_u64(val, 0, 0, UINT64_MAX, &u) != 0)
			goto bad;
		p->seed = u;
		*seed_given = true;
		return 0;
	}
	if (mask == 3 && strcmp(k, "hold_max") == 0) {
		if (!attach) {
			IMP_LOG(ERR, "hold_max can only be given to attach");
			return -EINVAL;
		}
		if (imp_parse_u64(val, 10, 1, IMP_HOLD_LIMIT, &u) != 0)
			goto bad;
		p->hold_max = (uint32_t)u;
		return 0;
	}
	for (d = 0; d < 2; d++) {
		struct imp_dparams *dp = &p->d[d];

		if (!(mask & (1u << d)))
			continue;
		if (strcmp(k, "drop") == 0 || strcmp(k, "dup") == 0 ||
		    strcmp(k, "reorder") == 0 || strcmp(k, "corrupt") == 0) {
			if (imp_parse_rate(val, &x) != 0)
				goto bad;
			if (k[0] == 'd' && k[1] == 'r')
				dp->drop = x;
			else if (k[0] == 'd')
				dp->dup = x;
			else if (k[0] == 'r')
				dp->reorder = x;
			else
				dp->corrupt = x;
		} else if (strcmp(k, "delay_us") == 0) {
			if (imp_parse_u64(val, 10, 0, IMP_US_LIMIT, &u) != 0)
				goto bad;
			dp->delay_us = (uint32_t)u;
		} else if (strcmp(k, "reorder_depth") == 0) {
			if (imp_parse_u64(val, 10, 1, IMP_REORDER_MAX, &u) != 0)
				goto bad;
			dp->reorder_depth = (uint32_t)u;
		} else if (strcmp(k, "reorder_max_us") == 0) {
			if (imp_parse_u64(val, 10, 1, IMP_US_LIMIT, &u) != 0)
				goto bad;
			dp->reorder_max_us = (uint32_t)u;
		} else if (strcmp(k, "match") == 0) {
			if (strcmp(val, "roce") == 0)
				dp->match = IMP_MATCH_ROCE;
			else if (strcmp(val, "all") == 0)
				dp->match = IMP_MATCH_ALL;
			else if (strcmp(val, "requests") == 0)
				dp->match = IMP_MATCH_REQUESTS;
			else
				goto bad;
		} else {
			IMP_LOG(ERR, "unknown key \"%s\"", key);
			return -EINVAL;
		}
	}
	return 0;
bad:
	IMP_LOG(ERR, "bad value \"%s\" for \"%s\"", val, key);
	return -EINVAL;
}

/* Apply kvargs to *p, left to right; *p is unchanged on error. */
static int imp_parse(struct imp_params *p, const char *kvargs, bool attach,
		     bool *seed_given)
{
	struct imp_params tmp = *p;
	char *copy, *save = NULL, *tok;
	int ret = 0;

	*seed_given = false;
	if (kvargs == NULL || *kvargs == '\0')
		return 0;
	copy = strdup(kvargs);
	if (copy == NULL)
		return -ENOMEM;
	for (tok = strtok_r(copy, ",", &save); tok != NULL && ret == 0;
	     tok = strtok_r(NULL, ",", &save)) {
		char *eq;

		tok = imp_trim(tok);
		if (*tok == '\0')
			continue;
		eq = strchr(tok, '=');
		if (eq == NULL) {
			IMP_LOG(ERR, "\"%s\" is not key=value", tok);
			ret = -EINVAL;
			break;
		}
		*eq = '\0';
		ret = imp_parse_one(&tmp, imp_trim(tok), imp_trim(eq + 1),
				    attach, seed_given);
	}
	free(copy);
	if (ret == 0)
		*p = tmp;
	else
		*seed_given = false;
	return ret;
}

static uint64_t imp_us_to_tsc(uint32_t us)
{
	uint64_t hz = rte_get_timer_hz();

	/* us <= 6e7 and hz < 1e11: the product fits; round up */
	return ((uint64_t)us * hz + 999999) / 1000000;
}

static uint64_t imp_thr(double p)
{
	return (uint64_t)(p * IMP_P_ONE);
}

static struct imp_cfg *imp_cfg_new(const struct imp_params *p,
				   uint64_t seed_gen)
{
	struct imp_cfg *c = calloc(1, sizeof(*c));

	if (c == NULL)
		return NULL;
	c->seed = p->seed;
	c->seed_gen = seed_gen;
	for (int d = 0; d < 2; d++) {
		const struct imp_dparams *dp = &p->d[d];
		struct imp_dcfg *dc = &c->d[d];

		dc->thr_drop = imp_thr(dp->drop);
		dc->thr_dup = imp_thr(dp->dup);
		dc->thr_reorder = imp_thr(dp->reorder);
		dc->thr_corrupt = imp_thr(dp->corrupt);
		dc->delay_tsc = imp_us_to_tsc(dp->delay_us);
		dc->reorder_max_tsc = imp_us_to_tsc(dp->reorder_max_us);
		dc->reorder_depth = dp->reorder_depth;
		dc->match = dp->match;
		dc->active = dc->thr_drop || dc->thr_dup || dc->thr_reorder ||
			     dc->thr_corrupt || dc->delay_tsc;
	}
	return c;
}

/* ------------------------------------------------------------------ */
/* Frames                                                               */

/*
 * A BTH opcode that asks for something: not an RC or XRC response (RDMA
 * READ response first..only, Acknowledge, Atomic Acknowledge: 0x0d-0x12 in
 * those transports' tables) and not a CNP (0x81). The tests spare the
 * responses when an application protocol cannot survive losing the last
 * one (ibv_rc_pingpong has no closing handshake).
 */
static bool imp_opcode_is_request(uint8_t op)
{
	uint8_t transport = op & 0xe0, code = op & 0x1f;

	if (op == 0x81)
		return false;
	if (transport == 0x00 || transport == 0xa0)
		return code < 0x0d || code > 0x12;
	return true;
}

/*
 * Does the frame match, and where does its Ethernet header (with up to two
 * VLAN tags) end? RoCEv2: IPv4 (first fragment) or IPv6 without extension
 * headers, UDP, destination port 4791; for IMP_MATCH_REQUESTS also a BTH
 * opcode that imp_opcode_is_request().
 */
static bool imp_match(const struct rte_mbuf *m, enum imp_match match,
		      uint32_t *l2)
{
	bool all = match == IMP_MATCH_ALL;
	uint8_t buf[40];
	const uint8_t *p;
	uint32_t off = 2 * RTE_ETHER_ADDR_LEN;
	uint16_t type;
	int tags = 0;

	for (;;) {
		p = rte_pktmbuf_read(m, off, 2, buf);
		if (p == NULL) {
			*l2 = m->pkt_len;	/* a runt: nothing to corrupt */
			return all;
		}
		type = (uint16_t)(p[0] << 8 | p[1]);
		off += 2;
		if ((type == RTE_ETHER_TYPE_VLAN ||
		     type == RTE_ETHER_TYPE_QINQ) && tags++ < 2) {
			off += 2;
			continue;
		}
		break;
	}
	*l2 = off;
	if (all)
		return true;
	if (type == RTE_ETHER_TYPE_IPV4) {
		uint32_t ihl;

		p = rte_pktmbuf_read(m, off, 20, buf);
		if (p == NULL || (p[0] >> 4) != 4)
			return false;
		ihl = (uint32_t)(p[0] & 0xf) * 4;
		if (ihl < 20 || p[9] != IPPROTO_UDP ||
		    ((p[6] & 0x1f) | p[7]) != 0)
			return false;
		off += ihl;
	} else if (type == RTE_ETHER_TYPE_IPV6) {
		p = rte_pktmbuf_read(m, off, 40, buf);
		if (p == NULL || (p[0] >> 4) != 6 || p[6] != IPPROTO_UDP)
			return false;
		off += 40;
	} else {
		return false;
	}
	p = rte_pktmbuf_read(m, off, 4, buf);
	if (p == NULL || (p[2] << 8 | p[3]) != IMP_ROCE_PORT)
		return false;
	if (match != IMP_MATCH_REQUESTS)
		return true;
	p = rte_pktmbuf_read(m, off + 8, 1, buf);	/* BTH opcode */
	return p != NULL && imp_opcode_is_request(p[0]);
}

/* May the frame's bytes be changed in place (nobody else sees them)? */
static bool imp_writable(const struct rte_mbuf *m)
{
	for (; m != NULL; m = m->next)
		if (!RTE_MBUF_DIRECT(m) || rte_mbuf_refcnt_read(m) != 1)
			return false;
	return true;
}

static struct rte_mbuf *imp_corrupt(struct imp_q *q, struct rte_mbuf *m,
				    uint32_t l2, uint64_t dpos, uint64_t dbit)
{
	struct rte_mbuf *s;
	uint32_t off;

	if (m->pkt_len <= l2)
		return m;
	if (!imp_writable(m)) {
		struct rte_mbuf *c = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);

		if (c == NULL) {
			IMP_ADD(q, nomem, 1);
			return m;
		}
		rte_pktmbuf_free(m);
		m = c;
	}
	off = l2 + (uint32_t)(dpos % (m->pkt_len - l2));
	for (s = m; s != NULL && off >= s->data_len; s = s->next)
		off -= s->data_len;
	if (s == NULL)		/* segment lengths disagree with pkt_len */
		return m;
	*rte_pktmbuf_mtod_offset(s, uint8_t *, off) ^= (uint8_t)(1u << (dbit & 7));
	IMP_ADD(q, corrupted, 1);
	return m;
}

/* A filler: 60 bytes to our own MAC from our own MAC, ethertype 0x88B5. */
static void imp_filler_write(const struct imp_q *q, struct rte_mbuf *m)
{
	static const char tag[] = "droce-impair filler";
	uint8_t *p = rte_pktmbuf_mtod(m, uint8_t *);

	memset(p, 0, IMP_FILLER_LEN);
	memcpy(p, &q->imp->mac, RTE_ETHER_ADDR_LEN);
	memcpy(p + RTE_ETHER_ADDR_LEN, &q->imp->mac, RTE_ETHER_ADDR_LEN);
	p[12] = IMP_FILLER_TYPE >> 8;
	p[13] = IMP_FILLER_TYPE & 0xff;
	memcpy(p + RTE_ETHER_HDR_LEN, tag, sizeof(tag) - 1);
}

/* Turn a discarded frame into a filler, in place, if it is ours alone. */
static bool imp_filler_recycle(const struct imp_q *q, struct rte_mbuf *m)
{
	if (m->nb_segs != 1 || !imp_writable(m) ||
	    m->buf_len < RTE_PKTMBUF_HEADROOM + IMP_FILLER_LEN)
		return false;
	rte_pktmbuf_reset(m);
	if (rte_pktmbuf_append(m, IMP_FILLER_LEN) == NULL)
		return false;	/* not reached: the length was checked */
	imp_filler_write(q, m);
	return true;
}

static struct rte_mbuf *imp_filler_alloc(const struct imp_q *q)
{
	struct rte_mbuf *m;

	if (q->pool == NULL)
		return NULL;
	m = rte_pktmbuf_alloc(q->pool);
	if (m == NULL)
		return NULL;
	if (rte_pktmbuf_append(m, IMP_FILLER_LEN) == NULL) {
		rte_pktmbuf_free(m);
		return NULL;
	}
	imp_filler_write(q, m);
	return m;
}

/* ------------------------------------------------------------------ */
/* Holding                                                              */

static inline uint32_t imp_line_cnt(const struct imp_q *q)
{
	return q->line_tail - q->line_head;
}

static inline uint32_t imp_out_cnt(const struct imp_q *q)
{
	return q->out_tail - q->out_head;
}

static inline bool imp_idle(const struct imp_q *q)
{
	return q->ro_n == 0 && q->line_tail == q->line_head &&
	       q->out_tail == q->out_head;
}

static void imp_publish_held(struct imp_q *q)
{
	__atomic_store_n(&q->st.held,
			 (uint64_t)q->ro_n + imp_line_cnt(q) + imp_out_cnt(q),
			 __ATOMIC_RELAXED);
}

/*
 * A frame the impairer will not pass on. On Tx, this burst's own input
 * frames are kept (in the caller's array, slots already read) to be
 * recycled as fillers; everything else is freed.
 */
static void imp_discard(struct imp_q *q, struct rte_mbuf *m, bool input)
{
	if (q->sp != NULL && input && q->nsp <= q->cur) {
		q->sp[q->nsp++] = m;
		return;
	}
	rte_pktmbuf_free(m);
}

static void imp_to_out(struct imp_q *q, struct rte_mbuf *m, bool input)
{
	if (unlikely(imp_out_cnt(q) > q->mask)) {
		IMP_ADD(q, overflow, 1);
		imp_discard(q, m, input);
		return;
	}
	q->out[q->out_tail++ & q->mask] = m;
}

/* After the reorder stage: the delay line, or straight out. */
static void imp_stage_delay(struct imp_q *q, const struct imp_dcfg *c,
			    struct rte_mbuf *m, uint64_t t0, bool input)
{
	struct imp_slot *s;

	/* with delay 0, still queue behind frames on the line (order) */
	if (c->delay_tsc == 0 && q->line_tail == q->line_head) {
		imp_to_out(q, m, input);
		return;
	}
	if (unlikely(imp_line_cnt(q) > q->mask)) {
		IMP_ADD(q, overflow, 1);
		imp_discard(q, m, input);
		return;
	}
	s = &q->line[q->line_tail++ & q->mask];
	s->m = m;
	s->due = t0 + c->delay_tsc;
	IMP_ADD(q, delayed, 1);
}

/*
 * Release the reorder-held frames whose count ran out. Frames that run out
 * together leave youngest first: frame i held for 2 and frame i+1 held for 1
 * both run out when i+2 arrives, and i must come after i+1 and i+2.
 */
static void imp_ro_ready(struct imp_q *q, const struct imp_dcfg *c)
{
	uint32_t w = 0, j;

	for (j = q->ro_n; j-- > 0;) {
		struct imp_ro *e = &q->ro[j];

		if (e->left == 0) {
			IMP_ADD(q, released, 1);
			imp_stage_delay(q, c, e->m, e->t0, e->burst == q->burst);
		}
	}
	for (j = 0; j < q->ro_n; j++)
		if (q->ro[j].left != 0)
			q->ro[w++] = q->ro[j];
	q->ro_n = w;
}

/* Time-driven releases: reorder timeouts, then the due part of the line. */
static void imp_release(struct imp_q *q, const struct imp_dcfg *c,
			uint64_t now)
{
	uint32_t j = 0;

	while (j < q->ro_n && now - q->ro[j].t0 >= c->reorder_max_tsc) {
		struct imp_ro *e = &q->ro[j++];

		IMP_ADD(q, released, 1);
		imp_stage_delay(q, c, e->m, e->t0, e->burst == q->burst);
	}
	if (j != 0) {
		memmove(&q->ro[0], &q->ro[j], (q->ro_n - j) * sizeof(q->ro[0]));
		q->ro_n -= j;
	}
	while (q->line_head != q->line_tail &&
	       q->line[q->line_head & q->mask].due <= now &&
	       imp_out_cnt(q) <= q->mask) {
		q->out[q->out_tail++ & q->mask] =
			q->line[q->line_head++ & q->mask].m;
		IMP_ADD(q, released, 1);
	}
}

/* Decide the fate of every frame of a burst. */
static void imp_ingest(struct imp_q *q, const struct imp_dcfg *c,
		       struct rte_mbuf **pkts, uint16_t n, uint64_t now)
{
	for (uint16_t i = 0; i < n; i++) {
		struct rte_mbuf *m = pkts[i], *cp = NULL;
		uint64_t d[IMP_DRAWS];
		uint32_t l2;

		q->cur = i;
		if (!imp_match(m, c->match, &l2)) {
			imp_to_out(q, m, true);
			continue;
		}
		IMP_ADD(q, matched, 1);
		/* a fixed number of draws per frame keeps the streams aligned
		 * whatever the rates */
		for (int j = 0; j < IMP_DRAWS; j++)
			d[j] = imp_next(&q->rng);
		if (imp_below(d[0], c->thr_drop)) {
			IMP_ADD(q, dropped, 1);
			imp_discard(q, m, true);
			continue;
		}
		/* one more frame has passed every reorder-held one */
		for (uint32_t j = 0; j < q->ro_n; j++)
			q->ro[j].left--;
		if (imp_below(d[1], c->thr_dup)) {
			cp = rte_pktmbuf_copy(m, m->pool, 0, UINT32_MAX);
			if (cp != NULL)
				IMP_ADD(q, duplicated, 1);
			else
				IMP_ADD(q, nomem, 1);
		}
		if (imp_below(d[2], c->thr_corrupt))
			m = imp_corrupt(q, m, l2, d[3], d[4]);
		if (imp_below(d[5], c->thr_reorder) && q->ro_n < IMP_REORDER_MAX) {
			struct imp_ro *e = &q->ro[q->ro_n++];

			e->m = m;
			e->t0 = now;
			e->left = 1 + (uint32_t)(d[6] % c->reorder_depth);
			e->burst = q->burst;
			IMP_ADD(q, reordered, 1);
		} else {
			imp_stage_delay(q, c, m, now, true);
		}
		if (cp != NULL)
			imp_stage_delay(q, c, cp, now, false);
		imp_ro_ready(q, c);
	}
}

static void imp_reseed(struct imp_q *q, const struct imp_cfg *cfg)
{
	if (unlikely(q->seed_gen != cfg->seed_gen)) {
		q->rng = imp_stream_seed(cfg->seed, q->dir, q->queue_id);
		q->seed_gen = cfg->seed_gen;
	}
}

/* ------------------------------------------------------------------ */
/* Rx                                                                   */

static uint16_t imp_rx_cb(uint16_t port_id __rte_unused,
			  uint16_t queue_id __rte_unused,
			  struct rte_mbuf *pkts[], uint16_t nb_pkts,
			  uint16_t max_pkts, void *arg)
{
	struct imp_q *q = arg;
	const struct imp_cfg *cfg;
	const struct imp_dcfg *c;
	uint64_t now;
	uint16_t k = 0;

	rte_rcu_qsbr_thread_online(q->imp->rcu, q->tid);
	cfg = __atomic_load_n(&q->imp->cfg, __ATOMIC_ACQUIRE);
	c = &cfg->d[IMP_RX];
	IMP_ADD(q, seen, nb_pkts);
	if (likely(!c->active) && imp_idle(q)) {
		rte_rcu_qsbr_thread_offline(q->imp->rcu, q->tid);
		return nb_pkts;
	}
	q->burst++;
	imp_reseed(q, cfg);
	now = rte_get_timer_cycles();
	imp_release(q, c, now);
	imp_ingest(q, c, pkts, nb_pkts, now);
	imp_release(q, c, now);
	while (k < max_pkts && q->out_head != q->out_tail)
		pkts[k++] = q->out[q->out_head++ & q->mask];
	imp_publish_held(q);
	rte_rcu_qsbr_thread_offline(q->imp->rcu, q->tid);
	return k;
}

/* ------------------------------------------------------------------ */
/* Tx                                                                   */

/* Send from the head of "out" through the driver (our callback passes). */
static uint32_t imp_tx_send_out(struct imp_q *q, uint32_t want)
{
	uint32_t sent = 0;

	while (want > 0) {
		uint32_t h = q->out_head & q->mask;
		uint16_t cnt = (uint16_t)RTE_MIN(RTE_MIN(want, q->mask + 1 - h),
						 (uint32_t)UINT16_MAX);
		uint16_t s;

		q->in_tx = 1;
		s = rte_eth_tx_burst(q->port_id, q->queue_id, &q->out[h], cnt);
		q->in_tx = 0;
		q->out_head += s;
		sent += s;
		want -= s;
		if (s < cnt)
			break;
	}
	return sent;
}

/* A held frame to hand back to the caller (only when fillers ran out). */
static struct rte_mbuf *imp_take_held(struct imp_q *q)
{
	if (q->line_head != q->line_tail) {
		IMP_ADD(q, released, 1);
		return q->line[--q->line_tail & q->mask].m;
	}
	if (q->ro_n != 0) {
		IMP_ADD(q, released, 1);
		return q->ro[--q->ro_n].m;
	}
	return NULL;
}

/*
 * Build the burst the driver gets. ethdev returns the driver's count to the
 * application, and the application treats pkts[count..n) as unsent and
 * still its own (it frees or retries them). So the impairer keeps the
 * count whole: the n slots carry the frames due now, and every slot a
 * dropped or held frame leaves empty carries a filler frame (a discarded
 * frame recycled in place, or a fresh mbuf). Due frames beyond n go first,
 * through a nested rte_eth_tx_burst() that this callback lets pass. Only if
 * no filler can be had is a frame handed back as unsent (counted in nomem).
 *
 * On entry pkts[0..nsp) are this burst's discarded input frames.
 */
static uint16_t imp_tx_emit(struct imp_q *q, struct rte_mbuf **pkts,
			    uint16_t n)
{
	uint16_t nsp = q->nsp, f = (uint16_t)(n - nsp), e, sp0, cv = 0, g, r;
	uint32_t avail = imp_out_cnt(q);

	if (avail > n)
		avail -= imp_tx_send_out(q, avail - n);
	e = (uint16_t)RTE_MIN(avail, (uint32_t)n);

	/* spares to the end; those in the way of due frames are not needed */
	if (nsp != 0 && f != 0)
		memmove(&pkts[f], &pkts[0], nsp * sizeof(*pkts));
	for (uint16_t j = f; j < e; j++)
		rte_pktmbuf_free(pkts[j]);
	sp0 = RTE_MAX(e, f);
	for (uint16_t j = 0; j < e; j++)
		pkts[j] = q->out[q->out_head++ & q->mask];

	/* spare region [sp0, n): recyclable ones to its front */
	for (uint16_t j = sp0; j < n; j++) {
		if (imp_filler_recycle(q, pkts[j])) {
			struct rte_mbuf *t = pkts[sp0 + cv];

			pkts[sp0 + cv++] = pkts[j];
			pkts[j] = t;
		}
	}
	/* the gap [e, sp0): fresh fillers */
	for (g = e; g < sp0; g++) {
		struct rte_mbuf *m = imp_filler_alloc(q);

		if (m == NULL)
			break;
		pkts[g] = m;
	}
	IMP_ADD(q, fillers, (uint32_t)(g - e) + cv);
	r = (uint16_t)(g + cv);
	if (likely(r == n))
		return r;

	/* out of mbufs: spares that could not be recycled, and then held
	 * frames, go back to the caller as unsent */
	if (g < sp0) {
		memmove(&pkts[g], &pkts[sp0], (size_t)(n - sp0) * sizeof(*pkts));
		for (uint16_t j = (uint16_t)(n - (sp0 - g)); j < n; j++) {
			pkts[j] = imp_take_held(q);
			/* the deficit never exceeds spares + held frames */
			RTE_VERIFY(pkts[j] != NULL);
		}
	}
	IMP_ADD(q, nomem, (uint32_t)(n - r));
	return r;
}

static uint16_t imp_tx_cb(uint16_t port_id __rte_unused,
			  uint16_t queue_id __rte_unused,
			  struct rte_mbuf *pkts[], uint16_t nb_pkts, void *arg)
{
	struct imp_q *q = arg;
	const struct imp_cfg *cfg;
	const struct imp_dcfg *c;
	uint64_t now;
	uint16_t r;

	if (q->in_tx)		/* our own nested send */
		return nb_pkts;
	rte_rcu_qsbr_thread_online(q->imp->rcu, q->tid);
	cfg = __atomic_load_n(&q->imp->cfg, __ATOMIC_ACQUIRE);
	c = &cfg->d[IMP_TX];
	IMP_ADD(q, seen, nb_pkts);
	if (likely(!c->active) && imp_idle(q)) {
		rte_rcu_qsbr_thread_offline(q->imp->rcu, q->tid);
		return nb_pkts;
	}
	q->burst++;
	imp_reseed(q, cfg);
	now = rte_get_timer_cycles();
	if (nb_pkts != 0 && pkts[0]->pool != NULL)
		q->pool = pkts[0]->pool;
	q->sp = pkts;
	q->nsp = 0;
	q->cur = 0;
	imp_release(q, c, now);
	imp_ingest(q, c, pkts, nb_pkts, now);
	imp_release(q, c, now);
	q->sp = NULL;
	r = imp_tx_emit(q, pkts, nb_pkts);
	imp_publish_held(q);
	rte_rcu_qsbr_thread_offline(q->imp->rcu, q->tid);
	return r;
}

int droce_impair_flush(struct droce_impair *imp)
{
	int total = 0;

	if (imp == NULL)
		return -EINVAL;
	for (uint16_t i = 0; i < imp->nb_txq; i++) {
		struct imp_q *q = imp->q[imp->nb_rxq + i];
		const struct imp_cfg *cfg;

		rte_rcu_qsbr_thread_online(imp->rcu, q->tid);
		cfg = __atomic_load_n(&imp->cfg, __ATOMIC_ACQUIRE);
		if (!imp_idle(q)) {
			q->burst++;
			imp_release(q, &cfg->d[IMP_TX], rte_get_timer_cycles());
			total += (int)imp_tx_send_out(q, imp_out_cnt(q));
			imp_publish_held(q);
		}
		rte_rcu_qsbr_thread_offline(imp->rcu, q->tid);
	}
	return total;
}

/* ------------------------------------------------------------------ */
/* Control                                                              */

int droce_impair_set(struct droce_impair *imp, const char *kvargs)
{
	struct imp_cfg *nc, *old;
	struct imp_params p;
	bool seed_given;
	int ret;

	if (imp == NULL)
		return -EINVAL;
	pthread_mutex_lock(&imp->lock);
	p = imp->params;
	ret = imp_parse(&p, kvargs, false, &seed_given);
	if (ret != 0)
		goto out;
	nc = imp_cfg_new(&p, imp->cfg->seed_gen + (seed_given ? 1 : 0));
	if (nc == NULL) {
		ret = -ENOMEM;
		goto out;
	}
	imp->params = p;
	old = __atomic_exchange_n(&imp->cfg, nc, __ATOMIC_ACQ_REL);
	/* no burst still reads the old snapshot once this returns */
	rte_rcu_qsbr_synchronize(imp->rcu, RTE_QSBR_THRID_INVALID);
	free(old);
out:
	pthread_mutex_unlock(&imp->lock);
	return ret;
}

int droce_impair_stats(const struct droce_impair *imp,
		       struct droce_impair_stats *st)
{
	const size_t nw = sizeof(struct droce_impair_dir_stats) / sizeof(uint64_t);

	RTE_BUILD_BUG_ON(sizeof(struct droce_impair_dir_stats) % sizeof(uint64_t));
	if (imp == NULL || st == NULL)
		return -EINVAL;
	memset(st, 0, sizeof(*st));
	for (uint32_t i = 0; i < (uint32_t)imp->nb_rxq + imp->nb_txq; i++) {
		const struct imp_q *q = imp->q[i];
		const uint64_t *src = (const uint64_t *)&q->st;
		uint64_t *dst = (uint64_t *)(q->dir == IMP_RX ? &st->rx : &st->tx);

		for (size_t w = 0; w < nw; w++)
			dst[w] += __atomic_load_n(&src[w], __ATOMIC_RELAXED);
	}
	return 0;
}

static void imp_q_free(struct imp_q *q)
{
	if (q == NULL)
		return;
	for (uint32_t j = 0; j < q->ro_n; j++)
		rte_pktmbuf_free(q->ro[j].m);
	if (q->line != NULL)
		while (q->line_head != q->line_tail)
			rte_pktmbuf_free(q->line[q->line_head++ & q->mask].m);
	if (q->out != NULL)
		while (q->out_head != q->out_tail)
			rte_pktmbuf_free(q->out[q->out_head++ & q->mask]);
	rte_free(q->line);
	rte_free(q->out);
	rte_free(q);
}

void droce_impair_detach(struct droce_impair *imp)
{
	uint32_t nq;

	if (imp == NULL)
		return;
	nq = (uint32_t)imp->nb_rxq + imp->nb_txq;
	for (uint32_t i = 0; imp->q != NULL && i < nq; i++) {
		struct imp_q *q = imp->q[i];
		int ret;

		if (q == NULL || q->cb == NULL)
			continue;
		if (q->dir == IMP_RX)
			ret = rte_eth_remove_rx_callback(q->port_id, q->queue_id, q->cb);
		else
			ret = rte_eth_remove_tx_callback(q->port_id, q->queue_id, q->cb);
		if (ret == 0)
			q->cb_removed = 1;
		else
			IMP_LOG(WARNING, "port %u %s queue %u: callback not removed: %s",
				q->port_id, q->dir == IMP_RX ? "rx" : "tx",
				q->queue_id, rte_strerror(-ret));
	}
	/* after this no burst is inside a callback of ours */
	if (imp->rcu != NULL)
		rte_rcu_qsbr_synchronize(imp->rcu, RTE_QSBR_THRID_INVALID);
	for (uint32_t i = 0; imp->q != NULL && i < nq; i++) {
		struct imp_q *q = imp->q[i];

		if (q == NULL)
			continue;
		if (q->cb_removed)	/* ethdev leaves freeing it to us */
			rte_free((void *)(uintptr_t)q->cb);
		imp_q_free(q);
	}
	rte_free(imp->q);
	rte_free(imp->rcu);
	free(imp->cfg);
	pthread_mutex_destroy(&imp->lock);
	rte_free(imp);
}

static struct imp_q *imp_q_new(struct droce_impair *imp, int socket,
			       uint8_t dir, uint16_t queue, unsigned int tid)
{
	uint32_t cap = rte_align32pow2(imp->params.hold_max);
	struct imp_q *q;

	q = rte_zmalloc_socket("droce_impair_q", sizeof(*q),
			       RTE_CACHE_LINE_SIZE, socket);
	if (q == NULL)
		return NULL;
	q->line = rte_zmalloc_socket("droce_impair_line",
				     cap * sizeof(*q->line), 0, socket);
	q->out = rte_zmalloc_socket("droce_impair_out",
				    cap * sizeof(*q->out), 0, socket);
	if (q->line == NULL || q->out == NULL) {
		imp_q_free(q);
		return NULL;
	}
	q->imp = imp;
	q->port_id = imp->port_id;
	q->queue_id = queue;
	q->dir = dir;
	q->tid = tid;
	q->mask = cap - 1;
	if (rte_rcu_qsbr_thread_register(imp->rcu, tid) != 0) {
		imp_q_free(q);
		return NULL;
	}
	return q;
}

struct droce_impair *droce_impair_attach(uint16_t port_id, const char *kvargs)
{
	struct rte_eth_dev_info info;
	struct droce_impair *imp;
	struct imp_params p;
	bool seed_given;
	uint32_t nq, i;
	size_t sz;
	int socket, ret, err;

	if (!rte_eth_dev_is_valid_port(port_id)) {
		rte_errno = ENODEV;
		return NULL;
	}
	ret = rte_eth_dev_info_get(port_id, &info);
	if (ret != 0) {
		rte_errno = -ret;
		return NULL;
	}
	nq = (uint32_t)info.nb_rx_queues + info.nb_tx_queues;
	if (nq == 0) {
		IMP_LOG(ERR, "port %u has no queues configured yet", port_id);
		rte_errno = EINVAL;
		return NULL;
	}
	imp_params_default(&p);
	ret = imp_parse(&p, kvargs, true, &seed_given);
	if (ret != 0) {
		rte_errno = -ret;
		return NULL;
	}
	socket = rte_eth_dev_socket_id(port_id);
	if (socket < 0)
		socket = SOCKET_ID_ANY;

	imp = rte_zmalloc_socket("droce_impair", sizeof(*imp), 0, socket);
	if (imp == NULL) {
		rte_errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_init(&imp->lock, NULL);
	imp->params = p;
	imp->port_id = port_id;
	imp->nb_rxq = info.nb_rx_queues;
	imp->nb_txq = info.nb_tx_queues;
	if (rte_eth_macaddr_get(port_id, &imp->mac) != 0)
		memset(&imp->mac, 0, sizeof(imp->mac));
	err = ENOMEM;
	imp->cfg = imp_cfg_new(&p, 1);
	sz = rte_rcu_qsbr_get_memsize(nq);
	imp->rcu = rte_zmalloc_socket("droce_impair_rcu", sz,
				      RTE_CACHE_LINE_SIZE, socket);
	imp->q = rte_zmalloc_socket("droce_impair_qs", nq * sizeof(*imp->q),
				    0, socket);
	if (imp->cfg == NULL || imp->rcu == NULL || imp->q == NULL)
		goto fail;
	if (rte_rcu_qsbr_init(imp->rcu, nq) != 0) {
		err = rte_errno;
		goto fail;
	}
	for (i = 0; i < nq; i++) {
		bool rx = i < imp->nb_rxq;

		imp->q[i] = imp_q_new(imp, socket, rx ? IMP_RX : IMP_TX,
				      (uint16_t)(rx ? i : i - imp->nb_rxq), i);
		if (imp->q[i] == NULL)
			goto fail;
	}
	/* every state is complete before the first callback can run */
	for (i = 0; i < nq; i++) {
		struct imp_q *q = imp->q[i];

		if (q->dir == IMP_RX)
			/* first: closest to the wire, before any capture */
			q->cb = rte_eth_add_first_rx_callback(port_id,
					q->queue_id, imp_rx_cb, q);
		else
			q->cb = rte_eth_add_tx_callback(port_id, q->queue_id,
							imp_tx_cb, q);
		if (q->cb == NULL) {
			err = rte_errno;
			IMP_LOG(ERR, "port %u %s queue %u: cannot add callback: %s",
				port_id, q->dir == IMP_RX ? "rx" : "tx",
				q->queue_id, rte_strerror(err));
			goto fail;
		}
	}
	return imp;
fail:
	droce_impair_detach(imp);
	rte_errno = err;
	return NULL;
}
