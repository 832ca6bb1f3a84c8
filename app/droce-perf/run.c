/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The measurement loops, after perftest's run_iter_bw, run_iter_bw_server,
 * run_iter_lat_write, run_iter_lat and run_iter_lat_send, written as
 * non-blocking steps: in --loopback one thread runs both ends (a client
 * step, then a server step, ...), in the two-process case one of them.
 *
 * Accounting differs from perftest in one way: every WR carries
 * (QP index, sequence number) in its wr_id, so a signalled completion
 * retires exactly the WRs up to it. Counts, bytes and per-QP rates are
 * therefore exact, whatever the CQ moderation.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <rte_cycles.h>
#include <rte_pause.h>

#include "droce.h"
#include "perf.h"

#define POLL_BATCH	16
#define STALL_SECS	10	/* no progress for this long: give up */
/* An unreliable send_bw server counting to -n: a SEND that found no
 * receive is lost for good (an unreliable sender outruns its receiver's
 * queue), so after the first one, this long without another ends the run
 * with what arrived (loopback: only once the local client is done, after
 * which what is still on the local link arrives within microseconds). */
#define UNREL_QUIET_SECS 1.0
#define UNREL_QUIET_LOOPBACK_SECS 0.1

static uint64_t cur_size;

volatile sig_atomic_t perf_stop;

/*
 * SIGINT/SIGTERM with --run_infinitely: the first asks the run to end as a
 * timed run does. Another within a second is the same request (coreutils'
 * timeout signals both the command and its process group, so a program
 * under it gets two at once); one later ends the process as usual.
 */
void perf_stop_handler(int sig)
{
	static struct timespec first;
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);	/* (async-signal-safe) */
	if (!perf_stop) {
		first = now;
		perf_stop = 1;
		return;
	}
	if ((now.tv_sec - first.tv_sec) * 1000 +
	    (now.tv_nsec - first.tv_nsec) / 1000000 >= 1000) {
		signal(sig, SIG_DFL);
		raise(sig);
	}
}

struct perf_cycles perf_cyc;

uint64_t perf_tsc(void)
{
	return rte_rdtsc();
}

double perf_tsc_hz(void)
{
	static double hz;

	if (hz == 0)
		hz = (double)rte_get_tsc_hz();
	return hz;
}

/* Duration mode windows (TSC). */
struct window {
	bool on;
	uint64_t start, sample, stop, end;
	uint64_t sample_t0, sample_t1;	/* actual first/last tick sampled */
	uint64_t gaps;			/* --latency_gap: waits between them */
	uint64_t period, next_print;	/* --run_infinitely (TSC) */
	uint64_t last_print, last_msgs;
};

static struct window win;

static void window_start(void)
{
	double hz = perf_tsc_hz();
	double margin = opt.margin >= 0 ? opt.margin : opt.duration / 4;

	memset(&win, 0, sizeof(win));
	if (opt.run_inf) {
		/* sampled from the start, no end but perf_stop */
		win.on = true;
		win.start = win.sample = win.last_print = perf_tsc();
		win.stop = win.end = UINT64_MAX;
		win.period = (uint64_t)(opt.duration * hz);
		win.next_print = win.start + win.period;
		return;
	}
	if (opt.duration <= 0)
		return;
	if (2 * margin >= opt.duration)
		margin = opt.duration / 4;
	win.on = true;
	win.start = perf_tsc();
	win.sample = win.start + (uint64_t)(margin * hz);
	win.stop = win.start + (uint64_t)((opt.duration - margin) * hz);
	win.end = win.start + (uint64_t)(opt.duration * hz);
	if (opt.cpu_util)
		cpu_util_begin(margin, opt.duration - margin);
}

static inline bool in_sample(uint64_t now)
{
	return win.on && now >= win.sample && now < win.stop;
}

static inline bool time_over(uint64_t now)
{
	return win.on && now >= win.end;
}

/* -------------------------------------------------------------- verbs */

/*
 * droce publishes a send queue's consumer index (sq_ci) after the CQEs of
 * the WQEs it retires, so a thread polling from another core can see a
 * completion and still find the slot taken: ibv_post_send() fails with
 * ENOMEM although the verbs contract says the slot is free. perftest would
 * stop there ("Couldn't post send"); we count it and try again, which
 * succeeds within nanoseconds. The count is reported (post_enomem=).
 */
uint64_t perf_post_enomem;

/*
 * perftest's default flow (its _new_post_send): one ibv_wr_start ..
 * ibv_wr_complete around the post list, each WR's fields set through the
 * builders. The batch is all or nothing: a full send queue (ENOMEM) leaves
 * nothing posted, so the whole list is tried again.
 */
static inline int post_wr_api(struct ibv_qp_ex *x, const struct ibv_send_wr *wr)
{
	ibv_wr_start(x);
	for (; wr; wr = wr->next) {
		const struct ibv_sge *g = wr->sg_list;

		x->wr_id = wr->wr_id;
		x->wr_flags = wr->send_flags;
		switch (wr->opcode) {
		case IBV_WR_SEND:
			ibv_wr_send(x);
			break;
		case IBV_WR_RDMA_WRITE:
			ibv_wr_rdma_write(x, wr->wr.rdma.rkey,
					  wr->wr.rdma.remote_addr);
			break;
		case IBV_WR_RDMA_READ:
			ibv_wr_rdma_read(x, wr->wr.rdma.rkey,
					 wr->wr.rdma.remote_addr);
			break;
		case IBV_WR_ATOMIC_FETCH_AND_ADD:
			ibv_wr_atomic_fetch_add(x, wr->wr.atomic.rkey,
						wr->wr.atomic.remote_addr,
						wr->wr.atomic.compare_add);
			break;
		case IBV_WR_ATOMIC_CMP_AND_SWP:
			ibv_wr_atomic_cmp_swp(x, wr->wr.atomic.rkey,
					      wr->wr.atomic.remote_addr,
					      wr->wr.atomic.compare_add,
					      wr->wr.atomic.swap);
			break;
		default:
			ibv_wr_abort(x);
			return EINVAL;
		}
		if (opt.conn == C_UD)	/* (SEND only: settle_opts) */
			ibv_wr_set_ud_addr(x, wr->wr.ud.ah, wr->wr.ud.remote_qpn,
					   wr->wr.ud.remote_qkey);
		if (wr->send_flags & IBV_SEND_INLINE)
			ibv_wr_set_inline_data(x, (void *)(uintptr_t)g->addr,
					       g->length);
		else
			ibv_wr_set_sge(x, g->lkey, g->addr, g->length);
	}
	return ibv_wr_complete(x);
}

