// The NVML client's own declarations (src/device/nvml_abi.h) against NVIDIA's
// real nvml.h, at compile time: this file does not build when they differ.
// Checked, from the header's lists (so nothing it declares escapes):
//   - every return code and constant has nvml.h's value (and type);
//   - every struct has nvml.h's size and alignment, exactly its fields (a
//     structured binding of all of them compiles for both), and each field the
//     same offset and, mapped into nvml.h's types, the same type;
//   - every function pointer type, mapped into nvml.h's types, is the type of
//     the address of the function it is looked up as (&::nvmlFoo): return type,
//     parameter types and versioned name all at once.
// "Mapped": Real<T> rewrites a type of ours into nvml.h's (pointers, const,
// arrays, function types recursively); a struct or enum of ours it does not
// know fails the build, so a signature cannot hide an unchecked type.
#include "device/nvml_abi.h"

// The real names only: nvml.h otherwise #defines e.g. nvmlDeviceGetCount to
// nvmlDeviceGetCount_v2, which would make a wrong name look right.
#define NVML_NO_UNVERSIONED_FUNC_DEFS
#include <gtest/gtest.h>
#include <nvml.h>

#include <cstddef>
#include <type_traits>

namespace {

namespace ours = gpuledger::nvml_abi;

template <class T>
struct Real {
  static_assert(!std::is_class_v<T> && !std::is_enum_v<T> && !std::is_union_v<T>,
                "a struct or enum of nvml_abi.h without its nvml.h counterpart (add it to GPULEDGER_NVML_STRUCTS)");
  using type = T;
};
template <class T>
using real_t = typename Real<T>::type;
template <class T>
struct Real<T*> {
  using type = real_t<T>*;
};
template <class T>
struct Real<const T> {
  using type = const real_t<T>;
};
template <class T, std::size_t N>
struct Real<T[N]> {
  using type = real_t<T>[N];
};
template <class R, class... A>
struct Real<R(A...)> {
  using type = real_t<R>(real_t<A>...);
};
template <>
struct Real<ours::nvmlReturn_t> {
  using type = ::nvmlReturn_t;
};
template <>
struct Real<ours::nvmlDevice_st> {
  using type = ::nvmlDevice_st;
};
#define MAP_STRUCT(name, ...) \
  template <>                 \
  struct Real<ours::name> {   \
    using type = ::name;      \
  };
GPULEDGER_NVML_STRUCTS(MAP_STRUCT)
#undef MAP_STRUCT

// ---- return codes and constants
static_assert(std::is_same_v<std::underlying_type_t<ours::nvmlReturn_t>, std::underlying_type_t<::nvmlReturn_t>>);
#define CHECK_RETURN_CODE(name, value)                                                     \
  static_assert(static_cast<long>(ours::name) == static_cast<long>(::name), #name " differs from nvml.h"); \
  static_assert(static_cast<long>(ours::name) == (value));
GPULEDGER_NVML_RETURN_CODES(CHECK_RETURN_CODE)
#undef CHECK_RETURN_CODE

#define CHECK_CONSTANT(name, real, value)                                                   \
  static_assert(ours::name == (real), #name " differs from nvml.h's " #real);               \
  static_assert(std::is_same_v<std::remove_const_t<decltype(ours::name)>, decltype(real)>, \
                #name " has another type than nvml.h's " #real);
GPULEDGER_NVML_CONSTANTS(CHECK_CONSTANT)
#undef CHECK_CONSTANT
static_assert(ours::kMemoryV2Version == nvmlMemory_v2, "kMemoryV2Version differs from nvml.h's nvmlMemory_v2");

// ---- structs: size, alignment, every field (count, offset, type)
#define FE_1(M, T, a) M(T, a)
#define FE_2(M, T, a, ...) M(T, a) FE_1(M, T, __VA_ARGS__)
#define FE_3(M, T, a, ...) M(T, a) FE_2(M, T, __VA_ARGS__)
#define FE_4(M, T, a, ...) M(T, a) FE_3(M, T, __VA_ARGS__)
#define FE_5(M, T, a, ...) M(T, a) FE_4(M, T, __VA_ARGS__)
#define FE_6(M, T, a, ...) M(T, a) FE_5(M, T, __VA_ARGS__)
#define FE_7(M, T, a, ...) M(T, a) FE_6(M, T, __VA_ARGS__)
#define FE_8(M, T, a, ...) M(T, a) FE_7(M, T, __VA_ARGS__)
#define FE_PICK(_1, _2, _3, _4, _5, _6, _7, _8, NAME, ...) NAME
#define FOR_EACH_FIELD(M, T, ...) \
  FE_PICK(__VA_ARGS__, FE_8, FE_7, FE_6, FE_5, FE_4, FE_3, FE_2, FE_1, unused)(M, T, __VA_ARGS__)

#define CHECK_FIELD(T, field)                                                                             \
  static_assert(offsetof(ours::T, field) == offsetof(::T, field), #T "." #field ": offset differs");     \
  static_assert(std::is_same_v<real_t<decltype(ours::T::field)>, decltype(::T::field)>, #T "." #field \
                ": type differs");

#define CHECK_STRUCT(T, ...)                                                                 \
  static_assert(sizeof(ours::T) == sizeof(::T), #T ": size differs");                       \
  static_assert(alignof(ours::T) == alignof(::T), #T ": alignment differs");                \
  FOR_EACH_FIELD(CHECK_FIELD, T, __VA_ARGS__)                                                \
  /* Exactly these fields, in both: a binding of another count does not compile. */         \
  [[maybe_unused]] void all_fields_of_##T(const ours::T& a, const ::T& b) {                  \
    { [[maybe_unused]] auto& [__VA_ARGS__] = a; }                                            \
    { [[maybe_unused]] auto& [__VA_ARGS__] = b; }                                            \
  }
GPULEDGER_NVML_STRUCTS(CHECK_STRUCT)
#undef CHECK_STRUCT
#undef CHECK_FIELD

// nvml.h declares the _v3 process queries' struct apart from nvmlProcessInfo_v2_t
// with the same layout; ours is checked against both.
#define CHECK_FIELD(T, field)                                                                          \
  static_assert(offsetof(ours::nvmlProcessInfo_t, field) == offsetof(::nvmlProcessInfo_v2_t, field)); \
  static_assert(std::is_same_v<decltype(ours::nvmlProcessInfo_t::field), decltype(::nvmlProcessInfo_v2_t::field)>);
static_assert(sizeof(ours::nvmlProcessInfo_t) == sizeof(::nvmlProcessInfo_v2_t));
FOR_EACH_FIELD(CHECK_FIELD, nvmlProcessInfo_t, pid, usedGpuMemory, gpuInstanceId, computeInstanceId)
#undef CHECK_FIELD

// ---- functions: the pointer type each name is looked up as (the client's
// dlsym string is #name of the same list entry: src/device/nvml_client.cpp)
#define CHECK_FUNCTION(name, ret, params)                                 \
  static_assert(std::is_same_v<real_t<ours::name##_fn>, decltype(&::name)>, \
                #name ": the client's pointer type is not nvml.h's prototype");
GPULEDGER_NVML_FUNCTIONS(CHECK_FUNCTION)
#undef CHECK_FUNCTION

// The mapping itself is checked, so that the checks above cannot pass vacuously.
static_assert(std::is_same_v<real_t<ours::nvmlDeviceGetMemoryInfo_v2_fn>,
                             ::nvmlReturn_t (*)(::nvmlDevice_t, ::nvmlMemory_v2_t*)>);
static_assert(!std::is_same_v<real_t<ours::nvmlDeviceGetMemoryInfo_v2_fn>, decltype(&::nvmlDeviceGetMemoryInfo)>);
static_assert(!std::is_same_v<real_t<ours::nvmlDeviceGetMemoryInfo_fn>, decltype(&::nvmlDeviceGetMemoryInfo_v2)>);
// Where two versions share a prototype (nvmlDeviceGetCount, _v2), the name is
// what counts: the client's dlsym string and the &::name above are one token of
// the same list, and with NVML_NO_UNVERSIONED_FUNC_DEFS that token names
// exactly the function nvml.h declares under it.

#define COUNT(...) +1
constexpr int kFunctions = 0 GPULEDGER_NVML_FUNCTIONS(COUNT);
constexpr int kStructs = 0 GPULEDGER_NVML_STRUCTS(COUNT);
constexpr int kReturnCodes = 0 GPULEDGER_NVML_RETURN_CODES(COUNT);
constexpr int kConstants = 0 GPULEDGER_NVML_CONSTANTS(COUNT);
#undef COUNT

TEST(NvmlAbi, MatchesTheRealNvmlHeader) {
  // Everything was checked when this file compiled; say what against.
  std::printf("nvml_abi.h == nvml.h (NVML_API_VERSION %d): %d functions, %d structs, %d return codes, %d constants\n",
              NVML_API_VERSION, kFunctions, kStructs, kReturnCodes, kConstants);
  EXPECT_EQ(kFunctions, 19);
  EXPECT_EQ(kStructs, 6);
}

}  // namespace
