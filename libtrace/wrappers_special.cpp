// The hand-written wrappers: start and end of the run, persistent-request
// starts, and the completion family (Wait*/Test*/Request_free/Cancel), in C and
// Fortran. Everything else is generated from mpi_calls.list.
//
// Completion calls record the tracer ids of the requests they completed (in
// the order MPI reports them) and, for receives posted with MPI_ANY_SOURCE,
// the world rank that actually matched. Handles are read before the call,
// because completion resets them to MPI_REQUEST_NULL. Each wrapper only says
// how to make the call and which requests it completed; the templates below
// do the rest.
#include <mpi.h>

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
  std::vector<uintptr_t> kept_at;  // where the program keeps each
  std::vector<RequestInfo> infos;
  std::vector<int64_t> ids, sources;
  bool any_source = false;

  void capture_c(const MPI_Request* reqs, int n) {
    handles.assign(reqs, reqs + (n > 0 ? n : 0));
    kept_at.resize(handles.size());
    for (size_t i = 0; i < handles.size(); ++i) kept_at[i] = reinterpret_cast<uintptr_t>(reqs + i);
    fill();
  }
  void capture_f(const MPI_Fint* reqs, int n) {
    handles.resize(n > 0 ? static_cast<size_t>(n) : 0);
    kept_at.resize(handles.size());
    for (size_t i = 0; i < handles.size(); ++i) {
      handles[i] = MPI_Request_f2c(reqs[i]);
      kept_at[i] = reinterpret_cast<uintptr_t>(reqs + i);
    }
    fill();
  }
  void fill() {
    infos.resize(handles.size());
    any_source = false;
    for (size_t i = 0; i < handles.size(); ++i) {
      infos[i] = request_info(handles[i], 0, kept_at[i]);
      if (infos[i].shared && !infos[i].by_address) {  // else the n-th occurrence is its n-th live request
        int nth = 0;
        for (size_t j = 0; j < i; ++j) nth += handles[j] == handles[i];
        if (nth) infos[i] = request_info(handles[i], nth, 0);
      }
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

// One completion call from C. `statuses` is what the caller passed (a status
// or an array of n); when it is ignored but the tracer needs a matched
// source, the call gets the tracer's own array. call(statuses) makes the MPI
// call; done(report) calls report(request index, status index) for every
// request completed and returns false when a Test* completed nothing.
template <typename Call, typename Done>
int completion_c(uint32_t func, const void* ret, const MPI_Request* reqs, int n, MPI_Status* statuses,
                 int nstatuses, Call call, Done done) {
  Pending& p = t_pending;
  p.capture_c(reqs, n);
  bool ignored = statuses == MPI_STATUS_IGNORE || statuses == MPI_STATUSES_IGNORE;
  std::vector<MPI_Status> own;
  if (ignored && p.any_source) {
    own.resize(static_cast<size_t>(nstatuses > 0 ? nstatuses : 1));
    statuses = own.data();
    ignored = false;
  }
  Rec r(func, ret);
  r.t0 = now_ns();
  int rc = call(statuses);
  r.t1 = now_ns();
  bool any = done([&](int i, int k) { p.completed(i, ignored ? nullptr : &statuses[k]); });
  if (!any) r.flags |= kFlagTestFailed;
  p.to(r);
  record(r);
  leave();
  return rc;
}

// The same from Fortran: statuses are INTEGER arrays, and done reports
// 1-based request indices, as Fortran gives them.
template <typename Call, typename Done>
void completion_f(uint32_t func, const void* ret, const MPI_Fint* reqs, int n, MPI_Fint* statuses, int nstatuses,
                  Call call, Done done) {
  Pending& p = t_pending;
  p.capture_f(reqs, n);
  bool ignored = statuses == MPI_F_STATUS_IGNORE || statuses == MPI_F_STATUSES_IGNORE;
  std::vector<MPI_Fint> own;
  if (ignored && p.any_source) {
    own.assign(static_cast<size_t>(nstatuses > 0 ? nstatuses : 1) * SKT_F_STATUS_SIZE, 0);
    statuses = own.data();
    ignored = false;
  }
  Rec r(func, ret);
  r.flags |= kFlagFortran;
  r.t0 = now_ns();
  call(statuses);
  r.t1 = now_ns();
  bool any = done([&](int i, int k) {
    MPI_Status cs;
    if (!ignored) MPI_Status_f2c(statuses + static_cast<size_t>(k) * SKT_F_STATUS_SIZE, &cs);
    p.completed(i - 1, ignored ? nullptr : &cs);
  });
  if (!any) r.flags |= kFlagTestFailed;
  p.to(r);
  record(r);
  leave();
}

// Start, Startall, Request_free, Cancel: record the ids of the requests named
// (reqs: MPI_Request[] from C, MPI_Fint[] from Fortran).
template <typename Call>
void request_call(uint32_t func, const void* ret, const void* reqs, int n, bool frees, bool fortran, Call call) {
  Pending& p = t_pending;
  if (fortran) p.capture_f(static_cast<const MPI_Fint*>(reqs), n);
  else p.capture_c(static_cast<const MPI_Request*>(reqs), n);
  Rec r(func, ret);
  if (fortran) r.flags |= kFlagFortran;
  r.t0 = now_ns();
  call();
  r.t1 = now_ns();
  for (size_t i = 0; i < p.infos.size(); ++i) {
    p.ids.push_back(p.infos[i].id);
    if (frees) request_freed(p.handles[i], p.infos[i]);
  }
  p.to(r);
  record(r);
  leave();
}

// Calls report for 0..n-1 (Waitall, a successful Testall).
template <typename Report>
bool all(int n, Report report, int base = 0) {
  for (int i = 0; i < n; ++i) report(i + base, i);
  return true;
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
  before_finalize();
  mark_entry();
  int64_t t0 = now_ns();
  finish_in_job(t0, __builtin_return_address(0), false);
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
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Start(request);
    int rc = 0;
    request_call(kFunc_MPI_Start, ret, request, 1, false, false,
                 [&] { rc = PMPI_Start(request); });
    return rc;
  });
}

