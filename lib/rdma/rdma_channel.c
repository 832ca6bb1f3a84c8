/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Completion channels: a program that does not poll can sleep. The
 * channel's fd is an eventfd; ibv_req_notify_cq() arms a CQ; the engine,
 * when it writes a CQE to an armed CQ that the arm asks for (any CQE, or
 * with solicited_only a solicited or error one), disarms it, queues the CQ
 * on its channel and writes the eventfd. That write is the engine's one
 * system call, and only while the application waits.
 *
 * An armed CQ counts as a waiter (droce_drv->app_waiting), like a thread
 * in ibv_get_cq_event: a program may sleep in poll(2) or epoll on the fd
 * instead, where droce cannot see it, and an app-driven engine's keeper
 * then turns every ETH_KEEPER_WAIT_US instead of every millisecond. Each
 * side counts its own transition: arming (disarmed -> armed) +1, the
 * engine's disarm at the event or the CQ's destruction -1.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include <rte_ring.h>

#include "droce_int.h"

struct droce_channel {
	struct ibv_comp_channel ibv;
	struct rte_ring *pending;	/* CQs with an event, MP/SC */
	struct droce_obj obj;
};

struct ibv_comp_channel *droce_channel_of_obj(struct droce_obj *o)
{
	return &container_of(o, struct droce_channel, obj)->ibv;
}

static inline struct droce_channel *chan_of(struct ibv_comp_channel *c)
{
	return container_of(c, struct droce_channel, ibv);
}

struct ibv_comp_channel *ibv_create_comp_channel(struct ibv_context *context)
{
	static uint32_t seq;
	struct droce_channel *ch;
	char name[RTE_RING_NAMESIZE];

	if (context == NULL) {
		errno = EINVAL;
		return NULL;
	}
	ch = calloc(1, sizeof(*ch));
	if (ch == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ch->ibv.fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	snprintf(name, sizeof(name), "droce_ch_%u",
		 __atomic_fetch_add(&seq, 1, __ATOMIC_RELAXED));
	/* Each CQ is queued at most once per arm: the ring never fills. */
	ch->pending = rte_ring_create(name, rte_align32pow2(DROCE_MAX_CQ + 1),
				      SOCKET_ID_ANY, RING_F_SC_DEQ);
	if (ch->ibv.fd < 0 || ch->pending == NULL) {
		if (ch->ibv.fd >= 0)
			close(ch->ibv.fd);
		rte_ring_free(ch->pending);
		free(ch);
		errno = ENOMEM;
		return NULL;
	}
	ch->ibv.context = context;
	droce_obj_add(context, &ch->obj, DROCE_OBJ_CHANNEL);
	return &ch->ibv;
}

int ibv_destroy_comp_channel(struct ibv_comp_channel *channel)
{
	struct droce_channel *ch;

	if (channel == NULL)
		return EINVAL;
	ch = chan_of(channel);
	if (__atomic_load_n(&channel->refcnt, __ATOMIC_ACQUIRE))
		return EBUSY;	/* CQs still use it (ibv_create_comp_channel(3)) */
	droce_obj_del(channel->context, &ch->obj);
	close(channel->fd);
	rte_ring_free(ch->pending);
	free(ch);
	return 0;
}

/* Engine side: a CQE was just written to an armed CQ. */
void droce_cq_event(struct droce_cq *cq, const struct droce_cqe *e)
{
	uint8_t arm = __atomic_load_n(&cq->armed, __ATOMIC_ACQUIRE);
	uint64_t one = 1;
	struct droce_channel *ch;

	if (arm == DROCE_CQ_ARM_SOLICITED && !e->solicited &&
	    e->status == IBV_WC_SUCCESS)
		return;
	if (++cq->since_arm < cq->moderate_count && e->status == IBV_WC_SUCCESS)
		return;	/* moderation: wait for more */
	if (!__atomic_compare_exchange_n(&cq->armed, &arm, DROCE_CQ_DISARMED,
					 false, __ATOMIC_ACQ_REL,
					 __ATOMIC_RELAXED))
		return;
	cq->since_arm = 0;
	droce_drv->app_waiting(cq->dev, -1);
	ch = chan_of(cq->cq.channel);
	rte_ring_mp_enqueue(ch->pending, cq);
	if (write(ch->ibv.fd, &one, sizeof(one)) != sizeof(one))
		DROCE_LOG(ERR, "completion event lost: %s", strerror(errno));
}

int droce_req_notify_cq(struct ibv_cq *ibcq, int solicited_only)
{
	struct droce_cq *cq = droce_cq_of(ibcq);
	uint8_t old;

	if (ibcq->channel == NULL)
		return 0;	/* nothing to notify; as mlx5, not an error */
	old = __atomic_exchange_n(&cq->armed, solicited_only ?
				  DROCE_CQ_ARM_SOLICITED : DROCE_CQ_ARM_ANY,
				  __ATOMIC_ACQ_REL);
	if (old == DROCE_CQ_DISARMED)
		droce_drv->app_waiting(cq->dev, 1);
	return 0;
}

int ibv_get_cq_event(struct ibv_comp_channel *channel, struct ibv_cq **cq,
		     void **cq_context)
{
	struct droce_channel *ch;
	uint64_t n;
	void *obj;

	if (channel == NULL || cq == NULL || cq_context == NULL) {
		errno = EINVAL;
		return -1;
	}
	ch = chan_of(channel);
	/* Blocks unless the application made the fd non-blocking. */
	droce_drv->app_waiting(droce_dev_of_ctx(channel->context), 1);
	if (read(channel->fd, &n, sizeof(n)) != sizeof(n)) {
		droce_drv->app_waiting(droce_dev_of_ctx(channel->context), -1);
		return -1;
	}
	droce_drv->app_waiting(droce_dev_of_ctx(channel->context), -1);
	if (rte_ring_sc_dequeue(ch->pending, &obj) != 0) {
		errno = EAGAIN;
		return -1;
	}
	*cq = &((struct droce_cq *)obj)->cq;
	*cq_context = (*cq)->cq_context;
	__atomic_fetch_add(&((struct droce_cq *)obj)->events_delivered, 1,
			   __ATOMIC_RELEASE);
	return 0;
}

void ibv_ack_cq_events(struct ibv_cq *cq, unsigned int nevents)
{
	if (cq == NULL)
		return;
	pthread_mutex_lock(&cq->mutex);
	cq->comp_events_completed += nevents;
	pthread_cond_signal(&cq->cond);
	pthread_mutex_unlock(&cq->mutex);
}

/* ibv_destroy_cq(3): all completion events must be acknowledged first;
 * libibverbs waits for them, and so does droce (but for a context being
 * closed: no acknowledgement will come). */
void droce_cq_wait_events_acked(struct droce_cq *cq)
{
	if (droce_ctx_closing(cq->cq.context))
		return;
	pthread_mutex_lock(&cq->cq.mutex);
	while (cq->cq.comp_events_completed !=
	       __atomic_load_n(&cq->events_delivered, __ATOMIC_ACQUIRE))
		pthread_cond_wait(&cq->cq.cond, &cq->cq.mutex);
	pthread_mutex_unlock(&cq->cq.mutex);
}
