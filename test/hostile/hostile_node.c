/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * hostile_node: one droce device on a DPDK net_af_packet port, set up to
 * be attacked from the wire by test/hostile/test_hostile.py.
 *
 *   hostile_node <iface> [<our ip> <peer ip>]    (default 198.18.0.1 .2)
 *
 * EAL arguments: $HOSTILE_EAL_ARGS, else "-l 0 --no-huge -m 256
 * --no-shconf --no-pci --no-telemetry"; the af_packet vdev on <iface> is
 * added. The device runs app-driven (lcore=app): this program's main loop
 * is the engine.
 *
 * Objects (all on PD 1 unless said): QPs A, B (all remote rights), C (no
 * REMOTE_ATOMIC), D (created, connected, destroyed: its QPN is dead), E
 * (no receive ever posted), all connected to the peer's QPN 0x100 + i;
 * MRs rw (all rights), ro
 * (REMOTE_READ), recv (receive buffers), dead (deregistered), otherpd (all
 * rights, PD 2). Every MR buffer sits between canary bytes; ro, dead and
 * otherpd must never change at all.
 *
 * Prints one JSON line describing all that, then serves. Commands on
 * stdin, one per line, each answered by one JSON line:
 *   stats          counters, QP states, canary status, new completions
 *   reset <qp>     back to RESET, then connected again as at start, and
 *                  receives posted (after a test drove it to ERR)
 *   read <mr> <off> <len>   hex of MR bytes
 *   fill <mr> <byte>        set an MR's bytes (rw, recv only)
 *   dereg <mr>     deregister it; its buffer is kept, filled with 0xdd and
 *                  must not change any more (canary status says if it does)
 *   rereg <mr>     register that buffer again (new rkey in the answer)
 * At end of input: the final stats line, then exit 0 (1 if a canary or an
 * immutable MR was damaged).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include <infiniband/verbs.h>

#include "droce.h"

#define CANARY		64
#define CANARY_BYTE	0xca
#define NQP		5
#define PEER_QPN_BASE	0x100
#define RQ_PSN_BASE	0x1000
#define SQ_PSN_BASE	0x2000
#define NRECV		16

#define DIE(...) do {							\
		fprintf(stderr, "hostile_node: " __VA_ARGS__);		\
		fprintf(stderr, "\n");					\
		exit(2);						\
	} while (0)

struct mr {
	const char *name;
	size_t len;
	int access;
	bool immutable;
	bool other_pd;
	bool dead;
	uint8_t fill;
	uint8_t *alloc, *buf;
	struct ibv_mr *mr;
	uint32_t rkey;
};

enum { MR_RW, MR_RO, MR_RECV, MR_DEAD, MR_OTHERPD, NMR };

#define ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)

static struct mr mrs[NMR] = {
	[MR_RW] = { .name = "rw", .len = 8192, .access = ALL, .fill = 0x11 },
	[MR_RO] = { .name = "ro", .len = 4096, .access = IBV_ACCESS_REMOTE_READ,
		    .immutable = true, .fill = 0x22 },
	[MR_RECV] = { .name = "recv", .len = NQP * NRECV * 2048,
		      .access = IBV_ACCESS_LOCAL_WRITE, .fill = 0x33 },
	[MR_DEAD] = { .name = "dead", .len = 4096, .access = ALL,
		      .immutable = true, .dead = true, .fill = 0x44 },
	[MR_OTHERPD] = { .name = "otherpd", .len = 4096, .access = ALL,
			 .immutable = true, .other_pd = true, .fill = 0x55 },
};

struct qp {
	const char *name;
	int access;
	bool destroy;
	bool no_recv;		/* no receive ever posted: RNR */
	struct ibv_qp *qp;
	uint32_t qpn;
};

static struct qp qps[NQP] = {
	{ .name = "A", .access = ALL },
	{ .name = "B", .access = ALL },
	{ .name = "C", .access = ALL & ~IBV_ACCESS_REMOTE_ATOMIC },
	{ .name = "D", .access = ALL, .destroy = true },
	{ .name = "E", .access = ALL, .no_recv = true },
};

