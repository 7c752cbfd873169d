#include "folded_fixtures.h"

#include <string>

#include "skel/skel_kernel.h"
#include "trace_fixtures.h"

namespace skt::testing {

FoldedProgram folded_from(uint32_t P, const std::function<std::vector<Syn>(uint32_t)>& program,
                          const fold::CompressOptions& fold, merge::Order order) {
  std::string dir = temp_dir("generate");
  write_synthetic(dir, P, program);
  merge::Options opt;
  opt.order = order;
  auto loaded = merge::load(dir, opt);
  FoldedProgram p = fold::compress(merge::merge(loaded, opt), fold);
  auto calibrate = [](FoldedProgram& f) {
    for (auto& r : f.symbols.ranks) {  // as the tracer's calibration would have it
      r.kernel_name = SKEL_KERNEL_NAME;
      r.kernel_version = SKEL_KERNEL_VERSION;
      r.kernel_units_per_s = 1e8;
      r.gap_floor_ns = r.cpu_gap_floor_ns = 0;  // the tests that take a floor off set their own
    }
  };
  calibrate(p);
  for (FoldedProgram& t : p.threads) calibrate(t);
  return p;
}

Syn call(uint32_t func, uint32_t site) {
  Syn s;
  s.func = func;
  s.site = site;
  return s;
}

Syn message(uint32_t func, uint32_t site, int64_t peer, int64_t tag) {
  Syn s = call(func, site);
  s.peer = peer;
  s.tag = tag;
  s.count = 8;
  return s;
}

}  // namespace skt::testing
