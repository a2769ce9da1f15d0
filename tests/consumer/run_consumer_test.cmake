# cmake -DBUILD_DIR=... -DSOURCE_DIR=tests/consumer -DWORK_DIR=... [-DCXX_COMPILER=... -DCXX_FLAGS=...]
#       -P run_consumer_test.cmake
# Installs the built project into a fresh prefix, then configures, builds and runs the consumer
# against that prefix alone (CMAKE_PREFIX_PATH names nothing else of ours).
file(REMOVE_RECURSE ${WORK_DIR})
set(prefix ${WORK_DIR}/prefix)
function(run)
  execute_process(COMMAND ${ARGN} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "failed (${rc}): ${ARGN}")
  endif()
endfunction()
run(${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${prefix})
# The consumer is compiled as the project was (a sanitizer build's libraries need its flags).
run(${CMAKE_COMMAND} -S ${SOURCE_DIR} -B ${WORK_DIR}/build -G Ninja -DCMAKE_BUILD_TYPE=Release
    -DCMAKE_PREFIX_PATH=${prefix} -DCMAKE_CXX_COMPILER=${CXX_COMPILER} "-DCMAKE_CXX_FLAGS=${CXX_FLAGS}")
run(${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(${WORK_DIR}/build/consumer)
