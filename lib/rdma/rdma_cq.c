/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion queues: a ring of 64-byte CQEs in hugepage memory. The engine
 * writes an entry and then its owner byte; the application polls the owner
 * byte of the next entry, with no lock against the engine and no syscall.
 * Owner phase: an entry of lap k is valid when owner == ((k & 1) ^ 1), so
 * the zeroed ring starts out empty.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_malloc.h>
#include <rte_ethdev.h>

#include "droce_int.h"
#include "droce_stamp.h"

#define DROCE_CQ_WC_FLAGS (IBV_WC_EX_WITH_BYTE_LEN | IBV_WC_EX_WITH_IMM | \
	IBV_WC_EX_WITH_QP_NUM | IBV_WC_EX_WITH_SRC_QP | \
	IBV_WC_EX_WITH_SLID | IBV_WC_EX_WITH_SL | \
	IBV_WC_EX_WITH_DLID_PATH_BITS | IBV_WC_EX_WITH_COMPLETION_TIMESTAMP | \
	IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)

void droce_cq_overrun(struct droce_cq *cq)
{
	if (!cq->overrun)
		droce_async_event(cq->cq.context, IBV_EVENT_CQ_ERR, &cq->cq);
	cq->overrun = true;
}

/* The next valid CQE at the application's consumer index, or NULL. */
static inline struct droce_cqe *cq_peek(struct droce_cq *cq)
{
	struct droce_cqe *e = &cq->ring[cq->ci & (cq->size - 1)];
	uint8_t want = (uint8_t)(((cq->ci >> cq->log_size) & 1) ^ 1);

	if (__atomic_load_n(&e->owner, __ATOMIC_ACQUIRE) != want)
		return NULL;
	return e;
}

/*
 * lcore=app: a poll turns the engine only when it finds the CQ empty (a
 * look without the lock: a hint; a CQE another thread takes meanwhile
 * only makes this call return less, and the next one turns). A CQ that
 * holds completions is served from what is there, and whatever the
 * engine owes the wire (an ACK for what it received) waits for the call
 * that finds nothing, leaving with what the program posted in between.
 * Turning on every poll split send_lat's turns: the send CQE's poll took
 * in the peer's ACK and SEND, the receive CQ's poll turned again and sent
 * the ACK alone, and the program's SEND followed in a burst of its own
 * (the peer then received them apart, and did the same).
 */
static inline void cq_drive(struct droce_cq *cq)
{
	if (cq->dev->args.lcore < 0 && cq_peek(cq) == NULL)
		droce_drv->poll(cq->dev);
}

int droce_poll_cq(struct ibv_cq *ibcq, int ne, struct ibv_wc *wc)
{
	struct droce_cq *cq = droce_cq_of(ibcq);
	int n = 0;

	if (unlikely(ne < 0 || (ne > 0 && wc == NULL)))
		return -1;
	droce_ab_turn();
	cq_drive(cq);
	/* Nothing there (the same hint): no lock for an empty poll, the
	 * most common call of a program that spins on its CQ. */
	if (cq_peek(cq) == NULL) {
		droce_stamp_poll(0, 0);
		return 0;
	}
	droce_qlock(&cq->lock, cq->nolock);
	while (n < ne) {
		struct droce_cqe *e = cq_peek(cq);
		struct ibv_wc *w = &wc[n];

		if (e == NULL)
			break;
		w->wr_id = e->wr_id;
		w->status = e->status;
		w->opcode = e->opcode;
		w->vendor_err = e->vendor_err;
		w->byte_len = e->byte_len;
		w->imm_data = e->imm_data;
		w->qp_num = e->qp_num;
		w->src_qp = e->src_qp;
		w->wc_flags = e->wc_flags;
		w->pkey_index = e->pkey_index;
		w->slid = e->slid;
		w->sl = e->sl;
		w->dlid_path_bits = e->dlid_path_bits;
		cq->ci++;
		n++;
	}
	if (n)
		__atomic_store_n(&cq->ci_db, cq->ci, __ATOMIC_RELEASE);
	droce_qunlock(&cq->lock, cq->nolock);
	droce_stamp_poll(n, n ? wc[0].wr_id : 0);
	droce_ab_count(n);
	return n;
}


/* ------------------------------------------------------- extended CQ */

static inline struct droce_cq *cqx(struct ibv_cq_ex *c)
{
	return container_of(c, struct droce_cq, cq_ex);
}

static inline void cqx_load(struct ibv_cq_ex *c, struct droce_cqe *e)
{
	cqx(c)->cur = e;
	c->wr_id = e->wr_id;
	c->status = e->status;
}

