#pragma once
// tweetkeeper-import --dataset DIR: rehydrates a dataset that tweetkeeper-export --format dataset
// wrote (worker/export/dataset.hpp). Every file is checked against SHA256SUMS and read whole
// before anything is written; then, in one transaction, every post it names is scheduled
// (schedule_tweets, schedule_posts) and put into a collection, and history.csv is stored as the
// posts' history (tweetkeeper.import_history). With wait_seconds, it then waits until each post was
// read here or found gone and says how many could be read again.
#include <string>

namespace tweetkeeper::importer {

struct DatasetOptions {
  std::string dsn, dir, collection;  // collection: empty for the datasheet's name
  int wait_seconds = 0;               // 0: do not wait
  int progress_every = 5;
};

// The exit code: 0 imported (and, waited for, every post read again or found gone), 1 database
// error or the wait ran out, 2 a bad dataset (nothing imported).
int ImportDataset(const DatasetOptions& o);

}  // namespace tweetkeeper::importer
