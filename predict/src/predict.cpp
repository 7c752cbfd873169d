#include "skel/predict.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <stdexcept>

#include "skel/process.h"

namespace skt::predict {
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Replaces every {key} of a launcher template.
std::string substitute(std::string s, const std::map<std::string, std::string>& values) {
  for (const auto& [k, v] : values) {
    std::string key = "{" + k + "}";
    for (size_t at = s.find(key); at != std::string::npos; at = s.find(key, at + v.size())) s.replace(at, key.size(), v);
  }
  return s;
}

std::string need(const std::string& prog, const std::string& package) {
  std::string full = proc::which(prog);
  if (full.empty()) throw std::runtime_error(prog + " not found in PATH (install " + package + ")");
  return full;
}

// Whether a word of a launcher template names an MPI launcher (by its name).
bool names_mpi_launcher(const std::string& word) {
  std::string b = proc::basename_of(word);
  for (const char* p : {"mpirun", "mpiexec", "orterun", "prterun"})
    if (b.rfind(p, 0) == 0) return true;
  return false;
}

// The word of a launcher command that names its MPI (see launcher_flavor).
std::string launcher_word(const std::vector<std::string>& words) {
  if (words.empty() || !proc::flavor_of_launcher(words[0]).empty()) return words.empty() ? "" : words[0];
  for (size_t i = 1; i < words.size(); ++i)
    if (names_mpi_launcher(words[i])) return words[i];
  return words[0];
}

}  // namespace

std::string launcher_flavor(const std::vector<std::string>& words) {
  if (words.empty()) return "";
  std::string f = proc::flavor_of_launcher(words[0]);
  if (!f.empty()) return f;
  // a wrapper before the launcher (tools/emucluster run CLUSTER mpirun.openmpi ... --)
  for (size_t i = 1; i < words.size(); ++i)
    if (names_mpi_launcher(words[i])) return proc::flavor_of_launcher(words[i]);
  return "";
}

