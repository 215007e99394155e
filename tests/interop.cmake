# Interop tests (included by tests/CMakeLists.txt): Hugging Face configs in, Megatron-LM /
# torch / DeepSpeed out, and the `profile synth --hf-config` -> `plan` -> `export` chain.
pipescope_test(interop_test interop_hf_test.cpp interop_export_test.cpp interop_cli_test.cpp)
add_dependencies(interop_test pipescope)
add_test(NAME Docs.InteropExampleIsCurrent
         COMMAND ${CMAKE_COMMAND} -DPIPESCOPE=$<TARGET_FILE:pipescope> -DSOURCE=${PROJECT_SOURCE_DIR}
                 -DWORK=${CMAKE_CURRENT_BINARY_DIR}/interop_docs -P ${CMAKE_CURRENT_SOURCE_DIR}/scripts/interop_docs_test.cmake)
