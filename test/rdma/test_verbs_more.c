/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The verbs that let a program sleep or reshape its objects:
 * completion channels (a thread blocks in ibv_get_cq_event while the
 * other posts; solicited-only arming; moderation by count; destroy after
 * acking), ibv_resize_cq keeping unpolled completions, ibv_rereg_mr
 * (access revoked -> remote access error; new translation takes writes),
 * ibv_query_rt_values_ex and completion timestamps, async events (port
 * down/up, a responder's QP error, CQ overrun) on the pollable async_fd.
 */
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <unistd.h>

#include <rte_ethdev.h>

#include "droce.h"
#include "droce_test.h"

static struct dt_env env;
static struct dt_dev *A, *B;

struct pair {
	struct ibv_comp_channel *ch;
	struct dt_cq sa, ra, sb, rb;
	struct ibv_qp *qa, *qb;
};

static void pair_open(struct pair *p, bool channel_on_b)
{
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;

	memset(p, 0, sizeof(*p));
	dt_qp_cfg_default(&qc);
	dt_conn_cfg_default(&cc);
	dt_cq_create(A, 64, false, &p->sa);
	dt_cq_create(A, 64, false, &p->ra);
	dt_cq_create(B, 64, false, &p->sb);
	if (channel_on_b) {
		p->ch = ibv_create_comp_channel(B->ctx);
		CHECK_PTR(p->ch);
		p->rb.cq = ibv_create_cq(B->ctx, 64, (void *)0x1234, p->ch, 0);
		CHECK_PTR(p->rb.cq);
	} else {
		dt_cq_create(B, 64, false, &p->rb);
	}
	p->qa = dt_qp_create(A, p->sa.cq, p->ra.cq, &qc, NULL);
	p->qb = dt_qp_create(B, p->sb.cq, p->rb.cq, &qc, NULL);
	CHECK_PTR(p->qa);
	CHECK_PTR(p->qb);
	dt_connect(A, p->qa, 10, B, p->qb, 20, &cc);
}

static void pair_close(struct pair *p)
{
	CHECK_OK(ibv_destroy_qp(p->qa));
	CHECK_OK(ibv_destroy_qp(p->qb));
	dt_cq_destroy(&p->sa);
	dt_cq_destroy(&p->ra);
	dt_cq_destroy(&p->sb);
	if (p->ch) {
		CHECK_EQ(ibv_destroy_comp_channel(p->ch), EBUSY);	/* CQ uses it */
		CHECK_OK(ibv_destroy_cq(p->rb.cq));
		CHECK_OK(ibv_destroy_comp_channel(p->ch));
	} else {
		dt_cq_destroy(&p->rb);
	}
}

static void send_n(struct pair *p, uint8_t *buf, struct ibv_mr *mr, int n,
		   bool solicited)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge s = { (uintptr_t)buf, 64, mr->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &s,
			.num_sge = 1, .opcode = IBV_WR_SEND,
			.send_flags = IBV_SEND_SIGNALED |
				      (solicited ? IBV_SEND_SOLICITED : 0) }, *bad;
		struct ibv_wc wc;

		CHECK_OK(ibv_post_send(p->qa, &wr, &bad));
		CHECK_EQ(dt_wait_wc(&p->sa, &wc, 1, DT_WAIT_S, "SEND"), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	}
}

static void post_recvs(struct pair *p, uint8_t *buf, struct ibv_mr *mr, int n)
{
	for (int i = 0; i < n; i++) {
		struct ibv_sge s = { (uintptr_t)buf + 4096, 4096, mr->lkey };
		struct ibv_recv_wr wr = { .wr_id = 100 + (uint64_t)i,
			.sg_list = &s, .num_sge = 1 }, *bad;

		CHECK_OK(ibv_post_recv(p->qb, &wr, &bad));
	}
}

static bool event_within(struct ibv_comp_channel *ch, int ms)
{
	struct pollfd pfd = { .fd = ch->fd, .events = POLLIN };

	return poll(&pfd, 1, ms) == 1;
}

/* eng_waiters of B's engine: threads in ibv_get_cq_event plus armed CQs */
static uint64_t waiters(void)
{
	struct droce_dev_stats st;

	CHECK_OK(droce_dev_stats_get(B->ctx, &st));
	return st.eng_waiters;
}

