/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Verbs resources of one end: device context, PD, one buffer and MR for
 * all QPs (or an MR per QP), the CQs, the QPs and their INIT -> RTR ->
 * RTS transitions with perftest's attributes (RC; timeout -u, retry 7,
 * RNR retry 7, RNR timer 12, outstanding reads as exchanged).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#include "droce.h"
#include "perf.h"

enum ibv_mtu perf_mtu_enum(int bytes)
{
	switch (bytes) {
	case 256: return IBV_MTU_256;
	case 512: return IBV_MTU_512;
	case 1024: return IBV_MTU_1024;
	case 2048: return IBV_MTU_2048;
	case 4096: return IBV_MTU_4096;
	default: return 0;
	}
}

int perf_mtu_bytes(enum ibv_mtu m)
{
	return m >= IBV_MTU_256 && m <= IBV_MTU_4096 ? 128 << m : 0;
}

uint8_t *side_src(const struct perf_side *s, int q)
{
	if (opt.mr_per_qp)
		return s->buf + (size_t)(2 * q) * s->slot;
	return s->buf + (size_t)q * s->slot;
}

uint8_t *side_dst(const struct perf_side *s, int q)
{
	if (opt.mr_per_qp)
		return s->buf + (size_t)(2 * q + 1) * s->slot;
	return s->buf + (size_t)(s->nqps + q) * s->slot;
}

uint32_t side_lkey(const struct perf_side *s, int q)
{
	return s->mrs ? s->mrs[q]->lkey : s->mr->lkey;
}

uint32_t side_rkey(const struct perf_side *s, int q)
{
	return s->mrs ? s->mrs[q]->rkey : s->mr->rkey;
}

/* The index of this end's QP numbered qpn, or -1. Only receives from an
 * SRQ need it (their wr_id names the slot, not the QP): a binary search
 * of the QPs sorted by number. */
int side_qp_index(const struct perf_side *s, uint32_t qpn)
{
	int lo = 0, hi = s->nqps - 1;

	while (lo <= hi) {
		int mid = (lo + hi) / 2;
		uint32_t m = s->qp[s->qp_by_num[mid]]->qp_num;

		if (m == qpn)
			return s->qp_by_num[mid];
		if (m < qpn)
			lo = mid + 1;
		else
			hi = mid - 1;
	}
	return -1;
}

static const struct perf_side *sort_side;

static int by_qpn(const void *a, const void *b)
{
	uint32_t x = sort_side->qp[*(const int *)a]->qp_num;
	uint32_t y = sort_side->qp[*(const int *)b]->qp_num;

	return x < y ? -1 : x > y;
}

void side_drive(struct perf_side *s)
{
	if (s->app_mode) {
		uint64_t t0 = opt.cycles ? perf_tsc() : 0;

		droce_poll(s->ctx);
		if (opt.cycles) {
			perf_cyc.drive += perf_tsc() - t0;
			perf_cyc.drives++;
		}
	}
}

static uint32_t cq_size(uint64_t want, const struct ibv_device_attr *da)
{
	uint64_t max = da->max_cqe > 0 ? (uint64_t)da->max_cqe : 65535;

	if (want < 16)
		want = 16;
	return (uint32_t)(want > max ? max : want);
}

/* The ibv_wr_* builders a test's QPs need (perftest's send_ops_flags). */
static uint64_t send_ops_of(enum perf_verb v)
{
	switch (v) {
	case V_SEND:
		return IBV_QP_EX_WITH_SEND;
	case V_WRITE:
		return IBV_QP_EX_WITH_RDMA_WRITE;
	case V_READ:
		return IBV_QP_EX_WITH_RDMA_READ;
	case V_ATOMIC:
		return IBV_QP_EX_WITH_ATOMIC_FETCH_AND_ADD |
		       IBV_QP_EX_WITH_ATOMIC_CMP_AND_SWP;
	}
	return 0;
}

