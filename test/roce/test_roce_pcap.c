/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * test_roce_pcap <dir>: lib/roce against real Soft-RoCE (rdma_rxe) captures.
 *
 * For every *.pcap in <dir> and every frame in it:
 *   - frames that are UDP to port 4791 (decided here, independently of
 *     roce_parse) must parse, carry a correct ICRC (roce_icrc_frame and the
 *     chained roce_icrc_hdrs + roce_crc32 both equal the stored value), and
 *     roce_build_hdrs + original payload + recomputed ICRC must rebuild the
 *     identical bytes; parsing with only the headers contiguous must work
 *     and one byte less must be ROCE_ERR_TRUNCATED;
 *   - all other frames (ARP, ICMP, TCP) must give ROCE_ERR_NOT_ROCE.
 * Per-file frame/RoCE/opcode/AETH-syndrome counts are compared with the
 * captures' README.md. Exit 0 pass, 77 skip (no capture dir), 1 fail.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "roce.h"
#include "pcap_file.h"

#define MAX_FRAME 16384
#define MAX_ERRS_PER_FILE 10

struct count {
	int key;	/* opcode or AETH syndrome */
	int n;
};

struct expect {
	const char *file;
	int frames;
	int roce;
	struct count ops[12];	/* terminated by n == 0 */
	struct count syn[4];
	int cm_mads;		/* UD SEND Only to QP1 with the GSI Q_Key */
};

/* From rxe-pcap/README.md (tshark Info column counts). */
#define RC(op)	ROCE_OPCODE(ROCE_TRANSPORT_RC, ROCE_OP_##op)
#define UD(op)	ROCE_OPCODE(ROCE_TRANSPORT_UD, ROCE_OP_##op)
static const struct expect expects[] = {
	{ "rc_send.pcap", 24, 24,
	  { { RC(SEND_MIDDLE), 6 }, { RC(SEND_LAST), 6 },
	    { RC(SEND_FIRST), 6 }, { RC(ACK), 6 } },
	  { { 0x1f, 6 } }, 0 },
	{ "rc_send_only.pcap", 40, 40,
	  { { RC(SEND_ONLY), 20 }, { RC(ACK), 20 } },
	  { { 0x1f, 20 } }, 0 },
	{ "send_imm.pcap", 14, 14,
	  { { RC(ACK), 5 }, { RC(SEND_ONLY_IMM), 3 }, { RC(SEND_MIDDLE), 2 },
	    { RC(SEND_LAST_IMM), 2 }, { RC(SEND_FIRST), 2 } },
	  { { 0x1f, 5 } }, 0 },
	{ "rdma_write.pcap", 40, 40,
	  { { RC(WRITE_MIDDLE), 10 }, { RC(WRITE_LAST), 10 },
	    { RC(WRITE_FIRST), 10 }, { RC(ACK), 10 } },
	  { { 0x1f, 10 } }, 0 },
	{ "rdma_write_only.pcap", 40, 40,
	  { { RC(WRITE_ONLY), 20 }, { RC(ACK), 20 } },
	  { { 0x1f, 20 } }, 0 },
	{ "write_imm.pcap", 14, 14,
	  { { RC(ACK), 5 }, { RC(WRITE_ONLY_IMM), 3 },
	    { RC(WRITE_MIDDLE), 2 }, { RC(WRITE_LAST_IMM), 2 },
	    { RC(WRITE_FIRST), 2 } },
	  { { 0x1f, 5 } }, 0 },
	{ "rdma_read.pcap", 40, 40,
	  { { RC(READ_RESP_MIDDLE), 10 }, { RC(READ_RESP_LAST), 10 },
	    { RC(READ_RESP_FIRST), 10 }, { RC(READ_REQ), 10 } },
	  { { 0x1f, 20 } }, 0 },
	{ "rdma_read_only.pcap", 20, 20,
	  { { RC(READ_RESP_ONLY), 10 }, { RC(READ_REQ), 10 } },
	  { { 0x1f, 10 } }, 0 },
	{ "atomic_cmp_swap.pcap", 20, 20,
	  { { RC(CMP_SWAP), 10 }, { RC(ATOMIC_ACK), 10 } },
	  { { 0x1f, 10 } }, 0 },
	{ "atomic_fetch_add.pcap", 20, 20,
	  { { RC(FETCH_ADD), 10 }, { RC(ATOMIC_ACK), 10 } },
	  { { 0x1f, 10 } }, 0 },
	{ "ud_send.pcap", 10, 10,
	  { { UD(SEND_ONLY), 10 } },
	  { { 0 } }, 0 },
	{ "rnr_nak.pcap", 12, 12,
	  { { RC(SEND_ONLY), 6 }, { RC(ACK), 6 } },
	  { { 0x1f, 2 }, { 0x2c, 4 } }, 0 },
	{ "nak_psn_seq_err.pcap", 88, 88,
	  { { RC(WRITE_LAST), 26 }, { RC(WRITE_MIDDLE), 25 },
	    { RC(WRITE_FIRST), 22 }, { RC(ACK), 15 } },
	  { { 0x1f, 10 }, { 0x60, 5 } }, 0 },
	{ "rdma_read_loss.pcap", 113, 113,
	  { { RC(READ_REQ), 33 }, { RC(READ_RESP_MIDDLE), 29 },
	    { RC(READ_RESP_LAST), 29 }, { RC(READ_RESP_FIRST), 22 } },
	  { { 0x1f, 51 } }, 0 },
	{ "rdma_cm_rping.pcap", 41, 41,
	  { { RC(ACK), 15 }, { RC(SEND_ONLY), 12 }, { RC(WRITE_ONLY), 3 },
	    { RC(READ_RESP_ONLY), 3 }, { RC(READ_REQ), 3 },
	    { UD(SEND_ONLY), 5 } },
	  { { 0x1f, 18 } }, 5 },
	{ "oob_tcp_rc_pingpong.pcap", 15, 4,
	  { { RC(SEND_ONLY), 2 }, { RC(ACK), 2 } },
	  { { 0x1f, 2 } }, 0 },
	{ "vm_to_dpdk_port.pcap", 60, 52,
	  { { RC(SEND_ONLY), 52 } },
	  { { 0 } }, 0 },
};
#define N_EXPECTS (sizeof(expects) / sizeof(expects[0]))

