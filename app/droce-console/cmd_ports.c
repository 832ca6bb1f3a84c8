/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Ports and devices: ethdev ports, droce devices, addresses and GIDs,
 * ibv_query_device/port, counters, engine lcores, port configuration.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_ethdev.h>
#include <rte_launch.h>
#include <rte_lcore.h>

#include "console.h"

static int dev_of_port(uint16_t port)
{
	for (int i = 0; i < g.nb_devs; i++)
		if (g.devs[i].port == port)
			return i;
	return -1;
}

/* "[<dev>]": one device, or all. Returns the range in [*lo, *hi). */
static int dev_range(const char *cmd, int argc, char **argv, int *lo, int *hi)
{
	int id;

	if (argc > 1)
		return con_err("%s: usage: %s [<dev>]", cmd, cmd);
	if (argc == 0) {
		*lo = 0;
		*hi = g.nb_devs;
		return 0;
	}
	if (con_get_dev(cmd, argv[0], &id) == NULL)
		return -1;
	*lo = id;
	*hi = id + 1;
	return 0;
}

static int show_ports(int argc, char **argv)
{
	uint16_t p;

	(void)argv;
	if (argc)
		return con_err("show ports takes no arguments");
	printf("%-4s %-22s %-5s %-17s %5s %12s %12s %8s %8s %8s  %s\n", "port",
	       "name", "link", "mac", "mtu", "rx-pkts", "tx-pkts", "rx-miss",
	       "rx-err", "tx-err", "droce");
	RTE_ETH_FOREACH_DEV(p) {
		char name[RTE_ETH_NAME_MAX_LEN] = "?";
		char mac[RTE_ETHER_ADDR_FMT_SIZE] = "?";
		struct rte_ether_addr ea;
		struct rte_eth_link link;
		struct rte_eth_stats st;
		uint16_t mtu = 0;
		int d = dev_of_port(p);
		char dn[96] = "-";

		rte_eth_dev_get_name_by_port(p, name);
		if (rte_eth_macaddr_get(p, &ea) == 0)
			rte_ether_format_addr(mac, sizeof(mac), &ea);
		memset(&link, 0, sizeof(link));
		rte_eth_link_get_nowait(p, &link);
		memset(&st, 0, sizeof(st));
		rte_eth_stats_get(p, &st);
		rte_eth_dev_get_mtu(p, &mtu);
		if (d >= 0)
			snprintf(dn, sizeof(dn), "dev %d (%s)", d,
				 g.devs[d].dev->args.name);
		printf("%-4u %-22s %-5s %-17s %5u %12" PRIu64 " %12" PRIu64 " %8" PRIu64
		       " %8" PRIu64 " %8" PRIu64 "  %s\n", p, name,
		       link.link_status ? "up" : "down", mac, mtu, st.ipackets,
		       st.opackets, st.imissed, st.ierrors, st.oerrors, dn);
	}
	return 0;
}

static void engine_str(const struct droce_dev *d, char *buf, size_t len)
{
	if (d->args.lcore < 0)
		snprintf(buf, len, "app-driven");
	else
		snprintf(buf, len, "lcore %d", d->args.lcore);
}

static int show_devices(int argc, char **argv)
{
	(void)argv;
	if (argc)
		return con_err("show devices takes no arguments");
	printf("%-3s %-8s %-4s %-15s %-17s %-7s %-10s %4s %4s %4s %4s\n", "dev",
	       "name", "port", "ip", "mac", "max-mtu", "engine", "pds", "mrs",
	       "cqs", "qps");
	for (int i = 0; i < g.nb_devs; i++) {
		const struct droce_dev *d = g.devs[i].dev;
		char ip[INET_ADDRSTRLEN], mac[RTE_ETHER_ADDR_FMT_SIZE], eng[24];
		uint32_t a = __atomic_load_n(&d->args.ip, __ATOMIC_RELAXED);

		inet_ntop(AF_INET, &a, ip, sizeof(ip));
		rte_ether_format_addr(mac, sizeof(mac), &d->mac);
		engine_str(d, eng, sizeof(eng));
		printf("%-3d %-8s %-4u %-15s %-17s %-7u %-10s %4u %4u %4u %4u\n", i,
		       d->args.name, g.devs[i].port, ip, mac, d->args.max_mtu, eng,
		       d->nb_pd, d->nb_mr, d->nb_cq, d->nb_qp);
	}
	return 0;
}

