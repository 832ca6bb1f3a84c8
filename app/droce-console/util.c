/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Helpers shared by the command groups: argument parsing, object lookups,
 * names of verbs enums, fill patterns, completion printing.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include "console.h"

const struct con_opdesc con_ops[CON_OP_MAX] = {
	[CON_OP_SEND] = { "send", "SEND", IBV_WR_SEND,
			  CON_OPF_RECV | CON_OPF_INLINE | CON_OPF_UC | CON_OPF_UD },
	[CON_OP_SEND_IMM] = { "send_imm", "SEND_WITH_IMM", IBV_WR_SEND_WITH_IMM,
			      CON_OPF_RECV | CON_OPF_IMM | CON_OPF_INLINE |
			      CON_OPF_UC | CON_OPF_UD },
	[CON_OP_SEND_INV] = { "send_inv", "SEND_WITH_INV", IBV_WR_SEND_WITH_INV,
			      CON_OPF_RECV | CON_OPF_INV | CON_OPF_INLINE |
			      CON_OPF_NOTRAFFIC },
	[CON_OP_WRITE] = { "write", "RDMA_WRITE", IBV_WR_RDMA_WRITE,
			   CON_OPF_REMOTE | CON_OPF_INLINE | CON_OPF_UC },
	[CON_OP_WRITE_IMM] = { "write_imm", "RDMA_WRITE_WITH_IMM",
			       IBV_WR_RDMA_WRITE_WITH_IMM,
			       CON_OPF_REMOTE | CON_OPF_IMM | CON_OPF_RECV |
			       CON_OPF_INLINE | CON_OPF_UC },
	[CON_OP_READ] = { "read", "RDMA_READ", IBV_WR_RDMA_READ, CON_OPF_REMOTE },
	[CON_OP_CAS] = { "cas", "ATOMIC_CMP_AND_SWP", IBV_WR_ATOMIC_CMP_AND_SWP,
			 CON_OPF_REMOTE | CON_OPF_ATOMIC },
	[CON_OP_FAA] = { "faa", "ATOMIC_FETCH_AND_ADD",
			 IBV_WR_ATOMIC_FETCH_AND_ADD,
			 CON_OPF_REMOTE | CON_OPF_ATOMIC },
	[CON_OP_BIND_MW] = { "bind_mw", "BIND_MW", IBV_WR_BIND_MW,
			     CON_OPF_MW | CON_OPF_NODATA | CON_OPF_UC |
			     CON_OPF_NOTRAFFIC },
	[CON_OP_LOCAL_INV] = { "local_inv", "LOCAL_INV", IBV_WR_LOCAL_INV,
			       CON_OPF_INV | CON_OPF_NODATA | CON_OPF_UC |
			       CON_OPF_NOTRAFFIC },
	[CON_OP_RECV] = { "recv", "RECV", 0, CON_OPF_NOTRAFFIC },
};

const char *const con_tr_names[CON_TR_MAX] = { "RC", "UC", "UD", "SRQ" };

int con_qp_tr(const struct con_qp *q)
{
	return q->type == IBV_QPT_UC ? CON_TR_UC :
	       q->type == IBV_QPT_UD ? CON_TR_UD : CON_TR_RC;
}

const char *con_qp_type_str(enum ibv_qp_type t)
{
	switch (t) {
	case IBV_QPT_RC: return "RC";
	case IBV_QPT_UC: return "UC";
	case IBV_QPT_UD: return "UD";
	default: return "?";
	}
}

int con_op_by_name(const char *s)
{
	for (int i = 0; i < CON_OP_MAX; i++)
		if (strcmp(s, con_ops[i].name) == 0)
			return i;
	return -1;
}

int con_err(const char *fmt, ...)
{
	va_list ap;

	fputs("error: ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
	return -1;
}

/* ------------------------------------------------------------ numbers */

int con_u64(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;

	if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || *end)
		return -1;
	*v = x;
	return 0;
}

