// Random MPI programs as traces, for tests/check_completion.sh: each one a
// trace directory (written through the real writer, as the tracer would),
// whose skeleton the generator checks and the script then runs under MPI,
// the run deciding whether the check was right.
//
//   random_programs OUTDIR RANKS COUNT SEED
//
// A program is a sequence of phases, some repeated in a loop (so that K
// cuts them): exchanges of messages between random pairs of ranks, each
// side blocking or not (Send, Ssend, Isend; Recv, Irecv; a receive from
// MPI_ANY_SOURCE now and then, a blocking receive MPI_Probe'd first now
// and then), completed by Wait or Waitall at a random later place;
// collectives (Barrier, Allreduce, Iallreduce and its Wait) on
// MPI_COMM_WORLD, on the halves of a Comm_split, or on a communicator
// duplicated and freed around it in every iteration. About half the programs
// carry one fault: a send or a receive left out, a tag changed on one side,
// a collective one rank skips or makes twice, a receive never waited for,
// blocking sends ordered head to head, a wildcard receive that can take the
// message a later receive needs. OUTDIR/prog-NNN/ is the trace,
// OUTDIR/prog-NNN.txt says what was drawn.
#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "skel/skel_funcs.h"
#include "skel/trace_format.h"
#include "synthetic.h"

namespace {

using skt::testing::Syn;

struct Message {
  uint32_t src, dst;
  int64_t tag;
  uint32_t send_func, recv_func;  // kFunc_MPI_Send / Ssend / Isend; Recv / Irecv; 0: left out
  bool any_source = false;
  bool never_waited = false;      // a non-blocking receive no Wait completes
  bool barrier_between = false;   // the sender and the receiver meet in a barrier between the send and the receive
  bool probed = false;            // a blocking receive, MPI_Probe'd first
};

struct Phase {
  enum Kind { kExchange, kCollective } kind = kExchange;
  std::vector<Message> messages;
  uint32_t coll_func = 0;   // MPI_Barrier, MPI_Allreduce, or MPI_Iallreduce (completed by a Wait)
  bool on_halves = false;   // the collective on the Comm_split halves
  bool scoped = false;      // the collective on a communicator duplicated before it and freed after it
  uint32_t repeat = 1;     // a loop around the phase
};

enum class Fault { kNone, kDropSend, kDropRecv, kTagMismatch, kSkipCollective, kExtraCollective, kOrphanRecv,
                   kHeadToHead, kWildcardSteal, kEagerOnly };
const char* fault_name(Fault f) {
  const char* names[] = {"none", "a send left out", "a receive left out", "a tag changed on one side",
                         "a collective one rank skips", "a collective one rank makes twice",
                         "a receive never waited for and never sent", "blocking sends head to head",
                         "a wildcard receive that can take a later receive's message",
                         "two ranks send to each other, then meet in a barrier, then receive"};
  return names[static_cast<int>(f)];
}

class Generator {
 public:
  Generator(uint32_t P, uint32_t seed) : P_(P), rng_(seed) {}

  std::vector<Phase> phases() {
    std::vector<Phase> out;
    const int n = pick(2, 4);
    for (int i = 0; i < n; ++i) out.push_back(pick(0, 3) == 0 ? collective() : exchange());
    out[static_cast<size_t>(pick(0, n - 1))].repeat = static_cast<uint32_t>(pick(12, 30));
    return out;
  }

  Fault fault() { return pick(0, 1) ? Fault::kNone : static_cast<Fault>(pick(1, 9)); }

  int pick(int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng_); }

 private:
  Phase exchange() {
    Phase ph;
    const int n = pick(1, static_cast<int>(2 * P_));
    for (int i = 0; i < n; ++i) {
      Message m;
      m.src = static_cast<uint32_t>(pick(0, static_cast<int>(P_) - 1));
      m.dst = (m.src + static_cast<uint32_t>(pick(1, static_cast<int>(P_) - 1))) % P_;
      m.tag = pick(0, 3);
      const int s = pick(0, 5), r = pick(0, 2);
      m.send_func = s < 3 ? skt::kFunc_MPI_Isend : s < 5 ? skt::kFunc_MPI_Send : skt::kFunc_MPI_Ssend;
      m.recv_func = r < 2 ? skt::kFunc_MPI_Irecv : skt::kFunc_MPI_Recv;
      m.probed = m.recv_func == skt::kFunc_MPI_Recv && pick(0, 2) == 0;
      ph.messages.push_back(m);
    }
    return ph;
  }
  Phase collective() {
    Phase ph;
    ph.kind = Phase::kCollective;
    // (no Alltoall: the synthetic trace has no receive count for it)
    const int c = pick(0, 5);
    ph.coll_func = c < 2 ? skt::kFunc_MPI_Barrier : c < 4 ? skt::kFunc_MPI_Allreduce : skt::kFunc_MPI_Iallreduce;
    ph.on_halves = P_ >= 4 && pick(0, 2) == 0;
    ph.scoped = !ph.on_halves && pick(0, 3) == 0;
    return ph;
  }

