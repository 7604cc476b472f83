// Lock names inside etcd keys: `<prefix>/<encoded name>/<lease hex>`, the name percent-encoded
// so that it holds no '/'.
#include "sqlock/etcd/etcd.hpp"
#include "sqlock/url.hpp"

namespace sqlock::etcd {

namespace {
bool plain(unsigned char c) {
  return c >= 0x20 && c != 0x7F && c != '/' && c != '%';
}
}  // namespace

std::string encode_name(std::string_view name) {
  return percent_encode(name, plain);
}

std::string decode_name(std::string_view encoded) {
  return percent_decode(encoded);
}

std::string lock_prefix(std::string_view prefix, std::string_view name) {
  std::string p(prefix);
  if (!p.empty()) p += '/';
  return p + encode_name(name) + '/';
}

}  // namespace sqlock::etcd
