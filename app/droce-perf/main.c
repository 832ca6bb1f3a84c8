/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce-perf: perftest's RC tests on droce.
 *
 *   droce-perf <test> [options] [host]      (or a link named ib_<test>)
 *   tests: write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat
 *          atomic_lat
 *
 * Without a host it is the server, with one the client; the out-of-band
 * exchange is perftest's (oob.c), so the other end may be perftest 4.5 on
 * Linux Soft-RoCE. As a verbs program it takes its droce device from
 * DROCE_EAL_ARGS / DROCE_DEVICES (droce.h).
 *
 * --loopback needs no peer: both ends in this process on droce's embedded
 * net_ring pair (droce_create_ring_pair), one QP side on each device.
 */
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <float.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_lcore.h>

#include "perf.h"

struct perf_opts opt;

static const struct {
	const char *name;
	enum perf_verb verb;
	enum perf_tst tst;
} tests[] = {
	{ "write_bw", V_WRITE, T_BW }, { "read_bw", V_READ, T_BW },
	{ "send_bw", V_SEND, T_BW }, { "atomic_bw", V_ATOMIC, T_BW },
	{ "write_lat", V_WRITE, T_LAT }, { "read_lat", V_READ, T_LAT },
	{ "send_lat", V_SEND, T_LAT }, { "atomic_lat", V_ATOMIC, T_LAT },
};

static int find_test(const char *s)
{
	if (strncmp(s, "ib_", 3) == 0)
		s += 3;
	for (size_t i = 0; i < sizeof(tests) / sizeof(tests[0]); i++)
		if (strcmp(s, tests[i].name) == 0)
			return (int)i;
	return -1;
}

static void usage(const char *argv0)
{
	printf("Usage:\n");
	printf("  %s <test> [options]          start a server and wait for connection\n", argv0);
	printf("  %s <test> [options] <host>   connect to server at <host>\n", argv0);
	printf("  %s <test> --loopback [options]  both ends in this process (net_ring pair)\n", argv0);
	printf("  tests: write_bw read_bw send_bw atomic_bw write_lat read_lat send_lat atomic_lat\n");
	printf("  (or run it through a link named ib_<test>, like perftest)\n\n");
	printf("Options (perftest's):\n");
	printf("  -p, --port=<port>          listen on/connect to port <port> (default 18515)\n");
	printf("  -d, --ib-dev=<dev>         use device <dev> (default first device found)\n");
	printf("  -i, --ib-port=<port>       use port <port> of the device (default 1)\n");
	printf("  -m, --mtu=<mtu>            path MTU 256..4096 (default the port's active MTU)\n");
	printf("  -s, --size=<size>          message size (default 65536 bw, 2 lat, 8 atomic)\n");
	printf("  -a, --all                  run sizes from 2 to 2^23\n");
	printf("  -n, --iters=<iters>        iterations per QP (default 5000 write_bw, else 1000)\n");
	printf("  -D, --duration=<sec>       run for <sec> seconds (from 0.001; fractions allowed) instead of -n\n");
	printf("  -f, --margin=<sec>         duration mode: measure within margins (default D/4)\n");
	printf("  -q, --qp=<num>             number of QPs (default 1)\n");
	printf("  -b, --bidirectional        both ends post (bandwidth tests); figures of both directions\n");
	printf("      --report-both          with -b: also each end's figures apart\n");
	printf("  -t, --tx-depth=<dep>       send queue depth (default 128 bw, 1 lat)\n");
	printf("  -r, --rx-depth=<dep>       receive queue depth (default 512 for SEND)\n");
	printf("  -l, --post_list=<n>        post lists of <n> WRs\n");
	printf("  -Q, --cq-mod=<n>           a completion every <n> WRs (default 100)\n");
	printf("  -e, --events               sleep on CQ events (default poll); not WRITE, not -D\n");
	printf("      --use-srq              SEND tests: the receiving end's QPs share one SRQ of -r's depth\n");
	printf("  -I, --inline_size=<size>   max inline size (default 0; latency: 220 WRITE, 236 SEND)\n");
	printf("  -c, --connection=<type>    RC (default), UC or UD (XRC/DC/SRD: not supported)\n");
	printf("  -x, --gid-index=<index>    local GID index (default 1: droce's IPv4 GID)\n");
	printf("  -o, --outs=<num>           outstanding reads/atomics (default device max)\n");
	printf("  -A, --atomic_type=<type>   CMP_AND_SWAP or FETCH_AND_ADD (default)\n");
	printf("  -u, --qp-timeout=<t>       QP timeout, 4.096 usec * 2^t (default 14)\n");
	printf("  -S, --sl=<sl>              service level\n");
	printf("  -F, --CPU-freq             don't complain about CPU frequency\n");
	printf("  -N, --noPeak               don't compute the peak bandwidth\n");
	printf("  -C, --report-cycles        latency in TSC cycles\n");
	printf("  -H, --report-histogrm      latency samples, sorted\n");
	printf("  -U, --report-unsorted      latency samples, unsorted\n");
	printf("      --report_gbits         bandwidth in Gb/sec\n");
	printf("      --output=<what>        bandwidth | message_rate | latency: one number only\n");
	printf("      --use_old_post_send    post with ibv_post_send (default: the ibv_wr_* API)\n");
	printf("      --run_infinitely       bandwidth: a row every -D seconds (default 5) until\n"
	       "                             SIGINT/SIGTERM; then the whole run's row\n");
	printf("  -w, --limit_bw=<value>     bandwidth tests: exit 1 if a row's BW average is below\n"
	       "                             <value> (MB/sec, or Gb/sec with --report_gbits)\n");
	printf("  -y, --limit_msgrate=<value> bandwidth tests: exit 1 if a row's MsgRate is below\n"
	       "                             <value> Mpps\n");
	printf("      --cpu_util             with -D: CPU_Util[%%] column, perftest's figure from\n"
	       "                             /proc/stat (user / (user + idle), all CPUs, the window)\n");
	printf("      --latency_gap=<usec>   latency tests: the client waits <usec> before each\n"
	       "                             round trip (not counted in the figures)\n");
	printf("      --mr_per_qp            an MR (and buffer slots) per QP\n");
	printf("      --use_hugepages        the buffer on huge pages (MAP_HUGETLB, the default\n"
	       "                             size), not 4 KiB pages\n");
	printf("      --no_lock              QPs, CQs, SRQ and MRs in a thread domain's parent\n"
	       "                             domain: posts and polls take no lock (perftest's)\n");
	printf("  -X, --vector=<n>           completion vector of the CQs (droce has 1: only 0)\n");
	printf("      --tclass=<value>       GRH traffic class: the IP header's DSCP and ECN bits\n");
	printf("      --flow_label=<value>   GRH flow label (20 bits): sets the UDP source port\n");
	printf("      --rate_limit=<rate>    bandwidth tests: send no faster than <rate> (see\n"
	       "                             --rate_units); the limiter: --rate_limit_type\n");
	printf("      --rate_units=<M|g|p>   MB/sec (M), Gb/sec (g, the default) or messages/sec (p)\n");
	printf("      --rate_limit_type=<SW|HW|PP>  SW: the client posts bursts of --burst_size\n"
	       "                             messages, spaced by the rate; HW (the default once\n"
	       "                             --rate_limit is given): an InfiniBand static rate,\n"
	       "                             so SW on RoCE as with perftest; PP: droce paces each\n"
	       "                             QP (ibv_modify_qp_rate_limit; --rate_units M)\n");
	printf("      --burst_size=<n>       messages per burst (SW: default the tx depth; PP:\n"
	       "                             the QP's max_burst_sz is <n> messages' bytes)\n");
	printf("      --typical_pkt_size=<bytes>  PP: the QP's typical_pkt_sz\n");
	printf("      --out_json             write the result to a file (perftest's format, not\n"
	       "                             quite JSON), rewritten with each row\n");
	printf("      --out_json_file=<file> its name (default perftest_out.json)\n");
	printf("      --reversed             both ends: the end that listens (the server) sends\n"
	       "                             and the one that connects receives (perftest's fan-in)\n");
	printf("      --pkey_index=<n>       P_Key index (droce has one P_Key: 0)\n");
	printf("      --inline_recv=<size>   accepted, as perftest 4.5 does, without effect\n");
	printf("      --retry_count=<n>      accepted, as perftest 4.5 does without -R, without effect\n");
	printf("  -V, --version              print the version\n");
	printf("Options (droce-perf's):\n");
	printf("      --loopback             both ends in this process on droce's net_ring pair\n");
	printf("      --engine=lcore|app|split  loopback: both devices' engine on a worker lcore\n");
	printf("                             (default with 2+ lcores), or driven by this thread's\n");
	printf("                             verbs calls; split: the client's driven by this\n");
	printf("                             thread, the server's on the worker (an engine per side)\n");
	printf("      --idle_us=<us>         loopback: engine idle sleep limit (droce's idle_us)\n");
	printf("      --post_drive=<n>       loopback: app-driven engine turned every <n> posts\n"
	       "                             (droce's post_drive; 0: only polls drive it)\n"
	       "      --rx_spin=<n>          loopback: an idle poll of an app-driven engine looks\n"
	       "                             at the port <n> more times (droce's rx_spin)\n");
	printf("      --nb_mbuf=<n>          loopback: mbufs per device (droce's nb_mbuf)\n");
	printf("      --zc_min=<bytes>       loopback: zero-copy transmit of packet payloads\n"
	       "                             of at least this size (droce's zc_min; 0 off)\n");
	printf("      --per_qp               per-QP message rate and bandwidth table\n");
	printf("      --kv                   one machine-readable DROCE_PERF line per result\n");
	printf("      --check                verify data and byte counts after each size\n");
	printf("      --cycles               TSC cycles per message/frame in this thread's verbs\n"
	       "                             calls; loopback also times the engine's stages\n"
	       "                             (devarg cycles=1; elsewhere add it to DROCE_DEVICES)\n");
	printf("      --retry_connect=<sec>  client: retry connecting to the server for <sec>\n");
	printf("      --no_info              no test-information block or address lines\n");
	printf("  Loopback EAL arguments come from DROCE_EAL_ARGS (default \"-l 0-1 --in-memory\n");
	printf("  --no-pci --log-level=*:warning\") plus DROCE_EAL_EXTRA_ARGS.\n");
}

