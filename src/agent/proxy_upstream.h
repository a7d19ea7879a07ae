#pragma once
/// One HTTP call to an upstream API through libcurl's multi interface, driven by the caller's
/// thread: wait_headers() runs the transfer until the status line and headers are in (so the
/// proxy can answer the agent with the upstream's status), then next() hands over body bytes as
/// they arrive (so a stream reaches the agent chunk by chunk, never buffered whole).
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace d2k::agent {

struct UpstreamRequest {
  std::string method = "POST";
  std::string url;
  std::vector<std::pair<std::string, std::string>> headers;
  std::string body;
  double connect_timeout_s = 10;
};

class UpstreamCall {
 public:
  explicit UpstreamCall(const UpstreamRequest& req);
  ~UpstreamCall();
  UpstreamCall(const UpstreamCall&) = delete;
  UpstreamCall& operator=(const UpstreamCall&) = delete;

  /// Runs until the final response's headers are in. False when the transfer failed first
  /// (error() says why, without any header of the request).
  bool wait_headers();
  int status() const;
  /// Response headers, names lower-cased, in the order received.
  const std::vector<std::pair<std::string, std::string>>& headers() const;
  std::string header(const std::string& lower_name) const;
  /// Moves the body bytes received so far into `out` (waiting for some when there are none yet).
  /// False once the body is complete and nothing is left; error() is then set if it ended early.
  bool next(std::string& out);
  const std::string& error() const;

 private:
  struct State;
  std::unique_ptr<State> s_;
};

/// Starts libcurl once per process (curl_global_init is not thread-safe).
void curl_global_once();

}  // namespace d2k::agent
