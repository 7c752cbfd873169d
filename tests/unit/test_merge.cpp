// Merge on hand-made traces: each scenario of MISSION.md §2 has a known
// right answer, and every merge must rebuild each rank exactly (verify()).
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <random>
#include <set>
#include <utility>

#include "skel/codec.h"
#include "skel/compress.h"
#include "skel/merge.h"
#include "skel/pipeline.h"
#include "skel/skel_funcs.h"
#include "folded_fixtures.h"
#include "synthetic.h"
#include "trace_fixtures.h"

using namespace skt;
using namespace skt::testing;

namespace {

// run()'s alignment work bound: the Options' own (64 for --order align, 16 for auto) unless given.
constexpr size_t kDefaultWork = SIZE_MAX;

struct Result {
  merge::Loaded loaded;
  MergedTrace merged;
  merge::Ordered ordered;
};

Result run(uint32_t P, const std::function<std::vector<Syn>(uint32_t)>& program, uint32_t lookahead = 64,
           merge::Order order = merge::Options{}.order, size_t align_work = kDefaultWork,
           std::function<uint64_t(const MergedTrace&)> judge = {}) {
  std::string dir = temp_dir("merge");
  write_synthetic(dir, P, program);
  merge::Options opt;
  opt.lookahead = lookahead;
  opt.order = order;
  opt.judge = std::move(judge);
  if (align_work != kDefaultWork) opt.align_work = opt.auto_align_work = align_work;  // both orders' bound
  Result res{merge::load(dir, opt), {}};
  res.merged = merge::merge(res.loaded, opt, &res.ordered);
  // Through the file format and back, then every rank rebuilt.
  std::string path = dir + "/merged.skm";
  write_merged(path, res.merged);
  res.merged = read_merged(path);
  auto problems = merge::verify(res.merged, res.loaded);
  for (const auto& p : problems) ADD_FAILURE() << p;
  return res;
}

std::vector<uint32_t> all(uint32_t P) {
  std::vector<uint32_t> v;
  for (uint32_t r = 0; r < P; ++r) v.push_back(r);
  return v;
}

uint32_t func_of(const MergedTrace& m, size_t i) { return m.identities[m.events[i].identity].func; }

Syn send(uint32_t site, int64_t peer, int64_t count = 8) {
  Syn s;
  s.func = kFunc_MPI_Send;
  s.site = site;
  s.peer = peer;
  s.tag = 0;
  s.count = count;
  return s;
}
Syn recv(uint32_t site, int64_t peer, int64_t count = 8) {
  Syn s = send(site, peer, count);
  s.func = kFunc_MPI_Recv;
  return s;
}
Syn simple(uint32_t func, uint32_t site) { return call(func, site); }

// Send, Isend, Recv, Irecv, Wait (in that order), each from `sites` call
// sites: identity k * sites + s.
std::vector<Identity> point_to_point_ids(uint32_t sites) {
  std::vector<Identity> ids;
  uint32_t funcs[] = {kFunc_MPI_Send, kFunc_MPI_Isend, kFunc_MPI_Recv, kFunc_MPI_Irecv, kFunc_MPI_Wait};
  for (uint32_t k = 0; k < 5; ++k)
    for (uint32_t site = 0; site < sites; ++site) {
      Identity id;
      id.func = funcs[k];
      id.callsite = site * 10 + k;
      ids.push_back(id);
    }
  return ids;
}

// 40 random calls of `ids` (each Irecv creates a request, each Wait
// completes the latest open one, or 999 when none is open); times(e, i)
// sets call i's gap and duration.
merge::RankData random_rank(const std::vector<Identity>& ids, std::mt19937& rng,
                            const std::function<void(merge::RankEvent&, int)>& times) {
  merge::RankData rd;
  int64_t next_req = 1;
  std::vector<int64_t> open_irecvs;
  for (int i = 0; i < 40; ++i) {
    merge::RankEvent e;
    e.identity = rng() % ids.size();
    e.seq = static_cast<uint32_t>(i);
    times(e, i);
    uint32_t f = ids[e.identity].func;
    if (f == kFunc_MPI_Irecv) {
      e.created_request = next_req;
      open_irecvs.push_back(next_req++);
    }
    if (f == kFunc_MPI_Wait) {
      e.lists = static_cast<int32_t>(rd.lists.size());
      rd.lists.emplace_back();
      int64_t req = open_irecvs.empty() ? 999 : open_irecvs.back();
      if (!open_irecvs.empty()) open_irecvs.pop_back();
      rd.lists.back()[size_t(ListField::reqrefs)] = {req};
    }
    rd.events.push_back(e);
  }
  return rd;
}
// ... with gaps under 1 us: calls close enough together to share a step,
// unless the rule under test splits them.
merge::RankData random_rank_close_calls(const std::vector<Identity>& ids, std::mt19937& rng) {
  return random_rank(ids, rng, [&](merge::RankEvent& e, int) { e.gap = rng() % 1000; });
}

}  // namespace

// A ring in which rank 0 sends first and the others pass the message on
// (Recv; Send) is a pipeline: each rank's send waits for its receive. The
// merge keeps every rank's order (normalisation used to put the others'
// sends first too, which made the ring one step of simultaneous messages).
TEST(Merge, ARingKeepsItsPipeline) {
  const uint32_t P = 4;
  auto res = run(P, [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (int it = 0; it < 3; ++it) {
      Syn s = send(1, (r + 1) % P), q = recv(2, (r + P - 1) % P);
      s.gap = 5000 + it;  // computation before the pair
      if (r == 0) {
        v.push_back(s);
        v.push_back(q);
      } else {
        q.gap = s.gap;
        s.gap = 1000;
        v.push_back(q);
        v.push_back(s);
      }
    }
    v.push_back(simple(kFunc_MPI_Finalize, 3));
    return v;
  });
  const MergedTrace& m = res.merged;
  for (uint32_t r = 0; r < P; ++r) {
    SCOPED_TRACE("rank " + std::to_string(r));
    std::vector<uint32_t> funcs;
    std::vector<int64_t> gaps;
    for (size_t i = 0; i < m.events.size(); ++i) {
      const auto& rk = m.events[i].ranks;
      if (std::find(rk.begin(), rk.end(), r) == rk.end()) continue;
      gaps.push_back(m.ranks[r].gaps[funcs.size()]);  // one per event of the rank
      funcs.push_back(func_of(m, i));
    }
    ASSERT_EQ(funcs.size(), 8u);  // Init, 3 x (Send, Recv), Finalize
    for (int it = 0; it < 3; ++it) {
      size_t first = 1 + 2 * static_cast<size_t>(it);
      EXPECT_EQ(funcs[first], r == 0 ? kFunc_MPI_Send : kFunc_MPI_Recv) << it;
      EXPECT_EQ(funcs[first + 1], r == 0 ? kFunc_MPI_Recv : kFunc_MPI_Send) << it;
      EXPECT_EQ(gaps[first], 5000 + it) << "the computation before the pair stays before it";
    }
  }
}

// A 1.2 trace's MPI_Finalize carries the kernel's rate over the whole run;
// it replaces the header's (MPI_Init's) rate, rank by rank, and a rank
// without it keeps its header's.
TEST(Merge, TheRunsKernelRateAtFinalizeReplacesTheCalibrationAtInit) {
  const int64_t run_rate = 31000000;
  auto res = run(2, [&](uint32_t r) {
    Syn fin = simple(kFunc_MPI_Finalize, 9);
    if (r == 1) fin.kernel_rate = run_rate;
    return std::vector<Syn>{simple(kFunc_MPI_Init, 0), simple(kFunc_MPI_Barrier, 1), fin};
  });
  const double header_rate = sample_header(0, 2, 7).kernel_units_per_s;
  ASSERT_NE(header_rate, static_cast<double>(run_rate));
  EXPECT_DOUBLE_EQ(res.merged.ranks[0].kernel_units_per_s, header_rate);
  EXPECT_DOUBLE_EQ(res.merged.ranks[1].kernel_units_per_s, static_cast<double>(run_rate));
}

TEST(Merge, RootOnlyCallsAreTheRootsAlone) {
  const uint32_t P = 4;
  auto res = run(P, [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    if (r == 0)
      for (uint32_t w = 1; w < P; ++w) v.push_back(recv(1, w));
    else
      v.push_back(send(2, 0));
    Syn b = simple(kFunc_MPI_Barrier, 3);
    v.push_back(b);
    return v;
  });
  const MergedTrace& m = res.merged;
  ASSERT_EQ(m.events.size(), 6u);  // Init, Send (1..3), Recv x3 (0), Barrier
  size_t sends = 0, recvs = 0;
  for (const auto& e : m.events) {
    uint32_t f = m.identities[e.identity].func;
    if (f == kFunc_MPI_Send) {
      ++sends;
      EXPECT_EQ(e.ranks, (std::vector<uint32_t>{1, 2, 3}));
      EXPECT_EQ(e.params[size_t(Param::peer)].kind, ParamKind::kConst);
    }
    if (f == kFunc_MPI_Recv) {
      ++recvs;
      EXPECT_EQ(e.ranks, std::vector<uint32_t>{0});
    }
  }
  EXPECT_EQ(sends, 1u);
  EXPECT_EQ(recvs, 3u);
  EXPECT_EQ(m.events.back().ranks, all(P));
}

