/* SPDX-License-Identifier: BSD-3-Clause */
/* droce test helpers, see droce_test.h. */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <endian.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>

#include "droce.h"
#include "droce_test.h"

unsigned int dt_failures;

static uint64_t g_seed;
static uint64_t g_rng;
static char g_alarm_msg[160];
static const char *g_prog = "test";

/* ------------------------------------------------------------------ */

const char *dt_errstr(int e)
{
	if (e < 0)
		e = -e;
	return e ? strerror(e) : "success";
}

void dt_report(const char *file, int line, const char *fmt, ...)
{
	va_list ap;

	dt_failures++;
	fflush(stdout);
	fprintf(stderr, "FAIL %s:%d: ", file, line);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	fflush(stderr);
}

/*
 * The EAL's runtime directory (/run/dpdk/<prefix>): rte_eal_cleanup() takes
 * it away, but a failing test leaves through _exit. It is empty with
 * --in-memory/--no-shconf and --no-telemetry; the two files it can hold
 * otherwise are unlinked first. Paths are made once, so the watchdog's
 * signal handler can do this with async-signal-safe calls only.
 */
static char g_rt_dir[256], g_rt_tel[320], g_rt_mp[320];

static void runtime_dir_remember(void)
{
	const char *d = rte_eal_get_runtime_dir();

	if (d == NULL || strlen(d) >= sizeof(g_rt_dir))
		return;
	snprintf(g_rt_tel, sizeof(g_rt_tel), "%s/dpdk_telemetry.v2", d);
	snprintf(g_rt_mp, sizeof(g_rt_mp), "%s/mp_socket", d);
	snprintf(g_rt_dir, sizeof(g_rt_dir), "%s", d);
}

static void runtime_dir_remove(void)
{
	if (g_rt_dir[0] == '\0')
		return;
	unlink(g_rt_tel);
	unlink(g_rt_mp);
	rmdir(g_rt_dir);
}

static void (*g_abort_hook)(void);

void dt_set_abort_hook(void (*fn)(void))
{
	g_abort_hook = fn;
}

void dt_abort(void)
{
	static int in_abort;

	if (g_abort_hook != NULL && !in_abort) {
		in_abort = 1;
		g_abort_hook();
	}
	fflush(stdout);
	fprintf(stderr, "%s: FAILED (%u failure(s)); reproduce with "
		"DROCE_TEST_SEED=%" PRIu64 "\n", g_prog, dt_failures, g_seed);
	fflush(stderr);
	runtime_dir_remove();
	/* Do not run atexit/destructors: an engine thread may be stuck. */
	_exit(1);
}

void dt_skip(const char *fmt, ...)
{
	va_list ap;

	fflush(stderr);
	printf("SKIPPED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	fflush(stdout);
	runtime_dir_remove();
	exit(DT_EXIT_SKIP);
}

void dt_null_leak_guard(void *p)
{
	if (p != NULL)
		fprintf(stderr, "note: the object above was created although "
			"it should not have been; it is leaked\n");
}

static void alarm_handler(int sig)
{
	ssize_t r;

	(void)sig;
	r = write(2, g_alarm_msg, strlen(g_alarm_msg));
	(void)r;
	runtime_dir_remove();
	_exit(1);
}

static unsigned int g_watchdog_s;

/* The watchdog's message names the program and the seed: made again once
 * dt_eal_init() knows them (tests arm the watchdog first). */
static void watchdog_msg(void)
{
	snprintf(g_alarm_msg, sizeof(g_alarm_msg),
		 "FAIL %s: watchdog: still running after %u s (hang?); "
		 "DROCE_TEST_SEED=%" PRIu64 "\n", g_prog, g_watchdog_s, g_seed);
}

void dt_watchdog(unsigned int seconds)
{
	struct sigaction sa;

	g_watchdog_s = seconds;
	watchdog_msg();
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = alarm_handler;
	sigaction(SIGALRM, &sa, NULL);
	alarm(seconds);
}

double dt_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int dt_nb_ports(void)
{
	uint16_t p;
	int n = 0;

	RTE_ETH_FOREACH_DEV(p)
		n++;
	return n;
}

const char *dt_wc_status_name(enum ibv_wc_status s)
{
	static const char *const names[] = {
		[IBV_WC_SUCCESS] = "SUCCESS",
		[IBV_WC_LOC_LEN_ERR] = "LOC_LEN_ERR",
		[IBV_WC_LOC_QP_OP_ERR] = "LOC_QP_OP_ERR",
		[IBV_WC_LOC_EEC_OP_ERR] = "LOC_EEC_OP_ERR",
		[IBV_WC_LOC_PROT_ERR] = "LOC_PROT_ERR",
		[IBV_WC_WR_FLUSH_ERR] = "WR_FLUSH_ERR",
		[IBV_WC_MW_BIND_ERR] = "MW_BIND_ERR",
		[IBV_WC_BAD_RESP_ERR] = "BAD_RESP_ERR",
		[IBV_WC_LOC_ACCESS_ERR] = "LOC_ACCESS_ERR",
		[IBV_WC_REM_INV_REQ_ERR] = "REM_INV_REQ_ERR",
		[IBV_WC_REM_ACCESS_ERR] = "REM_ACCESS_ERR",
		[IBV_WC_REM_OP_ERR] = "REM_OP_ERR",
		[IBV_WC_RETRY_EXC_ERR] = "RETRY_EXC_ERR",
		[IBV_WC_RNR_RETRY_EXC_ERR] = "RNR_RETRY_EXC_ERR",
		[IBV_WC_LOC_RDD_VIOL_ERR] = "LOC_RDD_VIOL_ERR",
		[IBV_WC_REM_INV_RD_REQ_ERR] = "REM_INV_RD_REQ_ERR",
		[IBV_WC_REM_ABORT_ERR] = "REM_ABORT_ERR",
		[IBV_WC_INV_EECN_ERR] = "INV_EECN_ERR",
		[IBV_WC_INV_EEC_STATE_ERR] = "INV_EEC_STATE_ERR",
		[IBV_WC_FATAL_ERR] = "FATAL_ERR",
		[IBV_WC_RESP_TIMEOUT_ERR] = "RESP_TIMEOUT_ERR",
		[IBV_WC_GENERAL_ERR] = "GENERAL_ERR",
	};

	if ((unsigned int)s < sizeof(names) / sizeof(names[0]) && names[s])
		return names[s];
	return "?";
}

const char *dt_wc_opcode_name(enum ibv_wc_opcode o)
{
	switch (o) {
	case IBV_WC_SEND: return "SEND";
	case IBV_WC_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WC_RDMA_READ: return "RDMA_READ";
	case IBV_WC_COMP_SWAP: return "COMP_SWAP";
	case IBV_WC_FETCH_ADD: return "FETCH_ADD";
	case IBV_WC_BIND_MW: return "BIND_MW";
	case IBV_WC_LOCAL_INV: return "LOCAL_INV";
	case IBV_WC_TSO: return "TSO";
	case IBV_WC_RECV: return "RECV";
	case IBV_WC_RECV_RDMA_WITH_IMM: return "RECV_RDMA_WITH_IMM";
	default: return "?";
	}
}

const char *dt_wr_opcode_name(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND: return "SEND";
	case IBV_WR_SEND_WITH_IMM: return "SEND_WITH_IMM";
	case IBV_WR_RDMA_WRITE: return "RDMA_WRITE";
	case IBV_WR_RDMA_WRITE_WITH_IMM: return "RDMA_WRITE_WITH_IMM";
	case IBV_WR_RDMA_READ: return "RDMA_READ";
	case IBV_WR_ATOMIC_CMP_AND_SWP: return "ATOMIC_CMP_AND_SWP";
	case IBV_WR_ATOMIC_FETCH_AND_ADD: return "ATOMIC_FETCH_AND_ADD";
	default: return "?";
	}
}

