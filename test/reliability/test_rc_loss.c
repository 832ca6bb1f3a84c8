/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC on a hostile link: two droce nodes on a net_ring pair, each port's
 * receive side impaired by lib/impair (drop, duplicate, reorder, corrupt;
 * seeded, printed). For each loss rate, several QPs run a mixed stream of
 * SEND, SEND_WITH_IMM, RDMA WRITE, WRITE_WITH_IMM, READ, CMP_AND_SWP and
 * FETCH_AND_ADD, every one signalled, with messages spanning several
 * packets. Checked: every operation completes exactly once, in order, with
 * SUCCESS and every CQE field right; every byte lands where it should; the
 * counters show that loss happened and was recovered (retransmissions,
 * NAKs, ICRC drops). Then atomics, at 5% loss with duplicates and
 * reordering: fetch-and-add from both nodes on shared counters ends at the
 * exact sum, and compare-and-swap used as a lock never lets two holders in.
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>

#include <rte_cycles.h>

#include "droce.h"
#include "droce_impair.h"
#include "droce_test.h"

#define NQP		4	/* QP pairs, A -> B */
#define DEPTH		16	/* operations in flight per QP */
#define SLOTS		(2 * DEPTH)
#define MAXMSG		(3 * 1024 + 100)	/* 4 packets at path MTU 1024 */
#define SLOT_SZ		4096

static struct dt_env env;
static struct dt_dev *A, *B;

enum op { OP_SEND, OP_SEND_IMM, OP_WRITE, OP_WRITE_IMM, OP_READ, OP_CAS,
	  OP_FAA, OP_N };
static const char *const op_name[OP_N] = {
	"SEND", "SEND_IMM", "WRITE", "WRITE_IMM", "READ", "CAS", "FAA",
};

struct pair {
	struct dt_cq scq, rcq;		/* on A: send; on B: recv */
	struct dt_cq bscq, arcq;	/* unused directions (B send, A recv) */
	struct ibv_qp *qa, *qb;
	uint8_t *abuf, *bbuf;		/* SLOTS x SLOT_SZ each, + counters */
	struct ibv_mr *amr, *bmr;
	/* per slot: what the operation in it was */
	struct {
		enum op op;
		uint32_t len;
		uint64_t seq;		/* operation number */
		uint64_t expect_orig;	/* atomics */
	} slot[SLOTS];
	uint64_t posted, completed, recv_posted, recv_done;
	uint64_t recv_seq[SLOTS];	/* receive slot -> operation number */
	uint64_t faa_total;		/* expected value of the FAA counter */
	uint64_t cas_value;		/* expected value of the CAS word */
	uint64_t ops[OP_N];
	bool retry_exc;			/* a WR failed all its tries (below) */
};

static struct pair pairs[NQP];

/*
 * At 10 % loss each way (and 2.5 % damaged) one try of a request and its
 * answer fails with p ~ 0.23, and a WR fails (RETRY_EXC_ERR) when a
 * timeout is followed by 7 more failed tries: ~3e-5 per timeout, and a
 * round has ~130 timeouts, so about one run in 250 (measured: 1 in 225,
 * 2026-11-22). That is the transport doing what IBTA says, not a fault;
 * the round accepts it (the QP's later WRs flushed, its other checks
 * skipped) and is run once more with another seed, where it is not
 * accepted. Set for that round only.
 */
static bool retry_exc_ok;

static uint8_t pattern(uint64_t seq, uint32_t i)
{
	return (uint8_t)(seq * 131 + i * 7 + (i >> 8));
}

static uint8_t *aslot(struct pair *p, uint64_t s)
{
	return p->abuf + (s % SLOTS) * SLOT_SZ;
}

static uint8_t *bslot(struct pair *p, uint64_t s)
{
	return p->bbuf + (s % SLOTS) * SLOT_SZ;
}

/* B's receive buffers follow its WRITE/READ slots. */
static uint8_t *brecv(struct pair *p, uint64_t r)
{
	return p->bbuf + (SLOTS + r % SLOTS) * SLOT_SZ;
}

/* Counters come last: [0] FAA target, [1] CAS word, on B. */
static uint64_t *bword(struct pair *p, int i)
{
	return (uint64_t *)(p->bbuf + 2 * SLOTS * SLOT_SZ) + i;
}

