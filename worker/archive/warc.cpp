#include "archive/warc.hpp"

#include <dirent.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <ctime>
#include <limits>
#include <random>

#include <spdlog/spdlog.h>
#include <stdexcept>

#include "text/utc_time.hpp"

namespace tweetkeeper::worker::warc {

namespace {

std::string Lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return std::tolower(c); });
  return out;
}

// A marker as long as the secret it replaces.
std::string Marker(std::size_t n) {
  if (n >= 10) return "[redacted" + std::string(n - 10, '-') + "]";
  return std::string(n, '*');
}

int HexDigit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// The character that text's bytes from `at` stand for, unescaped once, and how many bytes they
// are: %XX (a URL's), \uXXXX, \/, \" and \\ (JSON's; \u of a non-ASCII character is a NUL here,
// which no token holds); any other byte stands for itself.
std::pair<char, std::size_t> Unescaped(std::string_view text, std::size_t at) {
  const char c = text[at];
  const std::size_t left = text.size() - at;
  if (c == '%' && left >= 3 && HexDigit(text[at + 1]) >= 0 && HexDigit(text[at + 2]) >= 0)
    return {static_cast<char>(HexDigit(text[at + 1]) * 16 + HexDigit(text[at + 2])), 3};
  if (c != '\\' || left < 2) return {c, 1};
  const char e = text[at + 1];
  if (e == '/' || e == '"' || e == '\\') return {e, 2};
  if (e != 'u' || left < 6) return {c, 1};
  unsigned code = 0;
  for (std::size_t i = at + 2; i < at + 6; ++i) {
    const int d = HexDigit(text[i]);
    if (d < 0) return {c, 1};
    code = code * 16 + static_cast<unsigned>(d);
  }
  return {code < 0x80 ? static_cast<char>(code) : '\0', 6};
}

// The [begin, end) in text of every occurrence of secret, read as it is (escaped false) or
// unescaped once (Unescaped), left to right, not overlapping. Linear in text whatever it holds:
// Knuth-Morris-Pratt over the characters read, with the offsets where the last secret.size() of
// them began kept in a ring (a hostile 16 MiB body costs 16 MiB of steps, not 16 MiB times the
// token's length).
std::vector<std::pair<std::size_t, std::size_t>> Occurrences(std::string_view text, std::string_view secret,
                                                             bool escaped) {
  std::vector<std::pair<std::size_t, std::size_t>> found;
  const std::size_t m = secret.size();
  if (m == 0) return found;
  std::vector<std::size_t> fail(m, 0);  // the longest proper border of secret[0..i]
  for (std::size_t i = 1, k = 0; i < m; ++i) {
    while (k > 0 && secret[i] != secret[k]) k = fail[k - 1];
    if (secret[i] == secret[k]) ++k;
    fail[i] = k;
  }
  std::vector<std::size_t> began(m, 0);  // began[j % m]: where the j-th character read began
  std::size_t matched = 0, read = 0;
  for (std::size_t at = 0; at < text.size();) {
    const auto [c, length] = escaped ? Unescaped(text, at) : std::pair<char, std::size_t>{text[at], 1};
    began[read % m] = at;
    ++read;
    at += length;
    while (matched > 0 && c != secret[matched]) matched = fail[matched - 1];
    if (c == secret[matched]) ++matched;
    if (matched == m) {
      found.emplace_back(began[(read - m) % m], at);
      matched = 0;
    }
  }
  return found;
}

// Whether text holds secret as it is or unescaped once.
bool Holds(std::string_view text, const std::string& secret) {
  return !Occurrences(text, secret, false).empty() || !Occurrences(text, secret, true).empty();
}

std::string Hostname() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0 || buf[0] == '\0') return "localhost";
  std::string h(buf);
  // The name's separators ('-', '~') and '/' stay out of the host part.
  for (char& c : h)
    if (c == '/' || c == '~' || c == '-') c = '_';
  return h;
}

std::string ErrnoText(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

constexpr std::string_view kOpenSuffix = ".open";

}  // namespace

bool FsyncDir(const std::string& dir) {
  int d = open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (d < 0) return false;
  const bool synced = fsync(d) == 0;
  close(d);
  return synced;
}