/* ------------------------------------------------------------------ */
/* RNG: splitmix64 seeding a xorshift64*                               */

static uint64_t splitmix64(uint64_t *x)
{
	uint64_t z = (*x += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

uint64_t dt_seed_init(void)
{
	const char *s = getenv("DROCE_TEST_SEED");
	uint64_t x;

	if (s != NULL && *s != '\0') {
		g_seed = strtoull(s, NULL, 0);
	} else {
		struct timespec ts;

		clock_gettime(CLOCK_REALTIME, &ts);
		g_seed = ((uint64_t)ts.tv_sec * 1000003u) ^
			 (uint64_t)ts.tv_nsec ^ ((uint64_t)getpid() << 32);
	}
	x = g_seed;
	g_rng = splitmix64(&x);
	if (g_rng == 0)
		g_rng = 1;
	printf("%s: seed %" PRIu64 " (set DROCE_TEST_SEED=%" PRIu64
	       " to reproduce)\n", g_prog, g_seed, g_seed);
	fflush(stdout);
	return g_seed;
}

uint64_t dt_seed(void)
{
	return g_seed;
}

uint64_t dt_rand64(void)
{
	uint64_t x = g_rng;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	g_rng = x;
	return x * 0x2545f4914f6cdd1dull;
}

uint64_t dt_rand_range(uint64_t lo, uint64_t hi)
{
	if (hi <= lo)
		return lo;
	if (hi - lo == UINT64_MAX)
		return dt_rand64();
	return lo + dt_rand64() % (hi - lo + 1);
}

bool dt_chance(unsigned int num, unsigned int den)
{
	return dt_rand64() % den < num;
}

void dt_fill_random(void *buf, size_t len)
{
	uint8_t *p = buf;
	uint64_t x = dt_rand64() | 1;

	/* A private xorshift stream: fast, and still fully determined by the
	 * seed. */
	while (len >= 8) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		uint64_t v = x * 0x2545f4914f6cdd1dull;
		memcpy(p, &v, 8);
		p += 8;
		len -= 8;
	}
	while (len--) {
		x ^= x >> 12;
		x ^= x << 25;
		x ^= x >> 27;
		*p++ = (uint8_t)((x * 0x2545f4914f6cdd1dull) >> 56);
	}
}

/* ------------------------------------------------------------------ */
/* Environment                                                          */

void dt_eal_init(const char *prog)
{
	const char *nh = getenv("DROCE_NO_HUGE");
	const char *extra = getenv("DROCE_EAL_EXTRA_ARGS");
	bool no_huge = nh != NULL && strcmp(nh, "1") == 0;
	static char words[512];
	char *argv[40];
	char prefix[64];
	int argc = 0, ret;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (prog != NULL) {
		const char *b = strrchr(prog, '/');

		g_prog = b ? b + 1 : prog;
	}
	dt_seed_init();
	if (g_watchdog_s)
		watchdog_msg();

	snprintf(prefix, sizeof(prefix), "--file-prefix=droce-test-%d",
		 (int)getpid());
	argv[argc++] = (char *)(uintptr_t)g_prog;
	argv[argc++] = (char *)(uintptr_t)"-l";
	/* DT_LCORES: another lcore list (a test of what a process with
	 * fewer lcores than CPUs does) */
	argv[argc++] = (char *)(uintptr_t)(getenv("DT_LCORES") ? getenv("DT_LCORES") : "0-1");
	argv[argc++] = (char *)(uintptr_t)"--no-pci";
	argv[argc++] = (char *)(uintptr_t)"--log-level=*:warning";
	argv[argc++] = prefix;
	/* no telemetry socket left in the runtime directory, unless the
	 * test is about telemetry (it removes the socket itself) */
	if (getenv("DT_TELEMETRY") == NULL)
		argv[argc++] = (char *)(uintptr_t)"--no-telemetry";
	/* devtools/run-tests.sh exports the EAL arguments it chose in
	 * DROCE_EAL_EXTRA_ARGS (e.g. "--no-huge -m 1024"); they replace the
	 * built-in DROCE_NO_HUGE handling. */
	if (no_huge && (extra == NULL || *extra == '\0')) {
		argv[argc++] = (char *)(uintptr_t)"--no-huge";
		argv[argc++] = (char *)(uintptr_t)"-m";
		argv[argc++] = (char *)(uintptr_t)"1024";
	}
	/* --in-memory: no hugepage files are left behind (droce_eal_argv
	 * turns it into --no-shconf under --no-huge, which DPDK 22.11 refuses
	 * it with: nothing is backed by hugetlbfs then, and no shared config
	 * is left in the runtime directory). */
	argv[argc++] = (char *)(uintptr_t)"--in-memory";
	argc = droce_eal_argv(argv, argc, (int)(sizeof(argv) / sizeof(argv[0])),
			      NULL, words, sizeof(words));
	if (argc < 0)
		DT_FAIL_(1, "droce_eal_argv: %s", dt_errstr(-argc));
	for (int k = 1; k < argc; k++)
		no_huge |= strcmp(argv[k], "--no-huge") == 0;
	{
		int k;

		printf("%s: EAL:", g_prog);
		for (k = 1; k < argc; k++)
			printf(" %s", argv[k]);
		printf("\n");
	}

	ret = rte_eal_init(argc, argv);
	if (ret < 0)
		dt_skip("rte_eal_init failed: %s%s", rte_strerror(rte_errno),
			no_huge ? "" :
			" (no hugepages? run with DROCE_NO_HUGE=1)");
	runtime_dir_remember();
}

static void (*fini_hook)(void);

void dt_set_fini_hook(void (*fn)(void))
{
	fini_hook = fn;
}

void dt_init(struct dt_env *env, const char *prog,
	     const char *devargs_a, const char *devargs_b)
{
	int ret, n = -1, i;
	const char *extra = getenv("DT_DEVARGS");
	char xa[512], xb[512];

	memset(env, 0, sizeof(*env));
	dt_eal_init(prog);
	/* DT_DEVARGS=k=v,... adds devargs to both devices: the same test
	 * under another configuration (e.g. zc_min=1, zero-copy transmit). */
	if (extra != NULL && *extra != '\0') {
		snprintf(xa, sizeof(xa), "%s,%s",
			 devargs_a ? devargs_a : "ip=198.18.0.1", extra);
		snprintf(xb, sizeof(xb), "%s,%s",
			 devargs_b ? devargs_b : "ip=198.18.0.2", extra);
		devargs_a = xa;
		devargs_b = xb;
		printf("DT_DEVARGS: %s | %s\n", xa, xb);
	}
	ret = droce_create_ring_pair(devargs_a, devargs_b);
	if (ret != 0) {
		dt_report(__FILE__, __LINE__,
			  "droce_create_ring_pair(%s, %s) = %d (%s)",
			  devargs_a ? devargs_a : "NULL",
			  devargs_b ? devargs_b : "NULL", ret, dt_errstr(ret));
		dt_abort();
	}

	errno = 0;
	env->list = ibv_get_device_list(&n);
	CHECK_PTR(env->list);
	env->ndev = n;
	CHECK_EQ(n, 2);
	CHECK(env->list[0] != NULL && env->list[1] != NULL);
	CHECK(env->list[2] == NULL);	/* NULL-terminated array */

	for (i = 0; i < 2; i++)
		dt_dev_open(&env->dev[i], env->list[i]);
}

void dt_dev_open(struct dt_dev *d, struct ibv_device *dev)
{
	memset(d, 0, sizeof(*d));
	d->dev = dev;
	d->ctx = ibv_open_device(d->dev);
	CHECK_PTR(d->ctx);
	CHECK_OK(ibv_query_device(d->ctx, &d->attr));
	CHECK_OK(ibv_query_port(d->ctx, 1, &d->port));
	CHECK_OK(ibv_query_gid(d->ctx, 1, 0, &d->gid[0]));
	CHECK_OK(ibv_query_gid(d->ctx, 1, 1, &d->gid[1]));
	d->pd = ibv_alloc_pd(d->ctx);
	CHECK_PTR(d->pd);
	d->port_id = droce_dev_port_id(d->ctx);
}

int dt_finish(struct dt_env *env)
{
	dt_fini(env);
	if (dt_failures) {
		printf("%s: FAILED (%u failure(s)); reproduce with "
		       "DROCE_TEST_SEED=%" PRIu64 "\n", g_prog, dt_failures,
		       g_seed);
		return 1;
	}
	printf("%s: PASSED\n", g_prog);
	return 0;
}

void dt_dump_stats(struct dt_env *env)
{
	int i;

	for (i = 0; i < 2; i++)
		if (env->dev[i].ctx != NULL)
			droce_dev_stats_dump(env->dev[i].ctx, stderr);
}

void dt_fini(struct dt_env *env)
{
	char rundir[PATH_MAX];
	int i, ret;

	for (i = 0; i < 2; i++) {
		struct dt_dev *d = &env->dev[i];

		if (d->pd != NULL)
			CHECK_OK(ibv_dealloc_pd(d->pd));
		d->pd = NULL;
		if (d->ctx != NULL)
			CHECK_OK(ibv_close_device(d->ctx));
		d->ctx = NULL;
	}
	if (env->list != NULL)
		ibv_free_device_list(env->list);
	env->list = NULL;
	ret = droce_cleanup();
	if (ret != 0)
		DT_FAIL_(1, "droce_cleanup() = %d (%s)", ret, dt_errstr(ret));
	if (fini_hook != NULL)
		fini_hook();
	snprintf(rundir, sizeof(rundir), "%s", rte_eal_get_runtime_dir());
	ret = rte_eal_cleanup();
	if (ret != 0)
		DT_FAIL_(1, "rte_eal_cleanup() = %d", ret);
	/* --no-shconf still creates an (empty) runtime directory */
	if (rundir[0] != '\0')
		(void)rmdir(rundir);
}

/* ------------------------------------------------------------------ */
/* CQs                                                                  */

void dt_cq_create(struct dt_dev *d, int cqe, bool ex, struct dt_cq *out)
{
	memset(out, 0, sizeof(*out));
	if (ex) {
		struct ibv_cq_init_attr_ex a;

		memset(&a, 0, sizeof(a));
		a.cqe = (uint32_t)cqe;
		a.wc_flags = DT_CQ_EX_WC_FLAGS;
		out->cqx = ibv_create_cq_ex(d->ctx, &a);
		CHECK_PTR(out->cqx);
		out->cq = ibv_cq_ex_to_cq(out->cqx);
		out->wc_flags = a.wc_flags;
	} else {
		out->cq = ibv_create_cq(d->ctx, cqe, NULL, NULL, 0);
		CHECK_PTR(out->cq);
	}
	CHECK_CMP(out->cq->cqe, >=, cqe);
}

void dt_cq_destroy(struct dt_cq *c)
{
	if (c->cq != NULL)
		CHECK_OK(ibv_destroy_cq(c->cq));
	memset(c, 0, sizeof(*c));
}

static void read_cqe_ex(struct dt_cq *c, struct ibv_wc *wc)
{
	struct ibv_cq_ex *x = c->cqx;

	memset(wc, 0xa5, sizeof(*wc));
	wc->wr_id = x->wr_id;
	wc->status = x->status;
	if (c->wc_flags & IBV_WC_EX_WITH_QP_NUM)
		wc->qp_num = ibv_wc_read_qp_num(x);
	if (wc->status != IBV_WC_SUCCESS) {
		wc->vendor_err = ibv_wc_read_vendor_err(x);
		return;
	}
	wc->opcode = ibv_wc_read_opcode(x);
	wc->wc_flags = ibv_wc_read_wc_flags(x);
	if (c->wc_flags & IBV_WC_EX_WITH_BYTE_LEN)
		wc->byte_len = ibv_wc_read_byte_len(x);
	if ((c->wc_flags & IBV_WC_EX_WITH_IMM) &&
	    (wc->wc_flags & IBV_WC_WITH_IMM))
		wc->imm_data = ibv_wc_read_imm_data(x);
	if (c->wc_flags & IBV_WC_EX_WITH_SRC_QP)
		wc->src_qp = ibv_wc_read_src_qp(x);
}

int dt_cq_poll(struct dt_cq *c, struct ibv_wc *wc, int n)
{
	struct ibv_poll_cq_attr attr;
	int k = 0, ret;

	if (n <= 0)
		return 0;
	if (c->cqx == NULL) {
		memset(wc, 0xa5, sizeof(*wc) * (size_t)n);
		return ibv_poll_cq(c->cq, n, wc);
	}
	memset(&attr, 0, sizeof(attr));
	ret = ibv_start_poll(c->cqx, &attr);
	if (ret == ENOENT)
		return 0;
	if (ret != 0) {
		fprintf(stderr, "ibv_start_poll() = %d (%s)\n", ret,
			dt_errstr(ret));
		return -ret;	/* end_poll must not be called */
	}
	for (;;) {
		read_cqe_ex(c, &wc[k++]);
		if (k == n)
			break;
		ret = ibv_next_poll(c->cqx);
		if (ret == ENOENT)
			break;
		if (ret != 0) {
			fprintf(stderr, "ibv_next_poll() = %d (%s)\n", ret,
				dt_errstr(ret));
			ibv_end_poll(c->cqx);
			return -ret;
		}
	}
	ibv_end_poll(c->cqx);
	return k;
}

int dt_wait_wc(struct dt_cq *c, struct ibv_wc *wc, int n, double timeout_s,
	       const char *what)
{
	double deadline = dt_now() + timeout_s;
	int got = 0, r;
	unsigned int spins = 0;

	while (got < n) {
		r = dt_cq_poll(c, wc + got, n - got);
		if (r < 0) {
			fprintf(stderr, "%s: poll failed: %d\n", what, r);
			return got;
		}
		got += r;
		if (got >= n)
			break;
		if ((++spins & 1023) == 0) {
			if (dt_now() > deadline) {
				fprintf(stderr, "%s: timeout after %.1f s: "
					"%d of %d completions\n", what,
					timeout_s, got, n);
				return got;
			}
			sched_yield();
		}
	}
	return got;
}

int dt_cq_drain_unexpected(struct dt_cq *c, const char *what)
{
	struct ibv_wc wc[16];
	int r, total = 0, i;

	while ((r = dt_cq_poll(c, wc, 16)) > 0) {
		for (i = 0; i < r; i++) {
			char pfx[128];

			snprintf(pfx, sizeof(pfx), "%s: unexpected completion",
				 what);
			dt_print_wc(stderr, pfx, &wc[i]);
		}
		total += r;
	}
	return total;
}

void dt_print_wc(FILE *f, const char *prefix, const struct ibv_wc *wc)
{
	fprintf(f, "%s: wr_id=0x%" PRIx64 " status=%d(%s) opcode=%d(%s) "
		"byte_len=%u qp_num=0x%x src_qp=0x%x wc_flags=0x%x "
		"imm_data(be)=0x%08x vendor_err=0x%x\n", prefix, wc->wr_id,
		wc->status, dt_wc_status_name(wc->status), wc->opcode,
		dt_wc_opcode_name(wc->opcode), wc->byte_len, wc->qp_num,
		wc->src_qp, wc->wc_flags, (unsigned int)wc->imm_data,
		wc->vendor_err);
}

/* ------------------------------------------------------------------ */
/* WC checker                                                           */

bool dt_check_wc_at(const char *file, int line, const struct ibv_wc *wc,
		    const struct dt_wc_exp *e, bool fatal)
{
	char why[768];
	size_t o = 0;

#define WHY(...) do {							\
		if (o < sizeof(why))					\
			o += (size_t)snprintf(why + o, sizeof(why) - o,	\
					      __VA_ARGS__);		\
	} while (0)

	why[0] = '\0';
	if (wc->wr_id != e->wr_id)
		WHY(" wr_id 0x%" PRIx64 "!=0x%" PRIx64, wc->wr_id, e->wr_id);
	if (wc->status != e->status)
		WHY(" status %s!=%s", dt_wc_status_name(wc->status),
		    dt_wc_status_name(e->status));
	/* qp_num is valid for every completion, errors included
	 * (ibv_poll_cq(3): "If the completion status is other than
	 * IBV_WC_SUCCESS, only the following attributes are valid: wr_id,
	 * status, qp_num, and vendor_err"). */
	if (wc->qp_num != e->qp_num)
		WHY(" qp_num 0x%x!=0x%x", wc->qp_num, e->qp_num);
	if (e->status == IBV_WC_SUCCESS && wc->status == IBV_WC_SUCCESS) {
		unsigned int mask = ~e->wc_flags_opt;

		if (wc->opcode != e->opcode)
			WHY(" opcode %s!=%s", dt_wc_opcode_name(wc->opcode),
			    dt_wc_opcode_name(e->opcode));
		if (e->byte_len != DT_ANY &&
		    (long long)wc->byte_len != e->byte_len)
			WHY(" byte_len %u!=%lld", wc->byte_len, e->byte_len);
		if ((wc->wc_flags & mask) != (e->wc_flags & mask))
			WHY(" wc_flags 0x%x!=0x%x (optional 0x%x)",
			    wc->wc_flags, e->wc_flags, e->wc_flags_opt);
		/* RC: src_qp is only defined for UD (ibv_poll_cq(3): "valid
		 * only for UD QPs"); accept 0 or the remote QP number. */
		if (e->src_qp != DT_ANY && wc->src_qp != 0 &&
		    (long long)wc->src_qp != e->src_qp)
			WHY(" src_qp 0x%x not in {0, 0x%llx}", wc->src_qp,
			    e->src_qp);
		if ((e->wc_flags & IBV_WC_WITH_IMM) &&
		    !(e->wc_flags_opt & IBV_WC_WITH_IMM) &&
		    be32toh(wc->imm_data) != e->imm_data)
			WHY(" imm_data 0x%08x!=0x%08x", be32toh(wc->imm_data),
			    e->imm_data);
	}
#undef WHY
	if (why[0] == '\0')
		return true;
	dt_report(file, line, "work completion mismatch:%s", why);
	dt_print_wc(stderr, "  got", wc);
	fprintf(stderr, "  expected: wr_id=0x%" PRIx64 " status=%s opcode=%s "
		"byte_len=%lld qp_num=0x%x src_qp=%lld wc_flags=0x%x(opt 0x%x) "
		"imm=0x%08x\n", e->wr_id, dt_wc_status_name(e->status),
		dt_wc_opcode_name(e->opcode), e->byte_len, e->qp_num,
		e->src_qp, e->wc_flags, e->wc_flags_opt, e->imm_data);
	if (fatal)
		dt_abort();
	return false;
}