static void post_recv_slot(struct pair *p)
{
	struct ibv_sge sge = {
		.addr = (uintptr_t)brecv(p, p->recv_posted),
		.length = SLOT_SZ, .lkey = p->bmr->lkey,
	};
	struct ibv_recv_wr wr = { .wr_id = p->recv_posted, .sg_list = &sge,
				  .num_sge = 1 };
	struct ibv_recv_wr *bad;

	CHECK_EQ(ibv_post_recv(p->qb, &wr, &bad), 0);
	p->recv_posted++;
}

static void post_op(struct pair *p)
{
	uint64_t s = p->posted;
	enum op op = (enum op)dt_rand_range(0, OP_N - 1);
	uint32_t len = (uint32_t)dt_rand_range(0, MAXMSG);
	struct ibv_sge sge;
	struct ibv_send_wr wr, *bad;
	uint8_t *src = aslot(p, s);

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = s;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.send_flags = IBV_SEND_SIGNALED;
	sge.lkey = p->amr->lkey;
	sge.addr = (uintptr_t)src;
	if (op == OP_CAS || op == OP_FAA)
		len = 8;
	sge.length = len;
	p->slot[s % SLOTS].op = op;
	p->slot[s % SLOTS].len = len;
	p->slot[s % SLOTS].seq = s;
	switch (op) {
	case OP_SEND:
	case OP_SEND_IMM:
	case OP_WRITE:
	case OP_WRITE_IMM:
		for (uint32_t i = 0; i < len; i++)
			src[i] = pattern(s, i);
		break;
	case OP_READ:
		for (uint32_t i = 0; i < len; i++)
			bslot(p, s)[i] = pattern(s, i);
		memset(src, 0, len);
		break;
	default:
		memset(src, 0xee, 8);
		break;
	}
	switch (op) {
	case OP_SEND:
		wr.opcode = IBV_WR_SEND;
		break;
	case OP_SEND_IMM:
		wr.opcode = IBV_WR_SEND_WITH_IMM;
		wr.imm_data = htonl((uint32_t)s);
		break;
	case OP_WRITE:
	case OP_WRITE_IMM:
		wr.opcode = op == OP_WRITE ? IBV_WR_RDMA_WRITE :
					     IBV_WR_RDMA_WRITE_WITH_IMM;
		wr.imm_data = htonl((uint32_t)s);
		wr.wr.rdma.remote_addr = (uintptr_t)bslot(p, s);
		wr.wr.rdma.rkey = p->bmr->rkey;
		break;
	case OP_READ:
		wr.opcode = IBV_WR_RDMA_READ;
		wr.wr.rdma.remote_addr = (uintptr_t)bslot(p, s);
		wr.wr.rdma.rkey = p->bmr->rkey;
		break;
	case OP_CAS:
		/* Swap in the operation number; the old value is the last. */
		wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
		wr.wr.atomic.remote_addr = (uintptr_t)bword(p, 1);
		wr.wr.atomic.rkey = p->bmr->rkey;
		wr.wr.atomic.compare_add = p->cas_value;
		wr.wr.atomic.swap = s + 1;
		p->slot[s % SLOTS].expect_orig = p->cas_value;
		p->cas_value = s + 1;
		break;
	case OP_FAA:
		wr.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.remote_addr = (uintptr_t)bword(p, 0);
		wr.wr.atomic.rkey = p->bmr->rkey;
		wr.wr.atomic.compare_add = s + 1;
		p->slot[s % SLOTS].expect_orig = p->faa_total;
		p->faa_total += s + 1;
		break;
	default:
		break;
	}
	CHECK_EQ(ibv_post_send(p->qa, &wr, &bad), 0);
	p->ops[op]++;
	p->posted++;
}

static const enum ibv_wr_opcode wr_of[OP_N] = {
	IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_WRITE,
	IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_RDMA_READ,
	IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD,
};

