/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Results in perftest's formats (the test-info block, the address lines,
 * the bandwidth and latency tables, computed as perftest computes them),
 * then droce-perf's own: per-QP rates, a one-line machine-readable summary
 * (--kv) and cycle accounting (--cycles).
 */
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "perf.h"

#define RESULT_LINE "---------------------------------------------------------------------------------------\n"
#define RESULT_FMT " #bytes     #iterations    BW peak[MB/sec]    BW average[MB/sec]   MsgRate[Mpps]"
#define RESULT_FMT_G " #bytes     #iterations    BW peak[Gb/sec]    BW average[Gb/sec]   MsgRate[Mpps]"
#define REPORT_FMT " %-7lu    %-10" PRIu64 "       %-7.2lf            %-7.2lf\t\t   %-7.6lf"
#define REPORT_FMT_EXT " %-7lu    %" PRIu64 "           %-7.6lf            %-7.6lf            %-7.6lf"
#define RESULT_FMT_LAT " #bytes #iterations    t_min[usec]    t_max[usec]  t_typical[usec]    t_avg[usec]    t_stdev[usec]   99% percentile[usec]   99.9% percentile[usec] "
#define RESULT_FMT_LAT_DUR " #bytes        #iterations       t_avg[usec]    tps average"
#define REPORT_FMT_LAT " %-7lu %" PRIu64 "          %-7.2f        %-7.2f      %-7.2f  \t       %-7.2f     \t%-7.2f\t\t%-7.2f \t\t%-7.2f"
#define REPORT_FMT_LAT_DUR " %-7lu       %" PRIu64 "            %-7.2f        %-7.2f"

static bool full(void)
{
	return opt.output == OUT_FULL;
}

void report_line(void)
{
	if (full())
		printf(RESULT_LINE);
}

static const char *mtu_str(void)
{
	static char b[16];

	snprintf(b, sizeof(b), "%d[B]", opt.mtu);
	return b;
}

/* --out_json: the end whose test information goes into the file */
static const struct perf_side *json_side;

void report_test_info(const struct perf_side *s)
{
	json_side = s;
	if (!full() || opt.quiet_info)
		return;
	printf(RESULT_LINE);
	printf("                    ");
	printf("%s ", verb_str(opt.verb));
	if (opt.verb == V_ATOMIC)
		printf("%s ", opt.atomic_type == A_FETCH_AND_ADD ?
		       "FETCH_AND_ADD" : "CMP_AND_SWAP");
	if (opt.tst == T_BW) {
		if (opt.duplex)
			printf("Bidirectional ");
		if (opt.post_list > 1)
			printf("Post List ");
		printf("BW ");
	} else {
		printf("Latency ");
	}
	printf("Test\n");
	if (opt.use_event)
		printf(" Test with events. Using %s_comp0\n",
		       ibv_get_device_name(s->ctx->device));
	printf(" Dual-port       : OFF\t\tDevice         : %s\n",
	       ibv_get_device_name(s->ctx->device));
	printf(" Number of qps   : %d\t\tTransport type : IB\n", opt.nqps);
	printf(" Connection type : %s\t\tUsing SRQ      : %s\n",
	       opt.conn == C_UC ? "UC" : opt.conn == C_UD ? "UD" : "RC",
	       opt.use_srq ? "ON" : "OFF");
	printf(" PCIe relax order: Unsupported\n");
	printf(" ibv_wr* API     : %s\n", opt.old_post_send ? "OFF" : "ON");
	if (side_sends(s))
		printf(" TX depth        : %d\n", opt.tx_depth);
	if (opt.post_list > 1)
		printf(" Post List       : %d\n", opt.post_list);
	if (side_recvs(s))
		printf(" RX depth        : %d\n", opt.rx_depth);
	if (opt.tst == T_BW)
		printf(" CQ Moderation   : %d\n", opt.cq_mod);
	printf(" Mtu             : %s\n", mtu_str());
	printf(" Link type       : Ethernet\n");
	printf(" GID index       : %d\n", s->gid_index);
	if (opt.verb != V_READ && opt.verb != V_ATOMIC)
		printf(" Max inline data : %d[B]\n", opt.inline_size);
	else
		printf(" Outstand reads  : %d\n", s->out_reads);
	printf(" rdma_cm QPs\t : OFF\n");
	printf(" Data ex. method : %s\n", opt.loopback ? "loopback (in process)" :
	       "Ethernet");
	printf(RESULT_LINE);
}

void report_dest(const struct perf_dest *d, bool remote)
{
	const uint8_t *g = d->gid.raw;

	if (!full() || opt.quiet_info)
		return;
	printf(" %s address: LID %#04x QPN %#06x PSN %#06x",
	       remote ? "remote" : "local", d->lid, d->qpn, d->psn);
	if (opt.verb == V_READ)
		printf(" OUT %#04x", d->out_reads);
	if (opt.verb == V_READ || opt.verb == V_WRITE)
		printf(" RKey %#08x VAddr %#016llx", d->rkey,
		       (unsigned long long)d->vaddr);
	putchar('\n');
	printf(" GID: %02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d:%02d\n",
	       g[0], g[1], g[2], g[3], g[4], g[5], g[6], g[7], g[8], g[9],
	       g[10], g[11], g[12], g[13], g[14], g[15]);
}