static int show_gid(int argc, char **argv)
{
	int lo = 0, hi = 0;

	if (dev_range("show gid", argc, argv, &lo, &hi))
		return -1;
	printf("%-3s %-8s %-5s %-40s %s\n", "dev", "name", "index", "gid", "type");
	for (int i = lo; i < hi; i++) {
		struct ibv_port_attr pa;
		int n = 2;

		if (ibv_query_port(g.devs[i].ctx, 1, &pa) == 0)
			n = pa.gid_tbl_len;
		for (int k = 0; k < n; k++) {
			struct ibv_gid_entry e;
			char gs[INET6_ADDRSTRLEN];
			int ret = ibv_query_gid_ex(g.devs[i].ctx, 1, (uint32_t)k, &e, 0);

			if (ret) {
				printf("%-3d %-8s %-5d (ibv_query_gid_ex: %s)\n", i,
				       g.devs[i].dev->args.name, k, strerror(ret));
				continue;
			}
			con_gid_str(&e.gid, gs, sizeof(gs));
			printf("%-3d %-8s %-5d %-40s %s\n", i, g.devs[i].dev->args.name,
			       k, gs, e.gid_type == IBV_GID_TYPE_ROCE_V2 ? "RoCE v2" :
			       e.gid_type == IBV_GID_TYPE_ROCE_V1 ? "RoCE v1" : "IB");
		}
	}
	return 0;
}

static const char *mtu_str(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256: return "256";
	case IBV_MTU_512: return "512";
	case IBV_MTU_1024: return "1024";
	case IBV_MTU_2048: return "2048";
	case IBV_MTU_4096: return "4096";
	default: return "?";
	}
}

static int show_attr(int argc, char **argv)
{
	int lo = 0, hi = 0;

	if (dev_range("show attr", argc, argv, &lo, &hi))
		return -1;
	for (int i = lo; i < hi; i++) {
		struct ibv_device_attr a;
		struct ibv_port_attr p;
		int ret = ibv_query_device(g.devs[i].ctx, &a);

		printf("dev %d (%s): ibv_query_device\n", i, g.devs[i].dev->args.name);
		if (ret) {
			printf("  failed: %s\n", strerror(ret));
			continue;
		}
		printf("  fw_ver %s  node_guid 0x%016" PRIx64 "  sys_image_guid 0x%016" PRIx64 "\n",
		       a.fw_ver, be64toh(a.node_guid), be64toh(a.sys_image_guid));
		printf("  vendor_id 0x%x  vendor_part_id %u  hw_ver %u  phys_port_cnt %u\n",
		       a.vendor_id, a.vendor_part_id, a.hw_ver, a.phys_port_cnt);
		printf("  max_mr_size 0x%" PRIx64 "  page_size_cap 0x%" PRIx64
		       "  device_cap_flags 0x%x\n", a.max_mr_size, a.page_size_cap,
		       a.device_cap_flags);
		printf("  max_qp %d  max_qp_wr %d  max_sge %d  max_sge_rd %d\n",
		       a.max_qp, a.max_qp_wr, a.max_sge, a.max_sge_rd);
		printf("  max_cq %d  max_cqe %d  max_mr %d  max_pd %d\n", a.max_cq,
		       a.max_cqe, a.max_mr, a.max_pd);
		printf("  max_qp_rd_atom %d  max_qp_init_rd_atom %d  max_res_rd_atom %d  atomic_cap %s\n",
		       a.max_qp_rd_atom, a.max_qp_init_rd_atom, a.max_res_rd_atom,
		       a.atomic_cap == IBV_ATOMIC_HCA ? "HCA" :
		       a.atomic_cap == IBV_ATOMIC_GLOB ? "GLOB" : "NONE");
		printf("  max_ah %d  max_srq %d  max_srq_wr %d  max_mw %d  max_pkeys %u  local_ca_ack_delay %u\n",
		       a.max_ah, a.max_srq, a.max_srq_wr, a.max_mw, a.max_pkeys,
		       a.local_ca_ack_delay);
		ret = ibv_query_port(g.devs[i].ctx, 1, &p);
		printf("dev %d (%s): ibv_query_port 1\n", i, g.devs[i].dev->args.name);
		if (ret) {
			printf("  failed: %s\n", strerror(ret));
			continue;
		}
		printf("  state %s  max_mtu %s  active_mtu %s  link_layer %s\n",
		       ibv_port_state_str(p.state), mtu_str(p.max_mtu),
		       mtu_str(p.active_mtu),
		       p.link_layer == IBV_LINK_LAYER_ETHERNET ? "Ethernet" : "InfiniBand");
		printf("  gid_tbl_len %d  pkey_tbl_len %u  max_msg_sz 0x%x  port_cap_flags 0x%x"
		       "  active_width %u  active_speed %u\n", p.gid_tbl_len,
		       p.pkey_tbl_len, p.max_msg_sz, p.port_cap_flags,
		       p.active_width, p.active_speed);
	}
	return 0;
}

