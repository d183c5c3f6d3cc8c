#pragma once
// HTTP basic authentication against bcrypt hashes (basic_auth_users in
// --web-config-file), checked with libxcrypt's crypt_r, which knows the $2y$,
// $2b$ and $2a$ forms htpasswd and Go's bcrypt write.
#include <map>
#include <mutex>
#include <set>
#include <string>

namespace gpuledger::exporter {

class BasicAuth {
 public:
  explicit BasicAuth(std::map<std::string, std::string> users);  // user -> bcrypt hash
  bool enabled() const { return !users_.empty(); }
  // True when `authorization` (the header's value) names a user whose
  // password matches. An unknown user costs the same bcrypt as a known one,
  // so timing does not tell which users exist.
  bool allows(const std::string& authorization) const;
  // True when allows() would answer from its cache of verified credentials,
  // without running bcrypt: cheap enough to sort requests by.
  bool verified_before(const std::string& authorization) const;

 private:
  std::map<std::string, std::string> users_;
  // bcrypt is slow by design (~50 ms at cost 10): credentials that verified
  // are remembered (as a SHA-256, never the password) so a scraper every few
  // seconds pays it once. Failures are never cached.
  mutable std::mutex mu_;
  mutable std::set<std::string> verified_;
};

// Base64 (RFC 4648, padded) to bytes; nullopt-like "" with ok=false when malformed.
bool decode_base64(const std::string& text, std::string& out);

}  // namespace gpuledger::exporter
