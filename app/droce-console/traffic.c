/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Continuous workloads, in the manner of testpmd's forwarding modes: each
 * flow keeps <depth> operations of one kind in flight on one QP, every one
 * signaled and timed from post to completion (a log-linear histogram gives
 * p50/p99/p99.9). SENDs (and WRITE_IMMs) to a local peer keep the peer's
 * receive queue fed; on stop the requester sends exactly as many more as
 * receives were posted, so no receive WQE is left behind.
 *
 * All flows are driven by one polling loop: on a free worker lcore (one
 * neither main nor an engine's) if there is one, else on the main lcore
 * between keystrokes and during waits. One polling thread per core.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "console.h"

#define TR_MAX_FLOWS	16
#define TR_HIST		(16 * 62)
#define TR_BATCH	32
#define TR_WRID_MAGIC	0xd6ull
#define TR_WRID(f, kind, slot) ((TR_WRID_MAGIC << 56) | ((uint64_t)(f) << 40) | \
				((uint64_t)(kind) << 32) | (uint32_t)(slot))
#define TR_KIND_REQ	0
#define TR_KIND_RECV	1

enum tr_state { TR_IDLE, TR_RUNNING, TR_DRAINING, TR_STOPPED, TR_FAILED };

struct tr_flow {
	enum tr_state state;		/* written by the polling thread */
	int qp, peer;			/* console QP ids; peer -1: none here */
	int op;				/* con_op; CON_OP_RECV: a receive sink */
	uint32_t size, depth;
	struct ibv_sge sge;		/* local buffer */
	uint64_t raddr;
	uint32_t rkey;
	struct ibv_sge rsge;		/* receives (peer's or our own for a sink) */
	struct ibv_qp *sqp;		/* the requester */
	struct ibv_qp *rqp;		/* QP whose receive queue we feed */
	struct con_cq *scq, *rcq;
	uint32_t rq_cap;
	/* polling thread */
	uint64_t *post_tsc;		/* per slot */
	uint64_t req_posted, req_done;
	uint64_t recv_posted, recv_done;
	uint64_t pre_recv;		/* receives already posted at the peer */
	/* published counters */
	uint64_t ops, bytes, errors, recvs;
	uint64_t hist[TR_HIST];
	uint64_t tsc_start, tsc_end;
	char err[128];
	/* console side: interval snapshot */
	uint64_t last_ops, last_bytes, last_tsc;
	bool has_results;
};

static struct {
	struct tr_flow f[TR_MAX_FLOWS];
	int lcore;			/* -1: main */
	bool worker_running;
	volatile bool worker_stop;
	bool on_main;			/* some flow polled by the main loop */
	/* results of finished flows, for "summary" */
	char results[32][320];
	int nb_results;
	int failed_results;
} tr = { .lcore = -1 };

#define LD(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)
#define ST(x, v) __atomic_store_n(&(x), (v), __ATOMIC_RELAXED)

static inline unsigned int hist_idx(uint64_t ns)
{
	unsigned int msb, idx;

	if (ns < 16)
		return (unsigned int)ns;
	msb = 63u - (unsigned int)__builtin_clzll(ns);
	idx = (msb - 3) * 16 + (unsigned int)((ns >> (msb - 4)) & 15);
	return idx < TR_HIST ? idx : TR_HIST - 1;
}

static inline double hist_val(unsigned int idx)
{
	unsigned int msb, sub;

	if (idx < 16)
		return idx;
	msb = idx / 16 + 3;
	sub = idx % 16;
	return (double)((16ull + sub) << (msb - 4)) + (double)(1ull << (msb - 4)) / 2;
}

static double hist_pct(const struct tr_flow *f, double p)
{
	uint64_t total = 0, acc = 0, target;

	for (unsigned int i = 0; i < TR_HIST; i++)
		total += LD(f->hist[i]);
	if (total == 0)
		return 0;
	target = (uint64_t)((double)total * p + 0.999999);
	if (target == 0)
		target = 1;
	for (unsigned int i = 0; i < TR_HIST; i++) {
		acc += LD(f->hist[i]);
		if (acc >= target)
			return hist_val(i);
	}
	return hist_val(TR_HIST - 1);
}

/* ------------------------------------------------------ polling thread */

static void flow_fail(struct tr_flow *f, const char *what, int status)
{
	snprintf(f->err, sizeof(f->err), "%s: %s", what,
		 status >= 0 ? ibv_wc_status_str((enum ibv_wc_status)status) : strerror(-status));
	ST(f->tsc_end, rte_rdtsc());
	__atomic_store_n(&f->state, TR_FAILED, __ATOMIC_RELEASE);
}

static bool needs_recv(const struct tr_flow *f)
{
	return f->op == CON_OP_RECV || (con_ops[f->op].flags & CON_OPF_RECV);
}

