// client.hpp gives a program what it needs to take locks and nothing of the backend-author API
// (sqlock/backend/): this file includes it alone and then declares, under the author API's
// names, entities of another kind. Should client.hpp pull any of them in, this file does not
// compile.
#include "sqlock/client.hpp"

#include <gtest/gtest.h>

#ifdef SQLOCK_BACKEND_MODULE
#error "client.hpp defines SQLOCK_BACKEND_MODULE (the backend-author API)"
#endif

namespace sqlock {
int lock_request, lease_info, renewal, acquisition, polling_acquisition, store_admin, schema_owner,
    stop_fd, register_backend, make_backend, registered_schemes, sleep_until, exchange_bound,
    jitter, backoff_delay, require_kind, capabilities_of, loss_listener, run_in_background;
namespace detail {
int add_builtin, register_module;
}  // namespace detail
}  // namespace sqlock

TEST(client_header, keeps_the_backend_author_api_out) {
  // What a user needs is there: the vocabulary and the client.
  sqlock::capabilities c;
  EXPECT_FALSE(c.fencing);  // every capability defaults to false
  EXPECT_STREQ(sqlock::to_string(sqlock::lock_kind::shared), "shared");
  sqlock::lock_request = 1;  // the author API's names are free here
  EXPECT_EQ(sqlock::lock_request, 1);
}
