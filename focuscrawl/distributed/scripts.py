"""The shared frontier's atomic steps, as Lua scripts run inside Redis.

Keys of a crawl (``P`` = ``focus:{CRAWL_ID}:``, passed as ARGV[1]; every key shares the crawl's
hash tag, so on a Redis Cluster they all live on one node)::

    P q:HOST      ZSET   the host's queued records, all of score 0: ordered as bytes (memcmp), so
                         the best record (the smallest: frontier/records.py) comes first. A record
                         is its header and URL; a packed one ends in ESC and the 8-byte REF of its
                         codec bytes (the request and the link's features), kept apart in ``blobs``
    P blobs       HASH   REF -> a record's codec bytes, for as long as the record is queued, in
                         flight (``leaserec``) or work: written and deleted in the scripts that
                         add and remove the record, so a kill between two steps loses neither part
    P ready       ZSET   score 0, member KEY(best record of the host) .. HOST: hosts whose time has
                         come and that nobody holds, best first across all hosts (global priority)
    P waiting     ZSET   score: when the host may be contacted again; member HOST
    P state       HASH   HOST -> R (in ready), W (in waiting), B (leased to a worker), I (idle: nothing queued)
    P rkey        HASH   HOST -> the KEY under which a ready host is filed
    P at          HASH   HOST -> when the host may be contacted again (server time, seconds)
    P lease       HASH   HOST -> token (WORKER:N) of the worker that holds the host
    P leaserec    HASH   HOST -> the record the holder popped and has not put back (its request
                         is being fetched): put back in the queue if the lease is reaped
    P leases      ZSET   HOST by the time its lease expires at the latest
    P work        HASH   WORKER \n URL -> HOST \n RECORD: a page fetched whose links are not all
                         queued yet (its item is not through the pipelines): queued again if its
                         worker dies first, so that no page's links are lost
    P workers     ZSET   WORKER by when its heartbeat expires
    P size        STRING records queued in all
    P hoststate   HASH   HOST -> JSON: its timing as its last holder knew it (latencies, back-off)
    P robots      HASH   HOST -> JSON: its robots.txt as last fetched, by whichever worker
    P requests    HASH   URL -> a queued request the codec cannot pack (robots.txt), pickled dict
    P seq         STRING seq numbers handed out to workers, a block at a time
    P soon        ZSET   HOST held by a worker, by when its holder expects it free (patience)
    P stats       HASH   counters: leases reaped, work requeued, releases of a lost lease

Time is the Redis server's (``TIME``), the one clock every worker shares, so a host's delay holds
whichever worker fetched it last, on whichever machine. Bytes are compared with a byte loop, never
with Lua's ``<`` (which collates by the server's locale).
"""

from __future__ import annotations

from focuscrawl.distributed.seen import SEEN_ADD
from focuscrawl.frontier.records import FULL, PACKED

#: the order key and seq of a record (frontier/records.py KEY): what orders hosts in ``ready``
KEY_BYTES = 12
#: a record's header, all a re-scoring changes (frontier/records.py FLAG: order key, seq, version)
HEAD_BYTES = 16
#: the bytes naming a packed record's codec bytes in ``blobs``, at the record's end (``shared_records.py``)
REF_BYTES = 8

