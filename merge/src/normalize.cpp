// Normalisation of order differences (MISSION.md §2): inside each maximal
// run of point-to-point calls, one canonical order for every rank.
#include <unordered_map>

#include "skel/merge.h"
#include "skel/skel_funcs.h"

namespace skt::merge {
namespace {

enum class Kind { kOther, kSend, kRecv, kIrecv, kWait };

Kind kind_of(uint32_t func) {
  switch (func) {
    case kFunc_MPI_Send: case kFunc_MPI_Ssend: case kFunc_MPI_Bsend: case kFunc_MPI_Rsend:
    case kFunc_MPI_Isend: case kFunc_MPI_Issend: case kFunc_MPI_Ibsend: case kFunc_MPI_Irsend:
      return Kind::kSend;
    case kFunc_MPI_Recv: return Kind::kRecv;
    case kFunc_MPI_Irecv: return Kind::kIrecv;
    case kFunc_MPI_Wait: return Kind::kWait;
    default: return Kind::kOther;
  }
}

}  // namespace

void normalize(RankData& rank, const std::vector<Identity>& identities) {
  std::vector<RankEvent>& ev = rank.events;
  auto kind = [&](size_t i) { return kind_of(identities[ev[i].identity].func); };
  // The single request a Wait completes (raw id, before ids become refs).
  auto waited = [&](size_t i) -> int64_t {
    if (ev[i].lists < 0) return kNone;
    const auto& refs = rank.lists[static_cast<size_t>(ev[i].lists)][size_t(ListField::reqrefs)];
    return refs.size() == 1 ? refs[0] : kNone;
  };
  std::vector<RankEvent> out;
  std::vector<int64_t> gaps;
  std::unordered_map<int64_t, size_t> irecv_at;  // request id -> index of its Irecv in the run
  size_t i = 0;
  while (i < ev.size()) {
    Kind k = kind(i);
    if (k != Kind::kSend && k != Kind::kRecv && k != Kind::kIrecv) {
      ++i;
      continue;
    }
    // The maximal run [i, j): sends, receives, and Waits on an Irecv of the run.
    irecv_at.clear();
    size_t j = i;
    for (; j < ev.size(); ++j) {
      Kind kj = kind(j);
      if (kj == Kind::kIrecv && ev[j].created_request != kNone) irecv_at[ev[j].created_request] = j;
      if (kj == Kind::kSend || kj == Kind::kRecv || kj == Kind::kIrecv) continue;
      if (kj == Kind::kWait) {
        int64_t id = waited(j);
        if (id != kNone && irecv_at.count(id)) continue;
      }
      break;
    }
    if (j - i > 1) {
      // Canonical order: each Irecv followed by its Wait, then the sends,
      // then the other receives; stable inside each class.
      std::unordered_map<size_t, size_t> wait_for;  // Irecv index -> its Wait index
      for (size_t q = i; q < j; ++q)
        if (kind(q) == Kind::kWait) wait_for[irecv_at[waited(q)]] = q;
      out.clear();
      for (size_t q = i; q < j; ++q)
        if (kind(q) == Kind::kIrecv && wait_for.count(q)) {
          out.push_back(ev[q]);
          out.push_back(ev[wait_for[q]]);
        }
      for (size_t q = i; q < j; ++q)
        if (kind(q) == Kind::kSend) out.push_back(ev[q]);
      for (size_t q = i; q < j; ++q)
        if (kind(q) == Kind::kRecv || (kind(q) == Kind::kIrecv && !wait_for.count(q))) out.push_back(ev[q]);
      // Computation gaps belong to positions, not to calls.
      gaps.clear();
      for (size_t q = i; q < j; ++q) gaps.push_back(ev[q].gap);
      for (size_t q = i; q < j; ++q) {
        ev[q] = out[q - i];
        ev[q].gap = gaps[q - i];
      }
    }
    i = j;
  }
}

}  // namespace skt::merge
