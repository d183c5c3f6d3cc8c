#include <gtest/gtest.h>

#include "identity/workload_classifier.h"
#include "kubernetes/pod_directory.h"
#include "kubernetes/reflector.h"
#include "kubernetes/team_namer.h"

namespace gpuledger::kubernetes {
namespace {

using nlohmann::json;
const std::string kUid = "0a1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d";
const std::string kHexA(64, 'a'), kHexB(64, 'b'), kHexC(64, 'c'), kHexD(64, 'd'), kHexE(64, 'e');

json pod_json() {
  return json::parse(R"({
    "metadata": {"uid": ")" + kUid + R"(", "name": "trainer-0", "namespace": "ml",
                 "labels": {"team": "vision", "app": "trainer"}},
    "status": {
      "initContainerStatuses": [{"name": "fetch", "containerID": "cri-o://)" + kHexC + R"("}],
      "containerStatuses": [
        {"name": "main", "containerID": "containerd://)" + std::string(64, 'A') + R"(",
         "lastState": {"terminated": {"containerID": "containerd://)" + kHexB + R"("}}},
        {"name": "sidecar", "containerID": "docker://)" + kHexD + R"("},
        {"name": "pending"}],
      "ephemeralContainerStatuses": [{"name": "debug", "containerID": "containerd://)" + kHexE + R"("}]
    }})");
}

TEST(PodParsing, ContainerIdsOfEveryKindMapToNames) {
  std::string why;
  auto pod = parse_pod(pod_json(), &why);
  ASSERT_TRUE(pod) << why;
  EXPECT_EQ(pod->uid, kUid);
  EXPECT_EQ(pod->name, "trainer-0");
  EXPECT_EQ(pod->namespace_name, "ml");
  EXPECT_EQ(pod->labels.at("team"), "vision");
  EXPECT_EQ(pod->containers.at(kHexA), "main");  // lowercased
  EXPECT_EQ(pod->containers.at(kHexB), "main");  // the previous instance
  EXPECT_EQ(pod->containers.at(kHexC), "fetch");
  EXPECT_EQ(pod->containers.at(kHexD), "sidecar");
  EXPECT_EQ(pod->containers.at(kHexE), "debug");
  EXPECT_EQ(pod->containers.size(), 5u);
  EXPECT_EQ(bare_container_id("cri-o://ABC"), "abc");
}

TEST(PodParsing, MalformedPodsAreRejectedWithAReason) {
  std::string why;
  EXPECT_FALSE(parse_pod(json::parse("[]"), &why));
  EXPECT_EQ(why, "no metadata");
  EXPECT_FALSE(parse_pod(json::parse(R"({"metadata": {"name": "x"}})"), &why));
  EXPECT_FALSE(parse_pod(json::parse(R"({"metadata": {"uid": 5, "name": "x", "namespace": "y"}})"), &why));
  // Odd shapes inside status are skipped, not fatal.
  EXPECT_TRUE(parse_pod(json::parse(R"({"metadata": {"uid": "u", "name": "x", "namespace": "y", "labels": 3},
                                        "status": {"containerStatuses": {"a": 1}}})"),
                        &why));
}

TEST(WatchEvents, LinesParseOrSayWhyNot) {
  std::string why;
  auto ev = parse_watch_event(R"({"type":"ADDED","object":{"metadata":{"name":"a"}}})", &why);
  ASSERT_TRUE(ev);
  EXPECT_EQ(ev->type, EventType::kAdded);
  EXPECT_EQ(parse_watch_event(R"({"type":"MODIFIED","object":{}})", &why)->type, EventType::kModified);
  EXPECT_EQ(parse_watch_event(R"({"type":"DELETED","object":{}})", &why)->type, EventType::kDeleted);
  EXPECT_EQ(parse_watch_event(R"({"type":"BOOKMARK","object":{}})", &why)->type, EventType::kBookmark);
  auto err = parse_watch_event(R"({"type":"ERROR","object":{"kind":"Status","code":410}})", &why);
  ASSERT_TRUE(err);
  EXPECT_EQ(err->type, EventType::kError);
  EXPECT_EQ(err->object["code"], 410);

  EXPECT_FALSE(parse_watch_event("{\"type\":\"ADDED\",", &why));
  EXPECT_EQ(why, "not JSON");
  EXPECT_FALSE(parse_watch_event("[1,2]", &why));
  EXPECT_EQ(why, "not a JSON object");
  EXPECT_FALSE(parse_watch_event(R"({"object":{}})", &why));
  EXPECT_FALSE(parse_watch_event(R"({"type":"ADDED","object":"x"})", &why));
  EXPECT_FALSE(parse_watch_event(R"({"type":"RENAMED","object":{}})", &why));
  EXPECT_NE(why.find("RENAMED"), std::string::npos);
  EXPECT_EQ(url_encode("spec.nodeName=node-1"), "spec.nodeName%3Dnode-1");
}

