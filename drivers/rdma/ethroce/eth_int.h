/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * ethroce: the engine that speaks RoCEv2 on a DPDK ethdev port.
 * One engine per lcore (plus one "app" engine driven from verbs calls);
 * an engine serves one or more devices and owns all their QPs.
 */
#ifndef ETH_INT_H
#define ETH_INT_H

#include <pthread.h>
#include <string.h>

#include <rte_cycles.h>
#include <rte_mbuf.h>
#include <rte_ring.h>

#include "droce_int.h"
#include "droce_stamp.h"

#define ETH_RX_BURST		32
#define ETH_DB_BURST		64
#define ETH_FAST_MOVES		8	/* fast poster handed on at most this often */
#define ETH_QP_BUDGET		32	/* packets per QP per activation */
#define ETH_DB_SLOTS_AHEAD	16	/* state slots asked for at a doorbell */
#define ETH_ACTIVE_VISITS	128	/* QPs serviced per engine iteration */
/* From this many QPs on a device, the engine prefetches QPs ahead (their
 * hot lines, ~10, times 256 QPs and their rings is about an L2; below,
 * the prefetches would cost ~80 instructions a message for nothing). */
#define ETH_PREFETCH_QPS	DROCE_MANY_QPS
/* Packets a visit (the active list's average over an engine turn) from
 * which its prefetching reaches a QP further ahead and the next QP's
 * source bytes: 64 B WRITEs at 16384 QPs, -t 16, 7 % faster; at -t 1
 * (one packet a visit) the longer reach was 5-10 % slower. */
#define ETH_DEEP_VISIT_PKTS	4
#define ETH_BUSY_SKIPS		8	/* QPs passed over for a full tx queue, per iteration */
#define ETH_RX_BURSTS		4	/* rx bursts per device per iteration (while full) */
#define ETH_RX_BURSTS_BACKLOG	8	/* the same while a tx queue is backed up */
/* An app-driven engine's post turns leave receiving to its polls, but
 * receive anyway once this long has passed without (an application that
 * posts and never polls still hears its ACKs). */
#define ETH_POST_RX_US		20
#define ETH_EXEC_SPIN_US	50	/* control call: spin this long before sleeping */
#define ETH_TXQ_CAP		4096
#define ETH_TXQ_HIGH		512	/* stop generating new work above this */
#define ETH_LOOPQ_CAP		1024
#define ETH_REQ_WINDOW		1024	/* unacknowledged PSNs per QP */
#define ETH_WHEEL_SLOTS		4096	/* power of two */
#define ETH_TICK_US		50
#define ETH_ARP_POLL_US		1000
#define ETH_PACE_SLOTS		256	/* pacing wheel, ~1 us ticks: power of two */
#define ETH_PACE_BURST_US	64	/* default burst: this long at the QP's rate */
#define ETH_LINK_CHECK_MS	100
#define ETH_KEEPER_US		1000
/* While the program drives the engine itself, each look the keeper takes
 * doubles its next sleep, up to this (a look is a timer wake-up, ~50 us of
 * CPU in a nested VM, taken from a polling core): a program that stops
 * calling is taken over within ETH_KEEPER_BUSY_US + ETH_KEEPER_US. */
#define ETH_KEEPER_BUSY_US	8000
#define ETH_KEEPER_WAIT_US	20	/* period while a thread sleeps on an event
					 * or a CQ is armed for one */
#define ETH_SLEEP_SLACK_NS	1000	/* timer slack of the keeper and the
					 * engine lcores (Linux's 50 us would
					 * stretch their short sleeps) */
#define ETH_ARP_RETRY_MS	100
/* An iteration later than this beyond any sleep the engine chose is a
 * stall: its thread was not running (descheduled, a paused VM). The app
 * engine is driven every ETH_KEEPER_US or so at best, hence its larger
 * threshold. */
#define ETH_STALL_US		500
#define ETH_STALL_APP_US	(4 * ETH_KEEPER_US)

/* A slot of the pacing wheel: QPs linked through pace_link
 * (<sys/queue.h>: O(1) insert and removal). */
LIST_HEAD(eth_qp_slot, droce_qp);

/*
 * A QP's place on the timer wheel, kept apart from the QP: one cell per
 * possible QP of a device (index qpn - DROCE_QPN_BASE), 16 bytes, in an
 * array the engine owns. With thousands of QPs their lines are cold, and
 * a sweep that read each filed QP (to see whether its deadline had moved)
 * and linked it into its next slot (writing a neighbour's link) paid two
 * misses a QP a lap: at 16384 QP pairs ~30 cycles a message. A sweep now
 * reads and writes cells only and reads a QP when its deadline has come.
 * Ticks are the wheel's low 32 bits, compared by their difference: fine
 * for deadlines up to 2^31 ticks (~29 hours) ahead; the longest is an ACK
 * timeout of 4.096 us << 31, backed off 4x (~10 hours).
 */
