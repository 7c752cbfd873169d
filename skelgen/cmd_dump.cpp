// skelgen dump: print a trace's events as text or JSON Lines.
#include <sys/stat.h>

#include <cinttypes>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "commands.h"
#include "skel/folded.h"
#include "skel/merged.h"
#include "skel/skel_funcs.h"
#include "skel/trace.h"

namespace skelgen {
namespace {

using nlohmann::json;
using skt::Event;
using skt::kNone;

bool is_completion(uint32_t f) {
  switch (f) {
    case skt::kFunc_MPI_Wait: case skt::kFunc_MPI_Waitall: case skt::kFunc_MPI_Waitany:
    case skt::kFunc_MPI_Waitsome: case skt::kFunc_MPI_Test: case skt::kFunc_MPI_Testall:
    case skt::kFunc_MPI_Testany: case skt::kFunc_MPI_Testsome:
      return true;
    default:
      return false;
  }
}

std::vector<std::string> flag_names(uint64_t f) {
  static const std::pair<uint64_t, const char*> names[] = {
      {skt::kFlagAnySource, "any_source"}, {skt::kFlagAnyTag, "any_tag"},   {skt::kFlagInPlace, "in_place"},
      {skt::kFlagProcNull, "proc_null"},   {skt::kFlagFortran, "fortran"},  {skt::kFlagTestFailed, "not_completed"},
      {skt::kFlagPersistent, "persistent"}, {skt::kFlagForwards, "forwards"}};
  std::vector<std::string> out;
  for (auto& [bit, n] : names)
    if (f & bit) out.push_back(n);
  return out;
}

std::string func_label(uint32_t id) {
  const char* n = skt::func_name(id);
  return n ? n : "func" + std::to_string(id);
}

json nullable(int64_t v) { return v == kNone || v == skt::kProcNull || v == skt::kUnknownComm ? json(nullptr) : json(v); }

json event_json(uint32_t rank, const Event& e, const skt::TraceFile& f) {
  json j;
  j["rank"] = rank;
  j["seq"] = e.seq;
  j["func"] = func_label(e.func);
  j["peer"] = nullable(e.peer);
  j["tag"] = nullable(e.tag);
  j["count"] = nullable(e.count);
  j["bytes"] = nullable(e.bytes);
  j["comm"] = nullable(e.comm);
  j["root"] = nullable(e.root);
  j["callsite"] = f.callsite_name(e.callsite);
  j["t_start"] = static_cast<double>(e.t_start_ns) * 1e-9;
  j["duration"] = static_cast<double>(e.duration_ns) * 1e-9;
  j["gap"] = static_cast<double>(e.gap_ns) * 1e-9;
  if (e.cpu_gap_ns != kNone) j["cpu_gap"] = static_cast<double>(e.cpu_gap_ns) * 1e-9;
  if (e.blocked_ns > 0) j["blocked"] = static_cast<double>(e.blocked_ns) * 1e-9;
  if (e.team_cpu_ns > 0) j["team_cpu"] = static_cast<double>(e.team_cpu_ns) * 1e-9;
  if (e.kernel_rate != kNone) j["kernel_rate"] = e.kernel_rate;
  if (e.thread != 0) j["thread"] = e.thread;
  if (e.kernel_samples != kNone) j["kernel_samples"] = e.kernel_samples;
  if (e.dtype != kNone) {
    j["dtype"] = e.dtype;
    j["dtype_size"] = f.datatype_size(e.dtype);
  }
  if (e.peer2 != kNone) j["peer2"] = nullable(e.peer2);
  if (e.tag2 != kNone) j["tag2"] = e.tag2;
  if (e.count2 != kNone) j["count2"] = e.count2;
  if (e.bytes2 != kNone) j["bytes2"] = e.bytes2;
  if (e.dtype2 != kNone) j["dtype2"] = e.dtype2;
  if (e.op != kNone) {
    auto it = f.ops().find(static_cast<uint32_t>(e.op));
    j["op"] = it == f.ops().end() ? json(e.op) : json(it->second);
  }
  if (e.flags) j["flags"] = flag_names(e.flags);
  if (is_completion(e.func)) {
    j["completed"] = e.reqs;
    if (!e.req_sources.empty()) {
      json s = json::array();
      for (int64_t x : e.req_sources) s.push_back(x == skt::kNoSource ? json(nullptr) : json(x));
      j["sources"] = s;
    }
  } else if (!e.reqs.empty()) {
    if (!skt::uses_requests(e.func)) j["request"] = e.reqs.at(0);  // the one it created
    else j["reqs"] = e.reqs;
  }
  if (!e.counts.empty()) j["counts"] = e.counts;
  if (!e.counts2.empty()) j["counts2"] = e.counts2;
  if (e.new_comm != kNone) j["new_comm"] = e.new_comm;
  if (e.color != kNone) j["color"] = e.color;
  if (e.key != kNone) j["key"] = e.key;
  if (!e.dims.empty()) j["dims"] = e.dims;
  if (!e.periods.empty()) j["periods"] = e.periods;
  return j;
}

// "gaps: thread CPU clock (MPI_THREAD_MULTIPLE), the node's ranks had a CPU each": what a rank file's
// computation gaps were measured with, and what the merge reads (docs/trace-format.md, "Header body").
std::string gap_clock_text(const skt::TraceHeader& h) {
  static const char* const levels[] = {"SINGLE", "FUNNELED", "SERIALIZED", "MULTIPLE"};
  std::string out = h.gap_clock == skt::GapClock::kThreadCpu ? "gaps: thread CPU clock" : "gaps: wall clock";
  out += std::string(" (MPI_THREAD_") + (h.thread_level < 4 ? levels[h.thread_level] : "?") + ")";
  switch (h.core_sharing) {
    case skt::CoreSharing::kOwnCores: return out + ", the node's ranks had a CPU each";
    case skt::CoreSharing::kShared: return out + ", the node's ranks outnumbered its CPUs";
    default: return out + ", CPU sharing not recorded";
  }
}

std::string event_text(uint32_t rank, const Event& e, const skt::TraceFile& f) {
  char head[128];
  std::snprintf(head, sizeof head, "%u %6" PRIu64 " %12.9f %11.9f %-20s", rank, e.seq,
                static_cast<double>(e.t_start_ns) * 1e-9, static_cast<double>(e.duration_ns) * 1e-9,
                func_label(e.func).c_str());
  std::string s = head;
  auto kv = [&s](const char* k, int64_t v) {
    if (v == kNone) return;
    s += ' ';
    s += k;
    s += '=';
    s += v == skt::kProcNull ? "null" : v == skt::kUnknownComm ? "?" : std::to_string(v);
  };
  auto list = [&s](const char* k, const std::vector<int64_t>& v) {
    if (v.empty()) return;
    s += ' ';
    s += k;
    s += '=';
    for (size_t i = 0; i < v.size(); ++i) s += (i ? "," : "") + std::to_string(v[i]);
  };
  kv("peer", e.peer);
  kv("tag", e.tag);
  kv("count", e.count);
  kv("bytes", e.bytes);
  kv("peer2", e.peer2);
  kv("tag2", e.tag2);
  kv("count2", e.count2);
  kv("bytes2", e.bytes2);
  kv("root", e.root);
  kv("op", e.op);
  kv("comm", e.comm);
  kv("new_comm", e.new_comm);
  kv("color", e.color);
  kv("key", e.key);
  list(is_completion(e.func) ? "completed" : "reqs", e.reqs);
  list("sources", e.req_sources);
  list("counts", e.counts);
  list("counts2", e.counts2);
  list("dims", e.dims);
  kv("kernel_rate", e.kernel_rate);
  kv("kernel_samples", e.kernel_samples);
  if (e.thread != 0) s += " thread=" + std::to_string(e.thread);
  for (const std::string& fl : flag_names(e.flags)) s += " " + fl;
  if (e.cpu_gap_ns != kNone) {
    char cpu[48];
    std::snprintf(cpu, sizeof cpu, " cpu_gap=%.9f", static_cast<double>(e.cpu_gap_ns) * 1e-9);
    s += cpu;
  }
  if (e.blocked_ns > 0) {
    char blocked[48];
    std::snprintf(blocked, sizeof blocked, " blocked=%.9f", static_cast<double>(e.blocked_ns) * 1e-9);
    s += blocked;
  }
  if (e.team_cpu_ns > 0) {
    char team[48];
    std::snprintf(team, sizeof team, " team_cpu=%.9f", static_cast<double>(e.team_cpu_ns) * 1e-9);
    s += team;
  }
  s += " @" + f.callsite_name(e.callsite);
  return s;
}

json info_json(const skt::TraceFile& f) {
  const skt::TraceHeader& h = f.header();
  json j;
  j["type"] = "rank_info";
  j["rank"] = h.rank;
  j["world_size"] = h.world_size;
  j["format_version"] = std::to_string(h.version_major) + "." + std::to_string(h.version_minor);
  j["run_id"] = h.run_id;
  j["hostname"] = h.hostname;
  j["pid"] = h.pid;
  j["mpi_library"] = h.mpi_library;
  j["mpi_version"] = std::to_string(h.mpi_version_major) + "." + std::to_string(h.mpi_version_minor);
  j["thread_level"] = h.thread_level;
  j["executable"] = h.executable;
  j["command_line"] = h.command_line;
  j["tracer_version"] = h.tracer_version;
  j["clock"] = "CLOCK_MONOTONIC";
  j["start_realtime_ns"] = h.start_realtime_ns;
  j["stack_depth"] = h.stack_depth;
  j["kernel"] = {{"name", h.kernel_name}, {"version", h.kernel_version},
                 {"units_per_s", h.kernel_units_per_s}, {"calibration_s", h.calibration_s}};
  j["gap_clock"] = h.gap_clock == skt::GapClock::kThreadCpu ? "thread_cpu" : "wall";
  j["gap_floor_ns"] = h.gap_floor_ns;  // the tracer's fixed cost in every gap (1.4)
  if (h.gap_clock == skt::GapClock::kThreadCpu) j["cpu_gap_floor_ns"] = h.cpu_gap_floor_ns;
  j["events"] = f.events_read();
  j["end"] = skt::trace_end_name(f.end());
  json comms = json::array();
  for (const auto& [id, c] : f.comms())
    comms.push_back({{"id", id}, {"parent", nullable(c.parent)}, {"created_by", func_label(c.created_by)},
                     {"members", c.members()}});
  j["comms"] = comms;
  json types = json::array();
  for (const auto& [id, t] : f.datatypes()) types.push_back({{"id", id}, {"size", t.size}, {"name", t.name}});
  j["datatypes"] = types;
  json sites = json::array();
  for (const auto& [id, c] : f.callsites()) sites.push_back({{"id", id}, {"site", f.callsite_name(id)}});
  j["callsites"] = sites;
  return j;
}

std::string ranks_text(const std::vector<uint32_t>& ranks, uint32_t world) {
  if (ranks.size() == world) return "all";
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    s += (s.empty() ? "" : ",") + std::to_string(ranks[i]) + (j > i ? "-" + std::to_string(ranks[j]) : "");
    i = j + 1;
  }
  return s;
}

// One merged event's call and parameters in words: "MPI_Isend @site comm=2 ranks=all peer=...".
std::string event_words(const skt::MergedTrace& m, const skt::MergedEvent& e) {
  const skt::Identity& id = m.identities[e.identity];
  std::string line = func_label(id.func) + " @" + m.callsite_name(id.callsite);
  if (id.comm != kNone) line += " comm=" + (id.comm == skt::kUnknownComm ? std::string("?") : std::to_string(id.comm));
  if (id.root != kNone) line += " root=" + std::to_string(id.root);
  if (id.peer_class == skt::PeerClass::kAnySource) line += " any_source";
  line += " ranks=" + ranks_text(e.ranks, m.world_size);
  for (size_t p = 0; p < skt::kNumParams; ++p)
    if (e.params[p].kind != skt::ParamKind::kAbsent)
      line += std::string(" ") + skt::param_name(static_cast<skt::Param>(p)) + "=" +
              m.describe(e, static_cast<skt::Param>(p));
  for (const skt::ListDesc& l : e.lists) {
    line += std::string(" ") + skt::list_field_name(l.field) + "=";
    if (!l.same) line += "per-rank:";
    const auto& v = l.lists[0];
    for (size_t k = 0; k < v.size(); ++k) line += (k ? "," : "") + std::to_string(v[k]);
  }
  return line;
}

// The events of one merged stream (the first thread's, or another's).
void dump_merged_events(const skt::MergedTrace& m, const DumpOptions& opt) {
  const bool jsonl = opt.format == "jsonl";
  std::vector<size_t> pos(m.world_size, 0);  // each rank's index into its time column
  for (size_t idx = 0; idx < m.events.size(); ++idx) {
    const skt::MergedEvent& e = m.events[idx];
    const skt::Identity& id = m.identities[e.identity];
    bool show = opt.rank < 0 || skt::MergedTrace::position(e, static_cast<uint32_t>(opt.rank)) >= 0;
    if (show && jsonl) {
      json j;
      j["index"] = idx;
      if (m.thread != 0) j["thread"] = m.thread;
      j["func"] = func_label(id.func);
      j["callsite"] = m.callsite_name(id.callsite);
      j["comm"] = nullable(id.comm);
      j["root"] = nullable(id.root);
      if (id.dtype != kNone) j["dtype"] = m.datatypes[static_cast<size_t>(id.dtype)].name;
      if (id.op != kNone) j["op"] = m.ops[static_cast<size_t>(id.op)];
      if (id.peer_class == skt::PeerClass::kAnySource) j["any_source"] = true;
      j["ranks"] = e.ranks;
      json params = json::object(), describe = json::object();
      for (size_t p = 0; p < skt::kNumParams; ++p) {
        if (e.params[p].kind == skt::ParamKind::kAbsent) continue;
        auto P = static_cast<skt::Param>(p);
        json vals = json::array();
        for (uint32_t r : e.ranks) vals.push_back(nullable(m.value(e, P, r)));
        params[skt::param_name(P)] = vals;
        describe[skt::param_name(P)] = m.describe(e, P);
      }
      for (const skt::ListDesc& l : e.lists) {
        json vals = json::array();
        for (uint32_t r : e.ranks) vals.push_back(m.list(e, l.field, r));
        params[skt::list_field_name(l.field)] = vals;
      }
      j["params"] = params;
      j["describe"] = describe;
      json gaps = json::array(), durs = json::array();
      for (uint32_t r : e.ranks) {
        gaps.push_back(static_cast<double>(m.ranks[r].gaps[pos[r]]) * 1e-9);
        durs.push_back(static_cast<double>(m.ranks[r].durations[pos[r]]) * 1e-9);
      }
      j["gap"] = gaps;
      j["duration"] = durs;
      json works = json::array();
      bool any_work = false;
      for (uint32_t r : e.ranks) {
        bool has = !m.ranks[r].works.empty();
        any_work |= has;
        works.push_back(has ? json(static_cast<double>(m.ranks[r].works[pos[r]]) * 1e-9) : json(nullptr));
      }
      if (any_work) j["cpu_gap"] = works;
      json blocked = json::array();
      bool any_blocked = false;
      for (uint32_t r : e.ranks) {
        const int64_t b = m.ranks[r].blocked.empty() ? 0 : m.ranks[r].blocked[pos[r]];
        any_blocked |= b > 0;
        blocked.push_back(static_cast<double>(b) * 1e-9);
      }
      if (any_blocked) j["blocked"] = blocked;
      std::puts(j.dump().c_str());
    } else if (show) {
      std::puts((std::to_string(idx) + " " + event_words(m, e)).c_str());
    }
    for (uint32_t r : e.ranks) ++pos[r];
  }
}

// A merged trace: one line / object per merged event, with its participating
// ranks, each parameter's description and each rank's values.
int dump_merged(const std::string& path, const DumpOptions& dopt) {
  const DumpOptions& opt = dopt;
  skt::MergedTrace m = skt::read_merged(path);
  bool jsonl = opt.format == "jsonl";
  if (opt.rank >= 0 && static_cast<uint32_t>(opt.rank) >= m.world_size)
    throw skt::TraceError(path + ": no rank " + std::to_string(opt.rank) + " (world size " +
                          std::to_string(m.world_size) + ")");
  if (!jsonl)
    std::printf("# merged trace of %u ranks from %s: %zu events\n# index func @callsite comm ranks params...\n",
                m.world_size, m.source.c_str(), m.events.size());
  dump_merged_events(m, opt);
  for (const skt::MergedTrace& t : m.threads) {
    if (!jsonl)
      std::printf("# thread %u: %zu events, started after event %lld, done before %s\n", t.thread, t.events.size(),
                  static_cast<long long>(t.fork_after),
                  t.join_before < 0 ? "the end" : ("event " + std::to_string(t.join_before)).c_str());
    dump_merged_events(t, opt);
  }
  if (opt.info) {
    json j;
    j["type"] = "merged_info";
    j["world_size"] = m.world_size;
    j["run_id"] = m.run_id;
    j["lookahead"] = m.lookahead;
    j["source"] = m.source;
    json comms = json::array();
    for (size_t c = 0; c < m.comms.size(); ++c)
      comms.push_back({{"id", c},
                       {"created_by", c < 2 ? (c == 0 ? "MPI_COMM_WORLD" : "MPI_COMM_SELF")
                                            : func_label(m.comms[c].created_by)},
                       {"parent", nullable(m.comms[c].parent)},
                       {"dims", m.comms[c].dims},
                       {"groups", m.comms[c].groups},
                       {"group_of_rank", m.comms[c].group_of}});
    j["comms"] = comms;
    json ranks = json::array();
    for (const auto& r : m.ranks)
      ranks.push_back({{"hostname", r.hostname},
                       {"events", r.events},
                       {"end", skt::trace_end_name(r.end)},
                       {"kernel_units_per_s", r.kernel_units_per_s}});
    j["ranks"] = ranks;
    if (jsonl) std::puts(j.dump().c_str());
    else std::printf("# info %s\n", j.dump(2).c_str());
  }
  return 0;
}

json stats_json(const std::vector<skt::RankStat>& v) {
  json a = json::array();
  for (const skt::RankStat& s : v)
    a.push_back(s.n ? json{{"n", s.n}, {"mean", s.mean * 1e-9}, {"sd", s.sd * 1e-9}, {"min", s.min * 1e-9},
                           {"max", s.max * 1e-9}}
                    : json(nullptr));
  return a;
}

// A folded program: the folded form, a legend of the symbols, and (JSON)
// every node with its timing per rank.
int dump_folded(const std::string& path, const DumpOptions& opt) {
  if (opt.rank >= 0)  // its nodes are every rank's: nothing to pick
    throw skt::TraceError(path + ": --rank picks the events of a rank trace or a merged trace; a folded program "
                                 "is dumped whole");
  skt::FoldedProgram p = skt::read_folded(path);
  const skt::MergedTrace& m = p.symbols;
  if (opt.format == "jsonl") {
    std::puts(json{{"type", "program"}, {"source", p.source}, {"merged_events", p.merged_events},
                   {"world_size", m.world_size}, {"folded", p.to_string()}, {"length", p.length()},
                   {"top", p.top}}
                  .dump()
                  .c_str());
    for (size_t i = 0; i < m.events.size(); ++i)
      std::puts(json{{"type", "symbol"}, {"symbol", i}, {"call", event_words(m, m.events[i])},
                     {"func", func_label(m.identities[m.events[i].identity].func)}, {"ranks", m.events[i].ranks}}
                    .dump()
                    .c_str());
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const skt::FoldedNode& n = p.nodes[i];
      json j{{"type", "node"}, {"node", i}, {"instances", n.instances}, {"gap", stats_json(n.gap)}};
      if (!n.work.empty()) j["cpu_gap"] = stats_json(n.work);
      if (!n.blocked.empty()) j["blocked"] = stats_json(n.blocked);
      if (!n.profile.empty()) {  // per rank: null, or the factor of its mean gap in each part of the instances
        json per = json::array();
        for (const auto& f : n.profile) per.push_back(f.empty() ? json(nullptr) : json(f));
        j["profile"] = per;
      }
      if (n.phase_period) {  // per rank: null, or the factor of its mean gap at each phase of a cycle
        json per = json::array();
        for (const auto& f : n.phase_factor) per.push_back(f.empty() ? json(nullptr) : json(f));
        j["phases"] = {{"period", n.phase_period}, {"by", n.phase_by_instance ? "instance" : "iteration"}, {"per_rank", per}};
      }
      if (n.is_loop()) {
        j["count"] = n.count;
        j["body"] = n.body;
      } else {
        j["symbol"] = n.symbol;
        j["duration"] = stats_json(n.dur);
        json rules = json::array();
        for (const skt::CountRule& r : n.rules) {
          json per = json::array();
          for (size_t k = 0; k < r.kind.size(); ++k)
            per.push_back(r.kind[k] == skt::RuleKind::kNone ? json(nullptr)
                          : r.kind[k] == skt::RuleKind::kLinear ? json{{"rule", "linear"}, {"a", r.a[k]}, {"b", r.b[k]}}
                          : r.kind[k] == skt::RuleKind::kLoopLinear
                              ? json{{"rule", "loop_linear"}, {"a", r.a[k]}, {"b", r.b[k]}}
                          : skt::cycles(r.kind[k])
                              ? json{{"rule", r.kind[k] == skt::RuleKind::kCycle ? "cycle" : "instance_cycle"},
                                     {"values", std::vector<int64_t>(r.cycle.begin() + static_cast<long>(k * r.period),
                                                                     r.cycle.begin() + static_cast<long>((k + 1) * r.period))}}
                              : json{{"rule", "mean"}, {"mean", r.a[k]}, {"min", r.min[k]}, {"max", r.max[k]}});
          rules.push_back({{"param", skt::param_name(r.param)}, {"per_rank", per}});
        }
        if (!n.rules.empty()) j["count_rules"] = rules;
      }
      std::puts(j.dump().c_str());
    }
    return 0;
  }
  std::printf("# folded program of %u ranks from %s: %llu merged events, %zu symbols, length %llu%s\n", m.world_size,
              p.source.c_str(), static_cast<unsigned long long>(p.merged_events), m.events.size(),
              static_cast<unsigned long long>(p.length()), p.callsites_joined ? ", call sites joined" : "");
  std::printf("%s\n", p.to_string().c_str());
  for (const skt::FoldedProgram& t : p.threads) {
    std::string form = t.to_string();
    if (form.size() > 2000) form = form.substr(0, 2000) + " ...";
    std::printf("# thread %u: started after merged event %lld, done before %s; %llu merged events, length %llu\n%s\n",
                t.thread, static_cast<long long>(t.fork_after),
                t.join_before < 0 ? "the end" : ("merged event " + std::to_string(t.join_before)).c_str(),
                static_cast<unsigned long long>(t.merged_events), static_cast<unsigned long long>(t.length()),
                form.c_str());
  }
  std::printf("# symbols\n");
  for (size_t i = 0; i < m.events.size(); ++i)
    std::printf("S%zu = %s\n", i, event_words(m, m.events[i]).c_str());
  // per node and rank: factors of the mean gap (FoldedNode::profile, phase_factor)
  auto factor_tables = [&](const char* title, auto tables_of) {
    bool any = false;
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const skt::FoldedNode& n = p.nodes[i];
      const std::vector<std::vector<double>>& tables = tables_of(n);
      for (size_t r = 0; r < tables.size(); ++r) {
        if (tables[r].empty()) continue;
        if (!any) std::printf("# %s\n", title);
        any = true;
        std::printf("%s%zu rank %zu:", n.is_loop() ? "loop n" : "n", i, r);
        for (double f : tables[r]) std::printf(" %.2f", f);
        std::printf("\n");
      }
    }
  };
  factor_tables("computation that drifts through the run: per rank, its gap in parts of the node's instances, as "
                "factors of the mean",
                [](const skt::FoldedNode& n) -> const std::vector<std::vector<double>>& { return n.profile; });
  factor_tables("computation that differs by phase: per rank, its gap at each phase of a cycle (over the loop's "
                "iteration or the node's instance, as its rules), as factors of the mean",
                [](const skt::FoldedNode& n) -> const std::vector<std::vector<double>>& { return n.phase_factor; });
  return 0;
}

}  // namespace

