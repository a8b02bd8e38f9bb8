#include "private_file/private_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>

namespace tweetkeeper::worker {
namespace {

// Closes the descriptor on every path out.
struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) close(fd);
  }
};

PrivateFileRead Problem(PrivateFileProblem problem, int errno_value = 0) {
  PrivateFileRead r;
  r.problem = problem;
  r.errno_value = errno_value;
  return r;
}

}  // namespace

PrivateFileRead ReadPrivateFile(const std::string& path, std::size_t max_bytes) {
  Fd file{open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)};
  if (file.fd < 0) return Problem(PrivateFileProblem::kCannotOpen, errno);
  struct stat st {};
  if (fstat(file.fd, &st) != 0) return Problem(PrivateFileProblem::kCannotStat, errno);
  PrivateFileRead r;
  r.owner = st.st_uid;
  r.mode = st.st_mode;
  if (!S_ISREG(st.st_mode)) r.problem = PrivateFileProblem::kNotRegular;
  else if (st.st_uid != geteuid()) r.problem = PrivateFileProblem::kOtherOwner;
  else if ((st.st_mode & 077) != 0) r.problem = PrivateFileProblem::kOpenToOthers;
  else if (static_cast<std::size_t>(st.st_size) > max_bytes) r.problem = PrivateFileProblem::kTooLarge;
  if (r.problem != PrivateFileProblem::kNone) return r;
  char buf[8192];
  for (;;) {
    const ssize_t n = read(file.fd, buf, sizeof buf);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) return Problem(PrivateFileProblem::kCannotRead, errno);
    if (n == 0) break;
    r.text.append(buf, static_cast<std::size_t>(n));
    if (r.text.size() > max_bytes) {  // (it grew since fstat)
      r.text.clear();
      r.problem = PrivateFileProblem::kTooLarge;
      return r;
    }
  }
  return r;
}

}  // namespace tweetkeeper::worker