static enum ibv_wc_opcode send_wc_opcode(enum ibv_wr_opcode op)
{
	switch (op) {
	case IBV_WR_SEND:
	case IBV_WR_SEND_WITH_IMM:
		return IBV_WC_SEND;
	case IBV_WR_RDMA_WRITE:
	case IBV_WR_RDMA_WRITE_WITH_IMM:
		return IBV_WC_RDMA_WRITE;
	case IBV_WR_RDMA_READ:
		return IBV_WC_RDMA_READ;
	case IBV_WR_ATOMIC_CMP_AND_SWP:
		return IBV_WC_COMP_SWAP;
	case IBV_WR_ATOMIC_FETCH_AND_ADD:
		return IBV_WC_FETCH_ADD;
	default:
		return (enum ibv_wc_opcode)-1;
	}
}

struct dt_wc_exp dt_exp_send(uint64_t wr_id, enum ibv_wr_opcode op,
			     uint32_t len, uint32_t qp_num)
{
	struct dt_wc_exp e;

	memset(&e, 0, sizeof(e));
	e.wr_id = wr_id;
	e.status = IBV_WC_SUCCESS;
	e.opcode = send_wc_opcode(op);
	/*
	 * Requester byte_len: the message length, as the software RoCE
	 * provider reports it (Linux drivers/infiniband/sw/rxe/rxe_comp.c,
	 * make_send_cqe(): "uwc->byte_len = wqe->dma.length"); mlx5
	 * (rdma-core providers/mlx5/cq.c, handle_good_req) reports it for
	 * RDMA_READ.
	 */
	e.byte_len = len;
	e.qp_num = qp_num;
	e.src_qp = DT_ANY;
	e.wc_flags = 0;
	/* rxe and mlx5 also flag requester completions of *_WITH_IMM with
	 * IBV_WC_WITH_IMM (make_send_cqe / handle_good_req); ibv_poll_cq(3)
	 * does not say, so it is optional here. GRH is UD-only. */
	e.wc_flags_opt = IBV_WC_WITH_IMM | IBV_WC_GRH;
	return e;
}