static void post_recvs(struct tr_flow *f, int fi, uint64_t upto)
{
	struct ibv_recv_wr wr[TR_BATCH], *bad;
	int n = 0;

	while (f->recv_posted < upto && n < TR_BATCH &&
	       f->recv_posted - f->recv_done < f->rq_cap) {
		wr[n].wr_id = TR_WRID(fi, TR_KIND_RECV, 0);
		wr[n].sg_list = &f->rsge;
		wr[n].num_sge = 1;
		wr[n].next = NULL;
		if (n)
			wr[n - 1].next = &wr[n];
		n++;
		f->recv_posted++;
	}
	if (n && ibv_post_recv(f->rqp, wr, &bad)) {
		f->recv_posted -= (uint64_t)(n - (bad - wr));
		flow_fail(f, "ibv_post_recv", -ENOMEM);
	}
}

static void post_reqs(struct tr_flow *f, int fi, uint64_t limit)
{
	struct ibv_send_wr wr[TR_BATCH], *bad;
	const struct con_opdesc *od = &con_ops[f->op];
	int n = 0;
	uint64_t now = rte_rdtsc();

	while (f->req_posted - f->req_done < f->depth && f->req_posted < limit &&
	       n < TR_BATCH) {
		uint32_t slot = (uint32_t)(f->req_posted % f->depth);
		struct ibv_send_wr *w = &wr[n];

		memset(w, 0, sizeof(*w));
		w->wr_id = TR_WRID(fi, TR_KIND_REQ, slot);
		w->sg_list = &f->sge;
		w->num_sge = 1;
		w->opcode = od->wr;
		w->send_flags = IBV_SEND_SIGNALED;
		if (od->flags & CON_OPF_IMM)
			w->imm_data = htobe32((uint32_t)f->req_posted);
		if (od->flags & CON_OPF_ATOMIC) {
			w->wr.atomic.remote_addr = f->raddr;
			w->wr.atomic.rkey = f->rkey;
			w->wr.atomic.compare_add = f->op == CON_OP_FAA ? 1 : 0;
			w->wr.atomic.swap = 0;
		} else if (od->flags & CON_OPF_REMOTE) {
			w->wr.rdma.remote_addr = f->raddr;
			w->wr.rdma.rkey = f->rkey;
		}
		if (n)
			wr[n - 1].next = w;
		f->post_tsc[slot] = now;
		n++;
		f->req_posted++;
	}
	if (n) {
		int ret = ibv_post_send(f->sqp, wr, &bad);

		if (ret) {
			f->req_posted -= (uint64_t)(n - (bad - wr));
			flow_fail(f, "ibv_post_send", -ret);
		}
	}
}

static void on_wc(const struct ibv_wc *wc, struct con_cq *cq, uint64_t now)
{
	uint64_t id = wc->wr_id;
	struct tr_flow *f;
	int fi;

	if (id >> 56 != TR_WRID_MAGIC) {
		con_cq_stash(cq, wc);	/* not ours: "poll cq" shows it later */
		return;
	}
	fi = (int)((id >> 40) & 0xffff);
	if (fi >= TR_MAX_FLOWS)
		return;
	f = &tr.f[fi];
	if (wc->status != IBV_WC_SUCCESS) {
		ST(f->errors, f->errors + 1);
		if (f->state == TR_RUNNING || f->state == TR_DRAINING)
			flow_fail(f, ((id >> 32) & 0xff) == TR_KIND_RECV ? "receive" :
				  con_ops[f->op].verbs, wc->status);
		return;
	}
	if (((id >> 32) & 0xff) == TR_KIND_RECV) {
		f->recv_done++;
		ST(f->recvs, f->recvs + 1);
		if (f->op == CON_OP_RECV) {
			ST(f->ops, f->ops + 1);
			ST(f->bytes, f->bytes + wc->byte_len);
		}
		return;
	}
	{
		uint32_t slot = (uint32_t)id;
		uint64_t cyc = now - f->post_tsc[slot % f->depth];
		uint64_t ns = (uint64_t)((double)cyc * 1e9 / (double)g.tsc_hz);
		unsigned int h = hist_idx(ns);

		f->req_done++;
		ST(f->hist[h], f->hist[h] + 1);
		ST(f->ops, f->ops + 1);
		ST(f->bytes, f->bytes + f->size);
	}
}

static void poll_cq(struct con_cq *c)
{
	struct ibv_wc wc[64];
	int n = ibv_poll_cq(c->cq, 64, wc);
	uint64_t now = rte_rdtsc();

	for (int i = 0; i < n; i++)
		on_wc(&wc[i], c, now);
}

