# Planner benchmarks (included by benchmarks/CMakeLists.txt).
add_executable(bench_planner bench_planner.cpp)
target_link_libraries(bench_planner PRIVATE pipescope_planner pipescope_interop benchmark::benchmark)
target_link_libraries(bench_planner PRIVATE pipescope_source_paths)
