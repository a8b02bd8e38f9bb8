#include "stream/counter.hpp"

#include <algorithm>

namespace tweetkeeper::worker::stream {

const char* ResultName(ReadResult r) {
  switch (r) {
    case ReadResult::kAdopted: return "adopt";
    case ReadResult::kAgain: return "again";
    case ReadResult::kCompared: return "compared";
    case ReadResult::kSkipped: return "skipped";
    case ReadResult::kNotYet: return "not yet";
  }
  return "again";
}

void Counter::Reset(std::int64_t position_us, std::int64_t warm_from_us) {
  posts_.clear();
  by_key_.clear();
  record_posts_.clear();
  records_.clear();
  ring_.clear();
  ring_posts_.clear();
  ring_records_.clear();
  ring_base_ = 1;
  pending_ = Flush();
  held_.clear();
  start_us_ = position_us;
  last_us_ = 0;
  // (Started live, the ring holds nothing before the first event.)
  ring_start_us_ = warm_from_us > 0 && position_us > 0 ? std::min(warm_from_us, position_us + 1)
                   : position_us > 0                  ? position_us + 1
                                                      : INT64_MAX;
}

void Counter::AddPost(std::int64_t id, const PostKey& key, const Counts& counts) {
  Post& p = posts_[id];
  p.key = key;
  p.counts = counts;
  by_key_[key] = id;
}

void Counter::AddRecord(std::uint64_t record, std::int64_t id, Kind kind, const PostKey& key) {
  records_[record] = {id, kind};
  record_posts_.try_emplace(id, key);
}

void Counter::Release() {
  for (const auto& [e, counts] : held_) {
    if (counts) ApplyNow(e);
    else PassNow(e.time_us);
  }
  held_.clear();
}

void Counter::Pass(std::int64_t time_us) {
  CountEvent e;
  e.time_us = time_us;
  if (!held_.empty() && held_.back().first.time_us != time_us) Release();
  held_.emplace_back(std::move(e), false);
}

void Counter::Apply(const CountEvent& e) {
  if (!held_.empty() && held_.back().first.time_us != e.time_us) Release();
  held_.emplace_back(e, true);
}

void Counter::PassNow(std::int64_t time_us) {
  if (ring_start_us_ == INT64_MAX) ring_start_us_ = time_us;
  last_us_ = std::max(last_us_, time_us);
  ++pending_.events;
  Expire();
}

void Counter::Push(std::int64_t time_us, const PostKey& key, std::uint64_t record, Kind kind, int delta) {
  const std::uint64_t seq = ring_base_ + ring_.size();
  ring_.push_back({time_us, record, 0, key, kind, delta});
  const auto [it, fresh] = ring_posts_.try_emplace(key, Span{seq, seq});
  if (!fresh) {
    ring_[it->second.tail - ring_base_].next = seq;
    it->second.tail = seq;
  }
  if (delta > 0) ring_records_[record] = seq;
}

void Counter::Expire() {
  const std::int64_t horizon = last_us_ - ring_us_;
  while (!ring_.empty() && ring_.front().time_us < horizon) {
    const Entry& e = ring_.front();
    const auto span = ring_posts_.find(e.key);
    if (e.next == 0) ring_posts_.erase(span);
    else span->second.head = e.next;
    if (e.delta > 0) {
      const auto r = ring_records_.find(e.record);
      if (r != ring_records_.end() && r->second == ring_base_) ring_records_.erase(r);
    }
    ring_.pop_front();
    ++ring_base_;
  }
  if (ring_start_us_ < horizon) ring_start_us_ = horizon;
}

void Counter::Count(Post& post, std::int64_t id, Kind kind, std::uint64_t record, std::int64_t time_us) {
  ++post.counts[kind];
  records_[record] = {id, kind};
  pending_.keys.push_back(static_cast<std::int64_t>(record));
  pending_.key_ids.push_back(id);
  pending_.kinds.push_back(kind + 1);
  post.dirty = true;
  post.last_us = std::max(post.last_us, time_us);
  ++pending_.counted;
}

void Counter::Undo(const CountEvent& e) {
  for (int k = 0; k < kKinds; ++k) {
    if (!e.may_undo[k]) continue;
    const std::uint64_t r = e.record[k];
    if (const auto it = records_.find(r); it != records_.end()) {
      const auto post = posts_.find(it->second.id);
      if (post != posts_.end()) {
        Post& p = post->second;
        p.counts[k] = std::max<std::int64_t>(0, p.counts[k] - 1);
        p.dirty = true;
        p.last_us = std::max(p.last_us, e.time_us);
        ++pending_.counted;
        ++undone_;
        Push(e.time_us, p.key, r, static_cast<Kind>(k), -1);
      } else if (const auto key = record_posts_.find(it->second.id); key != record_posts_.end()) {
        // Its post is not counted now (a gap): remembered for its adoption.
        Push(e.time_us, key->second, r, static_cast<Kind>(k), -1);
      }
      pending_.gone.push_back(static_cast<std::int64_t>(r));
      records_.erase(it);
    } else if (const auto made = ring_records_.find(r); made != ring_records_.end()) {
      // Made within the ring for a post not counted (yet): remembered for its adoption.
      const PostKey key = ring_[made->second - ring_base_].key;
      ring_records_.erase(made);
      Push(e.time_us, key, r, static_cast<Kind>(k), -1);
    }
  }
}

void Counter::Warm(const CountEvent& e) {
  PassNow(e.time_us);
  for (int k = 0; k < kKinds; ++k) {
    const std::uint64_t r = e.record[k];
    if (e.may_undo[k]) {
      if (const auto made = ring_records_.find(r); made != ring_records_.end()) {
        const PostKey key = ring_[made->second - ring_base_].key;
        ring_records_.erase(made);
        Push(e.time_us, key, r, static_cast<Kind>(k), -1);
      }
    }
    if (e.create && !e.subject[k].empty() && !ring_records_.count(r)) Push(e.time_us, e.subject[k], r, static_cast<Kind>(k), +1);
  }
}

void Counter::ApplyNow(const CountEvent& e) {
  if (start_us_ > 0 && e.time_us <= start_us_) return Warm(e);
  PassNow(e.time_us);
  Undo(e);  // a delete, or the record an update replaces
  if (!e.create) return;
  for (int k = 0; k < kKinds; ++k) {
    if (e.subject[k].empty()) continue;
    const std::uint64_t r = e.record[k];
    if (records_.count(r) || ring_records_.count(r)) continue;  // seen already (a replay)
    if (const auto id = by_key_.find(e.subject[k]); id != by_key_.end()) {
      Count(posts_[id->second], id->second, static_cast<Kind>(k), r, e.time_us);
    }
    Push(e.time_us, e.subject[k], r, static_cast<Kind>(k), +1);
  }
}

ReadResult Counter::Read(std::int64_t id, const PostKey& key, std::int64_t as_of_us, const Counts& counts,
                         bool counted, Counts* difference) {
  const ReadResult result = Decide(id, key, as_of_us, counts, counted, difference);
  if (result == ReadResult::kNotYet) return result;
  pending_.read_ids.push_back(id);
  pending_.read_as_of_us.push_back(as_of_us);
  pending_.read_results.push_back(result);
  pending_.differences.insert(pending_.differences.end(), difference->begin(), difference->end());
  return result;
}

ReadResult Counter::Decide(std::int64_t id, const PostKey& key, std::int64_t as_of_us, const Counts& counts,
                           bool counted, Counts* difference) {
  *difference = Counts{};
  const auto span = ring_posts_.find(key);
  const auto entries = [&](auto&& f) {
    if (span == ring_posts_.end()) return;
    for (std::uint64_t seq = span->second.head; seq != 0;) {
      const Entry& e = ring_[seq - ring_base_];
      f(e);
      seq = e.next;
    }
  };
  auto it = posts_.find(id);
  if (it != posts_.end() && counted) {
    if (as_of_us < ring_start_us_) return ReadResult::kSkipped;
    if (as_of_us > reads_through_us()) return ReadResult::kNotYet;
    // The stream's count at as_of: now's, less what came since.
    Counts then = it->second.counts;
    entries([&](const Entry& e) {
      if (e.time_us >= as_of_us) then[e.kind] -= e.delta;
    });
    bool differs = false;
    for (int k = 0; k < kKinds; ++k) {
      (*difference)[k] = counts[k] - then[k];
      differs |= (*difference)[k] != 0;
    }
    if (differs) {
      // The read is the truth: the stream missed or miscounted events before it.
      Post& p = it->second;
      for (int k = 0; k < kKinds; ++k) p.counts[k] = std::max<std::int64_t>(0, p.counts[k] + (*difference)[k]);
      p.dirty = true;
      p.last_us = std::max(p.last_us, as_of_us);
    }
    return ReadResult::kCompared;
  }
  if (as_of_us < ring_start_us_) return ReadResult::kAgain;
  if (as_of_us > reads_through_us()) return ReadResult::kNotYet;
  // Adopted: the read's counts, its records made since the ring's start known, and every event
  // since the read counted.
  if (it != posts_.end()) by_key_.erase(it->second.key);
  Post& p = posts_[id];
  p = Post();
  p.key = key;
  p.counts = counts;
  by_key_[key] = id;
  entries([&](const Entry& e) {
    if (e.time_us < as_of_us) {
      if (e.delta > 0) {
        records_[e.record] = {id, e.kind};
        pending_.keys.push_back(static_cast<std::int64_t>(e.record));
        pending_.key_ids.push_back(id);
        pending_.kinds.push_back(e.kind + 1);
      } else if (records_.erase(e.record)) {
        pending_.gone.push_back(static_cast<std::int64_t>(e.record));
      }
    } else if (e.delta > 0) {
      Count(p, id, e.kind, e.record, e.time_us);
    } else {
      // A record of this post deleted since the read: counted by the read if it was made before
      // (its create before the ring, or before the read), or counted just above.
      p.counts[e.kind] = std::max<std::int64_t>(0, p.counts[e.kind] - 1);
      p.dirty = true;
      p.last_us = std::max(p.last_us, e.time_us);
      if (records_.erase(e.record)) pending_.gone.push_back(static_cast<std::int64_t>(e.record));
    }
  });
  return ReadResult::kAdopted;
}

void Counter::Account(const CountEvent& e) {
  pending_.account_dids.push_back(e.did);
  pending_.account_actives.push_back(e.active);
  pending_.account_statuses.push_back(e.status);
  Pass(e.time_us);
}

Flush Counter::Take() {
  Flush f = std::move(pending_);
  pending_ = Flush();
  f.position_us = position_us();
  f.reads_through_us = reads_through_us();
  for (auto& [id, p] : posts_) {
    if (!p.dirty) continue;
    p.dirty = false;
    f.ids.push_back(id);
    f.at_us.push_back(p.last_us);
    f.counts.insert(f.counts.end(), p.counts.begin(), p.counts.end());
  }
  return f;
}

void Counter::Restore(const Flush& f) {
  // (Counts are sent whole: the posts' counts now, which hold the lost flush's.)
  for (const std::int64_t id : f.ids)
    if (const auto it = posts_.find(id); it != posts_.end()) it->second.dirty = true;
  for (std::size_t i = 0; i < f.ids.size(); ++i)
    if (const auto it = posts_.find(f.ids[i]); it != posts_.end()) it->second.last_us = std::max(it->second.last_us, f.at_us[i]);
  const auto prepend = [](auto& to, const auto& from) { to.insert(to.begin(), from.begin(), from.end()); };
  prepend(pending_.keys, f.keys);
  prepend(pending_.key_ids, f.key_ids);
  prepend(pending_.kinds, f.kinds);
  prepend(pending_.gone, f.gone);
  prepend(pending_.read_ids, f.read_ids);
  prepend(pending_.read_as_of_us, f.read_as_of_us);
  prepend(pending_.read_results, f.read_results);
  prepend(pending_.differences, f.differences);
  prepend(pending_.account_dids, f.account_dids);
  prepend(pending_.account_actives, f.account_actives);
  prepend(pending_.account_statuses, f.account_statuses);
  pending_.events += f.events;
  pending_.counted += f.counted;
}

void Counter::Forget(const std::vector<std::int64_t>& ids) {
  for (const std::int64_t id : ids) {
    const auto it = posts_.find(id);
    if (it == posts_.end()) continue;
    by_key_.erase(it->second.key);
    posts_.erase(it);
  }
  // (Their records go with them in the database; in memory they count for nothing once their
  // post is gone: Undo() finds no post.)
}

}  // namespace tweetkeeper::worker::stream
