// Finding and running programs: shared by the skelgen commands that launch
// MPI jobs (trace, time, build, predict, place).
#pragma once

#include <string>
#include <vector>

namespace skt::proc {

// Full path of a command as the shell would find it ("" if not found).
std::string which(const std::string& cmd);

// "mpich", "openmpi" or "" from a launcher's name, following symlinks
// (/usr/bin/mpirun -> /etc/alternatives/mpirun -> /usr/bin/mpirun.openmpi).
std::string flavor_of_launcher(const std::string& launcher);

// Splits at blanks (no quoting).
std::vector<std::string> split_words(const std::string& s);

struct RunOutput {
  int status = 0;              // exit status, 128 + signal, or -1 when killed at the timeout
  std::string out, err;        // captured stdout and stderr
};
// Runs argv with stdin from /dev/null, capturing stdout and stderr; after
// timeout_s (0 = no limit) kills its whole process group. Throws
// std::runtime_error when it cannot be started.
RunOutput run_captured(const std::vector<std::string>& argv, double timeout_s);

// The last `lines` non-empty lines of `text`, joined with " | " (for one-line errors).
std::string tail_lines(const std::string& text, int lines);

}  // namespace skt::proc
