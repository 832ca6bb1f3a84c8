/* SPDX-License-Identifier: BSD-3-Clause */
/*
 * Minimal reader for classic pcap files (not pcapng): the whole file is
 * loaded into memory and walked record by record. Either byte order,
 * microsecond or nanosecond timestamps. No libpcap.
 */
#ifndef PCAP_FILE_H
#define PCAP_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#define PCAP_LINKTYPE_ETHERNET 1

struct pcap_file {
	uint8_t *data;
	size_t size;
	size_t pos;		/* next record header */
	bool swapped;		/* file written on the other endianness */
	uint32_t snaplen;
	uint32_t linktype;
	char err[256];
};

struct pcap_rec {
	const uint8_t *data;
	uint32_t caplen;	/* bytes present in the file */
	uint32_t origlen;	/* bytes on the wire */
	uint32_t ts_sec;
	uint32_t ts_frac;	/* usec or nsec */
};

/* 0 on success; else -1 with f->err set. */
int pcap_open(struct pcap_file *f, const char *path);
/* 1 = got a record, 0 = clean end of file, -1 = corrupt (f->err). */
int pcap_next(struct pcap_file *f, struct pcap_rec *r);
void pcap_close(struct pcap_file *f);

#endif /* PCAP_FILE_H */