std::string Filler(std::uint64_t size, const std::string& warcinfo_id, const std::string& date) {
  const std::string_view kText = kFillerText;
  const std::string id = NewRecordId();
  long long block_len = 0;
  for (int attempt = 0; attempt < 4 && block_len >= 0; ++attempt) {
    std::string block(kText.substr(0, std::min<std::size_t>(kText.size(), static_cast<std::size_t>(block_len))));
    block.resize(static_cast<std::size_t>(block_len), ' ');
    std::string rec = Record({{"WARC-Type", "metadata"},
                              {"WARC-Record-ID", id},
                              {"WARC-Date", date},
                              {"WARC-Warcinfo-ID", warcinfo_id},
                              {"Content-Type", "text/plain"},
                              {"WARC-Block-Digest", Sha1Base32(block)}},
                             block);
    if (rec.size() == size) return rec;
    block_len += static_cast<long long>(size) - static_cast<long long>(rec.size());
  }
  return "";
}

namespace {

bool EndsWith(const std::string& s, std::string_view suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

std::string Sha1Base32(std::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(data.data(), data.size(), md, &len, EVP_sha1(), nullptr) != 1 || len != 20)
    throw std::runtime_error("SHA-1 failed");
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";
  std::string out = "sha1:";
  // 160 bits = 32 groups of 5, no padding.
  std::uint32_t buffer = 0;
  int bits = 0;
  for (unsigned int i = 0; i < len; ++i) {
    buffer = (buffer << 8) | md[i];
    bits += 8;
    while (bits >= 5) {
      out += kAlphabet[(buffer >> (bits - 5)) & 31];
      bits -= 5;
    }
  }
  return out;
}

std::optional<std::string> HttpPayload(std::string_view message) {
  std::size_t end = message.find("\r\n\r\n");
  if (end == std::string_view::npos) return std::nullopt;
  std::string_view head = message.substr(0, end + 2);
  std::string_view body = message.substr(end + 4);
  bool chunked = false;
  std::size_t pos = head.find("\r\n");  // past the request or status line
  while (pos != std::string_view::npos && pos + 2 < head.size()) {
    std::size_t next = head.find("\r\n", pos + 2);
    std::string_view line = head.substr(pos + 2, next - pos - 2);
    std::size_t colon = line.find(':');
    if (colon != std::string_view::npos && Lower(line.substr(0, colon)) == "transfer-encoding" &&
        Lower(line.substr(colon + 1)).find("chunked") != std::string::npos)
      chunked = true;
    pos = next;
  }
  if (!chunked) return std::string(body);
  std::string out;
  std::size_t at = 0;
  while (true) {
    std::size_t eol = body.find("\r\n", at);
    if (eol == std::string_view::npos) return std::nullopt;
    std::string_view size_line = body.substr(at, eol - at);
    size_line = size_line.substr(0, size_line.find(';'));
    while (!size_line.empty() && (size_line.back() == ' ' || size_line.back() == '\t')) size_line.remove_suffix(1);
    if (size_line.empty() || size_line.size() > 15) return std::nullopt;
    std::size_t size = 0;
    for (char c : size_line) {
      const int v = HexDigit(c);
      if (v < 0) return std::nullopt;
      size = size * 16 + static_cast<std::size_t>(v);
    }
    at = eol + 2;
    if (size == 0) return out;  // trailers, if any, are not payload
    if (body.size() - at < size + 2 || body.substr(at + size, 2) != "\r\n") return std::nullopt;
    out.append(body.substr(at, size));
    at += size + 2;
  }
}

std::string Redact(std::string_view message, const std::vector<std::string>& secrets) {
  std::string out(message);
  std::size_t head_end = out.find("\r\n\r\n");
  std::size_t limit = head_end == std::string::npos ? out.size() : head_end;
  for (std::size_t pos = 0; pos < limit;) {
    std::size_t eol = out.find("\r\n", pos);
    if (eol == std::string::npos || eol > limit) eol = limit;
    std::size_t colon = out.find(':', pos);
    if (colon != std::string::npos && colon < eol && Lower(std::string_view(out).substr(pos, colon - pos)) == "authorization") {
      std::size_t v = colon + 1;
      while (v < eol && (out[v] == ' ' || out[v] == '\t')) ++v;
      if (eol > v) out.replace(v, eol - v, Marker(eol - v));
    }
    pos = eol + 2;
  }
  // Each token as it is, then in the escaped forms a server may echo it in (a URL's %2F, JSON's
  // \/ or \u002f): each replaced by a marker as long as the bytes it took.
  for (const std::string& secret : secrets) {
    if (secret.size() < 4) continue;
    for (const bool escaped : {false, true})
      for (const auto& [begin, end] : Occurrences(out, secret, escaped))
        out.replace(begin, end - begin, Marker(end - begin));
  }
  return out;
}

std::string NewRecordId() {
  std::random_device rd;
  unsigned char b[16];
  for (int i = 0; i < 16; i += 4) {
    std::uint32_t r = rd();
    std::memcpy(b + i, &r, 4);
  }
  b[6] = static_cast<unsigned char>((b[6] & 0x0f) | 0x40);
  b[8] = static_cast<unsigned char>((b[8] & 0x3f) | 0x80);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out = "<urn:uuid:";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out += '-';
    out += kHex[b[i] >> 4];
    out += kHex[b[i] & 15];
  }
  return out + ">";
}

