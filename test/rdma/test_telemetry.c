/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce's counters through DPDK telemetry, as dpdk-telemetry.py reads
 * them: connect to this process's telemetry socket, list the commands,
 * and read /droce/devices, /droce/stats, /droce/qps and /droce/qp after
 * some traffic; the numbers must match droce_dev_stats_get() and
 * droce_qp_stats_get().
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <rte_eal.h>

#include "droce.h"
#include "droce_test.h"

static int tel_fd = -1;
static char reply[65536];

static const char *tel(const char *cmd)
{
	ssize_t n;

	CHECK(write(tel_fd, cmd, strlen(cmd)) == (ssize_t)strlen(cmd));
	n = read(tel_fd, reply, sizeof(reply) - 1);
	CHECK(n > 0);
	reply[n] = '\0';
	return reply;
}

/* The number after "key": in a flat JSON object, or -1. */
static long long json_num(const char *json, const char *key)
{
	char pat[128];
	const char *p;

	snprintf(pat, sizeof(pat), "\"%s\":", key);
	p = strstr(json, pat);
	return p ? strtoll(p + strlen(pat), NULL, 10) : -1;
}

int main(void)
{
	struct dt_env env;
	struct dt_dev *A, *B;
	struct dt_cq sa, ra, sb, rb;
	struct ibv_qp *qa, *qb;
	struct dt_conn_cfg cc;
	struct dt_qp_cfg qc;
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	struct droce_dev_stats st;
	struct droce_qp_stats qs;
	uint8_t *buf = dt_alloc(1 << 16);
	struct ibv_mr *mra, *mrb;
	char cmd[64];
	const char *r;

	setenv("DT_TELEMETRY", "1", 1);
	dt_watchdog(120);
	dt_init(&env, "test_telemetry", NULL, NULL);
	A = &env.dev[0];
	B = &env.dev[1];

	/* Some traffic: 50 WRITEs of 4 KiB, A -> B. */
	dt_cq_create(A, 64, false, &sa);
	dt_cq_create(A, 64, false, &ra);
	dt_cq_create(B, 64, false, &sb);
	dt_cq_create(B, 64, false, &rb);
	dt_qp_cfg_default(&qc);
	qa = dt_qp_create(A, sa.cq, ra.cq, &qc, NULL);
	qb = dt_qp_create(B, sb.cq, rb.cq, &qc, NULL);
	CHECK_PTR(qa);
	CHECK_PTR(qb);
	dt_conn_cfg_default(&cc);
	dt_connect(A, qa, 0x100, B, qb, 0x200, &cc);
	mra = dt_reg_mr(A->pd, buf, 1 << 15, DT_ACCESS_ALL);
	mrb = dt_reg_mr(B->pd, buf + (1 << 15), 1 << 15, DT_ACCESS_ALL);
	CHECK_PTR(mra);
	CHECK_PTR(mrb);
	for (int i = 0; i < 50; i++) {
		struct ibv_sge sge = { (uintptr_t)buf, 4096, mra->lkey };
		struct ibv_send_wr wr = { .wr_id = (uint64_t)i, .sg_list = &sge,
			.num_sge = 1, .opcode = IBV_WR_RDMA_WRITE,
			.send_flags = IBV_SEND_SIGNALED }, *bad;
		struct ibv_wc wc;

		wr.wr.rdma.remote_addr = (uintptr_t)buf + (1 << 15);
		wr.wr.rdma.rkey = mrb->rkey;
		CHECK_OK(ibv_post_send(qa, &wr, &bad));
		CHECK_EQ(dt_wait_wc(&sa, &wc, 1, DT_WAIT_S, "WRITE"), 1);
		CHECK_EQ(wc.status, IBV_WC_SUCCESS);
	}

	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s/dpdk_telemetry.v2",
		 rte_eal_get_runtime_dir());
	tel_fd = socket(AF_UNIX, SOCK_SEQPACKET, 0);
	CHECK(tel_fd >= 0);
	if (connect(tel_fd, (struct sockaddr *)&sun, sizeof(sun)) != 0)
		dt_skip("no telemetry socket at %s", sun.sun_path);
	/* The greeting, then the command list (what dpdk-telemetry.py shows). */
	CHECK(read(tel_fd, reply, sizeof(reply) - 1) > 0);
	r = tel("/");
	CHECK(strstr(r, "\"/droce/devices\"") && strstr(r, "\"/droce/stats\"") &&
	      strstr(r, "\"/droce/qps\"") && strstr(r, "\"/droce/qp\""));
	r = tel("/droce/devices");
	printf("%s\n", r);
	CHECK(strstr(r, "\"droce0\"") && strstr(r, "\"droce1\""));

	r = tel("/droce/stats,0");
	printf("%.300s...\n", r);
	CHECK_OK(droce_dev_stats_get(A->ctx, &st));
	/* Quiet now: the telemetry view equals the API's. */
	CHECK_EQ((uint64_t)json_num(r, "tx_pkts"), st.tx_pkts);
	CHECK_EQ((uint64_t)json_num(r, "rx_pkts"), st.rx_pkts);
	CHECK_EQ((uint64_t)json_num(r, "tx_bytes"), st.tx_bytes);
	CHECK(st.tx_pkts >= 50 * 4);	/* 4 KiB at path MTU 1024: 4 each */
	CHECK(json_num(r, "retransmits") == 0 && json_num(r, "rx_icrc_err") == 0);
	/* The engine's counters come through both: its iterations always,
	 * its stage cycles only with the devarg cycles=1 (off here). */
	CHECK(st.eng_loops > 0 && json_num(r, "eng_loops") > 0);
	CHECK(st.eng_busy_loops > 0 && st.eng_busy_loops <= st.eng_loops);
	CHECK(st.eng_rx_cycles == 0 && st.eng_work_cycles == 0 &&
	      st.eng_tx_cycles == 0 && json_num(r, "eng_tx_cycles") == 0);
	CHECK(droce_create_ring_pair("ip=198.18.2.1,cycles=2", NULL) < 0);

	r = tel("/droce/qps,1");
	snprintf(cmd, sizeof(cmd), "%u", qb->qp_num);
	CHECK(strstr(r, cmd) != NULL);
	snprintf(cmd, sizeof(cmd), "/droce/qp,0,%u", qa->qp_num);
	r = tel(cmd);
	printf("%s\n", r);
	CHECK_OK(droce_qp_stats_get(qa, &qs));
	CHECK_EQ(json_num(r, "state"), (long long)IBV_QPS_RTS);
	CHECK_EQ((uint64_t)json_num(r, "tx_pkts"), qs.tx_pkts);
	CHECK_EQ(qs.tx_pkts, 200u);
	CHECK_EQ(json_num(r, "dest_qpn"), (long long)qb->qp_num);
	CHECK_EQ(json_num(r, "sq_outstanding"), 0);
	/* Bad parameters are refused, not crashed on. */
	r = tel("/droce/stats,9");
	CHECK(strstr(r, "null") != NULL);
	r = tel("/droce/qp,0,999999");
	CHECK(strstr(r, "null") != NULL);
	close(tel_fd);

	CHECK_OK(ibv_destroy_qp(qa));
	CHECK_OK(ibv_destroy_qp(qb));
	CHECK_OK(ibv_dereg_mr(mra));
	CHECK_OK(ibv_dereg_mr(mrb));
	dt_cq_destroy(&sa);
	dt_cq_destroy(&ra);
	dt_cq_destroy(&sb);
	dt_cq_destroy(&rb);
	free(buf);
	{
		/* The socket outlives the EAL: leave no runtime directory. */
		char dir[sizeof(sun.sun_path)];

		snprintf(dir, sizeof(dir), "%s", rte_eal_get_runtime_dir());
		dt_fini(&env);
		unlink(sun.sun_path);
		rmdir(dir);
	}
	printf("test_telemetry: %s\n", dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}
