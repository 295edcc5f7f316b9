"""Repeated Events become one Event with a count, as client-go's `EventCorrelator` makes them.

A collector that flaps moves the same way again and again; a new Event for each move would
fill the namespace (and etcd) with copies. client-go's recorder (`tools/record`,
`events_cache.go`) correlates every Event before sending it, in two steps that this module
follows:

- **Aggregation** (`EventAggregator`): Events on the same object with the same type and reason
  but different messages are "similar". Once 10 distinct messages were seen with no gap
  longer than 10 minutes between them, further similar Events are replaced by one Event whose
  message is `(combined from similar events): <the latest message>`.
- **Deduplication** (`eventLogger`): an Event equal to one sent before (same object, type,
  reason and message; or the same combined Event) is not created again: the existing Event's
  `count` is raised and its `lastTimestamp` and `message` patched, and its `firstTimestamp`
  kept. If that Event is gone (Events expire after an hour), it is created again under its name
  with the raised count.

Both caches are least-recently-used with client-go's bound (4096 keys). Not taken: client-go's
spam filter, which drops Events beyond a burst of 25 per object (one more per 5 minutes):
here every move stays on record as a count, and the recorder's bounded queue already protects
the API server. Times are the Events' own (the injected clock), so the window follows the
demo's fast clock too.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Generic, TypeVar

from controller.spoke.addon import EventRecord

__all__ = ["COMBINED_PREFIX", "Correlation", "EventCorrelator"]

COMBINED_PREFIX = "(combined from similar events): "
_MAX_SIMILAR = 10  # client-go's defaultAggregateMaxEvents
_SIMILAR_WINDOW = timedelta(seconds=600)  # defaultAggregateIntervalInSeconds
_CACHE_SIZE = 4096  # maxLruCacheEntries

K = TypeVar("K")
V = TypeVar("V")


class _LRU(Generic[K, V]):
    """A least-recently-used map of bounded size (client-go's `lru.Cache`)."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: OrderedDict[K, V] = OrderedDict()

    def get(self, key: K) -> V | None:
        if key not in self._items:
            return None
        self._items.move_to_end(key)
        return self._items[key]

    def put(self, key: K, value: V) -> None:
        self._items[key] = value
        self._items.move_to_end(key)
        while len(self._items) > self._size:
            self._items.popitem(last=False)


_Key = tuple[str | None, str, str, str]  # the object's uid, type, reason, message


@dataclass(slots=True)
class _Similar:
    """The distinct messages of similar Events, and when the latest of them came."""

    messages: set[str] = field(default_factory=set)
    last: datetime | None = None


@dataclass(frozen=True, slots=True)
class _Sent:
    """What the API server holds for one key: the Event's name, count and first time."""

    name: str | None
    count: int
    first_at: datetime


@dataclass(frozen=True, slots=True)
class Correlation:
    """What to send for one EventRecord: `event` to create, or (`update`) the count, last
    time and message to patch onto the existing Event `event.name`; `key` is what to tell
    `EventCorrelator.sent` once the API server answered."""

    event: EventRecord
    update: bool
    key: _Key


class EventCorrelator:
    """client-go's `EventCorrelator` without its spam filter; one thread uses it."""

    def __init__(
        self,
        *,
        max_similar: int = _MAX_SIMILAR,
        window: timedelta = _SIMILAR_WINDOW,
        cache_size: int = _CACHE_SIZE,
    ) -> None:
        self._max_similar = max_similar
        self._window = window
        self._similar: _LRU[_Key, _Similar] = _LRU(cache_size)
        self._sent: _LRU[_Key, _Sent] = _LRU(cache_size)

    def correlate(self, record: EventRecord) -> Correlation:
        """The Event to send for `record`: itself, the combined Event of its similar ones, or
        an update of the Event already sent for either."""
        event, key = self._aggregate(record)
        before = self._sent.get(key)
        update = before is not None and before.name is not None
        if before is not None:
            event = replace(
                event, name=before.name, count=before.count + 1, first_at=before.first_at
            )
        self._sent.put(key, _Sent(event.name, event.count, event.first_at or event.at))
        return Correlation(event, update, key)

    def sent(self, correlation: Correlation, name: str) -> None:
        """The API server holds the Event as `name` (client-go's `UpdateState`)."""
        event = correlation.event
        self._sent.put(correlation.key, _Sent(name, event.count, event.first_at or event.at))

    def _aggregate(self, record: EventRecord) -> tuple[EventRecord, _Key]:
        """`EventAggregate`: the record and its own key, or past the threshold of distinct
        similar messages, the combined Event and the key shared by all of them."""
        similar_key: _Key = (record.uid, record.type, record.reason, "")
        similar = self._similar.get(similar_key)
        if similar is None or similar.last is None or record.at - similar.last > self._window:
            similar = _Similar()
        similar.messages.add(record.message)
        similar.last = record.at
        self._similar.put(similar_key, similar)
        if len(similar.messages) < self._max_similar:
            return record, (record.uid, record.type, record.reason, record.message)
        similar.messages.pop()  # client-go's PopAny: the set never grows past the threshold
        combined = replace(
            record, message=COMBINED_PREFIX + record.message, name=None, count=1, first_at=None
        )
        return combined, similar_key
