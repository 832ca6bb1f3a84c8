/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Posting work requests (send, send_imm, write, write_imm, read, cas, faa;
 * recv) and polling completions. An operation is a row of con_ops[]; its
 * flags say what it needs (a remote address, an immediate, atomic operands,
 * a receive at the peer), so UD/UC/SRQ operations add rows and options,
 * not parsers.
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

static int do_post(int op, int argc, char **argv)
{
	const struct con_opdesc *od = &con_ops[op];
	char cmd[32];
	uint64_t off = 0, len = 0, roff = 0, raddr = 0, rkey = 0, imm = 0x1234abcd;
	uint64_t compare = 0, swap = 0, add = 1, count = 1, wrid = 0, timeout = 5000;
	uint64_t lkey = 0;
	const char *mr_s = NULL, *rmr_s = NULL, *sge_s = NULL, *expect_s = NULL;
	bool len_set = false, raddr_set = false, rkey_set = false, wrid_set = false;
	bool lkey_set = false, inl = false, unsig = false, fence = false;
	bool solicited = false, wait = false, nocheck = false, verbose = false;
	struct con_opt o[] = {
		{ "mr", OPT_STR, &mr_s, NULL, 0 },
		{ "off", OPT_SIZE, &off, NULL, 0 },
		{ "len", OPT_SIZE, &len, &len_set, UINT32_MAX },
		{ "size", OPT_SIZE, &len, &len_set, UINT32_MAX },
		{ "sge", OPT_STR, &sge_s, NULL, 0 },
		{ "lkey", OPT_U64, &lkey, &lkey_set, UINT32_MAX },
		{ "rmr", OPT_STR, &rmr_s, NULL, 0 },
		{ "roff", OPT_SIZE, &roff, NULL, 0 },
		{ "raddr", OPT_U64, &raddr, &raddr_set, 0 },
		{ "rkey", OPT_U64, &rkey, &rkey_set, UINT32_MAX },
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
	int qid, nsge = 0, lmi = -1, rmi = -1, expect = IBV_WC_SUCCESS, ret = 0;
	uint64_t total = 0, posted = 0, t0, dt;
	char where[160];

	snprintf(cmd, sizeof(cmd), "post %s", od->name);
	if (argc < 1)
		return con_err("%s: usage: post %s <qp> [options] (help post)", cmd, od->name);
	q = con_get_qp(cmd, argv[0], &qid);
	if (q == NULL || con_opts(cmd, argc - 1, argv + 1, o))
		return -1;
	if (q->busy)
		return con_err("%s: qp %d is running traffic (traffic stop first)", cmd, qid);
	if (expect_s) {
		expect = con_wc_status_by_name(expect_s);
		if (expect < 0)
			return con_err("%s: unknown status '%s' (success, rem_access_err, loc_prot_err, "
				       "wr_flush_err, retry_exc_err, ...)", cmd, expect_s);
		wait = true;
	}
	if (inl && !(od->flags & CON_OPF_INLINE) && !nocheck)
		return con_err("%s: %s cannot carry inline data", cmd, od->verbs);
	if ((od->flags & CON_OPF_ATOMIC) && !len_set) {
		len = 8;
		len_set = true;
	}
	/* Local SGEs. */
	if (sge_s) {
		if (mr_s || len_set)
			return con_err("%s: give either sge <list> or mr/off/len", cmd);
		if (parse_sges(cmd, sge_s, sge, &nsge, !nocheck, &total))
			return -1;
	} else {
		if (mr_s) {
			if ((lm = con_get_mr(cmd, mr_s, &lmi)) == NULL)
				return -1;
		} else {
			lmi = lowest_mr_on_pd(q->pd);
			if (lmi < 0)
				return con_err("%s: qp %d's pd %d has no MR (create mr %d <size>)", cmd,
					       qid, q->pd, q->pd);
			lm = &g.mrs[lmi];
		}
		if (off > lm->len && !nocheck)
			return con_err("%s: off %" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
				       cmd, off, lmi, lm->len);
		if (!len_set)
			len = off < lm->len ? RTE_MIN(lm->len - off, (uint64_t)UINT32_MAX) : 0;
		if (!nocheck && len > lm->len - off)
			return con_err("%s: %" PRIu64 " B at +%" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
				       cmd, len, off, lmi, lm->len);
		sge[0].addr = (uint64_t)(uintptr_t)lm->buf + off;
		sge[0].length = (uint32_t)len;
		sge[0].lkey = lm->mr->lkey;
		nsge = 1;
		total = len;
	}
	if (lkey_set)
		for (int i = 0; i < nsge; i++)
			sge[i].lkey = (uint32_t)lkey;
	if ((od->flags & CON_OPF_ATOMIC) && total != 8 && !nocheck)
		return con_err("%s: the original value lands in exactly 8 local bytes (len 8)", cmd);
	/* Remote address. */
	if (od->flags & CON_OPF_REMOTE) {
		if (raddr_set != rkey_set)
			return con_err("%s: raddr and rkey go together", cmd);
		if (!raddr_set) {
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
				return con_err("%s: give rmr <mr> (a local MR) or raddr <addr> rkey <key>", cmd);
			}
			if (!nocheck && (roff > rm->len || total > rm->len - roff))
				return con_err("%s: %" PRIu64 " B at +%" PRIu64 " is past the end of remote mr %d (%" PRIu64 " B)",
					       cmd, total, roff, rmi, rm->len);
			raddr = (uint64_t)(uintptr_t)rm->buf + roff;
			rkey = rm->mr->rkey;
		}
	} else if (rmr_s || raddr_set || rkey_set) {
		return con_err("%s: %s takes no remote address (rmr/raddr/rkey)", cmd, od->verbs);
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
		uint64_t first_id = wrid_set ? wrid : CON_WRID(op, q->seq + 1);

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
				uint64_t id = wrid_set ? wrid + posted + i : CON_WRID(op, ++q->seq);

				memset(wr, 0, sizeof(*wr));
				wr->wr_id = id;
				wr->sg_list = sge;
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
				if (od->flags & CON_OPF_ATOMIC) {
					wr->wr.atomic.remote_addr = raddr;
					wr->wr.atomic.rkey = (uint32_t)rkey;
					wr->wr.atomic.compare_add = op == CON_OP_CAS ? compare : add;
					wr->wr.atomic.swap = swap;
				} else if (od->flags & CON_OPF_REMOTE) {
					wr->wr.rdma.remote_addr = raddr;
					wr->wr.rdma.rkey = (uint32_t)rkey;
				}
			}
			ret = ibv_post_send(q->qp, wrs, &bad);
			if (ret) {
				uint64_t ok = bad ? (uint64_t)(bad - wrs) : 0;

				posted += ok;
				g.tally.posted[op] += ok;
				con_err("%s: ibv_post_send: %s after %" PRIu64 " of %" PRIu64 " WR%s%s", cmd,
					strerror(ret), posted, count, count == 1 ? "" : "s",
					ret == ENOMEM ? " (send queue full: use wait, or a smaller count)" :
					ret == EINVAL ? " (QP not in RTS, or too many SGEs / too much inline data)" : "");
				break;
			}
			posted += chunk;
			g.tally.posted[op] += chunk;
			g.tally.max_len[op] = RTE_MAX(g.tally.max_len[op], total);
			if (wait) {
				int r;

				w.first = wrid_set ? wrid : first_id;
				w.last = wrid_set ? wrid + posted - 1 : CON_WRID(op, q->seq);
				w.want += signaled;
				r = con_wait(timeout * 1000, wait_done, &w);
				if (r) {
					printf("error: %s: %s after %" PRIu64 " ms: %" PRIu64 " of %" PRIu64
					       " completion%s (qp %d is %s; see 'show qp %d')%s\n", cmd,
					       r == -EINTR ? "interrupted" : "timed out", timeout,
					       w.got, w.want, w.want == 1 ? "" : "s", qid,
					       con_qp_state_str(droce_qp_of(q->qp)->state), qid,
					       (od->flags & CON_OPF_RECV) ?
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
		if (lm)
			snprintf(where, sizeof(where), "mr %d +%" PRIu64, lmi, off);
		else
			snprintf(where, sizeof(where), "%d SGEs", nsge);
		if (od->flags & CON_OPF_REMOTE) {
			size_t l = strlen(where);

			if (rm)
				snprintf(where + l, sizeof(where) - l, " %s mr %d +%" PRIu64,
					 op == CON_OP_READ ? "<-" : "->", rmi, roff);
			else
				snprintf(where + l, sizeof(where) - l, " %s 0x%" PRIx64 " rkey 0x%" PRIx64,
					 op == CON_OP_READ ? "<-" : "->", raddr, rkey);
		}
		printf("qp %d: posted %" PRIu64 " x %s len %" PRIu64 " (%s)%s%s%s", qid, posted,
		       od->verbs, total, where, unsig ? " unsignaled" : "",
		       inl ? " inline" : "", fence ? " fence" : "");
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
		if (!w.bad && dt && op != CON_OP_CAS && op != CON_OP_FAA)
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
DEF_POST(write)
DEF_POST(write_imm)
DEF_POST(read)
DEF_POST(cas)
DEF_POST(faa)
#undef DEF_POST

static int post_recv(int argc, char **argv)
{
	const char *cmd = "post recv";
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
	struct con_qp *q;
	struct con_mr *m = NULL;
	int qid, mi = -1, nsge = 0, ret;
	uint64_t total = 0, first;

	if (argc < 1)
		return con_err("post recv: usage: post recv <qp> [mr <mr>] [off <o>] [len <l>] | [sge <mr>:<off>:<len>,...] [count <n>] [wrid <n>]");
	q = con_get_qp(cmd, argv[0], &qid);
	if (q == NULL || con_opts(cmd, argc - 1, argv + 1, o))
		return -1;
	if (q->busy)
		return con_err("post recv: qp %d is running traffic (traffic stop first)", qid);
	if (sge_s) {
		if (mr_s || len_set)
			return con_err("post recv: give either sge <list> or mr/off/len");
		if (parse_sges(cmd, sge_s, sge, &nsge, !nocheck, &total))
			return -1;
	} else {
		if (mr_s) {
			if ((m = con_get_mr(cmd, mr_s, &mi)) == NULL)
				return -1;
		} else {
			mi = lowest_mr_on_pd(q->pd);
			if (mi < 0)
				return con_err("post recv: qp %d's pd %d has no MR", qid, q->pd);
			m = &g.mrs[mi];
		}
		if (off > m->len && !nocheck)
			return con_err("post recv: off %" PRIu64 " is past the end of mr %d", off, mi);
		if (!len_set)
			len = off < m->len ? RTE_MIN(m->len - off, (uint64_t)UINT32_MAX) : 0;
		if (!nocheck && len > m->len - off)
			return con_err("post recv: %" PRIu64 " B at +%" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
				       len, off, mi, m->len);
		sge[0].addr = (uint64_t)(uintptr_t)m->buf + off;
		sge[0].length = (uint32_t)len;
		sge[0].lkey = m->mr->lkey;
		nsge = 1;
		total = len;
	}
	if (lkey_set)
		for (int i = 0; i < nsge; i++)
			sge[i].lkey = (uint32_t)lkey;
	wrs = calloc(count, sizeof(*wrs));
	if (wrs == NULL)
		return con_err("post recv: out of memory");
	first = wrid_set ? wrid : CON_WRID(CON_OP_RECV, q->seq + 1);
	for (uint64_t i = 0; i < count; i++) {
		wrs[i].wr_id = wrid_set ? wrid + i : CON_WRID(CON_OP_RECV, ++q->seq);
		wrs[i].sg_list = sge;
		wrs[i].num_sge = nsge;
		wrs[i].next = i + 1 < count ? &wrs[i + 1] : NULL;
	}
	ret = ibv_post_recv(q->qp, wrs, &bad);
	{
		uint64_t ok = ret ? (bad ? (uint64_t)(bad - wrs) : 0) : count;

		g.tally.posted[CON_OP_RECV] += ok;
		if (ok)
			g.tally.max_len[CON_OP_RECV] = RTE_MAX(g.tally.max_len[CON_OP_RECV], total);
		free(wrs);
		if (ret)
			return con_err("post recv: ibv_post_recv: %s after %" PRIu64 " of %" PRIu64 "%s",
				       strerror(ret), ok, count,
				       ret == ENOMEM ? " (receive queue full)" :
				       ret == EINVAL ? " (QP in RESET, or too many SGEs)" : "");
	}
	if (m)
		printf("qp %d: posted %" PRIu64 " x RECV len %" PRIu64 " (mr %d +%" PRIu64 "), wr_id 0x%" PRIx64 "%s\n",
		       qid, count, total, mi, off, first, count > 1 ? ".." : "");
	else
		printf("qp %d: posted %" PRIu64 " x RECV len %" PRIu64 " (%d SGEs), wr_id 0x%" PRIx64 "%s\n",
		       qid, count, total, nsge, first, count > 1 ? ".." : "");
	return 0;
}

struct poll_ctx {
	struct con_cq *c;
	int id;
	uint64_t want, got, bad;
	int expect;
	bool quiet;
};

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
	}
	return p->got >= p->want;
}

static int poll_cq(int argc, char **argv)
{
	const char *cmd = "poll cq";
	uint64_t count = 0, timeout = 2000;
	const char *expect_s = NULL;
	bool quiet = false;
	struct poll_ctx p = { .expect = IBV_WC_SUCCESS };
	int pos = 1, r;
	struct con_opt o[] = {
		{ "count", OPT_U64, &count, NULL, 1u << 24 },
		{ "timeout", OPT_U64, &timeout, NULL, 3600 * 1000 },
		{ "expect", OPT_STR, &expect_s, NULL, 0 },
		{ "quiet", OPT_FLAG, &quiet, NULL, 0 },
		{ NULL, 0, NULL, NULL, 0 },
	};

	if (argc < 1)
		return con_err("poll cq: usage: poll cq <id> [<count> [<timeout-ms>]] [expect <status>] [quiet]");
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
		return 0;
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
	return 0;
}

#define POST_OPTS "[mr <mr>] [off <o>] [len <l>] | [sge <mr>:<off>:<len>,...]"
#define POST_FLAGS "[count <n>] [inline] [unsig] [fence] [solicited] [wrid <n>] [wait [timeout <ms>] [expect <status>]] [nocheck]"

const struct con_cmd con_cmds_post[] = {
	{ "post", "post send", "<qp> " POST_OPTS " " POST_FLAGS,
	  "SEND (the peer needs a posted receive). Local data: mr (default: the QP's PD's lowest MR) "
	  "from off, len (default: the rest of the MR), or an SGE list", post_send },
	{ "post", "post send_imm", "<qp> " POST_OPTS " [imm <v>] " POST_FLAGS, "SEND with immediate", post_send_imm },
	{ "post", "post write", "<qp> " POST_OPTS " [rmr <mr>] [roff <o>] | [raddr <a> rkey <k>] " POST_FLAGS,
	  "RDMA WRITE to rmr (default: the peer QP's PD's lowest MR) at roff, or to raddr/rkey", post_write },
	{ "post", "post write_imm", "<qp> " POST_OPTS " [rmr <mr>] [roff <o>] | [raddr <a> rkey <k>] [imm <v>] " POST_FLAGS,
	  "RDMA WRITE with immediate (consumes a receive at the peer)", post_write_imm },
	{ "post", "post read", "<qp> " POST_OPTS " [rmr <mr>] [roff <o>] | [raddr <a> rkey <k>] " POST_FLAGS,
	  "RDMA READ from the remote range into the local one", post_read },
	{ "post", "post cas", "<qp> [mr <mr>] [off <o>] [rmr <mr>] [roff <o>] | [raddr <a> rkey <k>] compare <v> swap <v> " POST_FLAGS,
	  "atomic compare and swap on 8 remote bytes; the original value lands in 8 local bytes", post_cas },
	{ "post", "post faa", "<qp> [mr <mr>] [off <o>] [rmr <mr>] [roff <o>] | [raddr <a> rkey <k>] add <v> " POST_FLAGS,
	  "atomic fetch and add (default add 1)", post_faa },
	{ "post", "post recv", "<qp> " POST_OPTS " [count <n>] [wrid <n>]", "post receive WQEs", post_recv },
	{ "post", "poll cq", "<id> [<count> [<timeout-ms>]] [expect <status>] [quiet]",
	  "print completions (every ibv_wc field). With a count, wait for that many (default timeout 2000 ms) "
	  "and fail on fewer; any status but success (or the expected one) fails", poll_cq },
	{ NULL, NULL, NULL, NULL, NULL },
};
