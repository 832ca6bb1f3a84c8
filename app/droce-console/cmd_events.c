/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Async events (ibv_get_async_event): QP errors of a responder (REQ_ERR,
 * ACCESS_ERR, FATAL), the last WQE of a QP on an SRQ, an SRQ's limit, a CQ
 * overrun, the port going down or up. The console makes every device's
 * async_fd non-blocking, reads what is there into its own log and
 * acknowledges each event at once (so destroying an object never waits
 * for the console). 'show events' prints the log and empties it; 'wait
 * event <type>' takes the first matching event from the log, or waits for
 * one; the others stay for 'show events'.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"

#define EV_LOG		256

struct ev {
	int dev;
	enum ibv_event_type type;
	char kind[4];			/* "qp", "cq", "srq", "" (port/device) */
	int id;				/* console id of the object, or -1 */
	char what[64];			/* the object, as printed */
};

static struct {
	struct ev log[EV_LOG];
	uint32_t head, len;
	uint64_t lost;
	bool nonblock[DROCE_MAX_DEVS];
} ev;

static const struct {
	enum ibv_event_type type;
	const char *name;
} ev_names[] = {
	{ IBV_EVENT_CQ_ERR, "cq_err" },
	{ IBV_EVENT_QP_FATAL, "qp_fatal" },
	{ IBV_EVENT_QP_REQ_ERR, "qp_req_err" },
	{ IBV_EVENT_QP_ACCESS_ERR, "qp_access_err" },
	{ IBV_EVENT_COMM_EST, "comm_est" },
	{ IBV_EVENT_SQ_DRAINED, "sq_drained" },
	{ IBV_EVENT_PATH_MIG, "path_mig" },
	{ IBV_EVENT_PATH_MIG_ERR, "path_mig_err" },
	{ IBV_EVENT_DEVICE_FATAL, "device_fatal" },
	{ IBV_EVENT_PORT_ACTIVE, "port_active" },
	{ IBV_EVENT_PORT_ERR, "port_err" },
	{ IBV_EVENT_LID_CHANGE, "lid_change" },
	{ IBV_EVENT_PKEY_CHANGE, "pkey_change" },
	{ IBV_EVENT_SM_CHANGE, "sm_change" },
	{ IBV_EVENT_SRQ_ERR, "srq_err" },
	{ IBV_EVENT_SRQ_LIMIT_REACHED, "srq_limit_reached" },
	{ IBV_EVENT_QP_LAST_WQE_REACHED, "qp_last_wqe_reached" },
	{ IBV_EVENT_CLIENT_REREGISTER, "client_reregister" },
	{ IBV_EVENT_GID_CHANGE, "gid_change" },
};

const char *const *events_names(void)
{
	static const char *names[RTE_DIM(ev_names) + 2];

	if (names[0] == NULL) {
		for (size_t i = 0; i < RTE_DIM(ev_names); i++)
			names[i] = ev_names[i].name;
		names[RTE_DIM(ev_names)] = "any";
	}
	return names;
}

static const char *ev_name(enum ibv_event_type t)
{
	for (size_t i = 0; i < RTE_DIM(ev_names); i++)
		if (ev_names[i].type == t)
			return ev_names[i].name;
	return "unknown";
}

/* -1: any; -2: unknown name */
static int ev_by_name(const char *s)
{
	if (strcmp(s, "any") == 0)
		return -1;
	if (strncasecmp(s, "IBV_EVENT_", 10) == 0)
		s += 10;
	for (size_t i = 0; i < RTE_DIM(ev_names); i++)
		if (strcasecmp(s, ev_names[i].name) == 0)
			return (int)ev_names[i].type;
	if (strcasecmp(s, "srq_limit") == 0)
		return IBV_EVENT_SRQ_LIMIT_REACHED;
	return -2;
}

