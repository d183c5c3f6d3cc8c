#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "kubernetes/api_client.h"
#include "kubernetes/cluster_config.h"
#include "test_api_server.h"

namespace gpuledger::kubernetes {
namespace {
namespace fs = std::filesystem;
using testing::base64;
using testing::read_text;
using testing::test_pki;

class ClusterConfigTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuledger-kc-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string write(const std::string& name, const std::string& text) {
    std::ofstream(dir_ + "/" + name) << text;
    return dir_ + "/" + name;
  }
  std::string error_of(const std::string& path) {
    try {
      load_kubeconfig(path);
    } catch (const Error& e) {
      return e.what();
    }
    return "";
  }
  std::string dir_;
};

TEST_F(ClusterConfigTest, TokenUserWithCaFileRelativeToTheKubeconfig) {
  write("ca.crt", read_text(test_pki().ca_crt));
  write("token", "  from-file\n");
  auto path = write("config", R"(
apiVersion: v1
kind: Config
current-context: b
contexts:
- {name: a, context: {cluster: ca, user: ua}}
- {name: b, context: {cluster: cb, user: ub}}
clusters:
- {name: ca, cluster: {server: "https://a.example:6443"}}
- name: cb
  cluster:
    server: https://10.0.0.1:6443/
    certificate-authority: ca.crt
users:
- {name: ua, user: {token: wrong}}
- name: ub
  user:
    tokenFile: token
)");
  auto c = load_kubeconfig(path);
  EXPECT_EQ(c.server, "https://10.0.0.1:6443");
  EXPECT_EQ(c.token, "from-file");
  EXPECT_EQ(c.token_file, dir_ + "/token");
  EXPECT_EQ(c.ca_pem, read_text(test_pki().ca_crt));
  EXPECT_FALSE(c.insecure_skip_tls_verify);
  EXPECT_NO_THROW(ApiClient client(c));
}

TEST_F(ClusterConfigTest, ClientCertificateDataAndInsecureSkipVerify) {
  auto path = write("config", "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                              "clusters: [{name: c, cluster: {server: 'https://[::1]:6443', insecure-skip-tls-verify: true}}]\n"
                              "users: [{name: u, user: {client-certificate-data: " +
                                  base64(read_text(test_pki().client_crt)) + ", client-key-data: " +
                                  base64(read_text(test_pki().client_key)) + "}}]\n");
  auto c = load_kubeconfig(path);
  EXPECT_TRUE(c.insecure_skip_tls_verify);
  EXPECT_EQ(c.client_cert_pem, read_text(test_pki().client_crt));
  EXPECT_EQ(c.client_key_pem, read_text(test_pki().client_key));
  EXPECT_NO_THROW(ApiClient client(c));
}

TEST_F(ClusterConfigTest, BrokenKubeconfigsSayWhatIsWrong) {
  EXPECT_NE(error_of(dir_ + "/missing").find("cannot be read"), std::string::npos);
  EXPECT_NE(error_of(write("a", "clusters: [")).find("not valid YAML"), std::string::npos);
  EXPECT_NE(error_of(write("b", "current-context: nope\ncontexts: []\n")).find("no context named 'nope'"),
            std::string::npos);
  EXPECT_NE(error_of(write("c", "current-context: x\ncontexts: [{name: x, context: {cluster: c, user: u}}]\n"
                                "clusters: [{name: c, cluster: {server: 'https://h'}}]\n"
                                "users: [{name: u, user: {exec: {command: aws}}}]\n"))
                .find("exec"),
            std::string::npos);
  EXPECT_NE(error_of(write("d", "current-context: x\ncontexts: [{name: x, context: {cluster: c}}]\n"
                                "clusters: [{name: c, cluster: {certificate-authority-data: '!!!'}}]\n"))
                .find("no server"),
            std::string::npos);
  ClusterConfig bad;
  bad.server = "ftp://x";
  EXPECT_THROW(ApiClient client(bad), Error);
  bad.server = "https://h:1";
  bad.ca_pem = "not pem";
  EXPECT_THROW(ApiClient client(bad), Error);
}

TEST_F(ClusterConfigTest, InClusterFromServiceAccountFilesAndNodeName) {
  write("token", "sa-token\n");
  write("ca.crt", read_text(test_pki().ca_crt));
  ::setenv("KUBERNETES_SERVICE_HOST", "10.96.0.1", 1);
  ::setenv("KUBERNETES_SERVICE_PORT", "443", 1);
  auto c = in_cluster_config(dir_);
  EXPECT_EQ(c.server, "https://10.96.0.1:443");
  EXPECT_EQ(c.token, "sa-token");
  ::unsetenv("KUBERNETES_SERVICE_HOST");
  EXPECT_THROW(in_cluster_config(dir_), Error);
  EXPECT_FALSE(discover_cluster_config("").has_value());

  EXPECT_EQ(resolve_node_name("flag"), "flag");
  ::setenv("NODE_NAME", "from-env", 1);
  EXPECT_EQ(resolve_node_name(""), "from-env");
  ::unsetenv("NODE_NAME");
  EXPECT_FALSE(resolve_node_name("").empty());
  EXPECT_EQ(base64_decode(base64("hello, world")), "hello, world");
}

}  // namespace
}  // namespace gpuledger::kubernetes
