// The completion check: an abstract execution of the planned skeleton
// (check.h). The values of every call (peers, tags, counts) are computed
// here as the generated C computes them (Emitter::peer, count, param in
// generate.cpp); the random programs of tests/unit/test_check.cpp and
// tests/check_completion.sh compare this model's verdicts with real runs.
#include "check.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <limits>
#include <map>
#include <tuple>
#include <unordered_map>

#include "skel/skel_funcs.h"

namespace skt::gen {
namespace {

constexpr int64_t kAnyPeer = -1;  // MPI_ANY_SOURCE, MPI_ANY_TAG in the model
constexpr int64_t kNoPeer = -2;   // MPI_PROC_NULL

enum class ReqKind : uint8_t { kSend, kRecv, kCollective };
enum class ReqState : uint8_t { kInactive, kActive, kDone };

struct Message {
  uint32_t ctx = 0;
  int64_t src = 0, dst = 0, tag = 0;  // world ranks; src and tag may be kAnyPeer on a receive
  uint64_t bytes = 0;                 // a send's length, a receive's capacity
  bool roomy = false;                 // a receive whose room the generator may raise (Plan::receive_bytes)
};

struct Request {
  ReqKind kind = ReqKind::kSend;
  ReqState state = ReqState::kActive;
  SendMode mode = SendMode::kStandard;
  bool persistent = false;
  bool matched = false;  // a message: its other end found
  Message msg;
  uint32_t actor = 0, node = 0;
  int32_t waiter = -1;   // the actor blocked on it
  double posted = 0, done_at = 0;  // its owner's clock when it became active; when it completed (ns)
};

// The messages and receives of one destination on one communicator context.
// While a receive from MPI_ANY_SOURCE is pending here, nothing is matched
// until no rank can move (Checker::resolve_wildcards): then every send it
// could take is posted, and which one it takes is a choice the check can
// explore (the idea of ISP's POE).
struct Mailbox {
  std::vector<uint32_t> sends, recvs;  // unmatched, in order
  std::vector<uint32_t> probers;       // actors in MPI_Probe here
  uint32_t wildcards = 0;              // receives from MPI_ANY_SOURCE among recvs
  bool listed = false;                 // in Checker::wild_boxes_
};

// The k-th collective call on one communicator context.
struct CollSlot {
  uint32_t func = 0;
  int64_t root = kNone;
  uint32_t arrived = 0;
  uint32_t first_actor = 0;
  int64_t first_node = -1;
  double latest = 0;  // the last member's clock when it came
  std::vector<uint32_t> reqs;
  std::vector<std::pair<uint32_t, uint32_t>> creates;  // (actor, node) that makes a communicator here
};

struct Context {
  uint32_t size = 0;
  int64_t symbol = 0;  // the communicator symbol (for messages)
  std::deque<CollSlot> slots;
  uint64_t base = 0;  // index of slots.front()
};

// A place in the program: a node list (the top, a loop's body, or a rank's
// order of a step) and the loop around it.
struct Frame {
  const std::vector<uint32_t>* items = nullptr;
  size_t at = 0;
  int64_t loop = -1;                         // the loop node whose body this is
  uint64_t iter = 0, iters = 0, count = 0;  // in the skeleton, the skeleton's iterations, the application's
  double stride = 1;                         // the instance counters' step for the nodes directly here
  bool step = false;                         // a step's per-rank order: no guards
  int32_t farm = -1;                         // a farm's place among its items (no items: Plan::farms)
};

enum class Phase : uint8_t { kRunning, kCompleting, kFinalizing, kDone };

struct Actor {
  uint32_t rank = 0;
  std::vector<Frame> stack;
  std::vector<int64_t> slot;  // request in each slot, -1: MPI_REQUEST_NULL
  std::vector<int64_t> made;  // per ring: requests made (skel_made)
  // per pool ring (RequestSlots::pool): its slots started, and done, oldest first
  std::vector<std::deque<int64_t>> pool_started, pool_done;
  std::unordered_map<uint32_t, double> counter;     // instance counters (n<id>_i)
  std::unordered_map<int64_t, uint32_t> comm;       // communicator symbol -> context
  std::unordered_map<int64_t, uint64_t> generation; // communicator symbol -> times made
  std::unordered_map<uint32_t, uint64_t> coll_next; // context -> its next collective
  int64_t win_ctx = -1, file_ctx = -1;              // the communicator of the window, of the file
  uint32_t waiting = 0;                             // requests it waits for
  int64_t probe_box = -1;                           // the mailbox it probes
  Message probe;
  Phase phase = Phase::kRunning;
  bool returns_after_finalize = false;
  int64_t node = -1;  // the call it is in
  int32_t farm = -1;  // the farm (Plan::farms) it is about to run
  std::vector<uint32_t> finished;  // requests it has waited for: released once it runs again
  // per send pool ring: its pending sends, first in its slots (skel_pool_len[0])
  std::vector<uint32_t> pool_len;
  uint32_t pool_taken = 0;  // the send-pool takes of the completion call it makes (skel_pool_taken)
  // Its send-pool takes waiting (Checker::take_any): the pending sends of ring any_ring, any_need of which
  std::vector<uint32_t> any_of;
  uint32_t any_need = 0;
  int32_t any_ring = -1;
  double clock = 0;  // ns since its MPI_Init returned, as the skeleton runs (CheckResult::expected_ns)
};

// Messages up to this long complete their send once posted, in the timing
// (CheckResult::expected_ns) whatever the check's own eager_bytes.
constexpr uint64_t kTimedEagerBytes = 65536;

class Checker {
 public:
  // forced: wildcard choices to take (choice number -> which of the candidate senders, by order of posting)
  Checker(const FoldedProgram& p, const Plan& plan, const CheckOptions& opt, const std::map<uint64_t, uint32_t>& forced)
      : p_(p), m_(p.symbols), plan_(plan), opt_(opt), P_(p.symbols.world_size), forced_(forced) {}
  CheckResult run();
  // The wildcard receives matched where more than one sender could be taken: (choice number, candidates).
  const std::vector<std::pair<uint64_t, uint32_t>>& choices() const { return choices_; }

