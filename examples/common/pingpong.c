/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The pieces the pingpong examples share (see pingpong.h).
 */
#include "pingpong.h"

#include <errno.h>
#include <malloc.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <sys/socket.h>

/* ------------------------------------------------------------------ */
/* options                                                             */

void pp_opts_init(struct pp_opts *o)
{
	memset(o, 0, sizeof(*o));
	o->tcp_port = 18515;
	o->ib_port = 1;
	o->size = 4096;
	o->mtu = IBV_MTU_1024;
	o->rx_depth = 500;
	o->iters = 1000;
	o->gidx = -1;
}

/* -m: 256, 512, 1024, 2048 or 4096 as an ibv_mtu; 0 for anything else */
static enum ibv_mtu mtu_to_enum(long bytes)
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

/* One of the common options: 0, or -1 for a bad value or another option. */
static int parse_opt(struct pp_opts *o, int c, const char *arg)
{
	switch (c) {
	case 'p':
		o->tcp_port = (unsigned int)strtoul(arg, NULL, 0);
		return o->tcp_port > 65535 ? -1 : 0;
	case 'd':
		o->ib_devname = arg;
		return 0;
	case 'i':
		o->ib_port = (int)strtol(arg, NULL, 0);
		return o->ib_port < 1 ? -1 : 0;
	case 's':
		o->size = (unsigned int)strtoul(arg, NULL, 0);
		return 0;
	case 'm':
		o->mtu = mtu_to_enum(strtol(arg, NULL, 0));
		return o->mtu ? 0 : -1;
	case 'r':
		o->rx_depth = (unsigned int)strtoul(arg, NULL, 0);
		return 0;
	case 'n':
		o->iters = (unsigned int)strtoul(arg, NULL, 0);
		return 0;
	case 'l':
		o->sl = (int)strtol(arg, NULL, 0);
		return 0;
	case 'e':
		o->use_event++;
		return 0;
	case 'g':
		o->gidx = (int)strtol(arg, NULL, 0);
		return 0;
	case 'c':
		o->check = 1;
		return 0;
	default:
		return -1;
	}
}

int pp_parse_args(struct pp_opts *o, int argc, char *argv[],
		  const char *shortopts, const struct option *longopts,
		  pp_own_opt_fn *own)
{
	int c, rc;

	while ((c = getopt_long(argc, argv, shortopts, longopts, NULL)) != -1) {
		rc = own ? own(c, optarg) : 1;
		if (rc > 0)
			rc = parse_opt(o, c, optarg);
		if (rc)
			return -1;
	}
	if (optind == argc - 1)
		o->servername = argv[optind];
	else if (optind < argc)
		return -1;
	return 0;
}

void pp_usage_start(const char *argv0)
{
	printf("Usage:\n");
	printf("  %s            start a server and wait for connection\n", argv0);
	printf("  %s <host>     connect to server at <host>\n", argv0);
	printf("\n");
	printf("Options:\n");
	printf("  -p, --port=<port>      listen on/connect to port <port> (default 18515)\n");
	printf("  -d, --ib-dev=<dev>     use IB device <dev> (default first device found)\n");
	printf("  -i, --ib-port=<port>   use port <port> of IB device (default 1)\n");
}

static struct ibv_device *find_device(struct ibv_device **list,
				      const char *name)
{
	if (!name) {
		if (!list[0])
			fprintf(stderr, "No IB devices found\n");
		return list[0];
	}
	for (int i = 0; list[i]; i++)
		if (!strcmp(ibv_get_device_name(list[i]), name))
			return list[i];
	fprintf(stderr, "IB device %s not found\n", name);
	return NULL;
}

struct ibv_device **pp_get_device(const struct pp_opts *o,
				  struct ibv_device **dev)
{
	struct ibv_device **list = ibv_get_device_list(NULL);

	if (!list) {
		perror("Failed to get IB devices list");
		return NULL;
	}
	*dev = find_device(list, o->ib_devname);
	if (*dev == NULL) {
		ibv_free_device_list(list);
		return NULL;
	}
	return list;
}

/* ------------------------------------------------------------------ */
/* the address message                                                 */

