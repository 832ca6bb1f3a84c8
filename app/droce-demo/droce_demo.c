/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-demo: the embedded default. Two RoCEv2 nodes in one process,
 * joined back to back by a net_ring pair, do SEND, SEND with immediate,
 * RDMA WRITE, WRITE with immediate and RDMA READ through the verbs API,
 * check every byte, and say what happened.
 *
 *   droce-demo [EAL args] [-- -s size -n iters -m mtu]
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include <infiniband/verbs.h>
#include "droce.h"

struct node {
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_cq *cq;
	struct ibv_qp *qp;
	struct ibv_mr *mr;
	uint8_t *buf;
	union ibv_gid gid;
};

static size_t buf_size;

static void die(const char *what, int err)
{
	fprintf(stderr, "droce-demo: %s: %s\n", what, strerror(err));
	exit(1);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void node_open(struct node *n, struct ibv_device *d)
{
	n->ctx = ibv_open_device(d);
	if (!n->ctx)
		die("ibv_open_device", errno);
	n->pd = ibv_alloc_pd(n->ctx);
	n->cq = ibv_create_cq(n->ctx, 1024, NULL, NULL, 0);
	n->buf = aligned_alloc(4096, buf_size);
	if (!n->pd || !n->cq || !n->buf)
		die("pd/cq/buffer", errno);
	n->mr = ibv_reg_mr(n->pd, n->buf, buf_size, IBV_ACCESS_LOCAL_WRITE |
			   IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			   IBV_ACCESS_REMOTE_ATOMIC);
	if (!n->mr)
		die("ibv_reg_mr", errno);
	struct ibv_qp_init_attr qa = {
		.send_cq = n->cq, .recv_cq = n->cq, .qp_type = IBV_QPT_RC,
		.cap = { .max_send_wr = 512, .max_recv_wr = 512,
			 .max_send_sge = 1, .max_recv_sge = 1,
			 .max_inline_data = 64 },
	};
	n->qp = ibv_create_qp(n->pd, &qa);
	if (!n->qp)
		die("ibv_create_qp", errno);
	if (ibv_query_gid(n->ctx, 1, 1, &n->gid))
		die("ibv_query_gid", EINVAL);
}

static void connect_qp(struct node *n, const struct node *peer,
		       enum ibv_mtu mtu)
{
	struct ibv_qp_attr a = {
		.qp_state = IBV_QPS_INIT, .pkey_index = 0, .port_num = 1,
		.qp_access_flags = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
				   IBV_ACCESS_REMOTE_ATOMIC,
	};
	int ret;

	ret = ibv_modify_qp(n->qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			    IBV_QP_PORT | IBV_QP_ACCESS_FLAGS);
	if (ret)
		die("modify to INIT", ret);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = peer->qp->qp_num;
	a.rq_psn = 0x1000 + peer->qp->qp_num;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 12;
	a.ah_attr.is_global = 1;
	a.ah_attr.grh.dgid = peer->gid;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.port_num = 1;
	ret = ibv_modify_qp(n->qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
			    IBV_QP_DEST_QPN | IBV_QP_RQ_PSN |
			    IBV_QP_MAX_DEST_RD_ATOMIC | IBV_QP_MIN_RNR_TIMER);
	if (ret)
		die("modify to RTR", ret);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.sq_psn = 0x1000 + n->qp->qp_num;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.max_rd_atomic = 4;
	ret = ibv_modify_qp(n->qp, &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
			    IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
			    IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC);
	if (ret)
		die("modify to RTS", ret);
}

/* Wait for one completion on cq; exit on error or after 10 s. */
static struct ibv_wc wait_wc(struct node *n, const char *what)
{
	struct ibv_wc wc;
	double t0 = now_s();
	int r;

	while ((r = ibv_poll_cq(n->cq, 1, &wc)) == 0) {
		if (now_s() - t0 > 10) {
			fprintf(stderr, "droce-demo: %s: no completion in 10 s\n", what);
			droce_dev_stats_dump(n->ctx, stderr);
			exit(1);
		}
	}
	if (r < 0 || wc.status != IBV_WC_SUCCESS) {
		fprintf(stderr, "droce-demo: %s: completion status %s\n", what,
			ibv_wc_status_str(wc.status));
		exit(1);
	}
	return wc;
}

static void fill(uint8_t *p, size_t len, uint32_t seed)
{
	for (size_t i = 0; i < len; i++) {
		seed = seed * 1103515245u + 12345u;
		p[i] = (uint8_t)(seed >> 16);
	}
}

static int check(const char *what, const uint8_t *a, const uint8_t *b,
		 size_t len)
{
	if (memcmp(a, b, len) != 0) {
		for (size_t i = 0; i < len; i++)
			if (a[i] != b[i]) {
				printf("  %-22s FAILED: byte %zu differs (0x%02x != 0x%02x)\n",
				       what, i, a[i], b[i]);
				break;
			}
		return 1;
	}
	return 0;
}

static void post_recv(struct node *n, size_t off, uint32_t len, uint64_t id)
{
	struct ibv_sge sge = { (uintptr_t)(n->buf + off), len, n->mr->lkey };
	struct ibv_recv_wr wr = { .wr_id = id, .sg_list = &sge, .num_sge = 1 };
	struct ibv_recv_wr *bad;
	int ret = ibv_post_recv(n->qp, &wr, &bad);

	if (ret)
		die("ibv_post_recv", ret);
}

static void post_send(struct node *n, enum ibv_wr_opcode op, size_t off,
		      uint32_t len, uint64_t raddr, uint32_t rkey, uint32_t imm,
		      uint64_t id, bool signaled)
{
	struct ibv_sge sge = { (uintptr_t)(n->buf + off), len, n->mr->lkey };
	struct ibv_send_wr wr = {
		.wr_id = id, .sg_list = &sge, .num_sge = 1, .opcode = op,
		.send_flags = signaled ? IBV_SEND_SIGNALED : 0,
		.imm_data = htonl(imm),
	};
	struct ibv_send_wr *bad;
	int ret;

	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	ret = ibv_post_send(n->qp, &wr, &bad);
	if (ret)
		die("ibv_post_send", ret);
}

int main(int argc, char **argv)
{
	struct ibv_device **list;
	struct node a = { 0 }, b = { 0 };
	uint32_t size = 65536, iters = 2000, mtu = 1024;
	enum ibv_mtu mtu_e = IBV_MTU_1024;
	char *eal_argv[64];
	int eal_argc = 0, ret, opt, failures = 0, nd;
	char extra_buf[1024];

	/* EAL arguments: the caller's, or the embedded default; then
	 * $DROCE_EAL_EXTRA_ARGS (droce_eal_argv). */
	eal_argv[eal_argc++] = argv[0];
	{
		int i, dd = -1;

		for (i = 1; i < argc; i++)
			if (strcmp(argv[i], "--") == 0) {
				dd = i;
				break;
			}
		if (dd > 1 || (dd < 0 && argc > 1)) {
			int end = dd > 0 ? dd : argc;

			for (i = 1; i < end && eal_argc < 32; i++)
				eal_argv[eal_argc++] = argv[i];
		}
		eal_argc = droce_eal_argv(eal_argv, eal_argc, 64,
					  "-l 0-1 --in-memory --no-pci "
					  "--log-level=*:warning --log-level=droce:info",
					  extra_buf, sizeof(extra_buf));
		if (eal_argc < 0)
			die("droce_eal_argv", -eal_argc);
		argc = dd > 0 ? argc - dd : 1;
		argv = dd > 0 ? argv + dd : argv;
	}
	ret = rte_eal_init(eal_argc, eal_argv);
	if (ret < 0)
		die("rte_eal_init", rte_errno);
	optind = 1;
	while ((opt = getopt(argc, argv, "s:n:m:")) != -1) {
		switch (opt) {
		case 's': size = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'n': iters = (uint32_t)strtoul(optarg, NULL, 0); break;
		case 'm': mtu = (uint32_t)strtoul(optarg, NULL, 0); break;
		default:
			fprintf(stderr, "usage: droce-demo [EAL args] -- [-s size] [-n iters] [-m mtu]\n");
			return 2;
		}
	}
	switch (mtu) {
	case 256: mtu_e = IBV_MTU_256; break;
	case 512: mtu_e = IBV_MTU_512; break;
	case 1024: mtu_e = IBV_MTU_1024; break;
	case 2048: mtu_e = IBV_MTU_2048; break;
	case 4096: mtu_e = IBV_MTU_4096; break;
	default: die("-m: path MTU must be 256..4096", EINVAL);
	}
	if (size == 0 || size > (1u << 24))
		die("-s: size must be 1..16 MiB", EINVAL);
	buf_size = (size_t)size * 2 + 4096;

	printf("droce-demo: two RoCEv2 nodes on a net_ring pair, %u engine lcore(s), path MTU %u\n",
	       rte_lcore_count() > 1 ? 1 : 0, mtu);
	{
		char da[64], db[64];

		snprintf(da, sizeof(da), "ip=198.18.0.1,mtu=4096%s",
			 rte_lcore_count() > 1 ? "" : ",lcore=app");
		snprintf(db, sizeof(db), "ip=198.18.0.2,mtu=4096%s",
			 rte_lcore_count() > 1 ? "" : ",lcore=app");
		ret = droce_create_ring_pair(da, db);
		if (ret)
			die("droce_create_ring_pair", -ret);
	}
	list = ibv_get_device_list(&nd);
	if (!list || nd < 2)
		die("ibv_get_device_list", ENODEV);
	node_open(&a, list[0]);
	node_open(&b, list[1]);
	for (int i = 0; i < 2; i++) {
		char g[INET6_ADDRSTRLEN];
		struct node *n = i ? &b : &a;

		inet_ntop(AF_INET6, n->gid.raw, g, sizeof(g));
		printf("  node %c: %s, QPN 0x%06x, GID[1] %s\n", 'A' + i,
		       ibv_get_device_name(list[i]), n->qp->qp_num, g);
	}
	connect_qp(&a, &b, mtu_e);
	connect_qp(&b, &a, mtu_e);
	printf("  QPs connected (RC, INIT -> RTR -> RTS)\n\n");

	/* Region layout in each buffer: [0,size) source, [size,2size) target. */
	fill(a.buf, size, 1);
	fill(b.buf, size, 2);

	/* SEND: A -> B */
	post_recv(&b, size, size, 100);
	post_send(&a, IBV_WR_SEND, 0, size, 0, 0, 0, 1, true);
	wait_wc(&a, "SEND (sender)");
	struct ibv_wc wc = wait_wc(&b, "SEND (receiver)");
	failures += check("SEND", a.buf, b.buf + size, size);
	printf("  SEND            %7u B  A->B  receiver wc: opcode RECV, byte_len %u%s\n",
	       size, wc.byte_len, wc.byte_len == size ? "" : "  WRONG");
	failures += wc.byte_len != size;

	/* SEND with immediate: B -> A */
	post_recv(&a, size, size, 101);
	post_send(&b, IBV_WR_SEND_WITH_IMM, 0, size, 0, 0, 0xc0ffee, 2, true);
	wait_wc(&b, "SEND_WITH_IMM (sender)");
	wc = wait_wc(&a, "SEND_WITH_IMM (receiver)");
	failures += check("SEND_WITH_IMM", b.buf, a.buf + size, size);
	printf("  SEND_WITH_IMM   %7u B  B->A  imm 0x%x%s\n", size, ntohl(wc.imm_data),
	       (wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xc0ffee ?
	       "" : "  WRONG");
	failures += !((wc.wc_flags & IBV_WC_WITH_IMM) && ntohl(wc.imm_data) == 0xc0ffee);

	/* RDMA WRITE: A -> B's target region */
	fill(a.buf, size, 3);
	post_send(&a, IBV_WR_RDMA_WRITE, 0, size, (uintptr_t)(b.buf + size),
		  b.mr->rkey, 0, 3, true);
	wait_wc(&a, "RDMA_WRITE");
	failures += check("RDMA_WRITE", a.buf, b.buf + size, size);
	printf("  RDMA_WRITE      %7u B  A->B  data checked\n", size);

	/* RDMA WRITE with immediate: B -> A */
	fill(b.buf, size, 4);
	post_recv(&a, 0, 0, 102);
	post_send(&b, IBV_WR_RDMA_WRITE_WITH_IMM, 0, size,
		  (uintptr_t)(a.buf + size), a.mr->rkey, 0x1234, 4, true);
	wait_wc(&b, "RDMA_WRITE_WITH_IMM");
	wc = wait_wc(&a, "RDMA_WRITE_WITH_IMM (receiver)");
	failures += check("RDMA_WRITE_WITH_IMM", b.buf, a.buf + size, size);
	printf("  RDMA_WRITE_IMM  %7u B  B->A  receiver wc: RECV_RDMA_WITH_IMM, imm 0x%x, byte_len %u%s\n",
	       size, ntohl(wc.imm_data), wc.byte_len,
	       wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.byte_len == size ?
	       "" : "  WRONG");
	failures += !(wc.opcode == IBV_WC_RECV_RDMA_WITH_IMM && wc.byte_len == size);

	/* RDMA READ: A reads B's source region */
	fill(b.buf, size, 5);
	post_send(&a, IBV_WR_RDMA_READ, size, size, (uintptr_t)b.buf, b.mr->rkey,
		  0, 5, true);
	wc = wait_wc(&a, "RDMA_READ");
	failures += check("RDMA_READ", b.buf, a.buf + size, size);
	printf("  RDMA_READ       %7u B  A<-B  data checked\n", size);

	/* Atomics on an 8-byte counter in B's buffer; results land in A's. */
	{
		uint64_t *ctr = (uint64_t *)(b.buf + 2 * (size_t)size);
		uint64_t *res = (uint64_t *)(a.buf + 2 * (size_t)size);
		struct ibv_sge sge = { (uintptr_t)res, 8, a.mr->lkey };
		struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
					  .send_flags = IBV_SEND_SIGNALED };
		struct ibv_send_wr *bad;
		int ok = 1;

		*ctr = 1000;
		for (int i = 0; i < 10; i++) {
			wr.wr_id = 10 + i;
			wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
			wr.wr.atomic.remote_addr = (uintptr_t)ctr;
			wr.wr.atomic.rkey = b.mr->rkey;
			wr.wr.atomic.compare_add = 5;
			if ((ret = ibv_post_send(a.qp, &wr, &bad)))
				die("post FETCH_AND_ADD", ret);
			wc = wait_wc(&a, "FETCH_AND_ADD");
			ok &= wc.opcode == IBV_WC_FETCH_ADD && *res == 1000 + 5u * i;
		}
		wr.wr_id = 20;
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.compare_add = 1050;
		wr.wr.atomic.swap = 7;
		if ((ret = ibv_post_send(a.qp, &wr, &bad)))
			die("post CMP_AND_SWP", ret);
		wc = wait_wc(&a, "CMP_AND_SWP");
		ok &= wc.opcode == IBV_WC_COMP_SWAP && *res == 1050 && *ctr == 7;
		printf("  FETCH_AND_ADD   10 x +5   A->B  counter 1000 -> 1050%s\n",
		       ok ? "" : "  WRONG");
		printf("  CMP_AND_SWP     1050 -> 7 A->B  counter now %" PRIu64 "%s\n\n",
		       *ctr, ok ? "" : "  WRONG");
		failures += !ok;
	}

	/* A short rate measurement: iters WRITEs, one signalled in 64. */
	{
		double t0 = now_s(), dt;
		uint32_t posted = 0, done = 0, inflight = 0;

		while (done < iters) {
			while (posted < iters && inflight < 256) {
				bool sig = (posted % 64) == 63 || posted == iters - 1;

				post_send(&a, IBV_WR_RDMA_WRITE, 0, size,
					  (uintptr_t)(b.buf + size), b.mr->rkey, 0,
					  posted, sig);
				posted++;
				inflight++;
			}
			struct ibv_wc w[16];
			int r = ibv_poll_cq(a.cq, 16, w);

			for (int i = 0; i < r; i++) {
				if (w[i].status != IBV_WC_SUCCESS)
					die("WRITE loop", EIO);
				uint32_t k = (uint32_t)w[i].wr_id;
				uint32_t batch = (k % 64) + 1;

				done += batch;
				inflight -= batch;
			}
			if (now_s() - t0 > 60)
				die("WRITE loop: no progress", ETIMEDOUT);
		}
		dt = now_s() - t0;
		printf("  %u x RDMA_WRITE of %u B in %.3f s: %.0f msg/s, %.2f Gbit/s\n",
		       iters, size, dt, iters / dt, (double)iters * size * 8 / dt / 1e9);
	}
	printf("\n");
	droce_dev_stats_dump(a.ctx, stdout);
	droce_dev_stats_dump(b.ctx, stdout);

	ibv_destroy_qp(a.qp);
	ibv_destroy_qp(b.qp);
	ibv_dereg_mr(a.mr);
	ibv_dereg_mr(b.mr);
	ibv_destroy_cq(a.cq);
	ibv_destroy_cq(b.cq);
	ibv_dealloc_pd(a.pd);
	ibv_dealloc_pd(b.pd);
	ibv_close_device(a.ctx);
	ibv_close_device(b.ctx);
	ibv_free_device_list(list);
	free(a.buf);
	free(b.buf);
	ret = droce_cleanup();
	if (ret)
		fprintf(stderr, "droce_cleanup: %s\n", strerror(-ret));
	rte_eal_cleanup();
	printf("\ndroce-demo: %s (%d data/completion check%s failed)\n",
	       failures ? "FAILED" : "all operations completed and verified",
	       failures, failures == 1 ? "" : "s");
	return failures ? 1 : 0;
}
