#!/usr/bin/env bash
# Planted wrong kernels are rejected; a crash, a hang, an out-of-memory request and an
# impossible launch give CRASH, TIMEOUT, OOM and LAUNCH_ERROR, and the next evaluation
# still succeeds.
source "$(dirname "$0")/lib.sh" "$1"
C=tests/gpu/candidates
expect WRONG examples/vector_add $C/vector_add_off_by_one.cu --budget-ms 10
expect WRONG examples/vector_add $C/vector_add_half_output.cu --budget-ms 10
expect SHAPE_SPECIFIC examples/softmax $C/softmax_wrong_second_size.cu --budget-ms 10
expect 'RACE|WRONG' examples/reduce_sum tests/adversarial/race.cu --budget-ms 10
expect CRASH examples/vector_add $C/vector_add_crash.cu --budget-ms 10
expect OK examples/vector_add $C/vector_add_correct_nofm.cu --budget-ms 10
expect TIMEOUT examples/vector_add $C/vector_add_hang.cu --timeout 3 --budget-ms 10
expect OK examples/vector_add $C/vector_add_correct_nofm.cu --budget-ms 10
expect OOM examples/vector_add $C/vector_add_oom.cu --budget-ms 10
expect LAUNCH_ERROR examples/vector_add $C/vector_add_too_much_smem.cu --budget-ms 10
expect OK examples/vector_add $C/vector_add_correct_nofm.cu --budget-ms 10
# every dtype: the reference alone, then wrong variants
expect OK tests/gpu/problems/dtypes "" --budget-ms 10
expect OK tests/gpu/problems/dtypes tests/gpu/problems/dtypes/reference.cu --budget-ms 10
expect WRONG tests/gpu/problems/dtypes $C/dtypes_i64_wrong.cu --budget-ms 10
expect WRONG tests/gpu/problems/dtypes $C/dtypes_inout_wrong.cu --budget-ms 10
finish
