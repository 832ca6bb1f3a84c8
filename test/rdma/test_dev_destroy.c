/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * droce_dev_destroy: one device destroyed while the others run on.
 * Refused (EBUSY) while a context or a PD holds it, ENODEV for an index
 * that names no device; once destroyed it is gone from the count and the
 * device list, and the devices left keep their indices and still carry
 * RDMA WRITEs and READs (checked byte for byte, every CQE field) on the
 * engine that served it too; the next devices take the lowest free
 * indices and carry traffic there (an index is in an engine's doorbell
 * tokens and timer cells). A ring pair whose two devices are destroyed
 * gives back its ports, rings and pools at once, while other devices
 * run: 20 pairs made, used and destroyed leave the ethdev port count and
 * the DPDK heap as they were (and never run out of ring pair slots); a
 * device destroyed while its frames wait in its peer's ring leaves them
 * whole (its pool waits for the pair).
 */
#include <stdio.h>
#include <string.h>

#include <rte_common.h>
#include <rte_ethdev.h>

#include "droce.h"
#include "droce_test.h"
#include "dt_heap.h"

#define LEN 4096

/* The listed device of that name (NULL: none), from a fresh list. */
static struct ibv_device *find_dev(struct ibv_device ***list, const char *name)
{
	int n;

	if (*list != NULL)
		ibv_free_device_list(*list);
	*list = ibv_get_device_list(&n);
	CHECK_PTR(*list);
	CHECK_EQ(n, droce_dev_count());
	for (int i = 0; i < n; i++)
		if (strcmp(ibv_get_device_name((*list)[i]), name) == 0)
			return (*list)[i];
	return NULL;
}

/* Open the device of that name, whose index must be `index`. */
static void open_named(struct dt_dev *d, struct ibv_device ***list,
		       const char *name, int index)
{
	struct ibv_device *dev = find_dev(list, name);
	char want[IBV_SYSFS_NAME_MAX];

	CHECK_PTR(dev);
	snprintf(want, sizeof(want), "uverbs-droce%d", index);
	if (strcmp(dev->dev_name, want) != 0)
		DT_FAIL_(1, "%s is %s, expected index %d", name, dev->dev_name,
			 index);
	memset(d, 0, sizeof(*d));
	dt_dev_open(d, dev);
}

/* A ring pair of the names given (b's devargs with `extra_b` too), both
 * opened, at indices ia and ib; each pair on addresses of its own. */
static void pair_open(struct ibv_device ***list, struct dt_dev *a,
		      const char *na, int ia, struct dt_dev *b, const char *nb,
		      int ib, const char *extra_b)
{
	static unsigned int host = 3;	/* (dt_init's pair has .1 and .2) */
	char da[96], db[160];

	snprintf(da, sizeof(da), "ip=198.18.3.%u,name=%s", host, na);
	snprintf(db, sizeof(db), "ip=198.18.3.%u,name=%s%s", host + 1, nb,
		 extra_b);
	host = host < 250 ? host + 2 : 3;
	CHECK_OK(droce_create_ring_pair(da, db));
	open_named(a, list, na, ia);
	open_named(b, list, nb, ib);
}

static void close_dev(struct dt_dev *d)
{
	CHECK_OK(ibv_dealloc_pd(d->pd));
	d->pd = NULL;
	CHECK_OK(ibv_close_device(d->ctx));
	d->ctx = NULL;
}

/* An RC pair between x and y: a WRITE of random bytes x to y and a READ
 * of other random bytes y to x, each checked. */
static void traffic(struct dt_dev *x, struct dt_dev *y, const char *what)
{
	static uint8_t bx[LEN], by[LEN];
	struct dt_conn_cfg cfg;
	struct dt_rc_pair p;
	struct ibv_mr *mx, *my;

	dt_conn_cfg_default(&cfg);
	dt_rc_pair_open(&p, x, y, 16, NULL, &cfg, NULL,
			(uint32_t)dt_rand_range(0, 0xffffff),
			(uint32_t)dt_rand_range(0, 0xffffff));
	mx = dt_reg_mr(x->pd, bx, LEN, DT_ACCESS_ALL);
	my = dt_reg_mr(y->pd, by, LEN, DT_ACCESS_ALL);
	CHECK_PTR(mx);
	CHECK_PTR(my);
	dt_fill_random(bx, LEN);
	dt_fill_random(by, LEN);
	dt_rdma_checked(&p, IBV_WR_RDMA_WRITE, 1, bx, LEN, mx->lkey, by,
			my->rkey, what);
	dt_fill_random(by, LEN);
	dt_rdma_checked(&p, IBV_WR_RDMA_READ, 2, bx, LEN, mx->lkey, by,
			my->rkey, what);
	CHECK_OK(ibv_dereg_mr(mx));
	CHECK_OK(ibv_dereg_mr(my));
	dt_rc_pair_close(&p);
}

