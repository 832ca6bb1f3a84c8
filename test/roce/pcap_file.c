/* SPDX-License-Identifier: BSD-3-Clause */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pcap_file.h"

#define MAGIC_US	0xa1b2c3d4u
#define MAGIC_NS	0xa1b23c4du
#define GHDR_LEN	24
#define RHDR_LEN	16

static uint32_t
get32(const struct pcap_file *f, const uint8_t *p)
{
	if (f->swapped)
		return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
		       (uint32_t)p[2] << 8 | p[3];
	return (uint32_t)p[3] << 24 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[1] << 8 | p[0];
}

int
pcap_open(struct pcap_file *f, const char *path)
{
	FILE *fp;
	long sz;
	uint32_t magic;

	memset(f, 0, sizeof(*f));
	fp = fopen(path, "rb");
	if (fp == NULL) {
		snprintf(f->err, sizeof(f->err), "%s: %s", path, strerror(errno));
		return -1;
	}
	if (fseek(fp, 0, SEEK_END) != 0 || (sz = ftell(fp)) < 0 ||
	    fseek(fp, 0, SEEK_SET) != 0) {
		snprintf(f->err, sizeof(f->err), "%s: cannot size", path);
		fclose(fp);
		return -1;
	}
	f->size = (size_t)sz;
	f->data = malloc(f->size ? f->size : 1);
	if (f->data == NULL || fread(f->data, 1, f->size, fp) != f->size) {
		snprintf(f->err, sizeof(f->err), "%s: read failed", path);
		fclose(fp);
		pcap_close(f);
		return -1;
	}
	fclose(fp);
	if (f->size < GHDR_LEN) {
		snprintf(f->err, sizeof(f->err), "%s: %zu bytes, no pcap header",
			 path, f->size);
		pcap_close(f);
		return -1;
	}
	/* Magic read little-endian: as written on a little-endian host. */
	magic = get32(f, f->data);
	if (magic != MAGIC_US && magic != MAGIC_NS) {
		f->swapped = true;
		magic = get32(f, f->data);
	}
	if (magic != MAGIC_US && magic != MAGIC_NS) {
		snprintf(f->err, sizeof(f->err),
			 "%s: not a classic pcap file (pcapng?)", path);
		pcap_close(f);
		return -1;
	}
	f->snaplen = get32(f, f->data + 16);
	f->linktype = get32(f, f->data + 20) & 0x0fffffff;
	f->pos = GHDR_LEN;
	return 0;
}

int
pcap_next(struct pcap_file *f, struct pcap_rec *r)
{
	const uint8_t *h;

	if (f->pos == f->size)
		return 0;
	if (f->size - f->pos < RHDR_LEN) {
		snprintf(f->err, sizeof(f->err),
			 "truncated record header at offset %zu", f->pos);
		return -1;
	}
	h = f->data + f->pos;
	r->ts_sec = get32(f, h);
	r->ts_frac = get32(f, h + 4);
	r->caplen = get32(f, h + 8);
	r->origlen = get32(f, h + 12);
	if (r->caplen > f->size - f->pos - RHDR_LEN) {
		snprintf(f->err, sizeof(f->err),
			 "record at offset %zu: caplen %u past end of file",
			 f->pos, r->caplen);
		return -1;
	}
	r->data = h + RHDR_LEN;
	f->pos += RHDR_LEN + r->caplen;
	return 1;
}

void
pcap_close(struct pcap_file *f)
{
	free(f->data);
	f->data = NULL;
	f->size = 0;
}
