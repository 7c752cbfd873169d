#include "outline.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <vector>

namespace skt::gen {

namespace {

// ------------------------------------------------------------ reading C

enum class Tok { kComment, kIdent, kNumber, kString, kPunct };

struct Token {
  Tok kind;
  size_t at, len;
};

bool ident_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool ident_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)) != 0; }

// The tokens of s[from, to): comments, identifiers, numbers (C's
// preprocessing numbers), string and character literals, and one
// character of punctuation each.
std::vector<Token> lex(const std::string& s, size_t from, size_t to) {
  std::vector<Token> out;
  size_t i = from;
  auto until = [&](size_t j) { return std::min(j, to); };
  while (i < to) {
    const char c = s[i];
    size_t j = i + 1;
    Tok kind = Tok::kPunct;
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
      continue;
    }
    if (c == '/' && i + 1 < to && s[i + 1] == '*') {
      const size_t e = s.find("*/", i + 2);
      j = e == std::string::npos ? to : until(e + 2), kind = Tok::kComment;
    } else if (c == '/' && i + 1 < to && s[i + 1] == '/') {
      j = until(s.find('\n', i)), kind = Tok::kComment;
    } else if (ident_start(c)) {
      while (j < to && ident_char(s[j])) ++j;
      kind = Tok::kIdent;
    } else if (digit(c) || (c == '.' && i + 1 < to && digit(s[i + 1]))) {
      while (j < to && (ident_char(s[j]) || s[j] == '.' ||
                        ((s[j] == '+' || s[j] == '-') && std::strchr("eEpP", s[j - 1]))))
        ++j;
      kind = Tok::kNumber;
    } else if (c == '"' || c == '\'') {
      while (j < to && s[j] != c) j += s[j] == '\\' ? 2 : 1;
      j = until(j + 1), kind = Tok::kString;
    }
    out.push_back({kind, i, j - i});
    i = j;
  }
  return out;
}

std::string text(const std::string& s, const Token& t) { return s.substr(t.at, t.len); }

// A node's table, as the emitter names them: n<id>_<what>.
bool node_table_name(const std::string& w) {
  size_t i = 1;
  if (w.size() < 3 || w[0] != 'n' || !digit(w[1])) return false;
  while (i < w.size() && digit(w[i])) ++i;
  return i + 1 < w.size() && w[i] == '_';
}

enum class Number { kInt, kFloat, kOther };

// A number written without suffix: a decimal or hexadecimal integer, or a
// decimal floating constant (a double).
Number number_kind(const std::string& w) {
  if (w.size() > 2 && w[0] == '0' && (w[1] == 'x' || w[1] == 'X'))
    return std::all_of(w.begin() + 2, w.end(), [](char c) { return std::isxdigit(static_cast<unsigned char>(c)); })
               ? Number::kInt
               : Number::kOther;
  if (std::all_of(w.begin(), w.end(), digit)) return Number::kInt;
  char* end = nullptr;
  std::strtod(w.c_str(), &end);
  return end == w.c_str() + w.size() ? Number::kFloat : Number::kOther;
}

// ------------------------------------------------------------ the per-node tables

// One table of the tables' text: `[SKEL_MAYBE_UNUSED] static [const] T
// n<id>_<what>[dims] [= init];`.
struct Decl {
  size_t begin = 0, end = 0;  // its text, from its comment line (if any) to its line's end
  std::string base;           // T, with const, without static
  std::string dims;           // "[SKEL_WORLD_SIZE][8]", or empty
  std::string init;           // the initializer on one line, or empty
  bool constant = false;      // const, an array, with an initializer: it can move into a row
  size_t elements = 0;        // of its initializer, at its top level
  std::string type() const { return base + " @" + dims; }
};

