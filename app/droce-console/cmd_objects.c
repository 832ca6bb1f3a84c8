/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Objects: PDs, MRs (in hugepage memory from rte_zmalloc, filled with a
 * pattern), CQs and QPs (RC, UC, UD; with their own receive queue or an
 * SRQ); their creation, destruction and display, and the contents of MRs.
 * SRQs, address handles and memory windows have their own files; "destroy
 * all" and "show objects" cover them too.
 */
#include <ctype.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "console.h"

#define MR_MAX_SIZE	(1ull << 30)

int con_free_id(bool (*used)(int), int max)
{
	for (int i = 0; i < max; i++)
		if (!used(i))
			return i;
	return -1;
}

static bool pd_used(int i) { return g.pds[i].used; }
static bool mr_used(int i) { return g.mrs[i].used; }
static bool cq_used(int i) { return g.cqs[i].used; }
static bool qp_used(int i) { return g.qps[i].used; }

/* ---------------------------------------------------------------- PD */

static int create_pd(int argc, char **argv)
{
	int d, id;
	struct con_dev *dev;
	struct ibv_pd *pd;

	if (argc != 1)
		return con_err("create pd: usage: create pd <dev>");
	dev = con_get_dev("create pd", argv[0], &d);
	if (dev == NULL)
		return -1;
	id = con_free_id(pd_used, CON_MAX_PD);
	if (id < 0)
		return con_err("create pd: the console holds %d PDs at most", CON_MAX_PD);
	pd = ibv_alloc_pd(dev->ctx);
	if (pd == NULL)
		return con_err("create pd: ibv_alloc_pd: %s", strerror(errno));
	g.pds[id] = (struct con_pd){ .used = true, .dev = d, .pd = pd };
	printf("pd %d created on dev %d (%s), handle %u\n", id, d,
	       dev->dev->args.name, pd->handle);
	return 0;
}

/* ---------------------------------------------------------------- MR */

static int create_mr(int argc, char **argv)
{
	const char *cmd = "create mr";
	struct con_pattern pat = { .kind = 0 };
	unsigned int access = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
			      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
			      IBV_ACCESS_MW_BIND;
	uint64_t size;
	struct con_pd *pd;
	struct ibv_mr *mr;
	uint8_t *buf;
	int pdi, id, socket;
	char acc[64], fill[40];

	if (argc < 2)
		return con_err("create mr: usage: create mr <pd> <size> [access <lw,rw,rr,ra,mw|all|local|none>] [fill zero|inc|random <seed>|byte <x>]");
	pd = con_get_pd(cmd, argv[0], &pdi);
	if (pd == NULL)
		return -1;
	if (con_arg_size(cmd, "size", argv[1], &size, MR_MAX_SIZE))
		return -1;
	if (size == 0)
		return con_err("create mr: size must be at least 1 byte");
	for (int i = 2; i < argc; i++) {
		if (strcmp(argv[i], "access") == 0) {
			if (i + 1 >= argc || con_access_parse(argv[i + 1], &access))
				return con_err("create mr: access takes a comma list of lw,rw,rr,ra,mw, or all|local|none");
			i++;
		} else if (strcmp(argv[i], "fill") == 0) {
			int n = con_pattern_parse(cmd, argc - i - 1, argv + i + 1, &pat);

			if (n < 0)
				return -1;
			i += n;
		} else {
			return con_err("create mr: unknown option '%s' (access <flags>, fill <pattern>)",
				       argv[i]);
		}
	}
	id = con_free_id(mr_used, CON_MAX_MR);
	if (id < 0)
		return con_err("create mr: the console holds %d MRs at most", CON_MAX_MR);
	socket = rte_eth_dev_socket_id(g.devs[pd->dev].port);
	buf = rte_zmalloc_socket("droce_console_mr", size, 4096,
				 socket < 0 ? SOCKET_ID_ANY : socket);
	if (buf == NULL)
		return con_err("create mr: no hugepage memory for %" PRIu64 " bytes (rte_zmalloc)",
			       size);
	con_pattern_fill(&pat, buf, size, 0);
	mr = ibv_reg_mr(pd->pd, buf, size, (int)access);
	if (mr == NULL) {
		int e = errno;

		rte_free(buf);
		return con_err("create mr: ibv_reg_mr(access %s): %s",
			       con_access_str(access, acc, sizeof(acc)), strerror(e));
	}
	con_pattern_str(&pat, fill, sizeof(fill));
	g.mrs[id] = (struct con_mr){ .used = true, .pd = pdi, .mr = mr, .buf = buf,
				     .len = size, .access = access };
	snprintf(g.mrs[id].fill, sizeof(g.mrs[id].fill), "%s", fill);
	printf("mr %d created: pd %d (%s), %" PRIu64 " B at %p, lkey 0x%x rkey 0x%x, access %s, fill %s\n",
	       id, pdi, g.devs[pd->dev].dev->args.name, size, (void *)buf,
	       mr->lkey, mr->rkey, con_access_str(access, acc, sizeof(acc)), fill);
	return 0;
}