#define GSI_QKEY 0x80010000u

struct file_stats {
	int frames, roce, non_roce, errs, cm_mads;
	int ops[256];
	int syn[256];
};

static int total_errs;

#define FAIL(st, fname, idx, ...) do { \
	(st)->errs++; \
	total_errs++; \
	if ((st)->errs <= MAX_ERRS_PER_FILE) { \
		printf("FAIL %s frame %d: ", fname, idx); \
		printf(__VA_ARGS__); \
		printf("\n"); \
	} \
} while (0)

static unsigned
rd16(const uint8_t *p)
{
	return (unsigned)p[0] << 8 | p[1];
}

/* Independent of roce_parse: is this Ethernet frame UDP to port 4791? */
static int
is_udp_4791(const uint8_t *f, uint32_t len)
{
	uint32_t off = 14, ihl;
	unsigned et;

	if (len < 14)
		return 0;
	et = rd16(f + 12);
	if (et == 0x8100) {
		if (len < 18)
			return 0;
		et = rd16(f + 16);
		off = 18;
	}
	if (et == 0x0800) {
		if (len < off + 20 || f[off + 9] != 17)
			return 0;
		ihl = (f[off] & 0x0fu) * 4;
		return len >= off + ihl + 4 && rd16(f + off + ihl + 2) == 4791;
	}
	if (et == 0x86dd)
		return len >= off + 44 && f[off + 6] == 17 &&
		       rd16(f + off + 42) == 4791;
	return 0;
}

static const char *
opname(uint8_t op)
{
	const char *n = roce_opcode_info(op)->name;

	return n ? n : "(reserved)";
}

static void
check_roce_frame(const char *fname, int idx, const uint8_t *f, uint32_t len,
		 struct file_stats *st)
{
	static uint8_t rebuilt[MAX_FRAME];
	struct roce_pkt p, q, h;
	uint32_t hl, icrc, crc, body, cut;
	int rc;

	rc = roce_parse(f, len, len, &p);
	if (rc != ROCE_OK) {
		FAIL(st, fname, idx, "UDP/4791 frame (%u bytes) rejected: %d",
		     len, rc);
		return;
	}
	st->roce++;
	st->ops[p.opcode]++;
	if (roce_opcode_info(p.opcode)->flags & ROCE_OPF_AETH)
		st->syn[p.aeth_syndrome]++;
	if ((roce_opcode_info(p.opcode)->flags & ROCE_OPF_DETH) &&
	    p.dest_qp == 1 && p.deth_qkey == GSI_QKEY)
		st->cm_mads++;

