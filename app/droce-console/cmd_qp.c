/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * QPs: the state machine (modify qp with the attributes each transition
 * needs for the QP's transport, defaulted or given), connecting two local
 * RC or UC QPs or one to a remote endpoint (UD QPs are not connected: each
 * send names its destination), and the transport state as the engine sees
 * it.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_cycles.h>

#include "console.h"

#define PEEK(x) __atomic_load_n(&(x), __ATOMIC_RELAXED)

/* READs/atomics outstanding when not given: ConnectX's limit, which keeps
 * a QP's response queue inside the QP (the device allows up to 128) */
#define CONSOLE_RD_ATOMIC 16

static const struct {
	int bit;
	const char *name;
} mask_names[] = {
	{ IBV_QP_STATE, "state" }, { IBV_QP_CUR_STATE, "cur_state" },
	{ IBV_QP_EN_SQD_ASYNC_NOTIFY, "en_sqd_async_notify" },
	{ IBV_QP_ACCESS_FLAGS, "access" }, { IBV_QP_PKEY_INDEX, "pkey" },
	{ IBV_QP_PORT, "port" }, { IBV_QP_QKEY, "qkey" }, { IBV_QP_AV, "av" },
	{ IBV_QP_PATH_MTU, "mtu" }, { IBV_QP_TIMEOUT, "timeout" },
	{ IBV_QP_RETRY_CNT, "retry_cnt" }, { IBV_QP_RNR_RETRY, "rnr_retry" },
	{ IBV_QP_RQ_PSN, "rq_psn" }, { IBV_QP_MAX_QP_RD_ATOMIC, "max_rd_atomic" },
	{ IBV_QP_ALT_PATH, "alt_path" }, { IBV_QP_MIN_RNR_TIMER, "min_rnr_timer" },
	{ IBV_QP_SQ_PSN, "sq_psn" }, { IBV_QP_MAX_DEST_RD_ATOMIC, "max_dest_rd_atomic" },
	{ IBV_QP_PATH_MIG_STATE, "path_mig_state" }, { IBV_QP_CAP, "cap" },
	{ IBV_QP_DEST_QPN, "dqpn" }, { IBV_QP_RATE_LIMIT, "rate_limit" },
};

static void mask_str(int mask, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < RTE_DIM(mask_names); i++)
		if (mask & mask_names[i].bit)
			n += (size_t)snprintf(buf + n, len > n ? len - n : 0, "%s%s",
					      n ? "|" : "", mask_names[i].name);
}

static const char *needs(enum ibv_qp_type t, enum ibv_qp_state from,
			 enum ibv_qp_state to)
{
	if (from == IBV_QPS_RESET && to == IBV_QPS_INIT)
		return t == IBV_QPT_UD ? "UD RESET->INIT needs pkey, port, qkey (no access)" :
		       "RESET->INIT needs pkey, port, access";
	if (from == IBV_QPS_INIT && to == IBV_QPS_RTR)
		return t == IBV_QPT_UD ? "UD INIT->RTR needs nothing (qkey, pkey optional; no address: "
					 "each send names its destination)" :
		       t == IBV_QPT_UC ? "UC INIT->RTR needs av (dgid), mtu, dqpn, rq_psn (nothing about "
					 "reads or RNR)" :
		       "INIT->RTR needs av (dgid), mtu, dqpn, rq_psn, max_dest_rd_atomic, min_rnr_timer";
	if (from == IBV_QPS_RTR && to == IBV_QPS_RTS)
		return t == IBV_QPT_RC ? "RTR->RTS needs sq_psn, timeout, retry_cnt, rnr_retry, max_rd_atomic" :
		       t == IBV_QPT_UD ? "UD RTR->RTS needs sq_psn (qkey optional)" :
		       "UC RTR->RTS needs sq_psn (no timeout, retries or reads)";
	return "valid: RESET->INIT->RTR->RTS, RTS<->SQD, SQE->RTS, any->RESET|ERR";
}

/* What a modify asks for, before defaults. */
struct qp_mod {
	struct ibv_qp_attr a;
	int mask;
	int peer;			/* local peer QP id, -1 */
	bool remote;			/* dgid/dqpn given */
	bool nodefaults;
	bool quiet;
};

static void set_av(struct ibv_qp_attr *a, const union ibv_gid *dgid,
		   uint8_t sgid_index, uint8_t hop_limit, uint8_t tclass)
{
	memset(&a->ah_attr, 0, sizeof(a->ah_attr));
	a->ah_attr.is_global = 1;
	a->ah_attr.port_num = 1;
	a->ah_attr.grh.dgid = *dgid;
	a->ah_attr.grh.sgid_index = sgid_index;
	a->ah_attr.grh.hop_limit = hop_limit;
	a->ah_attr.grh.traffic_class = tclass;
}

