# The optional CUDA backend (ATTN_CUDA=AUTO|ON|OFF, default AUTO): AUTO builds it
# when nvcc is found (CMAKE_CUDA_COMPILER if given, else nvcc on PATH, else
# /usr/local/cuda/bin/nvcc), ON requires it, OFF never builds it. Sets
# ATTN_WITH_CUDA, and when it is ON enables the CUDA language for sm_90 (H100,
# H200; override with -DCMAKE_CUDA_ARCHITECTURES=...) and finds cuBLAS. The
# architectures are fixed rather than `native` so that a machine without a GPU
# (CI) compiles and links the same code.

set(ATTN_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE ATTN_CUDA PROPERTY STRINGS AUTO ON OFF)
string(TOUPPER "${ATTN_CUDA}" attn_cuda_mode)
if(NOT attn_cuda_mode MATCHES "^(AUTO|ON|OFF)$")
  message(FATAL_ERROR "ATTN_CUDA is '${ATTN_CUDA}'; use AUTO, ON or OFF")
endif()

set(ATTN_WITH_CUDA OFF)
if(NOT attn_cuda_mode STREQUAL "OFF")
  if(CMAKE_CUDA_COMPILER)
    set(attn_nvcc ${CMAKE_CUDA_COMPILER})
    set(attn_searched "CMAKE_CUDA_COMPILER=${CMAKE_CUDA_COMPILER}")
  else()
    find_program(attn_nvcc NAMES nvcc PATHS /usr/local/cuda/bin NO_CACHE)
    set(attn_searched "nvcc on PATH and /usr/local/cuda/bin/nvcc")
  endif()
  if(attn_nvcc AND EXISTS "${attn_nvcc}")
    set(CMAKE_CUDA_COMPILER ${attn_nvcc})
    if(NOT DEFINED CMAKE_CUDA_HOST_COMPILER)
      set(CMAKE_CUDA_HOST_COMPILER ${CMAKE_CXX_COMPILER})
    endif()
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      set(CMAKE_CUDA_ARCHITECTURES 90)
    endif()
    set(CMAKE_CUDA_STANDARD 17)
    set(CMAKE_CUDA_STANDARD_REQUIRED ON)
    set(CMAKE_CUDA_EXTENSIONS OFF)
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(ATTN_WITH_CUDA ON)
    message(STATUS "CUDA backend: on (${CMAKE_CUDA_COMPILER}, CUDA ${CUDAToolkit_VERSION}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES})")
  elseif(attn_cuda_mode STREQUAL "ON")
    message(FATAL_ERROR
      "ATTN_CUDA=ON but no nvcc was found (looked at ${attn_searched}). Install the CUDA toolkit (nvcc and cuBLAS), or "
      "give its compiler with -DCMAKE_CUDA_COMPILER=/path/to/nvcc, or configure with "
      "-DATTN_CUDA=AUTO (build without CUDA when nvcc is missing) or -DATTN_CUDA=OFF.")
  else()
    message(STATUS "CUDA backend: off (ATTN_CUDA=AUTO, no nvcc at ${attn_searched})")
  endif()
else()
  message(STATUS "CUDA backend: off (ATTN_CUDA=OFF)")
endif()
