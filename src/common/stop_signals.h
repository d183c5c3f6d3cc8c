#pragma once
// SIGINT and SIGTERM ask a long-running command (the agent, the demo) to stop:
// the handlers only set a flag, which the command's loop reads.
namespace gpuledger {

void install_stop_signals();
bool stop_requested();

}  // namespace gpuledger
