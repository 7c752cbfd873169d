// The merge itself (MISSION.md §2) and the compact description of per-rank
// parameters.
#include <algorithm>
#include <stdexcept>
#include <unordered_map>
#include <utility>

#include "skel/merge.h"
#include "skel/skel_funcs.h"

namespace skt::merge {
namespace {

bool is_peer(Param p) { return p == Param::peer || p == Param::peer2; }

// A non-blocking send or receive only posts its message and returns: it does
// not count as a rank's turn in the merge's fairness (below).
bool posts_a_message(uint32_t f) { return message_role(f) != MessageRole::kNone && creates_request(f); }

// The most compact exact description of values[k] of ranks[k]; tables go to
// e.tables. `cart` tries a Cartesian-neighbour rule (needs the whole event).
template <typename CartTry>
ParamDesc describe(Param p, const std::vector<uint32_t>& ranks, const std::vector<int64_t>& values, int64_t P,
                   std::vector<int64_t>& tables, CartTry cart) {
  ParamDesc d;
  bool same = true, none = true;
  for (int64_t v : values) {
    same &= v == values[0];
    none &= v == kNone;
  }
  if (none) return d;
  if (same) return ParamDesc{ParamKind::kConst, values[0], 0};
  if (is_peer(p)) {
    // rank + a (mod P, or open at the ends), from the first rank with a real peer
    for (size_t k = 0; k < ranks.size(); ++k) {
      if (values[k] < 0) continue;
      int64_t a = values[k] - ranks[k];
      int64_t ring = ((a % P) + P) % P;
      if (ring > P / 2) ring -= P;  // prefer rank-1 to rank+P-1
      bool rel = true, open = true;
      for (size_t q = 0; q < ranks.size() && (rel || open); ++q) {
        int64_t r = ranks[q];
        rel &= values[q] == ((r + ring) % P + P) % P;
        open &= values[q] == (r + a >= 0 && r + a < P ? r + a : kProcNull);
      }
      if (rel) return ParamDesc{ParamKind::kRel, ring, 0};
      if (open) return ParamDesc{ParamKind::kRelOpen, a, 0};
      // rank XOR mask (butterfly exchanges, e.g. NPB CG's reductions)
      int64_t mask = values[k] ^ static_cast<int64_t>(ranks[k]);
      bool xr = mask > 0;
      for (size_t q = 0; q < ranks.size() && xr; ++q) xr = values[q] == (static_cast<int64_t>(ranks[q]) ^ mask);
      if (xr) return ParamDesc{ParamKind::kXor, mask, 0};
      break;
    }
    ParamDesc c;
    if (cart(p, c)) return c;
  }
  if (ranks.size() >= 2 && values[0] != kNone && values[1] != kNone) {
    int64_t dr = static_cast<int64_t>(ranks[1]) - ranks[0], dv = values[1] - values[0];
    if (dv % dr == 0) {
      int64_t b = dv / dr, a = values[0] - b * ranks[0];
      bool fits = true;
      for (size_t q = 0; q < ranks.size() && fits; ++q) fits &= values[q] == a + b * ranks[q];
      if (fits) return ParamDesc{ParamKind::kLinear, a, b};
    }
  }
  d.kind = ParamKind::kTable;
  d.a = static_cast<int64_t>(tables.size());
  tables.insert(tables.end(), values.begin(), values.end());
  return d;
}

}  // namespace

bool ordered_across_members(uint32_t f) {
  switch (call_class(f)) {
    case CallClass::kCollective: case CallClass::kIcollective: case CallClass::kCommCreate:
    case CallClass::kCommFree: case CallClass::kFinalize:
      return true;
    default:
      return false;
  }
}

const char* order_name(Order o) {
  switch (o) {
    case Order::kAuto: return "auto";
    case Order::kWalk: return "walk";
    case Order::kAlign: return "align";
    case Order::kNth: return "nth";
  }
  return "?";
}

Order order_from_name(const std::string& name) {
  for (Order o : {Order::kAuto, Order::kWalk, Order::kAlign, Order::kNth})
    if (name == order_name(o)) return o;
  throw std::invalid_argument("unknown merge order '" + name + "' (auto, walk, align or nth)");
}

namespace {

// What describe() says of each order it tried.
struct OrderFigures {
  Order order;
  const char* owner;  // "the walk's"
  size_t events, collectives;
  uint64_t judged;
};

// "the walk's 12 and the alignment's 14": the figure `of` of the orders other than `used` that `has`.
template <typename Of>
std::string others(const std::vector<OrderFigures>& figs, Order used, Of of) {
  std::string text;
  for (const OrderFigures& f : figs) {
    if (f.order == used || !of(f)) continue;
    text += std::string(text.empty() ? "" : " and ") + f.owner + " " + std::to_string(of(f));
  }
  return text;
}

}  // namespace

std::string describe(const Ordered& o, const std::string& score) {
  const std::vector<OrderFigures> figs = {
      {Order::kWalk, "the walk's", o.walk_events, o.walk_collectives, o.walk_judged},
      {Order::kAlign, "the alignment's", o.align_events, o.align_collectives, o.align_judged},
      {Order::kNth, "the count order's", o.nth_events, o.nth_collectives, o.nth_judged}};
  const OrderFigures& used = figs[o.used == Order::kAlign ? 1 : o.used == Order::kNth ? 2 : 0];
  std::vector<std::string> notes;
  const std::string more_collectives =
      others(figs, o.used, [&](const OrderFigures& f) { return f.collectives > used.collectives ? f.collectives : 0; });
  if (!more_collectives.empty())
    notes.push_back(std::to_string(used.collectives) + " events of collectives against " + more_collectives +
                    ", which split them among fewer members");
  const std::string judged = others(figs, o.used, [](const OrderFigures& f) { return f.judged; });
  if (used.judged && !judged.empty()) notes.push_back(score + " " + std::to_string(used.judged) + " against " + judged);
  if (o.used != Order::kAlign && o.align_gave_up) notes.push_back("the ranks are too unlike to align within the work bound");
  if (notes.empty()) {
    std::string same;
    int n_same = 0;
    for (const OrderFigures& f : figs)
      if (f.order != o.used && f.events) same += std::string(n_same++ ? " and " : "") + f.owner;
    if (n_same) notes.push_back(same + (n_same > 1 ? " orders are the same" : " order is the same"));
  }
  std::string how = o.used == Order::kAlign ? "by alignment" : o.used == Order::kNth ? "by each call's count" : "by the look-ahead walk";
  for (size_t i = 0; i < notes.size(); ++i) how += (i ? "; " : " (") + notes[i];
  return notes.empty() ? how : how + ")";
}

namespace {

// The look-ahead walk's state: one cursor per rank, the column each rank was
// last served at, and the columns made so far.
class Walk {
 public:
  Walk(const Loaded& in, uint32_t lookahead)
      : in_(in),
        P_(static_cast<uint32_t>(in.ranks.size())),
        look_(std::max<uint32_t>(1, lookahead)),
        identities_(in.tables.identities),
        cur_(P_, 0),
        last_served_(P_, -1) {
    count_ordered_calls();
  }

