// The store of `sqlock serve`, connected in the background: serve starts, serves its page and
// answers /healthz with 503 while the store is down, and connects as soon as it answers. A bad
// URL, refused credentials or a missing schema at the first attempt still end serve (64, 77,
// 78): those are not the store being down.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

#include "common.hpp"

namespace sqlock::cli {

class store_link {
 public:
  /// Tries once (throws config_error and its kinds); when the store did not answer, keeps
  /// trying in the background every `retry_every` until it does.
  store_link(std::string url, client_options opts, milliseconds retry_every);
  ~store_link();
  store_link(const store_link&) = delete;
  store_link& operator=(const store_link&) = delete;

  /// The client; null while not connected.
  std::shared_ptr<const client> get() const;
  /// Why the last attempt failed (passwords masked); "" once connected.
  std::string why() const;

 private:
  void retry_loop();
  bool attempt();  // one connect; true when connected

  const std::string url_;
  const client_options opts_;
  const milliseconds retry_every_;
  mutable std::mutex m_;
  std::condition_variable cv_;
  std::shared_ptr<const client> client_;  // guarded by m_
  std::string why_;                       // guarded by m_
  bool stopping_ = false;                 // guarded by m_
  std::thread retry_;
};

}  // namespace sqlock::cli
