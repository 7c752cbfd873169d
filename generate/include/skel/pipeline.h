// The stages chained: whatever a user hands to skelgen generate (a trace
// directory, a merged trace, a folded program), the folded program, running
// merge and compress where needed; and skelgen's choice of merge order.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "skel/folded.h"
#include "skel/merge.h"

namespace skt::gen {

struct InputOptions {
  bool allow_partial = false;        // accept traces whose ranks end early (merge --allow-partial)
  std::string merge_order = "auto";  // when merging here: "auto", "walk", "align" or "nth"
  bool join_callsites = false;       // when folding here: compress --join-call-sites
  bool coalesce_completions = true;  // when merging here: merge::Options::coalesce_completions
  std::function<void(const std::string&)> say;  // progress and notes (may be empty)
};

// The folded program of INPUT: read (.skf), folded (.skm), or merged and
// folded (a trace directory). Throws TraceError or std::runtime_error with
// one line naming INPUT for what it cannot read or use.
FoldedProgram load_program(const std::string& input, const InputOptions& opt);

// The folded program of a merged trace. A trace whose ranks ended early
// (allowed by the caller) is first cut to the longest prefix of its merged
// events whose skeleton completes on every rank, at most up to where the
// first rank stopped; opt.say gets a note saying where and what it dropped.
FoldedProgram program_from_merged(MergedTrace m, const InputOptions& opt);

// skelgen's choice of merge order (skelgen merge --order auto, the default;
// generate --merge-order): the ranks' calls are merged three ways, by the
// look-ahead walk, by alignment and by each call's count, and where the
// orders differ the one whose fold (per call site, as skelgen compress
// without options) scores lowest, its length plus the messages that cross
// its top-level loops' iterations, is kept, the first of walk, align, nth on
// a tie. None is better everywhere: NPB MG at 16 ranks folds to 1,417 symbols
// merged by the walk and 401 by alignment; at 2 and 4 ranks the walk's folds
// shorter (124 against 132, 134 against 169); NPB LU at 2 ranks folds to 72
// either way, and only the walk's keeps its SSOR loop closed; NPB LU class S
// at 16 ranks folds to 12,306 by the walk (the alignment gives up) and to
// 184 by each call's count (docs/merge.md, "Choosing the order").
//
// Sets mo.order from its name ("auto", "walk", "align", "nth") and, for auto,
// the judge: the folded length plus FoldedProgram::crossing_messages (its
// progress through mo.progress on a million merged events or more, as
// skelgen compress's). Throws
// std::invalid_argument for another name. With JUDGED, the judge appends
// each folded program it made there, in the order it judged them (per
// stream: walk, align, nth, each where it was judged; Ordered::judged_index
// says which was kept), so that a caller who folds the chosen order the same
// way need not fold it again.
void set_merge_order(merge::Options& mo, const std::string& name, std::vector<FoldedProgram>* judged = nullptr);

// The name of the judge's score, for merge::describe.
inline constexpr const char* kMergeScore = "folded length + messages across loop iterations";

}  // namespace skt::gen
