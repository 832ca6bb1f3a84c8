/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * DPDK telemetry endpoints (dpdk-telemetry.py lists them):
 *   /droce/devices            device names, by index ("" for a destroyed one)
 *   /droce/stats,<dev>        a device's counters
 *   /droce/qps,<dev>          the device's QP numbers
 *   /droce/qp,<dev>,<qpn>     a QP's state, PSNs and counters
 * Counters are engine-written and read here without a lock: 64-bit loads
 * are never torn on the targets DPDK supports; a value may be a moment old.
 */
#include <stdlib.h>
#include <string.h>

#include <rte_telemetry.h>

#include "droce_int.h"

static struct droce_dev *dev_param(const char *params)
{
	char *end;
	unsigned long i;

	if (params == NULL || *params == '\0')
		return NULL;
	i = strtoul(params, &end, 0);
	if (end == params || (*end != '\0' && *end != ','))
		return NULL;
	return i < droce_nb_devs ? droce_devs[i] : NULL;
}

static int tel_devices(const char *cmd, const char *params,
		       struct rte_tel_data *d)
{
	(void)cmd;
	(void)params;
	rte_tel_data_start_array(d, RTE_TEL_STRING_VAL);
	/* (an index's name, "" for a destroyed device's slot: the index
	 * is what /droce/stats and the others take) */
	for (uint32_t i = 0; i < droce_nb_devs; i++)
		rte_tel_data_add_array_string(d, droce_devs[i] ?
					      droce_devs[i]->args.name : "");
	return 0;
}

static int tel_stats(const char *cmd, const char *params,
		     struct rte_tel_data *d)
{
	struct droce_dev *dev = dev_param(params);
	struct droce_dev_stats s;

	(void)cmd;
	if (dev == NULL)
		return -EINVAL;
	droce_dev_stats_read(dev, &s);
	rte_tel_data_start_dict(d);
#define DROCE_STAT_TEL(name, help) rte_tel_data_add_dict_u64(d, #name, s.name);
	DROCE_DEV_STATS(DROCE_STAT_TEL)
#undef DROCE_STAT_TEL
	return 0;
}

static int tel_qps(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct droce_dev *dev = dev_param(params);

	(void)cmd;
	if (dev == NULL)
		return -EINVAL;
	rte_tel_data_start_array(d, RTE_TEL_INT_VAL);
	for (uint32_t i = 0; i < DROCE_MAX_QP; i++)
		if (dev->qp_tbl[i])
			rte_tel_data_add_array_int(d, (int)(i + DROCE_QPN_BASE));
	return 0;
}

static int tel_qp(const char *cmd, const char *params, struct rte_tel_data *d)
{
	struct droce_dev *dev = dev_param(params);
	const char *comma = params ? strchr(params, ',') : NULL;
	struct droce_qp *qp;
	struct droce_qp_stats s;

	(void)cmd;
	if (dev == NULL || comma == NULL)
		return -EINVAL;
	qp = droce_qp_lookup(dev, (uint32_t)strtoul(comma + 1, NULL, 0));
	if (qp == NULL)
		return -ENOENT;
	memcpy(&s, &qp->st, sizeof(s));
	rte_tel_data_start_dict(d);
	rte_tel_data_add_dict_int(d, "state", (int)qp->state);
	rte_tel_data_add_dict_u64(d, "dest_qpn", qp->dest_qpn);
	rte_tel_data_add_dict_u64(d, "path_mtu", qp->mtu);
	rte_tel_data_add_dict_u64(d, "req_psn", qp->req_psn);
	rte_tel_data_add_dict_u64(d, "req_una_psn", qp->req_una_psn);
	rte_tel_data_add_dict_u64(d, "resp_epsn", qp->resp_epsn);
	rte_tel_data_add_dict_u64(d, "sq_outstanding", qp->sq_db - qp->sq_ci);
	rte_tel_data_add_dict_u64(d, "rq_posted", qp->rq->db - qp->rq->ci);
	rte_tel_data_add_dict_u64(d, "rd_atomic_outstanding", qp->req_rd_outstanding);
	rte_tel_data_add_dict_u64(d, "retries", qp->req_retries);
	rte_tel_data_add_dict_u64(d, "timer_armed", qp->req_timer_tsc != 0);
#define DROCE_STAT_TEL(name, help) rte_tel_data_add_dict_u64(d, #name, s.name);
	DROCE_QP_STATS(DROCE_STAT_TEL)
#undef DROCE_STAT_TEL
	return 0;
}

RTE_INIT(droce_telemetry_init)
{
	rte_telemetry_register_cmd("/droce/devices", tel_devices,
				   "droce device names. No parameters");
	rte_telemetry_register_cmd("/droce/stats", tel_stats,
				   "A droce device's counters. Parameters: int dev");
	rte_telemetry_register_cmd("/droce/qps", tel_qps,
				   "QP numbers of a droce device. Parameters: int dev");
	rte_telemetry_register_cmd("/droce/qp", tel_qp,
				   "A QP's transport state and counters. Parameters: int dev, int qpn");
}