enum {
	O_REPORT_GBITS = 256, O_OUTPUT, O_LOOPBACK, O_ENGINE, O_IDLE_US,
	O_NB_MBUF, O_ZC_MIN, O_PER_QP, O_KV, O_CHECK, O_CYCLES, O_DONT_XCHG,
	O_NO_INFO, O_RETRY_CONNECT, O_OLD_POST_SEND, O_POST_DRIVE, O_RX_SPIN, O_RUN_INF,
	O_REPORT_BOTH, O_USE_SRQ, O_CPU_UTIL, O_LATENCY_GAP, O_MR_PER_QP,
	O_USE_HUGEPAGES, O_NO_LOCK,
	O_TCLASS, O_FLOW_LABEL, O_RATE_LIMIT, O_RATE_UNITS, O_RATE_LIMIT_TYPE,
	O_BURST_SIZE, O_TYPICAL_PKT_SIZE, O_REVERSED, O_PKEY_INDEX,
	O_INLINE_RECV, O_RETRY_COUNT, O_OUT_JSON, O_OUT_JSON_FILE,
};

static int bad(const char *what, const char *arg)
{
	fprintf(stderr, " Invalid %s: %s\n", what, arg ? arg : "");
	return -1;
}

/* The index of s among n words, or -1. */
static int word_index(const char *s, const char *const *words, int n)
{
	for (int i = 0; i < n; i++)
		if (strcmp(s, words[i]) == 0)
			return i;
	return -1;
}

static int parse_num(const char *s, long lo, long hi, long *out)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 0);
	if (errno || end == s || *end || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

/*
 * A real number of seconds or a rate: finite (strtod takes "inf" and
 * "nan", and either one turned into TSC cycles is undefined) and within
 * [lo, hi].
 */
static int parse_real(const char *s, double lo, double hi, double *out)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end || !isfinite(v) || v < lo || v > hi)
		return -1;
	*out = v;
	return 0;
}

