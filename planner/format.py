"""Display formatting for people: the one family of formatters.

Every human-readable number — the CLI's text output, the advisor's findings,
the simulator's summary, chart captions, the dashboard's headline and tables —
goes through these functions, so one quantity reads the same everywhere (one
rounding rule, one unit choice).  Machine formats (CSV, JSON) never do: they
carry SI values (``planner.export``).

Rules
  numbers   3 significant digits, thousands separators, never scientific notation;
            whole numbers as integers ("4", not "4.000000")
  bytes     binary units (KiB, MiB, GiB, TiB): 131072 → "128 KiB"
  seconds   µs below 1 ms, ms below 1 s, then s
  sequences whole sequences, rounded down: the KV cache's 101.6 ("Maximum concurrency" in vLLM's log) runs
            101 at once — the headline, the findings, the tables and the CLI all say 101
  money     "$" + 3 significant digits, cents from $100
  fractions percent with one decimal ("61.8%")
Non-finite values read "n/a" (``inf`` where it means "never", see ``fmt_num``).
"""

from __future__ import annotations

import math

from planner.units import MS_PER_S, PERCENT, US_PER_S, KiB

_BYTE_UNITS = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def fmt_sig(v: float, digits: int = 3) -> str:
    """``v`` with ``digits`` significant digits and thousands separators, never in scientific notation."""
    v = float(v)
    if v == 0 or not math.isfinite(v):
        return f"{v:g}"
    decimals = max(0, digits - 1 - math.floor(math.log10(abs(v))))
    text = f"{v:,.{decimals}f}"
    # rounding may add a digit (9.995 → 10.00): re-trim to the wanted precision
    if decimals and len(text.replace(",", "").replace(".", "").lstrip("-0")) > digits:
        text = f"{v:,.{decimals - 1}f}"
    return text


def fmt_num(v: float, digits: int = 3) -> str:
    """Whole numbers as integers with separators; others to ``digits`` significant digits.

    +inf reads "never" (a turn that never comes, e.g. the ridge batch), other
    non-finite values "n/a"."""
    v = float(v)
    if not math.isfinite(v):
        return "never" if v > 0 else "n/a"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    return fmt_sig(v, digits)


def fmt_count(v: float, noun: str | None = None) -> str:
    """A count rounded to a whole number, with ``noun`` pluralised: "1 sequence", "3 sequences"."""
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    n = round(v)
    text = f"{n:,}"
    if noun is None:
        return text
    return f"{text} {noun}" + ("" if n == 1 else "s")


def whole_sequences(v: float) -> float:
    """Sequences that run at once: ⌊v⌋ (a hair below a whole number counts whole); non-finite stays."""
    v = float(v)
    return float(math.floor(v + 1e-9)) if math.isfinite(v) else v


def fmt_sequences(v: float, noun: str | None = "sequence") -> str:
    """A concurrency in whole sequences (module doc): 101.6 → "101 sequences"."""
    return fmt_count(whole_sequences(v), noun)


def fmt_bytes(b: float) -> str:
    """Binary units: 131072 → "128 KiB"; whole bytes below 1 KiB."""
    b = float(b)
    if not math.isfinite(b):
        return "n/a"
    i = 0
    while abs(b) >= KiB and i < len(_BYTE_UNITS) - 1:
        b /= KiB
        i += 1
    return f"{int(b)} B" if i == 0 else f"{fmt_sig(b)} {_BYTE_UNITS[i]}"


def fmt_seconds(s: float) -> str:
    """µs below 1 ms, ms below 1 s, then s; 3 significant digits."""
    s = float(s)
    if not math.isfinite(s):
        return "n/a"
    if abs(s) < 1 / MS_PER_S:
        return f"{fmt_sig(s * US_PER_S)} µs"
    if abs(s) < 1:
        return f"{fmt_sig(s * MS_PER_S)} ms"
    return f"{fmt_sig(s)} s"


def fmt_tokens_per_s(v: float) -> str:
    """Whole tokens/s from 100 up, 3 significant digits below."""
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    return f"{v:,.0f} tok/s" if v >= 100 else f"{fmt_sig(v)} tok/s"


def fmt_usd(v: float) -> str:
    """Dollars: cents from $100 up, 3 significant digits below; negative amounts as "-$…"."""
    v = float(v)
    if not math.isfinite(v):
        return "n/a"
    if v < 0:
        return "-" + fmt_usd(-v)
    return f"${v:,.2f}" if v >= 100 else f"${fmt_sig(v)}"


def fmt_pct(frac: float, signed: bool = False) -> str:
    """A fraction as a percentage with one decimal: 0.618 → "61.8%" ("+61.8%" when ``signed``)."""
    frac = float(frac)
    if not math.isfinite(frac):
        return "n/a"
    pct = round(frac * PERCENT, 1)
    if pct == 0:  # never "-0.0%" (a tiny negative rounded): zero is unsigned
        return "0.0%"
    return f"{pct:+.1f}%" if signed else f"{pct:.1f}%"
