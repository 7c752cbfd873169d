// The skeleton's plan: cuts, per-rank step orders, request slots.
#include "plan.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <functional>
#include <numeric>
#include <tuple>

#include "safe_order.h"
#include "skel/skel_funcs.h"

namespace skt::gen {
namespace {

// A cut loop keeps at least this many iterations (the first one is not steady).
constexpr uint64_t kMinCutIterations = 2;

const MergedEvent& event_of(const FoldedProgram& p, uint32_t n) {
  return p.symbols.events[static_cast<size_t>(p.nodes[n].symbol)];
}
const Identity& identity_of(const FoldedProgram& p, uint32_t n) {
  return p.symbols.identities[event_of(p, n).identity];
}

bool edge_call(uint32_t f) { return f == kFunc_MPI_Init || f == kFunc_MPI_Init_thread || f == kFunc_MPI_Finalize; }

}  // namespace

// ------------------------------------------------------------------ timing

namespace {

// Rank r's mean wall-clock gap before a node, in ns (its computation, the
// time it waited for a core where ranks share one, and the time it slept).
double gap_wall_ns(const FoldedNode& node, uint32_t r) {
  return r < node.gap.size() && node.gap[r].n > 0 ? std::max(0.0, node.gap[r].mean) : 0;
}

// Top-level node id's time on rank r's clock, which starts where its
// MPI_Init returns: MPI_Init's and MPI_Finalize's own durations and the
// time before MPI_Init are not the program's.
double on_clock(const FoldedProgram& p, const NodeTimes& t, uint32_t id, uint32_t r) {
  const FoldedNode& n = p.nodes[id];
  double ns = t.total[id][r];
  if (n.is_loop() || !edge_call(identity_of(p, id).func)) return ns;
  if (r < n.dur.size()) ns -= n.dur[r].mean * static_cast<double>(n.dur[r].n);
  if (identity_of(p, id).func != kFunc_MPI_Finalize && r < n.gap.size())
    ns -= n.gap[r].mean * static_cast<double>(n.gap[r].n);
  return ns;
}

}  // namespace

double NodeTimes::share(uint32_t node) const {
  double most = 0;
  for (double t : total[node]) most = std::max(most, t);
  return program > 0 ? most / program : 0;
}

double computation_ns(const FoldedProgram& p, const FoldedNode& node, uint32_t r) {
  const bool cpu = r < node.work.size() && node.work[r].n > 0;
  const RankStat* c = cpu ? &node.work[r] : r < node.gap.size() && node.gap[r].n > 0 ? &node.gap[r] : nullptr;
  if (!c || r >= p.symbols.ranks.size()) return 0;
  const MergedRank& mr = p.symbols.ranks[r];
  return std::max(0.0, c->mean - (cpu ? mr.cpu_gap_floor_ns : mr.gap_floor_ns));
}

NodeTimes measure_times(const FoldedProgram& p) {
  const uint32_t P = p.symbols.world_size;
  NodeTimes t;
  t.total.assign(p.nodes.size(), std::vector<double>(P, 0.0));
  // a loop's body nodes come before the loop in p.nodes (built children first)
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const FoldedNode& n = p.nodes[i];
    for (uint32_t r = 0; r < P; ++r) {
      double s = 0;
      if (r < n.gap.size()) s += n.gap[r].mean * static_cast<double>(n.gap[r].n);
      if (r < n.dur.size()) s += n.dur[r].mean * static_cast<double>(n.dur[r].n);
      for (uint32_t c : n.body) s += t.total[c][r];
      t.total[i][r] = s;
    }
  }
  // traced time per rank, without MPI_Init's and MPI_Finalize's own duration
  t.rank_total.assign(P, 0);
  for (uint32_t id : p.top)
    for (uint32_t r = 0; r < P; ++r) t.rank_total[r] += on_clock(p, t, id, r);
  t.program = P ? *std::max_element(t.rank_total.begin(), t.rank_total.end()) : 0;
  return t;
}

// ------------------------------------------------------------------ closed loops

namespace {

struct MessageEnd {
  int64_t peer;
  std::vector<int64_t> tag;  // one tag, or a tag rule's first values
  double share;              // of the node's instances
};

// Rank r's messages at node n: peer (world rank) and tag, each with the
// share of the node's instances that has it. Where the peer and the tag are
// constants or cycles (call sites joined: a node sends to each direction in
// turn), one end per instance of the cycle, with that instance's own peer
// and tag, so that a send and a receive pair whatever order their cycles
// list the directions in (NPB SP's main loop was left whole, joined, when
// the pair of cycles was compared as a whole). Where the tag follows the
// instance (a linear rule), it is its first values instead: a message pairs
// within one iteration only where the send's and the receive's agree. A
// send whose tag runs one round ahead of its receive's (tag i+2 against
// i+3: the message crosses the iterations) would never find its receive
// once the loop is cut.
std::vector<MessageEnd> message_ends(const FoldedProgram& p, uint32_t n, Param peer, Param tag, uint32_t r) {
  auto rule_of = [&](Param pm) -> const CountRule* {
    const CountRule* rule = p.nodes[n].rule(pm);
    return rule && r < rule->kind.size() && rule->kind[r] != RuleKind::kNone ? rule : nullptr;  // nullptr: one value
  };
  const CountRule *peer_rule = rule_of(peer), *tag_rule = rule_of(tag);
  const uint64_t peer_period = peer_rule && peer_rule->is_cycle() ? peer_rule->period : 1;
  std::vector<MessageEnd> out;
  if (!tag_rule || tag_rule->is_cycle()) {
    const uint64_t instances = std::lcm(peer_period, tag_rule ? tag_rule->period : 1);
    if (instances <= 4096) {
      for (uint64_t j = 0; j < instances; ++j)
        out.push_back({value_at(p, n, peer, r, j), {value_at(p, n, tag, r, j)}, 1.0 / static_cast<double>(instances)});
      return out;
    }
  }
  const uint64_t times = tag_rule && tag_rule->is_cycle() ? tag_rule->period : 4;
  std::vector<int64_t> tags;
  for (uint64_t j = 0; j < times; ++j) tags.push_back(value_at(p, n, tag, r, j));
  if (std::all_of(tags.begin(), tags.end(), [&](int64_t t) { return t == tags[0]; })) tags.resize(1);
  for (uint64_t j = 0; j < peer_period; ++j)
    out.push_back({value_at(p, n, peer, r, j), tags, 1.0 / static_cast<double>(peer_period)});
  return out;
}

// The persistent requests of a program (MPI_Send_init, MPI_Recv_init ...)
// that each MPI_Start and each completion names, by the slots they use, and
// per run of the top level whether it leaves them as it found them: the
// same requests started, in the same order. A run that restarts what it
// completed, in the order it completed it (a pool of receives kept
// started, each restarted as soon as it is found done), may be left out
// like any other; in another order, the MPI would match the next run's
// messages to other receives than the trace's, and a completion waiting
// for the traced one would wait for ever. A pool's (RequestSlots::pool)
// completions take whichever is oldest: only how many are started counts.
// It also follows the receives a program cancels (MPI_Irecv, then
// MPI_Cancel of it: LLNL Quicksilver posts a receive per neighbour and
// cancels the one still open when a cycle ends), so that a run that
// receives nothing on them is known as closed.
class PersistentRequests {
 public:
  // A request a rank made: by which node, at which of the node's instances
  // (in the whole program) and which iteration of its innermost loop: its
  // peer and tag there (value_at). A loop of MPI_Send_init, one per
  // neighbour, makes each request with another peer.
  struct Made {
    uint32_t node = 0;
    uint64_t instance = 0, iteration = 0;
  };
  enum class Move { kStart, kComplete, kCancel };
  // What add() reports of each start and completion of a persistent
  // request, and each cancel of a receive, on rank r: the request's maker
  // and the move.
  using Moved = std::function<void(uint32_t r, const Made& made, Move move)>;

  PersistentRequests(const FoldedProgram& p, const RequestSlots& slots) : p_(p), slots_(slots) {
    creator_.assign(slots.ring_base.size(), kNoNode);
    std::vector<uint8_t> receives_only(slots.ring_base.size(), 1);
    for (uint32_t n = 0; n < slots.ring_of_node.size(); ++n) {
      const int32_t ring = slots.ring_of_node[n];
      if (ring < 0) continue;
      const uint32_t f = identity_of(p, n).func;
      if (creates_persistent_request(f)) creator_[static_cast<size_t>(ring)] = n;
      if (call_class(f) != CallClass::kIrecv) receives_only[static_cast<size_t>(ring)] = 0;
    }
    cancelled_.assign(slots.ring_base.size(), 0);
    for (uint32_t n = 0; n < slots.refs.size() && n < p.nodes.size(); ++n) {
      if (p.nodes[n].is_loop() || call_class(identity_of(p, n).func) != CallClass::kCancel) continue;
      for (const std::vector<RequestRef>& refs : slots.refs[n])
        for (const RequestRef& ref : refs)
          if (ref.ring >= 0 && ref.pool == PoolRef::kNo && receives_only[static_cast<size_t>(ref.ring)])
            cancelled_[static_cast<size_t>(ref.ring)] = 1;
    }
    holds_.assign(p.nodes.size(), -1);
    instances_.assign(p.nodes.size(), 0);
  }
  // Whether MPI_Cancel node n cancels only receives this class follows
  // (made by MPI_Irecv, not persistent), on every rank: their messages are
  // counted out where it cancels them, and a run may hold it.
  bool cancels_receives_only(uint32_t n) const {
    if (n >= slots_.refs.size() || slots_.refs[n].empty()) return false;
    for (const std::vector<RequestRef>& refs : slots_.refs[n])
      for (const RequestRef& ref : refs)
        if (ref.ring < 0 || ref.pool != PoolRef::kNo || !cancelled_[static_cast<size_t>(ref.ring)]) return false;
    return true;
  }
  // Top-level node n: its makes, starts and completions in the order the
  // program makes them (a loop's iterations one by one, where it holds
  // any); each start and completion reported to `moved`. Called for every
  // top-level node in order: a node's instances are counted here.
  void add(uint32_t n, const Moved& moved) { add(n, 0, moved); }
  // Whether the run since the last call to next_run() left the started
  // requests as they were, in the same order.
  bool as_found() const { return !changed_ || started_ == at_run_start_; }
  // Whether no pool has a request taken and not started again: a run does
  // not end between a pool's MPI_Testany and its MPI_Start.
  bool pools_restarted() const {
    return std::all_of(started_.pools.begin(), started_.pools.end(),
                       [](const auto& kv) { return kv.second.awaiting_restart == 0; });
  }
  void next_run() {
    if (changed_) at_run_start_ = started_;
    changed_ = false;
  }

