// A merged trace: one event sequence for the whole program, in which each
// event knows which ranks take part and each rank's parameters (described
// compactly where a rule fits, by table otherwise), and each rank keeps its
// own computation gaps and call durations. Written by skelgen merge, read by
// every later stage. File layout: docs/trace-format.md, "Merged traces".
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "skel/trace.h"
#include "skel/trace_format.h"

namespace skt {

// The parameters a merged event describes per rank.
// New ones go at the end (a file says how many its events hold; a reader
// skips those it does not know). forwards: 1 where a send's buffer is what the rank's last blocking
// receive filled (trace flag kFlagForwards), 0 for other sends.
#define SKT_MERGED_PARAMS(X) \
  X(peer) X(peer2) X(tag) X(tag2) X(count) X(count2) X(bytes) X(bytes2) X(color) X(key) X(new_comm) X(forwards)

enum class Param : uint8_t {
#define SKT_PARAM_ENUM(name) name,
  SKT_MERGED_PARAMS(SKT_PARAM_ENUM)
#undef SKT_PARAM_ENUM
  kCount
};
inline constexpr size_t kNumParams = static_cast<size_t>(Param::kCount);
const char* param_name(Param p);
// A message's size: its count or bytes, either end.
inline bool count_like(Param p) {
  return p == Param::count || p == Param::count2 || p == Param::bytes || p == Param::bytes2;
}

// A list-valued field (counts of v-collectives, requests completed, Cart
// dims ...): one list for every rank, or one per rank. reqrefs: for each
// request a call completes, starts or frees, how many merged events back the
// call that created it is (-1: not in the trace). reqback (folded programs
// only, 1.2): the same requests counted back in the rank's own
// request-creating calls of the same kind, persistent (*_init) or not:
// 2k for the k-th latest ordinary request, 2k + 1 for the k-th latest
// persistent one (-1: not in the trace). It stays the same from one
// iteration of a loop to the next where a persistent request's distance in
// events grows, even with other requests made in the loop. pool (folded
// programs 2.1; docs/compress.md, "Request pools"): on a request-creating
// call whose requests form a pool, the pool's number, one value. A take
// from a pool, or a start into one, names no request of its own: its
// reqback is pool_reqback(number).
enum class ListField : uint8_t { counts, counts2, dims, periods, reqrefs, req_sources, reqback, pool, kCount };
inline constexpr size_t kNumListFields = static_cast<size_t>(ListField::kCount);
const char* list_field_name(ListField f);
inline int64_t pool_reqback(uint32_t pool) { return -2 - static_cast<int64_t>(pool); }
inline bool is_pool_reqback(int64_t back) { return back <= -2; }
inline uint32_t pool_of_reqback(int64_t back) { return static_cast<uint32_t>(-2 - back); }

// kTable: a is the offset of the table (one value per participating rank,
// in rank order) in the event's `tables`.
struct ParamDesc {
  ParamKind kind = ParamKind::kAbsent;
  int64_t a = 0, b = 0;
};

struct ListDesc {
  ListField field = ListField::counts;
  bool same = true;                         // one list for all participants
  std::vector<std::vector<int64_t>> lists;  // same ? {list} : one per participating rank
};

// What makes two calls "the same call" of the program.
// Whom a call names as its peer (the file stores the number).
enum class PeerClass : uint8_t {
  kNone = 0,       // no peer
  kRank = 1,       // a given rank, or MPI_PROC_NULL
  kAnySource = 2,  // MPI_ANY_SOURCE
};

struct Identity {
  uint32_t func = 0;
  uint32_t callsite = 0;     // index into MergedTrace::callsites
  int64_t comm = kNone;      // communicator symbol (index into MergedTrace::comms), or kNone
  int64_t dtype = kNone;     // index into MergedTrace::datatypes
  int64_t dtype2 = kNone;
  int64_t op = kNone;        // index into MergedTrace::ops
  int64_t root = kNone;      // world rank
  PeerClass peer_class = PeerClass::kNone;
  bool operator==(const Identity& o) const {
    return func == o.func && callsite == o.callsite && comm == o.comm && dtype == o.dtype && dtype2 == o.dtype2 &&
           op == o.op && root == o.root && peer_class == o.peer_class;
  }
};

struct MergedEvent {
  uint32_t identity = 0;        // index into MergedTrace::identities
  std::vector<uint32_t> ranks;  // participating world ranks, ascending
  ParamDesc params[kNumParams];
  std::vector<int64_t> tables;  // the values of kTable parameters
  std::vector<ListDesc> lists;  // only the list fields present, by field
  const ListDesc* find_list(ListField f) const {
    for (const ListDesc& l : lists)
      if (l.field == f) return &l;
    return nullptr;
  }
};

// A communicator of the program: created by one call (the same on every
// rank that made it); each rank may hold a different group (Comm_split).
struct CommSymbol {
  uint32_t created_by = 0;     // function id (0 for MPI_COMM_WORLD / MPI_COMM_SELF)
  int64_t callsite = kNone;
  int64_t parent = kNone;      // symbol
  uint32_t slot = 0;           // distinguishes live communicators made by one call
  std::vector<int64_t> dims, periods;            // Cartesian topology, if any
  // Each distinct group once (world ranks in comm rank order), and per world
  // rank the index of its group (-1: not a member): O(P) even for
  // MPI_COMM_WORLD, where every rank holds the same group.
  std::vector<std::vector<int64_t>> groups;
  std::vector<int32_t> group_of;