  // Columns until every rank's calls are taken: all the active ranks' at
  // once where they agree, otherwise the holders of the best candidate.
  std::vector<Column> run() {
    for (;;) {
      active_.clear();
      for (uint32_t r = 0; r < P_; ++r)
        if (cur_[r] < in_.ranks[r].events.size()) active_.push_back(r);
      if (active_.empty()) break;
      uint32_t first = ident(active_[0]);
      bool all_same = true;
      for (uint32_t r : active_) all_same &= ident(r) == first;
      if (all_same) {
        take(first, active_);
        continue;
      }
      const uint32_t best = best_candidate();
      holders_.clear();
      for (uint32_t r : active_)
        if (ident(r) == best) holders_.push_back(r);
      take(best, holders_);
    }
    return std::move(cols_);
  }

 private:
  // The identity of rank r's current call.
  uint32_t ident(uint32_t r) const { return in_.ranks[r].events[cur_[r]].identity; }

  // Distance (0..look) of identity x in rank r's window, or -1.
  long find_in_window(uint32_t r, uint32_t x) const {
    const auto& ev = in_.ranks[r].events;
    size_t end = std::min(ev.size(), cur_[r] + look_ + 1);
    for (size_t i = cur_[r]; i < end; ++i)
      if (ev[i].identity == x) return static_cast<long>(i - cur_[r]);
    return -1;
  }