 private:
  static constexpr uint32_t kNoNode = UINT32_MAX;
  std::vector<RequestRef> persistent_refs(uint32_t n, uint32_t r) const {
    std::vector<RequestRef> out;
    if (n >= slots_.refs.size() || r >= slots_.refs[n].size()) return out;
    for (const RequestRef& ref : slots_.refs[n][r])
      if (ref.ring >= 0 && creator_[static_cast<size_t>(ref.ring)] != kNoNode) out.push_back(ref);
    return out;
  }
  // A ring that holds persistent requests: every request made into it is
  // followed, so that a reference (k-th latest of the ring) finds its maker.
  bool followed(int32_t ring) const {
    return ring >= 0 && (creator_[static_cast<size_t>(ring)] != kNoNode || cancelled_[static_cast<size_t>(ring)]);
  }
  int32_t ring_of(uint32_t n) const { return n < slots_.ring_of_node.size() ? slots_.ring_of_node[n] : -1; }
  // Whether node n's subtree makes a request into a followed ring, or
  // starts or completes a persistent request.
  bool holds_any(uint32_t n) {
    if (holds_[n] < 0) {
      bool any = false;
      if (p_.nodes[n].is_loop()) {
        for (uint32_t c : p_.nodes[n].body) any = holds_any(c) || any;
      } else {
        const uint32_t f = identity_of(p_, n).func;
        if (creates_request(f)) any = followed(ring_of(n));
        if (call_class(f) == CallClass::kStart || completion_of(f) != Completion::kNone)
          for (uint32_t r = 0; r < p_.symbols.world_size && !any; ++r) any = !persistent_refs(n, r).empty();
        if (call_class(f) == CallClass::kCancel) any = any || cancels_receives_only(n);
      }
      holds_[n] = any ? 1 : 0;
    }
    return holds_[n] == 1;
  }
  // `iteration`: of the innermost loop around n (0 at the top level).
  void add(uint32_t n, uint64_t iteration, const Moved& moved) {
    if (!holds_any(n)) return;
    const FoldedNode& node = p_.nodes[n];
    if (node.is_loop()) {
      for (uint64_t i = 0; i < node.count; ++i)
        for (uint32_t c : node.body) add(c, i, moved);
      return;
    }
    const uint64_t instance = instances_[n]++;
    const uint32_t f = identity_of(p_, n).func;
    if (creates_request(f)) {
      const int32_t ring = ring_of(n);
      const size_t keep = std::max<uint32_t>(1, slots_.ring_size[static_cast<size_t>(ring)]);
      for (uint32_t r : event_of(p_, n).ranks) {
        std::deque<Made>& made = made_[{r, ring}];
        made.push_back({n, instance, iteration});
        if (made.size() > keep) made.pop_front();
      }
      return;
    }
    if (call_class(f) == CallClass::kCancel && cancels_receives_only(n)) {
      for (uint32_t r : event_of(p_, n).ranks)
        if (r < slots_.refs[n].size())
          for (const RequestRef& ref : slots_.refs[n][r]) {
            auto made = made_.find({r, ref.ring});
            if (made != made_.end() && ref.back >= 1 && ref.back <= made->second.size())
              moved(r, made->second[made->second.size() - ref.back], Move::kCancel);
          }
      return;
    }
    const bool start = call_class(f) == CallClass::kStart;
    for (uint32_t r : event_of(p_, n).ranks)
      for (const RequestRef& ref : persistent_refs(n, r)) {
        changed_ = true;
        moved(r, maker(r, ref), start ? Move::kStart : Move::kComplete);
        if (ref.pool != PoolRef::kNo) {  // which request does not matter: how many are started
          Pool& pool = started_.pools[{r, ref.ring}];
          if (start) {
            ++pool.started;
            if (pool.awaiting_restart > 0) --pool.awaiting_restart;
          } else if (pool.started > 0) {
            --pool.started;
            ++pool.awaiting_restart;
          }
          continue;
        }
        std::vector<uint32_t>& order = started_.orders[{r, ref.ring}];
        order.erase(std::remove(order.begin(), order.end(), ref.back), order.end());
        if (start) order.push_back(ref.back);
      }
  }
  // The request rank r's reference names: the back-th latest made into its
  // ring. A pool's requests are alike (one tag and communicator, any
  // source); so is one made before what the ring keeps: the ring's
  // persistent maker's first instance.
  Made maker(uint32_t r, const RequestRef& ref) const {
    auto it = made_.find({r, ref.ring});
    if (ref.pool == PoolRef::kNo && it != made_.end() && ref.back >= 1 && ref.back <= it->second.size())
      return it->second[it->second.size() - ref.back];
    return {creator_[static_cast<size_t>(ref.ring)], 0, 0};
  }
  const FoldedProgram& p_;
  const RequestSlots& slots_;
  std::vector<uint32_t> creator_;  // per ring: its persistent creating node, kNoNode for others
  std::vector<uint8_t> cancelled_;  // per ring: of MPI_Irecv alone, some cancelled (followed)
  std::vector<int8_t> holds_;      // per node: holds_any(), -1 not asked yet
  std::vector<uint64_t> instances_;  // per node: its instances add() has seen
  using Key = std::pair<uint32_t, int32_t>;  // rank, ring
  std::map<Key, std::deque<Made>> made_;     // per (rank, followed ring): its latest requests, as many as its slots
  struct Pool {
    uint64_t started = 0;           // started and not taken
    uint64_t awaiting_restart = 0;  // taken and not started again
    // a run leaves a pool as found where as many are started (awaiting_restart is pools_restarted()'s)
    bool operator==(const Pool& o) const { return started == o.started; }
  };
  struct Started {
    std::map<Key, std::vector<uint32_t>> orders;  // per (rank, ring): started and not completed, oldest first (by back)
    std::map<Key, Pool> pools;                    // per (rank, pool ring)
    bool operator==(const Started& o) const { return orders == o.orders && pools == o.pools; }
  };
  Started started_, at_run_start_;
  bool changed_ = false;
};

// Messages counted per iteration of a loop: sent and received per (sender,
// receiver, communicator, tag), and per (receiver, communicator, tag) what
// arrives and what is taken (MPI_ANY_SOURCE receives count for any sender).
class MessageBalance {
 public:
  using Key = std::tuple<int64_t, int64_t, int64_t, std::vector<int64_t>>;  // sender, receiver, comm, tag
  using End = std::tuple<int64_t, int64_t, std::vector<int64_t>>;           // receiver, comm, tag

  // Node id's messages, times over, each instance's ends as message_ends
  // describes them (cycles exact, other peers by their first values).
  void add(const FoldedProgram& p, uint32_t id, double times) {
    add_ends(p, id, times, [&](Param peer, Param tag, uint32_t r) { return message_ends(p, id, peer, tag, r); });
  }

  // Node id's messages, each of its instances 0 .. instances - 1 with its own
  // peer and tag: exact where add() takes a node's table of peers (a farm's
  // master receiving from whichever worker asked) as its first value. For the
  // top level's closed runs, whose nodes run all their instances there.
  // `iterations`: of its innermost loop, per instance of that loop (0: in no loop).
  void add_instances(const FoldedProgram& p, uint32_t id, uint64_t instances, uint64_t iterations) {
    for (uint64_t j = 0; j < instances; ++j) {
      const uint64_t k = iterations > 0 ? j % iterations : j;
      add_ends(p, id, 1.0, [&](Param peer, Param tag, uint32_t r) {
        return std::vector<MessageEnd>{{value_at(p, id, peer, r, j, k), {value_at(p, id, tag, r, j, k)}, 1.0}};
      });
    }
  }

  // The message of a persistent request (MPI_Send_init, MPI_Recv_init ...)
  // rank r started or completed (PersistentRequests::add), with its maker's
  // peer, tag and communicator where it made it, counted where it moves: a
  // send at its MPI_Start, a receive at the completion that finds it done.
  // Counted at MPI_Start, a pool of wildcard receives that a program keeps
  // started (Graph500's active messages: four MPI_Recv_init, each
  // restarted as soon as MPI_Testany finds it done) was never received,
  // and no run of the program after it ended.
  void add_persistent(const FoldedProgram& p, uint32_t r, const PersistentRequests::Made& made, bool start) {
    const Identity& c = identity_of(p, made.node);
    const int64_t peer = value_at(p, made.node, Param::peer, r, made.instance, made.iteration);
    const std::vector<int64_t> tag{value_at(p, made.node, Param::tag, r, made.instance, made.iteration)};
    if (start && call_class(c.func) == CallClass::kSendInit && peer >= 0) {
      add_sent({r, peer, c.comm, tag}, 1);
    } else if (!start && call_class(c.func) == CallClass::kRecvInit) {
      if (tag[0] == kAnyTag) leave_tags_out();
      if (c.peer_class != PeerClass::kAnySource && peer < 0) return;  // MPI_PROC_NULL
      if (c.peer_class != PeerClass::kAnySource) add_received({peer, r, c.comm, tag}, 1);
      add_taken({r, c.comm, tag}, 1);
    }
  }