/*
 * A device destroyed with its frames still on the way: x sends WRITEs to
 * y, whose link impairer holds what arrives for 300 ms; meanwhile x's QP,
 * CQ, MR, PD and context go, and so does x. Only then does y take the
 * frames, mbufs of x's pool, which must still be there (freed with x,
 * they were zeroed memory: a NULL buffer). y places every one.
 */
static void frames_outlive_sender(struct ibv_device ***list)
{
	enum { N = 32 };
	static uint8_t bx[N * 256], by[N * 256];
	struct dt_dev x, y;
	struct dt_conn_cfg cfg;
	struct dt_qp_cfg qc;
	struct droce_dev_stats st;
	struct ibv_cq *cx, *cy;
	struct ibv_qp *qx, *qy;
	struct ibv_mr *mx, *my;

	pair_open(list, &x, "dd_s", 5, &y, "dd_r", 6,
		  ",impair=rx_delay_us:300000");
	cx = ibv_create_cq(x.ctx, 2 * N, NULL, NULL, 0);
	cy = ibv_create_cq(y.ctx, 2 * N, NULL, NULL, 0);
	CHECK_PTR(cx);
	CHECK_PTR(cy);
	dt_qp_cfg_default(&qc);
	qc.max_send_wr = 2 * N;
	qx = dt_qp_create(&x, cx, cx, &qc, NULL);
	qy = dt_qp_create(&y, cy, cy, &qc, NULL);
	CHECK_PTR(qx);
	CHECK_PTR(qy);
	dt_conn_cfg_default(&cfg);
	dt_connect(&x, qx, 100, &y, qy, 200, &cfg);
	mx = dt_reg_mr(x.pd, bx, sizeof(bx), DT_ACCESS_ALL);
	my = dt_reg_mr(y.pd, by, sizeof(by), DT_ACCESS_ALL);
	CHECK_PTR(mx);
	CHECK_PTR(my);
	dt_fill_random(bx, sizeof(bx));
	memset(by, 0, sizeof(by));
	for (int i = 0; i < N; i++)
		dt_post_one(qx, IBV_WR_RDMA_WRITE, (uint64_t)i, bx + i * 256,
			    256, mx->lkey, by + i * 256, my->rkey, 0);
	/* sent, and held on y's side */
	for (double t0 = dt_now(); dt_now() - t0 < 0.2;) {
		CHECK_OK(droce_dev_stats_get(x.ctx, &st));
		if (st.tx_pkts >= N)
			break;
	}
	CHECK_CMP(st.tx_pkts, >=, (uint64_t)N);
	CHECK_OK(droce_dev_stats_get(y.ctx, &st));
	CHECK_EQ(st.rx_pkts, 0);
	CHECK_OK(ibv_destroy_qp(qx));
	CHECK_OK(ibv_destroy_cq(cx));
	CHECK_OK(ibv_dereg_mr(mx));
	close_dev(&x);
	CHECK_OK(droce_dev_destroy(5));
	/* then y's delay ends: every WRITE lands, from a device gone */
	for (double t0 = dt_now(); dt_now() - t0 < DT_WAIT_S;) {
		CHECK_OK(droce_dev_stats_get(y.ctx, &st));
		if (st.rx_pkts >= N)
			break;
	}
	CHECK_EQ(st.rx_pkts, (uint64_t)N);
	CHECK(memcmp(bx, by, sizeof(bx)) == 0);
	CHECK_OK(ibv_destroy_qp(qy));
	CHECK_OK(ibv_destroy_cq(cy));
	CHECK_OK(ibv_dereg_mr(my));
	close_dev(&y);
	CHECK_OK(droce_dev_destroy(6));
}

