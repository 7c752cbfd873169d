// The trace format: round trips through the real writer and reader, and
// rejection of damaged, truncated, foreign and wrong-version input.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <functional>
#include <map>

#include "skel/codec.h"
#include "skel/folded.h"
#include "skel/merged.h"
#include "skel/skel_funcs.h"
#include "skel/trace.h"
#include "skel/trace_writer.h"
#include "trace_fixtures.h"

using namespace skt;
using namespace skt::testing;

namespace {

void expect_same(const Event& a, const Event& b) {
  EXPECT_EQ(a.seq, b.seq);
  EXPECT_EQ(a.func, b.func);
  EXPECT_EQ(a.callsite, b.callsite);
  EXPECT_EQ(a.t_start_ns, b.t_start_ns);
  EXPECT_EQ(a.duration_ns, b.duration_ns);
  EXPECT_EQ(a.peer, b.peer);
  EXPECT_EQ(a.tag, b.tag);
  EXPECT_EQ(a.count, b.count);
  EXPECT_EQ(a.dtype, b.dtype);
  EXPECT_EQ(a.comm, b.comm);
  EXPECT_EQ(a.root, b.root);
  EXPECT_EQ(a.op, b.op);
  EXPECT_EQ(a.flags, b.flags);
  EXPECT_EQ(a.peer2, b.peer2);
  EXPECT_EQ(a.tag2, b.tag2);
  EXPECT_EQ(a.count2, b.count2);
  EXPECT_EQ(a.dtype2, b.dtype2);
  EXPECT_EQ(a.color, b.color);
  EXPECT_EQ(a.key, b.key);
  EXPECT_EQ(a.new_comm, b.new_comm);
  EXPECT_EQ(a.bytes, b.bytes);
  EXPECT_EQ(a.bytes2, b.bytes2);
  EXPECT_EQ(a.reqs, b.reqs);
  EXPECT_EQ(a.req_sources, b.req_sources);
  EXPECT_EQ(a.counts, b.counts);
  EXPECT_EQ(a.counts2, b.counts2);
  EXPECT_EQ(a.dims, b.dims);
  EXPECT_EQ(a.periods, b.periods);
}

std::vector<Event> read_all(TraceFile& f) {
  std::vector<Event> out;
  Event e;
  while (f.next(e)) out.push_back(e);
  return out;
}

}  // namespace

TEST(TraceFormat, VarintRoundTripAtTheEdges) {
  for (int64_t v : {int64_t{0}, int64_t{1}, int64_t{-1}, int64_t{63}, int64_t{-64}, int64_t{1} << 40, INT64_MAX, INT64_MIN}) {
    uint8_t buf[10];
    uint8_t* end = codec::put_varint(buf, codec::zigzag(v));
    codec::Cursor c(buf, static_cast<size_t>(end - buf));
    int64_t back = 0;
    ASSERT_TRUE(c.svarint(back));
    EXPECT_EQ(back, v);
    EXPECT_TRUE(c.at_end());
  }
  uint8_t bad[11];
  std::fill(std::begin(bad), std::end(bad), 0xff);
  codec::Cursor c(bad, sizeof bad);
  uint64_t v;
  EXPECT_FALSE(c.varint(v));  // more than 10 bytes
}

