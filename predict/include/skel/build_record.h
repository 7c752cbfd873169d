// Reusing a skeleton executable that is up to date: a build record next to
// it says what it was built from, by content. docs/predict.md, "Reusing
// the executable".
#pragma once

#include <string>
#include <utility>
#include <vector>

namespace skt::predict {

// SHA-256 of `bytes`, as 64 lower-case hex digits.
std::string sha256_hex(const std::string& bytes);
// SHA-256 of a file's bytes, read without following a symlink; "" when it
// cannot be read (missing, a symlink, not a regular file).
std::string file_sha256(const std::string& path);

// What an executable built from a skeleton depends on, as named fields in
// a fixed order: the source's bytes, the MPI, the compiler wrapper (its
// resolved path and bytes), the environment variables the wrappers read,
// and skelgen itself (whose code holds the compiler flags).
using BuildInputs = std::vector<std::pair<std::string, std::string>>;

// The inputs of building `source` for `mpi` with `compiler` (a name looked
// up in PATH). Throws std::runtime_error when the source cannot be read.
BuildInputs build_inputs(const std::string& source, const std::string& mpi, const std::string& compiler);

// The record of `exe`: EXE.skelgen-build.
std::string record_path(const std::string& exe);

// Whether `exe` may be run as the build of `inputs`: a regular file (not a
// symlink) of this user, not writable by others, with a record (a regular
// file of this user) holding exactly these inputs and the SHA-256 of the
// executable's present bytes. Returns "" if so, else why not ("no
// executable yet", "the source changed", "the executable changed since it
// was built", ...).
std::string why_not_reusable(const std::string& exe, const BuildInputs& inputs);

// A temporary path for a new build of `exe`, in its directory (so that
// install_build can rename it into place): made by mkstemp, mode 0600.
// Throws std::runtime_error when the directory is not writable.
std::string temp_build_path(const std::string& exe);

// Puts the finished build `tmp` in place as `exe` and writes its record:
// the old record is removed first, `tmp` renamed over `exe` (a symlink
// there is replaced, never written through), then the record written to a
// temporary file and renamed into place. Throws std::runtime_error.
void install_build(const std::string& tmp, const std::string& exe, const BuildInputs& inputs);

}  // namespace skt::predict
