// Completion episodes whose calls depend on timing (docs/merge.md,
// "Completions by polling"): see coalesce_timed_completions() in merge.h.
#include <algorithm>
#include <optional>
#include <unordered_map>
#include <unordered_set>

#include "skel/merge.h"
#include "skel/skel_funcs.h"

namespace skt::merge {
namespace {

// A request the rank has started and not completed yet.
struct Active {
  uint32_t creator_func = 0;  // the call that made it (Irecv, Send_init ...)
  bool any_source = false;    // a receive from MPI_ANY_SOURCE
  size_t made = 0;            // its position among the rank's request-making calls
  size_t batch = 0;           // the episodes before it was made (or started)
};

class Coalescer {
 public:
  Coalescer(RankData& rank, const std::function<uint32_t(const Identity&)>& intern,
            const std::vector<Identity>& identities)
      : rd_(rank), intern_(intern), ids_(identities), spinning_(spinning_sites()) {}

  // In place: the events kept move down over those an episode no longer needs.
  CoalesceCounts run() {
    std::vector<RankEvent>& ev = rd_.events;
    CoalesceCounts counts;
    size_t kept = 0;
    const auto keep = [&](const RankEvent& e) { ev[kept++] = carried_.into(e); };
    for (size_t i = 0; i < ev.size();) {
      if (completion(i) == Completion::kNone) {
        note_call(ev[i]);
        keep(ev[i++]);
        continue;
      }
      size_t end = i;
      while (end < ev.size() && completion(end) != Completion::kNone) ++end;
      const bool coalesce = coalescible(i, end);
      ++episodes_;
      if (coalesce) {
        keep(one_waitall(i, end));
        ++counts.made_one;
        i = end;
        continue;
      }
      std::optional<bool> farm;  // polls_for_farm(), asked once the episode has a call to leave out
      const auto leave_out = [&](size_t k) {
        if (!idle(k)) return false;
        if (!farm) farm = polls_for_farm();
        return !*farm;
      };
      for (; i < end; ++i) {
        if (spins(i)) {
          // a spinning poll's duration is waiting, not computation: carried into the next call kept as
          // time in that call; its gap (the first poll of a spin may follow real work) as computation
          carried_.add(ev[i]);
          ++counts.idle_calls;
        } else if (leave_out(i)) {
          carry(ev[i]);
          ++counts.idle_calls;
        } else {
          keep(ev[i]);
        }
      }
    }
    ev.resize(kept);
    return counts;
  }

 private:
  uint32_t func(const RankEvent& e) const { return ids_[e.identity].func; }
  Completion completion(size_t i) const { return completion_of(func(rd_.events[i])); }
  const std::vector<int64_t>* list(const RankEvent& e, ListField f) const {
    return e.lists < 0 ? nullptr : &rd_.lists[static_cast<size_t>(e.lists)][size_t(f)];
  }

  // Call i completes nothing and does not choose: an MPI_Test or
  // MPI_Testall that found nothing, an MPI_Wait or MPI_Waitall given only
  // MPI_REQUEST_NULL; and a call follows it. How many polls a rank makes is
  // the timing's choice (a particle code polling its receives between
  // batches: thousands per step), and neither kind changes MPI's state, so
  // they are left out and their time added to the next call's gap.
  bool idle(size_t i) const { return completion(i) != Completion::kChoose && completes_nothing(i); }
  bool completes_nothing(size_t i) const {
    const std::vector<int64_t>* refs = list(rd_.events[i], ListField::reqrefs);
    return (!refs || refs->empty()) && i + 1 < rd_.events.size();
  }
  // Call i completes nothing (a poll that found nothing, MPI_Testany and
  // MPI_Testsome too) and the next call follows it within kSpinNs: the rank
  // spins on its polls, computing nothing between them (an active-message
  // layer polling its wildcard receives while its sends drain: Graph500's
  // BFS made 52,750 such MPI_Testany calls on each of 2 ranks). Left out
  // even where a receive from MPI_ANY_SOURCE is active: a farm master that
  // computes between its polls keeps them (the farm finder replays them);
  // one that spins waits, as a blocking call would.
  // Judged per call site (the median gap after its polls that found
  // nothing), not per poll: a spinning loop's gaps are some 100 ns, but one
  // in a few hundred takes microseconds (an interrupt, a page fault).
  bool spins(size_t i) const { return completes_nothing(i) && spinning_.count(rd_.events[i].identity); }
  // The identities whose polls that found nothing are followed by the next
  // call within kSpinNs at the median.
  std::unordered_set<uint32_t> spinning_sites() const {
    std::unordered_map<uint32_t, std::vector<int64_t>> gaps;
    for (size_t i = 0; i < rd_.events.size(); ++i)
      if (completion(i) != Completion::kNone && completes_nothing(i))
        gaps[rd_.events[i].identity].push_back(rd_.events[i + 1].gap);
    std::unordered_set<uint32_t> out;
    for (auto& [identity, g] : gaps) {
      std::nth_element(g.begin(), g.begin() + static_cast<std::ptrdiff_t>(g.size() / 2), g.end());
      if (g[g.size() / 2] < kSpinNs) out.insert(identity);
    }
    return out;
  }
  // A receive from MPI_ANY_SOURCE was active when the episode coalescible()
  // just judged began (still active, or completed by it): a farm master may
  // be polling for its workers' requests, and the farm finder replays those
  // polls. Asked only for episodes with a call to leave out, not per episode.
  bool polls_for_farm() const {
    for (const Done& d : completed_)
      if (d.active.any_source) return true;
    for (const auto* requests : {&active_, &persistent_})
      for (const auto& [id, a] : *requests)
        if (a.any_source) return true;
    return false;
  }

