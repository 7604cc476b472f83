// The row-based lock models of MySQL/MariaDB (mysql_backend.hpp).
#include "mysql_backend.hpp"

#include "diagnostics.hpp"
#include "dialect.hpp"
#include "mysql_driver.hpp"
#include "sql/hold_recorder_json.hpp"

namespace sqlock::mysql::detail {

sql::dialect lock_dialect(const std::string& mode) {
  auto d = make_dialect(mode);
  d.encode_waits = sql::waits_to_json;
  d.encode_marks = sql::marks_to_json;
  return d;
}

namespace {

// Lease rows on the server's clock, through the engine: a bounded statement pool, kept.
class row_backend final : public sql::engine_backend {
 public:
  row_backend(const options& o, std::string url_text, std::size_t statements,
              std::shared_ptr<sql::connection_counter> counter)
      : engine_backend(
            sql_bundle(), lock_dialect(o.mode),
            [o, counter] { return open_connection(o, counter); }, std::move(url_text), statements,
            true, counter),
        opts_(o),
        diagnostics_(*this, o) {
    set_auto_migrate(o.auto_migrate);
    set_release_in_background(o.async_release);
    set_io_timeout(o.timeout);
  }

  std::string kind() const override { return "mysql"; }
  void verify(steady_time deadline) override {
    refuse_read_only(*this, opts_, deadline);
    engine_backend::verify(deadline);
  }
  store_diagnostics* diagnostics() noexcept override { return &diagnostics_; }

 private:
  const options opts_;
  mysql_diagnostics diagnostics_;
};

}  // namespace

std::shared_ptr<backend> open_rows(const options& o, std::string url_text, std::size_t statements,
                                   std::shared_ptr<sql::connection_counter> counter) {
  return std::make_shared<row_backend>(o, std::move(url_text), statements, std::move(counter));
}

}  // namespace sqlock::mysql::detail
