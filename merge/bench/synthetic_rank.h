// What the synthetic trace writers of the benchmarks (lu_like_traces,
// halo2d_traces) share: one rank file opened with a fixed header, its module,
// MPI_DOUBLE and `sites` call sites defined.
#pragma once

#include <cstdio>
#include <string>

#include "skel/trace_writer.h"

namespace skt::bench {

inline constexpr uint32_t kDoubleType = 14;  // the rank-local id of MPI_DOUBLE
inline constexpr uint64_t kSyntheticRunId = 42;
inline constexpr size_t kWriterBufferBytes = 1 << 20;
inline constexpr int kZstdLevel = 3;
inline constexpr int64_t kFirstSiteOffset = 0x1000, kSiteStride = 32;

// Opens rank r of P in dir; on failure prints the error after `tool` and returns false.
inline bool open_synthetic_rank(TraceWriter& w, const char* tool, const std::string& dir, int r, int P,
                                const std::string& module, uint32_t sites) {
  TraceHeader h;
  h.rank = static_cast<uint32_t>(r);
  h.world_size = static_cast<uint32_t>(P);
  h.run_id = kSyntheticRunId;
  h.hostname = "synthetic";
  h.kernel_name = "fma4x16";
  h.kernel_version = 1;
  h.kernel_units_per_s = 1e8;  // a calibration, so that skelgen generate takes the traces too
  const std::string path = dir + "/" + TraceDir::rank_file_name(static_cast<uint32_t>(r));
  if (!w.open(path, h, kWriterBufferBytes, kZstdLevel)) {
    std::fprintf(stderr, "%s: %s\n", tool, w.error().c_str());
    return false;
  }
  w.define_module(0, module);
  w.define_datatype(kDoubleType, 8, "MPI_DOUBLE");
  for (uint32_t site = 0; site < sites; ++site) {
    const int64_t frames[] = {0, kFirstSiteOffset + kSiteStride * static_cast<int64_t>(site)};
    w.define_callsite(site, frames, 2);
  }
  return true;
}

}  // namespace skt::bench