static struct ibv_context *ctx;
static struct ibv_pd *pd, *pd2;
static struct ibv_cq *cq;
static uint32_t our_ip, peer_ip;

/* Completions seen since the last report. */
static struct ibv_wc wcs[256];
static int nwc;

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask)
{
	int ret = ibv_modify_qp(qp, a, mask);

	if (ret)
		DIE("ibv_modify_qp: %s", strerror(ret));
}

static void post_recvs(int i)
{
	for (int k = 0; k < NRECV && !qps[i].no_recv; k++) {
		struct mr *m = &mrs[MR_RECV];
		struct ibv_sge sg = {
			(uintptr_t)m->buf + ((size_t)i * NRECV + k) * 2048, 2048,
			m->mr->lkey
		};
		struct ibv_recv_wr wr = { .wr_id = (uint64_t)i << 8 | k,
					  .sg_list = &sg, .num_sge = 1 }, *bad;

		if (ibv_post_recv(qps[i].qp, &wr, &bad))
			break;	/* full: enough posted */
	}
}

static void connect_qp(int i)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	modify(qps[i].qp, &a, IBV_QP_STATE);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.port_num = 1;
	a.qp_access_flags = qps[i].access;
	modify(qps[i].qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       IBV_QP_ACCESS_FLAGS);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = IBV_MTU_1024;
	a.dest_qp_num = PEER_QPN_BASE + (uint32_t)i;
	a.rq_psn = RQ_PSN_BASE * (uint32_t)(i + 1);
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = 0xff;
	a.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(&a.ah_attr.grh.dgid.raw[12], &peer_ip, 4);
	modify(qps[i].qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
	       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	       IBV_QP_MIN_RNR_TIMER);
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = SQ_PSN_BASE * (uint32_t)(i + 1);
	a.max_rd_atomic = 4;
	modify(qps[i].qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC);
	post_recvs(i);
}

/* "" when every canary and immutable MR is intact, else what is not. */
static const char *canaries(void)
{
	static char msg[256];

	msg[0] = '\0';
	for (int i = 0; i < NMR && !msg[0]; i++) {
		const struct mr *m = &mrs[i];

		for (size_t k = 0; k < CANARY && !msg[0]; k++)
			if (m->alloc[k] != CANARY_BYTE ||
			    m->buf[m->len + k] != CANARY_BYTE)
				snprintf(msg, sizeof(msg),
					 "canary next to MR %s overwritten", m->name);
		for (size_t k = 0; m->immutable && k < m->len && !msg[0]; k++)
			if (m->buf[k] != m->fill)
				snprintf(msg, sizeof(msg),
					 "MR %s changed at offset %zu", m->name, k);
	}
	return msg;
}

static const char *state_name(int s)
{
	static const char *n[] = { "RESET", "INIT", "RTR", "RTS", "SQD", "SQE",
				   "ERR" };

	return s >= 0 && s <= IBV_QPS_ERR ? n[s] : "UNKNOWN";
}

static void drain_cq(void)
{
	struct ibv_wc wc[16];
	int n;

	while ((n = ibv_poll_cq(cq, 16, wc)) > 0)
		for (int i = 0; i < n && nwc < (int)RTE_DIM(wcs); i++)
			wcs[nwc++] = wc[i];
}

