"""One exclusion list for a shared crawl (real Redis)."""

import redis

from focuscrawl.distributed.connection import Keys
from focuscrawl.distributed.exclusion import SharedExclusionList


class Clock:
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_a_file_edited_at_one_worker_reaches_every_worker(redis_url, tmp_path):
    client = redis.Redis.from_url(redis_url)
    listed = tmp_path / "exclude.txt"
    listed.write_text("blocked.test\n")
    clock = Clock()
    with_file = SharedExclusionList(client, Keys("c"), str(listed), check_seconds=1.0, clock=clock)
    without = SharedExclusionList(client, Keys("c"), None, check_seconds=1.0, clock=clock)
    other_crawl = SharedExclusionList(client, Keys("d"), None, check_seconds=1.0, clock=clock)
    assert with_file.excludes("http://blocked.test/a") and without.excludes("http://blocked.test/a")
    assert not other_crawl.excludes("http://blocked.test/a")
    # "please stop": a new line in the file of the one worker that has it
    listed.write_text("blocked.test\n.asked-us.test\n")
    import os

    os.utime(listed, ns=(10**18, 10**18))
    clock.now = 2.0
    assert with_file.excludes("http://www.asked-us.test/")
    assert without.excludes("http://www.asked-us.test/")  # within one check period
    assert not without.excludes("http://fine.test/")
