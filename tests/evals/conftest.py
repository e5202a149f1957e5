"""The `cluster` fixture (a Ray head on 127.0.0.1, one per test module) for the Ray test."""

from tests.batch._ray import cluster

__all__ = ["cluster"]
