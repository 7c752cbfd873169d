// Partial traces made from a complete one, for tests/check_partial.sh: the
// trace of a real run, loaded once, then cut as if ranks had died there
// (every rank alone at CUTS points spread over its calls, and all ranks at
// once at CUTS points), each cut merged, folded and generated as skelgen
// generate --allow-partial does. Each skeleton is written to
// OUTDIR/cut-NNN.c; one line per cut says where it was cut and what the
// generator did (its note, or why it refused).
//
//   partial_cuts TRACE_DIR OUTDIR CUTS K
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <fstream>
#include <string>
#include <vector>

#include "skel/generate.h"
#include "skel/merge.h"
#include "skel/pipeline.h"

namespace {

using namespace skt;

// The loaded trace with rank r's calls cut to its first `keep[r]` (all ranks where keep[r] >= its calls).
// Its other threads' calls (MPI_THREAD_MULTIPLE traces) are cut at the same share of theirs.
merge::Loaded cut(const merge::Loaded& full, const std::vector<size_t>& keep) {
  merge::Loaded l = full;
  for (size_t r = 0; r < l.ranks.size(); ++r) {
    auto& events = l.ranks[r].events;
    if (keep[r] >= events.size()) continue;
    const double share = static_cast<double>(keep[r]) / static_cast<double>(events.size());
    events.resize(keep[r]);
    l.tables.ranks[r].events = keep[r];
    l.tables.ranks[r].end = TraceEnd::kTruncated;
    for (merge::LoadedThread& t : l.threads) {
      auto& own = t.ranks[r].events;
      own.resize(static_cast<size_t>(share * static_cast<double>(own.size())));
    }
  }
  return l;
}

// Writes the skeleton of one cut; returns false where the generator refused it.
bool generate_cut(const merge::Loaded& loaded, const std::string& path, uint32_t K, std::string& said) {
  merge::Options mo;
  mo.allow_partial = true;
  MergedTrace m = merge::merge(loaded, mo);
  gen::InputOptions in;
  in.allow_partial = true;
  in.say = [&](const std::string& s) { if (s.rfind("note: ", 0) == 0) said += s.substr(6); };
  FoldedProgram p = gen::program_from_merged(std::move(m), in);
  if (p.nodes.empty()) {
    said += (said.empty() ? "" : "; ") + std::string("nothing left to run");
    return true;
  }
  gen::GenerateOptions go;
  go.scale = K;
  go.name = path;
  try {
    gen::Skeleton s = gen::generate(p, go);
    std::ofstream(path) << s.code;
    for (const std::string& r : s.repairs) said += "; repaired: " + r;
    return true;
  } catch (const std::exception& e) {
    said += std::string("; REFUSED: ") + e.what();
    return false;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: partial_cuts TRACE_DIR OUTDIR CUTS K\n");
    return 2;
  }
  const std::string out = argv[2];
  const size_t cuts = std::strtoul(argv[3], nullptr, 10);
  const uint32_t K = static_cast<uint32_t>(std::strtoul(argv[4], nullptr, 10));
  merge::Options mo;
  const merge::Loaded full = merge::load(argv[1], mo);
  const size_t P = full.ranks.size();
  std::vector<std::vector<size_t>> plans;  // per cut: calls kept per rank
  for (size_t r = 0; r <= P; ++r)          // r == P: all ranks at once
    for (size_t j = 1; j <= cuts; ++j) {
      std::vector<size_t> keep(P, SIZE_MAX);
      for (size_t q = 0; q < P; ++q)
        if (q == r || r == P) keep[q] = full.ranks[q].events.size() * j / (cuts + 1) + q * (r == P);
      plans.push_back(keep);
    }
  int refused = 0;
  for (size_t i = 0; i < plans.size(); ++i) {
    char name[64];
    std::snprintf(name, sizeof name, "cut-%03zu", i);
    std::string where;
    for (size_t q = 0; q < P; ++q)
      if (plans[i][q] != SIZE_MAX) where += " rank " + std::to_string(q) + ": " + std::to_string(plans[i][q]);
    std::string said;
    bool ok = generate_cut(cut(full, plans[i]), out + "/" + name + ".c", K, said);
    refused += !ok;
    std::printf("%s kept%s of its calls: %s\n", name, where.c_str(), said.c_str());
  }
  std::printf("%zu cuts, %d refused\n", plans.size(), refused);
  return 0;
}
