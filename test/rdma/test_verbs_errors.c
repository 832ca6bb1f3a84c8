/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_verbs_errors: bad input must give the documented errno or work
 * completion status, and never crash. Real devices (ring pair, defaults:
 * 198.18.0.1 / 198.18.0.2, path MTU up to 1024).
 *
 * Where rdma-core's man pages define the result it is cited as
 * "ibv_xxx(3)". Where they do not, the expectation follows the
 * conventional provider behaviour and cites it:
 *   rxe.c        rdma-core providers/rxe/rxe.c (user-space soft RoCE)
 *   mlx5/qp.c    rdma-core providers/mlx5/qp.c
 *   k:rxe_*.c    Linux drivers/infiniband/sw/rxe/ (soft RoCE, kernel half)
 *   k:core       Linux drivers/infiniband/core/ (uverbs, ib_modify_qp_is_ok)
 *   IBA          InfiniBand Architecture Spec. Vol. 1
 * Each sub-test prints a line; failures print file:line and the values and
 * the run goes on (EXPECT_*), except where the set-up itself failed.
 */
#include <endian.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>

#include "droce.h"
#include "droce_test.h"

#define BSZ	65536u

static struct dt_env env;
static struct dt_dev *A, *B;
static uint8_t *bufA, *bufB;
static struct ibv_mr *mrA, *mrB;	/* BSZ each, local+remote access */

static void abort_hook(void)
{
	dt_dump_stats(&env);
}

static unsigned int t_fail_before;
static const char *t_name;

static void t_begin(const char *name)
{
	t_name = name;
	t_fail_before = dt_failures;
}

static void t_end(void)
{
	printf("%s %s\n", dt_failures == t_fail_before ? "[ OK ]" : "[FAIL]",
	       t_name);
}

static struct ibv_sge sge_of(const void *addr, uint32_t len, uint32_t lkey)
{
	struct ibv_sge s;

	s.addr = (uintptr_t)addr;
	s.length = len;
	s.lkey = lkey;
	return s;
}

/* ------------------------------------------------------------------ */
/* Connections                                                          */

static void qcfg_default(struct dt_qp_cfg *q)
{
	dt_qp_cfg_default(q);
	q->max_send_wr = 16;
	q->max_recv_wr = 16;
	q->max_send_sge = 2;
	q->max_recv_sge = 2;
	q->max_inline_data = 64;
	q->send_ops_flags = DT_SEND_OPS_ALL;
}

static void conn_open(struct dt_rc_pair *c, const struct dt_qp_cfg *qc,
		      const struct dt_conn_cfg *cc, bool connect)
{
	struct dt_qp_cfg q;
	struct dt_conn_cfg k;

	if (qc == NULL) {
		qcfg_default(&q);
		qc = &q;
	}
	if (cc == NULL) {
		dt_conn_cfg_default(&k);
		cc = &k;
	}
	dt_rc_pair_open(c, A, B, 1024, qc, connect ? cc : NULL, NULL,
			(uint32_t)dt_rand_range(0, 0xffffff),
			(uint32_t)dt_rand_range(0, 0xffffff));
}

static int post_send1(struct ibv_qp *qp, uint64_t wr_id,
		      enum ibv_wr_opcode op, struct ibv_sge *sge, int nsge,
		      unsigned int flags, uint64_t raddr, uint32_t rkey,
		      struct ibv_send_wr **bad)
{
	struct ibv_send_wr wr;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	wr.opcode = op;
	wr.send_flags = flags;
	wr.wr.rdma.remote_addr = raddr;
	wr.wr.rdma.rkey = rkey;
	return ibv_post_send(qp, &wr, bad);
}

static int post_recv1(struct ibv_qp *qp, uint64_t wr_id, struct ibv_sge *sge,
		      int nsge)
{
	struct ibv_recv_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = sge;
	wr.num_sge = nsge;
	return ibv_post_recv(qp, &wr, &bad);
}

/* Wait for one completion and check it; false if none came. */
static bool expect_one_at(const char *file, int line, struct dt_cq *cq,
			  const struct dt_wc_exp *e, const char *what)
{
	struct ibv_wc wc;

	if (dt_wait_wc(cq, &wc, 1, DT_WAIT_S, what) != 1) {
		dt_report(file, line, "%s: no completion (expected wr_id 0x%"
			  PRIx64 " status %s)", what, e->wr_id,
			  dt_wc_status_name(e->status));
		return false;
	}
	return dt_check_wc_at(file, line, &wc, e, false);
}
#define EXPECT_ONE(cq, e, what) expect_one_at(__FILE__, __LINE__, cq, e, what)

/* Wait for one completion; return its status (or -1 if none). */
static int wait_status(struct dt_cq *cq, const char *what, struct ibv_wc *out)
{
	struct ibv_wc wc;

	if (dt_wait_wc(cq, &wc, 1, DT_WAIT_S, what) != 1)
		return -1;
	if (out)
		*out = wc;
	return (int)wc.status;
}

/* IBA 10.3.1 / 11.6.2: after a completion error the QP is in the Error
 * state and every later WR completes with IBV_WC_WR_FLUSH_ERR. */
static void expect_qp_err_and_flush(struct ibv_qp *qp, struct dt_cq *scq,
				    const char *what)
{
	struct ibv_sge s = sge_of(bufA, 8, mrA->lkey);
	struct ibv_send_wr *bad = NULL;
	struct dt_wc_exp e;
	struct dt_dev *d = qp->context == A->ctx ? A : B;

	if (d == B)
		s = sge_of(bufB, 8, mrB->lkey);
	EXPECT_EQ(dt_qp_state(qp), IBV_QPS_ERR);
	/* posting in the Error state is allowed (k:rxe_verbs.c rxe_post_send
	 * only refuses states below RTS) and the WR is flushed */
	EXPECT_OK(post_send1(qp, 0xf1u, IBV_WR_SEND, &s, 1, IBV_SEND_SIGNALED,
			     0, 0, &bad));
	e = dt_exp_err(0xf1u, IBV_WC_WR_FLUSH_ERR, qp->qp_num);
	EXPECT_ONE(scq, &e, what);
}

/* ------------------------------------------------------------------ */
/* Device, port, GID, P_Key                                            */

static void t_query_device(void)
{
	int s;

	t_begin("query_device / query_device_ex / device names");
	{
		/* ibv_get_device_list(3): num_devices is optional; the array
		 * is NULL-terminated */
		struct ibv_device **l = ibv_get_device_list(NULL);
		struct ibv_query_device_ex_input in;
		struct ibv_device_attr_ex ax;

		EXPECT(l != NULL && l[0] != NULL && l[1] != NULL &&
		       l[2] == NULL);
		if (l != NULL)
			ibv_free_device_list(l);
		/* verbs.h ibv_query_device_ex: unknown input comp_mask ->
		 * EINVAL */
		memset(&in, 0, sizeof(in));
		in.comp_mask = 1;
		EXPECT_RET(ibv_query_device_ex(A->ctx, &in, &ax), EINVAL);
	}
	for (s = 0; s < 2; s++) {
		struct dt_dev *d = &env.dev[s];
		struct ibv_device_attr *a = &d->attr;
		struct ibv_device_attr_ex ax;
		const char *name = ibv_get_device_name(d->dev);

		EXPECT(name != NULL && name[0] != '\0');
		EXPECT_EQ(a->phys_port_cnt, 1);
		EXPECT_CMP(a->max_qp, >, 0);
		EXPECT_CMP(a->max_qp_wr, >, 0);
		EXPECT_CMP(a->max_sge, >, 0);
		EXPECT_CMP(a->max_cq, >, 0);
		EXPECT_CMP(a->max_cqe, >, 0);
		EXPECT_CMP(a->max_mr, >, 0);
		EXPECT_CMP(a->max_pd, >, 0);
		EXPECT_NE(a->max_mr_size, 0);
		EXPECT_CMP(a->max_qp_rd_atom, >, 0);
		EXPECT_CMP(a->max_qp_init_rd_atom, >, 0);
		EXPECT_NE(a->node_guid, 0);
		memset(&ax, 0xa5, sizeof(ax));
		EXPECT_OK(ibv_query_device_ex(d->ctx, NULL, &ax));
		EXPECT(memcmp(&ax.orig_attr, a, sizeof(*a)) == 0);
		printf("  %s: max_qp %d max_qp_wr %d max_sge %d max_cqe %d "
		       "max_mr_size %" PRIu64 " rd_atom %d/%d\n", name,
		       a->max_qp, a->max_qp_wr, a->max_sge, a->max_cqe,
		       a->max_mr_size, a->max_qp_rd_atom,
		       a->max_qp_init_rd_atom);
	}
	EXPECT(strcmp(ibv_get_device_name(A->dev),
		      ibv_get_device_name(B->dev)) != 0);
	EXPECT_NE(A->attr.node_guid, B->attr.node_guid);
	t_end();
}

static void t_query_port(void)
{
	int s;

	t_begin("query_port");
	for (s = 0; s < 2; s++) {
		struct dt_dev *d = &env.dev[s];
		struct ibv_port_attr pa;

		EXPECT_OK(ibv_query_port(d->ctx, 1, &pa));
		EXPECT_EQ(pa.state, IBV_PORT_ACTIVE);
		EXPECT_EQ(pa.link_layer, IBV_LINK_LAYER_ETHERNET);
		/* droce.h: mtu=N, "default 1024" */
		EXPECT_EQ(pa.active_mtu, IBV_MTU_1024);
		EXPECT_CMP(pa.max_mtu, >=, pa.active_mtu);
		EXPECT_CMP(pa.gid_tbl_len, >=, 2);
		EXPECT_CMP(pa.pkey_tbl_len, >=, 1);
		/* ibv_query_port(3): errno value on failure; an invalid port
		 * number is EINVAL (k:core device.c ib_query_port():
		 * !rdma_is_port_valid() -> -EINVAL) */
		EXPECT_RET(ibv_query_port(d->ctx, 2, &pa), EINVAL);
		EXPECT_RET(ibv_query_port(d->ctx, 0, &pa), EINVAL);
	}
	t_end();
}

static const char *gid_fmt(const union ibv_gid *g, char *b)
{
	int i, o = 0;

	for (i = 0; i < 16; i += 2)
		o += sprintf(b + o, "%s%02x%02x", i ? ":" : "", g->raw[i],
			     g->raw[i + 1]);
	return b;
}

static const char *gid_str(const union ibv_gid *g)
{
	static char b[48];

	return gid_fmt(g, b);
}

static const char *gid_str2(const union ibv_gid *g)
{
	static char b[48];

	return gid_fmt(g, b);
}

static void t_query_gid_pkey(void)
{
	int s;

	t_begin("query_gid (link-local EUI-64, IPv4-mapped) / query_pkey");
	for (s = 0; s < 2; s++) {
		struct dt_dev *d = &env.dev[s];
		struct rte_ether_addr mac;
		union ibv_gid g, exp0, exp1;
		__be16 pkey;

		EXPECT_CMP(d->port_id, >=, 0);
		if (d->port_id >= 0 &&
		    rte_eth_macaddr_get((uint16_t)d->port_id, &mac) == 0) {
			/* droce's MAC is the port's, or, when the port has
			 * none (net_ring), 02:00 + the IPv4 address
			 * (drivers/rdma/ethroce/eth_port.c) */
			if (rte_is_zero_ether_addr(&mac)) {
				mac.addr_bytes[0] = 0x02;
				mac.addr_bytes[1] = 0x00;
				mac.addr_bytes[2] = 198;
				mac.addr_bytes[3] = 18;
				mac.addr_bytes[4] = 0;
				mac.addr_bytes[5] = (uint8_t)(s + 1);
			}
			/* fe80::/64 with the modified EUI-64 of the MAC
			 * (RFC 4291 App. A): flip the U/L bit, insert ff:fe */
			memset(&exp0, 0, sizeof(exp0));
			exp0.raw[0] = 0xfe;
			exp0.raw[1] = 0x80;
			exp0.raw[8] = mac.addr_bytes[0] ^ 0x02;
			exp0.raw[9] = mac.addr_bytes[1];
			exp0.raw[10] = mac.addr_bytes[2];
			exp0.raw[11] = 0xff;
			exp0.raw[12] = 0xfe;
			exp0.raw[13] = mac.addr_bytes[3];
			exp0.raw[14] = mac.addr_bytes[4];
			exp0.raw[15] = mac.addr_bytes[5];
			if (memcmp(&d->gid[0], &exp0, 16) != 0)
				DT_FAIL_(0, "device %d GID[0] = %s, expected %s "
					 "(MAC %02x:%02x:%02x:%02x:%02x:%02x)",
					 s, gid_str(&d->gid[0]), gid_str2(&exp0),
					 mac.addr_bytes[0], mac.addr_bytes[1],
					 mac.addr_bytes[2], mac.addr_bytes[3],
					 mac.addr_bytes[4], mac.addr_bytes[5]);
		} else {
			DT_FAIL_(0, "no MAC for device %d (port %d)", s,
				 d->port_id);
		}
		/* ::ffff:198.18.0.1 / .2 (the ring pair defaults) */
		memset(&exp1, 0, sizeof(exp1));
		exp1.raw[10] = 0xff;
		exp1.raw[11] = 0xff;
		exp1.raw[12] = 198;
		exp1.raw[13] = 18;
		exp1.raw[14] = 0;
		exp1.raw[15] = (uint8_t)(s + 1);
		if (memcmp(&d->gid[1], &exp1, 16) != 0)
			DT_FAIL_(0, "device %d GID[1] = %s, expected %s", s,
				 gid_str(&d->gid[1]), gid_str2(&exp1));
		/* ibv_query_gid(3) / ibv_query_pkey(3): "returns 0 on
		 * success, and -1 on error" */
		EXPECT_EQ(ibv_query_gid(d->ctx, 1, d->port.gid_tbl_len, &g), -1);
		EXPECT_EQ(ibv_query_gid(d->ctx, 2, 0, &g), -1);
		EXPECT_OK(ibv_query_pkey(d->ctx, 1, 0, &pkey));
		EXPECT_EQ(be16toh(pkey), 0xffff);	/* default P_Key */
		EXPECT_EQ(ibv_query_pkey(d->ctx, 1, (uint16_t)d->port.pkey_tbl_len,
					 &pkey), -1);
		EXPECT_EQ(ibv_query_pkey(d->ctx, 2, 0, &pkey), -1);
	}
	t_end();
}