int main(void)
{
	struct ibv_device **list = NULL;
	struct dt_env env;
	struct dt_dev c, d, e, f, g, h;
	size_t heap0 = 0;
	int ports0 = 0;

	dt_watchdog(120);
	/* devices 0 and 1, one engine lcore serving every device */
	dt_init(&env, "test_dev_destroy", "ip=198.18.3.1,name=dd_a",
		"ip=198.18.3.2,name=dd_b");
	pair_open(&list, &c, "dd_c", 2, &d, "dd_d", 3, "");
	CHECK_EQ(droce_dev_count(), 4);
	ports0 = dt_nb_ports();
	traffic(&c, &d, "2 -> 3, all four devices there");

	/* Not while a context or a PD holds it; no such index. */
	CHECK_RET(droce_dev_destroy(0), -EBUSY);
	CHECK_OK(ibv_dealloc_pd(env.dev[0].pd));
	env.dev[0].pd = NULL;
	CHECK_RET(droce_dev_destroy(0), -EBUSY);
	CHECK_OK(ibv_close_device(env.dev[0].ctx));
	env.dev[0].ctx = NULL;
	CHECK_RET(droce_dev_destroy(-1), -ENODEV);
	CHECK_RET(droce_dev_destroy(4), -ENODEV);
	CHECK_RET(droce_dev_destroy(16), -ENODEV);
	CHECK_RET(droce_dev_destroy(1 << 30), -ENODEV);
	CHECK_EQ(droce_dev_count(), 4);

	/* Device 0 goes; the others keep their indices and carry on. */
	CHECK_OK(droce_dev_destroy(0));
	CHECK_RET(droce_dev_destroy(0), -ENODEV);
	CHECK_EQ(droce_dev_count(), 3);
	CHECK_EQ(dt_nb_ports(), ports0 - 1);
	CHECK(find_dev(&list, "dd_a") == NULL);
	CHECK(find_dev(&list, "dd_b") != NULL);
	traffic(&c, &d, "2 -> 3, device 0 destroyed");
	traffic(&d, &c, "3 -> 2, device 0 destroyed");

	/* Device 1 too: its pair gives back its ports (and rings, pools). */
	CHECK_RET(droce_dev_destroy(1), -EBUSY);
	close_dev(&env.dev[1]);
	CHECK_OK(droce_dev_destroy(1));
	CHECK_EQ(droce_dev_count(), 2);
	CHECK_EQ(dt_nb_ports(), ports0 - 2);

	/* A new pair takes indices 0 and 1, and both pairs carry traffic. */
	pair_open(&list, &e, "dd_e", 0, &f, "dd_f", 1, "");
	traffic(&e, &f, "0 -> 1, indices given again");
	traffic(&c, &d, "2 -> 3, beside them");

	/* The highest index goes; the next pair takes it and the one after. */
	close_dev(&d);
	CHECK_OK(droce_dev_destroy(3));
	CHECK_EQ(droce_dev_count(), 3);
	pair_open(&list, &g, "dd_g", 3, &h, "dd_h", 4, "");
	traffic(&g, &h, "3 -> 4");
	traffic(&f, &e, "1 -> 0, beside them");

	/* Pairs made, used and destroyed while the others run: nothing of
	 * them stays (the first cycles set the heap's base: caches). */
	for (int i = 0; i < 20; i++) {
		struct dt_dev x, y;

		/* (the lowest free indices: 0 to 4 are e, f, c, g, h) */
		pair_open(&list, &x, "dd_x", 5, &y, "dd_y", 6, "");
		traffic(&x, &y, "a pair made to go");
		close_dev(&x);
		close_dev(&y);
		ibv_free_device_list(list);
		list = NULL;
		/* (the lower first: its slot stays empty a while) */
		CHECK_OK(droce_dev_destroy(5));
		CHECK_OK(droce_dev_destroy(6));
		CHECK_EQ(droce_dev_count(), 5);
		if (i == 2) {
			heap0 = dt_heap_bytes();
			ports0 = dt_nb_ports();
		}
		if (i > 2) {
			CHECK_EQ(dt_nb_ports(), ports0);
			if (dt_heap_bytes() > heap0)
				DT_FAIL_(1, "cycle %d: the heap holds %zu bytes more than after cycle 2",
					 i, dt_heap_bytes() - heap0);
		}
	}
	frames_outlive_sender(&list);
	CHECK_EQ(dt_nb_ports(), ports0);
	printf("20 pairs made, used and destroyed: %d devices, %d ports, heap %zu bytes\n",
	       droce_dev_count(), dt_nb_ports(), dt_heap_bytes());
	traffic(&e, &f, "0 -> 1, after them");
	traffic(&g, &h, "3 -> 4, after them");

	close_dev(&e);
	close_dev(&f);
	close_dev(&g);
	close_dev(&h);
	close_dev(&c);
	if (list != NULL)
		ibv_free_device_list(list);
	return dt_finish(&env);
}
