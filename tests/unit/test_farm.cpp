// The farm finder (generate/src/farm.h) on hand-made traces of farms built
// on non-blocking calls: what it recognises, and what it must leave to be
// replayed as traced.
#include <gtest/gtest.h>

#include <set>
#include <string>
#include <vector>

#include "farm.h"
#include "folded_fixtures.h"
#include "skel/skel_funcs.h"
#include "skel/trace_format.h"

namespace {

using skt::testing::call;
using skt::testing::message;
using skt::testing::Syn;

constexpr int64_t kAsk = 11, kTask = 12, kStop = 13, kAnyTag = -1;
constexpr uint32_t kRanks = 3;  // the master and two workers
constexpr int kTasks = 8;       // handed out to workers 1, 2, 1, 2, ... then a stop to each

// How the hand-made master takes requests and answers, and how its workers ask.
struct Shape {
  bool any_source = true;    // MPI_Irecv(MPI_ANY_SOURCE) + MPI_Wait per request; else one per worker + MPI_Waitany
  bool isend = true;         // answers and requests with MPI_Isend + MPI_Wait; else MPI_Send
  bool close_posted = true;  // per-worker receives: re-posted after every answer, the last completed after the farm
  bool poll = false;         // per-worker receives: MPI_Testany until one is there (twice in vain, 0.3 ms of
                             // computation after each), not MPI_Waitany
};

// The worker answered at the master's k-th answer.
int64_t worker_of(int k) { return 1 + k % 2; }

// A send to `to` (MPI_Isend and MPI_Wait, or MPI_Send) with request ids from `id`.
void send(std::vector<Syn>& v, bool isend, uint32_t site, int64_t to, int64_t tag, int64_t& id) {
  if (!isend) {
    v.push_back(message(skt::kFunc_MPI_Send, site, to, tag));
    return;
  }
  Syn s = message(skt::kFunc_MPI_Isend, site, to, tag);
  s.reqs = {id};
  v.push_back(s);
  Syn w = call(skt::kFunc_MPI_Wait, site + 1);
  w.reqs = {id++};
  v.push_back(w);
}

// An MPI_Irecv from `from` (-1: MPI_ANY_SOURCE) with tag `tag` (kAnyTag: MPI_ANY_TAG).
Syn post(uint32_t site, int64_t from, int64_t tag, int64_t id) {
  Syn s = message(skt::kFunc_MPI_Irecv, site, from, tag);
  if (from < 0) s.peer = skt::kNone, s.flags = skt::kFlagAnySource;
  if (tag == kAnyTag) s.flags |= skt::kFlagAnyTag;
  s.reqs = {id};
  return s;
}

std::vector<Syn> master(const Shape& sh) {
  std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
  int64_t id = 0, posted[kRanks] = {0, 0, 0};
  if (!sh.any_source)
    for (int64_t w = 1; w < kRanks; ++w) v.push_back(post(1, w, kAsk, posted[w] = id++));
  for (int k = 0; k < kTasks + 2; ++k) {
    const int64_t w = worker_of(k);
    Syn done = call(sh.any_source ? skt::kFunc_MPI_Wait : sh.poll ? skt::kFunc_MPI_Testany : skt::kFunc_MPI_Waitany, 2);
    for (int miss = 0; sh.poll && miss < 2; ++miss) {
      v.push_back(done);
      v.back().flags = skt::kFlagTestFailed;
      if (miss > 0) v.back().gap = 300'000;
    }
    if (sh.poll) done.gap = 300'000;
    if (sh.any_source) {
      v.push_back(post(3, -1, kAsk, id));
      done.reqs = {id++};
      done.sources = {w};
    } else {
      done.reqs = {posted[w]};
    }
    v.push_back(done);
    send(v, sh.isend, 4, w, k < kTasks ? kTask : kStop, id);
    if (!sh.any_source && (k < kTasks || sh.close_posted)) v.push_back(post(6, w, kAsk, posted[w] = id++));
  }
  if (!sh.any_source && sh.close_posted)
    for (int64_t w = 1; w < kRanks; ++w) {  // cancelled (MPI_Cancel is not traced) and completed
      Syn done = call(skt::kFunc_MPI_Wait, 7);
      done.reqs = {posted[w]};
      v.push_back(done);
    }
  v.push_back(call(skt::kFunc_MPI_Finalize, 8));
  return v;
}

// Each request after the first follows a task: 2 ms of computation.
std::vector<Syn> worker(const Shape& sh, uint32_t r) {
  std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
  int64_t id = 0;
  for (int k = 0; k < kTasks + 2; ++k) {
    if (worker_of(k) != r) continue;
    const size_t request = v.size();
    send(v, sh.isend, 10, 0, kAsk, id);
    if (request > 1) v[request].gap = 2'000'000;
    v.push_back(post(12, 0, kAnyTag, id));
    Syn done = call(skt::kFunc_MPI_Wait, 13);
    done.reqs = {id++};
    v.push_back(done);
  }
  v.push_back(call(skt::kFunc_MPI_Finalize, 8));
  return v;
}

std::vector<skt::gen::Farm> farms_of(const Shape& sh) {
  skt::FoldedProgram p =
      skt::testing::folded_from(kRanks, [&](uint32_t r) { return r == 0 ? master(sh) : worker(sh, r); });
  std::set<std::string> notes;
  return skt::gen::find_farms(p, std::vector<double>(kRanks, 0.1), 1, notes);
}

void expect_farm(const std::vector<skt::gen::Farm>& farms) {
  ASSERT_EQ(farms.size(), 1u);
  const skt::gen::Farm& f = farms[0];
  EXPECT_EQ(f.master, 0u);
  EXPECT_EQ(f.workers, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(f.task_ns.size(), static_cast<size_t>(kTasks));
  EXPECT_EQ(f.kept.size(), static_cast<size_t>(kTasks));
  EXPECT_EQ(f.ask_tag, kAsk);
  EXPECT_EQ(f.task_tag, kTask);
  EXPECT_EQ(f.stop_tag, kStop);
  for (double t : f.task_ns) EXPECT_GT(t, 1e6);
}

TEST(Farm, IrecvFromAnySourceAndWait) {
  const std::vector<skt::gen::Farm> farms = farms_of({true, true, true});
  expect_farm(farms);
  ASSERT_EQ(farms.size(), 1u);
  EXPECT_EQ(farms[0].master_recv, skt::gen::FarmRecv::kIrecvAny);
  EXPECT_TRUE(farms[0].answer_isend);
  EXPECT_TRUE(farms[0].ask_isend);
  EXPECT_TRUE(farms[0].worker_irecv);
}

TEST(Farm, IrecvPerWorkerAndWaitanyRepostedAndCancelled) {
  const std::vector<skt::gen::Farm> farms = farms_of({false, false, true});
  expect_farm(farms);
  ASSERT_EQ(farms.size(), 1u);
  EXPECT_EQ(farms[0].master_recv, skt::gen::FarmRecv::kIrecvEach);
  EXPECT_FALSE(farms[0].answer_isend);
  EXPECT_FALSE(farms[0].ask_isend);
  EXPECT_TRUE(farms[0].worker_irecv);
}

TEST(Farm, IrecvPerWorkerAndWaitanyNotRepostedAfterStop) {
  expect_farm(farms_of({false, true, false}));
}

// The skeleton polls with MPI_Testany too, computing as much between polls
// (0.3 ms at 0.1 units per ns); without polls it waits (MPI_Waitany). The
// master's computation per request leaves the polls out (the fold averages
// the misses' gaps: the first miss's share of them stays in it).
TEST(Farm, IrecvPerWorkerAndTestanyPolling) {
  const std::vector<skt::gen::Farm> farms = farms_of({false, false, true, true});
  expect_farm(farms);
  ASSERT_EQ(farms.size(), 1u);
  EXPECT_EQ(farms[0].master_recv, skt::gen::FarmRecv::kIrecvEach);
  EXPECT_NEAR(farms[0].master_poll_units, 30'000, 1);
  EXPECT_LT(farms[0].master_recv_units, 30'000);  // the polls' 60,000 a request are not in it
  EXPECT_EQ(farms_of({false, false, true, false})[0].master_poll_units, 0);
}

// A master that sends each worker its first task unasked, then takes the
// results (MPI_Recv from MPI_ANY_SOURCE, or polling: MPI_Iprobe from
// MPI_ANY_SOURCE three times in vain with 0.5 ms of its own work after each,
// then the probe that finds the result and MPI_Recv from that rank), answers
// each with the next task while there is one, takes the last results
// unanswered and then stops every worker (tests/apps/farm2.c drain, poll).
std::vector<Syn> draining_master(bool poll) {
  std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
  for (int64_t w = 1; w < kRanks; ++w) v.push_back(message(skt::kFunc_MPI_Send, 20, w, kTask));
  for (int k = 2; k < kTasks + 2; ++k) {
    const int64_t w = worker_of(k);
    if (poll) {
      for (int miss = 0; miss < 3; ++miss) {
        Syn none = call(skt::kFunc_MPI_Iprobe, 21);
        none.tag = kAsk, none.flags = skt::kFlagAnySource | skt::kFlagTestFailed;
        if (miss > 0) none.gap = 500'000;
        v.push_back(none);
      }
      Syn found = message(skt::kFunc_MPI_Iprobe, 21, w, kAsk);
      found.flags = skt::kFlagAnySource, found.gap = 500'000;
      v.push_back(found);
      v.push_back(message(skt::kFunc_MPI_Recv, 22, w, kAsk));
    } else {
      Syn any = message(skt::kFunc_MPI_Recv, 22, w, kAsk);
      any.flags = skt::kFlagAnySource;
      v.push_back(any);
    }
    if (k < kTasks) v.push_back(message(skt::kFunc_MPI_Send, 23, w, kTask));
  }
  for (int64_t w = 1; w < kRanks; ++w) v.push_back(message(skt::kFunc_MPI_Send, 24, w, kStop));
  v.push_back(call(skt::kFunc_MPI_Finalize, 8));
  return v;
}

// Its worker: the seed, then per task 2 ms of computation, the result, the
// next answer (any tag; posted: an MPI_Irecv posted just before its MPI_Wait).
std::vector<Syn> seeded_worker(uint32_t r, bool posted = false) {
  std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
  int64_t id = 0;
  auto answer = [&] {
    if (posted) {
      v.push_back(post(25, 0, kAnyTag, id));
      Syn done = call(skt::kFunc_MPI_Wait, 27);
      done.reqs = {id++};
      v.push_back(done);
      return;
    }
    Syn recv = message(skt::kFunc_MPI_Recv, 25, 0, kAnyTag);
    recv.flags = skt::kFlagAnyTag;
    v.push_back(recv);
  };
  answer();
  for (int k = 2; k < kTasks + 2; ++k) {
    if (worker_of(k) != r) continue;
    v.push_back(message(skt::kFunc_MPI_Send, 26, 0, kAsk));
    v.back().gap = 2'000'000;
    answer();
  }
  v.push_back(call(skt::kFunc_MPI_Finalize, 8));
  return v;
}

std::vector<skt::gen::Farm> draining_farms(bool poll) {
  skt::FoldedProgram p = skt::testing::folded_from(
      kRanks, [&](uint32_t r) { return r == 0 ? draining_master(poll) : seeded_worker(r); });
  std::set<std::string> notes;
  return skt::gen::find_farms(p, std::vector<double>(kRanks, 0.1), 1, notes);
}

TEST(Farm, MasterTakingTheLastResultsThenStoppingEveryWorker) {
  const std::vector<skt::gen::Farm> farms = draining_farms(false);
  expect_farm(farms);
  ASSERT_EQ(farms.size(), 1u);
  EXPECT_EQ(farms[0].seeded, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(farms[0].master_recv, skt::gen::FarmRecv::kBlocking);
  EXPECT_EQ(farms[0].master_poll_units, 0);
  EXPECT_FALSE(farms[0].worker_polls) << "its workers wait in MPI_Recv";
}

// The polls are the master's waiting: the skeleton polls too, computing
// 0.5 ms (at 0.1 units per ns) after each poll that finds nothing, and
// before a request only what came before its first poll (the fixtures'
// default gaps: 1 us), not the 1.5 ms of polls.
TEST(Farm, MasterPollingWithIprobeFromAnySource) {
  const std::vector<skt::gen::Farm> farms = draining_farms(true);
  expect_farm(farms);
  ASSERT_EQ(farms.size(), 1u);
  EXPECT_EQ(farms[0].master_recv, skt::gen::FarmRecv::kPoll);
  EXPECT_NEAR(farms[0].master_poll_units, 50'000, 1);
  EXPECT_LT(farms[0].master_recv_units, 1'000);
}

// A seeded worker that takes each answer by an MPI_Irecv posted just before
// its MPI_Wait (mpi4py's comm.irecv(...).wait()): its part starts at the
// seed's post. (The finder once looped for ever on it: the post was
// neither a request nor an answer.)
TEST(Farm, SeededWorkerPostingEachReceiveBeforeItsWait) {
  skt::FoldedProgram p = skt::testing::folded_from(
      kRanks, [&](uint32_t r) { return r == 0 ? draining_master(false) : seeded_worker(r, true); });
  std::set<std::string> notes;
  const std::vector<skt::gen::Farm> farms = skt::gen::find_farms(p, std::vector<double>(kRanks, 0.1), 1, notes);
  expect_farm(farms);
  ASSERT_EQ(farms.size(), 1u);
  EXPECT_EQ(farms[0].seeded, (std::vector<uint32_t>{1, 2}));
  EXPECT_TRUE(farms[0].worker_irecv);
  EXPECT_EQ(farms[0].worker_recv_tag, -1);
}

// mpi4py.futures' pool (tests/apps/farm2.c mprobe): the master sends each
// task with MPI_Issend and frees its request once that worker's result is
// in; it polls with MPI_Iprobe(MPI_ANY_SOURCE), computing 0.5 ms and
// sleeping 0.3 ms after each that found none, and takes the result with
// MPI_Mprobe(MPI_ANY_SOURCE), which may match another rank than the probe
// before it, and MPI_Mrecv; the stops go out by MPI_Issend and MPI_Waitall.
// Workers poll for their task the same way (any source, any tag), and on
// their result's MPI_Issend with MPI_Test.
std::vector<Syn> pool_master() {
  std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
  int64_t id = 0, sent[kRanks] = {0, 0, 0};
  auto poll_in_vain = [&](uint32_t site, int64_t tag, uint32_t flags, int64_t gap) {
    Syn none = call(skt::kFunc_MPI_Iprobe, site);
    none.tag = tag, none.flags = flags | skt::kFlagAnySource | skt::kFlagTestFailed, none.gap = gap;
    none.blocked = gap > 1'000 ? 300'000 : 0;  // and 0.3 ms asleep (a gap is computation, blocked time besides)
    v.push_back(none);
  };
  auto issend = [&](int64_t w, int64_t tag) {
    Syn s = message(skt::kFunc_MPI_Issend, 30, w, tag);
    s.reqs = {sent[w] = id++};
    v.push_back(s);
  };
  for (int64_t w = 1; w < kRanks; ++w) issend(w, kTask), poll_in_vain(31, kAsk, 0, 1'000);
  for (int k = 2; k < kTasks + 2; ++k) {
    const int64_t w = worker_of(k);
    for (int miss = 0; miss < 3; ++miss) poll_in_vain(31, kAsk, 0, miss > 0 ? 500'000 : 1'000);
    Syn found = message(skt::kFunc_MPI_Iprobe, 31, k == 4 ? 3 - w : w, kAsk);  // another's result, once
    found.flags = skt::kFlagAnySource, found.gap = 500'000, found.blocked = 300'000;
    v.push_back(found);
    Syn mprobe = message(skt::kFunc_MPI_Mprobe, 32, w, kAsk);
    mprobe.flags = skt::kFlagAnySource;
    v.push_back(mprobe);
    v.push_back(message(skt::kFunc_MPI_Mrecv, 33, w, kAsk));
    Syn freed = call(skt::kFunc_MPI_Request_free, 34);
    freed.reqs = {sent[w]};
    v.push_back(freed);
    if (k < kTasks) issend(w, kTask);
  }
  Syn all = call(skt::kFunc_MPI_Waitall, 35);
  for (int64_t w = 1; w < kRanks; ++w) issend(w, kStop), all.reqs.push_back(sent[w]);
  v.push_back(all);
  v.push_back(call(skt::kFunc_MPI_Finalize, 8));
  return v;
}

std::vector<Syn> pool_worker(uint32_t r) {
  std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
  int64_t id = 0;
  auto answer = [&] {
    for (int miss = 0; miss < 2; ++miss) {
      Syn none = call(skt::kFunc_MPI_Iprobe, 40);
      none.tag = kAnyTag, none.flags = skt::kFlagAnySource | skt::kFlagAnyTag | skt::kFlagTestFailed;
      none.gap = 20'000, none.blocked = 200'000;  // 20 us of work and 0.2 ms asleep before each poll
      v.push_back(none);
    }
    Syn found = message(skt::kFunc_MPI_Iprobe, 40, 0, kAnyTag);
    found.flags = skt::kFlagAnySource | skt::kFlagAnyTag, found.gap = 20'000, found.blocked = 200'000;
    v.push_back(found);
    v.push_back(message(skt::kFunc_MPI_Mprobe, 41, 0, kAnyTag));
    v.back().flags = skt::kFlagAnyTag;
    v.push_back(message(skt::kFunc_MPI_Mrecv, 42, 0, kAnyTag));
  };
  answer();
  for (int k = 2; k < kTasks + 2; ++k) {
    if (worker_of(k) != r) continue;
    Syn result = message(skt::kFunc_MPI_Issend, 43, 0, kAsk);
    result.gap = 2'000'000, result.reqs = {id};
    v.push_back(result);
    Syn test = call(skt::kFunc_MPI_Test, 44);
    test.flags = skt::kFlagTestFailed;
    v.push_back(test);
    test.flags = 0, test.reqs = {id++};
    v.push_back(test);
    answer();
  }
  v.push_back(call(skt::kFunc_MPI_Finalize, 8));
  return v;
}

TEST(Farm, PoolOfMpi4pyFuturesWithIssendRequestFreeAndMprobe) {
  skt::FoldedProgram p =
      skt::testing::folded_from(kRanks, [&](uint32_t r) { return r == 0 ? pool_master() : pool_worker(r); });
  std::set<std::string> notes;
  const std::vector<skt::gen::Farm> farms = skt::gen::find_farms(p, std::vector<double>(kRanks, 0.1), 1, notes);
  expect_farm(farms);
  ASSERT_EQ(farms.size(), 1u);
  EXPECT_EQ(farms[0].seeded, (std::vector<uint32_t>{1, 2}));
  EXPECT_EQ(farms[0].master_recv, skt::gen::FarmRecv::kPoll);
  EXPECT_TRUE(farms[0].answer_isend);
  EXPECT_TRUE(farms[0].ask_isend);
  EXPECT_FALSE(farms[0].worker_irecv);
  // its workers found their tasks by MPI_Iprobe: the skeleton's poll too, sleeping 0.2 ms after a poll in vain
  EXPECT_TRUE(farms[0].worker_polls);
  ASSERT_EQ(farms[0].worker_poll_sleep_s.size(), skt::gen::Farm::kPollSleeps);
  EXPECT_NEAR(farms[0].worker_poll_sleep_s[0], 2e-4, 1e-6);  // after its first poll in vain
  // after each poll in vain: 0.5 ms of computation at 0.1 units per ns, 0.3 ms asleep (a poll's figures
  // are its node's mean: the seeds' polls, 1 us and awake, count a little)
  EXPECT_NEAR(farms[0].master_poll_units, 50'000, 10);
  EXPECT_NEAR(farms[0].master_poll_sleep_s, 3e-4, 1e-5);
}

// 100 tasks, every tenth of them (the 5th, 15th, ...) ten times as long
// as the others: at K = 10 the ten kept must not all be long ones (the
// middle of each ten, kept before, were: the kept farm ran 5 times a tenth
// of the application's).
TEST(Farm, KeptTasksDoNotAliasWithAPeriodInTheTaskSizes) {
  constexpr int kMany = 100;
  auto size_ns = [](int k) { return k % 10 == 5 ? 10'000'000 : 1'000'000; };
  skt::FoldedProgram p = skt::testing::folded_from(kRanks, [&](uint32_t r) {
    std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
    for (int k = 0; k < kMany + 2; ++k) {
      const int64_t w = worker_of(k);
      if (r == 0) {
        Syn any = message(skt::kFunc_MPI_Recv, 50, w, kAsk);
        any.flags = skt::kFlagAnySource;
        v.push_back(any);
        v.push_back(message(skt::kFunc_MPI_Send, 51, w, k < kMany ? kTask : kStop));
      } else if (w == r) {
        // the result of the task it had (a long one's sent from a call site of its own, so that each
        // node's mean time is the task's: a fold keeps means)
        const bool long_one = k >= 2 && size_ns(k - 2) > 1'000'000;
        v.push_back(message(skt::kFunc_MPI_Send, long_one ? 54 : 52, 0, kAsk));
        if (k >= 2) v.back().gap = size_ns(k - 2);
        Syn recv = message(skt::kFunc_MPI_Recv, 53, 0, kAnyTag);
        recv.flags = skt::kFlagAnyTag;
        v.push_back(recv);
      }
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 8));
    return v;
  });
  std::set<std::string> notes;
  const std::vector<skt::gen::Farm> farms = skt::gen::find_farms(p, std::vector<double>(kRanks, 0.1), 10, notes);
  ASSERT_EQ(farms.size(), 1u);
  const skt::gen::Farm& f = farms[0];
  ASSERT_EQ(f.task_ns.size(), static_cast<size_t>(kMany));
  ASSERT_EQ(f.kept.size(), 10u);
  double all = 0, kept = 0;
  for (double t : f.task_ns) all += t / kMany;
  for (uint64_t k : f.kept) kept += f.task_ns[k] / 10;
  EXPECT_LT(kept, 2 * all) << "kept tasks' mean " << kept << " ns, all tasks' " << all;
  for (size_t j = 1; j < f.kept.size(); ++j) EXPECT_LT(f.kept[j - 1], f.kept[j]);
}

// Two tasks in flight per worker (tests/apps/farm2.c prefetch): the master
// sends each worker two tasks unasked, answers each result with the next
// task, or the first time none is left with a stop; the worker's last
// result (of the task it still had) is taken, not answered. A worker keeps
// an MPI_Irecv of its next task posted while it computes (2 ms) the one it
// has. Before, the finder took a worker's two seeds for one answer in two
// messages or for a worker asked twice, and found no farm; and it counted
// a task's computation, made after the next receive was posted, as waiting.
std::vector<Syn> prefetching_master() {
  std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
  for (int k = 0; k < 4; ++k) v.push_back(message(skt::kFunc_MPI_Send, 60, worker_of(k), kTask));
  bool stopped[kRanks] = {false, false, false};
  for (int k = 0, next = 4; k < kTasks; ++k) {
    const int64_t w = worker_of(k);
    Syn any = message(skt::kFunc_MPI_Recv, 61, w, kAsk);
    any.flags = skt::kFlagAnySource;
    v.push_back(any);
    if (next < kTasks) v.push_back(message(skt::kFunc_MPI_Send, 62, w, kTask)), ++next;
    else if (!stopped[w]) v.push_back(message(skt::kFunc_MPI_Send, 63, w, kStop)), stopped[w] = true;
  }
  v.push_back(call(skt::kFunc_MPI_Finalize, 8));
  return v;
}

std::vector<Syn> prefetching_worker() {
  std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
  int64_t id = 0;
  auto wait = [&] {
    Syn done = call(skt::kFunc_MPI_Wait, 65);
    done.reqs = {id++};
    v.push_back(done);
  };
  v.push_back(post(64, 0, kAnyTag, id));
  for (int task = 0; task < kTasks / 2; ++task) {
    wait();
    v.push_back(post(64, 0, kAnyTag, id));
    v.push_back(message(skt::kFunc_MPI_Send, 66, 0, kAsk));
    v.back().gap = 2'000'000;
  }
  wait();  // the stop
  v.push_back(call(skt::kFunc_MPI_Finalize, 8));
  return v;
}

TEST(Farm, TwoTasksInFlightPerWorker) {
  skt::FoldedProgram p = skt::testing::folded_from(
      kRanks, [&](uint32_t r) { return r == 0 ? prefetching_master() : prefetching_worker(); });
  std::set<std::string> notes;
  const std::vector<skt::gen::Farm> farms = skt::gen::find_farms(p, std::vector<double>(kRanks, 0.1), 1, notes);
  expect_farm(farms);
  ASSERT_EQ(farms.size(), 1u);
  EXPECT_EQ(farms[0].seeded, (std::vector<uint32_t>{1, 2, 1, 2}));
  EXPECT_TRUE(farms[0].worker_irecv);
  EXPECT_LT(farms[0].worker_wait_units[1], 1'000) << "a task's computation taken for waiting";
}

// Receives re-posted after the stops and never completed: the skeleton
// could not end them as the application did, so no farm (replayed as traced).
TEST(Farm, PostedReceiveNeverCompletedIsNoFarm) {
  Shape sh{false, false, true};
  skt::FoldedProgram p = skt::testing::folded_from(kRanks, [&](uint32_t r) {
    std::vector<Syn> v = r == 0 ? master(sh) : worker(sh, r);
    if (r == 0) v.erase(v.end() - 3, v.end() - 1);  // the two completions after the farm
    return v;
  });
  std::set<std::string> notes;
  EXPECT_TRUE(skt::gen::find_farms(p, std::vector<double>(kRanks, 0.1), 1, notes).empty());
}

}  // namespace
