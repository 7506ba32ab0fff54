#include "test_paths.h"

extern "C" const char* superagent_test_binary() { return SUPERAGENT_TEST_BINARY_PATH; }
extern "C" const char* superagent_test_source_dir() { return SUPERAGENT_TEST_SOURCE_PATH; }