/* What the event is about, in console ids. */
static void ev_describe(int dev, const struct ibv_async_event *e, struct ev *r)
{
	r->id = -1;
	r->kind[0] = '\0';
	switch (e->event_type) {
	case IBV_EVENT_CQ_ERR:
		snprintf(r->kind, sizeof(r->kind), "cq");
		for (int i = 0; i < CON_MAX_CQ; i++)
			if (g.cqs[i].used && g.cqs[i].cq == e->element.cq)
				r->id = i;
		snprintf(r->what, sizeof(r->what), "cq %d", r->id);
		break;
	case IBV_EVENT_SRQ_ERR:
	case IBV_EVENT_SRQ_LIMIT_REACHED:
		snprintf(r->kind, sizeof(r->kind), "srq");
		for (int i = 0; i < CON_MAX_SRQ; i++)
			if (g.srqs[i].used && g.srqs[i].srq == e->element.srq)
				r->id = i;
		snprintf(r->what, sizeof(r->what), "srq %d", r->id);
		break;
	case IBV_EVENT_PORT_ACTIVE:
	case IBV_EVENT_PORT_ERR:
	case IBV_EVENT_LID_CHANGE:
	case IBV_EVENT_PKEY_CHANGE:
	case IBV_EVENT_SM_CHANGE:
	case IBV_EVENT_CLIENT_REREGISTER:
	case IBV_EVENT_GID_CHANGE:
		snprintf(r->what, sizeof(r->what), "port %d (ethdev port %u)", e->element.port_num,
			 g.devs[dev].port);
		break;
	case IBV_EVENT_DEVICE_FATAL:
		snprintf(r->what, sizeof(r->what), "the device");
		break;
	default:
		snprintf(r->kind, sizeof(r->kind), "qp");
		for (int i = 0; i < CON_MAX_QP; i++)
			if (g.qps[i].used && g.qps[i].qp == e->element.qp)
				r->id = i;
		snprintf(r->what, sizeof(r->what), "qp %d (QPN 0x%06x)", r->id,
			 e->element.qp ? e->element.qp->qp_num : 0);
		break;
	}
}

void events_drain(void)
{
	for (int d = 0; d < g.nb_devs; d++) {
		struct ibv_context *ctx = g.devs[d].ctx;
		struct ibv_async_event e;

		if (!ev.nonblock[d]) {
			int fl = fcntl(ctx->async_fd, F_GETFL);

			/* ibv_get_async_event then returns at once when
			 * nothing is there (its documented way of polling). */
			if (fl < 0 || fcntl(ctx->async_fd, F_SETFL, fl | O_NONBLOCK) < 0)
				continue;
			ev.nonblock[d] = true;
		}
		while (ibv_get_async_event(ctx, &e) == 0) {
			struct ev r = { .dev = d, .type = e.event_type };

			ev_describe(d, &e, &r);
			ibv_ack_async_event(&e);
			if (ev.len == EV_LOG) {
				ev.head = (ev.head + 1) % EV_LOG;	/* drop the oldest */
				ev.len--;
				ev.lost++;
			}
			ev.log[(ev.head + ev.len) % EV_LOG] = r;
			ev.len++;
		}
	}
}

static void ev_print(const struct ev *r)
{
	printf("event: dev %d (%s): %s (%s), %s\n", r->dev, g.devs[r->dev].dev->args.name,
	       ev_name(r->type), ibv_event_type_str(r->type), r->what);
}

/* Remove entry k (0 = oldest) from the log. */
static void ev_take(uint32_t k)
{
	for (uint32_t i = k; i + 1 < ev.len; i++)
		ev.log[(ev.head + i) % EV_LOG] = ev.log[(ev.head + i + 1) % EV_LOG];
	ev.len--;
}

static int show_events(int argc, char **argv)
{
	int dev = -1, n = 0;

	if (argc > 1)
		return con_err("show events: usage: show events [<dev>]");
	if (argc == 1 && con_get_dev("show events", argv[0], &dev) == NULL)
		return -1;
	events_drain();
	for (uint32_t k = 0; k < ev.len;) {
		const struct ev *r = &ev.log[(ev.head + k) % EV_LOG];

		if (dev >= 0 && r->dev != dev) {
			k++;
			continue;
		}
		ev_print(r);
		ev_take(k);
		n++;
	}
	if (ev.lost) {
		printf("(%" PRIu64 " older event%s dropped: the log keeps %d)\n", ev.lost,
		       ev.lost == 1 ? "" : "s", EV_LOG);
		ev.lost = 0;
	}
	if (n == 0)
		printf("no async events%s\n", dev >= 0 ? " on this device" : "");
	return 0;
}

