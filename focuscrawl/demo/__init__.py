"""A generated demo web (several hosts, one clear topic), written as WARC + labels."""

from focuscrawl.demo.web import HOSTS, DemoWeb, generate_web

__all__ = ["DemoWeb", "HOSTS", "generate_web"]
