/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_roce_parse_diff: roce_parse() (with its fast path) against
 * roce_parse_full() (the full parser alone, which takes every frame the
 * fast path does not). Both must
 * return the same code for every input and, when they accept, the same
 * value in every field of struct roce_pkt. The new parser's output starts
 * as 0xa5 garbage, so a field the fast path forgets to write shows up.
 * roce_parse_rx() too: the same return code, the ROCE_RX_FIELDS equal,
 * the other fields 0 (or all as the reference, when its fast path passed
 * the frame to the full parser). And roce_parse_ack4(): it accepts a frame
 * only if the reference does, with the same fields, and every untagged
 * IPv4 RC ACK of ROCE_ACK4_LEN bytes the reference accepts. And
 * roce_parse_only4(): likewise for untagged IPv4 RC SEND ONLY and WRITE
 * ONLY (with immediate or not), READ request, READ response ONLY, atomic
 * and ATOMIC ACKNOWLEDGE frames whose datagram ends with the frame, its
 * output compared with roce_parse_rx()'s byte for byte (0xa5 garbage to
 * start with).
 *
 * Inputs:
 *   - every file of the directories given as arguments ("-o <dir>": the
 *     directory may be missing, as ../shared's captures in a bare clone),
 *     fuzz corpora (ctl
 *     byte + frame, contig as fuzz_parse derives it; also the whole file as
 *     one frame) and pcap files (each record, and each record with every
 *     smaller contig);
 *   - frames built by roce_build_hdrs for every supported opcode, IPv4/IPv6,
 *     with and without VLAN, several payload sizes; each with every contig
 *     and len from 0 to its length + 8, every header byte set to every
 *     value (IPv4 checksum repaired in half the runs, to reach past it),
 *     and random multi-byte mutations (seeded, ROCE_TEST_SEED).
 * Exit 0 pass, 1 fail.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "roce.h"
#include "roce_test_rng.h"
#include "pcap_file.h"

static int failures;
static uint64_t compared, accepted, pcap_records;

#define F(x) if (a->x != b->x) return #x
static const char *
first_diff(const struct roce_pkt *a, const struct roce_pkt *b)
{
	if (memcmp(a->dst_mac, b->dst_mac, 6)) return "dst_mac";
	if (memcmp(a->src_mac, b->src_mac, 6)) return "src_mac";
	if (memcmp(a->src_ip, b->src_ip, 16)) return "src_ip";
	if (memcmp(a->dst_ip, b->dst_ip, 16)) return "dst_ip";
	F(has_vlan); F(vlan_tci); F(ipv6); F(tos); F(ttl); F(ip_id);
	F(frag_off); F(flow_label); F(udp_sport); F(udp_dport); F(udp_csum);
	F(opcode); F(se); F(mig); F(pad); F(tver); F(pkey); F(fecn); F(becn);
	F(dest_qp); F(ack_req); F(psn); F(reth_va); F(reth_rkey); F(reth_len);
	F(aeth_syndrome); F(aeth_msn); F(atm_va); F(atm_rkey);
	F(atm_swap_add); F(atm_compare); F(atmack_orig); F(deth_qkey);
	F(deth_src_qp); F(imm); F(ieth_rkey); F(l3_off); F(l4_off);
	F(bth_off); F(payload_off); F(payload_len); F(frame_len); F(icrc);
	return NULL;
}
#undef F

static uint64_t ack4_accepted;

static void
check_ack4(const uint8_t *f, uint32_t contig, uint32_t len, const char *what,
	   int ra, const struct roce_pkt *a)
{
	struct roce_ack4 k;
	bool rk, shape;

	memset(&k, 0xa5, sizeof(k));
	rk = roce_parse_ack4(f, contig, len, &k);
	shape = ra == ROCE_OK && !a->has_vlan && !a->ipv6 &&
		a->opcode == ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_ACK) &&
		len == ROCE_ACK4_LEN && contig >= ROCE_ACK4_LEN &&
		a->l3_off == ROCE_ETH_HLEN &&
		a->l4_off == ROCE_ETH_HLEN + ROCE_IPV4_HLEN;
	if (rk != shape) {
		if (++failures <= 30)
			printf("FAIL %s (contig %u len %u): roce_parse_ack4 %d, reference %d (shape %d)\n",
			       what, contig, len, rk, ra, shape);
		return;
	}
	if (!rk)
		return;
	ack4_accepted++;
	if (memcmp(k.src_ip, a->src_ip, 4) || memcmp(k.dst_ip, a->dst_ip, 4) ||
	    k.dest_qp != a->dest_qp || k.psn != a->psn || k.msn != a->aeth_msn ||
	    k.pkey != a->pkey || k.syndrome != a->aeth_syndrome || k.se != a->se) {
		if (++failures <= 30)
			printf("FAIL %s (contig %u len %u): roce_parse_ack4 fields differ\n",
			       what, contig, len);
	}
}

