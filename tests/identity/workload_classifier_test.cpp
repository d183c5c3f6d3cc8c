#include "identity/workload_classifier.h"

#include <gtest/gtest.h>

#include <ostream>
#include <random>
#include <string>
#include <vector>

namespace gpuledger::identity {

// So that a failing row prints every field, not a byte dump.
void PrintTo(const Workload& w, std::ostream* os) {
  *os << "{id=\"" << w.id << "\" kind=" << to_string(w.kind) << " cgroup_path=\"" << w.cgroup_path
      << "\" pod_uid=\"" << w.pod_uid << "\" container_id=\"" << w.container_id
      << "\" runtime=\"" << w.container_runtime << "\" qos=\"" << w.qos_class << "\" unit=\""
      << w.systemd_unit << "\" slurm_job=\"" << w.slurm_job << "\" slurm_step=\"" << w.slurm_step
      << "\"}";
}

namespace {

using K = WorkloadKind;

const std::string kUid = "4f5e6d7c-1a2b-4c3d-8e9f-0a1b2c3d4e5f";
const std::string kUidU = "4f5e6d7c_1a2b_4c3d_8e9f_0a1b2c3d4e5f";      // systemd driver form
const std::string kUidUpper = "4F5E6D7C-1A2B-4C3D-8E9F-0A1B2C3D4E5F";
const std::string kStatic = "6b1c7a0e5f3d2c4b9a8e7f6d5c4b3a21";        // static/mirror pod
const std::string kCid = "3f2a9c1e7b4d8f60a5e2c9b1d7f3a8e4c6b0d2f9e1a7c5b3d8f4e2a6c9b1d7f3";
const std::string kCid2 = "9e8d7c6b5a4f3e2d1c0b9a8f7e6d5c4b3a2f1e0d9c8b7a6f5e4d3c2b1a0f9e8d";
const std::string kCidUpper = "3F2A9C1E7B4D8F60A5E2C9B1D7F3A8E4C6B0D2F9E1A7C5B3D8F4E2A6C9B1D7F3";
const std::string kNode = "aaaabbbbccccddddeeeeffff00001111222233334444555566667777888899990000";
const std::string kNode64 = kNode.substr(0, 64);

struct Row {
  std::string name;  // test name suffix: [A-Za-z0-9_] only
  std::string input;
  Workload want;
};

void PrintTo(const Row& row, std::ostream* os) { *os << row.name << " \"" << row.input << "\""; }

Workload k8s(std::string path, std::string uid, std::string qos, std::string cid = "",
             std::string runtime = "") {
  Workload w;
  w.id = "k8s/" + uid + (cid.empty() ? "" : "/" + cid);
  w.kind = K::kKubernetes;
  w.cgroup_path = std::move(path);
  w.pod_uid = std::move(uid);
  w.container_id = std::move(cid);
  w.container_runtime = std::move(runtime);
  w.qos_class = std::move(qos);
  return w;
}

Workload container(std::string path, std::string cid, std::string runtime) {
  Workload w;
  w.id = "container/" + cid;
  w.kind = K::kContainer;
  w.cgroup_path = std::move(path);
  w.container_id = std::move(cid);
  w.container_runtime = std::move(runtime);
  return w;
}

Workload systemd(std::string path, std::string unit) {
  Workload w;
  w.id = "systemd/" + unit;
  w.kind = K::kSystemd;
  w.cgroup_path = std::move(path);
  w.systemd_unit = std::move(unit);
  return w;
}

Workload slurm(std::string path, std::string job, std::string step) {
  Workload w;
  w.id = "slurm/" + job;
  w.kind = K::kSlurm;
  w.cgroup_path = std::move(path);
  w.slurm_job = std::move(job);
  w.slurm_step = std::move(step);
  return w;
}

Workload cgroup(std::string path) {
  Workload w;
  w.id = path == "/" ? "cgroup/" : "cgroup" + path;
  w.kind = K::kCgroup;
  w.cgroup_path = std::move(path);
  return w;
}


std::vector<Row> rows() {
  const std::string sd_burst = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUidU + ".slice";
  const std::string sd_be = "/kubepods.slice/kubepods-besteffort.slice/kubepods-besteffort-pod" + kUidU + ".slice";
  const std::string sd_guar = "/kubepods.slice/kubepods-pod" + kUidU + ".slice";
  std::vector<Row> r;
  auto add = [&](std::string name, std::string input, Workload want) {
    r.push_back({std::move(name), std::move(input), std::move(want)});
  };
  auto add_same = [&](std::string name, const std::string& path, Workload want) {
    add(std::move(name), path, std::move(want));
  };

  // ---- Kubernetes, cgroupfs driver (cgroup v2, and v1 hierarchies: same shape) ----
  {
    std::string p = "/kubepods/burstable/pod" + kUid + "/" + kCid;
    add_same("CgroupfsBurstable", p, k8s(p, kUid, "burstable", kCid));
    p = "/kubepods/besteffort/pod" + kUid + "/" + kCid;
    add_same("CgroupfsBesteffort", p, k8s(p, kUid, "besteffort", kCid));
    p = "/kubepods/pod" + kUid + "/" + kCid;
    add_same("CgroupfsGuaranteed", p, k8s(p, kUid, "guaranteed", kCid));
    p = "/kubepods/burstable/pod" + kUid;
    add_same("CgroupfsPodLevel", p, k8s(p, kUid, "burstable"));
    p = "/kubepods/burstable/pod" + kStatic + "/" + kCid;
    add_same("CgroupfsStaticPod", p, k8s(p, kStatic, "burstable", kCid));
    p = "/kubepods/pod" + kUid + "/" + kCid + "/nested/deeper";
    add_same("CgroupfsNestedUnderContainer", p, k8s(p, kUid, "guaranteed", kCid));
    // A kubelet --cgroup-root is configured (ClassifyWithRoots below); unconfigured it is just a path.
    p = "/kubelet/kubepods/burstable/pod" + kUid + "/" + kCid;
    add_same("CgroupfsKubeletRootUnconfigured", p, cgroup(p));
    p = "/kubepods/burstable/pod" + kUid + "/crio-" + kCid;
    add_same("CgroupfsCrio", p, k8s(p, kUid, "burstable", kCid, "cri-o"));
    p = "/kubepods/burstable/pod" + kUidUpper + "/" + kCidUpper;
    add_same("CgroupfsUppercaseHex", p, k8s(p, kUid, "burstable", kCid));
    p = "/kubepods/burstable/pod" + kUidU + "/" + kCid;
    add_same("CgroupfsUnderscoreUid", p, k8s(p, kUid, "burstable", kCid));
    p = "/kubepods/burstable/pod" + kUid + "/not-a-container";
    add_same("CgroupfsPodSubcgroupNotContainer", p, k8s(p, kUid, "burstable"));
    p = "/kubepods/burstable/pod" + kUid + "/" + std::string(64, 'g');
    add_same("CgroupfsContainerIdNotHex", p, k8s(p, kUid, "burstable"));
    // A k3d node is a docker container: its pods are its own until its cgroup is configured as a root.
    p = "/docker/" + kNode64 + "/kubepods/besteffort/pod" + kUid + "/" + kCid;
    add_same("CgroupfsK3dInsideDockerUnconfigured", p, container(p, kNode64, "docker"));
  }

  // ---- Kubernetes, systemd driver ----
  {
    std::string p = sd_burst + "/cri-containerd-" + kCid + ".scope";
    add_same("SystemdBurstableContainerd", p, k8s(p, kUid, "burstable", kCid, "containerd"));
    p = sd_be + "/cri-containerd-" + kCid + ".scope";
    add_same("SystemdBesteffortContainerd", p, k8s(p, kUid, "besteffort", kCid, "containerd"));
    p = sd_guar + "/cri-containerd-" + kCid + ".scope";
    add_same("SystemdGuaranteedContainerd", p, k8s(p, kUid, "guaranteed", kCid, "containerd"));
    p = sd_burst;
    add_same("SystemdPodLevel", p, k8s(p, kUid, "burstable"));
    p = sd_burst + "/crio-" + kCid + ".scope";
    add_same("SystemdCrio", p, k8s(p, kUid, "burstable", kCid, "cri-o"));
    // conmon monitors the container; it is not the workload, so it is pod-level.
    p = sd_burst + "/crio-conmon-" + kCid + ".scope";
    add_same("SystemdCrioConmonIsPodLevel", p, k8s(p, kUid, "burstable"));
    p = sd_burst + "/crio-" + kCid + ".scope/container";
    add_same("SystemdCrioNested", p, k8s(p, kUid, "burstable", kCid, "cri-o"));
    p = sd_burst + "/docker-" + kCid + ".scope";
    add_same("SystemdCriDockerd", p, k8s(p, kUid, "burstable", kCid, "docker"));
    p = sd_burst + "/cri-containerd-" + kCid + ".scope/init";
    add_same("SystemdNestedInit", p, k8s(p, kUid, "burstable", kCid, "containerd"));
    p = sd_burst + "/cri-containerd-" + kCid + ".scope/system.slice/foo.service";
    add_same("SystemdServiceInsideContainerLoses", p, k8s(p, kUid, "burstable", kCid, "containerd"));
    p = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kStatic + ".slice/cri-containerd-" + kCid + ".scope";
    add_same("SystemdStaticPod", p, k8s(p, kStatic, "burstable", kCid, "containerd"));
    p = "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod" + kUid + ".slice/cri-containerd-" + kCid + ".scope";
    add_same("SystemdDashedUidAccepted", p, k8s(p, kUid, "burstable", kCid, "containerd"));
    p = sd_burst + "/cri-containerd-nothex.scope";
    add_same("SystemdContainerIdNotHex", p, k8s(p, kUid, "burstable"));
    p = "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-burstable.slice/kubelet-kubepods-burstable-pod" + kUidU +
        ".slice/cri-containerd-" + kCid + ".scope";
    add_same("KubeletSlicePrefix", p, k8s(p, kUid, "burstable", kCid, "containerd"));
    p = "/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-pod" + kUidU + ".slice/cri-containerd-" + kCid + ".scope";
    add_same("KubeletSliceGuaranteed", p, k8s(p, kUid, "guaranteed", kCid, "containerd"));
    p = "/system.slice/containerd.service/kubepods-burstable-pod" + kUidU + ".slice:cri-containerd:" + kCid;
    add_same("ContainerdColonNotation", p, k8s(p, kUid, "burstable", kCid, "containerd"));
    p = "/system.slice/containerd.service/kubepods-besteffort-pod" + kUidU + ".slice:cri-containerd:" + kCid + "/sub";
    add_same("ContainerdColonNotationNested", p, k8s(p, kUid, "besteffort", kCid, "containerd"));
    p = "/system.slice/containerd.service/kubepods-pod" + kUidU + ".slice:crio:" + kCid;
    add_same("ColonNotationCrioGuaranteed", p, k8s(p, kUid, "guaranteed", kCid, "cri-o"));
    // A kind node is a docker container; unconfigured, the pods inside it are the node's.
    p = "/system.slice/docker-" + kNode64 + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
        "kubelet-kubepods-besteffort-pod" + kUidU + ".slice/cri-containerd-" + kCid + ".scope";
    add_same("KindNodeInDockerUnconfigured", p, container(p, kNode64, "docker"));
  }

  // ---- containers outside Kubernetes ----
  {
    std::string p = "/docker/" + kCid;
    add_same("DockerCgroupfs", p, container(p, kCid, "docker"));
    p = "/docker/" + kCid + "/sub/deeper";
    add_same("DockerCgroupfsNested", p, container(p, kCid, "docker"));
    p = "/system.slice/docker-" + kCid + ".scope";
    add_same("DockerSystemd", p, container(p, kCid, "docker"));
    p = "/system.slice/docker-" + kCid + ".scope/docker/" + kCid2;
    add_same("DockerInDockerOuterWins", p, container(p, kCid, "docker"));
    p = "/system.slice/docker-" + kCid + ".scope/system.slice/nginx.service";
    add_same("ServiceInsideContainerLoses", p, container(p, kCid, "docker"));
    p = "/machine.slice/libpod-" + kCid + ".scope";
    add_same("PodmanSystemd", p, container(p, kCid, "podman"));
    // A rootless container is its user's: named with the user's manager in front.
    p = "/user.slice/user-1000.slice/user@1000.service/user.slice/libpod-" + kCid + ".scope/container";
    {
      Workload w = container(p, kCid, "podman");
      w.id = "container/user@1000.service/" + kCid;
      add_same("PodmanRootless", p, w);
    }
    p = "/libpod_parent/libpod-" + kCid;
    add_same("PodmanCgroupfs", p, container(p, kCid, "podman"));
    // conmon is not a container: falls through to its systemd scope.
    p = "/machine.slice/libpod-conmon-" + kCid + ".scope";
    add_same("PodmanConmonIsSystemdScope", p, systemd(p, "libpod-conmon-" + kCid + ".scope"));
    // A CRI scope whose pod cgroup is malformed is no pod the kubelet made: only its scope is known.
    p = "/kubepods.slice/kubepods-pod4f5e6d7c_1a2b-4c3d_8e9f_0a1b2c3d4e5f.slice/cri-containerd-" + kCid + ".scope";
    add_same("CriScopeWithMalformedPod", p, systemd(p, "cri-containerd-" + kCid + ".scope"));
  }

  // ---- systemd ----
  add_same("SystemdService", "/system.slice/nvidia-persistenced.service",
           systemd("/system.slice/nvidia-persistenced.service", "nvidia-persistenced.service"));
  add_same("SystemdSessionScope", "/user.slice/user-1000.slice/session-3.scope",
           systemd("/user.slice/user-1000.slice/session-3.scope", "session-3.scope"));
  add_same("SystemdUserService", "/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service",
           systemd("/user.slice/user-1000.slice/user@1000.service/app.slice/foo.service", "user@1000.service/foo.service"));
  add_same("SystemdUserManagerItself", "/user.slice/user-1000.slice/user@1000.service/init.scope",
           systemd("/user.slice/user-1000.slice/user@1000.service/init.scope", "user@1000.service/init.scope"));
  add_same("SystemdServiceSubcgroup", "/system.slice/foo.service/worker",
           systemd("/system.slice/foo.service/worker", "foo.service"));
  add_same("UserManagerItself", "/user.slice/user-1000.slice/user@1000.service",
           systemd("/user.slice/user-1000.slice/user@1000.service", "user@1000.service"));
  add_same("SystemdInitScope", "/init.scope", systemd("/init.scope", "init.scope"));
  add_same("SystemdTemplateInstance", "/system.slice/system-getty.slice/getty@tty1.service",
           systemd("/system.slice/system-getty.slice/getty@tty1.service", "getty@tty1.service"));
  add_same("SystemdContainerdServiceItself", "/system.slice/containerd.service",
           systemd("/system.slice/containerd.service", "containerd.service"));
  add_same("DockerScopeNotHexIsSystemd", "/system.slice/docker-xyz.scope",
           systemd("/system.slice/docker-xyz.scope", "docker-xyz.scope"));
  add_same("BareSuffixIsNotAUnit", "/system.slice/.service", cgroup("/system.slice/.service"));

  // ---- Slurm ----
  add_same("SlurmV2Step", "/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0",
           slurm("/system.slice/slurmstepd.scope/job_1234/step_0/user/task_0", "1234", "0"));
  add_same("SlurmV2Batch", "/system.slice/slurmstepd.scope/job_1234/step_batch",
           slurm("/system.slice/slurmstepd.scope/job_1234/step_batch", "1234", "batch"));
  add_same("SlurmV2Extern", "/system.slice/slurmstepd.scope/job_1234/step_extern",
           slurm("/system.slice/slurmstepd.scope/job_1234/step_extern", "1234", "extern"));
  add_same("SlurmV2JobOnly", "/system.slice/slurmstepd.scope/job_1234",
           slurm("/system.slice/slurmstepd.scope/job_1234", "1234", ""));
  add_same("SlurmV2MultipleSlurmd", "/system.slice/node7_slurmstepd.scope/job_9/step_interactive",
           slurm("/system.slice/node7_slurmstepd.scope/job_9/step_interactive", "9", "interactive"));
  add_same("SlurmStepdItselfIsSystemd", "/system.slice/slurmstepd.scope/system",
           systemd("/system.slice/slurmstepd.scope/system", "slurmstepd.scope"));
  add_same("SlurmV1", "/slurm/uid_1000/job_1234/step_0/task_1",
           slurm("/slurm/uid_1000/job_1234/step_0/task_1", "1234", "0"));
  add_same("SlurmV1MultipleSlurmd", "/slurm_nodename/uid_1000/job_77/step_2",
           slurm("/slurm_nodename/uid_1000/job_77/step_2", "77", "2"));
  add_same("SlurmJobNotNumeric", "/slurm/uid_1000/job_abc/step_0", cgroup("/slurm/uid_1000/job_abc/step_0"));
  add_same("JobWithoutSlurmAncestor", "/foo/job_12/step_0", cgroup("/foo/job_12/step_0"));

  // ---- identities forged from below: each stays its maker's ----
  {
    const std::string user = "/user.slice/user-1000.slice/user@1000.service";
    std::string p = user + "/app.slice/kubepods/burstable/pod" + kUid + "/" + kCid;
    add_same("PodPathInsideAUsersManager", p, systemd(p, "user@1000.service"));
    p = user + "/app.slice/kubepods.slice/kubepods-pod" + kUidU + ".slice/cri-containerd-" + kCid + ".scope";
    {
      Workload w = container(p, kCid, "containerd");
      w.id = "container/user@1000.service/" + kCid;
      add_same("SystemdPodPathInsideAUsersManager", p, w);
    }
    p = user + "/app.slice/trainer.service";
    add_same("SystemServiceNameInsideAUsersManager", p, systemd(p, "user@1000.service/trainer.service"));
    p = user + "/app.slice/docker-" + kCid2 + ".scope";
    {
      Workload w = container(p, kCid2, "docker");
      w.id = "container/user@1000.service/" + kCid2;
      add_same("DockerScopeInsideAUsersManager", p, w);
    }
    p = user + "/slurm/uid_0/job_77/step_0";
    add_same("SlurmJobInsideAUsersManager", p, systemd(p, "user@1000.service"));
    // A pod's container that makes sub-cgroups naming another pod stays itself.
    p = "/kubepods/burstable/pod" + kUid + "/" + kCid + "/kubepods/burstable/pod" + kStatic + "/" + kCid2;
    add_same("PodPathInsideAPod", p, k8s(p, kUid, "burstable", kCid));
    p = "/kubepods/burstable/extra/pod" + kUid + "/" + kCid;
    add_same("PodBelowAnUnknownLevel", p, cgroup(p));
    p = "/system.slice/foo.service/kubepods/pod" + kUid + "/" + kCid;
    add_same("PodPathInsideADelegatedService", p, systemd(p, "foo.service"));
    p = "/system.slice/foo.service/bar.service";
    add_same("ServiceInsideADelegatedService", p, systemd(p, "foo.service"));
    p = "/system.slice/foo.service/docker-" + kCid + ".scope";
    add_same("ContainerScopeInsideADelegatedService", p, systemd(p, "foo.service"));
    p = "/system.slice/slurmstepd.scope/job_1/step_0/user/job_2/step_0";
    add_same("SlurmJobInsideAJob", p, slurm(p, "1", "0"));
    p = "/system.slice/foo.service/slurmstepd.scope/job_5";
    add_same("SlurmPathInsideAService", p, systemd(p, "foo.service"));
  }

  // ---- everything else, and normalisation ----
  add("Root", "/", cgroup("/"));
  add("Empty", "", cgroup("/"));
  add("OnlySlashes", "////", cgroup("/"));
  add_same("Plain", "/foo/bar", cgroup("/foo/bar"));
  add("NoLeadingSlashTrailingSlash", "foo/bar/", cgroup("/foo/bar"));
  add("DoubleSlashes", "//kubepods//burstable///pod" + kUid + "//" + kCid + "//",
      k8s("/kubepods/burstable/pod" + kUid + "/" + kCid, kUid, "burstable", kCid));
  add_same("KubepodsSliceAlone", "/kubepods.slice", cgroup("/kubepods.slice"));
  add_same("KubepodsQosSliceAlone", "/kubepods.slice/kubepods-burstable.slice",
           cgroup("/kubepods.slice/kubepods-burstable.slice"));
  add_same("KubepodsQosDirAlone", "/kubepods/burstable", cgroup("/kubepods/burstable"));
  {
    std::string p = "/kubepods/burstable/podNOTAUUID/" + kCid;
    add_same("PodNotAUuid", p, cgroup(p));
    p = "/kubepods/burstable/pod" + kUid.substr(0, 35) + "/" + kCid;
    add_same("PodUidTooShort", p, cgroup(p));
    p = "/kubepods/burstable/pod4f5e6d7c1-a2b-4c3d-8e9f-0a1b2c3d4e5f/" + kCid;
    add_same("PodUidWrongGrouping", p, cgroup(p));
    p = "/kubepods/burstable/pod" + std::string(32, 'z') + "/" + kCid;
    add_same("PodStaticNotHex", p, cgroup(p));
    p = "/foo/pod" + kUid + "/" + kCid;
    add_same("PodWithoutKubepodsAncestor", p, cgroup(p));
    p = "/docker/nothex";
    add_same("DockerIdNotHex", p, cgroup(p));
    p = "/docker/" + kCid.substr(0, 12);
    add_same("DockerBareShortIdNotContainer", p, cgroup(p));
    p = "/other/" + kCid;
    add_same("BareHexOutsideDockerAndPod", p, cgroup(p));
  }
  add_same("NonAscii", "/système.slice/ünïcode-☃.service", systemd("/système.slice/ünïcode-☃.service", "ünïcode-☃.service"));
  add_same("NonAsciiCgroup", "/日本/語", cgroup("/日本/語"));
  return r;
}

// Configured roots: a kubelet --cgroup-root, a kind or k3d node in a container.
TEST(ClassifyWithRoots, PodsBelowAConfiguredRootAreRecognised) {
  ClassifierOptions roots;
  roots.cgroup_roots = {"/kubelet", "/docker/" + kNode64, "/system.slice/docker-" + kNode64 + ".scope/"};
  std::string p = "/kubelet/kubepods/burstable/pod" + kUid + "/" + kCid;
  EXPECT_EQ(classify_cgroup_path(p, roots), k8s(p, kUid, "burstable", kCid));
  p = "/docker/" + kNode64 + "/kubepods/besteffort/pod" + kUid + "/" + kCid;
  EXPECT_EQ(classify_cgroup_path(p, roots), k8s(p, kUid, "besteffort", kCid));
  p = "/system.slice/docker-" + kNode64 + ".scope/kubelet.slice/kubelet-kubepods.slice/kubelet-kubepods-besteffort.slice/"
      "kubelet-kubepods-besteffort-pod" + kUidU + ".slice/cri-containerd-" + kCid + ".scope";
  EXPECT_EQ(classify_cgroup_path(p, roots), k8s(p, kUid, "besteffort", kCid, "containerd"));
  p = "/kubelet/system.slice/slurmstepd.scope/job_3/step_1";
  EXPECT_EQ(classify_cgroup_path(p, roots), slurm(p, "3", "1"));
  // The node's own processes are still the node container.
  p = "/docker/" + kNode64 + "/system.slice/containerd.service";
  EXPECT_EQ(classify_cgroup_path(p, roots), container(p, kNode64, "docker"));
  // A root must match whole components, and a pod deeper than the kubelet puts it is still refused.
  p = "/kubeletx/kubepods/pod" + kUid + "/" + kCid;
  EXPECT_EQ(classify_cgroup_path(p, roots), cgroup(p));
  p = "/kubelet/x/kubepods/pod" + kUid + "/" + kCid;
  EXPECT_EQ(classify_cgroup_path(p, roots), cgroup(p));
}

class ClassifyShapes : public ::testing::TestWithParam<Row> {};

TEST_P(ClassifyShapes, AllFieldsExact) {
  const Row& row = GetParam();
  EXPECT_EQ(classify_cgroup_path(row.input), row.want) << "input: " << row.input;
}

INSTANTIATE_TEST_SUITE_P(Rows, ClassifyShapes, ::testing::ValuesIn(rows()),
                         [](const ::testing::TestParamInfo<Row>& info) { return info.param.name; });

TEST(WorkloadKind, ToString) {
  EXPECT_EQ(to_string(K::kKubernetes), "kubernetes");
  EXPECT_EQ(to_string(K::kContainer), "container");
  EXPECT_EQ(to_string(K::kSystemd), "systemd");
  EXPECT_EQ(to_string(K::kSlurm), "slurm");
  EXPECT_EQ(to_string(K::kCgroup), "cgroup");
  EXPECT_EQ(to_string(static_cast<K>(99)), "unknown");
}

// Invariants that must hold for any input at all.
void check_invariants(const std::string& input) {
  SCOPED_TRACE("input: " + input);
  Workload w;
  ASSERT_NO_THROW(w = classify_cgroup_path(input));
  ASSERT_FALSE(w.id.empty());
  ASSERT_FALSE(w.cgroup_path.empty());
  EXPECT_EQ(w.cgroup_path.front(), '/');
  EXPECT_TRUE(w.cgroup_path == "/" || w.cgroup_path.back() != '/');
  EXPECT_EQ(w.cgroup_path.find("//"), std::string::npos);
  const std::string prefix = w.kind == K::kKubernetes ? "k8s/" : std::string(to_string(w.kind)) + "/";
  EXPECT_EQ(w.id.rfind(prefix, 0), 0u) << w.id;
  // Classifying the normalised path gives the same answer.
  EXPECT_EQ(classify_cgroup_path(w.cgroup_path), w);
}

TEST(ClassifyFuzz, RandomAndMutatedPathsNeverCrash) {
  std::mt19937 rng(12345);  // fixed seed: reproducible
  auto pick = [&](std::size_t n) { return std::uniform_int_distribution<std::size_t>(0, n - 1)(rng); };
  std::vector<std::string> seeds;
  for (const auto& row : rows()) seeds.push_back(row.input);
  const std::vector<std::string> frags = {
      "kubepods", "kubepods.slice", "burstable", "besteffort", "pod" + kUid, "pod" + kUidU, "pod" + kStatic,
      "kubepods-burstable-pod" + kUidU + ".slice", "kubepods-pod", "-pod", ".slice", ".scope", ".service",
      "cri-containerd-" + kCid + ".scope", "crio-", "crio-conmon-", "docker-", "libpod-", kCid, "docker",
      "slurm", "slurmstepd.scope", "job_", "job_1", "step_", "step_0", ":", "::", "a:b:c", ":cri-containerd:",
      "/", "//", "", "-", "_", "\xff", "\xc3\xa9", std::string(1, '\0'), "pod", "uid_0", "user@1000.service"};
  const std::string bytes = "/-_.:@abcdefABCDEF0123456789podjobstepkubeslicescopeservice\xff\x80";

  for (int i = 0; i < 5000; ++i) {
    std::string s;
    switch (i % 3) {
      case 0:  // concatenation of fragments
        for (std::size_t n = pick(12); n > 0; --n) s += frags[pick(frags.size())] + (pick(3) ? "/" : "");
        break;
      case 1:  // random bytes from an alphabet that hits the parsers' edges
        for (std::size_t n = pick(200); n > 0; --n) s += bytes[pick(bytes.size())];
        break;
      default: {  // a real shape with a few mutations
        s = seeds[pick(seeds.size())];
        for (std::size_t n = 1 + pick(4); n > 0; --n) {
          const std::size_t pos = s.empty() ? 0 : pick(s.size() + 1);
          switch (pick(4)) {
            case 0: if (pos < s.size()) s[pos] = bytes[pick(bytes.size())]; break;
            case 1: if (pos < s.size()) s.erase(pos, 1 + pick(8)); break;
            case 2: s.insert(pos, frags[pick(frags.size())]); break;
            default: s = s.substr(0, pos); break;
          }
        }
      }
    }
    check_invariants(s);
    if (HasFatalFailure() || HasFailure()) return;
  }
}

TEST(ClassifyFuzz, VeryLongPaths) {
  std::string deep;
  for (int i = 0; i < 20000; ++i) deep += "/d" + std::to_string(i);
  check_invariants(deep);
  check_invariants(std::string(1 << 20, '/'));
  check_invariants(std::string(1 << 20, 'a'));
  // A real container far down a very deep path is still found.
  std::string p = "/kubepods/pod" + kUid + "/" + kCid + deep;
  EXPECT_EQ(classify_cgroup_path(p), k8s(p, kUid, "guaranteed", kCid));
}

}  // namespace
}  // namespace gpuledger::identity
