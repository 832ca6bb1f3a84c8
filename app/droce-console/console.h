/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-console: an interactive console to operate and test droce, in the
 * manner of dpdk-testpmd. Shared state and helpers of the command groups.
 *
 * Objects are kept in small tables and addressed by the console's own ids
 * (pd 0, mr 1, cq 0, qp 3: one id space per kind, lowest free id first).
 * Everything runs on the main lcore except the engines (their own lcores,
 * or driven from here in lcore=app mode) and traffic when a worker lcore is
 * free for it.
 */
#ifndef DROCE_CONSOLE_H
#define DROCE_CONSOLE_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include <infiniband/verbs.h>

#include "droce.h"
#include "droce_int.h"

#define CON_PROMPT	"droce> "
#define CON_MAX_PD	64
#define CON_MAX_MR	256
#define CON_MAX_CQ	64
#define CON_MAX_QP	256
#define CON_MAX_SRQ	64
#define CON_MAX_AH	256
#define CON_MAX_MW	256
#define CON_STASH	4096	/* completions held back per CQ */
#define CON_LINE_MAX	4000

/* ------------------------------------------------------------ objects */

struct con_dev {
	struct ibv_context *ctx;
	struct droce_dev *dev;		/* for display (droce_int.h) */
	uint16_t port;
	uint32_t probe_mtu;		/* largest path MTU the port was set up for */
	struct droce_dev_stats base;	/* "clear stats" baseline */
};

struct con_pd {
	bool used;
	int dev;
	struct ibv_pd *pd;
};

struct con_mr {
	bool used;
	int pd;
	struct ibv_mr *mr;
	uint8_t *buf;			/* rte_zmalloc'ed */
	uint64_t len;
	unsigned int access;
	char fill[40];			/* how it was filled, for "show mr" */
	int busy;			/* traffic flows using it */
};

struct con_cq {
	bool used;
	int dev;
	struct ibv_cq *cq;
	int size;
	/* Completions a "post ... wait" polled that were not its own: kept
	 * for the next "poll cq" (FIFO). */
	struct ibv_wc *stash;
	uint32_t st_head, st_len;
	uint32_t st_lost;
	int busy;			/* traffic flows polling it */
};

struct con_qp {
	bool used;
	int pd, scq, rcq;
	int srq;			/* console SRQ id, or -1 */
	enum ibv_qp_type type;		/* IBV_QPT_RC, _UC or _UD */
	uint32_t qkey;			/* UD: the Q_Key INIT sets (and sends default to) */
	struct ibv_qp *qp;
	uint32_t psn;			/* our initial send PSN */
	int peer;			/* local peer QP id, or -1 */
	bool remote;			/* connected to a remote endpoint */
	union ibv_gid rgid;
	uint32_t rqpn, rpsn;
	int busy;			/* traffic flows driving it */
	uint32_t seq;			/* wr_id sequence */
};

/* A shared receive queue (ibv_create_srq). */
struct con_srq {
	bool used;
	int pd;
	struct ibv_srq *srq;
	uint32_t size, max_sge;		/* as created */
	uint32_t seq;			/* wr_id sequence of its receives */
};

/* An address handle for UD sends (ibv_create_ah). */
struct con_ah {
	bool used;
	int pd;
	struct ibv_ah *ah;
	union ibv_gid dgid;
	uint8_t sgid_index, hop_limit, tclass;
};

/* A memory window (ibv_alloc_mw). Where it is bound is read from the
 * library's own record (droce_int.h), which the engine keeps. */
struct con_mw {
	bool used;
	int pd;
	struct ibv_mw *mw;
};

/* Operations: rows of con_ops[], their flags say what each needs. */
enum con_op {
	CON_OP_SEND,
	CON_OP_SEND_IMM,
	CON_OP_SEND_INV,
	CON_OP_WRITE,
	CON_OP_WRITE_IMM,
	CON_OP_READ,
	CON_OP_CAS,
	CON_OP_FAA,
	CON_OP_BIND_MW,
	CON_OP_LOCAL_INV,
	CON_OP_RECV,
	CON_OP_MAX
};

