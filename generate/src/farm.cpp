// Finding dynamic master-worker farms in a folded program (farm.h).
#include "farm.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <map>

#include "plan.h"
#include "skel/skel_funcs.h"

namespace skt::gen {

bool Farm::takes_part(uint32_t r) const {
  return r == master || std::binary_search(workers.begin(), workers.end(), r);
}

namespace {

// Calls of all ranks the finder walks at most (the application's calls, not
// the folded program's): beyond, farms are not looked for.
constexpr uint64_t kMaxWalked = 4'000'000;
// Tasks a farm may have (the skeleton holds a table of them).
constexpr size_t kMaxTasks = 1'000'000;
// Kept tasks per worker at least, where there are that many: the master
// measures each worker's speed and the round trip from them.
constexpr uint64_t kMinKeptPerWorker = 4;
// Tasks a worker may have in flight at most (seeds sent it unasked).
constexpr size_t kMaxInFlight = 16;

// One answer of the master's (its sends to one worker), and the receive of
// the request it answers (its receives from that worker), as indices into
// the master's calls: the request's [request, request_end), the answer's
// [answer_from, answer_end). The master's calls between them belong to
// neither (other requests taken before this one is answered: a drain).
struct MasterStep {
  size_t request = SIZE_MAX;  // the receive's first call (SIZE_MAX: a seed, sent unasked)
  size_t recv_at = SIZE_MAX;  // the call that took the request: MPI_Recv, MPI_Probe, MPI_Iprobe, or MPI_Wait*/Test* of an MPI_Irecv
  size_t request_end = SIZE_MAX;
  size_t answer_from = 0;     // the calls before the answer's first send that go with it
  size_t answer = 0;          // the answer's first send (SIZE_MAX: none, a request after the worker's stop)
  size_t answer_end = 0;      // after its last
  int64_t worker = 0;         // world rank
  bool answered() const { return answer != SIZE_MAX; }
};

// What one call of a rank does with messages, as the farm sees it: a
// non-blocking receive's message arrives where its completion is, a
// non-blocking send's leaves where it was posted.
enum class OpKind : uint8_t {
  kOther,  // none of these
  kSend,   // MPI_Send, MPI_Ssend, MPI_Rsend, or MPI_Isend / MPI_Issend
  kRecv,   // MPI_Recv, or a completion (MPI_Wait*, MPI_Test*) of exactly one MPI_Irecv (and any sends)
  kProbe,  // MPI_Probe, or an MPI_Iprobe that found a message
  kPost,   // MPI_Irecv: the message comes with its completion
  kDone,   // a completion of sends only, or of nothing (an MPI_Test* or MPI_Iprobe that found none)
};

struct Op {
  OpKind kind = OpKind::kOther;
  bool any_source = false;   // a receive from MPI_ANY_SOURCE: peer is the rank it matched
  bool chosen = false;       // kRecv by MPI_Waitany/Testany/Waitsome/Testsome: one of several receives posted
  bool nonblocking = false;  // kSend by MPI_Isend*, kRecv by a completion, kProbe by MPI_Iprobe
  int64_t peer = kNone, tag = kNone, comm = 0;
  uint64_t bytes = 0;
};

// Per call of a rank: the calls that made the requests it completes (a
// completion), flat: call j's are made_by[first[j] .. first[j + 1]).
struct RankRequests {
  std::vector<uint32_t> first;
  std::vector<size_t> made_by;  // SIZE_MAX: not made by an ordinary request-creating call the walk saw
};

// One call of one rank in the application, in program order.
struct Call {
  uint32_t node = 0;
  uint32_t top = 0;       // the top-level item it is in
  double gap_ns = 0;      // the computation before it
  uint64_t instance = 0;  // the node's instance number
  uint64_t iter = 0;      // the innermost loop's iteration
  double sleep_ns = 0;    // the time the rank slept (was blocked) before it, the node's mean
};

// One task as its worker spent it: computing, then asleep (blocked), ns.
struct TaskTime {
  double compute_ns = 0, sleep_ns = 0;
};

// Rank r's calls, as the skeleton uncut would make them, with the
// computation before each: a loop's gap (its first iteration's first call's,
// docs/compress.md "Timing") goes before that call.
class RankWalk {
 public:
  RankWalk(const FoldedProgram& p, uint32_t r) : p_(p), r_(r), in_(p.nodes.size(), -1), seen_(p.nodes.size(), 0) {}

  // False when the walk would exceed `budget` calls (budget is decreased).
  bool run(uint64_t& budget, std::vector<Call>& out) {
    out_ = &out;
    budget_ = &budget;
    for (size_t i = 0; i < p_.top.size(); ++i) {
      top_ = static_cast<uint32_t>(i);
      if (!item(p_.top[i], false, 0)) return false;
    }
    return true;
  }

 private:
  bool takes_part(uint32_t n) {
    if (in_[n] >= 0) return in_[n] != 0;
    const FoldedNode& node = p_.nodes[n];
    bool in = false;
    if (!node.is_loop()) {
      const auto& ranks = p_.symbols.events[static_cast<size_t>(node.symbol)].ranks;
      in = std::binary_search(ranks.begin(), ranks.end(), r_);
    } else {
      for (uint32_t c : node.body) in = in || takes_part(c);
    }
    in_[n] = in ? 1 : 0;
    return in;
  }

  // The computation before node n at this instance: the mean, times the
  // course and phase factors the emitter applies.
  double gap(uint32_t n, uint64_t instance, uint64_t iter) const {
    const FoldedNode& node = p_.nodes[n];
    double g = computation_ns(p_, node, r_);
    if (g <= 0) return 0;
    if (r_ < node.profile.size() && !node.profile[r_].empty() && node.instances > 0) {
      const size_t parts = node.profile[r_].size();
      const size_t k = std::min(parts - 1, static_cast<size_t>(static_cast<double>(instance) * static_cast<double>(parts) /
                                                               static_cast<double>(node.instances)));
      g *= node.profile[r_][k];
    }
    if (node.phase_period > 0 && r_ < node.phase_factor.size() && !node.phase_factor[r_].empty()) {
      const uint64_t phase = (node.phase_by_instance ? instance : iter) % node.phase_period;
      if (phase < node.phase_factor[r_].size()) g *= node.phase_factor[r_][phase];
    }
    return g;
  }

