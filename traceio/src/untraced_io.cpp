// DIR/untraced.txt: what skelgen trace --compare-untraced measured
// (docs/trace-format.md, "untraced.txt").
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

#include "skel/file_io.h"
#include "skel/trace.h"
#include "skel/value_bounds.h"

namespace skt {
namespace {

constexpr char kUntracedMark[] = "SKELGEN_UNTRACED";
constexpr size_t kMaxUntracedBytes = 4096;
constexpr uint32_t kMaxRuns = 1000;

std::string parent_of_run(const std::string& dir) {
  std::string d = dir;
  while (d.size() > 1 && d.back() == '/') d.pop_back();
  const size_t slash = d.find_last_of('/');
  const std::string base = slash == std::string::npos ? d : d.substr(slash + 1);
  if (!TraceDir::is_run_dir_name(base)) return "";
  return slash == std::string::npos ? "." : slash == 0 ? "/" : d.substr(0, slash);
}

bool exists(const std::string& path) {
  struct stat sb {};
  return lstat(path.c_str(), &sb) == 0;
}

// A positive, finite number of seconds no longer than a run can be, or -1.
double seconds_of(const std::string& v) {
  char* end = nullptr;
  errno = 0;
  const double s = std::strtod(v.c_str(), &end);
  if (errno != 0 || end == v.c_str() || *end != '\0' || !std::isfinite(s) || s <= 0 ||
      s > static_cast<double>(bounds::kMaxTimeNs) * 1e-9)
    return -1;
  return s;
}

}  // namespace

std::string TraceDir::untraced_file_name() { return "untraced.txt"; }

void TraceDir::write_untraced(const std::string& dir, const UntracedComparison& c) {
  const std::string path = dir + "/" + untraced_file_name();
  char line[160];
  const int n = std::snprintf(line, sizeof line, "%s traced_s=%.9g untraced_s=%.9g runs=%u\n", kUntracedMark,
                              c.traced_s, c.untraced_s, c.runs);
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) throw TraceError(path + ": cannot create: " + std::strerror(errno));
  const bool written = ::write(fd, line, static_cast<size_t>(n)) == n;
  const int err = errno;
  if (::close(fd) != 0 || !written) throw TraceError(path + ": cannot write: " + std::strerror(err));
}

TraceDir::UntracedComparison TraceDir::read_untraced(const std::string& dir) {
  std::string path = dir + "/" + untraced_file_name();
  if (!exists(path)) {
    const std::string parent = parent_of_run(dir);
    if (parent.empty() || !exists(parent + "/" + untraced_file_name())) return {};
    path = parent + "/" + untraced_file_name();
  }
  InFile in(path);
  if (in.size() > kMaxUntracedBytes) in.fail("longer than one line of " + std::to_string(kMaxUntracedBytes) + " bytes", 0);
  std::string text(static_cast<size_t>(in.size()), '\0');
  text.resize(in.read(text.data(), text.size()));
  std::istringstream words(text.substr(0, text.find('\n')));
  std::string mark, w;
  words >> mark;
  std::map<std::string, std::string> kv;
  while (words >> w) {
    const size_t eq = w.find('=');
    if (eq != std::string::npos) kv[w.substr(0, eq)] = w.substr(eq + 1);
  }
  UntracedComparison c;
  c.traced_s = kv.count("traced_s") ? seconds_of(kv["traced_s"]) : -1;
  c.untraced_s = kv.count("untraced_s") ? seconds_of(kv["untraced_s"]) : -1;
  const std::string& runs_text = kv["runs"];
  const unsigned long runs = runs_text.size() <= 4 && runs_text.find_first_not_of("0123456789") == std::string::npos
                                 ? std::strtoul(runs_text.c_str(), nullptr, 10)
                                 : 0;
  if (mark != kUntracedMark || c.traced_s < 0 || c.untraced_s < 0 || runs == 0 || runs > kMaxRuns)
    throw TraceError(path + ": not a SKELGEN_UNTRACED line with traced_s, untraced_s (seconds) and runs (1-" +
                     std::to_string(kMaxRuns) + ")");
  c.runs = static_cast<uint32_t>(runs);
  return c;
}

}  // namespace skt
