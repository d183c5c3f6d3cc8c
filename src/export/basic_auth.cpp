#include "export/basic_auth.h"

#include <crypt.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>

#include <cstring>
#include <memory>

namespace gpuledger::exporter {
namespace {

// Checked when the user is unknown, so the answer takes as long either way.
constexpr char kDummyHash[] = "$2y$10$AIuDQkmeBFvp6WAaycnI9uaRf8aNe1ghg4aT5vaw1.E8DOYZSnwz2";
constexpr size_t kMaxVerified = 64;

bool bcrypt_matches(const std::string& password, const std::string& hash) {
  auto data = std::make_unique<crypt_data>();  // ~32 KiB: not on a worker's stack
  std::memset(data.get(), 0, sizeof(crypt_data));
  const char* out = crypt_r(password.c_str(), hash.c_str(), data.get());
  if (!out || out[0] == '*') return false;  // libxcrypt's failure tokens start with '*'
  return std::strlen(out) == hash.size() && CRYPTO_memcmp(out, hash.data(), hash.size()) == 0;
}

std::string sha256(const std::string& text) {
  unsigned char digest[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(text.data()), text.size(), digest);
  return std::string(reinterpret_cast<char*>(digest), sizeof digest);
}

}  // namespace

bool decode_base64(const std::string& text, std::string& out) {
  static const std::string alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  out.clear();
  if (text.size() % 4 != 0) return false;
  uint32_t bits = 0;
  int nbits = 0;
  size_t padding = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '=') {
      if (i < text.size() - 2) return false;
      ++padding;
      continue;
    }
    if (padding) return false;
    auto pos = alphabet.find(c);
    if (pos == std::string::npos) return false;
    bits = (bits << 6) | static_cast<uint32_t>(pos);
    nbits += 6;
    if (nbits >= 8) {
      nbits -= 8;
      out.push_back(static_cast<char>((bits >> nbits) & 0xff));
    }
  }
  return true;
}

BasicAuth::BasicAuth(std::map<std::string, std::string> users) : users_(std::move(users)) {}

namespace {

struct Credentials {
  std::string user, password, hash, cache_key;
  bool known_user = false;
};

// Splits "Basic base64(user:password)"; false when malformed.
bool parse_credentials(const std::string& authorization, const std::map<std::string, std::string>& users,
                       Credentials& out) {
  if (authorization.size() < 6 || strncasecmp(authorization.c_str(), "Basic ", 6) != 0) return false;
  std::string decoded;
  if (!decode_base64(authorization.substr(6), decoded)) return false;
  auto colon = decoded.find(':');
  if (colon == std::string::npos) return false;
  out.user = decoded.substr(0, colon);
  out.password = decoded.substr(colon + 1);
  auto it = users.find(out.user);
  out.known_user = it != users.end();
  out.hash = out.known_user ? it->second : std::string(kDummyHash);
  out.cache_key = sha256(out.user + '\0' + out.password + '\0' + out.hash);
  return true;
}

}  // namespace

bool BasicAuth::verified_before(const std::string& authorization) const {
  Credentials c;
  if (!parse_credentials(authorization, users_, c)) return false;
  std::lock_guard lock(mu_);
  return verified_.count(c.cache_key) > 0;
}

bool BasicAuth::allows(const std::string& authorization) const {
  Credentials c;
  if (!parse_credentials(authorization, users_, c)) return false;
  const std::string& key = c.cache_key;
  {
    std::lock_guard lock(mu_);
    if (verified_.count(key)) return true;
  }
  bool ok = bcrypt_matches(c.password, c.hash) && c.known_user;
  if (ok) {
    std::lock_guard lock(mu_);
    if (verified_.size() >= kMaxVerified) verified_.clear();
    verified_.insert(key);
  }
  return ok;
}

}  // namespace gpuledger::exporter
