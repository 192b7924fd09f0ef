# The kvflash program: the demo's quick run passes its sample checks, `kvflash ifa` checks a
# contiguous and a paged shape, and a bad shape is refused with the library's message.
if(NOT TARGET kvflash_cli)  # KVFLASH_BUILD_TOOLS=OFF
  return()
endif()
# One run of the demo's quick mode, checked three ways in the order it prints them (one regular
# expression: CTest passes a test when any one of several matches): the SFA step (128 heads) gives
# its roofline (measured, hence no --no-bandwidth): its bound, memory or the compute engine SFA
# runs on, and its fraction of it; the DSA step times both halves with their shares, gives the
# indexer's roofline and fp64-checks the indexer and SFA; every sample check passed.
add_test(NAME cli_demo_quick COMMAND kvflash_cli demo --quick --iters 1)
set_tests_properties(cli_demo_quick PROPERTIES
  PASS_REGULAR_EXPRESSION "\nsfa  deepseek-v3.2 [^\n]*GB/s\n     intensity [0-9.]+ FLOP/B; roofline [^\n]*\\((memory|amx|vdpbf16ps|fma)-bound: [^\n]*: [0-9.]+ of the roofline\n.*\ndsa  deepseek-v3.2 decode step [^\n]*indexer N=64 top-2048 [^\n]*%[^\n]*SFA N=128 [^\n]*per layer[^\n]*\n     indexer: intensity [^\n]* of the roofline\n[^\n]*PASSED\n[^\n]*SFA over the indexer's selection[^\n]*PASSED\n.*\ndemo: all sample checks passed"
  FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 600 LABELS cli)
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
# Every timed row gives the median and the p10-p90 spread, starts from cold caches by default and
# says when it does not, and the legend before the rows explains the terms.
add_test(NAME cli_ifa_cold_rows_and_legend
  COMMAND kvflash_cli ifa --lengths 64 90 --heads 4 --kv-heads 2 --dim 64 --block-size 0 --iters 3
          --check --no-bandwidth)
set_tests_properties(cli_ifa_cold_rows_and_legend PROPERTIES
  PASS_REGULAR_EXPRESSION "time: the median of 3 timed calls[^\n]*p10-p90[^\n]*\n[^\n]*cold caches: [0-9]+ MiB[^\n]*\n.*worst err/tol: the largest[^\n]*\n[^\n]*same bits alone as in batch: [^\n]*\nifa [^\n]*  median [0-9.]+ ms/call \\(p10-p90 [0-9.]+-[0-9.]+\\)  bytes [0-9. ]+ MB"
  FAIL_REGULAR_EXPRESSION "FAILED|warm caches" TIMEOUT 120 LABELS cli)
add_test(NAME cli_ifa_warm_rows_say_so
  COMMAND kvflash_cli ifa --lengths 64 --heads 4 --kv-heads 2 --dim 64 --block-size 0 --iters 3
          --warm-cache --no-bandwidth)
set_tests_properties(cli_ifa_warm_rows_say_so PROPERTIES
  PASS_REGULAR_EXPRESSION "warm caches \\(--warm-cache\\)[^\n]*\n.*\nifa [^\n]*median [0-9.]+ ms/call \\(p10-p90 [0-9.]+-[0-9.]+, warm caches\\)  bytes [0-9. ]+ MB"
  FAIL_REGULAR_EXPRESSION "cold caches" TIMEOUT 120 LABELS cli)
# The help names every operator the program runs.
add_test(NAME cli_help_names_every_operator COMMAND kvflash_cli --help)
set_tests_properties(cli_help_names_every_operator PROPERTIES
  PASS_REGULAR_EXPRESSION "\\(ifa\\).*\\(sfa\\).*\\(li\\).*\\(fia\\).*\\(pfa\\)" TIMEOUT 30 LABELS cli)
add_test(NAME cli_bench_help_names_every_operator COMMAND kvflash_cli bench --help)
set_tests_properties(cli_bench_help_names_every_operator PROPERTIES
  PASS_REGULAR_EXPRESSION "ifa:b8,[^ ]* or sfa:[^ ]* or li:[^ ]* or fia:[^ ]* or pfa:" TIMEOUT 30
  LABELS cli)
