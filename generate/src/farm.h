// Dynamic master-worker farms (internal to the generator): where work
// follows the messages, the skeleton hands out tasks as the application did,
// to whichever worker asks, instead of replaying one run's balance.
//
// A farm, as the trace shows it (every rank's calls in a run of top-level
// items of the folded program, nothing else in that run):
//   - the master may first send some workers a task unasked (seeds: one
//     each, or several, the tasks a worker then has in flight at once, at
//     most 16); then it receives requests (one tag or MPI_ANY_TAG, one
//     communicator) and answers each with one send to the rank it took it
//     from, before the next. A request is taken by an MPI_Recv from
//     MPI_ANY_SOURCE, an MPI_Probe from MPI_ANY_SOURCE and an MPI_Recv from
//     the rank it found, the completion (MPI_Wait, MPI_Test ...) of an
//     MPI_Irecv from MPI_ANY_SOURCE (the source the trace's completion
//     names), the completion by MPI_Waitany / MPI_Testany / MPI_Waitsome
//     / MPI_Testsome of one of the receives posted (an MPI_Irecv per worker,
//     re-posted after an answer: the source its MPI_Irecv names), or an
//     MPI_Iprobe from MPI_ANY_SOURCE that found one, after any that found
//     none (polls, computing or sleeping between them), and an MPI_Recv from
//     the rank it found (probes in a row, MPI_Iprobe then MPI_Mprobe as
//     mpi4py makes them: the last one's; MPI_Mrecv is merged as MPI_Recv).
//     An answer is an MPI_Send, MPI_Ssend, MPI_Rsend, or an MPI_Isend /
//     MPI_Issend with its completion (an MPI_Request_free of it counts as
//     one: the message goes on). The answer to a request
//     may also come later, after other requests were taken (a master that
//     takes the last results, then stops each worker: a drain); a worker
//     with several tasks in flight asks after its stop as often as it had
//     seeds less one (its last tasks' results), and these go unanswered;
//   - each worker (every rank the master answered) receives its seed, if it
//     had one, then alternates a request to the master (with that tag;
//     MPI_Send ... or MPI_Isend and its completion) and a receive from the
//     master (MPI_Recv, or an MPI_Irecv, posted before or after the
//     request, and its completion; probes of the master's message, and
//     polls before them, go with it, and its tag is the probe's where it
//     was probed for); its last answer is its stop, every other one a
//     task, and the computation before its next request (up to its first
//     send: a receive of its next task may be posted before it) is that
//     task's.
// Non-blocking calls are followed through the requests their completions
// name (reqback in the folded program): a message arrives where its
// MPI_Irecv is completed, leaves where its MPI_Isend was posted; every
// request a farm's rank makes there must be completed there, and none made
// elsewhere. Receives still posted when the master's part ends (re-posted
// after the last answers) belong to the farm with the completions that end
// them after it (the program cancels them, or they complete).
// Tasks are numbered in the order the master handed them out, each with the
// computation the worker that had it spent on it.
//
// The skeleton (templates/skel_farm.h) runs the same protocol with every
// n-th task of the application (the plan's kept tasks; all of them at
// K = 1), with the same kind of calls (blocking or not, one MPI_Irecv per
// worker and MPI_Waitany where the master did so; it re-posts a worker's
// receive only after a task, and cancels what is still posted at its end):
// each answer carries the task's number, each request the time the
// worker spent on its last task, so the master measures how fast each
// worker is and how long a round trip takes, and adds the left-out tasks'
// time by replaying the whole farm's hand-out with those figures (the same
// greedy order: the next task to the first worker to ask).
#pragma once

#include <cstdint>
#include <set>
#include <string>
#include <vector>

#include "skel/folded.h"