/* Largest path MTU both ends allow (a remote end: ours). */
static int default_mtu(const struct con_qp *q, int peer)
{
	uint32_t m = g.devs[con_qp_dev(q)].dev->args.max_mtu;

	if (peer >= 0)
		m = RTE_MIN(m, g.devs[con_qp_dev(&g.qps[peer])].dev->args.max_mtu);
	return con_mtu_enum(m) < 0 ? IBV_MTU_1024 : con_mtu_enum(m);
}

/* Apply one transition of qp id to state `to`, filling in what it needs. */
static int qp_modify(int id, enum ibv_qp_state to, struct qp_mod *m)
{
	struct con_qp *q = &g.qps[id];
	struct ibv_qp_attr a = m->a;
	enum ibv_qp_state from = PEEK(droce_qp_of(q->qp)->state);
	int mask = m->mask | IBV_QP_STATE;
	char ms[256];
	int ret;

	a.qp_state = to;
	if (!m->nodefaults && q->type == IBV_QPT_UD) {
		/* UD: a Q_Key instead of access rights and an address; the
		 * other transitions need nothing but the send PSN. */
		if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
			if (!(mask & IBV_QP_PKEY_INDEX))
				a.pkey_index = 0;
			if (!(mask & IBV_QP_PORT))
				a.port_num = 1;
			if (!(mask & IBV_QP_QKEY))
				a.qkey = q->qkey;
			mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY;
		} else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
			if (!(mask & IBV_QP_SQ_PSN))
				a.sq_psn = q->psn;
			mask |= IBV_QP_SQ_PSN;
		}
		if (m->peer >= 0 || (mask & (IBV_QP_AV | IBV_QP_DEST_QPN)))
			return con_err("modify qp %d: qp %d is UD: it has no peer or destination "
				       "(each send names one: post send %d ah <id> qpn <n>)", id, id, id);
	} else if (!m->nodefaults) {
		bool uc = q->type == IBV_QPT_UC;

		if (from == IBV_QPS_RESET && to == IBV_QPS_INIT) {
			if (!(mask & IBV_QP_PKEY_INDEX))
				a.pkey_index = 0;
			if (!(mask & IBV_QP_PORT))
				a.port_num = 1;
			if (!(mask & IBV_QP_ACCESS_FLAGS))
				a.qp_access_flags = uc ? IBV_ACCESS_REMOTE_WRITE :
						    IBV_ACCESS_REMOTE_WRITE |
						    IBV_ACCESS_REMOTE_READ |
						    IBV_ACCESS_REMOTE_ATOMIC;
			mask |= IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS;
		} else if (from == IBV_QPS_INIT && to == IBV_QPS_RTR) {
			int peer = m->peer;

			if (!(mask & IBV_QP_AV) || !(mask & IBV_QP_DEST_QPN)) {
				if (peer < 0 && !q->remote && q->peer < 0)
					return con_err("modify qp %d: RTR needs the other end: peer <qp> (a local QP), "
						       "or dgid <gid> and dqpn <qpn> (and rq_psn)", id);
				if (peer < 0)
					peer = q->peer;
			}
			if (!(mask & IBV_QP_AV)) {
				union ibv_gid gid;

				if (peer >= 0) {
					if (ibv_query_gid(g.devs[con_qp_dev(&g.qps[peer])].ctx,
							  1, 1, &gid))
						return con_err("modify qp %d: cannot read the peer's GID", id);
				} else {
					gid = q->rgid;
				}
				set_av(&a, &gid, 1, 64, 0);
				mask |= IBV_QP_AV;
			}
			if (!(mask & IBV_QP_DEST_QPN)) {
				a.dest_qp_num = peer >= 0 ? g.qps[peer].qp->qp_num : q->rqpn;
				mask |= IBV_QP_DEST_QPN;
			}
			if (!(mask & IBV_QP_RQ_PSN)) {
				a.rq_psn = peer >= 0 ? g.qps[peer].psn : q->rpsn;
				mask |= IBV_QP_RQ_PSN;
			}
			if (!(mask & IBV_QP_PATH_MTU)) {
				a.path_mtu = (enum ibv_mtu)default_mtu(q, peer);
				mask |= IBV_QP_PATH_MTU;
			}
			if (!(mask & IBV_QP_MAX_DEST_RD_ATOMIC) && !uc) {
				a.max_dest_rd_atomic = CONSOLE_RD_ATOMIC;
				mask |= IBV_QP_MAX_DEST_RD_ATOMIC;
			}
			if (!(mask & IBV_QP_MIN_RNR_TIMER) && !uc) {
				a.min_rnr_timer = 12;
				mask |= IBV_QP_MIN_RNR_TIMER;
			}
		} else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS && uc) {
			if (!(mask & IBV_QP_SQ_PSN))
				a.sq_psn = q->psn;
			mask |= IBV_QP_SQ_PSN;
		} else if (from == IBV_QPS_RTR && to == IBV_QPS_RTS) {
			if (!(mask & IBV_QP_SQ_PSN))
				a.sq_psn = q->psn;
			if (!(mask & IBV_QP_TIMEOUT))
				a.timeout = 14;
			if (!(mask & IBV_QP_RETRY_CNT))
				a.retry_cnt = 7;
			if (!(mask & IBV_QP_RNR_RETRY))
				a.rnr_retry = 7;
			if (!(mask & IBV_QP_MAX_QP_RD_ATOMIC))
				a.max_rd_atomic = CONSOLE_RD_ATOMIC;
			mask |= IBV_QP_SQ_PSN | IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC;
		}
	}
	mask_str(mask, ms, sizeof(ms));
	ret = ibv_modify_qp(q->qp, &a, mask);
	if (ret)
		return con_err("modify qp %d: %s -> %s failed: %s (attr mask %s; %s)", id,
			       con_qp_state_str(from), con_qp_state_str(to),
			       strerror(ret), ms, needs(q->type, from, to));
	if (to == IBV_QPS_RTR || (mask & (IBV_QP_AV | IBV_QP_DEST_QPN))) {
		if (m->peer >= 0) {
			q->peer = m->peer;
			q->remote = false;
		} else if (m->remote) {
			q->peer = -1;
			q->remote = true;
			if (mask & IBV_QP_AV)
				q->rgid = a.ah_attr.grh.dgid;
			q->rqpn = a.dest_qp_num;
			q->rpsn = a.rq_psn;
		}
	}
	if (mask & IBV_QP_SQ_PSN)
		q->psn = a.sq_psn & 0xffffff;
	if (mask & IBV_QP_QKEY)
		q->qkey = a.qkey;
	if (!m->quiet)
		printf("qp %d: %s -> %s (%s)\n", id, con_qp_state_str(from),
		       con_qp_state_str(to), ms);
	return 0;
}