/* The requester's completion for operation s: in order, exactly once. */
static void on_send_wc(struct pair *p, const struct ibv_wc *wc)
{
	uint64_t s = p->completed;
	enum op op = p->slot[s % SLOTS].op;
	uint32_t len = p->slot[s % SLOTS].len;
	struct dt_wc_exp e = dt_exp_send(s, wr_of[op], len, p->qa->qp_num);
	uint8_t *a = aslot(p, s);

	if (op == OP_CAS || op == OP_FAA)
		e.byte_len = 8;
	if (retry_exc_ok && (wc->status == IBV_WC_RETRY_EXC_ERR ||
			     (p->retry_exc && wc->status == IBV_WC_WR_FLUSH_ERR))) {
		CHECK_EQ(wc->wr_id, s);
		CHECK_EQ(wc->qp_num, p->qa->qp_num);
		if (wc->status == IBV_WC_RETRY_EXC_ERR)
			printf("note: op %" PRIu64 " (%s) failed all its tries: "
			       "retry count exceeded\n", s, op_name[op]);
		p->retry_exc = true;
		p->completed++;
		return;
	}
	if (!CHECK_WC(wc, &e))
		return;
	switch (op) {
	case OP_WRITE:
	case OP_WRITE_IMM:
		/* Acknowledged: the data is in B's memory, byte for byte. */
		for (uint32_t i = 0; i < len; i++)
			if (bslot(p, s)[i] != pattern(s, i))
				DT_FAIL_(1, "op %" PRIu64 " %s: B byte %u is 0x%02x, want 0x%02x",
					 s, op_name[op], i, bslot(p, s)[i],
					 pattern(s, i));
		break;
	case OP_READ:
		for (uint32_t i = 0; i < len; i++)
			if (a[i] != pattern(s, i))
				DT_FAIL_(1, "op %" PRIu64 " READ: byte %u is 0x%02x, want 0x%02x",
					 s, i, a[i], pattern(s, i));
		break;
	case OP_CAS:
	case OP_FAA: {
		uint64_t got;

		memcpy(&got, a, 8);
		/* Executed exactly once: a replayed atomic would show here. */
		if (got != p->slot[s % SLOTS].expect_orig)
			DT_FAIL_(1, "op %" PRIu64 " %s: original value %" PRIu64
				 ", want %" PRIu64, s, op_name[op], got,
				 p->slot[s % SLOTS].expect_orig);
		break;
	}
	default:
		break;
	}
	p->completed++;
}

/* B's receive completion: a SEND's data or a WRITE_WITH_IMM's notice. */
static void on_recv_wc(struct pair *p, const struct ibv_wc *wc)
{
	uint64_t r = p->recv_done;
	uint64_t s;
	enum op op;
	struct dt_wc_exp e;

	/* Receives complete in message order; find that message. */
	s = p->recv_seq[r % SLOTS];
	op = p->slot[s % SLOTS].op;
	e = dt_exp_recv(r, wr_of[op], p->slot[s % SLOTS].len, p->qb->qp_num,
			p->qa->qp_num, (uint32_t)s);
	if (!CHECK_WC(wc, &e))
		return;
	if (op == OP_SEND || op == OP_SEND_IMM)
		for (uint32_t i = 0; i < p->slot[s % SLOTS].len; i++)
			if (brecv(p, r)[i] != pattern(s, i))
				DT_FAIL_(1, "op %" PRIu64 " %s: received byte %u is 0x%02x, want 0x%02x",
					 s, op_name[op], i, brecv(p, r)[i],
					 pattern(s, i));
	p->recv_done++;
}

static void setup_pairs(void)
{
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	size_t sz = 2 * SLOTS * SLOT_SZ + 64;
	int access = DT_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC;

	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 64;
	qc.max_recv_wr = 64;
	dt_conn_cfg_default(&cc);
	cc.mtu = IBV_MTU_1024;
	cc.access = access;
	/* 4 ms local ACK timeout: with 7 retries and the 1x/2x/4x backoff a
	 * peer must be silent ~90 ms to fail a WR. At 1 ms (~23 ms) one run
	 * in CI lost a READ at 10 % loss while the machine was loaded (three
	 * busy threads on two cores). */
	cc.timeout = 10;
	cc.retry_cnt = 7;
	cc.rnr_retry = 7;
	cc.max_rd_atomic = 8;
	cc.max_dest_rd_atomic = 8;
	for (int i = 0; i < NQP; i++) {
		struct pair *p = &pairs[i];

		dt_cq_create(A, 256, false, &p->scq);
		dt_cq_create(A, 64, false, &p->arcq);
		dt_cq_create(B, 64, false, &p->bscq);
		dt_cq_create(B, 256, false, &p->rcq);
		p->qa = dt_qp_create(A, p->scq.cq, p->arcq.cq, &qc, NULL);
		p->qb = dt_qp_create(B, p->bscq.cq, p->rcq.cq, &qc, NULL);
		CHECK_PTR(p->qa);
		CHECK_PTR(p->qb);
		p->abuf = dt_alloc(sz);
		p->bbuf = dt_alloc(sz);
		p->amr = dt_reg_mr(A->pd, p->abuf, sz, access);
		p->bmr = dt_reg_mr(B->pd, p->bbuf, sz, access);
		CHECK_PTR(p->amr);
		CHECK_PTR(p->bmr);
		dt_connect(A, p->qa, (uint32_t)dt_rand_range(0, 0xffffff),
			   B, p->qb, (uint32_t)dt_rand_range(0, 0xffffff), &cc);
	}
}

