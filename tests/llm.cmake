# LLM-scale tests (included by tests/CMakeLists.txt): layouts, Megatron-LM's memory, time.
pipescope_test(llm_test llm_layout_test.cpp)