#define CON_OPF_REMOTE	0x001	/* needs a remote address and rkey */
#define CON_OPF_IMM	0x002
#define CON_OPF_ATOMIC	0x004
#define CON_OPF_RECV	0x008	/* consumes a receive WQE at the peer */
#define CON_OPF_INLINE	0x010	/* may carry inline data */
#define CON_OPF_UC	0x020	/* allowed on UC QPs (all are on RC) */
#define CON_OPF_UD	0x040	/* allowed on UD QPs */
#define CON_OPF_MW	0x080	/* binds a memory window (mw <id>) */
#define CON_OPF_INV	0x100	/* carries an rkey to invalidate (mw <id> | rkey <k>) */
#define CON_OPF_NODATA	0x200	/* no local data buffer */
#define CON_OPF_NOTRAFFIC 0x400	/* not a traffic workload */

/* Transports, for the summary: the QP's type, or SRQ for its receives. */
enum con_tr { CON_TR_RC, CON_TR_UC, CON_TR_UD, CON_TR_SRQ, CON_TR_MAX };
extern const char *const con_tr_names[CON_TR_MAX];
int con_qp_tr(const struct con_qp *q);
const char *con_qp_type_str(enum ibv_qp_type t);	/* "RC" ... */

struct con_opdesc {
	const char *name;		/* console name */
	const char *verbs;		/* IBV_WR_* / WC name */
	enum ibv_wr_opcode wr;
	unsigned int flags;
};
extern const struct con_opdesc con_ops[CON_OP_MAX];
int con_op_by_name(const char *s);

/* wr_id of the console's own posts: magic | transport << 5 | op | sequence */
#define CON_WRID_MAGIC		0xd5ull
#define CON_WRID(op, tr, seq)	((CON_WRID_MAGIC << 56) | \
				 ((uint64_t)((op) | (tr) << 5) << 48) | \
				 ((uint64_t)(seq) & 0xffffffffffffull))
#define CON_WRID_OP(w)		((w) >> 56 == CON_WRID_MAGIC ? (int)(((w) >> 48) & 0x1f) : -1)
#define CON_WRID_TR(w)		((int)(((w) >> 53) & 0x7))
_Static_assert(CON_OP_MAX <= 32 && CON_TR_MAX <= 8, "wr_id layout");

/* What happened, for "summary": per operation and transport. */
struct con_tally {
	uint64_t posted[CON_OP_MAX][CON_TR_MAX];
	uint64_t ok[CON_OP_MAX][CON_TR_MAX];
	uint64_t err[CON_OP_MAX][CON_TR_MAX];
	uint64_t max_len[CON_OP_MAX][CON_TR_MAX];	/* largest message posted */
	uint64_t expected[CON_OP_MAX][CON_TR_MAX];	/* error completions expected */
	uint64_t other_ok, other_err;	/* completions of foreign wr_ids */
	uint64_t expected_err;		/* error completions a command expected */
	uint64_t checks_ok, checks_fail;
	uint64_t cmds_ok, cmds_fail;
};

struct con {
	struct con_dev devs[DROCE_MAX_DEVS];
	int nb_devs;
	struct con_pd pds[CON_MAX_PD];
	struct con_mr mrs[CON_MAX_MR];
	struct con_cq cqs[CON_MAX_CQ];
	struct con_qp qps[CON_MAX_QP];
	struct con_srq srqs[CON_MAX_SRQ];
	struct con_ah ahs[CON_MAX_AH];
	struct con_mw mws[CON_MAX_MW];
	struct con_tally tally;
	bool interactive;		/* reading from the terminal now */
	bool tty;			/* stdin is a terminal in raw mode */
	bool quit;
	volatile int interrupted;	/* ^C / SIGINT / SIGTERM: abort the wait */
	volatile int terminate;		/* SIGINT / SIGTERM: leave */
	bool in_command;		/* a command runs (interactive) */
	bool stdin_eof;
	uint64_t tsc_hz;
	/* keyboard input read while a command ran (interactive) */
	char pending[512];
	unsigned int pending_len;
	uint64_t wait_cap_us;		/* every wait at most this (0: as asked) */
};
extern struct con g;

