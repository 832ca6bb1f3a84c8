/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The engine: one poll loop per lcore over its devices. Per iteration:
 * receive (responder and completer run inline), take rung doorbells, give
 * each active QP a bounded budget of packets, flush tx, run due timers, and
 * serve at most one control-path call. Idle QPs cost nothing: only QPs on
 * the active or timer lists are visited. An idle engine backs off into
 * short sleeps so a 2-core machine stays usable; a post or a control call
 * that finds it asleep wakes it (engine_wake).
 */
#include <assert.h>
#include <errno.h>
#include <pthread.h>
#include <time.h>
#include <unistd.h>
#include <linux/futex.h>
#include <linux/membarrier.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include <rte_eal.h>
#include <rte_launch.h>
#include <rte_lcore.h>
#include <rte_malloc.h>
#include <rte_pause.h>

#include "eth_int.h"

static struct droce_engine *engines[RTE_MAX_LCORE];
static struct droce_engine *app_engine;
static pthread_mutex_t eng_lock = PTHREAD_MUTEX_INITIALIZER;

/* -------------------------------------------------------- QP lists */

static inline bool resp_owed(const struct droce_qp *qp)
{
	return (qp->flags & DROCE_QPF_ACK_PENDING) || qp->rd_head != qp->rd_tail;
}

/*
 * Two FIFO lists of QPs with something to transmit. A QP owing its peer
 * an ACK or READ/atomic responses goes on the responder list, served
 * first each iteration: what the responder sends frees the peer's send
 * queue and stops its ACK timer, while requests can wait. A QP can be on
 * both lists; a visit from either serves both sides. `resp` picks the
 * list: its head, tail, the flag that says a QP is on it, the link.
 */
static inline struct droce_qp **list_head(struct droce_engine *eng, bool resp)
{
	return resp ? &eng->resp_head : &eng->active_head;
}

static inline struct droce_qp **list_tail(struct droce_engine *eng, bool resp)
{
	return resp ? &eng->resp_tail : &eng->active_tail;
}

static inline uint32_t list_flag(bool resp)
{
	return resp ? DROCE_QPF_ON_RESP : DROCE_QPF_ON_ACTIVE;
}

static inline struct droce_qp **qp_next(struct droce_qp *qp, bool resp)
{
	return resp ? &qp->resp_next : &qp->active_next;
}

static void list_append(struct droce_engine *eng, struct droce_qp *qp,
			bool resp)
{
	struct droce_qp **tailp = list_tail(eng, resp);

	if (qp->flags & list_flag(resp))
		return;
	qp->flags |= list_flag(resp);
	*qp_next(qp, resp) = NULL;
	if (*tailp)
		*qp_next(*tailp, resp) = qp;
	else
		*list_head(eng, resp) = qp;
	*tailp = qp;
}

/* Off the list (a linear walk: QP teardown only). */
static void list_remove(struct droce_engine *eng, struct droce_qp *qp,
			bool resp)
{
	struct droce_qp **pp, *prev = NULL;

	if (!(qp->flags & list_flag(resp)))
		return;
	for (pp = list_head(eng, resp); *pp;
	     prev = *pp, pp = qp_next(*pp, resp)) {
		if (*pp == qp) {
			*pp = *qp_next(qp, resp);
			if (*list_tail(eng, resp) == qp)
				*list_tail(eng, resp) = prev;
			break;
		}
	}
	qp->flags &= ~list_flag(resp);
}

void eth_qp_activate(struct droce_engine *eng, struct droce_qp *qp)
{
	list_append(eng, qp, resp_owed(qp));
}

/* The earliest thing a QP's timer must wake it for, or 0. */
static inline uint64_t qp_deadline(const struct droce_qp *qp)
{
	uint64_t d = qp->req_timer_tsc;

	if ((qp->flags & DROCE_QPF_ARP_WAIT) && (d == 0 || qp->arp_poll_tsc < d))
		d = qp->arp_poll_tsc;
	return d;
}

static_assert(DROCE_MAX_QP <= 1u << ETH_TCELL_QP_BITS &&
	      DROCE_MAX_DEVS << ETH_TCELL_QP_BITS < ETH_TCELL_HEAD,
	      "a cell id holds every device's every QP");

static void wheel_link(struct droce_engine *eng, uint32_t id,
		       struct eth_tcell *c, uint32_t tick)
{
	uint32_t slot = tick & (ETH_WHEEL_SLOTS - 1);

	c->next = eng->wheel[slot];
	c->prev = ETH_TCELL_HEAD | slot;
	if (c->next != ETH_TCELL_NIL)
		eth_tcell(eng, c->next)->prev = id;
	eng->wheel[slot] = id;
	c->filed = tick;
	c->due = tick;
}

static void wheel_unlink(struct droce_engine *eng, struct droce_qp *qp)
{
	struct eth_tcell *c = eth_tcell(eng, eth_tcell_id(qp));

	if (c->prev & ETH_TCELL_HEAD)
		eng->wheel[c->prev & ~ETH_TCELL_HEAD] = c->next;
	else
		eth_tcell(eng, c->prev)->next = c->next;
	if (c->next != ETH_TCELL_NIL)
		eth_tcell(eng, c->next)->prev = c->prev;
	qp->flags &= ~DROCE_QPF_ON_TIMER;
}

void eth_qp_timer_arm(struct droce_engine *eng, struct droce_qp *qp)
{
	uint64_t d = qp_deadline(qp);
	uint32_t id, tick;
	struct eth_tcell *c;

	if (d == 0)
		return;
	tick = (uint32_t)RTE_MAX(d >> eng->tick_shift, eng->wheel_tick + 1);
	id = eth_tcell_id(qp);
	c = eth_tcell(eng, id);
	if (qp->flags & DROCE_QPF_ON_TIMER) {
		if ((int32_t)(tick - c->filed) >= 0) {
			c->due = tick;	/* its slot's sweep moves it there */
			return;
		}
		wheel_unlink(eng, qp);
	}
	wheel_link(eng, id, c, tick);
	qp->flags |= DROCE_QPF_ON_TIMER;
}

void eth_qp_arp_wait(struct droce_engine *eng, struct droce_qp *qp)
{
	if (!(qp->flags & DROCE_QPF_ARP_WAIT)) {
		qp->flags |= DROCE_QPF_ARP_WAIT;
		qp->arp_next = eng->arp_wait;
		eng->arp_wait = qp;
	}
	qp->arp_poll_tsc = eth_now() + eng->tsc_hz / 1000000 * ETH_ARP_POLL_US;
	eth_qp_timer_arm(eng, qp);
}

