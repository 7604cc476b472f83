// The row_kinds suite on SQLite, pessimistic and optimistic, one database file per program run.
#include <filesystem>

#include "row_kinds_suite.hpp"

namespace sqlock::test {
namespace {

std::string db_url(const char* mode) {
  static const temp_dir dir;  // removed when the program ends
  return "sqlite:" + (dir.path / "kinds.db").string() + "?mode=" + mode;
}

INSTANTIATE_TEST_SUITE_P(
    sqlite, row_kinds,
    ::testing::Values(kinds_target{"pessimistic", [] { return db_url("pessimistic"); }},
                      kinds_target{"optimistic", [] { return db_url("optimistic"); }}),
    kinds_label);

}  // namespace
}  // namespace sqlock::test
