// Finding and running programs: shared by the skelgen commands that launch
// MPI jobs (trace, time, build, predict, place).
#pragma once

#include <signal.h>

#include <array>
#include <functional>
#include <string>
#include <vector>

namespace skt::proc {

// The last component of a path ("mpiexec.mpich" of "/usr/bin/mpiexec.mpich").
std::string basename_of(const std::string& path);

// Full path of a command as the shell would find it ("" if not found).
std::string which(const std::string& cmd);

// "mpich", "openmpi" or "" from a launcher's name, following symlinks
// (/usr/bin/mpirun -> /etc/alternatives/mpirun -> /usr/bin/mpirun.openmpi).
std::string flavor_of_launcher(const std::string& launcher);

// Splits at blanks (no quoting).
std::vector<std::string> split_words(const std::string& s);

// How a job ended, as far as its processes go: a job is the launcher skelgen
// started and every process under it, whatever group or session it moved
// to (MPICH's hydra proxy and ranks call setsid, Open MPI's ranks lead
// groups of their own), found as skelgen's descendants.
struct JobEnd {
  int processes = 0;               // ended at the timeout or a stop: how many the job had (launcher included)
  int left_behind = 0;             // the launcher exited by itself, but this many of its job still ran (ended)
  std::vector<int> still_running;  // pids that SIGKILL had not ended 10 s after (none, normally)
};

struct RunOutput {
  int status = 0;              // exit status, 128 + signal, or -1 when killed at the timeout
  std::string out, err;        // captured stdout and stderr
  JobEnd ended;
};
// Runs argv with stdin from /dev/null, capturing stdout and stderr, in a
// process group of its own; skelgen is meanwhile the job's subreaper
// (Linux), so that a rank whose parent dies stays skelgen's descendant.
// After timeout_s (0 = no limit) ends the whole job: SIGTERM to the group and
// every descendant (MPI launchers and srun pass it on to the ranks),
// SIGKILL to what is left after 3 s, then waits until none of it runs (at
// most 10 s; ended.still_running names what remains). Processes of the job
// still running when the launcher exits by itself are ended the same way.
// Skelgen must have no other child while it runs. Throws std::runtime_error
// when it cannot be started.
RunOutput run_captured(const std::vector<std::string>& argv, double timeout_s);

// While one lives, the stop signals (SIGINT, SIGTERM, SIGHUP; those ignored
// on entry stay ignored) are noted for wait_passing_stops instead of ending
// skelgen. Make one before starting the child that wait_passing_stops will
// wait for: a signal that came between the start and the wait ended skelgen
// and left the launcher running (npb_scripts, SIGHUP, a clean-clone run).
// The previous handlers come back when it goes.
class StopSignals {
 public:
  StopSignals();
  ~StopSignals();
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  [[noreturn]] static void die_of(int sig);  // as the signal's default action would (exit status 128 + sig)
  static int noted();  // the stop signal noted while one lived (0: none)

 private:
  std::array<struct sigaction, 3> old_{};  // SIGINT's, SIGTERM's, SIGHUP's
};

// Waits for the child `pid` (an MPI launcher skelgen started) to end and
// returns its exit status (128 + signal if a signal ended it). A stop signal
// skelgen gets meanwhile (SIGINT, SIGTERM, SIGHUP; those ignored on entry stay
// ignored) is passed on, SIGTERM and after 3 s SIGKILL, to the child's
// process group if `own_group` (the child leads a group of its own, which a
// Ctrl-C at the terminal does not reach) or else to the child (it shares
// skelgen's group), and to every descendant of skelgen (ranks in groups or
// sessions of their own); once they have ended, skelgen says on stderr that
// it stopped `what` and dies of the signal (exit status 128 + signal).
// `timeout_s` > 0: after that long the job is ended the same way and -1
// returned. `ended` (if given) receives how the job's processes ended.
// `before_dying` runs first then (removing temporary files).
int wait_passing_stops(int pid, bool own_group, double timeout_s, const std::string& what,
                       const std::function<void()>& before_dying = {}, JobEnd* ended = nullptr);

// Where temporary files go: $TMPDIR when it names a directory, else /tmp.
std::string temp_root();

// A private directory (mode 0700, made by mkdtemp under temp_root(), named
// skelgen-<what>-XXXXXX) for one command's temporary files. It is removed
// with its contents when the object goes (normal return or an exception),
// and when skelgen dies of a stop signal (StopSignals::die_of removes every
// live one first). While it lives, stop signals are noted (StopSignals),
// also between the runs that act on them (wait_passing_stops): one that
// came when no run was going ends skelgen at the next run, or when the
// directory goes. (Before, a SIGTERM between two of predict's runs took the
// default action and left the directory behind.) Throws std::runtime_error
// when it cannot be made.
class TempDir {
 public:
  explicit TempDir(const std::string& what);
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  StopSignals stop_signals_;  // before path_ is made: a stop from then on is noted
  std::string path_;
};

// The last `lines` non-empty lines of `text`, joined with " | " (for one-line errors).
std::string tail_lines(const std::string& text, int lines);

}  // namespace skt::proc
