#include <sys/stat.h>

#include <algorithm>
#include <cstdio>

#include "commands.h"
#include "skel/trace.h"

namespace skelgen {

bool print_trace_summary(const std::string& dir) {
  skt::TraceDir td(dir);
  uint64_t total = 0, min_ev = UINT64_MAX, max_ev = 0, bytes = 0;
  int incomplete = 0;
  std::string mpi, host;
  skt::Event ev;
  for (uint32_t r = 0; r < td.world_size(); ++r) {
    auto f = td.open_rank(r);
    while (f->next(ev)) {
    }
    uint64_t n = f->events_read();
    total += n;
    min_ev = std::min(min_ev, n);
    max_ev = std::max(max_ev, n);
    struct stat sb {};
    if (stat(td.rank_path(r).c_str(), &sb) == 0) bytes += static_cast<uint64_t>(sb.st_size);
    if (f->end() != skt::TraceEnd::kFinalized) {
      ++incomplete;
      std::printf("  rank %u: %s after %llu events\n", r, skt::trace_end_name(f->end()),
                  static_cast<unsigned long long>(n));
    }
    if (r == 0) mpi = f->header().mpi_library;
  }
  std::printf("trace:   %s\n", dir.c_str());
  std::printf("ranks:   %u (%s)\n", td.world_size(), mpi.c_str());
  std::printf("events:  %llu in all, %llu..%llu per rank\n", static_cast<unsigned long long>(total),
              static_cast<unsigned long long>(min_ev), static_cast<unsigned long long>(max_ev));
  std::printf("on disk: %llu bytes (%.2f bytes per event)\n", static_cast<unsigned long long>(bytes),
              total ? static_cast<double>(bytes) / static_cast<double>(total) : 0.0);
  if (incomplete) std::printf("warning: %d rank(s) did not reach MPI_Finalize\n", incomplete);
  return true;
}

}  // namespace skelgen