# `kvflash info` reports the compute peaks `bench` and `demo` judge rows against.
add_test(NAME cli_info_compute_peaks COMMAND kvflash_cli info)
set_tests_properties(cli_info_compute_peaks PROPERTIES
  PASS_REGULAR_EXPRESSION "machine read bandwidth \\(measured[^\n]*\ncompute peak \\(measured, [0-9]+ threads\\): [0-9]+ GFLOP/s, the faster of[^\n]*\nmatrix engine peak[^\n]*\nroofline ceilings [^\n]*: memory [0-9.]+ GB/s read[^\n]*\n  on [^\n]*: bf16 (amx|vdpbf16ps|fma) [0-9]+ GFLOP/s \\(ridge [0-9.]+\\); fp16 (amx/2|vdpbf16ps/2|fma) [0-9]+ GFLOP/s"
  TIMEOUT 120 LABELS cli)
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
  PASS_REGULAR_EXPRESSION "bench \\[1/1\\].*median [0-9.]+ ms/call \\(p10-p90 [0-9.]+-[0-9.]+\\).*PASSED.*all problems ran and passed their checks"
  FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 120 FIXTURES_SETUP bench_json LABELS cli)
# An sfa problem string runs and passes its check, and writes CSV; a bad one is refused.
add_test(NAME cli_bench_sfa_tiny
  COMMAND kvflash_cli bench sfa:b2,topk64,s256,n16,blk2,paged=64,kv=fp16 --iters 1 --no-bandwidth
          --csv ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_sfa_tiny.csv)
set_tests_properties(cli_bench_sfa_tiny PROPERTIES
  PASS_REGULAR_EXPRESSION "bench \\[1/1\\] sfa:.*2 sequences.*PASSED.*all problems ran and passed"
  FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 120 LABELS cli)
add_test(NAME cli_bench_sfa_bad_problem COMMAND kvflash_cli bench sfa:b1,paged=64,blk128 --no-bandwidth)
set_tests_properties(cli_bench_sfa_bad_problem PROPERTIES
  PASS_REGULAR_EXPRESSION "blk must divide the paged block size" LABELS cli)
# An li problem string runs and passes its check; a bad sparse_count is refused with its rule.
add_test(NAME cli_bench_li_tiny
  COMMAND kvflash_cli bench li:b2,s1024,n16,topk64,next2,paged=64,kv=bf16 --iters 1 --no-bandwidth)
set_tests_properties(cli_bench_li_tiny PROPERTIES
  PASS_REGULAR_EXPRESSION "bench \\[1/1\\] li:.*4 rows x 1024 keys.*PASSED.*all problems ran and passed"
  FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 120 LABELS cli)
add_test(NAME cli_bench_li_bad_topk COMMAND kvflash_cli bench li:topk3000 --no-bandwidth)
set_tests_properties(cli_bench_li_bad_topk PROPERTIES
  PASS_REGULAR_EXPRESSION "topk \\(sparse_count\\) is in \\[1, 2048\\] or a multiple of 1024" LABELS cli)
add_test(NAME cli_bench_sfa_too_many_heads COMMAND kvflash_cli bench sfa:n129 --no-bandwidth)
set_tests_properties(cli_bench_sfa_too_many_heads PROPERTIES
  PASS_REGULAR_EXPRESSION "problem 'sfa:n129': n129: n \\(query heads\\) is a power of 2 in \\[1, 128\\]" LABELS cli)
add_test(NAME cli_bench_sfa_heads_power_of_two COMMAND kvflash_cli bench sfa:n3 --no-bandwidth)
set_tests_properties(cli_bench_sfa_heads_power_of_two PROPERTIES
  PASS_REGULAR_EXPRESSION "problem 'sfa:n3': n3: n \\(query heads\\) is a power of 2 in \\[1, 128\\]"
  FAIL_REGULAR_EXPRESSION "plan failed" LABELS cli)
# What the operators would refuse at plan time is refused by the parser, with the valid range.
add_test(NAME cli_bench_zero_kv_length COMMAND kvflash_cli bench ifa:b2,s0 --no-bandwidth)
set_tests_properties(cli_bench_zero_kv_length PROPERTIES
  PASS_REGULAR_EXPRESSION "problem 'ifa:b2,s0': s0: s \\(KV length\\) is an integer in \\[1, 16777216\\]"
  FAIL_REGULAR_EXPRESSION "plan failed" LABELS cli)
