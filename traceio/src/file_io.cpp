#include "skel/file_io.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>
#include <zstd_errors.h>

#include <cstring>
#include <new>

#include "skel/trace.h"

namespace skt {

namespace {
const char* kind_of(mode_t m) {
  if (S_ISDIR(m)) return "a directory";
  if (S_ISFIFO(m)) return "a FIFO";
  if (S_ISCHR(m) || S_ISBLK(m)) return "a device";
  if (S_ISSOCK(m)) return "a socket";
  return "not a regular file";
}
}  // namespace

void throw_if_zstd_out_of_memory(size_t zstd_result) {
  if (ZSTD_isError(zstd_result) && ZSTD_getErrorCode(zstd_result) == ZSTD_error_memory_allocation)
    throw std::bad_alloc();
}

InFile::InFile(const std::string& path) : path_(path) {
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
  if (fd_ < 0) throw TraceError(path + ": cannot open: " + std::strerror(errno));
  struct stat sb {};
  if (fstat(fd_, &sb) != 0) {
    int err = errno;
    ::close(fd_);
    throw TraceError(path + ": cannot stat: " + std::strerror(err));
  }
  if (!S_ISREG(sb.st_mode)) {
    ::close(fd_);
    throw TraceError(path + ": not a regular file (" + kind_of(sb.st_mode) + "); refused");
  }
  fcntl(fd_, F_SETFL, fcntl(fd_, F_GETFL) & ~O_NONBLOCK);
  size_ = static_cast<uint64_t>(sb.st_size);
}

InFile::~InFile() {
  if (fd_ >= 0) ::close(fd_);
}

size_t InFile::read(void* buf, size_t n) {
  auto* p = static_cast<char*>(buf);
  size_t got = 0;
  while (got < n) {
    ssize_t r = ::read(fd_, p + got, n - got);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) fail(std::string("read error: ") + std::strerror(errno), offset_ + got);
    if (r == 0) break;
    got += static_cast<size_t>(r);
  }
  offset_ += got;
  return got;
}

void InFile::fail(const std::string& what, uint64_t at) const {
  throw TraceError(path_ + ": " + what + " at offset " + std::to_string(at));
}

bool has_magic(const std::string& path, const char (&magic)[8]) {
  try {
    InFile f(path);
    char got[8];
    return f.read(got, sizeof got) == sizeof got && std::memcmp(got, magic, sizeof got) == 0;
  } catch (const TraceError&) {
    return false;
  }
}

}  // namespace skt
