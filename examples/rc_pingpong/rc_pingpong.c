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

/* wr_id values; also the bits of pp_ctx.pending */
#define WRID_RECV 1
#define WRID_SEND 2

/* "LLLL:QQQQQQ:PPPPPP:" + 32 hex digits, sent with its terminating NUL */
#define ADDR_MSG_LEN ((int)sizeof("0000:000000:000000:00000000000000000000000000000000"))
#define DONE_MSG "done"
#define DONE_LEN ((int)sizeof(DONE_MSG))

/* The fill byte of a fresh buffer (the original fills with 0x7b as well). */
#define BUF_FILL 0x7b

struct pp_opts {
	const char *servername;	/* NULL: server */
	const char *ib_devname;
	unsigned int tcp_port;
	int ib_port;
	unsigned int size;
	enum ibv_mtu mtu;
	unsigned int rx_depth;
	unsigned int iters;
	int sl;
	int use_event;
	int gidx;
	int odp;
	int implicit_odp;
	int prefetch;
	int ts;
	int check;
	int dm;
	int new_send;
};

static struct pp_opts opt = {
	.tcp_port = 18515,
	.ib_port = 1,
	.size = 4096,
	.mtu = IBV_MTU_1024,
	.rx_depth = 500,
	.iters = 1000,
	.gidx = -1,
};

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

/* One side of the connection, as exchanged over TCP. */
struct pp_addr {
	unsigned int lid;
	unsigned int qpn;
	unsigned int psn;
	union ibv_gid gid;
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
/* helpers                                                             */

static enum ibv_mtu mtu_from_bytes(long bytes)
{
	static const struct {
		long bytes;
		enum ibv_mtu mtu;
	} tab[] = {
		{ 256, IBV_MTU_256 }, { 512, IBV_MTU_512 },
		{ 1024, IBV_MTU_1024 }, { 2048, IBV_MTU_2048 },
		{ 4096, IBV_MTU_4096 },
	};

	for (size_t i = 0; i < sizeof(tab) / sizeof(tab[0]); i++)
		if (tab[i].bytes == bytes)
			return tab[i].mtu;
	return 0;
}

/*
 * The GID travels as 32 hex digits: the 16 bytes in memory (network) order.
 * (The original converts each 32-bit word with htobe32 and prints %08x,
 * which comes to the same digits on any host.)
 */
static void gid_to_hex(const union ibv_gid *gid, char out[33])
{
	static const char digits[] = "0123456789abcdef";

	for (int i = 0; i < 16; i++) {
		out[2 * i] = digits[gid->raw[i] >> 4];
		out[2 * i + 1] = digits[gid->raw[i] & 0xf];
	}
	out[32] = '\0';
}

static int hex_val(char c)
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
		int hi = hex_val(hex[2 * i]);
		int lo = hi < 0 ? -1 : hex_val(hex[2 * i + 1]);

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
	snprintf(msg, ADDR_MSG_LEN, "%04x:%06x:%06x:%s",
		 a->lid & 0xffff, a->qpn & 0xffffff, a->psn & 0xffffff, hex);
}

static int addr_parse(const char *msg, struct pp_addr *a)
{
	char hex[33];
	char buf[ADDR_MSG_LEN + 1];

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
		strcpy(gid, "?");
	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n",
	       what, a->lid, a->qpn, a->psn, gid);
}

/* read()/write() the whole length, or fail */
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
/* QP state transitions                                                */