static int parse_mod(const char *cmd, int argc, char **argv, struct qp_mod *m)
{
	memset(m, 0, sizeof(*m));
	m->peer = -1;
	union ibv_gid dgid;
	uint64_t sgid_index = 1, hop_limit = 64, tclass = 0;
	bool av = false, sgid_set = false;

	for (int i = 0; i < argc; i++) {
		const char *k = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		uint64_t x = 0;

		if (strcmp(k, "nodefaults") == 0) {
			m->nodefaults = true;
			continue;
		}
		if (v == NULL)
			return con_err("%s: '%s' needs a value", cmd, k);
		i++;
		if (strcmp(k, "access") == 0) {
			unsigned int acc;

			if (con_access_parse(v, &acc))
				return con_err("%s: access takes a comma list of lw,rw,rr,ra, or all|none", cmd);
			if (strcmp(v, "all") == 0)	/* MW_BIND is for regions */
				acc &= ~(unsigned int)IBV_ACCESS_MW_BIND;
			m->a.qp_access_flags = (int)acc;
			m->mask |= IBV_QP_ACCESS_FLAGS;
			continue;
		}
		if (strcmp(k, "dgid") == 0) {
			if (con_gid_parse(v, &dgid))
				return con_err("%s: dgid '%s' is neither a GID nor an IPv4 address", cmd, v);
			av = true;
			m->remote = true;
			continue;
		}
		if (strcmp(k, "peer") == 0) {
			int pid;

			if (con_get_qp(cmd, v, &pid) == NULL)
				return -1;
			m->peer = pid;
			continue;
		}
		if (strcmp(k, "cur_state") == 0) {
			int s = con_qp_state_by_name(v);

			if (s < 0)
				return con_err("%s: cur_state: unknown state '%s'", cmd, v);
			m->a.cur_qp_state = (enum ibv_qp_state)s;
			m->mask |= IBV_QP_CUR_STATE;
			continue;
		}
		if (strcmp(k, "mtu") == 0) {
			if (con_arg_u64(cmd, "mtu", v, &x, 0))
				return -1;
			if (con_mtu_enum(x) < 0)
				return con_err("%s: mtu must be 256, 512, 1024, 2048 or 4096", cmd);
			m->a.path_mtu = (enum ibv_mtu)con_mtu_enum(x);
			m->mask |= IBV_QP_PATH_MTU;
			continue;
		}
		{
			static const struct {
				const char *name;
				int mask;
				uint64_t max;
			} num[] = {
				{ "pkey", IBV_QP_PKEY_INDEX, UINT16_MAX },
				{ "port", IBV_QP_PORT, UINT8_MAX },
				{ "dqpn", IBV_QP_DEST_QPN, 0xffffff },
				{ "rq_psn", IBV_QP_RQ_PSN, 0xffffff },
				{ "sq_psn", IBV_QP_SQ_PSN, 0xffffff },
				{ "max_dest_rd_atomic", IBV_QP_MAX_DEST_RD_ATOMIC, UINT8_MAX },
				{ "max_rd_atomic", IBV_QP_MAX_QP_RD_ATOMIC, UINT8_MAX },
				{ "min_rnr_timer", IBV_QP_MIN_RNR_TIMER, UINT8_MAX },
				{ "timeout", IBV_QP_TIMEOUT, UINT8_MAX },
				{ "retry_cnt", IBV_QP_RETRY_CNT, UINT8_MAX },
				{ "rnr_retry", IBV_QP_RNR_RETRY, UINT8_MAX },
				{ "qkey", IBV_QP_QKEY, UINT32_MAX },
				{ "sgid_index", 0, UINT8_MAX },
				{ "hop_limit", 0, UINT8_MAX },
				{ "traffic_class", 0, UINT8_MAX },
				{ "rate_limit", IBV_QP_RATE_LIMIT, UINT32_MAX },
			};
			size_t n;

			for (n = 0; n < RTE_DIM(num); n++)
				if (strcmp(k, num[n].name) == 0)
					break;
			if (n == RTE_DIM(num))
				return con_err("%s: unknown attribute '%s' (pkey port access qkey mtu dqpn dgid sgid_index hop_limit "
					       "traffic_class rq_psn sq_psn max_dest_rd_atomic max_rd_atomic min_rnr_timer "
					       "timeout retry_cnt rnr_retry rate_limit cur_state peer nodefaults)", cmd, k);
			if (con_arg_u64(cmd, k, v, &x, num[n].max))
				return -1;
			m->mask |= num[n].mask;
			switch (num[n].mask) {
			case IBV_QP_PKEY_INDEX: m->a.pkey_index = (uint16_t)x; break;
			case IBV_QP_PORT: m->a.port_num = (uint8_t)x; break;
			case IBV_QP_DEST_QPN: m->a.dest_qp_num = (uint32_t)x; m->remote = true; break;
			case IBV_QP_RQ_PSN: m->a.rq_psn = (uint32_t)x; break;
			case IBV_QP_SQ_PSN: m->a.sq_psn = (uint32_t)x; break;
			case IBV_QP_MAX_DEST_RD_ATOMIC: m->a.max_dest_rd_atomic = (uint8_t)x; break;
			case IBV_QP_MAX_QP_RD_ATOMIC: m->a.max_rd_atomic = (uint8_t)x; break;
			case IBV_QP_MIN_RNR_TIMER: m->a.min_rnr_timer = (uint8_t)x; break;
			case IBV_QP_TIMEOUT: m->a.timeout = (uint8_t)x; break;
			case IBV_QP_RETRY_CNT: m->a.retry_cnt = (uint8_t)x; break;
			case IBV_QP_RNR_RETRY: m->a.rnr_retry = (uint8_t)x; break;
			case IBV_QP_QKEY: m->a.qkey = (uint32_t)x; break;
			case IBV_QP_RATE_LIMIT: m->a.rate_limit = (uint32_t)x; break;
			default:
				if (k[0] == 's') {
					sgid_index = x;
					sgid_set = true;
				} else if (k[0] == 'h') {
					hop_limit = x;
				} else {
					tclass = x;
				}
			}
		}
	}
	if (av) {
		if (!sgid_set && !con_gid_is_v4(&dgid))
			sgid_index = 0;	/* link-local: RoCEv2 over IPv6 from GID 0 */
		set_av(&m->a, &dgid, (uint8_t)sgid_index, (uint8_t)hop_limit,
		       (uint8_t)tclass);
		m->mask |= IBV_QP_AV;
	}
	return 0;
}