std::string WarcDate(std::chrono::system_clock::time_point t) {
  return Rfc3339Utc(std::chrono::system_clock::to_time_t(t));
}

std::string Record(const std::vector<std::pair<std::string, std::string>>& fields, std::string_view block) {
  std::string out = "WARC/1.0\r\n";
  for (const auto& [name, value] : fields) out += name + ": " + value + "\r\n";
  out += "Content-Length: " + std::to_string(block.size()) + "\r\n\r\n";
  out.append(block);
  out += "\r\n\r\n";
  return out;
}

std::string Gzip(std::string_view data) {
  z_stream z{};
  if (deflateInit2(&z, Z_BEST_SPEED, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) != Z_OK) throw std::runtime_error("deflateInit2 failed");
  std::string out(deflateBound(&z, data.size()) + 32, '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(data.data()));
  z.avail_in = static_cast<uInt>(data.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data());
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  std::size_t n = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw std::runtime_error("deflate failed");
  out.resize(n);
  return out;
}

namespace {

// Inflates the one compressed member at the start of `in` (window_bits as for inflateInit2: 15 + 16
// gzip, 15 + 32 gzip or zlib by its header), handing its output to keep(data, size) piece by
// piece; keep returns false to stop (too much). Returns the member's length in `in`, or 0 when
// the member is cut short or corrupt, or keep stopped. (DecodedBody keeps what it inflates;
// CompleteMembers only walks the members of a file.)
template <typename Keep>
std::size_t InflateMember(std::string_view in, int window_bits, Keep&& keep) {
  z_stream z{};
  if (inflateInit2(&z, window_bits) != Z_OK) return 0;
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data()));
  z.avail_in = static_cast<uInt>(std::min<std::size_t>(in.size(), std::numeric_limits<uInt>::max()));
  std::string chunk(64 * 1024, '\0');
  int rc = Z_OK;
  while (rc == Z_OK) {  // (Z_BUF_ERROR, no progress with room to write: the input ends too soon)
    z.next_out = reinterpret_cast<Bytef*>(chunk.data());
    z.avail_out = static_cast<uInt>(chunk.size());
    rc = inflate(&z, Z_NO_FLUSH);
    if ((rc == Z_OK || rc == Z_STREAM_END) && !keep(chunk.data(), chunk.size() - z.avail_out)) rc = Z_MEM_ERROR;
  }
  const std::size_t used = z.total_in;
  inflateEnd(&z);
  return rc == Z_STREAM_END ? used : 0;
}

// in inflated (gzip or zlib, by its header; gzip may hold several members, one after the other),
// or nullopt when it is corrupt or inflates to more than 64 MiB.
std::optional<std::string> Inflated(std::string_view in) {
  constexpr std::size_t kMaxInflated = 64u << 20;
  std::string out;
  for (std::size_t at = 0; at < in.size();) {
    const std::size_t used = InflateMember(in.substr(at), 15 + 32, [&](const char* data, std::size_t size) {
      out.append(data, size);
      return out.size() <= kMaxInflated;
    });
    if (used == 0) return std::nullopt;
    at += used;
  }
  return out;
}

// The codings that every `name:` header line of head (lower case, from its first CRLF) lists, in
// the order they were applied, without blanks or parameters.
std::vector<std::string> Codings(const std::string& head, const std::string& name) {
  std::vector<std::string> codings;
  const std::string field = "\r\n" + name + ":";
  for (std::size_t at = head.find(field); at != std::string::npos; at = head.find(field, at + 1)) {
    const std::size_t from = at + field.size(), to = std::min(head.find("\r\n", from), head.size());
    std::string coding;
    for (std::size_t i = from; i <= to; ++i) {
      if (i == to || head[i] == ',') {
        coding = coding.substr(0, coding.find(';'));
        if (!coding.empty()) codings.push_back(coding);
        coding.clear();
      } else if (head[i] != ' ' && head[i] != '\t') {
        coding += head[i];
      }
    }
  }
  return codings;
}

}  // namespace

