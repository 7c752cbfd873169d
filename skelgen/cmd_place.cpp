// skelgen place: choose where a job runs.
//   measured:    run the skeleton on every candidate of a candidates file, rank by predicted runtime;
//   model-based: pick nodes of an inventory per network group by 0/1 knapsack, rank the groups,
//                and optionally (--confirm) run the skeleton on each group's choice.
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>

#include "skel/place.h"
#include "skel/process.h"
#include "targets.h"

namespace skelgen {
namespace {

namespace sp = skt::predict;
namespace pl = skt::place;

struct Outcome {
  sp::Target target;
  bool ok = false;
  sp::Prediction p;
  std::string error;
};

// Runs the skeleton on t; a failure is kept as the outcome's error, not thrown.
Outcome try_predict(const PlaceOptions& opt, const sp::Target& t) {
  Outcome o;
  o.target = t;
  try {
    std::string exe;
    sp::SkeletonInfo info;
    o.p = run_on_target(opt.run, t, exe, info);
    o.ok = true;
  } catch (const std::exception& e) {
    o.error = e.what();
    std::fprintf(stderr, "skelgen place: %s: %s\n", t.label().c_str(), e.what());
  }
  return o;
}

// The candidates' runs interleaved: round k runs the skeleton once on each
// candidate in turn (the first round after each one's warm-up), so that a
// change in the machines' load while place runs falls on every candidate
// alike. A candidate with a failed run is failed.
std::vector<Outcome> run_rounds(const PlaceOptions& opt, const std::vector<sp::Target>& candidates) {
  std::vector<Outcome> out;
  PlaceOptions round = opt;
  round.run.reps = 1;
  round.run.all_runs = opt.run.reps;
  for (int k = 1; k <= opt.run.reps; ++k) {
    round.run.first_run = k;
    round.run.warmup = k == 1 ? opt.run.warmup : 0;
    round.run.quiet_build = k > 1;  // said in the first round
    for (size_t c = 0; c < candidates.size(); ++c) {
      if (k > 1 && !out[c].ok) continue;
      Outcome one = try_predict(round, candidates[c]);
      if (k == 1) {
        out.push_back(std::move(one));
      } else if (!one.ok) {
        out[c].ok = false, out[c].error = one.error;
      } else {
        out[c].p.each.push_back(one.p.each.front());
        sp::summarize(out[c].p);
      }
    }
  }
  return out;
}

int run_measured(const PlaceOptions& opt) {
  std::vector<sp::Target> candidates = pl::read_candidates(opt.candidates);
  std::vector<Outcome> out = run_rounds(opt, candidates);
  std::stable_sort(out.begin(), out.end(), [](const Outcome& a, const Outcome& b) {
    if (a.ok != b.ok) return a.ok;
    return a.ok && a.p.predicted_s < b.p.predicted_s;
  });
  size_t ranked = static_cast<size_t>(std::count_if(out.begin(), out.end(), [](const Outcome& o) { return o.ok; }));
  if (opt.json) {
    nlohmann::json ranking = nlohmann::json::array(), failed = nlohmann::json::array();
    for (size_t i = 0; i < out.size(); ++i) {
      if (!out[i].ok) {
        failed.push_back({{"name", out[i].target.label()}, {"target", out[i].target.describe()}, {"error", out[i].error}});
        continue;
      }
      nlohmann::json j = prediction_json(out[i].p);
      j["rank"] = i + 1;
      j["name"] = out[i].target.label();
      j["target"] = out[i].target.describe();
      ranking.push_back(j);
    }
    std::printf("%s\n", nlohmann::json{{"mode", "measured"}, {"ranking", ranking}, {"failed", failed}}.dump().c_str());
  } else {
    std::printf("%-4s %-20s %12s %12s %12s %12s  %s\n", "rank", "candidate", "predicted_s", "min_s", "max_s",
                "skeleton_s", "target");
    for (size_t i = 0; i < out.size(); ++i) {
      const Outcome& o = out[i];
      if (o.ok)
        std::printf("%-4zu %-20s %12.6f %12.6f %12.6f %12.6f  %s\n", i + 1, o.target.label().c_str(), o.p.predicted_s,
                    o.p.predicted_min_s, o.p.predicted_max_s, o.p.skeleton_s, o.target.describe().c_str());
      else
        std::printf("%-4s %-20s failed: %s\n", "-", o.target.label().c_str(), o.error.c_str());
    }
  }
  if (ranked == 0) {
    std::fprintf(stderr, "skelgen: error: the skeleton ran on none of the %zu candidates\n", out.size());
    return 1;
  }
  return ranked == out.size() ? 0 : 3;
}

std::string node_list(const std::vector<pl::Node>& inv, const pl::Selection& s, char sep) {
  std::string out;
  for (size_t i : s.nodes) out += (out.empty() ? "" : std::string(1, sep)) + inv[i].name;
  return out;
}

int run_model(const PlaceOptions& opt) {
  std::vector<pl::Node> inv = pl::read_inventory(opt.inventory);
  sp::SkeletonInfo info;  // what the skeleton says of its trace, if one is given
  if (!opt.run.skeleton.empty()) info = sp::read_skeleton_info(opt.run.skeleton);
  double comm = 0, comp = 0;
  std::string why;
  if (opt.comm_share >= 0) {
    comm = opt.comm_share;
    comp = 1 - opt.comm_share;
    why = "given (--comm-share)";
  } else if (!opt.run.skeleton.empty()) {
    comm = info.comm_s;
    comp = info.comp_s;
    char b[160];
    std::snprintf(b, sizeof b, "from the trace: %.6f s in MPI, %.6f s computing per rank", comm, comp);
    why = b;
  } else {
    throw std::runtime_error("model-based placement needs the application's communication share: give the skeleton "
                             "(generated from its trace) or --comm-share");
  }
  if (opt.run.np <= 0) throw std::runtime_error("model-based placement needs --np");
  pl::Weights w = pl::weights_from_ratio(comm, comp, opt.memory_weight);
  std::vector<pl::Selection> sel = pl::select_nodes(inv, opt.run.np, w);
  if (sel.empty()) {
    int most = 0;
    std::map<std::string, int> per_group;
    for (const pl::Node& n : inv) most = std::max(most, per_group[n.group] += n.cores);
    throw std::runtime_error("no network group of " + opt.inventory + " has " + std::to_string(opt.run.np) +
                             " free cores (the largest has " + std::to_string(most) + ")");
  }
  std::vector<Outcome> confirmed(sel.size());
  if (opt.confirm) {
    if (opt.run.skeleton.empty()) throw std::runtime_error("--confirm runs the skeleton: give SKELETON");
    sp::Target base = make_target(opt.target);
    std::string mpi = opt.run.mpi.empty() ? sp::mpi_for(base, info.traced_mpi) : opt.run.mpi;
    skt::proc::TempDir hostfiles("place");
    for (size_t g = 0; g < sel.size(); ++g) {
      sp::Target t = base;
      t.name = "group " + sel[g].group;
      if (t.kind == sp::TargetKind::kSlurm) {
        t.srun_args += " -w " + node_list(inv, sel[g], ',');
      } else {
        t.hostfile = hostfiles.file("group-" + std::to_string(g) + ".hosts");
        std::ofstream(t.hostfile) << pl::hostfile_for(inv, sel[g], opt.run.np, mpi == "openmpi" && t.kind == sp::TargetKind::kLocal);
      }
      confirmed[g] = try_predict(opt, t);
    }
  }
  if (opt.json) {
    nlohmann::json groups = nlohmann::json::array();
    for (size_t g = 0; g < sel.size(); ++g) {
      nlohmann::json nodes = nlohmann::json::array();
      for (size_t i : sel[g].nodes) nodes.push_back(inv[i].name);
      nlohmann::json j{{"rank", g + 1},           {"group", sel[g].group},
                       {"nodes", nodes},          {"cores", sel[g].cores},
                       {"score", sel[g].value},   {"mean_score", sel[g].mean_score},
                       {"hostfile", pl::hostfile_for(inv, sel[g], opt.run.np, false)}};
      if (opt.confirm) {
        if (confirmed[g].ok) j["prediction"] = prediction_json(confirmed[g].p);
        else j["error"] = confirmed[g].error;
      }
      groups.push_back(j);
    }
    std::printf("%s\n", nlohmann::json{{"mode", "model"},
                                       {"np", opt.run.np},
                                       {"weights", {{"cpu", w.cpu}, {"cache", w.cache}, {"memory", w.memory}}},
                                       {"groups", groups}}
                            .dump()
                            .c_str());
    return 0;
  }
  std::printf("communication share %.1f %% (%s)\n", 100 * w.cache / std::max(1e-300, w.cpu + w.cache), why.c_str());
  std::printf("weights: cpu %.3f, cache %.3f, memory %.3f; np = %d\n", w.cpu, w.cache, w.memory, opt.run.np);
  std::printf("%-4s %-12s %6s %6s %10s%s  %s\n", "rank", "group", "nodes", "cores", "mean_score",
              opt.confirm ? "  predicted_s" : "", "chosen nodes");
  for (size_t g = 0; g < sel.size(); ++g) {
    std::string pred;
    if (opt.confirm) {
      char b[64];
      std::snprintf(b, sizeof b, "  %11.6f", confirmed[g].p.predicted_s);
      pred = confirmed[g].ok ? b : "       failed";
    }
    std::printf("%-4zu %-12s %6zu %6d %10.4f%s  %s\n", g + 1, sel[g].group.c_str(), sel[g].nodes.size(), sel[g].cores,
                sel[g].mean_score, pred.c_str(), node_list(inv, sel[g], ' ').c_str());
  }
  if (opt.confirm) {
    const Outcome* best = nullptr;
    for (const Outcome& o : confirmed)
      if (o.ok && (!best || o.p.predicted_s < best->p.predicted_s)) best = &o;
    if (best) std::printf("fastest when run: %s (%.6f s)\n", best->target.name.c_str(), best->p.predicted_s);
  }
  return 0;
}

}  // namespace

void setup_place(CLI::App& app, PlaceOptions& opt) {
  app.description(
      "Choose where a job runs.\n"
      "Measured: run the skeleton on each candidate of a candidates file and rank them by predicted runtime:\n"
      "  skelgen place skel.c --candidates CANDIDATES.ini [--reps R] [--json]\n"
      "Model-based: for an inventory of nodes (name cores ghz cache_mb [memory_gb] group), pick whole nodes for\n"
      "np processes in each network group by 0/1 knapsack, scoring a core by CPU speed and cache weighted by\n"
      "the application's computation / communication shares from its trace (memory with --memory-weight),\n"
      "and rank the groups; --confirm then runs the skeleton on each group's choice (a hostfile per group,\n"
      "or srun -w on Slurm) with the target options below:\n"
      "  skelgen place skel.c --inventory NODES.txt --np 8 [--confirm --simgrid PLATFORM.xml]\n"
      "File formats: docs/predict.md. Exit status 3: some candidates failed (shown in the table).");
  app.add_option("skeleton", opt.run.skeleton, "Generated skeleton (.c) or built skeleton executable")
      ->check(CLI::ExistingFile);
  auto* cand = app.add_option("--candidates", opt.candidates, "Candidates file (measured placement)")
                   ->check(CLI::ExistingFile);
  auto* inv = app.add_option("--inventory", opt.inventory, "Node inventory (model-based placement)")
                  ->check(CLI::ExistingFile);
  cand->excludes(inv);
  app.add_option("-n,--np", opt.run.np, "Processes (measured: default the traced world size)")->check(CLI::Range(1, 1 << 20));
  app.add_option("-r,--reps", opt.run.reps, "Runs per candidate (default 3), in rounds over the candidates")->check(CLI::Range(1, 1000));
  app.add_option("--mpi", opt.run.mpi, "Build a .c with this MPI for local/Slurm targets")
      ->check(CLI::IsMember({"mpich", "openmpi"}));
  app.add_option("--timeout", opt.run.timeout_s, "Seconds per run before it is killed (default 600)")
      ->check(CLI::Range(1.0, 1e6));
  app.add_option("--comm-share", opt.comm_share, "Model: the application's communication share of its time "
                                                 "(default: from the skeleton's trace)")
      ->check(CLI::Range(0.0, 1.0));
  app.add_option("--memory-weight", opt.memory_weight, "Model: weight of memory per core in a core's score "
                                                       "(default 0)")
      ->check(CLI::Range(0.0, 100.0));
  app.add_flag("--confirm", opt.confirm, "Model: run the skeleton on each group's chosen nodes");
  app.add_flag("--json", opt.json, "One JSON object on stdout");
  app.add_flag("-q,--quiet", opt.run.quiet, "No progress on stderr");
  add_target_options(app, opt.target);
}

int run_place(const PlaceOptions& opt) {
  if (!opt.candidates.empty()) {
    if (opt.run.skeleton.empty()) throw std::runtime_error("measured placement runs the skeleton: give SKELETON");
    if (opt.confirm) throw std::runtime_error("--confirm is for --inventory; --candidates always runs the skeleton");
    return run_measured(opt);
  }
  if (!opt.inventory.empty()) return run_model(opt);
  throw std::runtime_error("say --candidates FILE (run on each) or --inventory FILE (choose nodes)");
}

}  // namespace skelgen
