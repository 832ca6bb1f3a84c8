/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The fuzzers' world: see fz_env.h. Everything here is ordinary verbs
 * usage, except that A's send rings are moved into malloc()ed memory (ASan
 * then sees every access outside them) and that the harness takes the app
 * engine's lock while it calls into the engine directly.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_mbuf.h>

#include "fz_env.h"

struct fz_env fz;

#define FZ_DIE(...) do {						\
		fprintf(stderr, "fz_env: " __VA_ARGS__);		\
		fprintf(stderr, "\n");					\
		abort();						\
	} while (0)

static const struct {
	const char *name;
	size_t len;
	int access;
	bool immutable;
	bool on_b;
} mr_spec[FZ_NMR] = {
#define ALL (IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE | \
	     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)
	[FZ_MR_RW] = { "rw", 4096, ALL, false, false },
	[FZ_MR_RO] = { "ro", 4096, IBV_ACCESS_REMOTE_READ, true, false },
	[FZ_MR_RECV] = { "recv", 16384, IBV_ACCESS_LOCAL_WRITE, false, false },
	[FZ_MR_LOCAL] = { "local", 65536, IBV_ACCESS_LOCAL_WRITE, false, false },
	[FZ_MR_NONE] = { "none", 4096, 0, true, false },
	[FZ_MR_DEAD] = { "dead", 4096, ALL, true, false },
	[FZ_MR_OTHERPD] = { "otherpd", 4096, ALL, true, false },
	[FZ_MR_HI] = { "hi", 4096, ALL, false, false },
	[FZ_MR_B_LOCAL] = { "b_local", 65536, ALL, false, true },
	[FZ_MR_B_RECV] = { "b_recv", 16384, IBV_ACCESS_LOCAL_WRITE, false, true },
#undef ALL
};

#define FZ_HI_IOVA	0xffffffffffffe000ull

static inline uint8_t fill_of(int id)
{
	return (uint8_t)(0x41 + id);
}

/* ------------------------------------------------------------- locking */

void fz_lock(void)
{
	rte_spinlock_lock(&fz.eng->app_lock);
}

void fz_unlock(void)
{
	rte_spinlock_unlock(&fz.eng->app_lock);
}

/* One engine iteration, for certain (droce_poll() only tries the lock). */
static int iter(void)
{
	int n;

	fz_lock();
	n = eth_engine_iter(fz.eng);
	fz_unlock();
	return n;
}

void fz_poll(int n)
{
	for (int i = 0; i < n; i++)
		iter();
}

void fz_settle(void)
{
	int quiet = 0;

	for (int i = 0; i < 400 && quiet < 3; i++)
		quiet = iter() ? 0 : quiet + 1;
}

void fz_drain_cqs(void)
{
	struct ibv_wc wc[32];

	while (ibv_poll_cq(fz.cq_a, 32, wc) > 0)
		;
	while (ibv_poll_cq(fz.cq_b, 32, wc) > 0)
		;
}

/* -------------------------------------------------------------- checks */

/* What a canary and each immutable MR must hold. */
static uint8_t ref_canary[FZ_CANARY];
static uint8_t *ref_fill[FZ_NMR];

static void check_range(const char *when, const char *what, const char *mr,
			const uint8_t *p, const uint8_t *ref, size_t n)
{
	if (memcmp(p, ref, n) == 0)
		return;
	for (size_t k = 0; k < n; k++)
		if (p[k] != ref[k])
			FZ_DIE("%s: %s MR %s changed at offset %zu (0x%02x, was 0x%02x)",
			       when, what, mr, k, p[k], ref[k]);
}

void fz_check(const char *when)
{
	for (int i = 0; i < FZ_NMR; i++) {
		const struct fz_mr *m = &fz.mr[i];

		check_range(when, "canary before", m->name, m->alloc, ref_canary,
			    FZ_CANARY);
		check_range(when, "canary after", m->name, m->buf + m->len,
			    ref_canary, FZ_CANARY);
		if (m->immutable)
			check_range(when, i == FZ_MR_DEAD ? "deregistered" :
				    i == FZ_MR_OTHERPD ? "other-PD" :
				    "write-protected", m->name, m->buf, ref_fill[i],
				    m->len);
	}
}

/* ----------------------------------------------------------------- QPs */