  // How a candidate is blocked, the least first: it goes before the others.
  // A collective waiting for a member is the last resort: taken without it,
  // it is split in two events.
  enum class Block : uint8_t { kFree, kInWindow, kMemberLater };

  // Per rank, how many calls of each ordered identity (ordered_across_members) it has yet to make.
  void count_ordered_calls() {
    ordered_.resize(identities_.size());
    for (size_t x = 0; x < identities_.size(); ++x) ordered_[x] = ordered_across_members(identities_[x].func);
    ahead_.resize(P_);
    std::vector<uint32_t> ids;
    for (uint32_t r = 0; r < P_; ++r) {
      ids.clear();
      for (const RankEvent& e : in_.ranks[r].events)
        if (ordered_[e.identity]) ids.push_back(e.identity);
      std::sort(ids.begin(), ids.end());
      for (uint32_t x : ids)
        if (ahead_[r].empty() || ahead_[r].back().first != x) ahead_[r].push_back({x, 1});
        else ++ahead_[r].back().second;
    }
  }
  uint32_t* calls_ahead(uint32_t r, uint32_t x) {
    auto& a = ahead_[r];
    auto it = std::lower_bound(a.begin(), a.end(), std::make_pair(x, 0u));
    return it != a.end() && it->first == x ? &it->second : nullptr;
  }

  // Ordered identity x, which some active ranks make now: does a rank of the
  // same communicator (the same group of it) that is not at x make it later?
  // Not one that is at an ordered call on the same communicator now: that
  // call is the one matching x, made from another call site (NPB MG's ranks
  // reach one MPI_Allreduce from different branches).
  bool member_makes_later(uint32_t x) {
    const int64_t comm = identities_[x].comm;
    const CommSymbol* c = comm > kCommWorld && comm < static_cast<int64_t>(in_.tables.comms.size())
                              ? &in_.tables.comms[static_cast<size_t>(comm)]
                              : nullptr;  // MPI_COMM_WORLD, or no communicator (MPI_Finalize): every rank
    auto group = [&](uint32_t r) { return c && r < c->group_of.size() ? c->group_of[r] : 0; };
    groups_.clear();
    for (uint32_t r : active_)
      if (ident(r) == x) groups_.push_back(group(r));
    for (uint32_t s : active_) {
      const uint32_t now = ident(s);
      if (now == x || (ordered_[now] && identities_[now].comm == comm)) continue;
      const uint32_t* n = calls_ahead(s, x);
      if (n && *n > 0 && std::find(groups_.begin(), groups_.end(), group(s)) != groups_.end()) return true;
    }
    return false;
  }

  // Column x made by ranks, each moved past its call.
  void take(uint32_t x, const std::vector<uint32_t>& ranks) {
    const bool posts = posts_a_message(identities_[x].func);
    for (uint32_t r : ranks) {
      if (!posts) last_served_[r] = static_cast<int64_t>(cols_.size());
      if (ordered_[x]) --*calls_ahead(r, x);
      ++cur_[r];
    }
    cols_.push_back(Column{x, ranks});
  }

  // Candidates: the current calls of the active ranks. One is blocked when a
  // rank that is not at it now will make it later (within the window): that
  // rank must first make what comes before. A collective (any call of
  // ordered_across_members) is blocked by a member that makes it later at
  // any distance (member_makes_later), and goes after the other blocked
  // candidates: a master polling with MPI_Iprobe hundreds of times before
  // each step's MPI_Allreduce had its workers' Allreduce taken without it,
  // and no step of the merged program closed (tests/apps/step_farm.c).
  // Unblocked candidates go first.
  // Among equals, the candidate whose ranks were served longest ago wins, so
  // that no rank runs ahead of the others: in a pipeline (every candidate
  // blocked) this keeps the ranks in step and the merged program periodic
  // like the application. Posting a message (Isend, Irecv) is not a turn: a
  // master that posts an Irecv and waits for it keeps pace with a worker that
  // makes one Send a round. Then more ranks, then the lowest rank.
  uint32_t best_candidate() {
    uint32_t best = 0;
    Block best_block = Block::kFree;
    int64_t best_served = 0;
    long best_holders = -1;
    std::vector<uint32_t> seen;
    for (uint32_t r : active_) {
      uint32_t x = ident(r);
      if (std::find(seen.begin(), seen.end(), x) != seen.end()) continue;
      seen.push_back(x);
      long holders_n = 0;
      int64_t served = INT64_MAX;
      Block block = Block::kFree;
      for (uint32_t s : active_) {
        if (ident(s) == x) {
          ++holders_n;
          served = std::min(served, last_served_[s]);
        } else if (block == Block::kFree && find_in_window(s, x) > 0) {
          block = Block::kInWindow;
        }
      }
      if (ordered_[x] && member_makes_later(x)) block = Block::kMemberLater;
      bool better = best_holders < 0 || block < best_block ||
                    (block == best_block &&
                     (served < best_served || (served == best_served && holders_n > best_holders)));
      if (better) {
        best = x;
        best_block = block;
        best_served = served;
        best_holders = holders_n;
      }
    }
    return best;
  }