std::optional<std::string> DecodedBody(std::string_view message) {
  std::optional<std::string> body = HttpPayload(message);
  if (!body) return std::nullopt;
  std::string head(message.substr(0, message.find("\r\n\r\n")));
  std::transform(head.begin(), head.end(), head.begin(), [](unsigned char c) { return std::tolower(c); });
  std::vector<std::string> codings = Codings(head, "content-encoding");
  for (std::string& transfer : Codings(head, "transfer-encoding")) codings.push_back(std::move(transfer));
  if (!codings.empty() && codings.back() == "chunked") codings.pop_back();  // (HttpPayload's)
  if (codings.size() > 4) return std::nullopt;
  for (auto coding = codings.rbegin(); coding != codings.rend(); ++coding) {
    if (*coding == "identity") continue;
    if (*coding != "gzip" && *coding != "x-gzip" && *coding != "deflate") return std::nullopt;
    body = Inflated(*body);
    if (!body) return std::nullopt;
  }
  return body;
}

namespace {

// Whether a response's body, as its reader decodes it, holds a secret (4 bytes or more), or cannot
// be decoded to tell.
bool CarriesSecret(std::string_view response, const std::vector<std::string>& secrets) {
  bool any = false;
  for (const std::string& s : secrets) any = any || s.size() >= 4;
  if (!any) return false;
  const std::optional<std::string> body = DecodedBody(response);
  if (!body) return true;
  for (const std::string& s : secrets)
    if (s.size() >= 4 && Holds(*body, s)) return true;
  return false;
}

}  // namespace

std::size_t GunzipMember(std::string_view in, std::size_t max_out, std::string* out) {
  out->clear();
  return InflateMember(in, 15 + 16, [&](const char* data, std::size_t size) {
    if (size > max_out - out->size()) return false;
    out->append(data, size);
    return true;
  });
}

std::pair<std::size_t, int> CompleteMembers(std::string_view data) {
  std::size_t at = 0;
  int members = 0;
  while (at < data.size()) {
    const std::size_t used = InflateMember(data.substr(at), 15 + 16, [](const char*, std::size_t) { return true; });
    if (used == 0) break;  // cut short (or not gzip): the file ends before it
    at += used;
    ++members;
  }
  return {at, members};
}

Writer::Writer(WriterOptions options) : options_(std::move(options)) {
  if (options_.rollover.count() <= 0) throw std::invalid_argument("the WARC rollover must be positive");
}

Writer::~Writer() {
  try {
    Close();
  } catch (...) {
  }
}

void Writer::Open(std::chrono::system_clock::time_point now) {
  auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(now.time_since_epoch()).count() % 1000;
  std::time_t secs = std::chrono::system_clock::to_time_t(now);
  std::tm tm{};
  gmtime_r(&secs, &tm);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y%m%d%H%M%S", &tm);
  static std::atomic<int> next_serial{0};  // per process: writers of one process never clash
  char serial[16];
  std::snprintf(serial, sizeof serial, "%05d", next_serial++);
  char millis[8];
  std::snprintf(millis, sizeof millis, "%03d", static_cast<int>(ms));
  // IIPC's Prefix-Timestamp-Serial-Crawlhost: a 17-digit time (as Heritrix), the process id with
  // the host, so that workers writing into one directory never clash.
  name_ = options_.prefix + "-" + stamp + millis + "-" + serial + "-" + std::to_string(getpid()) + "~" + Hostname() +
          ".warc.gz";
  std::string path = options_.dir + "/" + name_ + std::string(kOpenSuffix);
  // 0600: a WARC file holds what the APIs answered, for its owner to hand on, not for every user
  // of the machine; O_EXCL and O_NOFOLLOW: never through a planted file or link.
  fd_ = open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_APPEND | O_CLOEXEC, 0600);
  if (fd_ < 0) {
    std::string text = ErrnoText("cannot create WARC file", path);
    name_.clear();
    throw std::runtime_error(text);
  }
  opened_ = now;
  size_ = 0;
  warcinfo_id_ = NewRecordId();
  std::string info = "software: " + options_.software + "\r\nformat: WARC File Format 1.0\r\n" +
                     "conformsTo: http://bibnum.bnf.fr/WARC/WARC_ISO_28500_version1_latestdraft.pdf\r\n" +
                     "hostname: " + Hostname() + "\r\n";
  if (!options_.operator_name.empty()) info += "operator: " + options_.operator_name + "\r\n";
  info += "description: API requests and responses of tweetkeeper's workers; tokens replaced by [redacted---]\r\n";
  std::string info_record = Record({{"WARC-Type", "warcinfo"},
                      {"WARC-Record-ID", warcinfo_id_},
                      {"WARC-Date", WarcDate(now)},
                      {"WARC-Filename", name_},
                      {"Content-Type", "application/warc-fields"},
                      {"WARC-Block-Digest", Sha1Base32(info)}},
                     info);
  Append(Gzip(info_record));
  plain_size_ = info_record.size();
  info_size_ = size_;
  ++records_;
}