  double sleep(const FoldedNode& node) const {
    return r_ < node.blocked.size() && node.blocked[r_].n > 0 ? node.blocked[r_].mean : 0;
  }

  // skipped: the computation before n was run by the loop around it (its first iteration).
  bool item(uint32_t n, bool skipped, uint64_t iter) {
    if (!takes_part(n)) return true;
    const FoldedNode& node = p_.nodes[n];
    const uint64_t instance = seen_[n]++;
    if (!skipped) pending_ += gap(n, instance, iter), pending_sleep_ += sleep(node);
    if (!node.is_loop()) {
      if ((*budget_)-- == 0) return false;
      out_->push_back({n, top_, pending_, instance, iter, pending_sleep_});
      pending_ = pending_sleep_ = 0;
      return true;
    }
    for (uint64_t k = 0; k < node.count; ++k) {
      bool first = k == 0;
      for (uint32_t c : node.body) {
        if (!takes_part(c)) continue;
        if (!item(c, first, k)) return false;
        first = false;
      }
    }
    return true;
  }

  const FoldedProgram& p_;
  const uint32_t r_;
  std::vector<int8_t> in_;
  std::vector<uint64_t> seen_;
  std::vector<Call>* out_ = nullptr;
  uint64_t* budget_ = nullptr;
  uint32_t top_ = 0;
  double pending_ = 0, pending_sleep_ = 0;
};

class Finder {
 public:
  Finder(const FoldedProgram& p, const std::vector<double>& rate, uint32_t scale, std::set<std::string>& notes)
      : p_(p), m_(p.symbols), rate_(rate), scale_(scale), notes_(notes), calls_(m_.world_size), ops_(m_.world_size),
        reqs_(m_.world_size), walked_(m_.world_size, 0) {}

  std::vector<Farm> run() {
    std::vector<Farm> out;
    for (uint32_t m : ranks_receiving_any()) {
      if (!walk(m)) continue;
      std::vector<MasterStep> steps;
      for (size_t i = 0; i < calls_[m].size();) {
        Farm f;
        size_t end = master_run(m, i, steps);
        if (end > i && close_run(m, i, end) && farm_of(m, i, end, steps, f) && !overlaps(out, f))
          out.push_back(std::move(f));
        i = std::max(end, i + 1);
      }
    }
    std::sort(out.begin(), out.end(), [](const Farm& a, const Farm& b) { return a.first < b.first; });
    return out;
  }

 private:
  const MergedEvent& event(uint32_t n) const { return m_.events[static_cast<size_t>(p_.nodes[n].symbol)]; }
  const Identity& identity(uint32_t n) const { return m_.identities[event(n).identity]; }
  uint32_t func(uint32_t n) const { return identity(n).func; }
  int64_t comm(uint32_t n) const { return std::max<int64_t>(identity(n).comm, 0); }
  const Op& op(uint32_t r, size_t j) const { return ops_[r][j]; }
  bool noise(uint32_t r, size_t j) const { return op(r, j).kind == OpKind::kPost || op(r, j).kind == OpKind::kDone; }
  static bool chooses(uint32_t f) { return completion_of(f) == Completion::kChoose; }
  // An MPI_Iprobe that found nothing (on this rank: its event may hold other ranks' that found one).
  bool failed_probe(uint32_t r, size_t j) const {
    const Call& c = calls_[r][j];
    return probe_found_nothing(p_, c.node) || (func(c.node) == kFunc_MPI_Iprobe && value(c, Param::peer, r) == kNone);
  }
  // Worker w's probe (MPI_Probe, or MPI_Iprobe that found one) of a message from f's master.
  bool probes_master(const Farm& f, uint32_t w, size_t j) const {
    const Op& o = op(w, j);
    return o.kind == OpKind::kProbe && o.comm == f.comm && o.peer == f.master;
  }
  // A poll that found nothing: such an MPI_Iprobe, or an MPI_Test* that completed no request.
  bool failed_poll(uint32_t r, size_t j) const {
    const uint32_t f = func(calls_[r][j].node);
    const bool test = f == kFunc_MPI_Test || f == kFunc_MPI_Testany || f == kFunc_MPI_Testsome || f == kFunc_MPI_Testall;
    return failed_probe(r, j) || (test && reqs_[r].first[j] == reqs_[r].first[j + 1]);
  }
  static bool completes(uint32_t f) { return completion_of(f) != Completion::kNone; }

  // The ranks that receive from MPI_ANY_SOURCE (or probe or poll so), or choose
  // among their receives (MPI_Waitany ...): the masters there may be.
  std::set<uint32_t> ranks_receiving_any() const {
    std::set<uint32_t> out;
    for (size_t n = 0; n < p_.nodes.size(); ++n) {
      const uint32_t id = static_cast<uint32_t>(n);
      if (p_.nodes[n].is_loop()) continue;
      const uint32_t f = func(id);
      const bool any = identity(id).peer_class == PeerClass::kAnySource;
      if ((any && (f == kFunc_MPI_Recv || f == kFunc_MPI_Probe || f == kFunc_MPI_Iprobe || f == kFunc_MPI_Irecv)) ||
          chooses(f))
        out.insert(event(id).ranks.begin(), event(id).ranks.end());
    }
    return out;
  }

  bool walk(uint32_t r) {
    if (walked_[r]) return walked_[r] > 0;
    if (RankWalk(p_, r).run(budget_, calls_[r])) {
      walked_[r] = 1;
      build_ops(r);
      return true;
    }
    walked_[r] = -1;
    calls_[r].clear();
    notes_.insert("master-worker farms are not looked for: the program is longer than " +
                  std::to_string(kMaxWalked) + " calls");
    return false;
  }
  void build_ops(uint32_t r);
  void completed_by(uint32_t r, size_t j, const std::vector<size_t>& made);
  Op op_of(uint32_t r, size_t j) const;
  Op completion_op(uint32_t r, size_t j) const;
  Op freed_op(uint32_t r, size_t j) const;