static void report(bool final)
{
	struct droce_dev_stats s;
	const char *c = canaries();

	drain_cq();
	droce_dev_stats_get(ctx, &s);
	printf("{\"final\": %s, \"canaries\": \"%s\", \"stats\": {", final ?
	       "true" : "false", c[0] ? c : "ok");
	{
		const char *sep = "";
#define PR(name, help) printf("%s\"%s\": %" PRIu64, sep, #name, s.name); sep = ", ";
		DROCE_DEV_STATS(PR)
#undef PR
	}
	printf("}, \"qps\": {");
	for (int i = 0; i < NQP; i++) {
		struct ibv_qp_attr a;
		struct ibv_qp_init_attr ia;
		struct droce_qp_stats qs;

		if (qps[i].destroy)
			continue;
		ibv_query_qp(qps[i].qp, &a, IBV_QP_STATE, &ia);
		droce_qp_stats_get(qps[i].qp, &qs);
		printf("%s\"%s\": {\"state\": \"%s\", \"rx_pkts\": %" PRIu64
		       ", \"dup\": %" PRIu64 ", \"seq_err\": %" PRIu64
		       ", \"naks_tx\": %" PRIu64 "}", i ? ", " : "", qps[i].name,
		       state_name(a.qp_state), qs.rx_pkts, qs.dup, qs.seq_err,
		       qs.naks_tx);
	}
	printf("}, \"wcs\": [");
	for (int i = 0; i < nwc; i++)
		printf("%s{\"qp_num\": %u, \"wr_id\": %" PRIu64 ", \"status\": %d, "
		       "\"opcode\": %d, \"byte_len\": %u, \"imm\": %u, "
		       "\"with_imm\": %s}", i ? ", " : "", wcs[i].qp_num,
		       wcs[i].wr_id, wcs[i].status, wcs[i].opcode, wcs[i].byte_len,
		       ntohl(wcs[i].imm_data),
		       (wcs[i].wc_flags & IBV_WC_WITH_IMM) ? "true" : "false");
	nwc = 0;
	printf("]}\n");
	fflush(stdout);
}

static struct mr *mr_named(const char *n)
{
	for (int i = 0; i < NMR; i++)
		if (strcmp(mrs[i].name, n) == 0)
			return &mrs[i];
	return NULL;
}

static void command(char *line)
{
	char a[32], b[32];
	unsigned long off, len;

	if (strncmp(line, "stats", 5) == 0) {
		report(false);
	} else if (sscanf(line, "reset %31s", a) == 1) {
		for (int i = 0; i < NQP; i++)
			if (!qps[i].destroy && strcmp(qps[i].name, a) == 0) {
				/* the engine must have let go of what was
				 * queued for it before the reset */
				for (int k = 0; k < 100; k++)
					droce_poll(ctx);
				connect_qp(i);
			}
		drain_cq();
		nwc = 0;
		printf("{\"reset\": \"%s\"}\n", a);
	} else if (sscanf(line, "read %31s %lu %lu", a, &off, &len) == 3) {
		struct mr *m = mr_named(a);

		printf("{\"hex\": \"");
		for (unsigned long k = 0; m && k < len && off + k < m->len; k++)
			printf("%02x", m->buf[off + k]);
		printf("\"}\n");
	} else if (sscanf(line, "fill %31s %31s", a, b) == 2) {
		struct mr *m = mr_named(a);

		if (m && !m->immutable)
			memset(m->buf, (int)strtoul(b, NULL, 0), m->len);
		printf("{\"fill\": \"%s\"}\n", a);
	} else if (sscanf(line, "dereg %31s", a) == 1) {
		struct mr *m = mr_named(a);

		if (m && m->mr && !ibv_dereg_mr(m->mr)) {
			m->mr = NULL;
			memset(m->buf, 0xdd, m->len);
			m->fill = 0xdd;
			m->immutable = true;
		}
		printf("{\"dereg\": \"%s\"}\n", a);
	} else if (sscanf(line, "rereg %31s", a) == 1) {
		struct mr *m = mr_named(a);

		if (m && !m->mr && !m->dead) {
			m->mr = ibv_reg_mr(m->other_pd ? pd2 : pd, m->buf, m->len,
					   m->access);
			m->rkey = m->mr ? m->mr->rkey : 0;
			m->immutable = false;
		}
		printf("{\"rereg\": \"%s\", \"rkey\": %u}\n", a,
		       m ? m->rkey : 0);
	} else {
		printf("{\"error\": \"unknown command\"}\n");
	}
	fflush(stdout);
}