/* The default huge page size (/proc/meminfo), in bytes; 0 if unknown. */
static size_t huge_page_size(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	size_t kb = 0;

	if (f == NULL)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Hugepagesize: %zu kB", &kb) == 1)
			break;
	fclose(f);
	return kb * 1024;
}

/*
 * The side's buffer: 4 KiB pages (perftest's memalign), or with
 * --use_hugepages anonymous huge pages of the default size (perftest uses
 * SysV SHM_HUGETLB segments; the pages are what matters), so that
 * thousands of QPs' slots need a TLB entry per huge page, not per QP.
 */
static uint8_t *buf_alloc(struct perf_side *s)
{
	size_t hp;
	void *p;

	if (!opt.use_hugepages) {
		p = aligned_alloc(4096, s->buf_len);
		if (p == NULL)
			PERF_ERR("Couldn't allocate %zu bytes of buffer\n",
				 s->buf_len);
		return p;
	}
	hp = huge_page_size();
	if (hp == 0) {
		PERF_ERR("Couldn't read the huge page size\n");
		return NULL;
	}
	s->buf_map = (s->buf_len + hp - 1) / hp * hp;
	p = mmap(NULL, s->buf_map, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS | MAP_HUGETLB, -1, 0);
	if (p == MAP_FAILED) {
		PERF_ERR("Couldn't allocate %zu bytes of huge pages: %s\n",
			 s->buf_map, strerror(errno));
		s->buf_map = 0;
		return NULL;
	}
	return p;
}


/* A CQ of cqe entries on the side's channel; with --no_lock made in its
 * parent domain (ibv_create_cq_ex), as perftest makes it. */
static struct ibv_cq *make_cq(struct perf_side *s, int cqe)
{
	struct ibv_cq_init_attr_ex ca = {
		.cqe = (uint32_t)cqe,
		.channel = s->ch,
		.comp_vector = (uint32_t)opt.comp_vector,
		.comp_mask = IBV_CQ_INIT_ATTR_MASK_PD,
		.parent_domain = s->pad,
	};
	struct ibv_cq_ex *cq;

	if (s->pad == s->pd)
		return ibv_create_cq(s->ctx, cqe, NULL, s->ch, opt.comp_vector);
	cq = ibv_create_cq_ex(s->ctx, &ca);
	return cq ? ibv_cq_ex_to_cq(cq) : NULL;
}

