# zb-auto's search: K = 32, M = 256 under 1 s on one core.
add_executable(bench_zero_bubble bench_zero_bubble.cpp)
target_link_libraries(bench_zero_bubble PRIVATE pipescope_schedule_table benchmark::benchmark)
