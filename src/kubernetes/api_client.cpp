#include "kubernetes/api_client.h"

#include <httplib.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <sys/socket.h>

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/error.h"

namespace gpuledger::kubernetes {
namespace {

std::string trim(std::string s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
  return s;
}

X509_STORE* ca_store(const std::string& pem) {
  BIO* bio = BIO_new_mem_buf(pem.data(), static_cast<int>(pem.size()));
  X509_STORE* store = X509_STORE_new();
  size_t count = 0;
  while (X509* cert = PEM_read_bio_X509(bio, nullptr, nullptr, nullptr)) {
    X509_STORE_add_cert(store, cert);
    X509_free(cert);
    ++count;
  }
  BIO_free(bio);
  if (count == 0) {
    X509_STORE_free(store);
    throw Error("Kubernetes API: the CA data holds no PEM certificate");
  }
  return store;
}

}  // namespace

std::string ApiResponse::describe() const {
  if (!error.empty()) return error;
  std::string b = body.substr(0, 300);
  std::replace(b.begin(), b.end(), '\n', ' ');
  return "HTTP " + std::to_string(status) + (b.empty() ? "" : ": " + b);
}

ApiClient::ApiClient(ClusterConfig config) : config_(std::move(config)) {
  std::string url = config_.server;
  if (url.rfind("https://", 0) == 0) {
    tls_ = true;
    url = url.substr(8);
  } else if (url.rfind("http://", 0) == 0) {
    url = url.substr(7);
  } else {
    throw Error("Kubernetes API server '" + config_.server + "' must start with https:// or http://");
  }
  if (auto slash = url.find('/'); slash != std::string::npos) {
    if (url.substr(slash) != "/")
      throw Error("Kubernetes API server '" + config_.server + "': a path prefix is not supported");
    url = url.substr(0, slash);
  }
  std::string port_text;
  if (!url.empty() && url[0] == '[') {
    auto close = url.find(']');
    if (close == std::string::npos) throw Error("Kubernetes API server '" + config_.server + "': bad IPv6 address");
    host_ = url.substr(1, close - 1);
    if (close + 1 < url.size() && url[close + 1] == ':') port_text = url.substr(close + 2);
  } else if (auto colon = url.rfind(':'); colon != std::string::npos) {
    host_ = url.substr(0, colon);
    port_text = url.substr(colon + 1);
  } else {
    host_ = url;
  }
  try {
    port_ = port_text.empty() ? (tls_ ? 443 : 80) : std::stoi(port_text);
  } catch (const std::exception&) {
    throw Error("Kubernetes API server '" + config_.server + "': bad port");
  }
  if (host_.empty() || port_ <= 0 || port_ > 65535)
    throw Error("Kubernetes API server '" + config_.server + "': bad host or port");
  if (tls_) {
    if (!config_.ca_pem.empty()) X509_STORE_free(ca_store(config_.ca_pem));  // validate now, fail early
    make_client(std::chrono::seconds(1));                                     // validates the client certificate
  }
}

ApiClient::~ApiClient() { cancel(); }

std::shared_ptr<httplib::ClientImpl> ApiClient::make_client(std::chrono::seconds read_timeout) {
  std::shared_ptr<httplib::ClientImpl> client;
  if (tls_) {
    std::shared_ptr<httplib::SSLClient> ssl;
    if (!config_.client_cert_pem.empty()) {
      BIO* cb = BIO_new_mem_buf(config_.client_cert_pem.data(), static_cast<int>(config_.client_cert_pem.size()));
      X509* cert = PEM_read_bio_X509(cb, nullptr, nullptr, nullptr);
      BIO_free(cb);
      BIO* kb = BIO_new_mem_buf(config_.client_key_pem.data(), static_cast<int>(config_.client_key_pem.size()));
      EVP_PKEY* key = PEM_read_bio_PrivateKey(kb, nullptr, nullptr, nullptr);
      BIO_free(kb);
      if (!cert || !key) {
        if (cert) X509_free(cert);
        if (key) EVP_PKEY_free(key);
        throw Error("Kubernetes API: the client certificate or key is not readable PEM");
      }
      ssl = std::make_shared<httplib::SSLClient>(host_, port_, cert, key);
      X509_free(cert);
      EVP_PKEY_free(key);
    } else {
      ssl = std::make_shared<httplib::SSLClient>(host_, port_);
    }
    if (!ssl->is_valid()) throw Error("Kubernetes API: the TLS client could not be set up");
    if (config_.insecure_skip_tls_verify) {
      ssl->enable_server_certificate_verification(false);
    } else if (!config_.ca_pem.empty()) {
      ssl->set_ca_cert_store(ca_store(config_.ca_pem));  // the client owns the store
    }
    client = ssl;
  } else {
    client = std::make_shared<httplib::ClientImpl>(host_, port_);
  }
  std::string token = config_.token;
  if (!config_.token_file.empty()) {
    std::ifstream in(config_.token_file);
    std::stringstream s;
    if (in) {
      s << in.rdbuf();
      if (auto t = trim(s.str()); !t.empty()) token = t;
    }
  }
  if (!token.empty()) client->set_bearer_token_auth(token);
  client->set_connection_timeout(std::chrono::seconds(5));
  client->set_read_timeout(read_timeout);
  client->set_write_timeout(std::chrono::seconds(10));
  client->set_keep_alive(false);
  // cancel() stops the clients in flight; one whose socket is only being made
  // now would miss that and sit in a quiet watch: it sees the flag here.
  client->set_socket_options([this](socket_t fd) {
    if (cancelled_) ::shutdown(fd, SHUT_RDWR);
  });
  return client;
}

void ApiClient::track(const std::shared_ptr<httplib::ClientImpl>& client, bool add) {
  std::lock_guard lock(mu_);
  std::erase_if(in_flight_, [&](const auto& w) {
    auto s = w.lock();
    return !s || s == client;
  });
  if (add) in_flight_.push_back(client);
}

void ApiClient::cancel() {
  cancelled_ = true;
  std::lock_guard lock(mu_);
  for (auto& w : in_flight_)
    if (auto c = w.lock()) c->stop();
}

ApiResponse ApiClient::get(const std::string& path, std::chrono::seconds timeout) {
  ApiResponse out;
  if (cancelled_) {
    out.error = "cancelled";
    return out;
  }
  auto client = make_client(timeout);
  track(client, true);
  httplib::Headers headers = {{"Accept", "application/json"}};
  auto res = client->Get(path.c_str(), headers);
  track(client, false);
  if (!res) {
    out.error = "request to " + config_.server + " failed: " + httplib::to_string(res.error());
    return out;
  }
  out.status = res->status;
  out.body = std::move(res->body);
  return out;
}

ApiResponse ApiClient::stream_lines(const std::string& path, std::chrono::seconds read_timeout,
                                    const std::function<bool(const std::string&)>& on_line) {
  ApiResponse out;
  if (cancelled_) {
    out.error = "cancelled";
    return out;
  }
  auto client = make_client(read_timeout);
  track(client, true);
  if (cancelled_) client->stop();
  std::string pending;
  bool stopped_by_caller = false;
  httplib::Headers headers = {{"Accept", "application/json"}};
  auto res = client->Get(
      path.c_str(), headers,
      [&](const httplib::Response& r) {
        out.status = r.status;
        return true;
      },
      [&](const char* data, size_t n) {
        if (cancelled_) return false;
        if (out.status != 200) {
          if (out.body.size() < 65536) out.body.append(data, n);
          return true;
        }
        pending.append(data, n);
        size_t start = 0, pos;
        while ((pos = pending.find('\n', start)) != std::string::npos) {
          std::string line = pending.substr(start, pos - start);
          start = pos + 1;
          if (!line.empty() && line.back() == '\r') line.pop_back();
          if (line.empty()) continue;
          if (!on_line(line)) {
            stopped_by_caller = true;
            return false;
          }
        }
        pending.erase(0, start);
        if (pending.size() > 64 * 1024 * 1024) {
          out.error = "watch line longer than 64 MiB";
          return false;
        }
        return true;
      });
  track(client, false);
  if (stopped_by_caller) return out;
  if (!res && out.error.empty()) {
    out.error = cancelled_ ? "cancelled"
                           : "stream from " + config_.server + " failed: " + httplib::to_string(res.error());
  }
  // A final line without its newline is still a line.
  if (out.error.empty() && out.status == 200 && !pending.empty()) on_line(pending);
  return out;
}

}  // namespace gpuledger::kubernetes
