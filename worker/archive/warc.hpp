#pragma once
// WARC files of the API exchanges a worker makes (tweetkeeper-worker --warc-dir): each request and
// its response as `request` and `response` records holding the exact bytes sent and received
// (secrets replaced by a marker of the same length), with block and payload digests, each record
// a gzip member of its own, a `warcinfo` record first in every file. WARC/1.0, the version
// Debian's libarchive (bsdtar) reads. Files are written as NAME.open and renamed to NAME when
// closed (after fsync); a file left .open by a killed process is finished off by Recover(). No
// record header crosses a 64 KiB block of a file decompressed: libarchive reads a header only
// within one (a `metadata` record fills a block up where one would).
// ../shared/archive/FACTS.md section 3 has the rules followed here.

#include <chrono>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace tweetkeeper::worker::warc {

// libarchive (bsdtar), the strict reader of Debian, decompresses a .warc.gz into blocks of 64 KiB
// and finds a record's header only within the block its first bytes are in ("who'd cram so much
// stuff into the header", says its source): a header across a block's end fails the whole read
// with "Bad record header". So no header crosses one: a record whose header would is preceded by
// a metadata record that fills the block up (or starts a new file when even that would not fit).
constexpr std::uint64_t kReaderBlock = 64 * 1024;

// "sha1:" and the SHA-1 of data in Base32 (RFC 4648, upper case, 32 characters), as the WARC
// community recommends.
std::string Sha1Base32(std::string_view data);

// The payload of an HTTP message (request or response, head and body as on the wire): its body,
// with chunked transfer-encoding removed (the payload digest is of that). nullopt when the head
// does not end, or a chunked body is malformed.
std::optional<std::string> HttpPayload(std::string_view message);

// message with every secret replaced: the value of each Authorization header, and each
// occurrence of a string in `secrets` (tokens), as it is or escaped once (%XX as in a URL, \/ and
// \uXXXX as in JSON, mixed as they come), by a marker as long as the bytes it took, so that
// lengths and offsets (Content-Length) still hold. Linear in message. Secrets shorter than 4
// bytes are ignored.
std::string Redact(std::string_view message, const std::vector<std::string>& secrets);

// A random WARC-Record-ID, <urn:uuid:...> (version 4).
std::string NewRecordId();

// YYYY-MM-DDThh:mm:ssZ (whole seconds: libarchive reads no fraction).
std::string WarcDate(std::chrono::system_clock::time_point t);

// One WARC record, uncompressed: "WARC/1.0", the fields (name, value) in order, Content-Length of
// block, the block, CRLF CRLF.
std::string Record(const std::vector<std::pair<std::string, std::string>>& fields, std::string_view block);

// data as one gzip member.
std::string Gzip(std::string_view data);

// One API exchange as it went over the wire.
struct Exchange {
  std::string target_uri;  // the URL requested
  std::string ip;          // the server's address, when known
  std::string request;     // request line, headers, CRLF, body: as sent
  std::string response;    // status line, headers, CRLF, body: as received (transfer-encoding kept)
  std::chrono::system_clock::time_point started;  // when the request went out
};

struct WriterOptions {
  std::string dir;
  std::string prefix = "tweetkeeper";
  std::chrono::seconds rollover{1800};          // a new file after this long
  std::uint64_t max_bytes = 1'000'000'000;      // or once a file would pass this size
  std::string software = "tweetkeeper-worker";  // for warcinfo
  std::string operator_name;                    // for warcinfo, when given
  std::vector<std::string> secrets;             // tokens never to write
};

// Writes exchanges into rolling WARC files in one directory. Several processes may write into the
// same directory: each file's name carries the process id and host. Not thread-safe: one writer
// per thread, or a lock around Write.
class Writer {
 public:
  explicit Writer(WriterOptions options);
  ~Writer();
  Writer(const Writer&) = delete;
  Writer& operator=(const Writer&) = delete;

  // Appends the exchange's request and response records (linked by WARC-Concurrent-To) in one
  // write, opening or rolling over the file first as needed. Throws std::runtime_error when the
  // file cannot be written.
  void Write(const Exchange& exchange);
  // Finishes the current file: fsync, rename NAME.open to NAME, fsync the directory.
  void Close();
  // The current file's final name ("" when none is open).
  std::string CurrentName() const { return name_; }
  std::uint64_t RecordsWritten() const { return records_; }

  // Finishes the .open files of `dir` whose writer is gone (a process of this host that no longer
  // runs): cuts an incomplete gzip member at the end, then renames. Returns how many it finished.
  static int Recover(const std::string& dir);

 private:
  void Open(std::chrono::system_clock::time_point now);
  void Append(const std::string& bytes);

  WriterOptions options_;
  int fd_ = -1;
  std::string name_;
  std::string warcinfo_id_;
  std::chrono::system_clock::time_point opened_;
  std::uint64_t size_ = 0;
  std::uint64_t plain_size_ = 0;  // the file's length decompressed
  std::uint64_t info_size_ = 0;  // of the warcinfo record: a file holding no more is never rolled over
  std::uint64_t records_ = 0;
};

// A Writer shared by every thread of a worker (each request's records in one piece). A record that
// cannot be written is logged, not thrown: the batch's results still go to the database.
class Recorder {
 public:
  explicit Recorder(WriterOptions options) : writer_(std::move(options)) {}
  void Record(const Exchange& exchange);
  void Close();

 private:
  std::mutex mutex_;
  Writer writer_;
};

// The body of an HTTP message as its reader gets it: de-chunked (HttpPayload), then every other
// transfer coding (Transfer-Encoding: gzip, chunked) and every content coding undone, last
// applied first. nullopt when that cannot be done (a coding other than gzip, deflate or identity,
// more than 4 of them, a corrupt stream, more than 64 MiB).
std::optional<std::string> DecodedBody(std::string_view message);

// The one gzip member at the start of `in` inflated into *out (at most max_out bytes): returns its
// length in `in`, or 0 when it is cut short, corrupt or inflates to more than max_out.
std::size_t GunzipMember(std::string_view in, std::size_t max_out, std::string* out);

// What a Filler record's block says (its start, when the block is shorter).
inline constexpr std::string_view kFillerText =
    "padding: the next record starts a 64 KiB block of this file decompressed, where libarchive finds its header\r\n";

// A metadata record (uncompressed) of exactly `size` bytes that fills a 64 KiB block of a file up,
// so that the next record's header starts in the next block (see the top of this file); "" when
// none is that small.
std::string Filler(std::uint64_t size, const std::string& warcinfo_id, const std::string& date);

// fsync of a directory (a rename or unlink in it made durable); false when it failed.
bool FsyncDir(const std::string& dir);

// The byte length of the complete gzip members at the start of data (a multi-member file), and
// how many there are: what Recover() keeps of a file cut by a kill.
std::pair<std::size_t, int> CompleteMembers(std::string_view data);

}  // namespace tweetkeeper::worker::warc
