# Process teardown with aclnn work still queued (included by tests/CMakeLists.txt): one program,
# tests/exit/aclnn_exit_program.cpp, run once per order of teardown. Each must exit with the code
# it chose within the timeout: before the fix the pool died before the streams drained, and these
# hung or crashed.
add_executable(aclnn_exit_program ${CMAKE_CURRENT_SOURCE_DIR}/exit/aclnn_exit_program.cpp)
target_link_libraries(aclnn_exit_program PRIVATE kvflash Threads::Threads)
target_compile_options(aclnn_exit_program PRIVATE ${KVFLASH_WARNINGS})

# The program queues 6 runs of B=8, 32 heads (8 KV heads), 4096 positions (128 MiB of K and V
# read per run, tens of milliseconds each): main leaves while most are still queued. ThreadSanitizer
# runs smaller ones, many times slower.
if(KVFLASH_SANITIZE MATCHES "thread")
  set(KVFLASH_EXIT_SIZE 4 1024)
  set(KVFLASH_EXIT_TIMEOUT 240)
elseif(KVFLASH_SANITIZE)
  set(KVFLASH_EXIT_SIZE 6 4096)
  set(KVFLASH_EXIT_TIMEOUT 120)
else()
  set(KVFLASH_EXIT_SIZE 6 4096)
  set(KVFLASH_EXIT_TIMEOUT 60)
endif()

function(kvflash_exit_test name steps code)
  add_test(NAME aclnn_exit_${name}
    COMMAND ${CMAKE_COMMAND} -DPROGRAM=$<TARGET_FILE:aclnn_exit_program>
            "-DARGS=${steps};${code};${KVFLASH_EXIT_SIZE}" -DEXPECT=${code}
            -DTIMEOUT=${KVFLASH_EXIT_TIMEOUT} -P ${CMAKE_CURRENT_SOURCE_DIR}/exit/run_expect.cmake)
  math(EXPR backstop "${KVFLASH_EXIT_TIMEOUT} + 30")
  set_tests_properties(aclnn_exit_${name} PROPERTIES TIMEOUT ${backstop} LABELS exit)
endfunction()

# Return from main with the work queued, nothing released (a CANN sample leaving after an error).
kvflash_exit_test(return_stream "stream" 0)
kvflash_exit_test(return_default "default" 3)
kvflash_exit_test(return_both "both" 5)
# The same with part or all of the teardown done first.
kvflash_exit_test(return_stream_reset "stream,reset" 0)
kvflash_exit_test(return_default_reset "default,reset" 4)
kvflash_exit_test(return_stream_destroy "stream,destroy" 0)
kvflash_exit_test(return_both_destroy_reset_finalize "both,destroy,reset,finalize" 6)
kvflash_exit_test(return_both_finalize "both,finalize" 0)
kvflash_exit_test(return_both_sync "both,sync" 0)
# exit() called explicitly from main.
kvflash_exit_test(exit_stream "stream,exit" 7)
kvflash_exit_test(exit_default "default,exit" 0)
kvflash_exit_test(exit_both_reset "both,reset,exit" 8)
# A user static object whose destructor synchronises, checks the outputs and frees, after main.
kvflash_exit_test(static_stream "stream,static" 0)
kvflash_exit_test(static_default "default,static" 9)
kvflash_exit_test(static_both_exit "both,static,exit" 10)
kvflash_exit_test(static_both_sync "both,sync,static" 0)
kvflash_exit_test(static_both_destroy "both,destroy,static" 0)
kvflash_exit_test(static_both_finalize "both,finalize,static" 0)
# Runs queued from several host threads, each on a stream of its own.
kvflash_exit_test(return_threads "threads" 0)
kvflash_exit_test(static_threads "stream,threads,static" 0)
kvflash_exit_test(exit_threads_reset "default,threads,reset,exit" 12)
# Failing calls in main and after it: the per-thread error message outlives main's thread_locals.
kvflash_exit_test(static_stream_fail "stream,static,fail" 0)
kvflash_exit_test(static_default_fail_exit "default,static,fail,exit" 11)
