#include "synthetic.h"

#include <set>
#include <stdexcept>

#include "skel/skel_funcs.h"
#include "skel/trace_writer.h"
#include "trace_fixtures.h"

namespace skt::testing {

void write_synthetic(const std::string& dir, uint32_t P, const std::function<std::vector<Syn>(uint32_t)>& program,
                     uint64_t run_id, CoreSharing sharing) {
  for (uint32_t r = 0; r < P; ++r) {
    const std::vector<Syn> calls = program(r);
    TraceHeader h = sample_header(r, P, run_id);
    h.gap_clock = GapClock::kWall;
    h.core_sharing = sharing;
    for (const Syn& s : calls) {
      if (s.work != kNone) h.gap_clock = GapClock::kThreadCpu;
      if (s.thread != 0) h.thread_level = 3;  // MPI_THREAD_MULTIPLE
    }
    TraceWriter w;
    if (!w.open(dir + "/" + TraceDir::rank_file_name(r), h, 1 << 16, 1)) throw std::runtime_error(w.error());
    w.define_module(0, "/bin/app");
    w.define_datatype(14, 8, "MPI_DOUBLE");
    std::set<uint32_t> sites;
    int64_t t = 0;
    for (const Syn& s : calls) {
      if (sites.insert(s.site).second) {
        int64_t frames[] = {0, 0x100 + 16 * static_cast<int64_t>(s.site)};
        w.define_callsite(s.site, frames, 2);
      }
      if (s.new_comm != kNone) {
        w.define_comm(static_cast<uint32_t>(s.new_comm), s.comm, s.func, s.members.data(), s.members.size());
      }
      w.begin_event(s.func, s.site);
      if (s.comm != kNone) w.put_int(Field::kComm, s.comm);
      if (s.peer != kNone) w.put_int(Field::kPeer, s.peer);
      if (s.tag != kNone) w.put_int(Field::kTag, s.tag);
      if (s.count != kNone) {
        w.put_int(Field::kCount, s.count);
        w.put_int(Field::kDtype, 14);
      }
      if (s.root != kNone) w.put_int(Field::kRoot, s.root);
      if (s.flags) w.put_int(Field::kFlags, static_cast<int64_t>(s.flags));
      if (s.new_comm != kNone) w.put_int(Field::kNewComm, s.new_comm);
      if (s.color != kNone) w.put_int(Field::kColor, s.color);
      if (!s.reqs.empty()) w.put_list(Field::kReqs, s.reqs.data(), s.reqs.size());
      if (!s.sources.empty()) w.put_list(Field::kReqSources, s.sources.data(), s.sources.size());
      if (s.work != kNone) w.put_int(Field::kCpuGap, s.work);
      if (s.blocked != 0) w.put_int(Field::kBlocked, s.blocked);
      if (s.team != 0) w.put_int(Field::kTeamCpu, s.team);
      if (s.thread != 0) w.put_int(Field::kThread, s.thread);
      if (s.kernel_rate != kNone) {
        w.put_int(Field::kKernelRate, s.kernel_rate);
        w.put_int(Field::kKernelSamples, 3);
      }
      t += s.gap;
      w.end_event(t, t + s.dur);
      t += s.dur;
    }
    if (!w.close(EndStatus::kFinalized)) throw std::runtime_error(w.error());
  }
}

}  // namespace skt::testing