static int modify_qp(int argc, char **argv)
{
	const char *cmd = "modify qp";
	struct qp_mod m;
	int id, st;

	if (argc < 2)
		return con_err("modify qp: usage: modify qp <id> reset|init|rtr|rts|sqd|sqe|err [attr value]... [nodefaults]");
	if (con_get_qp(cmd, argv[0], &id) == NULL)
		return -1;
	st = con_qp_state_by_name(argv[1]);
	if (st < 0)
		return con_err("modify qp: unknown state '%s' (reset init rtr rts sqd sqe err)",
			       argv[1]);
	if (g.qps[id].busy)
		return con_err("modify qp: qp %d is running traffic (traffic stop first)", id);
	if (parse_mod(cmd, argc - 2, argv + 2, &m))
		return -1;
	return qp_modify(id, (enum ibv_qp_state)st, &m);
}

/* RESET/INIT -> INIT -> RTR -> RTS with m's attributes. */
static int bring_up(int id, struct qp_mod *m)
{
	enum ibv_qp_state s = PEEK(droce_qp_of(g.qps[id].qp)->state);
	struct qp_mod init = { .peer = -1, .quiet = true };

	if (s != IBV_QPS_RESET && s != IBV_QPS_INIT)
		return con_err("connect qp: qp %d is in %s; connect starts from RESET or INIT "
			       "(modify qp %d reset)", id, con_qp_state_str(s), id);
	if (s == IBV_QPS_RESET && qp_modify(id, IBV_QPS_INIT, &init))
		return -1;
	m->quiet = true;
	if (qp_modify(id, IBV_QPS_RTR, m))
		return -1;
	{
		struct qp_mod rts = { .peer = -1, .quiet = true };

		return qp_modify(id, IBV_QPS_RTS, &rts);
	}
}