// Where a declaration at [begin, end) of s begins with the comment on the
// line just before it, and ends with its line.
void widen(const std::string& s, size_t& begin, size_t& end) {
  size_t b = begin;
  while (b > 0 && (s[b - 1] == ' ' || s[b - 1] == '\t')) --b;
  if (b >= 3 && s[b - 1] == '\n' && s[b - 2] == '/' && s[b - 3] == '*') {
    const size_t c = s.rfind("/*", b - 3);
    if (c != std::string::npos && (c == 0 || s[c - 1] == '\n') && s.find("*/", c) == b - 3) b = c;
  }
  begin = b;
  const size_t nl = s.find('\n', end);
  const std::string rest = s.substr(end, (nl == std::string::npos ? s.size() : nl) - end);
  if (rest.find_first_not_of(" \t") == std::string::npos ||
      (rest.find("/*") != std::string::npos && rest.find("*/") != std::string::npos &&
       rest.find_first_not_of(" \t") == rest.find("/*")))
    end = nl == std::string::npos ? s.size() : nl + 1;
}

// Tokens t[from, to) of s on one line: a space after a comma and between
// two words, none elsewhere.
std::string joined_text(const std::string& s, const std::vector<Token>& t, size_t from, size_t to) {
  std::string out;
  bool word_before = false;
  for (size_t k = from; k < to; ++k) {
    if (t[k].kind == Tok::kComment) continue;
    const std::string w = text(s, t[k]);
    const bool word = t[k].kind != Tok::kPunct;
    if ((word && word_before) || (!out.empty() && out.back() == ',')) out += ' ';
    out += w;
    word_before = word;
  }
  return out;
}

// A declaration's tokens t[from, semi): the table it declares, if it is one
// of the forms above.
bool read_decl(const std::string& s, const std::vector<Token>& t, size_t from, size_t semi, std::string& name,
               Decl& d) {
  size_t stop = semi, eq = semi;  // the first '[' or '=' at depth 0, the '='
  int depth = 0;
  for (size_t k = from; k < semi; ++k) {
    const std::string w = text(s, t[k]);
    if (t[k].kind != Tok::kPunct) continue;
    if (depth == 0 && (w == "," || w == "(")) return false;  // several names; a function
    if (depth == 0 && w == "[" && stop == semi) stop = k;
    if (depth == 0 && w == "=") {
      eq = k;
      if (stop == semi) stop = k;
      break;
    }
    depth += (w == "[" || w == "{") - (w == "]" || w == "}");
  }
  if (stop == from || t[stop - 1].kind != Tok::kIdent || !node_table_name(text(s, t[stop - 1]))) return false;
  name = text(s, t[stop - 1]);
  for (size_t k = from; k + 1 < stop; ++k) {
    const std::string w = text(s, t[k]);
    if (t[k].kind == Tok::kComment || w == "static" || w == "SKEL_MAYBE_UNUSED") continue;
    d.base += (d.base.empty() ? "" : " ") + w;
  }
  d.dims = joined_text(s, t, stop, eq);
  if (eq < semi) d.init = joined_text(s, t, eq + 1, semi);
  d.constant = (" " + d.base + " ").find(" const ") != std::string::npos && !d.dims.empty() && !d.init.empty();
  bool any = false;  // the initializer's elements at its top level: its commas there, and one
  for (size_t k = eq + 1, depth = 0; k < semi; ++k) {
    const std::string w = text(s, t[k]);
    if (w == "{" && ++depth == 2) any = true;
    if (w == "}") --depth;
    if (w == "," && depth == 1) ++d.elements;
    if (t[k].kind != Tok::kPunct && depth >= 1) any = true;
  }
  d.elements = any ? d.elements + 1 : 0;
  d.begin = t[from].at;
  d.end = t[semi].at + 1;
  widen(s, d.begin, d.end);
  return true;
}

std::map<std::string, Decl> read_declarations(const std::string& tables) {
  std::map<std::string, Decl> out;
  const std::vector<Token> t = lex(tables, 0, tables.size());
  size_t from = 0;
  int depth = 0;
  for (size_t k = 0; k < t.size(); ++k) {
    if (t[k].kind == Tok::kComment && k == from) {
      ++from;
      continue;
    }
    if (t[k].kind != Tok::kPunct) continue;
    const char c = tables[t[k].at];
    depth += (c == '{' || c == '(') - (c == '}' || c == ')');
    if (c != ';' || depth != 0) continue;
    std::string name;
    Decl d;
    if (read_decl(tables, t, from, k, name, d)) out[name] = d;
    from = k + 1;
  }
  return out;
}

