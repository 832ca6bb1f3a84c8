/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * A plain verbs program that lets droce set up from the environment
 * (DROCE_EAL_ARGS / DROCE_DEVICES, two devices) and then exits in one of
 * the ways programs do; test/rdma/exit_teardown_test.sh checks what droce
 * leaves behind (its exit-time teardown, lib/rdma/rdma_env.c).
 *
 * usage: exit_teardown open|closed|cleanup|fork
 *   open    an RC QP pair, a thread posting 64 B WRITEs and polling for
 *           them without end; main returns with every object open and
 *           that thread still in verbs calls
 *   closed  the same, then the thread stopped and every object destroyed
 *           before main returns
 *   cleanup as closed, then droce_cleanup() (must return 0), as a program
 *           that knows droce does
 *   fork    as open, but first a child is forked that exits at once (the
 *           handler it inherits must leave the parent's engine and ports
 *           alone, libdroce's destructor its EAL runtime directory): the
 *           parent's WRITEs must still complete after it
 * EXIT_TEARDOWN_HOLD_MS=<ms>: before returning, print "HOLDING pid=<pid>"
 * and sleep that long (the script looks at the ports while they are open,
 * or ends the program with a signal).
 * Prints "EXIT_TEARDOWN <mode> writes=<n> errors=<n>", then returns 0;
 * exits 1 on a failure found before that.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <infiniband/verbs.h>
#include <rte_eal.h>

#include "droce.h"
#include "droce_test.h"

#define BUF 4096

/* (globals: what the program leaves open stays reachable for
 * LeakSanitizer, as in a program that keeps its objects) */
static struct dt_dev da, db;
static struct ibv_device **list;
static struct dt_rc_pair pair;
static struct ibv_mr *mra, *mrb;
static uint8_t *bufa, *bufb;
static atomic_uint_fast64_t writes, errors;
static atomic_bool stop_posting;

static void *poster(void *arg)
{
	(void)arg;
	uint64_t outstanding = 0;

	while (!atomic_load(&stop_posting)) {
		struct ibv_wc wc[16];
		int n;

		if (outstanding < 16) {
			struct ibv_sge sge = {
				(uintptr_t)bufa, 64, mra->lkey };
			struct ibv_send_wr wr = {
				.wr_id = outstanding, .sg_list = &sge,
				.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
				.send_flags = IBV_SEND_SIGNALED,
			}, *bad;

			wr.wr.rdma.remote_addr = (uintptr_t)bufb;
			wr.wr.rdma.rkey = mrb->rkey;
			if (ibv_post_send(pair.qa, &wr, &bad) == 0)
				outstanding++;
		}
		n = ibv_poll_cq(pair.sa.cq, 16, wc);
		for (int i = 0; i < n; i++) {
			if (wc[i].status == IBV_WC_SUCCESS)
				atomic_fetch_add(&writes, 1);
			else
				atomic_fetch_add(&errors, 1);
			outstanding--;
		}
		/* (the other end's CQs have nothing: WRITEs without imm) */
		(void)ibv_poll_cq(pair.rb.cq, 16, wc);
	}
	return NULL;
}

/* Wait until `want` WRITEs have completed in all (at most 10 s). */
static bool await_writes(uint64_t want)
{
	double end = dt_now() + 10.0;

	while (atomic_load(&writes) < want && dt_now() < end)
		usleep(1000);
	return atomic_load(&writes) >= want;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	const char *hold = getenv("EXIT_TEARDOWN_HOLD_MS");
	struct dt_conn_cfg cc;
	pthread_t th;
	int n = 0;

	if (strcmp(mode, "open") && strcmp(mode, "closed") &&
	    strcmp(mode, "cleanup") && strcmp(mode, "fork")) {
		fprintf(stderr, "usage: %s open|closed|cleanup|fork\n", argv[0]);
		return 2;
	}
	dt_watchdog(60);
	list = ibv_get_device_list(&n);
	if (list == NULL || n < 2) {
		fprintf(stderr, "need two devices (DROCE_DEVICES), found %d: %s\n",
			n, strerror(errno));
		return 1;
	}
	dt_dev_open(&da, list[0]);
	dt_dev_open(&db, list[1]);
	bufa = dt_alloc(BUF);
	bufb = dt_alloc(BUF);
	mra = dt_reg_mr(da.pd, bufa, BUF, IBV_ACCESS_LOCAL_WRITE);
	mrb = dt_reg_mr(db.pd, bufb, BUF,
			IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE);
	CHECK_PTR(mra);
	CHECK_PTR(mrb);
	dt_conn_cfg_default(&cc);
	cc.mtu = IBV_MTU_1024;
	dt_rc_pair_open(&pair, &da, &db, 64, NULL, &cc, NULL, 1, 1);
	CHECK_OK(pthread_create(&th, NULL, poster, NULL));
	if (!await_writes(1000)) {
		fprintf(stderr, "FAIL: %lu WRITEs completed in 10 s\n",
			(unsigned long)atomic_load(&writes));
		droce_dev_stats_dump(da.ctx, stderr);
		droce_dev_stats_dump(db.ctx, stderr);
		_exit(1);
	}
	if (strcmp(mode, "fork") == 0) {
		pid_t pid = fork();
		int st;

		if (pid == 0)
			exit(0);	/* atexit handlers: droce's must do nothing */
		CHECK(pid > 0);
		CHECK(waitpid(pid, &st, 0) == pid);
		CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
		/* (its libdroce destructor leaves the EAL's runtime directory,
		 * empty with --no-telemetry, to the process that made it) */
		if (access(rte_eal_get_runtime_dir(), F_OK) != 0) {
			fprintf(stderr, "FAIL: the child's exit removed %s\n",
				rte_eal_get_runtime_dir());
			_exit(1);
		}
		uint64_t now = atomic_load(&writes);

		if (!await_writes(now + 1000)) {
			fprintf(stderr, "FAIL: after the child's exit %lu more WRITEs in 10 s\n",
				(unsigned long)(atomic_load(&writes) - now));
			_exit(1);
		}
	}
	if (hold != NULL) {
		unsigned long ms = strtoul(hold, NULL, 10);
		struct timespec ts = { (time_t)(ms / 1000),
				       (long)(ms % 1000) * 1000000 };

		printf("HOLDING pid=%d\n", (int)getpid());
		fflush(stdout);
		/* (the whole time: a signal's handler may cut a sleep short) */
		while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
			;
	}
	if (strcmp(mode, "closed") == 0 || strcmp(mode, "cleanup") == 0) {
		atomic_store(&stop_posting, true);
		CHECK_OK(pthread_join(th, NULL));
		dt_rc_pair_close(&pair);
		CHECK_OK(ibv_dereg_mr(mra));
		CHECK_OK(ibv_dereg_mr(mrb));
		CHECK_OK(ibv_dealloc_pd(da.pd));
		CHECK_OK(ibv_dealloc_pd(db.pd));
		CHECK_OK(ibv_close_device(da.ctx));
		CHECK_OK(ibv_close_device(db.ctx));
		ibv_free_device_list(list);
	}
	if (strcmp(mode, "cleanup") == 0)
		CHECK_OK(droce_cleanup());
	printf("EXIT_TEARDOWN %s writes=%lu errors=%lu\n", mode,
	       (unsigned long)atomic_load(&writes),
	       (unsigned long)atomic_load(&errors));
	fflush(stdout);
	return 0;
}
