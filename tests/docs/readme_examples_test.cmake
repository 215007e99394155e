# The README's worked examples are real output: run the documented commands and find
# their output, verbatim, in README.md (simulations are deterministic, so any change to
# a prediction must come with the README's new numbers).
# Run by ctest: cmake -DPIPESCOPE=... -DSOURCE=... -P readme_examples_test.cmake
file(READ ${SOURCE}/README.md readme)
set(P ${SOURCE}/profiles)

function(expect_in_readme what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err
                  WORKING_DIRECTORY ${SOURCE})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: exit ${rc}\n${out}\n${err}")
  endif()
  # Compare the first 7 lines, which carry the numbers (README may cut what follows).
  set(head "")
  set(rest "${out}")
  foreach(i RANGE 1 7)
    string(FIND "${rest}" "\n" eol)
    if(eol EQUAL -1)
      break()
    endif()
    math(EXPR next "${eol} + 1")
    string(SUBSTRING "${rest}" 0 ${next} line)
    string(SUBSTRING "${rest}" ${next} -1 rest)
    string(APPEND head "${line}")
  endforeach()
  string(LENGTH "${head}" n)
  if(n LESS 100)
    message(FATAL_ERROR "${what}: too little output to compare:\n${out}")
  endif()
  string(FIND "${readme}" "${head}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: README.md does not show the current output; it is now:\n${head}")
  endif()
endfunction()

expect_in_readme("worked example (simulate)"
  ${PIPESCOPE} simulate --profile ${P}/gpt-1.3b-h200.json --hardware ${P}/h200-8x-nvlink.json
  --stages 4 --microbatches 16 --microbatch-size 2 --schedule 1f1b)
expect_in_readme("planning example (plan)"
  ${PIPESCOPE} plan --profile ${P}/gpt-13b-h200.json --hardware ${P}/h200-8x-nvlink.json
  --devices 8 --batch 64 --top 3)
expect_in_readme("LLM memory example (llm-memory)"
  ${PIPESCOPE} llm-memory --hf-config ${P}/hf/llama-3-70b.json --seq-length 8192 --gpus 64
  --tensor-model-parallel-size 8 --sequence-parallel --pipeline-model-parallel-size 8
  --use-distributed-optimizer --recompute-granularity selective --global-batch-size 64)
expect_in_readme("LLM layout search example (plan with a model)"
  ${PIPESCOPE} plan --gpu h100-sxm --hf-config ${P}/hf/llama-3-70b.json --seq-length 8192 --gpus 64
  --global-batch-size 128 --top 3)
# One job, one answer: plan --out with a model writes a version 3 plan (into a scratch folder
# here), and simulate --plan of it alone is the README's output.
set(job_dir ${CMAKE_CURRENT_BINARY_DIR}/readme_one_job)
file(MAKE_DIRECTORY ${job_dir})
execute_process(COMMAND ${PIPESCOPE} plan --gpu h100-sxm --hf-config ${P}/hf/llama-3-70b.json --seq-length 4096
                        --gpus 64 --global-batch-size 512 --top 3 --out ${job_dir}/70b.json
                RESULT_VARIABLE rc OUTPUT_QUIET ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "one-job example (plan --out): exit ${rc}\n${err}")
endif()
expect_in_readme("one-job example (simulate --plan)" ${PIPESCOPE} simulate --plan ${job_dir}/70b.json)
