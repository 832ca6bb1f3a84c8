/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Devices and contexts: the droce device registry, devargs, and the verbs
 * that describe a device (query_device/port/gid/pkey) or create its
 * simplest object (PD).
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_kvargs.h>
#include <rte_lcore.h>
#include <rte_malloc.h>

#include "droce_int.h"

/* Exported names collide with rdma-core's convenience macros. */
#undef ibv_query_port

RTE_LOG_REGISTER(droce_logtype, droce, INFO);
RTE_LOG_REGISTER(droce_trace_logtype, droce.trace, NOTICE);
bool droce_trace_on;

void droce_trace_pkt(const char *dir, const char *dev, const struct roce_pkt *p)
{
	const struct roce_opcode_info *oi = roce_opcode_info(p->opcode);
	char ext[96] = "";

	if (oi->flags & ROCE_OPF_AETH)
		snprintf(ext, sizeof(ext), " aeth 0x%02x msn %u", p->aeth_syndrome,
			 p->aeth_msn);
	else if (oi->flags & ROCE_OPF_RETH)
		snprintf(ext, sizeof(ext), " va 0x%" PRIx64 " rkey 0x%x len %u",
			 p->reth_va, p->reth_rkey, p->reth_len);
	rte_log(RTE_LOG_DEBUG, droce_trace_logtype,
		"%s %s qp 0x%06x psn 0x%06x %s%s%s payload %u\n", dev, dir,
		p->dest_qp, p->psn, oi->name ? oi->name : "?",
		p->ack_req ? " A" : "", ext, p->payload_len);
}

/*
 * Devices by index: droce_devs[0 .. droce_nb_devs), where a destroyed
 * device's slot is NULL until a new device takes it (the lowest free
 * index), so that the others keep theirs: an index is in their doorbell
 * tokens and timer cells. Engines read both without the lock: a slot is
 * filled before droce_nb_devs covers it and emptied before its device
 * goes.
 */
struct droce_dev *droce_devs[DROCE_MAX_DEVS];
uint32_t droce_nb_devs;
const struct droce_drv_ops *droce_drv;
static pthread_mutex_t droce_reg_lock = PTHREAD_MUTEX_INITIALIZER;


void droce_drv_register(const struct droce_drv_ops *ops)
{
	droce_drv = ops;
}

/* ------------------------------------------------------------ devargs */

static int parse_ip(const char *key __rte_unused, const char *v, void *out)
{
	struct in_addr a;

	if (inet_pton(AF_INET, v, &a) != 1)
		return -EINVAL;
	*(uint32_t *)out = a.s_addr;
	return 0;
}

static int parse_u32(const char *key __rte_unused, const char *v, void *out)
{
	char *end;
	unsigned long x;

	errno = 0;
	x = strtoul(v, &end, 0);
	if (errno || *end || end == v || x > UINT32_MAX)
		return -EINVAL;
	*(uint32_t *)out = (uint32_t)x;
	return 0;
}

static int parse_lcore(const char *key __rte_unused, const char *v, void *out)
{
	struct droce_devargs *a = out;
	uint32_t x;

	a->lcore_set = true;
	if (strcmp(v, "app") == 0) {
		a->lcore = -1;
		return 0;
	}
	if (parse_u32(NULL, v, &x) || x >= RTE_MAX_LCORE)
		return -EINVAL;
	a->lcore = (int)x;
	return 0;
}

static int parse_name(const char *key __rte_unused, const char *v, void *out)
{
	struct droce_devargs *a = out;

	if (strlen(v) == 0 || strlen(v) >= sizeof(a->name))
		return -EINVAL;
	strcpy(a->name, v);
	return 0;
}

/*
 * impair=k:v/k:v... : the link impairer's kvargs with ':' for '=' and '/'
 * for ',' (rte_kvargs cannot nest them). E.g. impair=seed:7/rx_drop:0.01
 */
static int parse_impair(const char *key __rte_unused, const char *v, void *out)
{
	struct droce_devargs *a = out;
	size_t i;

	if (strlen(v) >= sizeof(a->impair))
		return -EINVAL;
	for (i = 0; v[i]; i++)
		a->impair[i] = v[i] == ':' ? '=' : v[i] == '/' ? ',' : v[i];
	a->impair[i] = '\0';
	return 0;
}

static int parse_mac(const char *key __rte_unused, const char *v, void *out)
{
	struct droce_devargs *a = out;

	if (rte_ether_unformat_addr(v, &a->mac) != 0)
		return -EINVAL;
	a->mac_set = true;
	return 0;
}

