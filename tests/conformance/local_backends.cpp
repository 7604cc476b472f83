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

/// compat=shedlock: ShedLock's table and rules (docs/interop.md), created on first use.
struct sqlite_shedlock {
  static constexpr std::size_t max_name_chars = 64;
  static const char* url_var() { return nullptr; }
  static std::string url(const std::string&, const std::filesystem::path& tmp) {
    return "sqlite:" + (tmp / "locks.db").string() + "?compat=shedlock";
  }
};

using local_types =
    ::testing::Types<memory_traits, sqlite_pessimistic, sqlite_optimistic, sqlite_shedlock>;
INSTANTIATE_TYPED_TEST_SUITE_P(local, conformance, local_types);

}  // namespace sqlock::test