add_test(NAME cli_bench_kvn_divides_n COMMAND kvflash_cli bench ifa:n6,kvn4 --no-bandwidth)
set_tests_properties(cli_bench_kvn_divides_n PROPERTIES
  PASS_REGULAR_EXPRESSION "problem 'ifa:n6,kvn4': n \\(6\\) must be a multiple of kvn \\(4\\)"
  FAIL_REGULAR_EXPRESSION "plan failed" LABELS cli)
# fia: per-request lengths (a mixed TND batch), int8 per-channel / per-token caches, LSE and a sink
# run and pass their checks; a list whose counts disagree is refused.
add_test(NAME cli_bench_fia_mixed
  COMMAND kvflash_cli bench fia:q1x3+40,s100x3+120,n8,kvn2,d64,mode=3,paged=16
          fia:b2,q1,s300,n8,kvn2,d64,paged=32,kv=int8,lse=1,sink=1
          fia:b2,q1,s300,n8,kvn2,d64,paged=32,kv=int8t --iters 1 --no-bandwidth)
set_tests_properties(cli_bench_fia_mixed PROPERTIES
  PASS_REGULAR_EXPRESSION "TND requests=4 T=43.*all problems ran and passed their checks"
  FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 120 LABELS cli)
# The FIA mask rules (docs/fia-semantics.md): decode calls (q1) with mode 3 and no mask, and the
# compressed mask's 4-D / 3-D shapes for fia and pfa, run and pass their fp64 checks; a prefill
# call with mode 3 and no mask is refused when parsed (the library would refuse it).
add_test(NAME cli_bench_fia_mask_rules
  COMMAND kvflash_cli bench fia:b2,q1,s300,n8,kvn2,d64,mode=3,mask=none
          fia:b2,q1,s200,n8,kvn2,d64,mode=3,mask=none,paged=16
          fia:b2,q33,s80,n4,kvn2,d64,mode=3,mask=4d,kv=fp16 pfa:q40,n4,kvn2,d64,mode=3,mask=3d
          --iters 1 --no-bandwidth)
set_tests_properties(cli_bench_fia_mask_rules PROPERTIES
  PASS_REGULAR_EXPRESSION "all problems ran and passed their checks"
  FAIL_REGULAR_EXPRESSION "FAILED|plan failed" TIMEOUT 120 LABELS cli)
add_test(NAME cli_bench_fia_prefill_needs_mask
  COMMAND kvflash_cli bench fia:q4,s64,n4,kvn2,d64,mode=3,mask=none --iters 1 --no-bandwidth)
set_tests_properties(cli_bench_fia_prefill_needs_mask PROPERTIES
  PASS_REGULAR_EXPRESSION "mask=none with mode=3 needs a decode call"
  FAIL_REGULAR_EXPRESSION "plan failed" LABELS cli)
add_test(NAME cli_bench_fia_bad_list COMMAND kvflash_cli bench fia:q1x2,s100x3,paged=16 --no-bandwidth)
set_tests_properties(cli_bench_fia_bad_list PROPERTIES
  PASS_REGULAR_EXPRESSION "s lists 3 requests, q 2" FAIL_REGULAR_EXPRESSION "plan failed" LABELS cli)
add_test(NAME cli_bench_int8_block_size COMMAND kvflash_cli bench ifa:kv=int8,paged=16 --no-bandwidth)
set_tests_properties(cli_bench_int8_block_size PROPERTIES
  PASS_REGULAR_EXPRESSION "paged \\(16\\) must be a multiple of 32 with kv=int8"
  FAIL_REGULAR_EXPRESSION "plan failed" LABELS cli)
add_test(NAME cli_bench_unknown_key_ranges COMMAND kvflash_cli bench sfa:x1 --no-bandwidth)
set_tests_properties(cli_bench_unknown_key_ranges PROPERTIES
  PASS_REGULAR_EXPRESSION "x1: unknown key \\(b \\(batch\\) is an integer in \\[1, 65536\\];.* s \\(KV length\\) is an integer in \\[1, 16777216\\]; n \\(query heads\\) is a power of 2 in \\[1, 128\\]; blk .*paged .*kv is bf16 or fp16\\)"
  LABELS cli)
# The progress lines go to stdout with the results: nothing on stderr.
add_test(NAME cli_bench_progress_one_stream
  COMMAND sh -c "out=$(\"$1\" bench ifa:b1,s16,n4,kvn2,d64,paged=0 ifa:b1,s32,n4,kvn2,d64,paged=0 --iters 1 --no-bandwidth 2>&1 >/dev/null); [ -z \"$out\" ] || { echo \"stderr: $out\"; exit 1; }"
          sh $<TARGET_FILE:kvflash_cli>)
