#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "common/error.h"
#include "config/agent_config.h"
#include "identity/workload_classifier.h"

namespace gpuledger::config {
namespace {

std::string error_of(const std::string& yaml) {
  try {
    parse_agent_config(yaml, "test.yaml");
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

TEST(AgentConfig, EmptyFileGivesDefaults) {
  auto c = parse_agent_config("", "x");
  EXPECT_EQ(c.team_rule.pod_label_key, "team");
  EXPECT_EQ(c.team_rule.namespace_label_key, "team");
  EXPECT_FALSE(c.team_rule.pod_label_overrides);
  EXPECT_EQ(c.pod_grace_period, std::chrono::seconds(600));
  EXPECT_TRUE(c.teams.empty());
  EXPECT_EQ(c.dra_drivers, std::vector<std::string>{"gpu.nvidia.com"});
  EXPECT_EQ(c.kai_reservation_namespace, "runai-reservation");
}

// The agent reads the same file as `gpuledger rightsize --config`: its
// `rightsizing:` section (report/rightsizing_config.h) is a known key here.
TEST(AgentConfig, TheRightsizingSectionIsAKnownKey) {
  EXPECT_EQ(error_of("rightsizing:\n  idle_after: 48h\n"), "");
  EXPECT_NE(error_of("rightsizeing:\n  idle_after: 48h\n").find("unknown key 'rightsizeing'"), std::string::npos);
}

TEST(AgentConfig, FullFileParses) {
  auto c = parse_agent_config(R"(
team:
  pod_label_key: app.kubernetes.io/team
  namespace_label_key: ~
  pod_label_overrides: true
kubernetes:
  pod_grace_period_seconds: 30
  extra_gpu_resources: [example.com/gpu]
  pod_resources_interval_seconds: 2
  allocation_keep_seconds: 120
  kai_reservation_namespace: kai-reservation
teams:
  - {match: systemd_unit, pattern: "trainer-*.service", team: ml}
  - {match: slurm_job, pattern: "12*", team: hpc}
  - {match: slurm_user, pattern: root, team: admins}
  - {match: cgroup_prefix, pattern: /research, team: research}
)",
                              "x");
  EXPECT_EQ(c.team_rule.pod_label_key, "app.kubernetes.io/team");
  EXPECT_EQ(c.team_rule.namespace_label_key, "");
  EXPECT_TRUE(c.team_rule.pod_label_overrides);
  EXPECT_NE(error_of("team:\n  pod_label_overrides: yes-please\n").find("team.pod_label_overrides must be true or false"),
            std::string::npos);
  EXPECT_EQ(c.pod_grace_period, std::chrono::seconds(30));
  EXPECT_EQ(c.pod_resources_interval, std::chrono::seconds(2));
  EXPECT_EQ(c.allocation_keep, std::chrono::seconds(120));
  EXPECT_EQ(c.extra_gpu_resources, std::vector<std::string>{"example.com/gpu"});
  EXPECT_EQ(c.kai_reservation_namespace, "kai-reservation");
  ASSERT_EQ(c.teams.size(), 4u);

  auto team = [&](const std::string& path) {
    return team_from_mappings(identity::classify_cgroup_path(path), c.teams).value_or("<none>");
  };
  EXPECT_EQ(team("/system.slice/trainer-7.service"), "ml");
  EXPECT_EQ(team("/system.slice/nginx.service"), "<none>");
  EXPECT_EQ(team("/slurm/uid_1000/job_1234/step_0"), "hpc");
  EXPECT_EQ(team("/slurm/uid_0/job_99/step_batch"), "admins");
  EXPECT_EQ(team("/research/alice/run1"), "research");
  EXPECT_EQ(team("/research"), "research");
  EXPECT_EQ(team("/researchers/x"), "<none>");
  EXPECT_EQ(slurm_uid_from_path("/slurm/uid_1000/job_1/step_0"), 1000u);
  EXPECT_FALSE(slurm_uid_from_path("/system.slice/x.service").has_value());
}

TEST(AgentConfig, MalformedFilesGiveClearErrors) {
  EXPECT_NE(error_of("team: [unclosed").find("test.yaml:1:"), std::string::npos) << error_of("team: [unclosed");
  EXPECT_NE(error_of("team: [unclosed").find("not valid YAML"), std::string::npos);
  EXPECT_NE(error_of("- a\n- b").find("top level must be a mapping"), std::string::npos);
  EXPECT_NE(error_of("tema: {}").find("unknown key 'tema'"), std::string::npos);
  EXPECT_NE(error_of("kubernetes:\n  pod_grace_period_seconds: soon").find("test.yaml:2:"), std::string::npos);
  EXPECT_NE(error_of("kubernetes:\n  pod_grace_period_seconds: -1").find("integer >= 0"), std::string::npos);
  EXPECT_NE(error_of("teams:\n  - {match: hostname, pattern: x, team: y}").find("match must be one of"),
            std::string::npos);
  EXPECT_NE(error_of("teams:\n  - {match: systemd_unit, team: y}").find("missing 'pattern'"), std::string::npos);
  EXPECT_NE(error_of("teams: {a: b}").find("teams must be a list"), std::string::npos);
  EXPECT_NE(error_of("kubernetes:\n  extra_gpu_resources: x").find("list of strings"), std::string::npos);
  for (const char* bad : {"\"\"", "Runai", "a/b", "-x", "../etc"})
    EXPECT_NE(error_of(std::string("kubernetes:\n  kai_reservation_namespace: ") + bad)
                  .find("kai_reservation_namespace must be a namespace name"),
              std::string::npos)
        << bad;
}

TEST(AgentConfig, TheProbeSetIsReadAndOnlyItsThreeNamesAreAccepted) {
  EXPECT_FALSE(parse_agent_config("", "x").probe_set.has_value()) << "unset: --probe-set, else auto";
  EXPECT_FALSE(parse_agent_config("probes: {}", "x").probe_set.has_value());
  EXPECT_EQ(parse_agent_config("probes:\n  set: billing\n", "x").probe_set, probes::ProbeSet::kBilling);
  EXPECT_EQ(parse_agent_config("probes: {set: full}", "x").probe_set, probes::ProbeSet::kFull);
  EXPECT_EQ(parse_agent_config("probes: {set: auto}", "x").probe_set, probes::ProbeSet::kAuto);
  EXPECT_EQ(error_of("probes:\n  set: none"), "config test.yaml:2:8: probes.set must be one of auto, billing, full; not 'none'");
  EXPECT_NE(error_of("probes: {set: [billing]}").find("probes.set"), std::string::npos) << error_of("probes: {set: [billing]}");
  EXPECT_NE(error_of("probes: {sets: billing}").find("unknown key 'sets' in probes (expected: set)"), std::string::npos);
  EXPECT_NE(error_of("probes: billing").find("probes must be a mapping"), std::string::npos);
}

// The account comes from Slurm's controller (slurm/slurm_jobs.h), never from
// the cgroup path or the job: unknown ("") matches no account rule.
TEST(AgentConfig, ASlurmAccountRuleNamesTheTeamOfTheJobsOfThatAccount) {
  const auto c = parse_agent_config("teams:\n  - {match: slurm_account, pattern: 'phys*', team: physics}\n", "x");
  const auto job = identity::classify_cgroup_path("/slurm/uid_1000/job_42/step_0");
  EXPECT_EQ(team_from_mappings(job, c.teams, "physics-lab").value_or("<none>"), "physics");
  EXPECT_EQ(team_from_mappings(job, c.teams, "chemistry").value_or("<none>"), "<none>");
  EXPECT_EQ(team_from_mappings(job, c.teams, "").value_or("<none>"), "<none>");
  const auto service = identity::classify_cgroup_path("/system.slice/phys.service");
  EXPECT_EQ(team_from_mappings(service, c.teams, "physics").value_or("<none>"), "<none>");  // no job
}

TEST(AgentConfig, TheAllocationSourceIsReadAndOnlyItsNamesAreAccepted) {
  EXPECT_EQ(parse_agent_config("", "x").allocation_source, "");
  const auto c = parse_agent_config("allocation:\n  source: hpc-job-mapping\n  hpc_job_mapping_dir: /run/map\n", "x");
  EXPECT_EQ(c.allocation_source, "hpc-job-mapping");
  EXPECT_EQ(c.hpc_job_mapping_dir, "/run/map");
  EXPECT_EQ(parse_agent_config("allocation: {source: none}", "x").allocation_source, "none");
  EXPECT_EQ(error_of("allocation:\n  source: k8s"),
            "config test.yaml:2:11: allocation.source must be one of auto, kubernetes, slurm, hpc-job-mapping, none; not 'k8s'");
  EXPECT_NE(error_of("allocation: {dir: /x}").find("unknown key 'dir' in allocation"), std::string::npos);
}

TEST(AgentConfig, LoadsFromAFileAndNamesAMissingOne) {
  char path[] = "/tmp/gpuledger-config-XXXXXX";
  int fd = ::mkstemp(path);
  ASSERT_GE(fd, 0);
  ::close(fd);
  std::ofstream(path) << "teams:\n  - {match: cgroup_prefix, pattern: /a, team: t}\n";
  EXPECT_EQ(load_agent_config(path).teams.size(), 1u);
  ::unlink(path);
  try {
    load_agent_config(path);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("cannot be read"), std::string::npos);
  }
}

// The reference in docs/operating.md ("The configuration file") is a file the
// agent accepts as written, with the values it shows.
TEST(AgentConfig, TheDocumentedExampleIsAcceptedAsWritten) {
  std::ifstream in(std::string(GPULEDGER_SOURCE_DIR) + "/docs/operating.md");
  ASSERT_TRUE(in) << "docs/operating.md";
  const std::string doc((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t section = doc.find("## The configuration file");
  ASSERT_NE(section, std::string::npos);
  const size_t start = doc.find("```yaml\n", section);
  ASSERT_NE(start, std::string::npos);
  const size_t end = doc.find("```", start + 8);
  ASSERT_NE(end, std::string::npos);
  const AgentConfig c = parse_agent_config(doc.substr(start + 8, end - start - 8), "docs/operating.md");
  EXPECT_EQ(c.extra_gpu_resources, std::vector<std::string>{"example.com/gpu"});
  EXPECT_EQ(c.kai_reservation_namespace, "runai-reservation");
  ASSERT_EQ(c.teams.size(), 5u);
  EXPECT_EQ(c.teams[3].pattern, "phys*");
  EXPECT_EQ(c.teams[3].team, "physics");
  EXPECT_EQ(c.teams[4].team, "research");
}

}  // namespace
}  // namespace gpuledger::config
