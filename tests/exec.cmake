# exec: layers, pipeline oracles, faults, and the commands end to end.
if(TARGET pipescope_exec)
  add_executable(exec_tests exec_layers_test.cpp exec_pipeline_test.cpp exec_fault_test.cpp exec_compare_test.cpp
    exec_replica_test.cpp exec_schedule_test.cpp)
  target_link_libraries(exec_tests PRIVATE pipescope_exec pipescope_planner pipescope_sim GTest::gtest_main)
  gtest_discover_tests(exec_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120)

  # the asynchronous schedules: weight versions, 2BW's rule, exact memory
  add_executable(exec_async_tests exec_async_test.cpp)
  target_link_libraries(exec_async_tests PRIVATE pipescope_exec pipescope_planner pipescope_sim GTest::gtest_main)
  target_compile_definitions(exec_async_tests PRIVATE
    PIPESCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    PIPESCOPE_BINARY="$<TARGET_FILE:pipescope>")
  if(PIPESCOPE_EXEC_MPI)
    target_compile_definitions(exec_async_tests PRIVATE PIPESCOPE_MPIEXEC="${PIPESCOPE_MPIEXEC}")
  endif()
  add_dependencies(exec_async_tests pipescope)
  gtest_discover_tests(exec_async_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300 RUN_SERIAL TRUE)

  # post-validation and blocking p2p on the executor; model time against the simulator
  add_executable(exec_post_validation_tests exec_post_validation_test.cpp)
  target_link_libraries(exec_post_validation_tests PRIVATE pipescope_exec pipescope_planner pipescope_sim GTest::gtest_main)
  gtest_discover_tests(exec_post_validation_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)

  add_executable(exec_cli_tests exec_cli_test.cpp)
  target_link_libraries(exec_cli_tests PRIVATE GTest::gtest_main)
  file(MAKE_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR}/exec_tmp)
  target_compile_definitions(exec_cli_tests PRIVATE
    PIPESCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
    PIPESCOPE_BINARY="$<TARGET_FILE:pipescope>"
    PIPESCOPE_TEST_TMP="${CMAKE_CURRENT_BINARY_DIR}/exec_tmp")
  if(PIPESCOPE_EXEC_MPI)
    target_compile_definitions(exec_cli_tests PRIVATE PIPESCOPE_MPIEXEC="${PIPESCOPE_MPIEXEC}")
  endif()
  add_dependencies(exec_cli_tests pipescope)
  gtest_discover_tests(exec_cli_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 120 RUN_SERIAL TRUE)
endif()
