/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_teardown_inflight: frames still on their way when the devices go.
 *
 * A frame is an mbuf of its sender's pool until someone frees it, and over
 * the embedded net_ring pair the receiver gets the sender's mbuf itself.
 * droce_cleanup() removes the devices one by one (B, then A) while the
 * engine goes on serving the ones left, so B's frames that A has not
 * received yet (in its receive ring, or held by its link impairer) are
 * received after B is gone. B's pool must outlive them: freed with B, its
 * memory came back zeroed and the engine took a frame at address 0
 * (UBSan in the sanitizer pass's rc_loss-zc, once; a segfault here).
 *
 * B streams signalled 64-byte WRITEs to A for 0.15 s while A's receive
 * side holds every frame 40 ms (impair rx_delay_us), so the impairer holds
 * B's frames when the test tears down; DROCE_CLEANUP_PAUSE_US (meson sets
 * 100 ms) pauses droce_cleanup() after removing B, long enough for those
 * frames to come due and be received by A. Checked: the WRITEs that
 * completed did so in order and successfully, frames were held at the
 * teardown, each 64-byte slot of A's buffer is whole (one WRITE's value
 * or none), and the process gets through droce_cleanup() and
 * rte_eal_cleanup().
 */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "droce.h"
#include "droce_impair.h"
#include "droce_test.h"

#define NBUF		4096u
#define WLEN		64u
#define RUN_S		0.15
#define OUTSTANDING	1024	/* below the SQ's depth and the PSN window */

static struct dt_env env;

static void abort_hook(void)
{
	dt_dump_stats(&env);
}

int main(void)
{
	struct dt_qp_cfg qc;
	struct dt_conn_cfg cc;
	struct dt_rc_pair p;
	struct droce_impair_stats st;
	struct ibv_wc wc[64];
	struct ibv_mr *ma, *mb;
	uint8_t *ba, *bb;
	uint64_t posted = 0, done = 0;
	double t0;

	dt_set_abort_hook(abort_hook);
	dt_init(&env, "test_teardown_inflight", NULL, NULL);
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 2 * OUTSTANDING;
	dt_conn_cfg_default(&cc);
	cc.timeout = 18;	/* ~1 s: the 40 ms hold is no loss */
	dt_rc_pair_open(&p, &env.dev[0], &env.dev[1], 4 * OUTSTANDING, &qc,
			&cc, NULL, 100, 200);
	ba = dt_alloc(NBUF);
	bb = dt_alloc(NBUF);
	ma = dt_reg_mr(env.dev[0].pd, ba, NBUF, DT_ACCESS_ALL);
	mb = dt_reg_mr(env.dev[1].pd, bb, NBUF, DT_ACCESS_ALL);
	CHECK(ma != NULL && mb != NULL);
	CHECK_EQ(droce_dev_impair(env.dev[0].ctx, "rx_delay_us=40000"), 0);

	t0 = dt_now();
	while (dt_now() - t0 < RUN_S) {
		int n;

		if (posted - done < OUTSTANDING) {
			/* each WRITE a whole round's slot of one value */
			uint64_t slot = posted % (NBUF / WLEN);

			memset(bb + slot * WLEN,
			       (int)(posted / (NBUF / WLEN) % 250) + 1, WLEN);
			dt_post_one(p.qb, IBV_WR_RDMA_WRITE, posted,
				    bb + slot * WLEN, WLEN, mb->lkey,
				    ba + slot * WLEN, ma->rkey,
				    IBV_SEND_SIGNALED);
			posted++;
		}
		n = dt_cq_poll(&p.sb, wc, 64);
		for (int i = 0; i < n; i++) {
			CHECK_EQ(wc[i].status, IBV_WC_SUCCESS);
			CHECK_EQ(wc[i].wr_id, done + (uint64_t)i);
		}
		done += (uint64_t)n;
	}
	CHECK_EQ(droce_impair_stats(droce_dev_impairer(env.dev[0].ctx), &st),
		 0);
	printf("posted %" PRIu64 ", completed %" PRIu64 "; A's receive holds %"
	       PRIu64 " frames (delayed %" PRIu64 ", released %" PRIu64 ")\n",
	       posted, done, st.rx.held, st.rx.delayed, st.rx.released);
	CHECK(done > 0);
	CHECK(st.rx.held > 0);		/* B's frames in A's hands */

	/* What landed: each slot whole, of one WRITE (or none yet). */
	for (uint32_t s = 0; s < NBUF / WLEN; s++)
		for (uint32_t k = 1; k < WLEN; k++)
			CHECK_EQ(ba[s * WLEN + k], ba[s * WLEN]);

	dt_rc_pair_close(&p);
	CHECK_OK(ibv_dereg_mr(ma));
	CHECK_OK(ibv_dereg_mr(mb));
	dt_fini(&env);
	free(ba);
	free(bb);
	printf("test_teardown_inflight: %s\n", dt_failures ? "FAILED" : "PASSED");
	return dt_failures ? 1 : 0;
}