TEST(Merge, BoundaryRanksWithFewerNeighboursSitOut) {
  const uint32_t P = 6;
  auto res = run(P, [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (int it = 0; it < 2; ++it) {
      if (r + 1 < P) v.push_back(send(1, r + 1, 16));  // to the right, if there is one
      if (r > 0) v.push_back(send(2, r - 1, 16));      // to the left
      if (r > 0) v.push_back(recv(3, r - 1, 16));
      if (r + 1 < P) v.push_back(recv(4, r + 1, 16));
      v.push_back(simple(kFunc_MPI_Allreduce, 5));
    }
    return v;
  });
  const MergedTrace& m = res.merged;
  ASSERT_EQ(m.events.size(), 1u + 2 * 5);
  const MergedEvent& right = m.events[1];
  EXPECT_EQ(right.ranks, (std::vector<uint32_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(right.params[size_t(Param::peer)].kind, ParamKind::kRel);
  EXPECT_EQ(m.events[2].ranks, (std::vector<uint32_t>{1, 2, 3, 4, 5}));
  EXPECT_EQ(m.events[5].ranks, all(P));  // the Allreduce
}

TEST(Merge, AnySourceReceivesKeepTheMatchedSource) {
  const uint32_t P = 4;
  auto res = run(P, [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    if (r == 0) {
      for (uint32_t k = 0; k < P - 1; ++k) {
        Syn q = recv(1, P - 1 - k);  // workers answer in reverse order
        q.flags = kFlagAnySource;
        v.push_back(q);
      }
    } else {
      v.push_back(send(2, 0));
    }
    return v;
  });
  const MergedTrace& m = res.merged;
  std::vector<int64_t> sources;
  for (const auto& e : m.events)
    if (m.identities[e.identity].func == kFunc_MPI_Recv) {
      EXPECT_EQ(m.identities[e.identity].peer_class, PeerClass::kAnySource);
      sources.push_back(m.value(e, Param::peer, 0));
    }
  EXPECT_EQ(sources, (std::vector<int64_t>{3, 2, 1}));
}

// A master posts an MPI_ANY_SOURCE Irecv and waits for it, round after
// round; the worker makes one Send a round. The merged order must keep the
// application's pace, one Send per round, at every point: a merge that
// counts the Irecv as the master's turn let the worker's sends run two per
// round, and the loop had more sends than receives (the generator could not
// cut it).
TEST(Merge, AWorkerKeepsPaceWithAMasterThatPostsAndWaits) {
  const int rounds = 40;
  auto res = run(2, [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (int k = 0; k < rounds; ++k) {
      if (r == 0) {
        Syn irecv = recv(1, 1);
        irecv.func = kFunc_MPI_Irecv;
        irecv.flags = kFlagAnySource;
        irecv.reqs = {k};
        Syn wait = simple(kFunc_MPI_Waitany, 2);
        wait.reqs = {k};
        wait.comm = kNone;
        v.insert(v.end(), {irecv, wait});
      } else {
        v.push_back(send(3, 0));
      }
    }
    v.push_back(simple(kFunc_MPI_Finalize, 4));
    return v;
  });
  const MergedTrace& m = res.merged;
  // Rounds the master has begun (Irecv) against the worker's sends, after
  // every merged event: the worker may be one ahead or one behind, no more.
  int begun = 0, sent = 0, worst = 0;
  for (size_t i = 0; i < m.events.size(); ++i) {
    uint32_t f = func_of(m, i);
    begun += f == kFunc_MPI_Irecv;
    sent += f == kFunc_MPI_Send;
    worst = std::max(worst, std::abs(sent - begun));
  }
  EXPECT_EQ(begun, rounds);
  EXPECT_EQ(sent, rounds);
  EXPECT_LE(worst, 1);
}

TEST(Merge, SubCommunicatorsAreOneSymbolWithPerRankGroups) {
  const uint32_t P = 5;
  auto res = run(P, [&](uint32_t r) {
    Syn split = simple(kFunc_MPI_Comm_split, 1);
    split.color = r == 4 ? 9 : r % 2;  // rank 4 alone holds its communicator
    split.new_comm = 2;
    for (uint32_t q = 0; q < P; ++q)
      if ((q == 4 ? 9 : q % 2) == split.color) split.members.push_back(q);
    Syn bcast = simple(kFunc_MPI_Bcast, 2);
    bcast.comm = 2;
    bcast.count = 3;
    Syn free = simple(kFunc_MPI_Comm_free, 3);
    free.comm = 2;
    return std::vector<Syn>{simple(kFunc_MPI_Init, 0), split, bcast, free};
  });
  const MergedTrace& m = res.merged;
  ASSERT_EQ(m.events.size(), 4u);
  for (const auto& e : m.events) EXPECT_EQ(e.ranks, all(P));
  const Identity& b = m.identities[m.events[2].identity];
  ASSERT_GE(b.comm, 2);
  const CommSymbol& c = m.comms[static_cast<size_t>(b.comm)];
  EXPECT_EQ(c.created_by, kFunc_MPI_Comm_split);
  EXPECT_EQ(c.members(1), (std::vector<int64_t>{1, 3}));
  EXPECT_EQ(c.members(2), (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(c.members(4), (std::vector<int64_t>{4}));
  EXPECT_EQ(m.events[1].params[size_t(Param::color)].kind, ParamKind::kTable);
  EXPECT_EQ(c.groups.size(), 3u) << "each distinct group once";
  EXPECT_EQ(m.comms[kCommWorld].groups.size(), 1u);
  EXPECT_EQ(m.comms[kCommSelf].members(3), std::vector<int64_t>{3});
}

TEST(Merge, CommunicatorsFreedAndRemadeInALoopKeepOneSymbol) {
  auto res = run(2, [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (int it = 0; it < 3; ++it) {
      Syn dup = simple(kFunc_MPI_Comm_dup, 1);
      dup.new_comm = 2 + it;  // a new local id each time, as the tracer gives
      dup.members = {0, 1};
      Syn bar = simple(kFunc_MPI_Barrier, 2);
      bar.comm = 2 + it;
      Syn free = simple(kFunc_MPI_Comm_free, 3);
      free.comm = 2 + it;
      v.insert(v.end(), {dup, bar, free});
    }
    return v;
  });
  const MergedTrace& m = res.merged;
  EXPECT_EQ(m.identities[m.events[2].identity].comm, m.identities[m.events[5].identity].comm);
  EXPECT_EQ(m.events[2].identity, m.events[8].identity);
}

namespace {

// Rank r's calls where one MPI_Comm_split call makes a communicator of
// `members` (the others MPI_UNDEFINED), which they reduce on and free; the
// tracer gives it local id 2 each time.
void split_reduce_free(std::vector<Syn>& v, uint32_t r, const std::vector<int64_t>& members) {
  const bool mine = std::find(members.begin(), members.end(), r) != members.end();
  Syn split = simple(kFunc_MPI_Comm_split, 1);
  split.color = mine ? 0 : -32766;  // MPI_UNDEFINED
  if (mine) split.new_comm = 2, split.members = members;
  v.push_back(split);
  if (!mine) return;
  Syn sum = simple(kFunc_MPI_Allreduce, 2);
  sum.comm = 2;
  Syn free = simple(kFunc_MPI_Comm_free, 3);
  free.comm = 2;
  v.insert(v.end(), {sum, free});
}

}  // namespace

// Refinements that move (tests/apps/periods.c): one MPI_Comm_split call
// makes, four times a period, a communicator of other owners ({0,1},
// {1,2}, {2,3}, {3}; the others MPI_UNDEFINED), reduces on it and frees it,
// the tracer giving it the same local id each time. Each group is a
// symbol's (a rank's group in a symbol is one, and peers are read from
// it: rank 2 had {2,3} for its group when it reduced in {1,2}), and the
// second period takes the first's symbols again (its loop folds).
TEST(Merge, ACommunicatorRemadeWithOtherMembersIsASymbolOfItsOwn) {
  const uint32_t P = 4;
  auto owners = [](int g) { return g < 3 ? std::vector<int64_t>{g, g + 1} : std::vector<int64_t>{3}; };
  auto res = run(P, [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (int period = 0; period < 2; ++period)
      for (int g = 0; g < 4; ++g) {
        split_reduce_free(v, r, owners(g));
      }
    return v;
  });
  const MergedTrace& m = res.merged;
  std::vector<size_t> sums;
  for (size_t i = 0; i < m.events.size(); ++i)
    if (func_of(m, i) == kFunc_MPI_Allreduce) sums.push_back(i);
  ASSERT_EQ(sums.size(), 8u) << "one reduction per refinement and period";
  for (size_t k = 0; k < sums.size(); ++k) {
    const MergedEvent& e = m.events[sums[k]];
    const std::vector<int64_t> own = owners(static_cast<int>(k % 4));
    const int64_t comm = m.identities[e.identity].comm;
    ASSERT_GE(comm, 2);
    EXPECT_EQ(std::vector<int64_t>(e.ranks.begin(), e.ranks.end()), own) << "reduction " << k;
    for (int64_t r : own)
      EXPECT_EQ(m.comms[static_cast<size_t>(comm)].members(static_cast<uint32_t>(r)), own)
          << "rank " << r << "'s group in refinement " << k % 4;
    if (k >= 4) EXPECT_EQ(e.identity, m.events[sums[k - 4]].identity) << "the second period's symbol";
  }
}

// Rank 0 shares a communicator with each other rank in turn (one split
// call, 69 groups {0, j}): past 64 slots looked at, a group's members
// still find one symbol, their own group in it.
TEST(Merge, ManyGroupsOfOneCallEachKeepTheirMembers) {
  const uint32_t P = 70;
  auto res = run(P, [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (uint32_t j = 1; j < P; ++j) split_reduce_free(v, r, {0, j});
    return v;
  });
  const MergedTrace& m = res.merged;
  size_t j = 0;
  for (size_t i = 0; i < m.events.size(); ++i) {
    if (func_of(m, i) != kFunc_MPI_Allreduce) continue;
    ++j;
    const std::vector<int64_t> own{0, static_cast<int64_t>(j)};
    EXPECT_EQ(std::vector<int64_t>(m.events[i].ranks.begin(), m.events[i].ranks.end()), own);
    const CommSymbol& c = m.comms[static_cast<size_t>(m.identities[m.events[i].identity].comm)];
    for (int64_t r : own) EXPECT_EQ(c.members(static_cast<uint32_t>(r)), own) << "group " << j << ", rank " << r;
  }
  EXPECT_EQ(j, P - 1);
}

TEST(Merge, CountsLinearInTheRankAndRequestsReferToTheirCalls) {
  const uint32_t P = 4;
  auto res = run(P, [&](uint32_t r) {
    Syn isend = send(1, (r + 1) % P, 10 + 3 * r);
    isend.func = kFunc_MPI_Isend;
    isend.reqs = {100 + r};
    Syn irecv = recv(2, (r + P - 1) % P, 7);
    irecv.func = kFunc_MPI_Irecv;
    irecv.reqs = {200 + r};
    Syn waitall = simple(kFunc_MPI_Waitall, 3);
    waitall.reqs = {200 + r, 100 + r};
    waitall.comm = kNone;
    return std::vector<Syn>{simple(kFunc_MPI_Init, 0), irecv, isend, waitall};
  });
  const MergedTrace& m = res.merged;
  ASSERT_EQ(m.events.size(), 4u);
  // normalised: the Irecv comes before the Isend
  EXPECT_EQ(func_of(m, 1), kFunc_MPI_Irecv);
  EXPECT_EQ(func_of(m, 2), kFunc_MPI_Isend);
  const ParamDesc& count = m.events[2].params[size_t(Param::count)];
  EXPECT_EQ(count.kind, ParamKind::kLinear);
  EXPECT_EQ(count.a, 10);
  EXPECT_EQ(count.b, 3);
  const ListDesc* refs = m.events[3].find_list(ListField::reqrefs);
  ASSERT_NE(refs, nullptr);
  EXPECT_TRUE(refs->same);
  EXPECT_EQ(refs->lists[0], (std::vector<int64_t>{2, 1}));  // Irecv 2 back, Isend 1 back
}

TEST(Merge, ButterflyPeersAreRankXorMask) {
  const uint32_t P = 8;
  auto res = run(P, [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (uint32_t mask = 1; mask < P; mask <<= 1) v.push_back(send(1 + mask, r ^ mask));
    return v;
  });
  const MergedTrace& m = res.merged;
  ASSERT_EQ(m.events.size(), 4u);
  for (size_t i = 1; i < 3; ++i) {
    EXPECT_EQ(m.events[i].params[size_t(Param::peer)].kind, ParamKind::kXor) << i;
    EXPECT_EQ(m.events[i].params[size_t(Param::peer)].a, int64_t{1} << (i - 1));
  }
  // rank XOR 4 among 8 ranks is (rank + 4) mod 8: the ring rule, tried first
  EXPECT_EQ(m.events[3].params[size_t(Param::peer)].kind, ParamKind::kRel);
}

// Irecv, then the send, then the Wait: every receive is posted before a rank
// blocks, also where a fold cuts the step at a loop boundary.
TEST(Merge, IrecvThenTheSendThenItsWait) {
  auto res = run(2, [&](uint32_t r) {
    Syn irecv = recv(1, 1 - r);
    irecv.func = kFunc_MPI_Irecv;
    irecv.reqs = {5};
    Syn wait = simple(kFunc_MPI_Wait, 2);
    wait.reqs = {5};
    wait.comm = kNone;
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    if (r == 0) v.insert(v.end(), {irecv, send(3, 1), wait});
    else v.insert(v.end(), {send(3, 0), irecv, wait});
    return v;
  });
  const MergedTrace& m = res.merged;
  ASSERT_EQ(m.events.size(), 4u);
  EXPECT_EQ(func_of(m, 1), kFunc_MPI_Irecv);
  EXPECT_EQ(func_of(m, 2), kFunc_MPI_Send);
  EXPECT_EQ(func_of(m, 3), kFunc_MPI_Wait);
  for (const auto& e : m.events) EXPECT_EQ(e.ranks.size(), 2u);
}

TEST(Merge, CrossedOrderBeyondNormalisationStillMergesEveryCall) {
  // Rank 0 does A then B, rank 1 B then A (collectives, not reordered):
  // each rank must still find all its calls, in its own order.
  auto res = run(2, [&](uint32_t r) {
    Syn a = simple(kFunc_MPI_Barrier, 1), b = simple(kFunc_MPI_Allreduce, 2);
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    if (r == 0) v.insert(v.end(), {a, b});
    else v.insert(v.end(), {b, a});
    return v;
  });
  EXPECT_EQ(res.merged.events.size(), 4u);  // Init, A(0), B(all), A(1)
}

TEST(Merge, LookaheadOfOneStillLossless) {
  const uint32_t P = 3;
  auto program = [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (int it = 0; it < 20; ++it) {
      if ((r + it) % 3 == 0) v.push_back(simple(kFunc_MPI_Barrier, 1));
      v.push_back(simple(kFunc_MPI_Allreduce, 2));
      if (it % 4 == static_cast<int>(r)) v.push_back(simple(kFunc_MPI_Bcast, 3));
    }
    return v;
  };
  run(P, program, 1);
  run(P, program, 8);
}

// NPB MG at 16 ranks: two halves of the ranks run the same cycle, but one
// half makes two exchanges more (the coarsest levels) and then sends the
// other half its result, which that half receives. Per cycle, ranks 0-1
// make C^3 R C^5 and ranks 2-3 C^5 S C^5 (C: a send and a receive, R two
// receives, S two sends). Aligned, every cycle is merged alike: C^3 by all,
// R by the first half, C^2 S by the second, C^5 by all, and the merged
// trace repeats with the cycle; the greedy walk pairs the halves'
// exchanges at places that shift from cycle to cycle.
// Each exchange, R and S follow 0.1 ms of computation, so that normalising
// keeps them apart (as MG's levels compute between their exchanges).
std::vector<Syn> uneven_halves(uint32_t r, int cycles) {
  const bool first = r < 2;
  const int64_t peer = (r + 2) % 4;
  auto after_work = [](Syn s) {
    s.gap = 100000;
    return s;
  };
  auto exchange = [&](std::vector<Syn>& v) {
    v.push_back(after_work(send(10, r ^ 1)));
    v.push_back(recv(11, r ^ 1));
  };
  std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
  for (int c = 0; c < cycles; ++c) {
    for (int k = 0; k < (first ? 3 : 5); ++k) exchange(v);
    if (first) {
      v.push_back(after_work(recv(20, peer)));
      v.push_back(recv(21, peer));
    } else {
      v.push_back(after_work(send(30, peer)));
      v.push_back(send(31, peer));
    }
    for (int k = 0; k < 5; ++k) exchange(v);
  }
  v.push_back(simple(kFunc_MPI_Finalize, 1));
  return v;
}

// The merged events of cycle c (after MPI_Init) as (identity, ranks), for a cycle of `len` events.
std::vector<std::pair<uint32_t, std::vector<uint32_t>>> cycle_events(const MergedTrace& m, int c, size_t len) {
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> out;
  for (size_t i = 1 + c * len; i < 1 + (c + 1) * len && i < m.events.size(); ++i)
    out.emplace_back(m.events[i].identity, m.events[i].ranks);
  return out;
}

TEST(Merge, AlignedHalvesThatMakeDifferentNumbersOfExchangesRepeatEveryCycle) {
  const int cycles = 6;
  Result res = run(4, [&](uint32_t r) { return uneven_halves(r, cycles); }, 64, merge::Order::kAlign);
  const MergedTrace& m = res.merged;
  // per cycle: 3 exchanges by all, R by the first half, 2 exchanges and S by the second, 5 by all
  const size_t len = 3 * 2 + 2 + 2 * 2 + 2 + 5 * 2;
  ASSERT_EQ(m.events.size(), 2 + cycles * len);
  const auto first = cycle_events(m, 0, len);
  for (int c = 1; c < cycles; ++c) EXPECT_EQ(cycle_events(m, c, len), first) << "cycle " << c;
  std::map<std::vector<uint32_t>, size_t> by_ranks;  // events per rank set in a cycle
  for (const auto& [id, ranks] : first) ++by_ranks[ranks];
  EXPECT_EQ(by_ranks[all(4)], 8u * 2);
  EXPECT_EQ(by_ranks[(std::vector<uint32_t>{0, 1})], 2u);
  EXPECT_EQ(by_ranks[(std::vector<uint32_t>{2, 3})], 2u * 2 + 2);
  // the greedy walk does not repeat so (what --align is for)
  Result greedy = run(4, [&](uint32_t r) { return uneven_halves(r, cycles); }, 64, merge::Order::kWalk);
  bool repeats = greedy.merged.events.size() == m.events.size();
  for (int c = 1; c < cycles && repeats; ++c) repeats = cycle_events(greedy.merged, c, len) == cycle_events(greedy.merged, 0, len);
  EXPECT_FALSE(repeats);
}

// NPB MG's V-cycles again, with fewer exchanges on each side of the halves'
// difference: per cycle one half makes C R C^2 and the other C^3 S C^2.
// Aligned run against run (the longest common run, then each side), the
// common runs that cross from one cycle into the next paired the halves'
// exchanges one way and the first cycle, which has no cycle before it,
// another way: the first V-cycle stayed out of the loop (MG at 16 ranks,
// class C: a main loop of 19 of its 20 V-cycles). Each half's calls repeat
// with the cycle, the same number of times: aligned period against period,
// every cycle is merged alike.
TEST(Merge, AlignedPeriodicHalvesMergeEveryCycleAlike) {
  for (int cycles : {2, 3, 7, 20}) {
    auto program = [&](uint32_t r) {
      const bool first = r < 2;
      const int64_t peer = (r + 2) % 4;
      std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
      auto exchanges = [&](int n) {
        for (int k = 0; k < n; ++k) {
          v.push_back(send(10, r ^ 1));
          v.back().gap = 100000;
          v.push_back(recv(11, r ^ 1));
        }
      };
      for (int c = 0; c < cycles; ++c) {
        exchanges(first ? 1 : 3);
        v.push_back(first ? recv(20, peer) : send(30, peer));
        v.back().gap = 100000;
        v.push_back(first ? recv(21, peer) : send(31, peer));
        exchanges(2);
      }
      v.push_back(simple(kFunc_MPI_Finalize, 1));
      return v;
    };
    Result res = run(4, program, 64, merge::Order::kAlign);
    const MergedTrace& m = res.merged;
    ASSERT_EQ((m.events.size() - 2) % static_cast<size_t>(cycles), 0u) << cycles;
    const size_t len = (m.events.size() - 2) / static_cast<size_t>(cycles);
    const auto first = cycle_events(m, 0, len);
    for (int c = 1; c < cycles; ++c) EXPECT_EQ(cycle_events(m, c, len), first) << cycles << " cycles, cycle " << c;
    // and in each cycle some of the halves' exchanges are one event of all ranks (two of the three here:
    // one period aligned alone, as two aligned together pair one half's C^3 across its periods with the
    // other's first C^3, the longest common run found earliest)
    size_t by_all = 0;
    for (const auto& [id, ranks] : first) by_all += ranks == all(4);
    EXPECT_EQ(by_all, 2u * 2) << cycles;
  }
}

TEST(Merge, AlignmentBeyondItsWorkBoundIsTheGreedyWalk) {
  auto program = [](uint32_t r) { return uneven_halves(r, 4); };
  Result bounded = run(4, program, 64, merge::Order::kAlign, 0);  // no work allowed: every alignment is over the bound
  Result greedy = run(4, program, 64, merge::Order::kWalk);
  ASSERT_EQ(bounded.merged.events.size(), greedy.merged.events.size());
  for (size_t i = 0; i < greedy.merged.events.size(); ++i) {
    EXPECT_EQ(bounded.merged.events[i].identity, greedy.merged.events[i].identity) << i;
    EXPECT_EQ(bounded.merged.events[i].ranks, greedy.merged.events[i].ranks) << i;
  }
}

// The merged events as (identity, ranks), to compare two merges.
std::vector<std::pair<uint32_t, std::vector<uint32_t>>> events_of(const MergedTrace& m) {
  std::vector<std::pair<uint32_t, std::vector<uint32_t>>> out;
  for (const auto& e : m.events) out.emplace_back(e.identity, e.ranks);
  return out;
}

// skelgen's judge: the length of the merge's fold per call site.
uint64_t folded_length(const MergedTrace& m) { return fold::compress(m, fold::CompressOptions{}).length(); }

TEST(Merge, AutoOrderIsTheAlignmentWhereItsFoldIsShorter) {
  // Both orders make 146 merged events here; only the alignment's repeats with the cycle.
  auto program = [](uint32_t r) { return uneven_halves(r, 6); };
  Result aligned = run(4, program, 64, merge::Order::kAlign);
  Result walked = run(4, program, 64, merge::Order::kWalk);
  Result automatic = run(4, program, 64, merge::Order::kAuto, kDefaultWork, folded_length);
  EXPECT_EQ(automatic.ordered.align_judged, folded_length(aligned.merged));
  EXPECT_EQ(automatic.ordered.walk_judged, folded_length(walked.merged));
  ASSERT_LT(automatic.ordered.align_judged, automatic.ordered.walk_judged);
  EXPECT_EQ(automatic.ordered.used, merge::Order::kAlign);
  EXPECT_EQ(events_of(automatic.merged), events_of(aligned.merged));
  // (the count order's is the walk's here: not judged again)
  EXPECT_EQ(automatic.ordered.nth_judged, 0u);
  EXPECT_EQ(merge::describe(automatic.ordered, "folded length"),
            "by alignment (folded length " + std::to_string(automatic.ordered.align_judged) + " against the walk's " +
                std::to_string(automatic.ordered.walk_judged) + ")");
  // each forced order tries only itself, and judges nothing
  EXPECT_EQ(aligned.ordered.walk_events, 0u);
  EXPECT_EQ(walked.ordered.align_events, 0u);
  EXPECT_EQ(walked.ordered.used, merge::Order::kWalk);
  EXPECT_EQ(aligned.ordered.align_judged + walked.ordered.walk_judged, 0u);
}

// A bandwidth test's two sides run different code (tests/apps/window_bw.c,
// the OSU micro-benchmarks' osu_bw): rank 0 sends a window of messages and
// receives an acknowledgement, rank 1 the other way round; here the window
// changes from round to round, with no period the rounds repeat. Aligned,
// each rank's calls stand apart from its partner's (they have none in
// common), and every message crosses the iterations of its loop: the fold
// counts them (FoldedProgram::crossing_messages), and the judge skelgen uses
// scores them beside the folded length, so that auto keeps the walk, whose
// loops keep their messages, even where the alignment folds shorter. (With
// one window in every round, the alignment merges each round's two halves
// together, as one period of both ranks' loops, and no message crosses.)
TEST(Merge, AutoOrderKeepsTheOrderWhoseLoopsKeepTheirMessages) {
  const int rounds = 12, window = 8;
  // round i: messages(i) messages of bytes(i) bytes, then the acknowledgement
  auto bandwidth = [&](std::function<int(int)> messages, std::function<int64_t(int)> bytes) {
    return [=](uint32_t r) {
      std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
      for (int i = 0; i < rounds; ++i) {
        for (int w = 0; w < messages(i); ++w) v.push_back(r == 0 ? send(10, 1, bytes(i)) : recv(20, 0, bytes(i)));
        v.push_back(r == 0 ? recv(11, 1, 4) : send(21, 0, 4));
      }
      v.push_back(simple(kFunc_MPI_Finalize, 1));
      return v;
    };
  };
  auto program = bandwidth([&](int i) { return 1 + (5 * i) % window; },  // 1, 6, 3, 8, 5, 2, 7, 4, 1, ...
                           [](int i) { return int64_t{1} << (i % 4); });
  Result aligned = run(2, program, 64, merge::Order::kAlign);
  Result walked = run(2, program, 64, merge::Order::kWalk);
  const FoldedProgram a = fold::compress(aligned.merged, {}), w = fold::compress(walked.merged, {});
  EXPECT_EQ(w.crossing_messages, 0u) << w.to_string();
  EXPECT_GE(a.crossing_messages, static_cast<uint64_t>(window)) << a.to_string();
  merge::Options opt;
  gen::set_merge_order(opt, "auto");
  ASSERT_TRUE(opt.judge);
  EXPECT_EQ(opt.judge(aligned.merged), a.length() + a.crossing_messages);
  Result automatic = run(2, program, 64, merge::Order::kAuto, kDefaultWork, opt.judge);
  EXPECT_EQ(automatic.ordered.used, merge::Order::kWalk);
  // one window in every round: aligned period against period, no message crosses
  auto steady = bandwidth([&](int) { return window; }, [](int) { return int64_t{4}; });
  const FoldedProgram s = fold::compress(run(2, steady, 64, merge::Order::kAlign).merged, {});
  EXPECT_EQ(s.crossing_messages, 0u) << s.to_string();
}

// NPB MG's zran3 at 16 ranks: ten rounds of four MPI_Allreduce, the fourth
// reached from one call site by every rank but one, which takes another
// branch (a different one each round). Each MPI_Allreduce the ranks make is
// one event with every rank in it (the fourth: two, by call site), by
// alignment as by the walk; aligned by their longest common runs alone, the
// ranks' rounds had lined up out of step (163 collective events where the
// walk made 126 on MG, so auto took the walk and its fold of 1,704 symbols
// against the alignment's 360).
TEST(Merge, AlignedCollectivesStayWholeWhereRanksReachThemFromOtherCallSites) {
  const uint32_t P = 4;
  const int rounds = 10;
  auto program = [&](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (int i = 0; i < rounds; ++i) {
      for (uint32_t site : {40u, 41u, 42u}) v.push_back(simple(kFunc_MPI_Allreduce, site));
      v.push_back(simple(kFunc_MPI_Allreduce, static_cast<int>(r) == (i * 3) % 4 ? 44 : 43));
    }
    v.push_back(simple(kFunc_MPI_Finalize, 1));
    return v;
  };
  for (merge::Order order : {merge::Order::kAlign, merge::Order::kWalk}) {
    Result res = run(P, program, 64, order);
    std::map<size_t, size_t> by_members;  // MPI_Allreduce events by how many ranks make them
    for (const MergedEvent& e : res.merged.events)
      if (res.merged.identities[e.identity].func == kFunc_MPI_Allreduce) ++by_members[e.ranks.size()];
    EXPECT_EQ(by_members, (std::map<size_t, size_t>{{1, rounds}, {3, rounds}, {4, 3 * rounds}}))
        << merge::order_name(order);
  }
}

// NPB MG's exchanges: one call site sends along each axis (a tag per axis
// and direction), and half of the ranks make one exchange more per cycle (a
// coarser level: axis 2 again, first). By the calls' identities alone the
// first half's exchanges along axes 1, 2, 3 lined up with the second half's
// 2, 1, 2, a table of tags (and of peers, on MG) in every event; the tags,
// which every rank uses alike, put each with its own.
TEST(Merge, AlignedExchangesMatchByTheTagsEveryRankUses) {
  const int cycles = 4;
  auto program = [&](uint32_t r) {
    auto exchange = [&](std::vector<Syn>& v, int64_t tag) {
      Syn s = send(10, r ^ 1), q = recv(11, r ^ 1);
      s.tag = q.tag = tag;
      s.gap = 100000;
      v.push_back(s);
      v.push_back(q);
    };
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    for (int c = 0; c < cycles; ++c) {
      if (r >= 2) exchange(v, 2);
      for (int64_t axis : {1, 2, 3}) exchange(v, axis);
      v.push_back(simple(kFunc_MPI_Barrier, 12));
    }
    v.push_back(simple(kFunc_MPI_Finalize, 1));
    return v;
  };
  Result res = run(4, program, 64, merge::Order::kAlign);
  size_t exchanges = 0;
  for (const MergedEvent& e : res.merged.events) {
    const uint32_t f = res.merged.identities[e.identity].func;
    if (f != kFunc_MPI_Send && f != kFunc_MPI_Recv) continue;
    ++exchanges;
    EXPECT_EQ(e.params[size_t(Param::tag)].kind, ParamKind::kConst) << "event " << (&e - &res.merged.events[0]);
  }
  EXPECT_EQ(exchanges, cycles * 4u * 2);  // the three axes by all, the extra one by ranks 2-3
}

TEST(Merge, AutoOrderKeepsTheWalkOnATie) {
  // Rank 0 makes A B, rank 1 B A. The walk: A by 0, B by both, A by 1; the alignment: B by 1, A by both,
  // B by 0. A judge that scores them alike keeps the walk's.
  auto program = [](uint32_t r) {
    Syn a = simple(kFunc_MPI_Barrier, 5), b = simple(kFunc_MPI_Barrier, 6);
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    if (r == 0) v.insert(v.end(), {a, b});
    else v.insert(v.end(), {b, a});
    v.push_back(simple(kFunc_MPI_Finalize, 1));
    return v;
  };
  Result aligned = run(2, program, 64, merge::Order::kAlign);
  Result walked = run(2, program, 64, merge::Order::kWalk);
  int judged = 0;
  Result automatic = run(2, program, 64, merge::Order::kAuto, kDefaultWork, [&](const MergedTrace&) { return ++judged, 7u; });
  ASSERT_NE(events_of(aligned.merged), events_of(walked.merged));
  EXPECT_EQ(judged, 2);
  EXPECT_EQ(automatic.ordered.used, merge::Order::kWalk);
  EXPECT_EQ(events_of(automatic.merged), events_of(walked.merged));
}

TEST(Merge, ACollectiveWaitsForAMemberPollingFarAhead) {
  // Rank 0 polls 200 times before the MPI_Allreduce (and MPI_Finalize) that rank 1 makes at once: beyond
  // the look-ahead of 64, the walk still makes each one event of both ranks (it took rank 1's alone).
  auto program = [](uint32_t r) {
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    if (r == 0)
      for (int i = 0; i < 200; ++i) v.push_back(simple(kFunc_MPI_Iprobe, 7));
    v.push_back(simple(kFunc_MPI_Allreduce, 8));
    v.push_back(simple(kFunc_MPI_Finalize, 1));
    return v;
  };
  for (merge::Order order : {merge::Order::kWalk, merge::Order::kAuto}) {
    Result res = run(2, program, 64, order, kDefaultWork, [](const MergedTrace&) { return 1u; });
    size_t collectives = 0;
    for (const MergedEvent& e : res.merged.events) {
      const uint32_t f = res.merged.identities[e.identity].func;
      if (f != kFunc_MPI_Allreduce && f != kFunc_MPI_Finalize) continue;
      ++collectives;
      EXPECT_EQ(e.ranks, (std::vector<uint32_t>{0, 1})) << merge::order_name(order);
    }
    EXPECT_EQ(collectives, 2u) << merge::order_name(order);
  }
}

TEST(Merge, AutoOrderJudgesNothingWhereTheOrdersAgree) {
  int judged = 0;
  auto judge = [&](const MergedTrace&) { return ++judged, 1u; };
  Result same = run(3, [](uint32_t r) { return std::vector<Syn>{simple(kFunc_MPI_Init, 0), send(2, (r + 1) % 3),
                                                                recv(3, (r + 2) % 3), simple(kFunc_MPI_Finalize, 1)}; },
                    64, merge::Order::kAuto, kDefaultWork, judge);
  EXPECT_EQ(judged, 0);
  EXPECT_EQ(same.ordered.used, merge::Order::kWalk);
  EXPECT_EQ(same.ordered.walk_events, same.ordered.align_events);
  EXPECT_EQ(same.ordered.walk_events, same.ordered.nth_events);
  EXPECT_EQ(merge::describe(same.ordered),
            "by the look-ahead walk (the alignment's and the count order's orders are the same)");
}

TEST(Merge, AutoOrderIsTheWalkWhereTheAlignmentGivesUp) {
  auto program = [](uint32_t r) { return uneven_halves(r, 4); };
  int judged = 0;
  Result automatic = run(4, program, 64, merge::Order::kAuto, 0, [&](const MergedTrace&) { return ++judged, 1u; });
  Result walked = run(4, program, 64, merge::Order::kWalk);
  EXPECT_TRUE(automatic.ordered.align_gave_up);
  EXPECT_EQ(judged, 0);
  EXPECT_EQ(automatic.ordered.used, merge::Order::kWalk);
  EXPECT_EQ(events_of(automatic.merged), events_of(walked.merged));
  EXPECT_NE(merge::describe(automatic.ordered).find("too unlike to align"), std::string::npos);
}

TEST(Merge, AutoOrderTriesTheAlignmentWithItsOwnWorkBound) {
  std::string dir = temp_dir("autowork");
  write_synthetic(dir, 4, [](uint32_t r) { return uneven_halves(r, 6); });
  merge::Options opt;
  opt.order = merge::Order::kAuto;
  opt.judge = [](const MergedTrace& m) { return static_cast<uint64_t>(m.events.size()); };
  auto loaded = merge::load(dir, opt);
  merge::Ordered how;
  opt.align_work = 0;  // --order align's bound: not auto's
  merge::merge(loaded, opt, &how);
  EXPECT_FALSE(how.align_gave_up);
  opt.auto_align_work = 0;
  merge::merge(loaded, opt, &how);
  EXPECT_TRUE(how.align_gave_up);
}

TEST(Merge, AutoOrderWithoutAJudgeIsAnError) {
  std::string dir = temp_dir("nojudge");
  write_synthetic(dir, 2, [](uint32_t) { return std::vector<Syn>{simple(kFunc_MPI_Init, 0)}; });
  merge::Options opt;
  opt.order = merge::Order::kAuto;
  auto loaded = merge::load(dir, opt);
  EXPECT_THROW(merge::merge(loaded, opt), std::logic_error);
}

// NPB LU's wavefront on a px x py grid of ranks, not periodic: per plane, receive from north and west,
// send south and east, only where the neighbour is; rank (x, y) starts plane k at time (x + y + k) (a
// pipeline as deep as it is long: the planes of the ranks far down the diagonal come when the first ranks
// are planes ahead). Each call its own call site and tag. With `halo`, each sweep starts with LU's
// exchange_3 (a receive posted from each side where there is one, a send to the other, a wait).
std::vector<Syn> wavefront(uint32_t r, uint32_t px, uint32_t py, int sweeps, int planes, bool halo = false) {
  const int64_t x = r % px, y = r / px, p = static_cast<int64_t>(r);
  const int64_t north = y > 0 ? p - px : -1, west = x > 0 ? p - 1 : -1;
  const int64_t south = y + 1 < static_cast<int64_t>(py) ? p + px : -1, east = x + 1 < static_cast<int64_t>(px) ? p + 1 : -1;
  std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
  v.back().gap = (x + y) * 1000000;  // the pipeline's fill
  int64_t work = 0;  // before the plane's first call
  auto add = [&](Syn s, int64_t peer, int64_t tag) {
    if (peer < 0) return;
    s.tag = tag;
    s.gap = std::exchange(work, 0) + 1000;
    v.push_back(s);
  };
  int64_t next_request = 1;
  // LU's exchange_3: from one side and to the other, where they are: Irecv, Send, Wait (one call site each)
  auto exchange = [&](int64_t from, int64_t to, int64_t tag) {
    const int64_t req = next_request++;
    if (from >= 0) {
      Syn irecv = recv(20, from);
      irecv.func = kFunc_MPI_Irecv;
      irecv.reqs = {req};
      add(irecv, from, tag);
    }
    add(send(21, to), to, tag);
    if (from >= 0) {
      Syn wait = simple(kFunc_MPI_Wait, 22);
      wait.reqs = {req};
      v.push_back(wait);
    }
  };
  for (int s = 0; s < sweeps; ++s) {
    if (halo) {
      work = 1000000;
      exchange(north, south, 3);
      exchange(south, north, 4);
      exchange(west, east, 5);
      exchange(east, west, 6);
    }
    for (int k = 0; k < planes; ++k) {
      work = 1000000;  // a plane's work
      add(recv(10, north), north, 1);
      add(recv(11, west), west, 2);
      add(send(12, south), south, 1);
      add(send(13, east), east, 2);
    }
    v.push_back(simple(kFunc_MPI_Allreduce, 14));
  }
  v.push_back(simple(kFunc_MPI_Finalize, 1));
  return v;
}

// The merged events as (identity, ranks) from `from` on, `len` at a time: equal blocks are a loop.
bool repeats_every(const MergedTrace& m, size_t from, size_t len, size_t times) {
  if (m.events.size() < from + len * times) return false;
  for (size_t t = 1; t < times; ++t)
    for (size_t i = 0; i < len; ++i)
      if (m.events[from + i].identity != m.events[from + t * len + i].identity ||
          m.events[from + i].ranks != m.events[from + t * len + i].ranks)
        return false;
  return true;
}

TEST(Merge, CountOrderMergesAPipelinesPlanesWhole) {
  // 4 x 3 ranks: each plane is four events, each of every rank making that call (receives from the north
  // and sends to the south: 8 ranks; from the west and to the east: 9), in every plane of every sweep alike
  const uint32_t px = 4, py = 3;
  const int sweeps = 3, planes = 5;
  auto program = [&](uint32_t r) { return wavefront(r, px, py, sweeps, planes); };
  Result res = run(px * py, program, 64, merge::Order::kNth);
  const MergedTrace& m = res.merged;
  ASSERT_EQ(m.events.size(), 1 + sweeps * (planes * 4 + 1) + 1u);
  for (int s = 0; s < sweeps; ++s) {
    const size_t at = 1 + s * (planes * 4 + 1);
    EXPECT_TRUE(repeats_every(m, at, 4, planes)) << "sweep " << s;
    std::multiset<size_t> members;  // (a step's receives come in the order normalize() gives them)
    for (size_t i = 0; i < 4; ++i) members.insert(m.events[at + i].ranks.size());
    EXPECT_EQ(members, (std::multiset<size_t>{px * (py - 1), px * (py - 1), (px - 1) * py, (px - 1) * py}));
    EXPECT_EQ(m.events[at + planes * 4].ranks, all(px * py)) << "the sweep's MPI_Allreduce";
  }
  // it folds to the program's own loops: (4)^planes, then the reduction, the sweeps a loop of them
  EXPECT_EQ(folded_length(m), 1 + 4 + 1 + 1u);
}

TEST(Merge, CountOrderFoldsAPipelineWithExchangesShorterThanTheOtherOrders) {
  // Each sweep starts with LU's exchange_3, where a rank with no neighbour on one side posts its receive
  // from the other side ahead of its send (normalize()), unlike the others: the walk and the alignment
  // pair the ranks' calls differently from sweep to sweep; by their counts, every sweep is merged alike
  // and its planes are one loop.
  const uint32_t px = 4, py = 4;
  const int sweeps = 4, planes = 6;
  auto program = [&](uint32_t r) { return wavefront(r, px, py, sweeps, planes, true); };
  Result res = run(px * py, program, 64, merge::Order::kNth);
  const MergedTrace& m = res.merged;
  ASSERT_EQ((m.events.size() - 2) % sweeps, 0u);
  const size_t sweep = (m.events.size() - 2) / sweeps;
  EXPECT_TRUE(repeats_every(m, 1, sweep, sweeps));
  const uint64_t folded = folded_length(m);
  EXPECT_LE(folded, 2 + sweep - 4 * (planes - 1)) << "the planes are one loop inside the sweeps' loop";
  const uint64_t walked = folded_length(run(px * py, program, 64, merge::Order::kWalk).merged);
  const uint64_t aligned = folded_length(run(px * py, program, 64, merge::Order::kAlign).merged);
  EXPECT_LT(folded, std::min(walked, aligned));
  // and auto takes it
  Result automatic = run(px * py, program, 64, merge::Order::kAuto, kDefaultWork, folded_length);
  EXPECT_EQ(automatic.ordered.used, merge::Order::kNth);
  EXPECT_EQ(events_of(automatic.merged), events_of(m));
}

TEST(Merge, CountOrderSplitsAnEventWhereTheRanksOrdersConflict) {
  // ranks 0 and 2 make A then B, rank 1 B then A: no order keeps A and B whole; A goes first with the two
  // ranks at it, B whole, then rank 1's A
  auto program = [](uint32_t r) {
    Syn a = simple(kFunc_MPI_Barrier, 5), b = simple(kFunc_MPI_Barrier, 6);
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
    if (r == 1) v.insert(v.end(), {b, a});
    else v.insert(v.end(), {a, b});
    v.push_back(simple(kFunc_MPI_Finalize, 1));
    return v;
  };
  Result res = run(3, program, 64, merge::Order::kNth);
  const MergedTrace& m = res.merged;
  ASSERT_EQ(m.events.size(), 5u);
  EXPECT_EQ(m.identities[m.events[1].identity].callsite, m.identities[m.events[3].identity].callsite);
  EXPECT_EQ(m.events[1].ranks, (std::vector<uint32_t>{0, 2}));
  EXPECT_EQ(m.events[2].ranks, all(3));
  EXPECT_EQ(m.events[3].ranks, (std::vector<uint32_t>{1}));
}

TEST(Merge, OrderNamesRoundTrip) {
  for (merge::Order o : {merge::Order::kAuto, merge::Order::kWalk, merge::Order::kAlign, merge::Order::kNth})
    EXPECT_EQ(merge::order_from_name(merge::order_name(o)), o);
  EXPECT_THROW(merge::order_from_name("greedy"), std::invalid_argument);
}

TEST(Merge, VerifyCatchesAWrongParameter) {
  auto res = run(2, [&](uint32_t r) { return std::vector<Syn>{simple(kFunc_MPI_Init, 0), send(1, 1 - r, 4 + r)}; });
  MergedTrace bad = res.merged;
  bad.events[1].params[size_t(Param::count)] = ParamDesc{ParamKind::kConst, 4, 0};
  EXPECT_FALSE(merge::verify(bad, res.loaded).empty());
  bad = res.merged;
  bad.ranks[1].gaps[1] += 1;
  EXPECT_FALSE(merge::verify(bad, res.loaded).empty());
}

TEST(Merge, TruncatedRankNeedsAllowPartial) {
  std::string dir = temp_dir("partial");
  write_synthetic(dir, 2, [](uint32_t) { return std::vector<Syn>{simple(kFunc_MPI_Init, 0)}; });
  // Rank 1 again, without its end chunk: a process that died after MPI_Init and 9 barriers.
  std::vector<Event> calls(10);
  for (size_t i = 0; i < calls.size(); ++i) {
    calls[i].seq = i;
    calls[i].func = i == 0 ? kFunc_MPI_Init : kFunc_MPI_Barrier;
    calls[i].comm = i == 0 ? kNone : int64_t{kCommWorld};
    calls[i].gap_ns = 1000;
    calls[i].t_start_ns = static_cast<int64_t>(1100 * i + 1000);
    calls[i].duration_ns = 100;
  }
  write_trace(dir + "/rank-00001.skt", sample_header(1, 2, 7), calls, 4096, EndStatus::kFinalized, /*close=*/false);
  merge::Options opt;
  try {
    merge::load(dir, opt);
    ADD_FAILURE() << "accepted a truncated rank";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("rank-00001.skt: the trace ends early"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--allow-partial"), std::string::npos);
  }
  opt.allow_partial = true;
  auto loaded = merge::load(dir, opt);
  MergedTrace m = merge::merge(loaded, opt);
  EXPECT_EQ(m.ranks[1].end, TraceEnd::kTruncated);
  EXPECT_TRUE(merge::verify(m, loaded).empty());
}

TEST(MergedFormat, DamagedFilesAreRejectedWithTheirName) {
  auto res = run(2, [&](uint32_t r) { return std::vector<Syn>{simple(kFunc_MPI_Init, 0), send(1, 1 - r)}; });
  std::string dir = temp_dir("mbad");
  std::string good = dir + "/good.skm";
  write_merged(good, res.merged);
  std::string bytes = read_file(good);
  auto expect_error = [&](const std::string& content, const std::string& what) {
    std::string p = dir + "/bad.skm";
    write_file(p, content);
    try {
      read_merged(p);
      ADD_FAILURE() << "accepted: " << what;
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
      EXPECT_NE(std::string(e.what()).find(p), std::string::npos);
    }
  };
  expect_error("", "bad magic");
  expect_error(bytes.substr(0, bytes.size() / 2), "truncated");
  std::string v9 = bytes;
  v9[8] = 9;
  expect_error(v9, "version 9." + std::to_string(skt::kMergedVersionMinor) + " is not supported");
  std::string flipped = bytes;
  flipped[bytes.size() - 5] ^= 0x40;
  expect_error(flipped, "corrupt");
  expect_error(read_file(std::string(SKEL_CORPUS_DIR) + "/text.skt"), "bad magic");
}

// A merged body without one of its sections (as an older writer wrote it);
// `found`: whether the body had it.
static std::string without_section(const std::string& body, MergedSection drop, bool& found) {
  std::string out;
  codec::Cursor c(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  found = false;
  while (!c.at_end()) {
    uint64_t id = 0, len = 0;
    const uint8_t* data = nullptr;
    if (!(c.varint(id) && c.varint(len) && c.bytes(len, data))) {
      ADD_FAILURE() << "a body that does not parse";
      return out;
    }
    if (id == static_cast<uint64_t>(drop)) {
      found = true;
      continue;
    }
    uint8_t b[10];
    out.append(reinterpret_cast<char*>(b), static_cast<size_t>(codec::put_varint(b, id) - b));
    out.append(reinterpret_cast<char*>(b), static_cast<size_t>(codec::put_varint(b, len) - b));
    out.append(reinterpret_cast<const char*>(data), len);
  }
  return out;
}

// The events section says how many parameters each event describes. A
// reader reads past descriptions of parameters newer than it knows, and
// rejects a file with fewer than it knows (merged 2.0 has them all).
TEST(MergedFormat, NewerParametersAreReadPastAndFewerRejected) {
  auto res = run(2, [&](uint32_t) {
    return std::vector<Syn>{simple(kFunc_MPI_Init, 0), simple(kFunc_MPI_Barrier, 1)};
  });
  const MergedTrace& m = res.merged;
  for (const MergedEvent& e : m.events) {
    ASSERT_EQ(e.ranks.size(), 2u);
    ASSERT_TRUE(e.lists.empty());
    for (const ParamDesc& d : e.params) ASSERT_EQ(d.kind, ParamKind::kAbsent);
  }
  auto varint = [](std::string& out, uint64_t v) {
    uint8_t b[10];
    out.append(reinterpret_cast<char*>(b), static_cast<size_t>(codec::put_varint(b, v) - b));
  };
  // The events section by hand, with n parameters: those beyond the known ones a constant 5.
  auto events_section = [&](uint64_t n) {
    std::string c;
    varint(c, m.events.size());
    varint(c, n);
    for (const MergedEvent& e : m.events) {
      varint(c, e.identity);
      varint(c, 1), varint(c, 0), varint(c, 2);  // one run of ranks: 0 and 1
      for (uint64_t q = 0; q < n; ++q)
        if (q < kNumParams) varint(c, static_cast<uint64_t>(ParamKind::kAbsent));
        else varint(c, static_cast<uint64_t>(ParamKind::kConst)), varint(c, codec::zigzag(5));
      varint(c, 0);  // no lists
    }
    std::string section;
    varint(section, static_cast<uint64_t>(MergedSection::kEvents));
    varint(section, c.size());
    return section + c;
  };
  const std::string body = encode_merged_body(m, true);
  bool found = false;
  const std::string others = without_section(body, MergedSection::kEvents, found);
  ASSERT_TRUE(found);
  ASSERT_NE(body.find(events_section(kNumParams)), std::string::npos) << "the hand-made section is the writer's";

  const std::string newer = others + events_section(kNumParams + 3);
  MergedTrace back = decode_merged_body(reinterpret_cast<const uint8_t*>(newer.data()), newer.size(), "newer", true);
  ASSERT_EQ(back.events.size(), m.events.size());
  for (size_t i = 0; i < m.events.size(); ++i) {
    EXPECT_EQ(back.events[i].identity, m.events[i].identity);
    EXPECT_EQ(back.events[i].ranks, m.events[i].ranks);
    for (const ParamDesc& d : back.events[i].params) EXPECT_EQ(d.kind, ParamKind::kAbsent);
  }

  const std::string fewer = others + events_section(kNumParams - 1);
  try {
    decode_merged_body(reinterpret_cast<const uint8_t*>(fewer.data()), fewer.size(), "fewer", true);
    ADD_FAILURE() << "accepted events with fewer parameters than merged 2.0 has";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("fewer: corrupt merged trace (parameters)"), std::string::npos) << e.what();
  }
}

TEST(Normalize, IsAPermutationThatKeepsGapsAndOtherCallsInPlace) {
  std::vector<Identity> ids;
  uint32_t funcs[] = {kFunc_MPI_Send, kFunc_MPI_Isend, kFunc_MPI_Recv, kFunc_MPI_Irecv, kFunc_MPI_Wait,
                      kFunc_MPI_Barrier, kFunc_MPI_Allreduce};
  for (uint32_t f : funcs)
    for (uint32_t site = 0; site < 4; ++site) {
      Identity id;
      id.func = f;
      id.callsite = site * 10 + f;
      ids.push_back(id);
    }
  std::mt19937 rng(3);
  for (int trial = 0; trial < 300; ++trial) {
    merge::RankData rd = random_rank(ids, rng, [&](merge::RankEvent& e, int i) {
      e.gap = i * 1000;
      e.dur = static_cast<int64_t>(rng() % 100);
    });
    merge::RankData before = rd;
    merge::normalize(rd, ids);
    ASSERT_EQ(rd.events.size(), before.events.size());
    std::vector<uint32_t> a;
    for (size_t i = 0; i < rd.events.size(); ++i) {
      EXPECT_EQ(rd.events[i].gap, before.events[i].gap) << "gaps belong to positions";
      uint32_t f = ids[before.events[i].identity].func;
      if (f == kFunc_MPI_Barrier || f == kFunc_MPI_Allreduce) EXPECT_EQ(rd.events[i].seq, before.events[i].seq);
      a.push_back(rd.events[i].seq);
    }
    std::sort(a.begin(), a.end());
    for (size_t i = 0; i < a.size(); ++i) ASSERT_EQ(a[i], i) << "not a permutation";
    for (const auto& e : rd.events) EXPECT_EQ(e.dur, before.events[e.seq].dur) << "durations travel with calls";
    // every Irecv still precedes the Wait that completes it
    std::map<int64_t, size_t> created;
    for (size_t i = 0; i < rd.events.size(); ++i) {
      if (rd.events[i].created_request != kNone) created[rd.events[i].created_request] = i;
      if (rd.events[i].lists >= 0)
        for (int64_t req : rd.lists[static_cast<size_t>(rd.events[i].lists)][size_t(ListField::reqrefs)])
          if (req != 999) EXPECT_TRUE(created.count(req)) << "Wait moved before its Irecv";
    }
  }
}

// The property normalisation exists for: ranks that make the calls of each
// communication step in different orders (Irecv;Send;Wait against
// Send;Irecv;Wait, two sends or two receives either way round) come out the
// same, over many iterations, and iterations stay apart. Only orders in
// which every send and Irecv comes before the step's completed receives are
// one step (NoSendOrIrecvMovesAheadOfACompletedReceive).
TEST(Normalize, StepsInAnyOrderComeOutTheSame) {
  std::vector<Identity> ids;
  // one step: Send(site 0), Isend(1), Recv(2), Irecv(3) + Wait(4) on it
  uint32_t funcs[] = {kFunc_MPI_Send, kFunc_MPI_Isend, kFunc_MPI_Recv, kFunc_MPI_Irecv, kFunc_MPI_Wait,
                      kFunc_MPI_Allreduce};
  for (uint32_t k = 0; k < 6; ++k) {
    Identity id;
    id.func = funcs[k];
    id.callsite = k;
    ids.push_back(id);
  }
  std::mt19937 rng(9);
  auto program = [&](bool shuffle) {
    merge::RankData rd;
    for (uint32_t k = 0; k < 6; ++k) {  // each call site talks to its own peer
      merge::ParamTuple t;
      t.fill(kNone);
      t[size_t(Param::peer)] = 100 + k;
      rd.params.push_back(t);
    }
    int64_t req = 1;
    for (int it = 0; it < 30; ++it) {
      // Send 0, Isend 1, Recv 2, Irecv 3, Wait 4: the sends and the Irecv
      // in any order, then the completions in any order
      std::vector<uint32_t> order = {3, 0, 1, 2, 4};
      auto pos = [&](uint32_t id) { return std::find(order.begin(), order.end(), id) - order.begin(); };
      while (shuffle) {
        std::shuffle(order.begin(), order.end(), rng);
        if (std::max({pos(0), pos(1), pos(3)}) < std::min(pos(2), pos(4))) break;
      }
      for (uint32_t id : order) {
        merge::RankEvent e;
        e.identity = id;
        e.params = id;
        e.seq = static_cast<uint32_t>(rd.events.size());
        if (id == 3) e.created_request = req;
        if (id == 4) {
          e.lists = static_cast<int32_t>(rd.lists.size());
          rd.lists.emplace_back();
          rd.lists.back()[size_t(ListField::reqrefs)] = {req++};
        }
        rd.events.push_back(e);
      }
      if (it % 7 == 6) {  // now and then a collective
        merge::RankEvent e;
        e.identity = 5;
        rd.events.push_back(e);
      }
    }
    merge::normalize(rd, ids);
    std::vector<uint32_t> out;
    for (const auto& e : rd.events) out.push_back(e.identity);
    return out;
  };
  std::vector<uint32_t> want = program(false);
  // the canonical step: Irecv, Send, Isend, Recv, Wait
  ASSERT_EQ(std::vector<uint32_t>(want.begin(), want.begin() + 5), (std::vector<uint32_t>{3, 0, 1, 2, 4}));
  for (int trial = 0; trial < 50; ++trial) ASSERT_EQ(program(true), want) << "trial " << trial;
}

// A send made after a receive completed (a Recv, or the Wait of an Irecv)
// waited for that message and may carry what it brought: no normalisation
// moves it ahead (NPB CG chains exchanges a few microseconds apart, each
// sending what the one before received; sorted as one step, sends first,
// they overlapped and its skeleton ran 29 % short on a slow network). Nor
// an Irecv, so that each exchange is a step of its own.
TEST(Normalize, NoSendOrIrecvMovesAheadOfACompletedReceive) {
  std::vector<Identity> ids = point_to_point_ids(3);
  std::mt19937 rng(31);
  size_t reordered = 0;
  for (int trial = 0; trial < 300; ++trial) {
    merge::RankData rd = random_rank_close_calls(ids, rng);
    merge::normalize(rd, ids, trial % 2 ? merge::kStepGapNs : 0);
    std::vector<size_t> at(rd.events.size());  // original position -> new position
    for (size_t p = 0; p < rd.events.size(); ++p) at[rd.events[p].seq] = p, reordered += rd.events[p].seq != p;
    for (size_t c = 0; c < rd.events.size(); ++c) {
      uint32_t fc = ids[rd.events[at[c]].identity].func;
      if (fc != kFunc_MPI_Recv && fc != kFunc_MPI_Wait) continue;
      for (size_t s = c + 1; s < rd.events.size(); ++s) {
        uint32_t fs = ids[rd.events[at[s]].identity].func;
        if (fs == kFunc_MPI_Send || fs == kFunc_MPI_Isend || fs == kFunc_MPI_Irecv)
          ASSERT_LT(at[c], at[s]) << "trial " << trial << ": call " << s << " moved ahead of call " << c;
      }
    }
  }
  EXPECT_GT(reordered, 0u) << "steps are still put in the canonical order";
}

// Calls never move across computation: a call made after more than
// kStepGapNs of it (the median over the rank's calls between the same two
// call sites) starts a new step (NPB LU: rank 1 posts its Irecv after
// 1 ms of work and sends at once; the Irecv must stay after that work).
TEST(Normalize, CallsNeverMoveAcrossComputation) {
  std::vector<Identity> ids = point_to_point_ids(3);
  std::mt19937 rng(17);
  for (int trial = 0; trial < 300; ++trial) {
    merge::RankData rd = random_rank(ids, rng, [&](merge::RankEvent& e, int) {
      bool work = rng() % 4 == 0;
      e.gap = work ? merge::kStepGapNs + 1 + rng() % 1000000 : rng() % 2000;
      if (trial % 2 && work) {  // a CPU-clocked trace: the thread CPU time decides, not the wall gap
        e.work = e.gap;
        e.gap *= 3;
      } else if (trial % 2) {
        e.work = e.gap;
        e.gap += merge::kStepGapNs * 2;  // descheduled, not computing: may still be reordered
      }
    });
    merge::RankData before = rd;
    merge::normalize(rd, ids, merge::kStepGapNs);
    // the computation before a call, as the median over the rank's calls
    // with the same pair of call sites (the call's and the one before)
    std::map<std::pair<uint32_t, uint32_t>, std::vector<int64_t>> by_pair;
    auto pair_of = [&](size_t p) {
      return std::make_pair(ids[before.events[p - 1].identity].callsite, ids[before.events[p].identity].callsite);
    };
    for (size_t p = 1; p < before.events.size(); ++p) {
      const merge::RankEvent& b = before.events[p];
      by_pair[pair_of(p)].push_back(b.work != kNone ? b.work : b.gap);
    }
    uint32_t highest = 0;
    for (size_t p = 0; p < rd.events.size(); ++p) {
      if (p > 0) {
        std::vector<int64_t> v = by_pair[pair_of(p)];
        std::sort(v.begin(), v.end());
        if (v[v.size() / 2] > merge::kStepGapNs)
          ASSERT_LT(highest, p) << "trial " << trial << ": a call moved across the computation before position " << p;
      }
      highest = std::max(highest, rd.events[p].seq);
    }
  }
  // LU's step, rank 1: Send(site 0), 1 ms of work, Irecv(site 3), Send(site 1), Wait(site 4) on the Irecv.
  merge::RankData lu;
  auto add = [&](uint32_t id, int64_t gap) {
    merge::RankEvent e;
    e.identity = id;
    e.gap = gap;
    e.seq = static_cast<uint32_t>(lu.events.size());
    if (ids[id].func == kFunc_MPI_Irecv) e.created_request = 1;
    if (ids[id].func == kFunc_MPI_Wait) {
      e.lists = 0;
      lu.lists.emplace_back();
      lu.lists.back()[size_t(ListField::reqrefs)] = {1};
    }
    lu.events.push_back(e);
  };
  add(0 * 3, 100), add(3 * 3, 1000000), add(1 * 3, 200), add(4 * 3, 100);  // Send, Irecv, Isend, Wait (site 0)
  merge::normalize(lu, ids, merge::kStepGapNs);
  std::vector<uint32_t> order;
  for (const auto& e : lu.events) order.push_back(e.seq);
  EXPECT_EQ(order, (std::vector<uint32_t>{0, 1, 2, 3}));
}

// Messages between two ranks match in the order they were made, so no
// normalisation may swap two sends to one peer, or two receives from one
// (NPB CG's skeleton got "Message truncated" when one rank's step was sorted
// and its peer's, cut by computation, was not).
TEST(Normalize, TwoMessagesBetweenTheSameRanksKeepTheirOrder) {
  std::vector<Identity> ids = point_to_point_ids(4);
  std::mt19937 rng(23);
  size_t reordered = 0;
  for (int trial = 0; trial < 300; ++trial) {
    merge::RankData rd = random_rank_close_calls(ids, rng);
    for (int64_t peer : {0, 1}) {
      merge::ParamTuple t;
      t.fill(kNone);
      t[size_t(Param::peer)] = peer;
      rd.params.push_back(t);
    }
    for (auto& e : rd.events) e.params = rng() % 2;
    merge::RankData before = rd;
    merge::normalize(rd, ids, merge::kStepGapNs);
    std::map<std::pair<int64_t, bool>, uint32_t> last;  // (peer, send?) -> seq of its latest message
    for (size_t p = 0; p < rd.events.size(); ++p) {
      const merge::RankEvent& e = rd.events[p];
      reordered += e.seq != p;
      uint32_t f = ids[e.identity].func;
      if (f == kFunc_MPI_Wait) continue;
      bool send = f == kFunc_MPI_Send || f == kFunc_MPI_Isend;
      auto key = std::make_pair(rd.params[e.params][size_t(Param::peer)], send);
      if (last.count(key)) ASSERT_LT(last[key], e.seq) << "trial " << trial << ": two messages swapped";
      last[key] = e.seq;
    }
  }
  EXPECT_GT(reordered, 0u) << "some steps are still put in the canonical order";
}

TEST(Merge, TheForwardsFlagOfASendIsAParameterPerRankThroughTheFile) {
  // Rank 1 sends back what it received (trace flag forwards), rank 0 sends its own data.
  Result res = run(2, [](uint32_t r) {
    std::vector<Syn> v;
    for (int it = 0; it < 3; ++it) {
      Syn s = send(1, 1 - r), q = recv(2, 1 - r);
      if (r == 1) s.flags |= kFlagForwards;
      if (r == 0) v.insert(v.end(), {s, q});
      else v.insert(v.end(), {q, s});
    }
    return v;
  });
  const MergedTrace& m = res.merged;
  int sends = 0;
  for (const MergedEvent& e : m.events) {
    const ParamDesc& d = e.params[static_cast<size_t>(Param::forwards)];
    if (m.identities[e.identity].func == kFunc_MPI_Recv) {
      EXPECT_EQ(d.kind, ParamKind::kAbsent);
      continue;
    }
    sends += static_cast<int>(e.ranks.size());
    for (uint32_t r : e.ranks) EXPECT_EQ(m.value(e, Param::forwards, r), r == 1 ? 1 : 0) << "rank " << r;
  }
  EXPECT_EQ(sends, 6) << "every send of both ranks";
}

// A rank's gap floors (21 ns wall, 205 ns CPU in the fixture's header) come down to its shortest gap
// after MPI_Init where one is shorter: the floor was measured high at MPI_Init.
TEST(Merge, GapFloorsComeDownToTheRanksShortestGap) {
  auto program = [](uint32_t r) {
    Syn init = simple(kFunc_MPI_Init, 0);
    init.gap = 0;  // MPI_Init's gap is no span between two calls
    init.work = 0;
    Syn a = send(1, 1 - r), b = recv(2, 1 - r);
    a.work = b.work = 600;
    if (r == 1) {
      a.gap = 15;   // under the header's 21
      b.work = 150; // under its 205
    }
    return std::vector<Syn>{init, a, b, simple(kFunc_MPI_Finalize, 3)};
  };
  Result res = run(2, program);
  EXPECT_EQ(res.merged.ranks[0].gap_floor_ns, 21.0);
  EXPECT_EQ(res.merged.ranks[0].cpu_gap_floor_ns, 205.0);
  EXPECT_EQ(res.merged.ranks[1].gap_floor_ns, 15.0);
  EXPECT_EQ(res.merged.ranks[1].cpu_gap_floor_ns, 150.0);
}

// A thread CPU trace leaves cpu_gap out where the tracer did not read the
// CPU clock at the gap's end (trace format 2.2): the gap was short and not
// interrupted, its CPU time is its wall time. The merge counts it as read at
// both ends: the wall gap plus the header's CPU floor less its wall floor
// (205 - 21 ns in the fixture), so that the generator, taking the CPU floor
// off, keeps the wall gap less the wall floor. Read gaps stay as read.
TEST(Merge, AGapWithoutCpuTimeCountsAsItsWallTime) {
  auto program = [](uint32_t r) {
    Syn init = simple(kFunc_MPI_Init, 0);
    init.work = 0;
    Syn a = send(1, 1 - r), b = recv(2, 1 - r), c = send(3, 1 - r);
    a.gap = 4000;  // not read
    b.gap = 90000, b.work = 30000;  // read: the rank lost its core for 60 us
    c.gap = 7000;  // not read
    return std::vector<Syn>{init, a, b, c, simple(kFunc_MPI_Finalize, 4)};
  };
  Result res = run(2, program);
  for (uint32_t r = 0; r < 2; ++r) {
    const MergedRank& mr = res.merged.ranks[r];
    ASSERT_EQ(mr.works.size(), mr.gaps.size());
    std::multiset<int64_t> works(mr.works.begin(), mr.works.end());
    EXPECT_EQ(works.count(4000 + 184), 1u) << "rank " << r;
    EXPECT_EQ(works.count(30000), 1u) << "rank " << r;
    EXPECT_EQ(works.count(7000 + 184), 1u) << "rank " << r;
    EXPECT_EQ(mr.cpu_gap_floor_ns, 205.0) << "no gap under the floors: they stay";
  }
}

// A thread CPU trace (the tracer's choice at MPI_THREAD_SERIALIZED and above)
// is read by its wall-clock gaps where the rank's node had CPUs enough for its
// ranks (trace header 2.4) and one thread made every MPI call: an OpenMP team
// computes between the calls, and the calling thread's CPU time is only its
// own share. It keeps its CPU times where the ranks outnumbered the CPUs, where
// the header does not say (older traces, a clock the user chose), and where
// another thread made MPI calls too (each thread replayed by its own time).
TEST(Merge, OneCallingThreadWithCoresEnoughIsReadByItsWallClock) {
  auto program = [](uint32_t r) {
    Syn init = simple(kFunc_MPI_Init, 0);
    init.work = 0;
    Syn a = send(1, 1 - r), b = recv(2, 1 - r);
    a.gap = 90000, a.work = 40000, a.blocked = 5000;  // a team of threads computed; the caller waited at its end
    b.gap = 60000, b.work = 30000;
    return std::vector<Syn>{init, a, b, simple(kFunc_MPI_Finalize, 3)};
  };
  auto load = [&](CoreSharing sharing, uint32_t other_thread) {
    std::string dir = temp_dir("merge");
    write_synthetic(dir, 2, [&](uint32_t r) {
      std::vector<Syn> calls = program(r);
      if (other_thread) {
        Syn t = send(4, 1 - r);
        t.tag = 9, t.thread = other_thread, t.work = 500;
        calls.insert(calls.begin() + 2, t);
        Syn u = recv(5, 1 - r);
        u.tag = 9, u.thread = other_thread, u.work = 500;
        calls.insert(calls.begin() + 3, u);
      }
      return calls;
    }, 7, sharing);
    return merge::load(dir, merge::Options{});
  };
  for (uint32_t r = 0; r < 2; ++r) {
    const merge::Loaded own = load(CoreSharing::kOwnCores, 0);
    const merge::RankData& rd = own.ranks[r];
    EXPECT_FALSE(rd.cpu_work) << "rank " << r;
    EXPECT_FALSE(rd.any_blocked) << "rank " << r << ": the wall gap holds the time asleep";
    for (const merge::RankEvent& e : rd.events) {
      EXPECT_EQ(e.work, kNone);
      EXPECT_EQ(e.blocked, 0);
    }
    for (CoreSharing sharing : {CoreSharing::kShared, CoreSharing::kUnknown}) {
      const merge::Loaded cpu = load(sharing, 0);
      EXPECT_TRUE(cpu.ranks[r].cpu_work) << "rank " << r << ", sharing " << static_cast<int>(sharing);
      EXPECT_TRUE(cpu.ranks[r].any_blocked);
      std::multiset<int64_t> works;
      for (const merge::RankEvent& e : cpu.ranks[r].events) works.insert(e.work);
      EXPECT_EQ(works.count(40000), 1u);
      EXPECT_EQ(works.count(30000), 1u);
    }
    const merge::Loaded threads = load(CoreSharing::kOwnCores, 1);
    ASSERT_EQ(threads.threads.size(), 1u);
    EXPECT_TRUE(threads.ranks[r].cpu_work) << "rank " << r << ": two threads called MPI";
    EXPECT_TRUE(threads.threads[0].ranks[r].cpu_work);
  }
}

// A pool's master thread (mpi4py.futures) makes every call with the
// workers while the main thread waits: rank 0's calls are one stream, its
// second thread's taken into it at their places, and merge with the
// workers' first threads. Where the main thread computed meanwhile (half of
// its gap), or called MPI among the other thread's calls, they stay apart.
TEST(MergeThreads, AThreadCallingWhileTheFirstWaitsIsTakenIntoItsStream) {
  auto program = [](int64_t main_work, bool main_calls_between) {
    return [=](uint32_t r) {
      Syn init = simple(kFunc_MPI_Init, 0), fin = simple(kFunc_MPI_Finalize, 9);
      init.work = 0;
      std::vector<Syn> v{init};
      if (r == 0) {
        for (int64_t w = 1; w < 3; ++w) {
          Syn a = send(1, w), b = recv(2, w);
          a.thread = b.thread = 3;
          a.work = b.work = 800;
          v.push_back(a);
          if (main_calls_between && w == 2) v.push_back(simple(kFunc_MPI_Barrier, 8));
          v.push_back(b);
        }
        fin.gap = 1000000, fin.work = main_work;
      } else {
        Syn a = recv(3, 0), b = send(4, 0);
        a.work = b.work = 800;
        v.push_back(a);
        v.push_back(b);
        fin.work = 800;
      }
      v.push_back(fin);
      return v;
    };
  };
  const auto load = [](const std::function<std::vector<Syn>(uint32_t)>& p) {
    std::string dir = temp_dir("pool_thread");
    write_synthetic(dir, 3, p, 7, CoreSharing::kShared);
    return merge::load(dir, merge::Options{});
  };
  const merge::Loaded one = load(program(20000, false));
  EXPECT_TRUE(one.threads.empty());
  ASSERT_EQ(one.ranks[0].events.size(), 6u);
  std::vector<uint32_t> funcs;
  for (const merge::RankEvent& e : one.ranks[0].events) funcs.push_back(one.tables.identities[e.identity].func);
  EXPECT_EQ(funcs, (std::vector<uint32_t>{kFunc_MPI_Init, kFunc_MPI_Send, kFunc_MPI_Recv, kFunc_MPI_Send,
                                          kFunc_MPI_Recv, kFunc_MPI_Finalize}));
  MergedTrace merged = merge::merge(one, merge::Options{});
  for (const auto& p : merge::verify(merged, one)) ADD_FAILURE() << p;
  EXPECT_TRUE(merged.threads.empty()) << "one stream a rank: rank 0's calls pair with the workers' first threads";
  EXPECT_EQ(load(program(500000, false)).threads.size(), 1u) << "the main thread computed meanwhile";
  EXPECT_EQ(load(program(20000, true)).threads.size(), 1u) << "the main thread called MPI meanwhile";
}

// Where the ranks shared their cores and one thread made every MPI call, the
// CPU time the rank's other threads used (trace 2.4 field kTeamCpu: an
// OpenMP team's work) is the gap's work too, and the calling thread's sleep
// in that gap (its wait for the team) is not kept; where another thread
// made calls, each thread's work is its own CPU time.
TEST(Merge, AnOpenMPTeamsWorkCountsWhereRanksShareCores) {
  auto program = [](uint32_t r, bool second_thread) {
    Syn init = simple(kFunc_MPI_Init, 0);
    init.work = 0;
    Syn a = send(1, 1 - r), b = recv(2, 1 - r);
    a.gap = 400000, a.work = 100000, a.team = 150000, a.blocked = 60000;
    b.gap = 90000, b.work = 70000;
    std::vector<Syn> calls{init, a, b};
    if (second_thread) {
      Syn t = send(4, 1 - r), u = recv(5, 1 - r);
      t.tag = u.tag = 9, t.thread = u.thread = 1, t.work = u.work = 500;
      calls.insert(calls.end(), {t, u});
    }
    calls.push_back(simple(kFunc_MPI_Finalize, 3));
    return calls;
  };
  for (bool second_thread : {false, true}) {
    std::string dir = temp_dir("merge");
    write_synthetic(dir, 2, [&](uint32_t r) { return program(r, second_thread); }, 7, CoreSharing::kShared);
    const merge::Loaded l = merge::load(dir, merge::Options{});
    for (uint32_t r = 0; r < 2; ++r) {
      std::multiset<int64_t> works, blocked;
      for (const merge::RankEvent& e : l.ranks[r].events) works.insert(e.work), blocked.insert(e.blocked);
      EXPECT_EQ(works.count(second_thread ? 100000 : 250000), 1u) << "rank " << r << ", threads " << second_thread;
      EXPECT_EQ(works.count(70000), 1u);
      EXPECT_EQ(blocked.count(60000), second_thread ? 1u : 0u);
    }
  }
}

// The tracer's fixed cost in every gap (trace header 1.4) is kept per rank
// through the merged file (section 13) and a folded program's symbols; a
// body without the section (1.2) reads with none.
TEST(MergedFormat, TheGapFloorsOfEveryRankGoThroughTheFiles) {
  auto res = run(2, [&](uint32_t r) { return std::vector<Syn>{simple(kFunc_MPI_Init, 0), send(1, 1 - r)}; });
  MergedTrace m = res.merged;
  m.ranks[1].gap_floor_ns = 33;  // rank 0 keeps the fixture's
  m.ranks[1].cpu_gap_floor_ns = 0;
  std::string dir = temp_dir("floors");
  write_merged(dir + "/m.skm", m);
  MergedTrace back = read_merged(dir + "/m.skm");
  ASSERT_EQ(back.ranks.size(), 2u);
  EXPECT_EQ(back.ranks[0].gap_floor_ns, 21.0);  // sample_header's, through the merge
  EXPECT_EQ(back.ranks[0].cpu_gap_floor_ns, 205.0);
  EXPECT_EQ(back.ranks[1].gap_floor_ns, 33.0);
  EXPECT_EQ(back.ranks[1].cpu_gap_floor_ns, 0.0);
  bool found = false;
  std::string older = without_section(encode_merged_body(m, false), MergedSection::kGapFloors, found);
  ASSERT_TRUE(found);
  MergedTrace none = decode_merged_body(reinterpret_cast<const uint8_t*>(older.data()), older.size(), "older", false);
  EXPECT_EQ(none.ranks[0].gap_floor_ns, 0.0);
  EXPECT_EQ(none.ranks[0].cpu_gap_floor_ns, 0.0);
  m.ranks[1].gap_floor_ns = -1;  // no span is shorter than nothing
  write_merged(dir + "/bad.skm", m);
  try {
    read_merged(dir + "/bad.skm");
    ADD_FAILURE() << "read a negative gap floor";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(dir + "/bad.skm: corrupt merged trace (gap floor)"), std::string::npos)
        << e.what();
  }
}

// Blocked time (trace field 28, merged section 15) is never negative: a
// trace event or a merged column that says so is corrupt, named as such.
TEST(MergedFormat, NegativeBlockedTimeIsRefused) {
  auto program = [](uint32_t r) {
    Syn a = send(1, 1 - r);
    a.work = 100;
    a.blocked = r == 0 ? 200000 : 0;
    return std::vector<Syn>{simple(kFunc_MPI_Init, 0), a};
  };
  MergedTrace m = run(2, program).merged;
  ASSERT_FALSE(m.ranks[0].blocked.empty());
  std::string dir = temp_dir("blocked");
  m.ranks[0].blocked.back() = -1;
  write_merged(dir + "/bad.skm", m);
  try {
    read_merged(dir + "/bad.skm");
    ADD_FAILURE() << "read a negative blocked time";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt merged trace (blocked time)"), std::string::npos) << e.what();
  }
  try {
    run(2, [&](uint32_t r) {
      std::vector<Syn> v = program(r);
      v.back().blocked = -7;
      return v;
    });
    ADD_FAILURE() << "merged a trace with a negative blocked time";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt"), std::string::npos) << e.what();
  }
}

// MPI_THREAD_MULTIPLE: each thread's calls merged on their own, placed among
// the first thread's, through both file formats; a nested thread refused.
TEST(MergeThreads, EachThreadIsMergedOnItsOwnAndPlacedAmongTheFirstThreads) {
  auto on = [](Syn s, uint32_t thread) {
    s.thread = thread;
    return s;
  };
  auto res = run(2, [&](uint32_t r) {
    Syn dup = simple(kFunc_MPI_Comm_dup, 1);
    dup.new_comm = 2;
    dup.members = {0, 1};
    std::vector<Syn> v{simple(kFunc_MPI_Init, 0), dup};
    for (int i = 0; i < 3; ++i) {  // the two threads' calls interleaved, as the tracer records them
      Syn a = send(2, 1 - r), b = recv(3, 1 - r), c = send(4, 1 - r), d = recv(5, 1 - r);
      a.comm = b.comm = 2;
      c.tag = d.tag = 1;
      v.push_back(on(a, 3));
      v.push_back(on(c, 4));
      v.push_back(on(b, 3));
      v.push_back(on(d, 4));
    }
    v.push_back(simple(kFunc_MPI_Barrier, 6));
    v.push_back(simple(kFunc_MPI_Finalize, 7));
    return v;
  });
  const MergedTrace& m = res.merged;
  ASSERT_EQ(m.events.size(), 4u);  // Init, Comm_dup, Barrier, Finalize
  ASSERT_EQ(m.threads.size(), 2u);
  EXPECT_EQ(m.threads[0].thread, 3u);
  EXPECT_EQ(m.threads[1].thread, 4u);
  for (const MergedTrace& t : m.threads) {
    ASSERT_EQ(t.events.size(), 6u);
    EXPECT_EQ(t.fork_after, 1);   // after the Comm_dup
    EXPECT_EQ(t.join_before, 2);  // before the Barrier
    EXPECT_EQ(t.events[0].ranks, all(2));
  }
  EXPECT_EQ(m.value(m.threads[0].events[0], Param::peer, 0), 1);
  EXPECT_EQ(m.identities[m.threads[0].events[0].identity].comm, 2);  // the first thread's communicator
  // folded each on its own, through the folded file
  FoldedProgram p = fold::compress(m, {});
  ASSERT_EQ(p.threads.size(), 2u);
  std::string dir = temp_dir("threads");
  write_folded(dir + "/p.skf", p);
  FoldedProgram back = read_folded(dir + "/p.skf");
  ASSERT_EQ(back.threads.size(), 2u);
  EXPECT_EQ(back.threads[1].thread, 4u);
  EXPECT_EQ(back.threads[1].fork_after, 1);
  EXPECT_EQ(back.threads[1].join_before, 2);
  EXPECT_EQ(back.threads[1].to_string(), p.threads[1].to_string());
  // a thread's stream holding threads of its own is corrupt
  MergedTrace nested = m;
  nested.threads[0].threads.push_back(m.threads[1]);
  write_merged(dir + "/nested.skm", nested);
  try {
    read_merged(dir + "/nested.skm");
    ADD_FAILURE() << "read a thread inside a thread";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("a thread's stream inside a thread's stream"), std::string::npos) << e.what();
  }
}

namespace {

// The Cartesian neighbour by brute force: comm rank by a search of the member list, coordinates row-major
// in a vector (what MergedTrace::value computed before its O(1) index).
int64_t cart_neighbour_oracle(const CommSymbol& c, uint32_t r, size_t dim, int64_t disp) {
  const std::vector<int64_t>& m = c.members(r);
  int64_t rest = std::find(m.begin(), m.end(), static_cast<int64_t>(r)) - m.begin();
  std::vector<int64_t> coords(c.dims.size());
  for (size_t i = c.dims.size(); i-- > 0;) {
    coords[i] = rest % c.dims[i];
    rest /= c.dims[i];
  }
  int64_t x = coords[dim] + disp;
  if ((x < 0 || x >= c.dims[dim]) && !c.periods[dim]) return kProcNull;
  coords[dim] = (x % c.dims[dim] + c.dims[dim]) % c.dims[dim];
  int64_t nb = 0;
  for (size_t i = 0; i < c.dims.size(); ++i) nb = nb * c.dims[i] + coords[i];
  return m.at(static_cast<size_t>(nb));
}

}  // namespace

// The O(1) comm rank (CommSymbol::index_members) gives every rank the Cartesian neighbours the brute force
// gives, on a 2 x 3 x 4 grid whose comm ranks are not the world ranks (reversed), periodic in two
// dimensions; unindexed, comm_rank() searches and agrees; a rank outside its own group has none.
TEST(MergedFormat, CartesianNeighboursByIndexAreTheBruteForcesOnes) {
  constexpr uint32_t P = 24;
  MergedTrace m;
  m.world_size = P;
  CommSymbol cart;
  cart.dims = {2, 3, 4};
  cart.periods = {1, 0, 1};
  cart.groups.emplace_back();
  for (uint32_t q = P; q-- > 0;) cart.groups[0].push_back(q);
  cart.group_of.assign(P, 0);
  m.comms.push_back(cart);
  Identity id;
  id.comm = 0;
  m.identities.push_back(id);
  MergedEvent e;
  for (uint32_t r = 0; r < P; ++r) e.ranks.push_back(r);
  for (bool indexed : {false, true}) {
    if (indexed) m.comms[0].index_members();
    for (size_t dim = 0; dim < cart.dims.size(); ++dim)
      for (int64_t disp : {1, -1, 2, -2, 5}) {
        e.params[static_cast<size_t>(Param::peer)] = ParamDesc{ParamKind::kCart, static_cast<int64_t>(dim), disp};
        for (uint32_t r = 0; r < P; ++r) {
          const int64_t want = cart_neighbour_oracle(m.comms[0], r, dim, disp);
          EXPECT_EQ(m.value(e, Param::peer, r), want) << "rank " << r << " dim " << dim << " disp " << disp;
          EXPECT_EQ(m.value_at(e, Param::peer, r), want) << "rank " << r << " (by its index in the event)";
        }
      }
    EXPECT_EQ(m.comms[0].comm_rank(0), P - 1) << (indexed ? "indexed" : "searched");
  }
  CommSymbol stray = cart;  // rank 5's group lacks it
  stray.groups.push_back({0, 1, 2});
  stray.group_of[5] = 1;
  EXPECT_EQ(stray.comm_rank(5), -1) << "searched";
  stray.index_members();
  EXPECT_EQ(stray.comm_rank(5), -1) << "indexed";
  EXPECT_EQ(stray.comm_rank(6), P - 1 - 6);
}

// Hostile thread fields: a thread number past kMaxThreads in a rank file, a
// thread's stream placed past the first thread's events in a merged trace.
TEST(MergeThreads, ThreadFieldsOutOfRangeAreRefusedWithTheFileName) {
  std::string dir = temp_dir("bad-thread");
  write_synthetic(dir, 1, [](uint32_t) {
    Syn s = simple(kFunc_MPI_Barrier, 1);
    s.thread = static_cast<uint32_t>(kMaxThreads) + 1;
    return std::vector<Syn>{simple(kFunc_MPI_Init, 0), s};
  });
  try {
    merge::load(dir, merge::Options{});
    ADD_FAILURE() << "read thread " << kMaxThreads + 1;
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("rank-00000.skt"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("corrupt event record"), std::string::npos) << e.what();
  }
  auto res = run(1, [](uint32_t) {
    Syn s = simple(kFunc_MPI_Barrier, 1);
    s.thread = 2;
    return std::vector<Syn>{simple(kFunc_MPI_Init, 0), s, simple(kFunc_MPI_Finalize, 2)};
  });
  ASSERT_EQ(res.merged.threads.size(), 1u);
  MergedTrace m = res.merged;
  m.threads[0].fork_after = static_cast<int64_t>(m.events.size());  // after the first thread's last event
  write_merged(dir + "/late.skm", m);
  try {
    read_merged(dir + "/late.skm");
    ADD_FAILURE() << "read a thread placed past the first thread's events";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("late.skm: corrupt merged trace (thread 2's stream does not fit"),
              std::string::npos)
        << e.what();
  }
}

namespace {

// A ring exchange (two MPI_Irecv, two MPI_Isend per step) whose requests each
// rank completes the way the run's timing had it: MPI_Waitsome calls taking
// them in a random order and grouping, or MPI_Testall polls between pieces
// of computation until they are in (MPI_Waitall after the eighth), an
// MPI_Allreduce every five steps. Seeded: the same program for the same seed.
std::vector<Syn> polling_ring(uint32_t r, uint32_t P, bool waitsome, int steps, std::vector<std::vector<int64_t>>* made) {
  std::mt19937 rng(1234 + r);
  const int64_t left = (r + P - 1) % P, right = (r + 1) % P;
  std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
  int64_t id = 0;
  for (int s = 0; s < steps; ++s) {
    std::vector<int64_t> step_reqs;
    for (int k = 0; k < 4; ++k) {
      Syn m = message(k < 2 ? kFunc_MPI_Irecv : kFunc_MPI_Isend, k < 2 ? 1 : 2, k % 2 ? right : left, 5);
      m.count = 100;
      m.reqs = {id};
      step_reqs.push_back(id++);
      v.push_back(m);
    }
    if (made) made->push_back(step_reqs);
    if (waitsome) {
      std::vector<int64_t> order = step_reqs;
      std::shuffle(order.begin(), order.end(), rng);
      for (size_t at = 0; at < order.size();) {
        const size_t take = 1 + rng() % (order.size() - at);
        Syn w = call(kFunc_MPI_Waitsome, 3);
        w.reqs.assign(order.begin() + static_cast<long>(at), order.begin() + static_cast<long>(at + take));
        w.gap = 2000 + rng() % 3000;
        w.dur = 500 + rng() % 20000;
        v.push_back(w);
        at += take;
      }
    } else {
      const int misses = static_cast<int>(rng() % 9);  // 8: never in while polling
      for (int p = 0; p < std::min(misses, 8); ++p) {
        Syn t = call(kFunc_MPI_Testall, 4);
        t.flags = kFlagTestFailed;
        t.gap = 10000;
        v.push_back(t);
      }
      Syn done = call(misses == 8 ? kFunc_MPI_Waitall : kFunc_MPI_Testall, misses == 8 ? 5 : 4);
      done.reqs = step_reqs;
      done.gap = 10000;
      v.push_back(done);
    }
    if (s % 5 == 4) v.push_back(simple(kFunc_MPI_Allreduce, 6));
  }
  v.push_back(simple(kFunc_MPI_Finalize, 7));
  return v;
}

int64_t time_of(const std::vector<Syn>& calls) {
  int64_t t = 0;
  for (const Syn& s : calls) t += s.gap + s.dur;
  return t;
}

}  // namespace

TEST(Merge, CompletionsTheTimingDecidesBecomeOneWaitallAndTheStepsFold) {
  constexpr uint32_t P = 4;
  constexpr int kSteps = 40;
  for (bool waitsome : {true, false}) {
    SCOPED_TRACE(waitsome ? "MPI_Waitsome" : "MPI_Testall polls");
    std::string dir = temp_dir("polling");
    write_synthetic(dir, P, [&](uint32_t r) { return polling_ring(r, P, waitsome, kSteps, nullptr); });
    merge::Options keep;
    keep.coalesce_completions = false;
    merge::Loaded as_traced = merge::load(dir, keep);
    merge::Loaded loaded = merge::load(dir, merge::Options{});
    EXPECT_EQ(as_traced.coalesced_completions.made_one, 0u);
    EXPECT_EQ(loaded.coalesced_completions.made_one, P * kSteps);
    for (uint32_t r = 0; r < P; ++r) {
      std::vector<std::vector<int64_t>> made;
      const std::vector<Syn> program = polling_ring(r, P, waitsome, kSteps, &made);
      const merge::RankData& rd = loaded.ranks[r];
      // Per step: the 4 requests, then one MPI_Waitall of them in the order they were made; the
      // Allreduce every fifth step; every call's time kept.
      ASSERT_EQ(rd.events.size(), 2 + kSteps * 5 + kSteps / 5) << "rank " << r;
      int64_t t = 0;
      size_t step = 0;
      std::vector<int64_t> creators;
      for (size_t i = 0; i < rd.events.size(); ++i) {
        const merge::RankEvent& e = rd.events[i];
        t += e.gap + e.dur;
        const uint32_t f = loaded.tables.identities[e.identity].func;
        if (f == kFunc_MPI_Irecv || f == kFunc_MPI_Isend) creators.push_back(static_cast<int64_t>(i));
        if (f != kFunc_MPI_Waitall) continue;
        ASSERT_GE(e.lists, 0);
        EXPECT_EQ(rd.lists[static_cast<size_t>(e.lists)][size_t(ListField::reqrefs)], creators)
            << "rank " << r << " step " << step;
        creators.clear();
        ++step;
      }
      EXPECT_EQ(step, static_cast<size_t>(kSteps));
      EXPECT_EQ(t, time_of(program)) << "rank " << r;
    }
    MergedTrace merged = merge::merge(loaded, merge::Options{});
    for (const auto& p : merge::verify(merged, loaded)) ADD_FAILURE() << p;
    // The steps fold into one loop (5 steps of 5 calls, the Allreduce: about 10 symbols); as traced
    // the completions' calls differ from step to step and the steps do not fold.
    const uint64_t folded = folded_length(merged), traced = folded_length(merge::merge(as_traced, keep));
    EXPECT_LE(folded, 12u);
    EXPECT_GT(traced, 5 * folded);
  }
}

namespace {

// A particle code's step on a ring (as LLNL's Quicksilver polls its
// buffers): an Irecv from the left, an Isend to the right (the receive
// from MPI_ANY_SOURCE where `wildcard`), then twice: polls that find nothing
// (MPI_Test failing, MPI_Wait of MPI_REQUEST_NULL: a random number of
// pairs, the timing's choice) and an Allreduce; then the test that finds
// the message and the send's wait. *idle: the polling calls made between
// the Irecv and the second Allreduce. The rank computes 10 to 40 us before
// each poll; where `spin`, nothing (60 to 160 ns between calls, one gap in
// 16 of 50 us: an interrupt).
std::vector<Syn> polling_particles(uint32_t r, uint32_t P, bool wildcard, int steps, uint64_t seed, size_t* idle,
                                   bool spin = false) {
  std::mt19937 rng(static_cast<uint32_t>(seed * 100 + r));
  const int64_t left = (r + P - 1) % P, right = (r + 1) % P;
  std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
  int64_t id = 0;
  const auto gap = [&]() -> int64_t {
    if (!spin) return 10000 + rng() % 30000;
    return rng() % 16 == 0 ? 50000 : 60 + rng() % 100;
  };
  const auto misses = [&](uint32_t site, std::vector<Syn>& out) {
    const int n = static_cast<int>(rng() % 4);
    for (int k = 0; k < n; ++k) {
      Syn t = call(kFunc_MPI_Test, site);
      t.flags = kFlagTestFailed;
      t.gap = gap();
      Syn w = call(kFunc_MPI_Wait, site + 1);
      w.gap = gap();
      w.dur = 50;
      out.push_back(t);
      out.push_back(w);
      if (idle) *idle += 2;
    }
  };
  for (int s = 0; s < steps; ++s) {
    Syn send = message(kFunc_MPI_Isend, 1, right, 7);
    send.count = 100;
    send.reqs = {id++};
    Syn receive = message(kFunc_MPI_Irecv, 2, wildcard ? kNone : left, 7);
    receive.count = 100;
    if (wildcard) receive.flags = kFlagAnySource;
    receive.reqs = {id++};
    v.push_back(receive);
    v.push_back(send);
    for (int round = 0; round < 2; ++round) {
      misses(3, v);
      v.push_back(simple(kFunc_MPI_Allreduce, 5));
      v.back().gap = gap();  // right after the last poll
    }
    Syn found = call(kFunc_MPI_Test, 3);
    found.reqs = receive.reqs;
    if (wildcard) found.sources = {left};
    Syn sent = call(kFunc_MPI_Wait, 6);
    sent.reqs = send.reqs;
    v.push_back(found);
    v.push_back(sent);
  }
  v.push_back(simple(kFunc_MPI_Finalize, 7));
  for (Syn& c : v) c.work = c.gap / 2;  // traced by the CPU clock: half of each gap on the CPU
  return v;
}

// The polls that found nothing were left out (idle of them), the merged
// trace verifies against the loaded one, and its steps fold (at most 8
// symbols); returns the folded length.
uint64_t polls_left_out_and_folded(const merge::Loaded& loaded, size_t idle) {
  EXPECT_EQ(loaded.coalesced_completions.idle_calls, idle);
  EXPECT_GT(idle, 0u);
  MergedTrace merged = merge::merge(loaded, merge::Options{});
  for (const auto& p : merge::verify(merged, loaded)) ADD_FAILURE() << p;
  const uint64_t length = folded_length(merged);
  EXPECT_LE(length, 8u);
  return length;
}

int64_t work_of(const std::vector<Syn>& calls) {
  int64_t t = 0;
  for (const Syn& s : calls) t += s.work;
  return t;
}

// Rank r's loaded calls keep the program's time, its time in MPI and its
// computation, where spinning polls were left out: a spinning poll's time
// in MPI stays time in MPI (the skeleton waits there), the computation
// before it computation.
void expect_spins_time_kept(const merge::RankData& rd, const std::vector<Syn>& program, uint32_t r) {
  int64_t gaps = 0, durations = 0, work = 0, traced_durations = 0;
  for (const merge::RankEvent& e : rd.events) {
    gaps += e.gap;
    durations += e.dur;
    work += e.work;
  }
  for (const Syn& c : program) traced_durations += c.dur;
  EXPECT_EQ(durations, traced_durations) << "rank " << r;
  EXPECT_EQ(gaps + durations, time_of(program)) << "rank " << r;
  EXPECT_EQ(work, work_of(program)) << "rank " << r;
}

}  // namespace

TEST(Merge, CallsThatCompleteNothingAreLeftOutAndTheStepsFold) {
  constexpr uint32_t P = 3;
  constexpr int kSteps = 30;
  std::vector<uint64_t> lengths;
  for (uint64_t seed : {1, 2}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::string dir = temp_dir("idle_polls");
    write_synthetic(dir, P, [&](uint32_t r) { return polling_particles(r, P, false, kSteps, seed, nullptr); });
    merge::Loaded loaded = merge::load(dir, merge::Options{});
    size_t idle = 0;
    for (uint32_t r = 0; r < P; ++r) {
      const std::vector<Syn> program = polling_particles(r, P, false, kSteps, seed, &idle);
      const merge::RankData& rd = loaded.ranks[r];
      // Per step: Irecv, Isend, two Allreduces, one Waitall (the test that found the message, the
      // misses before it and the send's wait); every call's time kept.
      ASSERT_EQ(rd.events.size(), 2 + kSteps * 5u) << "rank " << r;
      int64_t t = 0, work = 0;
      for (size_t i = 0; i < rd.events.size(); ++i) {
        t += rd.events[i].gap + rd.events[i].dur;
        work += rd.events[i].work;
        const uint32_t f = loaded.tables.identities[rd.events[i].identity].func;
        if (i == 0 || i + 1 == rd.events.size()) continue;
        const uint32_t want[] = {kFunc_MPI_Irecv, kFunc_MPI_Isend, kFunc_MPI_Allreduce, kFunc_MPI_Allreduce,
                                 kFunc_MPI_Waitall};
        EXPECT_EQ(f, want[(i - 1) % 5]) << "rank " << r << " event " << i;
      }
      EXPECT_EQ(t, time_of(program)) << "rank " << r;
      // the CPU time of the gaps, not the polls' durations (on shared cores mostly other ranks' time)
      EXPECT_EQ(work, work_of(program)) << "rank " << r;
    }
    lengths.push_back(polls_left_out_and_folded(loaded, idle));
  }
  EXPECT_EQ(lengths[0], lengths[1]);  // the timing's choice of polls leaves no trace in the structure

  // Where a receive from MPI_ANY_SOURCE is active (a farm master polling for requests), the misses stay.
  std::string dir = temp_dir("idle_polls_wildcard");
  write_synthetic(dir, P, [&](uint32_t r) { return polling_particles(r, P, true, kSteps, 1, nullptr); });
  merge::Loaded loaded = merge::load(dir, merge::Options{});
  EXPECT_EQ(loaded.coalesced_completions.idle_calls, 0u);
  for (uint32_t r = 0; r < P; ++r)
    EXPECT_EQ(loaded.ranks[r].events.size(), polling_particles(r, P, true, kSteps, 1, nullptr).size())
        << "rank " << r;  // every call as traced (a wildcard receive's completion is not made one either)
}

// A rank that spins on its polls (nothing computed between them) waits, as
// a blocking call would: its polls that found nothing are left out even
// where a receive from MPI_ANY_SOURCE is active (an active-message layer,
// Graph500's, spins on MPI_Testany over its wildcard receives), their time
// carried into the next call kept as time in that call, not computation.
TEST(Merge, SpinningPollsAreLeftOutWhereAWildcardReceiveIsActive) {
  constexpr uint32_t P = 3;
  constexpr int kSteps = 30;
  std::vector<uint64_t> lengths;
  for (uint64_t seed : {1, 2}) {
    SCOPED_TRACE("seed " + std::to_string(seed));
    std::string dir = temp_dir("spinning_polls");
    write_synthetic(dir, P, [&](uint32_t r) { return polling_particles(r, P, true, kSteps, seed, nullptr, true); });
    merge::Loaded loaded = merge::load(dir, merge::Options{});
    size_t idle = 0;
    for (uint32_t r = 0; r < P; ++r) {
      const std::vector<Syn> program = polling_particles(r, P, true, kSteps, seed, &idle, true);
      const merge::RankData& rd = loaded.ranks[r];
      // Per step: Irecv, Isend, two Allreduces, the test that found the message, the send's wait (a
      // wildcard receive's completion is not made one with it).
      ASSERT_EQ(rd.events.size(), 2 + kSteps * 6u) << "rank " << r;
      expect_spins_time_kept(rd, program, r);
    }
    lengths.push_back(polls_left_out_and_folded(loaded, idle));
  }
  EXPECT_EQ(lengths[0], lengths[1]);
}

namespace {

// An active-message rank (Ray, the genome assembler): each step it sends to
// the next rank, probes MPI_ANY_SOURCE until the previous rank's message is
// in, receives it and waits for its send. Where it spins, 60-160 ns pass
// between two probes that found nothing, but one in 40 takes 9 us (an
// interrupt); else 20-30 us of computation. With `nbx`, it tests its send
// after each probe that found nothing (NBX's sparse exchange). `misses`, if
// given, counts the probes that found nothing.
std::vector<Syn> probing_ring(uint32_t r, uint32_t P, int steps, uint64_t seed, bool spin, size_t* misses,
                              bool nbx = false) {
  std::mt19937 rng(static_cast<uint32_t>(seed * 100 + r));
  std::vector<Syn> v{simple(kFunc_MPI_Init, 0)};
  for (int s = 0; s < steps; ++s) {
    Syn send = message(kFunc_MPI_Isend, 1, (r + 1) % P, 7);
    send.reqs = {s};
    v.push_back(send);
    const int n = 1 + static_cast<int>(rng() % 300);
    for (int k = 0; k < n; ++k) {
      Syn none = call(kFunc_MPI_Iprobe, 2);
      none.tag = 7, none.flags = kFlagAnySource | kFlagTestFailed;
      none.gap = k == 0 ? 30'000 : !spin ? 20'000 + rng() % 10'000 : rng() % 40 == 0 ? 9'000 : 60 + rng() % 100;
      none.dur = 40 + rng() % 20;
      v.push_back(none);
      if (!nbx) continue;
      Syn test = call(kFunc_MPI_Test, 6);
      test.flags = kFlagTestFailed, test.gap = 60 + rng() % 100;  // completed nothing: names no request
      v.push_back(test);
    }
    if (misses) *misses += static_cast<size_t>(n);
    Syn found = message(kFunc_MPI_Iprobe, 2, (r + P - 1) % P, 7);
    found.flags = kFlagAnySource, found.gap = spin ? 100 : 25'000;
    v.push_back(found);
    v.push_back(message(kFunc_MPI_Recv, 3, (r + P - 1) % P, 7));
    Syn sent = call(kFunc_MPI_Wait, 4);
    sent.reqs = {s};
    sent.gap = 50'000;
    v.push_back(sent);
  }
  v.push_back(simple(kFunc_MPI_Finalize, 5));
  for (Syn& c : v) c.work = c.gap / 2;  // traced by the CPU clock: half of each gap on the CPU
  return v;
}

}  // namespace

// Probes that found nothing, each within 5 us of the same probe finding
// nothing, are left out as the ranks are read, one kept per spin however
// often it was interrupted; every rank keeps its time, its time in MPI and
// its computation; the steps of two runs that spun differently fold alike.
// Probes with computation between them are all kept.
TEST(Merge, SpinningProbesAreLeftOutAsTheyAreReadAndTheirTimeKept) {
  constexpr uint32_t P = 3;
  constexpr int kSteps = 25;
  std::vector<uint64_t> lengths;
  for (uint64_t seed : {1, 2, 3, 4}) {
    const bool nbx = seed > 2;  // a failed MPI_Test of the send after each probe that found nothing
    SCOPED_TRACE("seed " + std::to_string(seed) + (nbx ? ", tests between the probes" : ""));
    std::string dir = temp_dir("spinning_probes");
    write_synthetic(dir, P, [&](uint32_t r) { return probing_ring(r, P, kSteps, seed, true, nullptr, nbx); });
    merge::Loaded loaded = merge::load(dir, merge::Options{});
    size_t misses = 0;
    for (uint32_t r = 0; r < P; ++r) {
      const std::vector<Syn> program = probing_ring(r, P, kSteps, seed, true, &misses, nbx);
      const merge::RankData& rd = loaded.ranks[r];
      // Per step: Isend, one probe that found nothing, the one that found the message, Recv, Wait (the failed
      // tests are spinning polls, coalesce_timed_completions()).
      ASSERT_EQ(rd.events.size(), 2 + kSteps * 5u) << "rank " << r;
      EXPECT_EQ(loaded.tables.ranks[r].events, program.size()) << "rank " << r << ": its calls as traced";
      expect_spins_time_kept(rd, program, r);
    }
    EXPECT_EQ(loaded.coalesced_completions.spun_probes, misses - P * kSteps);
    MergedTrace merged = merge::merge(loaded, merge::Options{});
    for (const auto& p : merge::verify(merged, loaded)) ADD_FAILURE() << p;
    lengths.push_back(folded_length(merged));
    EXPECT_LE(lengths.back(), 8u);
  }
  EXPECT_EQ(lengths[0], lengths[1]);
  EXPECT_EQ(lengths[2], lengths[3]);

  std::string dir = temp_dir("computing_probes");
  write_synthetic(dir, P, [&](uint32_t r) { return probing_ring(r, P, kSteps, 1, false, nullptr); });
  merge::Loaded loaded = merge::load(dir, merge::Options{});
  EXPECT_EQ(loaded.coalesced_completions.spun_probes, 0u);
  for (uint32_t r = 0; r < P; ++r)
    EXPECT_EQ(loaded.ranks[r].events.size(), probing_ring(r, P, kSteps, 1, false, nullptr).size()) << "rank " << r;
}

// A trace of more calls than the memory can merge is refused as it is read,
// with the calls read and the memory in the message, not left to the
// kernel's OOM killer; with the memory to merge it, it loads.
TEST(Merge, MoreCallsThanTheMemoryCanMergeAreRefusedAsTheyAreRead) {
  std::string dir = temp_dir("memory");
  write_synthetic(dir, 2, [](uint32_t r) {
    return probing_ring(r, 2, 50, 1, false, nullptr);  // 2 + 50 * (4 + 1..300) calls a rank
  });
  ::setenv("SKELGEN_MEMORY_GB", "0.00001", 1);  // 10,000 bytes: 62 calls of 160 bytes
  try {
    merge::load(dir, merge::Options{});
    ADD_FAILURE() << "loaded";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("more calls than this machine's memory can load: 63 read"), std::string::npos)
        << e.what();
  }
  ::setenv("SKELGEN_MEMORY_GB", "1", 1);
  EXPECT_EQ(merge::load(dir, merge::Options{}).ranks.size(), 2u);
  ::unsetenv("SKELGEN_MEMORY_GB");
}

// On an intercommunicator a root's group-mates pass MPI_PROC_NULL as the
// root, which the skeleton cannot replay over both groups: merge says so
// (not "corrupt") and names the file and the call.
TEST(MergeThreads, AnIntercommunicatorsProcNullRootIsRefusedByName) {
  std::string dir = temp_dir("proc_null_root");
  write_synthetic(dir, 2, [](uint32_t r) {
    Syn bcast = simple(kFunc_MPI_Bcast, 1);
    bcast.root = r == 0 ? 0 : kProcNull;
    return std::vector<Syn>{simple(kFunc_MPI_Init, 0), bcast, simple(kFunc_MPI_Finalize, 2)};
  });
  try {
    merge::load(dir, merge::Options{});
    ADD_FAILURE() << "loaded";
  } catch (const TraceError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("rank-00001.skt: event 1 (MPI_Bcast) has the root MPI_PROC_NULL"), std::string::npos) << what;
    EXPECT_EQ(what.find("corrupt"), std::string::npos) << what;
  }
}
