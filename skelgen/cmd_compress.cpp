// skelgen compress: fold a merged trace (or, for tests and benchmarks, a
// plain symbol string) into nested loops.
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "commands.h"
#include "skel/compress.h"
#include "skel/fold.h"
#include <sys/stat.h>

namespace skelgen {
namespace {

// Whitespace-separated non-negative integers; a clear error otherwise.
std::vector<int32_t> read_symbols(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open: " + std::strerror(errno));
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string text = ss.str();
  std::vector<int32_t> out;
  size_t i = 0, line = 1;
  while (i < text.size()) {
    char c = text[i];
    if (c == '\n') ++line;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < text.size() && !std::isspace(static_cast<unsigned char>(text[j]))) ++j;
    std::string tok = text.substr(i, j - i);
    bool digits = !tok.empty() && tok.find_first_not_of("0123456789") == std::string::npos;
    if (!digits)
      throw std::runtime_error(path + ":" + std::to_string(line) + ": '" + tok.substr(0, 20) +
                               "' is not a non-negative integer");
    if (tok.size() > 10 || std::stoll(tok) > INT32_MAX)
      throw std::runtime_error(path + ":" + std::to_string(line) + ": symbol " + tok.substr(0, 20) +
                               " is too large (at most 2147483647)");
    out.push_back(static_cast<int32_t>(std::stoll(tok)));
    i = j;
  }
  if (out.empty()) throw std::runtime_error(path + ": no symbols (empty input)");
  return out;
}

}  // namespace

void setup_compress(CLI::App& app, CompressOptions& opt) {
  app.description(
      "Fold a merged trace into nested loops (tandem repeats found in O(n log n) with a suffix array), keeping\n"
      "each position's computation and call time per rank.\n"
      "  skelgen compress MERGED.skm [-o FILE.skf] [--verify]\n"
      "  skelgen compress --symbols FILE   FILE holds whitespace-separated non-negative integers; prints the\n"
      "                                    folded form, e.g. '( 1 2 3 )^3 1', and 'length L' (symbols written)");
  app.add_option("merged", opt.input, "Merged trace (skelgen merge)");
  app.add_option("-o,--output", opt.output, "Folded program file (default: MERGED with .skf)");
  app.add_option("--band", opt.band, "Counts within this relative band may share a symbol (0 = exact)")
      ->check(CLI::Range(0.0, 10.0));
  app.add_flag("--join-call-sites", opt.join_callsites,
               "Calls of one function from different call sites may share a symbol; their peers, tags and counts are "
               "kept exactly per instance (shorter programs, e.g. NPB BT; docs/compress.md)");
  app.add_flag("--verify", opt.verify,
               "Check that the program expands to the merged trace's calls and keeps every rank's total "
               "computation and communication time within 0.1 %");
  app.add_option("--symbols", opt.symbols, "Fold a plain symbol string instead of a merged trace")
      ->check(CLI::ExistingFile);
  app.add_option("--threads", opt.threads,
                 "Threads for the fold (0 = one per core, at most 4, for traces of 65,536 calls or more). The "
                 "program is the same whatever the number")
      ->check(CLI::Range(0, 64));
  app.add_flag("-q,--quiet", opt.quiet, "No summary, progress or timing");
  app.add_flag("--json", opt.json,
               "Print the summary as one JSON object (symbols, folded_length, main_loop_body, main_loop_count, "
               "fold_s, ...; docs/compress.md)");
}

