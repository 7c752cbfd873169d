// skelgen generate: a trace directory, merged trace or folded program ->
// skeleton C source (running the missing stages); skelgen build: compile a
// skeleton with one MPI's compiler wrapper.
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <functional>
#include <sstream>
#include <stdexcept>

#include "commands.h"
#include "skel/build_record.h"
#include "skel/generate.h"
#include "skel/pipeline.h"
#include "skel/predict.h"
#include "skel/process.h"
#include "skel/trace.h"

extern char** environ;

namespace skelgen {
namespace {

struct Mpi {
  const char* name;
  const char* compiler;
  const char* package;
};
const Mpi kMpis[] = {{"mpich", "mpicc.mpich", "mpich libmpich-dev"},
                     {"openmpi", "mpicc.openmpi", "openmpi-bin libopenmpi-dev"},
                     {"simgrid", "smpicc", "libsimgrid-dev"}};

const Mpi* find_mpi(const std::string& name) {
  for (const Mpi& m : kMpis)
    if (name == m.name) return &m;
  return nullptr;
}

std::string strip_slashes(std::string s) {
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// When INPUT was made, for the skeleton's header: a trace directory's
// time is the tracing's; a merged trace or folded program says when it was
// written, not when the run was traced.
std::string date_of(const std::string& path) {
  struct stat sb {};
  if (stat(path.c_str(), &sb) != 0) return "";
  const char* made = S_ISDIR(sb.st_mode) ? "traced" : skt::is_folded_file(path) ? "folded" : "merged";
  char buf[64];
  struct tm tm {};
  gmtime_r(&sb.st_mtime, &tm);
  std::strftime(buf, sizeof buf, " %Y-%m-%d %H:%M UTC", &tm);
  return made + std::string(buf);
}

// The flavour a trace's MPI library string names ("" if neither).
std::string flavor_of(const std::string& library) {
  if (library.find("MPICH") != std::string::npos || library.find("mpich") != std::string::npos) return "mpich";
  if (library.find("Open MPI") != std::string::npos || library.find("OpenMPI") != std::string::npos) return "openmpi";
  return "";
}

// Runs the compiler and returns its exit status. A stop signal skelgen gets
// meanwhile (a job's timeout, Ctrl-C) is passed on to the compiler and what
// it started, `before_dying` removes the half-made build, and skelgen dies
// of the signal: a killed `generate --build` left empty .skelgen-build-*
// files and a compiler running on.
int spawn(const std::vector<std::string>& argv, const std::function<void()>& before_dying) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  skt::proc::StopSignals stop_signals;  // before the start: a stop that comes before the wait still ends it
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], nullptr, nullptr, args.data(), environ);
  if (rc != 0) throw std::runtime_error(argv[0] + ": cannot run: " + std::strerror(rc));
  return skt::proc::wait_passing_stops(pid, false, 0, argv[0], before_dying);
}

// "mpich" from the "skelgen-mpi:" line of a generated file's header comment
// (up to its first "*/": a header holds a line per cut loop and per note,
// and an Open MPI skeleton whose line came after 40 of them was built with
// MPICH's compiler), or "".
std::string mpi_of_source(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  while (std::getline(in, line)) {
    auto at = line.find("skelgen-mpi: ");
    if (at != std::string::npos) return line.substr(at + 13, line.find_first_of(" \t\r", at + 13) - at - 13);
    if (line.find("*/") != std::string::npos) break;
  }
  return "";
}

}  // namespace

