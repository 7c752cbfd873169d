/* The time a cut loop stands for (docs/generate.md, "What a cut loop
 * predicts"). skelgen generate pastes this file into every skeleton; it is
 * plain C (and C++: tests/unit/test_estimate.cpp includes it).
 *
 * A cut loop ran n periods (of its value period, usually one iteration)
 * where the application ran f times as many. Period 0 also holds the ranks'
 * skew on entering the loop (one rank waits for the others' first
 * messages), which the left-out periods would not pay again, so it is not
 * extrapolated: it stands for itself, and its f - 1 left-out neighbours are
 * taken as long as period 1. Every later period stands for itself and f - 1
 * more: each for its own part of the run, where the computation drifts
 * through it (the generated course tables), so no mean over the periods
 * replaces them. But one period that another process on the machine
 * delayed would count f times: a period longer than SKEL_OUTLIER times the
 * median of periods 1.. counts as that median in the left-out periods it
 * stands for (its own time is measured, not predicted).
 *
 * Not a trimmed mean or a median of the periods: a skeleton's periods
 * differ by the course of the computation as traced (jacobi2d's 10 kept
 * periods span 8.0 to 19.8 ms under SimGrid, where nothing else moves
 * them), and the K = 1 skeleton that the prediction stands for pays the
 * machine's small delays too: a trimmed mean came out below the K = 1
 * skeleton's time (docs/generate.md, "Scaling"). SKEL_ESTIMATE_TRIMMED_MEAN
 * (compile-time, for generate/bench/estimate.sh) takes every period at the
 * trimmed mean of periods 1.. (a quarter off each end) instead.
 *
 * period[0..n): the periods' times (at most SKEL_PERIOD_SAMPLES of them are
 * kept; rest: the time of the loop after the last kept one, unextrapolated
 * beyond f times itself). Returns the predicted time of the left-out
 * iterations. */
#ifndef SKEL_ESTIMATE_H
#define SKEL_ESTIMATE_H

#define SKEL_PERIOD_SAMPLES 64
#define SKEL_OUTLIER 3.0
#ifndef SKEL_MAYBE_UNUSED
#define SKEL_MAYBE_UNUSED
#endif

SKEL_MAYBE_UNUSED static int skel_cmp_double(const void* a, const void* b)
{
  double x = *(const double*)a, y = *(const double*)b;
  return x < y ? -1 : x > y ? 1 : 0;
}

