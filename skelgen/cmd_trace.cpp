// skelgen trace: run an application with the right tracer preloaded.
#include <dirent.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <optional>
#include <stdexcept>
#include <system_error>

#include "commands.h"
#include "launch.h"
#include "skel/predict.h"
#include "skel/process.h"
#include "skel/trace.h"

namespace skelgen {
namespace {

std::string dirname_of(const std::string& p) {
  auto s = p.rfind('/');
  return s == std::string::npos ? "." : (s == 0 ? "/" : p.substr(0, s));
}

using skt::proc::basename_of;
using skt::proc::flavor_of_launcher;
using skt::proc::which;

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// "mpich", "openmpi" or "" from the shared libraries a program links. ldd
// runs with an argument vector, never through a shell: a program path may
// hold any character (a quote, a semicolon).
std::string flavor_of_binary(const std::string& prog) {
  std::string full = which(prog);
  if (full.empty()) return "";
  std::string out;
  try {
    out = skt::proc::run_captured({"ldd", "--", full}, 30).out;
  } catch (const std::exception&) {
    return "";  // no ldd: the launcher's name or --mpi decides
  }
  if (out.find("libmpich") != std::string::npos) return "mpich";
  if (out.find("libmpi.so") != std::string::npos || out.find("openmpi") != std::string::npos) return "openmpi";
  return "";
}

bool is_launcher(const std::string& cmd) {
  std::string b = basename_of(cmd);
  return b.rfind("mpirun", 0) == 0 || b.rfind("mpiexec", 0) == 0 || b.rfind("orterun", 0) == 0;
}

std::string self_dir() {
  char buf[PATH_MAX];
  ssize_t n = readlink("/proc/self/exe", buf, sizeof buf - 1);
  if (n <= 0) return ".";
  buf[n] = 0;
  return dirname_of(buf);
}

std::string tracer_library(const std::string& flavor) {
  const char* env = std::getenv("SKELGEN_TRACER_DIR");
  std::string dir = env && *env ? env : self_dir() + "/../lib";
  std::string lib = real_path(dir) + "/libskeltrace-" + flavor + ".so";
  if (access(lib.c_str(), R_OK) != 0)
    throw std::runtime_error("no tracer for " + flavor + " (" + lib +
                             " is missing; was skelgen built with that MPI installed?)");
  return lib;
}

// Names of the rank files (rank-*.skt) in dir; empty if none or no dir.
std::vector<std::string> rank_files(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (!d) return out;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.rfind("rank-", 0) == 0 && n.size() > 4 && n.compare(n.size() - 4, 4, ".skt") == 0) out.push_back(n);
  }
  closedir(d);
  return out;
}

}  // namespace

void setup_trace(CLI::App& app, TraceOptions& opt) {
  app.description(
      "Run an MPI application once under the skelgen tracer: one trace file per rank in DIR.\n"
      "Example: skelgen trace -o ring.trace -- mpiexec.mpich -n 2 ./ring\n"
      "The MPI is detected from the launcher (mpiexec.mpich, mpirun.openmpi, ...) or, for an\n"
      "unknown launcher, from the libraries the program links; --mpi overrides. Tracer settings\n"
      "come from SKELTRACE_* environment variables (see docs/tracer.md).\n"
      "Exit status: the application's; 3 when it exited 0 but a rank's trace is unreadable or incomplete.");
  app.add_option("-o,--output", opt.out_dir, "Trace directory (default: ./skeltrace)");
  app.add_option("--mpi", opt.mpi, "MPI library the application uses")->check(CLI::IsMember({"mpich", "openmpi"}));
  app.add_option("--stack-depth", opt.stack_depth, "Frames per call site (1 = caller only; >1 uses libunwind)")
      ->check(CLI::Range(1, 16));
  app.add_option("--runs", opt.runs,
                 "Run the application N times, each traced into DIR/run-1 ... DIR/run-N; skelgen merge DIR (and\n"
                 "generate DIR) then takes each call's times as the median over the runs, so that one disturbed\n"
                 "run does not become the prediction, and says how much the runs disagreed (docs/tracer.md)")
      ->check(CLI::Range(1, 100));
  auto* in_job = app.add_flag(
      "--merge-in-job", opt.merge_in_job,
      "At MPI_Finalize the ranks send their traces along a tree of the ranks to rank 0, which merges them\n"
      "(as skelgen merge) into DIR.skm: one file on the shared file system instead of one per rank; the rank\n"
      "files are written on each node's TMPDIR (or /tmp) meanwhile. Where the merge fails they go to DIR");
  app.add_flag("--keep-rank-files", opt.keep_rank_files,
               "With --merge-in-job: also leave every rank's file in DIR (to compare with skelgen merge DIR)")
      ->needs(in_job);
  app.add_flag("--compare-untraced", opt.compare_untraced,
               "After each traced run, run the application once untraced (timed, nothing recorded) and say how\n"
               "much longer it ran traced: a skeleton follows its trace, so a trace the tracer slowed down (ranks\n"
               "sharing cores, calls every few microseconds) makes predictions as much too long. The medians are\n"
               "kept in DIR/untraced.txt; generate and predict show them (docs/tracer.md)");
  app.add_flag("--force", opt.force, "Replace a trace already in the output directory");
  app.add_flag("-q,--quiet", opt.quiet, "Do not print the summary");
  app.add_option("command", opt.command, "Launcher and application: -- LAUNCHER [ARGS] APP [ARGS]")
      ->required()
      ->expected(-1);
}