static uint64_t only4_accepted;

static void
check_only4(const uint8_t *f, uint32_t contig, uint32_t len, const char *what,
	     int ra, const struct roce_pkt *a, const struct roce_pkt *rx)
{
	struct roce_pkt w;
	bool rw, shape;

	memset(&w, 0xa5, sizeof(w));
	rw = roce_parse_only4(f, contig, len, &w);
	shape = ra == ROCE_OK && !a->has_vlan && !a->ipv6 &&
		roce_only4_opcode(a->opcode) &&
		a->frame_len == len && contig >= a->payload_off &&
		a->l3_off == ROCE_ETH_HLEN &&
		a->l4_off == ROCE_ETH_HLEN + ROCE_IPV4_HLEN;
	if (rw != shape) {
		if (++failures <= 30)
			printf("FAIL %s (contig %u len %u): roce_parse_only4 %d, reference %d (shape %d)\n",
			       what, contig, len, rw, ra, shape);
		return;
	}
	if (!rw)
		return;
	only4_accepted++;
	/* (roce_parse_rx's fast path took it: every other field 0) */
	if (memcmp(&w, rx, sizeof(w)) != 0 && ++failures <= 30)
		printf("FAIL %s (contig %u len %u): roce_parse_only4 differs from roce_parse_rx (field %s)\n",
		       what, contig, len, first_diff(&w, rx) ? first_diff(&w, rx) : "padding");
}

static void
compare(const uint8_t *f, uint32_t contig, uint32_t len, const char *what)
{
	struct roce_pkt a, b, c, e;
	const char *d;
	int ra, rb, rc;

	memset(&b, 0xa5, sizeof(b));
	ra = roce_parse_full(f, contig, len, &a);
	rb = roce_parse(f, contig, len, &b);
	compared++;
	if (ra != rb) {
		if (++failures <= 30)
			printf("FAIL %s (contig %u len %u): reference %d, new %d\n",
			       what, contig, len, ra, rb);
		return;
	}
	/* roce_parse_rx: the same verdict; the ROCE_RX_FIELDS as the
	 * reference has them, every other field 0 (its fast path) or as the
	 * reference has it (the full parser took the frame). */
	memset(&c, 0xa5, sizeof(c));
	rc = roce_parse_rx(f, contig, len, &c);
	if (rc != ra) {
		if (++failures <= 30)
			printf("FAIL %s (contig %u len %u): reference %d, rx %d\n",
			       what, contig, len, ra, rc);
		return;
	}
	check_ack4(f, contig, len, what, ra, &a);
	check_only4(f, contig, len, what, ra, &a, &c);
	if (ra != ROCE_OK)
		return;
	accepted++;
	d = first_diff(&a, &b);
	if (d != NULL && ++failures <= 30)
		printf("FAIL %s (contig %u len %u): field %s differs\n", what,
		       contig, len, d);
	memset(&e, 0, sizeof(e));
#define CP(x) memcpy(&e.x, &a.x, sizeof(e.x));
	ROCE_RX_FIELDS(CP)
#undef CP
	if (first_diff(&c, &a) != NULL && (d = first_diff(&c, &e)) != NULL &&
	    ++failures <= 30)
		printf("FAIL %s (contig %u len %u): roce_parse_rx: field %s differs\n",
		       what, contig, len, d);
}

static void
run_pcap(const char *path)
{
	struct pcap_file pf;
	struct pcap_rec r;
	int n = 0;

	if (pcap_open(&pf, path) != 0) {
		printf("FAIL: %s: %s\n", path, pf.err);
		failures++;
		return;
	}
	while (pcap_next(&pf, &r) == 1) {
		for (uint32_t c = 0; c <= r.caplen;
		     c += (c < 128 || c + 8 > r.caplen) ? 1 : 61)
			compare(r.data, c, r.caplen, path);
		if (r.origlen != r.caplen)
			compare(r.data, r.caplen, r.origlen, path);
		n++;
	}
	pcap_close(&pf);
	pcap_records += n;
}