  const Loaded& in_;
  const uint32_t P_;
  const uint32_t look_;
  const std::vector<Identity>& identities_;
  std::vector<size_t> cur_;
  std::vector<int64_t> last_served_;  // column of each rank's last call (fairness)
  std::vector<uint32_t> active_, holders_;
  std::vector<Column> cols_;
  std::vector<bool> ordered_;  // per identity: ordered_across_members
  std::vector<std::vector<std::pair<uint32_t, uint32_t>>> ahead_;  // per rank: (ordered identity, calls to come)
  std::vector<int32_t> groups_;  // member_makes_later's scratch
};

}  // namespace

std::vector<Column> walk_ranks(const Loaded& in, uint32_t lookahead) { return Walk(in, lookahead).run(); }

namespace {

// A list of int64 values without its own storage: one rank's list of one field.
struct ListView {
  const int64_t* data = nullptr;
  size_t size = 0;
  bool operator==(const ListView& o) const { return size == o.size && std::equal(data, data + size, o.data); }
};

// Builds the merged trace of one order of the ranks' calls, one column at a time: each column's per-rank
// parameters described. Its scratch buffers are reused from one event to the next, so that an event of P
// ranks costs O(P) work and no allocations but those of the merged event itself (with a vector per rank
// and event, 12-15 % of the merge was malloc at 4,096 ranks).
class EventBuilder {
 public:
  EventBuilder(const Loaded& in, const Options& opt) : in_(in), opt_(opt), m_(in.tables) {
    const uint32_t P = m_.world_size;
    cur_.assign(P, 0);
    merged_index_.resize(P);
    for (uint32_t r = 0; r < P; ++r) {
      const RankData& rd = in.ranks[r];
      merged_index_[r].resize(rd.events.size());
      MergedRank& mr = m_.ranks[r];
      mr.gaps.reserve(rd.events.size());
      mr.durations.reserve(rd.events.size());
      if (rd.cpu_work) mr.works.reserve(rd.events.size());
      if (rd.any_blocked) mr.blocked.reserve(rd.events.size());
      total_ += rd.events.size();
    }
  }

  void emit(const Column& col) {
    MergedEvent e;
    e.identity = col.identity;
    e.ranks = col.ranks;
    gather_tuples(col.ranks);
    describe_params(e);
    describe_lists(e);
    record_times(col.ranks);
    m_.events.push_back(std::move(e));
    report_progress(col.ranks.size());
  }

  MergedTrace take() { return std::move(m_); }

 private:
  const RankEvent& current(uint32_t r) const { return in_.ranks[r].events[cur_[r]]; }

  // Each participating rank's parameter tuple, copied side by side: the parameters are then read from
  // one array instead of following three pointers per rank and parameter.
  void gather_tuples(const std::vector<uint32_t>& ranks) {
    tuples_.resize(ranks.size());
    for (size_t k = 0; k < ranks.size(); ++k) {
      const RankData& rd = in_.ranks[ranks[k]];
      tuples_[k] = rd.params[rd.events[cur_[ranks[k]]].params];
    }
  }

