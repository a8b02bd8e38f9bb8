#pragma once
// Test helpers shared by the mock's endpoint tests.

#include "mock_api/mock_config.hpp"

namespace tweetkeeper::mock {

// The mock's world with every post visible: no deleted or protected ones.
inline MockConfig NoFates() {
  MockConfig c;
  c.deleted_every = 0;
  c.protected_every = 0;
  return c;
}

}  // namespace tweetkeeper::mock
