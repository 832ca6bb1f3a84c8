/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Async events: a per-context queue and an eventfd (the context's
 * async_fd, pollable as rdma-core documents). Producers are the engine
 * and the control path; ibv_get_async_event() blocks on the eventfd.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include <sys/eventfd.h>

#include "droce_int.h"

#define ASYNC_RING 256	/* events not yet read are dropped past this */

int droce_async_init(struct droce_context *c)
{
	c->async_fd = eventfd(0, EFD_CLOEXEC | EFD_SEMAPHORE);
	if (c->async_fd < 0)
		return -errno;
	c->async_q = calloc(ASYNC_RING, sizeof(*c->async_q));
	if (c->async_q == NULL) {
		close(c->async_fd);
		return -ENOMEM;
	}
	rte_spinlock_init(&c->async_lock);
	return 0;
}

void droce_async_fini(struct droce_context *c)
{
	close(c->async_fd);
	free(c->async_q);
}

void droce_async_event(struct ibv_context *ctx, enum ibv_event_type type,
		       void *object)
{
	struct droce_context *c = droce_ctx(ctx);
	struct ibv_async_event *e;
	uint64_t one = 1;

	rte_spinlock_lock(&c->async_lock);
	if (c->async_tail - c->async_head >= ASYNC_RING) {
		rte_spinlock_unlock(&c->async_lock);
		return;
	}
	e = &c->async_q[c->async_tail++ % ASYNC_RING];
	memset(e, 0, sizeof(*e));
	e->event_type = type;
	switch (type) {
	case IBV_EVENT_CQ_ERR:
		e->element.cq = object;
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		e->element.srq = object;
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_DEVICE_FATAL:
		e->element.port_num = 1;
		break;
	default:
		e->element.qp = object;
		break;
	}
	rte_spinlock_unlock(&c->async_lock);
	if (write(c->async_fd, &one, sizeof(one)) != sizeof(one))
		DROCE_LOG(ERR, "async event lost: %s", strerror(errno));
}

/* An event whose object went away before it was read. */
#define EVENT_FORGOTTEN ((enum ibv_event_type)-1)

static bool is_qp_event(enum ibv_event_type t)
{
	switch (t) {
	case IBV_EVENT_CQ_ERR:
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_DEVICE_FATAL:
		return false;
	default:
		return t != EVENT_FORGOTTEN;
	}
}

int ibv_get_async_event(struct ibv_context *context,
			struct ibv_async_event *event)
{
	struct droce_context *c;
	uint64_t n;

	if (context == NULL || event == NULL) {
		errno = EINVAL;
		return -1;
	}
	c = droce_ctx(context);
	for (;;) {
		/* Blocks unless the application made async_fd non-blocking. */
		droce_drv->app_waiting(c->dev, 1);
		if (read(c->async_fd, &n, sizeof(n)) != sizeof(n)) {
			droce_drv->app_waiting(c->dev, -1);
			return -1;
		}
		droce_drv->app_waiting(c->dev, -1);
		rte_spinlock_lock(&c->async_lock);
		*event = c->async_q[c->async_head++ % ASYNC_RING];
		/* Counted while locked: droce_async_forget reads it so. */
		if (event->event_type == IBV_EVENT_CQ_ERR)
			droce_cq_of(event->element.cq)->async_delivered++;
		else if (event->event_type == IBV_EVENT_SRQ_ERR ||
			 event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED)
			container_of(event->element.srq, struct droce_srq,
				     ibv)->async_delivered++;
		else if (is_qp_event(event->event_type))
			droce_qp_of(event->element.qp)->async_delivered++;
		rte_spinlock_unlock(&c->async_lock);
		if (event->event_type != EVENT_FORGOTTEN)
			return 0;
	}
}

void droce_async_forget(struct ibv_context *ctx, void *object)
{
	struct droce_context *c = droce_ctx(ctx);

	rte_spinlock_lock(&c->async_lock);
	for (uint32_t i = c->async_head; i != c->async_tail; i++) {
		struct ibv_async_event *e = &c->async_q[i % ASYNC_RING];

		if (e->element.qp == object || e->element.cq == object ||
		    e->element.srq == object)
			e->event_type = EVENT_FORGOTTEN;
	}
	rte_spinlock_unlock(&c->async_lock);
}

static void ack_one(uint32_t *counter, pthread_mutex_t *m, pthread_cond_t *cv)
{
	pthread_mutex_lock(m);
	(*counter)++;
	pthread_cond_broadcast(cv);
	pthread_mutex_unlock(m);
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	if (event == NULL)
		return;
	if (event->event_type == IBV_EVENT_CQ_ERR) {
		struct ibv_cq *cq = event->element.cq;

		ack_one(&cq->async_events_completed, &cq->mutex, &cq->cond);
	} else if (event->event_type == IBV_EVENT_SRQ_ERR ||
		   event->event_type == IBV_EVENT_SRQ_LIMIT_REACHED) {
		struct ibv_srq *srq = event->element.srq;

		ack_one(&srq->events_completed, &srq->mutex, &srq->cond);
	} else if (is_qp_event(event->event_type)) {
		struct ibv_qp *qp = event->element.qp;

		ack_one(&qp->events_completed, &qp->mutex, &qp->cond);
	}
}

/* Wait for the acknowledgements of what ibv_get_async_event delivered. */
void droce_async_wait_acked(struct ibv_context *ctx, uint32_t *delivered,
			    uint32_t *acked, pthread_mutex_t *m,
			    pthread_cond_t *cv)
{
	if (droce_ctx_closing(ctx))
		return;
	pthread_mutex_lock(m);
	while (*acked != __atomic_load_n(delivered, __ATOMIC_ACQUIRE))
		pthread_cond_wait(cv, m);
	pthread_mutex_unlock(m);
}

void droce_port_event(struct droce_dev *dev, enum ibv_event_type type)
{
	for (uint32_t i = 0; i < DROCE_MAX_CTX; i++) {
		struct ibv_context *ctx =
			__atomic_load_n(&dev->ctxs[i], __ATOMIC_ACQUIRE);

		if (ctx)
			droce_async_event(ctx, type, NULL);
	}
}
