"""Fault injection for the mock market: per endpoint, by probability, in time windows, or a number of times.

A spec is rules separated by ``;``::

    ENDPOINT:FAULT[=ARG][@PROBABILITY][/START-END][#COUNT]

ENDPOINT is ``ask``, ``poll``, ``fetch``, ``complete``, ``withdraw`` or ``*``. FAULT is one of

    429, 500, 502, 503, 504, 410 …   answer this status without touching market state (``410`` on complete
                                     is a "410 storm": work reported gone although it is not)
    latency=SECONDS                  wait before handling the request
    drop-before                      close the connection without answering, before any state change
    drop-after                       handle the request (state changes stick), then close without answering
    truncate                         fetch: a well-formed answer holding only the first half of the data
    corrupt                          fetch: the data with one byte changed (its sha256 no longer matches)
    skew=SECONDS                     the market's clock runs this far ahead (negative: behind) — its Date
                                     header and its signature time checks both use it

PROBABILITY defaults to 1; START-END are seconds since the server started (END may be left empty: open);
COUNT limits how many times the rule fires. Example:
``ask:429@0.3; complete:drop-after#1; fetch:truncate/10-20; *:skew=30/0-60``.
"""

from __future__ import annotations

import random
import re
import threading
from dataclasses import dataclass, field

__all__ = ["ENDPOINTS", "Fault", "FaultPlan", "FaultSpecError"]

ENDPOINTS = ("ask", "poll", "fetch", "complete", "withdraw")
_ANSWER_KINDS = ("status", "drop-before", "drop-after", "truncate", "corrupt")
_RULE = re.compile(
    r"(?P<ep>\*|[a-z]+):(?P<kind>[a-z0-9-]+)(?:=(?P<arg>[-+0-9.]+))?"
    r"(?:@(?P<p>[0-9.]+))?(?:/(?P<t0>[0-9.]+)-(?P<t1>[0-9.]*))?(?:#(?P<n>[0-9]+))?"
)


class FaultSpecError(ValueError):
    """A --faults spec that does not parse; the message names the rule."""


@dataclass
class Fault:
    endpoint: str  # an ENDPOINTS name or "*"
    kind: str  # status | latency | drop-before | drop-after | truncate | corrupt | skew
    value: float = 0.0  # the status, seconds of latency or of skew
    probability: float = 1.0
    start_s: float = 0.0
    end_s: float | None = None
    count: int | None = None
    fired: int = field(default=0)
    text: str = ""

    def active(self, endpoint: str | None, t: float) -> bool:
        if endpoint is not None and self.endpoint not in ("*", endpoint):
            return False
        if t < self.start_s or (self.end_s is not None and t >= self.end_s):
            return False
        return self.count is None or self.fired < self.count


def _parse_rule(text: str) -> Fault:
    m = _RULE.fullmatch(text.replace(" ", ""))
    if not m:
        raise FaultSpecError(f"fault rule {text!r} is not ENDPOINT:FAULT[=ARG][@P][/START-END][#COUNT]")
    ep, kind, arg = m["ep"], m["kind"], m["arg"]
    if ep != "*" and ep not in ENDPOINTS:
        raise FaultSpecError(f"fault rule {text!r}: endpoint must be one of {', '.join(ENDPOINTS)} or *")
    value = 0.0
    if kind.isdigit():
        value = float(kind)
        if not 400 <= value <= 599:
            raise FaultSpecError(f"fault rule {text!r}: a status fault is 400-599")
        kind = "status"
    elif kind in ("latency", "skew"):
        if arg is None:
            raise FaultSpecError(f"fault rule {text!r}: {kind} needs =SECONDS")
        try:
            value = float(arg)
        except ValueError:
            raise FaultSpecError(f"fault rule {text!r}: {arg!r} is not a number of seconds") from None
        if kind == "latency" and value < 0:
            raise FaultSpecError(f"fault rule {text!r}: latency cannot be negative")
    elif kind in ("truncate", "corrupt"):
        if ep not in ("fetch", "*"):
            raise FaultSpecError(f"fault rule {text!r}: {kind} applies to fetch only")
    elif kind not in ("drop-before", "drop-after"):
        raise FaultSpecError(f"fault rule {text!r}: unknown fault {kind!r}")
    if arg is not None and kind not in ("latency", "skew"):
        raise FaultSpecError(f"fault rule {text!r}: {kind} takes no =ARG")
    p = float(m["p"]) if m["p"] is not None else 1.0
    if not 0.0 < p <= 1.0:
        raise FaultSpecError(f"fault rule {text!r}: probability must be in (0, 1]")
    t0 = float(m["t0"]) if m["t0"] is not None else 0.0
    t1 = float(m["t1"]) if m["t1"] else None
    if t1 is not None and t1 <= t0:
        raise FaultSpecError(f"fault rule {text!r}: window end must be after its start")
    n = int(m["n"]) if m["n"] is not None else None
    return Fault(ep, kind, value, p, t0, t1, n, text=text.strip())


class FaultPlan:
    """The parsed rules and their firing state (thread-safe; ``seed`` makes the coin flips repeatable)."""

    def __init__(self, rules: list[Fault] | None = None, *, seed: int | None = None) -> None:
        self.rules = list(rules or [])
        self._rng = random.Random(seed)
        self._lock = threading.Lock()

    @classmethod
    def parse(cls, spec: str | None, *, seed: int | None = None) -> FaultPlan:
        rules = [_parse_rule(r) for r in (spec or "").split(";") if r.strip()]
        return cls(rules, seed=seed)

    def add(self, rule: str) -> None:
        with self._lock:
            self.rules.append(_parse_rule(rule))

    def clear(self) -> None:
        with self._lock:
            self.rules.clear()

    def _fire(self, rule: Fault) -> bool:
        if rule.probability < 1.0 and self._rng.random() >= rule.probability:
            return False
        rule.fired += 1
        return True

    def pick(self, endpoint: str, t: float) -> tuple[float, Fault | None]:
        """For one request: the latency to add, and at most one fault that shapes the answer."""
        latency = 0.0
        answer: Fault | None = None
        with self._lock:
            for rule in self.rules:
                if rule.kind in ("skew",) or not rule.active(endpoint, t):
                    continue
                if rule.kind == "latency":
                    if self._fire(rule):
                        latency += rule.value
                elif answer is None and self._applies(rule, endpoint) and self._fire(rule):
                    answer = rule
        return latency, answer

    @staticmethod
    def _applies(rule: Fault, endpoint: str) -> bool:
        return rule.kind not in ("truncate", "corrupt") or endpoint == "fetch"

    def skew(self, t: float) -> float:
        """The clock offset in force at ``t`` (the sum of the active skew rules)."""
        with self._lock:
            return sum(r.value for r in self.rules if r.kind == "skew" and r.active(None, t))

    def describe(self) -> list[dict[str, object]]:
        with self._lock:
            return [{"rule": r.text, "fired": r.fired} for r in self.rules]
