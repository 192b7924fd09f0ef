# The kvflash program: the demo's quick run passes its sample checks, `kvflash ifa` checks a
# contiguous and a paged shape, and a bad shape is refused with the library's message.
if(NOT TARGET kvflash_cli)  # KVFLASH_BUILD_TOOLS=OFF
  return()
endif()
add_test(NAME cli_demo_quick COMMAND kvflash_cli demo --quick --iters 1 --no-bandwidth)
set_tests_properties(cli_demo_quick PROPERTIES PASS_REGULAR_EXPRESSION "demo: all sample checks passed"
  TIMEOUT 600 LABELS cli)
add_test(NAME cli_ifa_contiguous_check
  COMMAND kvflash_cli ifa --lengths 1 77 300 --heads 8 --kv-heads 2 --dim 64 --block-size 0 --iters 1
          --check --no-bandwidth)
add_test(NAME cli_ifa_paged_int8_check
  COMMAND kvflash_cli ifa --lengths 130 0 45 --kv-dtype int8 --block-size 32 --iters 1 --check --no-bandwidth)
# Batch < 3: the sampled first, longest and shortest sequences coincide and are checked once each
# (replaying one paged sequence three times once asked for more blocks than the cache holds).
add_test(NAME cli_ifa_paged_batch1_check
  COMMAND kvflash_cli ifa --lengths 300 --heads 8 --kv-heads 2 --dim 64 --block-size 16 --iters 1
          --check --no-bandwidth)
add_test(NAME cli_ifa_paged_batch2_check
  COMMAND kvflash_cli ifa --lengths 40 260 --kv-dtype fp16 --heads 8 --kv-heads 2 --dim 64
          --block-size 128 --iters 1 --check --no-bandwidth)
add_test(NAME cli_ifa_contiguous_batch1_check
  COMMAND kvflash_cli ifa --lengths 200 --heads 8 --kv-heads 2 --dim 64 --block-size 0 --iters 1
          --check --no-bandwidth)
set_tests_properties(cli_ifa_paged_batch1_check cli_ifa_paged_batch2_check
  cli_ifa_contiguous_batch1_check PROPERTIES
  PASS_REGULAR_EXPRESSION "of [12] sequences? vs double reference.*PASSED"
  FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 300 LABELS cli)
set_tests_properties(cli_ifa_contiguous_check cli_ifa_paged_int8_check PROPERTIES
  PASS_REGULAR_EXPRESSION "PASSED" FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 300 LABELS cli)
add_test(NAME cli_ifa_bad_shape COMMAND kvflash_cli ifa --heads 6 --kv-heads 4 --iters 1 --no-bandwidth)
set_tests_properties(cli_ifa_bad_shape PROPERTIES WILL_FAIL TRUE LABELS cli)
add_test(NAME cli_ifa_bad_shape_message COMMAND kvflash_cli ifa --heads 6 --kv-heads 4 --iters 1 --no-bandwidth)
set_tests_properties(cli_ifa_bad_shape_message PROPERTIES
  PASS_REGULAR_EXPRESSION "num_heads \\(6\\) must be a multiple of num_key_value_heads \\(4\\)" LABELS cli)
# `kvflash info` reports the version of the library it runs.
add_test(NAME cli_info_version COMMAND kvflash_cli info --no-bandwidth)
set_tests_properties(cli_info_version PROPERTIES
  PASS_REGULAR_EXPRESSION "kvflash ${PROJECT_VERSION}\n" TIMEOUT 60 LABELS cli)
# `kvflash bench`: one tiny problem string runs, passes its check and writes JSON; a bad string is
# refused naming the bad item. (Benchmarks are not timed tests: this only proves the path works.)
add_test(NAME cli_bench_tiny
  COMMAND kvflash_cli bench ifa:b2,s64,n4,kvn2,d64,kv=fp16,paged=32 --iters 1 --no-bandwidth
          --json ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_tiny.json)
set_tests_properties(cli_bench_tiny PROPERTIES
  PASS_REGULAR_EXPRESSION "bench \\[1/1\\].*PASSED.*all problems ran and passed their checks"
  FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 120 LABELS cli)
add_test(NAME cli_bench_bad_problem COMMAND kvflash_cli bench ifa:b2,q5 --no-bandwidth)
set_tests_properties(cli_bench_bad_problem PROPERTIES WILL_FAIL TRUE LABELS cli)
add_test(NAME cli_bench_bad_problem_message COMMAND kvflash_cli bench ifa:b2,q5 --no-bandwidth)
set_tests_properties(cli_bench_bad_problem_message PROPERTIES
  PASS_REGULAR_EXPRESSION "problem 'ifa:b2,q5': q5: unknown key" LABELS cli)
