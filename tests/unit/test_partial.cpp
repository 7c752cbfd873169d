// Where the skeleton of a partial trace stops (generate/src/partial.h): the
// longest prefix of the merged trace that every rank can run to its end.
#include <gtest/gtest.h>

#include <vector>

#include "folded_fixtures.h"
#include "partial.h"
#include "skel/compress.h"
#include "skel/merge.h"
#include "skel/skel_funcs.h"
#include "synthetic.h"
#include "trace_fixtures.h"

namespace {

using skt::testing::call;
using skt::testing::message;
using skt::testing::Syn;

// Steps of `messages` non-blocking exchanges with the partner rank: the
// receives posted, then the sends, every request completed by one Waitall,
// then an MPI_Allreduce of every rank. Each rank makes its exchanges from
// call sites of its own, so that merge lines up only the MPI_Allreduce and
// writes a step's exchanges one rank after the other: a prefix that ends
// after one rank's Waitall and before the other's last send does not
// complete, nor one that ends among the second rank's receives.
std::vector<Syn> exchange_steps(uint32_t r, int steps, int messages) {
  std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
  const uint32_t site = 10 * (r + 1);
  int64_t next_req = 1;
  for (int s = 0; s < steps; ++s) {
    std::vector<int64_t> reqs;
    for (uint32_t func : {skt::kFunc_MPI_Irecv, skt::kFunc_MPI_Isend})
      for (int j = 0; j < messages; ++j) {
        Syn post = message(func, site + (func == skt::kFunc_MPI_Isend), r ^ 1, j);
        post.reqs = {next_req++};
        reqs.push_back(post.reqs[0]);
        v.push_back(post);
      }
    Syn wait = call(skt::kFunc_MPI_Waitall, site + 2);
    wait.reqs = reqs;
    wait.sources.assign(reqs.size(), -1);
    v.push_back(wait);
    Syn sum = call(skt::kFunc_MPI_Allreduce, 4);
    sum.count = 1;
    v.push_back(sum);
  }
  v.push_back(call(skt::kFunc_MPI_Finalize, 5));
  return v;
}

// The merged trace of P ranks' programs with rank r's calls cut to its
// first keep[r] (as if it had died there), merged as merge
// --allow-partial does.
skt::MergedTrace merged_partial(uint32_t P, const std::function<std::vector<Syn>(uint32_t)>& program,
                                const std::vector<size_t>& keep) {
  const std::string dir = skt::testing::temp_dir("partial");
  skt::testing::write_synthetic(dir, P, program);
  skt::merge::Options mo;
  mo.allow_partial = true;
  skt::merge::Loaded l = skt::merge::load(dir, mo);
  for (uint32_t r = 0; r < P; ++r) {
    if (keep[r] >= l.ranks[r].events.size()) continue;
    l.ranks[r].events.resize(keep[r]);
    l.tables.ranks[r].events = keep[r];
    l.tables.ranks[r].end = skt::TraceEnd::kTruncated;
  }
  return skt::merge::merge(l, mo);
}

}  // namespace

// A rank that died inside a step left that step's exchanges half made: no
// prefix that ends inside the step completes, and whether one does is not
// monotone in its length (it does at every step's end, and only there). The
// cut must stop at the end of the last whole step, not wherever stepping
// back by 1, 2, 4, ... events and halving happened to find a prefix that
// completes: on miniAMR (4 Open MPI ranks, killed mid-run) that search
// stopped 10,708 merged events before the dead rank's last call.
TEST(PartialTrace, TheSkeletonStopsAtTheLastWholeStepBeforeTheRankDied) {
  const int steps = 60, messages = 5;
  const size_t per_step = 2 * messages + 2;  // one rank's calls in a step
  for (size_t died_in : {size_t{17}, size_t{38}, size_t{55}}) {
    for (size_t into : {size_t{3}, size_t{7}, size_t{11}}) {
      const size_t keep0 = 1 + died_in * per_step + into;  // MPI_Init, whole steps, part of one
      skt::MergedTrace m = merged_partial(2, [&](uint32_t r) { return exchange_steps(r, steps, messages); },
                                          {keep0, SIZE_MAX});
      const skt::gen::FoldPrefix fold = [](const skt::MergedTrace& prefix) {
        return skt::fold::compress(prefix, skt::fold::CompressOptions{});
      };
      const std::string said = skt::gen::cut_partial_trace(m, fold);
      ASSERT_FALSE(said.empty());
      const size_t whole = 1 + died_in * per_step;  // through the last whole step's MPI_Allreduce
      EXPECT_EQ(m.ranks[0].events, whole) << "died " << into << " calls into step " << died_in << ": " << said;
      EXPECT_EQ(m.ranks[1].events, whole) << "died " << into << " calls into step " << died_in << ": " << said;
    }
  }
}
