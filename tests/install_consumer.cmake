# install_consumer.cmake — installs PE into a scratch prefix, then builds a
# consumer program against it twice: with find_package(PE) -> PE::pe, and
# with pkg-config pe.  Run by ctest as `cmake -DSRC=... -DBIN=... -P`.
file(REMOVE_RECURSE ${BIN})
set(prefix ${BIN}/prefix)
execute_process(COMMAND ${CMAKE_COMMAND} -S ${SRC} -B ${BIN}/pe -DPE_BUILD_TESTS=OFF -DPE_BUILD_EXAMPLES=OFF
                        -DCMAKE_INSTALL_PREFIX=${prefix} RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "configure PE failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN}/pe -j2 --target install RESULT_VARIABLE rc OUTPUT_QUIET)
if(rc)
  message(FATAL_ERROR "install PE failed")
endif()

file(WRITE ${BIN}/app/main.c [=[
#include <pe.h>
#include <stdio.h>
int main(void) {
    if (pe_init(NULL) != PE_OK) return 1;
    float x[3] = {1, 2, 3}, y = 0;
    pe_array a = pe_f32_1d(x, 3);
    pe_array s = pe_sum(pe_mul(a, a));
    if (pe_read_f32(s, &y) != PE_OK) return 1;
    pe_shutdown();
    printf("%g\n", y);
    return y == 14.0f ? 0 : 1;
}
]=])
file(WRITE ${BIN}/app/main.cpp [=[
#include <pe.hpp>
#include <cstdio>
int main() {
    pe::session session;
    float x[3] = {1, 2, 3};
    pe::array a = pe::from_host(x, {3});
    double y = pe::sum(a * a).item();
    std::printf("%g\n", y);
    return y == 14.0 ? 0 : 1;
}
]=])
file(WRITE ${BIN}/app/CMakeLists.txt [=[
cmake_minimum_required(VERSION 3.25)
project(consumer C CXX)
find_package(PE REQUIRED)
add_executable(app main.c)
target_link_libraries(app PRIVATE PE::pe)
add_executable(app_cpp main.cpp)
set_target_properties(app_cpp PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_link_libraries(app_cpp PRIVATE PE::pe)
]=])
execute_process(COMMAND ${CMAKE_COMMAND} -S ${BIN}/app -B ${BIN}/app/build -DCMAKE_PREFIX_PATH=${prefix}
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "find_package(PE) failed")
endif()
execute_process(COMMAND ${CMAKE_COMMAND} --build ${BIN}/app/build RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building against PE::pe failed")
endif()
execute_process(COMMAND ${BIN}/app/build/app RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc OR NOT out MATCHES "^14")
  message(FATAL_ERROR "consumer via find_package printed '${out}' (exit ${rc})")
endif()
execute_process(COMMAND ${BIN}/app/build/app_cpp RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc OR NOT out MATCHES "^14")
  message(FATAL_ERROR "C++ consumer (pe.hpp) via find_package printed '${out}' (exit ${rc})")
endif()

# pkg-config, static link as a C programmer would write it by hand.
find_program(PKG_CONFIG pkg-config REQUIRED)
find_program(CC NAMES cc gcc REQUIRED)
set(ENV{PKG_CONFIG_PATH} ${prefix}/lib/pkgconfig:${prefix}/lib64/pkgconfig)
execute_process(COMMAND ${PKG_CONFIG} --cflags --libs pe OUTPUT_VARIABLE flags RESULT_VARIABLE rc
                OUTPUT_STRIP_TRAILING_WHITESPACE)
if(rc)
  message(FATAL_ERROR "pkg-config pe failed")
endif()
separate_arguments(flags UNIX_COMMAND "${flags}")
execute_process(COMMAND ${CC} ${BIN}/app/main.c -o ${BIN}/app/app_pc ${flags} -Wl,-rpath,${prefix}/lib
                RESULT_VARIABLE rc)
if(rc)
  message(FATAL_ERROR "building with pkg-config flags failed")
endif()
execute_process(COMMAND ${BIN}/app/app_pc RESULT_VARIABLE rc OUTPUT_VARIABLE out)
if(rc OR NOT out MATCHES "^14")
  message(FATAL_ERROR "consumer via pkg-config printed '${out}' (exit ${rc})")
endif()
message(STATUS "find_package(PE) and pkg-config pe both work")