static inline int do_post_send(struct perf_side *s, int q,
			       struct ibv_send_wr *wr)
{
	struct ibv_send_wr *bad = wr;
	uint64_t t0 = opt.cycles ? perf_tsc() : 0;
	int ret;

	for (int tries = 0;; tries++) {
		if (s->qpx)
			ret = post_wr_api(s->qpx[q], wr);
		else
			ret = ibv_post_send(s->qp[q], wr, &bad);
		if (ret != ENOMEM || bad != wr || tries >= 1000000)
			break;
		perf_post_enomem++;
		rte_pause();
	}
	if (opt.cycles)
		perf_cyc.post += perf_tsc() - t0;
	return ret;
}

/* A receive for QP q's buffer: on q, or on the end's SRQ (--use-srq). */
static inline int do_post_recv(struct perf_side *s, int q,
			       struct ibv_recv_wr *wr)
{
	struct ibv_recv_wr *bad;
	uint64_t t0 = opt.cycles ? perf_tsc() : 0;
	int ret = s->srq ? ibv_post_srq_recv(s->srq, wr, &bad) :
			   ibv_post_recv(s->qp[q], wr, &bad);

	if (opt.cycles)
		perf_cyc.post += perf_tsc() - t0;
	return ret;
}

/* completions polled so far: a loop turn that polled none may sleep (-e) */
static uint64_t polled_total;

static inline int do_poll(struct ibv_cq *cq, int n, struct ibv_wc *wc)
{
	int ret;

	if (!opt.cycles) {
		ret = ibv_poll_cq(cq, n, wc);
	} else {
		uint64_t t0 = perf_tsc();

		ret = ibv_poll_cq(cq, n, wc);
		perf_cyc.poll += perf_tsc() - t0;
		perf_cyc.polls++;
	}
	if (ret > 0)
		polled_total += (uint64_t)ret;
	return ret;
}

/*
 * -e: sleep until a CQ of these ends has an event; take it, ack it and arm
 * that CQ again, as perftest's ctx_notify_events. The loops call this only
 * after a turn that polled nothing, and poll after it: a CQE that came
 * before the new arm is found by that poll, one that came after it raises
 * an event, so nothing is slept through. One thread may run both ends
 * (loopback), hence poll(2) on every channel, not a blocking
 * ibv_get_cq_event on one; and a bounded sleep, so that the stall, quiet
 * and --run_infinitely checks still run.
 */
#define EVENT_WAIT_MS	20
uint64_t perf_events;

static int events_wait(struct perf_side *const *sides, int n)
{
	struct pollfd pfd[2];

	for (int i = 0; i < n; i++)
		pfd[i] = (struct pollfd){ .fd = sides[i]->ch->fd,
					  .events = POLLIN };
	if (poll(pfd, (nfds_t)n, EVENT_WAIT_MS) < 0)
		return errno == EINTR ? 0 : -1;
	for (int i = 0; i < n; i++) {
		struct ibv_cq *cq;
		void *cq_ctx;

		if (!(pfd[i].revents & POLLIN))
			continue;
		if (ibv_get_cq_event(sides[i]->ch, &cq, &cq_ctx)) {
			PERF_ERR("Failed to get cq_event\n");
			return -1;
		}
		ibv_ack_cq_events(cq, 1);
		perf_events++;
		if (ibv_req_notify_cq(cq, 0)) {
			PERF_ERR("Couldn't request CQ notification\n");
			return -1;
		}
	}
	return 0;
}

/* The distinct ends among a and b that have a channel (-e). */
static int event_sides(struct perf_side *a, struct perf_side *b,
		       struct perf_side *out[2])
{
	int n = 0;

	if (!opt.use_event)
		return 0;
	if (a)
		out[n++] = a;
	if (b && b != a)
		out[n++] = b;
	return n;
}

static void comp_error(struct perf_side *s, const struct ibv_wc *wc,
		       const char *what)
{
	if (s->errors++ == 0) {
		fprintf(stderr, " Completion with error at %s:\n", s->name);
		fprintf(stderr, " Failed status %d (%s): wr_id %d syndrom 0x%x (%s)\n",
			wc->status, ibv_wc_status_str(wc->status),
			(int)(wc->wr_id >> 32), wc->vendor_err, what);
	}
}

/* ----------------------------------------------------- WR templates */

void run_set_size(uint64_t size)
{
	cur_size = size;
}

uint64_t run_get_size(void)
{
	return cur_size;
}

static void set_send_wrs(struct perf_side *s)
{
	bool inl = (opt.verb == V_WRITE || opt.verb == V_SEND) &&
		   cur_size <= (uint64_t)s->max_inline &&
		   (int64_t)cur_size <= opt.inline_size;

	for (int q = 0; q < s->nqps; q++) {
		for (int k = 0; k < opt.post_list; k++) {
			int i = q * opt.post_list + k;
			struct ibv_send_wr *w = &s->wr[i];
			struct ibv_sge *g = &s->sge[i];

			memset(w, 0, sizeof(*w));
			g->addr = (uintptr_t)side_src(s, q);
			g->length = (uint32_t)(opt.verb == V_ATOMIC ? 8 : cur_size);
			g->lkey = side_lkey(s, q);
			w->sg_list = g;
			w->num_sge = 1;
			w->next = k + 1 < opt.post_list ? &s->wr[i + 1] : NULL;
			switch (opt.verb) {
			case V_SEND:
				w->opcode = IBV_WR_SEND;
				if (opt.conn == C_UD) {
					w->wr.ud.ah = s->ah[q];
					w->wr.ud.remote_qpn = s->rem[q].qpn;
					w->wr.ud.remote_qkey = PERF_UD_QKEY;
				}
				break;
			case V_WRITE:
				w->opcode = IBV_WR_RDMA_WRITE;
				w->wr.rdma.remote_addr = s->rem[q].vaddr;
				w->wr.rdma.rkey = s->rem[q].rkey;
				break;
			case V_READ:
				w->opcode = IBV_WR_RDMA_READ;
				w->wr.rdma.remote_addr = s->rem[q].vaddr;
				w->wr.rdma.rkey = s->rem[q].rkey;
				break;
			case V_ATOMIC:
				w->opcode = opt.atomic_type == A_FETCH_AND_ADD ?
					    IBV_WR_ATOMIC_FETCH_AND_ADD :
					    IBV_WR_ATOMIC_CMP_AND_SWP;
				w->wr.atomic.remote_addr = s->rem[q].vaddr;
				w->wr.atomic.rkey = s->rem[q].rkey;
				w->wr.atomic.compare_add =
					opt.atomic_type == A_FETCH_AND_ADD ? 1 : 0;
				w->wr.atomic.swap = 0;
				break;
			}
			if (inl)
				w->send_flags |= IBV_SEND_INLINE;
		}
	}
}

