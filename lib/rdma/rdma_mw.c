/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory windows (IBTA 10.6.7): an rkey for a sub-range of a region, with
 * its own rights, bound and invalidated by work requests in the send queue
 * (type 2: IBV_WR_BIND_MW / ibv_wr_bind_mw, bound to one QP; type 1:
 * ibv_bind_mw(), which droce also carries out as a work request so it is
 * ordered with the QP's other work). Keys share the MR key table.
 */
#include <errno.h>
#include <stdlib.h>

#include "droce_int.h"

struct ibv_mw *droce_alloc_mw(struct ibv_pd *ibpd, enum ibv_mw_type type)
{
	struct droce_dev *dev;
	struct droce_mr *mw;
	uint32_t idx;

	if (ibpd == NULL || (type != IBV_MW_TYPE_1 && type != IBV_MW_TYPE_2)) {
		errno = EINVAL;
		return NULL;
	}
	dev = droce_dev_of_ctx(ibpd->context);
	mw = calloc(1, sizeof(*mw));
	if (mw == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mw->kind = DROCE_KEY_MW;
	mw->mw_type = type == IBV_MW_TYPE_1 ? 1 : 2;
	mw->pd = droce_pd_of(ibpd);
	pthread_mutex_lock(&dev->lock);
	idx = droce_key_alloc(dev);
	if (idx == 0) {
		pthread_mutex_unlock(&dev->lock);
		free(mw);
		errno = ENOMEM;
		return NULL;
	}
	mw->key = idx << 8 | dev->mr_key_gen;
	mw->epoch = droce_key_epoch_next(dev);
	mw->ibv_mw.context = ibpd->context;
	mw->ibv_mw.pd = ibpd;
	mw->ibv_mw.rkey = mw->key;
	mw->ibv_mw.handle = mw->key;
	mw->ibv_mw.type = type;
	__atomic_store_n(&dev->mr_tbl[idx], mw, __ATOMIC_RELEASE);
	dev->nb_mr++;
	pthread_mutex_unlock(&dev->lock);
	__atomic_fetch_add(&droce_pd_obj(ibpd)->refcnt, 1, __ATOMIC_RELAXED);
	droce_obj_add(ibpd->context, &mw->obj, DROCE_OBJ_MW);
	return &mw->ibv_mw;
}

static void sync_noop(void *arg)
{
	(void)arg;
}

static void unbind_apply(void *arg)
{
	struct droce_mr *mw = arg;

	if (mw->valid && mw->parent)
		mw->parent->nb_bound--;
	mw->valid = false;
	mw->parent = NULL;
}

int droce_dealloc_mw(struct ibv_mw *ibmw)
{
	struct droce_mr *mw;
	struct droce_dev *dev;

	if (ibmw == NULL)
		return EINVAL;
	mw = container_of(ibmw, struct droce_mr, ibv_mw);
	dev = droce_dev_of_ctx(ibmw->context);
	droce_drv->exec(dev, unbind_apply, mw);
	pthread_mutex_lock(&dev->lock);
	__atomic_store_n(&dev->mr_tbl[mw->key >> 8], NULL, __ATOMIC_RELEASE);
	dev->nb_mr--;
	pthread_mutex_unlock(&dev->lock);
	droce_drv->exec(dev, sync_noop, NULL);
	__atomic_fetch_sub(&droce_pd_obj(ibmw->pd)->refcnt, 1,
			   __ATOMIC_RELAXED);
	droce_obj_del(ibmw->context, &mw->obj);
	free(mw);
	return 0;
}

/* Type 1 (ibv_bind_mw(3)): the new rkey is the next key of the window;
 * the bind itself is a work request on qp, completed as IBV_WC_BIND_MW. */
int droce_bind_mw(struct ibv_qp *qp, struct ibv_mw *mw,
		  struct ibv_mw_bind *mw_bind)
{
	struct ibv_send_wr wr = { 0 }, *bad;
	int ret;

	if (qp == NULL || mw == NULL || mw_bind == NULL)
		return EINVAL;
	wr.wr_id = mw_bind->wr_id;
	wr.opcode = IBV_WR_BIND_MW;
	wr.send_flags = mw_bind->send_flags;
	wr.bind_mw.mw = mw;
	wr.bind_mw.rkey = ibv_inc_rkey(mw->rkey);
	wr.bind_mw.bind_info = mw_bind->bind_info;
	ret = droce_post_send(qp, &wr, &bad);
	if (ret == 0)
		mw->rkey = wr.bind_mw.rkey;
	return ret;
}
