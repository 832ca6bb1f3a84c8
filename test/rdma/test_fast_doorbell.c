/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The app engine's fast doorbell (eth_engine.c, eth_qp_notify): the thread
 * that drives an app engine (lcore=app) rings a QP's doorbell without the
 * locked exchange while one is already pending, and whatever else drains
 * doorbells, the keeper or another application thread, issues a
 * membarrier between clearing db_pending and reading sq_db.
 *
 *  1. The keeper's drain. The driving thread posts a burst of WRITEs with
 *     post_drive=0 and then stops calling verbs, watching B's memory
 *     instead: the keeper must send them all (every byte compared), the
 *     posts after the first must have skipped the exchange
 *     (eng_db_skips), and each completion is then checked field by field.
 *  2. Threads taking turns. A second thread polls an empty CQ of the same
 *     engine while this one streams WRITEs of random sizes and polls for
 *     them: the role moves between the two (a membarrier each) until
 *     ETH_FAST_MOVES moves, then nobody has it and every doorbell takes
 *     the exchange; the stream stays byte-exact throughout.
 *
 * Where the kernel has no private expedited membarrier, the role is never
 * given: the test then checks that it was not (eng_fast_poster 0,
 * eng_db_skips 0) and that traffic flows as before.
 */
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/membarrier.h>
#include <sys/syscall.h>

#include "droce.h"
#include "droce_test.h"

#define BUF (1 << 16)
#define BURST 64		/* part 1: WRITEs posted without driving */
#define SLOT 256		/* part 1: bytes of B's buffer a WRITE */
#define STREAM 3000		/* part 2: WRITEs */
#define FAST_MOVES 8		/* ETH_FAST_MOVES */

static struct dt_env env;
static struct dt_dev *A, *B;
static struct dt_rc_pair rp;
static volatile int other_stop;
static volatile uint64_t other_polls;

static void stats_of(struct dt_dev *d, struct droce_dev_stats *st)
{
	CHECK_OK(droce_dev_stats_get(d->ctx, st));
}

static bool membarrier_usable(void)
{
	long r = syscall(SYS_membarrier, MEMBARRIER_CMD_QUERY, 0, 0);

	return r > 0 && (r & MEMBARRIER_CMD_PRIVATE_EXPEDITED);
}

static void check_write_wc(const struct ibv_wc *wc, uint64_t id)
{
	CHECK_EQ(wc->status, IBV_WC_SUCCESS);
	CHECK_EQ(wc->wr_id, id);
	CHECK_EQ(wc->opcode, IBV_WC_RDMA_WRITE);
	CHECK_EQ(wc->qp_num, rp.qa->qp_num);
	CHECK_EQ(wc->vendor_err, 0);
}

/* Part 2's other thread: drives the engine through polls of an empty CQ. */
static void *other_main(void *arg)
{
	struct ibv_wc wc;

	(void)arg;
	while (!other_stop) {
		int n = ibv_poll_cq(rp.rb.cq, 1, &wc);

		if (n != 0) {
			fprintf(stderr, "other thread: poll of an empty CQ gave %d\n", n);
			other_stop = 2;
			break;
		}
		other_polls++;
		usleep(50);
	}
	return NULL;
}