namespace {

std::vector<std::string> local_command(const Target& t, int np, const std::string& exe, const std::string& built_with) {
  if (built_with == "simgrid")
    throw std::runtime_error(exe + " is built for SimGrid (smpicc); build it for a real MPI (skelgen build --mpi "
                             "mpich|openmpi) or give the .c source");
  std::string tmpl = t.launcher;
  if (tmpl.empty()) {
    if (built_with == "openmpi")
      tmpl = std::string("mpirun.openmpi --oversubscribe") + (geteuid() == 0 ? " --allow-run-as-root" : "") +
             (t.hostfile.empty() ? "" : " --hostfile {hostfile}") + " -n {np}";
    else
      tmpl = std::string("mpiexec.mpich") + (t.hostfile.empty() ? "" : " -f {hostfile}") + " -n {np}";
  }
  if (tmpl.find("{hostfile}") != std::string::npos && t.hostfile.empty())
    throw std::runtime_error("the launcher '" + tmpl + "' uses {hostfile} but no hostfile was given (--hostfile)");
  if (!t.hostfile.empty() && tmpl.find("{hostfile}") == std::string::npos)
    throw std::runtime_error("a hostfile was given but the launcher '" + tmpl + "' has no {hostfile} to put it in");
  if (!t.hostfile.empty() && access(t.hostfile.c_str(), R_OK) != 0)
    throw std::runtime_error(t.hostfile + ": hostfile not readable: " + std::strerror(errno));
  bool exe_placed = tmpl.find("{exe}") != std::string::npos;
  std::vector<std::string> argv =
      proc::split_words(substitute(tmpl, {{"np", std::to_string(np)}, {"hostfile", t.hostfile}, {"exe", exe}}));
  if (argv.empty()) throw std::runtime_error("empty launcher");
  if (proc::which(argv[0]).empty()) throw std::runtime_error("launcher not found: " + argv[0]);
  std::string lflavor = launcher_flavor(argv);
  if (!lflavor.empty() && (built_with == "mpich" || built_with == "openmpi") && lflavor != built_with)
    throw std::runtime_error(exe + " is built with " + built_with + " but " + launcher_word(argv) + " launches " + lflavor +
                             " programs; use that MPI's launcher or rebuild (skelgen build --mpi " + lflavor + ")");
  if (!exe_placed) argv.push_back(exe);
  return argv;
}

std::vector<std::string> slurm_command(const Target& t, int np, const std::string& exe, const std::string& built_with) {
  if (built_with == "simgrid")
    throw std::runtime_error(exe + " is built for SimGrid (smpicc); build it for a real MPI to run it through Slurm");
  std::vector<std::string> argv{need("srun", "slurm-wlm (or load your site's Slurm module)"), "-n", std::to_string(np)};
  std::vector<std::string> extra = proc::split_words(t.srun_args);
  bool has_mpi = std::any_of(extra.begin(), extra.end(), [](const std::string& a) { return a.rfind("--mpi", 0) == 0; });
  // Debian's MPICH speaks PMI-1/2 (Slurm's pmi2 plugin serves both); Open MPI 4 uses PMIx.
  if (!has_mpi) argv.push_back(built_with == "openmpi" ? "--mpi=pmix" : "--mpi=pmi2");
  if (!t.partition.empty()) argv.insert(argv.end(), {"-p", t.partition});
  if (!t.constraint.empty()) argv.insert(argv.end(), {"-C", t.constraint});
  argv.insert(argv.end(), extra.begin(), extra.end());
  argv.push_back(exe);
  return argv;
}

std::vector<std::string> simgrid_command(const Target& t, int np, const std::string& exe,
                                         const std::string& built_with, const std::string& hostfile_dir) {
  if (built_with != "simgrid")
    throw std::runtime_error(exe + " is built with " + built_with +
                             ", not for SimGrid; give the .c source (predict builds it with smpicc) or run "
                             "skelgen build --mpi simgrid");
  if (t.platform.empty()) throw std::runtime_error("a SimGrid target needs a platform file (--simgrid PLATFORM.xml)");
  std::vector<std::string> hosts = platform_hosts(t.platform);  // also checks the file
  std::string hostfile = t.hostfile;
  if (hostfile.empty()) {  // the platform's hosts in order, one rank each (round robin past the end)
    hostfile = hostfile_dir + "/skelgen-hosts-" + std::to_string(getpid()) + ".txt";
    std::ofstream f(hostfile);
    for (int i = 0; i < np; ++i) f << hosts[static_cast<size_t>(i) % hosts.size()] << "\n";
    if (!f) throw std::runtime_error(hostfile + ": cannot write");
  } else if (access(hostfile.c_str(), R_OK) != 0) {
    throw std::runtime_error(hostfile + ": hostfile not readable: " + std::strerror(errno));
  }
  std::vector<std::string> argv{need("smpirun", "libsimgrid-dev"), "-np", std::to_string(np), "-platform",
                                t.platform, "-hostfile", hostfile};
  for (const std::string& c : simgrid_pinned_config()) argv.push_back(c);
  for (const std::string& a : proc::split_words(t.simgrid_args)) argv.push_back(a);
  argv.push_back(exe);
  return argv;
}

// Sets an environment variable while it lives; the old value (or its
// absence) comes back after.
class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) setenv(name_, old_->c_str(), 1);
    else unsetenv(name_);
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

std::string fmt(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%g", v);
  return b;
}

}  // namespace

SkeletonInfo read_skeleton_info(const std::string& path) {
  std::string data = read_all(path);
  static const std::string kMark = "SKELGEN_META ";
  size_t at = data.find(kMark);
  if (at == std::string::npos)
    throw std::runtime_error(path + ": not a skelgen skeleton (no SKELGEN_META; generate it with skelgen generate)");
  size_t end = data.find_first_of("\";\n\r", at);
  if (end == std::string::npos) end = std::min(data.size(), at + 1024);
  std::map<std::string, std::string> kv;
  for (const std::string& w : proc::split_words(data.substr(at + kMark.size(), end - at - kMark.size()))) {
    size_t eq = w.find('=');
    if (eq != std::string::npos) kv[w.substr(0, eq)] = w.substr(eq + 1);
  }
  SkeletonInfo info;
  try {
    info.ranks = std::stoi(kv.at("ranks"));
    info.scale = static_cast<unsigned>(std::stoul(kv.at("scale")));
    info.traced_mpi = kv.count("traced_mpi") ? kv["traced_mpi"] : "unknown";
    info.built_with = kv.count("built_with") ? kv["built_with"] : "";
    info.traced_s = std::stod(kv.at("traced_s"));
    info.comm_s = std::stod(kv.at("comm_s"));
    info.comp_s = std::stod(kv.at("comp_s"));
    info.kernel_flops_per_s = std::stod(kv.at("kernel_flops_per_s"));
    if (kv.count("untraced_s")) info.untraced_s = std::stod(kv["untraced_s"]);
  } catch (const std::exception&) {
    throw std::runtime_error(path + ": damaged SKELGEN_META (regenerate the skeleton with this skelgen)");
  }
  if (info.ranks <= 0) throw std::runtime_error(path + ": damaged SKELGEN_META (ranks)");
  if (!(info.untraced_s >= 0 && info.untraced_s < 3.2e7))
    throw std::runtime_error(path + ": damaged SKELGEN_META (untraced_s)");
  return info;
}

