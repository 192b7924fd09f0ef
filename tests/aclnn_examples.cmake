# Drop-in checks of the aclnn-compatible API (included by tests/CMakeLists.txt):
#   1. install this build into a scratch prefix (fixture),
#   2. build every example program (examples/*.cpp, CANN-style programs, one or more per operator
#      and version) against it with CANN 8.5's sample line of docs/api.md, and the C++ API
#      programs (examples/cpp/*.cpp) with the pkg-config line, and run it (each example checks its
#      own output against a double-precision computation and exits non-zero on a mismatch); the
#      kvflash line, CANN's older -lopapi line and CANN's sample CMake file each on
#      one example more,
#   3. build the seed document's example program unchanged, with the kvflash and the CANN library
#      names, and check its printed output (skipped when ../shared/seeds is absent),
#   4. consume the install through pkg-config and through find_package(kvflash), with the aclnn C
#      API, the C++ API (tests/surface/cpp_consumer.cpp) and from C (every C header; every .h
#      header as C++11 too).
set(KVFLASH_ACLNN_PREFIX ${PROJECT_BINARY_DIR}/aclnn-prefix)
set(KVFLASH_ACLNN_WORK ${PROJECT_BINARY_DIR}/aclnn-examples)
set(KVFLASH_ACLNN_SCRIPTS ${CMAKE_CURRENT_SOURCE_DIR}/aclnn)
# A sanitizer build's libkvflash needs the sanitizer runtime linked into the program as well.
set(KVFLASH_ACLNN_FLAGS "")
if(KVFLASH_SANITIZE)
  set(KVFLASH_ACLNN_FLAGS "-fsanitize=${KVFLASH_SANITIZE}")
endif()

add_test(NAME aclnn_install_prefix
  COMMAND ${KVFLASH_ACLNN_SCRIPTS}/install_prefix.sh ${CMAKE_COMMAND} ${PROJECT_BINARY_DIR}
          ${KVFLASH_ACLNN_PREFIX})
set_tests_properties(aclnn_install_prefix PROPERTIES FIXTURES_SETUP kvflash_aclnn_prefix
  RESOURCE_LOCK kvflash_aclnn_prefix TIMEOUT 300)

function(kvflash_aclnn_program_test name)
  cmake_parse_arguments(ARG "" "SRC;LINK;COMPILER;FLAGS" "EXTRA" ${ARGN})
  if(NOT ARG_COMPILER)
    set(ARG_COMPILER ${CMAKE_CXX_COMPILER})
  endif()
  add_test(NAME ${name}
    COMMAND ${KVFLASH_ACLNN_SCRIPTS}/build_and_run.sh --cxx ${ARG_COMPILER}
            --prefix ${KVFLASH_ACLNN_PREFIX} --src ${ARG_SRC} --work ${KVFLASH_ACLNN_WORK}/${name}
            --link ${ARG_LINK} --flags "${ARG_FLAGS} ${KVFLASH_ACLNN_FLAGS}" ${ARG_EXTRA})
  set_tests_properties(${name} PROPERTIES FIXTURES_REQUIRED kvflash_aclnn_prefix
    SKIP_RETURN_CODE 77 TIMEOUT 300 LABELS aclnn)
endfunction()

