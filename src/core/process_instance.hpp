// The one instance of a class whose thread serves the whole process (the closing-session
// waiter, the socket watchdog, the async driver), safe across fork(): a thread does not survive
// fork, and the parent's object may have been copied with its mutex held, so the child gets a fresh
// instance on first use and leaves the parent's copy alone. Never destroyed: a client destroyed
// during static destruction may still use it.
#pragma once

#include <pthread.h>

namespace sqlock {

/// The process's instance of T (made on first use; a fresh one in a child after fork()).
template <class T>
T& process_instance() {
  static T* current = nullptr;
  [[maybe_unused]] static const bool made = [] {
    current = new T;
    ::pthread_atfork(nullptr, nullptr, [] { current = new T; });
    return true;
  }();
  return *current;
}

}  // namespace sqlock
