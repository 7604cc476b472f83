// Releases that do not wait (URL option release=async): the delete of a held node
// is sent and unlock() returns; its reply comes on the C client's completion thread. A delete
// whose reply is a connection loss is sent again until the server answers (the node must not
// hold for nobody while the session lives), and while it is, the backend's next acquire of that
// lock waits for it, bounded by its own deadline. A delete merely in flight needs no wait: the
// server answers one session's requests in the order they were sent, so an acquire sent after
// it on the same session finds the node gone. Internal.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>

#include "zookeeper_connection.hpp"

namespace sqlock::zookeeper::detail {

class release_tracker {
 public:
  /// Sends delete(`path`), a node under `parent`, on session `s` without waiting for the answer.
  /// ZOK when sent; the client's code when it was not (nothing is pending then).
  int send(session& s, const std::string& parent, const std::string& path);
  /// Waits until no delete this tracker sent under `parent` on session `epoch` is being sent
  /// again after a connection loss, or until `until`. Returns at once in the common case.
  void settle(const std::string& parent, std::uint64_t epoch, steady_time until);

  /// What the completions share with the tracker (they may outlive it).
  struct state {
    std::mutex m;
    std::condition_variable cv;
    std::map<std::pair<std::uint64_t, std::string>, int> retrying;  // by (epoch, parent)
  };

 private:
  std::shared_ptr<state> st_ = std::make_shared<state>();
};

}  // namespace sqlock::zookeeper::detail
