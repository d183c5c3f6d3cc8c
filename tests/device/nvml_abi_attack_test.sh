#!/usr/bin/env bash
# device.nvml_abi_attack: the compile-time check of src/device/nvml_abi.h
# against the real nvml.h (tests/device/nvml_abi_check_test.cpp) really
# checks. The check compiles as the header is; each mutation below - a field's
# type, order or count, a struct's size, a constant, a return code, a prototype,
# a versioned name nvml.h lacks - makes it fail to compile, with the message
# naming it. (Not caught, by design of C: another version nvml.h declares with
# the same prototype, e.g. nvmlDeviceGetPciInfo for _v3; the list names the
# version, and the real library's exports are tested apart.)
# Usage: nvml_abi_attack_test.sh CXX SOURCE_DIR NVML_INCLUDE_DIR
set -euo pipefail
cxx="$1" src="$2" nvml_include="$3"
work="$(mktemp -d "${TMPDIR:-/tmp}/gpuledger-nvml-abi-attack.XXXXXX")"
trap 'rm -rf "$work"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
header="$src/src/device/nvml_abi.h"
check="$src/tests/device/nvml_abi_check_test.cpp"
mkdir -p "$work/device"

# compile: the check against the header in $work/device (found before src/).
compile() { "$cxx" -std=c++20 -fsyntax-only -I"$work" -I"$src/src" -I"$nvml_include" "$check" >"$work/out" 2>&1; }

cp "$header" "$work/device/nvml_abi.h"
compile || fail "the check does not compile against the header as it is: $(head -20 "$work/out")"

# attack NAME FROM TO EXPECTED: replace the literal FROM by TO; the check must fail, saying EXPECTED.
attacks=0
attack() {
  local name="$1" from="$2" to="$3" expected="$4"
  FROM="$from" TO="$to" python3 -c 'import os, sys
s = open(sys.argv[1]).read()
if os.environ["FROM"] not in s: sys.exit(1)
open(sys.argv[2], "w").write(s.replace(os.environ["FROM"], os.environ["TO"], 1))' "$header" "$work/device/nvml_abi.h" \
    || fail "$name: '$from' is not in nvml_abi.h any more (update this test)"
  if compile; then fail "$name: the check compiled"; fi
  grep -qF -- "$expected" "$work/out" || fail "$name: the check failed without '$expected': $(grep -m3 error "$work/out")"
  attacks=$((attacks + 1))
}
attack "field type" "unsigned int* power))" "int* power))" \
  "nvmlDeviceGetPowerUsage: the client's pointer type is not nvml.h's prototype"
attack "return code" "X(NVML_ERROR_NO_DATA, 21)" "X(NVML_ERROR_NO_DATA, 22)" "NVML_ERROR_NO_DATA differs from nvml.h"
attack "constant" "NVML_DEVICE_UUID_V2_BUFFER_SIZE, 96)" "NVML_DEVICE_UUID_V2_BUFFER_SIZE, 80)" \
  "kDeviceUuidV2BufferSize differs from nvml.h's NVML_DEVICE_UUID_V2_BUFFER_SIZE"
attack "extra field" "  unsigned int decUtil;" $'  unsigned int decUtil;\n  unsigned int extra;' \
  "nvmlProcessUtilizationSample_t: size differs"
attack "field order" $'  unsigned int gpu;\n  unsigned int memory;' $'  unsigned int memory;\n  unsigned int gpu;' \
  "nvmlUtilization_t.gpu: offset differs"
attack "field width" "  unsigned long long reserved;" "  unsigned int reserved;" "nvmlMemory_v2_t.reserved: type differs"
attack "struct in a prototype" "(nvmlDevice_t device, nvmlMemory_v2_t * memory)" "(nvmlDevice_t device, nvmlMemory_t * memory)" \
  "nvmlDeviceGetMemoryInfo_v2: the client's pointer type is not nvml.h's prototype"
attack "field left out of the list" "X(nvmlMemory_t, total, free, used)" "X(nvmlMemory_t, total, free)" \
  "names provided for structured binding"
attack "versioned name" "X(nvmlDeviceGetCount_v2," "X(nvmlDeviceGetCount_v9," "nvmlDeviceGetCount_v9"
attack "struct version" "(2u << 24)" "(1u << 24)" "kMemoryV2Version differs from nvml.h's nvmlMemory_v2"
echo "PASS: $attacks mutations of nvml_abi.h, each refused by the compile-time check"