/* --cpu_util: perftest's extra column (RESULT_EXT_CPU_UTIL) */
static const char *cpu_ext_hdr(void)
{
	return opt.cpu_util ? "    CPU_Util[%]\n" : "\n";
}

/* A row's end: the CPU figure of this end's window, 0.00 where this end
 * measured none (a passive server prints its client's row, as perftest) */
static void cpu_ext_row(void)
{
	double u = cpu_util_last();

	if (opt.cpu_util)
		printf("\t    %-3.2f", u < 0 ? 0 : u);
	printf("\n");
}

/*
 * --out_json: perftest 4.5's report file, rewritten (O_TRUNC) with each
 * result row, so -a leaves the last size's. Its format, keys and all,
 * which is not JSON (keys unquoted, commas before closing braces): what
 * reads perftest's file reads this one.
 */
static FILE *json_open(void)
{
	int fd;
	FILE *f;

	if (opt.out_json == NULL)
		return NULL;
	fd = open(opt.out_json, O_CREAT | O_RDWR | O_TRUNC | O_CLOEXEC,
		  S_IRUSR | S_IWUSR);
	if (fd < 0) {
		fprintf(stderr, "failed to open %s\n", opt.out_json);
		return NULL;
	}
	f = fdopen(fd, "w");
	if (f == NULL)
		close(fd);
	return f;
}

static void json_test_info(FILE *f)
{
	const struct perf_side *s = json_side;

	fprintf(f, "{\ntest_info: {\n");
	fprintf(f, "test: %s_", verb_str(opt.verb));
	if (opt.verb == V_ATOMIC)
		fprintf(f, "%s_", opt.atomic_type == A_FETCH_AND_ADD ?
			"FETCH_AND_ADD" : "CMP_AND_SWAP");
	if (opt.tst == T_BW) {
		if (opt.duplex)
			fprintf(f, "Bidirectional_");
		if (opt.post_list > 1)
			fprintf(f, "Post_List_");
		fprintf(f, "BW_");
	} else {
		fprintf(f, "Latency_");
	}
	fprintf(f, "Test,\n");
	if (opt.use_event && s)
		fprintf(f, "Test with events: Using_%s_comp0,\n",
			ibv_get_device_name(s->ctx->device));
	fprintf(f, "Dual_port: OFF,\nDevice: \"%s\",\n",
		s ? ibv_get_device_name(s->ctx->device) : "");
	fprintf(f, "Number_of_qps: %d,\nTransport_type: IB,\n", opt.nqps);
	fprintf(f, "Connection_type: %s,\nUsing_SRQ: %s,\n",
		opt.conn == C_UC ? "UC" : opt.conn == C_UD ? "UD" : "RC",
		opt.use_srq ? "ON" : "OFF");
	fprintf(f, " PCIe_relax_order: Unsupported,\n");
	fprintf(f, "ibv_wr_API: %s,\n", opt.old_post_send ? "OFF" : "ON");
	if (s && side_sends(s))
		fprintf(f, "TX_depth : %d,\n", opt.tx_depth);
	if (opt.post_list > 1)
		fprintf(f, "Post_List: %d,\n", opt.post_list);
	if (s && opt.verb == V_SEND && side_recvs(s))
		fprintf(f, "RX_depth: %d,\n", opt.rx_depth);
	if (opt.tst == T_BW)
		fprintf(f, "CQ_Moderation: %d,\n", opt.cq_mod);
	fprintf(f, "Mtu: %d,\nLink_type: Ethernet,\n", opt.mtu);
	/* (perftest names the GID index only when it is not its default, 0) */
	if (s && s->gid_index != 0)
		fprintf(f, "GID_index: %d,\n", s->gid_index);
	if (opt.verb != V_READ && opt.verb != V_ATOMIC)
		fprintf(f, "Max_inline_data: %d,\n", opt.inline_size);
	else
		fprintf(f, "Outstand_reads: %d,\n", s ? s->out_reads : 0);
	fprintf(f, "rdma_cm_QPs: OFF,\nData_ex_method: Ethernet,\n},\n");
}

static void json_cpu(FILE *f)
{
	double u = cpu_util_last();

	if (opt.cpu_util)
		fprintf(f, "CPU_util: %.2f,\n", u < 0 ? 0 : u);
}

/* The file opened, its test information and the results' opening written;
 * NULL without --out_json. json_end() closes both. */
static FILE *json_begin(void)
{
	FILE *f = json_open();

	if (f != NULL) {
		json_test_info(f);
		fprintf(f, "results: {\n");
	}
	return f;
}

