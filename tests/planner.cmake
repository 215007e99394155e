# Planner tests (included by tests/CMakeLists.txt). PipeDream's real profiles are
# shipped in profiles/pipedream/, so no test reads outside the repository.

pipescope_test(planner_test planner_partition_test.cpp planner_graph_test.cpp planner_search_test.cpp
               planner_gpipe_table_test.cpp)
target_link_libraries(planner_test PRIVATE pipescope_experiments)

add_test(NAME cli_plan_and_sweep
         COMMAND ${CMAKE_COMMAND} -DPIPESCOPE=$<TARGET_FILE:pipescope> -DSOURCE=${PROJECT_SOURCE_DIR}
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/cli_plan -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/cli_plan_test.cmake)

# The downset partitioner: brute-force property test and PipeDream's published profiles.
pipescope_test(planner_dag_test planner_dag_test.cpp planner_pipedream_test.cpp planner_placement_test.cpp planner_replication_test.cpp planner_interleaved_memory_test.cpp
                 planner_partition_path_test.cpp)
add_dependencies(planner_dag_test pipescope)  # planner_partition_path_test runs `pipescope simulate`
add_test(NAME cli_plan_graph_reorders_layers
         COMMAND ${CMAKE_COMMAND} -DPIPESCOPE=$<TARGET_FILE:pipescope> -DSOURCE=${PROJECT_SOURCE_DIR}
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/cli_plan_graph -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/cli_plan_graph_test.cmake)

# balance_devices: evening the devices' sums under several stages per device.
pipescope_test(planner_balance_test planner_balance_test.cpp)
