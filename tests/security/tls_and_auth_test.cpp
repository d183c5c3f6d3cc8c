// --web-config-file: TLS (server and client certificates from a test CA made
// with the openssl CLI, checked with curl as a scraper would connect) and
// basic authentication against htpasswd's bcrypt hashes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "export/basic_auth.h"
#include "export/http_listener.h"
#include "export/tls_context.h"
#include "export/web_config.h"
#include "raw_client.h"
#include "test_pki.h"

namespace gpuledger::exporter {
namespace {

namespace fs = std::filesystem;
using gpuledger::testing::run;
using gpuledger::testing::TestPki;

class Tls : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { pki_ = new TestPki("tls"); }
  static void TearDownTestSuite() { delete pki_; }

  int serve(const std::string& yaml) {
    fs::path file = pki_->dir() / "web.yml";
    std::ofstream(file) << yaml;
    WebConfig config = load_web_config(file.string());
    HttpLimits limits;
    limits.header_timeout = std::chrono::milliseconds(500);
    listener_ = std::make_unique<HttpListener>(limits, make_tls_context(*config.tls));
    int port = listener_->bind("127.0.0.1", 0);
    listener_->serve([](const HttpRequest&) {
      HttpResponse r;
      r.body = "secret metrics\n";
      return r;
    });
    return port;
  }
  // curl's exit status and the HTTP code it printed.
  std::pair<int, std::string> curl(const std::string& args) {
    auto r = run("curl -sS --max-time 5 -o /dev/null -w '%{http_code}' " + args);
    return {r.status, r.out.substr(0, 3)};
  }
  std::string tls_yaml(const std::string& extra = "") {
    return "tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\n" + extra;
  }

  static inline TestPki* pki_ = nullptr;
  std::unique_ptr<HttpListener> listener_;
};

TEST_F(Tls, ServesHttpsWithTheConfiguredCertificate) {
  int port = serve(tls_yaml());
  const std::string url = " https://127.0.0.1:" + std::to_string(port) + "/metrics";
  EXPECT_EQ(curl("--cacert " + pki_->path("ca.crt") + url), std::make_pair(0, std::string("200")));
  EXPECT_EQ(curl(url).first, 60) << "an unknown CA is refused by the client";
  EXPECT_NE(curl("http://127.0.0.1:" + std::to_string(port) + "/metrics").second, "200") << "no plain HTTP";
}

// The head deadline covers the TLS handshake: a client that connects and
// never completes one is cut off like a slow HTTP client.
TEST_F(Tls, AStalledHandshakeIsCutAtTheHeadDeadline) {
  int port = serve(tls_yaml());
  gpuledger::testing::RawClient silent(port), partial(port);
  partial.send(std::string("\x16\x03\x01\x02\x00\x01", 6));  // the start of a ClientHello, never finished
  auto started = std::chrono::steady_clock::now();
  EXPECT_TRUE(silent.closed_within(3000));
  EXPECT_TRUE(partial.closed_within(3000));
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count(), 1.5);
  EXPECT_EQ(curl("--cacert " + pki_->path("ca.crt") + " https://127.0.0.1:" + std::to_string(port) + "/x").second,
            "200");
}

TEST_F(Tls, MinVersionIsEnforced) {
  int port = serve(tls_yaml("  min_version: TLS13\n"));
  const std::string url = " https://127.0.0.1:" + std::to_string(port) + "/metrics";
  EXPECT_EQ(curl("--cacert " + pki_->path("ca.crt") + " --tls-max 1.2" + url).first, 35);
  EXPECT_EQ(curl("--cacert " + pki_->path("ca.crt") + url).second, "200");
}

TEST_F(Tls, ClientCertificatesAreRequiredAndVerified) {
  int port = serve(tls_yaml("  client_ca_file: ca.crt\n  client_auth_type: RequireAndVerifyClientCert\n"));
  const std::string url = " https://127.0.0.1:" + std::to_string(port) + "/metrics";
  const std::string ca = "--cacert " + pki_->path("ca.crt");
  EXPECT_NE(curl(ca + url).second, "200") << "no client certificate";
  EXPECT_NE(curl(ca + " --cert " + pki_->path("rogue.crt") + " --key " + pki_->path("rogue.key") + url).second, "200")
      << "a certificate from another CA";
  EXPECT_EQ(curl(ca + " --cert " + pki_->path("client.crt") + " --key " + pki_->path("client.key") + url),
            std::make_pair(0, std::string("200")));
}

