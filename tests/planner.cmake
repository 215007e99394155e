# Planner tests (included by tests/CMakeLists.txt). The shared folder (real PipeDream
# profiles) sits beside the repository (../shared) or beside the worktrees (../../shared).
set(PIPESCOPE_SHARED_DIR "")
foreach(candidate ${PROJECT_SOURCE_DIR}/../shared ${PROJECT_SOURCE_DIR}/../../shared)
  if(NOT PIPESCOPE_SHARED_DIR AND EXISTS ${candidate}/profiles)
    get_filename_component(PIPESCOPE_SHARED_DIR ${candidate} ABSOLUTE)
  endif()
endforeach()

pipescope_test(planner_test planner_partition_test.cpp planner_graph_test.cpp planner_search_test.cpp
               planner_gpipe_table_test.cpp)
target_link_libraries(planner_test PRIVATE pipescope_experiments)
target_compile_definitions(planner_test PRIVATE PIPESCOPE_SHARED_DIR="${PIPESCOPE_SHARED_DIR}")

add_test(NAME cli_plan_and_sweep
         COMMAND ${CMAKE_COMMAND} -DPIPESCOPE=$<TARGET_FILE:pipescope> -DSOURCE=${PROJECT_SOURCE_DIR}
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/cli_plan -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/cli_plan_test.cmake)
