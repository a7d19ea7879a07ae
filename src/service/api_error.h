#pragma once
/// The one error type of the service API: an HTTP status, a stable machine code and a message
/// that names the field (docs/service.md, "Errors"). The body is always {"code", "message"}.
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace d2k::service {

struct ApiError : std::runtime_error {
  int http;
  std::string code;
  ApiError(int http_status, std::string c, const std::string& message)
      : std::runtime_error(message), http(http_status), code(std::move(c)) {}
  nlohmann::json body() const { return {{"code", code}, {"message", what()}}; }
};

}  // namespace d2k::service
