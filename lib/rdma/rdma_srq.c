/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Receive queues and shared receive queues. An SRQ is the same ring as a
 * QP's own receive queue; QPs attached to it claim WQEs from it as their
 * messages start. srq_limit: when the engine's claim leaves fewer WQEs
 * than the limit, IBV_EVENT_SRQ_LIMIT_REACHED fires once and disarms
 * (ibv_modify_srq(3)).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_ethdev.h>
#include <rte_malloc.h>

#include "droce_int.h"

int droce_wq_init(struct droce_wq *wq, uint32_t max_wr, uint32_t max_sge,
		  int socket)
{
	memset(wq, 0, sizeof(*wq));
	wq->max_sge = RTE_MAX(max_sge, 1u);
	wq->stride = DROCE_SEG * rte_align32pow2(wq->max_sge);
	wq->max_sge = wq->stride / DROCE_SEG;
	wq->cnt = rte_align32pow2(RTE_MAX(max_wr, 1u));
	rte_spinlock_init(&wq->lock);
	wq->buf = rte_zmalloc_socket("droce_rq", (size_t)wq->stride * wq->cnt,
				     DROCE_BB, socket);
	wq->wrid = rte_zmalloc_socket("droce_rq_wrid", sizeof(uint64_t) * wq->cnt,
				      RTE_CACHE_LINE_SIZE, socket);
	if (wq->buf == NULL || wq->wrid == NULL) {
		droce_wq_free(wq);
		return -ENOMEM;
	}
	return 0;
}

void droce_wq_free(struct droce_wq *wq)
{
	rte_free(wq->buf);
	rte_free(wq->wrid);
	wq->buf = NULL;
	wq->wrid = NULL;
}

static struct droce_srq *srq_create(struct ibv_pd *ibpd,
				    struct ibv_srq_attr *attr, void *srq_context)
{
	struct droce_dev *dev;
	struct droce_srq *srq;
	static uint32_t srqn;

	if (ibpd == NULL || attr == NULL) {
		errno = EINVAL;
		return NULL;
	}
	dev = droce_dev_of_ctx(ibpd->context);
	/* ibv_create_srq(3): limit must not exceed max_wr; sizes bounded. */
	if (attr->max_wr == 0 || attr->max_wr > DROCE_MAX_QP_WR ||
	    attr->max_sge > DROCE_MAX_SGE || attr->srq_limit > attr->max_wr) {
		errno = EINVAL;
		return NULL;
	}
	srq = calloc(1, sizeof(*srq));
	if (srq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	if (droce_wq_init(&srq->wq, attr->max_wr, attr->max_sge,
			  rte_eth_dev_socket_id(dev->port_id))) {
		free(srq);
		errno = ENOMEM;
		return NULL;
	}
	srq->wq.srq = srq;
	srq->wq.limit = attr->srq_limit;
	srq->dev = dev;
	srq->pd = droce_pd_of(ibpd);
	srq->wq.nolock = droce_pd_single_thread(ibpd);
	srq->srqn = __atomic_add_fetch(&srqn, 1, __ATOMIC_RELAXED);
	srq->ibv.context = ibpd->context;
	srq->ibv.srq_context = srq_context;
	srq->ibv.pd = ibpd;
	srq->ibv.handle = srq->srqn;
	pthread_mutex_init(&srq->ibv.mutex, NULL);
	pthread_cond_init(&srq->ibv.cond, NULL);
	attr->max_wr = srq->wq.cnt;
	attr->max_sge = srq->wq.max_sge;
	__atomic_fetch_add(&droce_pd_obj(ibpd)->refcnt, 1, __ATOMIC_RELAXED);
	droce_obj_add(ibpd->context, &srq->obj, DROCE_OBJ_SRQ);
	return srq;
}

struct ibv_srq *ibv_create_srq(struct ibv_pd *pd,
			       struct ibv_srq_init_attr *init)
{
	struct droce_srq *srq;

	if (init == NULL) {
		errno = EINVAL;
		return NULL;
	}
	srq = srq_create(pd, &init->attr, init->srq_context);
	return srq ? &srq->ibv : NULL;
}

struct ibv_srq *droce_create_srq_ex(struct ibv_context *ctx,
				    struct ibv_srq_init_attr_ex *init)
{
	struct droce_srq *srq;

	(void)ctx;
	if (init == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (!(init->comp_mask & IBV_SRQ_INIT_ATTR_PD) ||
	    ((init->comp_mask & IBV_SRQ_INIT_ATTR_TYPE) &&
	     init->srq_type != IBV_SRQT_BASIC) ||
	    (init->comp_mask & ~(uint32_t)(IBV_SRQ_INIT_ATTR_PD |
					   IBV_SRQ_INIT_ATTR_TYPE |
					   IBV_SRQ_INIT_ATTR_CQ))) {
		errno = EOPNOTSUPP;	/* XRC and tag matching SRQs: later */
		return NULL;
	}
	srq = srq_create(init->pd, &init->attr, init->srq_context);
	if (srq)
		srq->ibv.events_completed = 0;
	return srq ? &srq->ibv : NULL;
}

int droce_get_srq_num(struct ibv_srq *ibsrq, uint32_t *srq_num)
{
	if (ibsrq == NULL || srq_num == NULL)
		return EINVAL;
	*srq_num = container_of(ibsrq, struct droce_srq, ibv)->srqn;
	return 0;
}

int ibv_modify_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr,
		   int mask)
{
	struct droce_srq *srq;

	if (ibsrq == NULL || attr == NULL ||
	    (mask & ~(IBV_SRQ_MAX_WR | IBV_SRQ_LIMIT)))
		return EINVAL;
	srq = container_of(ibsrq, struct droce_srq, ibv);
	/* Resizing an SRQ is optional (IBV_DEVICE_SRQ_RESIZE not set). */
	if (mask & IBV_SRQ_MAX_WR)
		return EINVAL;
	if (mask & IBV_SRQ_LIMIT) {
		if (attr->srq_limit > srq->wq.cnt)
			return EINVAL;
		__atomic_store_n(&srq->wq.limit, attr->srq_limit,
				 __ATOMIC_RELEASE);
	}
	return 0;
}

int ibv_query_srq(struct ibv_srq *ibsrq, struct ibv_srq_attr *attr)
{
	struct droce_srq *srq;

	if (ibsrq == NULL || attr == NULL)
		return EINVAL;
	srq = container_of(ibsrq, struct droce_srq, ibv);
	attr->max_wr = srq->wq.cnt;
	attr->max_sge = srq->wq.max_sge;
	attr->srq_limit = __atomic_load_n(&srq->wq.limit, __ATOMIC_ACQUIRE);
	return 0;
}

int ibv_destroy_srq(struct ibv_srq *ibsrq)
{
	struct droce_srq *srq;

	if (ibsrq == NULL)
		return EINVAL;
	srq = container_of(ibsrq, struct droce_srq, ibv);
	if (__atomic_load_n(&srq->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	droce_async_forget(ibsrq->context, ibsrq);
	droce_async_wait_acked(ibsrq->context, &srq->async_delivered,
			       &ibsrq->events_completed, &ibsrq->mutex,
			       &ibsrq->cond);
	__atomic_fetch_sub(&droce_pd_obj(ibsrq->pd)->refcnt, 1,
			   __ATOMIC_RELAXED);
	droce_wq_free(&srq->wq);
	droce_obj_del(ibsrq->context, &srq->obj);
	pthread_mutex_destroy(&ibsrq->mutex);
	pthread_cond_destroy(&ibsrq->cond);
	free(srq);
	return 0;
}
