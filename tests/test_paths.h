// Where the tests find the daemon's binary and the source tree. The two paths are compiled into
// test_paths.cpp alone: every other test object is then the same whichever checkout it is built
// in, so ccache gives CI's fresh clone what a developer's build compiled (docs/008, build).
// Included into every test and benchmark source by the build (-include), so the macros
// SUPERAGENT_BINARY and SUPERAGENT_SOURCE_DIR, which name these functions, work anywhere.
#pragma once

extern "C" const char* superagent_test_binary();
extern "C" const char* superagent_test_source_dir();