static void modify(struct ibv_qp *qp, struct ibv_qp_attr *a, int mask,
		   const char *what)
{
	int ret = ibv_modify_qp(qp, a, mask);

	if (ret)
		FZ_DIE("ibv_modify_qp(%s) QP 0x%x: %s", what, qp->qp_num,
		       strerror(ret));
}

static void to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	modify(qp, &a, IBV_QP_STATE, "state");
}

static void connect_one(struct ibv_qp *qp, int access, enum ibv_mtu mtu,
			uint32_t peer_ip, uint32_t dest_qpn, uint32_t rq_psn,
			uint32_t sq_psn)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_INIT;
	a.pkey_index = 0;
	a.port_num = 1;
	a.qp_access_flags = access;
	modify(qp, &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX | IBV_QP_PORT |
	       IBV_QP_ACCESS_FLAGS, "INIT");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTR;
	a.path_mtu = mtu;
	a.dest_qp_num = dest_qpn;
	a.rq_psn = rq_psn;
	a.max_dest_rd_atomic = 4;
	a.min_rnr_timer = 1;
	a.ah_attr.is_global = 1;
	a.ah_attr.port_num = 1;
	a.ah_attr.grh.sgid_index = 1;
	a.ah_attr.grh.hop_limit = 64;
	a.ah_attr.grh.dgid.raw[10] = 0xff;
	a.ah_attr.grh.dgid.raw[11] = 0xff;
	memcpy(&a.ah_attr.grh.dgid.raw[12], &peer_ip, 4);
	modify(qp, &a, IBV_QP_STATE | IBV_QP_AV | IBV_QP_PATH_MTU |
	       IBV_QP_DEST_QPN | IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
	       IBV_QP_MIN_RNR_TIMER, "RTR");

	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	a.timeout = 14;
	a.retry_cnt = 7;
	a.rnr_retry = 7;
	a.sq_psn = sq_psn;
	a.max_rd_atomic = 4;
	modify(qp, &a, IBV_QP_STATE | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
	       IBV_QP_RNR_RETRY | IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC, "RTS");
}

static struct ibv_qp *make_qp(struct ibv_context *ctx, struct ibv_pd *pd,
			      struct ibv_cq *cq, struct ibv_srq *srq, bool ex)
{
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	memset(&a, 0, sizeof(a));
	a.qp_type = IBV_QPT_RC;
	a.send_cq = cq;
	a.recv_cq = cq;
	a.srq = srq;
	a.cap.max_send_wr = 64;
	a.cap.max_recv_wr = srq ? 0 : 16;
	a.cap.max_send_sge = 4;
	a.cap.max_recv_sge = 2;
	a.cap.max_inline_data = 280;	/* fuzz_rx: 2-packet inline SENDs at MTU 256 */
	a.pd = pd;
	a.comp_mask = IBV_QP_INIT_ATTR_PD;
	if (ex) {
		a.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.send_ops_flags = IBV_QP_EX_WITH_SEND |
			IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
			IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			IBV_QP_EX_WITH_RDMA_READ |
			IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD;
	}
	qp = ibv_create_qp_ex(ctx, &a);
	if (qp == NULL)
		FZ_DIE("ibv_create_qp_ex: %s", strerror(errno));
	return qp;
}

static bool post_recv_into(struct ibv_qp *qp, struct ibv_srq *srq, int id,
			   size_t off, uint64_t wr_id)
{
	const struct fz_mr *m = &fz.mr[id];
	struct ibv_sge sg[2] = {
		{ (uintptr_t)m->buf + off, 1000, m->key },
		{ (uintptr_t)m->buf + off + 1024, 3072, m->key },
	};
	struct ibv_recv_wr wr, *bad;
	int ret;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sg;
	wr.num_sge = 2;
	ret = srq ? ibv_post_srq_recv(srq, &wr, &bad) :
		    ibv_post_recv(qp, &wr, &bad);
	if (ret && ret != ENOMEM)	/* ENOMEM: the queue is full */
		FZ_DIE("post_recv: %s", strerror(ret));
	return ret == 0;
}