/* ---------------------------------------------------------------- CQ */

static int create_cq(int argc, char **argv)
{
	uint64_t size = 1024;
	struct con_dev *dev;
	struct ibv_cq *cq;
	int d, id;

	if (argc < 1 || argc > 2)
		return con_err("create cq: usage: create cq <dev> [<size>]");
	dev = con_get_dev("create cq", argv[0], &d);
	if (dev == NULL)
		return -1;
	if (argc == 2 && con_arg_size("create cq", "size", argv[1], &size, INT32_MAX))
		return -1;
	id = con_free_id(cq_used, CON_MAX_CQ);
	if (id < 0)
		return con_err("create cq: the console holds %d CQs at most", CON_MAX_CQ);
	cq = ibv_create_cq(dev->ctx, (int)size, NULL, NULL, 0);
	if (cq == NULL)
		return con_err("create cq: ibv_create_cq(%" PRIu64 "): %s", size,
			       strerror(errno));
	g.cqs[id] = (struct con_cq){ .used = true, .dev = d, .cq = cq,
				     .size = cq->cqe };
	g.cqs[id].stash = calloc(CON_STASH, sizeof(struct ibv_wc));
	if (g.cqs[id].stash == NULL) {
		ibv_destroy_cq(cq);
		g.cqs[id].used = false;
		return con_err("create cq: out of memory");
	}
	printf("cq %d created on dev %d (%s), %d entries\n", id, d,
	       dev->dev->args.name, cq->cqe);
	return 0;
}

/* ---------------------------------------------------------------- QP */

static uint32_t initial_psn(int dev, uint32_t qpn)
{
	uint32_t h = (qpn + 0x51u * (uint32_t)dev) * 0x9e3779b1u;

	return (h >> 8) & 0xffffff;
}

static int qp_type_by_name(const char *s)
{
	if (strcmp(s, "rc") == 0)
		return IBV_QPT_RC;
	if (strcmp(s, "uc") == 0)
		return IBV_QPT_UC;
	if (strcmp(s, "ud") == 0)
		return IBV_QPT_UD;
	return -1;
}

#define QP_USAGE "create qp <pd> <cq> [rcq <cq>] [type rc|uc|ud] [qkey <k>] [srq <srq>] [sq <n>] [rq <n>] " \
		 "[sge <n>] [rsge <n>] [inline <n>] [psn <n>] [sig_all]"

