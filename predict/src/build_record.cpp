#include "skel/build_record.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>

#include "skel/process.h"

namespace skt::predict {
namespace {

// ---------------------------------------------------------------- SHA-256 (FIPS 180-4)
class Sha256 {
 public:
  void update(const unsigned char* p, size_t n) {
    bits_ += static_cast<uint64_t>(n) * 8;
    while (n > 0) {
      size_t take = std::min(n, sizeof block_ - used_);
      std::memcpy(block_ + used_, p, take);
      used_ += take;
      p += take;
      n -= take;
      if (used_ == sizeof block_) {
        compress(block_);
        used_ = 0;
      }
    }
  }
  std::string hex() {
    uint64_t bits = bits_;
    unsigned char pad = 0x80;
    update(&pad, 1);
    unsigned char zero = 0;
    while (used_ != 56) update(&zero, 1);
    unsigned char len[8];
    for (int i = 0; i < 8; ++i) len[i] = static_cast<unsigned char>(bits >> (56 - 8 * i));
    update(len, 8);
    char out[65];
    for (int i = 0; i < 8; ++i) std::snprintf(out + 8 * i, 9, "%08x", h_[i]);
    return std::string(out, 64);
  }

 private:
  static uint32_t rotr(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }
  void compress(const unsigned char* b) {
    static const uint32_t k[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};
    uint32_t w[64];
    for (int i = 0; i < 16; ++i)
      w[i] = static_cast<uint32_t>(b[4 * i]) << 24 | static_cast<uint32_t>(b[4 * i + 1]) << 16 |
             static_cast<uint32_t>(b[4 * i + 2]) << 8 | b[4 * i + 3];
    for (int i = 16; i < 64; ++i) {
      uint32_t s0 = rotr(w[i - 15], 7) ^ rotr(w[i - 15], 18) ^ (w[i - 15] >> 3);
      uint32_t s1 = rotr(w[i - 2], 17) ^ rotr(w[i - 2], 19) ^ (w[i - 2] >> 10);
      w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h_[0], bb = h_[1], c = h_[2], d = h_[3], e = h_[4], f = h_[5], g = h_[6], h = h_[7];
    for (int i = 0; i < 64; ++i) {
      uint32_t t1 = h + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + k[i] + w[i];
      uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & bb) ^ (a & c) ^ (bb & c));
      h = g;
      g = f;
      f = e;
      e = d + t1;
      d = c;
      c = bb;
      bb = a;
      a = t1 + t2;
    }
    h_[0] += a, h_[1] += bb, h_[2] += c, h_[3] += d, h_[4] += e, h_[5] += f, h_[6] += g, h_[7] += h;
  }

  uint32_t h_[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
  unsigned char block_[64] = {};
  size_t used_ = 0;
  uint64_t bits_ = 0;
};

// A file's bytes, opened without following a symlink; false when it
// cannot be read or is not a regular file.
bool read_regular(const std::string& path, std::string& out) {
  int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return false;
  struct stat sb {};
  bool ok = fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode);
  out.clear();
  char buf[1 << 16];
  for (ssize_t n; ok && (n = read(fd, buf, sizeof buf)) != 0;) {
    if (n < 0) {
      if (errno == EINTR) continue;
      ok = false;
      break;
    }
    out.append(buf, static_cast<size_t>(n));
  }
  close(fd);
  return ok;
}

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

std::string dir_of(const std::string& path) {
  size_t s = path.rfind('/');
  return s == std::string::npos ? "." : s == 0 ? "/" : path.substr(0, s);
}

// A regular file (not a symlink) of this user that others cannot write.
std::string why_not_ours(const std::string& path, const char* what) {
  struct stat sb {};
  if (lstat(path.c_str(), &sb) != 0) return std::string("no ") + what + (errno == ENOENT ? " yet" : ": " + std::string(std::strerror(errno)));
  if (S_ISLNK(sb.st_mode)) return std::string("the ") + what + " is a symlink";
  if (!S_ISREG(sb.st_mode)) return std::string("the ") + what + " is not a regular file";
  if (sb.st_uid != geteuid()) return std::string("the ") + what + " belongs to another user";
  if (sb.st_mode & S_IWOTH) return std::string("the ") + what + " is writable by others";
  return "";
}

mode_t current_umask() {
  mode_t m = umask(022);
  umask(m);
  return m;
}

constexpr const char* kRecordHeader = "skelgen build record 1";

std::string record_text(const BuildInputs& inputs, const std::string& exe_sha) {
  std::string s = std::string(kRecordHeader) + "\n";
  for (const auto& [k, v] : inputs) s += k + " " + v + "\n";
  return s + "executable_sha256 " + exe_sha + "\n";
}

// Writes `text` to a new temporary file in `final`'s directory and renames it
// over `final` (never writing through a symlink there).
void write_replacing(const std::string& final, const std::string& text) {
  std::string tmp = dir_of(final) + "/.skelgen-record-XXXXXX";
  int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) throw std::runtime_error(final + ": cannot write: " + std::strerror(errno));
  bool ok = fchmod(fd, 0666 & ~current_umask()) == 0;
  ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) && ok;
  ok = close(fd) == 0 && ok;
  if (!ok || rename(tmp.c_str(), final.c_str()) != 0) {
    int e = errno;
    unlink(tmp.c_str());
    throw std::runtime_error(final + ": cannot write: " + std::strerror(e));
  }
}

}  // namespace

