// store_link: `sqlock serve`'s store, connected in the background (serve_link.hpp).
#include "serve_link.hpp"

#include <iostream>

namespace sqlock::cli {
namespace {
// One connection attempt: a store that does not answer costs no more than this.
constexpr milliseconds attempt_bound{5000};
}  // namespace

store_link::store_link(std::string url, client_options opts, milliseconds retry_every)
    : url_(std::move(url)), opts_(std::move(opts)), retry_every_(retry_every) {
  try {
    attempt();
  } catch (const connection_error& e) {
    why_ = shown(e.what());
    std::cerr << "sqlock serve: store unavailable, retrying every " << duration_text(retry_every_)
              << ": " << why_ << "\n";
    retry_ = std::thread([this] { retry_loop(); });
  }
}

store_link::~store_link() {
  {
    std::lock_guard g(m_);
    stopping_ = true;
  }
  cv_.notify_all();
  if (retry_.joinable()) retry_.join();
}

bool store_link::attempt() {
  auto c = std::make_shared<const client>(
      connect(url_, opts_, std::chrono::steady_clock::now() + attempt_bound));
  std::lock_guard g(m_);
  client_ = std::move(c);
  why_.clear();
  return true;
}

void store_link::retry_loop() {
  for (;;) {
    {
      std::unique_lock lk(m_);
      if (cv_.wait_for(lk, retry_every_, [this] { return stopping_; })) return;
    }
    try {
      if (attempt()) {
        std::cerr << "sqlock serve: store connected\n";
        return;
      }
    } catch (const std::exception& e) {
      std::lock_guard g(m_);
      why_ = shown(e.what());
    }
  }
}

std::shared_ptr<const client> store_link::get() const {
  std::lock_guard g(m_);
  return client_;
}

std::string store_link::why() const {
  std::lock_guard g(m_);
  return why_;
}

}  // namespace sqlock::cli