  // A parameter's value at a call of the application, uncut: kNone where
  // absent; a rule's cycle entry at the call's instance or iteration; a
  // linear rule at the call's instance, rounded; a mean's largest value
  // (for every parameter). Not Checker::rule_value: that one computes what
  // the generated C of the cut skeleton does (the skeleton's cycle index and
  // stride-scaled instance counter, llround(a) + b * i truncated to int,
  // a mean's largest only for a receive's capacity), and its callers
  // (peer_of, tag_of, bytes_of) give absent and constant-rule peers other
  // values.
  int64_t value(const Call& c, Param pm, uint32_t r) const {
    const MergedEvent& e = event(c.node);
    if (e.params[static_cast<size_t>(pm)].kind == ParamKind::kAbsent) return kNone;
    const CountRule* rule = p_.nodes[c.node].rule(pm);
    if (!rule) return m_.value(e, pm, r);
    if (rule->is_cycle()) {
      if (r >= rule->kind.size() || !cycles(rule->kind[r])) return 0;
      return rule->cycle[r * rule->period + (rule->by_instance() ? c.instance : c.iter) % rule->period];
    }
    if (r >= rule->kind.size()) return 0;
    if (rule->kind[r] == RuleKind::kLinear || rule->kind[r] == RuleKind::kLoopLinear)
      return std::llround(rule->linear_value(r, c.instance, c.iter));
    if (r < rule->max.size()) return static_cast<int64_t>(std::ceil(rule->max[r]));  // a mean: its largest
    return std::llround(rule->a[r]);
  }
  uint64_t bytes(const Call& c, uint32_t r) const {
    const int64_t n = value(c, Param::count, r), d = identity(c.node).dtype;
    const int64_t size = d >= 0 && static_cast<size_t>(d) < m_.datatypes.size() ? m_.datatypes[static_cast<size_t>(d)].size : 1;
    return static_cast<uint64_t>(std::max<int64_t>(n, 0) * std::max<int64_t>(size, 0));
  }

  size_t receive_step(uint32_t m, size_t j, int64_t c, int64_t tag, int64_t& from, size_t& at) const;
  // The end of the master's sends to `to` on c from calls[j] on (with the
  // completions of MPI_Isend among them); with one_tag, before the next send
  // with the first one's tag (a seed in several messages has one of each
  // kind: a worker's two seeds are two messages alike).
  size_t sends_to(uint32_t m, size_t j, int64_t c, int64_t to, bool one_tag = false) const {
    const int64_t tag = j < calls_[m].size() ? op(m, j).tag : kNone;
    for (size_t first = j; j < calls_[m].size(); ++j) {
      const Op& o = op(m, j);
      if (o.kind == OpKind::kDone && !failed_probe(m, j)) continue;  // an MPI_Isend's completion
      if (o.kind != OpKind::kSend || o.comm != c || o.peer != to || (one_tag && j > first && o.tag == tag)) break;
    }
    return j;
  }
  size_t master_run(uint32_t m, size_t i, std::vector<MasterStep>& steps) const;
  bool close_run(uint32_t r, size_t begin, size_t& end) const;

  bool farm_of(uint32_t m, size_t begin, size_t end, const std::vector<MasterStep>& steps, Farm& f);
  bool worker_run(const Farm& f, uint32_t w, bool seeded, uint64_t asks, size_t& begin, size_t& end);
  // The workers' polls in vain (for their answers) and the time they slept after them.
  struct WorkerPolls {
    std::vector<size_t> polls = std::vector<size_t>(Farm::kPollSleeps, 0);  // in vain, by their place in a wait
    std::vector<double> sleep_ns = std::vector<double>(Farm::kPollSleeps, 0);
    bool iprobes = false;  // an answer found by MPI_Iprobe (in vain before or not)
  };
  bool worker_figures(Farm& f, uint32_t w, size_t begin, size_t end, std::vector<TaskTime>& tasks, WorkerPolls& polled);
  bool master_figures(Farm& f, size_t begin, const std::vector<MasterStep>& steps,
                      std::map<uint32_t, std::vector<TaskTime>>& tasks);
  bool classify(Farm& f, const std::map<uint32_t, std::pair<size_t, size_t>>& runs) const;
  void set_symbols_and_styles(Farm& f, const MasterStep& asked,
                              const std::map<uint32_t, std::pair<size_t, size_t>>& runs);
  // The ranks taking part in node n (memo).
  const std::vector<uint32_t>& ranks_of(uint32_t n) const {
    auto it = ranks_.find(n);
    if (it != ranks_.end()) return it->second;
    const FoldedNode& node = p_.nodes[n];
    std::vector<uint32_t> out;
    if (!node.is_loop()) {
      out = event(n).ranks;
    } else {
      std::set<uint32_t> all;
      for (uint32_t c : node.body)
        for (uint32_t r : ranks_of(c)) all.insert(r);
      out.assign(all.begin(), all.end());
    }
    return ranks_[n] = std::move(out);
  }
  void keep_tasks(Farm& f) const;
  static bool overlaps(const std::vector<Farm>& farms, const Farm& f) {
    for (const Farm& g : farms)
      if (f.first < g.end && g.first < f.end) return true;
    return false;
  }

