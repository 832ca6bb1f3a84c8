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
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/types.h>

#include <infiniband/verbs.h>

#define WRID_RECV 1
#define WRID_SEND 2
#define MAX_QP 256		/* the exchange always carries this many */

#define ADDR_MSG_LEN ((int)sizeof("0000:000000:000000:00000000000000000000000000000000"))
#define DONE_MSG "done"
#define DONE_LEN ((int)sizeof(DONE_MSG))

struct pp_opts {
	const char *servername;
	const char *ib_devname;
	unsigned int tcp_port;
	int ib_port;
	unsigned int size;
	enum ibv_mtu mtu;
	unsigned int num_qp;
	unsigned int rx_depth;
	unsigned int iters;
	int sl;
	int use_event;
	int gidx;
	int odp;
	int check;
};

static struct pp_opts opt = {
	.tcp_port = 18515,
	.ib_port = 1,
	.size = 4096,
	.mtu = IBV_MTU_1024,
	.num_qp = 16,
	.rx_depth = 500,
	.iters = 1000,
	.gidx = -1,
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

struct pp_addr {
	unsigned int lid;
	unsigned int qpn;
	unsigned int psn;
	union ibv_gid gid;
};

/* ------------------------------------------------------------------ */
/* the address messages                                                */

static void gid_to_hex(const union ibv_gid *gid, char out[33])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 16; i++) {
		out[2 * i] = digits[gid->raw[i] >> 4];
		out[2 * i + 1] = digits[gid->raw[i] & 0xf];
	}
	out[32] = '\0';
}

static int hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

