#include "cli/empty_option_values.h"

namespace gpuledger::cli {

std::vector<std::string> split_empty_option_values(int argc, const char* const* argv) {
  std::vector<std::string> out;
  bool options_ended = false;
  for (int i = 0; i < argc; ++i) {
    std::string arg = argv[i];
    if (i == 0 || options_ended) {
      out.push_back(std::move(arg));
      continue;
    }
    if (arg == "--") options_ended = true;
    const bool empty_value = arg.size() > 3 && arg.compare(0, 2, "--") == 0 && arg.find('=') == arg.size() - 1;
    if (empty_value) {
      arg.pop_back();
      out.push_back(std::move(arg));
      out.emplace_back();
    } else {
      out.push_back(std::move(arg));
    }
  }
  return out;
}

}  // namespace gpuledger::cli