static int post_recvs(struct perf_side *s, int q, int n)
{
	/* The whole slot (the largest size and the GRH): a receive an
	 * unreliable run left posted serves the next, larger size of -a. */
	struct ibv_sge g = {
		.addr = (uintptr_t)side_dst(s, q),
		.length = (uint32_t)s->slot,
		.lkey = side_lkey(s, q),
	};
	struct ibv_recv_wr w = { .wr_id = (uint64_t)q, .sg_list = &g,
				 .num_sge = 1 };

	for (int i = 0; i < n; i++) {
		if (do_post_recv(s, q, &w)) {
			PERF_ERR("Couldn't post recv %s = %d: counter=%d\n",
				 s->srq ? "SRQ" : "Qp", q, i);
			return -1;
		}
		s->rst[q].rposted++;
	}
	return 0;
}

/* ------------------------------------------------------ bandwidth */

/* --rate_limit_type SW, perftest's: bursts of burst_size messages, each
 * started no sooner than gap cycles after the one before. */
struct bw_limiter {
	bool on;
	bool sending;			/* a burst under way */
	int iter;			/* its messages so far */
	uint64_t gap;			/* TSC cycles between burst starts */
	uint64_t deadline;		/* the next burst's earliest start */
};

struct bw_state {
	struct perf_side *s;
	struct bw_limiter rl;
	uint64_t iters;			/* per QP, 0 in duration mode */
	uint64_t tot;			/* iters * nqps */
	uint64_t totscnt, totccnt;
	uint64_t t_first, t_last;
	uint64_t sampled;		/* duration: completions in the window */
	uint64_t sample_t0, sample_t1;	/* first/last of them (TSC) */
	uint64_t sig_total;		/* sum over QPs of the last signalled seq */
	uint64_t last_progress;
	uint32_t stall_looks;		/* stalled() */
	int *ready;			/* FIFO of QPs with room to post */
	uint8_t *inq;
	int rhead, rtail, rcount;
	bool done;
	bool stopping;			/* duration: window over, draining */
	int closing;			/* QPs yet to post their closing WR */
};

static inline bool bw_can_post(const struct bw_state *b,
			       const struct perf_qpstat *st)
{
	/* draining, a QP whose last WRs went unsignalled may post one more
	 * (bw_client_stop) */
	return (!b->stopping || st->scnt > st->lastsig) &&
	       (win.on || st->scnt < b->iters) &&
	       st->scnt - st->ccnt + (uint64_t)opt.post_list <=
	       (uint64_t)opt.tx_depth;
}

static inline void bw_ready_push(struct bw_state *b, int q)
{
	if (b->inq[q])
		return;
	b->inq[q] = 1;
	b->ready[b->rtail] = q;
	if (++b->rtail == b->s->nqps)
		b->rtail = 0;
	b->rcount++;
}

static int bw_client_init(struct bw_state *b, struct perf_side *s)
{
	memset(b, 0, sizeof(*b));
	b->s = s;
	b->ready = calloc((size_t)s->nqps, sizeof(*b->ready));
	b->inq = calloc((size_t)s->nqps, 1);
	if (b->ready == NULL || b->inq == NULL) {
		free(b->ready);
		free(b->inq);
		return -1;
	}
	b->iters = win.on ? 0 : opt.iters;
	b->tot = b->iters * (uint64_t)s->nqps;
	memset(s->st, 0, sizeof(*s->st) * (size_t)s->nqps);
	set_send_wrs(s);
	if (s->tp && !win.on) {
		memset(s->tp, 0, sizeof(*s->tp) * s->tp_n);
		memset(s->tc, 0, sizeof(*s->tc) * s->tp_n);
	}
	b->last_progress = perf_tsc();
	for (int q = 0; q < s->nqps; q++)
		bw_ready_push(b, q);
	if (opt.rate_type == RL_SW) {
		/* the message rate (perftest's rate_limit_pps) */
		double pps = opt.rate_units == RU_MBPS ?
			     opt.rate_limit / (double)cur_size * 1048576 :
			     opt.rate_units == RU_GBPS ?
			     opt.rate_limit / ((double)cur_size * 8) * 1e9 :
			     opt.rate_limit;

		double gap = perf_tsc_hz() * opt.burst_size / pps;

		b->rl.on = true;
		/* a rate so low that its gap does not fit 2^62 cycles (over
		 * 50 years) sends its first burst and no other */
		b->rl.gap = gap < 0x1p62 ? (uint64_t)gap : UINT64_C(1) << 62;
	}
	return 0;
}

/* SW limiter: may a message be posted now? Starts a burst when its time
 * has come. */
static inline bool bw_rl_open(struct bw_limiter *rl, uint64_t now)
{
	if (!rl->on || rl->sending)
		return true;
	if (now < rl->deadline)
		return false;
	rl->deadline = now + rl->gap;
	rl->sending = true;
	rl->iter = 0;
	return true;
}

static void bw_client_fini(struct bw_state *b)
{
	free(b->ready);
	free(b->inq);
	b->ready = NULL;
	b->inq = NULL;
}

/*
 * Post what the window allows on the QPs that have room. Only those are
 * visited (a FIFO fed by completions), so 16384 QPs cost what 1 does per
 * message: the harness must not be what limits the rate.
 */
