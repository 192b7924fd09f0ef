# The shape of the shipped library (included by tests/CMakeLists.txt): libkvflash.so exports the
# public API and nothing else (tests/surface/check_exports.sh). The installed-header and consumer
# checks are in aclnn_examples.cmake; the version test is version_test.cpp.
add_test(NAME library_exports
  COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/surface/check_exports.sh $<TARGET_FILE:kvflash>
          ${PROJECT_SOURCE_DIR}/include ${KVFLASH_GENERATED_INCLUDE})
set_tests_properties(library_exports PROPERTIES TIMEOUT 120 LABELS surface)

# version_test checks the header macros and kvflash_version() against the project VERSION (its
# objects: tests/CMakeLists.txt).
target_compile_definitions(version_test_objects PRIVATE KVFLASH_PROJECT_VERSION="${PROJECT_VERSION}")

# Every file, symbol and contract section a comment names exists (scripts/check_comment_refs.py).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME comment_refs COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/scripts/check_comment_refs.py)
set_tests_properties(comment_refs PROPERTIES TIMEOUT 60 LABELS surface)
