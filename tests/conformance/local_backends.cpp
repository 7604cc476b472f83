// The conformance suite on the backends that need no server: memory: and sqlite:.
#include "conformance.hpp"

namespace sqlock::test {

struct memory_traits {
  static const char* url_var() { return nullptr; }
  static std::string url(const std::string&, const std::filesystem::path& tmp) {
    return "memory:" + tmp.filename().string();
  }
};

struct sqlite_pessimistic {
  static const char* url_var() { return nullptr; }
  static std::string url(const std::string&, const std::filesystem::path& tmp) {
    return "sqlite:" + (tmp / "locks.db").string() + "?mode=pessimistic";
  }
};

struct sqlite_optimistic {
  static const char* url_var() { return nullptr; }
  static std::string url(const std::string&, const std::filesystem::path& tmp) {
    return "sqlite:" + (tmp / "locks.db").string() + "?mode=optimistic";
  }
};

using local_types = ::testing::Types<memory_traits, sqlite_pessimistic, sqlite_optimistic>;
INSTANTIATE_TYPED_TEST_SUITE_P(local, conformance, local_types);

}  // namespace sqlock::test
