#pragma once
// Which addresses a request to a host named by someone else may connect to (a Mastodon server
// taken from a post's URL: anyone who can schedule a post picks it). Pure: no I/O, no DNS.
// HttpClient asks this of every address libcurl is about to connect to (its open-socket
// callback), after the name was resolved: no second look-up, so no DNS-rebinding gap.

#include <string>

struct sockaddr;

namespace tweetkeeper::worker {

// False for anything not on the public internet: IPv4 0.0.0.0/8, 10/8, 100.64/10 (CGNAT), 127/8,
// 169.254/16 (link-local, cloud metadata), 172.16/12, 192.0.0/24, 192.0.2/24, 192.168/16,
// 198.18/15, 198.51.100/24, 203.0.113/24, 224/4 (multicast), 240/4 (reserved, broadcast); IPv6
// outside 2000::/3 (::, ::1, fc00::/7 ULA, fe80::/10 link-local, ff00::/8 multicast, ...),
// 2001:db8::/32 and 3fff::/20 (documentation); the IPv4 address inside ::ffff:0:0/96 (mapped),
// 64:ff9b::/96 (NAT64) and 2002::/16 (6to4) is judged as IPv4. Any other family: false.
bool IsPublicAddress(const sockaddr* address);

// The address as text ("127.0.0.1", "::1"), for messages; "" for another family.
std::string AddressText(const sockaddr* address);

}  // namespace tweetkeeper::worker