static int bw_client_post(struct bw_state *b, uint64_t now)
{
	struct perf_side *s = b->s;
	int pl = opt.post_list;
	int todo = b->rcount;

	while (todo-- > 0) {
		int q = b->ready[b->rhead];
		struct perf_qpstat *st = &s->st[q];
		struct ibv_send_wr *w = &s->wr[q * pl];

		if (!bw_rl_open(&b->rl, now))
			break;	/* between bursts: the QPs stay in line */
		if (++b->rhead == s->nqps)
			b->rhead = 0;
		b->rcount--;
		b->inq[q] = 0;
		while (bw_can_post(b, st)) {
			if (!bw_rl_open(&b->rl, now)) {
				bw_ready_push(b, q);	/* its turn comes again */
				break;
			}
			for (int j = 0; j < pl; j++) {
				uint64_t seq = st->scnt + (uint64_t)j + 1;

				w[j].wr_id = (uint64_t)q << 32 | (seq & 0xffffffff);
				/* perftest: every cq_mod-th, and the last one
				 * (the cq_mod-th since the last signalled is a
				 * multiple of cq_mod: that one comes only at
				 * the end; no division a post) */
				if (seq - st->lastsig == (uint64_t)opt.cq_mod ||
				    (!win.on && seq == b->iters) ||
				    (b->stopping && j == pl - 1)) {
					w[j].send_flags |= IBV_SEND_SIGNALED;
					b->sig_total += seq - st->lastsig;
					st->lastsig = seq;
				} else {
					w[j].send_flags &= ~(unsigned int)IBV_SEND_SIGNALED;
				}
			}
			if (s->tp && !win.on)
				for (int j = 0; j < pl; j++)
					s->tp[b->totscnt + (uint64_t)j] = now;
			if (st->scnt == 0)
				st->t_first = now;
			if (b->totscnt == 0)
				b->t_first = now;
			{
				int e = do_post_send(s, q, w);

				if (e) {
					PERF_ERR("Couldn't post send: qp %d scnt=%lu ccnt=%lu: %s\n", q,
						 (unsigned long)st->scnt, (unsigned long)st->ccnt, strerror(e));
					return -1;
				}
			}
			st->scnt += (uint64_t)pl;
			b->totscnt += (uint64_t)pl;
			if (b->stopping)
				b->closing--;
			if (b->rl.on && (b->rl.iter += pl) >= opt.burst_size)
				b->rl.sending = false;
			if (opt.cycles || (s->tp && !win.on))
				now = perf_tsc();
		}
	}
	return 0;
}

static int bw_client_poll(struct bw_state *b)
{
	struct perf_side *s = b->s;
	struct ibv_wc wc[POLL_BATCH];
	int ne = do_poll(s->scq, POLL_BATCH, wc);
	uint64_t now;

	if (ne < 0) {
		PERF_ERR("poll CQ failed %d\n", ne);
		return -1;
	}
	if (ne == 0)
		return 0;
	now = perf_tsc();
	b->last_progress = now;
	for (int i = 0; i < ne; i++) {
		int q = (int)(wc[i].wr_id >> 32);
		uint32_t seq = (uint32_t)wc[i].wr_id;
		struct perf_qpstat *st;
		uint64_t newly;

		if (wc[i].status != IBV_WC_SUCCESS || q < 0 || q >= s->nqps) {
			comp_error(s, &wc[i], "send CQ");
			return -1;
		}
		st = &s->st[q];
		newly = (uint64_t)(uint32_t)(seq - (uint32_t)st->ccnt);
		st->ccnt += newly;
		st->t_last = now;
		if (s->tc && !win.on)
			for (uint64_t j = 0; j < newly && b->totccnt + j < s->tp_n; j++)
				s->tc[b->totccnt + j] = now;
		b->totccnt += newly;
		if (bw_can_post(b, st))
			bw_ready_push(b, q);
		if (in_sample(now)) {
			if (b->sampled == 0)
				b->sample_t0 = now;
			b->sampled += newly;
			b->sample_t1 = now;
		}
	}
	b->t_last = now;
	return 0;
}

/*
 * Duration mode's end: no more posting, but a QP whose last WRs went
 * unsignalled (the tail after its last cq_mod-th) posts one signalled WR
 * more, past the window, so that the drain sees everything it posted
 * complete: --check's atomic counters then equal the completions, and
 * nothing is still in flight when the QPs go. (With a post list cq_mod
 * divides it: every list ends signalled, no tail.)
 */
static void bw_client_stop(struct bw_state *b)
{
	struct perf_side *s = b->s;

	b->stopping = true;
	b->rl.on = false;	/* the closing WRs wait for no burst */
	for (int q = 0; q < s->nqps; q++)
		if (s->st[q].scnt > s->st[q].lastsig) {
			b->closing++;
			bw_ready_push(b, q);
		}
}

static int bw_client_step(struct bw_state *b)
{
	uint64_t now = perf_tsc();

	if (b->done)
		return 0;
	if ((time_over(now) || perf_stop) && !b->stopping)
		bw_client_stop(b);
	/* waiting out our own limiter's gap is no stall (a burst a minute
	 * is a rate one may ask for) */
	if (b->rl.on && !b->rl.sending)
		b->last_progress = now;
	if (bw_client_post(b, now))
		return -1;
	if (b->totccnt < b->sig_total) {
		if (bw_client_poll(b))
			return -1;
	} else {
		side_drive(b->s);	/* app mode: nothing to poll, still turn */
	}
	/* duration mode stops posting at the end and waits for what it can
	 * see complete: everything up to each QP's last signalled WR */
	if (b->stopping ? b->closing == 0 && b->totccnt >= b->sig_total :
	    (!win.on && b->totccnt >= b->tot))
		b->done = true;
	return 0;
}

struct bw_server_state {
	struct perf_side *s;
	uint64_t iters, tot, rcnt;
	uint64_t t_first, t_last;
	uint64_t sampled;
	uint64_t sample_t0, sample_t1;
	uint64_t last_progress;
	uint32_t stall_looks;		/* stalled() */
	const bool *client_done;	/* loopback: the local client's flag */
	bool done;
};

