// Writes one rank's trace file (docs/trace-format.md). Used by the tracer.
//
// Records go into two in-memory streams (records, times); when the record
// stream passes the buffer size the chunk is zstd-compressed and written with
// one write loop, so memory stays bounded and a process that dies leaves a file
// readable up to its last complete chunk. After an I/O error every call is a
// no-op and failed()/error() say why; the caller decides how to warn.
#pragma once

#include <cstddef>
#include <cstdint>
#include <algorithm>
#include <string>
#include <vector>

#include "skel/trace.h"
#include "skel/trace_format.h"

namespace skt {

class TraceWriter {
 public:
  TraceWriter() = default;
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // The first chunk is written once the record stream holds this many
  // bytes, and each later one at twice its predecessor's threshold up to
  // buffer_bytes: what a rank did before a disk filled (or before it was
  // killed) reaches the file early, while long runs still write big chunks.
  static constexpr size_t kFirstChunkBytes = 4096;

  // Creates path and writes the header. The file must not exist yet: it is
  // created with O_CREAT|O_EXCL|O_NOFOLLOW|O_CLOEXEC, so a file or a symlink
  // planted at the path is never written through (EEXIST / ELOOP, an
  // error). buffer_bytes: the largest flush threshold of the record stream
  // (at least kFirstChunkBytes is used).
  bool open(const std::string& path, const TraceHeader& header, size_t buffer_bytes, int zstd_level);
  // The same, creating `name` inside the directory open at dir_fd (the
  // tracer's checked trace directory); shown_path names it in errors.
  bool open_at(int dir_fd, const std::string& name, const std::string& shown_path, const TraceHeader& header,
               size_t buffer_bytes, int zstd_level);
  // Takes ownership of an open, writable fd (tests: /dev/full).
  bool adopt(int fd, const std::string& shown_path, const TraceHeader& header, size_t buffer_bytes, int zstd_level);

  // A definition record: begin_record, put_* fields, end_record.
  void begin_record(RecordKind kind);
  void end_record();
  // An event: begin_event, put_* fields, end_event with its times (ns since time 0).
  void begin_event(uint32_t func, uint32_t callsite);
  void end_event(int64_t t_start_ns, int64_t t_end_ns);

  // Definition records (docs/trace-format.md, "Records"); each must come
  // before the first event that uses its id.
  void define_module(uint32_t id, const std::string& path);
  void define_callsite(uint32_t id, const int64_t* module_offset_pairs, size_t n);  // n values
  void define_comm(uint32_t id, int64_t parent, uint32_t created_by, const int64_t* members, size_t n);
  void define_datatype(uint32_t id, int64_t size, const std::string& name);
  void define_op(uint32_t id, const std::string& name);

  void put_int(Field f, int64_t v);
  void put_list(Field f, const int64_t* v, size_t n);
  void put_list(Field f, const int* v, size_t n);
  void put_str(Field f, const std::string& s);

  // Writes the buffered chunk now (also done automatically when full).
  bool flush();
  // Flushes, writes the end chunk, closes. Idempotent.
  bool close(EndStatus status);

  bool is_open() const { return fd_ >= 0; }
  bool failed() const { return failed_; }
  const std::string& error() const { return error_; }
  uint64_t events() const { return events_total_; }
  uint64_t bytes_written() const { return bytes_written_; }

 private:
  // The two streams are raw byte buffers with a write position; ensure()
  // grows them so that at least n more bytes fit (never on the common path).
  struct Stream {
    std::vector<uint8_t> buf;
    size_t pos = 0;
    void ensure(size_t n) {
      if (pos + n > buf.size()) buf.resize(std::max(buf.size() * 2, pos + n));
    }
  };
  void varint(uint64_t v);
  void tag(Field f, FieldType type);
  bool start(const TraceHeader& header, size_t buffer_bytes, int zstd_level);
  bool write_all(const std::string& bytes);
  void set_error(const std::string& what, int err);

  int fd_ = -1;
  bool failed_ = false;
  std::string error_;
  std::string path_;
  Stream records_, times_;
  std::string payload_, chunk_;
  size_t threshold_ = 0;  // flush when the record stream passes it; doubles up to limit_
  size_t limit_ = 0;
  int level_ = 3;
  void* cctx_ = nullptr;  // ZSTD_CCtx
  uint32_t chunk_events_ = 0;
  uint64_t chunk_first_seq_ = 0;
  int64_t chunk_base_ns_ = 0;
  int64_t prev_end_ns_ = 0;
  uint64_t events_total_ = 0;
  uint64_t bytes_written_ = 0;
};

// Serialises a header (fixed part + body) exactly as it goes on disk.
std::string encode_header(const TraceHeader& h);
// Writes the CRC-32 of a chunk header's first 40 bytes at its offset 40.
void seal_chunk_header(std::string& chunk);

}  // namespace skt
