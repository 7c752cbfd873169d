// The skelgen trace format: the one place that defines it.
//
// Writer (libtrace) and every reader include this header; the prose
// specification is docs/trace-format.md. Rules:
//   * all fixed-width fields are little-endian and written one at a time;
//   * new fields bump SKT_VERSION_MINOR (old readers skip them, see FieldType);
//   * a changed meaning bumps SKT_VERSION_MAJOR (readers refuse other majors).
// Nothing here holds runtime-only state.
#pragma once

#include <cstdint>

namespace skt {

// ---------------------------------------------------------------- file header
// offset type      field
//  0     char[8]   magic "SKELTRC" + '\0'
//  8     u16       major version
// 10     u16       minor version
// 12     u32       header body length in bytes (what follows, up to the first chunk)
// 16     ...       header body, see docs/trace-format.md (HeaderField order)
inline constexpr char kFileMagic[8] = {'S', 'K', 'E', 'L', 'T', 'R', 'C', '\0'};
// 1.1: kCpuGap, header gap clock; 1.2: kKernelRate, kKernelSamples; 1.3: kFlagForwards; 1.4: header gap floors
// 2.0: chunk headers carry a CRC-32 and payloads must have zstd's content
//      checksum (corruption is detected, not read as data); 1.x is refused.
// 2.1: kThread (MPI_THREAD_SERIALIZED and MULTIPLE ranks: the calling thread's number).
// 2.2: kCpuGap may be absent with GapClock::kThreadCpu (the gap was short and
//      not interrupted: its CPU time is its wall time); kBlocked.
inline constexpr uint16_t kVersionMajor = 2;
// 2.3: kMemberRuns (a communicator's members as runs of world ranks: the
//      Cartesian grid over every rank is one run, not P ranks in every file).
// 2.4: header core sharing (whether the node's ranks outnumbered its CPUs);
//      kTeamCpu (the CPU time of the rank's other threads over a gap).
inline constexpr uint16_t kVersionMinor = 4;
inline constexpr uint32_t kFixedHeaderBytes = 16;

// Clock the event times come from.
enum class ClockSource : uint8_t { kMonotonicNs = 1 };

// What the events' computation gaps were measured with (header, 1.1 on).
// kWall: only the wall-clock gap (time stream). kThreadCpu: each event also
// carries Field::kCpuGap, the calling thread's CPU time over the gap, and the
// kernel rate is per CPU second: what a rank computed when it shared a core
// with other ranks (the tracer's choice: SKELTRACE_GAP_CLOCK).
enum class GapClock : uint8_t { kWall = 0, kThreadCpu = 1 };

// Whether the ranks on the traced rank's node outnumbered the CPUs they could
// run on (header, 2.4 on; kUnknown in older files, and where the user chose
// the gap clock: SKELTRACE_GAP_CLOCK=cpu or wall). A kThreadCpu trace of a
// rank that had CPUs enough and made every MPI call from one thread (an
// OpenMP program that asked for MPI_THREAD_MULTIPLE) is read by its wall-clock
// gaps: its thread CPU time leaves out the work of the rank's other threads.
enum class CoreSharing : uint8_t { kUnknown = 0, kOwnCores = 1, kShared = 2 };

// Which MPI library the tracer was built against.
enum class MpiFlavor : uint8_t { kUnknown = 0, kMpich = 1, kOpenMpi = 2 };

// ---------------------------------------------------------------- chunks
// Every chunk starts with this fixed 44-byte header:
// offset type  field
//  0     u32   chunk magic 0x48434B53 ("SKCH")
//  4     u8    chunk type (ChunkType)
//  5     u8    end status (EndStatus, end chunks only; 0 otherwise)
//  6     u16   reserved, 0
//  8     u32   number of event records in the chunk (end chunk: total events)
// 12     u64   sequence number of the first event in the chunk
// 20     i64   base time (ns): end time of the event before this chunk
// 28     u32   raw length of the record stream
// 32     u32   raw length of the time stream
// 36     u32   payload length (one zstd frame of record stream ++ time stream)
// 40     u32   CRC-32 (codec::crc32) of bytes 0..39 of this header (2.0)
// 44     payload
// Each chunk's payload is an independent zstd frame with its content size
// and content checksum; the reader refuses a frame without them.
inline constexpr uint32_t kChunkMagic = 0x48434B53u;
inline constexpr uint32_t kChunkHeaderBytes = 44;
inline constexpr uint32_t kChunkChecksumOffset = 40;
enum class ChunkType : uint8_t { kEvents = 1, kEnd = 2 };
enum class EndStatus : uint8_t { kFinalized = 0, kAborted = 1 };

// ---------------------------------------------------------------- records
// The record stream is a sequence of records, each:
//   varint kind, then kind-specific content, then tagged fields until tag 0.
// Event records: varint kind=kEvent, varint func id, varint callsite id,
//   tagged fields. Their times are in the time stream: per event
//   zigzag-varint gap (ns since the end of the previous event) then
//   varint duration (ns).
// Definition records (callsite, comm, datatype, op) carry an id field and
// describe it; a definition always precedes the first event that uses it.
enum class RecordKind : uint32_t {
  kEvent = 1,
  kCallsiteDef = 2,   // F_ID, F_FRAMES (pairs module id, offset)
  kModuleDef = 3,     // F_ID, F_NAME (path of the shared object / executable)
  kCommDef = 4,       // F_ID, F_PARENT, F_FUNC, F_MEMBERS (world ranks, in comm rank order)
  kDatatypeDef = 5,   // F_ID, F_SIZE, F_NAME
  kOpDef = 6,         // F_ID, F_NAME
};

// A tag is varint(field_id << 2 | FieldType). Unknown field ids are skipped
// by their type, which is what lets minor versions add fields.
enum class FieldType : uint32_t {
  kInt = 0,     // one zigzag varint
  kIntList = 1, // varint n, then n zigzag varints
  kString = 2,  // varint n, then n bytes
};

// Field ids, with the wire type each is written with (the writer's put_*
// call decides it; the column documents it). Never renumber, never reuse.
#define SKT_FIELDS(X)                                                          \
  X(kPeer, 1, kInt)        /* world rank of the peer (dest / matched source) */ \
  X(kTag, 2, kInt)                                                             \
  X(kCount, 3, kInt)       /* element count (send side) */                     \
  X(kDtype, 4, kInt)       /* datatype id (send side) */                       \
  X(kComm, 5, kInt)        /* communicator id */                               \
  X(kRoot, 6, kInt)        /* world rank of the root */                        \
  X(kOp, 7, kInt)          /* reduction op id */                               \
  X(kFlags, 8, kInt)       /* EventFlag bits */                                \
  X(kPeer2, 9, kInt)       /* receive side of Sendrecv */                      \
  X(kTag2, 10, kInt)                                                           \
  X(kCount2, 11, kInt)     /* receive count (Sendrecv, Gather, Alltoall ...) */\
  X(kDtype2, 12, kInt)                                                         \
  X(kReqs, 13, kIntList)   /* request ids created / started / completed / freed */ \
  X(kReqSources, 14, kIntList) /* per completed request: matched world source or -1 */ \
  X(kCounts, 15, kIntList) /* per-rank send counts (v-collectives) */           \
  X(kCounts2, 16, kIntList)/* per-rank receive counts (v-collectives) */        \
  X(kNewComm, 17, kInt)    /* communicator id created by this call */          \
  X(kColor, 18, kInt)                                                          \
  X(kKey, 19, kInt)                                                            \
  X(kDims, 20, kIntList)   /* Cart_create dims / Cart_sub remain_dims */        \
  X(kPeriods, 21, kIntList)                                                    \
  X(kBytes, 22, kInt)      /* total bytes when not count x dtype size (Alltoallw) */ \
  X(kBytes2, 23, kInt)                                                         \
  X(kCpuGap, 24, kInt)     /* thread CPU ns of the gap before the call (GapClock::kThreadCpu) */ \
  X(kKernelRate, 25, kInt) /* MPI_Finalize: the kernel's rate over the run, units per second of the gap clock */ \
  X(kKernelSamples, 26, kInt) /* MPI_Finalize: how many samples during the run that rate includes */ \
  X(kThread, 27, kInt)     /* (2.1) MPI_THREAD_SERIALIZED, MULTIPLE: the calling thread's number (absent: 0) */ \
  X(kBlocked, 28, kInt)    /* (2.2) GapClock::kThreadCpu: ns the thread was blocked (asleep, not waiting for a core) in the gap */ \
  X(kTeamCpu, 29, kInt)    /* (2.4) GapClock::kThreadCpu, the first thread: CPU ns the rank's other threads used since the last such read (an OpenMP team's work) */ \
  X(kId, 32, kInt)         /* definitions: the id being defined */             \
  X(kFrames, 33, kIntList) /* callsite: module id, offset, module id, offset ... */ \
  X(kName, 34, kString)                                                        \
  X(kSize, 35, kInt)                                                           \
  X(kMembers, 36, kIntList)                                                    \
  X(kParent, 37, kInt)                                                         \
  X(kFunc, 38, kInt)                                                           \
  X(kMemberRuns, 39, kIntList) /* (2.3) members as runs: first world rank, count, ... in comm rank order */

enum class Field : uint32_t {
#define SKT_FIELD_ENUM(name, id, type) name = id,
  SKT_FIELDS(SKT_FIELD_ENUM)
#undef SKT_FIELD_ENUM
};

// EventFlag bits (Field::kFlags).
enum EventFlag : uint32_t {
  kFlagAnySource = 1u << 0,  // the call was posted with MPI_ANY_SOURCE
  kFlagAnyTag = 1u << 1,     // posted with MPI_ANY_TAG
  kFlagInPlace = 1u << 2,    // send buffer was MPI_IN_PLACE (C callers only)
  kFlagProcNull = 1u << 3,   // peer was MPI_PROC_NULL
  kFlagFortran = 1u << 4,    // called through the Fortran binding
  kFlagTestFailed = 1u << 5, // a Test* / Iprobe that found nothing
  kFlagPersistent = 1u << 6, // the request(s) created are persistent
  kFlagForwards = 1u << 7,   // (1.3) a send whose data lie within the buffer the thread's last blocking receive filled
};

// Special values. Absent fields are not written; readers see kNone, a value
// no MPI integer argument can take (MPI_ANY_TAG, colours, keys may be negative).
inline constexpr int64_t kNone = INT64_MIN;
inline constexpr int64_t kNoSource = -1;      // in kReqSources: not a wildcard receive
inline constexpr int64_t kProcNull = -2;      // peer was MPI_PROC_NULL
inline constexpr int64_t kAnyTag = -1;        // tag was MPI_ANY_TAG (the call has kFlagAnyTag too)
inline constexpr int64_t kUndefined = -32766; // colour was MPI_UNDEFINED (Comm_split, Comm_split_type)
inline constexpr int64_t kUnknownComm = -3;   // a communicator the tracer did not see created
inline constexpr uint32_t kCommWorld = 0;     // symbolic id of MPI_COMM_WORLD
inline constexpr uint32_t kCommSelf = 1;      // symbolic id of MPI_COMM_SELF
inline constexpr uint32_t kFirstUserComm = 2;
inline constexpr int64_t kMaxThreads = 1023;  // Field::kThread: numbers 0 .. kMaxThreads

// Predefined datatype ids: stable, independent of any mpi.h. Derived types
// get ids from kFirstDerivedDatatype on, defined by kDatatypeDef records.
#define SKT_PREDEFINED_DATATYPES(X) \
  X(1, MPI_CHAR)                    \
  X(2, MPI_SIGNED_CHAR)             \
  X(3, MPI_UNSIGNED_CHAR)           \
  X(4, MPI_BYTE)                    \
  X(5, MPI_SHORT)                   \
  X(6, MPI_UNSIGNED_SHORT)          \
  X(7, MPI_INT)                     \
  X(8, MPI_UNSIGNED)                \
  X(9, MPI_LONG)                    \
  X(10, MPI_UNSIGNED_LONG)          \
  X(11, MPI_LONG_LONG)              \
  X(12, MPI_UNSIGNED_LONG_LONG)     \
  X(13, MPI_FLOAT)                  \
  X(14, MPI_DOUBLE)                 \
  X(15, MPI_LONG_DOUBLE)            \
  X(16, MPI_C_BOOL)                 \
  X(17, MPI_INT8_T)                 \
  X(18, MPI_INT16_T)                \
  X(19, MPI_INT32_T)                \
  X(20, MPI_INT64_T)                \
  X(21, MPI_UINT8_T)                \
  X(22, MPI_UINT16_T)               \
  X(23, MPI_UINT32_T)               \
  X(24, MPI_UINT64_T)               \
  X(25, MPI_C_DOUBLE_COMPLEX)       \
  X(26, MPI_FLOAT_INT)              \
  X(27, MPI_DOUBLE_INT)             \
  X(28, MPI_LONG_INT)               \
  X(29, MPI_2INT)                   \
  X(30, MPI_PACKED)                 \
  X(31, MPI_AINT)                   \
  X(32, MPI_OFFSET)                 \
  X(64, MPI_INTEGER)                \
  X(65, MPI_REAL)                   \
  X(66, MPI_DOUBLE_PRECISION)       \
  X(67, MPI_COMPLEX)                \
  X(68, MPI_DOUBLE_COMPLEX)         \
  X(69, MPI_LOGICAL)                \
  X(70, MPI_CHARACTER)              \
  X(71, MPI_2INTEGER)               \
  X(72, MPI_2DOUBLE_PRECISION)      \
  X(73, MPI_INTEGER4)               \
  X(74, MPI_INTEGER8)               \
  X(75, MPI_REAL4)                  \
  X(76, MPI_REAL8)
inline constexpr uint32_t kFirstDerivedDatatype = 256;

#define SKT_PREDEFINED_OPS(X) \
  X(1, MPI_SUM)               \
  X(2, MPI_MAX)               \
  X(3, MPI_MIN)               \
  X(4, MPI_PROD)              \
  X(5, MPI_LAND)              \
  X(6, MPI_BAND)              \
  X(7, MPI_LOR)               \
  X(8, MPI_BOR)               \
  X(9, MPI_LXOR)              \
  X(10, MPI_BXOR)             \
  X(11, MPI_MAXLOC)           \
  X(12, MPI_MINLOC)           \
  X(13, MPI_REPLACE)          \
  X(14, MPI_NO_OP)
inline constexpr uint32_t kFirstUserOp = 64;

// ---------------------------------------------------------------- merged traces
// A merged trace (skelgen merge) is one file:
//  0  char[8] magic "SKELMRG" + '\0'
//  8  u16     major version, 10 u16 minor version, 12 u32 reserved (0)
// 16  one zstd frame holding sections: varint section id, varint length,
//     content. Readers skip sections they do not know (minor versions add
//     sections; a changed meaning bumps the major). docs/trace-format.md.
inline constexpr char kMergedMagic[8] = {'S', 'K', 'E', 'L', 'M', 'R', 'G', '\0'};
inline constexpr uint16_t kMergedVersionMajor = 2;
// 2.0: every parameter in the events section (1.x kept those added after 1.1 in a section 12 of their
// own); 1.x files are refused (merge the trace directory again). The 1.x history is in git.
inline constexpr uint16_t kMergedVersionMinor = 0;
enum class MergedSection : uint32_t {
  kRun = 1,         // world size, run id, look-ahead used, source directory
  kRanks = 2,       // per rank: host, MPI library, kernel calibration, executable, end state, events
  kModules = 3,     // strings
  kCallsites = 4,   // per call site: frames (module, offset)
  kDatatypes = 5,   // per datatype: size, name
  kOps = 6,         // names
  kComms = 7,       // per communicator symbol: creation, dims/periods, per-rank members
  kIdentities = 8,  // per identity: func, callsite, comm, dtype, dtype2, op, root, peer class
  kEvents = 9,      // merged events: identity, participating ranks, parameter descriptions
  kTimes = 10,      // per rank: gap and duration of each of its events, in merged order
  kWork = 11,       // per rank: thread CPU time of each gap (GapClock::kThreadCpu ranks; 0 values otherwise)
  // 12: not used since 2.0
  kGapFloors = 13,  // per rank: the tracer's fixed cost in every gap, wall and thread CPU (trace header 1.4)
  kThread = 14,     // one per thread other than the first: number, fork_after, join_before, its merged body
  kBlocked = 15,    // per rank: blocked time in each gap (trace field kBlocked), as kWork; only if any
};

// ---------------------------------------------------------------- folded programs
// A folded program (skelgen compress) uses the same envelope as a merged
// trace with magic "SKELFLD" + '\0'; its sections (FoldedSection) hold the
// symbol table (a merged body whose events are one representative per
// symbol) and the loop tree with timing. docs/trace-format.md.
inline constexpr char kFoldedMagic[8] = {'S', 'K', 'E', 'L', 'F', 'L', 'D', '\0'};
inline constexpr uint16_t kFoldedVersionMajor = 2;
// 2.0: the symbols as a merged body 2.0; completions name their requests by reqback only (1.x before
// 1.2 by reqrefs). 1.x files are refused (fold again). The 1.x history is in git.
// 2.1: request pools (skel/merged.h: list field pool, pool_reqback); 2.0 files have none.
inline constexpr uint16_t kFoldedVersionMinor = 1;
enum class FoldedSection : uint32_t {
  kInfo = 1,     // source, merged events folded, flags
  kSymbols = 2,  // an embedded merged body (no times): events = symbols
  kNodes = 3,    // the loop tree: nodes with counts, children, timing, count rules
  kTop = 4,      // node indices of the top level
  kWork = 5,     // per node and rank: thread CPU time of its gap (traces with GapClock::kThreadCpu)
  kProfile = 6,  // the nodes whose computation drifts through the run: per rank, its course in parts
  kPhases = 7,   // the nodes whose computation differs by a cycle's phase: per rank, a factor per phase
  kThread = 8,   // one per thread other than the first: number, fork_after, join_before, its folded body
  kBlocked = 9,  // per node and rank: blocked time in its gap (merged kBlocked), as kWork; only if any
};

// How one parameter of a merged event is given for each participating rank r
// of a world of P ranks. Evaluation: skel/merged.h, ParamDesc::value.
enum class ParamKind : uint8_t {
  kAbsent = 0,   // the call has no such parameter
  kConst = 1,    // a
  kRel = 2,      // (r + a) mod P                      (peers of a periodic ring / torus)
  kRelOpen = 3,  // r + a, or MPI_PROC_NULL outside 0..P-1  (non-periodic shifts)
  kLinear = 4,   // a + b * r
  kCart = 5,     // neighbour at displacement b along dimension a of the event's Cartesian communicator
  kTable = 6,    // an explicit value per participating rank, in rank order
  kXor = 7,      // r XOR a                              (butterfly exchanges)
};

const char* predefined_datatype_name(uint32_t id);  // nullptr if not predefined
const char* predefined_op_name(uint32_t id);        // nullptr if not predefined

}  // namespace skt
