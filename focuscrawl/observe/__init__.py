"""Seeing a crawl: its live status, progress line, console, plots.

Import-light on purpose: importing the package pulls in neither Scrapy nor matplotlib. The parts
live in their modules (``status``: the live figures, ``progress``: the progress line or panel,
``explanation``: why a waiting URL has its priority).
"""
