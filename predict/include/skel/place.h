// Placement: choosing where a job runs. Method and file formats: docs/predict.md.
//
// measured   — a candidates file names targets; the skeleton runs on each and
//              they are ranked by predicted runtime (skelgen place --candidates).
// model-based — an inventory of nodes; inside each network group a 0/1
//              knapsack picks whole nodes for np processes, nodes scored by CPU
//              speed and cache weighted by the application's communication /
//              computation ratio (memory optionally); the best group wins
//              (skelgen place --inventory).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skel/predict.h"

namespace skt::place {

// ---------------------------------------------------------------- candidates file
// INI-like: one [name] section per candidate, then key = value lines:
//   kind = local | slurm | simgrid   (default: simgrid if platform is set, slurm if
//                                     partition/constraint/srun_args is, else local)
//   launcher, hostfile, partition, constraint, srun_args, platform, simgrid_args
// '#' starts a comment. Relative paths are taken from the file's directory.
// Throws std::runtime_error "FILE:LINE: reason" for malformed files.
std::vector<predict::Target> read_candidates(const std::string& path);

// ---------------------------------------------------------------- inventory
struct Node {
  std::string name;
  int cores = 0;        // free cores
  double ghz = 0;       // CPU speed
  double cache_mb = 0;  // last-level cache of the node
  double memory_gb = 0; // free memory of the node
  std::string group;    // network group (nodes of one group share a fast network)
};

// Whitespace-separated table with a header naming the columns
//   name cores ghz cache_mb memory_gb group
// (any order; memory_gb may be left out), '#' comments. Throws
// std::runtime_error "FILE:LINE: reason" for malformed files.
std::vector<Node> read_inventory(const std::string& path);

struct Weights {
  double cpu = 1;     // on GHz (normalised by the inventory's fastest)
  double cache = 0;   // on cache per core (normalised by the largest)
  double memory = 0;  // on memory per core (normalised by the largest)
};
// The method's weights from the trace: computation share on CPU speed,
// communication share on cache; memory_weight is added as given.
Weights weights_from_ratio(double comm_s, double comp_s, double memory_weight);

// Score of one core of `n` (the inventory normalises each feature by its largest value).
double core_score(const Node& n, const std::vector<Node>& inventory, const Weights& w);

struct Selection {
  std::string group;
  std::vector<size_t> nodes;   // indices into the inventory, in inventory order
  int cores = 0;               // free cores of the chosen nodes (>= np)
  double value = 0;            // sum of their cores' scores
  double mean_score = 0;       // value / cores
};

// Inside one group: whole nodes whose free cores add up to at least np; of
// the reachable totals the smallest (no more cores held than needed), and at
// that total the highest value. 0/1 knapsack DP over the core total,
// O(nodes x total cores). Returns false when the group has fewer than np cores.
bool select_in_group(const std::vector<Node>& inventory, const std::string& group, int np, const Weights& w,
                     Selection& out);

// Every group's selection, best first (highest mean score; then fewer nodes;
// then name). Groups that cannot hold np processes are left out.
std::vector<Selection> select_nodes(const std::vector<Node>& inventory, int np, const Weights& w);

// The same choice by trying every subset of the group's nodes (for tests; at most 20 nodes).
bool select_in_group_brute_force(const std::vector<Node>& inventory, const std::string& group, int np,
                                 const Weights& w, Selection& out);

// Hostfile lines for a selection, np processes on the chosen nodes in order:
// "name:k" (MPICH, SimGrid) or "name slots=k" (Open MPI).
std::string hostfile_for(const std::vector<Node>& inventory, const Selection& s, int np, bool openmpi_syntax);

}  // namespace skt::place