/* eng_keeper_us of B's engine: the keeper's period while waited on */
static uint64_t keeper_us(void)
{
	struct droce_dev_stats st;

	CHECK_OK(droce_dev_stats_get(B->ctx, &st));
	return st.eng_keeper_us;
}

/* Wait up to 3 s for keeper_us() == us; its last value */
static uint64_t keeper_us_becomes(uint64_t us)
{
	uint64_t v = keeper_us();

	for (int i = 0; i < 300 && v != us; i++) {
		usleep(10000);
		v = keeper_us();
	}
	return v;
}

/*
 * lcore=app (DT_DEVARGS): with a CQ armed and nothing arriving, the
 * keeper's period grows from 20 us to idle_us (default 200) after 1 ms
 * without work, so a program asleep on its events does not cost ~45 %
 * of a core; traffic makes it fast again (it stays fast while messages
 * come closer than 1 ms apart: here one per ~100-200 us). An lcore
 * engine has no keeper: the gauge says 0.
 */
static void keeper_backoff(struct pair *p, uint8_t *abuf, struct ibv_mr *amr,
			   struct ibv_mr *bmr)
{
	const char *da = getenv("DT_DEVARGS");
	struct ibv_wc wc[8];
	struct ibv_cq *cq;
	void *ctx;
	int sent = 0, got = 0;
	bool fast = false;

	if (da == NULL || strstr(da, "lcore=app") == NULL) {
		CHECK_EQ(keeper_us(), 0);
		return;
	}
	CHECK_OK(ibv_req_notify_cq(p->rb.cq, 0));
	CHECK_EQ(keeper_us_becomes(200), 200);
	post_recvs(p, abuf, bmr, 32);
	while (sent < 32 && !fast) {
		send_n(p, abuf, amr, 1, false);
		sent++;
		/* asleep, as a program waiting for its events: the keeper
		 * shares this thread's core */
		usleep(100);
		fast = keeper_us() == 20;
	}
	CHECK(fast);
	CHECK(event_within(p->ch, 2000));
	CHECK_OK(ibv_get_cq_event(p->ch, &cq, &ctx));
	ibv_ack_cq_events(cq, 1);
	while (got < sent) {
		int n = dt_wait_wc(&p->rb, wc, 1, DT_WAIT_S, "keeper SENDs");

		CHECK_EQ(n, 1);
		if (n != 1)
			break;
		got++;
	}
	printf("keeper: its period idle_us (200 us) after 1 ms without work while a CQ is armed, 20 us after %d SENDs\n",
	       sent);
}

struct sleeper {
	struct ibv_comp_channel *ch;
	struct ibv_cq *cq;
	void *ctx;
	int ret;
};

static void *sleeper_main(void *arg)
{
	struct sleeper *s = arg;

	s->ret = ibv_get_cq_event(s->ch, &s->cq, &s->ctx);
	return NULL;
}

