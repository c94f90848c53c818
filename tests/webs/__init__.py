"""Local test webs served on 127.0.0.1 for end-to-end crawl tests."""