struct eth_tcell {
	uint32_t next;		/* cell id, or ETH_TCELL_NIL */
	uint32_t prev;		/* cell id, or ETH_TCELL_HEAD | slot */
	uint32_t filed;		/* the tick of the slot it is linked in */
	uint32_t due;		/* its deadline's tick, as last armed: the
				 * sweep at `filed` moves it here unread */
};
#define ETH_TCELL_QP_BITS	14	/* cell id: dev->index << 14 | qp index */
#define ETH_TCELL_QP_MASK	((1u << ETH_TCELL_QP_BITS) - 1)
#define ETH_TCELL_NIL		UINT32_MAX
#define ETH_TCELL_HEAD		(1u << 31)

struct droce_engine {
	int lcore;			/* -1: app engine */
	struct droce_dev *devs[DROCE_MAX_DEVS];
	uint32_t nb_devs;		/* published with release */
	struct rte_ring *db_ring;	/* QPNs | dev index << 24 whose doorbell rang */
	/* active list: QPs with something to transmit (FIFO) */
	struct droce_qp *active_head;
	struct droce_qp *active_tail;
	/* responder list: QPs owing ACKs or READ/atomic responses, served first */
	struct droce_qp *resp_head;
	struct droce_qp *resp_tail;
	/*
	 * Timers: a hashed wheel of ETH_WHEEL_SLOTS ticks of 2^tick_shift TSC
	 * cycles (~50 us) of struct eth_tcell lists. A QP is filed under the
	 * tick of its deadline; a deadline moved later only updates the
	 * cell's `due`, and the sweep of its slot moves it on, so arming is
	 * O(1) and an idle engine pays one shift and compare per poll.
	 */
	uint32_t wheel[ETH_WHEEL_SLOTS];	/* first cell id, or NIL */
	struct eth_tcell *tcells[DROCE_MAX_DEVS];	/* by dev->index */
	uint64_t wheel_tick;		/* last tick processed */
	unsigned int tick_shift;
	struct droce_qp *arp_wait;	/* QPs waiting for a neighbour */
	/*
	 * Paced QPs waiting for their next send time (eth_pace.c): a second
	 * wheel with ticks of 2^pace_shift TSC cycles (~1 us), as the
	 * requester's timer wheel's 50 us would bunch a paced QP's packets.
	 * Visited only while pace_nb is non-zero.
	 */
	struct eth_qp_slot pace_wheel[ETH_PACE_SLOTS];
	uint64_t pace_tick;		/* last tick processed */
	unsigned int pace_shift;
	uint32_t pace_nb;		/* QPs on the pacing wheel */
	uint64_t tsc_hz;
	uint64_t rx_tsc;			/* TSC at the current rx burst (0 if
					 * tsc_hz is 0): the turn's (eth_turn_tsc) */
	/* The TSC of the turn in progress, 0 outside one or until first
	 * asked for (eth_turn_tsc): an app-driven turn's is the stamp it
	 * starts with (last_drive_tsc). A deadline or stamp set during a
	 * turn takes it, not a TSC read of its own (~24 cycles each here,
	 * up to five a ping-pong hop). */
	uint64_t turn_tsc;
	/* control */
	volatile bool stop;
	/* An lcore engine in its idle back-off sleeps on this word (a futex):
	 * 1 while asleep; the first doorbell or control call that sees it
	 * clears it and wakes the engine. */
	volatile uint32_t asleep;
	uint64_t wakes;			/* of those sleeps cut short (atomic) */
	bool launched;
	rte_spinlock_t exec_lock;	/* one control-path caller at a time */
	void (*volatile exec_fn)(void *);
	void *volatile exec_arg;
	volatile uint32_t exec_req;
	volatile uint32_t exec_done;
	rte_spinlock_t app_lock;	/* app engine: one driving thread */
	/* Stopped for good at exit (eth_halt): no turn runs any more, from
	 * any thread. Set under app_lock. */
	bool halted;
	/*
	 * App engine: the thread (its thread pointer, self_id(); 0: none)
	 * whose posts skip the doorbell's locked exchange while one is
	 * already pending (eth_qp_notify), and its moves so far. The other
	 * threads that drain doorbells pay for that with a membarrier
	 * (eth_fast_fence); 0 for good where the process could not
	 * register one, or after ETH_FAST_MOVES moves.
	 */
	uintptr_t fast_poster;
	uint32_t fast_moves;
	bool fast_ok;			/* membarrier registered */
	uint64_t db_skips;		/* posts that skipped the exchange */
	/* App engine: a sleeping helper thread drives the engine whenever
	 * the application has not for ETH_KEEPER_US (blocked in a TCP
	 * exchange, say), so ARP, ACKs and retransmissions go on. */
	pthread_t keeper;
	bool keeper_running;
	volatile bool keeper_stop;
	volatile uint64_t last_drive_tsc;
	volatile uint32_t app_waiters;	/* threads asleep on an event, CQs armed */
	volatile uint32_t keeper_wait_us; /* the keeper's period while waited on */
	/* 1 while the keeper sleeps longer than ETH_KEEPER_US (a futex):
	 * the first thread to wait on an event wakes it (eth_app_waiting). */
	volatile uint32_t keeper_asleep;
	uint64_t keeper_looks;		/* its wake-ups, of which */
	uint64_t keeper_drives;		/* it drove the engine */
	uint32_t idle_us;
	uint32_t rx_spin;		/* lcore=app: the devices' largest rx_spin */
	bool backlog;			/* a transmit queue was backed up last iteration */
	/* A device has ETH_PREFETCH_QPS QPs or more (looked at each timer
	 * tick): QPs are then cold and the engine prefetches them ahead. */
	bool prefetch;
	bool prefetch_always;		/* tests: whatever the QP count */
	/* The active list's last turn averaged ETH_DEEP_VISIT_PKTS packets
	 * a visit or more: visits are long enough to ask a step further
	 * ahead (run_list). */
	bool prefetch_deep;
	uint64_t deep_turns;		/* active-list turns run so */
	/* Stalls (ETH_STALL_US): the time this engine could not listen. A
	 * local ACK timeout that mostly elapsed while it was away is not the
	 * peer's silence (eth_req_timer). */
	uint64_t last_iter_tsc;		/* "now" of the previous iteration */
	uint64_t last_rx_tsc;		/* ... of the last that received */
	uint64_t post_rx_tsc;		/* ETH_POST_RX_US in TSC cycles */
	uint64_t slept_tsc;		/* voluntary sleep since then */
	uint64_t stall_min_tsc;
	uint64_t stall_tsc;		/* total time lost to stalls */
	/* load */
	uint64_t loops;
	uint64_t busy_loops;
	uint64_t rx_spins;		/* rx_spin: the polls' extra looks */
	bool stage_cycles;		/* some device asked for cycles=1 */
	uint64_t cyc_rx, cyc_work, cyc_tx;	/* TSC per stage, when timed */
	uint64_t cyc_rx_idle;		/* of cyc_rx: stages that found nothing */
	uint64_t cyc_timers;			/* run_timers and the pacing wheel */
	struct rte_mbuf *rx[ETH_RX_BURST];
};

