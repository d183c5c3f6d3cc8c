#pragma once
// CSV as the reports write it, read back for the tests: RFC 4180 (CRLF
// records, quoted fields with doubled quotes).
#include <string>
#include <vector>

namespace gpuledger::testing {

std::vector<std::vector<std::string>> parse_csv(const std::string& text);

}  // namespace gpuledger::testing
