// Finding dynamic master-worker farms in a folded program (farm.h).
#include "farm.h"

#include <algorithm>
#include <cmath>
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

// One answer of the master's (its sends to one worker), and the receive of
// the request it answers (its receives from that worker), as indices into
// the master's calls.
struct MasterStep {
  size_t request = SIZE_MAX;  // the receive's first call (SIZE_MAX: a seed, sent unasked)
  size_t answer = 0;          // the answer's first send
  size_t answer_end = 0;      // after its last
  int64_t worker = 0;         // world rank
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
      : p_(p), m_(p.symbols), rate_(rate), scale_(scale), notes_(notes), calls_(m_.world_size),
        walked_(m_.world_size, 0) {}

  std::vector<Farm> run() {
    std::vector<Farm> out;
    for (uint32_t m : ranks_receiving_any()) {
      if (!walk(m)) continue;
      const std::vector<Call>& calls = calls_[m];
      std::vector<MasterStep> steps;
      for (size_t i = 0; i < calls.size();) {
        Farm f;
        const size_t end = master_run(m, i, steps);
        if (end > i && farm_of(m, i, end, steps, f) && !overlaps(out, f)) out.push_back(std::move(f));
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
  bool any_source_recv(uint32_t n) const {
    return func(n) == kFunc_MPI_Recv && identity(n).peer_class == PeerClass::kAnySource;
  }
  bool recv(uint32_t n) const { return func(n) == kFunc_MPI_Recv && identity(n).peer_class == PeerClass::kRank; }
  bool send(uint32_t n) const {
    const uint32_t f = func(n);
    return f == kFunc_MPI_Send || f == kFunc_MPI_Ssend || f == kFunc_MPI_Rsend;
  }

  // The ranks that receive from MPI_ANY_SOURCE (or probe so): the masters there may be.
  std::set<uint32_t> ranks_receiving_any() const {
    std::set<uint32_t> out;
    for (size_t n = 0; n < p_.nodes.size(); ++n) {
      const uint32_t id = static_cast<uint32_t>(n);
      if (!p_.nodes[n].is_loop() && (any_source_recv(id) || probe_any(id)))
        out.insert(event(id).ranks.begin(), event(id).ranks.end());
    }
    return out;
  }

  bool walk(uint32_t r) {
    if (walked_[r]) return walked_[r] > 0;
    if (RankWalk(p_, r).run(budget_, calls_[r])) {
      walked_[r] = 1;
      return true;
    }
    walked_[r] = -1;
    calls_[r].clear();
    notes_.insert("master-worker farms are not looked for: the program is longer than " +
                  std::to_string(kMaxWalked) + " calls");
    return false;
  }

  // A parameter's value at a call (Checker::rule_value, uncut).
  int64_t value(const Call& c, Param pm, uint32_t r) const {
    const MergedEvent& e = event(c.node);
    if (e.params[static_cast<size_t>(pm)].kind == ParamKind::kAbsent) return kNone;
    const CountRule* rule = p_.nodes[c.node].rule(pm);
    if (!rule) return m_.value(e, pm, r);
    if (rule->is_cycle()) {
      if (r >= rule->kind.size() || !cycles(rule->kind[r])) return 0;
      return rule->cycle[r * rule->period + (rule->by_instance() ? c.instance : c.iter) % rule->period];
    }
    const double a = r < rule->a.size() ? rule->a[r] : 0, b = r < rule->b.size() ? rule->b[r] : 0;
    if (r < rule->kind.size() && rule->kind[r] == RuleKind::kLinear)
      return std::llround(a + b * static_cast<double>(c.instance));
    if (r < rule->max.size()) return static_cast<int64_t>(std::ceil(rule->max[r]));  // a mean: its largest
    return std::llround(a);
  }
  uint64_t bytes(const Call& c, uint32_t r) const {
    const int64_t n = value(c, Param::count, r), d = identity(c.node).dtype;
    const int64_t size = d >= 0 && static_cast<size_t>(d) < m_.datatypes.size() ? m_.datatypes[static_cast<size_t>(d)].size : 1;
    return static_cast<uint64_t>(std::max<int64_t>(n, 0) * std::max<int64_t>(size, 0));
  }

  bool probe_any(uint32_t n) const {
    return func(n) == kFunc_MPI_Probe && identity(n).peer_class == PeerClass::kAnySource;
  }
  // The master's receive of a request at calls[j]: an MPI_Recv from
  // MPI_ANY_SOURCE, or an MPI_Probe from MPI_ANY_SOURCE and an MPI_Recv from
  // the rank it found, on communicator c with tag `tag` (-1: MPI_ANY_TAG),
  // then any further receives from that rank (a request in several
  // messages). Returns its calls (0: none) and the rank it took it from.
  size_t receive_step(uint32_t m, size_t j, int64_t c, int64_t tag, int64_t& from) const {
    const std::vector<Call>& calls = calls_[m];
    if (j >= calls.size() || comm(calls[j].node) != c || value(calls[j], Param::tag, m) != tag) return 0;
    from = value(calls[j], Param::peer, m);
    if (!any_source_recv(calls[j].node) && !probe_any(calls[j].node)) return 0;
    size_t k = j + 1;
    while (k < calls.size() && recv(calls[k].node) && comm(calls[k].node) == c && value(calls[k], Param::peer, m) == from)
      ++k;
    return probe_any(calls[j].node) && k == j + 1 ? 0 : k - j;
  }
  // The end of the master's sends to `to` on c from calls[j] on.
  size_t sends_to(uint32_t m, size_t j, int64_t c, int64_t to) const {
    const std::vector<Call>& calls = calls_[m];
    while (j < calls.size() && send(calls[j].node) && comm(calls[j].node) == c && value(calls[j], Param::peer, m) == to)
      ++j;
    return j;
  }

  // The master's farm starting at calls[i]: sends to the first workers
  // (seeds, at most one per rank, each in one or more messages), then
  // (receive of a request, answer to its source) pairs. Returns the end (i:
  // none).
  size_t master_run(uint32_t m, size_t i, std::vector<MasterStep>& steps) const {
    const std::vector<Call>& calls = calls_[m];
    steps.clear();
    const int64_t c = comm(calls[i].node);
    size_t j = i;
    std::set<int64_t> seeded;
    while (j < calls.size() && send(calls[j].node) && comm(calls[j].node) == c) {
      const int64_t to = value(calls[j], Param::peer, m);
      if (!seeded.insert(to).second) return i;
      const size_t e = sends_to(m, j, c, to);
      steps.push_back({SIZE_MAX, j, e, to});
      j = e;
    }
    if (j >= calls.size()) return i;
    const int64_t tag = value(calls[j], Param::tag, m);
    for (;;) {
      int64_t from = kNone;
      const size_t len = receive_step(m, j, c, tag, from);
      if (!len) break;
      const size_t e = sends_to(m, j + len, c, from);
      if (e == j + len) break;
      steps.push_back({j, j + len, e, from});
      j = e;
    }
    return steps.size() > seeded.size() ? j : i;
  }

  bool farm_of(uint32_t m, size_t begin, size_t end, const std::vector<MasterStep>& steps, Farm& f);
  bool worker_run(const Farm& f, uint32_t w, bool seeded, uint64_t asks, size_t& begin, size_t& end);
  bool worker_figures(Farm& f, uint32_t w, size_t begin, size_t end, std::vector<double>& task_ns);
  bool master_figures(Farm& f, size_t begin, const std::vector<MasterStep>& steps,
                      std::map<uint32_t, std::vector<double>>& task_ns);
  bool classify(Farm& f, const std::map<uint32_t, std::pair<size_t, size_t>>& runs) const;
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
  std::vector<int8_t> walked_;  // 1: calls_ holds the rank's calls, -1: too long
  uint64_t budget_ = kMaxWalked;
  std::map<uint32_t, size_t> cursor_;  // per worker: where its next farm is looked for
  std::map<uint32_t, std::vector<double>> task_sleep_;  // per worker: the time it slept in each task, ns
  mutable std::map<uint32_t, std::vector<uint32_t>> ranks_;  // ranks_of() memo
};

// Worker w's farm: its seed's receives (if the master sent it one unasked),
// then `asks` (request to the master, receive of the answer) pairs, each in
// one or more messages; the first at or after its cursor.
bool Finder::worker_run(const Farm& f, uint32_t w, bool seeded, uint64_t asks, size_t& begin, size_t& end) {
  if (!walk(w)) return false;
  const std::vector<Call>& calls = calls_[w];
  auto to_master = [&](size_t j) {
    return j < calls.size() && send(calls[j].node) && comm(calls[j].node) == f.comm &&
           value(calls[j], Param::peer, w) == f.master;
  };
  auto request = [&](size_t j) { return to_master(j) && (f.ask_tag < 0 || value(calls[j], Param::tag, w) == f.ask_tag); };
  auto answer = [&](size_t j) {
    return j < calls.size() && recv(calls[j].node) && comm(calls[j].node) == f.comm &&
           value(calls[j], Param::peer, w) == f.master;
  };
  auto answer_end = [&](size_t j) {
    while (answer(j)) ++j;
    return j;
  };
  size_t j = cursor_[w];
  while (j < calls.size() && !(seeded ? answer(j) : request(j))) ++j;
  begin = j;
  if (seeded) {
    if (!answer(j)) return false;
    j = answer_end(j);
  }
  for (uint64_t k = 0; k < asks; ++k) {
    if (!request(j)) return false;
    while (to_master(j)) ++j;
    if (!answer(j)) return false;
    j = answer_end(j);
  }
  end = j;
  return end > begin && !request(j);  // no more requests than the master took
}

// A worker's figures: its entry computation, its computation between the
// start of a request and the end of the answer, each task's computation
// (before the request after its answer), the sizes of its requests and its
// receives' tag.
bool Finder::worker_figures(Farm& f, uint32_t w, size_t begin, size_t end, std::vector<double>& task_ns) {
  const std::vector<Call>& calls = calls_[w];
  f.entry_units[w] = calls[begin].gap_ns * rate_[w];
  double wait = 0;
  size_t requests = 0;
  bool answered = false;
  for (size_t j = begin; j < end;) {
    const bool asking = send(calls[j].node);
    const size_t from = j;
    uint64_t bytes_sent = 0;
    for (; j < end && send(calls[j].node) == asking; ++j) {
      if (asking) bytes_sent += bytes(calls[j], w);
      if (j > from || (!asking && j > begin)) wait += calls[j].gap_ns;
    }
    if (asking) {
      uint64_t& most = requests == 0 ? f.first_ask_bytes : f.ask_bytes;
      most = std::max(most, bytes_sent);
      if (f.request_tag < 0) f.request_tag = value(calls[from], Param::tag, w);
      if (answered) task_ns.push_back(calls[from].gap_ns), task_sleep_[w].push_back(calls[from].sleep_ns);
      ++requests;
      continue;
    }
    const int64_t tag = value(calls[from], Param::tag, w);
    if (f.worker_recv_tag == kNone) f.worker_recv_tag = tag;
    if (tag != f.worker_recv_tag) return false;
    answered = true;
  }
  f.worker_wait_units[w] = requests ? wait / static_cast<double>(requests) * rate_[w] : 0;
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
  const std::vector<Call>& mc = calls_[m];
  f.master = m;
  f.comm = comm(mc[begin].node);
  const MasterStep& asked = *std::find_if(steps.begin(), steps.end(), [](const MasterStep& s) { return s.request != SIZE_MAX; });
  f.ask_tag = value(mc[asked.request], Param::tag, m);
  std::map<uint32_t, uint64_t> answers, asks;  // per worker
  std::set<uint32_t> seeded;
  for (const MasterStep& s : steps) {
    if (s.worker < 0 || s.worker >= static_cast<int64_t>(m_.world_size) || s.worker == m) return false;
    const uint32_t w = static_cast<uint32_t>(s.worker);
    ++answers[w];
    if (s.request == SIZE_MAX) seeded.insert(w);
    else ++asks[w];
  }
  if (steps.size() < answers.size() + 1) return false;  // no task at all
  std::map<uint32_t, std::pair<size_t, size_t>> runs{{m, {begin, end}}};
  for (const auto& [w, n] : answers) {
    size_t b = 0, e = 0;
    if (!worker_run(f, w, seeded.count(w) > 0, asks[w], b, e)) return false;
    runs[w] = {b, e};
    f.workers.push_back(w);
    if (seeded.count(w)) f.seeded.push_back(w);
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
  std::map<uint32_t, std::vector<double>> task_ns;  // per worker, its tasks in order
  task_sleep_.clear();
  for (uint32_t w : f.workers)
    if (!worker_figures(f, w, runs[w].first, runs[w].second, task_ns[w])) return false;
  if (!master_figures(f, begin, steps, task_ns)) return false;
  const uint32_t w0 = f.workers[0];
  const size_t req = asked.request;
  size_t w0_request = runs[w0].first;  // a worker's request and receive, for the watchdog's messages
  while (w0_request + 1 < runs[w0].second && !send(calls_[w0][w0_request].node)) ++w0_request;
  f.symbols = {mc[req + (probe_any(mc[req].node) ? 1 : 0)].node, mc[asked.answer].node,
               calls_[w0][w0_request].node, calls_[w0][runs[w0].second - 1].node};
  keep_tasks(f);
  return true;
}

// The master's figures: the tasks in the order handed out (each worker's
// last answer is its stop), the answers' tags and sizes, its computation
// per request and per answer, its time in the farm.
bool Finder::master_figures(Farm& f, size_t begin, const std::vector<MasterStep>& steps,
                            std::map<uint32_t, std::vector<double>>& task_ns) {
  const uint32_t m = f.master;
  const std::vector<Call>& mc = calls_[m];
  std::map<uint32_t, uint64_t> left, given;  // per worker: answers still to come, tasks given
  for (const MasterStep& s : steps) ++left[static_cast<uint32_t>(s.worker)];
  bool first_stop = true, first_task = true;
  double recv_ns = 0, answer_ns = 0;
  size_t requests = 0;
  for (const MasterStep& s : steps) {
    const uint32_t w = static_cast<uint32_t>(s.worker);
    const int64_t tag = value(mc[s.answer], Param::tag, m);
    const bool stop = --left[w] == 0;
    int64_t& want = stop ? f.stop_tag : f.task_tag;
    bool& first = stop ? first_stop : first_task;
    if (first) want = tag;
    first = false;
    if (f.worker_recv_tag >= 0 && tag != f.worker_recv_tag) return false;
    uint64_t answer_bytes = 0;
    for (size_t k = s.answer; k < s.answer_end; ++k) answer_bytes += bytes(mc[k], m);
    uint64_t& most = stop ? f.stop_bytes : f.task_bytes;
    most = std::max(most, answer_bytes);
    if (!stop) {
      const std::vector<double>& own = task_ns[w];
      const uint64_t k = given[w]++;
      if (k >= own.size()) return false;
      f.task_ns.push_back(own[k]);
      f.task_units.push_back(own[k] * rate_[w]);
      f.task_sleep_s.push_back(k < task_sleep_[w].size() ? task_sleep_[w][k] * 1e-9 : 0);
    }
    const size_t from = s.request == SIZE_MAX ? s.answer : s.request;
    for (size_t k = from; k < s.answer_end; ++k) {
      const double gap = k > begin ? mc[k].gap_ns : 0;
      (k >= s.answer ? answer_ns : recv_ns) += gap;
      const FoldedNode& node = p_.nodes[mc[k].node];
      f.traced_ns += gap + (m < node.dur.size() ? node.dur[m].mean : 0);
    }
    requests += s.request == SIZE_MAX ? 0 : 1;
  }
  if (f.task_ns.empty() || f.task_ns.size() > kMaxTasks) return false;
  f.entry_units[m] = mc[begin].gap_ns * rate_[m];
  f.master_recv_units = requests ? recv_ns / static_cast<double>(requests) * rate_[m] : 0;
  f.master_answer_units = answer_ns / static_cast<double>(steps.size()) * rate_[m];
  return true;
}

// Every n-th task, evenly through the run (the middle one of each n), at
// least kMinKeptPerWorker per worker where there are that many.
void Finder::keep_tasks(Farm& f) const {
  const uint64_t N = f.task_ns.size();
  uint64_t keep = N;
  if (scale_ > 1) {
    keep = (N + scale_ - 1) / scale_;
    keep = std::min<uint64_t>(N, std::max<uint64_t>(keep, kMinKeptPerWorker * f.workers.size()));
  }
  for (uint64_t j = 0; j < keep; ++j)
    f.kept.push_back(std::min<uint64_t>(N - 1, static_cast<uint64_t>((static_cast<double>(j) + 0.5) *
                                                                     static_cast<double>(N) / static_cast<double>(keep))));
}

}  // namespace

std::vector<Farm> find_farms(const FoldedProgram& p, const std::vector<double>& units_per_ns, uint32_t scale,
                             std::set<std::string>& notes) {
  if (p.thread != 0 || !p.threads.empty()) return {};
  return Finder(p, units_per_ns, scale, notes).run();
}

}  // namespace skt::gen
