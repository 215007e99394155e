# `cmake --install` to a temporary prefix, then the installed pipescope run from outside
# the source tree on the data installed beside it (tests/scripts/install_test.cmake).
add_test(NAME Install.InstalledBinaryRunsOnItsOwnData
         COMMAND ${CMAKE_COMMAND} -DPIPESCOPE_BUILD=${CMAKE_BINARY_DIR} -DSOURCE=${PROJECT_SOURCE_DIR}
                 -DGUI=$<TARGET_EXISTS:pipescope-gui> -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/install_test.cmake)
