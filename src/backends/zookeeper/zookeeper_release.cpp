// Releases that do not wait (see zookeeper_release.hpp).
#include "zookeeper_release.hpp"

namespace sqlock::zookeeper::detail {
namespace {

// Connection losses one release rides out before it is left to the session's end.
constexpr int release_tries = 200;

struct release_job {
  std::shared_ptr<release_tracker::state> st;
  zhandle_t* zh;
  std::uint64_t epoch;
  std::string parent, path;
  int tries = 0;
  bool retrying = false;  // counted in st->retrying
};

void release_cb(int rc, const void* data) {
  std::unique_ptr<release_job> j(static_cast<release_job*>(const_cast<void*>(data)));
  if (is_connection_loss(rc) && ++j->tries < release_tries) {
    if (!j->retrying) {
      std::lock_guard g(j->st->m);
      j->st->retrying[{j->epoch, j->parent}]++;
      j->retrying = true;
    }
    if (zoo_adelete(j->zh, j->path.c_str(), -1, release_cb, j.get()) == ZOK) {
      j.release();
      return;
    }
  }
  // Answered (deleted, or already gone), or the session is gone and the node with it.
  if (!j->retrying) return;
  {
    std::lock_guard g(j->st->m);
    auto it = j->st->retrying.find({j->epoch, j->parent});
    if (it != j->st->retrying.end() && --it->second <= 0) j->st->retrying.erase(it);
  }
  j->st->cv.notify_all();
}

}  // namespace

int release_tracker::send(session& s, const std::string& parent, const std::string& path) {
  if (s.closing) return ZCLOSING;
  auto j = std::make_unique<release_job>(release_job{st_, s.zh, s.epoch, parent, path});
  int rc = zoo_adelete(s.zh, path.c_str(), -1, release_cb, j.get());
  if (rc == ZOK) j.release();
  return rc;
}

void release_tracker::settle(const std::string& parent, std::uint64_t epoch, steady_time until) {
  std::unique_lock lk(st_->m);
  if (st_->retrying.empty()) return;
  st_->cv.wait_until(lk, until, [&] { return !st_->retrying.contains({epoch, parent}); });
}

}  // namespace sqlock::zookeeper::detail
