#include "common/log.h"

namespace gpuledger::log {

void set_level(const std::string& level_name) {
  auto level = spdlog::level::from_str(level_name);
  // from_str answers "off" for names it does not know; keep info then.
  if (level == spdlog::level::off && level_name != "off") level = spdlog::level::info;
  spdlog::set_level(level);
}

}  // namespace gpuledger::log
