#include "probes/elf_symbols.h"

#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>

#include "common/error.h"

namespace gpuledger::probes {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& reason) {
  throw Error("ELF " + path + ": " + reason);
}

std::string elf_error() {
  const char* msg = elf_errmsg(-1);
  return msg != nullptr ? msg : "unknown libelf error";
}

struct FdCloser {
  void operator()(const int* fd) const {
    if (fd != nullptr && *fd >= 0) ::close(*fd);
    delete fd;
  }
};
using UniqueFd = std::unique_ptr<int, FdCloser>;

struct ElfCloser {
  void operator()(Elf* elf) const { elf_end(elf); }
};
using UniqueElf = std::unique_ptr<Elf, ElfCloser>;

void init_libelf(const std::string& path) {
  static std::once_flag once;
  static bool ok = false;
  std::call_once(once, [] { ok = elf_version(EV_CURRENT) != EV_NONE; });
  if (!ok) fail(path, "libelf initialisation failed: " + elf_error());
}

struct Segment {
  uint64_t vaddr;
  uint64_t offset;
  uint64_t filesz;
};

std::optional<uint64_t> to_file_offset(const std::vector<Segment>& segments, uint64_t addr) {
  for (const Segment& s : segments) {
    if (addr >= s.vaddr && addr - s.vaddr < s.filesz) return addr - s.vaddr + s.offset;
  }
  return std::nullopt;
}

// Section indices of the tables we need (0 = absent).
struct Sections {
  Elf_Scn* dynsym = nullptr;
  GElf_Shdr dynsym_shdr{};
  Elf_Scn* versym = nullptr;
  Elf_Scn* verdef = nullptr;
  GElf_Shdr verdef_shdr{};
};

Sections find_sections(Elf* elf, const std::string& path) {
  size_t count = 0;
  if (elf_getshdrnum(elf, &count) != 0) fail(path, "cannot read section headers: " + elf_error());
  Sections out;
  for (Elf_Scn* scn = elf_nextscn(elf, nullptr); scn != nullptr; scn = elf_nextscn(elf, scn)) {
    GElf_Shdr shdr;
    if (gelf_getshdr(scn, &shdr) == nullptr) fail(path, "cannot read section header: " + elf_error());
    if (shdr.sh_type == SHT_DYNSYM && out.dynsym == nullptr) {
      out.dynsym = scn;
      out.dynsym_shdr = shdr;
    } else if (shdr.sh_type == SHT_GNU_versym && out.versym == nullptr) {
      out.versym = scn;
    } else if (shdr.sh_type == SHT_GNU_verdef && out.verdef == nullptr) {
      out.verdef = scn;
      out.verdef_shdr = shdr;
    }
  }
  return out;
}

// Maps version index (vd_ndx) -> version name from .gnu.version_d. The base
// definition (VER_FLG_BASE, the file's own soname) is left out.
std::map<unsigned, std::string> read_verdefs(Elf* elf, const Sections& secs, const std::string& path) {
  std::map<unsigned, std::string> out;
  if (secs.verdef == nullptr) return out;
  Elf_Data* data = elf_getdata(secs.verdef, nullptr);
  if (data == nullptr) fail(path, "cannot read .gnu.version_d: " + elf_error());
  const size_t limit = std::min<size_t>(data->d_size, INT_MAX);
  size_t offset = 0;
  // Each Verdef is at least 20 bytes, which bounds the walk even if the
  // vd_next chain of a corrupt file loops.
  for (size_t guard = 0; guard <= limit / 20 && offset < limit; ++guard) {
    GElf_Verdef def;
    if (gelf_getverdef(data, static_cast<int>(offset), &def) == nullptr) {
      fail(path, "malformed .gnu.version_d: " + elf_error());
    }
    if ((def.vd_flags & VER_FLG_BASE) == 0 && def.vd_cnt > 0) {
      const size_t aux_offset = offset + def.vd_aux;
      GElf_Verdaux aux;
      if (aux_offset >= limit || gelf_getverdaux(data, static_cast<int>(aux_offset), &aux) == nullptr) {
        fail(path, "malformed .gnu.version_d auxiliary entry");
      }
      const char* name = elf_strptr(elf, secs.verdef_shdr.sh_link, aux.vda_name);
      if (name == nullptr) fail(path, "malformed .gnu.version_d name: " + elf_error());
      out.emplace(def.vd_ndx & 0x7fffu, name);
    }
    if (def.vd_next == 0) break;
    offset += def.vd_next;
  }
  return out;
}

}  // namespace

