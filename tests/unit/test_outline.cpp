// Kept runs written once (generate/src/outline.cpp): runs alike but for
// their numbers and tables become one function over rows. The oracle: each
// call of a shared function, expanded back with its row's values, must be
// the run it replaced, token for token (comments and loop counters' names
// aside).
#include <gtest/gtest.h>

#include <cctype>
#include <map>
#include <string>
#include <vector>

#include "outline.h"

namespace {

using skt::gen::outline_kept_runs;
using skt::gen::Outlined;

// A kept run as the emitter writes it: an exchange with tag, count and slot,
// its computation from a per-node table, a loop, and an instance counter.
std::string run(int timer, int node, int tag, int count, int slot, int iters, const std::string& extra = "") {
  const std::string n = std::to_string(node), i = "i" + n;
  return "  /* run of top-level calls: stands for itself and 3 top-level nodes left out */\n"
         "  skel_run_begin(" + std::to_string(timer) + ");\n"
         "  /* n" + n + ": MPI_Irecv at app+0x10 */\n"
         "  skel_compute(n" + n + "_work[skel_rank]);\n"
         "  skel_enter(" + std::to_string(node) + ");\n"
         "  MPI_Irecv(skel_rbuf, " + std::to_string(count) + ", MPI_DOUBLE, (skel_rank + 1) % SKEL_WORLD_SIZE, " +
         std::to_string(tag) + ", MPI_COMM_WORLD, &skel_req[" + std::to_string(slot) + "]);\n"
         "  for (long " + i + " = 0; " + i + " < " + std::to_string(iters) + "; ++" + i + ") {\n"
         "    skel_iter[0] = " + i + ";\n"
         "    skel_compute(0.25 * n" + n + "_work[skel_rank]);\n"
         "    MPI_Allreduce(skel_sbuf, skel_rbuf, 1, MPI_DOUBLE, MPI_MIN, MPI_COMM_WORLD);\n"
         "    n" + n + "_i += 1;\n"
         "  }\n" + extra +
         "  skel_gather(n" + n + "_reqs, 1);\n"
         "  MPI_Waitall(1, skel_tmp_req, skel_statuses);\n"
         "  skel_run_end(" + std::to_string(timer) + ");\n";
}

std::string tables_of(int node, const std::string& work, const std::string& reqs) {
  const std::string n = std::to_string(node);
  return "static const double n" + n + "_work[SKEL_WORLD_SIZE] = " + work + ";\n"
         "/* requests of n" + n + " */\n"
         "static const int n" + n + "_reqs[] = " + reqs + ";\n"
         "static double n" + n + "_i; /* the application's instance of n" + n + " */\n";
}

std::vector<std::string> tokens(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    const char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c))) {
      ++i;
    } else if (s.compare(i, 2, "/*") == 0) {
      i = s.find("*/", i) + 2;
    } else if (std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.') {
      size_t j = i;
      while (j < s.size() && (std::isalnum(static_cast<unsigned char>(s[j])) || s[j] == '_' || s[j] == '.')) ++j;
      std::string w = s.substr(i, j - i);
      if (w.size() > 1 && (w[0] == 'i' || w[0] == 'k') && std::isdigit(static_cast<unsigned char>(w[1]))) w = "L";
      out.push_back(w);
      i = j;
    } else {
      out.push_back(std::string(1, c));
      ++i;
    }
  }
  return out;
}

std::string squeezed(const std::string& s) {
  std::string out;
  for (char c : s)
    if (!std::isspace(static_cast<unsigned char>(c))) out += c;
  return out;
}

