#pragma once
// Reads the exported functions of an ELF shared object (.dynsym) together with
// the file offsets that uprobes need, and matches the versioned forms of CUDA
// driver entry points (cuFoo, cuFoo_v2, cuFoo_v2_ptds, cuFoo_ptsz, ...).
//
// Errors: read_dynamic_functions throws gpuledger::Error (message names the
// path and the reason). The pure helpers below never throw except on
// allocation failure.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gpuledger::probes {

struct ElfFunction {
  // Symbol name without any "@VERSION" / "@@VERSION" suffix.
  std::string name;
  // ELF symbol version from .gnu.version/.gnu.version_d, or "" when the
  // symbol is unversioned (or only carries the base/global version).
  std::string version;
  // false only for a non-default ("hidden", foo@VER) versioned definition;
  // true for foo@@VER and for unversioned symbols. Old binaries linked
  // against VER still call the non-default one, so it is kept in the list.
  bool is_default_version = true;
  uint64_t address = 0;      // st_value (virtual address)
  uint64_t file_offset = 0;  // vaddr - p_vaddr + p_offset of the PT_LOAD containing it
  uint64_t size = 0;         // st_size
  bool operator==(const ElfFunction&) const = default;
};

// All defined (st_shndx != SHN_UNDEF), global or weak, STT_FUNC or
// STT_GNU_IFUNC symbols of .dynsym, sorted by (name, version, address).
// A name defined under two versions (foo@VER_1 and foo@@VER_2) yields two
// entries. Symbols whose address lies in no file-backed PT_LOAD segment
// cannot be probed and are omitted.
// Throws gpuledger::Error for: a missing/unreadable path, a non-regular file,
// a file that is not ELF ("not an ELF file"), an ELF that is not 64-bit
// x86-64/aarch64, no .dynsym, or malformed/truncated contents.
std::vector<ElfFunction> read_dynamic_functions(const std::string& path);
// The same, from a file already open: what the agent verified is what it
// reads (`path` only names it in errors). The descriptor is not closed.
std::vector<ElfFunction> read_dynamic_functions(int file_fd, const std::string& path);

// Parses the suffix of `name` relative to `base`. `name` must be exactly
//   base ( "_v" digits )? ( "_ptds" | "_ptsz" )?
// version is 1 when there is no _vN suffix. Returns nullopt when `name` is not
// a form of `base` (e.g. "cuMemcpyHtoDAsync_v2" for base "cuMemcpyHtoD") or
// when base is empty.
struct EntryPointForm {
  int version = 1;
  enum class Stream { kDefault, kPtds, kPtsz } stream = Stream::kDefault;
  bool operator==(const EntryPointForm&) const = default;
};
std::optional<EntryPointForm> parse_entry_point_form(std::string_view name, std::string_view base);

// Every form of the entry point `base` present in `functions` (see
// parse_entry_point_form), sorted by name, one entry per name. When a name
// occurs several times (several symbol versions), the default version (@@ or
// unversioned) is chosen; among non-default-only candidates the greatest
// version string wins (ties: lowest address).
std::vector<ElfFunction> find_entry_point_forms(const std::vector<ElfFunction>& functions,
                                                std::string_view base);

// Uprobes are per address, and driver libraries export aliases (several names
// at one address). Groups by file_offset, sorted by file_offset; `names` is
// sorted and de-duplicated, so names.front() is the representative (the
// lexicographically smallest name) and the rest are its aliases.
struct AddressGroup {
  uint64_t file_offset = 0;
  std::vector<std::string> names;
  bool operator==(const AddressGroup&) const = default;
};
std::vector<AddressGroup> group_by_address(const std::vector<ElfFunction>& functions);

}  // namespace gpuledger::probes
