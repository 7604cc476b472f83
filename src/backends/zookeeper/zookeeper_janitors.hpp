// Janitors: what an abandoned ZooKeeper request left behind, finished in the background on the
// handle's own completion thread, riding out connection losses (a node a create made for a
// caller that gave up, a release whose answer never came, the nodes of an owner whose create
// had an unknown outcome), so that no node holds a lock for nobody while the session lives.
#pragma once

#include <zookeeper/zookeeper.h>

#include <functional>
#include <string>

namespace sqlock::zookeeper::detail {

/// Deletes `path` in the background; `done` (if any) is called at its first answer (a
/// connection loss too, after which the delete is sent again without it), or at once when it
/// could not be sent (on the handle's completion thread, or on this one).
void remove_later(zhandle_t* zh, const std::string& path, std::function<void()> done = {}) noexcept;
/// Deletes, in the background, every child of `parent` whose name starts with `prefix`.
void purge_later(zhandle_t* zh, const std::string& parent, const std::string& prefix);

}  // namespace sqlock::zookeeper::detail