static void json_end(FILE *f)
{
	fprintf(f, "},\n}\n");
	fclose(f);
}

void report_json_bw(const struct perf_bw_report *r)
{
	FILE *f = json_begin();

	if (f == NULL)
		return;
	if (opt.output == OUT_BW)
		fprintf(f, "bw_avg: %lf,\n", r->bw_avg);
	else if (opt.output == OUT_MR)
		fprintf(f, "msgRate_avg: %lf,\n", r->msg_rate);
	else
		fprintf(f, r->bw_avg < 0.1 && opt.report_gbits ?
			"MsgSize: %lu,\nn_iterations: %" PRIu64 ",\nBW_peak: %.6lf,\nBW_average: %.6lf,\nMsgRate: %.6lf,\n" :
			"MsgSize: %lu,\nn_iterations: %" PRIu64 ",\nBW_peak: %.2lf,\nBW_average: %.2lf,\nMsgRate: %.6lf,\n",
			(unsigned long)r->size, r->iters, r->bw_peak, r->bw_avg,
			r->msg_rate);
	json_cpu(f);
	json_end(f);
}

void report_bw_header(void)
{
	if (!full())
		return;
	printf(RESULT_LINE);
	printf("%s%s", opt.report_gbits ? RESULT_FMT_G : RESULT_FMT, cpu_ext_hdr());
}

void report_lat_header(void)
{
	if (!full())
		return;
	printf(RESULT_LINE);
	printf("%s%s", opt.duration > 0 ? RESULT_FMT_LAT_DUR : RESULT_FMT_LAT,
	       cpu_ext_hdr());
}

static double fmt_factor(void)
{
	return opt.report_gbits ? 125000000.0 : (double)0x100000;
}

/*
 * perftest's peak: the best average over any run of messages from post i
 * to completion j (j on a signalled boundary). Exact when that is cheap,
 * else over a stride of i (the work is bounded to ~2e8 steps).
 */
static double peak_cycles_per_msg(const struct perf_side *c, uint64_t n,
				  double avg)
{
	double best = avg;
	uint64_t cq = (uint64_t)opt.cq_mod, pl = (uint64_t)opt.post_list;
	uint64_t istep = pl;
	double work = (double)n / (double)pl * (double)n / (double)cq;

	if (work > 2e8)
		istep = pl * (uint64_t)ceil(work / 2e8);
	for (uint64_t i = 0; i < n; i += istep) {
		for (uint64_t j = ((i + 1 + cq - 1) / cq) * cq - 1; j < n; j += cq) {
			double t = (double)(c->tc[j] - c->tp[i]) / (double)(j - i + 1);

			if (c->tc[j] >= c->tp[i] && t < best)
				best = t;
		}
		if (n % cq) {
			uint64_t j = n - 1;
			double t = (double)(c->tc[j] - c->tp[i]) / (double)(j - i + 1);

			if (c->tc[j] >= c->tp[i] && t < best)
				best = t;
		}
	}
	return best;
}

/* An end's figures for the size just run (printed by the caller: with -b
 * both directions' figures are added up first, as perftest does). */
void report_bw(const struct perf_side *c, struct perf_bw_report *r)
{
	const struct perf_run_result *res = run_result(c);
	uint64_t msgs = res->msgs, t0 = res->t0, t1 = res->t1;
	double hz = perf_tsc_hz(), cyc, size;

	size = (double)(opt.verb == V_ATOMIC ? PERF_ATOMIC_SIZE : run_get_size());
	cyc = t1 > t0 ? (double)(t1 - t0) : 1;
	memset(r, 0, sizeof(*r));
	r->size = (uint64_t)size;
	r->iters = msgs;
	r->bw_avg = size * (double)msgs * hz / (cyc * fmt_factor());
	r->msg_rate = (double)msgs * hz / (cyc * 1e6);
	if (!opt.no_peak && c->tp && side_sends(c) && opt.duration <= 0 &&
	    msgs) {
		double pc = peak_cycles_per_msg(c, msgs, cyc / (double)msgs);

		r->bw_peak = size * hz / (pc * fmt_factor());
	}
}

/* -b: the two directions' figures together (perftest's
 * print_full_bw_report with the remote's report; the size and iterations
 * stay this end's). */
void report_bw_add(struct perf_bw_report *r, const struct perf_bw_report *o)
{
	r->bw_peak += o->bw_peak;
	r->bw_avg += o->bw_avg;
	r->msg_rate += o->msg_rate;
}

void report_bw_print(const struct perf_bw_report *r)
{
	bool inc = r->bw_avg < 0.1 && opt.report_gbits;

	report_json_bw(r);

	if (opt.output == OUT_BW) {
		printf("%lf\n", r->bw_avg);
		return;
	}
	if (opt.output == OUT_MR) {
		printf("%lf\n", r->msg_rate);
		return;
	}
	if (opt.output != OUT_FULL)
		return;
	printf(inc ? REPORT_FMT_EXT : REPORT_FMT, (unsigned long)r->size,
	       r->iters, r->bw_peak, r->bw_avg, r->msg_rate);
	cpu_ext_row();
	fflush(stdout);
}