int droce_parse_devargs(const char *str, struct droce_devargs *a)
{
	static const char *const keys[] = {
		"ip", "mtu", "lcore", "name", "idle_us", "mac", "nb_mbuf",
		"arp_timeout_ms", "port", "impair", "vlan", "prio", "port_mtu",
		"zc_min", "cycles", "post_drive", "rx_spin", "icrc_batch",
		"linger_ms", NULL
	};
	struct rte_kvargs *kv;
	uint32_t vid = 0, prio = 0;
	int ret = 0;

	memset(a, 0, sizeof(*a));
	a->max_mtu = 1024;
	a->idle_us = 200;
	a->nb_mbuf = 8191;
	a->post_drive = 32;
	a->rx_spin = DROCE_DEFAULT_RX_SPIN;
	a->icrc_batch = 1;
	a->arp_timeout_ms = 1000;
	a->linger_ms = DROCE_DEFAULT_LINGER_MS;
	if (str == NULL || *str == '\0')
		return -EINVAL;	/* ip is required */
	kv = rte_kvargs_parse(str, keys);
	if (kv == NULL)
		return -EINVAL;
	/* DPDK 22.11 takes a key without '=' and hands its handler a NULL
	 * value: every key here needs one. */
	for (unsigned int i = 0; i < kv->count; i++) {
		if (kv->pairs[i].value == NULL) {
			DROCE_LOG(ERR, "device argument \"%s\" has no value",
				  kv->pairs[i].key);
			ret = -EINVAL;
			goto out;
		}
	}
	if (rte_kvargs_count(kv, "ip") != 1) {
		ret = -EINVAL;
		goto out;
	}
	if (rte_kvargs_process(kv, "ip", parse_ip, &a->ip) ||
	    rte_kvargs_process(kv, "mtu", parse_u32, &a->max_mtu) ||
	    rte_kvargs_process(kv, "lcore", parse_lcore, a) ||
	    rte_kvargs_process(kv, "name", parse_name, a) ||
	    rte_kvargs_process(kv, "idle_us", parse_u32, &a->idle_us) ||
	    rte_kvargs_process(kv, "mac", parse_mac, a) ||
	    rte_kvargs_process(kv, "nb_mbuf", parse_u32, &a->nb_mbuf) ||
	    rte_kvargs_process(kv, "arp_timeout_ms", parse_u32,
			       &a->arp_timeout_ms) ||
	    rte_kvargs_process(kv, "impair", parse_impair, a) ||
	    rte_kvargs_process(kv, "vlan", parse_u32, &vid) ||
	    rte_kvargs_process(kv, "prio", parse_u32, &prio) ||
	    rte_kvargs_process(kv, "port_mtu", parse_u32, &a->port_mtu) ||
	    rte_kvargs_process(kv, "zc_min", parse_u32, &a->zc_min) ||
	    rte_kvargs_process(kv, "cycles", parse_u32, &a->cycles) ||
	    rte_kvargs_process(kv, "post_drive", parse_u32, &a->post_drive) ||
	    rte_kvargs_process(kv, "rx_spin", parse_u32, &a->rx_spin) ||
	    rte_kvargs_process(kv, "icrc_batch", parse_u32, &a->icrc_batch) ||
	    rte_kvargs_process(kv, "linger_ms", parse_u32, &a->linger_ms)) {
		ret = -EINVAL;
		goto out;
	}
	if (a->max_mtu != 256 && a->max_mtu != 512 && a->max_mtu != 1024 &&
	    a->max_mtu != 2048 && a->max_mtu != 4096)
		ret = -EINVAL;
	if (a->nb_mbuf < 1024 || a->cycles > 1 || a->rx_spin > DROCE_MAX_RX_SPIN ||
	    a->icrc_batch > 1 || a->linger_ms > DROCE_MAX_LINGER_MS)
		ret = -EINVAL;
	if (a->port_mtu && (a->port_mtu < 576 || a->port_mtu > 65535))
		ret = -EINVAL;
	/* 802.1Q: VLAN 1..4094; a priority needs a VLAN to travel in. */
	if (vid > 4094 || prio > 7 || (prio && !vid))
		ret = -EINVAL;
	a->vlan_tci = (uint16_t)(prio << 13 | vid);
out:
	rte_kvargs_free(kv);
	return ret;
}

/* --------------------------------------------------------- registry */

static void make_gids(struct droce_dev *dev)
{
	uint8_t *g0 = dev->gid[0].raw, *g1 = dev->gid[1].raw;
	const uint8_t *m = dev->mac.addr_bytes;

	/* index 0: fe80::/64 with the MAC's modified EUI-64 (RFC 4291 App. A) */
	memset(g0, 0, 16);
	g0[0] = 0xfe;
	g0[1] = 0x80;
	g0[8] = m[0] ^ 0x02;
	g0[9] = m[1];
	g0[10] = m[2];
	g0[11] = 0xff;
	g0[12] = 0xfe;
	g0[13] = m[3];
	g0[14] = m[4];
	g0[15] = m[5];
	/* index 1: the IPv4-mapped address, as Linux lists a RoCEv2 GID */
	memset(g1, 0, 16);
	g1[10] = 0xff;
	g1[11] = 0xff;
	memcpy(&g1[12], &dev->args.ip, 4);
}

/*
 * The EAL's runtime directory (/run/dpdk/<prefix>), removed when the
 * library is unloaded at the process's end if it is empty by then, as
 * --in-memory and --no-shconf leave it (rte_eal_cleanup() does not remove
 * it, and telemetry's socket in it goes only in an atexit handler of its
 * own, before any library's destructor). Noted while the EAL runs, by the
 * first device; a process that built its EAL vector with droce_eal_argv
 * and made no device (it gave up first) has it from the EAL, whose name
 * for it outlives rte_eal_cleanup().
 */
static char eal_rundir[PATH_MAX];
static pid_t eal_rundir_pid;	/* (a forked child's exit leaves it alone) */

RTE_FINI(droce_rundir_fini)
{
	const char *dir = NULL;

	if (eal_rundir[0] != '\0')
		dir = getpid() == eal_rundir_pid ? eal_rundir : NULL;
	else if (droce_eal_argv_pid != 0 && getpid() == droce_eal_argv_pid)
		dir = rte_eal_get_runtime_dir();
	if (dir != NULL && dir[0] != '\0')
		(void)rmdir(dir);
}

