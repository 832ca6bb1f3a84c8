/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * fuzz_console: droce-console's command lines, as an operator or a script
 * might type them, on a session of the harness's own: the console's two
 * devices on the embedded net_ring pair (app-driven engines, one lcore),
 * every command group linked in (app/droce-console but main.c).
 *
 * Input: text, one command a line (at most MAX_LINES). Lines that would
 * reach outside the harness are left out: capture files whose name has a
 * '/' (the others go to a directory of the input's own, removed after it).
 * Every wait is cut to WAIT_CAP_US (g.wait_cap_us), so that "sleep",
 * "post ... wait", "events wait" and traffic cannot stall the run.
 *
 * What must hold after every input, once the session has stopped traffic
 * and capture and destroyed what the commands made (what "quit" does)
 * and "port config" has put the addresses and path MTUs back:
 * - nothing crashed, ASan and UBSan stayed quiet;
 * - no object of the console's is left, and neither device counts one;
 * - the DPDK heap holds no more than before the input.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_malloc.h>

#include "console.h"
#include "dt_heap.h"

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define DIE(...) do {							\
		fprintf(stderr, "fuzz_console: " __VA_ARGS__);		\
		fprintf(stderr, "\n");					\
		abort();						\
	} while (0)

#define MAX_LINES	64
#define WAIT_CAP_US	5000

static char work_dir[64];
static char rundir[4096];
static struct dt_heap_watch heap_watch;
/* what "port config" may change, as the session began */
static uint32_t ip0[DROCE_MAX_DEVS], mtu0[DROCE_MAX_DEVS];

/* The private directory of an input's capture files, gone again. */
static void work_dir_remove(void)
{
	DIR *d;
	struct dirent *e;

	if (work_dir[0] == '\0' || (d = opendir(work_dir)) == NULL)
		return;
	while ((e = readdir(d)) != NULL)
		if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, ".."))
			(void)unlinkat(dirfd(d), e->d_name, 0);
	closedir(d);
	(void)rmdir(work_dir);
	work_dir[0] = '\0';
}