namespace {
// Open MPI's launcher refuses to run as root unless told it may: say so
// before it starts, rather than after it printed a page and wrote nothing.
void check_root_allowed(const std::vector<std::string>& command) {
  if (geteuid() != 0 || flavor_of_launcher(command[0]) != "openmpi" || !is_launcher(command[0])) return;
  for (const std::string& a : command)
    if (a == "--allow-run-as-root") return;
  const char* allow = std::getenv("OMPI_ALLOW_RUN_AS_ROOT");
  const char* confirm = std::getenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM");
  if (allow && confirm && std::string(allow) == "1" && std::string(confirm) == "1") return;
  throw std::runtime_error(basename_of(command[0]) +
                           " refuses to run as root: add --allow-run-as-root to its options (or set "
                           "OMPI_ALLOW_RUN_AS_ROOT=1 and OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1)");
}
}  // namespace

TracerLaunch resolve_tracer(const std::vector<std::string>& command, const std::string& mpi) {
  const std::string& launcher = command.at(0);
  if (which(launcher).empty()) throw std::runtime_error("command not found: " + launcher);
  // The program's MPI (from the libraries it links) and the launcher's must agree.
  std::string app_flavor;
  std::string app;
  // Without a launcher (a singleton run) the first word is the program itself.
  for (size_t i = is_launcher(launcher) ? 1 : 0; app_flavor.empty() && i < command.size(); ++i) {
    app_flavor = flavor_of_binary(command[i]);
    if (!app_flavor.empty()) app = command[i];
  }
  std::string launcher_flavor = is_launcher(launcher) ? flavor_of_launcher(launcher) : "";
  if (!app_flavor.empty() && !launcher_flavor.empty() && app_flavor != launcher_flavor)
    throw std::runtime_error(app + " is linked with " + app_flavor + " but " + launcher + " launches " +
                             launcher_flavor + " programs; use that MPI's launcher");
  std::string flavor = mpi;
  if (flavor.empty()) flavor = !launcher_flavor.empty() ? launcher_flavor : app_flavor;
  if (!mpi.empty() && !app_flavor.empty() && mpi != app_flavor)
    throw std::runtime_error(app + " is linked with " + app_flavor + ", not " + mpi);
  if (flavor.empty())
    throw std::runtime_error("cannot tell which MPI '" + launcher + "' uses; say --mpi mpich or --mpi openmpi");
  check_root_allowed(command);
  return {flavor, tracer_library(flavor)};
}

