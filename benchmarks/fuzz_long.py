"""A longer fuzzing run than the suite's (issue 6): hostile links through the link
decoder and the CLI, and through the real app with AppTest.  Prints how many
cases ran and how many failed.  Run by hand:

    .venv/bin/python benchmarks/fuzz_long.py [--links 20000] [--cli 2000] [--app 150]
"""

from __future__ import annotations

import argparse
import io
import sys
import time
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from planner.cli.main import main as cli  # noqa: E402
from planner.links import FIELDS, from_query  # noqa: E402
from tests.test_fuzz_links import keys, values  # noqa: E402  (the suite's strategies)


def count_run(name: str, n: int, strategy, check) -> None:
    stats = {"cases": 0, "failures": 0, "first": None}

    @settings(max_examples=n, deadline=None, database=None, suppress_health_check=list(HealthCheck))
    @given(strategy)
    def run(case):
        stats["cases"] += 1
        try:
            check(case)
        except Exception as exc:  # counted and reported, the run goes on
            stats["failures"] += 1
            stats["first"] = stats["first"] or f"{type(exc).__name__}: {exc}"[:300]

    t0 = time.perf_counter()
    run()
    print(
        f"{name:<22} {stats['cases']:>7,} cases  {stats['failures']} failures  {time.perf_counter() - t0:6.1f} s"
        + (f"  first: {stats['first']}" if stats["first"] else "")
    )


def check_link(pairs) -> None:
    scenario, issues = from_query(urlencode(pairs), {"h100-sxm"}, {"llama-3.1-8b"})
    assert all(len(i.message) < 1000 for i in issues)


def check_cli(pairs) -> None:
    out, err = io.StringIO(), io.StringIO()
    code = cli(["evaluate", urlencode(pairs), "--format", "csv"], out=out, err=err)
    assert code in (0, 2) and "Traceback" not in err.getvalue()


def check_app(query) -> None:
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    for k, v in query.items():
        at.query_params[k] = v
    at.run()
    assert not at.exception, [e.message for e in at.exception]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--links", type=int, default=20_000)
    ap.add_argument("--cli", type=int, default=2_000)
    ap.add_argument("--app", type=int, default=150)
    args = ap.parse_args()
    pairs = st.lists(st.tuples(keys, values), max_size=12)
    count_run("link decoder", args.links, pairs, check_link)
    count_run("CLI evaluate", args.cli, pairs, check_cli)
    count_run(
        "app (AppTest)",
        args.app,
        st.dictionaries(st.sampled_from(list(FIELDS)), values, min_size=1, max_size=5),
        check_app,
    )


if __name__ == "__main__":
    main()
