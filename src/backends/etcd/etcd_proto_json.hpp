// etcd's messages between their protobuf form (the gRPC wire) and the JSON form the client
// works with (the proto3 JSON mapping with etcd's field names: bytes in base64, 64-bit numbers
// as decimal strings, enums by name, fields at their default left out), by protobuf reflection:
// no detour through protobuf's JSON text.
#pragma once

#include <google/protobuf/message.h>

#include <nlohmann/json.hpp>

namespace sqlock::etcd::detail {

/// Sets the fields of `msg` from `j` (an object); backend_error for a field `msg` does not have
/// or a value of the wrong type.
void json_to_message(const nlohmann::json& j, google::protobuf::Message& msg);

/// The set fields of `msg` as a JSON object.
nlohmann::json message_to_json(const google::protobuf::Message& msg);

}  // namespace sqlock::etcd::detail