struct dt_wc_exp dt_exp_recv(uint64_t wr_id, enum ibv_wr_opcode op,
			     uint32_t len, uint32_t qp_num, uint32_t peer_qpn,
			     uint32_t imm_host)
{
	struct dt_wc_exp e;

	memset(&e, 0, sizeof(e));
	e.wr_id = wr_id;
	e.status = IBV_WC_SUCCESS;
	/* ibv_poll_cq(3)/ibv_wr_post(3): RDMA_WRITE_WITH_IMM consumes a
	 * receive and completes it as IBV_WC_RECV_RDMA_WITH_IMM. */
	e.opcode = op == IBV_WR_RDMA_WRITE_WITH_IMM ?
		   IBV_WC_RECV_RDMA_WITH_IMM : IBV_WC_RECV;
	e.byte_len = len;
	e.qp_num = qp_num;
	e.src_qp = peer_qpn;
	if (op == IBV_WR_SEND_WITH_IMM || op == IBV_WR_RDMA_WRITE_WITH_IMM) {
		e.wc_flags = IBV_WC_WITH_IMM;
		e.imm_data = imm_host;
	}
	/* rxe sets IBV_WC_GRH on every RoCE receive (rxe_resp.c
	 * do_complete: "uwc->wc_flags = IB_WC_GRH"); for RC it carries no
	 * meaning, so it is optional. */
	e.wc_flags_opt = IBV_WC_GRH;
	return e;
}

