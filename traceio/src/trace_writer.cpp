#include "skel/trace_writer.h"

#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <zstd.h>

#include <cstring>

#include "skel/codec.h"

namespace skt {

std::string encode_header(const TraceHeader& h) {
  using namespace codec;
  std::string body;
  put_u32(body, h.rank);
  put_u32(body, h.world_size);
  put_u64(body, h.run_id);
  put_u32(body, h.pid);
  put_u8(body, static_cast<uint8_t>(h.clock));
  put_u8(body, static_cast<uint8_t>(h.mpi_flavor));
  put_u8(body, h.mpi_version_major);
  put_u8(body, h.mpi_version_minor);
  put_u8(body, h.stack_depth);
  put_u8(body, h.thread_level);
  put_u16(body, 0);
  put_u64(body, static_cast<uint64_t>(h.start_realtime_ns));
  put_u64(body, static_cast<uint64_t>(h.start_monotonic_ns));
  put_str(body, h.kernel_name);
  put_u32(body, h.kernel_version);
  put_f64(body, h.kernel_units_per_s);
  put_f64(body, h.calibration_s);
  put_str(body, h.hostname);
  put_str(body, h.mpi_library);
  put_str(body, h.tracer_version);
  put_str(body, h.executable);
  put_str(body, h.command_line);
  put_u8(body, static_cast<uint8_t>(h.gap_clock));  // 1.1
  put_f64(body, h.gap_floor_ns);                    // 1.4
  put_f64(body, h.cpu_gap_floor_ns);
  put_u8(body, static_cast<uint8_t>(h.core_sharing));  // 2.4

  std::string out(kFileMagic, sizeof kFileMagic);
  put_u16(out, kVersionMajor);
  put_u16(out, kVersionMinor);
  put_u32(out, static_cast<uint32_t>(body.size()));
  out += body;
  return out;
}

void seal_chunk_header(std::string& chunk) {
  uint32_t crc = codec::crc32(chunk.data(), kChunkChecksumOffset);
  for (int i = 0; i < 4; ++i) chunk[kChunkChecksumOffset + i] = static_cast<char>((crc >> (8 * i)) & 0xff);
}

TraceWriter::~TraceWriter() {
  if (fd_ >= 0) ::close(fd_);
  if (cctx_) ZSTD_freeCCtx(static_cast<ZSTD_CCtx*>(cctx_));
}

void TraceWriter::set_error(const std::string& what, int err) {
  if (failed_) return;
  failed_ = true;
  error_ = path_ + ": " + what + ": " + std::strerror(err);
}

bool TraceWriter::write_all(const std::string& bytes) {
  if (failed_ || fd_ < 0) return false;
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd_, p, left);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      set_error("write failed", n < 0 ? errno : ENOSPC);
      return false;
    }
    p += n;
    left -= static_cast<size_t>(n);
  }
  bytes_written_ += bytes.size();
  return true;
}

bool TraceWriter::open(const std::string& path, const TraceHeader& header, size_t buffer_bytes,
                       int zstd_level) {
  return open_at(AT_FDCWD, path, path, header, buffer_bytes, zstd_level);
}

bool TraceWriter::open_at(int dir_fd, const std::string& name, const std::string& shown_path,
                          const TraceHeader& header, size_t buffer_bytes, int zstd_level) {
  path_ = shown_path;
  // Never through an existing file or a symlink someone planted there.
  int fd = ::openat(dir_fd, name.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
  if (fd < 0) {
    int err = errno;
    set_error(err == EEXIST || err == ELOOP ? "cannot create trace file (something already exists at this path)"
                                            : "cannot create trace file",
              err);
    return false;
  }
  return adopt(fd, shown_path, header, buffer_bytes, zstd_level);
}

bool TraceWriter::adopt(int fd, const std::string& shown_path, const TraceHeader& header, size_t buffer_bytes,
                        int zstd_level) {
  path_ = shown_path;
  fd_ = fd;
  return start(header, buffer_bytes, zstd_level);
}

bool TraceWriter::start(const TraceHeader& header, size_t buffer_bytes, int zstd_level) {
  limit_ = buffer_bytes < kFirstChunkBytes ? kFirstChunkBytes : buffer_bytes;
  threshold_ = kFirstChunkBytes;
  level_ = zstd_level;
  records_.buf.resize(limit_ + 64 * 1024);
  times_.buf.resize(limit_ + 64 * 1024);
  cctx_ = ZSTD_createCCtx();
  if (!cctx_) {
    set_error("cannot create zstd context", ENOMEM);
    return false;
  }
  ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(cctx_), ZSTD_c_compressionLevel, level_);
  ZSTD_CCtx_setParameter(static_cast<ZSTD_CCtx*>(cctx_), ZSTD_c_checksumFlag, 1);
  return write_all(encode_header(header));
}

