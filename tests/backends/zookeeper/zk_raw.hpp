// A raw ZooKeeper C-client handle for the ZooKeeper test programs, independent of the backend:
// to count and meddle with the znodes of a lock behind the backend's back.
#pragma once

#include <gtest/gtest.h>
#include <zookeeper/zookeeper.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "sqlock/url.hpp"
#include "sqlock/zookeeper/zookeeper.hpp"

namespace sqlock::test {

// A raw C-client handle, independent of the backend, to look at and meddle with znodes.
class raw_zk {
 public:
  explicit raw_zk(const std::string& url_text, const clientid_t* id = nullptr,
                  int timeout = 10000) {
    auto u = url::parse(url_text);
    for (const auto& h : u.hosts) {
      if (!hosts_.empty()) hosts_ += ",";
      hosts_ += h.host + ":" + std::to_string(h.port ? h.port : 2181);
    }
    root_ = u.path.empty() || u.path == "/" ? "/sqlock" : u.path;
    zh_ = zookeeper_init2(hosts_.c_str(), watcher, timeout, id, this, 0, [](const char*) {});
    if (!zh_) throw std::runtime_error("zookeeper_init failed");
    std::unique_lock lk(m_);
    if (!cv_.wait_for(lk, std::chrono::seconds(20), [&] { return connected_; }))
      throw std::runtime_error("raw ZooKeeper handle did not connect");
  }
  ~raw_zk() { close(); }
  raw_zk(const raw_zk&) = delete;
  raw_zk& operator=(const raw_zk&) = delete;

  void close() {
    if (zh_) zookeeper_close(zh_);
    zh_ = nullptr;
  }
  std::string parent(const std::string& name) const {
    return root_ + "/locks/" + zookeeper::znode_name(name);
  }
  // Queue nodes under a lock's parent; -1 when the parent does not exist.
  int queue_length(const std::string& name) {
    auto kids = children(name);
    return kids ? static_cast<int>(kids->size()) : -1;
  }
  // The child names under a lock's parent; nullopt when the parent does not exist.
  std::optional<std::vector<std::string>> children(const std::string& name) {
    String_vector v{};
    int rc = zoo_get_children(zh_, parent(name).c_str(), 0, &v);
    if (rc == ZNONODE) return std::nullopt;
    if (rc != ZOK) throw std::runtime_error(std::string("get_children: ") + zerror(rc));
    std::vector<std::string> out(v.data, v.data + v.count);
    deallocate_String_vector(&v);
    return out;
  }
  // The C client's handle (for requests the helpers here do not cover).
  zhandle_t* handle() const { return zh_; }
  // No znodes left for any of `names` (parents may linger until the container check runs).
  ::testing::AssertionResult no_orphans(const std::vector<std::string>& names) {
    for (const auto& n : names) {
      int q = queue_length(n);
      if (q > 0) return ::testing::AssertionFailure() << q << " orphan node(s) under " << parent(n);
    }
    return ::testing::AssertionSuccess();
  }

 private:
  static void watcher(zhandle_t*, int type, int state, const char*, void* ctx) {
    auto* self = static_cast<raw_zk*>(ctx);
    if (type != ZOO_SESSION_EVENT) return;
    std::lock_guard g(self->m_);
    self->connected_ = state == ZOO_CONNECTED_STATE;
    self->cv_.notify_all();
  }
  std::string hosts_, root_;
  zhandle_t* zh_ = nullptr;
  std::mutex m_;
  std::condition_variable cv_;
  bool connected_ = false;
};

}  // namespace sqlock::test
