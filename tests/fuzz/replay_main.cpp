// Runs the fuzz target without libFuzzer: over every file of the corpus, and
// over N seeded mutations (byte flips, cuts, splices) of freshly written
// valid traces.  usage: fuzz_reader_replay CORPUS_DIR N
#include <dirent.h>

#include <cstdio>
#include <random>
#include <string>

#include "trace_fixtures.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

static void run(const std::string& bytes) {
  LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR N\n", argv[0]);
    return 2;
  }
  int files = 0;
  if (DIR* d = opendir(argv[1])) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > 4 && n.compare(n.size() - 4, 4, ".skt") == 0) {
        run(skt::testing::read_file(std::string(argv[1]) + "/" + n));
        ++files;
      }
    }
    closedir(d);
  }
  std::string dir = skt::testing::temp_dir("replay");
  std::string base = dir + "/valid.skt";
  skt::testing::write_trace(base, skt::testing::sample_header(0, 2, 1), skt::testing::random_events(400, 7), 4096,
                            skt::EndStatus::kFinalized);
  std::string valid = skt::testing::read_file(base);
  std::mt19937 rng(12345);
  long n = std::stol(argv[2]);
  for (long i = 0; i < n; ++i) {
    std::string b = valid;
    int edits = 1 + static_cast<int>(rng() % 4);
    for (int k = 0; k < edits && !b.empty(); ++k) {
      size_t pos = rng() % b.size();
      switch (rng() % 4) {
        case 0: b[pos] = static_cast<char>(rng()); break;
        case 1: b.resize(pos); break;
        case 2: b.insert(pos, b.substr(rng() % b.size(), rng() % 64)); break;
        default: b.erase(pos, rng() % 32); break;
      }
    }
    run(b);
  }
  std::printf("fuzz replay: %d corpus files, %ld mutations, no crash\n", files, n);
  return 0;
}