void eth_qp_arp_done(struct droce_engine *eng, struct droce_qp *qp)
{
	struct droce_qp **pp;

	if (!(qp->flags & DROCE_QPF_ARP_WAIT))
		return;
	qp->flags &= ~DROCE_QPF_ARP_WAIT;
	for (pp = &eng->arp_wait; *pp; pp = &(*pp)->arp_next)
		if (*pp == qp) {
			*pp = qp->arp_next;
			break;
		}
}

static void unlink_qp(struct droce_engine *eng, struct droce_qp *qp)
{
	list_remove(eng, qp, false);
	list_remove(eng, qp, true);
	if (qp->flags & DROCE_QPF_ON_TIMER)
		wheel_unlink(eng, qp);
	eth_pace_unlink(eng, qp);
	eth_qp_arp_done(eng, qp);
}

/* ---------------------------------------------------------- doorbells */

/* (from the post path's own line: the verbs object's first line, where
 * qp_num lives, stays cold) */
static inline uint32_t db_token(const struct droce_qp *qp)
{
	return qp->dev->index << 24 | qp->sq_ctrl_qpn >> 8;
}

/*
 * Wake an lcore engine asleep in its idle back-off, once: whoever clears
 * `asleep` makes the system call. A system call on the post path, but
 * only on a post that finds the engine asleep, i.e. the first after a
 * pause (as a virtio driver kicks only a device that asked for it).
 * Without a fence between the caller's doorbell store and this load, a
 * wake can be missed when the engine goes to sleep at that very moment:
 * it then sleeps out its period, as it did before there were wakes.
 */
static inline void engine_wake(struct droce_engine *eng)
{
	if (unlikely(__atomic_load_n(&eng->asleep, __ATOMIC_RELAXED)) &&
	    __atomic_exchange_n(&eng->asleep, 0, __ATOMIC_RELAXED)) {
		(void)syscall(SYS_futex, &eng->asleep, FUTEX_WAKE_PRIVATE, 1,
			      NULL, NULL, 0);
		__atomic_fetch_add(&eng->wakes, 1, __ATOMIC_RELAXED);
	}
}

/*
 * The doorbell's fast path. A post stores sq_db, then rings: the locked
 * exchange on db_pending below (~3 % of a 64 B WRITE's rate over memif,
 * phase A/B, forty-fourth round) is the store-load fence that keeps a
 * draining thread (db_pending cleared, then sq_db read) from missing it.
 * While a doorbell is already pending the exchange only says so again,
 * and the fence matters only to a drain in another thread: a drain in
 * the posting thread sees its own store in program order. So the app
 * engine's fast poster (the thread that drives it) skips the exchange
 * while db_pending is set, and every other thread that drains, the
 * keeper or another application thread, issues a membarrier between
 * clearing db_pending and reading sq_db (drain_doorbells), which puts a
 * full fence into the poster's program at some point B: a post whose
 * read of db_pending came before B had stored sq_db before B, and its
 * store is visible when the membarrier returns; one that reads after B
 * finds db_pending clear and takes the exchange. A thread other than
 * the fast poster that drives the engine is made the fast poster
 * (eth_fast_take: a membarrier as well, so the old one's posts are seen
 * or take the exchange); after ETH_FAST_MOVES moves, and where
 * membarrier cannot be registered, nobody is.
 */
static inline uintptr_t self_id(void)
{
	/* The thread pointer, one load where pthread_self() is a call
	 * through the PLT: each post asks. Unique among live threads as
	 * pthread_self() is (glibc's pthread_t is that very pointer). */
	return (uintptr_t)__builtin_thread_pointer();
}

static void eth_fast_fence(struct droce_engine *eng)
{
	if (syscall(SYS_membarrier, MEMBARRIER_CMD_PRIVATE_EXPEDITED, 0, 0) != 0) {
		/* Registered, so not expected: stop skipping, and order this
		 * drain as best a fence here can. */
		__atomic_store_n(&eng->fast_poster, 0, __ATOMIC_SEQ_CST);
		eng->fast_ok = false;
		DROCE_LOG(ERR, "membarrier failed (%d): doorbells take the exchange from now on",
			  errno);
	}
}

/* Under app_lock: the driving thread becomes the fast poster. */
static void eth_fast_take(struct droce_engine *eng, uintptr_t self)
{
	uintptr_t old = eng->fast_poster;

	if (eng->fast_moves >= ETH_FAST_MOVES) {
		/* Threads take turns driving: the exchange for everyone. */
		eng->fast_ok = false;
		self = 0;
	}
	eng->fast_moves++;
	__atomic_store_n(&eng->fast_poster, self, __ATOMIC_SEQ_CST);
	if (old)
		eth_fast_fence(eng);
}

static void eth_qp_notify(struct droce_qp *qp)
{
	/* (sq_db's store before the loads: B above must not fall between
	 * them in the program's order) */
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	if (__atomic_load_n(&qp->eng->fast_poster, __ATOMIC_RELAXED) == self_id() &&
	    __atomic_load_n(&qp->db_pending, __ATOMIC_RELAXED)) {
		/* (one writer: the fast poster) */
		__atomic_store_n(&qp->eng->db_skips, qp->eng->db_skips + 1,
				 __ATOMIC_RELAXED);
		return;
	}
	/* One ring entry per QP at most: the ring never overflows. */
	if (__atomic_exchange_n(&qp->db_pending, 1, __ATOMIC_SEQ_CST) == 0) {
		rte_ring_mp_enqueue(qp->eng->db_ring,
				    (void *)(uintptr_t)db_token(qp));
		engine_wake(qp->eng);
		/*
		 * An app engine with many QPs (cold at each visit): this
		 * thread drives it and reaches the QP a few posts later, so
		 * ask now for the WQE state slots its sends will write (the
		 * engine's own look-ahead needs other QPs queued behind this
		 * one, and a program posting QP by QP rarely has them).
		 * Phase A/B at 16384 QPs (-t 16) on an Intel Xeon: frames
		 * +7.3 %, completions +10 %; 1024 QPs +0.7 %
		 * (doc/performance.md, fifty-first round). Not for an lcore
		 * engine: the lines would come to the wrong core.
		 */
		if (qp->eng->lcore < 0 && qp->eng->prefetch)
			eth_qp_prefetch_slots(qp, __atomic_load_n(&qp->req_cur,
					      __ATOMIC_RELAXED), ETH_DB_SLOTS_AHEAD);
	}
}