extern "C" int MPI_Startall(int count, MPI_Request reqs[]) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Startall(count, reqs);
    int rc = 0;
    request_call(kFunc_MPI_Startall, ret, reqs, count, false, false,
                 [&] { rc = PMPI_Startall(count, reqs); });
    return rc;
  });
}

extern "C" int MPI_Request_free(MPI_Request* request) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Request_free(request);
    int rc = 0;
    request_call(kFunc_MPI_Request_free, ret, request, 1, true, false,
                 [&] { rc = PMPI_Request_free(request); });
    return rc;
  });
}

// A cancelled request stays until its Wait*/Test* completes it: not freed here.
extern "C" int MPI_Cancel(MPI_Request* request) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Cancel(request);
    int rc = 0;
    request_call(kFunc_MPI_Cancel, ret, request, 1, false, false, [&] { rc = PMPI_Cancel(request); });
    return rc;
  });
}

extern "C" int MPI_Wait(MPI_Request* request, MPI_Status* status) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Wait(request, status);
    return completion_c(
        kFunc_MPI_Wait, ret, request, 1, status, 1,
        [&](MPI_Status* st) { return PMPI_Wait(request, st); }, [](auto report) { return all(1, report); });
  });
}

extern "C" int MPI_Waitall(int count, MPI_Request reqs[], MPI_Status statuses[]) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Waitall(count, reqs, statuses);
    return completion_c(
        kFunc_MPI_Waitall, ret, reqs, count, statuses, count,
        [&](MPI_Status* st) { return PMPI_Waitall(count, reqs, st); }, [&](auto report) { return all(count, report); });
  });
}

