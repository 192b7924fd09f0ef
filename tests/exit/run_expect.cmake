# Runs PROGRAM with ARGS (a ;-list) under TIMEOUT seconds and fails unless it exits with EXPECT and
# prints no sanitizer report: a hang (timeout), a crash (signal) or a changed exit code all fail.
#   cmake -DPROGRAM=... -DARGS=a;b -DEXPECT=3 -DTIMEOUT=60 -P run_expect.cmake
execute_process(COMMAND ${PROGRAM} ${ARGS} RESULT_VARIABLE rc OUTPUT_VARIABLE out
                ERROR_VARIABLE err TIMEOUT ${TIMEOUT})
message("${out}${err}")
if(NOT rc STREQUAL "${EXPECT}")
  message(FATAL_ERROR "exit status '${rc}', want ${EXPECT} (a hang times out, a crash is a signal)")
endif()
if("${out}${err}" MATCHES "Sanitizer|runtime error:")
  message(FATAL_ERROR "a sanitizer reported a problem")
endif()