void fz_post_recvs(void)
{
	struct droce_srq *s = container_of(fz.srq, struct droce_srq, ibv);

	for (int i = 0; i < FZ_NQP; i++) {
		for (int k = 0; k < 4; k++) {
			if (!fz.q[i].srq)
				post_recv_into(fz.q[i].qp, NULL, FZ_MR_RECV,
					       (size_t)i * 4096, 0xa000 + i * 16 + k);
			post_recv_into(fz.q[i].peer, NULL, FZ_MR_B_RECV,
				       (size_t)i * 4096, 0xb000 + i * 16 + k);
		}
	}
	/* The SRQ outlives the QP resets: top it up to 4 outstanding. */
	while (__atomic_load_n(&s->wq.db, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&s->wq.ci, __ATOMIC_ACQUIRE) < 4)
		if (!post_recv_into(NULL, fz.srq, FZ_MR_RECV, 3 * 4096, 0xc000))
			break;
}

void fz_pace(struct ibv_qp *qp, unsigned int sel)
{
	static const uint32_t kbps[8] = {
		1, 64, 1000, 40000, 1000000, 10000000, 100000000, 0
	};
	struct ibv_qp_rate_limit_attr a = {
		.rate_limit = kbps[sel & 7],
		.max_burst_sz = sel & 8 ? 1 : 0,
		.typical_pkt_sz = sel & 8 ? 64 : 0,
	};

	if (ibv_modify_qp_rate_limit(qp, &a)) {
		fprintf(stderr, "fz: ibv_modify_qp_rate_limit(%u kbit/s) failed\n",
			a.rate_limit);
		abort();
	}
	fz.paced = true;
}

void fz_prefetch_always(void)
{
	fz_lock();
	fz.eng->prefetch_always = true;
	fz.eng->prefetch = true;
	fz_unlock();
}

void fz_reset(void)
{
	fz_settle();
	fz_lock();
	fz.eng->prefetch_always = false;
	fz.eng->prefetch = false;
	fz_unlock();
	for (int i = 0; i < FZ_NQP; i++) {
		struct fz_qp *q = &fz.q[i];

		/* (a paced QP may be on the pacing wheel: RESET takes it off) */
		to_state(q->qp, IBV_QPS_RESET);
		to_state(q->peer, IBV_QPS_RESET);
		memset(q->sq_fz, 0, (size_t)q->dq->sq_stride * q->dq->sq_cnt);
	}
	if (fz.paced) {
		struct ibv_qp_rate_limit_attr off = { .rate_limit = 0 };

		for (int i = 0; i < FZ_NQP; i++)
			if (ibv_modify_qp_rate_limit(fz.q[i].qp, &off) ||
			    ibv_modify_qp_rate_limit(fz.q[i].peer, &off))
				abort();
		fz.paced = false;
	}
	fz_drain_cqs();
	/* Fresh content everywhere a write is allowed: every input starts
	 * from the same bytes. */
	for (int i = 0; i < FZ_NMR; i++)
		if (!fz.mr[i].immutable)
			memset(fz.mr[i].buf, fill_of(i), fz.mr[i].len);
	for (int i = 0; i < FZ_NQP; i++) {
		struct fz_qp *q = &fz.q[i];

		connect_one(q->qp, q->access, q->mtu, fz.ip_b, q->peer->qp_num,
			    q->psn_b, q->psn_a);
		connect_one(q->peer, IBV_ACCESS_LOCAL_WRITE |
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ |
			    IBV_ACCESS_REMOTE_ATOMIC, q->mtu, fz.ip_a,
			    q->qp->qp_num, q->psn_a, q->psn_b);
	}
	fz_post_recvs();
	/* Each device knows the other's MAC, whatever ARP frames earlier
	 * inputs made up: requests leave at once, not after an ARP. */
	fz_lock();
	eth_neigh_learn(fz.eng, fz.dev_a, fz.dev_b->gid[1].raw, &fz.dev_b->mac);
	eth_neigh_learn(fz.eng, fz.dev_b, fz.dev_a->gid[1].raw, &fz.dev_a->mac);
	fz_unlock();
	fz_settle();
	fz_drain_cqs();
}

/* ---------------------------------------------------------------- mbufs */

#define FZ_MAX_SEGS 8

static void ext_free_noop(void *addr, void *opaque)
{
	(void)addr;
	(void)opaque;
}

struct rte_mbuf *fz_mbuf(const uint8_t *data, uint32_t len, uint32_t seg1)
{
	static struct rte_mbuf_ext_shared_info shinfo[FZ_MAX_SEGS];
	struct rte_mbuf *head = NULL, *prev = NULL;
	uint32_t off = 0, nseg = 0;

