// skelgen's choice of merge order (skelgen merge --order auto, the default;
// generate --merge-order): the ranks' calls are merged both ways, by the
// look-ahead walk and by alignment, and where the two orders differ the one
// whose fold (per call site, as skelgen compress without options) is shorter
// is kept, the walk's on a tie. Neither order is better everywhere: NPB MG at
// 16 ranks folds to 1,417 symbols merged by the walk and 401 by alignment; at
// 2 and 4 ranks the walk's folds shorter (124 against 132, 134 against 169);
// NPB LU at 2 ranks folds to 72 either way, and only the walk's keeps its
// SSOR loop closed (docs/merge.md, "Choosing the order").
#pragma once

#include <string>

#include "skel/compress.h"
#include "skel/merge.h"

namespace skelgen {

// Sets mo.order from its name ("auto", "walk", "align") and, for auto, the judge: the folded length
// (its progress through mo.progress on a million merged events or more, as skelgen compress's).
inline void set_merge_order(skt::merge::Options& mo, const std::string& name) {
  mo.order = skt::merge::order_from_name(name);
  if (mo.order != skt::merge::Order::kAuto) return;
  mo.judge = [progress = mo.progress](const skt::MergedTrace& m) {
    skt::fold::CompressOptions co;
    if (m.events.size() >= 1000000) co.progress = progress;
    return skt::fold::compress(m, co).length();
  };
}

// The name of the judge's score, for skt::merge::describe.
inline const char* kMergeScore = "folded length";

}  // namespace skelgen
