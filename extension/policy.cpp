#include "policy.hpp"

#include <algorithm>

#include "cpp_only.hpp"

namespace tweetkeeper {

AgePolicy::AgePolicy(std::vector<PolicyRow> rows) : rows_(std::move(rows)) {
  if (rows_.size() > kMaxPolicyRows)
    throw PolicyError("age_policy has " + std::to_string(rows_.size()) + " rows; at most " +
                      std::to_string(kMaxPolicyRows));
  std::sort(rows_.begin(), rows_.end(),
            [](const PolicyRow& a, const PolicyRow& b) { return a.max_age_usec < b.max_age_usec; });
  for (size_t i = 0; i < rows_.size(); ++i) {
    if (rows_[i].max_age_usec <= 0) throw PolicyError("age_policy: max_age must be positive");
    if (rows_[i].delay_usec <= 0) throw PolicyError("age_policy: delay must be positive");
    if (i > 0 && rows_[i].max_age_usec == rows_[i - 1].max_age_usec)
      throw PolicyError("age_policy: two rows have the same max_age");
  }
}

std::optional<PolicyRow> AgePolicy::ForAge(int64_t age_usec) const {
  if (age_usec < 0) age_usec = 0;
  // Rows are sorted by max_age: the first bucket whose bound the tweet has not reached yet.
  auto it = std::upper_bound(rows_.begin(), rows_.end(), age_usec,
                             [](int64_t age, const PolicyRow& r) { return age < r.max_age_usec; });
  if (it == rows_.end()) return std::nullopt;
  return *it;
}

int64_t IntervalToUsec(int32_t months, int32_t days, int64_t time_usec) {
  int64_t m = 0, d = 0, sum = 0;
  if (__builtin_mul_overflow(static_cast<int64_t>(months), kUsecPerMonth, &m) ||
      __builtin_mul_overflow(static_cast<int64_t>(days), kUsecPerDay, &d) ||
      __builtin_add_overflow(m, d, &sum) || __builtin_add_overflow(sum, time_usec, &sum))
    throw PolicyError("interval out of range");
  return sum;
}

}  // namespace tweetkeeper
