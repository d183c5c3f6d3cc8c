#include "probes/static_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <set>
#include <tuple>

#include "common/error.h"

namespace gpuledger::probes {
namespace {

struct Loaded {
  uint64_t vaddr, offset, filesz;
};

}  // namespace

std::vector<ElfFunction> read_static_functions(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw Error("ELF " + path + ": cannot open");
  std::unique_ptr<int, void (*)(int*)> fd_owner(&fd, [](int* f) { ::close(*f); });
  return read_static_functions(fd, path);
}

std::vector<ElfFunction> read_static_functions(int fd, const std::string& path) {
  if (elf_version(EV_CURRENT) == EV_NONE) throw Error("ELF " + path + ": libelf initialisation failed");
  // ELF_C_READ: a tenant's file may shrink under us (see elf_symbols.cpp).
  std::unique_ptr<Elf, int (*)(Elf*)> elf(elf_begin(fd, ELF_C_READ, nullptr), elf_end);
  if (!elf || elf_kind(elf.get()) != ELF_K_ELF || gelf_getclass(elf.get()) != ELFCLASS64)
    throw Error("ELF " + path + ": not a 64-bit ELF file");

  size_t phnum = 0;
  if (elf_getphdrnum(elf.get(), &phnum) != 0) throw Error("ELF " + path + ": no program headers");
  std::vector<Loaded> segments;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr ph;
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &ph) && ph.p_type == PT_LOAD && ph.p_filesz > 0)
      segments.push_back({ph.p_vaddr, ph.p_offset, ph.p_filesz});
  }

  std::vector<ElfFunction> out;
  // CUDA 13's static runtime binds its entry points locally (cudaMalloc,
  // cudaLaunchKernel are `t` in nm): a local runtime-named function defined
  // once is the entry point. Two locals of one name are ambiguous: neither.
  std::map<std::string, std::vector<ElfFunction>> locals;
  for (Elf_Scn* scn = elf_nextscn(elf.get(), nullptr); scn; scn = elf_nextscn(elf.get(), scn)) {
    GElf_Shdr sh;
    if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0) continue;
    Elf_Data* data = elf_getdata(scn, nullptr);
    if (!data) continue;
    const size_t n = std::min<size_t>(data->d_size / sh.sh_entsize, INT_MAX);
    for (size_t i = 1; i < n; ++i) {
      GElf_Sym sym;
      if (!gelf_getsym(data, static_cast<int>(i), &sym) || sym.st_shndx == SHN_UNDEF) continue;
      const unsigned type = GELF_ST_TYPE(sym.st_info), bind = GELF_ST_BIND(sym.st_info);
      if (type != STT_FUNC) continue;
      const bool local = bind == STB_LOCAL;
      if (!local && bind != STB_GLOBAL && bind != STB_WEAK) continue;
      const char* name = elf_strptr(elf.get(), sh.sh_link, sym.st_name);
      if (!name || !*name || (local && std::strncmp(name, "cuda", 4) != 0)) continue;
      for (const Loaded& s : segments) {
        if (sym.st_value < s.vaddr || sym.st_value - s.vaddr >= s.filesz) continue;
        ElfFunction fn{name, "", true, sym.st_value, sym.st_value - s.vaddr + s.offset, sym.st_size};
        if (local)
          locals[fn.name].push_back(std::move(fn));
        else
          out.push_back(std::move(fn));
        break;
      }
    }
  }
  std::set<std::string> global_names;
  for (const auto& fn : out) global_names.insert(fn.name);
  for (auto& [name, fns] : locals)
    if (fns.size() == 1 && !global_names.contains(name)) out.push_back(std::move(fns.front()));
  std::sort(out.begin(), out.end(), [](const ElfFunction& a, const ElfFunction& b) {
    return std::tie(a.name, a.address) < std::tie(b.name, b.address);
  });
  return out;
}

}  // namespace gpuledger::probes
