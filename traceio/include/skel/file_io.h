// Reading files that may come from anywhere (docs/tracer.md, "Safety").
// Every reader of the three formats opens its input through InFile: a FIFO,
// a device, a socket or a directory is refused at once (opened with
// O_NONBLOCK, so that opening a FIFO never waits for a writer), every read
// checks its status, and errors name the file and the offset.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace skt {

// Sizes read from a file are bounded by these before anything is allocated.
inline constexpr uint64_t kMaxCompressedBytes = 1ull << 36;
// zstd packs at most about 1:32768 (a 128 KiB RLE block in 3 bytes, plus
// the frame's header): a content size claimed beyond that ratio is corrupt.
inline constexpr uint64_t kMaxZstdRatio = 1u << 15;
inline uint64_t plausible_content_bytes(uint64_t compressed) {
  return compressed > kMaxCompressedBytes / kMaxZstdRatio ? kMaxCompressedBytes : compressed * kMaxZstdRatio;
}

// Throws std::bad_alloc where a zstd function's result says it ran out of
// memory: skelgen then says so, not that the file is corrupt.
void throw_if_zstd_out_of_memory(size_t zstd_result);

class InFile {
 public:
  // Opens a regular file for reading. Throws TraceError("<path>: ...") when
  // it cannot be opened or is not a regular file.
  explicit InFile(const std::string& path);
  ~InFile();
  InFile(const InFile&) = delete;
  InFile& operator=(const InFile&) = delete;

  const std::string& path() const { return path_; }
  uint64_t size() const { return size_; }      // bytes at open time
  uint64_t offset() const { return offset_; }  // of the next byte read
  uint64_t left() const { return offset_ < size_ ? size_ - offset_ : 0; }

  // Reads up to n bytes; returns fewer only at the end of the file. Throws
  // TraceError on a read error (EIO, ...), never returns it as a short read.
  size_t read(void* buf, size_t n);
  // Throws TraceError("<path>: <what> at offset <at>").
  [[noreturn]] void fail(const std::string& what, uint64_t at) const;

 private:
  std::string path_;
  int fd_ = -1;
  uint64_t size_ = 0, offset_ = 0;
};

// Whether path is a regular file that starts with the 8-byte magic (false
// for anything else, a FIFO included, without waiting on it).
bool has_magic(const std::string& path, const char (&magic)[8]);

}  // namespace skt
