"""The parts of ``FocusScheduler`` that talk to Scrapy: the downloader adapter, the request
serializer, robots.txt fetching, the release policies (patience, HEAD checks), background
re-scoring and JOBDIR persistence. The pure cores they wire in live in ``frontier/``,
``politeness/`` and ``learning/``."""
