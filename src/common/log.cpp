#include "common/log.h"

#include <spdlog/pattern_formatter.h>

#include "common/inert_text.h"

namespace gpuledger::log {
namespace {

// %* : the message, inert (spdlog's %v writes it raw).
class InertMessage : public spdlog::custom_flag_formatter {
 public:
  void format(const spdlog::details::log_msg& msg, const std::tm&, spdlog::memory_buf_t& dest) override {
    const std::string shown = inert_text(std::string_view(msg.payload.data(), msg.payload.size()));
    dest.append(shown.data(), shown.data() + shown.size());
  }
  std::unique_ptr<custom_flag_formatter> clone() const override { return std::make_unique<InertMessage>(); }
};

}  // namespace

void set_level(const std::string& level_name) {
  auto level = spdlog::level::from_str(level_name);
  // from_str answers "off" for names it does not know; keep info then.
  if (level == spdlog::level::off && level_name != "off") level = spdlog::level::info;
  spdlog::set_level(level);
}

std::unique_ptr<spdlog::formatter> inert_formatter() {
  auto f = std::make_unique<spdlog::pattern_formatter>();
  f->add_flag<InertMessage>('*').set_pattern("[%Y-%m-%d %H:%M:%S.%e] [%^%l%$] %*");
  return f;
}

void make_inert() { spdlog::set_formatter(inert_formatter()); }

}  // namespace gpuledger::log