static int hex_to_gid(const char *hex, union ibv_gid *gid)
{
	for (int i = 0; i < 16; i++) {
		int hi = hex_digit(hex[2 * i]);
		int lo = hi < 0 ? -1 : hex_digit(hex[2 * i + 1]);

		if (lo < 0)
			return -1;
		gid->raw[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

static void addr_format(const struct pp_addr *a, char msg[ADDR_MSG_LEN])
{
	char hex[33];

	gid_to_hex(&a->gid, hex);
	memset(msg, 0, ADDR_MSG_LEN);
	snprintf(msg, ADDR_MSG_LEN, "%04x:%06x:%06x:%s", a->lid & 0xffff,
		 a->qpn & 0xffffff, a->psn & 0xffffff, hex);
}

static int addr_parse(const char *msg, struct pp_addr *a)
{
	char buf[ADDR_MSG_LEN + 1], hex[33];

	memcpy(buf, msg, ADDR_MSG_LEN);
	buf[ADDR_MSG_LEN] = '\0';
	memset(a, 0, sizeof(*a));
	if (sscanf(buf, "%x:%x:%x:%32s", &a->lid, &a->qpn, &a->psn, hex) != 4 ||
	    strlen(hex) != 32 || hex_to_gid(hex, &a->gid))
		return -1;
	return 0;
}

static void print_addr(const char *what, const struct pp_addr *a)
{
	char gid[INET6_ADDRSTRLEN];

	if (!inet_ntop(AF_INET6, a->gid.raw, gid, sizeof(gid)))
		snprintf(gid, sizeof(gid), "?");
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", what,
	       a->lid, a->qpn, a->psn, gid);
}

static ssize_t read_full(int fd, void *p, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = read(fd, (char *)p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -1;
		if (n == 0)
			break;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

static ssize_t write_full(int fd, const void *p, size_t len)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = write(fd, (const char *)p + done, len - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return (ssize_t)done;
}

/* ------------------------------------------------------------------ */
/* connecting the QPs pairwise                                         */

static int connect_ctx(struct pp_ctx *ctx, const struct pp_addr *local,
		       const struct pp_addr *remote)
{
	for (int i = 0; i < ctx->num_qp; i++) {
		struct ibv_qp_attr attr;

		memset(&attr, 0, sizeof(attr));
		attr.qp_state = IBV_QPS_RTR;
		attr.path_mtu = opt.mtu;
		attr.dest_qp_num = remote[i].qpn;
		attr.rq_psn = remote[i].psn;
		attr.max_dest_rd_atomic = 1;
		attr.min_rnr_timer = 12;
		attr.ah_attr.dlid = (uint16_t)remote[i].lid;
		attr.ah_attr.sl = (uint8_t)opt.sl;
		attr.ah_attr.port_num = (uint8_t)opt.ib_port;
		/* as the original: the first address tells whether the peer
		 * wants a GRH, and its GID serves for every QP */
		if (remote[0].gid.global.interface_id) {
			attr.ah_attr.is_global = 1;
			attr.ah_attr.grh.dgid = remote[0].gid;
			attr.ah_attr.grh.sgid_index = (uint8_t)opt.gidx;
			attr.ah_attr.grh.hop_limit = 1;
		}
		if (ibv_modify_qp(ctx->qp[i], &attr, IBV_QP_STATE |
				  IBV_QP_AV | IBV_QP_PATH_MTU |
				  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
				  IBV_QP_MAX_DEST_RD_ATOMIC |
				  IBV_QP_MIN_RNR_TIMER)) {
			fprintf(stderr, "Failed to modify QP[%d] to RTR\n", i);
			return 1;
		}
		attr.qp_state = IBV_QPS_RTS;
		attr.timeout = 14;
		attr.retry_cnt = 7;
		attr.rnr_retry = 7;
		attr.sq_psn = local[i].psn;
		attr.max_rd_atomic = 1;
		if (ibv_modify_qp(ctx->qp[i], &attr, IBV_QP_STATE |
				  IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				  IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN |
				  IBV_QP_MAX_QP_RD_ATOMIC)) {
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
	char msg[ADDR_MSG_LEN];

	for (int i = 0; i < MAX_QP; i++) {
		addr_format(&a[i], msg);
		if (write_full(fd, msg, ADDR_MSG_LEN) != ADDR_MSG_LEN) {
			fprintf(stderr, "Couldn't send local address\n");
			return 1;
		}
	}
	return 0;
}

static int recv_addrs(int fd, struct pp_addr *a, const char *who)
{
	char msg[ADDR_MSG_LEN];

	for (int i = 0; i < MAX_QP; i++) {
		ssize_t n = read_full(fd, msg, ADDR_MSG_LEN);

		if (n != ADDR_MSG_LEN || addr_parse(msg, &a[i])) {
			if (n < 0)
				perror(who);
			fprintf(stderr, "%d/%d: Couldn't read remote address [%d]\n",
				n < 0 ? 0 : (int)n, ADDR_MSG_LEN, i);
			return 1;
		}
	}
	return 0;
}

static int exchange_client(const struct pp_addr *local, struct pp_addr *remote)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *list, *ai;
	char service[16];
	int fd = -1, rc, ret = 1;

	snprintf(service, sizeof(service), "%u", opt.tcp_port);
	rc = getaddrinfo(opt.servername, service, &hints, &list);
	if (rc) {
		fprintf(stderr, "%s for %s:%u\n", gai_strerror(rc),
			opt.servername, opt.tcp_port);
		return 1;
	}
	for (ai = list; ai; ai = ai->ai_next) {
		fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (fd < 0)
			continue;
		if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(list);
	if (fd < 0) {
		fprintf(stderr, "Couldn't connect to %s:%u\n", opt.servername,
			opt.tcp_port);
		return 1;
	}
	if (send_addrs(fd, local) || recv_addrs(fd, remote, "client read"))
		goto out;
	if (write_full(fd, DONE_MSG, DONE_LEN) != DONE_LEN) {
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
	struct addrinfo hints = { .ai_flags = AI_PASSIVE,
				  .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *list, *ai;
	char service[16], msg[ADDR_MSG_LEN];
	int lfd = -1, fd, rc, one = 1, ret = 1;

	snprintf(service, sizeof(service), "%u", opt.tcp_port);
	rc = getaddrinfo(NULL, service, &hints, &list);
	if (rc) {
		fprintf(stderr, "%s for port %u\n", gai_strerror(rc),
			opt.tcp_port);
		return 1;
	}
	for (ai = list; ai; ai = ai->ai_next) {
		lfd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (lfd < 0)
			continue;
		setsockopt(lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (bind(lfd, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		close(lfd);
		lfd = -1;
	}
	freeaddrinfo(list);
	if (lfd < 0 || listen(lfd, 1)) {
		fprintf(stderr, "Couldn't listen to port %u\n", opt.tcp_port);
		if (lfd >= 0)
			close(lfd);
		return 1;
	}
	do
		fd = accept(lfd, NULL, NULL);
	while (fd < 0 && errno == EINTR);
	close(lfd);
	if (fd < 0) {
		fprintf(stderr, "accept() failed\n");
		return 1;
	}
	if (recv_addrs(fd, remote, "server read"))
		goto out;
	if (connect_ctx(ctx, local, remote)) {
		fprintf(stderr, "Couldn't connect to remote QP\n");
		goto out;
	}
	if (send_addrs(fd, local))
		goto out;
	if (read_full(fd, msg, DONE_LEN) != DONE_LEN) {
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
	if (ctx->pd)
		ibv_dealloc_pd(ctx->pd);
	if (ctx->channel)
		ibv_destroy_comp_channel(ctx->channel);
	if (ctx->verbs)
		ibv_close_device(ctx->verbs);
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
	ctx->num_qp = (int)opt.num_qp;
	ctx->rx_depth = (int)opt.rx_depth;
	ctx->send_flags = IBV_SEND_SIGNALED;

	ctx->buf = memalign((size_t)page_sz, opt.size);
	if (!ctx->buf) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		goto fail;
	}
	memset(ctx->buf, 0, opt.size);

	ctx->verbs = ibv_open_device(dev);
	if (!ctx->verbs) {
		fprintf(stderr, "Couldn't get context for %s\n",
			ibv_get_device_name(dev));
		goto fail;
	}
	if (opt.odp) {
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
	if (opt.use_event) {
		ctx->channel = ibv_create_comp_channel(ctx->verbs);
		if (!ctx->channel) {
			fprintf(stderr, "Couldn't create completion channel\n");
			goto fail;
		}
	}
	ctx->pd = ibv_alloc_pd(ctx->verbs);
	if (!ctx->pd) {
		fprintf(stderr, "Couldn't allocate PD\n");
		goto fail;
	}
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
		struct ibv_qp_attr qa;

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
		memset(&ia, 0, sizeof(ia));
		if (ibv_query_qp(ctx->qp[i], &qa, IBV_QP_CAP, &ia) == 0 &&
		    ia.cap.max_inline_data >= (uint32_t)ctx->size)
			ctx->send_flags |= IBV_SEND_INLINE;
	}
	for (int i = 0; i < ctx->num_qp; i++) {
		struct ibv_qp_attr qa;

		memset(&qa, 0, sizeof(qa));
		qa.qp_state = IBV_QPS_INIT;
		qa.pkey_index = 0;
		qa.port_num = (uint8_t)opt.ib_port;
		qa.qp_access_flags = 0;
		if (ibv_modify_qp(ctx->qp[i], &qa, IBV_QP_STATE |
				  IBV_QP_PKEY_INDEX | IBV_QP_PORT |
				  IBV_QP_ACCESS_FLAGS)) {
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
	if (ibv_destroy_srq(ctx->srq)) {
		fprintf(stderr, "Couldn't destroy SRQ\n");
		return 1;
	}
	if (ibv_destroy_cq(ctx->cq)) {
		fprintf(stderr, "Couldn't destroy CQ\n");
		return 1;
	}
	if (ibv_dereg_mr(ctx->mr)) {
		fprintf(stderr, "Couldn't deregister MR\n");
		return 1;
	}
	if (ibv_dealloc_pd(ctx->pd)) {
		fprintf(stderr, "Couldn't deallocate PD\n");
		return 1;
	}
	if (ctx->channel && ibv_destroy_comp_channel(ctx->channel)) {
		fprintf(stderr, "Couldn't destroy completion channel\n");
		return 1;
	}
	if (ibv_close_device(ctx->verbs)) {
		fprintf(stderr, "Couldn't release context\n");
		return 1;
	}
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
	printf("Usage:\n");
	printf("  %s            start a server and wait for connection\n", argv0);
	printf("  %s <host>     connect to server at <host>\n", argv0);
	printf("\n");
	printf("Options:\n");
	printf("  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n");
	printf("  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n");
	printf("  -i, --ib-port=<port>   use port <port> of IB device (default 1)\n");
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

static enum ibv_mtu mtu_from_bytes(long bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return 0;
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
	int c;

	while ((c = getopt_long(argc, argv, "p:d:i:s:m:q:r:n:l:eog:c",
				longopts, NULL)) != -1) {
		switch (c) {
		case 'p':
			opt.tcp_port = (unsigned int)strtoul(optarg, NULL, 0);
			if (opt.tcp_port > 65535)
				goto bad;
			break;
		case 'd':
			opt.ib_devname = optarg;
			break;
		case 'i':
			opt.ib_port = (int)strtol(optarg, NULL, 0);
			if (opt.ib_port < 1)
				goto bad;
			break;
		case 's':
			opt.size = (unsigned int)strtoul(optarg, NULL, 0);
			if (opt.size < 1)
				goto bad;
			break;
		case 'm':
			opt.mtu = mtu_from_bytes(strtol(optarg, NULL, 0));
			if (!opt.mtu)
				goto bad;
			break;
		case 'q':
			opt.num_qp = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'r':
			opt.rx_depth = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'n':
			opt.iters = (unsigned int)strtoul(optarg, NULL, 0);
			break;
		case 'l':
			opt.sl = (int)strtol(optarg, NULL, 0);
			break;
		case 'e':
			opt.use_event++;
			break;
		case 'g':
			opt.gidx = (int)strtol(optarg, NULL, 0);
			break;
		case 'o':
			opt.odp = 1;
			break;
		case 'c':
			opt.check = 1;
			break;
		default:
			goto bad;
		}
	}
	if (optind == argc - 1)
		opt.servername = argv[optind];
	else if (optind < argc)
		goto bad;
	return 0;
bad:
	usage(argv[0]);
	return 1;
}

/*
 * -c: the client marks the first byte of every page with
 * (page % sizeof(char)), i.e. 0, of a buffer that is all zeros; the server
 * checks what it received last. As the original, only that first byte is
 * looked at (a peer's buffer is all zeros anyway): every byte of the page
 * is checked here.
 */
static void mark_buffer(struct pp_ctx *ctx)
{
	for (long off = 0; off < ctx->size; off += page_sz)
		ctx->buf[off] = (char)(off / page_sz % (long)sizeof(char));
}

static void check_buffer(struct pp_ctx *ctx)
{
	for (long off = 0; off < ctx->size; off += page_sz) {
		long end = off + page_sz < ctx->size ? off + page_sz : ctx->size;
		int bad = ctx->buf[off] !=
			  (char)(off / page_sz % (long)sizeof(char));

		for (long i = off + 1; i < end && !bad; i++)
			bad = ctx->buf[i] != 0;
		if (bad)
			printf("invalid data in page %ld\n", off / page_sz);
	}
}

static struct ibv_device *pick_device(struct ibv_device **list)
{
	if (!opt.ib_devname) {
		if (!list[0])
			fprintf(stderr, "No IB devices found\n");
		return list[0];
	}
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), opt.ib_devname))
			return list[i];
	fprintf(stderr, "IB device %s not found\n", opt.ib_devname);
	return NULL;
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

	srand48((long)getpid() * (long)time(NULL));
	if (parse_args(argc, argv))
		return 1;
	if (opt.num_qp > opt.rx_depth) {
		fprintf(stderr, "rx_depth %d is too small for %d QPs -- "
			"must have at least one receive per QP.\n",
			(int)opt.rx_depth, (int)opt.num_qp);
		return 1;
	}
	if (opt.num_qp >= MAX_QP) {
		fprintf(stderr, "num_qp %d must be less than %d\n",
			(int)opt.num_qp, MAX_QP - 1);
		return 1;
	}
	num_wc = (int)(opt.num_qp + opt.rx_depth);
	wc = calloc((size_t)num_wc, sizeof(*wc));
	if (!wc)
		return 1;
	page_sz = sysconf(_SC_PAGESIZE);

	devs = ibv_get_device_list(NULL);
	if (!devs) {
		perror("Failed to get IB devices list");
		return 1;
	}
	dev = pick_device(devs);
	if (!dev)
		return 1;
	ctx = ctx_create(dev);
	if (!ctx)
		return 1;

	routs = post_srq_recvs(ctx, ctx->rx_depth);
	if (routs < ctx->rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", routs);
		return 1;
	}
	if (opt.use_event && ibv_req_notify_cq(ctx->cq, 0)) {
		fprintf(stderr, "Couldn't request CQ notification\n");
		return 1;
	}
	if (ibv_query_port(ctx->verbs, (uint8_t)opt.ib_port, &ctx->port_attr)) {
		fprintf(stderr, "Couldn't get port info\n");
		return 1;
	}
	for (int i = 0; i < ctx->num_qp; i++) {
		local[i].qpn = ctx->qp[i]->qp_num;
		local[i].psn = (unsigned int)(lrand48() & 0xffffff);
		local[i].lid = ctx->port_attr.lid;
		if (ctx->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET &&
		    !local[i].lid) {
			fprintf(stderr, "Couldn't get local LID\n");
			return 1;
		}
		if (opt.gidx >= 0 &&
		    ibv_query_gid(ctx->verbs, (uint8_t)opt.ib_port, opt.gidx,
				  &local[i].gid)) {
			fprintf(stderr, "Could not get local gid for gid index %d\n",
				opt.gidx);
			return 1;
		}
		print_addr("local address: ", &local[i]);
	}

	if (opt.servername ? exchange_client(local, remote)
			   : exchange_server(ctx, local, remote))
		return 1;
	for (int i = 0; i < ctx->num_qp; i++)
		print_addr("remote address:", &remote[i]);
	if (opt.servername && connect_ctx(ctx, local, remote))
		return 1;

	if (opt.servername) {
		if (opt.check)
			mark_buffer(ctx);
		for (int i = 0; i < ctx->num_qp; i++) {
			if (post_send(ctx, i)) {
				fprintf(stderr, "Couldn't post send\n");
				return 1;
			}
			ctx->pending[i] = WRID_SEND | WRID_RECV;
		}
	} else {
		for (int i = 0; i < ctx->num_qp; i++)
			ctx->pending[i] = WRID_RECV;
	}

	if (gettimeofday(&t0, NULL)) {
		perror("gettimeofday");
		return 1;
	}
	while (rcnt < opt.iters || scnt < opt.iters) {
		int ne;

		if (opt.use_event) {
			struct ibv_cq *ev_cq;
			void *ev_ctx;

			if (ibv_get_cq_event(ctx->channel, &ev_cq, &ev_ctx)) {
				fprintf(stderr, "Failed to get cq_event\n");
				return 1;
			}
			cq_events++;
			if (ev_cq != ctx->cq) {
				fprintf(stderr, "CQ event for unknown CQ %p\n",
					(void *)ev_cq);
				return 1;
			}
			if (ibv_req_notify_cq(ctx->cq, 0)) {
				fprintf(stderr, "Couldn't request CQ notification\n");
				return 1;
			}
		}
		do {
			ne = ibv_poll_cq(ctx->cq, num_wc, wc);
			if (ne < 0) {
				fprintf(stderr, "poll CQ failed %d\n", ne);
				return 1;
			}
		} while (!opt.use_event && ne < 1);

		for (int i = 0; i < ne; i++) {
			int q;

			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "Failed status %s (%d) for wr_id %d\n",
					ibv_wc_status_str(wc[i].status),
					wc[i].status, (int)wc[i].wr_id);
				return 1;
			}
			q = find_qp(ctx, wc[i].qp_num);
			if (q < 0) {
				fprintf(stderr, "Couldn't find QPN %06x\n",
					wc[i].qp_num);
				return 1;
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
						return 1;
					}
				}
				rcnt++;
				break;
			default:
				fprintf(stderr, "Completion for unknown wr_id %d\n",
					(int)wc[i].wr_id);
				return 1;
			}
			ctx->pending[q] &= ~(int)wc[i].wr_id;
			if (scnt < opt.iters && !ctx->pending[q]) {
				if (post_send(ctx, q)) {
					fprintf(stderr, "Couldn't post send\n");
					return 1;
				}
				ctx->pending[q] = WRID_RECV | WRID_SEND;
			}
		}
	}
	if (gettimeofday(&t1, NULL)) {
		perror("gettimeofday");
		return 1;
	}
	{
		double usec = (double)(t1.tv_sec - t0.tv_sec) * 1e6 +
			      (double)(t1.tv_usec - t0.tv_usec);
		long long bytes = (long long)opt.size * opt.iters * 2;

		printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n",
		       bytes, usec / 1e6, (double)bytes * 8. / usec);
		printf("%d iters in %.2f seconds = %.2f usec/iter\n",
		       (int)opt.iters, usec / 1e6, usec / opt.iters);
		if (!opt.servername && opt.check)
			check_buffer(ctx);
	}

	ibv_ack_cq_events(ctx->cq, (unsigned int)cq_events);
	if (ctx_destroy(ctx))
		return 1;
	ibv_free_device_list(devs);
	free(wc);
	return 0;
}