int droce_dev_create(uint16_t port_id, const char *devargs)
{
	struct droce_dev *dev;
	int ret;

	if (rte_eal_process_type() == RTE_PROC_INVALID || droce_drv == NULL)
		return -ENODEV;
	if (!rte_eth_dev_is_valid_port(port_id))
		return -ENODEV;
	if (eal_rundir[0] == '\0') {
		snprintf(eal_rundir, sizeof(eal_rundir), "%s",
			 rte_eal_get_runtime_dir());
		eal_rundir_pid = getpid();
	}
	dev = rte_zmalloc_socket("droce_dev", sizeof(*dev), RTE_CACHE_LINE_SIZE,
				 rte_eth_dev_socket_id(port_id));
	if (dev == NULL)
		return -ENOMEM;
	ret = droce_parse_devargs(devargs, &dev->args);
	if (ret) {
		DROCE_LOG(ERR, "bad devargs \"%s\" (need ip=A.B.C.D; mtu 256..4096; lcore=N|app)",
			  devargs ? devargs : "");
		rte_free(dev);
		return ret;
	}
	pthread_mutex_lock(&droce_reg_lock);
	dev->index = DROCE_MAX_DEVS;
	for (uint32_t i = 0; i < droce_nb_devs; i++) {
		if (droce_devs[i] == NULL) {
			if (dev->index == DROCE_MAX_DEVS)
				dev->index = i;
		} else if (droce_devs[i]->port_id == port_id) {
			ret = -EEXIST;
			goto fail;
		}
	}
	if (dev->index == DROCE_MAX_DEVS)
		dev->index = droce_nb_devs;
	if (dev->index >= DROCE_MAX_DEVS) {
		ret = -ENOSPC;
		goto fail;
	}
	dev->port_id = port_id;
	pthread_mutex_init(&dev->lock, NULL);
	if (dev->args.name[0] == '\0')
		snprintf(dev->args.name, sizeof(dev->args.name), "droce%u",
			 dev->index);
	if (!dev->args.lcore_set) {
		unsigned int lc = rte_get_next_lcore(-1, 1, 0);

		dev->args.lcore = lc < RTE_MAX_LCORE ? (int)lc : -1;
	}
	dev->qp_tbl = rte_zmalloc_socket("droce_qp_tbl",
			sizeof(*dev->qp_tbl) * DROCE_MAX_QP, 0,
			rte_eth_dev_socket_id(port_id));
	dev->mr_tbl = rte_zmalloc_socket("droce_mr_tbl",
			sizeof(*dev->mr_tbl) * DROCE_MAX_MR, 0,
			rte_eth_dev_socket_id(port_id));
	if (dev->qp_tbl == NULL || dev->mr_tbl == NULL) {
		ret = -ENOMEM;
		goto fail;
	}
	dev->ibv_dev.node_type = IBV_NODE_CA;
	dev->ibv_dev.transport_type = IBV_TRANSPORT_IB;
	snprintf(dev->ibv_dev.name, sizeof(dev->ibv_dev.name), "%s",
		 dev->args.name);
	snprintf(dev->ibv_dev.dev_name, sizeof(dev->ibv_dev.dev_name),
		 "uverbs-droce%u", dev->index);
	snprintf(dev->ibv_dev.dev_path, sizeof(dev->ibv_dev.dev_path),
		 "droce:port%u", port_id);
	snprintf(dev->ibv_dev.ibdev_path, sizeof(dev->ibv_dev.ibdev_path),
		 "droce:%s", dev->args.name);
	ret = droce_drv->dev_probe(dev);
	if (ret)
		goto fail;
	make_gids(dev);
	__atomic_store_n(&droce_devs[dev->index], dev, __ATOMIC_RELEASE);
	if (dev->index == droce_nb_devs)
		__atomic_store_n(&droce_nb_devs, droce_nb_devs + 1, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&droce_reg_lock);
	{
		char ip[INET_ADDRSTRLEN];
		char mac[RTE_ETHER_ADDR_FMT_SIZE];

		inet_ntop(AF_INET, &dev->args.ip, ip, sizeof(ip));
		rte_ether_format_addr(mac, sizeof(mac), &dev->mac);
		char eng[24] = "app-driven";

		if (dev->args.lcore >= 0)
			snprintf(eng, sizeof(eng), "lcore %d", dev->args.lcore);
		DROCE_LOG(INFO, "%s on port %u: %s %s, max path MTU %u, engine %s",
			  dev->args.name, port_id, ip, mac, dev->args.max_mtu, eng);
	}
	return (int)dev->index;
fail:
	pthread_mutex_unlock(&droce_reg_lock);
	rte_free(dev->qp_tbl);
	rte_free(dev->mr_tbl);
	rte_free(dev);
	return ret;
}

int droce_dev_create_by_name(const char *port_name, const char *devargs)
{
	uint16_t port_id;

	if (port_name == NULL || rte_eth_dev_get_port_by_name(port_name, &port_id))
		return -ENODEV;
	return droce_dev_create(port_id, devargs);
}

int droce_dev_count(void)
{
	int n = 0;

	pthread_mutex_lock(&droce_reg_lock);
	for (uint32_t i = 0; i < droce_nb_devs; i++)
		n += droce_devs[i] != NULL;
	pthread_mutex_unlock(&droce_reg_lock);
	return n;
}

/*
 * DROCE_CLEANUP_PAUSE_US=<us>, for tests: a pause after each device is
 * removed, the engine serving the devices left meanwhile. It holds open
 * the window in which a device closed first must leave nothing behind
 * that the others may still touch (its frames in their receive rings,
 * their impairers): test_teardown_inflight.
 */
static void cleanup_pause(void)
{
	const char *v = getenv("DROCE_CLEANUP_PAUSE_US");
	unsigned long us = v ? strtoul(v, NULL, 10) : 0;

	if (us) {
		struct timespec ts = { (time_t)(us / 1000000),
				       (long)(us % 1000000) * 1000 };

		nanosleep(&ts, NULL);
	}
}

/* A device's objects all gone, and no context open on it. */
static bool dev_unused(const struct droce_dev *d)
{
	return !(d->ctx_refcnt || d->nb_qp || d->nb_cq || d->nb_pd || d->nb_mr);
}

/*
 * Out of the registry (the lock held): its slot emptied first (an engine
 * that still meets the index finds no device), then its engine, its port,
 * its tables.
 */
static void dev_remove_locked(uint32_t index)
{
	struct droce_dev *d = droce_devs[index];
	uint32_t n = droce_nb_devs;

	__atomic_store_n(&droce_devs[index], NULL, __ATOMIC_RELEASE);
	while (n > 0 && droce_devs[n - 1] == NULL)
		n--;
	__atomic_store_n(&droce_nb_devs, n, __ATOMIC_RELEASE);
	droce_drv->dev_remove(d);
	rte_free(d->qp_tbl);
	rte_free(d->mr_tbl);
	rte_free(d);
}

int droce_dev_destroy(int index)
{
	int ret = 0;

	pthread_mutex_lock(&droce_reg_lock);
	if (index < 0 || (uint32_t)index >= droce_nb_devs ||
	    droce_devs[index] == NULL)
		ret = -ENODEV;
	else if (!dev_unused(droce_devs[index]))
		ret = -EBUSY;
	else
		dev_remove_locked((uint32_t)index);
	pthread_mutex_unlock(&droce_reg_lock);
	return ret;
}

int droce_cleanup(void)
{
	pthread_mutex_lock(&droce_reg_lock);
	for (uint32_t i = 0; i < droce_nb_devs; i++) {
		if (droce_devs[i] != NULL && !dev_unused(droce_devs[i])) {
			pthread_mutex_unlock(&droce_reg_lock);
			return -EBUSY;
		}
	}
	/* the newest first (the highest index), the engine serving the
	 * others meanwhile */
	while (droce_nb_devs > 0) {
		dev_remove_locked(droce_nb_devs - 1);
		if (droce_nb_devs > 0)
			cleanup_pause();
	}
	pthread_mutex_unlock(&droce_reg_lock);
	return 0;
}

