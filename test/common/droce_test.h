/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce test helpers: no mocks, real devices. Every test links this small
 * library and libdroce; verbs come from rdma-core's <infiniband/verbs.h>.
 *
 *  - a seeded RNG (DROCE_TEST_SEED, else time; the seed is always printed)
 *  - CHECK_* (fatal) and EXPECT_* (count and go on) macros that print
 *    file:line and both values
 *  - EAL + ring-pair bring-up and teardown (dt_init / dt_fini)
 *  - RC QP creation and the documented RESET->INIT->RTR->RTS sequence
 *  - CQ polling for both ibv_poll_cq and the extended CQ, with bounded waits
 *  - a full work-completion checker
 *
 * Exit codes follow meson: 0 pass, 77 skip (after "SKIPPED: reason"),
 * anything else fail.
 */
#ifndef DROCE_TEST_H
#define DROCE_TEST_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <infiniband/verbs.h>

#ifdef __cplusplus
extern "C" {
#endif

#define DT_EXIT_SKIP 77

/* Every wait for a completion is bounded by this (seconds). */
#define DT_WAIT_S 10.0

/* ------------------------------------------------------------------ */
/* Failure reporting                                                   */

extern unsigned int dt_failures;

void dt_report(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Print the seed and a FAIL line, then _exit(1). */
__attribute__((noreturn)) void dt_abort(void);
/* Called by dt_abort() before exiting (e.g. to dump droce counters). */
void dt_set_abort_hook(void (*fn)(void));
/* Print "SKIPPED: <reason>" and exit(77). */
__attribute__((noreturn)) void dt_skip(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));

#define DT_FAIL_(fatal, ...) do {					\
		dt_report(__FILE__, __LINE__, __VA_ARGS__);		\
		if (fatal)						\
			dt_abort();					\
	} while (0)

#define DT_COND_(fatal, cond) do {					\
		if (!(cond))						\
			DT_FAIL_(fatal, "%s", #cond);			\
	} while (0)

#define DT_EQ_(fatal, a, b) do {					\
		unsigned long long _dt_a = (unsigned long long)(a);	\
		unsigned long long _dt_b = (unsigned long long)(b);	\
		if (_dt_a != _dt_b)					\
			DT_FAIL_(fatal, "%s == %s: got %lld (0x%llx), "	\
				 "expected %lld (0x%llx)", #a, #b,	\
				 (long long)_dt_a, _dt_a,		\
				 (long long)_dt_b, _dt_b);		\
	} while (0)

#define DT_NE_(fatal, a, b) do {					\
		unsigned long long _dt_a = (unsigned long long)(a);	\
		unsigned long long _dt_b = (unsigned long long)(b);	\
		if (_dt_a == _dt_b)					\
			DT_FAIL_(fatal, "%s != %s: both %lld (0x%llx)",	\
				 #a, #b, (long long)_dt_a, _dt_a);	\
	} while (0)

#define DT_CMP_(fatal, a, op, b) do {					\
		long long _dt_a = (long long)(a);			\
		long long _dt_b = (long long)(b);			\
		if (!(_dt_a op _dt_b))					\
			DT_FAIL_(fatal, "%s %s %s: %lld vs %lld",	\
				 #a, #op, #b, _dt_a, _dt_b);		\
	} while (0)

/* A verbs call that returns 0 or an errno value (ibv_modify_qp,
 * ibv_post_send, ibv_dealloc_pd...). */
#define DT_RET_(fatal, call, exp) do {					\
		int _dt_r = (call);					\
		int _dt_e = (exp);					\
		if (_dt_r != _dt_e)					\
			DT_FAIL_(fatal, "%s returned %d (%s), expected %d (%s)", \
				 #call, _dt_r, dt_errstr(_dt_r),	\
				 _dt_e, dt_errstr(_dt_e));		\
	} while (0)

