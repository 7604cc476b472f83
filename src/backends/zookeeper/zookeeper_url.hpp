// The checks of a ZooKeeper backend's options (zookeeper_url.cpp): what open() refuses before
// it connects, whether the options came from a URL or from code.
#pragma once

#include <string>

#include "sqlock/zookeeper/zookeeper.hpp"

namespace sqlock::zookeeper::detail {

/// `o` when usable; config_error naming the bad option otherwise.
options checked_options(options o);
/// The root path without trailing '/' ("/sqlock" when empty); config_error for a path that is
/// not absolute or has an empty, ".", ".." or "zookeeper" (first) component.
std::string normalized_root(std::string r);

}  // namespace sqlock::zookeeper::detail