static void session_end(void)
{
	con_teardown();
	work_dir_remove();
	if (rundir[0])
		(void)rmdir(rundir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *verbose = getenv("FZ_VERBOSE");
	bool loud = verbose && *verbose && *verbose != '0';
	char prefix[64], log[64];
	char *eal[16];
	int n = 0;

	(void)argc;
	snprintf(prefix, sizeof(prefix), "--file-prefix=droce-fzc-%d", getpid());
	snprintf(log, sizeof(log), "--log-level=*:%s", loud ? "info" : "critical");
	eal[n++] = (*argv)[0];
	eal[n++] = (char *)(uintptr_t)"-l";
	eal[n++] = (char *)(uintptr_t)"0";
	/* --in-memory cannot go with --no-huge in DPDK 22.11 */
	eal[n++] = (char *)(uintptr_t)"--no-huge";
	eal[n++] = (char *)(uintptr_t)"-m";
	eal[n++] = (char *)(uintptr_t)"768";
	eal[n++] = (char *)(uintptr_t)"--no-shconf";
	eal[n++] = (char *)(uintptr_t)"--no-pci";
	eal[n++] = (char *)(uintptr_t)"--no-telemetry";
	eal[n++] = log;
	eal[n++] = prefix;
	eal[n] = NULL;
	if (rte_eal_init(n, eal) < 0)
		DIE("rte_eal_init: %s", rte_strerror(rte_errno));
	/* --no-shconf: nothing lives in the runtime directory; gone now, so
	 * that a run that crashes or is killed leaves nothing behind */
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	if (rmdir(rundir) == 0)
		rundir[0] = '\0';
	/* the console says a lot; its errors too go to stdout */
	if (!loud && freopen("/dev/null", "w", stdout) == NULL)
		DIE("stdout: %s", strerror(errno));
	g.tsc_hz = rte_get_tsc_hz();
	g.wait_cap_us = WAIT_CAP_US;
	if (con_setup_devices(NULL, 0) || cli_init())
		DIE("the console's session did not start");
	if (g.nb_devs != 2)
		DIE("%d devices, not the pair", g.nb_devs);
	for (int i = 0; i < g.nb_devs; i++) {
		ip0[i] = g.devs[i].dev->args.ip;
		mtu0[i] = g.devs[i].dev->args.max_mtu;
	}
	atexit(session_end);
	return 0;
}

static void restore_ports(void)
{
	for (int i = 0; i < g.nb_devs; i++) {
		const struct droce_dev *d = g.devs[i].dev;
		char cmd[96], ip[INET_ADDRSTRLEN];

		if (d->args.ip != ip0[i]) {
			inet_ntop(AF_INET, &ip0[i], ip, sizeof(ip));
			snprintf(cmd, sizeof(cmd), "port config %u ip %s",
				 g.devs[i].port, ip);
			if (cli_run_line(cmd) || d->args.ip != ip0[i])
				DIE("dev %d: its address not restored", i);
		}
		if (d->args.max_mtu != mtu0[i]) {
			snprintf(cmd, sizeof(cmd), "port config %u mtu %u",
				 g.devs[i].port, mtu0[i]);
			if (cli_run_line(cmd) || d->args.max_mtu != mtu0[i])
				DIE("dev %d: its path MTU not restored", i);
		}
	}
}

/* A line the harness keeps to itself. */
static bool left_out(const char *line)
{
	line += strspn(line, " \t");
	return strncmp(line, "capture", 7) == 0 && strchr(line, '/') != NULL;
}

static void check_clean(void)
{
	size_t heap;

#define LEFT(tab, max, what) \
	for (int i = 0; i < (max); i++) \
		if (g.tab[i].used) \
			DIE("%s %d left after the session's teardown", what, i)
	LEFT(pds, CON_MAX_PD, "pd");
	LEFT(mrs, CON_MAX_MR, "mr");
	LEFT(cqs, CON_MAX_CQ, "cq");
	LEFT(qps, CON_MAX_QP, "qp");
	LEFT(srqs, CON_MAX_SRQ, "srq");
	LEFT(ahs, CON_MAX_AH, "ah");
	LEFT(mws, CON_MAX_MW, "mw");
#undef LEFT
	for (int i = 0; i < g.nb_devs; i++) {
		const struct droce_dev *d = g.devs[i].dev;

		if (d->nb_qp || d->nb_cq || d->nb_pd || d->nb_mr)
			DIE("dev %d still counts %u QPs, %u CQs, %u PDs, %u MRs", i,
			    d->nb_qp, d->nb_cq, d->nb_pd, d->nb_mr);
	}
	heap = dt_heap_grew(&heap_watch);
	if (heap)
		DIE("the DPDK heap holds %zu bytes more than before the input",
		    heap);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int cwd = -1;
	char *text = malloc(size + 1), *save = NULL;
	bool capture;
	int lines = 0;

	if (text == NULL)
		return 0;
	memcpy(text, data, size);
	text[size] = '\0';
	/* Capture files go to a directory of the input's own (made only
	 * then: a killed run leaves no directory behind otherwise). */
	capture = strstr(text, "capture") != NULL;
	if (capture) {
		if (cwd < 0)
			cwd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		snprintf(work_dir, sizeof(work_dir), "/tmp/droce-fzc.XXXXXX");
		if (cwd < 0 || mkdtemp(work_dir) == NULL || chdir(work_dir) != 0)
			DIE("%s: %s", work_dir, strerror(errno));
	}
	for (char *l = strtok_r(text, "\n", &save); l != NULL && lines < MAX_LINES;
	     l = strtok_r(NULL, "\n", &save)) {
		size_t len = strlen(l);

		while (len && (l[len - 1] == '\r' || l[len - 1] == ' ' ||
			       l[len - 1] == '\t'))
			l[--len] = '\0';
		if (len == 0 || len >= CON_LINE_MAX || left_out(l))
			continue;
		lines++;
		(void)cli_run_line(l);
		fflush(stdout);
		if (g.quit)
			break;
	}
	free(text);
	if (capture && fchdir(cwd) != 0)
		DIE("back from %s: %s", work_dir, strerror(errno));
	/* what quit does, the session itself staying */
	traffic_stop_all();
	capture_stop_all();
	objects_destroy_all();
	work_dir_remove();
	restore_ports();
	g.quit = false;
	g.interrupted = 0;
	g.terminate = 0;
	check_clean();
	return 0;
}