TEST(TraceFormat, RoundTripManyChunks) {
  std::string dir = temp_dir("rt");
  std::string path = dir + "/rank-00003.skt";
  TraceHeader h = sample_header(3, 8, 77);
  auto want = write_trace(path, h, random_events(20000, 1), 4096, EndStatus::kFinalized);
  TraceFile f(path);
  const TraceHeader& g = f.header();
  EXPECT_EQ(g.rank, 3u);
  EXPECT_EQ(g.world_size, 8u);
  EXPECT_EQ(g.run_id, 77u);
  EXPECT_EQ(g.pid, h.pid);
  EXPECT_EQ(g.mpi_flavor, MpiFlavor::kMpich);
  EXPECT_EQ(g.stack_depth, 3);
  EXPECT_EQ(g.thread_level, 1);
  EXPECT_EQ(g.start_realtime_ns, h.start_realtime_ns);
  EXPECT_EQ(g.start_monotonic_ns, h.start_monotonic_ns);
  EXPECT_EQ(g.kernel_name, h.kernel_name);
  EXPECT_EQ(g.kernel_version, h.kernel_version);
  EXPECT_DOUBLE_EQ(g.kernel_units_per_s, h.kernel_units_per_s);
  EXPECT_DOUBLE_EQ(g.calibration_s, h.calibration_s);
  EXPECT_EQ(g.hostname, h.hostname);
  EXPECT_EQ(g.mpi_library, h.mpi_library);
  EXPECT_EQ(g.executable, h.executable);
  EXPECT_EQ(g.command_line, h.command_line);
  EXPECT_EQ(g.gap_clock, GapClock::kThreadCpu);
  EXPECT_DOUBLE_EQ(g.gap_floor_ns, 21.0);
  EXPECT_DOUBLE_EQ(g.cpu_gap_floor_ns, 205.0);
  EXPECT_EQ(g.core_sharing, CoreSharing::kShared);
  auto got = read_all(f);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    expect_same(got[i], want[i]);
    EXPECT_EQ(got[i].gap_ns, want[i].gap_ns);
    EXPECT_EQ(got[i].cpu_gap_ns, want[i].cpu_gap_ns);
    EXPECT_EQ(got[i].kernel_rate, want[i].kernel_rate);
    EXPECT_EQ(got[i].kernel_samples, want[i].kernel_samples);
    if (::testing::Test::HasFailure()) break;
  }
  EXPECT_EQ(f.end(), TraceEnd::kFinalized);
  EXPECT_EQ(f.callsite_name(1), "app+0x1010");
  EXPECT_EQ(f.datatype_size(256), 24);
  ASSERT_TRUE(f.comms().count(2) || f.comms().empty());
}

// A communicator's members are written as runs of consecutive world ranks
// (2.3) and read back as the ranks they were; members outside the world, or
// more of them than the world has, are refused (a run claiming 2^40 ranks
// must not be written out). A list of ranks (before 2.3) reads the same.
TEST(TraceFormat, CommunicatorMembersAreRunsReadBackAndCheckedAgainstTheWorld) {
  const std::string dir = temp_dir("runs");
  auto write = [&](const std::string& name, const std::function<void(TraceWriter&)>& define) {
    const std::string path = dir + "/" + name;
    TraceWriter w;
    EXPECT_TRUE(w.open(path, sample_header(0, 16, 9), 4096, 1)) << w.error();
    define(w);
    w.begin_event(kFunc_MPI_Barrier, 0);
    w.put_int(Field::kComm, 2);
    w.end_event(10, 20);
    EXPECT_TRUE(w.close(EndStatus::kFinalized));
    return path;
  };
  const std::vector<int64_t> members = {3, 4, 5, 0, 1, 9, 15, 14};
  const std::string good = write("good.skt", [&](TraceWriter& w) {
    w.define_comm(2, 0, kFunc_MPI_Comm_split, members.data(), members.size());
  });
  {
    TraceFile f(good);
    read_all(f);
    ASSERT_EQ(f.comms().count(2), 1u);
    EXPECT_EQ(f.comms().at(2).members(), members);
    EXPECT_EQ(f.comms().at(2).runs, (std::vector<int64_t>{3, 3, 0, 2, 9, 1, 15, 1, 14, 1}));
  }
  // A communicator definition by hand, its members in `field`.
  auto define = [](TraceWriter& w, Field field, const std::vector<int64_t>& list) {
    w.begin_record(RecordKind::kCommDef);
    w.put_int(Field::kId, 2);
    w.put_int(Field::kParent, 0);
    w.put_int(Field::kFunc, kFunc_MPI_Comm_split);
    w.put_list(field, list.data(), list.size());
    w.end_record();
  };
  const std::string listed = write("listed.skt", [&](TraceWriter& w) { define(w, Field::kMembers, members); });  // 2.2
  {
    TraceFile f(listed);
    read_all(f);
    EXPECT_EQ(f.comms().at(2).members(), members);
  }
  const std::vector<std::vector<int64_t>> hostile = {{0, int64_t(1) << 40}, {15, 2}, {-1, 1}, {0, 0}, {0, 9, 0, 9}, {3}};
  for (const auto& runs : hostile) {
    const std::string bad = write("bad.skt", [&](TraceWriter& w) { define(w, Field::kMemberRuns, runs); });
    try {
      TraceFile f(bad);
      read_all(f);
      ADD_FAILURE() << "accepted member runs of " << runs.size() << " values starting " << runs[0];
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("corrupt communicator definition (members outside the world of 16 ranks)"),
                std::string::npos)
          << e.what();
    }
    std::remove(bad.c_str());
  }
}