int side_open(struct perf_side *s, struct ibv_device *dev, bool client,
	      uint64_t max_size, uint64_t cycle_buffer)
{
	struct ibv_device_attr da;
	struct ibv_port_attr pa;
	/* UC carries no READ or atomics: a QP asking for them is refused
	 * (UD QPs take no access flags; the MR is the same) */
	int access = opt.conn != C_RC ?
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE :
		     IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE |
		     IBV_ACCESS_REMOTE_READ | IBV_ACCESS_REMOTE_ATOMIC;
	int n = opt.nqps;

	s->is_client = client;
	s->name = client ? "client" : "server";
	s->nqps = n;
	s->ctx = ibv_open_device(dev);
	if (s->ctx == NULL) {
		PERF_ERR("Couldn't get context for %s\n", ibv_get_device_name(dev));
		return -1;
	}
	if (ibv_query_device(s->ctx, &da) || ibv_query_port(s->ctx,
			     (uint8_t)opt.ib_port, &pa)) {
		PERF_ERR("Couldn't query device/port %d\n", opt.ib_port);
		return -1;
	}
	if (n > da.max_qp) {
		PERF_ERR("%d QPs requested, the device has %d at most\n", n,
			 da.max_qp);
		return -1;
	}
	s->port_mtu = pa.active_mtu;
	s->gid_index = opt.gid_index;
	if (ibv_query_gid(s->ctx, (uint8_t)opt.ib_port, s->gid_index, &s->gid)) {
		PERF_ERR("Couldn't read sgid of index %d\n", s->gid_index);
		return -1;
	}
	/* What we accept as responder: the device's limit, or -o. */
	s->out_reads = da.max_qp_rd_atom;
	if (opt.out_reads > 0 && opt.out_reads < s->out_reads)
		s->out_reads = opt.out_reads;
	if (opt.verb != V_READ && opt.verb != V_ATOMIC)
		s->out_reads = 1;	/* perftest: 1 unless READ/atomic */
	s->pd = ibv_alloc_pd(s->ctx);
	if (s->pd == NULL) {
		PERF_ERR("Couldn't allocate PD\n");
		return -1;
	}
	s->pad = s->pd;
	if (opt.no_lock) {
		/* perftest's --no_lock: a thread domain, and a parent domain
		 * with it that the QPs, CQs, SRQ and MRs are made on */
		struct ibv_td_init_attr ta = { .comp_mask = 0 };
		struct ibv_parent_domain_init_attr pa = { .pd = s->pd };

		s->td = ibv_alloc_td(s->ctx, &ta);
		if (s->td == NULL) {
			PERF_ERR("Couldn't allocate TD\n");
			return -1;
		}
		pa.td = s->td;
		s->pad = ibv_alloc_parent_domain(s->ctx, &pa);
		if (s->pad == NULL) {
			PERF_ERR("Couldn't allocate PAD\n");
			return -1;
		}
	}

	/*
	 * One buffer: a source and a target slot per QP. A perftest peer
	 * moves its remote address through a "cycle buffer" (the larger page
	 * size of the two hosts) for messages up to half of it, so a slot is
	 * at least that big, as perftest's own (BUFF_SIZE).
	 */
	if (max_size < cycle_buffer)
		max_size = cycle_buffer;
	s->slot = (size_t)(max_size < 64 ? 64 : max_size) + perf_recv_off();
	s->slot = (s->slot + 63) & ~(size_t)63;
	s->buf_len = 2 * (size_t)n * s->slot;
	s->buf_len = (s->buf_len + 4095) & ~(size_t)4095;
	s->buf = buf_alloc(s);
	if (s->buf == NULL)
		return -1;
	/* Touch every page now, not during the measurement. */
	for (size_t i = 0; i < s->buf_len; i++)
		s->buf[i] = (uint8_t)(i * 7 + (client ? 1 : 2));
	if (opt.mr_per_qp) {
		/* perftest's create_single_mr per QP; side_close deregisters
		 * up to the first NULL */
		s->mrs = calloc((size_t)n, sizeof(*s->mrs));
		if (s->mrs == NULL) {
			PERF_ERR("Couldn't allocate MR array\n");
			return -1;
		}
		for (int i = 0; i < n; i++) {
			s->mrs[i] = ibv_reg_mr(s->pad, side_src(s, i),
					       2 * s->slot, access);
			if (s->mrs[i] == NULL) {
				PERF_ERR("Couldn't allocate MR %d of %d: %s\n",
					 i, n, strerror(errno));
				return -1;
			}
		}
	} else {
		s->mr = ibv_reg_mr(s->pad, s->buf, s->buf_len, access);
		if (s->mr == NULL) {
			PERF_ERR("Couldn't allocate MR\n");
			return -1;
		}
	}

	{
		uint64_t sdepth = side_sends(s) ? (uint64_t)n * opt.tx_depth : 16;
		uint64_t rdepth = side_recvs(s) ? (uint64_t)n * opt.rx_depth : 16;

		if (opt.use_event) {
			s->ch = ibv_create_comp_channel(s->ctx);
			if (s->ch == NULL) {
				PERF_ERR("Couldn't create completion channel\n");
				return -1;
			}
		}
		s->scq = make_cq(s, (int)cq_size(sdepth, &da));
		if (s->scq == NULL) {
			PERF_ERR("Couldn't create CQ: %s\n", strerror(errno));
			return -1;
		}
		if (opt.verb == V_SEND) {
			s->rcq = make_cq(s, (int)cq_size(rdepth, &da));
			if (s->rcq == NULL) {
				PERF_ERR("Couldn't create CQ: %s\n", strerror(errno));
				return -1;
			}
		} else {
			s->rcq = s->scq;
		}
		/* armed once here, then again at each event (run.c) */
		if (opt.use_event && (ibv_req_notify_cq(s->scq, 0) ||
				      (s->rcq != s->scq &&
				       ibv_req_notify_cq(s->rcq, 0)))) {
			PERF_ERR("Couldn't request CQ notification\n");
			return -1;
		}
	}

	s->qp = calloc((size_t)n, sizeof(*s->qp));
	s->my = calloc((size_t)n, sizeof(*s->my));
	s->rem = calloc((size_t)n, sizeof(*s->rem));
	s->st = calloc((size_t)n, sizeof(*s->st));
	/* an end that sends and receives SENDs counts each apart */
	s->rst = side_sends(s) && side_recvs(s) && opt.tst == T_BW ?
		 calloc((size_t)n, sizeof(*s->rst)) : s->st;
	s->ah = calloc((size_t)n, sizeof(*s->ah));
	s->wr = calloc((size_t)n * (size_t)opt.post_list, sizeof(*s->wr));
	s->sge = calloc((size_t)n * (size_t)opt.post_list, sizeof(*s->sge));
	if (!s->qp || !s->my || !s->rem || !s->st || !s->rst || !s->wr ||
	    !s->sge || !s->ah) {
		PERF_ERR("out of memory\n");
		return -1;
	}
	if (!opt.old_post_send) {
		s->qpx = calloc((size_t)n, sizeof(*s->qpx));
		if (!s->qpx) {
			PERF_ERR("out of memory\n");
			return -1;
		}
	}
	if (opt.use_srq && side_recvs(s)) {
		/* perftest: rx_depth is the SRQ's size, shared by the QPs */
		struct ibv_srq_init_attr sa = {
			.attr = { .max_wr = (uint32_t)opt.rx_depth, .max_sge = 1 },
		};

		s->srq = ibv_create_srq(s->pad, &sa);
		if (s->srq == NULL) {
			PERF_ERR("Couldn't create SRQ: %s\n", strerror(errno));
			return -1;
		}
	}
	s->max_inline = 0;
	for (int i = 0; i < n; i++) {
		struct ibv_qp_init_attr_ex ia;
		struct ibv_qp_attr a;

		memset(&ia, 0, sizeof(ia));
		ia.send_cq = s->scq;
		ia.recv_cq = s->rcq;
		ia.qp_type = opt.conn == C_UC ? IBV_QPT_UC :
			     opt.conn == C_UD ? IBV_QPT_UD : IBV_QPT_RC;
		ia.cap.max_send_wr = side_sends(s) ? (uint32_t)opt.tx_depth : 1;
		ia.cap.max_recv_wr = side_recvs(s) ? (uint32_t)opt.rx_depth : 1;
		ia.cap.max_send_sge = 1;
		ia.cap.max_recv_sge = 1;
		if (s->srq) {
			ia.srq = s->srq;
			ia.cap.max_recv_wr = 0;
			ia.cap.max_recv_sge = 0;
		}
		if (side_sends(s) && (opt.verb == V_WRITE || opt.verb == V_SEND))
			ia.cap.max_inline_data = (uint32_t)opt.inline_size;
		ia.comp_mask = IBV_QP_INIT_ATTR_PD;
		ia.pd = s->pad;
		if (!opt.old_post_send) {
			/* perftest's default flow: the builders for this test */
			ia.comp_mask |= IBV_QP_INIT_ATTR_SEND_OPS_FLAGS;
			ia.send_ops_flags = send_ops_of(opt.verb);
		}
		s->qp[i] = ibv_create_qp_ex(s->ctx, &ia);
		if (s->qp[i] == NULL) {
			PERF_ERR("Couldn't create QP %d of %d: %s\n", i, n,
				 strerror(errno));
			return -1;
		}
		if (s->qpx)
			s->qpx[i] = ibv_qp_to_qp_ex(s->qp[i]);
		if (i == 0)
			s->max_inline = (int)ia.cap.max_inline_data;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_INIT;
		a.pkey_index = 0;
		a.port_num = (uint8_t)opt.ib_port;
		a.qp_access_flags = access;
		a.qkey = PERF_UD_QKEY;
		if (ibv_modify_qp(s->qp[i], &a, IBV_QP_STATE | IBV_QP_PKEY_INDEX |
				  IBV_QP_PORT | (opt.conn == C_UD ? IBV_QP_QKEY :
						 IBV_QP_ACCESS_FLAGS))) {
			PERF_ERR("Failed to modify QP %d to INIT\n", i);
			return -1;
		}
	}
	if (s->srq) {
		s->qp_by_num = calloc((size_t)n, sizeof(*s->qp_by_num));
		if (s->qp_by_num == NULL) {
			PERF_ERR("out of memory\n");
			return -1;
		}
		for (int i = 0; i < n; i++)
			s->qp_by_num[i] = i;
		sort_side = s;
		qsort(s->qp_by_num, (size_t)n, sizeof(*s->qp_by_num), by_qpn);
	}
	return 0;
}

