// fake_judge_server FIXTURE PORT_FILE [SECONDS]: serves the fake judge (fake_judge.h) on a free
// port of 127.0.0.1, writes the port to PORT_FILE, and stops after SECONDS (default 300) or on
// SIGTERM. For shell tests of `d2k score` and `d2k design draft`.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "unit/capability/fake_judge.h"

namespace {
volatile std::sig_atomic_t stop = 0;
void on_signal(int) { stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::fprintf(stderr, "usage: fake_judge_server FIXTURE PORT_FILE [SECONDS]\n");
    return 2;
  }
  std::signal(SIGTERM, on_signal);
  std::signal(SIGINT, on_signal);
  d2k::test::FakeJudge judge(argv[1]);
  const std::string url = judge.anthropic_url();
  {
    std::ofstream out(std::string(argv[2]) + ".tmp");
    out << url.substr(url.rfind(':') + 1) << "\n";
  }
  std::rename((std::string(argv[2]) + ".tmp").c_str(), argv[2]);
  const int seconds = argc > 3 ? std::atoi(argv[3]) : 300;
  for (int i = 0; i < seconds * 10 && !stop; ++i) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  std::fprintf(stderr, "fake_judge_server: %d request(s)\n", judge.requests());
  return 0;
}