static inline uint32_t eth_tcell_id(const struct droce_qp *qp)
{
	return qp->dev->index << ETH_TCELL_QP_BITS | qp->tbl_idx;
}

static inline struct eth_tcell *eth_tcell(struct droce_engine *eng,
					  uint32_t id)
{
	return &eng->tcells[id >> ETH_TCELL_QP_BITS][id & ETH_TCELL_QP_MASK];
}

/* The QP a cell stands for (NULL once it is gone from its device). */
static inline struct droce_qp *eth_tcell_qp(uint32_t id)
{
	struct droce_dev *dev = droce_dev_at(id >> ETH_TCELL_QP_BITS);

	return dev ? droce_qp_lookup(dev, DROCE_QPN_BASE +
				     (id & ETH_TCELL_QP_MASK)) : NULL;
}

/* eth_engine.c */
void eth_qp_activate(struct droce_engine *eng, struct droce_qp *qp);
void eth_qp_timer_arm(struct droce_engine *eng, struct droce_qp *qp);
void eth_qp_arp_wait(struct droce_engine *eng, struct droce_qp *qp);
void eth_qp_arp_done(struct droce_engine *eng, struct droce_qp *qp);
int eth_engine_iter(struct droce_engine *eng);
int eth_engine_attach(struct droce_dev *dev);
void eth_engine_detach(struct droce_dev *dev);

/* eth_port.c */
int eth_port_setup(struct droce_dev *dev);
/* served: the device was attached to an engine (its frames may be in
 * others' hands: its pool is kept until the last device closes) */
void eth_port_close(struct droce_dev *dev, bool served);
/* Only the ethdev side of that (impairer, promiscuous rx, stop, close):
 * the kernel's interface is as droce found it. Once; memory stays. */
