// Fuzz target for the trace reader: any input must either read or be
// rejected with skt::TraceError, never crash, hang or leak.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <string>

#include "skel/trace.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static std::string path = "/tmp/skel-fuzz-" + std::to_string(getpid()) + ".skt";
  FILE* f = std::fopen(path.c_str(), "wb");
  if (!f) return 0;
  std::fwrite(data, 1, size, f);
  std::fclose(f);
  try {
    skt::TraceFile t(path);
    skt::Event e;
    uint64_t n = 0;
    while (t.next(e) && n < 1000000) ++n;
    (void)t.callsite_name(0);
  } catch (const skt::TraceError&) {
  }
  unlink(path.c_str());
  return 0;
}