void setup_generate(CLI::App& app, GenerateOptions& opt) {
  app.description(
      "Generate the skeleton: one self-contained C + MPI file that makes the application's calls (same peers,\n"
      "counts, datatypes, tags, roots, ops, requests and communicators), computes between them as long as the\n"
      "application did (a calibrated kernel; smpi_execute_flops under SimGrid), and runs the loops that hold the\n"
      "time count/K times. It prints SKELGEN_RESULT measured_s=<s> predicted_s=<s> scale=<K>.\n"
      "  skelgen generate TRACE_DIR|FILE.skm|FILE.skf [--scale K] [-o skel.c] [--build [--mpi M] [--exe EXE]]");
  app.add_option("input", opt.input, "Trace directory, merged trace (.skm) or folded program (.skf)")->required();
  app.add_option("-o,--output", opt.output, "C file to write (default: INPUT's name with .skel.c)");
  app.add_option("-K,--scale", opt.scale, "Cut the loops that hold the time to max(2, count/K) iterations (1: no cut)")
      ->check(CLI::Range(1u, 1000000u));
  app.add_option("--min-share", opt.min_share, "A loop is cut only if it holds at least this share of the time")
      ->check(CLI::Range(0.0, 1.0));
  app.add_flag("--join-call-sites", opt.join_callsites,
               "When folding here (INPUT a trace or merged trace): as skelgen compress --join-call-sites");
  auto* order = app.add_option("--merge-order", opt.merge_order,
                               "When merging here (INPUT a trace directory): as skelgen merge --order")
                    ->check(CLI::IsMember({"auto", "walk", "align", "nth"}))
                    ->capture_default_str();
  app.add_flag_callback("--align", [&opt] { opt.merge_order = "align"; }, "The same as --merge-order align")
      ->excludes(order);
  app.add_flag("--allow-partial", opt.allow_partial, "Accept a trace whose ranks ended early (see skelgen merge)");
  app.add_flag("--keep-completions", opt.keep_completions,
               "When merging here: keep every MPI_Waitany, MPI_Waitsome, MPI_Test* and null MPI_Wait* call "
               "(see skelgen merge)");
  app.add_option("--watchdog", opt.watchdog_s,
                 "Seconds a rank may wait in one call (or 100x its traced time, if longer) before the skeleton stops "
                 "with a line naming the call; 0: no watchdog; $SKELGEN_WATCHDOG_S overrides it when the skeleton runs")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  app.add_flag("--force", opt.force,
               "Write the skeleton even where the completion check finds it cannot complete (its watchdog stops it)");
  app.add_flag("--no-farms", opt.no_farms,
               "Replay a dynamic master-worker farm's traced shares of the tasks instead of handing them out to "
               "whichever worker asks");
  app.add_flag("--expand-runs", opt.expand_runs,
               "Write each kept run of left-out time steps out in full (default: kept runs, then top-level loops "
               "and steps, that differ only in numbers and in which tables they name share one function, each a "
               "row of its table)");
  app.add_flag("--build", opt.build, "Also compile it (as skelgen build)");
  app.add_option("--mpi", opt.mpi, "With --build: mpich, openmpi or simgrid (default: the MPI it was traced with)")
      ->check(CLI::IsMember({"mpich", "openmpi", "simgrid"}));
  app.add_option("--exe", opt.exe, "With --build: executable to write (default: the C file without .c)");
  app.add_flag("-q,--quiet", opt.quiet, "No summary or progress");
}

// Folded programs with more event nodes than this get a warning ...
constexpr size_t kLongProgram = 5000;
// ... and a skeleton of more lines of C than this
constexpr size_t kLongSkeleton = 10000;

namespace {

// What `skelgen trace --compare-untraced` measured for the trace directory
// (runs = 0: nothing, or a file that says nothing usable, said on stderr).
skt::TraceDir::UntracedComparison untraced_of(const std::string& trace_dir, bool quiet) {
  try {
    return skt::TraceDir::read_untraced(trace_dir);
  } catch (const std::exception& e) {
    if (!quiet) std::fprintf(stderr, "skelgen generate: warning: %s; ignored\n", e.what());
    return {};
  }
}

// The skeleton follows its trace: a trace slower than the untraced runs
// makes every prediction about as much too long.
void report_untraced(double traced_s, const skt::TraceDir::UntracedComparison& u) {
  const double longer = traced_s / u.untraced_s - 1;
  std::printf("untraced: %.6f s, median of %u untraced run%s (skelgen trace --compare-untraced): the trace took "
              "%+.1f %%\n",
              u.untraced_s, u.runs, u.runs == 1 ? "" : "s", 100 * longer);
  if (longer > skt::predict::kTracedLongerWarning)
    std::fprintf(stderr,
                 "skelgen generate: warning: the trace took %.0f %% longer than the untraced runs; the skeleton "
                 "follows it, so its predictions will be about as much too long (docs/tracer.md, \"Traced against "
                 "untraced\")\n",
                 100 * longer);
}

}  // namespace