/*
 * -w and -y: perftest's verifier limits, on the row this end prints as
 * its result (with -b the two directions' sum; a passive server the
 * client's figures). perftest passes a run of -a if any size passed;
 * here every size must.
 */
static bool limit_bw_missed, limit_mr_missed;

void report_bw_limits(const struct perf_bw_report *r)
{
	if (opt.limit_bw >= 0 && r->bw_avg < opt.limit_bw)
		limit_bw_missed = true;
	if (opt.limit_msgrate >= 0 && r->msg_rate < opt.limit_msgrate)
		limit_mr_missed = true;
}

int report_limits_verdict(void)
{
	if (limit_bw_missed)
		fprintf(stderr, "Error: BW result is below bw limit\n");
	if (limit_mr_missed)
		fprintf(stderr, "Error: Msg rate is below msg_rate limit\n");
	return limit_bw_missed || limit_mr_missed ? -1 : 0;
}

/* --run_infinitely: one period's row (no peak, as perftest); factor:
 * perftest's bidirectional factor on the bytes and the rate. */
void report_bw_period(uint64_t msgs, uint64_t cycles, int factor)
{
	struct perf_bw_report r;
	double hz = perf_tsc_hz(), cyc = cycles ? (double)cycles : 1;
	double size = (double)(opt.verb == V_ATOMIC ? PERF_ATOMIC_SIZE :
			       run_get_size());

	memset(&r, 0, sizeof(r));
	r.size = (uint64_t)size;
	r.iters = msgs;
	r.bw_avg = factor * size * (double)msgs * hz / (cyc * fmt_factor());
	r.msg_rate = factor * (double)msgs * hz / (cyc * 1e6);
	report_bw_print(&r);
}

/* --report-both (with -b): each end's figures under their own headers, as
 * perftest prints them after the sum. */
