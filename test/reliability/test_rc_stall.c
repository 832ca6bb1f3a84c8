/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * RC through engine stalls: a helper process stops this whole process
 * (SIGSTOP) for STOP_MS at a time, STOP_EVERY_MS apart, as a host that
 * takes a VM's vCPUs away does. The two nodes (a net_ring pair, one
 * engine) keep a stream of WRITEs and READs in flight with an 8 ms local
 * ACK timeout and retry_cnt 0, so one counted timeout would fail a work
 * request with IBV_WC_RETRY_EXC_ERR; B's receive is delayed 2 ms (lib/impair)
 * so that every stop finds requests outstanding and no ACK unread.
 *  - stream: every operation completes with SUCCESS and the right CQE
 *    fields, every byte lands; the engine counted the stalls and put off
 *    the timeouts they caused (timeouts_stalled) instead of counting them.
 *  - dead peer: with the responder QP destroyed, a WRITE still fails with
 *    RETRY_EXC_ERR through the same stalls (a timeout is put off at most
 *    once per arming).
 */
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>

#include "droce.h"
#include "droce_test.h"

#define STOP_MS		30
#define STOP_EVERY_MS	60
#define DEPTH		16
#define SLOT_SZ		4096
#define NSLOT		(2 * DEPTH)
#define RUN_S		1.5

static struct dt_env env;
static struct dt_dev *A, *B;

/* ------------------------------------------------------------- stopper */

static volatile int *stopper_quit;	/* shared with the helper */
static pid_t stopper_pid;

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	while (nanosleep(&ts, &ts) != 0)
		;
}

/* Fork a helper that stops and continues us. It only calls kill, nanosleep
 * and _exit (async-signal-safe after fork in a threaded process); it dies
 * with us (PDEATHSIG) and always continues us before it looks at the quit
 * flag, so it never leaves us stopped. */
static void stopper_start(void)
{
	pid_t parent = getpid();

	stopper_quit = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			    MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	CHECK(stopper_quit != MAP_FAILED);
	*stopper_quit = 0;
	stopper_pid = fork();
	CHECK(stopper_pid >= 0);
	if (stopper_pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent)
			_exit(0);
		while (!__atomic_load_n(stopper_quit, __ATOMIC_ACQUIRE)) {
			sleep_ms(STOP_EVERY_MS - STOP_MS);
			kill(parent, SIGSTOP);
			sleep_ms(STOP_MS);
			kill(parent, SIGCONT);
		}
		_exit(0);
	}
}

static void stopper_stop(void)
{
	int st;

	if (stopper_pid <= 0)
		return;
	__atomic_store_n(stopper_quit, 1, __ATOMIC_RELEASE);
	CHECK_EQ(waitpid(stopper_pid, &st, 0), stopper_pid);
	CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
	stopper_pid = 0;
	munmap((void *)stopper_quit, 4096);
}

/* A failing check exits through here: never leave the helper behind. */
static void stopper_kill(void)
{
	if (stopper_pid > 0) {
		kill(stopper_pid, SIGKILL);
		waitpid(stopper_pid, NULL, 0);
		stopper_pid = 0;
	}
}

/* ---------------------------------------------------------------- pair */

static void pair_open(struct dt_rc_pair *p, uint8_t retry_cnt)
{
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;

	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 2 * DEPTH;
	dt_conn_cfg_default(&cc);
	cc.timeout = 11;		/* 8.4 ms, well below STOP_MS */
	cc.retry_cnt = retry_cnt;
	dt_rc_pair_open(p, A, B, 4 * DEPTH, &qc, &cc, NULL, 0x100, 0x200);
}

/*
 * Slot i of A's buffer and of B's buffer belong to operation i % NSLOT:
 * an even operation WRITEs A's slot (fresh random bytes) to B's, an odd
 * one READs B's slot (fresh random bytes) into A's. Checked on completion.
 */
static void stream(uint8_t *abuf, struct ibv_mr *amr, uint8_t *bbuf,
		   struct ibv_mr *bmr)
{
	struct dt_rc_pair p;
	struct droce_dev_stats a0, a1;
	uint32_t lens[NSLOT];
	uint64_t posted = 0, done = 0;
	double end;

