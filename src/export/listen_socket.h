#pragma once
// The agent's listening TCP socket. No SO_REUSEPORT: a port another process
// holds is an error naming the address, never a silent share of the scrapes.
#include <string>

namespace gpuledger::exporter {

// Binds and listens on host:port (port 0 picks one); returns the non-blocking
// socket. Throws Error "cannot listen on HOST:PORT: why".
int listen_on(const std::string& host, int port);
int bound_port(int fd);

}  // namespace gpuledger::exporter