static int drain_doorbells(struct droce_engine *eng)
{
	void *tok[ETH_DB_BURST];
	struct droce_qp *qps[ETH_DB_BURST];
	unsigned int n = rte_ring_sc_dequeue_burst(eng->db_ring, tok,
						   ETH_DB_BURST, NULL);

	/* First the QPs, their lines asked for: with thousands of QPs each
	 * is cold, and a burst's misses overlap instead of following one
	 * another. */
	for (unsigned int i = 0; i < n; i++) {
		uint32_t t = (uint32_t)(uintptr_t)tok[i];
		uint32_t di = t >> 24;

		struct droce_dev *dev = droce_dev_at(di);

		/* A destroyed QP is gone from the table, a destroyed device
		 * from its slot: nothing to do. */
		qps[i] = dev ? droce_qp_lookup(dev, t & ROCE_QPN_MASK) : NULL;
		if (qps[i] && eng->prefetch) {
			rte_prefetch0(&qps[i]->dev);
			rte_prefetch0(&qps[i]->sq_db);
			rte_prefetch0(&qps[i]->flags);
		}
	}
	/* Not the fast poster's thread: its posts may have skipped the
	 * exchange, so every clear, then the membarrier, then sq_db. */
	uintptr_t fast = __atomic_load_n(&eng->fast_poster, __ATOMIC_RELAXED);

	if (n && fast && fast != self_id()) {
		for (unsigned int i = 0; i < n; i++)
			if (qps[i] && qps[i]->eng == eng)
				__atomic_store_n(&qps[i]->db_pending, 0,
						 __ATOMIC_SEQ_CST);
		eth_fast_fence(eng);
	}
	for (unsigned int i = 0; i < n; i++) {
		struct droce_qp *qp = qps[i];

		if (qp == NULL || qp->eng != eng)
			continue;
		__atomic_store_n(&qp->db_pending, 0, __ATOMIC_SEQ_CST);
		if (qp->state == IBV_QPS_ERR)
			eth_qp_flush(qp);
		else if (qp->state == IBV_QPS_SQE)
			eth_qp_flush_sq(qp);
		else
			eth_qp_activate(eng, qp);
	}
	return (int)n;
}

/* ------------------------------------------------------------ loop */

/*
 * Give the QPs of one list their turn, FIFO. Bounded per iteration, so
 * receive (and with it ACKs, which free the transmit queue and stop
 * requesters' timers) never waits behind a long list:
 *  - at most *visits more QPs are serviced;
 *  - a QP whose device's transmit queue is backed up is not serviced but
 *    rotated to the tail (another device's QPs may still send), and after
 *    ETH_BUSY_SKIPS of those the sweep stops: with thousands of QPs queued
 *    behind a full queue, popping and re-queueing them all every iteration
 *    was what starved receive into ACK timeouts (16384 QPs failed with
 *    IBV_WC_RETRY_EXC_ERR).
 */
static int run_list(struct droce_engine *eng, bool resp, uint32_t *visits)
{
	struct droce_qp **head = list_head(eng, resp);
	struct droce_qp **tailp = list_tail(eng, resp);
	uint32_t flag = list_flag(resp);
	struct droce_qp *qp, *tail = *tailp;
	const bool deep = !resp && eng->prefetch_deep;
	uint32_t skips = 0, visited = 0;
	int n = 0;

	/* (each visit asks for lines two QPs ahead, three when deep: the
	 * next ones now) */
	if (eng->prefetch && *head && *qp_next(*head, resp)) {
		struct droce_qp *second = *qp_next(*head, resp);

		eth_qp_prefetch(second);
		if (deep && *qp_next(second, resp))
			eth_qp_prefetch(*qp_next(second, resp));
	}
	while (*visits && (qp = *head) != NULL) {
		uint32_t budget = ETH_QP_BUDGET;
		bool last = qp == tail;
		struct droce_qp *next = *qp_next(qp, resp);

		/*
		 * With thousands of QPs the next ones are cold, so each visit
		 * asks for what later ones read, a step at a time (each step's
		 * addresses come from lines asked for a visit before): the
		 * lines of the QP after next, and on the active list the next
		 * one's first WQEs (and timer cell). When visits are long
		 * (deep), one step further: the lines of the QP three on, the
		 * WQEs of the one two on, and the source line of the next
		 * one's first WQE, which its first packet's copy would
		 * otherwise wait for.
		 */
		if (eng->prefetch && next) {
			struct droce_qp *after = *qp_next(next, resp);
			struct droce_qp *wq = next;

			if (deep) {
				eth_qp_prefetch_src(next);
				wq = after;
				if (after && *qp_next(after, resp))
					eth_qp_prefetch(*qp_next(after, resp));
			} else if (after) {
				eth_qp_prefetch(after);
			}
			if (!resp && wq) {
				eth_qp_prefetch_wqes(wq);
				/* (what it sends arms its timer) */
				rte_prefetch0(eth_tcell(eng, eth_tcell_id(wq)));
			}
		}

		if (unlikely(eth_tx_busy(qp->dev))) {
			eng->backlog = true;
			if (++skips > ETH_BUSY_SKIPS || last || next == NULL)
				break;	/* leave it at the head */
			/* Rotate: later QPs may belong to another device. */
			*head = next;
			*qp_next(qp, resp) = NULL;
			*qp_next(*tailp, resp) = qp;
			*tailp = qp;
			continue;
		}
		*head = next;
		if (next == NULL)
			*tailp = NULL;
		qp->flags &= ~flag;
		eth_resp_progress(qp, &budget);
		eth_req_progress(qp, &budget);
		if (budget == 0)
			eth_qp_activate(eng, qp);
		n += (int)(ETH_QP_BUDGET - budget);
		(*visits)--;
		visited++;
		if (last)
			break;
	}
	if (!resp && visited) {
		eng->deep_turns += deep && eng->prefetch;
		eng->prefetch_deep = (uint32_t)n >= ETH_DEEP_VISIT_PKTS * visited;
	}
	return n;
}

static int run_active(struct droce_engine *eng)
{
	uint32_t visits = ETH_ACTIVE_VISITS;
	int n = 0;

	if (eng->resp_head)
		n += run_list(eng, true, &visits);
	if (eng->active_head)
		n += run_list(eng, false, &visits);
	return n;
}