/* ------------------------------------------------------------------ */
/* PD / MR                                                              */

static void expect_reg_fails_at(int line, struct ibv_pd *pd, void *addr,
				size_t len, int access, int exp_errno)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = dt_reg_mr(pd, addr, len, access);
	if (mr != NULL) {
		dt_report(__FILE__, line, "ibv_reg_mr(access 0x%x) succeeded, "
			  "expected errno %s", access, dt_errstr(exp_errno));
		ibv_dereg_mr(mr);
	} else if (errno != exp_errno) {
		dt_report(__FILE__, line, "ibv_reg_mr(access 0x%x): errno %d "
			  "(%s), expected %s", access, errno, dt_errstr(errno),
			  dt_errstr(exp_errno));
	}
}

static void t_pd_mr(void)
{
	struct ibv_pd *pd;
	struct ibv_mr *m1, *m2, *m3;
	uint8_t *buf = dt_alloc(BSZ);

	t_begin("alloc_pd / reg_mr access rules");
	pd = ibv_alloc_pd(A->ctx);
	CHECK_PTR(pd);
	EXPECT(pd->context == A->ctx);

	/* ibv_reg_mr(3): "If IBV_ACCESS_REMOTE_WRITE or
	 * IBV_ACCESS_REMOTE_ATOMIC is set, then IBV_ACCESS_LOCAL_WRITE must
	 * be set too"; RETURN VALUE: "EINVAL for an invalid combination" */
	expect_reg_fails_at(__LINE__, pd, buf, BSZ, IBV_ACCESS_REMOTE_WRITE,
			    EINVAL);
	expect_reg_fails_at(__LINE__, pd, buf, BSZ, IBV_ACCESS_REMOTE_ATOMIC,
			    EINVAL);
	expect_reg_fails_at(__LINE__, pd, buf, BSZ,
			    IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ,
			    EINVAL);

	/* "Local read access is always enabled": access 0 is valid */
	m1 = dt_reg_mr(pd, buf, BSZ, 0);
	EXPECT(m1 != NULL);
	/* the inline-macro path with a constant access */
	m2 = ibv_reg_mr(pd, buf + 4096, 8192, IBV_ACCESS_LOCAL_WRITE |
			IBV_ACCESS_REMOTE_READ);
	EXPECT(m2 != NULL);
	m3 = dt_reg_mr(pd, buf, BSZ, DT_ACCESS_ALL);
	EXPECT(m3 != NULL);
	if (m1 && m2 && m3) {
		EXPECT(m1->addr == buf);
		EXPECT_EQ(m1->length, BSZ);
		EXPECT(m1->pd == pd);
		EXPECT(m1->context == A->ctx);
		EXPECT(m2->addr == buf + 4096);
		EXPECT_EQ(m2->length, 8192);
		EXPECT_NE(m1->lkey, m2->lkey);
		EXPECT_NE(m1->lkey, m3->lkey);
		EXPECT_NE(m2->lkey, m3->lkey);
		EXPECT_NE(m2->rkey, m3->rkey);
	}
	if (m1)
		EXPECT_OK(ibv_dereg_mr(m1));
	if (m2)
		EXPECT_OK(ibv_dereg_mr(m2));
	if (m3)
		EXPECT_OK(ibv_dereg_mr(m3));
	EXPECT_OK(ibv_dealloc_pd(pd));
	free(buf);
	t_end();
}

/* ------------------------------------------------------------------ */
/* CQ / QP creation limits                                              */

static void expect_cq_fails_at(int line, int cqe, int vec, int exp_errno)
{
	struct ibv_cq *cq;

	errno = 0;
	cq = ibv_create_cq(A->ctx, cqe, NULL, NULL, vec);
	if (cq != NULL) {
		dt_report(__FILE__, line, "ibv_create_cq(cqe %d, vector %d) "
			  "succeeded, expected %s", cqe, vec,
			  dt_errstr(exp_errno));
		ibv_destroy_cq(cq);
	} else if (errno != exp_errno) {
		dt_report(__FILE__, line, "ibv_create_cq(cqe %d, vector %d): "
			  "errno %d (%s), expected %s", cqe, vec, errno,
			  dt_errstr(errno), dt_errstr(exp_errno));
	}
}

static void t_cq_limits(void)
{
	struct ibv_cq_init_attr_ex ax;
	struct ibv_cq_ex *cqx;
	struct ibv_cq *cq;
	struct ibv_wc wc;

	t_begin("create_cq limits");
	/* past the device limit (ibv_query_device(3) max_cqe; k:rxe_cq.c
	 * rxe_cq_chk_attr: cqe > max_cqe -> -EINVAL) */
	if (A->attr.max_cqe < INT32_MAX)
		expect_cq_fails_at(__LINE__, A->attr.max_cqe + 1, 0, EINVAL);
	/* k:rxe_cq.c rxe_cq_chk_attr: "cqe(%d) <= 0" -> -EINVAL */
	expect_cq_fails_at(__LINE__, 0, 0, EINVAL);
	expect_cq_fails_at(__LINE__, -1, 0, EINVAL);
	/* ibv_create_cq(3): comp_vector "must be at least zero and less than
	 * context->num_comp_vectors" (k:core uverbs_cmd.c create_cq:
	 * comp_vector >= num_comp_vectors -> -EINVAL) */
	expect_cq_fails_at(__LINE__, 16, A->ctx->num_comp_vectors, EINVAL);
	expect_cq_fails_at(__LINE__, 16, -1, EINVAL);

	/* rxe.c rxe_create_cq_ex: wc_flags it cannot provide ->
	 * EOPNOTSUPP */
	memset(&ax, 0, sizeof(ax));
	ax.cqe = 16;
	ax.wc_flags = IBV_WC_EX_WITH_BYTE_LEN | (1ull << 40);
	errno = 0;
	cqx = ibv_create_cq_ex(A->ctx, &ax);
	if (cqx != NULL) {
		DT_FAIL_(0, "ibv_create_cq_ex(wc_flags bit 40) succeeded");
		ibv_destroy_cq(ibv_cq_ex_to_cq(cqx));
	} else {
		EXPECT_EQ(errno, EOPNOTSUPP);
	}

	/* ibv_create_cq(3): "may create a CQ with size greater than or
	 * equal to the requested size" */
	cq = ibv_create_cq(A->ctx, 1, NULL, NULL, 0);
	CHECK_PTR(cq);
	EXPECT_CMP(cq->cqe, >=, 1);
	EXPECT(cq->context == A->ctx);
	EXPECT_EQ(ibv_poll_cq(cq, 1, &wc), 0);	/* empty */
	EXPECT_OK(ibv_destroy_cq(cq));
	t_end();
}

static void expect_qp_fails_at(int line, const char *what,
			       struct ibv_qp_init_attr *ia, int exp_errno)
{
	struct ibv_qp *qp;

	errno = 0;
	qp = ibv_create_qp(A->pd, ia);
	if (qp != NULL) {
		dt_report(__FILE__, line, "ibv_create_qp(%s) succeeded, "
			  "expected %s", what, dt_errstr(exp_errno));
		ibv_destroy_qp(qp);
	} else if (errno != exp_errno) {
		dt_report(__FILE__, line, "ibv_create_qp(%s): errno %d (%s), "
			  "expected %s", what, errno, dt_errstr(errno),
			  dt_errstr(exp_errno));
	}
}

static void t_qp_limits(void)
{
	struct dt_cq cq, cqB;
	struct ibv_qp_init_attr ia, base;
	struct ibv_qp_init_attr_ex iax;
	struct ibv_srq_init_attr sa;
	struct ibv_srq *srqB;
	struct ibv_qp *qp, *qp2;
	struct ibv_qp_attr qa;

	t_begin("create_qp limits and initial state");
	dt_cq_create(A, 64, false, &cq);
	memset(&base, 0, sizeof(base));
	base.send_cq = cq.cq;
	base.recv_cq = cq.cq;
	base.qp_type = IBV_QPT_RC;
	base.cap.max_send_wr = 8;
	base.cap.max_recv_wr = 8;
	base.cap.max_send_sge = 1;
	base.cap.max_recv_sge = 1;

	/* k:rxe_qp.c rxe_qp_chk_cap: above the device's max_qp_wr / max_sge
	 * / max inline -> -EINVAL (limits from ibv_query_device(3)) */
	ia = base;
	ia.cap.max_send_wr = (uint32_t)A->attr.max_qp_wr + 1;
	expect_qp_fails_at(__LINE__, "max_send_wr > max_qp_wr", &ia, EINVAL);
	ia = base;
	ia.cap.max_recv_wr = (uint32_t)A->attr.max_qp_wr + 1;
	expect_qp_fails_at(__LINE__, "max_recv_wr > max_qp_wr", &ia, EINVAL);
	ia = base;
	ia.cap.max_send_sge = (uint32_t)A->attr.max_sge + 1;
	expect_qp_fails_at(__LINE__, "max_send_sge > max_sge", &ia, EINVAL);
	ia = base;
	ia.cap.max_recv_sge = (uint32_t)A->attr.max_sge + 1;
	expect_qp_fails_at(__LINE__, "max_recv_sge > max_sge", &ia, EINVAL);
	ia = base;
	ia.cap.max_inline_data = 1u << 24;
	expect_qp_fails_at(__LINE__, "max_inline_data 16M", &ia, EINVAL);
	/* k:rxe_qp.c rxe_qp_chk_init: "if (!ibpd || !init->recv_cq ||
	 * !init->send_cq) return -EINVAL" */
	ia = base;
	ia.send_cq = NULL;
	expect_qp_fails_at(__LINE__, "send_cq NULL", &ia, EINVAL);
	ia = base;
	ia.recv_cq = NULL;
	expect_qp_fails_at(__LINE__, "recv_cq NULL", &ia, EINVAL);
	/* a CQ of another context: uverbs finds handles only among the
	 * caller's (k:core uverbs_cmd.c create_qp: uobj_get_obj_read ->
	 * -EINVAL); here another device's, whose engine writes it. Found
	 * by fuzz_verbs. */
	dt_cq_create(B, 16, false, &cqB);
	ia = base;
	ia.send_cq = cqB.cq;
	expect_qp_fails_at(__LINE__, "send_cq of another context", &ia, EINVAL);
	ia = base;
	ia.recv_cq = cqB.cq;
	expect_qp_fails_at(__LINE__, "recv_cq of another context", &ia, EINVAL);
	memset(&sa, 0, sizeof(sa));
	sa.attr.max_wr = 4;
	sa.attr.max_sge = 1;
	srqB = ibv_create_srq(B->pd, &sa);
	CHECK_PTR(srqB);
	ia = base;
	ia.srq = srqB;
	expect_qp_fails_at(__LINE__, "SRQ of another context", &ia, EINVAL);
	EXPECT_OK(ibv_destroy_srq(srqB));
	dt_cq_destroy(&cqB);

	/* ibv_wr_post(3): "If the QP does not support all the requested work
	 * request types then QP creation will fail" (rxe.c check_qp_init_attr:
	 * EOPNOTSUPP); TSO is UD/RAW_PACKET only */
	memset(&iax, 0, sizeof(iax));
	iax.send_cq = cq.cq;
	iax.recv_cq = cq.cq;
	iax.qp_type = IBV_QPT_RC;
	iax.cap = base.cap;
	iax.pd = A->pd;
	iax.comp_mask = IBV_QP_INIT_ATTR_PD | IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
	iax.send_ops_flags = IBV_QP_EX_WITH_SEND | IBV_QP_EX_WITH_TSO;
	errno = 0;
	qp = ibv_create_qp_ex(A->ctx, &iax);
	if (qp != NULL) {
		DT_FAIL_(0, "ibv_create_qp_ex(RC, IBV_QP_EX_WITH_TSO) succeeded");
		ibv_destroy_qp(qp);
	} else {
		EXPECT_EQ(errno, EOPNOTSUPP);
	}

	/* a good one: ibv_create_qp(3) updates cap with the actual values */
	ia = base;
	qp = ibv_create_qp(A->pd, &ia);
	CHECK_PTR(qp);
	qp2 = ibv_create_qp(A->pd, &ia);
	CHECK_PTR(qp2);
	EXPECT_CMP(ia.cap.max_send_wr, >=, 8);
	EXPECT_CMP(ia.cap.max_recv_wr, >=, 8);
	EXPECT_EQ(qp->state, IBV_QPS_RESET);
	EXPECT_EQ(qp->qp_type, IBV_QPT_RC);
	EXPECT(qp->pd == A->pd && qp->send_cq == cq.cq && qp->recv_cq == cq.cq);
	EXPECT_CMP(qp->qp_num, >, 1);	/* QP0/QP1 are special */
	EXPECT_NE(qp->qp_num, qp2->qp_num);
	EXPECT_CMP(qp->qp_num, <=, 0xffffff);
	memset(&qa, 0, sizeof(qa));
	memset(&ia, 0, sizeof(ia));
	EXPECT_OK(ibv_query_qp(qp, &qa, IBV_QP_STATE | IBV_QP_CAP, &ia));
	EXPECT_EQ(qa.qp_state, IBV_QPS_RESET);
	EXPECT_CMP(qa.cap.max_send_wr, >=, 8);
	EXPECT(ia.send_cq == cq.cq && ia.recv_cq == cq.cq);
	EXPECT_EQ(ia.qp_type, IBV_QPT_RC);
	EXPECT_OK(ibv_destroy_qp(qp));
	EXPECT_OK(ibv_destroy_qp(qp2));
	dt_cq_destroy(&cq);
	t_end();
}

