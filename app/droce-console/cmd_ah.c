/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address handles: where a UD send goes. RoCE addresses by GID: an
 * IPv4-mapped one (RoCEv2 over IPv4, from GID index 1; a plain IPv4 address
 * is taken as ::ffff:a.b.c.d) or a link-local one (over IPv6, from GID 0),
 * a local device's or a remote node's. A send names the AH, the destination QPN and its Q_Key:
 * post send <ud-qp> ah <id> qpn <n> qkey <k>.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <arpa/inet.h>

#include "console.h"

static bool ah_used(int i) { return g.ahs[i].used; }

static int lowest_pd_on_dev(int dev)
{
	for (int i = 0; i < CON_MAX_PD; i++)
		if (g.pds[i].used && g.pds[i].dev == dev)
			return i;
	return -1;
}

static int create_ah(int argc, char **argv)
{
	const char *cmd = "create ah";
	uint64_t sgid_index = 1, hop_limit = 64, tclass = 0;
	const char *pd_s = NULL;
	bool sgid_set = false;
	struct con_opt o[] = {
		{ "pd", OPT_STR, &pd_s, NULL, 0 },
		{ "sgid_index", OPT_U64, &sgid_index, &sgid_set, UINT8_MAX },
		{ "hop_limit", OPT_U64, &hop_limit, NULL, UINT8_MAX },
		{ "tclass", OPT_U64, &tclass, NULL, UINT8_MAX },
		{ NULL, 0, NULL, NULL, 0 },
	};
	struct ibv_ah_attr a;
	union ibv_gid gid;
	struct ibv_ah *ah;
	char gs[INET6_ADDRSTRLEN];
	int d, pdi, id;

	if (argc < 2)
		return con_err("create ah: usage: create ah <dev> <gid>|<a.b.c.d> [pd <pd>] [sgid_index <n>] "
			       "[hop_limit <n>] [tclass <n>]");
	if (con_get_dev(cmd, argv[0], &d) == NULL)
		return -1;
	if (con_gid_parse(argv[1], &gid))
		return con_err("create ah: '%s' is neither a GID nor an IPv4 address", argv[1]);
	if (con_opts(cmd, argc - 2, argv + 2, o))
		return -1;
	if (!sgid_set && !con_gid_is_v4(&gid))
		sgid_index = 0;		/* link-local: from GID 0 (RoCEv2 over IPv6) */
	if (pd_s) {
		if (con_get_pd(cmd, pd_s, &pdi) == NULL)
			return -1;
		if (g.pds[pdi].dev != d)
			return con_err("create ah: pd %d is on dev %d, not dev %d", pdi, g.pds[pdi].dev, d);
	} else if ((pdi = lowest_pd_on_dev(d)) < 0) {
		return con_err("create ah: dev %d has no PD (create pd %d)", d, d);
	}
	id = con_free_id(ah_used, CON_MAX_AH);
	if (id < 0)
		return con_err("create ah: the console holds %d AHs at most", CON_MAX_AH);
	memset(&a, 0, sizeof(a));
	a.is_global = 1;
	a.port_num = 1;
	a.grh.dgid = gid;
	a.grh.sgid_index = (uint8_t)sgid_index;
	a.grh.hop_limit = (uint8_t)hop_limit;
	a.grh.traffic_class = (uint8_t)tclass;
	con_gid_str(&gid, gs, sizeof(gs));
	ah = ibv_create_ah(g.pds[pdi].pd, &a);
	if (ah == NULL) {
		int e = errno;

		return con_err("create ah: ibv_create_ah(%s, sgid_index %" PRIu64 "): %s%s", gs,
			       sgid_index, strerror(e),
			       e == EINVAL ? " (an IPv4-mapped GID from sgid_index 1, or a link-local one from 0)" : "");
	}
	g.ahs[id] = (struct con_ah){ .used = true, .pd = pdi, .ah = ah, .dgid = gid,
				     .sgid_index = (uint8_t)sgid_index,
				     .hop_limit = (uint8_t)hop_limit, .tclass = (uint8_t)tclass };
	printf("ah %d created: pd %d (dev %d, %s) -> %s\n", id, pdi, d,
	       g.devs[d].dev->args.name, gs);
	return 0;
}

int ah_destroy_id(int id)
{
	int ret = ibv_destroy_ah(g.ahs[id].ah);

	if (ret)
		return con_err("destroy ah %d: ibv_destroy_ah: %s", id, strerror(ret));
	g.ahs[id].used = false;
	printf("ah %d destroyed\n", id);
	return 0;
}

static int destroy_ah(int argc, char **argv)
{
	int id;

	if (argc != 1)
		return con_err("destroy ah: usage: destroy ah <id>");
	if (con_get_ah("destroy ah", argv[0], &id) == NULL)
		return -1;
	return ah_destroy_id(id);
}

void ah_print(int i)
{
	const struct con_ah *a = &g.ahs[i];
	char gs[INET6_ADDRSTRLEN], local[IBV_SYSFS_NAME_MAX + 24] = "";

	con_gid_str(&a->dgid, gs, sizeof(gs));
	/* A local device's GID: say which. */
	for (int d = 0; d < g.nb_devs; d++)
		for (int k = 0; k < 2; k++) {
			union ibv_gid lg;

			if (ibv_query_gid(g.devs[d].ctx, 1, k, &lg) == 0 &&
			    memcmp(&lg, &a->dgid, sizeof(lg)) == 0)
				snprintf(local, sizeof(local), " (dev %d, %s)", d,
					 g.devs[d].dev->args.name);
		}
	printf("ah %-3d pd %d (%s)  -> %s%s  sgid_index %u  hop_limit %u  tclass %u\n", i, a->pd,
	       g.devs[con_pd_dev(a->pd)].dev->args.name, gs, local, a->sgid_index, a->hop_limit,
	       a->tclass);
}

static int show_ah(int argc, char **argv)
{
	int id, n = 0;

	if (argc > 1)
		return con_err("show ah: usage: show ah [<id>]");
	if (argc == 1) {
		if (con_get_ah("show ah", argv[0], &id) == NULL)
			return -1;
		ah_print(id);
		return 0;
	}
	for (int i = 0; i < CON_MAX_AH; i++)
		if (g.ahs[i].used) {
			ah_print(i);
			n++;
		}
	if (n == 0)
		printf("no ah (create ah <dev> <gid>)\n");
	return 0;
}

const struct con_cmd con_cmds_ah[] = {
	{ "ah", "create ah", "<dev> <gid>|<a.b.c.d> [pd <pd>] [sgid_index <n>] [hop_limit <n>] [tclass <n>]",
	  "address handle to a GID (a local device's or a remote one; an IPv4 address is IPv4-mapped), "
	  "on the device's lowest PD unless pd is given", create_ah },
	{ "ah", "destroy ah", "<id>", "destroy an address handle", destroy_ah },
	{ "ah", "show ah", "[<id>]", "address handles: PD, destination GID (and which local device it is)", show_ah },
	{ "ah", "show ahs", "", "same as show ah", show_ah },
	{ NULL, NULL, NULL, NULL, NULL },
};
