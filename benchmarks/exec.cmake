# bench_exec: measured vs predicted samples/s per schedule, and the executor's overhead.
if(TARGET pipescope_exec)
  add_executable(bench_exec bench_exec.cpp)
  target_link_libraries(bench_exec PRIVATE pipescope_exec pipescope_planner pipescope_sim pipescope_core CLI11::CLI11)
endif()
