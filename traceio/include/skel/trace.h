// In-memory view of a skelgen trace, and the reader used by every tool.
//
// A trace is a directory with one file per rank, rank-NNNNN.skt (see
// docs/trace-format.md). TraceFile reads one of them; TraceDir opens and
// validates the whole set. Errors are reported as skt::TraceError whose
// what() is one line naming the file and the problem.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "skel/trace_format.h"

namespace skt {

class TraceError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The per-file header (docs/trace-format.md, "Header body").
struct TraceHeader {
  uint16_t version_major = kVersionMajor;
  uint16_t version_minor = kVersionMinor;
  uint32_t rank = 0;
  uint32_t world_size = 0;
  uint64_t run_id = 0;  // equal in all files of one run
  uint32_t pid = 0;
  ClockSource clock = ClockSource::kMonotonicNs;
  MpiFlavor mpi_flavor = MpiFlavor::kUnknown;
  uint8_t mpi_version_major = 0, mpi_version_minor = 0;
  uint8_t stack_depth = 1;    // frames recorded per call site
  uint8_t thread_level = 0;   // MPI thread level provided (0 = SINGLE ... 3 = MULTIPLE)
  int64_t start_realtime_ns = 0;   // wall clock (CLOCK_REALTIME) at time 0
  int64_t start_monotonic_ns = 0;  // the clock value that event time 0 corresponds to
  // Calibration of the reference compute kernel (skel/skel_kernel.h) on
  // this node: how many kernel units it runs per second.
  std::string kernel_name;
  uint32_t kernel_version = 0;
  double kernel_units_per_s = 0.0;
  double calibration_s = 0.0;      // how long the calibration ran
  // kThreadCpu: events carry cpu_gap_ns and kernel_units_per_s is per CPU
  // second (1.1 on; 1.0 files read as kWall).
  GapClock gap_clock = GapClock::kWall;
  // The tracer's own fixed cost in every gap (1.4; 0 before): the shortest
  // span from its last clock read after one call to its first in the next,
  // with no application code between, on the wall clock and (kThreadCpu) on
  // the thread's CPU clock, in ns. A lower bound: what the generator takes
  // off every gap before it turns the rest into computation.
  double gap_floor_ns = 0.0;
  double cpu_gap_floor_ns = 0.0;
  CoreSharing core_sharing = CoreSharing::kUnknown;  // 2.4
  std::string hostname;
  std::string mpi_library;         // MPI_Get_library_version, first line
  std::string tracer_version;
  std::string executable;          // /proc/self/exe of the traced program
  std::string command_line;        // argv joined by spaces
};

// One MPI call. Absent scalar fields hold kNone.
struct Event {
  uint64_t seq = 0;        // 0-based index of the event in its rank's trace
  uint32_t func = 0;       // function id (skel_funcs.h)
  uint32_t callsite = 0;   // id into TraceFile::callsites()
  int64_t t_start_ns = 0;  // relative to TraceHeader::start_monotonic_ns
  int64_t duration_ns = 0;
  int64_t gap_ns = 0;      // computation before this call: t_start - end of previous call
  int64_t cpu_gap_ns = kNone;  // the thread's CPU time over that gap (GapClock::kThreadCpu traces only)
  // GapClock::kThreadCpu: how long of that gap the thread was blocked (asleep,
  // waiting for I/O: neither computing nor waiting for a core); 0 if absent.
  int64_t blocked_ns = 0;
  // GapClock::kThreadCpu, the first thread (2.4): the CPU time the rank's
  // other threads used since the tracer last read it, read at the end of
  // gaps of 50 us or more (an OpenMP team computing between the calls); 0
  // if absent.
  int64_t team_cpu_ns = 0;
  // The calling thread (MPI_THREAD_MULTIPLE ranks; 0 otherwise): 0 is the
  // thread that initialised MPI, a thread the program created holds the
  // lowest number no other running thread held when it was created.
  uint32_t thread = 0;
  // MPI_Finalize of a 1.2 trace: the kernel's rate (units per second) for the
  // whole run, the median of the MPI_Init calibration and the samples taken
  // during the run, and how many samples (0: the run was too short for one).
  int64_t kernel_rate = kNone, kernel_samples = kNone;
  int64_t peer = kNone, tag = kNone, count = kNone, dtype = kNone;
  int64_t peer2 = kNone, tag2 = kNone, count2 = kNone, dtype2 = kNone;
  int64_t comm = kNone, root = kNone, op = kNone, new_comm = kNone;
  int64_t color = kNone, key = kNone;
  int64_t bytes = kNone, bytes2 = kNone;  // as recorded (Alltoallw) or filled in by the reader
  uint64_t flags = 0;
  std::vector<int64_t> reqs, req_sources, counts, counts2, dims, periods;
};

struct Frame {
  uint32_t module = 0;  // id into TraceFile::modules()
  uint64_t offset = 0;  // return address minus the module's load base
};
struct Callsite {
  std::vector<Frame> frames;  // innermost (the caller of MPI) first
};
struct CommInfo {
  uint32_t id = 0;
  int64_t parent = kNone;     // comm id it was derived from
  uint32_t created_by = 0;    // function id of the creating call
  // The members, world ranks in comm rank order, as runs of consecutive
  // ranks: first, count, first, count ... (a communicator over every rank
  // is one run). The reader checks them against the world size.
  std::vector<int64_t> runs;
  std::vector<int64_t> members() const;  // the runs written out
};
// World ranks as CommInfo::runs.
std::vector<int64_t> runs_of_ranks(const int64_t* ranks, size_t n);
struct DatatypeInfo {
  uint32_t id = 0;
  int64_t size = 0;  // bytes
  std::string name;
};

// "module+0xoffset" per frame (module base name), innermost first, joined by
// "<"; "?" for no frames. Used by every reader that prints call sites.
std::string format_callsite(const std::vector<Frame>& frames, const std::vector<std::string>& modules);

enum class TraceEnd {
  kFinalized,  // MPI_Finalize ran; the file is complete
  kAborted,    // MPI_Abort ran; complete up to the abort
  kTruncated,  // the process died (or the disk filled): readable up to the last complete chunk
};
const char* trace_end_name(TraceEnd e);

// Calls whose `reqs` name requests made earlier (completed, started or
// freed or cancelled): Wait*, Test*, Start*, Request_free, Cancel. Any other call with one
// request creates it.
bool uses_requests(uint32_t func);
// Calls that create one request: Isend and its kinds, Irecv, the persistent
// *_init calls and the non-blocking collectives.
bool creates_request(uint32_t func);
// The persistent ones among them: Send_init and its kinds, Recv_init.
bool creates_persistent_request(uint32_t func);
// How a call completes requests: kWait (MPI_Wait, MPI_Waitall: one call,
// whatever the timing), kPoll (MPI_Test, MPI_Testall: how many calls, the
// timing decides), kChoose (MPI_Waitany, Waitsome, Testany, Testsome: which
// requests each call completes, too); kNone for every other call.
enum class Completion : uint8_t { kNone, kWait, kPoll, kChoose };
Completion completion_of(uint32_t func);

// What a point-to-point call does with a message (persistent Send_init /
// Recv_init and Start* excluded): kSend, peer the destination (blocking or
// not); kRecv, peer the source (MPI_Recv, MPI_Irecv); kSendRecv, peer the
// destination and peer2 the source (MPI_Sendrecv, MPI_Sendrecv_replace).
enum class MessageRole { kNone, kSend, kRecv, kSendRecv };
MessageRole message_role(uint32_t func);

// Reads one rank file. Events are decoded one chunk at a time; memory stays
// proportional to one chunk plus the definition tables.
class TraceFile {
 public:
  // Throws TraceError if the file can not be opened or its header is bad.
  explicit TraceFile(const std::string& path);
  ~TraceFile();
  TraceFile(const TraceFile&) = delete;
  TraceFile& operator=(const TraceFile&) = delete;

