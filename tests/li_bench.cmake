# The LightningIndexer microbenchmark (bench/li_bench.cpp; not a test, nothing registers it with
# CTest). It lives here because it drives the kernel through the test support's LiCall binding
# (tests/support/li_run.*) until the operator has its own plan and C++ API; then it becomes a
# `kvflash bench li:` problem string.
add_executable(kvflash_li_bench ${PROJECT_SOURCE_DIR}/bench/li_bench.cpp)
target_link_libraries(kvflash_li_bench PRIVATE kvflash_test_support kvflash_roofline Threads::Threads)
target_compile_options(kvflash_li_bench PRIVATE ${KVFLASH_WARNINGS})