static void channels(uint8_t *abuf, struct ibv_mr *amr, struct ibv_mr *bmr)
{
	struct pair p;
	struct ibv_wc wc[8];
	struct ibv_cq *cq;
	void *ctx;
	struct sleeper sl = { 0 };
	pthread_t th;
	struct ibv_modify_cq_attr mod = { .attr_mask = IBV_CQ_ATTR_MODERATE,
					  .moderate = { .cq_count = 3 } };

	pair_open(&p, true);
	post_recvs(&p, abuf, bmr, 8);
	/* 1. A thread asleep in ibv_get_cq_event wakes for the completion.
	 * An armed CQ counts as a waiter (a program may sleep in poll(2) on
	 * the fd) until its event; arming it again counts it once. */
	CHECK_EQ(waiters(), 0);
	CHECK_OK(ibv_req_notify_cq(p.rb.cq, 0));
	CHECK_EQ(waiters(), 1);
	CHECK_OK(ibv_req_notify_cq(p.rb.cq, 0));
	CHECK_EQ(waiters(), 1);
	sl.ch = p.ch;
	CHECK_OK(pthread_create(&th, NULL, sleeper_main, &sl));
	send_n(&p, abuf, amr, 1, false);
	CHECK_OK(pthread_join(th, NULL));
	CHECK_EQ(sl.ret, 0);
	CHECK(sl.cq == p.rb.cq && sl.ctx == (void *)0x1234);
	CHECK_EQ(waiters(), 0);
	ibv_ack_cq_events(sl.cq, 1);
	CHECK_EQ(ibv_poll_cq(p.rb.cq, 8, wc), 1);
	/* 2. Not armed: no event. */
	send_n(&p, abuf, amr, 1, false);
	CHECK(!event_within(p.ch, 100));
	CHECK_EQ(ibv_poll_cq(p.rb.cq, 8, wc), 1);
	/* 3. Solicited only: an unsolicited SEND gives none, a solicited one does. */
	CHECK_OK(ibv_req_notify_cq(p.rb.cq, 1));
	send_n(&p, abuf, amr, 1, false);
	CHECK(!event_within(p.ch, 100));
	CHECK_EQ(waiters(), 1);
	send_n(&p, abuf, amr, 1, true);
	CHECK(event_within(p.ch, 2000));
	CHECK_EQ(waiters(), 0);
	CHECK_OK(ibv_get_cq_event(p.ch, &cq, &ctx));
	ibv_ack_cq_events(cq, 1);
	CHECK_EQ(ibv_poll_cq(p.rb.cq, 8, wc), 2);
	/* 4. The keeper's back-off while a CQ is armed (lcore=app) */
	keeper_backoff(&p, abuf, amr, bmr);
	/* 5. Moderation: an event after 3 completions, not before. */
	CHECK_OK(ibv_modify_cq(p.rb.cq, &mod));
	CHECK_OK(ibv_req_notify_cq(p.rb.cq, 0));
	send_n(&p, abuf, amr, 2, false);
	CHECK(!event_within(p.ch, 100));
	send_n(&p, abuf, amr, 1, false);
	CHECK(event_within(p.ch, 2000));
	CHECK_OK(ibv_get_cq_event(p.ch, &cq, &ctx));
	ibv_ack_cq_events(cq, 1);
	CHECK_EQ(ibv_poll_cq(p.rb.cq, 8, wc), 3);
	/* 6. A CQ destroyed armed is no waiter any more. */
	CHECK_OK(ibv_req_notify_cq(p.rb.cq, 0));
	CHECK_EQ(waiters(), 1);
	pair_close(&p);
	CHECK_EQ(waiters(), 0);
	printf("completion channels: blocking wake-up, unarmed, solicited-only, moderation, armed CQs as waiters: ok\n");
}

static void resize(uint8_t *abuf, struct ibv_mr *amr, struct ibv_mr *bmr)
{
	struct pair p;
	struct ibv_wc wc[64];

	pair_open(&p, false);
	post_recvs(&p, abuf, bmr, 10);
	send_n(&p, abuf, amr, 10, false);
	/* Ten completions wait; shrinking below them is refused. */
	CHECK_EQ(ibv_resize_cq(p.rb.cq, 4), EINVAL);
	CHECK_OK(ibv_resize_cq(p.rb.cq, 300));
	CHECK(p.rb.cq->cqe >= 300);
	CHECK_EQ(ibv_poll_cq(p.rb.cq, 64, wc), 10);
	for (int i = 0; i < 10; i++)
		CHECK_EQ(wc[i].wr_id, 100u + (uint64_t)i);
	post_recvs(&p, abuf, bmr, 5);
	send_n(&p, abuf, amr, 5, false);
	CHECK_EQ(dt_wait_wc(&p.rb, wc, 5, DT_WAIT_S, "after resize"), 5);
	pair_close(&p);
	printf("resize_cq: unpolled completions kept, in order; shrinking below them refused\n");
}

