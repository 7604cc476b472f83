// connect(url): a client over the backend the registry makes for the URL (a backend linked
// into the program, or a backend module loaded for its scheme).
#include "sqlock/backend.hpp"
#include "sqlock/client.hpp"

namespace sqlock {

client connect(const std::string& url, client_options opts) {
  return connect(url, std::move(opts), steady_time::max());
}

client connect(const std::string& url, client_options opts, steady_time deadline) {
  auto b = make_backend(url);
  b->verify(deadline);
  return client(std::move(b), std::move(opts));
}

}  // namespace sqlock