// The values of a row "{a, {b, c}, &d}", split at its top-level commas.
std::vector<std::string> row_values(const std::string& row) {
  std::vector<std::string> out(1);
  int depth = 0;
  for (size_t i = 1; i + 1 < row.size(); ++i) {
    const char c = row[i];
    depth += (c == '{') - (c == '}');
    if (c == ',' && depth == 0) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

// The program as it was: each shared function's call replaced by its code
// with its row's values; a table moved into a row named again by the name
// whose initializer it holds (names_of_inits).
std::string expanded(const Outlined& o, const std::map<std::string, std::string>& names_of_inits) {
  std::string body = o.body;
  for (size_t f = 0; f < o.shared; ++f) {
    const std::string name = "skel_shared" + std::to_string(f);
    const std::string& fs = o.functions;
    const size_t code_at = fs.find("{\n", fs.find("static void " + name + "(")) + 2;
    const std::string code = fs.substr(code_at, fs.find("\n}\n", code_at) + 1 - code_at);
    std::vector<size_t> order;      // the columns in the order of the row type's members
    const size_t type_at = fs.find("struct " + name + " {");
    if (type_at != std::string::npos)
      for (const std::string& w : tokens(fs.substr(type_at, fs.find("};", type_at) - type_at)))
        if (w.size() > 1 && w[0] == 'c' && std::isdigit(static_cast<unsigned char>(w[1]))) order.push_back(std::stoul(w.substr(1)));
    std::vector<std::string> rows;  // each row's text
    const size_t rows_at = fs.find(name + "_rows[");
    if (rows_at != std::string::npos) {
      size_t i = fs.find("{", rows_at) + 1;
      for (int depth = 0; fs[i] != '}' || depth > 0; ++i) {
        if (fs[i] == '{' && depth++ == 0) rows.emplace_back();
        if (depth > 0) rows.back() += fs[i];
        if (fs[i] == '}') --depth;
      }
    }
    for (size_t r = 0; r < std::max<size_t>(rows.size(), 1); ++r) {
      const std::string call = "  " + name + (rows.empty() ? "();\n" : "(&" + name + "_rows[" + std::to_string(r) + "]);\n");
      const size_t at = body.find(call);
      if (at == std::string::npos) continue;
      std::string c = code;
      const std::vector<std::string> v = rows.empty() ? std::vector<std::string>{} : row_values(rows[r]);
      EXPECT_EQ(v.size(), order.size());
      if (v.size() != order.size()) return "";
      for (size_t j = v.size(); j-- > 0;) {  // c10 before c1
        const size_t k = order[j];
        std::string value = v[j];
        while (!value.empty() && value[0] == ' ') value.erase(0, 1);
        const auto named = names_of_inits.find(squeezed(value));
        if (named != names_of_inits.end()) value = named->second;
        if (value[0] == '&') value.erase(0, 1);
        for (const std::string& use : {"(*row->c" + std::to_string(k) + ")", "row->c" + std::to_string(k)})
          for (size_t p = c.find(use); p != std::string::npos; p = c.find(use, p + value.size())) c.replace(p, use.size(), value);
      }
      body.replace(at, call.size(), c);
    }
  }
  return body;
}

struct Example {
  std::string body, tables;
  std::map<std::string, std::string> inits;  // a table's squeezed initializer -> its name
  void add(int timer, int node, int tag, int count, int slot, int iters, const std::string& extra = "") {
    body += run(timer, node, tag, count, slot, iters, extra) + "  skel_enter(" + std::to_string(900 + timer) + ");\n";
    const std::string work = "{" + std::to_string(node) + ".5, " + std::to_string(node) + ".25}";
    tables += tables_of(node, work, "{" + std::to_string(slot) + "}");
    inits[squeezed(work)] = "n" + std::to_string(node) + "_work";
    inits["{" + std::to_string(slot) + "}"] = "n" + std::to_string(node) + "_reqs";
  }
};

TEST(Outline, RunsAlikeButForTheirNumbersAndTablesShareOneFunction) {
  Example e;
  e.body = "  MPI_Init(argc, argv);\n";
  e.add(1, 10, 2001, 256, 4, 3);
  e.add(2, 20, 2002, 512, 8, 5);
  e.add(3, 30, 2001, 256, 12, 3);
  const Outlined o = outline_kept_runs(e.body, e.tables, "");
  ASSERT_EQ(o.shared, 1u);
  EXPECT_EQ(o.runs, 3u);
  EXPECT_NE(o.body.find("skel_shared0(&skel_shared0_rows[2]);"), std::string::npos);
  EXPECT_EQ(o.body.find("MPI_Irecv"), std::string::npos);  // written once, in the function
  EXPECT_EQ(tokens(expanded(o, e.inits)), tokens(e.body));
  // the work tables, only their runs name them: moved into the rows; the counters are named by address
  EXPECT_EQ(o.tables.find("n20_work"), std::string::npos);
  EXPECT_NE(o.functions.find("&n20_i"), std::string::npos);
  EXPECT_NE(o.tables.find("static double n20_i;"), std::string::npos);
}

TEST(Outline, ATableNamedElsewhereStaysAndIsNamedByItsAddress) {
  Example e;
  e.add(1, 10, 7, 256, 4, 3);
  e.add(2, 20, 7, 256, 8, 3);
  e.add(3, 30, 7, 256, 12, 3);  // three: two runs this short take as many lines shared
  e.body += "  skel_compute(n20_work[skel_rank]);\n";  // n20_work also outside its run
  const Outlined o = outline_kept_runs(e.body, e.tables, "");
  ASSERT_EQ(o.shared, 1u);
  EXPECT_NE(o.tables.find("static const double n20_work"), std::string::npos);
  EXPECT_NE(o.functions.find("&n20_work"), std::string::npos);
  EXPECT_EQ(tokens(expanded(o, e.inits)), tokens(e.body));
}

TEST(Outline, RunsOfOtherCodeStayApart) {
  Example e;
  e.add(1, 10, 7, 256, 4, 3);
  e.add(2, 20, 7, 256, 8, 3, "    MPI_Barrier(MPI_COMM_WORLD);\n");  // one more call
  e.add(3, 30, 7, 256, 12, 3, "  if (argc) skel_compute(1);\n");     // names the program's own
  e.add(4, 40, 7, 256, 16, 3, "  return;\n");                       // leaves the program
  const Outlined o = outline_kept_runs(e.body, e.tables, "");
  EXPECT_EQ(o.shared, 0u);
  EXPECT_EQ(o.body, e.body);
  EXPECT_EQ(o.tables, e.tables);
}

TEST(Outline, CaseLabelsAreNotHoles) {
  Example e;
  e.add(1, 10, 7, 256, 4, 3, "  switch (k) {\n  case 0: break;\n  }\n");
  e.add(2, 20, 7, 256, 8, 3, "  switch (k) {\n  case 1: break;\n  }\n");
  e.add(3, 30, 7, 256, 12, 3, "  switch (k) {\n  case 2: break;\n  }\n");
  EXPECT_EQ(outline_kept_runs(e.body, e.tables, "").shared, 0u);
  Example same;
  same.add(1, 10, 7, 256, 4, 3, "  switch (k) {\n  case 0: break;\n  }\n");
  same.add(2, 20, 7, 256, 8, 3, "  switch (k) {\n  case 0: break;\n  }\n");
  same.add(3, 30, 7, 256, 12, 3, "  switch (k) {\n  case 0: break;\n  }\n");
  EXPECT_EQ(outline_kept_runs(same.body, same.tables, "").shared, 1u);
}

TEST(Outline, ARunsTableNamedInOtherCodeIsNotMoved) {
  Example e;
  e.add(1, 10, 7, 256, 4, 3);
  e.add(2, 20, 7, 256, 8, 3);
  e.add(3, 30, 7, 256, 12, 3);
  const Outlined o = outline_kept_runs(e.body, e.tables, "static const double* farm = n10_work;\n");
  ASSERT_EQ(o.shared, 1u);
  EXPECT_NE(o.tables.find("static const double n10_work"), std::string::npos);
  EXPECT_EQ(tokens(expanded(o, e.inits)), tokens(e.body));
}

TEST(Outline, RunsThatWouldTakeAsManyLinesSharedStayAsTheyAre) {
  auto one = [](const std::string& l) {
    return "  skel_run_begin(" + l + ");\n  MPI_Barrier(MPI_COMM_WORLD);\n  skel_run_end(" + l + ");\n";
  };
  const std::string body = one("1") + "  skel_enter(5);\n" + one("2");  // a function of one call: 5 lines for 2
  const Outlined o = outline_kept_runs(body, "", "");
  EXPECT_EQ(o.shared, 0u);
  EXPECT_EQ(o.body, body);
}

// A top-level loop as the emitter writes one: an exchange in a loop of `iters`.
std::string loop(int node, int tag, int iters) {
  const std::string n = std::to_string(node), i = "i" + n;
  return "  /* loop n" + n + ": " + std::to_string(iters) + " iterations */\n"
         "  for (long " + i + " = 0; " + i + " < " + std::to_string(iters) + "; ++" + i + ") {\n"
         "    skel_iter[0] = " + i + ";\n"
         "    skel_compute(n" + n + "_work[skel_rank]);\n"
         "    skel_enter(" + n + ");\n"
         "    MPI_Send(skel_sbuf, 8, MPI_INT, (skel_rank + 1) % SKEL_WORLD_SIZE, " + std::to_string(tag) + ", MPI_COMM_WORLD);\n"
         "    skel_enter(" + std::to_string(node + 1) + ");\n"
         "    MPI_Recv(skel_rbuf, 8, MPI_INT, (skel_rank + 1) % SKEL_WORLD_SIZE, " + std::to_string(tag) +
         ", MPI_COMM_WORLD, MPI_STATUS_IGNORE);\n"
         "  }\n";
}

TEST(Outline, TopLevelLoopsAlikeShareOneFunctionToo) {
  Example e;
  e.add(1, 10, 7, 256, 4, 3);
  e.add(2, 20, 9, 512, 8, 5);
  e.add(3, 30, 7, 256, 12, 3);  // the runs, shared first
  for (int k = 0; k < 3; ++k) {
    e.body += loop(100 + 10 * k, 40 + k, 5 + k);
    e.tables += "static const double n" + std::to_string(100 + 10 * k) + "_work[SKEL_WORLD_SIZE] = {1." +
                std::to_string(k) + ", 2};\n";
    e.inits["{1." + std::to_string(k) + ",2}"] = "n" + std::to_string(100 + 10 * k) + "_work";
  }
  for (int k = 0; k < 3; ++k)  // alike, but an else follows their first block
    e.body += "  if (skel_rank) {\n    MPI_Barrier(MPI_COMM_WORLD);\n    MPI_Barrier(MPI_COMM_WORLD);\n"
              "    MPI_Barrier(MPI_COMM_WORLD);\n  } else {\n    skel_compute(" + std::to_string(k) + ");\n  }\n";
  const Outlined o = outline_kept_runs(e.body, e.tables, "");
  EXPECT_EQ(o.runs, 3u);
  EXPECT_EQ(o.blocks, 3u);  // the loops; not the if, whose block an else follows
  EXPECT_EQ(o.shared, 2u);
  EXPECT_EQ(o.body.find("MPI_Send"), std::string::npos);
  EXPECT_EQ(tokens(expanded(o, e.inits)), tokens(e.body));
}

TEST(Outline, ASharedFunctionOfOverAThousandLinesCompilesAtO0AsALongBodyDoes) {
  std::string many;
  for (int k = 0; k < 1000; ++k) many += "  MPI_Barrier(MPI_COMM_WORLD);\n";
  Example e, short_runs;
  for (int r = 1; r <= 2; ++r) e.add(r, 10 * r, 7, 256, 4 * r, 3, many), short_runs.add(r, 10 * r, 7, 256, 4 * r, 3);
  short_runs.add(3, 30, 7, 256, 12, 3);
  const Outlined o = outline_kept_runs(e.body, e.tables, ""), s = outline_kept_runs(short_runs.body, short_runs.tables, "");
  ASSERT_EQ(o.shared, 1u);
  ASSERT_EQ(s.shared, 1u);
  EXPECT_NE(o.functions.find("__attribute__((optimize(\"O0\")))\n#endif\nstatic void skel_shared0("), std::string::npos);
  EXPECT_EQ(s.functions.find("optimize"), std::string::npos);
}

TEST(Outline, OneRunAloneStaysAsItIs) {
  Example e;
  e.add(1, 10, 7, 256, 4, 3);
  const Outlined o = outline_kept_runs(e.body, e.tables, "");
  EXPECT_EQ(o.shared, 0u);
  EXPECT_EQ(o.body, e.body);
}

}  // namespace
