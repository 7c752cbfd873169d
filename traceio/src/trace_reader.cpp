#include <dirent.h>
#include <sys/stat.h>
#define ZSTD_STATIC_LINKING_ONLY  // ZSTD_getFrameHeader
#include <zstd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <new>
#include <set>

#include "skel/codec.h"
#include "skel/file_io.h"
#include "skel/skel_funcs.h"
#include "skel/trace.h"

namespace skt {

bool uses_requests(uint32_t f) {
  switch (f) {
    case kFunc_MPI_Wait: case kFunc_MPI_Waitall: case kFunc_MPI_Waitany: case kFunc_MPI_Waitsome:
    case kFunc_MPI_Test: case kFunc_MPI_Testall: case kFunc_MPI_Testany: case kFunc_MPI_Testsome:
    case kFunc_MPI_Start: case kFunc_MPI_Startall: case kFunc_MPI_Request_free: case kFunc_MPI_Cancel:
      return true;
    default:
      return false;
  }
}

Completion completion_of(uint32_t f) {
  switch (f) {
    case kFunc_MPI_Wait: case kFunc_MPI_Waitall:
      return Completion::kWait;
    case kFunc_MPI_Test: case kFunc_MPI_Testall:
      return Completion::kPoll;
    case kFunc_MPI_Waitany: case kFunc_MPI_Waitsome: case kFunc_MPI_Testany: case kFunc_MPI_Testsome:
      return Completion::kChoose;
    default:
      return Completion::kNone;
  }
}

bool creates_request(uint32_t f) {
  switch (call_class(f)) {
    case CallClass::kIsend: case CallClass::kIrecv: case CallClass::kSendInit: case CallClass::kRecvInit:
    case CallClass::kIcollective:
      return true;
    default:
      return false;
  }
}

bool creates_persistent_request(uint32_t f) {
  return call_class(f) == CallClass::kSendInit || call_class(f) == CallClass::kRecvInit;
}

MessageRole message_role(uint32_t f) {
  switch (replayed_as(f)) {
    case kFunc_MPI_Send: case kFunc_MPI_Ssend: case kFunc_MPI_Bsend: case kFunc_MPI_Rsend:
    case kFunc_MPI_Isend: case kFunc_MPI_Issend: case kFunc_MPI_Ibsend: case kFunc_MPI_Irsend:
      return MessageRole::kSend;
    case kFunc_MPI_Recv: case kFunc_MPI_Irecv:
      return MessageRole::kRecv;
    case kFunc_MPI_Sendrecv: case kFunc_MPI_Sendrecv_replace:
      return MessageRole::kSendRecv;
    default:
      return MessageRole::kNone;
  }
}

const char* trace_end_name(TraceEnd e) {
  switch (e) {
    case TraceEnd::kFinalized: return "finalized";
    case TraceEnd::kAborted: return "aborted";
    case TraceEnd::kTruncated: return "truncated";
  }
  return "?";
}

// Fuzzing builds (libFuzzer's convention, tests/CMakeLists.txt) skip the
// chunk header CRC and zstd's content checksum, so that mutated chunks
// reach the record decoder instead of stopping at a checksum.
#ifdef FUZZING_BUILD_MODE_UNSAFE_FOR_PRODUCTION
constexpr bool kCheckChecksums = false;
#else
constexpr bool kCheckChecksums = true;
#endif

struct TraceFile::Io {
  std::unique_ptr<InFile> f;
  uint64_t chunk_offset = 0;         // file offset of the current chunk's header
  ZSTD_DCtx* dctx = nullptr;
  std::string compressed, raw;
  size_t rec_pos = 0, rec_end = 0;   // record stream within raw
  size_t time_pos = 0, time_end = 0; // time stream within raw
  uint32_t chunk_events = 0, chunk_events_seen = 0;
  uint64_t chunks = 0;
  ~Io() {
    if (dctx) ZSTD_freeDCtx(dctx);
  }
};

void TraceFile::fail(const std::string& what) const {
  if (io_ && io_->chunks > 0) io_->f->fail(what + " in the chunk", io_->chunk_offset);
  throw TraceError(path_ + ": " + what);
}

TraceFile::~TraceFile() = default;

TraceFile::TraceFile(const std::string& path) : path_(path), io_(new Io) {
  io_->f = std::make_unique<InFile>(path);
  InFile& f = *io_->f;
  // Magic and version before anything else.
  uint8_t fixed[kFixedHeaderBytes];
  size_t got = f.read(fixed, sizeof fixed);
  if (got < sizeof kFileMagic || std::memcmp(fixed, kFileMagic, sizeof kFileMagic) != 0)
    fail("not a skelgen trace file (bad magic number)");
  if (got < sizeof fixed) f.fail("truncated header", got);
  codec::Cursor c(fixed + 8, sizeof fixed - 8);
  uint32_t body_len = 0;
  c.le(header_.version_major);
  c.le(header_.version_minor);
  c.le(body_len);
  const std::string version = std::to_string(header_.version_major) + "." + std::to_string(header_.version_minor);
  if (header_.version_major < kVersionMajor)
    fail("trace format version " + version + " is too old: this reader reads " + std::to_string(kVersionMajor) +
         ".x (chunk headers with checksums); trace the application again with this skelgen");
  if (header_.version_major != kVersionMajor)
    fail("trace format version " + version + " is not supported (this reader reads " +
         std::to_string(kVersionMajor) + ".x)");
  if (body_len > (1u << 24)) f.fail("corrupt header (body length " + std::to_string(body_len) + ")", 12);
  if (body_len > f.left())
    f.fail("truncated header (body length " + std::to_string(body_len) + ", " + std::to_string(f.left()) +
               " bytes left)",
           12);
  std::string body(body_len, '\0');
  if (f.read(&body[0], body_len) != body_len) f.fail("truncated header", f.offset());
  codec::Cursor b(reinterpret_cast<const uint8_t*>(body.data()), body.size());
  uint8_t clock = 0, flavor = 0;
  uint16_t reserved = 0;
  uint64_t rt = 0, mono = 0;
  bool ok = b.le(header_.rank) && b.le(header_.world_size) && b.le(header_.run_id) &&
            b.le(header_.pid) && b.le(clock) && b.le(flavor) && b.le(header_.mpi_version_major) &&
            b.le(header_.mpi_version_minor) && b.le(header_.stack_depth) &&
            b.le(header_.thread_level) && b.le(reserved) && b.le(rt) && b.le(mono) &&
            b.str(header_.kernel_name) && b.le(header_.kernel_version) &&
            b.f64(header_.kernel_units_per_s) && b.f64(header_.calibration_s) &&
            b.str(header_.hostname) && b.str(header_.mpi_library) &&
            b.str(header_.tracer_version) && b.str(header_.executable) &&
            b.str(header_.command_line);
  // Later minor versions may append fields to the body: they are skipped.
  if (!ok) fail("corrupt header (fields do not fit the header length)");
  uint8_t gap_clock = 0;
  if (!b.le(gap_clock)) fail("corrupt header (no gap clock)");
  if (gap_clock > static_cast<uint8_t>(GapClock::kThreadCpu)) fail("unknown gap clock " + std::to_string(gap_clock));
  header_.gap_clock = static_cast<GapClock>(gap_clock);
  if (!(b.f64(header_.gap_floor_ns) && b.f64(header_.cpu_gap_floor_ns)))
    fail("corrupt header (no gap floors)");
  if (!(header_.gap_floor_ns >= 0 && header_.gap_floor_ns < 1e9 && header_.cpu_gap_floor_ns >= 0 &&
        header_.cpu_gap_floor_ns < 1e9))
    fail("corrupt header (gap floors out of range)");
  uint8_t sharing = 0;  // absent before 2.4: unknown
  if (b.le(sharing) && sharing > static_cast<uint8_t>(CoreSharing::kShared))
    fail("corrupt header (core sharing " + std::to_string(sharing) + ")");
  header_.core_sharing = static_cast<CoreSharing>(sharing);
  if (clock != static_cast<uint8_t>(ClockSource::kMonotonicNs)) fail("unknown clock source " + std::to_string(clock));
  if (header_.world_size == 0 || header_.rank >= header_.world_size)
    fail("corrupt header (rank " + std::to_string(header_.rank) + " of world size " +
         std::to_string(header_.world_size) + ")");
  header_.clock = static_cast<ClockSource>(clock);
  header_.mpi_flavor = static_cast<MpiFlavor>(flavor);
  header_.start_realtime_ns = static_cast<int64_t>(rt);
  header_.start_monotonic_ns = static_cast<int64_t>(mono);
  io_->dctx = ZSTD_createDCtx();
  if (!io_->dctx) throw std::bad_alloc();  // zstd could not allocate its context
  if (!kCheckChecksums) ZSTD_DCtx_setParameter(io_->dctx, ZSTD_d_forceIgnoreChecksum, ZSTD_d_ignoreChecksum);
}

bool TraceFile::load_chunk() {
  Io& io = *io_;
  InFile& f = *io.f;
  io.chunk_offset = f.offset();
  const uint64_t at = io.chunk_offset;
  uint8_t hdr[kChunkHeaderBytes];
  size_t got = f.read(hdr, sizeof hdr);
  if (got < sizeof hdr) return false;  // clean end or cut inside a header: truncated
  const std::string chunk = "corrupt chunk " + std::to_string(io.chunks);
  codec::Cursor c(hdr, sizeof hdr);
  uint32_t magic = 0, n_events = 0, rec_len = 0, time_len = 0, payload_len = 0, crc = 0;
  uint8_t type = 0, status = 0;
  uint16_t reserved = 0;
  uint64_t first_seq = 0, base = 0;
  c.le(magic);
  c.le(type);
  c.le(status);
  c.le(reserved);
  c.le(n_events);
  c.le(first_seq);
  c.le(base);
  c.le(rec_len);
  c.le(time_len);
  c.le(payload_len);
  c.le(crc);
  if (magic != kChunkMagic) f.fail(chunk + " (bad chunk magic)", at);
  if (kCheckChecksums && crc != codec::crc32(hdr, kChunkChecksumOffset)) f.fail(chunk + " (header checksum mismatch)", at);
  if (type == static_cast<uint8_t>(ChunkType::kEnd)) {
    if (first_seq != next_seq_)
      f.fail("corrupt end chunk (says " + std::to_string(first_seq) + " events, read " + std::to_string(next_seq_) +
                 ")",
             at);
    end_ = status == static_cast<uint8_t>(EndStatus::kAborted) ? TraceEnd::kAborted : TraceEnd::kFinalized;
    done_ = true;
    return false;
  }
  if (type != static_cast<uint8_t>(ChunkType::kEvents)) f.fail(chunk + " (unknown type " + std::to_string(type) + ")", at);
  if (first_seq != next_seq_)
    f.fail(chunk + " (first event " + std::to_string(first_seq) + ", expected " + std::to_string(next_seq_) + ")", at);
  if (base > static_cast<uint64_t>(INT64_MAX)) f.fail(chunk + " (base time out of range)", at);
  if (payload_len > f.left()) return false;  // cut inside the payload: truncated
  uint64_t raw_len = static_cast<uint64_t>(rec_len) + time_len;
  if (raw_len > (1u << 30) || raw_len > plausible_content_bytes(payload_len))
    f.fail(chunk + " (implausible size: " + std::to_string(raw_len) + " bytes from " + std::to_string(payload_len) +
               " compressed)",
           at);
  io.compressed.resize(payload_len);
  if (f.read(&io.compressed[0], payload_len) != payload_len) return false;  // the file shrank: truncated
  ZSTD_frameHeader fh{};
  if (ZSTD_getFrameHeader(&fh, io.compressed.data(), payload_len) != 0 || fh.frameType != ZSTD_frame ||
      fh.frameContentSize != raw_len || (kCheckChecksums && !fh.checksumFlag))
    f.fail(chunk + " (payload is not one checksummed zstd frame of " + std::to_string(raw_len) + " bytes)", at);
  io.raw.resize(raw_len);
  size_t n = ZSTD_decompressDCtx(io.dctx, &io.raw[0], raw_len, io.compressed.data(), payload_len);
  throw_if_zstd_out_of_memory(n);
  if (ZSTD_isError(n) || n != raw_len)
    f.fail(chunk + " (" + (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong decompressed size") + ")", at);
  io.rec_pos = 0;
  io.rec_end = rec_len;
  io.time_pos = rec_len;
  io.time_end = raw_len;
  io.chunk_events = n_events;
  io.chunk_events_seen = 0;
  prev_end_ns_ = static_cast<int64_t>(base);
  ++io.chunks;
  return true;
}

std::vector<int64_t> runs_of_ranks(const int64_t* ranks, size_t n) {
  std::vector<int64_t> runs;
  for (size_t i = 0; i < n; ++i) {
    if (!runs.empty() && runs[runs.size() - 2] + runs.back() == ranks[i]) ++runs.back();
    else runs.push_back(ranks[i]), runs.push_back(1);
  }
  return runs;
}

std::vector<int64_t> CommInfo::members() const {
  std::vector<int64_t> out;
  for (size_t i = 0; i + 1 < runs.size(); i += 2)
    for (int64_t k = 0; k < runs[i + 1]; ++k) out.push_back(runs[i] + k);
  return out;
}

namespace {

// Runs (first, count) of ranks within a world of `world` ranks, at most
// `world` members in all (so that writing them out is bounded).
bool valid_runs(const std::vector<int64_t>& runs, uint32_t world) {
  if (runs.size() % 2) return false;
  int64_t total = 0;
  for (size_t i = 0; i < runs.size(); i += 2) {
    const int64_t first = runs[i], count = runs[i + 1];
    if (first < 0 || count < 1 || first > world || count > world - first) return false;
    total += count;
    if (total > world) return false;
  }
  return true;
}

// Reads the tagged fields of one record into ev (events) or a scratch event
// (definitions); strings go to name.
bool read_fields(codec::Cursor& c, Event& ev, std::string& name, int64_t& id, int64_t& size,
                 std::vector<int64_t>& list_frames, std::vector<int64_t>& members, std::vector<int64_t>& member_runs,
                 int64_t& parent, int64_t& func) {
  for (;;) {
    uint64_t tag;
    if (!c.varint(tag)) return false;
    if (tag == 0) return true;
    uint32_t fid = static_cast<uint32_t>(tag >> 2);
    auto type = static_cast<FieldType>(tag & 3);
    if (type == FieldType::kInt) {
      int64_t v;
      if (!c.svarint(v)) return false;
      switch (static_cast<Field>(fid)) {
        case Field::kPeer: ev.peer = v; break;
        case Field::kTag: ev.tag = v; break;
        case Field::kCount: ev.count = v; break;
        case Field::kDtype: ev.dtype = v; break;
        case Field::kComm: ev.comm = v; break;
        case Field::kRoot: ev.root = v; break;
        case Field::kOp: ev.op = v; break;
        case Field::kFlags: ev.flags = static_cast<uint64_t>(v); break;
        case Field::kPeer2: ev.peer2 = v; break;
        case Field::kTag2: ev.tag2 = v; break;
        case Field::kCount2: ev.count2 = v; break;
        case Field::kDtype2: ev.dtype2 = v; break;
        case Field::kNewComm: ev.new_comm = v; break;
        case Field::kColor: ev.color = v; break;
        case Field::kKey: ev.key = v; break;
        case Field::kBytes: ev.bytes = v; break;
        case Field::kBytes2: ev.bytes2 = v; break;
        case Field::kCpuGap: ev.cpu_gap_ns = v; break;
        case Field::kBlocked:
          if (v < 0) return false;
          ev.blocked_ns = v;
          break;
        case Field::kTeamCpu:
          if (v < 0) return false;
          ev.team_cpu_ns = v;
          break;
        case Field::kKernelRate: ev.kernel_rate = v; break;
        case Field::kKernelSamples: ev.kernel_samples = v; break;
        case Field::kThread:
          if (v < 0 || v > kMaxThreads) return false;
          ev.thread = static_cast<uint32_t>(v);
          break;
        case Field::kId: id = v; break;
        case Field::kSize: size = v; break;
        case Field::kParent: parent = v; break;
        case Field::kFunc: func = v; break;
        default: break;  // unknown (newer minor version): skipped
      }
    } else if (type == FieldType::kIntList) {
      uint64_t n;
      if (!c.varint(n) || n > c.remaining()) return false;
      std::vector<int64_t> tmp;
      std::vector<int64_t>* dst = &tmp;
      switch (static_cast<Field>(fid)) {
        case Field::kReqs: dst = &ev.reqs; break;
        case Field::kReqSources: dst = &ev.req_sources; break;
        case Field::kCounts: dst = &ev.counts; break;
        case Field::kCounts2: dst = &ev.counts2; break;
        case Field::kDims: dst = &ev.dims; break;
        case Field::kPeriods: dst = &ev.periods; break;
        case Field::kFrames: dst = &list_frames; break;
        case Field::kMembers: dst = &members; break;
        case Field::kMemberRuns: dst = &member_runs; break;
        default: break;
      }
      dst->resize(n);
      for (uint64_t i = 0; i < n; ++i)
        if (!c.svarint((*dst)[i])) return false;
    } else if (type == FieldType::kString) {
      uint64_t n;
      const uint8_t* b;
      if (!c.varint(n) || !c.bytes(n, b)) return false;
      if (static_cast<Field>(fid) == Field::kName) name.assign(reinterpret_cast<const char*>(b), n);
    } else {
      return false;
    }
  }
}
}  // namespace

bool TraceFile::decode_record(Event& ev) {
  Io& io = *io_;
  for (;;) {
    if (io.rec_pos >= io.rec_end) {
      if (io.chunk_events_seen != io.chunk_events)
        fail("corrupt chunk " + std::to_string(io.chunks - 1) + " (event count mismatch)");
      return false;
    }
    codec::Cursor c(reinterpret_cast<const uint8_t*>(io.raw.data()) + io.rec_pos, io.rec_end - io.rec_pos);
    uint64_t kind;
    if (!c.varint(kind)) fail("corrupt record");
    Event scratch;
    std::string name;
    int64_t id = kNone, size = kNone, parent = kNone, func = kNone;
    std::vector<int64_t> frames, members, member_runs;
    if (kind == static_cast<uint64_t>(RecordKind::kEvent)) {
      ev = Event();
      uint64_t f, cs;
      if (!c.varint(f) || !c.varint(cs) || !read_fields(c, ev, name, id, size, frames, members, member_runs, parent, func))
        fail("corrupt event record " + std::to_string(next_seq_));
      ev.func = static_cast<uint32_t>(f);
      ev.callsite = static_cast<uint32_t>(cs);
      io.rec_pos = io.rec_end - c.remaining();
      codec::Cursor t(reinterpret_cast<const uint8_t*>(io.raw.data()) + io.time_pos, io.time_end - io.time_pos);
      int64_t gap;
      uint64_t dur;
      if (!t.svarint(gap) || !t.varint(dur)) fail("corrupt time stream at event " + std::to_string(next_seq_));
      io.time_pos = io.time_end - t.remaining();
      ev.gap_ns = gap;
      // Checked: a corrupt time is refused, never wrapped into a shifted one.
      if (dur > static_cast<uint64_t>(INT64_MAX) || __builtin_add_overflow(prev_end_ns_, gap, &ev.t_start_ns) ||
          ev.t_start_ns < 0 || __builtin_add_overflow(ev.t_start_ns, static_cast<int64_t>(dur), &prev_end_ns_))
        io.f->fail("corrupt time of event " + std::to_string(next_seq_) + " in the chunk", io.chunk_offset);
      ev.duration_ns = static_cast<int64_t>(dur);
      ev.seq = next_seq_++;
      ++io.chunk_events_seen;
      // Bytes not recorded are count (or the sum of per-rank counts) x type size.
      // Checked: counts from a corrupt file must not overflow (then bytes stay unknown).
      auto fill_bytes = [this](int64_t& bytes, int64_t count, const std::vector<int64_t>& counts, int64_t dtype) {
        if (bytes != kNone || dtype == kNone) return;
        int64_t n = count;
        if (n == kNone && !counts.empty()) {
          n = 0;
          for (int64_t x : counts)
            if (__builtin_add_overflow(n, x, &n)) return;
        }
        int64_t size = datatype_size(dtype), product = 0;
        if (n != kNone && size >= 0 && !__builtin_mul_overflow(n, size, &product)) bytes = product;
      };
      fill_bytes(ev.bytes, ev.count, ev.counts, ev.dtype);
      fill_bytes(ev.bytes2, ev.count2, ev.counts2, ev.dtype2);
      return true;
    }
    if (!read_fields(c, scratch, name, id, size, frames, members, member_runs, parent, func) || id < 0)
      fail("corrupt definition record before event " + std::to_string(next_seq_));
    io.rec_pos = io.rec_end - c.remaining();
    auto uid = static_cast<uint32_t>(id);
    switch (static_cast<RecordKind>(kind)) {
      case RecordKind::kModuleDef:
        if (uid != modules_.size()) fail("corrupt module definition (id " + std::to_string(uid) + ")");
        modules_.push_back(name);
        break;
      case RecordKind::kCallsiteDef: {
        if (frames.size() % 2) fail("corrupt callsite definition");
        Callsite cs;
        for (size_t i = 0; i < frames.size(); i += 2)
          cs.frames.push_back(Frame{static_cast<uint32_t>(frames[i]), static_cast<uint64_t>(frames[i + 1])});
        callsites_[uid] = cs;
        break;
      }
      case RecordKind::kCommDef: {
        CommInfo ci;
        ci.id = uid;
        ci.parent = parent;
        ci.created_by = func < 0 ? 0 : static_cast<uint32_t>(func);
        ci.runs = member_runs.empty() ? runs_of_ranks(members.data(), members.size()) : member_runs;  // a list of ranks before 2.3
        if (!valid_runs(ci.runs, header_.world_size))
          fail("corrupt communicator definition (members outside the world of " +
               std::to_string(header_.world_size) + " ranks)");
        comms_[uid] = ci;
        break;
      }
      case RecordKind::kDatatypeDef:
        datatypes_[uid] = DatatypeInfo{uid, size, name};
        break;
      case RecordKind::kOpDef:
        ops_[uid] = name;
        break;
      default:
        fail("unknown record kind " + std::to_string(kind) + " before event " + std::to_string(next_seq_));
    }
  }
}

bool TraceFile::next(Event& ev) {
  if (done_) return false;
  for (;;) {
    if (io_->rec_pos < io_->rec_end && decode_record(ev)) return true;
    if (io_->rec_pos >= io_->rec_end && io_->chunk_events_seen != io_->chunk_events)
      fail("corrupt chunk (event count mismatch)");
    if (!load_chunk()) {
      done_ = true;  // end_ stays kTruncated unless the end chunk was read
      return false;
    }
  }
}

int64_t TraceFile::datatype_size(int64_t id) const {
  auto it = datatypes_.find(static_cast<uint32_t>(id));
  return it == datatypes_.end() ? -1 : it->second.size;
}

std::string format_callsite(const std::vector<Frame>& frames, const std::vector<std::string>& modules) {
  if (frames.empty()) return "?";
  std::string out;
  for (const Frame& fr : frames) {
    if (!out.empty()) out += "<";
    std::string mod = fr.module < modules.size() ? modules[fr.module] : "?";
    auto slash = mod.rfind('/');
    if (slash != std::string::npos) mod = mod.substr(slash + 1);
    char off[32];
    std::snprintf(off, sizeof off, "+0x%llx", static_cast<unsigned long long>(fr.offset));
    out += mod + off;
  }
  return out;
}

std::string TraceFile::callsite_name(uint32_t id) const {
  auto it = callsites_.find(id);
  return it == callsites_.end() ? "?" : format_callsite(it->second.frames, modules_);
}

// ---------------------------------------------------------------- TraceDir

std::string TraceDir::rank_file_name(uint32_t rank) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "rank-%05u.skt", rank);
  return buf;
}

