"""What the benchmark scripts share: a minimal blocking RESP2 client (standard library only, so
the scripts run from a clean clone) and a free local port.

Used by bench/filters.py, bench/stall.py and, through stall.py, bench/defrag.py.
"""

import socket


class Conn:
    """A blocking RESP2 connection to 127.0.0.1:port.

    `call` sends one command and returns its reply (`+` as str, `:` as int, `$` as bytes or
    None, `*` as a list), raising RuntimeError on an error reply; `send` and `read` split it
    for pipelining (`read` returns an error reply as a RuntimeError value instead of raising).
    """

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, *args):
        out = [b"*%d\r\n" % len(args)]
        for a in args:
            a = a if isinstance(a, bytes) else str(a).encode()
            out.append(b"$%d\r\n%s\r\n" % (len(a), a))
        self.sock.sendall(b"".join(out))

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(1 << 20)
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(max(1 << 20, n + 2 - len(self.buf)))
            if not chunk:
                raise ConnectionError("server closed the connection")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def read(self):
        line = self._line()
        t, rest = line[:1], line[1:]
        if t == b"+":
            return rest.decode()
        if t == b"-":
            return RuntimeError(rest.decode())
        if t == b":":
            return int(rest)
        if t == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n)
        if t == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError("bad RESP: %r" % line)

    def call(self, *args):
        self.send(*args)
        r = self.read()
        if isinstance(r, RuntimeError):
            raise r
        return r

    def close(self):
        self.sock.close()


def free_port():
    """A TCP port on 127.0.0.1 that was free a moment ago."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
