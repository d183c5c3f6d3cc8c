#pragma once
// Tenants name their cgroups, processes and files: any of those bytes can reach
// a label value, a JSON string, the store or a report. One function turns any
// bytes into valid UTF-8 so one bad name cannot make a whole page unparsable.
#include <string>
#include <string_view>

namespace gpuledger {

// True when `bytes` is well-formed UTF-8 (no overlongs, surrogates or code
// points past U+10FFFF).
bool is_valid_utf8(std::string_view bytes);

// `bytes` with every ill-formed sequence replaced by U+FFFD (one per maximal
// ill-formed subpart, as Unicode recommends), so nothing is dropped silently.
std::string valid_utf8(std::string_view bytes);

// Length of the well-formed sequence starting at bytes[i] (1-4), or 0 when the
// bytes there do not start one; then `bad` is how many bytes form the maximal
// ill-formed subpart (at least 1). Sets `code_point` when well-formed.
size_t utf8_sequence(std::string_view bytes, size_t i, size_t& bad, char32_t& code_point);

}  // namespace gpuledger
