"""A throwaway ``redis-server`` on a free port of 127.0.0.1, for tests and benchmarks."""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class RedisServer:
    def __init__(self, process: subprocess.Popen, port: int) -> None:
        self.process = process
        self.port = port
        self.url = f"redis://127.0.0.1:{port}/0"

    @classmethod
    def start(cls, folder: Path, timeout: float = 10.0) -> RedisServer | None:
        """A server started in ``folder``; None when ``redis-server`` is not installed."""
        binary = shutil.which("redis-server")
        if binary is None:
            return None
        import redis

        for _attempt in range(3):  # another process may take the free port first
            port = free_port()
            process = subprocess.Popen(
                [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                 "--dir", str(folder), "--protected-mode", "yes", "--loglevel", "warning"],
                stdout=subprocess.DEVNULL, stderr=(folder / "redis.log").open("ab"))
            client = redis.Redis(port=port, socket_connect_timeout=0.5)
            deadline = time.monotonic() + timeout
            while time.monotonic() < deadline and process.poll() is None:
                try:
                    if client.ping():
                        client.close()
                        return cls(process, port)
                except redis.exceptions.ConnectionError:
                    time.sleep(0.05)
            process.kill()
            process.wait()
        raise RuntimeError(f"redis-server did not start; see {folder / 'redis.log'}")

    def client(self):
        import redis

        return redis.Redis(port=self.port)

    def flush(self) -> None:
        with self.client() as client:
            client.flushall()

    def stop(self) -> None:
        if self.process.poll() is None:
            self.process.terminate()
            try:
                self.process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
