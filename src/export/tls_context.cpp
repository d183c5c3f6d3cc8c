#include "export/tls_context.h"

#include <openssl/err.h>
#include <openssl/ssl.h>

#include <map>

#include "common/error.h"

namespace gpuledger::exporter {
namespace {

std::string openssl_error() {
  unsigned long code = ERR_get_error();
  ERR_clear_error();
  if (code == 0) return "unknown OpenSSL error";
  char buf[256];
  ERR_error_string_n(code, buf, sizeof buf);
  return buf;
}

int tls_version(const std::string& name) {
  static const std::map<std::string, int> versions = {
      {"TLS10", TLS1_VERSION}, {"TLS11", TLS1_1_VERSION}, {"TLS12", TLS1_2_VERSION}, {"TLS13", TLS1_3_VERSION}};
  return name.empty() ? 0 : versions.at(name);
}

// RequestClientCert and RequireAnyClientCert take any certificate unverified,
// as Go's crypto/tls does for them.
int accept_any_certificate(int, X509_STORE_CTX*) { return 1; }

}  // namespace

std::shared_ptr<SSL_CTX> make_tls_context(const TlsServerConfig& c) {
  std::shared_ptr<SSL_CTX> ctx(SSL_CTX_new(TLS_server_method()), SSL_CTX_free);
  if (!ctx) throw Error("TLS: " + openssl_error());
  auto fail = [](const std::string& what) { return Error("tls_server_config: " + what + ": " + openssl_error()); };
  if (SSL_CTX_use_certificate_chain_file(ctx.get(), c.cert_file.c_str()) != 1) throw fail("cert_file " + c.cert_file);
  if (SSL_CTX_use_PrivateKey_file(ctx.get(), c.key_file.c_str(), SSL_FILETYPE_PEM) != 1)
    throw fail("key_file " + c.key_file);
  if (SSL_CTX_check_private_key(ctx.get()) != 1) throw fail("key_file " + c.key_file + " does not match cert_file");
  SSL_CTX_set_min_proto_version(ctx.get(), tls_version(c.min_version));
  SSL_CTX_set_max_proto_version(ctx.get(), tls_version(c.max_version));
  SSL_CTX_set_options(ctx.get(), SSL_OP_NO_RENEGOTIATION | SSL_OP_CIPHER_SERVER_PREFERENCE);
  if (!c.client_ca_file.empty()) {
    if (SSL_CTX_load_verify_locations(ctx.get(), c.client_ca_file.c_str(), nullptr) != 1)
      throw fail("client_ca_file " + c.client_ca_file);
    if (STACK_OF(X509_NAME)* names = SSL_load_client_CA_file(c.client_ca_file.c_str()))
      SSL_CTX_set_client_CA_list(ctx.get(), names);
  }
  const std::string& type = c.client_auth_type;
  if (type == "RequestClientCert") {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, accept_any_certificate);
  } else if (type == "RequireAnyClientCert") {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, accept_any_certificate);
  } else if (type == "VerifyClientCertIfGiven") {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER, nullptr);
  } else if (type == "RequireAndVerifyClientCert") {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, nullptr);
  } else {
    SSL_CTX_set_verify(ctx.get(), SSL_VERIFY_NONE, nullptr);
  }
  return ctx;
}

}  // namespace gpuledger::exporter
