// Must NOT compile: a C++-only file (one that includes extension/cpp_only.hpp) that pulls in a
// PostgreSQL header. The ctest cpp_only_guard passes when the compiler refuses it with the
// guard's message.
#include "postgres.h"

#include "cpp_only.hpp"
