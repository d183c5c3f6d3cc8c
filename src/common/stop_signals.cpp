#include "common/stop_signals.h"

#include <csignal>

namespace gpuledger {
namespace {
volatile std::sig_atomic_t g_stop = 0;
void on_signal(int) {
  g_stop = 1;
}
}  // namespace

void install_stop_signals() {
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);
}
bool stop_requested() {
  return g_stop != 0;
}

}  // namespace gpuledger