void eth_port_release(struct droce_dev *dev);
void eth_port_check(struct droce_dev *dev, uint64_t now);

/* eth_tx.c */
struct rte_mbuf *eth_build(struct droce_qp *qp, struct roce_pkt *p,
			   uint32_t payload_len, uint8_t **payload);
void eth_finish(struct droce_dev *dev, struct rte_mbuf *m,
		const struct roce_pkt *p);
/*
 * Payloads of at least ETH_CRC_COPY_MIN bytes get their ICRC while they are
 * copied into the frame (roce_crc32_copy: one read of the source, not a
 * copy and a second pass): eth_hdrs_crc() starts it over the headers of an
 * eth_build() frame, the copy carries it on, eth_finish_crc() adds the pad,
 * stores it and sends. Below that, copy then eth_finish(): at 256 bytes the
 * two cost the same, at 1 KiB the fused copy saves ~20% (bench_crc32).
 */
#define ETH_CRC_COPY_MIN 512

/*
 * A fused frame that follows another of the same message (a MIDDLE or
 * LAST packet) has its headers read for their CRC after its payload is
 * copied, the two CRCs joined (roce_crc32_combine), where the payload is a
 * power of two long (the path MTU's frames: one carry-less multiply).
 * Read at once, right after they are written, the loads cannot take their
 * bytes from the store buffer (the image's 16-byte stores and its patched
 * fields straddle them) and wait for every older store to commit, the
 * previous frame's payload too: 20-40 TSC cycles a frame of a 64 KiB
 * WRITE on an Intel Xeon (doc/performance.md, fifty-first round). A
 * message's first frame follows other work, not a copy: there the join
 * costs more than the wait (4 KiB WRITEs 1-6 % slower). Other lengths keep
 * the old order: a multiply for each bit set.
 */
static inline bool eth_hdrs_crc_late(uint32_t len)
{
	return (len & (len - 1)) == 0;
}
uint32_t eth_hdrs_crc(const struct rte_mbuf *m, const struct roce_pkt *p);
void eth_finish_crc(struct droce_dev *dev, struct rte_mbuf *m,
		    const struct roce_pkt *p, uint32_t crc);
/* The payload of an eth_build() frame from len contiguous bytes at src
 * (into pl; src may be NULL when len is 0), the ICRC (with the copy from
 * ETH_CRC_COPY_MIN), and send. */
void eth_send_payload(struct droce_dev *dev, struct rte_mbuf *m,
		      const struct roce_pkt *p, uint8_t *pl, const void *src,
		      uint32_t len);
void eth_xmit(struct droce_dev *dev, struct rte_mbuf *m,
	      const struct roce_pkt *p);
struct rte_mbuf *eth_build_zc(struct droce_qp *qp, struct roce_pkt *p,
			      struct droce_mr *mr, const uint8_t *src,
			      uint32_t len);
void eth_tx_enqueue(struct droce_dev *dev, struct rte_mbuf *m);
/*
 * A frame of the QP's own connection from its header image (eth_qp_tmpl_ok()
 * must hold): Ethernet .. BTH written (bth1 without the pad, which is
 * derived from payload_len), *ext where the ext_len bytes of extended
 * headers go, the payload after them. NULL if mbufs ran out.
 * eth_img_send() zeroes the pad, adds the ICRC and queues the frame; with
 * crc, the ICRC so far over headers and payload (eth_img_hdrs_crc() once
 * the extended headers are written, carried on by the payload's copy),
 * else computed over the frame.
 */
struct rte_mbuf *eth_img_build(struct droce_qp *qp, uint8_t opcode,
			       uint8_t bth1, uint32_t bth_psn, uint32_t ext_len,
			       uint32_t payload_len, uint8_t **ext);
uint32_t eth_img_hdrs_crc(const struct droce_qp *qp, const struct rte_mbuf *m,
			  uint32_t ext_len);
/* A short packet whole (len below ETH_CRC_COPY_MIN): built, its ext_len
 * bytes of extended headers and len of payload copied from ext and
 * payload, the ICRC, queued; false if mbufs ran out. eth_img_build() and
 * eth_img_send() in one call, with no frame pointer handed back between. */
bool eth_img_short(struct droce_qp *qp, uint8_t opcode, uint8_t bth1,
		   uint32_t bth_psn, const uint8_t *ext, uint32_t ext_len,
		   const uint8_t *payload, uint32_t len);
void eth_img_send(struct droce_qp *qp, struct rte_mbuf *m, uint32_t ext_len,
		  const uint32_t *crc);
