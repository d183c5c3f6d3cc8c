#pragma once
// The OpenSSL server context for tls_server_config (web_config.h).
#include <openssl/types.h>

#include <memory>

#include "export/web_config.h"

namespace gpuledger::exporter {

// Loads the certificate chain, key and client CAs and sets the version range
// and client-certificate policy. Throws Error naming the file that failed.
std::shared_ptr<SSL_CTX> make_tls_context(const TlsServerConfig& config);

}  // namespace gpuledger::exporter
