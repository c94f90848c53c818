"""A Splash-compatible rendering service on Playwright and Chromium (``scrapy render-server``).

scrapy-splash code points ``SPLASH_URL`` here and gets a current Chromium instead of Splash's
QtWebKit, without Docker. Splash's HTTP API as far as a crawler uses it:

- ``render.html`` (the page's HTML after its scripts ran) and ``render.json`` (``url``: the final
  URL, ``requestedUrl``, ``title``, ``geometry``; ``html`` with ``html=1``; with ``history=1`` the
  main frame's responses as HAR entries, where the page's HTTP status is, as in Splash; ``script``
  with ``script=1``), by GET with query arguments or POST with a JSON or JavaScript body (as
  Splash) or a form body (which Splash refuses); ``_ping``.
- Arguments: ``url``, ``baseurl``, ``timeout`` (total, queueing included: default 30 s, at most
  ``max_timeout``), ``wait`` (after the load event, at most 10 s), ``resource_timeout``,
  ``images`` (0 blocks images, media and fonts), ``proxy`` (``[protocol://][user:password@]host[:port]``,
  ``none`` for none), ``headers`` (the first request's; a User-Agent applies to the whole render),
  ``http_method``/``body``, ``js_source`` (run after ``wait``), ``viewport``, ``engine``,
  ``save_args``/``load_args`` (scrapy-splash's ``cache_args``). Unknown arguments are ignored, as
  Splash does; Splash's arguments this server does not implement (``png``, ``har``, ``filters``...)
  are refused with a 400 rather than silently ignored.
- Errors are Splash's JSON answers: 400 ``BadOption``, 415 ``UnsupportedContentType``, 498
  ``ExpiredArguments``, 502 ``RenderError`` (the page could not be loaded; ``info`` says why, its
  ``code`` the nearest Qt network error number), 504 ``GlobalTimeoutError``, 500 ``InternalError``.
  A page answered 404 or 500 renders (200), as in Splash.

One browser process, relaunched when it dies (the renders it held answer 502, the next starts a
new one); each render in a fresh context (no cookies, cache or storage from an earlier render);
at most ``max_contexts`` at once, the others queue within their timeout. The environment's proxy
(``http_proxy``, ``https_proxy``, ``all_proxy``, ``no_proxy``) is used unless the render names one;
loopback addresses go through a proxy too, as a replayed web needs. ``resource_timeout`` bounds the
page's own request always, its other requests only when no proxy is used (Playwright fetches a
bounded request itself, and through a proxy it tunnels even plain http with CONNECT, which
forward proxies such as ``scrapy replay`` refuse). The page's favicon is never fetched.

Private networks are refused as the crawl refuses them (``server_rules``): a page, redirect or
subresource at a loopback, private or link-local address, or a name resolving to one, answers 400
(the page) or 502 (a redirect) or is not loaded (a subresource), unless the server is given a
``NetworkPolicy`` that allows them (``--allow-private-networks``). It still renders any public
URL for whoever reaches it: keep it on 127.0.0.1 (the default).

The package: ``options`` (Splash's arguments, proxies, the argument cache), ``errors`` (Splash's
error answers), ``pages`` (the browser and what a render loads), ``app`` (the HTTP service and
running it). Without the render extra, ``pages`` and ``app`` raise ``MissingExtra`` on import.
"""
