# Unity build (issue 35: a build a newcomer can wait for). A target's sources are compiled in
# batches of SUPERAGENT_UNITY_BATCH, each batch one translation unit that #includes its sources:
# the third-party headers (nlohmann/json, spdlog, cpp-httplib, gtest) are parsed and their
# templates instantiated once per batch instead of once per source, a third of the compile time.
#
# Not CMake's UNITY_BUILD: its batch files #include sources by absolute path, so a clone in
# another directory compiles different text and ccache misses every batch. Here a batch names
# its sources relative to an include directory the target already has, so every clone's batch is
# the same text, and ccache (CCACHE_BASEDIR, cmake/dev.sh) shares it between checkouts.
#
# The price: every source of a batch sees what the ones before it declared, so two helpers of the
# same name in anonymous namespaces clash (rename one), and a `using namespace` leaks forward
# (keep them inside functions or namespaces). -DSUPERAGENT_UNITY=OFF compiles one source at a
# time (a faster edit-compile loop on one file).
option(SUPERAGENT_UNITY "Compile sources in batches (cmake/Unity.cmake)" ON)
set(SUPERAGENT_UNITY_BATCH 8 CACHE STRING "Sources per unity batch")

# superagent_unity(<out-var> <name> <include-dir> <source>...): sets <out-var> to the sources to
# compile — the batch files under ${CMAKE_CURRENT_BINARY_DIR}/unity/, or the sources as they are
# when SUPERAGENT_UNITY is OFF. Each source must lie under <include-dir>, which the target must
# have among its include directories. A batch never spans two top directories under it (the
# library's modules: a file added to one module regroups only that module's batches); within one,
# sources go in name order. A batch file is rewritten only when its text changes.
function(superagent_unity out name include_dir)
  if(NOT SUPERAGENT_UNITY)
    set(${out} ${ARGN} PARENT_SCOPE)
    return()
  endif()
  set(relatives)
  foreach(source IN LISTS ARGN)
    file(RELATIVE_PATH relative "${include_dir}" "${source}")
    list(APPEND relatives "${relative}")
  endforeach()
  list(SORT relatives)
  set(batches)
  set(text "")
  set(count 0)
  set(index 0)
  set(group "")
  foreach(relative IN LISTS relatives)
    string(FIND "${relative}" "/" slash)
    set(top "")
    if(slash GREATER 0)
      string(SUBSTRING "${relative}" 0 ${slash} top)
    endif()
    if(count GREATER 0 AND (count EQUAL SUPERAGENT_UNITY_BATCH OR NOT top STREQUAL group))
      set(batch "${CMAKE_CURRENT_BINARY_DIR}/unity/${name}_${group}_${index}.cpp")
      file(CONFIGURE OUTPUT "${batch}" CONTENT "${text}" @ONLY)
      list(APPEND batches "${batch}")
      set(text "")
      set(count 0)
      math(EXPR index "${index} + 1")
    endif()
    if(NOT top STREQUAL group)
      set(group "${top}")
      set(index 0)
    endif()
    string(APPEND text "#include \"${relative}\"\n")
    math(EXPR count "${count} + 1")
  endforeach()
  if(count GREATER 0)
    set(batch "${CMAKE_CURRENT_BINARY_DIR}/unity/${name}_${group}_${index}.cpp")
    file(CONFIGURE OUTPUT "${batch}" CONTENT "${text}" @ONLY)
    list(APPEND batches "${batch}")
  endif()
  set(${out} ${batches} PARENT_SCOPE)
endfunction()