/* session.c: the devices (ports: "NAME,DEVARGS"; none: the embedded
 * net_ring pair), their teardown with every object and the EAL's. */
int con_setup_devices(char **ports, int nb_ports);
void con_teardown(void);

/* ------------------------------------------------------------ commands */

typedef int (*con_fn)(int argc, char **argv);

struct con_cmd {
	const char *group;
	const char *name;		/* fixed words: "show qp" */
	const char *args;		/* "[<id>]" */
	const char *help;
	con_fn fn;
};

extern const struct con_cmd con_cmds_general[];
extern const struct con_cmd con_cmds_ports[];
extern const struct con_cmd con_cmds_objects[];
extern const struct con_cmd con_cmds_qp[];
extern const struct con_cmd con_cmds_post[];
extern const struct con_cmd con_cmds_check[];
extern const struct con_cmd con_cmds_traffic[];
extern const struct con_cmd con_cmds_capture[];
extern const struct con_cmd con_cmds_srq[];
extern const struct con_cmd con_cmds_ah[];
extern const struct con_cmd con_cmds_mw[];
extern const struct con_cmd con_cmds_events[];

/* cli.c */
int cli_init(void);
void cli_free(void);
int cli_run_line(const char *line);		/* 0 ok, else failed */
int cli_interactive(void);
void cli_help_usage(const char *name);		/* "usage: ..." lines */

/* ------------------------------------------------------------ helpers */