static int bw_server_prepare(struct perf_side *s)
{
	/* an SRQ holds rx_depth for all the QPs (perftest's size_per_qp) */
	uint64_t per_qp = (uint64_t)opt.rx_depth / (s->srq ? (uint64_t)s->nqps : 1);

	if (!win.on && per_qp > opt.iters)
		per_qp = opt.iters;
	for (int q = 0; q < s->nqps; q++) {
		/* Receives an earlier size left posted (over UC and UD, SENDs
		 * that were lost; none over RC) count as posted for this one. */
		uint64_t left = s->rst[q].rposted > s->rst[q].rused ?
				s->rst[q].rposted - s->rst[q].rused : 0;

		memset(&s->rst[q], 0, sizeof(s->rst[q]));
		s->rst[q].rposted = left;
		if (per_qp > left && post_recvs(s, q, (int)(per_qp - left)))
			return -1;
	}
	return 0;
}

static void bw_server_init(struct bw_server_state *b, struct perf_side *s)
{
	memset(b, 0, sizeof(*b));
	b->s = s;
	b->iters = win.on ? 0 : opt.iters;
	b->tot = b->iters * (uint64_t)s->nqps;
	b->last_progress = perf_tsc();
}

/* One poll of the receive CQ, each receive counted and replaced; how many
 * it returned, or -1. */
static int bw_server_poll(struct bw_server_state *b, uint64_t *now_out)
{
	struct perf_side *s = b->s;
	struct ibv_wc wc[POLL_BATCH];
	int ne;
	uint64_t now;

	ne = do_poll(s->rcq, POLL_BATCH, wc);
	if (ne < 0) {
		PERF_ERR("Poll Receive CQ failed %d\n", ne);
		return -1;
	}
	*now_out = now = perf_tsc();
	if (ne > 0) {
		b->last_progress = now;
		if (b->rcnt == 0)
			b->t_first = now;
	}
	for (int i = 0; i < ne; i++) {
		/* q: the QP that received; slot: whose receive it took (the
		 * same QP's but with an SRQ), replaced in kind */
		int slot = (int)wc[i].wr_id;
		int q = s->srq ? side_qp_index(s, wc[i].qp_num) : slot;
		struct perf_qpstat *st;

		if (wc[i].status != IBV_WC_SUCCESS || q < 0 ||
		    slot < 0 || slot >= s->nqps) {
			comp_error(s, &wc[i], "receive CQ");
			return -1;
		}
		s->rst[slot].rused++;
		st = &s->rst[q];
		if (st->rcnt == 0)
			st->t_first = now;
		st->rcnt++;
		st->ccnt++;
		st->rbytes += wc[i].byte_len;
		st->t_last = now;
		b->rcnt++;
		if (in_sample(now)) {
			if (b->sampled == 0)
				b->sample_t0 = now;
			b->sampled++;
			b->sample_t1 = now;
		}
		if ((win.on && !time_over(now)) ||
		    s->rst[slot].rposted < b->iters)
			if (post_recvs(s, slot, 1))
				return -1;
	}
	if (ne > 0)
		b->t_last = now;
	return ne;
}

static int bw_server_step(struct bw_server_state *b)
{
	uint64_t now;
	int ne;

	if (b->done)
		return 0;
	/* Drain what is there, as perftest's server does (do ... while
	 * ne > 0; here until a batch comes back short): a server that
	 * replaced only one batch of receives per step, sharing its thread
	 * with a client that posts a send queue's worth (loopback, one
	 * app-driven engine), let its receive queue run dry, and RC paid
	 * RNR NAKs and their waits (0.77 M msg/s at 64 B against 3.2 M with
	 * the engine on its own lcore). */
	do {
		ne = bw_server_poll(b, &now);
		if (ne < 0)
			return -1;
	} while (ne == POLL_BATCH && (win.on || b->rcnt < b->tot));
	if (!win.on && b->rcnt >= b->tot)
		b->done = true;
	if (!win.on && !b->done && opt.conn != C_RC && b->rcnt > 0 &&
	    (b->client_done == NULL || *b->client_done) &&
	    now - b->last_progress >
	    (uint64_t)((opt.loopback ? UNREL_QUIET_LOOPBACK_SECS :
			UNREL_QUIET_SECS) * perf_tsc_hz())) {
		fprintf(stderr, " %" PRIu64 " of %" PRIu64 " SENDs arrived over %s"
			" (a SEND that finds no receive is lost for good)\n",
			b->rcnt, b->tot, opt.conn == C_UC ? "UC" : "UD");
		b->done = true;
	}
	if (win.on && time_over(now))
		b->done = true;
	/* --run_infinitely: once stopped and what the local sender toward
	 * this end sent has come in */
	if (perf_stop && (b->client_done == NULL || *b->client_done))
		b->done = true;
	return 0;
}

/* Looked at every STALL_LOOK_EVERY calls of a loop's own (*looks), or
 * every call with -e (a turn may sleep there): a TSC read, a call and a
 * double multiply in every turn of a spinning loop lengthened each spin,
 * and with it the latency tools' round trips (one thread running both
 * ends: 0.595 -> 0.525 us with the L_RECV and L_SEND reads below), for a
 * limit of seconds. */
#define STALL_LOOK_EVERY	1024
static int stalled(uint64_t last, uint32_t *looks, const char *who)
{
	static uint64_t limit;

	if (++*looks % STALL_LOOK_EVERY != 0 && !opt.use_event)
		return 0;
	if (limit == 0)
		limit = (uint64_t)(STALL_SECS * perf_tsc_hz());
	if (perf_tsc() - last > limit) {
		PERF_ERR("%s: no progress for %d s, giving up\n", who, STALL_SECS);
		return 1;
	}
	return 0;
}

/*
 * --run_infinitely: every period, a row of what completed in it (the
 * senders' WRs in this process, else the receives), as perftest's print
 * thread does; a remote -b end counts its own twice (perftest's
 * run_inf_bi_factor). A receiving end with no sender here learns that
 * the client ended its run from the exchange's socket: the client has
 * written its closing hand shake.
 */
static void inf_period(const struct bw_state *bc, int ns,
		       const struct bw_server_state *bs, int nr)
{
	uint64_t now = perf_tsc(), msgs = 0;

	if (now < win.next_print)
		return;
	for (int i = 0; i < ns; i++)
		msgs += bc[i].totccnt;
	for (int i = 0; ns == 0 && i < nr; i++)
		msgs += bs[i].rcnt;
	report_bw_period(msgs - win.last_msgs, now - win.last_print,
			 opt.duplex && !opt.loopback ? 2 : 1);
	win.last_msgs = msgs;
	win.last_print = now;
	win.next_print = now + win.period;
	if (ns == 0 && !opt.loopback && oob_peer_ready())
		perf_stop = 1;
}