static void print_conn(int id)
{
	const struct con_qp *q = &g.qps[id];
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	if (ibv_query_qp(q->qp, &a, IBV_QP_STATE, &ia))
		return;
	printf("qp %d (QPN 0x%06x): %s, dqpn 0x%06x, path MTU %d, sq_psn 0x%06x rq_psn 0x%06x\n",
	       id, q->qp->qp_num, con_qp_state_str(a.qp_state), a.dest_qp_num,
	       128 << a.path_mtu, a.sq_psn, a.rq_psn);
}

static int connect_qp(int argc, char **argv)
{
	const char *cmd = "connect qp";
	struct qp_mod m;
	int a, b;

	if (argc < 2)
		return con_err("connect qp: usage: connect qp <a> <b> [attr value]... | connect qp <a> remote <gid> <qpn> <psn> [attr value]...");
	if (con_get_qp(cmd, argv[0], &a) == NULL)
		return -1;
	if (g.qps[a].busy)
		return con_err("connect qp: qp %d is running traffic", a);
	if (g.qps[a].type == IBV_QPT_UD)
		return con_err("connect qp: qp %d is UD: datagrams have no connection. Bring it up with "
			       "'modify qp %d init' (qkey), 'rtr', 'rts'; each send names its destination "
			       "(post send %d ah <id> qpn <n> qkey <k>)", a, a, a);
	if (strcmp(argv[1], "remote") == 0) {
		union ibv_gid gid;
		uint64_t qpn, psn;
		char gs[INET6_ADDRSTRLEN];

		if (argc < 5)
			return con_err("connect qp: usage: connect qp <a> remote <gid> <qpn> <psn> [mtu <n>] (see 'show endpoint' on the other side)");
		if (con_gid_parse(argv[2], &gid))
			return con_err("connect qp: '%s' is neither a GID nor an IPv4 address", argv[2]);
		if (con_arg_u64(cmd, "qpn", argv[3], &qpn, 0xffffff) ||
		    con_arg_u64(cmd, "psn", argv[4], &psn, 0xffffff))
			return -1;
		if (parse_mod(cmd, argc - 5, argv + 5, &m))
			return -1;
		if (!(m.mask & IBV_QP_AV))
			set_av(&m.a, &gid, 1, 64, 0);
		m.mask |= IBV_QP_AV | IBV_QP_DEST_QPN | IBV_QP_RQ_PSN;
		m.a.dest_qp_num = (uint32_t)qpn;
		m.a.rq_psn = (uint32_t)psn;
		m.remote = true;
		m.peer = -1;
		if (bring_up(a, &m))
			return -1;
		con_gid_str(&gid, gs, sizeof(gs));
		print_conn(a);
		printf("qp %d connected to remote %s QPN 0x%06" PRIx64 "\n", a, gs, qpn);
		return 0;
	}
	if (con_get_qp(cmd, argv[1], &b) == NULL)
		return -1;
	if (a == b)
		return con_err("connect qp: a QP cannot be its own peer (loopback: use two QPs)");
	if (g.qps[b].type != g.qps[a].type)
		return con_err("connect qp: qp %d is %s but qp %d is %s: both ends speak one transport",
			       a, con_qp_type_str(g.qps[a].type), b, con_qp_type_str(g.qps[b].type));
	if (g.qps[b].busy)
		return con_err("connect qp: qp %d is running traffic", b);
	if (parse_mod(cmd, argc - 2, argv + 2, &m))
		return -1;
	if (m.mask & (IBV_QP_AV | IBV_QP_DEST_QPN) || m.peer >= 0)
		return con_err("connect qp: dgid/dqpn/peer come from the two QPs here");
	{
		struct qp_mod mb = m;

		m.peer = b;
		mb.peer = a;
		if (bring_up(a, &m) || bring_up(b, &mb))
			return -1;
	}
	print_conn(a);
	print_conn(b);
	printf("qp %d <-> qp %d connected (%s, RESET -> INIT -> RTR -> RTS)\n", a, b,
	       con_qp_type_str(g.qps[a].type));
	return 0;
}

