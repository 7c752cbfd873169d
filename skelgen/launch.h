// Running an application with the skelgen tracer library preloaded (used by
// `skelgen trace` and `skelgen time`; implemented in cmd_trace.cpp).
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace skelgen {

struct TracerLaunch {
  std::string flavor;  // "mpich" or "openmpi"
  std::string lib;     // absolute path of libskeltrace-<flavor>.so
};

// Which MPI `command` (LAUNCHER [ARGS] APP [ARGS], or a program alone) uses,
// checked against the program's own libraries and `mpi` ("" = detect), and
// the tracer library for it. Throws std::runtime_error with a one-line reason.
TracerLaunch resolve_tracer(const std::vector<std::string>& command, const std::string& mpi);

// Runs `command` with the tracer preloaded and `env` set in the ranks (through
// -genv / -x for known launchers); returns its exit status (128 + signal).
// app_stdout_to_stderr: the application's stdout goes to our stderr.
int run_with_tracer(const std::vector<std::string>& command, const TracerLaunch& tracer,
                    std::vector<std::pair<std::string, std::string>> env, bool app_stdout_to_stderr);

// One untraced run of `command`, timed by the tracer library in its timing
// mode (it records nothing): the slowest rank's time from MPI_Init's return
// to MPI_Finalize, and the CPU time of every rank's threads over it. `file`
// is where rank 0 writes them (in a private directory); app_stdout_to_stderr
// as for run_with_tracer. Throws
// std::runtime_error naming run `nth` when the application fails or no
// time was reported. Implemented in cmd_time.cpp.
struct UntracedRun {
  double seconds = 0, cpu_seconds = 0;
  int ranks = 0;
};
UntracedRun time_untraced_once(const std::vector<std::string>& command, const TracerLaunch& tracer,
                               const std::string& file, int nth, bool app_stdout_to_stderr);

}  // namespace skelgen
