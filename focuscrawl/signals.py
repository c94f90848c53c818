"""focuscrawl's own Scrapy signals (sent with ``crawler.signals.send_catch_log``)."""

#: The spider scored a fetched page. Args: request, response, page (PageItem), links (list of
#: focuscrawl.parsing.Link that were followed), hit (bool: the page counts as found for the
#: learner, FOCUS_REWARD_THRESHOLD). The learner takes its reward from it.
page_scored = object()

#: A politeness or trap rule refused a request before it was fetched. Args: request, reason (str).
#: The request log and the stats record why.
request_refused = object()

#: A robots.txt was fetched and applied. Args: host (str), rules (RobotsRules), response.
robots_fetched = object()