static bool rl_between(const struct bw_state *bc, int ns)
{
	for (int i = 0; i < ns; i++)
		if (bc[i].rl.on && !bc[i].rl.sending && !bc[i].done)
			return true;
	return false;
}

/*
 * One bandwidth run. c and srv are the ends in this process (loopback: both;
 * two processes: one, the other NULL). The client sends; the server, in
 * send_bw, receives. With -b both ends send, and in send_bw both receive,
 * all in this thread, a step of each in turn.
 */
int run_bw(struct perf_side *c, struct perf_side *srv)
{
	struct bw_state bc[2];
	struct bw_server_state bs[2];
	struct perf_side *snd[2], *rcv[2], *ev[2];
	int ns = 0, nr = 0, nev = event_sides(c, srv, ev), ret = -1;
	uint64_t t_begin;

	if (c)
		snd[ns++] = c;
	if (srv && opt.duplex)
		snd[ns++] = srv;
	if (opt.verb == V_SEND) {
		if (srv)
			rcv[nr++] = srv;
		if (c && opt.duplex)
			rcv[nr++] = c;
	}
	window_start();
	for (int i = 0; i < ns; i++) {
		memset(&snd[i]->res_send, 0, sizeof(snd[i]->res_send));
		if (bw_client_init(&bc[i], snd[i])) {
			PERF_ERR("out of memory\n");
			while (i-- > 0)
				bw_client_fini(&bc[i]);
			return -1;
		}
	}
	for (int i = 0; i < nr; i++) {
		memset(&rcv[i]->res_recv, 0, sizeof(rcv[i]->res_recv));
		bw_server_init(&bs[i], rcv[i]);
		/* loopback: quiet (UC/UD) only counts once the sender toward
		 * this end is done */
		for (int j = 0; j < ns; j++)
			if (snd[j] != rcv[i])
				bs[i].client_done = &bc[j].done;
	}
	t_begin = perf_tsc();
	cpu_start();
	for (;;) {
		bool all_done = true;
		uint64_t polled = polled_total;

		for (int i = 0; i < ns; i++) {
			if (bc[i].done)
				continue;
			all_done = false;
			if (bw_client_step(&bc[i]) ||
			    (!bc[i].done && stalled(bc[i].last_progress,
						    &bc[i].stall_looks, snd[i]->name)))
				goto out;
		}
		for (int i = 0; i < nr; i++) {
			if (bs[i].done)
				continue;
			all_done = false;
			if (bw_server_step(&bs[i]) ||
			    (!bs[i].done && stalled(bs[i].last_progress,
						    &bs[i].stall_looks, rcv[i]->name)))
				goto out;
		}
		/* a passive end (a WRITE/READ/atomic server without -b) has
		 * nothing to run: its engine answers by itself */
		if (all_done)
			break;
		if (opt.run_inf)
			inf_period(bc, ns, bs, nr);
		/* (a SW limiter between bursts waits busy, as perftest's
		 * loop does: nothing may be in flight to wake it) */
		if (nev && polled_total == polled && !rl_between(bc, ns) &&
		    events_wait(ev, nev))
			goto out;
	}
	ret = 0;
	if (perf_stop)
		perf_stop = 2;
out:
	perf_cyc.total = perf_tsc() - t_begin;
	cpu_stop();
	cpu_util_end();
	for (int i = 0; i < ns; i++) {
		struct perf_run_result *r = &snd[i]->res_send;

		r->msgs = win.on ? bc[i].sampled : bc[i].totccnt;
		r->t0 = win.on ? bc[i].sample_t0 : bc[i].t_first;
		r->t1 = win.on ? bc[i].sample_t1 : bc[i].t_last;
		r->all_msgs = bc[i].totccnt;
		bw_client_fini(&bc[i]);
	}
	for (int i = 0; i < nr; i++) {
		struct perf_run_result *r = &rcv[i]->res_recv;

		r->msgs = win.on ? bs[i].sampled : bs[i].rcnt;
		r->t0 = win.on ? bs[i].sample_t0 : bs[i].t_first;
		r->t1 = win.on ? bs[i].sample_t1 : bs[i].t_last;
		r->all_msgs = bs[i].rcnt;
	}
	return ret;
}

int run_bw_prepare_server(struct perf_side *s)
{
	return bw_server_prepare(s);
}

/* The figures reported for an end: of its sends when it sends (latency:
 * always), else of its receives. */
const struct perf_run_result *run_result(const struct perf_side *s)
{
	return side_sends(s) ? &s->res_send : &s->res_recv;
}

/* -------------------------------------------------------- latency */

enum lat_phase { L_RECV, L_GAP, L_SEND, L_CQE, L_DONE };

struct lat_state {
	struct perf_side *s;
	bool server;
	enum lat_phase ph;
	uint64_t scnt, ccnt, rcnt;
	uint64_t iters;
	volatile uint8_t *poll_buf;
	uint8_t *post_buf;
	bool wait_cqe;			/* send_lat: this send was signalled */
	uint64_t last_progress;
	uint32_t stall_looks;		/* stalled() */
	uint32_t recv_spins;		/* L_RECV: a TSC read every 64 */
	uint64_t sampled;		/* duration mode */
	int size_per_qp;		/* send_lat: receives kept posted */
	/* --latency_gap, the client's: a wait before each round trip,
	 * taken out of the samples (perftest's stay in its figures) */
	uint64_t gap_cycles;
	uint64_t gap_start;
	uint64_t gap_spent;		/* all gaps so far */
};