void side_fill_dest(struct perf_side *s)
{
	for (int i = 0; i < s->nqps; i++) {
		struct perf_dest *d = &s->my[i];

		d->lid = 0;
		d->out_reads = (uint32_t)s->out_reads;
		d->qpn = s->qp[i]->qp_num;
		d->psn = (uint32_t)lrand48() & 0xffffff;
		d->rkey = side_rkey(s, i);
		d->vaddr = (uintptr_t)side_dst(s, i);
		d->gid = s->gid;
		d->srqn = 0;
	}
}

int side_connect(struct perf_side *s)
{
	for (int i = 0; i < s->nqps; i++) {
		const struct perf_dest *r = &s->rem[i];
		struct ibv_qp_attr a;
		int rd = (int)r->out_reads;

		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTR;
		a.path_mtu = perf_mtu_enum(opt.mtu);
		a.dest_qp_num = r->qpn;
		a.rq_psn = r->psn;
		a.max_dest_rd_atomic = (uint8_t)s->my[i].out_reads;
		a.min_rnr_timer = PERF_MIN_RNR_TIMER;
		a.ah_attr.is_global = 1;
		a.ah_attr.grh.dgid = r->gid;
		a.ah_attr.grh.sgid_index = (uint8_t)s->gid_index;
		a.ah_attr.grh.hop_limit = 0xff;
		/* RoCEv2: the traffic class is the IP header's DSCP and ECN
		 * bits; a flow label picks the UDP source port
		 * (ibv_flow_label_to_udp_sport), else the QP number does */
		a.ah_attr.grh.traffic_class = (uint8_t)opt.tclass;
		a.ah_attr.grh.flow_label = opt.flow_label;
		a.ah_attr.sl = (uint8_t)opt.sl;
		a.ah_attr.port_num = (uint8_t)opt.ib_port;
		if (opt.conn == C_UD) {
			/* the peer's address goes into each WR, through an
			 * address handle; the QP itself has no peer */
			s->ah[i] = ibv_create_ah(s->pd, &a.ah_attr);
			if (s->ah[i] == NULL) {
				PERF_ERR("Failed to create AH for UD\n");
				return -1;
			}
		}
		/* UC: no responder resources, no RNR; UD: the state alone
		 * (ibv_modify_qp(3)) */
		if (ibv_modify_qp(s->qp[i], &a, IBV_QP_STATE |
				  (opt.conn == C_UD ? 0 :
				   IBV_QP_AV | IBV_QP_PATH_MTU |
				   IBV_QP_DEST_QPN | IBV_QP_RQ_PSN) |
				  (opt.conn != C_RC ? 0 :
				   IBV_QP_MAX_DEST_RD_ATOMIC |
				   IBV_QP_MIN_RNR_TIMER))) {
			PERF_ERR("Failed to modify QP %d to RTR\n", s->qp[i]->qp_num);
			return -1;
		}
		/* The peer may allow more reads in flight than we can have:
		 * keep to our own limit (rxe offers 128, droce 16). */
		if (rd < 1)
			rd = 1;
		if (rd > s->out_reads && (opt.verb == V_READ || opt.verb == V_ATOMIC))
			rd = s->out_reads;
		if (opt.verb != V_READ && opt.verb != V_ATOMIC)
			rd = 1;
		memset(&a, 0, sizeof(a));
		a.qp_state = IBV_QPS_RTS;
		a.sq_psn = s->my[i].psn;
		a.timeout = (uint8_t)opt.qp_timeout;
		a.retry_cnt = 7;
		a.rnr_retry = 7;
		a.max_rd_atomic = (uint8_t)rd;
		/* PP: perftest's conversion of MB/sec to kbps */
		if (opt.rate_type == RL_PP)
			a.rate_limit = opt.rate_limit * 8 * 1024 >= UINT32_MAX ?
				       UINT32_MAX :
				       (uint32_t)(opt.rate_limit * 8 * 1024);
		/* UC, UD: no ACKs, so no timeout, retries or reads */
		if (ibv_modify_qp(s->qp[i], &a, IBV_QP_STATE | IBV_QP_SQ_PSN |
				  (opt.conn != C_RC ? 0 :
				   IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT |
				   IBV_QP_RNR_RETRY | IBV_QP_MAX_QP_RD_ATOMIC) |
				  (opt.rate_type == RL_PP ? IBV_QP_RATE_LIMIT : 0))) {
			PERF_ERR("Failed to modify QP to RTS\n");
			return -1;
		}
		/* a burst or a packet size named: the extended verb */
		if (opt.rate_type == RL_PP &&
		    (opt.burst_size > 0 || opt.typical_pkt_size > 0)) {
			struct ibv_qp_rate_limit_attr rl = {
				.rate_limit = a.rate_limit,
				.max_burst_sz = (uint64_t)opt.burst_size *
						opt.size > (16u << 20) ? 16u << 20 :
						(uint32_t)(opt.burst_size * opt.size),
				.typical_pkt_sz = (uint16_t)opt.typical_pkt_size,
			};
			int e = ibv_modify_qp_rate_limit(s->qp[i], &rl);

			if (e) {
				PERF_ERR("Failed to set the QP's rate limit: %s\n",
					 strerror(e));
				return -1;
			}
		}
	}
	return 0;
}

