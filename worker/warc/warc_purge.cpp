#include "warc/warc_purge.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <stdexcept>

#include <openssl/evp.h>
#include <rapidjson/document.h>
#include <rapidjson/stringbuffer.h>
#include <rapidjson/writer.h>

#include "archive/warc.hpp"
#include "json/bounded.hpp"

namespace tweetkeeper::worker::warc {

namespace {

constexpr std::string_view kPurging = ".purging";         // NAME.warc.gz.purging: a file being written
constexpr std::size_t kMaxRecord = 80u << 20;             // a record decompressed (a 64 MiB body and more)
constexpr std::size_t kMaxHeader = 64u << 10;             // a record's header
constexpr std::size_t kMaxFields = 256;
constexpr std::uint64_t kMinGap = 1024;                   // room for a filler's header before a block ends

bool IEquals(std::string_view a, std::string_view b) {
  return a.size() == b.size() &&
         std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) { return std::tolower(x) == std::tolower(y); });
}

bool EndsWith(std::string_view s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.substr(s.size() - suffix.size()) == suffix;
}

std::string Errno(const std::string& what) { return what + ": " + std::strerror(errno); }

// The string member `name` of v, or "".
std::string Str(const rapidjson::Value& v, const char* name) {
  if (!v.IsObject()) return "";
  const auto m = v.FindMember(name);
  return m != v.MemberEnd() && m->value.IsString() ? std::string(m->value.GetString(), m->value.GetStringLength()) : "";
}

// The keys a Bluesky postView is known by: its at:// URI, and the same with its author's handle
// (a post whose author the database knows by handle only).
std::vector<std::string> BlueskyKeys(const rapidjson::Value& post) {
  std::vector<std::string> keys;
  const std::string uri = Str(post, "uri");
  if (uri.rfind("at://", 0) != 0) return keys;
  keys.push_back(uri);
  const auto author = post.FindMember("author");
  const std::string handle = author != post.MemberEnd() ? Str(author->value, "handle") : "";
  const std::size_t slash = uri.find('/', 5);
  if (!handle.empty() && slash != std::string::npos) keys.push_back("at://" + handle + uri.substr(slash));
  return keys;
}

// The host of a URL (http://HOST[:port]/...), or "".
std::string HostOf(const std::string& url) {
  const std::size_t scheme = url.find("://");
  if (scheme == std::string::npos) return "";
  const std::size_t from = scheme + 3;
  const std::size_t to = url.find_first_of("/?#", from);
  return url.substr(from, (to == std::string::npos ? url.size() : to) - from);
}

// The keys a Mastodon status is known by on the server asked (`host`, from the request's URL),
// and on the server its own URL names when that URL is the status's page there (https://HOST/@user/ID,
// or a boost's https://HOST/users/user/statuses/ID/activity: a worker given --instance HOST=URL asks
// another address for HOST's statuses).
void AddMastodonKeys(const rapidjson::Value& status, const std::string& host, std::vector<std::string>* keys) {
  const std::string id = Str(status, "id");
  if (id.empty()) return;
  keys->push_back("mastodon:" + host + "/" + id);
  const std::string url = Str(status, "url");
  const std::string own = HostOf(url);
  if (!own.empty() && own != host &&
      ((EndsWith(url, "/" + id) && url.find("/@") != std::string::npos) ||
       (EndsWith(url, "/statuses/" + id + "/activity") && url.find("/users/") != std::string::npos)))
    keys->push_back("mastodon:" + own + "/" + id);
}

// A Mastodon status's keys, and those of the status it boosts (gone, its boost goes too).
std::vector<std::string> MastodonKeys(const rapidjson::Value& status, const std::string& host) {
  std::vector<std::string> keys;
  AddMastodonKeys(status, host, &keys);
  if (keys.empty()) return keys;
  const auto reblog = status.FindMember("reblog");
  if (reblog != status.MemberEnd() && reblog->value.IsObject()) AddMastodonKeys(reblog->value, host, &keys);
  return keys;
}

std::vector<std::string> XKeys(const rapidjson::Value& tweet, const char* id_field) {
  const std::string id = Str(tweet, id_field);
  if (id.empty()) return {};
  return {"x:" + id};
}

}  // namespace

void PurgeSet::AddX(const std::string& id, GonePost post) { posts_["x:" + id] = std::move(post); }

void PurgeSet::AddBluesky(const std::string& author, const std::string& rkey, GonePost post) {
  posts_["at://" + author + "/app.bsky.feed.post/" + rkey] = std::move(post);
}

