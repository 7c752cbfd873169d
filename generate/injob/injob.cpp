// The merge inside the traced job (skelgen trace --merge-in-job,
// SKELTRACE_MERGE_IN_JOB; docs/tracer.md, "Merging inside the job").
//
// At MPI_Finalize each rank's tracer closes its rank file (written to a
// directory on its own node) and calls skel_merge_in_job(). The files
// travel up a binomial tree of the ranks: in round k (k = 0, 1, ...), a
// rank whose bit k is set sends all it holds to the rank 2^k below it and
// is done; so rank 0 holds every file after ceil(log2 P) rounds, no rank
// sends more than once and none receives more than log2 P times. Rank 0
// merges them with the merge library, the same code and the same order
// choice as `skelgen merge`, and writes one merged trace; the job then
// leaves one file on the shared file system instead of P. (The merge at
// rank 0 is the offline merge's work, linear in P; what the tree saves is
// the P files, their metadata, and a second step after the job.)
//
// Built once per MPI and loaded by that MPI's tracer with dlopen, so that
// the tracer (the bottom layer) does not depend on the merge. Only
// skel_merge_in_job is exported. It calls MPI through PMPI only: the
// application's wrappers must not see these messages.
#include <fcntl.h>
#include <mpi.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>
#include <vector>

#include "skel/merge.h"
#include "skel/merged.h"
#include "skel/pipeline.h"
#include "skel/trace.h"

namespace {

constexpr int kTagSize = 7301, kTagBytes = 7302;
constexpr size_t kMaxMessage = size_t(1) << 30;  // bytes per MPI message (its count is an int)

// What a rank holds on its way up the tree: rank files, each with its rank.
struct Held {
  std::vector<uint32_t> ranks;
  std::vector<std::string> files;
};

std::string read_whole(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot read: " + std::strerror(errno));
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

// Held as one buffer: per file u32 rank, u64 length, the bytes.
std::string pack(const Held& h) {
  std::string b;
  for (size_t i = 0; i < h.files.size(); ++i) {
    const uint64_t n = h.files[i].size();
    b.append(reinterpret_cast<const char*>(&h.ranks[i]), sizeof h.ranks[i]);
    b.append(reinterpret_cast<const char*>(&n), sizeof n);
    b += h.files[i];
  }
  return b;
}

void unpack(const std::string& b, Held& into) {
  size_t at = 0;
  while (at < b.size()) {
    uint32_t r = 0;
    uint64_t n = 0;
    if (b.size() - at < sizeof r + sizeof n) throw std::runtime_error("a torn message between ranks");
    std::memcpy(&r, b.data() + at, sizeof r);
    std::memcpy(&n, b.data() + at + sizeof r, sizeof n);
    at += sizeof r + sizeof n;
    if (n > b.size() - at) throw std::runtime_error("a torn message between ranks");
    into.ranks.push_back(r);
    into.files.push_back(b.substr(at, n));
    at += n;
  }
}

void send_bytes(MPI_Comm comm, int to, const std::string& b) {
  const uint64_t n = b.size();
  PMPI_Send(&n, 1, MPI_UINT64_T, to, kTagSize, comm);
  for (size_t at = 0; at < b.size(); at += kMaxMessage)
    PMPI_Send(b.data() + at, static_cast<int>(std::min(kMaxMessage, b.size() - at)), MPI_BYTE, to, kTagBytes, comm);
}

std::string receive_bytes(MPI_Comm comm, int from) {
  uint64_t n = 0;
  PMPI_Recv(&n, 1, MPI_UINT64_T, from, kTagSize, comm, MPI_STATUS_IGNORE);
  std::string b(n, '\0');
  for (size_t at = 0; at < n; at += kMaxMessage)
    PMPI_Recv(&b[at], static_cast<int>(std::min<uint64_t>(kMaxMessage, n - at)), MPI_BYTE, from, kTagBytes, comm,
              MPI_STATUS_IGNORE);
  return b;
}

// Every rank's files up the binomial tree; rank 0 returns them all, the
// others nothing. *rounds: the rounds rank 0 received in.
Held gather_up(MPI_Comm comm, Held mine, int* rounds) {
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  *rounds = 0;
  for (int mask = 1; mask < size; mask <<= 1) {
    if (rank & mask) {
      send_bytes(comm, rank - mask, pack(mine));
      return Held();
    }
    if (rank + mask < size) {
      unpack(receive_bytes(comm, rank + mask), mine);
      ++*rounds;
    }
  }
  return mine;
}

void write_new(const std::string& path, const std::string& bytes) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(path + ": cannot create: " + std::strerror(errno));
  size_t at = 0;
  while (at < bytes.size()) {
    ssize_t w = ::write(fd, bytes.data() + at, bytes.size() - at);
    if (w <= 0) {
      const int err = errno;
      ::close(fd);
      throw std::runtime_error(path + ": cannot write: " + std::strerror(err));
    }
    at += static_cast<size_t>(w);
  }
  if (::close(fd) != 0) throw std::runtime_error(path + ": cannot write: " + std::strerror(errno));
}

// Rank 0: the files into a fresh directory under stage, merged as skelgen
// merge merges a trace directory; the merged trace names `source` as its
// directory. Returns the summary line.
std::string merge_at_root(const Held& all, const std::string& stage, const std::string& out, const std::string& source) {
  const std::string dir = stage + "/gathered-" + std::to_string(getpid());
  if (::mkdir(dir.c_str(), 0700) != 0) throw std::runtime_error(dir + ": cannot create: " + std::strerror(errno));
  struct Cleanup {
    std::string dir;
    ~Cleanup() {
      std::error_code ignored;
      std::filesystem::remove_all(dir, ignored);
    }
  } cleanup{dir};
  uint64_t bytes = 0;
  for (size_t i = 0; i < all.files.size(); ++i) {
    write_new(dir + "/" + skt::TraceDir::rank_file_name(all.ranks[i]), all.files[i]);
    bytes += all.files[i].size();
  }
  skt::merge::Options mo;
  skt::gen::set_merge_order(mo, "auto");
  skt::merge::Loaded loaded = skt::merge::load(dir, mo);
  skt::merge::Ordered ordered;
  skt::MergedTrace m = skt::merge::merge(loaded, mo, &ordered);
  m.source = source;
  skt::write_merged(out, m);
  return std::to_string(all.files.size()) + " rank files, " + std::to_string(bytes) + " bytes, " +
         std::to_string(m.events.size()) + " merged events; merged " + skt::merge::describe(ordered, skt::gen::kMergeScore);
}

void say(char* message, size_t len, const std::string& s) {
  if (message && len) std::snprintf(message, len, "%s", s.c_str());
}

}  // namespace