// How often each identifier is named in s.
void count_names(const std::string& s, std::map<std::string, size_t>& n) {
  for (const Token& t : lex(s, 0, s.size()))
    if (t.kind == Tok::kIdent) ++n[text(s, t)];
}

// ------------------------------------------------------------ the kept runs

enum class Hole { kNumber, kTable, kLocal };

// A kept run's code, [begin, end) of the body, read as a shape with holes.
struct Run {
  size_t begin = 0, end = 0;
  std::vector<Token> tokens;
  std::string key;                               // the shape: equal keys, the same code but for the holes
  std::vector<std::pair<size_t, Hole>> holes;    // token index, kind
  bool shareable = true;
};

// The words that keep a run where it is: the program's own locals, leaving it.
bool leaves_or_names_locals(const std::string& w) {
  return w == "argc" || w == "argv" || w == "return" || w == "goto" || w == "skel_arg";
}

void read_shape(const std::string& body, const std::map<std::string, Decl>& decls, Run& run) {
  run.tokens = lex(body, run.begin, run.end);
  std::map<std::string, size_t> locals;  // declared in the run, in order
  std::string prev;
  for (size_t k = 0; k < run.tokens.size(); ++k) {
    const Token& t = run.tokens[k];
    const std::string w = text(body, t);
    if (t.kind == Tok::kComment) continue;
    std::string part = w;
    if (t.kind == Tok::kNumber && prev != "case" && number_kind(w) != Number::kOther) {
      part = number_kind(w) == Number::kInt ? "#i" : "#f";
      run.holes.push_back({k, Hole::kNumber});
    } else if (t.kind == Tok::kIdent && (prev == "int" || prev == "long") && w.size() > 1 &&
               (w[0] == 'i' || w[0] == 'k') && std::all_of(w.begin() + 1, w.end(), digit)) {
      part = "#l" + std::to_string(locals.emplace(w, locals.size()).first->second);
      run.holes.push_back({k, Hole::kLocal});
    } else if (t.kind == Tok::kIdent && locals.count(w)) {
      part = "#l" + std::to_string(locals.at(w));
      run.holes.push_back({k, Hole::kLocal});
    } else if (t.kind == Tok::kIdent && node_table_name(w) && decls.count(w)) {
      part = "#t" + decls.at(w).type();
      run.holes.push_back({k, Hole::kTable});
    } else if (leaves_or_names_locals(w) || w == "#") {
      run.shareable = false;
    }
    run.key += part;
    run.key += '\x1f';
    prev = w;
  }
}

// The kept runs of the body: what lies between a top-level
// `  skel_run_begin(L);` line and its `  skel_run_end(L);` line.
std::vector<Run> kept_runs(const std::string& body) {
  std::vector<Run> runs;
  const std::string begin = "  skel_run_begin(", end_of = "\n  skel_run_end(";
  for (size_t at = body.find(begin); at != std::string::npos; at = body.find(begin, at + 1)) {
    if (at > 0 && body[at - 1] != '\n') continue;  // not at a line's start
    const size_t close = body.find(");\n", at);
    if (close == std::string::npos) break;
    const std::string l = body.substr(at + begin.size(), close - at - begin.size());
    const size_t stop = body.find(end_of + l + ");\n", close);
    if (stop == std::string::npos) continue;
    Run r;
    r.begin = close + 3;
    r.end = stop + 1;
    if (r.end > r.begin) runs.push_back(r);
    at = stop;
  }
  return runs;
}

// ------------------------------------------------------------ writing a shared run

struct Column {
  Hole kind = Hole::kNumber;
  std::vector<std::string> words;  // per run: the number, or the table's name
  std::string type;                // its type in the row: what its declarator declares
  std::string member;              // its declarator, "@" for its name
  std::string use;                 // what the function's code names instead, "@" for its name
  std::vector<std::string> values;  // per run
};

std::string with_name(std::string s, const std::string& name) { return s.replace(s.find('@'), 1, name); }