 private:
  // --- the program walk
  bool next_event(Actor& a, uint32_t& node);
  void execute(uint32_t a, uint32_t node);
  void execute_farm(uint32_t a, uint32_t node);
  void execute_point_to_point(uint32_t a, uint32_t node, CallClass c);
  void execute_probe(uint32_t a, uint32_t node);
  void execute_collective(uint32_t a, uint32_t node, CallClass c);
  Message message_of(uint32_t a, uint32_t node, bool send, Param peer, Param tag, Param count, int64_t dtype,
                     bool any_source);
  std::vector<std::pair<uint32_t, uint64_t>> loops_of(const Actor& a) const;
  // --- values as the C computes them
  const MergedEvent& event(uint32_t n) const { return m_.events[static_cast<size_t>(p_.nodes[n].symbol)]; }
  static uint64_t alone_key(uint32_t identity, uint32_t rank) { return uint64_t{identity} << 32 | rank; }
  const Identity& identity(uint32_t n) const { return m_.identities[event(n).identity]; }
  uint64_t cycle_index(const Actor& a, bool by_instance, uint64_t period) const;
  uint64_t iteration(const Actor& a) const;  // of the innermost loop a is in (0: none)
  int64_t rule_value(const Actor& a, uint32_t n, Param pm, bool capacity) const;
  int64_t peer_of(const Actor& a, uint32_t n, Param pm, bool any_source) const;
  int64_t tag_of(const Actor& a, uint32_t n, Param pm, bool receive) const;
  uint64_t bytes_of(const Actor& a, uint32_t n, Param count, int64_t dtype, bool capacity) const;
  // --- communicators
  int64_t context_of(uint32_t a, int64_t symbol, uint32_t node);
  uint32_t context_id(int64_t symbol, int64_t group, uint64_t generation, bool creating, uint32_t size);
  // --- requests and messages
  uint32_t new_request(uint32_t a, uint32_t node, ReqKind kind);
  uint32_t post_send(uint32_t a, uint32_t node, const Message& msg, SendMode mode, bool persistent = false);
  uint32_t post_recv(uint32_t a, uint32_t node, const Message& msg, bool persistent = false);
  void start(uint32_t r);
  void complete(uint32_t r);
  void wait_for(uint32_t a, uint32_t r);
  void take_any(uint32_t a, int32_t g, bool wait, uint32_t j);
  void compact_pool(Actor& ac, int32_t g);
  bool took_any(Actor& ac, uint32_t id);
  void release_finished(Actor& a);
  void match_send(uint32_t s);
  void match_recv(uint32_t r);
  void pair(uint32_t s, uint32_t r);
  void cancel(uint32_t id);
  Mailbox& box(uint32_t ctx, int64_t dst) { return boxes_[key(ctx, dst)]; }
  uint64_t key(uint32_t ctx, int64_t dst) const { return uint64_t(ctx) * (uint64_t(P_) + 1) + uint64_t(dst); }
  void wake_probers(uint32_t ctx, int64_t dst);
  bool resolve_wildcards();
  bool match_in_order(Mailbox& b);
  // --- collectives
  uint32_t post_collective(uint32_t a, int64_t node, uint32_t ctx, uint32_t func, int64_t root);
  void collective_done(uint32_t ctx);
  void make_communicator(uint32_t a, uint32_t node);
  // --- slots
  int64_t slot_of(const Actor& a, const RequestRef& ref) const;
  void pool_moved(Actor& ac, const RequestRef& ref);
  PoolKind pool(int32_t g) const {
    return g >= 0 && static_cast<size_t>(g) < plan_.slots.pool.size() ? plan_.slots.pool[static_cast<size_t>(g)]
                                                                       : PoolKind::kNone;
  }
  void slot_put(uint32_t a, uint32_t node, uint32_t r);
  void completion(uint32_t a, uint32_t node, CallClass c);
  void finalize(uint32_t a);
  // --- timing (CheckResult::expected_ns)
  void charge_computation(Actor& a, uint32_t n, bool taken_by_loop);
  double call_ns(uint32_t n);
  // --- outcome
  void fail(CheckProblem what, const std::string& message, std::vector<uint32_t> actors);
  void report_deadlock();
  void report_open();
  std::string waits_for(uint32_t a) const;
  std::string comm_name(int64_t symbol) const;