  const uint32_t P_;
  std::mt19937 rng_;
};

// One rank's calls for a program: its sends and receives of each exchange in
// a random order (the same in every iteration: one call site each), each
// non-blocking one completed by a Wait at a random later place or by one
// Waitall at the phase's end.
class RankWriter {
 public:
  RankWriter(uint32_t rank, uint32_t P, uint32_t seed) : r_(rank), P_(P), rng_(seed * 7919u + rank) {}

  std::vector<Syn> write(const std::vector<Phase>& phases, bool halves) {
    std::vector<Syn> v{call(skt::kFunc_MPI_Init, 0)};
    if (halves) {
      Syn split = call(skt::kFunc_MPI_Comm_split, 1);
      split.new_comm = 5;
      split.color = r_ < P_ / 2 ? 0 : 1;
      for (uint32_t x = 0; x < P_; ++x)
        if ((x < P_ / 2) == (r_ < P_ / 2)) split.members.push_back(x);
      v.push_back(split);
    }
    for (size_t i = 0; i < phases.size(); ++i) {
      std::vector<Syn> body = phase_calls(phases[i], static_cast<uint32_t>(10 + 40 * i));
      for (uint32_t k = 0; k < phases[i].repeat; ++k)
        for (Syn s : body) {
          if (!s.reqs.empty()) s.reqs = renumber(s, k);
          if (s.comm == kScopedComm) s.comm = scoped_comm(i, k);  // a fresh communicator in every iteration
          if (s.new_comm == kScopedComm) s.new_comm = scoped_comm(i, k);
          v.push_back(s);
        }
    }
    v.push_back(call(skt::kFunc_MPI_Finalize, 2));
    return v;
  }

 private:
  static Syn call(uint32_t func, uint32_t site) {
    Syn s;
    s.func = func;
    s.site = site;
    s.gap = 20000;
    return s;
  }

  static constexpr int64_t kScopedComm = 900;  // placeholder for the phase's own communicator
  static int64_t scoped_comm(size_t phase, uint32_t k) { return 1000 + 100 * static_cast<int64_t>(phase) + k; }

  std::vector<Syn> collective_calls(const Phase& ph, uint32_t site) {
    std::vector<Syn> out;
    if (ph.scoped) {
      Syn dup = call(skt::kFunc_MPI_Comm_dup, site + 1);
      dup.new_comm = kScopedComm;
      for (uint32_t x = 0; x < P_; ++x) dup.members.push_back(x);
      out.push_back(dup);
    }
    Syn c = call(ph.coll_func, site);
    c.count = 4;
    if (ph.on_halves) c.comm = 5;
    if (ph.scoped) c.comm = kScopedComm;
    if (ph.coll_func == skt::kFunc_MPI_Iallreduce) c.reqs = {next_req_++};
    out.push_back(c);
    if (!c.reqs.empty()) {
      Syn w = call(skt::kFunc_MPI_Wait, site + 2);
      w.reqs = c.reqs;
      out.push_back(w);
    }
    if (ph.scoped) {
      Syn free = call(skt::kFunc_MPI_Comm_free, site + 3);
      free.comm = kScopedComm;
      out.push_back(free);
    }
    return out;
  }