void PurgeSet::AddMastodon(const std::string& host, const std::string& status_id, GonePost post) {
  posts_["mastodon:" + host + "/" + status_id] = std::move(post);
}

const GonePost* PurgeSet::Find(const std::string& key) const {
  const auto it = posts_.find(key);
  return it == posts_.end() ? nullptr : &it->second;
}

Filtered FilterBody(std::string_view body, const std::string& host, const PurgeSet& set) {
  Filtered f;
  rapidjson::Document doc;
  f.error = json::Parse<rapidjson::kParseValidateEncodingFlag>(doc, body);
  if (!f.error.empty()) return f;
  // One post, known by `keys`: counted, and whether it is gone (then said in f.removed).
  const auto gone = [&](const std::vector<std::string>& keys) {
    if (keys.empty()) return false;
    ++f.posts;
    for (const std::string& key : keys)
      if (const GonePost* g = set.Find(key)) {
        f.removed.push_back({key, *g});
        return true;
      }
    return false;
  };
  // The posts of an array (each element's keys by keys_of), the gone ones erased.
  const auto filter = [&](rapidjson::Value& array, auto keys_of) {
    if (!array.IsArray()) return;
    for (auto it = array.Begin(); it != array.End();) {
      if (gone(keys_of(*it)))
        it = array.Erase(it);
      else
        ++it;
    }
  };
  const auto x_keys = [](const rapidjson::Value& v) { return XKeys(v, "id"); };
  const auto mastodon_keys = [&host](const rapidjson::Value& v) { return MastodonKeys(v, host); };
  if (doc.IsArray()) {
    // X v1.1 (id_str) or Mastodon (id) statuses.
    filter(doc, [&](const rapidjson::Value& v) {
      return !Str(v, "id_str").empty() ? XKeys(v, "id_str") : MastodonKeys(v, host);
    });
  } else if (doc.IsObject()) {
    auto member = [&doc](const char* name) -> rapidjson::Value* {
      const auto m = doc.FindMember(name);
      return m == doc.MemberEnd() ? nullptr : &m->value;
    };
    if (rapidjson::Value* data = member("data")) {  // X API v2
      if (data->IsArray())
        filter(*data, x_keys);
      else if (data->IsObject() && gone(x_keys(*data)))
        data->SetNull();
      if (rapidjson::Value* includes = member("includes"); includes && includes->IsObject()) {
        const auto tweets = includes->FindMember("tweets");
        if (tweets != includes->MemberEnd()) filter(tweets->value, x_keys);
      }
    } else if (rapidjson::Value* posts = member("posts")) {  // Bluesky getPosts
      filter(*posts, [](const rapidjson::Value& v) { return BlueskyKeys(v); });
    } else if (rapidjson::Value* feed = member("feed")) {  // a Bluesky feed: feed[].post
      filter(*feed, [](const rapidjson::Value& v) {
        const auto post = v.IsObject() ? v.FindMember("post") : v.MemberEnd();
        return post != v.MemberEnd() ? BlueskyKeys(post->value) : std::vector<std::string>{};
      });
    } else if (rapidjson::Value* id = member("id"); id && id->IsObject()) {  // X v1.1 map=true
      for (auto& m : id->GetObject())
        if (m.value.IsObject() && gone({"x:" + std::string(m.name.GetString(), m.name.GetStringLength())}))
          m.value.SetNull();
    } else if (!Str(doc, "id").empty() && (doc.HasMember("uri") || doc.HasMember("content"))) {  // one status
      gone(mastodon_keys(doc));
    }
  }
  if (!f.removed.empty() && f.removed.size() < f.posts) {
    rapidjson::StringBuffer out;
    rapidjson::Writer<rapidjson::StringBuffer> writer(out);
    doc.Accept(writer);
    f.body.assign(out.GetString(), out.GetSize());
  }
  return f;
}

const std::string* RecordHead::Field(std::string_view name) const {
  for (const auto& [k, v] : fields)
    if (IEquals(k, name)) return &v;
  return nullptr;
}

