// The janitors (see zookeeper_janitors.hpp): each an asynchronous request whose completion
// tries again after a connection loss, up to janitor_tries times.
#include "zookeeper_janitors.hpp"

#include <memory>
#include <string_view>
#include <utility>

#include "zookeeper_connection.hpp"

namespace sqlock::zookeeper::detail {

namespace {

constexpr int janitor_tries = 200;  // connection losses a janitor rides out before giving up

struct janitor_job {
  // `d` is taken last, by reference: a copy that throws before leaves it to the caller.
  janitor_job(zhandle_t* h, const std::string& p, const std::string& pre, std::function<void()>&& d)
      : zh(h), path(p), prefix(pre), done(std::move(d)) {}
  janitor_job(const janitor_job&) = delete;
  janitor_job& operator=(const janitor_job&) = delete;
  ~janitor_job() {
    if (done) done();  // the job ends: answered, given up, or never sent
  }
  zhandle_t* zh;
  std::string path;    // node to delete, or parent to purge
  std::string prefix;  // child-name prefix to purge ("" = delete `path`)
  std::function<void()> done;
  int tries = 0;
};

void delete_cb(int rc, const void* data) {
  std::unique_ptr<janitor_job> j(static_cast<janitor_job*>(const_cast<void*>(data)));
  // The first answer ends the caller's wait, a connection loss too: the delete sent again
  // waits for a reconnect, which the caller must not.
  if (j->done) std::exchange(j->done, nullptr)();
  if (!is_connection_loss(rc) || ++j->tries >= janitor_tries) return;
  if (zoo_adelete(j->zh, j->path.c_str(), -1, delete_cb, j.get()) == ZOK) j.release();
}

void purge_cb(int rc, const String_vector* v, const void* data) {
  std::unique_ptr<janitor_job> j(static_cast<janitor_job*>(const_cast<void*>(data)));
  if (rc == ZOK && v) {
    for (std::int32_t i = 0; i < v->count; ++i)
      if (std::string_view(v->data[i]).starts_with(j->prefix))
        remove_later(j->zh, j->path + "/" + v->data[i]);
    return;
  }
  if (!is_connection_loss(rc) || ++j->tries >= janitor_tries) return;
  if (zoo_aget_children(j->zh, j->path.c_str(), 0, purge_cb, j.get()) == ZOK) j.release();
}

}  // namespace

void remove_later(zhandle_t* zh, const std::string& path, std::function<void()> done) noexcept {
  std::unique_ptr<janitor_job> j;
  try {
    j = std::make_unique<janitor_job>(zh, path, std::string(), std::move(done));
  } catch (...) {  // out of memory before the job took `done`: the session's end removes it
    if (done) done();
    return;
  }
  if (zoo_adelete(zh, path.c_str(), -1, delete_cb, j.get()) == ZOK) j.release();
}

void purge_later(zhandle_t* zh, const std::string& parent, const std::string& prefix) {
  auto j = std::make_unique<janitor_job>(zh, parent, prefix, std::function<void()>());
  if (zoo_aget_children(zh, parent.c_str(), 0, purge_cb, j.get()) == ZOK) j.release();
}

}  // namespace sqlock::zookeeper::detail
