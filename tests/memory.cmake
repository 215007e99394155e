# exact memory (issue 14): predicted peak = tracked peak, transients and all.
if(TARGET pipescope_exec)
  add_executable(exec_memory_tests exec_memory_test.cpp)
  target_link_libraries(exec_memory_tests PRIVATE pipescope_exec pipescope_planner pipescope_sim GTest::gtest_main)
  gtest_discover_tests(exec_memory_tests DISCOVERY_TIMEOUT 60 PROPERTIES TIMEOUT 300)
endif()
pipescope_test(memory_rules_test memory_rules_test.cpp)
pipescope_test(memory_megatron_test memory_megatron_test.cpp)
add_dependencies(memory_megatron_test pipescope)
