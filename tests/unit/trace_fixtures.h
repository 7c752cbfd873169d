// Test helpers: write traces with known content through the real writer.
#pragma once

#include <cstdint>
#include <random>
#include <string>
#include <vector>

#include "skel/trace.h"
#include "skel/trace_writer.h"

namespace skt::testing {

// A header with every field set to something recognisable.
TraceHeader sample_header(uint32_t rank, uint32_t world, uint64_t run_id);

// n random events (random functions, fields, lists, times), reproducible from seed.
std::vector<Event> random_events(size_t n, uint32_t seed);

// Writes header + events (with the definitions they need) to path; returns
// the events as a reader must see them (bytes filled in).
std::vector<Event> write_trace(const std::string& path, const TraceHeader& h, const std::vector<Event>& events,
                               size_t buffer_bytes, EndStatus end, bool close = true);

std::string temp_dir(const std::string& tag);
std::string read_file(const std::string& path);
void write_file(const std::string& path, const std::string& bytes);

}  // namespace skt::testing
