// Normalisation of order differences (MISSION.md §2): inside each maximal
// run of point-to-point calls, one canonical order for every rank.
#include <unordered_map>
#include <algorithm>
#include <tuple>

#include "skel/merge.h"
#include "skel/skel_funcs.h"
#include "skel/trace.h"

namespace skt::merge {
namespace {

enum class Kind { kOther, kSend, kRecv, kIrecv, kWait };

Kind kind_of(uint32_t func) {
  if (message_role(func) == MessageRole::kSend) return Kind::kSend;
  switch (func) {
    case kFunc_MPI_Recv: return Kind::kRecv;
    case kFunc_MPI_Irecv: return Kind::kIrecv;
    case kFunc_MPI_Wait: return Kind::kWait;
    default: return Kind::kOther;
  }
}

// One rank's normalisation: its calls, the median test of real work between
// two call sites, and scratch buffers reused from one step to the next.
class Normalizer {
 public:
  Normalizer(RankData& rank, const std::vector<Identity>& identities, int64_t step_gap_ns)
      : rank_(rank), ev_(rank.events), identities_(identities), cut_at_work_(step_gap_ns > 0) {
    if (cut_at_work_) decide_work_pairs(step_gap_ns);
  }

  // Every step of the rank put in canonical order (normalize()).
  void run() {
    size_t i = 0;
    while (i < ev_.size()) {
      Kind k = kind(i);
      if (k != Kind::kSend && k != Kind::kRecv && k != Kind::kIrecv) {
        ++i;
        continue;
      }
      const size_t j = step_end(i);
      if (j - i > 1) sort_step(i, j);
      i = j;
    }
  }

 private:
  struct Unit {
    int cls;            // 0 Irecv, 1 send, 2 other receive, 3 Wait on an Irecv of the step
    uint32_t callsite;  // unique within a step
    size_t at;
  };

  Kind kind(size_t i) const { return kind_of(identities_[ev_[i].identity].func); }
  uint32_t callsite(size_t i) const { return identities_[ev_[i].identity].callsite; }

  // The single request a Wait completes (raw id, before ids become refs).
  int64_t waited(size_t i) const {
    if (ev_[i].lists < 0) return kNone;
    const auto& refs = rank_.lists[static_cast<size_t>(ev_[i].lists)][size_t(ListField::reqrefs)];
    return refs.size() == 1 ? refs[0] : kNone;
  }

  int64_t computation(size_t q) const { return ev_[q].work != kNone ? ev_[q].work : ev_[q].gap; }
  uint64_t pair_key(size_t q) const { return (static_cast<uint64_t>(callsite(q - 1)) << 32) | callsite(q); }

  // Whether the computation before each call is real work: decided per pair
  // (call site before, call site) by the median over the rank's trace, so
  // that every iteration of a loop is cut into steps the same way even when
  // the work hovers around step_gap_ns.
  void decide_work_pairs(int64_t step_gap_ns) {
    std::unordered_map<uint64_t, std::vector<int64_t>> pair_gaps;
    for (size_t q = 1; q < ev_.size(); ++q) pair_gaps[pair_key(q)].push_back(computation(q));
    for (auto& [key, v] : pair_gaps) {
      std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
      pair_works_[key] = v[v.size() / 2] > step_gap_ns;
    }
  }

  // The end j of the step [i, j) starting at the send or receive i:
  // consecutive sends, receives, and Waits on an Irecv of the step, each from
  // a different call site. A call site seen again starts the next step: a
  // step never spans two iterations of a loop, even where a whole loop holds
  // nothing but point-to-point calls.
  size_t step_end(size_t i) {
    irecv_at_.clear();
    wait_for_.clear();
    seen_.clear();
    bool received = false;  // one of the step's receives has completed
    size_t j = i;
    for (; j < ev_.size(); ++j) {
      if (seen_[callsite(j)]++) break;
      if (cut_at_work_ && j > i && pair_works_[pair_key(j)]) break;  // real work before it
      Kind kj = kind(j);
      // A send made after a receive completed could not start before that
      // message arrived (and may carry what it brought): it starts the next
      // step, so no send is moved ahead of a completed receive. NPB CG
      // chains five exchanges, each sending what the previous one received,
      // with a few microseconds between them; sorted as one step (all sends
      // first) they overlapped, and on a 300 us network its skeleton ran
      // 29 % short. A ring's Recv; Send stays a pipeline the same way. An
      // Irecv there starts the next step too: moved into this one, it would
      // make each exchange's calls differ from the last's by where its
      // Irecv went (CG folded its 15 iterations as 7 pairs).
      if ((kj == Kind::kSend || kj == Kind::kIrecv) && received) break;
      if (kj == Kind::kIrecv && ev_[j].created_request != kNone) irecv_at_[ev_[j].created_request] = j;
      if (kj == Kind::kSend || kj == Kind::kIrecv) continue;
      if (kj == Kind::kRecv) {
        received = true;
        continue;
      }
      if (kj == Kind::kWait) {
        auto it = irecv_at_.find(waited(j));
        if (it != irecv_at_.end() && !wait_for_.count(it->second)) {
          wait_for_[it->second] = j;
          received = true;
          continue;
        }
      }
      break;
    }
    return j;
  }