static void run_timers(struct droce_engine *eng, uint64_t now)
{
	uint64_t now_tick = now >> eng->tick_shift;

	/* After a long stall, one lap of the wheel visits every QP. */
	if (now_tick - eng->wheel_tick > ETH_WHEEL_SLOTS)
		eng->wheel_tick = now_tick - ETH_WHEEL_SLOTS;
	droce_trace_refresh();
	eng->prefetch = eng->prefetch_always;
	for (uint32_t i = 0; i < eng->nb_devs; i++) {
		eth_arp_timer(eng->devs[i], now);
		eth_port_check(eng->devs[i], now);
		/* (a hint: nb_qp changes under the device's lock) */
		if (__atomic_load_n(&eng->devs[i]->nb_qp, __ATOMIC_RELAXED) >=
		    ETH_PREFETCH_QPS)
			eng->prefetch = true;
	}
	while (eng->wheel_tick < now_tick) {
		uint32_t tick = (uint32_t)++eng->wheel_tick;
		uint32_t slot = tick & (ETH_WHEEL_SLOTS - 1);
		uint32_t id = eng->wheel[slot], next;

		eng->wheel[slot] = ETH_TCELL_NIL;
		for (; id != ETH_TCELL_NIL; id = next) {
			struct eth_tcell *c = eth_tcell(eng, id);
			struct droce_qp *qp;
			uint64_t d;

			next = c->next;
			if ((int32_t)(c->due - tick) > 0) {
				/* Its deadline moved later: on, unread. */
				wheel_link(eng, id, c, c->due);
				continue;
			}
			qp = eth_tcell_qp(id);
			if (unlikely(qp == NULL))
				continue;	/* (unlink_qp takes it off first) */
			qp->flags &= ~DROCE_QPF_ON_TIMER;
			d = qp_deadline(qp);
			if (d == 0)
				continue;		/* disarmed meanwhile */
			if ((d >> eng->tick_shift) <= now_tick)
				eth_req_timer(qp, now);
			/* Re-file whatever is still armed (moved later unseen,
			 * or a second deadline, e.g. ARP polling and a
			 * retransmit). */
			eth_qp_timer_arm(eng, qp);
		}
	}
	if (unlikely(eng->stage_cycles))
		eng->cyc_timers += eth_now() - now;
}

/*
 * How long since the last iteration, beyond what the engine chose to sleep?
 * Past stall_min_tsc the thread was not running (or one iteration ran that
 * long, which to the wire looks the same): frames, ACKs among them, waited
 * unread, and the requesters' timers must not blame the peers for it.
 */
static inline void account_stall(struct droce_engine *eng, uint64_t now)
{
	uint64_t gap = now - eng->last_iter_tsc - eng->slept_tsc;

	if (unlikely(gap > eng->stall_min_tsc) && eng->last_iter_tsc) {
		uint64_t us = gap / (eng->tsc_hz / 1000000 ? eng->tsc_hz / 1000000 : 1);

		eng->stall_tsc += gap;
		for (uint32_t i = 0; i < eng->nb_devs; i++) {
			eng->devs[i]->st.stalls++;
			eng->devs[i]->st.stall_us += us;
		}
	}
	eng->last_iter_tsc = now;
	eng->slept_tsc = 0;
}

/* Serve a pending control-path call; 1 if one was served (the engine then
 * counts as busy and keeps spinning: a QP set-up is a burst of calls). */
static int run_exec(struct droce_engine *eng)
{
	uint32_t req = __atomic_load_n(&eng->exec_req, __ATOMIC_ACQUIRE);

	if (req == eng->exec_done)
		return 0;
	eng->exec_fn(eng->exec_arg);
	__atomic_store_n(&eng->exec_done, req, __ATOMIC_RELEASE);
	return 1;
}

/* cycles=1: the TSC now, else 0 (the stages are then not timed). */
static inline uint64_t stage_tsc(const struct droce_engine *eng)
{
	return unlikely(eng->stage_cycles) ? rte_rdtsc() : 0;
}

/* The receive stage: up to `bursts` bursts from every device. */
static inline int rx_stage(struct droce_engine *eng, uint32_t nd,
			   uint32_t bursts)
{
	int n = 0;

	for (uint32_t i = 0; i < nd; i++) {
		for (uint32_t b = 0; b < bursts; b++) {
			int r = eth_rx(eng, eng->devs[i]);

			n += r;
			if (r < ETH_RX_BURST)
				break;
		}
	}
	return n;
}

/* The work stage: doorbells, then the QPs' turns (requests, READ
 * responses, ACKs built). */
static inline int work_stage(struct droce_engine *eng)
{
	int n = drain_doorbells(eng);

	if (eng->resp_head || eng->active_head)
		n += run_active(eng);
	return n;
}

static inline int tx_stage(struct droce_engine *eng, uint32_t nd)
{
	int n = 0;

	for (uint32_t i = 0; i < nd; i++) {
		if (eng->devs[i]->txq_len)
			n += eth_tx_flush(eng->devs[i]);
		if (eth_tx_busy(eng->devs[i]))
			eng->backlog = true;
	}
	return n;
}

/*
 * One iteration. `rx` false: an app-driven engine's turn from a post
 * (post_turn), which sends and leaves receiving to the next poll unless a
 * transmit queue is backed up or nothing was received for ETH_POST_RX_US.
 * A bandwidth loop's posts turn the engine every post_drive WQEs while
 * ACKs come one per peer burst: receiving in every turn read the peer's
 * ring for one ACK at a time (a 64 B WRITE client spent ~1 500 cycles on
 * each, mostly misses on the ring's lines); a poll now finds several.
 * `stamp`: the TSC the caller read for this turn, or 0 (read when first
 * needed: eth_turn_tsc). `spin`: an application's poll, app-driven: how
 * many more times to look at the port when the turn found nothing to do.
 */
static int engine_turn(struct droce_engine *eng, bool rx, uint32_t spin,
		       uint64_t stamp)
{
	uint32_t nd = __atomic_load_n(&eng->nb_devs, __ATOMIC_ACQUIRE);
	uint64_t now, t0 = stage_tsc(eng), t1, t2;
	int n, nrx = -1;	/* frames the receive stage found; -1: none ran */

	eng->turn_tsc = stamp;
	droce_ab_turn();

	/* While a transmit queue is backed up (found so by the last work or
	 * transmit stage), receive more: what comes in (ACKs, and the frames
	 * the peer is waiting to hand back) is what drains it. */
	if (eng->lcore >= 0) {
		uint32_t bursts = eng->backlog ? ETH_RX_BURSTS_BACKLOG :
						 ETH_RX_BURSTS;

		eng->backlog = false;
		n = nrx = rx_stage(eng, nd, bursts);
		t1 = stage_tsc(eng);
		n += work_stage(eng);
		t2 = stage_tsc(eng);
		n += tx_stage(eng, nd);
		now = eth_now();
		if (unlikely(eng->stage_cycles)) {
			eng->cyc_rx += t1 - t0;
			eng->cyc_work += t2 - t1;
			eng->cyc_tx += now - t2;
			if (nrx == 0)
				eng->cyc_rx_idle += t1 - t0;
		}
	} else {
		/*
		 * Driven by the application's verbs calls: receive last, so
		 * the call returns as soon as what arrived is in place (a
		 * WRITE's bytes, a CQE) and the answers it owes (ACKs, READ
		 * responses) leave first thing in the next call, with
		 * whatever the application posted in between: a ping-pong's
		 * ACK is off its critical path and travels with the next
		 * request. WQEs posted since the last call leave before this
		 * call's receive, too. An application that stops calling
		 * leaves them to the keeper, as it leaves what arrives then.
		 */
		eng->backlog = false;
		n = work_stage(eng);
		t1 = stage_tsc(eng);
		n += tx_stage(eng, nd);
		t2 = stage_tsc(eng);
		if (rx || eng->backlog ||
		    eng->last_iter_tsc - eng->last_rx_tsc > eng->post_rx_tsc) {
			nrx = rx_stage(eng, nd, eng->backlog ?
					       ETH_RX_BURSTS_BACKLOG :
					       ETH_RX_BURSTS);
			n += nrx;
			eng->last_rx_tsc = eng->last_iter_tsc;
			/* A poll with nothing to do: look again at once, a
			 * few times, before going back to the application,
			 * whose way back here (its loop, the CQ, the lock,
			 * the stages) takes several times one empty receive
			 * call. A frame that lands meanwhile is seen that
			 * much sooner: write_lat and send_lat 3-5 % shorter
			 * over memif (doc/performance.md, thirty-third
			 * round). */
			for (uint32_t k = 0; n == 0 && k < spin; k++) {
				eng->rx_spins++;
				n = nrx = rx_stage(eng, nd, ETH_RX_BURSTS);
			}
		}
		/* The turn's stamp for its end too: it is short, and timers
		 * and stall accounting work in microseconds. */
		now = unlikely(eng->stage_cycles) ? eth_now() :
						    eth_turn_tsc(eng);
		if (unlikely(eng->stage_cycles)) {
			eng->cyc_work += t1 - t0;
			eng->cyc_tx += t2 - t1;
			eng->cyc_rx += now - t2;
			if (nrx == 0)
				eng->cyc_rx_idle += now - t2;
		}
	}
	account_stall(eng, now);
	if ((now >> eng->tick_shift) != eng->wheel_tick)
		run_timers(eng, now);
	/* (a paced QP put back counts as work: the next iteration sends) */
	if (unlikely(eng->pace_nb) && (now >> eng->pace_shift) != eng->pace_tick) {
		uint64_t t = stage_tsc(eng);	/* (after run_timers' own) */

		n += eth_pace_run(eng, now);
		if (unlikely(eng->stage_cycles))
			eng->cyc_timers += eth_now() - t;
	}
	n += run_exec(eng);
	eng->turn_tsc = 0;
	eng->loops++;
	if (n)
		eng->busy_loops++;
	return n;
}