static void lat_init(struct lat_state *l, struct perf_side *s, bool server)
{
	memset(l, 0, sizeof(*l));
	l->s = s;
	l->server = server;
	l->iters = win.on ? UINT64_MAX : opt.iters;
	l->poll_buf = side_dst(s, 0) + cur_size - 1;
	l->post_buf = side_src(s, 0) + cur_size - 1;
	l->last_progress = perf_tsc();
	if (!server && opt.latency_gap > 0)
		l->gap_cycles = (uint64_t)(opt.latency_gap * perf_tsc_hz() / 1e6);
	set_send_wrs(s);
	s->wr[0].wr_id = 0;
	s->wr[0].next = NULL;
	if (opt.verb == V_WRITE || opt.verb == V_READ || opt.verb == V_ATOMIC)
		s->wr[0].send_flags |= IBV_SEND_SIGNALED;
	else
		s->wr[0].send_flags &= ~(unsigned int)IBV_SEND_SIGNALED;
	s->lat_n = 0;
	/* who waits first: write_lat's client, send_lat's server; read and
	 * atomic latency only ever send */
	if (opt.verb == V_WRITE)
		l->ph = server ? L_SEND : L_RECV;
	else if (opt.verb == V_SEND)
		l->ph = server ? L_RECV : L_SEND;
	else
		l->ph = L_SEND;
}

static bool lat_more_recv(const struct lat_state *l)
{
	return l->rcnt < l->iters;
}

static int lat_step(struct lat_state *l)
{
	struct perf_side *s = l->s;
	struct ibv_wc wc;
	uint64_t now;
	int ne;

	switch (l->ph) {
	case L_RECV:
		/* (the window's end is looked for every 64th spin: what
		 * arrives is timed at L_SEND, this only ends the wait of a
		 * peer that stopped sending) */
		if (win.on && ++l->recv_spins % 64 == 0 &&
		    time_over(perf_tsc())) {
			l->ph = L_DONE;
			return 0;
		}
		if (opt.verb == V_WRITE) {
			if (*l->poll_buf != (uint8_t)(l->rcnt + 1)) {
				side_drive(s);
				return 0;
			}
		} else {
			ne = do_poll(s->rcq, 1, &wc);
			if (ne < 0)
				return -1;
			if (ne == 0)
				return 0;
			if (wc.status != IBV_WC_SUCCESS) {
				comp_error(s, &wc, "receive CQ");
				return -1;
			}
			/* keep rx_depth posted while more will come */
			if (win.on || l->rcnt + 1 + (uint64_t)l->size_per_qp <=
				      l->iters)
				if (post_recvs(s, 0, 1))
					return -1;
		}
		l->rcnt++;
		l->ph = l->scnt < l->iters ? L_SEND : L_DONE;
		if (l->ph == L_DONE)
			return 0;
		/* fall through */
	case L_SEND:
		/* (the round trip's one TSC read: progress is stamped here,
		 * for what came in and for the CQE that completes this send) */
		now = perf_tsc();
		l->last_progress = now;
		if (time_over(now)) {
			l->ph = L_DONE;
			return 0;
		}
		if (l->gap_cycles) {
			l->gap_start = now;
			l->ph = L_GAP;
			return 0;
		}
	send:
		if (!win.on)
			s->tposted[l->scnt] = now - l->gap_spent;
		else if (in_sample(now)) {
			if (l->sampled == 0)
				win.sample_t0 = now;
			else if (l->gap_cycles)
				win.gaps += now - l->gap_start;
			l->sampled++;
			win.sample_t1 = now;
		}
		if (opt.verb == V_WRITE)
			*l->post_buf = (uint8_t)(l->scnt + 1);
		l->scnt++;
		l->wait_cqe = true;
		if (opt.verb == V_SEND) {
			/* perftest: signal every cq_mod-th and the last */
			l->wait_cqe = l->scnt % (uint64_t)opt.cq_mod == 0 ||
				      (!win.on && l->scnt == l->iters);
			if (l->wait_cqe)
				s->wr[0].send_flags |= IBV_SEND_SIGNALED;
			else
				s->wr[0].send_flags &= ~(unsigned int)IBV_SEND_SIGNALED;
		}
		if (do_post_send(s, 0, &s->wr[0])) {
			PERF_ERR("Couldn't post send: scnt=%lu\n",
				 (unsigned long)l->scnt);
			return -1;
		}
		l->ph = l->wait_cqe ? L_CQE : L_RECV;
		if (!l->wait_cqe)
			goto next;
		/* fall through */
	case L_CQE:
		ne = do_poll(s->scq, 1, &wc);
		if (ne < 0)
			return -1;
		if (ne == 0)
			return 0;
		if (wc.status != IBV_WC_SUCCESS) {
			comp_error(s, &wc, "send CQ");
			return -1;
		}
		l->ccnt = l->scnt;
	next:
		if (opt.verb == V_READ || opt.verb == V_ATOMIC)
			l->ph = l->scnt < l->iters ? L_SEND : L_DONE;
		else
			l->ph = lat_more_recv(l) ? L_RECV :
				(l->scnt < l->iters ? L_SEND : L_DONE);
		/* the last send of send_lat was signalled: its CQE is in */
		return 0;
	case L_GAP:
		now = perf_tsc();
		if (time_over(now)) {
			l->ph = L_DONE;
			return 0;
		}
		if (now - l->gap_start < l->gap_cycles)
			return 0;
		l->gap_spent += now - l->gap_start;
		l->last_progress = now;
		l->ph = L_SEND;
		goto send;
	case L_DONE:
		return 0;
	}
	return 0;
}

