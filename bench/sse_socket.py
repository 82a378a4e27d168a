"""One SSE stream on a plain non-blocking socket, for the bench scripts: the response's head is
checked, chunked or not, and each complete event is handed to `on_event` (callgrind.py and
fanout_counts.py count theirs)."""

import socket


class SSESocket:
    def __init__(self, port, request):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=60)
        self.sock.sendall(request)
        self.sock.setblocking(False)
        self.raw, self.text, self.headers, self.chunked = b"", b"", None, False

    def on_event(self, event):
        raise NotImplementedError

    def feed(self, data):
        self.raw += data
        if self.headers is None:
            head, sep, rest = self.raw.partition(b"\r\n\r\n")
            if not sep:
                return
            if not head.startswith(b"HTTP/1.1 200"):
                raise SystemExit(f"stream: {head[:200]!r}")
            self.headers, self.raw = head.lower(), rest
            self.chunked = b"transfer-encoding: chunked" in self.headers
        if not self.chunked:
            self.text, self.raw = self.text + self.raw, b""
        while self.chunked:
            line, sep, rest = self.raw.partition(b"\r\n")
            if not sep or len(rest) < int(line, 16) + 2:
                break
            size = int(line, 16)
            self.text, self.raw = self.text + rest[:size], rest[size + 2:]
        *events, self.text = self.text.split(b"\n\n")
        for event in events:
            self.on_event(event)