void setup_dump(CLI::App& app, DumpOptions& opt) {
  app.description(
      "Print a trace directory, one rank-NNNNN.skt file, a merged trace (skelgen merge) or a folded program\n"
      "(skelgen compress).\n"
      "text: one line per event: rank seq t_start duration func fields... @callsite\n"
      "jsonl: one JSON object per event (fields in docs/trace-format.md, \"Dump\")\n"
      "merged: one line / object per merged event: ranks taking part, each parameter's rule and values\n"
      "folded: the folded form (e.g. 'S0 ( S1 ( S2 S3 )^10 )^200 S4') and what each symbol is; jsonl adds\n"
      "every loop and call with its timing per rank");
  app.add_option("input", opt.input, "Trace directory or rank file")->required();
  app.add_option("-r,--rank", opt.rank, "Only this rank")->check(CLI::NonNegativeNumber);
  app.add_option("-f,--format", opt.format, "Output format")->check(CLI::IsMember({"text", "jsonl"}));
  app.add_flag("--info", opt.info,
               "Print each rank's header and tables (communicators, datatypes, call sites) after its events");
}

int run_dump(const DumpOptions& opt) {
  struct stat sb {};
  if (stat(opt.input.c_str(), &sb) != 0) throw skt::TraceError(opt.input + ": no such file or directory");
  std::vector<std::string> files;
  if (S_ISDIR(sb.st_mode)) {
    skt::TraceDir td(opt.input);
    if (opt.rank >= 0 && static_cast<uint32_t>(opt.rank) >= td.world_size())
      throw skt::TraceError(opt.input + ": no rank " + std::to_string(opt.rank) + " (world size " +
                            std::to_string(td.world_size()) + ")");
    for (uint32_t r = 0; r < td.world_size(); ++r)
      if (opt.rank < 0 || static_cast<uint32_t>(opt.rank) == r) files.push_back(td.rank_path(r));
  } else if (skt::is_merged_file(opt.input)) {
    return dump_merged(opt.input, opt);
  } else if (skt::is_folded_file(opt.input)) {
    return dump_folded(opt.input, opt);
  } else {
    files.push_back(opt.input);
  }
  bool jsonl = opt.format == "jsonl";
  int status = 0;
  for (const std::string& path : files) {
    skt::TraceFile f(path);
    uint32_t rank = f.header().rank;
    if (!jsonl) {
      std::printf("# rank %u of %u  host %s  %s\n", rank, f.header().world_size, f.header().hostname.c_str(),
                  f.header().mpi_library.c_str());
      std::printf("# %s\n", gap_clock_text(f.header()).c_str());
      std::printf("# rank    seq      t_start    duration func                 fields @callsite\n");
    }
    Event e;
    while (f.next(e)) {
      if (jsonl) std::puts(event_json(rank, e, f).dump().c_str());
      else std::puts(event_text(rank, e, f).c_str());
    }
    if (f.end() == skt::TraceEnd::kTruncated) {
      std::fprintf(stderr, "skelgen: warning: %s: truncated (the process died or the disk filled); %llu events read\n",
                   path.c_str(), static_cast<unsigned long long>(f.events_read()));
    }
    if (opt.info) {
      json j = info_json(f);
      if (jsonl) std::puts(j.dump().c_str());
      else std::printf("# info %s\n", j.dump(2).c_str());
    }
  }
  return status;
}

}  // namespace skelgen
