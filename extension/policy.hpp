// The age policy as plain C++: which refresh delay applies to a tweet of a given age.
// No PostgreSQL headers here, so the logic is unit-tested without a server.
#pragma once

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

namespace tweetkeeper {

// PostgreSQL compares intervals as if a month were 30 days and a day 24 hours; we do the same so
// that C++ and SQL agree on which bucket a tweet is in.
constexpr int64_t kUsecPerDay = INT64_C(86400000000);
constexpr int64_t kUsecPerMonth = 30 * kUsecPerDay;

struct PolicyRow {
  int64_t max_age_usec;  // tweets strictly younger than this...
  int64_t delay_usec;    // ...are refreshed this often
  size_t payload;        // index of the caller's copy of the original delay (keeps '1 day' a day)
};

class PolicyError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// An age policy has at most this many rows (the default has 7): more is a mistake, and a
// completion passes the whole policy along (policy_delay()).
constexpr size_t kMaxPolicyRows = 1000;

class AgePolicy {
 public:
  AgePolicy() = default;
  // Validates and sorts the rows; throws PolicyError for a policy that makes no sense (or has
  // more than kMaxPolicyRows rows).
  explicit AgePolicy(std::vector<PolicyRow> rows);

  // The row whose bucket holds a tweet of this age, or nothing once the tweet is older than the
  // largest max_age (the original specification's -1: stop refreshing). Negative ages count as 0.
  std::optional<PolicyRow> ForAge(int64_t age_usec) const;

  bool empty() const { return rows_.empty(); }
  const std::vector<PolicyRow>& rows() const { return rows_; }

 private:
  std::vector<PolicyRow> rows_;
};

// Interval fields to microseconds, with PostgreSQL's comparison semantics. Throws PolicyError on
// overflow (an interval of more than ~290,000 years).
int64_t IntervalToUsec(int32_t months, int32_t days, int64_t time_usec);

}  // namespace tweetkeeper
