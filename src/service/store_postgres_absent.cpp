// Built when libpqxx is not installed: a PostgreSQL URL is refused with what to install.
#include <stdexcept>

#include "service/store.h"

namespace d2k::service {

std::unique_ptr<Store> open_postgres_store(const std::string&) {
  throw std::runtime_error("--db postgresql://...: this d2k was built without libpqxx (apt-get install libpqxx-dev, rebuild)");
}

}  // namespace d2k::service