std::optional<RecordHead> ParseRecord(std::string_view record, std::string* error) {
  const std::size_t end = record.substr(0, kMaxHeader).find("\r\n\r\n");
  if (end == std::string_view::npos) {
    *error = "no header end within " + std::to_string(kMaxHeader) + " bytes";
    return std::nullopt;
  }
  std::string_view head = record.substr(0, end);
  const std::size_t first = head.find("\r\n");
  const std::string_view version = head.substr(0, first);
  if (version != "WARC/1.0" && version != "WARC/1.1") {
    *error = "not a WARC/1.0 or 1.1 record";
    return std::nullopt;
  }
  RecordHead r;
  std::optional<std::size_t> length;
  for (std::size_t at = first; at != std::string_view::npos && at < head.size();) {
    const std::size_t next = head.find("\r\n", at + 2);
    const std::string_view line = head.substr(at + 2, (next == std::string_view::npos ? head.size() : next) - at - 2);
    at = next;
    const std::size_t colon = line.find(':');
    if (colon == std::string_view::npos || colon == 0) {
      *error = "a header line without a field name";
      return std::nullopt;
    }
    if (r.fields.size() == kMaxFields) {
      *error = "more than " + std::to_string(kMaxFields) + " header fields";
      return std::nullopt;
    }
    std::string_view value = line.substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t')) value.remove_prefix(1);
    while (!value.empty() && (value.back() == ' ' || value.back() == '\t')) value.remove_suffix(1);
    r.fields.emplace_back(std::string(line.substr(0, colon)), std::string(value));
    if (IEquals(line.substr(0, colon), "Content-Length")) {
      if (value.empty() || value.size() > 12 || !std::all_of(value.begin(), value.end(), ::isdigit)) {
        *error = "a Content-Length that is no number";
        return std::nullopt;
      }
      length = std::stoull(std::string(value));
    }
  }
  if (!length) {
    *error = "no Content-Length";
    return std::nullopt;
  }
  r.header_length = end + 4;
  r.block_offset = end + 4;
  r.block_length = *length;
  if (record.size() - r.block_offset < r.block_length + 4 ||
      record.substr(r.block_offset + r.block_length, 4) != "\r\n\r\n") {
    *error = "its Content-Length does not end its block with CRLF CRLF";
    return std::nullopt;
  }
  return r;
}

namespace {

// The ids a record's field lists (WARC-Concurrent-To may repeat).
std::vector<std::string> Ids(const RecordHead& head, std::string_view name) {
  std::vector<std::string> ids;
  for (const auto& [k, v] : head.fields)
    if (IEquals(k, name)) ids.push_back(v);
  return ids;
}

// Whether a metadata record's block is a filler's (warc.hpp's Filler): kFillerText, cut short or
// followed by spaces, and at least its first word.
bool IsFiller(std::string_view block) {
  const std::size_t n = std::min(block.size(), kFillerText.size());
  return n >= 9 && block.substr(0, n) == kFillerText.substr(0, n) &&
         block.find_first_not_of(' ', n) == std::string_view::npos;
}

// What became of one record of a file.
enum class Fate { kCopy, kDrop, kRewrite, kRelink, kFiller };

struct Member {
  std::size_t offset = 0, length = 0;  // the gzip member in the file
  std::uint64_t plain = 0, header = 0;  // its record's length decompressed, and its header's
  std::string type, id, target;
  std::vector<std::string> concurrent, refers;
  Fate fate = Fate::kCopy;
  std::vector<Removed> removed;  // a response's gone posts
  std::string new_id;            // kRewrite: the new response's id
  std::string dropped_with;      // kDrop by a link: the response whose drop took it along
};

// A file mapped read-only (mmap), or an error.
class Mapped {
 public:
  Mapped(int fd, std::size_t size) : size_(size) {
    if (size_ == 0) return;
    void* p = mmap(nullptr, size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p != MAP_FAILED) data_ = static_cast<const char*>(p);
  }
  ~Mapped() {
    if (data_ != nullptr) munmap(const_cast<char*>(data_), size_);
  }
  Mapped(const Mapped&) = delete;
  Mapped& operator=(const Mapped&) = delete;
  bool ok() const { return data_ != nullptr || size_ == 0; }
  std::string_view view() const { return {data_, size_}; }

 private:
  const char* data_ = nullptr;
  std::size_t size_;
};

void WriteAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    const ssize_t n = write(fd, bytes.data(), bytes.size());
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(Errno("cannot write " + path));
    bytes.remove_prefix(static_cast<std::size_t>(n));
  }
}