int run_lat(struct perf_side *c, struct perf_side *srv)
{
	struct lat_state lc, ls;
	bool srv_active = srv && (opt.verb == V_WRITE || opt.verb == V_SEND);
	struct perf_side *ev[2];
	int nev = event_sides(c, srv_active ? srv : NULL, ev);
	uint64_t t_begin;

	window_start();
	if (c)
		lat_init(&lc, c, false);
	if (srv_active)
		lat_init(&ls, srv, true);
	if (opt.verb == V_SEND) {
		/* receives for this size, as perftest's ctx_set_recv_wqes */
		int per = opt.rx_depth;

		if (!win.on && (uint64_t)per > opt.iters)
			per = (int)opt.iters;
		if (c) {
			lc.size_per_qp = per;
			memset(c->st, 0, sizeof(*c->st));
		}
		if (srv_active) {
			ls.size_per_qp = per;
			memset(srv->st, 0, sizeof(*srv->st));
		}
	}
	t_begin = perf_tsc();
	cpu_start();
	for (;;) {
		bool cd = !c || lc.ph == L_DONE;
		bool sd = !srv_active || ls.ph == L_DONE;
		uint64_t polled = polled_total;

		if (cd && sd)
			break;
		if (c && lc.ph != L_DONE) {
			if (lat_step(&lc))
				return -1;
			if (stalled(lc.last_progress, &lc.stall_looks, "client"))
				return -1;
		}
		if (srv_active && ls.ph != L_DONE) {
			if (lat_step(&ls))
				return -1;
			if (stalled(ls.last_progress, &ls.stall_looks, "server"))
				return -1;
		}
		if (!c && !srv_active)
			break;
		/* the gap is a busy wait, as perftest's: a sleep on the
		 * channels now (nothing in flight) would last its 20 ms */
		if (nev && polled_total == polled && !(c && lc.ph == L_GAP) &&
		    events_wait(ev, nev))
			return -1;
	}
	perf_cyc.total = perf_tsc() - t_begin;
	cpu_stop();
	cpu_util_end();
	if (c)
		c->res_send.all_msgs = lc.scnt;
	if (srv)
		srv->res_send.all_msgs = srv_active ? ls.scnt : 0;
	if (c) {
		c->lat_n = win.on ? lc.sampled : lc.scnt;
		c->st[0].scnt = lc.scnt;
		c->st[0].ccnt = lc.ccnt;
		c->st[0].rcnt = lc.rcnt;
	}
	if (srv_active) {
		srv->lat_n = win.on ? ls.sampled : ls.scnt;
		srv->st[0].scnt = ls.scnt;
		srv->st[0].ccnt = ls.ccnt;
		srv->st[0].rcnt = ls.rcnt;
	}
	return 0;
}

void run_lat_window(uint64_t *t0, uint64_t *t1)
{
	*t0 = win.sample_t0;
	*t1 = win.sample_t1 - win.gaps;
}

/* send_lat posts its receives before the hand shake that starts a size. */
int run_lat_prepare_recv(struct perf_side *s)
{
	int per = opt.rx_depth;

	if (opt.duration <= 0 && (uint64_t)per > opt.iters)
		per = (int)opt.iters;
	s->st[0].rposted = 0;
	return post_recvs(s, 0, per);
}

/* --------------------------------------------------------- checks */

/*
 * --check: what the peer's memory must hold after the run, and whether
 * the counts add up. Loopback checks both ends; a remote run checks what
 * this end can see (a SEND server: bytes received; an atomic responder:
 * its counters). With -b each end is checked as sender and as receiver.
 */

/* x sent to y (NULL: y is remote). */
static int check_sender(const struct perf_side *x, const struct perf_side *y,
			uint64_t want_msgs, uint64_t sz)
{
	int bad = 0;

	for (int q = 0; q < x->nqps; q++) {
		const struct perf_qpstat *st = &x->st[q];

		if (opt.tst == T_BW && want_msgs && st->ccnt != want_msgs) {
			printf(" check: %s QP %d completed %lu of %lu\n", x->name,
			       q, (unsigned long)st->ccnt,
			       (unsigned long)want_msgs);
			bad++;
		}
		if (!y)
			continue;
		switch (opt.verb) {
		case V_WRITE:
			if (memcmp(side_src(x, q), side_dst(y, q), sz)) {
				printf(" check: WRITE data of %s QP %d differs\n",
				       x->name, q);
				bad++;
			}
			break;
		case V_READ:
			if (memcmp(side_src(x, q), side_dst(y, q), sz)) {
				printf(" check: READ data of %s QP %d differs\n",
				       x->name, q);
				bad++;
			}
			break;
		case V_SEND:
			if (memcmp(side_src(x, q),
				   side_dst(y, q) + perf_recv_off(), sz)) {
				printf(" check: SEND data of %s QP %d differs\n",
				       x->name, q);
				bad++;
			}
			break;
		case V_ATOMIC:
			if (opt.atomic_type == A_FETCH_AND_ADD) {
				uint64_t v, r;

				memcpy(&v, side_dst(y, q), 8);
				memcpy(&r, side_src(x, q), 8);
				if (v != st->ccnt || (st->ccnt && r != st->ccnt - 1)) {
					printf(" check: %s QP %d counter %lu, fetched %lu, after %lu FETCH_AND_ADDs\n",
					       x->name, q, (unsigned long)v,
					       (unsigned long)r,
					       (unsigned long)st->ccnt);
					bad++;
				}
			}
			break;
		}
	}
	return bad;
}

/* What a send_bw receiver counted. */
static int check_receiver(const struct perf_side *y, uint64_t want_msgs)
{
	int bad = 0;

	for (int q = 0; q < y->nqps; q++) {
		const struct perf_qpstat *st = &y->rst[q];

		/* (a UD receive counts the GRH's 40 bytes too; over UC and
		 * UD a SEND that found no receive is lost, so fewer may
		 * arrive, but some must) */
		bool count_bad = opt.conn == C_RC ?
			want_msgs && st->rcnt != want_msgs :
			st->rcnt == 0 || (want_msgs && st->rcnt > want_msgs);

		if (count_bad ||
		    st->rbytes != st->rcnt * (cur_size + perf_recv_off())) {
			printf(" check: %s QP %d received %lu messages, %lu bytes (want %lu x %lu)\n",
			       y->name, q, (unsigned long)st->rcnt,
			       (unsigned long)st->rbytes,
			       (unsigned long)want_msgs,
			       (unsigned long)cur_size);
			bad++;
		}
	}
	return bad;
}

int run_check(struct perf_side *c, struct perf_side *srv)
{
	int bad = 0;
	uint64_t want_msgs = opt.duration > 0 ? 0 : opt.iters;
	uint64_t sz = opt.verb == V_ATOMIC ? 8 : cur_size;

	if (c)
		bad += check_sender(c, srv, want_msgs, sz);
	if (srv && opt.duplex && opt.tst == T_BW)
		bad += check_sender(srv, c, want_msgs, sz);
	if (opt.verb == V_SEND && opt.tst == T_BW) {
		if (srv)
			bad += check_receiver(srv, want_msgs);
		if (c && opt.duplex)
			bad += check_receiver(c, want_msgs);
	}
	if (c && c->errors)
		bad++;
	if (srv && srv->errors)
		bad++;
	return bad;
}
