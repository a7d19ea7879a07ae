// d2k worker --slurm against a real single-node Slurm (slurmctld + slurmd + munged started here in
// a temp folder, a fake GPU as gres: a character device, `mknod c 1 3`): evaluations run as Slurm
// jobs and come back, and a job Slurm accepted and then lost (as in a controller crash) is found
// missing by the squeue reconcile and submitted again. Skips, saying why, without root or the
// Slurm/munge binaries.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <fstream>

#include "service/job_spec.h"
#include "service/slurm.h"
#include "service_fixture.h"

namespace d2k::service {
namespace {

namespace fs = std::filesystem;
using nlohmann::json;
using testing::TempDir;

bool on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  std::stringstream ss(path ? path : "");
  for (std::string d; std::getline(ss, d, ':');)
    if (::access((d + "/" + name).c_str(), X_OK) == 0) return true;
  for (const char* d : {"/usr/sbin", "/sbin"})
    if (::access((std::string(d) + "/" + name).c_str(), X_OK) == 0) return true;
  return false;
}

int sh(const std::string& cmd) { return std::system(cmd.c_str()); }

class Slurm : public ::testing::Test {
 protected:
  void SetUp() override {
    if (::geteuid() != 0) GTEST_SKIP() << "slurmd and mknod need root: not tested";
    for (const char* b : {"munged", "slurmctld", "slurmd", "sbatch", "squeue", "sinfo"})
      if (!on_path(b)) GTEST_SKIP() << b << " not found (apt-get install slurmctld slurmd slurm-client munge): not tested";
    const fs::path d = tmp_.path;
    for (const char* sub : {"spool", "state", "munge", "log", "work"}) fs::create_directories(d / sub);
    ASSERT_EQ(::mknod((d / "fakegpu0").c_str(), S_IFCHR | 0666, makedev(1, 3)), 0);
    ASSERT_EQ(sh("dd if=/dev/urandom of=" + (d / "munge/key").string() + " bs=1024 count=1 2>/dev/null && chmod 600 " +
                 (d / "munge/key").string()), 0);
    const std::string m = (d / "munge").string();
    ASSERT_EQ(sh("munged --key-file=" + m + "/key --socket=" + m + "/sock --pid-file=" + m + "/pid --log-file=" + m +
                 "/log --seed-file=" + m + "/seed -f"), 0);
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::string h = host;
    h = h.substr(0, h.find('.'));
    const std::string s = d.string();
    std::ofstream(d / "slurm.conf") << "ClusterName=d2ktest\nSlurmctldHost=" << h << "\nSlurmUser=root\nSlurmdUser=root\n"
        << "AuthType=auth/munge\nAuthInfo=socket=" << m << "/sock\nCredType=cred/munge\n"
        << "SlurmctldPort=" << testing::free_port() << "\nSlurmdPort=" << testing::free_port() << "\n"
        << "StateSaveLocation=" << s << "/state\nSlurmdSpoolDir=" << s << "/spool\nSlurmctldPidFile=" << s
        << "/ctld.pid\nSlurmdPidFile=" << s << "/d.pid\nProctrackType=proctrack/linuxproc\nTaskPlugin=task/none\n"
        << "JobAcctGatherType=jobacct_gather/none\nSelectType=select/cons_tres\nSelectTypeParameters=CR_Core\n"
        << "GresTypes=gpu\nSlurmctldLogFile=" << s << "/log/ctld.log\nSlurmdLogFile=" << s << "/log/d.log\n"
        << "ReturnToService=2\nMpiDefault=none\nNodeName=" << h << " CPUs=2 RealMemory=500 Gres=gpu:1 State=UNKNOWN\n"
        << "PartitionName=main Nodes=" << h << " Default=YES MaxTime=INFINITE State=UP\n";
    std::ofstream(d / "gres.conf") << "NodeName=" << h << " Name=gpu File=" << s << "/fakegpu0\n";
    ::setenv("SLURM_CONF", (d / "slurm.conf").c_str(), 1);
    ASSERT_EQ(sh("slurmctld -i -f " + s + "/slurm.conf"), 0);
    started_ = true;
    ASSERT_EQ(sh("slurmd -f " + s + "/slurm.conf"), 0);
    for (int i = 0; i < 100 && sh("sinfo -h -o %t 2>/dev/null | grep -q idle") != 0; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    ASSERT_EQ(sh("sinfo -h -o %t | grep -q idle"), 0) << "the Slurm node did not come up";
  }
  void TearDown() override {
    if (!started_) return;
    const std::string s = tmp_.path.string();
    for (const char* pid : {"/d.pid", "/ctld.pid", "/munge/pid"}) sh("kill $(cat " + s + pid + ") 2>/dev/null");
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    ::unsetenv("SLURM_CONF");
  }
  std::string submit(Store& st) {
    JobSpec spec;
    spec.task = "fused_add_rmsnorm";
    spec.files["solution.cu"] = "int x;\n";
    NewJob j;
    j.token_hash = "t";
    j.spec_json = to_json(spec).dump();
    j.spec_sha256 = sha256_hex(j.spec_json);
    return st.submit(j).id;
  }
  /// Runs the Slurm loop until the jobs are done (or 90 s).
  void drain(Store& st, const SlurmConfig& sc, std::size_t n) {
    WorkerConfig w;
    w.evaluator = testing::kStub;
    w.work_dir = (tmp_.path / "work").string();
    w.poll_s = 0.2;
    w.lease_s = 30;
    std::atomic<bool> stop{false};
    std::thread loop([&] { slurm_loop(st, w, sc, "slurm-test", stop); });
    for (int i = 0; i < 450 && std::size_t(st.stats().by_state["done"]) < n; ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    stop = true;
    loop.join();
  }
  TempDir tmp_;
  bool started_ = false;
};

TEST_F(Slurm, EvaluationsRunAsSlurmJobs) {
  auto st = open_sqlite_store((tmp_.path / "q.sqlite").string());
  std::vector<std::string> ids{submit(*st), submit(*st), submit(*st)};
  drain(*st, SlurmConfig{}, ids.size());
  for (auto& id : ids) {
    auto row = st->get(id);
    ASSERT_EQ(row->state, "done") << id;
    EXPECT_EQ(row->verdict, "PASSED") << *row->result_json;
    json r = json::parse(*row->result_json);
    EXPECT_EQ(r["traces"][0]["message"], id);
    EXPECT_FALSE(r["slurm_job"].get<std::string>().empty());
    EXPECT_NE(r["log_tail"].get<std::string>().find("stub: evaluating"), std::string::npos);
  }
}

TEST_F(Slurm, AJobSlurmLostIsSubmittedAgain) {
  // sbatch that accepts the first submission and drops it, as a controller that crashes just
  // after answering: squeue never hears of it.
  const fs::path marker = tmp_.path / "lost-once", wrapper = tmp_.path / "sbatch-loses-first";
  std::ofstream(wrapper) << "#!/bin/sh\nif [ ! -e " << marker << " ]; then touch " << marker
                         << "; echo 999999; exit 0; fi\nexec sbatch \"$@\"\n";
  fs::permissions(wrapper, fs::perms::owner_all);
  auto st = open_sqlite_store((tmp_.path / "q.sqlite").string());
  const std::string id = submit(*st);
  SlurmConfig sc;
  sc.sbatch = wrapper.string();
  sc.lost_after_s = 2;
  drain(*st, sc, 1);
  auto row = st->get(id);
  ASSERT_EQ(row->state, "done");
  EXPECT_EQ(row->verdict, "PASSED") << *row->result_json;
  json r = json::parse(*row->result_json);
  ASSERT_TRUE(r.contains("notes")) << r;
  EXPECT_NE(r["notes"].dump().find("999999 unknown to squeue"), std::string::npos) << r;
  EXPECT_NE(r["slurm_job"], "999999");
}

}  // namespace
}  // namespace d2k::service
