# Asynchronous schedules: pipedream and 2bw against closed forms.
pipescope_test(schedule_async_test schedule_async_test.cpp)
add_dependencies(schedule_async_test pipescope)