int eth_engine_iter(struct droce_engine *eng)
{
	return engine_turn(eng, true, 0, 0);
}

/* A sleep of `us` microseconds (idle_us may be a second and more) */
static inline struct timespec us_ts(uint32_t us)
{
	struct timespec ts = { (time_t)(us / 1000000), (long)(us % 1000000) * 1000 };

	return ts;
}

static void engine_sleep(struct droce_engine *eng, uint32_t us)
{
	struct timespec ts = us_ts(us);
	uint64_t chosen = eng->tsc_hz / 1000000 * us, t0 = eth_now(), t;

	/* Say so first (a full barrier), then look once more: a doorbell
	 * rung before the word was visible is in the ring. */
	__atomic_store_n(&eng->asleep, 1, __ATOMIC_SEQ_CST);
	if (rte_ring_count(eng->db_ring) == 0 &&
	    __atomic_load_n(&eng->exec_req, __ATOMIC_ACQUIRE) == eng->exec_done)
		(void)syscall(SYS_futex, &eng->asleep, FUTEX_WAIT_PRIVATE, 1,
			      &ts, NULL, 0);
	__atomic_store_n(&eng->asleep, 0, __ATOMIC_RELAXED);
	/* The stall accounting wants the sleep taken, up to the chosen:
	 * a wake cut it short, an overrun beyond it is a stall. */
	t = eth_now() - t0;
	eng->slept_tsc += RTE_MIN(t, chosen);
}

static int engine_main(void *arg)
{
	struct droce_engine *eng = arg;
	uint32_t idle = 0, sleep_us = 1;

	/* Linux's default 50 us of timer slack would turn the first 1 us
	 * back-off sleep into ~60 us: the first message after any pause
	 * longer than 256 empty iterations waited for it. */
	(void)prctl(PR_SET_TIMERSLACK, ETH_SLEEP_SLACK_NS, 0, 0, 0);
	while (!__atomic_load_n(&eng->stop, __ATOMIC_ACQUIRE)) {
		if (eth_engine_iter(eng)) {
			idle = 0;
			sleep_us = 1;
			continue;
		}
		if (++idle < 256 || eng->idle_us == 0) {
			rte_pause();
			continue;
		}
		/* Idle back-off: 1, 2, 4 ... idle_us microseconds, cut short
		 * by a doorbell or a control call (engine_wake). While a
		 * paced QP waits, the sleep is until its send time (at most
		 * idle_us) at once: ramping up from 1 us between a slow QP's
		 * packets cost half a core at 2 400 packets/s. */
		if (unlikely(eng->pace_nb)) {
			uint64_t due = eth_pace_next_tsc(eng), now = eth_now();
			uint64_t us = due > now ? (due - now) / (eng->tsc_hz / 1000000) : 0;

			if (us == 0) {
				rte_pause();
				continue;
			}
			engine_sleep(eng, (uint32_t)RTE_MIN(us, (uint64_t)RTE_MAX(eng->idle_us, 1u)));
			continue;
		}
		engine_sleep(eng, sleep_us);
		if (sleep_us < eng->idle_us)
			sleep_us = RTE_MIN(sleep_us * 2, eng->idle_us);
	}
	/* Serve a last control call that raced with stop. */
	run_exec(eng);
	return 0;
}

/* -------------------------------------------------------- control path */

static int eth_exec(struct droce_dev *dev, void (*fn)(void *), void *arg)
{
	struct droce_engine *eng = dev->eng;

	if (eng->lcore < 0 || !eng->launched) {
		rte_spinlock_lock(&eng->app_lock);
		fn(arg);
		eng->turn_tsc = 0;	/* (a stamp it took is not the next one's) */
		rte_spinlock_unlock(&eng->app_lock);
		return 0;
	}
	rte_spinlock_lock(&eng->exec_lock);
	eng->exec_fn = fn;
	eng->exec_arg = arg;
	uint32_t req = eng->exec_req + 1;

	__atomic_store_n(&eng->exec_req, req, __ATOMIC_RELEASE);
	engine_wake(eng);
	/* A busy engine answers within one iteration (microseconds), an
	 * idle one once woken: spin that long, then sleep in growing steps
	 * (the wake can be missed in a narrow window, and the engine then
	 * sleeps out up to idle_us). Sleeping 10 us per look made setting
	 * up 2 x 16384 QPs take 40-50 s. */
	uint64_t spin_end = eth_now() + eng->tsc_hz / 1000000 * ETH_EXEC_SPIN_US;
	long sleep_ns = 1000;

	while (__atomic_load_n(&eng->exec_done, __ATOMIC_ACQUIRE) != req) {
		if (eth_now() < spin_end) {
			rte_pause();
			continue;
		}
		struct timespec ts = { 0, sleep_ns };

		nanosleep(&ts, NULL);
		if (sleep_ns < 100000)
			sleep_ns *= 2;
	}
	rte_spinlock_unlock(&eng->exec_lock);
	return 0;
}

