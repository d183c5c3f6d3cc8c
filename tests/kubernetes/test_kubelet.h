#pragma once
// A kubelet for tests: a real gRPC server implementing the Pod Resources API
// v1 (List, GetAllocatableResources, Get) on a unix socket.
#include <grpcpp/grpcpp.h>

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "kubelet/podresources/v1/api.grpc.pb.h"

namespace gpuledger::testing {

class TestKubelet final : public v1::PodResourcesLister::Service {
 public:
  explicit TestKubelet(std::string socket_path);  // starts serving
  ~TestKubelet() override;
  void shutdown();
  const std::string& socket_path() const { return socket_path_; }

  void set_list(const v1::ListPodResourcesResponse& response);
  void set_allocatable(const v1::AllocatableResourcesResponse& response);
  void fail_with(std::optional<grpc::StatusCode> code);  // List answers this error until cleared
  int list_calls() const { return list_calls_.load(); }

  grpc::Status List(grpc::ServerContext*, const v1::ListPodResourcesRequest*,
                    v1::ListPodResourcesResponse* response) override;
  grpc::Status GetAllocatableResources(grpc::ServerContext*, const v1::AllocatableResourcesRequest*,
                                       v1::AllocatableResourcesResponse* response) override;
  grpc::Status Get(grpc::ServerContext*, const v1::GetPodResourcesRequest* request,
                   v1::GetPodResourcesResponse* response) override;

  // Builders.
  static v1::PodResources* add_pod(v1::ListPodResourcesResponse& r, const std::string& ns, const std::string& name);
  static v1::ContainerResources* add_container(v1::PodResources* pod, const std::string& name);
  static void add_devices(v1::ContainerResources* c, const std::string& resource,
                          const std::vector<std::string>& ids);

 private:
  std::string socket_path_;
  std::unique_ptr<grpc::Server> server_;
  std::mutex mu_;
  v1::ListPodResourcesResponse list_;
  v1::AllocatableResourcesResponse allocatable_;
  std::optional<grpc::StatusCode> fail_;
  std::atomic<int> list_calls_{0};
};

}  // namespace gpuledger::testing
