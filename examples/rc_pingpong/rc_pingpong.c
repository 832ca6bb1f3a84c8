/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * rc_pingpong: RC SEND/RECV ping-pong over the verbs API.
 *
 * A from-scratch program that behaves like rdma-core's ibv_rc_pingpong
 * (libibverbs/examples/rc_pingpong.c, rdma-core v44): same options, same
 * out-of-band TCP exchange ("LID:QPN:PSN:GID" then "done"), same output and
 * exit codes, so that it can talk to the real one. It is a plain verbs
 * program: on droce, ibv_get_device_list() brings the devices up from
 * DROCE_EAL_ARGS / DROCE_DEVICES (see droce.h).
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/time.h>

#include <infiniband/verbs.h>

#include "pingpong.h"

/* wr_id values; also the bits of pp_ctx.pending */
#define WRID_RECV 1
#define WRID_SEND 2

/* The fill byte of a fresh buffer (the original fills with 0x7b as well). */
#define BUF_FILL 0x7b

/* the common options (pingpong.h), then those only rc_pingpong has */
static struct pp_opts opt;

static struct {
	int odp;
	int implicit_odp;
	int prefetch;
	int ts;
	int dm;
	int new_send;
	unsigned int linger_ms;
} rc_opt;

static long page_sz;

struct pp_ctx {
	struct ibv_context *verbs;
	struct ibv_comp_channel *channel;
	struct ibv_pd *pd;
	struct ibv_dm *dm;
	struct ibv_mr *mr;
	struct ibv_cq *cq;		/* always valid once created */
	struct ibv_cq_ex *cq_ex;	/* only with -t */
	struct ibv_qp *qp;
	struct ibv_qp_ex *qpx;		/* only with -N */
	char *buf;
	int size;
	int rx_depth;
	unsigned int send_flags;
	int pending;			/* WRID_* bits still outstanding */
	uint64_t ts_mask;
	struct ibv_port_attr port_attr;
};

/* Receive completion timestamp statistics (-t). */
struct ts_stats {
	uint64_t max_delta;
	uint64_t min_delta;
	uint64_t sum_delta;
	uint64_t prev;
	int have_prev;
	unsigned int samples;
};

/* ------------------------------------------------------------------ */
/* QP state transitions                                                */

static int qp_to_rtr_rts(struct pp_ctx *ctx, const struct pp_addr *local,
			 const struct pp_addr *remote)
{
	/* A GID with an interface id means the peer wants a GRH (RoCE). */
	switch (pp_rc_rtr_rts(ctx->qp, &opt, local->psn, remote, &remote->gid)) {
	case 0:
		return 0;
	case PP_RTR_FAILED:
		fprintf(stderr, "Failed to modify QP to RTR\n");
		return 1;
	default:
		fprintf(stderr, "Failed to modify QP to RTS\n");
		return 1;
	}
}

/* The server's QP goes to RTS during the exchange (pp_exchange_server). */
static int server_ready(void *ctx, const struct pp_addr *local,
			const struct pp_addr *remote)
{
	return qp_to_rtr_rts(ctx, local, remote);
}

/* ------------------------------------------------------------------ */
/* resources                                                           */

/* Optional features: check the device can do them (-o, -O, -t, -j). */
static int check_features(struct pp_ctx *ctx, unsigned int *access)
{
	const uint32_t rc_need = IBV_ODP_SUPPORT_SEND | IBV_ODP_SUPPORT_RECV;
	struct ibv_device_attr_ex ax;

	memset(&ax, 0, sizeof(ax));
	if (ibv_query_device_ex(ctx->verbs, NULL, &ax)) {
		fprintf(stderr, "Couldn't query device for its features\n");
		return 1;
	}
	if (rc_opt.odp) {
		if (!(ax.odp_caps.general_caps & IBV_ODP_SUPPORT) ||
		    (ax.odp_caps.per_transport_caps.rc_odp_caps & rc_need) !=
		    rc_need) {
			fprintf(stderr, "The device isn't ODP capable or does not support RC send and receive with ODP\n");
			return 1;
		}
		if (rc_opt.implicit_odp &&
		    !(ax.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT)) {
			fprintf(stderr, "The device doesn't support implicit ODP\n");
			return 1;
		}
		*access |= IBV_ACCESS_ON_DEMAND;
	}
	if (rc_opt.ts) {
		if (!ax.completion_timestamp_mask) {
			fprintf(stderr, "The device isn't completion timestamp capable\n");
			return 1;
		}
		ctx->ts_mask = ax.completion_timestamp_mask;
	}
	if (rc_opt.dm) {
		struct ibv_alloc_dm_attr dma;

		if (!ax.max_dm_size) {
			fprintf(stderr, "Device doesn't support dm allocation\n");
			return 1;
		}
		if (ax.max_dm_size < (uint64_t)ctx->size) {
			fprintf(stderr, "Device memory is insufficient\n");
			return 1;
		}
		memset(&dma, 0, sizeof(dma));
		dma.length = (size_t)ctx->size;
		ctx->dm = ibv_alloc_dm(ctx->verbs, &dma);
		if (!ctx->dm) {
			fprintf(stderr, "Dev mem allocation failed\n");
			return 1;
		}
		*access |= IBV_ACCESS_ZERO_BASED;
	}
	return 0;
}