// Appends lines to DIR/purge.log and fsyncs it (a line cut by a crash is ended first).
void AppendLog(const std::string& dir, const std::string& lines) {
  const std::string path = dir + "/purge.log";
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_APPEND | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (fd < 0) throw std::runtime_error(Errno("cannot open " + path));
  std::string out;
  struct stat st {};
  char last = '\n';
  if (fstat(fd, &st) == 0 && st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) == 1 && last != '\n') out = "\n";
  out += lines;
  try {
    WriteAll(fd, out, path);
  } catch (...) {
    close(fd);
    throw;
  }
  const bool synced = fsync(fd) == 0;
  close(fd);
  if (!synced) throw std::runtime_error(Errno("cannot sync " + path));
}

// One JSON line of purge.log.
class LogLine {
 public:
  LogLine() { w_.StartObject(); }
  LogLine& Add(const char* key, const std::string& value) {
    w_.Key(key);
    w_.String(value.data(), static_cast<rapidjson::SizeType>(value.size()));
    return *this;
  }
  LogLine& Add(const char* key, std::int64_t value) {
    w_.Key(key);
    w_.Int64(value);
    return *this;
  }
  std::string Done() {
    w_.EndObject();
    return std::string(buf_.GetString(), buf_.GetSize()) + "\n";
  }

 private:
  rapidjson::StringBuffer buf_;
  rapidjson::Writer<rapidjson::StringBuffer> w_{buf_};
};

// SHA-256 in hex, fed piece by piece: of the new file as it is written, which purge.log records
// before the rename so that a run after a crash can tell whether the rename happened.
class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new(), EVP_MD_CTX_free) {
    if (!ctx_ || EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) throw std::runtime_error("SHA-256 failed");
  }
  void Add(std::string_view data) { EVP_DigestUpdate(ctx_.get(), data.data(), data.size()); }
  std::string Hex() {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    EVP_DigestFinal_ex(ctx_.get(), md, &n);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out;
    for (unsigned int i = 0; i < n; ++i) out += {kHex[md[i] >> 4], kHex[md[i] & 15]};
    return out;
  }

 private:
  std::unique_ptr<EVP_MD_CTX, void (*)(EVP_MD_CTX*)> ctx_;
};

// The SHA-256 of a file (never through a symbolic link), or "" when it cannot be read.
std::string FileSha256(const std::string& path) {
  const int fd = open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
  if (fd < 0) return "";
  Sha256 h;
  std::string buf(1 << 16, '\0');
  ssize_t n;
  while ((n = read(fd, buf.data(), buf.size())) > 0) h.Add(std::string_view(buf.data(), static_cast<std::size_t>(n)));
  close(fd);
  return n == 0 ? h.Hex() : "";
}

// Finishes purge.log after a crash: a run's file whose removals were logged (pending, with the
// new file's SHA-256) but not its replacement gets the line it lacks: "replaced" when the file
// is the new one (the rename happened), "abandoned" when it is still the old one (the run after
// purges it again, under its own run id).
void FinishLog(const std::string& dir) {
  std::ifstream in(dir + "/purge.log");
  if (!in) return;
  std::unordered_map<std::string, std::pair<std::string, std::string>> pending;  // run + file -> file, sha256
  std::string line;
  while (std::getline(in, line)) {
    if (line.size() > (1u << 20)) continue;
    rapidjson::Document doc;
    if (!json::Parse(doc, line).empty() || !doc.IsObject()) continue;  // (a line a crash cut)
    const std::string run = Str(doc, "run"), file = Str(doc, "file"), action = Str(doc, "action");
    const std::string key = run + "\n" + file;
    if (Str(doc, "state") == "pending" && !Str(doc, "new_sha256").empty())
      pending[key] = {file, Str(doc, "new_sha256")};
    else if (action == "replaced" || action == "abandoned")
      pending.erase(key);
  }
  std::string lines;
  for (const auto& [key, value] : pending) {
    const bool replaced = FileSha256(dir + "/" + value.first) == value.second;
    lines += LogLine()
                 .Add("run", key.substr(0, key.find('\n')))
                 .Add("at", WarcDate(std::chrono::system_clock::now()))
                 .Add("file", value.first)
                 .Add("action", replaced ? "replaced" : "abandoned")
                 .Add("note", replaced ? "found replaced by a later run (the run was stopped after its rename)"
                                       : "the run was stopped before its rename: the file is as it was")
                 .Done();
  }
  if (!lines.empty()) AppendLog(dir, lines);
}