int run_with_tracer(const std::vector<std::string>& command, const TracerLaunch& tracer,
                    std::vector<std::pair<std::string, std::string>> env, bool app_stdout_to_stderr) {
  const std::string& launcher = command.at(0);
  std::string preload = tracer.lib;
  if (const char* old = std::getenv("LD_PRELOAD"); old && *old) preload += std::string(":") + old;
  env.insert(env.begin(), {"LD_PRELOAD", preload});

  // Pass the settings to the ranks only, not to the launcher itself.
  std::vector<std::string> argv{launcher};
  std::string lflavor = is_launcher(launcher) ? flavor_of_launcher(launcher) : "";
  for (const auto& [k, v] : env) {
    if (lflavor == "mpich") {
      argv.insert(argv.end(), {"-genv", k, v});
    } else if (lflavor == "openmpi") {
      argv.insert(argv.end(), {"-x", k + "=" + v});
    } else {
      setenv(k.c_str(), v.c_str(), 1);
    }
  }
  if (lflavor.empty() && is_launcher(launcher))
    std::fprintf(stderr, "skelgen: note: unknown launcher %s; passing the tracer through the environment\n",
                 launcher.c_str());
  // Open MPI applies -x to the application context it precedes: an MPMD
  // command (APP1 : APP2 ...) passes the settings again after every ':',
  // or the later contexts' ranks run untraced (and the traced ones wait for
  // them in MPI_Init's collectives).
  for (auto it = command.begin() + 1; it != command.end(); ++it) {
    argv.push_back(*it);
    if (lflavor == "openmpi" && *it == ":")
      for (const auto& [k, v] : env) argv.insert(argv.end(), {"-x", k + "=" + v});
  }

  std::fflush(nullptr);
  skt::proc::StopSignals stop_signals;  // before the start: a stop that comes before the wait still ends the child
  pid_t pid = fork();
  if (pid < 0) throw std::runtime_error(std::string("fork failed: ") + std::strerror(errno));
  if (pid == 0) {
    if (app_stdout_to_stderr) dup2(2, 1);
    std::vector<char*> cargv;
    for (auto& a : argv) cargv.push_back(const_cast<char*>(a.c_str()));
    cargv.push_back(nullptr);
    execvp(cargv[0], cargv.data());
    std::fprintf(stderr, "skelgen: error: cannot run %s: %s\n", cargv[0], std::strerror(errno));
    _exit(127);
  }
  // the launcher shares skelgen's process group: a Ctrl-C reaches both, a SIGTERM sent to skelgen alone
  // (kill PID, a job script) is passed on
  return skt::proc::wait_passing_stops(pid, false, 0, basename_of(argv[0]));
}

namespace {

// One traced run of the command into dir (made, empty): the application's
// exit status, or kExitTraceIncomplete / 1 where its trace is incomplete or missing.
// traced_s: the run's time on the trace's clock (check_trace).
int trace_once(const TraceOptions& opt, const TracerLaunch& tracer, std::string dir, double* traced_s) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) throw std::runtime_error("cannot create " + dir + ": " + ec.message());
  dir = real_path(dir);

  if (!opt.quiet)
    std::fprintf(stderr, "skelgen: tracing with %s into %s\n", basename_of(tracer.lib).c_str(), dir.c_str());
  std::vector<std::pair<std::string, std::string>> env{{"SKELTRACE_DIR", dir},
                                                       {"SKELTRACE_STACK_DEPTH", std::to_string(opt.stack_depth)}};
  const std::string merged = dir + ".skm";
  if (opt.merge_in_job) {
    env.push_back({"SKELTRACE_MERGE_IN_JOB", opt.keep_rank_files ? "keep" : "1"});
    std::remove(merged.c_str());  // a merged trace of an earlier run must not pass for this one's
  }
  int rc = run_with_tracer(opt.command, tracer, env, false);
  struct stat sb {};
  if (opt.merge_in_job && stat(merged.c_str(), &sb) == 0 && !opt.keep_rank_files) {
    if (rc != 0) std::fprintf(stderr, "skelgen: the application exited with status %d\n", rc);
    if (!opt.quiet) std::fprintf(stderr, "skelgen: merged in the job: %s (skelgen generate %s)\n", merged.c_str(),
                                 merged.c_str());
    return rc;
  }
  if (rank_files(dir).empty()) {
    if (rc != 0)
      std::fprintf(stderr,
                   "skelgen: error: %s exited with status %d before any rank started tracing: the launcher refused "
                   "to start (an unknown option, no usable hosts) or the program failed before MPI_Init; see its "
                   "messages above\n",
                   basename_of(opt.command[0]).c_str(), rc);
    else
      std::fprintf(stderr, "skelgen: error: no trace was written to %s (did the program call MPI_Init?)\n",
                   dir.c_str());
    return rc ? rc : 1;
  }
  if (rc != 0) std::fprintf(stderr, "skelgen: the application exited with status %d\n", rc);
  std::fflush(stdout);
  // The summary goes to stderr: the application's stdout stays its own.
  int saved = dup(1);
  dup2(2, 1);
  bool complete = check_trace(dir, opt.quiet, traced_s);
  std::fflush(stdout);
  dup2(saved, 1);
  close(saved);
  if (rc == 0 && !complete) return kExitTraceIncomplete;
  return rc;
}

// "0.917 s" for one run, "0.898-0.957 s (median 0.917)" for several.
std::string seconds_of(const std::vector<double>& v) {
  char b[96];
  if (v.size() == 1) {
    std::snprintf(b, sizeof b, "%.3f s", v[0]);
  } else {
    std::snprintf(b, sizeof b, "%.3f-%.3f s (median %.3f)", *std::min_element(v.begin(), v.end()),
                  *std::max_element(v.begin(), v.end()), skt::predict::median(v));
  }
  return b;
}

