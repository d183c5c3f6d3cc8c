// The Kubernetes metadata source against a real HTTPS API server run by the
// test: its own CA, a bearer token (or client certificates), list + watch,
// bookmarks, DELETED, 410 Gone, and the server going away and coming back.
#include <gtest/gtest.h>

#include <filesystem>

#include "kubernetes/kubernetes_metadata.h"
#include "kubernetes/kubernetes_metrics.h"
#include "poll.h"
#include "test_api_server.h"

namespace gpuledger::kubernetes {
namespace {
namespace fs = std::filesystem;
using testing::poll_until;
using testing::TestApiServer;

const std::string kUid1 = "11111111-1111-4111-8111-111111111111";
const std::string kUid2 = "22222222-2222-4222-8222-222222222222";
const std::string kUid3 = "33333333-3333-4333-8333-333333333333";
const std::string kOther = "99999999-9999-4999-8999-999999999999";
const std::string kC1(64, '1'), kC2(64, '2'), kC3(64, '3');

class ApiWatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/gpuledger-api-XXXXXX";
    dir_ = ::mkdtemp(tmpl);
  }
  void TearDown() override {
    metadata_.reset();
    server_.reset();
    fs::remove_all(dir_);
  }
  void start_server(TestApiServer::Options o = {}) {
    server_ = std::make_unique<TestApiServer>(o);
    server_->start();
  }
  void start_metadata(const std::string& kubeconfig) {
    KubernetesOptions o;
    o.cluster = load_kubeconfig(kubeconfig);
    o.node_name = "node-1";
    o.initial_backoff = std::chrono::milliseconds(20);
    o.max_backoff = std::chrono::milliseconds(100);
    o.watch_timeout_seconds = 30;
    directory_ = std::make_shared<PodDirectory>(std::chrono::minutes(10));
    metadata_ = std::make_unique<KubernetesMetadata>(o, directory_);
    metadata_->start();
  }
  std::string pod_of(const std::string& uid, const std::string& cid) {
    auto p = directory_->find(uid, cid);
    return p ? p->namespace_name + "/" + p->pod + "/" + p->container + (p->deleted ? " (deleted)" : "") : "";
  }
  std::string dir_;
  std::unique_ptr<TestApiServer> server_;
  std::shared_ptr<PodDirectory> directory_;
  std::unique_ptr<KubernetesMetadata> metadata_;
};

TEST_F(ApiWatchTest, ListWatchBookmarksDeletesAndGoneOverHttpsWithAToken) {
  start_server();
  server_->upsert_namespace("ml", {{"team", "vision"}});
  server_->upsert_pod(TestApiServer::make_pod(kUid1, "ml", "trainer-0", "node-1", {}, {{"main", "containerd://" + kC1}}));
  server_->upsert_pod(TestApiServer::make_pod(kOther, "ml", "elsewhere", "node-2", {}, {}));
  start_metadata(server_->write_kubeconfig(dir_));

  // The list: only this node's pods.
  ASSERT_TRUE(poll_until([&] { return pod_of(kUid1, kC1) == "ml/trainer-0/main"; })) << pod_of(kUid1, kC1);
  EXPECT_EQ(server_->last_field_selector(), "spec.nodeName=node-1");
  EXPECT_FALSE(directory_->find(kOther, ""));
  ASSERT_TRUE(poll_until([&] { return directory_->namespace_labels("ml").has_value(); }));
  EXPECT_EQ(directory_->team({}, *directory_->find(kUid1, kC1)), "vision");
  ASSERT_TRUE(poll_until([&] { return server_->pod_watches() >= 1; }));

  // ADDED and MODIFIED (a restart: a new container id) through the watch.
  server_->upsert_pod(TestApiServer::make_pod(kUid2, "ml", "trainer-1", "node-1", {{"team", "nlp"}},
                                              {{"main", "containerd://" + kC2}}));
  ASSERT_TRUE(poll_until([&] { return pod_of(kUid2, kC2) == "ml/trainer-1/main"; }));
  // A pod author's own team label does not bill another team than its
  // namespace's owner says; the disagreement is counted once per pod.
  EXPECT_EQ(directory_->team({}, *directory_->find(kUid2, kC2)), "vision");
  EXPECT_EQ(directory_->team({}, *directory_->find(kUid2, kC2)), "vision");
  EXPECT_EQ(directory_->team_label_conflicts_seen(), 1u);
  EXPECT_EQ(directory_->team_label_conflicts({}), 1u);
  config::TeamRule pods_win;
  pods_win.pod_label_overrides = true;
  EXPECT_EQ(directory_->team(pods_win, *directory_->find(kUid2, kC2)), "nlp");
  EXPECT_EQ(directory_->team_label_conflicts_seen(), 1u);
  server_->upsert_pod(TestApiServer::make_pod(kUid1, "ml", "trainer-0", "node-1", {}, {{"main", "cri-o://" + kC3}}));
  ASSERT_TRUE(poll_until([&] { return pod_of(kUid1, kC3) == "ml/trainer-0/main"; }));
  EXPECT_EQ(pod_of(kUid1, kC1), "ml/trainer-0/main");  // the old id still names the pod

  // A malformed line is skipped, the watch goes on.
  server_->send_garbage("{this is not json");
  server_->send_bookmark();
  ASSERT_TRUE(poll_until([&] { return metadata_->pod_stats().bookmarks >= 1; }));
  EXPECT_GE(metadata_->pod_stats().malformed, 1u);

  // DELETED: the names stay for the grace period.
  server_->delete_pod(kUid2);
  ASSERT_TRUE(poll_until([&] { return pod_of(kUid2, kC2) == "ml/trainer-1/main (deleted)"; }));

  // 410 Gone: the watch ends, a new list picks up where things are.
  int lists = server_->pod_lists();
  server_->compact_history();
  ASSERT_TRUE(poll_until([&] { return metadata_->pod_stats().relists_gone >= 1 && server_->pod_lists() > lists; }));
  server_->upsert_pod(TestApiServer::make_pod(kUid3, "web", "api-0", "node-1", {}, {{"srv", "containerd://" + kC3}}));
  ASSERT_TRUE(poll_until([&] { return pod_of(kUid3, kC3) == "web/api-0/srv"; }));
  EXPECT_EQ(server_->unauthorized(), 0);

  // The self-metrics say so.
  KubernetesMetrics metrics(directory_, {}, metadata_.get(), nullptr);
  metrics::ExpositionWriter out;
  metrics.write_metrics(out);
  EXPECT_NE(out.text().find("gpuledger_kubernetes_api_up{resource=\"pods\"} 1"), std::string::npos) << out.text();
  EXPECT_NE(out.text().find("gpuledger_kubernetes_relists_gone_total{resource=\"pods\"} 1"), std::string::npos);
  EXPECT_NE(out.text().find("gpuledger_kubernetes_watch_restarts_total{resource=\"pods\"}"), std::string::npos);
  // trainer-1 (team label nlp in namespace ml, team vision) was deleted: no
  // live pod disagrees now, one did.
  EXPECT_NE(out.text().find("\ngpuledger_team_label_conflicts 0\n"), std::string::npos) << out.text();
  EXPECT_NE(out.text().find("\ngpuledger_team_label_conflicts_total 1\n"), std::string::npos) << out.text();
}

