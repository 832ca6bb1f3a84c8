/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting work requests (send, send_imm, send_inv, write, write_imm, read,
 * cas, faa, bind_mw, local_inv; recv) and polling completions. An operation
 * is a row of con_ops[]; its flags say what it needs (a remote address, an
 * immediate, atomic operands, a receive at the peer, a window, a key to
 * invalidate) and which transports carry it. UD sends are addressed with
 * an AH, a QPN and a Q_Key; the QP's type decides which operations it may
 * post.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "console.h"

#define POST_MAX_SGE	DROCE_MAX_SGE
#define POST_MAX_COUNT	1000000
#define POST_CHUNK	1024

static int lowest_mr_on_pd(int pd)
{
	for (int i = 0; i < CON_MAX_MR; i++)
		if (g.mrs[i].used && g.mrs[i].pd == pd)
			return i;
	return -1;
}

/* "mr:off:len[,mr:off:len...]" */
static int parse_sges(const char *cmd, const char *s, struct ibv_sge *sge,
		      int *n, bool check, uint64_t *total)
{
	char tmp[1024], *save = NULL;

	if (strlen(s) >= sizeof(tmp))
		return con_err("%s: sge list too long", cmd);
	strcpy(tmp, s);
	*n = 0;
	*total = 0;
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		char *a = t, *b = strchr(a, ':'), *c;
		uint64_t off, len;
		struct con_mr *m;
		int id;

		if (b == NULL || (c = strchr(b + 1, ':')) == NULL)
			return con_err("%s: sge '%s' is not <mr>:<off>:<len>", cmd, t);
		*b++ = '\0';
		*c++ = '\0';
		if (*n >= POST_MAX_SGE)
			return con_err("%s: at most %d SGEs", cmd, POST_MAX_SGE);
		m = con_get_mr(cmd, a, &id);
		if (m == NULL || con_arg_size(cmd, "sge offset", b, &off, 0) ||
		    con_arg_size(cmd, "sge length", c, &len, UINT32_MAX))
			return -1;
		if (check && (off > m->len || len > m->len - off))
			return con_err("%s: sge %d:%" PRIu64 ":%" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
				       cmd, id, off, len, id, m->len);
		sge[*n].addr = (uint64_t)(uintptr_t)m->buf + off;
		sge[*n].length = (uint32_t)len;
		sge[*n].lkey = m->mr->lkey;
		*total += len;
		(*n)++;
	}
	if (*n == 0)
		return con_err("%s: empty sge list", cmd);
	return 0;
}

struct wait_ctx {
	struct con_qp *q;
	struct con_cq *c;
	int cq_id;
	uint64_t first, last;		/* wr_id range we wait for (inclusive) */
	uint64_t want, got;
	uint64_t errors;
	int expect;			/* expected status */
	bool expect_seen;
	bool verbose;
	struct ibv_wc first_err;
	bool bad;
};

/*
 * The local side of a post, from the options both posts and receives take:
 * sge <list>, or mr/off/len (mr defaulting to the lowest MR on the PD).
 * Returns the MR used (index in *mi, NULL with sge <list>).
 */
struct local_sges {
	const char *sge_s, *mr_s;
	uint64_t off, len, lkey;
	bool len_set, lkey_set, nocheck;
};

static int local_sges(const char *cmd, const char *who, int pd, struct local_sges *ls,
		      struct ibv_sge *sge, int *nsge, uint64_t *total, struct con_mr **mr, int *mi)
{
	struct con_mr *m;

	*mr = NULL;
	*mi = -1;
	if (ls->sge_s) {
		if (ls->mr_s || ls->len_set)
			return con_err("%s: give either sge <list> or mr/off/len", cmd);
		if (parse_sges(cmd, ls->sge_s, sge, nsge, !ls->nocheck, total))
			return -1;
	} else {
		if (ls->mr_s) {
			if ((m = con_get_mr(cmd, ls->mr_s, mi)) == NULL)
				return -1;
		} else {
			*mi = lowest_mr_on_pd(pd);
			if (*mi < 0)
				return con_err("%s: %s's pd %d has no MR (create mr %d <size>)", cmd, who,
					       pd, pd);
			m = &g.mrs[*mi];
		}
		if (ls->off > m->len && !ls->nocheck)
			return con_err("%s: off %" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
				       cmd, ls->off, *mi, m->len);
		if (!ls->len_set)
			ls->len = ls->off < m->len ? RTE_MIN(m->len - ls->off, (uint64_t)UINT32_MAX) : 0;
		if (!ls->nocheck && ls->len > m->len - ls->off)
			return con_err("%s: %" PRIu64 " B at +%" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
				       cmd, ls->len, ls->off, *mi, m->len);
		sge[0].addr = (uint64_t)(uintptr_t)m->buf + ls->off;
		sge[0].length = (uint32_t)ls->len;
		sge[0].lkey = m->mr->lkey;
		*nsge = 1;
		*total = ls->len;
		*mr = m;
	}
	if (ls->lkey_set)
		for (int i = 0; i < *nsge; i++)
			sge[i].lkey = (uint32_t)ls->lkey;
	return 0;
}

static bool wait_done(void *arg)
{
	struct wait_ctx *w = arg;
	struct ibv_wc wc[32];
	int n = ibv_poll_cq(w->c->cq, 32, wc);

	for (int i = 0; i < n; i++) {
		if (wc[i].qp_num != w->q->qp->qp_num || wc[i].wr_id < w->first ||
		    wc[i].wr_id > w->last || wc[i].opcode >= IBV_WC_RECV) {
			con_cq_stash(w->c, &wc[i]);
			continue;
		}
		w->got++;
		con_tally_wc_expect(&wc[i], w->expect);
		if (wc[i].status == (enum ibv_wc_status)w->expect) {
			w->expect_seen = true;
			if (w->verbose || w->expect != IBV_WC_SUCCESS)
				con_wc_print(w->cq_id, &wc[i]);
			continue;
		}
		if (wc[i].status == IBV_WC_WR_FLUSH_ERR && w->expect_seen &&
		    w->expect != IBV_WC_SUCCESS)
			continue;	/* what follows an expected error */
		w->errors++;
		if (!w->bad) {
			w->first_err = wc[i];
			w->bad = true;
		}
		con_wc_print(w->cq_id, &wc[i]);
	}
	return w->got >= w->want;
}

