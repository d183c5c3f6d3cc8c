#pragma once
// A dynamic symbol for hand-made symbol lists: a function of 16 bytes at
// `offset` in the file (its address 0x1000 above).
#include <cstdint>
#include <string>
#include <utility>

#include "probes/elf_symbols.h"

namespace gpuledger::probes {

inline ElfFunction function_at(std::string name, uint64_t offset) {
  ElfFunction f;
  f.name = std::move(name);
  f.address = offset + 0x1000;
  f.file_offset = offset;
  f.size = 16;
  return f;
}

}  // namespace gpuledger::probes