static int parse_args(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "port", 1, NULL, 'p' }, { "ib-dev", 1, NULL, 'd' },
		{ "ib-port", 1, NULL, 'i' }, { "mtu", 1, NULL, 'm' },
		{ "size", 1, NULL, 's' }, { "iters", 1, NULL, 'n' },
		{ "tx-depth", 1, NULL, 't' }, { "qp-timeout", 1, NULL, 'u' },
		{ "sl", 1, NULL, 'S' }, { "gid-index", 1, NULL, 'x' },
		{ "all", 0, NULL, 'a' }, { "CPU-freq", 0, NULL, 'F' },
		{ "connection", 1, NULL, 'c' }, { "qp", 1, NULL, 'q' },
		{ "events", 0, NULL, 'e' }, { "inline_size", 1, NULL, 'I' },
		{ "outs", 1, NULL, 'o' }, { "mcg", 0, NULL, 'g' },
		{ "comm_rdma_cm", 0, NULL, 'z' }, { "rdma_cm", 0, NULL, 'R' },
		{ "tos", 1, NULL, 'T' }, { "hop_limit", 1, NULL, 'L' },
		{ "help", 0, NULL, 'h' }, { "rx-depth", 1, NULL, 'r' },
		{ "bidirectional", 0, NULL, 'b' }, { "cq-mod", 1, NULL, 'Q' },
		{ "noPeak", 0, NULL, 'N' }, { "version", 0, NULL, 'V' },
		{ "report-cycles", 0, NULL, 'C' },
		{ "report-histogrm", 0, NULL, 'H' },
		{ "report-unsorted", 0, NULL, 'U' },
		{ "atomic_type", 1, NULL, 'A' }, { "post_list", 1, NULL, 'l' },
		{ "duration", 1, NULL, 'D' }, { "margin", 1, NULL, 'f' },
		{ "report_gbits", 0, NULL, O_REPORT_GBITS },
		{ "output", 1, NULL, O_OUTPUT },
		{ "dont_xchg_versions", 0, NULL, O_DONT_XCHG },
		{ "loopback", 0, NULL, O_LOOPBACK },
		{ "engine", 1, NULL, O_ENGINE },
		{ "idle_us", 1, NULL, O_IDLE_US },
		{ "post_drive", 1, NULL, O_POST_DRIVE },
		{ "rx_spin", 1, NULL, O_RX_SPIN },
		{ "nb_mbuf", 1, NULL, O_NB_MBUF },
		{ "zc_min", 1, NULL, O_ZC_MIN },
		{ "per_qp", 0, NULL, O_PER_QP }, { "kv", 0, NULL, O_KV },
		{ "check", 0, NULL, O_CHECK }, { "cycles", 0, NULL, O_CYCLES },
		{ "no_info", 0, NULL, O_NO_INFO },
		{ "retry_connect", 1, NULL, O_RETRY_CONNECT },
		{ "use_old_post_send", 0, NULL, O_OLD_POST_SEND },
		{ "run_infinitely", 0, NULL, O_RUN_INF },
		{ "report-both", 0, NULL, O_REPORT_BOTH },
		{ "use-srq", 0, NULL, O_USE_SRQ },
		{ "limit_bw", 1, NULL, 'w' }, { "limit_msgrate", 1, NULL, 'y' },
		{ "vector", 1, NULL, 'X' }, { "cpu_util", 0, NULL, O_CPU_UTIL },
		{ "latency_gap", 1, NULL, O_LATENCY_GAP },
		{ "mr_per_qp", 0, NULL, O_MR_PER_QP },
		{ "use_hugepages", 0, NULL, O_USE_HUGEPAGES },
		{ "no_lock", 0, NULL, O_NO_LOCK },
		{ "tclass", 1, NULL, O_TCLASS },
		{ "flow_label", 1, NULL, O_FLOW_LABEL },
		{ "rate_limit", 1, NULL, O_RATE_LIMIT },
		{ "rate_units", 1, NULL, O_RATE_UNITS },
		{ "rate_limit_type", 1, NULL, O_RATE_LIMIT_TYPE },
		{ "burst_size", 1, NULL, O_BURST_SIZE },
		{ "typical_pkt_size", 1, NULL, O_TYPICAL_PKT_SIZE },
		{ "reversed", 0, NULL, O_REVERSED },
		{ "pkey_index", 1, NULL, O_PKEY_INDEX },
		{ "inline_recv", 1, NULL, O_INLINE_RECV },
		{ "retry_count", 1, NULL, O_RETRY_COUNT },
		{ "out_json", 0, NULL, O_OUT_JSON },
		{ "out_json_file", 1, NULL, O_OUT_JSON_FILE },
		{ NULL, 0, NULL, 0 }
	};
	const char *json_file = "perftest_out.json";
	bool out_json = false;
	long v;
	int c;

	while ((c = getopt_long(argc, argv,
				"p:d:i:m:s:n:t:u:S:x:aFc:q:eI:o:gzRT:L:hr:bQ:NVCHUA:l:D:f:w:y:X:",
				lo, NULL)) != -1) {
		switch (c) {
		case 'p':
			if (parse_num(optarg, 1, 65535, &v))
				return bad("port", optarg);
			opt.tcp_port = (int)v;
			break;
		case 'd': opt.ib_devname = optarg; break;
		case 'i':
			if (parse_num(optarg, 1, 2, &v))
				return bad("ib port", optarg);
			opt.ib_port = (int)v;
			break;
		case 'm':
			if (parse_num(optarg, 256, 4096, &v) || !perf_mtu_enum((int)v))
				return bad("MTU (256, 512, 1024, 2048 or 4096)", optarg);
			opt.mtu = (int)v;
			break;
		case 's':
			if (parse_num(optarg, 1, PERF_MAX_MSG_SIZE, &v))
				return bad("size", optarg);
			opt.size = (uint64_t)v;
			opt.size_set = true;
			break;
		case 'n':
			if (parse_num(optarg, 5, 1L << 40, &v))
				return bad("iterations (at least 5)", optarg);
			opt.iters = (uint64_t)v;
			opt.iters_set = true;
			break;
		case 't':
			if (parse_num(optarg, 1, 16384, &v))
				return bad("tx depth", optarg);
			opt.tx_depth = (int)v;
			break;
		case 'u':
			if (parse_num(optarg, 0, 31, &v))
				return bad("qp timeout", optarg);
			opt.qp_timeout = (int)v;
			break;
		case 'S':
			if (parse_num(optarg, 0, 15, &v))
				return bad("sl", optarg);
			opt.sl = (int)v;
			break;
		case 'x':
			if (parse_num(optarg, 0, 255, &v))
				return bad("gid index", optarg);
			opt.gid_index = (int)v;
			break;
		case 'a': opt.all = true; break;
		case 'F': opt.cpu_freq_f = true; break;
		case 'c':
			if (strcmp(optarg, "RC") == 0) {
				opt.conn = C_RC;
			} else if (strcmp(optarg, "UC") == 0) {
				opt.conn = C_UC;
			} else if (strcmp(optarg, "UD") == 0) {
				opt.conn = C_UD;
			} else {
				fprintf(stderr, " Connection type %s is not supported: droce-perf runs RC, UC and UD\n",
					optarg);
				return -1;
			}
			break;
		case 'q':
			if (parse_num(optarg, 1, 16384, &v))
				return bad("number of QPs (1..16384)", optarg);
			opt.nqps = (int)v;
			break;
		case 'e':
			opt.use_event = true;
			break;
		case 'I':
			if (parse_num(optarg, 0, 4096, &v))
				return bad("inline size", optarg);
			opt.inline_size = (int)v;
			break;
		case 'o':
			if (parse_num(optarg, 1, 65535, &v))
				return bad("outstanding reads", optarg);
			opt.out_reads = (int)v;
			break;
		case 'g':
			fprintf(stderr, " -g (multicast): droce has no multicast groups yet (ibv_attach_mcast)\n");
			return -1;
		case 'z':
		case 'R':
			fprintf(stderr, " -%c (rdma_cm): not supported; droce-perf uses the TCP exchange\n", c);
			return -1;
		case 'b': opt.duplex = true; break;
		case 'T':
		case 'L':
			break;	/* accepted, without effect */
		case 'h':
			usage(argv[0]);
			exit(0);
		case 'r':
			if (parse_num(optarg, 1, 16384, &v))
				return bad("rx depth", optarg);
			opt.rx_depth = (int)v;
			break;
		case 'Q':
			if (parse_num(optarg, 1, 16384, &v))
				return bad("cq moderation", optarg);
			opt.cq_mod = (int)v;
			opt.cq_mod_set = true;
			break;
		case 'N': opt.no_peak = true; break;
		case 'V':
			printf("Version: %s (droce-perf)\n", PERF_VERSION);
			exit(0);
		case 'C': opt.report_cycles = true; break;
		case 'H': opt.report_hist = true; break;
		case 'U': opt.report_unsorted = true; break;
		case 'A':
			if (strcmp(optarg, "CMP_AND_SWAP") == 0)
				opt.atomic_type = A_CMP_AND_SWAP;
			else if (strcmp(optarg, "FETCH_AND_ADD") == 0)
				opt.atomic_type = A_FETCH_AND_ADD;
			else
				return bad("atomic type (CMP_AND_SWAP or FETCH_AND_ADD)", optarg);
			break;
		case 'l':
			if (parse_num(optarg, 1, 4096, &v))
				return bad("post list", optarg);
			opt.post_list = (int)v;
			break;
		case 'D':
			/* perftest's is a whole number of seconds up to
			 * INT_MAX; droce-perf also takes fractions, down to a
			 * millisecond */
			if (parse_real(optarg, PERF_MIN_DURATION, INT_MAX,
				       &opt.duration))
				return bad("duration (0.001 to 2147483647 seconds)",
					   optarg);
			break;
		case 'f':
			if (parse_real(optarg, 0, INT_MAX, &opt.margin))
				return bad("margin", optarg);
			break;
		case O_REPORT_GBITS: opt.report_gbits = true; break;
		case O_OUTPUT:
			if (strcmp(optarg, "bandwidth") == 0)
				opt.output = OUT_BW;
			else if (strcmp(optarg, "message_rate") == 0)
				opt.output = OUT_MR;
			else if (strcmp(optarg, "latency") == 0)
				opt.output = OUT_LAT;
			else
				return bad("output (bandwidth, message_rate, latency)", optarg);
			break;
		case O_DONT_XCHG:
			fprintf(stderr, " --dont_xchg_versions: not supported\n");
			return -1;
		case O_LOOPBACK: opt.loopback = true; break;
		case O_ENGINE:
			if (strcmp(optarg, "lcore") == 0)
				opt.engine = ENG_LCORE;
			else if (strcmp(optarg, "app") == 0)
				opt.engine = ENG_APP;
			else if (strcmp(optarg, "split") == 0)
				opt.engine = ENG_SPLIT;
			else
				return bad("engine (lcore, app or split)", optarg);
			break;
		case O_POST_DRIVE:
			if (parse_num(optarg, 0, 1 << 20, &v))
				return bad("post_drive", optarg);
			opt.post_drive = (int)v;
			break;
		case O_RX_SPIN:
			if (parse_num(optarg, 0, 1024, &v))
				return bad("rx_spin", optarg);
			opt.rx_spin = (int)v;
			break;
		case O_IDLE_US:
			if (parse_num(optarg, 0, 1000000, &v))
				return bad("idle_us", optarg);
			opt.idle_us = (int)v;
			break;
		case O_NB_MBUF:
			if (parse_num(optarg, 1023, 1 << 24, &v))
				return bad("nb_mbuf", optarg);
			opt.nb_mbuf = (unsigned int)v;
			break;
		case O_ZC_MIN:
			if (parse_num(optarg, 0, 1 << 16, &v))
				return bad("zc_min", optarg);
			opt.zc_min = (unsigned int)v;
			break;
		case O_PER_QP: opt.per_qp = true; break;
		case O_KV: opt.kv = true; break;
		case O_CHECK: opt.check = true; break;
		case O_CYCLES: opt.cycles = true; break;
		case O_OLD_POST_SEND: opt.old_post_send = true; break;
		case O_RUN_INF: opt.run_inf = true; break;
		case O_REPORT_BOTH: opt.report_both = true; break;
		case O_USE_SRQ: opt.use_srq = true; break;
		case 'w':
		case 'y':
			if (parse_real(optarg, 0, DBL_MAX,
				       c == 'w' ? &opt.limit_bw : &opt.limit_msgrate))
				return bad(c == 'w' ? "minimum BW limit" :
					   "minimum msgRate limit", optarg);
			break;
		case 'X':
			/* droce has one completion vector: 1 and up reach
			 * ibv_create_cq, which refuses them (EINVAL) */
			if (parse_num(optarg, 0, 1 << 20, &v))
				return bad("completion vector", optarg);
			opt.comp_vector = (int)v;
			break;
		case O_CPU_UTIL: opt.cpu_util = true; break;
		case O_LATENCY_GAP:
			if (parse_num(optarg, 0, 1000 * 1000, &v))
				return bad("latency gap (usec)", optarg);
			opt.latency_gap = (int)v;
			break;
		case O_MR_PER_QP: opt.mr_per_qp = true; break;
		case O_USE_HUGEPAGES: opt.use_hugepages = true; break;
		case O_NO_LOCK: opt.no_lock = true; break;
		case O_TCLASS:
			if (parse_num(optarg, 0, 255, &v))
				return bad("traffic class (0..255)", optarg);
			opt.tclass = (int)v;
			break;
		case O_FLOW_LABEL:
			if (parse_num(optarg, 0, 0xfffff, &v))
				return bad("flow label (0..0xfffff)", optarg);
			opt.flow_label = (uint32_t)v;
			break;
		case O_RATE_LIMIT: {
			/* perftest: a positive number; naming a rate makes the
			 * HW limiter the default */
			if (parse_real(optarg, DBL_MIN, DBL_MAX, &opt.rate_limit)) {
				fprintf(stderr, " Rate limit must be non-negative\n");
				return -1;
			}
			opt.rate_limit_str = optarg;
			if (opt.rate_type == RL_NONE)
				opt.rate_type = RL_HW;
			break;
		}
		case O_RATE_UNITS: {
			/* (in enum perf_rate_units order) */
			static const char *const u[] = { "M", "g", "p" };
			int i = word_index(optarg, u, 3);

			if (i < 0) {
				fprintf(stderr, " Invalid rate limit units. Please use M,g or p\n");
				return -1;
			}
			opt.rate_units = (enum perf_rate_units)i;
			break;
		}
		case O_RATE_LIMIT_TYPE: {
			/* (in enum perf_rate_type order, after RL_NONE) */
			static const char *const t[] = { "SW", "HW", "PP" };
			int i = word_index(optarg, t, 3);

			if (i < 0) {
				fprintf(stderr, " Invalid rate limit type flag. Please use HW, SW or PP.\n");
				return -1;
			}
			opt.rate_type = (enum perf_rate_type)(RL_SW + i);
			opt.rate_type_set = true;
			break;
		}
		case O_BURST_SIZE:
			if (parse_num(optarg, 0, 1 << 24, &v))
				return bad("burst size", optarg);
			opt.burst_size = (int)v;
			break;
		case O_TYPICAL_PKT_SIZE:
			if (parse_num(optarg, 0, 0xffff, &v))
				return bad("typical packet size", optarg);
			opt.typical_pkt_size = (int)v;
			break;
		case O_REVERSED: opt.reversed = true; break;
		case O_OUT_JSON: out_json = true; break;
		case O_OUT_JSON_FILE: json_file = optarg; break;
		case O_PKEY_INDEX:
			if (parse_num(optarg, 0, 65535, &v))
				return bad("Pkey index", optarg);
			/* perftest's ctx_chk_pkey_index, against droce's one
			 * P_Key (max_pkeys 1) */
			if (v > 0) {
				fprintf(stderr, " Specified PKey Index, %ld, greater than allowed max, 0\n", v);
				fprintf(stderr, " Changing to 0\n");
			}
			break;
		case O_INLINE_RECV:
		case O_RETRY_COUNT:
			if (parse_num(optarg, 0, INT32_MAX, &v))
				return bad(c == O_INLINE_RECV ? "Inline Receive size" :
					   "Retry Count", optarg);
			break;
		case O_NO_INFO: opt.quiet_info = true; break;
		case O_RETRY_CONNECT:
			if (parse_real(optarg, 0, INT_MAX, &opt.connect_retry))
				return bad("retry_connect", optarg);
			break;
		default:
			fprintf(stderr, " Try %s --help\n", argv[0]);
			return -1;
		}
	}
	/* perftest: the file name alone does not ask for the file */
	if (out_json)
		opt.out_json = json_file;
	if (optind == argc - 1)
		opt.servername = argv[optind];
	else if (optind < argc) {
		fprintf(stderr, " Unexpected argument %s\n", argv[optind]);
		return -1;
	}
	return 0;
}

