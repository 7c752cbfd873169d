// The tracer's core, shared by the generated and the hand-written wrappers.
// Compiled once per MPI library (it sees that library's mpi.h).
//
// Every wrapper has the same shape:
//   return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
//     if (!enter()) return PMPI_X(...);     // not tracing, or nested inside another wrapper
//     Rec r(func_id, ret);
//     r.t0 = now_ns(); rc = PMPI_X(...); r.t1 = now_ns();
//     fill r from the arguments; record(r); leave(); return rc;
//   });
// record() turns handles into symbolic ids, local ranks into world ranks,
// writes the event, and never throws or aborts: on an I/O error it warns
// once on stderr and tracing stops while the application goes on.
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <type_traits>

#include "skel/trace_format.h"

namespace skt::tracer {

// What a call leaves on the stack below its caller is what a program reads
// from a local it never set. Untraced, that is the MPI library's leftovers;
// traced, it was the wrappers' own data: PRK's AMR kernel passes an unset
// send-buffer pointer to MPI_Alltoallv where it sends nothing, and traced
// (MPICH, 2 ranks, -O2) the pointer read as MPI_IN_PLACE and the run hung
// where the untraced one completed. So a wrapper does its work in a frame of
// its own (body: a lambda marked SKT_OWN_FRAME, given the application's
// return address), and then scrub_stack() zeroes the kScrubBytes below the
// wrapper's frame, where that frame, record()'s and the top of the MPI
// library's were: an unset local reads 0 (test stack_reuse_<mpi>). 1 KiB
// covers the tracer's own frames and costs a few ns a call; 2 KiB cost
// about 40 ns more (libtrace/bench/overhead.sh).
#define SKT_OWN_FRAME __attribute__((noinline))
inline constexpr std::size_t kScrubBytes = 1024;
void scrub_stack();
template <typename Body>
inline __attribute__((always_inline)) auto scrubbed(const void* ret, Body&& body) {
  if constexpr (std::is_void_v<decltype(body(ret))>) {
    body(ret);
    scrub_stack();
  } else {
    const auto rc = body(ret);
    scrub_stack();
    return rc;
  }
}

// Raw CLOCK_MONOTONIC in ns.
int64_t now_ns();

// True when this call is to be recorded; then the caller must call leave().
// It notes the entry time (mark_entry).
bool enter();
void leave();
// Where a wrapper does not go through enter() (MPI_Finalize): note the entry
// time of the call on the wall clock and, in GapClock::kThreadCpu traces, the
// thread's CPU clock.
void mark_entry();
// The wall clock read at the entry mark_entry() noted: the call's start where
// the wrapper does no work of its own before the call.
int64_t entry_ns();
// Nesting guard without the recording check (MPI_Init / MPI_Finalize wrappers).
bool nested();
void push();
void pop();

// Whether the tracer records at all (started and not disabled by an error).
bool recording();

// What one call recorded. Ranks are local to `comm` (translated in record()).
struct Rec {
  Rec(uint32_t func_id, const void* return_address) : func(func_id), ret(return_address) {}
  uint32_t func;
  const void* ret;
  int64_t t0 = 0, t1 = 0;
  uint64_t flags = 0;
  MPI_Comm comm = MPI_COMM_NULL;
  bool has_comm = false;
  int64_t peer = kNone, tag = kNone, count = kNone;   // peer: local rank, kProcNull, or kNone
  int64_t peer2 = kNone, tag2 = kNone, count2 = kNone;
  MPI_Datatype dtype = MPI_DATATYPE_NULL, dtype2 = MPI_DATATYPE_NULL;
  int64_t root = kNone;                                 // local rank in comm
  MPI_Op op = MPI_OP_NULL;
  int64_t bytes = kNone, bytes2 = kNone;
  const int* counts = nullptr;
  int ncounts = 0;
  const int* counts2 = nullptr;
  int ncounts2 = 0;
  const int* dims = nullptr;
  const int* periods = nullptr;
  int ndims = 0;
  int64_t color = kNone, key = kNone;
  // Requests: one created (req_out), or a list of ids already resolved
  // (start / completion / free), with the matched sources of completions.
  bool has_new_request = false;
  MPI_Request new_request = MPI_REQUEST_NULL;
  uintptr_t new_request_at = 0;  // the address the program keeps it at (request_info)
  const int64_t* req_ids = nullptr;
  const int64_t* req_sources = nullptr;
  int nreqs = 0;
  // Communicator life cycle.
  bool has_new_comm = false;
  MPI_Comm new_comm = MPI_COMM_NULL;
  bool frees_comm = false;
  // Datatype committed by this call (gets a fresh id).
  bool has_commit = false;
  MPI_Datatype committed = MPI_DATATYPE_NULL;
  // MPI_Finalize: the kernel's rate over the run and its number of samples.
  int64_t kernel_rate = kNone, kernel_samples = kNone;

