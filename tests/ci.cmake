# pipescope in CI: one JSON object per --json, gates and their exit code 4,
# JUnit and Markdown reports, and the small contract fixes, through the real binary.
add_executable(ci_tests ci_json_test.cpp ci_gates_test.cpp ci_contract_test.cpp)
target_link_libraries(ci_tests PRIVATE pipescope_core GTest::gtest_main)
target_include_directories(ci_tests PRIVATE ${PROJECT_SOURCE_DIR})
target_compile_definitions(ci_tests PRIVATE
  PIPESCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
  PIPESCOPE_BINARY="$<TARGET_FILE:pipescope>")
add_dependencies(ci_tests pipescope)
gtest_discover_tests(ci_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS ci TIMEOUT 300)
