# LLM-scale tests (included by tests/CMakeLists.txt): layouts, Megatron-LM's memory, time.
pipescope_test(llm_test llm_layout_test.cpp)
# layout validation, memory per GPU, the Megatron cross-check (branch llm-mem)
pipescope_test(llm_memory_test llm_layout_check_test.cpp llm_memory_test.cpp llm_megatron_test.cpp
  llm_plan_layout_test.cpp)
pipescope_test(llm_cli_test llm_cli_test.cpp)  # pipescope llm-memory (branch llm-mem)
add_dependencies(llm_cli_test pipescope)