	if (p.frame_len != len)
		FAIL(st, fname, idx, "frame_len %u != captured %u",
		     p.frame_len, len);
	if (p.icrc != roce_icrc_load(f + p.frame_len - ROCE_ICRC_LEN))
		FAIL(st, fname, idx, "parse icrc %08x != stored", p.icrc);

	/* ICRC, whole frame and chained (headers, then payload in two). */
	icrc = roce_icrc_frame(f, &p);
	if (icrc != p.icrc)
		FAIL(st, fname, idx, "%s: ICRC computed %08x, stored %08x",
		     opname(p.opcode), icrc, p.icrc);
	body = p.frame_len - ROCE_ICRC_LEN - p.payload_off;
	crc = roce_icrc_hdrs(f + p.l3_off, p.payload_off - p.l3_off, p.ipv6);
	crc = roce_crc32(crc, f + p.payload_off, body / 3);
	crc = roce_crc32(crc, f + p.payload_off + body / 3, body - body / 3);
	if (roce_icrc_final(crc) != p.icrc)
		FAIL(st, fname, idx, "chained ICRC %08x, stored %08x",
		     roce_icrc_final(crc), p.icrc);
	if (p.payload_len + p.pad != body)
		FAIL(st, fname, idx, "payload_len %u + pad %u != %u",
		     p.payload_len, p.pad, body);

	/* Rebuild: headers from the fields, original payload+pad, ICRC. */
	q = p;
	q.l3_off = q.l4_off = q.bth_off = q.payload_off = 0;
	q.frame_len = 0;
	if (len > sizeof(rebuilt)) {
		FAIL(st, fname, idx, "frame too big for test (%u)", len);
		return;
	}
	hl = roce_build_hdrs(rebuilt, &q);
	if (hl != p.payload_off || q.payload_off != p.payload_off ||
	    q.l3_off != p.l3_off || q.l4_off != p.l4_off ||
	    q.bth_off != p.bth_off || q.frame_len != p.frame_len) {
		FAIL(st, fname, idx,
		     "build layout hl %u l3 %u l4 %u bth %u pl %u len %u, "
		     "parse l3 %u l4 %u bth %u pl %u len %u", hl, q.l3_off,
		     q.l4_off, q.bth_off, q.payload_off, q.frame_len, p.l3_off,
		     p.l4_off, p.bth_off, p.payload_off, p.frame_len);
		return;
	}
	memcpy(rebuilt + hl, f + hl, body);
	roce_icrc_store(rebuilt + p.frame_len - ROCE_ICRC_LEN,
			roce_icrc_frame(rebuilt, &q));
	if (memcmp(rebuilt, f, p.frame_len) != 0) {
		uint32_t i = 0;

		while (rebuilt[i] == f[i])
			i++;
		FAIL(st, fname, idx, "%s: rebuilt frame differs at byte %u "
		     "(0x%02x, captured 0x%02x)", opname(p.opcode), i,
		     rebuilt[i], f[i]);
	}

	/* Only the headers contiguous: OK without ICRC; one byte less: not. */
	rc = roce_parse(f, p.payload_off, len, &h);
	if (rc != ROCE_OK || h.icrc != 0 || h.payload_len != p.payload_len ||
	    h.psn != p.psn || h.frame_len != p.frame_len)
		FAIL(st, fname, idx, "headers-only parse rc %d icrc %08x", rc,
		     h.icrc);
	cut = p.payload_off - 1;
	rc = roce_parse(f, cut, len, &h);
	if (rc != ROCE_ERR_TRUNCATED)
		FAIL(st, fname, idx, "contig %u (< headers) gave %d", cut, rc);
}

