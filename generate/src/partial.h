// Traces whose ranks ended early (internal to the generator): where the
// skeleton of a partial trace stops.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

#include "skel/folded.h"
#include "skel/merged.h"

namespace skt::gen {

// The program folded from the first `kept` merged events, as compress
// folds it (call sites joined or not).
using FoldPrefix = std::function<FoldedProgram(const MergedTrace&)>;

// Cuts m, in place, to the longest prefix of its merged events that every
// rank can run to its end (the completion check, check.h, with messages of
// up to 4 KiB sent eagerly, the skeleton's loops uncut), starting from the
// merged event after which the first rank to stop made no more calls. A
// rank that died leaves messages that were never received and collectives
// its partners made without it; cutting where the first rank stopped keeps
// some of these halves (merge puts a step's calls of all ranks side by
// side, not in the order they happened), so the cut steps back until the
// halves are gone from both sides: by 1, 2, 4, ... events, then halving the
// last step (about 2 log2(events dropped) checks, each a fold and a check
// of the prefix). Returns one line saying where the skeleton stops and
// what was dropped ("" when every rank finalized).
std::string cut_partial_trace(MergedTrace& m, const FoldPrefix& fold);

// Keeps the first `n` merged events and each rank's gaps and durations of
// its calls among them.
void keep_merged_prefix(MergedTrace& m, size_t n);

}  // namespace skt::gen