static void print_setup(void)
{
	char ip[INET_ADDRSTRLEN];
	struct rte_ether_addr mac;

	rte_eth_macaddr_get((uint16_t)droce_dev_port_id(ctx), &mac);
	inet_ntop(AF_INET, &our_ip, ip, sizeof(ip));
	printf("{\"ip\": \"%s\", \"mac\": \"" RTE_ETHER_ADDR_PRT_FMT "\", "
	       "\"mtu\": 1024, \"qps\": {", ip, RTE_ETHER_ADDR_BYTES(&mac));
	for (int i = 0; i < NQP; i++)
		printf("%s\"%s\": {\"qpn\": %u, \"dest_qpn\": %u, \"rq_psn\": %u, "
		       "\"sq_psn\": %u, \"access\": %d, \"destroyed\": %s}",
		       i ? ", " : "", qps[i].name, qps[i].qpn,
		       PEER_QPN_BASE + i, RQ_PSN_BASE * (i + 1),
		       SQ_PSN_BASE * (i + 1), qps[i].access,
		       qps[i].destroy ? "true" : "false");
	printf("}, \"mrs\": {");
	for (int i = 0; i < NMR; i++)
		printf("%s\"%s\": {\"addr\": %" PRIu64 ", \"len\": %zu, "
		       "\"rkey\": %u, \"access\": %d, \"fill\": %u}",
		       i ? ", " : "", mrs[i].name, (uint64_t)(uintptr_t)mrs[i].buf,
		       mrs[i].len, mrs[i].rkey, mrs[i].access, mrs[i].fill);
	printf("}, \"recv_slot\": 2048, \"nrecv\": %d}\n", NRECV);
	fflush(stdout);
}