static int create_qp(int argc, char **argv)
{
	const char *cmd = "create qp";
	uint64_t sq = 256, rq = 256, sge = 4, rsge = 4, inl = 64, psn = 0;
	uint64_t qkey = 0x11111111;
	const char *type = "rc", *rcq_s = NULL, *srq_s = NULL;
	bool sig_all = false, psn_set = false, qkey_set = false, rq_set = false;
	bool rsge_set = false;
	struct con_opt o[] = {
		{ "rcq", OPT_STR, &rcq_s, NULL, 0 },
		{ "type", OPT_STR, &type, NULL, 0 },
		{ "qkey", OPT_U64, &qkey, &qkey_set, UINT32_MAX },
		{ "srq", OPT_STR, &srq_s, NULL, 0 },
		{ "sq", OPT_SIZE, &sq, NULL, DROCE_MAX_QP_WR },
		{ "rq", OPT_SIZE, &rq, &rq_set, DROCE_MAX_QP_WR },
		{ "sge", OPT_U64, &sge, NULL, 64 },
		{ "rsge", OPT_U64, &rsge, &rsge_set, 64 },
		{ "inline", OPT_SIZE, &inl, NULL, 65536 },
		{ "psn", OPT_U64, &psn, &psn_set, 0xffffff },
		{ "sig_all", OPT_FLAG, &sig_all, NULL, 0 },
		{ NULL, 0, NULL, NULL, 0 },
	};
	struct ibv_qp_init_attr ia;
	struct con_pd *pd;
	struct con_cq *scq, *rcq;
	struct con_srq *srq = NULL;
	struct ibv_qp *qp;
	int pdi, scqi, rcqi, id, t, srqi = -1;
	char extra[64] = "";

	if (argc < 2)
		return con_err("create qp: usage: " QP_USAGE);
	pd = con_get_pd(cmd, argv[0], &pdi);
	if (pd == NULL)
		return -1;
	scq = con_get_cq(cmd, argv[1], &scqi);
	if (scq == NULL)
		return -1;
	if (con_opts(cmd, argc - 2, argv + 2, o))
		return -1;
	rcqi = scqi;
	rcq = scq;
	if (rcq_s && (rcq = con_get_cq(cmd, rcq_s, &rcqi)) == NULL)
		return -1;
	if (scq->dev != pd->dev || rcq->dev != pd->dev)
		return con_err("create qp: pd %d is on dev %d but cq %d is on dev %d: all must be on one device",
			       pdi, pd->dev, scq->dev != pd->dev ? scqi : rcqi,
			       scq->dev != pd->dev ? scq->dev : rcq->dev);
	t = qp_type_by_name(type);
	if (t < 0)
		return con_err("create qp: type must be rc, uc or ud, not '%s'", type);
	if (qkey_set && t != IBV_QPT_UD)
		return con_err("create qp: qkey is for UD QPs (type ud)");
	if (srq_s) {
		srq = con_get_srq(cmd, srq_s, &srqi);
		if (srq == NULL)
			return -1;
		if (con_pd_dev(srq->pd) != pd->dev)
			return con_err("create qp: srq %d is on dev %d, pd %d on dev %d: one device",
				       srqi, con_pd_dev(srq->pd), pdi, pd->dev);
		if (rq_set || rsge_set)
			return con_err("create qp: with an SRQ the QP has no receive queue of its own (no rq/rsge)");
	}
	id = con_free_id(qp_used, CON_MAX_QP);
	if (id < 0)
		return con_err("create qp: the console holds %d QPs at most", CON_MAX_QP);
	memset(&ia, 0, sizeof(ia));
	ia.send_cq = scq->cq;
	ia.recv_cq = rcq->cq;
	ia.srq = srq ? srq->srq : NULL;
	ia.qp_type = (enum ibv_qp_type)t;
	ia.sq_sig_all = sig_all;
	ia.cap.max_send_wr = (uint32_t)sq;
	ia.cap.max_recv_wr = srq ? 0 : (uint32_t)rq;
	ia.cap.max_send_sge = (uint32_t)sge;
	ia.cap.max_recv_sge = srq ? 0 : (uint32_t)rsge;
	ia.cap.max_inline_data = (uint32_t)inl;
	qp = ibv_create_qp(pd->pd, &ia);
	if (qp == NULL) {
		int e = errno;

		return con_err("create qp: ibv_create_qp(%s, sq %" PRIu64 ", rq %" PRIu64
			       ", sge %" PRIu64 "/%" PRIu64 ", inline %" PRIu64 "): %s%s",
			       type, sq, rq, sge, rsge, inl, strerror(e),
			       e == EOPNOTSUPP ? " (droce supports RC, UC and UD QPs)" :
			       e == EINVAL ? " (limits: 16384 WRs, 16 SGEs, 512 B inline)" : "");
	}
	g.qps[id] = (struct con_qp){
		.used = true, .pd = pdi, .scq = scqi, .rcq = rcqi, .qp = qp,
		.srq = srqi, .type = (enum ibv_qp_type)t, .qkey = (uint32_t)qkey,
		.psn = psn_set ? (uint32_t)psn : initial_psn(pd->dev, qp->qp_num),
		.peer = -1,
	};
	if (t == IBV_QPT_UD)
		snprintf(extra, sizeof(extra), ", qkey 0x%08" PRIx64, qkey);
	if (srq)
		snprintf(extra + strlen(extra), sizeof(extra) - strlen(extra),
			 ", receives from srq %d", srqi);
	printf("qp %d created: QPN 0x%06x on dev %d (%s), %s, pd %d, send cq %d, recv cq %d,"
	       " caps sq %u rq %u sge %u/%u inline %u, psn 0x%06x%s, state RESET\n",
	       id, qp->qp_num, pd->dev, g.devs[pd->dev].dev->args.name,
	       con_qp_type_str((enum ibv_qp_type)t), pdi,
	       scqi, rcqi, ia.cap.max_send_wr, ia.cap.max_recv_wr,
	       ia.cap.max_send_sge, ia.cap.max_recv_sge, ia.cap.max_inline_data,
	       g.qps[id].psn, extra);
	return 0;
}

/* ------------------------------------------------------------ destroy */

