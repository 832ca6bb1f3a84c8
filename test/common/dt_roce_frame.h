/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A RoCE frame built by lib/roce, not by droce's engine: what a peer (any
 * requester or responder, well-behaved or not) could put on the wire. For
 * tests that are droce's wire peer (they link roce_dep and DPDK).
 */
#ifndef DT_ROCE_FRAME_H
#define DT_ROCE_FRAME_H

#include <string.h>

#include <rte_mbuf.h>
#include <rte_mempool.h>

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

#endif