bool is_source(const std::string& path) { return path.size() > 2 && path.compare(path.size() - 2, 2, ".c") == 0; }

const char* target_kind_name(TargetKind k) {
  switch (k) {
    case TargetKind::kLocal: return "local";
    case TargetKind::kSlurm: return "slurm";
    case TargetKind::kSimgrid: return "simgrid";
  }
  return "?";
}

std::string Target::describe() const {
  std::string s = target_kind_name(kind);
  switch (kind) {
    case TargetKind::kLocal:
      s += launcher.empty() ? " (default launcher)" : " '" + launcher + "'";
      if (!hostfile.empty()) s += " hostfile " + hostfile;
      break;
    case TargetKind::kSlurm:
      if (!partition.empty()) s += " partition " + partition;
      if (!constraint.empty()) s += " constraint " + constraint;
      if (!srun_args.empty()) s += " '" + srun_args + "'";
      break;
    case TargetKind::kSimgrid:
      s += " " + platform;
      if (!hostfile.empty()) s += " hostfile " + hostfile;
      break;
  }
  return s;
}

TargetKind implied_kind(const Target& t) {
  if (!t.platform.empty()) return TargetKind::kSimgrid;
  if (!t.partition.empty() || !t.constraint.empty() || !t.srun_args.empty()) return TargetKind::kSlurm;
  return TargetKind::kLocal;
}

std::string mpi_for(const Target& t, const std::string& fallback) {
  if (t.kind == TargetKind::kSimgrid) return "simgrid";
  if (t.kind == TargetKind::kLocal && !t.launcher.empty()) {
    std::string f = launcher_flavor(proc::split_words(t.launcher));
    if (!f.empty()) return f;
  }
  return fallback == "openmpi" ? "openmpi" : "mpich";
}

std::vector<std::string> command_for(const Target& t, int np, const std::string& exe, const std::string& built_with,
                                     const std::string& hostfile_dir) {
  switch (t.kind) {
    case TargetKind::kLocal: return local_command(t, np, exe, built_with);
    case TargetKind::kSlurm: return slurm_command(t, np, exe, built_with);
    case TargetKind::kSimgrid: return simgrid_command(t, np, exe, built_with, hostfile_dir);
  }
  return {};
}

void check_slurm_reachable() {
  need("scontrol", "slurm-wlm (or load your site's Slurm module)");
  if (const char* conf = std::getenv("SLURM_CONF"); conf && *conf && access(conf, R_OK) != 0)
    throw std::runtime_error(std::string("Slurm is not reachable: SLURM_CONF=") + conf + ": " + std::strerror(errno));
  proc::RunOutput r = proc::run_captured({"scontrol", "ping"}, 30);
  if (r.status == 0 && r.out.find("is UP") != std::string::npos) return;
  // "Slurmctld(primary) at HOST is DOWN" (followed by a banner), or an error on stderr
  std::string why = proc::tail_lines(r.err, 1);
  std::istringstream lines(r.out);
  for (std::string l; std::getline(lines, l);)
    if (l.rfind("Slurmctld", 0) == 0) why = l;
  throw std::runtime_error("Slurm is not reachable (scontrol ping: " + why + "); is slurmctld running, SLURM_CONF set?");
}

bool parse_result(const std::string& out, SkeletonRun& run) {
  std::istringstream in(out);
  std::string line;
  int found = 0;
  while (std::getline(in, line)) {
    if (line.rfind("SKELGEN_RESULT ", 0) != 0) continue;
    if (std::sscanf(line.c_str(), "SKELGEN_RESULT measured_s=%lf predicted_s=%lf scale=%u", &run.measured_s,
                    &run.predicted_s, &run.scale) != 3)
      return false;
    ++found;
  }
  return found == 1 && run.measured_s >= 0 && run.predicted_s >= run.measured_s * 0.999;
}

// The first line a skeleton's watchdog printed ("NAME: rank R: watchdog: no
// progress for N s in CALL ..."), or "".
static std::string watchdog_line(const std::string& output) {
  std::istringstream in(output);
  for (std::string line; std::getline(in, line);)
    if (line.find(": watchdog: no progress") != std::string::npos) return line;
  return "";
}