static int create_qp(struct pp_ctx *ctx)
{
	struct ibv_qp_init_attr ia;

	if (rc_opt.new_send) {
		struct ibv_qp_init_attr_ex iax;

		memset(&iax, 0, sizeof(iax));
		iax.qp_type = IBV_QPT_RC;
		iax.send_cq = ctx->cq;
		iax.recv_cq = ctx->cq;
		iax.cap.max_send_wr = 1;
		iax.cap.max_recv_wr = (uint32_t)ctx->rx_depth;
		iax.cap.max_send_sge = 1;
		iax.cap.max_recv_sge = 1;
		iax.comp_mask = IBV_QP_INIT_ATTR_PD |
				IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		iax.pd = ctx->pd;
		iax.send_ops_flags = IBV_QP_EX_WITH_SEND;
		ctx->qp = ibv_create_qp_ex(ctx->verbs, &iax);
	} else {
		memset(&ia, 0, sizeof(ia));
		ia.qp_type = IBV_QPT_RC;
		ia.send_cq = ctx->cq;
		ia.recv_cq = ctx->cq;
		ia.cap.max_send_wr = 1;
		ia.cap.max_recv_wr = (uint32_t)ctx->rx_depth;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		ctx->qp = ibv_create_qp(ctx->pd, &ia);
	}
	if (!ctx->qp) {
		fprintf(stderr, "Couldn't create QP\n");
		return 1;
	}
	if (rc_opt.new_send)
		ctx->qpx = ibv_qp_to_qp_ex(ctx->qp);

	/* Small messages go inline when the QP allows it (not from DM). */
	if (pp_fits_inline(ctx->qp, ctx->size) && !rc_opt.dm)
		ctx->send_flags |= IBV_SEND_INLINE;

	if (pp_rc_init(ctx->qp, &opt)) {
		fprintf(stderr, "Failed to modify QP to INIT\n");
		return 1;
	}
	return 0;
}

static void ctx_release(struct pp_ctx *ctx)
{
	if (ctx->qp)
		ibv_destroy_qp(ctx->qp);
	if (ctx->cq)
		ibv_destroy_cq(ctx->cq);
	if (ctx->mr)
		ibv_dereg_mr(ctx->mr);
	if (ctx->dm)
		ibv_free_dm(ctx->dm);
	pp_release_device(ctx->pd, ctx->channel, ctx->verbs);
	free(ctx->buf);
	free(ctx);
}

static struct pp_ctx *ctx_create(struct ibv_device *dev)
{
	struct pp_ctx *ctx;
	unsigned int access = IBV_ACCESS_LOCAL_WRITE;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	ctx->size = (int)opt.size;
	ctx->rx_depth = (int)opt.rx_depth;
	ctx->send_flags = IBV_SEND_SIGNALED;

	ctx->buf = pp_alloc_buf(opt.size, BUF_FILL, page_sz);
	if (!ctx->buf)
		goto fail;
	ctx->verbs = pp_open_device(dev);
	if (!ctx->verbs)
		goto fail;
	if (pp_alloc_channel_pd(ctx->verbs, &opt, &ctx->channel, &ctx->pd))
		goto fail;
	if ((rc_opt.odp || rc_opt.ts || rc_opt.dm) &&
	    check_features(ctx, &access))
		goto fail;

