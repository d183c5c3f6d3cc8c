#pragma once
// The project's one error idiom: operations that cannot do what they were asked
// throw gpuledger::Error with a message a operator can act on. Lookups that may
// legitimately find nothing return std::optional instead.
#include <stdexcept>
#include <string>

namespace gpuledger {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

}  // namespace gpuledger