set_tests_properties(cli_bench_progress_one_stream PROPERTIES TIMEOUT 120 LABELS cli)
# `cmake --install` after scripts/demo.sh: it builds kvflash_installed, which depends on every
# installed target (cmake/install.cmake), and nothing of the tests or the CUDA backend.
add_test(NAME cli_demo_script_builds_installed_targets
  COMMAND ${CMAKE_COMMAND} -DDEMO=${PROJECT_SOURCE_DIR}/scripts/demo.sh
          -DTARGETS=kvflash_installed -DDEFINES=KVFLASH_BUILD_TESTS=OFF,KVFLASH_CUDA=OFF
          -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/demo_targets.cmake)
set_tests_properties(cli_demo_script_builds_installed_targets PROPERTIES LABELS cli)
add_test(NAME cli_bench_bnsd_needs_paged COMMAND kvflash_cli bench ifa:paged=0,layout=bnsd --no-bandwidth)
set_tests_properties(cli_bench_bnsd_needs_paged PROPERTIES
  PASS_REGULAR_EXPRESSION "layout=bnsd needs a paged cache" LABELS cli)
add_test(NAME cli_bench_unknown_sweep COMMAND kvflash_cli bench --sweep nope --no-bandwidth)
set_tests_properties(cli_bench_unknown_sweep PROPERTIES
  PASS_REGULAR_EXPRESSION "--sweep: unknown sweep 'nope' \\(default, quick, vllm\\)" LABELS cli)
# vllm-ascend's path: _npu_paged_attention's IFA call (layout=atb) and the cache write (kvcache:)
# run and pass their checks (the write's bytes against the reference's); the rules are refused.
add_test(NAME cli_bench_vllm_tiny
  COMMAND kvflash_cli bench ifa:b2,s300,n8,kvn2,d64,kv=fp16,paged=32,layout=atb
          kvcache:t300,kvn2,d64,paged=16,slots=decode kvcache:t700,kvn1,d72,paged=128,kv=int8
          --iters 1 --no-bandwidth)
set_tests_properties(cli_bench_vllm_tiny PROPERTIES
  PASS_REGULAR_EXPRESSION "paged bs=32 atb.*PASSED.*T=300 KV_N=2 D=64 bs=16 decode slots.*check \\(both caches.*PASSED.*int8 T=700.*prefill slots.*PASSED.*all problems ran and passed"
  FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 120 LABELS cli)
add_test(NAME cli_bench_atb_rules
  COMMAND kvflash_cli bench ifa:paged=0,layout=atb --no-bandwidth)
set_tests_properties(cli_bench_atb_rules PROPERTIES
  PASS_REGULAR_EXPRESSION "layout=atb needs a paged cache" LABELS cli)
add_test(NAME cli_bench_atb_int8 COMMAND kvflash_cli bench ifa:kv=int8,paged=32,layout=atb --no-bandwidth)
set_tests_properties(cli_bench_atb_int8 PROPERTIES
  PASS_REGULAR_EXPRESSION "layout=atb takes kv=bf16 or fp16" LABELS cli)
add_test(NAME cli_bench_kvcache_unknown_key COMMAND kvflash_cli bench kvcache:n8 --no-bandwidth)
set_tests_properties(cli_bench_kvcache_unknown_key PROPERTIES
  PASS_REGULAR_EXPRESSION "n8: unknown key \\(t \\(tokens written\\) is an integer in \\[1, 16777216\\];.*slots is prefill .* or decode" LABELS cli)
add_test(NAME cli_bench_sweep_vllm_list COMMAND kvflash_cli bench --sweep vllm --list)
set_tests_properties(cli_bench_sweep_vllm_list PROPERTIES
  PASS_REGULAR_EXPRESSION "ifa:b8,s4096,kv=bf16,paged=128,layout=bsnd\nifa:b32,s1024,kv=bf16,paged=128,layout=bsnd\n.*ifa:b8,s4096,kv=bf16,paged=128,layout=atb\n.*kvcache:t1024,kvn8,d128,paged=128,kv=bf16,slots=decode"
  FAIL_REGULAR_EXPRESSION "bench \\[" TIMEOUT 30 LABELS cli)