static void rereg(uint8_t *abuf, struct ibv_mr *amr)
{
	struct pair p;
	uint8_t *b1 = dt_alloc(8192), *b2 = dt_alloc(8192);
	struct ibv_mr *mr = dt_reg_mr(B->pd, b1, 8192, DT_ACCESS_ALL);
	struct ibv_sge s = { (uintptr_t)abuf, 256, amr->lkey };
	struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1,
		.opcode = IBV_WR_RDMA_WRITE, .send_flags = IBV_SEND_SIGNALED }, *bad;
	struct ibv_wc wc;

	CHECK_PTR(mr);
	pair_open(&p, false);
	memset(abuf, 0x5a, 256);
	/* A new translation under the same rkey takes the next WRITE. */
	CHECK_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_TRANSLATION, NULL, b2,
			      8192, 0));
	wr.wr.rdma.remote_addr = (uintptr_t)b2;
	wr.wr.rdma.rkey = mr->rkey;
	CHECK_OK(ibv_post_send(p.qa, &wr, &bad));
	CHECK_EQ(dt_wait_wc(&p.sa, &wc, 1, DT_WAIT_S, "WRITE after rereg"), 1);
	CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	CHECK(b2[0] == 0x5a && b2[255] == 0x5a && b1[0] == 0);
	/* Remote write revoked: the next WRITE is a remote access error. */
	CHECK_OK(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_LOCAL_WRITE));
	CHECK_EQ(ibv_rereg_mr(mr, IBV_REREG_MR_CHANGE_ACCESS, NULL, NULL, 0,
			      IBV_ACCESS_REMOTE_WRITE), IBV_REREG_MR_ERR_INPUT);
	CHECK_OK(ibv_post_send(p.qa, &wr, &bad));
	CHECK_EQ(dt_wait_wc(&p.sa, &wc, 1, DT_WAIT_S, "WRITE after revoke"), 1);
	CHECK_EQ(wc.status, IBV_WC_REM_ACCESS_ERR);
	/* The responder's QP reports its error (read and acked before the
	 * QP goes: ibv_destroy_qp waits for delivered events' acks). */
	{
		struct ibv_async_event ev;

		CHECK_OK(ibv_get_async_event(B->ctx, &ev));
		CHECK_EQ(ev.event_type, IBV_EVENT_QP_ACCESS_ERR);
		CHECK(ev.element.qp == p.qb);
		ibv_ack_async_event(&ev);
	}
	pair_close(&p);
	CHECK_OK(ibv_dereg_mr(mr));
	free(b1);
	free(b2);
	printf("rereg_mr: new translation used, revoked access refused\n");
}

/* The next async event on B within 2 s; fails if none. */
static struct ibv_async_event next_event(void)
{
	struct pollfd pfd = { .fd = B->ctx->async_fd, .events = POLLIN };
	struct ibv_async_event ev;

	CHECK_EQ(poll(&pfd, 1, 2000), 1);
	CHECK_OK(ibv_get_async_event(B->ctx, &ev));
	return ev;
}