_COMMON = """
local P = ARGV[1]
local K = %(key)d
local function now()
  local t = redis.call('TIME')
  return tonumber(t[1]) + tonumber(t[2]) / 1000000
end
local function less(a, b)
  for i = 1, K do
    local x, y = string.byte(a, i), string.byte(b, i)
    if x ~= y then return x < y end
  end
  return false
end
-- file a host nobody holds: ready if its time has come, else waiting; idle with nothing queued
local function schedule(h, t)
  local top = redis.call('ZRANGE', P .. 'q:' .. h, 0, 0)[1]
  if not top then
    redis.call('HSET', P .. 'state', h, 'I')
    return
  end
  local at = tonumber(redis.call('HGET', P .. 'at', h) or '0')
  if at <= t then
    local rk = string.sub(top, 1, K)
    redis.call('ZADD', P .. 'ready', 0, rk .. h)
    redis.call('HSET', P .. 'rkey', h, rk)
    redis.call('HSET', P .. 'state', h, 'R')
  else
    redis.call('ZADD', P .. 'waiting', at, h)
    redis.call('HSET', P .. 'state', h, 'W')
  end
end
-- the scoring version in a record's header (bytes 13-16, a big-endian signed 32-bit integer)
local function version_of(rec)
  local a, b, c, d = string.byte(rec, K + 1, K + 4)
  local v = ((a * 256 + b) * 256 + c) * 256 + d
  if v >= 2147483648 then v = v - 4294967296 end
  return v
end
-- the name of a record's codec bytes in P blobs: its last REF bytes when its flag says packed
local function blob_ref(rec)
  local f = string.byte(rec, %(head)d + 1)
  if f == %(packed)d or f == %(packed_full)d then return string.sub(rec, -%(ref)d) end
  return nil
end
-- a record gone from the crawl (done, dropped, never fetched): its codec bytes go with it
local function drop_blob(rec)
  local r = blob_ref(rec)
  if r then redis.call('HDEL', P .. 'blobs', r) end
end
-- take a host out of ready or waiting (before it is leased or re-filed)
local function unfile(h, st)
  if st == 'R' then
    local rk = redis.call('HGET', P .. 'rkey', h)
    if rk then redis.call('ZREM', P .. 'ready', rk .. h) end
    redis.call('HDEL', P .. 'rkey', h)
  elseif st == 'W' then
    redis.call('ZREM', P .. 'waiting', h)
  end
end
-- a held host given up (its worker died or its lease ran out): its record in flight goes back
local function reap_host(h, t)
  local rec = redis.call('HGET', P .. 'leaserec', h)
  if rec then
    if redis.call('ZADD', P .. 'q:' .. h, 0, rec) == 1 then redis.call('INCR', P .. 'size') end
  end
  redis.call('HDEL', P .. 'leaserec', h)
  redis.call('HDEL', P .. 'lease', h)
  redis.call('ZREM', P .. 'leases', h)
  redis.call('ZREM', P .. 'soon', h)
  schedule(h, t)
end
""" % {"key": KEY_BYTES, "head": HEAD_BYTES, "ref": REF_BYTES, "packed": PACKED, "packed_full": PACKED | FULL}

#: ARGV: P, then for each host: HOST, N, N (RECORD, BLOB) pairs, or HOST, 0, SEEN STATE, SEEN BASE,
#: MIN_LEVEL, LOAD, HI, LO, RECORD, BLOB: the record queued only if its URL's fingerprint (HI, LO)
#: is new to the crawl's seen set (``seen.py``), which it joins -> records queued in the crawl (a
#: record already queued is not added twice). BLOB: the packed record's codec bytes, kept in
#: ``blobs`` under its REF with it ('' for a record that has none). A page's links, whatever their
#: hosts, go in one call.
PUSH = _COMMON + SEEN_ADD + """
local size = nil
local t = nil
local i = 2
while i <= #ARGV do
  local h, n = ARGV[i], tonumber(ARGV[i + 1])
  local q = P .. 'q:' .. h
  local added, best = 0, nil
  local first, last, after = i + 2, i + 2 * n, i + 2 + 2 * n
  if n == 0 then
    first, after = i + 8, i + 10
    last = first
    if seen_add(ARGV[i + 2], ARGV[i + 3], ARGV[i + 4], ARGV[i + 5], ARGV[i + 6], ARGV[i + 7]) == 0 then
      last = first - 2  -- another worker queued the URL first
      redis.call('HINCRBY', P .. 'stats', 'late_duplicates', 1)
    end
  end
  for j = first, last, 2 do
    local rec = ARGV[j]
    if redis.call('ZADD', q, 0, rec) == 1 then
      if ARGV[j + 1] ~= '' then redis.call('HSET', P .. 'blobs', blob_ref(rec), ARGV[j + 1]) end
      added = added + 1
      if not best or less(rec, best) then best = rec end
    end
  end
  i = after
  if added > 0 then
    size = redis.call('INCRBY', P .. 'size', added)
    local st = redis.call('HGET', P .. 'state', h)
    if st == 'R' then
      local rk = redis.call('HGET', P .. 'rkey', h)
      local nk = string.sub(best, 1, K)
      if not rk or less(nk, rk) then
        if rk then redis.call('ZREM', P .. 'ready', rk .. h) end
        redis.call('ZADD', P .. 'ready', 0, nk .. h)
        redis.call('HSET', P .. 'rkey', h, nk)
      end
    elseif st ~= 'B' and st ~= 'W' then
      t = t or now()
      schedule(h, t)
    end
  end
end
return size or tonumber(redis.call('GET', P .. 'size') or '0')
"""