static int
run_file(const char *dir, const char *name, struct file_stats *st)
{
	char path[4096];
	struct pcap_file pf;
	struct pcap_rec r;
	struct roce_pkt p;
	int rc, n;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (pcap_open(&pf, path) != 0) {
		printf("FAIL %s: %s\n", name, pf.err);
		total_errs++;
		return -1;
	}
	if (pf.linktype != PCAP_LINKTYPE_ETHERNET) {
		printf("FAIL %s: linktype %u, want Ethernet\n", name,
		       pf.linktype);
		total_errs++;
		pcap_close(&pf);
		return -1;
	}
	while ((n = pcap_next(&pf, &r)) == 1) {
		st->frames++;
		if (r.caplen != r.origlen)
			FAIL(st, name, st->frames, "cut by snaplen (%u of %u)",
			     r.caplen, r.origlen);
		if (is_udp_4791(r.data, r.caplen)) {
			check_roce_frame(name, st->frames, r.data, r.caplen,
					 st);
		} else {
			st->non_roce++;
			rc = roce_parse(r.data, r.caplen, r.caplen, &p);
			if (rc != ROCE_ERR_NOT_ROCE)
				FAIL(st, name, st->frames, "non-RoCE frame "
				     "(ethertype 0x%04x) gave %d, want %d",
				     r.caplen >= 14 ? rd16(r.data + 12) : 0,
				     rc, ROCE_ERR_NOT_ROCE);
		}
	}
	if (n < 0) {
		printf("FAIL %s: %s\n", name, pf.err);
		total_errs++;
	}
	pcap_close(&pf);
	return 0;
}

static void
check_counts(const struct expect *e, struct file_stats *st)
{
	int want_ops[256] = { 0 }, want_syn[256] = { 0 };

	if (st->frames != e->frames || st->roce != e->roce)
		FAIL(st, e->file, 0, "%d frames, %d RoCE; README says %d, %d",
		     st->frames, st->roce, e->frames, e->roce);
	for (int i = 0; i < 12 && e->ops[i].n; i++)
		want_ops[e->ops[i].key] = e->ops[i].n;
	for (int i = 0; i < 4 && e->syn[i].n; i++)
		want_syn[e->syn[i].key] = e->syn[i].n;
	for (int op = 0; op < 256; op++)
		if (st->ops[op] != want_ops[op])
			FAIL(st, e->file, 0, "opcode 0x%02x %s: %d, README %d",
			     op, opname((uint8_t)op), st->ops[op], want_ops[op]);
	for (int s = 0; s < 256; s++)
		if (st->syn[s] != want_syn[s])
			FAIL(st, e->file, 0, "AETH syndrome 0x%02x: %d, README %d",
			     s, st->syn[s], want_syn[s]);
	if (st->cm_mads != e->cm_mads)
		FAIL(st, e->file, 0, "CM MADs (UD to QP1): %d, README %d",
		     st->cm_mads, e->cm_mads);
}

static int
is_pcap(const struct dirent *d)
{
	size_t n = strlen(d->d_name);

	return n > 5 && strcmp(d->d_name + n - 5, ".pcap") == 0;
}

int
main(int argc, char **argv)
{
	struct dirent **names;
	struct file_stats st;
	int n, seen[N_EXPECTS] = { 0 }, roce_total = 0;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc != 2) {
		fprintf(stderr, "usage: %s <pcap dir>\n", argv[0]);
		return 1;
	}
	n = scandir(argv[1], &names, is_pcap, alphasort);
	if (n < 0) {
		printf("SKIPPED: capture directory %s not readable\n", argv[1]);
		return 77;
	}
	if (n == 0) {
		printf("SKIPPED: no *.pcap in %s\n", argv[1]);
		free(names);
		return 77;
	}
	printf("roce_crc32 implementation: %s\n", roce_crc32_impl());
	for (int i = 0; i < n; i++) {
		const char *name = names[i]->d_name;
		const struct expect *e = NULL;

		for (size_t k = 0; k < N_EXPECTS; k++)
			if (strcmp(expects[k].file, name) == 0) {
				e = &expects[k];
				seen[k] = 1;
			}
		if (run_file(argv[1], name, &st) == 0) {
			if (e != NULL)
				check_counts(e, &st);
			printf("%-28s %4d frames %4d RoCE %3d other %s%s\n",
			       name, st.frames, st.roce, st.non_roce,
			       st.errs ? "FAILED" : "ok",
			       e ? "" : " (no README counts)");
			roce_total += st.roce;
		}
		free(names[i]);
	}
	free(names);
	for (size_t k = 0; k < N_EXPECTS; k++)
		if (!seen[k]) {
			printf("FAIL %s: listed in README, missing in %s\n",
			       expects[k].file, argv[1]);
			total_errs++;
		}
	printf("%s: %d RoCE frames checked, %d failures\n",
	       total_errs ? "FAILED" : "PASSED", roce_total, total_errs);
	return total_errs ? 1 : 0;
}