/* ------------------------------------------------------------------ */
/* modify_qp                                                            */

static void expect_modify_at(int line, struct ibv_qp *qp,
			     struct ibv_qp_attr *a, int mask, int exp_ret,
			     enum ibv_qp_state exp_state, const char *what)
{
	int r = ibv_modify_qp(qp, a, mask);
	int st;

	if (r != exp_ret)
		dt_report(__FILE__, line, "ibv_modify_qp(%s) = %d (%s), "
			  "expected %d (%s)", what, r, dt_errstr(r), exp_ret,
			  dt_errstr(exp_ret));
	/* ibv_modify_qp(3): "If any of the modify attributes or the modify
	 * mask are invalid, none of the attributes will be modified
	 * (including the QP state)." */
	st = dt_qp_state(qp);
	if (st != (int)exp_state)
		dt_report(__FILE__, line, "after ibv_modify_qp(%s): state %d, "
			  "expected %d", what, st, exp_state);
}
#define EXPECT_MODIFY(qp, a, mask, ret, st, what) \
	expect_modify_at(__LINE__, qp, a, mask, ret, st, what)

static void t_modify_qp(void)
{
	static const int init_req[] = { IBV_QP_PKEY_INDEX, IBV_QP_PORT,
					IBV_QP_ACCESS_FLAGS };
	static const int rtr_req[] = { IBV_QP_AV, IBV_QP_PATH_MTU,
				       IBV_QP_DEST_QPN, IBV_QP_RQ_PSN,
				       IBV_QP_MAX_DEST_RD_ATOMIC,
				       IBV_QP_MIN_RNR_TIMER };
	static const int rts_req[] = { IBV_QP_TIMEOUT, IBV_QP_RETRY_CNT,
				       IBV_QP_RNR_RETRY, IBV_QP_SQ_PSN,
				       IBV_QP_MAX_QP_RD_ATOMIC };
	struct dt_conn_cfg cc;
	struct dt_rc_pair c;
	struct ibv_qp_attr a, q;
	struct ibv_qp_init_attr qi;
	struct ibv_qp *qp;
	unsigned int i;
	char what[96];

	t_begin("modify_qp masks, transitions, values; query_qp");
	dt_conn_cfg_default(&cc);
	cc.max_rd_atomic = 1;
	cc.max_dest_rd_atomic = 1;
	conn_open(&c, NULL, &cc, false);
	qp = c.qa;

	/* Required attributes per transition, illegal transitions and
	 * attributes not allowed for a transition: ibv_modify_qp(3) table
	 * for IBV_QPT_RC; k:core verbs.c ib_modify_qp_is_ok() -> EINVAL
	 * (k:rxe_qp.c rxe_qp_chk_attr "invalid mask or state"). */
	dt_attr_rtr(&a, &cc, &B->gid[1], c.qb->qp_num, 0);
	EXPECT_MODIFY(qp, &a, DT_MASK_RTR, EINVAL, IBV_QPS_RESET, "RESET->RTR");
	dt_attr_rts(&a, &cc, 0);
	EXPECT_MODIFY(qp, &a, DT_MASK_RTS, EINVAL, IBV_QPS_RESET, "RESET->RTS");
	for (i = 0; i < sizeof(init_req) / sizeof(init_req[0]); i++) {
		dt_attr_init(&a, &cc);
		snprintf(what, sizeof(what), "RESET->INIT without 0x%x",
			 init_req[i]);
		EXPECT_MODIFY(qp, &a, DT_MASK_INIT & ~init_req[i], EINVAL,
			      IBV_QPS_RESET, what);
	}
	dt_attr_init(&a, &cc);
	EXPECT_MODIFY(qp, &a, DT_MASK_INIT | IBV_QP_SQ_PSN, EINVAL,
		      IBV_QPS_RESET, "RESET->INIT with SQ_PSN");
	/* values: k:rxe_qp.c rxe_qp_chk_attr: invalid port -> EINVAL */
	dt_attr_init(&a, &cc);
	a.port_num = 2;
	EXPECT_MODIFY(qp, &a, DT_MASK_INIT, EINVAL, IBV_QPS_RESET,
		      "RESET->INIT port 2");
	dt_attr_init(&a, &cc);
	a.pkey_index = (uint16_t)A->port.pkey_tbl_len;
	EXPECT_MODIFY(qp, &a, DT_MASK_INIT, EINVAL, IBV_QPS_RESET,
		      "RESET->INIT pkey_index past the table");

	dt_attr_init(&a, &cc);
	EXPECT_MODIFY(qp, &a, DT_MASK_INIT, 0, IBV_QPS_INIT, "RESET->INIT");
	/* INIT->INIT with only the state is allowed */
	EXPECT_MODIFY(qp, &a, IBV_QP_STATE, 0, IBV_QPS_INIT, "INIT->INIT");
	dt_attr_rts(&a, &cc, 0);
	EXPECT_MODIFY(qp, &a, DT_MASK_RTS, EINVAL, IBV_QPS_INIT, "INIT->RTS");
	for (i = 0; i < sizeof(rtr_req) / sizeof(rtr_req[0]); i++) {
		dt_attr_rtr(&a, &cc, &B->gid[1], c.qb->qp_num, 0);
		snprintf(what, sizeof(what), "INIT->RTR without 0x%x",
			 rtr_req[i]);
		EXPECT_MODIFY(qp, &a, DT_MASK_RTR & ~rtr_req[i], EINVAL,
			      IBV_QPS_INIT, what);
	}
	dt_attr_rtr(&a, &cc, &B->gid[1], c.qb->qp_num, 0);
	EXPECT_MODIFY(qp, &a, DT_MASK_RTR | IBV_QP_SQ_PSN, EINVAL,
		      IBV_QPS_INIT, "INIT->RTR with SQ_PSN");
	/* k:rxe_qp.c rxe_qp_chk_attr: path_mtu > port max_mtu -> EINVAL */
	if (A->port.max_mtu < IBV_MTU_4096) {
		dt_attr_rtr(&a, &cc, &B->gid[1], c.qb->qp_num, 0);
		a.path_mtu = (enum ibv_mtu)(A->port.max_mtu + 1);
		EXPECT_MODIFY(qp, &a, DT_MASK_RTR, EINVAL, IBV_QPS_INIT,
			      "INIT->RTR path_mtu > max_mtu");
	}
	/* an sgid_index past the GID table (k:core: the GID attribute
	 * lookup fails -> EINVAL) */
	dt_attr_rtr(&a, &cc, &B->gid[1], c.qb->qp_num, 0);
	a.ah_attr.grh.sgid_index = (uint8_t)A->port.gid_tbl_len;
	EXPECT_MODIFY(qp, &a, DT_MASK_RTR, EINVAL, IBV_QPS_INIT,
		      "INIT->RTR sgid_index past the table");

	dt_attr_rtr(&a, &cc, &B->gid[1], c.qb->qp_num, 0x123456);
	EXPECT_MODIFY(qp, &a, DT_MASK_RTR, 0, IBV_QPS_RTR, "INIT->RTR");
	dt_attr_init(&a, &cc);
	EXPECT_MODIFY(qp, &a, DT_MASK_INIT, EINVAL, IBV_QPS_RTR, "RTR->INIT");
	for (i = 0; i < sizeof(rts_req) / sizeof(rts_req[0]); i++) {
		dt_attr_rts(&a, &cc, 0x654321);
		snprintf(what, sizeof(what), "RTR->RTS without 0x%x",
			 rts_req[i]);
		EXPECT_MODIFY(qp, &a, DT_MASK_RTS & ~rts_req[i], EINVAL,
			      IBV_QPS_RTR, what);
	}
	dt_attr_rts(&a, &cc, 0x654321);
	EXPECT_MODIFY(qp, &a, DT_MASK_RTS | IBV_QP_RQ_PSN, EINVAL, IBV_QPS_RTR,
		      "RTR->RTS with RQ_PSN");
	/* k:rxe_qp.c rxe_qp_chk_attr: "invalid QP timeout %d > 31" */
	dt_attr_rts(&a, &cc, 0x654321);
	a.timeout = 32;
	EXPECT_MODIFY(qp, &a, DT_MASK_RTS, EINVAL, IBV_QPS_RTR,
		      "RTR->RTS timeout 32");
	/* k:rxe_qp.c rxe_qp_chk_attr: max_rd_atomic > max_qp_rd_atom */
	if (A->attr.max_qp_rd_atom < 255 && A->attr.max_qp_init_rd_atom < 255) {
		int m = A->attr.max_qp_rd_atom > A->attr.max_qp_init_rd_atom ?
			A->attr.max_qp_rd_atom : A->attr.max_qp_init_rd_atom;

		dt_attr_rts(&a, &cc, 0x654321);
		a.max_rd_atomic = (uint8_t)(m + 1);
		EXPECT_MODIFY(qp, &a, DT_MASK_RTS, EINVAL, IBV_QPS_RTR,
			      "RTR->RTS max_rd_atomic > device limit");
	}
	dt_attr_rts(&a, &cc, 0x654321);
	EXPECT_MODIFY(qp, &a, DT_MASK_RTS, 0, IBV_QPS_RTS, "RTR->RTS");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RTS;
	EXPECT_MODIFY(qp, &a, IBV_QP_STATE, 0, IBV_QPS_RTS, "RTS->RTS");
	dt_attr_init(&a, &cc);
	EXPECT_MODIFY(qp, &a, DT_MASK_INIT, EINVAL, IBV_QPS_RTS, "RTS->INIT");
	dt_attr_rtr(&a, &cc, &B->gid[1], c.qb->qp_num, 0);
	EXPECT_MODIFY(qp, &a, DT_MASK_RTR, EINVAL, IBV_QPS_RTS, "RTS->RTR");

	/* ibv_query_qp(3) returns what was set */
	memset(&q, 0, sizeof(q));
	memset(&qi, 0, sizeof(qi));
	EXPECT_OK(ibv_query_qp(qp, &q, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
			       IBV_QP_PORT | IBV_QP_ACCESS_FLAGS | IBV_QP_AV |
			       IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
			       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
			       IBV_QP_MIN_RNR_TIMER | IBV_QP_TIMEOUT |
			       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
			       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC |
			       IBV_QP_CAP, &qi));
	EXPECT_EQ(q.qp_state, IBV_QPS_RTS);
	EXPECT_EQ(q.path_mtu, cc.mtu);
	EXPECT_EQ(q.dest_qp_num, c.qb->qp_num);
	EXPECT_EQ(q.rq_psn, 0x123456);
	EXPECT_EQ(q.sq_psn, 0x654321);
	EXPECT_EQ(q.qp_access_flags, (unsigned int)cc.access);
	EXPECT_EQ(q.pkey_index, 0);
	EXPECT_EQ(q.port_num, 1);
	EXPECT_EQ(q.timeout, cc.timeout);
	EXPECT_EQ(q.retry_cnt, cc.retry_cnt);
	EXPECT_EQ(q.rnr_retry, cc.rnr_retry);
	EXPECT_EQ(q.min_rnr_timer, cc.min_rnr_timer);
	EXPECT_EQ(q.max_rd_atomic, 1);
	EXPECT_EQ(q.max_dest_rd_atomic, 1);
	EXPECT_EQ(q.ah_attr.is_global, 1);
	EXPECT(memcmp(&q.ah_attr.grh.dgid, &B->gid[1], 16) == 0);
	EXPECT_EQ(q.ah_attr.grh.sgid_index, 1);
	EXPECT_EQ(qi.qp_type, IBV_QPT_RC);
	EXPECT_EQ(qi.sq_sig_all, 0);
	EXPECT_CMP(qi.cap.max_send_wr, >=, 16);

	/* any state -> ERR -> RESET, then the QP can be connected again and
	 * carries traffic */
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_ERR;
	EXPECT_MODIFY(qp, &a, IBV_QP_STATE, 0, IBV_QPS_ERR, "RTS->ERR");
	dt_attr_rts(&a, &cc, 0);
	EXPECT_MODIFY(qp, &a, DT_MASK_RTS, EINVAL, IBV_QPS_ERR, "ERR->RTS");
	memset(&a, 0, sizeof(a));
	a.qp_state = IBV_QPS_RESET;
	EXPECT_MODIFY(qp, &a, IBV_QP_STATE, 0, IBV_QPS_RESET, "ERR->RESET");
	{
		struct ibv_sge s = sge_of(bufA, 100, mrA->lkey);
		struct ibv_sge r = sge_of(bufB, 100, mrB->lkey);
		struct ibv_send_wr *bad = NULL;
		struct dt_wc_exp e;

		dt_connect(A, c.qa, 77, B, c.qb, 99, &cc);
		memset(bufA, 0x3c, 100);
		memset(bufB, 0, 100);
		EXPECT_OK(post_recv1(c.qb, 0x77, &r, 1));
		EXPECT_OK(post_send1(c.qa, 0x66, IBV_WR_SEND, &s, 1,
				     IBV_SEND_SIGNALED, 0, 0, &bad));
		e = dt_exp_send(0x66, IBV_WR_SEND, 100, c.qa->qp_num);
		EXPECT_ONE(&c.sa, &e, "send after RESET and reconnect");
		e = dt_exp_recv(0x77, IBV_WR_SEND, 100, c.qb->qp_num,
				c.qa->qp_num, 0);
		EXPECT_ONE(&c.rb, &e, "recv after RESET and reconnect");
		EXPECT(bufB[0] == 0x3c && bufB[99] == 0x3c);
	}
	dt_rc_pair_close(&c);
	t_end();
}