void Writer::Append(const std::string& bytes) {
  std::size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = write(fd_, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw std::runtime_error(ErrnoText("cannot write WARC file", options_.dir + "/" + name_));
    done += static_cast<std::size_t>(n);
  }
  size_ += bytes.size();
}

void Writer::Write(const Exchange& exchange) {
  std::string request = Redact(exchange.request, options_.secrets);
  std::string response = Redact(exchange.response, options_.secrets);
  const std::string target_uri = Redact(exchange.target_uri, options_.secrets);  // (?access_token=...)
  std::string request_id = NewRecordId();
  std::string response_id = NewRecordId();
  std::string date = WarcDate(exchange.started);
  auto fields = [&](const char* type, const std::string& id, const std::string& other, const std::string& block,
                    const char* content_type) {
    std::vector<std::pair<std::string, std::string>> f = {{"WARC-Type", type},
                                                          {"WARC-Record-ID", id},
                                                          {"WARC-Date", date},
                                                          {"WARC-Target-URI", target_uri}};
    if (!exchange.ip.empty()) f.emplace_back("WARC-IP-Address", exchange.ip);
    f.emplace_back("WARC-Concurrent-To", other);
    f.emplace_back("WARC-Warcinfo-ID", "");  // filled below, once the file is known
    f.emplace_back("Content-Type", content_type);
    f.emplace_back("WARC-Block-Digest", Sha1Base32(block));
    if (auto payload = HttpPayload(block)) f.emplace_back("WARC-Payload-Digest", Sha1Base32(*payload));
    return f;
  };
  auto request_fields = fields("request", request_id, response_id, request, "application/http;msgtype=request");
  // A token in a compressed or chunked body (a gateway that echoes the Authorization header in an
  // error page, say) cannot be replaced in the bytes as they came: the response is not recorded,
  // and a metadata record in its place says why (and its status line).
  const bool dropped = CarriesSecret(response, options_.secrets);
  if (dropped) {
    std::string status_line = response.substr(0, response.find("\r\n"));
    if (status_line.size() > 200) status_line.resize(200);
    response = "tweetkeeper-response-dropped: its body, as decoded, holds a credential's token, which cannot be "
               "replaced in the compressed or chunked bytes as they came\r\n"
               "tweetkeeper-response-status: " + Redact(status_line, options_.secrets) + "\r\n";
  }
  auto response_fields = dropped ? fields("metadata", response_id, request_id, response, "application/warc-fields")
                                 : fields("response", response_id, request_id, response, "application/http;msgtype=response");

  auto now = std::chrono::system_clock::now();
  if (fd_ >= 0 && now - opened_ >= options_.rollover) Close();
  // (The size is checked with the records uncompressed: a bound, never an underestimate.)
  if (fd_ >= 0 && size_ > info_size_ && size_ + request.size() + response.size() + 2048 > options_.max_bytes) Close();
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (fd_ < 0) Open(now);
    for (auto* f : {&request_fields, &response_fields})
      for (auto& [k, v] : *f)
        if (k == "WARC-Warcinfo-ID") v = warcinfo_id_;
    std::string out;
    std::uint64_t plain = plain_size_;
    int records = 0;
    bool placed = true;
    for (const std::string& rec : {Record(request_fields, request), Record(response_fields, response)}) {
      const std::uint64_t header = rec.find("\r\n\r\n") + 4;
      const std::uint64_t block_end = (plain / kReaderBlock + 1) * kReaderBlock;
      if (plain + header > block_end) {
        std::string filler = Filler(block_end - plain, warcinfo_id_, date);
        if (filler.empty()) {
          placed = false;
          break;
        }
        out += Gzip(filler);
        plain += filler.size();
        ++records;
      }
      out += Gzip(rec);
      plain += rec.size();
      ++records;
    }
    if (!placed && attempt == 0) {
      Close();  // too little room for a filler: the exchange starts a new file
      continue;
    }
    // Both records in one write: a kill leaves at most the end of one incomplete.
    Append(out);
    plain_size_ = plain;
    records_ += static_cast<std::uint64_t>(records);
    return;
  }
}

