/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Shared receive queues: creation with a limit, the limit re-armed
 * (ibv_modify_srq), receives posted to them, and what they hold. QPs take
 * an SRQ at creation (create qp ... srq <id>); the responder of each claims
 * a WQE when a message starts, so the QPs sharing one never race on it.
 * When a claim leaves fewer WQEs than the armed limit, the SRQ's device
 * gets IBV_EVENT_SRQ_LIMIT_REACHED once and the limit disarms (show events,
 * wait event srq_limit_reached).
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "console.h"

static bool srq_used(int i) { return g.srqs[i].used; }

uint32_t srq_pending(const struct con_srq *s)
{
	const struct droce_srq *ds = container_of(s->srq, struct droce_srq, ibv);

	return __atomic_load_n(&ds->wq.db, __ATOMIC_ACQUIRE) -
	       __atomic_load_n(&ds->wq.ci, __ATOMIC_ACQUIRE);
}

static int create_srq(int argc, char **argv)
{
	const char *cmd = "create srq";
	uint64_t size, sges = 4, limit = 0;
	struct con_opt o[] = {
		{ "limit", OPT_U64, &limit, NULL, DROCE_MAX_QP_WR },
		{ NULL, 0, NULL, NULL, 0 },
	};
	struct ibv_srq_init_attr ia;
	struct con_pd *pd;
	struct ibv_srq *srq;
	int pdi, id, pos = 2;

	if (argc < 2)
		return con_err("create srq: usage: create srq <pd> <size> [<sges>] [limit <n>]");
	pd = con_get_pd(cmd, argv[0], &pdi);
	if (pd == NULL || con_arg_size(cmd, "size", argv[1], &size, DROCE_MAX_QP_WR))
		return -1;
	if (size == 0)
		return con_err("create srq: size must be at least 1 WQE");
	if (argc > pos && strcmp(argv[pos], "limit") != 0) {
		if (con_arg_u64(cmd, "sges", argv[pos], &sges, DROCE_MAX_SGE))
			return -1;
		pos++;
	}
	if (con_opts(cmd, argc - pos, argv + pos, o))
		return -1;
	if (limit > size)
		return con_err("create srq: limit %" PRIu64 " is more than the size (%" PRIu64 ")",
			       limit, size);
	id = con_free_id(srq_used, CON_MAX_SRQ);
	if (id < 0)
		return con_err("create srq: the console holds %d SRQs at most", CON_MAX_SRQ);
	memset(&ia, 0, sizeof(ia));
	ia.attr.max_wr = (uint32_t)size;
	ia.attr.max_sge = (uint32_t)sges;
	ia.attr.srq_limit = (uint32_t)limit;
	srq = ibv_create_srq(pd->pd, &ia);
	if (srq == NULL)
		return con_err("create srq: ibv_create_srq(%" PRIu64 " WQEs, %" PRIu64 " SGEs, limit %" PRIu64
			       "): %s", size, sges, limit, strerror(errno));
	g.srqs[id] = (struct con_srq){ .used = true, .pd = pdi, .srq = srq,
				       .size = ia.attr.max_wr, .max_sge = ia.attr.max_sge };
	printf("srq %d created: pd %d (dev %d, %s), %u WQEs, %u SGEs each, limit %" PRIu64 "%s\n",
	       id, pdi, pd->dev, g.devs[pd->dev].dev->args.name, ia.attr.max_wr,
	       ia.attr.max_sge, limit, limit ? " (armed)" : " (not armed)");
	return 0;
}

int srq_destroy_id(int id)
{
	int ret;

	for (int i = 0; i < CON_MAX_QP; i++)
		if (g.qps[i].used && g.qps[i].srq == id)
			return con_err("destroy srq: srq %d is used by qp %d (destroy the QP first)", id, i);
	ret = ibv_destroy_srq(g.srqs[id].srq);
	if (ret)
		return con_err("destroy srq %d: ibv_destroy_srq: %s", id, strerror(ret));
	g.srqs[id].used = false;
	printf("srq %d destroyed\n", id);
	return 0;
}

static int destroy_srq(int argc, char **argv)
{
	int id;

	if (argc != 1)
		return con_err("destroy srq: usage: destroy srq <id>");
	if (con_get_srq("destroy srq", argv[0], &id) == NULL)
		return -1;
	return srq_destroy_id(id);
}

