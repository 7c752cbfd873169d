/* What the active-message test programs (am_steps.c, am_probe.c) share: a
 * hash that chooses their messages, and the computation before each. */
#pragma once

static inline unsigned mix(unsigned x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  return x ^ (x >> 16);
}

static inline double compute(long n, double x) {
  for (long i = 0; i < n; ++i) x = x * 0.999999 + 1e-7 * (double)(i & 7);
  return x;
}