	pair_open(&p, 0);
	/* B takes each request 2 ms after it came (the timeout is 8.4 ms):
	 * whenever a stop lands, requests wait in B's delay line and A has
	 * read every ACK there was, so A's timer is due when the engine runs
	 * again. Without the delay B would answer within microseconds and a
	 * stop would find ACKs waiting for A about as often as not. */
	CHECK_OK(droce_dev_impair(B->ctx, "seed=1,rx_delay_us=2000"));
	CHECK_OK(droce_dev_stats_get(A->ctx, &a0));
	stopper_start();
	end = dt_now() + RUN_S;
	while (dt_now() < end || done < posted) {
		struct ibv_wc wc;
		struct dt_wc_exp e;
		uint32_t s;
		bool wr;

		while (posted - done < DEPTH && dt_now() < end) {
			s = posted % NSLOT;
			wr = !(posted & 1);
			lens[s] = (uint32_t)dt_rand_range(1, SLOT_SZ);
			dt_fill_random(wr ? abuf + s * SLOT_SZ : bbuf + s * SLOT_SZ,
				       lens[s]);
			dt_post_one(p.qa, wr ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
				    posted, abuf + s * SLOT_SZ, lens[s], amr->lkey,
				    bbuf + s * SLOT_SZ, bmr->rkey, IBV_SEND_SIGNALED);
			posted++;
		}
		CHECK_EQ(dt_wait_wc(&p.sa, &wc, 1, DT_WAIT_S, "stream completion"), 1);
		if (wc.status != IBV_WC_SUCCESS)
			dt_dump_stats(&env);
		s = done % NSLOT;
		wr = !(done & 1);
		e = dt_exp_send(done, wr ? IBV_WR_RDMA_WRITE : IBV_WR_RDMA_READ,
				lens[s], p.qa->qp_num);
		CHECK_WC(&wc, &e);
		if (memcmp(abuf + s * SLOT_SZ, bbuf + s * SLOT_SZ, lens[s]) != 0)
			DT_FAIL_(1, "operation %" PRIu64 " (%s, %u bytes): the buffers differ",
				 done, wr ? "WRITE" : "READ", lens[s]);
		done++;
	}
	stopper_stop();
	CHECK_OK(droce_dev_impair(B->ctx, "rx_delay_us=0"));
	CHECK_OK(droce_dev_stats_get(A->ctx, &a1));
	printf("stream: %" PRIu64 " WRITE/READ through %" PRIu64
	       " engine stalls; %" PRIu64 " timeouts put off, %" PRIu64
	       " counted\n", done, a1.stalls - a0.stalls,
	       a1.timeouts_stalled - a0.timeouts_stalled,
	       a1.timeouts - a0.timeouts);
	/* ~RUN_S / STOP_EVERY_MS stops; some may fall while the engine
	 * sleeps idle (still a stall) or between two polls of this thread. */
	CHECK_CMP(a1.stalls - a0.stalls, >=, 5);
	CHECK_CMP(a1.timeouts_stalled - a0.timeouts_stalled, >=, 1);
	CHECK_EQ(a1.retry_exc - a0.retry_exc, 0);
	CHECK_CMP(done, >=, 100);
	dt_rc_pair_close(&p);
}

static void dead_peer(uint8_t *abuf, struct ibv_mr *amr, uint8_t *bbuf,
		      struct ibv_mr *bmr)
{
	struct dt_rc_pair p;
	struct ibv_wc wc;
	struct dt_wc_exp e;
	struct droce_dev_stats a0, a1;

	pair_open(&p, 2);
	CHECK_OK(ibv_destroy_qp(p.qb));	/* B drops what comes: rx_no_qp */
	p.qb = NULL;
	CHECK_OK(droce_dev_stats_get(A->ctx, &a0));
	stopper_start();
	dt_post_one(p.qa, IBV_WR_RDMA_WRITE, 42, abuf, 64, amr->lkey, bbuf,
		    bmr->rkey, IBV_SEND_SIGNALED);
	CHECK_EQ(dt_wait_wc(&p.sa, &wc, 1, DT_WAIT_S, "WRITE to a dead peer"), 1);
	stopper_stop();
	CHECK_OK(droce_dev_stats_get(A->ctx, &a1));
	e = dt_exp_err(42, IBV_WC_RETRY_EXC_ERR, p.qa->qp_num);
	CHECK_WC(&wc, &e);
	CHECK_EQ(a1.retry_exc - a0.retry_exc, 1);
	CHECK_EQ(a1.timeouts - a0.timeouts, 3);	/* retry_cnt 2: three counted */
	CHECK_EQ(dt_qp_state(p.qa), IBV_QPS_ERR);
	printf("dead peer: RETRY_EXC_ERR after 3 counted timeouts, %" PRIu64
	       " put off for stalls\n", a1.timeouts_stalled - a0.timeouts_stalled);
	dt_rc_pair_close(&p);
}

int main(void)
{
	uint8_t *abuf = dt_alloc(NSLOT * SLOT_SZ), *bbuf = dt_alloc(NSLOT * SLOT_SZ);
	struct ibv_mr *amr, *bmr;

	dt_watchdog(120);
	dt_init(&env, "test_rc_stall", NULL, NULL);
	dt_set_abort_hook(stopper_kill);
	A = &env.dev[0];
	B = &env.dev[1];
	amr = dt_reg_mr(A->pd, abuf, NSLOT * SLOT_SZ, DT_ACCESS_ALL);
	bmr = dt_reg_mr(B->pd, bbuf, NSLOT * SLOT_SZ, DT_ACCESS_ALL);
	CHECK_PTR(amr);
	CHECK_PTR(bmr);
	stream(abuf, amr, bbuf, bmr);
	dead_peer(abuf, amr, bbuf, bmr);
	CHECK_OK(ibv_dereg_mr(amr));
	CHECK_OK(ibv_dereg_mr(bmr));
	dt_fini(&env);
	free(abuf);
	free(bbuf);
	printf("test_rc_stall: %s\n", dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}