  std::vector<Syn> phase_calls(const Phase& ph, uint32_t site) {
    if (ph.kind == Phase::kCollective) return collective_calls(ph, site);
    std::vector<Syn> out;
    struct Post {
      Syn call;
      bool nonblocking;
      bool never_waited;
      bool probed = false;
    };
    std::vector<Post> posts;
    for (size_t i = 0; i < ph.messages.size(); ++i) {
      const Message& m = ph.messages[i];
      const uint32_t s = site + 2 * static_cast<uint32_t>(i);
      if (m.src == r_ && m.send_func)
        posts.push_back({message(m.send_func, s, m.dst, m.tag, false), m.send_func == skt::kFunc_MPI_Isend, false});
      if (m.dst == r_ && m.recv_func)
        posts.push_back({message(m.recv_func, s + 1, m.src, m.tag, m.any_source), m.recv_func == skt::kFunc_MPI_Irecv,
                         m.never_waited, m.probed});
    }
    const bool barrier = std::any_of(ph.messages.begin(), ph.messages.end(), [](const Message& m) { return m.barrier_between; });
    if (barrier) {  // every rank's sends, a barrier, its receives: only an eager MPI lets the sends finish first
      std::stable_partition(posts.begin(), posts.end(), [](const Post& p) { return p.call.func == skt::kFunc_MPI_Send; });
      const auto first_recv = std::find_if(posts.begin(), posts.end(), [](const Post& p) { return p.call.func != skt::kFunc_MPI_Send; });
      posts.insert(first_recv, {call(skt::kFunc_MPI_Barrier, site + 35), false, false});
    } else {
      std::shuffle(posts.begin(), posts.end(), rng_);
    }
    const bool waitall = std::uniform_int_distribution<int>(0, 1)(rng_) == 0;
    std::vector<int64_t> pending;
    uint32_t wait_site = site + 30;
    for (Post& p : posts) {
      if (p.probed) {  // MPI_Probe for the message, then the receive
        Syn probe = message(skt::kFunc_MPI_Probe, p.call.site + 20, static_cast<uint32_t>(p.call.peer), p.call.tag,
                            (p.call.flags & skt::kFlagAnySource) != 0);
        out.push_back(probe);
      }
      if (p.nonblocking) {
        p.call.reqs = {next_req_++};
        if (!p.never_waited) pending.push_back(p.call.reqs[0]);
      }
      out.push_back(p.call);
      if (!waitall && !pending.empty() && std::uniform_int_distribution<int>(0, 1)(rng_)) {
        Syn w = call(skt::kFunc_MPI_Wait, wait_site++);
        w.reqs = {pending.front()};
        pending.erase(pending.begin());
        out.push_back(w);
      }
    }
    if (!pending.empty()) {
      Syn w = call(pending.size() == 1 ? skt::kFunc_MPI_Wait : skt::kFunc_MPI_Waitall, wait_site);
      w.reqs = pending;
      out.push_back(w);
    }
    return out;
  }

  static Syn message(uint32_t func, uint32_t site, uint32_t peer, int64_t tag, bool any) {
    Syn s = call(func, site);
    s.peer = peer;
    s.tag = tag;
    s.count = 8;
    if (any) s.flags |= skt::kFlagAnySource;
    return s;
  }

  // Request ids of iteration k: fresh in every iteration, as an MPI gives them.
  std::vector<int64_t> renumber(const Syn& s, uint32_t k) {
    std::vector<int64_t> out;
    for (int64_t id : s.reqs) out.push_back(id + 100000 * static_cast<int64_t>(k));
    return out;
  }

  const uint32_t r_, P_;
  std::mt19937 rng_;
  int64_t next_req_ = 1;
};

// Puts the fault into the phases (or says which rank's calls to change).
struct Faulted {
  Fault fault = Fault::kNone;
  uint32_t rank = 0;  // for the collective faults
};