// The holes of the runs that differ from run to run, each a column; holes
// of the same words in every run share one. column_at: the first run's
// token -> its column.
std::vector<Column> columns(const std::string& body, const std::vector<const Run*>& runs,
                            std::map<size_t, size_t>& column_at) {
  std::vector<Column> cols;
  std::map<std::vector<std::string>, size_t> seen;
  for (size_t h = 0; h < runs[0]->holes.size(); ++h) {
    Column c;
    c.kind = runs[0]->holes[h].second;
    for (const Run* r : runs) c.words.push_back(text(body, r->tokens[r->holes[h].first]));
    if (c.kind == Hole::kLocal ||
        std::all_of(c.words.begin(), c.words.end(), [&](const std::string& w) { return w == c.words[0]; }))
      continue;
    const auto [it, added] = seen.emplace(c.words, cols.size());
    if (added) cols.push_back(c);
    column_at[runs[0]->holes[h].first] = it->second;
  }
  return cols;
}

void number_column(Column& col) {
  bool small = true;
  for (const std::string& w : col.words) {
    const long long v = std::strtoll(w.c_str(), nullptr, 0);
    small = small && v >= std::numeric_limits<int>::min() && v <= std::numeric_limits<int>::max();
  }
  const bool integer = number_kind(col.words[0]) == Number::kInt;
  col.type = integer ? (small ? "int" : "long long") : "double";
  col.member = "@";
  col.use = "row->@";
  col.values = col.words;
}

// Tables' columns: a table moves into the row where it is a constant that
// only its run names, and only in this column; the others are named by
// their address.
void table_columns(const std::string& body, const std::vector<const Run*>& runs, std::vector<Column>& cols,
                   const std::map<std::string, Decl>& decls, const std::map<std::string, size_t>& named,
                   std::set<std::string>& moved) {
  std::map<std::string, std::set<size_t>> in_columns;
  for (size_t c = 0; c < cols.size(); ++c)
    for (const std::string& w : cols[c].words) in_columns[w].insert(c);
  for (size_t c = 0; c < cols.size(); ++c) {
    Column& col = cols[c];
    if (col.kind != Hole::kTable) continue;
    bool move = true;
    for (size_t i = 0; i < runs.size(); ++i) {
      const std::string& w = col.words[i];
      size_t in_run = 0;
      for (const Token& t : runs[i]->tokens) in_run += t.kind == Tok::kIdent && text(body, t) == w;
      move = move && decls.at(w).constant && named.at(w) == in_run + 1 && in_columns[w].size() == 1;
    }
    const Decl& d = decls.at(col.words[0]);
    std::string dims = d.dims;
    if (move && dims.compare(0, 2, "[]") == 0) {  // of unknown length: a row's member has the longest one's
      size_t longest = 1;
      for (const std::string& w : col.words) longest = std::max(longest, decls.at(w).elements);
      dims = "[" + std::to_string(longest) + "]" + dims.substr(2);
    }
    col.type = d.base;
    col.member = move ? "@" + dims : "(*@)" + dims;
    col.use = move ? "row->@" : "(*row->@)";
    for (const std::string& w : col.words) {
      col.values.push_back(move ? decls.at(w).init : "&" + w);
      if (move) moved.insert(w);
    }
  }
}

// A row wraps to lines of at most about this many characters.
constexpr size_t kRowWidth = 110;
// A shared function longer than this compiles at -O0, as a program body
// of as many lines does (skeleton.c.in: GCC's time at -O2 grows faster
// than a function's length).
constexpr size_t kLongFunctionLines = 1000;

size_t lines(const std::string& s, size_t b, size_t e) {
  return static_cast<size_t>(
      std::count(s.begin() + static_cast<std::ptrdiff_t>(b), s.begin() + static_cast<std::ptrdiff_t>(e), '\n'));
}

// The rows' values, a row each (wrapped), the columns in the order of the row type's members.
std::string rows(const std::vector<Column>& cols, const std::vector<size_t>& order, size_t n) {
  std::ostringstream f;
  for (size_t i = 0; i < n; ++i) {
    std::string line = "  {";
    for (size_t k = 0; k < order.size(); ++k) {
      const std::string v = cols[order[k]].values[i] + (k + 1 < order.size() ? "," : "},");
      if (line.size() + v.size() > kRowWidth) f << line << "\n", line = "   ";
      line += " " + v;
    }
    f << line << "\n";
  }
  return f.str();
}

