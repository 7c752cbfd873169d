#include "skel/process.h"

#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <stdexcept>
#include <thread>

extern char** environ;

namespace skt::proc {
namespace {

std::string real_path(const std::string& p) {
  char buf[PATH_MAX];
  return realpath(p.c_str(), buf) ? std::string(buf) : p;
}

// A stop signal (SIGINT, SIGTERM, SIGHUP) that arrived while a StopSignals
// lived: set once, as skelgen then stops.
volatile sig_atomic_t g_stop_signal = 0;
void note_stop(int sig) { g_stop_signal = sig; }
constexpr std::array<int, 3> kStopSignals{SIGINT, SIGTERM, SIGHUP};  // StopSignals::old_ in this order

constexpr double kGraceS = 3;  // from SIGTERM to SIGKILL when a job is ended
constexpr double kGoneS = 10;  // how long skelgen waits, after SIGKILL, for every process of the job to go

// One process of a job: its pid and start time (clock ticks since boot,
// /proc/PID/stat field 22), so that a pid the system has given to another
// process since is never signalled.
struct ProcId {
  pid_t pid = 0;
  unsigned long long start = 0;
  bool operator<(const ProcId& o) const { return pid != o.pid ? pid < o.pid : start < o.start; }
};

struct ProcStat {
  pid_t pid = 0, ppid = 0;
  char state = '?';
  unsigned long long start = 0;
};

// /proc/PID/stat of one process; false when it is gone.
bool read_stat(pid_t pid, ProcStat& st) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(in, line)) return false;
  size_t close = line.rfind(')');  // the command name may hold blanks and parentheses
  if (close == std::string::npos) return false;
  std::istringstream rest(line.substr(close + 1));
  std::string field;
  st.pid = pid;
  rest >> st.state >> st.ppid;
  for (int i = 5; i <= 21 && rest >> field; ++i) {
  }
  return static_cast<bool>(rest >> st.start);
}

// Every process but skelgen itself whose parent chain leads to skelgen.
std::vector<ProcStat> descendants_of_self() {
  std::vector<ProcStat> all;
  if (DIR* d = opendir("/proc")) {
    while (dirent* e = readdir(d)) {
      char* end = nullptr;
      long pid = std::strtol(e->d_name, &end, 10);
      ProcStat st;
      if (pid > 0 && *end == 0 && read_stat(static_cast<pid_t>(pid), st)) all.push_back(st);
    }
    closedir(d);
  }
  std::vector<ProcStat> out;
  std::vector<pid_t> frontier{getpid()};
  while (!frontier.empty()) {
    pid_t parent = frontier.back();
    frontier.pop_back();
    for (const ProcStat& st : all)
      if (st.ppid == parent) {
        out.push_back(st);
        frontier.push_back(st.pid);
      }
  }
  return out;
}

// Whether that process still runs (a zombie has ended).
bool alive(const ProcId& p) {
  ProcStat st;
  return read_stat(p.pid, st) && st.start == p.start && st.state != 'Z';
}

// The job skelgen runs: the launcher `leader` and every process under it,
// whatever process group or session it moved to (MPICH's hydra proxy and
// its ranks each call setsid; Open MPI's ranks each lead a group of their
// own). skelgen runs one job at a time, so the job is every descendant of
// skelgen; while run_captured runs it, skelgen is the job's subreaper
// (Subreaper below), so a rank whose parent died stays a descendant.
class Job {
 public:
  Job(pid_t leader, bool own_group) : leader_(leader), own_group_(own_group) {}

  // Notes the job's live processes, reaps those that ended as skelgen's
  // children (orphans it adopted; the leader only in finish()), and sends
  // `sig` (if any) to those not yet sent it. Returns how many are still
  // there: running, or ended but not yet reaped (a process shows as a
  // zombie while its other threads still exit, and cannot be reaped then).
  size_t sweep(int sig) {
    size_t running = 0;
    for (const ProcStat& st : descendants_of_self()) {
      if (st.state == 'Z') {
        if (st.pid == leader_) continue;
        if (st.ppid != getpid() || waitpid(st.pid, nullptr, WNOHANG) != st.pid) ++running;
        continue;
      }
      ProcId id{st.pid, st.start};
      seen_.insert(id);
      ++running;
      if (sig && signalled_[id] != sig) {
        kill(st.pid, sig);
        signalled_[id] = sig;
      }
    }
    return running;
  }

  // Ends the job: SIGTERM to all of it (MPI launchers pass it on to their
  // ranks, srun to the step's tasks), SIGKILL to what is left after grace_s,
  // then reaps the leader and waits (at most wait_s) until no process of
  // the job runs. Returns the leader's wait status in *status.
  void finish(int* status, double grace_s, double wait_s) {
    if (!leader_reaped_ && own_group_) kill(-leader_, SIGTERM);
    sweep(SIGTERM);
    wait_until([&] { return leader_ended() && sweep(SIGTERM) == 0; }, grace_s);
    // the group first, while the unreaped leader keeps its id from going to another process
    if (!leader_reaped_ && own_group_) kill(-leader_, SIGKILL);
    sweep(SIGKILL);
    if (!leader_reaped_) {
      while (waitpid(leader_, status, 0) < 0 && errno == EINTR) {
      }
      leader_reaped_ = true;
    }
    wait_until([&] { return sweep(SIGKILL) == 0; }, wait_s);
  }