// The HTTP response `block` with `body` in place of its body, sent with no transfer or content
// coding: those headers dropped, Content-Length set.
std::string WithBody(std::string_view block, const std::string& body) {
  const std::size_t end = block.find("\r\n\r\n");
  std::string_view head = block.substr(0, end);
  std::string out(head.substr(0, head.find("\r\n")));
  for (std::size_t at = head.find("\r\n"); at != std::string_view::npos;) {
    const std::size_t next = head.find("\r\n", at + 2);
    const std::string_view line = head.substr(at + 2, (next == std::string_view::npos ? head.size() : next) - at - 2);
    at = next;
    const std::string_view name = line.substr(0, line.find(':'));
    if (IEquals(name, "Content-Length") || IEquals(name, "Transfer-Encoding") || IEquals(name, "Content-Encoding"))
      continue;
    out += "\r\n";
    out.append(line);
  }
  out += "\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
  return out;
}

// Purges one file (see PurgeDirectory).
class FilePurge {
 public:
  FilePurge(const PurgeOptions& options, const PurgeSet& set, std::string name, PurgeStats& stats, int& steps)
      : o_(options), set_(set), name_(std::move(name)), path_(o_.dir + "/" + name_), stats_(stats), steps_(steps) {}

  // Leaves the file as it is, with an error, when it cannot be read or purged.
  void Run() {
    const int fd = open(path_.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
    if (fd < 0) return Fail(errno == ELOOP ? "a symbolic link" : std::strerror(errno));
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
      close(fd);
      return Fail("not a regular file of this user");
    }
    if (st.st_nlink != 1) {
      close(fd);
      return Fail("it has " + std::to_string(st.st_nlink) +
                  " links: replacing this name would leave the gone posts under the others");
    }
    Mapped file(fd, static_cast<std::size_t>(st.st_size));
    close(fd);
    if (!file.ok()) return Fail(Errno("cannot map it"));
    data_ = file.view();
    ++stats_.files_seen;
    try {
      if (!Scan()) return;
      if (!Decide()) return;  // nothing to purge: untouched
      if (o_.dry_run) {
        Log(false);
        return;
      }
      Write();
    } catch (const std::exception& e) {
      unlink(temp_.c_str());
      Fail(e.what());
    }
  }

 private:
  void Fail(const std::string& why) {
    ++stats_.files_failed;
    stats_.errors.push_back(name_ + ": left as it is: " + why);
  }

  // Tests: SIGKILL after the Nth step of the whole run (TWEETKEEPER_WARC_PURGE_KILL_AFTER).
  void Step() {
    if (o_.kill_after_step > 0 && ++steps_ == o_.kill_after_step) raise(SIGKILL);
  }

  std::string Plain(const Member& m) {
    std::string plain;
    if (GunzipMember(data_.substr(m.offset, m.length), kMaxRecord, &plain) != m.length)
      throw std::runtime_error("a gzip member changed under the purge");
    return plain;
  }

  // Reads every member and what each response holds. false (with an error) when the file is not
  // wholly readable: it is then left as it is.
  bool Scan() {
    std::string plain, why;
    for (std::size_t at = 0; at < data_.size();) {
      const std::size_t used = GunzipMember(data_.substr(at), kMaxRecord, &plain);
      if (used == 0) {
        Fail("the gzip member at byte " + std::to_string(at) + " is corrupt, cut short or larger than " +
             std::to_string(kMaxRecord >> 20) + " MiB decompressed");
        return false;
      }
      const std::optional<RecordHead> head = ParseRecord(plain, &why);
      if (!head) {
        Fail("the record at byte " + std::to_string(at) + ": " + why);
        return false;
      }
      Member m;
      m.offset = at;
      m.length = used;
      m.plain = plain.size();
      m.header = head->header_length;
      const std::string* type = head->Field("WARC-Type");
      const std::string* id = head->Field("WARC-Record-ID");
      m.type = type ? *type : "";
      m.id = id ? *id : "";
      if (const std::string* t = head->Field("WARC-Target-URI")) m.target = *t;
      m.concurrent = Ids(*head, "WARC-Concurrent-To");
      m.refers = Ids(*head, "WARC-Refers-To");
      const std::string_view block(plain.data() + head->block_offset, head->block_length);
      const std::string* content_type = head->Field("Content-Type");
      if (m.type == "metadata" && content_type && *content_type == "text/plain" && IsFiller(block)) m.fate = Fate::kFiller;
      if (members_.empty()) {
        if (m.type != "warcinfo") {
          Fail("its first record is no warcinfo record");
          return false;
        }
        warcinfo_id_ = m.id;
      }
      if (m.type == "response" && content_type && content_type->rfind("application/http", 0) == 0) {
        const std::optional<std::string> body = DecodedBody(block);
        Filtered f = body ? FilterBody(*body, HostOf(m.target), set_) : Filtered{};
        if (!body || !f.error.empty()) ++stats_.responses_unread;
        if (!f.removed.empty()) m.fate = f.removed.size() == f.posts ? Fate::kDrop : Fate::kRewrite;
        m.removed = std::move(f.removed);
      }
      members_.push_back(std::move(m));
      at += used;
    }
    return true;
  }