/* IB's static rates, the values perftest's HW limiter accepts (Gb/s) */
static const char *const ib_rates[] = {
	"2.5", "5", "10", "14", "20", "25", "30", "40", "56", "60", "80",
	"100", "112", "120", "168", "200", "300", "MAX",
};

/*
 * perftest 4.5's rules for the rate limiters, in its order and words.
 * HW: a static rate in the QP's address vector, which only InfiniBand
 * honours; perftest finds the RoCE QP did not take it and, unless the type
 * was named, falls back to SW. PP: perftest allows it on raw Ethernet
 * QPs only; droce paces its RC, UC and UD QPs, so droce-perf allows it
 * on those.
 */
static int settle_rate_limit(void)
{
	/* a limiter named with no rate to hold (perftest reads the missing
	 * rate as a null string) */
	if (opt.rate_type != RL_NONE && opt.rate_limit_str == NULL) {
		fprintf(stderr, " --rate_limit_type needs a --rate_limit\n");
		return -1;
	}
	if (opt.burst_size > 0 && opt.rate_type == RL_NONE) {
		fprintf(stderr, " Can't enable burst mode when rate limiter is off\n");
		return -1;
	}
	if (opt.burst_size <= 0) {
		if (opt.rate_type == RL_SW)
			fprintf(stderr, " Setting burst size to tx depth = %d\n",
				opt.tx_depth);
		if (opt.rate_type != RL_PP)
			opt.burst_size = opt.tx_depth;
	}
	if (opt.typical_pkt_size && opt.rate_type != RL_PP) {
		fprintf(stderr, " Typical packet size only supports PP rate limiter\n");
		return -1;
	}
	if (opt.run_inf && opt.rate_type != RL_NONE) {
		fprintf(stderr, " run_infinitely does not support rate limit feature yet\n");
		return -1;
	}
	if (opt.rate_type == RL_SW) {
		if (opt.tst != T_BW || opt.verb == V_ATOMIC ||
		    (opt.verb == V_SEND && opt.duplex)) {
			fprintf(stderr, "SW Rate limiter cann't be executed on non-BW, ATOMIC or bidirectional SEND tests\n");
			return -1;
		}
	} else if (opt.rate_type == RL_HW) {
		size_t i;

		if (opt.rate_units == RU_PPS) {
			fprintf(stderr, " Failed: pps rate limit units is not supported when setting HW rate limit\n");
			return -1;
		}
		for (i = 0; i < (sizeof(ib_rates) / sizeof(ib_rates[0])); i++)
			if (strcmp(opt.rate_limit_str, ib_rates[i]) == 0)
				break;
		if (i == (sizeof(ib_rates) / sizeof(ib_rates[0]))) {
			fprintf(stderr, "The input value for hw rate limit is not supported\n");
			for (i = 0; i < (sizeof(ib_rates) / sizeof(ib_rates[0])); i++)
				fprintf(stderr, "\t\t\t %s Gbps \t\t\n", ib_rates[i]);
			fprintf(stderr, " Failed: Unknown rate limit value\n");
			return -1;
		}
		if (opt.rate_type_set) {
			fprintf(stderr, "The QP failed to accept HW rate limit (a static rate is InfiniBand's; use SW or PP on RoCE)\n");
			return -1;
		}
		fprintf(stderr, "The QP failed to accept HW rate limit, providing SW rate limit\n");
		opt.rate_type = RL_SW;
	} else if (opt.rate_type == RL_PP) {
		if (opt.rate_units != RU_MBPS) {
			fprintf(stderr, "Packet Pacing only supports MEGA_BYTE_PS.\n");
			return -1;
		}
	}
	return 0;
}

