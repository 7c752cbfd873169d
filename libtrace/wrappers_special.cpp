// The hand-written wrappers: start and end of the run, persistent-request
// starts, and the completion family (Wait*/Test*/Request_free), in C and
// Fortran. Everything else is generated from mpi_calls.list.
//
// Completion calls record the tracer ids of the requests they completed (in
// the order MPI reports them) and, for receives posted with MPI_ANY_SOURCE,
// the world rank that actually matched. Handles are read before the call,
// because completion resets them to MPI_REQUEST_NULL.
#include <mpi.h>

#include <cstring>
#include <unordered_map>
#include <vector>

#include "skel/skel_funcs.h"
#include "tracer_core.h"

using namespace skt;
using namespace skt::tracer;

#ifdef MPI_F_STATUS_SIZE
#define SKT_F_STATUS_SIZE MPI_F_STATUS_SIZE
#else
#define SKT_F_STATUS_SIZE (sizeof(MPI_Status) / sizeof(MPI_Fint))
#endif

namespace {

// The requests a completion call was given, captured before the call.
struct Pending {
  std::vector<MPI_Request> handles;
  std::vector<RequestInfo> infos;
  std::vector<int64_t> ids, sources;
  std::unordered_map<uint64_t, int> seen;
  bool any_source = false;

  void capture_c(const MPI_Request* reqs, int n) {
    handles.assign(reqs, reqs + (n > 0 ? n : 0));
    fill();
  }
  void capture_f(const MPI_Fint* reqs, int n) {
    handles.resize(n > 0 ? static_cast<size_t>(n) : 0);
    for (size_t i = 0; i < handles.size(); ++i) handles[i] = MPI_Request_f2c(reqs[i]);
    fill();
  }
  void fill() {
    infos.resize(handles.size());
    any_source = false;
    seen.clear();
    for (size_t i = 0; i < handles.size(); ++i) {
      int nth = 0;
      if (handles.size() > 1) {  // the n-th occurrence of a shared handle is its n-th live request
        uint64_t key = 0;
        std::memcpy(&key, &handles[i], sizeof handles[i]);
        nth = seen[key]++;
      }
      infos[i] = request_info(handles[i], nth);
      any_source |= infos[i].any_source_recv;
    }
    ids.clear();
    sources.clear();
  }
  // Request i completed; st is its status (or nullptr).
  void completed(int i, const MPI_Status* st) {
    if (i < 0 || static_cast<size_t>(i) >= handles.size()) return;
    const RequestInfo& ri = infos[static_cast<size_t>(i)];
    if (handles[static_cast<size_t>(i)] == MPI_REQUEST_NULL) return;
    ids.push_back(ri.id);
    sources.push_back(ri.any_source_recv && st ? world_rank_of(ri.comm_id, st->MPI_SOURCE) : kNoSource);
    request_done(handles[static_cast<size_t>(i)], ri);
  }
  void to(Rec& r) {
    r.req_ids = ids.data();
    r.nreqs = static_cast<int>(ids.size());
    bool any = false;
    for (int64_t s : sources) any |= s != kNoSource;
    if (any) r.req_sources = sources.data();
  }
};

thread_local Pending t_pending;

// A Fortran status (or array of them) converted to C, when one is needed.
MPI_Status f_status(const MPI_Fint* fst) {
  MPI_Status s;
  MPI_Status_f2c(fst, &s);
  return s;
}

}  // namespace

// ------------------------------------------------------------------ C

extern "C" int MPI_Init(int* argc, char*** argv) {
  if (nested()) return PMPI_Init(argc, argv);
  int64_t t0 = now_ns();
  int rc = PMPI_Init(argc, argv);
  int64_t t1 = now_ns();
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  start(t0, t1, kFunc_MPI_Init, __builtin_return_address(0), provided, false);
  return rc;
}

extern "C" int MPI_Init_thread(int* argc, char*** argv, int required, int* provided) {
  if (nested()) return PMPI_Init_thread(argc, argv, required, provided);
  int64_t t0 = now_ns();
  int rc = PMPI_Init_thread(argc, argv, required, provided);
  int64_t t1 = now_ns();
  start(t0, t1, kFunc_MPI_Init_thread, __builtin_return_address(0), *provided, false);
  return rc;
}

extern "C" int MPI_Finalize(void) {
  if (nested()) return PMPI_Finalize();
  int64_t t0 = now_ns();
  int rc = PMPI_Finalize();
  int64_t t1 = now_ns();
  finish(t0, t1, __builtin_return_address(0), false);
  return rc;
}