double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

// After the asked runs: one more while they disagree and are cheap (PredictOptions::max_reps); says why.
static bool wants_another_run(Prediction& p, const PredictOptions& opt) {
  if (static_cast<int>(p.each.size()) >= opt.max_reps || p.each.empty()) return false;
  summarize(p);
  if (p.spread() <= kSpreadWarning || p.skeleton_s >= kCheapRunS) return false;
  if (opt.on_note)
    opt.on_note("the " + std::to_string(p.each.size()) + " runs spread over " + fmt(std::round(1000 * p.spread()) / 10) +
                " % of their median: one more (at most " + std::to_string(opt.max_reps) + ")");
  return true;
}

Prediction predict(const Target& t, const std::string& exe, const SkeletonInfo& info, const PredictOptions& opt) {
  if (opt.np != info.ranks)
    throw std::runtime_error(exe + " was generated for " + std::to_string(info.ranks) + " ranks, not " +
                             std::to_string(opt.np) + " (a skeleton runs with the traced world size)");
  if (t.kind == TargetKind::kSlurm) check_slurm_reachable();
  std::unique_ptr<proc::TempDir> own_dir;
  if (opt.work_dir.empty()) own_dir = std::make_unique<proc::TempDir>("predict");
  const std::string& work_dir = own_dir ? own_dir->path() : opt.work_dir;
  std::vector<std::string> argv = command_for(t, opt.np, exe, info.built_with, work_dir);
  // smpirun -tmpdir is broken in 3.32: its files go to $TMPDIR, ours while it runs.
  std::optional<ScopedEnv> tmpdir;
  if (t.kind == TargetKind::kSimgrid) tmpdir.emplace("TMPDIR", work_dir);
  Prediction p;
  p.target = t.label();
  p.np = opt.np;
  p.warmup = t.kind == TargetKind::kSimgrid ? 0 : opt.warmup;
  for (int i = 1 - p.warmup; i <= opt.reps || wants_another_run(p, opt); ++i) {
    const std::string run_name = i < 1 ? "warm-up run" : "run " + std::to_string(i);
    proc::RunOutput r = proc::run_captured(argv, opt.timeout_s);
    if (r.status == -1) {
      // The launcher's name, not its path; the job's other processes are its ranks (and their helpers)
      std::string what = "timed out after " + fmt(opt.timeout_s) + " s; killed the launcher (" +
                         proc::basename_of(argv[0]) + ") and its ranks (" + std::to_string(r.ended.processes) +
                         " process" + (r.ended.processes == 1 ? "" : "es") + ")";
      if (!r.ended.still_running.empty()) {
        what += ", but " + std::to_string(r.ended.still_running.size()) + " still run (pids";
        for (int pid : r.ended.still_running) what += " " + std::to_string(pid);
        what += ")";
      }
      throw std::runtime_error(run_name + " on " + p.target + " " + what);
    }
    if (r.ended.left_behind > 0 && opt.on_note)
      opt.on_note(run_name + ": the launcher exited but " + std::to_string(r.ended.left_behind) +
                  " process(es) of its job still ran; ended them");
    std::string said = proc::tail_lines(r.err + "\n" + r.out, 3);
    SkeletonRun run;
    const std::string stopped = watchdog_line(r.err + "\n" + r.out);
    if (!stopped.empty())
      throw std::runtime_error(run_name + " on " + p.target +
                               " hung and the skeleton's watchdog stopped it: " + stopped);
    if (r.status != 0 || !parse_result(r.out, run))
      throw std::runtime_error(run_name + " on " + p.target + " " +
                               (r.status ? "failed (exit " + std::to_string(r.status) + ")" : "printed no result") +
                               ": " + (said.empty() ? "no output" : said));
    if (opt.on_run) opt.on_run(i, run);
    if (i < 1) continue;  // a warm-up run
    p.each.push_back(run);
  }
  summarize(p);
  return p;
}

void summarize(Prediction& p) {
  std::vector<double> pred, skel;
  for (const SkeletonRun& r : p.each) {
    pred.push_back(r.predicted_s);
    skel.push_back(r.measured_s);
  }
  p.scale = p.each.front().scale;
  p.predicted_s = median(pred);
  p.predicted_min_s = *std::min_element(pred.begin(), pred.end());
  p.predicted_max_s = *std::max_element(pred.begin(), pred.end());
  p.skeleton_s = median(skel);
  p.skeleton_min_s = *std::min_element(skel.begin(), skel.end());
  p.skeleton_max_s = *std::max_element(skel.begin(), skel.end());
  p.runs = static_cast<int>(p.each.size());
}