static void teardown_pairs(void)
{
	for (int i = 0; i < NQP; i++) {
		struct pair *p = &pairs[i];

		CHECK_EQ(ibv_destroy_qp(p->qa), 0);
		CHECK_EQ(ibv_destroy_qp(p->qb), 0);
		CHECK_EQ(ibv_dereg_mr(p->amr), 0);
		CHECK_EQ(ibv_dereg_mr(p->bmr), 0);
		dt_cq_destroy(&p->scq);
		dt_cq_destroy(&p->arcq);
		dt_cq_destroy(&p->bscq);
		dt_cq_destroy(&p->rcq);
		free(p->abuf);
		free(p->bbuf);
		memset(p, 0, sizeof(*p));
	}
}

/*
 * Receives are posted ahead for every operation that needs one; the
 * posting side records which operation each receive slot belongs to.
 */
static void run_mixed(uint64_t per_qp, double limit_s)
{
	double t0 = dt_now();
	uint64_t left = (uint64_t)NQP * per_qp;

	while (left) {
		for (int i = 0; i < NQP; i++) {
			struct pair *p = &pairs[i];
			struct ibv_wc wc[16];
			int n;

			while (!p->retry_exc && p->posted < per_qp &&
			       p->posted - p->completed < DEPTH &&
			       p->recv_posted - p->recv_done < DEPTH) {
				uint64_t s = p->posted;

				post_op(p);
				if (p->slot[s % SLOTS].op == OP_SEND ||
				    p->slot[s % SLOTS].op == OP_SEND_IMM ||
				    p->slot[s % SLOTS].op == OP_WRITE_IMM) {
					p->recv_seq[p->recv_posted % SLOTS] = s;
					post_recv_slot(p);
				}
			}
			n = dt_cq_poll(&p->scq, wc, 16);
			CHECK(n >= 0);
			for (int k = 0; k < n; k++) {
				bool was = p->retry_exc;

				on_send_wc(p, &wc[k]);
				left--;
				if (p->retry_exc && !was)	/* never posted */
					left -= per_qp - p->posted;
			}
			n = dt_cq_poll(&p->rcq, wc, 16);
			CHECK(n >= 0);
			for (int k = 0; k < n; k++)
				on_recv_wc(p, &wc[k]);
		}
		if (dt_now() - t0 > limit_s) {
			dt_dump_stats(&env);
			for (int i = 0; i < NQP; i++) {
				struct droce_qp_stats qs;

				droce_qp_stats_get(pairs[i].qa, &qs);
				fprintf(stderr, "pair %d: posted %" PRIu64 " completed %"
					PRIu64 " recv %" PRIu64 "/%" PRIu64
					" retrans %" PRIu64 " timeouts %" PRIu64 "\n",
					i, pairs[i].posted, pairs[i].completed,
					pairs[i].recv_done, pairs[i].recv_posted,
					qs.retransmits, qs.timeouts);
			}
			DT_FAIL_(1, "mixed run: %" PRIu64 " operations still open after %.0f s",
				 left, limit_s);
		}
	}
	for (int i = 0; i < NQP; i++) {
		struct pair *p = &pairs[i];

		if (p->retry_exc) {
			/* B waits for messages that never came, and the
			 * failed WR may or may not have executed. */
			CHECK_EQ(dt_cq_drain_unexpected(&p->scq, "requester CQ"), 0);
			continue;
		}
		CHECK_EQ(p->recv_done, p->recv_posted);
		CHECK_EQ(*bword(p, 0), p->faa_total);
		CHECK_EQ(*bword(p, 1), p->cas_value);
		/* Nothing completes twice: the queues are quiet now. */
		CHECK_EQ(dt_cq_drain_unexpected(&p->scq, "requester CQ"), 0);
		CHECK_EQ(dt_cq_drain_unexpected(&p->rcq, "receiver CQ"), 0);
	}
}

static void impair_both(const char *kv)
{
	CHECK_EQ(droce_dev_impair(A->ctx, kv), 0);
	CHECK_EQ(droce_dev_impair(B->ctx, kv), 0);
}

static void stats_of(struct dt_dev *d, struct droce_dev_stats *s)
{
	CHECK_EQ(droce_dev_stats_get(d->ctx, s), 0);
}

static bool zero_copy(void)
{
	const char *da = getenv("DT_DEVARGS");

	return da != NULL && strstr(da, "zc_min") != NULL;
}

