#include <zstd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "skel/codec.h"
#include "skel/file_io.h"
#include "skel/merged.h"
#include "skel/skel_funcs.h"
#include "skel/value_bounds.h"
#include "section_io.h"

namespace skt {

const char* param_name(Param p) {
  switch (p) {
#define SKT_PARAM_NAME(name) \
  case Param::name:          \
    return #name;
    SKT_MERGED_PARAMS(SKT_PARAM_NAME)
#undef SKT_PARAM_NAME
    default:
      return "?";
  }
}

const char* list_field_name(ListField f) {
  static const char* names[] = {"counts", "counts2", "dims", "periods", "reqrefs", "req_sources", "reqback", "pool"};
  return static_cast<size_t>(f) < kNumListFields ? names[static_cast<size_t>(f)] : "?";
}

MergedTrace MergedTrace::tables() const {
  MergedTrace t;
  t.world_size = world_size;
  t.run_id = run_id;
  t.lookahead = lookahead;
  t.source = source;
  for (const MergedRank& r : ranks) {
    MergedRank c;
    static_cast<MergedRankInfo&>(c) = r;  // without the per-event times
    t.ranks.push_back(std::move(c));
  }
  t.modules = modules;
  t.callsites = callsites;
  t.datatypes = datatypes;
  t.ops = ops;
  t.comms = comms;
  t.identities = identities;
  return t;
}

void CommSymbol::index_members() {
  rank_in_group.assign(group_of.size(), -1);
  for (size_t g = 0; g < groups.size(); ++g)
    for (size_t k = 0; k < groups[g].size(); ++k) {
      const int64_t w = groups[g][k];
      const bool own_group = w >= 0 && static_cast<size_t>(w) < group_of.size() &&
                             group_of[static_cast<size_t>(w)] == static_cast<int32_t>(g);
      if (own_group && rank_in_group[static_cast<size_t>(w)] < 0)
        rank_in_group[static_cast<size_t>(w)] = static_cast<int32_t>(k);
    }
}

int64_t CommSymbol::comm_rank(uint32_t r) const {
  if (rank_in_group.size() == group_of.size()) return r < rank_in_group.size() ? rank_in_group[r] : -1;
  const std::vector<int64_t>& m = members(r);
  auto it = std::find(m.begin(), m.end(), static_cast<int64_t>(r));
  return it == m.end() ? -1 : it - m.begin();
}

int64_t MergedTrace::position(const MergedEvent& e, uint32_t r) {
  auto it = std::lower_bound(e.ranks.begin(), e.ranks.end(), r);
  return it != e.ranks.end() && *it == r ? it - e.ranks.begin() : -1;
}

namespace {

// The comm rank at displacement `disp` along dimension `dim` from comm rank
// `me` of Cartesian communicator c (row-major: the last dimension varies
// fastest; `me` taken modulo the grid) in `nb`; false off a dimension that is
// not periodic. No coordinate vector: it is asked for every rank of an event.
bool cart_neighbour(const CommSymbol& c, int64_t me, size_t dim, int64_t disp, int64_t& nb) {
  int64_t stride = 1;  // comm ranks between neighbours along dim
  for (size_t i = dim + 1; i < c.dims.size(); ++i) stride *= c.dims[i];
  int64_t grid = stride;
  for (size_t i = 0; i <= dim; ++i) grid *= c.dims[i];
  const int64_t extent = c.dims[dim], coord = me / stride % extent;
  int64_t x = coord + disp;
  if (x < 0 || x >= extent) {
    if (!c.periods[dim]) return false;
    x = (x % extent + extent) % extent;
  }
  nb = me % grid + (x - coord) * stride;
  return true;
}

}  // namespace

int64_t MergedTrace::value(const MergedEvent& e, Param p, uint32_t r) const {
  return value_of(e, p, r, [&] { return position(e, r); });
}

int64_t MergedTrace::value_at(const MergedEvent& e, Param p, size_t k) const {
  return value_of(e, p, e.ranks.at(k), [k] { return static_cast<int64_t>(k); });
}

template <typename Position>
int64_t MergedTrace::value_of(const MergedEvent& e, Param p, uint32_t r, Position position_of_r) const {
  const ParamDesc& d = e.params[static_cast<size_t>(p)];
  const int64_t P = world_size;
  switch (d.kind) {
    case ParamKind::kAbsent: return kNone;
    case ParamKind::kConst: return d.a;
    case ParamKind::kRel: return ((r + d.a) % P + P) % P;
    case ParamKind::kRelOpen: {
      int64_t v = r + d.a;
      return v >= 0 && v < P ? v : kProcNull;
    }
    case ParamKind::kLinear: return d.a + d.b * r;
    case ParamKind::kXor: return static_cast<int64_t>(r) ^ d.a;
    case ParamKind::kCart: {
      const CommSymbol& c = comms.at(static_cast<size_t>(identities.at(e.identity).comm));
      const std::vector<int64_t>& m = c.members(r);
      const int64_t found = c.comm_rank(r);
      const int64_t me = found < 0 ? static_cast<int64_t>(m.size()) : found;
      int64_t nb = 0;
      if (!cart_neighbour(c, me, static_cast<size_t>(d.a), d.b, nb)) return kProcNull;
      return m.at(static_cast<size_t>(nb));
    }
    case ParamKind::kTable: return e.tables.at(static_cast<size_t>(d.a + position_of_r()));
  }
  return kNone;
}

const std::vector<int64_t>& MergedTrace::list(const MergedEvent& e, ListField f, uint32_t r) const {
  return list_of(e, f, [&] { return position(e, r); });
}

const std::vector<int64_t>& MergedTrace::list_at(const MergedEvent& e, ListField f, size_t k) const {
  return list_of(e, f, [k] { return static_cast<int64_t>(k); });
}

template <typename Position>
const std::vector<int64_t>& MergedTrace::list_of(const MergedEvent& e, ListField f, Position position_of_r) {
  static const std::vector<int64_t> empty;
  const ListDesc* d = e.find_list(f);
  if (!d) return empty;
  if (d->same) return d->lists.at(0);
  return d->lists.at(static_cast<size_t>(position_of_r()));
}

std::string MergedTrace::describe(const MergedEvent& e, Param p) const {
  const ParamDesc& d = e.params[static_cast<size_t>(p)];
  auto sign = [](int64_t v) { return (v < 0 ? " - " : " + ") + std::to_string(v < 0 ? -v : v); };
  switch (d.kind) {
    case ParamKind::kAbsent: return "";
    case ParamKind::kConst: return d.a == kProcNull ? "null" : std::to_string(d.a);
    case ParamKind::kRel: return "(rank" + sign(d.a) + ") mod " + std::to_string(world_size);
    case ParamKind::kRelOpen: return "rank" + sign(d.a) + " or null";
    case ParamKind::kLinear: return std::to_string(d.a) + sign(d.b) + "*rank";
    case ParamKind::kXor: return "rank xor " + std::to_string(d.a);
    case ParamKind::kCart: return "cart(dim " + std::to_string(d.a) + ", " + (d.b < 0 ? "" : "+") + std::to_string(d.b) + ")";
    case ParamKind::kTable: {
      std::string s = "[";
      for (size_t i = 0; i < e.ranks.size(); ++i) {
        int64_t v = e.tables[static_cast<size_t>(d.a) + i];
        s += (i ? "," : "") + (v == kProcNull ? std::string("null") : v == kNone ? std::string("-") : std::to_string(v));
      }
      return s + "]";
    }
  }
  return "?";
}

std::string MergedTrace::callsite_name(uint32_t cs) const {
  return cs < callsites.size() ? format_callsite(callsites[cs], modules) : "?";
}

// ---------------------------------------------------------------- writing

namespace {

using sections::Out;

// Participating ranks as runs: count, then (first, length) pairs.
// One parameter's description; a table's values follow in rank order.
void put_param(sections::Out& o, const MergedEvent& e, const ParamDesc& d) {
  o.u(static_cast<uint64_t>(d.kind));
  if (d.kind == ParamKind::kConst || d.kind == ParamKind::kRel || d.kind == ParamKind::kRelOpen ||
      d.kind == ParamKind::kXor)
    o.s(d.a);
  if (d.kind == ParamKind::kLinear || d.kind == ParamKind::kCart) {
    o.s(d.a);
    o.s(d.b);
  }
  if (d.kind == ParamKind::kTable)
    for (size_t k = 0; k < e.ranks.size(); ++k) o.s(e.tables[static_cast<size_t>(d.a) + k]);
}

ParamDesc get_param(sections::In& in, MergedEvent& e) {
  ParamDesc d;
  uint64_t kind = in.u();
  if (kind > static_cast<uint64_t>(ParamKind::kXor)) in.bad("parameter kind");
  d.kind = static_cast<ParamKind>(kind);
  if (d.kind == ParamKind::kConst || d.kind == ParamKind::kRel || d.kind == ParamKind::kRelOpen ||
      d.kind == ParamKind::kXor)
    d.a = in.s();
  if (d.kind == ParamKind::kLinear || d.kind == ParamKind::kCart) {
    d.a = in.s();
    d.b = in.s();
  }
  if (d.kind == ParamKind::kTable) {
    d.a = static_cast<int64_t>(e.tables.size());
    for (size_t k = 0; k < e.ranks.size(); ++k) e.tables.push_back(in.s("parameter table"));
  }
  return d;
}

void put_ranks(Out& o, const std::vector<uint32_t>& ranks) {
  std::vector<std::pair<uint32_t, uint32_t>> runs;
  for (uint32_t r : ranks) {
    if (!runs.empty() && runs.back().first + runs.back().second == r) ++runs.back().second;
    else runs.push_back({r, 1});
  }
  o.u(runs.size());
  for (auto& [first, len] : runs) {
    o.u(first);
    o.u(len);
  }
}

// A per-rank column of one value per event (work, blocked) as section `id`:
// P, then per rank its count and values; nothing when no rank has one.
void put_rank_column(Out& body, MergedSection id, const MergedTrace& m, std::vector<int64_t> MergedRank::*column) {
  bool any = false;
  for (const MergedRank& r : m.ranks) any |= !(r.*column).empty();
  if (!any) return;
  Out w;
  w.u(m.ranks.size());
  for (const MergedRank& r : m.ranks) w.list(r.*column);
  body.section(id, w);
}

}  // namespace

std::string encode_merged_body(const MergedTrace& m, bool with_times) {
  Out body;
  {
    Out o;
    o.u(m.world_size);
    o.u(m.run_id);
    o.u(m.lookahead);
    o.str(m.source);
    body.section(MergedSection::kRun, o);
  }
  {
    Out o;
    o.u(m.ranks.size());
    for (const MergedRank& r : m.ranks) {
      o.str(r.hostname);
      o.str(r.mpi_library);
      o.str(r.executable);
      o.str(r.command_line);
      o.str(r.kernel_name);
      o.u(r.kernel_version);
      o.f64(r.kernel_units_per_s);
      o.u(static_cast<uint64_t>(r.end));
      o.u(r.events);
    }
    body.section(MergedSection::kRanks, o);
  }
  {
    Out o;
    o.u(m.modules.size());
    for (const std::string& s : m.modules) o.str(s);
    body.section(MergedSection::kModules, o);
  }
  {
    Out o;
    o.u(m.callsites.size());
    for (const auto& frames : m.callsites) {
      o.u(frames.size());
      for (const Frame& f : frames) {
        o.u(f.module);
        o.u(f.offset);
      }
    }
    body.section(MergedSection::kCallsites, o);
  }
  {
    Out o;
    o.u(m.datatypes.size());
    for (const DatatypeInfo& d : m.datatypes) {
      o.s(d.size);
      o.str(d.name);
    }
    body.section(MergedSection::kDatatypes, o);
  }
  {
    Out o;
    o.u(m.ops.size());
    for (const std::string& s : m.ops) o.str(s);
    body.section(MergedSection::kOps, o);
  }
  {
    Out o;
    o.u(m.comms.size());
    for (const CommSymbol& c : m.comms) {
      o.u(c.created_by);
      o.s(c.callsite);
      o.s(c.parent);
      o.u(c.slot);
      o.list(c.dims);
      o.list(c.periods);
      o.u(c.groups.size());
      for (const auto& g : c.groups) o.list(g);
      o.u(c.group_of.size());
      for (int32_t g : c.group_of) o.s(g);
    }
    body.section(MergedSection::kComms, o);
  }
  {
    Out o;
    o.u(m.identities.size());
    for (const Identity& id : m.identities) {
      o.u(id.func);
      o.u(id.callsite);
      o.s(id.comm);
      o.s(id.dtype);
      o.s(id.dtype2);
      o.s(id.op);
      o.s(id.root);
      o.u(static_cast<uint8_t>(id.peer_class));
    }
    body.section(MergedSection::kIdentities, o);
  }
  {
    Out o;
    o.u(m.events.size());
    o.u(kNumParams);
    for (const MergedEvent& e : m.events) {
      o.u(e.identity);
      put_ranks(o, e.ranks);
      for (size_t q = 0; q < kNumParams; ++q) put_param(o, e, e.params[q]);
      o.u(e.lists.size());
      for (const ListDesc& l : e.lists) {
        o.u(static_cast<uint64_t>(l.field));
        o.u(l.same ? 1 : 0);
        for (const auto& v : l.lists) o.list(v);
      }
    }
    body.section(MergedSection::kEvents, o);
  }
  {
    // the tracer's fixed cost in every gap, per rank
    Out o;
    o.u(m.ranks.size());
    for (const MergedRank& r : m.ranks) {
      o.f64(r.gap_floor_ns);
      o.f64(r.cpu_gap_floor_ns);
    }
    body.section(MergedSection::kGapFloors, o);
  }
  if (with_times) {
    Out o;
    o.u(m.ranks.size());
    for (const MergedRank& r : m.ranks) {
      o.u(r.gaps.size());
      for (size_t i = 0; i < r.gaps.size(); ++i) {
        o.s(r.gaps[i]);
        o.u(static_cast<uint64_t>(r.durations[i]));
      }
    }
    body.section(MergedSection::kTimes, o);
    put_rank_column(body, MergedSection::kWork, m, &MergedRank::works);
    put_rank_column(body, MergedSection::kBlocked, m, &MergedRank::blocked);
  }
  for (const MergedTrace& t : m.threads)
    sections::put_thread(body, MergedSection::kThread, t.thread, t.fork_after, t.join_before,
                         encode_merged_body(t, with_times));
  return body.b;
}

void write_compressed_file(const std::string& path, const char* magic, uint16_t major, uint16_t minor,
                           const std::string& body) {
  std::string out(magic, 8);
  codec::put_u16(out, major);
  codec::put_u16(out, minor);
  codec::put_u32(out, 0);
  size_t bound = ZSTD_compressBound(body.size());
  size_t head = out.size();
  out.resize(head + bound);
  ZSTD_CCtx* cctx = ZSTD_createCCtx();
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_compressionLevel, 3);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_checksumFlag, 1);
  ZSTD_CCtx_setParameter(cctx, ZSTD_c_contentSizeFlag, 1);
  size_t n = ZSTD_compress2(cctx, &out[head], bound, body.data(), body.size());
  ZSTD_freeCCtx(cctx);
  throw_if_zstd_out_of_memory(n);
  if (ZSTD_isError(n)) throw TraceError(path + ": compression failed: " + ZSTD_getErrorName(n));
  out.resize(head + n);
  std::ofstream f(path, std::ios::binary | std::ios::trunc);
  if (!f) throw TraceError(path + ": cannot create: " + std::strerror(errno));
  f.write(out.data(), static_cast<std::streamsize>(out.size()));
  f.close();
  if (!f) throw TraceError(path + ": write failed: " + std::strerror(errno));
}

