// How much memory the offline tools (merge, compress, generate) may use, and
// running out of it as an error rather than the kernel's OOM killer.
#pragma once

#include <cstdint>

namespace skt::mem {

// Bytes of memory available now: the SKELGEN_MEMORY_GB environment
// variable's (a positive number of GB, 10^9 bytes) where set, else
// MemAvailable of /proc/meminfo; 0 where neither says.
uint64_t available_bytes();

// Caps this process's address space at what it maps now plus
// available_bytes(), so that running out of memory throws std::bad_alloc
// (which skelgen reports in one line) instead of the kernel killing the
// process, and perhaps the user's other work, later. Programs it starts
// (a compiler) inherit the cap. Not in sanitizer builds (their shadow
// memory is terabytes of address space). Returns the bytes the cap leaves
// for this process to allocate, 0 where it set none.
uint64_t cap_address_space();

}  // namespace skt::mem