# A named sweep lists its problems without running them (the default sweep of docs/perf-log.md).
add_test(NAME cli_bench_sweep_list COMMAND kvflash_cli bench --sweep default --list)
set_tests_properties(cli_bench_sweep_list PROPERTIES
  PASS_REGULAR_EXPRESSION "ifa:b2,s32768,kv=int8,paged=128\nifa:b2,s8192,kv=bf16,paged=0\n.*sfa:b4,topk2048,s8192,n16,"
  FAIL_REGULAR_EXPRESSION "bench \\[" TIMEOUT 30 LABELS cli)
# The scripts that turn runs into docs/perf-log.md: bench/report.py reads a kvflash bench JSON and a
# bench/peers.py run (the quick sweep, no peers, no probes), without matplotlib (no --plot).
find_package(Python3 COMPONENTS Interpreter)
if(Python3_Interpreter_FOUND)
  # The JSON's time is the median, with its spread.
  add_test(NAME cli_bench_json_spread
    COMMAND ${Python3_EXECUTABLE} -c "import json, sys; r = json.load(open(sys.argv[1])); x = r['results'][0]; assert r['ms_per_call_statistic'] == 'median' and 0 < x['ms_p10'] <= x['ms_per_call'] <= x['ms_p90'], x"
            ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_tiny.json)
  set_tests_properties(cli_bench_json_spread PROPERTIES FIXTURES_REQUIRED bench_json TIMEOUT 60
    LABELS cli)
  add_test(NAME cli_bench_report
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/report.py
            ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_tiny.json)
  set_tests_properties(cli_bench_report PROPERTIES FIXTURES_REQUIRED bench_json
    PASS_REGULAR_EXPRESSION "\\| `ifa:b2,s64,n4,kvn2,d64,kv=fp16,paged=32` \\| [0-9.]+ \\| [0-9.]+ \\| - \\| - \\| - \\| - \\| passed \\|"
    TIMEOUT 60 LABELS cli)
  add_test(NAME cli_bench_peers_quick
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/peers.py --kvflash $<TARGET_FILE:kvflash_cli>
            --sweep quick --no-peers --no-bandwidth --iters 1
            --out ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_peers_quick.json)
  set_tests_properties(cli_bench_peers_quick PROPERTIES FIXTURES_SETUP bench_peers_json
    PASS_REGULAR_EXPRESSION "4 problems in .*all checks passed" TIMEOUT 120 LABELS cli)
  add_test(NAME cli_bench_report_peers
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/report.py
            ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_peers_quick.json)
  set_tests_properties(cli_bench_report_peers PROPERTIES FIXTURES_REQUIRED bench_peers_json
    PASS_REGULAR_EXPRESSION "SFA \\(sparse MLA\\) decode.*`sfa:b1,topk64,s256,n16,blk1,paged=64,kv=bf16` .* passed.*Fixed per-call cost.*`ifa:b1,s16,n4,kvn2,d64,kv=int8,paged=32,layout=bnsd` \\| [0-9.]+ \\| passed"
    TIMEOUT 60 LABELS cli)
  # A committed run with all three peers (docs/perf-log.md round 3): the peers' isa columns in both
  # tables, and the side-by-side and CSV forms of the same rows.
  set(peer_run ${PROJECT_SOURCE_DIR}/bench/runs/2026-12-02-sweep-peers-1t.json)
  add_test(NAME cli_bench_report_peer_isa
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/report.py ${peer_run}
            --csv ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_report_peer_isa.csv)
  set_tests_properties(cli_bench_report_peer_isa PROPERTIES
    PASS_REGULAR_EXPRESSION "no AMX on this CPU.*`ifa:b2,s8192,kv=bf16,paged=16,layout=bsnd` \\|[^\n]*\\| vec16 \\|.*`sfa:b4,topk2048,s8192,n16,blk1,paged=64,kv=bf16` \\|[^\n]*\\| avx512-bf16 \\(oneDNN brgemm\\) \\| [0-9.]+x \\| passed"
    TIMEOUT 60 LABELS cli)
  add_test(NAME cli_bench_report_beside
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/report.py ${peer_run} --beside ${peer_run})
  set_tests_properties(cli_bench_report_beside PROPERTIES
    PASS_REGULAR_EXPRESSION "\\| problem \\| vllm isa \\| sglang isa \\| 1t#1 of roofline \\| 1t#1 vs sdpa \\| 1t#1 vs vllm \\| 1t#1 vs sglang \\| 1t#2 of roofline.*`sfa:b4,topk2048,s8192,n128,blk1,paged=64,kv=bf16` \\| [^\n]* \\| [0-9.]+ compute \\|"
    TIMEOUT 60 LABELS cli)
  # The roofline (docs/perf.md, "Roofline"): bench/roofline.py on cases worked out by hand; a run
  # with its ceilings measured gives every operator's row its roofline (text and JSON), which
  # bench/roofline.py recomputes to the same figures, and report.py shows per row and as headlines.
  add_test(NAME cli_bench_roofline_formulas
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/bench_roofline_check.py formulas)
  set_tests_properties(cli_bench_roofline_formulas PROPERTIES TIMEOUT 60 LABELS cli)
  add_test(NAME cli_bench_roofline
    COMMAND kvflash_cli bench ifa:b1,s4096,n8,kvn2,d64,kv=fp16,paged=32
            ifa:b2,s1024,n8,kvn2,d64,kv=int8,paged=32 sfa:b1,topk256,s1024,n16,blk1,paged=64,kv=bf16
            li:b2,s2048,n16,topk64,next2,paged=64,kv=bf16 pfa:q128,n4,kvn2,d64
            kvcache:t300,kvn2,d64,paged=16 --iters 1 --warm-cache
            --json ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_roofline.json)
  set_tests_properties(cli_bench_roofline PROPERTIES FIXTURES_SETUP bench_roofline_json
    PASS_REGULAR_EXPRESSION "roofline ceilings[^\n]*memory [0-9.]+ GB/s read.*bench \\[1/6\\].*\n     intensity [0-9.]+ FLOP/B; roofline [0-9.e-]+ ms \\([a-z0-9/]+-bound: [^)]*\\): [0-9.]+ of the roofline\n.*all problems ran and passed"
    FAIL_REGULAR_EXPRESSION "FAILED" TIMEOUT 180 LABELS cli)
  add_test(NAME cli_bench_roofline_agrees
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/bench_roofline_check.py agrees
            ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_roofline.json)
  set_tests_properties(cli_bench_roofline_agrees PROPERTIES FIXTURES_REQUIRED bench_roofline_json
    PASS_REGULAR_EXPRESSION "6 rows \\(ifa, kvcache, li, pfa, sfa\\) carry their roofline"
    TIMEOUT 60 LABELS cli)
  add_test(NAME cli_bench_report_roofline
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/report.py
            ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_roofline.json)
  set_tests_properties(cli_bench_report_roofline PROPERTIES FIXTURES_REQUIRED bench_roofline_json
    PASS_REGULAR_EXPRESSION "- IFA fp16 KV, G=4, >= 4k tokens: [0-9.]+ - [0-9.]+ \\(median [0-9.]+, n=1\\) of the roofline \\([a-z0-9/]+-bound\\).*\\| `ifa:b2,s1024,n8,kvn2,d64,kv=int8,paged=32` \\| [0-9.]+ \\| [0-9.]+ \\| [0-9.]+ \\| 7.94 \\| [a-z0-9/]+ \\| [0-9.]+ \\| passed \\|.*Indexer and prefill.*`pfa:q128,n4,kvn2,d64` \\| [^\n]*\\| passed \\|.*KV cache writes"
    TIMEOUT 60 LABELS cli)
  # A run recorded before the roofline (the 2026-12-05 AMX sweep): report.py derives each row's
  # roofline from its GFLOP/s, bytes and peak_fraction, and says so.
  add_test(NAME cli_bench_report_derived_roofline
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/report.py
            ${PROJECT_SOURCE_DIR}/bench/runs/2026-12-05-amx/sweep-amx-2t.json)
  set_tests_properties(cli_bench_report_derived_roofline PROPERTIES
    PASS_REGULAR_EXPRESSION "rows recorded without their roofline: derived.*- IFA bf16 KV, G=4, >= 4k tokens: [0-9.]+ - [0-9.]+ \\(median [0-9.]+, n=12\\) of the roofline \\(memory-bound\\).*\\| `sfa:b4,topk2048,s8192,n128,blk1,paged=64,kv=bf16` \\| 4.321 \\| 528 \\| 1.12 \\| 2.4 \\| 0.08 \\| 216 \\| compute \\| 1.12 \\|"
    TIMEOUT 60 LABELS cli)
  # The C API path (kvflash bench --capi): aclnnIncreFlashAttentionV4 with a stream, alternated
  # with the C++ call, per ifa row (paged, contiguous, int8); _npu_paged_attention's call has no
  # aclnn form and says so; the JSON's fields and report.py's column and headline.
  add_test(NAME cli_bench_capi
    COMMAND kvflash_cli bench --capi ifa:b2,s64,n4,kvn2,d64,kv=fp16,paged=32
            ifa:b2,s64,n4,kvn2,d64,kv=bf16,paged=0 ifa:b1,s64,n4,kvn2,d64,kv=int8,paged=32,layout=bnsd
            ifa:b2,s300,n8,kvn2,d64,kv=fp16,paged=32,layout=atb --iters 2 --no-bandwidth
            --json ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_capi.json)
  set_tests_properties(cli_bench_capi PROPERTIES FIXTURES_SETUP bench_capi_json
    PASS_REGULAR_EXPRESSION "C API \\+ stream \\(GetWorkspaceSize, aclrtMalloc, launch, synchronize\\): median [0-9.]+ ms/call \\(p10-p90 [0-9.]+-[0-9.]+\\); C API / C\\+\\+ [0-9.]+.*C API path: not timed: _npu_paged_attention's call \\(blocks_may_repeat\\) has no aclnn form.*all problems ran and passed"
    FAIL_REGULAR_EXPRESSION "FAILED|C API call failed" TIMEOUT 120 LABELS cli)
  add_test(NAME cli_bench_capi_json
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/scripts/bench_roofline_check.py capi
            ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_capi.json)
  set_tests_properties(cli_bench_capi_json PROPERTIES FIXTURES_REQUIRED bench_capi_json
    PASS_REGULAR_EXPRESSION "3 rows timed through the C API" TIMEOUT 60 LABELS cli)
  add_test(NAME cli_bench_report_capi
    COMMAND ${Python3_EXECUTABLE} ${PROJECT_SOURCE_DIR}/bench/report.py
            ${CMAKE_CURRENT_BINARY_DIR}/cli_bench_capi.json)
  set_tests_properties(cli_bench_report_capi PROPERTIES FIXTURES_REQUIRED bench_capi_json
    PASS_REGULAR_EXPRESSION "- C API path / C\\+\\+ API, per ifa row: [0-9.]+ - [0-9.]+ \\(median [0-9.]+, n=3\\).*\\| of roofline \\| C API / C\\+\\+ \\| check \\|.*`ifa:b2,s300,n8,kvn2,d64,kv=fp16,paged=32,layout=atb` \\|[^\n]*\\| n/a \\| passed \\|"
    TIMEOUT 60 LABELS cli)