  // Which records go, which are written again. false when nothing changes.
  bool Decide() {
    std::unordered_map<std::string, Member*> by_id;
    std::vector<Member*> todo;  // dropped, their links not followed yet
    bool any = false;
    for (Member& m : members_) {
      if (!m.id.empty()) by_id.emplace(m.id, &m);
      if (m.fate == Fate::kDrop) todo.push_back(&m), any = true;
      if (m.fate == Fate::kRewrite) renamed_[m.id] = m.new_id = NewRecordId(), any = true;
    }
    if (!any) return false;
    // What names a record: WARC-Concurrent-To is a link both ways, WARC-Refers-To one way.
    std::unordered_map<std::string, std::vector<Member*>> named_by;
    for (Member& m : members_)
      for (const auto* ids : {&m.concurrent, &m.refers})
        for (const std::string& other : *ids) named_by[other].push_back(&m);
    // A dropped response's request, and every record that refers to or was made with a dropped
    // one, and so on (the warcinfo record stays, whatever names it).
    while (!todo.empty()) {
      Member* d = todo.back();
      todo.pop_back();
      std::vector<Member*> linked = named_by[d->id];
      for (const std::string& other : d->concurrent)
        if (const auto it = by_id.find(other); it != by_id.end()) linked.push_back(it->second);
      for (Member* m : linked) {
        if (m->fate == Fate::kDrop || m->type == "warcinfo") continue;
        m->fate = Fate::kDrop;
        m->removed.clear();
        renamed_.erase(m->id);
        m->new_id.clear();
        m->dropped_with = d->dropped_with.empty() ? d->id : d->dropped_with;
        todo.push_back(m);
      }
    }
    for (Member& m : members_) {
      if (m.fate == Fate::kDrop && !m.dropped_with.empty()) also_dropped_[m.dropped_with].push_back(m.id);
      if (m.fate != Fate::kCopy) continue;
      for (const auto* ids : {&m.concurrent, &m.refers})
        for (const std::string& other : *ids)
          if (renamed_.count(other) > 0) m.fate = Fate::kRelink;
    }
    return true;
  }

  // The purge.log lines of this file's removals (pending: before the rename).
  void Log(bool pending) {
    std::string lines;
    const std::string now = WarcDate(std::chrono::system_clock::now());
    for (const Member& m : members_) {
      if (m.fate == Fate::kDrop && m.type == "response") {
        for (const Removed& r : m.removed) lines += Line(now, m, r, "dropped", pending);
      } else if (m.fate == Fate::kRewrite) {
        for (const Removed& r : m.removed) lines += Line(now, m, r, "rewritten", pending);
      }
    }
    if (o_.dry_run) {
      stats_.planned += lines;
      return;
    }
    AppendLog(o_.dir, lines);
  }

  std::string Line(const std::string& now, const Member& m, const Removed& r, const char* action, bool pending) {
    LogLine line;
    line.Add("run", o_.run_id).Add("at", now).Add("file", name_).Add("action", action);
    line.Add("post", r.key).Add("post_id", r.post.post_id).Add("reason", r.post.reason);
    if (!r.post.detail.empty()) line.Add("detail", r.post.detail);
    line.Add("record", m.id).Add("target", m.target);
    std::string with;
    if (const auto it = also_dropped_.find(m.id); it != also_dropped_.end())
      for (const std::string& other : it->second) with += (with.empty() ? "" : " ") + other;
    if (!with.empty()) line.Add("also_dropped", with);
    if (!m.new_id.empty()) line.Add("new_record", m.new_id);
    if (pending) line.Add("new_sha256", new_sha256_);
    line.Add("state", pending ? "pending" : "dry-run");
    return line.Done();
  }