struct dt_wc_exp dt_exp_err(uint64_t wr_id, enum ibv_wc_status st,
			    uint32_t qp_num)
{
	struct dt_wc_exp e;

	memset(&e, 0, sizeof(e));
	e.wr_id = wr_id;
	e.status = st;
	e.byte_len = DT_ANY;
	e.qp_num = qp_num;
	e.src_qp = DT_ANY;
	return e;
}

/* ------------------------------------------------------------------ */
/* QPs                                                                  */

void dt_qp_cfg_default(struct dt_qp_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->max_send_wr = 64;
	c->max_recv_wr = 64;
	c->max_send_sge = 1;
	c->max_recv_sge = 1;
	c->max_inline_data = 0;
}

struct ibv_qp *dt_qp_create(struct dt_dev *d, struct ibv_cq *scq,
			    struct ibv_cq *rcq, const struct dt_qp_cfg *cfg,
			    struct ibv_qp_cap *cap_out)
{
	struct ibv_pd *pd = cfg->pd ? cfg->pd : d->pd;
	struct ibv_qp_init_attr_ex a;
	struct ibv_qp *qp;

	/* (ibv_qp_init_attr is the first part of the _ex form) */
	memset(&a, 0, sizeof(a));
	a.send_cq = scq;
	a.recv_cq = rcq;
	a.cap.max_send_wr = cfg->max_send_wr;
	a.cap.max_recv_wr = cfg->max_recv_wr;
	a.cap.max_send_sge = cfg->max_send_sge;
	a.cap.max_recv_sge = cfg->max_recv_sge;
	a.cap.max_inline_data = cfg->max_inline_data;
	a.qp_type = IBV_QPT_RC;
	a.sq_sig_all = cfg->sq_sig_all;
	if (cfg->send_ops_flags != 0) {
		a.comp_mask = IBV_QP_INIT_ATTR_PD |
			      IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
		a.pd = pd;
		a.send_ops_flags = cfg->send_ops_flags;
		qp = ibv_create_qp_ex(d->ctx, &a);
	} else {
		struct ibv_qp_init_attr b;

		memcpy(&b, &a, sizeof(b));
		qp = ibv_create_qp(pd, &b);
		a.cap = b.cap;
	}
	if (qp != NULL && cap_out != NULL)
		*cap_out = a.cap;
	return qp;
}