  // A receive rank r made (MPI_Irecv) and cancelled: counted out, as the
  // MPI matches nothing to it (a cancel that came too late, the message
  // already received, leaves a message sent and not received, and the run
  // open).
  void add_cancelled(const FoldedProgram& p, uint32_t r, const PersistentRequests::Made& made) {
    const int64_t peer = value_at(p, made.node, Param::peer, r, made.instance, made.iteration);
    const int64_t tag = value_at(p, made.node, Param::tag, r, made.instance, made.iteration);
    uncount_receive(identity_of(p, made.node), r, peer, {tag}, 1);
  }
  // Receives of MPI_Irecv node `maker` that rank r cancelled, `times` over,
  // each as message_ends describes the node's (in a loop's iteration).
  void add_cancelled(const FoldedProgram& p, uint32_t maker, uint32_t r, double times) {
    for (const auto& [from, tag, share] : message_ends(p, maker, Param::peer, Param::tag, r))
      uncount_receive(identity_of(p, maker), r, from, tag, times * share);
  }

  // Whether every message received was sent, and what arrives is taken.
  // O(1): each count's change re-checks its own key (a run ends where the
  // balance holds, asked after every top-level node; checked over every
  // key each time, CLAMR's 40,955 top-level nodes with a tag per halo
  // update took 80 % of generate's 9 s).
  bool balanced() const { return short_.empty() && uneven_.empty() && waiting_probes_.empty(); }

 private:
  static constexpr double kEps = 1e-9;
  template <typename Ends>
  void add_ends(const FoldedProgram& p, uint32_t id, double times, Ends ends) {
    const MergedEvent& e = event_of(p, id);
    const Identity& idn = identity_of(p, id);
    const MessageRole role = message_role(idn.func);
    const bool send = role == MessageRole::kSend || role == MessageRole::kSendRecv;
    const bool recv = role == MessageRole::kRecv || role == MessageRole::kSendRecv;
    const bool both = role == MessageRole::kSendRecv;
    const bool probe = call_class(idn.func) == CallClass::kProbe;  // blocking: MPI_Probe, MPI_Mprobe
    for (uint32_t r : e.ranks) {
      if (probe) add_probed({r, idn.comm}, times);
      if (send)
        for (const auto& [to, tag, share] : ends(Param::peer, Param::tag, r))
          if (to >= 0) add_sent({r, to, idn.comm, tag}, times * share);
      if (recv)
        for (const auto& [from, tag, share] : ends(both ? Param::peer2 : Param::peer, both ? Param::tag2 : Param::tag, r)) {
          if (std::find(tag.begin(), tag.end(), kAnyTag) != tag.end()) leave_tags_out();
          if (idn.peer_class != PeerClass::kAnySource && from < 0) continue;  // MPI_PROC_NULL
          if (idn.peer_class != PeerClass::kAnySource) add_received({from, r, idn.comm, tag}, times * share);
          add_taken({r, idn.comm, tag}, times * share);
          auto probed = probed_.find({r, idn.comm});
          if (probed != probed_.end()) {
            probed->second = std::max(0.0, probed->second - times * share);
            recheck_probe(probed->first);
          }
        }
    }
  }

  void uncount_receive(const Identity& c, uint32_t r, int64_t from, const std::vector<int64_t>& tag, double times) {
    if (c.peer_class != PeerClass::kAnySource && from < 0) return;  // MPI_PROC_NULL
    if (c.peer_class != PeerClass::kAnySource) add_received({from, r, c.comm, tag}, -times);
    add_taken({r, c.comm, tag}, -times);
  }

  // With an MPI_ANY_TAG receive the tags are left out, of every count so
  // far and every one after.
  template <class K>
  void untag(K& key) const {
    if (tagless_) std::get<std::tuple_size_v<K> - 1>(key).clear();
  }
  void add_sent(Key k, double v) {
    untag(k);
    sent_[k] += v;
    add_into({std::get<1>(k), std::get<2>(k), std::get<3>(k)}, v);
    recheck_received(k);
  }
  void add_into(End k, double v) {
    untag(k);
    into_[k] += v;
    recheck_end(k);
  }
  void add_received(Key k, double v) {
    untag(k);
    received_[k] += v;
    recheck_received(k);
  }
  void add_taken(End k, double v) {
    untag(k);
    taken_[k] += v;
    recheck_end(k);
  }
  void add_probed(const std::pair<uint32_t, int64_t>& k, double v) {
    probed_[k] += v;
    recheck_probe(k);
  }
  template <class M>
  static double count_of(const M& m, const typename M::key_type& k) {
    auto it = m.find(k);
    return it == m.end() ? 0.0 : it->second;
  }
  // a channel that received more than was sent on it
  void recheck_received(const Key& k) {
    auto it = received_.find(k);
    if (it != received_.end() && count_of(sent_, k) < it->second - kEps) short_.insert(k);
    else short_.erase(k);
  }
  // an end where what arrived and what was taken differ
  void recheck_end(const End& k) {
    if (std::fabs(count_of(into_, k) - count_of(taken_, k)) > kEps) uneven_.insert(k);
    else uneven_.erase(k);
  }
  void recheck_probe(const std::pair<uint32_t, int64_t>& k) {
    auto it = probed_.find(k);
    if (it != probed_.end() && it->second > kEps) waiting_probes_.insert(k);
    else waiting_probes_.erase(k);
  }

  template <class M>
  static void without_tags(M& counts) {
    M out;
    for (const auto& [k, v] : counts) {
      auto key = k;
      std::get<std::tuple_size_v<typename M::key_type> - 1>(key).clear();
      out[key] += v;
    }
    counts.swap(out);
  }
  void leave_tags_out() {
    if (tagless_) return;
    tagless_ = true;
    without_tags(sent_);
    without_tags(received_);
    without_tags(into_);
    without_tags(taken_);
    short_.clear();
    uneven_.clear();
    for (const auto& [k, v] : received_) recheck_received(k);
    for (const auto& [k, v] : into_) recheck_end(k);
    for (const auto& [k, v] : taken_) recheck_end(k);
  }
  std::map<Key, double> sent_, received_;
  std::map<End, double> into_, taken_;
  // Per (receiver, communicator): messages probed by a blocking probe
  // (MPI_Probe, MPI_Mprobe) and not received yet. A run ends only once they
  // are: left out after its probe, the message's send and receive left the
  // probe waiting for ever (tests/apps/ring.c at K = 10, once kinds made
  // twice were time steps). An MPI_Iprobe does not wait: a farm master's
  // polls that found nothing are in its nodes of those that found one.
  std::map<std::pair<uint32_t, int64_t>, double> probed_;
  // the keys that keep the balance from holding
  std::set<Key> short_;
  std::set<End> uneven_;
  std::set<std::pair<uint32_t, int64_t>> waiting_probes_;
  bool tagless_ = false;
};

// The group(s) a collective call (or a call that creates a communicator,
// opens a file or a window: every member must make it) of node n is made
// over, one per participant: its group of the call's communicator, or of
// the new one (MPI_Comm_create_group). Empty for other calls, and where the
// communicator is MPI_COMM_SELF or one the tracer did not see made.
std::vector<const std::vector<int64_t>*> collective_groups(const FoldedProgram& p, uint32_t n) {
  const MergedEvent& e = event_of(p, n);
  const Identity& id = identity_of(p, n);
  const CallClass c = call_class(id.func);
  std::vector<const std::vector<int64_t>*> groups;
  if (c == CallClass::kCollective || c == CallClass::kIcollective || c == CallClass::kCommCreate) {
    if (id.comm < 0 || id.comm == 1) return groups;
    for (uint32_t r : e.ranks) groups.push_back(&p.symbols.comms.at(static_cast<size_t>(id.comm)).members(r));
  } else if (c == CallClass::kCommCreateGroup) {
    for (uint32_t r : e.ranks) {
      const int64_t nc = p.symbols.value(e, Param::new_comm, r);
      if (nc >= 2) groups.push_back(&p.symbols.comms.at(static_cast<size_t>(nc)).members(r));
    }
  }
  return groups;
}

// Whether a collective call's participants (e.ranks) hold every member of
// its groups (collective_groups). Where they do not, the members' calls sit
// in other nodes (merge put one rank's copies of a loop apart from the
// others', or the ranks reach the call from different call sites), and
// cutting or leaving out this node alone would make its ranks call the
// collective fewer times than the rest: the skeleton would hang.
bool members_all_in(const MergedEvent& e, std::vector<const std::vector<int64_t>*> groups) {
  // each distinct group once: every rank of MPI_COMM_WORLD holds the same one
  // (checked once per rank, this was quadratic in the ranks: 54 s of
  // generate at 16,384)
  std::sort(groups.begin(), groups.end());
  groups.erase(std::unique(groups.begin(), groups.end()), groups.end());
  for (const auto* g : groups)
    for (int64_t w : *g)
      if (w < 0 || !std::binary_search(e.ranks.begin(), e.ranks.end(), static_cast<uint32_t>(w))) return false;
  return true;
}

// Collective calls counted per communicator, group and member: a loop's
// body (or a run of the top level) keeps every member in step where each
// member of each group makes as many of them as the others, in whichever
// nodes. PRK's AMR kernel (HIGH_WATER) reaches one MPI_Alltoallv from two
// call sites, ranks 0-2 from one and the refinement's rank from the other:
// two merged events, neither made by every member, which together are;
// its refinement loops were kept whole and the K = 10 skeleton ran 1.05
// times shorter than the application.
class CollectiveCount {
 public:
  void add(const FoldedProgram& p, uint32_t n, double times) {
    const MergedEvent& e = event_of(p, n);
    const std::vector<const std::vector<int64_t>*> groups = collective_groups(p, n);
    if (first_partial_ < 0 && !members_all_in(e, groups)) first_partial_ = n;
    for (size_t q = 0; q < groups.size(); ++q)
      made_[{identity_of(p, n).comm, groups[q]}][e.ranks[q]] += times;
  }
  // Whether every member of every group made as many; else *partial (where
  // given) is the first node not made by all its members.
  bool whole(uint32_t* partial = nullptr) const {
    for (const auto& [key, by_rank] : made_) {
      const std::vector<int64_t>& group = *key.second;
      const double first = by_rank.begin()->second;
      for (int64_t w : group) {
        auto it = w < 0 ? by_rank.end() : by_rank.find(static_cast<uint32_t>(w));
        if (it == by_rank.end() || std::fabs(it->second - first) > 1e-9) {
          if (partial) *partial = static_cast<uint32_t>(std::max<int64_t>(first_partial_, 0));
          return false;
        }
      }
    }
    return true;
  }