#: ARGV: P, WORKER, LEASE_SECONDS, PROMOTE_LIMIT, VERSION, PEEK -> {HOST, RECORD, TOKEN, -1,
#: HOSTSTATE, ROBOTS, TOP, BLOB} or {false, false, false, WAIT} (WAIT: seconds until the next waiting
#: host's time, -1 when none waits; HOSTSTATE, ROBOTS: what the host's holders knew of it, see
#: RELEASE, or false; TOP: when RECORD was scored under a version older than VERSION, the host's
#: PEEK best records left queued, which the holder re-scores with it (see REFRESH), else false;
#: BLOB: RECORD's codec bytes, or false for a record that has none; they stay in ``blobs`` while
#: the record is in flight and work)
POP = _COMMON + """
local t = now()
local due = redis.call('ZRANGEBYSCORE', P .. 'waiting', '-inf', t, 'LIMIT', 0, tonumber(ARGV[4]))
for _, h in ipairs(due) do
  redis.call('ZREM', P .. 'waiting', h)
  schedule(h, t)
end
for _ = 1, 64 do
  local best = redis.call('ZRANGE', P .. 'ready', 0, 0)[1]
  if not best then break end
  local h = string.sub(best, K + 1)
  redis.call('ZREM', P .. 'ready', best)
  redis.call('HDEL', P .. 'rkey', h)
  local popped = redis.call('ZPOPMIN', P .. 'q:' .. h)
  if popped[1] then
    redis.call('DECR', P .. 'size')
    local token = ARGV[2] .. ':' .. redis.call('INCR', P .. 'leaseseq')
    redis.call('HSET', P .. 'state', h, 'B')
    redis.call('HSET', P .. 'lease', h, token)
    redis.call('HSET', P .. 'leaserec', h, popped[1])
    redis.call('ZADD', P .. 'leases', t + tonumber(ARGV[3]), h)
    local top = false
    local peek = tonumber(ARGV[6] or '0')
    if peek > 0 and version_of(popped[1]) < tonumber(ARGV[5]) then
      top = redis.call('ZRANGE', P .. 'q:' .. h, 0, peek - 1)
    end
    local ref = blob_ref(popped[1])
    return {h, popped[1], token, -1, redis.call('HGET', P .. 'hoststate', h) or false,
            redis.call('HGET', P .. 'robots', h) or false, top,
            ref and redis.call('HGET', P .. 'blobs', ref) or false}
  end
  redis.call('HSET', P .. 'state', h, 'I')
end
local w = redis.call('ZRANGE', P .. 'waiting', 0, 0, 'WITHSCORES')
local wait = -1
if w[2] then wait = math.max(0, tonumber(w[2]) - t) end
return {false, false, false, tostring(wait)}
"""

#: ARGV: P, HOST, TOKEN, N -> the host's N best records, or false when the lease is not TOKEN's.
#: The holder re-scores stale ones at the top of its host's queue (nobody else pops from it).
PEEK = """
local P = ARGV[1]
if redis.call('HGET', P .. 'lease', ARGV[2]) ~= ARGV[3] then return false end
return redis.call('ZRANGE', P .. 'q:' .. ARGV[2], 0, tonumber(ARGV[4]) - 1)
"""

#: ARGV: P, HOST, TOKEN, OLD_1, NEW_1, OLD_2, NEW_2, ... -> records replaced. A record another
#: worker removed meanwhile (a background re-scoring of the same host) is not put back.
#: TOKEN '' for a host the caller does not hold (background re-scoring): then a ready host is
#: re-filed under its new best.
SWAP = _COMMON + """
local h, token = ARGV[2], ARGV[3]
if token ~= '' and redis.call('HGET', P .. 'lease', h) ~= token then return -1 end
local q = P .. 'q:' .. h
local n = 0
for i = 4, #ARGV - 1, 2 do
  if redis.call('ZREM', q, ARGV[i]) == 1 then
    redis.call('ZADD', q, 0, ARGV[i + 1])
    n = n + 1
  end
end
if token == '' and n > 0 and redis.call('HGET', P .. 'state', h) == 'R' then
  unfile(h, 'R')
  schedule(h, now())
end
return n
"""