static const struct {
	const char *name;
	const char *help;
} dev_stat_names[] = {
#define X(name, help) { #name, help },
	DROCE_DEV_STATS(X)
#undef X
};

static int show_stats(int argc, char **argv)
{
	struct droce_dev_stats st[DROCE_MAX_DEVS];
	int lo = 0, hi = 0;
	bool all = false;

	if (argc >= 1 && strcmp(argv[argc - 1], "all") == 0) {
		all = true;
		argc--;
	}
	if (dev_range("show stats", argc, argv, &lo, &hi))
		return -1;
	for (int i = lo; i < hi; i++)
		droce_dev_stats_get(g.devs[i].ctx, &st[i]);
	printf("%-18s", "counter");
	for (int i = lo; i < hi; i++)
		printf(" %14s", g.devs[i].dev->args.name);
	printf("\n");
	for (size_t k = 0; k < RTE_DIM(dev_stat_names); k++) {
		bool nz = false;

		for (int i = lo; i < hi; i++) {
			const uint64_t *v = (const uint64_t *)&st[i];
			const uint64_t *b = (const uint64_t *)&g.devs[i].base;

			nz |= v[k] != b[k];
		}
		/* The first four always; the rest when they say something. */
		if (!nz && !all && k >= 4)
			continue;
		printf("%-18s", dev_stat_names[k].name);
		for (int i = lo; i < hi; i++) {
			const uint64_t *v = (const uint64_t *)&st[i];
			const uint64_t *b = (const uint64_t *)&g.devs[i].base;

			printf(" %14" PRIu64, v[k] - b[k]);
		}
		printf("  %s\n", dev_stat_names[k].help);
	}
	if (!all)
		printf("(zero counters hidden: 'show stats [<dev>] all' lists every one)\n");
	return 0;
}

static int clear_stats(int argc, char **argv)
{
	int lo = 0, hi = 0;

	if (dev_range("clear stats", argc, argv, &lo, &hi))
		return -1;
	for (int i = lo; i < hi; i++)
		droce_dev_stats_get(g.devs[i].ctx, &g.devs[i].base);
	printf("counters of %s cleared (show stats counts from here)\n",
	       hi - lo == 1 ? g.devs[lo].dev->args.name : "every device");
	return 0;
}

static int show_engines(int argc, char **argv)
{
	unsigned int lc;

	(void)argv;
	if (argc)
		return con_err("show engines takes no arguments");
	printf("%-6s %-8s %s\n", "lcore", "state", "role");
	RTE_LCORE_FOREACH(lc) {
		char role[256];
		size_t n = 0;
		bool main_lc = lc == rte_get_main_lcore();

		role[0] = '\0';
		if (main_lc)
			n += (size_t)snprintf(role, sizeof(role), "main: console%s",
					      traffic_on_main() ? ", traffic" : "");
		for (int i = 0; i < g.nb_devs; i++)
			if (g.devs[i].dev->args.lcore == (int)lc)
				n += (size_t)snprintf(role + n, sizeof(role) - n,
						      "%sengine of %s", n ? ", " : "",
						      g.devs[i].dev->args.name);
		if (n == 0)
			snprintf(role, sizeof(role), "free (traffic may use it)");
		printf("%-6u %-8s %s\n", lc, main_lc ? "main" :
		       rte_eal_get_lcore_state(lc) == RUNNING ? "running" : "idle", role);
	}
	for (int i = 0; i < g.nb_devs; i++)
		if (g.devs[i].dev->args.lcore < 0)
			printf("%-6s %-8s engine of %s, driven by the console's main loop and verbs calls\n",
			       "app", "-", g.devs[i].dev->args.name);
	return 0;
}

