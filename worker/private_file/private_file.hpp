#pragma once
// A file that only its owner may read, read whole: what --credentials (tokens) and --dsn-file
// (a connection string that may hold a password) name. It is opened without blocking (a FIFO is
// refused, never waited for) and checked on the open descriptor, so the file checked is the file
// read: a regular file, of this process's user, that group and others may not read or write, of
// at most max_bytes. Each caller words the refusal for its own option (PrivateFileRead says what
// was wrong and the facts to name).

#include <sys/types.h>

#include <cstddef>
#include <string>

namespace tweetkeeper::worker {

enum class PrivateFileProblem {
  kNone,
  kCannotOpen,  // errno_value says why
  kCannotStat,  // errno_value
  kNotRegular,
  kOtherOwner,  // owner: whose it is
  kOpenToOthers,  // mode: its permission bits
  kCannotRead,  // errno_value
  kTooLarge,
};

struct PrivateFileRead {
  PrivateFileProblem problem = PrivateFileProblem::kNone;
  std::string text;  // the whole file, when problem is kNone
  int errno_value = 0;
  uid_t owner = 0;
  mode_t mode = 0;
};

PrivateFileRead ReadPrivateFile(const std::string& path, std::size_t max_bytes);

}  // namespace tweetkeeper::worker
