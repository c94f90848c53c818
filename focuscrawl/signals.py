"""focuscrawl's own Scrapy signals (sent with ``crawler.signals.send_catch_log``)."""

#: The spider scored a fetched page. Args: request, response, page (PageItem), links (list of
#: focuscrawl.parsing.Link that were followed), hit (bool: the page counts as found for the
#: learner, FOCUS_REWARD_THRESHOLD). The learner takes its reward from it.
page_scored = object()

#: The topic model that scores a project's own spider's pages (focuscrawl.Addon's FocusPages), sent
#: when the spider opens. Args: model (TopicModel). The scheduler's learner takes its link model.
topic_model = object()

#: A politeness or trap rule refused a request before it was fetched. Args: request, reason (str).
#: The request log and the stats record why.
request_refused = object()

#: A robots.txt was fetched and applied. Args: host (str), rules (RobotsRules), response.
robots_fetched = object()

#: The crawl store opened the crawl this run writes into. Args: store (CrawlStore), crawl_id (int),
#: resumed (bool: a JOBDIR crawl taken up again), to_export (PageItems, read from the store as they are
#: iterated, with len(): the relevant pages of a resumed crawl that no durable feed has yet, for the
#: spider to emit first; empty without a feed).
crawl_opened = object()

#: The crawl store committed a page. Args: item (PageItem). Its links were queued before it (the
#: spider yields them first): a resumed crawl need not fetch it again, nor a shared crawl's worker
#: be given it again, whatever happens to the item after the store.
page_stored = object()

#: A sitemap or feed was read to its end, its entries handed to the scheduler. Args: request,
#: response. It makes no item, so this is when a resumed crawl need not fetch it again, nor a
#: shared crawl's worker be given it again after a kill.
listing_read = object()

#: A page, feed or sitemap was fetched, for the revisit plan (FOCUS_RECRAWL). Args: request,
#: response, url (canonical, of the response), kind ("page", "feed" or "sitemap"), text_hash (of
#: the text or body; "" when there is none), weight (the page's relevance probability; None for
#: a feed or sitemap, or a page not scored), etag and last_modified (the response's validators, as
#: text, or None).
page_visited = object()

#: A feed entry or a sitemap's lastmod/changefreq speaks of a page. Args: url (canonical),
#: changed_at (epoch seconds or None), changefreq (a sitemap word or None).
change_hinted = object()

#: What a page showed about rendering (FOCUS_RENDER), for the host's record. Args: request, host
#: (str), shell (bool: its plain HTML looked like an application shell; None for a render), and
#: for a render the spider asked for after the plain HTML: plain and rendered, each (words, links).
render_judged = object()

#: A rendered page loaded (or was refused) one of its own requests: a script, a stylesheet, data.
#: Args: page (the URL rendered), url, method, status (None when refused or failed), resource
#: (the browser's resource type), blocked (why it was refused, or None). The request log writes it.
render_loaded = object()

#: The scheduler opened. Args: view (focuscrawl.crawl_view.CrawlView: what it shows of itself,
#: read-only). The live status reads the frontier and the hosts' politeness through it.
crawl_view = object()