int eth_tx_flush(struct droce_dev *dev);
void eth_send_ack(struct droce_qp *qp, uint8_t syndrome, uint32_t psn);
bool eth_img_response(struct droce_qp *qp, uint8_t rop, uint32_t psn,
		      uint32_t msn, const uint64_t *orig, const uint8_t *src,
		      uint32_t len);
static inline bool eth_tx_busy(const struct droce_dev *dev)
{
	return dev->txq_len >= ETH_TXQ_HIGH || dev->loopq_len >= ETH_TXQ_HIGH;
}

/* eth_rx.c */
int eth_rx(struct droce_engine *eng, struct droce_dev *dev);
/* With thousands of QPs, ahead of receiving a frame: its QP's lines and a
 * WRITE's destination (*last: the QP asked for last, asked for once), and
 * an ACK's WQE state slots (its QP's lines asked for first). Hints from
 * untrusted bytes: bounded, never dereferencing what the frame names but
 * through the QP and key tables. Also called by the receive-path fuzzer. */
void eth_rx_prefetch_qp(const struct droce_dev *dev, const struct rte_mbuf *m,
			const struct droce_qp **last);
void eth_rx_prefetch_slots(const struct droce_dev *dev,
			   const struct rte_mbuf *m);
/* One received frame through the whole receive path (the caller frees m);
 * also the entry point of the receive-path fuzzer. */
void eth_rx_one(struct droce_engine *eng, struct droce_dev *dev,
		struct rte_mbuf *m);
int eth_mbuf_copy_segs(const struct rte_mbuf *m, uint32_t off, void *dst,
		       uint32_t len);

/* len bytes at off of the frame into dst; -1 if the frame is shorter. */
static inline int eth_mbuf_copy(const struct rte_mbuf *m, uint32_t off,
				void *dst, uint32_t len)
{
	/* All in the first segment (every frame up to the port's MTU on the
	 * ports droce uses): one copy, no walk over the chain. */
	if (likely((uint64_t)off + len <= m->data_len)) {
		memcpy(dst, rte_pktmbuf_mtod_offset(m, const uint8_t *, off),
		       len);
		return 0;
	}
	return eth_mbuf_copy_segs(m, off, dst, len);
}

/*
 * eth_rx.c: ICRC at placement. eth_rx_one leaves the ICRC of a long frame
 * whose memory the receiver, not the frame, picks (a MIDDLE or LAST that
 * continues a message in progress, a READ response FIRST or ONLY, a SEND
 * FIRST or ONLY with its receive WQE certain: the responder's or
 * completer's place_late said so) to the copy of its
 * payload into place, one pass over the bytes instead of two:
 * eth_rx_late_start() is the running ICRC over its headers for the copy to
 * carry on (roce_crc32_copy), eth_rx_late_done() the verdict after the
 * whole payload, eth_rx_late_whole() the verdict from the frame alone (the
 * copy did not happen or stopped short). A frame found damaged is counted
 * as eth_rx_one counts one (rx_icrc_err, not rx_pkts); the caller drops it
 * with nothing changed but the bytes it was copied over, which are those
 * the retransmission of the same PSN writes again.
 */
uint32_t eth_rx_late_start(const struct rte_mbuf *m, const struct roce_pkt *p);
bool eth_rx_late_done(struct droce_qp *qp, const struct rte_mbuf *m,
		      const struct roce_pkt *p, uint32_t crc);
bool eth_rx_late_whole(struct droce_qp *qp, const struct rte_mbuf *m,
		       const struct roce_pkt *p);

/* eth_arp.c */
/* An ARP frame whose ARP header starts at off (after any VLAN tag). */
void eth_arp_rx(struct droce_dev *dev, struct rte_mbuf *m, uint32_t off);
bool eth_neigh_resolve(struct droce_dev *dev, const uint8_t *gid,
		       struct rte_ether_addr *mac, bool *failed);
/* Put the peer's MAC into the QP's template (soliciting it if unknown);
 * false while unresolved (*failed: given up). */
bool eth_qp_resolve(struct droce_qp *qp, bool *failed);

/*
 * With thousands of QPs the one served next is cold: ask for the lines a
 * packet of it reads and writes (struct droce_qp keeps them together)
 * while the current one is served. A handful of prefetches; from L1 when
 * few QPs are busy.
 */
static inline void eth_qp_prefetch(const struct droce_qp *qp)
{
	rte_prefetch0(&qp->dev);		/* state, SQ geometry */
	rte_prefetch0(&qp->pd);			/* the engine's attributes */
	rte_prefetch0(&qp->img);		/* the header image ... */
	rte_prefetch0(&qp->neigh_genp);		/* ... and its validity */
	rte_prefetch0(&qp->sq_ci);		/* completions */
	rte_prefetch0(&qp->flags);		/* lists, requester */
	rte_prefetch0(&qp->req_timer_tsc);	/* ACKs, timer; responder's PSNs */
	rte_prefetch0(&qp->st);			/* counters */
}