/* perftest's defaults, then its force_dependecies(). */
static int settle_opts(void)
{
	if (!opt.size_set)
		opt.size = opt.verb == V_ATOMIC ? PERF_ATOMIC_SIZE :
			   opt.tst == T_BW ? PERF_DEF_SIZE_BW : PERF_DEF_SIZE_LAT;
	if (!opt.iters_set)
		opt.iters = opt.tst == T_BW && opt.verb == V_WRITE ?
			    PERF_DEF_ITERS_WB : PERF_DEF_ITERS;
	if (opt.tx_depth == 0)
		opt.tx_depth = opt.tst == T_BW ? PERF_DEF_TX_BW : PERF_DEF_TX_LAT;
	if (opt.rx_depth == 0)
		opt.rx_depth = opt.verb == V_SEND ? PERF_DEF_RX_SEND : 1;
	if (opt.cq_mod == 0)
		opt.cq_mod = PERF_DEF_CQ_MOD;
	if (opt.verb == V_ATOMIC && opt.size != PERF_ATOMIC_SIZE) {
		fprintf(stderr, " Message size cannot be changed for Atomic tests\n");
		return -1;
	}
	/* IBTA table 38: UC has SEND and RDMA WRITE, no READ or atomics;
	 * UD has SEND only */
	if (opt.conn != C_RC && (opt.verb == V_READ || opt.verb == V_ATOMIC ||
				 (opt.conn == C_UD && opt.verb == V_WRITE))) {
		fprintf(stderr, " %s not supported over %s\n",
			opt.verb == V_READ ? "RDMA Read is" :
			opt.verb == V_WRITE ? "RDMA Write is" :
					      "Atomic operations are",
			opt.conn == C_UC ? "UC" : "UD");
		return -1;
	}
	/* A datagram is one packet: refused here, before any buffer is
	 * allocated, where no path MTU could carry it (ud_size_check has the
	 * port's MTU later) */
	if (opt.conn == C_UD && !opt.all &&
	    opt.size > (uint64_t)(opt.mtu ? opt.mtu : 4096)) {
		fprintf(stderr, " Max msg size in UD is MTU %d\n",
			opt.mtu ? opt.mtu : 4096);
		return -1;
	}
	/* perftest 4.5: no inline in bandwidth tests unless -I; latency
	 * tests 220 (WRITE) and 236 (SEND) on a device that has inline */
	if (opt.inline_size < 0) {
		if (opt.tst == T_LAT && opt.verb == V_WRITE)
			opt.inline_size = PERF_DEF_INLINE_WRITE;
		else if (opt.tst == T_LAT && opt.verb == V_SEND)
			opt.inline_size = PERF_DEF_INLINE_SEND;
		else
			opt.inline_size = 0;
	}
	if (opt.verb == V_READ || opt.verb == V_ATOMIC)
		opt.inline_size = 0;
	if (opt.run_inf) {
		if (opt.tst != T_BW) {
			fprintf(stderr, " run_infinitely exists only in BW tests for now.\n");
			return -1;
		}
		if (opt.duplex && opt.verb == V_SEND) {
			fprintf(stderr, " run_infinitely mode is not supported in SEND Bidirectional BW test\n");
			return -1;
		}
		if (opt.duration <= 0)
			opt.duration = PERF_DEF_DURATION;
		opt.no_peak = true;
	}
	if ((opt.limit_bw >= 0 || opt.limit_msgrate >= 0) && opt.tst != T_BW) {
		fprintf(stderr, " -w and -y (result limits) are for bandwidth tests\n");
		return -1;
	}
	if (opt.latency_gap > 0 && opt.tst != T_LAT) {
		fprintf(stderr, " Latency gap feature is only for latency tests\n");
		return -1;
	}
	/* perftest: a note, and the run goes on without the column */
	if (opt.cpu_util && (opt.duration <= 0 || opt.run_inf)) {
		fprintf(stderr, " CPU Utilization works only with Duration mode%s.\n",
			opt.run_inf ? " (not --run_infinitely)" : "");
		opt.cpu_util = false;
	}
	if (opt.use_srq && opt.verb != V_SEND) {
		fprintf(stderr, " Using SRQ only avavilible in SEND tests.\n");
		return -1;
	}
	/* perftest 4.5's limits of -e */
	if (opt.use_event) {
		if (opt.verb == V_WRITE) {
			fprintf(stderr, " Events feature not available on WRITE verb\n");
			return -1;
		}
		if (opt.run_inf) {
			fprintf(stderr, " run_infinitely does not support events feature yet.\n");
			return -1;
		}
		if (opt.duration > 0) {
			fprintf(stderr, " Duration mode doesn't work with events.\n");
			return -1;
		}
	}
	if (opt.duplex && opt.tst != T_BW) {
		fprintf(stderr, " Bidirectional is only available in BW test\n");
		return -1;
	}
	if (opt.tst == T_LAT && opt.nqps != 1) {
		fprintf(stderr, " Latency tests run on one QP\n");
		return -1;
	}
	if (opt.duration > 0) {
		if (opt.all) {
			fprintf(stderr, " Duration mode doesn't support running on all sizes.\n");
			return -1;
		}
		opt.no_peak = true;
	} else {
		if ((uint64_t)opt.tx_depth > opt.iters)
			opt.tx_depth = (int)opt.iters;
		if (opt.verb == V_SEND && (uint64_t)opt.rx_depth > opt.iters)
			opt.rx_depth = (int)opt.iters;
	}
	if (opt.use_srq && opt.nqps > opt.rx_depth) {
		fprintf(stderr, " Using SRQ depth should be greater than number of QPs.\n");
		return -1;
	}
	if (opt.post_list > 1) {
		if (opt.duration <= 0 && opt.iters % (uint64_t)opt.post_list) {
			fprintf(stderr, " Number of iterations must be a multiple of post list size\n");
			return -1;
		}
		if (!opt.cq_mod_set)
			opt.cq_mod = opt.post_list;
		else if (opt.post_list % opt.cq_mod) {
			fprintf(stderr, " Post list size must be a multiple of CQ moderation\n");
			return -1;
		}
		if (opt.tx_depth < opt.post_list)
			opt.tx_depth = opt.post_list;
	}
	/* (not with -e: perftest keeps the moderation, fewer events) */
	if (opt.size > PERF_CQ_MOD_SIZE_LIMIT && !opt.all && !opt.cq_mod_set &&
	    !opt.use_event)
		opt.cq_mod = 1;
	if (opt.cq_mod > opt.tx_depth)
		opt.cq_mod = opt.tx_depth;
	return settle_rate_limit();
}

static uint64_t page_size(void)
{
	long p = sysconf(_SC_PAGESIZE);

	return p > 0 ? (uint64_t)p : 4096;
}

/* A UD message is one packet: at most the path MTU (perftest's rule). */
static int ud_size_check(void)
{
	if (opt.conn == C_UD && !opt.all && opt.size > (uint64_t)opt.mtu) {
		fprintf(stderr, " Max msg size in UD is MTU %d\n", opt.mtu);
		return -1;
	}
	return 0;
}

static uint64_t max_size(void)
{
	return opt.all ? PERF_MAX_SIZE : opt.size;
}

/* The sizes of this run: -s, or 2..2^23 with -a; over UD 2..the path MTU
 * (a datagram is one packet; perftest's UD_MSG_2_EXP), known by the time
 * the sizes run. */
static int nsizes(void)
{
	int n = 0;

	if (!opt.all || opt.verb == V_ATOMIC)
		return 1;
	if (opt.conn != C_UD)
		return 23;
	while ((2 << n) <= opt.mtu)
		n++;
	return n;
}

static uint64_t size_at(int i)
{
	return opt.all && opt.verb != V_ATOMIC ? (uint64_t)1 << (i + 1) : opt.size;
}

static int alloc_timing(struct perf_side *s)
{
	if (opt.tst == T_LAT) {
		if (opt.duration > 0)
			return 0;
		s->tposted = calloc(opt.iters, sizeof(uint64_t));
		return s->tposted ? 0 : -1;
	}
	if (!side_sends(s) || opt.no_peak || opt.duration > 0)
		return 0;
	s->tp_n = opt.iters * (uint64_t)opt.nqps;
	if (s->tp_n > (1u << 23)) {
		fprintf(stderr, " note: %lu messages: peak bandwidth not computed (as -N)\n",
			(unsigned long)s->tp_n);
		opt.no_peak = true;
		s->tp_n = 0;
		return 0;
	}
	s->tp = calloc(s->tp_n, sizeof(uint64_t));
	s->tc = calloc(s->tp_n, sizeof(uint64_t));
	return s->tp && s->tc ? 0 : -1;
}

static void stats_get(struct perf_side *s, struct droce_dev_stats *st)
{
	if (s && droce_dev_stats_get(s->ctx, st))
		memset(st, 0, sizeof(*st));
}

static void zero_for_lat(struct perf_side *s)
{
	/* write_lat polls the last byte of each message: start from zero */
	if (s)
		memset(s->buf, 0, s->buf_len);
}

