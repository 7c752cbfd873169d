#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <future>
#include <map>
#include <set>
#include <thread>
#include <tuple>
#include <unordered_map>

#include "skel/codec.h"
#include "skel/compress.h"
#include "skel/fold.h"
#include "skel/trace.h"

#include "request_backs.h"

namespace skt::fold {
namespace {

bool tag_like(Param p) { return p == Param::tag || p == Param::tag2; }
bool peer_like(Param p) { return p == Param::peer || p == Param::peer2; }
// Parameters that may change from one instance of a call to the next and
// still fold: counts (a + b*i, a cycle, or within a band), tags (a + b*i or a
// cycle, exactly: a tag that is the iteration number, or the stage's cell) and
// peers (a cycle, exactly: NPB CG's reduction, one call site whose peer is
// rank xor 2 then rank xor 1). Their order in CountRule / Builder::counts.
constexpr Param kRuleParams[] = {Param::count, Param::count2, Param::bytes, Param::bytes2,
                                 Param::tag,   Param::tag2,   Param::peer,  Param::peer2};
constexpr int kNumRuleParams = 8;
// Messages of at most this many bytes are alike whatever their sizes (one
// protocol, a time of latency plus size over bandwidth, so that their mean
// size takes their mean time): counts of such messages share a symbol
// however much they differ, and the node sends their mean. A particle
// code's migrating particles, 0-64 of 80 bytes to each neighbour, change in
// every step (PRK's PIC kernel on 4 ranks: its time steps did not fold, each
// stood apart); 16 KiB: 200 such particles, where counts that vary at
// random (as the square root of the count) stay within the band. Not with
// call sites joined: there the counts tell the call sites apart (NPB CG's
// Irecvs of 1 and of 1,750 elements: split by their counts, the peers of
// each follow a cycle; alike, the peers followed none and were keyed
// exactly, and the reduction's steps no longer folded).
constexpr int64_t kSmallMessageBytes = 16384;
struct Band {
  double relative = 0;        // values within +-relative of a centre are alike (0: only equal ones)
  int64_t small_bytes = -1;   // messages of at most this many bytes are alike (-1: none)
};
Band band_of(const CompressOptions& opt) {
  return {opt.count_band, opt.join_callsites || opt.count_band <= 0 ? -1 : kSmallMessageBytes};
}
// Two values of a count-like parameter, each with its message's size in bytes (-1: none).
bool alike(int64_t v, int64_t centre, int64_t v_bytes, int64_t centre_bytes, const Band& band) {
  if (v_bytes >= 0 && centre_bytes >= 0 && v_bytes <= band.small_bytes && centre_bytes <= band.small_bytes)
    return true;
  return std::fabs(static_cast<double>(v - centre)) <= band.relative * std::fabs(static_cast<double>(centre));
}
// The bytes parameter that sizes count-like parameter q's message.
Param bytes_of(int q) {
  const Param p = kRuleParams[q];
  return p == Param::count2 || p == Param::bytes2 ? Param::bytes2 : Param::bytes;
}
// A value left out of the coarse key: counts always (their kind too), tags when
// no rank's is MPI_ANY_TAG (-1, stays in the key), whether one value for all ranks
// or one per rank (NPB BT's stage tags, WEST + the cell's coordinates); the
// peers of a call to given ranks (not MPI_ANY_SOURCE).
bool coarse_free(Param p, const MergedEvent& e, const ParamDesc& d, const Identity& id) {
  if (count_like(p)) return true;
  if (peer_like(p)) return id.peer_class == PeerClass::kRank && d.kind != ParamKind::kAbsent;
  if (!tag_like(p)) return false;
  switch (d.kind) {
    case ParamKind::kConst: return d.a >= 0;
    case ParamKind::kLinear:  // a + b * rank
      for (uint32_t r : e.ranks)
        if (d.a + d.b * r < 0) return false;
      return true;
    case ParamKind::kTable:
      for (size_t q = 0; q < e.ranks.size(); ++q)
        if (e.tables[static_cast<size_t>(d.a) + q] < 0) return false;
      return true;
    default: return false;
  }
}
// A cycle rule (CountRule kind 3): the value at iteration k of the innermost
// loop around the call is cycle[k mod period], period at most this: NPB BT's
// stage tags over the cells, stages a loop of their own or flattened into a
// longer one by the merge's order.
constexpr int64_t kMaxCyclePeriod = 64;
// ... and where the computation before the call is the same in every phase:
// the phases' shortest gaps within 25 % of the node's mean (the count band;
// or 50 us) of each other, on every rank, so that timing noise does not split
// a loop.
constexpr double kPhaseGapTolerance = 0.25, kPhaseGapFloorNs = 50000;

// A node's computation profile (FoldedNode::profile) is kept where it
// matters: the node has at least this many instances (a few per part), and
// on some rank its parts move at least kProfileMinShare of the rank's time
// (gaps and calls) away from their mean, with a part at least
// kProfileMinFactor off it (noise moves the parts of a long run by a few percent).
constexpr uint64_t kProfileMinInstances = 4 * kProfileParts;
constexpr double kProfileMinShare = 0.01, kProfileMinFactor = 0.1;
// One parameter (kRuleParams index q) of one coarse symbol, refined.
int64_t refinement(int64_t coarse, int q) { return coarse * kNumRuleParams + q; }

// Merged events -> symbols. The coarse key is everything that must be
// equal, with constant count-like values and tags left out, so that counts
// and tags that follow the iteration (a + b*i) can fold. Calls whose coarse
// symbol has a parameter `refined` (refinement()) also key that tag exactly
// or that count by band: the first value seen becomes a centre, later values
// within +-band of it join it, others start a centre of their own.
class SymbolTable {
 public:
  SymbolTable(const MergedTrace& m, Band band, bool join, const std::set<int64_t>& refined)
      : m_(m), band_(band), join_(join), refined_(refined) {}

  // The symbol of e; `fresh` says it is new; `coarse` is its coarse symbol.
  int64_t symbol(const MergedEvent& e, bool& fresh, int64_t& coarse) {
    key_.clear();
    const Identity& id = m_.identities.at(e.identity);
    if (join_) {  // the identity but its call site
      put(id.func);
      put(id.comm);
      put(id.dtype);
      put(id.dtype2);
      put(id.op);
      put(id.root);
      put(static_cast<int64_t>(id.peer_class));
    } else {
      put(e.identity);
    }
    put(static_cast<int64_t>(e.ranks.size()));
    for (uint32_t r : e.ranks) put(r);
    for (size_t p = 0; p < kNumParams; ++p) {
      const ParamDesc& d = e.params[p];
      bool free = coarse_free(static_cast<Param>(p), e, d, id);
      // a free value's kind is left out too: one value for all ranks in one
      // iteration, a table in the next (BT: 6000 + rank, then a permutation; a
      // particle code's counts, 0 on every rank in one step, per rank in the next)
      if (!free) put(static_cast<int64_t>(d.kind));
      if (free) continue;  // left out of the coarse key; refined below
      if (d.kind == ParamKind::kTable) {
        for (size_t q = 0; q < e.ranks.size(); ++q) put(e.tables[static_cast<size_t>(d.a) + q]);
      } else {
        put(d.a);
        put(d.b);
      }
    }
    for (const ListDesc& l : e.lists) {
      if (l.field == ListField::reqrefs) continue;  // keyed by reqback: stays the same in a loop
      put(static_cast<int64_t>(l.field));
      put(l.same);
      for (const auto& v : l.lists) {
        put(static_cast<int64_t>(v.size()));
        for (int64_t x : v) put(x);
      }
    }
    std::string base = key_;
    coarse = coarse_.emplace(base, static_cast<int64_t>(coarse_.size())).first->second;
    for (int q = 0; q < kNumRuleParams; ++q) {
      size_t p = static_cast<size_t>(kRuleParams[q]);
      const ParamDesc& d = e.params[p];
      if (!coarse_free(kRuleParams[q], e, d, id) || !refined_.count(refinement(coarse, q))) continue;
      put(static_cast<int64_t>(p));
      if (!count_like(static_cast<Param>(p))) {  // exact
        put(static_cast<int64_t>(d.kind));
        if (d.kind == ParamKind::kTable)
          for (size_t q = 0; q < e.ranks.size(); ++q) put(e.tables[static_cast<size_t>(d.a) + q]);
        else {
          put(d.a);
          put(d.b);
        }
        continue;
      }
      put(count_class(e, q, base));
    }
    auto [it, is_new] = ids_.emplace(key_, static_cast<int64_t>(ids_.size()));
    fresh = is_new;
    return it->second;
  }
  size_t size() const { return ids_.size(); }

