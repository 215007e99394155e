# Installs the build to a fresh prefix outside the source tree and runs the installed
# binary there. Expectations: the binaries land in bin/ and the data in share/pipescope/;
# `simulate` on the installed bundled profile prints the README's numbers (417.470 ms:
# the same program on the same file); `profile synth --gpu h200` reads the installed
# profiles/gpus/h200.json, not the source tree's: the test renames the GPU in the
# installed copy only and finds the new name in the profile it writes.
# Run by ctest: cmake -DPIPESCOPE_BUILD=... -DSOURCE=... -DGUI=0|1 -P install_test.cmake
if(DEFINED ENV{TMPDIR} AND IS_DIRECTORY "$ENV{TMPDIR}")
  set(tmp "$ENV{TMPDIR}")
else()
  set(tmp /tmp)
endif()
string(RANDOM LENGTH 8 tag)
set(root ${tmp}/pipescope-install-${tag})
set(prefix ${root}/prefix)
set(work ${root}/work)
string(FIND "${root}" "${SOURCE}/" inside)
if(inside EQUAL 0)
  message(FATAL_ERROR "the temporary folder ${root} is inside the source tree; set TMPDIR elsewhere")
endif()
file(MAKE_DIRECTORY ${work})

function(run what)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc OUTPUT_VARIABLE out ERROR_VARIABLE err WORKING_DIRECTORY ${work})
  if(NOT rc EQUAL 0)
    file(REMOVE_RECURSE ${root})
    message(FATAL_ERROR "${what}: exit ${rc}\n${out}\n${err}")
  endif()
  set(run_out "${out}" PARENT_SCOPE)
endfunction()

function(expect what haystack needle)
  string(FIND "${haystack}" "${needle}" at)
  if(at EQUAL -1)
    file(REMOVE_RECURSE ${root})
    message(FATAL_ERROR "${what}: expected \"${needle}\" in:\n${haystack}")
  endif()
endfunction()

run("cmake --install" ${CMAKE_COMMAND} --install ${PIPESCOPE_BUILD} --prefix ${prefix})
set(share ${prefix}/share/pipescope)
set(expected bin/pipescope share/pipescope/profiles/gpt-1.3b-h200.json share/pipescope/profiles/h200-8x-nvlink.json
    share/pipescope/profiles/gpus/h200.json share/pipescope/profiles/hf/llama-3-8b.json
    share/pipescope/profiles/pipedream/resnet50.json share/pipescope/models/gpt-tiny.json
    share/pipescope/schemas/profile.schema.json)
if(GUI)
  list(APPEND expected bin/pipescope-gui)
endif()
foreach(f IN LISTS expected)
  if(NOT EXISTS ${prefix}/${f})
    file(REMOVE_RECURSE ${root})
    message(FATAL_ERROR "cmake --install did not write ${f} under the prefix")
  endif()
endforeach()

run("installed simulate" ${prefix}/bin/pipescope simulate --profile ${share}/profiles/gpt-1.3b-h200.json
    --hardware ${share}/profiles/h200-8x-nvlink.json --stages 4 --microbatches 16 --microbatch-size 2 --schedule 1f1b)
expect("installed simulate" "${run_out}" "step time 417.470 ms")

file(READ ${share}/profiles/gpus/h200.json gpu)
string(REPLACE "NVIDIA H200 SXM 141GB" "Installed H200" gpu "${gpu}")
file(WRITE ${share}/profiles/gpus/h200.json "${gpu}")
run("installed profile synth" ${CMAKE_COMMAND} -E env --unset=PIPESCOPE_GPU_DIR ${prefix}/bin/pipescope profile synth
    --hf-config ${share}/profiles/hf/llama-3-8b.json --gpu h200 -o llama.json)
file(READ ${work}/llama.json profile)
expect("profile synth with the installed GPU file" "${profile}" "Installed H200")

file(REMOVE_RECURSE ${root})
message(STATUS "installed under ${prefix}: simulate and profile synth ran on the installed data")
