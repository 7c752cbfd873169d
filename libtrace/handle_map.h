// A small open-addressing hash map from MPI handle bits (or return
// addresses) to small values (64-bit by default), for the tracer's hot
// path: no allocation per lookup or insert (only when it grows), linear
// probing, backward-shift deletion. Key 0 is reserved as "empty"; callers never store it
// (MPI_REQUEST_NULL etc. are never inserted, see tracer_core.cpp).
#pragma once

#include <cstdint>
#include <vector>

namespace skt::tracer {

template <typename Value>
class BasicHandleMap {
 public:
  explicit BasicHandleMap(size_t initial_capacity = 256) { slots_.resize(pow2(initial_capacity)); }

  const Value* find(uint64_t key) const {
    if (key == 0) return nullptr;
    size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      if (slots_[i].key == key) return &slots_[i].value;
      if (slots_[i].key == 0) return nullptr;
    }
  }

  void put(uint64_t key, const Value& value) {
    if (key == 0) return;
    if ((size_ + 1) * 2 > slots_.size()) grow();
    size_t mask = slots_.size() - 1;
    for (size_t i = hash(key) & mask;; i = (i + 1) & mask) {
      if (slots_[i].key == key) {
        slots_[i].value = value;
        return;
      }
      if (slots_[i].key == 0) {
        slots_[i] = Slot{key, value};
        ++size_;
        return;
      }
    }
  }

  void erase(uint64_t key) {
    if (key == 0) return;
    size_t mask = slots_.size() - 1;
    size_t i = hash(key) & mask;
    while (slots_[i].key != key) {
      if (slots_[i].key == 0) return;
      i = (i + 1) & mask;
    }
    // Backward-shift: move later entries of the probe run into the hole.
    for (size_t j = (i + 1) & mask; slots_[j].key != 0; j = (j + 1) & mask) {
      size_t home = hash(slots_[j].key) & mask;
      bool movable = (i <= j) ? (home <= i || home > j) : (home <= i && home > j);
      if (movable) {
        slots_[i] = slots_[j];
        i = j;
      }
    }
    slots_[i] = Slot{};
    --size_;
  }

  size_t size() const { return size_; }

 private:
  struct Slot {
    uint64_t key = 0;
    Value value{};
  };
  static size_t pow2(size_t n) {
    size_t p = 16;
    while (p < n) p <<= 1;
    return p;
  }
  static size_t hash(uint64_t k) {
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return static_cast<size_t>(k);
  }
  void grow() {
    std::vector<Slot> old;
    old.swap(slots_);
    slots_.assign(old.size() * 2, Slot{});
    size_ = 0;
    for (const Slot& s : old)
      if (s.key) put(s.key, s.value);
  }

  std::vector<Slot> slots_;
  size_t size_ = 0;
};
using HandleMap = BasicHandleMap<uint64_t>;

}  // namespace skt::tracer
