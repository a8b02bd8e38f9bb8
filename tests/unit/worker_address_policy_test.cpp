// Hosts taken from post URLs (Mastodon) connect to public addresses only: the classifier, both
// sides of each range's edges, IPv4 and IPv6; the HTTP client's refusal (nothing connected, why
// said); which requests the Mastodon provider limits; --allow-private-hosts.

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "cli/options.hpp"
#include "http/address_policy.hpp"
#include "http/http_client.hpp"
#include "provider/factory.hpp"
#include "provider/mastodon.hpp"

namespace tweetkeeper::worker {
namespace {

// The verdict for an address written as text: IPv4 or IPv6.
bool Public(const std::string& text) {
  sockaddr_in in{};
  if (inet_pton(AF_INET, text.c_str(), &in.sin_addr) == 1) {
    in.sin_family = AF_INET;
    return IsPublicAddress(reinterpret_cast<const sockaddr*>(&in));
  }
  sockaddr_in6 in6{};
  if (inet_pton(AF_INET6, text.c_str(), &in6.sin6_addr) == 1) {
    in6.sin6_family = AF_INET6;
    return IsPublicAddress(reinterpret_cast<const sockaddr*>(&in6));
  }
  ADD_FAILURE() << "not an address: " << text;
  return false;
}

struct Row {
  const char* address;
  bool is_public;
};

// Each range with the addresses just outside it, where there is an outside.
const std::vector<Row> kV4 = {
    {"0.0.0.0", false},         {"0.255.255.255", false},   {"1.0.0.0", true},  // 0.0.0.0/8
    {"9.255.255.255", true},    {"10.0.0.0", false},        {"10.255.255.255", false},
    {"11.0.0.0", true},  // 10/8
    {"100.63.255.255", true},   {"100.64.0.0", false},      {"100.127.255.255", false},
    {"100.128.0.0", true},  // 100.64/10
    {"126.255.255.255", true},  {"127.0.0.1", false},       {"127.255.255.255", false},
    {"128.0.0.0", true},  // 127/8
    {"169.253.255.255", true},  {"169.254.0.0", false},     {"169.254.169.254", false},
    {"169.254.255.255", false}, {"169.255.0.0", true},  // 169.254/16
    {"172.15.255.255", true},   {"172.16.0.0", false},      {"172.31.255.255", false},
    {"172.32.0.0", true},  // 172.16/12
    {"191.255.255.255", true},  {"192.0.0.0", false},       {"192.0.0.255", false},
    {"192.0.1.0", true},  // 192.0.0/24
    {"192.0.2.0", false},       {"192.0.2.255", false},     {"192.0.3.0", true},  // 192.0.2/24
    {"192.167.255.255", true},  {"192.168.0.0", false},     {"192.168.255.255", false},
    {"192.169.0.0", true},  // 192.168/16
    {"198.17.255.255", true},   {"198.18.0.0", false},      {"198.19.255.255", false},
    {"198.20.0.0", true},  // 198.18/15
    {"198.51.99.255", true},    {"198.51.100.0", false},    {"198.51.100.255", false},
    {"198.51.101.0", true},  // 198.51.100/24
    {"203.0.112.255", true},    {"203.0.113.0", false},     {"203.0.113.255", false},
    {"203.0.114.0", true},  // 203.0.113/24
    {"223.255.255.255", true},  {"224.0.0.0", false},       {"239.255.255.255", false},  // multicast
    {"240.0.0.0", false},       {"255.255.255.255", false},  // reserved, broadcast
    {"8.8.8.8", true},          {"93.184.215.14", true},
};

const std::vector<Row> kV6 = {
    {"::", false},
    {"::1", false},
    {"::2", false},
    {"1fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},  // below 2000::/3
    {"2000::", true},
    {"2a01:4f8::1", true},
    {"2606:4700::6810:84e5", true},
    {"3fef:ffff:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"3fff::", false},  // 3fff::/20, documentation
    {"3fff:0fff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"3fff:1000::", true},
    {"4000::", false},  // above 2000::/3
    {"fbff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"fc00::", false},  // fc00::/7, unique local
    {"fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"fe80::", false},  // fe80::/10, link-local
    {"febf:ffff:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"ff02::1", false},  // multicast
    {"2001:db7:ffff:ffff:ffff:ffff:ffff:ffff", true},
    {"2001:db8::", false},  // 2001:db8::/32, documentation
    {"2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", false},
    {"2001:db9::", true},
    // IPv4 inside IPv6: judged as the IPv4 address.
    {"::ffff:127.0.0.1", false},
    {"::ffff:10.1.2.3", false},
    {"::ffff:169.254.169.254", false},
    {"::ffff:100.64.0.1", false},
    {"::ffff:0.0.0.0", false},
    {"::ffff:8.8.8.8", true},
    {"::fffe:8.8.8.8", false},  // not mapped: ::/8
    {"64:ff9b::127.0.0.1", false},  // NAT64
    {"64:ff9b::192.168.1.1", false},
    {"64:ff9b::8.8.8.8", true},
    {"2002:7f00:1::", false},  // 6to4 of 127.0.0.1
    {"2002:a00:1::1", false},  // 6to4 of 10.0.0.1
    {"2002:808:808::1", true},  // 6to4 of 8.8.8.8
};

TEST(AddressPolicy, Ipv4RangesAndTheirEdges) {
  for (const Row& row : kV4) EXPECT_EQ(Public(row.address), row.is_public) << row.address;
}

TEST(AddressPolicy, Ipv6RangesAndTheirEdges) {
  for (const Row& row : kV6) EXPECT_EQ(Public(row.address), row.is_public) << row.address;
}

TEST(AddressPolicy, OtherFamiliesAndNothingAreNotPublic) {
  sockaddr unix_address{};
  unix_address.sa_family = AF_UNIX;
  EXPECT_FALSE(IsPublicAddress(&unix_address));
  EXPECT_FALSE(IsPublicAddress(nullptr));
  EXPECT_EQ(AddressText(&unix_address), "");
}

TEST(AddressPolicy, AddressText) {
  sockaddr_in in{};
  in.sin_family = AF_INET;
  inet_pton(AF_INET, "169.254.169.254", &in.sin_addr);
  EXPECT_EQ(AddressText(reinterpret_cast<const sockaddr*>(&in)), "169.254.169.254");
  sockaddr_in6 in6{};
  in6.sin6_family = AF_INET6;
  inet_pton(AF_INET6, "::1", &in6.sin6_addr);
  EXPECT_EQ(AddressText(reinterpret_cast<const sockaddr*>(&in6)), "::1");
}

// An HTTP server on 127.0.0.1 that answers every request 200 with an empty body and keeps the
// connection open (keep-alive); counts the connections it accepted.
class Server {
 public:
  Server() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t n = sizeof a;
    if (fd_ < 0 || bind(fd_, reinterpret_cast<sockaddr*>(&a), n) != 0 || listen(fd_, 4) != 0 ||
        getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &n) != 0) {
      ADD_FAILURE() << "no listening socket";
    }
    port_ = ntohs(a.sin_port);
    thread_ = std::thread([this] { Serve(); });
  }
  ~Server() {
    stop_ = true;
    thread_.join();
    close(fd_);
  }
  std::string Url(const std::string& host) const { return "http://" + host + ":" + std::to_string(port_) + "/"; }
  int connections() const { return connections_; }

 private:
  void Serve() {
    std::vector<pollfd> fds{{fd_, POLLIN, 0}};
    while (!stop_) {
      if (poll(fds.data(), fds.size(), 20) <= 0) continue;
      for (std::size_t i = fds.size(); i-- > 0;) {
        if (!(fds[i].revents & (POLLIN | POLLHUP))) continue;
        if (i == 0) {
          const int c = accept(fd_, nullptr, nullptr);
          if (c >= 0) fds.push_back({c, POLLIN, 0}), ++connections_;
          continue;
        }
        char buffer[4096];
        if (read(fds[i].fd, buffer, sizeof buffer) <= 0) {
          close(fds[i].fd);
          fds.erase(fds.begin() + static_cast<long>(i));
          continue;
        }
        static const char kAnswer[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n";
        if (write(fds[i].fd, kAnswer, sizeof kAnswer - 1) < 0) ADD_FAILURE() << "write";
      }
    }
    for (std::size_t i = 1; i < fds.size(); ++i) close(fds[i].fd);
  }

  int fd_ = -1;
  int port_ = 0;
  std::atomic<bool> stop_{false};
  std::atomic<int> connections_{0};
  std::thread thread_;
};

// libcurl resolves *.localhost to loopback itself (127.0.0.1 and ::1), without DNS or /etc/hosts.
TEST(HttpClientReach, PublicOnlyRefusesLoopbackAndConnectsNowhere) {
  Server server;
  HttpClient http(HttpOptions{});
  const HttpResponse r = http.Get(server.Url("evil.localhost") + "api/v1/statuses", "secret-token-123", nullptr,
                                  Reach::kPublicOnly);
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.refused_host, "evil.localhost");
  EXPECT_TRUE(r.refused_address == "127.0.0.1" || r.refused_address == "::1") << r.refused_address;
  EXPECT_NE(r.error.find("evil.localhost resolves to a private or loopback address"), std::string::npos) << r.error;
  EXPECT_EQ(r.error.find("secret-token-123"), std::string::npos);
  // An IP literal goes through the same check.
  const HttpResponse literal = http.Get(server.Url("127.0.0.1"), "", nullptr, Reach::kPublicOnly);
  EXPECT_EQ(literal.refused_address, "127.0.0.1");
  EXPECT_EQ(server.connections(), 0);
}

TEST(HttpClientReach, AnyConnectsToLoopback) {
  Server server;
  HttpClient http(HttpOptions{});
  const HttpResponse r = http.Get(server.Url("evil.localhost"), "", nullptr, Reach::kAny);
  EXPECT_EQ(r.status, 200) << r.error;
  EXPECT_EQ(r.refused_address, "");
  EXPECT_EQ(server.connections(), 1);
}

// A connection opened by an unchecked request stays open (keep-alive): a public-only request to
// the same host must not ride on it.
TEST(HttpClientReach, PublicOnlyNeverReusesAConnectionOpenedUnchecked) {
  Server server;
  HttpClient http(HttpOptions{});
  ASSERT_EQ(http.Get(server.Url("evil.localhost"), "", nullptr, Reach::kAny).status, 200);
  ASSERT_EQ(http.Get(server.Url("evil.localhost"), "", nullptr, Reach::kAny).status, 200);
  EXPECT_EQ(server.connections(), 1);  // kept alive and reused
  const HttpResponse r = http.Get(server.Url("evil.localhost"), "", nullptr, Reach::kPublicOnly);
  EXPECT_EQ(r.status, 0);
  EXPECT_FALSE(r.refused_address.empty()) << r.error;
}

TEST(MastodonReach, HostsFromPostUrlsArePublicOnlyUnlessMappedOrAllowed) {
  const MastodonProvider plain;
  EXPECT_TRUE(plain.PublicAddressesOnly("mastodon:evil.example"));
  const MastodonProvider mapped(std::map<std::string, std::string>{{"evil.example", "http://127.0.0.1:9/"}});
  EXPECT_FALSE(mapped.PublicAddressesOnly("mastodon:evil.example"));  // the operator chose that URL
  EXPECT_TRUE(mapped.PublicAddressesOnly("mastodon:other.example"));
  const MastodonProvider allowed({}, true);
  EXPECT_FALSE(allowed.PublicAddressesOnly("mastodon:evil.example"));
  EXPECT_TRUE(MakeProvider("mastodon", "https://api.x.com")->PublicAddressesOnly("mastodon:evil.example"));
  EXPECT_FALSE(MakeProvider("mastodon", "https://api.x.com", {}, true)->PublicAddressesOnly("mastodon:evil.example"));
  // An --api-url is the operator's too.
  EXPECT_FALSE(MakeProvider("x-v2", "http://127.0.0.1:9")->PublicAddressesOnly(""));
  EXPECT_FALSE(MakeProvider("bluesky", "http://127.0.0.1:9")->PublicAddressesOnly("bluesky"));
}

TEST(MastodonReach, AllowPrivateHostsFlag) {
  std::vector<const char*> plain{"tweetkeeper-worker", "--dsn", "x", "--provider", "mastodon"};
  ParsedCommandLine p = ParseCommandLine(static_cast<int>(plain.size()), plain.data());
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_FALSE(p.options->allow_private_hosts);
  plain.push_back("--allow-private-hosts");
  p = ParseCommandLine(static_cast<int>(plain.size()), plain.data());
  ASSERT_TRUE(p.options) << p.err;
  EXPECT_TRUE(p.options->allow_private_hosts);
}

}  // namespace
}  // namespace tweetkeeper::worker
