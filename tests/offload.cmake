# Activation offload to host memory: the hardware file's host_link, the plan property and
# its flags, the simulator's host tracks and the selective rule (core/offload.h, sim/offload.h).
pipescope_test(offload_test offload_format_test.cpp offload_sim_test.cpp offload_cli_test.cpp)
add_dependencies(offload_test pipescope)
