// The values a trace may hold. A file whose framing and checksums are fine
// may still be corrupt or written by hand to do harm: a gap of 36 years, a
// kernel rate of 1e300 or NaN, rank 10^6 of a world of 2, 2^62 elements,
// a loop run 2^64 times. Each reader's caller asks these checks before it
// uses what it read, and refuses the file with the one value named, instead
// of generating a skeleton that computes for years, sends petabytes, aborts
// in MPI or allocates the machine's memory (docs/trace-format.md, "Value
// bounds").
#pragma once

#include <cstdint>
#include <string>

#include "skel/folded.h"
#include "skel/merged.h"
#include "skel/trace.h"

namespace skt::bounds {

// No gap, call or run is longer than a year (ns).
inline constexpr int64_t kMaxTimeNs = 366LL * 24 * 3600 * 1000000000LL;
// Reference-kernel units per second (one unit is 128 flops): a thousand
// times the fastest core's; 0 is "not calibrated" and is refused elsewhere.
inline constexpr double kMaxKernelRate = 1e12;
// Element counts and tags are C ints (MPI's large-count _c calls are not traced).
inline constexpr int64_t kMaxCount = 2147483647;
inline constexpr int64_t kMaxTag = 2147483647;
// One message, or one rank's part of a collective: a pebibyte.
inline constexpr int64_t kMaxBytes = int64_t{1} << 50;
// A phase or profile factor of a node's computation (a multiple of its mean).
inline constexpr double kMaxFactor = 1e9;

// What is wrong with the header of a rank trace, or "" if nothing.
std::string header_problem(const TraceHeader& h);
// What is wrong with event ev of the rank trace f (its values against the
// world size and the file's own definitions), or "" if nothing.
std::string event_problem(const TraceFile& f, const Event& ev);
// What is wrong with the values of a merged trace (its tables, events and,
// with_times, every rank's times; thread streams too), or "" if nothing.
std::string merged_problem(const MergedTrace& m, bool with_times);
// What is wrong with a folded program's loops, statistics and rules (its
// symbols are checked by merged_problem when they are read), or "".
std::string folded_problem(const FoldedProgram& p);

}  // namespace skt::bounds