/* True when a WR failed all its tries and retry_exc_ok let it pass. */
static bool loss_round(double loss, uint64_t per_qp, uint64_t seed)
{
	char kv[256];
	bool exc = false;
	struct droce_dev_stats a0, b0, a1, b1;
	struct droce_impair_stats ia, ib;
	double t0 = dt_now();

	snprintf(kv, sizeof(kv),
		 "seed=%" PRIu64 ",rx_drop=%g,rx_dup=%g,rx_reorder=%g,rx_corrupt=%g",
		 seed, loss, loss / 2, loss, loss / 4);
	impair_both(kv);
	stats_of(A, &a0);
	stats_of(B, &b0);
	setup_pairs();
	run_mixed(per_qp, 90);
	stats_of(A, &a1);
	stats_of(B, &b1);
	CHECK_EQ(droce_impair_stats(droce_dev_impairer(A->ctx), &ia), 0);
	CHECK_EQ(droce_impair_stats(droce_dev_impairer(B->ctx), &ib), 0);
	printf("loss %5.1f%%: %d QPs x %" PRIu64 " ops in %.2f s; dropped %" PRIu64
	       "+%" PRIu64 ", dup %" PRIu64 "+%" PRIu64 ", corrupt %" PRIu64
	       "+%" PRIu64 "; retransmits %" PRIu64 ", timeouts %" PRIu64
	       ", seq NAKs %" PRIu64 ", dup requests %" PRIu64
	       ", ICRC drops %" PRIu64 " (checked as placed: %" PRIu64
	       "+%" PRIu64 " frames), atomic replays %" PRIu64
	       ", READ replays %" PRIu64 "\n",
	       loss * 100, NQP, per_qp, dt_now() - t0,
	       ia.rx.dropped, ib.rx.dropped, ia.rx.duplicated, ib.rx.duplicated,
	       ia.rx.corrupted, ib.rx.corrupted,
	       a1.retransmits - a0.retransmits, a1.timeouts - a0.timeouts,
	       b1.tx_nak_seq - b0.tx_nak_seq, b1.rx_dup - b0.rx_dup,
	       (a1.rx_icrc_err - a0.rx_icrc_err) + (b1.rx_icrc_err - b0.rx_icrc_err),
	       a1.rx_icrc_late - a0.rx_icrc_late,
	       b1.rx_icrc_late - b0.rx_icrc_late, b1.atomic_replays - b0.atomic_replays,
	       b1.read_replays - b0.read_replays);
	/* The link really was hostile, and the transport really recovered.
	 * (At 0.1% a run may, rarely, lose nothing at all.) */
	if (loss >= 0.01) {
		CHECK(ia.rx.dropped + ib.rx.dropped > 0);
		CHECK(a1.retransmits > a0.retransmits);
		CHECK(ia.rx.corrupted + ib.rx.corrupted > 0);
		CHECK((a1.rx_icrc_err - a0.rx_icrc_err) +
		      (b1.rx_icrc_err - b0.rx_icrc_err) > 0);
		CHECK(b1.rx_dup > b0.rx_dup);
		/* MIDDLE and LAST frames of SENDs and WRITEs (1 KiB, at B)
		 * and of READ responses (at A) had their ICRC checked as they
		 * were placed: damaged ones among them must not leave a wrong
		 * byte (checked above). (Frames sent zero-copy arrive in two
		 * segments: checked first.) */
		if (!zero_copy()) {
			CHECK(a1.rx_icrc_late > a0.rx_icrc_late);
			CHECK(b1.rx_icrc_late > b0.rx_icrc_late);
		}
	}
	for (int i = 0; i < NQP; i++)
		exc |= pairs[i].retry_exc;
	teardown_pairs();
	impair_both("drop=0,dup=0,reorder=0,corrupt=0");
	return exc;
}

/* ------------------------------------------------- atomics under loss */

/*
 * FAA from both nodes: A's QPs add to a counter in B, B's QPs to one in A
 * (the responder's CPU atomics are what make this exact), and the local CPU
 * adds to both at the same time.
 */