#: ARGV: P, HOST, TOKEN, BACK, TAKEN, OLD_1, NEW_1, ... -> the holder's re-scoring of the top of its
#: host, popped record included, in one step: each OLD record still queued replaced by its NEW one;
#: then {1, BLOB}: the record in flight becomes TAKEN, taken out of the queue (BLOB: its codec
#: bytes, or false), and BACK (the one popped, re-scored) goes back into it; 0: TAKEN was not queued
#: (another worker re-scored it meanwhile: its new record stays queued), BACK is the record in
#: flight; BACK '' with TAKEN the popped record re-scored: it becomes the record in flight (1). -1:
#: not TOKEN's lease, nothing changed.
REFRESH = _COMMON + """
local h = ARGV[2]
if redis.call('HGET', P .. 'lease', h) ~= ARGV[3] then return -1 end
local q = P .. 'q:' .. h
for i = 6, #ARGV - 1, 2 do
  if redis.call('ZREM', q, ARGV[i]) == 1 then redis.call('ZADD', q, 0, ARGV[i + 1]) end
end
if ARGV[4] == '' then
  redis.call('HSET', P .. 'leaserec', h, ARGV[5])
  return 1
end
if redis.call('ZREM', q, ARGV[5]) == 0 then
  redis.call('HSET', P .. 'leaserec', h, ARGV[4])
  return 0
end
redis.call('ZADD', q, 0, ARGV[4])
redis.call('HSET', P .. 'leaserec', h, ARGV[5])
local ref = blob_ref(ARGV[5])
return {1, ref and redis.call('HGET', P .. 'blobs', ref) or false}
"""

#: ARGV: P, CURSOR, SKIP, COUNT, DEPTH, VERSION, WANT -> {CURSOR, SKIP, HOSTS SCANNED, NEWEST
#: VERSION, HOST, {RECORD...}, ...}: an HSCAN step over the crawl's hosts (its first SKIP hosts
#: left out) and, for each host with any, the records among its DEPTH best scored under a version
#: older than VERSION, best first (the background re-scoring's; NEWEST VERSION: the newest a record
#: carried, -1 if none). It stops once WANT stale records are found or 8 WANT records were read. A
#: host with more stale records than are still wanted gives its longest-stale ones (scored under
#: the oldest versions; among those of one version, the best), as the in-process frontier's partial
#: pass does (``frontier/rescoring.py``): best first, every learner update would make the same top
#: part stale again and the records queued at a low moment would never be reached. That was the
#: host's turn, though only a part: the CURSOR and SKIP returned go on with the hosts after it
#: (the same step, past the hosts read, when it stopped inside one; the next step at its end), and
#: the host's rest, the longest stale then, is taken when the scan comes back to it. Fresh records
#: never leave Redis.
STALE_TOPS = _COMMON + """
local page = redis.call('HSCAN', P .. 'state', ARGV[2], 'COUNT', tonumber(ARGV[4]))
local items = page[2]
local skip = tonumber(ARGV[3])
local depth, version, want = tonumber(ARGV[5]), tonumber(ARGV[6]), tonumber(ARGV[7])
local out = {page[1], 0, 0, -1}
local newest, found, read, scanned = -1, 0, 0, 0
for i = 2 * skip + 1, #items, 2 do
  if found >= want or read >= 8 * want then break end
  local h = items[i]
  local stale, ages = {}, {}  -- the host's stale records, best first, and their versions
  local recs = redis.call('ZRANGE', P .. 'q:' .. h, 0, depth - 1)
  read = read + #recs
  scanned = scanned + 1
  for _, rec in ipairs(recs) do
    local v = version_of(rec)
    if v > newest then newest = v end
    if v < version then
      stale[#stale + 1] = rec
      ages[#ages + 1] = v
    end
  end
  local room = want - found
  if #stale > room then
    -- the ROOM longest stale: every record of a version older than the one ROOM reaches into,
    -- and the best of that one (counted by version: a host's window holds few of them)
    local count, versions = {}, {}
    for _, v in ipairs(ages) do
      if not count[v] then
        count[v] = 0
        versions[#versions + 1] = v
      end
      count[v] = count[v] + 1
    end
    table.sort(versions)
    local last, left = nil, room
    for _, v in ipairs(versions) do
      if count[v] >= left then
        last = v
        break
      end
      left = left - count[v]
    end
    local taken = {}
    for j, rec in ipairs(stale) do
      local v = ages[j]
      if v < last then
        taken[#taken + 1] = rec
      elseif v == last and left > 0 then
        taken[#taken + 1] = rec
        left = left - 1
      end
    end
    stale = taken
  end
  if #stale > 0 then
    found = found + #stale
    out[#out + 1] = h
    out[#out + 1] = stale
  end
end
if 2 * (skip + scanned) < #items then
  -- stopped inside the step: this step again, past the hosts read (a host taken in part included)
  out[1], out[2] = ARGV[2], skip + scanned
end
out[3], out[4] = scanned, newest
return out
"""

