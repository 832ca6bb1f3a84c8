/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Internal objects shared by the verbs layer (lib/rdma) and the engine
 * (drivers/rdma/ethroce). Application-visible rdma-core structs come first in
 * each object so that the pointers we hand out are rdma-core's own types.
 *
 * Ownership rules (see doc/architecture.md):
 *  - SQ/RQ rings: the application writes WQEs and the producer index
 *    (doorbell record); the engine reads them and writes the consumer index.
 *  - CQ rings: the engine writes CQEs and flips the owner bit; the
 *    application reads them and writes the consumer index.
 *  - Everything under "engine-owned" is touched by the owning engine only.
 */
#ifndef DROCE_INT_H
#define DROCE_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <pthread.h>
#include <sys/queue.h>
#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>
#include <rte_common.h>
#include <rte_ether.h>
#include <rte_log.h>
#include <rte_spinlock.h>

#include "droce.h"
#include "droce_ab.h"
#include "roce.h"

extern int droce_logtype;
/* Per-packet trace: --log-level=droce.trace:debug (one branch when off). */
extern int droce_trace_logtype;
void droce_trace_pkt(const char *dir, const char *dev,
		     const struct roce_pkt *p);
/* The trace level as last looked at: engines refresh it once per timer
 * tick (droce_trace_refresh) instead of asking rte_log for every frame. */
