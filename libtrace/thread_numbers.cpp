// Thread numbers for MPI_THREAD_MULTIPLE traces (docs/tracer.md, "Threads").
//
// The tracer wraps pthread_create: every thread the program (or a library
// it uses, an OpenMP runtime, the MPI itself) creates takes the lowest number
// from 1 up that no running thread holds, and gives it back when it ends.
// The process's first thread is 0. Programs that create their threads in one
// order on every rank -- a loop in the main thread, an OpenMP team -- thus
// number them alike on every rank, and a thread created anew each time step
// takes the number its predecessor left. Nothing here may change what the
// program does: when the number cannot be noted, the thread is created as
// the program asked, with number 0.
#include <dlfcn.h>
#include <pthread.h>

#include <cerrno>
#include <cstdint>
#include <mutex>
#include <new>

#include "thread_numbers.h"

namespace skt::tracer {
namespace {

std::mutex g_numbers_mu;
uint64_t g_taken[(kMaxThreads + 1) / 64];  // bit n: number n is held (bit 0: the first thread)

thread_local uint32_t t_number = 0;

uint32_t take_number() {
  std::lock_guard<std::mutex> lock(g_numbers_mu);
  for (uint32_t n = 1; n <= kMaxThreads; ++n) {
    uint64_t& word = g_taken[n / 64];
    if (!(word & (uint64_t{1} << (n % 64)))) {
      word |= uint64_t{1} << (n % 64);
      return n;
    }
  }
  return 0;  // all taken: shares the first thread's stream
}

void give_back(uint32_t n) {
  if (n == 0) return;
  std::lock_guard<std::mutex> lock(g_numbers_mu);
  g_taken[n / 64] &= ~(uint64_t{1} << (n % 64));
}

// Gives the number back when the thread ends, also through pthread_exit.
struct NumberHolder {
  uint32_t number = 0;
  ~NumberHolder() { give_back(number); }
};
thread_local NumberHolder t_holder;

struct Start {
  void* (*routine)(void*);
  void* arg;
  uint32_t number;
};

void* numbered_start(void* p) {
  Start s = *static_cast<Start*>(p);
  delete static_cast<Start*>(p);
  t_number = s.number;
  t_holder.number = s.number;
  return s.routine(s.arg);
}

using CreateFn = int (*)(pthread_t*, const pthread_attr_t*, void* (*)(void*), void*);

CreateFn real_create() {
  static CreateFn fn = reinterpret_cast<CreateFn>(dlsym(RTLD_NEXT, "pthread_create"));
  return fn;
}

}  // namespace

uint32_t thread_number() { return t_number; }

}  // namespace skt::tracer

extern "C" int pthread_create(pthread_t* thread, const pthread_attr_t* attr, void* (*routine)(void*), void* arg) {
  using namespace skt::tracer;
  CreateFn create = real_create();
  if (!create) return EAGAIN;  // no pthread_create below us: nothing could create it
  auto* s = new (std::nothrow) Start{routine, arg, 0};
  if (!s) return create(thread, attr, routine, arg);
  s->number = take_number();
  int rc = create(thread, attr, numbered_start, s);
  if (rc != 0) {
    give_back(s->number);
    delete s;
  }
  return rc;
}