static int show_endpoint(int argc, char **argv)
{
	const struct con_qp *q;
	union ibv_gid gid;
	char gs[INET6_ADDRSTRLEN];
	int id, d;

	if (argc != 1)
		return con_err("show endpoint: usage: show endpoint <qp>");
	q = con_get_qp("show endpoint", argv[0], &id);
	if (q == NULL)
		return -1;
	d = con_qp_dev(q);
	if (ibv_query_gid(g.devs[d].ctx, 1, 1, &gid))
		return con_err("show endpoint: cannot read the GID of dev %d", d);
	con_gid_str(&gid, gs, sizeof(gs));
	if (q->type == IBV_QPT_UD) {
		printf("qp %d endpoint: gid %s qpn 0x%06x qkey 0x%08x, UD (dev %d, %s)\n", id, gs,
		       q->qp->qp_num, q->qkey, d, g.devs[d].dev->args.name);
		printf("  on the other console: create ah <its dev> %s, then\n"
		       "  post send <its UD qp> ah <that ah> qpn 0x%06x qkey 0x%08x\n",
		       gs, q->qp->qp_num, q->qkey);
		return 0;
	}
	printf("qp %d endpoint: gid %s qpn 0x%06x psn 0x%06x, %s (dev %d, %s)\n", id, gs,
	       q->qp->qp_num, q->psn, con_qp_type_str(q->type), d, g.devs[d].dev->args.name);
	printf("  on the other console: connect qp <its %s qp> remote %s 0x%06x 0x%06x\n",
	       con_qp_type_str(q->type), gs, q->qp->qp_num, q->psn);
	for (int i = 0; i < CON_MAX_MR; i++)
		if (g.mrs[i].used && g.mrs[i].pd == q->pd)
			printf("  mr %d: raddr 0x%" PRIx64 " rkey 0x%x len %" PRIu64 "\n", i,
			       (uint64_t)(uintptr_t)g.mrs[i].buf, g.mrs[i].mr->rkey,
			       g.mrs[i].len);
	return 0;
}

static void flags_str(uint32_t f, char *buf, size_t len)
{
	static const char *const n[] = {
		"ON_ACTIVE", "ACK_PENDING", "ARP_WAIT", "NAK_SENT", "FLUSH",
		"ON_TIMER", "REQ_STALL",
	};
	size_t k = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < 32; i++)
		if (f & (1u << i))
			k += (size_t)snprintf(buf + k, len > k ? len - k : 0, "%s%s",
					      k ? "|" : "",
					      i < RTE_DIM(n) ? n[i] : "?");
	if (k == 0)
		snprintf(buf, len, "none");
}