endif()
add_test(NAME cli_bench_bad_problem COMMAND kvflash_cli bench ifa:b2,q5 --no-bandwidth)
set_tests_properties(cli_bench_bad_problem PROPERTIES WILL_FAIL TRUE LABELS cli)
add_test(NAME cli_bench_bad_problem_message COMMAND kvflash_cli bench ifa:b2,q5 --no-bandwidth)
set_tests_properties(cli_bench_bad_problem_message PROPERTIES
  PASS_REGULAR_EXPRESSION "problem 'ifa:b2,q5': q5: unknown key" LABELS cli)
# KVFLASH_VERBOSE=dispatch names the entry a plan ran and why the ones before it were skipped.
add_test(NAME cli_verbose_dispatch
  COMMAND kvflash_cli ifa --lengths 200 --heads 8 --kv-heads 2 --dim 64 --block-size 0 --iters 1
          --no-bandwidth)
set_tests_properties(cli_verbose_dispatch PROPERTIES
  ENVIRONMENT "KVFLASH_VERBOSE=dispatch;KVFLASH_MAX_ISA=scalar"
  PASS_REGULAR_EXPRESSION "kvflash dispatch: incre_flash_attention \\(B=1 N=8 KV_N=2 D=64 [^)]*\\): cpu-amx skipped \\([^\n]*\\), cpu-avx512bf16 skipped \\([^)]+\\), cpu-avx512 skipped \\([^)]+\\), cpu-avx2 skipped \\([^)]+\\), ran cpu-scalar"
  TIMEOUT 300 LABELS cli)