	if (rc_opt.implicit_odp)
		ctx->mr = ibv_reg_mr(ctx->pd, NULL, SIZE_MAX, (int)access);
	else if (rc_opt.dm)
		ctx->mr = ibv_reg_dm_mr(ctx->pd, ctx->dm, 0, opt.size, access);
	else
		ctx->mr = ibv_reg_mr(ctx->pd, ctx->buf, opt.size, (int)access);
	if (!ctx->mr) {
		fprintf(stderr, "Couldn't register MR\n");
		goto fail;
	}
	if (rc_opt.prefetch) {
		struct ibv_sge sge = {
			.addr = (uintptr_t)ctx->buf,
			.length = opt.size,
			.lkey = ctx->mr->lkey,
		};
		int rc = ibv_advise_mr(ctx->pd,
				       IBV_ADVISE_MR_ADVICE_PREFETCH_WRITE,
				       IBV_ADVISE_MR_FLAG_FLUSH, &sge, 1);

		if (rc)
			fprintf(stderr, "Couldn't prefetch MR(%d). Continue anyway\n",
				rc);
	}

	if (rc_opt.ts) {
		struct ibv_cq_init_attr_ex cqa;

		memset(&cqa, 0, sizeof(cqa));
		cqa.cqe = (uint32_t)ctx->rx_depth + 1;
		cqa.channel = ctx->channel;
		cqa.comp_vector = 0;
		cqa.wc_flags = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP;
		ctx->cq_ex = ibv_create_cq_ex(ctx->verbs, &cqa);
		if (ctx->cq_ex)
			ctx->cq = ibv_cq_ex_to_cq(ctx->cq_ex);
	} else {
		ctx->cq = ibv_create_cq(ctx->verbs, ctx->rx_depth + 1, NULL,
					ctx->channel, 0);
	}
	if (!ctx->cq) {
		fprintf(stderr, "Couldn't create CQ\n");
		goto fail;
	}
	if (create_qp(ctx))
		goto fail;
	return ctx;
fail:
	ctx_release(ctx);
	return NULL;
}

/* Orderly teardown with the original's messages; 0 or 1. */
static int ctx_destroy(struct pp_ctx *ctx)
{
	if (pp_teardown(ibv_destroy_qp(ctx->qp), "destroy QP") ||
	    pp_teardown(ibv_destroy_cq(ctx->cq), "destroy CQ") ||
	    pp_teardown(ibv_dereg_mr(ctx->mr), "deregister MR") ||
	    (ctx->dm && pp_teardown(ibv_free_dm(ctx->dm), "free DM")) ||
	    pp_close_device(ctx->pd, ctx->channel, ctx->verbs))
		return 1;
	free(ctx->buf);
	free(ctx);
	return 0;
}

/* ------------------------------------------------------------------ */
/* data path                                                           */

/* Post up to n receives of the whole buffer; returns how many went in. */
static int post_recvs(struct pp_ctx *ctx, int n)
{
	struct ibv_sge sge = {
		.addr = rc_opt.dm ? 0 : (uintptr_t)ctx->buf,
		.length = (uint32_t)ctx->size,
		.lkey = ctx->mr->lkey,
	};
	struct ibv_recv_wr wr = {
		.wr_id = WRID_RECV,
		.sg_list = &sge,
		.num_sge = 1,
	};
	struct ibv_recv_wr *bad;
	int i;

	for (i = 0; i < n; i++)
		if (ibv_post_recv(ctx->qp, &wr, &bad))
			break;
	return i;
}

static int post_one_send(struct pp_ctx *ctx)
{
	uint64_t addr = rc_opt.dm ? 0 : (uintptr_t)ctx->buf;
	struct ibv_sge sge = {
		.addr = addr,
		.length = (uint32_t)ctx->size,
		.lkey = ctx->mr->lkey,
	};
	struct ibv_send_wr wr = {
		.wr_id = WRID_SEND,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IBV_WR_SEND,
		.send_flags = ctx->send_flags,
	};
	struct ibv_send_wr *bad;

	if (!rc_opt.new_send)
		return ibv_post_send(ctx->qp, &wr, &bad);

	/*
	 * The ibv_wr_* API: inline data has its own setter rather than a
	 * wr_flags bit.
	 */
	ibv_wr_start(ctx->qpx);
	ctx->qpx->wr_id = WRID_SEND;
	ctx->qpx->wr_flags = ctx->send_flags & ~(unsigned int)IBV_SEND_INLINE;
	ibv_wr_send(ctx->qpx);
	if (ctx->send_flags & IBV_SEND_INLINE)
		ibv_wr_set_inline_data(ctx->qpx, ctx->buf, (size_t)ctx->size);
	else
		ibv_wr_set_sge(ctx->qpx, sge.lkey, addr, sge.length);
	return ibv_wr_complete(ctx->qpx);
}

