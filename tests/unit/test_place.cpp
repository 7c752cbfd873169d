// Placement and prediction helpers: the knapsack node selection against
// trying every subset, and the file readers' errors.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <stdexcept>

#include "skel/place.h"
#include "skel/predict.h"

namespace pl = skt::place;
namespace sp = skt::predict;

namespace {

std::string write_temp(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

std::vector<pl::Node> random_inventory(std::mt19937& rng, int nodes, int groups) {
  std::vector<pl::Node> inv;
  for (int i = 0; i < nodes; ++i) {
    pl::Node n;
    n.name = "n" + std::to_string(i);
    n.cores = std::uniform_int_distribution<int>(0, 8)(rng);
    n.ghz = std::uniform_int_distribution<int>(15, 40)(rng) / 10.0;
    n.cache_mb = std::uniform_int_distribution<int>(2, 64)(rng);
    n.memory_gb = std::uniform_int_distribution<int>(4, 256)(rng);
    n.group = "g" + std::to_string(std::uniform_int_distribution<int>(0, groups - 1)(rng));
    inv.push_back(n);
  }
  return inv;
}

}  // namespace

TEST(Place, KnapsackMatchesBruteForceOnSmallInventories) {
  std::mt19937 rng(12345);
  int compared = 0, infeasible = 0;
  for (int trial = 0; trial < 400; ++trial) {
    std::vector<pl::Node> inv = random_inventory(rng, std::uniform_int_distribution<int>(1, 11)(rng), 3);
    double comm = std::uniform_real_distribution<double>(0, 1)(rng);
    pl::Weights w = pl::weights_from_ratio(comm, 1 - comm, trial % 3 == 0 ? 0.5 : 0);
    int np = std::uniform_int_distribution<int>(1, 30)(rng);
    for (const char* g : {"g0", "g1", "g2"}) {
      pl::Selection dp, brute;
      bool a = pl::select_in_group(inv, g, np, w, dp);
      bool b = pl::select_in_group_brute_force(inv, g, np, w, brute);
      ASSERT_EQ(a, b) << "trial " << trial << " group " << g << " np " << np;
      if (!a) {
        ++infeasible;
        continue;
      }
      ++compared;
      EXPECT_EQ(dp.cores, brute.cores) << "trial " << trial;
      EXPECT_NEAR(dp.value, brute.value, 1e-9) << "trial " << trial;
      // the DP's node set really has the cores and value it claims
      int cores = 0;
      double value = 0;
      for (size_t i : dp.nodes) {
        EXPECT_EQ(inv[i].group, g);
        cores += inv[i].cores;
        value += inv[i].cores * pl::core_score(inv[i], inv, w);
      }
      EXPECT_EQ(cores, dp.cores);
      EXPECT_NEAR(value, dp.value, 1e-9);
      EXPECT_GE(dp.cores, np);
    }
  }
  EXPECT_GT(compared, 300);
  EXPECT_GT(infeasible, 10);
}

TEST(Place, WeightsFollowTheCommunicationShare) {
  // two groups: fast CPUs with little cache, slower CPUs with much cache
  std::vector<pl::Node> inv = {{"fast0", 4, 3.6, 8, 32, "fast"},   {"fast1", 4, 3.6, 8, 32, "fast"},
                               {"cache0", 4, 2.4, 64, 32, "cache"}, {"cache1", 4, 2.4, 64, 32, "cache"}};
  std::vector<pl::Selection> compute = pl::select_nodes(inv, 8, pl::weights_from_ratio(0.05, 0.95, 0));
  std::vector<pl::Selection> comm = pl::select_nodes(inv, 8, pl::weights_from_ratio(0.9, 0.1, 0));
  ASSERT_EQ(compute.size(), 2u);
  ASSERT_EQ(comm.size(), 2u);
  EXPECT_EQ(compute[0].group, "fast");
  EXPECT_EQ(comm[0].group, "cache");
  // a job larger than every group has no selection
  EXPECT_TRUE(pl::select_nodes(inv, 9, pl::weights_from_ratio(0.5, 0.5, 0)).empty());
}

TEST(Place, HoldsNoMoreCoresThanNeeded) {
  // 6 processes: the 2+4 pair fits exactly; the faster 8-core node would hold 2 idle cores
  std::vector<pl::Node> inv = {{"big", 8, 4.0, 16, 0, "g"}, {"a", 2, 2.0, 4, 0, "g"}, {"b", 4, 2.0, 8, 0, "g"}};
  pl::Selection s;
  ASSERT_TRUE(pl::select_in_group(inv, "g", 6, pl::Weights{}, s));
  EXPECT_EQ(s.cores, 6);
  EXPECT_EQ(s.nodes, (std::vector<size_t>{1, 2}));
  EXPECT_EQ(pl::hostfile_for(inv, s, 6, false), "a:2\nb:4\n");
  EXPECT_EQ(pl::hostfile_for(inv, s, 5, true), "a slots=2\nb slots=3\n");
}

TEST(Place, InventoryErrorsNameTheLine) {
  auto fails_with = [](const std::string& text, const std::string& what) {
    std::string path = write_temp("inv.txt", text);
    try {
      pl::read_inventory(path);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails_with("name cores ghz group\nn0 4 2.0 g\n", "inv.txt:1: the header has no 'cache_mb' column");
  fails_with("name cores ghz cache_mb group\nn0 4 2.0 8\n", "inv.txt:2: 4 fields");
  fails_with("name cores ghz cache_mb group\nn0 four 2.0 8 g\n", "inv.txt:2: cores 'four'");
  fails_with("name cores ghz cache_mb group\nn0 4 2.0 8 g\nn0 4 2.0 8 g\n", "inv.txt:3: node 'n0' listed twice");
  fails_with("name cores ghz cache_mb group speed\n", "unknown column 'speed'");
  fails_with("# nothing\n", "no nodes");
  std::string ok = write_temp("inv.txt", "# a comment\ngroup name ghz cores cache_mb memory_gb\ng1 n0 2.5 4 8 64 # x\n");
  std::vector<pl::Node> inv = pl::read_inventory(ok);
  ASSERT_EQ(inv.size(), 1u);
  EXPECT_EQ(inv[0].name, "n0");
  EXPECT_EQ(inv[0].group, "g1");
  EXPECT_EQ(inv[0].cores, 4);
  EXPECT_DOUBLE_EQ(inv[0].memory_gb, 64);
}

TEST(Place, CandidatesFile) {
  std::string path = write_temp("cand.ini",
                                "# three kinds\n[here]\nlauncher = mpiexec.mpich -f {hostfile} -n {np}\n"
                                "hostfile = hosts.txt\n[batch]\npartition = big\n[sim]\nplatform = /p.xml\n");
  std::vector<sp::Target> t = pl::read_candidates(path);
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].kind, sp::TargetKind::kLocal);
  EXPECT_EQ(t[0].hostfile, ::testing::TempDir() + "/hosts.txt");  // relative to the file
  EXPECT_EQ(t[1].kind, sp::TargetKind::kSlurm);
  EXPECT_EQ(t[2].kind, sp::TargetKind::kSimgrid);
  EXPECT_EQ(t[2].platform, "/p.xml");
  for (const auto& [text, what] : std::vector<std::pair<std::string, std::string>>{
           {"launcher = x\n", "cand.ini:1: a setting before the first [name]"},
           {"[a]\nlauncher x\n", "cand.ini:2: expected key = value"},
           {"[a]\nspeed = 3\n", "unknown key 'speed'"},
           {"[a]\nkind = cloud\n", "kind 'cloud'"},
           {"[a]\nkind = simgrid\n", "needs platform"},
           {"[a]\n[a]\n", "named twice"},
           {"", "no candidates"}}) {
    std::string p = write_temp("cand.ini", text);
    try {
      pl::read_candidates(p);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const std::runtime_error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  }
}

TEST(Predict, PlatformHostsOfTheShippedPlatforms) {
  for (const char* f : {"homogeneous16.xml", "heterogeneous16.xml"}) {
    std::vector<std::string> h = sp::platform_hosts(std::string(SKEL_PLATFORM_DIR) + "/" + f);
    ASSERT_EQ(h.size(), 16u) << f;
    EXPECT_EQ(h.front(), "node-0");
    EXPECT_EQ(h.back(), "node-15");
  }
  std::string hosts = write_temp("p.xml", "<platform version=\"4.1\"><zone id=\"z\" routing=\"Full\">"
                                          "<host id=\"a\" speed=\"1Gf\"/><cluster id=\"c\" prefix=\"c-\" "
                                          "suffix=\".x\" radical=\"0-1,5\" speed=\"1Gf\" bw=\"1GBps\" lat=\"0\"/>"
                                          "<host_link id=\"l\" up=\"u\" down=\"d\"/></zone></platform>");
  EXPECT_EQ(sp::platform_hosts(hosts), (std::vector<std::string>{"a", "c-0.x", "c-1.x", "c-5.x"}));
  std::string quoted = write_temp("p.xml", "<platform><host id = 'b' speed='1Gf'/>\n<host\tspeed=\"2Gf\" id=\"d\"></host>"
                                           "<hostess id=\"no\"/></platform>");
  EXPECT_EQ(sp::platform_hosts(quoted), (std::vector<std::string>{"b", "d"}));
  EXPECT_THROW(sp::platform_hosts(write_temp("p.xml", "<platform><host speed=\"1Gf\"/></platform>")), std::runtime_error);
  EXPECT_THROW(sp::platform_hosts(write_temp("p.xml", "<html></html>")), std::runtime_error);
  EXPECT_THROW(sp::platform_hosts(write_temp("p.xml", "<platform></platform>")), std::runtime_error);
}

TEST(Predict, ResultLineAndSkeletonMeta) {
  sp::SkeletonRun r;
  EXPECT_TRUE(sp::parse_result("noise\nSKELGEN_RESULT measured_s=0.5 predicted_s=4.5 scale=10\n", r));
  EXPECT_DOUBLE_EQ(r.predicted_s, 4.5);
  EXPECT_EQ(r.scale, 10u);
  EXPECT_FALSE(sp::parse_result("", r));
  EXPECT_FALSE(sp::parse_result("SKELGEN_RESULT measured_s=1 predicted_s=2 scale=1\n"
                                "SKELGEN_RESULT measured_s=1 predicted_s=2 scale=1\n", r));  // two ranks printed
  EXPECT_FALSE(sp::parse_result("SKELGEN_RESULT measured_s=x\n", r));
  std::string exe = write_temp("skel.bin", std::string("\x7f" "ELF\0\0junk", 9) +
                                               "SKELGEN_META ranks=4 scale=10 traced_mpi=openmpi traced_s=2.5 "
                                               "comm_s=0.5 comp_s=2 kernel_flops_per_s=4e9 built_with=simgrid ;more");
  sp::SkeletonInfo info = sp::read_skeleton_info(exe);
  EXPECT_EQ(info.ranks, 4);
  EXPECT_EQ(info.built_with, "simgrid");
  EXPECT_EQ(info.traced_mpi, "openmpi");
  EXPECT_DOUBLE_EQ(info.comp_s, 2);
  EXPECT_THROW(sp::read_skeleton_info(write_temp("x.c", "int main(){}")), std::runtime_error);
  EXPECT_THROW(sp::read_skeleton_info(write_temp("x.c", "\"SKELGEN_META ranks=two\"")), std::runtime_error);
}

TEST(Predict, LauncherFlavorLooksPastAWrapper) {
  namespace sp = skt::predict;
  EXPECT_EQ(sp::launcher_flavor({"mpiexec.mpich", "-n", "2"}), "mpich");
  EXPECT_EQ(sp::launcher_flavor({"mpirun.openmpi", "-n", "4"}), "openmpi");
  // tools/emucluster before the launcher: the launcher's MPI, not the wrapper's (none)
  EXPECT_EQ(sp::launcher_flavor({"/x/tools/emucluster", "run", "c.ini", "-p", "a", "mpirun.openmpi",
                                 "--oversubscribe", "-n", "4", "--"}),
            "openmpi");
  EXPECT_EQ(sp::launcher_flavor({"emucluster", "run", "c.ini", "mpiexec.mpich", "-n", "2", "--"}), "mpich");
  EXPECT_EQ(sp::launcher_flavor({"./my-launcher", "-n", "2"}), "");
  EXPECT_EQ(sp::launcher_flavor({}), "");
  sp::Target t;
  t.launcher = "tools/emucluster run c.ini -p a mpirun.openmpi --oversubscribe -n {np} --";
  EXPECT_EQ(sp::mpi_for(t, "mpich"), "openmpi");
}
