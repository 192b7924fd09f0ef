# `cmake -DDEMO=scripts/demo.sh -DTARGETS=a,b -P tests/scripts/demo_targets.cmake` (tests/cli.cmake):
# fails unless the `--target` list of demo.sh's build line holds every target in TARGETS
# (kvflash_installed: the installed targets, cmake/install.cmake), so that `cmake --install` works
# after demo.sh.
cmake_minimum_required(VERSION 3.25)
file(STRINGS "${DEMO}" lines REGEX "cmake --build .*--target ")
if(NOT lines)
  message(FATAL_ERROR "${DEMO}: no `cmake --build ... --target ...` line")
endif()
list(GET lines 0 line)
string(REGEX REPLACE ".*--target +" "" line "${line}")
separate_arguments(built UNIX_COMMAND "${line}")
string(REPLACE "," ";" TARGETS "${TARGETS}")
foreach(t IN LISTS TARGETS)
  if(NOT t IN_LIST built)
    message(FATAL_ERROR "${DEMO} builds ${built} but not ${t}, which `cmake --install` installs")
  endif()
endforeach()
message(STATUS "demo.sh builds every installed target: ${TARGETS}")