struct run_state {
	unsigned int sent;	/* send completions */
	unsigned int rcvd;	/* receive completions */
	int posted_recvs;	/* receives outstanding */
	struct ts_stats ts;
};

/* One completion; 0 to go on, 1 on error. */
static int handle_completion(struct pp_ctx *ctx, struct run_state *st,
			     uint64_t wr_id, enum ibv_wc_status status,
			     uint64_t stamp)
{
	if (pp_check_wc(status, wr_id))
		return 1;

	if (wr_id == WRID_SEND) {
		st->sent++;
	} else if (wr_id == WRID_RECV) {
		/* refill the receive queue when it is about to run dry */
		if (--st->posted_recvs <= 1) {
			st->posted_recvs += post_recvs(ctx, ctx->rx_depth -
						       st->posted_recvs);
			if (st->posted_recvs < ctx->rx_depth) {
				fprintf(stderr, "Couldn't post receive (%d)\n",
					st->posted_recvs);
				return 1;
			}
		}
		st->rcvd++;
		if (rc_opt.ts) {
			struct ts_stats *t = &st->ts;

			if (t->have_prev) {
				uint64_t d = stamp >= t->prev ?
					stamp - t->prev :
					ctx->ts_mask - t->prev + stamp + 1;

				if (d > t->max_delta)
					t->max_delta = d;
				if (d < t->min_delta)
					t->min_delta = d;
				t->sum_delta += d;
				t->samples++;
			}
			t->prev = stamp;
			t->have_prev = 1;
		}
	} else {
		fprintf(stderr, "Completion for unknown wr_id %d\n", (int)wr_id);
		return 1;
	}

	/* next ping once both our send and the peer's message are in */
	ctx->pending &= ~(int)wr_id;
	if (!ctx->pending && st->sent < opt.iters) {
		if (post_one_send(ctx)) {
			fprintf(stderr, "Couldn't post send\n");
			return 1;
		}
		ctx->pending = WRID_RECV | WRID_SEND;
	}
	return 0;
}

/* Wait for and handle the next completion(s); returns 0 or the exit code. */
static int poll_step(struct pp_ctx *ctx, struct run_state *st,
		     int *cq_events)
{
	if (opt.use_event && pp_get_cq_event(ctx->channel, ctx->cq, cq_events))
		return 1;

	if (rc_opt.ts) {
		struct ibv_poll_cq_attr pa = { .comp_mask = 0 };
		int rc;

		do
			rc = ibv_start_poll(ctx->cq_ex, &pa);
		while (rc == ENOENT && !opt.use_event);
		if (rc) {
			fprintf(stderr, "poll CQ failed %d\n", rc);
			return rc;
		}
		/* up to two completions per round, like the plain path */
		rc = handle_completion(ctx, st, ctx->cq_ex->wr_id,
				       ctx->cq_ex->status,
				       ibv_wc_read_completion_ts(ctx->cq_ex));
		if (rc) {
			ibv_end_poll(ctx->cq_ex);
			return rc;
		}
		rc = ibv_next_poll(ctx->cq_ex);
		if (rc == 0)
			rc = handle_completion(ctx, st, ctx->cq_ex->wr_id,
					       ctx->cq_ex->status,
					       ibv_wc_read_completion_ts(ctx->cq_ex));
		ibv_end_poll(ctx->cq_ex);
		if (rc && rc != ENOENT) {
			fprintf(stderr, "poll CQ failed %d\n", rc);
			return rc;
		}
		return 0;
	}

	struct ibv_wc wc[2];
	int n = pp_poll_cq(ctx->cq, 2, wc, opt.use_event);

	if (n < 0)
		return 1;

	for (int i = 0; i < n; i++) {
		if (handle_completion(ctx, st, wc[i].wr_id, wc[i].status, 0)) {
			fprintf(stderr, "parse WC failed %d\n", n);
			return 1;
		}
	}
	return 0;
}

/*
 * The exchange has no closing handshake (as ibv_rc_pingpong's): a side
 * leaves once its last send is acknowledged and the peer's last message is
 * in, while the peer may still wait for the acknowledgement of that
 * message. On a lossy link that ACK can be lost, and the peer then resends
 * to a QP that is gone until its retry count runs out. -L keeps the QP (and
 * the device polled, for an app-driven droce engine) for a while, so that
 * such a resend is answered: the responder takes it as a duplicate and
 * acknowledges it again (IBTA 9.7.5.1.2). Nothing is posted meanwhile; a
 * completion would mean an error and is reported.
 */