static void show_qp_detail(int id)
{
	const struct con_qp *q = &g.qps[id];
	const struct droce_qp *dq = droce_qp_of(q->qp);
	struct droce_qp_stats st;
	enum ibv_qp_state s = PEEK(dq->state);
	uint32_t sq_pi = PEEK(dq->sq_db), sq_ci = PEEK(dq->sq_ci);
	struct ibv_qp_cap cap = con_qp_cap(q->qp);
	uint32_t acked = PEEK(dq->req_acked), cur = PEEK(dq->req_cur);
	uint64_t timer = PEEK(dq->req_timer_tsc);
	char acc[64], fl[128], dip[INET6_ADDRSTRLEN];
	union ibv_gid dst_gid = dq->dst_gid;

	objects_print_qp_line(id);
	if (q->type == IBV_QPT_UD) {
		printf("  transport UD: qkey 0x%08x, datagrams of one packet (at most %u B), each send"
		       " names its destination (ah, qpn, qkey); receives start with a 40 B GRH\n",
		       PEEK(dq->qkey), PEEK(dq->mtu));
	} else {
		printf("  transport %s%s\n", con_qp_type_str(q->type),
		       q->type == IBV_QPT_UC ? ": unacknowledged (no ACKs, retries, READs or atomics;"
					       " a WQE completes once sent)" :
		       ": reliable (ACKs, retransmission, READs and atomics)");
		printf("  attributes: path MTU %u, access %s, timeout %u, retry_cnt %u, rnr_retry %u,"
		       " min_rnr_timer %u, max_rd_atomic %u, max_dest_rd_atomic %u\n",
		       PEEK(dq->mtu), con_access_str(PEEK(dq->access), acc, sizeof(acc)),
		       PEEK(dq->timeout), PEEK(dq->retry_cnt), PEEK(dq->rnr_retry),
		       PEEK(dq->min_rnr_timer), PEEK(dq->max_rd_atomic),
		       PEEK(dq->max_dest_rd_atomic));
		inet_ntop(AF_INET6, dst_gid.raw, dip, sizeof(dip));
		printf("  path: dest QPN 0x%06x, dest IP %s, UDP source port %u, dest MAC %s\n",
		       PEEK(dq->dest_qpn), dip, PEEK(dq->udp_sport),
		       PEEK(dq->tmpl_ready) ? "resolved" : "not resolved yet");
	}
	if (q->srq >= 0)
		printf("  receives: from srq %d (shared; %u WQEs posted there)\n", q->srq,
		       con_rq_pending(dq));
	printf("  caps: sq %u WQEs (stride %u B), rq %u, send sge %u, recv sge %u, inline %u, sq_sig_all %d\n",
	       cap.max_send_wr, dq->sq_stride, cap.max_recv_wr, cap.max_send_sge,
	       cap.max_recv_sge, cap.max_inline_data, dq->sq_sig_all);
	printf("  requester: sq_psn 0x%06x  req_psn 0x%06x  una_psn 0x%06x  outstanding WQEs %u"
	       " (sent %u, to send %u; sq pi %u ci %u)\n",
	       PEEK(dq->sq_psn), PEEK(dq->req_psn), PEEK(dq->req_una_psn),
	       sq_pi - acked, cur - acked, sq_pi - cur, sq_pi, sq_ci);
	printf("             reads/atomics in flight %u, retries %u, rnr retries %u, rnr wait %s,"
	       " timer %s",
	       PEEK(dq->req_rd_outstanding), PEEK(dq->req_retries),
	       PEEK(dq->req_rnr_retries), PEEK(dq->req_rnr_wait) ? "yes" : "no",
	       timer ? "armed" : "off");
	if (timer) {
		uint64_t now = rte_rdtsc();

		printf(" (%s %.0f us)", timer > now ? "fires in" : "due",
		       (double)(timer > now ? timer - now : now - timer) * 1e6 /
		       (double)g.tsc_hz);
	}
	printf("\n");
	printf("  responder: rq_psn 0x%06x  epsn 0x%06x  msn %u  recv WQEs posted %u%s,"
	       " read/atomic responses queued %u\n",
	       PEEK(dq->rq_psn), PEEK(dq->resp_epsn), PEEK(dq->resp_msn),
	       con_rq_pending(dq), q->srq >= 0 ? " (the SRQ's)" : "",
	       PEEK(dq->rd_tail) - PEEK(dq->rd_head));
	if (PEEK(dq->rate_limit)) {
		uint64_t due = PEEK(dq->pace_due), now = rte_rdtsc();
		bool waiting = PEEK(dq->flags) & DROCE_QPF_ON_PACE;

		printf("  pacing: %u kbit/s of frames, max_burst_sz %u B%s, typical_pkt_sz %u B%s; %s",
		       PEEK(dq->rate_limit), PEEK(dq->rate_max_burst),
		       PEEK(dq->rate_max_burst) ? "" : " (default)",
		       PEEK(dq->rate_typical_pkt),
		       PEEK(dq->rate_typical_pkt) ? "" : " (a path MTU's frame)",
		       waiting ? "waiting" : "not waiting");
		if (waiting)
			printf(" (sends again in %.0f us)", due > now ?
			       (double)(due - now) * 1e6 / (double)g.tsc_hz : 0.0);
		printf("\n");
	} else {
		printf("  pacing: off\n");
	}
	flags_str(PEEK(dq->flags), fl, sizeof(fl));
	printf("  engine flags: %s\n", fl);
	if (droce_qp_stats_get(q->qp, &st) == 0) {
		printf("  counters:");
#define X(name, help) printf(" " #name " %" PRIu64, st.name);
		DROCE_QP_STATS(X)
#undef X
		printf("\n");
	}
	(void)s;
}

