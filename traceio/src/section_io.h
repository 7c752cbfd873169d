// Internal: the varint section encoding shared by merged traces and folded
// programs (docs/trace-format.md). Out appends; In reads with bounds checks
// and throws TraceError("<path>: corrupt <what> (<field>)").
#pragma once

#include <string>
#include <vector>

#include "skel/codec.h"
#include "skel/trace.h"

namespace skt::sections {

struct Out {
  std::string b;
  void u(uint64_t v) {
    uint8_t tmp[10];
    uint8_t* e = codec::put_varint(tmp, v);
    b.append(reinterpret_cast<char*>(tmp), static_cast<size_t>(e - tmp));
  }
  void s(int64_t v) { u(codec::zigzag(v)); }
  void f64(double d) { codec::put_f64(b, d); }
  void str(const std::string& x) {
    u(x.size());
    b += x;
  }
  void list(const std::vector<int64_t>& v) {
    u(v.size());
    for (int64_t x : v) s(x);
  }
  template <typename Id>
  void section(Id id, const Out& content) {
    u(static_cast<uint64_t>(id));
    u(content.b.size());
    b += content.b;
  }
};

struct In {
  codec::Cursor c;
  const std::string& path;
  const char* what;  // "merged trace", "folded program"
  const uint8_t* origin;  // start of the whole decompressed body (for offsets in errors)
  const uint8_t* end;
  In(const uint8_t* p, size_t n, const std::string& file, const char* kind, const uint8_t* body = nullptr)
      : c(p, n), path(file), what(kind), origin(body ? body : p), end(p + n) {}
  [[noreturn]] void bad(const char* field) const {
    const size_t at = static_cast<size_t>(end - origin) - c.remaining();
    throw TraceError(path + ": corrupt " + what + " (" + field + ") at byte " + std::to_string(at) +
                     " of its decompressed content");
  }
  uint64_t u(const char* field = "field") {
    uint64_t v;
    if (!c.varint(v)) bad(field);
    return v;
  }
  uint64_t count(const char* field) {  // a length that must fit in what remains
    uint64_t v = u(field);
    if (v > c.remaining() + 1) bad(field);
    return v;
  }
  int64_t s(const char* field = "field") {
    int64_t v;
    if (!c.svarint(v)) bad(field);
    return v;
  }
  std::string str(const char* field = "string") {
    uint64_t n = count(field);
    const uint8_t* b;
    if (!c.bytes(n, b)) bad(field);
    return std::string(reinterpret_cast<const char*>(b), n);
  }
  double f64() {
    double d;
    if (!c.f64(d)) bad("number");
    return d;
  }
  std::vector<int64_t> list(const char* field = "list") {
    std::vector<int64_t> v(count(field));
    for (auto& x : v) x = s(field);
    return v;
  }
};

// Calls f(id, in, data, size) for every section of a body (varint id,
// varint length, content), with `in` reading that section's content.
template <typename F>
void for_each_section(In& top, F f) {
  while (!top.c.at_end()) {
    uint64_t id = top.u("section id");
    uint64_t len = top.count("section length");
    const uint8_t* data;
    if (!top.c.bytes(len, data)) top.bad("section length");
    In in(data, len, top.path, top.what, top.origin);
    f(id, in, data, len);
  }
}

// A thread's section (merged trace: 14, folded program: 8): its number,
// where it ran among the first thread's merged events, then a whole body of
// the file's kind (docs/trace-format.md).
struct ThreadSection {
  uint32_t number = 0;
  int64_t fork_after = -1, join_before = -1;
  const uint8_t* body = nullptr;
  size_t size = 0;
};

template <typename Id>
void put_thread(Out& file, Id id, uint32_t number, int64_t fork_after, int64_t join_before, const std::string& body) {
  Out o;
  o.u(number);
  o.s(fork_after);
  o.s(join_before);
  o.b += body;
  file.section(id, o);
}

// `in` reads the section's `len` bytes at `d`.
inline ThreadSection get_thread(In& in, const uint8_t* d, uint64_t len) {
  ThreadSection t;
  const uint64_t number = in.u("thread number");
  if (number == 0 || number > static_cast<uint64_t>(kMaxThreads)) in.bad("thread number");
  t.number = static_cast<uint32_t>(number);
  t.fork_after = in.s("thread fork");
  t.join_before = in.s("thread join");
  if (t.fork_after < -1 || t.join_before < -1) in.bad("thread fork or join");
  t.size = in.c.remaining();
  t.body = d + (len - t.size);
  return t;
}

}  // namespace skt::sections
