/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Memory regions. The engine runs in the application's address space, so a
 * registration only records what the engine may touch on behalf of a key:
 * [iova, iova + length) mapped to the application's address, and the rights.
 * Keys are index << 8 | generation, the generation never 0, so a stale or
 * forged key misses (and DROCE_INVALID_LKEY never matches).
 */
#include <errno.h>
#include <stdlib.h>
#include <time.h>

#include "droce_int.h"

#undef ibv_reg_mr
#undef ibv_reg_mr_iova

#define DROCE_ACCESS_SUPPORTED (IBV_ACCESS_LOCAL_WRITE | \
	IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_READ | \
	IBV_ACCESS_REMOTE_ATOMIC | IBV_ACCESS_HUGETLB | IBV_ACCESS_MW_BIND | \
	IBV_ACCESS_RELAXED_ORDERING)

static void sync_noop(void *arg)
{
	(void)arg;
}

/* A free key-table index (never 0) with a fresh generation, under the
 * device lock; 0 when the table is full. */
uint32_t droce_key_alloc(struct droce_dev *dev)
{
	for (uint32_t n = 0; n < DROCE_MAX_MR; n++) {
		uint32_t i = (dev->mr_next + n) % DROCE_MAX_MR;

		if (i != 0 && dev->mr_tbl[i] == NULL) {
			dev->mr_next = i + 1;
			if (++dev->mr_key_gen == 0)
				dev->mr_key_gen = 1;
			return i;
		}
	}
	return 0;
}

