"""A generated demo web (several hosts, one clear topic), written as WARC + labels."""

from focuscrawl.demo.web import DemoWeb, HOSTS, extract_links, generate_web

__all__ = ["DemoWeb", "HOSTS", "extract_links", "generate_web"]