 private:
  std::map<std::pair<int64_t, const std::vector<int64_t>*>, std::map<uint32_t, double>> made_;
  int64_t first_partial_ = -1;
};

}  // namespace

namespace {

// A node that makes rank r's requests of `ring`, where each of them is an
// MPI_Irecv of the same messages (communicator, peers and tags) for rank r:
// which of them a cancel names does not change what it counts out
// (tests/apps/cancel.c: a step's first receive and those posted again after
// each message share a request); -1 otherwise.
int64_t receive_maker(const FoldedProgram& p, const RequestSlots& slots, int32_t ring, uint32_t r) {
  auto same_ends = [](const std::vector<MessageEnd>& a, const std::vector<MessageEnd>& b) {
    return std::equal(a.begin(), a.end(), b.begin(), b.end(), [](const MessageEnd& x, const MessageEnd& y) {
      return x.peer == y.peer && x.tag == y.tag && x.share == y.share;
    });
  };
  int64_t maker = -1;
  std::vector<MessageEnd> ends;
  for (uint32_t n = 0; n < slots.ring_of_node.size(); ++n) {
    if (slots.ring_of_node[n] != ring) continue;
    const std::vector<uint32_t>& ranks = event_of(p, n).ranks;
    if (std::find(ranks.begin(), ranks.end(), r) == ranks.end()) continue;
    if (call_class(identity_of(p, n).func) != CallClass::kIrecv) return -1;
    std::vector<MessageEnd> own = message_ends(p, n, Param::peer, Param::tag, r);
    if (maker >= 0 && (identity_of(p, n).comm != identity_of(p, static_cast<uint32_t>(maker)).comm ||
                       identity_of(p, n).peer_class != identity_of(p, static_cast<uint32_t>(maker)).peer_class ||
                       !same_ends(own, ends)))
      return -1;
    if (maker < 0) maker = n, ends = std::move(own);
  }
  return maker;
}

// MPI_Cancel node `id`, `times` over, in a loop's iteration: each receive it
// cancels counted out of `balance`, where receive_maker() knows it.
void count_out_cancelled(const FoldedProgram& p, const RequestSlots& slots, uint32_t id, double times,
                         std::map<std::pair<int32_t, uint32_t>, int64_t>& makers, MessageBalance& balance) {
  if (id >= slots.refs.size()) return;
  for (uint32_t r = 0; r < slots.refs[id].size(); ++r)
    for (const RequestRef& ref : slots.refs[id][r]) {
      if (ref.ring < 0 || ref.pool != PoolRef::kNo) continue;
      auto it = makers.find({ref.ring, r});
      if (it == makers.end())
        it = makers.emplace(std::make_pair(ref.ring, r), receive_maker(p, slots, ref.ring, r)).first;
      if (it->second >= 0) balance.add_cancelled(p, static_cast<uint32_t>(it->second), r, times);
    }
}

}  // namespace

bool closed_items(const FoldedProgram& p, const std::vector<uint32_t>& items, std::string* why,
                  const RequestSlots* slots) {
  MessageBalance balance;
  CollectiveCount collectives;
  std::map<std::pair<int32_t, uint32_t>, int64_t> makers;  // per (ring, rank) a cancel names: receive_maker()
  std::function<void(const std::vector<uint32_t>&, double)> walk = [&](const std::vector<uint32_t>& nodes,
                                                                       double times) {
    for (uint32_t id : nodes) {
      const FoldedNode& n = p.nodes[id];
      if (n.is_loop()) {
        walk(n.body, times * static_cast<double>(n.count));
        continue;
      }
      balance.add(p, id, times);
      collectives.add(p, id, times);
      if (slots && call_class(identity_of(p, id).func) == CallClass::kCancel)
        count_out_cancelled(p, *slots, id, times, makers, balance);
    }
  };
  walk(items, 1.0);
  uint32_t partial = 0;
  if (!collectives.whole(&partial)) {
    if (why)
      *why = std::string("its ") + func_name(identity_of(p, partial).func) + " (n" + std::to_string(partial) +
             ") is not made by every member of its communicator in the loop";
    return false;
  }
  if (!balance.balanced()) {
    if (why) *why = "its messages are not all sent and received inside one iteration";
    return false;
  }
  return true;
}

bool closed(const FoldedProgram& p, uint32_t loop, std::string* why, const RequestSlots* slots) {
  return closed_items(p, p.nodes[loop].body, why, slots);
}

bool only_polls(const FoldedProgram& p, uint32_t loop) {
  for (uint32_t c : p.nodes[loop].body)
    if (p.nodes[c].is_loop() ? !only_polls(p, c) : call_class(identity_of(p, c).func) != CallClass::kIprobe)
      return false;
  return true;
}

// The iterations after which a loop's calls come back to the same values: 1,
// or where a node inside it has a cycle rule, the iterations its period
// spans: an instance cycle of p over a node made m times per iteration,
// p / gcd(p, m); a cycle of p over this loop's own iteration k, p (over an
// inner loop's k: 1, that loop runs whole in each iteration); their least
// common multiple, at most the loop's count. NPB MG folded per call site:
// one comm3 exchange per iteration, its sends' counts the level's, an
// instance cycle over the 23 exchanges of a V-cycle.
// A cycle of counts (or bytes) all within this factor of each other does
// not make its iterations differ enough to need whole periods: the
// molecular dynamics mini-app CoMD (ECP, 2 MPICH ranks, 200 steps) sends its
// atoms' halos with counts that drift by a few per cent from step to
// step, an instance cycle as long as the run, and its time-step loop (90 %
// of the time) was not cut at all: the K = 10 skeleton 2.1x shorter.
constexpr double kAlikeCycle = 1.25;

bool alike_cycle(const CountRule& rule) {
  if (!count_like(rule.param) || rule.cycle.empty()) return false;
  const auto [lo, hi] = std::minmax_element(rule.cycle.begin(), rule.cycle.end());
  return *lo > 0 && static_cast<double>(*hi) <= kAlikeCycle * static_cast<double>(*lo);
}

uint64_t value_period(const FoldedProgram& p, uint32_t loop) {
  const uint64_t count = p.nodes[loop].count;
  uint64_t period = 1;
  std::function<void(const std::vector<uint32_t>&, uint64_t, bool)> visit = [&](const std::vector<uint32_t>& body,
                                                                              uint64_t per_iteration, bool own) {
    for (uint32_t c : body) {
      const FoldedNode& n = p.nodes[c];
      if (n.is_loop()) {  // its nodes run n.count times as often (saturated: only gcd with p <= 64 matters below)
        visit(n.body, per_iteration > (1ull << 40) / std::max<uint64_t>(n.count, 1) ? 1ull << 40 : per_iteration * n.count,
              false);
        continue;
      }
      for (const CountRule& rule : n.rules) {
        if (!rule.is_cycle() || alike_cycle(rule)) continue;
        const uint64_t span = rule.by_instance() ? rule.period / std::gcd(rule.period, per_iteration) : own ? rule.period : 1;
        period = std::min(count, std::lcm(period, span));
      }
    }
  };
  visit(p.nodes[loop].body, 1, true);
  return period;
}

bool probe_found_nothing(const FoldedProgram& p, uint32_t n) {
  const FoldedNode& node = p.nodes[n];
  return !node.is_loop() && identity_of(p, n).func == kFunc_MPI_Iprobe &&
         p.symbols.events[static_cast<size_t>(node.symbol)].params[static_cast<size_t>(Param::peer)].kind ==
             ParamKind::kAbsent;
}

void Plan::index_farms(size_t top_items) {
  farm_of_top.assign(top_items, -1);
  for (size_t k = 0; k < farms.size(); ++k)
    for (size_t i = farms[k].first; i < farms[k].end; ++i) farm_of_top[i] = static_cast<int32_t>(k);
}

void Plan::uncut(uint32_t loop) {
  const int32_t c = cut_of[loop];
  if (c < 0) return;
  cuts.erase(cuts.begin() + c);
  cut_of[loop] = -1;
  for (int32_t& x : cut_of)
    if (x > c) --x;
}

// ------------------------------------------------------------------ cuts

namespace {

class CutChooser {
 public:
  CutChooser(const FoldedProgram& p, const NodeTimes& t, const GenerateOptions& opt, Plan& plan,
             std::set<std::string>& notes)
      : p_(p), t_(t), opt_(opt), plan_(plan), notes_(notes) {}

  // The loops that hold the time (more than two iterations, min_share of the
  // time) are cut, the outermost first, where closed() (their messages and
  // collectives stay inside). A loop whose iterations differ by a value
  // period (value_period) keeps whole periods, at least two, so that the
  // iterations it runs sample every phase (NPB MG at 4 ranks, class S: its
  // V-cycle's 14 exchanges cut to the first 5, the finest levels, predicted
  // 26 % short under SimGrid). A cut loop that keeps more than 1 / K of its
  // iterations (a time-step loop of 4 iterations cut to 2) leaves the rest
  // of K to the loops inside it: they are chosen as the top level's, with
  // K' = K x kept / count where that is at least 2 (miniAMR, 10 time steps
  // in loops of 3-6 between refinements, each of 10 stages: the stages'
  // exchange loops ran whole in the two time steps kept, 2.4x shorter than
  // the run at K = 10).
  void choose(const std::vector<uint32_t>& items) { choose(items, static_cast<double>(opt_.scale)); }