  const std::string& path() const { return path_; }
  const TraceHeader& header() const { return header_; }

  // Next event, false at the end of the trace. A damaged chunk or record
  // throws TraceError; a file cut inside a chunk just ends (end() says so).
  bool next(Event& ev);

  // Valid once next() returned false.
  TraceEnd end() const { return end_; }
  uint64_t events_read() const { return next_seq_; }

  // Definition tables, filled as records are read (complete after the last event).
  const std::vector<std::string>& modules() const { return modules_; }
  const std::map<uint32_t, Callsite>& callsites() const { return callsites_; }
  const std::map<uint32_t, CommInfo>& comms() const { return comms_; }
  const std::map<uint32_t, DatatypeInfo>& datatypes() const { return datatypes_; }
  const std::map<uint32_t, std::string>& ops() const { return ops_; }

  // Size in bytes of a datatype id (predefined ones after their definition record), -1 if unknown.
  int64_t datatype_size(int64_t id) const;
  // "module+0xoffset" for a callsite (innermost frame), "?" if unknown.
  std::string callsite_name(uint32_t id) const;

 private:
  bool load_chunk();
  bool decode_record(Event& ev);  // false when the chunk is exhausted
  [[noreturn]] void fail(const std::string& what) const;

  std::string path_;
  struct Io;
  std::unique_ptr<Io> io_;
  TraceHeader header_;
  TraceEnd end_ = TraceEnd::kTruncated;
  bool done_ = false;
  uint64_t next_seq_ = 0;
  int64_t prev_end_ns_ = 0;
  std::vector<std::string> modules_;
  std::map<uint32_t, Callsite> callsites_;
  std::map<uint32_t, CommInfo> comms_;
  std::map<uint32_t, DatatypeInfo> datatypes_;
  std::map<uint32_t, std::string> ops_;
};

// A whole trace directory: rank-00000.skt ... rank-(P-1).skt of one run.
class TraceDir {
 public:
  // Throws TraceError for a missing directory, no rank files, missing ranks,
  // files of different runs or world sizes.
  explicit TraceDir(const std::string& dir);
  const std::string& dir() const { return dir_; }
  uint32_t world_size() const { return world_size_; }
  const std::string& rank_path(uint32_t rank) const { return paths_.at(rank); }
  std::unique_ptr<TraceFile> open_rank(uint32_t rank) const;