/*
 * Atomics start from zero: the client's result word, and the server's
 * whole target slot. droce-perf's client works on the slot's first word;
 * perftest's moves its remote address on by INC(8, cache line) per
 * operation and wraps at its cycle buffer (increase_rem_addr() in
 * perftest_resources.h), and the slot holds the cycle buffer.
 */
static void atomic_prepare(struct perf_side *c, struct perf_side *srv)
{
	for (int q = 0; c && q < c->nqps; q++)
		memset(side_src(c, q), 0, 8);
	for (int q = 0; srv && q < srv->nqps; q++)
		memset(side_dst(srv, q), 0, srv->slot);
}

/* The sum of the 8-byte counters in a server's target slot: what its
 * client's FETCH_AND_ADDs (1 each, wherever in the slot) added up to. */
static uint64_t atomic_slot_sum(const struct perf_side *srv, int q)
{
	const uint8_t *p = side_dst(srv, q);
	uint64_t sum = 0, v;

	for (size_t off = 0; off + 8 <= srv->slot; off += 8) {
		memcpy(&v, p + off, 8);
		sum += v;
	}
	return sum;
}

static bool full_out(void)
{
	return opt.output == OUT_FULL;
}

/* One size, both ends local (loopback). */
static int loopback_size(struct perf_side *c, struct perf_side *srv,
			 uint64_t size)
{
	struct perf_bw_report r;
	int ret;

	run_set_size(size);
	memset(&perf_cyc, 0, sizeof(perf_cyc));
	perf_post_enomem = 0;
	perf_events = 0;
	if (opt.verb == V_ATOMIC) {
		atomic_prepare(c, srv);
		if (opt.duplex)
			atomic_prepare(srv, c);
	}
	if (opt.tst == T_LAT && opt.verb == V_SEND &&
	    (run_lat_prepare_recv(c) || run_lat_prepare_recv(srv)))
		return -1;
	if (opt.tst == T_BW && opt.verb == V_SEND &&
	    (run_bw_prepare_server(srv) ||
	     (opt.duplex && run_bw_prepare_server(c))))
		return -1;
	stats_get(c, &c->ds0);
	stats_get(srv, &srv->ds0);
	ret = opt.tst == T_BW ? run_bw(c, srv) : run_lat(c, srv);
	stats_get(c, &c->ds1);
	stats_get(srv, &srv->ds1);
	if (ret) {
		droce_dev_stats_dump(c->ctx, stderr);
		droce_dev_stats_dump(srv->ctx, stderr);
		return -1;
	}
	if (opt.tst == T_BW) {
		const struct perf_run_result *res = run_result(c);

		report_bw(c, &r);
		if (opt.duplex) {
			struct perf_bw_report mine = r, o;

			report_bw(srv, &o);
			report_bw_add(&r, &o);
			report_bw_print(&r);
			report_bw_limits(&r);
			if (opt.report_both && !opt.all)	/* as perftest */
				report_bw_both(&mine, &o);
		} else {
			report_bw_print(&r);
			report_bw_limits(&r);
		}
		report_kv_bw(c, srv, &r, (double)(res->t1 - res->t0) /
					 perf_tsc_hz());
	} else {
		if (report_lat(c))
			return -1;
		report_kv_lat(c, srv);
	}
	report_cycles(c, srv);
	if (opt.check) {
		int b = run_check(c, srv);

		if (b) {
			printf(" check: FAILED (%d problem%s) at size %lu\n", b,
			       b == 1 ? "" : "s", (unsigned long)size);
			return -1;
		}
		if (full_out())
			printf(" check: size %lu OK\n", (unsigned long)size);
	}
	return 0;
}

static int eal_init_loopback(const char *argv0)
{
	static char buf[4096];
	static char *av[64];
	const char *env = getenv("DROCE_EAL_ARGS");
	int ac;

	av[0] = (char *)(uintptr_t)argv0;
	/* The app engine needs no second lcore. */
	ac = droce_eal_argv(av, 1, 64, (env == NULL || *env == '\0') &&
			    opt.engine == ENG_APP ?
			    "-l 0 --in-memory --no-pci --log-level=*:warning" : NULL,
			    buf, sizeof(buf));
	if (ac < 0 || rte_eal_init(ac, av) < 0) {
		fprintf(stderr, " EAL init failed: %s\n",
			ac < 0 ? strerror(-ac) : rte_strerror(rte_errno));
		return -1;
	}
	return 0;
}

static int main_loopback(const char *argv0)
{
	struct perf_side c, s;
	struct ibv_device **list;
	char da[160], db[160], common[96];
	unsigned int worker;
	int nd, ret = 1;

	memset(&c, 0, sizeof(c));
	memset(&s, 0, sizeof(s));
	if (eal_init_loopback(argv0))
		return 1;
	worker = rte_get_next_lcore(-1, 1, 0);
	if (opt.engine == ENG_DEFAULT)
		opt.engine = worker < RTE_MAX_LCORE ? ENG_LCORE : ENG_APP;
	if (opt.engine != ENG_APP && worker >= RTE_MAX_LCORE) {
		fprintf(stderr, " --engine=%s needs a worker lcore (DROCE_EAL_ARGS \"-l 0-1 ...\")\n",
			opt.engine == ENG_SPLIT ? "split" : "lcore");
		return 1;
	}
	snprintf(common, sizeof(common), "mtu=%d", opt.mtu ? opt.mtu : 4096);
	if (opt.idle_us >= 0)
		snprintf(common + strlen(common), sizeof(common) - strlen(common),
			 ",idle_us=%d", opt.idle_us);
	if (opt.post_drive >= 0)
		snprintf(common + strlen(common), sizeof(common) - strlen(common),
			 ",post_drive=%d", opt.post_drive);
	if (opt.rx_spin >= 0)
		snprintf(common + strlen(common), sizeof(common) - strlen(common),
			 ",rx_spin=%d", opt.rx_spin);
	if (opt.nb_mbuf)
		snprintf(common + strlen(common), sizeof(common) - strlen(common),
			 ",nb_mbuf=%u", opt.nb_mbuf);
	if (opt.zc_min)
		snprintf(common + strlen(common), sizeof(common) - strlen(common),
			 ",zc_min=%u", opt.zc_min);
	if (opt.cycles)		/* the engine's stages timed too */
		snprintf(common + strlen(common), sizeof(common) - strlen(common),
			 ",cycles=1");
	/* The client's engine: this thread's unless lcore; the server's: this
	 * thread's only in app mode. */
	if (opt.engine == ENG_LCORE)
		snprintf(da, sizeof(da), "ip=198.18.0.1,name=droce_lb0,%s,lcore=%u",
			 common, worker);
	else
		snprintf(da, sizeof(da), "ip=198.18.0.1,name=droce_lb0,%s,lcore=app",
			 common);
	if (opt.engine == ENG_APP)
		snprintf(db, sizeof(db), "ip=198.18.0.2,name=droce_lb1,%s,lcore=app",
			 common);
	else
		snprintf(db, sizeof(db), "ip=198.18.0.2,name=droce_lb1,%s,lcore=%u",
			 common, worker);
	ret = droce_create_ring_pair(da, db);
	if (ret) {
		fprintf(stderr, " droce_create_ring_pair: %s\n", strerror(-ret));
		return 1;
	}
	ret = 1;
	list = ibv_get_device_list(&nd);
	if (list == NULL || nd < 2) {
		fprintf(stderr, " loopback: the ring pair's devices are missing\n");
		return 1;
	}
	/* the pair is the last two devices created */
	if (side_open(&c, list[nd - 2], true, max_size(), page_size()) ||
	    side_open(&s, list[nd - 1], false, max_size(), page_size()))
		goto out;
	c.app_mode = opt.engine == ENG_APP || opt.engine == ENG_SPLIT;
	s.app_mode = opt.engine == ENG_APP;
	if (opt.mtu == 0)
		opt.mtu = perf_mtu_bytes(c.port_mtu);
	if (ud_size_check())
		goto out;
	side_fill_dest(&c);
	side_fill_dest(&s);
	memcpy(c.rem, s.my, sizeof(*c.rem) * (size_t)opt.nqps);
	memcpy(s.rem, c.my, sizeof(*s.rem) * (size_t)opt.nqps);
	if (alloc_timing(&c) || alloc_timing(&s)) {
		fprintf(stderr, " out of memory for the timing arrays\n");
		goto out;
	}
	report_test_info(&c);
	if (side_connect(&c) || side_connect(&s))
		goto out;
	for (int i = 0; i < opt.nqps && i < 8; i++) {
		report_dest(&c.my[i], false);
	}
	for (int i = 0; i < opt.nqps && i < 8; i++)
		report_dest(&c.rem[i], true);
	if (opt.tst == T_LAT) {
		zero_for_lat(&c);
		zero_for_lat(&s);
		report_lat_header();
	} else {
		report_bw_header();
	}
	for (int i = 0; i < nsizes(); i++)
		if (loopback_size(&c, &s, size_at(i)))
			goto out;
	report_line();
	if (opt.tst == T_BW) {
		const struct perf_run_result *res = run_result(&c);
		double secs = (double)(res->t1 - res->t0) / perf_tsc_hz();

		report_per_qp(&c, secs);
		if (opt.verb == V_SEND || opt.duplex)
			report_per_qp(&s, secs);
	}
	ret = report_limits_verdict() ? 1 : 0;
out:
	side_close(&c);
	side_close(&s);
	ibv_free_device_list(list);
	if (droce_cleanup() == 0)
		rte_eal_cleanup();
	return ret;
}

