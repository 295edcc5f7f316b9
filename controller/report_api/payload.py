"""A report request's body as JSON, decoded strictly, whatever HTTP server carries it.

RFC 8259 requires UTF-8 between systems. `json.loads` on bytes would also take UTF-16 and
UTF-32 and, worse, decodes UTF-8 with `surrogatepass`: the bytes `ED A0 80` (a UTF-16
surrogate, invalid in UTF-8) would come out as a lone surrogate while every other invalid
sequence fails. Decoding the bytes first makes all invalid UTF-8 one error. `NaN` and
`Infinity` are not JSON either. What the decoded values may hold is `parse_report`'s concern.
"""

from __future__ import annotations

import json
from decimal import Decimal

__all__ = ["load_json"]


def load_json(body: bytes) -> object:
    """The JSON value of `body`; ValueError (with the decoder's reason) unless it is UTF-8 JSON."""
    return json.loads(body.decode("utf-8"), parse_constant=_no_constant, parse_float=_number)


def _no_constant(name: str) -> object:
    raise ValueError(f"{name} is not JSON")


def _number(text: str) -> int | float:
    """A JSON number with a fraction or an exponent. JSON has one number type, and JSON
    Schema's `integer` is any number whose fraction is zero: `3.0` and `3e0` are the integer 3.
    Beyond 19 digits it stays a float, for the report's checks to refuse without building a
    huge int (`1e999999999`)."""
    value = Decimal(text)
    if value.is_finite() and value == value.to_integral_value() and value.adjusted() < 19:
        return int(value)
    return float(text)
