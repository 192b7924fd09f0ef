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