uint32_t droce_exit_release(void)
{
	uint32_t n = 0;

	pthread_mutex_lock(&droce_reg_lock);
	if (droce_nb_devs > 0 && droce_drv != NULL && droce_drv->halt != NULL)
		n = droce_drv->halt(droce_devs, droce_nb_devs);
	pthread_mutex_unlock(&droce_reg_lock);
	return n;
}

int droce_poll(struct ibv_context *ctx)
{
	if (ctx == NULL)
		return -EINVAL;
	return droce_drv->poll(droce_dev_of_ctx(ctx));
}

int droce_dev_port_id(struct ibv_context *ctx)
{
	return ctx ? droce_dev_of_ctx(ctx)->port_id : -1;
}

int droce_dev_stats_get(struct ibv_context *ctx, struct droce_dev_stats *st)
{
	if (ctx == NULL || st == NULL)
		return -EINVAL;
	droce_dev_stats_read(droce_dev_of_ctx(ctx), st);
	return 0;
}

void droce_dev_stats_read(const struct droce_dev *dev, struct droce_dev_stats *st)
{
	/* Counters are engine-owned and 64-bit: a torn read is impossible on
	 * the 64-bit targets DPDK supports, a slightly stale one is fine. */
	memcpy(st, &dev->st, sizeof(*st));
	if (droce_drv && droce_drv->eng_stats)
		droce_drv->eng_stats(dev, st);
}