void write_merged(const std::string& path, const MergedTrace& m) {
  write_compressed_file(path, kMergedMagic, kMergedVersionMajor, kMergedVersionMinor, encode_merged_body(m, true));
}

// ---------------------------------------------------------------- reading

namespace {

using sections::In;

}  // namespace

bool is_merged_file(const std::string& path) { return has_magic(path, kMergedMagic); }

std::string read_compressed_file(const std::string& path, const char* magic, uint16_t major_supported,
                                 const char* what) {
  // Magic and version first, from the first 16 bytes only.
  InFile f(path);
  char head[16];
  size_t got = f.read(head, sizeof head);
  if (got < 8 || std::memcmp(head, magic, 8) != 0) {
    if (got >= 8 && std::memcmp(head, kFileMagic, 8) == 0)
      throw TraceError(path + ": this is a per-rank trace file, not a " + what + " (run skelgen merge on its directory)");
    if (got >= 8 && std::memcmp(head, kMergedMagic, 8) == 0)
      throw TraceError(path + ": this is a merged trace, not a " + what + " (run skelgen compress on it)");
    throw TraceError(path + ": not a skelgen " + what + " (bad magic number)");
  }
  if (got < sizeof head) f.fail(std::string("truncated ") + what, got);
  codec::Cursor c(reinterpret_cast<const uint8_t*>(head) + 8, 8);
  uint16_t major = 0, minor = 0;
  c.le(major);
  c.le(minor);
  const std::string version = std::to_string(major) + "." + std::to_string(minor);
  const std::string reads = " (this reader reads " + std::to_string(major_supported) + ".x)";
  if (major < major_supported)
    throw TraceError(path + ": " + what + " version " + version + " is too old" + reads + "; make it again with " +
                     (std::string(what) == "merged trace" ? "skelgen merge" : "skelgen compress"));
  if (major != major_supported) throw TraceError(path + ": " + what + " version " + version + " is not supported" + reads);
  // The rest is one zstd frame: its size is what is left of the file, its
  // content size (from the frame header) is bounded by that and a ratio
  // before anything is allocated for it.
  const uint64_t packed = f.left();
  if (packed > kMaxCompressedBytes) f.fail(std::string(what) + " too large", 16);
  std::string frame(static_cast<size_t>(packed), '\0');
  if (f.read(&frame[0], frame.size()) != frame.size()) f.fail(std::string("truncated ") + what, f.offset());
  unsigned long long size = ZSTD_getFrameContentSize(frame.data(), frame.size());
  if (size == ZSTD_CONTENTSIZE_ERROR || size == ZSTD_CONTENTSIZE_UNKNOWN)
    f.fail(std::string("corrupt or truncated ") + what + " (no valid zstd frame)", 16);
  if (size > plausible_content_bytes(packed))
    f.fail(std::string("corrupt ") + what + " (claims " + std::to_string(size) + " bytes from " +
               std::to_string(packed) + " compressed)",
           16);
  std::string body(static_cast<size_t>(size), '\0');
  size_t n = ZSTD_decompress(&body[0], body.size(), frame.data(), frame.size());
  throw_if_zstd_out_of_memory(n);
  if (ZSTD_isError(n) || n != size)
    f.fail(std::string("corrupt or truncated ") + what + " (" +
               (ZSTD_isError(n) ? ZSTD_getErrorName(n) : "wrong size") + ")",
           16);
  return body;
}

