// Memory available to the offline tools (skel/memory.h).
#include "skel/memory.h"

#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>

namespace skt::mem {
namespace {

// One "Key: N kB" line of a /proc file, in bytes; 0 where absent.
uint64_t proc_kb(const char* path, const char* key) {
  std::FILE* f = std::fopen(path, "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  char format[64];
  std::snprintf(format, sizeof format, "%s: %%llu kB", key);
  while (std::fgets(line, sizeof line, f))
    if (std::sscanf(line, format, &kb) == 1) break;
  std::fclose(f);
  return static_cast<uint64_t>(kb) * 1024;
}

}  // namespace

uint64_t available_bytes() {
  if (const char* gb = std::getenv("SKELGEN_MEMORY_GB"); gb && *gb) {
    char* end = nullptr;
    const double v = std::strtod(gb, &end);
    if (end && *end == '\0' && v > 0) return static_cast<uint64_t>(v * 1e9);
  }
  return proc_kb("/proc/meminfo", "MemAvailable");
}

uint64_t cap_address_space() {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  return 0;
#else
  const uint64_t available = available_bytes();
  const uint64_t mapped = proc_kb("/proc/self/status", "VmSize");
  if (available == 0 || mapped == 0) return 0;
  struct rlimit now {};
  if (getrlimit(RLIMIT_AS, &now) != 0) return 0;
  const uint64_t cap = mapped + available;
  if (now.rlim_max != RLIM_INFINITY && cap > now.rlim_max) return 0;  // a lower cap is set already
  if (now.rlim_cur != RLIM_INFINITY && now.rlim_cur <= cap) return 0;
  struct rlimit lower = now;
  lower.rlim_cur = cap;
  return setrlimit(RLIMIT_AS, &lower) == 0 ? available : 0;
#endif
}

}  // namespace skt::mem