static void flow_iter(struct tr_flow *f, int fi)
{
	enum tr_state s = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
	bool recv = needs_recv(f);

	if (s != TR_RUNNING && s != TR_DRAINING)
		return;
	if (f->op == CON_OP_RECV) {
		if (s == TR_RUNNING)
			post_recvs(f, fi, f->recv_done + f->rq_cap);
		poll_cq(f->rcq);
		if (s == TR_DRAINING) {
			ST(f->tsc_end, rte_rdtsc());
			__atomic_store_n(&f->state, TR_STOPPED, __ATOMIC_RELEASE);
		}
		return;
	}
	if (recv && f->rqp) {
		/* never a send without a receive for it: no RNR */
		if (s == TR_RUNNING)
			post_recvs(f, fi, f->req_posted + 2ull * f->depth);
		post_reqs(f, fi, f->recv_posted + f->pre_recv);
	} else {
		post_reqs(f, fi, s == TR_RUNNING ? UINT64_MAX : f->req_posted);
	}
	poll_cq(f->scq);
	if (recv && f->rqp && f->rcq != f->scq)
		poll_cq(f->rcq);
	if (s == TR_DRAINING && f->req_done == f->req_posted &&
	    (!recv || !f->rqp || (f->req_posted >= f->recv_posted + f->pre_recv &&
				  f->recv_done == f->recv_posted))) {
		ST(f->tsc_end, rte_rdtsc());
		__atomic_store_n(&f->state, TR_STOPPED, __ATOMIC_RELEASE);
	}
}

static void tr_iter(void)
{
	for (int i = 0; i < TR_MAX_FLOWS; i++)
		flow_iter(&tr.f[i], i);
}

static int tr_worker(void *arg)
{
	(void)arg;
	while (!__atomic_load_n(&tr.worker_stop, __ATOMIC_ACQUIRE))
		tr_iter();
	return 0;
}

/* ------------------------------------------------------------ console */

void traffic_service(void)
{
	if (tr.on_main)
		tr_iter();
}

bool traffic_on_main(void)
{
	return tr.on_main;
}

static bool flow_live(const struct tr_flow *f)
{
	enum tr_state s = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);

	return s == TR_RUNNING || s == TR_DRAINING;
}

bool traffic_active(void)
{
	for (int i = 0; i < TR_MAX_FLOWS; i++)
		if (tr.f[i].post_tsc)
			return true;
	return false;
}

static void worker_stop(void)
{
	if (!tr.worker_running)
		return;
	__atomic_store_n(&tr.worker_stop, true, __ATOMIC_RELEASE);
	rte_eal_wait_lcore((unsigned int)tr.lcore);
	tr.worker_running = false;
}

static int worker_start(void)
{
	__atomic_store_n(&tr.worker_stop, false, __ATOMIC_RELEASE);
	if (rte_eal_remote_launch(tr_worker, NULL, (unsigned int)tr.lcore) != 0)
		return -1;
	tr.worker_running = true;
	return 0;
}

static bool lcore_free(unsigned int lc)
{
	if (lc == rte_get_main_lcore() || !rte_lcore_is_enabled(lc))
		return false;
	for (int i = 0; i < g.nb_devs; i++)
		if (g.devs[i].dev->args.lcore == (int)lc)
			return false;
	return tr.worker_running ? (int)lc == tr.lcore :
	       rte_eal_get_lcore_state(lc) == WAIT;
}

static int auto_lcore(void)
{
	unsigned int lc;

	RTE_LCORE_FOREACH_WORKER(lc)
		if (lcore_free(lc))
			return (int)lc;
	return -1;
}

static void result_line(const struct tr_flow *f, int i, char *buf, size_t len)
{
	bool live = flow_live(f);
	uint64_t end = live ? rte_rdtsc() : LD(f->tsc_end);
	double el = (double)(end - f->tsc_start) / (double)g.tsc_hz;

	snprintf(buf, len, "traffic flow %d: qp %d %s %u B x depth %u: %" PRIu64 " ops in %.2f s = %.0f msg/s, "
		 "%.3f Gbit/s; latency p50 %.2f us, p99 %.2f us, p99.9 %.2f us; %" PRIu64 " errors%s%s%s",
		 i, f->qp, con_ops[f->op].name, f->size, f->depth, LD(f->ops), el,
		 el > 0 ? (double)LD(f->ops) / el : 0,
		 el > 0 ? (double)LD(f->bytes) * 8 / el / 1e9 : 0, hist_pct(f, 0.5) / 1e3,
		 hist_pct(f, 0.99) / 1e3, hist_pct(f, 0.999) / 1e3, LD(f->errors),
		 live ? " (running)" : "", f->state == TR_FAILED ? "; FAILED: " : "",
		 f->state == TR_FAILED ? f->err : "");
}