	if (len == 0 || len > UINT16_MAX)
		return NULL;
	if (seg1 == 0 || seg1 >= len)
		seg1 = len;
	while (off < len) {
		/* First segment seg1 bytes; the rest in pieces of up to
		 * seg1 * 2 + 1 bytes, the last taking what remains. */
		uint32_t n = nseg == 0 ? seg1 : RTE_MIN(len - off, seg1 * 2 + 1);
		struct rte_mbuf *m;
		uint8_t *buf;

		if (nseg == FZ_MAX_SEGS - 1)
			n = len - off;
		m = rte_pktmbuf_alloc(fz.pool);
		buf = malloc(n);
		if (m == NULL || buf == NULL)
			FZ_DIE("out of mbufs or memory");
		memcpy(buf, data + off, n);
		shinfo[nseg].free_cb = ext_free_noop;
		shinfo[nseg].fcb_opaque = NULL;
		rte_mbuf_ext_refcnt_set(&shinfo[nseg], 1);
		rte_pktmbuf_attach_extbuf(m, buf, RTE_BAD_IOVA, (uint16_t)n,
					  &shinfo[nseg]);
		m->data_off = 0;
		m->data_len = (uint16_t)n;
		m->pkt_len = n;
		if (prev) {
			prev->next = m;
			head->nb_segs++;
			head->pkt_len += n;
		} else {
			head = m;
		}
		prev = m;
		off += n;
		nseg++;
	}
	return head;
}

void fz_mbuf_free(struct rte_mbuf *m)
{
	void *bufs[FZ_MAX_SEGS];
	int n = 0;

	for (struct rte_mbuf *s = m; s && n < FZ_MAX_SEGS; s = s->next)
		bufs[n++] = s->buf_addr;
	rte_pktmbuf_free(m);
	while (n)
		free(bufs[--n]);
}

/* ------------------------------------------------------------- set-up */

static char fz_rundir[PATH_MAX];

static void fz_env_fini(void)
{
	int ret;

	if (fz.ctx_a == NULL)
		return;
	fz_settle();
	for (int i = 0; i < FZ_NQP; i++) {
		struct fz_qp *q = &fz.q[i];

		to_state(q->qp, IBV_QPS_RESET);
		to_state(q->peer, IBV_QPS_RESET);
		q->dq->sq_buf = q->sq_orig;
		free(q->sq_fz);
		if (ibv_destroy_qp(q->qp) || ibv_destroy_qp(q->peer))
			FZ_DIE("ibv_destroy_qp failed");
	}
	if (ibv_destroy_srq(fz.srq))
		FZ_DIE("ibv_destroy_srq failed");
	for (int i = 0; i < FZ_NMR; i++) {
		if (fz.mr[i].mr && ibv_dereg_mr(fz.mr[i].mr))
			FZ_DIE("ibv_dereg_mr(%s) failed", fz.mr[i].name);
		free(fz.mr[i].alloc);
		free(ref_fill[i]);
		ref_fill[i] = NULL;
	}
	if (ibv_destroy_cq(fz.cq_a) || ibv_destroy_cq(fz.cq_b))
		FZ_DIE("ibv_destroy_cq failed");
	if (ibv_dealloc_pd(fz.pd_a) || ibv_dealloc_pd(fz.pd_a2) ||
	    ibv_dealloc_pd(fz.pd_b))
		FZ_DIE("ibv_dealloc_pd failed");
	if (ibv_close_device(fz.ctx_a) || ibv_close_device(fz.ctx_b))
		FZ_DIE("ibv_close_device failed");
	ibv_free_device_list(fz.list);
	fz.ctx_a = NULL;
	ret = droce_cleanup();
	if (ret)
		FZ_DIE("droce_cleanup: %d", ret);
	rte_mempool_free(fz.pool);
	ret = rte_eal_cleanup();
	if (ret)
		FZ_DIE("rte_eal_cleanup: %d", ret);
	if (fz_rundir[0])
		(void)rmdir(fz_rundir);
}

static void make_mr(int id);

/* The application deregistered MR id: free its memory at once (ASan
 * reports any later access: a WRITE under way or READ responses owed must
 * not touch it) and register a new buffer in its place. */
void fz_mr_renew(int id)
{
	free(fz.mr[id].alloc);
	fz.mr[id].alloc = NULL;
	make_mr(id);
}

