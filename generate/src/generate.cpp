// The generator: walks the folded program and writes each loop as a `for`
// loop, each event node as its MPI call, each computation gap as a compute
// phase, with per-rank values as literals, rank expressions or tables.
#include "skel/generate.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <deque>
#include <functional>
#include <map>
#include <numeric>
#include <set>
#include <sstream>
#include <tuple>

#include "outline.h"
#include "plan.h"
#include "repair.h"
#include "requests.h"
#include "safe_order.h"
#include "unroll.h"
#include "skel/skel_funcs.h"
#include "skel/skel_kernel.h"
#include "templates.h"

namespace skt::gen {
namespace {

std::string num(double v, int digits = 9) {
  char b[64];
  std::snprintf(b, sizeof b, "%.*g", digits, v);
  return b;
}

// Kernel units of a computation: 7 significant digits, a part in 10^7 of
// it, far below the timing's own noise (with 9, most per-rank tables of 4
// ranks wrapped to three lines: p4est's step-3 example, 1,264 of a
// 15,622-line skeleton).
constexpr int kUnitsDigits = 7;

// The columns a table's declaration and values may take on one line.
constexpr size_t kTableColumns = 100;

// A table: `decl` (e.g. "static const int n5_reqs[]") = its values, on one
// line where they fit in kTableColumns, else `per_line` values a line.
void write_table(std::ostream& out, const std::string& decl, const std::vector<std::string>& cells,
                 size_t per_line = 16) {
  size_t columns = decl.size() + 6;
  for (const std::string& c : cells) columns += c.size() + 2;
  const bool one_line = columns <= kTableColumns;
  out << decl << " = {";
  for (size_t i = 0; i < cells.size(); ++i) {
    if (i > 0) out << ",";
    out << (one_line ? (i ? " " : "") : (i % per_line == 0 ? "\n  " : " ")) << cells[i];
  }
  out << (one_line ? "};\n" : "\n};\n");
}

// What tells a table from others for written_as(): its type and values.
std::string table_key(const std::string& type, const std::vector<std::string>& cells) {
  std::string key = type;
  for (const std::string& c : cells) key += " " + c;
  return key;
}

template <typename Int>
std::vector<std::string> texts(const std::vector<Int>& v) {
  std::vector<std::string> out;
  out.reserve(v.size());
  for (Int x : v) out.push_back(std::to_string(x));
  return out;
}

// A double that the C compiler reads back as the same double: where the
// completion check (check.cpp) must compute what the skeleton computes.
std::string exact(double v) {
  char b[64];
  std::snprintf(b, sizeof b, "%.17g", v);
  return b;
}

std::string indent(int depth) { return std::string(static_cast<size_t>(depth) * 2, ' '); }

// "0-3", "0 2 5-7"
std::string rank_list(const std::vector<uint32_t>& ranks) {
  std::string s;
  for (size_t i = 0; i < ranks.size();) {
    size_t j = i;
    while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
    if (!s.empty()) s += ' ';
    s += std::to_string(ranks[i]);
    if (j > i) s += '-' + std::to_string(ranks[j]);
    i = j + 1;
  }
  return s;
}

enum class Side { send, recv };

// Where one thread's program sits in the skeleton's shared runtime tables
// (MPI_THREAD_MULTIPLE traces; one program, index 0, otherwise): its cut
// loops, request rings, slots and watchdog calls come after those of the
// programs before it.
struct StreamLayout {
  uint32_t index = 0;    // 0: the first thread's program; k: FoldedProgram::threads[k - 1] (skel_tid)
  size_t loop_base = 0;  // its first cut loop / kept run timer
  size_t ring_base = 0;  // its first request ring
  size_t slot_base = 0;  // its first request slot
  size_t call_base = 0;  // its first call in skel_calls[]
  size_t total_rings = 1;  // rings of all programs (SKEL_NUM_RINGS)
};

class Emitter {
 public:
  Emitter(const FoldedProgram& p, const GenerateOptions& opt, const Plan& plan, Skeleton& out,
          const StreamLayout& layout = StreamLayout())
      : p_(p), m_(p.symbols), opt_(opt), plan_(plan), slots_(plan.slots), out_(out), P_(p.symbols.world_size),
        at_(layout) {}

  // The first thread's program and the skeleton around it; `threads`: the
  // other threads' programs, each already emitted (emit_thread).
  // `summarised`: called once the skeleton's times are summed up (Skeleton::traced_s ...), before they are written.
  void run(const NodeTimes& times, const std::vector<const Emitter*>& threads = {},
           const std::function<void()>& summarised = {});
  // Another thread's program: its function skel_thread_<k>, tables inside.
  void emit_thread(const NodeTimes& times);
  std::string thread_function() const;
  size_t calls_written() const { return calls_.size(); }
  void note(const std::string& s) { notes_.insert(s); }
  // Where the first thread starts and waits for the other threads (its top-level items).
  struct ThreadPoint {
    uint32_t index;   // StreamLayout::index of the thread
    size_t fork_at;   // started before top-level item fork_at
    size_t join_at;   // waited for before top-level item join_at (top.size(): at the end)
  };
  std::vector<ThreadPoint> thread_points_;
  // The completion check's timing of the skeleton (CheckResult::expected_ns;
  // 0: none), the expected time where it has one.
  double checked_ns_ = 0;

 private:
  void summarise(const NodeTimes& times);
  const FoldedProgram& p_;
  const MergedTrace& m_;
  const GenerateOptions& opt_;
  const Plan& plan_;
  const RequestSlots& slots_;
  Skeleton& out_;
  const uint32_t P_;
  const StreamLayout at_;
  std::vector<double> rate_;                // per rank: kernel units per ns
  std::ostringstream tables_, body_;
  // A table's type and values -> the name it was written under: a table
  // equal to one written before is not written again (an adaptive code's
  // exchanges repeat the same peers and tags in hundreds of nodes).
  std::map<std::string, std::string> written_tables_;
  std::set<std::string> notes_;
  std::set<uint32_t> counted_;              // nodes whose counts follow their instance number
  // The loops being emitted, innermost last: their variable and iterations in
  // the skeleton (cycle rules index by the innermost).
  struct OpenLoop {
    std::string var;
    uint64_t iters;  // in the skeleton
    uint64_t count;  // in the application
    uint32_t node;
  };
  std::vector<OpenLoop> open_loops_;
  bool in_polling_loop_ = false;  // writing the body of a loop that polls_until_found
  // The calls written, for the watchdog's message (skel_calls[]): what, 100 x
  // the longest traced duration, the loops around it.
  struct CallRecord {
    std::string what;  // the call site's text: "MPI_Recv at app+0x1a2"
    int64_t node;      // the program's node, -1: none
    double traced_s;
    std::vector<uint32_t> loops;
  };
  std::vector<CallRecord> calls_;
  size_t loop_depth_ = 0;
  std::map<uint32_t, std::vector<uint32_t>> ranks_in_;  // ranks_in() memo
  int64_t buf_bytes_ = 64, bsend_bytes_ = 0;
  size_t longest_list_ = 0;  // entries of the longest count list (a neighbourhood's may outnumber the ranks)
  size_t max_reqs_ = 1;
  std::vector<bool> type_used_;
  bool user_op_ = false, win_ = false, file_ = false, saw_init_ = false, saw_finalize_ = false;

  const MergedEvent& event(uint32_t n) const { return m_.events[static_cast<size_t>(p_.nodes[n].symbol)]; }
  const Identity& identity(uint32_t n) const { return m_.identities[event(n).identity]; }
  uint32_t func(uint32_t n) const { return identity(n).func; }

  // "MPI_Isend at app+0x1a2" for the comment above node n's call
  std::string where(uint32_t n) const {
    return std::string(func_name(func(n))) + " at " + m_.callsite_name(identity(n).callsite) +
           (p_.callsites_joined ? " (call sites joined)" : "");
  }

  // Per-rank C values -> a literal when all participants agree, else a
  // table indexed by world rank (non-participants get `fill`).
  std::string per_rank(uint32_t n, const std::string& what, const std::vector<uint32_t>& ranks,
                       const std::vector<std::string>& values, const char* type = "int",
                       const std::string& fill = "0");
  // The name of a table written before with this type and these values, or
  // "" (then `name` is remembered for them, and the caller writes it).
  std::string written_as(const std::string& type_and_values, const std::string& name);
  std::string param(uint32_t n, Param pm, bool peer_side);
  std::string count(uint32_t n, Param pm, bool capacity = false);
  std::string with_room(uint32_t n, const std::string& count, int64_t dtype) const;
  // `own`: the buffer a send that does not forward uses
  std::string send_buffer(uint32_t n, const std::string& own = "skel_sbuf");
  std::string cycle(uint32_t n, const CountRule& rule, const std::function<std::string(uint32_t, int64_t)>& cell);
  std::string instance_index(uint64_t period) const;
  std::string cycle_index(bool by_instance, uint64_t period) const;
  std::string factor_table(const std::string& name, const std::string& comment, uint64_t width,
                           const std::vector<std::vector<double>>& per_rank);
  std::string peer(uint32_t n, Param pm, bool any_source);
  std::string peer_in_comm(uint32_t n, uint32_t r, int64_t world) const;
  std::string root(uint32_t n);
  std::string comm(uint32_t n) const;
  std::string comm_of_symbol(int64_t c) const;
  std::string dtype(int64_t d);
  std::string op(uint32_t n);
  std::string list(uint32_t n, ListField f);
  std::string slot_list(uint32_t n, std::string& count_expr);
  std::string write_slot_list(uint32_t n, std::string& count_expr);
  std::map<uint32_t, std::pair<std::string, std::string>> slot_lists_;  // node -> slot_list() and its count
  std::string single_request(uint32_t n);
  std::string new_comm(uint32_t n);
  std::string guard(uint32_t n) const;
  std::string guard_of_ranks(const std::string& name, const std::vector<uint32_t>& ranks) const;
  std::string work(uint32_t n, const std::vector<uint32_t>& ranks);
  std::string sleep(uint32_t n, const std::vector<uint32_t>& ranks);
  double computation_ns(const FoldedNode& node, uint32_t r) const;
  std::string profile(uint32_t n);
  std::string phases(uint32_t n);
  std::string instance_counter(uint32_t n);
  int64_t comm_size(uint32_t n) const;
  int64_t type_size(int64_t d) const;
  void size_buffers(uint32_t n);

