// The skeleton's plan (internal to the generator): every decision that
// makes the skeleton differ from the folded program, taken before a line of
// C is written, so that the emitter writes it and the completion check
// (check.h) runs it from the same facts.
//
//   - which loops run fewer iterations (cuts), and how many;
//   - which runs of point-to-point calls each rank makes in an order of its
//     own (steps: safe_order.h);
//   - the request slots every request-creating call uses (requests.h);
//   - whether receives take any tag (traces of several threads per rank).
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "requests.h"
#include "skel/folded.h"
#include "skel/generate.h"

namespace skt::gen {

// Per node, per world rank: ns the application spent in the node (its
// subtree: gaps and call durations), and the program's time (the slowest
// rank's, MPI_Init's and MPI_Finalize's own time left out).
struct NodeTimes {
  std::vector<std::vector<double>> total;  // [node][rank]
  std::vector<double> rank_total;          // [rank]: the program, per rank
  double program = 0;                      // max over ranks
  double share(uint32_t node) const;       // the node's time (max over ranks) / program
};
NodeTimes measure_times(const FoldedProgram& p);

struct Plan {
  std::vector<CutLoop> cuts;   // the loops that run fewer iterations, in the order chosen
  std::vector<int32_t> cut_of; // per node: index in cuts, -1: runs as traced
  RequestSlots slots;
  // A run of point-to-point calls that each rank makes in an order of its own.
  struct Step {
    std::vector<uint32_t> nodes;               // the run, as merged
    std::vector<std::vector<uint32_t>> order;  // per world rank: the nodes it calls, in order
  };
  std::map<uint32_t, Step> steps;  // by the run's first node
  bool any_tag_receives = false;   // traces of several threads per rank: receives take MPI_ANY_TAG
  // Receives from MPI_ANY_SOURCE take the source they took in the trace
  // (where which message the MPI matches first would decide completion).
  bool pin_wildcards = false;

  // The iterations loop node n runs in the skeleton.
  uint64_t iterations(const FoldedProgram& p, uint32_t n) const {
    return cut_of[n] >= 0 ? cuts[static_cast<size_t>(cut_of[n])].iterations : p.nodes[n].count;
  }
  void uncut(uint32_t loop);  // runs it as traced
};

// A loop is cut only where this holds (and it holds the time): every
// message one of its iterations sends is received in that iteration and
// the other way round (per sender, receiver, communicator and tag), and
// every collective call in it is made by every member of its communicator
// in the same node, so that cutting it removes the same calls on every
// rank. `why` (optional) says what fails.
bool closed(const FoldedProgram& p, uint32_t loop, std::string* why = nullptr);

// The iterations after which a loop's calls come back to the same values
// (1, or the period its cycle rules span); a cut keeps whole periods.
uint64_t value_period(const FoldedProgram& p, uint32_t loop);

// The plan for p: cuts chosen (GenerateOptions::scale, min_share), request
// slots assigned, deadlock-free orders found for the runs of
// point-to-point calls. What could not be done exactly goes to `notes`.
Plan make_plan(const FoldedProgram& p, const NodeTimes& t, const GenerateOptions& opt,
               std::set<std::string>& notes);

}  // namespace skt::gen