  void describe_params(MergedEvent& e) {
    const Identity& id = m_.identities[e.identity];
    auto cart = [&](Param p, ParamDesc& out) { return try_cart(e, id, p, out); };
    for (size_t p = 0; p < kNumParams; ++p) {
      values_.resize(tuples_.size());
      for (size_t k = 0; k < tuples_.size(); ++k) values_[k] = tuples_[k][p];
      e.params[p] = describe(static_cast<Param>(p), e.ranks, values_, m_.world_size, e.tables, cart);
    }
  }

  // A Cartesian-neighbour rule, tried only for peers on a Cartesian communicator of which every rank
  // of the event holds the whole grid.
  bool try_cart(MergedEvent& e, const Identity& id, Param p, ParamDesc& out) const {
    if (id.comm < 0 || m_.comms[static_cast<size_t>(id.comm)].dims.empty()) return false;
    const CommSymbol& c = m_.comms[static_cast<size_t>(id.comm)];
    int64_t grid = 1;
    for (int64_t v : c.dims) grid *= v;
    for (uint32_t r : e.ranks)
      if (static_cast<int64_t>(c.members(r).size()) != grid || c.comm_rank(r) < 0) return false;
    ParamDesc& slot = e.params[static_cast<size_t>(p)];
    for (size_t dim = 0; dim < c.dims.size(); ++dim)
      for (int64_t disp : kCartDisplacements) {
        slot = ParamDesc{ParamKind::kCart, static_cast<int64_t>(dim), disp};
        bool fits = true;
        for (size_t k = 0; k < e.ranks.size() && fits; ++k) fits &= m_.value(e, p, e.ranks[k]) == values_[k];
        if (fits) {
          out = slot;
          return true;
        }
      }
    return false;
  }

  void describe_lists(MergedEvent& e) {
    bool any_lists = false;
    for (uint32_t r : e.ranks) any_lists |= current(r).lists >= 0;
    if (!any_lists) return;
    for (size_t f = 0; f < kNumListFields; ++f) {
      gather_lists(e.ranks, static_cast<ListField>(f));
      bool all_empty = true, same = true;
      for (const ListView& v : views_) {
        all_empty &= v.size == 0;
        same &= v == views_[0];
      }
      if (all_empty) continue;
      ListDesc d;
      d.field = static_cast<ListField>(f);
      d.same = same;
      for (size_t k = 0; k < (same ? 1 : views_.size()); ++k)
        d.lists.emplace_back(views_[k].data, views_[k].data + views_[k].size);
      e.lists.push_back(std::move(d));
    }
  }

  // views_: each rank's list of field f; reqrefs turned from the creating call's index in the rank into
  // how many merged events back it is (in one buffer for all ranks).
  void gather_lists(const std::vector<uint32_t>& ranks, ListField f) {
    static const std::vector<int64_t> kEmpty;
    const int64_t idx = static_cast<int64_t>(m_.events.size());
    views_.resize(ranks.size());
    refs_.clear();
    std::vector<size_t>& starts = ref_starts_;
    starts.assign(ranks.size(), 0);
    for (size_t k = 0; k < ranks.size(); ++k) {
      const uint32_t r = ranks[k];
      const RankEvent& re = current(r);
      const std::vector<int64_t>& l =
          re.lists < 0 ? kEmpty : in_.ranks[r].lists[static_cast<size_t>(re.lists)][static_cast<size_t>(f)];
      views_[k] = ListView{l.data(), l.size()};
      if (f != ListField::reqrefs || l.empty()) continue;
      starts[k] = refs_.size();
      for (int64_t c : l) refs_.push_back(c < 0 ? -1 : idx - merged_index_[r][static_cast<size_t>(c)]);
    }
    if (f != ListField::reqrefs) return;
    for (size_t k = 0; k < ranks.size(); ++k)  // refs_ is complete: point into it
      if (views_[k].size) views_[k].data = refs_.data() + starts[k];
  }

  void record_times(const std::vector<uint32_t>& ranks) {
    const int64_t idx = static_cast<int64_t>(m_.events.size());
    for (uint32_t r : ranks) {
      const RankEvent& re = current(r);
      MergedRank& mr = m_.ranks[r];
      mr.gaps.push_back(re.gap);
      mr.durations.push_back(re.dur);
      if (in_.ranks[r].cpu_work) mr.works.push_back(re.work);
      if (in_.ranks[r].any_blocked) mr.blocked.push_back(re.blocked);
      merged_index_[r][cur_[r]] = idx;
      ++cur_[r];
    }
  }