/* A constructor that returns NULL and sets errno on failure. */
#define DT_NULL_ERRNO_(fatal, call, exp) do {				\
		errno = 0;						\
		void *_dt_p = (void *)(call);				\
		int _dt_err = errno;					\
		int _dt_e = (exp);					\
		if (_dt_p != NULL)					\
			DT_FAIL_(fatal, "%s succeeded, expected NULL with " \
				 "errno %d (%s)", #call, _dt_e,		\
				 dt_errstr(_dt_e));			\
		else if (_dt_err != _dt_e)				\
			DT_FAIL_(fatal, "%s: errno %d (%s), expected %d (%s)", \
				 #call, _dt_err, dt_errstr(_dt_err),	\
				 _dt_e, dt_errstr(_dt_e));		\
		dt_null_leak_guard(_dt_p);				\
	} while (0)

#define CHECK(cond)		DT_COND_(1, cond)
#define CHECK_EQ(a, b)		DT_EQ_(1, a, b)
#define CHECK_NE(a, b)		DT_NE_(1, a, b)
#define CHECK_CMP(a, op, b)	DT_CMP_(1, a, op, b)
#define CHECK_RET(call, exp)	DT_RET_(1, call, exp)
#define CHECK_OK(call)		DT_RET_(1, call, 0)
#define CHECK_NULL_ERRNO(c, e)	DT_NULL_ERRNO_(1, c, e)
#define CHECK_PTR(p) do {						\
		if ((p) == NULL)					\
			DT_FAIL_(1, "%s returned NULL, errno %d (%s)",	\
				 #p, errno, dt_errstr(errno));		\
	} while (0)

#define EXPECT(cond)		DT_COND_(0, cond)
#define EXPECT_EQ(a, b)		DT_EQ_(0, a, b)
#define EXPECT_NE(a, b)		DT_NE_(0, a, b)
#define EXPECT_CMP(a, op, b)	DT_CMP_(0, a, op, b)
#define EXPECT_RET(call, exp)	DT_RET_(0, call, exp)
#define EXPECT_OK(call)		DT_RET_(0, call, 0)
#define EXPECT_NULL_ERRNO(c, e)	DT_NULL_ERRNO_(0, c, e)

const char *dt_errstr(int e);
const char *dt_wc_status_name(enum ibv_wc_status s);
const char *dt_wc_opcode_name(enum ibv_wc_opcode o);
/* When a "must fail" constructor unexpectedly succeeded there is nothing
 * sensible to free it with generically; remember it so the leak is
 * visible in the log. */
void dt_null_leak_guard(void *p);

/* Abort the whole test after this many seconds (SIGALRM), whatever it is
 * blocked in. */
void dt_watchdog(unsigned int seconds);

/* Monotonic seconds. */
double dt_now(void);
/* How many ethdev ports exist (what a refused or destroyed device's ports
 * must give back). */
int dt_nb_ports(void);

/* ------------------------------------------------------------------ */
/* Seeded RNG                                                          */

/* Reads DROCE_TEST_SEED (decimal or 0x hex) or uses the time; prints it. */
uint64_t dt_seed_init(void);
uint64_t dt_seed(void);
uint64_t dt_rand64(void);
/* Uniform in [lo, hi] (inclusive). */
uint64_t dt_rand_range(uint64_t lo, uint64_t hi);
/* true with probability num/den */
bool dt_chance(unsigned int num, unsigned int den);
void dt_fill_random(void *buf, size_t len);

/* ------------------------------------------------------------------ */
/* Environment: EAL, ring pair, two devices                            */

struct dt_dev {
	struct ibv_device *dev;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_device_attr attr;
	struct ibv_port_attr port;
	union ibv_gid gid[2];		/* index 0 link-local, 1 IPv4-mapped */
	int port_id;			/* ethdev port */
};

struct dt_env {
	struct ibv_device **list;
	int ndev;
	struct dt_dev dev[2];
};

