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

}  // namespace

void normalize(RankData& rank, const std::vector<Identity>& identities, int64_t step_gap_ns) {
  std::vector<RankEvent>& ev = rank.events;
  auto kind = [&](size_t i) { return kind_of(identities[ev[i].identity].func); };
  // The single request a Wait completes (raw id, before ids become refs).
  auto waited = [&](size_t i) -> int64_t {
    if (ev[i].lists < 0) return kNone;
    const auto& refs = rank.lists[static_cast<size_t>(ev[i].lists)][size_t(ListField::reqrefs)];
    return refs.size() == 1 ? refs[0] : kNone;
  };
  struct Unit {
    int cls;            // 0 Irecv, 1 send, 2 other receive, 3 Wait on an Irecv of the step
    uint32_t callsite;  // unique within a step
    size_t at;
  };
  std::vector<Unit> units;
  std::vector<RankEvent> out;
  std::vector<int64_t> gaps, works, blocked;
  std::unordered_map<int64_t, size_t> irecv_at;   // request id -> index of its Irecv in the run
  std::unordered_map<size_t, size_t> wait_for;    // Irecv index -> index of the Wait completing it
  std::unordered_map<uint32_t, size_t> seen;      // call sites of the step so far
  // Whether the computation before each call is real work: decided per pair
  // (call site before, call site) by the median over the rank's trace, so
  // that every iteration of a loop is cut into steps the same way even when
  // the work hovers around step_gap_ns.
  auto computation = [&](size_t q) { return ev[q].work != kNone ? ev[q].work : ev[q].gap; };
  auto pair_key = [&](size_t q) {
    return (static_cast<uint64_t>(identities[ev[q - 1].identity].callsite) << 32) | identities[ev[q].identity].callsite;
  };
  const bool cut_at_work = step_gap_ns > 0;  // 0: off (merge.h)
  std::unordered_map<uint64_t, bool> pair_works;
  if (cut_at_work) {
    std::unordered_map<uint64_t, std::vector<int64_t>> pair_gaps;
    for (size_t q = 1; q < ev.size(); ++q) pair_gaps[pair_key(q)].push_back(computation(q));
    for (auto& [key, v] : pair_gaps) {
      std::nth_element(v.begin(), v.begin() + static_cast<long>(v.size() / 2), v.end());
      pair_works[key] = v[v.size() / 2] > step_gap_ns;
    }
  }
  size_t i = 0;
  while (i < ev.size()) {
    Kind k = kind(i);
    if (k != Kind::kSend && k != Kind::kRecv && k != Kind::kIrecv) {
      ++i;
      continue;
    }
    // The step [i, j): consecutive sends, receives, and Waits on an Irecv of
    // the step, each from a different call site. A call site seen again
    // starts the next step: a step never spans two iterations of a loop,
    // even where a whole loop holds nothing but point-to-point calls.
    irecv_at.clear();
    wait_for.clear();
    seen.clear();
    bool received = false;  // one of the step's receives has completed
    size_t j = i;
    for (; j < ev.size(); ++j) {
      if (seen[identities[ev[j].identity].callsite]++) break;
      if (cut_at_work && j > i && pair_works[pair_key(j)]) break;  // real work before it
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
      if (kj == Kind::kIrecv && ev[j].created_request != kNone) irecv_at[ev[j].created_request] = j;
      if (kj == Kind::kSend || kj == Kind::kIrecv) continue;
      if (kj == Kind::kRecv) {
        received = true;
        continue;
      }
      if (kj == Kind::kWait) {
        auto it = irecv_at.find(waited(j));
        if (it != irecv_at.end() && !wait_for.count(it->second)) {
          wait_for[it->second] = j;
          received = true;
          continue;
        }
      }
      break;
    }
    if (j - i > 1) {
      // Canonical order of a step: the Irecvs, then the sends, then the other
      // receives, then the Waits on the step's Irecvs; inside a class by call
      // site (unique in a step), so the order the calls were made in does not
      // matter. Every receive is posted before any rank blocks, and this stays
      // true when a fold cuts the step at a loop boundary (a step before a
      // loop whose body starts inside the next step): a Wait never comes
      // before the send it needs in every rank's order.
      units.clear();
      for (size_t q = i; q < j; ++q) {
        Kind kq = kind(q);
        // (a step's Waits all complete its own Irecvs: any other Wait ends the step)
        int cls = kq == Kind::kIrecv ? 0 : kq == Kind::kSend ? 1 : kq == Kind::kRecv ? 2 : 3;
        units.push_back({cls, identities[ev[q].identity].callsite, q});
      }
      std::sort(units.begin(), units.end(), [](const Unit& a, const Unit& b) {
        return a.cls != b.cls ? a.cls < b.cls : a.callsite < b.callsite;
      });
      // Steps are cut where each rank computed or received, so a peer's step
      // may be cut elsewhere and not be sorted the same way: messages between
      // two ranks must still match in the order they were made. The canonical
      // order never swaps two sends to one peer, nor two receives from one;
      // such a step stays as made.
      auto channel = [&](size_t q) {  // (comm, peer, direction) of a message call
        const RankEvent& x = ev[q];
        int64_t peer = x.params < rank.params.size() ? rank.params[x.params][size_t(Param::peer)] : kNone;
        return std::make_tuple(identities[x.identity].comm, peer, kind(q) == Kind::kSend);
      };
      bool swaps = false;
      for (size_t a = 0; a < units.size() && !swaps; ++a)
        for (size_t b2 = a + 1; b2 < units.size() && !swaps; ++b2)
          swaps = units[a].at > units[b2].at && units[a].cls < 3 && units[b2].cls < 3 &&
                  channel(units[a].at) == channel(units[b2].at);
      if (swaps) {
        i = j;
        continue;
      }
      out.clear();
      for (const Unit& u : units) out.push_back(ev[u.at]);
      // Computation gaps belong to positions, not to calls.
      gaps.clear();
      for (size_t q = i; q < j; ++q)
        gaps.push_back(ev[q].gap), works.push_back(ev[q].work), blocked.push_back(ev[q].blocked);
      for (size_t q = i; q < j; ++q) {
        ev[q] = out[q - i];
        ev[q].gap = gaps[q - i];
        ev[q].work = works[q - i];
        ev[q].blocked = blocked[q - i];
      }
      works.clear();
      blocked.clear();
    }
    i = j;
  }
}

}  // namespace skt::merge
