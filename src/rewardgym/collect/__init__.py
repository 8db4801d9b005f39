"""Rollout collection: materialization, concurrent dispatch with retries, resume, aggregate metrics."""
