#pragma once
// Who last wrote which of an object's annotations and labels, from its
// metadata.managedFields (server-side field management): each entry names a
// manager, when it last changed its fields, and the fields it owns
// ("f:metadata" -> "f:annotations" -> "f:<key>"). A manager loses a field to
// whoever changes its value afterwards, so the owners of an annotation are the
// writers of the value it has now.
//
// What this is worth (docs/security.md): the API server keeps managedFields,
// but the manager's name is the client's to choose (?fieldManager=, kubectl
// --field-manager) and a client that may update the object may also rewrite
// managedFields. Ownership tells ordinary rewrites (kubectl annotate, edit,
// apply, a controller) from the scheduler's own records; it is no proof of
// identity. Parsed strictly and bounded: a pod's metadata is its author's.
#include <nlohmann/json.hpp>

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::kubernetes {

struct FieldOwner {
  std::string manager;
  std::optional<int64_t> time;  // the entry's "time" (Unix seconds): its manager's last change
  bool operator==(const FieldOwner&) const = default;
};

struct FieldOwnership {
  bool present = false;  // the object carried managedFields
  // The owners of each annotation / label `keep` selected.
  std::map<std::string, std::vector<FieldOwner>> annotations, labels;
  bool operator==(const FieldOwnership&) const = default;
};

inline constexpr size_t kMaxManagedFieldEntries = 64;
inline constexpr size_t kMaxManagerName = 128;

// metadata.managedFields of `metadata`; only keys for which keep(key) is true
// are recorded. Entries past kMaxManagedFieldEntries, without a manager name
// (or one longer than kMaxManagerName), or of another fieldsType than FieldsV1
// are left out.
FieldOwnership parse_field_owners(const nlohmann::json& metadata, const std::function<bool(std::string_view)>& keep);

// "2026-12-01T21:00:00Z" (RFC 3339, UTC or a numeric offset, optional
// fraction) -> Unix seconds; nullopt for anything else.
std::optional<int64_t> parse_rfc3339_seconds(std::string_view text);

}  // namespace gpuledger::kubernetes