/*
 * rte_eal_init("-l 0-1 --in-memory --no-pci --log-level=*:warning"
 * + $DROCE_EAL_EXTRA_ARGS if set (devtools/run-tests.sh), else
 * + "--no-huge -m 1024" if DROCE_NO_HUGE=1), droce_create_ring_pair(a, b)
 * (NULL, NULL: the documented defaults), ibv_get_device_list (must be 2),
 * open both, query device/port/GIDs, allocate one PD on each.
 * Skips (77) when the EAL cannot start here; fails on anything else.
 */
void dt_init(struct dt_env *env, const char *prog,
	     const char *devargs_a, const char *devargs_b);
/* Open one device as dt_init does: context, device/port/GID queries, a PD,
 * its ethdev port id. Fatal on failure. */
void dt_dev_open(struct dt_dev *d, struct ibv_device *dev);
/* Only the EAL part of dt_init (for tests that build their own ports). */
void dt_eal_init(const char *prog);
/* dt_fini calls fn after droce_cleanup(), before rte_eal_cleanup() (to
 * free what the test created on the EAL: rings, pools). */
void dt_set_fini_hook(void (*fn)(void));
/* Dealloc the PDs, close the devices, free the list, droce_cleanup(),
 * rte_eal_cleanup(). Checks every return value. */
void dt_fini(struct dt_env *env);
/* dt_fini, then the verdict ("<prog>: PASSED", or FAILED with the count
 * and the seed that reproduces it): main's exit status. */
int dt_finish(struct dt_env *env);
/* Print droce's per-device counters (debugging aid on failure). */
void dt_dump_stats(struct dt_env *env);

/* ------------------------------------------------------------------ */
/* CQs: one wrapper for classic and extended CQs                       */

/* wc_flags requested for extended CQs by dt_cq_create(ex=true) */
#define DT_CQ_EX_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
			   IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP)

struct dt_cq {
	struct ibv_cq *cq;
	struct ibv_cq_ex *cqx;		/* NULL for a classic CQ */
	uint64_t wc_flags;
};

void dt_cq_create(struct dt_dev *d, int cqe, bool ex, struct dt_cq *out);
void dt_cq_destroy(struct dt_cq *c);
/*
 * Poll up to n completions into wc[] (ibv_poll_cq, or start/next/end_poll
 * and ibv_wc_read_* for an extended CQ). Fields an extended CQ was not
 * asked for are left as 0xa5 bytes. Returns the number polled or a
 * negative value on error.
 */
int dt_cq_poll(struct dt_cq *c, struct ibv_wc *wc, int n);
/* Poll until exactly n completions have been collected or timeout_s has
 * elapsed; returns the number collected (prints a message on timeout). */
int dt_wait_wc(struct dt_cq *c, struct ibv_wc *wc, int n, double timeout_s,
	       const char *what);
/* Poll once: returns the number of completions found (printed, and
 * consumed), 0 when the CQ is empty as expected. */
int dt_cq_drain_unexpected(struct dt_cq *c, const char *what);

void dt_print_wc(FILE *f, const char *prefix, const struct ibv_wc *wc);

/* ------------------------------------------------------------------ */
/* Work-completion checker                                             */

#define DT_ANY (-1LL)

struct dt_wc_exp {
	uint64_t wr_id;
	enum ibv_wc_status status;
	enum ibv_wc_opcode opcode;	/* checked when status == SUCCESS */
	long long byte_len;		/* DT_ANY: not checked */
	uint32_t qp_num;
	long long src_qp;		/* DT_ANY, or the only other accepted
					 * value besides 0 (see .c) */
	unsigned int wc_flags;		/* exact, modulo wc_flags_opt */
	unsigned int wc_flags_opt;	/* bits that may or may not be set */
	uint32_t imm_data;		/* host order; checked with WITH_IMM */
};

/* Compare every field; prints the completion and the expectation on a
 * mismatch. Returns true when it matched. fatal: dt_abort on mismatch. */
bool dt_check_wc_at(const char *file, int line, const struct ibv_wc *wc,
		    const struct dt_wc_exp *e, bool fatal);
