// Kept runs written alike, written once (docs/generate.md, "Kept runs written
// once").
//
// Where time steps did not fold, the skeleton writes out each kept run
// (Plan::kept_runs) between `skel_run_begin(L);` and `skel_run_end(L);` at the
// top of the program. Many runs are the same code but for their numbers
// (counts, tags, request slots, node and call numbers, loop trip counts) and
// for which per-node tables (`n<id>_...`, of the same types) they name: an
// adaptive code's halo update tagged anew each time, the same exchange with
// other sizes. Each group of such runs becomes one function of a row, each
// run a row of a table and a call of the function with it. What differs is
// the row's: a number; a table that only this run names and that is a
// constant with an initializer, moved into the row; any other table, by its
// address. Then the same for the program's top-level loops and reordered
// steps (in the runs left as they were, and between the runs): the same
// exchange written out in many runs. The calls each rank makes are
// unchanged (tests: the outliner's unit tests, and a skeleton traced with
// and without it).
//
// It reads the code the emitter wrote (C, of the emitter's own forms: no
// preprocessor lines, no declarations of arrays in the body); a run whose
// code it cannot read so, or that names the program's own locals, returns
// or jumps, stays as it is.
#pragma once

#include <cstddef>
#include <string>

namespace skt::gen {

struct Outlined {
  std::string body;       // the program's body, each shared run a call
  std::string tables;     // the per-node tables, less those moved into rows
  std::string functions;  // the row types, their tables and the functions (before the program)
  size_t runs = 0;        // kept runs now a call
  size_t blocks = 0;      // top-level loops and steps now a call (after the runs: where some were shared)
  size_t shared = 0;      // functions they share
};

// body: the program's body (the emitter's); tables: the per-node tables
// declared at file scope (the emitter's tables_); elsewhere: any other code
// that may name those tables (a table named there stays where it is).
Outlined outline_kept_runs(const std::string& body, const std::string& tables, const std::string& elsewhere);

}  // namespace skt::gen