#: ARGV: P, then for each host: HOST, N, KEY_1, HEAD_1, ... KEY_N, HEAD_N -> records replaced: SWAP
#: (token '') of several hosts in one call, each record named by its KEY (order key and seq: unique
#: in the crawl) and given its new HEAD (order key, seq, version: ``records.FLAG`` bytes), its URL
#: and blob kept as they are in Redis: a re-scoring sends 28 bytes a record, not the record twice.
#: A record no longer queued (another worker re-scored or popped it meanwhile) is left alone.
SWAP_MANY = _COMMON + """
local i = 2
local n = 0
local t = nil
while i <= #ARGV do
  local h, pairs_ = ARGV[i], tonumber(ARGV[i + 1])
  local q = P .. 'q:' .. h
  local here = 0
  for j = i + 2, i + 2 * pairs_, 2 do
    local key = ARGV[j]
    -- the first record at or after KEY is the one named, if it is still queued
    local rec = redis.call('ZRANGEBYLEX', q, '[' .. key, '+', 'LIMIT', 0, 1)[1]
    if rec and string.sub(rec, 1, K) == key then
      redis.call('ZREM', q, rec)
      redis.call('ZADD', q, 0, ARGV[j + 1] .. string.sub(rec, %(head)d + 1))
      here = here + 1
    end
  end
  i = i + 2 + 2 * pairs_
  if here > 0 and redis.call('HGET', P .. 'state', h) == 'R' then
    t = t or now()
    unfile(h, 'R')
    schedule(h, t)
  end
  n = n + here
end
return n
""" % {"head": HEAD_BYTES}

#: ARGV: P, HOST, TOKEN, WORKER, RECORD, BLOB -> the lease's record in flight put back in the queue
#: as RECORD (a request held back, or sent to robots.txt first), its codec bytes BLOB ('' for none)
#: in place of the old record's; the host stays held. -1: not TOKEN's lease, nothing changed.
REQUEUE = _COMMON + """
local h = ARGV[2]
if redis.call('HGET', P .. 'lease', h) ~= ARGV[3] then return -1 end
local old = redis.call('HGET', P .. 'leaserec', h)
if old and blob_ref(old) ~= blob_ref(ARGV[5]) then drop_blob(old) end
redis.call('HDEL', P .. 'leaserec', h)
local added = redis.call('ZADD', P .. 'q:' .. h, 0, ARGV[5])
if added == 1 then
  redis.call('INCR', P .. 'size')
  if ARGV[6] ~= '' then redis.call('HSET', P .. 'blobs', blob_ref(ARGV[5]), ARGV[6]) end
end
return added
"""

