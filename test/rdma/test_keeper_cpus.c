/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * The keeper of app-driven engines (lcore=app) is a DPDK control thread:
 * in a process with fewer lcores than CPUs (here -l 0 on a machine of two
 * or more), it runs on the CPUs no lcore uses, not on the main lcore's
 * alone, so a program that spins there without verbs calls does not hold
 * it off. Checked: the keeper thread's affinity (/proc), and a WRITE
 * posted before such a spin lands, and completes, while the program
 * spins. Skipped (77) with fewer than two CPUs.
 */
#include <dirent.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "droce.h"
#include "droce_test.h"

#define LEN 4096
#define SPIN_S 0.2

static struct dt_env env;

/* The keeper thread's allowed CPUs; false if there is no keeper. */
static bool keeper_cpus(cpu_set_t *set, char *list, size_t len)
{
	DIR *d = opendir("/proc/self/task");
	struct dirent *e;
	bool found = false;

	CPU_ZERO(set);
	if (d == NULL)
		return false;
	while (!found && (e = readdir(d)) != NULL) {
		char path[300], buf[256];
		FILE *f;

		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/self/task/%s/comm", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			continue;
		if (fgets(buf, sizeof(buf), f) == NULL ||
		    strncmp(buf, "droce-keeper", 12) != 0) {
			fclose(f);
			continue;
		}
		fclose(f);
		found = true;
		snprintf(path, sizeof(path), "/proc/self/task/%s/status", e->d_name);
		f = fopen(path, "r");
		if (f == NULL)
			break;
		while (fgets(buf, sizeof(buf), f)) {
			char *p;

			if (strncmp(buf, "Cpus_allowed_list:", 18) != 0)
				continue;
			p = buf + 18;
			while (*p == ' ' || *p == '\t')
				p++;
			p[strcspn(p, "\n")] = '\0';
			{
				size_t n = strlen(p) < len - 1 ? strlen(p) : len - 1;

				memcpy(list, p, n);
				list[n] = '\0';
			}
			/* "a-b,c,..." */
			for (char *tok = strtok(p, ","); tok; tok = strtok(NULL, ",")) {
				int lo, hi;

				if (sscanf(tok, "%d-%d", &lo, &hi) != 2)
					hi = lo = atoi(tok);
				for (int c = lo; c <= hi && c < CPU_SETSIZE; c++)
					CPU_SET(c, set);
			}
		}
		fclose(f);
	}
	closedir(d);
	return found;
}

int main(int argc, char **argv)
{
	cpu_set_t first, kset;
	struct dt_rc_pair rp;
	struct dt_conn_cfg cc;
	struct ibv_mr *ms, *md;
	uint8_t *src, *dst;
	char list[128] = "";
	struct ibv_wc wc;
	double t0, landed = -1, completed = -1;

	(void)argc;
	dt_watchdog(60);
	if (sched_getaffinity(0, sizeof(first), &first) || CPU_COUNT(&first) < 2) {
		printf("SKIPPED: fewer than two CPUs to run on\n");
		return 77;
	}
	setenv("DT_LCORES", "0", 1);
	dt_init(&env, argv[0], "ip=198.18.0.1,lcore=app", "ip=198.18.0.2,lcore=app");
	CHECK(keeper_cpus(&kset, list, sizeof(list)));
	printf("keeper thread: CPUs %s (the process's first: %d CPUs; lcore 0 on CPU 0)\n",
	       list, CPU_COUNT(&first));
	/* DPDK's control-thread set: the first affinity less the lcores' */
	{
		bool on_lcore0 = CPU_ISSET(0, &kset), all_others = true;

		for (int c = 1; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &first) && !CPU_ISSET(c, &kset))
				all_others = false;
		CHECK(!on_lcore0);
		CHECK(all_others);
	}

	/* A WRITE posted, then the program spins without a verbs call: the
	 * keeper (after its 1 ms of quiet) sends it, and receives it on the
	 * other device, and the ACK. */
	src = dt_alloc(LEN);
	dst = dt_alloc(LEN);
	dt_fill_random(src, LEN);
	dt_conn_cfg_default(&cc);
	dt_rc_pair_open(&rp, &env.dev[0], &env.dev[1], 8, NULL, &cc, NULL, 1, 2);
	ms = dt_reg_mr(env.dev[0].pd, src, LEN, DT_ACCESS_ALL);
	md = dt_reg_mr(env.dev[1].pd, dst, LEN, DT_ACCESS_ALL);
	CHECK_PTR(ms);
	CHECK_PTR(md);
	dt_post_one(rp.qa, IBV_WR_RDMA_WRITE, 9, src, LEN, ms->lkey, dst,
		    md->rkey, IBV_SEND_SIGNALED);
	t0 = dt_now();
	while (dt_now() - t0 < SPIN_S) {
		if (landed < 0 && memcmp(src, dst, LEN) == 0)
			landed = dt_now() - t0;
	}
	printf("while the program spun: the WRITE's bytes landed after %.2f ms\n",
	       landed * 1e3);
	CHECK(landed >= 0);
	CHECK_EQ(dt_wait_wc(&rp.sa, &wc, 1, 5, "the spun-over WRITE"), 1);
	completed = dt_now() - t0;
	{
		struct dt_wc_exp e = dt_exp_send(9, IBV_WR_RDMA_WRITE, LEN,
						 rp.qa->qp_num);

		CHECK_WC(&wc, &e);
	}
	(void)completed;
	dt_rc_pair_close(&rp);
	CHECK_OK(ibv_dereg_mr(ms));
	CHECK_OK(ibv_dereg_mr(md));
	free(src);
	free(dst);
	return dt_finish(&env);
}
