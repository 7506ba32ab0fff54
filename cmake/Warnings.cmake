# Project code is held to warnings-as-errors; third-party headers are included as system headers.
function(superagent_warnings target)
  target_compile_options(${target} PRIVATE
    -Wall -Wextra -Wpedantic -Werror
    -Wshadow -Wnon-virtual-dtor -Wold-style-cast -Wcast-align
    -Wunused -Woverloaded-virtual -Wnull-dereference -Wimplicit-fallthrough
    -Wno-missing-field-initializers)
endfunction()