static void flow_release(struct tr_flow *f)
{
	if (tr.nb_results < (int)RTE_DIM(tr.results))
		result_line(f, (int)(f - tr.f), tr.results[tr.nb_results++],
			    sizeof(tr.results[0]));
	tr.failed_results += f->state == TR_FAILED;
	g.qps[f->qp].busy--;
	f->scq->busy--;
	if (f->rcq && f->rcq != f->scq)
		f->rcq->busy--;
	if (f->peer >= 0)
		g.qps[f->peer].busy--;
	rte_free(f->post_tsc);
	f->post_tsc = NULL;
	f->has_results = true;
}

static int lowest_mr(int pd, uint64_t min_len)
{
	for (int i = 0; i < CON_MAX_MR; i++)
		if (g.mrs[i].used && g.mrs[i].pd == pd && g.mrs[i].len >= min_len)
			return i;
	return -1;
}

/* traffic start <qp>[,<qp>...] <op> [size] [depth] [mr] [rmr] [roff] [raddr rkey] [lcore] */
static int traffic_start(int argc, char **argv)
{
	const char *cmd = "traffic start";
	uint64_t size = 4096, depth = 16, roff = 0, raddr = 0, rkey = 0;
	const char *mr_s = NULL, *rmr_s = NULL, *lcore_s = NULL;
	bool raddr_set = false, rkey_set = false;
	struct con_opt o[] = {
		{ "size", OPT_SIZE, &size, NULL, 1u << 30 },
		{ "depth", OPT_U64, &depth, NULL, 4096 },
		{ "mr", OPT_STR, &mr_s, NULL, 0 },
		{ "rmr", OPT_STR, &rmr_s, NULL, 0 },
		{ "roff", OPT_SIZE, &roff, NULL, 0 },
		{ "raddr", OPT_U64, &raddr, &raddr_set, 0 },
		{ "rkey", OPT_U64, &rkey, &rkey_set, UINT32_MAX },
		{ "lcore", OPT_STR, &lcore_s, NULL, 0 },
		{ NULL, 0, NULL, NULL, 0 },
	};
	int qids[TR_MAX_FLOWS], nq = 0, op, lcore;
	char tmp[256], *save = NULL;
	static struct tr_flow nf[TR_MAX_FLOWS];
	int slots[TR_MAX_FLOWS];

	if (argc < 2)
		return con_err("traffic start: usage: traffic start <qp>[,<qp>...] write|read|send|send_imm|write_imm|cas|faa|recv "
			       "[size <n>] [depth <n>] [mr <mr>] [rmr <mr>] [roff <o>] [raddr <a> rkey <k>] [lcore <n>|main]");
	op = con_op_by_name(argv[1]);
	if (op < 0 || (op != CON_OP_RECV && (con_ops[op].flags & CON_OPF_NOTRAFFIC)))
		return con_err("traffic start: %s operation '%s' (write read send send_imm write_imm cas faa recv)",
			       op < 0 ? "unknown" : "not a traffic", argv[1]);
	if (con_opts(cmd, argc - 2, argv + 2, o))
		return -1;
	if (raddr_set != rkey_set)
		return con_err("traffic start: raddr and rkey go together");
	if (con_ops[op].flags & CON_OPF_ATOMIC)
		size = 8;
	if (size == 0 || depth == 0)
		return con_err("traffic start: size and depth must be at least 1");
	snprintf(tmp, sizeof(tmp), "%s", argv[0]);
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		int id;

		if (nq >= TR_MAX_FLOWS)
			return con_err("traffic start: at most %d flows", TR_MAX_FLOWS);
		if (con_get_qp(cmd, t, &id) == NULL)
			return -1;
		for (int k = 0; k < nq; k++)
			if (qids[k] == id)
				return con_err("traffic start: qp %d listed twice", id);
		qids[nq++] = id;
	}
	/* Where: a free worker lcore, else main. */
	if (lcore_s == NULL) {
		lcore = tr.worker_running ? tr.lcore : (tr.on_main ? -1 : auto_lcore());
	} else if (strcmp(lcore_s, "main") == 0) {
		lcore = -1;
	} else {
		uint64_t v;

		if (con_arg_u64(cmd, "lcore", lcore_s, &v, RTE_MAX_LCORE - 1))
			return -1;
		lcore = (int)v;
		if (!lcore_free((unsigned int)v))
			return con_err("traffic start: lcore %d is not a free worker lcore (see 'show engines')",
				       lcore);
	}
	if (traffic_active() && lcore != (tr.worker_running ? tr.lcore : -1))
		return con_err("traffic start: traffic already runs on %s; all flows share one polling loop",
			       tr.worker_running ? "a worker lcore" : "the main lcore");

	/* Validate every flow before starting any. */

	for (int k = 0; k < nq; k++) {
		struct con_qp *q = &g.qps[qids[k]];
		struct tr_flow *f = &nf[k];
		int mi, rmi = -1, s = -1;
		enum ibv_qp_state st = droce_qp_of(q->qp)->state;

		memset(f, 0, sizeof(*f));
		f->qp = qids[k];
		f->peer = -1;
		f->op = op;
		f->size = (uint32_t)size;
		f->depth = (uint32_t)depth;
		f->sqp = q->qp;
		if (q->busy)
			return con_err("traffic start: qp %d is already in use by traffic", qids[k]);
		if (q->type == IBV_QPT_UD)
			return con_err("traffic start: qp %d is UD: traffic runs on connected (RC, UC) QPs",
				       qids[k]);
		if (op != CON_OP_RECV && q->type == IBV_QPT_UC && !(con_ops[op].flags & CON_OPF_UC))
			return con_err("traffic start: qp %d is UC: %s needs an RC QP (UC: write, send, send_imm, write_imm)",
				       qids[k], con_ops[op].verbs);
		if (op == CON_OP_RECV && q->srq >= 0)
			return con_err("traffic start: qp %d takes its receives from srq %d: a receive sink "
				       "feeds a QP's own queue", qids[k], q->srq);
		if (op != CON_OP_RECV && st != IBV_QPS_RTS)
			return con_err("traffic start: qp %d is %s, not RTS (connect it first)", qids[k],
				       con_qp_state_str(st));
		if (op == CON_OP_RECV && (st < IBV_QPS_INIT || st > IBV_QPS_RTS))
			return con_err("traffic start: qp %d is %s: receives need INIT, RTR or RTS", qids[k],
				       con_qp_state_str(st));
		if (op != CON_OP_RECV && depth > (uint64_t)g.cqs[q->scq].size / 2)
			return con_err("traffic start: depth %" PRIu64 " is more than half of cq %d (%d entries)",
				       depth, q->scq, g.cqs[q->scq].size);
		if (depth > droce_qp_of(q->qp)->sq_max_wr && op != CON_OP_RECV)
			return con_err("traffic start: depth %" PRIu64 " exceeds qp %d's send queue (%u)",
				       depth, qids[k], droce_qp_of(q->qp)->sq_max_wr);
		if (mr_s) {
			if (con_get_mr(cmd, mr_s, &mi) == NULL)
				return -1;
			if (g.mrs[mi].pd != q->pd)
				return con_err("traffic start: mr %d is not on qp %d's pd %d", mi, qids[k], q->pd);
			if (g.mrs[mi].len < size)
				return con_err("traffic start: mr %d (%" PRIu64 " B) is smaller than size %" PRIu64,
					       mi, g.mrs[mi].len, size);
		} else if ((mi = lowest_mr(q->pd, size)) < 0) {
			return con_err("traffic start: qp %d's pd %d has no MR of %" PRIu64 " bytes or more",
				       qids[k], q->pd, size);
		}
		f->sge.addr = (uint64_t)(uintptr_t)g.mrs[mi].buf;
		f->sge.length = (uint32_t)size;
		f->sge.lkey = g.mrs[mi].mr->lkey;
		f->scq = &g.cqs[q->scq];
		if (op == CON_OP_RECV) {
			f->rqp = q->qp;
			f->rcq = &g.cqs[q->rcq];
			f->rsge = f->sge;
			f->rq_cap = RTE_MIN((uint32_t)depth * 2, con_qp_cap(q->qp).max_recv_wr);
			f->rq_cap = RTE_MIN(f->rq_cap, (uint32_t)f->rcq->size / 2);
			goto ok;
		}
		if (q->peer >= 0 && g.qps[q->peer].used) {
			f->peer = q->peer;
			if (g.qps[f->peer].busy)
				return con_err("traffic start: qp %d's peer qp %d is in use by traffic", qids[k],
					       f->peer);
		}
		if ((con_ops[op].flags & CON_OPF_REMOTE) || (con_ops[op].flags & CON_OPF_RECV)) {
			if (raddr_set) {
				f->raddr = raddr;
				f->rkey = (uint32_t)rkey;
			} else {
				if (rmr_s) {
					if (con_get_mr(cmd, rmr_s, &rmi) == NULL)
						return -1;
				} else if (f->peer >= 0) {
					rmi = lowest_mr(g.qps[f->peer].pd, size + roff);
				}
				if (rmi < 0 && (con_ops[op].flags & CON_OPF_REMOTE))
					return con_err("traffic start: qp %d: give rmr <mr> or raddr/rkey (no MR of %" PRIu64
						       " B on the peer's pd)", qids[k], size + roff);
				if (rmi >= 0) {
					if (roff + size > g.mrs[rmi].len)
						return con_err("traffic start: rmr %d (%" PRIu64 " B) is too small for %"
							       PRIu64 " B at +%" PRIu64, rmi, g.mrs[rmi].len, size, roff);
					f->raddr = (uint64_t)(uintptr_t)g.mrs[rmi].buf + roff;
					f->rkey = g.mrs[rmi].mr->rkey;
				}
			}
		}
		if (con_ops[op].flags & CON_OPF_RECV) {
			if (f->peer < 0)
				return con_err("traffic start: %s needs receives at the other end: with a remote peer, "
					       "run 'traffic start <qp> recv size %" PRIu64 "' there and use write/read here",
					       con_ops[op].verbs, size);
			if (rmi < 0)
				return con_err("traffic start: the peer qp %d has no MR of %" PRIu64 " B for receives",
					       f->peer, size);
			if (g.qps[f->peer].srq >= 0)
				return con_err("traffic start: the peer qp %d takes its receives from srq %d: "
					       "traffic feeds a QP's own receive queue (use write or read here)",
					       f->peer, g.qps[f->peer].srq);
			f->rqp = g.qps[f->peer].qp;
			f->rcq = &g.cqs[g.qps[f->peer].rcq];
			f->rsge.addr = (uint64_t)(uintptr_t)g.mrs[rmi].buf;
			f->rsge.length = (uint32_t)size;
			f->rsge.lkey = g.mrs[rmi].mr->lkey;
			/* Receives someone posted before: our first sends land
			 * there (their completions stay for 'poll cq'). */
			f->pre_recv = con_rq_pending(droce_qp_of(f->rqp));
			if (f->pre_recv >= con_qp_cap(f->rqp).max_recv_wr)
				return con_err("traffic start: the peer qp %d's receive queue is full of receives posted before",
					       f->peer);
			/* room in the receive queue, and in its CQ */
			f->rq_cap = RTE_MIN(con_qp_cap(f->rqp).max_recv_wr - (uint32_t)f->pre_recv,
					    (uint32_t)f->rcq->size / 2);
		}
		if ((op == CON_OP_CAS || op == CON_OP_FAA) && (f->raddr & 7))
			return con_err("traffic start: atomics need an 8-byte aligned remote address");
ok:
		for (s = 0; s < TR_MAX_FLOWS; s++) {
			bool taken = tr.f[s].post_tsc != NULL;

			for (int j = 0; j < k; j++)
				taken |= slots[j] == s;
			if (!taken)
				break;
		}
		if (s == TR_MAX_FLOWS)
			return con_err("traffic start: at most %d flows at a time", TR_MAX_FLOWS);
		slots[k] = s;
	}
	/* The loop stops while flows are added, then resumes. */
	worker_stop();
	for (int k = 0; k < nq; k++) {
		struct tr_flow *f = &tr.f[slots[k]];

		*f = nf[k];
		f->post_tsc = rte_zmalloc("droce_console_tr", sizeof(uint64_t) * f->depth, 0);
		if (f->post_tsc == NULL) {
			f->state = TR_IDLE;
			con_err("traffic start: out of memory");
			break;
		}
		g.qps[f->qp].busy++;
		f->scq->busy++;
		if (f->rcq && f->rcq != f->scq)
			f->rcq->busy++;
		if (f->peer >= 0)
			g.qps[f->peer].busy++;
		f->tsc_start = f->last_tsc = rte_rdtsc();
		f->state = TR_RUNNING;
		printf("traffic flow %d: qp %d %s size %u depth %u", slots[k], f->qp,
		       con_ops[op].name, f->size, f->depth);
		if (f->peer >= 0)
			printf(", local peer qp %d", f->peer);
		printf("\n");
		if (f->pre_recv)
			printf("  note: qp %d had %" PRIu64 " receive%s posted already: the first %s land there "
			       "(their completions stay on cq %d for 'poll cq')\n", f->peer, f->pre_recv,
			       f->pre_recv == 1 ? "" : "s", con_ops[op].verbs, g.qps[f->peer].rcq);
	}
	if (lcore >= 0) {
		tr.lcore = lcore;
		tr.on_main = false;
		if (worker_start())
			return con_err("traffic start: cannot launch on lcore %d", lcore);
		printf("traffic runs on worker lcore %d ('traffic show' for rates)\n", lcore);
	} else {
		tr.on_main = true;
		printf("traffic runs on the main lcore between commands and during waits "
		       "('traffic show' for rates, 'sleep <ms>' or 'traffic watch <s>' to let it run)\n");
	}
	return 0;
}