extern bool droce_trace_on;
static inline void droce_trace_refresh(void)
{
	droce_trace_on = rte_log_can_log(droce_trace_logtype, RTE_LOG_DEBUG);
}
#define DROCE_TRACE(dir, dev, p) do { \
	if (unlikely(droce_trace_on)) \
		droce_trace_pkt(dir, dev, p); \
} while (0)
#define DROCE_LOG(level, fmt, ...) \
	rte_log(RTE_LOG_ ## level, droce_logtype, "droce: " fmt "\n", ##__VA_ARGS__)

/* mbufs an engine allocates per bulk call for the frames it builds, and
 * how many a device keeps at hand (received ones are put back there). */
#define DROCE_MSTASH		16
#define DROCE_MSTASH_CAP	64

/* Device limits (reported by ibv_query_device). */
#define DROCE_MAX_QP		16384
/* From this many QPs on a device, its QPs' lines are cold at each visit
 * (16384 QPs at -t 16: a round of them takes ~65 ms): the engine
 * prefetches QPs ahead, and a post asks for the WQE slot it will write
 * next but one (sq_ahead). */
#define DROCE_MANY_QPS		256
#define DROCE_MAX_MR		65536
#define DROCE_MAX_CQ		16384
#define DROCE_MAX_PD		65536
#define DROCE_MAX_QP_WR		16384
#define DROCE_MAX_CQE		(1 << 20)
#define DROCE_MAX_SGE		16
#define DROCE_MAX_INLINE	512
#define DROCE_MAX_RD_ATOMIC	128
#define DROCE_MAX_MSG		(1u << 31)
/* lcore=app: how many more times a poll that found nothing to do looks at
 * the port before it returns (devarg rx_spin; doc/performance.md,
 * thirty-third round) */
#define DROCE_DEFAULT_RX_SPIN	8
#define DROCE_MAX_RX_SPIN	1024
/* lcore=app: ibv_destroy_qp of a QP that heard from its peer in the last
 * 200 ms drives the engine until the link has been quiet this long, ten
 * times it at most (devarg linger_ms; 0: not at all) */
#define DROCE_DEFAULT_LINGER_MS	50
#define DROCE_MAX_LINGER_MS	1000
/* Packet pacing (ibv_modify_qp_rate_limit, IBV_QP_RATE_LIMIT): the range
 * of rates in kbps and the longest burst a QP may be given, bytes. */
#define DROCE_RATE_MIN_KBPS	1
#define DROCE_RATE_MAX_KBPS	100000000u	/* 100 Gbit/s */
#define DROCE_RATE_MAX_BURST	(16u << 20)
#define DROCE_QPN_BASE		0x11	/* QPN 0/1 are special; rxe starts at 0x11 too */
#define DROCE_MAX_DEVS		16
#define DROCE_NB_NEIGH		64
#define DROCE_MAX_CTX		32	/* open contexts per device */
#define DROCE_INVALID_LKEY	0x100	/* terminates a short receive SGE list (mlx5) */

struct droce_dev;
struct droce_engine;
struct droce_qp;
struct droce_impair;
struct droce_srq;

/* ---------------------------------------------------------------- rings */

/* 64-byte completion entry. owner is written last (release). */
struct droce_cqe {
	uint64_t wr_id;
	uint32_t byte_len;
	uint32_t imm_data;		/* network order, or invalidated rkey */
	uint32_t qp_num;
	uint32_t src_qp;
	uint8_t opcode;			/* enum ibv_wc_opcode */
	uint8_t status;			/* enum ibv_wc_status */
	uint8_t wc_flags;		/* IBV_WC_* flags (all fit in 8 bits) */
	uint8_t sl;
	uint16_t pkey_index;
	uint16_t slid;
	uint32_t vendor_err;
	uint8_t dlid_path_bits;
	uint8_t solicited;		/* for ibv_req_notify_cq(solicited_only) */
	uint8_t rsvd0[2];
	uint64_t timestamp;		/* engine TSC at completion */
	uint8_t rsvd1[15];
	uint8_t owner;
};
_Static_assert(sizeof(struct droce_cqe) == 64, "CQE is 64 bytes");

/* Send WQE: fixed stride of whole 64-byte basic blocks, mlx5 segments. */
#define DROCE_BB		64
#define DROCE_SEG		16
/* ctrl.fm_ce_se */
#define DROCE_WQE_SIGNALED	MLX5_WQE_CTRL_CQ_UPDATE
#define DROCE_WQE_SOLICITED	MLX5_WQE_CTRL_SOLICITED
#define DROCE_WQE_FENCE		MLX5_WQE_CTRL_FENCE
/* ctrl.signature is unused by droce: it carries extra WQE flags. */
#define DROCE_WQE_INLINE	0x01

/* A memory window bind (IBV_WR_BIND_MW), after the control segment. */
struct droce_bind_seg {
	uint32_t mw_key;		/* the window's current key (host order) */
	uint32_t new_rkey;
	uint32_t mr_lkey;		/* 0 with length 0: unbind (type 1) */
	uint32_t access;
	uint64_t addr;
	uint64_t length;
};
#define DROCE_BIND_SEGS		2
_Static_assert(sizeof(struct droce_bind_seg) == DROCE_BIND_SEGS * 16, "bind seg");

/* ------------------------------------------------- a context's objects */

/*
 * What was made through a context, by kind, in the order a context closed
 * with objects left destroys them (users before what they use).
 * ibv_close_device(3) leaves releasing them to the application, but the
 * kernel destroys a closed ucontext's objects, and so does droce: an rkey
 * of a context that is gone reaches nothing, the engine forgets its QPs
 * and never posts an event to it, and the device's counts and huge-page
 * memory come back.
 */
enum droce_obj_kind {
	DROCE_OBJ_QP, DROCE_OBJ_AH, DROCE_OBJ_MW, DROCE_OBJ_SRQ, DROCE_OBJ_MR,
	DROCE_OBJ_CQ, DROCE_OBJ_CHANNEL, DROCE_OBJ_PARENT_DOMAIN, DROCE_OBJ_PD,
	DROCE_OBJ_TD, DROCE_OBJ_KINDS
};

/* An object's place in its context's list of its kind (control path only) */
struct droce_obj {
	struct droce_obj *prev, *next;
};

void droce_obj_add(struct ibv_context *ctx, struct droce_obj *o,
		   enum droce_obj_kind kind);
void droce_obj_del(struct ibv_context *ctx, struct droce_obj *o);
/* The context is being closed: destroying its objects waits for no
 * acknowledgement of events the application will never make. */
bool droce_ctx_closing(struct ibv_context *ctx);
struct ibv_comp_channel *droce_channel_of_obj(struct droce_obj *o);

/* ------------------------------------------------------------- objects */

/* A thread domain (ibv_alloc_td(3)): the application promises that the
 * objects made through it are used by one thread at a time. */
struct droce_td {
	struct ibv_td ibv;
	uint32_t refcnt;		/* parent domains on it */
	struct droce_obj obj;
};

struct droce_pd {
	struct ibv_pd ibv;
	uint32_t refcnt;		/* MRs, MWs, QPs, SRQs, CQs, parent domains on it */
	/* A parent domain (ibv_alloc_parent_domain(3)) has a base, the PD
	 * whose objects it shares: everything checked by PD (an lkey, an
	 * rkey, a QP's) compares against the base. Its thread domain, if
	 * any, lets its QPs, SRQs and CQs skip their locks. */
	struct droce_pd *base;
	struct droce_td *td;
	void *pd_context;
	struct droce_obj obj;
};

/* The PD an object made on ibpd is checked against (a parent domain's
 * base); its reference is counted on ibpd itself (droce_pd_obj). */
static inline struct droce_pd *droce_pd_obj(struct ibv_pd *ibpd)
{
	return container_of(ibpd, struct droce_pd, ibv);
}

static inline struct droce_pd *droce_pd_of(struct ibv_pd *ibpd)
{
	struct droce_pd *pd = droce_pd_obj(ibpd);

	return pd->base ? pd->base : pd;
}

/* Objects made on ibpd may skip their locks (a parent domain with a
 * thread domain). */
static inline bool droce_pd_single_thread(struct ibv_pd *ibpd)
{
	return droce_pd_obj(ibpd)->td != NULL;
}

/* A queue's lock, unless its owner promised one thread at a time (a
 * thread domain, IBV_CREATE_CQ_ATTR_SINGLE_THREADED), as mlx5 skips
 * its own: a locked instruction a post or poll less. */
static inline void droce_qlock(rte_spinlock_t *l, bool nolock)
{
	if (!nolock)
		rte_spinlock_lock(l);
}

/*
 * A spinlock let go by a release store, as DPDK's generic unlock does:
 * the critical section's loads and stores come before it. DPDK 22.11's
 * x86 rte_spinlock_unlock is an XCHG instead, a locked instruction a post
 * and a poll for nothing (x86 orders them without it): on an Intel Xeon
 * 91 % of wr_complete's samples sat right after it, and the release store
 * gave +2.1 % of 64 B WRITEs at perftest's defaults by phase A/B
 * (doc/performance.md, fifty-first round).
 */
static inline void droce_spin_unlock(rte_spinlock_t *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

static inline void droce_qunlock(rte_spinlock_t *l, bool nolock)
{
	if (!nolock)
		droce_spin_unlock(l);
}

/*
 * One entry of the key table: a memory region, or a memory window (which,
 * once bound, names a range of a region under its own rkey). The engine
 * owning the device's QPs changes windows (bind, invalidate); everything
 * else only under drv->exec.
 */
enum droce_key_kind { DROCE_KEY_MR, DROCE_KEY_MW };

/* ibv_dereg_mr's bound on waiting for zero-copy frames to be freed. */
#define DROCE_ZC_DRAIN_NS	(2ull * 1000 * 1000 * 1000)

struct droce_mr {
	union {
		struct ibv_mr ibv;
		struct ibv_mw ibv_mw;
	};
	struct droce_pd *pd;
	uint8_t *host;			/* application address of iova */
	uint64_t iova;
	uint64_t len;
	uint32_t access;		/* IBV_ACCESS_* */
	uint32_t key;
	bool valid;			/* MR: registered; MW: bound */
	uint8_t kind;			/* enum droce_key_kind */
	uint8_t mw_type;		/* 1 or 2 */
	uint32_t mw_qpn;		/* type 2: the QP it is bound to */
	struct droce_mr *parent;	/* MW: the region it is bound to */
	uint32_t nb_bound;		/* MR: windows bound to it */
	/* New (device-unique) whenever what the key names changes:
	 * registration, ibv_rereg_mr, window bind. Engine state that keeps a
	 * pointer through a key across packets (a WRITE under way, queued
	 * READ responses) keeps (key, epoch) too and checks droce_key_live()
	 * before each use: a deregistered, invalidated or changed key fails
	 * it, and the pointer is never used again. */
	uint64_t epoch;
	/* Zero-copy transmit (eth_tx.c, zc_min=): frames whose payload
	 * segment points into this region and has not been freed yet. The
	 * engine adds, the mbuf free callback (any thread) subtracts;
	 * ibv_dereg_mr and a translation-changing ibv_rereg_mr wait for 0. */
	uint32_t zc_inflight;
	bool dying;			/* deregistered, zc frames pending */
	struct droce_obj obj;
};

struct droce_cq {
	union {
		struct ibv_cq cq;
		struct ibv_cq_ex cq_ex;
	};
	struct droce_dev *dev;
	struct droce_cqe *ring;
	uint32_t size;			/* power of two */
	uint32_t log_size;
	uint64_t wc_flags;		/* requested extended fields */
	bool ex;
	uint32_t refcnt;		/* QPs using it */
	volatile uint8_t armed;		/* DROCE_CQ_* (ibv_req_notify_cq) */
	uint16_t moderate_count;	/* ibv_modify_cq: CQEs per event */
	uint16_t moderate_period;	/* accepted, see rdma_cq.c */
	uint32_t since_arm;		/* engine: CQEs since the last arm */
	uint32_t events_delivered;	/* by ibv_get_cq_event */
	uint32_t async_delivered;	/* by ibv_get_async_event */
	/* application side */
	uint32_t ci;
	struct droce_cqe *cur;		/* ibv_start_poll cursor */
	rte_spinlock_t lock;		/* multiple pollers of one CQ (verbs allows it) */
	bool nolock;			/* ... unless promised otherwise */
	struct droce_pd *parent;	/* the parent domain it was made in */
	/* shared: the application's consumer index, read by the engine */
	volatile uint32_t ci_db;
	/* engine-owned */
	uint32_t pi __rte_cache_aligned;
	uint32_t ci_seen;		/* ci_db as last read */
	bool overrun;
	struct droce_obj obj;		/* (the control path's) */
};

enum { DROCE_CQ_DISARMED, DROCE_CQ_ARM_ANY, DROCE_CQ_ARM_SOLICITED };
void droce_cq_event(struct droce_cq *cq, const struct droce_cqe *e);
/* ibv_destroy_cq: its completion events acknowledged (not when closing) */
void droce_cq_wait_events_acked(struct droce_cq *cq);

static inline struct droce_cq *droce_cq_of(struct ibv_cq *cq)
{
	return container_of(cq, struct droce_cq, cq);
}

/*
 * A receive queue: a QP's own or an SRQ's. The application writes WQEs
 * (arrays of mlx5 data segments) and the producer index `db`; the engine
 * claims a WQE when a message starts (copying it, so the slot is free at
 * once) and advances `ci`.
 */
struct droce_wq {
	uint8_t *buf;
	uint64_t *wrid;
	uint32_t cnt;			/* power of two */
	uint32_t stride;
	uint32_t max_sge;
	uint32_t pi_app;		/* under lock */
	rte_spinlock_t lock;
	bool nolock;			/* a thread domain's: no lock */
	struct droce_srq *srq;		/* NULL: a QP's own queue */
	volatile uint32_t db __rte_cache_aligned;	/* producer, application */
	volatile uint32_t ci __rte_cache_aligned;	/* consumer, engine */
	volatile uint32_t limit;	/* SRQ limit armed (0: not armed) */
};

static inline struct mlx5_wqe_data_seg *
droce_wq_slot(const struct droce_wq *wq, uint32_t idx)
{
	return (struct mlx5_wqe_data_seg *)(wq->buf +
		(size_t)(idx & (wq->cnt - 1)) * wq->stride);
}

/* A UD destination. The engine reads the datagram segment the post path
 * wrote from it, never this object (an application can free it). */
struct droce_ah {
	struct ibv_ah ibv;
	struct ibv_ah_attr attr;
	struct droce_obj obj;
};

/* mlx5_wqe_av as droce fills it for UD sends. */
#define DROCE_UD_AV_SEGS	3

struct droce_srq {
	struct ibv_srq ibv;
	struct droce_dev *dev;
	struct droce_pd *pd;
	uint32_t srqn;
	uint32_t refcnt;		/* QPs attached */
	uint32_t async_delivered;	/* by ibv_get_async_event */
	struct droce_wq wq;
	struct droce_obj obj;
};

/*
 * Requester's record of a WQE once the engine started it: 20 bytes, so a
 * window of 16 slots is 5 cache lines, not the 7 of the unpacked 28. With
 * thousands of QPs every visit finds these lines cold (bench.sh's scaling
 * section, performance.md's fortieth round). PSNs are 24 bits; a message of
 * DROCE_MAX_MSG (2^31) at the smallest path MTU (256) is 2^23 packets,
 * so counts of packets fit 24 bits too.
 */
struct droce_swqe_state {
	union {
		struct {
			uint32_t psn_first : 24;
			uint32_t opcode : 8;		/* MLX5_OPCODE_* */
			uint32_t psn_last : 24;		/* READ: last response PSN */
			uint32_t flags : 8;		/* fm_ce_se */
			uint32_t npkts : 24;
			uint32_t status : 8;		/* IBV_WC_SUCCESS unless failed */
			uint32_t rcvd : 24;		/* READ response packets placed */
			uint32_t done : 1;		/* READ/atomic response arrived */
			uint32_t rd_counted : 1;	/* counted in req_rd_outstanding */
			uint32_t length;		/* message length */
		};
		/* A slot (re)started is written as words: the nine
		 * members assigned as bit-fields cost ~14 instructions
		 * more a message (callgrind). Word k holds its 24-bit
		 * member in bits 0-23 and its 8-bit one in bits 24-31
		 * (the SysV ABI's order; test_rc_limits's
		 * swqe_state_layout checks it). */
		uint32_t word[5];
	};
};
_Static_assert(sizeof(struct droce_swqe_state) == 20,
	       "a WQE's state slot packs into 20 bytes");

/* word k of a slot from its 24-bit and its 8-bit member */
static inline uint32_t droce_swqe_word(uint32_t low24, uint32_t high8)
{
	return (low24 & 0xffffffu) | high8 << 24;
}

/* A response the responder owes the requester: READ data or an atomic's
 * original value. Both leave in PSN order through one queue. */
struct droce_read_job {
	bool atomic;
	bool replay;			/* answers a duplicate request */
	uint64_t orig;			/* atomic: value before the operation */
	uint8_t *host;			/* validated source ... */
	uint32_t key;			/* ... through this rkey ... */
	uint64_t epoch;			/* ... while it names the same thing */
	uint32_t len;
	uint32_t sent;
	uint32_t psn;			/* next response PSN */
	uint32_t psn_first;
	uint32_t npkts;
	uint32_t msn;			/* MSN to report in the AETH */
};

/* A recent atomic's result, so a duplicate is answered, never executed
 * twice (IBTA 9.7.5.3.3). */
struct droce_atm_result {
	uint32_t psn;
	bool valid;
	uint64_t orig;
};

/*
 * Response queue: max_dest_rd_atomic originals plus as much room for
 * replays, a power of two. Up to DROCE_READ_JOBS_INLINE jobs (and as many
 * atomic results) live in the QP itself, enough for max_dest_rd_atomic
 * 16 (ConnectX's limit, and what most programs ask for); a QP that asks
 * for more (up to DROCE_MAX_RD_ATOMIC, rxe's 128) gets an array of its
 * own when modify_qp sets it: 20 KiB at 128, which thousands of QPs
 * should not pay for unasked.
 */
#define DROCE_READ_JOBS_INLINE	32

static inline uint32_t droce_read_jobs_for(uint8_t max_dest_rd_atomic)
{
	uint32_t n = rte_align32pow2(2u * max_dest_rd_atomic);

	return n > DROCE_READ_JOBS_INLINE ? n : DROCE_READ_JOBS_INLINE;
}

enum droce_qp_flags {
	DROCE_QPF_ON_ACTIVE = 1u << 0,	/* linked on the engine's active list */
	DROCE_QPF_ACK_PENDING = 1u << 1,
	DROCE_QPF_ARP_WAIT = 1u << 2,
	DROCE_QPF_NAK_SENT = 1u << 3,	/* PSN sequence NAK sent for this epsn */
	DROCE_QPF_FLUSH = 1u << 4,	/* error state: flush what is posted */
	DROCE_QPF_ON_TIMER = 1u << 5,
	DROCE_QPF_REQ_STALL = 1u << 6,	/* a local error waits behind older WQEs */
	DROCE_QPF_RESP_DEAD = 1u << 7,	/* a fatal NAK waits behind owed responses */
	DROCE_QPF_LAST_WQE = 1u << 8,	/* IBV_EVENT_QP_LAST_WQE_REACHED sent */
	DROCE_QPF_ON_RESP = 1u << 9,	/* linked on the engine's responder list */
	DROCE_QPF_ON_PACE = 1u << 10,	/* waiting on the engine's pacing wheel */
};

/*
 * Laid out by who touches what how often: with thousands of QPs each
 * message finds its QP cold, so what one message reads and writes sits in
 * a few adjacent lines (the hardware prefetcher then brings the
 * neighbours), and a line one core writes per message holds nothing the
 * other core reads per message. In order: the verbs object; what both the
 * post path and the engine read per message and rarely change; what the
 * post path writes; the doorbell and consumer index (a line each); what
 * the engine writes per packet; then what is used now and then (pacing,
 * ARP, READ/atomic response queues) and what only the control path reads.
 * (bench.sh's scaling section: 16384 QPs against 16.)
 */
struct droce_qp {
	struct ibv_qp_ex ex;		/* ex.qp_base is the ibv_qp */

	/* ---- read per message by the post path and the engine ----
	 * First the one line a post reads (with thousands of QPs each visit
	 * finds it cold, and the application does not prefetch), then what
	 * only the engine reads (its prefetch asks for both). */
	struct droce_dev *dev __rte_cache_aligned;
	struct droce_engine *eng;
	/* send queue geometry */
	uint8_t *sq_buf;
	uint64_t *sq_wrid;
	uint32_t sq_cnt;		/* WQE slots, power of two */
	uint32_t sq_stride;		/* bytes per WQE slot (multiple of 64) */
	uint32_t sq_max_inline;
	uint32_t sq_max_sge;
	/* attributes (control path writes, engine and posts read) */
	enum ibv_qp_state state;
	int sq_sig_all;
	uint8_t transport;		/* ROCE_TRANSPORT_RC/UC/UD: opcodes it speaks */
	bool is_ex;			/* created with send_ops_flags */
	uint8_t max_rd_atomic;
	uint8_t max_dest_rd_atomic;
	/* the engine's */
	struct droce_pd *pd;
	struct droce_cq *scq;
	struct droce_cq *rcq;
	struct droce_swqe_state *sq_state;	/* engine's, per slot */
	uint64_t send_ops_flags;
	uint32_t dest_qpn;
	uint32_t qkey;			/* UD */
	uint32_t access;		/* qp_access_flags */
	uint32_t mtu;			/* bytes */
	uint32_t sq_max_wr;		/* what the app may have outstanding */
	/* receive queue: own_rq, or an SRQ's */
	struct droce_wq *rq;
	struct droce_srq *srq;
	/* The QP's own requests and ACKs from a byte image (eth_img_build):
	 * made from tmpl when first needed, void when tmpl changes. */
	struct roce_hdr_image img;
	bool img_valid;
	bool img_loop;			/* the peer is this device (loop queue) */
	bool tmpl_ready;		/* destination MAC resolved ... */
	uint32_t neigh_gen;		/* ... and still current while
					 * *neigh_genp == neigh_gen (the
					 * neighbour entry's generation; or
					 * &neigh_gen itself: never changes) */
	const uint32_t *neigh_genp;
	/* (after the validity above, so a requester's send reads the
	 * image's two lines and no third) */
	struct roce_ack_image ack_img;	/* its ACKs', made with img */

	/* ---- written by the post path ---- */
	uint32_t sq_pi_app __rte_cache_aligned;	/* next slot to write (under sq_lock) */
	uint32_t sq_ci_seen;		/* sq_ci as last read (under sq_lock) */
	uint32_t sq_pi_start;		/* ibv_wr_start() position, for abort */
	uint32_t sq_pi_driven;		/* sq_pi_app when a post last turned the engine */
	uint32_t sq_pi_signaled;	/* ... and after the last signalled WQE */
	int wr_err;			/* first error inside a wr_start batch */
	uint8_t *wr_cur;		/* WQE being built by ibv_wr_* (data not set) */
	uint8_t *wr_last;		/* WQE last opened by ibv_wr_* */
	uint32_t wr_ds;			/* wr_cur's segments so far */
	rte_spinlock_t sq_lock;
	bool sq_nolock;			/* a thread domain's: no sq_lock */
	bool sq_ahead;			/* the device has had DROCE_MANY_QPS
					 * QPs (set by the control path) */
	uint32_t sq_ctrl_qpn;		/* qp_num << 8, as each WQE's ctrl segment
					 * carries it: read here, the verbs
					 * object's first line stays cold */
	struct droce_wq own_rq;

	/* Doorbell record and consumer index, shared: each on its own cache
	 * line, so a post (app writes sq_db) and a completion (engine writes
	 * sq_ci) do not bounce one line between the cores twice. */
	volatile uint32_t sq_db __rte_cache_aligned;	/* producer, app */
	volatile uint32_t db_pending;			/* queued on the engine's doorbell ring */
	volatile uint32_t sq_ci __rte_cache_aligned;	/* consumer, engine */

	/* ---- engine-owned, per packet ----
	 * A line each: what a doorbell's activation and every turn read
	 * (lists, the response queue's ends) with the requester's send
	 * state; the requester's ACK state and timer, with the responder's
	 * sequence; the rest of the responder; the counters. A requester's
	 * visit touches the first, second and fourth, a responder's all
	 * four. */
	uint32_t flags __rte_cache_aligned;
	uint32_t tbl_idx;		/* qpn - DROCE_QPN_BASE: its dev->qp_tbl
					 * slot (and the engine's timer cell) */
	uint32_t rd_head;		/* next READ/atomic job to transmit */
	uint32_t rd_tail;		/* next free slot */
	struct droce_qp *active_next;	/* engine active list */
	struct droce_qp *resp_next;	/* engine responder list */
	uint64_t pace_cyc_q16;		/* TSC cycles per byte << 16; 0: not paced */
	/* requester */
	uint32_t req_next;		/* next WQE to start */
	uint32_t req_cur;		/* WQE being transmitted (== req_next when idle) */
	uint32_t req_off;		/* bytes of req_cur already sent */
	uint32_t req_psn;		/* next PSN to send */
	uint32_t req_acked;		/* oldest WQE not yet completed */
	uint32_t req_hwm;		/* one past the newest WQE ever started:
					 * [req_acked, req_hwm) have PSN ranges,
					 * whatever a go-back-N did to req_cur */
	uint32_t req_psn_max;		/* one past the newest PSN ever sent */
	uint32_t req_una_psn;		/* oldest unacknowledged PSN */
	uint32_t req_rd_outstanding;	/* READs/atomics in flight */
	uint32_t req_retries;
	uint64_t req_timer_tsc;		/* retransmit/RNR deadline; 0 = off */
	uint64_t req_stall_mark;	/* the engine's stall_tsc when armed */
	uint64_t req_timeout_tsc;	/* the local ACK timeout in TSC cycles */
	uint8_t timeout;		/* as modify_qp set it (each arming reads it) */
	uint8_t req_timeout_for;	/* timeout + 1 it was taken for (0: none) */
	bool req_rnr_wait;
	bool req_timer_deferred;	/* this ACK timeout was put off once for a stall */
	uint32_t req_rnr_retries;
	/* responder */
	uint32_t resp_epsn;		/* expected PSN */
	uint32_t resp_msn;
	uint32_t resp_ack_psn;		/* last PSN to acknowledge */
	uint8_t resp_ack_syndrome;
	uint8_t resp_last_op;		/* opcode of the last packet accepted */
	bool resp_in_send;		/* inside a multi-packet SEND */
	bool resp_in_write;		/* inside a multi-packet WRITE */
	bool resp_recv_err;		/* current receive WQE failed (LEN_ERR) */
	bool resp_have_wqe;		/* a receive WQE is claimed: */
	uint32_t resp_recv_off;		/* SEND: bytes placed so far */
	uint32_t resp_nsge;
	uint64_t resp_wr_id;
	uint8_t *resp_write_ptr;	/* WRITE: next byte to write, valid */
	uint64_t resp_write_epoch;	/* this epoch (droce_key_live) */
	uint32_t resp_write_key;	/* while this rkey is live at */
	uint32_t resp_write_left;
	uint32_t resp_write_len;	/* WRITE_IMM: total length for the CQE */
	uint32_t rd_replays;		/* of the queued jobs, replays */
	uint32_t atm_next;
	uint64_t last_rx_tsc __rte_cache_aligned;	/* last packet received for this QP */
	struct droce_qp_stats st;	/* engine-written counters */

	/* ---- engine-owned, now and then ---- */
	bool req_seq_nak_seen;		/* a PSN sequence NAK was acted on ... */
	bool req_gap_seen;		/* a READ response gap was re-requested ... */
	uint32_t req_seq_nak_psn;	/* ... for this PSN (a copy is ignored) */
	uint32_t req_gap_psn;		/* ... from this PSN */
	struct droce_qp *arp_next;	/* engine list of QPs waiting for ARP */
	uint64_t arp_poll_tsc;		/* next look at the neighbour table */
	/* Pacing: a virtual clock (GCRA). A packet may leave while
	 * pace_tat - pace_burst_tsc <= now; each one sent moves pace_tat
	 * on by its bytes' worth of TSC cycles at the QP's rate
	 * (pace_cyc_q16, above). */
	uint64_t pace_tat;
	uint64_t pace_burst_tsc;
	uint64_t pace_due;		/* when a waiting QP may send again */
	uint64_t pace_now;		/* the TSC at the last hold ... */
	uint64_t pace_tx_bytes;		/* ... and its device's tx_bytes then */
	LIST_ENTRY(droce_qp) pace_link;	/* engine pacing wheel slot */
	/* The response queue (rd_head, rd_tail index it under rd_mask) and
	 * the results of recent atomics (max_dest_rd_atomic of them used):
	 * the inline arrays below, or one allocation (droce_read_jobs_for) */
	struct droce_read_job *rd_jobs;
	struct droce_atm_result *atm_cache;
	uint32_t rd_mask;
	struct mlx5_wqe_data_seg resp_sge[DROCE_MAX_SGE];
	struct droce_read_job rd_jobs_inline[DROCE_READ_JOBS_INLINE];
	struct droce_atm_result atm_inline[DROCE_READ_JOBS_INLINE];

	/* ---- the control path's ---- */
	int path_mtu;			/* enum ibv_mtu */
	uint32_t sq_psn;		/* initial */
	uint32_t rq_psn;		/* initial */
	uint8_t retry_cnt;
	uint8_t rnr_retry;
	uint8_t min_rnr_timer;
	uint16_t pkey_index;
	uint16_t udp_sport;		/* flow entropy, host order */
	struct ibv_ah_attr ah;
	struct ibv_qp_cap cap;
	union ibv_gid dst_gid;		/* peer: IPv4-mapped or IPv6 link-local */
	struct roce_pkt tmpl;		/* header template: L2..BTH invariants */
	struct roce_hdr_cache hdr_cache;	/* L2..UDP bytes as last built (engine) */
	/* Packet pacing as asked (control path writes under the QP's mutex,
	 * then the engine derives its own figures: qp_rate_changed). */
	uint32_t rate_limit;		/* kbps; 0: not limited */
	uint32_t rate_max_burst;	/* bytes; 0: the engine's default */
	uint16_t rate_typical_pkt;	/* bytes; 0: a path-MTU frame */
	uint32_t async_delivered;	/* by ibv_get_async_event */
	struct droce_obj obj;
};

static inline struct droce_qp *droce_qp_of(struct ibv_qp *qp)
{
	return container_of(qp, struct droce_qp, ex.qp_base);
}

/* --------------------------------------------------------------- device */

struct droce_neigh {
	uint8_t addr[16];		/* GID: IPv6, or IPv4 as ::ffff:a.b.c.d */
	bool used;
	struct rte_ether_addr mac;
	bool resolved;
	uint8_t tries;
	uint32_t gen;			/* bumped when the MAC changes: QP
					 * templates re-resolve lazily */
	uint64_t next_tsc;
	uint64_t deadline_tsc;
};

struct droce_devargs {
	uint32_t ip;			/* network order */
	uint32_t max_mtu;		/* bytes */
	uint32_t port_mtu;		/* the port's real L3 MTU; 0 = ask it */
	int lcore;			/* -1: app mode */
	bool lcore_set;
	char name[IBV_SYSFS_NAME_MAX];
	uint32_t idle_us;
	bool mac_set;
	struct rte_ether_addr mac;
	uint32_t nb_mbuf;
	uint32_t arp_timeout_ms;
	char impair[256];		/* link impairer kvargs ("" = none) */
	uint16_t vlan_tci;		/* 802.1Q: prio << 13 | vid; 0 = untagged */
	uint32_t zc_min;		/* zero-copy tx from this payload size; 0 off */
	uint32_t cycles;		/* time the engine's stages (eng_*_cycles) */
	uint32_t post_drive;		/* lcore=app: posts per engine turn; 0 off */
	uint32_t rx_spin;		/* lcore=app: port looks more in an idle poll */
	uint32_t icrc_batch;		/* ICRCs of image frames at the tx burst */
	uint32_t linger_ms;		/* lcore=app: quiet wanted at ibv_destroy_qp */
};

struct droce_dev {
	struct ibv_device ibv_dev;
	uint32_t index;
	uint16_t port_id;
	struct droce_devargs args;
	struct rte_ether_addr mac;
	union ibv_gid gid[2];
	struct droce_engine *eng;
	struct rte_mempool *pool;
	struct droce_impair *impair;	/* lib/impair on this port, or NULL */
	uint32_t ctx_refcnt;
	struct ibv_context *ctxs[DROCE_MAX_CTX];	/* open contexts (async events) */
	bool link_up;			/* engine: last link state seen */
	bool promisc_ours;		/* droce turned promiscuous rx on */
	bool port_kernel;		/* a kernel interface's: closed at exit */
	bool port_passes_mbufs;		/* net_ring: frames are the sender's
					 * mbufs until the receiver frees them */
	uint8_t ring_pair;		/* 1 + its ring pair's slot (eth_port.c),
					 * 0: not of droce_create_ring_pair */
	uint8_t ring_pair_side;		/* 0: the pair's a, 1: its b */
	bool port_closed;		/* closed so (droce_exit_release) */
	uint64_t link_check_tsc;

	/* object tables (control path writes under the device lock) */
	pthread_mutex_t lock;
	struct droce_qp **qp_tbl;	/* index = qpn - DROCE_QPN_BASE */
	uint32_t qp_next;
	struct droce_mr **mr_tbl;	/* index = key >> 8 */
	uint32_t mr_next;
	uint32_t nb_qp, nb_cq, nb_pd, nb_mr;
	bool many_qps;			/* has had DROCE_MANY_QPS QPs: its QPs'
					 * sq_ahead, from then on */
	uint8_t mr_key_gen;
	uint64_t key_epoch;		/* last droce_mr.epoch handed out (atomic) */

	/* engine-owned */
	struct droce_neigh neigh[DROCE_NB_NEIGH];
	uint32_t neigh_pending;		/* entries used and not resolved: the
					 * ARP timer scans only when > 0 */
	const uint8_t *rx_req_mac;	/* source MAC of the request being
					 * answered (eth_rx_one), else NULL */
	struct rte_mbuf **loopq;	/* frames to our own address */
	uint32_t loopq_len;
	struct rte_mbuf **txq;		/* packets waiting for tx_burst */
	uint32_t txq_len;
	uint32_t txq_cap;
	/* Frames in txq whose ICRC is still due (img_send): all computed
	 * right before the next tx burst (eth_tx_flush), where nothing
	 * separates one frame's chain of multiplications from the next's and
	 * frames of one shape share them, four a register. NULL: each at once
	 * (icrc_batch=0, or no carry-less multiply). */
	uint8_t **icrc_l3;
	uint16_t *icrc_cover;
	uint8_t *icrc_v6;
	uint32_t icrc_n;
	bool icrc_first;		/* the next image frame's ICRC at once */
	uint16_t ip_id;
	uint32_t zc_min;		/* engine: effective zero-copy threshold */
	/* mbufs of pool at hand, one per frame built: taken from the pool in
	 * bulk, or received frames' mbufs put back (eth_rx_release) */
	uint32_t mstash_n;
	struct rte_mbuf *mstash[DROCE_MSTASH_CAP];
	struct droce_dev_stats st;
};

/* ------------------------------------------------- device class / driver */

/*
 * What the verbs layer needs from an engine driver (one today: ethroce, a
 * DPDK ethdev port). The verbs layer never touches packets; the driver never
 * parses verbs arguments.
 */
struct droce_drv_ops {
	/* Configure the port, pool and engine for a new device. */
	int (*dev_probe)(struct droce_dev *dev);
	void (*dev_remove)(struct droce_dev *dev);
	/* Ring the QP's doorbell: the engine will look at its queues. */
	void (*qp_notify)(struct droce_qp *qp);
	/* Run fn(qp/arg) on the owning engine at a safe point and wait. */
	int (*exec)(struct droce_dev *dev, void (*fn)(void *), void *arg);
	/* App-mode: one engine iteration. */
	int (*poll)(struct droce_dev *dev);
	/* App-mode: the turn a post gives the engine (post_drive): what was
	 * posted leaves; receiving is left to the polls. NULL: poll. */
	int (*post_turn)(struct droce_dev *dev);
	/* The engine's view of a QP state change (flush on error...). */
	void (*qp_state_changed)(struct droce_qp *qp, enum ibv_qp_state old);
	/* A thread starts (+1) or stops (-1) sleeping for a completion or
	 * async event: an app-driven engine then runs on its own, promptly. */
	void (*app_waiting)(struct droce_dev *dev, int delta);
	/* On the engine (from exec): the QP's rate_limit fields changed. */
	void (*qp_rate_changed)(struct droce_qp *qp);
	/* The eng_* counters of the engine serving the device. */
	void (*eng_stats)(const struct droce_dev *dev, struct droce_dev_stats *st);
	/* At exit: stop every engine and keeper for good, then close those of
	 * these devices' ports that would leave state in the kernel behind
	 * (port_kernel). Nothing is freed: the program's threads may still
	 * post and poll. Returns the ports closed. */
	uint32_t (*halt)(struct droce_dev **devs, uint32_t nb_devs);
};

extern const struct droce_drv_ops *droce_drv;
void droce_drv_register(const struct droce_drv_ops *ops);

/* ---------------------------------------------------- shared helpers */

/* Devices by index, a destroyed one's slot NULL (rdma_dev.c). */
extern struct droce_dev *droce_devs[DROCE_MAX_DEVS];
extern uint32_t droce_nb_devs;

/* The device at an index an engine met in a doorbell token or a timer
 * cell, or NULL: past the slots in use, or destroyed. */
static inline struct droce_dev *droce_dev_at(uint32_t index)
{
	return index < __atomic_load_n(&droce_nb_devs, __ATOMIC_ACQUIRE) ?
	       __atomic_load_n(&droce_devs[index], __ATOMIC_ACQUIRE) : NULL;
}

struct droce_context {
	struct verbs_context vctx;
	struct droce_dev *dev;
	/* async events */
	int async_fd;			/* eventfd, also ibv_context.async_fd */
	rte_spinlock_t async_lock;
	struct ibv_async_event *async_q;
	uint32_t async_head, async_tail;
	/* what was made through it (droce_obj_add), a list a kind */
	pthread_mutex_t obj_lock;
	struct droce_obj objs[DROCE_OBJ_KINDS];
	bool closing;			/* ibv_close_device under way */
};

static inline struct droce_context *droce_ctx(struct ibv_context *ctx)
{
	return container_of(ctx, struct droce_context, vctx.context);
}

static inline struct droce_dev *droce_dev_of_ctx(struct ibv_context *ctx)
{
	return droce_ctx(ctx)->dev;
}

int droce_async_init(struct droce_context *c);
void droce_async_fini(struct droce_context *c);

/* MR lookup for the engine: NULL unless key, PD, range and rights match. */
static inline struct droce_mr *
droce_mr_lookup(const struct droce_dev *dev, uint32_t key)
{
	uint32_t idx = key >> 8;
	struct droce_mr *mr;

	if (unlikely(idx >= DROCE_MAX_MR))
		return NULL;
	mr = dev->mr_tbl[idx];
	if (unlikely(mr == NULL || mr->key != key || !mr->valid))
		return NULL;
	return mr;
}

/*
 * Translate [iova, iova+len) under key into a host pointer, checking PD,
 * bounds (without overflow) and access rights. len == 0 is always fine and
 * returns a non-NULL dummy when the key is valid.
 */
static inline uint8_t *
droce_mr_translate(const struct droce_dev *dev, const struct droce_pd *pd,
		   uint32_t key, uint64_t iova, uint64_t len, uint32_t need)
{
	struct droce_mr *mr = droce_mr_lookup(dev, key);

	/* A window's rkey is never an lkey (IBTA 10.6.7). */
	if (unlikely(mr == NULL || mr->pd != pd || mr->kind != DROCE_KEY_MR))
		return NULL;
	if (unlikely((mr->access & need) != need))
		return NULL;
	if (unlikely(iova < mr->iova || len > mr->len ||
		     iova - mr->iova > mr->len - len))
		return NULL;
	return mr->host + (iova - mr->iova);
}

/* A fresh epoch for a key whose meaning changes (any thread). */
static inline uint64_t droce_key_epoch_next(struct droce_dev *dev)
{
	return __atomic_add_fetch(&dev->key_epoch, 1, __ATOMIC_RELAXED);
}

/*
 * Is a pointer obtained through key at epoch still good? False once the
 * region is deregistered (the table slot is cleared before the engine is
 * synchronised, so a freed object is never reached), the window
 * invalidated, unbound or bound again, or the region re-registered.
 */
static inline bool droce_key_live(const struct droce_dev *dev, uint32_t key,
				  uint64_t epoch)
{
	const struct droce_mr *mr = droce_mr_lookup(dev, key);

	return mr != NULL && mr->epoch == epoch;
}

/*
 * Translate an rkey from the wire for `qp`: a region in the QP's PD, or a
 * bound window in it (type 2: bound to this very QP), bounds and rights.
 * *epoch: the key's epoch, for droce_key_live() later.
 */
static inline uint8_t *
droce_rkey_translate(const struct droce_dev *dev, const struct droce_pd *pd,
		     uint32_t qpn, uint32_t key, uint64_t iova, uint64_t len,
		     uint32_t need, uint64_t *epoch)
{
	struct droce_mr *mr = droce_mr_lookup(dev, key);

	if (unlikely(mr == NULL || mr->pd != pd))
		return NULL;
	if (mr->kind == DROCE_KEY_MW && mr->mw_type == 2 && mr->mw_qpn != qpn)
		return NULL;
	if (unlikely((mr->access & need) != need))
		return NULL;
	if (unlikely(iova < mr->iova || len > mr->len ||
		     iova - mr->iova > mr->len - len))
		return NULL;
	*epoch = mr->epoch;
	return mr->host + (iova - mr->iova);
}

static inline struct droce_qp *
droce_qp_lookup(const struct droce_dev *dev, uint32_t qpn)
{
	uint32_t idx = qpn - DROCE_QPN_BASE;

	if (unlikely(idx >= DROCE_MAX_QP))
		return NULL;
	return dev->qp_tbl[idx];
}

/*
 * Async events (ibv_get_async_event): queued per context with an eventfd
 * as its pollable async_fd. The engine posts them (rare: a syscall there
 * is fine), any thread may.
 */
void droce_async_event(struct ibv_context *ctx, enum ibv_event_type type,
		       void *object);
/*
 * Before an object goes (ibv_destroy_qp/cq/srq): drop its events not yet
 * read, then wait until those read were acknowledged (libibverbs' rule),
 * unless ctx is being closed: no acknowledgement will come then.
 */
void droce_async_forget(struct ibv_context *ctx, void *object);
void droce_async_wait_acked(struct ibv_context *ctx, uint32_t *delivered,
			    uint32_t *acked, pthread_mutex_t *m,
			    pthread_cond_t *cv);
/* A port event to every context open on the device. */
void droce_port_event(struct droce_dev *dev, enum ibv_event_type type);

/* CQ overrun (IBTA 11.6.3.2: a CQ error, reported once). */
void droce_cq_overrun(struct droce_cq *cq);

/*
 * Engine: the next free CQE of cq, or NULL on overrun. The caller fills it
 * in place (droce_cqe_fill: every field once, no staging copy, no memset)
 * and then publishes it with droce_cq_commit(). The application's ci_db
 * (its cache line) is read only when the ring looks full from the value
 * last seen.
 */
static inline struct droce_cqe *droce_cq_slot(struct droce_cq *cq)
{
	if (unlikely(cq->pi - cq->ci_seen >= cq->size)) {
		cq->ci_seen = __atomic_load_n(&cq->ci_db, __ATOMIC_ACQUIRE);
		if (unlikely(cq->pi - cq->ci_seen >= cq->size)) {
			droce_cq_overrun(cq);
			return NULL;
		}
	}
	return &cq->ring[cq->pi & (cq->size - 1)];
}

/*
 * Every field of a CQE but the owner byte. The reserved bytes are not
 * written: the ring is zeroed when it is allocated (ibv_create_cq and
 * ibv_resize_cq) and nothing ever writes them.
 */
static inline void droce_cqe_fill(struct droce_cqe *d, uint64_t wr_id,
				  uint8_t status, uint8_t opcode,
				  uint32_t byte_len, uint32_t imm_data,
				  uint32_t qp_num, uint32_t src_qp,
				  uint8_t wc_flags, uint8_t solicited,
				  uint64_t timestamp)
{
	d->wr_id = wr_id;
	d->byte_len = byte_len;
	d->imm_data = imm_data;
	d->qp_num = qp_num;
	d->src_qp = src_qp;
	d->opcode = opcode;
	d->status = status;
	d->wc_flags = wc_flags;
	d->sl = 0;
	d->pkey_index = 0;
	d->slid = 0;
	d->vendor_err = 0;
	d->dlid_path_bits = 0;
	d->solicited = solicited;
	d->timestamp = timestamp;
}

/* Publish the CQE droce_cq_slot() gave: the owner byte last, with release
 * ordering, so a poller that sees it sees every field. */
static inline void droce_cq_commit(struct droce_cq *cq, struct droce_cqe *d)
{
	__atomic_store_n(&d->owner,
			 (uint8_t)(((cq->pi >> cq->log_size) & 1) ^ 1),
			 __ATOMIC_RELEASE);
	cq->pi++;
	if (unlikely(cq->armed))
		droce_cq_event(cq, d);	/* the application only reads CQEs */
}

/* Verbs-layer entry points installed in the ops tables. */
int droce_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr,
		    struct ibv_send_wr **bad_wr);
int droce_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr,
		    struct ibv_recv_wr **bad_wr);