/* The QP's number, from its engine line: the verbs object's first line
 * (ex.qp_base.qp_num) is otherwise never read per message, and with
 * thousands of QPs it was a cold line per visit, unprefetched (the
 * responder's key check, each CQE). */
static inline uint32_t eth_qp_num(const struct droce_qp *qp)
{
	return qp->tbl_idx + DROCE_QPN_BASE;
}

/* The state slots of n WQEs from idx (a line per ~2 slots). */
static inline void eth_qp_prefetch_slots(const struct droce_qp *qp,
					 uint32_t idx, uint32_t n)
{
	const struct droce_swqe_state *st = qp->sq_state;
	uint32_t mask = qp->sq_cnt - 1;

	for (uint32_t k = 0; k < n; k += 2)
		rte_prefetch0(&st[(idx + k) & mask]);
}

/* The WQEs a QP will send next (up to ETH_QP_BUDGET), and their state
 * slots. */
static inline void eth_qp_prefetch_wqes(const struct droce_qp *qp)
{
	uint32_t idx = qp->req_cur;
	uint32_t n = RTE_MIN(qp->sq_db - idx, (uint32_t)ETH_QP_BUDGET);

	for (uint32_t k = 0; k < n; k++)
		rte_prefetch0(qp->sq_buf + (size_t)((idx + k) & (qp->sq_cnt - 1)) *
			      qp->sq_stride);
	eth_qp_prefetch_slots(qp, idx, n);
}

/*
 * The first source line of the WQE a QP will start next: with thousands
 * of QPs each QP's send buffer is a cold line (and page) per visit, and
 * the first packet's copy would wait for it. A hint: the WQE's line was
 * asked for a visit before, it may be stale or not posted yet, and a
 * prefetch of any address is harmless (the requester checks the key and
 * bounds when it sends).
 */
static inline void eth_qp_prefetch_src(const struct droce_qp *qp)
{
	const uint8_t *w = droce_sq_slot(qp, qp->req_cur);
	const struct mlx5_wqe_ctrl_seg *c = (const void *)w;
	const struct mlx5_wqe_data_seg *d;
	const struct droce_mr *mr;
	uint64_t va;

	if ((c->signature & DROCE_WQE_INLINE) ||
	    qp->transport == ROCE_TRANSPORT_UD)
		return;
	switch (rte_be_to_cpu_32(c->opmod_idx_opcode) & 0xff) {
	case MLX5_OPCODE_RDMA_WRITE:
	case MLX5_OPCODE_RDMA_WRITE_IMM:
		d = (const void *)(w + 2 * DROCE_SEG);	/* behind the RADDR */
		break;
	case MLX5_OPCODE_SEND:
	case MLX5_OPCODE_SEND_IMM:
		d = (const void *)(w + DROCE_SEG);
		break;
	default:
		return;		/* READs, atomics: nothing to read here */
	}
	mr = droce_mr_lookup(qp->dev, rte_be_to_cpu_32(d->lkey));
	va = rte_be_to_cpu_64(d->addr);
	if (mr && mr->kind == DROCE_KEY_MR && va - mr->iova < mr->len)
		rte_prefetch0(mr->host + (va - mr->iova));
}

/* The template's destination MAC is the peer's current one. A neighbour
 * whose MAC changes bumps its generation, so the QPs that use it resolve
 * again at their next frame: no walk over the QPs (doc/security.md). */
static inline bool eth_qp_tmpl_ok(const struct droce_qp *qp)
{
	return likely(qp->tmpl_ready) && likely(*qp->neigh_genp == qp->neigh_gen);
}
/* false if mac cannot be a neighbour's (zero, multicast): nothing learnt */
bool eth_neigh_learn(struct droce_engine *eng, struct droce_dev *dev,
		     const uint8_t *gid, const struct rte_ether_addr *mac);
void eth_ndp_rx(struct droce_dev *dev, struct rte_mbuf *m, uint32_t off);

/* A GID as the L3 addresses of a roce_pkt (IPv4-mapped -> IPv4). */
static inline void eth_gid_to_pkt(const uint8_t *g, bool *ipv6, uint8_t *ip)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	*ipv6 = memcmp(g, v4, sizeof(v4)) != 0;
	if (*ipv6)
		memcpy(ip, g, 16);
	else
		memcpy(ip, g + 12, 4);
}
void eth_arp_timer(struct droce_dev *dev, uint64_t now);

