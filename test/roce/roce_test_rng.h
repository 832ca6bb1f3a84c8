/* SPDX-License-Identifier: BSD-3-Clause */
/* The lib/roce tests' PRNG (xorshift64*): seeded through rng_state, so a
 * printed seed repeats a run. One copy per test program. */
#ifndef ROCE_TEST_RNG_H
#define ROCE_TEST_RNG_H

#include <stddef.h>
#include <stdint.h>

static uint64_t rng_state;

static inline uint64_t
rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545f4914f6cdd1dull;
}

static inline uint32_t
rnd_below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

static inline void
rnd_fill(uint8_t *b, size_t n)
{
	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rnd();
}

#endif
