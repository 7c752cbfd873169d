// skelgen time: the application's own runtime, untraced, measured the way a
// skeleton measures itself (slowest rank, MPI_Init's return to MPI_Finalize),
// so that a prediction can be checked against it.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "commands.h"
#include "skel/predict.h"
#include "skel/process.h"
#include "launch.h"

namespace skelgen {
namespace {

// Reads "measured_s=<s> ranks=<n> cpu_s=<s>" as the tracer wrote it; false
// if absent or malformed.
bool read_time_file(const std::string& path, double& seconds, int& ranks, double& cpu) {
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) return false;
  return std::sscanf(line.c_str(), "measured_s=%lf ranks=%d cpu_s=%lf", &seconds, &ranks, &cpu) == 3 &&
         seconds >= 0 && cpu >= 0;
}

}  // namespace

void setup_time(CLI::App& app, TimeOptions& opt) {
  app.description(
      "Run an MPI application REPEAT times, untraced, and print its runtime: the slowest rank's\n"
      "time from MPI_Init's return to MPI_Finalize, as a skeleton's SKELGEN_RESULT line measures\n"
      "its own. Use it to check a prediction against the real thing.\n"
      "Example: skelgen time -r 5 -- mpiexec.mpich -n 2 ./jacobi2d 400 1000\n"
      "The application's stdout goes to stderr; stdout gets one line per run (its time, and the\n"
      "CPU time its ranks used over it, every thread of every rank) and the summary\n"
      "  SKELGEN_APP runs=<n> min_s=<s> median_s=<s> ranks=<n> cpu_median_s=<s>\n"
      "Where ranks share cores, the same work can take more CPU time in one run than in another\n"
      "(ranks competing for a core's caches and memory bandwidth): compare the runs' CPU times.\n"
      "The MPI is detected as for `skelgen trace` (the tracer library only times, records nothing).");
  app.add_option("-r,--repeat", opt.repeat, "Runs (default 3)")->check(CLI::Range(1, 1000));
  app.add_option("--mpi", opt.mpi, "MPI library the application uses")->check(CLI::IsMember({"mpich", "openmpi"}));
  app.add_option("command", opt.command, "Launcher and application: -- LAUNCHER [ARGS] APP [ARGS]")
      ->required()
      ->expected(-1);
}

UntracedRun time_untraced_once(const std::vector<std::string>& command, const TracerLaunch& tracer,
                               const std::string& file, int nth, bool app_stdout_to_stderr) {
  std::remove(file.c_str());
  const int rc = run_with_tracer(command, tracer, {{"SKELTRACE_TIME_FILE", file}}, app_stdout_to_stderr);
  UntracedRun run;
  const bool got = read_time_file(file, run.seconds, run.ranks, run.cpu_seconds);
  std::remove(file.c_str());
  if (rc != 0)
    throw std::runtime_error("run " + std::to_string(nth) + ": the application exited with status " +
                             std::to_string(rc));
  if (!got)
    throw std::runtime_error("run " + std::to_string(nth) +
                             ": no time was reported (did every rank call MPI_Init and MPI_Finalize?)");
  return run;
}

int run_time(const TimeOptions& opt) {
  TracerLaunch tracer = resolve_tracer(opt.command, opt.mpi);
  skt::proc::TempDir tmp("time");  // private (0700): rank 0 creates the file in it
  const std::string file = tmp.file("time");
  std::vector<double> times, cpus;
  int ranks = 0;
  for (int i = 1; i <= opt.repeat; ++i) {
    const UntracedRun run = time_untraced_once(opt.command, tracer, file, i, true);
    times.push_back(run.seconds);
    cpus.push_back(run.cpu_seconds);
    ranks = run.ranks;
    std::printf("run %d/%d: %.6f s (ranks' CPU time %.6f s)\n", i, opt.repeat, run.seconds, run.cpu_seconds);
    std::fflush(stdout);
  }
  double lo = *std::min_element(times.begin(), times.end()), med = skt::predict::median(times);
  std::printf("SKELGEN_APP runs=%d min_s=%.6f median_s=%.6f ranks=%d cpu_median_s=%.6f\n", opt.repeat, lo, med, ranks,
              skt::predict::median(cpus));
  return 0;
}

}  // namespace skelgen