std::string TraceDir::spawned_dir_name(uint64_t run_id) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "spawned-%016llx", static_cast<unsigned long long>(run_id));
  return buf;
}

std::vector<std::string> TraceDir::spawned_worlds(const std::string& dir) {
  std::set<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.compare(0, 8, "spawned-") == 0) names.insert(n);
    }
    closedir(d);
  }
  return {names.begin(), names.end()};
}

std::string TraceDir::run_dir_name(uint32_t run) { return "run-" + std::to_string(run); }

bool TraceDir::is_run_dir_name(const std::string& n) {
  return n.size() >= 5 && n.size() <= 12 && n.compare(0, 4, "run-") == 0 &&
         n.find_first_not_of("0123456789", 4) == std::string::npos;
}

std::vector<std::string> TraceDir::run_dirs(const std::string& dir) {
  std::map<uint64_t, std::string> runs;
  bool rank_files = false;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      rank_files |= n.size() > 9 && n.compare(0, 5, "rank-") == 0 && n.compare(n.size() - 4, 4, ".skt") == 0;
      if (!is_run_dir_name(n)) continue;
      struct stat sb {};
      if (stat((dir + "/" + n).c_str(), &sb) == 0 && S_ISDIR(sb.st_mode)) runs[std::stoull(n.substr(4))] = dir + "/" + n;
    }
    closedir(d);
  }
  std::vector<std::string> out;
  if (rank_files) return out;
  for (auto& [k, path] : runs) out.push_back(path);
  return out;
}

