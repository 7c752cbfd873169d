#include "skel/value_bounds.h"

#include <cmath>
#include <cstdio>
#include <vector>

#include "skel/skel_funcs.h"

namespace skt::bounds {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

bool within(int64_t v, int64_t lo, int64_t hi) { return v >= lo && v <= hi; }

// A world rank, MPI_PROC_NULL, or absent.
bool is_peer(int64_t v, int64_t world) { return v == kNone || v == kProcNull || within(v, 0, world - 1); }
bool is_tag(int64_t v) { return v == kNone || v == kAnyTag || within(v, 0, kMaxTag); }
bool is_count(int64_t v) { return v == kNone || within(v, 0, kMaxCount); }
bool is_bytes(int64_t v) { return v == kNone || within(v, 0, kMaxBytes); }
bool is_time(int64_t ns) { return within(ns, 0, kMaxTimeNs); }
bool is_rate(double r) { return std::isfinite(r) && r >= 0 && r <= kMaxKernelRate; }

std::string list_problem(const char* what, const std::vector<int64_t>& v, int64_t lo, int64_t hi) {
  for (int64_t x : v)
    if (!within(x, lo, hi)) return std::string(what) + " holds " + num(x) + ", outside " + num(lo) + ".." + num(hi);
  return "";
}

// The range a value of parameter p must lie in, for a world of P ranks.
bool param_value_ok(Param p, int64_t v, int64_t P) {
  switch (p) {
    case Param::peer:
    case Param::peer2:
      return is_peer(v, P);
    case Param::tag:
    case Param::tag2:
      return is_tag(v);
    case Param::count:
    case Param::count2:
      return is_count(v);
    case Param::bytes:
    case Param::bytes2:
      return is_bytes(v);
    case Param::forwards:
      return v == kNone || v == 0 || v == 1;
    default:
      return true;  // colours, keys: any int; new_comm: checked against the communicators
  }
}

bool is_peer_param(Param p) { return p == Param::peer || p == Param::peer2; }

std::string event_where(const MergedEvent& e, const MergedTrace& m, size_t index) {
  const char* f = func_name(m.identities[e.identity].func);
  return "event " + std::to_string(index) + " (" + (f ? f : "?") + ")";
}

// The values parameter p of event e takes on its ranks: only their extremes
// where the rule is monotone in the rank, every one where it is a table.
std::string param_problem(const MergedTrace& m, const MergedEvent& e, Param p, bool comm_known) {
  const ParamDesc& d = e.params[static_cast<size_t>(p)];
  const int64_t P = m.world_size;
  if (d.kind == ParamKind::kAbsent || e.ranks.empty()) return "";
  if (is_peer_param(p) && !comm_known) return "";  // ranks of a communicator the tracer did not see created
  auto ok = [&](int64_t v) {
    if (p == Param::new_comm) return v == kNone || within(v, 0, static_cast<int64_t>(m.comms.size()) - 1);
    return param_value_ok(p, v, P);
  };
  auto report = [&](int64_t v) { return std::string(param_name(p)) + " " + num(v) + " is out of range"; };
  switch (d.kind) {
    case ParamKind::kConst:
      return ok(d.a) ? "" : report(d.a);
    case ParamKind::kLinear: {
      for (uint32_t r : {e.ranks.front(), e.ranks.back()}) {
        __int128 v = static_cast<__int128>(d.a) + static_cast<__int128>(d.b) * r;
        if (v < INT64_MIN + 1 || v > INT64_MAX || !ok(static_cast<int64_t>(v)))
          return std::string(param_name(p)) + " " + num(d.a) + " + " + num(d.b) + "*rank is out of range";
      }
      return "";
    }
    case ParamKind::kTable:
      if (d.a < 0 || static_cast<size_t>(d.a) + e.ranks.size() > e.tables.size()) return "a table out of place";
      for (size_t k = 0; k < e.ranks.size(); ++k) {
        int64_t v = e.tables[static_cast<size_t>(d.a) + k];
        if (!ok(v)) return report(v);
      }
      return "";
    case ParamKind::kRel:
    case ParamKind::kRelOpen:
      return within(d.a, -P, P) ? "" : std::string(param_name(p)) + " rank + " + num(d.a) + " is out of range";
    case ParamKind::kXor:
      for (uint32_t r : e.ranks)
        if ((static_cast<int64_t>(r) ^ d.a) >= P || d.a < 0)
          return std::string(param_name(p)) + " rank xor " + num(d.a) + " is out of range";
      return "";
    case ParamKind::kCart: {
      const Identity& id = m.identities[e.identity];
      bool cart = id.comm >= 0 && static_cast<size_t>(id.comm) < m.comms.size();
      size_t dims = cart ? m.comms[static_cast<size_t>(id.comm)].dims.size() : 0;
      return d.a >= 0 && static_cast<size_t>(d.a) < dims && within(d.b, -P, P)
                 ? ""
                 : std::string(param_name(p)) + " Cartesian shift " + num(d.b) + " along dimension " + num(d.a) +
                       " is out of range";
    }
    default:
      return "";
  }
}

std::string identity_problem(const MergedTrace& m, const Identity& id) {
  const int64_t P = m.world_size;
  auto index_ok = [](int64_t v, size_t n) { return v == kNone || within(v, 0, static_cast<int64_t>(n) - 1); };
  if (!func_name(id.func)) return "unknown function id " + num(static_cast<int64_t>(id.func));
  if (!m.callsites.empty() && id.callsite >= m.callsites.size())
    return "call site " + num(static_cast<int64_t>(id.callsite)) + " out of range";
  if (id.comm != kUnknownComm && !index_ok(id.comm, m.comms.size())) return "communicator " + num(id.comm) + " out of range";
  if (!index_ok(id.dtype, m.datatypes.size()) || !index_ok(id.dtype2, m.datatypes.size()))
    return "datatype out of range";
  if (!index_ok(id.op, m.ops.size())) return "reduction op " + num(id.op) + " out of range";
  if (id.comm != kUnknownComm && id.root != kNone && !within(id.root, 0, P - 1))
    return "root " + num(id.root) + " outside the world of " + num(P) + " ranks";
  return "";
}

std::string tables_problem(const MergedTrace& m) {
  const int64_t P = m.world_size;
  for (size_t r = 0; r < m.ranks.size(); ++r)
    if (!is_rate(m.ranks[r].kernel_units_per_s))
      return "rank " + std::to_string(r) + "'s kernel rate " + num(m.ranks[r].kernel_units_per_s) + " is out of range";
  for (const CommSymbol& c : m.comms) {
    for (const auto& g : c.groups)
      if (auto s = list_problem("a communicator's group", g, 0, P - 1); !s.empty()) return s;
    if (auto s = list_problem("a Cartesian communicator's dimensions", c.dims, 0, P); !s.empty()) return s;
  }
  for (const Identity& id : m.identities)
    if (auto s = identity_problem(m, id); !s.empty()) return s;
  return "";
}

std::string events_problem(const MergedTrace& m) {
  for (size_t i = 0; i < m.events.size(); ++i) {
    const MergedEvent& e = m.events[i];
    bool comm_known = m.identities[e.identity].comm != kUnknownComm;
    for (size_t q = 0; q < kNumParams; ++q)
      if (auto s = param_problem(m, e, static_cast<Param>(q), comm_known); !s.empty())
        return event_where(e, m, i) + ": " + s;
    for (const ListDesc& l : e.lists) {
      if (l.field != ListField::counts && l.field != ListField::counts2) continue;
      for (const auto& v : l.lists)
        if (auto s = list_problem(list_field_name(l.field), v, 0, kMaxCount); !s.empty()) return event_where(e, m, i) + ": " + s;
    }
  }
  return "";
}

std::string times_problem(const MergedTrace& m) {
  for (size_t r = 0; r < m.ranks.size(); ++r) {
    const MergedRank& mr = m.ranks[r];
    auto where = [&](const char* what, size_t k, int64_t v) {
      return "rank " + std::to_string(r) + "'s " + what + " " + num(v) + " ns at its event " + std::to_string(k) +
             " is out of range";
    };
    // Gaps may be a little below 0 (a thread's call seen before another's end); never longer than a run.
    for (size_t k = 0; k < mr.gaps.size(); ++k)
      if (!within(mr.gaps[k], -kMaxTimeNs, kMaxTimeNs)) return where("gap", k, mr.gaps[k]);
    for (size_t k = 0; k < mr.durations.size(); ++k)
      if (!is_time(mr.durations[k])) return where("call time", k, mr.durations[k]);
    for (size_t k = 0; k < mr.works.size(); ++k)
      if (!within(mr.works[k], -kMaxTimeNs, kMaxTimeNs)) return where("CPU time", k, mr.works[k]);
    for (size_t k = 0; k < mr.blocked.size(); ++k)
      if (!is_time(mr.blocked[k])) return where("blocked time", k, mr.blocked[k]);
  }
  return "";
}

bool stat_ok(const RankStat& s) {
  auto t = [](double v) { return std::isfinite(v) && std::fabs(v) <= static_cast<double>(kMaxTimeNs); };
  return t(s.mean) && t(s.min) && t(s.max) && std::isfinite(s.sd) && s.sd >= 0 &&
         s.sd <= static_cast<double>(kMaxTimeNs);
}

std::string stats_problem(const FoldedNode& n) {
  for (const auto* v : {&n.gap, &n.dur, &n.work, &n.blocked})
    for (const RankStat& s : *v)
      if (!stat_ok(s)) return "a time statistic out of range (mean " + num(s.mean) + " ns)";
  for (const auto* tables : {&n.profile, &n.phase_factor})
    for (const auto& t : *tables)
      for (double f : t)
        if (!std::isfinite(f) || f < 0 || f > kMaxFactor) return "a computation factor " + num(f) + " out of range";
  return "";
}

// The values a rule gives over instances 0 .. instances-1 must stay in its parameter's range.
std::string rule_problem(const CountRule& rule, uint64_t instances, int64_t P) {
  auto ok = [&](double v) {
    return std::isfinite(v) && std::fabs(v) < 9.2e18 && param_value_ok(rule.param, static_cast<int64_t>(std::llround(v)), P);
  };
  std::string what = std::string("the rule of ") + param_name(rule.param);
  for (size_t r = 0; r < rule.kind.size(); ++r) {
    RuleKind k = rule.kind[r];
    if (k == RuleKind::kNone) continue;
    double a = r < rule.a.size() ? rule.a[r] : 0, b = r < rule.b.size() ? rule.b[r] : 0;
    // (a loop's iterations are at most the node's instances)
    if ((k == RuleKind::kLinear || k == RuleKind::kLoopLinear) &&
        !(ok(a) && ok(a + b * static_cast<double>(instances ? instances - 1 : 0))))
      return what + " (" + num(a) + " + " + num(b) + (k == RuleKind::kLoopLinear ? "*k" : "*i") + ") is out of range";
    if (k == RuleKind::kMean) {
      double lo = r < rule.min.size() ? rule.min[r] : a, hi = r < rule.max.size() ? rule.max[r] : a;
      if (!(ok(a) && ok(lo) && ok(hi))) return what + " (mean " + num(a) + ") is out of range";
    }
  }
  for (int64_t v : rule.cycle)
    if (!param_value_ok(rule.param, v, P)) return what + " cycles through " + num(v) + ", out of range";
  return "";
}

// The number of calls node i stands for, at most `cap` (a loop may not
// claim more calls than the merged trace had).
uint64_t expanded(const FoldedProgram& p, uint32_t i, std::vector<uint64_t>& memo, uint64_t cap) {
  if (memo[i] != UINT64_MAX) return memo[i];
  const FoldedNode& n = p.nodes[i];
  uint64_t body = 0;
  if (!n.is_loop()) body = 1;
  for (uint32_t c : n.body) body = std::min(cap + 1, body + expanded(p, c, memo, cap));
  uint64_t total = n.is_loop() ? (body == 0 ? 0 : (n.count > (cap + 1) / body ? cap + 1 : n.count * body)) : body;
  return memo[i] = std::min(total, cap + 1);
}

std::string structure_problem(const FoldedProgram& p) {
  std::vector<uint64_t> memo(p.nodes.size(), UINT64_MAX);
  uint64_t cap = p.merged_events, total = 0;
  for (uint32_t t : p.top) total = std::min(cap + 1, total + expanded(p, t, memo, cap));
  if (total > cap)
    return "its loops stand for more calls than the " + std::to_string(cap) + " of the merged trace it was folded from";
  // Each node runs as often as its parents' iterations say (children come before parents).
  std::vector<uint64_t> runs(p.nodes.size(), 0);
  for (uint32_t t : p.top) ++runs[t];
  for (size_t i = p.nodes.size(); i-- > 0;)
    for (uint32_t c : p.nodes[i].body) {
      uint64_t more = 0;
      if (__builtin_mul_overflow(runs[i], p.nodes[i].count, &more) || __builtin_add_overflow(runs[c], more, &runs[c]))
        return "node " + std::to_string(c) + " runs more than 2^64 times";
    }
  for (size_t i = 0; i < p.nodes.size(); ++i)
    if (runs[i] != p.nodes[i].instances)
      return "node " + std::to_string(i) + " says it runs " + std::to_string(p.nodes[i].instances) + " times, its loops " +
             std::to_string(runs[i]);
  return "";
}

}  // namespace