void dt_conn_cfg_default(struct dt_conn_cfg *c)
{
	memset(c, 0, sizeof(*c));
	c->mtu = IBV_MTU_1024;
	c->access = DT_ACCESS_ALL;
	c->timeout = 14;		/* 4.096 us * 2^14 = 67 ms */
	c->retry_cnt = 7;
	c->rnr_retry = 7;		/* infinite */
	c->min_rnr_timer = 12;		/* 0.64 ms */
	c->max_rd_atomic = 16;		/* clamped by dt_connect */
	c->max_dest_rd_atomic = 16;
	c->sgid_index = 1;
	c->pkey_index = 0;
	c->port_num = 1;
}

void dt_attr_init(struct ibv_qp_attr *a, const struct dt_conn_cfg *c)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_INIT;
	a->pkey_index = c->pkey_index;
	a->port_num = c->port_num;
	a->qp_access_flags = (unsigned int)c->access;
}

void dt_attr_rtr(struct ibv_qp_attr *a, const struct dt_conn_cfg *c,
		 const union ibv_gid *dgid, uint32_t dest_qpn, uint32_t rq_psn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTR;
	a->path_mtu = c->mtu;
	a->dest_qp_num = dest_qpn;
	a->rq_psn = rq_psn & 0xffffff;
	a->max_dest_rd_atomic = c->max_dest_rd_atomic;
	a->min_rnr_timer = c->min_rnr_timer;
	a->ah_attr.is_global = 1;
	a->ah_attr.grh.dgid = *dgid;
	a->ah_attr.grh.sgid_index = c->sgid_index;
	a->ah_attr.grh.hop_limit = 64;
	a->ah_attr.grh.flow_label = 0;
	a->ah_attr.grh.traffic_class = 0;
	a->ah_attr.dlid = 0;
	a->ah_attr.sl = 0;
	a->ah_attr.src_path_bits = 0;
	a->ah_attr.port_num = c->port_num;
}