// A 1.x file (before chunk checksums) is refused, naming its version; a
// 2.0 header that ends before its gap floors is corrupt.
TEST(TraceFormat, OlderVersionsAndHeadersWithoutGapFloorsAreRefused) {
  std::string dir = temp_dir("floors");
  std::string path = dir + "/rank-00000.skt";
  write_trace(path, sample_header(0, 1, 5), random_events(10, 2), 4096, EndStatus::kFinalized);
  std::string bytes = read_file(path);
  const size_t at = sizeof kFileMagic, body = at + 8;  // major u16, minor u16, body length u32
  uint32_t len = 0;
  std::memcpy(&len, &bytes[at + 4], 4);
  ASSERT_GT(len, 16u);
  std::string old = bytes;
  uint16_t major = 1, minor = 4;
  std::memcpy(&old[at], &major, 2);
  std::memcpy(&old[at + 2], &minor, 2);
  write_file(path, old);
  try {
    TraceFile f(path);
    FAIL() << "read a 1.4 file";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("trace format version 1.4 is too old"), std::string::npos) << e.what();
  }
  {
    TraceHeader h = sample_header(0, 1, 5);  // a floor no span can have
    h.gap_floor_ns = -3;
    std::string bad = dir + "/rank-00001.skt";
    write_trace(bad, h, random_events(3, 2), 4096, EndStatus::kFinalized);
    try {
      TraceFile f(bad);
      ADD_FAILURE() << "read a negative gap floor";
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("corrupt header (gap floors out of range)"), std::string::npos) << e.what();
    }
  }
  old = bytes;
  old.erase(body + len - 16, 16);  // the two f64 floors
  uint32_t shorter = len - 16;
  std::memcpy(&old[at + 4], &shorter, 4);
  write_file(path, old);
  try {
    TraceFile f(path);
    FAIL() << "read a 2.0 header without gap floors";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt header (no gap floors)"), std::string::npos) << e.what();
  }
}

// The first chunk's base time set to near INT64_MAX: with the header's
// checksum left as it was, the flip is caught by it; with the checksum
// recomputed (a deliberate forgery), the times would overflow: refused too,
// never read as shifted times.
TEST(TraceFormat, ACorruptBaseTimeIsRefusedNotShifted) {
  std::string dir = temp_dir("base");
  std::string path = dir + "/rank-00000.skt";
  write_trace(path, sample_header(0, 1, 5), random_events(10, 2), 4096, EndStatus::kFinalized);
  std::string bytes = read_file(path);
  uint32_t len = 0;
  std::memcpy(&len, &bytes[sizeof kFileMagic + 4], 4);
  const size_t chunk = kFixedHeaderBytes + len, base = chunk + 20;
  const int64_t huge = INT64_MAX - 5;
  std::string flipped = bytes;
  std::memcpy(&flipped[base], &huge, 8);
  write_file(path, flipped);
  try {
    TraceFile f(path);
    read_all(f);
    FAIL() << "read a flipped base time";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("header checksum mismatch) at offset " + std::to_string(chunk)),
              std::string::npos)
        << e.what();
  }
  std::string forged = flipped.substr(chunk, kChunkHeaderBytes);
  seal_chunk_header(forged);
  flipped.replace(chunk, kChunkHeaderBytes, forged);
  write_file(path, flipped);
  try {
    TraceFile f(path);
    read_all(f);
    FAIL() << "read times past INT64_MAX";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt time of event"), std::string::npos) << e.what();
  }
}