  static std::string rank_file_name(uint32_t rank);  // "rank-00000.skt"
  // Where the tracer puts the files of a world started by MPI_Comm_spawn:
  // a subdirectory "spawned-<run id, 16 hex digits>" of the parents' trace
  // directory (a trace directory of its own, merged on its own).
  static std::string spawned_dir_name(uint64_t run_id);
  // The spawned worlds' subdirectories of a trace directory, sorted.
  static std::vector<std::string> spawned_worlds(const std::string& dir);
  // The runs of `skelgen trace --runs N -o DIR`: DIR/run-1 ... DIR/run-N,
  // each a trace directory of its own. The subdirectories "run-<number>" of
  // dir, by number, as paths (dir/run-1, ...); empty when dir holds rank
  // files itself (one run) or no such subdirectory.
  static std::string run_dir_name(uint32_t run);  // "run-1"
  static bool is_run_dir_name(const std::string& name);  // "run-" and 1 to 8 digits
  static std::vector<std::string> run_dirs(const std::string& dir);

  // What `skelgen trace --compare-untraced` measured, kept beside the rank
  // files (or the run directories) in DIR/untraced.txt, one line
  // (docs/trace-format.md, "untraced.txt"):
  //   SKELGEN_UNTRACED traced_s=<s> untraced_s=<s> runs=<n>
  // the medians of the n traced runs (MPI_Init to MPI_Finalize, slowest
  // rank, on the trace's clock) and of the n untraced runs.
  struct UntracedComparison {
    double traced_s = 0, untraced_s = 0;
    uint32_t runs = 0;
  };
  static std::string untraced_file_name();  // "untraced.txt"
  // Writes dir/untraced.txt as a new file (never through a symlink); throws
  // TraceError naming the file.
  static void write_untraced(const std::string& dir, const UntracedComparison& c);
  // The comparison of trace directory `dir`, or of its parent where dir is
  // one of its runs (dir/run-N); runs = 0 where there is none. Throws
  // TraceError naming the file where it is not such a line.
  static UntracedComparison read_untraced(const std::string& dir);

 private:
  std::string dir_;
  uint32_t world_size_ = 0;
  std::vector<std::string> paths_;
};

}  // namespace skt