static void async_events(uint8_t *abuf, struct ibv_mr *amr, struct ibv_mr *bmr)
{
	uint16_t port = (uint16_t)droce_dev_port_id(B->ctx);
	struct ibv_async_event ev;
	struct ibv_port_attr pa;
	struct pair p;
	struct ibv_wc wc;

	{
		struct pollfd pfd = { .fd = B->ctx->async_fd, .events = POLLIN };

		CHECK_EQ(poll(&pfd, 1, 0), 0);	/* nothing pending */
	}
	/* Port down and up again. */
	CHECK_OK(rte_eth_dev_set_link_down(port));
	ev = next_event();
	CHECK_EQ(ev.event_type, IBV_EVENT_PORT_ERR);
	CHECK_EQ(ev.element.port_num, 1);
	ibv_ack_async_event(&ev);
	CHECK_OK(ibv_query_port(B->ctx, 1, &pa));
	CHECK_EQ(pa.state, IBV_PORT_DOWN);
	CHECK_OK(rte_eth_dev_set_link_up(port));
	ev = next_event();
	CHECK_EQ(ev.event_type, IBV_EVENT_PORT_ACTIVE);
	ibv_ack_async_event(&ev);
	CHECK_OK(ibv_query_port(B->ctx, 1, &pa));
	CHECK_EQ(pa.state, IBV_PORT_ACTIVE);

	/* A receive too small: the responder's QP errors, QP_REQ_ERR. */
	pair_open(&p, false);
	{
		struct ibv_sge rs = { (uintptr_t)abuf + 4096, 8, bmr->lkey };
		struct ibv_recv_wr rwr = { .wr_id = 1, .sg_list = &rs, .num_sge = 1 }, *rbad;
		struct ibv_sge s = { (uintptr_t)abuf, 64, amr->lkey };
		struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1,
			.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

		CHECK_OK(ibv_post_recv(p.qb, &rwr, &rbad));
		CHECK_OK(ibv_post_send(p.qa, &wr, &bad));
		CHECK_EQ(dt_wait_wc(&p.sa, &wc, 1, DT_WAIT_S, "SEND into 8 B"), 1);
		CHECK_EQ(wc.status, IBV_WC_REM_INV_REQ_ERR);
	}
	ev = next_event();
	CHECK_EQ(ev.event_type, IBV_EVENT_QP_REQ_ERR);
	CHECK(ev.element.qp == p.qb);
	ibv_ack_async_event(&ev);
	CHECK_EQ(p.qb->events_completed, 1u);
	pair_close(&p);

	/* A CQ overrun: IBV_EVENT_CQ_ERR, once. */
	pair_open(&p, false);
	{
		struct ibv_cq *tiny = ibv_create_cq(B->ctx, 1, NULL, NULL, 0);
		struct dt_qp_cfg qc;
		struct dt_conn_cfg cc;
		struct ibv_qp *qa2, *qb2;

		CHECK_PTR(tiny);
		dt_qp_cfg_default(&qc);
		dt_conn_cfg_default(&cc);
		qa2 = dt_qp_create(A, p.sa.cq, p.ra.cq, &qc, NULL);
		qb2 = dt_qp_create(B, p.sb.cq, tiny, &qc, NULL);
		CHECK_PTR(qa2);
		CHECK_PTR(qb2);
		dt_connect(A, qa2, 30, B, qb2, 40, &cc);
		for (int i = 0; i < 6; i++) {
			struct ibv_sge rs = { (uintptr_t)abuf + 4096, 64, bmr->lkey };
			struct ibv_recv_wr rwr = { .wr_id = (uint64_t)i, .sg_list = &rs,
						   .num_sge = 1 }, *rbad;
			struct ibv_sge s = { (uintptr_t)abuf, 16, amr->lkey };
			struct ibv_send_wr wr = { .sg_list = &s, .num_sge = 1,
				.opcode = IBV_WR_SEND, .send_flags = IBV_SEND_SIGNALED }, *bad;

			CHECK_OK(ibv_post_recv(qb2, &rwr, &rbad));
			CHECK_OK(ibv_post_send(qa2, &wr, &bad));
			CHECK_EQ(dt_wait_wc(&p.sa, &wc, 1, DT_WAIT_S, "SEND"), 1);
		}
		ev = next_event();
		CHECK_EQ(ev.event_type, IBV_EVENT_CQ_ERR);
		CHECK(ev.element.cq == tiny);
		ibv_ack_async_event(&ev);
		CHECK_OK(ibv_destroy_qp(qa2));
		CHECK_OK(ibv_destroy_qp(qb2));
		CHECK_OK(ibv_destroy_cq(tiny));
	}
	pair_close(&p);
	printf("async events: port down/up, QP_REQ_ERR, CQ_ERR: ok\n");
}

static uint64_t raw_clock(void)
{
	struct ibv_values_ex v = { .comp_mask = IBV_VALUES_MASK_RAW_CLOCK };

	CHECK_OK(ibv_query_rt_values_ex(A->ctx, &v));
	return (uint64_t)v.raw_clock.tv_nsec;
}

static void rt_values(void)
{
	uint64_t c1 = raw_clock(), c2 = raw_clock();

	CHECK(c2 >= c1);
	printf("query_rt_values_ex: raw clock %" PRIu64 " -> %" PRIu64 "\n",
	       c1, c2);
}

static uint64_t wall_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The next completion of an extended CQ within 5 s: its status, its
 * timestamps in *ts and *wall_ts; -1 on a timeout. */
static int next_stamped(struct ibv_cq_ex *x, uint64_t *ts, uint64_t *wall_ts)
{
	struct ibv_poll_cq_attr attr = { 0 };
	double deadline = dt_now() + 5.0;
	int st, ret;

	while ((ret = ibv_start_poll(x, &attr)) == ENOENT)
		if (dt_now() > deadline)
			return -1;
	if (ret != 0)
		return -1;
	st = x->status;
	*ts = ibv_wc_read_completion_ts(x);
	*wall_ts = ibv_wc_read_completion_wallclock_ns(x);
	ibv_end_poll(x);
	return st;
}

/*
 * Completion timestamps (IBV_WC_EX_WITH_COMPLETION_TIMESTAMP and its
 * wall-clock form) on a send and a receive CQ: each one lies between the
 * raw clock (ibv_query_rt_values_ex) read before the post and after the
 * poll, the send side's in order; the wall-clock form within the same
 * real-time window.
 */