/*
 * The GID travels as 32 hex digits: the 16 bytes in memory (network)
 * order. (The originals convert each 32-bit word with htobe32 and print
 * %08x, which comes to the same digits on any host.)
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

void pp_addr_format(const struct pp_addr *a, char msg[PP_ADDR_MSG_LEN])
{
	char hex[33];

	gid_to_hex(&a->gid, hex);
	memset(msg, 0, PP_ADDR_MSG_LEN);
	snprintf(msg, PP_ADDR_MSG_LEN, "%04x:%06x:%06x:%s", a->lid & 0xffff,
		 a->qpn & 0xffffff, a->psn & 0xffffff, hex);
}

int pp_addr_parse(const char *msg, struct pp_addr *a)
{
	char buf[PP_ADDR_MSG_LEN + 1], hex[33];

	memcpy(buf, msg, PP_ADDR_MSG_LEN);
	buf[PP_ADDR_MSG_LEN] = '\0';
	memset(a, 0, sizeof(*a));
	if (sscanf(buf, "%x:%x:%x:%32s", &a->lid, &a->qpn, &a->psn, hex) != 4 ||
	    strlen(hex) != 32 || hex_to_gid(hex, &a->gid))
		return -1;
	return 0;
}

const char *pp_gid_str(const union ibv_gid *gid, char *out, size_t n)
{
	if (!inet_ntop(AF_INET6, gid->raw, out, (socklen_t)n))
		snprintf(out, n, "?");
	return out;
}

void pp_print_addr(const char *what, const struct pp_addr *a)
{
	char gid[INET6_ADDRSTRLEN];

	printf("  %s LID 0x%04x, QPN 0x%06x, PSN 0x%06x, GID %s\n", what,
	       a->lid, a->qpn, a->psn, pp_gid_str(&a->gid, gid, sizeof(gid)));
}

/* ------------------------------------------------------------------ */
/* TCP                                                                 */

ssize_t pp_read_full(int fd, void *p, size_t len)
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

ssize_t pp_write_full(int fd, const void *p, size_t len)
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

int pp_tcp_connect(const struct pp_opts *o)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *list, *ai;
	char service[16];
	int fd = -1, rc;

	snprintf(service, sizeof(service), "%u", o->tcp_port);
	rc = getaddrinfo(o->servername, service, &hints, &list);
	if (rc) {
		fprintf(stderr, "%s for %s:%u\n", gai_strerror(rc),
			o->servername, o->tcp_port);
		return -1;
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
	if (fd < 0)
		fprintf(stderr, "Couldn't connect to %s:%u\n", o->servername,
			o->tcp_port);
	return fd;
}

int pp_tcp_accept(const struct pp_opts *o)
{
	struct addrinfo hints = { .ai_flags = AI_PASSIVE,
				  .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM };
	struct addrinfo *list, *ai;
	char service[16];
	int lfd = -1, fd, rc, one = 1;

	snprintf(service, sizeof(service), "%u", o->tcp_port);
	rc = getaddrinfo(NULL, service, &hints, &list);
	if (rc) {
		fprintf(stderr, "%s for port %u\n", gai_strerror(rc),
			o->tcp_port);
		return -1;
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
		fprintf(stderr, "Couldn't listen to port %u\n", o->tcp_port);
		if (lfd >= 0)
			close(lfd);
		return -1;
	}
	do
		fd = accept(lfd, NULL, NULL);
	while (fd < 0 && errno == EINTR);
	close(lfd);
	if (fd < 0)
		fprintf(stderr, "accept() failed\n");
	return fd;
}

int pp_exchange_client(const struct pp_opts *o, const struct pp_addr *local,
		       struct pp_addr *remote)
{
	char msg[PP_ADDR_MSG_LEN];
	int fd, ret = 1;