int droce_poll_cq(struct ibv_cq *cq, int ne, struct ibv_wc *wc);
void droce_qp_install_wr_ops(struct droce_qp *qp);
void droce_cq_install_ex_ops(struct droce_cq *cq);

/* Send WQE slot accessors. */
static inline uint8_t *droce_sq_slot(const struct droce_qp *qp, uint32_t idx)
{
	return qp->sq_buf + (size_t)(idx & (qp->sq_cnt - 1)) * qp->sq_stride;
}

int droce_parse_devargs(const char *str, struct droce_devargs *a);
/*
 * At exit: every engine halted and the ports over kernel interfaces
 * closed (drv->halt); returns how many were. Memory is left to the
 * process's end.
 */
uint32_t droce_exit_release(void);
/* The process that built an EAL vector with droce_eal_argv (0: none): its
 * EAL's runtime directory goes at exit, device or not (rdma_dev.c). */
extern pid_t droce_eal_argv_pid;
/* A device's counters as droce_dev_stats_get() gives them. */
void droce_dev_stats_read(const struct droce_dev *dev, struct droce_dev_stats *st);
uint32_t droce_key_alloc(struct droce_dev *dev);
struct ibv_mw *droce_alloc_mw(struct ibv_pd *pd, enum ibv_mw_type type);
int droce_dealloc_mw(struct ibv_mw *mw);
int droce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind);
int droce_wq_init(struct droce_wq *wq, uint32_t max_wr, uint32_t max_sge,
		  int socket);
void droce_wq_free(struct droce_wq *wq);
int droce_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr,
			struct ibv_recv_wr **bad_wr);

#endif /* DROCE_INT_H */
