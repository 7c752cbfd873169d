// Byte-level encoding shared by the trace writer and reader:
// little-endian fixed-width integers and LEB128 varints (zigzag for signed).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

namespace skt::codec {

inline void put_u8(std::string& out, uint8_t v) { out.push_back(static_cast<char>(v)); }
inline void put_u16(std::string& out, uint16_t v) {
  for (int i = 0; i < 2; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put_u32(std::string& out, uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put_u64(std::string& out, uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
inline void put_f64(std::string& out, double d) {
  uint64_t v;
  std::memcpy(&v, &d, sizeof v);
  put_u64(out, v);
}
inline void put_str(std::string& out, const std::string& s) {
  put_u32(out, static_cast<uint32_t>(s.size()));
  out.append(s);
}

inline uint64_t zigzag(int64_t v) { return (static_cast<uint64_t>(v) << 1) ^ static_cast<uint64_t>(v >> 63); }
inline int64_t unzigzag(uint64_t v) { return static_cast<int64_t>(v >> 1) ^ -static_cast<int64_t>(v & 1); }

// Appends a varint to a raw buffer; returns the new end. Needs up to 10 bytes.
inline uint8_t* put_varint(uint8_t* p, uint64_t v) {
  while (v >= 0x80) {
    *p++ = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  *p++ = static_cast<uint8_t>(v);
  return p;
}

// Bounds-checked reading cursor. Every getter returns false (and leaves the
// output untouched) when the input ends or a varint is malformed.
// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320) of n bytes; chunk
// headers carry it (docs/trace-format.md). Bitwise: it runs on 40 bytes a chunk.
inline uint32_t crc32(const void* data, size_t n) {
  const auto* p = static_cast<const uint8_t*>(data);
  uint32_t c = 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= p[i];
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xedb88320u & (0u - (c & 1u)));
  }
  return ~c;
}

class Cursor {
 public:
  Cursor(const uint8_t* data, size_t size) : p_(data), end_(data + size) {}
  size_t remaining() const { return static_cast<size_t>(end_ - p_); }
  bool at_end() const { return p_ == end_; }

  bool varint(uint64_t& v) {
    uint64_t r = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ == end_) return false;
      uint8_t b = *p_++;
      r |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) {
        v = r;
        return true;
      }
    }
    return false;  // more than 10 bytes: malformed
  }
  bool svarint(int64_t& v) {
    uint64_t u;
    if (!varint(u)) return false;
    v = unzigzag(u);
    return true;
  }
  bool bytes(size_t n, const uint8_t*& out) {
    if (remaining() < n) return false;
    out = p_;
    p_ += n;
    return true;
  }
  template <typename T>
  bool le(T& v) {  // little-endian unsigned fixed-width integer
    if (remaining() < sizeof(T)) return false;
    uint64_t r = 0;
    for (size_t i = 0; i < sizeof(T); ++i) r |= static_cast<uint64_t>(p_[i]) << (8 * i);
    p_ += sizeof(T);
    v = static_cast<T>(r);
    return true;
  }
  bool f64(double& d) {
    uint64_t v;
    if (!le(v)) return false;
    std::memcpy(&d, &v, sizeof d);
    return true;
  }
  bool str(std::string& s, size_t max_len = 1u << 20) {
    uint32_t n;
    const uint8_t* b;
    if (!le(n) || n > max_len || !bytes(n, b)) return false;
    s.assign(reinterpret_cast<const char*>(b), n);
    return true;
  }

 private:
  const uint8_t* p_;
  const uint8_t* end_;
};

}  // namespace skt::codec
