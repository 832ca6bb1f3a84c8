/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf: perftest's ib_{write,read,send,atomic}_{bw,lat} in one binary,
 * with perftest's options, out-of-band TCP exchange and result tables, so
 * that either end can be the real perftest (4.5, Debian's package) on
 * Linux Soft-RoCE. Plus --loopback: both ends in one process on droce's
 * embedded net_ring pair, no peer needed.
 *
 * Internal header shared by the files of app/droce-perf.
 */
#ifndef DROCE_PERF_H
#define DROCE_PERF_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <unistd.h>
#include <infiniband/verbs.h>

#include "droce.h"

/* What we tell a perftest peer our version is: the one of Debian's
 * perftest 4.5-0.17 (configure.ac). The peer keys protocol details on it
 * (>= 5.33: 8-byte iteration counts in the report exchange, >= 5.32:
 * system data exchange, >= 5.31: 2-byte MTU string, >= 5.70: accepted). */
#define PERF_VERSION		"6.06"
#define PERF_VERSION_LEN	16	/* perftest's MAX_VERSION */

#define PERF_DEF_PORT		18515
#define PERF_DEF_SIZE_BW	65536
#define PERF_DEF_SIZE_LAT	2
#define PERF_DEF_ITERS		1000
#define PERF_DEF_ITERS_WB	5000	/* write_bw */
#define PERF_DEF_TX_BW		128
#define PERF_DEF_TX_LAT		1
#define PERF_DEF_RX_SEND	512
#define PERF_DEF_CQ_MOD		100
#define PERF_DEF_QP_TIMEOUT	14
#define PERF_DEF_DURATION	5	/* s: --run_infinitely's period */
#define PERF_MIN_DURATION	0.001	/* s: -D's least (perftest's: 1) */
#define PERF_ABORT_QUIET_S	0.3	/* s: a failed run's hang-up to exit */
#define PERF_DEF_INLINE_WRITE	220
#define PERF_DEF_INLINE_SEND	236
#define PERF_MAX_SIZE		(1u << 23)	/* -a goes up to 8 MiB */
#define PERF_MAX_MSG_SIZE	(1L << 31)	/* -s at most */
#define PERF_CQ_MOD_SIZE_LIMIT	8192	/* bigger messages: signal each */
#define PERF_ATOMIC_SIZE	8
#define PERF_MIN_RNR_TIMER	12
#define PERF_LAT_TAIL		2	/* perftest drops the 2 largest samples */

enum perf_verb { V_SEND, V_WRITE, V_READ, V_ATOMIC };
enum perf_tst { T_BW, T_LAT };
enum perf_conn { C_RC, C_UC, C_UD };	/* -c */
/* perftest's Q_Key for UD (both ends use it; nothing exchanged) */
#define PERF_UD_QKEY		0x11111111u
/* A UD receive starts with the 40-byte GRH slot (IBTA 11.4.1.2) */
#define PERF_GRH_LEN		40
enum perf_atomic { A_CMP_AND_SWAP, A_FETCH_AND_ADD };
enum perf_output { OUT_FULL = -1, OUT_BW = 0, OUT_MR = 1, OUT_LAT = 2 };
/* perftest's rate limiters: none, SW (the client's posting loop), HW (a
 * static rate in the QP's address: InfiniBand only, so on RoCE perftest
 * falls back to SW) and PP (packet pacing: droce's engine paces each QP,
 * ibv_modify_qp_rate_limit) */
enum perf_rate_type { RL_NONE, RL_SW, RL_HW, RL_PP };
enum perf_rate_units { RU_MBPS, RU_GBPS, RU_PPS };	/* --rate_units M, g, p */
enum perf_engine { ENG_DEFAULT, ENG_LCORE, ENG_APP, ENG_SPLIT };

struct perf_opts {
	enum perf_verb verb;
	enum perf_tst tst;
	enum perf_conn conn;		/* -c RC (default), UC or UD */
	const char *test_name;		/* "write_bw" ... */
	/* perftest options */
	const char *servername;		/* NULL: server */
	const char *ib_devname;
	int tcp_port;
	int ib_port;
	uint64_t size;
	bool size_set;
	bool all;			/* -a */
	uint64_t iters;
	bool iters_set;
	double duration;		/* -D, seconds (0: iterations) */
	double margin;			/* -f, seconds (< 0: duration / 4) */
	int nqps;
	int tx_depth;
	int rx_depth;
	int post_list;
	int cq_mod;
	bool cq_mod_set;
	int inline_size;		/* -1: perftest's default */
	int out_reads;			/* <= 0: the device's maximum */
	int gid_index;
	int mtu;			/* bytes, 0: the port's */
	int qp_timeout;
	int sl;
	enum perf_atomic atomic_type;
	bool report_gbits;
	bool duplex;			/* -b: both ends post, both directions */
	bool run_inf;			/* --run_infinitely: a row every -D s */
	bool report_both;		/* --report-both: -b's two ends apart */
	bool cpu_freq_f;
	bool no_peak;
	bool report_cycles;		/* -C (latency) */
	bool report_hist;		/* -H */
	bool report_unsorted;		/* -U */
	int output;			/* enum perf_output */
	bool use_event;			/* -e: sleep on CQ events */
	bool use_srq;			/* --use-srq: receives from one SRQ */
	bool old_post_send;		/* --use_old_post_send: ibv_post_send */
	double limit_bw;		/* -w: fail below it (< 0: none) */
	double limit_msgrate;		/* -y: fail below it, Mpps (< 0: none) */
	bool cpu_util;			/* --cpu_util: perftest's CPU column */
	int latency_gap;		/* --latency_gap: us before each round trip */
	bool mr_per_qp;			/* --mr_per_qp: an MR per QP */
	bool use_hugepages;		/* --use_hugepages: buffer on huge pages */
	bool no_lock;			/* --no_lock: QPs, CQs in a thread domain */
	int comp_vector;		/* -X */
	int tclass;			/* --tclass: GRH traffic class (IP TOS) */
	uint32_t flow_label;		/* --flow_label: GRH flow label */
	double rate_limit;		/* --rate_limit (0: none) */
	const char *rate_limit_str;	/* as given (HW: one of IB's rates) */
	enum perf_rate_units rate_units;
	enum perf_rate_type rate_type;
	bool rate_type_set;		/* --rate_limit_type given */
	int burst_size;			/* --burst_size: messages per burst */
	int typical_pkt_size;		/* --typical_pkt_size (PP), bytes */
	bool reversed;			/* --reversed: the TCP server sends */
	const char *out_json;		/* --out_json[_file]: perftest's report file */
	/* droce-perf's own */
	bool loopback;
	enum perf_engine engine;
	int idle_us;			/* -1: droce's default */
	int post_drive;			/* -1: droce's default */
	int rx_spin;			/* -1: droce's default */
	unsigned int nb_mbuf;		/* 0: droce's default */
	unsigned int zc_min;		/* 0: droce's default (off) */
	bool per_qp;			/* per-QP table */
	bool kv;			/* one machine-readable summary line */
	bool check;			/* verify data and byte counts */
	bool cycles;			/* app-driven: TSC cycles per message/frame */
	bool quiet_info;		/* no test-info header */
	double connect_retry;		/* client: keep trying to connect, s */
};

extern struct perf_opts opt;

/* ------------------------------------------------------------ timing */

uint64_t perf_tsc(void);
/* SIGINT/SIGTERM (--run_infinitely), or the peer ended its run: stop
 * posting, drain, and end the test as a timed one ends (1); 2 once a run
 * has so ended, after which the closing exchange goes on as usual (a wait
 * on the exchange with 1 set gives up). */
extern volatile sig_atomic_t perf_stop;
void perf_stop_handler(int sig);
double perf_tsc_hz(void);

/* ----------------------------------------------------- one endpoint */

/* The per-QP address information perftest exchanges ("pingpong_dest"). */
struct perf_dest {
	uint32_t lid;
	uint32_t out_reads;
	uint32_t qpn;
	uint32_t psn;
	uint32_t rkey;
	uint64_t vaddr;
	union ibv_gid gid;
	uint32_t srqn;
};

struct perf_qpstat {
	uint64_t scnt;			/* WRs posted */
	uint64_t ccnt;			/* WRs completed */
	uint64_t rcnt;			/* receives completed (SEND server) */
	uint64_t rposted;		/* receives posted (for this QP's slot) */
	uint64_t rused;			/* of those, consumed (with an SRQ, by
					 * any QP; rcnt counts this QP's) */
	uint64_t rbytes;		/* bytes received (SEND server) */
	uint64_t lastsig;		/* seq of the last signalled WR */
	uint64_t t_first;		/* TSC of the first post */
	uint64_t t_last;		/* TSC of the last completion */
};

/* A bandwidth run's figures for one role of one end (sending or
 * receiving). */
struct perf_run_result {
	uint64_t all_msgs;		/* completed in the whole run */
	uint64_t msgs;			/* completed, in the measured window */
	uint64_t t0, t1;		/* window (TSC) */
};

/*
 * One end of the test: a device context with its PD, MR over one buffer,
 * CQs and QPs. In --loopback there are two in this process.
 *
 * Buffer layout, per QP i, each slot `slot` bytes (cache-line aligned):
 *   [i * slot]            local source (WRITE/SEND), READ/atomic result
 *   [(nqps + i) * slot]   what the peer targets (advertised vaddr),
 *                         receive buffers of SEND
 * With --mr_per_qp a QP's two slots are neighbours, [2i * slot] and
 * [(2i + 1) * slot], under an MR of their own.
 */
struct perf_side {
	const char *name;		/* "client"/"server" */
	bool is_client;
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_td *td;		/* --no_lock */
	struct ibv_pd *pad;		/* what objects are made on: pd, or a
					 * parent domain with td (--no_lock) */
	struct ibv_mr *mr;		/* all slots; NULL with mrs */
	struct ibv_mr **mrs;		/* --mr_per_qp: QP i's two slots */
	struct ibv_comp_channel *ch;	/* -e: both CQs report to it */
	struct ibv_cq *scq;
	struct ibv_cq *rcq;
	struct ibv_srq *srq;		/* --use-srq, on an end that receives */
	int *qp_by_num;			/* with srq: QP indexes by QP number */
	struct ibv_qp **qp;
	struct ibv_qp_ex **qpx;		/* perftest's default: the ibv_wr_* API */
	uint8_t *buf;
	size_t buf_len;
	size_t buf_map;			/* --use_hugepages: bytes mapped */
	size_t slot;
	int nqps;
	int gid_index;
	union ibv_gid gid;
	enum ibv_mtu port_mtu;
	int out_reads;			/* what we offer as responder */
	int max_inline;
	struct perf_dest *my;
	struct perf_dest *rem;
	struct ibv_ah **ah;		/* UD: an address handle per QP */
	struct perf_qpstat *st;		/* as sender (and latency) */
	struct perf_qpstat *rst;	/* as SEND receiver: st, or its own
					 * array when the end also sends (-b) */
	struct perf_run_result res_send, res_recv;
	/* per-WR scratch */
	struct ibv_send_wr *wr;
	struct ibv_sge *sge;
	/* latency */
	uint64_t *tposted;
	uint64_t lat_n;
	/* bw timing arrays for the peak (NULL with no_peak) */
	uint64_t *tp, *tc;
	uint64_t tp_n;
	int errors;
	int app_mode;			/* the engine runs in our verbs calls */
	struct droce_dev_stats ds0, ds1;	/* device counters around a run */
};

/* res.c */
int side_open(struct perf_side *s, struct ibv_device *dev, bool client,
	      uint64_t max_size, uint64_t cycle_buffer);
int side_connect(struct perf_side *s);	/* INIT -> RTR -> RTS with s->rem */
void side_fill_dest(struct perf_side *s);
void side_close(struct perf_side *s);
enum ibv_mtu perf_mtu_enum(int bytes);
int perf_mtu_bytes(enum ibv_mtu m);
uint8_t *side_src(const struct perf_side *s, int q);
int side_qp_index(const struct perf_side *s, uint32_t qpn);
uint8_t *side_dst(const struct perf_side *s, int q);
uint32_t side_lkey(const struct perf_side *s, int q);
uint32_t side_rkey(const struct perf_side *s, int q);

/* Where a receive's data starts in its buffer (UD: after the GRH). */
static inline uint32_t perf_recv_off(void)
{
	return opt.conn == C_UD ? PERF_GRH_LEN : 0;
}
void side_drive(struct perf_side *s);	/* app mode: run the engine once */

/* Does this end post sends? receives? (Both ends do both with -b.) */
static inline bool side_sends(const struct perf_side *s)
{
	return s->is_client || opt.tst == T_LAT || opt.duplex;
}

static inline bool side_recvs(const struct perf_side *s)
{
	return opt.verb == V_SEND &&
	       (!s->is_client || opt.tst == T_LAT || opt.duplex);
}

/* run.c: the measurement loops, as steps so one thread can run both ends */
struct perf_run;
int run_bw(struct perf_side *client, struct perf_side *server);
int run_lat(struct perf_side *client, struct perf_side *server);
void run_set_size(uint64_t size);
uint64_t run_get_size(void);
int run_check(struct perf_side *client, struct perf_side *server);
int run_bw_prepare_server(struct perf_side *s);
int run_lat_prepare_recv(struct perf_side *s);
const struct perf_run_result *run_result(const struct perf_side *s);
void run_lat_window(uint64_t *t0, uint64_t *t1);

/* report.c */
struct perf_bw_report {
	uint64_t size;
	uint64_t iters;
	double bw_peak;
	double bw_avg;
	double msg_rate;
};
void report_test_info(const struct perf_side *s);
void report_dest(const struct perf_dest *d, bool remote);
void report_bw_header(void);
void report_lat_header(void);
void report_line(void);
void report_bw(const struct perf_side *c, struct perf_bw_report *out);
void report_bw_add(struct perf_bw_report *r, const struct perf_bw_report *o);
void report_bw_both(const struct perf_bw_report *local,
		    const struct perf_bw_report *remote);
void report_bw_print(const struct perf_bw_report *r);
/* --out_json: the row's file (report_bw_print writes it too) */
void report_json_bw(const struct perf_bw_report *r);
void report_bw_limits(const struct perf_bw_report *r);
int report_limits_verdict(void);	/* -1 (said) if -w/-y missed */
void report_bw_period(uint64_t msgs, uint64_t cycles, int factor);
int report_lat(struct perf_side *c);
void report_per_qp(struct perf_side *c, double secs);
void report_kv_bw(const struct perf_side *c, const struct perf_side *srv,
		  const struct perf_bw_report *r, double secs);
void report_kv_lat(const struct perf_side *c, const struct perf_side *srv);
void report_cycles(const struct perf_side *c, const struct perf_side *srv);
void report_passive_engine(const struct perf_side *s);

/* oob.c: perftest's out-of-band exchange */
int oob_connect(void);
int oob_xchg(const void *mine, void *theirs, size_t len);
int oob_hand_shake(struct perf_dest *my, struct perf_dest *rem);
int oob_versions(char rem_version[PERF_VERSION_LEN]);
int oob_sys_data(int *cycle_buffer, int *cache_line);
int oob_mtu(enum ibv_mtu *mtu);
int oob_bw_reports(const struct perf_bw_report *mine,
		   struct perf_bw_report *theirs, double rem_version);
int oob_close(struct perf_dest *my, struct perf_dest *rem);
/* A run that failed: hang up first, so that the peer stops driving its
 * engine (its next look at the exchange finds it closed) before this end
 * tears down; true if there was an exchange to hang up. */
bool oob_abort(void);
void oob_set_drive(struct perf_side *s);
bool oob_peer_ready(void);	/* the peer has written: it ended its run */
extern double oob_rem_version;

/* cpu.c: per-thread CPU time over a run (/proc/self/task/N/schedstat) */
struct perf_cpu {
	uint64_t wall_ns;
	uint64_t main_run_ns, main_wait_ns;	/* the verbs thread */
	uint64_t eng_run_ns, eng_wait_ns;	/* engine lcore / keeper */
};
void cpu_start(void);
void cpu_stop(void);
void cpu_totals(struct perf_cpu *c);
/* --cpu_util: perftest's figure over the -D window, /proc/stat's first
 * line at the window's two edges (a thread that sleeps until each) */
void cpu_util_begin(double sample_s, double stop_s);
void cpu_util_end(void);
double cpu_util_last(void);	/* percent; < 0: the window was not seen */

/* cycle accounting (--cycles) */
struct perf_cycles {
	uint64_t post;			/* in ibv_post_send/recv */
	uint64_t poll;			/* in ibv_poll_cq (drives the engine) */
	uint64_t drive;			/* in droce_poll */
	uint64_t total;			/* the whole measured loop */
	uint64_t polls, drives;
};
extern struct perf_cycles perf_cyc;
extern uint64_t perf_post_enomem;
extern uint64_t perf_events;	/* -e: CQ events taken over the run */

static inline const char *verb_str(enum perf_verb v)
{
	static const char *const s[] = { "Send", "RDMA_Write", "RDMA_Read",
					 "ATOMIC" };
	return s[v];
}

#define PERF_ERR(...) fprintf(stderr, " " __VA_ARGS__)

#endif /* DROCE_PERF_H */
