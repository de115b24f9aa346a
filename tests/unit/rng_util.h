/* A small seeded generator for the property tests (header-only: each
 * suite is its own binary).  xorshift64*: reproducible from a printed
 * seed, which is all a property test needs of it. */
#ifndef TOLLGATE_TEST_RNG_UTIL_H
#define TOLLGATE_TEST_RNG_UTIL_H

#include <stddef.h>
#include <stdint.h>

static uint64_t rng_state; /* set from the seed before each round */

static inline uint64_t rnd(void) {
  rng_state ^= rng_state >> 12;
  rng_state ^= rng_state << 25;
  rng_state ^= rng_state >> 27;
  return rng_state * 0x2545F4914F6CDD1DULL;
}

/* 0 .. n-1 */
static inline size_t pick(size_t n) { return (size_t)(rnd() % n); }

#endif