static void
run_corpus_file(const char *path)
{
	static uint8_t buf[1 << 20];
	FILE *fp = fopen(path, "rb");
	size_t n;

	if (fp == NULL)
		return;
	n = fread(buf, 1, sizeof(buf), fp);
	fclose(fp);
	compare(buf, (uint32_t)n, (uint32_t)n, path);
	if (n >= 1) {
		uint32_t len = (uint32_t)n - 1, contig = len;

		if (buf[0] & 0x80) {
			contig = (uint32_t)(buf[0] & 0x3f) * 2 + 14;
			if (contig > len)
				contig = len;
		}
		compare(buf + 1, contig, len, path);
	}
}

/* optional: the directory may be missing (the rxe captures live outside
 * the repository, in ../shared); the in-tree corpora may not. */
static void
run_dir(const char *dir, bool optional)
{
	struct dirent *de;
	char path[4096];
	DIR *d = opendir(dir);
	int n = 0;

	if (d == NULL && optional) {
		printf("note: %s not readable: not compared\n", dir);
		return;
	}
	if (d == NULL) {
		printf("FAIL: cannot open %s\n", dir);
		failures++;
		return;
	}
	while ((de = readdir(d)) != NULL) {
		size_t l = strlen(de->d_name);

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (l > 5 && strcmp(de->d_name + l - 5, ".pcap") == 0)
			run_pcap(path);
		else if (l > 4 && (strcmp(de->d_name + l - 4, ".log") == 0 ||
				   strcmp(de->d_name + l - 4, ".tsv") == 0 ||
				   strcmp(de->d_name + l - 3, ".md") == 0))
			continue;
		else
			run_corpus_file(path);
		n++;
	}
	closedir(d);
	printf("%s: %d files\n", dir, n);
}

static uint32_t
build(uint8_t *buf, uint8_t op, bool v6, bool vlan, uint32_t payload)
{
	struct roce_pkt p;
	uint32_t hl;

	memset(&p, 0, sizeof(p));
	for (int i = 0; i < 6; i++) {
		p.dst_mac[i] = (uint8_t)rnd();
		p.src_mac[i] = (uint8_t)rnd();
	}
	p.has_vlan = vlan;
	p.vlan_tci = (uint16_t)rnd();
	p.ipv6 = v6;
	p.tos = (uint8_t)rnd();
	p.ttl = (uint8_t)rnd();
	p.ip_id = (uint16_t)rnd();
	p.frag_off = rnd() & 1 ? 0x4000 : 0;
	p.flow_label = (uint32_t)rnd() & 0xfffff;
	for (int i = 0; i < 16; i++) {
		p.src_ip[i] = (uint8_t)rnd();
		p.dst_ip[i] = (uint8_t)rnd();
	}
	if (!v6) {
		memset(p.src_ip + 4, 0, 12);
		memset(p.dst_ip + 4, 0, 12);
	}
	p.udp_sport = (uint16_t)rnd();
	p.udp_csum = rnd() & 1 ? 0 : (uint16_t)rnd();
	p.opcode = op;
	p.se = rnd() & 1;
	p.mig = rnd() & 1;
	p.pkey = (uint16_t)rnd();
	p.fecn = rnd() & 1;
	p.becn = rnd() & 1;
	p.dest_qp = (uint32_t)rnd() & ROCE_QPN_MASK;
	p.ack_req = rnd() & 1;
	p.psn = (uint32_t)rnd() & ROCE_PSN_MASK;
	p.reth_va = rnd();
	p.reth_rkey = (uint32_t)rnd();
	p.reth_len = (uint32_t)rnd();
	p.aeth_syndrome = (uint8_t)rnd();
	p.aeth_msn = (uint32_t)rnd() & 0xffffff;
	p.atm_va = rnd();
	p.atm_rkey = (uint32_t)rnd();
	p.atm_swap_add = rnd();
	p.atm_compare = rnd();
	p.atmack_orig = rnd();
	p.deth_qkey = (uint32_t)rnd();
	p.deth_src_qp = (uint32_t)rnd() & ROCE_QPN_MASK;
	p.imm = (uint32_t)rnd();
	p.ieth_rkey = (uint32_t)rnd();
	if (roce_opcode_info(op)->flags & ROCE_OPF_PAYLOAD) {
		p.payload_len = payload;
		p.pad = (uint8_t)(-payload & 3);
	}
	hl = roce_build_hdrs(buf, &p);
	for (uint32_t i = 0; i < p.payload_len; i++)
		buf[hl + i] = (uint8_t)rnd();
	memset(buf + hl + p.payload_len, 0, p.pad);
	roce_icrc_store(buf + p.frame_len - 4, roce_icrc_frame(buf, &p));
	return p.frame_len;
}

/* Repair the IPv4 header checksum after a mutation (if it still looks
 * like IPv4 without options where the frame says). */
