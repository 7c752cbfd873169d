/* The reference compute kernel: one definition shared by the tracer (which
 * measures its rate on the traced node and stores it in every trace header)
 * and by generated skeletons (which run `seconds x rate` units of it, so that
 * a faster or slower machine takes proportionally less or more time).
 *
 * One unit is 64 multiply-adds on four independent accumulators: floating
 * point work that a compiler cannot delete (the result feeds the return
 * value) and that stays in registers. Change the body => bump the version:
 * the generator refuses traces calibrated with another kernel version. */
#ifndef SKEL_KERNEL_H
#define SKEL_KERNEL_H

#define SKEL_KERNEL_NAME "fma4x16"
#define SKEL_KERNEL_VERSION 1
/* Floating-point operations in one unit (16 x 4 multiply-adds); what a
 * simulated host (SimGrid) executes for it. */
#define SKEL_KERNEL_FLOPS_PER_UNIT 128.0

static double skel_kernel_run(unsigned long long units, double seed) {
  double a = seed, b = seed * 0.5, c = seed * 0.25, d = seed * 0.125;
  const double m = 0.999999, k = 1e-7;
  for (unsigned long long u = 0; u < units; ++u) {
    for (int i = 0; i < 16; ++i) {
      a = a * m + k;
      b = b * m + k;
      c = c * m + k;
      d = d * m + k;
    }
  }
  return a + b + c + d;
}

#endif
