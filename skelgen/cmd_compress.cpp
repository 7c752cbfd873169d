// skelgen compress: fold a merged trace (or, for tests and benchmarks, a
// plain symbol string) into nested loops.
#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include "commands.h"
#include "skel/fold.h"

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
      "Fold a trace into nested loops (tandem repeats found in O(n log n) with a suffix array).\n"
      "  skelgen compress --symbols FILE   FILE holds whitespace-separated non-negative integers; prints the\n"
      "                                    folded form, e.g. '( 1 2 3 )^3 1', and 'length L' (symbols written)");
  app.add_option("--symbols", opt.symbols, "Fold a plain symbol string instead of a merged trace")
      ->check(CLI::ExistingFile);
  app.add_flag("-q,--quiet", opt.quiet, "No progress or timing on stderr");
}

int run_compress(const CompressOptions& opt) {
  if (opt.symbols.empty()) throw std::runtime_error("give --symbols FILE");
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