static void faa_both_sides(uint64_t per_qp)
{
	enum { N = 3 };
	struct side {
		struct dt_dev *req, *resp;
		struct dt_cq scq[N], rcq[N], xs[N], xr[N];
		struct ibv_qp *q[N], *peer[N];
		uint64_t *ctr;
		struct ibv_mr *ctr_mr, *res_mr[N];
		uint64_t *res[N];
		uint64_t posted[N], done[N];
	} sides[2];
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	uint64_t cpu_adds = 0;
	double t0 = dt_now();
	int access = DT_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC;

	dt_qp_cfg_default(&qc);
	dt_conn_cfg_default(&cc);
	cc.access = access;
	/* 4 ms, as in the loss rounds: these ran at 10 % loss too, and at
	 * 1 ms (~27 ms of silence fails a WR) a loaded CI host failed the
	 * CAS lock with RETRY_EXC_ERR. */
	cc.timeout = 10;
	cc.max_rd_atomic = 8;
	cc.max_dest_rd_atomic = 8;
	memset(sides, 0, sizeof(sides));
	for (int s = 0; s < 2; s++) {
		struct side *x = &sides[s];

		x->req = s ? B : A;
		x->resp = s ? A : B;
		x->ctr = dt_alloc(4096);
		x->ctr_mr = dt_reg_mr(x->resp->pd, x->ctr, 4096, access);
		CHECK_PTR(x->ctr_mr);
		for (int i = 0; i < N; i++) {
			dt_cq_create(x->req, 64, false, &x->scq[i]);
			dt_cq_create(x->req, 8, false, &x->rcq[i]);
			dt_cq_create(x->resp, 8, false, &x->xs[i]);
			dt_cq_create(x->resp, 8, false, &x->xr[i]);
			x->q[i] = dt_qp_create(x->req, x->scq[i].cq, x->rcq[i].cq, &qc, NULL);
			x->peer[i] = dt_qp_create(x->resp, x->xs[i].cq, x->xr[i].cq, &qc, NULL);
			CHECK_PTR(x->q[i]);
			CHECK_PTR(x->peer[i]);
			x->res[i] = dt_alloc(4096);
			x->res_mr[i] = dt_reg_mr(x->req->pd, x->res[i], 4096, access);
			CHECK_PTR(x->res_mr[i]);
			dt_connect(x->req, x->q[i], (uint32_t)dt_rand_range(0, 0xffffff),
				   x->resp, x->peer[i],
				   (uint32_t)dt_rand_range(0, 0xffffff), &cc);
		}
	}
	for (;;) {
		bool busy = false;

		for (int s = 0; s < 2; s++) {
			struct side *x = &sides[s];

			for (int i = 0; i < N; i++) {
				struct ibv_wc wc[8];
				int n;

				while (x->posted[i] < per_qp &&
				       x->posted[i] - x->done[i] < 8) {
					uint64_t k = x->posted[i];
					struct ibv_sge sge = {
						(uintptr_t)&x->res[i][k % 8], 8,
						x->res_mr[i]->lkey };
					struct ibv_send_wr wr = {
						.wr_id = k, .sg_list = &sge,
						.num_sge = 1,
						.opcode = IBV_WR_ATOMIC_FETCH_AND_ADD,
						.send_flags = IBV_SEND_SIGNALED,
					}, *bad;

					wr.wr.atomic.remote_addr = (uintptr_t)x->ctr;
					wr.wr.atomic.rkey = x->ctr_mr->rkey;
					wr.wr.atomic.compare_add = 1;
					CHECK_EQ(ibv_post_send(x->q[i], &wr, &bad), 0);
					x->posted[i]++;
				}
				n = dt_cq_poll(&x->scq[i], wc, 8);
				CHECK(n >= 0);
				for (int k = 0; k < n; k++) {
					struct dt_wc_exp e = dt_exp_send(x->done[i],
						IBV_WR_ATOMIC_FETCH_AND_ADD, 8,
						x->q[i]->qp_num);

					CHECK_WC(&wc[k], &e);
					x->done[i]++;
				}
				if (x->done[i] < per_qp)
					busy = true;
			}
			/* The local CPU competes on the same word. */
			__atomic_fetch_add(x->ctr, 1, __ATOMIC_SEQ_CST);
		}
		cpu_adds++;
		if (!busy)
			break;
		if (dt_now() - t0 > 90)
			DT_FAIL_(1, "FAA both sides: not done after 90 s");
	}
	for (int s = 0; s < 2; s++) {
		struct side *x = &sides[s];

		printf("FAA on %s's counter: %d QPs x %" PRIu64 " remote + %" PRIu64
		       " CPU adds = %" PRIu64 "\n", s ? "A" : "B", N, per_qp,
		       cpu_adds, *x->ctr);
		CHECK_EQ(*x->ctr, N * per_qp + cpu_adds);
		for (int i = 0; i < N; i++) {
			CHECK_EQ(ibv_destroy_qp(x->q[i]), 0);
			CHECK_EQ(ibv_destroy_qp(x->peer[i]), 0);
			CHECK_EQ(ibv_dereg_mr(x->res_mr[i]), 0);
			dt_cq_destroy(&x->scq[i]);
			dt_cq_destroy(&x->rcq[i]);
			dt_cq_destroy(&x->xs[i]);
			dt_cq_destroy(&x->xr[i]);
			free(x->res[i]);
		}
		CHECK_EQ(ibv_dereg_mr(x->ctr_mr), 0);
		free(x->ctr);
	}
}

