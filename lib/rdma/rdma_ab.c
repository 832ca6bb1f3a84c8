/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Phase A/B (droce_ab.h, meson -Dab=true): DROCE_AB read at load, the
 * per-phase counts reported on stderr at exit.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>

#include "droce_ab.h"

#define AB_SHIFT_DEFAULT	24	/* 2^24 TSC cycles: ~7 ms at 2.45 GHz */
#define AB_PROBE_CYC_DEFAULT	100	/* a probe's wait, TSC cycles */

uint32_t droce_ab_bits;
uint32_t droce_ab_shift = AB_SHIFT_DEFAULT;
int droce_ab_active;
uint32_t droce_ab_phase;
uint32_t droce_ab_now;
uint64_t droce_ab_done[2];
uint64_t droce_ab_sent[2];
uint32_t droce_ab_probe_cyc = AB_PROBE_CYC_DEFAULT;

__attribute__((constructor)) static void ab_load(void)
{
	const char *v = getenv("DROCE_AB");
	unsigned long bits, shift = AB_SHIFT_DEFAULT;
	char *end;
	bool ok;

	if (v == NULL)
		return;
	errno = 0;
	bits = strtoul(v, &end, 0);
	ok = errno == 0 && end != v && bits <= UINT32_MAX;
	if (ok && *end == ':') {
		const char *s = end + 1;

		shift = strtoul(s, &end, 0);
		ok = errno == 0 && end != s;
	}
	if (!ok || *end != '\0' || shift < 10 || shift > 40) {
		fprintf(stderr, "DROCE_AB=%s: want <bits>[:<shift 10..40>], "
			"e.g. 0x10:24; ignored\n", v);
		return;
	}
	v = getenv("DROCE_AB_PROBE_CYC");
	if (v != NULL) {
		unsigned long cyc;

		errno = 0;
		cyc = strtoul(v, &end, 0);
		if (errno != 0 || end == v || *end != '\0' || cyc > 1000000) {
			fprintf(stderr, "DROCE_AB_PROBE_CYC=%s: want 0..1000000 "
				"TSC cycles; DROCE_AB ignored\n", v);
			return;
		}
		droce_ab_probe_cyc = (uint32_t)cyc;
	}
	droce_ab_bits = (uint32_t)bits;
	droce_ab_shift = (uint32_t)shift;
	droce_ab_active = 1;
}

__attribute__((destructor)) static void ab_report(void)
{
	uint64_t off = droce_ab_done[0], on = droce_ab_done[1];
	uint64_t tx_off = droce_ab_sent[0], tx_on = droce_ab_sent[1];

	if (!droce_ab_active)
		return;
	fprintf(stderr, "DROCE_AB bits=0x%x shift=%u off=%llu on=%llu ratio=%.4f"
		" tx_off=%llu tx_on=%llu tx_ratio=%.4f",
		droce_ab_bits, droce_ab_shift, (unsigned long long)off,
		(unsigned long long)on, off ? (double)on / (double)off : 0.0,
		(unsigned long long)tx_off, (unsigned long long)tx_on,
		tx_off ? (double)tx_on / (double)tx_off : 0.0);
	if (droce_ab_bits & (DROCE_AB_PROBE_RESP | DROCE_AB_PROBE_REQ))
		fprintf(stderr, " probe_cyc=%u", droce_ab_probe_cyc);
	fputc('\n', stderr);
}