/* Whether a QP of type t may post op (ibv_post_send(3), IBTA table 38). */
static bool op_allowed(const struct con_opdesc *od, enum ibv_qp_type t)
{
	return t == IBV_QPT_RC || (t == IBV_QPT_UC && (od->flags & CON_OPF_UC)) ||
	       (t == IBV_QPT_UD && (od->flags & CON_OPF_UD));
}

/* The MR a bind or post uses by default: the lowest on the PD (with
 * IBV_ACCESS_MW_BIND for a bind, if one has it). */
static int default_mr(int pd, bool for_bind)
{
	if (for_bind)
		for (int i = 0; i < CON_MAX_MR; i++)
			if (g.mrs[i].used && g.mrs[i].pd == pd &&
			    (g.mrs[i].access & IBV_ACCESS_MW_BIND))
				return i;
	return lowest_mr_on_pd(pd);
}

static const struct droce_mr *mw_rec(const struct con_mw *w)
{
	return container_of(w->mw, struct droce_mr, ibv_mw);
}

static int do_post(int op, int argc, char **argv)
{
	const struct con_opdesc *od = &con_ops[op];
	char cmd[32];
	uint64_t off = 0, len = 0, roff = 0, raddr = 0, rkey = 0, imm = 0x1234abcd;
	uint64_t compare = 0, swap = 0, add = 1, count = 1, wrid = 0, timeout = 5000;
	uint64_t lkey = 0, qpn = 0, qkey = 0;
	const char *mr_s = NULL, *rmr_s = NULL, *sge_s = NULL, *expect_s = NULL;
	const char *ah_s = NULL, *rqp_s = NULL, *rmw_s = NULL, *mw_s = NULL;
	const char *access_s = NULL;
	bool len_set = false, raddr_set = false, rkey_set = false, wrid_set = false;
	bool lkey_set = false, inl = false, unsig = false, fence = false;
	bool solicited = false, wait = false, nocheck = false, verbose = false;
	bool qpn_set = false, qkey_set = false, unbind = false, off_set = false;
	struct con_opt o[] = {
		{ "mr", OPT_STR, &mr_s, NULL, 0 },
		{ "off", OPT_SIZE, &off, &off_set, 0 },
		{ "len", OPT_SIZE, &len, &len_set, UINT32_MAX },
		{ "size", OPT_SIZE, &len, &len_set, UINT32_MAX },
		{ "sge", OPT_STR, &sge_s, NULL, 0 },
		{ "lkey", OPT_U64, &lkey, &lkey_set, UINT32_MAX },
		{ "rmr", OPT_STR, &rmr_s, NULL, 0 },
		{ "rmw", OPT_STR, &rmw_s, NULL, 0 },
		{ "roff", OPT_SIZE, &roff, NULL, 0 },
		{ "raddr", OPT_U64, &raddr, &raddr_set, 0 },
		{ "rkey", OPT_U64, &rkey, &rkey_set, UINT32_MAX },
		{ "ah", OPT_STR, &ah_s, NULL, 0 },
		{ "qpn", OPT_U64, &qpn, &qpn_set, 0xffffff },
		{ "qkey", OPT_U64, &qkey, &qkey_set, UINT32_MAX },
		{ "rqp", OPT_STR, &rqp_s, NULL, 0 },
		{ "mw", OPT_STR, &mw_s, NULL, 0 },
		{ "access", OPT_STR, &access_s, NULL, 0 },
		{ "unbind", OPT_FLAG, &unbind, NULL, 0 },
		{ "imm", OPT_U64, &imm, NULL, UINT32_MAX },
		{ "compare", OPT_U64, &compare, NULL, 0 },
		{ "swap", OPT_U64, &swap, NULL, 0 },
		{ "add", OPT_U64, &add, NULL, 0 },
		{ "count", OPT_U64, &count, NULL, POST_MAX_COUNT },
		{ "wrid", OPT_U64, &wrid, &wrid_set, 0 },
		{ "inline", OPT_FLAG, &inl, NULL, 0 },
		{ "unsig", OPT_FLAG, &unsig, NULL, 0 },
		{ "fence", OPT_FLAG, &fence, NULL, 0 },
		{ "solicited", OPT_FLAG, &solicited, NULL, 0 },
		{ "wait", OPT_FLAG, &wait, NULL, 0 },
		{ "timeout", OPT_U64, &timeout, NULL, 3600 * 1000 },
		{ "expect", OPT_STR, &expect_s, NULL, 0 },
		{ "verbose", OPT_FLAG, &verbose, NULL, 0 },
		{ "nocheck", OPT_FLAG, &nocheck, NULL, 0 },
		{ NULL, 0, NULL, NULL, 0 },
	};
	struct ibv_sge sge[POST_MAX_SGE];
	struct ibv_send_wr *wrs;
	struct con_qp *q;
	struct con_mr *lm = NULL, *rm = NULL;
	struct con_ah *ah = NULL;
	struct con_mw *mw = NULL, *rmw = NULL;
	int qid, nsge = 0, lmi = -1, rmi = -1, expect = IBV_WC_SUCCESS, ret = 0;
	int ahi = -1, mwi = -1, rmwi = -1, tr;
	unsigned int bind_access = IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ;
	uint32_t inv_rkey = 0, old_rkey = 0, new_rkey = 0;
	uint64_t total = 0, posted = 0, t0, dt;
	char where[256];

	snprintf(cmd, sizeof(cmd), "post %s", od->name);
	if (argc < 1)
		return con_err("%s: usage: post %s <qp> [options] (help post)", cmd, od->name);
	q = con_get_qp(cmd, argv[0], &qid);
	if (q == NULL || con_opts(cmd, argc - 1, argv + 1, o))
		return -1;
	tr = con_qp_tr(q);
	if (q->busy)
		return con_err("%s: qp %d is running traffic (traffic stop first)", cmd, qid);
	if (count == 0)
		return con_err("%s: count must be at least 1", cmd);
	if (expect_s) {
		expect = con_wc_status_by_name(expect_s);
		if (expect < 0)
			return con_err("%s: unknown status '%s' (success, rem_access_err, loc_prot_err, "
				       "wr_flush_err, retry_exc_err, mw_bind_err, ...)", cmd, expect_s);
		wait = true;
	}
	/* The transport: which operations, and how UD sends are addressed. */
	if (!op_allowed(od, q->type) && !nocheck)
		return con_err("%s: qp %d is %s: %s %s", cmd, qid, con_qp_type_str(q->type), od->verbs,
			       q->type == IBV_QPT_UD ?
			       "is not a datagram operation (UD carries send and send_imm)" :
			       "needs an RC QP (UC carries send, send_imm, write, write_imm, bind_mw, local_inv)");
	if ((ah_s || qpn_set || qkey_set || rqp_s) && q->type != IBV_QPT_UD)
		return con_err("%s: ah, qpn, qkey and rqp address UD sends; qp %d is %s (connected)", cmd,
			       qid, con_qp_type_str(q->type));
	if (q->type == IBV_QPT_UD && (od->flags & CON_OPF_UD)) {
		if (ah_s == NULL)
			return con_err("%s: qp %d is UD: give ah <id> (create ah <dev> <gid>) and qpn <n> qkey <k>, "
				       "or rqp <qp> (a local UD QP)", cmd, qid);
		if ((ah = con_get_ah(cmd, ah_s, &ahi)) == NULL)
			return -1;
		if (rqp_s) {
			struct con_qp *d;
			int di;

			if ((d = con_get_qp(cmd, rqp_s, &di)) == NULL)
				return -1;
			if (d->type != IBV_QPT_UD)
				return con_err("%s: rqp %d is %s, not a UD QP", cmd, di,
					       con_qp_type_str(d->type));
			if (!qpn_set)
				qpn = d->qp->qp_num;
			if (!qkey_set)
				qkey = d->qkey;
		} else {
			if (!qpn_set)
				return con_err("%s: give qpn <n> (the destination QPN) or rqp <qp> (a local UD QP)",
					       cmd);
			if (!qkey_set)
				qkey = q->qkey;		/* ours: the usual convention */
		}
		if (!nocheck && ah->pd != q->pd)
			return con_err("%s: ah %d is on pd %d but qp %d on pd %d: an AH serves the QPs of its PD",
				       cmd, ahi, ah->pd, qid, q->pd);
	}
	if (inl && !(od->flags & CON_OPF_INLINE) && !nocheck)
		return con_err("%s: %s cannot carry inline data", cmd, od->verbs);
	/* Windows: which one to bind, or which key to invalidate. */
	if (mw_s) {
		if (!(od->flags & (CON_OPF_MW | CON_OPF_INV)))
			return con_err("%s: mw <id> is for bind_mw, local_inv and send_inv (a window as the "
				       "remote buffer: rmw <id>)", cmd);
		if ((mw = con_get_mw(cmd, mw_s, &mwi)) == NULL)
			return -1;
	}
	if ((access_s || unbind) && !(od->flags & CON_OPF_MW))
		return con_err("%s: access and unbind are options of bind_mw", cmd);
	if (od->flags & CON_OPF_MW) {
		if (mw == NULL)
			return con_err("%s: give mw <id> (create mw <pd> type1|type2)", cmd);
		if (access_s) {
			if (con_access_parse(access_s, &bind_access))
				return con_err("%s: access takes a comma list of rw,rr,ra", cmd);
			if (!nocheck && (bind_access & ~(unsigned int)(IBV_ACCESS_REMOTE_WRITE |
					 IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
				return con_err("%s: a window's access is rw, rr, ra (remote rights only)", cmd);
		}
		if (unbind && mw->mw->type != IBV_MW_TYPE_1)
			return con_err("%s: only a type 1 window is unbound by a bind of length 0; "
				       "invalidate a type 2 window (post local_inv %d mw %d)", cmd, qid, mwi);
		if (count != 1)
			return con_err("%s: one bind at a time (count 1)", cmd);
		if (!nocheck && mw->pd != q->pd)
			return con_err("%s: mw %d is on pd %d but qp %d on pd %d: a window is bound through a "
				       "QP of its PD", cmd, mwi, mw->pd, qid, q->pd);
	}
	if (od->flags & CON_OPF_INV) {
		if (raddr_set)
			return con_err("%s: %s takes no remote address; the key to invalidate is mw <id> or rkey <k>",
				       cmd, od->verbs);
		if (mw)
			inv_rkey = mw->mw->rkey;
		else if (rkey_set)
			inv_rkey = (uint32_t)rkey;
		else
			return con_err("%s: give the key to invalidate: mw <id> (a window's rkey) or rkey <k>", cmd);
	}
	if ((od->flags & CON_OPF_ATOMIC) && !len_set) {
		len = 8;
		len_set = true;
	}
	/* Local SGEs (a bind: the range of the region it binds). */
	if (od->flags & CON_OPF_NODATA) {
		if (sge_s)
			return con_err("%s: %s takes no SGE list", cmd, od->verbs);
		if (op == CON_OP_LOCAL_INV && (mr_s || len_set || off_set))
			return con_err("%s: LOCAL_INV moves no data (no mr/off/len)", cmd);
		if (op == CON_OP_BIND_MW && unbind && (mr_s || len_set || off_set))
			return con_err("%s: unbind takes no range (no mr/off/len)", cmd);
		if (op == CON_OP_BIND_MW && !unbind) {
			if (mr_s) {
				if ((lm = con_get_mr(cmd, mr_s, &lmi)) == NULL)
					return -1;
			} else {
				lmi = default_mr(q->pd, true);
				if (lmi < 0)
					return con_err("%s: qp %d's pd %d has no MR to bind to (create mr %d <size>)",
						       cmd, qid, q->pd, q->pd);
				lm = &g.mrs[lmi];
			}
			if (off > lm->len && !nocheck)
				return con_err("%s: off %" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
					       cmd, off, lmi, lm->len);
			if (!len_set)
				len = off < lm->len ? lm->len - off : 0;
			if (!nocheck && len > lm->len - off)
				return con_err("%s: %" PRIu64 " B at +%" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
					       cmd, len, off, lmi, lm->len);
			if (!nocheck && lm->pd != mw->pd)
				return con_err("%s: mr %d is on pd %d, mw %d on pd %d: one PD", cmd, lmi, lm->pd,
					       mwi, mw->pd);
			if (!nocheck && !(lm->access & IBV_ACCESS_MW_BIND))
				return con_err("%s: mr %d was registered without mw access (create mr ... access all "
					       "or ...,mw)", cmd, lmi);
			total = len;
		}
		nsge = 0;
	} else {
		struct local_sges ls = { sge_s, mr_s, off, len, lkey, len_set, lkey_set, nocheck };
		char who[16];

		snprintf(who, sizeof(who), "qp %d", qid);
		if (local_sges(cmd, who, q->pd, &ls, sge, &nsge, &total, &lm, &lmi))
			return -1;
		len = ls.len;
	}
	if ((od->flags & CON_OPF_ATOMIC) && total != 8 && !nocheck)
		return con_err("%s: the original value lands in exactly 8 local bytes (len 8)", cmd);
	if (ah && !nocheck && total > g.devs[con_qp_dev(q)].dev->args.max_mtu)
		return con_err("%s: a UD datagram is one packet: at most %u B here (the port's MTU), not %" PRIu64,
			       cmd, g.devs[con_qp_dev(q)].dev->args.max_mtu, total);
	/* Remote address. */
	if (od->flags & CON_OPF_REMOTE) {
		if (raddr_set != rkey_set)
			return con_err("%s: raddr and rkey go together", cmd);
		if ((rmr_s != NULL) + (rmw_s != NULL) + raddr_set > 1)
			return con_err("%s: give one of rmr <mr>, rmw <mw> or raddr <a> rkey <k>", cmd);
		if (rmw_s) {
			const struct droce_mr *w;

			if ((rmw = con_get_mw(cmd, rmw_s, &rmwi)) == NULL)
				return -1;
			w = mw_rec(rmw);
			/* Where the window was bound last; a window that is
			 * not bound (any more) is for the responder to refuse. */
			if (!nocheck && __atomic_load_n(&w->valid, __ATOMIC_ACQUIRE) &&
			    (roff > w->len || total > w->len - roff))
				return con_err("%s: %" PRIu64 " B at +%" PRIu64 " is past the end of mw %d (%" PRIu64 " B bound)",
					       cmd, total, roff, rmwi, w->len);
			raddr = w->iova + roff;
			rkey = rmw->mw->rkey;
			if (!__atomic_load_n(&w->valid, __ATOMIC_ACQUIRE))
				printf("note: mw %d is not bound: the responder will refuse it (rem_access_err)\n",
				       rmwi);
		} else if (!raddr_set) {
			if (rmr_s) {
				if ((rm = con_get_mr(cmd, rmr_s, &rmi)) == NULL)
					return -1;
			} else if (q->peer >= 0 && g.qps[q->peer].used) {
				rmi = lowest_mr_on_pd(g.qps[q->peer].pd);
				if (rmi < 0)
					return con_err("%s: the peer qp %d has no MR on its pd; give rmr <mr>",
						       cmd, q->peer);
				rm = &g.mrs[rmi];
			} else {
				return con_err("%s: give rmr <mr> (a local MR), rmw <mw> (a window) or raddr <addr> rkey <key>", cmd);
			}
			if (!nocheck && (roff > rm->len || total > rm->len - roff))
				return con_err("%s: %" PRIu64 " B at +%" PRIu64 " is past the end of remote mr %d (%" PRIu64 " B)",
					       cmd, total, roff, rmi, rm->len);
			raddr = (uint64_t)(uintptr_t)rm->buf + roff;
			rkey = rm->mr->rkey;
		}
	} else if (rmr_s || rmw_s || raddr_set || (rkey_set && !(od->flags & CON_OPF_INV))) {
		return con_err("%s: %s takes no remote address (rmr/rmw/raddr/rkey)", cmd, od->verbs);
	}
	if (unsig && wait && count == 1)
		unsig = false;	/* nothing to wait for otherwise */
	if (wait && g.cqs[q->scq].busy)
		return con_err("%s: qp %d's send cq %d is polled by traffic: post without wait "
			       "(its completions are kept for 'poll cq' after traffic stop)", cmd, qid, q->scq);

	wrs = calloc(RTE_MIN(count, (uint64_t)POST_CHUNK), sizeof(*wrs));
	if (wrs == NULL)
		return con_err("%s: out of memory", cmd);
	{
		struct wait_ctx w = {
			.q = q, .c = &g.cqs[q->scq], .cq_id = q->scq, .expect = expect,
			.verbose = verbose,
		};
		uint64_t first_id = wrid_set ? wrid : CON_WRID(op, tr, q->seq + 1);

		t0 = con_now_us();
		while (posted < count) {
			uint64_t chunk = RTE_MIN(count - posted, (uint64_t)POST_CHUNK);
			uint64_t signaled = 0;
			struct ibv_send_wr *bad = NULL;

			if (wait)
				chunk = RTE_MIN(chunk, (uint64_t)RTE_MAX(1, q->qp->send_cq->cqe / 2));
			if (wait)
				chunk = RTE_MIN(chunk, (uint64_t)RTE_MAX(1u, droce_qp_of(q->qp)->sq_max_wr / 2));
			for (uint64_t i = 0; i < chunk; i++) {
				struct ibv_send_wr *wr = &wrs[i];
				uint64_t id = wrid_set ? wrid + posted + i : CON_WRID(op, tr, ++q->seq);

				memset(wr, 0, sizeof(*wr));
				wr->wr_id = id;
				wr->sg_list = nsge ? sge : NULL;
				wr->num_sge = nsge;
				wr->opcode = od->wr;
				wr->next = i + 1 < chunk ? &wrs[i + 1] : NULL;
				if (!unsig || (wait && i + 1 == chunk)) {
					wr->send_flags |= IBV_SEND_SIGNALED;
					signaled++;
				}
				if (inl)
					wr->send_flags |= IBV_SEND_INLINE;
				if (fence)
					wr->send_flags |= IBV_SEND_FENCE;
				if (solicited)
					wr->send_flags |= IBV_SEND_SOLICITED;
				if (od->flags & CON_OPF_IMM)
					wr->imm_data = htonl((uint32_t)imm);
				if (od->flags & CON_OPF_INV)
					wr->invalidate_rkey = inv_rkey;
				if (od->flags & CON_OPF_ATOMIC) {
					wr->wr.atomic.remote_addr = raddr;
					wr->wr.atomic.rkey = (uint32_t)rkey;
					wr->wr.atomic.compare_add = op == CON_OP_CAS ? compare : add;
					wr->wr.atomic.swap = swap;
				} else if (od->flags & CON_OPF_REMOTE) {
					wr->wr.rdma.remote_addr = raddr;
					wr->wr.rdma.rkey = (uint32_t)rkey;
				} else if (ah) {
					wr->wr.ud.ah = ah->ah;
					wr->wr.ud.remote_qpn = (uint32_t)qpn;
					wr->wr.ud.remote_qkey = (uint32_t)qkey;
				}
				if (op == CON_OP_BIND_MW) {
					old_rkey = mw->mw->rkey;
					new_rkey = ibv_inc_rkey(old_rkey);
					wr->bind_mw.mw = mw->mw;
					wr->bind_mw.rkey = new_rkey;
					wr->bind_mw.bind_info.mr = lm ? lm->mr : NULL;
					wr->bind_mw.bind_info.addr = lm ? (uint64_t)(uintptr_t)lm->buf + off : 0;
					wr->bind_mw.bind_info.length = lm ? len : 0;
					wr->bind_mw.bind_info.mw_access_flags = lm ? bind_access : 0;
				}
			}
			if (op == CON_OP_BIND_MW && mw->mw->type == IBV_MW_TYPE_1) {
				/* Type 1: ibv_bind_mw(3), which takes the next key itself. */
				struct ibv_mw_bind mb = {
					.wr_id = wrs[0].wr_id,
					.send_flags = wrs[0].send_flags,
					.bind_info = wrs[0].bind_mw.bind_info,
				};

				ret = ibv_bind_mw(q->qp, mw->mw, &mb);
				bad = ret ? &wrs[0] : NULL;
				new_rkey = mw->mw->rkey;
			} else {
				ret = ibv_post_send(q->qp, wrs, &bad);
				/* Type 2: the application keeps the window's new key. */
				if (ret == 0 && op == CON_OP_BIND_MW)
					mw->mw->rkey = new_rkey;
			}
			if (ret) {
				uint64_t ok = bad ? (uint64_t)(bad - wrs) : 0;

				posted += ok;
				g.tally.posted[op][tr] += ok;
				con_err("%s: %s: %s after %" PRIu64 " of %" PRIu64 " WR%s%s", cmd,
					op == CON_OP_BIND_MW && mw->mw->type == IBV_MW_TYPE_1 ?
					"ibv_bind_mw" : "ibv_post_send",
					strerror(ret), posted, count, count == 1 ? "" : "s",
					ret == ENOMEM ? " (send queue full: use wait, or a smaller count)" :
					ret == EINVAL ? " (QP not in RTS, an operation its transport lacks, or too many SGEs / too much inline data)" :
					ret == EPERM ? " (the MR and the window are on different PDs)" : "");
				break;
			}
			posted += chunk;
			g.tally.posted[op][tr] += chunk;
			g.tally.max_len[op][tr] = RTE_MAX(g.tally.max_len[op][tr], total);
			if (wait) {
				int r;

				w.first = wrid_set ? wrid : first_id;
				w.last = wrid_set ? wrid + posted - 1 : CON_WRID(op, tr, q->seq);
				w.want += signaled;
				r = con_wait(timeout * 1000, wait_done, &w);
				if (r) {
					printf("error: %s: %s after %" PRIu64 " ms: %" PRIu64 " of %" PRIu64
					       " completion%s (qp %d is %s; see 'show qp %d')%s\n", cmd,
					       r == -EINTR ? "interrupted" : "timed out", timeout,
					       w.got, w.want, w.want == 1 ? "" : "s", qid,
					       con_qp_state_str(droce_qp_of(q->qp)->state), qid,
					       (od->flags & CON_OPF_RECV) && q->type == IBV_QPT_RC ?
					       "; the peer needs a posted receive for each (RNR retries go on while rnr_retry is 7)" : "");
					free(wrs);
					return -1;
				}
				if (w.bad)
					break;
			}
		}
		dt = con_now_us() - t0;
		free(wrs);
		/* A bind that failed left the window's key as it was. */
		if (op == CON_OP_BIND_MW && posted && wait &&
		    (w.bad || (expect != IBV_WC_SUCCESS && w.expect_seen)))
			mw->mw->rkey = old_rkey;
		if (op == CON_OP_BIND_MW)
			snprintf(where, sizeof(where), "mw %d type %d rkey 0x%08x -> 0x%08x: %s", mwi,
				 mw->mw->type == IBV_MW_TYPE_1 ? 1 : 2, old_rkey, new_rkey,
				 lm ? "" : "unbound");
		else if (op == CON_OP_LOCAL_INV)
			snprintf(where, sizeof(where), "rkey 0x%08x", inv_rkey);
		else if (lm)
			snprintf(where, sizeof(where), "mr %d +%" PRIu64, lmi, off);
		else
			snprintf(where, sizeof(where), "%d SGEs", nsge);
		if (op == CON_OP_BIND_MW && lm) {
			size_t l = strlen(where);
			char acc[64];

			snprintf(where + l, sizeof(where) - l, "mr %d +%" PRIu64 " access %s", lmi, off,
				 con_access_str(bind_access, acc, sizeof(acc)));
		}
		if (od->flags & CON_OPF_REMOTE) {
			size_t l = strlen(where);
			const char *dir = op == CON_OP_READ ? "<-" : "->";

			if (rm)
				snprintf(where + l, sizeof(where) - l, " %s mr %d +%" PRIu64, dir, rmi, roff);
			else if (rmw)
				snprintf(where + l, sizeof(where) - l, " %s mw %d +%" PRIu64 " (0x%" PRIx64
					 " rkey 0x%" PRIx64 ")", dir, rmwi, roff, raddr, rkey);
			else
				snprintf(where + l, sizeof(where) - l, " %s 0x%" PRIx64 " rkey 0x%" PRIx64,
					 dir, raddr, rkey);
		}
		if (ah) {
			size_t l = strlen(where);

			snprintf(where + l, sizeof(where) - l, " -> ah %d QPN 0x%06" PRIx64 " qkey 0x%08" PRIx64,
				 ahi, qpn, qkey);
		}
		if (op == CON_OP_SEND_INV) {
			size_t l = strlen(where);

			snprintf(where + l, sizeof(where) - l, ", invalidate rkey 0x%08x", inv_rkey);
		}
		if (mw && op != CON_OP_BIND_MW) {
			size_t l = strlen(where);

			snprintf(where + l, sizeof(where) - l, " (mw %d)", mwi);
		}
		printf("qp %d: posted %" PRIu64 " x %s", qid, posted, od->verbs);
		if (q->type != IBV_QPT_RC)
			printf(" (%s)", con_qp_type_str(q->type));
		if (od->flags & CON_OPF_NODATA)
			printf(" %s", where);
		else
			printf(" len %" PRIu64 " (%s)", total, where);
		printf("%s%s%s", unsig ? " unsignaled" : "", inl ? " inline" : "", fence ? " fence" : "");
		if (od->flags & CON_OPF_IMM)
			printf(" imm 0x%08" PRIx32, (uint32_t)imm);
		if (op == CON_OP_CAS)
			printf(" compare %" PRIu64 " swap %" PRIu64, compare, swap);
		if (op == CON_OP_FAA)
			printf(" add %" PRIu64, add);
		if (!wait) {
			printf(", wr_id 0x%" PRIx64 "%s\n", first_id, posted > 1 ? ".." : "");
			return ret ? -1 : 0;
		}
		printf(", %" PRIu64 " completion%s in %" PRIu64 " us", w.got, w.got == 1 ? "" : "s", dt);
		if (!w.bad && dt && total && op != CON_OP_CAS && op != CON_OP_FAA &&
		    !(od->flags & CON_OPF_NODATA))
			printf(" (%.2f Gbit/s)", (double)total * (double)posted * 8 / ((double)dt * 1e3));
		printf("\n");
		if (ret)
			return -1;
		if (w.bad)
			return con_err("%s: completion status %s (%s)%s", cmd,
				       con_wc_status_name(w.first_err.status),
				       ibv_wc_status_str(w.first_err.status),
				       expect != IBV_WC_SUCCESS ? " where another was expected" : "");
		if (expect != IBV_WC_SUCCESS && !w.expect_seen)
			return con_err("%s: expected status %s, all completed with success", cmd,
				       con_wc_status_name((enum ibv_wc_status)expect));
		if ((op == CON_OP_CAS || op == CON_OP_FAA) && expect == IBV_WC_SUCCESS) {
			uint64_t v;

			memcpy(&v, (void *)(uintptr_t)sge[0].addr, 8);
			printf("qp %d: %s returned the original value %" PRIu64 " (0x%" PRIx64 ")\n",
			       qid, od->verbs, v, v);
		}
		if (op == CON_OP_BIND_MW && expect == IBV_WC_SUCCESS)
			printf("qp %d: mw %d is bound: rkey 0x%08x\n", qid, mwi, mw->mw->rkey);
	}
	return 0;
}

#define DEF_POST(op) \
static int post_##op(int argc, char **argv) \
{ \
	return do_post(con_op_by_name(#op), argc, argv); \
}
DEF_POST(send)
DEF_POST(send_imm)
DEF_POST(send_inv)
DEF_POST(write)
DEF_POST(write_imm)
DEF_POST(read)
DEF_POST(cas)
DEF_POST(faa)
DEF_POST(bind_mw)
DEF_POST(local_inv)
#undef DEF_POST

/* Receives into a QP's own queue (qid >= 0) or an SRQ (sid >= 0); argv
 * holds the options after the id. */
int post_recv_common(const char *cmd, int qid, int sid, int argc, char **argv)
{
	uint64_t off = 0, len = 0, count = 1, wrid = 0, lkey = 0;
	const char *mr_s = NULL, *sge_s = NULL;
	bool len_set = false, wrid_set = false, lkey_set = false, nocheck = false;
	struct con_opt o[] = {
		{ "mr", OPT_STR, &mr_s, NULL, 0 },
		{ "off", OPT_SIZE, &off, NULL, 0 },
		{ "len", OPT_SIZE, &len, &len_set, UINT32_MAX },
		{ "size", OPT_SIZE, &len, &len_set, UINT32_MAX },
		{ "sge", OPT_STR, &sge_s, NULL, 0 },
		{ "lkey", OPT_U64, &lkey, &lkey_set, UINT32_MAX },
		{ "count", OPT_U64, &count, NULL, DROCE_MAX_QP_WR },
		{ "wrid", OPT_U64, &wrid, &wrid_set, 0 },
		{ "nocheck", OPT_FLAG, &nocheck, NULL, 0 },
		{ NULL, 0, NULL, NULL, 0 },
	};
	struct ibv_sge sge[POST_MAX_SGE];
	struct ibv_recv_wr *wrs, *bad = NULL;
	struct con_qp *q = qid >= 0 ? &g.qps[qid] : NULL;
	struct con_srq *sq = sid >= 0 ? &g.srqs[sid] : NULL;
	struct con_mr *m = NULL;
	int mi = -1, nsge = 0, ret, pd = q ? q->pd : sq->pd;
	int tr = q ? con_qp_tr(q) : CON_TR_SRQ;
	uint32_t *seq = q ? &q->seq : &sq->seq;
	uint64_t total = 0, first;
	char who[16];

	snprintf(who, sizeof(who), "%s %d", q ? "qp" : "srq", q ? qid : sid);
	if (con_opts(cmd, argc, argv, o))
		return -1;
	if (count == 0)
		return con_err("%s: count must be at least 1", cmd);
	if (q && q->busy)
		return con_err("%s: qp %d is running traffic (traffic stop first)", cmd, qid);
	if (q && q->srq >= 0 && !nocheck)
		return con_err("%s: qp %d takes its receives from srq %d: post srq recv %d ...", cmd, qid,
			       q->srq, q->srq);
	{
		struct local_sges ls = { sge_s, mr_s, off, len, lkey, len_set, lkey_set, nocheck };

		if (local_sges(cmd, who, pd, &ls, sge, &nsge, &total, &m, &mi))
			return -1;
	}
	wrs = calloc(count, sizeof(*wrs));
	if (wrs == NULL)
		return con_err("%s: out of memory", cmd);
	first = wrid_set ? wrid : CON_WRID(CON_OP_RECV, tr, *seq + 1);
	for (uint64_t i = 0; i < count; i++) {
		wrs[i].wr_id = wrid_set ? wrid + i : CON_WRID(CON_OP_RECV, tr, ++*seq);
		wrs[i].sg_list = sge;
		wrs[i].num_sge = nsge;
		wrs[i].next = i + 1 < count ? &wrs[i + 1] : NULL;
	}
	ret = q ? ibv_post_recv(q->qp, wrs, &bad) : ibv_post_srq_recv(sq->srq, wrs, &bad);
	{
		uint64_t ok = ret ? (bad ? (uint64_t)(bad - wrs) : 0) : count;

		g.tally.posted[CON_OP_RECV][tr] += ok;
		if (ok)
			g.tally.max_len[CON_OP_RECV][tr] = RTE_MAX(g.tally.max_len[CON_OP_RECV][tr], total);
		free(wrs);
		if (ret)
			return con_err("%s: %s: %s after %" PRIu64 " of %" PRIu64 "%s", cmd,
				       q ? "ibv_post_recv" : "ibv_post_srq_recv",
				       strerror(ret), ok, count,
				       ret == ENOMEM ? (q ? " (receive queue full)" : " (the SRQ is full)") :
				       ret == EINVAL ? (q ? " (QP in RESET, attached to an SRQ, or too many SGEs)" :
							" (too many SGEs)") : "");
	}
	if (m)
		printf("%s: posted %" PRIu64 " x RECV len %" PRIu64 " (mr %d +%" PRIu64 "), wr_id 0x%" PRIx64 "%s%s\n",
		       who, count, total, mi, off, first, count > 1 ? ".." : "",
		       q && q->type == IBV_QPT_UD ? " (UD: the first 40 B take the GRH)" : "");
	else
		printf("%s: posted %" PRIu64 " x RECV len %" PRIu64 " (%d SGEs), wr_id 0x%" PRIx64 "%s%s\n",
		       who, count, total, nsge, first, count > 1 ? ".." : "",
		       q && q->type == IBV_QPT_UD ? " (UD: the first 40 B take the GRH)" : "");
	return 0;
}

static int post_recv(int argc, char **argv)
{
	int qid;

	if (argc < 1)
		return con_err("post recv: usage: post recv <qp> [mr <mr>] [off <o>] [len <l>] | [sge <mr>:<off>:<len>,...] [count <n>] [wrid <n>]");
	if (con_get_qp("post recv", argv[0], &qid) == NULL)
		return -1;
	return post_recv_common("post recv", qid, -1, argc - 1, argv + 1);
}

struct poll_ctx {
	struct con_cq *c;
	int id;
	uint64_t want, got, bad;
	int expect;
	bool quiet;
	/* checks of each completion's fields (len, flags, src_qp) */
	bool len_set, src_set;
	uint64_t len, src_qp;
	unsigned int flags;
	uint64_t mismatch;
};

static const struct {
	const char *name;
	unsigned int bit;
} wc_flag_names[] = {
	{ "grh", IBV_WC_GRH }, { "imm", IBV_WC_WITH_IMM }, { "inv", IBV_WC_WITH_INV },
};

/* The fields a completion must have; a check passed or failed. */
static void poll_check(struct poll_ctx *p, const struct ibv_wc *wc)
{
	char want[96] = "", got[96] = "";
	size_t nw = 0, ng = 0;

	if (!p->len_set && !p->src_set && !p->flags)
		return;
	if (p->len_set && wc->byte_len != p->len) {
		nw += (size_t)snprintf(want + nw, sizeof(want) - nw, " byte_len %" PRIu64, p->len);
		ng += (size_t)snprintf(got + ng, sizeof(got) - ng, " byte_len %u", wc->byte_len);
	}
	if (p->src_set && wc->src_qp != p->src_qp) {
		nw += (size_t)snprintf(want + nw, sizeof(want) - nw, " src_qp 0x%06" PRIx64, p->src_qp);
		ng += (size_t)snprintf(got + ng, sizeof(got) - ng, " src_qp 0x%06x", wc->src_qp);
	}
	for (size_t i = 0; i < RTE_DIM(wc_flag_names); i++)
		if ((p->flags & wc_flag_names[i].bit) && !(wc->wc_flags & wc_flag_names[i].bit)) {
			nw += (size_t)snprintf(want + nw, sizeof(want) - nw, " flag %s",
					       wc_flag_names[i].name);
			ng += (size_t)snprintf(got + ng, sizeof(got) - ng, " no %s",
					       wc_flag_names[i].name);
		}
	if (nw == 0) {
		g.tally.checks_ok++;
		printf("check OK: cq %d: wr_id 0x%" PRIx64 " byte_len %u wc_flags 0x%x src_qp 0x%06x\n",
		       p->id, wc->wr_id, wc->byte_len, wc->wc_flags, wc->src_qp);
		return;
	}
	g.tally.checks_fail++;
	p->mismatch++;
	printf("check FAILED: cq %d: wr_id 0x%" PRIx64 " has%s, expected%s\n", p->id, wc->wr_id,
	       got, want);
}

static bool poll_done(void *arg)
{
	struct poll_ctx *p = arg;
	struct ibv_wc wc[16];
	int n = con_cq_poll(p->c, (int)RTE_MIN((uint64_t)16, p->want - p->got), wc);

	for (int i = 0; i < n; i++) {
		p->got++;
		con_tally_wc_expect(&wc[i], p->expect);
		if (wc[i].status != (enum ibv_wc_status)p->expect)
			p->bad++;
		if (!p->quiet || wc[i].status != (enum ibv_wc_status)p->expect)
			con_wc_print(p->id, &wc[i]);
		poll_check(p, &wc[i]);
	}
	return p->got >= p->want;
}

static int poll_cq(int argc, char **argv)
{
	const char *cmd = "poll cq";
	uint64_t count = 0, timeout = 2000;
	const char *expect_s = NULL, *flags_s = NULL, *from_s = NULL;
	bool quiet = false;
	struct poll_ctx p = { .expect = IBV_WC_SUCCESS };
	int pos = 1, r;
	struct con_opt o[] = {
		{ "count", OPT_U64, &count, NULL, 1u << 24 },
		{ "timeout", OPT_U64, &timeout, NULL, 3600 * 1000 },
		{ "expect", OPT_STR, &expect_s, NULL, 0 },
		{ "quiet", OPT_FLAG, &quiet, NULL, 0 },
		{ "len", OPT_SIZE, &p.len, &p.len_set, UINT32_MAX },
		{ "flags", OPT_STR, &flags_s, NULL, 0 },
		{ "src_qp", OPT_U64, &p.src_qp, &p.src_set, 0xffffff },
		{ "from", OPT_STR, &from_s, NULL, 0 },
		{ NULL, 0, NULL, NULL, 0 },
	};

	if (argc < 1)
		return con_err("poll cq: usage: poll cq <id> [<count> [<timeout-ms>]] [expect <status>] "
			       "[len <n>] [flags grh,imm,inv] [src_qp <n> | from <qp>] [quiet]");
	p.c = con_get_cq(cmd, argv[0], &p.id);
	if (p.c == NULL)
		return -1;
	if (p.c->busy)
		return con_err("poll cq: cq %d is polled by traffic (traffic stop first)", p.id);
	/* positional count and timeout */
	if (argc > pos && con_u64(argv[pos], &count) == 0) {
		pos++;
		if (argc > pos && con_u64(argv[pos], &timeout) == 0)
			pos++;
	}
	if (con_opts(cmd, argc - pos, argv + pos, o))
		return -1;
	if (expect_s) {
		p.expect = con_wc_status_by_name(expect_s);
		if (p.expect < 0)
			return con_err("poll cq: unknown status '%s'", expect_s);
	}
	if (from_s) {
		struct con_qp *fq;

		if (p.src_set)
			return con_err("poll cq: give src_qp <qpn> or from <qp>, not both");
		if ((fq = con_get_qp(cmd, from_s, NULL)) == NULL)
			return -1;
		p.src_qp = fq->qp->qp_num;
		p.src_set = true;
	}
	if (flags_s) {
		char tmp[64], *save = NULL;

		if (strlen(flags_s) >= sizeof(tmp))
			return con_err("poll cq: flags: a comma list of grh, imm, inv");
		strcpy(tmp, flags_s);
		for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
			size_t i;

			for (i = 0; i < RTE_DIM(wc_flag_names); i++)
				if (strcmp(t, wc_flag_names[i].name) == 0)
					break;
			if (i == RTE_DIM(wc_flag_names))
				return con_err("poll cq: unknown flag '%s' (grh, imm, inv)", t);
			p.flags |= wc_flag_names[i].bit;
		}
	}
	p.quiet = quiet;
	if (count == 0) {
		/* what is there now */
		p.want = UINT64_MAX;
		for (;;) {
			uint64_t before = p.got;

			poll_done(&p);
			if (p.got == before || p.got >= 4096)
				break;
		}
		if (p.got == 0)
			printf("cq %d: empty\n", p.id);
		else if (quiet)
			printf("cq %d: %" PRIu64 " completion%s\n", p.id, p.got, p.got == 1 ? "" : "s");
		if (p.bad)
			return con_err("poll cq %d: %" PRIu64 " completion%s with status other than %s",
				       p.id, p.bad, p.bad == 1 ? "" : "s",
				       con_wc_status_name((enum ibv_wc_status)p.expect));
		return p.mismatch ? -1 : 0;
	}
	p.want = count;
	r = con_wait(timeout * 1000 + 1, poll_done, &p);
	if (quiet || r)
		printf("cq %d: %" PRIu64 " of %" PRIu64 " completion%s\n", p.id, p.got, count,
		       count == 1 ? "" : "s");
	if (r)
		return con_err("poll cq %d: %s after %" PRIu64 " ms with %" PRIu64 " of %" PRIu64
			       " completion%s", p.id, r == -EINTR ? "interrupted" : "timed out",
			       timeout, p.got, count, count == 1 ? "" : "s");
	if (p.bad)
		return con_err("poll cq %d: %" PRIu64 " completion%s with status other than %s", p.id,
			       p.bad, p.bad == 1 ? "" : "s",
			       con_wc_status_name((enum ibv_wc_status)p.expect));
	return p.mismatch ? -1 : 0;
}

#define POST_OPTS "[mr <mr>] [off <o>] [len <l>] | [sge <mr>:<off>:<len>,...]"
#define POST_FLAGS "[count <n>] [inline] [unsig] [fence] [solicited] [wrid <n>] [wait [timeout <ms>] [expect <status>]] [nocheck]"
#define POST_REMOTE "[rmr <mr>] [roff <o>] | [rmw <mw>] [roff <o>] | [raddr <a> rkey <k>]"
#define POST_UD "[ah <ah> qpn <n> [qkey <k>] | ah <ah> rqp <qp>]"

const struct con_cmd con_cmds_post[] = {
	{ "post", "post send", "<qp> " POST_OPTS " " POST_UD " " POST_FLAGS,
	  "SEND (the peer needs a posted receive). Local data: mr (default: the QP's PD's lowest MR) "
	  "from off, len (default: the rest of the MR), or an SGE list. RC, UC; UD: to ah, qpn and qkey "
	  "(default: ours), or rqp (a local UD QP's QPN and qkey); one packet at most", post_send },
	{ "post", "post send_imm", "<qp> " POST_OPTS " [imm <v>] " POST_UD " " POST_FLAGS,
	  "SEND with immediate (RC, UC, UD)", post_send_imm },
	{ "post", "post send_inv", "<qp> " POST_OPTS " mw <mw> | rkey <k> " POST_FLAGS,
	  "SEND with invalidate (RC): the receiver invalidates that type 2 window (bound by its QP)", post_send_inv },
	{ "post", "post write", "<qp> " POST_OPTS " " POST_REMOTE " " POST_FLAGS,
	  "RDMA WRITE to rmr (default: the peer QP's PD's lowest MR) at roff, through window rmw at roff, "
	  "or to raddr/rkey (RC, UC)", post_write },
	{ "post", "post write_imm", "<qp> " POST_OPTS " " POST_REMOTE " [imm <v>] " POST_FLAGS,
	  "RDMA WRITE with immediate (consumes a receive at the peer; RC, UC)", post_write_imm },
	{ "post", "post read", "<qp> " POST_OPTS " " POST_REMOTE " " POST_FLAGS,
	  "RDMA READ from the remote range into the local one (RC)", post_read },
	{ "post", "post cas", "<qp> [mr <mr>] [off <o>] " POST_REMOTE " compare <v> swap <v> " POST_FLAGS,
	  "atomic compare and swap on 8 remote bytes; the original value lands in 8 local bytes (RC)", post_cas },
	{ "post", "post faa", "<qp> [mr <mr>] [off <o>] " POST_REMOTE " add <v> " POST_FLAGS,
	  "atomic fetch and add (default add 1; RC)", post_faa },
	{ "post", "post bind_mw", "<qp> mw <mw> [mr <mr>] [off <o>] [len <l>] [access rw,rr,ra] [unbind] " POST_FLAGS,
	  "bind a window to a range of a region (default: the PD's first MR with mw access, all of it; "
	  "access rw,rr). Type 2: IBV_WR_BIND_MW, tied to this QP; type 1: ibv_bind_mw(3), unbind with 'unbind'. "
	  "The window takes the next rkey (RC, UC)", post_bind_mw },
	{ "post", "post local_inv", "<qp> mw <mw> | rkey <k> " POST_FLAGS,
	  "invalidate a type 2 window (RC, UC)", post_local_inv },
	{ "post", "post recv", "<qp> " POST_OPTS " [count <n>] [wrid <n>]",
	  "post receive WQEs (UD: the first 40 B of each take the GRH; a QP on an SRQ: post srq recv)", post_recv },
	{ "post", "poll cq", "<id> [<count> [<timeout-ms>]] [expect <status>] [len <n>] [flags grh,imm,inv] [src_qp <n> | from <qp>] [quiet]",
	  "print completions (every ibv_wc field). With a count, wait for that many (default timeout 2000 ms) "
	  "and fail on fewer; any status but success (or the expected one) fails. len (byte_len), flags and "
	  "src_qp (from: a local QP's QPN) check each completion, a data check each", poll_cq },
	{ NULL, NULL, NULL, NULL, NULL },
};
