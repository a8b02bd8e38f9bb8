// The Jetstream subscriber's queue (worker/follow/jetstream_client.hpp), against a websocket
// server of the test's own on the loopback: bounded in bytes, not only in frames; compressed
// frames (Jetstream's zstd) decoded into the same text, or refused with a reconnection.

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <boost/beast/websocket.hpp>

#include <atomic>
#include <chrono>
#include <mutex>
#include <string>
#include <thread>

#include <gtest/gtest.h>

#include "follow/jetstream_client.hpp"
#include "worker_test_zstd.hpp"

namespace tweetkeeper::worker::follow {
namespace {

namespace net = boost::asio;
namespace websocket = boost::beast::websocket;
using tcp = net::ip::tcp;

// A Jetstream stand-in: on its first connection it sends `count` text frames of `size` bytes (or
// fewer, when the client goes away first), or `count` times `frame` (binary or text); later
// connections send nothing. Every connection is held open until the client goes. It keeps the
// first connection's target.
class FrameServer {
 public:
  FrameServer(int count, std::size_t size) : FrameServer(count, std::string(size, 'f'), false) {}
  FrameServer(int count, std::string frame, bool binary) {
    thread_ = std::thread([this, count, frame, binary] {
      for (int connection = 0; !stop_; ++connection) {
        tcp::socket socket(ioc_);
        boost::system::error_code ec;
        acceptor_.accept(socket, ec);
        if (ec || stop_) return;
        connections_++;
        websocket::stream<tcp::socket> ws(std::move(socket));
        boost::beast::flat_buffer request_buffer;
        boost::beast::http::request<boost::beast::http::string_body> request;
        boost::beast::http::read(ws.next_layer(), request_buffer, request, ec);
        if (!ec) ws.accept(request, ec);
        if (ec) continue;
        ws.text(!binary);
        if (connection == 0) {
          {
            std::lock_guard<std::mutex> lock(mutex_);
            target_ = std::string(request.target());
          }
          while (sent_ < count && !ec) {
            ws.write(net::buffer(frame), ec);
            if (!ec) sent_++;
          }
          sent_all_ = !ec;
          first_done_ = true;
        }
        // Held open until the client goes (Stop, or a drop), reading what it sends: closing a
        // socket with the client's options_update unread would reset the connection, and the
        // client's kernel would drop the frames it had not yet read.
        boost::beast::flat_buffer buffer;
        while (!stop_ && !ec) {
          ws.read(buffer, ec);
          buffer.consume(buffer.size());
        }
      }
    });
  }
  ~FrameServer() {
    stop_ = true;
    // (Closing the acceptor would not wake a blocking accept: a connection does.)
    boost::system::error_code ignored;
    tcp::socket wake(ioc_);
    wake.connect(acceptor_.local_endpoint(), ignored);
    thread_.join();
  }
  std::string url() const { return "ws://127.0.0.1:" + std::to_string(acceptor_.local_endpoint().port()); }
  int sent() const { return sent_; }
  bool sent_all() const { return sent_all_; }
  bool first_done() const { return first_done_; }
  int connections() const { return connections_; }
  std::string target() const {
    std::lock_guard<std::mutex> lock(mutex_);
    return target_;
  }

 private:
  net::io_context ioc_;
  tcp::acceptor acceptor_{ioc_, {net::ip::make_address("127.0.0.1"), 0}};
  std::atomic<bool> stop_{false}, sent_all_{false}, first_done_{false};
  std::atomic<int> sent_{0}, connections_{0};
  mutable std::mutex mutex_;
  std::string target_;
  std::thread thread_;
};

template <typename Done>
bool WaitFor(Done done, std::chrono::seconds limit = std::chrono::seconds(20)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return true;
}

// 200 frames of 256 KiB (50 MiB) to a follower that takes none, with the queue bounded at 1 MiB:
// once the next frame would pass the bound, the connection is dropped (as at the frame bound:
// "the follower is behind") and made again later from the caller's cursor; at most 1 MiB waits.
// (Issue 49: the bound was 200,000 frames, each up to 16 MiB: 3 TiB.)
TEST(JetstreamClient, QueueBoundedInBytes) {
  constexpr std::size_t kFrame = 256 * 1024, kBound = 1 << 20;
  FrameServer server(200, kFrame);
  JetstreamClient client(server.url(), [] { return std::int64_t{0}; }, nullptr, kBound);
  client.SetDids({"did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"});
  ASSERT_TRUE(WaitFor([&] { return server.first_done(); })) << "the server sent " << server.sent();
  EXPECT_FALSE(server.sent_all()) << "the client read all 50 MiB without dropping the connection";
  ASSERT_TRUE(WaitFor([&] { return !client.last_error().empty(); }));
  EXPECT_NE(client.last_error().find("the follower is behind"), std::string::npos) << client.last_error();
  EXPECT_TRUE(WaitFor([&] { return server.connections() >= 2; })) << "connected again";
  std::size_t bytes = 0, frames = 0;
  for (const std::string& frame : client.Take(std::chrono::milliseconds(0), 1'000'000)) {
    bytes += frame.size();
    ++frames;
  }
  EXPECT_LE(bytes, kBound) << frames << " frames";
  EXPECT_EQ(frames, kBound / kFrame) << "the queue filled up to its bound";
  client.Stop();
}

// Given a dictionary, the client asks for compress=true and decodes each binary frame into the
// event's text, as it queues text frames.
TEST(JetstreamClient, CompressedFramesDecoded) {
  const std::string dict_bytes = zstd::Train("alpha");
  std::string error;
  const std::shared_ptr<const zstd::Dictionary> dict = zstd::Dictionary::Load(dict_bytes, &error);
  ASSERT_TRUE(dict) << error;
  const std::string event = zstd::Event(4242, "alpha");
  FrameServer server(3, zstd::Compress(event, dict_bytes), true);
  JetstreamClient client(server.url(), [] { return std::int64_t{0}; }, dict);
  client.SetDids({"did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"});
  std::vector<std::string> frames;
  ASSERT_TRUE(WaitFor([&] {
    for (std::string& f : client.Take(std::chrono::milliseconds(10), 10)) frames.push_back(std::move(f));
    return frames.size() >= 3;
  })) << frames.size() << " frames; " << client.last_error();
  EXPECT_EQ(frames, std::vector<std::string>(3, event));
  EXPECT_NE(server.target().find("&compress=true"), std::string::npos) << server.target();
  client.Stop();
}

// A frame of another dictionary is no event: the connection is dropped, said why, and made again.
TEST(JetstreamClient, UndecodableFrameReconnects) {
  std::string error;
  const std::shared_ptr<const zstd::Dictionary> dict = zstd::Dictionary::Load(zstd::Train("alpha"), &error);
  ASSERT_TRUE(dict) << error;
  FrameServer server(1, zstd::Compress(zstd::Event(1, "omega"), zstd::Train("omega")), true);
  JetstreamClient client(server.url(), [] { return std::int64_t{0}; }, dict);
  client.SetDids({"did:plc:aaaaaaaaaaaaaaaaaaaaaaaa"});
  ASSERT_TRUE(WaitFor([&] { return !client.last_error().empty(); }));
  EXPECT_NE(client.last_error().find("a compressed event refused: a zstd frame compressed with dictionary"),
            std::string::npos) << client.last_error();
  EXPECT_TRUE(WaitFor([&] { return server.connections() >= 2; })) << "connected again";
  EXPECT_TRUE(client.Take(std::chrono::milliseconds(0), 10).empty());
  client.Stop();
}

}  // namespace
}  // namespace tweetkeeper::worker::follow
