# Reliability: absurd inputs and limits, kept fuzz inputs, exit codes and output files
# of the real binary, determinism (docs/reliability.md). `ctest -L reliability`.
add_executable(reliability_tests
  reliability_limits_test.cpp
  reliability_regressions_test.cpp
  reliability_cli_test.cpp
  reliability_determinism_test.cpp)
target_link_libraries(reliability_tests PRIVATE pipescope_planner pipescope_sim pipescope_interop pipescope_core GTest::gtest_main)
target_compile_definitions(reliability_tests PRIVATE
  PIPESCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  PIPESCOPE_BINARY="$<TARGET_FILE:pipescope>")
add_dependencies(reliability_tests pipescope)
gtest_discover_tests(reliability_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS reliability TIMEOUT 120)
