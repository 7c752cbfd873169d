#include <algorithm>
#include <cstring>
#include <fstream>

#include "skel/codec.h"
#include "skel/file_io.h"
#include "skel/folded.h"
#include "skel/value_bounds.h"
#include "section_io.h"

namespace skt {

namespace {

void items_to_string(const FoldedProgram& p, const std::vector<uint32_t>& items, std::string& out) {
  for (uint32_t i : items) {
    if (!out.empty()) out += ' ';
    const FoldedNode& n = p.nodes.at(i);
    if (!n.is_loop()) {
      out += "S" + std::to_string(n.symbol);
      continue;
    }
    out += '(';
    items_to_string(p, n.body, out);
    out += " )^" + std::to_string(n.count);
  }
}

uint64_t length_of(const FoldedProgram& p, const std::vector<uint32_t>& items) {
  uint64_t len = 0;
  for (uint32_t i : items) len += p.nodes.at(i).is_loop() ? length_of(p, p.nodes[i].body) : 1;
  return len;
}

void expand_into(const FoldedProgram& p, const std::vector<uint32_t>& items, std::vector<int64_t>& out) {
  for (uint32_t i : items) {
    const FoldedNode& n = p.nodes.at(i);
    if (!n.is_loop()) out.push_back(n.symbol);
    else
      for (uint64_t k = 0; k < n.count; ++k) expand_into(p, n.body, out);
  }
}

using sections::In;
using sections::Out;

void put_stats(Out& o, const std::vector<RankStat>& v);

// Per-node statistics per rank (work, blocked) as section `id`: the number
// of nodes, then each node's; nothing when no node has any.
void put_node_stats(Out& body, FoldedSection id, const FoldedProgram& p, std::vector<RankStat> FoldedNode::*stats) {
  bool any = false;
  for (const FoldedNode& n : p.nodes) any |= !(n.*stats).empty();
  if (!any) return;
  Out o;
  o.u(p.nodes.size());
  for (const FoldedNode& n : p.nodes) put_stats(o, n.*stats);
  body.section(id, o);
}

void put_stats(Out& o, const std::vector<RankStat>& v) {
  o.u(v.size());
  for (const RankStat& st : v) {
    o.u(st.n);
    if (!st.n) continue;
    o.f64(st.mean);
    o.f64(st.sd);
    o.f64(st.min);
    o.f64(st.max);
  }
}

std::vector<RankStat> get_stats(In& in) {
  std::vector<RankStat> v(in.count("statistics"));
  for (RankStat& st : v) {
    st.n = in.u();
    if (!st.n) continue;
    st.mean = in.f64();
    st.sd = in.f64();
    st.min = in.f64();
    st.max = in.f64();
  }
  return v;
}

}  // namespace

bool CountRule::by_instance() const {
  // One kind of cycle per rule (the reader refuses both): the first rank
  // that cycles says which. Called per rank and value, in O(1) where the
  // first ranks take part (a scan of every rank's kind made the completion
  // check quadratic in the ranks: 54 s of generate at 16,384).
  for (RuleKind k : kind)
    if (cycles(k)) return k == RuleKind::kInstanceCycle;
  return false;
}

double CountRule::linear_value(size_t r, uint64_t instance, uint64_t iteration) const {
  const double x = kind[r] == RuleKind::kLinear ? static_cast<double>(instance)
                   : kind[r] == RuleKind::kLoopLinear ? static_cast<double>(iteration) : 0.0;
  return a[r] + b[r] * x;
}

double CountRule::capacity() const {
  double most = 0;
  for (size_t r = 0; r < kind.size() && r < max.size(); ++r)
    if (kind[r] == RuleKind::kMean) most = std::max(most, max[r]);
  return most;
}

std::string FoldedProgram::to_string() const {
  std::string out;
  items_to_string(*this, top, out);
  return out;
}

uint64_t FoldedProgram::length() const { return length_of(*this, top); }

namespace {
// Calls one run of the items expands to.
uint64_t expanded_size(const FoldedProgram& p, const std::vector<uint32_t>& items) {
  uint64_t n = 0;
  for (uint32_t i : items) n += p.nodes.at(i).is_loop() ? p.nodes[i].count * expanded_size(p, p.nodes[i].body) : 1;
  return n;
}

// Pre-order walk, so that on equal coverage the outer loop (seen first) stays.
void find_main_loop(const FoldedProgram& p, const std::vector<uint32_t>& items, FoldedProgram::LoopSummary& best) {
  for (uint32_t i : items) {
    const FoldedNode& n = p.nodes.at(i);
    if (!n.is_loop()) continue;
    uint64_t covered = n.instances * n.count * expanded_size(p, n.body);
    if (!best.found || covered > best.covered) best = {true, i, length_of(p, n.body), n.count, covered};
    find_main_loop(p, n.body, best);
  }
}
}  // namespace

FoldedProgram::LoopSummary FoldedProgram::main_loop() const {
  LoopSummary best;
  find_main_loop(*this, top, best);
  return best;
}

std::vector<int64_t> FoldedProgram::expand() const {
  std::vector<int64_t> out;
  expand_into(*this, top, out);
  return out;
}

// Per world rank, a flag (0: none) and, if 1, `length` factors
// (FoldedNode::profile, phase_factor); a rank's table of another length is
// not written (`mismatch`: the error).
static void put_factors(Out& o, const std::vector<std::vector<double>>& tables, uint64_t length, const std::string& mismatch) {
  o.u(tables.size());
  for (const auto& f : tables) {
    o.u(f.empty() ? 0 : 1);
    if (f.empty()) continue;
    if (f.size() != length) throw TraceError(mismatch);
    for (double x : f) o.f64(x);
  }
}
static std::vector<std::vector<double>> get_factors(In& in, uint64_t length, const std::string& what) {
  std::vector<std::vector<double>> tables(in.count((what + " ranks").c_str()));
  for (auto& f : tables) {
    if (!in.u()) continue;
    f.resize(length);
    for (double& x : f) {
      x = in.f64();
      if (!(x >= 0 && x < 1e6)) in.bad((what + " factor").c_str());
    }
  }
  return tables;
}

// The head of a node's table in a profile or phases section: the node it
// belongs to, then the table's width, 1 to 4096 (`node`, `width`: what the
// error names).
static FoldedNode& table_node(In& in, FoldedProgram& p, const char* node) {
  const uint64_t i = in.u();
  if (i >= p.nodes.size()) in.bad(node);
  return p.nodes[i];
}
static uint64_t table_width(In& in, const char* width) {
  const uint64_t w = in.u();
  if (w == 0 || w > 4096) in.bad(width);
  return w;
}

namespace {

std::string encode_folded_body(const std::string& path, const FoldedProgram& p) {
  Out body;
  {
    Out o;
    o.str(p.source);
    o.u(p.merged_events);
    o.u(p.callsites_joined ? 1 : 0);
    body.section(FoldedSection::kInfo, o);
  }
  {
    Out o;
    o.b = encode_merged_body(p.symbols, false);
    body.section(FoldedSection::kSymbols, o);
  }
  {
    Out o;
    o.u(p.nodes.size());
    for (const FoldedNode& n : p.nodes) {
      o.s(n.symbol);
      o.u(n.count);
      o.u(n.body.size());
      for (uint32_t c : n.body) o.u(c);
      o.u(n.instances);
      put_stats(o, n.gap);
      put_stats(o, n.dur);
      o.u(n.rules.size());
      for (const CountRule& r : n.rules) {
        o.u(static_cast<uint64_t>(r.param));
        o.u(r.kind.size());
        for (size_t k = 0; k < r.kind.size(); ++k) {
          o.u(static_cast<uint8_t>(r.kind[k]));
          if (r.kind[k] == RuleKind::kNone) continue;
          o.f64(r.a[k]);
          o.f64(r.b[k]);
          o.f64(r.min[k]);
          o.f64(r.max[k]);
          if (!cycles(r.kind[k])) continue;
          o.u(r.period);
          for (uint64_t i = 0; i < r.period; ++i) o.s(r.cycle[k * r.period + i]);
        }
      }
    }
    body.section(FoldedSection::kNodes, o);
  }
  {
    Out o;
    o.u(p.top.size());
    for (uint32_t t : p.top) o.u(t);
    body.section(FoldedSection::kTop, o);
  }
  put_node_stats(body, FoldedSection::kWork, p, &FoldedNode::work);
  put_node_stats(body, FoldedSection::kBlocked, p, &FoldedNode::blocked);
  size_t profiled = 0;
  for (const FoldedNode& n : p.nodes) profiled += n.profile.empty() ? 0 : 1;
  if (profiled) {
    Out o;
    o.u(profiled);
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const FoldedNode& n = p.nodes[i];
      if (n.profile.empty()) continue;
      size_t parts = 0;
      for (const auto& f : n.profile) parts = std::max(parts, f.size());
      o.u(i);
      o.u(parts);
      put_factors(o, n.profile, parts, path + ": profile parts differ between ranks");
    }
    body.section(FoldedSection::kProfile, o);
  }
  size_t phased = 0;
  for (const FoldedNode& n : p.nodes) phased += n.phase_period ? 1 : 0;
  if (phased) {
    Out o;
    o.u(phased);
    for (size_t i = 0; i < p.nodes.size(); ++i) {
      const FoldedNode& n = p.nodes[i];
      if (!n.phase_period) continue;
      o.u(i);
      o.u(n.phase_period);
      o.u(n.phase_by_instance ? 1 : 0);
      put_factors(o, n.phase_factor, n.phase_period, path + ": phase table of another length than its period");
    }
    body.section(FoldedSection::kPhases, o);
  }
  for (const FoldedProgram& t : p.threads)
    sections::put_thread(body, FoldedSection::kThread, t.thread, t.fork_after, t.join_before,
                         encode_folded_body(path, t));
  return body.b;
}

FoldedProgram decode_folded_body(const uint8_t* data, size_t size, const std::string& path, bool nested);

// A thread's program (FoldedSection::kThread): its number, where it runs
// among the first thread's merged events, its folded body (without threads).
FoldedProgram decode_thread(In& in, const uint8_t* d, uint64_t len, const std::string& path) {
  const sections::ThreadSection at = sections::get_thread(in, d, len);
  FoldedProgram t = decode_folded_body(at.body, at.size, path, true);
  t.thread = at.number;
  t.fork_after = at.fork_after;
  t.join_before = at.join_before;
  return t;
}

}  // namespace