  const FoldedProgram& p_;
  const MergedTrace& m_;
  const Plan& plan_;
  const CheckOptions& opt_;
  const uint32_t P_;
  const std::map<uint64_t, uint32_t>& forced_;
  std::vector<uint64_t> wild_boxes_;                    // mailboxes with a wildcard receive pending
  uint64_t next_choice_ = 0;
  std::vector<std::pair<uint64_t, uint32_t>> choices_;
  std::vector<Actor> actors_;
  std::vector<Request> reqs_;
  std::vector<uint32_t> free_reqs_;
  std::unordered_map<uint64_t, Mailbox> boxes_;
  std::vector<Context> contexts_;
  std::map<std::tuple<int64_t, int64_t, uint64_t, bool>, uint32_t> context_ids_;
  std::deque<uint32_t> runnable_;
  std::vector<char> queued_;
  uint64_t open_ = 0;  // requests active and not done, messages sent and not received
  std::vector<double> call_ns_;   // per node: its least traced duration over the ranks (-1: not yet known)
  // calls one rank alone makes: per (identity, rank), the shortest traced duration at any of its nodes
  std::unordered_map<uint64_t, double> alone_ns_;
  std::vector<char> shortened_;   // per node: its computation runs 1/K (Plan::shortened)
  CheckResult out_;
  bool failed_ = false;
};

// ------------------------------------------------------------------ the walk

// The next event node actor a calls, advancing its frames (loops run their
// planned iterations; a planned step runs the rank's own order; other nodes
// only on the ranks taking part). False at the program's end.
bool Checker::next_event(Actor& a, uint32_t& node) {
  while (!a.stack.empty()) {
    Frame& f = a.stack.back();
    if (f.farm < 0 && f.at >= f.items->size()) {
      if (f.loop >= 0 && ++f.iter < f.iters) {
        f.at = 0;
        continue;
      }
      a.stack.pop_back();
      continue;
    }
    if (f.items == &p_.top && plan_.leaves_out(f.at)) {  // a time step the skeleton leaves out
      ++f.at;
      continue;
    }
    if (f.farm >= 0) {  // the farm itself, after the items that go before it (execute_farm)
      const int32_t k = f.farm;
      a.stack.pop_back();
      const Farm& farm = plan_.farms[static_cast<size_t>(k)];
      if (!farm.takes_part(a.rank)) continue;
      a.farm = k;
      node = farm.symbols[a.rank == farm.master ? 0 : 2];
      return true;
    }
    if (f.items == &p_.top && plan_.farm_at(f.at) >= 0) {  // a farm's items: before, the farm, after
      const int32_t k = plan_.farm_at(f.at);
      const Farm& farm = plan_.farms[static_cast<size_t>(k)];
      f.at = farm.end;
      Frame after, at, before;
      after.items = &farm.after_nodes;
      at.farm = k;
      before.items = &farm.before_nodes;
      a.stack.push_back(after);
      a.stack.push_back(at);
      a.stack.push_back(before);
      continue;
    }
    const uint32_t n = (*f.items)[f.at];
    const FoldedNode& fn = p_.nodes[n];
    const bool taken_by_loop = !f.step && f.loop >= 0 && f.at == 0 && f.iter == 0;
    if (fn.is_loop()) {
      ++f.at;
      const uint64_t iters = plan_.iterations(p_, n);
      if (iters == 0) continue;
      charge_computation(a, n, taken_by_loop);
      Frame loop;
      loop.items = &fn.body;
      loop.loop = n;
      loop.iters = iters;
      loop.count = fn.count;
      loop.stride = plan_.cut_of[n] >= 0 ? f.stride * static_cast<double>(fn.count) / static_cast<double>(iters)
                                         : f.stride;
      a.stack.push_back(loop);
      continue;
    }
    if (!f.step) {
      auto step = plan_.steps.find(n);
      if (step != plan_.steps.end()) {
        f.at += step->second.nodes.size();
        Frame s;
        s.items = &step->second.order[a.rank];
        s.stride = f.stride;
        s.step = true;
        a.stack.push_back(s);
        continue;
      }
    }
    ++f.at;
    const std::vector<uint32_t>& ranks = event(n).ranks;
    if (f.step || std::binary_search(ranks.begin(), ranks.end(), a.rank)) {
      charge_computation(a, n, taken_by_loop);
      node = n;
      return true;
    }
  }
  return false;
}

std::vector<std::pair<uint32_t, uint64_t>> Checker::loops_of(const Actor& a) const {
  std::vector<std::pair<uint32_t, uint64_t>> out;
  for (const Frame& f : a.stack)
    if (f.loop >= 0) out.emplace_back(static_cast<uint32_t>(f.loop), f.iter);
  return out;
}

// ------------------------------------------------------------------ values

uint64_t Checker::iteration(const Actor& a) const {
  for (size_t i = a.stack.size(); i-- > 0;)
    if (a.stack[i].loop >= 0) return a.stack[i].iter;
  return 0;
}

// Emitter::cycle_index: the application's instance of the node mod period
// (the open loops' iterations weighed by the application's iterations of
// the loops inside), or the innermost loop's iteration mod period.
uint64_t Checker::cycle_index(const Actor& a, bool by_instance, uint64_t period) const {
  if (period == 0) return 0;
  if (!by_instance) return iteration(a) % period;
  uint64_t index = 0, inner = 1 % period;
  for (size_t i = a.stack.size(); i-- > 0;) {
    const Frame& f = a.stack[i];
    if (f.loop < 0) continue;
    index = (index + inner * (f.iter % period)) % period;
    inner = inner * (f.count % period) % period;
  }
  return index;
}

// A count or tag with a rule (Emitter::count): a cycle's entry, or
// llround(a) + b * the node's instance counter where some rank's value is
// linear, llround(a) + b * the innermost loop's iteration where the rank's is
// linear in it, else llround(a) (a receive's capacity: the largest value of any
// rank where they wobble around a mean, CountRule::capacity()).
int64_t Checker::rule_value(const Actor& a, uint32_t n, Param pm, bool capacity) const {
  const CountRule& rule = *p_.nodes[n].rule(pm);
  const uint32_t r = a.rank;
  if (rule.is_cycle()) {
    if (r >= rule.kind.size() || !cycles(rule.kind[r])) return 0;
    return rule.cycle[r * rule.period + cycle_index(a, rule.by_instance(), rule.period)];
  }
  const double base = static_cast<double>(std::llround(r < rule.a.size() ? rule.a[r] : 0));
  if (r < rule.kind.size() && rule.kind[r] == RuleKind::kLoopLinear)  // at the innermost loop's iteration
    return static_cast<int64_t>(static_cast<int>(base + rule.b[r] * static_cast<double>(iteration(a))));
  if (capacity && r < rule.kind.size() && rule.kind[r] == RuleKind::kMean && r < rule.max.size())
    return static_cast<int64_t>(std::ceil(rule.capacity()));
  bool linear = false;
  for (uint32_t x : event(n).ranks) linear |= x < rule.kind.size() && rule.kind[x] == RuleKind::kLinear && rule.b[x] != 0;
  if (!linear) return static_cast<int64_t>(base);
  const double slope = r < rule.kind.size() && rule.kind[r] == RuleKind::kLinear ? rule.b[r] : 0.0;
  auto it = a.counter.find(n);
  const double i = it == a.counter.end() ? 0.0 : it->second;
  return static_cast<int64_t>(static_cast<int>(base + slope * i));
}

// Emitter::peer: the world rank of the peer, kAnyPeer, or kNoPeer.
int64_t Checker::peer_of(const Actor& a, uint32_t n, Param pm, bool any_source) const {
  if (any_source) return kAnyPeer;
  const MergedEvent& e = event(n);
  if (e.params[static_cast<size_t>(pm)].kind == ParamKind::kAbsent) return kNoPeer;
  int64_t w;
  if (const CountRule* rule = p_.nodes[n].rule(pm)) {
    const uint32_t r = a.rank;
    if (rule->is_cycle()) w = rule_value(a, n, pm, false);
    else w = r < rule->a.size() ? std::llround(rule->a[r]) : kProcNull;
  } else {
    w = m_.value(e, pm, a.rank);
  }
  return w < 0 || w >= static_cast<int64_t>(P_) ? kNoPeer : w;
}

// Emitter::count for a tag (rtag: any tag where receives take any).
int64_t Checker::tag_of(const Actor& a, uint32_t n, Param pm, bool receive) const {
  if (receive && plan_.any_tag_receives) return kAnyPeer;
  const MergedEvent& e = event(n);
  if (e.params[static_cast<size_t>(pm)].kind == ParamKind::kAbsent) return 0;
  const int64_t t = p_.nodes[n].rule(pm) ? rule_value(a, n, pm, false) : m_.value(e, pm, a.rank);
  return t == -1 ? kAnyPeer : t;
}

uint64_t Checker::bytes_of(const Actor& a, uint32_t n, Param count, int64_t dtype, bool capacity) const {
  const MergedEvent& e = event(n);
  if (e.params[static_cast<size_t>(count)].kind == ParamKind::kAbsent) return 0;
  int64_t c = p_.nodes[n].rule(count) ? rule_value(a, n, count, capacity) : m_.value(e, count, a.rank);
  const int64_t size = dtype >= 0 && static_cast<size_t>(dtype) < m_.datatypes.size()
                           ? std::max<int64_t>(m_.datatypes[static_cast<size_t>(dtype)].size, 0)
                           : 1;
  if (capacity) c = std::max(c, plan_.room_count(n, size));
  return static_cast<uint64_t>(std::max<int64_t>(c, 0)) * static_cast<uint64_t>(size);
}

// ------------------------------------------------------------------ communicators

uint32_t Checker::context_id(int64_t symbol, int64_t group, uint64_t generation, bool creating, uint32_t size) {
  auto [it, fresh] = context_ids_.try_emplace({symbol, group, generation, creating}, 0);
  if (fresh) {
    it->second = static_cast<uint32_t>(contexts_.size());
    contexts_.emplace_back();
    contexts_.back().size = size;
    contexts_.back().symbol = symbol;
  }
  return it->second;
}

// The context of communicator symbol c on actor a (-1 after a failure):
// MPI_COMM_WORLD for 0 and for communicators the tracer did not see made,
// the rank's own for MPI_COMM_SELF, else the one it made last.
int64_t Checker::context_of(uint32_t a, int64_t c, uint32_t node) {
  Actor& ac = actors_[a];
  if (c < 0 || c == 0) return context_id(0, 0, 0, false, P_);
  if (c == 1) return context_id(1, ac.rank, 0, false, 1);
  auto it = ac.comm.find(c);
  if (it != ac.comm.end()) return it->second;
  if (plan_.inherits_comms && static_cast<size_t>(c) < m_.comms.size()) {  // made by the first thread
    const CommSymbol& s = m_.comms[static_cast<size_t>(c)];
    const int32_t g = ac.rank < s.group_of.size() ? s.group_of[ac.rank] : -1;
    if (g >= 0)
      return ac.comm[c] = context_id(c, g, 0, false, static_cast<uint32_t>(s.groups[static_cast<size_t>(g)].size()));
  }
  ac.node = node;
  fail(CheckProblem::kBadCommunicator,
       "rank " + std::to_string(ac.rank) + " calls " + func_name(identity(node).func) + " on " + comm_name(c) +
           ", which it does not hold (not made yet, freed, or not a member)",
       {a});
  return -1;
}

std::string Checker::comm_name(int64_t c) const {
  if (c <= 0) return "MPI_COMM_WORLD";
  if (c == 1) return "MPI_COMM_SELF";
  const CommSymbol& s = m_.comms.at(static_cast<size_t>(c));
  return std::string("the communicator ") + (func_name(s.created_by) ? func_name(s.created_by) : "?") + " made (c" +
         std::to_string(c) + ")";
}

// A call that makes a communicator has completed: the member gets the group
// the trace recorded for it (none where it was left out).
void Checker::make_communicator(uint32_t a, uint32_t node) {
  Actor& ac = actors_[a];
  const int64_t c = m_.value(event(node), Param::new_comm, ac.rank);
  if (c < 2 || static_cast<size_t>(c) >= m_.comms.size()) return;
  const CommSymbol& s = m_.comms[static_cast<size_t>(c)];
  const int32_t g = ac.rank < s.group_of.size() ? s.group_of[ac.rank] : -1;
  if (g < 0) return;
  const uint64_t gen = ac.generation[c]++;
  ac.comm[c] = context_id(c, g, gen, false, static_cast<uint32_t>(s.groups[static_cast<size_t>(g)].size()));
}

// ------------------------------------------------------------------ requests

uint32_t Checker::new_request(uint32_t a, uint32_t node, ReqKind kind) {
  uint32_t id;
  if (!free_reqs_.empty()) {
    id = free_reqs_.back();
    free_reqs_.pop_back();
    reqs_[id] = Request();
  } else {
    id = static_cast<uint32_t>(reqs_.size());
    reqs_.emplace_back();
  }
  reqs_[id].kind = kind;
  reqs_[id].actor = a;
  reqs_[id].node = node;
  return id;
}

uint32_t Checker::post_send(uint32_t a, uint32_t node, const Message& msg, SendMode mode, bool persistent) {
  const uint32_t s = new_request(a, node, ReqKind::kSend);
  reqs_[s].msg = msg;
  reqs_[s].mode = mode;
  reqs_[s].persistent = persistent;
  if (persistent) reqs_[s].state = ReqState::kInactive;
  else start(s);
  return s;
}

uint32_t Checker::post_recv(uint32_t a, uint32_t node, const Message& msg, bool persistent) {
  const uint32_t r = new_request(a, node, ReqKind::kRecv);
  reqs_[r].msg = msg;
  reqs_[r].persistent = persistent;
  if (persistent) reqs_[r].state = ReqState::kInactive;
  else start(r);
  return r;
}

// A message request becomes active: matched if it can be; a send short
// enough for the eager protocol (or buffered) completes at once.
void Checker::start(uint32_t id) {
  Request& q = reqs_[id];
  q.state = ReqState::kActive;
  q.matched = false;
  q.posted = q.done_at = actors_[q.actor].clock;
  if (q.msg.src == kNoPeer || q.msg.dst == kNoPeer) {  // MPI_PROC_NULL: done at once
    q.state = ReqState::kDone;
    return;
  }
  ++open_;
  if (q.kind == ReqKind::kRecv) {
    match_recv(id);
    return;
  }
  match_send(id);
  Request& s = reqs_[id];
  if (s.matched) return;
  const bool eager = s.mode == SendMode::kBuffered ||
                     (s.mode == SendMode::kStandard && s.msg.bytes <= opt_.eager_bytes);
  if (eager) {
    if (s.mode == SendMode::kStandard) out_.eager_needed = std::max(out_.eager_needed, s.msg.bytes);
    s.state = ReqState::kDone;  // the message stays to be received (open_ counts it)
  }
}

void Checker::complete(uint32_t id) {
  Request& q = reqs_[id];
  if (q.state == ReqState::kDone) return;
  q.state = ReqState::kDone;
  if (q.waiter >= 0) {
    const uint32_t w = static_cast<uint32_t>(q.waiter);
    q.waiter = -1;
    if (actors_[w].any_need > 0 && !took_any(actors_[w], id)) return;
    if (actors_[w].waiting > 0 && --actors_[w].waiting == 0 && !queued_[w]) {
      queued_[w] = 1;
      runnable_.push_back(w);
    }
  }
}

// Actor a waits for request id (nothing to wait for where it is done); the
// request is released once a runs again, unless it is still a persistent
// one's, or a message sent and not yet received.
void Checker::wait_for(uint32_t a, uint32_t id) {
  Request& q = reqs_[id];
  if (!q.persistent) actors_[a].finished.push_back(id);
  if (q.state != ReqState::kActive) return;
  q.waiter = static_cast<int32_t>(a);
  ++actors_[a].waiting;
}

// skel_pool_any(): the j-th send-pool take of a completion call, from pool
// g: where the call has not completed more than j sends yet, it completes
// every pending send there that is done and, if `wait` (MPI_Wait*, not
// MPI_Test*) and still short, waits for the first to complete, once the
// actor runs again. The waiting takes of one call wait together
// (Actor::any_of).
void Checker::take_any(uint32_t a, int32_t g, bool wait, uint32_t j) {
  Actor& ac = actors_[a];
  if (ac.pool_taken > j) return;
  const size_t base = plan_.slots.ring_base[static_cast<size_t>(g)];
  std::vector<uint32_t> pending;
  for (size_t s = base; s < base + ac.pool_len[static_cast<size_t>(g)]; ++s) {
    const uint32_t id = static_cast<uint32_t>(ac.slot[s]);
    if (reqs_[id].state == ReqState::kActive) {
      pending.push_back(id);
      continue;
    }
    ac.slot[s] = -1;
    ac.finished.push_back(id);
    ++ac.pool_taken;
  }
  compact_pool(ac, g);
  if (!wait || ac.pool_taken > j || pending.size() <= ac.any_need) return;
  ++ac.pool_taken;
  if (ac.any_need++ > 0) return;
  ac.any_of = pending;
  ac.any_ring = g;
  for (uint32_t id : pending) reqs_[id].waiter = static_cast<int32_t>(a);
  ++ac.waiting;
}

// skel_pool_compact(): a send pool's pending sends first in its slots.
void Checker::compact_pool(Actor& ac, int32_t g) {
  const size_t base = plan_.slots.ring_base[static_cast<size_t>(g)];
  uint32_t& len = ac.pool_len[static_cast<size_t>(g)];
  const auto first = ac.slot.begin() + static_cast<std::ptrdiff_t>(base);
  const auto kept = std::stable_partition(first, first + len, [](int64_t id) { return id >= 0; });
  len = static_cast<uint32_t>(kept - first);
}

// A send the actor's takes (take_any) wait for completed: its slot is free.
// True once they have all they wait for (the others' waits withdrawn).
bool Checker::took_any(Actor& ac, uint32_t id) {
  auto it = std::find(ac.any_of.begin(), ac.any_of.end(), id);
  if (it == ac.any_of.end()) return true;
  ac.any_of.erase(it);
  const auto first = ac.slot.begin() + static_cast<std::ptrdiff_t>(plan_.slots.ring_base[static_cast<size_t>(ac.any_ring)]);
  std::replace(first, first + ac.pool_len[static_cast<size_t>(ac.any_ring)], static_cast<int64_t>(id), int64_t{-1});
  compact_pool(ac, ac.any_ring);
  ac.finished.push_back(id);
  if (--ac.any_need > 0) return false;
  for (uint32_t other : ac.any_of) reqs_[other].waiter = -1;
  ac.any_of.clear();
  return true;
}

void Checker::release_finished(Actor& a) {
  const double cost = a.node >= 0 ? call_ns(static_cast<uint32_t>(a.node)) : 0;
  for (uint32_t id : a.finished) {
    const Request& q = reqs_[id];
    if (q.state == ReqState::kDone) a.clock = std::max(a.clock, q.done_at + cost);
    if (q.state == ReqState::kDone && (q.kind == ReqKind::kCollective || q.matched || q.msg.src == kNoPeer))
      free_reqs_.push_back(id);
  }
  a.finished.clear();
}

void Checker::pair(uint32_t s, uint32_t r) {
  Request& send = reqs_[s];
  Request& recv = reqs_[r];
  send.matched = recv.matched = true;
  open_ -= 2;
  if (send.msg.bytes > recv.msg.bytes && recv.msg.roomy) {
    uint64_t& longest = out_.short_receives[recv.node];
    longest = std::max(longest, send.msg.bytes);
  } else if (send.msg.bytes > recv.msg.bytes && !failed_) {
    actors_[recv.actor].node = recv.node;
    actors_[send.actor].node = send.node;
    fail(CheckProblem::kTruncation,
         "a message of " + std::to_string(send.msg.bytes) + " bytes from rank " + std::to_string(send.msg.src) +
             " would be received into " + std::to_string(recv.msg.bytes) + " bytes on rank " +
             std::to_string(send.msg.dst) + " (MPI_ERR_TRUNCATE)",
         {recv.actor, send.actor});
  }
  const double both = std::max(send.posted, recv.posted);
  recv.done_at = both;
  if (send.msg.bytes > kTimedEagerBytes || send.mode == SendMode::kSynchronous) send.done_at = both;
  complete(r);
  complete(s);
}

// MPI_Cancel: a message or receive not matched yet is withdrawn, and its
// request completes (cancelled); one matched already completes as it does
// (the cancel fails). A program that cancels its receives posted in advance
// (a particle code's, at the end of each step) waits for them next.
void Checker::cancel(uint32_t id) {
  Request& q = reqs_[id];
  if (q.kind == ReqKind::kCollective || q.matched || q.state != ReqState::kActive) return;
  Mailbox& b = box(q.msg.ctx, q.msg.dst);
  std::vector<uint32_t>& queue = q.kind == ReqKind::kRecv ? b.recvs : b.sends;
  auto at = std::find(queue.begin(), queue.end(), id);
  if (at == queue.end()) return;
  queue.erase(at);
  if (q.kind == ReqKind::kRecv && q.msg.src == kAnyPeer && b.wildcards > 0) --b.wildcards;
  q.matched = true;  // nothing more to match: released once waited for
  --open_;
  complete(id);
  if (b.wildcards == 0 && !b.sends.empty() && !b.recvs.empty()) match_in_order(b);  // held back by a wildcard
}

static bool fits(const Message& recv, const Message& send) {
  return (recv.src == kAnyPeer || recv.src == send.src) && (recv.tag == kAnyPeer || recv.tag == send.tag);
}

void Checker::match_send(uint32_t s) {
  const Message& m = reqs_[s].msg;
  Mailbox& b = box(m.ctx, m.dst);
  if (b.wildcards > 0) {  // matched when no rank can move (resolve_wildcards)
    b.sends.push_back(s);
    if (!b.probers.empty()) wake_probers(m.ctx, m.dst);
    return;
  }
  for (size_t i = 0; i < b.recvs.size(); ++i)
    if (fits(reqs_[b.recvs[i]].msg, m)) {
      const uint32_t r = b.recvs[i];
      b.recvs.erase(b.recvs.begin() + static_cast<long>(i));
      pair(s, r);
      return;
    }
  b.sends.push_back(s);
  if (!b.probers.empty()) wake_probers(m.ctx, m.dst);
}

void Checker::match_recv(uint32_t r) {
  const Message& m = reqs_[r].msg;
  Mailbox& b = box(m.ctx, m.dst);
  if (m.src == kAnyPeer) {
    ++b.wildcards;
    if (!b.listed) {
      b.listed = true;
      wild_boxes_.push_back(key(m.ctx, m.dst));
    }
  }
  if (b.wildcards > 0) {
    b.recvs.push_back(r);
    return;
  }
  for (size_t i = 0; i < b.sends.size(); ++i)
    if (fits(m, reqs_[b.sends[i]].msg)) {
      const uint32_t s = b.sends[i];
      b.sends.erase(b.sends.begin() + static_cast<long>(i));
      pair(s, r);
      return;
    }
  b.recvs.push_back(r);
}

// The receives of a mailbox take their messages in the order they were
// posted, each the first message that fits from its source (non-overtaking);
// a wildcard receive with messages from several sources to choose from takes
// the first posted, or the one the forced choices say. True if any matched.
bool Checker::match_in_order(Mailbox& b) {
  bool matched = false;
  for (size_t i = 0; i < b.recvs.size();) {
    const uint32_t r = b.recvs[i];
    const Message m = reqs_[r].msg;
    std::vector<size_t> candidates;  // the first fitting send of each source, in the order sent
    std::vector<int64_t> sources;
    for (size_t j = 0; j < b.sends.size(); ++j) {
      const Message& s = reqs_[b.sends[j]].msg;
      if (!fits(m, s) || std::find(sources.begin(), sources.end(), s.src) != sources.end()) continue;
      sources.push_back(s.src);
      candidates.push_back(j);
    }
    if (candidates.empty()) {
      ++i;
      continue;
    }
    size_t pick = 0;
    if (m.src == kAnyPeer && candidates.size() > 1) {
      const uint64_t c = next_choice_++;
      choices_.emplace_back(c, static_cast<uint32_t>(candidates.size()));
      auto f = forced_.find(c);
      if (f != forced_.end()) pick = std::min<size_t>(f->second, candidates.size() - 1);
    }
    const uint32_t s = b.sends[candidates[pick]];
    b.sends.erase(b.sends.begin() + static_cast<long>(candidates[pick]));
    b.recvs.erase(b.recvs.begin() + static_cast<long>(i));
    if (m.src == kAnyPeer) --b.wildcards;
    pair(s, r);
    matched = true;
    if (failed_) return true;
  }
  return matched;
}

// No rank can move: every message a pending wildcard receive could take is
// posted. The mailboxes with one match in order; false if nothing matched.
bool Checker::resolve_wildcards() {
  std::vector<uint64_t> keys;
  keys.swap(wild_boxes_);
  std::sort(keys.begin(), keys.end());
  bool matched = false;
  for (uint64_t k : keys) {
    Mailbox& b = boxes_[k];
    b.listed = false;
    matched |= match_in_order(b);
    if (b.wildcards > 0) {
      b.listed = true;
      wild_boxes_.push_back(k);
    }
    if (failed_) break;
  }
  return matched;
}

void Checker::wake_probers(uint32_t ctx, int64_t dst) {
  Mailbox& b = box(ctx, dst);
  for (size_t i = 0; i < b.probers.size();) {
    const uint32_t a = b.probers[i];
    bool found = false;
    for (uint32_t s : b.sends) found |= fits(actors_[a].probe, reqs_[s].msg);
    if (!found) {
      ++i;
      continue;
    }
    b.probers.erase(b.probers.begin() + static_cast<long>(i));
    actors_[a].probe_box = -1;
    if (!queued_[a]) {
      queued_[a] = 1;
      runnable_.push_back(a);
    }
  }
}

// ------------------------------------------------------------------ collectives

uint32_t Checker::post_collective(uint32_t a, int64_t node, uint32_t ctx, uint32_t func, int64_t root) {
  Context& c = contexts_[ctx];
  const uint64_t k = actors_[a].coll_next[ctx]++;
  const size_t at = static_cast<size_t>(k - c.base);
  if (at == c.slots.size()) {
    CollSlot s;
    s.func = func;
    s.root = root;
    s.first_actor = a;
    s.first_node = node;
    c.slots.push_back(s);
  }
  CollSlot& s = c.slots[at];
  const uint32_t id = new_request(a, static_cast<uint32_t>(std::max<int64_t>(node, 0)), ReqKind::kCollective);
  if (s.func != func || s.root != root) {
    actors_[a].node = node;
    actors_[s.first_actor].node = s.first_node;
    fail(CheckProblem::kCollectiveMismatch,
         "collective calls differ on " + comm_name(c.symbol) + ": rank " + std::to_string(actors_[a].rank) +
             " calls " + func_name(func) + " where rank " + std::to_string(actors_[s.first_actor].rank) + " calls " +
             func_name(s.func) + (s.func == func ? " with another root" : ""),
         {a, s.first_actor});
    return id;
  }
  s.reqs.push_back(id);
  s.latest = std::max(s.latest, actors_[a].clock);
  if (call_class(func) == CallClass::kCommCreate || call_class(func) == CallClass::kCommCreateGroup)
    s.creates.emplace_back(a, static_cast<uint32_t>(node));
  if (++s.arrived == c.size) collective_done(ctx);
  return id;
}

// Every member has made the front collectives: they complete, in order.
void Checker::collective_done(uint32_t ctx) {
  // contexts_ may grow below (a communicator made): no reference kept across
  while (!contexts_[ctx].slots.empty() && contexts_[ctx].slots.front().arrived == contexts_[ctx].size) {
    CollSlot s = std::move(contexts_[ctx].slots.front());
    contexts_[ctx].slots.pop_front();
    ++contexts_[ctx].base;
    for (const auto& [a, node] : s.creates) make_communicator(a, node);
    for (uint32_t id : s.reqs) {
      reqs_[id].done_at = s.latest;
      complete(id);
    }
  }
}

// ------------------------------------------------------------------ slots

// skel_slot(): the slot of the back-th latest request of a ring (a ring of
// one: its one slot); -1 for a request the trace did not see.
int64_t Checker::slot_of(const Actor& a, const RequestRef& ref) const {
  if (ref.ring < 0) return -1;
  const size_t g = static_cast<size_t>(ref.ring);
  if (ref.pool != PoolRef::kNo) {  // skel_pool_slot()
    const std::deque<int64_t>& q = ref.pool == PoolRef::kTake ? a.pool_started[g] : a.pool_done[g];
    return q.empty() ? -1 : q.front();
  }
  const int64_t size = plan_.slots.ring_size[g], base = plan_.slots.ring_base[g];
  if (size == 1) return base;
  return base + (((a.made[g] - static_cast<int64_t>(ref.back)) % size) + size) % size;
}

// A request-creating call's request goes to its ring's next slot
// (skel_new_req), or the ring's one slot.
void Checker::slot_put(uint32_t a, uint32_t node, uint32_t id) {
  Actor& ac = actors_[a];
  const int32_t g = plan_.slots.ring_of_node[node];
  if (g < 0) return;
  const int64_t size = plan_.slots.ring_size[static_cast<size_t>(g)];
  const int64_t base = plan_.slots.ring_base[static_cast<size_t>(g)];
  int64_t s = -1;
  uint32_t& pending = ac.pool_len[static_cast<size_t>(g)];
  // a send pool's: after its pending sends (all slots pending, beyond the most sends a rank made, the
  // skeleton waits for one where this takes the slot in turn)
  if (pool(g) == PoolKind::kSends && pending < size) {
    s = base + pending++;
    ++ac.made[static_cast<size_t>(g)];
  } else {
    s = size == 1 ? base : base + ac.made[static_cast<size_t>(g)]++ % size;
  }
  ac.slot[static_cast<size_t>(s)] = id;  // one still pending there is lost to the skeleton (MPI keeps it)
  if (pool(g) == PoolKind::kReceives) ac.pool_done[static_cast<size_t>(g)].push_back(s);  // made, not started
}

// skel_pool_moved(): a pool reference's slot goes from the queue it was
// taken from to the back of the other (a request taken is done, one
// started is started).
void Checker::pool_moved(Actor& ac, const RequestRef& ref) {
  if (ref.ring < 0 || ref.pool == PoolRef::kNo) return;
  const size_t g = static_cast<size_t>(ref.ring);
  std::deque<int64_t>& from = ref.pool == PoolRef::kTake ? ac.pool_started[g] : ac.pool_done[g];
  std::deque<int64_t>& to = ref.pool == PoolRef::kTake ? ac.pool_done[g] : ac.pool_started[g];
  if (from.empty()) return;
  to.push_back(from.front());
  from.pop_front();
}

// Wait*, Test* (each finished with a wait), Start*, Request_free, Cancel on
// the requests the node names for this rank.
void Checker::completion(uint32_t a, uint32_t node, CallClass c) {
  Actor& ac = actors_[a];
  const auto& refs = plan_.slots.refs[node];
  if (refs.empty() || ac.rank >= refs.size()) return;
  ac.pool_taken = 0;
  uint32_t takes = 0;  // send-pool references so far
  for (const RequestRef& ref : refs[ac.rank]) {
    if (ref.pool != PoolRef::kNo && pool(ref.ring) == PoolKind::kSends) {
      take_any(a, ref.ring, ref.pool == PoolRef::kTake, takes++);
      continue;
    }
    const int64_t s = slot_of(ac, ref);
    pool_moved(ac, ref);
    if (s < 0 || ac.slot[static_cast<size_t>(s)] < 0) {
      if (c == CallClass::kStart && (s >= 0 || ref.pool == PoolRef::kStart)) {
        ac.node = node;
        fail(CheckProblem::kBadRequest, "rank " + std::to_string(ac.rank) + " starts a request slot that is empty", {a});
        return;
      }
      continue;
    }
    const uint32_t id = static_cast<uint32_t>(ac.slot[static_cast<size_t>(s)]);
    Request& q = reqs_[id];
    if (c == CallClass::kStart) {
      if (!q.persistent || q.state == ReqState::kActive) {
        ac.node = node;
        fail(CheckProblem::kBadRequest,
             "rank " + std::to_string(ac.rank) + " starts a request that is " +
                 (q.persistent ? "still active" : "not persistent"),
             {a});
        return;
      }
      start(id);
    } else if (c == CallClass::kRequestFree) {
      ac.slot[static_cast<size_t>(s)] = -1;  // an active one goes on in the background
    } else if (c == CallClass::kCancel) {
      cancel(id);  // stays in its slot: its Wait*/Test* completes it
    } else {
      wait_for(a, id);
      if (!q.persistent) ac.slot[static_cast<size_t>(s)] = -1;
    }
  }
}

// skel_report() and MPI_Finalize: the requests still in the rank's slots
// are completed, then every rank meets in MPI_Finalize.
void Checker::finalize(uint32_t a) {
  Actor& ac = actors_[a];
  if (ac.phase == Phase::kRunning) {
    ac.phase = Phase::kCompleting;
    out_.expected_ns = std::max(out_.expected_ns, ac.clock);
    for (int64_t& id : ac.slot)
      if (id >= 0) {
        if (reqs_[static_cast<size_t>(id)].state == ReqState::kActive) wait_for(a, static_cast<uint32_t>(id));
        if (!reqs_[static_cast<size_t>(id)].persistent) id = -1;
      }
    return;
  }
  ac.phase = Phase::kFinalizing;
  const uint32_t world = context_id(0, 0, 0, false, P_);
  wait_for(a, post_collective(a, ac.node, world, kFunc_MPI_Finalize, kNone));
}

// ------------------------------------------------------------------ one call

// A farm (farm.h) completes once the master and every worker are in it: the
// master cannot end it before each worker has asked and been stopped, a
// worker waits for its answers. Checked as a barrier of its ranks, which
// asks more (a worker may be done before another has come): a program it
// lets through completes.
void Checker::execute_farm(uint32_t a, uint32_t n) {
  const size_t k = static_cast<size_t>(actors_[a].farm);
  actors_[a].farm = -1;
  const Farm& farm = plan_.farms[k];
  const uint32_t ctx = context_id(-2 - static_cast<int64_t>(k), 0, 0, false,
                                  static_cast<uint32_t>(farm.workers.size() + 1));
  wait_for(a, post_collective(a, n, ctx, kFunc_MPI_Barrier, kNone));
}

// One end of a point-to-point call of actor a at node n, as the C computes
// it: the communicator's context (context_of, which may fail), the peer
// (kAnyPeer for a wildcard receive, kNoPeer both ways for MPI_PROC_NULL),
// the tag, and the bytes (a receive's capacity: its largest count where
// they wobble (Emitter::call), but MPI_Sendrecv_replace sends and receives
// one count).
Message Checker::message_of(uint32_t a, uint32_t n, bool send, Param peer, Param tag, Param count, int64_t dtype,
                            bool any_source) {
  const Actor& ac = actors_[a];
  const Identity& id = identity(n);
  Message msg;
  const int64_t ctx = context_of(a, id.comm, n);
  msg.ctx = ctx < 0 ? 0 : static_cast<uint32_t>(ctx);
  const int64_t other = send ? peer_of(ac, n, peer, false) : peer_of(ac, n, peer, any_source);
  msg.src = send ? ac.rank : other;
  msg.dst = send ? other : ac.rank;
  if (other == kNoPeer) msg.src = msg.dst = kNoPeer;
  msg.tag = tag_of(ac, n, tag, !send);
  msg.roomy = !send && id.func != kFunc_MPI_Sendrecv_replace;  // one count both ways: not raised alone
  msg.bytes = bytes_of(ac, n, count, dtype, msg.roomy);
  return msg;
}

// Sends, receives (blocking, non-blocking, persistent) and MPI_Sendrecv*:
// their requests are posted, then waited for or put in their slots.
void Checker::execute_point_to_point(uint32_t a, uint32_t n, CallClass c) {
  const Identity& id = identity(n);
  const uint32_t f = id.func;
  const bool any = plan_.any_source(id, event(n), Param::peer);
  const bool any2 = plan_.any_source(id, event(n), Param::peer2);  // MPI_Sendrecv's receive
  const int64_t dtype2 = id.dtype2 >= 0 ? id.dtype2 : id.dtype;
  auto message = [&](bool send, Param peer, Param tag, Param count, int64_t dtype, bool any_source) {
    return message_of(a, n, send, peer, tag, count, dtype, any_source);
  };
  switch (c) {
    case CallClass::kSend:
      wait_for(a, post_send(a, n, message(true, Param::peer, Param::tag, Param::count, id.dtype, false), send_mode(f)));
      break;
    case CallClass::kIsend:
    case CallClass::kSendInit:
      slot_put(a, n, post_send(a, n, message(true, Param::peer, Param::tag, Param::count, id.dtype, false), send_mode(f),
                               c == CallClass::kSendInit));
      break;
    case CallClass::kRecv:
      wait_for(a, post_recv(a, n, message(false, Param::peer, Param::tag, Param::count, id.dtype, any)));
      break;
    case CallClass::kIrecv:
    case CallClass::kRecvInit:
      slot_put(a, n, post_recv(a, n, message(false, Param::peer, Param::tag, Param::count, id.dtype, any),
                               c == CallClass::kRecvInit));
      break;
    default: {  // CallClass::kSendrecv
      const bool replace = f == kFunc_MPI_Sendrecv_replace;
      const uint32_t s = post_send(a, n, message(true, Param::peer, Param::tag, Param::count, id.dtype, false),
                                   SendMode::kStandard);
      const uint32_t r = post_recv(a, n, replace ? message(false, Param::peer2, Param::tag2, Param::count, id.dtype, any2)
                                                 : message(false, Param::peer2, Param::tag2, Param::count2, dtype2, any2));
      wait_for(a, s);
      wait_for(a, r);
      break;
    }
  }
}

// MPI_Probe: returns at once where a message it fits is posted, else the
// actor waits in the mailbox (wake_probers).
void Checker::execute_probe(uint32_t a, uint32_t n) {
  Actor& ac = actors_[a];
  const Identity& id = identity(n);
  const bool any = plan_.any_source(id, event(n), Param::peer);
  Message m = message_of(a, n, false, Param::peer, Param::tag, Param::count, id.dtype, any);
  m.tag = tag_of(ac, n, Param::tag, false);  // MPI_Probe's tag is the traced one (Emitter::call: tag())
  if (m.src == kNoPeer) return;
  Mailbox& b = box(m.ctx, m.dst);
  bool found = false;
  for (uint32_t s : b.sends) found |= fits(m, reqs_[s].msg);
  if (!found) {
    ac.probe = m;
    ac.probe_box = static_cast<int64_t>(key(m.ctx, m.dst));
    b.probers.push_back(a);
  }
}

// Collectives, blocking or not, and the calls that make communicators over
// their parent: on the call's communicator (the window's, the file's for
// the calls that name none), else MPI_COMM_WORLD. MPI_Comm_create_group is
// a collective over the new communicator's members.
void Checker::execute_collective(uint32_t a, uint32_t n, CallClass c) {
  Actor& ac = actors_[a];
  const Identity& id = identity(n);
  const uint32_t f = id.func;
  if (c == CallClass::kCommCreateGroup) {
    const int64_t nc = m_.value(event(n), Param::new_comm, ac.rank);
    if (nc < 2 || static_cast<size_t>(nc) >= m_.comms.size()) return;
    const CommSymbol& s = m_.comms[static_cast<size_t>(nc)];
    const int32_t g = ac.rank < s.group_of.size() ? s.group_of[ac.rank] : -1;
    if (g < 0) return;
    const uint32_t ctx = context_id(nc, g, ac.generation[nc], true,
                                    static_cast<uint32_t>(s.groups[static_cast<size_t>(g)].size()));
    wait_for(a, post_collective(a, n, ctx, f, kNone));
    return;
  }
  int64_t ctx;
  if (f == kFunc_MPI_Win_free || f == kFunc_MPI_Win_fence) ctx = ac.win_ctx;
  else if (id.comm < 0 && f >= kFunc_MPI_File_close && f <= kFunc_MPI_File_sync) ctx = ac.file_ctx;
  else ctx = context_of(a, id.comm, n);
  if (ctx < 0) ctx = context_of(a, 0, n);
  if (f == kFunc_MPI_Win_create) ac.win_ctx = ctx;
  if (f == kFunc_MPI_File_open) ac.file_ctx = ctx;
  const uint32_t r = post_collective(a, n, static_cast<uint32_t>(ctx), f, id.root);
  if (c == CallClass::kIcollective) slot_put(a, n, r);
  else wait_for(a, r);
}

// Actor a makes the call at event node n (or, about to run a farm, the
// farm): what it posts, waits for or completes, by the call's class; then
// the node's instance counter (n<id>_i += stride) where a linear rule
// reads it.
void Checker::execute(uint32_t a, uint32_t n) {
  Actor& ac = actors_[a];
  ac.node = n;
  ++out_.calls;
  ac.clock += call_ns(n);
  if (ac.farm >= 0) return execute_farm(a, n);
  const CallClass c = call_class(identity(n).func);
  switch (c) {
    case CallClass::kSend:
    case CallClass::kIsend:
    case CallClass::kSendInit:
    case CallClass::kRecv:
    case CallClass::kIrecv:
    case CallClass::kRecvInit:
    case CallClass::kSendrecv:
      execute_point_to_point(a, n, c);
      break;
    case CallClass::kProbe:
      execute_probe(a, n);
      break;
    case CallClass::kStart:
    case CallClass::kComplete:
    case CallClass::kRequestFree:
    case CallClass::kCancel:
      completion(a, n, c);
      break;
    case CallClass::kCollective:
    case CallClass::kIcollective:
    case CallClass::kCommCreate:
    case CallClass::kCommCreateGroup:
      execute_collective(a, n, c);
      break;
    case CallClass::kCommFree:
      if (identity(n).comm >= 2) ac.comm.erase(identity(n).comm);
      break;
    case CallClass::kFinalize:
      ac.returns_after_finalize = event(n).ranks.size() < P_;
      finalize(a);
      break;
    default:  // MPI_Init, MPI_Abort, local calls
      break;
  }
  for (const CountRule& rule : p_.nodes[n].rules)
    if (!rule.is_cycle()) {
      ac.counter[n] += ac.stack.empty() ? 1.0 : ac.stack.back().stride;
      break;
    }
}

// ------------------------------------------------------------------ timing

// The computation before node n on actor a's rank, as the emitter writes it
// (FoldedNode's timing model): none where the loop around took it (the
// first item of its first iteration), none for MPI_Init, 1/K where the plan
// shortens it; with the time the rank slept in it.
void Checker::charge_computation(Actor& a, uint32_t n, bool taken_by_loop) {
  if (taken_by_loop) return;
  const FoldedNode& fn = p_.nodes[n];
  if (!fn.is_loop()) {
    const uint32_t f = identity(n).func;
    if (f == kFunc_MPI_Init || f == kFunc_MPI_Init_thread) return;
  }
  double ns = computation_ns(p_, fn, a.rank);
  if (shortened_[n] && plan_.shortened_by > 0) ns /= static_cast<double>(plan_.shortened_by);
  if (a.rank < fn.blocked.size() && fn.blocked[a.rank].n > 0) ns += fn.blocked[a.rank].mean;
  a.clock += ns;
}

// A call's own time: the least mean duration of the ranks that make it
// (the others' hold their waits); where one rank alone makes it (a farm
// master's receive from any worker), the shortest at any node of the same
// call on that rank, as its mean holds its waits (a 2-rank farm was
// expected twice its traced time), and so does its shortest where the
// node is one call, not folded (a master's 200 receives from any worker
// that did not fold, each a node of its own: 0.99 s expected for a
// skeleton that ran 0.74 s). The shortest on every call would leave out
// what ranks that share cores wait for a core in them (PENNANT, 8 ranks
// on 2 cores: 0.070 s expected, 0.151 measured). None for MPI_Init and
// MPI_Finalize.
double Checker::call_ns(uint32_t n) {
  double& ns = call_ns_[n];
  if (ns >= 0) return ns;
  ns = 0;
  const uint32_t f = identity(n).func;
  if (f == kFunc_MPI_Init || f == kFunc_MPI_Init_thread || f == kFunc_MPI_Finalize) return ns;
  const FoldedNode& fn = p_.nodes[n];
  bool any = false;
  for (uint32_t r : event(n).ranks)
    if (r < fn.dur.size() && fn.dur[r].n > 0) {
      const double d = event(n).ranks.size() == 1 ? alone_ns_.at(alone_key(event(n).identity, r)) : fn.dur[r].mean;
      ns = any ? std::min(ns, d) : d;
      any = true;
    }
  ns = std::max(0.0, ns);
  return ns;
}

// ------------------------------------------------------------------ outcome

std::string Checker::waits_for(uint32_t a) const {
  const Actor& ac = actors_[a];
  if (ac.probe_box >= 0)
    return "a message from " + (ac.probe.src == kAnyPeer ? std::string("any rank") : "rank " + std::to_string(ac.probe.src)) +
           " to probe";
  for (const Request& q : reqs_) {
    if (q.waiter != static_cast<int32_t>(a) || q.state != ReqState::kActive) continue;
    const std::string tag = q.msg.tag == kAnyPeer ? "any tag" : "tag " + std::to_string(q.msg.tag);
    if (q.kind == ReqKind::kRecv)
      return "a message from " + (q.msg.src == kAnyPeer ? std::string("any rank") : "rank " + std::to_string(q.msg.src)) +
             " (" + tag + ")";
    if (q.kind == ReqKind::kSend) return "rank " + std::to_string(q.msg.dst) + " to receive its message (" + tag + ")";
    return "the other members of its communicator";
  }
  return "nothing it can name";
}

void Checker::fail(CheckProblem what, const std::string& message, std::vector<uint32_t> actors) {
  if (failed_) return;
  failed_ = true;
  out_.problem = what;
  out_.at.clear();
  for (uint32_t a : actors) out_.at.push_back({actors_[a].rank, actors_[a].node, loops_of(actors_[a])});
  out_.message = message + (out_.at.empty() ? "" : ": " + describe_position(p_, out_.at.front()));
}

void Checker::report_deadlock() {
  std::vector<uint32_t> blocked;
  for (uint32_t a = 0; a < actors_.size(); ++a)
    if (actors_[a].phase != Phase::kDone) blocked.push_back(a);
  std::string text = "the skeleton would hang: " + std::to_string(blocked.size()) + " of " + std::to_string(P_) +
                     " ranks wait for ever";
  for (size_t i = 0; i < blocked.size() && i < 3; ++i) {
    const Actor& ac = actors_[blocked[i]];
    const CheckPosition at{ac.rank, ac.node, loops_of(ac)};
    text += std::string(i ? "; " : ": ") + "rank " + std::to_string(ac.rank) + " in " + describe_position(p_, at) +
            " waits for " + waits_for(blocked[i]);
  }
  failed_ = true;
  out_.problem = CheckProblem::kDeadlock;
  out_.message = text;
  for (uint32_t a : blocked) out_.at.push_back({actors_[a].rank, actors_[a].node, loops_of(actors_[a])});
}

// Every rank is in MPI_Finalize: what is still open is named. A message
// sent eagerly and never received is only counted (an MPI drops it at
// MPI_Finalize); a request still active (a receive never matched, one
// whose slot was taken by another before it was waited for) fails.
void Checker::report_open() {
  for (const Request& q : reqs_) {
    const bool message = q.kind != ReqKind::kCollective && q.state != ReqState::kInactive && !q.matched &&
                         q.msg.src != kNoPeer;
    if (message && q.kind == ReqKind::kSend && q.state == ReqState::kDone) {
      ++out_.unreceived;
      continue;
    }
    if (!message && q.state != ReqState::kActive) continue;
    Actor& ac = actors_[q.actor];
    ac.node = q.node;
    ac.stack.clear();  // the loops are left: name the call only
    const std::string what =
        q.kind == ReqKind::kSend ? "a message to rank " + std::to_string(q.msg.dst) + " is never received"
        : q.kind == ReqKind::kRecv
            ? "a receive from " + (q.msg.src == kAnyPeer ? std::string("any rank") : "rank " + std::to_string(q.msg.src)) +
                  " is never matched"
            : "a collective request is never completed";
    fail(CheckProblem::kOpenAtFinalize, "at MPI_Finalize, rank " + std::to_string(ac.rank) + ": " + what, {q.actor});
    return;
  }
}

CheckResult Checker::run() {
  const size_t slots = std::max<size_t>(1, plan_.slots.num_slots);
  call_ns_.assign(p_.nodes.size(), -1);
  for (uint32_t n = 0; n < p_.nodes.size(); ++n) {
    const FoldedNode& fn = p_.nodes[n];
    if (fn.is_loop() || event(n).ranks.size() != 1) continue;
    const uint32_t r = event(n).ranks[0];
    if (r >= fn.dur.size() || fn.dur[r].n == 0) continue;
    auto [at, fresh] = alone_ns_.emplace(alone_key(event(n).identity, r), fn.dur[r].min);
    if (!fresh) at->second = std::min(at->second, fn.dur[r].min);
  }
  shortened_.assign(p_.nodes.size(), 0);
  for (const Plan::Shortened& sh : plan_.shortened) shortened_[sh.node] = 1;
  actors_.resize(P_);
  queued_.assign(P_, 1);
  for (uint32_t r = 0; r < P_; ++r) {
    Actor& a = actors_[r];
    a.rank = r;
    a.slot.assign(slots, -1);
    a.made.assign(std::max<size_t>(1, plan_.slots.ring_size.size()), 0);
    a.pool_started.assign(plan_.slots.ring_size.size(), {});
    a.pool_len.assign(plan_.slots.ring_size.size(), 0);
    a.pool_done.assign(plan_.slots.ring_size.size(), {});
    Frame top;
    top.items = &p_.top;
    a.stack.push_back(top);
    runnable_.push_back(r);
  }
  constexpr int kTurn = 64;  // calls an actor makes before the next one's turn
  while (!failed_) {
    if (runnable_.empty() && !(resolve_wildcards() && !runnable_.empty())) break;
    const uint32_t a = runnable_.front();
    runnable_.pop_front();
    queued_[a] = 0;
    Actor& ac = actors_[a];
    for (int k = 0; k < kTurn && !failed_; ++k) {
      if (ac.waiting > 0 || ac.probe_box >= 0 || ac.phase == Phase::kDone) break;
      if (!ac.finished.empty()) release_finished(ac);
      if (ac.phase == Phase::kCompleting) {
        finalize(a);
        continue;
      }
      if (ac.phase == Phase::kFinalizing) {
        ac.phase = Phase::kDone;
        break;
      }
      uint32_t n = 0;
      if (ac.returns_after_finalize || !next_event(ac, n)) {  // the end: skel_report, MPI_Finalize unless done
        ac.stack.clear();
        ac.node = -1;
        finalize(a);
        continue;
      }
      execute(a, n);
    }
    if (!failed_ && ac.waiting == 0 && ac.probe_box < 0 && ac.phase != Phase::kDone && !queued_[a]) {
      queued_[a] = 1;
      runnable_.push_back(a);
    }
  }
  if (failed_) return out_;
  if (std::any_of(actors_.begin(), actors_.end(), [](const Actor& x) { return x.phase != Phase::kDone; }))
    report_deadlock();
  else if (open_ > 0)
    report_open();
  return out_;
}

}  // namespace

const char* check_problem_name(CheckProblem p) {
  switch (p) {
    case CheckProblem::kNone: return "none";
    case CheckProblem::kDeadlock: return "deadlock";
    case CheckProblem::kCollectiveMismatch: return "collective mismatch";
    case CheckProblem::kOpenAtFinalize: return "open at MPI_Finalize";
    case CheckProblem::kTruncation: return "truncation";
    case CheckProblem::kBadRequest: return "bad request";
    case CheckProblem::kBadCommunicator: return "bad communicator";
  }
  return "?";
}

std::string describe_position(const FoldedProgram& p, const CheckPosition& at) {
  std::string s;
  if (at.node < 0) {
    s = "MPI_Finalize (at the program's end)";
  } else {
    const MergedTrace& m = p.symbols;
    const Identity& id = m.identities[m.events[static_cast<size_t>(p.nodes[static_cast<size_t>(at.node)].symbol)].identity];
    s = std::string(func_name(id.func) ? func_name(id.func) : "?") + " (n" + std::to_string(at.node) + ", " +
        m.callsite_name(id.callsite) + ")";
  }
  for (size_t i = at.loops.size(); i-- > 0;)
    s += std::string(i + 1 == at.loops.size() ? " in loop n" : ", loop n") + std::to_string(at.loops[i].first) +
         " at iteration " + std::to_string(at.loops[i].second);
  return s;
}

// The run with the first-posted sender for every wildcard choice, then
// runs that each take another sender at one choice (the first choices
// first, opt.wildcard_runs at most): a skeleton must complete whichever
// message a wildcard receive takes.
CheckResult check_completion(const FoldedProgram& p, const Plan& plan, const CheckOptions& opt) {
  const std::map<uint64_t, uint32_t> none;
  Checker first(p, plan, opt, none);
  CheckResult out = first.run();
  out.wildcard_choices = first.choices().size();
  if (!out.ok()) return out;
  uint32_t runs = 0;
  for (const auto& [choice, candidates] : first.choices()) {
    for (uint32_t other = 1; other < candidates && other <= 2; ++other) {
      if (runs++ >= opt.wildcard_runs) return out;
      const std::map<uint64_t, uint32_t> forced{{choice, other}};
      CheckResult r = Checker(p, plan, opt, forced).run();
      out.eager_needed = std::max(out.eager_needed, r.eager_needed);
      out.unreceived = std::max(out.unreceived, r.unreceived);
      for (const auto& [node, bytes] : r.short_receives)
        out.short_receives[node] = std::max(out.short_receives[node], bytes);
      ++out.wildcard_runs;
      if (!r.ok()) {
        r.message = "where a receive from MPI_ANY_SOURCE takes another sender's message than the first posted: " +
                    r.message;
        r.wildcard_runs = out.wildcard_runs;
        r.wildcard_choices = out.wildcard_choices;
        return r;
      }
    }
  }
  return out;
}

}  // namespace skt::gen
