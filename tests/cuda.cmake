# CUDA backend. cuda_api_tests run everywhere CUDA is built (spec parsing,
# device query without a GPU); cuda_backend_tests carry the label `gpu` and skip
# themselves, naming the reason, on a machine without one.
if(PIPESCOPE_WITH_CUDA AND TARGET pipescope_exec)
  add_executable(cuda_api_tests cuda_api_test.cpp)
  target_link_libraries(cuda_api_tests PRIVATE pipescope_exec GTest::gtest_main)
  target_compile_definitions(cuda_api_tests PRIVATE PIPESCOPE_SOURCE_DIR="${PROJECT_SOURCE_DIR}"
                                                    PIPESCOPE_BINARY="$<TARGET_FILE:pipescope>")
  add_dependencies(cuda_api_tests pipescope)
  gtest_discover_tests(cuda_api_tests DISCOVERY_TIMEOUT 60)

  add_executable(cuda_backend_tests cuda_backend_test.cpp cuda_pipeline_test.cpp)
  target_link_libraries(cuda_backend_tests PRIVATE pipescope_exec pipescope_planner pipescope_sim GTest::gtest_main)
  gtest_discover_tests(cuda_backend_tests DISCOVERY_TIMEOUT 60 PROPERTIES LABELS gpu TIMEOUT 300)
endif()