int run_generate(const GenerateOptions& opt) {
  std::string input = strip_slashes(opt.input);
  std::string out = opt.output;
  if (out.empty()) {
    std::string base = input;
    for (const char* ext : {".skf", ".skm"})
      if (base.size() > 4 && base.compare(base.size() - 4, 4, ext) == 0) base.resize(base.size() - 4);
    out = base + ".skel.c";
  }
  skt::gen::InputOptions io;
  io.allow_partial = opt.allow_partial;
  io.merge_order = opt.merge_order;
  io.coalesce_completions = !opt.keep_completions;
  io.join_callsites = opt.join_callsites;
  if (!opt.quiet) io.say = [](const std::string& s) { std::fprintf(stderr, "skelgen generate: %s\n", s.c_str()); };
  skt::FoldedProgram p = skt::gen::load_program(input, io);
  skt::gen::GenerateOptions go;
  go.scale = opt.scale;
  go.min_share = opt.min_share;
  go.watchdog_s = opt.watchdog_s;
  go.force = opt.force;
  go.farms = !opt.no_farms;
  go.share_runs = !opt.expand_runs;
  go.trace_label = input;
  go.generated_on = date_of(input);
  const skt::TraceDir::UntracedComparison untraced = untraced_of(p.source.empty() ? input : p.source, opt.quiet);
  go.untraced_s = untraced.untraced_s;
  std::string name = out.substr(out.find_last_of('/') + 1);
  go.name = name.substr(0, name.find('.'));
  std::string flavor = flavor_of(p.symbols.ranks.empty() ? "" : p.symbols.ranks[0].mpi_library);
  go.mpi = flavor;
  if (!opt.quiet) go.progress = [](const std::string& s) { std::fprintf(stderr, "skelgen generate: %s\n", s.c_str()); };
  skt::gen::Skeleton s = skt::gen::generate(p, go);
  {
    std::ofstream f(out, std::ios::binary | std::ios::trunc);
    if (!f) throw std::runtime_error(out + ": cannot write: " + std::strerror(errno));
    f << s.code;
    f.close();
    if (!f) throw std::runtime_error(out + ": write failed: " + std::strerror(errno));
  }
  if (!opt.quiet) {
    std::printf("skeleton: %s -> %s (%u ranks, K = %u)\n", input.c_str(), out.c_str(), p.symbols.world_size,
                opt.scale);
    std::printf("traced:   %.6f s, MPI_Init to MPI_Finalize (slowest rank)\n", s.traced_s);
    if (untraced.runs > 0) report_untraced(s.traced_s, untraced);
    std::printf("expected: %.6f s for the skeleton on the traced machine\n", s.kept_s);
    for (size_t i = 0; i < s.cut.size(); ++i)
      std::printf("cut:      %sloop n%u, %llu -> %llu iterations%s (%.1f %% of the time)\n",
                  s.cut[i].thread ? ("thread " + std::to_string(s.cut[i].thread) + ": ").c_str() : "", s.cut[i].node,
                  static_cast<unsigned long long>(s.cut[i].count), static_cast<unsigned long long>(s.cut[i].iterations),
                  s.cut[i].period > 1 ? (", whole periods of " + std::to_string(s.cut[i].period)).c_str() : "",
                  s.cut[i].share * 100);
    for (const auto& f : s.farms)
      std::printf("farm:     master rank %u, %u workers: %llu of %llu tasks handed to whichever worker asks "
                  "(%.6f s traced)\n",
                  f.master, f.workers, static_cast<unsigned long long>(f.kept), static_cast<unsigned long long>(f.tasks),
                  f.traced_s);
    for (const auto& g : s.shortened)
      std::printf("cut:      computation before n%u (%s, made once), %.6f s -> 1/%u of it, timed (%.1f %% of the time)\n",
                  g.node, g.call.c_str(), g.traced_s, opt.scale, g.share * 100);
    if (s.top_left_out > 0)
      std::printf("left out: %zu of %zu top-level nodes (time steps that did not fold), %zu kept runs standing "
                  "for them\n",
                  s.top_left_out, s.top_nodes, s.standing_runs);
    if (s.shared_functions > 0)
      std::printf("shared:   %zu kept runs and %zu loops or steps written alike: %zu function%s, each a row of its "
                  "table\n",
                  s.shared_runs, s.shared_blocks, s.shared_functions, s.shared_functions == 1 ? "" : "s");
    if (s.cut.empty() && s.farms.empty())
      std::printf("cut:      none (%s)\n", s.top_left_out ? "no loop is cut: time steps are left out instead, above"
                                                         : "every loop runs as traced");
    std::printf("check:    %s%s\n", s.complete ? "" : "FAILS: ", s.completion.c_str());
    for (const auto& r : s.repairs) std::printf("repair:   %s\n", r.c_str());
    if (s.reordered_steps)
      std::printf("order:    %u communication step(s) given a per-rank order that cannot deadlock\n", s.reordered_steps);
    for (const auto& n : s.notes) std::fprintf(stderr, "skelgen generate: note: %s\n", n.c_str());
  }
  if (!s.completion_warning.empty())
    std::fprintf(stderr, "skelgen generate: warning: %s\n", s.completion_warning.c_str());
  // A program that did not fold (each iteration different: a growing request
  // distance, a tag that changes inside a nested loop) gives a skeleton as long
  // as the trace, slow to compile and not shorter to run: say so even with -q.
  // Where the time steps left out keep the skeleton short, it is not.
  size_t length = 0;
  for (const auto& n : p.nodes) length += n.is_loop() ? 0 : 1;
  const size_t lines = static_cast<size_t>(std::count(s.code.begin(), s.code.end(), '\n'));
  if (length > kLongProgram && lines > kLongSkeleton)
    std::fprintf(stderr,
                 "skelgen generate: warning: the skeleton has %zu lines of C and the folded program still %zu calls "
                 "(of %llu merged): some loop did not fold, the skeleton is long and compiles slowly; `skelgen dump` "
                 "the .skf to see which calls differ between iterations\n",
                 lines, length, static_cast<unsigned long long>(p.merged_events));
  if (!opt.build) return 0;
  BuildOptions bo;
  bo.input = out;
  bo.mpi = opt.mpi;
  bo.output = opt.exe;
  bo.quiet = opt.quiet;
  return run_build(bo);
}