static int cqx_start_poll(struct ibv_cq_ex *c, struct ibv_poll_cq_attr *attr)
{
	struct droce_cq *cq = cqx(c);
	struct droce_cqe *e;

	if (attr && attr->comp_mask)
		return EINVAL;
	droce_ab_turn();
	cq_drive(cq);
	droce_qlock(&cq->lock, cq->nolock);
	e = cq_peek(cq);
	if (e == NULL) {
		droce_qunlock(&cq->lock, cq->nolock);
		return ENOENT;
	}
	cqx_load(c, e);
	droce_ab_count(1);
	return 0;
}

static int cqx_next_poll(struct ibv_cq_ex *c)
{
	struct droce_cq *cq = cqx(c);
	struct droce_cqe *e;

	cq->ci++;
	e = cq_peek(cq);
	cq->cur = e;
	if (e == NULL)
		return ENOENT;
	cqx_load(c, e);
	droce_ab_count(1);
	return 0;
}

static void cqx_end_poll(struct ibv_cq_ex *c)
{
	struct droce_cq *cq = cqx(c);

	/* The entry last returned by start/next_poll is consumed too. */
	if (cq->cur != NULL)
		cq->ci++;
	cq->cur = NULL;
	__atomic_store_n(&cq->ci_db, cq->ci, __ATOMIC_RELEASE);
	droce_qunlock(&cq->lock, cq->nolock);
}

static enum ibv_wc_opcode cqx_opcode(struct ibv_cq_ex *c)
{ return cqx(c)->cur->opcode; }
static uint32_t cqx_vendor_err(struct ibv_cq_ex *c)
{ return cqx(c)->cur->vendor_err; }
static uint32_t cqx_byte_len(struct ibv_cq_ex *c)
{ return cqx(c)->cur->byte_len; }
static __be32 cqx_imm_data(struct ibv_cq_ex *c)
{ return cqx(c)->cur->imm_data; }
static uint32_t cqx_qp_num(struct ibv_cq_ex *c)
{ return cqx(c)->cur->qp_num; }
static uint32_t cqx_src_qp(struct ibv_cq_ex *c)
{ return cqx(c)->cur->src_qp; }
static unsigned int cqx_wc_flags(struct ibv_cq_ex *c)
{ return cqx(c)->cur->wc_flags; }
static uint32_t cqx_slid(struct ibv_cq_ex *c)
{ return cqx(c)->cur->slid; }
static uint8_t cqx_sl(struct ibv_cq_ex *c)
{ return cqx(c)->cur->sl; }
static uint8_t cqx_dlid_path_bits(struct ibv_cq_ex *c)
{ return cqx(c)->cur->dlid_path_bits; }
static uint64_t cqx_completion_ts(struct ibv_cq_ex *c)
{ return cqx(c)->cur->timestamp; }

static uint64_t cqx_completion_wallclock_ns(struct ibv_cq_ex *c)
{
	/* The engine clock is the TSC; convert against now. */
	uint64_t hz = rte_get_tsc_hz();
	uint64_t now_tsc = rte_rdtsc();
	struct timespec ts;
	uint64_t now_ns, age;

	clock_gettime(CLOCK_REALTIME, &ts);
	now_ns = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
	age = now_tsc - cqx(c)->cur->timestamp;
	return now_ns - (uint64_t)((double)age * 1e9 / (double)hz);
}