extern "C" int MPI_Waitany(int count, MPI_Request reqs[], int* index, MPI_Status* status) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Waitany(count, reqs, index, status);
    return completion_c(
        kFunc_MPI_Waitany, ret, reqs, count, status, 1,
        [&](MPI_Status* st) { return PMPI_Waitany(count, reqs, index, st); },
        [&](auto report) {
          if (*index != MPI_UNDEFINED) report(*index, 0);
          return true;
        });
  });
}

extern "C" int MPI_Waitsome(int incount, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Waitsome(incount, reqs, outcount, indices, statuses);
    return completion_c(
        kFunc_MPI_Waitsome, ret, reqs, incount, statuses, incount,
        [&](MPI_Status* st) { return PMPI_Waitsome(incount, reqs, outcount, indices, st); },
        [&](auto report) {
          for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; ++k) report(indices[k], k);
          return true;
        });
  });
}

extern "C" int MPI_Test(MPI_Request* request, int* flag, MPI_Status* status) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Test(request, flag, status);
    return completion_c(
        kFunc_MPI_Test, ret, request, 1, status, 1,
        [&](MPI_Status* st) { return PMPI_Test(request, flag, st); },
        [&](auto report) { return *flag && all(1, report); });
  });
}

extern "C" int MPI_Testall(int count, MPI_Request reqs[], int* flag, MPI_Status statuses[]) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Testall(count, reqs, flag, statuses);
    return completion_c(
        kFunc_MPI_Testall, ret, reqs, count, statuses, count,
        [&](MPI_Status* st) { return PMPI_Testall(count, reqs, flag, st); },
        [&](auto report) { return *flag && all(count, report); });
  });
}

extern "C" int MPI_Testany(int count, MPI_Request reqs[], int* index, int* flag, MPI_Status* status) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Testany(count, reqs, index, flag, status);
    return completion_c(
        kFunc_MPI_Testany, ret, reqs, count, status, 1,
        [&](MPI_Status* st) { return PMPI_Testany(count, reqs, index, flag, st); },
        [&](auto report) {
          if (*flag && *index != MPI_UNDEFINED) report(*index, 0);
          return *flag != 0;
        });
  });
}

extern "C" int MPI_Testsome(int incount, MPI_Request reqs[], int* outcount, int indices[], MPI_Status statuses[]) {
  return scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return PMPI_Testsome(incount, reqs, outcount, indices, statuses);
    return completion_c(
        kFunc_MPI_Testsome, ret, reqs, incount, statuses, incount,
        [&](MPI_Status* st) { return PMPI_Testsome(incount, reqs, outcount, indices, st); },
        [&](auto report) {
          for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; ++k) report(indices[k], k);
          return *outcount != 0;
        });
  });
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
SKT_F_DECL(pmpi_request_free_, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_cancel_, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_wait_, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_waitall_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_waitany_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_waitsome_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_test_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_testall_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_testany_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);
SKT_F_DECL(pmpi_testsome_, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*, MPI_Fint*);

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
  before_finalize();
  push();
  mark_entry();
  int64_t t0 = now_ns();
  finish_in_job(t0, __builtin_return_address(0), true);
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
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_start_(request, ierr);
    request_call(kFunc_MPI_Start, ret, request, 1, false, true,
                 [&] { pmpi_start_(request, ierr); });
  });
}

extern "C" void mpi_startall_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_startall_(count, reqs, ierr);
    request_call(kFunc_MPI_Startall, ret, reqs, *count, false, true,
                 [&] { pmpi_startall_(count, reqs, ierr); });
  });
}

extern "C" void mpi_request_free_(MPI_Fint* request, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_request_free_(request, ierr);
    request_call(kFunc_MPI_Request_free, ret, request, 1, true, true,
                 [&] { pmpi_request_free_(request, ierr); });
  });
}

extern "C" void mpi_cancel_(MPI_Fint* request, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_cancel_(request, ierr);
    request_call(kFunc_MPI_Cancel, ret, request, 1, false, true, [&] { pmpi_cancel_(request, ierr); });
  });
}