/* ------------------------------------------------------------------ */
/* Posting in the wrong state, immediate post errors                    */

static void t_post_states(void)
{
	struct dt_conn_cfg cc;
	struct dt_rc_pair c;
	struct ibv_sge s = sge_of(bufA, 64, mrA->lkey);
	struct ibv_sge r = sge_of(bufA + 4096, 64, mrA->lkey);
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct dt_wc_exp e;

	t_begin("post_send/post_recv in RESET, INIT, RTR");
	dt_conn_cfg_default(&cc);
	conn_open(&c, NULL, &cc, false);

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 1;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 0x5151;
	rwr.sg_list = &r;
	rwr.num_sge = 1;

	/* k:rxe_verbs.c rxe_post_send: "if (unlikely(qp_state(qp) <
	 * IB_QPS_RTS)) { *bad_wr = wr; return -EINVAL; }" (IBA 10.3.1:
	 * posting to the SQ below RTS is an immediate error) */
	bad = NULL;
	EXPECT_RET(ibv_post_send(c.qa, &wr, &bad), EINVAL);
	EXPECT(bad == &wr);
	/* rxe.c rxe_post_recv: "see C10-97.2.1", RESET -> EINVAL;
	 * k:rxe_verbs.c rxe_post_recv also sets *bad_wr = wr */
	rbad = NULL;
	EXPECT_RET(ibv_post_recv(c.qa, &rwr, &rbad), EINVAL);
	EXPECT(rbad == &rwr);

	EXPECT_OK(dt_qp_to_init(c.qa, &cc));
	bad = NULL;
	EXPECT_RET(ibv_post_send(c.qa, &wr, &bad), EINVAL);
	EXPECT(bad == &wr);
	/* IBA 10.3.1: in INIT receive WRs may be posted (not processed) */
	rbad = NULL;
	EXPECT_RET(ibv_post_recv(c.qa, &rwr, &rbad), 0);

	EXPECT_OK(dt_qp_to_rtr(c.qa, &cc, &B->gid[1], c.qb->qp_num, 500));
	bad = NULL;
	EXPECT_RET(ibv_post_send(c.qa, &wr, &bad), EINVAL);
	EXPECT(bad == &wr);

	/* finish the connection; the receive posted in INIT is used */
	EXPECT_OK(dt_qp_to_init(c.qb, &cc));
	EXPECT_OK(dt_qp_to_rtr(c.qb, &cc, &A->gid[1], c.qa->qp_num, 600));
	EXPECT_OK(dt_qp_to_rts(c.qb, &cc, 500));
	EXPECT_OK(dt_qp_to_rts(c.qa, &cc, 600));
	{
		struct ibv_sge bs = sge_of(bufB, 40, mrB->lkey);

		memset(bufB, 0x42, 40);
		memset(bufA + 4096, 0, 64);
		EXPECT_OK(post_send1(c.qb, 2, IBV_WR_SEND, &bs, 1,
				     IBV_SEND_SIGNALED, 0, 0, &bad));
		e = dt_exp_send(2, IBV_WR_SEND, 40, c.qb->qp_num);
		EXPECT_ONE(&c.sb, &e, "send to a receive posted in INIT");
		e = dt_exp_recv(0x5151, IBV_WR_SEND, 40, c.qa->qp_num,
				c.qb->qp_num, 0);
		EXPECT_ONE(&c.ra, &e, "receive posted in INIT");
		EXPECT(bufA[4096] == 0x42 && bufA[4096 + 39] == 0x42 &&
		       bufA[4096 + 40] == 0);
	}
	dt_rc_pair_close(&c);
	t_end();
}

static void t_post_immediate_errors(void)
{
	struct dt_rc_pair c;
	struct ibv_sge sg[64], s = sge_of(bufA, 64, mrA->lkey);
	struct ibv_send_wr wr[3], *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_qp_ex *x;
	struct dt_wc_exp e;
	struct ibv_wc wc;
	uint8_t *big;
	int i, r, n;

	t_begin("post_send/post_recv immediate errors in RTS");
	conn_open(&c, NULL, NULL, true);
	for (i = 0; i < 64; i++)
		sg[i] = sge_of(bufA + i * 16, 16, mrA->lkey);

	/* too many SGEs: rxe.c validate_send_wr "num_sge > max_sge ->
	 * EINVAL", bad_wr = the WR (ibv_post_send(3)) */
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 10;
	wr[0].sg_list = sg;
	wr[0].num_sge = (int)c.capa.max_send_sge + 1;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	if (c.capa.max_send_sge < 64) {
		bad = NULL;
		EXPECT_RET(ibv_post_send(c.qa, &wr[0], &bad), EINVAL);
		EXPECT(bad == &wr[0]);
	}
	/* rxe.c rxe_post_one_recv / mlx5/qp.c mlx5_post_recv: too many
	 * SGEs -> EINVAL */
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 11;
	rwr.sg_list = sg;
	rwr.num_sge = (int)c.capb.max_recv_sge + 1;
	if (c.capb.max_recv_sge < 64) {
		rbad = NULL;
		EXPECT_RET(ibv_post_recv(c.qb, &rwr, &rbad), EINVAL);
		EXPECT(rbad == &rwr);
	}

	/* inline longer than max_inline_data: rxe.c validate_send_wr ->
	 * EINVAL (mlx5/qp.c set_data_inl_seg returns ENOMEM; either is
	 * accepted) */
	big = dt_alloc(c.capa.max_inline_data + 4096);
	s = sge_of(big, c.capa.max_inline_data + 1, 0);
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 12;
	wr[0].sg_list = &s;
	wr[0].num_sge = 1;
	wr[0].opcode = IBV_WR_SEND;
	wr[0].send_flags = IBV_SEND_SIGNALED | IBV_SEND_INLINE;
	bad = NULL;
	r = ibv_post_send(c.qa, &wr[0], &bad);
	if (r != EINVAL && r != ENOMEM)
		DT_FAIL_(0, "inline %u > max_inline_data %u: ibv_post_send = "
			 "%d (%s), expected EINVAL (or ENOMEM)",
			 c.capa.max_inline_data + 1, c.capa.max_inline_data,
			 r, dt_errstr(r));
	EXPECT(bad == &wr[0]);

	/* an opcode that does not exist: mlx5/qp.c _mlx5_post_send "bad
	 * opcode" -> EINVAL, bad_wr set */
	s = sge_of(bufA, 8, mrA->lkey);
	memset(wr, 0, sizeof(wr));
	wr[0].wr_id = 13;
	wr[0].sg_list = &s;
	wr[0].num_sge = 1;
	wr[0].opcode = (enum ibv_wr_opcode)0x7f;
	wr[0].send_flags = IBV_SEND_SIGNALED;
	bad = NULL;
	EXPECT_RET(ibv_post_send(c.qa, &wr[0], &bad), EINVAL);
	EXPECT(bad == &wr[0]);

	/* a list [good, bad, good]: ibv_post_send(3) "stops processing WRs
	 * from this list at the first failure ... and returns this failing
	 * WR through bad_wr"; the WRs before it are posted (k:
	 * include/rdma/ib_verbs.h ib_post_send() comment) */
	{
		struct ibv_sge r1 = sge_of(bufB, 64, mrB->lkey);

		EXPECT_OK(post_recv1(c.qb, 0x2001, &r1, 1));
	}
	memset(wr, 0, sizeof(wr));
	for (i = 0; i < 3; i++) {
		wr[i].wr_id = 20 + (uint64_t)i;
		wr[i].sg_list = sg;
		wr[i].num_sge = 1;
		wr[i].opcode = IBV_WR_SEND;
		wr[i].send_flags = IBV_SEND_SIGNALED;
		wr[i].next = i < 2 ? &wr[i + 1] : NULL;
	}
	wr[1].num_sge = (int)c.capa.max_send_sge + 1;
	bad = NULL;
	EXPECT_RET(ibv_post_send(c.qa, wr, &bad), EINVAL);
	EXPECT(bad == &wr[1]);
	e = dt_exp_send(20, IBV_WR_SEND, 16, c.qa->qp_num);
	EXPECT_ONE(&c.sa, &e, "first WR of a list with a bad second WR");
	e = dt_exp_recv(0x2001, IBV_WR_SEND, 16, c.qb->qp_num, c.qa->qp_num, 0);
	EXPECT_ONE(&c.rb, &e, "first WR of a list with a bad second WR");

	/* ibv_wr_*: a failure inside the batch makes ibv_wr_complete() fail
	 * and "the entire posting will be aborted" (ibv_wr_post(3)) */
	x = ibv_qp_to_qp_ex(c.qa);
	CHECK_PTR(x);
	ibv_wr_start(x);
	x->wr_id = 30;
	x->wr_flags = IBV_SEND_SIGNALED;
	ibv_wr_send(x);
	ibv_wr_set_sge(x, mrA->lkey, (uintptr_t)bufA, 8);
	x->wr_id = 31;
	ibv_wr_send(x);
	ibv_wr_set_inline_data(x, big, c.capa.max_inline_data + 1);
	r = ibv_wr_complete(x);
	if (r == 0)
		DT_FAIL_(0, "ibv_wr_complete with inline data > max_inline_data"
			 " returned 0");
	x->wr_id = 32;	/* too many SGEs */
	ibv_wr_start(x);
	ibv_wr_send(x);
	if (c.capa.max_send_sge < 64) {
		ibv_wr_set_sge_list(x, c.capa.max_send_sge + 1, sg);
		r = ibv_wr_complete(x);
		if (r == 0)
			DT_FAIL_(0, "ibv_wr_complete with num_sge > max_send_sge "
				 "returned 0");
	} else {
		ibv_wr_abort(x);
	}
	/* inline data where the opcode carries none out (a READ; atomics
	 * take the same check, and this QP was created without them), and
	 * inline data set twice on one WQE, through the one-buffer and the
	 * list setters: each batch fails with EINVAL, after a good WQE */
	for (i = 0; i < 4; i++) {
		struct ibv_data_buf db = { .addr = bufA, .length = 8 };
		bool on_read = i < 2;

		ibv_wr_start(x);
		x->wr_id = 40;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, mrA->lkey, (uintptr_t)bufA, 8);
		x->wr_id = 41 + (uint64_t)i;
		if (on_read) {
			ibv_wr_rdma_read(x, mrB->rkey, (uintptr_t)bufB);
		} else {
			ibv_wr_rdma_write(x, mrB->rkey, (uintptr_t)bufB);
			ibv_wr_set_inline_data(x, bufA, 8);
		}
		if (i % 2)
			ibv_wr_set_inline_data_list(x, 1, &db);
		else
			ibv_wr_set_inline_data(x, bufA, 8);
		r = ibv_wr_complete(x);
		if (r != EINVAL)
			DT_FAIL_(0, "ibv_wr_complete with inline data on %s "
				 "(%s setter) returned %d, want EINVAL",
				 on_read ? "a READ" : "a WRITE that had it already",
				 i % 2 ? "list" : "one-buffer", r);
	}
	/* nothing of those batches may have been executed */
	n = 0;
	{
		double until = dt_now() + 0.05;

		while (dt_now() < until)
			n += dt_cq_poll(&c.sa, &wc, 1) > 0 ?
			     (dt_print_wc(stderr, "unexpected", &wc), 1) : 0;
	}
	EXPECT_EQ(n, 0);

	/* IBA 11.4.1.1: an immediate error does not change the QP state;
	 * the QP still works */
	EXPECT_EQ(dt_qp_state(c.qa), IBV_QPS_RTS);
	{
		struct ibv_sge r1 = sge_of(bufB, 64, mrB->lkey);

		EXPECT_OK(post_recv1(c.qb, 0x2002, &r1, 1));
		ibv_wr_start(x);
		x->wr_id = 33;
		x->wr_flags = IBV_SEND_SIGNALED;
		ibv_wr_send(x);
		ibv_wr_set_sge(x, mrA->lkey, (uintptr_t)bufA, 24);
		EXPECT_OK(ibv_wr_complete(x));
		e = dt_exp_send(33, IBV_WR_SEND, 24, c.qa->qp_num);
		EXPECT_ONE(&c.sa, &e, "send after immediate errors");
		e = dt_exp_recv(0x2002, IBV_WR_SEND, 24, c.qb->qp_num,
				c.qa->qp_num, 0);
		EXPECT_ONE(&c.rb, &e, "send after immediate errors");
	}
	free(big);
	dt_rc_pair_close(&c);
	t_end();
}

