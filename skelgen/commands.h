// The skelgen subcommands. Each has an options struct filled by CLI11 in
// setup_x() and a run_x() that does the work and returns the exit code.
#pragma once

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "skel/predict.h"

namespace skelgen {

struct TraceOptions {
  std::string out_dir;
  std::string mpi;  // "", "mpich" or "openmpi"
  int stack_depth = 1;
  int runs = 0;  // --runs N: N runs into out_dir/run-1 ... run-N (0: one run into out_dir itself)
  bool force = false;
  bool quiet = false;
  bool merge_in_job = false;     // --merge-in-job: the ranks merge at MPI_Finalize into out_dir.skm
  bool keep_rank_files = false;  // --keep-rank-files: and the rank files stay in out_dir too
  bool compare_untraced = false; // --compare-untraced: an untraced timed run after each traced one
  std::vector<std::string> command;
};
void setup_trace(CLI::App& app, TraceOptions& opt);
int run_trace(const TraceOptions& opt);

struct TimeOptions {
  int repeat = 3;
  std::string mpi;
  std::vector<std::string> command;
};
void setup_time(CLI::App& app, TimeOptions& opt);
int run_time(const TimeOptions& opt);

struct DumpOptions {
  std::string input;
  int rank = -1;
  std::string format = "text";
  bool info = false;
};
void setup_dump(CLI::App& app, DumpOptions& opt);
int run_dump(const DumpOptions& opt);

struct MergeOptions {
  std::vector<std::string> inputs;  // one trace directory, or several runs of one program
  std::string output;
  uint32_t lookahead = 64;
  std::string order = "auto";  // skt::merge::Order by name (--align: "align")
  int64_t align_work = -1;     // --align-work (-1: the Options' own bounds)
  bool allow_partial = false;
  bool keep_completions = false;  // skt::merge::Options::coalesce_completions off
  bool verify = false;
  bool quiet = false;
  bool json = false;
};
void setup_merge(CLI::App& app, MergeOptions& opt);
int run_merge(const MergeOptions& opt);

struct CompressOptions {
  std::string input, output, symbols;
  double band = 0.25;
  bool join_callsites = false;
  unsigned threads = 0;  // 0: skt::fold::CompressOptions's default
  bool verify = false;
  bool quiet = false;
  bool json = false;
};
void setup_compress(CLI::App& app, CompressOptions& opt);
int run_compress(const CompressOptions& opt);

struct GenerateOptions {
  std::string input, output;
  uint32_t scale = 10;
  double min_share = 0.01;
  bool join_callsites = false;
  std::string merge_order = "auto";  // as MergeOptions::order
  bool allow_partial = false;
  bool keep_completions = false;     // as MergeOptions::keep_completions
  double watchdog_s = 60;
  bool force = false;
  bool no_farms = false;
  bool expand_runs = false;
  bool build = false;
  std::string mpi, exe;
  bool quiet = false;
};
void setup_generate(CLI::App& app, GenerateOptions& opt);
int run_generate(const GenerateOptions& opt);

struct BuildOptions {
  std::string input, output, mpi, cflags;
  bool quiet = false;
  // Write the build record beside the executable (without --cflags), so that
  // skelgen predict reuses it (docs/predict.md, "Reusing the executable").
  bool record = true;
};
void setup_build(CLI::App& app, BuildOptions& opt);
int run_build(const BuildOptions& opt);

// Where a skeleton runs: the options shared by predict and place (--confirm),
// bound straight into a target; kind "" = implied by the options given.
struct TargetOptions {
  std::string kind;
  skt::predict::Target target;
};

// How a skeleton is built and run on a target (predict, and place per candidate).
struct RunSettings {
  std::string skeleton, mpi;
  std::string who = "predict";  // progress: "skelgen WHO: [LABEL: ]run i/R: ..."
  int np = 0, reps = 3;         // np 0: the traced world size
  int max_reps = 0;             // more runs while they disagree (skt::predict::PredictOptions::max_reps)
  int warmup = 1;               // uncounted runs first (none under SimGrid)
  double timeout_s = 600;
  bool quiet = false, label_progress = false;
  // progress: the counted runs are numbered from first_run, of all_runs (0: reps)
  int first_run = 1, all_runs = 0;
  bool quiet_build = false;     // no line about (re)using or building the executable
};

struct PredictOptions {
  RunSettings run;
  bool json = false;
  TargetOptions target;
};
void setup_predict(CLI::App& app, PredictOptions& opt);
int run_predict(const PredictOptions& opt);

struct PlaceOptions {
  PlaceOptions() {
    run.who = "place";
    run.label_progress = true;  // several targets: say which one a run is on
  }
  RunSettings run;
  std::string candidates, inventory;
  double comm_share = -1;     // overrides the skeleton's communication share
  double memory_weight = 0;
  bool confirm = false;
  bool json = false;
  TargetOptions target;       // --confirm: where the chosen node sets run
};
void setup_place(CLI::App& app, PlaceOptions& opt);
int run_place(const PlaceOptions& opt);

// `skelgen trace`'s exit status when the application exited 0 but a rank
// file is unreadable or incomplete (docs/tracer.md, "Safety").
inline constexpr int kExitTraceIncomplete = 3;

// Reads every rank file of dir. Prints (unless quiet) what it holds: ranks,
// events per rank, bytes on disk, and one line per rank whose trace is
// incomplete, e.g. "trace incomplete: rank 1 stopped after 57 events (no
// space left on device)", or why the directory is unreadable. Returns
// whether every rank's trace is readable and complete, and in traced_s
// (where given) the slowest rank's time from MPI_Init's return to
// MPI_Finalize on the trace's clock (the tracer's own work taken out; 0
// where no rank has both). Never throws.
bool check_trace(const std::string& dir, bool quiet, double* traced_s = nullptr);

}  // namespace skelgen