  // The time of calls left out, carried into the next call kept: their gaps
  // and durations as its gap, their gaps' CPU time as its CPU time. Not
  // their durations: where ranks share cores, an MPI that polls gives its
  // core away in them (Open MPI yields), and a failed test's wall time is
  // mostly other ranks' (Quicksilver on 4 Open MPI ranks over 2 cores: its
  // K = 10 skeleton ran 4.9 s for 2.9 s with them counted as computation).
  void carry(const RankEvent& e) {
    carried_.gap += e.gap + e.dur;
    carried_.blocked += e.blocked;
    if (e.work != kNone) carried_.work += e.work;
  }

  // Requests made, started and freed by a call outside an episode.
  void note_call(const RankEvent& e) {
    const uint32_t f = func(e);
    if (e.created_request != kNone) {
      const Active a{f, ids_[e.identity].peer_class == PeerClass::kAnySource, made_++, episodes_};
      if (creates_persistent_request(f)) persistent_[e.created_request] = a;
      else active_[e.created_request] = a;
    }
    const std::vector<int64_t>* refs = list(e, ListField::reqrefs);
    if (!refs) return;
    for (int64_t id : *refs) {
      if (f == kFunc_MPI_Request_free) {
        active_.erase(id);
        persistent_.erase(id);
      } else if (f == kFunc_MPI_Start || f == kFunc_MPI_Startall) {
        auto p = persistent_.find(id);
        if (p == persistent_.end()) continue;
        p->second.batch = episodes_;
        active_[id] = p->second;
      }
    }
  }

  // Episode [i, end): consecutive completions, computation only between
  // them. It becomes one MPI_Waitall where some call's number or outcome
  // depends on timing, it completes something, none of it a receive from
  // MPI_ANY_SOURCE, every request it completes was seen made (or started)
  // and between the same two episodes (one batch), and no request still
  // active afterwards was made by the same function as one it completed;
  // where it chooses (MPI_Waitany ...), only if it completes two requests
  // or more. So a farm master that takes its workers' requests one at a
  // time, or polls its wildcard receive while computing, keeps its calls
  // (the farm finder, generate/src/farm.cpp, replays the polls), while a
  // halo exchange that completes its receives by MPI_Waitany and its sends
  // later is an episode.
  bool coalescible(size_t i, size_t end) {
    bool timed = false, chooses = false;
    completed_.clear();
    for (size_t k = i; k < end; ++k) {
      timed |= completion(k) != Completion::kWait;
      chooses |= completion(k) == Completion::kChoose;
      const std::vector<int64_t>* refs = list(rd_.events[k], ListField::reqrefs);
      const std::vector<int64_t>* sources = list(rd_.events[k], ListField::req_sources);
      if (!refs) continue;
      for (size_t q = 0; q < refs->size(); ++q)
        completed_.push_back({(*refs)[q], sources && q < sources->size() ? (*sources)[q] : -1, Active{}});
    }
    bool known = true;
    std::unordered_set<uint32_t> kinds;
    std::unordered_set<size_t> batches;
    bool wildcard = false;
    for (Done& d : completed_) {
      wildcard |= d.source >= 0;
      auto a = active_.find(d.id);
      if (a == active_.end()) {
        known = false;
        continue;
      }
      d.active = a->second;
      kinds.insert(a->second.creator_func);
      batches.insert(a->second.batch);
      active_.erase(a);
    }
    if (!timed || completed_.empty() || !known || wildcard || batches.size() != 1) return false;
    if (chooses && completed_.size() < 2) return false;
    for (const auto& [id, a] : active_)
      if (kinds.count(a.creator_func)) return false;
    return true;
  }

  // The episode as one MPI_Waitall at its first call's call site: the
  // requests it completed, oldest first (no wildcard receive among them, so
  // no sources); the computation between its calls before it, the time in
  // its calls its duration, so every rank's time is kept.
  RankEvent one_waitall(size_t i, size_t end) {
    std::sort(completed_.begin(), completed_.end(),
              [](const Done& a, const Done& b) { return a.active.made < b.active.made; });
    RankEvent w = rd_.events[i];
    Identity id = ids_[w.identity];
    id.func = kFunc_MPI_Waitall;
    w.identity = intern_(id);
    w.created_request = kNone;
    for (size_t k = i + 1; k < end; ++k) {
      const RankEvent& e = rd_.events[k];
      w.gap += e.gap;
      w.dur += e.dur;
      w.blocked += e.blocked;
      if (w.work != kNone && e.work != kNone) w.work += e.work;
    }
    w.lists = static_cast<int32_t>(rd_.lists.size());
    rd_.lists.emplace_back();
    for (const Done& d : completed_) rd_.lists.back()[size_t(ListField::reqrefs)].push_back(d.id);
    return w;
  }

  struct Done {
    int64_t id = 0, source = -1;  // the source a wildcard receive matched, -1 otherwise
    Active active;
  };
  RankData& rd_;
  const std::function<uint32_t(const Identity&)>& intern_;
  const std::vector<Identity>& ids_;
  std::unordered_map<int64_t, Active> active_, persistent_;
  std::vector<Done> completed_;
  const std::unordered_set<uint32_t> spinning_;  // spinning_sites()
  CarriedTime carried_;
  size_t made_ = 0, episodes_ = 0;
};

}  // namespace

CoalesceCounts coalesce_timed_completions(RankData& rank, const std::vector<Identity>& identities,
                                          const std::function<uint32_t(const Identity&)>& intern) {
  return Coalescer(rank, intern, identities).run();
}

}  // namespace skt::merge
