# Project code is held to warnings-as-errors; third-party headers are included as system headers.
# -Wnull-dereference is left out: at -O2 GCC 12 reports it inside nlohmann/json and libstdc++
# streams after inlining, where nothing can be null.
function(superagent_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Werror
    -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
    -Wunused -Woverloaded-virtual -Wimplicit-fallthrough
    -Wno-missing-field-initializers)
  # GCC 12 reports false maybe-uninitialized inside libstdc++ (<regex>, <functional>) once
  # sanitizer instrumentation changes inlining; the plain build keeps the warning.
  if(SUPERAGENT_SANITIZE)
    target_compile_options(${target} PRIVATE -Wno-maybe-uninitialized)
  endif()
  # Lock rules are the compiler's (superagent/mutex.h): a clang build — the fuzz build, which CI
  # runs — refuses a guarded member touched, or a `…Locked` helper called, without its mutex.
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    target_compile_options(${target} PRIVATE -Wthread-safety)
  endif()
endfunction()
