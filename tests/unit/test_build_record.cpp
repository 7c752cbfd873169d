// The build record that lets skelgen predict reuse an executable: SHA-256
// against the FIPS 180-4 examples, and which changes make a build stale.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "skel/build_record.h"
#include "skel/process.h"

namespace sp = skt::predict;

TEST(BuildRecord, Sha256MatchesTheStandardsExamples) {
  EXPECT_EQ(sp::sha256_hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  EXPECT_EQ(sp::sha256_hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  EXPECT_EQ(sp::sha256_hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  EXPECT_EQ(sp::sha256_hex(std::string(1000000, 'a')),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
  // 55, 56 and 64 bytes: the padding's edge cases
  EXPECT_EQ(sp::sha256_hex(std::string(55, 'a')), "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318");
  EXPECT_EQ(sp::sha256_hex(std::string(56, 'a')), "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a");
  EXPECT_EQ(sp::sha256_hex(std::string(64, 'a')), "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb");
}

TEST(BuildRecord, ReusedOnlyWhileSourceAndExecutableAreTheSame) {
  skt::proc::TempDir dir("build-record-test");
  const std::string src = dir.file("skel.c"), exe = dir.file("skel.mpich");
  std::ofstream(src) << "int main(void) { return 0; }\n";
  sp::BuildInputs in = sp::build_inputs(src, "mpich", "no-such-compiler");
  EXPECT_EQ(sp::why_not_reusable(exe, in), "no executable yet");
  std::string tmp = sp::temp_build_path(exe);
  std::ofstream(tmp) << "pretend executable";
  sp::install_build(tmp, exe, in);
  EXPECT_EQ(access(tmp.c_str(), F_OK), -1);
  EXPECT_EQ(sp::why_not_reusable(exe, in), "");
  EXPECT_EQ(sp::why_not_reusable(exe, sp::build_inputs(src, "openmpi", "no-such-compiler")),
            "it was built for another MPI");
  std::ofstream(src, std::ios::app) << "\n";
  EXPECT_EQ(sp::why_not_reusable(exe, sp::build_inputs(src, "mpich", "no-such-compiler")), "the source changed");
  std::ofstream(exe, std::ios::app) << "!";
  EXPECT_EQ(sp::why_not_reusable(exe, in), "the executable changed since it was built");
  chmod(exe.c_str(), 0777);
  EXPECT_EQ(sp::why_not_reusable(exe, in), "the executable is writable by others");
  unlink(sp::record_path(exe).c_str());
  chmod(exe.c_str(), 0755);
  EXPECT_EQ(sp::why_not_reusable(exe, in), "no build record yet");
  std::ofstream(sp::record_path(exe)) << "skelgen build record 1\nsource_sha256 0\n";
  EXPECT_EQ(sp::why_not_reusable(exe, in), "the build record is damaged");
}

// A stop signal that comes while a TempDir lives but no run is going (predict
// between two runs: it took the default action and left the directory
// behind, once in a clean-clone CI) is noted; the directory removed when it
// goes, skelgen then dies of the signal.
TEST(TempDir, AStopBetweenRunsEndsSkelgenWithTheDirectoryRemoved) {
  std::string inside = ::testing::TempDir() + "/tempdir-stop-test-XXXXXX";  // not a TempDir: die_of removes those
  ASSERT_NE(mkdtemp(inside.data()), nullptr);
  EXPECT_EXIT(
      {
        setenv("TMPDIR", inside.c_str(), 1);
        skt::proc::TempDir dir("predict");
        std::ofstream(dir.file("run.out")) << "a run's output";
        raise(SIGTERM);  // noted, not acted on: no run is going
        std::ofstream(inside + "/still-here") << "";
      },
      ::testing::KilledBySignal(SIGTERM), "");
  std::vector<std::string> left;
  for (const auto& e : std::filesystem::directory_iterator(inside)) left.push_back(e.path().filename());
  EXPECT_EQ(left, std::vector<std::string>{"still-here"}) << "the directory must be gone, the code after the signal run";
  std::filesystem::remove_all(inside);
}