/* Queue depth: the send queue fills while the peer has no receive (RNR,
 * rnr_retry 7 = retry forever), the next post gets ENOMEM. */
static void t_queue_full(void)
{
	struct dt_conn_cfg cc;
	struct dt_rc_pair c;
	struct ibv_sge s = sge_of(bufA, 32, mrA->lkey);
	struct ibv_sge r = sge_of(bufB, 32, mrB->lkey);
	struct ibv_send_wr *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_wc *wc;
	uint32_t i, n, nflush = 0;

	t_begin("posting past the queue depth -> ENOMEM; flush on ERR");
	dt_conn_cfg_default(&cc);
	cc.rnr_retry = 7;
	conn_open(&c, NULL, &cc, true);
	n = c.capa.max_send_wr;
	for (i = 0; i < n; i++) {
		int ret = post_send1(c.qa, 100 + i, IBV_WR_SEND, &s, 1,
				     IBV_SEND_SIGNALED, 0, 0, &bad);
		if (ret != 0) {
			DT_FAIL_(0, "post %u of max_send_wr %u failed: %d (%s)",
				 i + 1, n, ret, dt_errstr(ret));
			break;
		}
	}
	/* rxe.c post_one_send: "if (queue_full(sq->queue)) return ENOMEM";
	 * mlx5/qp.c: "work queue overflow" -> ENOMEM; bad_wr set */
	{
		/* The WR lives here, so *bad can be looked at afterwards. */
		struct ibv_send_wr wr = { .wr_id = 99, .sg_list = &s,
					  .num_sge = 1, .opcode = IBV_WR_SEND,
					  .send_flags = IBV_SEND_SIGNALED };

		bad = NULL;
		EXPECT_RET(ibv_post_send(c.qa, &wr, &bad), ENOMEM);
		EXPECT(bad == &wr);
	}
	/* still no completion: the first SEND keeps getting RNR NAKs */
	wc = calloc(n + 16, sizeof(*wc));
	CHECK_PTR(wc);
	EXPECT_EQ(dt_cq_poll(&c.sa, wc, 1), 0);

	/* to ERR: every outstanding WR completes with WR_FLUSH_ERR, in order
	 * (IBA 10.3.1 Error state; ibv_poll_cq(3) IBV_WC_WR_FLUSH_ERR) */
	EXPECT_OK(dt_qp_to_state(c.qa, IBV_QPS_ERR));
	nflush = (uint32_t)dt_wait_wc(&c.sa, wc, (int)n, DT_WAIT_S, "flush");
	EXPECT_EQ(nflush, n);
	for (i = 0; i < nflush; i++) {
		struct dt_wc_exp e = dt_exp_err(100 + i, IBV_WC_WR_FLUSH_ERR,
						c.qa->qp_num);

		if (!EXPECT_WC(&wc[i], &e))
			break;
	}
	EXPECT_EQ(dt_cq_drain_unexpected(&c.sa, "after flush"), 0);

	/* the receive queue: k:rxe_verbs.c post_one_recv "queue full" ->
	 * -ENOMEM; rxe.c rxe_post_one_recv ENOMEM */
	EXPECT_OK(dt_qp_to_state(c.qb, IBV_QPS_ERR));
	EXPECT_OK(dt_qp_to_state(c.qb, IBV_QPS_RESET));
	EXPECT_OK(dt_qp_to_init(c.qb, &cc));
	n = c.capb.max_recv_wr;
	for (i = 0; i < n; i++) {
		int ret = post_recv1(c.qb, 1000 + i, &r, 1);

		if (ret != 0) {
			DT_FAIL_(0, "recv %u of max_recv_wr %u failed: %d (%s)",
				 i + 1, n, ret, dt_errstr(ret));
			break;
		}
	}
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 999;
	rwr.sg_list = &r;
	rwr.num_sge = 1;
	rbad = NULL;
	EXPECT_RET(ibv_post_recv(c.qb, &rwr, &rbad), ENOMEM);
	EXPECT(rbad == &rwr);
	/* receive WRs flush too when the QP goes to ERR */
	EXPECT_OK(dt_qp_to_state(c.qb, IBV_QPS_ERR));
	nflush = (uint32_t)dt_wait_wc(&c.rb, wc, (int)n, DT_WAIT_S,
				      "recv flush");
	EXPECT_EQ(nflush, n);
	for (i = 0; i < nflush; i++) {
		struct dt_wc_exp e = dt_exp_err(1000 + i, IBV_WC_WR_FLUSH_ERR,
						c.qb->qp_num);

		if (!EXPECT_WC(&wc[i], &e))
			break;
	}
	/* ERR state: posting is accepted and flushed (IBA 10.3.1) */
	EXPECT_OK(post_recv1(c.qb, 2000, &r, 1));
	{
		struct dt_wc_exp e = dt_exp_err(2000, IBV_WC_WR_FLUSH_ERR,
						c.qb->qp_num);

		EXPECT_ONE(&c.rb, &e, "recv posted in ERR");
	}
	free(wc);
	dt_rc_pair_close(&c);
	t_end();
}

/* ------------------------------------------------------------------ */
/* Completion errors                                                    */

/*
 * Post wr on qa of a fresh connected pair (with nrecv receives of 4 KiB on
 * qb) and expect a requester completion with status st, then that qa is in
 * ERR and a later WR is flushed.
 */
static void req_error_case(const char *what, struct ibv_send_wr *wr,
			   enum ibv_wc_status st, int nrecv)
{
	struct dt_rc_pair c;
	struct ibv_send_wr *bad = NULL;
	struct dt_wc_exp e;
	int i, r;

	conn_open(&c, NULL, NULL, true);
	for (i = 0; i < nrecv; i++) {
		struct ibv_sge rs = sge_of(bufB + 4096 * i, 4096, mrB->lkey);

		CHECK_OK(post_recv1(c.qb, 0xb000 + (uint64_t)i, &rs, 1));
	}
	r = ibv_post_send(c.qa, wr, &bad);
	if (r != 0) {
		DT_FAIL_(0, "%s: ibv_post_send = %d (%s); the error must be "
			 "reported as a completion (%s)", what, r, dt_errstr(r),
			 dt_wc_status_name(st));
	} else {
		/* IBA 10.7.3.1 (quoted in k:rxe_comp.c): "if a completion
		 * error occurs, a Work Completion will always be generated,
		 * even if the signaling indicator requests an Unsignaled
		 * Completion" */
		e = dt_exp_err(wr->wr_id, st, c.qa->qp_num);
		if (EXPECT_ONE(&c.sa, &e, what))
			expect_qp_err_and_flush(c.qa, &c.sa, what);
		/* a local protection error is the requester's own finding,
		 * before anything is sent (a READ sent regardless would fail
		 * the same way once its response came, having read the
		 * remote memory for nothing) */
		if (st == IBV_WC_LOC_PROT_ERR) {
			struct droce_qp_stats qs;

			CHECK_OK(droce_qp_stats_get(c.qa, &qs));
			if (qs.tx_pkts != 0)
				DT_FAIL_(0, "%s: the QP sent %" PRIu64
					 " packets before its local error",
					 what, qs.tx_pkts);
		}
	}
	dt_rc_pair_close(&c);
}

static void t_local_errors(void)
{
	struct ibv_pd *pd2;
	struct ibv_mr *mr_other_pd, *mr_ro;
	uint8_t *buf2 = dt_alloc(BSZ);
	struct ibv_send_wr wr;
	struct ibv_sge s;

	t_begin("local protection errors -> IBV_WC_LOC_PROT_ERR");
	pd2 = ibv_alloc_pd(A->ctx);
	CHECK_PTR(pd2);
	mr_other_pd = dt_reg_mr(pd2, buf2, BSZ, DT_ACCESS_ALL);
	CHECK_PTR(mr_other_pd);
	mr_ro = dt_reg_mr(A->pd, buf2, BSZ, 0);	/* local read only */
	CHECK_PTR(mr_ro);

	/* IBA 10.6.3 / C10-...: an L_Key that is unknown, belongs to another
	 * PD, or does not cover the range is a local protection error
	 * (ibv_poll_cq(3) IBV_WC_LOC_PROT_ERR; k:rxe_mr.c copy_data ->
	 * IB_WC_LOC_PROT_ERR) */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x101;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = 0;	/* unsignaled: the error completes anyway */
	s = sge_of(bufA, 32, mrA->lkey ^ 0x00ffff00u);
	req_error_case("SEND unknown lkey (unsignaled)", &wr,
		       IBV_WC_LOC_PROT_ERR, 1);

	wr.send_flags = IBV_SEND_SIGNALED;
	s = sge_of(bufA + BSZ - 16, 32, mrA->lkey);
	req_error_case("SEND sge past the MR end", &wr, IBV_WC_LOC_PROT_ERR, 1);

	s = sge_of(bufA - 16, 32, mrA->lkey);
	req_error_case("SEND sge before the MR start", &wr,
		       IBV_WC_LOC_PROT_ERR, 1);

	s = sge_of(buf2, 32, mr_other_pd->lkey);
	req_error_case("SEND lkey of an MR in another PD", &wr,
		       IBV_WC_LOC_PROT_ERR, 1);

	{	/* the lkey of a deregistered MR */
		struct ibv_mr *m = dt_reg_mr(A->pd, buf2, BSZ, DT_ACCESS_ALL);

		CHECK_PTR(m);
		s = sge_of(buf2, 32, m->lkey);
		EXPECT_OK(ibv_dereg_mr(m));
		req_error_case("SEND lkey of a deregistered MR", &wr,
			       IBV_WC_LOC_PROT_ERR, 1);
	}

	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)bufB;
	wr.wr.rdma.rkey = mrB->rkey;
	s = sge_of(bufA, 32, 0x7777777);
	req_error_case("RDMA_WRITE unknown lkey", &wr, IBV_WC_LOC_PROT_ERR, 0);

	/* an RDMA READ writes local memory: needs LOCAL_WRITE on the MR */
	wr.opcode = IBV_WR_RDMA_READ;
	s = sge_of(buf2, 32, mr_ro->lkey);
	req_error_case("RDMA_READ into an MR without LOCAL_WRITE", &wr,
		       IBV_WC_LOC_PROT_ERR, 0);
	/* the rest as SEND's, for the READ the requester takes straight
	 * (one SGE: it checks the SGE itself, then leaves the WQE to the
	 * general way to fail) */
	wr.send_flags = 0;
	s = sge_of(bufA, 32, mrA->lkey ^ 0x00ffff00u);
	req_error_case("RDMA_READ unknown lkey (unsignaled)", &wr,
		       IBV_WC_LOC_PROT_ERR, 0);
	wr.send_flags = IBV_SEND_SIGNALED;
	s = sge_of(bufA + BSZ - 16, 32, mrA->lkey);
	req_error_case("RDMA_READ sge past the MR end", &wr,
		       IBV_WC_LOC_PROT_ERR, 0);
	s = sge_of(buf2, 32, mr_other_pd->lkey);
	req_error_case("RDMA_READ lkey of an MR in another PD", &wr,
		       IBV_WC_LOC_PROT_ERR, 0);

	/* an atomic writes its result locally: the same checks, taken
	 * straight too */
	wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
	wr.wr.atomic.remote_addr = (uintptr_t)bufB;
	wr.wr.atomic.rkey = mrB->rkey;
	wr.wr.atomic.compare_add = 1;
	s = sge_of(buf2, 8, mr_ro->lkey);
	req_error_case("FETCH_AND_ADD into an MR without LOCAL_WRITE", &wr,
		       IBV_WC_LOC_PROT_ERR, 0);
	wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
	wr.wr.atomic.swap = 2;
	s = sge_of(bufA, 8, mrA->lkey ^ 0x00ffff00u);
	req_error_case("CMP_AND_SWP unknown lkey", &wr, IBV_WC_LOC_PROT_ERR, 0);
	s = sge_of(bufA + BSZ - 4, 8, mrA->lkey);
	req_error_case("CMP_AND_SWP sge past the MR end", &wr,
		       IBV_WC_LOC_PROT_ERR, 0);

	EXPECT_OK(ibv_dereg_mr(mr_ro));
	EXPECT_OK(ibv_dereg_mr(mr_other_pd));
	EXPECT_OK(ibv_dealloc_pd(pd2));
	free(buf2);
	t_end();
}

