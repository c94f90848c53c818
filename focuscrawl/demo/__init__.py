"""A generated demo web (several hosts, one clear topic), written as WARC + labels."""

from focuscrawl.demo.demo_web import DemoWeb
from focuscrawl.demo.hosts import HOSTS
from focuscrawl.demo.web import generate_web

__all__ = ["DemoWeb", "HOSTS", "generate_web"]
