#include <sys/stat.h>
#include <sys/statvfs.h>

#include <algorithm>
#include <cstdio>

#include "commands.h"
#include "skel/skel_funcs.h"
#include "skel/trace.h"

namespace skelgen {
namespace {

// Why a rank's trace ended early, as far as can be told afterwards: the
// tracer cannot write the reason into a file on a full disk.
std::string why_incomplete(const std::string& dir, skt::TraceEnd end) {
  if (end == skt::TraceEnd::kAborted) return "MPI_Abort";
  struct statvfs vs {};
  constexpr unsigned long long kNearlyFull = 1 << 20;  // less than one default chunk left
  if (statvfs(dir.c_str(), &vs) == 0 &&
      static_cast<unsigned long long>(vs.f_bavail) * vs.f_frsize < kNearlyFull)
    return "no space left on device";
  return "the process ended before MPI_Finalize, or its trace could not be written";
}

}  // namespace

bool check_trace(const std::string& dir, bool quiet, double* traced_s) {
  uint64_t total = 0, min_ev = UINT64_MAX, max_ev = 0, bytes = 0;
  int64_t slowest_ns = 0;  // MPI_Init's return to MPI_Finalize's entry, the slowest rank
  std::vector<std::string> incomplete;
  std::string mpi;
  uint32_t ranks = 0;
  try {
    skt::TraceDir td(dir);
    ranks = td.world_size();
    skt::Event ev;
    for (uint32_t r = 0; r < ranks; ++r) {
      auto f = td.open_rank(r);
      int64_t init_end = -1;
      while (f->next(ev)) {
        if (ev.func == skt::kFunc_MPI_Init || ev.func == skt::kFunc_MPI_Init_thread)
          init_end = ev.t_start_ns + ev.duration_ns;
        else if (ev.func == skt::kFunc_MPI_Finalize && init_end >= 0)
          slowest_ns = std::max(slowest_ns, ev.t_start_ns - init_end);
      }
      uint64_t n = f->events_read();
      total += n;
      min_ev = std::min(min_ev, n);
      max_ev = std::max(max_ev, n);
      struct stat sb {};
      if (stat(td.rank_path(r).c_str(), &sb) == 0) bytes += static_cast<uint64_t>(sb.st_size);
      if (f->end() != skt::TraceEnd::kFinalized)
        incomplete.push_back("trace incomplete: rank " + std::to_string(r) + " stopped after " + std::to_string(n) +
                             " events (" + why_incomplete(dir, f->end()) + ")");
      if (r == 0) mpi = f->header().mpi_library;
    }
  } catch (const std::exception& e) {
    std::fprintf(stderr, "skelgen: error: the trace is unreadable: %s\n", e.what());
    return false;
  }
  if (!quiet) {
    std::printf("trace:   %s\n", dir.c_str());
    std::printf("ranks:   %u (%s)\n", ranks, mpi.c_str());
    std::printf("events:  %llu in all, %llu..%llu per rank\n", static_cast<unsigned long long>(total),
                static_cast<unsigned long long>(min_ev), static_cast<unsigned long long>(max_ev));
    std::printf("on disk: %llu bytes (%.2f bytes per event)\n", static_cast<unsigned long long>(bytes),
                total ? static_cast<double>(bytes) / static_cast<double>(total) : 0.0);
    if (slowest_ns > 0)
      std::printf("traced:  %.6f s, MPI_Init to MPI_Finalize (slowest rank; the tracer's own work taken out)\n",
                  static_cast<double>(slowest_ns) * 1e-9);
    std::fflush(stdout);
  }
  for (const std::string& line : incomplete) std::fprintf(stderr, "skelgen: warning: %s\n", line.c_str());
  if (traced_s) *traced_s = static_cast<double>(slowest_ns) * 1e-9;
  return incomplete.empty();
}

}  // namespace skelgen
