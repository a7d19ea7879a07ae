# Shared build helpers.

# Warnings for host C++ and for the host side of CUDA files.
function(d2k_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wno-unused-parameter>
    $<$<COMPILE_LANGUAGE:CUDA>:-Xcompiler=-Wall,-Wextra,-Wno-unused-parameter --expt-relaxed-constexpr>)
  if(D2K_WERROR)
    target_compile_options(${target} PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endfunction()

# ctest labels. ctest reads a label filter as a regular expression, so no label may contain
# another and every filter is anchored: `ctest -L '^gpu$'` runs the GPU tests, CI (the `ci` test
# preset) excludes `^gpu$`. tests/build/check_ci_selection.cmake enforces both.
#   unit         host unit tests (gtest)
#   cli          smoke tests of the d2k binary
#   host         the no-GPU pipeline end to end (README's suite path)
#   adversarial  the exploit corpus, offline stage
#   build        the build itself (labels, CI selection, read-only source tree)
#   gpu          needs a GPU: run on the GPU machine, never in CI
#   soak         long reliability runs (the service's kill -9 soak): `ctest -L '^soak$'`, not in CI

# d2k_add_test(NAME name SOURCES ... LIBS ... [GPU])
function(d2k_add_test)
  cmake_parse_arguments(T "GPU" "NAME" "SOURCES;LIBS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_include_directories(${T_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  target_compile_definitions(${T_NAME} PRIVATE
    D2K_SOURCE_DIR="${CMAKE_SOURCE_DIR}" D2K_BINARY_DIR="${CMAKE_BINARY_DIR}")
  d2k_warnings(${T_NAME})
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  if(T_GPU)
    set_tests_properties(${T_NAME} PROPERTIES LABELS gpu)
  else()
    set_tests_properties(${T_NAME} PROPERTIES LABELS unit)
  endif()
endfunction()

# d2k_library(name SOURCES ... LIBS ...): a static, position-independent library of src/.
function(d2k_library name)
  cmake_parse_arguments(L "" "" "SOURCES;LIBS" ${ARGN})
  add_library(${name} STATIC ${L_SOURCES})
  target_include_directories(${name} PUBLIC ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/include)
  target_link_libraries(${name} PUBLIC ${L_LIBS})
  d2k_warnings(${name})
endfunction()

# The `// %VARIANT% name flags...` lines of an expert source: sets <out>_names and, per name,
# <out>_flags_<name>. The marker may be indented inside a comment block. A malformed line (no
# name, a name that is not an identifier, a repeated name, no flags) stops the configure step,
# naming the file and quoting the line.
function(d2k_expert_variants src out)
  file(STRINGS ${src} lines REGEX "^//[ ]*%VARIANT%")
  set(names "")
  foreach(line ${lines})
    if(NOT line MATCHES "^//[ ]*%VARIANT%[ ]+([A-Za-z0-9_]+)([ ]+(.*))?$")
      message(FATAL_ERROR "${src}: bad variant line '${line}' (expected: // %VARIANT% name -DFLAG=VALUE ...)")
    endif()
    set(name ${CMAKE_MATCH_1})
    string(STRIP "${CMAKE_MATCH_3}" flags)
    if(name IN_LIST names)
      message(FATAL_ERROR "${src}: variant '${name}' declared twice")
    endif()
    if(flags STREQUAL "")
      message(FATAL_ERROR "${src}: variant '${name}' has no flags (it would be the expert itself)")
    endif()
    separate_arguments(flags UNIX_COMMAND "${flags}")
    list(APPEND names ${name})
    set(${out}_flags_${name} ${flags} PARENT_SCOPE)
  endforeach()
  set(${out}_names ${names} PARENT_SCOPE)
endfunction()