struct wait_ev {
	int type;			/* -1 any */
	int dev;			/* -1 any */
	const char *kind;		/* NULL any */
	int id;
	bool found;
};

static bool ev_found(void *arg)
{
	struct wait_ev *w = arg;

	events_drain();
	for (uint32_t k = 0; k < ev.len; k++) {
		const struct ev *r = &ev.log[(ev.head + k) % EV_LOG];

		if ((w->type >= 0 && (int)r->type != w->type) ||
		    (w->dev >= 0 && r->dev != w->dev) ||
		    (w->kind && (strcmp(r->kind, w->kind) || r->id != w->id)))
			continue;
		ev_print(r);
		ev_take(k);
		w->found = true;
		return true;
	}
	return false;
}

static int wait_event(int argc, char **argv)
{
	const char *cmd = "wait event";
	uint64_t timeout = 2000;
	const char *qp_s = NULL, *cq_s = NULL, *srq_s = NULL, *dev_s = NULL;
	struct con_opt o[] = {
		{ "timeout", OPT_U64, &timeout, NULL, 3600 * 1000 },
		{ "qp", OPT_STR, &qp_s, NULL, 0 },
		{ "cq", OPT_STR, &cq_s, NULL, 0 },
		{ "srq", OPT_STR, &srq_s, NULL, 0 },
		{ "dev", OPT_STR, &dev_s, NULL, 0 },
		{ NULL, 0, NULL, NULL, 0 },
	};
	struct wait_ev w = { .dev = -1, .id = -1 };
	int pos = 1, r;

	if (argc < 1)
		return con_err("wait event: usage: wait event <type>|any [<timeout-ms>] [qp <id>|cq <id>|srq <id>] "
			       "[dev <n>] (types: help wait event)");
	w.type = ev_by_name(argv[0]);
	if (w.type == -2)
		return con_err("wait event: unknown event type '%s' (srq_limit_reached, qp_access_err, "
			       "qp_req_err, qp_fatal, qp_last_wqe_reached, cq_err, port_active, port_err, any, ...)",
			       argv[0]);
	if (argc > pos && con_u64(argv[pos], &timeout) == 0)
		pos++;
	if (con_opts(cmd, argc - pos, argv + pos, o))
		return -1;
	if ((qp_s != NULL) + (cq_s != NULL) + (srq_s != NULL) > 1)
		return con_err("wait event: one object at a time (qp, cq or srq)");
	if (qp_s && con_get_qp(cmd, qp_s, &w.id) == NULL)
		return -1;
	if (cq_s && con_get_cq(cmd, cq_s, &w.id) == NULL)
		return -1;
	if (srq_s && con_get_srq(cmd, srq_s, &w.id) == NULL)
		return -1;
	if (dev_s && con_get_dev(cmd, dev_s, &w.dev) == NULL)
		return -1;
	w.kind = qp_s ? "qp" : cq_s ? "cq" : srq_s ? "srq" : NULL;
	r = con_wait(timeout * 1000 + 1, ev_found, &w);
	if (r == -EINTR)
		return con_err("wait event: interrupted");
	if (r) {
		char on[32] = "";

		if (w.kind)
			snprintf(on, sizeof(on), " on %s %d", w.kind, w.id);
		return con_err("wait event: no %s%s in %" PRIu64 " ms (%u other event%s kept for 'show events')",
			       w.type >= 0 ? ev_name((enum ibv_event_type)w.type) : "event", on,
			       timeout, ev.len, ev.len == 1 ? "" : "s");
	}
	return 0;
}

const struct con_cmd con_cmds_events[] = {
	{ "events", "show events", "[<dev>]",
	  "read the async events of every device (or one) without blocking, acknowledge and print them", show_events },
	{ "events", "wait event", "<type>|any [<timeout-ms>] [qp <id>|cq <id>|srq <id>] [dev <n>]",
	  "wait (default 2000 ms) for an async event of that type (and object); fails on timeout. Types: "
	  "srq_limit_reached qp_access_err qp_req_err qp_fatal qp_last_wqe_reached cq_err port_active port_err ...",
	  wait_event },
	{ NULL, NULL, NULL, NULL, NULL },
};
