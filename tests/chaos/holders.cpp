#include "holders.hpp"

#include <stdexcept>

#include "sqlock/semaphore.hpp"
#include "sqlock/shared_mutex.hpp"

namespace sqlock::chaos {

run_kind parse_run_kind(const std::string& text) {
  if (text == "exclusive") return run_kind::exclusive;
  if (text == "shared") return run_kind::shared;
  if (text == "semaphore") return run_kind::semaphore;
  throw std::invalid_argument("--kind must be exclusive, shared or semaphore, not '" + text + "'");
}

namespace {

class mutex_holder final : public holder {
 public:
  mutex_holder(const sqlock::client& c, const holder_options& o)
      : l_(c.make_lock(o.name, {.lease = o.lease})) {
    l_.on_lost(o.lost);
  }
  bool acquire(std::chrono::milliseconds timeout, bool) override {
    return l_.try_lock_for(timeout);
  }
  std::uint64_t fence() const override { return l_.fence(); }
  std::string owner() const override { return l_.owner(); }
  std::string kind() const override { return "exclusive"; }
  bool verify() override { return l_.renew(); }
  bool release() override {
    l_.unlock();
    return l_.lost();
  }
  const std::string& name() const override { return l_.name(); }

 private:
  sqlock::mutex l_;
};

class shared_holder final : public holder {
 public:
  shared_holder(const sqlock::client& c, const holder_options& o)
      : m_(c.make_shared_mutex(o.name, {.lease = o.lease})) {
    m_.on_lost(o.lost);
  }
  bool acquire(std::chrono::milliseconds timeout, bool writer) override {
    writer_ = writer;
    return writer ? m_.try_lock_for(timeout) : m_.try_lock_shared_for(timeout);
  }
  std::uint64_t fence() const override { return m_.fence(); }
  std::string owner() const override { return m_.owner(); }
  std::string kind() const override { return writer_ ? "exclusive" : "shared"; }
  bool verify() override { return !m_.lost(); }
  bool release() override {
    if (writer_)
      m_.unlock();
    else
      m_.unlock_shared();
    return m_.lost();
  }
  const std::string& name() const override { return m_.name(); }

 private:
  sqlock::shared_mutex m_;
  bool writer_ = false;
};

class permit_holder final : public holder {
 public:
  permit_holder(const sqlock::client& c, const holder_options& o)
      : s_(c.make_semaphore(o.name, o.permits, {.lease = o.lease})), lost_(o.lost) {}
  bool acquire(std::chrono::milliseconds timeout, bool) override {
    p_ = s_.try_acquire_for(timeout);
    if (!p_) return false;
    p_.on_lost(lost_);  // a loss before this line is found by verify()
    return true;
  }
  std::uint64_t fence() const override { return p_.fence(); }
  std::string owner() const override { return p_.owner(); }
  std::string kind() const override { return "permit/" + std::to_string(s_.permits()); }
  bool verify() override { return p_.renew(); }
  bool release() override {
    p_.release();
    return p_.lost();
  }
  const std::string& name() const override { return s_.name(); }

 private:
  sqlock::semaphore s_;
  std::function<void(const std::string&)> lost_;
  sqlock::permit p_;
};

}  // namespace

std::unique_ptr<holder> make_holder(const sqlock::client& c, const holder_options& o) {
  switch (o.kind) {
    case run_kind::shared:
      return std::make_unique<shared_holder>(c, o);
    case run_kind::semaphore:
      return std::make_unique<permit_holder>(c, o);
    case run_kind::exclusive:
      break;
  }
  return std::make_unique<mutex_holder>(c, o);
}

}  // namespace sqlock::chaos
