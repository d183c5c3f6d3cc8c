# NVIDIA's real user-space libraries and nvml.h, unpacked by
# scripts/fetch-nvidia-libs.sh into build/nvidia (setup.sh runs it before
# cmake). Reads its env file into the variables NVIDIA_REAL_LIBCUDA,
# NVIDIA_REAL_LIBNVML, NVIDIA_REAL_LIBCUDART, NVIDIA_REAL_NVML_H,
# NVIDIA_REAL_LIBDIR and NVIDIA_REAL_DRIVER_VERSION, and sets NVIDIA_REAL_FOUND
# when every file is there (and NVIDIA_REAL_NVML_INCLUDE_DIR).
#
# Without them the tests against the real libraries are not built, with a
# message. Under CI=true that is a configuration error: CI always fetches them,
# and a test that silently is not there proves nothing. Only the tests (and the
# benchmark's real-driver part) use them: with GPULEDGER_TESTS=OFF (the demo's
# build, scripts/setup.sh --demo) their absence is not worth a word.
set(GPULEDGER_NVIDIA_DIR "${CMAKE_SOURCE_DIR}/build/nvidia" CACHE PATH
    "Where scripts/fetch-nvidia-libs.sh unpacked NVIDIA's libraries (its env file)")
set(_nvidia_real_vars NVIDIA_REAL_LIBCUDA NVIDIA_REAL_LIBNVML NVIDIA_REAL_LIBCUDART NVIDIA_REAL_NVML_H
    NVIDIA_REAL_LIBDIR)
if(EXISTS "${GPULEDGER_NVIDIA_DIR}/env")
  file(STRINGS "${GPULEDGER_NVIDIA_DIR}/env" _nvidia_env REGEX "^NVIDIA_REAL_[A-Z_]+=")
  foreach(_line IN LISTS _nvidia_env)
    string(REGEX MATCH "^([A-Z_]+)=(.*)$" _ "${_line}")
    set(${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
  endforeach()
  # Re-read on every configure: a refetch changes the files.
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS "${GPULEDGER_NVIDIA_DIR}/env")
endif()
set(NVIDIA_REAL_FOUND TRUE)
set(_nvidia_missing "")
foreach(_var IN LISTS _nvidia_real_vars)
  if(NOT DEFINED ${_var} OR NOT EXISTS "${${_var}}")
    set(NVIDIA_REAL_FOUND FALSE)
    list(APPEND _nvidia_missing ${_var})
  endif()
endforeach()
if(NVIDIA_REAL_FOUND)
  get_filename_component(NVIDIA_REAL_NVML_INCLUDE_DIR "${NVIDIA_REAL_NVML_H}" DIRECTORY)
  message(STATUS "NVIDIA's real libraries: ${NVIDIA_REAL_LIBCUDA}, ${NVIDIA_REAL_LIBNVML}, ${NVIDIA_REAL_NVML_H}")
elseif(NOT GPULEDGER_TESTS)
  # Nothing built needs them.
elseif("$ENV{CI}" STREQUAL "true")
  list(JOIN _nvidia_missing ", " _nvidia_missing)
  message(FATAL_ERROR "NVIDIA's real libraries are missing (${_nvidia_missing} not in ${GPULEDGER_NVIDIA_DIR}/env): "
                      "run scripts/fetch-nvidia-libs.sh ${GPULEDGER_NVIDIA_DIR} (scripts/setup.sh does)")
else()
  list(JOIN _nvidia_missing ", " _nvidia_missing)
  message(WARNING "NVIDIA's real libraries are missing (${_nvidia_missing}): the tests against them are not built; "
                  "run scripts/fetch-nvidia-libs.sh ${GPULEDGER_NVIDIA_DIR}")
endif()

# The toolkit's cuda.h, where this machine has one (optional: not on a fresh Debian box).
find_path(GPULEDGER_REAL_CUDA_INCLUDE cuda.h PATHS /usr/local/cuda/include NO_DEFAULT_PATH)
if(GPULEDGER_REAL_CUDA_INCLUDE)
  set(GPULEDGER_REAL_CUDA_H ${GPULEDGER_REAL_CUDA_INCLUDE}/cuda.h)
else()
  set(GPULEDGER_REAL_CUDA_H "")
endif()