#: ARGV: P, HOST, TOKEN, WORKER, DELAY, URL, HOSTSTATE, ROBOTS -> 1, or -1 when the lease is not TOKEN's
#: (it was reaped: counted). The host may be contacted DELAY seconds from now (server time),
#: whichever worker asks; URL (may be ''): the page fetched under the lease, now work of WORKER
#: until done; HOSTSTATE, ROBOTS (may be ''): what this worker knows of the host (its timing; its
#: robots.txt, when fetched under this lease), handed to its next holders.
RELEASE = _COMMON + """
local h, token = ARGV[2], ARGV[3]
if redis.call('HGET', P .. 'lease', h) ~= token then
  redis.call('HINCRBY', P .. 'stats', 'lost_releases', 1)
  return -1
end
local t = now()
local at = math.max(tonumber(redis.call('HGET', P .. 'at', h) or '0'), t + tonumber(ARGV[5]))
redis.call('HSET', P .. 'at', h, at)
local rec = redis.call('HGET', P .. 'leaserec', h)
if rec and ARGV[6] ~= '' then
  redis.call('HSET', P .. 'work', ARGV[4] .. '\\n' .. ARGV[6], h .. '\\n' .. rec)
elseif rec then
  drop_blob(rec)  -- not a page fetched (its request went elsewhere): the record ends here
end
redis.call('ZREM', P .. 'soon', h)
if ARGV[7] ~= '' then redis.call('HSET', P .. 'hoststate', h, ARGV[7]) end
if ARGV[8] ~= '' then redis.call('HSET', P .. 'robots', h, ARGV[8]) end
redis.call('HDEL', P .. 'leaserec', h)
redis.call('HDEL', P .. 'lease', h)
redis.call('ZREM', P .. 'leases', h)
schedule(h, t)
return 1
"""

#: ARGV: P, WORKER, TTL, URL... -> the pages done (their links queued): no longer work, their
#: records' codec bytes deleted with them; the worker's heartbeat renewed
DONE = _COMMON + """
local w = ARGV[2]
local t = redis.call('TIME')
redis.call('ZADD', P .. 'workers', tonumber(t[1]) + tonumber(ARGV[3]), w)
local n = 0
for i = 4, #ARGV do
  local field = w .. '\\n' .. ARGV[i]
  local value = redis.call('HGET', P .. 'work', field)
  if value then
    redis.call('HDEL', P .. 'work', field)
    drop_blob(string.sub(value, string.find(value, '\\n', 1, true) + 1))
    n = n + 1
  end
end
return n
"""

#: ARGV: P, WORKER, TTL, HOST... -> the worker's heartbeat, and the leases of the hosts it holds
#: (requests in flight) extended by TTL
HEARTBEAT = """
local P = ARGV[1]
local t = redis.call('TIME')
local until_ = tonumber(t[1]) + tonumber(t[2]) / 1000000 + tonumber(ARGV[3])
redis.call('ZADD', P .. 'workers', until_, ARGV[2])
local prefix = ARGV[2] .. ':'
for i = 4, #ARGV do
  local token = redis.call('HGET', P .. 'lease', ARGV[i])
  if token and string.sub(token, 1, #prefix) == prefix then
    redis.call('ZADD', P .. 'leases', 'XX', until_, ARGV[i])
  end
end
return 1
"""

#: ARGV: P, LIMIT -> {leases reaped, work requeued, workers gone}: the leases that ran out (their
#: worker died, or stalled past the lease) and the work of workers whose heartbeat stopped go back
#: to the queues. Idempotent; any worker may run it.
REAP = _COMMON + """
local t = now()
local limit = tonumber(ARGV[2])
local reaped = 0
for _, h in ipairs(redis.call('ZRANGEBYSCORE', P .. 'leases', '-inf', t, 'LIMIT', 0, limit)) do
  reap_host(h, t)
  reaped = reaped + 1
end
local requeued, gone = 0, 0
local dead = redis.call('ZRANGEBYSCORE', P .. 'workers', '-inf', t, 'LIMIT', 0, 16)
for _, w in ipairs(dead) do
  local prefix = w .. '\\n'
  local cursor = '0'
  repeat
    local page = redis.call('HSCAN', P .. 'work', cursor, 'MATCH', w .. '\\n*', 'COUNT', 512)
    cursor = page[1]
    local items = page[2]
    for i = 1, #items, 2 do
      local value = items[i + 1]
      local cut = string.find(value, '\\n', 1, true)
      local h = string.sub(value, 1, cut - 1)
      local rec = string.sub(value, cut + 1)
      if redis.call('ZADD', P .. 'q:' .. h, 0, rec) == 1 then
        redis.call('INCR', P .. 'size')
        local st = redis.call('HGET', P .. 'state', h)
        if st == 'I' or not st then schedule(h, t) elseif st == 'R' then unfile(h, 'R'); schedule(h, t) end
      end
      redis.call('HDEL', P .. 'work', items[i])
      requeued = requeued + 1
    end
  until cursor == '0'
  redis.call('ZREM', P .. 'workers', w)
  gone = gone + 1
end
if reaped > 0 then redis.call('HINCRBY', P .. 'stats', 'leases_reaped', reaped) end
if requeued > 0 then redis.call('HINCRBY', P .. 'stats', 'work_requeued', requeued) end
return {reaped, requeued, gone}
"""