void report_bw_both(const struct perf_bw_report *local,
		    const struct perf_bw_report *remote)
{
	if (!full())
		return;
	printf(RESULT_LINE);
	printf("\n Local results: \n");
	printf(RESULT_LINE);
	printf("%s\n", opt.report_gbits ? RESULT_FMT_G : RESULT_FMT);
	report_bw_print(local);
	printf(RESULT_LINE);
	printf("\n Remote results: \n");
	printf(RESULT_LINE);
	printf("%s\n", opt.report_gbits ? RESULT_FMT_G : RESULT_FMT);
	report_bw_print(remote);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* The last latency figures, for --kv (usec, as printed). */
static struct {
	double tmin, tmax, tmed, tavg, tstd, p99, p999, rtt_med;
	uint64_t n;
} lat_last;

static void json_lat(void)
{
	FILE *f = json_begin();

	if (f == NULL)
		return;
	if (opt.output == OUT_LAT) {
		fprintf(f, "avg_lat: %lf,\n", lat_last.tavg);
	} else {
		fprintf(f, "MsgSize: %lu,\nn_iterations: %" PRIu64 ",\nt_min: %.2f,\nt_max: %.2f,\nt_typical: %.2f,\nt_avg: %.2f,\n"
			"t_stdev: %.2f,\npercentile_99: %.2f,\npercentile_99.9: %.2f,\n",
			(unsigned long)run_get_size(), lat_last.n, lat_last.tmin,
			lat_last.tmax, lat_last.tmed, lat_last.tavg, lat_last.tstd,
			lat_last.p99, lat_last.p999);
		json_cpu(f);
	}
	json_end(f);
}

static void json_lat_dur(uint64_t n, double us)
{
	FILE *f = json_begin();

	if (f == NULL)
		return;
	if (opt.output == OUT_LAT) {
		fprintf(f, "t_avg: %lf\n", lat_last.tavg);
	} else {
		fprintf(f, "MsgSize: %lu,\nn_iterations: %" PRIu64 ",\nt_avg: %.2f,\ntps_average: %.2f,\n",
			(unsigned long)run_get_size(), n, lat_last.tavg,
			n ? (double)n / (us / 1e6) : 0);
		json_cpu(f);
	}
	json_end(f);
}

int report_lat(struct perf_side *c)
{
	double hz = perf_tsc_hz();
	int rtt_factor = opt.verb == V_READ || opt.verb == V_ATOMIC ? 1 : 2;
	double q = (opt.report_cycles ? 1.0 : hz / 1e6) * rtt_factor;
	uint64_t n = c->lat_n, m, *d;
	double sum = 0, var = 0;
	size_t i99, i999;

	memset(&lat_last, 0, sizeof(lat_last));
	if (opt.duration > 0) {
		uint64_t t0, t1;
		double us;

		run_lat_window(&t0, &t1);
		us = (double)(t1 - t0) / hz * 1e6;
		lat_last.n = n;
		lat_last.tavg = n ? us / (double)n / rtt_factor : 0;
		lat_last.rtt_med = lat_last.tavg * rtt_factor;
		json_lat_dur(n, us);
		if (opt.output == OUT_LAT)
			printf("%lf\n", lat_last.tavg);
		else if (full()) {
			printf(REPORT_FMT_LAT_DUR, (unsigned long)run_get_size(),
			       n, lat_last.tavg, n ? (double)n / (us / 1e6) : 0);
			cpu_ext_row();
		}
		return 0;
	}
	if (n < 2 + PERF_LAT_TAIL + 1) {
		PERF_ERR("too few iterations (%lu) for a latency report\n",
			 (unsigned long)n);
		return -1;
	}
	m = n - 1;
	d = malloc(sizeof(*d) * m);
	if (d == NULL)
		return -1;
	for (uint64_t i = 0; i < m; i++)
		d[i] = c->tposted[i + 1] - c->tposted[i];
	if (opt.report_unsorted) {
		printf("#, %s\n", opt.report_cycles ? "cycles" : "usec");
		for (uint64_t i = 0; i < m; i++)
			printf("%lu, %g\n", (unsigned long)i + 1, (double)d[i] / q);
	}
	qsort(d, m, sizeof(*d), cmp_u64);
	m -= PERF_LAT_TAIL;		/* perftest drops the two largest */
	if (opt.report_hist) {
		printf("#, %s\n", opt.report_cycles ? "cycles" : "usec");
		for (uint64_t i = 0; i < m; i++)
			printf("%lu, %g\n", (unsigned long)i + 1, (double)d[i] / q);
	}
	for (uint64_t i = 0; i < m; i++)
		sum += (double)d[i] / q;
	lat_last.tavg = sum / (double)m;
	for (uint64_t i = 0; i < m; i++) {
		double v = lat_last.tavg - (double)d[i] / q;

		var += v * v;
	}
	/* perftest's median (of the sorted, trimmed samples) */
	if ((m - 1) % 2)
		lat_last.tmed = (double)(d[m / 2] + d[m / 2 - 1]) / 2 / q;
	else
		lat_last.tmed = (double)d[m / 2] / q;
	i99 = (size_t)ceil((double)m * 0.99);
	i999 = (size_t)ceil((double)m * 0.999);
	if (i99 > m)
		i99 = m;
	if (i999 > m)
		i999 = m;
	lat_last.n = n;
	lat_last.tmin = (double)d[0] / q;
	lat_last.tmax = (double)d[m] / q;	/* as perftest: the first dropped */
	lat_last.tstd = sqrt(var / (double)m);
	lat_last.p99 = (double)d[i99] / q;
	lat_last.p999 = (double)d[i999] / q;
	lat_last.rtt_med = lat_last.tmed * rtt_factor;
	json_lat();
	if (opt.report_unsorted || opt.report_hist)
		report_lat_header();
	if (opt.output == OUT_LAT)
		printf("%lf\n", lat_last.tavg);
	else if (full())
		printf(REPORT_FMT_LAT "\n", (unsigned long)run_get_size(), n,
		       lat_last.tmin, lat_last.tmax, lat_last.tmed, lat_last.tavg,
		       lat_last.tstd, lat_last.p99, lat_last.p999);
	fflush(stdout);
	free(d);
	return 0;
}

/* ------------------------------------------------------------ per QP */

struct qp_rates {
	double min, med, max, sum;
	int n;
};

static const struct perf_qpstat *qp_stats(const struct perf_side *s)
{
	return side_sends(s) ? s->st : s->rst;
}

static double qp_rate(const struct perf_qpstat *st, bool server)
{
	uint64_t msgs = server ? st->rcnt : st->ccnt;
	double hz = perf_tsc_hz();

	if (msgs == 0 || st->t_last <= st->t_first)
		return 0;
	return (double)msgs * hz / (double)(st->t_last - st->t_first);
}

static int cmp_dbl(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static struct qp_rates qp_rates(const struct perf_side *s)
{
	struct qp_rates r = { 0 };
	double *v = malloc(sizeof(*v) * (size_t)s->nqps);

	if (v == NULL)
		return r;
	for (int i = 0; i < s->nqps; i++) {
		v[i] = qp_rate(&qp_stats(s)[i], !side_sends(s));
		r.sum += v[i];
	}
	qsort(v, (size_t)s->nqps, sizeof(*v), cmp_dbl);
	r.n = s->nqps;
	r.min = v[0];
	r.max = v[s->nqps - 1];
	r.med = v[s->nqps / 2];
	free(v);
	return r;
}

void report_per_qp(struct perf_side *c, double secs)
{
	uint64_t sz = opt.verb == V_ATOMIC ? PERF_ATOMIC_SIZE : run_get_size();
	bool server = !side_sends(c);
	const struct perf_qpstat *st = qp_stats(c);

	if (opt.tst != T_BW || !full() || opt.duration > 0)
		return;
	if (opt.per_qp || (c->nqps > 1 && c->nqps <= 8)) {
		printf(" per QP (%s): QPN       #msgs        MsgRate[Mpps]  BW[MB/sec]\n",
		       c->name);
		for (int i = 0; i < c->nqps; i++) {
			double r = qp_rate(&st[i], server);

			printf("                0x%06x  %-12" PRIu64 " %-14.6f %-10.2f\n",
			       c->qp[i]->qp_num,
			       server ? st[i].rcnt : st[i].ccnt,
			       r / 1e6, r * (double)sz / 0x100000);
		}
	}
	if (c->nqps > 1) {
		struct qp_rates r = qp_rates(c);

		printf(" per QP (%s) MsgRate[Mpps]: min %.6f median %.6f max %.6f over %d QPs (run %.6f s)\n",
		       c->name, r.min / 1e6, r.med / 1e6, r.max / 1e6, r.n, secs);
	}
}

/* ---------------------------------------------------------------- kv */

static void kv_stats(const struct perf_side *s, const char *p)
{
	const struct droce_dev_stats *a = &s->ds0, *b = &s->ds1;

	printf(" %s_tx_pkts=%" PRIu64 " %s_rx_pkts=%" PRIu64
	       " %s_tx_bytes=%" PRIu64 " %s_retransmits=%" PRIu64
	       " %s_timeouts=%" PRIu64 " %s_icrc_err=%" PRIu64
	       " %s_icrc_late=%" PRIu64 " %s_naks=%" PRIu64 " %s_rnr_naks=%" PRIu64 " %s_tx_full=%" PRIu64 " %s_tx_dropped=%" PRIu64
	       " %s_acks=%" PRIu64 " %s_tx_zc=%" PRIu64
	       " %s_stalls=%" PRIu64 " %s_timeouts_stalled=%" PRIu64
	       " %s_rx_no_recv=%" PRIu64 " %s_pace_waits=%" PRIu64
	       " %s_tx_bursts=%" PRIu64 " %s_eng_prefetch=%" PRIu64
	       " %s_eng_deep_turns=%" PRIu64 " %s_eng_rx_spins=%" PRIu64
	       " %s_eng_keeper_looks=%" PRIu64 " %s_eng_keeper_drives=%" PRIu64,
	       p, b->tx_pkts - a->tx_pkts, p, b->rx_pkts - a->rx_pkts,
	       p, b->tx_bytes - a->tx_bytes, p, b->retransmits - a->retransmits,
	       p, b->timeouts - a->timeouts, p, b->rx_icrc_err - a->rx_icrc_err,
	       p, b->rx_icrc_late - a->rx_icrc_late, p, b->rx_naks - a->rx_naks, p, b->rx_rnr_naks - a->rx_rnr_naks,
	       p, b->tx_full - a->tx_full, p, b->tx_dropped - a->tx_dropped,
	       p, b->tx_acks - a->tx_acks,
	       p, b->tx_zc - a->tx_zc, p, b->stalls - a->stalls,
	       p, b->timeouts_stalled - a->timeouts_stalled,
	       p, b->rx_no_recv - a->rx_no_recv,
	       p, b->pace_waits - a->pace_waits,
	       p, b->tx_bursts - a->tx_bursts,
	       p, b->eng_prefetch,	/* (a gauge: at the end) */
	       p, b->eng_deep_turns - a->eng_deep_turns,
	       p, b->eng_rx_spins - a->eng_rx_spins,
	       p, b->eng_keeper_looks - a->eng_keeper_looks,
	       p, b->eng_keeper_drives - a->eng_keeper_drives);
}

/* CPU time of the run per thread kind, and per message (all messages the
 * run completed, margins included: the CPU time covers the whole run). */
static uint64_t run_msgs(const struct perf_side *c, const struct perf_side *srv)
{
	uint64_t n = run_result(c ? c : srv)->all_msgs;

	if (opt.duplex && opt.tst == T_BW && c && srv && srv != c)
		n += run_result(srv)->all_msgs;	/* both directions */
	return n;
}

/* Fields of both kinds of kv line */
static void kv_common(void)
{
	printf(" post_enomem=%" PRIu64, perf_post_enomem);
	if (opt.use_hugepages)
		printf(" hugepages=1");
	if (opt.use_event)
		printf(" events=%" PRIu64, perf_events);
	if (opt.cpu_util)
		printf(" cpu_util=%.2f", cpu_util_last());
}

static void kv_cpu(const struct perf_side *c, const struct perf_side *srv)
{
	struct perf_cpu u;
	uint64_t n = run_msgs(c, srv);
	double ghz = perf_tsc_hz() / 1e9;

	cpu_totals(&u);
	printf(" wall_ms=%.1f main_cpu_ms=%.1f main_wait_ms=%.1f eng_cpu_ms=%.1f eng_wait_ms=%.1f",
	       u.wall_ns / 1e6, u.main_run_ns / 1e6, u.main_wait_ns / 1e6,
	       u.eng_run_ns / 1e6, u.eng_wait_ns / 1e6);
	if (n)
		printf(" run_msgs=%" PRIu64 " main_cyc_per_msg=%.0f eng_cyc_per_msg=%.0f",
		       n, (double)u.main_run_ns * ghz / (double)n,
		       (double)u.eng_run_ns * ghz / (double)n);
}

static const char *engine_str(void)
{
	return opt.engine == ENG_APP ? "app" : opt.engine == ENG_LCORE ?
	       "lcore" : opt.engine == ENG_SPLIT ? "split" : "default";
}

void report_kv_bw(const struct perf_side *c, const struct perf_side *srv,
		  const struct perf_bw_report *r, double secs)
{
	const struct perf_side *me = c ? c : srv;
	uint64_t sz = r->size;

	if (!opt.kv)
		return;
	printf("DROCE_PERF test=%s mode=%s engine=%s size=%" PRIu64
	       " qps=%d msgs=%" PRIu64 " bytes=%" PRIu64 " secs=%.6f"
	       " msg_rate=%.1f bw_Bps=%.1f bw_MBps=%.3f bw_peak=%.3f errors=%d",
	       opt.test_name, opt.loopback ? "loopback" : "remote",
	       engine_str(), sz, me->nqps, r->iters, r->iters * sz, secs,
	       r->msg_rate * 1e6, r->msg_rate * 1e6 * (double)sz,
	       opt.report_gbits ? r->bw_avg * 125000000.0 / 0x100000 : r->bw_avg,
	       r->bw_peak, (c ? c->errors : 0) + (srv ? srv->errors : 0));
	kv_common();
	if (opt.duplex)	/* rates: both directions; msgs, bytes: this end's */
		printf(" bidirectional=1");
	if (srv && opt.verb == V_SEND)	/* what the receiving end counted */
		printf(" recv_msgs=%" PRIu64, srv->res_recv.all_msgs);
	if (me->nqps > 1) {
		struct qp_rates q = qp_rates(me);

		printf(" qp_rate_min=%.1f qp_rate_med=%.1f qp_rate_max=%.1f",
		       q.min, q.med, q.max);
	}
	kv_cpu(c, srv);
	if (c)
		kv_stats(c, c->is_client ? "c" : "s");
	if (srv && srv != c)
		kv_stats(srv, "s");
	printf("\n");
	fflush(stdout);
}

void report_kv_lat(const struct perf_side *c, const struct perf_side *srv)
{
	if (!opt.kv)
		return;
	printf("DROCE_PERF test=%s mode=%s engine=%s size=%" PRIu64
	       " qps=1 iters=%" PRIu64 " t_min=%.3f t_max=%.3f t_median=%.3f"
	       " t_avg=%.3f t_stdev=%.3f t_p99=%.3f t_p999=%.3f rtt_median=%.3f"
	       " errors=%d",
	       opt.test_name, opt.loopback ? "loopback" : "remote", engine_str(),
	       run_get_size(), lat_last.n, lat_last.tmin, lat_last.tmax,
	       lat_last.tmed, lat_last.tavg, lat_last.tstd, lat_last.p99,
	       lat_last.p999, lat_last.rtt_med,
	       (c ? c->errors : 0) + (srv ? srv->errors : 0));
	kv_common();
	kv_cpu(c, srv);
	if (c)
		kv_stats(c, "c");
	if (srv)
		kv_stats(srv, "s");
	printf("\n");
	fflush(stdout);
}

#define DELTA(s, f) ((s)->ds1.f - (s)->ds0.f)

/*
 * Do two sides' counters come from one engine? Both ends of a loopback
 * run, unless split (client app-driven, server on the lcore). Not from the
 * counters: the two sides' snapshots are taken one after the other while
 * an lcore engine runs on, so they differed now and then, and the client's
 * receive cycles were divided by its own frames only (~4 000 a frame).
 */
static bool same_engine(const struct perf_side *a, const struct perf_side *b)
{
	return a != b && opt.loopback && opt.engine != ENG_SPLIT;
}

/*
 * The engine's stages (devarg cycles=1) for the engine serving `s` (and
 * `also`, when the same engine serves both): TSC cycles per frame received
 * for the receive stage, per frame sent for the work and transmit stages,
 * the share of its iterations that found nothing to do, its timers (the
 * wheels' sweeps and what fires) per message, and all four per message
 * (the figure to read when one end only receives, or only ACKs).
 */
static void report_engine(const char *tag, const struct perf_side *s,
			  const struct perf_side *also, uint64_t msgs)
{
	uint64_t all = DELTA(s, eng_rx_cycles) + DELTA(s, eng_work_cycles) +
		       DELTA(s, eng_tx_cycles) + DELTA(s, eng_timer_cycles);
	uint64_t rx = DELTA(s, rx_pkts), tx = DELTA(s, tx_pkts);
	uint64_t loops = DELTA(s, eng_loops), busy = DELTA(s, eng_busy_loops);

	if (also) {
		rx += DELTA(also, rx_pkts);
		tx += DELTA(also, tx_pkts);
	}
	printf(" %s_eng_loops=%" PRIu64 " %s_eng_idle=%.3f"
	       " %s_eng_rx_per_rx_frame=%.1f %s_eng_work_per_tx_frame=%.1f"
	       " %s_eng_tx_per_tx_frame=%.1f", tag, loops, tag,
	       loops ? 1.0 - (double)busy / (double)loops : 0.0,
	       tag, (double)DELTA(s, eng_rx_cycles) / (double)(rx ? rx : 1),
	       tag, (double)DELTA(s, eng_work_cycles) / (double)(tx ? tx : 1),
	       tag, (double)DELTA(s, eng_tx_cycles) / (double)(tx ? tx : 1));
	printf(" %s_eng_timers_per_msg=%.1f %s_eng_per_msg=%.1f", tag,
	       (double)DELTA(s, eng_timer_cycles) / (double)(msgs ? msgs : 1),
	       tag, (double)all / (double)(msgs ? msgs : 1));
	/* The receive stage less its looks that found nothing (an end that
	 * waits for the other spends them there): its work a frame, and
	 * the waiting a message. */
	printf(" %s_eng_rx_busy_per_rx_frame=%.1f %s_eng_rx_idle_per_msg=%.1f",
	       tag, (double)(DELTA(s, eng_rx_cycles) -
			     DELTA(s, eng_rx_idle_cycles)) /
		    (double)(rx ? rx : 1),
	       tag, (double)DELTA(s, eng_rx_idle_cycles) /
		    (double)(msgs ? msgs : 1));
}

/*
 * --cycles on a passive end (a WRITE/READ/atomic server): its engine answers
 * while this thread waits for the client's end of the run, so the counters
 * span that wait; per message here means per frame received.
 */
void report_passive_engine(const struct perf_side *s)
{
	if (!opt.cycles || !DELTA(s, eng_loops) || !DELTA(s, eng_rx_cycles))
		return;
	printf("DROCE_ENGINE test=%s size=%" PRIu64, opt.test_name,
	       run_get_size());
	report_engine("s", s, NULL, DELTA(s, rx_pkts));
	printf("\n");
	fflush(stdout);
}

/* --cycles: where one thread's time went (app-driven engine), and with
 * the devarg cycles=1 (set in loopback) the engine's stages. */
void report_cycles(const struct perf_side *c, const struct perf_side *srv)
{
	uint64_t frames = 0, msgs;
	double fr, ms;

	if (!opt.cycles)
		return;
	if (c)
		frames += c->ds1.tx_pkts - c->ds0.tx_pkts;
	if (srv && srv != c)
		frames += srv->ds1.tx_pkts - srv->ds0.tx_pkts;
	/* the totals cover the whole run, the -D window's warm-up too */
	msgs = run_msgs(c, srv);
	fr = frames ? (double)frames : 1;
	ms = msgs ? (double)msgs : 1;
	printf("DROCE_CYCLES test=%s size=%" PRIu64 " msgs=%" PRIu64
	       " frames=%" PRIu64 " tsc_hz=%.0f total_per_msg=%.1f"
	       " total_per_frame=%.1f post_per_msg=%.1f poll_per_msg=%.1f"
	       " drive_per_msg=%.1f polls=%" PRIu64 " drives=%" PRIu64 "\n",
	       opt.test_name, run_get_size(), msgs, frames, perf_tsc_hz(),
	       (double)perf_cyc.total / ms, (double)perf_cyc.total / fr,
	       (double)perf_cyc.post / ms, (double)perf_cyc.poll / ms,
	       (double)perf_cyc.drive / ms, perf_cyc.polls, perf_cyc.drives);
	if (c && DELTA(c, eng_loops) && (DELTA(c, eng_rx_cycles) ||
					 DELTA(c, eng_tx_cycles))) {
		bool shared = srv && srv != c && same_engine(c, srv);

		printf("DROCE_ENGINE test=%s size=%" PRIu64, opt.test_name,
		       run_get_size());
		report_engine("c", c, shared ? srv : NULL, msgs);
		if (srv && srv != c && !shared)
			report_engine("s", srv, NULL, msgs);
		printf("\n");
	} else if (srv && !c && DELTA(srv, eng_loops) &&
		   DELTA(srv, eng_rx_cycles)) {
		printf("DROCE_ENGINE test=%s size=%" PRIu64, opt.test_name,
		       run_get_size());
		report_engine("s", srv, NULL, msgs);
		printf("\n");
	}
	fflush(stdout);
}
