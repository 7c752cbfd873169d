// skelgen merge: per-rank traces -> one merged program trace.
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "commands.h"
#include "skel/merge.h"
#include "skel/pipeline.h"

namespace skelgen {

void setup_merge(CLI::App& app, MergeOptions& opt) {
  app.description(
      "Merge the per-rank traces of one run into one program trace: calls that match across ranks become one\n"
      "event with each rank's parameters (described as constants, rank-relative peers, linear rules or tables),\n"
      "order differences between ranks are normalised first, and each rank keeps its own times.\n"
      "Several runs of one program (skelgen trace --runs N -o DIR: give DIR; or several trace directories) are\n"
      "merged as one whose times are the medians over the runs, call by call (docs/merge.md, \"Several runs\").\n"
      "Example: skelgen merge ring.trace -o ring.skm --verify");
  app.add_option("trace", opt.inputs,
                 "Trace directory (rank-*.skt files of one run, or run-1 ... run-N of several); or several trace\n"
                 "directories, runs of one program")
      ->required()
      ->expected(1, 1000);
  app.add_option("-o,--output", opt.output, "Merged trace file (default: TRACE.skm)");
  app.add_option("-m,--lookahead", opt.lookahead, "Calls looked at ahead in each rank where ranks differ")
      ->check(CLI::Range(1, 100000));
  auto* order =
      app.add_option("--order", opt.order,
                     "How the ranks' calls are ordered into merged events:\n"
                     "  walk:  the look-ahead walk: where all ranks are at the same call it is one event; where they\n"
                     "         differ, the call no other rank makes soon goes first (pairs calls by time; keeps a\n"
                     "         pipeline's loop closed, NPB LU)\n"
                     "  align: an alignment of the ranks' call sequences, each group of alike ranks aligned to the\n"
                     "         others by their longest common runs: calls that only some ranks make stand apart\n"
                     "         wherever they fall in time, and the runs around them line up (NPB MG at 16 ranks,\n"
                     "         whose rank halves make different numbers of exchanges). Where the ranks are too\n"
                     "         unlike to align in reasonable time, the walk, with a note\n"
                     "  nth:   by each call's count: a rank's n-th call of a kind (call site, tag, and for a wait the\n"
                     "         call that made its request) is one event with the other ranks' n-th, however far\n"
                     "         apart in time (a pipeline's planes, NPB LU on 8 or more ranks); no timing in it\n"
                     "  auto:  all three; where they differ, the one whose fold (per call site) scores lowest:\n"
                     "         its length plus the messages that cross its top-level loops' iterations (a loop\n"
                     "         they cross is never cut); the first of walk, align, nth on a tie (docs/merge.md)")
          ->check(CLI::IsMember({"auto", "walk", "align", "nth"}))
          ->capture_default_str();
  app.add_flag_callback("--align", [&opt] { opt.order = "align"; }, "The same as --order align")->excludes(order);
  app.add_option("--align-work", opt.align_work,
                 "The alignment gives up (and the walk merges) where aligning a group of ranks would read its\n"
                 "calls and the columns so far more than this many times over (default: 64 with --order align,\n"
                 "16 when auto tries it)")
      ->check(CLI::Range(0, 1000000));
  app.add_flag("--allow-partial", opt.allow_partial,
               "Merge ranks whose trace ends early (the process died or called MPI_Abort)");
  app.add_flag("--keep-completions", opt.keep_completions,
               "Keep every MPI_Waitany, MPI_Waitsome and MPI_Test* call as traced. By default a rank's consecutive\n"
               "completion calls that complete its requests one at a time or by polling (their number and order\n"
               "change from run to run) become one MPI_Waitall of what they completed, their computation before\n"
               "it, so that the time steps around them fold (docs/merge.md, \"Completions by polling\"); other\n"
               "tests that found nothing and waits of MPI_REQUEST_NULL are left out, their time added to the next\n"
               "call's computation (\"Polls that found nothing\")");
  app.add_flag("--verify", opt.verify,
               "Read the merged file back and check that every rank's calls, parameters and times come out exactly");
  app.add_flag("-q,--quiet", opt.quiet, "Print nothing but errors");
  app.add_flag("--json", opt.json,
               "Print the summary as one JSON object (ranks, calls_per_rank_min/max, merged_events, merge_s, ...)");
}

// Per thread other than the first (MPI_THREAD_MULTIPLE traces): its number,
// merged events, and where it ran among the first thread's.
static nlohmann::json threads_json(const skt::MergedTrace& m) {
  nlohmann::json j = nlohmann::json::array();
  for (const skt::MergedTrace& t : m.threads)
    j.push_back({{"thread", t.thread}, {"merged_events", t.events.size()}, {"fork_after", t.fork_after},
                 {"join_before", t.join_before}});
  return j;
}

// Several runs (docs/merge.md, "Several runs"): how they disagreed; null for one.
static nlohmann::json runs_json(const skt::merge::RunsReport& r) {
  if (r.dirs.size() < 2) return nullptr;
  return {{"dirs", r.dirs},
          {"total_s", r.total_s},
          {"median_s", r.median_s},
          {"spread", r.spread},
          {"medians", r.medians},
          {"used", r.dirs[r.used]},
          {"mismatch", r.medians ? nlohmann::json(nullptr) : nlohmann::json(r.mismatch)},
          {"mismatch_run", r.medians ? nlohmann::json(nullptr) : nlohmann::json(r.dirs[r.mismatch_run])},
          {"positions", r.positions},
          {"varying", r.varying},
          {"varying_threshold", skt::merge::kRunsVary},
          {"varying_time_share", r.varying_time_share},
          {"other_matches", r.other_matches}};
}

int run_merge(const MergeOptions& opt) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  std::vector<std::string> inputs = opt.inputs;
  for (std::string& in : inputs)
    while (in.size() > 1 && in.back() == '/') in.pop_back();
  const std::string input = inputs[0];
  if (inputs.size() > 1 && opt.output.empty())
    throw std::runtime_error("several trace directories: say where their merged trace goes (-o FILE)");
  std::string out = opt.output.empty() ? input + ".skm" : opt.output;
  skt::merge::Options mo;
  mo.lookahead = opt.lookahead;
  mo.allow_partial = opt.allow_partial;
  mo.coalesce_completions = !opt.keep_completions;
  if (!opt.quiet) mo.progress = [](const std::string& s) { std::fprintf(stderr, "skelgen merge: %s\n", s.c_str()); };
  if (opt.align_work >= 0) mo.align_work = mo.auto_align_work = static_cast<size_t>(opt.align_work);
  skt::gen::set_merge_order(mo, opt.order);  // after the progress: the judge reports through it
  skt::merge::Loaded loaded = inputs.size() > 1 ? skt::merge::load_runs(inputs, mo) : skt::merge::load(input, mo);
  const skt::merge::RunsReport& runs = loaded.runs;
  if (opt.quiet && runs.dirs.size() > 1 && !runs.medians)  // said through the progress otherwise
    std::fprintf(stderr, "skelgen merge: %s\n", skt::merge::describe(runs).c_str());
  std::vector<std::string> spawned = skt::TraceDir::spawned_worlds(input);
  if (!spawned.empty() && !opt.quiet)
    std::fprintf(stderr,
                 "skelgen merge: note: %s also holds %zu world(s) started by MPI_Comm_spawn (%s%s); merged the "
                 "first world only (merge another with skelgen merge %s/%s)\n",
                 input.c_str(), spawned.size(), spawned[0].c_str(), spawned.size() > 1 ? ", ..." : "", input.c_str(),
                 spawned[0].c_str());
  auto t1 = clock::now();
  skt::merge::Ordered ordered;
  skt::MergedTrace m = skt::merge::merge(loaded, mo, &ordered);
  auto t2 = clock::now();
  skt::write_merged(out, m);
  auto t3 = clock::now();
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };

  uint64_t total = 0, lo = UINT64_MAX, hi = 0;  // every thread's calls
  for (size_t r = 0; r < m.ranks.size(); ++r) {
    uint64_t calls = m.ranks[r].events;
    for (const skt::MergedTrace& t : m.threads) calls += t.ranks[r].events;
    total += calls;
    lo = std::min<uint64_t>(lo, calls);
    hi = std::max<uint64_t>(hi, calls);
  }
  size_t partial = 0, tables = 0, described = 0;
  for (const auto& e : m.events) {
    partial += e.ranks.size() != m.world_size;
    for (const auto& d : e.params) {
      described += d.kind != skt::ParamKind::kAbsent;
      tables += d.kind == skt::ParamKind::kTable;
    }
  }
  struct stat sb {};
  stat(out.c_str(), &sb);
  if (!opt.quiet && !opt.json) {
    std::string from = input;
    for (size_t k = 1; k < inputs.size(); ++k) from += ", " + inputs[k];
    std::printf("merged:  %s -> %s\n", from.c_str(), out.c_str());
    if (runs.dirs.size() > 1) std::printf("runs:    %s\n", skt::merge::describe(runs).c_str());
    std::printf("ranks:   %u, %llu calls in all, %llu..%llu per rank\n", m.world_size,
                static_cast<unsigned long long>(total), static_cast<unsigned long long>(lo),
                static_cast<unsigned long long>(hi));
    std::printf("events:  %zu merged events (%zu with only some ranks), %zu distinct calls\n", m.events.size(),
                partial, m.identities.size());
    std::printf("order:   %s\n", skt::merge::describe(ordered, skt::gen::kMergeScore).c_str());
    for (const skt::MergedTrace& t : m.threads)
      std::printf("thread:  %u, %zu merged events of its own (MPI_THREAD_MULTIPLE)\n", t.thread, t.events.size());
    std::printf("params:  %zu described, %zu by per-rank table\n", described, tables);
    std::printf("time:    %.3f s (read %.3f, merge %.3f, write %.3f); %lld bytes\n", secs(t0, t3), secs(t0, t1),
                secs(t1, t2), secs(t2, t3), static_cast<long long>(sb.st_size));
  }
  for (const auto& r : m.ranks)
    if (r.end != skt::TraceEnd::kFinalized && !opt.quiet)
      std::fprintf(stderr, "skelgen merge: note: a rank's trace is %s; merged what it holds\n",
                   skt::trace_end_name(r.end));
  if (opt.verify) {
    skt::MergedTrace back = skt::read_merged(out);
    auto problems = skt::merge::verify(back, loaded);
    if (!problems.empty()) {
      for (const auto& p : problems) std::fprintf(stderr, "skelgen merge: verify: %s\n", p.c_str());
      std::fprintf(stderr, "skelgen: error: %s does not rebuild the ranks' calls exactly\n", out.c_str());
      return 1;
    }
    if (!opt.quiet && !opt.json) std::printf("verify:  every rank's calls, parameters and times rebuilt exactly\n");
  }
  if (opt.json) {
    auto or_null = [](uint64_t v) { return v ? nlohmann::json(v) : nlohmann::json(nullptr); };  // 0: not done
    nlohmann::json j = {{"input", input},
                        {"output", out},
                        {"ranks", m.world_size},
                        {"calls", total},
                        {"calls_per_rank_min", lo},
                        {"calls_per_rank_max", hi},
                        {"merged_events", m.events.size()},
                        {"partial_events", partial},
                        {"distinct_calls", m.identities.size()},
                        {"completions_made_one", loaded.coalesced_completions.made_one},
                        {"idle_calls_left_out", loaded.coalesced_completions.idle_calls},
                        {"spun_probes_left_out", loaded.coalesced_completions.spun_probes},
                        {"order_asked", opt.order},
                        {"order", skt::merge::order_name(ordered.used)},
                        {"walk_events", or_null(ordered.walk_events)},
                        {"align_events", or_null(ordered.align_events)},
                        {"nth_events", or_null(ordered.nth_events)},
                        {"align_gave_up", ordered.align_gave_up},
                        {"walk_score", or_null(ordered.walk_judged)},
                        {"align_score", or_null(ordered.align_judged)},
                        {"nth_score", or_null(ordered.nth_judged)},
                        {"params_described", described},
                        {"params_by_table", tables},
                        {"read_s", secs(t0, t1)},
                        {"merge_s", secs(t1, t2)},
                        {"write_s", secs(t2, t3)},
                        {"total_s", secs(t0, t3)},
                        {"bytes", static_cast<long long>(sb.st_size)},
                        {"threads", threads_json(m)},
                        {"runs", runs_json(runs)},
                        {"verified", opt.verify}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

}  // namespace skelgen
