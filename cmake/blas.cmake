# OpenBLAS for GEMM-shaped work, as the build-tree interface target quiver_blas. The single-threaded
# (serial) build is preferred: quiver runs BLAS inside its own thread pool, and a threaded BLAS would
# add threads of its own and change the host process's global BLAS state.
find_package(Threads REQUIRED)
if(NOT QUIVER_OPENBLAS_LIBRARY)
  find_library(QUIVER_OPENBLAS_LIBRARY NAMES openblas
    HINTS /usr/lib/x86_64-linux-gnu/openblas-serial /usr/lib/aarch64-linux-gnu/openblas-serial
    NO_DEFAULT_PATH)
endif()
if(NOT QUIVER_OPENBLAS_LIBRARY)
  find_library(QUIVER_OPENBLAS_LIBRARY NAMES openblas)
endif()
if(NOT QUIVER_OPENBLAS_LIBRARY)
  message(FATAL_ERROR "quiver needs OpenBLAS: install libopenblas-serial-dev (Debian/Ubuntu) or set "
                      "QUIVER_OPENBLAS_LIBRARY to the library's path")
endif()
get_filename_component(QUIVER_OPENBLAS_DIR "${QUIVER_OPENBLAS_LIBRARY}" DIRECTORY)
# cblas.h lives beside the library's variant on Debian (/usr/include/x86_64-linux-gnu/openblas-serial).
find_path(QUIVER_OPENBLAS_INCLUDE_DIR NAMES cblas.h
  HINTS /usr/include/x86_64-linux-gnu/openblas-serial /usr/include/aarch64-linux-gnu/openblas-serial
        ${QUIVER_OPENBLAS_DIR}/../include /usr/include/openblas)
message(STATUS "quiver: OpenBLAS ${QUIVER_OPENBLAS_LIBRARY} (cblas.h in ${QUIVER_OPENBLAS_INCLUDE_DIR})")

add_library(quiver_blas INTERFACE)
target_link_libraries(quiver_blas INTERFACE "${QUIVER_OPENBLAS_LIBRARY}")
if(QUIVER_OPENBLAS_INCLUDE_DIR)
  target_include_directories(quiver_blas SYSTEM INTERFACE "${QUIVER_OPENBLAS_INCLUDE_DIR}")
endif()
# The run-time loader must find the same OpenBLAS variant that was linked (Debian's libopenblas.so.0 in
# the default path is whichever variant the alternatives system points at).
target_link_options(quiver_blas INTERFACE "LINKER:-rpath,${QUIVER_OPENBLAS_DIR}")
if(NOT QUIVER_OPENBLAS_LIBRARY MATCHES "serial")
  message(WARNING "quiver: ${QUIVER_OPENBLAS_LIBRARY} may be a multi-threaded OpenBLAS. It still works, "
                  "but each GEMM quiver runs in its pool then starts OpenBLAS threads of its own, so "
                  "cpu_threads no longer bounds the threads used. Install the serial variant "
                  "(libopenblas-serial-dev) or point QUIVER_OPENBLAS_LIBRARY at it.")
endif()