std::string header_problem(const TraceHeader& h) {
  if (!is_rate(h.kernel_units_per_s)) return "kernel rate " + num(h.kernel_units_per_s) + " is out of range";
  if (!std::isfinite(h.calibration_s) || h.calibration_s < 0 || h.calibration_s > 1e6)
    return "calibration time " + num(h.calibration_s) + " s is out of range";
  return "";
}

std::string event_problem(const TraceFile& f, const Event& ev) {
  const int64_t P = f.header().world_size;
  auto defined = [](const auto& table, int64_t id) {
    return id == kNone || (id >= 0 && id <= UINT32_MAX && table.count(static_cast<uint32_t>(id)));
  };
  const bool comm_known = ev.comm != kUnknownComm;
  if (!is_time(ev.t_start_ns) || !is_time(ev.duration_ns)) return "a time beyond a year after the start";
  if (ev.cpu_gap_ns != kNone && !is_time(ev.cpu_gap_ns)) return "CPU time of its gap " + num(ev.cpu_gap_ns) + " ns out of range";
  if (!is_time(ev.blocked_ns)) return "blocked time " + num(ev.blocked_ns) + " ns out of range";
  if (!is_time(ev.team_cpu_ns)) return "its other threads' CPU time " + num(ev.team_cpu_ns) + " ns out of range";
  if (ev.kernel_rate != kNone && !is_rate(static_cast<double>(ev.kernel_rate)))
    return "kernel rate " + num(ev.kernel_rate) + " out of range";
  if (comm_known && ev.comm != kCommWorld && ev.comm != kCommSelf && !defined(f.comms(), ev.comm))
    return "communicator " + num(ev.comm) + " was never defined";
  if (!defined(f.datatypes(), ev.dtype) || !defined(f.datatypes(), ev.dtype2)) return "a datatype that was never defined";
  if (!defined(f.ops(), ev.op)) return "reduction op " + num(ev.op) + " was never defined";
  if (comm_known && (!is_peer(ev.peer, P) || !is_peer(ev.peer2, P)))
    return "peer " + num(is_peer(ev.peer, P) ? ev.peer2 : ev.peer) + " outside the world of " + num(P) + " ranks";
  if (comm_known && ev.root != kNone && !within(ev.root, 0, P - 1))
    return "root " + num(ev.root) + " outside the world of " + num(P) + " ranks";
  if (!is_tag(ev.tag) || !is_tag(ev.tag2)) return "tag " + num(is_tag(ev.tag) ? ev.tag2 : ev.tag) + " out of range";
  if (!is_count(ev.count) || !is_count(ev.count2))
    return "count " + num(is_count(ev.count) ? ev.count2 : ev.count) + " out of range";
  if (!is_bytes(ev.bytes) || !is_bytes(ev.bytes2))
    return "byte size " + num(is_bytes(ev.bytes) ? ev.bytes2 : ev.bytes) + " out of range";
  if (auto s = list_problem("its counts", ev.counts, 0, kMaxCount); !s.empty()) return s;
  if (auto s = list_problem("its receive counts", ev.counts2, 0, kMaxCount); !s.empty()) return s;
  return "";
}

std::string merged_problem(const MergedTrace& m, bool with_times) {
  if (auto s = tables_problem(m); !s.empty()) return s;
  if (auto s = events_problem(m); !s.empty()) return s;
  if (with_times)
    if (auto s = times_problem(m); !s.empty()) return s;
  for (const MergedTrace& t : m.threads)
    if (auto s = merged_problem(t, with_times); !s.empty()) return "thread " + std::to_string(t.thread) + ": " + s;
  return "";
}

std::string folded_problem(const FoldedProgram& p) {
  if (auto s = merged_problem(p.symbols, false); !s.empty()) return "symbols: " + s;
  if (auto s = structure_problem(p); !s.empty()) return s;
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const FoldedNode& n = p.nodes[i];
    if (auto s = stats_problem(n); !s.empty()) return "node " + std::to_string(i) + ": " + s;
    for (const CountRule& r : n.rules)
      if (auto s = rule_problem(r, n.instances, p.symbols.world_size); !s.empty()) return "node " + std::to_string(i) + ": " + s;
  }
  for (const FoldedProgram& t : p.threads)
    if (auto s = folded_problem(t); !s.empty()) return "thread " + std::to_string(t.thread) + ": " + s;
  return "";
}

}  // namespace skt::bounds
