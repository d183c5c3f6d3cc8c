#pragma once
// The functions an executable or library names in its static symbol table
// (.symtab): where a program that links the CUDA runtime statically (nvcc's
// default) keeps cudaMalloc and friends - unless it was stripped. Global and
// weak definitions in file-backed segments, with their uprobe file offsets,
// and the local ones named cuda* that are defined once (CUDA 13's static
// runtime binds its entry points locally).
#include <string>
#include <vector>

#include "probes/elf_symbols.h"

namespace gpuledger::probes {

// Empty when the file has no .symtab (stripped). Throws Error when the file
// cannot be read as a 64-bit ELF.
std::vector<ElfFunction> read_static_functions(const std::string& path);
// The same from a verified descriptor (`path` only names it in errors).
std::vector<ElfFunction> read_static_functions(int fd, const std::string& path);

}  // namespace gpuledger::probes
