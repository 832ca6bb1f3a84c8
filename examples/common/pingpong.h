/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What the pingpong examples (rc_pingpong, ud_pingpong, srq_pingpong)
 * share, as rdma-core's libibverbs/examples/pingpong.c does for its own:
 * the options all of them have, the "LID:QPN:PSN:GID" address messages and
 * the TCP exchange that carries them, a few verbs steps that are the same
 * in each, and the -c buffer check. Every message printed here is the one
 * each program printed before (and the one rdma-core's programs print).
 */
#ifndef DROCE_EXAMPLES_PINGPONG_H
#define DROCE_EXAMPLES_PINGPONG_H

#include <stddef.h>
#include <stdint.h>
#include <sys/time.h>
#include <sys/types.h>
#include <getopt.h>

#include <infiniband/verbs.h>

/* ------------------------------------------------------------------ */
/* options                                                             */

/* The options every pingpong has (-m: rc and srq only). */
struct pp_opts {
	const char *servername;	/* NULL: server */
	const char *ib_devname;	/* NULL: the first device */
	unsigned int tcp_port;
	int ib_port;
	unsigned int size;
	enum ibv_mtu mtu;
	unsigned int rx_depth;
	unsigned int iters;
	int sl;
	int use_event;
	int gidx;		/* -1: none, the GID sent is all zeros */
	int check;
};

/* The defaults: port 18515, IB port 1, 4096 bytes, MTU 1024, ... */
void pp_opts_init(struct pp_opts *o);

/*
 * The command line, with getopt_long(shortopts, longopts): each option
 * goes to own() first, a program's own options (0: taken, 1: not one of
 * its own, -1: a bad value), then to the common ones (-p -d -i -s -m -r
 * -n -l -e -g -c); after the options, nothing for a server or one <host>
 * for a client. 0, or -1 for anything bad (the caller prints its usage).
 */
typedef int pp_own_opt_fn(int c, const char *arg);
int pp_parse_args(struct pp_opts *o, int argc, char *argv[],
		  const char *shortopts, const struct option *longopts,
		  pp_own_opt_fn *own);

/* The first lines of every usage text: "Usage:" to -i. */
void pp_usage_start(const char *argv0);

/*
 * The device list, and in *dev the device named -d, else the first one;
 * NULL after saying why there is none (the list is not freed then).
 */
struct ibv_device **pp_get_device(const struct pp_opts *o,
				  struct ibv_device **dev);

/* ------------------------------------------------------------------ */
/* the address message and the out-of-band exchange                    */

/* One QP's address, as exchanged over TCP. */
struct pp_addr {
	unsigned int lid;
	unsigned int qpn;
	unsigned int psn;
	union ibv_gid gid;
};

/* "LLLL:QQQQQQ:PPPPPP:" + 32 hex digits, sent with its terminating NUL */
#define PP_ADDR_MSG_LEN \
	((int)sizeof("0000:000000:000000:00000000000000000000000000000000"))
#define PP_DONE_MSG "done"
#define PP_DONE_LEN ((int)sizeof(PP_DONE_MSG))

void pp_addr_format(const struct pp_addr *a, char msg[PP_ADDR_MSG_LEN]);
int pp_addr_parse(const char *msg, struct pp_addr *a);	/* 0 or -1 */

/* The GID as text (inet_ntop), "?" if that fails; returns out. */
const char *pp_gid_str(const union ibv_gid *gid, char *out, size_t n);

/* "  <what> LID 0x..., QPN 0x..., PSN 0x..., GID ..." */
void pp_print_addr(const char *what, const struct pp_addr *a);

/* read()/write() the whole length (retrying short transfers and EINTR):
 * the length done (less at end of file for a read), or -1. */
ssize_t pp_read_full(int fd, void *p, size_t len);
ssize_t pp_write_full(int fd, const void *p, size_t len);

/* A TCP connection to the server (-p, <host>) or from one client (a
 * server on -p): the socket, or -1 after saying why. */
int pp_tcp_connect(const struct pp_opts *o);
int pp_tcp_accept(const struct pp_opts *o);

/*
 * One address each way (rc and ud). The client sends its address, reads
 * the server's and answers "done". The server reads the client's, calls
 * ready() (its QP to RTS) before it answers with its own, then waits for
 * "done". 0, or 1 after saying why.
 */
typedef int pp_ready_fn(void *arg, const struct pp_addr *local,
			const struct pp_addr *remote);
int pp_exchange_client(const struct pp_opts *o, const struct pp_addr *local,
		       struct pp_addr *remote);
int pp_exchange_server(const struct pp_opts *o, const struct pp_addr *local,
		       struct pp_addr *remote, pp_ready_fn *ready, void *arg);

/* ------------------------------------------------------------------ */
/* verbs steps                                                         */

/* The message buffer: len bytes, page aligned, every byte fill; NULL
 * after saying so. */
char *pp_alloc_buf(size_t len, int fill, long page_sz);

/* ibv_query_port() of the -i port; 0, or 1 after saying so. */
int pp_get_port_info(struct ibv_context *verbs, const struct pp_opts *o,
		     struct ibv_port_attr *attr);

/* ibv_open_device(); NULL after saying so. */
struct ibv_context *pp_open_device(struct ibv_device *dev);

/* The completion channel (-e only, else NULL) and the PD, in that order;
 * 0, or 1 after saying which failed (what was made stays in *channel and
 * *pd for the caller to release). */
int pp_alloc_channel_pd(struct ibv_context *verbs, const struct pp_opts *o,
			struct ibv_comp_channel **channel, struct ibv_pd **pd);

/* One step of a teardown: 0 when ret (the verb's result) is 0, else 1
 * after "Couldn't <what>". */
int pp_teardown(int ret, const char *what);

/* The end of every teardown: the PD, the channel if any, the device.
 * pp_close_device() checks each step (0, or 1 after saying which
 * failed); pp_release_device() is for a failed setup (any may be NULL). */
int pp_close_device(struct ibv_pd *pd, struct ibv_comp_channel *channel,
		    struct ibv_context *verbs);
void pp_release_device(struct ibv_pd *pd, struct ibv_comp_channel *channel,
		       struct ibv_context *verbs);

/* An address vector to dlid; with a GRH (hop limit 1, the -g source GID)
 * when dgid has an interface id, i.e. the peer is RoCE. */
void pp_ah_attr(struct ibv_ah_attr *ah, const struct pp_opts *o,
		unsigned int dlid, const union ibv_gid *dgid);

/* An RC QP from RESET to INIT on the -i port; ibv_modify_qp()'s result. */
int pp_rc_init(struct ibv_qp *qp, const struct pp_opts *o);

/*
 * An RC QP from INIT to RTR (to remote's QPN and PSN at remote's LID,
 * through dgid) and on to RTS with sq_psn: 0, or PP_RTR_FAILED /
 * PP_RTS_FAILED (the caller says which, in its own words).
 */
#define PP_RTR_FAILED 1
#define PP_RTS_FAILED 2
int pp_rc_rtr_rts(struct ibv_qp *qp, const struct pp_opts *o,
		  unsigned int sq_psn, const struct pp_addr *remote,
		  const union ibv_gid *dgid);

/* Whether a message of size bytes fits the QP's inline data. */
int pp_fits_inline(struct ibv_qp *qp, int size);

/* -e: wait for the CQ's next event, count it, ask for the next one;
 * 0, or 1 after saying why. */
int pp_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq *cq,
		    int *cq_events);

/* Up to n completions, waiting for one unless -e (an event said there
 * is some): how many, or -1 after "poll CQ failed". */
int pp_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc, int use_event);

/* 0 for a successful completion, else 1 after "Failed status ...". */
int pp_check_wc(enum ibv_wc_status status, uint64_t wr_id);

/* The "bytes in" and "iters in" lines for size * iters each way. */
void pp_print_rate(const struct timeval *t0, const struct timeval *t1,
		   const struct pp_opts *o);

/* ------------------------------------------------------------------ */
/* -c                                                                  */

/*
 * The client marks its buffer as the originals do: the first byte of
 * every page gets (page % sizeof(char)), i.e. 0, the rest keeps the fill.
 * The server checks what it received: every byte of each page (the
 * originals look at the first one only), "invalid data in page N" for a
 * bad one.
 */
void pp_mark_buffer(char *buf, long size, long page_sz);
void pp_check_buffer(const char *buf, long size, long page_sz, char fill);

#endif /* DROCE_EXAMPLES_PINGPONG_H */