static void show_flow(int i, bool header, uint64_t now)
{
	struct tr_flow *f = &tr.f[i];
	enum tr_state s = __atomic_load_n(&f->state, __ATOMIC_ACQUIRE);
	uint64_t ops = LD(f->ops), bytes = LD(f->bytes);
	uint64_t end = (s == TR_RUNNING || s == TR_DRAINING) ? now : LD(f->tsc_end);
	double el = (double)(end - f->tsc_start) / (double)g.tsc_hz;
	double iv = (double)(now - f->last_tsc) / (double)g.tsc_hz;
	static const char *const sn[] = { "idle", "running", "draining", "stopped", "FAILED" };

	if (header)
		printf("%-4s %-4s %-9s %7s %5s %-8s %8s %11s %11s %9s %9s %8s %8s %8s %6s\n", "flow", "qp", "op",
		       "size", "depth", "state", "time-s", "ops", "now-msg/s", "now-Gb/s", "avg-Gb/s",
		       "p50-us", "p99-us", "p99.9-us", "errors");
	printf("%-4d %-4d %-9s %7u %5u %-8s %8.2f %11" PRIu64 " %11.0f %9.3f %9.3f %8.2f %8.2f %8.2f %6" PRIu64 "\n",
	       i, f->qp, con_ops[f->op].name, f->size, f->depth, sn[s], el, ops,
	       iv > 0 && (s == TR_RUNNING) ? (double)(ops - f->last_ops) / iv : 0,
	       iv > 0 && (s == TR_RUNNING) ? (double)(bytes - f->last_bytes) * 8 / iv / 1e9 : 0,
	       el > 0 ? (double)bytes * 8 / el / 1e9 : 0, hist_pct(f, 0.50) / 1e3,
	       hist_pct(f, 0.99) / 1e3, hist_pct(f, 0.999) / 1e3, LD(f->errors));
	if (s == TR_FAILED)
		printf("     flow %d failed: %s%s\n", i, f->err,
		       droce_qp_of(g.qps[f->qp].qp)->state == IBV_QPS_ERR ?
		       " (qp in error: modify qp <id> reset, then connect again)" : "");
	f->last_ops = ops;
	f->last_bytes = bytes;
	f->last_tsc = now;
}

