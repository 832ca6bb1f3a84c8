/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Data checks for scripts: compare two MR ranges byte for byte, CRC32 of a
 * range (IEEE 802.3, as zlib and "cksum -a crc32b" compute it), a number,
 * a fill pattern. A failed check is a failed command, so --batch stops on
 * it with a non-zero exit status.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "console.h"

static uint32_t crc_tab[256];

static void crc_init(void)
{
	for (uint32_t i = 0; i < 256; i++) {
		uint32_t c = i;

		for (int k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320u ^ (c >> 1) : c >> 1;
		crc_tab[i] = c;
	}
}

static uint32_t crc32_ieee(const uint8_t *p, uint64_t len)
{
	uint32_t c = 0xffffffffu;

	if (crc_tab[1] == 0)
		crc_init();
	for (uint64_t i = 0; i < len; i++)
		c = crc_tab[(c ^ p[i]) & 0xff] ^ (c >> 8);
	return c ^ 0xffffffffu;
}

static int pass(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int pass(const char *fmt, ...)
{
	va_list ap;

	g.tally.checks_ok++;
	printf("check OK: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return 0;
}

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...)
{
	va_list ap;

	g.tally.checks_fail++;
	printf("check FAILED: ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	return -1;
}

/* <mr> <off> [<len>]: a range inside an MR. */
static struct con_mr *range(const char *cmd, char **argv, bool with_len,
			    int *id, uint64_t *off, uint64_t *len)
{
	struct con_mr *m = con_get_mr(cmd, argv[0], id);

	if (m == NULL || con_arg_size(cmd, "offset", argv[1], off, 0) ||
	    (with_len && con_arg_size(cmd, "length", argv[2], len, 0)))
		return NULL;
	if (*off > m->len || (with_len && *len > m->len - *off)) {
		con_err("%s: %" PRIu64 " B at +%" PRIu64 " is past the end of mr %d (%" PRIu64 " B)",
			cmd, with_len ? *len : 0, *off, *id, m->len);
		return NULL;
	}
	return m;
}

static int check_cmp(int argc, char **argv)
{
	const char *cmd = "check cmp";
	struct con_mr *a, *b;
	uint64_t oa, ob, len, tmp, ndiff = 0, first = 0;
	int ia, ib;

	if (argc != 5)
		return con_err("check cmp: usage: check cmp <mr-a> <off-a> <mr-b> <off-b> <len>");
	if (con_arg_size(cmd, "length", argv[4], &len, 0))
		return -1;
	a = range(cmd, argv, false, &ia, &oa, &tmp);
	if (a == NULL)
		return -1;
	b = range(cmd, argv + 2, false, &ib, &ob, &tmp);
	if (b == NULL)
		return -1;
	if (len > a->len - oa || len > b->len - ob)
		return con_err("check cmp: %" PRIu64 " B do not fit (mr %d has %" PRIu64 " B after +%" PRIu64
			       ", mr %d %" PRIu64 " B after +%" PRIu64 ")", len, ia, a->len - oa, oa,
			       ib, b->len - ob, ob);
	if (memcmp(a->buf + oa, b->buf + ob, len) == 0)
		return pass("mr %d +%" PRIu64 " == mr %d +%" PRIu64 ", %" PRIu64 " B", ia, oa, ib,
			    ob, len);
	for (uint64_t i = 0; i < len; i++)
		if (a->buf[oa + i] != b->buf[ob + i]) {
			if (ndiff++ == 0)
				first = i;
		}
	return fail("mr %d +%" PRIu64 " != mr %d +%" PRIu64 " (%" PRIu64 " B): %" PRIu64
		    " byte%s differ, the first at +%" PRIu64 " (0x%02x != 0x%02x)", ia, oa, ib, ob,
		    len, ndiff, ndiff == 1 ? "" : "s", first, a->buf[oa + first],
		    b->buf[ob + first]);
}

static int check_crc(int argc, char **argv)
{
	const char *cmd = "check crc";
	struct con_mr *m;
	uint64_t off, len, want = 0;
	bool want_set = false;
	int id;
	uint32_t crc;

	if (argc < 3)
		return con_err("check crc: usage: check crc <mr> <off> <len> [expect <crc>] [eq <mr> <off>]");
	m = range(cmd, argv, true, &id, &off, &len);
	if (m == NULL)
		return -1;
	for (int i = 3; i < argc; i++) {
		if (strcmp(argv[i], "expect") == 0 && i + 1 < argc) {
			if (con_arg_u64(cmd, "crc", argv[++i], &want, UINT32_MAX))
				return -1;
			want_set = true;
		} else if (strcmp(argv[i], "eq") == 0 && i + 2 < argc) {
			char *v[2] = { argv[i + 1], argv[i + 2] };
			struct con_mr *o;
			uint64_t ooff, olen;
			int oid;

			i += 2;
			o = range(cmd, v, false, &oid, &ooff, &olen);
			if (o == NULL)
				return -1;
			if (len > o->len - ooff)
				return con_err("check crc: %" PRIu64 " B do not fit in mr %d after +%" PRIu64,
					       len, oid, ooff);
			want = crc32_ieee(o->buf + ooff, len);
			want_set = true;
		} else {
			return con_err("check crc: unknown or incomplete option '%s' (expect <crc> | eq <mr> <off>)",
				       argv[i]);
		}
	}
	crc = crc32_ieee(m->buf + off, len);
	if (!want_set) {
		g.tally.checks_ok++;
		printf("crc32 mr %d +%" PRIu64 " %" PRIu64 " B: 0x%08x\n", id, off, len, crc);
		return 0;
	}
	if (crc == (uint32_t)want)
		return pass("crc32 mr %d +%" PRIu64 " %" PRIu64 " B = 0x%08x", id, off, len, crc);
	return fail("crc32 mr %d +%" PRIu64 " %" PRIu64 " B = 0x%08x, expected 0x%08" PRIx64,
		    id, off, len, crc, want);
}

static int check_value(int argc, char **argv)
{
	const char *cmd = "check value";
	struct con_mr *m;
	uint64_t off, want, w = 8, v = 0, tmp;
	int id;

	if (argc != 3 && argc != 5)
		return con_err("check value: usage: check value <mr> <off> <value> [size 1|2|4|8] (host byte order)");
	m = range(cmd, argv, false, &id, &off, &tmp);
	if (m == NULL || con_arg_u64(cmd, "value", argv[2], &want, 0))
		return -1;
	if (argc == 5) {
		if (strcmp(argv[3], "size") || con_arg_u64(cmd, "size", argv[4], &w, 8) ||
		    (w != 1 && w != 2 && w != 4 && w != 8))
			return con_err("check value: size must be 1, 2, 4 or 8");
	}
	if (w > m->len - off)
		return con_err("check value: %" PRIu64 " B at +%" PRIu64 " is past the end of mr %d",
			       w, off, id);
	switch (w) {
	case 1: { uint8_t x; memcpy(&x, m->buf + off, 1); v = x; break; }
	case 2: { uint16_t x; memcpy(&x, m->buf + off, 2); v = x; break; }
	case 4: { uint32_t x; memcpy(&x, m->buf + off, 4); v = x; break; }
	default: memcpy(&v, m->buf + off, 8);
	}
	if (v == want)
		return pass("mr %d +%" PRIu64 " = %" PRIu64 " (0x%" PRIx64 ")", id, off, v, v);
	return fail("mr %d +%" PRIu64 " = %" PRIu64 " (0x%" PRIx64 "), expected %" PRIu64 " (0x%" PRIx64 ")",
		    id, off, v, v, want, want);
}

static int check_pattern(int argc, char **argv)
{
	const char *cmd = "check pattern";
	struct con_pattern pat;
	struct con_mr *m;
	uint64_t off, len, ndiff = 0, first = 0;
	uint8_t buf[4096];
	int id, n;
	char ps[40];

	if (argc < 4)
		return con_err("check pattern: usage: check pattern <mr> <off> <len> zero|inc|random <seed>|byte <x>");
	m = range(cmd, argv, true, &id, &off, &len);
	if (m == NULL)
		return -1;
	n = con_pattern_parse(cmd, argc - 3, argv + 3, &pat);
	if (n < 0)
		return -1;
	if (3 + n != argc)
		return con_err("check pattern: unexpected '%s' after the pattern", argv[3 + n]);
	for (uint64_t pos = 0; pos < len; pos += sizeof(buf)) {
		uint64_t l = RTE_MIN((uint64_t)sizeof(buf), len - pos);

		con_pattern_fill(&pat, buf, l, pos);
		if (memcmp(buf, m->buf + off + pos, l) == 0)
			continue;
		for (uint64_t i = 0; i < l; i++)
			if (buf[i] != m->buf[off + pos + i] && ndiff++ == 0)
				first = pos + i;
	}
	con_pattern_str(&pat, ps, sizeof(ps));
	if (ndiff == 0)
		return pass("mr %d +%" PRIu64 " %" PRIu64 " B hold pattern %s", id, off, len, ps);
	{
		uint8_t exp;

		con_pattern_fill(&pat, &exp, 1, first);
		return fail("mr %d +%" PRIu64 " %" PRIu64 " B: %" PRIu64 " byte%s differ from pattern %s, "
			    "the first at +%" PRIu64 " (0x%02x, expected 0x%02x)", id, off, len, ndiff,
			    ndiff == 1 ? "" : "s", ps, first, m->buf[off + first], exp);
	}
}

const struct con_cmd con_cmds_check[] = {
	{ "check", "check cmp", "<mr-a> <off-a> <mr-b> <off-b> <len>", "byte-for-byte comparison of two ranges", check_cmp },
	{ "check", "check crc", "<mr> <off> <len> [expect <crc>] [eq <mr> <off>]",
	  "CRC32 (IEEE, as zlib) of a range; compared with a value or with another range's", check_crc },
	{ "check", "check value", "<mr> <off> <value> [size 1|2|4|8]", "a number in an MR (host order), e.g. after atomics", check_value },
	{ "check", "check pattern", "<mr> <off> <len> zero|inc|random <seed>|byte <x>",
	  "a range holds a fill pattern (positions count from the range's start, as mr fill writes them)", check_pattern },
	{ NULL, NULL, NULL, NULL, NULL },
};
