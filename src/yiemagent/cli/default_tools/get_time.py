"""Example tool `get_time`: the current local time in a city or an IANA time zone.

A small city table covers common names; otherwise any IANA zone ("Europe/Paris") or the city
part of one ("paris", "new york") is accepted, case-insensitively.
"""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from zoneinfo import ZoneInfo, available_timezones

from yiemagent import AgentTool, tool

CITIES: dict[str, str] = {
    "tokyo": "Asia/Tokyo",
    "beijing": "Asia/Shanghai",
    "shanghai": "Asia/Shanghai",
    "hong kong": "Asia/Hong_Kong",
    "singapore": "Asia/Singapore",
    "seoul": "Asia/Seoul",
    "delhi": "Asia/Kolkata",
    "new delhi": "Asia/Kolkata",
    "mumbai": "Asia/Kolkata",
    "bangkok": "Asia/Bangkok",
    "dubai": "Asia/Dubai",
    "moscow": "Europe/Moscow",
    "istanbul": "Europe/Istanbul",
    "london": "Europe/London",
    "paris": "Europe/Paris",
    "berlin": "Europe/Berlin",
    "madrid": "Europe/Madrid",
    "rome": "Europe/Rome",
    "amsterdam": "Europe/Amsterdam",
    "zurich": "Europe/Zurich",
    "cairo": "Africa/Cairo",
    "lagos": "Africa/Lagos",
    "johannesburg": "Africa/Johannesburg",
    "new york": "America/New_York",
    "nyc": "America/New_York",
    "washington": "America/New_York",
    "toronto": "America/Toronto",
    "chicago": "America/Chicago",
    "denver": "America/Denver",
    "los angeles": "America/Los_Angeles",
    "san francisco": "America/Los_Angeles",
    "seattle": "America/Los_Angeles",
    "mexico city": "America/Mexico_City",
    "sao paulo": "America/Sao_Paulo",
    "buenos aires": "America/Argentina/Buenos_Aires",
    "sydney": "Australia/Sydney",
    "melbourne": "Australia/Melbourne",
    "auckland": "Pacific/Auckland",
    "honolulu": "Pacific/Honolulu",
    "utc": "UTC",
    "gmt": "UTC",
}


@cache
def _zones_by_key() -> dict[str, str]:
    """Lower-cased zone names and their city parts ("new york") → the IANA zone."""
    zones: dict[str, str] = {}
    for zone in sorted(available_timezones()):
        zones[zone.lower()] = zone
        city = zone.rsplit("/", 1)[-1].replace("_", " ").lower()
        zones.setdefault(city, zone)
    return zones


def resolve_zone(place: str) -> str:
    """The IANA zone for a city or zone name.

    Raises:
        ValueError: the place is unknown (the text says what is accepted).
    """
    key = " ".join(place.replace("_", " ").split()).lower().strip(" .,?!")
    zone = CITIES.get(key) or _zones_by_key().get(key)
    if zone is None:
        zone = _zones_by_key().get(place.strip().lower())
    if zone is None:
        raise ValueError(
            # No example city here: the embedded model copies examples into its next call.
            f"Unknown place {place!r}: give the name of a city or an IANA time zone (Area/City)"
        )
    return zone


def local_time(place: str, now: datetime | None = None) -> str:
    """`now` (default: the current time) in `place`, e.g. "14:05 on Monday 2026-11-30 in
    Tokyo (Asia/Tokyo, UTC+09:00)"."""
    zone = resolve_zone(place)
    moment = (now or datetime.now(UTC)).astimezone(ZoneInfo(zone))
    offset = moment.strftime("%z")
    offset = f"{offset[:3]}:{offset[3:]}" if offset else "+00:00"
    return f"{moment:%H:%M on %A %Y-%m-%d} in {place.strip()} ({zone}, UTC{offset})"


@tool(parallel=True)
def get_time(place: str) -> str:
    """Current local time in a city or time zone.

    Args:
        place: The city, or the IANA time zone, the user asks about.
    """
    return local_time(place)


def get_tool() -> AgentTool:
    """The `get_time` tool (tool file)."""
    return get_time