 private:
  void choose(const std::vector<uint32_t>& items, double scale) {
    for (size_t i = 0; i < items.size(); ++i) {
      if (&items == &p_.top && plan_.farm_at(i) >= 0) continue;  // runs as a farm
      const uint32_t id = items[i];
      const FoldedNode& n = p_.nodes[id];
      if (!n.is_loop()) continue;
      const bool candidate = cuttable(id, true);
      // At least two iterations (periods) stay, so that the left-out ones are
      // predicted from a steady one (skel_loop_end); a loop that would keep all
      // stays whole. With period 1 this is max(2, count / K).
      const uint64_t period = candidate ? value_period(p_, id) : 1;
      const uint64_t per_k = static_cast<uint64_t>(static_cast<double>(n.count) / scale);
      const uint64_t keep = period * std::max<uint64_t>(kMinCutIterations, (per_k + period / 2) / period);
      if (candidate && keep < n.count) {
        CutLoop c;
        c.node = id;
        c.count = n.count;
        c.iterations = keep;
        c.period = period;
        c.share = t_.share(id);
        plan_.cut_of[id] = static_cast<int32_t>(plan_.cuts.size());
        plan_.cuts.push_back(c);
        const double rest = scale * static_cast<double>(keep) / static_cast<double>(n.count);
        if (rest >= kMinNestedScale) choose(n.body, rest);
        continue;
      }
      choose(n.body, scale);
    }
  }

  // The least K' the loops inside a cut loop are cut by.
  static constexpr double kMinNestedScale = 2.0;

  bool holds_time(uint32_t id) const {
    const FoldedNode& n = p_.nodes[id];
    return opt_.scale > 1 && n.count > kMinCutIterations && t_.share(id) >= opt_.min_share;
  }
  bool cuttable(uint32_t id, bool say) const {
    if (!holds_time(id)) return false;
    std::string why;
    if (only_polls(p_, id))
      why = "it only polls (MPI_Iprobe): its time is a wait for a message, which cutting it does not shorten";
    else if (closed(p_, id, &why, &plan_.slots)) return true;
    if (say)
      notes_.insert("loop n" + std::to_string(id) + " (" + std::to_string(p_.nodes[id].count) +
                    " iterations) is not cut: " + why);
    return false;
  }
  const FoldedProgram& p_;
  const NodeTimes& t_;
  const GenerateOptions& opt_;
  Plan& plan_;
  std::set<std::string>& notes_;
};

// How many runs from a later call plan_steps tries where a run of
// point-to-point calls cannot be ordered.
constexpr size_t kShorterRuns = 16;

// The runs of point-to-point calls each rank makes in an order of its own
// (safe_order), found in every node list as the emitter walks them.
void plan_steps(const FoldedProgram& p, const std::vector<uint32_t>& items, Plan& plan, std::set<std::string>& notes) {
  const bool top = &items == &p.top;
  auto p2p = [&](size_t i) {
    const uint32_t n = items[i];
    return !p.nodes[n].is_loop() && is_point_to_point(identity_of(p, n).func) && !(top && plan.farm_at(i) >= 0);
  };
  size_t shorter = 0;  // runs tried from a later call, of the run ending at `shorter_end`
  size_t shorter_end = SIZE_MAX;
  for (size_t i = 0; i < items.size();) {
    const uint32_t n = items[i];
    if (top && plan.farm_at(i) >= 0) {
      ++i;
      continue;
    }
    if (p.nodes[n].is_loop()) {
      plan_steps(p, p.nodes[n].body, plan, notes);
      ++i;
      continue;
    }
    size_t j = i;
    while (j < items.size() && p2p(j)) ++j;
    if (j - i < 2) {
      ++i;
      continue;
    }
    std::vector<uint32_t> run(items.begin() + static_cast<long>(i), items.begin() + static_cast<long>(j));
    SafeOrder so = safe_order(p, plan.slots, run);
    if (so.verdict == SafeOrder::kUnproven)
      notes.insert("a communication step could not be given an order proven deadlock-free; it runs as merged");
    if (so.verdict != SafeOrder::kReordered) {
      // a shorter run from the next call may be ordered; but not from every call of a long one (a program
      // of 12,000 unfolded messages took a minute: each try is linear in the run or more)
      if (shorter_end != j) shorter_end = j, shorter = 0;
      i = ++shorter <= kShorterRuns ? i + 1 : j;
      continue;
    }
    plan.steps[run.front()] = {run, so.order};
    i = j;
  }
}

}  // namespace

// ------------------------------------------------------------------ left-out time steps

namespace {

// Calls whose effect outlives the run of top-level nodes they are in (MPI's
// start and end, persistent requests made, freed or cancelled,
// communicators, windows, files, datatypes): a run holding one is always
// kept. An MPI_Start outlives its run only where the run does not leave
// the started requests as it found them, an MPI_Cancel not where it cancels
// MPI_Irecv's receives alone (PersistentRequests).
bool outlives_its_run(const FoldedProgram& p, uint32_t n) {
  const uint32_t f = identity_of(p, n).func;
  switch (call_class(f)) {
    case CallClass::kInit: case CallClass::kFinalize: case CallClass::kAbort: case CallClass::kSendInit:
    case CallClass::kRecvInit: case CallClass::kRequestFree: case CallClass::kCancel:
    case CallClass::kCommCreate:
    case CallClass::kCommCreateGroup: case CallClass::kCommFree:
      return true;
    default:
      break;
  }
  const std::string name = func_name(f);
  return name.rfind("MPI_Win", 0) == 0 || name.rfind("MPI_File", 0) == 0 || name.rfind("MPI_Type", 0) == 0;
}

// The top-level program cut into the shortest closed runs: a run ends
// where everything sent before has been received (per sender, receiver,
// communicator and tag) and no per-rank step order spans the end.
struct TopRun {
  size_t first = 0, end = 0;
  bool may_leave = true;  // holds nothing that outlives it, only collectives all members make
  bool has_work = false;  // a loop or a point-to-point call
  double time = 0;        // traced ns: how much later its last rank ended it than the run before
  size_t written = 0;     // nodes in it, loops and calls, each once: what the skeleton writes of it
  double calls = 0;       // calls made in it, max over ranks
  size_t top_nodes() const { return end - first; }
};

// The shortest closed runs of the top level: a run ends where everything
// sent before has been received (per sender, receiver, communicator and
// tag), every member of each group has made as many collectives as the
// others, and no per-rank step order spans the end. A run's time is its
// share of the program's: how much later (on the ranks' clocks, each from
// its MPI_Init) the last rank ends it than the last one ended the run
// before. Its longest rank's time in it counts, on a rank that came early,
// the wait for one still in the run before: where the ranks do not all
// meet at a run's end (a step that ends in exchanges between neighbours,
// some ranks computing more than others), the runs' longest times added
// up to more than the program (LLNL AMG on 4 ranks: 1.436 s of runs for a
// program of 1.099 s), and a run kept for others stood for that much more.
std::vector<TopRun> shortest_closed_runs(const FoldedProgram& p, const NodeTimes& t, const Plan& plan) {
  const uint32_t P = p.symbols.world_size;
  MessageBalance balance;
  PersistentRequests persistent(p, plan.slots);
  std::vector<TopRun> runs;
  TopRun run;
  CollectiveCount collectives;
  std::vector<double> clock(P, 0), rank_calls(P, 0);
  double ended = 0;  // the last rank's clock at the end of the run before
  std::function<void(uint32_t, double, uint64_t)> add = [&](uint32_t id, double times, uint64_t iterations) {
    const FoldedNode& n = p.nodes[id];
    ++run.written;
    if (n.is_loop()) {
      for (uint32_t c : n.body) add(c, times * static_cast<double>(n.count), n.count);
      return;
    }
    balance.add_instances(p, id, static_cast<uint64_t>(times), iterations);
    for (uint32_t r : event_of(p, id).ranks) rank_calls[r] += times;
    collectives.add(p, id, times);
    run.may_leave = run.may_leave && (!outlives_its_run(p, id) || persistent.cancels_receives_only(id));
    run.has_work |= times > 1 || message_role(identity_of(p, id).func) != MessageRole::kNone;
  };
  size_t step_end = 0;
  for (size_t i = 0; i < p.top.size(); ++i) {
    const uint32_t id = p.top[i];
    auto step = plan.steps.find(id);
    if (step != plan.steps.end()) step_end = std::max(step_end, i + step->second.nodes.size());
    add(id, 1.0, 0);
    persistent.add(id, [&](uint32_t r, const PersistentRequests::Made& made, PersistentRequests::Move move) {
      if (move == PersistentRequests::Move::kCancel)
        balance.add_cancelled(p, r, made);
      else
        balance.add_persistent(p, r, made, move == PersistentRequests::Move::kStart);
    });
    for (uint32_t r = 0; r < P; ++r) clock[r] += on_clock(p, t, id, r);
    const bool in_farm = plan.farm_at(i) >= 0 && plan.farm_at(i + 1) == plan.farm_at(i);  // a farm runs whole
    // a run ends where its messages are received and every member of each group made its collectives
    if (i + 1 < p.top.size() &&
        (i + 1 < step_end || in_farm || !balance.balanced() || !collectives.whole() || !persistent.pools_restarted()))
      continue;
    run.may_leave = run.may_leave && collectives.whole() && persistent.as_found();
    persistent.next_run();
    collectives = CollectiveCount();
    run.end = i + 1;
    const double end = *std::max_element(clock.begin(), clock.end());
    run.time = std::max(0.0, end - ended);
    ended = end;
    run.calls = *std::max_element(rank_calls.begin(), rank_calls.end());
    runs.push_back(run);
    run = TopRun();
    run.first = i + 1;
    std::fill(rank_calls.begin(), rank_calls.end(), 0.0);
  }
  return runs;
}

// The kind of a run: the (function, call site) pairs of its point-to-point
// calls, sorted (of all its calls where it makes none): a time step is known
// by its exchanges; the collectives beside them come and go (a refinement
// every tenth step, a checksum every fifth).
std::vector<std::pair<uint32_t, uint32_t>> call_sites(const FoldedProgram& p, const TopRun& run, bool* p2p_calls = nullptr) {
  std::set<std::pair<uint32_t, uint32_t>> all, p2p;
  std::function<void(uint32_t)> visit = [&](uint32_t n) {
    const FoldedNode& fn = p.nodes[n];
    if (fn.is_loop()) {
      for (uint32_t c : fn.body) visit(c);
      return;
    }
    const Identity& id = identity_of(p, n);
    all.insert({id.func, static_cast<uint32_t>(id.callsite)});
    if (message_role(id.func) != MessageRole::kNone) p2p.insert({id.func, static_cast<uint32_t>(id.callsite)});
  };
  for (size_t i = run.first; i < run.end; ++i) visit(p.top[i]);
  if (p2p_calls) *p2p_calls = !p2p.empty();
  const auto& sites = p2p.empty() ? all : p2p;
  return {sites.begin(), sites.end()};
}

// The top level as time steps: each closed run with a loop or a
// point-to-point call, with the runs of collectives alone after it (a time
// step's reductions: where the ranks wait for each other, their time the
// skew of the step before, which says nothing on its own). Where no such
// step is open, collectives alone make steps of their own, each ending
// before a call site it has made comes again (a program that talks only in
// collectives, each step one call of each: a breadth-first search's
// MPI_Alltoall, MPI_Alltoallv and MPI_Allreduce per level, NPB IS's
// MPI_Allreduce, MPI_Alltoall and MPI_Alltoallv per iteration; their
// counts change every time, so no loop holds them, and nothing was cut).
// A run that cannot be left out ends a step and stays alone.
std::vector<TopRun> closed_top_runs(const FoldedProgram& p, const NodeTimes& t, const Plan& plan) {
  std::vector<TopRun> steps;
  bool open = false;       // the last step takes collectives
  bool gathering = false;  // the last step is of collectives alone, their call sites `gathered`
  std::set<std::pair<uint32_t, uint32_t>> gathered;
  auto extend_last = [&](const TopRun& run) {
    steps.back().end = run.end;
    steps.back().time += run.time;
    steps.back().written += run.written;
    steps.back().calls += run.calls;
  };
  for (TopRun run : shortest_closed_runs(p, t, plan)) {
    if (run.may_leave && !run.has_work && open) {
      extend_last(run);
      continue;
    }
    if (run.may_leave && !run.has_work) {
      const std::vector<std::pair<uint32_t, uint32_t>> sites = call_sites(p, run);
      const bool again = std::any_of(sites.begin(), sites.end(), [&](const auto& s) { return gathered.count(s) > 0; });
      if (gathering && !again) {
        extend_last(run);
        gathered.insert(sites.begin(), sites.end());
        continue;
      }
      gathering = true;
      gathered = {sites.begin(), sites.end()};
      steps.push_back(run);
      continue;
    }
    gathering = false;
    open = run.may_leave && run.has_work;
    run.may_leave = open;
    steps.push_back(run);
  }
  return steps;
}

}  // namespace

