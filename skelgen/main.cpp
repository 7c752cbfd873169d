// skelgen: build performance skeletons of MPI applications.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <new>
#include <string>

#include "commands.h"
#include "skel/memory.h"
#include "skel/trace.h"

int main(int argc, char** argv) {
  CLI::App app{
      "skelgen: turn one traced run of an MPI application into a short C + MPI skeleton "
      "that communicates and computes like it.\n"
      "Pipeline: trace -> merge -> compress -> generate -> predict. See README.md."};
  app.set_version_flag("--version", std::string("skelgen ") + SKELGEN_VERSION);
  app.require_subcommand(1);

  skelgen::TraceOptions trace_opt;
  skelgen::DumpOptions dump_opt;
  skelgen::MergeOptions merge_opt;
  skelgen::CompressOptions compress_opt;
  skelgen::GenerateOptions generate_opt;
  skelgen::BuildOptions build_opt;
  skelgen::TimeOptions time_opt;
  skelgen::PredictOptions predict_opt;
  skelgen::PlaceOptions place_opt;
  CLI::App* trace = app.add_subcommand("trace", "Run an MPI application under the tracer (one trace file per rank)");
  CLI::App* merge = app.add_subcommand("merge", "Merge the per-rank traces into one program trace");
  CLI::App* compress = app.add_subcommand("compress", "Fold a merged trace (or a symbol string) into nested loops");
  CLI::App* generate =
      app.add_subcommand("generate", "Generate the skeleton C program from a trace, merged trace or folded program");
  CLI::App* build = app.add_subcommand("build", "Compile a generated skeleton with an MPI's compiler wrapper");
  CLI::App* time_cmd =
      app.add_subcommand("time", "Time an MPI application untraced (to check a prediction against it)");
  CLI::App* predict =
      app.add_subcommand("predict", "Run a skeleton on a target (local launcher, Slurm, SimGrid) and predict the runtime");
  CLI::App* place = app.add_subcommand("place", "Rank candidate targets or choose nodes from an inventory");
  CLI::App* dump = app.add_subcommand("dump", "Print a trace or a merged trace as text or JSON Lines");
  skelgen::setup_trace(*trace, trace_opt);
  skelgen::setup_merge(*merge, merge_opt);
  skelgen::setup_compress(*compress, compress_opt);
  skelgen::setup_generate(*generate, generate_opt);
  skelgen::setup_build(*build, build_opt);
  skelgen::setup_time(*time_cmd, time_opt);
  skelgen::setup_predict(*predict, predict_opt);
  skelgen::setup_place(*place, place_opt);
  skelgen::setup_dump(*dump, dump_opt);

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    if (e.get_exit_code() == 0) return app.exit(e);  // --help, --version
    // One line, like every other error.
    std::string what = e.what();
    for (char& c : what)
      if (c == '\n') c = ' ';
    std::fprintf(stderr, "skelgen: error: %s (see skelgen --help)\n", what.c_str());
    return e.get_exit_code();
  }
  // The offline stages: running out of memory is an error message, not the
  // kernel's OOM killer (skel/memory.h). Not trace, time or predict, whose
  // applications and skeletons would inherit the cap.
  uint64_t memory = 0;
  if (*merge || *compress || *generate) memory = skt::mem::cap_address_space();
  try {
    if (*trace) return skelgen::run_trace(trace_opt);
    if (*merge) return skelgen::run_merge(merge_opt);
    if (*compress) return skelgen::run_compress(compress_opt);
    if (*generate) return skelgen::run_generate(generate_opt);
    if (*build) return skelgen::run_build(build_opt);
    if (*time_cmd) return skelgen::run_time(time_opt);
    if (*predict) return skelgen::run_predict(predict_opt);
    if (*place) return skelgen::run_place(place_opt);
    if (*dump) return skelgen::run_dump(dump_opt);
  } catch (const skt::TraceError& e) {
    std::fprintf(stderr, "skelgen: error: %s\n", e.what());
    return 1;
  } catch (const std::bad_alloc&) {
    std::fprintf(stderr,
                 "skelgen: error: out of memory: this needs more than the %.3g GB available when it started "
                 "(set SKELGEN_MEMORY_GB to allow more, or trace a shorter run)\n",
                 static_cast<double>(memory ? memory : skt::mem::available_bytes()) / 1e9);
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "skelgen: error: %s\n", e.what());
    return 1;
  }
  return 0;
}
