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

/* wr_id values; also the bits of pending */
#define WRID_RECV 1
#define WRID_SEND 2

#define GRH_LEN 40
#define QKEY 0x11111111u

/* "LLLL:QQQQQQ:PPPPPP:" + 32 hex digits, sent with its terminating NUL */
#define ADDR_MSG_LEN ((int)sizeof("0000:000000:000000:00000000000000000000000000000000"))
#define DONE_MSG "done"
#define DONE_LEN ((int)sizeof(DONE_MSG))

/* Fill byte of a fresh buffer (the original's as well). */
#define BUF_FILL 0x7b

struct pp_opts {
	const char *servername;		/* NULL: server */
	const char *ib_devname;
	unsigned int tcp_port;
	int ib_port;
	unsigned int size;
	unsigned int rx_depth;
	unsigned int iters;
	int sl;
	int use_event;
	int gidx;
	int check;
};

static struct pp_opts opt = {
	.tcp_port = 18515,
	.ib_port = 1,
	.size = 1024,		/* v44's default (its usage text says 2048) */
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
	struct ibv_qp *qp;
	struct ibv_ah *ah;
	char *buf;			/* GRH area + payload */
	int size;
	int rx_depth;
	unsigned int send_flags;
	int pending;
	struct ibv_port_attr port_attr;
};

struct pp_addr {
	unsigned int lid;
	unsigned int qpn;
	unsigned int psn;
	union ibv_gid gid;
};

/* ------------------------------------------------------------------ */
/* the address message                                                 */

/* 32 hex digits: the GID's 16 bytes in memory (network) order. */
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