/* Trace a frame by parsing it again in full (roce_parse). */
void eth_trace_frame(const char *dir, const struct droce_dev *dev,
		     const struct rte_mbuf *m);

/* eth_req.c: requester */
void eth_req_progress(struct droce_qp *qp, uint32_t *budget);
void eth_req_timer(struct droce_qp *qp, uint64_t now);
/* Arm the local ACK timer if PSNs are outstanding and it is not armed. */
void eth_req_arm_timer(struct droce_qp *qp);
void eth_req_retransmit(struct droce_qp *qp, uint32_t psn);
void eth_qp_flush(struct droce_qp *qp);
/*
 * The QP enters the Error state before the completion that reports the
 * error is written: a consumer that polls that CQE and then queries the
 * QP must find it in ERR (IBTA 10.3.1; the CQE is published with release
 * order after these stores). eth_qp_error() marks and flushes.
 */
static inline void eth_qp_mark_error(struct droce_qp *qp)
{
	__atomic_store_n(&qp->state, IBV_QPS_ERR, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->ex.qp_base.state, IBV_QPS_ERR, __ATOMIC_RELEASE);
}
void eth_qp_error(struct droce_qp *qp);
/*
 * A send WR failed locally (a bad lkey, too long, a failed bind). RC
 * loses the connection: ERR. UD and UC have none to lose: the QP enters
 * Send Queue Error (IBTA 10.3.1, SQEr), the failed WR completes with its
 * error and every send WR after it, posted before or while in SQE, with a
 * flush error; receives go on; ibv_modify_qp(SQE -> RTS) resumes sending.
 * As with ERR, the state is stored before the error CQE is written.
 */
static inline void eth_qp_mark_send_error(struct droce_qp *qp, uint8_t status)
{
	/* A UC peer that no longer answers ARP is a lost path, not a bad WR. */
	enum ibv_qp_state s = qp->transport == ROCE_TRANSPORT_RC ||
			      status == IBV_WC_RETRY_EXC_ERR ?
			      IBV_QPS_ERR : IBV_QPS_SQE;

	__atomic_store_n(&qp->state, s, __ATOMIC_RELEASE);
	__atomic_store_n(&qp->ex.qp_base.state, s, __ATOMIC_RELEASE);
}
/* After the error CQE: flush what follows (ERR: both queues; SQE: sends). */
void eth_qp_send_error(struct droce_qp *qp);
void eth_qp_flush_sq(struct droce_qp *qp);
void eth_qp_reset(struct droce_qp *qp);

/* eth_resp.c: responder */
/* icrc_late: the frame's ICRC is not checked yet (eth_resp_place_late
 * said so); the responder checks it as it copies the payload into place. */
void eth_resp_rx(struct droce_qp *qp, const struct roce_pkt *p,
		 const struct rte_mbuf *m, bool icrc_late);
bool eth_resp_place_late(const struct droce_qp *qp, const struct roce_pkt *p);
/* Payloads from which eth_rx_one leaves the ICRC to the placement: below
 * it one pass costs what two do (bench_crc32: 58 cycles either way at
 * 256 B, 138 against 168 at 1 KiB). */
#define ETH_RX_LATE_MIN		512
void eth_resp_progress(struct droce_qp *qp, uint32_t *budget);

/* eth_comp.c: completer */
/* An ACK or NAK, from roce_parse_ack4's fields (eth_rx_one's shortcut). */
void eth_comp_rx_ack(struct droce_qp *qp, uint8_t syndrome, uint32_t psn);
void eth_comp_rx(struct droce_qp *qp, const struct roce_pkt *p,
		 const struct rte_mbuf *m, bool icrc_late);
bool eth_comp_place_late(const struct droce_qp *qp, const struct roce_pkt *p);
void eth_complete_send(struct droce_qp *qp, uint32_t idx, uint8_t status);

/* Scatter/gather between mlx5 data segments (big-endian) and packets;
 * gather carries *crc over the bytes (roce_crc32_copy) unless crc is NULL. */
int eth_sge_gather(struct droce_qp *qp, const struct mlx5_wqe_data_seg *d,
		   uint32_t nsge, uint32_t off, uint8_t *dst, uint32_t len,
		   uint32_t *crc);
/* Scatter len bytes from m (at moff), or from buf + moff when m is NULL;
 * with crc, m's first segment only, *crc carried over the bytes. */
int eth_sge_scatter(struct droce_qp *qp, const struct droce_pd *pd,
		    const struct mlx5_wqe_data_seg *d, uint32_t nsge, uint32_t off,
		    const struct rte_mbuf *m, const uint8_t *buf, uint32_t moff,
		    uint32_t len, uint32_t *crc);