// A chunk header that claims a huge payload or content is never believed:
// no allocation of that size, the file reads as truncated or is refused.
TEST(TraceFormat, OversizeChunkClaimsAreRefusedWithoutAllocating) {
  std::string dir = temp_dir("oversize");
  std::string path = dir + "/rank-00000.skt";
  write_trace(path, sample_header(0, 1, 5), random_events(10, 2), 4096, EndStatus::kFinalized);
  std::string bytes = read_file(path);
  uint32_t len = 0;
  std::memcpy(&len, &bytes[sizeof kFileMagic + 4], 4);
  const size_t chunk = kFixedHeaderBytes + len;
  auto patch = [&](size_t field, uint32_t v) {
    std::string b = bytes;
    std::memcpy(&b[chunk + field], &v, 4);
    std::string h = b.substr(chunk, kChunkHeaderBytes);
    seal_chunk_header(h);
    b.replace(chunk, kChunkHeaderBytes, h);
    write_file(path, b);
  };
  patch(36, 1u << 30);  // payload: 1 GiB, more than the file holds
  {
    TraceFile f(path);
    EXPECT_TRUE(read_all(f).empty());
    EXPECT_EQ(f.end(), TraceEnd::kTruncated);
  }
  patch(28, 1u << 29);  // record stream: 512 MiB from a few hundred bytes
  try {
    TraceFile f(path);
    read_all(f);
    FAIL() << "believed a 512 MiB chunk";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("implausible size"), std::string::npos) << e.what();
  }
}

// A merged trace or folded program of 32 bytes that claims 1 GiB of content
// is refused from its frame header, before any allocation of that size.
TEST(TraceFormat, ASmallCompressedFileClaimingAGigabyteIsRefused) {
  std::string dir = temp_dir("claim");
  // magic, the current version, then a zstd frame header claiming 1 GiB (single segment, 4-byte size), then junk
  std::string b(kMergedMagic, 8);
  codec::put_u16(b, kMergedVersionMajor);
  codec::put_u16(b, kMergedVersionMinor);
  b += std::string(4, '\0');  // reserved
  b += std::string("\x28\xb5\x2f\xfd\xa0", 5);
  uint32_t gib = 1u << 30;
  b.append(reinterpret_cast<const char*>(&gib), 4);
  b.resize(32, 'x');
  write_file(dir + "/x.skm", b);
  try {
    read_merged(dir + "/x.skm");
    FAIL() << "read a 32-byte file claiming 1 GiB";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("claims 1073741824 bytes from 16 compressed"), std::string::npos)
        << e.what();
  }
}

// Merged traces and folded programs of an older major version are refused
// with their version named and what to do (the 1.x compatibility code is gone).
TEST(TraceFormat, OlderMergedAndFoldedVersionsAreRefusedNamingThem) {
  std::string dir = temp_dir("older");
  for (const bool folded : {false, true}) {
    const std::string path = dir + (folded ? "/old.skf" : "/old.skm");
    write_compressed_file(path, folded ? kFoldedMagic : kMergedMagic, 1, 5, std::string("\x01\x00", 2));
    try {
      if (folded) read_folded(path);
      else read_merged(path);
      ADD_FAILURE() << "read a 1.5 file";
    } catch (const TraceError& e) {
      const std::string want = folded ? "folded program version 1.5 is too old (this reader reads 2.x); make it "
                                        "again with skelgen compress"
                                      : "merged trace version 1.5 is too old (this reader reads 2.x); make it again "
                                        "with skelgen merge";
      EXPECT_NE(std::string(e.what()).find(path + ": " + want), std::string::npos) << e.what();
    }
  }
}

