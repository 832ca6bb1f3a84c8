/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-console: start-up (options, the EAL), the run modes (interactive,
 * --cmdfile, --batch); the devices and the background work between
 * commands are session.c's.
 *
 *   droce-console [EAL args] -- [-i] [--cmdfile FILE] [--batch]
 *                 [--port NAME,DEVARGS]... [--no-echo]
 */
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <arpa/inet.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "console.h"

#define MAX_EAL_ARGS	64
#define MAX_PORTS	DROCE_MAX_DEVS

static void usage(const char *prog)
{
	printf("usage: %s [EAL args] -- [options]\n"
	       "  -i, --interactive    interactive prompt (after --cmdfile, if given)\n"
	       "  --cmdfile FILE       run the commands in FILE, then exit (or -i)\n"
	       "  --batch              read commands from stdin; exit non-zero at the\n"
	       "                       first failing command, saying which line\n"
	       "  --port NAME,DEVARGS  make a droce device of ethdev port NAME (an EAL\n"
	       "                       --vdev or a NIC) with droce devargs, e.g.\n"
	       "                       --port net_memif0,ip=198.18.0.1,mtu=1024\n"
	       "                       (repeatable; default: two devices on a net_ring\n"
	       "                       pair in this process, 198.18.0.1 and .2)\n"
	       "  --no-echo            do not echo script commands\n"
	       "Default EAL args: -l 0-1 --in-memory --no-pci --log-level=*:warning,\n"
	       "plus the words of $DROCE_EAL_EXTRA_ARGS (with --no-huge there,\n"
	       "--no-shconf replaces --in-memory, which DPDK refuses with it).\n", prog);
}

static bool is_console_opt(const char *s)
{
	static const char *const o[] = {
		"-i", "--interactive", "--cmdfile", "--batch", "--port",
		"--no-echo", "-h", "--help",
	};

	for (size_t i = 0; i < RTE_DIM(o); i++)
		if (strcmp(s, o[i]) == 0 || (strncmp(s, o[i], strlen(o[i])) == 0 &&
					     s[strlen(o[i])] == '='))
			return true;
	return false;
}

static void on_signal(int sig)
{
	(void)sig;
	g.interrupted = 1;
	g.terminate = 1;
}

/* ---------------------------------------------------------- scripts */

static int run_stream(FILE *f, const char *name, bool stop_on_error,
		      bool echo, int *failed)
{
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0;

	while (!g.quit && !g.terminate && getline(&line, &cap, f) >= 0) {
		char *p = line;
		size_t l;

		lineno++;
		while (*p == ' ' || *p == '\t')
			p++;
		l = strlen(p);
		while (l && (p[l - 1] == '\n' || p[l - 1] == '\r' ||
			     p[l - 1] == ' ' || p[l - 1] == '\t'))
			p[--l] = '\0';
		if (*p == '\0' || *p == '#')
			continue;
		if (echo) {
			printf("%s%s\n", CON_PROMPT, p);
			fflush(stdout);
		}
		if (cli_run_line(p)) {
			(*failed)++;
			fflush(stdout);
			fprintf(stderr, "droce-console: %s:%d: command failed: %s\n",
				name, lineno, p);
			if (stop_on_error) {
				free(line);
				return -1;
			}
		}
	}
	free(line);
	return 0;
}

