# The LLM-scale layout search on Llama-3-405B over 16,384 H100s (included by benchmarks/CMakeLists.txt).
add_executable(bench_llm_plan bench_llm_plan.cpp)
target_link_libraries(bench_llm_plan PRIVATE pipescope_llm benchmark::benchmark)
target_link_libraries(bench_llm_plan PRIVATE pipescope_source_paths)