Faulted apply(Fault f, std::vector<Phase>& phases, Generator& g, uint32_t P) {
  Faulted out{f, static_cast<uint32_t>(g.pick(0, static_cast<int>(P) - 1))};
  std::vector<Phase*> exchanges, collectives;
  for (Phase& ph : phases) (ph.kind == Phase::kExchange ? exchanges : collectives).push_back(&ph);
  auto some_message = [&]() -> Message* {
    if (exchanges.empty()) return nullptr;
    Phase* ph = exchanges[static_cast<size_t>(g.pick(0, static_cast<int>(exchanges.size()) - 1))];
    return &ph->messages[static_cast<size_t>(g.pick(0, static_cast<int>(ph->messages.size()) - 1))];
  };
  Message* m = some_message();
  switch (f) {
    case Fault::kDropSend: if (m) m->send_func = 0; break;
    case Fault::kDropRecv: if (m) m->recv_func = 0; break;
    case Fault::kTagMismatch: if (m) m->tag += 10; break;  // the receive's, below
    case Fault::kOrphanRecv:
      if (m) {
        m->send_func = 0;
        m->recv_func = skt::kFunc_MPI_Irecv;
        m->never_waited = true;
      }
      break;
    case Fault::kHeadToHead:
      if (m) {
        Phase ph;
        ph.messages = {{m->src, m->dst, 9, skt::kFunc_MPI_Send, skt::kFunc_MPI_Recv},
                       {m->dst, m->src, 9, skt::kFunc_MPI_Send, skt::kFunc_MPI_Recv}};
        phases.push_back(ph);
      }
      break;
    case Fault::kEagerOnly:
      if (m) {
        Phase ph;
        ph.messages = {{m->src, m->dst, 7, skt::kFunc_MPI_Send, skt::kFunc_MPI_Recv},
                       {m->dst, m->src, 7, skt::kFunc_MPI_Send, skt::kFunc_MPI_Recv}};
        for (Message& x : ph.messages) x.barrier_between = true;
        phases.push_back(ph);
      }
      break;
    case Fault::kWildcardSteal:
      if (P >= 3) {
        Phase ph;
        ph.messages = {{1, 0, 8, skt::kFunc_MPI_Send, skt::kFunc_MPI_Recv, true},
                       {2, 0, 8, skt::kFunc_MPI_Send, skt::kFunc_MPI_Recv}};
        phases.push_back(ph);
      }
      break;
    default: break;
  }
  return out;
}

// The ranks' calls with the fault's change on one side.
std::vector<Syn> rank_calls(uint32_t r, uint32_t P, uint32_t seed, const std::vector<Phase>& phases,
                            const Faulted& fault, bool halves) {
  std::vector<Phase> mine = phases;
  for (Phase& ph : mine)
    for (Message& m : ph.messages) {
      if (fault.fault == Fault::kTagMismatch && m.tag >= 10 && m.src == r) m.tag -= 10;  // the send keeps its tag
    }
  std::vector<Syn> v = RankWriter(r, P, seed).write(mine, halves);
  if (fault.rank != r) return v;
  for (size_t i = 0; i < v.size(); ++i) {
    const skt::CallClass c = skt::call_class(v[i].func);
    if (c != skt::CallClass::kCollective) continue;
    if (fault.fault == Fault::kSkipCollective) v.erase(v.begin() + static_cast<long>(i));
    else if (fault.fault == Fault::kExtraCollective) v.insert(v.begin() + static_cast<long>(i), v[i]);
    else continue;
    break;
  }
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: random_programs OUTDIR RANKS COUNT SEED\n");
    return 2;
  }
  const std::string out = argv[1];
  const uint32_t P = static_cast<uint32_t>(std::stoul(argv[2]));
  const int count = std::stoi(argv[3]);
  const uint32_t seed = static_cast<uint32_t>(std::stoul(argv[4]));
  for (int i = 0; i < count; ++i) {
    Generator g(P, seed * 1000u + static_cast<uint32_t>(i));
    std::vector<Phase> phases = g.phases();
    for (Phase& ph : phases)
      for (Message& m : ph.messages) m.any_source = P >= 3 && m.recv_func == skt::kFunc_MPI_Recv && g.pick(0, 5) == 0;
    const Faulted fault = apply(g.fault(), phases, g, P);
    bool halves = false;
    for (const Phase& ph : phases) halves |= ph.on_halves;
    char name[32];
    std::snprintf(name, sizeof name, "prog-%03d", i);
    const std::string dir = out + "/" + name;
    std::filesystem::create_directories(dir);
    skt::testing::write_synthetic(dir, P, [&](uint32_t r) {
      return rank_calls(r, P, seed * 1000u + static_cast<uint32_t>(i), phases, fault, halves);
    });
    std::ofstream txt(out + "/" + name + ".txt");
    txt << name << ": " << phases.size() << " phases, fault: " << fault_name(fault.fault);
    if (fault.fault == Fault::kSkipCollective || fault.fault == Fault::kExtraCollective) txt << " (rank " << fault.rank << ")";
    txt << "\n";
  }
  return 0;
}