static int modify_srq(int argc, char **argv)
{
	const char *cmd = "modify srq";
	struct ibv_srq_attr a;
	struct con_srq *s;
	uint64_t limit;
	int id, ret;

	if (argc != 3 || strcmp(argv[1], "limit") != 0)
		return con_err("modify srq: usage: modify srq <id> limit <n> (0 disarms; the size "
			       "cannot change)");
	s = con_get_srq(cmd, argv[0], &id);
	if (s == NULL || con_arg_u64(cmd, "limit", argv[2], &limit, UINT32_MAX))
		return -1;
	memset(&a, 0, sizeof(a));
	a.srq_limit = (uint32_t)limit;
	ret = ibv_modify_srq(s->srq, &a, IBV_SRQ_LIMIT);
	if (ret)
		return con_err("modify srq %d: ibv_modify_srq(limit %" PRIu64 "): %s%s", id, limit,
			       strerror(ret), ret == EINVAL ? " (at most the SRQ's size)" : "");
	printf("srq %d: limit %" PRIu64 "%s; %u WQEs posted\n", id, limit,
	       limit ? " armed (IBV_EVENT_SRQ_LIMIT_REACHED when fewer remain)" : ": not armed",
	       srq_pending(s));
	return 0;
}

void srq_print(int i)
{
	const struct con_srq *s = &g.srqs[i];
	struct ibv_srq_attr a;
	char qps[128] = "";
	size_t n = 0;

	for (int k = 0; k < CON_MAX_QP && n < sizeof(qps) - 8; k++)
		if (g.qps[k].used && g.qps[k].srq == i)
			n += (size_t)snprintf(qps + n, sizeof(qps) - n, "%s%d", n ? "," : "", k);
	if (ibv_query_srq(s->srq, &a))
		memset(&a, 0, sizeof(a));
	printf("srq %-3d pd %d (%s)  size %u  sge %u  posted %u  limit %u %s  qps %s\n", i,
	       s->pd, g.devs[con_pd_dev(s->pd)].dev->args.name, a.max_wr, a.max_sge,
	       srq_pending(s), a.srq_limit, a.srq_limit ? "armed" : "(not armed)",
	       n ? qps : "none");
}

static int show_srq(int argc, char **argv)
{
	int id, n = 0;

	if (argc > 1)
		return con_err("show srq: usage: show srq [<id>]");
	if (argc == 1) {
		if (con_get_srq("show srq", argv[0], &id) == NULL)
			return -1;
		srq_print(id);
		return 0;
	}
	for (int i = 0; i < CON_MAX_SRQ; i++)
		if (g.srqs[i].used) {
			srq_print(i);
			n++;
		}
	if (n == 0)
		printf("no srq (create srq <pd> <size>)\n");
	return 0;
}

static int post_srq_recv(int argc, char **argv)
{
	int id;

	if (argc < 1)
		return con_err("post srq recv: usage: post srq recv <srq> [mr <mr>] [off <o>] [len <l>] | "
			       "[sge <mr>:<off>:<len>,...] [count <n>] [wrid <n>]");
	if (con_get_srq("post srq recv", argv[0], &id) == NULL)
		return -1;
	return post_recv_common("post srq recv", -1, id, argc - 1, argv + 1);
}

const struct con_cmd con_cmds_srq[] = {
	{ "srq", "create srq", "<pd> <size> [<sges>] [limit <n>]",
	  "shared receive queue (default 4 SGEs per WQE; limit: IBV_EVENT_SRQ_LIMIT_REACHED when a claim "
	  "leaves fewer WQEs, 0: not armed). QPs use it with 'create qp ... srq <id>'", create_srq },
	{ "srq", "destroy srq", "<id>", "destroy an SRQ (no QP may use it)", destroy_srq },
	{ "srq", "modify srq", "<id> limit <n>", "arm the limit again (it disarms when it fires), or 0 to disarm", modify_srq },
	{ "srq", "show srq", "[<id>]", "SRQs: size, SGEs, WQEs posted and not claimed, limit and whether armed, QPs", show_srq },
	{ "srq", "show srqs", "", "same as show srq", show_srq },
	{ "srq", "post srq recv", "<srq> [mr <mr>] [off <o>] [len <l>] | [sge <mr>:<off>:<len>,...] [count <n>] [wrid <n>]",
	  "post receive WQEs to an SRQ (any QP on it may take each)", post_srq_recv },
	{ NULL, NULL, NULL, NULL, NULL },
};
