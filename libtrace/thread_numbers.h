// The calling thread's number (thread_numbers.cpp): 0 for the process's
// first thread, 1 .. kMaxThreads for the threads it created.
#pragma once

#include <cstdint>

#include "skel/trace_format.h"

namespace skt::tracer {

uint32_t thread_number();

}  // namespace skt::tracer