// A corrupt merged body is refused naming where in its content.
TEST(TraceFormat, ACorruptMergedBodyNamesTheOffset) {
  std::string path = temp_dir("body") + "/bad.skm";
  write_compressed_file(path, kMergedMagic, kMergedVersionMajor, kMergedVersionMinor, std::string("\x01\x7f", 2));
  try {
    read_merged(path);
    FAIL() << "read a section longer than the body";
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find("corrupt merged trace (section length) at byte 2 of its decompressed content"),
              std::string::npos)
        << e.what();
  }
}

// A FIFO (or a device) is refused at once, never waited on.
TEST(TraceFormat, FifosAndDevicesAreRefusedWithoutBlocking) {
  std::string dir = temp_dir("fifo");
  std::string fifo = dir + "/rank-00000.skt";
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  for (const std::string& p : {fifo, std::string("/dev/zero")}) {
    try {
      TraceFile f(p);
      FAIL() << "opened " << p;
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find("not a regular file"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(is_merged_file(p));
    EXPECT_THROW(read_merged(p), TraceError);
    EXPECT_THROW(read_folded(p), TraceError);
  }
}

// A rank file whose header is h (ten events after it) is refused, with a
// message naming the file and saying `why`.
static void expect_header_refused(const TraceHeader& h, const std::string& why) {
  const std::string path = temp_dir("header") + "/rank-00000.skt";
  write_trace(path, h, random_events(10, 2), 4096, EndStatus::kFinalized);
  try {
    TraceFile f(path);
    ADD_FAILURE() << "read a header that should say: " << why;
  } catch (const TraceError& e) {
    EXPECT_NE(std::string(e.what()).find(path + ": " + why), std::string::npos) << e.what();
  }
}

TEST(TraceFormat, AnUnknownGapClockIsRejected) {
  TraceHeader h = sample_header(0, 1, 5);
  h.gap_clock = static_cast<GapClock>(7);
  expect_header_refused(h, "unknown gap clock 7");
}

// Core sharing (2.4) past its last value is a corrupt header, named as one.
TEST(TraceFormat, AnUnknownCoreSharingIsRejected) {
  TraceHeader h = sample_header(0, 1, 5);
  h.core_sharing = static_cast<CoreSharing>(3);
  expect_header_refused(h, "corrupt header (core sharing 3)");
}

TEST(TraceFormat, AbortedAndUnclosedTracesSayHowTheyEnded) {
  std::string dir = temp_dir("end");
  write_trace(dir + "/a.skt", sample_header(0, 1, 1), random_events(500, 2), 4096, EndStatus::kAborted);
  TraceFile a(dir + "/a.skt");
  EXPECT_EQ(read_all(a).size(), 500u);
  EXPECT_EQ(a.end(), TraceEnd::kAborted);
  // A process that dies leaves chunks but no end chunk.
  auto want = write_trace(dir + "/b.skt", sample_header(0, 1, 1), random_events(500, 3), 4096, EndStatus::kFinalized,
                          /*close=*/false);
  TraceFile b(dir + "/b.skt");
  EXPECT_EQ(read_all(b).size(), 500u);
  EXPECT_EQ(b.end(), TraceEnd::kTruncated);
}

TEST(TraceFormat, EveryTruncationReadsAPrefixOrFailsCleanly) {
  std::string dir = temp_dir("trunc");
  std::string path = dir + "/full.skt";
  auto want = write_trace(path, sample_header(0, 2, 9), random_events(3000, 4), 4096, EndStatus::kFinalized);
  std::string bytes = read_file(path);
  std::string cut = dir + "/cut.skt";
  size_t header_len = encode_header(sample_header(0, 2, 9)).size();
  size_t step = bytes.size() > 4000 ? 7 : 1;
  for (size_t len = 0; len < bytes.size(); len += step) {
    write_file(cut, bytes.substr(0, len));
    try {
      TraceFile f(cut);
      ASSERT_GE(len, header_len) << "a cut header was accepted at " << len;
      auto got = read_all(f);
      ASSERT_LE(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(got[i].t_start_ns, want[i].t_start_ns);
      EXPECT_EQ(f.end(), TraceEnd::kTruncated) << "cut at " << len;
    } catch (const TraceError& e) {
      EXPECT_LT(len, header_len) << "cut at " << len << " inside the events threw: " << e.what();
      EXPECT_NE(std::string(e.what()).find(cut), std::string::npos) << "message must name the file";
    }
  }
}

TEST(TraceFormat, FlippedBytesNeverCrashTheReader) {
  std::string dir = temp_dir("flip");
  std::string path = dir + "/full.skt";
  write_trace(path, sample_header(0, 2, 9), random_events(2000, 5), 4096, EndStatus::kFinalized);
  std::string bytes = read_file(path);
  std::mt19937 rng(6);
  std::string bad = dir + "/bad.skt";
  int rejected = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::string b = bytes;
    size_t pos = std::uniform_int_distribution<size_t>(0, b.size() - 1)(rng);
    b[pos] = static_cast<char>(b[pos] ^ (1 << (trial % 8)));
    write_file(bad, b);
    try {
      TraceFile f(bad);
      read_all(f);
    } catch (const TraceError& e) {
      ++rejected;
      EXPECT_FALSE(std::string(e.what()).empty());
    }
  }
  // zstd checksums every chunk: most flips are caught, none crash.
  EXPECT_GT(rejected, 200);
}

TEST(TraceFormat, UnknownFieldsOfANewerMinorVersionAreSkipped) {
  std::string dir = temp_dir("minor");
  std::string path = dir + "/r.skt";
  TraceWriter w;
  ASSERT_TRUE(w.open(path, sample_header(0, 1, 1), 4096, 1));
  w.begin_event(10, 0);
  w.put_int(Field::kPeer, 5);
  w.put_int(static_cast<Field>(60), 123);             // an int field this reader does not know
  w.put_list(static_cast<Field>(61), std::vector<int64_t>{1, 2, 3}.data(), 3);
  w.put_str(static_cast<Field>(62), "future");
  w.put_int(Field::kTag, 9);
  w.end_event(100, 150);
  ASSERT_TRUE(w.close(EndStatus::kFinalized));
  TraceFile f(path);
  Event e;
  ASSERT_TRUE(f.next(e));
  EXPECT_EQ(e.peer, 5);
  EXPECT_EQ(e.tag, 9);
  EXPECT_EQ(e.duration_ns, 50);
  EXPECT_FALSE(f.next(e));
}

// The checked-in corpus: each file must be rejected with its expected message.
TEST(TraceFormat, CorpusOfBrokenFilesIsRejectedWithClearMessages) {
  std::ifstream expect(std::string(SKEL_CORPUS_DIR) + "/expected.txt");
  ASSERT_TRUE(expect.good());
  std::string line;
  int n = 0;
  while (std::getline(expect, line)) {
    if (line.empty() || line[0] == '#') continue;
    auto tab = line.find('\t');
    ASSERT_NE(tab, std::string::npos) << line;
    std::string file = std::string(SKEL_CORPUS_DIR) + "/" + line.substr(0, tab);
    std::string msg = line.substr(tab + 1);
    SCOPED_TRACE(file);
    try {
      TraceFile f(file);
      read_all(f);
      ADD_FAILURE() << "accepted";
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find(msg), std::string::npos) << e.what();
      EXPECT_EQ(std::string(e.what()).find('\n'), std::string::npos) << "one line";
    }
    ++n;
  }
  EXPECT_GE(n, 6);
}

TEST(TraceDir, RejectsIncompleteOrMixedSets) {
  auto expect_error = [](const std::string& dir, const std::string& what) {
    try {
      TraceDir d(dir);
      ADD_FAILURE() << "accepted " << dir;
    } catch (const TraceError& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  expect_error("/nonexistent/skel", "cannot open trace directory");
  std::string empty = temp_dir("empty");
  expect_error(empty, "no rank-*.skt");

  std::string missing = temp_dir("missing");
  write_trace(missing + "/rank-00000.skt", sample_header(0, 3, 5), random_events(10, 1), 4096, EndStatus::kFinalized);
  write_trace(missing + "/rank-00002.skt", sample_header(2, 3, 5), random_events(10, 1), 4096, EndStatus::kFinalized);
  expect_error(missing, "rank 1 of 3 is missing");

  std::string mixed = temp_dir("mixed");
  write_trace(mixed + "/rank-00000.skt", sample_header(0, 2, 5), random_events(10, 1), 4096, EndStatus::kFinalized);
  write_trace(mixed + "/rank-00001.skt", sample_header(1, 2, 6), random_events(10, 1), 4096, EndStatus::kFinalized);
  expect_error(mixed, "different run");

  std::string sizes = temp_dir("sizes");
  write_trace(sizes + "/rank-00000.skt", sample_header(0, 2, 5), random_events(10, 1), 4096, EndStatus::kFinalized);
  write_trace(sizes + "/rank-00001.skt", sample_header(1, 4, 5), random_events(10, 1), 4096, EndStatus::kFinalized);
  expect_error(sizes, "world size 4 differs");

  std::string renamed = temp_dir("renamed");
  write_trace(renamed + "/rank-00001.skt", sample_header(0, 1, 5), random_events(10, 1), 4096, EndStatus::kFinalized);
  expect_error(renamed, "does not match the rank");

  std::string good = temp_dir("good");
  for (uint32_t r = 0; r < 3; ++r)
    write_trace(good + "/" + TraceDir::rank_file_name(r), sample_header(r, 3, 5), random_events(10, r), 4096,
                EndStatus::kFinalized);
  TraceDir d(good);
  EXPECT_EQ(d.world_size(), 3u);
  EXPECT_EQ(d.open_rank(2)->header().rank, 2u);
}

TEST(TraceWriter, ReportsAnUnwritableFileInsteadOfThrowing) {
  TraceWriter w;
  EXPECT_FALSE(w.open("/nonexistent/dir/rank-00000.skt", sample_header(0, 1, 1), 4096, 1));
  EXPECT_TRUE(w.failed());
  EXPECT_NE(w.error().find("cannot create trace file"), std::string::npos);
  w.begin_event(10, 0);  // no-ops after a failure
  w.end_event(0, 1);
  EXPECT_FALSE(w.close(EndStatus::kFinalized));
}

TEST(TraceWriter, DiskFullIsAnErrorNotACrash) {
  struct stat sb {};
  if (stat("/dev/full", &sb) != 0) GTEST_SKIP() << "no /dev/full";
  TraceWriter w;
  int fd = ::open("/dev/full", O_WRONLY | O_CLOEXEC);
  ASSERT_GE(fd, 0);
  EXPECT_FALSE(w.adopt(fd, "/dev/full", sample_header(0, 1, 1), 4096, 1));
  EXPECT_NE(w.error().find("No space left"), std::string::npos) << w.error();
}

TEST(TraceWriter, NeverWritesThroughAPlantedSymlinkOrFile) {
  std::string dir = temp_dir("planted");
  write_file(dir + "/victim", "precious");
  ASSERT_EQ(symlink((dir + "/victim").c_str(), (dir + "/rank-00000.skt").c_str()), 0);
  TraceWriter w;
  EXPECT_FALSE(w.open(dir + "/rank-00000.skt", sample_header(0, 1, 1), 4096, 1));
  EXPECT_NE(w.error().find("already exists"), std::string::npos) << w.error();
  TraceWriter w2;
  EXPECT_FALSE(w2.open(dir + "/victim", sample_header(0, 1, 1), 4096, 1));  // an existing file: not truncated
  EXPECT_EQ(read_file(dir + "/victim"), "precious");
}

// DIR/untraced.txt (skelgen trace --compare-untraced): written once, never
// through a planted link; read from DIR or, for DIR/run-N, from DIR; absent
// is no comparison; anything but one such line is an error naming the file.
TEST(UntracedComparison, RoundTripsAndRefusesWhatIsNotOneSuchLine) {
  const std::string dir = skt::testing::temp_dir("untraced");
  EXPECT_EQ(skt::TraceDir::read_untraced(dir).runs, 0u);
  skt::TraceDir::write_untraced(dir, {0.795, 0.65, 3});
  const auto c = skt::TraceDir::read_untraced(dir);
  EXPECT_DOUBLE_EQ(c.traced_s, 0.795);
  EXPECT_DOUBLE_EQ(c.untraced_s, 0.65);
  EXPECT_EQ(c.runs, 3u);
  ASSERT_EQ(::mkdir((dir + "/run-2").c_str(), 0755), 0);
  EXPECT_EQ(skt::TraceDir::read_untraced(dir + "/run-2/").runs, 3u);
  EXPECT_THROW(skt::TraceDir::write_untraced(dir, {1, 1, 1}), skt::TraceError) << "an existing file is not replaced";

  const std::string link_dir = skt::testing::temp_dir("untraced_link");
  const std::string victim = link_dir + "/victim";
  std::ofstream(victim) << "keep";
  ASSERT_EQ(::symlink(victim.c_str(), (link_dir + "/untraced.txt").c_str()), 0);
  EXPECT_THROW(skt::TraceDir::write_untraced(link_dir, {1, 1, 1}), skt::TraceError);
  std::ifstream kept(victim);
  std::string word;
  kept >> word;
  EXPECT_EQ(word, "keep");

  const std::string bad_dir = skt::testing::temp_dir("untraced_bad");
  const std::string path = bad_dir + "/untraced.txt";
  for (const std::string& bad : std::vector<std::string>{
           "SKELGEN_UNTRACED traced_s=1 untraced_s=nan runs=2\n", "SKELGEN_UNTRACED traced_s=1 untraced_s=-2 runs=2\n",
        "SKELGEN_UNTRACED traced_s=1 untraced_s=2 runs=0\n", "SKELGEN_UNTRACED traced_s=1 untraced_s=2 runs=2x\n", "SKELGEN_UNTRACED traced_s=1e300 untraced_s=2 runs=2\n",
        "SKELGEN_UNTRACED traced_s=1 untraced_s=2\n", "OTHER traced_s=1 untraced_s=2 runs=2\n", "",
        "SKELGEN_UNTRACED traced_s=1 untraced_s=2 runs=2 " + std::string(5000, 'x') + "\n"}) {
    std::ofstream(path, std::ios::trunc) << bad;
    try {
      skt::TraceDir::read_untraced(bad_dir);
      ADD_FAILURE() << "accepted: " << bad.substr(0, 80);
    } catch (const skt::TraceError& e) {
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
  ::unlink(path.c_str());
  ASSERT_EQ(::mkfifo(path.c_str(), 0644), 0);
  EXPECT_THROW(skt::TraceDir::read_untraced(bad_dir), skt::TraceError) << "a FIFO is refused, not waited on";
}
