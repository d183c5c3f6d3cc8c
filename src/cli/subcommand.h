#pragma once
// One subcommand of the gpuledger binary. Each declares its own options in its
// own file (the add_*_command functions of commands.h) into a plain options
// struct, and says what runs once the command line is parsed; main.cpp only
// lists them, parses and dispatches.
#include <functional>

namespace CLI {
class App;
}

namespace gpuledger::cli {

struct Subcommand {
  CLI::App* app = nullptr;   // the user named this subcommand when it parsed anything
  std::function<int()> run;  // the exit status
};

}  // namespace gpuledger::cli