static int traffic_show(int argc, char **argv)
{
	uint64_t now = rte_rdtsc();
	bool header = true;

	(void)argv;
	if (argc)
		return con_err("traffic show takes no arguments");
	for (int i = 0; i < TR_MAX_FLOWS; i++)
		if (tr.f[i].post_tsc || tr.f[i].has_results) {
			show_flow(i, header, now);
			header = false;
		}
	if (header) {
		printf("no traffic (traffic start <qp> <op> ...)\n");
		return 0;
	}
	printf("(now: since the previous show; avg and latency percentiles: since start; %s)\n",
	       tr.worker_running ? "polling on a worker lcore" :
	       tr.on_main ? "polling on the main lcore" : "stopped");
	return 0;
}

static bool tick(void *arg)
{
	uint64_t *deadline = arg;

	return con_now_us() >= *deadline;
}

static int traffic_watch(int argc, char **argv)
{
	uint64_t secs = 5;
	int ret = 0;

	if (argc > 1)
		return con_err("traffic watch: usage: traffic watch [<seconds>]");
	if (argc == 1 && con_arg_u64("traffic watch", "seconds", argv[0], &secs, 3600))
		return -1;
	if (!traffic_active())
		return con_err("traffic watch: no traffic running");
	for (uint64_t s = 0; s < secs; s++) {
		uint64_t deadline = con_now_us() + 1000000;
		uint64_t now;
		bool header = s == 0;

		ret = con_wait(0, tick, &deadline);
		if (ret)
			break;
		now = rte_rdtsc();
		for (int i = 0; i < TR_MAX_FLOWS; i++)
			if (tr.f[i].post_tsc) {
				show_flow(i, header, now);
				header = false;
			}
		fflush(stdout);
	}
	if (ret == -EINTR)
		printf("(interrupted)\n");
	return 0;
}

