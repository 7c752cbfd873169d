// Targets on the command line: shared by skelgen predict and skelgen place
// (implemented in cmd_predict.cpp).
#pragma once

#include <string>

#include "commands.h"
#include "skel/predict.h"

namespace skelgen {

// --target --launcher --hostfile --partition --constraint --srun-args --simgrid --simgrid-args --name
void add_target_options(CLI::App& app, TargetOptions& t);

// The target those options describe; throws std::runtime_error for options
// that do not fit its kind.
skt::predict::Target make_target(const TargetOptions& o);

// The executable to run on `t`: SKELETON itself, or for a .c source
// SKEL.<mpi> built (again) when missing, older than the source or built with
// another MPI. `info` receives the executable's SKELGEN_META.
std::string skeleton_for_target(const std::string& skeleton, const skt::predict::Target& t, const std::string& mpi,
                                bool quiet, skt::predict::SkeletonInfo& info);

// Builds the skeleton for `t` if needed (skeleton_for_target) and runs it
// there (skt::predict::predict), with progress on stderr unless quiet.
skt::predict::Prediction run_on_target(const RunSettings& s, const skt::predict::Target& t, std::string& exe,
                                       skt::predict::SkeletonInfo& info);

nlohmann::json prediction_json(const skt::predict::Prediction& p);

}  // namespace skelgen