static void make_mr(int id)
{
	struct fz_mr *m = &fz.mr[id];
	struct ibv_pd *pd = mr_spec[id].on_b ? fz.pd_b :
			    id == FZ_MR_OTHERPD ? fz.pd_a2 : fz.pd_a;

	if (ref_fill[id] == NULL) {
		ref_fill[id] = malloc(mr_spec[id].len);
		if (ref_fill[id] == NULL)
			FZ_DIE("malloc");
		memset(ref_fill[id], fill_of(id), mr_spec[id].len);
		memset(ref_canary, FZ_CANARY_BYTE, FZ_CANARY);
	}
	m->name = mr_spec[id].name;
	m->len = mr_spec[id].len;
	m->access = mr_spec[id].access;
	m->immutable = mr_spec[id].immutable;
	m->on_b = mr_spec[id].on_b;
	m->alloc = malloc(m->len + 2 * FZ_CANARY);
	if (m->alloc == NULL)
		FZ_DIE("malloc");
	m->buf = m->alloc + FZ_CANARY;
	memset(m->alloc, FZ_CANARY_BYTE, m->len + 2 * FZ_CANARY);
	memset(m->buf, fill_of(id), m->len);
	m->iova = id == FZ_MR_HI ? FZ_HI_IOVA : (uintptr_t)m->buf;
	m->mr = ibv_reg_mr_iova(pd, m->buf, m->len, m->iova, m->access);
	if (m->mr == NULL)
		FZ_DIE("ibv_reg_mr(%s): %s", m->name, strerror(errno));
	m->key = m->mr->rkey;
	if (id == FZ_MR_DEAD) {
		if (ibv_dereg_mr(m->mr))
			FZ_DIE("ibv_dereg_mr(dead)");
		m->mr = NULL;
	}
}