static bool all_settled(void *arg)
{
	bool *sel = arg;

	for (int i = 0; i < TR_MAX_FLOWS; i++)
		if (sel[i] && flow_live(&tr.f[i]))
			return false;
	return true;
}

static int stop_flows(bool *sel)
{
	bool was_worker = tr.worker_running, any = false;
	int ret, n = 0;

	for (int i = 0; i < TR_MAX_FLOWS; i++)
		if (sel[i] && tr.f[i].post_tsc)
			__atomic_compare_exchange_n(&tr.f[i].state, &(enum tr_state){ TR_RUNNING },
						    TR_DRAINING, false, __ATOMIC_ACQ_REL,
						    __ATOMIC_ACQUIRE);
	/* The polling loop (worker, or ours through con_wait) drains them. */
	ret = con_wait(3000000, all_settled, sel);
	worker_stop();
	if (ret) {
		for (int i = 0; i < TR_MAX_FLOWS; i++)
			if (sel[i] && flow_live(&tr.f[i])) {
				snprintf(tr.f[i].err, sizeof(tr.f[i].err),
					 "did not drain in time (%" PRIu64 " operations outstanding)",
					 tr.f[i].req_posted - tr.f[i].req_done);
				tr.f[i].tsc_end = rte_rdtsc();
				tr.f[i].state = TR_FAILED;
			}
	}
	for (int i = 0; i < TR_MAX_FLOWS; i++)
		if (sel[i] && tr.f[i].post_tsc) {
			struct tr_flow *f = &tr.f[i];

			if (f->op == CON_OP_RECV && f->recv_posted > f->recv_done)
				printf("traffic flow %d: qp %d keeps %" PRIu64 " receive WQEs posted by traffic "
				       "(they complete on cq %d when the remote end sends)\n", i, f->qp,
				       f->recv_posted - f->recv_done, g.qps[f->qp].rcq);
			flow_release(f);
			n++;
		}
	for (int i = 0; i < TR_MAX_FLOWS; i++)
		any |= tr.f[i].post_tsc != NULL;
	tr.on_main = false;
	if (any) {
		if (was_worker && worker_start() == 0)
			return n;
		tr.on_main = true;
	}
	return n;
}

