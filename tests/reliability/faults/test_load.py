"""Load, the CI subset of the load scenario: 3,000 rollouts at concurrency 512 through the real stack,
instant stub upstream.

No failure, every reward the verifier's, bounded file descriptors, every server healthy afterwards and no
process left behind. The full 20,000-rollout run with RSS samples over time is
``benchmarks/reliability/run_all.py``.
"""

from __future__ import annotations

from pathlib import Path

from tests.stubs.load_harness import run_load, stable_rss

ROLLOUTS = 3000
CONCURRENCY = 512


def test_load_at_concurrency_512(tmp_path: Path) -> None:
    report = run_load(tmp_path, rollouts=ROLLOUTS, concurrency=CONCURRENCY)
    assert report.code == 0, report.output_tail
    assert report.partition is not None
    assert report.partition.succeeded == ROLLOUTS and report.partition.failed == 0
    assert report.samples, "no sample taken while the collector ran"
    # One pooled connection per in-flight rollout, plus files, pipes and the event loop.
    assert report.peak_fds("collector") <= CONCURRENCY + 64, report.samples[-1]
    # The agent holds the collector's connections and its own pooled ones to the model and environment.
    # Live connections, not raw descriptors: a connection the peer closed waits in CLOSE_WAIT for a busy
    # event loop, so the raw count depends on the machine's load (see tests/stubs/load_harness.py).
    assert report.peak_live_connections("mcqa_simple_agent") <= 3 * CONCURRENCY + 64
    for server in ("policy_model", "mcqa"):
        assert report.peak_live_connections(server) <= 2 * CONCURRENCY + 64, server
    for server in ("mcqa_simple_agent", "policy_model", "mcqa"):
        assert report.peak_other_fds(server) <= 64, server  # files and pipes: nothing leaks per rollout
    assert stable_rss(report, slack_mib=32.0), report.rss_mib
    assert report.healthy_after, report.health
    assert report.orphans == 0
