/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where this process's CPU time went during a run, per thread, from
 * /proc/self/task/<tid>/schedstat: time on a CPU and time runnable but
 * waiting for one (taken by other work on a shared machine). Turning the
 * first into cycles per message gives what the engine costs whatever the
 * neighbours do; the second says how much they took.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "perf.h"

#define MAX_THR 64

struct thr {
	int tid;
	char comm[32];
	uint64_t run_ns, wait_ns;
};

static struct thr t0[MAX_THR], t1[MAX_THR];
static int n0, n1;
static uint64_t wall0, wall1;

static int snap(struct thr *t)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	int n = 0;

	if (d == NULL)
		return 0;
	while ((e = readdir(d)) != NULL && n < MAX_THR) {
		char path[96];
		FILE *f;
		int tid = atoi(e->d_name);

		if (tid <= 0)
			continue;
		memset(&t[n], 0, sizeof(t[n]));
		t[n].tid = tid;
		snprintf(path, sizeof(path), "/proc/self/task/%d/schedstat", tid);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fscanf(f, "%" SCNu64 " %" SCNu64, &t[n].run_ns, &t[n].wait_ns) != 2) {
			fclose(f);
			continue;
		}
		fclose(f);
		snprintf(path, sizeof(path), "/proc/self/task/%d/comm", tid);
		f = fopen(path, "r");
		if (f) {
			if (fgets(t[n].comm, sizeof(t[n].comm), f))
				t[n].comm[strcspn(t[n].comm, "\n")] = '\0';
			fclose(f);
		}
		n++;
	}
	closedir(d);
	return n;
}

void cpu_start(void)
{
	n0 = snap(t0);
	wall0 = perf_tsc();
}

void cpu_stop(void)
{
	n1 = snap(t1);
	wall1 = perf_tsc();
}

/* Totals over the run of the main thread and of the engine threads
 * (lcore workers, droce's keeper). */
void cpu_totals(struct perf_cpu *c)
{
	memset(c, 0, sizeof(*c));
	c->wall_ns = (uint64_t)((double)(wall1 - wall0) * 1e9 / perf_tsc_hz());
	for (int i = 0; i < n1; i++) {
		const struct thr *b = &t1[i], *a = NULL;
		uint64_t run, wait;

		for (int j = 0; j < n0; j++)
			if (t0[j].tid == b->tid)
				a = &t0[j];
		run = b->run_ns - (a ? a->run_ns : 0);
		wait = b->wait_ns - (a ? a->wait_ns : 0);
		if (b->tid == (int)getpid()) {
			c->main_run_ns += run;
			c->main_wait_ns += wait;
		} else if (strncmp(b->comm, "rte-worker", 10) == 0 ||
			   strncmp(b->comm, "lcore-worker", 12) == 0 ||
			   strncmp(b->comm, "droce-keeper", 12) == 0) {
			c->eng_run_ns += run;
			c->eng_wait_ns += wait;
		}
	}
}

/*
 * --cpu_util: perftest's CPU_Util[%], taken the way perftest takes it
 * (get_cpu_stats in its SIGALRM handler): /proc/stat's first line (all
 * CPUs) at the start and the end of the -D window, user / (user + idle).
 * System, nice and irq time count in neither, so a busy-polling engine
 * shows as user time and a kernel path (rxe) as nothing: the figure is
 * perftest's, kept comparable with it. A thread sleeps until each edge so
 * that the loops carry no test for it.
 */
static struct {
	pthread_t thr;
	bool running;
	struct timespec at[2];
	long long user[2], idle[2];
	int taken;			/* edges read */
	double last;			/* percent, < 0: not measured */
} util = { .last = -1 };

static int stat_read(long long *user, long long *idle)
{
	long long u, n, sys, i;
	FILE *f = fopen("/proc/stat", "r");
	int ok;

	if (f == NULL)
		return -1;
	ok = fscanf(f, "cpu %lld %lld %lld %lld", &u, &n, &sys, &i) == 4;
	fclose(f);
	if (!ok)
		return -1;
	*user = u;
	*idle = i;
	return 0;
}

static void *util_main(void *arg)
{
	(void)arg;
	for (int k = 0; k < 2; k++) {
		while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME,
				       &util.at[k], NULL) == EINTR)
			;
		int st, bad;

		/* cancelled only while asleep: never holding a FILE */
		pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, &st);
		bad = stat_read(&util.user[k], &util.idle[k]);
		pthread_setcancelstate(st, NULL);
		if (bad)
			return NULL;
		util.taken = k + 1;
	}
	return NULL;
}

static struct timespec ts_after(const struct timespec *t, double s)
{
	struct timespec r = *t;
	long long ns = (long long)(s * 1e9);

	r.tv_sec += (time_t)(ns / 1000000000);
	r.tv_nsec += (long)(ns % 1000000000);
	if (r.tv_nsec >= 1000000000) {
		r.tv_sec++;
		r.tv_nsec -= 1000000000;
	}
	return r;
}

void cpu_util_begin(double sample_s, double stop_s)
{
	struct timespec now;

	cpu_util_end();
	util.last = -1;
	util.taken = 0;
	clock_gettime(CLOCK_MONOTONIC, &now);
	util.at[0] = ts_after(&now, sample_s);
	util.at[1] = ts_after(&now, stop_s);
	util.running = pthread_create(&util.thr, NULL, util_main, NULL) == 0;
}

void cpu_util_end(void)
{
	long long du, di;

	if (!util.running)
		return;
	/* a run that ended before its window did (an error) */
	pthread_cancel(util.thr);
	pthread_join(util.thr, NULL);
	util.running = false;
	if (util.taken < 2)
		return;
	du = util.user[1] - util.user[0];
	di = util.idle[1] - util.idle[0];
	util.last = du + di > 0 ? 100.0 * (double)du / (double)(du + di) : 0;
}

double cpu_util_last(void)
{
	return util.last;
}
