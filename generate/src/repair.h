// Making a planned skeleton complete (internal to the generator): the
// completion check (check.h) run on the plan, and where it fails, the plan
// repaired and checked again, or the skeleton refused.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "check.h"
#include "plan.h"

namespace skt::gen {

struct Completion {
  bool complete = false;             // the plan (as repaired) completes
  std::string verdict;               // one line: how it completes, or why not
  std::vector<std::string> repairs;  // what was changed, one line each
  std::string warning;               // completes only with more MPI buffering than every MPI has ("" if none)
  CheckResult last;                  // the last check's result (the failure, where it failed)
};

// Checks the plan; where it fails, keeps cut loops whole (those where the
// problem shows first, else all, then cuts them back one by one while the
// program still completes), and where no cut is to blame, checks whether it
// completes when the MPI buffers small messages (the eager protocol the
// application itself relied on). `progress` may be empty.
Completion ensure_completion(const FoldedProgram& p, Plan& plan,
                             const std::function<void(const std::string&)>& progress);

}  // namespace skt::gen