static int destroy_qp_id(int id)
{
	struct con_qp *q = &g.qps[id];
	int ret;

	if (q->busy)
		return con_err("destroy qp: qp %d is running traffic (traffic stop first)", id);
	ret = ibv_destroy_qp(q->qp);
	if (ret)
		return con_err("destroy qp %d: ibv_destroy_qp: %s", id, strerror(ret));
	for (int i = 0; i < CON_MAX_QP; i++)
		if (g.qps[i].used && g.qps[i].peer == id)
			g.qps[i].peer = -1;
	q->used = false;
	printf("qp %d destroyed\n", id);
	return 0;
}

static int destroy_mr_id(int id)
{
	struct con_mr *m = &g.mrs[id];
	int ret;

	if (m->busy)
		return con_err("destroy mr: mr %d is used by traffic (traffic stop first)", id);
	ret = ibv_dereg_mr(m->mr);
	if (ret == EBUSY) {
		for (int i = 0; i < CON_MAX_MW; i++) {
			const struct droce_mr *w;

			if (!g.mws[i].used)
				continue;
			w = container_of(g.mws[i].mw, struct droce_mr, ibv_mw);
			if (__atomic_load_n(&w->valid, __ATOMIC_RELAXED) &&
			    __atomic_load_n(&w->parent, __ATOMIC_RELAXED) ==
			    container_of(m->mr, struct droce_mr, ibv))
				return con_err("destroy mr %d: mw %d is bound to it (invalidate it with "
					       "post local_inv, or destroy mw %d)", id, i, i);
		}
	}
	if (ret)
		return con_err("destroy mr %d: ibv_dereg_mr: %s", id, strerror(ret));
	rte_free(m->buf);
	m->used = false;
	printf("mr %d destroyed\n", id);
	return 0;
}

static int destroy_cq_id(int id)
{
	struct con_cq *c = &g.cqs[id];
	int ret;

	for (int i = 0; i < CON_MAX_QP; i++)
		if (g.qps[i].used && (g.qps[i].scq == id || g.qps[i].rcq == id))
			return con_err("destroy cq: cq %d is used by qp %d (destroy the QP first)",
				       id, i);
	ret = ibv_destroy_cq(c->cq);
	if (ret)
		return con_err("destroy cq %d: ibv_destroy_cq: %s", id, strerror(ret));
	free(c->stash);
	c->used = false;
	printf("cq %d destroyed\n", id);
	return 0;
}

static int destroy_pd_id(int id)
{
	int ret;

	for (int i = 0; i < CON_MAX_QP; i++)
		if (g.qps[i].used && g.qps[i].pd == id)
			return con_err("destroy pd: pd %d is used by qp %d (destroy it first)",
				       id, i);
	for (int i = 0; i < CON_MAX_MR; i++)
		if (g.mrs[i].used && g.mrs[i].pd == id)
			return con_err("destroy pd: pd %d is used by mr %d (destroy it first)",
				       id, i);
	for (int i = 0; i < CON_MAX_SRQ; i++)
		if (g.srqs[i].used && g.srqs[i].pd == id)
			return con_err("destroy pd: pd %d is used by srq %d (destroy it first)",
				       id, i);
	for (int i = 0; i < CON_MAX_AH; i++)
		if (g.ahs[i].used && g.ahs[i].pd == id)
			return con_err("destroy pd: pd %d is used by ah %d (destroy it first)",
				       id, i);
	for (int i = 0; i < CON_MAX_MW; i++)
		if (g.mws[i].used && g.mws[i].pd == id)
			return con_err("destroy pd: pd %d is used by mw %d (destroy it first)",
				       id, i);
	ret = ibv_dealloc_pd(g.pds[id].pd);
	if (ret)
		return con_err("destroy pd %d: ibv_dealloc_pd: %s", id, strerror(ret));
	g.pds[id].used = false;
	printf("pd %d destroyed\n", id);
	return 0;
}