 private:
  // A refined count's class: the index of its centre, the first values seen
  // (per rank: the count and its message's bytes) that every rank's are
  // alike() to; values alike to none start a centre of their own.
  int64_t count_class(const MergedEvent& e, int q, const std::string& base) {
    const bool sized = e.params[static_cast<size_t>(bytes_of(q))].kind != ParamKind::kAbsent;
    values_.clear();
    for (uint32_t r : e.ranks)
      values_.push_back({m_.value(e, kRuleParams[q], r), sized ? m_.value(e, bytes_of(q), r) : -1});
    std::vector<std::vector<Sized>>& centres = centres_[base + static_cast<char>(kRuleParams[q])];
    auto near = [&](const std::vector<Sized>& c) {
      for (size_t i = 0; i < c.size(); ++i)
        if (!alike(values_[i].value, c[i].value, values_[i].bytes, c[i].bytes, band_)) return false;
      return true;
    };
    size_t c = 0;
    while (c < centres.size() && !near(centres[c])) ++c;
    if (c == centres.size()) centres.push_back(values_);
    return static_cast<int64_t>(c);
  }
  void put(int64_t v) {
    uint8_t tmp[10];
    uint8_t* end = codec::put_varint(tmp, codec::zigzag(v));
    key_.append(reinterpret_cast<char*>(tmp), static_cast<size_t>(end - tmp));
  }
  const MergedTrace& m_;
  Band band_;
  bool join_;
  const std::set<int64_t>& refined_;
  std::unordered_map<std::string, int64_t> coarse_;
  std::string key_;
  struct Sized {
    int64_t value, bytes;  // bytes: of the message (-1: none)
  };
  std::unordered_map<std::string, std::vector<std::vector<Sized>>> centres_;  // per rank, in e.ranks' order
  std::vector<Sized> values_;
  std::unordered_map<std::string, int64_t> ids_;
};

struct Acc {  // running statistics of one rank at one node
  uint64_t n = 0;
  double sum = 0, sumsq = 0, min = 0, max = 0;
  void add(double v) {
    if (!n || v < min) min = v;
    if (!n || v > max) max = v;
    ++n;
    sum += v;
    sumsq += v * v;
  }
  RankStat stat() const {
    RankStat s;
    s.n = n;
    if (!n) return s;
    s.mean = sum / static_cast<double>(n);
    double var = sumsq / static_cast<double>(n) - s.mean * s.mean;
    s.sd = var > 0 ? std::sqrt(var) : 0;
    s.min = min;
    s.max = max;
    return s;
  }
};

// Whether a value depends only on k mod p, for some p <= kMaxCyclePeriod,
// where k is an index that counts up from 0 (and may start again from 0):
// the innermost loop's iteration, or the node's instance. Checked online for
// every p at once once the value varies: bit p-1 of `periods` says p still
// holds, seen[j] is the value at k = j (k < 64; every k before a later one is
// seen first, as k counts up), so p holds while v == seen[k mod p].
struct Periodic {
  // bit d-1 of kProperDivisors[p-1]: d < p divides p
  static constexpr std::array<uint64_t, kMaxCyclePeriod> kProperDivisors = [] {
    std::array<uint64_t, kMaxCyclePeriod> divisors{};
    for (int64_t p = 1; p <= kMaxCyclePeriod; ++p)
      for (int64_t d = 1; d < p; ++d)
        if (p % d == 0) divisors[static_cast<size_t>(p - 1)] |= 1ull << (d - 1);
    return divisors;
  }();
  // k mod p by a multiply instead of a division (Lemire's fastmod, exact for
  // k < 2^32): the walk takes it for every period checked, for every value
  static constexpr std::array<uint64_t, kMaxCyclePeriod + 1> kModMagic = [] {
    std::array<uint64_t, kMaxCyclePeriod + 1> m{};
    for (uint64_t p = 1; p <= kMaxCyclePeriod; ++p) m[p] = ~0ull / p + 1;
    return m;
  }();
  static size_t mod(int64_t k, int64_t p) {
    if (static_cast<uint64_t>(k) >> 32) return static_cast<size_t>(k % p);
    const uint64_t low = kModMagic[static_cast<size_t>(p)] * static_cast<uint64_t>(k);
    return static_cast<size_t>((static_cast<unsigned __int128>(low) * static_cast<uint64_t>(p)) >> 64);
  }
  int64_t max_k = -1;
  uint64_t periods = ~0ull;
  // the periods that hold none of whose proper divisors holds: while these
  // hold, every other one does too (a multiple of one of them)
  uint64_t minimal = 1;
  std::vector<int64_t> seen;
  // v at index k; `first` is the first value of all (is_first: this is it),
  // `varied` whether any value before this one differed from it. Most values
  // never vary (a constant count or peer): that case only moves max_k, inline.
  void add(int64_t v, int64_t k, bool is_first, int64_t first, bool varied) {
    if (is_first || (!varied && v == first)) {
      max_k = std::max(max_k, k);
      return;
    }
    add_varying(v, k, first, varied);
  }
  __attribute__((noinline)) void add_varying(int64_t v, int64_t k, int64_t first, bool varied) {
    if (!varied)  // the first change: all values so far were `first`
      seen.assign(static_cast<size_t>(std::min<int64_t>(max_k + 1, kMaxCyclePeriod)), first);
    if (k < kMaxCyclePeriod && k >= static_cast<int64_t>(seen.size())) seen.push_back(v);
    bool all_hold = true;  // the common case, checked on the minimal periods alone
    uint64_t check = minimal;
    if (k < kMaxCyclePeriod) {  // every period p > k looks at the same value: k mod p = k
      const uint64_t up_to_k = (1ull << k) - 1;  // bits p - 1 < k
      if (check & ~up_to_k) all_hold = seen[static_cast<size_t>(k)] == v;
      check &= up_to_k;
    }
    for (uint64_t left = check; left && all_hold; left &= left - 1)
      all_hold = seen[mod(k, __builtin_ctzll(left) + 1)] == v;
    if (!all_hold) {
      minimal = 0;  // the periods checked below that hold
      for (uint64_t left = periods; left; left &= left - 1) {  // the periods still holding, shortest first
        int64_t p = __builtin_ctzll(left) + 1;
        // a shorter period that divides p and still holds (checked just before)
        // makes p hold too: the value depends on k mod p then as well
        if (periods & kProperDivisors[static_cast<size_t>(p - 1)]) continue;
        if (seen[mod(k, p)] != v) periods &= ~(1ull << (p - 1));
        else minimal |= 1ull << (p - 1);
      }
    }
    max_k = std::max(max_k, k);
  }
};

struct CountAcc {  // one count-like parameter of one rank over a node's instances
  uint64_t n = 0;
  int64_t first = 0, step = 0;
  int64_t first_bytes = -1;
  bool linear = true, varies = false, in_band = true;  // in_band: every value alike() to the first
  double sum = 0, min = 0, max = 0;
  // cycles over the innermost loop's iteration k (while every instance is in
  // a loop) and over the instance n
  bool in_loop = true;
  Periodic by_k, by_instance;
  // a + b*k over the innermost loop's iteration k (while every instance is in a loop)
  bool k_linear = true, k_step_known = false;
  int64_t k_first = -1, k_first_value = 0, k_step = 0;
  void add_by_k(int64_t v, int64_t k) {
    if (k_first < 0) {
      k_first = k, k_first_value = v;
    } else if (k == k_first) {
      k_linear &= v == k_first_value;
    } else if (!k_step_known) {
      k_step_known = true;
      k_step = (v - k_first_value) / (k - k_first);
      k_linear &= k_first_value + k_step * (k - k_first) == v;
    } else {
      k_linear &= k_first_value + k_step * (k - k_first) == v;
    }
  }
  int64_t k_base() const { return k_first_value - k_step * k_first; }  // the value at k = 0
  // v: the value; message_bytes: the size of the message it is part of (-1: none)
  void add(int64_t v, int64_t message_bytes, const Band& band, int64_t k) {
    if (k < 0) in_loop = false;
    if (in_loop) by_k.add(v, k, n == 0, first, varies), add_by_k(v, k);
    by_instance.add(v, static_cast<int64_t>(n), n == 0, first, varies);
    if (n && !alike(v, first, message_bytes, first_bytes, band)) in_band = false;
    if (n == 0) first = v, first_bytes = message_bytes;
    else if (n == 1) step = v - first;
    else if (v != first + step * static_cast<int64_t>(n)) linear = false;
    if (n && v != first) varies = true;
    double d = static_cast<double>(v);
    if (!n || d < min) min = d;
    if (!n || d > max) max = d;
    sum += d;
    ++n;
  }
};

// Builds the loop tree (build) and walks the expanded program over it (walk):
// the timing walk fills every node's statistics and value rules; a phase
// walk (phase_period set, after the timing walk) only gathers the gaps of the
// nodes with a cycle, per phase.
//
// A walk goes through the whole program in one or more lanes, each for its
// own ranks (timing_walk: on several threads). Everything a walk writes is
// per rank (the accumulators, cursor, pending) or lane-local (Lane), so lanes
// share nothing they write, and each rank's values are taken in program
// order whatever the lanes: the output does not depend on them.
struct Builder {
  Builder(const MergedTrace& trace, const std::vector<int64_t>& symbols, FoldedProgram& program,
          const Folded& fold_result, Band count_band)
      : m(trace), seq(symbols), out(program), folded(fold_result), cursor(trace.world_size, 0),
        band(count_band), pending(trace.world_size, -1) {}
  const MergedTrace& m;
  const std::vector<int64_t>& seq;  // symbol of each merged event
  FoldedProgram& out;
  const Folded& folded;
  std::vector<std::vector<Acc>> gap, dur;        // per node, per world rank
  std::vector<std::vector<std::vector<CountAcc>>> counts;  // per node, per kRuleParams entry, per rank
  std::vector<size_t> cursor;                    // per rank: next time index
  Band band;
  std::vector<std::vector<Acc>> work;             // per node, per world rank (ranks with works only)
  std::vector<std::vector<Acc>> blocked;          // per node, per world rank (if any rank was blocked)
  // per node with a cycle: its period, over [0] the loop's iteration k, [1]
  // the instance i (0: none), and its own gaps per rank and phase (k or i mod period)
  using Periods = std::array<uint64_t, 2>;
  std::map<uint32_t, Periods> phase_period;
  std::map<uint32_t, std::array<std::vector<std::vector<Acc>>, 2>> phase_gap;
  // ... and, for nodes with a course (kProfileMinInstances), per rank the
  // same values by part of the instances and phase: [part * period + phase]
  std::map<uint32_t, std::array<std::vector<std::vector<Acc>>, 2>> phase_course;
  std::vector<uint64_t> phase_instance;           // phase walk, per node: its instances walked so far (sized by the caller)