/* ---------------------------------------------------------- remote */

static bool gid_v4mapped(const union ibv_gid *g)
{
	static const uint8_t p[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };

	return memcmp(g->raw, p, 12) == 0;
}

/*
 * Every QP's address, both ways; the second time (print_remote) the same
 * ones again. An address that names the peer's first QP again, or one
 * that changed, means the peer has another number of QPs: its messages
 * are read out of step, and the run would end with both ends waiting for
 * the other for good.
 */
static int hs_all(struct perf_side *me, bool print_remote)
{
	for (int i = 0; i < me->nqps; i++) {
		uint32_t before = me->rem[i].qpn;

		if (oob_hand_shake(&me->my[i], &me->rem[i]))
			return -1;
		if ((i > 0 && me->rem[i].qpn == me->rem[0].qpn) ||
		    (print_remote && me->rem[i].qpn != before)) {
			PERF_ERR("The peer's QP %d is not one of its QPs: were both ends given the same -q?\n",
				 i);
			return -1;
		}
		if (print_remote)
			report_dest(&me->rem[i], true);
	}
	return 0;
}

static int hs0(struct perf_side *me)
{
	struct perf_dest scratch;

	return oob_hand_shake(&me->my[0], &scratch);
}

static int remote_connect(struct perf_side *me)
{
	if (gid_v4mapped(&me->my[0].gid) != gid_v4mapped(&me->rem[0].gid)) {
		fprintf(stderr, "\n Found Incompatibility issue with GID types.\n");
		fprintf(stderr, " Please Try to use a different IP version.\n\n");
		return -1;
	}
	return side_connect(me);
}

static void print_locals(struct perf_side *me)
{
	for (int i = 0; i < me->nqps; i++)
		report_dest(&me->my[i], false);
}

/* --check of an atomic responder's counters, summed over the slot: a
 * perftest client spreads them over its cycle buffer (atomic_prepare). */
static int check_atomic_slots(struct perf_side *me)
{
	if (!opt.check || opt.verb != V_ATOMIC ||
	    opt.atomic_type != A_FETCH_AND_ADD || opt.duration > 0)
		return 0;
	for (int q = 0; q < me->nqps; q++) {
		uint64_t v = atomic_slot_sum(me, q);

		if (v != opt.iters) {
			printf(" check: QP %d counters add up to %lu after %lu FETCH_AND_ADDs\n",
			       q, (unsigned long)v, (unsigned long)opt.iters);
			return -1;
		}
	}
	return 0;
}

/*
 * One size of a bandwidth test on this end: run, then (-b) perftest's
 * exchange of the two ends' figures, whose sum is what both print (write
 * and read with -a sync once more first; send_bw in duration mode prints
 * its own only, as perftest 4.5).
 */
/*
 * The peer's figures, read from the exchange: a message size -s can give
 * (a size other than this end's is said, as perftest would print it) and
 * finite rates. Ends that were given different options (-q, the test, the
 * transport) read each other's messages out of step: a QP's address read
 * as a report printed a row of garbage and left both ends waiting for the
 * other for good.
 */
static int peer_report_ok(const struct perf_bw_report *theirs, uint64_t size)
{
	if (!isfinite(theirs->bw_peak) || !isfinite(theirs->bw_avg) ||
	    !isfinite(theirs->msg_rate) || theirs->size == 0 ||
	    theirs->size > PERF_MAX_MSG_SIZE) {
		PERF_ERR("The peer's report makes no sense (its size %" PRIu64
			 "): were both ends given the same options?\n",
			 theirs->size);
		return -1;
	}
	if (size != 0 && theirs->size != size)
		fprintf(stderr, " The peer's messages are %" PRIu64
			" bytes, this end's %" PRIu64 "\n", theirs->size, size);
	return 0;
}

static int remote_bw_size(struct perf_side *me, uint64_t size)
{
	bool client = me->is_client;
	const struct perf_run_result *res;
	struct perf_bw_report r, theirs;

	run_set_size(size);
	memset(&perf_cyc, 0, sizeof(perf_cyc));
	perf_post_enomem = 0;
	perf_events = 0;
	if (opt.verb == V_ATOMIC && side_sends(me))
		atomic_prepare(me, NULL);	/* our fetched word */
	stats_get(me, &me->ds0);
	if (run_bw(client ? me : NULL, client ? NULL : me))
		return -1;
	stats_get(me, &me->ds1);
	if (opt.duplex && opt.all && (opt.verb == V_WRITE || opt.verb == V_READ) &&
	    hs0(me))
		return -1;
	report_bw(me, &r);
	if (opt.duplex && !(opt.verb == V_SEND && opt.duration > 0)) {
		struct perf_bw_report mine = r;

		if (oob_bw_reports(&r, &theirs, oob_rem_version) ||
		    peer_report_ok(&theirs, size))
			return -1;
		report_bw_add(&r, &theirs);
		report_bw_print(&r);
		report_bw_limits(&r);
		/* perftest: one size (not -a) only */
		if (opt.report_both && !opt.all)
			report_bw_both(&mine, &theirs);
	} else {
		report_bw_print(&r);
		report_bw_limits(&r);
	}
	res = run_result(me);
	report_kv_bw(me, NULL, &r, (double)(res->t1 - res->t0) / perf_tsc_hz());
	report_cycles(me, NULL);
	if (opt.check) {
		int b = run_check(client ? me : NULL, client ? NULL : me);

		if (b) {
			printf(" check: FAILED (%d problem%s)\n", b, b == 1 ? "" : "s");
			return -1;
		}
	}
	return 0;
}

static int remote_bw(struct perf_side *me)
{
	struct perf_bw_report mine, theirs;
	bool client = me->is_client;

	memset(&mine, 0, sizeof(mine));
	if (opt.verb == V_ATOMIC && (!client || opt.duplex))
		atomic_prepare(NULL, me);	/* counters start at 0 */
	if (hs_all(me, false) || remote_connect(me))
		return -1;
	print_locals(me);
	if (hs_all(me, true) || hs0(me))
		return -1;
	report_bw_header();
	if (!client && !opt.duplex) {
		/* the server's engine answers; it waits for the client */
		stats_get(me, &me->ds0);
		if (hs0(me))
			return -1;
		stats_get(me, &me->ds1);
		if (oob_bw_reports(&mine, &theirs, oob_rem_version) ||
		    peer_report_ok(&theirs, nsizes() == 1 ? size_at(0) : 0))
			return -1;
		run_set_size(nsizes() == 1 ? size_at(0) : 0);	/* 0: -a */
		report_passive_engine(me);
		if (full_out())
			report_bw_print(&theirs);
		else
			report_json_bw(&theirs);	/* as perftest's */
		report_bw_limits(&theirs);
		if (oob_close(&me->my[0], &me->rem[0]))
			return -1;
		report_line();
		return check_atomic_slots(me);
	}
	for (int i = 0; i < nsizes(); i++)
		if ((opt.duplex && hs0(me)) || remote_bw_size(me, size_at(i)))
			return -1;
	report_line();
	{
		const struct perf_run_result *res = run_result(me);

		report_per_qp(me, (double)(res->t1 - res->t0) / perf_tsc_hz());
	}
	/* without -b the client sends the server its figures to print */
	if (!opt.duplex) {
		report_bw(me, &mine);
		if (hs0(me) || oob_bw_reports(&mine, &theirs, oob_rem_version))
			return -1;
	}
	if (oob_close(&me->my[0], &me->rem[0]))
		return -1;
	return opt.duplex ? check_atomic_slots(me) : 0;
}