  std::vector<std::string> call(uint32_t n, double stride);
  std::string request_out(uint32_t n) const;
  std::vector<std::string> listed_call(uint32_t n);
  std::vector<std::string> completion_call(uint32_t n);
  std::vector<std::string> completion_lines(uint32_t n);
  std::vector<std::string> sendrecv_call(uint32_t n);
  std::vector<std::string> alltoallw_call(uint32_t n);
  std::vector<std::string> comm_create_call(uint32_t n);
  std::vector<std::string> topology_call(uint32_t n);
  std::vector<std::string> window_call(uint32_t n);
  std::string window_operation(uint32_t n);
  std::vector<std::string> file_call(uint32_t n);
  std::string enter(uint32_t n);
  // `node`: named in the watchdog's message after `what` (-1: none).
  size_t record_call(uint32_t n, const std::string& what, int64_t node = -1);
  void emit_farm(size_t k);
  std::string farm_tables_;  // the farms' struct skel_farm, after templates/skel_farm.h
  // first: per rank, whether node n holds the rank's first call of its
  // loop's iteration (nullptr outside loops); see compute().
  using Firsts = std::vector<char>;
  const std::vector<uint32_t>& ranks_in(uint32_t n);
  std::vector<Firsts> firsts(const std::vector<uint32_t>& items);
  std::string compute(uint32_t n, const std::string& w, const std::vector<uint32_t>& ranks,
                      const std::string& loop_var, const Firsts* first, double divided_by = 1.0);
  void emit_items(const std::vector<uint32_t>& items, int depth, const std::string& loop_var, double stride);
  bool run_boundary(size_t& i, size_t& run);
  void emit_event(uint32_t n, int depth, const std::string& loop_var, double stride, const Firsts* first);
  void emit_loop(uint32_t n, int depth, const std::string& loop_var, double stride, const Firsts* first);
  bool polls_until_found(uint32_t n) const;
  void emit_reordered(const std::vector<uint32_t>& run, const std::vector<std::vector<uint32_t>>& order, int depth,
                      const std::string& loop_var, double stride, const std::vector<const Firsts*>& first);
  std::string types_setup();
  std::string header() const;
  void start_emitting(const NodeTimes& times);
  std::string loop_id(int64_t c) const { return std::to_string(static_cast<size_t>(c) + at_.loop_base); }
  // The timer of top-level node n's shortened computation (Plan::shortened), or -1.
  int64_t shortened_timer(uint32_t n) const {
    auto it = std::find_if(plan_.shortened.begin(), plan_.shortened.end(),
                           [n](const Plan::Shortened& s) { return s.node == n; });
    if (it == plan_.shortened.end()) return -1;
    return static_cast<int64_t>(plan_.cuts.size() + plan_.kept_runs.size() + (it - plan_.shortened.begin()));
  }
  std::string node_computation(uint32_t n, const std::string& w, const std::vector<uint32_t>& ranks,
                               const std::string& loop_var, const Firsts* first, const std::string& in);
  // The code skel_slot() decodes: the back-th latest request of this program's ring `ring`.
  int64_t ring_ref(int64_t back, int64_t ring) const {
    return back * static_cast<int64_t>(at_.total_rings) + ring + static_cast<int64_t>(at_.ring_base);
  }
  // A reference as skel_slot() takes it: -1 MPI_REQUEST_NULL, a pool's (skel_pool_slot), or ring_ref().
  int64_t ref_code(const RequestRef& x) const {
    if (x.ring < 0) return -1;
    if (x.pool == PoolRef::kTake) return ring_ref(0, x.ring);
    if (x.pool == PoolRef::kPoll) return ring_ref(1, x.ring);  // a send pool's: skel_pool_any() without waiting
    if (x.pool == PoolRef::kStart) return -2 - ring_ref(0, x.ring);
    return ring_ref(x.back, x.ring);
  }
  // Whether node n names a receive pool's request (its slots change queue after the call).
  bool has_pool_ref(uint32_t n) const {
    for (const auto& refs : slots_.refs[n])
      for (const RequestRef& x : refs)
        if (x.pool != PoolRef::kNo && slots_.pool[static_cast<size_t>(x.ring)] == PoolKind::kReceives) return true;
    return false;
  }
  void thread_points_at(size_t i, bool end);
  static std::string runtime_tables(const std::vector<const Emitter*>& all);
  static std::vector<std::string> traced_computation(const std::vector<const Emitter*>& all);
};

// ------------------------------------------------------------------ values

std::string Emitter::per_rank(uint32_t n, const std::string& what, const std::vector<uint32_t>& ranks,
                              const std::vector<std::string>& values, const char* type, const std::string& fill) {
  bool same = std::all_of(values.begin(), values.end(), [&](const std::string& v) { return v == values[0]; });
  if (values.empty()) return fill;
  if (same) return values[0];
  std::string name = "n" + std::to_string(n) + "_" + what;
  std::vector<std::string> row(P_, fill);
  for (size_t i = 0; i < ranks.size(); ++i) row[ranks[i]] = values[i];
  const std::string before = written_as(table_key(type, row), name);
  if (!before.empty()) return before + "[skel_rank]";
  write_table(tables_, std::string("static const ") + type + " " + name + "[SKEL_WORLD_SIZE]", row);
  return name + "[skel_rank]";
}

std::string Emitter::written_as(const std::string& type_and_values, const std::string& name) {
  auto [at, fresh] = written_tables_.emplace(type_and_values, name);
  return fresh ? std::string() : at->second;
}

// Tags, colours, keys: rules as expressions where they are simple.
std::string Emitter::param(uint32_t n, Param pm, bool) {
  const MergedEvent& e = event(n);
  const ParamDesc& d = e.params[static_cast<size_t>(pm)];
  auto fmt = [&](int64_t v) -> std::string {
    if (pm == Param::tag || pm == Param::tag2) return v == kAnyTag ? "MPI_ANY_TAG" : std::to_string(v);
    if (pm == Param::color && v == kUndefined) return "MPI_UNDEFINED";
    return std::to_string(v);
  };
  switch (d.kind) {
    case ParamKind::kAbsent: return "0";
    case ParamKind::kConst: return fmt(d.a);
    case ParamKind::kLinear:
      if (d.a >= 0) return std::to_string(d.a) + " + " + std::to_string(d.b) + " * skel_rank";
      break;
    default: break;
  }
  std::vector<std::string> vals;
  for (uint32_t r : e.ranks) vals.push_back(fmt(m_.value(e, pm, r)));
  return per_rank(n, param_name(pm), e.ranks, vals);
}

// The application's instance number of the node being emitted, mod period:
// the open loops' variables, each weighed by the application's iterations of
// the loops inside it. A cut loop replays the application's first
// iterations, so every rank's call at the same place agrees, as in the
// application.
std::string Emitter::instance_index(uint64_t period) const {
  std::string expr;
  uint64_t inner = 1 % period;  // iterations of the loops inside the one looked at, mod period
  for (size_t j = open_loops_.size(); j-- > 0;) {
    if (inner) expr = (expr.empty() ? "" : expr + " + ") + (inner == 1 ? "" : std::to_string(inner) + " * ") + open_loops_[j].var;
    inner = inner * (open_loops_[j].count % period) % period;
  }
  return expr.empty() ? "0" : "(" + expr + ") % " + std::to_string(period);
}

// A cycle rule: a table per rank over the innermost loop's iteration k mod
// its period (kind 3) or over the node's instance (kind 4); `cell` gives
// rank r's value v as C.
std::string Emitter::cycle(uint32_t n, const CountRule& rule, const std::function<std::string(uint32_t, int64_t)>& cell) {
  const char* what = param_name(rule.param);
  if (open_loops_.empty())
    throw TraceError("generate: node " + std::to_string(n) + "'s " + what +
                     " follows its loop's iterations, but it is not in a loop");
  const bool by_instance = rule.by_instance();
  std::string name = "n" + std::to_string(n) + "_" + what + "_cycle";
  std::ostringstream rows;
  for (uint32_t r = 0; r < P_; ++r) {
    rows << "\n  {";
    for (uint64_t k = 0; k < rule.period; ++k)
      rows << (k ? ", " : "") << (r < rule.kind.size() && cycles(rule.kind[r]) ? cell(r, rule.cycle[r * rule.period + k]) : "0");
    rows << "}" << (r + 1 < P_ ? "," : "");
  }
  const std::string before = written_as("int[" + std::to_string(rule.period) + "]" + rows.str(), name);
  if (before.empty()) {
    tables_ << "/* " << what << " of n" << n << (by_instance ? " at each of its instances" : " at each iteration of its loop")
            << " */\n";
    tables_ << "static const int " << name << "[SKEL_WORLD_SIZE][" << rule.period << "] = {" << rows.str() << "\n};\n";
  }
  return (before.empty() ? name : before) + "[skel_rank][" + cycle_index(by_instance, rule.period) + "]";
}

// The phase of a cycle of `period` at the node being emitted: the
// application's instance mod period (kind 4), or the innermost open loop's
// iteration mod period (kind 3).
std::string Emitter::cycle_index(bool by_instance, uint64_t period) const {
  if (by_instance) return instance_index(period);
  const OpenLoop& l = open_loops_.back();
  return l.var + (period < l.iters ? " % " + std::to_string(period) : "");
}

// Counts and tags: the node's own rule where the value changed between
// instances (tags only ever get linear, loop-linear or cycle rules: compress
// keeps others exact); a cut loop replays the application's first iterations' order, on
// every rank alike, so sends and receives still agree. `capacity`: a
// receive's count, the largest of a count that wobbles around its mean, on
// any rank (CountRule::capacity(); the sender's mean may be larger than the
// receiver's: MPI_ERR_TRUNCATE).
std::string Emitter::count(uint32_t n, Param pm, bool capacity) {
  const MergedEvent& e = event(n);
  if (e.params[static_cast<size_t>(pm)].kind == ParamKind::kAbsent) return "0";
  if (const CountRule* found = p_.nodes[n].rule(pm)) {
    const CountRule& rule = *found;
    if (rule.is_cycle()) return cycle(n, rule, [](uint32_t, int64_t v) { return std::to_string(v); });
    std::vector<std::string> a, b;
    bool linear = false, in_loop = false;  // in_loop: linear in the innermost loop's iteration
    for (uint32_t r : e.ranks) {
      const bool by_loop = r < rule.kind.size() && rule.kind[r] == RuleKind::kLoopLinear;
      bool lin = r < rule.kind.size() && (rule.kind[r] == RuleKind::kLinear || by_loop);
      linear |= lin && rule.b[r] != 0;
      in_loop |= by_loop;
      const bool wobbles = capacity && r < rule.kind.size() && rule.kind[r] == RuleKind::kMean && r < rule.max.size();
      a.push_back(std::to_string(wobbles ? static_cast<int64_t>(std::ceil(rule.capacity()))
                                         : std::llround(r < rule.a.size() ? rule.a[r] : 0)));
      b.push_back(lin ? exact(rule.b[r]) : "0");
    }
    std::string base = per_rank(n, std::string(param_name(pm)) + "_a", e.ranks, a);
    if (!linear) return base;
    std::string slope = per_rank(n, std::string(param_name(pm)) + "_b", e.ranks, b, "double");
    // a cut loop runs the application's first iterations: the same k, on every rank alike
    const std::string at = !in_loop ? instance_counter(n) : open_loops_.empty() ? "0" : open_loops_.back().var;
    return "(int)(" + base + " + " + slope + " * (double)" + at + ")";
  }
  return param(n, pm, false);
}

// A receive's count `count` (a C expression) with the room the completion
// check made at node n for longer messages (Plan::receive_bytes).
std::string Emitter::with_room(uint32_t n, const std::string& count, int64_t dtype) const {
  const int64_t room = plan_.room_count(n, type_size(dtype));
  if (room == 0) return count;
  char* end = nullptr;
  const long long literal = std::strtoll(count.c_str(), &end, 10);
  if (!count.empty() && *end == '\0') return std::to_string(std::max<long long>(literal, room));
  return "skel_at_least(" + count + ", " + std::to_string(room) + ")";
}

// A point-to-point send's buffer: the receive buffer where the application
// sent what its last blocking receive had filled (Param::forwards; a relay
// or a ring passing data on), so that the data is in the cache as it was
// there (ring's forwarded sends took 4.5 us against 2.8 us from a buffer
// untouched since), the send buffer otherwise.
std::string Emitter::send_buffer(uint32_t n, const std::string& own) {
  const ParamDesc& d = event(n).params[static_cast<size_t>(Param::forwards)];
  if (d.kind == ParamKind::kAbsent) return own;
  if (d.kind == ParamKind::kConst) return d.a ? "skel_fwd" : own;
  return "(" + param(n, Param::forwards, false) + " ? skel_fwd : " + own + ")";
}

// World rank w as rank r's peer in node n's communicator.
std::string Emitter::peer_in_comm(uint32_t n, uint32_t r, int64_t w) const {
  if (w == kProcNull || w < 0) return "MPI_PROC_NULL";
  int64_t c = identity(n).comm;
  const std::vector<int64_t>& members = c >= 0 ? m_.comms.at(static_cast<size_t>(c)).members(r)
                                               : std::vector<int64_t>{};
  auto it = std::find(members.begin(), members.end(), w);
  return it == members.end() ? std::to_string(w) : std::to_string(it - members.begin());
}

// Peers: world ranks in the trace, ranks of the call's communicator here;
// the node's own rule where they vary (call sites joined: a cycle, or
// another constant per rank than the symbol's).
std::string Emitter::peer(uint32_t n, Param pm, bool any_source) {
  const MergedEvent& e = event(n);
  const ParamDesc& d = e.params[static_cast<size_t>(pm)];
  if (any_source) return "MPI_ANY_SOURCE";
  if (d.kind == ParamKind::kAbsent) return "MPI_PROC_NULL";
  auto cell = [&](uint32_t r, int64_t w) { return peer_in_comm(n, r, w); };
  if (const CountRule* rule = p_.nodes[n].rule(pm)) {
    if (rule->is_cycle()) return cycle(n, *rule, cell);
    std::vector<std::string> vals;
    for (uint32_t r : e.ranks) vals.push_back(cell(r, r < rule->a.size() ? std::llround(rule->a[r]) : kProcNull));
    return per_rank(n, param_name(pm), e.ranks, vals, "int", "MPI_PROC_NULL");
  }
  int64_t c = identity(n).comm;
  if (c == 0) {  // MPI_COMM_WORLD: the rule itself
    int64_t P = P_;
    switch (d.kind) {
      case ParamKind::kConst:
        return d.a == kProcNull ? "MPI_PROC_NULL" : std::to_string(d.a);
      case ParamKind::kRel:
        return "(skel_rank + " + std::to_string(((d.a % P) + P) % P) + ") % SKEL_WORLD_SIZE";
      case ParamKind::kXor:
        return "(skel_rank ^ " + std::to_string(d.a) + ")";
      default: break;
    }
  }
  std::vector<std::string> vals;
  for (uint32_t r : e.ranks) vals.push_back(cell(r, m_.value(e, pm, r)));
  return per_rank(n, param_name(pm), e.ranks, vals, "int", "MPI_PROC_NULL");
}

std::string Emitter::root(uint32_t n) {
  const MergedEvent& e = event(n);
  int64_t root = identity(n).root, c = identity(n).comm;
  if (root == kNone) return "0";
  if (c < 0 || static_cast<size_t>(c) >= m_.comms.size()) return std::to_string(root);  // made on MPI_COMM_WORLD
  std::vector<std::string> vals;
  for (uint32_t r : e.ranks) {
    const std::vector<int64_t>& members = m_.comms.at(static_cast<size_t>(c)).members(r);
    auto it = std::find(members.begin(), members.end(), root);
    vals.push_back(std::to_string(it == members.end() ? root : it - members.begin()));
  }
  return per_rank(n, "root", e.ranks, vals);
}

std::string Emitter::comm_of_symbol(int64_t c) const {
  if (c == 0) return "MPI_COMM_WORLD";
  if (c == 1) return "MPI_COMM_SELF";
  if (c < 0) return "MPI_COMM_WORLD";
  return "skel_comm[" + std::to_string(c) + "]";
}

std::string Emitter::comm(uint32_t n) const {
  int64_t c = identity(n).comm;
  if (c < 0 && c != kNone)
    const_cast<Emitter*>(this)->note("calls on a communicator the tracer did not see created run on MPI_COMM_WORLD");
  return comm_of_symbol(c);
}

int64_t Emitter::comm_size(uint32_t n) const {
  int64_t c = identity(n).comm;
  if (c < 0) return P_;
  size_t most = 0;
  for (const auto& g : m_.comms.at(static_cast<size_t>(c)).groups) most = std::max(most, g.size());
  return static_cast<int64_t>(most);
}

int64_t Emitter::type_size(int64_t d) const {
  return d >= 0 && static_cast<size_t>(d) < m_.datatypes.size() ? std::max<int64_t>(m_.datatypes[d].size, 0) : 1;
}

std::string Emitter::dtype(int64_t d) {
  if (d < 0 || static_cast<size_t>(d) >= m_.datatypes.size()) return "MPI_BYTE";
  const DatatypeInfo& t = m_.datatypes[static_cast<size_t>(d)];
  for (uint32_t id = 1; id < kFirstDerivedDatatype; ++id)  // predefined: by name (merged ids are indices)
    if (predefined_datatype_name(id) && t.name == predefined_datatype_name(id)) return t.name;
  type_used_[static_cast<size_t>(d)] = true;
  return "skel_type[" + std::to_string(d) + "]";
}

std::string Emitter::op(uint32_t n) {
  int64_t o = identity(n).op;
  if (o >= 0 && static_cast<size_t>(o) < m_.ops.size()) {
    const std::string& name = m_.ops[static_cast<size_t>(o)];
    for (uint32_t id = 1; id < kFirstUserOp; ++id)
      if (predefined_op_name(id) && name == predefined_op_name(id)) return name;
  }
  user_op_ = true;
  note("user-defined reduction ops become a commutative op that does no arithmetic");
  return "skel_user_op";
}

// A list field as a C array expression (skel_zeros when the rank has none).
std::string Emitter::list(uint32_t n, ListField f) {
  const MergedEvent& e = event(n);
  const ListDesc* d = e.find_list(f);
  std::string name = "n" + std::to_string(n) + "_" + list_field_name(f);
  if (!d) return "skel_zeros";
  auto write = [&](const std::string& nm, const std::vector<int64_t>& v) {
    write_table(tables_, "static const int " + nm + "[]", texts(v));
  };
  if (d->same) {
    if (d->lists.empty() || d->lists[0].empty()) return "skel_zeros";
    write(name, d->lists[0]);
    return name;
  }
  for (const auto& l : d->lists) longest_list_ = std::max(longest_list_, l.size());
  std::vector<int64_t> all, at(P_, -1);
  for (size_t i = 0; i < e.ranks.size(); ++i) {
    if (d->lists[i].empty()) continue;
    at[e.ranks[i]] = static_cast<int64_t>(all.size());
    all.insert(all.end(), d->lists[i].begin(), d->lists[i].end());
  }
  if (all.empty()) return "skel_zeros";
  write(name, all);
  write_table(tables_, "static const int " + name + "_at[SKEL_WORLD_SIZE]", texts(at));
  return "(" + name + "_at[skel_rank] >= 0 ? " + name + " + " + name + "_at[skel_rank] : skel_zeros)";
}

// The requests a completion call names, as references coded for skel_slot()
// ("n12_reqs" or a per-rank slice of it); their number in count_expr.
std::string Emitter::slot_list(uint32_t n, std::string& count_expr) {
  auto made = slot_lists_.find(n);  // its tables are written once
  if (made == slot_lists_.end()) {
    std::string count = "1";
    const std::string list = write_slot_list(n, count);
    made = slot_lists_.emplace(n, std::make_pair(list, count)).first;
  }
  count_expr = made->second.second;
  return made->second.first;
}

std::string Emitter::write_slot_list(uint32_t n, std::string& count_expr) {
  const MergedEvent& e = event(n);
  const auto& refs = slots_.refs[n];
  std::vector<std::vector<int64_t>> lists;
  for (uint32_t r : e.ranks) {
    std::vector<int64_t> l;
    if (!refs.empty())
      for (const RequestRef& x : refs[r]) l.push_back(ref_code(x));
    lists.push_back(l);
  }
  for (const auto& l : lists) max_reqs_ = std::max(max_reqs_, l.size());
  bool same = std::all_of(lists.begin(), lists.end(), [&](const auto& l) { return l == lists[0]; });
  // A list equal to one written before is read there (a long skeleton's
  // kept steps name the same slots in hundreds of nodes).
  auto write = [&](const std::vector<int64_t>& v) {
    const std::string name = "n" + std::to_string(n) + "_reqs";
    const std::vector<std::string> cells = texts(v);
    const std::string before = written_as(table_key("int[]", cells), name);
    if (!before.empty()) return before;
    write_table(tables_, "static const int " + name + "[]", cells);
    return name;
  };
  if (same) {
    count_expr = std::to_string(lists.empty() ? 0 : lists[0].size());
    if (lists.empty() || lists[0].empty()) return "skel_no_slots";
    return write(lists[0]);
  }
  std::vector<int64_t> all;
  std::vector<std::string> start(e.ranks.size()), len(e.ranks.size());
  for (size_t i = 0; i < lists.size(); ++i) {
    start[i] = std::to_string(all.size());
    len[i] = std::to_string(lists[i].size());
    all.insert(all.end(), lists[i].begin(), lists[i].end());
  }
  if (all.empty()) all.push_back(-1);
  const std::string table = write(all);
  count_expr = per_rank(n, "nreqs", e.ranks, len);
  return table + " + " + per_rank(n, "reqs_at", e.ranks, start);
}

// A single request every rank names alike, as a slot expression ("" if not so).
std::string Emitter::single_request(uint32_t n) {
  const auto& refs = slots_.refs[n];
  if (refs.empty()) return "";
  const std::vector<RequestRef>* first = nullptr;
  for (uint32_t r : event(n).ranks) {
    if (refs[r].size() != 1) return "";
    if (first && !(refs[r][0] == (*first)[0])) return "";
    first = &refs[r];
  }
  if (!first) return "";
  const RequestRef& x = (*first)[0];
  if (x.ring < 0) return "&skel_null_req";
  size_t g = static_cast<size_t>(x.ring);
  if (slots_.pool[g] == PoolKind::kSends) return "";  // skel_slot() waits for one: gathered once
  if (slots_.ring_size[g] == 1 && x.pool == PoolRef::kNo)
    return "&skel_req[" + std::to_string(slots_.ring_base[g] + at_.slot_base) + "]";
  return "&skel_req[skel_slot(" + std::to_string(ref_code(x)) + ")]";
}

std::string Emitter::new_comm(uint32_t n) {
  const MergedEvent& e = event(n);
  std::vector<std::string> vals;
  for (uint32_t r : e.ranks) {
    int64_t c = m_.value(e, Param::new_comm, r);
    // ranks left out of the new communicator receive MPI_COMM_NULL in the spare last entry
    vals.push_back(c >= 2 ? std::to_string(c) : "SKEL_NUM_COMMS");
  }
  std::string c = per_rank(n, "new_comm", e.ranks, vals);
  return "&skel_comm[" + c + "]";
}

std::string Emitter::guard(uint32_t n) const { return guard_of_ranks("n" + std::to_string(n) + "_in", event(n).ranks); }

// A C condition true on the ranks rk ("" for all): a range, a stride, or a
// table `name` indexed by rank.
std::string Emitter::guard_of_ranks(const std::string& name, const std::vector<uint32_t>& rk) const {
  if (rk.size() == P_) return "";
  if (rk.size() == 1) return "skel_rank == " + std::to_string(rk[0]);
  if (rk.back() - rk.front() + 1 == rk.size())
    return "skel_rank >= " + std::to_string(rk.front()) + " && skel_rank <= " + std::to_string(rk.back());
  uint32_t step = rk[1] - rk[0];
  bool arithmetic = true;
  for (size_t i = 1; i < rk.size(); ++i) arithmetic &= rk[i] - rk[i - 1] == step;
  if (arithmetic)
    return "skel_rank >= " + std::to_string(rk.front()) + " && skel_rank <= " + std::to_string(rk.back()) +
           " && (skel_rank - " + std::to_string(rk.front()) + ") % " + std::to_string(step) + " == 0";
  std::vector<int> in(P_, 0);
  for (uint32_t r : rk) in[r] = 1;
  std::ostringstream& t = const_cast<Emitter*>(this)->tables_;
  write_table(t, "static const unsigned char " + name + "[SKEL_WORLD_SIZE]", texts(in), 32);
  return name + "[skel_rank]";
}

double Emitter::computation_ns(const FoldedNode& node, uint32_t r) const { return gen::computation_ns(p_, node, r); }

// The application's instance number of node n, as the skeleton counts it
// (n<id>_i: declared once, advanced after each instance by the open loops'
// stride, so that a cut loop's instances stand for the application's).
std::string Emitter::instance_counter(uint32_t n) {
  const std::string name = "n" + std::to_string(n) + "_i";
  if (counted_.insert(n).second) tables_ << "static double " << name << "; /* the application's instance of n" << n << " */\n";
  return name;
}

// Kernel units of node n's computation gap, per rank.
std::string Emitter::work(uint32_t n, const std::vector<uint32_t>& ranks) {
  const FoldedNode& node = p_.nodes[n];
  std::vector<std::string> vals;
  bool any = false;
  for (uint32_t r : ranks) {
    double units = computation_ns(node, r) * rate_[r];
    any |= units > 0;
    vals.push_back(num(units, kUnitsDigits));
  }
  if (!any) return "";
  return per_rank(n, "work", ranks, vals, "double") + profile(n) + phases(n);
}

// Seconds node n's gap was blocked (asleep: FoldedNode::blocked), per rank; "" where none.
std::string Emitter::sleep(uint32_t n, const std::vector<uint32_t>& ranks) {
  const FoldedNode& node = p_.nodes[n];
  if (node.blocked.empty()) return "";
  std::vector<std::string> vals;
  bool any = false;
  for (uint32_t r : ranks) {
    const double s = r < node.blocked.size() && node.blocked[r].n > 0 ? node.blocked[r].mean * 1e-9 : 0;
    any |= s > 0;
    vals.push_back(num(s));
  }
  return any ? per_rank(n, "sleep", ranks, vals, "double") : "";
}

// The factor of node n's computation at this phase where it differs by the
// phase of a cycle (FoldedNode::phase_factor): a table per rank and phase,
// indexed as a cycle rule of the same kind (cycle()); whole periods of a cut
// loop run (value_period), so the phases keep their weight.
std::string Emitter::phases(uint32_t n) {
  const FoldedNode& node = p_.nodes[n];
  if (!node.phase_period || open_loops_.empty()) return "";
  const std::string name =
      factor_table("n" + std::to_string(n) + "_phase",
                   "n" + std::to_string(n) + ": its computation at each " +
                       (node.phase_by_instance ? "of its instances" : "iteration of its loop") + " (a cycle of " +
                       std::to_string(node.phase_period) + "), as factors of its mean",
                   node.phase_period, node.phase_factor);
  return " * " + name + "[skel_rank][" + cycle_index(node.phase_by_instance, node.phase_period) + "]";
}

// A table of factors per rank (`per_rank`: a row of `width`, or empty: 1
// throughout) as `static const double name[SKEL_WORLD_SIZE][width]`, unless
// an equal table was written before; returns the name it has.
std::string Emitter::factor_table(const std::string& name, const std::string& comment, uint64_t width,
                                  const std::vector<std::vector<double>>& per_rank) {
  std::ostringstream rows;
  for (uint32_t r = 0; r < P_; ++r) {
    rows << "\n  {";
    for (uint64_t k = 0; k < width; ++k) {
      const bool kept = r < per_rank.size() && k < per_rank[r].size();
      rows << (k ? ", " : "") << num(kept ? per_rank[r][k] : 1.0);
    }
    rows << "}" << (r + 1 < P_ ? "," : "");
  }
  const std::string before = written_as("double[" + std::to_string(width) + "]" + rows.str(), name);
  if (!before.empty()) return before;
  tables_ << "/* " << comment << " */\n";
  tables_ << "static const double " << name << "[SKEL_WORLD_SIZE][" << width << "] = {" << rows.str() << "\n};\n";
  return name;
}

// The factor of node n's computation at this instance where it drifts
// through the run (FoldedNode::profile): a table per rank and part, and the
// application's instance counter (n<id>_i, advanced as for linear counts).
std::string Emitter::profile(uint32_t n) {
  const FoldedNode& node = p_.nodes[n];
  size_t parts = 0;
  for (const auto& f : node.profile) parts = std::max(parts, f.size());
  if (!parts || node.instances == 0) return "";
  const std::string id = "n" + std::to_string(n), counter = instance_counter(n);
  const std::string name = factor_table(id + "_course",
                                        id + ": its computation through the run, in " + std::to_string(parts) +
                                            " parts of its " + std::to_string(node.instances) +
                                            " instances, as factors of its mean",
                                        parts, node.profile);
  return " * " + name + "[skel_rank][skel_part(" + counter + ", " + std::to_string(node.instances) + ", " +
         std::to_string(parts) + ")]";
}

void Emitter::size_buffers(uint32_t n) {
  const MergedEvent& e = event(n);
  const Identity& id = identity(n);
  int64_t s1 = type_size(id.dtype), s2 = type_size(id.dtype2), P = comm_size(n);
  int64_t most = 0;
  auto counts_max = [&](Param pm) {
    int64_t c = 0;
    if (e.params[static_cast<size_t>(pm)].kind == ParamKind::kAbsent) return c;
    for (uint32_t r : e.ranks) c = std::max(c, m_.value(e, pm, r));
    if (const CountRule* rule = p_.nodes[n].rule(pm))
      for (double mx : rule->max) c = std::max(c, static_cast<int64_t>(std::ceil(mx)));
    return c;
  };
  int64_t c1 = counts_max(Param::count), c2 = counts_max(Param::count2);
  most = std::max({most, c1 * s1 * P, c2 * s2 * P, counts_max(Param::bytes), counts_max(Param::bytes2)});
  for (ListField f : {ListField::counts, ListField::counts2}) {
    const ListDesc* d = e.find_list(f);
    if (!d) continue;
    for (const auto& l : d->lists) {
      int64_t sum = 0;
      for (int64_t v : l) sum += std::max<int64_t>(v, 0);
      most = std::max(most, sum * std::max(s1, s2));
    }
  }
  if (const auto room = plan_.receive_bytes.find(n); room != plan_.receive_bytes.end())
    most = std::max(most, static_cast<int64_t>(room->second));
  buf_bytes_ = std::max(buf_bytes_, most);
  uint32_t f = id.func;
  if (f == kFunc_MPI_Bsend || f == kFunc_MPI_Ibsend || f == kFunc_MPI_Bsend_init)
    bsend_bytes_ += c1 * s1 + 1024;
}

// A program body longer than this many lines is compiled at -O0 (GCC's time
// and memory at -O1 and -O2 grow faster than the function's length: a body of
// 2,014 lines took 4.3 s at -O2 and 0.7 s at -O0, one of 12,045 lines 16.5 s
// and 1.9 s; the skeleton ran as long either way: its time is its calls'
// and the kernel's, which keeps the build's level).
constexpr size_t kLongBodyLines = 1000;

// ------------------------------------------------------------------ calls

// "a, b, c"
std::string joined(const std::vector<std::string>& args) {
  std::string s;
  for (const std::string& a : args) s += (s.empty() ? "" : ", ") + a;
  return s;
}

// The request slot a request-creating call fills ("" for other calls).
std::string Emitter::request_out(uint32_t n) const {
  if (slots_.ring_of_node[n] < 0) return "";
  const size_t g = static_cast<size_t>(slots_.ring_of_node[n]);
  return slots_.ring_size[g] == 1 ? "&skel_req[" + std::to_string(slots_.ring_base[g] + at_.slot_base) + "]"
                                  : "skel_new_req(" + std::to_string(g + at_.ring_base) + ")";
}

// A call whose every parameter the call list describes (common/mpi_calls.list:
// sends, receives, probes, the collectives with counts or count lists,
// Comm_split, Comm_dup): its arguments as the skeleton computes them, from the
// parameters' roles in prototype order. Empty where a parameter has no role
// the skeleton can fill (the caller writes that call by hand).
std::vector<std::string> Emitter::listed_call(uint32_t n) {
  const Identity& id = identity(n);
  const CallArgs a = call_args(id.func);
  const CallClass cls = call_class(id.func);
  const bool receive = cls == CallClass::kRecv || cls == CallClass::kIrecv || cls == CallClass::kRecvInit;
  const bool any = plan_.any_source(id, event(n), Param::peer);  // pinned: the traced source
  std::vector<std::string> args;
  std::string last_list, last_length, after;  // a count list and how many entries it has
  int displs = 0;
  for (uint8_t i = 0; i < a.n; ++i) {
    switch (a.role[i]) {
      case ArgRole::kSendbuf: args.push_back("skel_sbuf"); break;
      case ArgRole::kFwd: args.push_back(send_buffer(n)); break;
      case ArgRole::kBuffer: args.push_back("skel_rbuf"); break;
      case ArgRole::kRecvd: args.push_back("skel_rbuf"); after = "skel_fwd = skel_rbuf;"; break;
      case ArgRole::kCount:  // a receive's capacity
        args.push_back(receive ? with_room(n, count(n, Param::count, true), id.dtype) : count(n, Param::count));
        break;
      case ArgRole::kCount2:  // MPI_Sendrecv's receive count, a collective's second count
        args.push_back(cls == CallClass::kSendrecv && id.func != kFunc_MPI_Sendrecv_replace
                           ? with_room(n, count(n, Param::count2, true), id.dtype2 >= 0 ? id.dtype2 : id.dtype)
                           : count(n, Param::count2));
        break;
      case ArgRole::kDtype: args.push_back(dtype(id.dtype)); break;
      case ArgRole::kDtype2: args.push_back(dtype(id.dtype2 >= 0 ? id.dtype2 : id.dtype)); break;
      case ArgRole::kDest: args.push_back(peer(n, Param::peer, false)); break;
      case ArgRole::kSrc: args.push_back(peer(n, Param::peer, any)); break;
      // a trace of several threads per rank holds their calls in one order that may pair differently on
      // each rank: with MPI_Init_thread the skeleton's receives take any tag
      case ArgRole::kTag:
        args.push_back(receive && plan_.any_tag_receives ? "MPI_ANY_TAG" : count(n, Param::tag));
        break;
      case ArgRole::kComm: args.push_back(comm(n)); break;
      case ArgRole::kRoot: args.push_back(root(n)); break;
      case ArgRole::kOp: args.push_back(op(n)); break;
      case ArgRole::kStatus: args.push_back("MPI_STATUS_IGNORE"); break;
      case ArgRole::kFlag: args.push_back("&skel_flag"); break;
      case ArgRole::kReqOut: args.push_back(request_out(n)); break;
      case ArgRole::kNewcomm: args.push_back(new_comm(n)); break;
      case ArgRole::kColor: args.push_back(param(n, Param::color, false)); break;
      case ArgRole::kKey: args.push_back(param(n, Param::key, false)); break;
      case ArgRole::kCounts: case ArgRole::kCounts2:
        args.push_back(last_list = list(n, a.role[i] == ArgRole::kCounts ? ListField::counts : ListField::counts2));
        last_length = std::to_string(comm_size(n));
        break;
      case ArgRole::kNcounts: case ArgRole::kNcounts2:  // per neighbour of the skeleton's own topology
        args.push_back(last_list = list(n, a.role[i] == ArgRole::kNcounts ? ListField::counts : ListField::counts2));
        last_length = "skel_degree(" + comm(n) + (a.role[i] == ArgRole::kNcounts ? ", 1)" : ", 0)");
        break;
      case ArgRole::kDispls:  // the displacements of the count list before them
        args.push_back("skel_displs(" + last_list + ", " + last_length + ", skel_displs_" + (displs++ ? "b" : "a") +
                       ")");
        break;
      default:
        return {};
    }
  }
  std::vector<std::string> out{std::string(func_name(id.func)) + "(" + joined(args) + ");"};
  if (!after.empty()) out.push_back(after);
  return out;
}

// Wait*, Test*, Start*, Request_free, Cancel: the requests from their
// slots; after a call with pool references, each one's slot changes queue.
std::vector<std::string> Emitter::completion_call(uint32_t n) {
  std::vector<std::string> lines = completion_lines(n);
  if (!has_pool_ref(n)) return lines;
  std::string k = "1";
  const std::string S = slot_list(n, k);
  lines.push_back("skel_pools_moved(" + S + ", " + k + ");");
  return lines;
}

std::vector<std::string> Emitter::completion_lines(uint32_t n) {
  const uint32_t f = identity(n).func;
  const bool simple = f == kFunc_MPI_Start || f == kFunc_MPI_Request_free || f == kFunc_MPI_Cancel || f == kFunc_MPI_Wait ||
                      f == kFunc_MPI_Test;
  const std::string one = simple ? single_request(n) : "";
  if (!one.empty()) {
    switch (f) {
      case kFunc_MPI_Start: return {"MPI_Start(" + one + ");"};
      case kFunc_MPI_Request_free: return {"if (*" + one + " != MPI_REQUEST_NULL) MPI_Request_free(" + one + ");"};
      case kFunc_MPI_Cancel: return {"if (*" + one + " != MPI_REQUEST_NULL) MPI_Cancel(" + one + ");"};
      case kFunc_MPI_Wait: return {"MPI_Wait(" + one + ", MPI_STATUS_IGNORE);"};
      default:
        return {"MPI_Test(" + one + ", &skel_flag, MPI_STATUS_IGNORE);",
                "if (!skel_flag) PMPI_Wait(" + one + ", MPI_STATUS_IGNORE);"};
    }
  }
  std::string k = "1";
  const std::string S = slot_list(n, k);
  if (k == "0" && f == kFunc_MPI_Wait) return {"MPI_Wait(&skel_null_req, MPI_STATUS_IGNORE);"};
  if (k == "0" && f == kFunc_MPI_Test) return {"MPI_Test(&skel_null_req, &skel_flag, MPI_STATUS_IGNORE);"};
  const std::string g = "skel_gather(" + S + ", " + k + ");";
  const std::string done = "skel_finish(" + S + ", " + k + ");";
  const std::string back = "skel_scatter(" + S + ", " + k + ");";
  switch (f) {
    case kFunc_MPI_Start: return {g, "MPI_Start(&skel_tmp_req[0]);", back};
    case kFunc_MPI_Request_free:
      return {g, "if (skel_tmp_req[0] != MPI_REQUEST_NULL) MPI_Request_free(&skel_tmp_req[0]);", back};
    case kFunc_MPI_Cancel: return {g, "if (skel_tmp_req[0] != MPI_REQUEST_NULL) MPI_Cancel(&skel_tmp_req[0]);", back};
    case kFunc_MPI_Wait: return {g, "MPI_Wait(&skel_tmp_req[0], MPI_STATUS_IGNORE);", back};
    case kFunc_MPI_Test: return {g, "MPI_Test(&skel_tmp_req[0], &skel_flag, MPI_STATUS_IGNORE);", done};
    case kFunc_MPI_Startall: return {g, "MPI_Startall(" + k + ", skel_tmp_req);", back};
    case kFunc_MPI_Waitall: return {g, "MPI_Waitall(" + k + ", skel_tmp_req, skel_statuses);", back};
    case kFunc_MPI_Waitany: return {g, "MPI_Waitany(" + k + ", skel_tmp_req, &skel_index, MPI_STATUS_IGNORE);", done};
    case kFunc_MPI_Waitsome:
      return {g, "MPI_Waitsome(" + k + ", skel_tmp_req, &skel_outcount, skel_tmp_index, skel_statuses);", done};
    case kFunc_MPI_Testall: return {g, "MPI_Testall(" + k + ", skel_tmp_req, &skel_flag, skel_statuses);", done};
    case kFunc_MPI_Testany:
      return {g, "MPI_Testany(" + k + ", skel_tmp_req, &skel_index, &skel_flag, MPI_STATUS_IGNORE);", done};
    default:
      return {g, "MPI_Testsome(" + k + ", skel_tmp_req, &skel_outcount, skel_tmp_index, skel_statuses);", done};
  }
}

// MPI_Sendrecv and MPI_Sendrecv_replace: their buffers must not overlap, and
// what they receive is what a forwarding send passes on next.
std::vector<std::string> Emitter::sendrecv_call(uint32_t n) {
  const Identity& id = identity(n);
  const bool any = plan_.any_source(id, event(n), Param::peer2);
  const std::string fn = func_name(id.func), C = comm(n);
  // each argument in its own statement: their tables come out in argument order
  auto rtag = [&] { return plan_.any_tag_receives ? std::string("MPI_ANY_TAG") : count(n, Param::tag2); };
  if (id.func == kFunc_MPI_Sendrecv_replace) {  // its one buffer is sent, then received into: skel_xbuf unless it forwards
    const std::string into = send_buffer(n, "skel_xbuf");
    std::vector<std::string> a = {"skel_into", count(n, Param::count), dtype(id.dtype)};
    a.push_back(peer(n, Param::peer, false));
    a.push_back(count(n, Param::tag));
    a.push_back(peer(n, Param::peer2, any));
    a.push_back(rtag());
    return {"skel_into = " + into + ";", fn + "(" + joined(a) + ", " + C + ", MPI_STATUS_IGNORE);",
            "skel_fwd = skel_into;"};
  }
  // a forwarding one receives into whichever of skel_rbuf and skel_xbuf it does not send from
  const std::string out = send_buffer(n);
  const std::string in = out == "skel_sbuf" ? "skel_rbuf" : "(skel_fwd == skel_rbuf ? skel_xbuf : skel_rbuf)";
  std::vector<std::string> a = {out, count(n, Param::count), dtype(id.dtype)};
  a.push_back(peer(n, Param::peer, false));
  a.push_back(count(n, Param::tag));
  a.push_back("skel_into");
  a.push_back(count(n, Param::count2, true));
  a.push_back(dtype(id.dtype2 >= 0 ? id.dtype2 : id.dtype));
  a.push_back(peer(n, Param::peer2, any));
  a.push_back(rtag());
  return {"skel_into = " + in + ";", fn + "(" + joined(a) + ", " + C + ", MPI_STATUS_IGNORE);",
          "skel_fwd = skel_into;"};
}

// MPI_Alltoallw: the per-peer datatypes are not recorded; each side gets one
// contiguous type per rank of the traced bytes per element.
std::vector<std::string> Emitter::alltoallw_call(uint32_t n) {
  const MergedEvent& e = event(n);
  auto elem = [&](Param bytes, ListField f) {
    std::vector<std::string> v;
    for (uint32_t r : e.ranks) {
      int64_t b = m_.value(e, bytes, r), sum = 0;
      for (int64_t c : m_.list(e, f, r)) sum += std::max<int64_t>(c, 0);
      v.push_back(std::to_string(sum > 0 && b > 0 ? std::max<int64_t>(1, b / sum) : 1));
    }
    return per_rank(n, std::string(param_name(bytes)) + "_per_element", e.ranks, v);
  };
  const std::string cs = std::to_string(comm_size(n));
  const std::string L1 = list(n, ListField::counts), L2 = list(n, ListField::counts2);
  note("MPI_Alltoallw: the per-peer datatypes are not recorded; each side uses one contiguous type of the "
       "traced bytes per element");
  const std::string W1 = "skel_bytes_types_of(" + elem(Param::bytes, ListField::counts) + ", 0)";
  const std::string W2 = "skel_bytes_types_of(" + elem(Param::bytes2, ListField::counts2) + ", 1)";
  std::vector<std::string> a = {"skel_sbuf", L1, "skel_displs(" + L1 + ", " + cs + ", skel_displs_a)", W1,
                                "skel_rbuf", L2, "skel_displs(" + L2 + ", " + cs + ", skel_displs_b)", W2, comm(n)};
  if (identity(n).func == kFunc_MPI_Ialltoallw) a.push_back(request_out(n));
  return {std::string(func_name(identity(n).func)) + "(" + joined(a) + ");"};
}

// MPI_Comm_create and MPI_Comm_create_group: the new communicator's members,
// a table of groups with one index per rank.
std::vector<std::string> Emitter::comm_create_call(uint32_t n) {
  const MergedEvent& e = event(n);
  int64_t nc = -1;
  for (uint32_t r : e.ranks) nc = std::max(nc, m_.value(e, Param::new_comm, r));
  std::vector<int64_t> all;
  std::vector<std::string> at, len;
  if (nc >= 0) {
    const CommSymbol& cs = m_.comms[static_cast<size_t>(nc)];
    std::vector<int64_t> start;
    for (const auto& g : cs.groups) {
      start.push_back(static_cast<int64_t>(all.size()));
      all.insert(all.end(), g.begin(), g.end());
    }
    for (uint32_t r : e.ranks) {
      int32_t g = r < cs.group_of.size() ? cs.group_of[r] : -1;
      at.push_back(std::to_string(g >= 0 ? start[static_cast<size_t>(g)] : 0));
      len.push_back(std::to_string(g >= 0 ? cs.groups[static_cast<size_t>(g)].size() : 0));
    }
  }
  std::string name = "n" + std::to_string(n) + "_members";
  if (all.empty()) all.push_back(0);
  write_table(tables_, "static const int " + name + "[]", texts(all));
  std::string g = "skel_group_of(" + per_rank(n, "nmembers", e.ranks, len) + ", " + name + " + " +
                  per_rank(n, "members_at", e.ranks, at) + ")";
  const std::string C = comm(n);
  if (identity(n).func == kFunc_MPI_Comm_create)
    return {"skel_group = " + g + ";", "MPI_Comm_create(" + C + ", skel_group, " + new_comm(n) + ");",
            "PMPI_Group_free(&skel_group);"};
  const std::string tag = count(n, Param::tag);
  return {"skel_group = " + g + ";", "MPI_Comm_create_group(" + joined({C, "skel_group", tag, new_comm(n)}) + ");",
          "PMPI_Group_free(&skel_group);"};
}

// Topologies: Cartesian ones as traced; graphs without edges over the same ranks.
std::vector<std::string> Emitter::topology_call(uint32_t n) {
  const uint32_t f = identity(n).func;
  const std::string C = comm(n);
  if (f == kFunc_MPI_Cart_create) {
    const std::string dims = list(n, ListField::dims), periods = list(n, ListField::periods);
    const std::vector<int64_t>& dl = m_.list(event(n), ListField::dims, event(n).ranks[0]);
    return {"MPI_Cart_create(" + joined({C, std::to_string(dl.size()), dims, periods, "0", new_comm(n)}) + ");"};
  }
  if (f == kFunc_MPI_Cart_sub) return {"MPI_Cart_sub(" + joined({C, list(n, ListField::dims), new_comm(n)}) + ");"};
  note("MPI_Graph_create / MPI_Dist_graph_create*: the graph is not recorded; the skeleton creates one without "
       "edges over the same ranks (a neighbourhood collective on it moves nothing)");
  if (f == kFunc_MPI_Graph_create)
    return {"MPI_Graph_create(" + joined({C, std::to_string(comm_size(n)), "skel_zeros", "skel_zeros", "0",
                                          new_comm(n)}) + ");"};
  if (f == kFunc_MPI_Dist_graph_create)
    return {"MPI_Dist_graph_create(" + C + ", 0, skel_zeros, skel_zeros, skel_zeros, skel_zeros, MPI_INFO_NULL, 0, " +
            new_comm(n) + ");"};
  return {"MPI_Dist_graph_create_adjacent(" + C + ", 0, skel_zeros, skel_zeros, 0, skel_zeros, skel_zeros, "
          "MPI_INFO_NULL, 0, " + new_comm(n) + ");"};
}

// One-sided calls on the skeleton's one window (their targets are not
// recorded): every way of creating a window makes it; the others are left
// out while there is none (a window the trace did not see created).
std::vector<std::string> Emitter::window_call(uint32_t n) {
  const Identity& id = identity(n);
  const std::string C = comm(n);
  win_ = true;
  switch (id.func) {
    case kFunc_MPI_Win_create:
      return {"if (!skel_winbuf) skel_winbuf = skel_alloc(SKEL_BUF_BYTES);",
              "MPI_Win_create(skel_winbuf, SKEL_BUF_BYTES, 1, MPI_INFO_NULL, " + C + ", &skel_win);",
              "PMPI_Comm_rank(" + C + ", &skel_win_rank);"};
    case kFunc_MPI_Win_allocate:  // and MPI_Win_allocate_shared (replayed_as): its ranks may not share memory here
      return {"MPI_Win_allocate(SKEL_BUF_BYTES, 1, MPI_INFO_NULL, " + C + ", &skel_win_memory, &skel_win);",
              "PMPI_Comm_rank(" + C + ", &skel_win_rank);"};
    default: break;
  }
  const std::string call = window_operation(n);
  if (call.empty()) return {"/* " + std::string(func_name(id.func)) + ": an exposure epoch, left out */"};
  return {"if (skel_win != MPI_WIN_NULL) " + call};
}

std::string Emitter::window_operation(uint32_t n) {
  const Identity& id = identity(n);
  switch (id.func) {
    case kFunc_MPI_Win_free: return "MPI_Win_free(&skel_win);";
    case kFunc_MPI_Win_fence: return "MPI_Win_fence(0, skel_win);";
    case kFunc_MPI_Win_lock: return "MPI_Win_lock(MPI_LOCK_SHARED, skel_win_rank, 0, skel_win);";
    case kFunc_MPI_Win_unlock: return "MPI_Win_unlock(skel_win_rank, skel_win);";
    case kFunc_MPI_Win_lock_all: return "MPI_Win_lock_all(0, skel_win);";
    case kFunc_MPI_Win_unlock_all: return "MPI_Win_unlock_all(skel_win);";
    case kFunc_MPI_Win_flush: return "MPI_Win_flush(skel_win_rank, skel_win);";
    case kFunc_MPI_Win_flush_local: return "MPI_Win_flush_local(skel_win_rank, skel_win);";
    case kFunc_MPI_Win_flush_all: return "MPI_Win_flush_all(skel_win);";
    case kFunc_MPI_Win_flush_local_all: return "MPI_Win_flush_local_all(skel_win);";
    case kFunc_MPI_Win_sync: return "MPI_Win_sync(skel_win);";
    default: break;
  }
  // Post-start-complete-wait: the groups are not recorded, and the skeleton's
  // operations target its own rank (below): each access epoch is a lock of
  // it, the exposure epochs are left out. Replayed as traced (a start with no
  // post of its own rank, the operations outside an epoch) it was an MPI
  // error: osu_put_bibw's skeleton aborted in MPI_Put.
  const char* pscw_note =
      "MPI_Win_post/MPI_Win_start/MPI_Win_complete/MPI_Win_wait: the groups are not recorded; each access epoch "
      "(start to complete) is a shared lock of the rank's own window, the exposure epochs are left out";
  switch (id.func) {
    case kFunc_MPI_Win_start: note(pscw_note); return "MPI_Win_lock(MPI_LOCK_SHARED, skel_win_rank, 0, skel_win);";
    case kFunc_MPI_Win_complete: note(pscw_note); return "MPI_Win_unlock(skel_win_rank, skel_win);";
    case kFunc_MPI_Win_post: case kFunc_MPI_Win_wait: note(pscw_note); return "";
    default: break;
  }
  note("one-sided MPI_Put/MPI_Get/MPI_Accumulate/MPI_Get_accumulate/MPI_Fetch_and_op/MPI_Compare_and_swap: the "
       "target rank is not recorded; the skeleton targets its own rank in the window");
  const std::string N1 = count(n, Param::count), T1 = dtype(id.dtype), R = "skel_win_rank";
  switch (id.func) {
    case kFunc_MPI_Accumulate:
      return "MPI_Accumulate(" + joined({"skel_sbuf", N1, T1, R, "0", N1, T1, op(n), "skel_win"}) + ");";
    case kFunc_MPI_Get_accumulate:
      return "MPI_Get_accumulate(" + joined({"skel_sbuf", N1, T1, "skel_rbuf", N1, T1, R, "0", N1, T1, op(n), "skel_win"}) +
             ");";
    case kFunc_MPI_Fetch_and_op:
      return "MPI_Fetch_and_op(" + joined({"skel_sbuf", "skel_rbuf", T1, R, "0", op(n), "skel_win"}) + ");";
    case kFunc_MPI_Compare_and_swap:
      return "MPI_Compare_and_swap(" + joined({"skel_sbuf", "skel_sbuf", "skel_rbuf", T1, R, "0", "skel_win"}) + ");";
    default:
      return std::string(func_name(id.func)) + "(" +
             joined({id.func == kFunc_MPI_Put ? "skel_sbuf" : "skel_rbuf", N1, T1, R, "0", N1, T1, "skel_win"}) + ");";
  }
}

// MPI-IO on a scratch file (offsets are not recorded).
std::vector<std::string> Emitter::file_call(uint32_t n) {
  const Identity& id = identity(n);
  const uint32_t f = id.func;
  file_ = true;
  switch (f) {
    case kFunc_MPI_File_open:
      note("MPI-IO goes to a scratch file, deleted on close; offsets are not recorded (the skeleton uses 0)");
      return {"MPI_File_open(" + comm(n) +
              ", skel_io_path, MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE, MPI_INFO_NULL, &skel_file);"};
    case kFunc_MPI_File_close: return {"MPI_File_close(&skel_file);"};
    case kFunc_MPI_File_sync: return {"MPI_File_sync(skel_file);"};
    case kFunc_MPI_File_set_view:
      return {"MPI_File_set_view(skel_file, 0, MPI_BYTE, MPI_BYTE, \"native\", MPI_INFO_NULL);"};
    default: break;
  }
  const bool read = f == kFunc_MPI_File_read || f == kFunc_MPI_File_read_all || f == kFunc_MPI_File_read_at ||
                    f == kFunc_MPI_File_read_at_all;
  const bool at = f == kFunc_MPI_File_read_at || f == kFunc_MPI_File_write_at || f == kFunc_MPI_File_read_at_all ||
                  f == kFunc_MPI_File_write_at_all;
  const std::string N1 = count(n, Param::count), T1 = dtype(id.dtype);
  return {std::string(func_name(f)) + "(skel_file, " + (at ? "0, " : "") + (read ? "skel_rbuf" : "skel_sbuf") + ", " +
          N1 + ", " + T1 + ", MPI_STATUS_IGNORE);"};
}

// The C of node n's call: from the call list's roles where it describes every
// parameter, else written here by kind.
std::vector<std::string> Emitter::call(uint32_t n, double) {
  const Identity& id = identity(n);
  const uint32_t f = id.func;
  size_buffers(n);
  switch (f) {
    case kFunc_MPI_Init:
      saw_init_ = true;
      return {"MPI_Init(argc, argv);", "skel_setup();"};
    case kFunc_MPI_Init_thread:
      saw_init_ = true;
      return {"MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &skel_flag);", "skel_setup();"};
    case kFunc_MPI_Finalize:
      saw_finalize_ = true;
      // Ranks that finalize before others (the merge could not line their
      // Finalize up, e.g. after thousands of polls on one rank) stop here:
      // nothing after MPI_Finalize may run on them.
      if (event(n).ranks.size() < P_) return {"skel_finalize();", "return; /* this rank is done */"};
      return {"skel_finalize();"};
    case kFunc_MPI_Abort:
      note("MPI_Abort is left out: the skeleton ends normally where the application aborted");
      return {"/* the application called MPI_Abort here */"};
    case kFunc_MPI_Sendrecv: case kFunc_MPI_Sendrecv_replace: return sendrecv_call(n);
    case kFunc_MPI_Alltoallw: case kFunc_MPI_Ialltoallw: return alltoallw_call(n);
    case kFunc_MPI_Comm_split_type: {
      std::string color = param(n, Param::color, false);
      if (color != "MPI_UNDEFINED") color = "MPI_COMM_TYPE_SHARED";
      const std::string key = param(n, Param::key, false);
      return {"MPI_Comm_split_type(" + joined({comm(n), color, key, "MPI_INFO_NULL", new_comm(n)}) + ");"};
    }
    case kFunc_MPI_Comm_create: case kFunc_MPI_Comm_create_group: return comm_create_call(n);
    case kFunc_MPI_Cart_create: case kFunc_MPI_Cart_sub: case kFunc_MPI_Graph_create:
    case kFunc_MPI_Dist_graph_create: case kFunc_MPI_Dist_graph_create_adjacent:
      return topology_call(n);
    case kFunc_MPI_Comm_free: {
      if (id.comm < 2) return {"/* MPI_Comm_free of a communicator the tracer did not see created */"};
      return {"MPI_Comm_free(&skel_comm[" + std::to_string(id.comm) + "]);"};
    }
    case kFunc_MPI_Type_commit:
      dtype(id.dtype);
      if (id.dtype < 0) return {"/* MPI_Type_commit of an unknown type */"};
      return {"MPI_Type_commit(&skel_type[" + std::to_string(id.dtype) + "]);"};
    case kFunc_MPI_Win_create: case kFunc_MPI_Win_free: case kFunc_MPI_Win_fence: case kFunc_MPI_Win_lock:
    case kFunc_MPI_Win_unlock: case kFunc_MPI_Put: case kFunc_MPI_Get: case kFunc_MPI_Accumulate:
    case kFunc_MPI_Win_allocate: case kFunc_MPI_Win_lock_all: case kFunc_MPI_Win_unlock_all: case kFunc_MPI_Win_flush: case kFunc_MPI_Win_flush_all:
    case kFunc_MPI_Win_flush_local: case kFunc_MPI_Win_flush_local_all: case kFunc_MPI_Win_sync:
    case kFunc_MPI_Fetch_and_op: case kFunc_MPI_Compare_and_swap: case kFunc_MPI_Get_accumulate:
    case kFunc_MPI_Win_post: case kFunc_MPI_Win_start: case kFunc_MPI_Win_complete: case kFunc_MPI_Win_wait:
      return window_call(n);
    case kFunc_MPI_File_open: case kFunc_MPI_File_close: case kFunc_MPI_File_sync: case kFunc_MPI_File_set_view:
    case kFunc_MPI_File_read: case kFunc_MPI_File_write: case kFunc_MPI_File_read_all: case kFunc_MPI_File_write_all:
    case kFunc_MPI_File_read_at: case kFunc_MPI_File_write_at: case kFunc_MPI_File_read_at_all:
    case kFunc_MPI_File_write_at_all:
      return file_call(n);
    default:
      break;
  }
  const CallClass cls = call_class(f);
  if (cls == CallClass::kStart || cls == CallClass::kComplete || cls == CallClass::kRequestFree || cls == CallClass::kCancel)
    return completion_call(n);
  std::vector<std::string> listed = listed_call(n);
  if (!listed.empty()) return listed;
  note(std::string(func_name(f)) + " is not reproduced (its arguments are not recorded)");
  return {"/* " + std::string(func_name(f)) + ": not reproduced */"};
}

// ------------------------------------------------------------------ structure

// The ranks taking part in node n (a loop: in any call of its body).
const std::vector<uint32_t>& Emitter::ranks_in(uint32_t n) {
  auto it = ranks_in_.find(n);
  if (it != ranks_in_.end()) return it->second;
  std::vector<uint32_t> out;
  if (!p_.nodes[n].is_loop()) {
    out = event(n).ranks;
  } else {
    std::vector<char> in(P_, 0);
    for (uint32_t c : p_.nodes[n].body)
      for (uint32_t r : ranks_in(c)) in[r] = 1;
    for (uint32_t r = 0; r < P_; ++r)
      if (in[r]) out.push_back(r);
  }
  return ranks_in_[n] = out;
}

// Per item of a loop body, per rank: whether the item holds the rank's first
// call of an iteration. At the loop's first iteration the computation before
// that call was attributed to the loop (docs/compress.md, "Timing"), which
// runs it before the loop is entered.
std::vector<Emitter::Firsts> Emitter::firsts(const std::vector<uint32_t>& items) {
  std::vector<char> seen(P_, 0);
  std::vector<Firsts> out;
  for (uint32_t n : items) {
    Firsts f(P_, 0);
    for (uint32_t r : ranks_in(n))
      if (!seen[r]) f[r] = seen[r] = 1;
    out.push_back(std::move(f));
  }
  return out;
}

// The computation before node n (w: its units, per rank), skipped at the
// loop's first iteration on the ranks whose computation there the loop ran.
std::string Emitter::compute(uint32_t n, const std::string& work, const std::vector<uint32_t>& ranks,
                             const std::string& loop_var, const Firsts* first, double divided_by) {
  std::string s = sleep(n, ranks), w = work;
  if (w.empty() && s.empty()) return "";
  if (divided_by != 1.0) {  // a shortened computation (Plan::shortened): its work and its sleep
    if (!w.empty()) w = "(" + w + ") / " + num(divided_by);
    if (!s.empty()) s = "(" + s + ") / " + num(divided_by);
  }
  // the computation, then the time the application slept (the gap's end)
  std::string what = w.empty() ? "skel_sleep(" + s + ");" : "skel_compute(" + w + ");";
  if (!w.empty() && !s.empty()) what = "{ skel_compute(" + w + "); skel_sleep(" + s + "); }";
  size_t firsts = 0;
  if (first && !loop_var.empty())
    for (uint32_t r : ranks) firsts += (*first)[r] ? 1 : 0;
  if (firsts == 0) return what;
  if (firsts == ranks.size()) return "if (" + loop_var + " > 0) " + what;
  std::string name = "n" + std::to_string(n) + "_first";
  std::vector<int> firsts_of(P_);
  for (uint32_t r = 0; r < P_; ++r) firsts_of[r] = (*first)[r] ? 1 : 0;
  write_table(tables_, "static const unsigned char " + name + "[SKEL_WORLD_SIZE]", texts(firsts_of), 32);
  return "if (" + loop_var + " > 0 || !" + name + "[skel_rank]) " + what;
}

// skel_enter(k): the watchdog's record of the call about to be made (the
// k-th call written: what it is, its traced time, the loops around it).
std::string Emitter::enter(uint32_t n) {
  const std::string thread = at_.index ? "thread " + std::to_string(p_.thread) + ": " : "";
  return "skel_enter(" + std::to_string(record_call(n, thread + where(n), n)) + ");";
}

// The watchdog's record of a call made for node n (its index in skel_calls[]).
size_t Emitter::record_call(uint32_t n, const std::string& what, int64_t node) {
  double longest = 0;
  for (const RankStat& d : p_.nodes[n].dur) longest = std::max(longest, d.max);
  CallRecord c{what, node, 100 * longest * 1e-9, {}};
  for (const OpenLoop& l : open_loops_) c.loops.push_back(l.node);
  calls_.push_back(std::move(c));
  return at_.call_base + calls_.size() - 1;
}

// The template's name of how a farm's master takes requests (skel_farm.h).
const char* farm_recv_name(FarmRecv r) {
  switch (r) {
    case FarmRecv::kIrecvAny: return "SKEL_FARM_IRECV_ANY";
    case FarmRecv::kIrecvEach: return "SKEL_FARM_IRECV_EACH";
    case FarmRecv::kPoll: return "SKEL_FARM_POLL";
    case FarmRecv::kBlocking: break;
  }
  return "SKEL_FARM_RECV";
}

// Farm k of the plan (farm.h): its tables, its struct skel_farm, and the
// call that runs it in place of its top-level items.
void Emitter::emit_farm(size_t k) {
  const Farm& f = plan_.farms[k];
  const std::string id = "skel_farm" + std::to_string(k);
  auto in_comm = [&](uint32_t world) {
    return f.comm <= 0 ? static_cast<int64_t>(world) : m_.comms[static_cast<size_t>(f.comm)].comm_rank(world);
  };
  auto doubles = [&](const std::string& name, const std::vector<double>& v) {
    std::vector<std::string> cells;
    for (double x : v) cells.push_back(num(x));
    if (cells.empty()) cells.push_back("0");
    write_table(tables_, "static const double " + name + "[" + std::to_string(cells.size()) + "]", cells, 8);
  };
  auto in_comms = [&](const std::vector<uint32_t>& ranks) {
    std::vector<int64_t> v;
    for (uint32_t r : ranks) v.push_back(in_comm(r));
    return texts(v);
  };
  tables_ << "/* farm " << k << ": the workers' ranks in the communicator, the kept tasks, every task's kernel units, "
          << "per rank the computation before the farm and a worker's between request and answer */\n";
  write_table(tables_, "static const int " + id + "_worker[]", in_comms(f.workers));
  write_table(tables_, "static const int " + id + "_seed[]", f.seeded.empty() ? std::vector<std::string>{"-1"} : in_comms(f.seeded));
  std::vector<int> seeded(P_, 0);
  for (uint32_t r : f.seeded) seeded[r] = 1;
  write_table(tables_, "static const unsigned char " + id + "_seeded[SKEL_WORLD_SIZE]", texts(seeded), 32);
  write_table(tables_, "static const long " + id + "_kept[]", texts(f.kept));
  doubles(id + "_task", f.task_units);
  doubles(id + "_sleep", f.task_sleep_s);
  doubles(id + "_entry", f.entry_units);
  doubles(id + "_wait", f.worker_wait_units);
  doubles(id + "_wait_poll", f.worker_poll_units);
  doubles(id + "_wait_poll_sleep", f.worker_poll_sleep_s);
  const std::vector<size_t> calls{record_call(f.symbols[0], "farm " + std::to_string(k) + ": the master's receive of a request (" + where(f.symbols[0]) + ")"),
                                  record_call(f.symbols[1], "farm " + std::to_string(k) + ": the master's answer (" + where(f.symbols[1]) + ")"),
                                  record_call(f.symbols[2], "farm " + std::to_string(k) + ": a worker's request (" + where(f.symbols[2]) + ")"),
                                  record_call(f.symbols[3], "farm " + std::to_string(k) + ": a worker's receive of the answer (" + where(f.symbols[3]) + ")")};
  auto tag = [](int64_t t) { return t < 0 ? std::string("MPI_ANY_TAG") : std::to_string(t); };
  std::ostringstream st;
  st << "static const struct skel_farm " << id << " = {" << k << ", " << in_comm(f.master) << ", " << f.workers.size() << ", "
     << id << "_worker, " << f.seeded.size() << ", " << id << "_seed, " << id << "_seeded, " << tag(f.ask_tag) << ", "
     << f.request_tag << ", " << f.task_tag << ", " << f.stop_tag << ", " << tag(f.worker_recv_tag)
     << ", " << f.first_ask_bytes << ", " << f.ask_bytes << ", " << f.task_bytes << ", " << f.stop_bytes << ", "
     << f.task_ns.size() << ", " << f.kept.size() << ", " << id << "_kept, " << id << "_task, " << id << "_sleep, "
     << num(f.master_recv_units) << ", " << num(f.master_answer_units) << ", " << id << "_entry, " << id << "_wait, "
     << calls[0] << ", " << calls[1] << ", " << calls[2] << ", " << calls[3] << ", " << farm_recv_name(f.master_recv) << ", "
     << f.answer_isend << ", " << f.ask_isend << ", " << f.worker_irecv << ", " << num(f.master_poll_units) << ", " << num(f.master_poll_sleep_s) << ", "
     << f.worker_polls << ", " << id << "_wait_poll, " << id << "_wait_poll_sleep, " << f.worker_poll_sleep_s.size()
     << "};\n";
  farm_tables_ += st.str();
  buf_bytes_ = std::max<int64_t>(buf_bytes_, static_cast<int64_t>(std::max({f.first_ask_bytes, f.ask_bytes, f.task_bytes, f.stop_bytes})) + 8);
  std::string workers = rank_list(f.workers);
  body_ << "  /* farm " << k << " (top-level items " << f.first << ".." << f.end - 1 << "): master rank " << f.master
        << " hands " << f.kept.size() << " of the application's " << f.task_ns.size()
        << " tasks to whichever of ranks " << workers << " asks */\n";
  const std::string workers_here = guard_of_ranks(id + "_in", f.workers);
  body_ << "  if (skel_rank == " << f.master << " || " << (workers_here.empty() ? "1" : "(" + workers_here + ")") << ") skel_farm_run(&"
        << id << ", " << comm_of_symbol(f.comm) << ", skel_rank == " << f.master << ");\n";
  Skeleton::FarmSummary sum{f.master, static_cast<uint32_t>(f.workers.size()), f.task_ns.size(), f.kept.size(), f.traced_ns * 1e-9};
  out_.farms.push_back(sum);
}

// The request rings as runs of like rings (skel_runtime.h, skel_ring_run):
// rings of one size and pool kind whose slots follow one another.
std::string ring_runs(const std::vector<int>& base, const std::vector<int>& size, const std::vector<int>& pool) {
  std::vector<std::string> rows;
  for (size_t g = 0; g < base.size(); ++g) {
    const bool continues =
        g > 0 && size[g] == size[g - 1] && pool[g] == pool[g - 1] && base[g] == base[g - 1] + size[g - 1];
    if (!continues)
      rows.push_back("{" + std::to_string(g) + ", " + std::to_string(base[g]) + ", " + std::to_string(size[g]) + ", " +
                     std::to_string(pool[g]) + "}");
  }
  std::ostringstream t;
  t << "#define SKEL_NUM_RING_RUNS " << rows.size() << "\n"
    << "/* the request rings in runs of like rings: first ring, its first slot, slots per ring, pool kind */\n";
  write_table(t, "static const int skel_ring_runs[SKEL_NUM_RING_RUNS][4]", rows, 4);
  return t.str();
}

// The runtime's tables over every thread's program: each cut loop's factor
// and iterations and which program it is in, the request rings, the calls.
std::string Emitter::runtime_tables(const std::vector<const Emitter*>& all) {
  std::ostringstream factors, iters, stream, traced, classes;
  factors << "static const double skel_loop_factor[SKEL_NUM_CUT_LOOPS + 1] = {";
  // the kept runs' own traced times and classes, for the outlier rule (skel_runs_left_out_time)
  traced << "SKEL_MAYBE_UNUSED static const double skel_run_traced[SKEL_NUM_CUT_LOOPS + 1] = {";
  classes << "SKEL_MAYBE_UNUSED static const int skel_run_class[SKEL_NUM_CUT_LOOPS + 1] = {";
  iters << "static const double skel_loop_iters[SKEL_NUM_CUT_LOOPS + 1] = {";
  stream << "SKEL_MAYBE_UNUSED static const int skel_loop_stream[SKEL_NUM_CUT_LOOPS + 1] = {";
  std::vector<int> ring_base, ring_size, ring_pool;
  for (const Emitter* e : all) {
    for (const CutLoop& c : e->plan_.cuts) {
      factors << num(static_cast<double>(c.count) / static_cast<double>(c.iterations)) << ", ";
      iters << c.iterations << ", ";
      stream << e->at_.index << ", ";
      traced << "0, ";
      classes << "-1, ";
    }
    for (const Plan::KeptRun& k : e->plan_.kept_runs) {
      factors << exact(k.factor) << ", ";
      iters << "1, ";
      stream << e->at_.index << ", ";
      traced << num(k.traced_s) << ", ";
      classes << k.run_class << ", ";
    }
    for (size_t k = 0; k < e->plan_.shortened.size(); ++k) {
      factors << exact(e->plan_.shortened_by) << ", ";
      iters << "1, ";
      stream << e->at_.index << ", ";
      traced << "0, ";
      classes << "-1, ";
    }
    for (size_t g = 0; g < e->slots_.ring_size.size(); ++g) {
      ring_base.push_back(static_cast<int>(e->slots_.ring_base[g] + e->at_.slot_base));
      ring_size.push_back(static_cast<int>(e->slots_.ring_size[g]));
      ring_pool.push_back(g < e->slots_.pool.size() ? static_cast<int>(e->slots_.pool[g]) : 0);
    }
  }
  factors << "1};\n";
  iters << "1};\n";
  stream << "0};\n";
  traced << "0};\n";
  classes << "-1};\n";
  if (ring_base.empty()) ring_base.push_back(0), ring_size.push_back(1), ring_pool.push_back(0);
  std::ostringstream t;
  t << factors.str() << iters.str() << stream.str() << traced.str() << classes.str();
  t << ring_runs(ring_base, ring_size, ring_pool);
  auto quoted = [](const std::string& s) {
    std::string q = "\"";
    for (char ch : s) q += ch == '"' || ch == '\\' ? std::string("\\") + ch : std::string(1, ch);
    return q + "\"";
  };
  std::vector<uint32_t> ids;
  std::vector<std::string> sites, entries;  // each call site's text once; a call's entry names its own
  std::map<std::string, size_t> site_of;
  auto site = [&](const std::string& what) {
    auto [it, added] = site_of.emplace(what, sites.size());
    if (added) sites.push_back(quoted(what));
    return it->second;
  };
  std::vector<const Emitter*> by_call(all);  // the programs in the order of their calls' numbers
  std::sort(by_call.begin(), by_call.end(),
            [](const Emitter* a, const Emitter* b) { return a->at_.call_base < b->at_.call_base; });
  for (const Emitter* e : by_call)
    for (const CallRecord& c : e->calls_) {
      entries.push_back("{" + std::to_string(site(c.what)) + ", " + std::to_string(c.node) + ", " + num(c.traced_s) +
                        ", " + std::to_string(c.loops.size()) + ", " + std::to_string(ids.size()) + "}");
      ids.insert(ids.end(), c.loops.begin(), c.loops.end());
    }
  const size_t calls = entries.size();
  entries.push_back("{" + std::to_string(site("MPI_Finalize (the skeleton's end)")) + ", -1, 0, 0, 0}");
  t << "/* the calls, for the watchdog's message: the call site's text, node, 100 x the longest traced time (s),\n"
       " * loops around it and where their ids start in skel_call_loops[] */\n";
  write_table(t, "SKEL_MAYBE_UNUSED static const char* const skel_call_sites[]", sites, 2);
  write_table(t, "SKEL_MAYBE_UNUSED static const struct skel_call skel_calls[]", entries, 3);
  t << "#define SKEL_FINALIZE_CALL " << calls << "\n";
  if (ids.empty()) ids.push_back(0);
  write_table(t, "SKEL_MAYBE_UNUSED static const int skel_call_loops[]", texts(ids));
  t << "/* each rank's traced computation (s, every thread), by which skel_spread_over_cores() pins ranks that share cores */\n";
  write_table(t, "SKEL_MAYBE_UNUSED static const double skel_rank_load[SKEL_WORLD_SIZE]", traced_computation(all));
  return t.str();
}

// Each rank's computation over the whole run as traced, as the skeleton
// computes it (computation_ns: its thread CPU time where measured, else the
// gaps' wall time, less the tracer's floor), every thread's, in seconds.
std::vector<std::string> Emitter::traced_computation(const std::vector<const Emitter*>& all) {
  std::vector<double> ns(all.front()->P_, 0.0);
  for (const Emitter* e : all)
    for (const FoldedNode& node : e->p_.nodes)
      for (uint32_t r = 0; r < ns.size() && r < node.gap.size(); ++r)
        ns[r] += e->computation_ns(node, r) * static_cast<double>(node.gap[r].n);
  std::vector<std::string> out;
  for (double x : ns) out.push_back(num(x * 1e-9));
  return out;
}

// compute()'s line for node n; where its computation is shortened
// (Plan::shortened) 1/K of it, between its timer's begin and end (lines
// indented `in`), standing for all of it.
std::string Emitter::node_computation(uint32_t n, const std::string& w, const std::vector<uint32_t>& ranks,
                                      const std::string& loop_var, const Firsts* first, const std::string& in) {
  const int64_t timer = shortened_timer(n);
  if (timer < 0) return compute(n, w, ranks, loop_var, first);
  const std::string c = compute(n, w, ranks, loop_var, first, plan_.shortened_by);
  if (c.empty()) return c;
  return "/* the computation before it, made once: 1/" + num(plan_.shortened_by) +
         " of it, timed, stands for all of it */\n" + in + "skel_loop_begin(" + loop_id(timer) + ");\n" + in + c +
         "\n" + in + "skel_loop_end(" + loop_id(timer) + ");";
}

void Emitter::emit_event(uint32_t n, int depth, const std::string& loop_var, double stride, const Firsts* first) {
  const MergedEvent& e = event(n);
  std::vector<std::string> lines = call(n, stride);
  std::string w = work(n, e.ranks);
  std::string g = guard(n);
  std::string in = indent(depth);
  body_ << in << "/* n" << n << ": " << where(n);
  if (!g.empty()) body_ << ", ranks " << rank_list(e.ranks);
  body_ << " */\n";
  if (!g.empty()) {
    body_ << in << "if (" << g << ") {\n";
    in = indent(depth + 1);
  }
  std::string c = node_computation(n, w, e.ranks, loop_var, first, in);
  if (!c.empty()) body_ << in << c << "\n";
  body_ << in << enter(n) << "\n";
  for (const std::string& l : lines)
    if (!l.empty()) body_ << in << l << "\n";
  if (counted_.count(n)) body_ << in << "n" << n << "_i += " << exact(stride) << ";\n";
  if (in_polling_loop_)
    body_ << in << "if (skel_flag) break; /* a message is in: where the application stopped polling */\n";
  if (!g.empty()) body_ << indent(depth) << "}\n";
}

// Loop n polls for a message (only_polls: never cut) and found none in the
// trace: every call of its body, none a loop, an MPI_Iprobe(MPI_ANY_SOURCE)
// that found nothing (no source) without per-instance tables. The
// application left it when a message came, not after a count: the skeleton
// leaves it there too (the break emit_event writes), or after its traced
// count, whichever is first; then come the application's next calls, its
// successful probe and the receive. (tests/apps/step_farm.c, 2 MPICH ranks:
// replaying the traced count of polls made the master the slowest, K = 1
// 0.609 s for 0.537 s traced and 0.519 s untraced.)
bool Emitter::polls_until_found(uint32_t n) const {
  if (!only_polls(p_, n)) return false;
  for (uint32_t c : p_.nodes[n].body) {
    if (p_.nodes[c].is_loop() || counted_.count(c)) return false;
    if (!probe_found_nothing(p_, c) || identity(c).peer_class != PeerClass::kAnySource) return false;
  }
  return true;
}

void Emitter::emit_loop(uint32_t n, int depth, const std::string& loop_var, double stride, const Firsts* first) {
  const FoldedNode& node = p_.nodes[n];
  std::vector<uint32_t> all(P_);
  std::iota(all.begin(), all.end(), 0u);
  std::string in = indent(depth);
  std::string w = work(n, all);
  std::string var = "i" + std::to_string(n);
  int32_t c = plan_.cut_of[n];
  uint64_t iters = plan_.iterations(p_, n);
  body_ << in << "/* loop n" << n << ": " << node.count << " iterations";
  if (c >= 0) body_ << " in the application, cut to " << iters << " (cut loop " << c << ")";
  body_ << " */\n";
  std::string comp = node_computation(n, w, ranks_in(n), loop_var, first, in);
  if (!comp.empty()) body_ << in << comp << "\n";
  if (counted_.count(n)) body_ << in << "n" << n << "_i += " << exact(stride) << ";\n";
  if (c >= 0) body_ << in << "skel_loop_begin(" << loop_id(c) << ");\n";
  body_ << in << "for (long " << var << " = 0; " << var << " < " << iters << "; ++" << var << ") {\n";
  body_ << in << "  skel_iter[" << open_loops_.size() << "] = " << var << ";\n";
  double inner = c >= 0 ? stride * static_cast<double>(node.count) / static_cast<double>(iters) : stride;
  open_loops_.push_back({var, iters, node.count, n});
  loop_depth_ = std::max(loop_depth_, open_loops_.size());
  in_polling_loop_ = polls_until_found(n);  // no loop inside such a loop: nothing to restore after
  emit_items(node.body, depth + 1, var, inner);
  in_polling_loop_ = false;
  open_loops_.pop_back();
  if (c >= 0 && iters >= 2) {  // the end of each period (of value_period iterations): skel_estimate.h
    const uint64_t period = plan_.cuts[static_cast<size_t>(c)].period;
    body_ << in << "  ";
    if (period > 1) body_ << "if (" << var << " % " << period << " == " << period - 1 << ") ";
    body_ << "skel_loop_period(" << loop_id(c) << ");\n";
  }
  body_ << in << "}\n";
  if (c >= 0) body_ << in << "skel_loop_end(" << loop_id(c) << ");\n";
}

void Emitter::emit_items(const std::vector<uint32_t>& items, int depth, const std::string& loop_var, double stride) {
  std::vector<Firsts> fs = loop_var.empty() ? std::vector<Firsts>() : firsts(items);
  const bool top = &items == &p_.top;
  size_t run = 0;  // the next of the plan's kept runs (top level)
  for (size_t i = 0; i < items.size();) {
    if (top) thread_points_at(i, false);
    if (top && run_boundary(i, run)) continue;
    if (top && plan_.farm_at(i) >= 0) {  // the items before the farm, the farm, the items after it
      const Farm& f = plan_.farms[static_cast<size_t>(plan_.farm_at(i))];
      auto emit = [&](uint32_t node) {
        if (p_.nodes[node].is_loop()) emit_loop(node, depth, loop_var, stride, nullptr);
        else emit_event(node, depth, loop_var, stride, nullptr);
      };
      for (uint32_t node : f.before_nodes) emit(node);
      emit_farm(static_cast<size_t>(plan_.farm_at(i)));
      for (uint32_t node : f.after_nodes) emit(node);
      i = f.end;
      continue;
    }
    uint32_t n = items[i];
    const Firsts* first = fs.empty() ? nullptr : &fs[i];
    if (p_.nodes[n].is_loop()) {
      emit_loop(n, depth, loop_var, stride, first);
      ++i;
      continue;
    }
    // a run of point-to-point calls that each rank makes in its own order (the plan's steps)
    auto step = plan_.steps.find(n);
    if (step != plan_.steps.end()) {
      const size_t j = i + step->second.nodes.size();
      std::vector<const Firsts*> run_first;
      for (size_t k = i; k < j; ++k) run_first.push_back(fs.empty() ? nullptr : &fs[k]);
      emit_reordered(step->second.nodes, step->second.order, depth, loop_var, stride, run_first);
      ++out_.reordered_steps;
      i = j;
      continue;
    }
    emit_event(n, depth, loop_var, stride, first);
    ++i;
  }
  if (top) {
    size_t end = items.size();
    run_boundary(end, run);
    thread_points_at(end, true);
  }
}

// Before top-level item i (i = top.size(): the end): the first thread waits
// for the threads done by then, and starts those that start there. A step
// reordered per rank is passed over whole: what falls inside it happens
// after it.
void Emitter::thread_points_at(size_t i, bool) {
  auto joins = [&] {
    for (ThreadPoint& t : thread_points_)
      if (t.fork_at == SIZE_MAX && t.join_at <= i && t.join_at != SIZE_MAX) {
        body_ << "  skel_join(" << t.index << ");\n";
        t.join_at = SIZE_MAX;
      }
  };
  joins();
  for (ThreadPoint& t : thread_points_)
    if (t.fork_at <= i && t.fork_at != SIZE_MAX) {
      body_ << "  skel_fork(" << t.index << ", skel_thread_" << t.index << ");\n";
      t.fork_at = SIZE_MAX;
    }
  joins();  // a thread that ran while the first made no call of its own
}

// At top-level index i: closes the kept run ending there, opens the one
// starting there, and steps over a left-out node (returns true: i moved).
bool Emitter::run_boundary(size_t& i, size_t& run) {
  const auto& runs = plan_.kept_runs;
  auto timer = [&] { return loop_id(static_cast<int64_t>(plan_.cuts.size() + run)); };  // after the cut loops
  if (run < runs.size() && runs[run].end == i) {
    body_ << "  skel_run_end(" << timer() << ");\n";
    ++run;
  }
  if (run < runs.size() && runs[run].first == i)
    body_ << "  /* run of top-level calls " << i << ".." << runs[run].end - 1 << ": stands for itself and "
          << runs[run].left_out << " top-level nodes left out (x" << num(runs[run].factor)
          << (runs[run].by == Plan::StandsBy::kCalls ? " its time: short steps, by their calls" : " its time")
          << ") */\n  skel_run_begin(" << timer() << ");\n";
  if (!plan_.leaves_out(i)) return false;
  ++i;
  return true;
}

// Each rank makes the run's calls in its own order (from safe_order): a
// switch over the nodes, driven by a per-rank order table.
void Emitter::emit_reordered(const std::vector<uint32_t>& run, const std::vector<std::vector<uint32_t>>& order,
                             int depth, const std::string& loop_var, double stride,
                             const std::vector<const Firsts*>& first) {
  std::string in = indent(depth);
  size_t width = 0;
  for (const auto& o : order) width = std::max(width, o.size());
  std::string name = "n" + std::to_string(run.front()) + "_order";
  tables_ << "/* per-rank order of the calls n" << run.front() << "..n" << run.back()
          << " that cannot deadlock (-1: done) */\n";
  tables_ << "static const int " << name << "[SKEL_WORLD_SIZE][" << width << "] = {";
  for (uint32_t r = 0; r < P_; ++r) {
    tables_ << "\n  {";
    for (size_t k = 0; k < width; ++k)
      tables_ << (k ? ", " : "") << (k < order[r].size() ? static_cast<int64_t>(order[r][k]) : -1);
    tables_ << "}" << (r + 1 < P_ ? "," : "");
  }
  tables_ << "\n};\n";
  std::string k = "k" + std::to_string(run.front());
  body_ << in << "/* calls n" << run.front() << "..n" << run.back()
        << ": each rank in an order that cannot deadlock, whatever the MPI buffers */\n";
  body_ << in << "for (int " << k << " = 0; " << k << " < " << width << " && " << name << "[skel_rank][" << k
        << "] >= 0; ++" << k << ") {\n";
  // labels relative to the first node: runs that differ only in their nodes' numbers read alike (outline.h)
  body_ << in << "  switch (" << name << "[skel_rank][" << k << "] - " << run.front() << ") {\n";
  for (size_t at = 0; at < run.size(); ++at) {
    uint32_t n = run[at];
    body_ << in << "  case " << static_cast<int64_t>(n) - static_cast<int64_t>(run.front()) << ": {\n";
    // participation is in the order table: no guard needed, but keep the compute per rank
    std::vector<std::string> lines = call(n, stride);
    std::string w = work(n, event(n).ranks);
    body_ << in << "    /* " << where(n) << " */\n";
    std::string c = compute(n, w, event(n).ranks, loop_var, first[at]);
    if (!c.empty()) body_ << in << "    " << c << "\n";
    body_ << in << "    " << enter(n) << "\n";
    for (const std::string& l : lines)
      if (!l.empty()) body_ << in << "    " << l << "\n";
    if (counted_.count(n)) body_ << in << "    n" << n << "_i += " << exact(stride) << ";\n";
    body_ << in << "    break;\n" << in << "  }\n";
  }
  body_ << in << "  }\n" << in << "}\n";
}

// ------------------------------------------------------------------ assembly

std::string Emitter::types_setup() {
  std::ostringstream s;
  if (std::count(type_used_.begin(), type_used_.end(), true))
    s << "static MPI_Datatype skel_type[" << m_.datatypes.size() << "];\n";
  if (user_op_) {
    s << "static MPI_Op skel_user_op;\n"
         "static void skel_user_op_fn(void* in, void* inout, int* len, MPI_Datatype* type)\n{\n"
         "  (void)in; (void)inout; (void)len; (void)type;\n}\n";
  }
  if (win_)
    s << "static MPI_Win skel_win = MPI_WIN_NULL;\nstatic int skel_win_rank;\n"
         "SKEL_MAYBE_UNUSED static void* skel_winbuf; /* the window: apart from the message buffers */\n"
         "SKEL_MAYBE_UNUSED static void* skel_win_memory; /* a window MPI allocated */\n";
  if (file_) s << "static MPI_File skel_file;\nstatic char skel_io_path[256];\n";
  s << "static void skel_types_setup(void)\n{\n";
  for (size_t d = 0; d < m_.datatypes.size(); ++d) {
    if (!type_used_[d]) continue;
    s << "  /* " << m_.datatypes[d].name << ": " << m_.datatypes[d].size << " bytes */\n";
    s << "  PMPI_Type_contiguous(" << m_.datatypes[d].size << ", MPI_BYTE, &skel_type[" << d << "]);\n";
    s << "  PMPI_Type_commit(&skel_type[" << d << "]);\n";
  }
  if (user_op_) s << "  PMPI_Op_create(skel_user_op_fn, 1, &skel_user_op);\n";
  if (file_) {
    s << "  {\n    int id = (int)getpid();\n    PMPI_Bcast(&id, 1, MPI_INT, 0, MPI_COMM_WORLD);\n"
         "    snprintf(skel_io_path, sizeof skel_io_path, \"skelgen-io-%d.tmp\", id);\n  }\n";
  }
  s << "}\n";
  return s.str();
}

std::string Emitter::header() const {
  const MergedRank& r0 = m_.ranks.at(0);
  std::ostringstream h;
  h << "/* Performance skeleton generated by skelgen " << SKELGEN_VERSION << " -- do not edit by hand.\n"
    << " *\n"
    << " * application: " << (r0.command_line.empty() ? r0.executable : r0.command_line) << "\n"
    << " * traced:      " << P_ << " ranks, " << r0.mpi_library << ", host " << r0.hostname;
  if (!opt_.generated_on.empty()) h << ", " << opt_.generated_on;
  // near the top: skelgen build reads it from the header comment to pick the MPI's compiler
  if (!opt_.mpi.empty()) h << "\n * skelgen-mpi: " << opt_.mpi;
  h << "\n * from:        " << opt_.trace_label << " (" << p_.merged_events << " merged calls, "
    << p_.length() << " in the folded program)\n"
    << " * scale:       K = " << opt_.scale << ": ";
  if (plan_.cuts.empty()) h << "no loop cut, every call runs as traced\n";
  else {
    h << plan_.cuts.size() << " loop(s) cut\n";
    for (size_t i = 0; i < plan_.cuts.size(); ++i)
      h << " *   cut loop " << i << " (n" << plan_.cuts[i].node << "): " << plan_.cuts[i].count << " -> "
        << plan_.cuts[i].iterations << " iterations, " << num(plan_.cuts[i].share * 100) << " % of the time\n";
  }
  if (!plan_.kept_runs.empty())
    h << " *   " << plan_.kept_runs.size() << " run(s) of top-level calls stand for the runs left out after them\n";
  h << " * traced time: " << num(out_.traced_s) << " s (MPI_Init to MPI_Finalize, slowest rank);"
    << " expected skeleton time " << num(out_.kept_s) << " s\n";
  for (const std::string& n : notes_) h << " * note: " << n << "\n";
  h << " *\n * Build: skelgen build THIS.c [--mpi mpich|openmpi|simgrid]; run with " << P_ << " ranks.\n"
    << " * Prints: SKELGEN_RESULT measured_s=<s> predicted_s=<s> scale=<K>\n */\n";
  return h.str();
}

// The kernel's rate per rank, in units per ns; throws for a trace without
// (or with another version of) the calibration.
std::vector<double> kernel_rates(const MergedTrace& m, const std::string& label) {
  std::vector<double> rate(m.world_size, 0);
  for (uint32_t r = 0; r < m.world_size; ++r) {
    const MergedRank& mr = m.ranks.at(r);
    if (mr.kernel_units_per_s <= 0)
      throw TraceError(label + ": rank " + std::to_string(r) +
                       " has no compute-kernel calibration (traced with SKELTRACE_CALIBRATE_MS=0?); trace again");
    if (mr.kernel_name != SKEL_KERNEL_NAME || mr.kernel_version != SKEL_KERNEL_VERSION)
      throw TraceError(label + ": calibrated with kernel " + mr.kernel_name + " v" + std::to_string(mr.kernel_version) +
                       ", this skelgen has " + SKEL_KERNEL_NAME + " v" + std::to_string(SKEL_KERNEL_VERSION) +
                       "; trace again");
    rate[r] = mr.kernel_units_per_s * 1e-9;
  }
  return rate;
}

// MPI time and computation per rank (mean over ranks), without MPI_Init's and
// MPI_Finalize's own: what skelgen place weighs node scores by.
void Emitter::summarise(const NodeTimes& times) {
  double comm = 0, comp = 0, flops = 0;
  for (size_t i = 0; i < p_.nodes.size(); ++i) {
    const FoldedNode& n = p_.nodes[i];
    const uint32_t f = n.is_loop() ? 0 : func(static_cast<uint32_t>(i));
    const bool edge = f == kFunc_MPI_Init || f == kFunc_MPI_Init_thread || f == kFunc_MPI_Finalize;
    for (uint32_t r = 0; r < P_; ++r) {
      if (!edge && r < n.dur.size()) comm += n.dur[r].mean * static_cast<double>(n.dur[r].n);
      const uint64_t values = r < n.work.size() && n.work[r].n > 0 ? n.work[r].n : r < n.gap.size() ? n.gap[r].n : 0;
      if (!edge || f == kFunc_MPI_Finalize) comp += computation_ns(n, r) * static_cast<double>(values);
    }
  }
  for (uint32_t r = 0; r < P_; ++r) flops += rate_[r] * 1e9 * SKEL_KERNEL_FLOPS_PER_UNIT;
  out_.comm_s = comm / P_ * 1e-9;
  out_.comp_s = comp / P_ * 1e-9;
  out_.kernel_flops_per_s = flops / P_;
  const std::vector<double> kept = planned_rank_times(p_, times, plan_);
  out_.traced_s = times.program * 1e-9;
  out_.kept_s = (checked_ns_ > 0 ? checked_ns_ : kept.empty() ? 0 : *std::max_element(kept.begin(), kept.end())) * 1e-9;
  out_.cut = plan_.cuts;
  out_.top_nodes = p_.top.size();
  for (size_t i = 0; i < p_.top.size(); ++i) out_.top_left_out += plan_.leaves_out(i) ? 1 : 0;
  out_.standing_runs = plan_.kept_runs.size();
  for (const Plan::Shortened& sh : plan_.shortened) {
    const std::string call = p_.nodes[sh.node].is_loop() ? "a loop" : func_name(func(sh.node));
    out_.shortened.push_back(
        {sh.node, call, sh.longest_ns * 1e-9, times.program > 0 ? sh.longest_ns / times.program : 0});
  }
}

void Emitter::start_emitting(const NodeTimes& times) {
  (void)skel_kernel_run;  // only the kernel's name and version are needed here
  rate_ = kernel_rates(m_, opt_.trace_label);
  type_used_.assign(m_.datatypes.size(), false);
  if (plan_.any_tag_receives)
    note("MPI_Init_thread: calls of several threads may pair differently on each rank in one order; receives "
         "take any tag");
  if (at_.index == 0) summarise(times);
}

void Emitter::emit_thread(const NodeTimes& times) {
  start_emitting(times);
  emit_items(p_.top, 1, "", 1.0);
}

std::string Emitter::thread_function() const {
  std::ostringstream f;
  f << "/* thread " << p_.thread << " of the application: its own calls, started and waited for by the first */\n"
    << "static void* skel_thread_" << at_.index << "(void* skel_arg)\n{\n"
    << tables_.str() << "  (void)skel_arg;\n  skel_thread_setup(" << at_.index << ");\n"
    << body_.str() << "  return NULL;\n}\n";
  return f.str();
}

void Emitter::run(const NodeTimes& times, const std::vector<const Emitter*>& threads,
                  const std::function<void()>& summarised) {
  start_emitting(times);
  if (summarised) summarised();
  if (opt_.progress) opt_.progress("writing the program");
  emit_items(p_.top, 1, "", 1.0);
  if (!saw_init_) note("the trace has no MPI_Init: the skeleton calls it first");
  std::string prologue = saw_init_ ? "" : "  MPI_Init(argc, argv);\n  skel_setup();\n";
  // every rank ends in MPI_Finalize, also one whose trace had none (it returns early where it had one)
  std::string epilogue = "  if (!skel_finalized) skel_finalize();\n";
  if (!saw_finalize_) note("the trace has no MPI_Finalize (the run ended early): the skeleton ends after the last call");
  std::vector<const Emitter*> all{this};
  std::string thread_functions;
  size_t slots = slots_.num_slots, rings = slots_.ring_size.size();
  size_t cut_loops = plan_.timers();
  for (const Emitter* t : threads) {
    all.push_back(t);
    thread_functions += t->thread_function();
    for (size_t d = 0; d < type_used_.size(); ++d) type_used_[d] = type_used_[d] || t->type_used_[d];
    user_op_ |= t->user_op_;
    longest_list_ = std::max(longest_list_, t->longest_list_);
    win_ |= t->win_;
    file_ |= t->file_;
    max_reqs_ = std::max(max_reqs_, t->max_reqs_);
    buf_bytes_ = std::max(buf_bytes_, t->buf_bytes_);
    bsend_bytes_ = std::max(bsend_bytes_, t->bsend_bytes_);
    loop_depth_ = std::max(loop_depth_, t->loop_depth_);
    notes_.insert(t->notes_.begin(), t->notes_.end());
    slots += t->slots_.num_slots;
    rings += t->slots_.ring_size.size();
    cut_loops += t->plan_.timers();
  }
  rings = std::max<size_t>(1, rings);
  slots = std::max<size_t>(1, slots);
  std::string types = types_setup();  // after the body: knows which types and ops it used
  out_.notes.assign(notes_.begin(), notes_.end());

  std::map<std::string, std::string> v;
  v["HEADER"] = header();
  v["NAME"] = opt_.name;
  {
    std::ostringstream meta;  // one line, key=value, parsed by skel::predict::read_skeleton_info
    meta << "ranks=" << P_ << " scale=" << opt_.scale << " traced_mpi=" << (opt_.mpi.empty() ? "unknown" : opt_.mpi)
         << " traced_s=" << num(out_.traced_s) << " comm_s=" << num(out_.comm_s) << " comp_s=" << num(out_.comp_s)
         << " kernel_flops_per_s=" << num(out_.kernel_flops_per_s);
    if (opt_.untraced_s > 0) meta << " untraced_s=" << num(opt_.untraced_s);
    v["META"] = meta.str();
  }
  v["WORLD_SIZE"] = std::to_string(P_);
  v["LIST_LEN"] = std::to_string(std::max<size_t>(P_, longest_list_));
  v["SCALE"] = std::to_string(opt_.scale);
  v["NUM_SLOTS"] = std::to_string(slots);
  v["NUM_RINGS"] = std::to_string(rings);
  v["NUM_COMMS"] = std::to_string(std::max<size_t>(2, m_.comms.size()));
  v["NUM_CUT_LOOPS"] = std::to_string(cut_loops);
  v["NUM_THREADS"] = std::to_string(all.size());
  v["THREADS"] = thread_functions;
  v["MAX_REQS"] = std::to_string(max_reqs_);
  v["BUF_BYTES"] = std::to_string(buf_bytes_ + 64);
  v["BSEND_BYTES"] = std::to_string(bsend_bytes_ > 0 ? bsend_bytes_ + 65536 : 0);
  v["KERNEL"] = template_text("skel_kernel.h");
  v["ESTIMATE"] = template_text("skel_estimate.h");
  v["TYPES"] = types;
  std::string tables = tables_.str(), body = body_.str(), shared;
  if (opt_.share_runs && threads.empty() && !plan_.kept_runs.empty()) {
    Outlined o = outline_kept_runs(body, tables, farm_tables_);
    body = std::move(o.body), tables = std::move(o.tables), shared = std::move(o.functions);
    out_.shared_runs = o.runs, out_.shared_blocks = o.blocks, out_.shared_functions = o.shared;
  }
  v["TABLES"] = tables + runtime_tables(all);
  v["SHARED"] = shared;
  v["WATCHDOG_S"] = num(opt_.watchdog_s);
  v["LOOP_DEPTH"] = std::to_string(std::max<size_t>(1, loop_depth_));
  v["RUNTIME"] = template_text("skel_runtime.h");
  v["NUM_FARMS"] = std::to_string(plan_.farms.size());
  v["FARMS"] = plan_.farms.empty() ? "" : template_text("skel_farm.h") + farm_tables_;
  v["BODY"] = prologue + body + epilogue;
  const size_t body_lines = static_cast<size_t>(std::count(v["BODY"].begin(), v["BODY"].end(), '\n'));
  v["LONG_BODY"] = body_lines > kLongBodyLines ? "1" : "0";  // the skeleton's comment says so
  out_.code = render(template_text("skeleton.c.in"), v);
}


// One thread's program (the first thread's, or another's), planned and checked.
struct Stream {
  const FoldedProgram* p = nullptr;
  NodeTimes times;
  Plan plan;
  std::set<std::string> notes;
  Completion done;
};

Stream plan_stream(const FoldedProgram& p, const GenerateOptions& opt, bool threaded) {
  Stream st;
  st.p = &p;
  st.times = measure_times(p);
  st.plan = make_plan(p, st.times, opt, st.notes);
  if (threaded) {  // each thread's calls in their own order: receives keep their tags
    st.plan.any_tag_receives = false;
    st.plan.inherits_comms = p.thread != 0;
  }
  if (threaded && opt.progress) opt.progress(p.thread ? "thread " + std::to_string(p.thread) + ":" : "first thread:");
  st.done = ensure_completion(p, st.plan, opt.progress);
  return st;
}

// Merged events a node stands for (a loop: its iterations' calls).
uint64_t merged_size(const FoldedProgram& p, uint32_t n) {
  const FoldedNode& node = p.nodes[n];
  if (!node.is_loop()) return 1;
  uint64_t body = 0;
  for (uint32_t c : node.body) body += merged_size(p, c);
  return body * node.count;
}

// Whether node n (a loop: any call in it) makes a communicator.
bool makes_communicators(const FoldedProgram& p, uint32_t n) {
  const FoldedNode& node = p.nodes[n];
  if (!node.is_loop())
    return p.symbols.events[static_cast<size_t>(node.symbol)].params[static_cast<size_t>(Param::new_comm)].kind !=
           ParamKind::kAbsent;
  return std::any_of(node.body.begin(), node.body.end(), [&](uint32_t c) { return makes_communicators(p, c); });
}

// Where the first thread starts and waits for thread t, as top-level items
// of its program: after the item holding merged event t.fork_after (before
// it, where that item is a loop that makes no communicator: the thread ran
// beside the loop's iterations, as an OpenMP team's threads do beside the
// first thread's share of each parallel region), never before MPI_Init;
// before the item that starts with t.join_before (after one that holds it
// inside: a loop, a step), and at the latest before MPI_Finalize. Where these
// cross, from MPI_Init to MPI_Finalize.
Emitter::ThreadPoint thread_point(const FoldedProgram& main, const FoldedProgram& t, uint32_t index) {
  std::vector<uint64_t> start{0};
  size_t init = 0, finalize = main.top.size();
  for (size_t i = 0; i < main.top.size(); ++i) {
    start.push_back(start.back() + merged_size(main, main.top[i]));
    const FoldedNode& n = main.nodes[main.top[i]];
    if (n.is_loop()) continue;
    const uint32_t f = main.symbols.identities[main.symbols.events[static_cast<size_t>(n.symbol)].identity].func;
    if (f == kFunc_MPI_Init || f == kFunc_MPI_Init_thread) init = i + 1;
    if (f == kFunc_MPI_Finalize && finalize == main.top.size()) finalize = i;
  }
  auto item_of = [&](int64_t x) {
    return static_cast<size_t>(std::upper_bound(start.begin(), start.end(), static_cast<uint64_t>(x)) - start.begin()) - 1;
  };
  size_t fork_at = 0;
  if (t.fork_after >= 0) {
    const size_t f = item_of(t.fork_after);
    const bool inside = start[f + 1] != static_cast<uint64_t>(t.fork_after) + 1;
    fork_at = inside && main.nodes[main.top[f]].is_loop() && !makes_communicators(main, main.top[f]) ? f : f + 1;
  }
  size_t join_at = finalize;
  if (t.join_before >= 0) {
    const size_t j = item_of(t.join_before);
    join_at = std::min(finalize, start[j] == static_cast<uint64_t>(t.join_before) ? j : j + 1);
  }
  fork_at = std::max(fork_at, init);
  if (join_at < fork_at) fork_at = init, join_at = finalize;
  return {index, fork_at, join_at};
}

// The other threads' cut loops; the traced and the expected time per rank:
// the first thread's (its wall-clock waits for the others taken out at
// merge) and the longest other thread's, which ran side by side.
void add_thread_summaries(const std::vector<Stream>& streams, Skeleton& s) {
  if (streams.size() < 2) return;
  const Stream& first = streams[0];
  std::vector<double> traced = first.times.rank_total, kept = planned_rank_times(*first.p, first.times, first.plan);
  std::vector<double> traced_more(traced.size(), 0), kept_more(traced.size(), 0);
  for (size_t k = 1; k < streams.size(); ++k) {
    const Stream& st = streams[k];
    for (CutLoop c : st.plan.cuts) {
      c.thread = st.p->thread;
      s.cut.push_back(c);
    }
    const std::vector<double> own = planned_rank_times(*st.p, st.times, st.plan);
    for (size_t r = 0; r < traced.size() && r < st.times.rank_total.size(); ++r) {
      traced_more[r] = std::max(traced_more[r], st.times.rank_total[r]);
      if (r < own.size()) kept_more[r] = std::max(kept_more[r], own[r]);
    }
  }
  double t = 0, e = 0;
  for (size_t r = 0; r < traced.size(); ++r) {
    t = std::max(t, traced[r] + traced_more[r]);
    if (r < kept.size()) e = std::max(e, kept[r] + kept_more[r]);
  }
  s.traced_s = t * 1e-9;
  s.kept_s = e * 1e-9;
  if (s.complete)
    s.completion += " (and so do the " + std::to_string(streams.size() - 1) + " other threads' programs, each on its own)";
}

// Where the program makes calls on communicators the tracer did not see
// created (made by a call it does not record: MPI_Comm_spawn,
// MPI_Comm_connect, ...), those run on MPI_COMM_WORLD with their ranks
// as traced, which may well be why the skeleton cannot complete: say so.
std::string unknown_comms_hint(const FoldedProgram& p) {
  std::set<std::string> funcs;
  auto look = [&](const FoldedProgram& q) {
    for (const Identity& id : q.symbols.identities)
      if (id.comm < 0 && id.comm != kNone && func_name(id.func)) funcs.insert(func_name(id.func));
  };
  look(p);
  for (const FoldedProgram& t : p.threads) look(t);
  if (funcs.empty()) return "";
  std::string list;
  for (const std::string& f : funcs) list += (list.empty() ? "" : ", ") + f;
  return " (the trace has calls on communicators the tracer did not see created, which the skeleton makes on "
         "MPI_COMM_WORLD: " + list + "; communicators made by calls it does not record, such as "
         "MPI_Comm_spawn (a spawned world's calls are in a trace of their own) or MPI_Comm_connect, are not "
         "reproduced)";
}

}  // namespace

namespace {

// The slowest rank's time of program p's skeleton as planned.
double planned_time(const FoldedProgram& p, const GenerateOptions& opt) {
  GenerateOptions quiet = opt;
  quiet.progress = nullptr;
  std::set<std::string> notes;
  const NodeTimes t = measure_times(p);
  const std::vector<double> kept = planned_rank_times(p, t, make_plan(p, t, quiet, notes));
  return kept.empty() ? 0 : *std::max_element(kept.begin(), kept.end());
}

// The program with its short top-level loops unrolled (unroll.h), where
// its skeleton is then planned at least 1 / kUnrollGain times shorter; else
// p. A loop's copies can make the skeleton longer: their inner loops each
// hold half the time, below the share a cut needs (miniAMR, 2 MPICH
// ranks: 0.76 s planned, 1.01 s unrolled).
constexpr double kUnrollGain = 0.9;
const FoldedProgram& shorter_unrolled(const FoldedProgram& p, const GenerateOptions& opt, FoldedProgram& store,
                                      std::string& note) {
  const FoldedProgram& u = unroll_short_top_loops(p, opt.scale, store, note);
  if (&u == &p) return p;
  if (planned_time(u, opt) < kUnrollGain * planned_time(p, opt)) return u;
  note.clear();
  return p;
}

}  // namespace

Skeleton generate(const FoldedProgram& folded, const GenerateOptions& opt) {
  if (folded.nodes.empty() || folded.top.empty()) throw TraceError(opt.trace_label + ": the program has no calls");
  kernel_rates(folded.symbols, opt.trace_label);  // refuse an uncalibrated trace before any work
  FoldedProgram unrolled;
  std::string unroll_note;
  const FoldedProgram& p = shorter_unrolled(folded, opt, unrolled, unroll_note);
  const bool threaded = !p.threads.empty();
  std::vector<Stream> streams;
  streams.push_back(plan_stream(p, opt, threaded));
  if (!unroll_note.empty()) streams[0].notes.insert(unroll_note);
  for (const FoldedProgram& t : p.threads) streams.push_back(plan_stream(t, opt, true));
  Skeleton s;
  s.complete = true;
  for (const Stream& st : streams) {
    const std::string who = st.p->thread ? "thread " + std::to_string(st.p->thread) + ": " : "";
    if (s.completion.empty() || (!st.done.complete && s.complete)) s.completion = who + st.done.verdict;
    s.complete = s.complete && st.done.complete;
    for (const std::string& r : st.done.repairs) s.repairs.push_back(who + r);
    if (!st.done.warning.empty() && s.completion_warning.empty()) s.completion_warning = who + st.done.warning;
  }
  if (!s.complete && threaded)
    s.completion += " (each thread's calls are checked with the same thread's of the other ranks: calls that pair "
                    "with another thread's are not replayed; docs/generate.md, \"Threads\")";
  if (!s.complete) s.completion += unknown_comms_hint(p);
  if (!s.complete && !opt.force)
    throw std::runtime_error("no skeleton written: it cannot be made to complete: " + s.completion);
  if (!s.complete) streams[0].notes.insert("written although it cannot complete (--force): " + s.completion);
  // the other threads' programs first (their calls are numbered first), each after the ones before in the tables
  StreamLayout layout;
  layout.total_rings = 0;
  for (const Stream& st : streams) layout.total_rings += st.plan.slots.ring_size.size();
  layout.total_rings = std::max<size_t>(1, layout.total_rings);
  std::deque<Skeleton> scratch;
  std::deque<Emitter> thread_emitters;
  std::vector<const Emitter*> threads;
  StreamLayout at = layout;
  for (size_t k = 0; k < streams.size(); ++k) {
    const Stream& st = streams[k];
    at.index = static_cast<uint32_t>(k);
    if (k > 0) {
      scratch.emplace_back();
      thread_emitters.emplace_back(*st.p, opt, st.plan, scratch.back(), at);
      for (const std::string& n : st.notes) thread_emitters.back().note(n);
      thread_emitters.back().emit_thread(st.times);
      at.call_base += thread_emitters.back().calls_written();
      threads.push_back(&thread_emitters.back());
    }
    at.loop_base += st.plan.timers();
    at.ring_base += st.plan.slots.ring_size.size();
    at.slot_base += st.plan.slots.num_slots;
  }
  StreamLayout first = layout;
  first.call_base = at.call_base;
  Emitter e(p, opt, streams[0].plan, s, first);
  for (const std::string& n : streams[0].notes) e.note(n);
  for (size_t k = 0; k < p.threads.size(); ++k)
    e.thread_points_.push_back(thread_point(p, p.threads[k], static_cast<uint32_t>(k + 1)));
  // the check times the skeleton as run where it ran it whole: one thread, no farm (a farm is checked as a barrier)
  if (!threaded && streams[0].plan.farms.empty() && streams[0].done.complete)
    e.checked_ns_ = streams[0].done.last.expected_ns;
  e.run(streams[0].times, threads, [&] { add_thread_summaries(streams, s); });
  return s;
}

}  // namespace skt::gen
