#pragma once
// How a number on a command line (the worker's and the tools') is declared: checked against its
// range, its default shown in --help.

#include <CLI/CLI.hpp>
#include <string>

namespace tweetkeeper::worker {

// An option whose value must lie in [low, high], its default shown in --help. More (a type
// name) may be chained on.
template <class T, class Bound>
CLI::Option* AddBounded(CLI::App& app, const std::string& name, T& value, const std::string& help, Bound low,
                        Bound high) {
  return app.add_option(name, value, help)->check(CLI::Range(low, high))->capture_default_str();
}

}  // namespace tweetkeeper::worker