static int show_qp(int argc, char **argv)
{
	int id, n = 0;

	if (argc > 1)
		return con_err("show qp: usage: show qp [<id>]");
	if (argc == 1) {
		if (con_get_qp("show qp", argv[0], &id) == NULL)
			return -1;
		show_qp_detail(id);
		return 0;
	}
	for (int i = 0; i < CON_MAX_QP; i++)
		if (g.qps[i].used) {
			show_qp_detail(i);
			n++;
		}
	if (n == 0)
		printf("no qp\n");
	return 0;
}

/* rate qp <id> <kbps> [burst <bytes>] [pkt <bytes>]: packet pacing */
static int rate_qp(int argc, char **argv)
{
	const char *cmd = "rate qp";
	struct ibv_qp_rate_limit_attr rl;
	uint64_t x;
	int id, ret;

	if (argc < 2 || argc % 2)
		return con_err("rate qp: usage: rate qp <id> <kbit/s> [burst <bytes>] [pkt <bytes>] (0: no limit)");
	if (con_get_qp(cmd, argv[0], &id) == NULL)
		return -1;
	memset(&rl, 0, sizeof(rl));
	if (con_arg_u64(cmd, "rate (kbit/s)", argv[1], &x, UINT32_MAX))
		return -1;
	rl.rate_limit = (uint32_t)x;
	for (int i = 2; i < argc; i += 2) {
		if (strcmp(argv[i], "burst") == 0) {
			if (con_arg_size(cmd, "burst", argv[i + 1], &x, UINT32_MAX))
				return -1;
			rl.max_burst_sz = (uint32_t)x;
		} else if (strcmp(argv[i], "pkt") == 0) {
			if (con_arg_size(cmd, "pkt", argv[i + 1], &x, UINT16_MAX))
				return -1;
			rl.typical_pkt_sz = (uint16_t)x;
		} else {
			return con_err("rate qp: unknown option '%s' (burst pkt)", argv[i]);
		}
	}
	ret = ibv_modify_qp_rate_limit(g.qps[id].qp, &rl);
	if (ret)
		return con_err("rate qp: ibv_modify_qp_rate_limit: %s", strerror(ret));
	if (rl.rate_limit)
		printf("qp %d: paced at %u kbit/s of frames, bursts of %s%u B\n", id,
		       rl.rate_limit, rl.max_burst_sz ? "" : "(default) ",
		       rl.max_burst_sz);
	else
		printf("qp %d: not paced\n", id);
	return 0;
}

const struct con_cmd con_cmds_qp[] = {
	{ "qp", "show qp", "[<id>]", "transport (RC/UC/UD, qkey, SRQ) and its state: attributes, PSNs (req_psn/una/epsn), "
	  "outstanding WQEs, retries, timer, counters", show_qp },
	{ "qp", "modify qp", "<id> reset|init|rtr|rts|sqd|sqe|err [attr value]... [nodefaults]",
	  "move a QP to a state. Attributes: pkey port access qkey mtu dqpn dgid sgid_index hop_limit traffic_class rq_psn "
	  "sq_psn max_dest_rd_atomic max_rd_atomic min_rnr_timer timeout retry_cnt rnr_retry rate_limit cur_state, peer <qp> (a local QP "
	  "as the other end). What the transition needs for the QP's transport and is not given is defaulted, unless "
	  "nodefaults. UD QPs go init (qkey), rtr, rts without a peer", modify_qp },
	{ "qp", "connect qp", "<a> <b> [mtu <n>] [attr value]... | <a> remote <gid> <qpn> <psn> [mtu <n>]",
	  "bring RC or UC QPs from RESET (or INIT) to RTS: two local QPs with each other, or one with a remote endpoint", connect_qp },
	{ "qp", "rate qp", "<id> <kbit/s> [burst <bytes>] [pkt <bytes>]",
	  "pace what the QP sends (ibv_modify_qp_rate_limit): at most that many kbit/s of frames, in bursts of at "
	  "most <burst> bytes (default 64 us at the rate, two frames at least); 0: no limit", rate_qp },
	{ "qp", "show endpoint", "<qp>", "our GID, QPN, PSN (what the other side's 'connect qp ... remote' needs) and MR keys", show_endpoint },
	{ NULL, NULL, NULL, NULL, NULL },
};
