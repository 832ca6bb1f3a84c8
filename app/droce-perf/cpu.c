/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Where this process's CPU time went during a run, per thread, from
 * /proc/self/task/<tid>/schedstat: time on a CPU and time runnable but
 * waiting for one (taken by other work on a shared machine). Turning the
 * first into cycles per message gives what the engine costs whatever the
 * neighbours do; the second says how much they took.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

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