extern "C" void mpi_wait_(MPI_Fint* request, MPI_Fint* status, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_wait_(request, status, ierr);
    completion_f(
        kFunc_MPI_Wait, ret, request, 1, status, 1,
        [&](MPI_Fint* st) { pmpi_wait_(request, st, ierr); }, [](auto report) { return all(1, report, 1); });
  });
}

extern "C" void mpi_waitall_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* statuses, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_waitall_(count, reqs, statuses, ierr);
    completion_f(
        kFunc_MPI_Waitall, ret, reqs, *count, statuses, *count,
        [&](MPI_Fint* st) { pmpi_waitall_(count, reqs, st, ierr); },
        [&](auto report) { return all(*count, report, 1); });
  });
}

extern "C" void mpi_waitany_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* index, MPI_Fint* status, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_waitany_(count, reqs, index, status, ierr);
    completion_f(
        kFunc_MPI_Waitany, ret, reqs, *count, status, 1,
        [&](MPI_Fint* st) { pmpi_waitany_(count, reqs, index, st, ierr); },
        [&](auto report) {
          if (*index != MPI_UNDEFINED) report(*index, 0);
          return true;
        });
  });
}

extern "C" void mpi_waitsome_(MPI_Fint* incount, MPI_Fint* reqs, MPI_Fint* outcount, MPI_Fint* indices,
                              MPI_Fint* statuses, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_waitsome_(incount, reqs, outcount, indices, statuses, ierr);
    completion_f(
        kFunc_MPI_Waitsome, ret, reqs, *incount, statuses, *incount,
        [&](MPI_Fint* st) { pmpi_waitsome_(incount, reqs, outcount, indices, st, ierr); },
        [&](auto report) {
          for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; ++k) report(indices[k], k);
          return true;
        });
  });
}

extern "C" void mpi_test_(MPI_Fint* request, MPI_Fint* flag, MPI_Fint* status, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_test_(request, flag, status, ierr);
    completion_f(
        kFunc_MPI_Test, ret, request, 1, status, 1,
        [&](MPI_Fint* st) { pmpi_test_(request, flag, st, ierr); },
        [&](auto report) { return *flag && all(1, report, 1); });
  });
}

extern "C" void mpi_testall_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* flag, MPI_Fint* statuses, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_testall_(count, reqs, flag, statuses, ierr);
    completion_f(
        kFunc_MPI_Testall, ret, reqs, *count, statuses, *count,
        [&](MPI_Fint* st) { pmpi_testall_(count, reqs, flag, st, ierr); },
        [&](auto report) { return *flag && all(*count, report, 1); });
  });
}

extern "C" void mpi_testany_(MPI_Fint* count, MPI_Fint* reqs, MPI_Fint* index, MPI_Fint* flag, MPI_Fint* status,
                             MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_testany_(count, reqs, index, flag, status, ierr);
    completion_f(
        kFunc_MPI_Testany, ret, reqs, *count, status, 1,
        [&](MPI_Fint* st) { pmpi_testany_(count, reqs, index, flag, st, ierr); },
        [&](auto report) {
          if (*flag && *index != MPI_UNDEFINED) report(*index, 0);
          return *flag != 0;
        });
  });
}

extern "C" void mpi_testsome_(MPI_Fint* incount, MPI_Fint* reqs, MPI_Fint* outcount, MPI_Fint* indices,
                              MPI_Fint* statuses, MPI_Fint* ierr) {
  scrubbed(__builtin_return_address(0), [&](const void* ret) SKT_OWN_FRAME {
    if (!enter()) return pmpi_testsome_(incount, reqs, outcount, indices, statuses, ierr);
    completion_f(
        kFunc_MPI_Testsome, ret, reqs, *incount, statuses, *incount,
        [&](MPI_Fint* st) { pmpi_testsome_(incount, reqs, outcount, indices, st, ierr); },
        [&](auto report) {
          for (int k = 0; *outcount != MPI_UNDEFINED && k < *outcount; ++k) report(indices[k], k);
          return *outcount != 0;
        });
  });
}
