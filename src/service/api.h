#pragma once
/// `d2k serve`: the HTTP API on cpp-httplib (docs/service.md, docs/openapi.yaml). It only reads and
/// writes the queue; workers run the evaluations.
#include <atomic>
#include <memory>
#include <string>

#include "service/job_spec.h"
#include "service/store.h"

namespace httplib {
class Server;
}

namespace d2k::service {

struct ServerConfig {
  std::string dataset;      ///< the dataset folder (GET /v1/tasks; POST checks the task exists)
  Limits limits;
  int max_attempts = 3;     ///< per job, before RUNTIME_ERROR
  int threads = 64;         ///< connections served at once (an open event stream holds one)
  double poll_s = 0.25;     ///< how often an event stream looks at the queue
};

class ApiServer {
 public:
  ApiServer(Store& store, ServerConfig cfg);
  ~ApiServer();
  /// Binds (port 0: any free port) and returns the port; throws when it cannot.
  int bind(const std::string& host, int port);
  /// Serves until stop(); returns false when the listener failed.
  bool serve();
  void stop();

 private:
  void guards();
  void routes();
  Store& store_;
  ServerConfig cfg_;
  std::unique_ptr<httplib::Server> http_;
  struct State;
  std::unique_ptr<State> st_;
};

}  // namespace d2k::service