static int app_turn(struct droce_dev *dev, bool rx, uint32_t spin)
{
	struct droce_engine *eng = dev->eng;
	uint64_t stamp;
	int n;

	if (eng->lcore >= 0)
		return 0;
	stamp = eth_now();
	eng->last_drive_tsc = stamp;
	if (!rte_spinlock_trylock(&eng->app_lock))
		return 0;
	if (unlikely(eng->halted)) {
		droce_spin_unlock(&eng->app_lock);
		return 0;
	}
	if (unlikely(eng->fast_poster != self_id()) && eng->fast_ok)
		eth_fast_take(eng, self_id());
	n = engine_turn(eng, rx, spin, stamp);
	droce_spin_unlock(&eng->app_lock);
	return n;
}

static int eth_poll(struct droce_dev *dev)
{
	int n;

	droce_stamp_turn(-1);
	n = app_turn(dev, true, dev->eng->rx_spin);
	droce_stamp_turn(n);
	return n;
}

static int eth_post_turn(struct droce_dev *dev)
{
	return app_turn(dev, false, 0);
}

/*
 * The keeper's sleep. A long one (beyond ETH_KEEPER_US, taken while the
 * program drives the engine itself) is on the keeper_asleep futex, so
 * that the first thread to wait on an event (eth_app_waiting) cuts it
 * short: it would otherwise wait out up to ETH_KEEPER_BUSY_US for its
 * first event.
 */
static void keeper_sleep(struct droce_engine *eng, uint32_t us)
{
	struct timespec ts = us_ts(us);

	if (us <= ETH_KEEPER_US) {
		nanosleep(&ts, NULL);
		return;
	}
	/* Say so first (a full barrier), then look at the waiters and the
	 * stop flag once more: one that came before the word was visible
	 * did not see it to wake us. */
	__atomic_store_n(&eng->keeper_asleep, 1, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&eng->app_waiters, __ATOMIC_SEQ_CST) == 0 &&
	    !__atomic_load_n(&eng->keeper_stop, __ATOMIC_SEQ_CST))
		(void)syscall(SYS_futex, &eng->keeper_asleep, FUTEX_WAIT_PRIVATE,
			      1, &ts, NULL, 0);
	__atomic_store_n(&eng->keeper_asleep, 0, __ATOMIC_RELAXED);
}

static void *keeper_main(void *arg)
{
	struct droce_engine *eng = arg;
	uint64_t us = eng->tsc_hz / 1000000;
	uint64_t quiet = us * ETH_KEEPER_US;
	uint64_t quiet_waiting = us * ETH_KEEPER_WAIT_US;
	uint64_t waiters_seen = 0;	/* when app_waiters was last non-zero */
	uint64_t busy_seen = 0;		/* when the engine last had work */
	uint32_t wait_us = ETH_KEEPER_WAIT_US;
	uint32_t period_us = ETH_KEEPER_US;	/* while no thread waits */

	/* Linux lets a sleep overrun by the thread's timer slack, 50 us by
	 * default: more than the fast period itself. */
	(void)prctl(PR_SET_TIMERSLACK, ETH_SLEEP_SLACK_NS, 0, 0, 0);
	while (!eng->keeper_stop) {
		uint64_t now = eth_now();
		/* (read each turn: devices join after the keeper starts) */
		uint32_t wait_max = RTE_MIN(__atomic_load_n(&eng->idle_us, __ATOMIC_RELAXED),
					   (uint32_t)ETH_KEEPER_US);
		uint64_t drove;
		bool waiting;
		int n;

		/* Fast while a thread waits or a CQ is armed, and for a while
		 * after: the engine disarms a CQ as it delivers the event
		 * (often in this thread), and the program arms it again only
		 * once awake. Choosing by that moment's count slept 1 ms
		 * between a ping-pong's events half the time (a send_lat -e
		 * server: ~0.5 ms median one way instead of ~40 us). */
		if (eng->app_waiters != 0)
			waiters_seen = now;
		waiting = waiters_seen && now - waiters_seen < quiet;
		eng->keeper_wait_us = wait_us;
		keeper_sleep(eng, waiting ? wait_us : period_us);
		eng->keeper_looks++;
		/*
		 * An application that polls drives the engine itself; one
		 * that waits for an event (or may: a CQ is armed) is driven
		 * by the keeper once its verbs calls stop for a short while.
		 * The program's stamp first, then the time: the other way
		 * round a drive between the two reads made `now - drove`
		 * wrap, and the keeper took that as a program quiet for
		 * ages and drove the engine from the other core (76 of a
		 * write_lat client's 83 keeper drives in 0.3 s, each pulling
		 * the engine's lines across). Signed, for TSCs a few cycles
		 * apart between cores.
		 */
		drove = __atomic_load_n(&eng->last_drive_tsc, __ATOMIC_ACQUIRE);
		now = eth_now();
		if (drove > busy_seen) {
			/* the program's own calls since the last look */
			busy_seen = drove;
			wait_us = ETH_KEEPER_WAIT_US;
		}
		if ((int64_t)(now - drove) < (int64_t)(waiting ? quiet_waiting : quiet)) {
			/*
			 * Still driven by the program: look half as often.
			 * Each look is a timer wake-up on the program's
			 * core (the keeper is a control thread: the cores
			 * outside the EAL's, the other process's polling
			 * core in a two-process pair), ~50 us of CPU here
			 * (a nested VM's timer exits): at one a millisecond
			 * ~4 % of that core, and the wait behind one was a
			 * write_lat's p99.9.
			 */
			if (!waiting)
				period_us = RTE_MIN(period_us * 2,
						    (uint32_t)ETH_KEEPER_BUSY_US);
			continue;
		}
		period_us = ETH_KEEPER_US;
		if (!rte_spinlock_trylock(&eng->app_lock))
			continue;
		eng->keeper_drives++;
		/* Bounded: a few iterations, then sleep again. */
		n = eth_engine_iter(eng);
		for (int i = 1; i < 64 && n > 0 && eth_engine_iter(eng) > 0; i++)
			;
		rte_spinlock_unlock(&eng->app_lock);
		/*
		 * A program asleep on its events with nothing arriving: each
		 * 20 us turn costs ~9 us of CPU in this VM, ~45 % of a core
		 * for as long as it sleeps. After 1 ms without work the period
		 * doubles per empty turn up to the device's idle_us, the
		 * longest sleep an lcore engine takes (200 us: ~10 %), and
		 * never beyond the 1 ms of a program that does not wait; the
		 * first packet after such a pause waits for the sleep under
		 * way. Any work, or the program's own calls, make it fast.
		 */
		if (n > 0) {
			busy_seen = now;
			wait_us = ETH_KEEPER_WAIT_US;
		} else if (now - busy_seen > quiet && wait_us < wait_max) {
			wait_us = RTE_MIN(wait_us * 2, wait_max);
		}
	}
	return NULL;
}

