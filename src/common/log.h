#pragma once
// One logging facade (spdlog). libbpf's own messages are routed here too (see
// probes/libbpf_logging.cpp), so the agent has a single log stream.
#include <spdlog/spdlog.h>

namespace gpuledger::log {

// Sets the level from a name ("trace".."off"); unknown names keep "info".
void set_level(const std::string& level_name);

// Makes every log line inert (common/inert_text.h): a message's controls,
// bidi and invisible characters - a tenant's cgroup or file name in it - are
// written escaped, so a log read in a terminal cannot be driven by a tenant
// and a name with a newline cannot forge a second line. Applies to every
// logger and sink from now on; main() calls it first.
void make_inert();

// The pattern make_inert() installs: spdlog's default (the default logger has no name), the message inert.
std::unique_ptr<spdlog::formatter> inert_formatter();

}  // namespace gpuledger::log
