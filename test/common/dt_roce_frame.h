/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A RoCE frame built by lib/roce, not by droce's engine: what a peer (any
 * requester or responder, well-behaved or not) could put on the wire. For
 * tests that are droce's wire peer (they link roce_dep and DPDK).
 */
#ifndef DT_ROCE_FRAME_H
#define DT_ROCE_FRAME_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>
#include <rte_ring.h>

#include "droce.h"
#include "droce_test.h"
#include "roce.h"

/*
 * An mbuf of pool holding p's headers, p->payload_len bytes (a copy of
 * payload, or `fill` repeated when payload is NULL), a zeroed pad and the
 * ICRC; p->pad and p->frame_len are set here. No mbuf, or no room in it,
 * fails the test (CHECK is fatal).
 */
static inline struct rte_mbuf *
dt_roce_frame(struct rte_mempool *pool, struct roce_pkt *p,
	      const void *payload, uint8_t fill)
{
	struct rte_mbuf *m = rte_pktmbuf_alloc(pool);
	uint32_t hlen, len;
	uint8_t *buf;

	CHECK_PTR(m);
	p->pad = (uint8_t)((4 - (p->payload_len & 3)) & 3);
	buf = rte_pktmbuf_mtod(m, uint8_t *);
	hlen = roce_build_hdrs(buf, p);
	len = hlen + p->payload_len + p->pad + ROCE_ICRC_LEN;
	CHECK(len <= rte_pktmbuf_tailroom(m));
	if (payload != NULL)
		memcpy(buf + hlen, payload, p->payload_len);
	else
		memset(buf + hlen, fill, p->payload_len);
	memset(buf + hlen + p->payload_len, 0, p->pad);
	m->data_len = (uint16_t)len;
	m->pkt_len = len;
	p->frame_len = len;
	roce_icrc_store(buf + len - ROCE_ICRC_LEN, roce_icrc_frame(buf, p));
	return m;
}

/*
 * p zeroed, then addressed from src to dst (MACs, IPv4 addresses): TTL 64,
 * DF, the RoCEv2 port, an RC opcode, the default P_Key, QPN and PSN. The
 * caller sets what the opcode carries.
 */
static inline void
dt_roce_pkt_init(struct roce_pkt *p, const uint8_t *src_mac,
		 const uint8_t *dst_mac, const void *src_ip4,
		 const void *dst_ip4, uint8_t op, uint32_t qpn, uint32_t psn)
{
	memset(p, 0, sizeof(*p));
	memcpy(p->src_mac, src_mac, 6);
	memcpy(p->dst_mac, dst_mac, 6);
	p->ttl = 64;
	p->frag_off = 0x4000;
	memcpy(p->src_ip, src_ip4, 4);
	memcpy(p->dst_ip, dst_ip4, 4);
	p->udp_sport = 0xc123;
	p->udp_dport = ROCE_UDP_DPORT;
	p->opcode = ROCE_OPCODE(ROCE_TRANSPORT_RC, op);
	p->pkey = ROCE_DEFAULT_PKEY;
	p->dest_qp = qpn;
	p->psn = psn;
}

/* A frame from device B of dt_init's ring pair to device A (their MACs and
 * IPv4 GIDs), for tests that speak for B while B's own QP stays silent. */
static inline void
dt_pair_pkt_b_to_a(const struct dt_env *env, struct roce_pkt *p, uint8_t op,
		   uint32_t qpn, uint32_t psn)
{
	static const uint8_t mac_a[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x01 };
	static const uint8_t mac_b[6] = { 0x02, 0x00, 0xc6, 0x12, 0x00, 0x02 };

	dt_roce_pkt_init(p, mac_b, mac_a, &env->dev[1].gid[1].raw[12],
			 &env->dev[0].gid[1].raw[12], op, qpn, psn);
}

/*
 * An RC QP on device A (its two CQs of 16 made here) connected, RTS with
 * SQ PSN sq_psn, to a QP number device B does not have: B drops what it
 * sends, and the test answers for B (dt_pair_pkt_b_to_a).
 */
static inline struct ibv_qp *
dt_qp_to_silent_b(struct dt_env *env, struct dt_cq *sa, struct dt_cq *ra,
		  const struct dt_conn_cfg *cc, uint32_t ghost_qpn,
		  uint32_t sq_psn)
{
	struct dt_dev *a = &env->dev[0];
	struct dt_qp_cfg qc;
	struct ibv_qp *qp;

	dt_cq_create(a, 16, false, sa);
	dt_cq_create(a, 16, false, ra);
	dt_qp_cfg_default(&qc);
	qp = dt_qp_create(a, sa->cq, ra->cq, &qc, NULL);
	CHECK_PTR(qp);
	CHECK_OK(dt_qp_to_init(qp, cc));
	CHECK_OK(dt_qp_to_rtr(qp, cc, &env->dev[1].gid[1], ghost_qpn, 0x777));
	CHECK_OK(dt_qp_to_rts(qp, cc, sq_psn));
	return qp;
}

/* A pool for the frames a test builds with dt_roce_frame (63 mbufs). */
static inline struct rte_mempool *dt_frame_pool(const char *name)
{
	struct rte_mempool *pool =
		rte_pktmbuf_pool_create(name, 63, 0, 0,
					RTE_MBUF_DEFAULT_BUF_SIZE,
					SOCKET_ID_ANY);

	CHECK_PTR(pool);
	return pool;
}