std::vector<ElfFunction> read_dynamic_functions(const std::string& path) {
  UniqueFd fd(new int(::open(path.c_str(), O_RDONLY | O_CLOEXEC)));
  if (*fd < 0) fail(path, std::string("cannot open: ") + std::strerror(errno));
  return read_dynamic_functions(*fd, path);
}

std::vector<ElfFunction> read_dynamic_functions(int file_fd, const std::string& path) {
  init_libelf(path);
  struct stat st {};
  if (::fstat(file_fd, &st) != 0) fail(path, std::string("cannot stat: ") + std::strerror(errno));
  if (!S_ISREG(st.st_mode)) fail(path, "not a regular file");
  if (st.st_size == 0) fail(path, "not an ELF file (empty)");

  // ELF_C_READ (not _MMAP): the file may belong to a tenant who can truncate
  // it while we read; a read() that comes up short is an error, a mapped
  // page that vanished would be SIGBUS.
  UniqueElf elf(elf_begin(file_fd, ELF_C_READ, nullptr));
  if (!elf) fail(path, "cannot open with libelf: " + elf_error());
  if (elf_kind(elf.get()) != ELF_K_ELF) fail(path, "not an ELF file");

  GElf_Ehdr ehdr;
  if (gelf_getehdr(elf.get(), &ehdr) == nullptr) fail(path, "cannot read ELF header: " + elf_error());
  if (gelf_getclass(elf.get()) != ELFCLASS64) fail(path, "not a 64-bit ELF file");
  if (ehdr.e_machine != EM_X86_64 && ehdr.e_machine != EM_AARCH64) {
    fail(path, "unsupported machine " + std::to_string(ehdr.e_machine) + " (need x86-64 or aarch64)");
  }

  // Header tables past the end of the file mean a truncated copy; say so
  // rather than reporting a missing section.
  const auto file_size = static_cast<uint64_t>(st.st_size);
  const auto past_end = [file_size](uint64_t off, uint64_t count, uint64_t entsize) {
    return off > file_size || (entsize != 0 && count > (file_size - off) / entsize);
  };
  size_t phnum = 0;
  size_t shnum = 0;
  if (elf_getphdrnum(elf.get(), &phnum) != 0) fail(path, "cannot read program headers: " + elf_error());
  if (elf_getshdrnum(elf.get(), &shnum) != 0) fail(path, "cannot read section headers: " + elf_error());
  if (past_end(ehdr.e_phoff, phnum, ehdr.e_phentsize) || past_end(ehdr.e_shoff, shnum, ehdr.e_shentsize)) {
    fail(path, "truncated or corrupt: header tables extend past end of file (" + std::to_string(file_size) +
                   " bytes)");
  }

  // PT_LOAD segments: file offset = vaddr - p_vaddr + p_offset.
  std::vector<Segment> segments;
  for (size_t i = 0; i < phnum; ++i) {
    GElf_Phdr phdr;
    if (gelf_getphdr(elf.get(), static_cast<int>(i), &phdr) == nullptr) {
      fail(path, "cannot read program header " + std::to_string(i) + ": " + elf_error());
    }
    if (phdr.p_type == PT_LOAD && phdr.p_filesz > 0) {
      segments.push_back({phdr.p_vaddr, phdr.p_offset, phdr.p_filesz});
    }
  }

  const Sections secs = find_sections(elf.get(), path);
  if (secs.dynsym == nullptr) fail(path, "no .dynsym section");
  Elf_Data* symdata = elf_getdata(secs.dynsym, nullptr);
  if (symdata == nullptr) fail(path, "cannot read .dynsym: " + elf_error());
  Elf_Data* versymdata = nullptr;
  if (secs.versym != nullptr) {
    versymdata = elf_getdata(secs.versym, nullptr);
    if (versymdata == nullptr) fail(path, "cannot read .gnu.version: " + elf_error());
  }
  const std::map<unsigned, std::string> verdefs = read_verdefs(elf.get(), secs, path);

  const size_t sym_size = gelf_fsize(elf.get(), ELF_T_SYM, 1, EV_CURRENT);
  if (sym_size == 0) fail(path, "cannot determine symbol size: " + elf_error());
  const size_t nsyms = std::min<size_t>(symdata->d_size / sym_size, INT_MAX);

  std::vector<ElfFunction> out;
  for (size_t i = 1; i < nsyms; ++i) {
    GElf_Sym sym;
    if (gelf_getsym(symdata, static_cast<int>(i), &sym) == nullptr) {
      fail(path, "malformed .dynsym entry " + std::to_string(i) + ": " + elf_error());
    }
    const unsigned type = GELF_ST_TYPE(sym.st_info);
    const unsigned bind = GELF_ST_BIND(sym.st_info);
    if (sym.st_shndx == SHN_UNDEF) continue;
    if (type != STT_FUNC && type != STT_GNU_IFUNC) continue;
    if (bind != STB_GLOBAL && bind != STB_WEAK) continue;

    const char* raw_name = elf_strptr(elf.get(), secs.dynsym_shdr.sh_link, sym.st_name);
    if (raw_name == nullptr) fail(path, "malformed .dynsym name for entry " + std::to_string(i));
    const std::optional<uint64_t> offset = to_file_offset(segments, sym.st_value);
    if (!offset) continue;  // not file-backed: cannot be probed

    ElfFunction fn;
    fn.name = raw_name;
    fn.address = sym.st_value;
    fn.file_offset = *offset;
    fn.size = sym.st_size;
    if (versymdata != nullptr) {
      GElf_Versym versym;
      if (gelf_getversym(versymdata, static_cast<int>(i), &versym) == nullptr) {
        fail(path, "malformed .gnu.version entry " + std::to_string(i));
      }
      fn.is_default_version = (versym & 0x8000u) == 0;
      if (auto it = verdefs.find(versym & 0x7fffu); it != verdefs.end()) fn.version = it->second;
    }
    // Defensive: a literal "name@VER" / "name@@VER" in the string table.
    if (const size_t at = fn.name.find('@'); at != std::string::npos) {
      const bool is_default = fn.name.compare(at, 2, "@@") == 0;
      std::string suffix = fn.name.substr(at + (is_default ? 2 : 1));
      fn.name.resize(at);
      if (fn.version.empty()) {
        fn.version = std::move(suffix);
        fn.is_default_version = is_default;
      }
    }
    out.push_back(std::move(fn));
  }
  std::sort(out.begin(), out.end(), [](const ElfFunction& a, const ElfFunction& b) {
    return std::tie(a.name, a.version, a.address) < std::tie(b.name, b.version, b.address);
  });
  return out;
}