  // The timing walk's accumulators, one per node built.
  // Only those a node can fill: work where the trace has CPU times, dur and counts for calls, counts for
  // the parameters the call's symbol has (the symbol's key fixes which are absent). At 16,384 ranks every
  // node's eight CountAcc per rank took 1.6 GB for an LU-like trace of 460 calls per rank.
  void size_accumulators() {
    size_t N = out.nodes.size(), P = m.world_size;
    bool any_work = false;
    for (const MergedRank& r : m.ranks) any_work |= !r.works.empty();
    bool any_blocked = false;
    for (const MergedRank& r : m.ranks) any_blocked |= !r.blocked.empty();
    gap.assign(N, std::vector<Acc>(P));
    dur.assign(N, {});
    work.assign(N, {});
    blocked.assign(any_blocked ? N : 0, std::vector<Acc>(P));
    counts.assign(N, std::vector<std::vector<CountAcc>>(kNumRuleParams));
    for (size_t i = 0; i < N; ++i) {
      const FoldedNode& n = out.nodes[i];
      if (any_work) work[i].resize(P);
      if (n.is_loop()) continue;
      dur[i].resize(P);
      const MergedEvent& rep = out.symbols.events.at(static_cast<size_t>(n.symbol));
      for (int q = 0; q < kNumRuleParams; ++q)
        if (rep.params[static_cast<size_t>(kRuleParams[q])].kind != ParamKind::kAbsent) counts[i][q].resize(P);
    }
    // a node's instances in the whole program, from the tree (the walk counts them as it goes)
    total_instances.assign(N, 0);
    std::function<void(const std::vector<uint32_t>&, uint64_t)> count_down = [&](const std::vector<uint32_t>& items,
                                                                                 uint64_t times) {
      for (uint32_t id : items) {
        total_instances[id] += times;
        if (out.nodes[id].is_loop()) count_down(out.nodes[id].body, times * out.nodes[id].count);
      }
    };
    count_down(out.top, 1);
    course.assign(N, {});
    for (size_t i = 0; i < N; ++i)
      if (total_instances[i] >= kProfileMinInstances) course[i].assign(P, std::vector<Acc>(kProfileParts));
  }
  // The course of each node's computation through the run (FoldedNode::profile):
  // for nodes of at least kProfileMinInstances instances, per rank and part of
  // the instances (in program order), the computation values, as gap/work take them.
  std::vector<uint64_t> total_instances;
  std::vector<std::vector<std::vector<Acc>>> course;  // per node: empty, or per rank and part

  std::vector<uint32_t> build(const std::vector<Item>& items) {
    std::vector<uint32_t> ids;
    for (Item it : items) {
      FoldedNode n;
      if (is_loop(it)) {
        const Loop& l = folded.loops[loop_index(it)];
        n.body = build(l.body);
        n.count = l.count;
      } else {
        n.symbol = it;
      }
      ids.push_back(static_cast<uint32_t>(out.nodes.size()));
      out.nodes.push_back(std::move(n));
    }
    return ids;
  }