void dt_attr_rts(struct ibv_qp_attr *a, const struct dt_conn_cfg *c,
		 uint32_t sq_psn)
{
	memset(a, 0, sizeof(*a));
	a->qp_state = IBV_QPS_RTS;
	a->timeout = c->timeout;
	a->retry_cnt = c->retry_cnt;
	a->rnr_retry = c->rnr_retry;
	a->sq_psn = sq_psn & 0xffffff;
	a->max_rd_atomic = c->max_rd_atomic;
}

int dt_qp_to_init(struct ibv_qp *qp, const struct dt_conn_cfg *c)
{
	struct ibv_qp_attr a;

	dt_attr_init(&a, c);
	return ibv_modify_qp(qp, &a, DT_MASK_INIT);
}

int dt_qp_to_rtr(struct ibv_qp *qp, const struct dt_conn_cfg *c,
		 const union ibv_gid *dgid, uint32_t dest_qpn, uint32_t rq_psn)
{
	struct ibv_qp_attr a;

	dt_attr_rtr(&a, c, dgid, dest_qpn, rq_psn);
	return ibv_modify_qp(qp, &a, DT_MASK_RTR);
}

int dt_qp_to_rts(struct ibv_qp *qp, const struct dt_conn_cfg *c,
		 uint32_t sq_psn)
{
	struct ibv_qp_attr a;

	dt_attr_rts(&a, c, sq_psn);
	return ibv_modify_qp(qp, &a, DT_MASK_RTS);
}

int dt_qp_to_state(struct ibv_qp *qp, enum ibv_qp_state s)
{
	struct ibv_qp_attr a;

	memset(&a, 0, sizeof(a));
	a.qp_state = s;
	return ibv_modify_qp(qp, &a, IBV_QP_STATE);
}

int dt_qp_state(struct ibv_qp *qp)
{
	struct ibv_qp_attr a;
	struct ibv_qp_init_attr ia;

	memset(&a, 0, sizeof(a));
	if (ibv_query_qp(qp, &a, IBV_QP_STATE, &ia) != 0)
		return -1;
	return (int)a.qp_state;
}

static uint8_t min_u8(uint8_t a, int b)
{
	return b < a ? (uint8_t)(b < 0 ? 0 : b) : a;
}

void dt_connect(struct dt_dev *da, struct ibv_qp *qa, uint32_t psn_a,
		struct dt_dev *db, struct ibv_qp *qb, uint32_t psn_b,
		const struct dt_conn_cfg *c)
{
	dt_connect2(da, qa, psn_a, c, db, qb, psn_b, c);
}

void dt_connect2(struct dt_dev *da, struct ibv_qp *qa, uint32_t psn_a,
		 const struct dt_conn_cfg *cfg_a, struct dt_dev *db,
		 struct ibv_qp *qb, uint32_t psn_b, const struct dt_conn_cfg *cfg_b)
{
	struct dt_conn_cfg ca = *cfg_a, cb = *cfg_b;

	/* Responder resources / initiator depth within device limits. */
	ca.max_rd_atomic = min_u8(cfg_a->max_rd_atomic,
				  da->attr.max_qp_init_rd_atom);
	ca.max_dest_rd_atomic = min_u8(cfg_a->max_dest_rd_atomic,
				       da->attr.max_qp_rd_atom);
	cb.max_rd_atomic = min_u8(cfg_b->max_rd_atomic,
				  db->attr.max_qp_init_rd_atom);
	cb.max_dest_rd_atomic = min_u8(cfg_b->max_dest_rd_atomic,
				       db->attr.max_qp_rd_atom);

	if (dt_qp_state(qa) == IBV_QPS_RESET)
		CHECK_OK(dt_qp_to_init(qa, &ca));
	if (dt_qp_state(qb) == IBV_QPS_RESET)
		CHECK_OK(dt_qp_to_init(qb, &cb));
	CHECK_OK(dt_qp_to_rtr(qa, &ca, &db->gid[1], qb->qp_num, psn_b));
	CHECK_OK(dt_qp_to_rtr(qb, &cb, &da->gid[1], qa->qp_num, psn_a));
	CHECK_OK(dt_qp_to_rts(qa, &ca, psn_a));
	CHECK_OK(dt_qp_to_rts(qb, &cb, psn_b));
}

