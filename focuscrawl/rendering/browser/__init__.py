"""The crawl's own browser (``FOCUS_RENDER_BACKEND=playwright``): Chromium through scrapy-playwright,
on a leash. ``handler``: the download handler that sends renders to it; ``guard``: what a rendered
page may load.

``focuscrawl.rendering.browser.FocusDownloadHandler`` is the path ``DOWNLOAD_HANDLERS`` names (the
add-on sets it; a project may too).
"""

from focuscrawl.rendering.browser.handler import FocusDownloadHandler

__all__ = ["FocusDownloadHandler"]