void Writer::Close() {
  if (fd_ < 0) return;
  std::string final_path = options_.dir + "/" + name_;
  std::string open_path = final_path + std::string(kOpenSuffix);
  int fd = fd_;
  fd_ = -1;
  bool synced = fsync(fd) == 0;
  close(fd);
  if (!synced) throw std::runtime_error(ErrnoText("cannot sync WARC file", open_path));
  if (rename(open_path.c_str(), final_path.c_str()) != 0)
    throw std::runtime_error(ErrnoText("cannot rename WARC file", open_path));
  FsyncDir(options_.dir);
  name_.clear();
}

void Recorder::Record(const Exchange& exchange) {
  std::lock_guard<std::mutex> lock(mutex_);
  try {
    writer_.Write(exchange);
  } catch (const std::exception& e) {
    spdlog::error("WARC: the exchange with {} is not recorded: {}", exchange.target_uri.substr(0, exchange.target_uri.find('?')),
                  e.what());
  }
}

void Recorder::Close() {
  std::lock_guard<std::mutex> lock(mutex_);
  writer_.Close();
}

int Writer::Recover(const std::string& dir) {
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) throw std::runtime_error(ErrnoText("cannot read WARC directory", dir));
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string n = e->d_name;
    if (n.size() > std::string(".warc.gz.open").size() && EndsWith(n, ".warc.gz.open")) names.push_back(n);
  }
  closedir(d);
  int finished = 0;
  std::string host = Hostname();
  for (const std::string& n : names) {
    // ...-PID~HOST.warc.gz.open: only a file of this host whose process is gone.
    std::string base = n.substr(0, n.size() - std::string(".warc.gz.open").size());
    std::size_t dash = base.rfind('-');
    std::size_t tilde = base.find('~', dash == std::string::npos ? 0 : dash);
    if (dash == std::string::npos || tilde == std::string::npos || base.substr(tilde + 1) != host) continue;
    long pid = std::strtol(base.substr(dash + 1, tilde - dash - 1).c_str(), nullptr, 10);
    if (pid <= 0 || pid == getpid() || kill(static_cast<pid_t>(pid), 0) == 0 || errno != ESRCH) continue;
    std::string path = dir + "/" + n;
    // Never through a symlink (a planted one would have us truncate whatever it points to), and
    // only a regular file of this user: anything else is left as it is, and said.
    int fd = open(path.c_str(), O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
      spdlog::warn("WARC: {} left as it is: {}", n, errno == ELOOP ? "a symbolic link" : std::strerror(errno));
      continue;
    }
    struct stat st {};
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_uid != geteuid()) {
      spdlog::warn("WARC: {} left as it is: not a regular file of this user", n);
      close(fd);
      continue;
    }
    // Nor a file with another name: a hard link planted here to a file of this user elsewhere
    // (O_NOFOLLOW does not see one) would have that file cut to its "complete gzip members".
    if (st.st_nlink != 1) {
      spdlog::warn("WARC: {} left as it is: it has {} links (a writer's file has one; a hard link to a file elsewhere "
                   "is never recovered)", n, static_cast<unsigned long long>(st.st_nlink));
      close(fd);
      continue;
    }
    std::string data;
    char buf[1 << 16];
    for (ssize_t r; (r = read(fd, buf, sizeof buf)) > 0;) data.append(buf, static_cast<std::size_t>(r));
    auto [keep, members] = CompleteMembers(data);
    bool ok = (keep == data.size() || ftruncate(fd, static_cast<off_t>(keep)) == 0) && fsync(fd) == 0;
    close(fd);
    if (!ok) continue;
    std::string final_path = dir + "/" + n.substr(0, n.size() - kOpenSuffix.size());
    if (members == 0) {
      unlink(path.c_str());  // not even its warcinfo: nothing to keep
    } else if (rename(path.c_str(), final_path.c_str()) != 0) {
      continue;
    }
    ++finished;
  }
  if (finished > 0) FsyncDir(dir);
  return finished;
}

}  // namespace tweetkeeper::worker::warc