static void t_remote_errors(void)
{
	struct ibv_pd *pdB2;
	struct ibv_mr *mr_nw, *mr_nr, *mr_other_pd;
	uint8_t *b2 = dt_alloc(BSZ);
	struct ibv_send_wr wr;
	struct ibv_sge s = sge_of(bufA, 64, mrA->lkey);

	t_begin("remote access errors -> IBV_WC_REM_ACCESS_ERR");
	pdB2 = ibv_alloc_pd(B->ctx);
	CHECK_PTR(pdB2);
	/* on B: no REMOTE_WRITE; no REMOTE_READ; another PD */
	mr_nw = dt_reg_mr(B->pd, b2, BSZ, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_READ);
	mr_nr = dt_reg_mr(B->pd, b2, BSZ, IBV_ACCESS_LOCAL_WRITE |
			  IBV_ACCESS_REMOTE_WRITE);
	mr_other_pd = dt_reg_mr(pdB2, b2, BSZ, DT_ACCESS_ALL);
	CHECK(mr_nw && mr_nr && mr_other_pd);

	/* IBA 9.7.4.1.x R_Key checks -> NAK Remote Access Error ->
	 * requester IBV_WC_REM_ACCESS_ERR (k:rxe_resp.c check_rkey ->
	 * RESPST_ERR_RKEY_VIOLATION -> AETH_NAK_REM_ACC_ERR; k:rxe_comp.c
	 * -> IB_WC_REM_ACCESS_ERR) */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x201;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;

	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = (uintptr_t)bufB;
	wr.wr.rdma.rkey = mrB->rkey ^ 0x00ffff00u;
	req_error_case("RDMA_WRITE unknown rkey", &wr, IBV_WC_REM_ACCESS_ERR, 0);
	wr.wr.rdma.remote_addr = (uintptr_t)(bufB + BSZ - 32);
	wr.wr.rdma.rkey = mrB->rkey;
	req_error_case("RDMA_WRITE past the MR end", &wr,
		       IBV_WC_REM_ACCESS_ERR, 0);
	wr.wr.rdma.remote_addr = (uintptr_t)(bufB - 8);
	req_error_case("RDMA_WRITE before the MR start", &wr,
		       IBV_WC_REM_ACCESS_ERR, 0);
	wr.wr.rdma.remote_addr = (uintptr_t)b2;
	wr.wr.rdma.rkey = mr_nw->rkey;
	req_error_case("RDMA_WRITE to an MR without REMOTE_WRITE", &wr,
		       IBV_WC_REM_ACCESS_ERR, 0);
	wr.wr.rdma.rkey = mr_other_pd->rkey;
	req_error_case("RDMA_WRITE rkey of an MR in another PD", &wr,
		       IBV_WC_REM_ACCESS_ERR, 0);
	wr.opcode = IBV_WR_RDMA_WRITE_WITH_IMM;
	wr.imm_data = htobe32(0x1234);
	wr.wr.rdma.remote_addr = (uintptr_t)bufB;
	wr.wr.rdma.rkey = mrB->rkey ^ 0x00ffff00u;
	req_error_case("RDMA_WRITE_WITH_IMM unknown rkey", &wr,
		       IBV_WC_REM_ACCESS_ERR, 1);

	/* the rkey of a deregistered MR is dead, even when the same memory
	 * has been registered again (IBA 10.6.1: the key must not stay
	 * valid after deregistration) */
	{
		struct ibv_mr *old_mr, *new_mr;
		uint32_t old_rkey;

		old_mr = dt_reg_mr(B->pd, b2, BSZ, DT_ACCESS_ALL);
		CHECK_PTR(old_mr);
		old_rkey = old_mr->rkey;
		EXPECT_OK(ibv_dereg_mr(old_mr));
		new_mr = dt_reg_mr(B->pd, b2, BSZ, DT_ACCESS_ALL);
		CHECK_PTR(new_mr);
		EXPECT_NE(new_mr->rkey, old_rkey);
		wr.opcode = IBV_WR_RDMA_WRITE;
		wr.wr.rdma.remote_addr = (uintptr_t)b2;
		wr.wr.rdma.rkey = old_rkey;
		req_error_case("RDMA_WRITE with the rkey of a deregistered MR",
			       &wr, IBV_WC_REM_ACCESS_ERR, 0);
		EXPECT_OK(ibv_dereg_mr(new_mr));
	}

	wr.opcode = IBV_WR_RDMA_READ;
	wr.wr.rdma.remote_addr = (uintptr_t)bufB;
	wr.wr.rdma.rkey = mrB->rkey ^ 0x00ffff00u;
	req_error_case("RDMA_READ unknown rkey", &wr, IBV_WC_REM_ACCESS_ERR, 0);
	wr.wr.rdma.remote_addr = (uintptr_t)(bufB + BSZ - 32);
	wr.wr.rdma.rkey = mrB->rkey;
	req_error_case("RDMA_READ past the MR end", &wr,
		       IBV_WC_REM_ACCESS_ERR, 0);
	wr.wr.rdma.remote_addr = (uintptr_t)b2;
	wr.wr.rdma.rkey = mr_nr->rkey;
	req_error_case("RDMA_READ from an MR without REMOTE_READ", &wr,
		       IBV_WC_REM_ACCESS_ERR, 0);

	EXPECT_OK(ibv_dereg_mr(mr_nw));
	EXPECT_OK(ibv_dereg_mr(mr_nr));
	EXPECT_OK(ibv_dereg_mr(mr_other_pd));
	EXPECT_OK(ibv_dealloc_pd(pdB2));
	free(b2);
	t_end();
}

/*
 * Responder-side errors on an incoming SEND: the receiver's completion
 * status and the sender's.
 */
static void resp_error_case(const char *what, struct ibv_sge *rs, int nrs,
			    uint32_t send_len, enum ibv_wc_status recv_st,
			    int send_st /* -1: any error but flush */)
{
	struct dt_rc_pair c;
	struct ibv_sge s = sge_of(bufA, send_len, mrA->lkey);
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	struct dt_wc_exp e;
	int st;

	conn_open(&c, NULL, NULL, true);
	CHECK_OK(post_recv1(c.qb, 0x301, rs, nrs));
	CHECK_OK(post_send1(c.qa, 0x302, IBV_WR_SEND, &s, 1, IBV_SEND_SIGNALED,
			    0, 0, &bad));
	e = dt_exp_err(0x301, recv_st, c.qb->qp_num);
	EXPECT_ONE(&c.rb, &e, what);
	st = wait_status(&c.sa, what, &wc);
	if (send_st >= 0) {
		e = dt_exp_err(0x302, (enum ibv_wc_status)send_st, c.qa->qp_num);
		if (st >= 0)
			EXPECT_WC(&wc, &e);
		else
			DT_FAIL_(0, "%s: no requester completion", what);
	} else if (st < 0 || st == IBV_WC_SUCCESS ||
		   st == IBV_WC_WR_FLUSH_ERR) {
		DT_FAIL_(0, "%s: requester status %d (%s), expected an error",
			 what, st, st >= 0 ?
			 dt_wc_status_name((enum ibv_wc_status)st) : "none");
	} else {
		printf("  %s: requester got %s\n", what,
		       dt_wc_status_name((enum ibv_wc_status)st));
	}
	/* both QPs end in ERR (responder class C/B error, IBA 9.9.3;
	 * k:rxe_resp.c do_class_ac_error -> goto_error) */
	EXPECT_EQ(dt_qp_state(c.qa), IBV_QPS_ERR);
	EXPECT_EQ(dt_qp_state(c.qb), IBV_QPS_ERR);
	dt_rc_pair_close(&c);
}

static void t_responder_errors(void)
{
	struct ibv_mr *mr_ro;
	uint8_t *b2 = dt_alloc(BSZ);
	struct ibv_sge rs;

	t_begin("responder errors: RECV too small, bad RECV buffers");
	/* RECV buffer too small: receiver IBV_WC_LOC_LEN_ERR, sender
	 * IBV_WC_REM_INV_REQ_ERR (k:rxe_resp.c RESPST_ERR_LENGTH ->
	 * do_class_ac_error(AETH_NAK_INVALID_REQ, IB_WC_REM_INV_REQ_ERR),
	 * receive WQE completed with IB_WC_LOC_LEN_ERR) */
	rs = sge_of(bufB, 50, mrB->lkey);
	resp_error_case("RECV 50 bytes < SEND 100", &rs, 1, 100,
			IBV_WC_LOC_LEN_ERR, IBV_WC_REM_INV_REQ_ERR);
	rs = sge_of(bufB, 1000, mrB->lkey);
	resp_error_case("RECV 1000 bytes < SEND 3000 (multi-packet)", &rs, 1,
			3000, IBV_WC_LOC_LEN_ERR, IBV_WC_REM_INV_REQ_ERR);
	/* a receive with an unknown lkey: receiver IBV_WC_LOC_PROT_ERR */
	rs = sge_of(bufB, 4096, mrB->lkey ^ 0x00ffff00u);
	resp_error_case("RECV unknown lkey", &rs, 1, 100, IBV_WC_LOC_PROT_ERR,
			-1);
	/* a receive buffer without LOCAL_WRITE */
	mr_ro = dt_reg_mr(B->pd, b2, BSZ, 0);
	CHECK_PTR(mr_ro);
	rs = sge_of(b2, 4096, mr_ro->lkey);
	resp_error_case("RECV into an MR without LOCAL_WRITE", &rs, 1, 100,
			IBV_WC_LOC_PROT_ERR, -1);
	EXPECT_OK(ibv_dereg_mr(mr_ro));
	free(b2);
	t_end();
}