/* Print "error: ..." and return -1 (every failing command says why). */
int con_err(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* Numbers: decimal or 0x hex; sizes also take k/m/g (binary). */
int con_u64(const char *s, uint64_t *v);
int con_size(const char *s, uint64_t *v);
/* Same, printing "<cmd>: bad <what> '<s>'" on failure. */
int con_arg_u64(const char *cmd, const char *what, const char *s, uint64_t *v,
		uint64_t max);
int con_arg_size(const char *cmd, const char *what, const char *s,
		 uint64_t *v, uint64_t max);

/* Options after the positional arguments: "key value" pairs and flags. */
enum con_opt_type { OPT_FLAG, OPT_U64, OPT_SIZE, OPT_STR };
struct con_opt {
	const char *name;
	enum con_opt_type type;
	void *dst;			/* bool / uint64_t / const char * */
	bool *seen;			/* optional */
	uint64_t max;			/* OPT_U64/OPT_SIZE (0: no limit) */
};
int con_opts(const char *cmd, int argc, char **argv, const struct con_opt *o);

/* Object lookups by console id, printing a clear error when missing. */
struct con_dev *con_get_dev(const char *cmd, const char *s, int *id);
struct con_pd *con_get_pd(const char *cmd, const char *s, int *id);
struct con_mr *con_get_mr(const char *cmd, const char *s, int *id);
struct con_cq *con_get_cq(const char *cmd, const char *s, int *id);
struct con_qp *con_get_qp(const char *cmd, const char *s, int *id);
struct con_srq *con_get_srq(const char *cmd, const char *s, int *id);
struct con_ah *con_get_ah(const char *cmd, const char *s, int *id);
struct con_mw *con_get_mw(const char *cmd, const char *s, int *id);
int con_qp_dev(const struct con_qp *q);
int con_mr_dev(const struct con_mr *m);
int con_pd_dev(int pd);
int con_mr_by_ibv(const struct ibv_mr *mr);	/* console id, or -1 */
int con_dev_of_ctx(struct ibv_context *ctx);
int con_qp_by_qpn(int dev, uint32_t qpn);

/* Names. */
const char *con_qp_state_str(enum ibv_qp_state s);
int con_qp_state_by_name(const char *s);
const char *con_wc_opcode_str(enum ibv_wc_opcode op);
const char *con_wc_status_name(enum ibv_wc_status s);
int con_wc_status_by_name(const char *s);
const char *con_access_str(unsigned int a, char *buf, size_t len);
int con_access_parse(const char *s, unsigned int *a);
int con_mtu_enum(uint64_t bytes);
void con_gid_str(const union ibv_gid *gid, char *buf, size_t len);
int con_gid_parse(const char *s, union ibv_gid *gid);
/* ::ffff:a.b.c.d (GID index 1, RoCEv2 over IPv4); else link-local, index 0 */
bool con_gid_is_v4(const union ibv_gid *gid);

/* Patterns for MRs: zero | inc | random <seed> | byte <x>. Consumes the
 * words it needs from argv; returns how many, or -1. */
struct con_pattern {
	int kind;			/* 0 zero, 1 inc, 2 random, 3 byte */
	uint64_t arg;
};
int con_pattern_parse(const char *cmd, int argc, char **argv,
		      struct con_pattern *p);
void con_pattern_fill(const struct con_pattern *p, uint8_t *dst, uint64_t len,
		      uint64_t base_off);
void con_pattern_str(const struct con_pattern *p, char *buf, size_t len);

/* CQ polling that honours the stash. */
int con_cq_poll(struct con_cq *c, int n, struct ibv_wc *wc);
void con_cq_stash(struct con_cq *c, const struct ibv_wc *wc);
void con_wc_print(int cq_id, const struct ibv_wc *wc);
void con_tally_wc(const struct ibv_wc *wc);
/* Same, an error that was expected (expect <status>) counted apart. */
void con_tally_wc_expect(const struct ibv_wc *wc, int expect);

/* The main loop's background work; waits that keep it running. */
void con_service(void);
/* Run con_service() until done(arg) is true (0), timeout (-ETIMEDOUT) or an
 * interrupt (-EINTR). timeout_us 0 waits for ever. */
int con_wait(uint64_t timeout_us, bool (*done)(void *), void *arg);
uint64_t con_now_us(void);
int con_idle_timeout_ms(void);

/* traffic.c / capture.c hooks */
void traffic_service(void);
bool traffic_on_main(void);
bool traffic_active(void);
void traffic_stop_all(void);
int traffic_summary(void);		/* returns the number of failed flows */
void capture_service(void);
bool capture_active(void);
void capture_stop_all(void);

/* The QP's capabilities as created (ibv_query_qp). */
struct ibv_qp_cap con_qp_cap(struct ibv_qp *qp);

/* Receive WQEs posted and not consumed yet (the QP's own queue or its
 * SRQ's), read from droce_int.h. */
static inline uint32_t con_rq_pending(const struct droce_qp *q)
{
	const struct droce_wq *wq = q->rq;

	return __atomic_load_n(&wq->db, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&wq->ci, __ATOMIC_ACQUIRE);
}

/* cmd_objects.c */
void objects_destroy_all(void);		/* quit: tear everything down */
void objects_print_qp_line(int id);
int con_free_id(bool (*used)(int), int max);

/* cmd_srq.c, cmd_ah.c, cmd_mw.c: destroy (printing the outcome, 0 or -1)
 * and one line per object for "show objects". */
int srq_destroy_id(int id);
int ah_destroy_id(int id);
int mw_destroy_id(int id);
void srq_print(int id);
void ah_print(int id);
void mw_print(int id);
/* Receive WQEs posted to an SRQ and not claimed yet. */
uint32_t srq_pending(const struct con_srq *s);

/* cmd_post.c: receives into a QP or an SRQ */
int post_recv_common(const char *cmd, int qid, int sid, int argc, char **argv);

/* cmd_events.c: async events of every device, drained into a log. */
void events_drain(void);
const char *const *events_names(void);	/* NULL-terminated, for completion */

#endif /* DROCE_CONSOLE_H */