std::vector<double> planned_rank_times(const FoldedProgram& p, const NodeTimes& t, const Plan& plan) {
  // Per node, the share of its instances the skeleton runs by the cut loops
  // around it (a loop cut inside a cut loop runs in the iterations of it
  // kept); 0 under a left-out top-level node.
  std::vector<double> kept_by_outer(p.nodes.size(), 1.0);
  std::function<void(uint32_t, double)> through = [&](uint32_t n, double share) {
    kept_by_outer[n] = share;
    const int32_t c = plan.cut_of[n];
    const double inner = c < 0 ? share
                               : share * static_cast<double>(plan.cuts[static_cast<size_t>(c)].iterations) /
                                     static_cast<double>(plan.cuts[static_cast<size_t>(c)].count);
    for (uint32_t b : p.nodes[n].body) through(b, inner);
  };
  for (size_t i = 0; i < p.top.size(); ++i) through(p.top[i], plan.leaves_out(i) ? 0.0 : 1.0);
  std::vector<double> kept(t.rank_total);
  for (const Farm& f : plan.farms) {  // the tasks left out, at the farm's mean time per task
    const double left = 1.0 - static_cast<double>(f.kept.size()) / static_cast<double>(f.task_ns.size());
    for (size_t i = f.first; i < f.end; ++i)
      for (uint32_t r = 0; r < kept.size(); ++r) kept[r] -= t.total[p.top[i]][r] * left;
  }
  // A shortened computation takes (1 - 1/K) of its gap off each rank, and as
  // much off the wait of a rank that came to the call before the slowest
  // (the ranks arrive 1/K as far apart).
  for (const Plan::Shortened& sh : plan.shortened) {
    const FoldedNode& node = p.nodes[sh.node];
    for (uint32_t r = 0; r < kept.size(); ++r) {
      const double gap = gap_wall_ns(node, r);
      const double waited =
          r < node.dur.size() && node.dur[r].n > 0 ? std::min(node.dur[r].mean, sh.longest_ns - gap) : 0;
      kept[r] -= (gap + std::max(0.0, waited)) * (1.0 - 1.0 / plan.shortened_by);
    }
  }
  for (uint32_t r = 0; r < kept.size(); ++r) {
    for (const CutLoop& c : plan.cuts)
      kept[r] -= t.total[c.node][r] * kept_by_outer[c.node] *
                 (1.0 - static_cast<double>(c.iterations) / static_cast<double>(c.count));
    for (size_t i = 0; i < p.top.size(); ++i)
      if (plan.leaves_out(i)) kept[r] -= t.total[p.top[i]][r];
  }
  return kept;
}

namespace {

using Kind = std::vector<std::pair<uint32_t, uint32_t>>;

// The top level's closed runs, each with its kind (none where it may not
// be left out) and how many runs of each kind there are. A kind made only
// once is not a time step (nothing stands for it), kept whole; one made
// twice or more is, its steps grouped by time (keep_by_time). Where farms
// run in the steps, a kind made fewer than K times is not (a farm outside
// the time steps keeps every K-th task instead: leave_out_steps).
struct TopSteps {
  std::vector<TopRun> runs;
  std::vector<Kind> kinds;
  std::map<Kind, size_t> runs_of;
  size_t min_steps = 2;  // of a kind, for it to be time steps

  std::vector<bool> collectives_only;  // per run: no point-to-point call in it (keep_by_time)
  TopSteps(const FoldedProgram& p, const NodeTimes& t, const Plan& plan, size_t min_steps)
      : runs(closed_top_runs(p, t, plan)), min_steps(min_steps) {
    for (const TopRun& run : runs) {
      bool p2p = false;
      kinds.push_back(run.may_leave ? call_sites(p, run, &p2p) : Kind());
      collectives_only.push_back(!p2p);
      ++runs_of[kinds.back()];
    }
  }
  bool time_step(size_t r) const { return runs[r].may_leave && runs_of.at(kinds[r]) >= min_steps; }
  // Whether top-level item i is in a time step.
  bool in_time_step(size_t i) const {
    for (size_t r = 0; r < runs.size(); ++r)
      if (runs[r].first <= i && i < runs[r].end) return time_step(r);
    return false;
  }
};

// of the skeleton's share of the run: the short steps (short_steps)
constexpr double kShortShare = 0.25;
// A step shorter than this, of any kind, is a short step: on ranks that
// share cores one descheduling takes longer.
constexpr double kTooShortToTimeNs = 1e6;
// The short steps kept as a sample: at most this many.
constexpr size_t kShortSamples = 16;
// The steps of a group took on average at most this many times their
// median's time (keep_by_time).
constexpr double kGroupSpread = 2.0;
// The steps of a group made calls at rates (calls per traced second, on the
// busiest rank) within this factor of each other (shapes).
constexpr double kShapeSpread = 2.0;

// The short steps, sorted by calls: shortest first, across kinds, as many
// as add up to `budget`, of the steps of kinds without point-to-point calls
// (a breadth-first search's levels) and the steps with point-to-point calls
// shorter than kTooShortToTimeNs, of any kind, made once too. Their traced
// time says little of their time elsewhere: a step of a few calls that took
// 10 us between cores of one machine takes the network's latency on each
// call between nodes (miniAMR's short steps, 2 ranks, an input refined
// irregularly: 6.3 ms in all where traced, 125 ms under SimGrid on a 50 us
// network); timed one by one, a short step's noise is multiplied by its
// factor (a level of 20 us on ranks that share cores took a millisecond
// where a rank was descheduled); kept, each kind of them would make the
// skeleton long (miniAMR's, 60 steps on 4 ranks: hundreds of light steps
// of some twenty kinds, 0.01 to 0.5 ms each, 600 of the 800 top-level
// nodes its K = 10 skeleton kept). So they are sampled
// (sample_short_steps).
std::vector<size_t> short_steps(const TopSteps& steps, double budget) {
  std::vector<size_t> candidates;
  for (size_t r = 0; r < steps.runs.size(); ++r) {
    const TopRun& run = steps.runs[r];
    if (run.may_leave && run.time > 0 && run.calls > 0 &&
        (steps.collectives_only[r] ? steps.time_step(r) : run.time < kTooShortToTimeNs))
      candidates.push_back(r);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t x, size_t y) { return steps.runs[x].time < steps.runs[y].time; });
  double sum = 0;
  size_t n = 0;
  while (n < candidates.size() && (sum += steps.runs[candidates[n]].time) <= budget) ++n;
  candidates.resize(n < 2 ? 0 : n);  // one alone is no sample of anything
  std::stable_sort(candidates.begin(), candidates.end(),
                   [&](size_t x, size_t y) { return steps.runs[x].calls < steps.runs[y].calls; });
  return candidates;
}

