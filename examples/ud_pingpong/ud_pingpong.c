/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ud_pingpong: UD SEND/RECV ping-pong over the verbs API.
 *
 * A from-scratch program that behaves like rdma-core's ibv_ud_pingpong
 * (libibverbs/examples/ud_pingpong.c, rdma-core v44): the same options,
 * the same out-of-band TCP exchange ("LID:QPN:PSN:GID", then "done"), the
 * same output and exit codes, so that either end can be the real one. A
 * plain verbs program: on droce, ibv_get_device_list() brings the devices
 * up from DROCE_EAL_ARGS / DROCE_DEVICES (see droce.h).
 *
 * Unlike the connected examples there is no connection: each side brings
 * its UD QP to RTS (Q_Key 0x11111111) and sends datagrams through an
 * address handle to the peer's GID. Every receive buffer starts with the
 * 40-byte GRH area, so buffers are size + 40 bytes and the payload is
 * sent from, and lands at, offset 40.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/time.h>

#include <infiniband/verbs.h>

#include "pingpong.h"

/* wr_id values; also the bits of pending */
#define WRID_RECV 1
#define WRID_SEND 2

#define GRH_LEN 40
#define QKEY 0x11111111u

/* Fill byte of a fresh buffer (the original's as well). */
#define BUF_FILL 0x7b

/* the common options (pingpong.h): no -m, and a default size of 1024 */
static struct pp_opts opt;

static long page_sz;

struct pp_ctx {
	struct ibv_context *verbs;
	struct ibv_comp_channel *channel;
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	char *buf;			/* GRH area + payload */
	int size;
	int rx_depth;
	unsigned int send_flags;
	int pending;
	struct ibv_port_attr port_attr;
};

/* ------------------------------------------------------------------ */
/* "connecting": RTR, RTS and an address handle to the peer            */

static int connect_ctx(struct pp_ctx *ctx, const struct pp_addr *local,
		       const struct pp_addr *remote)
{
	struct ibv_qp_attr attr;
	struct ibv_ah_attr ah;

	/* ibv_modify_qp(3), UD: INIT -> RTR needs nothing but the state */
	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	if (ibv_modify_qp(ctx->qp, &attr, IBV_QP_STATE)) {
		fprintf(stderr, "Failed to modify QP to RTR\n");
		return 1;
	}
	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = local->psn;
	if (ibv_modify_qp(ctx->qp, &attr, IBV_QP_STATE | IBV_QP_SQ_PSN)) {
		fprintf(stderr, "Failed to modify QP to RTS\n");
		return 1;
	}

	/* an interface id in the peer's GID: it wants a GRH (RoCE) */
	pp_ah_attr(&ah, &opt, remote->lid, &remote->gid);
	ctx->ah = ibv_create_ah(ctx->pd, &ah);
	if (!ctx->ah) {
		fprintf(stderr, "Failed to create AH\n");
		return 1;
	}
	return 0;
}

/* The server gets ready (RTR, RTS, AH) during the exchange
 * (pp_exchange_server), before it answers with its address. */
static int server_ready(void *ctx, const struct pp_addr *local,
			const struct pp_addr *remote)
{
	return connect_ctx(ctx, local, remote);
}

/* ------------------------------------------------------------------ */
/* resources                                                           */

static void ctx_release(struct pp_ctx *ctx)
{
	if (ctx->qp)
		ibv_destroy_qp(ctx->qp);
	if (ctx->cq)
		ibv_destroy_cq(ctx->cq);
	if (ctx->mr)
		ibv_dereg_mr(ctx->mr);
	if (ctx->ah)
		ibv_destroy_ah(ctx->ah);
	pp_release_device(ctx->pd, ctx->channel, ctx->verbs);
	free(ctx->buf);
	free(ctx);
}

static struct pp_ctx *ctx_create(struct ibv_device *dev)
{
	struct pp_ctx *ctx = calloc(1, sizeof(*ctx));
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	int mtu;

	if (!ctx)
		return NULL;
	ctx->size = (int)opt.size;
	ctx->rx_depth = (int)opt.rx_depth;
	ctx->send_flags = IBV_SEND_SIGNALED;

