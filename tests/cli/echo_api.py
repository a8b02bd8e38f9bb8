#!/usr/bin/env python3
"""A misbehaving API for tests/cli/worker_cli.sh: every GET gets a 502 error page that echoes
the request's headers, Authorization included, as some debugging proxies do. The worker must
not copy the bearer token from such a page into its log or into tweetkeeper.batches.reason.

Usage: echo_api.py [PORT]   (0 or nothing: any free port); prints "listening on http://..."
"""
import http.server
import sys


class EchoHeaders(http.server.BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        auth = self.headers.get("Authorization", "")
        others = "; ".join(f"{k}: {v}" for k, v in self.headers.items() if k.lower() != "authorization")
        body = f"<html><body>502 Bad Gateway. Authorization: {auth}; {others}; GET {self.path}</body></html>"
        data = body.encode()
        self.send_response(502)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


server = http.server.HTTPServer(("127.0.0.1", int(sys.argv[1]) if len(sys.argv) > 1 else 0), EchoHeaders)
print(f"listening on http://127.0.0.1:{server.server_port}", flush=True)
server.serve_forever()
