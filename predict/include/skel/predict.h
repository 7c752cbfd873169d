// Stage 5: run a skeleton where the job would run and read its prediction.
// Method and file formats: docs/predict.md.
//
// A target is where the skeleton runs: a local MPI launcher (with an
// optional hostfile), a Slurm allocation through srun, or a SimGrid platform
// through smpirun. predict() runs the skeleton there R times and reduces the
// SKELGEN_RESULT lines to median / min / max.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace skt::predict {

// What a skeleton says about itself: its "SKELGEN_META key=value ..." string,
// written by skelgen generate into the source and kept in the executable.
struct SkeletonInfo {
  int ranks = 0;                  // world size it was generated for (and must run with)
  unsigned scale = 1;             // K
  std::string traced_mpi;         // "mpich", "openmpi" or "unknown"
  std::string built_with;         // executable: "mpich", "openmpi", "simgrid", "other"; source: ""
  double traced_s = 0;            // application time in the trace (slowest rank)
  double comm_s = 0, comp_s = 0;  // per-rank MPI time and computation in the trace (mean over ranks)
  double kernel_flops_per_s = 0;  // compute-kernel speed of the traced node
  double untraced_s = 0;          // the application untraced (skelgen trace --compare-untraced; 0: not measured)
};

// Reads the SKELGEN_META string of a generated .c or a built executable.
// Throws std::runtime_error (naming the file) when there is none.
SkeletonInfo read_skeleton_info(const std::string& path);

// Whether `path` looks like C source (by its name).
bool is_source(const std::string& path);

enum class TargetKind { kLocal, kSlurm, kSimgrid };
const char* target_kind_name(TargetKind k);

struct Target {
  std::string name;                // label in tables ("" = describe())
  TargetKind kind = TargetKind::kLocal;
  // local: launcher template; {np}, {hostfile} and {exe} are replaced, the
  // executable is appended unless {exe} appears. "" = the built MPI's own
  // launcher (mpiexec.mpich / mpirun.openmpi --oversubscribe).
  std::string launcher;
  std::string hostfile;            // local and simgrid ("" = none / every host of the platform)
  std::string partition, constraint;  // slurm (-p, -C)
  std::string srun_args;           // slurm: more srun options, split at spaces
  std::string platform;            // simgrid: platform XML
  std::string simgrid_args;        // simgrid: more smpirun options, split at spaces
  std::string describe() const;    // one line: kind and settings
  std::string label() const { return name.empty() ? describe() : name; }
};

// The kind a target's settings imply when none is named: simgrid with a
// platform, slurm with a partition, constraint or srun arguments, else local.
TargetKind implied_kind(const Target& t);

// The MPI ("mpich", "openmpi" or "") a launcher command runs: its first
// word's, or where that is a wrapper (tools/emucluster run CLUSTER
// mpirun.openmpi ... --), the first later word named like an MPI launcher
// (mpirun*, mpiexec*, orterun*, prterun*).
std::string launcher_flavor(const std::vector<std::string>& words);

// The MPI a target needs the skeleton built with ("simgrid" for SimGrid; for
// the others the launcher's MPI, or `fallback` when the launcher does not say).
std::string mpi_for(const Target& t, const std::string& fallback);

// The command that runs `exe` (built with `built_with`) on `t` with np ranks.
// hostfile_dir: where a SimGrid hostfile is written when the target has none.
// Throws std::runtime_error for what cannot work (launcher or srun or smpirun
// missing, an executable built for another MPI than the launcher's).
std::vector<std::string> command_for(const Target& t, int np, const std::string& exe, const std::string& built_with,
                                     const std::string& hostfile_dir);

// Throws std::runtime_error when Slurm's controller does not answer.
void check_slurm_reachable();

struct SkeletonRun {
  double measured_s = 0, predicted_s = 0;
  unsigned scale = 0;
};
// The one SKELGEN_RESULT line of a skeleton's stdout; false if absent or malformed.
bool parse_result(const std::string& out, SkeletonRun& run);

struct Prediction {
  std::string target;             // label
  int np = 0, runs = 0;
  unsigned scale = 0;
  double predicted_s = 0, predicted_min_s = 0, predicted_max_s = 0;  // median, min, max
  double skeleton_s = 0, skeleton_min_s = 0, skeleton_max_s = 0;     // the skeleton's own runtime
  int warmup = 0;                 // runs made first and not counted
  std::vector<SkeletonRun> each;  // the counted runs, in order
  // How far the predictions spread: (max - min) / median (0 for one run).
  double spread() const { return predicted_s > 0 ? (predicted_max_s - predicted_min_s) / predicted_s : 0; }
};

// A prediction whose runs spread more than this is flagged (skelgen predict warns).
inline constexpr double kSpreadWarning = 0.05;
// A trace whose run took more than this share longer than the untraced runs
// (skelgen trace --compare-untraced) is warned of: a skeleton follows its
// trace, so its predictions are about as much too long.
inline constexpr double kTracedLongerWarning = 0.10;

// A run under this many seconds is cheap enough to repeat where the runs disagree (PredictOptions::max_reps).
inline constexpr double kCheapRunS = 2.0;

struct PredictOptions {
  int np = 0;
  int reps = 3;
  // More counted runs, one at a time up to this many, while the predictions so far spread more than
  // kSpreadWarning and the skeleton's median run is under kCheapRunS: where short runs on shared
  // cores now and then come out slow (the scheduler's first placement of the ranks), the median of
  // more runs is not one of them. At most reps: exactly reps runs.
  int max_reps = 0;
  int warmup = 1;                 // runs made first and not counted (none under SimGrid: its runs agree exactly)
  double timeout_s = 600;         // per run
  // For generated hostfiles and SimGrid's TMPDIR; empty: a private
  // temporary directory (proc::TempDir), removed when predict() returns.
  std::string work_dir;
  // progress: every run as it ends; run < 1 is a warm-up run (1 - warmup .. 0), not counted
  std::function<void(int run, const SkeletonRun&)> on_run;
  std::function<void(const std::string&)> on_note;  // what the user should know (processes left behind)
};

// Runs the built skeleton `exe` on `t` opt.warmup times, not counted (the
// first run on a node pays for loading, page faults and connection set-up
// that the application's long run pays once), then opt.reps times (and
// more, up to opt.max_reps, while they disagree and are cheap). Throws
// std::runtime_error with a one-line reason when a run fails or prints no
// result (the tail of its stderr is included).
Prediction predict(const Target& t, const std::string& exe, const SkeletonInfo& info, const PredictOptions& opt);

double median(std::vector<double> v);

// p's figures (scale, median, min and max of the predictions and of the
// skeleton's times) from its counted runs, p.each (at least one).
void summarize(Prediction& p);

// ---------------------------------------------------------------- SimGrid
// smpirun options that make a prediction repeatable: network model factors
// and collective selection pinned, computation not timed (skeletons enter it
// as flops). From ENV.md; also used for the accuracy experiment.
std::vector<std::string> simgrid_pinned_config();

// Host names of a SimGrid platform file in order (<host id> and <cluster>
// prefix/radical/suffix). Throws std::runtime_error naming the file when it
// is not a platform or names no host.
std::vector<std::string> platform_hosts(const std::string& platform_xml);

}  // namespace skt::predict