static int run_compress_merged(const CompressOptions& opt) {
  using clock = std::chrono::steady_clock;
  auto t0 = clock::now();
  skt::MergedTrace m = skt::read_merged(opt.input);
  auto t1 = clock::now();
  skt::fold::CompressOptions co;
  co.count_band = opt.band;
  co.join_callsites = opt.join_callsites;
  co.threads = opt.threads;
  if (!opt.quiet && m.events.size() >= 1000000)
    co.progress = [](const std::string& s) { std::fprintf(stderr, "skelgen compress: %s\n", s.c_str()); };
  skt::FoldedProgram p = skt::fold::compress(m, co);
  auto t2 = clock::now();
  std::string out = opt.output;
  if (out.empty()) {
    out = opt.input;
    if (out.size() > 4 && out.compare(out.size() - 4, 4, ".skm") == 0) out.resize(out.size() - 4);
    out += ".skf";
  }
  skt::write_folded(out, p);
  auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
  size_t loops = 0;
  for (const auto& n : p.nodes) loops += n.is_loop();
  const skt::FoldedProgram::LoopSummary main = p.main_loop();
  struct stat sb {};
  stat(out.c_str(), &sb);
  if (!opt.quiet && !opt.json) {
    std::string form = p.to_string();
    if (form.size() > 300) form = form.substr(0, 300) + " ...";
    std::printf("folded:  %s -> %s\n", opt.input.c_str(), out.c_str());
    std::printf("calls:   %zu merged events, %zu symbols, folded length %llu, %zu loops\n", m.events.size(),
                p.symbols.events.size(), static_cast<unsigned long long>(p.length()), loops);
    if (main.found)
      std::printf("main:    (%llu)^%llu, %.1f %% of the calls\n", static_cast<unsigned long long>(main.body_length),
                  static_cast<unsigned long long>(main.count), 100.0 * main.covered / std::max<size_t>(1, m.events.size()));
    std::printf("program: %s\n", form.c_str());
    for (const skt::FoldedProgram& t : p.threads)
      std::printf("thread:  %u, %llu merged events folded to length %llu\n", t.thread,
                  static_cast<unsigned long long>(t.merged_events), static_cast<unsigned long long>(t.length()));
    std::printf("time:    %.3f s (read %.3f, fold %.3f); %lld bytes\n", secs(t0, clock::now()), secs(t0, t1),
                secs(t1, t2), static_cast<long long>(sb.st_size));
  }
  if (opt.verify) {
    auto problems = skt::fold::verify(skt::read_folded(out), m);
    if (!problems.empty()) {
      for (const auto& pr : problems) std::fprintf(stderr, "skelgen compress: verify: %s\n", pr.c_str());
      std::fprintf(stderr, "skelgen: error: %s does not reproduce the merged trace\n", out.c_str());
      return 1;
    }
    if (!opt.quiet && !opt.json)
      std::printf("verify:  expands to every merged call; each rank's times kept within 0.1%%\n");
  }
  if (opt.json) {
    nlohmann::json j = {{"input", opt.input},
                        {"output", out},
                        {"merged_events", m.events.size()},
                        {"symbols", p.symbols.events.size()},
                        {"folded_length", p.length()},
                        {"loops", loops},
                        {"compression_ratio", static_cast<double>(m.events.size()) / std::max<uint64_t>(1, p.length())},
                        {"main_loop_body", main.found ? nlohmann::json(main.body_length) : nlohmann::json()},
                        {"main_loop_count", main.found ? nlohmann::json(main.count) : nlohmann::json()},
                        {"main_loop_covered", main.covered},
                        {"read_s", secs(t0, t1)},
                        {"fold_s", secs(t1, t2)},
                        {"bytes", static_cast<long long>(sb.st_size)},
                        {"verified", opt.verify},
                        {"call_sites_joined", p.callsites_joined},
                        {"program", p.to_string()}};
    std::printf("%s\n", j.dump().c_str());
  }
  return 0;
}

int run_compress(const CompressOptions& opt) {
  if (opt.symbols.empty() && opt.input.empty()) throw std::runtime_error("give a merged trace or --symbols FILE");
  if (opt.symbols.empty()) return run_compress_merged(opt);
  auto t0 = std::chrono::steady_clock::now();
  std::vector<int32_t> s = read_symbols(opt.symbols);
  auto t1 = std::chrono::steady_clock::now();
  auto progress = [&](int pass, size_t left) {
    if (!opt.quiet && s.size() >= 1000000)
      std::fprintf(stderr, "skelgen compress: pass %d: %zu items left\n", pass, left);
  };
  skt::fold::Folded f = skt::fold::fold(s, progress);
  auto t2 = std::chrono::steady_clock::now();
  std::string line = skt::fold::to_string(f);
  std::fwrite(line.data(), 1, line.size(), stdout);
  std::printf("\nlength %llu\n", static_cast<unsigned long long>(skt::fold::folded_length(f)));
  if (!opt.quiet && s.size() >= 1000000)
    std::fprintf(stderr, "skelgen compress: %zu symbols, read %.3f s, fold %.3f s\n", s.size(),
                 std::chrono::duration<double>(t1 - t0).count(), std::chrono::duration<double>(t2 - t1).count());
  return 0;
}

}  // namespace skelgen