/*
 * CAS as a lock: N QPs on A contend for a lock word in B. The holder
 * increments a plain (non-atomic) counter next to it with READ then WRITE,
 * then releases with CAS. If two ever held the lock, increments are lost
 * and the counter falls short of the number of acquisitions.
 */
static void cas_lock(uint64_t acquisitions_per_qp)
{
	enum { N = 3 };
	enum st { IDLE, LOCKING, READING, WRITING, UNLOCKING } state[N];
	struct dt_cq scq[N], rcq[N], xs[N], xr[N];
	struct ibv_qp *q[N], *peer[N];
	uint64_t *word = dt_alloc(4096);	/* [0] lock, [1] counter, on B */
	uint64_t *loc[N];
	struct ibv_mr *wmr, *lmr[N];
	uint64_t got[N] = { 0 }, tries = 0, contended = 0;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	int access = DT_ACCESS_ALL | IBV_ACCESS_REMOTE_ATOMIC;
	double t0 = dt_now();
	bool all;

	dt_qp_cfg_default(&qc);
	dt_conn_cfg_default(&cc);
	cc.access = access;
	cc.timeout = 10;	/* as in faa_both_sides() */
	wmr = dt_reg_mr(B->pd, word, 4096, access);
	CHECK_PTR(wmr);
	for (int i = 0; i < N; i++) {
		dt_cq_create(A, 16, false, &scq[i]);
		dt_cq_create(A, 8, false, &rcq[i]);
		dt_cq_create(B, 8, false, &xs[i]);
		dt_cq_create(B, 8, false, &xr[i]);
		q[i] = dt_qp_create(A, scq[i].cq, rcq[i].cq, &qc, NULL);
		peer[i] = dt_qp_create(B, xs[i].cq, xr[i].cq, &qc, NULL);
		CHECK_PTR(q[i]);
		CHECK_PTR(peer[i]);
		loc[i] = dt_alloc(4096);
		lmr[i] = dt_reg_mr(A->pd, loc[i], 4096, access);
		CHECK_PTR(lmr[i]);
		dt_connect(A, q[i], (uint32_t)dt_rand_range(0, 0xffffff), B,
			   peer[i], (uint32_t)dt_rand_range(0, 0xffffff), &cc);
		state[i] = IDLE;
	}
	do {
		all = true;
		for (int i = 0; i < N; i++) {
			struct ibv_sge sge = { (uintptr_t)loc[i], 8, lmr[i]->lkey };
			struct ibv_send_wr wr = { .sg_list = &sge, .num_sge = 1,
				.send_flags = IBV_SEND_SIGNALED }, *bad;
			struct ibv_wc wc;
			int n;

			if (got[i] < acquisitions_per_qp)
				all = false;
			if (state[i] == IDLE) {
				if (got[i] >= acquisitions_per_qp)
					continue;
				wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
				wr.wr.atomic.remote_addr = (uintptr_t)&word[0];
				wr.wr.atomic.rkey = wmr->rkey;
				wr.wr.atomic.compare_add = 0;
				wr.wr.atomic.swap = (uint64_t)i + 1;
				CHECK_EQ(ibv_post_send(q[i], &wr, &bad), 0);
				state[i] = LOCKING;
				tries++;
				continue;
			}
			n = dt_cq_poll(&scq[i], &wc, 1);
			CHECK(n >= 0);
			if (n == 0)
				continue;
			CHECK_EQ(wc.status, IBV_WC_SUCCESS);
			switch (state[i]) {
			case LOCKING:
				if (loc[i][0] != 0) {	/* someone holds it */
					CHECK(loc[i][0] >= 1 && loc[i][0] <= N &&
					      loc[i][0] != (uint64_t)i + 1);
					contended++;
					state[i] = IDLE;
					break;
				}
				wr.opcode = IBV_WR_RDMA_READ;
				wr.wr.rdma.remote_addr = (uintptr_t)&word[1];
				wr.wr.rdma.rkey = wmr->rkey;
				CHECK_EQ(ibv_post_send(q[i], &wr, &bad), 0);
				state[i] = READING;
				break;
			case READING:
				loc[i][0]++;	/* the critical section */
				wr.opcode = IBV_WR_RDMA_WRITE;
				wr.wr.rdma.remote_addr = (uintptr_t)&word[1];
				wr.wr.rdma.rkey = wmr->rkey;
				CHECK_EQ(ibv_post_send(q[i], &wr, &bad), 0);
				state[i] = WRITING;
				break;
			case WRITING:
				wr.opcode = IBV_WR_ATOMIC_CMP_AND_SWP;
				wr.wr.atomic.remote_addr = (uintptr_t)&word[0];
				wr.wr.atomic.rkey = wmr->rkey;
				wr.wr.atomic.compare_add = (uint64_t)i + 1;
				wr.wr.atomic.swap = 0;
				CHECK_EQ(ibv_post_send(q[i], &wr, &bad), 0);
				state[i] = UNLOCKING;
				break;
			case UNLOCKING:
				/* We held it, so the release must see our id. */
				CHECK_EQ(loc[i][0], (uint64_t)i + 1);
				got[i]++;
				state[i] = IDLE;
				break;
			default:
				break;
			}
		}
		if (dt_now() - t0 > 90)
			DT_FAIL_(1, "CAS lock: not done after 90 s");
	} while (!all || state[0] != IDLE || state[1] != IDLE || state[2] != IDLE);
	printf("CAS lock: %d QPs x %" PRIu64 " acquisitions (%" PRIu64
	       " attempts, %" PRIu64 " found it held); counter %" PRIu64 "\n",
	       N, acquisitions_per_qp, tries, contended, word[1]);
	CHECK_EQ(word[1], N * acquisitions_per_qp);
	CHECK_EQ(word[0], 0);
	for (int i = 0; i < N; i++) {
		CHECK_EQ(ibv_destroy_qp(q[i]), 0);
		CHECK_EQ(ibv_destroy_qp(peer[i]), 0);
		CHECK_EQ(ibv_dereg_mr(lmr[i]), 0);
		dt_cq_destroy(&scq[i]);
		dt_cq_destroy(&rcq[i]);
		dt_cq_destroy(&xs[i]);
		dt_cq_destroy(&xr[i]);
		free(loc[i]);
	}
	CHECK_EQ(ibv_dereg_mr(wmr), 0);
	free(word);
}