static int port_config(int argc, char **argv)
{
	uint64_t port;
	int d;
	struct droce_dev *dev;

	if (argc != 3)
		return con_err("port config: usage: port config <port> ip <a.b.c.d> | mtu <256..4096>");
	if (con_arg_u64("port config", "port", argv[0], &port, RTE_MAX_ETHPORTS - 1))
		return -1;
	d = dev_of_port((uint16_t)port);
	if (d < 0)
		return con_err("port config: port %" PRIu64 " has no droce device (see 'show ports')",
			       port);
	dev = g.devs[d].dev;
	if (strcmp(argv[1], "ip") == 0) {
		struct in_addr a;
		char old[INET_ADDRSTRLEN];

		if (inet_pton(AF_INET, argv[2], &a) != 1)
			return con_err("port config: '%s' is not an IPv4 address", argv[2]);
		if (dev->nb_qp)
			return con_err("port config: %s has %u QP%s; its address can change only while it has none",
				       dev->args.name, dev->nb_qp, dev->nb_qp == 1 ? "" : "s");
		for (int i = 0; i < g.nb_devs; i++)
			if (i != d && g.devs[i].dev->args.ip == a.s_addr)
				return con_err("port config: %s already has %s", g.devs[i].dev->args.name,
					       argv[2]);
		inet_ntop(AF_INET, &dev->args.ip, old, sizeof(old));
		/* droce has no API for this yet: with no QP on the device,
		 * nothing holds the address but the device itself (QP header
		 * templates copy it at RTR), so the two fields are set here. */
		__atomic_store_n(&dev->args.ip, a.s_addr, __ATOMIC_RELEASE);
		memcpy(&dev->gid[1].raw[12], &a.s_addr, 4);
		printf("port %" PRIu64 " (%s): ip %s -> %s, gid[1] ::ffff:%s\n", port,
		       dev->args.name, old, argv[2], argv[2]);
		return 0;
	}
	if (strcmp(argv[1], "mtu") == 0) {
		uint64_t m;

		if (con_arg_u64("port config", "mtu", argv[2], &m, 0))
			return -1;
		if (con_mtu_enum(m) < 0)
			return con_err("port config: mtu must be 256, 512, 1024, 2048 or 4096 (the RoCE path MTU limit)");
		if (m > g.devs[d].probe_mtu)
			return con_err("port config: %s was set up for path MTUs up to %u (devargs mtu=); %" PRIu64 " does not fit",
				       dev->args.name, g.devs[d].probe_mtu, m);
		__atomic_store_n(&dev->args.max_mtu, (uint32_t)m, __ATOMIC_RELEASE);
		printf("port %" PRIu64 " (%s): largest path MTU %" PRIu64
		       " (QPs moved to RTR from now on; connected QPs keep theirs)\n",
		       port, dev->args.name, m);
		return 0;
	}
	return con_err("port config: unknown setting '%s' (ip | mtu)", argv[1]);
}

const struct con_cmd con_cmds_ports[] = {
	{ "ports", "show ports", "", "ethdev ports: name, link, MAC, MTU, packet counters, droce device", show_ports },
	{ "ports", "show devices", "", "droce devices: port, IP, MAC, path MTU limit, engine, object counts", show_devices },
	{ "ports", "show gid", "[<dev>]", "GID table (index 0 link-local, 1 IPv4-mapped: use 1 for RoCEv2/IPv4)", show_gid },
	{ "ports", "show attr", "[<dev>]", "ibv_query_device and ibv_query_port", show_attr },
	{ "ports", "show stats", "[<dev>] [all]", "device counters (droce_dev_stats_get), since 'clear stats'", show_stats },
	{ "ports", "clear stats", "[<dev>]", "start counting from now (a baseline; nothing is reset)", clear_stats },
	{ "ports", "show engines", "", "lcores: main, engines and the devices they serve, free ones", show_engines },
	{ "ports", "port config", "<port> ip <a.b.c.d> | mtu <bytes>", "set a port's IPv4 address (only while its device has no QP) or its largest path MTU", port_config },
	{ NULL, NULL, NULL, NULL, NULL },
};
