/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * memif_chain <EAL args> -- tx|rx <frame bytes> <frames>
 *
 * Does this DPDK's memif deliver frames larger than its buffers (chained
 * descriptors) intact? The tx side sends <frames> frames of <frame> bytes,
 * each carrying its sequence number at offset 64 and a fill byte
 * everywhere else; the rx side checks every frame's length, sequence and
 * fill and prints one line:
 *   MEMIF_CHAIN rx=<n> gaps=<n> bad_len=<n> bad_fill=<n>
 * No droce code: run.sh builds and runs it (see ../README.md).
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <rte_cycles.h>
#include <rte_eal.h>
#include <rte_ethdev.h>
#include <rte_mbuf.h>

#define BURST	32
#define SEQ_OFF	64
#define FILL	0x5a

static int
tx_side(struct rte_mempool *mp, uint32_t frame, uint64_t n)
{
	struct rte_mbuf *b[BURST];
	uint64_t seq = 0;
	uint16_t pend = 0, off = 0;

	while (seq < n || off < pend) {
		if (off == pend) {
			pend = 0;
			off = 0;
			while (pend < BURST && seq < n) {
				struct rte_mbuf *m = rte_pktmbuf_alloc(mp);
				char *p;

				if (m == NULL)
					break;
				p = rte_pktmbuf_append(m, (uint16_t)frame);
				memset(p, FILL, frame);
				memcpy(p + SEQ_OFF, &seq, sizeof(seq));
				b[pend++] = m;
				seq++;
			}
		}
		off += rte_eth_tx_burst(0, 0, b + off, pend - off);
	}
	printf("MEMIF_CHAIN tx=%" PRIu64 "\n", seq);
	/* Leave the receiver time to drain before memif unmaps the rings. */
	sleep(2);
	return 0;
}

static int
rx_side(uint32_t frame, uint64_t n)
{
	struct rte_mbuf *b[BURST];
	uint64_t expect = 0, rx = 0, gaps = 0, bad_len = 0, bad_fill = 0;
	uint64_t hz = rte_get_tsc_hz(), last = rte_get_tsc_cycles();

	/* Until the last sequence number or 2 s of silence. */
	while (expect < n && rte_get_tsc_cycles() - last < 2 * hz) {
		uint16_t k = rte_eth_rx_burst(0, 0, b, BURST);

		if (k)
			last = rte_get_tsc_cycles();
		for (uint16_t i = 0; i < k; i++) {
			struct rte_mbuf *m = b[i];
			uint64_t seq;
			uint8_t c;

			rx++;
			if (m->pkt_len != frame) {
				bad_len++;
			} else {
				memcpy(&seq, rte_pktmbuf_mtod_offset(m, char *, SEQ_OFF),
				       sizeof(seq));
				c = *rte_pktmbuf_mtod_offset(m, uint8_t *, frame - 1);
				if (c != FILL)
					bad_fill++;
				if (seq != expect)
					gaps++;
				expect = seq + 1;
			}
			rte_pktmbuf_free(m);
		}
	}
	printf("MEMIF_CHAIN rx=%" PRIu64 " gaps=%" PRIu64 " bad_len=%" PRIu64
	       " bad_fill=%" PRIu64 "\n", rx, gaps, bad_len, bad_fill);
	return 0;
}

int
main(int argc, char **argv)
{
	struct rte_eth_conf conf;
	struct rte_eth_link link;
	struct rte_mempool *mp;
	uint32_t frame;
	uint64_t n;
	int ret = rte_eal_init(argc, argv);

	if (ret < 0)
		return 1;
	argc -= ret;
	argv += ret;
	if (argc != 4 || rte_eth_dev_count_avail() < 1) {
		fprintf(stderr, "usage: memif_chain <EAL> -- tx|rx <frame> <frames>\n");
		return 2;
	}
	frame = (uint32_t)strtoul(argv[2], NULL, 0);
	n = strtoull(argv[3], NULL, 0);
	if (frame < SEQ_OFF + 8 || frame > 8192)
		return 2;
	mp = rte_pktmbuf_pool_create("mc", 8191, 256, 0,
				     RTE_PKTMBUF_HEADROOM + 8192, 0);
	memset(&conf, 0, sizeof(conf));
	if (mp == NULL || rte_eth_dev_configure(0, 1, 1, &conf) ||
	    rte_eth_rx_queue_setup(0, 0, 1024, 0, NULL, mp) ||
	    rte_eth_tx_queue_setup(0, 0, 1024, 0, NULL) ||
	    rte_eth_dev_start(0))
		return 1;
	do {
		usleep(1000);
		rte_eth_link_get_nowait(0, &link);
	} while (!link.link_status);
	ret = strcmp(argv[1], "tx") == 0 ? tx_side(mp, frame, n) :
	      rx_side(frame, n);
	rte_eth_dev_stop(0);
	rte_eal_cleanup();
	return ret;
}
