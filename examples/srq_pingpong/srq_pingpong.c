/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * srq_pingpong: RC SEND/RECV ping-pong over several QPs that share one
 * receive queue.
 *
 * A from-scratch program that behaves like rdma-core's ibv_srq_pingpong
 * (libibverbs/examples/srq_pingpong.c, rdma-core v44): the same options,
 * the same out-of-band TCP exchange (always 256 "LID:QPN:PSN:GID"
 * messages each way, unused ones zero, then "done"), the same output and
 * exit codes, so that either end can be the real one. A plain verbs
 * program: on droce, ibv_get_device_list() brings the devices up from
 * DROCE_EAL_ARGS / DROCE_DEVICES (see droce.h).
 *
 * num_qp RC QPs are connected pairwise; every QP's receives come from one
 * SRQ of rx_depth WQEs, refilled when no more than num_qp remain. A
 * completion's qp_num tells which QP it belongs to. As in the original,
 * the loop ends when iters sends and iters receives have completed in
 * total (over all QPs), and "bytes in" counts size * iters * 2.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/time.h>

#include <infiniband/verbs.h>

#include "pingpong.h"

#define WRID_RECV 1
#define WRID_SEND 2
#define MAX_QP 256		/* the exchange always carries this many */

/* the common options (pingpong.h), then those only srq_pingpong has */
static struct pp_opts opt;

static struct {
	unsigned int num_qp;
	int odp;
} srq_opt = {
	.num_qp = 16,
};

static long page_sz;

struct pp_ctx {
	struct ibv_context *verbs;
	struct ibv_comp_channel *channel;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_srq *srq;
	struct ibv_qp *qp[MAX_QP];
	char *buf;
	int size;
	int num_qp;
	int rx_depth;
	unsigned int send_flags;
	int pending[MAX_QP];
	struct ibv_port_attr port_attr;
};

/* ------------------------------------------------------------------ */
/* connecting the QPs pairwise                                         */

