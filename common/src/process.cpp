#include "skel/process.h"

#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
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

// Ends the child `pid`, with its process group if it leads one: SIGTERM
// (MPI launchers pass it on to their ranks), SIGKILL for what is left once
// the leader has ended or after `grace_s`, then reaps the leader (not
// before: while it is unreaped, its group id cannot go to another process).
void end_child(pid_t pid, bool own_group, int* status, double grace_s) {
  const pid_t target = own_group ? -pid : pid;
  kill(target, SIGTERM);
  auto start = std::chrono::steady_clock::now();
  for (;;) {
    siginfo_t info{};
    int rc = waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT);
    if ((rc == 0 && info.si_pid == pid) || (rc < 0 && errno != EINTR)) break;
    if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > grace_s) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  kill(target, SIGKILL);
  while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
  }
}

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
  int rc = posix_spawnp(&pid, args[0], &fa, &attr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  posix_spawnattr_destroy(&attr);
  if (rc != 0) {
    std::remove(out_path.c_str());
    std::remove(err_path.c_str());
    throw std::runtime_error(argv[0] + ": cannot run: " + std::strerror(rc));
  }
  RunOutput r;
  r.status = wait_passing_stops(pid, true, timeout_s, basename_of(argv[0]), [&] {
    std::remove(out_path.c_str());
    std::remove(err_path.c_str());
  });
  r.out = slurp_and_remove(out_path);
  r.err = slurp_and_remove(err_path);
  return r;
}

int wait_passing_stops(int pid, bool own_group, double timeout_s, const std::string& what,
                       const std::function<void()>& before_dying) {
  StopSignals stop_signals;
  auto start = std::chrono::steady_clock::now();
  int status = 0;
  for (;;) {
    pid_t w = waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    if (w < 0 && errno != EINTR) break;
    if (int sig = g_stop_signal) {  // skelgen is told to stop: the run goes first
      end_child(pid, own_group, &status, 3.0);
      if (before_dying) before_dying();
      const char* name = sigabbrev_np(sig);
      std::fprintf(stderr, "skelgen: stopped by SIG%s; ended %s and its processes\n", name ? name : "?",
                   what.c_str());
      StopSignals::die_of(sig);
    }
    double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (timeout_s > 0 && waited > timeout_s) {
      kill(own_group ? -pid : pid, SIGKILL);
      while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
      }
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(waited < 1 ? 2 : 20));
  }
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
