/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-console: the session: its devices (the embedded net_ring pair or
 * --port ones) opened and torn down, and the background work between and
 * during commands (traffic, capture, app-driven engines, keyboard input
 * read ahead). Apart from main.c so that a harness can hold a session of
 * its own (test/fuzz/fuzz_console.c).
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_lcore.h>

#include "console.h"

struct con g;

static struct ibv_device **dev_list;

/* -------------------------------------------------------- background */

uint64_t con_now_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000u;
}

static bool app_mode_busy(void)
{
	for (int i = 0; i < g.nb_devs; i++)
		if (g.devs[i].dev->args.lcore < 0 && g.devs[i].dev->nb_qp)
			return true;
	return false;
}

int con_idle_timeout_ms(void)
{
	if (traffic_on_main())
		return 0;
	if (app_mode_busy())
		return 1;
	if (capture_active())
		return 2;	/* the engine fills the capture ring meanwhile */
	return -1;
}

/* Keyboard input while a command runs: ^C aborts the wait, the rest is
 * kept for the prompt. */
static void read_ahead(void)
{
	static uint64_t last;
	uint64_t now = con_now_us();
	struct pollfd pfd = { .fd = STDIN_FILENO, .events = POLLIN };
	char buf[64];
	ssize_t n;

	if (now - last < 20000)
		return;
	last = now;
	if (poll(&pfd, 1, 0) <= 0)
		return;
	n = read(STDIN_FILENO, buf, sizeof(buf));
	if (n <= 0) {
		g.stdin_eof = true;
		return;
	}
	for (ssize_t i = 0; i < n; i++) {
		if (buf[i] == 3) {	/* ^C */
			g.interrupted = 1;
			continue;
		}
		if (g.pending_len < sizeof(g.pending))
			g.pending[g.pending_len++] = buf[i];
	}
}

void con_service(void)
{
	traffic_service();
	capture_service();
	for (int i = 0; i < g.nb_devs; i++)
		if (g.devs[i].dev->args.lcore < 0)
			droce_poll(g.devs[i].ctx);
	if (g.interactive && g.in_command && !g.stdin_eof)
		read_ahead();
}

int con_wait(uint64_t timeout_us, bool (*done)(void *), void *arg)
{
	uint64_t t0 = con_now_us();

	for (;;) {
		uint64_t el;

		if (done(arg))
			return 0;
		if (g.interrupted || g.terminate)
			return -EINTR;
		el = con_now_us() - t0;
		if (g.wait_cap_us && (!timeout_us || timeout_us > g.wait_cap_us))
			timeout_us = g.wait_cap_us;
		if (timeout_us && el >= timeout_us)
			return -ETIMEDOUT;
		con_service();
		/* Spin briefly (completions come in microseconds), then doze
		 * unless something here needs the CPU. */
		if (el > 2000 && !traffic_on_main() && !app_mode_busy())
			usleep(200);
	}
}

/* ---------------------------------------------------------- devices */

int con_setup_devices(char **ports, int nb_ports)
{
	int ret, n;

	if (nb_ports == 0) {
		char da[96], db[96];
		const char *app = rte_lcore_count() > 1 ? "" : ",lcore=app";

		snprintf(da, sizeof(da), "ip=198.18.0.1,mtu=4096%s", app);
		snprintf(db, sizeof(db), "ip=198.18.0.2,mtu=4096%s", app);
		ret = droce_create_ring_pair(da, db);
		if (ret) {
			fprintf(stderr, "droce-console: cannot create the net_ring pair: %s\n",
				strerror(-ret));
			return -1;
		}
	}
	for (int i = 0; i < nb_ports; i++) {
		char name[RTE_ETH_NAME_MAX_LEN];
		const char *comma = strchr(ports[i], ',');
		size_t l = comma ? (size_t)(comma - ports[i]) : strlen(ports[i]);

		if (comma == NULL || l == 0 || l >= sizeof(name)) {
			fprintf(stderr, "droce-console: --port %s: expected NAME,DEVARGS (e.g. net_memif0,ip=198.18.0.1)\n",
				ports[i]);
			return -1;
		}
		memcpy(name, ports[i], l);
		name[l] = '\0';
		ret = droce_dev_create_by_name(name, comma + 1);
		if (ret < 0) {
			uint16_t p;

			fprintf(stderr, "droce-console: --port %s: %s\n", ports[i],
				ret == -ENODEV ? "no such ethdev port" : strerror(-ret));
			fprintf(stderr, "  ethdev ports:");
			RTE_ETH_FOREACH_DEV(p) {
				char pn[RTE_ETH_NAME_MAX_LEN];

				if (rte_eth_dev_get_name_by_port(p, pn) == 0)
					fprintf(stderr, " %u:%s", p, pn);
			}
			fprintf(stderr, "\n");
			return -1;
		}
	}
	dev_list = ibv_get_device_list(&n);
	if (dev_list == NULL || n == 0) {
		fprintf(stderr, "droce-console: no droce device\n");
		return -1;
	}
	for (int i = 0; i < n && i < DROCE_MAX_DEVS; i++) {
		struct con_dev *d = &g.devs[i];

		d->ctx = ibv_open_device(dev_list[i]);
		if (d->ctx == NULL) {
			fprintf(stderr, "droce-console: ibv_open_device(%s): %s\n",
				ibv_get_device_name(dev_list[i]), strerror(errno));
			return -1;
		}
		d->dev = container_of(dev_list[i], struct droce_dev, ibv_dev);
		d->port = (uint16_t)droce_dev_port_id(d->ctx);
		d->probe_mtu = d->dev->args.max_mtu;
		g.nb_devs++;
	}
	return 0;
}

void con_teardown(void)
{
	int ret;

	traffic_stop_all();
	capture_stop_all();
	objects_destroy_all();
	for (int i = 0; i < g.nb_devs; i++)
		ibv_close_device(g.devs[i].ctx);
	g.nb_devs = 0;
	if (dev_list)
		ibv_free_device_list(dev_list);
	ret = droce_cleanup();
	if (ret)
		fprintf(stderr, "droce-console: droce_cleanup: %s\n", strerror(-ret));
	cli_free();
	rte_eal_cleanup();
}