extern "C" int MPI_Abort(MPI_Comm comm, int errorcode) {
  if (!nested()) abort_flush(__builtin_return_address(0), comm, errorcode, false);
  return PMPI_Abort(comm, errorcode);
}

extern "C" int MPI_Start(MPI_Request* request) {
  if (!enter()) return PMPI_Start(request);
  Pending& p = t_pending;
  p.capture_c(request, 1);
  Rec r(kFunc_MPI_Start, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Start(request);
  r.t1 = now_ns();
  p.ids.push_back(p.infos[0].id);
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Startall(int count, MPI_Request reqs[]) {
  if (!enter()) return PMPI_Startall(count, reqs);
  Pending& p = t_pending;
  p.capture_c(reqs, count);
  Rec r(kFunc_MPI_Startall, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Startall(count, reqs);
  r.t1 = now_ns();
  for (const RequestInfo& ri : p.infos) p.ids.push_back(ri.id);
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  if (!enter()) return PMPI_Wait(request, status);
  Pending& p = t_pending;
  p.capture_c(request, 1);
  MPI_Status own;
  if (status == MPI_STATUS_IGNORE && p.any_source) status = &own;
  Rec r(kFunc_MPI_Wait, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Wait(request, status);
  r.t1 = now_ns();
  p.completed(0, status == MPI_STATUS_IGNORE ? nullptr : status);
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[]) {
  if (!enter()) return PMPI_Waitall(count, reqs, statuses);
  Pending& p = t_pending;
  p.capture_c(reqs, count);
  std::vector<MPI_Status> own;
  if (statuses == MPI_STATUSES_IGNORE && p.any_source) {
    own.resize(static_cast<size_t>(count));
    statuses = own.data();
  }
  Rec r(kFunc_MPI_Waitall, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Waitall(count, reqs, statuses);
  r.t1 = now_ns();
  for (int i = 0; i < count; ++i) p.completed(i, statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[i]);
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Waitany(int count, MPI_Request reqs[], int* index, MPI_Status* status) {
  if (!enter()) return PMPI_Waitany(count, reqs, index, status);
  Pending& p = t_pending;
  p.capture_c(reqs, count);
  MPI_Status own;
  if (status == MPI_STATUS_IGNORE && p.any_source) status = &own;
  Rec r(kFunc_MPI_Waitany, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Waitany(count, reqs, index, status);
  r.t1 = now_ns();
  if (*index != MPI_UNDEFINED) p.completed(*index, status == MPI_STATUS_IGNORE ? nullptr : status);
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Waitsome(int incount, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!enter()) return PMPI_Waitsome(incount, reqs, outcount, indices, statuses);
  Pending& p = t_pending;
  p.capture_c(reqs, incount);
  std::vector<MPI_Status> own;
  if (statuses == MPI_STATUSES_IGNORE && p.any_source) {
    own.resize(static_cast<size_t>(incount));
    statuses = own.data();
  }
  Rec r(kFunc_MPI_Waitsome, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Waitsome(incount, reqs, outcount, indices, statuses);
  r.t1 = now_ns();
  if (*outcount != MPI_UNDEFINED)
    for (int k = 0; k < *outcount; ++k)
      p.completed(indices[k], statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[k]);
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  if (!enter()) return PMPI_Test(request, flag, status);
  Pending& p = t_pending;
  p.capture_c(request, 1);
  MPI_Status own;
  if (status == MPI_STATUS_IGNORE && p.any_source) status = &own;
  Rec r(kFunc_MPI_Test, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Test(request, flag, status);
  r.t1 = now_ns();
  if (*flag) p.completed(0, status == MPI_STATUS_IGNORE ? nullptr : status);
  else r.flags |= kFlagTestFailed;
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Testall(int count, MPI_Request reqs[], int* flag, MPI_Status statuses[]) {
  if (!enter()) return PMPI_Testall(count, reqs, flag, statuses);
  Pending& p = t_pending;
  p.capture_c(reqs, count);
  std::vector<MPI_Status> own;
  if (statuses == MPI_STATUSES_IGNORE && p.any_source) {
    own.resize(static_cast<size_t>(count));
    statuses = own.data();
  }
  Rec r(kFunc_MPI_Testall, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Testall(count, reqs, flag, statuses);
  r.t1 = now_ns();
  if (*flag) {
    for (int i = 0; i < count; ++i) p.completed(i, statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[i]);
  } else {
    r.flags |= kFlagTestFailed;
  }
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Testany(int count, MPI_Request reqs[], int* index, int* flag, MPI_Status* status) {
  if (!enter()) return PMPI_Testany(count, reqs, index, flag, status);
  Pending& p = t_pending;
  p.capture_c(reqs, count);
  MPI_Status own;
  if (status == MPI_STATUS_IGNORE && p.any_source) status = &own;
  Rec r(kFunc_MPI_Testany, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Testany(count, reqs, index, flag, status);
  r.t1 = now_ns();
  if (*flag && *index != MPI_UNDEFINED) p.completed(*index, status == MPI_STATUS_IGNORE ? nullptr : status);
  else if (!*flag) r.flags |= kFlagTestFailed;
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Testsome(int incount, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  if (!enter()) return PMPI_Testsome(incount, reqs, outcount, indices, statuses);
  Pending& p = t_pending;
  p.capture_c(reqs, incount);
  std::vector<MPI_Status> own;
  if (statuses == MPI_STATUSES_IGNORE && p.any_source) {
    own.resize(static_cast<size_t>(incount));
    statuses = own.data();
  }
  Rec r(kFunc_MPI_Testsome, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Testsome(incount, reqs, outcount, indices, statuses);
  r.t1 = now_ns();
  if (*outcount != MPI_UNDEFINED && *outcount > 0) {
    for (int k = 0; k < *outcount; ++k)
      p.completed(indices[k], statuses == MPI_STATUSES_IGNORE ? nullptr : &statuses[k]);
  } else if (*outcount == 0) {
    r.flags |= kFlagTestFailed;
  }
  p.to(r);
  record(r);
  leave();
  return rc;
}

extern "C" int MPI_Request_free(MPI_Request* request) {
  if (!enter()) return PMPI_Request_free(request);
  Pending& p = t_pending;
  p.capture_c(request, 1);
  Rec r(kFunc_MPI_Request_free, __builtin_return_address(0));
  r.t0 = now_ns();
  int rc = PMPI_Request_free(request);
  r.t1 = now_ns();
  request_freed(p.handles[0], p.infos[0]);
  p.ids.push_back(p.infos[0].id);
  p.to(r);
  record(r);
  leave();
  return rc;
}

// ------------------------------------------------------------------ Fortran
// Forward to the MPI library's own Fortran binding (pmpi_xxx_), which
// handles MPI_IN_PLACE, MPI_STATUS(ES)_IGNORE and the other sentinels.
// Where that binding calls the C MPI_ symbols (MPICH), the nesting guard
// keeps the C wrappers from recording the call a second time.

#define SKT_F_DECL(name, ...) extern "C" void name(__VA_ARGS__) __attribute__((weak))
SKT_F_DECL(pmpi_init_, MPI_Fint*);
SKT_F_DECL(pmpi_init_thread_, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_finalize_, MPI_Fint*);
SKT_F_DECL(pmpi_abort_, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_start_, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_startall_, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_wait_, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_waitall_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_waitany_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_waitsome_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_test_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_testall_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_testany_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_testsome_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_request_free_, MPI_Fint*, MPI_Fint*);

namespace {
// Fortran MPI_STATUS(ES)_IGNORE replaced by our own buffer when the tracer
// needs the matched source; returns the array to pass on.
MPI_Fint* f_statuses(MPI_Fint* st, int n, bool needed, std::vector<MPI_Fint>& own, bool many) {
  bool ignored = many ? st == MPI_F_STATUSES_IGNORE : st == MPI_F_STATUS_IGNORE;
  if (!ignored || !needed) return st;
  own.assign(static_cast<size_t>(n > 0 ? n : 1) * SKT_F_STATUS_SIZE + 8, 0);
  return own.data();
}
bool f_ignored(const MPI_Fint* st) { return st == MPI_F_STATUS_IGNORE || st == MPI_F_STATUSES_IGNORE; }
}  // namespace

extern "C" void mpi_init_(MPI_Fint* ierr) {
  if (nested()) return pmpi_init_(ierr);
  push();
  int64_t t0 = now_ns();
  pmpi_init_(ierr);
  int64_t t1 = now_ns();
  pop();
  int provided = MPI_THREAD_SINGLE;
  PMPI_Query_thread(&provided);
  start(t0, t1, kFunc_MPI_Init, __builtin_return_address(0), provided, true);
}

extern "C" void mpi_init_thread_(MPI_Fint* required, MPI_Fint* provided, MPI_Fint* ierr) {
  if (nested()) return pmpi_init_thread_(required, provided, ierr);
  push();
  int64_t t0 = now_ns();
  pmpi_init_thread_(required, provided, ierr);
  int64_t t1 = now_ns();
  pop();
  start(t0, t1, kFunc_MPI_Init_thread, __builtin_return_address(0), *provided, true);
}

extern "C" void mpi_finalize_(MPI_Fint* ierr) {
  if (nested()) return pmpi_finalize_(ierr);
  push();
  int64_t t0 = now_ns();
  pmpi_finalize_(ierr);
  int64_t t1 = now_ns();
  pop();
  finish(t0, t1, __builtin_return_address(0), true);
}

extern "C" void mpi_abort_(MPI_Fint* comm, MPI_Fint* errorcode, MPI_Fint* ierr) {
  if (!nested()) abort_flush(__builtin_return_address(0), MPI_Comm_f2c(*comm), *errorcode, true);
  push();
  pmpi_abort_(comm, errorcode, ierr);
  pop();
}

extern "C" void mpi_start_(MPI_Fint* request, MPI_Fint* ierr) {
  if (!enter()) return pmpi_start_(request, ierr);
  Pending& p = t_pending;
  p.capture_f(request, 1);
  Rec r(kFunc_MPI_Start, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_start_(request, ierr);
  r.t1 = now_ns();
  p.ids.push_back(p.infos[0].id);
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_startall_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* ierr) {
  if (!enter()) return pmpi_startall_(count, reqs, ierr);
  Pending& p = t_pending;
  p.capture_f(reqs, *count);
  Rec r(kFunc_MPI_Startall, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_startall_(count, reqs, ierr);
  r.t1 = now_ns();
  for (const RequestInfo& ri : p.infos) p.ids.push_back(ri.id);
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_wait_(MPI_Fint* request, MPI_Fint* status, MPI_Fint* ierr) {
  if (!enter()) return pmpi_wait_(request, status, ierr);
  Pending& p = t_pending;
  p.capture_f(request, 1);
  std::vector<MPI_Fint> own;
  status = f_statuses(status, 1, p.any_source, own, false);
  Rec r(kFunc_MPI_Wait, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_wait_(request, status, ierr);
  r.t1 = now_ns();
  MPI_Status cs;
  if (!f_ignored(status)) cs = f_status(status);
  p.completed(0, f_ignored(status) ? nullptr : &cs);
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_waitall_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* statuses, MPI_Fint* ierr) {
  if (!enter()) return pmpi_waitall_(count, reqs, statuses, ierr);
  Pending& p = t_pending;
  p.capture_f(reqs, *count);
  std::vector<MPI_Fint> own;
  statuses = f_statuses(statuses, *count, p.any_source, own, true);
  Rec r(kFunc_MPI_Waitall, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_waitall_(count, reqs, statuses, ierr);
  r.t1 = now_ns();
  for (int i = 0; i < *count; ++i) {
    MPI_Status cs;
    if (!f_ignored(statuses)) cs = f_status(statuses + static_cast<size_t>(i) * SKT_F_STATUS_SIZE);
    p.completed(i, f_ignored(statuses) ? nullptr : &cs);
  }
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_waitany_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* index, MPI_Fint* status, MPI_Fint* ierr) {
  if (!enter()) return pmpi_waitany_(count, reqs, index, status, ierr);
  Pending& p = t_pending;
  p.capture_f(reqs, *count);
  std::vector<MPI_Fint> own;
  status = f_statuses(status, 1, p.any_source, own, false);
  Rec r(kFunc_MPI_Waitany, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_waitany_(count, reqs, index, status, ierr);
  r.t1 = now_ns();
  if (*index != MPI_UNDEFINED) {  // Fortran indices are 1-based
    MPI_Status cs;
    if (!f_ignored(status)) cs = f_status(status);
    p.completed(*index - 1, f_ignored(status) ? nullptr : &cs);
  }
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_waitsome_(MPI_Fint* incount, MPI_Fint* reqs, MPI_Fint* outcount, MPI_Fint* indices,
                              MPI_Fint* statuses, MPI_Fint* ierr) {
  if (!enter()) return pmpi_waitsome_(incount, reqs, outcount, indices, statuses, ierr);
  Pending& p = t_pending;
  p.capture_f(reqs, *incount);
  std::vector<MPI_Fint> own;
  statuses = f_statuses(statuses, *incount, p.any_source, own, true);
  Rec r(kFunc_MPI_Waitsome, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_waitsome_(incount, reqs, outcount, indices, statuses, ierr);
  r.t1 = now_ns();
  if (*outcount != MPI_UNDEFINED)
    for (int k = 0; k < *outcount; ++k) {
      MPI_Status cs;
      if (!f_ignored(statuses)) cs = f_status(statuses + static_cast<size_t>(k) * SKT_F_STATUS_SIZE);
      p.completed(indices[k] - 1, f_ignored(statuses) ? nullptr : &cs);
    }
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_test_(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierr) {
  if (!enter()) return pmpi_test_(request, flag, status, ierr);
  Pending& p = t_pending;
  p.capture_f(request, 1);
  std::vector<MPI_Fint> own;
  status = f_statuses(status, 1, p.any_source, own, false);
  Rec r(kFunc_MPI_Test, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_test_(request, flag, status, ierr);
  r.t1 = now_ns();
  if (*flag) {
    MPI_Status cs;
    if (!f_ignored(status)) cs = f_status(status);
    p.completed(0, f_ignored(status) ? nullptr : &cs);
  } else {
    r.flags |= kFlagTestFailed;
  }
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_testall_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* flag, MPI_Fint* statuses, MPI_Fint* ierr) {
  if (!enter()) return pmpi_testall_(count, reqs, flag, statuses, ierr);
  Pending& p = t_pending;
  p.capture_f(reqs, *count);
  std::vector<MPI_Fint> own;
  statuses = f_statuses(statuses, *count, p.any_source, own, true);
  Rec r(kFunc_MPI_Testall, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_testall_(count, reqs, flag, statuses, ierr);
  r.t1 = now_ns();
  if (*flag) {
    for (int i = 0; i < *count; ++i) {
      MPI_Status cs;
      if (!f_ignored(statuses)) cs = f_status(statuses + static_cast<size_t>(i) * SKT_F_STATUS_SIZE);
      p.completed(i, f_ignored(statuses) ? nullptr : &cs);
    }
  } else {
    r.flags |= kFlagTestFailed;
  }
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_testany_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* index, MPI_Fint* flag, MPI_Fint* status,
                             MPI_Fint* ierr) {
  if (!enter()) return pmpi_testany_(count, reqs, index, flag, status, ierr);
  Pending& p = t_pending;
  p.capture_f(reqs, *count);
  std::vector<MPI_Fint> own;
  status = f_statuses(status, 1, p.any_source, own, false);
  Rec r(kFunc_MPI_Testany, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_testany_(count, reqs, index, flag, status, ierr);
  r.t1 = now_ns();
  if (*flag && *index != MPI_UNDEFINED) {
    MPI_Status cs;
    if (!f_ignored(status)) cs = f_status(status);
    p.completed(*index - 1, f_ignored(status) ? nullptr : &cs);
  } else if (!*flag) {
    r.flags |= kFlagTestFailed;
  }
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_testsome_(MPI_Fint* incount, MPI_Fint* reqs, MPI_Fint* outcount, MPI_Fint* indices,
                              MPI_Fint* statuses, MPI_Fint* ierr) {
  if (!enter()) return pmpi_testsome_(incount, reqs, outcount, indices, statuses, ierr);
  Pending& p = t_pending;
  p.capture_f(reqs, *incount);
  std::vector<MPI_Fint> own;
  statuses = f_statuses(statuses, *incount, p.any_source, own, true);
  Rec r(kFunc_MPI_Testsome, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_testsome_(incount, reqs, outcount, indices, statuses, ierr);
  r.t1 = now_ns();
  if (*outcount != MPI_UNDEFINED && *outcount > 0) {
    for (int k = 0; k < *outcount; ++k) {
      MPI_Status cs;
      if (!f_ignored(statuses)) cs = f_status(statuses + static_cast<size_t>(k) * SKT_F_STATUS_SIZE);
      p.completed(indices[k] - 1, f_ignored(statuses) ? nullptr : &cs);
    }
  } else if (*outcount == 0) {
    r.flags |= kFlagTestFailed;
  }
  p.to(r);
  record(r);
  leave();
}

extern "C" void mpi_request_free_(MPI_Fint* request, MPI_Fint* ierr) {
  if (!enter()) return pmpi_request_free_(request, ierr);
  Pending& p = t_pending;
  p.capture_f(request, 1);
  Rec r(kFunc_MPI_Request_free, __builtin_return_address(0));
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  pmpi_request_free_(request, ierr);
  r.t1 = now_ns();
  request_freed(p.handles[0], p.infos[0]);
  p.ids.push_back(p.infos[0].id);
  p.to(r);
  record(r);
  leave();
}
