# Checks that CI runs what it is meant to run (cmake -P script, run as the ctest `build_ci_selection`).
# ctest label filters are regular expressions: an unanchored `gpu` also matches `nogpu`, and an
# exclusion written that way silently drops tests from CI. This script reads the CI test preset's
# filter from CMakePresets.json (the one CI uses) and applies it to this build's tests:
#   - every test named in REQUIRED is selected (the README's no-GPU path runs in CI);
#   - no test labelled exactly `gpu` is selected (CI has no GPU);
#   - no label contains another one (so an anchored filter is the only safe kind, and a typo in
#     a filter cannot select a second label by accident).
# Usage: cmake -DPRESETS=CMakePresets.json -DPRESET=ci -DBINARY_DIR=build -DCTEST=ctest
#              -DREQUIRED="a;b" -P check_ci_selection.cmake
cmake_minimum_required(VERSION 3.25)
foreach(v PRESETS PRESET BINARY_DIR CTEST REQUIRED)
  if(NOT DEFINED ${v})
    message(FATAL_ERROR "check_ci_selection: -D${v}=... missing")
  endif()
endforeach()

# The preset's exclusion (and inclusion, if any) label filter.
file(READ ${PRESETS} presets)
string(JSON n LENGTH "${presets}" testPresets)
math(EXPR last "${n} - 1")
set(found FALSE)
foreach(i RANGE ${last})
  string(JSON name GET "${presets}" testPresets ${i} name)
  if(name STREQUAL PRESET)
    set(found TRUE)
    string(JSON exclude ERROR_VARIABLE no_exclude GET "${presets}" testPresets ${i} filter exclude label)
    string(JSON include ERROR_VARIABLE no_include GET "${presets}" testPresets ${i} filter include label)
  endif()
endforeach()
if(NOT found)
  message(FATAL_ERROR "${PRESETS}: no test preset '${PRESET}'")
endif()
set(filter_args "")
if(NOT no_exclude)
  list(APPEND filter_args -LE "${exclude}")
endif()
if(NOT no_include)
  list(APPEND filter_args -L "${include}")
endif()

# test names ctest lists for some arguments
function(list_tests out)
  execute_process(COMMAND ${CTEST} --test-dir ${BINARY_DIR} -N ${ARGN}
    OUTPUT_VARIABLE text RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "ctest -N ${ARGN} failed (${rc})")
  endif()
  string(REGEX MATCHALL "Test +#[0-9]+: [^\n]+" lines "${text}")
  set(names "")
  foreach(l ${lines})
    string(REGEX REPLACE "Test +#[0-9]+: ([^ ]+).*" "\\1" name "${l}")
    list(APPEND names ${name})
  endforeach()
  set(${out} ${names} PARENT_SCOPE)
endfunction()

list_tests(selected ${filter_args})
list_tests(gpu_tests -L "^gpu$")
list(LENGTH selected n_selected)
message(STATUS "preset '${PRESET}' filter [${filter_args}] selects ${n_selected} tests")

set(errors "")
foreach(t ${REQUIRED})
  if(NOT t IN_LIST selected)
    string(APPEND errors "  required test '${t}' is not in the '${PRESET}' selection\n")
  endif()
endforeach()
foreach(t ${gpu_tests})
  if(t IN_LIST selected)
    string(APPEND errors "  gpu test '${t}' is in the '${PRESET}' selection\n")
  endif()
endforeach()

execute_process(COMMAND ${CTEST} --test-dir ${BINARY_DIR} --print-labels OUTPUT_VARIABLE text)
string(REGEX MATCHALL "\n  [^\n]+" lines "${text}")
set(labels "")
foreach(l ${lines})
  string(STRIP "${l}" l)
  list(APPEND labels ${l})
endforeach()
message(STATUS "labels: ${labels}")
foreach(a ${labels})
  foreach(b ${labels})
    if(NOT a STREQUAL b)
      string(FIND "${b}" "${a}" at)
      if(NOT at EQUAL -1)
        string(APPEND errors "  label '${a}' is contained in label '${b}': a filter for one selects both\n")
      endif()
    endif()
  endforeach()
endforeach()

if(errors)
  message(FATAL_ERROR "CI selection check failed:\n${errors}")
endif()
message(STATUS "CI selection OK: ${REQUIRED} selected, no gpu test selected, labels distinct")