#: ARGV: P, HORIZON, LIMIT, HOST... -> the best KEY queued at the HOSTs given (the caller's hosts in
#: flight, soon free), at the LIMIT hosts nobody holds that are soonest free within HORIZON seconds,
#: and at the LIMIT hosts other workers hold that their holders expect free by then (``soon``), or
#: false: what waiting a little could buy (the scheduler's patience)
BEST_SOON = _COMMON + """
local t = now()
local best = nil
local function consider(h)
  local top = redis.call('ZRANGE', P .. 'q:' .. h, 0, 0)[1]
  if top and (not best or less(top, best)) then best = top end
end
for i = 4, #ARGV do consider(ARGV[i]) end
local soon = redis.call('ZRANGEBYSCORE', P .. 'waiting', '-inf', t + tonumber(ARGV[2]), 'LIMIT', 0, tonumber(ARGV[3]))
for _, h in ipairs(soon) do consider(h) end
-- hosts other workers hold, by the time their holders expect them free
local held = redis.call('ZRANGEBYSCORE', P .. 'soon', '-inf', t + tonumber(ARGV[2]), 'LIMIT', 0, tonumber(ARGV[3]))
for _, h in ipairs(held) do consider(h) end
if not best then return false end
return string.sub(best, 1, K)
"""

#: ARGV: P, HOST -> the host's queue emptied (its robots.txt forbids everything): {RECORD, BLOB, ...}
#: for each record dropped (BLOB false for a record with no codec bytes), which leave Redis with it
DROP_HOST = _COMMON + """
local h = ARGV[2]
local q = P .. 'q:' .. h
local recs = redis.call('ZRANGE', q, 0, -1)
local out = {}
for _, rec in ipairs(recs) do
  local ref = blob_ref(rec)
  out[#out + 1] = rec
  out[#out + 1] = ref and redis.call('HGET', P .. 'blobs', ref) or false
  if ref then redis.call('HDEL', P .. 'blobs', ref) end
end
if #recs > 0 then
  redis.call('DEL', q)
  redis.call('DECRBY', P .. 'size', #recs)
end
local st = redis.call('HGET', P .. 'state', h)
if st == 'R' or st == 'W' then
  unfile(h, st)
  redis.call('HSET', P .. 'state', h, 'I')
end
return out
"""

#: ARGV: P, HOST, RECORD... -> {RECORD, BLOB, ...} for each record removed (a prune of the worst
#: records of the crawl; BLOB false for a record with no codec bytes); one no longer queued (popped
#: or re-scored meanwhile) is left alone
DROP = _COMMON + """
local h = ARGV[2]
local q = P .. 'q:' .. h
local out = {}
for i = 3, #ARGV do
  if redis.call('ZREM', q, ARGV[i]) == 1 then
    local ref = blob_ref(ARGV[i])
    out[#out + 1] = ARGV[i]
    out[#out + 1] = ref and redis.call('HGET', P .. 'blobs', ref) or false
    if ref then redis.call('HDEL', P .. 'blobs', ref) end
  end
end
local n = #out / 2
if n > 0 then
  redis.call('DECRBY', P .. 'size', n)
  local st = redis.call('HGET', P .. 'state', h)
  if st == 'R' or st == 'W' then unfile(h, st); schedule(h, now()) end
end
return out
"""

__all__ = ["BEST_SOON", "DONE", "DROP", "DROP_HOST", "HEAD_BYTES", "HEARTBEAT", "KEY_BYTES", "PEEK", "POP",
           "PUSH", "REF_BYTES", "REAP", "REFRESH", "RELEASE", "REQUEUE", "STALE_TOPS", "SWAP", "SWAP_MANY"]