static int qp_to_rtr_rts(struct pp_ctx *ctx, const struct pp_addr *local,
			 const struct pp_addr *remote)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = opt.mtu;
	attr.dest_qp_num = remote->qpn;
	attr.rq_psn = remote->psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	attr.ah_attr.dlid = (uint16_t)remote->lid;
	attr.ah_attr.sl = (uint8_t)opt.sl;
	attr.ah_attr.src_path_bits = 0;
	attr.ah_attr.port_num = (uint8_t)opt.ib_port;
	/* A GID with an interface id means the peer wants a GRH (RoCE). */
	if (remote->gid.global.interface_id) {
		attr.ah_attr.is_global = 1;
		attr.ah_attr.grh.dgid = remote->gid;
		attr.ah_attr.grh.sgid_index = (uint8_t)opt.gidx;
		attr.ah_attr.grh.hop_limit = 1;
	}
	if (ibv_modify_qp(ctx->qp, &attr,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER)) {
		fprintf(stderr, "Failed to modify QP to RTR\n");
		return 1;
	}

	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = local->psn;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	if (ibv_modify_qp(ctx->qp, &attr,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC)) {
		fprintf(stderr, "Failed to modify QP to RTS\n");
		return 1;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* out-of-band exchange                                                */

/* Client: send our address, read the server's, answer "done". */
static int exchange_client(const struct pp_addr *local, struct pp_addr *remote)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *list, *ai;
	char service[16];
	char msg[ADDR_MSG_LEN];
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

/*
 * Server: wait for one client, read its address, bring the QP to RTS,
 * then send our address and wait for "done".
 */
static int exchange_server(struct pp_ctx *ctx, const struct pp_addr *local,
			   struct pp_addr *remote)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE,
				  .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *list, *ai;
	char service[16];
	char msg[ADDR_MSG_LEN];
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
	if (n != ADDR_MSG_LEN) {
		perror("server read");
		fprintf(stderr, "%d/%d: Couldn't read remote address\n",
			(int)n, ADDR_MSG_LEN);
		goto out;
	}
	if (addr_parse(msg, remote)) {
		fprintf(stderr, "%d/%d: Couldn't read remote address\n",
			(int)n, ADDR_MSG_LEN);
		goto out;
	}
	if (qp_to_rtr_rts(ctx, local, remote)) {
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
	if (opt.odp) {
		if (!(ax.odp_caps.general_caps & IBV_ODP_SUPPORT) ||
		    (ax.odp_caps.per_transport_caps.rc_odp_caps & rc_need) !=
		    rc_need) {
			fprintf(stderr, "The device isn't ODP capable or does not support RC send and receive with ODP\n");
			return 1;
		}
		if (opt.implicit_odp &&
		    !(ax.odp_caps.general_caps & IBV_ODP_SUPPORT_IMPLICIT)) {
			fprintf(stderr, "The device doesn't support implicit ODP\n");
			return 1;
		}
		*access |= IBV_ACCESS_ON_DEMAND;
	}
	if (opt.ts) {
		if (!ax.completion_timestamp_mask) {
			fprintf(stderr, "The device isn't completion timestamp capable\n");
			return 1;
		}
		ctx->ts_mask = ax.completion_timestamp_mask;
	}
	if (opt.dm) {
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
	struct ibv_qp_attr qa;

	if (opt.new_send) {
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
	if (opt.new_send)
		ctx->qpx = ibv_qp_to_qp_ex(ctx->qp);

	/* Small messages go inline when the QP allows it (not from DM). */
	memset(&ia, 0, sizeof(ia));
	if (ibv_query_qp(ctx->qp, &qa, IBV_QP_CAP, &ia) == 0 &&
	    ia.cap.max_inline_data >= (uint32_t)ctx->size && !opt.dm)
		ctx->send_flags |= IBV_SEND_INLINE;

	memset(&qa, 0, sizeof(qa));
	qa.qp_state = IBV_QPS_INIT;
	qa.pkey_index = 0;
	qa.port_num = (uint8_t)opt.ib_port;
	qa.qp_access_flags = 0;
	if (ibv_modify_qp(ctx->qp, &qa, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			  IBV_QP_PORT | IBV_QP_ACCESS_FLAGS)) {
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
	struct pp_ctx *ctx;
	unsigned int access = IBV_ACCESS_LOCAL_WRITE;

	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return NULL;
	ctx->size = (int)opt.size;
	ctx->rx_depth = (int)opt.rx_depth;
	ctx->send_flags = IBV_SEND_SIGNALED;

	ctx->buf = memalign((size_t)page_sz, opt.size);
	if (!ctx->buf) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		goto fail;
	}
	memset(ctx->buf, BUF_FILL, opt.size);

	ctx->verbs = ibv_open_device(dev);
	if (!ctx->verbs) {
		fprintf(stderr, "Couldn't get context for %s\n",
			ibv_get_device_name(dev));
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
	if ((opt.odp || opt.ts || opt.dm) && check_features(ctx, &access))
		goto fail;

	if (opt.implicit_odp)
		ctx->mr = ibv_reg_mr(ctx->pd, NULL, SIZE_MAX, (int)access);
	else if (opt.dm)
		ctx->mr = ibv_reg_dm_mr(ctx->pd, ctx->dm, 0, opt.size, access);
	else
		ctx->mr = ibv_reg_mr(ctx->pd, ctx->buf, opt.size, (int)access);
	if (!ctx->mr) {
		fprintf(stderr, "Couldn't register MR\n");
		goto fail;
	}
	if (opt.prefetch) {
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

	if (opt.ts) {
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
	static const char *const what[] = {
		"Couldn't destroy QP", "Couldn't destroy CQ",
		"Couldn't deregister MR", "Couldn't free DM",
		"Couldn't deallocate PD",
		"Couldn't destroy completion channel",
		"Couldn't release context",
	};
	int step, rc;

	for (step = 0; step < 7; step++) {
		switch (step) {
		case 0:
			rc = ibv_destroy_qp(ctx->qp);
			ctx->qp = NULL;
			break;
		case 1:
			rc = ibv_destroy_cq(ctx->cq);
			ctx->cq = NULL;
			break;
		case 2:
			rc = ibv_dereg_mr(ctx->mr);
			ctx->mr = NULL;
			break;
		case 3:
			rc = ctx->dm ? ibv_free_dm(ctx->dm) : 0;
			ctx->dm = NULL;
			break;
		case 4:
			rc = ibv_dealloc_pd(ctx->pd);
			ctx->pd = NULL;
			break;
		case 5:
			rc = ctx->channel ?
			     ibv_destroy_comp_channel(ctx->channel) : 0;
			ctx->channel = NULL;
			break;
		default:
			rc = ibv_close_device(ctx->verbs);
			ctx->verbs = NULL;
			break;
		}
		if (rc) {
			fprintf(stderr, "%s\n", what[step]);
			return 1;
		}
	}
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
		.addr = opt.dm ? 0 : (uintptr_t)ctx->buf,
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
	uint64_t addr = opt.dm ? 0 : (uintptr_t)ctx->buf;
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

	if (!opt.new_send)
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
	if (status != IBV_WC_SUCCESS) {
		fprintf(stderr, "Failed status %s (%d) for wr_id %d\n",
			ibv_wc_status_str(status), status, (int)wr_id);
		return 1;
	}

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
		if (opt.ts) {
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
	if (opt.use_event) {
		struct ibv_cq *ev_cq;
		void *ev_ctx;

		if (ibv_get_cq_event(ctx->channel, &ev_cq, &ev_ctx)) {
			fprintf(stderr, "Failed to get cq_event\n");
			return 1;
		}
		++*cq_events;
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

	if (opt.ts) {
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
	int n;

	do {
		n = ibv_poll_cq(ctx->cq, 2, wc);
		if (n < 0) {
			fprintf(stderr, "poll CQ failed %d\n", n);
			return 1;
		}
	} while (n == 0 && !opt.use_event);

	for (int i = 0; i < n; i++) {
		if (handle_completion(ctx, st, wc[i].wr_id, wc[i].status, 0)) {
			fprintf(stderr, "parse WC failed %d\n", n);
			return 1;
		}
	}
	return 0;
}

/*
 * -c: the client marks its buffer the way the original does -- the first
 * byte of every page gets (page % sizeof(char)), which is 0, while the rest
 * keeps the 0x7b fill -- and the server checks what it received. The check
 * covers every byte of each page (the original looks at the first byte
 * only); a bad page is reported with the original's message.
 */
static char page_mark(long page)
{
	return (char)(page % (long)sizeof(char));
}

static void mark_buffer(struct pp_ctx *ctx)
{
	for (long off = 0; off < ctx->size; off += page_sz)
		ctx->buf[off] = page_mark(off / page_sz);
}

static void check_buffer(struct pp_ctx *ctx)
{
	for (long off = 0; off < ctx->size; off += page_sz) {
		long end = off + page_sz < ctx->size ? off + page_sz : ctx->size;
		int bad = ctx->buf[off] != page_mark(off / page_sz);

		for (long i = off + 1; i < end && !bad; i++)
			bad = ctx->buf[i] != (char)BUF_FILL;
		if (bad)
			printf("invalid data in page %ld\n", off / page_sz);
	}
}

/* ------------------------------------------------------------------ */

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
		{ NULL, 0, NULL, 0 }
	};
	int c;

	while ((c = getopt_long(argc, argv, "p:d:i:s:m:r:n:l:eg:oOPtcjN",
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
			break;
		case 'm':
			opt.mtu = mtu_from_bytes(strtol(optarg, NULL, 0));
			if (!opt.mtu)
				goto bad;
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
		case 'O':
			opt.odp = 1;
			opt.implicit_odp = 1;
			break;
		case 'P':
			opt.prefetch = 1;
			break;
		case 't':
			opt.ts = 1;
			break;
		case 'c':
			opt.check = 1;
			break;
		case 'j':
			opt.dm = 1;
			break;
		case 'N':
			opt.new_send = 1;
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
	struct ibv_device **devs;
	struct ibv_device *dev;
	struct pp_ctx *ctx;
	struct pp_addr local, remote;
	struct run_state st;
	struct timeval t0, t1;
	int cq_events = 0;
	int rc;

	srand48((long)getpid() * (long)time(NULL));

	if (parse_args(argc, argv))
		return 1;
	if (opt.odp && opt.dm) {
		fprintf(stderr, "DM memory region can't be on demand\n");
		return 1;
	}
	if (opt.prefetch && !opt.odp) {
		fprintf(stderr, "prefetch is valid only with on-demand memory region\n");
		return 1;
	}

	memset(&st, 0, sizeof(st));
	st.ts.min_delta = 0xffffffff;
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

	st.posted_recvs = post_recvs(ctx, ctx->rx_depth);
	if (st.posted_recvs < ctx->rx_depth) {
		fprintf(stderr, "Couldn't post receive (%d)\n", st.posted_recvs);
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
	if (!local.lid && ctx->port_attr.link_layer != IBV_LINK_LAYER_ETHERNET) {
		fprintf(stderr, "Couldn't get local LID\n");
		return 1;
	}
	if (opt.gidx >= 0 &&
	    ibv_query_gid(ctx->verbs, (uint8_t)opt.ib_port, opt.gidx,
			  &local.gid)) {
		fprintf(stderr, "can't read sgid of index %d\n", opt.gidx);
		return 1;
	}
	local.qpn = ctx->qp->qp_num;
	local.psn = (unsigned int)(lrand48() & 0xffffff);
	print_addr("local address: ", &local);

	if (opt.servername)
		rc = exchange_client(&local, &remote);
	else
		rc = exchange_server(ctx, &local, &remote);
	if (rc)
		return 1;
	print_addr("remote address:", &remote);

	/* the server went to RTS during the exchange, the client does now */
	if (opt.servername && qp_to_rtr_rts(ctx, &local, &remote))
		return 1;

	ctx->pending = WRID_RECV;
	if (opt.servername) {
		if (opt.check)
			mark_buffer(ctx);
		if (opt.dm && ibv_memcpy_to_dm(ctx->dm, 0, ctx->buf, opt.size)) {
			fprintf(stderr, "Copy to dm buffer failed\n");
			return 1;
		}
		if (post_one_send(ctx)) {
			fprintf(stderr, "Couldn't post send\n");
			return 1;
		}
		ctx->pending |= WRID_SEND;
	}

	if (gettimeofday(&t0, NULL)) {
		perror("gettimeofday");
		return 1;
	}
	while (st.rcvd < opt.iters || st.sent < opt.iters) {
		rc = poll_step(ctx, &st, &cq_events);
		if (rc)
			return rc;
	}
	if (gettimeofday(&t1, NULL)) {
		perror("gettimeofday");
		return 1;
	}

	double usec = (double)(t1.tv_sec - t0.tv_sec) * 1e6 +
		      (double)(t1.tv_usec - t0.tv_usec);
	long long bytes = (long long)opt.size * opt.iters * 2;

	printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n",
	       bytes, usec / 1e6, (double)bytes * 8. / usec);
	printf("%d iters in %.2f seconds = %.2f usec/iter\n",
	       (int)opt.iters, usec / 1e6, usec / opt.iters);
	if (opt.ts && st.ts.samples) {
		printf("Max receive completion clock cycles = %" PRIu64 "\n",
		       st.ts.max_delta);
		printf("Min receive completion clock cycles = %" PRIu64 "\n",
		       st.ts.min_delta);
		printf("Average receive completion clock cycles = %f\n",
		       (double)st.ts.sum_delta / st.ts.samples);
	}
	if (!opt.servername && opt.check) {
		if (opt.dm && ibv_memcpy_from_dm(ctx->buf, ctx->dm, 0,
						 opt.size)) {
			fprintf(stderr, "Copy from DM buffer failed\n");
			return 1;
		}
		check_buffer(ctx);
	}

	ibv_ack_cq_events(ctx->cq, (unsigned int)cq_events);
	if (ctx_destroy(ctx))
		return 1;
	ibv_free_device_list(devs);
	return 0;
}