  // pending[r]: the loop whose instance rank r has entered without a call
  // yet: it takes the gap of the rank's first call there (the computation
  // before the loop), the outermost such loop; -1: none. Per rank, since a
  // rank's first call in an iteration need not be the body's first call
  // (NPB LU: rank 0 sends first, rank 1's first call is the receive).
  std::vector<int64_t> pending;
  // One walker's place in the program, and the ranks [lo, hi) it takes.
  struct Lane {
    uint32_t lo = 0, hi = 0;
    size_t pos = 0;                   // next merged event
    int64_t iteration = -1;           // of the innermost loop being walked (-1: none)
    std::vector<uint64_t> instances;  // timing walk, per node: its instances so far
  };
  // The timing walk on `threads` threads, in lanes of at most about kRanksPerLane ranks (at least one
  // lane per thread, at most one per rank), the ranks split so that each lane takes about as many calls;
  // thread t walks lanes t, t + threads, ... in turn. A lane's accumulators then stay in the cache: one
  // lane per thread, the walk's time per call grew with P (halo2d at 16,384 ranks: 2.3 s of CPU, 1.4 s
  // in lanes of 512). Each node's instances come from lane 0.
  void timing_walk(unsigned threads) {
    const uint32_t P = m.world_size;
    threads = std::max(1u, std::min<unsigned>(threads, P));
    const unsigned lanes = std::max(threads, static_cast<unsigned>(std::min<uint64_t>(
                                                 P, (static_cast<uint64_t>(P) + kRanksPerLane - 1) / kRanksPerLane)));
    uint64_t calls = 0;
    for (const MergedRank& r : m.ranks) calls += r.gaps.size();
    std::vector<Lane> lane(lanes);
    uint64_t taken = 0;
    for (uint32_t r = 0, l = 0; r < P; ++r) {
      taken += m.ranks[r].gaps.size();
      // lane l ends after rank r once it holds its share, leaving a rank for each lane after it
      if (l + 1 < lanes && (taken * lanes >= calls * (l + 1) || P - r - 1 == lanes - l - 1)) lane[++l].lo = r + 1;
    }
    for (unsigned l = 0; l < lanes; ++l) {
      lane[l].hi = l + 1 < lanes ? lane[l + 1].lo : P;
      lane[l].instances.assign(out.nodes.size(), 0);
    }
    auto walk_lanes_from = [this, &lane, lanes, threads](unsigned first) {
      for (unsigned l = first; l < lanes; l += threads) walk(out.top, lane[l]);
    };
    std::vector<std::future<void>> others;
    for (unsigned t = 1; t < threads; ++t) others.push_back(std::async(std::launch::async, walk_lanes_from, t));
    walk_lanes_from(0);
    for (std::future<void>& f : others) f.get();  // (a throwing lane: the futures' destructors wait for the rest)
    for (size_t i = 0; i < out.nodes.size(); ++i) out.nodes[i].instances = lane[0].instances[i];
  }
  static constexpr uint32_t kRanksPerLane = 512;
  // A walk through all ranks in one lane (the phase walk).
  void walk_all() {
    Lane all;
    all.hi = m.world_size;
    walk(out.top, all);
  }
  void walk(const std::vector<uint32_t>& items, Lane& lane) {
    const bool phase_walk = !phase_period.empty();
    for (uint32_t id : items) {
      FoldedNode& node = out.nodes[id];
      if (!phase_walk) ++lane.instances[id];
      if (node.is_loop()) {
        std::vector<uint32_t> claimed;
        for (uint32_t r = lane.lo; r < lane.hi; ++r)
          if (pending[r] < 0) pending[r] = id, claimed.push_back(r);
        int64_t outer_iteration = lane.iteration;
        for (uint64_t k = 0; k < node.count; ++k) {
          lane.iteration = static_cast<int64_t>(k);
          walk(node.body, lane);
          if (k == 0)  // a rank with no call in the first iteration: its later gaps are its own
            for (uint32_t r : claimed)
              if (pending[r] == static_cast<int64_t>(id)) pending[r] = -1;
        }
        lane.iteration = outer_iteration;
        continue;
      }
      const MergedEvent& e = m.events.at(lane.pos);
      if (seq.at(lane.pos) != node.symbol) throw TraceError("compress: internal error: expansion out of step");
      ++lane.pos;
      const int64_t iteration = lane.iteration;
      // e.ranks ascend: this lane's are a contiguous stretch of them
      auto r_begin = std::lower_bound(e.ranks.begin(), e.ranks.end(), lane.lo);
      auto r_end = std::lower_bound(r_begin, e.ranks.end(), lane.hi);
      for (auto rp = r_begin; rp != r_end; ++rp) {
        const uint32_t r = *rp;
        const size_t k = static_cast<size_t>(rp - e.ranks.begin());  // r's index in e.ranks
        size_t c = cursor[r]++;
        size_t target = pending[r] >= 0 ? static_cast<size_t>(pending[r]) : id;
        pending[r] = -1;
        if (phase_walk) {
          auto ph = phase_period.find(id);
          if (target != id || ph == phase_period.end()) continue;
          // the CPU time where the trace has it: steadier than the wall gap on shared cores
          const MergedRank& mr = m.ranks[r];
          double v = static_cast<double>(mr.works.empty() ? mr.gaps[c] : mr.works[c]);
          const int64_t index[2] = {iteration, static_cast<int64_t>(phase_instance[id])};
          for (int by = 0; by < 2; ++by) {
            uint64_t period = ph->second[static_cast<size_t>(by)];
            if (!period || index[by] < 0) continue;
            auto& g = phase_gap[id][static_cast<size_t>(by)];
            if (g.empty()) g.assign(m.world_size, std::vector<Acc>(period));
            g[r][static_cast<size_t>(index[by]) % period].add(v);
            if (node.instances < kProfileMinInstances) continue;
            auto& pc = phase_course[id][static_cast<size_t>(by)];
            if (pc.empty()) pc.assign(m.world_size, std::vector<Acc>(kProfileParts * period));
            const uint64_t part = phase_instance[id] * kProfileParts / node.instances;
            pc[r][part * period + static_cast<size_t>(index[by]) % period].add(v);
          }
          continue;
        }
        gap[target][r].add(static_cast<double>(m.ranks[r].gaps[c]));
        if (!m.ranks[r].works.empty()) work[target][r].add(static_cast<double>(m.ranks[r].works[c]));
        if (!blocked.empty()) blocked[target][r].add(m.ranks[r].blocked.empty() ? 0.0 : static_cast<double>(m.ranks[r].blocked[c]));
        if (!course[target].empty()) {
          const MergedRank& mr = m.ranks[r];
          uint64_t instance = lane.instances[target] - 1;  // counted on entry, above
          size_t part = static_cast<size_t>(instance * kProfileParts / total_instances[target]);
          course[target][r][part].add(static_cast<double>(mr.works.empty() ? mr.gaps[c] : mr.works[c]));
        }
        dur[id][r].add(static_cast<double>(m.ranks[r].durations[c]));
        for (int q = 0; q < kNumRuleParams; ++q) {
          if (e.params[static_cast<size_t>(kRuleParams[q])].kind == ParamKind::kAbsent) continue;
          if (counts[id][q].empty()) throw TraceError("compress: internal error: a parameter its symbol lacks");
          const bool sized = e.params[static_cast<size_t>(bytes_of(q))].kind != ParamKind::kAbsent;
          counts[id][q][r].add(m.value_at(e, kRuleParams[q], k), sized ? m.value_at(e, bytes_of(q), k) : -1, band,
                               iteration);
        }
      }
      if (phase_walk) ++phase_instance[id];  // every rank of the node takes part in each instance
    }
  }
};


// A node's computation profile from its parts (Builder::course): per rank,
// each part's mean as a factor of the rank's mean (1 for a part the rank has
// no value in), kept for every rank where on some rank it matters
// (kProfileMinShare, kProfileMinFactor); empty where on none it does.
std::vector<std::vector<double>> profile_of(const std::vector<std::vector<Acc>>& parts,
                                            const std::vector<double>& rank_ns) {
  std::vector<std::vector<double>> out(parts.size());
  bool matters = false;
  for (size_t r = 0; r < parts.size(); ++r) {
    double sum = 0, moved = 0, most = 0;
    uint64_t n = 0;
    for (const Acc& a : parts[r]) sum += a.sum, n += a.n;
    if (!n || sum <= 0) continue;
    const double mean = sum / static_cast<double>(n);
    out[r].assign(parts[r].size(), 1.0);
    for (size_t k = 0; k < parts[r].size(); ++k) {
      const Acc& a = parts[r][k];
      if (!a.n) continue;
      out[r][k] = a.sum / static_cast<double>(a.n) / mean;
      moved += std::fabs(a.sum - static_cast<double>(a.n) * mean);
      most = std::max(most, std::fabs(out[r][k] - 1));
    }
    matters |= moved >= kProfileMinShare * rank_ns[r] && most >= kProfileMinFactor;
  }
  if (!matters) out.clear();
  return out;
}

// Whether the phases of a node's cycle (its gaps per rank and phase)
// compute alike enough for the node's one mean gap: on every rank, the
// phases lie within the tolerance of each other. Each phase's shortest gap
// stands for it (a rank descheduled once in a phase must not make the phases
// look uneven), by CPU time where the trace measured it. The tolerance: 25 %
// of the node's mean gap or of a phase's computation (the loop's per
// iteration, `phase_ns`: what a difference would shift the waits against),
// at least 50 us.
//
// A phase seen once on a rank (a cycle whose loop runs once: its table is
// the loop's whole pass) has no shortest gap to filter noise with, and noise
// only adds time: one interrupt or page fault of 60 us in one of 61 phases
// of 1 us gave the test program pair_exchange a table of noise from run to
// run. Such a value, where it stands above the rank's median phase by more
// than the tolerance, counts only where something else confirms it: two
// other phases of the rank, or the same phase on another rank, above their
// own rank's median by about as much, within a quarter of the smaller excess
// (work that differs by phase shows alike in more than one place; spikes of
// noise differ from each other, and one pair of spikes alike by chance, 107
// and 137 us in one traced skeleton of pair_exchange, is not enough).
bool phases_alike(const std::vector<std::vector<Acc>>& phases, const FoldedNode& fn, const MergedTrace& m,
                  double phase_ns) {
  const size_t R = phases.size(), K = R ? phases[0].size() : 0;
  std::vector<double> rank_tolerance(R);
  for (size_t r = 0; r < R; ++r) {
    double mean = m.ranks[r].works.empty() ? fn.gap[r].mean : fn.work[r].mean;
    rank_tolerance[r] = std::max(kPhaseGapTolerance * std::max(mean, phase_ns), kPhaseGapFloorNs);
  }
  // per rank, the median of its phases' shortest gaps: the level a spike stands above
  std::vector<double> level(R, 0);
  for (size_t r = 0; r < R; ++r) {
    std::vector<double> v;
    for (const Acc& a : phases[r])
      if (a.n) v.push_back(a.min);
    if (v.empty()) continue;
    std::nth_element(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(v.size() / 2), v.end());
    level[r] = v[v.size() / 2];
  }
  auto confirmed = [&](size_t r, size_t k) {
    const Acc& a = phases[r][k];
    const double excess = a.min - level[r];
    if (a.n > 1 || excess <= rank_tolerance[r]) return true;
    auto alike = [&](size_t q, size_t j) {  // phase j of rank q stands as high, within a quarter of the smaller excess
      const Acc& b = phases[q][j];
      return b.n && std::fabs(b.min - a.min) <= kPhaseGapTolerance * std::min(excess, b.min - level[q]);
    };
    size_t same_rank = 0;
    for (size_t j = 0; j < K; ++j)
      if (j != k && alike(r, j) && ++same_rank == 2) return true;
    for (size_t q = 0; q < R; ++q)
      if (q != r && alike(q, k)) return true;
    return false;
  };
  for (size_t r = 0; r < R; ++r) {
    double lo = 0, hi = 0;
    bool any = false;
    for (size_t k = 0; k < K; ++k) {
      const Acc& a = phases[r][k];
      if (!a.n || !confirmed(r, k)) continue;
      lo = any ? std::min(lo, a.min) : a.min;
      hi = any ? std::max(hi, a.min) : a.min;
      any = true;
    }
    if (any && hi - lo > rank_tolerance[r]) return false;
  }
  return true;
}

// Keeps node fn's computation by phase (FoldedNode::phase_factor): per
// rank, each phase's mean as a factor of the rank's mean over the phases (1
// for a phase the rank has no value in; none for a rank with no computation
// there). `by`: the phases' index, 0 the loop's iteration, 1 the instance.
// Where the node has a course through the run (`course`: the values by part
// and phase), the course is taken again with the phases divided out: a part
// that holds more of the heavy phases than another is no drift.
void keep_phases(FoldedNode& fn, size_t by, const std::vector<std::vector<Acc>>& phases,
                 const std::vector<std::vector<Acc>>& course, const std::vector<double>& rank_ns) {
  const size_t R = phases.size(), K = R ? phases[0].size() : 0;
  fn.phase_period = K;
  fn.phase_by_instance = by == 1;
  fn.phase_factor.assign(R, {});
  for (size_t r = 0; r < R; ++r) {
    double sum = 0;
    uint64_t n = 0;
    for (const Acc& a : phases[r]) sum += a.sum, n += a.n;
    if (!n || sum <= 0) continue;
    const double mean = sum / static_cast<double>(n);
    fn.phase_factor[r].assign(K, 1.0);
    for (size_t k = 0; k < K; ++k)
      if (phases[r][k].n) fn.phase_factor[r][k] = phases[r][k].sum / static_cast<double>(phases[r][k].n) / mean;
  }
  if (course.empty()) return;
  std::vector<std::vector<Acc>> parts(R, std::vector<Acc>(kProfileParts));
  for (size_t r = 0; r < R; ++r)
    for (size_t part = 0; part < kProfileParts; ++part)
      for (size_t k = 0; k < K; ++k) {
        const Acc& a = course[r][part * K + k];
        const double f = fn.phase_factor[r].empty() ? 1.0 : fn.phase_factor[r][k];
        if (!a.n || f <= 0) continue;
        parts[r][part].n += a.n;
        parts[r][part].sum += a.sum / f;
      }
  fn.profile = profile_of(parts, rank_ns);
}

// A loop's computation per iteration, mean over the ranks: its body's gaps
// (thread CPU time where the trace measured it), nested loops counted by
// their iterations (the timing walk's means, so that the first iteration's
// gap, which is the loop's own, is left out). Not its calls' durations: on
// a loaded machine they grow with the waits, and with them the phases'
// tolerance; NPB-like sweeps whose backward stage computes 4 times as long
// as the forward ones lost their phase table in a test run beside another
// test (and their skeleton computed each stage's mean).
double computation_per_iteration_ns(const FoldedProgram& p, const MergedTrace& m, uint32_t loop) {
  std::function<double(uint32_t, size_t)> one = [&](uint32_t id, size_t r) {
    const FoldedNode& n = p.nodes[id];
    const bool by_cpu = !m.ranks[r].works.empty();
    double t = 0;
    for (uint32_t c : n.body) {
      const FoldedNode& cn = p.nodes[c];
      const std::vector<RankStat>& comp = by_cpu ? cn.work : cn.gap;
      t += r < comp.size() ? comp[r].mean : 0;
      if (cn.is_loop()) t += static_cast<double>(cn.count) * one(c, r);
    }
    return t;
  };
  size_t P = p.symbols.world_size;
  double sum = 0;
  for (size_t r = 0; r < P; ++r) sum += one(loop, r);
  return P ? sum / static_cast<double>(P) : 0;
}

// Which merged events each message joins: a send and the receive that takes
// it (FIFO per sender, receiver, communicator and tag, as MPI matches; for a
// wildcard receive the source it matched in the trace, which for MPI_Irecv
// its completion records; MPI_ANY_TAG receives and MPI_PROC_NULL left out).
// The partners of event i: at[offset[i], offset[i + 1]).
struct MessagePartners {
  std::vector<uint64_t> offset;
  std::vector<uint32_t> at;
  // The fold's phase cost: the message ends in [first, first + length) whose
  // other end lies outside it (a loop starting there would be cut with
  // messages crossing its iterations).
  uint64_t crossing(uint64_t first, uint64_t length) const {
    uint64_t crossings = 0;
    for (uint64_t i = first; i < first + length && i + 1 < offset.size(); ++i)
      for (uint64_t k = offset[i]; k < offset[i + 1]; ++k) crossings += at[k] < first || at[k] >= first + length;
    return crossings;
  }
};

// FoldedProgram::crossing_messages of a fold: per top-level loop, the
// message ends in its middle iteration whose partner lies outside it.
uint64_t top_loop_crossings(const Folded& f, const MessagePartners& partners) {
  std::vector<uint64_t> span(f.loops.size(), 0);  // a loop's events, expanded
  std::function<uint64_t(Item)> length = [&](Item it) -> uint64_t {
    if (!is_loop(it)) return 1;
    uint64_t& n = span[loop_index(it)];
    if (n == 0) {
      const Loop& l = f.loops[loop_index(it)];
      for (Item x : l.body) n += length(x);
      n *= l.count;
    }
    return n;
  };
  uint64_t at = 0, crossings = 0;
  for (Item it : f.items) {
    const uint64_t events = length(it);
    if (is_loop(it) && f.loops[loop_index(it)].count > 0) {
      const uint64_t count = f.loops[loop_index(it)].count, body = events / count;
      crossings += partners.crossing(at + count / 2 * body, body);
    }
    at += events;
  }
  return crossings;
}

// The sends (or receives) of one channel not yet paired, oldest first: a vector and the index of its
// oldest, compacted as it drains (a std::deque took over half a kilobyte even empty, per channel and
// side: 150 MB for a halo exchange at 16,384 ranks).
class Waiting {
 public:
  bool empty() const { return head_ == events_.size(); }
  void push(uint32_t event) { events_.push_back(event); }
  uint32_t pop() {
    const uint32_t e = events_[head_++];
    if (empty()) {
      events_.clear();
      head_ = 0;
    } else if (head_ > events_.size() / 2) {
      events_.erase(events_.begin(), events_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
    return e;
  }

 private:
  std::vector<uint32_t> events_;
  size_t head_ = 0;
};

// The channels message_partners keeps per call and rank: a halo's four neighbours.
constexpr size_t kRecentChannels = 4;

// Per (wildcard MPI_Irecv event, rank): the source its completion records.
std::map<std::pair<size_t, uint32_t>, int64_t> wildcard_sources(const MergedTrace& m) {
  std::map<std::pair<size_t, uint32_t>, int64_t> matched;
  for (size_t i = 0; i < m.events.size(); ++i)
    if (m.events[i].find_list(ListField::req_sources))
      for (size_t k = 0; k < m.events[i].ranks.size(); ++k) {
        const std::vector<int64_t>& back = m.list_at(m.events[i], ListField::reqrefs, k);
        const std::vector<int64_t>& source = m.list_at(m.events[i], ListField::req_sources, k);
        for (size_t j = 0; j < back.size() && j < source.size(); ++j)
          if (back[j] >= 0 && static_cast<size_t>(back[j]) <= i && source[j] >= 0)
            matched[{i - static_cast<size_t>(back[j]), m.events[i].ranks[k]}] = source[j];
      }
  return matched;
}

// Pairs the message ends of a merged trace, one end at a time in event
// order: each end meets the oldest unpaired end of the other side on its
// channel (sender, receiver, communicator, tag), or waits for one.
class MessageMatcher {
 public:
  using Channel = std::tuple<int64_t, int64_t, int64_t, int64_t>;  // sender, receiver, comm, tag

  explicit MessageMatcher(const MergedTrace& m) : m_(m), recent_(m.identities.size() * 2 * m.world_size) {}

  // A send (is_send) or receive end of event idx on channel c, made by rank
  // with the call of the given identity.
  void end(const Channel& c, uint32_t idx, bool is_send, size_t identity, uint32_t rank) {
    Queues& q = queues_of(c, recent_[(identity * 2 + is_send) * m_.world_size + rank]);
    Waiting& other = is_send ? q.recvs : q.sends;
    if (other.empty()) {
      (is_send ? q.sends : q.recvs).push(idx);
      return;
    }
    pairs_.emplace_back(other.pop(), idx);
  }

  // The pairs made, as MessagePartners of the trace's events.
  MessagePartners partners() const {
    MessagePartners out;
    out.offset.assign(m_.events.size() + 1, 0);
    for (const auto& [a, b] : pairs_) ++out.offset[a + 1], ++out.offset[b + 1];
    for (size_t i = 0; i < m_.events.size(); ++i) out.offset[i + 1] += out.offset[i];
    out.at.resize(out.offset.back());
    std::vector<uint64_t> fill(out.offset.begin(), out.offset.end() - 1);
    for (const auto& [a, b] : pairs_) out.at[fill[a]++] = b, out.at[fill[b]++] = a;
    return out;
  }

 private:
  struct ChannelHash {
    size_t operator()(const Channel& c) const {
      uint64_t h = 0;
      for (int64_t v : {std::get<0>(c), std::get<1>(c), std::get<2>(c), std::get<3>(c)})
        h = (h ^ static_cast<uint64_t>(v)) * 0x100000001b3ull;
      return static_cast<size_t>(h);
    }
  };
  struct Queues {
    Waiting sends, recvs;  // not yet paired
  };
  // The channels each (identity, side, rank) used last: a call's instances
  // mostly keep theirs, or go round a few (a halo exchange's neighbours from
  // one call site), and the lookup is most of the time here (NPB LU; the
  // halo at 16,384 ranks: a third of the fold with one channel kept).
  struct Recent {
    std::array<Channel, kRecentChannels> channel;
    std::array<int64_t, kRecentChannels> queues;  // index in queues, -1: none yet
    uint32_t next = 0;                            // the slot replaced next
    Recent() { queues.fill(-1); }
  };

  Queues& queues_of(const Channel& c, Recent& l) {
    for (size_t k = 0; k < kRecentChannels; ++k)
      if (l.queues[k] >= 0 && l.channel[k] == c) return queues_[static_cast<size_t>(l.queues[k])];
    auto it = channel_index_.find(c);  // find first: emplace makes a node even for a channel it has
    if (it == channel_index_.end()) {
      it = channel_index_.emplace(c, static_cast<uint32_t>(queues_.size())).first;
      queues_.emplace_back();
    }
    l.channel[l.next] = c;
    l.queues[l.next] = it->second;
    l.next = (l.next + 1) % kRecentChannels;
    return queues_[it->second];
  }

  const MergedTrace& m_;
  std::unordered_map<Channel, uint32_t, ChannelHash> channel_index_;  // -> index in queues_
  std::vector<Queues> queues_;
  std::vector<std::pair<uint32_t, uint32_t>> pairs_;
  std::vector<Recent> recent_;
};

MessagePartners message_partners(const MergedTrace& m) {
  const std::map<std::pair<size_t, uint32_t>, int64_t> matched = wildcard_sources(m);
  MessageMatcher matcher(m);
  for (size_t i = 0; i < m.events.size(); ++i) {
    const MergedEvent& e = m.events[i];
    const Identity& id = m.identities[e.identity];
    const MessageRole role = message_role(id.func);
    if (role == MessageRole::kNone) continue;
    const uint32_t idx = static_cast<uint32_t>(i);
    for (size_t k = 0; k < e.ranks.size(); ++k) {
      const uint32_t r = e.ranks[k];
      if (role == MessageRole::kSend || role == MessageRole::kSendRecv) {
        int64_t to = m.value_at(e, Param::peer, k), tag = m.value_at(e, Param::tag, k);
        if (to >= 0) matcher.end({r, to, id.comm, tag}, idx, true, e.identity, r);
      }
      if (role == MessageRole::kRecv || role == MessageRole::kSendRecv) {
        const Param peer = role == MessageRole::kRecv ? Param::peer : Param::peer2;
        int64_t from = m.value_at(e, peer, k),
                tag = m.value_at(e, role == MessageRole::kRecv ? Param::tag : Param::tag2, k);
        if (from < 0 && id.peer_class == PeerClass::kAnySource) {
          auto it = matched.find({i, r});
          if (it != matched.end()) from = it->second;
        }
        if (from >= 0 && tag >= 0) matcher.end({from, r, id.comm, tag}, idx, false, e.identity, r);
      }
    }
  }
  return matcher.partners();
}

// The symbol string of a merged trace: each event (with its request lists'
// backs attached) made a symbol, the given coarse symbols refined. Fills
// out.symbols with each symbol's first event.
struct Symbolized {
  std::vector<int64_t> seq;        // per merged event: its symbol
  std::vector<int32_t> str;        // the same, as the fold's string
  std::vector<int64_t> coarse_of;  // per symbol: its coarse symbol
};

Symbolized symbolize(const MergedTrace& m, const std::vector<ListDesc>& backs, const CompressOptions& opt,
                     const std::set<int64_t>& refined, FoldedProgram& out) {
  SymbolTable symbols(m, band_of(opt), opt.join_callsites, refined);
  Symbolized s;
  s.seq.reserve(m.events.size());
  s.str.reserve(m.events.size());
  MergedEvent with_backs;
  for (size_t idx = 0; idx < m.events.size(); ++idx) {
    const MergedEvent* e = &m.events[idx];
    if (!backs[idx].lists.empty()) {
      with_backs = *e;
      with_backs.lists.push_back(backs[idx]);
      e = &with_backs;
    }
    bool fresh = false;
    int64_t coarse = 0;
    int64_t id = symbols.symbol(*e, fresh, coarse);
    if (fresh) {
      out.symbols.events.push_back(*e);
      s.coarse_of.push_back(coarse);
    }
    s.seq.push_back(id);
    s.str.push_back(static_cast<int32_t>(id));
  }
  if (opt.progress)
    opt.progress(std::to_string(m.events.size()) + " merged events, " + std::to_string(symbols.size()) + " symbols");
  return s;
}

// Each rank's time over the whole trace: its gaps and its calls.
std::vector<double> rank_times_ns(const MergedTrace& m) {
  std::vector<double> rank_ns(m.world_size, 0);
  for (size_t r = 0; r < m.world_size; ++r)
    for (size_t k = 0; k < m.ranks[r].gaps.size(); ++k)
      rank_ns[r] += static_cast<double>(m.ranks[r].gaps[k]) + static_cast<double>(m.ranks[r].durations[k]);
  return rank_ns;
}

// Node i's timing from the builder's walk: per rank its gap, work and
// blocked time (where the trace has them), course, and a call's duration.
void put_timing(FoldedNode& n, size_t i, const Builder& b, size_t P, bool any_work,
                const std::vector<double>& rank_ns) {
  n.gap.resize(P);
  for (size_t r = 0; r < P; ++r) n.gap[r] = b.gap[i][r].stat();
  if (any_work) {
    n.work.resize(P);
    for (size_t r = 0; r < P; ++r) n.work[r] = b.work[i][r].stat();
  }
  if (!b.blocked.empty()) {
    n.blocked.resize(P);
    for (size_t r = 0; r < P; ++r) n.blocked[r] = b.blocked[i][r].stat();
  }
  if (!b.course[i].empty()) n.profile = profile_of(b.course[i], rank_ns);
  if (n.is_loop()) return;
  n.dur.resize(P);
  for (size_t r = 0; r < P; ++r) n.dur[r] = b.dur[i][r].stat();
}

// How every rank's values of one parameter behave over a node's instances.
// A rule is needed where the value changes between the node's instances,
// or where it stays but differs from the symbol's (the first instance of
// another node of the same symbol: e.g. two calls with tags 0 and 1).
// The rule, in order of preference: every rank's value linear (a + b*i;
// constant included; peers only constant); else a cycle over the innermost
// loop's iterations that every rank's values keep (exact); else a cycle
// over the node's instances (NPB MG's comm3: one Send call site per axis,
// its count the grid level's, 46 instances per V-cycle); else, counts and
// tags, every rank's linear in the innermost loop's iteration k (a + b*k,
// in every run of the loop: a pipeline's tag that is its row, PRK's
// Synch_p2p, 1,999 rows a sweep, 200 sweeps); else, for counts,
// every rank's alike() to its first (within the band, or small messages;
// its mean). Otherwise (offender()) the call
// is refined (tags and peers exact, counts banded) and folded again.
struct ParamShape {
  bool varies = false, linear = true, banded = false;
  bool k_linear = false;  // every rank's a + b*k over the innermost loop's iteration (no cycle holds)
  uint64_t period = 0;  // of the cycle, if by >= 0
  int by = -1;          // the cycle's index: 0 the loop's iteration, 1 the instance; -1 no cycle
  bool cyclic() const { return by >= 0; }
  bool offender() const { return !linear && !cyclic() && !k_linear && !banded; }
};

ParamShape shape_of(const std::vector<CountAcc>& accs, Param pm, const MergedEvent& rep, const MergedTrace& m) {
  ParamShape s;
  s.banded = count_like(pm);
  bool k_linear = !peer_like(pm);
  uint64_t periods_k = ~0ull, periods_i = ~0ull;  // the cycle lengths every rank's values keep
  for (size_t r = 0; r < accs.size(); ++r) {
    const CountAcc& c = accs[r];
    if (!c.n) continue;
    s.varies |= c.varies || c.first != m.value(rep, pm, static_cast<uint32_t>(r));
    s.linear &= !c.varies || (c.linear && !peer_like(pm));
    s.banded &= !c.varies || c.linear || c.in_band;
    if (!c.in_loop) periods_k = 0;
    else if (c.varies) periods_k &= c.by_k.periods;
    if (c.varies) periods_i &= c.by_instance.periods;
    k_linear &= c.in_loop && c.k_linear;
  }
  auto smallest = [](uint64_t periods) { return periods ? static_cast<uint64_t>(__builtin_ctzll(periods)) + 1 : 0; };
  if (!s.linear && smallest(periods_k)) s.period = smallest(periods_k), s.by = 0;
  else if (!s.linear && smallest(periods_i)) s.period = smallest(periods_i), s.by = 1;
  else if (!s.linear) s.k_linear = k_linear;
  return s;
}

// The rule of a parameter of that shape (not an offender), per rank.
CountRule rule_of(const std::vector<CountAcc>& accs, Param pm, const ParamShape& s, size_t P) {
  CountRule rule;
  rule.param = pm;
  rule.kind.assign(P, RuleKind::kNone);
  rule.a.assign(P, 0);
  rule.b.assign(P, 0);
  rule.min.assign(P, 0);
  rule.max.assign(P, 0);
  if (s.cyclic()) {
    rule.period = s.period;
    rule.cycle.assign(P * s.period, 0);
  }
  for (size_t r = 0; r < P; ++r) {
    const CountAcc& c = accs[r];
    if (!c.n) continue;
    rule.min[r] = c.min;
    rule.max[r] = c.max;
    if (s.cyclic()) {
      rule.kind[r] = s.by == 0 ? RuleKind::kCycle : RuleKind::kInstanceCycle;
      const Periodic& pc = s.by == 0 ? c.by_k : c.by_instance;
      for (uint64_t k = 0; k < s.period; ++k) rule.cycle[r * s.period + k] = c.varies ? pc.seen.at(k) : c.first;
      rule.a[r] = c.sum / static_cast<double>(c.n);
      continue;
    }
    if (s.k_linear) {
      rule.kind[r] = RuleKind::kLoopLinear;
      rule.a[r] = static_cast<double>(c.k_base());
      rule.b[r] = static_cast<double>(c.k_step);
      continue;
    }
    rule.kind[r] = c.linear ? RuleKind::kLinear : RuleKind::kMean;
    rule.a[r] = c.linear ? static_cast<double>(c.first) : c.sum / static_cast<double>(c.n);
    rule.b[r] = c.linear ? static_cast<double>(c.step) : 0;
  }
  return rule;
}

// Node i's count rules (a call). Adds to offenders the refinements of its
// parameters that follow no rule, and to cycles the periods its cycle rules keep.
void put_rules(FoldedNode& n, size_t i, const Builder& b, const MergedTrace& m, const FoldedProgram& out,
               int64_t coarse, std::set<int64_t>& offenders, std::map<uint32_t, Builder::Periods>& cycles) {
  const MergedEvent& rep = out.symbols.events.at(static_cast<size_t>(n.symbol));
  for (int q = 0; q < kNumRuleParams; ++q) {
    if (b.counts[i][q].empty()) continue;  // the symbol has no such parameter: no rank has a value
    const Param pm = kRuleParams[q];
    const ParamShape s = shape_of(b.counts[i][q], pm, rep, m);
    if (s.offender()) offenders.insert(refinement(coarse, q));
    if (!s.varies) continue;
    if (s.cyclic()) {
      uint64_t& held = cycles[static_cast<uint32_t>(i)][static_cast<size_t>(s.by)];
      held = std::max(held, s.period);
    }
    n.rules.push_back(rule_of(b.counts[i][q], pm, s, m.world_size));
  }
}

// A cycle keeps the values exact, but the node's computation is one mean
// over all its instances. Where the computation before it differs by phase
// (a pipeline whose stages work on cells of different sizes; calls from
// different call sites; NPB MG's levels), the mean would even out the
// waits between the ranks: such nodes keep their computation by phase
// (keep_phases). Compared by CPU time where the trace measured it (ranks
// sharing cores). Which nodes fold does not depend on it: the timing, and
// its noise, decides only whether a node keeps a table.
void keep_cycle_phases(const MergedTrace& m, const std::vector<int64_t>& seq, const Folded& folded,
                       const CompressOptions& opt, const std::map<uint32_t, Builder::Periods>& cycles,
                       const std::vector<double>& rank_ns, FoldedProgram& out) {
  const size_t N = out.nodes.size();
  // The calls beside a cycled one in its loop's body fold with it, so
  // their computation is checked by the same phases (NPB BT's sweeps
  // compute before their Waits).
  std::vector<int64_t> parent(N, -1);
  for (size_t i = 0; i < N; ++i)
    for (uint32_t c : out.nodes[i].body) parent[c] = static_cast<int64_t>(i);
  std::map<uint32_t, Builder::Periods> checked;
  std::map<uint32_t, double> phase_ns;  // checked node -> its loop's computation per iteration (mean over ranks)
  std::map<int64_t, double> iteration_of;  // loop -> its computation per iteration, once per loop
  for (const auto& [node, periods] : cycles) {
    std::vector<uint32_t> beside{node};
    if (parent[node] >= 0)
      for (uint32_t c : out.nodes[static_cast<size_t>(parent[node])].body)
        if (c != node && !out.nodes[c].is_loop()) beside.push_back(c);
    double iteration = 0;
    if (parent[node] >= 0) {
      auto [it, fresh] = iteration_of.emplace(parent[node], 0.0);
      if (fresh) it->second = computation_per_iteration_ns(out, m, static_cast<uint32_t>(parent[node]));
      iteration = it->second;
    }
    for (uint32_t c : beside)
      for (size_t by = 0; by < 2; ++by) {
        phase_ns[c] = std::max(phase_ns[c], iteration);
        if (periods[by]) checked[c][by] = std::max(checked[c][by], periods[by]);
      }
  }
  Builder pb(m, seq, out, folded, band_of(opt));
  pb.phase_period = checked;
  pb.phase_instance.assign(N, 0);
  pb.walk_all();
  for (const auto& [node, by_phases] : pb.phase_gap)
    for (size_t by = 0; by < 2; ++by) {  // one table per node: by the loop's iteration before by the instance
      if (by_phases[by].empty() || phases_alike(by_phases[by], out.nodes[node], m, phase_ns[node])) continue;
      auto course = pb.phase_course.find(node);
      keep_phases(out.nodes[node], by, by_phases[by],
                  course == pb.phase_course.end() ? std::vector<std::vector<Acc>>{} : course->second[by], rank_ns);
      break;
    }
}

// One attempt: symbols (with the given symbols refined), fold, tree, timing.
// Returns the refinements (coarse symbol, parameter) of nodes whose counts
// follow no rule (linear, a cycle, the band), or whose tags or peers follow
// no exact one (empty: the program is accepted).
std::set<int64_t> attempt(const MergedTrace& m, const std::vector<ListDesc>& backs,
                          const std::shared_future<MessagePartners>& partners_ready, unsigned threads,
                          const CompressOptions& opt, const std::set<int64_t>& refined, FoldedProgram& out) {
  out = FoldedProgram();
  out.source = m.source;
  out.merged_events = m.events.size();
  out.callsites_joined = opt.join_callsites;
  out.symbols = m.tables();
  // 1. merged events -> symbols
  const Symbolized s = symbolize(m, backs, opt, refined, out);
  // 2. fold, each loop starting where the fewest messages cross its iterations
  const MessagePartners& partners = partners_ready.get();
  Folded folded = fold(s.str, {}, [&](uint64_t first, uint64_t length) { return partners.crossing(first, length); });
  // 3. the loop tree (children before parents) and 4. the timing walk
  Builder b(m, s.seq, out, folded, band_of(opt));
  out.top = b.build(folded.items);
  out.crossing_messages = top_loop_crossings(folded, partners);
  b.size_accumulators();
  bool any_work = false;
  for (const MergedRank& r : m.ranks) any_work |= !r.works.empty();
  b.timing_walk(threads);
  const std::vector<double> rank_ns = rank_times_ns(m);
  std::set<int64_t> offenders;
  std::map<uint32_t, Builder::Periods> cycles;  // node -> the periods of its cycle rules (by k, by instance)
  for (size_t i = 0; i < out.nodes.size(); ++i) {
    FoldedNode& n = out.nodes[i];
    put_timing(n, i, b, m.world_size, any_work, rank_ns);
    if (n.is_loop()) continue;
    put_rules(n, i, b, m, out, s.coarse_of[static_cast<size_t>(n.symbol)], offenders, cycles);
  }
  if (!cycles.empty()) keep_cycle_phases(m, s.seq, folded, opt, cycles, rank_ns, out);
  return offenders;
}

// The threads a fold uses (CompressOptions::threads): auto, one per core
// (at most kMaxAutoThreads) for traces of at least kThreadsMinCalls calls.
constexpr unsigned kMaxAutoThreads = 4;
constexpr uint64_t kThreadsMinCalls = 1 << 16;
unsigned threads_for(const MergedTrace& m, const CompressOptions& opt) {
  if (opt.threads > 0) return opt.threads;
  uint64_t calls = 0;
  for (const MergedRank& r : m.ranks) calls += r.gaps.size();
  if (calls < kThreadsMinCalls) return 1;
  return std::max(1u, std::min(kMaxAutoThreads, std::thread::hardware_concurrency()));
}

}  // namespace

namespace {

FoldedProgram compress_stream(const MergedTrace& m, const CompressOptions& opt) {
  // Counts and tags are left out of the symbols first; a call whose counts
  // or tags then follow no rule has its counts banded and its tags exact, and
  // the fold is made again. The set of refined calls only grows, and with
  // every call refined each node's counts stay within the band of its first
  // value and its tags are constant: this ends.
  std::set<int64_t> refined;
  FoldedProgram out;
  const unsigned threads = threads_for(m, opt);
  // the message partners (for the fold) are found beside the first symbols, on a thread of their own
  std::shared_future<MessagePartners> partners =
      std::async(threads > 1 ? std::launch::async : std::launch::deferred, message_partners, std::cref(m)).share();
  std::vector<ListDesc> backs = request_backs(m);
  for (int round = 0;; ++round) {
    std::set<int64_t> offenders = attempt(m, backs, partners, threads, opt, refined, out);
    size_t before = refined.size();
    // Counts first: banding a call's counts splits its symbol, and its peers and tags may then follow a
    // rule in each part (NPB CG with call sites joined: its count-1 and count-1750 Irecvs shared a
    // symbol, whose peers followed no cycle; keyed exactly with the counts, the row reductions' two
    // steps no longer folded into one loop).
    std::set<int64_t> counts_first;
    for (int64_t o : offenders)
      if (count_like(kRuleParams[o % kNumRuleParams]) && !refined.count(o)) counts_first.insert(o);
    if (!counts_first.empty()) offenders = std::move(counts_first);
    refined.insert(offenders.begin(), offenders.end());
    if (offenders.empty() || refined.size() == before) break;
    if (opt.progress) opt.progress("round " + std::to_string(round + 1) + ": counts of " +
                                   std::to_string(offenders.size()) + " calls follow no rule; banding them");
  }
  return out;
}

}  // namespace

// Each thread's stream is folded on its own (MPI_THREAD_MULTIPLE traces).
FoldedProgram compress(const MergedTrace& m, const CompressOptions& opt) {
  FoldedProgram out = compress_stream(m, opt);
  for (const MergedTrace& t : m.threads) {
    if (opt.progress) opt.progress("folding thread " + std::to_string(t.thread) + "'s calls");
    FoldedProgram folded = compress_stream(t, opt);
    folded.thread = t.thread;
    folded.fork_after = t.fork_after;
    folded.join_before = t.join_before;
    out.threads.push_back(std::move(folded));
  }
  return out;
}

std::vector<std::string> verify(const FoldedProgram& p, const MergedTrace& m, double tolerance, size_t limit) {
  std::vector<std::string> out;
  auto report = [&](const std::string& s) {
    if (out.size() < limit) out.push_back(s);
  };
  std::vector<int64_t> seq = p.expand();
  if (seq.size() != m.events.size()) {
    report("the program expands to " + std::to_string(seq.size()) + " calls, the merged trace has " +
           std::to_string(m.events.size()));
    return out;
  }
  for (size_t i = 0; i < seq.size(); ++i) {
    const MergedEvent& want = m.events[i];
    const MergedEvent& got = p.symbols.events.at(static_cast<size_t>(seq[i]));
    bool same_call = got.identity == want.identity;
    if (!same_call && p.callsites_joined) {  // the same call but its call site
      Identity a = m.identities.at(got.identity), b = m.identities.at(want.identity);
      a.callsite = b.callsite;
      same_call = a == b;
    }
    if (!same_call || got.ranks != want.ranks)
      report("call " + std::to_string(i) + ": the program has another call there");
  }
  for (uint32_t r = 0; r < m.world_size; ++r) {
    double gaps = 0, durs = 0, fgaps = 0, fdurs = 0;
    for (size_t k = 0; k < m.ranks[r].gaps.size(); ++k) {
      gaps += static_cast<double>(m.ranks[r].gaps[k]);
      durs += static_cast<double>(m.ranks[r].durations[k]);
    }
    for (const FoldedNode& n : p.nodes) {
      if (r < n.gap.size()) fgaps += n.gap[r].mean * static_cast<double>(n.gap[r].n);
      if (r < n.dur.size()) fdurs += n.dur[r].mean * static_cast<double>(n.dur[r].n);
    }
    auto off = [&](double want, double got) { return std::fabs(got - want) > tolerance * std::max(1.0, std::fabs(want)); };
    if (off(gaps, fgaps))
      report("rank " + std::to_string(r) + ": computation " + std::to_string(fgaps * 1e-9) + " s instead of " +
             std::to_string(gaps * 1e-9) + " s");
    if (off(durs, fdurs))
      report("rank " + std::to_string(r) + ": communication " + std::to_string(fdurs * 1e-9) + " s instead of " +
             std::to_string(durs * 1e-9) + " s");
  }
  return out;
}

}  // namespace skt::fold

