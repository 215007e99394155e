# LLM-scale tests (included by tests/CMakeLists.txt): layouts, Megatron-LM's memory, time.
pipescope_test(llm_test llm_layout_test.cpp)
# Time (llm-time): the GPU file's GEMM curve, collectives, layer and step time against
# closed forms, and Korthikanti et al. (2022) Tables 4 and 5.
pipescope_test(llm_time_test llm_gpu_model_test.cpp llm_time_test.cpp)
pipescope_test(llm_korthikanti_test llm_korthikanti_test.cpp)
target_link_libraries(llm_korthikanti_test PRIVATE pipescope_korthikanti)
pipescope_test(cli_llm_time_test cli_llm_time_test.cpp)
target_link_libraries(cli_llm_time_test PRIVATE pipescope_korthikanti)
add_dependencies(cli_llm_time_test pipescope)