static struct droce_engine *engine_new(int lcore)
{
	struct droce_engine *eng;
	char name[RTE_RING_NAMESIZE];

	eng = rte_zmalloc("droce_engine", sizeof(*eng), RTE_CACHE_LINE_SIZE);
	if (eng == NULL)
		return NULL;
	snprintf(name, sizeof(name), "droce_db_%d", lcore < 0 ? 9999 : lcore);
	/* Every QP of every device of this engine fits at once. */
	eng->db_ring = rte_ring_create(name, rte_align32pow2(DROCE_MAX_QP *
				       DROCE_MAX_DEVS), SOCKET_ID_ANY,
				       RING_F_SC_DEQ);
	if (eng->db_ring == NULL) {
		rte_free(eng);
		return NULL;
	}
	eng->lcore = lcore;
	eng->tsc_hz = rte_get_tsc_hz();
	eng->tick_shift = 0;
	while ((2ull << eng->tick_shift) <= eng->tsc_hz / 1000000 * ETH_TICK_US)
		eng->tick_shift++;
	eng->wheel_tick = rte_rdtsc() >> eng->tick_shift;
	memset(eng->wheel, 0xff, sizeof(eng->wheel));	/* ETH_TCELL_NIL */
	eth_pace_init(eng);
	eng->stall_min_tsc = eng->tsc_hz / 1000000 *
			     (lcore < 0 ? ETH_STALL_APP_US : ETH_STALL_US);
	eng->post_rx_tsc = eng->tsc_hz / 1000000 * ETH_POST_RX_US;
	droce_trace_refresh();
	rte_spinlock_init(&eng->exec_lock);
	rte_spinlock_init(&eng->app_lock);
	return eng;
}

int eth_engine_attach(struct droce_dev *dev)
{
	int lcore = dev->args.lcore;
	struct droce_engine *eng;
	int ret = 0;

	pthread_mutex_lock(&eng_lock);
	if (lcore >= 0) {
		if (lcore >= RTE_MAX_LCORE || !rte_lcore_is_enabled((unsigned)lcore) ||
		    (unsigned int)lcore == rte_get_main_lcore()) {
			DROCE_LOG(ERR, "lcore %d is not an enabled worker lcore (use lcore=app to drive the engine from verbs calls)",
				  lcore);
			ret = -EINVAL;
			goto out;
		}
		eng = engines[lcore];
		if (eng == NULL) {
			if (rte_eal_get_lcore_state((unsigned)lcore) != WAIT) {
				DROCE_LOG(ERR, "lcore %d is busy", lcore);
				ret = -EBUSY;
				goto out;
			}
			eng = engine_new(lcore);
			if (eng == NULL) {
				ret = -ENOMEM;
				goto out;
			}
			engines[lcore] = eng;
		}
	} else {
		if (app_engine == NULL) {
			app_engine = engine_new(-1);
			/* (registered once per process; refused: every post
			 * takes the exchange, as an lcore engine's do) */
			if (app_engine)
				app_engine->fast_ok =
					syscall(SYS_membarrier,
						MEMBARRIER_CMD_REGISTER_PRIVATE_EXPEDITED,
						0, 0) == 0;
			/* A control thread, on DPDK's control-thread CPUs (those
			 * of the process's first affinity that no lcore uses;
			 * the main lcore's if none): created by this thread
			 * with pthread_create, it ran on the main lcore's core
			 * only, behind a program that spins there without
			 * verbs calls. */
			if (app_engine && rte_ctrl_thread_create(&app_engine->keeper,
					"droce-keeper", NULL, keeper_main,
					app_engine) == 0)
				app_engine->keeper_running = true;
		}
		eng = app_engine;
		if (eng == NULL) {
			ret = -ENOMEM;
			goto out;
		}
	}
	/* The device's timer cells, before any QP of it can be armed. */
	if (eng->tcells[dev->index] == NULL) {
		eng->tcells[dev->index] = rte_zmalloc("droce_tcells",
			sizeof(struct eth_tcell) * DROCE_MAX_QP,
			RTE_CACHE_LINE_SIZE);
		if (eng->tcells[dev->index] == NULL) {
			ret = -ENOMEM;
			goto out;
		}
	}
	if (dev->args.cycles)
		eng->stage_cycles = true;
	/* (an engine serves its devices alike: the largest asked for) */
	if (dev->args.rx_spin > eng->rx_spin)
		eng->rx_spin = dev->args.rx_spin;
	/* Any device's idle_us applies to the whole engine: the smallest wins. */
	if (eng->nb_devs == 0 || dev->args.idle_us < eng->idle_us)
		eng->idle_us = dev->args.idle_us;
	dev->eng = eng;
	if (eng->launched) {
		/* The engine reads devs[] up to nb_devs; publish the slot first. */
		eng->devs[eng->nb_devs] = dev;
		__atomic_store_n(&eng->nb_devs, eng->nb_devs + 1, __ATOMIC_RELEASE);
	} else if (lcore < 0) {
		/* The keeper thread and other threads' verbs calls may be
		 * running this engine already (another device's): they do so
		 * under app_lock, and must not see nb_devs count a slot that
		 * is still empty (UBSan caught the keeper doing that). */
		rte_spinlock_lock(&eng->app_lock);
		eng->devs[eng->nb_devs] = dev;
		__atomic_store_n(&eng->nb_devs, eng->nb_devs + 1, __ATOMIC_RELEASE);
		rte_spinlock_unlock(&eng->app_lock);
	} else {
		eng->devs[eng->nb_devs++] = dev;
		eng->stop = false;
		ret = rte_eal_remote_launch(engine_main, eng, (unsigned)lcore);
		if (ret) {
			eng->nb_devs--;
			goto out;
		}
		eng->launched = true;
	}
out:
	pthread_mutex_unlock(&eng_lock);
	return ret;
}