int main(void)
{
	uint8_t *a_buf = dt_alloc(BUF), *b_buf = dt_alloc(BUF);
	struct droce_dev_stats s0, s1;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	struct ibv_mr *mra, *mrb;
	struct ibv_wc wc[16];
	bool fast = membarrier_usable();
	pthread_t other;
	uint64_t skips, moves_seen = 0;
	double t0, t1;

	dt_watchdog(120);
	dt_seed_init();
	dt_init(&env, "test_fast_doorbell", "ip=198.18.0.1,lcore=app,post_drive=0",
		"ip=198.18.0.2,lcore=app,post_drive=0");
	A = &env.dev[0];
	B = &env.dev[1];
	printf("private expedited membarrier: %s\n", fast ? "yes" : "no");
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 128;
	dt_conn_cfg_default(&cc);
	dt_rc_pair_open(&rp, A, B, 256, &qc, &cc, NULL, 0x500, 0x600);
	mra = dt_reg_mr(A->pd, a_buf, BUF, DT_ACCESS_ALL);
	mrb = dt_reg_mr(B->pd, b_buf, BUF, DT_ACCESS_ALL);
	CHECK_PTR(mra);
	CHECK_PTR(mrb);

	/* This thread drives the engine: it takes the role. */
	CHECK_EQ(ibv_poll_cq(rp.sa.cq, 1, wc), 0);
	stats_of(A, &s0);
	CHECK_EQ(s0.eng_fast_poster, fast ? 1 : 0);
	CHECK_EQ(s0.eng_fast_moves, fast ? 1 : 0);

	/* 1. A burst posted, then nothing but memory watched: the keeper. */
	for (int i = 0; i < BURST; i++) {
		uint8_t *src = a_buf + i * SLOT;

		dt_fill_random(src, SLOT);
		src[0] = (uint8_t)(1 + i % 255);	/* never 0: arrival mark */
		dt_post_one(rp.qa, IBV_WR_RDMA_WRITE, 1000 + i, src, SLOT,
			    mra->lkey, b_buf + i * SLOT, mrb->rkey,
			    IBV_SEND_SIGNALED);
	}
	stats_of(A, &s1);
	skips = s1.eng_db_skips - s0.eng_db_skips;
	printf("part 1: %d posts, %" PRIu64 " skipped the exchange\n", BURST, skips);
	if (fast)
		CHECK_CMP(skips, >=, BURST / 2);
	else
		CHECK_EQ(skips, 0);
	t0 = dt_now();
	while (dt_now() - t0 < DT_WAIT_S) {
		int i;

		for (i = 0; i < BURST; i++)
			if (__atomic_load_n(&b_buf[i * SLOT], __ATOMIC_ACQUIRE) == 0)
				break;
		if (i == BURST)
			break;
		usleep(200);
	}
	for (int i = 0; i < BURST; i++)
		if (memcmp(a_buf + i * SLOT, b_buf + i * SLOT, SLOT) != 0) {
			dt_report(__FILE__, __LINE__,
				  "part 1: WRITE %d's bytes not at B after %.1f s",
				  i, dt_now() - t0);
			dt_dump_stats(&env);
			dt_abort();
		}
	stats_of(A, &s1);
	printf("part 1: all bytes at B in %.1f ms, keeper drives %" PRIu64 "\n",
	       (dt_now() - t0) * 1e3, s1.eng_keeper_drives - s0.eng_keeper_drives);
	CHECK_CMP(s1.eng_keeper_drives, >, s0.eng_keeper_drives);
	for (int i = 0; i < BURST; i++) {
		CHECK_EQ(dt_wait_wc(&rp.sa, wc, 1, DT_WAIT_S, "part 1 completion"), 1);
		check_write_wc(wc, 1000 + (uint64_t)i);
	}
	CHECK_EQ(dt_cq_drain_unexpected(&rp.sa, "part 1"), 0);
	/* (the keeper drove it, but the role stays with this thread) */
	stats_of(A, &s1);
	CHECK_EQ(s1.eng_fast_poster, fast ? 1 : 0);
	CHECK_EQ(s1.eng_fast_moves, s0.eng_fast_moves);

	/* 2. Another thread drives too: the role moves, then is gone. */
	memset(b_buf, 0, BUF);
	CHECK_OK(pthread_create(&other, NULL, other_main, NULL));
	/* (on past STREAM, for up to 20 s, until the role is given up: a
	 * busy machine may keep the other thread from driving for a while) */
	t1 = dt_now();
	for (int done = 0; !other_stop &&
	     (done < STREAM || (fast && moves_seen <= FAST_MOVES &&
				dt_now() - t1 < 20.0));) {
		int k = (int)dt_rand_range(1, 16), got = 0;
		uint32_t off[16], len[16];

		for (int j = 0; j < k; j++) {
			/* (a slot of its own in the batch: a later WRITE
			 * must not cover an earlier one's bytes) */
			len[j] = (uint32_t)dt_rand_range(1, 2048);
			off[j] = (uint32_t)j * (BUF / 16) +
				 ((uint32_t)dt_rand_range(0, 2048) & ~63u);
			dt_fill_random(a_buf + off[j], len[j]);
			dt_post_one(rp.qa, IBV_WR_RDMA_WRITE, (uint64_t)(done + j),
				    a_buf + off[j], len[j], mra->lkey,
				    b_buf + off[j], mrb->rkey, IBV_SEND_SIGNALED);
		}
		t0 = dt_now();
		while (got < k && dt_now() - t0 < DT_WAIT_S) {
			int n = ibv_poll_cq(rp.sa.cq, k - got, wc);

			CHECK_CMP(n, >=, 0);
			for (int j = 0; j < n; j++)
				check_write_wc(&wc[j], (uint64_t)(done + got + j));
			got += n;
		}
		if (got < k) {
			dt_report(__FILE__, __LINE__,
				  "part 2: %d of %d completions after %.0f s (WRITE %d on)",
				  got, k, DT_WAIT_S, done);
			dt_dump_stats(&env);
			dt_abort();
		}
		for (int j = 0; j < k; j++)
			if (memcmp(a_buf + off[j], b_buf + off[j], len[j]) != 0) {
				dt_report(__FILE__, __LINE__,
					  "part 2: WRITE %d (%u bytes at %u) differs at B",
					  done + j, len[j], off[j]);
				dt_abort();
			}
		done += k;
		if (fast && moves_seen <= FAST_MOVES) {
			stats_of(A, &s1);
			moves_seen = s1.eng_fast_moves;
			usleep(100);	/* (let the other thread drive) */
		}
	}
	other_stop = other_stop ? other_stop : 1;
	CHECK_OK(pthread_join(other, NULL));
	CHECK_EQ(other_stop, 1);
	stats_of(A, &s1);
	printf("part 2: %d WRITEs or more, the other thread polled %" PRIu64 " times; role moved %" PRIu64 " times, held now: %" PRIu64 "\n",
	       STREAM, other_polls, s1.eng_fast_moves, s1.eng_fast_poster);
	if (fast) {
		CHECK_EQ(s1.eng_fast_moves, FAST_MOVES + 1);
		CHECK_EQ(s1.eng_fast_poster, 0);
	} else {
		CHECK_EQ(s1.eng_fast_moves, 0);
		CHECK_EQ(s1.eng_fast_poster, 0);
		CHECK_EQ(s1.eng_db_skips, 0);
	}
	/* Nobody has the role now: no post skips the exchange. */
	stats_of(A, &s0);
	for (int i = 0; i < 32; i++)
		dt_rdma_checked(&rp, IBV_WR_RDMA_WRITE, 9000 + (uint64_t)i,
				a_buf + i * 64, 64, mra->lkey, b_buf + i * 64,
				mrb->rkey, "after the moves");
	stats_of(A, &s1);
	CHECK_EQ(s1.eng_db_skips, s0.eng_db_skips);
	CHECK_EQ(s1.eng_fast_poster, 0);

	dt_rc_pair_close(&rp);
	CHECK_OK(ibv_dereg_mr(mra));
	CHECK_OK(ibv_dereg_mr(mrb));
	free(a_buf);
	free(b_buf);
	return dt_finish(&env);
}
