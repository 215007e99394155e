# docs/interop.md's worked examples are real output: run its three commands (profile synth
# -> plan -> export --to megatron) in a scratch folder and find the plan's table and the
# whole export, verbatim, in docs/interop.md; likewise the torchtitan section's plan -> export.
# Run by ctest: cmake -DPIPESCOPE=... -DSOURCE=... -DWORK=... -P interop_docs_test.cmake
file(READ ${SOURCE}/docs/interop.md doc)
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})

function(run_step what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err WORKING_DIRECTORY ${WORK})
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${what}: exit ${rc}\n${out}\n${err}")
  endif()
  set(step_out "${out}" PARENT_SCOPE)
endfunction()

function(expect_in_doc what text)
  string(LENGTH "${text}" n)
  if(n LESS 100)
    message(FATAL_ERROR "${what}: too little output to compare:\n${text}")
  endif()
  string(FIND "${doc}" "${text}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "${what}: docs/interop.md does not show the current output; it is now:\n${text}")
  endif()
endfunction()

run_step("profile synth" ${PIPESCOPE} profile synth --hf-config ${SOURCE}/profiles/hf/llama-3-70b.json --gpu h100-sxm
         --seq 4096 --tensor-parallel 8 --gpus 64 --hardware-output h100x64-tp8.json -o llama-3-70b-h100-tp8.json)
run_step("plan" ${PIPESCOPE} plan --profile llama-3-70b-h100-tp8.json --hardware h100x64-tp8.json --devices 8
         --batch 512 --schedules 1f1b,interleaved --top 3 -o plan.json)
string(FIND "${step_out}" "\nWhy" cut)
string(SUBSTRING "${step_out}" 0 ${cut} table)
expect_in_doc("plan (table)" "${table}")
run_step("export" ${PIPESCOPE} export --plan plan.json --to megatron)
expect_in_doc("export --to megatron" "${step_out}")
# A job planned from its model: the whole launch-ready export, header (the prediction) included.
run_step("plan --hf-config" ${PIPESCOPE} plan --gpu h100-sxm --hf-config ${SOURCE}/profiles/hf/llama-3-70b.json
         --seq-length 4096 --gpus 64 --global-batch-size 512 --top 1 --out job.json)
run_step("export of the job" ${PIPESCOPE} export --plan job.json --to megatron)
expect_in_doc("export --to megatron of a job" "${step_out}")

# The torchtitan section's launch command: a pinned Llama-3-8B plan and its export, verbatim.
run_step("plan (torchtitan)" ${PIPESCOPE} plan --hf-config ${SOURCE}/profiles/hf/llama-3-8b.json --gpu h100-sxm
         --seq-length 4096 --framework torch --gpus 16 --global-batch-size 128 --pipeline-model-parallel-size 4
         --virtual-pipeline-size 2 --schedule zb-v --tensor-model-parallel-size 1 --context-parallel-size 2
         --micro-batch-size 2 --top 1 -o llama-3-8b-titan.json)
run_step("export --to torchtitan" ${PIPESCOPE} export --plan llama-3-8b-titan.json --to torchtitan)
expect_in_doc("export --to torchtitan" "${step_out}")