TEST(TeamRule, NamespaceLabelThenPodLabelThenNamespaceName) {
  config::TeamRule rule;
  LabelMap ns_labels = {{"team", "platform"}};
  // A pod's author cannot bill another team than its namespace's owner says.
  EXPECT_EQ(team_for(rule, {{"team", "vision"}}, "ml", &ns_labels), "platform");
  EXPECT_TRUE(choose_team(rule, {{"team", "vision"}}, "ml", &ns_labels).conflict);
  EXPECT_FALSE(choose_team(rule, {{"team", "platform"}}, "ml", &ns_labels).conflict);
  EXPECT_EQ(team_for(rule, {{"team", "vision"}}, "ml", nullptr), "vision");  // the namespace says nothing
  EXPECT_FALSE(choose_team(rule, {{"team", "vision"}}, "ml", nullptr).conflict);
  EXPECT_EQ(team_for(rule, {{"app", "x"}}, "ml", &ns_labels), "platform");
  EXPECT_EQ(team_for(rule, {}, "ml", nullptr), "ml");
  EXPECT_EQ(team_for(rule, {{"team", ""}}, "ml", nullptr), "ml");
  rule.pod_label_overrides = true;  // the old order, for clusters that police pod labels
  EXPECT_EQ(team_for(rule, {{"team", "vision"}}, "ml", &ns_labels), "vision");
  EXPECT_TRUE(choose_team(rule, {{"team", "vision"}}, "ml", &ns_labels).conflict);
  EXPECT_EQ(team_for(rule, {{"app", "x"}}, "ml", &ns_labels), "platform");
  rule.pod_label_key = "";
  EXPECT_EQ(team_for(rule, {{"team", "vision"}}, "ml", &ns_labels), "platform");
  EXPECT_FALSE(choose_team(rule, {{"team", "vision"}}, "ml", &ns_labels).conflict);
  rule.namespace_label_key = "cost-center";
  EXPECT_EQ(team_for(rule, {{"team", "vision"}}, "ml", &ns_labels), "ml");
}

struct FakeClock {
  std::chrono::steady_clock::time_point t{std::chrono::hours(1000)};
  PodDirectory::Clock fn() {
    return [this] { return t; };
  }
};

TEST(PodDirectory, DeletedPodKeepsNamesWhileRead) {
  FakeClock clock;
  PodDirectory dir(std::chrono::minutes(10), clock.fn());
  dir.upsert_pod(*parse_pod(pod_json(), nullptr));
  auto found = dir.find(kUid, kHexA);
  ASSERT_TRUE(found);
  EXPECT_EQ(found->container, "main");

  dir.delete_pod(*parse_pod(pod_json(), nullptr));
  EXPECT_EQ(dir.deleted_pods(), 1u);
  clock.t += std::chrono::minutes(9);
  dir.expire();
  ASSERT_TRUE(dir.find(kUid, kHexA));  // within grace; and read now
  clock.t += std::chrono::minutes(9);  // past the grace since deletion, but read 9 minutes ago
  dir.expire();
  ASSERT_TRUE(dir.find(kUid, kHexB));
  EXPECT_EQ(dir.find(kUid, kHexB)->pod, "trainer-0");
  clock.t += std::chrono::minutes(11);  // nobody read it for longer than the grace period
  dir.expire();
  EXPECT_FALSE(dir.find(kUid, kHexA));
  EXPECT_EQ(dir.pods(), 0u);
}

TEST(PodDirectory, RestartedContainersStayInTheirPod) {
  PodDirectory dir(std::chrono::minutes(10));
  auto pod = *parse_pod(pod_json(), nullptr);
  dir.upsert_pod(pod);
  pod.containers.clear();
  pod.containers[std::string(64, '9')] = "main";  // restarted twice: neither old id is in the status
  dir.upsert_pod(pod);
  EXPECT_EQ(dir.find(kUid, kHexA)->container, "main");
  EXPECT_EQ(dir.find(kUid, std::string(64, '9'))->container, "main");
  EXPECT_EQ(dir.find(kUid, std::string(64, '7'))->container, "");  // unknown id: still the pod
  EXPECT_EQ(dir.find(kUid, std::string(64, '7'))->pod, "trainer-0");
}