#define CHECK_WC(wc, e)  dt_check_wc_at(__FILE__, __LINE__, wc, e, true)
#define EXPECT_WC(wc, e) dt_check_wc_at(__FILE__, __LINE__, wc, e, false)

/* Expectations for common completions of an RC QP. */
struct dt_wc_exp dt_exp_send(uint64_t wr_id, enum ibv_wr_opcode op,
			     uint32_t len, uint32_t qp_num);
struct dt_wc_exp dt_exp_recv(uint64_t wr_id, enum ibv_wr_opcode op,
			     uint32_t len, uint32_t qp_num, uint32_t peer_qpn,
			     uint32_t imm_host);
struct dt_wc_exp dt_exp_err(uint64_t wr_id, enum ibv_wc_status st,
			    uint32_t qp_num);

/* ------------------------------------------------------------------ */
/* QPs                                                                  */

struct dt_qp_cfg {
	uint32_t max_send_wr, max_recv_wr;
	uint32_t max_send_sge, max_recv_sge;
	uint32_t max_inline_data;
	int sq_sig_all;
	/* 0: ibv_create_qp(); else ibv_create_qp_ex() with
	 * IBV_QP_INIT_ATTR_SEND_OPS_FLAGS and these send_ops_flags */
	uint64_t send_ops_flags;
	struct ibv_pd *pd;		/* NULL: the device's PD */
};

#define DT_SEND_OPS_ALL (IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_SEND_WITH_IMM | \
			 IBV_QP_EX_WITH_RDMA_WRITE |			\
			 IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |		\
			 IBV_QP_EX_WITH_RDMA_READ)

void dt_qp_cfg_default(struct dt_qp_cfg *c);
/* Create an RC QP; on success *cap_out (if set) holds the actual caps. On
 * failure returns NULL with errno set (not fatal: error tests use it). */
struct ibv_qp *dt_qp_create(struct dt_dev *d, struct ibv_cq *scq,
			    struct ibv_cq *rcq, const struct dt_qp_cfg *cfg,
			    struct ibv_qp_cap *cap_out);

struct dt_conn_cfg {
	enum ibv_mtu mtu;
	int access;			/* qp_access_flags */
	uint8_t timeout, retry_cnt, rnr_retry, min_rnr_timer;
	uint8_t max_rd_atomic, max_dest_rd_atomic;
	uint8_t sgid_index;
	uint16_t pkey_index;
	uint8_t port_num;
};

void dt_conn_cfg_default(struct dt_conn_cfg *c);

/* The documented attribute masks (ibv_modify_qp(3), IBV_QPT_RC table). */
#define DT_MASK_INIT (IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |	\
		      IBV_QP_ACCESS_FLAGS)
#define DT_MASK_RTR (IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |	\
		     IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |			\
		     IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)
#define DT_MASK_RTS (IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |	\
		     IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC)

/* Fill the attributes for one transition (all documented fields set). */
void dt_attr_init(struct ibv_qp_attr *a, const struct dt_conn_cfg *c);
void dt_attr_rtr(struct ibv_qp_attr *a, const struct dt_conn_cfg *c,
		 const union ibv_gid *dgid, uint32_t dest_qpn, uint32_t rq_psn);
void dt_attr_rts(struct ibv_qp_attr *a, const struct dt_conn_cfg *c,
		 uint32_t sq_psn);

/* Each returns ibv_modify_qp()'s result. */
int dt_qp_to_init(struct ibv_qp *qp, const struct dt_conn_cfg *c);
int dt_qp_to_rtr(struct ibv_qp *qp, const struct dt_conn_cfg *c,
		 const union ibv_gid *dgid, uint32_t dest_qpn, uint32_t rq_psn);
int dt_qp_to_rts(struct ibv_qp *qp, const struct dt_conn_cfg *c,
		 uint32_t sq_psn);
int dt_qp_to_state(struct ibv_qp *qp, enum ibv_qp_state s);
/* ibv_query_qp(IBV_QP_STATE); -1 on failure */
int dt_qp_state(struct ibv_qp *qp);

