// The tracer's hash map against std::unordered_map as the oracle.
#include <gtest/gtest.h>

#include <random>
#include <unordered_map>

#include "handle_map.h"

TEST(HandleMap, AgreesWithUnorderedMapUnderRandomOperations) {
  for (uint64_t stride : {uint64_t{1}, uint64_t{4096}, uint64_t{1} << 32}) {
    skt::tracer::HandleMap m(16);
    std::unordered_map<uint64_t, uint64_t> oracle;
    std::mt19937_64 rng(stride);
    for (int op = 0; op < 200000; ++op) {
      uint64_t key = (rng() % 3000 + 1) * stride;  // clustered keys: long probe runs
      switch (rng() % 3) {
        case 0:
          m.put(key, op);
          oracle[key] = static_cast<uint64_t>(op);
          break;
        case 1:
          m.erase(key);
          oracle.erase(key);
          break;
        default: {
          const uint64_t* v = m.find(key);
          auto it = oracle.find(key);
          ASSERT_EQ(v != nullptr, it != oracle.end()) << "key " << key << " op " << op;
          if (v) ASSERT_EQ(*v, it->second);
        }
      }
      ASSERT_EQ(m.size(), oracle.size());
    }
    for (auto& [k, v] : oracle) {
      ASSERT_NE(m.find(k), nullptr);
      EXPECT_EQ(*m.find(k), v);
    }
  }
}

// The tracer keeps a live request's packed id and its MPI_Request address
// together: a value of two words, moved whole by the deletions' shifts.
TEST(HandleMap, KeepsValuesOfTwoWordsWhole) {
  struct Two {
    uint64_t a = 0, b = 0;
  };
  skt::tracer::BasicHandleMap<Two> m(16);
  std::unordered_map<uint64_t, std::pair<uint64_t, uint64_t>> oracle;
  std::mt19937_64 rng(7);
  for (int op = 0; op < 100000; ++op) {
    const uint64_t key = (rng() % 500 + 1) * 4096;
    if (rng() % 2) {
      m.put(key, Two{static_cast<uint64_t>(op), ~static_cast<uint64_t>(op)});
      oracle[key] = {static_cast<uint64_t>(op), ~static_cast<uint64_t>(op)};
    } else {
      m.erase(key);
      oracle.erase(key);
    }
  }
  ASSERT_EQ(m.size(), oracle.size());
  for (const auto& [k, v] : oracle) {
    const Two* t = m.find(k);
    ASSERT_NE(t, nullptr);
    EXPECT_EQ(t->a, v.first);
    EXPECT_EQ(t->b, v.second);
  }
}

TEST(HandleMap, KeyZeroIsNeverStored) {
  skt::tracer::HandleMap m;
  m.put(0, 5);
  EXPECT_EQ(m.find(0), nullptr);
  EXPECT_EQ(m.size(), 0u);
}