std::vector<std::string> simgrid_pinned_config() {
  return {"--cfg=smpi/simulate-computation:no", "--cfg=smpi/bw-factor:0:1",     "--cfg=smpi/lat-factor:0:1",
          "--cfg=network/crosstraffic:0",       "--cfg=smpi/coll-selector:mpich", "--log=root.thres:critical"};
}

namespace {

// An element's start tag: its name and attributes.
struct XmlTag {
  std::string name;
  std::map<std::string, std::string> attributes;
};

bool xml_word(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Attributes name="value" (or 'value') in the text of a start tag.
std::map<std::string, std::string> xml_attributes(const std::string& body) {
  std::map<std::string, std::string> a;
  size_t i = 0;
  while (i < body.size()) {
    if (!std::isalpha(static_cast<unsigned char>(body[i])) && body[i] != '_') {
      ++i;
      continue;
    }
    size_t end = i;
    while (end < body.size() && (std::isalpha(static_cast<unsigned char>(body[end])) || body[end] == '_')) ++end;
    size_t q = end;
    while (q < body.size() && std::isspace(static_cast<unsigned char>(body[q]))) ++q;
    if (q < body.size() && body[q] == '=') {
      ++q;
      while (q < body.size() && std::isspace(static_cast<unsigned char>(body[q]))) ++q;
      if (q < body.size() && (body[q] == '"' || body[q] == '\'')) {
        const size_t close = body.find_first_of("\"'", q + 1);
        if (close != std::string::npos) {
          a[body.substr(i, end - i)] = body.substr(q + 1, close - q - 1);
          i = close + 1;
          continue;
        }
      }
    }
    i = end;
  }
  return a;
}

// The start tags of the elements named in `names`, in file order (a scan
// for SimGrid platform files, not an XML parser). Not std::regex: GCC 12's
// <regex> warns -Wmaybe-uninitialized in its own code under the sanitizer build.
std::vector<XmlTag> xml_tags(const std::string& xml, const std::vector<std::string>& names) {
  std::vector<XmlTag> tags;
  for (size_t at = xml.find('<'); at != std::string::npos; at = xml.find('<', at + 1)) {
    size_t end = at + 1;
    while (end < xml.size() && xml_word(xml[end])) ++end;
    const std::string name = xml.substr(at + 1, end - at - 1);
    if (std::find(names.begin(), names.end(), name) == names.end()) continue;
    const size_t close = xml.find('>', end);
    if (close == std::string::npos) break;
    tags.push_back({name, xml_attributes(xml.substr(end, close - end))});
    at = close;
  }
  return tags;
}

}  // namespace

std::vector<std::string> platform_hosts(const std::string& platform_xml) {
  std::string xml = read_all(platform_xml);
  if (xml.find("<platform") == std::string::npos)
    throw std::runtime_error(platform_xml + ": not a SimGrid platform file (no <platform> element)");
  std::vector<std::string> hosts;
  for (const XmlTag& t : xml_tags(xml, {"host", "cluster"})) {
    std::map<std::string, std::string> a = t.attributes;
    if (t.name == "host") {
      if (a["id"].empty()) throw std::runtime_error(platform_xml + ": a <host> without id");
      hosts.push_back(a["id"]);
      continue;
    }
    // <cluster prefix= radical="0-3,7" suffix=>
    std::stringstream parts(a["radical"]);
    std::string part;
    bool any = false;
    while (std::getline(parts, part, ',')) {
      int lo = 0, hi = 0;
      char dash = 0;
      std::istringstream ps(part);
      if (!(ps >> lo)) throw std::runtime_error(platform_xml + ": bad cluster radical '" + a["radical"] + "'");
      hi = lo;
      if (ps >> dash && (dash != '-' || !(ps >> hi) || hi < lo))
        throw std::runtime_error(platform_xml + ": bad cluster radical '" + a["radical"] + "'");
      for (int i = lo; i <= hi; ++i) hosts.push_back(a["prefix"] + std::to_string(i) + a["suffix"]);
      any = true;
    }
    if (!any) throw std::runtime_error(platform_xml + ": a <cluster> without radical");
  }
  if (hosts.empty()) throw std::runtime_error(platform_xml + ": the platform names no host");
  return hosts;
}

}  // namespace skt::predict