void side_close(struct perf_side *s)
{
	if (s->qp)
		for (int i = 0; i < s->nqps; i++)
			if (s->qp[i])
				ibv_destroy_qp(s->qp[i]);
	if (s->ah)
		for (int i = 0; i < s->nqps; i++)
			if (s->ah[i])
				ibv_destroy_ah(s->ah[i]);
	if (s->srq)
		ibv_destroy_srq(s->srq);
	if (s->rcq && s->rcq != s->scq)
		ibv_destroy_cq(s->rcq);
	if (s->scq)
		ibv_destroy_cq(s->scq);
	if (s->ch)
		ibv_destroy_comp_channel(s->ch);
	if (s->mr)
		ibv_dereg_mr(s->mr);
	for (int i = 0; s->mrs && i < s->nqps && s->mrs[i]; i++)
		ibv_dereg_mr(s->mrs[i]);
	free(s->mrs);
	if (s->pad && s->pad != s->pd)
		ibv_dealloc_pd(s->pad);
	if (s->td)
		ibv_dealloc_td(s->td);
	if (s->pd)
		ibv_dealloc_pd(s->pd);
	if (s->ctx)
		ibv_close_device(s->ctx);
	if (s->buf_map)
		munmap(s->buf, s->buf_map);
	else
		free(s->buf);
	free(s->qp);
	free(s->qp_by_num);
	free(s->qpx);
	free(s->ah);
	free(s->my);
	free(s->rem);
	if (s->rst != s->st)
		free(s->rst);
	free(s->st);
	free(s->wr);
	free(s->sge);
	free(s->tposted);
	free(s->tp);
	free(s->tc);
	memset(s, 0, sizeof(*s));
}