// Every record writes at most a few dozen bytes between ensure() calls:
// begin_* reserves room for a record's fixed part, lists and strings for themselves.
constexpr size_t kRecordHeadroom = 512;

inline void TraceWriter::varint(uint64_t v) {
  records_.pos = static_cast<size_t>(codec::put_varint(records_.buf.data() + records_.pos, v) - records_.buf.data());
}

// The wire type comes from the put_* call, so that the tag always matches
// the value that follows it.
inline void TraceWriter::tag(Field f, FieldType type) {
  varint((static_cast<uint64_t>(f) << 2) | static_cast<uint64_t>(type));
}

void TraceWriter::begin_record(RecordKind kind) {
  records_.ensure(kRecordHeadroom);
  varint(static_cast<uint64_t>(kind));
}
void TraceWriter::end_record() { varint(0); }

void TraceWriter::begin_event(uint32_t func, uint32_t callsite) {
  records_.ensure(kRecordHeadroom);
  varint(static_cast<uint64_t>(RecordKind::kEvent));
  varint(func);
  varint(callsite);
}

void TraceWriter::end_event(int64_t t_start_ns, int64_t t_end_ns) {
  varint(0);
  times_.ensure(20);
  uint8_t* e = codec::put_varint(times_.buf.data() + times_.pos, codec::zigzag(t_start_ns - prev_end_ns_));
  e = codec::put_varint(e, static_cast<uint64_t>(t_end_ns >= t_start_ns ? t_end_ns - t_start_ns : 0));
  times_.pos = static_cast<size_t>(e - times_.buf.data());
  prev_end_ns_ = t_end_ns >= t_start_ns ? t_end_ns : t_start_ns;
  ++chunk_events_;
  ++events_total_;
  if (records_.pos >= threshold_) flush();
}

void TraceWriter::put_int(Field f, int64_t v) {
  tag(f, FieldType::kInt);
  varint(codec::zigzag(v));
}

void TraceWriter::put_list(Field f, const int64_t* v, size_t n) {
  records_.ensure(10 * n + kRecordHeadroom);
  tag(f, FieldType::kIntList);
  varint(n);
  for (size_t i = 0; i < n; ++i) varint(codec::zigzag(v[i]));
}

void TraceWriter::put_list(Field f, const int* v, size_t n) {
  records_.ensure(10 * n + kRecordHeadroom);
  tag(f, FieldType::kIntList);
  varint(n);
  for (size_t i = 0; i < n; ++i) varint(codec::zigzag(v[i]));
}

void TraceWriter::put_str(Field f, const std::string& s) {
  records_.ensure(s.size() + kRecordHeadroom);
  tag(f, FieldType::kString);
  varint(s.size());
  std::memcpy(records_.buf.data() + records_.pos, s.data(), s.size());
  records_.pos += s.size();
}

void TraceWriter::define_module(uint32_t id, const std::string& path) {
  begin_record(RecordKind::kModuleDef);
  put_int(Field::kId, id);
  put_str(Field::kName, path);
  end_record();
}

void TraceWriter::define_callsite(uint32_t id, const int64_t* module_offset_pairs, size_t n) {
  begin_record(RecordKind::kCallsiteDef);
  put_int(Field::kId, id);
  put_list(Field::kFrames, module_offset_pairs, n);
  end_record();
}