namespace skt::gen {

// How the master takes requests (the skeleton's calls, skel_farm.h).
enum class FarmRecv : uint8_t {
  kBlocking,   // MPI_Recv from MPI_ANY_SOURCE (or MPI_Probe and MPI_Recv)
  kIrecvAny,   // an MPI_Irecv from MPI_ANY_SOURCE per request, and its MPI_Wait
  kIrecvEach,  // an MPI_Irecv per worker, MPI_Waitany over them, re-posted after a task
  kPoll,       // MPI_Iprobe from MPI_ANY_SOURCE until one is found (computing between polls), MPI_Recv from it
};

struct Farm {
  size_t first = 0, end = 0;     // p.top[first, end): the farm, on every rank
  // Items in that range that hold other calls, which the merge put among
  // the farm's (node ids of top-level items, in order): those before the
  // ranks' part in the farm (run before it), those after (run after it).
  std::vector<uint32_t> before_nodes, after_nodes;
  uint32_t master = 0;           // world rank
  int64_t comm = 0;              // communicator symbol
  std::vector<uint32_t> workers; // world ranks, ascending
  std::vector<uint32_t> seeded;  // workers the master sent tasks unasked, in the order sent (each as often as
                                 // it then had tasks in flight)
  int64_t ask_tag = 0;           // the master's receives: a tag, or -1 (MPI_ANY_TAG)
  int64_t request_tag = -1;      // the workers' requests' (the first one's)
  int64_t task_tag = 0, stop_tag = 0;  // the answers' (the first of each)
  int64_t worker_recv_tag = kNone;  // the workers' receives: a tag, or -1 (MPI_ANY_TAG)
  uint64_t first_ask_bytes = 0, ask_bytes = 0;  // a worker's first request, the later ones
  uint64_t task_bytes = 0, stop_bytes = 0;
  std::vector<double> task_ns;   // per task, in hand-out order: its computation in the application
  std::vector<double> task_units;  // the same in kernel units (at the rate of the rank that computed it)
  std::vector<double> task_sleep_s;  // per task: the seconds its worker slept in it (blocked time), after computing
  std::vector<uint64_t> kept;    // the tasks the skeleton hands out (indices into task_ns), ascending
  // Computation, kernel units, per world rank (0 elsewhere): before the
  // rank's first call of the farm; the master's before each receive after
  // the first and before each answer; a worker's between its request and
  // the receive of the answer.
  std::vector<double> entry_units;
  double master_recv_units = 0, master_answer_units = 0;
  // The master's computation after each poll that found nothing (MPI_Iprobe,
  // or MPI_Test* on its receives: the skeleton then polls with MPI_Test /
  // MPI_Testany, not MPI_Wait / MPI_Waitany), kernel units.
  double master_poll_units = 0;
  double master_poll_sleep_s = 0;  // and the seconds it slept after each (mpi4py's pool backs off)
  std::vector<double> worker_wait_units;
  // Workers that found their answer with MPI_Iprobe (mpi4py.futures' do,
  // with MPI_Iprobe and MPI_Test* in vain before it): the skeleton's
  // worker then polls with MPI_Iprobe before its receive; per world rank,
  // the computation after each poll in vain, kernel units; and the seconds
  // slept after the k-th poll in vain of a wait, the mean over the
  // workers' (a worker that backs off sleeps longer the longer it waits:
  // kPollSleeps entries, the last for the k-th and later).
  static constexpr size_t kPollSleeps = 16;
  std::vector<double> worker_poll_units;
  std::vector<double> worker_poll_sleep_s;
  bool worker_polls = false;
  double traced_ns = 0;          // the master's time in the farm (from its first call's start)
  std::vector<uint32_t> symbols; // a node of each role, for messages: master receive, answer, request, worker receive
  FarmRecv master_recv = FarmRecv::kBlocking;
  bool answer_isend = false;     // the master answers with MPI_Isend and MPI_Wait (else MPI_Send)
  bool ask_isend = false;        // a worker asks with MPI_Isend and MPI_Wait (else MPI_Send)
  bool worker_irecv = false;     // a worker receives with MPI_Irecv and MPI_Wait (else MPI_Recv)

  bool takes_part(uint32_t r) const;
};

// The farms of p's top level (none in a thread's program), in order, each
// keeping every K-th task (at least four per worker where there are that
// many). Programs too long to examine are passed over with a note.
std::vector<Farm> find_farms(const FoldedProgram& p, const std::vector<double>& units_per_ns, uint32_t scale,
                             std::set<std::string>& notes);

}  // namespace skt::gen