	ctx->buf = pp_alloc_buf(opt.size + GRH_LEN, BUF_FILL, page_sz);
	if (!ctx->buf)
		goto fail;
	ctx->verbs = pp_open_device(dev);
	if (!ctx->verbs)
		goto fail;
	/* a datagram is one packet: at most the port's MTU */
	if (ibv_query_port(ctx->verbs, (uint8_t)opt.ib_port, &ctx->port_attr)) {
		fprintf(stderr, "Unable to query port info for port %d\n",
			opt.ib_port);
		goto fail;
	}
	mtu = 1 << (ctx->port_attr.active_mtu + 7);
	if (ctx->size > mtu) {
		fprintf(stderr, "Requested size larger than port MTU (%d)\n",
			mtu);
		goto fail;
	}
	if (pp_alloc_channel_pd(ctx->verbs, &opt, &ctx->channel, &ctx->pd))
		goto fail;
	ctx->mr = ibv_reg_mr(ctx->pd, ctx->buf, opt.size + GRH_LEN,
			     IBV_ACCESS_LOCAL_WRITE);
	if (!ctx->mr) {
		fprintf(stderr, "Couldn't register MR\n");
		goto fail;
	}
	ctx->cq = ibv_create_cq(ctx->verbs, ctx->rx_depth + 1, NULL,
				ctx->channel, 0);
	if (!ctx->cq) {
		fprintf(stderr, "Couldn't create CQ\n");
		goto fail;
	}

	memset(&ia, 0, sizeof(ia));
	ia.qp_type = IBV_QPT_UD;
	ia.send_cq = ctx->cq;
	ia.recv_cq = ctx->cq;
	ia.cap.max_send_wr = 1;
	ia.cap.max_recv_wr = (uint32_t)ctx->rx_depth;
	ia.cap.max_send_sge = 1;
	ia.cap.max_recv_sge = 1;
	ctx->qp = ibv_create_qp(ctx->pd, &ia);
	if (!ctx->qp) {
		fprintf(stderr, "Couldn't create QP\n");
		goto fail;
	}
	/* small datagrams go inline when the QP allows it */
	if (pp_fits_inline(ctx->qp, ctx->size))
		ctx->send_flags |= IBV_SEND_INLINE;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.pkey_index = 0;
	qa.port_num = (uint8_t)opt.ib_port;
	qa.qkey = QKEY;
	if (ibv_modify_qp(ctx->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_QKEY)) {
		fprintf(stderr, "Failed to modify QP to INIT\n");
		goto fail;
	}
	return ctx;
fail:
	ctx_release(ctx);
	return NULL;
}

/* The original's teardown order and messages. */
static int ctx_destroy(struct pp_ctx *ctx)
{
	if (pp_teardown(ibv_destroy_qp(ctx->qp), "destroy QP") ||
	    pp_teardown(ibv_destroy_cq(ctx->cq), "destroy CQ") ||
	    pp_teardown(ibv_dereg_mr(ctx->mr), "deregister MR") ||
	    pp_teardown(ibv_destroy_ah(ctx->ah), "destroy AH") ||
	    pp_close_device(ctx->pd, ctx->channel, ctx->verbs))
		return 1;
	free(ctx->buf);
	free(ctx);
	return 0;
}

/* ------------------------------------------------------------------ */
/* data path                                                           */

/* Receives of the whole buffer: the GRH area, then the payload. */
static int post_recvs(struct pp_ctx *ctx, int n)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)ctx->buf,
		.length = (uint32_t)ctx->size + GRH_LEN,
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

/* One datagram of the payload (after the GRH area) to the peer's QP. */
static int post_send(struct pp_ctx *ctx, uint32_t qpn)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)ctx->buf + GRH_LEN,
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

	wr.wr.ud.ah = ctx->ah;
	wr.wr.ud.remote_qpn = qpn;
	wr.wr.ud.remote_qkey = QKEY;
	return ibv_post_send(ctx->qp, &wr, &bad);
}

static void usage(const char *argv0)
{
	pp_usage_start(argv0);
	printf("  -s, --size=<size>      size of message to exchange (default 2048)\n");
	printf("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n");
	printf("  -n, --iters=<iters>    number of exchanges (default 1000)\n");
	printf("  -l, --sl=<SL>          send messages with service level <SL> (default 0)\n");
	printf("  -e, --events           sleep on CQ events (default poll)\n");
	printf("  -g, --gid-idx=<gid index> local port gid index\n");
	printf("  -c, --chk              validate received buffer\n");
}

/* -p: as the original, read with strtol(), not strtoul() */
static int own_opt(int c, const char *arg)
{
	if (c != 'p')
		return 1;
	opt.tcp_port = (unsigned int)strtol(arg, NULL, 0);
	return opt.tcp_port > 65535 ? -1 : 0;
}