void droce_cq_install_ex_ops(struct droce_cq *cq)
{
	struct ibv_cq_ex *c = &cq->cq_ex;

	c->start_poll = cqx_start_poll;
	c->next_poll = cqx_next_poll;
	c->end_poll = cqx_end_poll;
	c->read_opcode = cqx_opcode;
	c->read_vendor_err = cqx_vendor_err;
	c->read_wc_flags = cqx_wc_flags;
	if (cq->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		c->read_byte_len = cqx_byte_len;
	if (cq->wc_flags & IBV_WC_EX_WITH_IMM)
		c->read_imm_data = cqx_imm_data;
	if (cq->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		c->read_qp_num = cqx_qp_num;
	if (cq->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		c->read_src_qp = cqx_src_qp;
	if (cq->wc_flags & IBV_WC_EX_WITH_SLID)
		c->read_slid = cqx_slid;
	if (cq->wc_flags & IBV_WC_EX_WITH_SL)
		c->read_sl = cqx_sl;
	if (cq->wc_flags & IBV_WC_EX_WITH_DLID_PATH_BITS)
		c->read_dlid_path_bits = cqx_dlid_path_bits;
	if (cq->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP)
		c->read_completion_ts = cqx_completion_ts;
	if (cq->wc_flags & IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK)
		c->read_completion_wallclock_ns = cqx_completion_wallclock_ns;
}

/* ---------------------------------------------------- create/destroy */

static struct droce_cq *cq_create(struct ibv_context *ctx, int cqe,
				  void *cq_context,
				  struct ibv_comp_channel *channel,
				  int comp_vector, uint64_t wc_flags, bool ex)
{
	struct droce_dev *dev;
	struct droce_cq *cq;
	uint32_t size;

	if (ctx == NULL || cqe < 1 || cqe > DROCE_MAX_CQE - 1 ||
	    comp_vector < 0 || comp_vector >= ctx->num_comp_vectors) {
		errno = EINVAL;
		return NULL;
	}
	if (channel != NULL && channel->context != ctx) {
		errno = EINVAL;
		return NULL;
	}
	dev = droce_dev_of_ctx(ctx);
	cq = rte_zmalloc_socket("droce_cq", sizeof(*cq), RTE_CACHE_LINE_SIZE,
				rte_eth_dev_socket_id(dev->port_id));
	if (cq == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	size = rte_align32pow2((uint32_t)cqe + 1);
	cq->ring = rte_zmalloc_socket("droce_cq_ring",
				      (size_t)size * sizeof(struct droce_cqe),
				      RTE_CACHE_LINE_SIZE,
				      rte_eth_dev_socket_id(dev->port_id));
	if (cq->ring == NULL) {
		rte_free(cq);
		errno = ENOMEM;
		return NULL;
	}
	pthread_mutex_lock(&dev->lock);
	if (dev->nb_cq >= DROCE_MAX_CQ) {
		pthread_mutex_unlock(&dev->lock);
		rte_free(cq->ring);
		rte_free(cq);
		errno = ENOMEM;
		return NULL;
	}
	dev->nb_cq++;
	pthread_mutex_unlock(&dev->lock);
	cq->dev = dev;
	cq->size = size;
	cq->log_size = (uint32_t)__builtin_ctz(size);
	cq->wc_flags = wc_flags;
	cq->ex = ex;
	rte_spinlock_init(&cq->lock);
	cq->cq.context = ctx;
	cq->cq.channel = channel;
	cq->cq.cq_context = cq_context;
	cq->cq.cqe = (int)size - 1;
	pthread_mutex_init(&cq->cq.mutex, NULL);
	pthread_cond_init(&cq->cq.cond, NULL);
	if (ex)
		droce_cq_install_ex_ops(cq);
	if (channel)
		__atomic_fetch_add(&channel->refcnt, 1, __ATOMIC_RELAXED);
	droce_obj_add(ctx, &cq->obj, DROCE_OBJ_CQ);
	return cq;
}

struct ibv_cq *ibv_create_cq(struct ibv_context *context, int cqe,
			     void *cq_context, struct ibv_comp_channel *channel,
			     int comp_vector)
{
	struct droce_cq *cq = cq_create(context, cqe, cq_context, channel,
					comp_vector, 0, false);

	return cq ? &cq->cq : NULL;
}

struct ibv_cq_ex *droce_create_cq_ex(struct ibv_context *ctx,
				     struct ibv_cq_init_attr_ex *attr)
{
	struct droce_cq *cq;

	if (attr == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (attr->comp_mask & ~(uint32_t)(IBV_CQ_INIT_ATTR_MASK_FLAGS |
					  IBV_CQ_INIT_ATTR_MASK_PD) ||
	    attr->wc_flags & ~(uint64_t)DROCE_CQ_WC_FLAGS) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	/* IBV_CQ_INIT_ATTR_MASK_PD takes a parent domain, nothing else. */
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) &&
	    (attr->parent_domain == NULL ||
	     attr->parent_domain->context != ctx ||
	     droce_pd_obj(attr->parent_domain)->base == NULL)) {
		errno = EINVAL;
		return NULL;
	}
	if ((attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
	    attr->flags & ~(uint32_t)IBV_CREATE_CQ_ATTR_SINGLE_THREADED) {
		errno = EOPNOTSUPP;
		return NULL;
	}
	if (attr->cqe > (uint32_t)INT32_MAX) {
		errno = EINVAL;
		return NULL;
	}
	cq = cq_create(ctx, (int)attr->cqe, attr->cq_context, attr->channel,
		       (int)attr->comp_vector, attr->wc_flags, true);
	if (cq == NULL)
		return NULL;
	/* One poller at a time, promised: no lock (ibv_create_cq_ex(3)). */
	cq->nolock = (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_FLAGS) &&
		     (attr->flags & IBV_CREATE_CQ_ATTR_SINGLE_THREADED);
	if (attr->comp_mask & IBV_CQ_INIT_ATTR_MASK_PD) {
		cq->parent = droce_pd_obj(attr->parent_domain);
		cq->nolock |= cq->parent->td != NULL;
		__atomic_fetch_add(&cq->parent->refcnt, 1, __ATOMIC_RELAXED);
	}
	return &cq->cq_ex;
}

static void sync_noop(void *arg)
{
	(void)arg;
}

int ibv_destroy_cq(struct ibv_cq *ibcq)
{
	struct droce_cq *cq;
	struct droce_dev *dev;

	if (ibcq == NULL)
		return EINVAL;
	cq = droce_cq_of(ibcq);
	dev = cq->dev;
	if (__atomic_load_n(&cq->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;
	if (__atomic_exchange_n(&cq->armed, DROCE_CQ_DISARMED,
				__ATOMIC_ACQ_REL) != DROCE_CQ_DISARMED)
		droce_drv->app_waiting(dev, -1);	/* rdma_channel.c */
	droce_drv->exec(dev, sync_noop, NULL);
	droce_async_forget(ibcq->context, ibcq);
	droce_async_wait_acked(ibcq->context, &cq->async_delivered,
			       &ibcq->async_events_completed, &ibcq->mutex,
			       &ibcq->cond);
	if (cq->cq.channel) {
		droce_cq_wait_events_acked(cq);
		__atomic_fetch_sub(&cq->cq.channel->refcnt, 1, __ATOMIC_RELAXED);
	}
	pthread_mutex_lock(&dev->lock);
	dev->nb_cq--;
	pthread_mutex_unlock(&dev->lock);
	if (cq->parent)
		__atomic_fetch_sub(&cq->parent->refcnt, 1, __ATOMIC_RELAXED);
	droce_obj_del(ibcq->context, &cq->obj);
	pthread_mutex_destroy(&cq->cq.mutex);
	pthread_cond_destroy(&cq->cq.cond);
	rte_free(cq->ring);
	rte_free(cq);
	return 0;
}

/* ------------------------------------------------------ resize/modify */

struct resize_job {
	struct droce_cq *cq;
	struct droce_cqe *ring;
	uint32_t size;
	int err;
};

/* On the engine (the producer), with the application's poll lock held:
 * move what is not polled yet to the new ring, as lap 0. */
static void resize_apply(void *arg)
{
	struct resize_job *j = arg;
	struct droce_cq *cq = j->cq;
	uint32_t n = cq->pi - cq->ci;

	if (n >= j->size) {
		j->err = EINVAL;
		return;
	}
	for (uint32_t i = 0; i < n; i++) {
		j->ring[i] = cq->ring[(cq->ci + i) & (cq->size - 1)];
		j->ring[i].owner = 1;
	}
	j->err = 0;
	{
		struct droce_cqe *old = cq->ring;

		cq->ring = j->ring;
		j->ring = old;	/* the caller frees what it gets back */
	}
	cq->size = j->size;
	cq->log_size = (uint32_t)__builtin_ctz(j->size);
	cq->pi = n;
	cq->ci = 0;
	cq->ci_db = 0;
	cq->ci_seen = 0;
	cq->cq.cqe = (int)j->size - 1;
}

int ibv_resize_cq(struct ibv_cq *ibcq, int cqe)
{
	struct droce_cq *cq;
	struct resize_job j;

	if (ibcq == NULL || cqe < 1 || cqe > DROCE_MAX_CQE - 1)
		return EINVAL;
	cq = droce_cq_of(ibcq);
	j.cq = cq;
	j.size = rte_align32pow2((uint32_t)cqe + 1);
	j.ring = rte_zmalloc_socket("droce_cq_ring",
				    (size_t)j.size * sizeof(struct droce_cqe),
				    RTE_CACHE_LINE_SIZE,
				    rte_eth_dev_socket_id(cq->dev->port_id));
	if (j.ring == NULL)
		return ENOMEM;
	droce_qlock(&cq->lock, cq->nolock);
	droce_drv->exec(cq->dev, resize_apply, &j);
	droce_qunlock(&cq->lock, cq->nolock);
	rte_free(j.ring);	/* the old ring, or the unused new one */
	return j.err;
}

/*
 * Moderation (ibv_modify_cq(3)): with a channel, an event waits for
 * cq_count completions after the arm (0 or 1: at once). cq_period is
 * accepted and bounded by the engine's timer tick; droce does not delay
 * events on time alone.
 */
int droce_modify_cq(struct ibv_cq *ibcq, struct ibv_modify_cq_attr *attr)
{
	struct droce_cq *cq;

	if (ibcq == NULL || attr == NULL)
		return EINVAL;
	if (attr->attr_mask & ~(uint32_t)IBV_CQ_ATTR_MODERATE)
		return EINVAL;
	cq = droce_cq_of(ibcq);
	if (attr->attr_mask & IBV_CQ_ATTR_MODERATE) {
		__atomic_store_n(&cq->moderate_count, attr->moderate.cq_count,
				 __ATOMIC_RELEASE);
		cq->moderate_period = attr->moderate.cq_period;
	}
	return 0;
}