  void leader_reaped() { leader_reaped_ = true; }
  // How many processes the job had, the leader included, as far as seen.
  int processes() const { return static_cast<int>(seen_.size()); }
  std::vector<int> still_running() const {
    std::vector<int> left;
    for (const ProcId& p : seen_)
      if (alive(p)) left.push_back(p.pid);
    return left;
  }

 private:
  bool leader_ended() {
    if (leader_reaped_) return true;
    siginfo_t info{};
    int rc = waitid(P_PID, static_cast<id_t>(leader_), &info, WEXITED | WNOHANG | WNOWAIT);
    return (rc == 0 && info.si_pid == leader_) || (rc < 0 && errno != EINTR);
  }
  template <class Done>
  static void wait_until(Done done, double limit_s) {
    auto start = std::chrono::steady_clock::now();
    while (!done() && std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < limit_s)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }

  pid_t leader_;
  bool own_group_;
  bool leader_reaped_ = false;
  std::set<ProcId> seen_;
  std::map<ProcId, int> signalled_;
};

// While one lives, skelgen is a child subreaper (Linux): a process of the
// job whose parent ends is adopted by skelgen, not by init, so that the job
// can still be found and ended as skelgen's descendants.
class Subreaper {
 public:
  Subreaper() {
#ifdef PR_SET_CHILD_SUBREAPER
    int was = 0;
    if (prctl(PR_GET_CHILD_SUBREAPER, &was) == 0 && !was && prctl(PR_SET_CHILD_SUBREAPER, 1) == 0) set_ = true;
#endif
  }
  ~Subreaper() {
#ifdef PR_SET_CHILD_SUBREAPER
    if (set_) prctl(PR_SET_CHILD_SUBREAPER, 0);
#endif
  }
  Subreaper(const Subreaper&) = delete;
  Subreaper& operator=(const Subreaper&) = delete;

 private:
  bool set_ = false;
};

std::string slurp_and_remove(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  std::remove(path.c_str());
  return ss.str();
}

std::string temp_file(const char* what) {
  std::string tmpl = temp_root() + "/skelgen-" + what + "-XXXXXX";
  int fd = mkostemp(tmpl.data(), O_CLOEXEC);
  if (fd < 0)
    throw std::runtime_error("cannot create a temporary file in " + temp_root() + ": " + std::strerror(errno));
  close(fd);
  return tmpl;
}

// The live TempDirs, removed by StopSignals::die_of (skelgen then ends
// without unwinding). Touched only outside signal handlers.
std::vector<std::string>& live_temp_dirs() {
  static auto* dirs = new std::vector<std::string>;
  return *dirs;
}

void remove_tree(const std::string& path) {
  std::error_code ec;
  std::filesystem::remove_all(path, ec);  // never follows symlinks
}

}  // namespace

// A stop signal meant for skelgen does not reach a child in a process group
// of its own (Ctrl-C goes to the terminal's foreground group), nor one in
// skelgen's group when it is sent to skelgen alone (kill PID, a job script):
// while a StopSignals lives, these handlers note the signal, and
// wait_passing_stops passes it on. Signals ignored on entry stay ignored (a
// command started in the background by a non-interactive shell ignores
// SIGINT). The note is never cleared: skelgen stops once it is set.
StopSignals::StopSignals() {
  struct sigaction sa {};
  sa.sa_handler = note_stop;
  sigemptyset(&sa.sa_mask);
  for (size_t i = 0; i < kStopSignals.size(); ++i) {
    sigaction(kStopSignals[i], nullptr, &old_[i]);
    if (old_[i].sa_handler != SIG_IGN) sigaction(kStopSignals[i], &sa, nullptr);
  }
}

StopSignals::~StopSignals() {
  for (size_t i = 0; i < kStopSignals.size(); ++i) sigaction(kStopSignals[i], &old_[i], nullptr);
}

int StopSignals::noted() { return g_stop_signal; }

void StopSignals::die_of(int sig) {
  for (const std::string& d : live_temp_dirs()) remove_tree(d);
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  sigaction(sig, &dfl, nullptr);
  raise(sig);
  _exit(128 + sig);
}

std::string which(const std::string& cmd) {
  if (cmd.empty()) return "";
  if (cmd.find('/') != std::string::npos) return access(cmd.c_str(), X_OK) == 0 ? cmd : "";
  const char* path = std::getenv("PATH");
  std::string p = path ? path : "/usr/bin:/bin";
  size_t start = 0;
  while (start <= p.size()) {
    size_t end = p.find(':', start);
    if (end == std::string::npos) end = p.size();
    std::string d = p.substr(start, end - start);
    std::string full = (d.empty() ? "." : d) + "/" + cmd;
    if (access(full.c_str(), X_OK) == 0) return full;
    start = end + 1;
  }
  return "";
}

