# Step-time distributions under jitter (sim/distribution.h) and the simulator's per-op
# duration seam. Included by tests/CMakeLists.txt.
pipescope_test(sim_distribution_test sim_distribution_test.cpp)
pipescope_test(planner_objective_test planner_objective_test.cpp)
pipescope_test(profile_spread_test profile_spread_test.cpp)
pipescope_test(cli_distribution_test cli_distribution_test.cpp)
add_dependencies(cli_distribution_test pipescope)