  // Canonical order of a step: the Irecvs, then the sends, then the other
  // receives, then the Waits on the step's Irecvs; inside a class by call
  // site (unique in a step), so the order the calls were made in does not
  // matter. Every receive is posted before any rank blocks, and this stays
  // true when a fold cuts the step at a loop boundary (a step before a
  // loop whose body starts inside the next step): a Wait never comes
  // before the send it needs in every rank's order. Leaves it in units_.
  void canonical_order(size_t i, size_t j) {
    units_.clear();
    for (size_t q = i; q < j; ++q) {
      Kind kq = kind(q);
      // (a step's Waits all complete its own Irecvs: any other Wait ends the step)
      int cls = kq == Kind::kIrecv ? 0 : kq == Kind::kSend ? 1 : kq == Kind::kRecv ? 2 : 3;
      units_.push_back({cls, callsite(q), q});
    }
    std::sort(units_.begin(), units_.end(), [](const Unit& a, const Unit& b) {
      return a.cls != b.cls ? a.cls < b.cls : a.callsite < b.callsite;
    });
  }

  // (comm, peer, direction) of a message call
  std::tuple<int64_t, int64_t, bool> channel(size_t q) const {
    const RankEvent& x = ev_[q];
    int64_t peer = x.params < rank_.params.size() ? rank_.params[x.params][size_t(Param::peer)] : kNone;
    return std::make_tuple(identities_[x.identity].comm, peer, kind(q) == Kind::kSend);
  }

  // Steps are cut where each rank computed or received, so a peer's step
  // may be cut elsewhere and not be sorted the same way: messages between
  // two ranks must still match in the order they were made. Whether the
  // canonical order in units_ swaps two sends to one peer, or two receives
  // from one (such a step stays as made).
  bool swaps_a_channel() const {
    bool swaps = false;
    for (size_t a = 0; a < units_.size() && !swaps; ++a)
      for (size_t b2 = a + 1; b2 < units_.size() && !swaps; ++b2)
        swaps = units_[a].at > units_[b2].at && units_[a].cls < 3 && units_[b2].cls < 3 &&
                channel(units_[a].at) == channel(units_[b2].at);
    return swaps;
  }

  // The step [i, j) put in canonical order, unless that would swap the
  // messages of a channel. Computation gaps belong to positions, not to calls.
  void sort_step(size_t i, size_t j) {
    canonical_order(i, j);
    if (swaps_a_channel()) return;
    out_.clear();
    for (const Unit& u : units_) out_.push_back(ev_[u.at]);
    gaps_.clear();
    for (size_t q = i; q < j; ++q)
      gaps_.push_back(ev_[q].gap), works_.push_back(ev_[q].work), blocked_.push_back(ev_[q].blocked);
    for (size_t q = i; q < j; ++q) {
      ev_[q] = out_[q - i];
      ev_[q].gap = gaps_[q - i];
      ev_[q].work = works_[q - i];
      ev_[q].blocked = blocked_[q - i];
    }
    works_.clear();
    blocked_.clear();
  }

  RankData& rank_;
  std::vector<RankEvent>& ev_;
  const std::vector<Identity>& identities_;
  const bool cut_at_work_;  // step_gap_ns 0: off (merge.h)
  std::unordered_map<uint64_t, bool> pair_works_;
  std::vector<Unit> units_;
  std::vector<RankEvent> out_;
  std::vector<int64_t> gaps_, works_, blocked_;
  std::unordered_map<int64_t, size_t> irecv_at_;  // request id -> index of its Irecv in the run
  std::unordered_map<size_t, size_t> wait_for_;   // Irecv index -> index of the Wait completing it
  std::unordered_map<uint32_t, size_t> seen_;     // call sites of the step so far
};

}  // namespace

void normalize(RankData& rank, const std::vector<Identity>& identities, int64_t step_gap_ns) {
  Normalizer(rank, identities, step_gap_ns).run();
}

}  // namespace skt::merge