  // Per world rank r, r's place in its own group (members(r)), -1 where r is
  // not in it: O(1) lookups where the Cartesian rule asks every rank's
  // coordinates (a linear search there made the merge O(P^2) per event).
  // Filled by index_members() once groups and group_of are final (load,
  // read_merged); empty: not indexed, and comm_rank() searches.
  std::vector<int32_t> rank_in_group;

  // World ranks of rank r's group (empty if r is not a member).
  const std::vector<int64_t>& members(uint32_t r) const {
    static const std::vector<int64_t> none;
    return r < group_of.size() && group_of[r] >= 0 ? groups[static_cast<size_t>(group_of[r])] : none;
  }
  // r's rank in its own group (its first place in members(r)), or -1.
  int64_t comm_rank(uint32_t r) const;
  void index_members();
};

// What a merged trace keeps of one rank's trace header and end.
struct MergedRankInfo {
  std::string hostname, mpi_library, executable, command_line, kernel_name;
  uint32_t kernel_version = 0;
  double kernel_units_per_s = 0;
  double gap_floor_ns = 0, cpu_gap_floor_ns = 0;  // TraceHeader's (0: not measured)
  TraceEnd end = TraceEnd::kFinalized;
  uint64_t events = 0;
};

struct MergedRank : MergedRankInfo {
  std::vector<int64_t> gaps, durations;  // ns, one per event of this rank, in merged order
  // ns of the rank's thread CPU time over each gap, as gaps; empty unless the
  // rank was traced with GapClock::kThreadCpu (its kernel rate is then per CPU second)
  std::vector<int64_t> works;
  // ns of each gap the rank was blocked (asleep, waiting for I/O; trace
  // field kBlocked), as gaps; empty where the rank never was
  std::vector<int64_t> blocked;
};

struct MergedTrace {
  uint32_t world_size = 0;
  uint64_t run_id = 0;
  uint32_t lookahead = 0;
  std::string source;  // trace directory it was merged from
  std::vector<MergedRank> ranks;
  std::vector<std::string> modules;
  std::vector<std::vector<Frame>> callsites;
  std::vector<DatatypeInfo> datatypes;  // id = index
  std::vector<std::string> ops;
  std::vector<CommSymbol> comms;        // 0 = MPI_COMM_WORLD, 1 = MPI_COMM_SELF
  std::vector<Identity> identities;
  std::vector<MergedEvent> events;

  // MPI_THREAD_MULTIPLE traces (docs/merge.md, "Threads"): the calls of
  // each thread other than the first, merged on their own over the same
  // tables, by thread number. A thread's stream has no threads of its own;
  // its `thread` is its number and it ran between two of the first thread's
  // merged events: started after event fork_after (-1: at the start) and
  // was done before event join_before (-1: at the end), on every rank.
  std::vector<MergedTrace> threads;
  uint32_t thread = 0;
  int64_t fork_after = -1, join_before = -1;

  // A copy without the events and the per-rank times: the tables only.
  MergedTrace tables() const;

  // The value of parameter p of event e for world rank r (which must take part).
  int64_t value(const MergedEvent& e, Param p, uint32_t r) const;
  // The same for the rank at index k of e.ranks: no search for a per-rank table (walks over e.ranks).
  int64_t value_at(const MergedEvent& e, Param p, size_t k) const;
  // The list of field f of event e for rank r (empty if absent).
  const std::vector<int64_t>& list(const MergedEvent& e, ListField f, uint32_t r) const;
  const std::vector<int64_t>& list_at(const MergedEvent& e, ListField f, size_t k) const;  // r = e.ranks[k]
  // Index of r among e.ranks, or -1.
  static int64_t position(const MergedEvent& e, uint32_t r);
  // "rank+1 mod P", "64", "table" ...
  std::string describe(const MergedEvent& e, Param p) const;
  std::string callsite_name(uint32_t cs) const;

 private:
  // value() and value_at(), list() and list_at(): r's index in e.ranks asked only where needed.
  template <typename Position>
  int64_t value_of(const MergedEvent& e, Param p, uint32_t r, Position position_of_r) const;
  template <typename Position>
  static const std::vector<int64_t>& list_of(const MergedEvent& e, ListField f, Position position_of_r);
};

// File I/O. Throws TraceError with the path and the problem.
void write_merged(const std::string& path, const MergedTrace& m);
MergedTrace read_merged(const std::string& path);
bool is_merged_file(const std::string& path);  // by magic number

// Building blocks shared with the folded-program file (skel/folded.h): the
// merged sections without the file header, and the common file envelope
// (8-byte magic, u16 major, u16 minor, u32 0, one zstd frame).
std::string encode_merged_body(const MergedTrace& m, bool with_times);
MergedTrace decode_merged_body(const uint8_t* data, size_t size, const std::string& path, bool with_times);
void write_compressed_file(const std::string& path, const char* magic, uint16_t major, uint16_t minor,
                           const std::string& body);
std::string read_compressed_file(const std::string& path, const char* magic, uint16_t major_supported,
                                 const char* what);

}  // namespace skt
