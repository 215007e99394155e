# Schedule files (core/schedule_io.h): JSON and PyTorch CSV round trips, PyTorch's
# test artifacts in tests/data/schedules/, bad inputs. Included by tests/CMakeLists.txt.
pipescope_test(schedule_io_test schedule_io_test.cpp)
