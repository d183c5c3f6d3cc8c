#include "test_kubelet.h"

#include <unistd.h>

#include <stdexcept>

namespace gpuledger::testing {

TestKubelet::TestKubelet(std::string socket_path) : socket_path_(std::move(socket_path)) {
  ::unlink(socket_path_.c_str());
  grpc::ServerBuilder builder;
  builder.AddListeningPort("unix:" + socket_path_, grpc::InsecureServerCredentials());
  builder.RegisterService(this);
  server_ = builder.BuildAndStart();
  if (!server_) throw std::runtime_error("test kubelet: cannot serve on " + socket_path_);
}

TestKubelet::~TestKubelet() { shutdown(); }

void TestKubelet::shutdown() {
  if (server_) {
    server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(1));
    server_->Wait();
    server_.reset();
    ::unlink(socket_path_.c_str());
  }
}

void TestKubelet::set_list(const v1::ListPodResourcesResponse& r) {
  std::lock_guard lock(mu_);
  list_ = r;
}
void TestKubelet::set_allocatable(const v1::AllocatableResourcesResponse& r) {
  std::lock_guard lock(mu_);
  allocatable_ = r;
}
void TestKubelet::fail_with(std::optional<grpc::StatusCode> code) {
  std::lock_guard lock(mu_);
  fail_ = code;
}

grpc::Status TestKubelet::List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                               v1::ListPodResourcesResponse* response) {
  ++list_calls_;
  std::lock_guard lock(mu_);
  if (fail_) return grpc::Status(*fail_, "test kubelet says no");
  *response = list_;
  return grpc::Status::OK;
}

grpc::Status TestKubelet::GetAllocatableResources(grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
                                                  v1::AllocatableResourcesResponse* response) {
  std::lock_guard lock(mu_);
  if (fail_) return grpc::Status(*fail_, "test kubelet says no");
  *response = allocatable_;
  return grpc::Status::OK;
}

grpc::Status TestKubelet::Get(grpc::ServerContext*, const v1::GetPodResourcesRequest* request,
                              v1::GetPodResourcesResponse* response) {
  std::lock_guard lock(mu_);
  for (const auto& p : list_.pod_resources())
    if (p.name() == request->pod_name() && p.namespace_() == request->pod_namespace()) {
      *response->mutable_pod_resources() = p;
      return grpc::Status::OK;
    }
  return grpc::Status(grpc::StatusCode::NOT_FOUND, "no such pod");
}

v1::PodResources* TestKubelet::add_pod(v1::ListPodResourcesResponse& r, const std::string& ns,
                                       const std::string& name) {
  auto* p = r.add_pod_resources();
  p->set_namespace_(ns);
  p->set_name(name);
  return p;
}

v1::ContainerResources* TestKubelet::add_container(v1::PodResources* pod, const std::string& name) {
  auto* c = pod->add_containers();
  c->set_name(name);
  return c;
}

void TestKubelet::add_devices(v1::ContainerResources* c, const std::string& resource,
                              const std::vector<std::string>& ids) {
  auto* d = c->add_devices();
  d->set_resource_name(resource);
  for (const auto& id : ids) d->add_device_ids(id);
}

}  // namespace gpuledger::testing