/*
 * The end of a silent-peer test: the QP of dt_qp_to_silent_b, its CQs, the
 * MR the test registered, the frame pool (every frame given to the engine
 * has come back by now), the pair (dt_fini) and the test's buffer. Returns
 * the exit status after printing "<name>: PASSED" or "FAILED".
 */
static inline int
dt_silent_b_finish(struct dt_env *env, const char *name, struct ibv_qp *qp,
		   struct dt_cq *sa, struct dt_cq *ra, struct ibv_mr *mr,
		   struct rte_mempool *pool, void *buf)
{
	CHECK_OK(ibv_destroy_qp(qp));
	CHECK_OK(ibv_dereg_mr(mr));
	dt_cq_destroy(sa);
	dt_cq_destroy(ra);
	rte_mempool_free(pool);
	dt_fini(env);
	free(buf);
	printf("%s: %s\n", name, dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}

/* Onto the wire towards A: the B->A ring of the pair. */
static inline void dt_pair_inject_to_a(struct rte_mbuf *m)
{
	struct rte_ring *ba = rte_ring_lookup("droce_pair0_ba");

	CHECK_PTR(ba);
	CHECK_EQ(rte_ring_enqueue(ba, m), 0);
}

/* Onto the wire towards A in one burst: the n frames onto the B->A ring
 * of the pair at once (A's next receive takes them together). */
static inline void dt_pair_inject_burst_to_a(struct rte_mbuf **m,
					     unsigned int n)
{
	struct rte_ring *ba = rte_ring_lookup("droce_pair0_ba");

	CHECK_PTR(ba);
	CHECK_EQ(rte_ring_enqueue_bulk(ba, (void **)m, n, NULL), n);
}

/* The frame made damaged: its ICRC's last byte flipped. One segment (as
 * dt_roce_frame makes them), so that a receiver may check it at placement
 * (eth_rx_one takes one segment only). */
static inline void dt_frame_damage(struct rte_mbuf *m)
{
	CHECK_EQ(m->nb_segs, 1u);
	rte_pktmbuf_mtod(m, uint8_t *)[m->data_len - 1] ^= 0x5a;
}

/*
 * Until device d gave `want` more ICRC verdicts (frames counted received
 * or damaged) than in s0, or a second, then 20 ms for whatever it would
 * answer; cq, polled on the way (that drives an app-driven engine), must
 * stay empty. s1: d's counters after.
 */
static inline void dt_wait_verdicts(struct dt_dev *d, struct dt_cq *cq,
				    const struct droce_dev_stats *s0,
				    uint64_t want, struct droce_dev_stats *s1)
{
	struct ibv_wc wc[2];
	double t = dt_now();

	do {
		CHECK_EQ(dt_cq_poll(cq, wc, 2), 0);
		usleep(1000);
		CHECK_OK(droce_dev_stats_get(d->ctx, s1));
	} while (s1->rx_pkts + s1->rx_icrc_err - s0->rx_pkts - s0->rx_icrc_err <
		 want && dt_now() - t < 1.0);
	usleep(20000);
	CHECK_EQ(dt_cq_poll(cq, wc, 2), 0);
	CHECK_OK(droce_dev_stats_get(d->ctx, s1));
}

/* Receive counters from s0 to s1: frames taken, found damaged, and checked
 * at placement (good or damaged), as expected. */
#define DT_CHECK_RX_DELTA(s0, s1, pkts, icrc_err, icrc_late) do {	\
	CHECK_EQ((s1).rx_pkts - (s0).rx_pkts, (uint64_t)(pkts));	\
	CHECK_EQ((s1).rx_icrc_err - (s0).rx_icrc_err, (uint64_t)(icrc_err)); \
	CHECK_EQ((s1).rx_icrc_late - (s0).rx_icrc_late, (uint64_t)(icrc_late)); \
} while (0)

/* Every byte of buf[0, size): data[i - start] inside the n ranges
 * {start, length} (data as long as the longest), fill elsewhere. */
static inline void dt_check_ranges(const uint8_t *buf, uint32_t size,
				   uint8_t fill, const uint8_t *data,
				   const uint32_t (*ranges)[2], int n)
{
	for (uint32_t i = 0; i < size; i++) {
		uint8_t want = fill;

		for (int r = 0; r < n; r++)
			if (i >= ranges[r][0] && i < ranges[r][0] + ranges[r][1])
				want = data[i - ranges[r][0]];
		if (buf[i] != want) {
			DT_FAIL_(1, "byte %u of the buffer is 0x%02x, not 0x%02x",
				 i, buf[i], want);
			return;
		}
	}
}

/* An ACK or NAK (syndrome, MSN) from B's side to A's QP qpn, built from
 * pool and put on the wire towards A. */
static inline void dt_pair_aeth_to_a(const struct dt_env *env,
				     struct rte_mempool *pool, uint32_t qpn,
				     uint32_t psn, uint8_t syndrome,
				     uint32_t msn)
{
	struct roce_pkt p;

	dt_pair_pkt_b_to_a(env, &p, ROCE_OP_ACK, qpn, psn);
	p.aeth_syndrome = syndrome;
	p.aeth_msn = msn;
	dt_pair_inject_to_a(dt_roce_frame(pool, &p, NULL, 0));
}

#endif
