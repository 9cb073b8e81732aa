"""A stand-in search service for the web-agent example: GET /search?q=... answers one line of text.

Run: python3 examples/web-agent/search_stub.py   (listens on 127.0.0.1:8900; standard library only)
"""
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlparse


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        url = urlparse(self.path)
        if url.path != "/search":
            self.send_error(404)
            return
        q = parse_qs(url.query).get("q", [""])[0]
        key = "with" if self.headers.get("X-Api-Key") else "without"
        body = f"1. {q}: the first result ({key} the API key)\n".encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", 8900), Handler).serve_forever()
