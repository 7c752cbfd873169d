// The stages chained for skelgen generate, and skelgen's merge order.
#include "skel/pipeline.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#include "partial.h"
#include "skel/compress.h"

namespace skt::gen {
namespace {

void say(const InputOptions& opt, const std::string& s) {
  if (opt.say) opt.say(s);
}

// The other threads' streams of a partial trace: each cut as the first
// thread's is; a thread that started after the first thread's cut is
// dropped, one that ended after it is waited for at the end.
void cut_partial_threads(MergedTrace& m, const FoldPrefix& fold, const InputOptions& opt) {
  const int64_t kept = static_cast<int64_t>(m.events.size());
  std::vector<MergedTrace> threads;
  for (MergedTrace& t : m.threads) {
    if (t.fork_after >= kept) {
      say(opt, "note: thread " + std::to_string(t.thread) + " started after the skeleton stops: left out");
      continue;
    }
    if (t.join_before >= kept) t.join_before = -1;
    const std::string cut = cut_partial_trace(t, fold);
    if (!cut.empty()) say(opt, "note: thread " + std::to_string(t.thread) + ": " + cut);
    threads.push_back(std::move(t));
  }
  m.threads = std::move(threads);
}

FoldedProgram fold(const MergedTrace& m, const InputOptions& opt) {
  say(opt, "folding " + std::to_string(m.events.size()) + " merged events");
  fold::CompressOptions co;
  co.progress = opt.say;
  co.join_callsites = opt.join_callsites;
  return fold::compress(m, co);
}

// Whether the fold the judge made of the chosen order (judged[index]) is the
// program: the orders were judged and their folds kept (not with
// --join-call-sites), one stream (the judge folded each thread's stream
// apart), no rank ending early (a partial trace is cut first). Then it is
// not folded again.
bool judged_fold_is_final(const MergedTrace& m, const std::vector<FoldedProgram>& judged, int index) {
  if (index < 0 || static_cast<size_t>(index) >= judged.size() || !m.threads.empty()) return false;
  for (const MergedRank& r : m.ranks)
    if (r.end != TraceEnd::kFinalized) return false;
  return true;
}

}  // namespace

FoldedProgram program_from_merged(MergedTrace m, const InputOptions& opt) {
  const FoldPrefix fold_prefix = [&](const MergedTrace& prefix) {
    fold::CompressOptions co;
    co.join_callsites = opt.join_callsites;
    MergedTrace stream = prefix;
    stream.threads.clear();  // each thread's stream is cut on its own
    return fold::compress(stream, co);
  };
  const std::string cut = cut_partial_trace(m, fold_prefix);
  if (!cut.empty()) say(opt, "note: " + cut);
  cut_partial_threads(m, fold_prefix, opt);
  return fold(m, opt);
}

void set_merge_order(merge::Options& mo, const std::string& name, std::vector<FoldedProgram>* judged) {
  mo.order = merge::order_from_name(name);
  if (mo.order != merge::Order::kAuto) return;
  mo.judge = [progress = mo.progress, judged](const MergedTrace& m) {
    fold::CompressOptions co;
    if (m.events.size() >= 1000000) co.progress = progress;
    FoldedProgram p = fold::compress(m, co);
    // a loop whose iterations part messages is not cut: an order that sets one rank's calls apart from
    // its partners' (osu_bw aligned: every message crossed its loop) folds short and never shrinks
    const uint64_t score = p.length() + p.crossing_messages;
    if (judged) judged->push_back(std::move(p));
    return score;
  };
}

FoldedProgram load_program(const std::string& input, const InputOptions& opt) {
  struct stat sb {};
  if (stat(input.c_str(), &sb) != 0) throw std::runtime_error(input + ": " + std::strerror(errno));
  if (S_ISDIR(sb.st_mode)) {
    merge::Options mo;
    mo.allow_partial = opt.allow_partial;
    mo.coalesce_completions = opt.coalesce_completions;
    mo.progress = opt.say;
    // The judge's folds (one per order it judged), kept only where one can be the
    // program: folded per call site, as the judge folds; otherwise not held in memory.
    std::vector<FoldedProgram> judged;
    set_merge_order(mo, opt.merge_order, opt.join_callsites ? nullptr : &judged);  // after the progress
    say(opt, "merging the ranks of " + input);
    merge::Loaded loaded = merge::load(input, mo);
    merge::Ordered ordered;
    MergedTrace m = merge::merge(loaded, mo, &ordered);
    say(opt, "merged " + merge::describe(ordered, kMergeScore));
    if (judged_fold_is_final(m, judged, ordered.judged_index)) {
      say(opt, "folded " + std::to_string(m.events.size()) + " merged events (while choosing the order)");
      return std::move(judged[static_cast<size_t>(ordered.judged_index)]);
    }
    return program_from_merged(std::move(m), opt);
  }
  if (is_folded_file(input)) {
    FoldedProgram p = read_folded(input);
    if (opt.join_callsites && !p.callsites_joined)
      say(opt, "note: " + input + " was folded without --join-call-sites; fold it again (skelgen compress) to join them");
    for (const auto& r : p.symbols.ranks)
      if (r.end != TraceEnd::kFinalized)
        throw std::runtime_error(input + ": folded from a trace whose ranks end early; generate from the trace "
                                 "directory or the merged trace with --allow-partial");
    return p;
  }
  if (is_merged_file(input)) {
    MergedTrace m = read_merged(input);
    for (const auto& r : m.ranks)
      if (r.end != TraceEnd::kFinalized && !opt.allow_partial)
        throw std::runtime_error(input + ": some ranks' traces end early (" + trace_end_name(r.end) +
                                 "); use --allow-partial for a skeleton that stops where the first of them did");
    return program_from_merged(std::move(m), opt);
  }
  throw std::runtime_error(input + ": not a trace directory, merged trace (.skm) or folded program (.skf)");
}

}  // namespace skt::gen