void dt_rc_pair_open(struct dt_rc_pair *p, struct dt_dev *da,
		     struct dt_dev *db, int cqe, const struct dt_qp_cfg *qc,
		     const struct dt_conn_cfg *ca, const struct dt_conn_cfg *cb,
		     uint32_t psn_a, uint32_t psn_b)
{
	struct dt_qp_cfg q;

	memset(p, 0, sizeof(*p));
	if (qc == NULL) {
		dt_qp_cfg_default(&q);
		qc = &q;
	}
	dt_cq_create(da, cqe, false, &p->sa);
	dt_cq_create(da, cqe, false, &p->ra);
	dt_cq_create(db, cqe, false, &p->sb);
	dt_cq_create(db, cqe, false, &p->rb);
	p->qa = dt_qp_create(da, p->sa.cq, p->ra.cq, qc, &p->capa);
	CHECK_PTR(p->qa);
	p->qb = dt_qp_create(db, p->sb.cq, p->rb.cq, qc, &p->capb);
	CHECK_PTR(p->qb);
	if (ca != NULL)
		dt_connect2(da, p->qa, psn_a, ca, db, p->qb, psn_b,
			    cb != NULL ? cb : ca);
}

void dt_post_one(struct ibv_qp *qp, enum ibv_wr_opcode op, uint64_t wr_id,
		 void *laddr, uint32_t len, uint32_t lkey, void *raddr,
		 uint32_t rkey, unsigned int send_flags)
{
	struct ibv_sge sge = { (uintptr_t)laddr, len, lkey };
	struct ibv_send_wr wr, *bad = NULL;

	memset(&wr, 0, sizeof(wr));
	wr.wr_id = wr_id;
	wr.sg_list = &sge;
	wr.num_sge = 1;
	wr.opcode = op;
	wr.send_flags = send_flags;
	if (op == IBV_WR_ATOMIC_FETCH_AND_ADD || op == IBV_WR_ATOMIC_CMP_AND_SWP) {
		wr.wr.atomic.remote_addr = (uintptr_t)raddr;
		wr.wr.atomic.rkey = rkey;
		wr.wr.atomic.compare_add = op == IBV_WR_ATOMIC_FETCH_AND_ADD;
		wr.wr.atomic.swap = 1;
	} else {
		wr.wr.rdma.remote_addr = (uintptr_t)raddr;
		wr.wr.rdma.rkey = rkey;
	}
	CHECK_OK(ibv_post_send(qp, &wr, &bad));
}

void dt_wr_write_one(struct ibv_qp *qp, uint64_t wr_id, void *laddr,
		     uint32_t len, uint32_t lkey, uint64_t raddr, uint32_t rkey,
		     bool signaled)
{
	struct ibv_qp_ex *x = ibv_qp_to_qp_ex(qp);

	ibv_wr_start(x);
	x->wr_id = wr_id;
	x->wr_flags = signaled ? IBV_SEND_SIGNALED : 0;
	ibv_wr_rdma_write(x, rkey, raddr);
	ibv_wr_set_sge(x, lkey, (uintptr_t)laddr, len);
	CHECK_OK(ibv_wr_complete(x));
}

void dt_rdma_checked(struct dt_rc_pair *p, enum ibv_wr_opcode op,
		     uint64_t wr_id, void *laddr, uint32_t len, uint32_t lkey,
		     void *raddr, uint32_t rkey, const char *what)
{
	struct ibv_wc wc;
	struct dt_wc_exp e;

	dt_post_one(p->qa, op, wr_id, laddr, len, lkey, raddr, rkey,
		    IBV_SEND_SIGNALED);
	CHECK_EQ(dt_wait_wc(&p->sa, &wc, 1, DT_WAIT_S, what), 1);
	e = dt_exp_send(wr_id, op, len, p->qa->qp_num);
	CHECK_WC(&wc, &e);
	CHECK(memcmp(laddr, raddr, len) == 0);
}

void dt_rc_pair_close(struct dt_rc_pair *p)
{
	if (p->qa != NULL)
		EXPECT_OK(ibv_destroy_qp(p->qa));
	if (p->qb != NULL)
		EXPECT_OK(ibv_destroy_qp(p->qb));
	dt_cq_destroy(&p->sa);
	dt_cq_destroy(&p->ra);
	dt_cq_destroy(&p->sb);
	dt_cq_destroy(&p->rb);
}

/* ------------------------------------------------------------------ */

struct ibv_mr *dt_reg_mr(struct ibv_pd *pd, void *addr, size_t len,
			 int access)
{
	/* The parentheses call the exported function, not the inline
	 * __ibv_reg_mr() wrapper (which would use ibv_reg_mr_iova2 for a
	 * non-constant access). */
	return (ibv_reg_mr)(pd, addr, len, access);
}

void *dt_alloc(size_t len)
{
	void *p = NULL;
	size_t sz = (len + 4095) & ~(size_t)4095;

	if (sz == 0)
		sz = 4096;
	if (posix_memalign(&p, 4096, sz) != 0 || p == NULL) {
		DT_FAIL_(1, "posix_memalign(%zu) failed", sz);
	}
	memset(p, 0, sz);
	return p;
}

uint32_t dt_mtu_bytes(enum ibv_mtu m)
{
	switch (m) {
	case IBV_MTU_256: return 256;
	case IBV_MTU_512: return 512;
	case IBV_MTU_1024: return 1024;
	case IBV_MTU_2048: return 2048;
	case IBV_MTU_4096: return 4096;
	default: return 0;
	}
}