#define DEF_DESTROY(kind) \
static int destroy_##kind(int argc, char **argv) \
{ \
	int id; \
	if (argc != 1) \
		return con_err("destroy " #kind ": usage: destroy " #kind " <id>"); \
	if (con_get_##kind("destroy " #kind, argv[0], &id) == NULL) \
		return -1; \
	return destroy_##kind##_id(id); \
}
DEF_DESTROY(qp)
DEF_DESTROY(mr)
DEF_DESTROY(cq)
DEF_DESTROY(pd)
#undef DEF_DESTROY

static int destroy_all(int argc, char **argv)
{
	int fails = 0, n = 0;

	(void)argv;
	if (argc)
		return con_err("destroy all takes no arguments");
	if (traffic_active())
		return con_err("destroy all: traffic is running (traffic stop first)");
	for (int i = 0; i < CON_MAX_QP; i++)
		if (g.qps[i].used) {
			fails += destroy_qp_id(i) != 0;
			n++;
		}
	for (int i = 0; i < CON_MAX_MW; i++)
		if (g.mws[i].used) {
			fails += mw_destroy_id(i) != 0;
			n++;
		}
	for (int i = 0; i < CON_MAX_AH; i++)
		if (g.ahs[i].used) {
			fails += ah_destroy_id(i) != 0;
			n++;
		}
	for (int i = 0; i < CON_MAX_SRQ; i++)
		if (g.srqs[i].used) {
			fails += srq_destroy_id(i) != 0;
			n++;
		}
	for (int i = 0; i < CON_MAX_MR; i++)
		if (g.mrs[i].used) {
			fails += destroy_mr_id(i) != 0;
			n++;
		}
	for (int i = 0; i < CON_MAX_CQ; i++)
		if (g.cqs[i].used) {
			fails += destroy_cq_id(i) != 0;
			n++;
		}
	for (int i = 0; i < CON_MAX_PD; i++)
		if (g.pds[i].used) {
			fails += destroy_pd_id(i) != 0;
			n++;
		}
	printf("destroyed %d object%s%s\n", n - fails, n - fails == 1 ? "" : "s",
	       fails ? " (some failed, see above)" : "");
	return fails ? -1 : 0;
}

void objects_destroy_all(void)
{
	for (int i = 0; i < CON_MAX_QP; i++)
		if (g.qps[i].used && ibv_destroy_qp(g.qps[i].qp) == 0)
			g.qps[i].used = false;
	for (int i = 0; i < CON_MAX_MW; i++)
		if (g.mws[i].used && ibv_dealloc_mw(g.mws[i].mw) == 0)
			g.mws[i].used = false;
	for (int i = 0; i < CON_MAX_AH; i++)
		if (g.ahs[i].used && ibv_destroy_ah(g.ahs[i].ah) == 0)
			g.ahs[i].used = false;
	for (int i = 0; i < CON_MAX_SRQ; i++)
		if (g.srqs[i].used && ibv_destroy_srq(g.srqs[i].srq) == 0)
			g.srqs[i].used = false;
	for (int i = 0; i < CON_MAX_MR; i++)
		if (g.mrs[i].used && ibv_dereg_mr(g.mrs[i].mr) == 0) {
			rte_free(g.mrs[i].buf);
			g.mrs[i].used = false;
		}
	for (int i = 0; i < CON_MAX_CQ; i++)
		if (g.cqs[i].used && ibv_destroy_cq(g.cqs[i].cq) == 0) {
			free(g.cqs[i].stash);
			g.cqs[i].used = false;
		}
	for (int i = 0; i < CON_MAX_PD; i++)
		if (g.pds[i].used && ibv_dealloc_pd(g.pds[i].pd) == 0)
			g.pds[i].used = false;
}

/* --------------------------------------------------------------- show */

static void print_pd(int i)
{
	const struct con_pd *p = &g.pds[i];
	int nmr = 0, nqp = 0;

	for (int k = 0; k < CON_MAX_MR; k++)
		nmr += g.mrs[k].used && g.mrs[k].pd == i;
	for (int k = 0; k < CON_MAX_QP; k++)
		nqp += g.qps[k].used && g.qps[k].pd == i;
	printf("pd %-3d dev %d (%s)  handle %u  mrs %d  qps %d\n", i, p->dev,
	       g.devs[p->dev].dev->args.name, p->pd->handle, nmr, nqp);
}

static void print_mr(int i)
{
	const struct con_mr *m = &g.mrs[i];
	char acc[64];

	printf("mr %-3d pd %d (%s)  %10" PRIu64 " B  addr 0x%" PRIx64 "  lkey 0x%x  rkey 0x%x  access %s  fill %s%s\n",
	       i, m->pd, g.devs[g.pds[m->pd].dev].dev->args.name, m->len,
	       (uint64_t)(uintptr_t)m->buf, m->mr->lkey, m->mr->rkey,
	       con_access_str(m->access, acc, sizeof(acc)), m->fill,
	       m->busy ? "  [traffic]" : "");
}

static void print_cq(int i)
{
	const struct con_cq *c = &g.cqs[i];
	const struct droce_cq *dc = droce_cq_of(c->cq);
	uint32_t pi = __atomic_load_n(&dc->pi, __ATOMIC_RELAXED);
	uint32_t ci = __atomic_load_n(&dc->ci, __ATOMIC_RELAXED);

	printf("cq %-3d dev %d (%s)  %d entries  unread %u  held back %u%s%s\n", i,
	       c->dev, g.devs[c->dev].dev->args.name, c->size, pi - ci,
	       c->st_len, __atomic_load_n(&dc->overrun, __ATOMIC_RELAXED) ?
	       "  OVERRUN" : "", c->busy ? "  [traffic]" : "");
}

void objects_print_qp_line(int i)
{
	const struct con_qp *q = &g.qps[i];
	const struct droce_qp *dq = droce_qp_of(q->qp);
	enum ibv_qp_state st = __atomic_load_n(&dq->state, __ATOMIC_ACQUIRE);
	char peer[96] = "not connected", srq[24] = "";

	if (q->type == IBV_QPT_UD && st == IBV_QPS_RESET)
		snprintf(peer, sizeof(peer), "qkey 0x%08x at init", q->qkey);
	else if (q->type == IBV_QPT_UD)
		snprintf(peer, sizeof(peer), "qkey 0x%08x",
			 __atomic_load_n(&dq->qkey, __ATOMIC_RELAXED));
	else if (q->peer >= 0)
		snprintf(peer, sizeof(peer), "peer qp %d (QPN 0x%06x)", q->peer,
			 g.qps[q->peer].used ? g.qps[q->peer].qp->qp_num : 0);
	else if (q->remote)
		snprintf(peer, sizeof(peer), "remote QPN 0x%06x", q->rqpn);
	if (q->srq >= 0)
		snprintf(srq, sizeof(srq), "  srq %d", q->srq);
	printf("qp %-3d QPN 0x%06x %s dev %d (%s)  %-5s pd %d  cq %d/%d%s  %s%s\n", i,
	       q->qp->qp_num, con_qp_type_str(q->type), con_qp_dev(q),
	       g.devs[con_qp_dev(q)].dev->args.name,
	       con_qp_state_str(st), q->pd, q->scq, q->rcq, srq, peer,
	       q->busy ? "  [traffic]" : "");
}

static int show_objects(int argc, char **argv)
{
	int n = 0;

	(void)argv;
	if (argc)
		return con_err("show objects takes no arguments");
	for (int i = 0; i < CON_MAX_PD; i++)
		if (g.pds[i].used) {
			print_pd(i);
			n++;
		}
	for (int i = 0; i < CON_MAX_MR; i++)
		if (g.mrs[i].used) {
			print_mr(i);
			n++;
		}
	for (int i = 0; i < CON_MAX_CQ; i++)
		if (g.cqs[i].used) {
			print_cq(i);
			n++;
		}
	for (int i = 0; i < CON_MAX_SRQ; i++)
		if (g.srqs[i].used) {
			srq_print(i);
			n++;
		}
	for (int i = 0; i < CON_MAX_QP; i++)
		if (g.qps[i].used) {
			objects_print_qp_line(i);
			n++;
		}
	for (int i = 0; i < CON_MAX_AH; i++)
		if (g.ahs[i].used) {
			ah_print(i);
			n++;
		}
	for (int i = 0; i < CON_MAX_MW; i++)
		if (g.mws[i].used) {
			mw_print(i);
			n++;
		}
	if (n == 0)
		printf("no objects (create pd <dev>, create mr ..., create cq ..., create qp ...)\n");
	return 0;
}

#define DEF_SHOW(kind, arr, max) \
static int show_##kind(int argc, char **argv) \
{ \
	int id, n = 0; \
	if (argc > 1) \
		return con_err("show " #kind ": usage: show " #kind " [<id>]"); \
	if (argc == 1) { \
		if (con_get_##kind("show " #kind, argv[0], &id) == NULL) \
			return -1; \
		print_##kind(id); \
		return 0; \
	} \
	for (int i = 0; i < max; i++) \
		if (g.arr[i].used) { \
			print_##kind(i); \
			n++; \
		} \
	if (n == 0) \
		printf("no " #kind "\n"); \
	return 0; \
}
DEF_SHOW(pd, pds, CON_MAX_PD)
DEF_SHOW(mr, mrs, CON_MAX_MR)
DEF_SHOW(cq, cqs, CON_MAX_CQ)
#undef DEF_SHOW

/* ----------------------------------------------------------- contents */

/* "[off <o>] [len <l>]" with defaults, checked against the MR. */
static int range_opts(const char *cmd, int argc, char **argv,
		      const struct con_mr *m, uint64_t *off, uint64_t *len,
		      uint64_t def_len)
{
	bool len_set = false;
	struct con_opt o[] = {
		{ "off", OPT_SIZE, off, NULL, 0 },
		{ "len", OPT_SIZE, len, &len_set, 0 },
		{ NULL, 0, NULL, NULL, 0 },
	};

	*off = 0;
	if (con_opts(cmd, argc, argv, o))
		return -1;
	if (*off > m->len)
		return con_err("%s: off %" PRIu64 " is past the end of the MR (%" PRIu64 " B)",
			       cmd, *off, m->len);
	if (!len_set)
		*len = RTE_MIN(def_len, m->len - *off);
	if (*len > m->len - *off)
		return con_err("%s: range %" PRIu64 "+%" PRIu64 " is past the end of the MR (%" PRIu64 " B)",
			       cmd, *off, *len, m->len);
	return 0;
}

static int mr_fill(int argc, char **argv)
{
	const char *cmd = "mr fill";
	struct con_pattern pat;
	struct con_mr *m;
	uint64_t off, len;
	int n, id;
	char ps[40];

	if (argc < 2)
		return con_err("mr fill: usage: mr fill <mr> zero|inc|random <seed>|byte <x> [off <o>] [len <l>]");
	m = con_get_mr(cmd, argv[0], &id);
	if (m == NULL)
		return -1;
	n = con_pattern_parse(cmd, argc - 1, argv + 1, &pat);
	if (n < 0)
		return -1;
	if (range_opts(cmd, argc - 1 - n, argv + 1 + n, m, &off, &len, UINT64_MAX))
		return -1;
	con_pattern_fill(&pat, m->buf + off, len, 0);
	con_pattern_str(&pat, ps, sizeof(ps));
	if (off == 0 && len == m->len)
		snprintf(m->fill, sizeof(m->fill), "%s", ps);
	else
		snprintf(m->fill, sizeof(m->fill), "mixed");
	printf("mr %d: %" PRIu64 " B at +%" PRIu64 " filled with %s\n", id, len, off, ps);
	return 0;
}

static int mr_dump(int argc, char **argv)
{
	const char *cmd = "mr dump";
	struct con_mr *m;
	uint64_t off, len;
	int id;

	if (argc < 1)
		return con_err("mr dump: usage: mr dump <mr> [off <o>] [len <l>] (len at most 4096)");
	m = con_get_mr(cmd, argv[0], &id);
	if (m == NULL)
		return -1;
	if (range_opts(cmd, argc - 1, argv + 1, m, &off, &len, 64))
		return -1;
	if (len > 4096)
		return con_err("mr dump: at most 4096 bytes at a time");
	for (uint64_t i = 0; i < len; i += 16) {
		printf("mr %d +%06" PRIx64 ":", id, off + i);
		for (uint64_t k = 0; k < 16; k++)
			if (i + k < len)
				printf(" %02x", m->buf[off + i + k]);
			else
				printf("   ");
		printf("  ");
		for (uint64_t k = 0; k < 16 && i + k < len; k++)
			putchar(isprint(m->buf[off + i + k]) ? m->buf[off + i + k] : '.');
		printf("\n");
	}
	return 0;
}

static int width_opt(const char *cmd, int argc, char **argv, uint64_t *w)
{
	struct con_opt o[] = {
		{ "size", OPT_U64, w, NULL, 8 },
		{ NULL, 0, NULL, NULL, 0 },
	};

	*w = 8;
	if (con_opts(cmd, argc, argv, o))
		return -1;
	if (*w != 1 && *w != 2 && *w != 4 && *w != 8)
		return con_err("%s: size must be 1, 2, 4 or 8", cmd);
	return 0;
}

static int mr_set(int argc, char **argv)
{
	const char *cmd = "mr set";
	struct con_mr *m;
	uint64_t off, v, w;
	int id;

	if (argc < 3)
		return con_err("mr set: usage: mr set <mr> <off> <value> [size 1|2|4|8] (host byte order)");
	m = con_get_mr(cmd, argv[0], &id);
	if (m == NULL || con_arg_size(cmd, "off", argv[1], &off, 0) ||
	    con_arg_u64(cmd, "value", argv[2], &v, 0) ||
	    width_opt(cmd, argc - 3, argv + 3, &w))
		return -1;
	if (off > m->len || w > m->len - off)
		return con_err("mr set: %" PRIu64 " B at +%" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
			       w, off, id, m->len);
	if (w < 8 && v >> (8 * w))
		return con_err("mr set: %" PRIu64 " does not fit in %" PRIu64 " byte%s", v, w,
			       w == 1 ? "" : "s");
	switch (w) {
	case 1: { uint8_t x = (uint8_t)v; memcpy(m->buf + off, &x, 1); break; }
	case 2: { uint16_t x = (uint16_t)v; memcpy(m->buf + off, &x, 2); break; }
	case 4: { uint32_t x = (uint32_t)v; memcpy(m->buf + off, &x, 4); break; }
	default: memcpy(m->buf + off, &v, 8);
	}
	snprintf(m->fill, sizeof(m->fill), "mixed");
	printf("mr %d +%" PRIu64 ": %" PRIu64 " (0x%" PRIx64 "), %" PRIu64 " B\n", id, off,
	       v, v, w);
	return 0;
}

static int mr_get(int argc, char **argv)
{
	const char *cmd = "mr get";
	struct con_mr *m;
	uint64_t off, w, v = 0;
	int id;

	if (argc < 2)
		return con_err("mr get: usage: mr get <mr> <off> [size 1|2|4|8] (host byte order)");
	m = con_get_mr(cmd, argv[0], &id);
	if (m == NULL || con_arg_size(cmd, "off", argv[1], &off, 0) ||
	    width_opt(cmd, argc - 2, argv + 2, &w))
		return -1;
	if (off > m->len || w > m->len - off)
		return con_err("mr get: %" PRIu64 " B at +%" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
			       w, off, id, m->len);
	switch (w) {
	case 1: { uint8_t x; memcpy(&x, m->buf + off, 1); v = x; break; }
	case 2: { uint16_t x; memcpy(&x, m->buf + off, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, m->buf + off, 4); v = x; break; }
	default: memcpy(&v, m->buf + off, 8);
	}
	printf("mr %d +%" PRIu64 ": %" PRIu64 " (0x%" PRIx64 ")\n", id, off, v, v);
	return 0;
}

const struct con_cmd con_cmds_objects[] = {
	{ "objects", "create pd", "<dev>", "allocate a protection domain on a device", create_pd },
	{ "objects", "create mr", "<pd> <size> [access <lw,rw,rr,ra,mw|all|local|none>] [fill zero|inc|random <seed>|byte <x>]",
	  "register hugepage memory (rte_zmalloc) filled with a pattern; default access all (mw: windows may be bound), fill zero", create_mr },
	{ "objects", "create cq", "<dev> [<size>]", "completion queue (default 1024 entries)", create_cq },
	{ "objects", "create qp", "<pd> <cq> [rcq <cq>] [type rc|uc|ud] [qkey <k>] [srq <srq>] [sq <n>] [rq <n>] [sge <n>] [rsge <n>] [inline <n>] [psn <n>] [sig_all]",
	  "queue pair (default RC, sq/rq 256, 4 SGEs, 64 B inline; the recv CQ defaults to <cq>). UD: qkey (default 0x11111111) "
	  "is what 'modify qp <id> init' sets. srq: receives come from that SRQ", create_qp },
	{ "objects", "destroy pd", "<id>", "deallocate a PD (no MR or QP may use it)", destroy_pd },
	{ "objects", "destroy mr", "<id>", "deregister an MR and free its memory", destroy_mr },
	{ "objects", "destroy cq", "<id>", "destroy a CQ (no QP may use it)", destroy_cq },
	{ "objects", "destroy qp", "<id>", "destroy a QP", destroy_qp },
	{ "objects", "destroy all", "", "destroy every object (QPs, MWs, AHs, SRQs, MRs, CQs, PDs)", destroy_all },
	{ "objects", "show objects", "", "every object with its state", show_objects },
	{ "objects", "show pd", "[<id>]", "PDs", show_pd },
	{ "objects", "show mr", "[<id>]", "MRs: address, length, keys, access, fill", show_mr },
	{ "objects", "show cq", "[<id>]", "CQs: size, completions not read yet", show_cq },
	{ "objects", "mr fill", "<mr> zero|inc|random <seed>|byte <x> [off <o>] [len <l>]", "fill (part of) an MR with a pattern", mr_fill },
	{ "objects", "mr dump", "<mr> [off <o>] [len <l>]", "hex dump (default 64 bytes)", mr_dump },
	{ "objects", "mr set", "<mr> <off> <value> [size 1|2|4|8]", "store a number (host order; e.g. an atomic's target)", mr_set },
	{ "objects", "mr get", "<mr> <off> [size 1|2|4|8]", "read a number (host order)", mr_get },
	{ NULL, NULL, NULL, NULL, NULL },
};
