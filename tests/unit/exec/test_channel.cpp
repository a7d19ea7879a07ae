// The parent-worker channel: JSON lines both ways, and descriptors passed with a message
// (the engine sends the worker one descriptor per shared device buffer this way).
#include <gtest/gtest.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstring>
#include <string>

#include "exec/sandbox.h"
#include "exec/worker.h"

namespace d2k {
namespace {

struct SocketPair {
  int fd[2] = {-1, -1};
  SocketPair() { EXPECT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fd), 0); }
  ~SocketPair() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
};

TEST(Channel, MessagesCarryDescriptorsInOrder) {
  SocketPair sp;
  ParentChannel parent(sp.fd[0]);
  WorkerChannel worker(sp.fd[1]);
  int p1[2], p2[2];
  ASSERT_EQ(pipe(p1), 0);
  ASSERT_EQ(pipe(p2), 0);
  ASSERT_TRUE(parent.send({{"cmd", "map"}, {"n", 2}}, {p1[1], p2[1]}));
  ASSERT_TRUE(parent.send({{"cmd", "after"}}));
  close(p1[1]);
  close(p2[1]);

  auto m = worker.receive(5);
  ASSERT_TRUE(m.has_value());
  EXPECT_EQ((*m)["cmd"], "map");
  std::vector<int> fds = worker.take_fds(2);
  ASSERT_EQ(fds.size(), 2u);
  // The received descriptors are the pipes' write ends, in the order sent.
  for (int i = 0; i < 2; ++i) {
    const std::string text = "via fd " + std::to_string(i);
    ASSERT_EQ(write(fds[i], text.data(), text.size()), static_cast<ssize_t>(text.size()));
    close(fds[i]);
  }
  char buf[32] = {};
  ASSERT_GT(read(p1[0], buf, sizeof buf - 1), 0);
  EXPECT_STREQ(buf, "via fd 0");
  std::memset(buf, 0, sizeof buf);
  ASSERT_GT(read(p2[0], buf, sizeof buf - 1), 0);
  EXPECT_STREQ(buf, "via fd 1");
  close(p1[0]);
  close(p2[0]);

  auto next = worker.receive(5);
  ASSERT_TRUE(next.has_value());
  EXPECT_EQ((*next)["cmd"], "after");
  EXPECT_TRUE(worker.take_fds(1).empty()) << "no descriptor came with the second message";
}

TEST(Channel, ReceiveTimesOutWithoutAMessage) {
  SocketPair sp;
  WorkerChannel worker(sp.fd[1]);
  EXPECT_FALSE(worker.receive(0.05).has_value());
}

}  // namespace
}  // namespace d2k