# CANN's samples build as C++11; the examples must also be free of warnings.
set(KVFLASH_EXAMPLE_FLAGS "-std=c++11 -Wall -Wextra -Werror")
file(GLOB KVFLASH_ACLNN_EXAMPLES CONFIGURE_DEPENDS ${PROJECT_SOURCE_DIR}/examples/*.cpp)
foreach(example ${KVFLASH_ACLNN_EXAMPLES})
  get_filename_component(example_name ${example} NAME_WE)
  kvflash_aclnn_program_test(aclnn_example_${example_name} SRC ${example} LINK cann-8.5
    FLAGS "${KVFLASH_EXAMPLE_FLAGS}")
endforeach()
set(KVFLASH_EXAMPLES_DIR ${PROJECT_SOURCE_DIR}/examples)
# The C++ API programs (examples/cpp/*.cpp, C++20) build with the pkg-config line docs/api.md gives
# a C++ API program.
file(GLOB KVFLASH_CPP_EXAMPLES CONFIGURE_DEPENDS ${KVFLASH_EXAMPLES_DIR}/cpp/*.cpp)
foreach(example ${KVFLASH_CPP_EXAMPLES})
  get_filename_component(example_name ${example} NAME_WE)
  kvflash_aclnn_program_test(example_cpp_${example_name} SRC ${example} LINK pkgconfig-cxx
    FLAGS "-Wall -Wextra -Werror")
endforeach()
kvflash_aclnn_program_test(aclnn_example_ifa_v1_basic_kvflash SRC ${KVFLASH_EXAMPLES_DIR}/ifa_v1_basic.cpp
  LINK kvflash FLAGS "${KVFLASH_EXAMPLE_FLAGS}")
kvflash_aclnn_program_test(aclnn_example_sfa_v1_cann_opapi SRC ${KVFLASH_EXAMPLES_DIR}/sfa_v1.cpp
  LINK cann FLAGS "${KVFLASH_EXAMPLE_FLAGS}")
add_test(NAME aclnn_example_pfa_v3_cann_cmake
  COMMAND ${KVFLASH_ACLNN_SCRIPTS}/cann_cmake_check.sh ${CMAKE_COMMAND} ${CMAKE_CXX_COMPILER}
          ${KVFLASH_ACLNN_PREFIX} ${KVFLASH_ACLNN_SCRIPTS}/cann_cmake_consumer
          ${KVFLASH_EXAMPLES_DIR}/pfa_v3.cpp ${KVFLASH_ACLNN_WORK}/aclnn_example_pfa_v3_cann_cmake
          "${KVFLASH_ACLNN_FLAGS}")
set_tests_properties(aclnn_example_pfa_v3_cann_cmake PROPERTIES
  FIXTURES_REQUIRED kvflash_aclnn_prefix TIMEOUT 300 LABELS aclnn)

# The seed: the example program of the V2 operator document, compiled unchanged.
set(KVFLASH_SEED_DOC ${PROJECT_SOURCE_DIR}/../shared/seeds/aclnn_incre_flash_attention_v2.en.txt)
kvflash_aclnn_program_test(aclnn_seed_ifa_v2_kvflash SRC ${KVFLASH_SEED_DOC} LINK kvflash
  EXTRA --seed --expect-seed-output)
kvflash_aclnn_program_test(aclnn_seed_ifa_v2_cann_libs SRC ${KVFLASH_SEED_DOC} LINK cann
  EXTRA --seed --expect-seed-output)

# Package consumers.
kvflash_aclnn_program_test(aclnn_consumer_pkgconfig
  SRC ${PROJECT_SOURCE_DIR}/examples/ifa_v1_basic.cpp LINK pkgconfig)
# The C++ API through pkg-config: Cflags has no -std (C programs use it too), the cxxflags variable
# brings C++20.
kvflash_aclnn_program_test(aclnn_consumer_pkgconfig_cpp
  SRC ${PROJECT_SOURCE_DIR}/tests/surface/cpp_consumer.cpp LINK pkgconfig-cxx)
add_test(NAME aclnn_consumer_find_package
  COMMAND ${KVFLASH_ACLNN_SCRIPTS}/find_package_check.sh ${CMAKE_COMMAND} ${KVFLASH_ACLNN_PREFIX}
          ${KVFLASH_ACLNN_SCRIPTS}/find_package_consumer
          ${PROJECT_SOURCE_DIR}/examples/ifa_v1_basic.cpp
          ${PROJECT_SOURCE_DIR}/tests/surface/cpp_consumer.cpp
          ${KVFLASH_ACLNN_WORK}/aclnn_consumer_find_package "${KVFLASH_ACLNN_FLAGS}")
set_tests_properties(aclnn_consumer_find_package PROPERTIES FIXTURES_REQUIRED kvflash_aclnn_prefix
  TIMEOUT 300 LABELS aclnn)

# The headers that are C in CANN compile and link as C (C99): the C consumer includes every C
# header; each compiles alone, and none is missing from the consumer. Every .h header compiles
# alone as C++11 as well.
# clang's C driver leaves out the C++ half of the UBSan runtime, which the library's vptr checks
# call: a C program linked with a clang sanitizer build asks for it (docs/api.md).
set(KVFLASH_ACLNN_C_FLAGS "")
if(KVFLASH_SANITIZE AND CMAKE_C_COMPILER_ID STREQUAL "Clang")
  set(KVFLASH_ACLNN_C_FLAGS "-fsanitize-link-c++-runtime -lstdc++")
endif()
kvflash_aclnn_program_test(aclnn_consumer_c SRC ${KVFLASH_ACLNN_SCRIPTS}/c_consumer.c LINK kvflash
  COMPILER ${CMAKE_C_COMPILER} FLAGS "-std=c99 -Wall -Wextra -pedantic -Werror ${KVFLASH_ACLNN_C_FLAGS}")
add_test(NAME aclnn_c_headers
  COMMAND ${PROJECT_SOURCE_DIR}/tests/surface/check_c_headers.sh ${CMAKE_C_COMPILER}
          ${KVFLASH_ACLNN_PREFIX} ${KVFLASH_ACLNN_SCRIPTS}/c_consumer.c
          ${KVFLASH_ACLNN_WORK}/aclnn_c_headers ${CMAKE_CXX_COMPILER})
set_tests_properties(aclnn_c_headers PROPERTIES FIXTURES_REQUIRED kvflash_aclnn_prefix
  TIMEOUT 300 LABELS aclnn)