// What tracing did to the run: the traced runs' time on the trace's clock
// (the tracer's own work taken out) against the untraced runs'.
// The medians are kept in DIR/untraced.txt, where generate and predict
// find them.
void report_untraced(const std::string& dir, const std::vector<double>& traced, const std::vector<double>& untraced) {
  const double t = skt::predict::median(traced), u = skt::predict::median(untraced);
  if (t <= 0 || u <= 0) {
    std::fprintf(stderr,
                 "skelgen: note: no time from MPI_Init to MPI_Finalize to compare (traced %.3f s, untraced %.3f s)\n", t,
                 u);
    return;
  }
  try {
    skt::TraceDir::write_untraced(dir, {t, u, static_cast<uint32_t>(traced.size())});
  } catch (const std::exception& e) {
    std::fprintf(stderr, "skelgen: warning: %s; generate will not know the comparison\n", e.what());
  }
  const double longer = t / u - 1;
  std::fprintf(stderr, "skelgen: traced %s, untraced %s (MPI_Init to MPI_Finalize, slowest rank): %+.1f %%\n",
               seconds_of(traced).c_str(), seconds_of(untraced).c_str(), 100 * longer);
  if (longer > skt::predict::kTracedLongerWarning)
    std::fprintf(stderr,
                 "skelgen: warning: the application ran %.0f %% longer traced than untraced; a skeleton follows its "
                 "trace, so its predictions will be about as much too long (docs/tracer.md, \"Traced against "
                 "untraced\")\n",
                 100 * longer);
}

}  // namespace

int run_trace(const TraceOptions& opt) {
  TracerLaunch tracer = resolve_tracer(opt.command, opt.mpi);
  std::string dir = opt.out_dir.empty() ? "skeltrace" : opt.out_dir;
  const std::vector<std::string> old_runs = skt::TraceDir::run_dirs(dir);
  if (!rank_files(dir).empty() || !old_runs.empty()) {
    if (!opt.force)
      throw std::runtime_error(dir + " already holds a trace; use --force to replace it or -o for another directory");
    // Removed, never written through: the tracer creates new files (O_EXCL).
    for (const std::string& f : rank_files(dir)) unlink((dir + "/" + f).c_str());
    std::error_code ignored;
    for (const std::string& w : skt::TraceDir::spawned_worlds(dir)) std::filesystem::remove_all(dir + "/" + w, ignored);
    for (const std::string& r : old_runs) std::filesystem::remove_all(r, ignored);
  }
  // A comparison of an earlier trace must not pass for this one's.
  unlink((dir + "/" + skt::TraceDir::untraced_file_name()).c_str());
  if (opt.merge_in_job && opt.runs > 0)
    throw std::runtime_error("--merge-in-job merges one run; trace several runs without it");
  if (opt.merge_in_job && opt.compare_untraced)
    throw std::runtime_error("--compare-untraced reads the rank files, which --merge-in-job does not leave");
  std::optional<skt::proc::TempDir> tmp;  // private (0700): rank 0 writes the untraced run's time in it
  if (opt.compare_untraced) tmp.emplace("time");
  std::vector<double> traced, untraced;
  const int runs = std::max(1, opt.runs);
  for (int k = 1; k <= runs; ++k) {
    if (!opt.quiet && opt.runs > 0) std::fprintf(stderr, "skelgen: run %d/%d\n", k, opt.runs);
    const std::string run_dir =
        opt.runs > 0 ? dir + "/" + skt::TraceDir::run_dir_name(static_cast<uint32_t>(k)) : dir;
    double t = 0;
    const int rc = trace_once(opt, tracer, run_dir, &t);
    if (rc != 0) {
      if (opt.runs > 0)
        std::fprintf(stderr, "skelgen: error: run %d of %d failed; the runs before it are in %s\n", k, opt.runs,
                     dir.c_str());
      return rc;
    }
    traced.push_back(t);
    if (!opt.compare_untraced) continue;
    if (!opt.quiet) std::fprintf(stderr, "skelgen: untraced run %d/%d (timed only)\n", k, runs);
    untraced.push_back(time_untraced_once(opt.command, tracer, tmp->file("time"), k, false).seconds);
  }
  if (!opt.quiet && opt.runs > 0)
    std::fprintf(stderr,
                 "skelgen: %d runs traced into %s/run-1 ... run-%d; skelgen merge %s takes each call's median\n",
                 opt.runs, dir.c_str(), opt.runs, dir.c_str());
  if (opt.compare_untraced) report_untraced(dir, traced, untraced);
  return 0;
}

}  // namespace skelgen