int con_size(const char *s, uint64_t *v)
{
	char *end;
	unsigned long long x;
	unsigned int shift = 0;

	if (s == NULL || *s == '\0' || *s == '-' || *s == '+')
		return -1;
	errno = 0;
	x = strtoull(s, &end, 0);
	if (errno || end == s)
		return -1;
	switch (*end) {
	case '\0': break;
	case 'k': case 'K': shift = 10; end++; break;
	case 'm': case 'M': shift = 20; end++; break;
	case 'g': case 'G': shift = 30; end++; break;
	default: return -1;
	}
	if (*end == 'i' || *end == 'b' || *end == 'B')	/* 4KiB, 4kB */
		end += (*end == 'i' && (end[1] == 'B' || end[1] == 'b')) ? 2 : 1;
	if (*end)
		return -1;
	if (shift && x > (UINT64_MAX >> shift))
		return -1;
	*v = (uint64_t)x << shift;
	return 0;
}

int con_arg_u64(const char *cmd, const char *what, const char *s, uint64_t *v,
		uint64_t max)
{
	if (con_u64(s, v))
		return con_err("%s: %s must be a number (decimal or 0x...), not '%s'",
			       cmd, what, s);
	if (max && *v > max)
		return con_err("%s: %s %" PRIu64 " is too large (at most %" PRIu64 ")",
			       cmd, what, *v, max);
	return 0;
}

int con_arg_size(const char *cmd, const char *what, const char *s,
		 uint64_t *v, uint64_t max)
{
	if (con_size(s, v))
		return con_err("%s: %s must be a size (e.g. 4096, 64k, 1m), not '%s'",
			       cmd, what, s);
	if (max && *v > max)
		return con_err("%s: %s %" PRIu64 " is too large (at most %" PRIu64 ")",
			       cmd, what, *v, max);
	return 0;
}

int con_opts(const char *cmd, int argc, char **argv, const struct con_opt *o)
{
	for (int i = 0; i < argc; i++) {
		const struct con_opt *p;

		for (p = o; p->name; p++)
			if (strcmp(p->name, argv[i]) == 0)
				break;
		if (p->name == NULL) {
			char list[512];
			size_t n = 0;

			list[0] = '\0';
			for (p = o; p->name && n < sizeof(list) - 40; p++)
				n += (size_t)snprintf(list + n, sizeof(list) - n, " %s%s",
						      p->name, p->type == OPT_FLAG ? "" : " <v>");
			return con_err("%s: unknown option '%s' (options:%s)", cmd,
				       argv[i], o->name ? list : " none");
		}
		if (p->seen)
			*p->seen = true;
		if (p->type == OPT_FLAG) {
			*(bool *)p->dst = true;
			continue;
		}
		if (i + 1 >= argc)
			return con_err("%s: option '%s' needs a value", cmd, p->name);
		i++;
		switch (p->type) {
		case OPT_U64:
			if (con_arg_u64(cmd, p->name, argv[i], p->dst, p->max))
				return -1;
			break;
		case OPT_SIZE:
			if (con_arg_size(cmd, p->name, argv[i], p->dst, p->max))
				return -1;
			break;
		case OPT_STR:
			*(const char **)p->dst = argv[i];
			break;
		case OPT_FLAG:
			break;
		}
	}
	return 0;
}

/* ------------------------------------------------------------ lookups */

static int get_id(const char *cmd, const char *kind, const char *s, int max,
		  int *id)
{
	uint64_t v;

	if (s == NULL)
		return con_err("%s: missing %s id", cmd, kind);
	if (con_u64(s, &v) || v >= (uint64_t)max)
		return con_err("%s: '%s' is not a %s id (0..%d)", cmd, s, kind,
			       max - 1);
	*id = (int)v;
	return 0;
}

struct con_dev *con_get_dev(const char *cmd, const char *s, int *id)
{
	int i = 0;

	if (get_id(cmd, "device", s, DROCE_MAX_DEVS, &i))
		return NULL;
	if (i >= g.nb_devs) {
		con_err("%s: no device %d (there %s %d: see 'show devices')", cmd,
			i, g.nb_devs == 1 ? "is" : "are", g.nb_devs);
		return NULL;
	}
	if (id)
		*id = i;
	return &g.devs[i];
}