MergedTrace read_merged(const std::string& path) {
  std::string body = read_compressed_file(path, kMergedMagic, kMergedVersionMajor, "merged trace");
  MergedTrace m = decode_merged_body(reinterpret_cast<const uint8_t*>(body.data()), body.size(), path, true);
  if (std::string why = bounds::merged_problem(m, true); !why.empty())
    throw TraceError(path + ": corrupt merged trace (" + why + ")");
  return m;
}

namespace {

MergedTrace decode_body(const uint8_t* data, size_t size, const std::string& path, bool with_times, bool nested);

// A thread's stream (MergedSection::kThread): its number, where it ran
// among the first thread's events, its merged body (without threads).
MergedTrace decode_thread(In& in, const uint8_t* d, uint64_t len, const std::string& path, bool with_times) {
  const sections::ThreadSection at = sections::get_thread(in, d, len);
  MergedTrace t = decode_body(at.body, at.size, path, with_times, true);
  t.thread = at.number;
  t.fork_after = at.fork_after;
  t.join_before = at.join_before;
  return t;
}

}  // namespace

MergedTrace decode_merged_body(const uint8_t* data, size_t size, const std::string& path, bool with_times) {
  MergedTrace m = decode_body(data, size, path, with_times, false);
  for (const MergedTrace& t : m.threads)
    if (t.world_size != m.world_size || t.fork_after >= static_cast<int64_t>(m.events.size()) ||
        t.join_before >= static_cast<int64_t>(m.events.size()))
      throw TraceError(path + ": corrupt merged trace (thread " + std::to_string(t.thread) +
                       "'s stream does not fit the first thread's)");
  return m;
}

