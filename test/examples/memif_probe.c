/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_probe: can this machine run the memif-based example tests?
 * Usage: memif_probe <ethdev name> <EAL arguments...>
 * Initialises the EAL with the given arguments and looks for the named
 * ethdev port. Exit 0 when it is there, printing "max_rx_pktlen <N>": the
 * largest frame (Ethernet header and CRC included) the PMD accepts. Otherwise prints one line saying why and exits 77
 * (meson's "skipped").
 */
#include <stdio.h>
#include <string.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

int main(int argc, char *argv[])
{
	uint16_t port;
	int rc;

	if (argc < 3) {
		fprintf(stderr, "usage: %s <ethdev name> <EAL args...>\n",
			argv[0]);
		return 2;
	}
	/* argv[1] is the port name; the EAL sees argv[0] + argv[2..] */
	const char *name = argv[1];

	argv[1] = argv[0];
	rc = rte_eal_init(argc - 1, argv + 1);
	if (rc < 0) {
		printf("EAL initialisation failed: %s\n",
		       rte_strerror(rte_errno));
		return 77;
	}
	rc = rte_eth_dev_get_port_by_name(name, &port);
	if (rc) {
		printf("no ethdev port %s (memif PMD not available?)\n", name);
		rte_eal_cleanup();
		return 77;
	}
	struct rte_eth_dev_info info;

	if (rte_eth_dev_info_get(port, &info) == 0)
		printf("max_rx_pktlen %u\n", (unsigned int)info.max_rx_pktlen);
	rte_eth_dev_close(port);
	rte_eal_cleanup();
	return 0;
}