static void completion_timestamps(uint8_t *abuf, struct ibv_mr *amr,
				  struct ibv_mr *bmr)
{
	const uint64_t want = IBV_WC_EX_WITH_COMPLETION_TIMESTAMP |
			      IBV_WC_EX_WITH_COMPLETION_TIMESTAMP_WALLCLOCK;
	struct ibv_cq_init_attr_ex ca = { .cqe = 64, .wc_flags = want };
	const uint64_t slack_ns = 2000000;	/* the conversion's, generous */
	struct ibv_cq_ex *sx, *rx;
	struct dt_cq ra, sb;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	struct ibv_qp *qa, *qb;
	uint64_t prev = 0;

	dt_qp_cfg_default(&qc);
	dt_conn_cfg_default(&cc);
	sx = ibv_create_cq_ex(A->ctx, &ca);
	rx = ibv_create_cq_ex(B->ctx, &ca);
	CHECK_PTR(sx);
	CHECK_PTR(rx);
	dt_cq_create(A, 64, false, &ra);
	dt_cq_create(B, 64, false, &sb);
	qa = dt_qp_create(A, ibv_cq_ex_to_cq(sx), ra.cq, &qc, NULL);
	qb = dt_qp_create(B, sb.cq, ibv_cq_ex_to_cq(rx), &qc, NULL);
	CHECK_PTR(qa);
	CHECK_PTR(qb);
	dt_connect(A, qa, 30, B, qb, 40, &cc);
	for (int i = 0; i < 8; i++) {
		struct ibv_sge rs = { (uintptr_t)(abuf + 32768), 64, bmr->lkey };
		struct ibv_recv_wr rw = { .wr_id = 100 + (uint64_t)i,
					  .sg_list = &rs, .num_sge = 1 }, *bad;
		uint64_t t0, t1, w0, w1, ts, wts, rts, rwts;
		int st, rst;

		CHECK_OK(ibv_post_recv(qb, &rw, &bad));
		w0 = wall_ns();
		t0 = raw_clock();
		dt_post_one(qa, IBV_WR_SEND, (uint64_t)i, abuf, 64, amr->lkey,
			    NULL, 0, IBV_SEND_SIGNALED);
		st = next_stamped(sx, &ts, &wts);
		rst = next_stamped(rx, &rts, &rwts);
		t1 = raw_clock();
		w1 = wall_ns();
		CHECK_EQ(st, IBV_WC_SUCCESS);
		CHECK_EQ(rst, IBV_WC_SUCCESS);
		if (ts < t0 || ts > t1 || ts < prev || rts < t0 || rts > t1)
			DT_FAIL_(0, "completion %d: send stamp %" PRIu64
				 ", receive %" PRIu64 " outside [%" PRIu64
				 ", %" PRIu64 "] (previous %" PRIu64 ")", i,
				 ts, rts, t0, t1, prev);
		if (wts + slack_ns < w0 || wts > w1 + slack_ns ||
		    rwts + slack_ns < w0 || rwts > w1 + slack_ns)
			DT_FAIL_(0, "completion %d: wall-clock stamps %" PRIu64
				 " / %" PRIu64 " outside [%" PRIu64 ", %" PRIu64
				 "] +- %" PRIu64 " ns", i, wts, rwts, w0, w1,
				 slack_ns);
		prev = ts;
	}
	printf("completion timestamps: 8 sends and receives within their "
	       "windows, in order\n");
	CHECK_OK(ibv_destroy_qp(qa));
	CHECK_OK(ibv_destroy_qp(qb));
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(sx)));
	CHECK_OK(ibv_destroy_cq(ibv_cq_ex_to_cq(rx)));
	dt_cq_destroy(&ra);
	dt_cq_destroy(&sb);
}

int main(void)
{
	uint8_t *abuf = dt_alloc(1 << 16);
	struct ibv_mr *amr, *bmr;

	dt_watchdog(120);
	dt_init(&env, "test_verbs_more", NULL, NULL);
	A = &env.dev[0];
	B = &env.dev[1];
	amr = dt_reg_mr(A->pd, abuf, 1 << 16, DT_ACCESS_ALL);
	bmr = dt_reg_mr(B->pd, abuf, 1 << 16, DT_ACCESS_ALL);
	CHECK_PTR(amr);
	CHECK_PTR(bmr);
	channels(abuf, amr, bmr);
	resize(abuf, amr, bmr);
	rereg(abuf, amr);
	async_events(abuf, amr, bmr);
	rt_values();
	completion_timestamps(abuf, amr, bmr);
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	dt_fini(&env);
	free(abuf);
	printf("test_verbs_more: %s\n", dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}