static void
fix_ipv4(uint8_t *f, uint32_t l3)
{
	uint16_t c = roce_ipv4_cksum(f + l3, 20);

	f[l3 + 10] = (uint8_t)(c >> 8);
	f[l3 + 11] = (uint8_t)c;
}

static void
run_built(void)
{
	static uint8_t f[ROCE_MAX_HDR_LEN + 4200], m[sizeof(f)];
	static const uint32_t sizes[] = { 0, 1, 2, 3, 4, 5, 8, 13, 64, 4096 };
	char what[80];
	uint64_t before = compared;

	for (int op = 0; op < 256; op++) {
		const struct roce_opcode_info *oi = roce_opcode_info((uint8_t)op);

		if (oi->name == NULL)
			continue;
		for (int v = 0; v < 4; v++)
			for (size_t s = 0; s < sizeof(sizes) / sizeof(sizes[0]); s++) {
				bool v6 = v & 1, vlan = v & 2;
				uint32_t len, l3 = vlan ? 18 : 14, hdr;

				if (!(oi->flags & ROCE_OPF_PAYLOAD) && s > 0)
					break;
				len = build(f, (uint8_t)op, v6, vlan, sizes[s]);
				hdr = l3 + (v6 ? 40 : 20) + 8 + oi->hdr_len;
				snprintf(what, sizeof(what), "%s %s%s payload %u",
					 oi->name, v6 ? "IPv6" : "IPv4",
					 vlan ? "+VLAN" : "", sizes[s]);
				/* Ethernet padding after a short frame. */
				memset(f + len, 0, 8);
				for (uint32_t c = 0; c <= len + 8;
				     c += (c < hdr + 8 || c + 8 > len) ? 1 : 97)
					for (uint32_t l = c; l <= len + 8;
					     l += (l < hdr + 8 || l + 8 > len) ? 1 : 97)
						compare(f, c, l, what);
				if (s > 5 && sizes[s] != 64)
					continue;
				/* Every header byte, every value. */
				for (uint32_t i = 0; i < hdr + 4 && i < len; i++)
					for (int val = 0; val < 256; val++)
						for (int fix = 0; fix < 2; fix++) {
							if (fix && (v6 || i < l3 || i >= l3 + 20))
								continue;
							memcpy(m, f, len + 8);
							m[i] = (uint8_t)val;
							if (fix)
								fix_ipv4(m, l3);
							compare(m, len, len, what);
						}
				/* Random multi-byte mutations and lengths. */
				for (int r = 0; r < 2000; r++) {
					uint32_t k = 1 + (uint32_t)(rnd() % 4);
					uint32_t l = len;

					memcpy(m, f, len + 8);
					while (k--)
						m[rnd() % (hdr + 4 < len ? hdr + 4 : len)] =
							(uint8_t)rnd();
					if (!v6 && rnd() & 1)
						fix_ipv4(m, l3);
					if (rnd() % 4 == 0)
						l = len - 8 + (uint32_t)(rnd() % 17);
					compare(m, rnd() % 8 ? l : (uint32_t)(rnd() % (l + 1)),
						l, what);
				}
			}
	}
	printf("built frames: %" PRIu64 " comparisons\n", compared - before);
}

int
main(int argc, char **argv)
{
	const char *s = getenv("ROCE_TEST_SEED");
	uint64_t seed = s ? strtoull(s, NULL, 0) : (uint64_t)time(NULL);

	setvbuf(stdout, NULL, _IOLBF, 0);
	rng_state = seed ? seed : 1;
	printf("seed %" PRIu64 " (set ROCE_TEST_SEED to repeat)\n", seed);
	for (int i = 1; i < argc; i++) {
		bool optional = strcmp(argv[i], "-o") == 0 && i + 1 < argc;

		run_dir(argv[i + optional], optional);
		i += optional;
	}
	printf("%" PRIu64 " pcap records, %" PRIu64 " comparisons so far\n",
	       pcap_records, compared);
	run_built();
	printf("%" PRIu64 " inputs compared, %" PRIu64 " accepted by both, "
	       "%" PRIu64 " by roce_parse_ack4, %" PRIu64 " by roce_parse_only4\n",
	       compared, accepted, ack4_accepted, only4_accepted);
	if (accepted == 0 || compared < 1000000 || ack4_accepted < 1000 ||
	    only4_accepted < 1000) {
		printf("FAIL: too little compared\n");
		failures++;
	}
	if (failures) {
		printf("FAILED: %d differences (seed %" PRIu64 ")\n", failures,
		       seed);
		return 1;
	}
	printf("PASSED\n");
	return 0;
}