// The short steps (sorted by calls) in kShortSamples strata of consecutive
// ones (fewer, of two or three, where there are fewer than 2 x
// kShortSamples): the middle step of each is kept, the others are left
// out, and the kept ones stand for them all in proportion to their calls
// (each one's factor: the calls of all over those of the kept; one ratio
// for all, of a sample across the strata, varies less than each stratum's
// own: the miniAMR input above, under SimGrid, +9 % with a ratio per
// stratum, +1 % with one).
void sample_short_steps(const TopSteps& steps, const std::vector<size_t>& shorts, Plan& plan,
                        const std::function<void(const TopRun&)>& leave_out) {
  const size_t strata = std::min(kShortSamples, shorts.size() / 2);  // the last one takes the rest
  const size_t stride = strata ? shorts.size() / strata : 0;
  auto stratum = [&](size_t k) { return std::min(k / stride, strata - 1); };
  std::vector<bool> kept(shorts.size(), false);  // the middle of each stratum
  for (size_t st = 0; st < strata; ++st) {
    const size_t first = st * stride, end = st + 1 == strata ? shorts.size() : first + stride;
    kept[first + (end - first) / 2] = true;
  }
  double all = 0, sampled = 0;
  for (size_t k = 0; k < shorts.size(); ++k) {
    all += steps.runs[shorts[k]].calls;
    if (kept[k]) sampled += steps.runs[shorts[k]].calls;
  }
  const size_t first_sample = plan.kept_runs.size();  // stratum s's kept run: first_sample + s
  for (size_t k = 0; k < shorts.size(); ++k)
    if (kept[k])
      plan.kept_runs.push_back({steps.runs[shorts[k]].first, steps.runs[shorts[k]].end, all / sampled, 0,
                                Plan::StandsBy::kCalls, steps.runs[shorts[k]].time * 1e-9, 0});
  for (size_t k = 0; k < shorts.size(); ++k) {
    if (kept[k]) continue;
    leave_out(steps.runs[shorts[k]]);
    plan.kept_runs[first_sample + stratum(k)].left_out += steps.runs[shorts[k]].top_nodes();
  }
}

// A kind's steps (rs) by shape: sorted by their rate of calls, in classes
// within kShapeSpread of their slowest. One step stands for others by their
// traced times, which hold where they ran; elsewhere a step's time is its
// calls' and its computation's, in another proportion: two runs of NPB
// MG's exchanges, of 40 and of 254 calls, took 98 and 102 ms on 16 ranks
// that shared 2 cores, 24 and 31 ms under SimGrid, where the one stood for
// the other, 13 ms short. Of one shape, the ratio of their traced times is
// about that of their calls.
std::vector<std::vector<size_t>> shapes(const TopSteps& steps, std::vector<size_t> rs) {
  auto rate = [&](size_t r) { return steps.runs[r].calls / steps.runs[r].time; };
  std::stable_sort(rs.begin(), rs.end(), [&](size_t x, size_t y) { return rate(x) < rate(y); });
  std::vector<std::vector<size_t>> out;
  for (size_t r : rs) {
    if (out.empty() || rate(r) > kShapeSpread * rate(out.back().front())) out.emplace_back();
    out.back().push_back(r);
  }
  return out;
}

// A group of steps of one kind and shape (group_by_time), sorted by
// traced time, one of which is kept to stand for the others.
struct StepGroup {
  std::vector<size_t> runs;  // indices into TopSteps::runs, by time
  int run_class = 0;
  size_t keep = 0;           // index into runs
};

// What the skeleton writes of a run, but for its numbers (counts, tags,
// peers, roots, communicators' slots, trip counts: a row's) and comments
// (call sites): each call's function, datatypes, op and the ranks making it, each
// loop's bounds. Runs of one form are written once, each a row of a table
// (outline.h).
using RunForm = std::vector<int64_t>;
RunForm form_of(const FoldedProgram& p, const TopRun& run) {
  constexpr int64_t kLoopBegins = -1, kLoopEnds = -2;
  RunForm form;
  std::function<void(uint32_t)> add = [&](uint32_t n) {
    const FoldedNode& node = p.nodes[n];
    if (!node.is_loop()) {
      const MergedEvent& e = event_of(p, n);
      const Identity& id = p.symbols.identities[e.identity];
      uint64_t ranks = 1469598103934665603ull;  // FNV-1a of the ranks
      for (uint32_t r : e.ranks) ranks = (ranks ^ r) * 1099511628211ull;
      form.insert(form.end(), {id.func, id.dtype, id.dtype2, id.op, static_cast<int64_t>(id.peer_class),
                               static_cast<int64_t>(ranks >> 1)});
      return;
    }
    form.push_back(kLoopBegins);
    for (uint32_t c : node.body) add(c);
    form.push_back(kLoopEnds);
  };
  for (size_t i = run.first; i < run.end; ++i) add(p.top[i]);
  return form;
}

// Of a group's steps, those that may stand for it: within kNearMedian of
// the median's time.
constexpr double kNearMedian = 1.25;
std::vector<size_t> near_median(const TopSteps& steps, const StepGroup& g) {
  const double t = steps.runs[g.runs[g.runs.size() / 2]].time;
  std::vector<size_t> near;
  for (size_t k = 0; k < g.runs.size(); ++k) {
    const double tk = steps.runs[g.runs[k]].time;
    if (tk * kNearMedian >= t && tk <= t * kNearMedian) near.push_back(k);
  }
  return near;
}

using FormCandidates = std::vector<std::pair<size_t, const RunForm*>>;  // a group's steps near its median: (k, form)

// Of a group's candidates of one form, the one of fewest nodes
// (TopRun::written: the skeleton's lines; the step's factor makes up the
// time), the median on a tie.
size_t fewest_nodes_of_form(const TopSteps& steps, const StepGroup& g, const FormCandidates& near,
                            const RunForm* form) {
  const size_t median = g.runs.size() / 2;
  size_t keep = SIZE_MAX;
  auto nodes = [&](size_t k) { return steps.runs[g.runs[k]].written; };
  for (auto [k, f] : near)
    if (f == form && (keep == SIZE_MAX || nodes(k) < nodes(keep) || (nodes(k) == nodes(keep) && k == median)))
      keep = k;
  return keep;
}

// The step each group keeps, of those near its median's time: as few forms
// as may be kept (each form is code of its own; the runs of one form are
// rows of its table), by a greedy cover: the form most groups not yet
// decided may keep (on a tie, the shorter, then the first by value: one
// choice for one folded program) is kept by each of them, and so on; in a
// group, its step of that form of fewest nodes. An adaptive code's steps
// differ by a neighbour or two from one refinement to the next; kept by
// size alone, p4est's step-3 example kept 26 runs unlike any other (5,900
// of its skeleton's 14,298 lines).
void choose_kept_steps(const FoldedProgram& p, const TopSteps& steps, std::vector<StepGroup>& groups) {
  std::map<RunForm, std::vector<size_t>> groups_of;  // by form: the groups that may keep it
  std::vector<FormCandidates> near(groups.size());
  for (size_t i = 0; i < groups.size(); ++i)
    for (size_t k : near_median(steps, groups[i])) {
      auto at = groups_of.try_emplace(form_of(p, steps.runs[groups[i].runs[k]])).first;
      if (at->second.empty() || at->second.back() != i) at->second.push_back(i);
      near[i].push_back({k, &at->first});
    }
  // the forms open, by the groups not yet decided that may keep them: most first, then the shorter, then
  // the first by value (not by address)
  using Open = std::pair<size_t, const RunForm*>;
  auto first = [](const Open& x, const Open& y) {
    if (x.first != y.first) return x.first > y.first;
    if (x.second->size() != y.second->size()) return x.second->size() < y.second->size();
    return *x.second < *y.second;
  };
  std::set<Open, decltype(first)> open(first);
  std::map<const RunForm*, size_t> undecided;
  for (auto& [form, gs] : groups_of) {
    open.insert({gs.size(), &form});
    undecided[&form] = gs.size();
  }
  std::vector<bool> decided(groups.size(), false);
  while (!open.empty()) {
    const RunForm* form = open.begin()->second;
    open.erase(open.begin());
    for (size_t i : groups_of[*form]) {
      if (decided[i]) continue;
      decided[i] = true;
      groups[i].keep = fewest_nodes_of_form(steps, groups[i], near[i], form);
      std::set<const RunForm*> others;  // the group's other forms: one group fewer for each
      for (auto [k, f] : near[i])
        if (f != form) others.insert(f);
      for (const RunForm* f : others) {
        size_t& n = undecided[f];
        if (open.erase({n, f}) && --n > 0) open.insert({n, f});
      }
    }
  }
}

// The steps rs (of one kind and shape), sorted by traced time, in groups of
// at most `most` steps whose mean time is at most kGroupSpread times their
// median's: a step near the median of each group (choose_kept_steps) is
// kept and stands for the group (factor: the group's traced time over its
// own, at most kGroupSpread x kNearMedian times the steps it stands for), a
// step alone in its group stays as itself. The time of a step changes with
// its counts and its work: a breadth-first search's levels took 20 us to
// 20 ms as its frontier grew and shrank, an adaptive-refinement code's
// refining steps many times its others, and the traced run has its
// disturbances. Kept in turn instead, a step stood for ones far longer than
// itself: the search's first level for large ones, 109 times its time
// (1.1 s predicted for 4.2 s); miniAMR's light steps for its refining ones,
// 400-2,800 times their time, so that the K = 10 skeleton predicted 12.4 s
// on a SimGrid platform where K = 1 predicted 4.1 s.
void group_by_time(const TopSteps& steps, std::vector<size_t> rs, size_t most, int run_class,
                   std::vector<StepGroup>& out) {
  auto time = [&](size_t k) { return steps.runs[rs[k]].time; };
  std::stable_sort(rs.begin(), rs.end(), [&](size_t x, size_t y) { return steps.runs[x].time < steps.runs[y].time; });
  for (size_t g = 0; g < rs.size();) {
    // of the steps left, as many groups as `most` a group needs, their sizes as equal as may be (not 10
    // and a last one alone: that one stands for nothing, kept whole)
    const size_t left = rs.size() - g, groups = (left + most - 1) / most, size = (left + groups - 1) / groups;
    size_t end = g + 1;
    for (double sum = time(g); end < rs.size() && end - g < size; ++end) {  // the group with `end` in it:
      sum += time(end);
      const size_t n = end + 1 - g;
      if (sum > kGroupSpread * static_cast<double>(n) * time(g + n / 2)) break;  // its mean over its median
    }
    StepGroup group;
    group.runs.assign(rs.begin() + static_cast<std::ptrdiff_t>(g), rs.begin() + static_cast<std::ptrdiff_t>(end));
    group.run_class = run_class;
    out.push_back(std::move(group));
    g = end;
  }
}