  void report_progress(size_t calls) {
    done_ += calls;
    if (!opt_.progress || done_ < next_report_) return;
    opt_.progress("merged " + std::to_string(done_) + " of " + std::to_string(total_) + " calls");
    next_report_ += kProgressEveryCalls;
  }

  static constexpr int64_t kCartDisplacements[] = {1, -1, 2, -2};
  static constexpr size_t kProgressEveryCalls = 5000000;
  const Loaded& in_;
  const Options& opt_;
  MergedTrace m_;
  std::vector<size_t> cur_;                          // per rank: its next call
  std::vector<std::vector<int64_t>> merged_index_;   // per rank: merged index of each of its calls
  size_t total_ = 0, done_ = 0, next_report_ = kProgressEveryCalls;
  std::vector<ParamTuple> tuples_;                   // per participating rank, this event's
  std::vector<int64_t> values_;                      // one parameter of every participating rank
  std::vector<ListView> views_;                      // one list field of every participating rank
  std::vector<int64_t> refs_;                        // the reqrefs of every participating rank, side by side
  std::vector<size_t> ref_starts_;                   // where each rank's begin in refs_
};

// The merged trace of one order of the ranks' calls: each column's per-rank parameters described.
MergedTrace build(const Loaded& in, const std::vector<Column>& cols, const Options& opt) {
  EventBuilder b(in, opt);
  for (const Column& c : cols) b.emit(c);
  return b.take();
}

}  // namespace

namespace {

// The events an order makes of the calls that the members of a communicator
// make in one order (ordered_across_members): the same calls in every order,
// so more events means collectives split among events of fewer members.
size_t collective_events(const Loaded& in, const std::vector<Column>& order) {
  size_t n = 0;
  for (const Column& c : order) n += ordered_across_members(in.tables.identities[c.identity].func);
  return n;
}

// One order of the calls that auto weighs: its columns, and where its figures go in Ordered.
struct Candidate {
  Order order;
  const std::vector<Column>* cols;
  size_t* collectives;
  uint64_t* judged;
};

// Order::kAuto: of the distinct orders (walk, align, nth), those splitting fewest collectives, and of
// those the one the judge scores lowest (the first on a tie). Sets how.used and the figures.
MergedTrace choose(const Loaded& in, const Options& opt, const std::vector<Candidate>& all, Ordered& how) {
  std::vector<Candidate> distinct;
  for (const Candidate& c : all) {
    if (c.cols->empty() && c.order != Order::kWalk) continue;  // gave up
    bool seen = false;
    for (const Candidate& d : distinct) seen = seen || *d.cols == *c.cols;
    if (!seen) distinct.push_back(c);
  }
  if (distinct.size() > 1) {
    size_t fewest = SIZE_MAX;
    for (const Candidate& c : distinct) fewest = std::min(fewest, *c.collectives = collective_events(in, *c.cols));
    distinct.erase(std::remove_if(distinct.begin(), distinct.end(),
                                  [&](const Candidate& c) { return *c.collectives > fewest; }),
                   distinct.end());
  }
  if (distinct.size() == 1) {
    how.used = distinct.front().order;
    return build(in, *distinct.front().cols, opt);
  }
  if (opt.progress) opt.progress("judging the merge orders");
  MergedTrace best;
  uint64_t best_score = 0;
  for (size_t i = 0; i < distinct.size(); ++i) {
    MergedTrace m = build(in, *distinct[i].cols, opt);
    const uint64_t score = *distinct[i].judged = opt.judge(m);
    if (i == 0 || score < best_score) {
      best = std::move(m), best_score = score;
      how.used = distinct[i].order;
      how.judged_index = static_cast<int>(i);
    }
  }
  return best;
}

MergedTrace merge_stream(const Loaded& in, const Options& opt, Ordered* ordered) {
  if (opt.order == Order::kAuto && !opt.judge) throw std::logic_error("merge: Order::kAuto needs Options::judge");
  Ordered how;
  std::vector<Column> aligned, counted, walked;
  size_t total = 0;
  for (const auto& rd : in.ranks) total += rd.events.size();
  const bool automatic = opt.order == Order::kAuto;
  if ((opt.order == Order::kAlign || automatic) && total > 0) {
    aligned = align_ranks(in, automatic ? opt.auto_align_work : opt.align_work);
    how.align_gave_up = aligned.empty();
    how.align_events = aligned.size();
    if (how.align_gave_up && opt.order == Order::kAlign && opt.progress)
      opt.progress("note: the ranks' sequences are too unlike to align within the work bound; merged by the "
                   "look-ahead walk");
  }
  if ((opt.order == Order::kNth || automatic) && total > 0) {
    counted = nth_ranks(in);
    how.nth_events = counted.size();
  }
  const bool walk = opt.order == Order::kWalk || automatic || (opt.order == Order::kAlign && aligned.empty()) ||
                    (opt.order == Order::kNth && total == 0);
  if (walk) {
    walked = walk_ranks(in, opt.lookahead);
    how.walk_events = walked.size();
  }
  MergedTrace m;
  if (automatic) {
    m = choose(in, opt,
               {{Order::kWalk, &walked, &how.walk_collectives, &how.walk_judged},
                {Order::kAlign, &aligned, &how.align_collectives, &how.align_judged},
                {Order::kNth, &counted, &how.nth_collectives, &how.nth_judged}},
               how);
  } else {
    how.used = walk ? Order::kWalk : opt.order;
    m = build(in, walk ? walked : opt.order == Order::kAlign ? aligned : counted, opt);
  }
  if (ordered) *ordered = how;
  return m;
}

// One thread's calls as a Loaded of their own, over the same tables.
Loaded thread_loaded(const Loaded& in, const LoadedThread& lt) {
  Loaded sub;
  sub.tables = in.tables;
  sub.ranks = lt.ranks;
  for (size_t r = 0; r < sub.ranks.size(); ++r) sub.tables.ranks[r].events = lt.traced_calls[r];
  return sub;
}

// Per rank: the merged index of each of its calls, and its calls' file positions.
struct RankPositions {
  std::vector<std::vector<int64_t>> merged;  // per rank, in its (normalised) order
  // The merged index of rank r's call at file position seq (-1: none).
  int64_t of(const Loaded& in, uint32_t r, int64_t seq) const {
    if (seq < 0) return -1;
    const std::vector<RankEvent>& ev = in.ranks[r].events;
    for (size_t local = 0; local < ev.size() && local < merged[r].size(); ++local)
      if (ev[local].seq == seq) return merged[r][local];
    return -1;
  }
};

RankPositions rank_positions(const MergedTrace& m) {
  RankPositions p;
  p.merged.resize(m.world_size);
  for (size_t idx = 0; idx < m.events.size(); ++idx)
    for (uint32_t r : m.events[idx].ranks) p.merged[r].push_back(static_cast<int64_t>(idx));
  return p;
}

// Where a thread ran among the first thread's merged events, the same on
// every rank: after the latest of its ranks' forks, done before the
// earliest of their joins.
void place_thread(const MergedTrace& m, const Loaded& in, const RankPositions& at, const LoadedThread& lt,
                  MergedTrace& stream) {
  int64_t fork = -1, join = static_cast<int64_t>(m.events.size());
  for (uint32_t r = 0; r < lt.ranks.size(); ++r) {
    if (lt.ranks[r].events.empty()) continue;
    fork = std::max(fork, at.of(in, r, lt.fork_seq[r]));
    const int64_t j = at.of(in, r, lt.join_seq[r]);
    if (j >= 0) join = std::min(join, j);
  }
  stream.fork_after = fork;
  stream.join_before = join == static_cast<int64_t>(m.events.size()) ? -1 : join;
}

std::vector<std::string> verify_stream(const MergedTrace& m, const Loaded& in, size_t limit);

}  // namespace

MergedTrace merge(const Loaded& in, const Options& opt, Ordered* ordered) {
  MergedTrace m = merge_stream(in, opt, ordered);
  if (in.threads.empty()) return m;
  const RankPositions at = rank_positions(m);
  for (const LoadedThread& lt : in.threads) {
    if (opt.progress) opt.progress("merging thread " + std::to_string(lt.number) + "'s calls");
    MergedTrace stream = merge_stream(thread_loaded(in, lt), opt, nullptr);
    stream.thread = lt.number;
    place_thread(m, in, at, lt, stream);
    m.threads.push_back(std::move(stream));
  }
  return m;
}

std::vector<std::string> verify(const MergedTrace& m, const Loaded& in, size_t limit) {
  std::vector<std::string> out = verify_stream(m, in, limit);
  if (m.threads.size() != in.threads.size()) {
    out.push_back("the merged trace has " + std::to_string(m.threads.size()) + " threads' streams, the trace " +
                  std::to_string(in.threads.size()));
    return out;
  }
  for (size_t k = 0; k < m.threads.size() && out.size() < limit; ++k)
    for (const std::string& s : verify_stream(m.threads[k], thread_loaded(in, in.threads[k]), limit - out.size()))
      out.push_back("thread " + std::to_string(in.threads[k].number) + ": " + s);
  return out;
}

namespace {

std::vector<std::string> verify_stream(const MergedTrace& m, const Loaded& in, size_t limit) {
  std::vector<std::string> out;
  auto report = [&](const std::string& s) {
    if (out.size() < limit) out.push_back(s);
  };
  const uint32_t P = m.world_size;
  std::vector<size_t> pos(P, 0);
  std::vector<std::vector<int64_t>> local_of_merged(P);  // rank -> merged index of each of its calls
  for (size_t idx = 0; idx < m.events.size(); ++idx) {
    const MergedEvent& e = m.events[idx];
    for (uint32_t r : e.ranks) {
      size_t i = pos[r]++;
      local_of_merged[r].push_back(static_cast<int64_t>(idx));
      if (i >= in.ranks[r].events.size()) {
        report("rank " + std::to_string(r) + ": merged trace has more calls than the trace");
        continue;
      }
      const RankEvent& want = in.ranks[r].events[i];
      const ParamTuple& want_params = in.ranks[r].params[want.params];
      std::string where = "rank " + std::to_string(r) + " call " + std::to_string(i) + " (merged " +
                          std::to_string(idx) + ")";
      if (want.identity != e.identity) {
        report(where + ": a different call");
        continue;
      }
      for (size_t p = 0; p < kNumParams; ++p)
        if (m.value(e, static_cast<Param>(p), r) != want_params[p])
          report(where + ": " + param_name(static_cast<Param>(p)) + " " +
                 std::to_string(m.value(e, static_cast<Param>(p), r)) + " instead of " +
                 std::to_string(want_params[p]));
      if (m.ranks[r].gaps[i] != want.gap || m.ranks[r].durations[i] != want.dur ||
          (in.ranks[r].cpu_work && (m.ranks[r].works.size() <= i || m.ranks[r].works[i] != want.work)) ||
          (in.ranks[r].any_blocked && (m.ranks[r].blocked.size() <= i || m.ranks[r].blocked[i] != want.blocked)))
        report(where + ": times differ");
      for (size_t f = 0; f < kNumListFields; ++f) {
        static const std::vector<int64_t> none;
        const auto& w = want.lists < 0 ? none : in.ranks[r].lists[static_cast<size_t>(want.lists)][f];
        std::vector<int64_t> got = m.list(e, static_cast<ListField>(f), r);
        if (static_cast<ListField>(f) == ListField::reqrefs)
          for (int64_t& g : got) {  // back distance -> the rank's index of the creating call
            if (g < 0) continue;
            auto it = std::lower_bound(local_of_merged[r].begin(), local_of_merged[r].end(),
                                       static_cast<int64_t>(idx) - g);
            g = it != local_of_merged[r].end() && *it == static_cast<int64_t>(idx) - g
                    ? it - local_of_merged[r].begin()
                    : -2;
          }
        if (got != w) report(where + ": " + list_field_name(static_cast<ListField>(f)) + " differ");
      }
    }
  }
  for (uint32_t r = 0; r < P; ++r)
    if (pos[r] != in.ranks[r].events.size())
      report("rank " + std::to_string(r) + ": " + std::to_string(pos[r]) + " calls in the merged trace, " +
             std::to_string(in.ranks[r].events.size()) + " in the trace");
  return out;
}

}  // namespace

}  // namespace skt::merge