static int parse_args(int argc, char *argv[])
{
	static const struct option longopts[] = {
		{ "port",     required_argument, NULL, 'p' },
		{ "ib-dev",   required_argument, NULL, 'd' },
		{ "ib-port",  required_argument, NULL, 'i' },
		{ "size",     required_argument, NULL, 's' },
		{ "rx-depth", required_argument, NULL, 'r' },
		{ "iters",    required_argument, NULL, 'n' },
		{ "sl",       required_argument, NULL, 'l' },
		{ "events",   no_argument,       NULL, 'e' },
		{ "gid-idx",  required_argument, NULL, 'g' },
		{ "chk",      no_argument,       NULL, 'c' },
		{ NULL, 0, NULL, 0 }
	};

	if (pp_parse_args(&opt, argc, argv, "p:d:i:s:r:n:l:eg:c",
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
	struct pp_addr local, remote;
	struct timeval t0, t1;
	unsigned int rcnt = 0, scnt = 0;
	int routs, cq_events = 0;
	int ret = 1;
	char gid[INET6_ADDRSTRLEN];

	srand48((long)getpid() * (long)time(NULL));
	pp_opts_init(&opt);
	opt.size = 1024;	/* v44's default (its usage text says 2048) */
	if (parse_args(argc, argv))
		return 1;
	page_sz = sysconf(_SC_PAGESIZE);

	devs = pp_get_device(&opt, &dev);
	if (!devs)
		return 1;
	ctx = ctx_create(dev);
	if (!ctx)
		goto out_devs;

	routs = post_recvs(ctx, ctx->rx_depth);
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

	memset(&local, 0, sizeof(local));
	local.lid = ctx->port_attr.lid;
	local.qpn = ctx->qp->qp_num;
	local.psn = (unsigned int)(lrand48() & 0xffffff);
	if (opt.gidx >= 0 &&
	    ibv_query_gid(ctx->verbs, (uint8_t)opt.ib_port, opt.gidx,
			  &local.gid)) {
		fprintf(stderr, "Could not get local gid for gid index %d\n",
			opt.gidx);
		goto fail;
	}
	/* (sic: the original's local line has a colon before GID) */
	printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x: GID %s\n",
	       local.lid, local.qpn, local.psn,
	       pp_gid_str(&local.gid, gid, sizeof(gid)));

	if (opt.servername ? pp_exchange_client(&opt, &local, &remote)
			   : pp_exchange_server(&opt, &local, &remote,
						server_ready, ctx))
		goto fail;
	pp_print_addr("remote address:", &remote);
	if (opt.servername && connect_ctx(ctx, &local, &remote))
		goto fail;

	/* the client sends first; each side answers what it receives */
	ctx->pending = WRID_RECV;
	if (opt.servername) {
		if (opt.check)	/* the payload, after the GRH area */
			pp_mark_buffer(ctx->buf + GRH_LEN, ctx->size, page_sz);
		if (post_send(ctx, remote.qpn)) {
			fprintf(stderr, "Couldn't post send\n");
			goto fail;
		}
		ctx->pending |= WRID_SEND;
	}

	if (gettimeofday(&t0, NULL)) {
		perror("gettimeofday");
		goto fail;
	}
	while (rcnt < opt.iters || scnt < opt.iters) {
		struct ibv_wc wc[2];
		int ne;

		if (opt.use_event &&
		    pp_get_cq_event(ctx->channel, ctx->cq, &cq_events))
			goto fail;
		ne = pp_poll_cq(ctx->cq, 2, wc, opt.use_event);
		if (ne < 0)
			goto fail;

		for (int i = 0; i < ne; i++) {
			if (pp_check_wc(wc[i].status, wc[i].wr_id))
				goto fail;
			switch ((int)wc[i].wr_id) {
			case WRID_SEND:
				scnt++;
				break;
			case WRID_RECV:
				if (--routs <= 1) {
					routs += post_recvs(ctx, ctx->rx_depth - routs);
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
			ctx->pending &= ~(int)wc[i].wr_id;
			if (scnt < opt.iters && !ctx->pending) {
				if (post_send(ctx, remote.qpn)) {
					fprintf(stderr, "Couldn't post send\n");
					goto fail;
				}
				ctx->pending = WRID_RECV | WRID_SEND;
			}
		}
	}
	if (gettimeofday(&t1, NULL)) {
		perror("gettimeofday");
		goto fail;
	}
	pp_print_rate(&t0, &t1, &opt);
	/* -c: the server checks the last datagram it received */
	if (!opt.servername && opt.check)
		pp_check_buffer(ctx->buf + GRH_LEN, ctx->size, page_sz,
				(char)BUF_FILL);

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
