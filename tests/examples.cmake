# The example programs of examples/ that are not CANN-style C API programs (those, and the C++ API
# programs of examples/cpp/, are built and run by tests/aclnn_examples.cmake; the Python ones by
# pytest, python/tests/test_examples.py): the kvflash program's example, which runs one problem
# of every operator through `kvflash bench` and reads its JSON back.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET kvflash_cli AND Python3_Interpreter_FOUND)
  add_test(NAME example_cli COMMAND bash ${PROJECT_SOURCE_DIR}/examples/cli.sh $<TARGET_FILE:kvflash_cli>)
  set_tests_properties(example_cli PROPERTIES PASS_REGULAR_EXPRESSION "cli: PASS" TIMEOUT 120
    LABELS cli)
endif()
