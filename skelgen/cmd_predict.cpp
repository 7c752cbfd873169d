// skelgen predict: run a skeleton on one target (local launcher, Slurm,
// SimGrid platform) a few times and report the predicted application runtime.
#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <stdexcept>

#include "skel/build_record.h"
#include "targets.h"

namespace skelgen {

namespace sp = skt::predict;

void add_target_options(CLI::App& app, TargetOptions& o) {
  sp::Target& t = o.target;
  app.add_option("--target", o.kind, "local, slurm or simgrid (default: simgrid with --simgrid, slurm with "
                                     "--partition/--constraint/--srun-args, else local)")
      ->check(CLI::IsMember({"local", "slurm", "simgrid"}));
  app.add_option("--launcher", t.launcher,
                 "local: launcher template, {np} {hostfile} {exe} replaced, e.g. \"mpiexec.mpich -f {hostfile} -n "
                 "{np}\" (default: the skeleton's MPI's own launcher)");
  app.add_option("--hostfile", t.hostfile, "local: hostfile for {hostfile}; simgrid: smpirun hostfile (default: the "
                                           "platform's hosts in order)");
  app.add_option("--partition", t.partition, "slurm: partition (srun -p)");
  app.add_option("--constraint", t.constraint, "slurm: node features (srun -C)");
  app.add_option("--srun-args", t.srun_args, "slurm: more srun options, e.g. \"--time=10 --exclusive\"");
  app.add_option("--simgrid", t.platform, "simgrid: platform XML (e.g. predict/platforms/homogeneous16.xml)");
  app.add_option("--simgrid-args", t.simgrid_args, "simgrid: more smpirun options");
  app.add_option("--name", t.name, "Label for the target in the output");
}

skt::predict::Target make_target(const TargetOptions& o) {
  sp::Target t = o.target;
  t.kind = o.kind == "simgrid" ? sp::TargetKind::kSimgrid
           : o.kind == "slurm" ? sp::TargetKind::kSlurm
           : o.kind == "local" ? sp::TargetKind::kLocal
                               : sp::implied_kind(t);
  const std::string kind = sp::target_kind_name(t.kind);
  auto refuse = [&](bool given, const char* option) {
    if (given) throw std::runtime_error(std::string(option) + " does not apply to a " + kind + " target");
  };
  refuse(t.kind != sp::TargetKind::kLocal && !t.launcher.empty(), "--launcher");
  refuse(t.kind != sp::TargetKind::kSlurm && !(t.partition.empty() && t.constraint.empty() && t.srun_args.empty()),
         "--partition/--constraint/--srun-args");
  refuse(t.kind != sp::TargetKind::kSimgrid && !(t.platform.empty() && t.simgrid_args.empty()),
         "--simgrid/--simgrid-args");
  refuse(t.kind == sp::TargetKind::kSlurm && !t.hostfile.empty(), "--hostfile");
  if (t.kind == sp::TargetKind::kSimgrid && t.platform.empty())
    throw std::runtime_error("a simgrid target needs --simgrid PLATFORM.xml");
  return t;
}

std::string skeleton_for_target(const std::string& skeleton, const sp::Target& t, const std::string& mpi,
                                bool quiet, sp::SkeletonInfo& info) {
  info = sp::read_skeleton_info(skeleton);
  // launchers look a bare name up in PATH: hand them an absolute path
  if (!sp::is_source(skeleton)) return std::filesystem::absolute(skeleton).string();
  std::string want = mpi.empty() ? sp::mpi_for(t, info.traced_mpi) : mpi;
  if (t.kind == sp::TargetKind::kSimgrid) want = "simgrid";
  std::string exe = std::filesystem::absolute(skeleton.substr(0, skeleton.size() - 2) + "." + want).string();
  // the compiler skelgen build uses for that MPI
  const char* compiler = want == "simgrid" ? "smpicc" : want == "openmpi" ? "mpicc.openmpi" : "mpicc.mpich";
  const sp::BuildInputs inputs = sp::build_inputs(skeleton, want, compiler);
  // skelgen build's own output (the source without .c), where it was built from these bytes for this MPI
  const std::string built = std::filesystem::absolute(skeleton.substr(0, skeleton.size() - 2)).string();
  std::string why = sp::why_not_reusable(exe, inputs);  // hashes the executable: once per candidate
  if (!why.empty() && sp::why_not_reusable(built, inputs).empty()) exe = built, why.clear();
  if (why.empty()) {  // built from these bytes for this MPI with this compiler: check what it says, then run it
    try {
      sp::SkeletonInfo built = sp::read_skeleton_info(exe);
      if (built.built_with == want) {
        info = built;
        if (!quiet) std::fprintf(stderr, "skelgen: reusing %s (built for %s from this source)\n", exe.c_str(), want.c_str());
        return exe;
      }
      why = "it says it was built with " + built.built_with;
    } catch (const std::exception&) {
      why = "it is not a skeleton";
    }
  }
  if (!quiet) std::fprintf(stderr, "skelgen: building %s for %s (%s)\n", exe.c_str(), want.c_str(), why.c_str());
  // skelgen build's own way: under a temporary name beside it, then renamed into place with its build record
  BuildOptions bo;
  bo.input = skeleton;
  bo.output = exe;
  bo.mpi = want;
  bo.quiet = true;
  if (run_build(bo) != 0) throw std::runtime_error("could not build " + skeleton + " for " + want);
  info = sp::read_skeleton_info(exe);
  return exe;
}

sp::Prediction run_on_target(const RunSettings& s, const sp::Target& t, std::string& exe, sp::SkeletonInfo& info) {
  exe = skeleton_for_target(s.skeleton, t, s.mpi, s.quiet || s.quiet_build, info);
  sp::PredictOptions po;
  po.np = s.np > 0 ? s.np : info.ranks;
  po.reps = s.reps;
  po.max_reps = s.max_reps;
  po.warmup = s.warmup;
  po.timeout_s = s.timeout_s;
  std::string prefix = "skelgen " + s.who + ": " + (s.label_progress ? t.label() + ": " : "");
  if (!s.quiet) {
    // one line a run as it ends, the warm-up runs (i = 1 - W .. 0) included
    const int warmup = t.kind == sp::TargetKind::kSimgrid ? 0 : s.warmup;
    po.on_run = [&, warmup](int i, const sp::SkeletonRun& r) {
      if (i < 1)
        std::fprintf(stderr, "%swarm-up run %d/%d: skeleton %.6f s, predicted %.6f s (not counted)\n",
                     prefix.c_str(), i + warmup, warmup, r.measured_s, r.predicted_s);
      else if (i > s.reps && s.all_runs == 0)
        std::fprintf(stderr, "%srun %d (more): skeleton %.6f s, predicted %.6f s\n", prefix.c_str(), i, r.measured_s,
                     r.predicted_s);
      else
        std::fprintf(stderr, "%srun %d/%d: skeleton %.6f s, predicted %.6f s\n", prefix.c_str(), i - 1 + s.first_run,
                     s.all_runs > 0 ? s.all_runs : s.reps, r.measured_s, r.predicted_s);
    };
    po.on_note = [&](const std::string& note) { std::fprintf(stderr, "%snote: %s\n", prefix.c_str(), note.c_str()); };
  }
  return sp::predict(t, exe, info, po);
}

nlohmann::json prediction_json(const sp::Prediction& p) {
  nlohmann::json each = nlohmann::json::array();
  for (const sp::SkeletonRun& r : p.each) each.push_back({{"skeleton_s", r.measured_s}, {"predicted_s", r.predicted_s}});
  return {{"target", p.target},
          {"np", p.np},
          {"scale", p.scale},
          {"runs", p.runs},
          {"predicted_s", p.predicted_s},
          {"predicted_min_s", p.predicted_min_s},
          {"predicted_max_s", p.predicted_max_s},
          {"skeleton_s", p.skeleton_s},
          {"skeleton_min_s", p.skeleton_min_s},
          {"skeleton_max_s", p.skeleton_max_s},
          {"spread", p.spread()},
          {"warmup", p.warmup},
          {"each", each}};
}

// skelgen predict without -r: 3 runs, and more up to this many while they disagree.
constexpr int kMoreRuns = 9;

void setup_predict(CLI::App& app, PredictOptions& opt) {
  app.description(
      "Run a skeleton where the job would run, 3 times (more where they disagree; -r: REPS times), and report\n"
      "the application's predicted runtime (median, min, max of the skeletons' predicted_s) and the skeleton's\n"
      "own runtime.\n"
      "SKELETON is a generated .c (built for the target as needed: SKEL.mpich, SKEL.openmpi, SKEL.simgrid,\n"
      "reused while its record SKEL.<mpi>.skelgen-build matches the source's bytes, the MPI and the compiler)\n"
      "or an executable from skelgen build. Targets:\n"
      "  local:   skelgen predict skel.c [--launcher \"mpiexec.mpich -f {hostfile} -n {np}\" --hostfile H]\n"
      "  Slurm:   skelgen predict skel.c --target slurm [--partition P] [--constraint C]   (srun)\n"
      "  SimGrid: skelgen predict skel.c --simgrid PLATFORM.xml [--hostfile H]            (smpirun, pinned\n"
      "           network model and collectives, computation as flops: repeated runs agree exactly)\n"
      "One warm-up run first is not counted (--warmup; none under SimGrid); one line a run on stderr. A run\n"
      "past --timeout is ended with its launcher and ranks, and predict fails. Prints a summary with the\n"
      "predictions' spread ((max - min) / median; a warning on stderr above 5 %), or with --json one object:\n"
      "predicted_s (median), predicted_min_s, predicted_max_s, spread, skeleton_s, skeleton_min_s,\n"
      "skeleton_max_s, scale, np, runs, warmup, target, each (every counted run). Details: docs/predict.md");
  app.add_option("skeleton", opt.run.skeleton, "Generated skeleton (.c) or built skeleton executable")
      ->required()
      ->check(CLI::ExistingFile);
  app.add_option("-n,--np", opt.run.np, "Ranks (default: the traced world size, the only one a skeleton runs with)")
      ->check(CLI::Range(1, 1 << 20));
  opt.run.max_reps = kMoreRuns;
  app.add_option_function<int>(
         "-r,--reps", [&opt](const int& r) { opt.run.reps = r, opt.run.max_reps = 0; },
         "Runs (default: 3, and more, one at a time up to " + std::to_string(kMoreRuns) +
             ", while they spread over more than 5 % of their median and the skeleton runs under 2 s: a short "
             "run on shared cores now and then comes out slow, and the median of more runs is not one of those). "
             "Given, exactly R runs")
      ->check(CLI::Range(1, 1000));
  app.add_option("--warmup", opt.run.warmup, "Uncounted runs before them (default 1; none under SimGrid)")
      ->check(CLI::Range(0, 100));
  app.add_option("--mpi", opt.run.mpi, "Build a .c with this MPI for local/Slurm targets (default: the launcher's, "
                                   "else the traced one)")
      ->check(CLI::IsMember({"mpich", "openmpi"}));
  app.add_option("--timeout", opt.run.timeout_s, "Seconds per run before its launcher and ranks are killed and predict fails (default 600)")
      ->check(CLI::Range(1.0, 1e6));
  app.add_flag("--json", opt.json, "One JSON object on stdout");
  app.add_flag("-q,--quiet", opt.run.quiet, "Nothing on stderr but errors (no progress, build or reuse line, warning)");
  add_target_options(app, opt.target);
}

int run_predict(const PredictOptions& opt) {
  sp::Target target = make_target(opt.target);
  std::string exe;
  sp::SkeletonInfo info;
  sp::Prediction p = run_on_target(opt.run, target, exe, info);
  if (p.spread() > sp::kSpreadWarning && !opt.run.quiet)
    std::fprintf(stderr,
                 "skelgen predict: warning: the predictions spread over %.1f %% of their median (%.6f to %.6f s): "
                 "the target was not quiet; run more repetitions (-r) or on an idle node\n",
                 100 * p.spread(), p.predicted_min_s, p.predicted_max_s);
  const double traced_longer = info.untraced_s > 0 ? info.traced_s / info.untraced_s - 1 : 0;
  if (traced_longer > sp::kTracedLongerWarning && !opt.run.quiet)
    std::fprintf(stderr,
                 "skelgen predict: warning: the application ran %.0f %% longer traced (%.6f s) than untraced (%.6f s) "
                 "on the traced machine; the skeleton follows its trace, so this prediction is likely about as much "
                 "too long (docs/tracer.md, \"Traced against untraced\")\n",
                 100 * traced_longer, info.traced_s, info.untraced_s);
  if (opt.json) {
    nlohmann::json j = prediction_json(p);
    j["skeleton"] = exe;
    j["built_with"] = info.built_with;
    j["traced_s"] = info.traced_s;
    if (info.untraced_s > 0) j["untraced_s"] = info.untraced_s;
    std::printf("%s\n", j.dump().c_str());
    return 0;
  }
  std::printf("target:    %s\n", p.target.c_str());
  std::printf("skeleton:  %s (%d ranks, K = %u, built with %s)\n", exe.c_str(), p.np, p.scale, info.built_with.c_str());
  std::printf("runs:      %d (after %d warm-up run%s, not counted)\n", p.runs, p.warmup, p.warmup == 1 ? "" : "s");
  std::printf("skeleton:  %.6f s median (min %.6f, max %.6f)\n", p.skeleton_s, p.skeleton_min_s, p.skeleton_max_s);
  std::printf("predicted: %.6f s median (min %.6f, max %.6f) for the application\n", p.predicted_s,
              p.predicted_min_s, p.predicted_max_s);
  std::printf("spread:    %.1f %% (max - min over the median)%s\n", 100 * p.spread(),
              p.spread() > sp::kSpreadWarning ? ": more than 5 %, see the warning" : "");
  if (info.untraced_s > 0)
    std::printf("traced:    %.6f s, untraced %.6f s on the traced machine (skelgen trace --compare-untraced): "
                "%+.1f %%\n",
                info.traced_s, info.untraced_s, 100 * traced_longer);
  return 0;
}

}  // namespace skelgen