/* The median of v[0..n) (n >= 1), sorted in a copy. */
SKEL_MAYBE_UNUSED static double skel_median(const double* v, int n)
{
  double s[SKEL_PERIOD_SAMPLES];
  int i;
  for (i = 0; i < n; ++i) s[i] = v[i];
  qsort(s, (size_t)n, sizeof s[0], skel_cmp_double);
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

SKEL_MAYBE_UNUSED static double skel_left_out_time(const double* period, int n, double rest, double f)
{
  double median, cap, extra = 0;
  int i;
  if (n < 2) return (f - 1.0) * (rest + (n == 1 ? period[0] : 0));
#ifdef SKEL_ESTIMATE_TRIMMED_MEAN
  {
    double s[SKEL_PERIOD_SAMPLES], sum = 0;
    int m = n - 1, cut = m / 4, k = 0;
    for (i = 0; i < m; ++i) s[i] = period[i + 1];
    qsort(s, (size_t)m, sizeof s[0], skel_cmp_double);
    for (i = cut; i < m - cut; ++i) sum += s[i], ++k;
    (void)median, (void)cap, (void)extra;
    return (f - 1.0) * (n * (sum / k) + rest);
  }
#endif
  median = skel_median(period + 1, n - 1);
  cap = SKEL_OUTLIER * median;
  for (i = 1; i < n; ++i) extra += (f - 1.0) * (period[i] < cap ? period[i] : median);
  extra += (f - 1.0) * (period[1] < cap ? period[1] : median); /* period 0's neighbours */
  return extra + (f - 1.0) * rest;
}

/* Kept runs of the top level (an irregular program's time steps, the
 * generator's kept_runs): run l stands for itself and runs left out,
 * factor[l] times its time in all. Its measured time measured[l] against
 * its own traced time traced[l] is how this machine runs it; but a run that
 * another process delayed (ranks taking turns on a core: a 14 us run held
 * up 319 us, where its class's runs ran at their traced speed) would count
 * factor[l] - 1 times: where measured / traced is over SKEL_OUTLIER times
 * the median of its class's (class[l] >= 0: runs of one kind of step; at
 * least 3 runs with both times), it counts as that median in the runs it
 * stands for (its own time is measured, not predicted). The median is of
 * the class, not of all runs: under SimGrid a step of small messages slows
 * down far more than one of computation, and neither is delayed. Runs with
 * measured[l] <= 0 are none (cut loops, runs not reached). Returns the
 * predicted time of the runs left out. */
struct skel_run_ratio {
  int cls, at;
  double ratio;
};
SKEL_MAYBE_UNUSED static int skel_cmp_run_ratio(const void* a, const void* b)
{
  const struct skel_run_ratio *x = (const struct skel_run_ratio*)a, *y = (const struct skel_run_ratio*)b;
  if (x->cls != y->cls) return x->cls < y->cls ? -1 : 1;
  return x->ratio < y->ratio ? -1 : x->ratio > y->ratio ? 1 : 0;
}
/* median[l]: the median measured / traced of run l's class, where the class
 * has at least 3 runs with both times; else 0. False where out of memory. */
SKEL_MAYBE_UNUSED static int skel_class_medians(const double* measured, const double* traced, const int* cls, int n,
                                                double* median)
{
  int i, m = 0, first, end;
  struct skel_run_ratio* r = (struct skel_run_ratio*)malloc((size_t)(n > 0 ? n : 1) * sizeof *r);
  if (!r) return 0;
  for (i = 0; i < n; ++i) {
    median[i] = 0;
    if (measured[i] > 0 && traced[i] > 0 && cls[i] >= 0) {
      r[m].cls = cls[i], r[m].at = i, r[m].ratio = measured[i] / traced[i];
      ++m;
    }
  }
  qsort(r, (size_t)m, sizeof *r, skel_cmp_run_ratio);
  for (first = 0; first < m; first = end) {
    int half;
    double med;
    for (end = first; end < m && r[end].cls == r[first].cls;) ++end;
    if (end - first < 3) continue;
    half = first + (end - first) / 2;
    med = (end - first) % 2 ? r[half].ratio : 0.5 * (r[half - 1].ratio + r[half].ratio);
    for (i = first; i < end; ++i) median[r[i].at] = med;
  }
  free(r);
  return 1;
}

SKEL_MAYBE_UNUSED static double skel_runs_left_out_time(const double* measured, const double* traced,
                                                        const int* cls, const double* factor, int n)
{
  double extra = 0;
  int i;
  double* median = (double*)malloc((size_t)(n > 0 ? n : 1) * sizeof *median);
  const int outliers = median && skel_class_medians(measured, traced, cls, n, median);
  for (i = 0; i < n; ++i) {
    double t = measured[i];
    if (!(t > 0)) continue;
    if (outliers && median[i] > 0 && t > SKEL_OUTLIER * median[i] * traced[i]) t = median[i] * traced[i];
    extra += (factor[i] - 1.0) * t;
  }
  free(median);
  return extra;
}

/* A farm's left-out tasks (skel_farm.h): its master replays the hand-out of
 * all the tasks (`whole` s) and of the kept ones (`kept` s) with the speeds
 * it measured, a model that knows no contention between the ranks, and
 * measured the kept farm (`measured` s). Where the model missed the kept
 * farm it misses the whole farm by as much: the whole replay times
 * measured / kept (within 1/2 and 2), less the measured time. Without a
 * replay or a measurement: whole - kept. */
SKEL_MAYBE_UNUSED static double skel_farm_scaled_left_out(double whole, double kept, double measured)
{
  double ratio;
  if (!(kept > 0) || !(measured > 0)) return whole > kept ? whole - kept : 0;
  ratio = measured / kept;
  ratio = ratio < 0.5 ? 0.5 : ratio > 2 ? 2 : ratio;
  return whole * ratio > measured ? whole * ratio - measured : 0;
}

#endif