  // Places a record of `plain` bytes whose header is `header` bytes long at the end of the new
  // file, after a filler when its header would cross a 64 KiB block or it would end too close to
  // one for the next record's filler (see warc.hpp).
  void Place(std::uint64_t header, std::uint64_t plain) {
    const auto fits = [&](std::uint64_t start) {
      const std::uint64_t in_block = start % kReaderBlock;
      const std::uint64_t end_gap = (kReaderBlock - (start + plain) % kReaderBlock) % kReaderBlock;
      return in_block + header <= kReaderBlock && (end_gap == 0 || end_gap >= kMinGap);
    };
    if (fits(at_)) return;
    for (std::uint64_t f = kMinGap / 2; f <= 2 * kReaderBlock; f += 64) {
      if (!fits(at_ + f)) continue;
      const std::string filler = Filler(f, warcinfo_id_, WarcDate(std::chrono::system_clock::now()));
      if (filler.empty()) continue;
      Emit(Gzip(filler), filler.size());
      return;
    }
    throw std::runtime_error("no filler places a record of header " + std::to_string(header) + " bytes");
  }

  void Emit(const std::string& gz, std::uint64_t plain) {
    WriteAll(out_, gz, temp_);
    hash_.Add(gz);
    at_ += plain;
  }

  void EmitRecord(const std::string& plain) {
    Place(plain.find("\r\n\r\n") + 4, plain.size());
    Emit(Gzip(plain), plain.size());
  }

  // The response without its gone posts, and the metadata record that says so.
  void Rewrite(const Member& m) {
    const std::string plain = Plain(m);
    std::string why;
    const std::optional<RecordHead> head = ParseRecord(plain, &why);
    if (!head) throw std::runtime_error("a record changed under the purge: " + why);
    const std::string_view block(plain.data() + head->block_offset, head->block_length);
    const std::optional<std::string> body = DecodedBody(block);
    if (!body) throw std::runtime_error("a response changed under the purge");
    const Filtered f = FilterBody(*body, HostOf(m.target), set_);
    const std::string message = Redact(WithBody(block, f.body), {});
    std::vector<std::pair<std::string, std::string>> fields;
    for (const auto& [k, v] : head->fields) {
      if (IEquals(k, "Content-Length") || IEquals(k, "WARC-Block-Digest") || IEquals(k, "WARC-Payload-Digest")) continue;
      fields.emplace_back(k, IEquals(k, "WARC-Record-ID") ? m.new_id : v);
    }
    fields.emplace_back("WARC-Block-Digest", Sha1Base32(message));
    if (const auto payload = HttpPayload(message)) fields.emplace_back("WARC-Payload-Digest", Sha1Base32(*payload));
    EmitRecord(warc::Record(fields, message));
    std::string note =
        "tweetkeeper-purge: the response this record refers to stands for response " + m.id +
        " as it was received, less the posts named below, found gone at their source; its body is decoded (no "
        "transfer or content coding) and written again, its digests are its own\r\n"
        "tweetkeeper-purged-at: " + WarcDate(std::chrono::system_clock::now()) + "\r\n";
    for (const Removed& r : f.removed) note += "tweetkeeper-removed-post: " + r.key + " " + r.post.reason + "\r\n";
    const std::string* warcinfo = head->Field("WARC-Warcinfo-ID");
    std::vector<std::pair<std::string, std::string>> meta = {{"WARC-Type", "metadata"},
                                                             {"WARC-Record-ID", NewRecordId()},
                                                             {"WARC-Date", WarcDate(std::chrono::system_clock::now())},
                                                             {"WARC-Target-URI", m.target},
                                                             {"WARC-Refers-To", m.new_id}};
    if (warcinfo) meta.emplace_back("WARC-Warcinfo-ID", *warcinfo);
    meta.emplace_back("Content-Type", "application/warc-fields");
    meta.emplace_back("WARC-Block-Digest", Sha1Base32(note));
    EmitRecord(warc::Record(meta, note));
    ++stats_.responses_rewritten;
  }

  // A record whose links name a rewritten response: the same block, the new id in the links.
  void Relink(const Member& m) {
    const std::string plain = Plain(m);
    std::string why;
    const std::optional<RecordHead> head = ParseRecord(plain, &why);
    if (!head) throw std::runtime_error("a record changed under the purge: " + why);
    std::vector<std::pair<std::string, std::string>> fields;
    for (const auto& [k, v] : head->fields) {
      if (IEquals(k, "Content-Length")) continue;
      const auto renamed = renamed_.find(v);
      const bool link = IEquals(k, "WARC-Concurrent-To") || IEquals(k, "WARC-Refers-To");
      fields.emplace_back(k, link && renamed != renamed_.end() ? renamed->second : v);
    }
    EmitRecord(warc::Record(fields, std::string_view(plain).substr(head->block_offset, head->block_length)));
  }