static struct ibv_mr *reg_mr(struct ibv_pd *ibpd, void *addr, size_t length,
			     uint64_t iova, unsigned int access)
{
	struct droce_pd *pd;
	struct droce_dev *dev;
	struct droce_mr *mr;
	uint32_t idx;

	if (ibpd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	pd = droce_pd_of(ibpd);
	dev = droce_dev_of_ctx(ibpd->context);
	/* Optional-range flags may be ignored (verbs.h); others may not. */
	access &= ~(unsigned int)IBV_ACCESS_OPTIONAL_RANGE |
		  IBV_ACCESS_RELAXED_ORDERING;
	if (access & IBV_ACCESS_ON_DEMAND) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (access & ~(unsigned int)DROCE_ACCESS_SUPPORTED) {
		errno = EINVAL;
		return NULL;
	}
	/* IBTA 10.6.3.1 / ib_check_mr_access: remote write and atomic
	 * rights need local write. */
	if ((access & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
	    !(access & IBV_ACCESS_LOCAL_WRITE)) {
		errno = EINVAL;
		return NULL;
	}
	if ((addr == NULL && length) ||
	    (uint64_t)(uintptr_t)addr + length < (uint64_t)(uintptr_t)addr ||
	    iova + length < iova || length > (uint64_t)INT64_MAX) {
		errno = EINVAL;
		return NULL;
	}
	mr = calloc(1, sizeof(*mr));
	if (mr == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	mr->pd = pd;
	mr->host = addr;
	mr->iova = iova;
	mr->len = length;
	mr->access = access;
	pthread_mutex_lock(&dev->lock);
	idx = droce_key_alloc(dev);
	if (idx == 0) {
		pthread_mutex_unlock(&dev->lock);
		free(mr);
		errno = ENOMEM;
		return NULL;
	}
	mr->key = idx << 8 | dev->mr_key_gen;
	mr->epoch = droce_key_epoch_next(dev);
	mr->valid = true;
	mr->ibv.context = ibpd->context;
	mr->ibv.pd = ibpd;
	mr->ibv.addr = addr;
	mr->ibv.length = length;
	mr->ibv.handle = mr->key;
	mr->ibv.lkey = mr->key;
	mr->ibv.rkey = mr->key;
	/* Publish fully initialised: the engine reads the table unlocked. */
	__atomic_store_n(&dev->mr_tbl[idx], mr, __ATOMIC_RELEASE);
	dev->nb_mr++;
	pthread_mutex_unlock(&dev->lock);
	__atomic_fetch_add(&droce_pd_obj(ibpd)->refcnt, 1, __ATOMIC_RELAXED);
	droce_obj_add(ibpd->context, &mr->obj, DROCE_OBJ_MR);
	return &mr->ibv;
}

struct ibv_mr *ibv_reg_mr(struct ibv_pd *pd, void *addr, size_t length,
			  int access)
{
	return reg_mr(pd, addr, length, (uintptr_t)addr, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova(struct ibv_pd *pd, void *addr, size_t length,
			       uint64_t iova, int access)
{
	return reg_mr(pd, addr, length, iova, (unsigned int)access);
}

struct ibv_mr *ibv_reg_mr_iova2(struct ibv_pd *pd, void *addr, size_t length,
				uint64_t iova, unsigned int access)
{
	return reg_mr(pd, addr, length, iova, access);
}

/*
 * Wait (sleeping, bounded) until no zero-copy frame points into mr: they
 * sit in the device's transmit queue, a port's ring, a receiver's hands
 * or the link impairer's delay line, and each is freed within
 * microseconds to milliseconds while engines run. An app-driven engine is
 * driven from here (its keeper would, more slowly). False on timeout.
 */
static bool zc_drain(struct droce_dev *dev, struct droce_mr *mr)
{
	long ns = 1000;
	uint64_t waited = 0;

	while (__atomic_load_n(&mr->zc_inflight, __ATOMIC_ACQUIRE) != 0) {
		struct timespec ts = { 0, ns };

		if (waited >= DROCE_ZC_DRAIN_NS)
			return false;
		if (droce_drv->poll)
			droce_drv->poll(dev);
		nanosleep(&ts, NULL);
		waited += (uint64_t)ns;
		if (ns < 1000000)
			ns *= 2;
	}
	return true;
}

int ibv_dereg_mr(struct ibv_mr *ibmr)
{
	struct droce_mr *mr;
	struct droce_dev *dev;

	if (ibmr == NULL)
		return EINVAL;
	mr = container_of(ibmr, struct droce_mr, ibv);
	dev = droce_dev_of_ctx(ibmr->context);
	pthread_mutex_lock(&dev->lock);
	if (mr->dying) {	/* an earlier call timed out in zc_drain */
		pthread_mutex_unlock(&dev->lock);
		goto drain;
	}
	if (droce_mr_lookup(dev, mr->key) != mr || mr->kind != DROCE_KEY_MR) {
		pthread_mutex_unlock(&dev->lock);
		return EINVAL;
	}
	/* Windows bound to it must be invalidated or freed first. */
	if (__atomic_load_n(&mr->nb_bound, __ATOMIC_ACQUIRE)) {
		pthread_mutex_unlock(&dev->lock);
		return EBUSY;
	}
	mr->valid = false;
	__atomic_store_n(&dev->mr_tbl[mr->key >> 8], NULL, __ATOMIC_RELEASE);
	dev->nb_mr--;
	pthread_mutex_unlock(&dev->lock);
	/* After this the engine holds no pointer into the region: what it
	 * kept across packets (a WRITE under way, READ responses owed) is
	 * checked with droce_key_live() before each use, and the key is
	 * gone from the table. */
	droce_drv->exec(dev, sync_noop, NULL);
	/* Nor does a frame once this returns: zero-copy payloads still
	 * queued read the region until freed. If they do not drain, the
	 * region stays pinned (unusable, not freed) and the caller may call
	 * again. */
	mr->dying = true;
drain:
	if (!zc_drain(dev, mr))
		return EBUSY;
	__atomic_fetch_sub(&droce_pd_obj(ibmr->pd)->refcnt, 1,
			   __ATOMIC_RELAXED);
	droce_obj_del(ibmr->context, &mr->obj);
	free(mr);
	return 0;
}

struct rereg_job {
	struct droce_dev *dev;
	struct droce_mr *mr;
	struct droce_pd *pd;
	uint8_t *host;
	uint64_t iova, len;
	uint32_t access;
};

static void rereg_apply(void *arg)
{
	struct rereg_job *j = arg;

	j->mr->pd = j->pd;
	j->mr->host = j->host;
	j->mr->iova = j->iova;
	j->mr->len = j->len;
	j->mr->access = j->access;
	/* A WRITE under way or READ responses owed through the old
	 * translation fail (droce_key_live). */
	j->mr->epoch = droce_key_epoch_next(j->dev);
}

/* ibv_rereg_mr(3): the keys stay; what changes does so atomically with
 * respect to the engine. */
int ibv_rereg_mr(struct ibv_mr *ibmr, int flags, struct ibv_pd *ibpd,
		 void *addr, size_t length, int access)
{
	struct droce_mr *mr;
	struct rereg_job j;
	unsigned int acc;

	if (ibmr == NULL || flags == 0 ||
	    (flags & ~IBV_REREG_MR_FLAGS_SUPPORTED))
		return IBV_REREG_MR_ERR_INPUT;
	mr = container_of(ibmr, struct droce_mr, ibv);
	j.dev = droce_dev_of_ctx(ibmr->context);
	j.mr = mr;
	j.pd = mr->pd;
	j.host = mr->host;
	j.iova = mr->iova;
	j.len = mr->len;
	j.access = mr->access;
	if (flags & IBV_REREG_MR_CHANGE_PD) {
		if (ibpd == NULL || ibpd->context != ibmr->context)
			return IBV_REREG_MR_ERR_INPUT;
		j.pd = droce_pd_of(ibpd);
	}
	if (flags & IBV_REREG_MR_CHANGE_TRANSLATION) {
		if ((addr == NULL && length) ||
		    (uint64_t)(uintptr_t)addr + length < (uint64_t)(uintptr_t)addr)
			return IBV_REREG_MR_ERR_INPUT;
		j.host = addr;
		j.iova = (uintptr_t)addr;
		j.len = length;
	}
	if (flags & IBV_REREG_MR_CHANGE_ACCESS) {
		acc = (unsigned int)access & ~(unsigned int)IBV_ACCESS_RELAXED_ORDERING;
		if ((acc & ~(unsigned int)DROCE_ACCESS_SUPPORTED) ||
		    ((acc & (IBV_ACCESS_REMOTE_WRITE | IBV_ACCESS_REMOTE_ATOMIC)) &&
		     !(acc & IBV_ACCESS_LOCAL_WRITE)))
			return IBV_REREG_MR_ERR_INPUT;
		j.access = acc;
	}
	droce_drv->exec(droce_dev_of_ctx(ibmr->context), rereg_apply, &j);
	/* Zero-copy frames may still read the old translation, which the
	 * caller may free on return: wait for them too. */
	if ((flags & IBV_REREG_MR_CHANGE_TRANSLATION) &&
	    !zc_drain(j.dev, mr))
		DROCE_LOG(WARNING, "rereg_mr: zero-copy frames of the old range still queued after %llu ms",
			  (unsigned long long)(DROCE_ZC_DRAIN_NS / 1000000));
	if ((flags & IBV_REREG_MR_CHANGE_PD) && ibpd != ibmr->pd) {
		__atomic_fetch_add(&droce_pd_obj(ibpd)->refcnt, 1,
				   __ATOMIC_RELAXED);
		__atomic_fetch_sub(&droce_pd_obj(ibmr->pd)->refcnt, 1,
				   __ATOMIC_RELAXED);
		ibmr->pd = ibpd;
	}
	ibmr->addr = j.host;
	ibmr->length = j.len;
	return 0;
}
