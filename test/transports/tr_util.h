/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers of the transport tests (UD, UC, SRQ, loopback) on top of
 * test/common (droce_test.h): QPs of any type, the UD and UC state
 * transitions with exactly the attribute masks ibv_modify_qp(3) lists for
 * them, async events with a bounded wait on the context's async_fd, byte
 * comparisons and device-counter snapshots.
 */
#ifndef TR_UTIL_H
#define TR_UTIL_H

#include <stdbool.h>
#include <stdint.h>
#include <infiniband/verbs.h>

#include "droce.h"
#include "droce_test.h"

/* ibv_modify_qp(3), IBV_QPT_UD column */
#define TR_MASK_UD_INIT (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | \
			 IBV_QP_QKEY)
#define TR_MASK_UD_RTR  (IBV_QP_STATE)
#define TR_MASK_UD_RTS  (IBV_QP_STATE | IBV_QP_SQ_PSN)
/* ibv_modify_qp(3), IBV_QPT_UC column */
#define TR_MASK_UC_INIT (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT | \
			 IBV_QP_ACCESS_FLAGS)
#define TR_MASK_UC_RTR  (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU | \
			 IBV_QP_DEST_QPN | IBV_QP_RQ_PSN)
#define TR_MASK_UC_RTS  (IBV_QP_STATE | IBV_QP_SQ_PSN)

/* The size of the GRH area at the start of every UD receive buffer. */
#define TR_GRH 40

struct tr_qp_cfg {
	enum ibv_qp_type type;
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	int sq_sig_all;
	uint64_t send_ops_flags;	/* 0: ibv_create_qp() */
	struct ibv_srq *srq;
	struct ibv_pd *pd;		/* NULL: the device's */
};

void tr_qp_cfg_default(struct tr_qp_cfg *c, enum ibv_qp_type type);
/* NULL + errno on failure (not fatal). */
struct ibv_qp *tr_qp_create(struct dt_dev *d, struct ibv_cq *scq,
			    struct ibv_cq *rcq, const struct tr_qp_cfg *c,
			    struct ibv_qp_cap *cap_out);

/* UD: RESET -> INIT (qkey) -> RTR -> RTS (sq_psn). Fatal on failure. */
void tr_ud_up(struct ibv_qp *qp, uint32_t qkey, uint32_t sq_psn);

/* UC: connect qa <-> qb (INIT, RTR, RTS on both), dgid = the peer's GID
 * index 1 (the same device for a loopback pair). psn_a = qa's SQ PSN. */
void tr_uc_connect(struct dt_dev *da, struct ibv_qp *qa, uint32_t psn_a,
		   struct dt_dev *db, struct ibv_qp *qb, uint32_t psn_b,
		   enum ibv_mtu mtu, int access);

/* An address handle to d's GID index 1 from sgid index 1; fatal. */
struct ibv_ah *tr_ah_to(struct dt_dev *from, struct dt_dev *to);

/* Post one receive of n pieces; fatal on failure. */
void tr_post_recv(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge,
		  int n);
void tr_post_srq_recv(struct ibv_srq *srq, uint64_t wr_id,
		      struct ibv_sge *sge, int n);

/*
 * Async events. tr_async_wait(): poll() the async_fd for at most
 * timeout_ms; on an event, ibv_get_async_event() into *ev (the caller
 * acks) and return true; false on timeout. tr_async_none(): no event may
 * arrive within ms (fails otherwise, printing it).
 */
bool tr_async_wait(struct ibv_context *ctx, int timeout_ms,
		   struct ibv_async_event *ev);
void tr_async_expect_none_at(const char *file, int line,
			     struct ibv_context *ctx, int ms, const char *what);
#define tr_async_none(ctx, ms, what) \
	tr_async_expect_none_at(__FILE__, __LINE__, ctx, ms, what)
const char *tr_event_name(enum ibv_event_type t);

/* Compare; on a mismatch print where and return false (counts a failure). */
bool tr_cmp_at(const char *file, int line, const char *what,
	       const uint8_t *got, const uint8_t *exp, size_t len);
#define TR_CMP(what, got, exp, len) \
	tr_cmp_at(__FILE__, __LINE__, what, got, exp, len)
/* Every byte of [p, p+len) equals c. */
bool tr_all_at(const char *file, int line, const char *what,
	       const uint8_t *p, size_t len, uint8_t c);
#define TR_ALL(what, p, len, c) tr_all_at(__FILE__, __LINE__, what, p, len, c)

/* Device counters. */
struct droce_dev_stats tr_stats(struct dt_dev *d);
#define TR_DELTA(now, before, field) ((now).field - (before).field)

/* Poll until n completions or timeout; fatal when fewer arrive. */
void tr_wait_n_at(const char *file, int line, struct dt_cq *c,
		  struct ibv_wc *wc, int n, const char *what);
#define TR_WAIT(c, wc, n, what) tr_wait_n_at(__FILE__, __LINE__, c, wc, n, what)
/* Nothing may complete within ms (fails, printing what did). */
void tr_quiet_at(const char *file, int line, struct dt_cq *c, int ms,
		 const char *what);
#define TR_QUIET(c, ms, what) tr_quiet_at(__FILE__, __LINE__, c, ms, what)

void tr_sleep_ms(int ms);

/* An ethdev port's transmitted-frame counter (rte_eth_stats opackets). */
uint64_t tr_port_opackets(struct dt_dev *d);

/*
 * A scatter/gather layout: total bytes in 1..max_pieces SGEs (0 or 1 for
 * total 0) of random lengths, with random gaps, from offset base of buf;
 * [start, end) is the area the pieces and their gaps lie in (end has a
 * 32-byte margin and is checked against bufsz).
 */
#define TR_PIECES 4
struct tr_layout {
	int n;
	struct ibv_sge sge[TR_PIECES];
	uint32_t off[TR_PIECES];
	uint32_t start, end;
};

void tr_make_layout(uint8_t *buf, uint32_t lkey, size_t bufsz, uint32_t base,
		    uint32_t total, uint32_t max_pieces, struct tr_layout *L);
/* data written into the pieces of L, in order */
void tr_put_stream(uint8_t *buf, const struct tr_layout *L, const uint8_t *data);
/* The first `used` bytes of L's pieces equal exp; every other byte of the
 * area (gaps, margins, the rest of the pieces) is still the canary. */
void tr_check_scatter(const uint8_t *buf, const struct tr_layout *L,
		      const uint8_t *exp, uint32_t used, uint8_t canary,
		      const char *what);

#endif /* TR_UTIL_H */