static int traffic_stop(int argc, char **argv)
{
	bool sel[TR_MAX_FLOWS] = { false };
	int n;

	if (argc > 1)
		return con_err("traffic stop: usage: traffic stop [<qp>|all]");
	if (argc == 1 && strcmp(argv[0], "all") != 0) {
		int id;

		if (con_get_qp("traffic stop", argv[0], &id) == NULL)
			return -1;
		for (int i = 0; i < TR_MAX_FLOWS; i++)
			sel[i] = tr.f[i].post_tsc && tr.f[i].qp == id;
	} else {
		for (int i = 0; i < TR_MAX_FLOWS; i++)
			sel[i] = tr.f[i].post_tsc != NULL;
	}
	n = 0;
	for (int i = 0; i < TR_MAX_FLOWS; i++)
		n += sel[i];
	if (n == 0)
		return con_err("traffic stop: no traffic%s", argc ? " on that qp" : "");
	stop_flows(sel);
	{
		uint64_t now = rte_rdtsc();
		bool header = true;

		for (int i = 0; i < TR_MAX_FLOWS; i++)
			if (sel[i]) {
				tr.f[i].last_tsc = tr.f[i].tsc_start;
				tr.f[i].last_ops = 0;
				tr.f[i].last_bytes = 0;
				show_flow(i, header, now);
				header = false;
			}
	}
	for (int i = 0; i < TR_MAX_FLOWS; i++)
		if (sel[i] && tr.f[i].state == TR_FAILED)
			return con_err("traffic stop: flow %d had failed: %s", i, tr.f[i].err);
	return 0;
}

void traffic_stop_all(void)
{
	bool sel[TR_MAX_FLOWS];

	for (int i = 0; i < TR_MAX_FLOWS; i++)
		sel[i] = tr.f[i].post_tsc != NULL;
	stop_flows(sel);
}

int traffic_summary(void)
{
	int failed = tr.failed_results;
	char line[320];

	for (int i = 0; i < tr.nb_results; i++)
		printf("  %s\n", tr.results[i]);
	for (int i = 0; i < TR_MAX_FLOWS; i++) {
		struct tr_flow *f = &tr.f[i];

		if (!f->post_tsc)
			continue;
		result_line(f, i, line, sizeof(line));
		printf("  %s\n", line);
		failed += f->state == TR_FAILED;
	}
	return failed;
}

const struct con_cmd con_cmds_traffic[] = {
	{ "traffic", "traffic start", "<qp>[,<qp>...] write|read|send|send_imm|write_imm|cas|faa|recv [size <n>] [depth <n>] "
	  "[mr <mr>] [rmr <mr>] [roff <o>] [raddr <a> rkey <k>] [lcore <n>|main]",
	  "keep <depth> (default 16) operations of <size> (default 4096) in flight on each QP; sends feed the local "
	  "peer's receives; 'recv' is a receive sink for a remote sender. Runs on a free worker lcore, else on main", traffic_start },
	{ "traffic", "traffic stop", "[<qp>|all]", "stop (sends drain the peer's receives) and print the results", traffic_stop },
	{ "traffic", "traffic show", "", "rates now and on average, latency p50/p99/p99.9, errors", traffic_show },
	{ "traffic", "traffic watch", "[<seconds>]", "print the rates every second for a while (default 5 s; ^C stops)", traffic_watch },
	{ NULL, NULL, NULL, NULL, NULL },
};
