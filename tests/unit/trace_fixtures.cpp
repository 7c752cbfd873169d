#include "trace_fixtures.h"

#include <stdlib.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "skel/skel_funcs.h"

namespace skt::testing {

TraceHeader sample_header(uint32_t rank, uint32_t world, uint64_t run_id) {
  TraceHeader h;
  h.rank = rank;
  h.world_size = world;
  h.run_id = run_id;
  h.pid = 4242 + rank;
  h.mpi_flavor = MpiFlavor::kMpich;
  h.mpi_version_major = 4;
  h.mpi_version_minor = 0;
  h.stack_depth = 3;
  h.thread_level = 1;
  h.start_realtime_ns = 1700000000123456789LL;
  h.start_monotonic_ns = 987654321;
  h.kernel_name = "fma4x16";
  h.kernel_version = 1;
  h.kernel_units_per_s = 12345678.5;
  h.calibration_s = 0.02;
  h.hostname = "node-" + std::to_string(rank);
  h.mpi_library = "MPICH Version: 4.0.2";
  h.tracer_version = "test";
  h.executable = "/path/to/app";
  h.command_line = "app --flag";
  h.gap_clock = GapClock::kThreadCpu;
  h.gap_floor_ns = 21.0;
  h.cpu_gap_floor_ns = 205.0;
  h.core_sharing = CoreSharing::kShared;
  return h;
}

std::vector<Event> random_events(size_t n, uint32_t seed) {
  std::mt19937_64 rng(seed);
  auto pick = [&](int64_t lo, int64_t hi) { return std::uniform_int_distribution<int64_t>(lo, hi)(rng); };
  std::vector<Event> out;
  int64_t t = 0;
  for (size_t i = 0; i < n; ++i) {
    Event e;
    e.func = kAllFuncIds[static_cast<size_t>(pick(0, std::size(kAllFuncIds) - 1))];
    e.callsite = static_cast<uint32_t>(pick(0, 5));
    e.gap_ns = pick(0, 3) == 0 ? pick(0, 5000000) : pick(0, 2000);
    e.t_start_ns = t + e.gap_ns;
    if (pick(0, 1)) e.cpu_gap_ns = pick(0, e.gap_ns);
    if (e.func == kFunc_MPI_Finalize && pick(0, 1)) {
      e.kernel_rate = pick(1, int64_t{1} << 40);
      e.kernel_samples = pick(0, 100000);
    }
    e.duration_ns = pick(0, 1) ? pick(0, 500) : pick(0, 100000000);
    t = e.t_start_ns + e.duration_ns;
    e.seq = i;
    if (pick(0, 1)) e.peer = pick(0, 1) ? pick(0, 4095) : kProcNull;
    if (pick(0, 1)) e.tag = pick(-1, 1 << 20);  // includes MPI_ANY_TAG
    if (pick(0, 1)) {
      e.count = pick(0, 1 << 24);
      e.dtype = pick(0, 1) ? 14 : 256;  // MPI_DOUBLE or a derived type
    }
    if (pick(0, 3) == 0) e.comm = pick(0, 7);
    if (pick(0, 5) == 0) e.root = pick(0, 63);
    if (pick(0, 5) == 0) e.op = 1;
    if (pick(0, 5) == 0) e.flags = static_cast<uint64_t>(pick(1, 127));
    if (pick(0, 7) == 0) {
      e.peer2 = pick(0, 63);
      e.tag2 = pick(0, 99);
      e.count2 = pick(0, 1000);
      e.dtype2 = 7;
    }
    if (pick(0, 7) == 0) e.color = pick(skt::kUndefined, 3);
    if (pick(0, 7) == 0) e.key = pick(-5, 5);
    if (pick(0, 7) == 0) e.new_comm = pick(2, 9);
    if (pick(0, 3) == 0)
      for (int k = 0, m = static_cast<int>(pick(1, 8)); k < m; ++k) e.reqs.push_back(pick(0, 100000));
    if (!e.reqs.empty() && pick(0, 1))
      for (size_t k = 0; k < e.reqs.size(); ++k) e.req_sources.push_back(pick(-1, 63));
    if (pick(0, 9) == 0)
      for (int k = 0, m = static_cast<int>(pick(1, 16)); k < m; ++k) e.counts.push_back(pick(0, 99));
    if (pick(0, 9) == 0)
      for (int k = 0, m = static_cast<int>(pick(1, 16)); k < m; ++k) e.counts2.push_back(pick(0, 99));
    if (pick(0, 15) == 0) {
      e.dims = {pick(1, 4), pick(1, 4)};
      e.periods = {0, 1};
    }
    if (pick(0, 15) == 0) e.bytes = pick(0, 1 << 20);
    out.push_back(e);
  }
  return out;
}

std::vector<Event> write_trace(const std::string& path, const TraceHeader& h, const std::vector<Event>& events,
                               size_t buffer_bytes, EndStatus end, bool close) {
  TraceWriter w;
  unlink(path.c_str());  // the writer never replaces a file (O_EXCL); a fixture may
  if (!w.open(path, h, buffer_bytes, 3)) throw std::runtime_error(w.error());
  w.define_module(0, "/path/to/app");
  auto sizes = std::vector<std::pair<int64_t, int64_t>>{{14, 8}, {256, 24}, {7, 4}};
  for (auto [id, size] : sizes) w.define_datatype(static_cast<uint32_t>(id), size, id == 256 ? "derived" : "predefined");
  std::vector<Event> seen;
  uint32_t defined_sites = 0;
  for (Event e : events) {
    while (defined_sites <= e.callsite) {
      int64_t frames[] = {0, static_cast<int64_t>(0x1000 + 16 * defined_sites)};
      w.define_callsite(defined_sites++, frames, 2);
    }
    if (e.new_comm != kNone) {
      std::vector<int64_t> members;  // every other rank of the world, as a Comm_split by parity makes
      for (int64_t q = 0; q < static_cast<int64_t>(h.world_size); q += 2) members.push_back(q);
      w.define_comm(static_cast<uint32_t>(e.new_comm), 0, kFunc_MPI_Comm_split, members.data(), members.size());
    }
    w.begin_event(e.func, e.callsite);
    auto put = [&](Field f, int64_t v) {
      if (v != kNone) w.put_int(f, v);
    };
    auto list = [&](Field f, const std::vector<int64_t>& v) {
      if (!v.empty()) w.put_list(f, v.data(), v.size());
    };
    put(Field::kPeer, e.peer);
    put(Field::kTag, e.tag);
    put(Field::kCount, e.count);
    put(Field::kDtype, e.dtype);
    put(Field::kComm, e.comm);
    put(Field::kRoot, e.root);
    put(Field::kOp, e.op);
    if (e.flags) w.put_int(Field::kFlags, static_cast<int64_t>(e.flags));
    put(Field::kPeer2, e.peer2);
    put(Field::kTag2, e.tag2);
    put(Field::kCount2, e.count2);
    put(Field::kDtype2, e.dtype2);
    put(Field::kColor, e.color);
    put(Field::kKey, e.key);
    put(Field::kNewComm, e.new_comm);
    put(Field::kBytes, e.bytes);
    put(Field::kCpuGap, e.cpu_gap_ns);
    put(Field::kKernelRate, e.kernel_rate);
    put(Field::kKernelSamples, e.kernel_samples);
    list(Field::kReqs, e.reqs);
    list(Field::kReqSources, e.req_sources);
    list(Field::kCounts, e.counts);
    list(Field::kCounts2, e.counts2);
    list(Field::kDims, e.dims);
    list(Field::kPeriods, e.periods);
    w.end_event(e.t_start_ns, e.t_start_ns + e.duration_ns);
    // What a reader fills in: bytes from count x datatype size.
    auto size_of = [&](int64_t id) {
      for (auto [i, s] : sizes)
        if (i == id) return s;
      return int64_t{-1};
    };
    if (e.bytes == kNone && e.count != kNone && e.dtype != kNone) e.bytes = e.count * size_of(e.dtype);
    if (e.bytes == kNone && !e.counts.empty() && e.dtype != kNone) {
      int64_t sum = 0;
      for (int64_t c : e.counts) sum += c;
      e.bytes = sum * size_of(e.dtype);
    }
    if (e.bytes2 == kNone && e.count2 != kNone && e.dtype2 != kNone) e.bytes2 = e.count2 * size_of(e.dtype2);
    if (e.bytes2 == kNone && !e.counts2.empty() && e.dtype2 != kNone) {
      int64_t sum = 0;
      for (int64_t c : e.counts2) sum += c;
      e.bytes2 = sum * size_of(e.dtype2);
    }
    seen.push_back(e);
  }
  if (close) {
    if (!w.close(end)) throw std::runtime_error(w.error());
  } else {
    w.flush();
  }
  return seen;
}

namespace {
// Directories made by temp_dir(), removed when the test program exits.
std::vector<std::string>& made_dirs() {
  static std::vector<std::string> dirs;
  return dirs;
}
void remove_made_dirs() {
  for (const std::string& d : made_dirs()) {
    std::error_code ec;
    std::filesystem::remove_all(d, ec);
  }
}
}  // namespace

std::string temp_dir(const std::string& tag) {
  std::string tmpl = (getenv("TMPDIR") ? std::string(getenv("TMPDIR")) : std::string("/tmp")) + "/skel-" + tag + "-XXXXXX";
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back(0);
  if (!mkdtemp(buf.data())) throw std::runtime_error("mkdtemp failed");
  if (made_dirs().empty()) std::atexit(remove_made_dirs);
  made_dirs().push_back(buf.data());
  return buf.data();
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace skt::testing
