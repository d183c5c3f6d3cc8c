# NVIDIA's real user-space libraries, unpacked by scripts/fetch-nvidia-libs.sh
# into build/nvidia (setup.sh runs it before configuring): the tests name them
# explicitly, never the host's. GPULEDGER_REAL_* are empty when not fetched;
# the tests that need them fail under CI=true and skip elsewhere.
set(GPULEDGER_NVIDIA_DIR ${CMAKE_BINARY_DIR}/nvidia CACHE PATH "Where fetch-nvidia-libs.sh unpacked the real libraries")
foreach(var LIBCUDA LIBNVML LIBCUDART NVML_H LIBDIR DRIVER_VERSION)
  set(GPULEDGER_REAL_${var} "")
endforeach()
if(EXISTS ${GPULEDGER_NVIDIA_DIR}/env)
  file(STRINGS ${GPULEDGER_NVIDIA_DIR}/env lines)
  foreach(line IN LISTS lines)
    if(line MATCHES "^NVIDIA_REAL_([A-Z_]+)=(.*)$")
      set(GPULEDGER_REAL_${CMAKE_MATCH_1} "${CMAKE_MATCH_2}")
    endif()
  endforeach()
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${GPULEDGER_NVIDIA_DIR}/env)
  message(STATUS "Real NVIDIA libraries: ${GPULEDGER_REAL_LIBCUDA}, ${GPULEDGER_REAL_LIBNVML}, ${GPULEDGER_REAL_LIBCUDART}")
else()
  message(STATUS "Real NVIDIA libraries: not fetched (scripts/fetch-nvidia-libs.sh build/nvidia)")
endif()
# The toolkit's cuda.h, where this machine has one (optional: not on a fresh Debian box).
find_path(GPULEDGER_REAL_CUDA_INCLUDE cuda.h PATHS /usr/local/cuda/include NO_DEFAULT_PATH)
if(GPULEDGER_REAL_CUDA_INCLUDE)
  set(GPULEDGER_REAL_CUDA_H ${GPULEDGER_REAL_CUDA_INCLUDE}/cuda.h)
else()
  set(GPULEDGER_REAL_CUDA_H "")
endif()
