// etcd's messages between protobuf and JSON by reflection (etcd_proto_json.hpp).
#include "etcd_proto_json.hpp"

#include <google/protobuf/descriptor.h>

#include <charconv>
#include <string>

#include "etcd_connection.hpp"

namespace sqlock::etcd::detail {

namespace {

namespace gp = google::protobuf;
using FD = gp::FieldDescriptor;

[[noreturn]] void bad_value(const FD& f) {
  throw backend_error("etcd: a bad value for field '" + f.full_name() + "'");
}

template <class T>
T integer(const json& v, const FD& f) {
  if (v.is_number_integer()) return v.get<T>();
  if (!v.is_string()) bad_value(f);
  const auto& s = v.get_ref<const std::string&>();
  T out{};
  auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), out);
  if (ec != std::errc() || p != s.data() + s.size()) bad_value(f);
  return out;
}

const gp::EnumValueDescriptor* enum_value(const json& v, const FD& f) {
  const gp::EnumValueDescriptor* e = nullptr;
  if (v.is_string())
    e = f.enum_type()->FindValueByName(v.get<std::string>());
  else if (v.is_number_integer())
    e = f.enum_type()->FindValueByNumber(v.get<int>());
  if (!e) bad_value(f);
  return e;
}

// `x` into field `f` of `msg`: set, or added when the field is repeated.
template <class T>
void store(gp::Message& msg, const FD& f, T x,
           void (gp::Reflection::*set)(gp::Message*, const FD*, T) const,
           void (gp::Reflection::*add)(gp::Message*, const FD*, T) const) {
  (msg.GetReflection()->*(f.is_repeated() ? add : set))(&msg, &f, x);
}

// One value of field `f` (an element when it is repeated) into `msg`.
void set_value(gp::Message& msg, const FD& f, const json& v) {
  const auto* r = msg.GetReflection();
  const bool rep = f.is_repeated();
  switch (f.cpp_type()) {
    case FD::CPPTYPE_INT64:
      return store(msg, f, integer<std::int64_t>(v, f), &gp::Reflection::SetInt64,
                   &gp::Reflection::AddInt64);
    case FD::CPPTYPE_UINT64:
      return store(msg, f, integer<std::uint64_t>(v, f), &gp::Reflection::SetUInt64,
                   &gp::Reflection::AddUInt64);
    case FD::CPPTYPE_INT32:
      return store(msg, f, integer<std::int32_t>(v, f), &gp::Reflection::SetInt32,
                   &gp::Reflection::AddInt32);
    case FD::CPPTYPE_UINT32:
      return store(msg, f, integer<std::uint32_t>(v, f), &gp::Reflection::SetUInt32,
                   &gp::Reflection::AddUInt32);
    case FD::CPPTYPE_BOOL:
      if (!v.is_boolean()) bad_value(f);
      return store(msg, f, v.get<bool>(), &gp::Reflection::SetBool, &gp::Reflection::AddBool);
    case FD::CPPTYPE_STRING: {
      if (!v.is_string()) bad_value(f);
      std::string x = f.type() == FD::TYPE_BYTES ? unb64(v.get_ref<const std::string&>())
                                                 : v.get<std::string>();
      rep ? r->AddString(&msg, &f, std::move(x)) : r->SetString(&msg, &f, std::move(x));
      break;
    }
    case FD::CPPTYPE_ENUM: {
      const auto* e = enum_value(v, f);
      rep ? r->AddEnum(&msg, &f, e) : r->SetEnum(&msg, &f, e);
      break;
    }
    case FD::CPPTYPE_MESSAGE:
      json_to_message(v, rep ? *r->AddMessage(&msg, &f) : *r->MutableMessage(&msg, &f));
      break;
    default:
      bad_value(f);  // etcd's messages have no floating point fields
  }
}

// One value of field `f` of `msg` (element `i` when it is repeated).
json get_value(const gp::Message& msg, const FD& f, int i) {
  const auto* r = msg.GetReflection();
  const bool rep = f.is_repeated();
  switch (f.cpp_type()) {
    case FD::CPPTYPE_INT64:
      return std::to_string(rep ? r->GetRepeatedInt64(msg, &f, i) : r->GetInt64(msg, &f));
    case FD::CPPTYPE_UINT64:
      return std::to_string(rep ? r->GetRepeatedUInt64(msg, &f, i) : r->GetUInt64(msg, &f));
    case FD::CPPTYPE_INT32:
      return rep ? r->GetRepeatedInt32(msg, &f, i) : r->GetInt32(msg, &f);
    case FD::CPPTYPE_UINT32:
      return rep ? r->GetRepeatedUInt32(msg, &f, i) : r->GetUInt32(msg, &f);
    case FD::CPPTYPE_BOOL:
      return rep ? r->GetRepeatedBool(msg, &f, i) : r->GetBool(msg, &f);
    case FD::CPPTYPE_STRING: {
      std::string x = rep ? r->GetRepeatedString(msg, &f, i) : r->GetString(msg, &f);
      return f.type() == FD::TYPE_BYTES ? b64(x) : x;
    }
    case FD::CPPTYPE_ENUM:
      return (rep ? r->GetRepeatedEnum(msg, &f, i) : r->GetEnum(msg, &f))->name();
    case FD::CPPTYPE_MESSAGE:
      return message_to_json(rep ? r->GetRepeatedMessage(msg, &f, i) : r->GetMessage(msg, &f));
    default:
      bad_value(f);
  }
}

}  // namespace

void json_to_message(const json& j, gp::Message& msg) {
  if (!j.is_object()) throw backend_error("etcd: a message that is not a JSON object");
  const auto* d = msg.GetDescriptor();
  for (const auto& [key, v] : j.items()) {
    const FD* f = d->FindFieldByName(key);
    if (!f) throw backend_error("etcd: " + d->full_name() + " has no field '" + key + "'");
    if (v.is_null()) continue;
    if (!f->is_repeated()) {
      set_value(msg, *f, v);
      continue;
    }
    if (!v.is_array()) bad_value(*f);
    for (const auto& e : v) set_value(msg, *f, e);
  }
}

json message_to_json(const gp::Message& msg) {
  json out = json::object();
  std::vector<const FD*> fields;
  msg.GetReflection()->ListFields(msg, &fields);
  for (const FD* f : fields) {
    if (!f->is_repeated()) {
      out[f->name()] = get_value(msg, *f, 0);
      continue;
    }
    json list = json::array();
    const int n = msg.GetReflection()->FieldSize(msg, f);
    for (int i = 0; i < n; ++i) list.push_back(get_value(msg, *f, i));
    out[f->name()] = std::move(list);
  }
  return out;
}

}  // namespace sqlock::etcd::detail