  void set_comm(MPI_Comm c) {
    comm = c;
    has_comm = true;
  }
  void set_dest(int d) { peer = d == MPI_PROC_NULL ? (flags |= kFlagProcNull, kProcNull) : d; }
  // A receive source: MPI_ANY_SOURCE is resolved from the status when there is one.
  void set_src(int s, const MPI_Status* st) { peer = resolve_src(s, st); }
  void set_src2(int s, const MPI_Status* st) { peer2 = resolve_src(s, st); }
  // The trace's values for MPI's wildcards (skel/trace_format.h), whatever
  // the MPI library's own constants are.
  void set_tag(int t) {
    tag = t;
    if (t == MPI_ANY_TAG) flags |= kFlagAnyTag, tag = kAnyTag;
  }
  void set_color(int c) { color = c == MPI_UNDEFINED ? kUndefined : c; }
  void set_root(int r) { root = r; }

 private:
  int64_t resolve_src(int s, const MPI_Status* st) {
    if (s == MPI_PROC_NULL) {
      flags |= kFlagProcNull;
      return kProcNull;
    }
    if (s != MPI_ANY_SOURCE) return s;
    flags |= kFlagAnySource;
    return st ? st->MPI_SOURCE : kNone;
  }
};

void record(Rec& r);

// Forwarded sends. note_received: a blocking receive of `count` `dtype`
// filled `buf` (the thread's last; its extent, lower bound included).
// note_send_buffer: flags `r` kFlagForwards when the `count` `dtype` at
// `buf` lie within that range: the application sends what it has just
// received, from a buffer in its cache, which the skeleton then does too
// (docs/tracer.md).
void note_received(const void* buf, int count, MPI_Datatype dtype);
void note_send_buffer(Rec& r, const void* buf, int count, MPI_Datatype dtype);

// Matched probes (MPI_Mprobe, MPI_Improbe): the message a probe matched is
// noted by its handle, and the receive that takes it (MPI_Mrecv, MPI_Imrecv)
// is recorded with the probe's communicator, source and tag (local to the
// communicator; a handle not noted gives MPI_COMM_NULL and no source or tag).
struct ProbedMessage {
  MPI_Comm comm = MPI_COMM_NULL;
  int source = MPI_PROC_NULL;
  int tag = MPI_ANY_TAG;
};
void note_message(MPI_Message m, MPI_Comm comm, const MPI_Status* status);
ProbedMessage take_message(MPI_Message m);

// Size of a communicator / this process's rank in it (0 / -1 on error).
int comm_size(MPI_Comm c);
int comm_rank(MPI_Comm c);
int cart_dims(MPI_Comm c);
// The numbers of in- and out-neighbours of comm's topology (0 without one),
// and count x size(dtype) x degree: a neighbourhood collective's bytes.
struct NeighborDegrees {
  int in = 0, out = 0;
};
NeighborDegrees neighbor_degrees(MPI_Comm c);
int64_t neighbor_bytes(int count, MPI_Datatype dtype, int degree);
// Alltoallw bytes: sum of counts[i] * size(types[i]) over n ranks.
int64_t bytes_w(const int* counts, const MPI_Datatype* types, int n);
int64_t bytes_w_f(const MPI_Fint* counts, const MPI_Fint* types, int n);

// Requests. Before a completion call: the tracer's id for a handle (kNone if
// unknown) and whether it is a receive posted with MPI_ANY_SOURCE.
struct RequestInfo {
  int64_t id = kNone;
  bool any_source_recv = false;
  bool persistent = false;
  bool shared = false;  // other live requests share this handle (MPI_PROC_NULL ones)
  bool by_address = false;  // told apart from them by where the program keeps it
  uint32_t comm_id = 0;
};
// One handle can stand for several live requests (e.g. MPI_PROC_NULL ones):
// the one made at `at`, the address of the program's MPI_Request (or
// MPI_Fint) it was made into; where none was made there (0: unknown), nth,
// how many earlier positions of the same call hold the same handle, picks
// the nth oldest.
RequestInfo request_info(MPI_Request h, int nth, uintptr_t at);
// After completion: forget non-persistent requests; after Request_free: forget.
void request_done(MPI_Request h_before, const RequestInfo& info);
void request_freed(MPI_Request h_before, const RequestInfo& info);
int64_t world_rank_of(uint32_t comm_id, int local_rank);

// Start / end of the run (hand-written wrappers).
void start(int64_t t0, int64_t t1, uint32_t func, const void* ret, int thread_level_provided, bool fortran);
// Timing-only mode (SKELTRACE_TIME_FILE, used by `skelgen time`): writes the
// slowest rank's MPI_Init-return to MPI_Finalize-entry time; before PMPI_Finalize.
void before_finalize();
void finish(int64_t t0, int64_t t1, const void* ret, bool fortran);  // after PMPI_Finalize
// Merging inside the job (SKELTRACE_MERGE_IN_JOB): before PMPI_Finalize, the
// file is finished (MPI_Finalize recorded as taking no time) and the ranks
// merge their files while MPI still runs; finish() afterwards does nothing.
void finish_in_job(int64_t t0, const void* ret, bool fortran);
void abort_flush(const void* ret, MPI_Comm comm, int errorcode, bool fortran);  // before PMPI_Abort

}  // namespace skt::tracer