/* The engine's lcore, or its keeper, back from its loop (eng_lock held). */
static void engine_stop(struct droce_engine *eng)
{
	if (eng->launched) {
		__atomic_store_n(&eng->stop, true, __ATOMIC_RELEASE);
		engine_wake(eng);	/* not a whole idle_us later */
		rte_eal_wait_lcore((unsigned)eng->lcore);
		eng->launched = false;
	}
	if (eng->keeper_running) {
		__atomic_store_n(&eng->keeper_stop, true, __ATOMIC_SEQ_CST);
		/* (not an 8 ms sleep out: keeper_sleep's futex) */
		if (__atomic_exchange_n(&eng->keeper_asleep, 0, __ATOMIC_SEQ_CST))
			(void)syscall(SYS_futex, &eng->keeper_asleep,
				      FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
		pthread_join(eng->keeper, NULL);
		eng->keeper_running = false;
	}
}

struct detach_job {
	struct droce_engine *eng;
	struct droce_dev *dev;
};

static void detach_apply(void *arg)
{
	struct detach_job *j = arg;
	struct droce_engine *eng = j->eng;
	uint32_t k = 0;

	for (uint32_t i = 0; i < eng->nb_devs; i++)
		if (eng->devs[i] != j->dev)
			eng->devs[k++] = eng->devs[i];
	eng->nb_devs = k;
}

void eth_engine_detach(struct droce_dev *dev)
{
	struct droce_engine *eng = dev->eng;
	struct detach_job j = { eng, dev };

	if (eng == NULL)
		return;
	pthread_mutex_lock(&eng_lock);
	eth_exec(dev, detach_apply, &j);
	/* None of its cells is on the wheel: a device goes only once its
	 * QPs are destroyed (droce_cleanup), each taken off by unlink_qp. */
	rte_free(eng->tcells[dev->index]);
	eng->tcells[dev->index] = NULL;
	if (eng->nb_devs == 0) {
		engine_stop(eng);
		if (eng->lcore >= 0)
			engines[eng->lcore] = NULL;
		else
			app_engine = NULL;
		rte_ring_free(eng->db_ring);
		rte_free(eng);
	}
	dev->eng = NULL;
	pthread_mutex_unlock(&eng_lock);
}

/*
 * At exit (droce_exit_release, from lib/rdma/rdma_env.c's handler): the
 * engines stop for good, then the ports over kernel interfaces close, so
 * that net_af_xdp's XDP program and promiscuous mode do not outlive the
 * process. Nothing is freed: the program's other threads may still be in
 * verbs calls until the process is gone. Their posts ring doorbells no
 * engine reads, their polls find the engine halted, and a control call
 * runs in the calling thread (eth_exec: not launched).
 */
static uint32_t eth_halt(struct droce_dev **devs, uint32_t nb_devs)
{
	uint32_t closed = 0;

	pthread_mutex_lock(&eng_lock);
	for (unsigned int l = 0; l < RTE_MAX_LCORE; l++)
		if (engines[l] != NULL)
			engine_stop(engines[l]);
	if (app_engine != NULL) {
		engine_stop(app_engine);
		/* (a turn under way finishes first) */
		rte_spinlock_lock(&app_engine->app_lock);
		app_engine->halted = true;
		rte_spinlock_unlock(&app_engine->app_lock);
	}
	pthread_mutex_unlock(&eng_lock);
	for (uint32_t i = 0; i < nb_devs; i++)
		if (devs[i] != NULL && devs[i]->port_kernel &&
		    !devs[i]->port_closed) {
			eth_port_release(devs[i]);
			closed++;
		}
	return closed;
}

/* ------------------------------------------------------------- ops */

static int eth_dev_probe(struct droce_dev *dev)
{
	int ret = eth_port_setup(dev);

	if (ret)
		return ret;
	ret = eth_engine_attach(dev);
	if (ret)
		eth_port_close(dev, false);
	return ret;
}

static void eth_dev_remove(struct droce_dev *dev)
{
	eth_engine_detach(dev);
	eth_port_close(dev, true);
}

static void eth_qp_state_changed(struct droce_qp *qp, enum ibv_qp_state old)
{
	struct droce_engine *eng = qp->eng;

	switch (qp->state) {
	case IBV_QPS_RESET:
		unlink_qp(eng, qp);
		eth_qp_reset(qp);
		break;
	case IBV_QPS_ERR:
		eth_qp_flush(qp);
		break;
	case IBV_QPS_RTS:
		/* Sends posted while in SQE are flushed, not sent (their
		 * doorbells may not have been drained yet). */
		if (old == IBV_QPS_SQE)
			eth_qp_flush_sq(qp);
		eth_qp_activate(eng, qp);
		break;
	default:
		break;
	}
}

static void eth_app_waiting(struct droce_dev *dev, int delta)
{
	struct droce_engine *eng = dev->eng;

	/* (a full barrier: keeper_sleep's store and load, the other way) */
	__atomic_fetch_add(&eng->app_waiters, (uint32_t)delta, __ATOMIC_SEQ_CST);
	if (delta > 0 && __atomic_load_n(&eng->keeper_asleep, __ATOMIC_SEQ_CST) &&
	    __atomic_exchange_n(&eng->keeper_asleep, 0, __ATOMIC_RELAXED))
		(void)syscall(SYS_futex, &eng->keeper_asleep, FUTEX_WAKE_PRIVATE,
			      1, NULL, NULL, 0);
}

static void eth_eng_stats(const struct droce_dev *dev,
			  struct droce_dev_stats *st)
{
	const struct droce_engine *eng = dev->eng;

	if (eng == NULL)
		return;
	st->eng_loops = eng->loops;
	st->eng_busy_loops = eng->busy_loops;
	st->eng_waiters = eng->app_waiters;
	st->eng_keeper_us = eng->lcore < 0 ? eng->keeper_wait_us : 0;
	st->eng_keeper_looks = eng->keeper_looks;
	st->eng_keeper_drives = eng->keeper_drives;
	st->eng_wakes = __atomic_load_n(&eng->wakes, __ATOMIC_RELAXED);
	st->eng_paced = __atomic_load_n(&eng->pace_nb, __ATOMIC_RELAXED);
	st->eng_prefetch = eng->prefetch;
	st->eng_deep_turns = eng->deep_turns;
	st->eng_rx_spins = eng->rx_spins;
	st->eng_rx_cycles = eng->cyc_rx;
	st->eng_rx_idle_cycles = eng->cyc_rx_idle;
	st->eng_work_cycles = eng->cyc_work;
	st->eng_tx_cycles = eng->cyc_tx;
	st->eng_timer_cycles = eng->cyc_timers;
	st->eng_fast_poster = __atomic_load_n(&eng->fast_poster, __ATOMIC_RELAXED) != 0;
	st->eng_fast_moves = eng->fast_moves;
	st->eng_db_skips = __atomic_load_n(&eng->db_skips, __ATOMIC_RELAXED);
}

static const struct droce_drv_ops eth_ops = {
	.eng_stats = eth_eng_stats,
	.app_waiting = eth_app_waiting,
	.dev_probe = eth_dev_probe,
	.dev_remove = eth_dev_remove,
	.qp_notify = eth_qp_notify,
	.exec = eth_exec,
	.poll = eth_poll,
	.post_turn = eth_post_turn,
	.qp_state_changed = eth_qp_state_changed,
	.qp_rate_changed = eth_pace_changed,
	.halt = eth_halt,
};

RTE_INIT(eth_register)
{
	droce_drv_register(&eth_ops);
}