void droce_dev_stats_dump(struct ibv_context *ctx, FILE *f)
{
	struct droce_dev_stats s;
	const char *sep = "";

	if (droce_dev_stats_get(ctx, &s))
		return;
	fprintf(f, "%s:", droce_dev_of_ctx(ctx)->args.name);
	/* Only what happened: a zero counter says nothing. */
#define DROCE_STAT_PRINT(name, help) \
	if (s.name) { fprintf(f, "%s %s %" PRIu64, sep, #name, s.name); sep = ","; }
	DROCE_DEV_STATS(DROCE_STAT_PRINT)
#undef DROCE_STAT_PRINT
	fprintf(f, "\n");
}

int droce_qp_stats_get(struct ibv_qp *ibqp, struct droce_qp_stats *st)
{
	if (ibqp == NULL || st == NULL)
		return -EINVAL;
	memcpy(st, &droce_qp_of(ibqp)->st, sizeof(*st));
	return 0;
}

/* -------------------------------------------------- device list / open */

struct ibv_device **ibv_get_device_list(int *num_devices)
{
	struct ibv_device **list;
	uint32_t n;

	if (droce_env_init() != 0 && droce_nb_devs == 0) {
		if (num_devices)
			*num_devices = 0;
		errno = ENOSYS;
		return NULL;
	}
	pthread_mutex_lock(&droce_reg_lock);
	list = calloc(droce_nb_devs + 1, sizeof(*list));
	if (list == NULL) {
		pthread_mutex_unlock(&droce_reg_lock);
		errno = ENOMEM;
		return NULL;
	}
	n = 0;
	for (uint32_t i = 0; i < droce_nb_devs; i++)
		if (droce_devs[i] != NULL)
			list[n++] = &droce_devs[i]->ibv_dev;
	pthread_mutex_unlock(&droce_reg_lock);
	if (num_devices)
		*num_devices = (int)n;
	return list;
}

void ibv_free_device_list(struct ibv_device **list)
{
	free(list);
}

const char *ibv_get_device_name(struct ibv_device *device)
{
	return device ? device->name : NULL;
}

static struct droce_dev *dev_of_ibv_dev(struct ibv_device *d)
{
	for (uint32_t i = 0; i < droce_nb_devs; i++)
		if (droce_devs[i] != NULL && &droce_devs[i]->ibv_dev == d)
			return droce_devs[i];
	return NULL;
}

__be64 ibv_get_device_guid(struct ibv_device *device)
{
	struct droce_dev *dev = dev_of_ibv_dev(device);
	uint64_t guid = 0;

	if (dev == NULL)
		return 0;
	/* The EUI-64 of the MAC, as Linux derives a RoCE node GUID. */
	memcpy(&guid, &dev->gid[0].raw[8], 8);
	return guid;
}

int ibv_get_device_index(struct ibv_device *device)
{
	struct droce_dev *dev = dev_of_ibv_dev(device);

	return dev ? (int)dev->index : -1;
}

static int droce_query_device_ex(struct ibv_context *ctx,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr, size_t attr_size);
static int droce_query_port(struct ibv_context *ctx, uint8_t port_num,
			    struct ibv_port_attr *attr, size_t attr_size);
int droce_req_notify_cq(struct ibv_cq *cq, int solicited_only);
struct ibv_cq_ex *droce_create_cq_ex(struct ibv_context *ctx,
				     struct ibv_cq_init_attr_ex *attr);
struct ibv_qp *droce_create_qp_ex(struct ibv_context *ctx,
				  struct ibv_qp_init_attr_ex *attr);
struct ibv_srq *droce_create_srq_ex(struct ibv_context *ctx,
				    struct ibv_srq_init_attr_ex *init);
int droce_get_srq_num(struct ibv_srq *srq, uint32_t *srq_num);
int droce_modify_cq(struct ibv_cq *cq, struct ibv_modify_cq_attr *attr);
int droce_modify_qp_rate_limit(struct ibv_qp *qp,
			       struct ibv_qp_rate_limit_attr *attr);

/* The engine's clock is the TSC (CQE timestamps, hca_core_clock in kHz). */
static int droce_query_rt_values(struct ibv_context *ctx,
				 struct ibv_values_ex *values)
{
	uint64_t tsc = rte_rdtsc();

	(void)ctx;
	if (values == NULL || (values->comp_mask & ~(uint32_t)IBV_VALUES_MASK_RAW_CLOCK))
		return EINVAL;
	values->raw_clock.tv_sec = 0;
	values->raw_clock.tv_nsec = (long)tsc;
	return 0;
}

/* Thread and parent domains (below, with the PDs). */
static struct ibv_td *droce_alloc_td(struct ibv_context *ctx,
				     struct ibv_td_init_attr *attr);
static int droce_dealloc_td(struct ibv_td *ibtd);
static struct ibv_pd *droce_alloc_parent_domain(struct ibv_context *ctx,
					struct ibv_parent_domain_init_attr *attr);

struct ibv_context *ibv_open_device(struct ibv_device *device)
{
	struct droce_dev *dev = dev_of_ibv_dev(device);
	struct droce_context *c;
	struct ibv_context *ctx;

	if (dev == NULL) {
		errno = ENODEV;
		return NULL;
	}
	c = calloc(1, sizeof(*c));
	if (c == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	c->dev = dev;
	pthread_mutex_init(&c->obj_lock, NULL);
	for (int k = 0; k < DROCE_OBJ_KINDS; k++)
		c->objs[k].prev = c->objs[k].next = &c->objs[k];
	if (droce_async_init(c)) {
		free(c);
		errno = ENOMEM;
		return NULL;
	}
	ctx = &c->vctx.context;
	ctx->device = device;
	ctx->cmd_fd = -1;
	ctx->async_fd = c->async_fd;
	ctx->num_comp_vectors = 1;
	pthread_mutex_init(&ctx->mutex, NULL);
	ctx->abi_compat = __VERBS_ABI_IS_EXTENDED;
	ctx->ops.post_send = droce_post_send;
	ctx->ops.post_recv = droce_post_recv;
	ctx->ops.poll_cq = droce_poll_cq;
	ctx->ops.req_notify_cq = droce_req_notify_cq;
	ctx->ops.post_srq_recv = droce_post_srq_recv;
	ctx->ops.alloc_mw = droce_alloc_mw;
	ctx->ops.dealloc_mw = droce_dealloc_mw;
	ctx->ops.bind_mw = droce_bind_mw;
	c->vctx.sz = sizeof(c->vctx);
	c->vctx.query_device_ex = droce_query_device_ex;
	c->vctx.query_port = droce_query_port;
	c->vctx.create_cq_ex = droce_create_cq_ex;
	c->vctx.create_qp_ex = droce_create_qp_ex;
	c->vctx.create_srq_ex = droce_create_srq_ex;
	c->vctx.modify_cq = droce_modify_cq;
	c->vctx.modify_qp_rate_limit = droce_modify_qp_rate_limit;
	c->vctx.query_rt_values = droce_query_rt_values;
	c->vctx.get_srq_num = droce_get_srq_num;
	c->vctx.alloc_td = droce_alloc_td;
	c->vctx.dealloc_td = droce_dealloc_td;
	c->vctx.alloc_parent_domain = droce_alloc_parent_domain;
	pthread_mutex_lock(&dev->lock);
	for (uint32_t i = 0; i < DROCE_MAX_CTX; i++)
		if (dev->ctxs[i] == NULL) {
			__atomic_store_n(&dev->ctxs[i], ctx, __ATOMIC_RELEASE);
			break;
		}
	pthread_mutex_unlock(&dev->lock);
	__atomic_fetch_add(&dev->ctx_refcnt, 1, __ATOMIC_RELAXED);
	return ctx;
}

static void sync_noop(void *arg)
{
	(void)arg;
}

/* ------------------------------------------------- a context's objects */

void droce_obj_add(struct ibv_context *ctx, struct droce_obj *o,
		   enum droce_obj_kind kind)
{
	struct droce_context *c = droce_ctx(ctx);
	struct droce_obj *head = &c->objs[kind];

	pthread_mutex_lock(&c->obj_lock);
	o->prev = head->prev;
	o->next = head;
	head->prev->next = o;
	head->prev = o;
	pthread_mutex_unlock(&c->obj_lock);
}

void droce_obj_del(struct ibv_context *ctx, struct droce_obj *o)
{
	struct droce_context *c = droce_ctx(ctx);

	pthread_mutex_lock(&c->obj_lock);
	if (o->next != NULL) {
		o->prev->next = o->next;
		o->next->prev = o->prev;
		o->prev = o->next = NULL;
	}
	pthread_mutex_unlock(&c->obj_lock);
}

bool droce_ctx_closing(struct ibv_context *ctx)
{
	return __atomic_load_n(&droce_ctx(ctx)->closing, __ATOMIC_ACQUIRE);
}

static int obj_destroy(enum droce_obj_kind kind, struct droce_obj *o)
{
	switch (kind) {
	case DROCE_OBJ_QP:
		return ibv_destroy_qp(&container_of(o, struct droce_qp,
						    obj)->ex.qp_base);
	case DROCE_OBJ_AH:
		return ibv_destroy_ah(&container_of(o, struct droce_ah, obj)->ibv);
	case DROCE_OBJ_MW:
		return droce_dealloc_mw(&container_of(o, struct droce_mr,
						      obj)->ibv_mw);
	case DROCE_OBJ_SRQ:
		return ibv_destroy_srq(&container_of(o, struct droce_srq,
						     obj)->ibv);
	case DROCE_OBJ_MR:
		return ibv_dereg_mr(&container_of(o, struct droce_mr, obj)->ibv);
	case DROCE_OBJ_CQ:
		return ibv_destroy_cq(&container_of(o, struct droce_cq, obj)->cq);
	case DROCE_OBJ_CHANNEL:
		return ibv_destroy_comp_channel(droce_channel_of_obj(o));
	case DROCE_OBJ_PARENT_DOMAIN:
	case DROCE_OBJ_PD:
		return ibv_dealloc_pd(&container_of(o, struct droce_pd, obj)->ibv);
	case DROCE_OBJ_TD:
		return droce_dealloc_td(&container_of(o, struct droce_td,
						      obj)->ibv);
	default:
		return EINVAL;
	}
}

/*
 * Destroy what the application left on a context it closes, users first.
 * Returns how many could not go (a region whose zero-copy frames never
 * drained): they keep the context's memory, never its device slot.
 */
static uint32_t ctx_destroy_objs(struct droce_context *c)
{
	uint32_t left = 0, gone = 0;

	for (int k = 0; k < DROCE_OBJ_KINDS; k++) {
		struct droce_obj *head = &c->objs[k], *o;

		for (;;) {
			pthread_mutex_lock(&c->obj_lock);
			o = head->next == head ? NULL : head->next;
			pthread_mutex_unlock(&c->obj_lock);
			if (o == NULL)
				break;
			if (obj_destroy((enum droce_obj_kind)k, o) == 0) {
				gone++;
				continue;
			}
			droce_obj_del(&c->vctx.context, o);	/* (kept) */
			left++;
		}
	}
	if (gone || left)
		DROCE_LOG(NOTICE, "ibv_close_device: %u objects left on the "
			  "context destroyed, %u could not be", gone, left);
	return left;
}

int ibv_close_device(struct ibv_context *context)
{
	struct droce_context *c;
	uint32_t left;

	if (context == NULL)
		return EINVAL;
	c = droce_ctx(context);
	__atomic_store_n(&c->closing, true, __ATOMIC_RELEASE);
	left = ctx_destroy_objs(c);
	pthread_mutex_lock(&c->dev->lock);
	for (uint32_t i = 0; i < DROCE_MAX_CTX; i++)
		if (c->dev->ctxs[i] == context)
			__atomic_store_n(&c->dev->ctxs[i], NULL, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&c->dev->lock);
	/* The engine posts port events to contexts: let it forget this one. */
	droce_drv->exec(c->dev, sync_noop, NULL);
	__atomic_fetch_sub(&c->dev->ctx_refcnt, 1, __ATOMIC_RELAXED);
	if (left)
		return 0;	/* what is left still points at it */
	pthread_mutex_destroy(&context->mutex);
	pthread_mutex_destroy(&c->obj_lock);
	droce_async_fini(c);
	free(c);
	return 0;
}

/* ---------------------------------------------------------- queries */

static void fill_device_attr(struct droce_dev *dev, struct ibv_device_attr *a)
{
	memset(a, 0, sizeof(*a));
	snprintf(a->fw_ver, sizeof(a->fw_ver), "droce-%s", "0.1.0");
	a->node_guid = ibv_get_device_guid(&dev->ibv_dev);
	a->sys_image_guid = a->node_guid;
	a->max_mr_size = UINT64_MAX;
	a->page_size_cap = 0xfffff000;
	a->vendor_id = 0x1d1d;	/* no PCI vendor: a software device */
	a->vendor_part_id = 1;
	a->hw_ver = 1;
	a->max_qp = DROCE_MAX_QP;
	a->max_qp_wr = DROCE_MAX_QP_WR;
	a->max_srq = DROCE_MAX_QP;
	a->max_srq_wr = DROCE_MAX_QP_WR;
	a->max_srq_sge = DROCE_MAX_SGE;
	a->max_mw = DROCE_MAX_MR - 1;
	a->device_cap_flags = IBV_DEVICE_RC_RNR_NAK_GEN |
			      IBV_DEVICE_MEM_WINDOW |
			      IBV_DEVICE_MEM_WINDOW_TYPE_2B |
			      IBV_DEVICE_PORT_ACTIVE_EVENT |
			      IBV_DEVICE_SYS_IMAGE_GUID;
	a->max_sge = DROCE_MAX_SGE;
	a->max_sge_rd = DROCE_MAX_SGE;
	a->max_cq = DROCE_MAX_CQ;
	a->max_cqe = DROCE_MAX_CQE - 1;
	a->max_mr = DROCE_MAX_MR - 1;
	a->max_pd = DROCE_MAX_PD;
	a->max_qp_rd_atom = DROCE_MAX_RD_ATOMIC;
	a->max_qp_init_rd_atom = DROCE_MAX_RD_ATOMIC;
	a->max_res_rd_atom = DROCE_MAX_RD_ATOMIC * DROCE_MAX_QP;
	/* Responders execute atomics with the CPU's own atomic instructions
	 * on the target: atomic against every other atomic on the device,
	 * whatever engine lcore serves it (and against the CPU's too). */
	a->atomic_cap = IBV_ATOMIC_HCA;
	a->max_pkeys = 1;
	a->local_ca_ack_delay = 15;
	a->phys_port_cnt = 1;
}

int ibv_query_device(struct ibv_context *context,
		     struct ibv_device_attr *device_attr)
{
	if (context == NULL || device_attr == NULL)
		return EINVAL;
	fill_device_attr(droce_dev_of_ctx(context), device_attr);
	return 0;
}

static int droce_query_device_ex(struct ibv_context *ctx,
				 const struct ibv_query_device_ex_input *input,
				 struct ibv_device_attr_ex *attr, size_t attr_size)
{
	struct ibv_device_attr_ex a;

	if (input && input->comp_mask)
		return EINVAL;
	if (attr_size < sizeof(a.orig_attr))
		return EINVAL;
	memset(&a, 0, sizeof(a));
	fill_device_attr(droce_dev_of_ctx(ctx), &a.orig_attr);
	a.max_dm_size = 0;
	a.raw_packet_caps = 0;
	a.completion_timestamp_mask = UINT64_MAX;
	a.hca_core_clock = rte_get_tsc_hz() / 1000;	/* kHz */
	/* The engine paces any QP's send queue (eth_pace.c). */
	a.packet_pacing_caps.qp_rate_limit_min = DROCE_RATE_MIN_KBPS;
	a.packet_pacing_caps.qp_rate_limit_max = DROCE_RATE_MAX_KBPS;
	a.packet_pacing_caps.supported_qpts = 1u << IBV_QPT_RC |
					      1u << IBV_QPT_UC |
					      1u << IBV_QPT_UD;
	memcpy(attr, &a, RTE_MIN(attr_size, sizeof(a)));
	return 0;
}

static enum ibv_mtu mtu_enum(uint32_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	default: return IBV_MTU_4096;
	}
}

static int droce_query_port(struct ibv_context *ctx, uint8_t port_num,
			    struct ibv_port_attr *attr, size_t attr_size)
{
	struct droce_dev *dev = droce_dev_of_ctx(ctx);
	struct ibv_port_attr a;
	struct rte_eth_link link;

	if (port_num != 1 || attr == NULL)
		return EINVAL;
	memset(&a, 0, sizeof(a));
	memset(&link, 0, sizeof(link));
	rte_eth_link_get_nowait(dev->port_id, &link);
	a.state = link.link_status ? IBV_PORT_ACTIVE : IBV_PORT_DOWN;
	a.max_mtu = mtu_enum(dev->args.max_mtu);
	a.active_mtu = a.max_mtu;
	a.gid_tbl_len = 2;
	a.port_cap_flags = IBV_PORT_CM_SUP;
	a.max_msg_sz = DROCE_MAX_MSG;
	a.pkey_tbl_len = 1;
	a.lid = 0;
	a.sm_lid = 0;
	a.lmc = 0;
	a.max_vl_num = 1;
	a.active_width = 2;	/* 4x */
	a.active_speed = 32;	/* EDR-ish: what a software port reports */
	a.phys_state = link.link_status ? 5 /* LinkUp */ : 3 /* Disabled */;
	a.link_layer = IBV_LINK_LAYER_ETHERNET;
	memcpy(attr, &a, RTE_MIN(attr_size, sizeof(a)));
	return 0;
}

/* The non-inline ABI entry (old binaries, or verbs_get_ctx failing). */
int ibv_query_port(struct ibv_context *context, uint8_t port_num,
		   struct _compat_ibv_port_attr *port_attr)
{
	if (context == NULL)
		return EINVAL;
	return droce_query_port(context, port_num,
				(struct ibv_port_attr *)port_attr,
				/* the old ABI's struct ends before flags */
				offsetof(struct ibv_port_attr, flags));
}

int ibv_query_gid(struct ibv_context *context, uint8_t port_num, int index,
		  union ibv_gid *gid)
{
	if (context == NULL || gid == NULL || port_num != 1 || index < 0 ||
	    index > 1)
		return -1;	/* rdma-core returns -1 for a bad index */
	*gid = droce_dev_of_ctx(context)->gid[index];
	return 0;
}

int _ibv_query_gid_ex(struct ibv_context *context, uint32_t port_num,
		      uint32_t gid_index, struct ibv_gid_entry *entry,
		      uint32_t flags, size_t entry_size)
{
	struct ibv_gid_entry e;

	if (context == NULL || entry == NULL || flags || port_num != 1 ||
	    entry_size < sizeof(e))
		return EINVAL;
	if (gid_index > 1)
		return ENODATA;
	memset(&e, 0, sizeof(e));
	e.gid = droce_dev_of_ctx(context)->gid[gid_index];
	e.gid_index = gid_index;
	e.port_num = 1;
	e.gid_type = IBV_GID_TYPE_ROCE_V2;
	e.ndev_ifindex = 0;
	memcpy(entry, &e, sizeof(e));
	return 0;
}

ssize_t _ibv_query_gid_table(struct ibv_context *context,
			     struct ibv_gid_entry *entries, size_t max_entries,
			     uint32_t flags, size_t entry_size)
{
	ssize_t n = 0;

	if (context == NULL || entries == NULL || flags ||
	    entry_size < sizeof(*entries))
		return -EINVAL;
	for (uint32_t i = 0; i < 2; i++) {
		if ((size_t)n >= max_entries)
			return -EINVAL;
		_ibv_query_gid_ex(context, 1, i,
				  (struct ibv_gid_entry *)((uint8_t *)entries +
							   n * entry_size),
				  0, entry_size);
		n++;
	}
	return n;
}

int ibv_query_pkey(struct ibv_context *context, uint8_t port_num, int index,
		   __be16 *pkey)
{
	if (context == NULL || pkey == NULL || port_num != 1 || index != 0)
		return -1;
	*pkey = htons(ROCE_DEFAULT_PKEY);
	return 0;
}

int ibv_get_pkey_index(struct ibv_context *context, uint8_t port_num,
		       __be16 pkey)
{
	if (context == NULL || port_num != 1)
		return -1;
	return ntohs(pkey) == ROCE_DEFAULT_PKEY ? 0 : -1;
}

/* ---------------------------------------------------------------- PD */

struct ibv_pd *ibv_alloc_pd(struct ibv_context *context)
{
	struct droce_dev *dev;
	struct droce_pd *pd;

	if (context == NULL) {
		errno = EINVAL;
		return NULL;
	}
	dev = droce_dev_of_ctx(context);
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->nb_pd >= DROCE_MAX_PD) {
		pthread_mutex_unlock(&dev->lock);
		free(pd);
		errno = ENOMEM;
		return NULL;
	}
	pd->ibv.handle = ++dev->nb_pd;
	pthread_mutex_unlock(&dev->lock);
	pd->ibv.context = context;
	droce_obj_add(context, &pd->obj, DROCE_OBJ_PD);
	return &pd->ibv;
}

int ibv_dealloc_pd(struct ibv_pd *ibpd)
{
	struct droce_pd *pd;
	struct droce_dev *dev;

	if (ibpd == NULL)
		return EINVAL;
	pd = container_of(ibpd, struct droce_pd, ibv);
	dev = droce_dev_of_ctx(ibpd->context);
	if (__atomic_load_n(&pd->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	droce_obj_del(ibpd->context, &pd->obj);
	if (pd->base != NULL) {		/* a parent domain */
		__atomic_fetch_sub(&pd->base->refcnt, 1, __ATOMIC_RELAXED);
		if (pd->td != NULL)
			__atomic_fetch_sub(&pd->td->refcnt, 1,
					   __ATOMIC_RELAXED);
		free(pd);
		return 0;
	}
	pthread_mutex_lock(&dev->lock);
	dev->nb_pd--;
	pthread_mutex_unlock(&dev->lock);
	free(pd);
	return 0;
}

/* ------------------------------------------ thread and parent domains */

static struct ibv_td *droce_alloc_td(struct ibv_context *ctx,
				     struct ibv_td_init_attr *attr)
{
	struct droce_td *td;

	if (attr == NULL || attr->comp_mask) {
		errno = EINVAL;
		return NULL;
	}
	td = calloc(1, sizeof(*td));
	if (td == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	td->ibv.context = ctx;
	droce_obj_add(ctx, &td->obj, DROCE_OBJ_TD);
	return &td->ibv;
}

static int droce_dealloc_td(struct ibv_td *ibtd)
{
	struct droce_td *td = container_of(ibtd, struct droce_td, ibv);

	if (__atomic_load_n(&td->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	droce_obj_del(ibtd->context, &td->obj);
	free(td);
	return 0;
}

/*
 * ibv_alloc_parent_domain(3): a PD that stands for attr->pd (its MRs and
 * MWs serve the QPs made on it and the other way round), with a thread
 * domain or not. Custom allocators are accepted and never called:
 * droce's queues live in its huge-page memory, not in the application's.
 */
static struct ibv_pd *droce_alloc_parent_domain(struct ibv_context *ctx,
					struct ibv_parent_domain_init_attr *attr)
{
	struct droce_pd *base, *pd;

	if (attr == NULL || attr->pd == NULL || attr->pd->context != ctx ||
	    (attr->td != NULL && attr->td->context != ctx)) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & ~(uint32_t)(IBV_PARENT_DOMAIN_INIT_ATTR_ALLOCATORS |
					  IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	base = droce_pd_obj(attr->pd);
	if (base->base != NULL) {	/* a parent domain's parent */
		errno = EINVAL;
		return NULL;
	}
	pd = calloc(1, sizeof(*pd));
	if (pd == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	pd->ibv.context = ctx;
	pd->ibv.handle = base->ibv.handle;
	pd->base = base;
	if (attr->td != NULL) {
		pd->td = container_of(attr->td, struct droce_td, ibv);
		__atomic_fetch_add(&pd->td->refcnt, 1, __ATOMIC_RELAXED);
	}
	if (attr->comp_mask & IBV_PARENT_DOMAIN_INIT_ATTR_PD_CONTEXT)
		pd->pd_context = attr->pd_context;
	__atomic_fetch_add(&base->refcnt, 1, __ATOMIC_RELAXED);
	droce_obj_add(ctx, &pd->obj, DROCE_OBJ_PARENT_DOMAIN);
	return &pd->ibv;
}

/* ------------------------------------------------- misc ABI entries */

int ibv_fork_init(void)
{
	return 0;	/* nothing is pinned through the kernel */
}

enum ibv_fork_status ibv_is_fork_initialized(void)
{
	return IBV_FORK_UNNEEDED;
}

/* UD multicast is not there yet; the symbols are, so that programs which
 * reference them (perftest's send tests do) link and run. */
int ibv_attach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)gid; (void)lid;
	return qp ? EOPNOTSUPP : EINVAL;
}

int ibv_detach_mcast(struct ibv_qp *qp, const union ibv_gid *gid, uint16_t lid)
{
	(void)gid; (void)lid;
	return qp ? EOPNOTSUPP : EINVAL;
}

const char *ibv_node_type_str(enum ibv_node_type node_type)
{
	static const char *const s[] = {
		[IBV_NODE_CA] = "InfiniBand channel adapter",
		[IBV_NODE_SWITCH] = "InfiniBand switch",
		[IBV_NODE_ROUTER] = "InfiniBand router",
		[IBV_NODE_RNIC] = "iWARP NIC",
		[IBV_NODE_USNIC] = "usNIC",
		[IBV_NODE_USNIC_UDP] = "usNIC UDP",
		[IBV_NODE_UNSPECIFIED] = "unspecified",
	};

	if (node_type < IBV_NODE_CA || (size_t)node_type >= RTE_DIM(s) ||
	    s[node_type] == NULL)
		return "unknown";
	return s[node_type];
}

const char *ibv_port_state_str(enum ibv_port_state port_state)
{
	static const char *const s[] = {
		[IBV_PORT_NOP] = "no state change (NOP)",
		[IBV_PORT_DOWN] = "down",
		[IBV_PORT_INIT] = "init",
		[IBV_PORT_ARMED] = "armed",
		[IBV_PORT_ACTIVE] = "active",
		[IBV_PORT_ACTIVE_DEFER] = "active defer",
	};

	if ((size_t)port_state >= RTE_DIM(s))
		return "unknown";
	return s[port_state];
}

const char *ibv_wc_status_str(enum ibv_wc_status status)
{
	static const char *const s[] = {
		[IBV_WC_SUCCESS] = "success",
		[IBV_WC_LOC_LEN_ERR] = "local length error",
		[IBV_WC_LOC_QP_OP_ERR] = "local QP operation error",
		[IBV_WC_LOC_EEC_OP_ERR] = "local EE context operation error",
		[IBV_WC_LOC_PROT_ERR] = "local protection error",
		[IBV_WC_WR_FLUSH_ERR] = "Work Request Flushed Error",
		[IBV_WC_MW_BIND_ERR] = "memory management operation error",
		[IBV_WC_BAD_RESP_ERR] = "bad response error",
		[IBV_WC_LOC_ACCESS_ERR] = "local access error",
		[IBV_WC_REM_INV_REQ_ERR] = "remote invalid request error",
		[IBV_WC_REM_ACCESS_ERR] = "remote access error",
		[IBV_WC_REM_OP_ERR] = "remote operation error",
		[IBV_WC_RETRY_EXC_ERR] = "transport retry counter exceeded",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR retry counter exceeded",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "local RDD violation error",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "remote invalid RD request",
		[IBV_WC_REM_ABORT_ERR] = "aborted error",
		[IBV_WC_INV_EECN_ERR] = "invalid EE context number",
		[IBV_WC_INV_EEC_STATE_ERR] = "invalid EE context state",
		[IBV_WC_FATAL_ERR] = "fatal error",
		[IBV_WC_RESP_TIMEOUT_ERR] = "response timeout error",
		[IBV_WC_GENERAL_ERR] = "general error",
		[IBV_WC_TM_ERR] = "TM error",
		[IBV_WC_TM_RNDV_INCOMPLETE] = "TM software rendezvous",
	};

	if ((size_t)status >= RTE_DIM(s) || s[status] == NULL)
		return "unknown";
	return s[status];
}

const char *ibv_event_type_str(enum ibv_event_type event)
{
	static const char *const s[] = {
		[IBV_EVENT_CQ_ERR] = "CQ error",
		[IBV_EVENT_QP_FATAL] = "local work queue catastrophic error",
		[IBV_EVENT_QP_REQ_ERR] = "invalid request local work queue error",
		[IBV_EVENT_QP_ACCESS_ERR] = "local access violation work queue error",
		[IBV_EVENT_COMM_EST] = "communication established",
		[IBV_EVENT_SQ_DRAINED] = "send queue drained",
		[IBV_EVENT_PATH_MIG] = "path migrated",
		[IBV_EVENT_PATH_MIG_ERR] = "path migration request error",
		[IBV_EVENT_DEVICE_FATAL] = "local catastrophic error",
		[IBV_EVENT_PORT_ACTIVE] = "port active",
		[IBV_EVENT_PORT_ERR] = "port error",
		[IBV_EVENT_LID_CHANGE] = "LID change",
		[IBV_EVENT_PKEY_CHANGE] = "P_Key change",
		[IBV_EVENT_SM_CHANGE] = "SM change",
		[IBV_EVENT_SRQ_ERR] = "SRQ catastrophic error",
		[IBV_EVENT_SRQ_LIMIT_REACHED] = "SRQ limit reached",
		[IBV_EVENT_QP_LAST_WQE_REACHED] = "last WQE reached",
		[IBV_EVENT_CLIENT_REREGISTER] = "client reregistration",
		[IBV_EVENT_GID_CHANGE] = "GID table change",
		[IBV_EVENT_WQ_FATAL] = "WQ fatal",
	};

	if ((size_t)event >= RTE_DIM(s) || s[event] == NULL)
		return "unknown";
	return s[event];
}
