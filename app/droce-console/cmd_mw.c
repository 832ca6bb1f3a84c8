/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows: an rkey for a sub-range of a region, with rights of its
 * own. Allocated here (ibv_alloc_mw), bound and invalidated by work
 * requests: post bind_mw (type 2: IBV_WR_BIND_MW, tied to the QP that binds
 * it; type 1: ibv_bind_mw), post local_inv, post send_inv (the receiver
 * invalidates). A window is the remote buffer of write/read/atomics with
 * 'rmw <id>'. Where a window is bound is read from the library's record,
 * which the engine keeps (droce_int.h), so 'show mw' is what the responder
 * will check.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>

#include "console.h"

static bool mw_used(int i) { return g.mws[i].used; }

static int create_mw(int argc, char **argv)
{
	const char *cmd = "create mw";
	enum ibv_mw_type type;
	struct con_pd *pd;
	struct ibv_mw *mw;
	int pdi, id;

	if (argc != 2)
		return con_err("create mw: usage: create mw <pd> type1|type2");
	pd = con_get_pd(cmd, argv[0], &pdi);
	if (pd == NULL)
		return -1;
	if (strcmp(argv[1], "type1") == 0 || strcmp(argv[1], "1") == 0)
		type = IBV_MW_TYPE_1;
	else if (strcmp(argv[1], "type2") == 0 || strcmp(argv[1], "2") == 0)
		type = IBV_MW_TYPE_2;
	else
		return con_err("create mw: the type is type1 or type2, not '%s'", argv[1]);
	id = con_free_id(mw_used, CON_MAX_MW);
	if (id < 0)
		return con_err("create mw: the console holds %d MWs at most", CON_MAX_MW);
	mw = ibv_alloc_mw(pd->pd, type);
	if (mw == NULL)
		return con_err("create mw: ibv_alloc_mw(type %d): %s", type == IBV_MW_TYPE_1 ? 1 : 2,
			       strerror(errno));
	g.mws[id] = (struct con_mw){ .used = true, .pd = pdi, .mw = mw };
	printf("mw %d created: pd %d (dev %d, %s), type %d, rkey 0x%08x, not bound (post bind_mw <qp> mw %d ...)\n",
	       id, pdi, pd->dev, g.devs[pd->dev].dev->args.name,
	       type == IBV_MW_TYPE_1 ? 1 : 2, mw->rkey, id);
	return 0;
}

int mw_destroy_id(int id)
{
	int ret = ibv_dealloc_mw(g.mws[id].mw);

	if (ret)
		return con_err("destroy mw %d: ibv_dealloc_mw: %s", id, strerror(ret));
	g.mws[id].used = false;
	printf("mw %d destroyed\n", id);
	return 0;
}

static int destroy_mw(int argc, char **argv)
{
	int id;

	if (argc != 1)
		return con_err("destroy mw: usage: destroy mw <id>");
	if (con_get_mw("destroy mw", argv[0], &id) == NULL)
		return -1;
	return mw_destroy_id(id);
}

#define PEEK(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

void mw_print(int i)
{
	const struct con_mw *m = &g.mws[i];
	const struct droce_mr *w = container_of(m->mw, struct droce_mr, ibv_mw);
	int dev = con_pd_dev(m->pd);
	uint32_t key = PEEK(w->key);
	char state[200], acc[64];

	if (PEEK(w->valid)) {
		const struct droce_mr *parent = PEEK(w->parent);
		int mri = parent ? con_mr_by_ibv(&parent->ibv) : -1;
		size_t n;

		if (mri >= 0)
			n = (size_t)snprintf(state, sizeof(state), "bound: mr %d +%" PRIu64 " len %" PRIu64,
					     mri, w->iova - (uint64_t)(uintptr_t)g.mrs[mri].buf, w->len);
		else
			n = (size_t)snprintf(state, sizeof(state), "bound: addr 0x%" PRIx64 " len %" PRIu64,
					     w->iova, w->len);
		n += (size_t)snprintf(state + n, sizeof(state) - n, " access %s",
				      con_access_str(PEEK(w->access), acc, sizeof(acc)));
		if (w->mw_type == 2) {
			int qi = con_qp_by_qpn(dev, PEEK(w->mw_qpn));

			if (qi >= 0)
				snprintf(state + n, sizeof(state) - n, ", to qp %d (QPN 0x%06x)", qi,
					 PEEK(w->mw_qpn));
			else
				snprintf(state + n, sizeof(state) - n, ", to QPN 0x%06x", PEEK(w->mw_qpn));
		}
	} else {
		snprintf(state, sizeof(state), "not bound%s",
			 w->mw_type == 2 && PEEK(w->iova) ? " (invalidated)" : "");
	}
	printf("mw %-3d pd %d (%s)  type %u  rkey 0x%08x  %s\n", i, m->pd,
	       g.devs[dev].dev->args.name, w->mw_type, m->mw->rkey, state);
	if (key != m->mw->rkey)
		printf("       (the library holds rkey 0x%08x: a bind is on its way, or failed)\n", key);
}

static int show_mw(int argc, char **argv)
{
	int id, n = 0;

	if (argc > 1)
		return con_err("show mw: usage: show mw [<id>]");
	if (argc == 1) {
		if (con_get_mw("show mw", argv[0], &id) == NULL)
			return -1;
		mw_print(id);
		return 0;
	}
	for (int i = 0; i < CON_MAX_MW; i++)
		if (g.mws[i].used) {
			mw_print(i);
			n++;
		}
	if (n == 0)
		printf("no mw (create mw <pd> type1|type2)\n");
	return 0;
}

const struct con_cmd con_cmds_mw[] = {
	{ "mw", "create mw", "<pd> type1|type2",
	  "allocate a memory window (bind it with post bind_mw; the region needs mw access)", create_mw },
	{ "mw", "destroy mw", "<id>", "deallocate a window (bound or not)", destroy_mw },
	{ "mw", "show mw", "[<id>]", "windows: type, rkey, where bound (region, range, rights, the QP of a type 2)", show_mw },
	{ "mw", "show mws", "", "same as show mw", show_mw },
	{ NULL, NULL, NULL, NULL, NULL },
};