int main(void)
{
	uint64_t seed;
	static const double losses[] = { 0.001, 0.01, 0.05, 0.10 };

	dt_watchdog(600);
	seed = dt_seed_init();
	/* Both ports impaired on receive: covers both directions. */
	dt_init(&env, "test_rc_loss", "ip=198.18.0.1,impair=seed:1",
		"ip=198.18.0.2,impair=seed:2");
	A = &env.dev[0];
	B = &env.dev[1];
	for (size_t i = 0; i < RTE_DIM(losses); i++) {
		uint64_t n = losses[i] >= 0.05 ? 400 :
			     losses[i] >= 0.01 ? 600 : 1500;

		retry_exc_ok = losses[i] >= 0.10;
		if (loss_round(losses[i], n, seed + i)) {
			printf("note: loss %.1f%%: a WR ran out of tries (see "
			       "retry_exc_ok); the round once more, seed %"
			       PRIu64 "\n", losses[i] * 100, seed + i + 1000);
			retry_exc_ok = false;
			(void)loss_round(losses[i], n, seed + i + 1000);
		}
		retry_exc_ok = false;
	}

	/* 5 % each way, not 10: an atomic and its answer both get through
	 * with p = 0.9025 at 5 % (0.81 at 10 %), and a WR fails when all 8
	 * tries of retry_cnt 7 miss: 8e-9 per operation here against 1.7e-6
	 * at 10 %, which over these ~2 400 one-at-a-time operations failed
	 * a run now and then (RETRY_EXC_ERR in the CAS lock, 2026-11-22).
	 * Duplicates and reordering, what atomics must survive exactly once,
	 * stay as they were. */
	impair_both("rx_drop=0.05,rx_dup=0.05,rx_reorder=0.10,seed=99");
	faa_both_sides(300);
	cas_lock(40);
	impair_both("drop=0,dup=0,reorder=0,corrupt=0");

	dt_fini(&env);
	if (dt_failures) {
		printf("test_rc_loss: FAILED (%u failure(s)), seed %" PRIu64 "\n",
		       dt_failures, seed);
		return 1;
	}
	printf("test_rc_loss: PASSED, seed %" PRIu64 "\n", seed);
	return 0;
}