  const FoldedProgram& p_;
  const MergedTrace& m_;
  const std::vector<double>& rate_;
  const uint32_t scale_;
  std::set<std::string>& notes_;
  std::vector<std::vector<Call>> calls_;
  std::vector<std::vector<Op>> ops_;     // per rank, per call (walked ranks)
  std::vector<RankRequests> reqs_;       // per rank (walked ranks)
  std::vector<int8_t> walked_;  // 1: calls_ holds the rank's calls, -1: too long
  uint64_t budget_ = kMaxWalked;
  std::map<uint32_t, size_t> cursor_;  // per worker: where its next farm is looked for
  mutable std::map<uint32_t, std::vector<uint32_t>> ranks_;  // ranks_of() memo
};

// Rank r's calls as message operations (ops_), with the requests each
// completion completes resolved to the calls that made them (reqback).
void Finder::build_ops(uint32_t r) {
  const std::vector<Call>& calls = calls_[r];
  ops_[r].assign(calls.size(), Op{});
  reqs_[r].first.assign(1, 0);
  reqs_[r].made_by.clear();
  std::vector<size_t> made;  // the calls that made the rank's ordinary requests, in order
  for (size_t j = 0; j < calls.size(); ++j) {
    const uint32_t f = func(calls[j].node);
    if (uses_requests(f)) completed_by(r, j, made);
    reqs_[r].first.push_back(static_cast<uint32_t>(reqs_[r].made_by.size()));
    ops_[r][j] = op_of(r, j);
    if (creates_request(f) && !creates_persistent_request(f)) made.push_back(j);
  }
}

void Finder::completed_by(uint32_t r, size_t j, const std::vector<size_t>& made) {
  const MergedEvent& e = event(calls_[r][j].node);
  std::vector<size_t>& out = reqs_[r].made_by;
  if (!e.find_list(ListField::reqback)) return;  // none completed
  for (int64_t b : m_.list(e, ListField::reqback, r)) {  // 2k: the rank's k-th latest ordinary request
    const size_t k = b > 0 && b % 2 == 0 ? static_cast<size_t>(b / 2) : 0;
    out.push_back(k > 0 && k <= made.size() ? made[made.size() - k] : SIZE_MAX);
  }
}

Op Finder::op_of(uint32_t r, size_t j) const {
  const Call& c = calls_[r][j];
  const uint32_t f = func(c.node);
  if (completes(f)) return completion_op(r, j);
  if (f == kFunc_MPI_Cancel) return Op{OpKind::kDone};  // its requests' completion follows
  if (f == kFunc_MPI_Request_free) return freed_op(r, j);
  Op o;
  if (f == kFunc_MPI_Send || f == kFunc_MPI_Ssend || f == kFunc_MPI_Rsend) o.kind = OpKind::kSend;
  else if (f == kFunc_MPI_Isend || f == kFunc_MPI_Issend) o.kind = OpKind::kSend, o.nonblocking = true;
  else if (f == kFunc_MPI_Recv) o.kind = OpKind::kRecv;
  else if (f == kFunc_MPI_Probe) o.kind = OpKind::kProbe;
  else if (f == kFunc_MPI_Iprobe) o.kind = OpKind::kProbe, o.nonblocking = true;
  else if (f == kFunc_MPI_Irecv) o.kind = OpKind::kPost;
  else return o;
  if (failed_probe(r, j)) return Op{OpKind::kDone};  // a poll: the master computes on
  o.any_source = identity(c.node).peer_class == PeerClass::kAnySource;
  o.comm = comm(c.node);
  o.peer = value(c, Param::peer, r);
  o.tag = value(c, Param::tag, r);
  o.bytes = f == kFunc_MPI_Probe ? 0 : bytes(c, r);
  return o;
}

// An MPI_Request_free: kDone where it frees sends only (mpi4py's tasks,
// MPI_Issend whose request is freed: the message goes on), else kOther.
Op Finder::freed_op(uint32_t r, size_t j) const {
  const RankRequests& q = reqs_[r];
  for (uint32_t k = q.first[j]; k < q.first[j + 1]; ++k) {
    const size_t by = q.made_by[k];
    if (by == SIZE_MAX || !(ops_[r][by].kind == OpKind::kSend && ops_[r][by].nonblocking)) return Op{};
  }
  return Op{OpKind::kDone};
}

// A completion: kRecv where it completes one MPI_Irecv (and perhaps sends)
// with a known source, kDone where it completes sends only or nothing,
// kOther where it completes anything else or what the walk did not see.
Op Finder::completion_op(uint32_t r, size_t j) const {
  const RankRequests& q = reqs_[r];
  const MergedEvent& e = event(calls_[r][j].node);
  size_t post = SIZE_MAX, nth = 0;
  for (uint32_t k = q.first[j]; k < q.first[j + 1]; ++k) {
    const size_t by = q.made_by[k];
    if (by == SIZE_MAX) return Op{};
    const OpKind made = ops_[r][by].kind;
    if (made == OpKind::kPost && post != SIZE_MAX) return Op{};  // two receives
    if (made == OpKind::kPost) post = by, nth = k - q.first[j];
    else if (!(made == OpKind::kSend && ops_[r][by].nonblocking)) return Op{};
  }
  Op o;
  o.kind = OpKind::kDone;
  if (post == SIZE_MAX) return o;
  o = ops_[r][post];
  o.kind = OpKind::kRecv;
  o.nonblocking = true;
  o.chosen = chooses(func(calls_[r][j].node));
  if (!o.any_source) return o;
  if (!e.find_list(ListField::req_sources)) return Op{};
  const std::vector<int64_t>& sources = m_.list(e, ListField::req_sources, r);
  if (nth >= sources.size() || sources[nth] < 0) return Op{};
  o.peer = sources[nth];
  return o;
}

// The master's receive of a request from calls[j]: after any posts of
// receives (MPI_Irecv), an MPI_Recv from MPI_ANY_SOURCE, an MPI_Probe from
// MPI_ANY_SOURCE and an MPI_Recv from the rank it found, or the completion
// of an MPI_Irecv from MPI_ANY_SOURCE (MPI_Wait ...) or of one among several
// (MPI_Waitany ...), on communicator c with tag `tag` (-1: MPI_ANY_TAG);
// then any further receives from that rank (a request in several
// messages). Returns its calls (0: none), the rank it took it from and the
// call that took it (at).
size_t Finder::receive_step(uint32_t m, size_t j, int64_t c, int64_t tag, int64_t& from, size_t& at) const {
  const size_t n = calls_[m].size();
  size_t k = j;
  while (k < n && noise(m, k)) ++k;
  if (k >= n) return 0;
  const Op& o = op(m, k);
  if (o.comm != c || o.tag != tag) return 0;
  const bool probe = o.kind == OpKind::kProbe && o.any_source;
  if (!probe && !(o.kind == OpKind::kRecv && (o.any_source || o.chosen))) return 0;
  at = k;
  size_t e = k + 1;
  if (probe)  // probes in a row (mpi4py: MPI_Iprobe, then MPI_Mprobe): the message received is the last one's
    for (; e < n && op(m, e).kind == OpKind::kProbe && op(m, e).any_source && op(m, e).comm == c && op(m, e).tag == tag; ++e) {
    }
  from = op(m, e - 1).peer;
  const size_t probes = e - k;
  for (; e < n; ++e) {
    const Op& x = op(m, e);
    if (x.kind != OpKind::kRecv || x.any_source || x.chosen || x.comm != c || x.peer != from) break;
  }
  return probe && e == k + probes ? 0 : e - j;
}

// The master's farm starting at calls[i]: sends to the first workers
// (seeds, each in one or more messages; up to kMaxInFlight to one worker,
// whose tasks are then in flight together), then receives of requests and
// answers to their sources, each request answered before its worker's next
// (before its next but as many as it had seeds less one): at once, or after
// other requests were taken (a drain); posts of receives, completions of
// sends and polls that found nothing among them. Returns the end (i: none),
// after the last answer that leaves no request unanswered, or after the last
// requests, where those left unanswered came after their workers' last
// answers (their stops), fewer than their seeds (a worker with two tasks in
// flight asks once more after its stop: its last task's result). The
// unanswered requests are steps without an answer.
size_t Finder::master_run(uint32_t m, size_t i, std::vector<MasterStep>& steps) const {
  const size_t n = calls_[m].size();
  steps.clear();
  if (op(m, i).kind == OpKind::kDone || op(m, i).kind == OpKind::kOther) return i;
  const int64_t c = op(m, i).comm;
  size_t j = i;
  std::map<int64_t, size_t> seeds;  // per worker
  for (; j < n; ) {
    size_t k = j;  // receives posted, sends completed or polls in vain between the seeds (not before a request)
    while (k < n && noise(m, k)) ++k;
    if (k >= n || op(m, k).kind != OpKind::kSend || op(m, k).comm != c) break;
    j = k;
    const Op& o = op(m, j);
    if (++seeds[o.peer] > kMaxInFlight) return i;
    const size_t e = sends_to(m, j, c, o.peer, true);
    steps.push_back({SIZE_MAX, SIZE_MAX, SIZE_MAX, j, j, e, o.peer});
    j = e;
  }
  size_t first = j;
  while (first < n && noise(m, first)) ++first;
  if (first >= n) return i;
  const int64_t tag = op(m, first).tag;
  auto in_flight = [&](int64_t w) { return std::max<size_t>(1, seeds.count(w) ? seeds.at(w) : 0); };
  std::map<int64_t, std::deque<MasterStep>> pending;  // per worker: its requests taken, not answered yet
  size_t clean = j, clean_steps = steps.size();  // the end after the last answer that left none pending
  size_t open = 0;  // requests pending
  for (;;) {
    int64_t from = kNone;
    size_t at = SIZE_MAX;
    const size_t len = receive_step(m, j, c, tag, from, at);
    if (len) {
      std::deque<MasterStep>& asked = pending[from];
      if (asked.size() >= in_flight(from)) break;  // asked more often than it had tasks
      asked.push_back(MasterStep{j, at, j + len, 0, 0, 0, from});
      ++open;
      j += len;
      continue;
    }
    size_t a = j;
    while (a < n && noise(m, a)) ++a;  // a receive posted again before the answer (the merge's order)
    if (a >= n || op(m, a).kind != OpKind::kSend || op(m, a).comm != c) break;
    auto asked = pending.find(op(m, a).peer);
    if (asked == pending.end() || asked->second.empty()) break;
    MasterStep s = asked->second.front();
    asked->second.pop_front();
    --open;
    const bool at_once = s.request_end == j;  // the calls between go with the request, else with the answer
    if (at_once) s.request_end = a;
    s.answer_from = at_once ? a : j;
    s.answer = a;
    s.answer_end = sends_to(m, a, c, s.worker);
    steps.push_back(s);
    j = s.answer_end;
    if (open == 0) clean = j, clean_steps = steps.size();
  }
  // requests left unanswered after their workers' last answers, fewer than their seeds: the results of
  // tasks still in flight at the stop
  bool tail = open > 0;
  for (const auto& [w, asked] : pending) tail = tail && asked.size() < in_flight(w);
  if (tail) {
    std::vector<MasterStep> unanswered;
    for (auto& [w, asked] : pending)
      for (MasterStep s : asked) s.answer = s.answer_from = s.answer_end = SIZE_MAX, unanswered.push_back(s);
    std::sort(unanswered.begin(), unanswered.end(),
              [](const MasterStep& x, const MasterStep& y) { return x.request < y.request; });
    steps.insert(steps.end(), unanswered.begin(), unanswered.end());
    clean = j, clean_steps = steps.size();
  }
  j = clean;
  steps.resize(clean_steps);
  size_t answered_requests = 0;
  for (const MasterStep& st : steps) answered_requests += st.request != SIZE_MAX && st.answered();
  if (answered_requests == 0) return i;
  for (; j < n && op(m, j).kind == OpKind::kPost && op(m, j).comm == c && op(m, j).tag == tag; ++j) {
  }  // receives posted again after the last answers: close_run takes their completions too
  return j;
}

// Every request made in rank r's calls [begin, end) is completed there,
// and every completion there completes requests made there: the farm's
// non-blocking calls stay among its calls (the skeleton makes its own).
// Where some are still pending at end, end moves over the rank's next
// posts, cancels and completions until none is (the master's re-posted
// receives, cancelled and completed after the farm). False where that fails.
bool Finder::close_run(uint32_t r, size_t begin, size_t& end) const {
  std::set<size_t> open;
  auto apply = [&](size_t j) {
    const uint32_t f = func(calls_[r][j].node);
    if (uses_requests(f)) {
      const RankRequests& q = reqs_[r];
      for (uint32_t k = q.first[j]; k < q.first[j + 1]; ++k)  // a cancel leaves its request to a completion
        if (f == kFunc_MPI_Cancel ? !open.count(q.made_by[k]) : !open.erase(q.made_by[k])) return false;
    } else if (creates_request(f)) {
      if (creates_persistent_request(f)) return false;
      open.insert(j);
    }
    return true;
  };
  for (size_t j = begin; j < end; ++j)
    if (!apply(j)) return false;
  for (size_t j = end; !open.empty(); ++j) {
    if (j >= calls_[r].size()) return false;
    const uint32_t f = func(calls_[r][j].node);
    if ((!uses_requests(f) && !creates_request(f)) || !apply(j)) return false;
    end = j + 1;
  }
  return true;
}

// Worker w's farm: its seed's receives (if the master sent it one unasked),
// then `asks` (request to the master, receive of the answer) pairs, each in
// one or more messages, blocking or not (posts of receives and completions
// of sends among them); the first at or after its cursor.
bool Finder::worker_run(const Farm& f, uint32_t w, bool seeded, uint64_t asks, size_t& begin, size_t& end) {
  if (!walk(w)) return false;
  const size_t n = calls_[w].size();
  auto to_master = [&](size_t j) {
    return j < n && op(w, j).kind == OpKind::kSend && op(w, j).comm == f.comm && op(w, j).peer == f.master;
  };
  auto request = [&](size_t j) { return to_master(j) && (f.ask_tag < 0 || op(w, j).tag == f.ask_tag); };
  auto answer = [&](size_t j) {
    return j < n && op(w, j).kind == OpKind::kRecv && !op(w, j).any_source && op(w, j).comm == f.comm &&
           op(w, j).peer == f.master;
  };
  auto skip = [&](size_t j) {
    while (j < n && noise(w, j)) ++j;
    return j;
  };
  auto probe = [&](size_t j) { return j < n && probes_master(f, w, j); };
  auto answer_end = [&](size_t j) {
    while (answer(j) || (j < n && op(w, j).kind == OpKind::kDone)) ++j;
    return j;
  };
  size_t j = cursor_[w];
  while (j < n && !(seeded ? answer(j) : request(j))) ++j;
  begin = j;
  // the answer's receive, posted first, or the probes that found it (and the polls before them)
  while (begin > cursor_[w] && (op(w, begin - 1).kind == OpKind::kPost || probe(begin - 1) || failed_probe(w, begin - 1)))
    --begin;
  if (seeded) {
    if (!answer(j)) return false;
    j = answer_end(j);
  }
  for (uint64_t k = 0; k < asks; ++k) {
    j = skip(j);
    if (!request(j)) return false;
    while (to_master(j) || probe(j) || (j < n && noise(w, j))) ++j;
    if (!answer(j)) return false;
    j = answer_end(j);
  }
  end = j;
  return end > begin && !request(skip(j)) && close_run(w, begin, end);  // no more requests than the master took
}

// A worker's figures: its entry computation, its computation between the
// start of a request and the end of the answer, each task's computation
// (before the request after its answer), the sizes of its requests and its
// receives' tag. A request is the calls from the first after an answer
// (its sends, and posts of the answer's receives) to the next receive; an
// answer, its receives and the completions of sends after them.
bool Finder::worker_figures(Farm& f, uint32_t w, size_t begin, size_t end, std::vector<TaskTime>& tasks,
                            WorkerPolls& polled) {
  const std::vector<Call>& calls = calls_[w];
  f.entry_units[w] = calls[begin].gap_ns * rate_[w];
  double wait = 0, poll_ns = 0;
  size_t requests = 0, polls = 0;
  bool answered = false;
  // an answer: the probes that found it, its receives, completions of sends and polls after them
  auto answering = [&](size_t j) { return op(w, j).kind == OpKind::kRecv || probes_master(f, w, j); };
  auto in_answer = [&](size_t j) { return answering(j) || op(w, j).kind == OpKind::kDone; };
  const bool seeded = std::find(f.seeded.begin(), f.seeded.end(), w) != f.seeded.end();
  for (size_t j = begin; j < end;) {
    const bool seed = j == begin && seeded;  // the seed's receive posted, its polls: they go with it
    const bool asking = !seed && !answering(j);
    const size_t from = j;
    uint64_t bytes_sent = 0;
    int64_t tag = kNone;  // the first send's or receive's
    bool received = false;  // the seed's receive, after which its posts are the next request's
    size_t in_vain = 0;     // polls in vain so far in this wait
    TaskTime task;          // a request's: the computation up to its first send (the next task's receive may be
                            // posted before it: a worker with tasks in flight), the rest is waiting
    for (; j < end && (asking ? !answering(j) : in_answer(j) || (seed && !received && noise(w, j))); ++j) {
      received |= op(w, j).kind == OpKind::kRecv;
      const Op& o = op(w, j);
      if (asking && bytes_sent == 0 && tag == kNone) {
        task.compute_ns += calls[j].gap_ns, task.sleep_ns += calls[j].sleep_ns;
        if (o.kind == OpKind::kSend) bytes_sent += o.bytes, tag = o.tag;
        continue;
      }
      if (o.kind == OpKind::kSend) bytes_sent += o.bytes;
      // an answer's tag: its probe's, where it was probed for (MPI_Mrecv has none of its own), else its receive's
      if (tag == kNone && (asking ? o.kind == OpKind::kSend : answering(j))) tag = o.tag;
      if (!asking && probes_master(f, w, j) && o.nonblocking) polled.iprobes = true;
      if (asking && j > from && failed_poll(w, j - 1)) {  // polling for the answer: waiting, not computing
        const size_t k = std::min(in_vain++, Farm::kPollSleeps - 1);
        poll_ns += calls[j].gap_ns, polled.sleep_ns[k] += calls[j].sleep_ns, ++polls, ++polled.polls[k];
        continue;
      }
      if (j > from || (!asking && j > begin)) wait += calls[j].gap_ns;
    }
    if (j == from) return false;  // a call of neither (not expected): no farm, rather than no end
    if (asking) {
      uint64_t& most = requests == 0 ? f.first_ask_bytes : f.ask_bytes;
      most = std::max(most, bytes_sent);
      if (f.request_tag < 0) f.request_tag = tag;
      if (answered) tasks.push_back(task);
      ++requests;
      continue;
    }
    if (f.worker_recv_tag == kNone) f.worker_recv_tag = tag;
    if (tag != f.worker_recv_tag) return false;
    answered = true;
  }
  f.worker_wait_units[w] = requests ? wait / static_cast<double>(requests) * rate_[w] : 0;
  f.worker_poll_units[w] = polls ? poll_ns / static_cast<double>(polls) * rate_[w] : 0;
  return true;
}

// The farm's top-level items (f.first to f.end) may hold other calls too,
// where the merge put them among the farm's: a worker's calls after it was
// stopped (its MPI_Finalize before the master's), or a rank's before its
// part in the farm. Each such item is a rank's call before its part (it
// goes before the farm: Farm::before) or after it (Farm::after); an item
// that is neither, or that would change a rank's order, is not accepted.
bool Finder::classify(Farm& f, const std::map<uint32_t, std::pair<size_t, size_t>>& runs) const {
  enum Class : uint8_t { kNone = 0, kFarm = 1, kBefore = 2, kAfter = 4 };
  std::vector<uint8_t> cls(f.end - f.first, kNone);
  std::vector<size_t> before, after;  // indices into p.top
  for (const auto& [r, run] : runs) {
    const std::vector<Call>& calls = calls_[r];
    for (size_t j = 0; j < calls.size(); ++j) {
      if (calls[j].top < f.first || calls[j].top >= f.end) continue;
      cls[calls[j].top - f.first] |= j < run.first ? kBefore : j < run.second ? kFarm : kAfter;
    }
  }
  for (size_t i = 0; i < cls.size(); ++i) {
    if (cls[i] != kNone && cls[i] != kFarm && cls[i] != kBefore && cls[i] != kAfter) return false;  // mixed
    if (cls[i] == kNone) cls[i] = kAfter;  // only ranks outside the farm: their order is checked below
    if (cls[i] == kFarm)  // the emitter skips the farm's items: nobody else may have calls there
      for (uint32_t r : ranks_of(p_.top[f.first + i]))
        if (!f.takes_part(r)) return false;
    if (cls[i] == kBefore) before.push_back(f.first + i);
    if (cls[i] == kAfter) after.push_back(f.first + i);
  }
  // each rank's calls stay in order: none of its `after` items before one of its `before` items
  std::vector<int64_t> last_before(m_.world_size, -1);
  for (size_t i : before)
    for (uint32_t r : ranks_of(p_.top[i])) last_before[r] = static_cast<int64_t>(i);
  for (size_t i : after)
    for (uint32_t r : ranks_of(p_.top[i]))
      if (static_cast<int64_t>(i) < last_before[r]) return false;
  for (size_t i : before) f.before_nodes.push_back(p_.top[i]);
  for (size_t i : after) f.after_nodes.push_back(p_.top[i]);
  return true;
}

bool Finder::farm_of(uint32_t m, size_t begin, size_t end, const std::vector<MasterStep>& steps, Farm& f) {
  f.master = m;
  f.comm = op(m, begin).comm;
  const MasterStep& asked = *std::find_if(steps.begin(), steps.end(),
                                         [](const MasterStep& s) { return s.request != SIZE_MAX && s.answered(); });
  f.ask_tag = op(m, asked.recv_at).tag;
  std::map<uint32_t, uint64_t> answers, asks;  // per worker: answers (seeds too), requests (answered or not)
  size_t answered = 0;
  for (const MasterStep& s : steps) {
    if (s.worker < 0 || s.worker >= static_cast<int64_t>(m_.world_size) || s.worker == m) return false;
    const uint32_t w = static_cast<uint32_t>(s.worker);
    if (s.answered()) ++answers[w], ++answered;
    if (s.request == SIZE_MAX) f.seeded.push_back(w);
    else ++asks[w];
  }
  if (answered < answers.size() + 1) return false;  // no task at all
  std::map<uint32_t, std::pair<size_t, size_t>> runs{{m, {begin, end}}};
  for (const auto& [w, n] : answers) {
    const bool seeded = std::find(f.seeded.begin(), f.seeded.end(), w) != f.seeded.end();
    size_t b = 0, e = 0;
    if (!worker_run(f, w, seeded, asks[w], b, e)) return false;
    runs[w] = {b, e};
    f.workers.push_back(w);
  }
  for (const auto& [w, run] : runs) cursor_[w] = run.second;  // the next farm of these ranks starts after
  f.first = SIZE_MAX;
  for (const auto& [r, run] : runs) {
    f.first = std::min<size_t>(f.first, calls_[r][run.first].top);
    f.end = std::max<size_t>(f.end, calls_[r][run.second - 1].top + 1);
  }
  if (!classify(f, runs)) return false;
  f.entry_units.assign(m_.world_size, 0);
  f.worker_wait_units.assign(m_.world_size, 0);
  f.worker_poll_units.assign(m_.world_size, 0);
  std::map<uint32_t, std::vector<TaskTime>> tasks;  // per worker, its tasks in order
  WorkerPolls polled;
  for (uint32_t w : f.workers)
    if (!worker_figures(f, w, runs[w].first, runs[w].second, tasks[w], polled)) return false;
  f.worker_polls = polled.iprobes;
  for (size_t k = 0; k < Farm::kPollSleeps; ++k)
    f.worker_poll_sleep_s.push_back(polled.polls[k] ? polled.sleep_ns[k] / static_cast<double>(polled.polls[k]) * 1e-9 : 0);
  if (!master_figures(f, begin, steps, tasks)) return false;
  set_symbols_and_styles(f, asked, runs);
  keep_tasks(f);
  return true;
}

// A node of each role, for the watchdog's messages (master receive,
// answer, a worker's request, its receive), and the calls the skeleton
// makes for them: as the master's first request and answer and the first
// worker's first request and receive were made.
void Finder::set_symbols_and_styles(Farm& f, const MasterStep& asked,
                                    const std::map<uint32_t, std::pair<size_t, size_t>>& runs) {
  const uint32_t m = f.master, w0 = f.workers[0];
  const Op& took = op(m, asked.recv_at);
  size_t recv = asked.recv_at;  // the receive, after the probes that found it
  while (op(m, recv).kind == OpKind::kProbe) ++recv;
  const auto [begin, end] = runs.at(w0);
  size_t request = begin, answer = end - 1;
  while (request + 1 < end && op(w0, request).kind != OpKind::kSend) ++request;
  while (answer > begin && op(w0, answer).kind != OpKind::kRecv) --answer;
  f.symbols = {calls_[m][recv].node, calls_[m][asked.answer].node, calls_[w0][request].node, calls_[w0][answer].node};
  f.master_recv = !took.nonblocking              ? FarmRecv::kBlocking
                  : took.kind == OpKind::kProbe   ? FarmRecv::kPoll
                  : took.chosen && !took.any_source ? FarmRecv::kIrecvEach
                                                    : FarmRecv::kIrecvAny;
  f.answer_isend = op(m, asked.answer).nonblocking;
  f.ask_isend = op(w0, request).nonblocking;
  f.worker_irecv = op(w0, answer).nonblocking;
}

// The master's figures: the tasks in the order handed out (each worker's
// last answer is its stop), the answers' tags and sizes, its computation
// per request and per answer, its time in the farm.
bool Finder::master_figures(Farm& f, size_t begin, const std::vector<MasterStep>& steps,
                            std::map<uint32_t, std::vector<TaskTime>>& tasks) {
  const uint32_t m = f.master;
  const std::vector<Call>& mc = calls_[m];
  std::map<uint32_t, uint64_t> left, given;  // per worker: answers still to come, tasks given
  for (const MasterStep& s : steps)
    if (s.answered()) ++left[static_cast<uint32_t>(s.worker)];
  bool first_stop = true, first_task = true;
  double recv_ns = 0, answer_ns = 0, poll_ns = 0, poll_sleep_ns = 0;
  size_t requests = 0, polls = 0, answers = 0;
  // a request's calls or an answer's: the computation after a poll in vain is polling in a request
  auto add = [&](size_t from, size_t to, bool request) {
    for (size_t k = from; k < to; ++k) {
      const double gap = k > begin ? mc[k].gap_ns : 0;
      (request ? recv_ns : answer_ns) += gap;
      if (request && k > from && failed_poll(m, k - 1)) poll_ns += gap, poll_sleep_ns += mc[k].sleep_ns, ++polls;
      const FoldedNode& node = p_.nodes[mc[k].node];
      f.traced_ns += gap + (m < node.dur.size() ? node.dur[m].mean : 0);
    }
  };
  for (const MasterStep& s : steps) {
    if (!s.answered()) {  // the result of a task in flight at the worker's stop
      add(s.request, s.request_end, true), ++requests;
      continue;
    }
    ++answers;
    const uint32_t w = static_cast<uint32_t>(s.worker);
    const int64_t tag = op(m, s.answer).tag;
    const bool stop = --left[w] == 0;
    int64_t& want = stop ? f.stop_tag : f.task_tag;
    bool& first = stop ? first_stop : first_task;
    if (first) want = tag;
    first = false;
    if (f.worker_recv_tag >= 0 && tag != f.worker_recv_tag) return false;
    uint64_t answer_bytes = 0;
    for (size_t k = s.answer; k < s.answer_end; ++k)
      if (op(m, k).kind == OpKind::kSend) answer_bytes += op(m, k).bytes;
    uint64_t& most = stop ? f.stop_bytes : f.task_bytes;
    most = std::max(most, answer_bytes);
    if (!stop) {
      const std::vector<TaskTime>& own = tasks[w];
      const uint64_t k = given[w]++;
      if (k >= own.size()) return false;
      f.task_ns.push_back(own[k].compute_ns);
      f.task_units.push_back(own[k].compute_ns * rate_[w]);
      f.task_sleep_s.push_back(own[k].sleep_ns * 1e-9);
    }
    if (s.request != SIZE_MAX) add(s.request, s.request_end, true), ++requests;
    add(s.answer_from, s.answer_end, false);
  }
  if (f.task_ns.empty() || f.task_ns.size() > kMaxTasks) return false;
  f.entry_units[m] = mc[begin].gap_ns * rate_[m];
  f.master_poll_units = polls ? poll_ns / static_cast<double>(polls) * rate_[m] : 0;
  f.master_poll_sleep_s = polls ? poll_sleep_ns / static_cast<double>(polls) * 1e-9 : 0;
  recv_ns -= poll_ns;  // polling is waiting: the skeleton polls, computing as much after each poll
  f.master_recv_units = requests ? recv_ns / static_cast<double>(requests) * rate_[m] : 0;
  f.master_answer_units = answers ? answer_ns / static_cast<double>(answers) * rate_[m] : 0;
  return true;
}

// One task of each n, evenly through the run, at least kMinKeptPerWorker
// per worker where there are that many. Within its n, the one kept moves
// by the golden ratio from one n to the next (a Weyl sequence): the middle
// of each n, kept before, aliased with tasks whose sizes repeat with a
// period dividing n (a heavy task every 10th: every kept task heavy, the
// skeleton's kept farm 5 times as long as a tenth of the application's).
void Finder::keep_tasks(Farm& f) const {
  const uint64_t N = f.task_ns.size();
  uint64_t keep = N;
  if (scale_ > 1) {
    keep = (N + scale_ - 1) / scale_;
    keep = std::min<uint64_t>(N, std::max<uint64_t>(keep, kMinKeptPerWorker * f.workers.size()));
  }
  const double block = static_cast<double>(N) / static_cast<double>(keep);
  for (uint64_t j = 0; j < keep; ++j) {
    const double offset = keep == N ? 0 : std::fmod(0.5 + 0.6180339887498949 * static_cast<double>(j), 1.0);
    const auto at = static_cast<uint64_t>((static_cast<double>(j) + offset) * block);
    f.kept.push_back(std::min<uint64_t>(N - 1, std::max<uint64_t>(at, f.kept.empty() ? 0 : f.kept.back() + 1)));
  }
}

}  // namespace

std::vector<Farm> find_farms(const FoldedProgram& p, const std::vector<double>& units_per_ns, uint32_t scale,
                             std::set<std::string>& notes) {
  if (p.thread != 0 || !p.threads.empty()) return {};
  return Finder(p, units_per_ns, scale, notes).run();
}

}  // namespace skt::gen