void setup_build(CLI::App& app, BuildOptions& opt) {
  app.description(
      "Compile a generated skeleton with one MPI's compiler wrapper (mpicc.mpich, mpicc.openmpi, or smpicc for a\n"
      "SimGrid-simulated cluster), -O2 -Wall.\n"
      "  skelgen build skel.c [--mpi mpich|openmpi|simgrid] [-o EXE]");
  app.add_option("source", opt.input, "Generated skeleton (.c)")->required()->check(CLI::ExistingFile);
  app.add_option("--mpi", opt.mpi, "mpich, openmpi or simgrid (default: the MPI it was traced with)")
      ->check(CLI::IsMember({"mpich", "openmpi", "simgrid"}));
  app.add_option("-o,--output", opt.output, "Executable (default: the source without .c)");
  app.add_option("--cflags", opt.cflags, "Extra compiler flags, e.g. \"-march=native\"");
  app.add_flag("-q,--quiet", opt.quiet, "Print nothing but the compiler's own messages");
}

int run_build(const BuildOptions& opt) {
  std::string mpi = opt.mpi.empty() ? mpi_of_source(opt.input) : opt.mpi;
  if (mpi.empty()) mpi = "mpich";
  const Mpi* m = find_mpi(mpi);
  if (!m) throw std::runtime_error("unknown MPI '" + mpi + "' (mpich, openmpi or simgrid)");
  if (skt::proc::which(m->compiler).empty())
    throw std::runtime_error(std::string(m->compiler) + " not found in PATH: install " + m->package +
                             " (apt-get install " + m->package + ")");
  std::string exe = opt.output;
  if (exe.empty()) {
    exe = opt.input;
    if (exe.size() > 2 && exe.compare(exe.size() - 2, 2, ".c") == 0) exe.resize(exe.size() - 2);
    if (exe == opt.input) exe += ".exe";
  }
  // with the flags predict builds with: built under a temporary name, then
  // put in place with its build record, so that predict reuses it
  const bool record = opt.record && opt.cflags.empty();
  const std::string target = exe;
  if (record) exe = skt::predict::temp_build_path(target);
  std::vector<std::string> argv = {m->compiler, "-O2", "-Wall", "-o", exe, opt.input};
  if (!opt.cflags.empty()) {
    std::stringstream ss(opt.cflags);
    std::string f;
    while (ss >> f) argv.insert(argv.end() - 1, f);
  }
  if (mpi == "simgrid") argv.push_back("-lm");
  int rc = spawn(argv, [&] {
    if (record) std::remove(exe.c_str());
  });
  if (rc != 0) {
    if (record) std::remove(exe.c_str());
    std::fprintf(stderr, "skelgen: error: %s failed (exit %d) on %s\n", m->compiler, rc, opt.input.c_str());
    return 1;
  }
  if (record) {
    try {
      skt::predict::install_build(exe, target, skt::predict::build_inputs(opt.input, mpi, m->compiler));
    } catch (...) {
      std::remove(exe.c_str());
      throw;
    }
    exe = target;
  }
  if (!opt.quiet) std::printf("built:    %s (%s)\n", exe.c_str(), m->compiler);
  return 0;
}

}  // namespace skelgen
