/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Queue pairs: creation (rings in hugepage memory), the IBTA state machine
 * (IBTA 10.3.1, table 91 "QP state transition properties") with each
 * transition's required and optional attributes, query and destroy.
 * Engine-side effects of a transition run on the owning engine (drv->exec)
 * so the engine never sees a half-modified QP.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <arpa/inet.h>

#include <rte_cycles.h>
#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "droce_int.h"

/* ------------------------------------------------ transition table */

struct qp_transition {
	bool valid;
	uint32_t req[IBV_QPT_UD + 1];	/* required beyond IBV_QP_STATE */
	uint32_t opt[IBV_QPT_UD + 1];
};

#define RC IBV_QPT_RC
#define UC IBV_QPT_UC
#define UD IBV_QPT_UD

static const struct qp_transition qp_table[IBV_QPS_ERR + 1][IBV_QPS_ERR + 1] = {
	[IBV_QPS_RESET] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_INIT] = { .valid = true,
			.req = {
				[RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
			} },
	},
	[IBV_QPS_INIT] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_INIT] = { .valid = true,
			.opt = {
				[RC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[UC] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_ACCESS_FLAGS,
				[UD] = IBV_QP_PKEY_INDEX | IBV_QP_PORT | IBV_QP_QKEY,
			} },
		[IBV_QPS_RTR] = { .valid = true,
			.req = {
				[RC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN | IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_MIN_RNR_TIMER,
				[UC] = IBV_QP_AV | IBV_QP_PATH_MTU | IBV_QP_DEST_QPN |
				       IBV_QP_RQ_PSN,
			},
			.opt = {
				[RC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				[UC] = IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS | IBV_QP_PKEY_INDEX,
				[UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
			} },
	},
	[IBV_QPS_RTR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = { .valid = true,
			.req = {
				[RC] = IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_SQ_PSN | IBV_QP_MAX_QP_RD_ATOMIC,
				[UC] = IBV_QP_SQ_PSN,
				[UD] = IBV_QP_SQ_PSN,
			},
			.opt = {
				[RC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE |
				       IBV_QP_RATE_LIMIT,
				[UC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_PATH_MIG_STATE | IBV_QP_RATE_LIMIT,
				[UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY | IBV_QP_RATE_LIMIT,
			} },
	},
	[IBV_QPS_RTS] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = { .valid = true,
			.opt = {
				[RC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
				       IBV_QP_PATH_MIG_STATE | IBV_QP_MIN_RNR_TIMER |
				       IBV_QP_RATE_LIMIT,
				[UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS | IBV_QP_ALT_PATH |
				       IBV_QP_PATH_MIG_STATE | IBV_QP_RATE_LIMIT,
				[UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY | IBV_QP_RATE_LIMIT,
			} },
		[IBV_QPS_SQD] = { .valid = true,
			.opt = { [RC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [UC] = IBV_QP_EN_SQD_ASYNC_NOTIFY,
				 [UD] = IBV_QP_EN_SQD_ASYNC_NOTIFY } },
	},
	[IBV_QPS_SQD] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = { .valid = true,
			.opt = {
				[RC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_MIN_RNR_TIMER | IBV_QP_PATH_MIG_STATE |
				       IBV_QP_RATE_LIMIT,
				[UC] = IBV_QP_CUR_STATE | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_PATH_MIG_STATE | IBV_QP_RATE_LIMIT,
				[UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY | IBV_QP_RATE_LIMIT,
			} },
		[IBV_QPS_SQD] = { .valid = true,
			.opt = {
				[RC] = IBV_QP_PORT | IBV_QP_AV | IBV_QP_TIMEOUT |
				       IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY |
				       IBV_QP_MAX_QP_RD_ATOMIC | IBV_QP_MAX_DEST_RD_ATOMIC |
				       IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_PKEY_INDEX | IBV_QP_MIN_RNR_TIMER |
				       IBV_QP_PATH_MIG_STATE,
				[UC] = IBV_QP_AV | IBV_QP_ALT_PATH | IBV_QP_ACCESS_FLAGS |
				       IBV_QP_PKEY_INDEX | IBV_QP_PATH_MIG_STATE,
				[UD] = IBV_QP_PKEY_INDEX | IBV_QP_QKEY,
			} },
	},
	[IBV_QPS_SQE] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
		[IBV_QPS_RTS] = { .valid = true,
			.opt = {
				[UC] = IBV_QP_CUR_STATE | IBV_QP_ACCESS_FLAGS,
				[UD] = IBV_QP_CUR_STATE | IBV_QP_QKEY,
			} },
	},
	[IBV_QPS_ERR] = {
		[IBV_QPS_RESET] = { .valid = true },
		[IBV_QPS_ERR] = { .valid = true },
	},
};

#undef RC
#undef UC
#undef UD

/* ---------------------------------------------------------- create */

static void sync_noop(void *arg)
{
	(void)arg;
}

static void qp_free_mem(struct droce_qp *qp)
{
	if (qp->rd_jobs != qp->rd_jobs_inline)
		rte_free(qp->rd_jobs);
	rte_free(qp->sq_buf);
	droce_wq_free(&qp->own_rq);
	rte_free(qp->sq_wrid);
	rte_free(qp->sq_state);
	rte_free(qp);
}

static uint16_t qp_udp_sport(uint32_t qpn)
{
	/* Flow entropy per QP in the dynamic range, as RoCE NICs do. */
	uint32_t h = qpn * 0x9e3779b1u;

	return (uint16_t)(0xc000 | ((h >> 16) & 0x3fff));
}

static struct droce_qp *qp_create(struct ibv_context *ctx,
				  struct ibv_qp_init_attr_ex *a)
{
	struct droce_dev *dev = droce_dev_of_ctx(ctx);
	struct droce_pd *pd;
	struct droce_qp *qp;
	uint32_t hdr, sge, inl, stride, cnt, idx;
	int socket = rte_eth_dev_socket_id(dev->port_id);

	if (!(a->comp_mask & IBV_QP_INIT_ATTR_PD) || a->pd == NULL ||
	    a->send_cq == NULL || a->recv_cq == NULL) {
		errno = EINVAL;
		return NULL;
	}
	/* Every object named must be of this context, as uverbs finds them
	 * only among the caller's handles (EINVAL). A CQ or SRQ of another
	 * device would be written by that device's engine and this one's. */
	if (a->send_cq->context != ctx || a->recv_cq->context != ctx ||
	    (a->srq != NULL && a->srq->context != ctx)) {
		errno = EINVAL;
		return NULL;
	}
	if (a->qp_type != IBV_QPT_RC && a->qp_type != IBV_QPT_UC &&
	    a->qp_type != IBV_QPT_UD) {
		errno = EOPNOTSUPP;	/* XRC, raw packet, DC: not here */
		return NULL;
	}
	if (a->comp_mask & ~(uint32_t)(IBV_QP_INIT_ATTR_PD |
			IBV_QP_INIT_ATTR_SEND_OPS_FLAGS)) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (a->cap.max_send_wr > DROCE_MAX_QP_WR ||
	    a->cap.max_recv_wr > DROCE_MAX_QP_WR ||
	    a->cap.max_send_sge > DROCE_MAX_SGE ||
	    a->cap.max_recv_sge > DROCE_MAX_SGE ||
	    a->cap.max_inline_data > DROCE_MAX_INLINE) {
		errno = EINVAL;
		return NULL;
	}
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    (a->send_ops_flags & ~(uint64_t)(IBV_QP_EX_WITH_SEND |
			IBV_QP_EX_WITH_SEND_WITH_IMM | IBV_QP_EX_WITH_RDMA_WRITE |
			IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
			IBV_QP_EX_WITH_RDMA_READ |
			IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
			IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
			IBV_QP_EX_WITH_SEND_WITH_INV | IBV_QP_EX_WITH_LOCAL_INV |
			IBV_QP_EX_WITH_BIND_MW))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* Operations the transport cannot carry (IBTA table 38), as mlx5. */
	if ((a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) &&
	    a->qp_type != IBV_QPT_RC &&
	    (a->send_ops_flags & (IBV_QP_EX_WITH_RDMA_READ |
				  IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP |
				  IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
				  IBV_QP_EX_WITH_SEND_WITH_INV |
				  (a->qp_type == IBV_QPT_UD ?
				   IBV_QP_EX_WITH_RDMA_WRITE |
				   IBV_QP_EX_WITH_RDMA_WRITE_WITH_IMM |
				   IBV_QP_EX_WITH_BIND_MW |
				   IBV_QP_EX_WITH_LOCAL_INV : 0)))) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	pd = droce_pd_of(a->pd);
	qp = rte_zmalloc_socket("droce_qp", sizeof(*qp), RTE_CACHE_LINE_SIZE,
				socket);
	if (qp == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	qp->neigh_genp = &qp->neigh_gen;	/* no neighbour yet */
	qp->rd_jobs = qp->rd_jobs_inline;
	qp->atm_cache = qp->atm_inline;
	qp->rd_mask = DROCE_READ_JOBS_INLINE - 1;
	/*
	 * Send WQE slot, in basic blocks: the segments ahead of the data
	 * (ctrl + the UD address vector; ctrl + raddr + atomic, or ctrl + a
	 * bind, on a connected QP), then max(SGEs, inline), sized per QP
	 * type as mlx5 does: an RC WQE with one SGE is one block, not the
	 * two a UD one needs, and a window of them half the lines.
	 */
	hdr = DROCE_SEG * (a->qp_type == IBV_QPT_UD ? 1 + DROCE_UD_AV_SEGS :
			   RTE_MAX(3u, 1u + DROCE_BIND_SEGS));
	sge = RTE_MAX(a->cap.max_send_sge, 1u);
	inl = a->cap.max_inline_data;
	stride = RTE_MAX(hdr + DROCE_SEG * sge, hdr + 4 + inl);
	stride = RTE_ALIGN_CEIL(stride, DROCE_BB);
	cnt = rte_align32pow2(RTE_MAX(a->cap.max_send_wr, 1u));
	qp->sq_stride = stride;
	qp->sq_cnt = cnt;
	qp->sq_max_sge = RTE_MIN((stride - hdr) / DROCE_SEG,
				 (uint32_t)DROCE_MAX_SGE);
	qp->sq_max_inline = RTE_MIN(stride - hdr - 4,
				    (uint32_t)DROCE_MAX_INLINE);
	qp->sq_max_wr = cnt;
	qp->sq_buf = rte_zmalloc_socket("droce_sq", (size_t)stride * cnt,
					DROCE_BB, socket);
	qp->sq_wrid = rte_zmalloc_socket("droce_sq_wrid", sizeof(uint64_t) * cnt,
					 RTE_CACHE_LINE_SIZE, socket);
	qp->sq_state = rte_zmalloc_socket("droce_sq_state",
			sizeof(*qp->sq_state) * cnt, RTE_CACHE_LINE_SIZE, socket);
	if (a->srq) {
		qp->srq = container_of(a->srq, struct droce_srq, ibv);
		qp->rq = &qp->srq->wq;
	} else {
		qp->rq = &qp->own_rq;
	}
	if (!qp->sq_buf || !qp->sq_wrid || !qp->sq_state ||
	    (!a->srq && droce_wq_init(&qp->own_rq, a->cap.max_recv_wr,
				      a->cap.max_recv_sge, socket))) {
		qp_free_mem(qp);
		errno = ENOMEM;
		return NULL;
	}
	qp->dev = dev;
	qp->eng = dev->eng;
	qp->pd = pd;
	qp->scq = droce_cq_of(a->send_cq);
	qp->rcq = droce_cq_of(a->recv_cq);
	qp->sq_sig_all = a->sq_sig_all;
	qp->state = IBV_QPS_RESET;
	qp->path_mtu = IBV_MTU_1024;
	qp->mtu = 1024;
	rte_spinlock_init(&qp->sq_lock);
	/* In a thread domain: posts without the locks (one thread at a
	 * time is the application's promise, as for mlx5). */
	qp->sq_nolock = droce_pd_single_thread(a->pd);
	qp->own_rq.nolock = qp->sq_nolock;
	qp->cap.max_send_wr = qp->sq_max_wr;
	/* With an SRQ the QP has no receive queue of its own (IBTA 10.2.9). */
	qp->cap.max_recv_wr = a->srq ? 0 : qp->own_rq.cnt;
	qp->cap.max_send_sge = qp->sq_max_sge;
	qp->cap.max_recv_sge = a->srq ? 0 : qp->own_rq.max_sge;
	qp->cap.max_inline_data = qp->sq_max_inline;

	pthread_mutex_lock(&dev->lock);
	for (idx = 0; idx < DROCE_MAX_QP; idx++) {
		uint32_t i = (dev->qp_next + idx) % DROCE_MAX_QP;

		if (dev->qp_tbl[i] == NULL) {
			idx = i;
			break;
		}
	}
	if (idx >= DROCE_MAX_QP || dev->qp_tbl[idx] != NULL) {
		pthread_mutex_unlock(&dev->lock);
		qp_free_mem(qp);
		errno = ENOMEM;
		return NULL;
	}
	dev->qp_next = idx + 1;
	dev->nb_qp++;
	/* Many QPs: from now on every post asks for its WQE slots ahead
	 * (rdma_post.c), the QPs already there too (they are posted to by
	 * other threads: a hint, stored whole). Kept when QPs go: a device
	 * that had them is likely to have them again. */
	if (dev->nb_qp >= DROCE_MANY_QPS && !dev->many_qps) {
		dev->many_qps = true;
		for (uint32_t i = 0; i < DROCE_MAX_QP; i++)
			if (dev->qp_tbl[i])
				__atomic_store_n(&dev->qp_tbl[i]->sq_ahead, true,
						 __ATOMIC_RELAXED);
	}
	qp->sq_ahead = dev->many_qps;

	qp->ex.qp_base.context = ctx;
	qp->ex.qp_base.qp_context = a->qp_context;
	qp->ex.qp_base.pd = a->pd;
	qp->ex.qp_base.send_cq = a->send_cq;
	qp->ex.qp_base.recv_cq = a->recv_cq;
	qp->ex.qp_base.srq = a->srq;
	qp->ex.qp_base.qp_num = idx + DROCE_QPN_BASE;
	qp->sq_ctrl_qpn = qp->ex.qp_base.qp_num << 8;
	qp->tbl_idx = idx;
	qp->ex.qp_base.handle = qp->ex.qp_base.qp_num;
	qp->ex.qp_base.state = IBV_QPS_RESET;
	qp->ex.qp_base.qp_type = a->qp_type;
	pthread_mutex_init(&qp->ex.qp_base.mutex, NULL);
	pthread_cond_init(&qp->ex.qp_base.cond, NULL);
	qp->udp_sport = qp_udp_sport(qp->ex.qp_base.qp_num);
	qp->transport = a->qp_type == IBV_QPT_RC ? ROCE_TRANSPORT_RC :
			a->qp_type == IBV_QPT_UC ? ROCE_TRANSPORT_UC :
						   ROCE_TRANSPORT_UD;
	if (a->comp_mask & IBV_QP_INIT_ATTR_SEND_OPS_FLAGS) {
		qp->is_ex = true;
		qp->send_ops_flags = a->send_ops_flags;
		droce_qp_install_wr_ops(qp);
	}
	__atomic_store_n(&dev->qp_tbl[idx], qp, __ATOMIC_RELEASE);
	pthread_mutex_unlock(&dev->lock);

	__atomic_fetch_add(&droce_pd_obj(a->pd)->refcnt, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&qp->scq->refcnt, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&qp->rcq->refcnt, 1, __ATOMIC_RELAXED);
	if (qp->srq)
		__atomic_fetch_add(&qp->srq->refcnt, 1, __ATOMIC_RELAXED);
	droce_obj_add(ctx, &qp->obj, DROCE_OBJ_QP);
	a->cap = qp->cap;
	return qp;
}

struct ibv_qp *ibv_create_qp(struct ibv_pd *pd,
			     struct ibv_qp_init_attr *qp_init_attr)
{
	struct ibv_qp_init_attr_ex ax;
	struct droce_qp *qp;

	if (pd == NULL || qp_init_attr == NULL) {
		errno = EINVAL;
		return NULL;
	}
	memset(&ax, 0, sizeof(ax));
	memcpy(&ax, qp_init_attr, sizeof(*qp_init_attr));
	ax.comp_mask = IBV_QP_INIT_ATTR_PD;
	ax.pd = pd;
	qp = qp_create(pd->context, &ax);
	if (qp == NULL)
		return NULL;
	qp_init_attr->cap = ax.cap;
	return &qp->ex.qp_base;
}

struct ibv_qp *droce_create_qp_ex(struct ibv_context *ctx,
				  struct ibv_qp_init_attr_ex *attr)
{
	struct droce_qp *qp;

	if (attr == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->pd && attr->pd->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	qp = qp_create(ctx, attr);
	return qp ? &qp->ex.qp_base : NULL;
}

struct ibv_qp_ex *ibv_qp_to_qp_ex(struct ibv_qp *ibqp)
{
	struct droce_qp *qp;

	if (ibqp == NULL)
		return NULL;
	qp = droce_qp_of(ibqp);
	return qp->is_ex ? &qp->ex : NULL;
}

/* ---------------------------------------------------------- modify */

struct modify_job {
	struct droce_qp *qp;
	struct ibv_qp_attr attr;
	int mask;
	enum ibv_qp_state old;
	enum ibv_qp_state new;
	/* a larger response queue (max_dest_rd_atomic), its size; the
	 * one it replaces, to free once the engine let go of it */
	struct droce_read_job *rd_jobs;
	uint32_t rd_cnt;
	struct droce_read_job *rd_old;
};

/* Move the responder's queue and atomic results into j's larger arrays.
 * In SQD a queue may hold responses still owed: their free-running
 * indices keep their order under the new mask. */
static void grow_read_jobs(struct droce_qp *qp, struct modify_job *j)
{
	struct droce_read_job *nj = j->rd_jobs;
	struct droce_atm_result *na = (struct droce_atm_result *)(nj + j->rd_cnt);

	for (uint32_t i = qp->rd_head; i != qp->rd_tail; i++)
		nj[i & (j->rd_cnt - 1)] = qp->rd_jobs[i & qp->rd_mask];
	memcpy(na, qp->atm_cache, sizeof(*na) * (qp->rd_mask + 1));
	j->rd_old = qp->rd_jobs != qp->rd_jobs_inline ? qp->rd_jobs : NULL;
	qp->rd_jobs = nj;
	qp->atm_cache = na;
	qp->rd_mask = j->rd_cnt - 1;
}

static void build_template(struct droce_qp *qp)
{
	struct droce_dev *dev = qp->dev;
	struct roce_pkt *t = &qp->tmpl;

	memset(t, 0, sizeof(*t));
	memcpy(t->src_mac, dev->mac.addr_bytes, 6);
	t->has_vlan = dev->args.vlan_tci != 0;
	t->vlan_tci = dev->args.vlan_tci;
	t->tos = qp->ah.grh.traffic_class;
	/* Linux resolves a RoCEv2 destination through its routing table and
	 * uses the route's hop limit, whatever the GRH asked for (ibv_rc_pingpong
	 * asks for 1): do as rxe does on the wire. */
	t->ttl = 64;
	t->frag_off = 0x4000;	/* DF: RoCE is never fragmented */
	if (memcmp(qp->dst_gid.raw, dev->gid[1].raw, 12) == 0) {
		memcpy(t->src_ip, &dev->args.ip, 4);
		memcpy(t->dst_ip, &qp->dst_gid.raw[12], 4);
	} else {
		/* RoCEv2 over IPv6, from our link-local GID (index 0). */
		t->ipv6 = true;
		memcpy(t->src_ip, dev->gid[0].raw, 16);
		memcpy(t->dst_ip, qp->dst_gid.raw, 16);
		t->flow_label = qp->ah.grh.flow_label & 0xfffff;
	}
	/* A flow label, when given, is the flow's entropy (as rdma-core's
	 * ibv_flow_label_to_udp_sport); else the QP's own. */
	t->udp_sport = qp->ah.grh.flow_label ?
		       ibv_flow_label_to_udp_sport(qp->ah.grh.flow_label) :
		       qp->udp_sport;
	t->udp_dport = ROCE_UDP_DPORT;
	t->pkey = ROCE_DEFAULT_PKEY;
	t->dest_qp = qp->dest_qpn;
	qp->tmpl_ready = false;	/* until the engine resolves the MAC */
	qp->img_valid = false;
	qp->neigh_genp = &qp->neigh_gen;
}

/* Runs on the owning engine. */
/* On the engine: the QP's rate as asked, then the engine's own figures. */
static void set_rate(struct droce_qp *qp, uint32_t kbps, uint32_t burst,
		     uint16_t pkt)
{
	qp->rate_limit = kbps;
	qp->rate_max_burst = burst;
	qp->rate_typical_pkt = pkt;
	droce_drv->qp_rate_changed(qp);
}

static void modify_apply(void *arg)
{
	struct modify_job *j = arg;
	struct droce_qp *qp = j->qp;
	const struct ibv_qp_attr *a = &j->attr;
	int m = j->mask;

	if (m & IBV_QP_ACCESS_FLAGS)
		qp->access = (uint32_t)a->qp_access_flags;
	if (m & IBV_QP_PKEY_INDEX)
		qp->pkey_index = a->pkey_index;
	if (m & IBV_QP_PATH_MTU) {
		qp->path_mtu = a->path_mtu;
		qp->mtu = roce_mtu_bytes(a->path_mtu);
	}
	if (m & IBV_QP_DEST_QPN)
		qp->dest_qpn = a->dest_qp_num & ROCE_QPN_MASK;
	if (m & IBV_QP_QKEY)
		qp->qkey = a->qkey;
	if (m & IBV_QP_RQ_PSN)
		qp->rq_psn = a->rq_psn & ROCE_PSN_MASK;
	if (m & IBV_QP_SQ_PSN)
		qp->sq_psn = a->sq_psn & ROCE_PSN_MASK;
	if (m & IBV_QP_MAX_DEST_RD_ATOMIC)
		qp->max_dest_rd_atomic = a->max_dest_rd_atomic;
	if (j->rd_jobs)
		grow_read_jobs(qp, j);
	if (m & IBV_QP_MAX_QP_RD_ATOMIC)
		qp->max_rd_atomic = a->max_rd_atomic;
	if (m & IBV_QP_MIN_RNR_TIMER)
		qp->min_rnr_timer = a->min_rnr_timer;
	if (m & IBV_QP_TIMEOUT)
		qp->timeout = a->timeout;
	if (m & IBV_QP_RETRY_CNT)
		qp->retry_cnt = a->retry_cnt;
	if (m & IBV_QP_RNR_RETRY)
		qp->rnr_retry = a->rnr_retry;
	if (m & IBV_QP_RATE_LIMIT)	/* (no burst or packet size: defaults) */
		set_rate(qp, a->rate_limit, 0, 0);
	if (m & IBV_QP_AV) {
		qp->ah = a->ah_attr;
		qp->dst_gid = a->ah_attr.grh.dgid;
	}
	if (j->new == IBV_QPS_RTR && j->old != IBV_QPS_RTR) {
		qp->resp_epsn = qp->rq_psn;
		qp->resp_ack_psn = roce_psn_add(qp->rq_psn, ROCE_PSN_MASK);
		qp->resp_msn = 0;
	}
	if (j->new == IBV_QPS_RTR || (m & IBV_QP_AV) || (m & IBV_QP_DEST_QPN))
		build_template(qp);
	if (qp->transport == ROCE_TRANSPORT_UD) {
		/* Datagrams go where each WQE says; one path MTU, the port's. */
		qp->mtu = qp->dev->args.max_mtu;
		qp->tmpl_ready = true;
	}
	if (j->new == IBV_QPS_RTS && j->old == IBV_QPS_RTR) {
		qp->req_psn = qp->sq_psn;
		qp->req_psn_max = qp->sq_psn;
		qp->req_una_psn = qp->sq_psn;
	}
	__atomic_store_n(&qp->state, j->new, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->ex.qp_base.state, j->new, __ATOMIC_RELEASE);
	if (j->new != j->old)
		droce_drv->qp_state_changed(qp, j->old);
}

static bool av_ok(struct droce_dev *dev, const struct ibv_ah_attr *ah)
{
	static const uint8_t v4_prefix[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	(void)dev;
	static const uint8_t ll_prefix[8] = { 0xfe, 0x80 };

	/* RoCE needs a GRH. RoCEv2 over IPv4 from GID 1 to an IPv4-mapped
	 * GID, or over IPv6 from the link-local GID 0 to a link-local one. */
	if (!ah->is_global || ah->port_num != 1 || ah->grh.sgid_index > 1)
		return false;
	if (ah->grh.sgid_index == 1)
		return memcmp(ah->grh.dgid.raw, v4_prefix, 12) == 0;
	return memcmp(ah->grh.dgid.raw, ll_prefix, 8) == 0;
}

/* 0 (no limit) or within the packet_pacing_caps droce reports. */
static bool rate_ok(uint32_t kbps)
{
	return kbps == 0 ||
	       (kbps >= DROCE_RATE_MIN_KBPS && kbps <= DROCE_RATE_MAX_KBPS);
}

struct rate_job {
	struct droce_qp *qp;
	struct ibv_qp_rate_limit_attr attr;
};

static void rate_apply(void *arg)
{
	struct rate_job *j = arg;

	set_rate(j->qp, j->attr.rate_limit, j->attr.max_burst_sz,
		 j->attr.typical_pkt_sz);
}

/*
 * ibv_modify_qp_rate_limit(): the engine paces what the QP's send queue
 * transmits (requests, retransmissions included) and the READ responses
 * it owes its peer (not its ACKs) to rate_limit kbps of frame bytes,
 * in bursts of up to max_burst_sz bytes. Any state: a QP not yet in RTS
 * keeps the setting for when it sends.
 */
int droce_modify_qp_rate_limit(struct ibv_qp *ibqp,
			       struct ibv_qp_rate_limit_attr *attr)
{
	struct droce_qp *qp;
	struct rate_job j;

	if (ibqp == NULL || attr == NULL || attr->comp_mask != 0 ||
	    !rate_ok(attr->rate_limit) ||
	    attr->max_burst_sz > DROCE_RATE_MAX_BURST)
		return EINVAL;
	if (ibqp->qp_type != IBV_QPT_RC && ibqp->qp_type != IBV_QPT_UC &&
	    ibqp->qp_type != IBV_QPT_UD)
		return EINVAL;
	qp = droce_qp_of(ibqp);
	j.qp = qp;
	j.attr = *attr;
	pthread_mutex_lock(&ibqp->mutex);
	droce_drv->exec(qp->dev, rate_apply, &j);
	pthread_mutex_unlock(&ibqp->mutex);
	return 0;
}

int ibv_modify_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask)
{
	struct droce_qp *qp;
	struct droce_dev *dev;
	const struct qp_transition *t;
	struct modify_job j;
	uint32_t extra;
	int type;

	if (ibqp == NULL || attr == NULL)
		return EINVAL;
	qp = droce_qp_of(ibqp);
	dev = qp->dev;
	type = ibqp->qp_type;
	if (type > IBV_QPT_UD || mask & ~(IBV_QP_RATE_LIMIT * 2 - 1))
		return EINVAL;
	pthread_mutex_lock(&ibqp->mutex);
	j.qp = qp;
	j.attr = *attr;
	j.mask = mask;
	j.old = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	if ((mask & IBV_QP_CUR_STATE) && attr->cur_qp_state != j.old &&
	    !(attr->cur_qp_state == IBV_QPS_RTS && j.old == IBV_QPS_SQE))
		goto einval;
	j.new = (mask & IBV_QP_STATE) ? attr->qp_state : j.old;
	if ((unsigned int)j.new > IBV_QPS_ERR || j.new == IBV_QPS_UNKNOWN)
		goto einval;
	t = &qp_table[j.old][j.new];
	if (!t->valid)
		goto einval;
	extra = (uint32_t)mask & ~(uint32_t)IBV_QP_STATE;
	if ((extra & t->req[type]) != t->req[type] ||
	    (extra & ~(t->req[type] | t->opt[type])))
		goto einval;
	/* Values. */
	if ((mask & IBV_QP_PORT) && attr->port_num != 1)
		goto einval;
	if ((mask & IBV_QP_PKEY_INDEX) && attr->pkey_index != 0)
		goto einval;
	if ((mask & IBV_QP_ACCESS_FLAGS) && (attr->qp_access_flags &
	    ~(IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
	      IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC)))
		goto einval;
	if ((mask & IBV_QP_PATH_MTU) &&
	    (attr->path_mtu < IBV_MTU_256 || attr->path_mtu > IBV_MTU_4096 ||
	     roce_mtu_bytes(attr->path_mtu) > dev->args.max_mtu))
		goto einval;
	if ((mask & IBV_QP_MAX_DEST_RD_ATOMIC) &&
	    attr->max_dest_rd_atomic > DROCE_MAX_RD_ATOMIC)
		goto einval;
	if ((mask & IBV_QP_MAX_QP_RD_ATOMIC) &&
	    attr->max_rd_atomic > DROCE_MAX_RD_ATOMIC)
		goto einval;
	if ((mask & IBV_QP_AV) && !av_ok(dev, &attr->ah_attr))
		goto einval;
	if ((mask & IBV_QP_DEST_QPN) && attr->dest_qp_num > ROCE_QPN_MASK)
		goto einval;
	if ((mask & IBV_QP_RETRY_CNT) && attr->retry_cnt > 7)
		goto einval;
	if ((mask & IBV_QP_RNR_RETRY) && attr->rnr_retry > 7)
		goto einval;
	if ((mask & IBV_QP_TIMEOUT) && attr->timeout > 31)
		goto einval;
	if ((mask & IBV_QP_MIN_RNR_TIMER) && attr->min_rnr_timer > 31)
		goto einval;
	if ((mask & IBV_QP_RATE_LIMIT) && !rate_ok(attr->rate_limit))
		goto einval;
	/* Only grows: a queue in use stays where it is. */
	j.rd_jobs = j.rd_old = NULL;
	j.rd_cnt = (mask & IBV_QP_MAX_DEST_RD_ATOMIC) ?
		   droce_read_jobs_for(attr->max_dest_rd_atomic) : 0;
	if (j.rd_cnt > qp->rd_mask + 1) {
		j.rd_jobs = rte_zmalloc_socket("droce_rd_jobs", j.rd_cnt *
			(sizeof(struct droce_read_job) +
			 sizeof(struct droce_atm_result)),
			RTE_CACHE_LINE_SIZE, rte_eth_dev_socket_id(dev->port_id));
		if (j.rd_jobs == NULL) {
			pthread_mutex_unlock(&ibqp->mutex);
			return ENOMEM;
		}
	}
	droce_drv->exec(dev, modify_apply, &j);
	rte_free(j.rd_old);
	pthread_mutex_unlock(&ibqp->mutex);
	return 0;
einval:
	pthread_mutex_unlock(&ibqp->mutex);
	return EINVAL;
}

int ibv_query_qp(struct ibv_qp *ibqp, struct ibv_qp_attr *attr, int mask,
		 struct ibv_qp_init_attr *init_attr)
{
	struct droce_qp *qp;

	(void)mask;	/* everything is cheap to report */
	if (ibqp == NULL || attr == NULL || init_attr == NULL)
		return EINVAL;
	qp = droce_qp_of(ibqp);
	memset(attr, 0, sizeof(*attr));
	memset(init_attr, 0, sizeof(*init_attr));
	pthread_mutex_lock(&ibqp->mutex);
	attr->qp_state = __atomic_load_n(&qp->state, __ATOMIC_ACQUIRE);
	attr->cur_qp_state = attr->qp_state;
	attr->path_mtu = qp->path_mtu;
	attr->path_mig_state = IBV_MIG_MIGRATED;
	attr->qp_access_flags = (int)qp->access;
	attr->rq_psn = qp->rq_psn;
	attr->sq_psn = qp->sq_psn;
	attr->dest_qp_num = qp->dest_qpn;
	attr->qkey = qp->qkey;
	attr->cap = qp->cap;
	attr->ah_attr = qp->ah;
	attr->pkey_index = qp->pkey_index;
	attr->port_num = 1;
	attr->max_rd_atomic = qp->max_rd_atomic;
	attr->max_dest_rd_atomic = qp->max_dest_rd_atomic;
	attr->min_rnr_timer = qp->min_rnr_timer;
	attr->timeout = qp->timeout;
	attr->retry_cnt = qp->retry_cnt;
	attr->rnr_retry = qp->rnr_retry;
	attr->sq_draining = 0;
	attr->rate_limit = qp->rate_limit;
	init_attr->qp_context = ibqp->qp_context;
	init_attr->send_cq = ibqp->send_cq;
	init_attr->recv_cq = ibqp->recv_cq;
	init_attr->srq = ibqp->srq;
	init_attr->cap = qp->cap;
	init_attr->qp_type = ibqp->qp_type;
	init_attr->sq_sig_all = qp->sq_sig_all;
	pthread_mutex_unlock(&ibqp->mutex);
	return 0;
}

/* ---------------------------------------------------------- destroy */

struct destroy_job {
	struct droce_qp *qp;
};

static void destroy_apply(void *arg)
{
	struct droce_qp *qp = arg;
	enum ibv_qp_state old = qp->state;

	/* Detach from every engine list; nothing is completed any more. */
	qp->state = IBV_QPS_RESET;
	droce_drv->qp_state_changed(qp, old == IBV_QPS_RESET ? IBV_QPS_ERR : old);
}

/*
 * App-driven engines only run while the application calls into verbs. A
 * connected QP being destroyed may still owe its peer an ACK that has not
 * left (or not been read) yet, and a peer that lost one retransmits: keep
 * driving the engine until the link has been quiet for a moment, as a
 * NIC would go on answering after the process stopped polling (devarg
 * linger_ms: the quiet wanted; 0 for a program that knows its peer needs
 * nothing more, such as a fuzzer with both ends in one thread).
 *
 * A poll that found nothing is followed by a short nap, not by the next
 * poll: the peer often exits while we linger, and DPDK 22.11's memif then
 * unmaps the shared rings from its interrupt thread (memif_disconnect)
 * with no synchronisation with a burst in progress, so a thread inside
 * rte_eth_rx/tx_burst at that moment faults. A busy loop is inside a
 * burst most of the time, a napping one seldom (see
 * test/examples/README.md). A link gone down has no one left to answer.
 */
#define LINGER_NAP_NS 20000

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void linger(struct droce_dev *dev)
{
	double want = dev->args.linger_ms / 1e3, now, t0, quiet;

	t0 = quiet = mono_s();
	for (;;) {
		struct timespec nap = { 0, LINGER_NAP_NS };
		struct rte_eth_link link;
		bool busy = droce_drv->poll(dev) > 0;

		if (!busy) {
			memset(&link, 0, sizeof(link));
			if (rte_eth_link_get_nowait(dev->port_id, &link) == 0 &&
			    !link.link_status)
				break;
			nanosleep(&nap, NULL);
		}
		now = mono_s();
		if (busy)
			quiet = now;
		if (now - quiet > want || now - t0 > 10 * want)
			break;
	}
}

int ibv_destroy_qp(struct ibv_qp *ibqp)
{
	struct droce_qp *qp;
	struct droce_dev *dev;
	uint32_t idx;

	if (ibqp == NULL)
		return EINVAL;
	qp = droce_qp_of(ibqp);
	dev = qp->dev;
	idx = ibqp->qp_num - DROCE_QPN_BASE;
	/* Only a QP that talked lately can owe its peer anything. */
	if (dev->args.lcore < 0 && dev->args.linger_ms &&
	    (qp->state == IBV_QPS_RTS || qp->state == IBV_QPS_RTR ||
	     qp->state == IBV_QPS_SQD) &&
	    rte_rdtsc() - qp->last_rx_tsc < rte_get_tsc_hz() / 5)
		linger(dev);
	pthread_mutex_lock(&dev->lock);
	if (idx >= DROCE_MAX_QP || dev->qp_tbl[idx] != qp) {
		pthread_mutex_unlock(&dev->lock);
		return EINVAL;
	}
	__atomic_store_n(&dev->qp_tbl[idx], NULL, __ATOMIC_RELEASE);
	dev->nb_qp--;
	pthread_mutex_unlock(&dev->lock);
	/* The engine drops its references before we free anything. */
	droce_drv->exec(dev, destroy_apply, qp);
	droce_drv->exec(dev, sync_noop, NULL);
	droce_async_forget(ibqp->context, ibqp);
	droce_async_wait_acked(ibqp->context, &qp->async_delivered,
			       &ibqp->events_completed, &ibqp->mutex,
			       &ibqp->cond);
	__atomic_fetch_sub(&droce_pd_obj(ibqp->pd)->refcnt, 1,
			   __ATOMIC_RELAXED);
	__atomic_fetch_sub(&qp->scq->refcnt, 1, __ATOMIC_RELAXED);
	__atomic_fetch_sub(&qp->rcq->refcnt, 1, __ATOMIC_RELAXED);
	if (qp->srq)
		__atomic_fetch_sub(&qp->srq->refcnt, 1, __ATOMIC_RELAXED);
	droce_obj_del(ibqp->context, &qp->obj);
	pthread_mutex_destroy(&ibqp->mutex);
	pthread_cond_destroy(&ibqp->cond);
	qp_free_mem(qp);
	return 0;
}