void TraceWriter::define_comm(uint32_t id, int64_t parent, uint32_t created_by, const int64_t* members, size_t n) {
  begin_record(RecordKind::kCommDef);
  put_int(Field::kId, id);
  put_int(Field::kParent, parent);
  put_int(Field::kFunc, created_by);
  const std::vector<int64_t> runs = runs_of_ranks(members, n);
  put_list(Field::kMemberRuns, runs.data(), runs.size());
  end_record();
}

void TraceWriter::define_datatype(uint32_t id, int64_t size, const std::string& name) {
  begin_record(RecordKind::kDatatypeDef);
  put_int(Field::kId, id);
  put_int(Field::kSize, size);
  put_str(Field::kName, name);
  end_record();
}

void TraceWriter::define_op(uint32_t id, const std::string& name) {
  begin_record(RecordKind::kOpDef);
  put_int(Field::kId, id);
  put_str(Field::kName, name);
  end_record();
}

bool TraceWriter::flush() {
  if (failed_ || fd_ < 0) {
    records_.pos = times_.pos = 0;
    return false;
  }
  if (records_.pos == 0 && times_.pos == 0) return true;
  payload_.assign(reinterpret_cast<const char*>(records_.buf.data()), records_.pos);
  payload_.append(reinterpret_cast<const char*>(times_.buf.data()), times_.pos);
  size_t bound = ZSTD_compressBound(payload_.size());
  chunk_.clear();
  codec::put_u32(chunk_, kChunkMagic);
  codec::put_u8(chunk_, static_cast<uint8_t>(ChunkType::kEvents));
  codec::put_u8(chunk_, 0);
  codec::put_u16(chunk_, 0);
  codec::put_u32(chunk_, chunk_events_);
  codec::put_u64(chunk_, chunk_first_seq_);
  codec::put_u64(chunk_, static_cast<uint64_t>(chunk_base_ns_));
  codec::put_u32(chunk_, static_cast<uint32_t>(records_.pos));
  codec::put_u32(chunk_, static_cast<uint32_t>(times_.pos));
  size_t len_pos = chunk_.size();
  codec::put_u32(chunk_, 0);
  codec::put_u32(chunk_, 0);  // CRC, sealed below
  chunk_.resize(kChunkHeaderBytes + bound);
  size_t n = ZSTD_compress2(static_cast<ZSTD_CCtx*>(cctx_), &chunk_[kChunkHeaderBytes], bound,
                            payload_.data(), payload_.size());
  if (ZSTD_isError(n)) {
    set_error(std::string("zstd compression failed (") + ZSTD_getErrorName(n) + ")", EIO);
    return false;
  }
  chunk_.resize(kChunkHeaderBytes + n);
  for (int i = 0; i < 4; ++i) chunk_[len_pos + i] = static_cast<char>((n >> (8 * i)) & 0xff);
  seal_chunk_header(chunk_);
  records_.pos = times_.pos = 0;
  chunk_first_seq_ += chunk_events_;
  chunk_events_ = 0;
  chunk_base_ns_ = prev_end_ns_;
  threshold_ = std::min(threshold_ * 2, limit_);
  return write_all(chunk_);
}

bool TraceWriter::close(EndStatus status) {
  if (fd_ < 0) return !failed_;
  bool ok = flush();
  if (ok) {
    std::string end;
    codec::put_u32(end, kChunkMagic);
    codec::put_u8(end, static_cast<uint8_t>(ChunkType::kEnd));
    codec::put_u8(end, static_cast<uint8_t>(status));
    codec::put_u16(end, 0);
    codec::put_u32(end, static_cast<uint32_t>(events_total_));
    codec::put_u64(end, events_total_);
    codec::put_u64(end, static_cast<uint64_t>(prev_end_ns_));
    codec::put_u32(end, 0);
    codec::put_u32(end, 0);
    codec::put_u32(end, 0);
    codec::put_u32(end, 0);  // CRC
    seal_chunk_header(end);
    ok = write_all(end);
  }
  if (::close(fd_) != 0 && ok) {
    set_error("close failed", errno);
    ok = false;
  }
  fd_ = -1;
  return ok;
}

}  // namespace skt
