# One function compiles a BPF program with clang -target bpf against the running
# kernel's BTF (CO-RE) and generates its libbpf skeleton with bpftool.
find_program(CLANG_BPF NAMES clang REQUIRED)
find_program(BPFTOOL NAMES bpftool PATHS /usr/sbin /sbin REQUIRED)

set(GPULEDGER_VMLINUX_BTF /sys/kernel/btf/vmlinux CACHE FILEPATH "BTF used to generate vmlinux.h")
set(BPF_GEN_DIR ${CMAKE_BINARY_DIR}/bpf-gen)
file(MAKE_DIRECTORY ${BPF_GEN_DIR})

# vmlinux.h is made once at configure time: the programs are CO-RE, so the
# types only need to be a superset of what they use, not this exact kernel.
if(NOT EXISTS ${BPF_GEN_DIR}/vmlinux.h)
  if(NOT EXISTS ${GPULEDGER_VMLINUX_BTF})
    message(FATAL_ERROR "No kernel BTF at ${GPULEDGER_VMLINUX_BTF}: gpuledger needs a kernel built with BTF")
  endif()
  execute_process(
    COMMAND ${BPFTOOL} btf dump file ${GPULEDGER_VMLINUX_BTF} format c
    OUTPUT_FILE ${BPF_GEN_DIR}/vmlinux.h
    RESULT_VARIABLE vmlinux_result)
  if(NOT vmlinux_result EQUAL 0)
    file(REMOVE ${BPF_GEN_DIR}/vmlinux.h)
    message(FATAL_ERROR "bpftool could not dump ${GPULEDGER_VMLINUX_BTF}")
  endif()
endif()

# bpf_skeleton(<name> <source.bpf.c>): builds <name>.bpf.o and <name>.skel.h,
# and an INTERFACE target <name>_skel that puts the header on the include path.
function(bpf_skeleton name src)
  set(obj ${BPF_GEN_DIR}/${name}.bpf.o)
  set(skel ${BPF_GEN_DIR}/${name}.skel.h)
  file(GLOB_RECURSE bpf_headers ${CMAKE_SOURCE_DIR}/bpf/*.h)
  add_custom_command(
    OUTPUT ${obj}
    COMMAND ${CLANG_BPF} -g -O2 -target bpf -D__TARGET_ARCH_x86
            -I${BPF_GEN_DIR} -I${CMAKE_SOURCE_DIR}/bpf -c ${src} -o ${obj}
    DEPENDS ${src} ${bpf_headers} ${BPF_GEN_DIR}/vmlinux.h
    COMMENT "BPF ${name}"
    VERBATIM)
  add_custom_command(
    OUTPUT ${skel}
    COMMAND ${BPFTOOL} gen skeleton ${obj} name ${name} > ${skel}
    DEPENDS ${obj}
    COMMENT "Skeleton ${name}"
    VERBATIM)
  add_custom_target(${name}_skel_gen DEPENDS ${skel})
  add_library(${name}_skel INTERFACE)
  add_dependencies(${name}_skel ${name}_skel_gen)
  target_include_directories(${name}_skel INTERFACE ${BPF_GEN_DIR} ${CMAKE_SOURCE_DIR}/bpf)
  target_link_libraries(${name}_skel INTERFACE PkgConfig::LIBBPF PkgConfig::LIBELF)
endfunction()