// rank_file: this rank's closed trace file; stage: a directory of rank 0's
// node it may write into; out: the merged trace to write (rank 0); source:
// the trace directory the merged trace names. Collective over comm (every
// rank of the traced world). Returns 0 on every rank where the merged trace
// was written, else non-zero on every rank; rank 0's message says what was
// done or what failed.
extern "C" __attribute__((visibility("default"))) int skel_merge_in_job(MPI_Comm comm, const char* rank_file,
                                                                        const char* stage, const char* out,
                                                                        const char* source, char* message,
                                                                        size_t message_len) {
  using clock = std::chrono::steady_clock;
  const auto t0 = clock::now();
  int rank = 0, size = 1;
  PMPI_Comm_rank(comm, &rank);
  PMPI_Comm_size(comm, &size);
  Held mine;
  int ok = 1;
  std::string error;
  try {
    mine.ranks.push_back(static_cast<uint32_t>(rank));
    mine.files.push_back(read_whole(rank_file));
  } catch (const std::exception& e) {
    ok = 0, error = e.what();
  }
  // A rank that cannot read its own file stops the merge on every rank (the tracer keeps the files).
  PMPI_Allreduce(MPI_IN_PLACE, &ok, 1, MPI_INT, MPI_MIN, comm);
  if (!ok) {
    say(message, message_len, error.empty() ? "a rank could not read its trace file" : error);
    return 1;
  }
  int rounds = 0, rc = 0;
  Held all = gather_up(comm, std::move(mine), &rounds);
  const auto t1 = clock::now();
  if (rank == 0) {
    try {
      std::string summary = merge_at_root(all, stage, out, source);
      const auto t2 = clock::now();
      auto secs = [](auto a, auto b) { return std::chrono::duration<double>(b - a).count(); };
      char timing[160];
      std::snprintf(timing, sizeof timing, "; gathered in %d rounds in %.3f s, merged and written in %.3f s", rounds,
                    secs(t0, t1), secs(t1, t2));
      say(message, message_len, summary + timing);
    } catch (const std::exception& e) {
      rc = 1;
      say(message, message_len, e.what());
    }
  }
  PMPI_Bcast(&rc, 1, MPI_INT, 0, comm);
  return rc;
}
