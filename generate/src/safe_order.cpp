#include "safe_order.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "skel/skel_funcs.h"
#include "skel/trace.h"

namespace skt::gen {

bool is_point_to_point(uint32_t f) {
  return message_role(f) != MessageRole::kNone || f == kFunc_MPI_Wait || f == kFunc_MPI_Waitall ||
         f == kFunc_MPI_Waitany || f == kFunc_MPI_Waitsome;
}

// Parameter pm of node n on rank r at its j-th instance: the symbol's, or
// the node's rule where it changes between instances (linear, a mean, or a
// cycle over the loop's iterations or the instances; the nodes of one
// loop body are at the same j together).
int64_t value_at(const FoldedProgram& p, uint32_t n, Param pm, uint32_t r, uint64_t j) {
  return value_at(p, n, pm, r, j, j);
}

int64_t value_at(const FoldedProgram& p, uint32_t n, Param pm, uint32_t r, uint64_t j, uint64_t k) {
  const CountRule* rule = p.nodes[n].rule(pm);
  if (!rule || r >= rule->kind.size() || rule->kind[r] == RuleKind::kNone)
    return p.symbols.value(p.symbols.events[static_cast<size_t>(p.nodes[n].symbol)], pm, r);
  if (rule->is_cycle()) return rule->cycle[r * rule->period + (rule->by_instance() ? j : k) % rule->period];
  return std::llround(rule->linear_value(r, j, k));
}

namespace {

struct Op {
  uint32_t node = 0;
  bool blocking = false;
  std::vector<uint32_t> sides;  // message ends this op posts (index into ends)
  std::vector<uint32_t> waits;  // messages it waits for
};

// One end of a message: who, to/from whom, on what, the k-th of its kind.
struct End {
  bool send = false;
  uint32_t rank = 0;
  int64_t peer = 0, comm = 0, tag = 0;
  uint32_t message = UINT32_MAX;
  uint32_t pos = 0;  // the place in the run of the node that posts it
  uint32_t node = 0;
  Param tag_param = Param::tag;
};

bool simulate(const std::vector<std::vector<Op>>& ops, const std::vector<End>& ends, size_t messages) {
  std::vector<uint8_t> posted(ends.size(), 0);
  std::vector<uint8_t> ends_posted(messages, 0);  // 2 = both ends posted (complete)
  std::vector<size_t> pc(ops.size(), 0);
  std::vector<uint8_t> entered(ops.size(), 0);
  bool progress = true;
  while (progress) {
    progress = false;
    for (size_t r = 0; r < ops.size(); ++r) {
      while (pc[r] < ops[r].size()) {
        const Op& o = ops[r][pc[r]];
        if (!entered[r]) {
          for (uint32_t s : o.sides)
            if (!posted[s]) {
              posted[s] = 1;
              ++ends_posted[ends[s].message];
            }
          entered[r] = 1;
          progress = true;
        }
        bool done = !o.blocking ||
                    std::all_of(o.waits.begin(), o.waits.end(), [&](uint32_t m) { return ends_posted[m] == 2; });
        if (!done) break;
        ++pc[r];
        entered[r] = 0;
        progress = true;
      }
    }
  }
  for (size_t r = 0; r < ops.size(); ++r)
    if (pc[r] < ops[r].size()) return false;
  return true;
}

// A completion names its requests by their place in a ring of slots (the
// k-th latest request of the ring, or a fixed slot for a ring of one), so a
// rank's new order must not move a request-creating call across a
// completion that refers to the same ring: the completion would find
// another request, or the slot of one still pending would be reused.
bool creates_ref(const RequestSlots& slots, uint32_t made, uint32_t completion, uint32_t rank) {
  int32_t g = slots.ring_of_node[made];
  if (g < 0 || slots.refs[completion].empty()) return false;
  for (const RequestRef& x : slots.refs[completion][rank])
    if (x.ring == g) return true;
  return false;
}

bool keeps_request_order(const RequestSlots& slots, const std::vector<uint32_t>& before,
                         const std::vector<uint32_t>& after, uint32_t rank) {
  std::map<uint32_t, size_t> now;  // node -> its place in `after` (a run's nodes are distinct)
  for (size_t i = 0; i < after.size(); ++i) now[after[i]] = i;
  for (size_t i = 0; i < before.size(); ++i)
    for (size_t j = 0; j < before.size(); ++j)
      if (i != j && creates_ref(slots, before[i], before[j], rank) &&
          (i < j) != (now[before[i]] < now[before[j]]))
        return false;
  return true;
}

// MPI matches a rank's receives from one source with one tag in the order
// they are posted, and its sends to one destination likewise: a new order
// that posts an Irecv ahead of an earlier Recv of the same source and tag
// makes the Irecv take the earlier message, and the pairing simulated is
// not the one MPI makes (NPB LU at 16 ranks: an exchange's Irecv posted
// ahead of the pipeline's last Recv on the same source and tag; the Recv
// then waited for the exchange's message, sent only after the rank's own
// exchange send, and the skeleton hung). Each channel keeps its order.
bool keeps_channel_order(const std::vector<Op>& before, const std::vector<Op>& after, const std::vector<End>& ends) {
  using Channel = std::tuple<bool, int64_t, int64_t, int64_t>;  // send, comm, peer, tag
  auto per_channel = [&](const std::vector<Op>& ops) {
    std::map<Channel, std::vector<uint32_t>> seq;
    for (const Op& o : ops)
      for (uint32_t e : o.sides) seq[{ends[e].send, ends[e].comm, ends[e].peer, ends[e].tag}].push_back(e);
    return seq;
  };
  return per_channel(before) == per_channel(after);
}

// The run as the simulation sees it: each rank's calls in the emitted order
// and the message ends they post. RunModel::add() fills ops and ends node by
// node; pair_ends() then finds every end's tag and pairs sends with
// receives, and number_messages() gives each pair its place in the global
// order, which the ops' waits then name.
class RunModel {
 public:
  RunModel(const FoldedProgram& p, const RequestSlots& slots)
      : ops(p.symbols.world_size), p_(p), m_(p.symbols), slots_(slots), made_end_(p.symbols.world_size),
        made_(p.symbols.world_size) {}

