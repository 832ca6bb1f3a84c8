/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared set-up of the engine fuzzers (fuzz_rx, fuzz_post): the EAL without
 * hugepages, a droce ring pair in app-driven mode, and on it a fixed set of
 * PDs, MRs (each inside canary bytes; some must never change at all), CQs,
 * an SRQ and connected RC QP pairs. Device A (198.18.0.1) is the one under
 * attack; device B (198.18.0.2) holds the peer QPs.
 *
 * Between inputs fz_reset() brings every QP back to a freshly connected
 * state (RESET -> INIT -> RTR -> RTS with fixed PSNs, receives posted), so
 * that each input runs against the same starting point and a crash
 * reproduces from its input file alone.
 *
 * The harnesses link the static libraries of lib/rdma and the ethroce
 * engine (not libdroce.so) to reach internals: eth_rx_one(), a QP's rings.
 */
#ifndef FZ_ENV_H
#define FZ_ENV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "eth_int.h"

#define FZ_NQP		4	/* connected pairs */
#define FZ_CANARY	64	/* canary bytes on each side of a buffer */
#define FZ_CANARY_BYTE	0xca

/* MRs of device A, by role. */
enum fz_mr_id {
	FZ_MR_RW,	/* all remote rights: target of remote WRITE/READ/atomics */
	FZ_MR_RO,	/* REMOTE_READ only: must never change */
	FZ_MR_RECV,	/* LOCAL_WRITE: receive buffers */
	FZ_MR_LOCAL,	/* LOCAL_WRITE: A's own requests (gather, READ results) */
	FZ_MR_NONE,	/* no rights at all: must never change */
	FZ_MR_DEAD,	/* registered, then deregistered: must never change */
	FZ_MR_OTHERPD,	/* all rights, but on another PD: must never change */
	FZ_MR_HI,	/* all rights, iova just below 2^64 (wrap checks) */
	FZ_MR_B_LOCAL,	/* device B: its requests' buffers and remote target */
	FZ_MR_B_RECV,	/* device B: receive buffers */
	FZ_NMR
};

struct fz_mr {
	const char *name;
	struct ibv_mr *mr;	/* NULL once deregistered */
	uint8_t *alloc;		/* canary | buf | canary */
	uint8_t *buf;
	size_t len;
	uint64_t iova;
	uint32_t key;		/* stays known after deregistration */
	int access;
	bool immutable;		/* content must stay the fill pattern */
	bool on_b;
};

struct fz_qp {
	struct ibv_qp *qp;	/* on A */
	struct ibv_qp *peer;	/* on B */
	struct droce_qp *dq;
	struct droce_qp *dpeer;
	enum ibv_mtu mtu;
	int access;		/* A's qp_access_flags */
	uint32_t psn_a;		/* A's SQ PSN = B's RQ PSN */
	uint32_t psn_b;		/* B's SQ PSN = A's RQ PSN */
	bool srq;		/* A's receives come from the SRQ */
	/* A's SQ ring, moved into malloc()ed memory so that ASan sees any
	 * access outside it (the original is restored before destroy). */
	uint8_t *sq_orig;
	uint8_t *sq_fz;
};

struct fz_env {
	struct ibv_device **list;
	struct ibv_context *ctx_a, *ctx_b;
	struct droce_dev *dev_a, *dev_b;
	struct droce_engine *eng;
	struct ibv_pd *pd_a, *pd_a2, *pd_b;
	struct ibv_cq *cq_a, *cq_b;
	struct ibv_srq *srq;
	struct fz_mr mr[FZ_NMR];
	struct fz_qp q[FZ_NQP];
	struct rte_mempool *pool;	/* mbufs the harness injects */
	uint32_t ip_a, ip_b;		/* network order */
	bool verbose;
	/* FZ_AVOID_OPEN_BUGS=1: steer around the triggers of bugs that are
	 * reported and not fixed yet (doc/security.md, "Open findings"), so
	 * that a fuzz run looks for new ones; each place says which bug and
	 * goes with its fix. The regression inputs run without it. */
	bool avoid_open_bugs;
	bool paced;			/* fz_pace() ran since the last reset */
};

extern struct fz_env fz;

/* Start the EAL and build everything (once). Exits on failure. */
void fz_env_init(const char *prog);
/* Bring every QP back to a freshly connected state; drain CQs. */
void fz_reset(void);
/* Run the app engine n times (both devices share it). */
void fz_poll(int n);
/* Poll until nothing moved for a few iterations (bounded). */
void fz_settle(void);
/* Drain both CQs (completions are counted, not checked). */
void fz_drain_cqs(void);
/* abort() unless every canary and every immutable MR is intact. */
void fz_check(const char *when);
/* Post receives on every QP (and top up the SRQ). */
void fz_post_recvs(void);
/* After ibv_dereg_mr(): free the buffer, register a new one (new key). */
void fz_mr_renew(int id);
/* Pace qp (ibv_modify_qp_rate_limit) by sel: bits 0-2 the rate, from
 * 1 kbit/s (one packet, then seconds on the pacing wheel) to 100 Gbit/s;
 * bit 3 a burst of 1 byte and typical packets of 64 (else the defaults).
 * fz_reset() takes every rate off again. */
void fz_pace(struct ibv_qp *qp, unsigned int sel);
/* Until the next fz_reset(), the engine prefetches ahead as it does from
 * ETH_PREFETCH_QPS QPs on a device (the harness has four). */
void fz_prefetch_always(void);

/*
 * An mbuf chain holding `len` bytes of `data`, each segment in its own
 * exact-size malloc() buffer (attached as an external buffer), so that
 * ASan reports a read past the frame. seg1: length of the first segment
 * (0 = all in one). fz_mbuf_free() frees the chain and the buffers.
 */
struct rte_mbuf *fz_mbuf(const uint8_t *data, uint32_t len, uint32_t seg1);
void fz_mbuf_free(struct rte_mbuf *m);

/* Engine lock of the app engine (the keeper thread must not run while
 * the harness calls into the engine directly). */
void fz_lock(void);
void fz_unlock(void);

/*
 * The harnesses' input, read front to back: big-endian fields, missing
 * bytes read as zero (each byte is taken in its own statement, so the
 * order does not rest on the compiler's order of evaluation).
 */
struct fz_in {
	const uint8_t *p;
	size_t n;
};

static inline uint8_t fz_u8(struct fz_in *in)
{
	uint8_t v = 0;

	if (in->n) {
		v = *in->p++;
		in->n--;
	}
	return v;
}

static inline uint16_t fz_u16(struct fz_in *in)
{
	uint16_t hi = fz_u8(in);

	return (uint16_t)(hi << 8 | fz_u8(in));
}

static inline uint32_t fz_u32(struct fz_in *in)
{
	uint32_t hi = fz_u16(in);

	return hi << 16 | fz_u16(in);
}

static inline uint64_t fz_u64(struct fz_in *in)
{
	uint64_t hi = fz_u32(in);

	return hi << 32 | fz_u32(in);
}

#endif /* FZ_ENV_H */
