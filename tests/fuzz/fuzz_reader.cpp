// Fuzz targets for the three readers: any input must either read or be
// rejected with skt::TraceError, never crash, hang, leak or allocate more
// than the input can justify. One source, built once per format:
// SKEL_FUZZ_FORMAT 0 = rank trace (.skt), 1 = merged trace (.skm),
// 2 = folded program (.skf).
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "skel/folded.h"
#include "skel/merged.h"
#include "skel/trace.h"

#ifndef SKEL_FUZZ_FORMAT
#define SKEL_FUZZ_FORMAT 0
#endif

namespace {

// The readers take a path: the input goes to a file of this process's own.
const std::string& input_path() {
  static const std::string path = [] {
    const char* t = std::getenv("TMPDIR");
    static const char* kExt[] = {".skt", ".skm", ".skf"};
    return std::string(t && *t ? t : "/tmp") + "/skel-fuzz-" + std::to_string(getpid()) + kExt[SKEL_FUZZ_FORMAT];
  }();
  return path;
}

void read_input(const std::string& path) {
#if SKEL_FUZZ_FORMAT == 0
  skt::TraceFile t(path);
  skt::Event e;
  uint64_t n = 0;
  while (t.next(e) && n < 1000000) ++n;
  (void)t.callsite_name(0);
#elif SKEL_FUZZ_FORMAT == 1
  (void)skt::read_merged(path);
#else
  (void)skt::read_folded(path);
#endif
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string& path = input_path();
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    read_input(path);
  } catch (const skt::TraceError&) {
  }
  unlink(path.c_str());
  return 0;
}
