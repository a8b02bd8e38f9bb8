#include "http/address_policy.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

#include <cstdint>
#include <cstring>

namespace tweetkeeper::worker {
namespace {

// An IPv4 address (host order) in a.b.c.d/bits.
constexpr bool In4(std::uint32_t a, std::uint32_t net, int bits) {
  const std::uint32_t mask = bits == 0 ? 0 : ~std::uint32_t{0} << (32 - bits);
  return (a & mask) == (net & mask);
}

constexpr std::uint32_t V4(std::uint32_t a, std::uint32_t b, std::uint32_t c, std::uint32_t d) {
  return a << 24 | b << 16 | c << 8 | d;
}

bool IsPublic4(std::uint32_t a) {
  struct Net {
    std::uint32_t net;
    int bits;
  };
  static constexpr Net kNotPublic[] = {
      {V4(0, 0, 0, 0), 8},        // "this network", unspecified
      {V4(10, 0, 0, 0), 8},       // RFC 1918
      {V4(100, 64, 0, 0), 10},    // CGNAT (RFC 6598)
      {V4(127, 0, 0, 0), 8},      // loopback
      {V4(169, 254, 0, 0), 16},   // link-local, cloud metadata (169.254.169.254)
      {V4(172, 16, 0, 0), 12},    // RFC 1918
      {V4(192, 0, 0, 0), 24},     // IETF protocol assignments
      {V4(192, 0, 2, 0), 24},     // documentation
      {V4(192, 168, 0, 0), 16},   // RFC 1918
      {V4(198, 18, 0, 0), 15},    // benchmarking
      {V4(198, 51, 100, 0), 24},  // documentation
      {V4(203, 0, 113, 0), 24},   // documentation
      {V4(224, 0, 0, 0), 4},      // multicast
      {V4(240, 0, 0, 0), 4},      // reserved, and 255.255.255.255 (broadcast)
  };
  for (const Net& n : kNotPublic) {
    if (In4(a, n.net, n.bits)) return false;
  }
  return true;
}

std::uint32_t Embedded4(const std::uint8_t* b) {
  return std::uint32_t{b[0]} << 24 | std::uint32_t{b[1]} << 16 | std::uint32_t{b[2]} << 8 | b[3];
}

bool IsPublic6(const std::uint8_t b[16]) {
  static constexpr std::uint8_t kMapped[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  static constexpr std::uint8_t kNat64[12] = {0, 0x64, 0xff, 0x9b, 0, 0, 0, 0, 0, 0, 0, 0};
  if (std::memcmp(b, kMapped, 12) == 0 || std::memcmp(b, kNat64, 12) == 0) return IsPublic4(Embedded4(b + 12));
  if ((b[0] & 0xe0) != 0x20) return false;  // outside 2000::/3, global unicast
  if (b[0] == 0x20 && b[1] == 0x02) return IsPublic4(Embedded4(b + 2));  // 6to4
  if (b[0] == 0x20 && b[1] == 0x01 && b[2] == 0x0d && b[3] == 0xb8) return false;  // 2001:db8::/32
  if (b[0] == 0x3f && b[1] == 0xff && (b[2] & 0xf0) == 0) return false;            // 3fff::/20
  return true;
}

}  // namespace

bool IsPublicAddress(const sockaddr* address) {
  if (!address) return false;
  if (address->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, address, sizeof in);
    return IsPublic4(ntohl(in.sin_addr.s_addr));
  }
  if (address->sa_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, address, sizeof in6);
    return IsPublic6(in6.sin6_addr.s6_addr);
  }
  return false;
}

std::string AddressText(const sockaddr* address) {
  char text[INET6_ADDRSTRLEN] = {0};
  if (address && address->sa_family == AF_INET) {
    sockaddr_in in{};
    std::memcpy(&in, address, sizeof in);
    if (inet_ntop(AF_INET, &in.sin_addr, text, sizeof text)) return text;
  } else if (address && address->sa_family == AF_INET6) {
    sockaddr_in6 in6{};
    std::memcpy(&in6, address, sizeof in6);
    if (inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof text)) return text;
  }
  return "";
}

}  // namespace tweetkeeper::worker