	fd = pp_tcp_connect(o);
	if (fd < 0)
		return 1;
	pp_addr_format(local, msg);
	if (pp_write_full(fd, msg, PP_ADDR_MSG_LEN) != PP_ADDR_MSG_LEN) {
		fprintf(stderr, "Couldn't send local address\n");
		goto out;
	}
	if (pp_read_full(fd, msg, PP_ADDR_MSG_LEN) != PP_ADDR_MSG_LEN ||
	    pp_write_full(fd, PP_DONE_MSG, PP_DONE_LEN) != PP_DONE_LEN) {
		perror("client read/write");
		fprintf(stderr, "Couldn't read/write remote address\n");
		goto out;
	}
	if (pp_addr_parse(msg, remote)) {
		fprintf(stderr, "Couldn't read/write remote address\n");
		goto out;
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

int pp_exchange_server(const struct pp_opts *o, const struct pp_addr *local,
		       struct pp_addr *remote, pp_ready_fn *ready, void *arg)
{
	char msg[PP_ADDR_MSG_LEN];
	int fd, ret = 1;
	ssize_t n;

	fd = pp_tcp_accept(o);
	if (fd < 0)
		return 1;
	n = pp_read_full(fd, msg, PP_ADDR_MSG_LEN);
	if (n != PP_ADDR_MSG_LEN || pp_addr_parse(msg, remote)) {
		if (n != PP_ADDR_MSG_LEN)
			perror("server read");
		fprintf(stderr, "%d/%d: Couldn't read remote address\n",
			(int)n, PP_ADDR_MSG_LEN);
		goto out;
	}
	if (ready(arg, local, remote)) {
		fprintf(stderr, "Couldn't connect to remote QP\n");
		goto out;
	}
	pp_addr_format(local, msg);
	if (pp_write_full(fd, msg, PP_ADDR_MSG_LEN) != PP_ADDR_MSG_LEN ||
	    pp_read_full(fd, msg, PP_DONE_LEN) != PP_DONE_LEN) {
		fprintf(stderr, "Couldn't send/recv local address\n");
		goto out;
	}
	ret = 0;
out:
	close(fd);
	return ret;
}

/* ------------------------------------------------------------------ */
/* verbs steps                                                         */

char *pp_alloc_buf(size_t len, int fill, long page_sz)
{
	char *buf = memalign((size_t)page_sz, len);

	if (!buf) {
		fprintf(stderr, "Couldn't allocate work buf.\n");
		return NULL;
	}
	memset(buf, fill, len);
	return buf;
}

int pp_get_port_info(struct ibv_context *verbs, const struct pp_opts *o,
		     struct ibv_port_attr *attr)
{
	if (ibv_query_port(verbs, (uint8_t)o->ib_port, attr)) {
		fprintf(stderr, "Couldn't get port info\n");
		return 1;
	}
	return 0;
}

struct ibv_context *pp_open_device(struct ibv_device *dev)
{
	struct ibv_context *verbs = ibv_open_device(dev);

	if (!verbs)
		fprintf(stderr, "Couldn't get context for %s\n",
			ibv_get_device_name(dev));
	return verbs;
}

int pp_alloc_channel_pd(struct ibv_context *verbs, const struct pp_opts *o,
			struct ibv_comp_channel **channel, struct ibv_pd **pd)
{
	if (o->use_event) {
		*channel = ibv_create_comp_channel(verbs);
		if (!*channel) {
			fprintf(stderr, "Couldn't create completion channel\n");
			return 1;
		}
	}
	*pd = ibv_alloc_pd(verbs);
	if (!*pd) {
		fprintf(stderr, "Couldn't allocate PD\n");
		return 1;
	}
	return 0;
}

int pp_teardown(int ret, const char *what)
{
	if (!ret)
		return 0;
	fprintf(stderr, "Couldn't %s\n", what);
	return 1;
}

int pp_close_device(struct ibv_pd *pd, struct ibv_comp_channel *channel,
		    struct ibv_context *verbs)
{
	return pp_teardown(ibv_dealloc_pd(pd), "deallocate PD") ||
	       (channel && pp_teardown(ibv_destroy_comp_channel(channel),
				       "destroy completion channel")) ||
	       pp_teardown(ibv_close_device(verbs), "release context");
}

void pp_release_device(struct ibv_pd *pd, struct ibv_comp_channel *channel,
		       struct ibv_context *verbs)
{
	if (pd)
		ibv_dealloc_pd(pd);
	if (channel)
		ibv_destroy_comp_channel(channel);
	if (verbs)
		ibv_close_device(verbs);
}

void pp_ah_attr(struct ibv_ah_attr *ah, const struct pp_opts *o,
		unsigned int dlid, const union ibv_gid *dgid)
{
	memset(ah, 0, sizeof(*ah));
	ah->dlid = (uint16_t)dlid;
	ah->sl = (uint8_t)o->sl;
	ah->src_path_bits = 0;
	ah->port_num = (uint8_t)o->ib_port;
	if (dgid->global.interface_id) {
		ah->is_global = 1;
		ah->grh.dgid = *dgid;
		ah->grh.sgid_index = (uint8_t)o->gidx;
		ah->grh.hop_limit = 1;
	}
}

int pp_rc_init(struct ibv_qp *qp, const struct pp_opts *o)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_INIT;
	attr.pkey_index = 0;
	attr.port_num = (uint8_t)o->ib_port;
	attr.qp_access_flags = 0;
	return ibv_modify_qp(qp, &attr, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			     IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
}

int pp_rc_rtr_rts(struct ibv_qp *qp, const struct pp_opts *o,
		  unsigned int sq_psn, const struct pp_addr *remote,
		  const union ibv_gid *dgid)
{
	struct ibv_qp_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.qp_state = IBV_QPS_RTR;
	attr.path_mtu = o->mtu;
	attr.dest_qp_num = remote->qpn;
	attr.rq_psn = remote->psn;
	attr.max_dest_rd_atomic = 1;
	attr.min_rnr_timer = 12;
	pp_ah_attr(&attr.ah_attr, o, remote->lid, dgid);
	if (ibv_modify_qp(qp, &attr,
			  IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			  IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			  IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER))
		return PP_RTR_FAILED;

	attr.qp_state = IBV_QPS_RTS;
	attr.sq_psn = sq_psn;
	attr.timeout = 14;
	attr.retry_cnt = 7;
	attr.rnr_retry = 7;
	attr.max_rd_atomic = 1;
	if (ibv_modify_qp(qp, &attr,
			  IBV_QP_STATE | IBV_QP_SQ_PSN | IBV_QP_TIMEOUT |
			  IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			  IBV_QP_MAX_QP_RD_ATOMIC))
		return PP_RTS_FAILED;
	return 0;
}

int pp_fits_inline(struct ibv_qp *qp, int size)
{
	struct ibv_qp_init_attr ia;
	struct ibv_qp_attr qa;

	memset(&ia, 0, sizeof(ia));
	return ibv_query_qp(qp, &qa, IBV_QP_CAP, &ia) == 0 &&
	       ia.cap.max_inline_data >= (uint32_t)size;
}

int pp_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq *cq,
		    int *cq_events)
{
	struct ibv_cq *ev_cq;
	void *ev_ctx;

	if (ibv_get_cq_event(channel, &ev_cq, &ev_ctx)) {
		fprintf(stderr, "Failed to get cq_event\n");
		return 1;
	}
	++*cq_events;
	if (ev_cq != cq) {
		fprintf(stderr, "CQ event for unknown CQ %p\n", (void *)ev_cq);
		return 1;
	}
	if (ibv_req_notify_cq(cq, 0)) {
		fprintf(stderr, "Couldn't request CQ notification\n");
		return 1;
	}
	return 0;
}

int pp_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc, int use_event)
{
	int ne;

	do {
		ne = ibv_poll_cq(cq, n, wc);
		if (ne < 0) {
			fprintf(stderr, "poll CQ failed %d\n", ne);
			return -1;
		}
	} while (ne == 0 && !use_event);
	return ne;
}