std::optional<EntryPointForm> parse_entry_point_form(std::string_view name, std::string_view base) {
  if (base.empty() || !name.starts_with(base)) return std::nullopt;
  std::string_view rest = name.substr(base.size());
  EntryPointForm form;
  if (rest.starts_with("_v")) {
    const std::string_view after_v = rest.substr(2);
    const size_t ndigits = std::min(after_v.find_first_not_of("0123456789"), after_v.size());
    if (ndigits == 0) return std::nullopt;
    int version = 0;
    const auto [ptr, ec] = std::from_chars(after_v.data(), after_v.data() + ndigits, version);
    if (ec != std::errc{} || ptr != after_v.data() + ndigits) return std::nullopt;
    form.version = version;
    rest = after_v.substr(ndigits);
  }
  if (rest == "_ptds") {
    form.stream = EntryPointForm::Stream::kPtds;
  } else if (rest == "_ptsz") {
    form.stream = EntryPointForm::Stream::kPtsz;
  } else if (!rest.empty()) {
    return std::nullopt;
  }
  return form;
}

std::vector<ElfFunction> find_entry_point_forms(const std::vector<ElfFunction>& functions,
                                                std::string_view base) {
  // true when a is preferred over b (same name).
  auto better = [](const ElfFunction& a, const ElfFunction& b) {
    if (a.is_default_version != b.is_default_version) return a.is_default_version;
    if (a.version != b.version) return a.version > b.version;
    return a.address < b.address;
  };
  std::map<std::string, const ElfFunction*, std::less<>> chosen;
  for (const ElfFunction& fn : functions) {
    if (!parse_entry_point_form(fn.name, base)) continue;
    auto [it, inserted] = chosen.try_emplace(fn.name, &fn);
    if (!inserted && better(fn, *it->second)) it->second = &fn;
  }
  std::vector<ElfFunction> out;
  out.reserve(chosen.size());
  for (const auto& [name, fn] : chosen) out.push_back(*fn);
  return out;
}

std::vector<AddressGroup> group_by_address(const std::vector<ElfFunction>& functions) {
  std::map<uint64_t, std::vector<std::string>> by_offset;
  for (const ElfFunction& fn : functions) by_offset[fn.file_offset].push_back(fn.name);
  std::vector<AddressGroup> out;
  out.reserve(by_offset.size());
  for (auto& [offset, names] : by_offset) {
    std::sort(names.begin(), names.end());
    names.erase(std::unique(names.begin(), names.end()), names.end());
    out.push_back({offset, std::move(names)});
  }
  return out;
}

}  // namespace gpuledger::probes