std::string sha256_hex(const std::string& bytes) {
  Sha256 h;
  h.update(reinterpret_cast<const unsigned char*>(bytes.data()), bytes.size());
  return h.hex();
}

std::string file_sha256(const std::string& path) {
  std::string bytes;
  return read_regular(path, bytes) ? sha256_hex(bytes) : "";
}

BuildInputs build_inputs(const std::string& source, const std::string& mpi, const std::string& compiler) {
  std::string src;
  if (!read_regular(real_path(source), src))
    throw std::runtime_error(source + ": cannot read: " + std::strerror(errno ? errno : EINVAL));
  std::string cc = proc::which(compiler);
  std::string cc_real = cc.empty() ? compiler : real_path(cc);
  BuildInputs in{{"source_sha256", sha256_hex(src)},
                 {"mpi", mpi},
                 {"compiler", cc_real},
                 {"compiler_sha256", file_sha256(cc_real)}};
  // the wrappers' choice of C compiler and flags
  for (const char* var : {"MPICH_CC", "OMPI_CC", "OMPI_CFLAGS", "OMPI_LDFLAGS", "OMPI_LIBS", "CC"}) {
    const char* v = std::getenv(var);
    in.emplace_back(std::string("env_") + var, v ? "=" + std::string(v) : "unset");
  }
  in.emplace_back("skelgen_sha256", file_sha256(real_path("/proc/self/exe")));
  for (auto& [k, v] : in)  // one line each in the record
    for (char& c : v)
      if (c == '\n' || c == '\r') c = ' ';
  return in;
}

std::string record_path(const std::string& exe) { return exe + ".skelgen-build"; }

std::string why_not_reusable(const std::string& exe, const BuildInputs& inputs) {
  if (std::string why = why_not_ours(exe, "executable"); !why.empty()) return why;
  const std::string rec = record_path(exe);
  if (std::string why = why_not_ours(rec, "build record"); !why.empty()) return why;
  std::string text;
  if (!read_regular(rec, text)) return "the build record is unreadable";
  std::istringstream lines(text);
  std::string line;
  if (!std::getline(lines, line) || line != kRecordHeader) return "the build record is of another format";
  std::vector<std::pair<std::string, std::string>> recorded;
  while (std::getline(lines, line)) {
    size_t sp = line.find(' ');
    if (sp == std::string::npos) return "the build record is damaged";
    recorded.emplace_back(line.substr(0, sp), line.substr(sp + 1));
  }
  if (recorded.size() != inputs.size() + 1 || recorded.back().first != "executable_sha256")
    return "the build record is damaged";
  static const std::pair<const char*, const char*> kSaid[] = {
      {"source_sha256", "the source changed"},  {"mpi", "it was built for another MPI"},
      {"compiler", "another compiler wrapper"}, {"compiler_sha256", "the compiler wrapper changed"},
      {"skelgen_sha256", "skelgen changed"}};
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (recorded[i].first != inputs[i].first) return "the build record is damaged";
    if (recorded[i].second == inputs[i].second) continue;
    for (const auto& [field, said] : kSaid)
      if (inputs[i].first == field) return said;
    return inputs[i].first.substr(4) + " changed";  // env_NAME
  }
  if (file_sha256(exe) != recorded.back().second) return "the executable changed since it was built";
  return "";
}

std::string temp_build_path(const std::string& exe) {
  std::string tmp = dir_of(exe) + "/.skelgen-build-XXXXXX";
  int fd = mkostemp(tmp.data(), O_CLOEXEC);
  if (fd < 0) throw std::runtime_error("cannot build in " + dir_of(exe) + ": " + std::strerror(errno));
  close(fd);
  return tmp;
}

void install_build(const std::string& tmp, const std::string& exe, const BuildInputs& inputs) {
  std::string sha = file_sha256(tmp);
  if (sha.empty()) throw std::runtime_error(tmp + ": the compiler left no executable");
  // as the compiler would have made it (mkstemp's file is 0600)
  if (chmod(tmp.c_str(), 0777 & ~current_umask()) != 0)
    throw std::runtime_error(tmp + ": cannot chmod: " + std::strerror(errno));
  const std::string rec = record_path(exe);
  if (unlink(rec.c_str()) != 0 && errno != ENOENT)
    throw std::runtime_error(rec + ": cannot remove: " + std::strerror(errno));
  if (rename(tmp.c_str(), exe.c_str()) != 0)
    throw std::runtime_error(exe + ": cannot put the new build in place: " + std::strerror(errno));
  write_replacing(rec, record_text(inputs, sha));
}

}  // namespace skt::predict
