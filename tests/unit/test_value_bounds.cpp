// Files whose framing is sound but whose values are not (corrupt, or written
// by hand to do harm) are refused by the tools that read them, naming the
// value: never turned into a skeleton that computes for years, names rank
// 10^6 of a world of 2, or loops 2^64 times (skel/value_bounds.h).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "skel/compress.h"
#include "skel/folded.h"
#include "skel/merge.h"
#include "skel/skel_funcs.h"
#include "folded_fixtures.h"
#include "synthetic.h"
#include "trace_fixtures.h"

using namespace skt;
using namespace skt::testing;

namespace {

Syn make(uint32_t func, uint32_t site, int64_t peer = kNone, int64_t count = kNone) {
  Syn s = call(func, site);
  s.peer = peer;
  s.count = count;
  if (peer != kNone) s.tag = 7;
  return s;
}

// Two ranks exchanging 6 messages each way, a broadcast, a barrier; `hurt`
// changes rank 0's call `at` (1: its first send).
std::vector<Syn> ring(uint32_t r, size_t at = SIZE_MAX, const std::function<void(Syn&)>& hurt = {}) {
  std::vector<Syn> v{make(kFunc_MPI_Init, 0)};
  for (int i = 0; i < 6; ++i) {
    Syn s = make(kFunc_MPI_Send, 1, 1 - r, 100), q = make(kFunc_MPI_Recv, 2, 1 - r, 100);
    if (r == 0) v.insert(v.end(), {s, q});
    else v.insert(v.end(), {q, s});
  }
  Syn b = make(kFunc_MPI_Bcast, 3, kNone, 4);
  b.root = 0;
  v.push_back(b);
  v.push_back(make(kFunc_MPI_Barrier, 4));
  v.push_back(make(kFunc_MPI_Finalize, 5));
  for (Syn& s : v)
    if (s.func != kFunc_MPI_Init && s.func != kFunc_MPI_Finalize && s.func != kFunc_MPI_Send && s.func != kFunc_MPI_Recv)
      s.comm = kCommWorld;
  if (r == 0 && hurt) hurt(v.at(at));
  return v;
}

std::string load_error(const std::function<std::vector<Syn>(uint32_t)>& program) {
  std::string dir = temp_dir("bounds");
  write_synthetic(dir, 2, program);
  merge::Options opt;
  try {
    merge::merge(merge::load(dir, opt), opt);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

template <typename T>
std::string read_error(const std::string& path, T (*reader)(const std::string&)) {
  try {
    reader(path);
  } catch (const TraceError& e) {
    return e.what();
  }
  return "";
}

// A hostile change to a valid file's content, and what the refusal must say.
template <typename T>
struct Hurt {
  std::function<void(T&)> hurt;
  std::string says;
};

// Each case applied to a copy of `good`, written to DIR/badK.EXT and read
// back: refused with "PATH: corrupt WHAT (" and the case's words.
template <typename T>
void expect_each_refused(const T& good, const std::vector<Hurt<T>>& cases, const std::string& dir, const char* ext,
                         void (*write)(const std::string&, const T&), T (*read)(const std::string&),
                         const std::string& what_file) {
  for (size_t k = 0; k < cases.size(); ++k) {
    T bad = good;
    cases[k].hurt(bad);
    std::string path = dir + "/bad" + std::to_string(k) + ext;
    write(path, bad);
    std::string what = read_error(path, read);
    EXPECT_NE(what.find(path + ": corrupt " + what_file + " ("), std::string::npos) << what;
    EXPECT_NE(what.find(cases[k].says), std::string::npos) << "expected: " << cases[k].says << "\ngot: " << what;
  }
}

MergedTrace merged_ring() {
  std::string dir = temp_dir("bounds-ok");
  write_synthetic(dir, 2, [](uint32_t r) { return ring(r); });
  merge::Options opt;
  return merge::merge(merge::load(dir, opt), opt);
}

}  // namespace

TEST(ValueBounds, HostileValuesInARankTraceAreRefusedNamingThem) {
  EXPECT_EQ(load_error([](uint32_t r) { return ring(r); }), "");  // the program itself is fine
  struct Case {
    size_t at;
    std::function<void(Syn&)> hurt;
    std::string says;
  };
  const std::vector<Case> cases = {
      {1, [](Syn& s) { s.peer = 1000000; }, "corrupt event 1 (MPI_Send): peer 1000000 outside the world of 2 ranks"},
      {1, [](Syn& s) { s.peer = -7; }, "peer -7 outside the world of 2 ranks"},
      {1, [](Syn& s) { s.tag = -9; }, "tag -9 out of range"},
      {1, [](Syn& s) { s.tag = int64_t{1} << 40; }, "tag 1099511627776 out of range"},
      {1, [](Syn& s) { s.count = -5; }, "count -5 out of range"},
      {1, [](Syn& s) { s.count = 3000000000LL; }, "count 3000000000 out of range"},
      {1, [](Syn& s) { s.gap = int64_t{1} << 60; }, "a time beyond a year after the start"},
      {1, [](Syn& s) { s.dur = int64_t{1} << 60; }, "a time beyond a year after the start"},
      {1, [](Syn& s) { s.comm = 99; }, "communicator 99 was never defined"},
      {13, [](Syn& s) { s.root = 7; }, "corrupt event 13 (MPI_Bcast): root 7 outside the world of 2 ranks"},
      {15, [](Syn& s) { s.kernel_rate = int64_t{1} << 50; }, "kernel rate 1125899906842624 out of range"},
      {1, [](Syn& s) { s.work = -100; }, "CPU time of its gap -100 ns out of range"},
      {1, [](Syn& s) { s.team = int64_t{1} << 60; }, "its other threads' CPU time 1152921504606846976 ns out of range"},
      {1, [](Syn& s) { s.team = -3; }, "corrupt event record 1 in the chunk"},
  };
  for (const Case& c : cases) {
    std::string what = load_error([&](uint32_t r) { return ring(r, c.at, c.hurt); });
    EXPECT_NE(what.find("rank-00000.skt: corrupt event"), std::string::npos) << what;
    EXPECT_NE(what.find(c.says), std::string::npos) << "expected: " << c.says << "\ngot: " << what;
  }
}

TEST(ValueBounds, AHeaderWithAnImpossibleKernelRateIsRefused) {
  for (double rate : {std::nan(""), 1e300, -1.0}) {
    std::string dir = temp_dir("bounds-header");
    for (uint32_t r = 0; r < 2; ++r) {
      TraceHeader h = sample_header(r, 2, 7);
      h.kernel_units_per_s = rate;
      std::vector<Event> calls(2);
      calls[0].func = kFunc_MPI_Init;
      calls[1].func = kFunc_MPI_Finalize;
      calls[1].seq = 1;
      calls[1].t_start_ns = 2000;
      calls[1].gap_ns = 1000;
      write_trace(dir + "/" + TraceDir::rank_file_name(r), h, calls, 4096, EndStatus::kFinalized);
    }
    merge::Options opt;
    try {
      merge::load(dir, opt);
      ADD_FAILURE() << "accepted a kernel rate of " << rate;
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("rank-00000.skt: corrupt header (kernel rate"), std::string::npos)
          << e.what();
    }
  }
}

TEST(ValueBounds, HostileMergedTracesAreRefusedNamingTheValue) {
  const MergedTrace good = merged_ring();
  std::string dir = temp_dir("bounds-merged");
  write_merged(dir + "/ok.skm", good);
  EXPECT_EQ(read_error(dir + "/ok.skm", read_merged), "");
  size_t send = 0;
  while (good.identities[good.events[send].identity].func != kFunc_MPI_Send) ++send;
  size_t bcast = 0;
  while (good.identities[good.events[bcast].identity].func != kFunc_MPI_Bcast) ++bcast;
  const std::vector<Hurt<MergedTrace>> cases = {
      {[](MergedTrace& m) { m.ranks[1].kernel_units_per_s = INFINITY; }, "rank 1's kernel rate inf is out of range"},
      {[&](MergedTrace& m) { m.events[send].params[size_t(Param::peer)] = {ParamKind::kConst, 9, 0}; },
       "(MPI_Send): peer 9 is out of range"},
      {[&](MergedTrace& m) { m.events[send].params[size_t(Param::peer)] = {ParamKind::kLinear, 1000, 1}; },
       "peer 1000 + 1*rank is out of range"},
      {[&](MergedTrace& m) { m.events[send].params[size_t(Param::count)] = {ParamKind::kConst, -4, 0}; },
       "count -4 is out of range"},
      {[&](MergedTrace& m) {
         Identity id = m.identities[m.events[bcast].identity];
         id.root = 5;
         m.identities.push_back(id);
         m.events[bcast].identity = static_cast<uint32_t>(m.identities.size() - 1);
       },
       "root 5 outside the world of 2 ranks"},
      {[](MergedTrace& m) { m.ranks[0].durations[1] = -5; }, "rank 0's call time -5 ns at its event 1 is out of range"},
      {[](MergedTrace& m) { m.ranks[0].gaps[2] = int64_t{1} << 60; }, "rank 0's gap"},
  };
  expect_each_refused(good, cases, dir, ".skm", write_merged, read_merged, "merged trace");
}

TEST(ValueBounds, HostileFoldedProgramsAreRefusedNamingTheValue) {
  const FoldedProgram good = fold::compress(merged_ring(), {});
  std::string dir = temp_dir("bounds-folded");
  write_folded(dir + "/ok.skf", good);
  ASSERT_EQ(read_error(dir + "/ok.skf", read_folded), "");
  size_t loop = 0, event;
  while (!good.nodes[loop].is_loop()) ++loop;
  event = good.nodes[loop].body[0];  // a call the loop makes more than once
  ASSERT_FALSE(good.nodes[event].is_loop());
  ASSERT_GT(good.nodes[loop].count, 1u) << good.to_string();
  const std::vector<Hurt<FoldedProgram>> cases = {
      {[&](FoldedProgram& p) { p.nodes[loop].count = UINT64_MAX; },
       "its loops stand for more calls than the"},
      {[&](FoldedProgram& p) { p.nodes[loop].count += 1000; }, "its loops stand for more calls than the"},
      {[&](FoldedProgram& p) { p.nodes[event].instances += 1; }, "node " + std::to_string(event) + " says it runs"},
      {[&](FoldedProgram& p) { p.nodes[event].gap[0].mean = std::nan(""); }, "a time statistic out of range (mean nan"},
      {[&](FoldedProgram& p) { p.nodes[event].gap[1].mean = 1e30; }, "a time statistic out of range (mean 1e+30"},
      {[&](FoldedProgram& p) {
         CountRule rule;
         rule.param = Param::count;
         rule.kind = {RuleKind::kLinear, RuleKind::kLinear};
         rule.a = {100, 100};
         rule.b = {-1e6, 0};
         rule.min = rule.max = {100, 100};
         p.nodes[event].rules.push_back(rule);
       },
       "the rule of count (100 + -1e+06*i) is out of range"},
      {[&](FoldedProgram& p) {  // linear in the innermost loop's iteration k (rule kind 5)
         CountRule rule;
         rule.param = Param::tag;
         rule.kind = {RuleKind::kLoopLinear, RuleKind::kLoopLinear};
         rule.a = {1, 1};
         rule.b = {1e12, 1};
         rule.min = rule.max = {1, 1};
         p.nodes[event].rules.push_back(rule);
       },
       "the rule of tag (1 + 1e+12*k) is out of range"},
      {[](FoldedProgram& p) { p.symbols.ranks[0].kernel_units_per_s = -3; }, "symbols: rank 0's kernel rate -3"},
  };
  expect_each_refused(good, cases, dir, ".skf", write_folded, read_folded, "folded program");
}