// Each group's kept step stands for the group's others, left out.
void keep_groups(const TopSteps& steps, const std::vector<StepGroup>& groups, Plan& plan,
                 const std::function<void(const TopRun&)>& leave_out) {
  for (const StepGroup& g : groups) {
    const TopRun& kept = steps.runs[g.runs[g.keep]];
    Plan::KeptRun by{kept.first, kept.end, 0.0, 0};
    by.traced_s = kept.time * 1e-9;
    by.run_class = g.run_class;
    for (size_t r : g.runs) {
      by.factor += steps.runs[r].time / kept.time;
      if (r == g.runs[g.keep]) continue;
      leave_out(steps.runs[r]);
      by.left_out += steps.runs[r].top_nodes();
    }
    plan.kept_runs.push_back(by);
  }
}

// The time steps (TopSteps::time_step): the short ones sampled
// (sample_short_steps), the others of each kind and shape grouped by time
// (group_by_time), at most 1 / share steps a group. Returns the top-level
// nodes left out.
size_t keep_by_time(const FoldedProgram& p, const TopSteps& steps, double share, double short_budget, Plan& plan) {
  size_t left = 0;
  const std::function<void(const TopRun&)> leave_out = [&](const TopRun& run) {
    for (size_t i = run.first; i < run.end; ++i) plan.left_out[i] = true;
    left += run.top_nodes();
  };
  const size_t most = std::max<size_t>(2, static_cast<size_t>(std::lround(1 / share)));
  const std::vector<size_t> shorts = short_steps(steps, short_budget);
  sample_short_steps(steps, shorts, plan, leave_out);
  std::vector<bool> is_short(steps.runs.size(), false);
  for (size_t r : shorts) is_short[r] = true;
  std::map<Kind, std::vector<size_t>> of_kind;
  for (size_t r = 0; r < steps.runs.size(); ++r)
    if (!is_short[r] && steps.runs[r].time > 0 && steps.time_step(r)) of_kind[steps.kinds[r]].push_back(r);
  int run_class = 0;  // 0: the short steps
  std::vector<StepGroup> groups;
  for (auto& [kind, rs] : of_kind) {
    ++run_class;
    for (std::vector<size_t>& shape : shapes(steps, std::move(rs)))
      group_by_time(steps, std::move(shape), most, run_class, groups);
  }
  choose_kept_steps(p, steps, groups);
  keep_groups(steps, groups, plan, leave_out);
  return left;
}

// The runs of the top level left out (Plan::left_out) and those kept that
// stand for them (Plan::kept_runs), where the plan's cut loops and farms
// leave the skeleton longer than kLeaveOutAbove / K of the run. False where
// none is left out (the plan unchanged).
bool choose_left_out_steps(const FoldedProgram& p, const NodeTimes& t, double K, const TopSteps& steps, Plan& plan,
                           std::set<std::string>& notes) {
  const std::vector<double> by_rank = planned_rank_times(p, t, plan);
  const double planned = *std::max_element(by_rank.begin(), by_rank.end());
  if (planned <= kLeaveOutAbove * t.program / K) return false;
  const std::vector<TopRun>& runs = steps.runs;
  plan.left_out.assign(p.top.size(), false);
  // The share of each kind's time kept: 1 / K, less where what cannot be left out (MPI_Init's set-up,
  // the communicators, the runs of collectives) would keep the skeleton longer than 1 / K of the run,
  // but never below 1 / 2K (the kept runs are the prediction's sample).
  double may = 0;
  for (size_t r = 0; r < runs.size(); ++r)
    if (steps.time_step(r)) may += runs[r].time;
  const double fixed = std::max(0.0, planned - may);
  const double share = may > 0 ? std::clamp((t.program / K - fixed) / may, 0.5 / K, 1.0 / K) : 1.0 / K;
  const size_t left = keep_by_time(p, steps, share, kShortShare * t.program / K, plan);
  // runs that stand for nothing need no timing
  plan.kept_runs.erase(std::remove_if(plan.kept_runs.begin(), plan.kept_runs.end(),
                                      [](const Plan::KeptRun& k) { return k.left_out == 0; }),
                       plan.kept_runs.end());
  std::sort(plan.kept_runs.begin(), plan.kept_runs.end(),
            [](const Plan::KeptRun& x, const Plan::KeptRun& y) { return x.first < y.first; });
  if (left == 0) {
    plan.keep_all();
    return false;
  }
  notes.insert("the time steps did not fold into one loop: " + std::to_string(plan.kept_runs.size()) +
               " runs of top-level calls each stand for runs left out (" + std::to_string(left) + " of " +
               std::to_string(p.top.size()) +
               " top-level nodes left out), their time scaled by the traced ratio (short steps: by their calls)");
  return true;
}

}  // namespace

void leave_out_steps(const FoldedProgram& p, const NodeTimes& t, const GenerateOptions& opt, Plan& plan,
                     std::set<std::string>& notes) {
  const double K = opt.scale;
  if (K < 2 || t.program <= 0 || p.top.empty()) return;
  const size_t min_steps = plan.farms.empty() ? 2 : static_cast<size_t>(std::ceil(K));
  const TopSteps steps(p, t, plan, min_steps);
  if (plan.farms.empty()) {
    choose_left_out_steps(p, t, K, steps, plan, notes);
    return;
  }
  // Fewer farms than K keep every K-th task each (find_farms). As many or
  // more are a farm per time step (tests/apps/step_farm.c): the steps are
  // left out as any others, those kept run their farms with every task,
  // and the farms of the steps left out go with them; a farm outside the
  // time steps keeps every K-th task.
  if (static_cast<double>(plan.farms.size()) < K) return;
  Plan trial = plan;
  for (Farm& f : trial.farms) {
    if (!steps.in_time_step(f.first)) continue;
    f.kept.resize(f.task_ns.size());
    std::iota(f.kept.begin(), f.kept.end(), 0);
  }
  if (!choose_left_out_steps(p, t, K, steps, trial, notes)) return;
  std::vector<Farm> kept;
  for (Farm& f : trial.farms)
    if (!trial.leaves_out(f.first)) kept.push_back(std::move(f));
  trial.farms = std::move(kept);
  trial.index_farms(p.top.size());
  plan = std::move(trial);
}

namespace {

void find_farms_of(const FoldedProgram& p, const GenerateOptions& opt, Plan& plan, std::set<std::string>& notes) {
  std::vector<double> rate(p.symbols.world_size, 0);  // kernel units per ns (checked by generate())
  for (uint32_t r = 0; r < p.symbols.world_size && r < p.symbols.ranks.size(); ++r)
    rate[r] = p.symbols.ranks[r].kernel_units_per_s * 1e-9;
  if (opt.farms) {
    if (opt.progress) opt.progress("looking for master-worker farms");
    plan.farms = find_farms(p, rate, opt.scale, notes);
  }
  plan.index_farms(p.top.size());
}

}  // namespace

// ------------------------------------------------------------------ long computations made once

namespace {

// A computation of the top level is shortened where it took at least this
// share of the program on some rank, and K times this many ns: it then
// still runs long enough to time (kMinShortenedNs after the cut).
constexpr double kShortenShare = 0.01;
constexpr double kMinShortenedNs = 2e6;

// The computation before a top-level call runs once: no loop holds it, so
// K never shortened it, and a program that spends a fifth of its run
// setting up (miniAMR's initial mesh, 0.33 s of computation per rank, 0.66 s
// of a 2.9 s run with 4 ranks on 2 cores, before its first MPI_Comm_split)
// kept its skeleton at most 1/(1/5 + 4/5K) times shorter than the
// application whatever K (2.2 at K = 10). The kernel that replays it
// runs at a steady rate, so 1/K of it, timed, times K predicts it on any
// machine as a cut loop's iterations do. Not MPI_Init's (not timed), not in
// a farm or a left-out run, not in programs with threads (their first
// thread's time runs beside the others').
void shorten_long_gaps(const FoldedProgram& p, const NodeTimes& t, const GenerateOptions& opt, Plan& plan) {
  const double K = opt.scale;
  plan.shortened_by = K;
  if (K < 2 || !p.threads.empty() || t.program <= 0) return;
  for (size_t i = 0; i < p.top.size(); ++i) {
    const uint32_t n = p.top[i];
    const FoldedNode& node = p.nodes[n];
    if (plan.leaves_out(i) || plan.farm_at(i) >= 0) continue;
    const uint32_t f = node.is_loop() ? 0 : identity_of(p, n).func;  // a loop's: before its first iteration
    if (f == kFunc_MPI_Init || f == kFunc_MPI_Init_thread) continue;
    double most = 0;
    for (uint32_t r = 0; r < p.symbols.world_size; ++r) most = std::max(most, gap_wall_ns(node, r));
    if (most >= kShortenShare * t.program && most >= K * kMinShortenedNs) plan.shortened.push_back({n, most});
  }
}

}  // namespace

Plan make_plan(const FoldedProgram& p, const NodeTimes& t, const GenerateOptions& opt, std::set<std::string>& notes) {
  Plan plan;
  for (const Identity& id : p.symbols.identities) plan.any_tag_receives |= id.func == kFunc_MPI_Init_thread;
  if (opt.progress) opt.progress("request slots");
  plan.slots = assign_request_slots(p);
  for (const std::string& problem : plan.slots.problems) notes.insert("request references: " + problem);
  plan.cut_of.assign(p.nodes.size(), -1);
  find_farms_of(p, opt, plan, notes);
  CutChooser(p, t, opt, plan, notes).choose(p.top);
  plan_steps(p, p.top, plan, notes);
  leave_out_steps(p, t, opt, plan, notes);
  shorten_long_gaps(p, t, opt, plan);
  return plan;
}

}  // namespace skt::gen