void fz_env_init(const char *prog)
{
	static const struct {
		enum ibv_mtu mtu;
		int access;
		uint32_t psn_a, psn_b;
		bool srq;
	} qspec[FZ_NQP] = {
		{ IBV_MTU_1024, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		  0x000100, 0x001000, false },
		{ IBV_MTU_1024, 0, 0x000200, 0x002000, false },
		{ IBV_MTU_256, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		  0xfffff8, 0xfffffc, false },
		{ IBV_MTU_4096, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		  IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC,
		  0x7ffffe, 0x800000, true },
	};
	char prefix[64], log[64];
	char *argv[16];
	int argc = 0, n, ret;
	const char *verbose = getenv("FZ_VERBOSE");
	struct ibv_srq_init_attr sa;

	if (fz.ctx_a)
		return;
	fz.verbose = verbose && *verbose && *verbose != '0';
	verbose = getenv("FZ_AVOID_OPEN_BUGS");
	fz.avoid_open_bugs = verbose && *verbose && *verbose != '0';
	snprintf(prefix, sizeof(prefix), "--file-prefix=droce-fz-%d", getpid());
	snprintf(log, sizeof(log), "--log-level=*:%s",
		 fz.verbose ? "debug" : "critical");
	argv[argc++] = (char *)(uintptr_t)prog;
	argv[argc++] = (char *)(uintptr_t)"-l";
	argv[argc++] = (char *)(uintptr_t)"0";
	/* --in-memory cannot go with --no-huge in DPDK 22.11. */
	argv[argc++] = (char *)(uintptr_t)"--no-huge";
	argv[argc++] = (char *)(uintptr_t)"-m";
	argv[argc++] = (char *)(uintptr_t)"512";
	argv[argc++] = (char *)(uintptr_t)"--no-shconf";
	argv[argc++] = (char *)(uintptr_t)"--no-pci";
	argv[argc++] = (char *)(uintptr_t)"--no-telemetry";
	argv[argc++] = log;
	argv[argc++] = prefix;
	argv[argc] = NULL;
	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		FZ_DIE("rte_eal_init: %s", rte_strerror(rte_errno));
	/* --no-shconf: nothing lives in the runtime directory; remove it now
	 * so that a run that crashes leaves nothing behind */
	snprintf(fz_rundir, sizeof(fz_rundir), "%s", rte_eal_get_runtime_dir());
	if (rmdir(fz_rundir) == 0)
		fz_rundir[0] = '\0';
	ret = droce_create_ring_pair(
		"ip=198.18.0.1,lcore=app,mtu=4096,nb_mbuf=2047,linger_ms=1",
		"ip=198.18.0.2,lcore=app,mtu=4096,nb_mbuf=2047,linger_ms=1");
	if (ret)
		FZ_DIE("droce_create_ring_pair: %d", ret);
	fz.list = ibv_get_device_list(&n);
	if (fz.list == NULL || n != 2)
		FZ_DIE("ibv_get_device_list: %d devices", n);
	for (int i = 0; i < 2; i++) {
		struct ibv_context *c = ibv_open_device(fz.list[i]);

		if (c == NULL)
			FZ_DIE("ibv_open_device");
		if (droce_dev_of_ctx(c)->args.ip == htonl(0xc6120001))
			fz.ctx_a = c;
		else
			fz.ctx_b = c;
	}
	if (fz.ctx_a == NULL || fz.ctx_b == NULL)
		FZ_DIE("devices 198.18.0.1 and .2 not found");
	fz.dev_a = droce_dev_of_ctx(fz.ctx_a);
	fz.dev_b = droce_dev_of_ctx(fz.ctx_b);
	fz.eng = fz.dev_a->eng;
	if (fz.eng != fz.dev_b->eng || fz.eng->lcore >= 0)
		FZ_DIE("both devices must share the app engine");
	/* The app engine's keeper thread drives the engine whenever the
	 * application has not for a while: here that would race with the
	 * harness and make runs depend on timing. Only the harness drives. */
	if (fz.eng->keeper_running) {
		fz.eng->keeper_stop = true;
		pthread_join(fz.eng->keeper, NULL);
		fz.eng->keeper_running = false;
	}
	fz.ip_a = fz.dev_a->args.ip;
	fz.ip_b = fz.dev_b->args.ip;
	fz.pool = rte_pktmbuf_pool_create("fz_pool", 255, 0, 0,
					  RTE_PKTMBUF_HEADROOM, SOCKET_ID_ANY);
	if (fz.pool == NULL)
		FZ_DIE("mbuf pool: %s", rte_strerror(rte_errno));

	fz.pd_a = ibv_alloc_pd(fz.ctx_a);
	fz.pd_a2 = ibv_alloc_pd(fz.ctx_a);
	fz.pd_b = ibv_alloc_pd(fz.ctx_b);
	fz.cq_a = ibv_create_cq(fz.ctx_a, 1024, NULL, NULL, 0);
	fz.cq_b = ibv_create_cq(fz.ctx_b, 1024, NULL, NULL, 0);
	if (!fz.pd_a || !fz.pd_a2 || !fz.pd_b || !fz.cq_a || !fz.cq_b)
		FZ_DIE("PD/CQ: %s", strerror(errno));
	for (int i = 0; i < FZ_NMR; i++)
		make_mr(i);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 64;
	sa.attr.max_sge = 2;
	fz.srq = ibv_create_srq(fz.pd_a, &sa);
	if (fz.srq == NULL)
		FZ_DIE("ibv_create_srq: %s", strerror(errno));

	for (int i = 0; i < FZ_NQP; i++) {
		struct fz_qp *q = &fz.q[i];
		size_t sz;

		q->mtu = qspec[i].mtu;
		q->access = qspec[i].access;
		q->psn_a = qspec[i].psn_a;
		q->psn_b = qspec[i].psn_b;
		q->srq = qspec[i].srq;
		q->qp = make_qp(fz.ctx_a, fz.pd_a, fz.cq_a,
				q->srq ? fz.srq : NULL, i == 0);
		q->peer = make_qp(fz.ctx_b, fz.pd_b, fz.cq_b, NULL, i == 0);
		q->dq = droce_qp_of(q->qp);
		q->dpeer = droce_qp_of(q->peer);
		sz = (size_t)q->dq->sq_stride * q->dq->sq_cnt;
		q->sq_fz = aligned_alloc(DROCE_BB, sz);
		if (q->sq_fz == NULL)
			FZ_DIE("malloc");
		memset(q->sq_fz, 0, sz);
		q->sq_orig = q->dq->sq_buf;
		q->dq->sq_buf = q->sq_fz;	/* the QP is in RESET: unused */
	}
	atexit(fz_env_fini);
	fz_reset();
	fz_check("set-up");
}
