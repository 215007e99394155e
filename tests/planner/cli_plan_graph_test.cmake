# `pipescope plan -o` on a graph profile whose best stages are not contiguous in its listed
# order: the profile in the new order is written beside the plan (PLAN.profile.json), the
# plan points at it, and `simulate --plan` reproduces the planned step (ResNet-18 on 8
# devices of 80 MB: zb-auto at the byte budget the memory leaves, K = 8, M = 256, 41.084 ms
# (41.181 at the count N = 8), its order searched on the
# reordered profile's costs by plan and by simulate alike; docs/planner.md).
# Run by ctest: cmake -DPIPESCOPE=... -DSOURCE=... -DWORK=... -P cli_plan_graph_test.cmake
file(REMOVE_RECURSE ${WORK})
file(MAKE_DIRECTORY ${WORK})
set(P ${SOURCE}/profiles/pipedream/resnet18.json)
file(WRITE ${WORK}/hw.json [=[{"format": "pipescope.hardware", "version": 1, "name": "8 devices of 80 MB",
 "devices": 8, "memory_bytes": 80000000, "link": {"bandwidth_gb_per_s": 450.0, "latency_us": 5.0}}
]=])

function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "expected exit 0, got ${rc}: ${ARGN}\n${out}\n${err}")
  endif()
  set(LAST_OUT "${out}" PARENT_SCOPE)
endfunction()

run(${PIPESCOPE} plan --profile ${P} --hardware ${WORK}/hw.json -D 8 -N 256 -o ${WORK}/best.json)
if(NOT EXISTS ${WORK}/best.profile.json)
  message(FATAL_ERROR "plan -o wrote no reordered profile beside the plan:\n${LAST_OUT}")
endif()
file(READ ${WORK}/best.json plan)
if(NOT plan MATCHES "\"profile\": \"best.profile.json\"")
  message(FATAL_ERROR "the plan does not refer to the reordered profile:\n${plan}")
endif()
run(${PIPESCOPE} simulate --plan ${WORK}/best.json --hardware ${WORK}/hw.json)
if(NOT LAST_OUT MATCHES "step time 41.084 ms")
  message(FATAL_ERROR "simulate --plan does not reproduce the planned 41.084 ms:\n${LAST_OUT}")
endif()
