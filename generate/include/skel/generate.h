// skelgen generate: a folded program -> one self-contained C + MPI source
// file, the skeleton. Method and contracts: docs/generate.md.
//
// The skeleton makes every traced call with its per-rank peer, count,
// datatype, tag, root and op; keeps non-blocking requests in slots that the
// matching Wait*/Test* completes; recreates the communicators with the same
// members; computes between calls with the reference kernel (gap x the traced
// node's kernel rate; smpi_execute_flops under SimGrid); runs the loops that
// hold most of the time count/K times; and prints one line,
//   SKELGEN_RESULT measured_s=<s> predicted_s=<s> scale=<K>
// where predicted_s adds back each cut loop's time x its own factor.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "skel/folded.h"

namespace skt::gen {

struct GenerateOptions {
  uint32_t scale = 10;          // K: cut loops run max(2, count / K) iterations
  double min_share = 0.01;      // a loop is cut only if it holds at least this share of the time
  std::string name = "skeleton";  // program name in messages
  std::string trace_label;      // what it came from (path), for the header comment
  std::string mpi;              // flavour traced with ("mpich", "openmpi"), for skelgen build's default
  std::string generated_on;     // date, for the header comment (empty: not printed)
  // The application's untraced time, median of the untraced runs of `skelgen
  // trace --compare-untraced` (0: not measured), written into SKELGEN_META
  // for skelgen predict to compare with the traced time.
  double untraced_s = 0;
  // The watchdog: a call waited in longer than the larger of this and 100x its
  // traced duration stops the skeleton with a line naming it (0: no watchdog;
  // the skeleton's $SKELGEN_WATCHDOG_S overrides it).
  double watchdog_s = 60;
  // Write the skeleton even where the completion check finds that it cannot
  // complete (its watchdog then stops it): for testing the check.
  bool force = false;
  // Run dynamic master-worker farms as farms (docs/generate.md); false: the
  // calls as traced, each worker with its traced share of the tasks.
  bool farms = true;
  // Where time steps are left out: kept runs, then top-level loops and
  // steps, that differ only in numbers and in which tables they name are
  // written once, as a function over a table of rows (docs/generate.md,
  // "Kept runs written once"); false: each written out in full.
  bool share_runs = true;
  std::function<void(const std::string&)> progress;
};

struct CutLoop {
  uint32_t thread = 0;          // the thread whose program it is in (0: the first; FoldedProgram::thread)
  uint32_t node = 0;            // index in FoldedProgram::nodes (of that thread's program)
  uint64_t count = 0;           // iterations per instance in the trace
  uint64_t iterations = 0;      // in the skeleton: whole periods
  uint64_t period = 1;          // iterations after which its calls' values repeat (cycle rules inside)
  double share = 0;             // of the program's time (max over ranks)
};

struct Skeleton {
  std::string code;             // the C source
  std::vector<CutLoop> cut;     // the loops that run fewer iterations
  // Dynamic master-worker farms run as farms (docs/generate.md): each hands
  // `kept` of the application's `tasks` to whichever worker asks.
  struct FarmSummary {
    uint32_t master = 0;
    uint32_t workers = 0;
    uint64_t tasks = 0, kept = 0;
    double traced_s = 0;        // the master's time in it in the trace
  };
  std::vector<FarmSummary> farms;
  // Computations of the top level made once that run 1/K of their work,
  // timed, standing for all of it (docs/generate.md, "Long computations
  // made once"): before which call, and how long on its slowest rank.
  struct ShortenedSummary {
    uint32_t node = 0;
    std::string call;
    double traced_s = 0;
    double share = 0;           // of the program's time
  };
  std::vector<ShortenedSummary> shortened;
  double traced_s = 0;          // application time in the trace, MPI_Init to MPI_Finalize, max over ranks
  double kept_s = 0;            // of which outside cut loops (estimate, max over ranks)
  double comm_s = 0;            // time in MPI calls per rank (mean over ranks; MPI_Init/Finalize not counted)
  double comp_s = 0;            // computation between calls per rank (mean over ranks)
  double kernel_flops_per_s = 0;  // the traced node's compute-kernel speed (flops of the kernel, mean over ranks)
  uint32_t reordered_steps = 0; // communication steps given a per-rank deadlock-free order
  // Time steps that did not fold (docs/generate.md, "Irregular time steps"): top-level
  // nodes left out, of how many, and the kept runs that stand for them.
  size_t top_left_out = 0, top_nodes = 0, standing_runs = 0;
  // kept runs and top-level loops or steps written as calls of so many functions (Kept runs written once)
  size_t shared_runs = 0, shared_blocks = 0, shared_functions = 0;
  std::vector<std::string> notes;  // what could not be reproduced exactly (once per kind)
  // The completion check (docs/generate.md): whether the skeleton runs to
  // its end on every rank, how (one line), what was changed to make it so,
  // and a warning where it relies on more MPI buffering than every MPI has.
  bool complete = false;
  std::string completion;
  std::vector<std::string> repairs;
  std::string completion_warning;
};

// Throws TraceError for programs it cannot turn into a skeleton (no calls,
// kernel calibration missing or of another kernel version), and
// std::runtime_error (one line naming rank, call, call site and loop) for
// one that cannot be made to complete (unless GenerateOptions::force).
Skeleton generate(const FoldedProgram& p, const GenerateOptions& opt);

}  // namespace skt::gen
