#include "service/store.h"

#include <chrono>

namespace d2k::service {

double now_s() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

std::unique_ptr<Store> open_store(const std::string& url) {
  if (url.rfind("postgresql://", 0) == 0 || url.rfind("postgres://", 0) == 0) return open_postgres_store(url);
  if (url.rfind("sqlite:", 0) == 0) return open_sqlite_store(url.substr(7));
  return open_sqlite_store(url);
}

}  // namespace d2k::service