static int remote_send_bw(struct perf_side *me)
{
	if (hs_all(me, false) || remote_connect(me) || hs0(me))
		return -1;
	print_locals(me);
	if (hs_all(me, true))
		return -1;
	report_bw_header();
	for (int i = 0; i < nsizes(); i++) {
		uint64_t size = size_at(i);

		run_set_size(size);
		if (side_recvs(me) && run_bw_prepare_server(me))
			return -1;
		if (hs0(me) || remote_bw_size(me, size))
			return -1;
		/* perftest syncs again after each size of -a only */
		if (opt.all && hs0(me))
			return -1;
	}
	report_line();
	return oob_close(&me->my[0], &me->rem[0]);
}

static int remote_lat_size(struct perf_side *me, uint64_t size)
{
	bool client = me->is_client;

	run_set_size(size);
	memset(&perf_cyc, 0, sizeof(perf_cyc));
	perf_post_enomem = 0;
	perf_events = 0;
	stats_get(me, &me->ds0);
	if (run_lat(client ? me : NULL, client ? NULL : me))
		return -1;
	stats_get(me, &me->ds1);
	if (report_lat(me))
		return -1;
	report_kv_lat(me, NULL);
	report_cycles(me, NULL);
	return 0;
}

static int remote_lat(struct perf_side *me)
{
	bool client = me->is_client;

	if (opt.verb == V_SEND) {
		if (hs_all(me, false) || remote_connect(me) || hs0(me))
			return -1;
		print_locals(me);
		if (hs_all(me, true))
			return -1;
	} else {
		if (hs0(me) || hs_all(me, false) || remote_connect(me))
			return -1;
		print_locals(me);
		if (hs_all(me, true) || hs0(me))
			return -1;
	}
	zero_for_lat(me);
	if ((opt.verb == V_READ || opt.verb == V_ATOMIC) && !client) {
		/* only the client posts; the server waits for it to finish */
		if (oob_close(&me->my[0], &me->rem[0]))
			return -1;
		report_line();
		return 0;
	}
	report_lat_header();
	for (int i = 0; i < nsizes(); i++) {
		uint64_t size = size_at(i);

		run_set_size(size);
		if (opt.verb == V_SEND) {
			if (run_lat_prepare_recv(me) || hs0(me))
				return -1;
		}
		if (remote_lat_size(me, size))
			return -1;
	}
	report_line();
	if (opt.verb == V_WRITE)
		return 0;	/* write_lat ends without a closing exchange */
	return oob_close(&me->my[0], &me->rem[0]);
}

static bool env_app_mode(void)
{
	const char *d = getenv("DROCE_DEVICES");

	if (d && strstr(d, "lcore=app"))
		return true;
	return rte_lcore_count() <= 1;
}

static int main_remote(void)
{
	struct ibv_device **list, *dev = NULL;
	struct perf_side me;
	char rem_version[PERF_VERSION_LEN];
	int cycle_buffer = (int)sysconf(_SC_PAGESIZE), cache_line = 64;
	enum ibv_mtu mtu;
	int nd, ret = 1;

	memset(&me, 0, sizeof(me));
	list = ibv_get_device_list(&nd);
	if (list == NULL || nd == 0) {
		fprintf(stderr, " No IB devices found (DROCE_DEVICES?)\n");
		return 1;
	}
	for (int i = 0; i < nd; i++)
		if (!opt.ib_devname ||
		    strcmp(ibv_get_device_name(list[i]), opt.ib_devname) == 0) {
			dev = list[i];
			break;
		}
	if (dev == NULL) {
		fprintf(stderr, " IB device %s not found\n", opt.ib_devname);
		goto out;
	}
	me.app_mode = env_app_mode();
	opt.engine = me.app_mode ? ENG_APP : ENG_LCORE;
	if (full_out() && !opt.servername) {
		printf("\n************************************\n");
		printf("* Waiting for client to connect... *\n");
		printf("************************************\n");
		fflush(stdout);
	}
	if (oob_connect())
		goto out;
	if (oob_versions(rem_version) || oob_sys_data(&cycle_buffer, &cache_line))
		goto out;
	/* resources once the cycle buffer is agreed, as perftest; the
	 * end that connects is the client unless --reversed (which swaps
	 * the test's roles, never the exchange's: oob.c goes by servername) */
	if (side_open(&me, dev, (opt.servername != NULL) != opt.reversed, max_size(),
		      (uint64_t)cycle_buffer))
		goto out;
	me.app_mode = env_app_mode();
	oob_set_drive(&me);
	if (alloc_timing(&me)) {
		fprintf(stderr, " out of memory for the timing arrays\n");
		goto out;
	}
	mtu = opt.mtu ? perf_mtu_enum(opt.mtu) : me.port_mtu;
	if (oob_mtu(&mtu))
		goto out;
	opt.mtu = perf_mtu_bytes(mtu);
	if (ud_size_check())
		goto out;
	side_fill_dest(&me);
	report_test_info(&me);
	if (opt.tst == T_BW)
		ret = opt.verb == V_SEND ? remote_send_bw(&me) : remote_bw(&me);
	else
		ret = remote_lat(&me);
	ret = ret || report_limits_verdict() ? 1 : 0;
out:
	/*
	 * A failed run ends quietly: DPDK 22.11's memif unmaps its rings when
	 * the peer's port goes, while a burst of ours may be under way (the
	 * survivor crashed in its receive burst: test/examples/README.md).
	 * So hang up, tear down, and let the port go only
	 * PERF_ABORT_QUIET_S after the hang-up: by then the peer, which
	 * looks at the exchange every OOB_DRIVE_US while it drives its
	 * engine, has stopped and torn down too.
	 */
	if (ret && oob_abort()) {
		uint64_t until = perf_tsc() +
				 (uint64_t)(PERF_ABORT_QUIET_S * perf_tsc_hz());

		side_close(&me);
		while (perf_tsc() < until)
			usleep(10000);
	} else {
		side_close(&me);
	}
	ibv_free_device_list(list);
	return ret;
}

int main(int argc, char **argv)
{
	char *base = basename(argv[0]);
	int t = find_test(base);

	opt.tcp_port = PERF_DEF_PORT;
	opt.ib_port = 1;
	opt.nqps = 1;
	opt.inline_size = -1;
	opt.out_reads = -1;
	opt.gid_index = 1;
	opt.qp_timeout = PERF_DEF_QP_TIMEOUT;
	opt.atomic_type = A_FETCH_AND_ADD;
	opt.output = OUT_FULL;
	opt.margin = -1;
	opt.idle_us = -1;
	opt.post_drive = -1;
	opt.rx_spin = -1;
	opt.post_list = 1;
	opt.limit_bw = -1;
	opt.limit_msgrate = -1;
	opt.rate_units = RU_GBPS;
	if (t < 0 && argc > 1) {
		t = find_test(argv[1]);
		if (t >= 0) {
			argv[1] = argv[0];
			argv++;
			argc--;
		}
	}
	if (t < 0) {
		if (argc > 1 && (strcmp(argv[1], "-h") == 0 ||
				 strcmp(argv[1], "--help") == 0)) {
			usage(base);
			return 0;
		}
		fprintf(stderr, "%s: name a test first (write_bw, read_bw, send_bw, atomic_bw, write_lat, read_lat, send_lat, atomic_lat); --help for more\n",
			base);
		return 1;
	}
	opt.verb = tests[t].verb;
	opt.tst = tests[t].tst;
	opt.test_name = tests[t].name;
	if (parse_args(argc, argv) || settle_opts())
		return 1;
	srand48((long)getpid() * (long)time(NULL));
	if (opt.run_inf) {
		/* no SA_RESTART: a blocking read of the exchange returns;
		 * a second signal a second later ends the process as usual
		 * (perf_stop_handler) */
		struct sigaction sa = { .sa_handler = perf_stop_handler };

		sigemptyset(&sa.sa_mask);
		sigaction(SIGINT, &sa, NULL);
		sigaction(SIGTERM, &sa, NULL);
	}
	if (opt.loopback) {
		if (opt.servername) {
			fprintf(stderr, " --loopback takes no host\n");
			return 1;
		}
		if (opt.reversed) {
			fprintf(stderr, " --reversed swaps the roles of two processes; --loopback runs both ends\n");
			return 1;
		}
		return main_loopback(argv[0]);
	}
	return main_remote();
}