/*
 * Connect qa (on device da) and qb (on device db) back to back:
 * INIT -> RTR -> RTS on both, dgid = peer's GID index 1. psn_a is qa's
 * SQ PSN (= qb's RQ PSN), psn_b the other way. Fatal on failure. The QPs
 * may already be in INIT (then only RTR/RTS are done).
 */
void dt_connect(struct dt_dev *da, struct ibv_qp *qa, uint32_t psn_a,
		struct dt_dev *db, struct ibv_qp *qb, uint32_t psn_b,
		const struct dt_conn_cfg *c);
/* The same with a configuration per side (ca for qa, cb for qb). */
void dt_connect2(struct dt_dev *da, struct ibv_qp *qa, uint32_t psn_a,
		 const struct dt_conn_cfg *ca, struct dt_dev *db,
		 struct ibv_qp *qb, uint32_t psn_b, const struct dt_conn_cfg *cb);

/* An RC QP on device A and one on device B, each with its own send and
 * receive CQ. */
struct dt_rc_pair {
	struct dt_cq sa, ra, sb, rb;	/* qa's send, receive; qb's send, receive */
	struct ibv_qp *qa, *qb;
	struct ibv_qp_cap capa, capb;
};

/*
 * Four classic CQs of cqe entries, then qa on da and qb on db with qc
 * (NULL: dt_qp_cfg_default). Unless ca is NULL, connected (dt_connect2:
 * qa's SQ PSN psn_a, qb's psn_b; cb NULL: ca for both). Fatal on failure.
 */
void dt_rc_pair_open(struct dt_rc_pair *p, struct dt_dev *da,
		     struct dt_dev *db, int cqe, const struct dt_qp_cfg *qc,
		     const struct dt_conn_cfg *ca, const struct dt_conn_cfg *cb,
		     uint32_t psn_a, uint32_t psn_b);
/* Post one WR with one SGE {laddr, len, lkey}: a SEND, an RDMA op on
 * raddr/rkey, or an atomic there (FETCH_AND_ADD adds 1; CMP_AND_SWP
 * compares with 0 and swaps in 1). Fatal if ibv_post_send fails. */
void dt_post_one(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		 void *laddr, uint32_t len, uint32_t lkey, void *raddr,
		 uint32_t rkey, unsigned int send_flags);
/* The same RDMA WRITE through the ibv_wr_* API (ibv_wr_start ..
 * ibv_wr_complete); fatal if ibv_wr_complete fails. */
void dt_wr_write_one(struct ibv_qp *qp, uint64_t wr_id, void *laddr,
		     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		     bool signaled);
/* Destroy the QPs (a NULL one is skipped: the test destroyed it), then
 * the CQs; a failure is counted, not fatal. */
void dt_rc_pair_close(struct dt_rc_pair *p);
/* A signalled RDMA WRITE or READ of len bytes between laddr and raddr on
 * p->qa: its completion awaited on p->sa (what: for the timeout message)
 * and checked field by field, then the two buffers compared. */
void dt_rdma_checked(struct dt_rc_pair *p, enum ibv_wr_opcode op,
		     uint64_t wr_id, void *laddr, uint32_t len, uint32_t lkey,
		     void *raddr, uint32_t rkey, const char *what);

/* ------------------------------------------------------------------ */
/* Misc                                                                 */

/* ibv_reg_mr() without the inline wrapper's iova2 detour; NULL+errno. */
struct ibv_mr *dt_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			 int access);
#define DT_ACCESS_ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
		       IBV_ACCESS_REMOTE_READ)

/* Page-aligned, zeroed allocation; fatal on failure. */
void *dt_alloc(size_t len);

uint32_t dt_mtu_bytes(enum ibv_mtu m);

/* Human readable name of an ibv_wr_opcode used by the tests. */
const char *dt_wr_opcode_name(enum ibv_wr_opcode op);

#ifdef __cplusplus
}
#endif
#endif /* DROCE_TEST_H */