  void Write() {
    temp_ = path_ + std::string(kPurging);
    out_ = open(temp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (out_ < 0) throw std::runtime_error(Errno("cannot create " + temp_));
    struct Closer {
      int& fd;
      ~Closer() {
        if (fd >= 0) close(fd);
        fd = -1;
      }
    } closer{out_};
    std::uint64_t dropped = 0, posts = 0;
    for (const Member& m : members_) {
      switch (m.fate) {
        case Fate::kFiller:
          break;  // placed anew where needed
        case Fate::kDrop:
          ++dropped;
          posts += m.removed.size();
          break;
        case Fate::kRewrite:
          posts += m.removed.size();
          Rewrite(m);
          break;
        case Fate::kRelink:
          Relink(m);
          break;
        case Fate::kCopy:
          Place(m.header, m.plain);
          Emit(std::string(data_.substr(m.offset, m.length)), m.plain);
          break;
      }
      if (&m == &members_.front()) Step();  // 1: the new file begun
    }
    Step();  // 2: written
    if (fsync(out_) != 0) throw std::runtime_error(Errno("cannot sync " + temp_));
    Step();  // 3: synced
    new_sha256_ = hash_.Hex();
    Log(true);
    Step();  // 4: what goes logged, with the new file's SHA-256
    if (rename(temp_.c_str(), path_.c_str()) != 0) throw std::runtime_error(Errno("cannot rename " + temp_));
    Step();  // 5: renamed over the old file
    if (!FsyncDir(o_.dir)) throw std::runtime_error(Errno("cannot sync the directory " + o_.dir));
    Step();  // 6: the rename durable
    AppendLog(o_.dir, LogLine()
                          .Add("run", o_.run_id)
                          .Add("at", WarcDate(std::chrono::system_clock::now()))
                          .Add("file", name_)
                          .Add("action", "replaced")
                          .Add("new_sha256", new_sha256_)
                          .Add("records_dropped", static_cast<std::int64_t>(dropped))
                          .Add("posts_removed", static_cast<std::int64_t>(posts))
                          .Done());
    Step();  // 7: logged
    ++stats_.files_rewritten;
    stats_.records_dropped += dropped;
    stats_.posts_removed += posts;
  }

  const PurgeOptions& o_;
  const PurgeSet& set_;
  std::string name_, path_, temp_;
  PurgeStats& stats_;
  int& steps_;
  std::string_view data_;
  std::vector<Member> members_;
  std::unordered_map<std::string, std::string> renamed_;  // rewritten response: old id -> new id
  std::unordered_map<std::string, std::vector<std::string>> also_dropped_;  // response -> its linked records
  std::string warcinfo_id_;
  int out_ = -1;
  std::uint64_t at_ = 0;  // the new file's length decompressed
  Sha256 hash_;           // of the new file
  std::string new_sha256_;
};

}  // namespace

PurgeStats PurgeDirectory(const PurgeOptions& options, const PurgeSet& set) {
  PurgeStats stats;
  const std::string lock_path = options.dir + "/.purge.lock";
  const int lock = open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0600);
  if (lock < 0) throw std::runtime_error(Errno("cannot open " + lock_path));
  if (flock(lock, LOCK_EX | LOCK_NB) != 0) {
    close(lock);
    throw std::runtime_error("another purge of " + options.dir + " is running (it holds " + lock_path + ")");
  }
  struct Unlock {
    int fd;
    ~Unlock() { close(fd); }  // (closing releases the lock)
  } unlock{lock};
  DIR* d = opendir(options.dir.c_str());
  if (d == nullptr) throw std::runtime_error(Errno("cannot read the WARC directory " + options.dir));
  std::vector<std::string> names, leftovers;
  while (dirent* e = readdir(d)) {
    const std::string n = e->d_name;
    if (n.size() > 8 && n[0] != '.' && EndsWith(n, ".warc.gz")) names.push_back(n);
    if (EndsWith(n, std::string(".warc.gz") + std::string(kPurging))) leftovers.push_back(n);
  }
  closedir(d);
  // A killed purge's half-written files: the files they were to replace are still there.
  for (const std::string& n : leftovers) unlink((options.dir + "/" + n).c_str());
  if (!leftovers.empty()) FsyncDir(options.dir);
  if (!options.dry_run) FinishLog(options.dir);
  std::sort(names.begin(), names.end());
  int steps = 0;
  for (const std::string& n : names) FilePurge(options, set, n, stats, steps).Run();
  return stats;
}

}  // namespace tweetkeeper::worker::warc