static const char *gid_str(const union ibv_gid *g, char *out, size_t n)
{
	if (!inet_ntop(AF_INET6, g->raw, out, (socklen_t)n))
		snprintf(out, n, "?");
	return out;
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

	memset(&ah, 0, sizeof(ah));
	ah.dlid = (uint16_t)remote->lid;
	ah.sl = (uint8_t)opt.sl;
	ah.port_num = (uint8_t)opt.ib_port;
	/* an interface id in the peer's GID: it wants a GRH (RoCE) */
	if (remote->gid.global.interface_id) {
		ah.is_global = 1;
		ah.grh.dgid = remote->gid;
		ah.grh.sgid_index = (uint8_t)opt.gidx;
		ah.grh.hop_limit = 1;
	}
	ctx->ah = ibv_create_ah(ctx->pd, &ah);
	if (!ctx->ah) {
		fprintf(stderr, "Failed to create AH\n");
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* out-of-band exchange                                                */

static int exchange_client(const struct pp_addr *local, struct pp_addr *remote)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *list, *ai;
	char service[16], msg[ADDR_MSG_LEN];
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
	addr_format(local, msg);
	if (write_full(fd, msg, ADDR_MSG_LEN) != ADDR_MSG_LEN) {
		fprintf(stderr, "Couldn't send local address\n");
		goto out;
	}
	if (read_full(fd, msg, ADDR_MSG_LEN) != ADDR_MSG_LEN ||
	    write_full(fd, DONE_MSG, DONE_LEN) != DONE_LEN) {
		perror("client read/write");
		fprintf(stderr, "Couldn't read/write remote address\n");
		goto out;
	}
	if (addr_parse(msg, remote)) {
		fprintf(stderr, "Couldn't read/write remote address\n");
		goto out;
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

/* The server reads the client's address, gets ready (RTR, RTS, AH), then
 * answers with its own and waits for "done". */
static int exchange_server(struct pp_ctx *ctx, const struct pp_addr *local,
			   struct pp_addr *remote)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE,
				  .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *list, *ai;
	char service[16], msg[ADDR_MSG_LEN];
	int lfd = -1, fd, rc, one = 1, ret = 1;
	ssize_t n;

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
	n = read_full(fd, msg, ADDR_MSG_LEN);
	if (n != ADDR_MSG_LEN || addr_parse(msg, remote)) {
		if (n != ADDR_MSG_LEN)
			perror("server read");
		fprintf(stderr, "%d/%d: Couldn't read remote address\n",
			(int)n, ADDR_MSG_LEN);
		goto out;
	}
	if (connect_ctx(ctx, local, remote)) {
		fprintf(stderr, "Couldn't connect to remote QP\n");
		goto out;
	}
	addr_format(local, msg);
	if (write_full(fd, msg, ADDR_MSG_LEN) != ADDR_MSG_LEN ||
	    read_full(fd, msg, DONE_LEN) != DONE_LEN) {
		fprintf(stderr, "Couldn't send/recv local address\n");
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
	if (ctx->qp)
		ibv_destroy_qp(ctx->qp);
	if (ctx->cq)
		ibv_destroy_cq(ctx->cq);
	if (ctx->mr)
		ibv_dereg_mr(ctx->mr);
	if (ctx->ah)
		ibv_destroy_ah(ctx->ah);
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
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;
	int mtu;

	if (!ctx)
		return NULL;
	ctx->size = (int)opt.size;
	ctx->rx_depth = (int)opt.rx_depth;
	ctx->send_flags = IBV_SEND_SIGNALED;

	ctx->buf = memalign((size_t)page_sz, opt.size + GRH_LEN);
	if (!ctx->buf) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		goto fail;
	}
	memset(ctx->buf, BUF_FILL, opt.size + GRH_LEN);

	ctx->verbs = ibv_open_device(dev);
	if (!ctx->verbs) {
		fprintf(stderr, "Couldn't get context for %s\n",
			ibv_get_device_name(dev));
		goto fail;
	}
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
	memset(&ia, 0, sizeof(ia));
	if (ibv_query_qp(ctx->qp, &qa, IBV_QP_CAP, &ia) == 0 &&
	    ia.cap.max_inline_data >= (uint32_t)ctx->size)
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
	if (ibv_destroy_qp(ctx->qp)) {
		fprintf(stderr, "Couldn't destroy QP\n");
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
	if (ibv_destroy_ah(ctx->ah)) {
		fprintf(stderr, "Couldn't destroy AH\n");
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
	printf("Usage:\n");
	printf("  %s            start a server and wait for connection\n", argv0);
	printf("  %s <host>     connect to server at <host>\n", argv0);
	printf("\n");
	printf("Options:\n");
	printf("  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n");
	printf("  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n");
	printf("  -i, --ib-port=<port>   use port <port> of IB device (default 1)\n");
	printf("  -s, --size=<size>      size of message to exchange (default 2048)\n");
	printf("  -r, --rx-depth=<dep>   number of receives to post at a time (default 500)\n");
	printf("  -n, --iters=<iters>    number of exchanges (default 1000)\n");
	printf("  -l, --sl=<SL>          send messages with service level <SL> (default 0)\n");
	printf("  -e, --events           sleep on CQ events (default poll)\n");
	printf("  -g, --gid-idx=<gid index> local port gid index\n");
	printf("  -c, --chk              validate received buffer\n");
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
	int c;

	while ((c = getopt_long(argc, argv, "p:d:i:s:r:n:l:eg:c", longopts,
				NULL)) != -1) {
		switch (c) {
		case 'p':
			opt.tcp_port = (unsigned int)strtol(optarg, NULL, 0);
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
 * -c: the client marks the first payload byte of every page with
 * (page % sizeof(char)), i.e. 0, the rest keeps the 0x7b fill; the server
 * checks the last datagram it received. The check covers every byte of
 * the payload (the original looks at the first byte of each page).
 */
static char page_mark(long page)
{
	return (char)(page % (long)sizeof(char));
}

static void mark_buffer(struct pp_ctx *ctx)
{
	for (long off = 0; off < ctx->size; off += page_sz)
		ctx->buf[GRH_LEN + off] = page_mark(off / page_sz);
}

static void check_buffer(struct pp_ctx *ctx)
{
	const char *p = ctx->buf + GRH_LEN;

	for (long off = 0; off < ctx->size; off += page_sz) {
		long end = off + page_sz < ctx->size ? off + page_sz : ctx->size;
		int bad = p[off] != page_mark(off / page_sz);

		for (long i = off + 1; i < end && !bad; i++)
			bad = p[i] != (char)BUF_FILL;
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
	struct pp_addr local, remote;
	struct timeval t0, t1;
	unsigned int rcnt = 0, scnt = 0;
	int routs, cq_events = 0;
	char gid[INET6_ADDRSTRLEN];

	srand48((long)getpid() * (long)time(NULL));
	if (parse_args(argc, argv))
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

	routs = post_recvs(ctx, ctx->rx_depth);
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

	memset(&local, 0, sizeof(local));
	local.lid = ctx->port_attr.lid;
	local.qpn = ctx->qp->qp_num;
	local.psn = (unsigned int)(lrand48() & 0xffffff);
	if (opt.gidx >= 0 &&
	    ibv_query_gid(ctx->verbs, (uint8_t)opt.ib_port, opt.gidx,
			  &local.gid)) {
		fprintf(stderr, "Could not get local gid for gid index %d\n",
			opt.gidx);
		return 1;
	}
	/* (sic: the original's local line has a colon before GID) */
	printf("  local address:  LID 0x%04x, QPN 0x%06x, PSN 0x%06x: GID %s\n",
	       local.lid, local.qpn, local.psn,
	       gid_str(&local.gid, gid, sizeof(gid)));

	if (opt.servername ? exchange_client(&local, &remote)
			   : exchange_server(ctx, &local, &remote))
		return 1;
	printf("  remote address: LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
	       remote.lid, remote.qpn, remote.psn,
	       gid_str(&remote.gid, gid, sizeof(gid)));
	if (opt.servername && connect_ctx(ctx, &local, &remote))
		return 1;

	/* the client sends first; each side answers what it receives */
	ctx->pending = WRID_RECV;
	if (opt.servername) {
		if (opt.check)
			mark_buffer(ctx);
		if (post_send(ctx, remote.qpn)) {
			fprintf(stderr, "Couldn't post send\n");
			return 1;
		}
		ctx->pending |= WRID_SEND;
	}

	if (gettimeofday(&t0, NULL)) {
		perror("gettimeofday");
		return 1;
	}
	while (rcnt < opt.iters || scnt < opt.iters) {
		struct ibv_wc wc[2];
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
			ne = ibv_poll_cq(ctx->cq, 2, wc);
			if (ne < 0) {
				fprintf(stderr, "poll CQ failed %d\n", ne);
				return 1;
			}
		} while (!opt.use_event && ne < 1);

		for (int i = 0; i < ne; i++) {
			if (wc[i].status != IBV_WC_SUCCESS) {
				fprintf(stderr, "Failed status %s (%d) for wr_id %d\n",
					ibv_wc_status_str(wc[i].status),
					wc[i].status, (int)wc[i].wr_id);
				return 1;
			}
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
			ctx->pending &= ~(int)wc[i].wr_id;
			if (scnt < opt.iters && !ctx->pending) {
				if (post_send(ctx, remote.qpn)) {
					fprintf(stderr, "Couldn't post send\n");
					return 1;
				}
				ctx->pending = WRID_RECV | WRID_SEND;
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
	return 0;
}