#define DEF_GET(kind, arr, max, T) \
T *con_get_##kind(const char *cmd, const char *s, int *id) \
{ \
	int i = 0; \
	if (get_id(cmd, #kind, s, max, &i)) \
		return NULL; \
	if (!g.arr[i].used) { \
		con_err("%s: there is no " #kind " %d (see 'show objects')", cmd, i); \
		return NULL; \
	} \
	if (id) \
		*id = i; \
	return &g.arr[i]; \
}
DEF_GET(pd, pds, CON_MAX_PD, struct con_pd)
DEF_GET(mr, mrs, CON_MAX_MR, struct con_mr)
DEF_GET(cq, cqs, CON_MAX_CQ, struct con_cq)
DEF_GET(qp, qps, CON_MAX_QP, struct con_qp)
DEF_GET(srq, srqs, CON_MAX_SRQ, struct con_srq)
DEF_GET(ah, ahs, CON_MAX_AH, struct con_ah)
DEF_GET(mw, mws, CON_MAX_MW, struct con_mw)
#undef DEF_GET

struct ibv_qp_cap con_qp_cap(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&ia, 0, sizeof(ia));
	if (ibv_query_qp(qp, &a, IBV_QP_CAP, &ia))
		memset(&ia.cap, 0, sizeof(ia.cap));
	return ia.cap;
}

int con_qp_dev(const struct con_qp *q)
{
	return g.pds[q->pd].dev;
}

int con_mr_dev(const struct con_mr *m)
{
	return g.pds[m->pd].dev;
}

int con_pd_dev(int pd)
{
	return g.pds[pd].dev;
}

int con_mr_by_ibv(const struct ibv_mr *mr)
{
	for (int i = 0; i < CON_MAX_MR; i++)
		if (g.mrs[i].used && g.mrs[i].mr == mr)
			return i;
	return -1;
}

int con_dev_of_ctx(struct ibv_context *ctx)
{
	for (int i = 0; i < g.nb_devs; i++)
		if (g.devs[i].ctx == ctx)
			return i;
	return -1;
}

int con_qp_by_qpn(int dev, uint32_t qpn)
{
	for (int i = 0; i < CON_MAX_QP; i++)
		if (g.qps[i].used && con_qp_dev(&g.qps[i]) == dev &&
		    g.qps[i].qp->qp_num == qpn)
			return i;
	return -1;
}

/* ------------------------------------------------------------ names */

static const char *const qp_states[] = {
	[IBV_QPS_RESET] = "reset", [IBV_QPS_INIT] = "init",
	[IBV_QPS_RTR] = "rtr", [IBV_QPS_RTS] = "rts", [IBV_QPS_SQD] = "sqd",
	[IBV_QPS_SQE] = "sqe", [IBV_QPS_ERR] = "err",
};

const char *con_qp_state_str(enum ibv_qp_state s)
{
	static const char *const up[] = {
		[IBV_QPS_RESET] = "RESET", [IBV_QPS_INIT] = "INIT",
		[IBV_QPS_RTR] = "RTR", [IBV_QPS_RTS] = "RTS", [IBV_QPS_SQD] = "SQD",
		[IBV_QPS_SQE] = "SQE", [IBV_QPS_ERR] = "ERR",
	};

	if ((unsigned int)s < RTE_DIM(up))
		return up[s];
	return "UNKNOWN";
}

int con_qp_state_by_name(const char *s)
{
	for (unsigned int i = 0; i < RTE_DIM(qp_states); i++)
		if (strcasecmp(s, qp_states[i]) == 0)
			return (int)i;
	if (strcasecmp(s, "error") == 0)
		return IBV_QPS_ERR;
	return -1;
}

const char *con_wc_opcode_str(enum ibv_wc_opcode op)
{
	switch (op) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_TSO: return "TSO";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

static const struct {
	enum ibv_wc_status st;
	const char *name;
} wc_status_names[] = {
	{ IBV_WC_SUCCESS, "success" },
	{ IBV_WC_LOC_LEN_ERR, "loc_len_err" },
	{ IBV_WC_LOC_QP_OP_ERR, "loc_qp_op_err" },
	{ IBV_WC_LOC_EEC_OP_ERR, "loc_eec_op_err" },
	{ IBV_WC_LOC_PROT_ERR, "loc_prot_err" },
	{ IBV_WC_WR_FLUSH_ERR, "wr_flush_err" },
	{ IBV_WC_MW_BIND_ERR, "mw_bind_err" },
	{ IBV_WC_BAD_RESP_ERR, "bad_resp_err" },
	{ IBV_WC_LOC_ACCESS_ERR, "loc_access_err" },
	{ IBV_WC_REM_INV_REQ_ERR, "rem_inv_req_err" },
	{ IBV_WC_REM_ACCESS_ERR, "rem_access_err" },
	{ IBV_WC_REM_OP_ERR, "rem_op_err" },
	{ IBV_WC_RETRY_EXC_ERR, "retry_exc_err" },
	{ IBV_WC_RNR_RETRY_EXC_ERR, "rnr_retry_exc_err" },
	{ IBV_WC_LOC_RDD_VIOL_ERR, "loc_rdd_viol_err" },
	{ IBV_WC_REM_INV_RD_REQ_ERR, "rem_inv_rd_req_err" },
	{ IBV_WC_REM_ABORT_ERR, "rem_abort_err" },
	{ IBV_WC_INV_EECN_ERR, "inv_eecn_err" },
	{ IBV_WC_INV_EEC_STATE_ERR, "inv_eec_state_err" },
	{ IBV_WC_FATAL_ERR, "fatal_err" },
	{ IBV_WC_RESP_TIMEOUT_ERR, "resp_timeout_err" },
	{ IBV_WC_GENERAL_ERR, "general_err" },
};

const char *con_wc_status_name(enum ibv_wc_status s)
{
	for (unsigned int i = 0; i < RTE_DIM(wc_status_names); i++)
		if (wc_status_names[i].st == s)
			return wc_status_names[i].name;
	return "unknown";
}

int con_wc_status_by_name(const char *s)
{
	for (unsigned int i = 0; i < RTE_DIM(wc_status_names); i++)
		if (strcasecmp(s, wc_status_names[i].name) == 0 ||
		    (strncasecmp(s, "IBV_WC_", 7) == 0 &&
		     strcasecmp(s + 7, wc_status_names[i].name) == 0))
			return (int)wc_status_names[i].st;
	return -1;
}

static const struct {
	const char *name;
	unsigned int bit;
} access_names[] = {
	{ "lw", IBV_ACCESS_LOCAL_WRITE },
	{ "rw", IBV_ACCESS_REMOTE_WRITE },
	{ "rr", IBV_ACCESS_REMOTE_READ },
	{ "ra", IBV_ACCESS_REMOTE_ATOMIC },
	{ "mw", IBV_ACCESS_MW_BIND },
};

const char *con_access_str(unsigned int a, char *buf, size_t len)
{
	size_t n = 0;

	buf[0] = '\0';
	for (unsigned int i = 0; i < RTE_DIM(access_names); i++)
		if (a & access_names[i].bit)
			n += (size_t)snprintf(buf + n, len > n ? len - n : 0, "%s%s",
					      n ? "," : "", access_names[i].name);
	if (n == 0)
		snprintf(buf, len, "none");
	return buf;
}

/* "all" (lw,rw,rr,ra,mw), "none", "local" or a comma list of
 * lw,rw,rr,ra,mw (mw: IBV_ACCESS_MW_BIND, windows may be bound to it). */
int con_access_parse(const char *s, unsigned int *a)
{
	char tmp[128], *save = NULL;

	if (strcmp(s, "all") == 0) {
		*a = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC |
		     IBV_ACCESS_MW_BIND;
		return 0;
	}
	if (strcmp(s, "none") == 0) {
		*a = 0;
		return 0;
	}
	if (strcmp(s, "local") == 0) {
		*a = IBV_ACCESS_LOCAL_WRITE;
		return 0;
	}
	if (strlen(s) >= sizeof(tmp))
		return -1;
	strcpy(tmp, s);
	*a = 0;
	for (char *t = strtok_r(tmp, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
		unsigned int i;

		for (i = 0; i < RTE_DIM(access_names); i++)
			if (strcmp(t, access_names[i].name) == 0)
				break;
		if (i == RTE_DIM(access_names))
			return -1;
		*a |= access_names[i].bit;
	}
	return 0;
}

int con_mtu_enum(uint64_t bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return -1;
	}
}

void con_gid_str(const union ibv_gid *gid, char *buf, size_t len)
{
	if (inet_ntop(AF_INET6, gid->raw, buf, (socklen_t)len) == NULL)
		snprintf(buf, len, "?");
}

bool con_gid_is_v4(const union ibv_gid *gid)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(gid->raw, v4, sizeof(v4)) == 0;
}

/* An IPv6 GID, or a plain IPv4 address taken as ::ffff:a.b.c.d. */
int con_gid_parse(const char *s, union ibv_gid *gid)
{
	struct in_addr a4;

	if (inet_pton(AF_INET6, s, gid->raw) == 1)
		return 0;
	if (inet_pton(AF_INET, s, &a4) == 1) {
		memset(gid->raw, 0, 10);
		gid->raw[10] = 0xff;
		gid->raw[11] = 0xff;
		memcpy(&gid->raw[12], &a4, 4);
		return 0;
	}
	return -1;
}

/* ------------------------------------------------------------ patterns */

int con_pattern_parse(const char *cmd, int argc, char **argv,
		      struct con_pattern *p)
{
	memset(p, 0, sizeof(*p));
	if (argc < 1)
		return con_err("%s: missing pattern (zero | inc | random <seed> | byte <x>)",
			       cmd);
	if (strcmp(argv[0], "zero") == 0) {
		p->kind = 0;
		return 1;
	}
	if (strcmp(argv[0], "inc") == 0) {
		p->kind = 1;
		return 1;
	}
	if (strcmp(argv[0], "random") == 0 || strcmp(argv[0], "byte") == 0) {
		p->kind = argv[0][0] == 'r' ? 2 : 3;
		if (argc < 2)
			return con_err("%s: pattern '%s' needs a value (%s)", cmd,
				       argv[0], p->kind == 2 ? "seed" : "byte 0..255");
		if (con_arg_u64(cmd, p->kind == 2 ? "seed" : "byte", argv[1],
				&p->arg, p->kind == 2 ? 0 : 255))
			return -1;
		return 2;
	}
	return con_err("%s: unknown pattern '%s' (zero | inc | random <seed> | byte <x>)",
		       cmd, argv[0]);
}

static inline uint64_t mix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ull;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
	return x ^ (x >> 31);
}

/* Byte i of the pattern is a function of (pattern, base_off + i) only, so a
 * range can be filled or checked in pieces. */
void con_pattern_fill(const struct con_pattern *p, uint8_t *dst, uint64_t len,
		      uint64_t base_off)
{
	switch (p->kind) {
	case 0:
		memset(dst, 0, len);
		break;
	case 1:
		for (uint64_t i = 0; i < len; i++)
			dst[i] = (uint8_t)(base_off + i);
		break;
	case 2: {
		uint64_t word = UINT64_MAX, w = 0;

		for (uint64_t i = 0; i < len; i++) {
			uint64_t pos = base_off + i;

			if (pos / 8 != word) {
				word = pos / 8;
				w = mix64(p->arg * 0x100000001b3ull ^ word);
			}
			dst[i] = (uint8_t)(w >> ((pos % 8) * 8));
		}
		break;
	}
	default:
		memset(dst, (int)p->arg, len);
	}
}

void con_pattern_str(const struct con_pattern *p, char *buf, size_t len)
{
	switch (p->kind) {
	case 0: snprintf(buf, len, "zero"); break;
	case 1: snprintf(buf, len, "inc"); break;
	case 2: snprintf(buf, len, "random %" PRIu64, p->arg); break;
	default: snprintf(buf, len, "byte 0x%02" PRIx64, p->arg); break;
	}
}

/* ------------------------------------------------------------ CQs */

void con_cq_stash(struct con_cq *c, const struct ibv_wc *wc)
{
	if (c->st_len >= CON_STASH) {
		c->st_lost++;
		return;
	}
	c->stash[(c->st_head + c->st_len) % CON_STASH] = *wc;
	c->st_len++;
}

int con_cq_poll(struct con_cq *c, int n, struct ibv_wc *wc)
{
	int k = 0, r;

	while (k < n && c->st_len) {
		wc[k++] = c->stash[c->st_head];
		c->st_head = (c->st_head + 1) % CON_STASH;
		c->st_len--;
	}
	if (k == n)
		return k;
	r = ibv_poll_cq(c->cq, n - k, wc + k);
	if (r < 0)
		return k ? k : r;
	return k + r;
}

void con_tally_wc(const struct ibv_wc *wc)
{
	int op = CON_WRID_OP(wc->wr_id), tr = CON_WRID_TR(wc->wr_id);

	if (op < 0 || op >= CON_OP_MAX || tr >= CON_TR_MAX) {
		if (wc->status == IBV_WC_SUCCESS)
			g.tally.other_ok++;
		else
			g.tally.other_err++;
		return;
	}
	/* A receive WQE completing for a WRITE_IMM is still a receive. */
	if (wc->status == IBV_WC_SUCCESS)
		g.tally.ok[op][tr]++;
	else
		g.tally.err[op][tr]++;
}

void con_tally_wc_expect(const struct ibv_wc *wc, int expect)
{
	int op = CON_WRID_OP(wc->wr_id), tr = CON_WRID_TR(wc->wr_id);

	if (expect != IBV_WC_SUCCESS && (wc->status == (enum ibv_wc_status)expect ||
					 wc->status == IBV_WC_WR_FLUSH_ERR)) {
		g.tally.expected_err++;
		if (op >= 0 && op < CON_OP_MAX && tr < CON_TR_MAX)
			g.tally.expected[op][tr]++;
	} else {
		con_tally_wc(wc);
	}
}

void con_wc_print(int cq_id, const struct ibv_wc *wc)
{
	char flags[64];
	size_t n = 0;
	int op = CON_WRID_OP(wc->wr_id);
	char wrid[96];
	bool inv = wc->wc_flags & IBV_WC_WITH_INV;

	flags[0] = '\0';
	if (wc->wc_flags & IBV_WC_GRH)
		n += (size_t)snprintf(flags + n, sizeof(flags) - n, "GRH");
	if (wc->wc_flags & IBV_WC_WITH_IMM)
		n += (size_t)snprintf(flags + n, sizeof(flags) - n, "%sWITH_IMM", n ? "|" : "");
	if (wc->wc_flags & IBV_WC_WITH_INV)
		n += (size_t)snprintf(flags + n, sizeof(flags) - n, "%sWITH_INV", n ? "|" : "");
	if (wc->wc_flags & IBV_WC_IP_CSUM_OK)
		n += (size_t)snprintf(flags + n, sizeof(flags) - n, "%sIP_CSUM_OK", n ? "|" : "");
	if (n == 0)
		snprintf(flags, sizeof(flags), "0");
	if (op >= 0 && op < CON_OP_MAX && CON_WRID_TR(wc->wr_id) < CON_TR_MAX)
		snprintf(wrid, sizeof(wrid), "0x%016" PRIx64 " (%s%s%s #%" PRIu64 ")",
			 wc->wr_id, con_ops[op].name,
			 CON_WRID_TR(wc->wr_id) ? "/" : "",
			 CON_WRID_TR(wc->wr_id) ? con_tr_names[CON_WRID_TR(wc->wr_id)] : "",
			 (uint64_t)(wc->wr_id & 0xffffffffffffull));
	else
		snprintf(wrid, sizeof(wrid), "0x%" PRIx64, wc->wr_id);
	/* imm_data is in network order; invalidated_rkey (the same field)
	 * in host order */
	printf("cq %d: wr_id %s status %s (%d: %s) opcode %s (%d)\n"
	       "      qp_num 0x%06x src_qp 0x%06x byte_len %u %s 0x%08x"
	       " wc_flags %s pkey_index %u slid %u sl %u dlid_path_bits %u vendor_err 0x%x\n",
	       cq_id, wrid, con_wc_status_name(wc->status), wc->status,
	       ibv_wc_status_str(wc->status), con_wc_opcode_str(wc->opcode),
	       wc->opcode, wc->qp_num, wc->src_qp, wc->byte_len,
	       inv ? "invalidated_rkey" : "imm_data",
	       inv ? wc->invalidated_rkey : ntohl(wc->imm_data), flags, wc->pkey_index, wc->slid, wc->sl,
	       wc->dlid_path_bits, wc->vendor_err);
}
