# Read by ctest (not cmake) after every test is defined: places the tests on the GPUs when
# `KOPT_TEST_PLACE=1 scripts/test.sh` found some (KOPT_TEST_GPUS = their count) and gave
# ctest the resource file it wrote. Without it (plain `ctest`, no GPU, an older ctest)
# nothing changes: the tests that time or profile run alone (RUN_SERIAL), as configured.
#
# Three kinds of tests:
#  - alone on a GPU: they time or profile, so no other GPU work may share their GPU;
#  - CPU only: they run PyTorch on the CPU and kopt's scripted or recorded evaluators; the
#    GPU is hidden from them (CUDA_VISIBLE_DEVICES empty), so they cannot disturb a GPU
#    that is timed, and run beside the tests that run alone;
#  - the rest may use a GPU, side by side with each other.
# One GPU: the tests alone take all of its 8 slots, the rest one slot each; the CPU tests
# none. Several GPUs: the tests alone are spread over GPUs 1..N-1, one at a time on each
# (tests/gpu/lib.sh sets CUDA_VISIBLE_DEVICES from ctest's choice), the rest stay on GPU 0.
# The tests of kopt_serial stay RUN_SERIAL.
set(kopt_alone gpu_examples gpu_planted gpu_profile gpu_profile_program gpu_kb_adversarial
    gpu_serve gpu_adversarial)
# RUN_SERIAL kept (every GPU, or a test program that does not read ctest's choice):
set(kopt_serial gpu_scale unit.test_cupti_gpu unit.test_run_gpu)
set(kopt_cpu cli.test_kb_sandbox cli.test_kb_baseline cli.test_kb_stream
    cli.test_serve_session cli.test_served cli.test_profile_program unit.test_eval_session_torch
    cli.test_optimize cli.test_optimize_gpus cli.test_tune_recorded cli.test_kb_replay
    cli.test_bench_scripts cli.test_placement llm.test_llm_cli llm.test_llama_server
    unit.test_torch_timing unit.test_torch_zygote unit.test_file_cycles)
set(kopt_shared unit.test_agent unit.test_analyze unit.test_candidate unit.test_ceilings
    unit.test_compile unit.test_cupti_host unit.test_cupti_recorded unit.test_cute
    unit.test_eval_pool unit.test_eval_session_gpu unit.test_expr unit.test_kb unit.test_kb_bench
    unit.test_ktest unit.test_ktest.reports_failure unit.test_ktest.closing_line unit.test_llm
    unit.test_ncu
    unit.test_problem unit.test_profile_json unit.test_program unit.test_result_json
    unit.test_run unit.test_sandbox unit.test_sass unit.test_scale unit.test_search
    unit.test_search_spread unit.test_store unit.test_store_findings unit.test_torch_baseline
    unit.test_tune_cache unit.test_tune_driver unit.test_tune_space unit.test_tune_strategies
    unit.test_tune_templates unit.test_verify unit.test_worker_path unit.test_torch_compare
    cli.test_cli cli.test_serve cli.test_profile cli.test_tune cli.test_scale cli.test_kb
    cli.test_cute install.test_install report.test_report mcp.test_mcp mcp.test_mcp_optimize
    mcp.test_mcp_http mcp.test_mcp_gpu python.test_api wheel.test_wheel)
# (cli.test_placement checks that every test is in one of these lists)

set(kopt_gpus "$ENV{KOPT_TEST_GPUS}")
if(kopt_gpus MATCHES "^[0-9]+$" AND kopt_gpus GREATER 0)
  foreach(t ${kopt_cpu})
    set_tests_properties(${t} PROPERTIES ENVIRONMENT "CUDA_VISIBLE_DEVICES=")
  endforeach()
  # the tests alone start first, longest first (COST: 1000 + their seconds on the H100,
  # 2026-11-27, bench/results/2026-11-27-h100-suite-placed), while the CPU tests go on beside
  # them (a build carried without Testing/: no CTestCostData.txt to override these); the
  # tests that share the GPU would otherwise hold its slots and the tests alone run last
  foreach(tc gpu_kb_adversarial:1124 gpu_profile_program:1062 gpu_profile:1047
             gpu_adversarial:1034 gpu_planted:1033 gpu_examples:1032 gpu_serve:1011)
    string(REPLACE ":" ";" tc "${tc}")
    list(GET tc 0 t)
    list(GET tc 1 c)
    set_tests_properties(${t} PROPERTIES COST ${c})
  endforeach()
  if(kopt_gpus EQUAL 1)
    set_tests_properties(${kopt_alone} PROPERTIES RUN_SERIAL FALSE RESOURCE_GROUPS "gpus:8")
    set_tests_properties(${kopt_shared} PROPERTIES RESOURCE_GROUPS "gpus:1")
  else()
    set_tests_properties(${kopt_alone} PROPERTIES RUN_SERIAL FALSE RESOURCE_GROUPS "gpus:1")
  endif()
endif()
