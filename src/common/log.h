#pragma once
// One logging facade (spdlog). libbpf's own messages are routed here too (see
// probes/libbpf_logging.cpp), so the agent has a single log stream.
#include <spdlog/spdlog.h>

namespace gpuledger::log {

// Sets the level from a name ("trace".."off"); unknown names keep "info".
void set_level(const std::string& level_name);

}  // namespace gpuledger::log