namespace {

MergedTrace decode_body(const uint8_t* data, size_t size, const std::string& path, bool with_times, bool nested) {
  MergedTrace m;
  In top(data, size, path, "merged trace");
  bool have_run = false, have_events = false;
  sections::for_each_section(top, [&](uint64_t section, In& in, const uint8_t* d, uint64_t len) {
    switch (static_cast<MergedSection>(section)) {
      case MergedSection::kRun:
        m.world_size = static_cast<uint32_t>(in.u());
        m.run_id = in.u();
        m.lookahead = static_cast<uint32_t>(in.u());
        m.source = in.str();
        have_run = true;
        break;
      case MergedSection::kRanks:
        m.ranks.resize(in.count("ranks"));
        for (MergedRank& r : m.ranks) {
          r.hostname = in.str();
          r.mpi_library = in.str();
          r.executable = in.str();
          r.command_line = in.str();
          r.kernel_name = in.str();
          r.kernel_version = static_cast<uint32_t>(in.u());
          r.kernel_units_per_s = in.f64();
          r.end = static_cast<TraceEnd>(in.u());
          r.events = in.u();
        }
        break;
      case MergedSection::kModules:
        m.modules.resize(in.count("modules"));
        for (auto& s : m.modules) s = in.str();
        break;
      case MergedSection::kCallsites:
        m.callsites.resize(in.count("call sites"));
        for (auto& frames : m.callsites) {
          frames.resize(in.count("frames"));
          for (Frame& fr : frames) {
            fr.module = static_cast<uint32_t>(in.u());
            fr.offset = in.u();
          }
        }
        break;
      case MergedSection::kDatatypes:
        m.datatypes.resize(in.count("datatypes"));
        for (size_t i = 0; i < m.datatypes.size(); ++i) {
          m.datatypes[i].id = static_cast<uint32_t>(i);
          m.datatypes[i].size = in.s();
          m.datatypes[i].name = in.str();
        }
        break;
      case MergedSection::kOps:
        m.ops.resize(in.count("ops"));
        for (auto& s : m.ops) s = in.str();
        break;
      case MergedSection::kComms:
        m.comms.resize(in.count("communicators"));
        for (CommSymbol& c : m.comms) {
          c.created_by = static_cast<uint32_t>(in.u());
          c.callsite = in.s();
          c.parent = in.s();
          c.slot = static_cast<uint32_t>(in.u());
          c.dims = in.list();
          c.periods = in.list();
          c.groups.resize(in.count("groups"));
          for (auto& g : c.groups) g = in.list();
          c.group_of.resize(in.count("group index"));
          for (int32_t& g : c.group_of) {
            int64_t v = in.s();
            if (v < -1 || v >= static_cast<int64_t>(c.groups.size())) in.bad("group index");
            g = static_cast<int32_t>(v);
          }
          c.index_members();
        }
        break;
      case MergedSection::kIdentities:
        m.identities.resize(in.count("identities"));
        for (Identity& id : m.identities) {
          id.func = static_cast<uint32_t>(in.u());
          id.callsite = static_cast<uint32_t>(in.u());
          id.comm = in.s();
          id.dtype = in.s();
          id.dtype2 = in.s();
          id.op = in.s();
          id.root = in.s();
          {
            const uint64_t pc = in.u();
            if (pc > static_cast<uint64_t>(PeerClass::kAnySource)) in.bad("peer class");
            id.peer_class = static_cast<PeerClass>(pc);
          }
        }
        break;
      case MergedSection::kEvents: {
        m.events.resize(in.count("events"));
        const uint64_t params = in.u("parameters");  // a newer minor version may hold more: read past them
        if (params < kNumParams || params > 64) in.bad("parameters");
        for (MergedEvent& e : m.events) {
          e.identity = static_cast<uint32_t>(in.u());
          if (e.identity >= m.identities.size()) in.bad("identity index");
          uint64_t runs = in.count("ranks");
          for (uint64_t k = 0; k < runs; ++k) {
            uint64_t first = in.u(), len = in.u();
            if (first + len > m.world_size) in.bad("rank out of range");
            for (uint64_t r = first; r < first + len; ++r) e.ranks.push_back(static_cast<uint32_t>(r));
          }
          for (uint64_t q = 0; q < params; ++q) {
            ParamDesc d = get_param(in, e);
            if (q < kNumParams) e.params[q] = d;
          }
          e.lists.resize(in.count("lists"));
          for (ListDesc& l : e.lists) {
            uint64_t field = in.u();
            if (field >= kNumListFields) in.bad("list field");
            l.field = static_cast<ListField>(field);
            l.same = in.u() == 1;
            l.lists.resize(l.same ? 1 : e.ranks.size());
            for (auto& v : l.lists) v = in.list();
          }
        }
        have_events = true;
        break;
      }
      case MergedSection::kTimes: {
        uint64_t n = in.count("time columns");
        if (n != m.ranks.size()) in.bad("time columns");
        for (MergedRank& r : m.ranks) {
          uint64_t k = in.count("times");
          r.gaps.resize(k);
          r.durations.resize(k);
          for (uint64_t i = 0; i < k; ++i) {
            r.gaps[i] = in.s();
            r.durations[i] = static_cast<int64_t>(in.u());
          }
        }
        break;
      }
      case MergedSection::kGapFloors: {
        if (in.count("gap floor ranks") != m.ranks.size()) in.bad("gap floor ranks");
        for (MergedRank& r : m.ranks) {
          r.gap_floor_ns = in.f64();
          r.cpu_gap_floor_ns = in.f64();
          if (!(r.gap_floor_ns >= 0 && r.gap_floor_ns < 1e9 && r.cpu_gap_floor_ns >= 0 && r.cpu_gap_floor_ns < 1e9))
            in.bad("gap floor");
        }
        break;
      }
      case MergedSection::kWork: {
        if (in.count("work columns") != m.ranks.size()) in.bad("work columns");
        for (MergedRank& r : m.ranks) {
          r.works.resize(in.count("work"));
          for (int64_t& v : r.works) v = in.s();
        }
        break;
      }
      case MergedSection::kBlocked: {
        if (in.count("blocked columns") != m.ranks.size()) in.bad("blocked columns");
        for (MergedRank& r : m.ranks) {
          r.blocked.resize(in.count("blocked"));
          for (int64_t& v : r.blocked) {
            v = in.s();
            if (v < 0) in.bad("blocked time");
          }
        }
        break;
      }
      case MergedSection::kThread:
        if (nested) in.bad("a thread's stream inside a thread's stream");
        m.threads.push_back(decode_thread(in, d, len, path, with_times));
        break;
      default:
        break;  // a section of a newer minor version
    }
  });
  if (!have_run || !have_events || m.ranks.size() != m.world_size)
    throw TraceError(path + ": corrupt merged trace (sections missing)");
  if (!with_times) return m;
  // Every rank's time column must match the events it takes part in.
  std::vector<uint64_t> seen(m.world_size, 0);
  for (const MergedEvent& e : m.events)
    for (uint32_t r : e.ranks) ++seen[r];
  for (uint32_t r = 0; r < m.world_size; ++r)
    if (seen[r] != m.ranks[r].gaps.size() || (!m.ranks[r].works.empty() && m.ranks[r].works.size() != seen[r]) ||
        (!m.ranks[r].blocked.empty() && m.ranks[r].blocked.size() != seen[r]))
      throw TraceError(path + ": corrupt merged trace (rank " + std::to_string(r) + " takes part in " +
                       std::to_string(seen[r]) + " events but has " + std::to_string(m.ranks[r].gaps.size()) +
                       " times)");
  return m;
}

}  // namespace

}  // namespace skt
