/* SPDX-License-Identifier: BSD-3-Clause */
/* Private to lib/roce: big-endian loads/stores at any alignment. */
#ifndef ROCE_BYTES_H
#define ROCE_BYTES_H

#include <stdint.h>

#define ROCE_ETHERTYPE_IPV4	0x0800
#define ROCE_ETHERTYPE_IPV6	0x86dd
#define ROCE_ETHERTYPE_VLAN	0x8100
#define ROCE_IPPROTO_UDP	17

static inline uint16_t rd16(const uint8_t *p)
{
	return (uint16_t)(p[0] << 8 | p[1]);
}

static inline uint32_t rd24(const uint8_t *p)
{
	return (uint32_t)p[0] << 16 | (uint32_t)p[1] << 8 | p[2];
}

static inline uint32_t rd32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	       (uint32_t)p[2] << 8 | p[3];
}

static inline uint64_t rd64(const uint8_t *p)
{
	return (uint64_t)rd32(p) << 32 | rd32(p + 4);
}

static inline void wr16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void wr24(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 16);
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)v;
}

static inline void wr32(uint8_t *p, uint32_t v)
{
	wr16(p, (uint16_t)(v >> 16));
	wr16(p + 2, (uint16_t)v);
}

static inline void wr64(uint8_t *p, uint64_t v)
{
	wr32(p, (uint32_t)(v >> 32));
	wr32(p + 4, (uint32_t)v);
}

#endif /* ROCE_BYTES_H */
