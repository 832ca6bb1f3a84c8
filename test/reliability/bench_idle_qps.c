/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * What an engine iteration costs with N connected but idle QPs: timers live
 * on a wheel and only QPs with work are visited, so it must not grow with
 * N. App-driven devices, so droce_poll() is one iteration we can time.
 * A benchmark (prints numbers; asserts nothing about speed):
 *   bench_idle_qps [nqps]   (default 10000)
 */
#include <inttypes.h>
#include <stdlib.h>

#include <rte_cycles.h>

#include "droce.h"
#include "droce_test.h"

static double cycles_per_poll(struct dt_env *env)
{
	enum { N = 200000 };
	uint64_t t0 = rte_rdtsc_precise();

	for (int i = 0; i < N; i++)
		droce_poll(env->dev[i & 1].ctx);
	return (double)(rte_rdtsc_precise() - t0) / N;
}

static double median3(struct dt_env *env)
{
	double a = cycles_per_poll(env), b = cycles_per_poll(env),
	       c = cycles_per_poll(env);

	return a > b ? (b > c ? b : (a > c ? c : a)) : (a > c ? a : (b > c ? c : b));
}

int main(int argc, char **argv)
{
	struct dt_env env;
	int nqps = argc > 1 ? atoi(argv[1]) : 10000;
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	struct dt_cq ca, cb;
	struct ibv_qp **qa, **qb;
	double base, loaded;

	dt_init(&env, "bench_idle_qps", "ip=198.18.0.1,lcore=app",
		"ip=198.18.0.2,lcore=app");
	base = median3(&env);
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 1;
	qc.max_recv_wr = 1;
	qc.max_inline_data = 0;
	dt_conn_cfg_default(&cc);
	dt_cq_create(&env.dev[0], 16, false, &ca);
	dt_cq_create(&env.dev[1], 16, false, &cb);
	qa = calloc((size_t)nqps / 2, sizeof(*qa));
	qb = calloc((size_t)nqps / 2, sizeof(*qb));
	for (int i = 0; i < nqps / 2; i++) {
		qa[i] = dt_qp_create(&env.dev[0], ca.cq, ca.cq, &qc, NULL);
		qb[i] = dt_qp_create(&env.dev[1], cb.cq, cb.cq, &qc, NULL);
		CHECK_PTR(qa[i]);
		CHECK_PTR(qb[i]);
		dt_connect(&env.dev[0], qa[i], 1, &env.dev[1], qb[i], 2, &cc);
	}
	loaded = median3(&env);
	printf("engine iteration (2 devices, idle): %.0f cycles with 0 QPs, "
	       "%.0f cycles with %d connected idle QPs: ratio %.2f\n",
	       base, loaded, nqps, loaded / base);
	for (int i = 0; i < nqps / 2; i++) {
		CHECK_OK(ibv_destroy_qp(qa[i]));
		CHECK_OK(ibv_destroy_qp(qb[i]));
	}
	dt_cq_destroy(&ca);
	dt_cq_destroy(&cb);
	free(qa);
	free(qb);
	dt_fini(&env);
	return 0;
}