TEST_F(Tls, ABadKeyOrCertificateIsAStartupError) {
  fs::path file = pki_->dir() / "bad.yml";
  std::ofstream(file) << "tls_server_config:\n  cert_file: server.crt\n  key_file: client.key\n";
  try {
    make_tls_context(*load_web_config(file.string()).tls);
    FAIL() << "a key that does not match was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("key_file " + pki_->path("client.key") + ": "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("mismatch"), std::string::npos) << e.what();
  }
}

TEST(WebConfig, ReadsTheExporterToolkitFormat) {
  auto dir = fs::temp_directory_path() / ("gl_webcfg_" + std::to_string(::getpid()));
  fs::create_directories(dir);
  auto write = [&](const std::string& yaml) {
    std::ofstream(dir / "web.yml") << yaml;
    return (dir / "web.yml").string();
  };
  WebConfig c = load_web_config(write(
      "tls_server_config:\n  cert_file: a.crt\n  key_file: /abs/a.key\n  client_ca_file: ca.crt\n"
      "  client_auth_type: VerifyClientCertIfGiven\n  min_version: TLS13\n"
      "http_server_config:\n  http2: true\n  headers:\n    X-Frame-Options: deny\n"
      "basic_auth_users:\n  prometheus: $2y$10$AIuDQkmeBFvp6WAaycnI9uaRf8aNe1ghg4aT5vaw1.E8DOYZSnwz2\n"));
  ASSERT_TRUE(c.tls);
  EXPECT_EQ(c.tls->cert_file, (dir / "a.crt").string()) << "relative to the file, as exporter-toolkit";
  EXPECT_EQ(c.tls->key_file, "/abs/a.key");
  EXPECT_EQ(c.tls->client_auth_type, "VerifyClientCertIfGiven");
  EXPECT_EQ(c.tls->min_version, "TLS13");
  EXPECT_EQ(c.basic_auth_users.size(), 1u);
  EXPECT_EQ(c.headers, (std::vector<std::pair<std::string, std::string>>{{"X-Frame-Options", "deny"}}));
  EXPECT_FALSE(load_web_config(write("")).tls);

  const std::pair<const char*, const char*> refused[] = {
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  clientauth: x\n", "tls_server_config.clientauth: unknown key"},
      {"basic_auth_user:\n  a: b\n", "basic_auth_user: unknown key"},
      {"basic_auth_users:\n  a: plaintext\n", "basic_auth_users.a: not a bcrypt hash"},
      {"tls_server_config:\n  cert_file: a\n", "tls_server_config.key_file: missing"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  client_auth_type: RequireAndVerifyClientCert\n",
       "tls_server_config.client_ca_file: required"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: TLS14\n", "min_version: 'TLS14'"},
      {"tls_server_config:\n  cert_file: a\n  key_file: b\n  cipher_suites: [X]\n", "cipher_suites: not supported"},
      {"http_server_config:\n  headers:\n    Set-Cookie: a\n", "headers.Set-Cookie: unknown key"},
  };
  for (const auto& [yaml, why] : refused) {
    try {
      load_web_config(write(yaml));
      ADD_FAILURE() << "accepted:\n" << yaml;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
    }
  }
  fs::remove_all(dir);
}

std::string basic(const std::string& user_colon_password) {
  auto r = run("printf '%s' '" + user_colon_password + "' | base64 -w0");
  return "Basic " + r.out;
}

TEST(BasicAuthTest, ChecksBcryptHashesFromHtpasswd) {
  auto made = run("htpasswd -nbBC 5 prometheus 's3cret pass'");
  ASSERT_EQ(made.status, 0) << made.out;
  std::string hash = made.out.substr(made.out.find(':') + 1);
  hash = hash.substr(0, hash.find('\n'));
  ASSERT_EQ(hash.rfind("$2y$05$", 0), 0u) << hash;
  std::string as_2b = "$2b$" + hash.substr(4);  // Go's bcrypt writes $2a$/$2b$
  BasicAuth auth({{"prometheus", hash}, {"other", as_2b}});
  EXPECT_TRUE(auth.allows(basic("prometheus:s3cret pass")));
  EXPECT_TRUE(auth.allows(basic("prometheus:s3cret pass"))) << "again, from the cache";
  EXPECT_TRUE(auth.allows(basic("other:s3cret pass")));
  EXPECT_FALSE(auth.allows(basic("prometheus:s3cret")));
  EXPECT_FALSE(auth.allows(basic("prometheus:")));
  EXPECT_FALSE(auth.allows(basic("nobody:s3cret pass")));
  EXPECT_FALSE(auth.allows(""));
  EXPECT_FALSE(auth.allows("Basic !!!!"));
  EXPECT_FALSE(auth.allows("Bearer " + basic("prometheus:s3cret pass").substr(6)));
}

}  // namespace
}  // namespace gpuledger::exporter
