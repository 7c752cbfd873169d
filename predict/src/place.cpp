#include "skel/place.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>

#include "skel/process.h"

namespace skt::place {
namespace {

std::string trim(const std::string& s) {
  size_t a = s.find_first_not_of(" \t\r"), b = s.find_last_not_of(" \t\r");
  return a == std::string::npos ? "" : s.substr(a, b - a + 1);
}

std::string strip_comment(const std::string& s) { return s.substr(0, s.find('#')); }

std::string dir_of(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? "." : path.substr(0, s == 0 ? 1 : s);
}

std::ifstream open_or_throw(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error(path + ": " + std::strerror(errno));
  return in;
}

[[noreturn]] void bad(const std::string& path, int line, const std::string& why) {
  throw std::runtime_error(path + ":" + std::to_string(line) + ": " + why);
}

double parse_number(const std::string& path, int line, const std::string& column, const std::string& text) {
  size_t used = 0;
  double v = 0;
  try {
    v = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != text.size() || !std::isfinite(v) || v < 0) bad(path, line, column + " '" + text + "' is not a number >= 0");
  return v;
}

std::vector<size_t> group_members(const std::vector<Node>& inv, const std::string& group) {
  std::vector<size_t> m;
  for (size_t i = 0; i < inv.size(); ++i)
    if (inv[i].group == group && inv[i].cores > 0) m.push_back(i);
  return m;
}

void finish(const std::vector<Node>& inv, const std::string& group, Selection& s) {
  s.group = group;
  std::sort(s.nodes.begin(), s.nodes.end());
  s.cores = 0;
  for (size_t i : s.nodes) s.cores += inv[i].cores;
  s.mean_score = s.cores ? s.value / s.cores : 0;
}

}  // namespace

std::vector<predict::Target> read_candidates(const std::string& path) {
  std::ifstream in = open_or_throw(path);
  std::vector<predict::Target> out;
  std::vector<std::map<std::string, std::string>> settings;
  std::vector<int> lines;
  std::string raw;
  int line = 0;
  while (std::getline(in, raw)) {
    ++line;
    std::string s = trim(strip_comment(raw));
    if (s.empty()) continue;
    if (s.front() == '[') {
      if (s.back() != ']' || s.size() < 3) bad(path, line, "a section is written [name]");
      predict::Target t;
      t.name = trim(s.substr(1, s.size() - 2));
      for (const auto& o : out)
        if (o.name == t.name) bad(path, line, "candidate '" + t.name + "' is named twice");
      out.push_back(t);
      settings.emplace_back();
      lines.push_back(line);
      continue;
    }
    size_t eq = s.find('=');
    if (eq == std::string::npos) bad(path, line, "expected key = value or [name]");
    if (out.empty()) bad(path, line, "a setting before the first [name]");
    std::string key = trim(s.substr(0, eq)), value = trim(s.substr(eq + 1));
    static const std::set<std::string> keys = {"kind",     "launcher",  "hostfile", "partition",
                                               "constraint", "srun_args", "platform", "simgrid_args"};
    if (!keys.count(key)) bad(path, line, "unknown key '" + key + "' (kind, launcher, hostfile, partition, "
                                          "constraint, srun_args, platform, simgrid_args)");
    if (settings.back().count(key)) bad(path, line, "'" + key + "' set twice in [" + out.back().name + "]");
    settings.back()[key] = value;
  }
  if (out.empty()) throw std::runtime_error(path + ": no candidates (sections [name] with key = value lines)");
  const std::string base = dir_of(path);
  auto relative = [&](const std::string& p) { return p.empty() || p[0] == '/' ? p : base + "/" + p; };
  for (size_t i = 0; i < out.size(); ++i) {
    auto& kv = settings[i];
    predict::Target& t = out[i];
    t.launcher = kv["launcher"];
    t.hostfile = relative(kv["hostfile"]);
    t.partition = kv["partition"];
    t.constraint = kv["constraint"];
    t.srun_args = kv["srun_args"];
    t.platform = relative(kv["platform"]);
    t.simgrid_args = kv["simgrid_args"];
    std::string kind = kv["kind"];
    if (kind.empty()) kind = predict::target_kind_name(predict::implied_kind(t));
    if (kind == "local") t.kind = predict::TargetKind::kLocal;
    else if (kind == "slurm") t.kind = predict::TargetKind::kSlurm;
    else if (kind == "simgrid") t.kind = predict::TargetKind::kSimgrid;
    else bad(path, lines[i], "[" + t.name + "]: kind '" + kind + "' is not local, slurm or simgrid");
    if (t.kind == predict::TargetKind::kSimgrid && t.platform.empty())
      bad(path, lines[i], "[" + t.name + "]: a simgrid candidate needs platform = FILE.xml");
    if (t.kind != predict::TargetKind::kSimgrid && !t.platform.empty())
      bad(path, lines[i], "[" + t.name + "]: platform is for kind = simgrid");
    if (t.kind != predict::TargetKind::kLocal && !t.launcher.empty())
      bad(path, lines[i], "[" + t.name + "]: launcher is for kind = local");
  }
  return out;
}

std::vector<Node> read_inventory(const std::string& path) {
  std::ifstream in = open_or_throw(path);
  std::vector<Node> out;
  std::map<std::string, size_t> col;
  std::string raw;
  int line = 0;
  static const std::vector<std::string> required = {"name", "cores", "ghz", "cache_mb", "group"};
  while (std::getline(in, raw)) {
    ++line;
    std::vector<std::string> w = proc::split_words(strip_comment(raw));
    if (w.empty()) continue;
    if (col.empty()) {  // the header
      for (size_t i = 0; i < w.size(); ++i) {
        static const std::set<std::string> known = {"name", "cores", "ghz", "cache_mb", "memory_gb", "group"};
        if (!known.count(w[i])) bad(path, line, "unknown column '" + w[i] + "' (name cores ghz cache_mb memory_gb group)");
        if (col.count(w[i])) bad(path, line, "column '" + w[i] + "' twice");
        col[w[i]] = i;
      }
      for (const std::string& r : required)
        if (!col.count(r)) bad(path, line, "the header has no '" + r + "' column (name cores ghz cache_mb [memory_gb] group)");
      continue;
    }
    if (w.size() != col.size())
      bad(path, line, std::to_string(w.size()) + " fields, the header has " + std::to_string(col.size()));
    Node n;
    n.name = w[col["name"]];
    n.group = w[col["group"]];
    double cores = parse_number(path, line, "cores", w[col["cores"]]);
    if (cores != std::floor(cores) || cores > 1e6) bad(path, line, "cores '" + w[col["cores"]] + "' is not a whole number");
    n.cores = static_cast<int>(cores);
    n.ghz = parse_number(path, line, "ghz", w[col["ghz"]]);
    n.cache_mb = parse_number(path, line, "cache_mb", w[col["cache_mb"]]);
    if (col.count("memory_gb")) n.memory_gb = parse_number(path, line, "memory_gb", w[col["memory_gb"]]);
    if (n.ghz <= 0) bad(path, line, "ghz must be > 0");
    for (const Node& o : out)
      if (o.name == n.name) bad(path, line, "node '" + n.name + "' listed twice");
    out.push_back(n);
  }
  if (out.empty()) throw std::runtime_error(path + ": no nodes (a header line, then one line per node)");
  return out;
}

Weights weights_from_ratio(double comm_s, double comp_s, double memory_weight) {
  Weights w;
  double total = comm_s + comp_s;
  w.cpu = total > 0 ? comp_s / total : 1;
  w.cache = total > 0 ? comm_s / total : 0;
  w.memory = memory_weight;
  return w;
}

double core_score(const Node& n, const std::vector<Node>& inv, const Weights& w) {
  double ghz = 0, cache = 0, mem = 0;
  for (const Node& o : inv) {
    if (o.cores <= 0) continue;
    ghz = std::max(ghz, o.ghz);
    cache = std::max(cache, o.cache_mb / o.cores);
    mem = std::max(mem, o.memory_gb / o.cores);
  }
  if (n.cores <= 0) return 0;
  double s = w.cpu * (ghz > 0 ? n.ghz / ghz : 0);
  s += w.cache * (cache > 0 ? n.cache_mb / n.cores / cache : 0);
  s += w.memory * (mem > 0 ? n.memory_gb / n.cores / mem : 0);
  return s;
}

bool select_in_group(const std::vector<Node>& inv, const std::string& group, int np, const Weights& w,
                     Selection& out) {
  std::vector<size_t> m = group_members(inv, group);
  int total = 0;
  for (size_t i : m) total += inv[i].cores;
  if (np <= 0 || total < np) return false;
  const double kNone = -std::numeric_limits<double>::infinity();
  // best[c]: highest value of a subset of the nodes seen so far holding exactly c cores;
  // took[k][c]: whether node k is in that subset when it was considered.
  std::vector<double> best(static_cast<size_t>(total) + 1, kNone);
  std::vector<std::vector<bool>> took(m.size(), std::vector<bool>(static_cast<size_t>(total) + 1, false));
  best[0] = 0;
  for (size_t k = 0; k < m.size(); ++k) {
    const Node& n = inv[m[k]];
    double v = n.cores * core_score(n, inv, w);
    for (int c = total; c >= n.cores; --c) {
      double with = best[c - n.cores];
      if (with != kNone && with + v > best[c]) {
        best[c] = with + v;
        took[k][c] = true;
      }
    }
  }
  int c = np;
  while (c <= total && best[c] == kNone) ++c;
  out = Selection{};
  out.value = best[c];
  for (size_t k = m.size(); k-- > 0;)
    if (took[k][c]) {
      out.nodes.push_back(m[k]);
      c -= inv[m[k]].cores;
    }
  finish(inv, group, out);
  return true;
}

bool select_in_group_brute_force(const std::vector<Node>& inv, const std::string& group, int np, const Weights& w,
                                 Selection& out) {
  std::vector<size_t> m = group_members(inv, group);
  if (m.size() > 20) throw std::invalid_argument("brute force: more than 20 nodes");
  bool found = false;
  for (uint32_t mask = 0; mask < (1u << m.size()); ++mask) {
    Selection s;
    int cores = 0;
    for (size_t k = 0; k < m.size(); ++k)
      if (mask >> k & 1) {
        s.nodes.push_back(m[k]);
        cores += inv[m[k]].cores;
        s.value += inv[m[k]].cores * core_score(inv[m[k]], inv, w);
      }
    if (cores < np) continue;
    if (!found || cores < out.cores || (cores == out.cores && s.value > out.value + 1e-12)) {
      out = s;
      finish(inv, group, out);
      found = true;
    }
  }
  return found;
}

std::vector<Selection> select_nodes(const std::vector<Node>& inv, int np, const Weights& w) {
  std::vector<std::string> groups;
  for (const Node& n : inv)
    if (std::find(groups.begin(), groups.end(), n.group) == groups.end()) groups.push_back(n.group);
  std::vector<Selection> out;
  for (const std::string& g : groups) {
    Selection s;
    if (select_in_group(inv, g, np, w, s)) out.push_back(s);
  }
  std::stable_sort(out.begin(), out.end(), [](const Selection& a, const Selection& b) {
    if (std::abs(a.mean_score - b.mean_score) > 1e-12) return a.mean_score > b.mean_score;
    if (a.nodes.size() != b.nodes.size()) return a.nodes.size() < b.nodes.size();
    return a.group < b.group;
  });
  return out;
}

std::string hostfile_for(const std::vector<Node>& inv, const Selection& s, int np, bool openmpi_syntax) {
  // Best-scoring nodes first, so that cores left over are on the slowest node.
  std::vector<size_t> order = s.nodes;
  Weights w;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return core_score(inv[a], inv, w) > core_score(inv[b], inv, w); });
  std::ostringstream h;
  int left = np;
  for (size_t i : order) {
    int k = std::min(left, inv[i].cores);
    if (k <= 0) break;
    h << inv[i].name << (openmpi_syntax ? " slots=" : ":") << k << "\n";
    left -= k;
  }
  return h.str();
}

}  // namespace skt::place
