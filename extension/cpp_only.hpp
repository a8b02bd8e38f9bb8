// Include this last in a .cpp file that must stay free of PostgreSQL (pure C++, unit-tested
// without a server, safe to throw exceptions anywhere): if anything above it pulled in a
// PostgreSQL header, the file no longer compiles. (As pg_duckdb's cpp_only_file.hpp does.)
#pragma once

#ifdef POSTGRES_H
#error "this C++-only file includes PostgreSQL headers (postgres.h); move that code to a PostgreSQL-facing file"
#endif
