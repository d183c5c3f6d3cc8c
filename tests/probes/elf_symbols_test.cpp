// Tests for probes/elf_symbols.h.
//
// Fixture libraries (libforms.so, libforms_based.so, libversioned.so) come from
//   $GPULEDGER_ELF_FIXTURE_DIR             if set (prebuilt by the build), else
// are compiled at test time into a temp dir by fixtures/build_fixtures.sh, found at
//   $GPULEDGER_ELF_FIXTURE_SRC_DIR, else the GPULEDGER_ELF_FIXTURE_SRC_DIR
//   macro, else <dir of this file>/fixtures.
#include "probes/elf_symbols.h"

#include <dlfcn.h>
#include <elf.h>
#include <gtest/gtest.h>
#include <link.h>
#include <stdlib.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <set>
#include <string>
#include <vector>

#include "common/error.h"

namespace gpuledger::probes {
namespace {

namespace fs = std::filesystem;

std::string shell_quote(const std::string& s) {
  std::string out = "'";
  for (char c : s) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

class FixtureDir {
 public:
  static const FixtureDir& get() {
    static FixtureDir instance;
    return instance;
  }
  const std::string& dir() const { return dir_; }
  const std::string& error() const { return error_; }
  std::string lib(const std::string& name) const { return (fs::path(dir_) / name).string(); }

  ~FixtureDir() {
    if (!temp_.empty()) {
      std::error_code ec;
      fs::remove_all(temp_, ec);
    }
  }

 private:
  FixtureDir() {
    if (const char* env = std::getenv("GPULEDGER_ELF_FIXTURE_DIR"); env != nullptr && *env != '\0') {
      dir_ = env;
      return;
    }
    std::string src;
    if (const char* env = std::getenv("GPULEDGER_ELF_FIXTURE_SRC_DIR"); env != nullptr && *env != '\0') {
      src = env;
    } else {
#ifdef GPULEDGER_ELF_FIXTURE_SRC_DIR
      src = GPULEDGER_ELF_FIXTURE_SRC_DIR;
#else
      src = (fs::path(__FILE__).parent_path() / "fixtures").string();
#endif
    }
    std::string tmpl = (fs::temp_directory_path() / "gl_elf_fixtures_XXXXXX").string();
    if (::mkdtemp(tmpl.data()) == nullptr) {
      error_ = "mkdtemp failed";
      return;
    }
    temp_ = dir_ = tmpl;
    const std::string cmd = "sh " + shell_quote((fs::path(src) / "build_fixtures.sh").string()) + " " +
                            shell_quote(dir_);
    if (std::system(cmd.c_str()) != 0) error_ = "fixture build failed: " + cmd;
  }

  std::string dir_;
  std::string temp_;
  std::string error_;
};

#define REQUIRE_FIXTURES()                                                   \
  do {                                                                       \
    ASSERT_TRUE(FixtureDir::get().error().empty()) << FixtureDir::get().error(); \
  } while (0)

std::vector<char> read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

void write_file(const std::string& path, const char* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(data, static_cast<std::streamsize>(size));
}

std::vector<std::string> names_of(const std::vector<ElfFunction>& fns) {
  std::vector<std::string> out;
  for (const auto& f : fns) out.push_back(f.name);
  return out;
}

const ElfFunction* find(const std::vector<ElfFunction>& fns, const std::string& name,
                        const std::string& version = "") {
  for (const auto& f : fns) {
    if (f.name == name && f.version == version) return &f;
  }
  return nullptr;
}

// Expects `fn` to throw gpuledger::Error whose message contains `path` and `reason`.
template <typename Fn>
void expect_error(Fn&& fn, const std::string& path, const std::string& reason = "") {
  try {
    fn();
    ADD_FAILURE() << "no exception for " << path;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(reason), std::string::npos) << e.what();
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong exception type for " << path << ": " << e.what();
  }
}

struct DlCloser {
  void operator()(void* h) const {
    if (h != nullptr) dlclose(h);
  }
};
using DlHandle = std::unique_ptr<void, DlCloser>;

// ---------------------------------------------------------------------------
// parse_entry_point_form / find_entry_point_forms (pure)

TEST(ParseEntryPointForm, AcceptsVersionAndStreamSuffixes) {
  using S = EntryPointForm::Stream;
  EXPECT_EQ(parse_entry_point_form("cuMemcpyHtoD", "cuMemcpyHtoD"), (EntryPointForm{1, S::kDefault}));
  EXPECT_EQ(parse_entry_point_form("cuMemcpyHtoD_v2", "cuMemcpyHtoD"), (EntryPointForm{2, S::kDefault}));
  EXPECT_EQ(parse_entry_point_form("cuMemcpyHtoD_v2_ptds", "cuMemcpyHtoD"), (EntryPointForm{2, S::kPtds}));
  EXPECT_EQ(parse_entry_point_form("cuLaunchKernel_ptsz", "cuLaunchKernel"), (EntryPointForm{1, S::kPtsz}));
  EXPECT_EQ(parse_entry_point_form("cuCtxCreate_v4", "cuCtxCreate"), (EntryPointForm{4, S::kDefault}));
  EXPECT_EQ(parse_entry_point_form("cuFoo_v12_ptsz", "cuFoo"), (EntryPointForm{12, S::kPtsz}));
}

TEST(ParseEntryPointForm, RejectsOtherNames) {
  EXPECT_FALSE(parse_entry_point_form("cuMemcpyHtoDAsync_v2", "cuMemcpyHtoD"));
  EXPECT_FALSE(parse_entry_point_form("cuLaunchKernelEx", "cuLaunchKernel"));
  EXPECT_FALSE(parse_entry_point_form("cuLaunchKernel", "cuLaunchKernelEx"));
  EXPECT_FALSE(parse_entry_point_form("cuFoo_v", "cuFoo"));
  EXPECT_FALSE(parse_entry_point_form("cuFoo_v2x", "cuFoo"));
  EXPECT_FALSE(parse_entry_point_form("cuFoo_ptds_v2", "cuFoo"));
  EXPECT_FALSE(parse_entry_point_form("cuFoo_v2_ptds_ptds", "cuFoo"));
  EXPECT_FALSE(parse_entry_point_form("cuFoo_v99999999999999999999", "cuFoo"));
  EXPECT_FALSE(parse_entry_point_form("cuFoo_", "cuFoo"));
  EXPECT_FALSE(parse_entry_point_form("cuFo", "cuFoo"));
  EXPECT_FALSE(parse_entry_point_form("", "cuFoo"));
  EXPECT_FALSE(parse_entry_point_form("_v2", ""));
}

TEST(FindEntryPointForms, MatchesExactFormsSortedAndPrefersDefaultVersion) {
  std::vector<ElfFunction> fns = {
      {"cuMemcpyHtoDAsync_v2", "", true, 0x10, 0x10, 4},
      {"cuMemcpyHtoD_v2_ptds", "", true, 0x20, 0x20, 4},
      {"cuMemcpyHtoD_v2", "V2", true, 0x30, 0x30, 4},
      {"cuMemcpyHtoD", "V1", false, 0x40, 0x40, 4},
      {"cuMemcpyHtoD", "V2", true, 0x50, 0x50, 4},
      {"cuMemcpyHtoD", "V3", false, 0x60, 0x60, 4},
  };
  const auto forms = find_entry_point_forms(fns, "cuMemcpyHtoD");
  ASSERT_EQ(names_of(forms),
            (std::vector<std::string>{"cuMemcpyHtoD", "cuMemcpyHtoD_v2", "cuMemcpyHtoD_v2_ptds"}));
  EXPECT_EQ(forms[0].version, "V2");
  EXPECT_EQ(forms[0].address, 0x50u);
  std::reverse(fns.begin(), fns.end());
  EXPECT_EQ(find_entry_point_forms(fns, "cuMemcpyHtoD")[0].version, "V2");
  // Only non-default candidates: greatest version string wins.
  const std::vector<ElfFunction> hidden_only = {{"f", "V1", false, 1, 1, 1}, {"f", "V3", false, 3, 3, 1}};
  EXPECT_EQ(find_entry_point_forms(hidden_only, "f").at(0).version, "V3");
  EXPECT_TRUE(find_entry_point_forms(fns, "").empty());
  EXPECT_TRUE(find_entry_point_forms({}, "cuMemcpyHtoD").empty());
}

TEST(GroupByAddress, GroupsAliasesSmallestNameFirst) {
  const std::vector<ElfFunction> fns = {
      {"zeta", "", true, 0x100, 0x100, 4},  {"alpha", "", true, 0x100, 0x100, 4},
      {"alpha", "V1", false, 0x100, 0x100, 4}, {"solo", "", true, 0x80, 0x80, 4},
  };
  const auto groups = group_by_address(fns);
  ASSERT_EQ(groups.size(), 2u);
  EXPECT_EQ(groups[0], (AddressGroup{0x80, {"solo"}}));
  EXPECT_EQ(groups[1], (AddressGroup{0x100, {"alpha", "zeta"}}));
  EXPECT_TRUE(group_by_address({}).empty());
}

// ---------------------------------------------------------------------------
// Fixture: libforms.so

TEST(ReadDynamicFunctions, FormsLibraryExactNames) {
  REQUIRE_FIXTURES();
  const auto fns = read_dynamic_functions(FixtureDir::get().lib("libforms.so"));
  EXPECT_EQ(names_of(fns), (std::vector<std::string>{
                               "alias_primary", "alias_secondary", "foo", "fooAsync_v2", "fooEx", "foo_ptsz",
                               "foo_v", "foo_v2", "foo_v2_ptds", "foo_v3_ptdsx", "ifunc_fn", "uses_import",
                               "weak_fn"}));
  // Not present: hidden function, undefined imports, data object.
  for (const char* absent : {"hidden_helper", "strlen", "__cxa_finalize", "fixture_data", "ifunc_impl"}) {
    EXPECT_EQ(find(fns, absent), nullptr) << absent;
  }
  for (const auto& f : fns) {
    EXPECT_EQ(f.version, "") << f.name;
    EXPECT_TRUE(f.is_default_version) << f.name;
    EXPECT_GT(f.size, 0u) << f.name;
  }
}

class FileOffsets : public ::testing::TestWithParam<const char*> {};

TEST_P(FileOffsets, MatchLoadedCode) {
  REQUIRE_FIXTURES();
  const std::string path = FixtureDir::get().lib(GetParam());
  const auto fns = read_dynamic_functions(path);
  EXPECT_EQ(names_of(fns), names_of(read_dynamic_functions(FixtureDir::get().lib("libforms.so"))));
  const std::vector<char> bytes = read_file(path);
  DlHandle h(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  ASSERT_TRUE(h) << dlerror();
  // The load bias maps st_value to runtime addresses: l_addr + address.
  link_map* map = nullptr;
  ASSERT_EQ(dlinfo(h.get(), RTLD_DI_LINKMAP, &map), 0);
  for (const auto& f : fns) {
    ASSERT_LE(f.file_offset + f.size, bytes.size()) << f.name;
    if (f.name == "ifunc_fn") continue;  // dlsym returns the resolved target
    const auto* mem = static_cast<const char*>(dlsym(h.get(), f.name.c_str()));
    ASSERT_NE(mem, nullptr) << f.name;
    EXPECT_EQ(reinterpret_cast<uintptr_t>(mem), map->l_addr + f.address) << f.name;
    EXPECT_EQ(std::memcmp(mem, bytes.data() + f.file_offset, f.size), 0) << f.name;
  }
  // Distinct functions have distinct offsets; aliases share one.
  const ElfFunction* a = find(fns, "alias_primary");
  const ElfFunction* b = find(fns, "alias_secondary");
  ASSERT_TRUE(a && b);
  EXPECT_EQ(a->file_offset, b->file_offset);
  EXPECT_NE(find(fns, "foo")->file_offset, find(fns, "foo_v2")->file_offset);
  if (std::string(GetParam()) == "libforms_based.so") {
    // Linked at 0x10000000: offsets must have been translated through PT_LOAD.
    EXPECT_EQ(find(fns, "foo")->address - find(fns, "foo")->file_offset, 0x10000000u);
  }
}
INSTANTIATE_TEST_SUITE_P(Fixtures, FileOffsets, ::testing::Values("libforms.so", "libforms_based.so"));

TEST(FindEntryPointForms, FormsLibrary) {
  REQUIRE_FIXTURES();
  const auto fns = read_dynamic_functions(FixtureDir::get().lib("libforms.so"));
  EXPECT_EQ(names_of(find_entry_point_forms(fns, "foo")),
            (std::vector<std::string>{"foo", "foo_ptsz", "foo_v2", "foo_v2_ptds"}));
  EXPECT_EQ(names_of(find_entry_point_forms(fns, "fooAsync")), (std::vector<std::string>{"fooAsync_v2"}));
  EXPECT_EQ(names_of(find_entry_point_forms(fns, "fooEx")), (std::vector<std::string>{"fooEx"}));
  EXPECT_TRUE(find_entry_point_forms(fns, "fo").empty());
  EXPECT_TRUE(find_entry_point_forms(fns, "hidden_helper").empty());
  const auto forms = find_entry_point_forms(fns, "foo");
  EXPECT_EQ(forms[0], *find(fns, "foo"));
}

TEST(GroupByAddress, FormsLibraryAliasPair) {
  REQUIRE_FIXTURES();
  const auto fns = read_dynamic_functions(FixtureDir::get().lib("libforms.so"));
  const auto groups = group_by_address(fns);
  EXPECT_EQ(groups.size(), fns.size() - 1);
  int multi = 0;
  for (const auto& g : groups) {
    if (g.names.size() > 1) {
      ++multi;
      EXPECT_EQ(g.names, (std::vector<std::string>{"alias_primary", "alias_secondary"}));
      EXPECT_EQ(g.file_offset, find(fns, "alias_primary")->file_offset);
    }
  }
  EXPECT_EQ(multi, 1);
}

// ---------------------------------------------------------------------------
// Fixture: libversioned.so (bar@VER_1, bar@@VER_2, bar_v2@@VER_2, baz@@VER_1)

TEST(ReadDynamicFunctions, SymbolVersions) {
  REQUIRE_FIXTURES();
  const std::string path = FixtureDir::get().lib("libversioned.so");
  const auto fns = read_dynamic_functions(path);
  ASSERT_EQ(fns.size(), 4u) << ::testing::PrintToString(names_of(fns));
  const ElfFunction* bar1 = find(fns, "bar", "VER_1");
  const ElfFunction* bar2 = find(fns, "bar", "VER_2");
  const ElfFunction* bar_v2 = find(fns, "bar_v2", "VER_2");
  const ElfFunction* baz = find(fns, "baz", "VER_1");
  ASSERT_TRUE(bar1 && bar2 && bar_v2 && baz);
  EXPECT_FALSE(bar1->is_default_version);
  EXPECT_TRUE(bar2->is_default_version);
  EXPECT_TRUE(bar_v2->is_default_version);
  EXPECT_TRUE(baz->is_default_version);
  EXPECT_NE(bar1->address, bar2->address);
  EXPECT_NE(bar1->file_offset, bar2->file_offset);

  // Cross-check bytes against what the dynamic linker resolves per version.
  const std::vector<char> bytes = read_file(path);
  DlHandle h(dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL));
  ASSERT_TRUE(h) << dlerror();
  const auto check = [&](const void* mem, const ElfFunction* f) {
    ASSERT_NE(mem, nullptr) << f->name << "@" << f->version;
    EXPECT_EQ(std::memcmp(mem, bytes.data() + f->file_offset, f->size), 0) << f->name << "@" << f->version;
  };
  check(dlvsym(h.get(), "bar", "VER_1"), bar1);
  check(dlvsym(h.get(), "bar", "VER_2"), bar2);
  check(dlsym(h.get(), "bar"), bar2);  // default version
  check(dlsym(h.get(), "bar_v2"), bar_v2);
  check(dlsym(h.get(), "baz"), baz);
}

TEST(FindEntryPointForms, PrefersDefaultSymbolVersion) {
  REQUIRE_FIXTURES();
  auto fns = read_dynamic_functions(FixtureDir::get().lib("libversioned.so"));
  for (int pass = 0; pass < 2; ++pass) {
    const auto forms = find_entry_point_forms(fns, "bar");
    ASSERT_EQ(names_of(forms), (std::vector<std::string>{"bar", "bar_v2"}));
    EXPECT_EQ(forms[0].version, "VER_2");
    EXPECT_TRUE(forms[0].is_default_version);
    std::reverse(fns.begin(), fns.end());  // order of input must not matter
  }
}

// ---------------------------------------------------------------------------
// Errors and malformed input

TEST(ReadDynamicFunctions, ErrorsNameThePath) {
  REQUIRE_FIXTURES();
  const fs::path dir = FixtureDir::get().dir();
  const std::string missing = (dir / "does_not_exist.so").string();
  expect_error([&] { read_dynamic_functions(missing); }, missing, "cannot open");

  expect_error([&] { read_dynamic_functions(dir.string()); }, dir.string(), "not a regular file");

  const std::string empty = (dir / "empty.so").string();
  write_file(empty, "", 0);
  expect_error([&] { read_dynamic_functions(empty); }, empty, "not an ELF file");

  const std::string text = (dir / "text.so").string();
  const std::string content = "this is not an ELF file, just some text\n";
  write_file(text, content.data(), content.size());
  expect_error([&] { read_dynamic_functions(text); }, text, "not an ELF file");

  const std::string tiny = (dir / "tiny.so").string();
  write_file(tiny, "\x7f" "ELF", 4);
  expect_error([&] { read_dynamic_functions(tiny); }, tiny);

  const std::vector<char> good = read_file(FixtureDir::get().lib("libforms.so"));
  ASSERT_GT(good.size(), 1024u);
  const std::string half = (dir / "half.so").string();
  write_file(half, good.data(), good.size() / 2);
  expect_error([&] { read_dynamic_functions(half); }, half, "truncated");

  std::vector<char> patched = good;
  patched[EI_CLASS] = ELFCLASS32;
  const std::string elf32 = (dir / "class32.so").string();
  write_file(elf32, patched.data(), patched.size());
  expect_error([&] { read_dynamic_functions(elf32); }, elf32);

  patched = good;
  const uint16_t em_386 = EM_386;  // e_machine at offset 18, little-endian host
  std::memcpy(patched.data() + 18, &em_386, sizeof em_386);
  const std::string i386 = (dir / "i386.so").string();
  write_file(i386, patched.data(), patched.size());
  expect_error([&] { read_dynamic_functions(i386); }, i386, "unsupported machine");

  // A relocatable object has no .dynsym.
  const std::string obj = (dir / "nodynsym.o").string();
  const std::string src = (dir / "nodynsym.c").string();
  write_file(src, "int f(void){return 1;}\n", 23);
  ASSERT_EQ(std::system(("cc -c -o " + shell_quote(obj) + " " + shell_quote(src)).c_str()), 0);
  expect_error([&] { read_dynamic_functions(obj); }, obj, "no .dynsym");
}

// Every truncation length and many corruptions: only gpuledger::Error or a result, never a crash.
TEST(ReadDynamicFunctions, SurvivesTruncationAndCorruption) {
  REQUIRE_FIXTURES();
  const fs::path dir = FixtureDir::get().dir();
  for (const char* lib : {"libforms.so", "libversioned.so"}) {
    const std::vector<char> good = read_file(FixtureDir::get().lib(lib));
    const std::string path = (dir / "mangled.so").string();
    const size_t step = std::max<size_t>(1, good.size() / 2000);
    for (size_t len = 0; len < good.size(); len += step) {
      write_file(path, good.data(), len);
      try {
        read_dynamic_functions(path);
        ADD_FAILURE() << lib << " truncated to " << len << " did not throw";
      } catch (const Error& e) {
        EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
      }
    }
    unsigned seed = 12345;
    auto next = [&seed] { return seed = seed * 1103515245u + 12345u, (seed >> 8); };
    for (int round = 0; round < 3000; ++round) {
      std::vector<char> bad = good;
      const int flips = 1 + static_cast<int>(next() % 8);
      for (int i = 0; i < flips; ++i) bad[next() % bad.size()] = static_cast<char>(next());
      // Half the rounds aim at headers/section tables where parsing decisions live.
      if (round % 2 == 0) bad[next() % 64] = static_cast<char>(next());
      write_file(path, bad.data(), bad.size());
      try {
        (void)read_dynamic_functions(path);
      } catch (const Error&) {
      }
    }
  }
}

// ---------------------------------------------------------------------------
// System libc

TEST(ReadDynamicFunctions, SystemLibcMalloc) {
  DlHandle h(dlopen("libc.so.6", RTLD_NOW | RTLD_NOLOAD));
  ASSERT_TRUE(h) << dlerror();
  void* sym = dlsym(h.get(), "malloc");
  ASSERT_NE(sym, nullptr);
  Dl_info info{};
  ASSERT_NE(dladdr(sym, &info), 0);
  const std::string path = info.dli_fname;
  const auto fns = read_dynamic_functions(path);
  EXPECT_GT(fns.size(), 500u);
  const ElfFunction* malloc_fn = nullptr;
  for (const auto& f : fns) {
    if (f.name == "malloc" && f.is_default_version) malloc_fn = &f;
  }
  ASSERT_NE(malloc_fn, nullptr);
  const std::vector<char> bytes = read_file(path);
  ASSERT_GT(malloc_fn->size, 16u);
  ASSERT_LE(malloc_fn->file_offset + malloc_fn->size, bytes.size());
  EXPECT_EQ(reinterpret_cast<uintptr_t>(sym),
            reinterpret_cast<uintptr_t>(info.dli_fbase) + malloc_fn->address);
  EXPECT_EQ(std::memcmp(sym, bytes.data() + malloc_fn->file_offset, 16), 0);
}

TEST(FindEntryPointForms, SystemLibcMemcpy) {
  const std::string path = "/lib/x86_64-linux-gnu/libc.so.6";
  if (!fs::exists(path)) GTEST_SKIP() << path << " not present";
  const auto fns = read_dynamic_functions(path);
  for (const auto& f : fns) {
    if (f.name.find("memcpy") != std::string::npos) {
      (void)parse_entry_point_form(f.name, "memcpy");  // must simply not fail
    }
  }
  const auto forms = find_entry_point_forms(fns, "memcpy");
  ASSERT_EQ(names_of(forms), (std::vector<std::string>{"memcpy"}));
  EXPECT_TRUE(forms[0].is_default_version);
  EXPECT_FALSE(parse_entry_point_form("__memcpy_chk", "memcpy"));
  EXPECT_FALSE(parse_entry_point_form("wmemcpy", "memcpy"));
  // glibc x86-64 exports memcpy@GLIBC_2.2.5 and memcpy@@GLIBC_2.14.
  if (find(fns, "memcpy", "GLIBC_2.2.5") != nullptr && find(fns, "memcpy", "GLIBC_2.14") != nullptr) {
    EXPECT_FALSE(find(fns, "memcpy", "GLIBC_2.2.5")->is_default_version);
    EXPECT_EQ(forms[0].version, "GLIBC_2.14");
  }
  const auto groups = group_by_address(fns);
  EXPECT_FALSE(groups.empty());
  for (size_t i = 1; i < groups.size(); ++i) EXPECT_LT(groups[i - 1].file_offset, groups[i].file_offset);
}

}  // namespace
}  // namespace gpuledger::probes