void write_folded(const std::string& path, const FoldedProgram& p) {
  write_compressed_file(path, kFoldedMagic, kFoldedVersionMajor, kFoldedVersionMinor, encode_folded_body(path, p));
}

FoldedProgram read_folded(const std::string& path) {
  std::string body = read_compressed_file(path, kFoldedMagic, kFoldedVersionMajor, "folded program");
  FoldedProgram p = decode_folded_body(reinterpret_cast<const uint8_t*>(body.data()), body.size(), path, false);
  for (const FoldedProgram& t : p.threads)
    if (t.symbols.world_size != p.symbols.world_size || t.fork_after >= static_cast<int64_t>(p.merged_events) ||
        t.join_before >= static_cast<int64_t>(p.merged_events))
      throw TraceError(path + ": corrupt folded program (thread " + std::to_string(t.thread) +
                       "'s program does not fit the first thread's)");
  if (std::string why = bounds::folded_problem(p); !why.empty())
    throw TraceError(path + ": corrupt folded program (" + why + ")");
  return p;
}

namespace {

FoldedProgram decode_folded_body(const uint8_t* data, size_t size, const std::string& path, bool nested) {
  FoldedProgram p;
  In top(data, size, path, "folded program");
  bool have_symbols = false, have_nodes = false;
  sections::for_each_section(top, [&](uint64_t section, In& in, const uint8_t* d, uint64_t len) {
    switch (static_cast<FoldedSection>(section)) {
      case FoldedSection::kInfo:
        p.source = in.str();
        p.merged_events = in.u();
        if (!in.c.at_end()) p.callsites_joined = (in.u() & 1) != 0;  // 1.4
        break;
      case FoldedSection::kSymbols:
        p.symbols = decode_merged_body(d, len, path, false);
        have_symbols = true;
        break;
      case FoldedSection::kNodes: {
        p.nodes.resize(in.count("nodes"));
        for (FoldedNode& n : p.nodes) {
          n.symbol = in.s();
          n.count = in.u();
          n.body.resize(in.count("body"));
          for (uint32_t& c : n.body) c = static_cast<uint32_t>(in.u());
          n.instances = in.u();
          n.gap = get_stats(in);
          n.dur = get_stats(in);
          n.rules.resize(in.count("rules"));
          for (CountRule& r : n.rules) {
            uint64_t prm = in.u();
            if (prm >= kNumParams) in.bad("rule parameter");
            r.param = static_cast<Param>(prm);
            size_t k = in.count("rule ranks");
            r.kind.resize(k);
            r.a.resize(k);
            r.b.resize(k);
            r.min.resize(k);
            r.max.resize(k);
            for (size_t q = 0; q < k; ++q) {
              const uint64_t kind = in.u();
              if (kind > static_cast<uint64_t>(RuleKind::kLoopLinear)) in.bad("rule kind");
              r.kind[q] = static_cast<RuleKind>(kind);
              if (r.kind[q] == RuleKind::kNone) continue;
              r.a[q] = in.f64();
              r.b[q] = in.f64();
              r.min[q] = in.f64();
              r.max[q] = in.f64();
              if (!cycles(r.kind[q])) continue;
              uint64_t period = in.u();
              if (period == 0 || period > (1u << 20) || (r.period && period != r.period)) in.bad("rule period");
              if (!r.period) r.period = period, r.cycle.assign(k * period, 0);
              for (uint64_t i = 0; i < period; ++i) r.cycle[q * period + i] = in.s();
            }
            if (std::find(r.kind.begin(), r.kind.end(), RuleKind::kInstanceCycle) != r.kind.end() &&
                std::find(r.kind.begin(), r.kind.end(), RuleKind::kCycle) != r.kind.end())
              in.bad("rule kind");  // one cycle, over the loop's iterations or over the instances
          }
        }
        have_nodes = true;
        break;
      }
      case FoldedSection::kTop:
        p.top.resize(in.count("top"));
        for (uint32_t& t : p.top) t = static_cast<uint32_t>(in.u());
        break;
      case FoldedSection::kWork:
        if (!have_nodes || in.count("work nodes") != p.nodes.size()) in.bad("work nodes");
        for (FoldedNode& n : p.nodes) n.work = get_stats(in);
        break;
      case FoldedSection::kBlocked:
        if (!have_nodes || in.count("blocked nodes") != p.nodes.size()) in.bad("blocked nodes");
        for (FoldedNode& n : p.nodes) n.blocked = get_stats(in);
        break;
      case FoldedSection::kProfile: {
        if (!have_nodes) in.bad("profile before the nodes");
        size_t k = in.count("profiles");
        while (k--) {
          FoldedNode& n = table_node(in, p, "profile node");
          n.profile = get_factors(in, table_width(in, "profile parts"), "profile");
        }
        break;
      }
      case FoldedSection::kPhases: {
        if (!have_nodes) in.bad("phases before the nodes");
        size_t k = in.count("phase tables");
        while (k--) {
          FoldedNode& n = table_node(in, p, "phase table node");
          n.phase_period = table_width(in, "phase period");
          uint64_t flags = in.u();
          if (flags > 1) in.bad("phase index");
          n.phase_by_instance = flags == 1;
          n.phase_factor = get_factors(in, n.phase_period, "phase");
        }
        break;
      }
      case FoldedSection::kThread:
        if (nested) in.bad("a thread's program inside a thread's program");
        p.threads.push_back(decode_thread(in, d, len, path));
        break;
      default:
        break;
    }
  });
  if (!have_symbols || !have_nodes) throw TraceError(path + ": corrupt folded program (sections missing)");
  // Structure: children and symbols in range, the tree acyclic (children come before parents).
  for (size_t i = 0; i < p.nodes.size(); ++i) {
    const FoldedNode& n = p.nodes[i];
    if (!n.is_loop() && static_cast<size_t>(n.symbol) >= p.symbols.events.size())
      throw TraceError(path + ": corrupt folded program (symbol out of range)");
    for (uint32_t c : n.body)
      if (c >= i) throw TraceError(path + ": corrupt folded program (loop tree out of order)");
  }
  for (uint32_t t : p.top)
    if (t >= p.nodes.size()) throw TraceError(path + ": corrupt folded program (top level out of range)");
  return p;
}

}  // namespace

bool is_folded_file(const std::string& path) { return has_magic(path, kFoldedMagic); }

}  // namespace skt
