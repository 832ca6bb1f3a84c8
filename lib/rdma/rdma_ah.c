/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Address handles for UD. RoCE addresses by GID: an AH must carry a GRH,
 * and droce speaks RoCEv2 over IPv4, so the destination GID is an
 * IPv4-mapped one. The post path copies what the engine needs into the
 * WQE's address vector; the engine never dereferences the AH.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "droce_int.h"

static bool ah_attr_ok(const struct ibv_ah_attr *a)
{
	static const uint8_t v4[12] = { 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff };
	static const uint8_t ll[8] = { 0xfe, 0x80 };

	if (!a->is_global || a->port_num != 1 || a->grh.sgid_index > 1)
		return false;
	/* GID 1 (IPv4) to IPv4-mapped; GID 0 (link-local) to link-local. */
	return a->grh.sgid_index == 1 ?
	       memcmp(a->grh.dgid.raw, v4, sizeof(v4)) == 0 :
	       memcmp(a->grh.dgid.raw, ll, sizeof(ll)) == 0;
}

struct ibv_ah *ibv_create_ah(struct ibv_pd *pd, struct ibv_ah_attr *attr)
{
	struct droce_ah *ah;

	if (pd == NULL || attr == NULL || !ah_attr_ok(attr)) {
		errno = EINVAL;
		return NULL;
	}
	ah = calloc(1, sizeof(*ah));
	if (ah == NULL) {
		errno = ENOMEM;
		return NULL;
	}
	ah->attr = *attr;
	ah->ibv.context = pd->context;
	ah->ibv.pd = pd;
	/* The PD cannot go while an AH is on it (EBUSY), as the kernel's
	 * ib_dealloc_pd_user counts AHs among a PD's users. */
	__atomic_fetch_add(&droce_pd_obj(pd)->refcnt, 1, __ATOMIC_RELAXED);
	droce_obj_add(pd->context, &ah->obj, DROCE_OBJ_AH);
	return &ah->ibv;
}

int ibv_destroy_ah(struct ibv_ah *ah)
{
	if (ah == NULL)
		return EINVAL;
	__atomic_fetch_sub(&droce_pd_obj(ah->pd)->refcnt, 1, __ATOMIC_RELEASE);
	droce_obj_del(ah->context, &container_of(ah, struct droce_ah, ibv)->obj);
	free(container_of(ah, struct droce_ah, ibv));
	return 0;
}

/*
 * The GRH area of a UD receive: for RoCEv2 over IPv4 its first 20 bytes
 * are unused and the IPv4 header fills the last 20 (as rdma-core's
 * providers lay it out); else it is a real IPv6 GRH.
 */
int ibv_init_ah_from_wc(struct ibv_context *context, uint8_t port_num,
			struct ibv_wc *wc, struct ibv_grh *grh,
			struct ibv_ah_attr *ah_attr)
{
	const uint8_t *g = (const uint8_t *)grh;
	struct droce_dev *dev;

	if (context == NULL || wc == NULL || grh == NULL || ah_attr == NULL ||
	    port_num != 1 || !(wc->wc_flags & IBV_WC_GRH)) {
		errno = EINVAL;
		return -1;
	}
	dev = droce_dev_of_ctx(context);
	memset(ah_attr, 0, sizeof(*ah_attr));
	ah_attr->is_global = 1;
	ah_attr->port_num = port_num;
	ah_attr->sl = wc->sl;
	if ((g[20] >> 4) == 4) {
		uint8_t *d = ah_attr->grh.dgid.raw;

		d[10] = 0xff;
		d[11] = 0xff;
		memcpy(&d[12], &g[20 + 12], 4);	/* the sender's address */
		ah_attr->grh.traffic_class = g[20 + 1];
		ah_attr->grh.sgid_index =
			memcmp(&g[20 + 16], &dev->args.ip, 4) == 0 ? 1 : 0;
	} else {
		ah_attr->grh.dgid = grh->sgid;
		ah_attr->grh.traffic_class =
			(uint8_t)(be32toh(grh->version_tclass_flow) >> 20);
		ah_attr->grh.flow_label =
			be32toh(grh->version_tclass_flow) & 0xfffff;
		ah_attr->grh.sgid_index = 0;
	}
	ah_attr->grh.hop_limit = 0xff;
	return 0;
}

struct ibv_ah *ibv_create_ah_from_wc(struct ibv_pd *pd, struct ibv_wc *wc,
				     struct ibv_grh *grh, uint8_t port_num)
{
	struct ibv_ah_attr a;

	if (pd == NULL) {
		errno = EINVAL;
		return NULL;
	}
	if (ibv_init_ah_from_wc(pd->context, port_num, wc, grh, &a))
		return NULL;
	return ibv_create_ah(pd, &a);
}
