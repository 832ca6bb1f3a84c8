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
	/* Blocks unless the application made async_fd non-blocking. */
	droce_drv->app_waiting(c->dev, 1);
	if (read(c->async_fd, &n, sizeof(n)) != sizeof(n)) {
		droce_drv->app_waiting(c->dev, -1);
		return -1;
	}
	droce_drv->app_waiting(c->dev, -1);
	rte_spinlock_lock(&c->async_lock);
	*event = c->async_q[c->async_head++ % ASYNC_RING];
	rte_spinlock_unlock(&c->async_lock);
	return 0;
}

void ibv_ack_async_event(struct ibv_async_event *event)
{
	if (event == NULL)
		return;
	switch (event->event_type) {
	case IBV_EVENT_CQ_ERR:
		__atomic_fetch_add(&event->element.cq->async_events_completed, 1,
				   __ATOMIC_RELAXED);
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		__atomic_fetch_add(&event->element.srq->events_completed, 1,
				   __ATOMIC_RELAXED);
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_DEVICE_FATAL:
		break;
	default:
		__atomic_fetch_add(&event->element.qp->events_completed, 1,
				   __ATOMIC_RELAXED);
		break;
	}
}
