# The README's worked examples match what the binary prints today.
add_test(NAME Docs.ReadmeExamplesAreCurrent
         COMMAND ${CMAKE_COMMAND} -DPIPESCOPE=$<TARGET_FILE:pipescope> -DSOURCE=${PROJECT_SOURCE_DIR}
                 -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/readme_examples_test.cmake)
# Every relative link in the docs names a file that exists.
add_test(NAME Docs.RelativeLinksResolve
         COMMAND ${CMAKE_COMMAND} -DSOURCE=${PROJECT_SOURCE_DIR} -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/docs_links_test.cmake)
