# The zero-bubble family and DualPipeV: zb-h2, zb-v, dualpipev, zb-auto against closed forms.
pipescope_test(schedule_zero_bubble_test schedule_zero_bubble_test.cpp)
target_link_libraries(schedule_zero_bubble_test PRIVATE pipescope_schedule_table)
pipescope_test(cli_zero_bubble_test cli_zero_bubble_test.cpp)
add_dependencies(cli_zero_bubble_test pipescope)
# zb-auto in plan (one order for plan and simulate --plan, pruning) and its cap bound.
pipescope_test(zero_bubble_plan_test zero_bubble_plan_test.cpp)
target_link_libraries(zero_bubble_plan_test PRIVATE pipescope_schedule_table)
# DualPipeV's overlapped F&B pairs: the profile's fb_overlap_ms and the simulator's charge.
pipescope_test(dualpipev_overlap_test dualpipev_overlap_test.cpp)
# plan -o then simulate --plan through the command, zb-auto winning.
pipescope_test(cli_zero_bubble_plan_test cli_zero_bubble_plan_test.cpp)
add_dependencies(cli_zero_bubble_plan_test pipescope)
# zb-auto on the zero-bubble paper's settings against its Table 5 (experiments/zero_bubble_paper_data.h).
pipescope_test(zero_bubble_paper_test zero_bubble_paper_test.cpp)
target_link_libraries(zero_bubble_paper_test PRIVATE pipescope_zero_bubble_paper)
# The controllable-memory V-shapes (v-min, v-half, v-zb) and PyTorch's looped-bfs and
# interleaved-zb: validity, peaks, bubbles against their forms.
pipescope_test(schedule_v_shape_test schedule_v_shape_test.cpp)
# plan's explanation when memory binds: the V-shapes' peak and bubble against 1F1B.
pipescope_test(planner_memory_tradeoff_test planner_memory_tradeoff_test.cpp)