// The row type: its members by type, those of one type in one declaration
// (wrapped); order: the columns in that order, that of the rows' values.
std::string row_type(const std::vector<Column>& cols, const std::string& name, std::vector<size_t>& order) {
  std::ostringstream f;
  order.resize(cols.size());
  for (size_t c = 0; c < cols.size(); ++c) order[c] = c;
  std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) { return cols[x].type < cols[y].type; });
  f << "struct " << name << " {\n";
  for (size_t k = 0; k < order.size();) {
    std::string line = "  " + cols[order[k]].type;
    for (const std::string& type = cols[order[k]].type; k < order.size() && cols[order[k]].type == type; ++k) {
      const std::string d = with_name(cols[order[k]].member, "c" + std::to_string(order[k]));
      const bool last = k + 1 == order.size() || cols[order[k + 1]].type != type;
      if (line.size() + d.size() > kRowWidth) f << line << "\n", line = "   ";
      line += " " + d + (last ? ";" : ",");
    }
    f << line << "\n";
  }
  f << "};\n";
  return f.str();
}

// The function, row type and rows of a group of runs alike; each run's call in calls.
std::string shared_function(const std::string& body, const std::vector<const Run*>& runs, const std::string& what,
                            size_t index,
                            const std::map<std::string, Decl>& decls, const std::map<std::string, size_t>& named,
                            std::set<std::string>& moved, std::vector<std::string>& calls) {
  const std::string name = "skel_shared" + std::to_string(index);
  std::map<size_t, size_t> column_at;
  std::vector<Column> cols = columns(body, runs, column_at);
  for (Column& c : cols)
    if (c.kind == Hole::kNumber) number_column(c);
  table_columns(body, runs, cols, decls, named, moved);
  std::ostringstream f;
  f << "/* " << runs.size() << " " << what << " written alike (docs/generate.md, \"Kept runs written once\"): one "
    << "function, a row each; its comments are those of the first */\n";
  if (!cols.empty()) {
    std::vector<size_t> order;
    f << row_type(cols, name, order) << "static const struct " << name << " " << name << "_rows[" << runs.size()
      << "] = {\n" << rows(cols, order, runs.size()) << "};\n";
  }
  const Run& first = *runs[0];
  if (lines(body, first.begin, first.end) > kLongFunctionLines)  // as the program's own long body (skeleton.c.in)
    f << "#if defined(__GNUC__) && !defined(__clang__)\n__attribute__((optimize(\"O0\")))\n#endif\n";
  f << "static void " << name << "(" << (cols.empty() ? "void" : "const struct " + name + "* row") << ")\n{\n";
  size_t at = first.begin;
  for (const auto& [token, c] : column_at) {
    const Token& t = first.tokens[token];
    f << body.substr(at, t.at - at) << with_name(cols[c].use, "c" + std::to_string(c));
    at = t.at + t.len;
  }
  f << body.substr(at, first.end - at) << "}\n";
  for (size_t i = 0; i < runs.size(); ++i)
    calls.push_back("  " + name + (cols.empty() ? "();\n" : "(&" + name + "_rows[" + std::to_string(i) + "]);\n"));
  return f.str();
}

std::string without(const std::string& tables, const std::map<std::string, Decl>& decls,
                    const std::set<std::string>& moved) {
  std::vector<std::pair<size_t, size_t>> cut;
  for (const std::string& n : moved) cut.push_back({decls.at(n).begin, decls.at(n).end});
  std::sort(cut.begin(), cut.end());
  std::string out;
  size_t at = 0;
  for (const auto& [b, e] : cut) {
    if (b < at) continue;
    out += tables.substr(at, b - at);
    at = e;
  }
  return out + tables.substr(at);
}

}  // namespace