static int connect_ctx(struct pp_ctx *ctx, const struct pp_addr *local,
		       const struct pp_addr *remote)
{
	for (int i = 0; i < ctx->num_qp; i++) {
		/* as the original: the first address tells whether the peer
		 * wants a GRH, and its GID serves for every QP */
		switch (pp_rc_rtr_rts(ctx->qp[i], &opt, local[i].psn,
				      &remote[i], &remote[0].gid)) {
		case 0:
			break;
		case PP_RTR_FAILED:
			fprintf(stderr, "Failed to modify QP[%d] to RTR\n", i);
			return 1;
		default:
			fprintf(stderr, "Failed to modify QP[%d] to RTS\n", i);
			return 1;
		}
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* out-of-band exchange: MAX_QP addresses each way                     */

static int send_addrs(int fd, const struct pp_addr *a)
{
	char msg[PP_ADDR_MSG_LEN];

	for (int i = 0; i < MAX_QP; i++) {
		pp_addr_format(&a[i], msg);
		if (pp_write_full(fd, msg, PP_ADDR_MSG_LEN) != PP_ADDR_MSG_LEN) {
			fprintf(stderr, "Couldn't send local address\n");
			return 1;
		}
	}
	return 0;
}

static int recv_addrs(int fd, struct pp_addr *a, const char *who)
{
	char msg[PP_ADDR_MSG_LEN];

	for (int i = 0; i < MAX_QP; i++) {
		ssize_t n = pp_read_full(fd, msg, PP_ADDR_MSG_LEN);

		if (n != PP_ADDR_MSG_LEN || pp_addr_parse(msg, &a[i])) {
			if (n < 0)
				perror(who);
			fprintf(stderr, "%d/%d: Couldn't read remote address [%d]\n",
				n < 0 ? 0 : (int)n, PP_ADDR_MSG_LEN, i);
			return 1;
		}
	}
	return 0;
}

/* The shape of pp_exchange_client/server, but MAX_QP addresses each way
 * and the original's messages for those. */
static int exchange_client(const struct pp_addr *local, struct pp_addr *remote)
{
	int fd, ret = 1;

	fd = pp_tcp_connect(&opt);
	if (fd < 0)
		return 1;
	if (send_addrs(fd, local) || recv_addrs(fd, remote, "client read"))
		goto out;
	if (pp_write_full(fd, PP_DONE_MSG, PP_DONE_LEN) != PP_DONE_LEN) {
		perror("client write");
		goto out;
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

static int exchange_server(struct pp_ctx *ctx, const struct pp_addr *local,
			   struct pp_addr *remote)
{
	char msg[PP_DONE_LEN];
	int fd, ret = 1;

	fd = pp_tcp_accept(&opt);
	if (fd < 0)
		return 1;
	if (recv_addrs(fd, remote, "server read"))
		goto out;
	if (connect_ctx(ctx, local, remote)) {
		fprintf(stderr, "Couldn't connect to remote QP\n");
		goto out;
	}
	if (send_addrs(fd, local))
		goto out;
	if (pp_read_full(fd, msg, PP_DONE_LEN) != PP_DONE_LEN) {
		perror("client write");
		goto out;
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

/* ------------------------------------------------------------------ */
/* resources                                                           */

static void ctx_release(struct pp_ctx *ctx)
{
	for (int i = ctx->num_qp - 1; i >= 0; i--)
		if (ctx->qp[i])
			ibv_destroy_qp(ctx->qp[i]);
	if (ctx->srq)
		ibv_destroy_srq(ctx->srq);
	if (ctx->cq)
		ibv_destroy_cq(ctx->cq);
	if (ctx->mr)
		ibv_dereg_mr(ctx->mr);
	pp_release_device(ctx->pd, ctx->channel, ctx->verbs);
	free(ctx->buf);
	free(ctx);
}

static struct pp_ctx *ctx_create(struct ibv_device *dev)
{
	struct pp_ctx *ctx = calloc(1, sizeof(*ctx));
	unsigned int access = IBV_ACCESS_LOCAL_WRITE;
	struct ibv_srq_init_attr sa;

	if (!ctx)
		return NULL;
	ctx->size = (int)opt.size;
	ctx->num_qp = (int)srq_opt.num_qp;
	ctx->rx_depth = (int)opt.rx_depth;
	ctx->send_flags = IBV_SEND_SIGNALED;

	ctx->buf = pp_alloc_buf(opt.size, 0, page_sz);
	if (!ctx->buf)
		goto fail;
	ctx->verbs = pp_open_device(dev);
	if (!ctx->verbs)
		goto fail;
	if (srq_opt.odp) {
		const uint32_t need = IBV_ODP_SUPPORT_SEND |
				      IBV_ODP_SUPPORT_SRQ_RECV;
		struct ibv_device_attr_ex ax;

		memset(&ax, 0, sizeof(ax));
		if (ibv_query_device_ex(ctx->verbs, NULL, &ax)) {
			fprintf(stderr, "Couldn't query device for its features\n");
			goto fail;
		}
		if (!(ax.odp_caps.general_caps & IBV_ODP_SUPPORT) ||
		    (ax.odp_caps.per_transport_caps.rc_odp_caps & need) != need) {
			fprintf(stderr, "The device isn't ODP capable or does not support RC send, receive and srq with ODP\n");
			goto fail;
		}
		access |= IBV_ACCESS_ON_DEMAND;
	}
	if (pp_alloc_channel_pd(ctx->verbs, &opt, &ctx->channel, &ctx->pd))
		goto fail;
	ctx->mr = ibv_reg_mr(ctx->pd, ctx->buf, opt.size, (int)access);
	if (!ctx->mr) {
		fprintf(stderr, "Couldn't register MR\n");
		goto fail;
	}
	ctx->cq = ibv_create_cq(ctx->verbs, ctx->rx_depth + ctx->num_qp, NULL,
				ctx->channel, 0);
	if (!ctx->cq) {
		fprintf(stderr, "Couldn't create CQ\n");
		goto fail;
	}
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = (uint32_t)ctx->rx_depth;
	sa.attr.max_sge = 1;
	ctx->srq = ibv_create_srq(ctx->pd, &sa);
	if (!ctx->srq) {
		fprintf(stderr, "Couldn't create SRQ\n");
		goto fail;
	}
	for (int i = 0; i < ctx->num_qp; i++) {
		struct ibv_qp_init_attr ia;

		memset(&ia, 0, sizeof(ia));
		ia.qp_type = IBV_QPT_RC;
		ia.send_cq = ctx->cq;
		ia.recv_cq = ctx->cq;
		ia.srq = ctx->srq;
		ia.cap.max_send_wr = 1;
		ia.cap.max_send_sge = 1;
		ctx->qp[i] = ibv_create_qp(ctx->pd, &ia);
		if (!ctx->qp[i]) {
			fprintf(stderr, "Couldn't create QP[%d]\n", i);
			goto fail;
		}
		if (pp_fits_inline(ctx->qp[i], ctx->size))
			ctx->send_flags |= IBV_SEND_INLINE;
	}
	for (int i = 0; i < ctx->num_qp; i++) {
		if (pp_rc_init(ctx->qp[i], &opt)) {
			fprintf(stderr, "Failed to modify QP[%d] to INIT\n", i);
			goto fail;
		}
	}
	return ctx;
fail:
	ctx_release(ctx);
	return NULL;
}

static int ctx_destroy(struct pp_ctx *ctx)
{
	for (int i = 0; i < ctx->num_qp; i++)
		if (ibv_destroy_qp(ctx->qp[i])) {
			fprintf(stderr, "Couldn't destroy QP[%d]\n", i);
			return 1;
		}
	if (pp_teardown(ibv_destroy_srq(ctx->srq), "destroy SRQ") ||
	    pp_teardown(ibv_destroy_cq(ctx->cq), "destroy CQ") ||
	    pp_teardown(ibv_dereg_mr(ctx->mr), "deregister MR") ||
	    pp_close_device(ctx->pd, ctx->channel, ctx->verbs))
		return 1;
	free(ctx->buf);
	free(ctx);
	return 0;
}

/* ------------------------------------------------------------------ */
/* data path                                                           */

static int post_srq_recvs(struct pp_ctx *ctx, int n)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)ctx->buf,
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
		if (ibv_post_srq_recv(ctx->srq, &wr, &bad))
			break;
	return i;
}

static int post_send(struct pp_ctx *ctx, int qp_index)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)ctx->buf,
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

	return ibv_post_send(ctx->qp[qp_index], &wr, &bad);
}

static int find_qp(const struct pp_ctx *ctx, uint32_t qpn)
{
	for (int i = 0; i < ctx->num_qp; i++)
		if (ctx->qp[i]->qp_num == qpn)
			return i;
	return -1;
}

static void usage(const char *argv0)
{
	pp_usage_start(argv0);
	printf("  -s, --size=<size>      size of message to exchange (default 4096)\n");
	printf("  -m, --mtu=<size>       path MTU (default 1024)\n");
	printf("  -q, --num-qp=<num>     number of QPs to use (default 16)\n");
	printf("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n");
	printf("  -n, --iters=<iters>    number of exchanges per QP(default 1000)\n");
	printf("  -l, --sl=<sl>          service level value\n");
	printf("  -e, --events           sleep on CQ events (default poll)\n");
	printf("  -g, --gid-idx=<gid index> local port gid index\n");
	printf("  -o, --odp		    use on demand paging\n");
	printf("  -c, --chk              validate received buffer\n");
}

/* The options only srq_pingpong has, and -s (see pp_parse_args()). */
static int own_opt(int c, const char *arg)
{
	switch (c) {
	case 's':	/* as the original: at least one byte */
		opt.size = (unsigned int)strtoul(arg, NULL, 0);
		return opt.size < 1 ? -1 : 0;
	case 'q':
		srq_opt.num_qp = (unsigned int)strtoul(arg, NULL, 0);
		return 0;
	case 'o':
		srq_opt.odp = 1;
		return 0;
	default:
		return 1;
	}
}

static int parse_args(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "port",     required_argument, NULL, 'p' },
		{ "ib-dev",   required_argument, NULL, 'd' },
		{ "ib-port",  required_argument, NULL, 'i' },
		{ "size",     required_argument, NULL, 's' },
		{ "mtu",      required_argument, NULL, 'm' },
		{ "num-qp",   required_argument, NULL, 'q' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "iters",    required_argument, NULL, 'n' },
		{ "sl",       required_argument, NULL, 'l' },
		{ "events",   no_argument,       NULL, 'e' },
		{ "odp",      no_argument,       NULL, 'o' },
		{ "gid-idx",  required_argument, NULL, 'g' },
		{ "chk",      no_argument,       NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};

	if (pp_parse_args(&opt, argc, argv, "p:d:i:s:m:q:r:n:l:eog:c",
			  longopts, own_opt)) {
		usage(argv[0]);
		return 1;
	}
	return 0;
}

int main(int argc, char *argv[])
{
	struct ibv_device **devs, *dev;
	struct pp_ctx *ctx;
	static struct pp_addr local[MAX_QP], remote[MAX_QP];
	struct ibv_wc *wc;
	struct timeval t0, t1;
	unsigned int rcnt = 0, scnt = 0;
	int routs, num_wc, cq_events = 0;
	int ret = 1;

	srand48((long)getpid() * (long)time(NULL));
	pp_opts_init(&opt);
	if (parse_args(argc, argv))
		return 1;
	if (srq_opt.num_qp > opt.rx_depth) {
		fprintf(stderr, "rx_depth %d is too small for %d QPs -- "
			"must have at least one receive per QP.\n",
			(int)opt.rx_depth, (int)srq_opt.num_qp);
		return 1;
	}
	if (srq_opt.num_qp >= MAX_QP) {
		fprintf(stderr, "num_qp %d must be less than %d\n",
			(int)srq_opt.num_qp, MAX_QP - 1);
		return 1;
	}
	num_wc = (int)(srq_opt.num_qp + opt.rx_depth);
	wc = calloc((size_t)num_wc, sizeof(*wc));
	if (!wc)
		return 1;
	page_sz = sysconf(_SC_PAGESIZE);

	devs = pp_get_device(&opt, &dev);
	if (!devs) {
		free(wc);
		return 1;
	}
	ctx = ctx_create(dev);
	if (!ctx)
		goto out_devs;

	routs = post_srq_recvs(ctx, ctx->rx_depth);
	if (routs < ctx->rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", routs);
		goto fail;
	}
	if (opt.use_event && ibv_req_notify_cq(ctx->cq, 0)) {
		fprintf(stderr, "Couldn't request CQ notification\n");
		goto fail;
	}
	if (pp_get_port_info(ctx->verbs, &opt, &ctx->port_attr))
		goto fail;
	for (int i = 0; i < ctx->num_qp; i++) {
		local[i].qpn = ctx->qp[i]->qp_num;
		local[i].psn = (unsigned int)(lrand48() & 0xffffff);
		local[i].lid = ctx->port_attr.lid;
		if (ctx->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET &&
		    !local[i].lid) {
			fprintf(stderr, "Couldn't get local LID\n");
			goto fail;
		}
		if (opt.gidx >= 0 &&
		    ibv_query_gid(ctx->verbs, (uint8_t)opt.ib_port, opt.gidx,
				  &local[i].gid)) {
			fprintf(stderr, "Could not get local gid for gid index %d\n",
				opt.gidx);
			goto fail;
		}
		pp_print_addr("local address: ", &local[i]);
	}

	if (opt.servername ? exchange_client(local, remote)
			   : exchange_server(ctx, local, remote))
		goto fail;
	for (int i = 0; i < ctx->num_qp; i++)
		pp_print_addr("remote address:", &remote[i]);
	if (opt.servername && connect_ctx(ctx, local, remote))
		goto fail;

	if (opt.servername) {
		if (opt.check)	/* 0 at the start of each page (all zeros) */
			pp_mark_buffer(ctx->buf, ctx->size, page_sz);
		for (int i = 0; i < ctx->num_qp; i++) {
			if (post_send(ctx, i)) {
				fprintf(stderr, "Couldn't post send\n");
				goto fail;
			}
			ctx->pending[i] = WRID_SEND | WRID_RECV;
		}
	} else {
		for (int i = 0; i < ctx->num_qp; i++)
			ctx->pending[i] = WRID_RECV;
	}

	if (gettimeofday(&t0, NULL)) {
		perror("gettimeofday");
		goto fail;
	}
	while (rcnt < opt.iters || scnt < opt.iters) {
		int ne;

		if (opt.use_event &&
		    pp_get_cq_event(ctx->channel, ctx->cq, &cq_events))
			goto fail;
		ne = pp_poll_cq(ctx->cq, num_wc, wc, opt.use_event);
		if (ne < 0)
			goto fail;

		for (int i = 0; i < ne; i++) {
			int q;

			if (pp_check_wc(wc[i].status, wc[i].wr_id))
				goto fail;
			q = find_qp(ctx, wc[i].qp_num);
			if (q < 0) {
				fprintf(stderr, "Couldn't find QPN %06x\n",
					wc[i].qp_num);
				goto fail;
			}
			switch ((int)wc[i].wr_id) {
			case WRID_SEND:
				scnt++;
				break;
			case WRID_RECV:
				if (--routs <= ctx->num_qp) {
					routs += post_srq_recvs(ctx,
							ctx->rx_depth - routs);
					if (routs < ctx->rx_depth) {
						fprintf(stderr,
							"Couldn't post receive (%d)\n",
							routs);
						goto fail;
					}
				}
				rcnt++;
				break;
			default:
				fprintf(stderr, "Completion for unknown wr_id %d\n",
					(int)wc[i].wr_id);
				goto fail;
			}
			ctx->pending[q] &= ~(int)wc[i].wr_id;
			if (scnt < opt.iters && !ctx->pending[q]) {
				if (post_send(ctx, q)) {
					fprintf(stderr, "Couldn't post send\n");
					goto fail;
				}
				ctx->pending[q] = WRID_RECV | WRID_SEND;
			}
		}
	}
	if (gettimeofday(&t1, NULL)) {
		perror("gettimeofday");
		goto fail;
	}
	pp_print_rate(&t0, &t1, &opt);
	/* -c: the server checks what it received last */
	if (!opt.servername && opt.check)
		pp_check_buffer(ctx->buf, ctx->size, page_sz, 0);

	ibv_ack_cq_events(ctx->cq, (unsigned int)cq_events);
	ret = ctx_destroy(ctx);
	ibv_free_device_list(devs);
	free(wc);
	return ret;

fail:
	/* Error exits free everything too: the tests provoke them, under
	 * LeakSanitizer. */
	ibv_ack_cq_events(ctx->cq, (unsigned int)cq_events);
	ctx_release(ctx);
out_devs:
	ibv_free_device_list(devs);
	free(wc);
	return ret;
}