TEST(PodDirectory, ReListMarksMissingPodsDeletedAndStaticPodsJoinByMirrorHash) {
  FakeClock clock;
  PodDirectory dir(std::chrono::seconds(1), clock.fn());
  auto pod = *parse_pod(pod_json(), nullptr);
  dir.upsert_pod(pod);
  PodInfo mirror;
  mirror.uid = "11111111-2222-3333-4444-555555555555";
  mirror.mirror_uid = std::string(32, 'f');
  mirror.name = "etcd-node-1";
  mirror.namespace_name = "kube-system";
  dir.replace_pods({mirror});
  EXPECT_TRUE(dir.find(kUid, "")->deleted);
  EXPECT_EQ(dir.find(std::string(32, 'f'), "")->pod, "etcd-node-1");
  clock.t += std::chrono::seconds(5);
  dir.expire();
  EXPECT_FALSE(dir.find(kUid, ""));
  EXPECT_TRUE(dir.find(mirror.uid, ""));
  EXPECT_EQ(dir.find_by_name("kube-system", "etcd-node-1")->pod, "etcd-node-1");
}

TEST(TeamNamer, KubernetesNamesAndTeamsOrMappingsOutsideKubernetes) {
  auto dir = std::make_shared<PodDirectory>(std::chrono::minutes(10));
  dir->upsert_pod(*parse_pod(pod_json(), nullptr));
  dir->upsert_namespace("ml", {{"team", "ml-platform"}});
  std::vector<config::TeamMapping> mappings = {{config::MatchKind::kSystemdUnit, "trainer*.service", "ml"},
                                               {config::MatchKind::kCgroupPrefix, "/kubepods", "unknown-pods"}};
  TeamNamer namer(dir, {}, mappings);

  auto w = identity::classify_cgroup_path("/kubepods/burstable/pod" + kUid + "/" + kHexA);
  auto names = namer.names_for(w);
  // The pod's own label says "vision", its namespace's "ml-platform": the
  // namespace's owner decides, and the disagreement is counted once.
  EXPECT_EQ(names, (identity::WorkloadNames{"ml", "trainer-0", "main", "ml-platform", "", ""}));
  EXPECT_EQ(namer.names_for(w).team, "ml-platform");
  EXPECT_EQ(dir->team_label_conflicts_seen(), 1u);
  config::TeamRule old_order;
  old_order.pod_label_overrides = true;
  EXPECT_EQ(TeamNamer(dir, old_order, {}).names_for(w).team, "vision");

  auto other = identity::classify_cgroup_path("/kubepods/burstable/pod" + std::string("99999999-2222-3333-4444-555555555555") + "/" + kHexA);
  EXPECT_EQ(namer.names_for(other), (identity::WorkloadNames{"", "", "", "unknown-pods", "", ""}));
  EXPECT_EQ(namer.names_for(identity::classify_cgroup_path("/system.slice/trainer.service")),
            (identity::WorkloadNames{"", "", "", "ml", "", ""}));
  EXPECT_EQ(namer.names_for(identity::classify_cgroup_path("/user.slice/x")), identity::WorkloadNames{});

  TeamNamer no_k8s(nullptr, {}, {});
  EXPECT_EQ(no_k8s.names_for(w), identity::WorkloadNames{});
}

// A Slurm job's user and account are the controller's (the lookup: squeue in
// the agent), and its team comes from the account by a `slurm_account` rule;
// a job the controller does not know (yet) has neither.
TEST(TeamNamer, ASlurmJobsUserAndAccountAreTheControllers) {
  std::vector<config::TeamMapping> mappings = {{config::MatchKind::kSlurmAccount, "phys*", "physics-dept"}};
  TeamNamer namer(nullptr, {}, mappings, [](const std::string& job) {
    return job == "42" ? TeamNamer::SlurmJobNames{"alice", "physics"} : TeamNamer::SlurmJobNames{};
  });
  EXPECT_EQ(namer.names_for(identity::classify_cgroup_path("/system.slice/slurmstepd.scope/job_42/step_0")),
            (identity::WorkloadNames{"", "", "", "physics-dept", "alice", "physics"}));
  EXPECT_EQ(namer.names_for(identity::classify_cgroup_path("/system.slice/slurmstepd.scope/job_43/step_0")),
            identity::WorkloadNames{});
  EXPECT_EQ(namer.names_for(identity::classify_cgroup_path("/system.slice/trainer.service")), identity::WorkloadNames{});
}

}  // namespace
}  // namespace gpuledger::kubernetes