std::string flavor_of_launcher(const std::string& launcher) {
  std::string full = which(launcher);
  for (const std::string& name : {basename_of(launcher), basename_of(real_path(full.empty() ? launcher : full))}) {
    if (name.find("mpich") != std::string::npos || name.find("hydra") != std::string::npos) return "mpich";
    if (name.find("openmpi") != std::string::npos || name.find("orterun") != std::string::npos ||
        name.find("prterun") != std::string::npos)
      return "openmpi";
  }
  return "";
}

std::vector<std::string> split_words(const std::string& s) {
  std::vector<std::string> out;
  std::istringstream in(s);
  std::string w;
  while (in >> w) out.push_back(w);
  return out;
}

RunOutput run_captured(const std::vector<std::string>& argv, double timeout_s) {
  if (argv.empty()) throw std::runtime_error("nothing to run");
  std::string out_path = temp_file("out"), err_path = temp_file("err");
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, 1, out_path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawn_file_actions_addopen(&fa, 2, err_path.c_str(), O_WRONLY | O_TRUNC, 0);
  posix_spawnattr_t attr;
  posix_spawnattr_init(&attr);
  posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);  // its own group: a timeout kills all of it
  posix_spawnattr_setpgroup(&attr, 0);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = 0;
  StopSignals stop_signals;  // before the start: a stop that comes before the wait still ends the child
  Subreaper subreaper;       // ranks that leave the launcher's group and lose their parent stay ours to end
  int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::remove(out_path.c_str());
    std::remove(err_path.c_str());
    throw std::runtime_error(argv[0] + ": cannot run: " + std::strerror(rc));
  }
  RunOutput r;
  r.status = wait_passing_stops(
      pid, true, timeout_s, basename_of(argv[0]),
      [&] {
        std::remove(out_path.c_str());
        std::remove(err_path.c_str());
      },
      &r.ended);
  r.out = slurp_and_remove(out_path);
  r.err = slurp_and_remove(err_path);
  return r;
}

int wait_passing_stops(int pid, bool own_group, double timeout_s, const std::string& what,
                       const std::function<void()>& before_dying, JobEnd* ended) {
  StopSignals stop_signals;
  auto start = std::chrono::steady_clock::now();
  int status = 0;
  Job job(pid, own_group);
  auto report = [&] {
    if (!ended) return;
    ended->processes = job.processes();
    ended->still_running = job.still_running();
  };
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (int sig = g_stop_signal) {  // skelgen is told to stop: the run goes first
      job.finish(&status, kGraceS, kGoneS);
      if (before_dying) before_dying();
      const char* name = sigabbrev_np(sig);
      std::vector<int> left = job.still_running();
      std::fprintf(stderr, "skelgen: stopped by SIG%s; ended %s and its processes%s\n", name ? name : "?",
                   what.c_str(), left.empty() ? "" : (" (" + std::to_string(left.size()) + " still running)").c_str());
      StopSignals::die_of(sig);
    }
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_s > 0 && waited > timeout_s) {
      job.finish(&status, kGraceS, kGoneS);
      report();
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(waited < 1 ? 2 : 20));
  }
  // The launcher has ended: whatever of its job still runs was left behind.
  job.leader_reaped();
  if (job.sweep(0) > 0) {
    job.finish(&status, kGraceS, kGoneS);
    if (ended) ended->left_behind = job.processes();
  }
  report();
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string temp_root() {
  const char* t = std::getenv("TMPDIR");
  struct stat sb {};
  if (t && *t == '/' && stat(t, &sb) == 0 && S_ISDIR(sb.st_mode)) return t;
  return "/tmp";
}

TempDir::TempDir(const std::string& what) {
  std::string tmpl = temp_root() + "/skelgen-" + what + "-XXXXXX";
  if (!mkdtemp(tmpl.data()))
    throw std::runtime_error("cannot create a temporary directory in " + temp_root() + ": " + std::strerror(errno));
  path_ = tmpl;
  live_temp_dirs().push_back(path_);
}

TempDir::~TempDir() {
  remove_tree(path_);
  auto& dirs = live_temp_dirs();
  dirs.erase(std::remove(dirs.begin(), dirs.end(), path_), dirs.end());
  if (int sig = StopSignals::noted()) StopSignals::die_of(sig);  // a stop no run acted on
}

std::string basename_of(const std::string& path) {
  auto s = path.rfind('/');
  return s == std::string::npos ? path : path.substr(s + 1);
}

std::string tail_lines(const std::string& text, int lines) {
  std::vector<std::string> all;
  std::istringstream in(text);
  std::string l;
  while (std::getline(in, l))
    if (l.find_first_not_of(" \t\r") != std::string::npos) all.push_back(l);
  std::string out;
  for (size_t i = all.size() > static_cast<size_t>(lines) ? all.size() - lines : 0; i < all.size(); ++i)
    out += (out.empty() ? "" : " | ") + all[i];
  return out;
}

}  // namespace skt::proc