static int linger(struct pp_ctx *ctx, unsigned int ms)
{
	struct timespec t0, t;
	struct ibv_wc wc;
	int n;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		n = ibv_poll_cq(ctx->cq, 1, &wc);
		if (n != 0) {
			fprintf(stderr, "linger: %s\n", n < 0 ? "poll CQ failed" :
				ibv_wc_status_str(wc.status));
			return 1;
		}
		usleep(500);
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1000 +
		 (t.tv_nsec - t0.tv_nsec) / 1000000 < (long)ms);
	printf("lingered %u ms after the last exchange\n", ms);
	return 0;
}

/* ------------------------------------------------------------------ */

static void usage(const char *argv0)
{
	pp_usage_start(argv0);
	printf("  -s, --size=<size>      size of message to exchange (default 4096)\n");
	printf("  -m, --mtu=<size>       path MTU (default 1024)\n");
	printf("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n");
	printf("  -n, --iters=<iters>    number of exchanges (default 1000)\n");
	printf("  -l, --sl=<sl>          service level value\n");
	printf("  -e, --events           sleep on CQ events (default poll)\n");
	printf("  -g, --gid-idx=<gid index> local port gid index\n");
	printf("  -o, --odp              use on demand paging\n");
	printf("  -O, --iodp             use implicit on demand paging\n");
	printf("  -P, --prefetch         prefetch an ODP MR\n");
	printf("  -t, --ts               get CQE with timestamp\n");
	printf("  -c, --chk              validate received buffer\n");
	printf("  -j, --dm               use device memory\n");
	printf("  -N, --new_send         use new post send WR API\n");
	printf("  -L, --linger=<ms>      keep the QP <ms> after the last exchange (default 0)\n");
}

/* The options only rc_pingpong has (see pp_parse_args()). */
static int own_opt(int c, const char *arg)
{
	switch (c) {
	case 'o':
		rc_opt.odp = 1;
		return 0;
	case 'O':
		rc_opt.odp = 1;
		rc_opt.implicit_odp = 1;
		return 0;
	case 'P':
		rc_opt.prefetch = 1;
		return 0;
	case 't':
		rc_opt.ts = 1;
		return 0;
	case 'j':
		rc_opt.dm = 1;
		return 0;
	case 'N':
		rc_opt.new_send = 1;
		return 0;
	case 'L':
		rc_opt.linger_ms = (unsigned int)strtoul(arg, NULL, 0);
		return 0;
	default:
		return 1;
	}
}

/* Options; 0, or 1 after printing the usage. */
static int parse_args(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "port",     required_argument, NULL, 'p' },
		{ "ib-dev",   required_argument, NULL, 'd' },
		{ "ib-port",  required_argument, NULL, 'i' },
		{ "size",     required_argument, NULL, 's' },
		{ "mtu",      required_argument, NULL, 'm' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "iters",    required_argument, NULL, 'n' },
		{ "sl",       required_argument, NULL, 'l' },
		{ "events",   no_argument,       NULL, 'e' },
		{ "gid-idx",  required_argument, NULL, 'g' },
		{ "odp",      no_argument,       NULL, 'o' },
		{ "iodp",     no_argument,       NULL, 'O' },
		{ "prefetch", no_argument,       NULL, 'P' },
		{ "ts",       no_argument,       NULL, 't' },
		{ "chk",      no_argument,       NULL, 'c' },
		{ "dm",       no_argument,       NULL, 'j' },
		{ "new_send", no_argument,       NULL, 'N' },
		{ "linger",   required_argument, NULL, 'L' },
		{ NULL, 0, NULL, 0 }
	};

	if (pp_parse_args(&opt, argc, argv, "p:d:i:s:m:r:n:l:eg:oOPtcjNL:",
			  longopts, own_opt)) {
		usage(argv[0]);
		return 1;
	}
	return 0;
}