TraceDir::TraceDir(const std::string& dir) : dir_(dir) {
  DIR* d = opendir(dir.c_str());
  if (!d) throw TraceError(dir + ": cannot open trace directory: " + std::strerror(errno));
  std::set<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > 9 && n.compare(0, 5, "rank-") == 0 && n.compare(n.size() - 4, 4, ".skt") == 0) names.insert(n);
  }
  closedir(d);
  if (names.empty()) throw TraceError(dir + ": no rank-*.skt trace files in this directory");
  std::map<uint32_t, std::string> by_rank;
  uint64_t run_id = 0;
  std::string first;
  for (const std::string& n : names) {
    std::string path = dir + "/" + n;
    TraceFile f(path);
    const TraceHeader& h = f.header();
    if (first.empty()) {
      first = path;
      run_id = h.run_id;
      world_size_ = h.world_size;
    } else if (h.run_id != run_id) {
      throw TraceError(path + ": belongs to a different run than " + first + " (run ids differ)");
    } else if (h.world_size != world_size_) {
      throw TraceError(path + ": world size " + std::to_string(h.world_size) + " differs from " +
                       std::to_string(world_size_) + " in " + first);
    }
    if (n != rank_file_name(h.rank))
      throw TraceError(path + ": file name does not match the rank in its header (" + std::to_string(h.rank) + ")");
    by_rank[h.rank] = path;
  }
  for (uint32_t r = 0; r < world_size_; ++r) {
    if (!by_rank.count(r))
      throw TraceError(dir + ": rank " + std::to_string(r) + " of " + std::to_string(world_size_) +
                       " is missing (" + rank_file_name(r) + ")");
    paths_.push_back(by_rank[r]);
  }
}

std::unique_ptr<TraceFile> TraceDir::open_rank(uint32_t rank) const {
  return std::make_unique<TraceFile>(paths_.at(rank));
}

const char* predefined_datatype_name(uint32_t id) {
  switch (id) {
#define SKT_DT_NAME(n, name) \
  case n:                    \
    return #name;
    SKT_PREDEFINED_DATATYPES(SKT_DT_NAME)
#undef SKT_DT_NAME
  }
  return nullptr;
}

const char* predefined_op_name(uint32_t id) {
  switch (id) {
#define SKT_OP_NAME(n, name) \
  case n:                    \
    return #name;
    SKT_PREDEFINED_OPS(SKT_OP_NAME)
#undef SKT_OP_NAME
  }
  return nullptr;
}

}  // namespace skt