static void t_retry_errors(void)
{
	struct dt_conn_cfg cc;
	struct dt_rc_pair c;
	struct ibv_sge s = sge_of(bufA, 64, mrA->lkey);
	struct ibv_send_wr *bad = NULL;
	struct dt_wc_exp e;
	double t0;

	t_begin("RNR retry exceeded, transport retry exceeded");
	/* rnr_retry 0: the first RNR NAK ends the WR with
	 * IBV_WC_RNR_RETRY_EXC_ERR (ibv_modify_qp(3) rnr_retry; IBA
	 * 9.7.5.2.8) */
	dt_conn_cfg_default(&cc);
	cc.rnr_retry = 0;
	conn_open(&c, NULL, &cc, true);
	EXPECT_OK(post_send1(c.qa, 0x401, IBV_WR_SEND, &s, 1, IBV_SEND_SIGNALED,
			     0, 0, &bad));
	e = dt_exp_err(0x401, IBV_WC_RNR_RETRY_EXC_ERR, c.qa->qp_num);
	if (EXPECT_ONE(&c.sa, &e, "SEND without a receive, rnr_retry 0"))
		expect_qp_err_and_flush(c.qa, &c.sa, "after RNR_RETRY_EXC_ERR");
	dt_rc_pair_close(&c);
	/* the same with a 3-packet SEND */
	conn_open(&c, NULL, &cc, true);
	s = sge_of(bufA, 3000, mrA->lkey);
	EXPECT_OK(post_send1(c.qa, 0x403, IBV_WR_SEND, &s, 1, IBV_SEND_SIGNALED,
			     0, 0, &bad));
	e = dt_exp_err(0x403, IBV_WC_RNR_RETRY_EXC_ERR, c.qa->qp_num);
	EXPECT_ONE(&c.sa, &e, "3000-byte SEND without a receive, rnr_retry 0");
	dt_rc_pair_close(&c);
	s = sge_of(bufA, 64, mrA->lkey);

	/* the peer QP is gone: no ACK ever comes; after retry_cnt
	 * retransmissions (timeout 4.096 us * 2^12 = 17 ms)
	 * IBV_WC_RETRY_EXC_ERR */
	dt_conn_cfg_default(&cc);
	cc.timeout = 12;
	cc.retry_cnt = 2;
	conn_open(&c, NULL, &cc, true);
	EXPECT_OK(ibv_destroy_qp(c.qb));
	c.qb = NULL;
	t0 = dt_now();
	EXPECT_OK(post_send1(c.qa, 0x402, IBV_WR_SEND, &s, 1, IBV_SEND_SIGNALED,
			     0, 0, &bad));
	e = dt_exp_err(0x402, IBV_WC_RETRY_EXC_ERR, c.qa->qp_num);
	if (EXPECT_ONE(&c.sa, &e, "SEND to a destroyed QP"))
		printf("  retry exceeded after %.0f ms\n",
		       (dt_now() - t0) * 1e3);
	dt_rc_pair_close(&c);
	t_end();
}

/* RNR NAKs are not an error while rnr_retry lasts: messages that arrive
 * before their receives complete once the receives are posted (IBA
 * 9.7.5.2.8; rnr_retry 7 = infinite, ibv_modify_qp(3)). Single- and
 * multi-packet SENDs and RDMA WRITE with immediate, alone and pipelined. */
static void rnr_recover_case(enum ibv_wr_opcode op, uint32_t len, int nmsg)
{
	struct dt_rc_pair c;
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc;
	struct dt_wc_exp e;
	char what[128];
	double until;
	int i, got;

	snprintf(what, sizeof(what), "%d x %s %u bytes (path MTU 1024) after "
		 "RNR", nmsg, dt_wr_opcode_name(op), len);
	conn_open(&c, NULL, NULL, true);
	dt_fill_random(bufA, (size_t)len * (size_t)nmsg);
	memset(bufB, 0, BSZ);
	for (i = 0; i < nmsg; i++) {
		struct ibv_sge s = sge_of(bufA + (size_t)len * (size_t)i, len,
					  mrA->lkey);
		struct ibv_send_wr wr;

		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x500 + (uint64_t)i;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.opcode = op;
		wr.send_flags = IBV_SEND_SIGNALED;
		wr.imm_data = htobe32(0xabcd0000 + (uint32_t)i);
		wr.wr.rdma.remote_addr = (uintptr_t)(bufB + (size_t)len * (size_t)i);
		wr.wr.rdma.rkey = mrB->rkey;
		EXPECT_OK(ibv_post_send(c.qa, &wr, &bad));
	}
	/* 20 ms without a receive: RNR NAKs, no completion on either side */
	until = dt_now() + 0.02;
	while (dt_now() < until) {
		if (dt_cq_poll(&c.sa, &wc, 1) > 0) {
			dt_print_wc(stderr, "unexpected", &wc);
			DT_FAIL_(0, "%s: completion while the peer had no "
				 "receive", what);
		}
	}
	for (i = 0; i < nmsg; i++) {
		struct ibv_sge r = sge_of(bufB + BSZ / 2 + 4096 * (size_t)i,
					  4096, mrB->lkey);

		EXPECT_OK(post_recv1(c.qb, 0x600 + (uint64_t)i, &r,
				     op == IBV_WR_SEND ? 1 : 0));
	}
	for (got = 0; got < nmsg; got++) {
		if (dt_wait_wc(&c.sa, &wc, 1, 5.0, what) != 1) {
			DT_FAIL_(0, "%s: %d of %d requester completions 5 s "
				 "after the receives were posted", what, got,
				 nmsg);
			break;
		}
		e = dt_exp_send(0x500 + (uint64_t)got, op, len, c.qa->qp_num);
		EXPECT_WC(&wc, &e);
	}
	if (got == nmsg) {
		for (i = 0; i < nmsg; i++) {
			e = dt_exp_recv(0x600 + (uint64_t)i, op, len,
					c.qb->qp_num, c.qa->qp_num,
					0xabcd0000 + (uint32_t)i);
			EXPECT_ONE(&c.rb, &e, what);
			EXPECT(memcmp(bufA + (size_t)len * (size_t)i,
				      op == IBV_WR_SEND ?
				      bufB + BSZ / 2 + 4096 * (size_t)i :
				      bufB + (size_t)len * (size_t)i, len) == 0);
		}
	}
	dt_rc_pair_close(&c);
}

static void t_rnr_recover(void)
{
	t_begin("RNR then recovery (rnr_retry 7)");
	rnr_recover_case(IBV_WR_SEND, 100, 1);
	rnr_recover_case(IBV_WR_SEND, 1025, 1);
	rnr_recover_case(IBV_WR_SEND, 3000, 1);
	rnr_recover_case(IBV_WR_RDMA_WRITE_WITH_IMM, 100, 1);
	rnr_recover_case(IBV_WR_RDMA_WRITE_WITH_IMM, 3000, 1);
	rnr_recover_case(IBV_WR_SEND, 100, 2);
	rnr_recover_case(IBV_WR_SEND, 100, 8);
	rnr_recover_case(IBV_WR_RDMA_WRITE_WITH_IMM, 100, 4);
	t_end();
}

/* To ERR with WRs in flight: completions are a run of successes followed
 * by flushes, in posting order, one per WR (IBA 10.3.1, 10.8.3.3). */
#define NFL 256
static void t_flush_inflight(void)
{
	struct dt_rc_pair c;
	struct dt_qp_cfg q;
	struct ibv_send_wr *bad = NULL;
	struct ibv_wc wc[NFL];
	int i, n, ok = 0, flushed = 0;
	bool seen_flush = false;

	t_begin("modify to ERR with WRs in flight");
	qcfg_default(&q);
	q.max_send_wr = NFL;
	conn_open(&c, &q, NULL, true);
	for (i = 0; i < NFL; i++) {
		struct ibv_sge s = sge_of(bufA, BSZ, mrA->lkey);

		EXPECT_OK(post_send1(c.qa, 0x600 + (uint64_t)i,
				     IBV_WR_RDMA_WRITE, &s, 1, IBV_SEND_SIGNALED,
				     (uintptr_t)bufB, mrB->rkey, &bad));
	}
	/* let the first one complete, then pull the plug */
	n = dt_wait_wc(&c.sa, wc, 1, DT_WAIT_S, "flush in flight");
	EXPECT_EQ(n, 1);
	EXPECT_OK(dt_qp_to_state(c.qa, IBV_QPS_ERR));
	n += dt_wait_wc(&c.sa, wc + n, NFL - n, DT_WAIT_S, "flush in flight");
	EXPECT_EQ(n, NFL);
	for (i = 0; i < n; i++) {
		EXPECT_EQ(wc[i].wr_id, 0x600 + (uint64_t)i);
		EXPECT_EQ(wc[i].qp_num, c.qa->qp_num);
		if (wc[i].status == IBV_WC_SUCCESS) {
			ok++;
			if (seen_flush)
				DT_FAIL_(0, "WR %d succeeded after a flushed one",
					 i);
		} else if (wc[i].status == IBV_WC_WR_FLUSH_ERR) {
			flushed++;
			seen_flush = true;
		} else {
			dt_print_wc(stderr, "unexpected", &wc[i]);
			DT_FAIL_(0, "status %s", dt_wc_status_name(wc[i].status));
		}
	}
	printf("  %d completed, %d flushed\n", ok, flushed);
	EXPECT_EQ(dt_cq_drain_unexpected(&c.sa, "flush in flight"), 0);
	dt_rc_pair_close(&c);
	t_end();
}

/* ------------------------------------------------------------------ */
/* Hostile arguments: boundary values, wrapping ranges, zero sizes      */

static void expect_reg_iova_fails_at(int line, void *addr, size_t len,
				     uint64_t iova, int exp_errno)
{
	struct ibv_mr *mr;

	errno = 0;
	mr = ibv_reg_mr_iova(A->pd, addr, len, iova, IBV_ACCESS_LOCAL_WRITE);
	if (mr != NULL) {
		dt_report(__FILE__, line, "ibv_reg_mr_iova(%p, %zu, 0x%" PRIx64
			  ") succeeded, expected %s", addr, len, iova,
			  dt_errstr(exp_errno));
		ibv_dereg_mr(mr);
	} else if (errno != exp_errno) {
		dt_report(__FILE__, line, "ibv_reg_mr_iova(%p, %zu, 0x%" PRIx64
			  "): errno %d (%s), expected %s", addr, len, iova,
			  errno, dt_errstr(errno), dt_errstr(exp_errno));
	}
}