/* Error codes of gather/scatter. */
#define ETH_SGE_PROT	-1	/* bad key, PD, bounds or rights */
#define ETH_SGE_LEN	-2	/* the data does not fit */

static inline bool op_is_atomic(uint8_t op)
{
	return op == MLX5_OPCODE_ATOMIC_CS || op == MLX5_OPCODE_ATOMIC_FA;
}

/* Operations that wait for a response, counted against max_rd_atomic. */
static inline bool op_is_rd_atomic(uint8_t op)
{
	return op == MLX5_OPCODE_RDMA_READ || op_is_atomic(op);
}

/* req_rd_outstanding counts each READ/atomic request once while it waits
 * for its response; a go-back-N un-counts what it will send again. */
static inline void eth_rd_count(struct droce_qp *qp, struct droce_swqe_state *st)
{
	if (!st->rd_counted) {
		st->rd_counted = 1;
		qp->req_rd_outstanding++;
	}
}

static inline void eth_rd_uncount(struct droce_qp *qp,
				  struct droce_swqe_state *st)
{
	if (st->rd_counted) {
		st->rd_counted = 0;
		qp->req_rd_outstanding--;
	}
}

static inline uint64_t eth_now(void)
{
	return rte_rdtsc();
}

/* The turn's time: read once a turn (see turn_tsc), or now outside one. */
static inline uint64_t eth_turn_tsc(struct droce_engine *eng)
{
	if (eng->turn_tsc == 0)
		eng->turn_tsc = eth_now();
	return eng->turn_tsc;
}

/* eth_pace.c: per-QP packet pacing (ibv_modify_qp_rate_limit) */
void eth_pace_init(struct droce_engine *eng);
void eth_pace_changed(struct droce_qp *qp);
void eth_pace_wait(struct droce_engine *eng, struct droce_qp *qp, uint64_t due);
void eth_pace_unlink(struct droce_engine *eng, struct droce_qp *qp);
int eth_pace_run(struct droce_engine *eng, uint64_t now);
uint64_t eth_pace_next_tsc(const struct droce_engine *eng);

/*
 * May a paced QP (pace_cyc_q16 != 0: the caller looks first, once per
 * turn) send its next packet now? If not, it goes on the pacing wheel
 * until it may, and the requester stops. Out of line, as is
 * eth_pace_charge(): inlined, their few lines changed how the compiler
 * laid out the requester's loop for unpaced QPs (+8 instructions a
 * packet).
 */
bool eth_pace_hold(struct droce_qp *qp);
/* A paced QP sent the packet eth_pace_hold() let out: move its clock on by
 * that frame's time at its rate. */
void eth_pace_charge(struct droce_qp *qp);

/*
 * The stamps' name for a frame (droce_stamp.h): opcode << 24 | PSN from
 * its BTH, ~0 for anything that is not RoCEv2 (VLAN tags skipped). A
 * walk to the BTH, not roce_parse(): every frame of a transmit burst is
 * named (before the port may free it), and a full parse each would move
 * what the stamps measure. Compiled out without -Dstamps=true.
 */
static inline uint32_t eth_stamp_word(const struct rte_mbuf *m)
{
#ifdef DROCE_STAMPS
	const uint8_t *d = rte_pktmbuf_mtod(m, const uint8_t *);
	uint32_t len = m->data_len, off = 12, udp;
	uint16_t type;

	while (off + 2 <= len &&
	       (type = (uint16_t)(d[off] << 8 | d[off + 1])) == 0x8100)
		off += ROCE_VLAN_HLEN;
	if (off + 2 > len)
		return ~0u;
	off += 2;
	if (type == 0x0800 && off + ROCE_IPV4_HLEN <= len && d[off + 9] == 17)
		udp = off + (d[off] & 0xfu) * 4;
	else if (type == 0x86dd && off + ROCE_IPV6_HLEN <= len &&
		 d[off + 6] == 17)
		udp = off + ROCE_IPV6_HLEN;
	else
		return ~0u;
	if (udp + ROCE_UDP_HLEN + ROCE_BTH_LEN > len ||
	    (d[udp + 2] << 8 | d[udp + 3]) != ROCE_UDP_DPORT)
		return ~0u;
	udp += ROCE_UDP_HLEN;
	return (uint32_t)d[udp] << 24 | (uint32_t)d[udp + 9] << 16 |
	       (uint32_t)d[udp + 10] << 8 | d[udp + 11];
#else
	(void)m;
	return 0;
#endif
}

#endif /* ETH_INT_H */
