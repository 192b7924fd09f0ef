# The CUDA backend (src/**/*.cu). KVFLASH_CUDA: AUTO turns it on when CMake finds a CUDA compiler
# (nvcc: /usr/local/cuda/bin or PATH), ON requires one, OFF never builds it. With it on,
# KVFLASH_HAVE_CUDA=1 is defined for the library's C++ sources (src/backends/lists.cpp adds the
# device = kCuda entries). The CUDA sources compile on machines without a GPU: CI builds them on
# every run; the tests skip at run time when no device is present.
set(KVFLASH_CUDA AUTO CACHE STRING "Build the CUDA backend: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE KVFLASH_CUDA PROPERTY STRINGS AUTO ON OFF)
# sm_90a (Hopper, H100/H200) and sm_80 (Ampere) as machine code, plus compute_90 PTX so newer parts
# JIT it. gpu-check.sh overrides this with the local GPU ("native"); the ci preset, where the code is
# compiled but never runs, with sm_80 alone (the oldest part the kernels support; one target is a
# third of the device compile time).
set(KVFLASH_CUDA_ARCHITECTURES "90a-real;80-real;90-virtual" CACHE STRING
  "CMAKE_CUDA_ARCHITECTURES for the CUDA backend")

set(KVFLASH_HAVE_CUDA OFF)
if(NOT KVFLASH_CUDA STREQUAL "OFF")
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc)
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    set(KVFLASH_HAVE_CUDA ON)
  elseif(KVFLASH_CUDA STREQUAL "ON")
    message(FATAL_ERROR "kvflash: KVFLASH_CUDA=ON but no CUDA compiler was found (set CUDACXX)")
  else()
    message(STATUS "kvflash: no CUDA compiler found; the CUDA backend is off")
  endif()
endif()

if(KVFLASH_HAVE_CUDA)
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES ${KVFLASH_CUDA_ARCHITECTURES})
  endif()
  enable_language(CUDA)
  # C++20 as the rest of the library (the public headers need it: defaulted friend operator==).
  # nvcc >= 12 accepts -std=c++20, but CMake 3.25 (Debian 12) has no CUDA20 flag for nvcc; give it
  # the flag when the module did not.
  if(NOT CMAKE_CUDA20_STANDARD_COMPILE_OPTION AND CMAKE_CUDA_COMPILER_VERSION VERSION_GREATER_EQUAL 12)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION -std=c++20)
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION -std=c++20)
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  find_package(CUDAToolkit REQUIRED)
  message(STATUS "kvflash: CUDA backend on (${CMAKE_CUDA_COMPILER_VERSION}, archs "
    "${CMAKE_CUDA_ARCHITECTURES})")
  # Host-compiler warnings pass through -Xcompiler; nvcc's own warnings become errors with -Werror
  # (all-warnings) when KVFLASH_WERROR is on.
  string(REPLACE ";" "," KVFLASH_CUDA_XWARN "${KVFLASH_WARNINGS}")
  set(KVFLASH_CUDA_WARNINGS -Xcompiler=${KVFLASH_CUDA_XWARN})
  if(KVFLASH_WERROR)
    list(APPEND KVFLASH_CUDA_WARNINGS -Werror=all-warnings)
  endif()
  file(GLOB_RECURSE KVFLASH_CUDA_SOURCES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/src/*.cu)
endif()