TEST_F(ApiWatchTest, ServerAwayAtStartAndLaterLosesNothing) {
  // Nothing listens yet: the source backs off and keeps trying.
  start_server();
  int port = server_->port();
  auto kubeconfig = server_->write_kubeconfig(dir_, /*ca_inline=*/false);
  server_->upsert_pod(TestApiServer::make_pod(kUid1, "ml", "trainer-0", "node-1", {}, {{"main", "containerd://" + kC1}}));
  server_->stop();
  start_metadata(kubeconfig);
  ASSERT_TRUE(poll_until([&] { return metadata_->pod_stats().errors >= 2; }));
  EXPECT_FALSE(metadata_->pod_stats().up);
  EXPECT_FALSE(directory_->find(kUid1, kC1));

  server_->start(port);
  ASSERT_TRUE(poll_until([&] { return pod_of(kUid1, kC1) == "ml/trainer-0/main"; }));
  ASSERT_TRUE(poll_until([&] { return server_->open_watches() >= 2; }));

  // Away mid-watch: what happens meanwhile arrives when it comes back (resumed from resourceVersion).
  server_->stop();
  ASSERT_TRUE(poll_until([&] { return !metadata_->pod_stats().up; }));
  EXPECT_EQ(pod_of(kUid1, kC1), "ml/trainer-0/main");  // still named meanwhile
  server_->upsert_pod(TestApiServer::make_pod(kUid2, "ml", "trainer-1", "node-1", {}, {{"main", "containerd://" + kC2}}));
  server_->delete_pod(kUid1);
  int lists = server_->pod_lists();
  server_->start(port);
  ASSERT_TRUE(poll_until([&] { return pod_of(kUid2, kC2) == "ml/trainer-1/main"; }));
  ASSERT_TRUE(poll_until([&] { return pod_of(kUid1, kC1) == "ml/trainer-0/main (deleted)"; }));
  EXPECT_EQ(server_->pod_lists(), lists);  // resumed, not re-listed
  EXPECT_TRUE(metadata_->pod_stats().up);
}

TEST_F(ApiWatchTest, ClientCertificateUser) {
  TestApiServer::Options o;
  o.client_certs = true;
  start_server(o);
  server_->upsert_pod(TestApiServer::make_pod(kUid1, "ml", "trainer-0", "node-1", {}, {{"main", "docker://" + kC1}}));
  start_metadata(server_->write_kubeconfig(dir_));
  ASSERT_TRUE(poll_until([&] { return pod_of(kUid1, kC1) == "ml/trainer-0/main"; }));
}

TEST_F(ApiWatchTest, WrongTokenIsRefusedAndRetried) {
  start_server();
  auto path = server_->write_kubeconfig(dir_);
  auto config = load_kubeconfig(path);
  config.token = "wrong";
  KubernetesOptions o;
  o.cluster = config;
  o.node_name = "node-1";
  o.initial_backoff = std::chrono::milliseconds(10);
  o.max_backoff = std::chrono::milliseconds(20);
  directory_ = std::make_shared<PodDirectory>(std::chrono::minutes(10));
  metadata_ = std::make_unique<KubernetesMetadata>(o, directory_);
  metadata_->start();
  ASSERT_TRUE(poll_until([&] { return server_->unauthorized() >= 3; }));
  EXPECT_FALSE(metadata_->pod_stats().up);
  EXPECT_FALSE(metadata_->pod_stats().synced);
}

TEST_F(ApiWatchTest, UntrustedServerCertificateIsRefusedUnlessInsecure) {
  start_server();
  auto config = load_kubeconfig(server_->write_kubeconfig(dir_));
  config.ca_pem = testing::read_text(testing::test_pki().client_crt);  // a certificate, but not the CA
  ApiClient strict(config);
  auto res = strict.get("/api/v1/pods", std::chrono::seconds(5));
  EXPECT_FALSE(res.ok());
  EXPECT_FALSE(res.error.empty());
  config.insecure_skip_tls_verify = true;
  ApiClient lax(config);
  EXPECT_TRUE(lax.get("/api/v1/pods", std::chrono::seconds(5)).ok());
}

}  // namespace
}  // namespace gpuledger::kubernetes