int main(int argc, char *argv[])
{
	struct ibv_device **devs;
	struct ibv_device *dev;
	struct pp_ctx *ctx;
	struct pp_addr local, remote;
	struct run_state st;
	struct timeval t0, t1;
	int cq_events = 0;
	int ret = 1;
	int rc;

	srand48((long)getpid() * (long)time(NULL));

	pp_opts_init(&opt);
	if (parse_args(argc, argv))
		return 1;
	if (rc_opt.odp && rc_opt.dm) {
		fprintf(stderr, "DM memory region can't be on demand\n");
		return 1;
	}
	if (rc_opt.prefetch && !rc_opt.odp) {
		fprintf(stderr, "prefetch is valid only with on-demand memory region\n");
		return 1;
	}

	memset(&st, 0, sizeof(st));
	st.ts.min_delta = 0xffffffff;
	page_sz = sysconf(_SC_PAGESIZE);

	devs = pp_get_device(&opt, &dev);
	if (!devs)
		return 1;

	ctx = ctx_create(dev);
	if (!ctx)
		goto out_devs;

	st.posted_recvs = post_recvs(ctx, ctx->rx_depth);
	if (st.posted_recvs < ctx->rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", st.posted_recvs);
		goto fail;
	}
	if (opt.use_event && ibv_req_notify_cq(ctx->cq, 0)) {
		fprintf(stderr, "Couldn't request CQ notification\n");
		goto fail;
	}
	if (pp_get_port_info(ctx->verbs, &opt, &ctx->port_attr))
		goto fail;

	memset(&local, 0, sizeof(local));
	local.lid = ctx->port_attr.lid;
	if (!local.lid && ctx->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
		fprintf(stderr, "Couldn't get local LID\n");
		goto fail;
	}
	if (opt.gidx >= 0 &&
	    ibv_query_gid(ctx->verbs, (uint8_t)opt.ib_port, opt.gidx,
			  &local.gid)) {
		fprintf(stderr, "can't read sgid of index %d\n", opt.gidx);
		goto fail;
	}
	local.qpn = ctx->qp->qp_num;
	local.psn = (unsigned int)(lrand48() & 0xffffff);
	pp_print_addr("local address: ", &local);

	if (opt.servername)
		rc = pp_exchange_client(&opt, &local, &remote);
	else
		rc = pp_exchange_server(&opt, &local, &remote, server_ready,
					ctx);
	if (rc)
		goto fail;
	pp_print_addr("remote address:", &remote);

	/* the server went to RTS during the exchange, the client does now */
	if (opt.servername && qp_to_rtr_rts(ctx, &local, &remote))
		goto fail;

	ctx->pending = WRID_RECV;
	if (opt.servername) {
		/* -c: 0x7b everywhere, 0 at the start of each page */
		if (opt.check)
			pp_mark_buffer(ctx->buf, ctx->size, page_sz);
		if (rc_opt.dm &&
		    ibv_memcpy_to_dm(ctx->dm, 0, ctx->buf, opt.size)) {
			fprintf(stderr, "Copy to dm buffer failed\n");
			goto fail;
		}
		if (post_one_send(ctx)) {
			fprintf(stderr, "Couldn't post send\n");
			goto fail;
		}
		ctx->pending |= WRID_SEND;
	}

	if (gettimeofday(&t0, NULL)) {
		perror("gettimeofday");
		goto fail;
	}
	while (st.rcvd < opt.iters || st.sent < opt.iters) {
		rc = poll_step(ctx, &st, &cq_events);
		if (rc) {
			ret = rc;
			goto fail;
		}
	}
	if (gettimeofday(&t1, NULL)) {
		perror("gettimeofday");
		goto fail;
	}

	pp_print_rate(&t0, &t1, &opt);
	if (rc_opt.ts && st.ts.samples) {
		printf("Max receive completion clock cycles = %" PRIu64 "\n",
		       st.ts.max_delta);
		printf("Min receive completion clock cycles = %" PRIu64 "\n",
		       st.ts.min_delta);
		printf("Average receive completion clock cycles = %f\n",
		       (double)st.ts.sum_delta / st.ts.samples);
	}
	if (!opt.servername && opt.check) {
		if (rc_opt.dm && ibv_memcpy_from_dm(ctx->buf, ctx->dm, 0,
						 opt.size)) {
			fprintf(stderr, "Copy from DM buffer failed\n");
			goto fail;
		}
		pp_check_buffer(ctx->buf, ctx->size, page_sz, (char)BUF_FILL);
	}

	if (rc_opt.linger_ms && linger(ctx, rc_opt.linger_ms))
		goto fail;
	ibv_ack_cq_events(ctx->cq, (unsigned int)cq_events);
	ret = ctx_destroy(ctx);
	ibv_free_device_list(devs);
	return ret;

fail:
	/* Error exits free everything too: the tests provoke them, under
	 * LeakSanitizer. */
	ibv_ack_cq_events(ctx->cq, (unsigned int)cq_events);
	ctx_release(ctx);
out_devs:
	ibv_free_device_list(devs);
	return ret;
}