int pp_check_wc(enum ibv_wc_status status, uint64_t wr_id)
{
	if (status == IBV_WC_SUCCESS)
		return 0;
	fprintf(stderr, "Failed status %s (%d) for wr_id %d\n",
		ibv_wc_status_str(status), status, (int)wr_id);
	return 1;
}

void pp_print_rate(const struct timeval *t0, const struct timeval *t1,
		   const struct pp_opts *o)
{
	double usec = (double)(t1->tv_sec - t0->tv_sec) * 1e6 +
		      (double)(t1->tv_usec - t0->tv_usec);
	long long bytes = (long long)o->size * o->iters * 2;

	printf("%lld bytes in %.2f seconds = %.2f Mbit/sec\n",
	       bytes, usec / 1e6, (double)bytes * 8. / usec);
	printf("%d iters in %.2f seconds = %.2f usec/iter\n",
	       (int)o->iters, usec / 1e6, usec / o->iters);
}

/* ------------------------------------------------------------------ */
/* -c                                                                  */

static char page_mark(long page)
{
	return (char)(page % (long)sizeof(char));
}

void pp_mark_buffer(char *buf, long size, long page_sz)
{
	for (long off = 0; off < size; off += page_sz)
		buf[off] = page_mark(off / page_sz);
}

void pp_check_buffer(const char *buf, long size, long page_sz, char fill)
{
	for (long off = 0; off < size; off += page_sz) {
		long end = off + page_sz < size ? off + page_sz : size;
		int bad = buf[off] != page_mark(off / page_sz);

		for (long i = off + 1; i < end && !bad; i++)
			bad = buf[i] != fill;
		if (bad)
			printf("invalid data in page %ld\n", off / page_sz);
	}
}