  // Adds node n, at place pos of the run, for every rank that calls it.
  // False where the run cannot be modelled: a peer that changes between
  // the node's instances, a completion of requests made before the run.
  bool add(uint32_t pos, uint32_t n);

  std::vector<std::vector<Op>> ops;  // per world rank
  std::vector<End> ends;             // the message ends every op posts (Op::sides); tag and message still unset

 private:
  int64_t add_end(Op& o, const MergedEvent& e, uint32_t r, uint32_t pos, bool send, Param peer, Param tag);
  bool add_waits(Op& o, uint32_t n, uint32_t r);

  const FoldedProgram& p_;
  const MergedTrace& m_;
  const RequestSlots& slots_;
  // per rank: (ring, request number within this run) -> the end it posted
  std::vector<std::map<std::pair<int32_t, int64_t>, int64_t>> made_end_;
  std::vector<std::map<int32_t, int64_t>> made_;  // per rank, per ring: requests made in this run
};

// The end rank r's op o posts to or from its peer parameter (-1 and no end
// for MPI_PROC_NULL): its index in ends.
int64_t RunModel::add_end(Op& o, const MergedEvent& e, uint32_t r, uint32_t pos, bool send, Param peer, Param tag) {
  int64_t w = m_.value(e, peer, r);
  if (w < 0) return -1;  // MPI_PROC_NULL: no message
  End x;
  x.send = send;
  x.rank = r;
  x.peer = w;
  x.comm = m_.identities[e.identity].comm;
  x.tag_param = tag;
  x.node = o.node;
  x.pos = pos;
  ends.push_back(x);
  o.sides.push_back(static_cast<uint32_t>(ends.size() - 1));
  return static_cast<int64_t>(ends.size() - 1);
}

// Wait* node n on rank r: the ends it completes (as end indices, turned
// into messages by number_messages), which must come from this run.
bool RunModel::add_waits(Op& o, uint32_t n, uint32_t r) {
  const auto& refs = slots_.refs[n];
  if (refs.empty()) return false;
  for (const RequestRef& x : refs[r]) {
    if (x.ring < 0) continue;
    auto it = made_end_[r].find({x.ring, made_[r][x.ring] - int64_t(x.back)});
    if (it == made_end_[r].end()) return false;  // a request from before the run: not ours to order
    if (it->second >= 0) o.waits.push_back(static_cast<uint32_t>(it->second));  // end now, message below
  }
  return true;
}

bool RunModel::add(uint32_t pos, uint32_t n) {
  // peers that change between the node's instances (call sites joined):
  // the symbol's are not this run's
  if (p_.nodes[n].rule(Param::peer) || p_.nodes[n].rule(Param::peer2)) return false;
  const MergedEvent& e = m_.events[static_cast<size_t>(p_.nodes[n].symbol)];
  const uint32_t f = m_.identities[e.identity].func;
  // MPI_ANY_SOURCE receives are simulated with the source they matched in
  // the trace (recorded as their peer): the order found is safe for the
  // application's own matching, which is what the skeleton replays.
  for (uint32_t r : e.ranks) {
    Op o;
    o.node = n;
    switch (f) {
      case kFunc_MPI_Send: case kFunc_MPI_Ssend: case kFunc_MPI_Bsend: case kFunc_MPI_Rsend:
        o.blocking = true;
        add_end(o, e, r, pos, true, Param::peer, Param::tag);
        break;
      case kFunc_MPI_Recv:
        o.blocking = true;
        add_end(o, e, r, pos, false, Param::peer, Param::tag);
        break;
      case kFunc_MPI_Sendrecv: case kFunc_MPI_Sendrecv_replace:
        o.blocking = true;
        add_end(o, e, r, pos, true, Param::peer, Param::tag);
        add_end(o, e, r, pos, false, Param::peer2, Param::tag2);
        break;
      case kFunc_MPI_Isend: case kFunc_MPI_Issend: case kFunc_MPI_Ibsend: case kFunc_MPI_Irsend:
      case kFunc_MPI_Irecv: {
        bool send = f != kFunc_MPI_Irecv;
        int64_t x = add_end(o, e, r, pos, send, Param::peer, Param::tag);
        int32_t g = slots_.ring_of_node[n];
        if (g >= 0) made_end_[r][{g, made_[r][g]++}] = x;  // -1: MPI_PROC_NULL, nothing to wait for
        break;
      }
      default:  // Wait*: the ends it completes must come from this run
        o.blocking = true;
        if (!add_waits(o, n, r)) return false;
    }
    if (o.blocking && f != kFunc_MPI_Wait && f != kFunc_MPI_Waitall && f != kFunc_MPI_Waitany &&
        f != kFunc_MPI_Waitsome)
      o.waits = o.sides;
    ops[r].push_back(o);
  }
  return true;
}

using EndPairs = std::vector<std::pair<uint32_t, uint32_t>>;  // (send end, receive end)

// Pair the k-th send s->d with the k-th receive at d from s (same comm and
// tag), with the tags of the run's j-th time. Tags that change between
// instances must pair the same way every time: where the run's receive
// takes the message its send made the time before (a loop entered in the
// middle of a step), the messages cross the run, and it is not ours.
// Sets every end's tag (the first time's where they change); false where
// the run cannot be modelled (that, an MPI_ANY_TAG receive, an end whose
// other end is outside the run). first_pairs: the first time's pairs, in
// the order of (comm, source, dest, tag, k).
bool pair_ends(const FoldedProgram& p, const std::vector<uint32_t>& run, std::vector<End>& ends,
               EndPairs& first_pairs) {
  const uint64_t times = std::max<uint64_t>(1, std::min<uint64_t>(p.nodes[run[0]].instances, 128));
  EndPairs same_pairs;
  for (uint64_t j = 0; j < times; ++j) {
    bool varies = false;
    for (End& x : ends) {
      varies |= p.nodes[x.node].rule(x.tag_param) != nullptr;
      x.tag = value_at(p, x.node, x.tag_param, x.rank, j);
    }
    if (j > 0 && !varies) break;
    std::map<std::tuple<int64_t, int64_t, int64_t, int64_t>, std::vector<uint32_t>> sends, recvs;
    for (uint32_t i = 0; i < ends.size(); ++i) {
      const End& x = ends[i];
      if (x.tag == -1 && !x.send) return false;  // MPI_ANY_TAG
      auto key = x.send ? std::make_tuple(x.comm, int64_t(x.rank), x.peer, x.tag)
                        : std::make_tuple(x.comm, x.peer, int64_t(x.rank), x.tag);
      (x.send ? sends : recvs)[key].push_back(i);
    }
    if (sends.size() != recvs.size()) return false;
    EndPairs pairs;
    for (auto& [key, s] : sends) {
      auto it = recvs.find(key);
      if (it == recvs.end() || it->second.size() != s.size()) return false;  // crosses the run: not ours
      for (size_t k = 0; k < s.size(); ++k) pairs.emplace_back(s[k], it->second[k]);
    }
    if (j == 0) {
      first_pairs = pairs;  // in the order of (comm, source, dest, tag, k)
      std::sort(pairs.begin(), pairs.end());
      same_pairs = pairs;
    } else {
      std::sort(pairs.begin(), pairs.end());
      if (pairs != same_pairs) return false;
    }
  }
  return true;
}

// The global order of the messages: by where the run first posts an end
// of each (the merged order, which follows the application's time), then
// by (comm, source, dest, tag, k). Any total order is deadlock-free; this
// one keeps a blocking round trip (0 sends, 1 receives and answers) a round
// trip, where ordering by source alone let rank 1 answer late, after the
// step's other exchanges, and the skeleton's step ran 13 % short
// (tests/apps/ring). Sets End::message, turns the ops' waits from ends into
// messages, and returns the number of messages.
uint32_t number_messages(const EndPairs& first_pairs, std::vector<End>& ends, std::vector<std::vector<Op>>& ops) {
  EndPairs message_ends = first_pairs;
  std::stable_sort(message_ends.begin(), message_ends.end(), [&](const auto& a, const auto& b) {
    return std::min(ends[a.first].pos, ends[a.second].pos) < std::min(ends[b.first].pos, ends[b.second].pos);
  });
  const uint32_t messages = static_cast<uint32_t>(message_ends.size());
  for (uint32_t k = 0; k < messages; ++k) ends[message_ends[k].first].message = ends[message_ends[k].second].message = k;
  for (auto& r : ops)
    for (Op& o : r)
      for (uint32_t& w : o.waits) w = ends[w].message;
  return messages;
}

// Each rank's posting calls first, in their order; then its blocking ones
// by their smallest message.
std::vector<std::vector<Op>> by_smallest_message(const std::vector<std::vector<Op>>& ops) {
  std::vector<std::vector<Op>> sorted(ops.size());
  for (size_t r = 0; r < ops.size(); ++r) {
    for (const Op& o : ops[r])
      if (!o.blocking) sorted[r].push_back(o);
    std::vector<Op> blocking;
    for (const Op& o : ops[r])
      if (o.blocking) blocking.push_back(o);
    auto first = [](const Op& o) {
      uint32_t k = UINT32_MAX;
      for (uint32_t w : o.waits) k = std::min(k, w);
      return k;
    };
    std::stable_sort(blocking.begin(), blocking.end(), [&](const Op& a, const Op& b) { return first(a) < first(b); });
    sorted[r].insert(sorted[r].end(), blocking.begin(), blocking.end());
  }
  return sorted;
}

// Whether every rank's new order keeps its request rings and its channels
// in the order they were (keeps_request_order, keeps_channel_order).
bool keeps_orders(const RequestSlots& slots, const std::vector<std::vector<Op>>& ops,
                  const std::vector<std::vector<Op>>& sorted, const std::vector<End>& ends) {
  for (uint32_t r = 0; r < ops.size(); ++r) {
    std::vector<uint32_t> before, after;
    for (const Op& o : ops[r]) before.push_back(o.node);
    for (const Op& o : sorted[r]) after.push_back(o.node);
    if (!keeps_request_order(slots, before, after, r) || !keeps_channel_order(ops[r], sorted[r], ends)) return false;
  }
  return true;
}

}  // namespace

// The simulation; `analysed` says whether it could model the run at all
// (false: the verdict is kAsEmitted and means nothing). Analysed, the
// verdict is kAsEmitted where the emitted order completes, kReordered with
// the order by smallest message where that completes and keeps every
// rank's request rings and channels in order, else kUnproven.
SafeOrder simulated_order(const FoldedProgram& p, const RequestSlots& slots, const std::vector<uint32_t>& run,
                          bool& analysed) {
  analysed = false;
  SafeOrder out;
  RunModel model(p, slots);
  for (uint32_t pos = 0; pos < run.size(); ++pos)
    if (!model.add(pos, run[pos])) return out;
  EndPairs first_pairs;
  if (!pair_ends(p, run, model.ends, first_pairs)) return out;
  const uint32_t messages = number_messages(first_pairs, model.ends, model.ops);
  analysed = true;
  if (simulate(model.ops, model.ends, messages)) return out;
  std::vector<std::vector<Op>> sorted = by_smallest_message(model.ops);
  if (!simulate(sorted, model.ends, messages) || !keeps_orders(slots, model.ops, sorted, model.ends)) {
    out.verdict = SafeOrder::kUnproven;
    return out;
  }
  out.verdict = SafeOrder::kReordered;
  out.order.resize(sorted.size());
  for (size_t r = 0; r < sorted.size(); ++r)
    for (const Op& o : sorted[r]) out.order[r].push_back(o.node);
  return out;
}

// Whether receive nodes a and b of rank r could match the same message:
// the same communicator, source and tag, either a wildcard, or a tag that
// changes between instances.
bool may_match_the_same(const FoldedProgram& p, uint32_t a, uint32_t b, uint32_t r) {
  const MergedTrace& m = p.symbols;
  struct Side {
    int64_t comm, source, tag;
    bool varies;
  };
  auto receives = [&](uint32_t n, std::vector<Side>& out) {
    const MergedEvent& e = m.events[static_cast<size_t>(p.nodes[n].symbol)];
    const Identity& id = m.identities[e.identity];
    const bool varies = p.nodes[n].rule(Param::peer) || p.nodes[n].rule(Param::peer2) ||
                        p.nodes[n].rule(Param::tag) || p.nodes[n].rule(Param::tag2);
    switch (message_role(id.func)) {
      case MessageRole::kRecv:  // MPI_ANY_SOURCE: the source matched in the trace is its peer
        out.push_back({id.comm, id.peer_class == PeerClass::kAnySource ? -1 : m.value(e, Param::peer, r), m.value(e, Param::tag, r),
                       varies});
        break;
      case MessageRole::kSendRecv:
        out.push_back({id.comm, m.value(e, Param::peer2, r), m.value(e, Param::tag2, r), varies});
        break;
      default:
        break;
    }
  };
  std::vector<Side> x, y;
  receives(a, x);
  receives(b, y);
  for (const Side& u : x)
    for (const Side& v : y)
      if (u.comm == v.comm && (u.varies || v.varies || u.source < 0 || v.source < 0 || u.tag < 0 || v.tag < 0 ||
                               (u.source == v.source && u.tag == v.tag)))
        return true;
  return false;
}

// A run the simulation cannot model (a wildcard receive posted with
// MPI_Irecv, whose source only its completion knows; requests from before
// the run; messages that cross its ends; peers that change per instance): each rank posts its non-blocking
// receives first (those not behind a completion of their own ring), then
// does the rest in order. Posting a receive earlier
// never makes a program block where it did not.
SafeOrder receives_first(const FoldedProgram& p, const RequestSlots& slots, const std::vector<uint32_t>& run) {
  const MergedTrace& m = p.symbols;
  SafeOrder out;
  out.order.resize(m.world_size);
  bool moved = false;
  for (uint32_t r = 0; r < m.world_size; ++r) {
    std::vector<uint32_t> posts, rest;
    for (uint32_t n : run) {
      const MergedEvent& e = m.events[static_cast<size_t>(p.nodes[n].symbol)];
      if (!std::binary_search(e.ranks.begin(), e.ranks.end(), r)) continue;
      bool post = m.identities[e.identity].func == kFunc_MPI_Irecv;
      // not past a completion of its own ring (keeps_request_order), nor
      // past a receive it could take the message of (keeps_channel_order)
      for (uint32_t c : rest) post = post && !creates_ref(slots, n, c, r) && !may_match_the_same(p, n, c, r);
      (post ? posts : rest).push_back(n);
      if (post && !rest.empty()) moved = true;
    }
    out.order[r] = posts;
    out.order[r].insert(out.order[r].end(), rest.begin(), rest.end());
  }
  if (!moved) return SafeOrder();
  out.verdict = SafeOrder::kReordered;
  return out;
}

SafeOrder safe_order(const FoldedProgram& p, const RequestSlots& slots, const std::vector<uint32_t>& run) {
  bool analysed = false;
  SafeOrder o = simulated_order(p, slots, run, analysed);
  return analysed ? o : receives_first(p, slots, run);
}

}  // namespace skt::gen