int main(int argc, char **argv)
{
	char *eal_argv[MAX_EAL_ARGS + 1];
	char extra_buf[1024];
	char *ports[MAX_PORTS];
	int eal_argc = 0, nb_ports = 0, dd = -1, first_opt, ret, failed = 0;
	const char *cmdfile = NULL;
	bool interactive = false, batch = false, echo = true;
	int status = 0;

	/* EAL arguments: before "--", or the default. */
	for (int i = 1; i < argc; i++)
		if (strcmp(argv[i], "--") == 0) {
			dd = i;
			break;
		}
	eal_argv[eal_argc++] = argv[0];
	if (dd > 1 || (dd < 0 && argc > 1 && !is_console_opt(argv[1]))) {
		int end = dd > 0 ? dd : argc;

		for (int i = 1; i < end && eal_argc < MAX_EAL_ARGS - 16; i++)
			eal_argv[eal_argc++] = argv[i];
		first_opt = dd > 0 ? dd + 1 : argc;
	} else {
		first_opt = dd > 0 ? dd + 1 : 1;
	}
	/* The default (DROCE_EAL_ARGS is not the console's) and the words of
	 * $DROCE_EAL_EXTRA_ARGS, --in-memory dropped for --no-huge. */
	eal_argc = droce_eal_argv(eal_argv, eal_argc, MAX_EAL_ARGS + 1,
				  sysconf(_SC_NPROCESSORS_ONLN) > 1 ?
				  "-l 0-1 --in-memory --no-pci --log-level=*:warning" :
				  "-l 0 --in-memory --no-pci --log-level=*:warning",
				  extra_buf, sizeof(extra_buf));
	if (eal_argc < 0) {
		fprintf(stderr, "droce-console: too many EAL arguments\n");
		return 2;
	}

	/* Our options first: a usage error should not start the EAL. */
	for (int i = first_opt; i < argc; i++) {
		const char *a = argv[i];
		const char *val = NULL;

		if (strncmp(a, "--cmdfile=", 10) == 0 || strncmp(a, "--port=", 7) == 0) {
			val = strchr(a, '=') + 1;
		} else if ((strcmp(a, "--cmdfile") == 0 || strcmp(a, "--port") == 0)) {
			if (i + 1 >= argc) {
				fprintf(stderr, "droce-console: %s needs a value\n", a);
				return 2;
			}
			val = argv[++i];
		}
		if (strcmp(a, "-i") == 0 || strcmp(a, "--interactive") == 0) {
			interactive = true;
		} else if (strcmp(a, "--batch") == 0) {
			batch = true;
		} else if (strcmp(a, "--no-echo") == 0) {
			echo = false;
		} else if (strncmp(a, "--cmdfile", 9) == 0) {
			cmdfile = val;
		} else if (strncmp(a, "--port", 6) == 0) {
			if (nb_ports >= MAX_PORTS) {
				fprintf(stderr, "droce-console: at most %d --port\n", MAX_PORTS);
				return 2;
			}
			ports[nb_ports++] = (char *)val;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(argv[0]);
			return 0;
		} else {
			fprintf(stderr, "droce-console: unknown option '%s'\n", a);
			usage(argv[0]);
			return 2;
		}
	}
	if (batch && interactive) {
		fprintf(stderr, "droce-console: --batch and -i exclude each other\n");
		return 2;
	}
	if (!cmdfile && !batch)
		interactive = true;
	if (cmdfile && access(cmdfile, R_OK) != 0) {
		fprintf(stderr, "droce-console: --cmdfile %s: %s\n", cmdfile,
			strerror(errno));
		return 2;
	}

	ret = rte_eal_init(eal_argc, eal_argv);
	if (ret < 0) {
		fprintf(stderr, "droce-console: rte_eal_init: %s\n",
			rte_strerror(rte_errno));
		return 1;
	}
	signal(SIGINT, on_signal);
	signal(SIGTERM, on_signal);
	signal(SIGPIPE, SIG_IGN);
	g.tsc_hz = rte_get_tsc_hz();
	if (con_setup_devices(ports, nb_ports) || cli_init()) {
		con_teardown();
		return 1;
	}
	printf("droce-console: %d droce device%s (%s); type 'help'\n", g.nb_devs,
	       g.nb_devs == 1 ? "" : "s",
	       nb_ports ? "--port" : "embedded net_ring pair");
	for (int i = 0; i < g.nb_devs; i++) {
		char ip[INET_ADDRSTRLEN], eng[24] = "app-driven";
		struct droce_dev *d = g.devs[i].dev;

		inet_ntop(AF_INET, &d->args.ip, ip, sizeof(ip));
		if (d->args.lcore >= 0)
			snprintf(eng, sizeof(eng), "lcore %d", d->args.lcore);
		printf("  dev %d: %s on port %u, %s, engine %s\n", i,
		       d->args.name, g.devs[i].port, ip, eng);
	}
	fflush(stdout);

	if (cmdfile) {
		FILE *f = fopen(cmdfile, "r");

		if (f == NULL) {
			fprintf(stderr, "droce-console: %s: %s\n", cmdfile, strerror(errno));
			status = 2;
		} else {
			if (run_stream(f, cmdfile, batch, echo, &failed) && batch)
				status = 1;
			fclose(f);
			if (failed && !batch) {
				fflush(stdout);
				fprintf(stderr, "droce-console: %s: %d command%s failed\n",
					cmdfile, failed, failed == 1 ? "" : "s");
				status = 1;
			}
		}
	}
	if (batch && status == 0 && !g.quit) {
		if (run_stream(stdin, "stdin", true, echo, &failed))
			status = 1;
	}
	if (interactive && !g.quit && !g.terminate) {
		cli_interactive();
		status = 0;
	}
	if (g.terminate && status == 0 && !interactive)
		status = 130;
	fflush(stdout);
	con_teardown();
	return status;
}