int main(int argc, char **argv)
{
	char vdev[128], prefix[64], devargs[128];
	char *eal[32], *env, *tok, *save = NULL;
	const char *ours = argc > 2 ? argv[2] : "198.18.0.1";
	const char *peer = argc > 3 ? argv[3] : "198.18.0.2";
	struct ibv_device **list;
	char line[256];
	size_t used = 0;
	int n = 0, ret;
	bool bad;

	if (argc < 2)
		DIE("usage: hostile_node <iface> [<our ip> <peer ip>]");
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (inet_pton(AF_INET, ours, &our_ip) != 1 ||
	    inet_pton(AF_INET, peer, &peer_ip) != 1)
		DIE("bad address");
	snprintf(vdev, sizeof(vdev), "--vdev=net_af_packet0,iface=%s", argv[1]);
	snprintf(prefix, sizeof(prefix), "--file-prefix=droce-hostile-%d",
		 getpid());
	eal[n++] = argv[0];
	env = getenv("HOSTILE_EAL_ARGS");
	if (env && *env) {
		env = strdup(env);
		for (tok = strtok_r(env, " \t", &save); tok && n < 28;
		     tok = strtok_r(NULL, " \t", &save))
			eal[n++] = tok;
	} else {
		static char *def[] = { "-l", "0", "--no-huge", "-m", "256",
				       "--no-shconf", "--no-pci", "--no-telemetry",
				       "--log-level=*:warning" };

		for (size_t k = 0; k < RTE_DIM(def); k++)
			eal[n++] = def[k];
	}
	eal[n++] = prefix;
	eal[n++] = vdev;
	eal[n] = NULL;
	ret = rte_eal_init(n, eal);
	if (ret < 0) {
		fprintf(stderr, "SKIPPED: rte_eal_init failed: %s\n",
			rte_strerror(rte_errno));
		return 77;
	}
	/* --no-shconf: the runtime directory stays empty, leave nothing */
	(void)rmdir(rte_eal_get_runtime_dir());
	snprintf(devargs, sizeof(devargs), "ip=%s,lcore=app,mtu=1024", ours);
	ret = droce_dev_create_by_name("net_af_packet0", devargs);
	if (ret == -ENODEV) {
		fprintf(stderr, "SKIPPED: no net_af_packet port on %s\n", argv[1]);
		return 77;
	}
	if (ret < 0)
		DIE("droce_dev_create_by_name: %d", ret);
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 1)
		DIE("no device");
	ctx = ibv_open_device(list[0]);
	pd = ibv_alloc_pd(ctx);
	pd2 = ibv_alloc_pd(ctx);
	cq = ibv_create_cq(ctx, 1024, NULL, NULL, 0);
	if (!ctx || !pd || !pd2 || !cq)
		DIE("device set-up: %s", strerror(errno));
	for (int i = 0; i < NMR; i++) {
		struct mr *m = &mrs[i];

		m->alloc = malloc(m->len + 2 * CANARY);
		if (m->alloc == NULL)
			DIE("malloc");
		m->buf = m->alloc + CANARY;
		memset(m->alloc, CANARY_BYTE, m->len + 2 * CANARY);
		memset(m->buf, m->fill, m->len);
		m->mr = ibv_reg_mr(m->other_pd ? pd2 : pd, m->buf, m->len, m->access);
		if (m->mr == NULL)
			DIE("ibv_reg_mr(%s): %s", m->name, strerror(errno));
		m->rkey = m->mr->rkey;
	}
	for (int i = 0; i < NQP; i++) {
		struct ibv_qp_init_attr a;

		memset(&a, 0, sizeof(a));
		a.qp_type = IBV_QPT_RC;
		a.send_cq = cq;
		a.recv_cq = cq;
		a.cap.max_send_wr = 16;
		a.cap.max_recv_wr = NRECV;
		a.cap.max_send_sge = 1;
		a.cap.max_recv_sge = 1;
		qps[i].qp = ibv_create_qp(pd, &a);
		if (qps[i].qp == NULL)
			DIE("ibv_create_qp: %s", strerror(errno));
		qps[i].qpn = qps[i].qp->qp_num;
		connect_qp(i);
	}
	/* The dead ones: an MR deregistered, a QP destroyed after use. */
	for (int i = 0; i < NMR; i++)
		if (mrs[i].dead) {
			if (ibv_dereg_mr(mrs[i].mr))
				DIE("ibv_dereg_mr");
			mrs[i].mr = NULL;
		}
	for (int i = 0; i < NQP; i++)
		if (qps[i].destroy) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_ERR };

			modify(qps[i].qp, &a, IBV_QP_STATE);
			drain_cq();
			if (ibv_destroy_qp(qps[i].qp))
				DIE("ibv_destroy_qp");
			qps[i].qp = NULL;
		}
	nwc = 0;
	print_setup();

	/* Serve: drive the engine, read commands without blocking it. */
	for (;;) {
		struct pollfd pfd = { .fd = 0, .events = POLLIN };
		ssize_t r;
		char *nl;

		for (int k = 0; k < 64; k++)
			droce_poll(ctx);
		drain_cq();
		if (poll(&pfd, 1, 0) <= 0)
			continue;
		r = read(0, line + used, sizeof(line) - 1 - used);
		if (r <= 0)
			break;
		used += (size_t)r;
		line[used] = '\0';
		while ((nl = strchr(line, '\n')) != NULL) {
			*nl = '\0';
			command(line);
			memmove(line, nl + 1, used - (size_t)(nl + 1 - line) + 1);
			used -= (size_t)(nl + 1 - line);
		}
		if (used >= sizeof(line) - 1)
			used = 0;	/* a line too long: dropped */
	}
	for (int k = 0; k < 1000; k++)
		droce_poll(ctx);
	report(true);
	bad = canaries()[0] != '\0';
	for (int i = 0; i < NQP; i++)
		if (qps[i].qp) {
			struct ibv_qp_attr a = { .qp_state = IBV_QPS_RESET };

			modify(qps[i].qp, &a, IBV_QP_STATE);
			ibv_destroy_qp(qps[i].qp);
		}
	for (int i = 0; i < NMR; i++) {
		if (mrs[i].mr)
			ibv_dereg_mr(mrs[i].mr);
		free(mrs[i].alloc);
	}
	ibv_destroy_cq(cq);
	ibv_dealloc_pd(pd);
	ibv_dealloc_pd(pd2);
	ibv_close_device(ctx);
	ibv_free_device_list(list);
	ret = droce_cleanup();
	rte_eal_cleanup();
	return bad || ret ? 1 : 0;
}