namespace {

// The program's top-level compound statements (a loop, a reordered step, a
// guarded block): a line at the top level's indentation that opens one
// ("for (", "switch (", "if (", "while (", ending in "{"), to the line of
// its closing brace, where nothing follows that brace on its line (no
// "} else {").
bool opens_block(const std::string& line) {
  const size_t last = line.find_last_not_of(" \t\n");
  if (line.size() < 4 || line.compare(0, 2, "  ") != 0 || line[2] == ' ' || last == std::string::npos ||
      line[last] != '{')
    return false;
  for (const char* opener : {"for (", "switch (", "if (", "while ("})
    if (line.compare(2, std::strlen(opener), opener) == 0) return true;
  return false;
}

std::vector<Run> top_level_blocks(const std::string& body) {
  std::vector<Run> blocks;
  // lexed once (lexed again from each block's start to the end, HPCC's 93,000 lines took 31 s)
  const std::vector<Token> tokens = lex(body, 0, body.size());
  size_t next = 0;  // the first token at or after `at`
  for (size_t at = 0; at < body.size();) {
    const size_t nl = body.find('\n', at);
    const size_t line_end = nl == std::string::npos ? body.size() : nl + 1;
    const std::string line = body.substr(at, line_end - at);
    if (!opens_block(line)) {
      at = line_end;
      continue;
    }
    int depth = 0;
    size_t close = std::string::npos;
    while (next < tokens.size() && tokens[next].at < at) ++next;
    for (size_t k = next; k < tokens.size(); ++k) {
      const Token& t = tokens[k];
      if (t.kind != Tok::kPunct) continue;
      depth += (body[t.at] == '{') - (body[t.at] == '}');
      if (body[t.at] == '}' && depth == 0) {
        close = t.at;
        break;
      }
    }
    const size_t close_nl = close == std::string::npos ? std::string::npos : body.find('\n', close);
    if (close_nl == std::string::npos || body.find_first_not_of(" \t", close + 1) != close_nl) {
      at = line_end;
      continue;
    }
    Run b;
    b.begin = at, b.end = close_nl + 1;
    blocks.push_back(b);
    at = b.end;
  }
  return blocks;
}

// One pass: the segments of `in.body` alike, two or more, where that makes
// the program shorter, written as functions numbered on from in.shared.
// Returns how many segments became calls.
size_t share_alike(std::vector<Run> segments, const std::string& what, const std::string& elsewhere, Outlined& in) {
  if (segments.size() < 2) return 0;
  const std::string& body = in.body;
  const std::string& tables = in.tables;
  const std::map<std::string, Decl> decls = read_declarations(tables);
  std::map<std::string, size_t> named;
  for (const std::string* s : std::vector<const std::string*>{&body, &tables, &elsewhere, &in.functions})
    count_names(*s, named);
  std::map<std::string, std::vector<const Run*>> alike;
  for (Run& r : segments) {
    read_shape(body, decls, r);
    if (r.shareable) alike[r.key].push_back(&r);
  }
  std::map<size_t, std::string> call_at;  // segment's begin -> its call
  std::set<std::string> moved;
  std::string functions;
  for (const auto& [key, group] : alike) {
    if (group.size() < 2) continue;
    std::vector<std::string> calls;
    std::set<std::string> its_moved;
    const std::string f = shared_function(body, group, what, in.shared, decls, named, its_moved, calls);
    // only where it makes the skeleton shorter: segments whose every table and number differ take as many
    // lines in rows as written out
    size_t before = 0;
    for (const Run* r : group) before += lines(body, r->begin, r->end);
    for (const std::string& n : its_moved) before += lines(tables, decls.at(n).begin, decls.at(n).end);
    if (lines(f, 0, f.size()) + group.size() >= before) continue;
    functions += f;
    ++in.shared;
    moved.insert(its_moved.begin(), its_moved.end());
    for (size_t i = 0; i < group.size(); ++i) call_at[group[i]->begin] = calls[i];
  }
  if (call_at.empty()) return 0;
  std::string out;
  size_t at = 0;
  for (const Run& r : segments) {
    const auto c = call_at.find(r.begin);
    if (c == call_at.end()) continue;
    out += body.substr(at, r.begin - at) + c->second;
    at = r.end;
  }
  in.body = out + body.substr(at);
  in.tables = without(tables, decls, moved);
  in.functions += functions;
  return call_at.size();
}

}  // namespace

Outlined outline_kept_runs(const std::string& body, const std::string& tables, const std::string& elsewhere) {
  Outlined out{body, tables, "", 0, 0, 0};
  out.runs = share_alike(kept_runs(body), "kept runs", elsewhere, out);
  out.blocks = share_alike(top_level_blocks(out.body), "loops or steps", elsewhere, out);
  return out;
}

}  // namespace skt::gen