static void t_hostile_args(void)
{
	uint8_t *buf = dt_alloc(BSZ);
	struct ibv_send_wr wr, *bad;
	struct ibv_recv_wr rwr, *rbad;
	struct ibv_sge s;
	struct ibv_mr *mr;
	struct dt_wc_exp e;
	struct dt_rc_pair c;
	int r;

	t_begin("hostile arguments: wrapping ranges, zero sizes, NULLs");
	/* ibv_reg_mr(3) RETURN VALUE: EINVAL "Invalid access value" or
	 * argument; a range that wraps the address space names no memory
	 * (k: ib_umem_get "(addr + size) < addr" -> -EINVAL; ib_check_mr
	 * iova + length overflow -> -EINVAL) */
	expect_reg_iova_fails_at(__LINE__, (void *)(UINTPTR_MAX - 4095), 8192,
				 0x1000, EINVAL);
	expect_reg_iova_fails_at(__LINE__, buf, 8192, UINT64_MAX - 4095, EINVAL);
	expect_reg_iova_fails_at(__LINE__, buf, SIZE_MAX, 0, EINVAL);
	/* NULL with a length: nothing there to register */
	expect_reg_iova_fails_at(__LINE__, NULL, 4096, 0x1000, EINVAL);
	/* length 0: droce registers an empty region (the kernel path is
	 * provider-specific); its keys then cover zero bytes only */
	errno = 0;
	mr = dt_reg_mr(A->pd, buf, 0, IBV_ACCESS_LOCAL_WRITE);
	if (mr == NULL) {
		EXPECT_EQ(errno, EINVAL);
	} else {
		memset(&wr, 0, sizeof(wr));
		wr.wr_id = 0x501;
		wr.sg_list = &s;
		wr.num_sge = 1;
		wr.opcode = IBV_WR_SEND;
		wr.send_flags = IBV_SEND_SIGNALED;
		s = sge_of(buf, 1, mr->lkey);
		req_error_case("SEND 1 byte through a 0-length MR", &wr,
			       IBV_WC_LOC_PROT_ERR, 1);
		EXPECT_OK(ibv_dereg_mr(mr));
	}

	/* SGEs and remote ranges whose end wraps past 2^64: checked without
	 * overflow, reported as completions (IBA 10.7.3.1), never executed */
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x502;
	wr.sg_list = &s;
	wr.num_sge = 1;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	s.addr = UINT64_MAX - 15;
	s.length = 64;
	s.lkey = mrA->lkey;
	req_error_case("SEND sge addr + length wraps", &wr,
		       IBV_WC_LOC_PROT_ERR, 1);
	s = sge_of(bufA, 64, mrA->lkey);
	wr.opcode = IBV_WR_RDMA_WRITE;
	wr.wr.rdma.remote_addr = UINT64_MAX - 15;
	wr.wr.rdma.rkey = mrB->rkey;
	req_error_case("RDMA_WRITE remote_addr + length wraps", &wr,
		       IBV_WC_REM_ACCESS_ERR, 0);
	wr.opcode = IBV_WR_RDMA_READ;
	req_error_case("RDMA_READ remote_addr + length wraps", &wr,
		       IBV_WC_REM_ACCESS_ERR, 0);

	/* a receive SGE that wraps: the SEND that lands there fails the
	 * receive (LOC_PROT_ERR) and the sender sees REM_OP_ERR (IBA
	 * 9.7.5.2.4 remote operational error) */
	conn_open(&c, NULL, NULL, true);
	s.addr = UINT64_MAX - 15;
	s.length = 64;
	s.lkey = mrB->lkey;
	EXPECT_OK(post_recv1(c.qb, 0x503, &s, 1));
	s = sge_of(bufA, 32, mrA->lkey);
	EXPECT_OK(post_send1(c.qa, 0x504, IBV_WR_SEND, &s, 1,
			     IBV_SEND_SIGNALED, 0, 0, &bad));
	e = dt_exp_err(0x503, IBV_WC_LOC_PROT_ERR, c.qb->qp_num);
	EXPECT_ONE(&c.rb, &e, "receive into a wrapping SGE");
	e = dt_exp_err(0x504, IBV_WC_REM_OP_ERR, c.qa->qp_num);
	EXPECT_ONE(&c.sa, &e, "SEND into a wrapping receive SGE");
	dt_rc_pair_close(&c);

	/* negative num_sge: an invalid WR, EINVAL with bad_wr (as
	 * num_sge > max_sge, rxe.c validate_send_wr) */
	conn_open(&c, NULL, NULL, true);
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x505;
	wr.sg_list = &s;
	wr.num_sge = -1;
	wr.opcode = IBV_WR_SEND;
	bad = NULL;
	EXPECT_RET(ibv_post_send(c.qa, &wr, &bad), EINVAL);
	EXPECT(bad == &wr);
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 0x506;
	rwr.sg_list = &s;
	rwr.num_sge = -1;
	rbad = NULL;
	EXPECT_RET(ibv_post_recv(c.qb, &rwr, &rbad), EINVAL);
	EXPECT(rbad == &rwr);

	/* NULL where verbs allows it: no SGE list with num_sge 0 is a
	 * zero-length message (ibv_post_send(3)); ibv_poll_cq with ne 0
	 * looks at nothing */
	memset(&rwr, 0, sizeof(rwr));
	rwr.wr_id = 0x507;
	EXPECT_OK(ibv_post_recv(c.qb, &rwr, &rbad));
	memset(&wr, 0, sizeof(wr));
	wr.wr_id = 0x508;
	wr.opcode = IBV_WR_SEND;
	wr.send_flags = IBV_SEND_SIGNALED;
	EXPECT_OK(ibv_post_send(c.qa, &wr, &bad));
	e = dt_exp_send(0x508, IBV_WR_SEND, 0, c.qa->qp_num);
	EXPECT_ONE(&c.sa, &e, "zero-length SEND without an SGE list");
	e = dt_exp_recv(0x507, IBV_WR_SEND, 0, c.qb->qp_num, c.qa->qp_num, 0);
	EXPECT_ONE(&c.rb, &e, "zero-length receive without an SGE list");
	EXPECT_EQ(ibv_poll_cq(c.sa.cq, 0, NULL), 0);
	dt_rc_pair_close(&c);

	/* a list longer than the send queue: the WRs that fit are posted,
	 * bad_wr is the first that did not (ENOMEM, as t_queue_full) */
	{
		struct dt_conn_cfg cc;
		struct ibv_send_wr *chain;
		struct ibv_wc *wc;
		uint32_t i, n;

		dt_conn_cfg_default(&cc);
		cc.rnr_retry = 7;	/* no receive: nothing completes */
		conn_open(&c, NULL, &cc, true);
		n = c.capa.max_send_wr;
		chain = calloc(n + 2, sizeof(*chain));
		wc = calloc(n + 2, sizeof(*wc));
		CHECK(chain && wc);
		s = sge_of(bufA, 8, mrA->lkey);
		for (i = 0; i < n + 2; i++) {
			chain[i].wr_id = 0x600 + i;
			chain[i].sg_list = &s;
			chain[i].num_sge = 1;
			chain[i].opcode = IBV_WR_SEND;
			chain[i].send_flags = IBV_SEND_SIGNALED;
			chain[i].next = i + 1 < n + 2 ? &chain[i + 1] : NULL;
		}
		bad = NULL;
		EXPECT_RET(ibv_post_send(c.qa, chain, &bad), ENOMEM);
		EXPECT(bad == &chain[n]);
		EXPECT_OK(dt_qp_to_state(c.qa, IBV_QPS_ERR));
		EXPECT_EQ(dt_wait_wc(&c.sa, wc, (int)n, DT_WAIT_S, "flush"),
			  (int)n);
		for (i = 0; i < n; i++)
			EXPECT_EQ(wc[i].wr_id, 0x600 + i);
		EXPECT_EQ(dt_cq_drain_unexpected(&c.sa, "past the queue"), 0);
		free(chain);
		free(wc);
		dt_rc_pair_close(&c);
	}

	/* zero-depth queues: a QP with every cap 0 is legal; posting past
	 * what it reports finds a full queue */
	{
		struct dt_cq cq;
		struct ibv_qp_init_attr ia;
		struct ibv_qp *qp;

		dt_cq_create(A, 16, false, &cq);
		memset(&ia, 0, sizeof(ia));
		ia.send_cq = cq.cq;
		ia.recv_cq = cq.cq;
		ia.qp_type = IBV_QPT_RC;
		qp = ibv_create_qp(A->pd, &ia);
		if (qp == NULL) {
			DT_FAIL_(0, "ibv_create_qp(all caps 0): errno %d (%s)",
				 errno, dt_errstr(errno));
		} else {
			struct dt_conn_cfg cc;

			dt_conn_cfg_default(&cc);
			EXPECT_OK(dt_qp_to_init(qp, &cc));	/* RESET refuses */
			memset(&rwr, 0, sizeof(rwr));
			/* the actual depth (ibv_create_qp(3) updates cap; a
			 * provider may round 0 up), then one too many */
			for (uint32_t i = 0; i < ia.cap.max_recv_wr; i++)
				EXPECT_OK(ibv_post_recv(qp, &rwr, &rbad));
			rbad = NULL;
			r = ibv_post_recv(qp, &rwr, &rbad);
			EXPECT_EQ(r, ENOMEM);
			EXPECT(rbad == &rwr);
			EXPECT_OK(ibv_destroy_qp(qp));
		}
		dt_cq_destroy(&cq);
	}

	/* objects still in use (ibv_create_srq(3), ibv_create_comp_channel(3)
	 * NOTES: destroy "fails if any ... is still associated"; EBUSY as
	 * the kernel's usecnt checks) */
	{
		struct ibv_srq_init_attr sa;
		struct ibv_comp_channel *ch;
		struct ibv_srq *srq;
		struct ibv_cq *ccq;
		struct dt_cq cq;
		struct ibv_qp *qp;

		memset(&sa, 0, sizeof(sa));
		sa.attr.max_wr = 8;
		sa.attr.max_sge = 1;
		srq = ibv_create_srq(A->pd, &sa);
		CHECK_PTR(srq);
		dt_cq_create(A, 16, false, &cq);
		{
			struct ibv_qp_init_attr ia;

			memset(&ia, 0, sizeof(ia));
			ia.send_cq = cq.cq;
			ia.recv_cq = cq.cq;
			ia.srq = srq;
			ia.qp_type = IBV_QPT_RC;
			ia.cap.max_send_wr = 4;
			ia.cap.max_send_sge = 1;
			qp = ibv_create_qp(A->pd, &ia);
			CHECK_PTR(qp);
		}
		EXPECT_RET(ibv_destroy_srq(srq), EBUSY);
		EXPECT_OK(ibv_destroy_qp(qp));
		EXPECT_OK(ibv_destroy_srq(srq));

		ch = ibv_create_comp_channel(A->ctx);
		CHECK_PTR(ch);
		ccq = ibv_create_cq(A->ctx, 16, NULL, ch, 0);
		CHECK_PTR(ccq);
		EXPECT_RET(ibv_destroy_comp_channel(ch), EBUSY);
		EXPECT_OK(ibv_destroy_cq(ccq));
		EXPECT_OK(ibv_destroy_comp_channel(ch));
		dt_cq_destroy(&cq);
	}
	free(buf);
	t_end();
}

/* ------------------------------------------------------------------ */
/* Destruction order                                                    */

static void t_destroy_order(void)
{
	struct ibv_pd *pd;
	struct ibv_mr *mr;
	struct dt_cq cq;
	struct dt_qp_cfg q;
	struct ibv_qp *qp;
	struct ibv_ah_attr aa;
	struct ibv_ah *ah;
	uint8_t *buf = dt_alloc(4096);
	int r;

	t_begin("destroy in the wrong order -> EBUSY");
	pd = ibv_alloc_pd(A->ctx);
	CHECK_PTR(pd);
	mr = dt_reg_mr(pd, buf, 4096, IBV_ACCESS_LOCAL_WRITE);
	CHECK_PTR(mr);
	dt_cq_create(A, 16, false, &cq);
	qcfg_default(&q);
	q.pd = pd;
	qp = dt_qp_create(A, cq.cq, cq.cq, &q, NULL);
	CHECK_PTR(qp);

	/* ibv_alloc_pd(3): dealloc "may fail if any other resource is still
	 * associated with the PD"; ibv_destroy_cq(3): "fails if any queue
	 * pair is still associated with this CQ"; the errno is EBUSY
	 * (k:core rdma_core.c / uverbs_std_types.c: ib_destroy_usecnt() ->
	 * -EBUSY) */
	EXPECT_RET(ibv_dealloc_pd(pd), EBUSY);
	EXPECT_RET(ibv_destroy_cq(cq.cq), EBUSY);
	/* droce.h droce_cleanup(): "Every verbs object must have been
	 * destroyed first (otherwise -EBUSY)" */
	r = droce_cleanup();
	EXPECT_EQ(r, -EBUSY);

	EXPECT_OK(ibv_destroy_qp(qp));
	EXPECT_RET(ibv_dealloc_pd(pd), EBUSY);	/* the MR is still there */
	EXPECT_OK(ibv_dereg_mr(mr));
	/* an AH is one of the PD's users too (k:core verbs.c
	 * rdma_create_ah() counts it in pd->usecnt); found by fuzz_verbs */
	memset(&aa, 0, sizeof(aa));
	aa.is_global = 1;
	aa.port_num = 1;
	aa.grh.sgid_index = 1;
	aa.grh.hop_limit = 64;
	aa.grh.dgid.raw[10] = 0xff;
	aa.grh.dgid.raw[11] = 0xff;
	aa.grh.dgid.raw[12] = 198;
	aa.grh.dgid.raw[13] = 18;
	aa.grh.dgid.raw[15] = 2;
	ah = ibv_create_ah(pd, &aa);
	CHECK_PTR(ah);
	EXPECT_RET(ibv_dealloc_pd(pd), EBUSY);
	EXPECT_OK(ibv_destroy_ah(ah));
	EXPECT_OK(ibv_dealloc_pd(pd));
	dt_cq_destroy(&cq);
	free(buf);
	t_end();
}

/* ------------------------------------------------------------------ */

int main(int argc, char **argv)
{
	double t0;
	int s;

	(void)argc;
	dt_watchdog(170);
	dt_init(&env, argv[0], NULL, NULL);
	dt_set_abort_hook(abort_hook);
	A = &env.dev[0];
	B = &env.dev[1];
	t0 = dt_now();

	bufA = dt_alloc(BSZ);
	bufB = dt_alloc(BSZ);
	mrA = dt_reg_mr(A->pd, bufA, BSZ, DT_ACCESS_ALL);
	CHECK_PTR(mrA);
	mrB = dt_reg_mr(B->pd, bufB, BSZ, DT_ACCESS_ALL);
	CHECK_PTR(mrB);

	t_query_device();
	t_query_port();
	t_query_gid_pkey();
	t_pd_mr();
	t_cq_limits();
	t_qp_limits();
	t_modify_qp();
	t_post_states();
	t_post_immediate_errors();
	t_queue_full();
	t_local_errors();
	t_remote_errors();
	t_responder_errors();
	t_retry_errors();
	t_rnr_recover();
	t_flush_inflight();
	t_hostile_args();
	t_destroy_order();

	EXPECT_OK(ibv_dereg_mr(mrA));
	EXPECT_OK(ibv_dereg_mr(mrB));
	free(bufA);
	free(bufB);
	for (s = 0; s < 2 && dt_failures; s++)
		droce_dev_stats_dump(env.dev[s].ctx, stdout);
	dt_fini(&env);
	printf("test_verbs_errors: %s (%u failure(s)) in %.2f s\n",
	       dt_failures ? "FAILED" : "PASSED", dt_failures, dt_now() - t0);
	if (dt_failures)
		printf("reproduce with DROCE_TEST_SEED=%" PRIu64 "\n", dt_seed());
	return dt_failures ? 1 : 0;
}
