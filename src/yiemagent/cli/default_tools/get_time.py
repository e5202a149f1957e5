"""Example tool `get_time`: the current local time in a city or an IANA time zone.

A small city table covers common names, also as other languages write them ("Wien",
"Lisboa", "Nueva York"); otherwise any IANA zone ("Europe/Paris") or the city part of one
("paris", "new york") is accepted, case-insensitively and with or without accents
("Bogotá", "Montréal"), and so is an offset from UTC as people write it ("GMT-5" is five
hours behind; IANA's Etc/GMT-5, POSIX-signed, is five hours ahead and is only taken whole).
"""

from __future__ import annotations

import re
import unicodedata
from datetime import UTC, datetime, timedelta, timezone, tzinfo
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
    # As other languages write them (a model asked in that language copies the name).
    "wien": "Europe/Vienna",
    "vienne": "Europe/Vienna",
    "viena": "Europe/Vienna",
    "lisboa": "Europe/Lisbon",
    "lisbonne": "Europe/Lisbon",
    "roma": "Europe/Rome",
    "milano": "Europe/Rome",
    "milan": "Europe/Rome",
    "napoli": "Europe/Rome",
    "firenze": "Europe/Rome",
    "venezia": "Europe/Rome",
    "torino": "Europe/Rome",
    "munchen": "Europe/Berlin",
    "munich": "Europe/Berlin",
    "koln": "Europe/Berlin",
    "cologne": "Europe/Berlin",
    "hamburg": "Europe/Berlin",
    "frankfurt": "Europe/Berlin",
    "praha": "Europe/Prague",
    "warszawa": "Europe/Warsaw",
    "krakow": "Europe/Warsaw",
    "varsovie": "Europe/Warsaw",
    "moskva": "Europe/Moscow",
    "moscou": "Europe/Moscow",
    "moscu": "Europe/Moscow",
    "kyiv": "Europe/Kyiv",
    "kiev": "Europe/Kyiv",
    "athina": "Europe/Athens",
    "athenes": "Europe/Athens",
    "atenas": "Europe/Athens",
    "bruxelles": "Europe/Brussels",
    "brussel": "Europe/Brussels",
    "den haag": "Europe/Amsterdam",
    "kobenhavn": "Europe/Copenhagen",
    "geneve": "Europe/Zurich",
    "genf": "Europe/Zurich",
    "zurigo": "Europe/Zurich",
    "barcelona": "Europe/Madrid",
    "sevilla": "Europe/Madrid",
    "londres": "Europe/London",
    "londra": "Europe/London",
    "edimbourg": "Europe/London",
    "parigi": "Europe/Paris",
    "marseille": "Europe/Paris",
    "lyon": "Europe/Paris",
    "berlino": "Europe/Berlin",
    "tokio": "Asia/Tokyo",
    "pekin": "Asia/Shanghai",
    "pechino": "Asia/Shanghai",
    "seul": "Asia/Seoul",
    "nueva york": "America/New_York",
    "nova iorque": "America/New_York",
    "new york city": "America/New_York",
    "ciudad de mexico": "America/Mexico_City",
    "mexico": "America/Mexico_City",
    "rio de janeiro": "America/Sao_Paulo",
    "montreal": "America/Toronto",
    "quebec": "America/Toronto",
    "vancouver": "America/Vancouver",
    "bogota": "America/Bogota",
    "lima": "America/Lima",
    "santiago": "America/Santiago",
    "el cairo": "Africa/Cairo",
    "le caire": "Africa/Cairo",
    "il cairo": "Africa/Cairo",
}


def _folded(text: str) -> str:
    # Without accents: "bogotá" → "bogota", "münchen" → "munchen".
    parts = unicodedata.normalize("NFKD", text)
    return "".join(c for c in parts if not unicodedata.combining(c))


@cache
def _zones_by_key() -> dict[str, str]:
    """Lower-cased zone names and their city parts ("new york"), without accents → the IANA
    zone."""
    zones: dict[str, str] = {}
    for zone in sorted(available_timezones()):
        zones[zone.lower()] = zone
        if not _ETC_GMT.fullmatch(zone):  # "GMT-5" is no city: the offset reads it
            city = zone.rsplit("/", 1)[-1].replace("_", " ").lower()
            zones.setdefault(city, zone)
    return zones


_ETC_GMT = re.compile(r"Etc/GMT[+-]\d+")
_OFFSET = re.compile(r"(?:utc|gmt)?\s*([+-])\s*(\d{1,2})(?::?([0-5]\d))?")
"""An offset from UTC as people write it ("UTC+2", "GMT -5", "utc+05:30"): east positive."""


def _offset(key: str) -> timedelta | None:
    """The offset `key` (folded, lower case) writes; None when it is none a clock shows
    (UTC-12:00 to UTC+14:00)."""
    match = _OFFSET.fullmatch(key)
    if match is None:
        return None
    sign, hours, minutes = match.groups()
    offset = timedelta(hours=int(hours), minutes=int(minutes or 0))
    offset = -offset if sign == "-" else offset
    return offset if timedelta(hours=-12) <= offset <= timedelta(hours=14) else None


def _utc_label(offset: timedelta) -> str:
    """`offset` as "UTC+05:30"."""
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"UTC{sign}{abs(minutes) // 60:02d}:{abs(minutes) % 60:02d}"


def _clock(place: str) -> tuple[str, tzinfo]:
    """The zone's name (an IANA zone, or "UTC-05:00" for an offset) and the zone `place`
    names.

    Raises:
        ValueError: the place is unknown (the text says what is accepted).
    """
    key = _folded(" ".join(place.replace("_", " ").split()).lower().strip(" .,?!¿¡"))
    offset = _offset(key.replace("\u2212", "-"))  # U+2212, the minus sign of typeset text
    if offset is not None:
        return _utc_label(offset), timezone(offset)
    zone = CITIES.get(key) or _zones_by_key().get(key)
    if zone is None:
        zone = _zones_by_key().get(place.strip().lower())
    if zone is None:
        raise ValueError(
            # No example city here: the embedded model copies examples into its next call.
            f"Unknown place {place!r}: give the name of a city or an IANA time zone (Area/City)"
        )
    return zone, ZoneInfo(zone)


def resolve_zone(place: str) -> str:
    """The IANA zone for a city or zone name, or "UTC-05:00" for an offset from UTC.

    Raises:
        ValueError: the place is unknown (the text says what is accepted).
    """
    return _clock(place)[0]


def local_time(place: str, now: datetime | None = None) -> str:
    """`now` (default: the current time) in `place`, e.g. "14:05 on Monday 2026-11-30 in
    Tokyo (Asia/Tokyo, UTC+09:00)", or "... in GMT-5 (UTC-05:00)" for an offset."""
    zone, clock = _clock(place)
    moment = (now or datetime.now(UTC)).astimezone(clock)
    offset = _utc_label(moment.utcoffset() or timedelta())
    where = offset if zone == offset else f"{zone}, {offset}"
    return f"{moment:%H:%M on %A %Y-%m-%d} in {place.strip()} ({where})"


@tool(parallel=True)
def get_time(place: str) -> str:
    """Current local time, date and day of the week in a city or time zone.

    Args:
        place: The city, or the IANA time zone, the user asks about.
    """
    return local_time(place)


def get_tool() -> AgentTool:
    """The `get_time` tool (tool file)."""
    return get_time
