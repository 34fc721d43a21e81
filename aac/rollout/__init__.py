"""Rollouts: the one episode driver (continuous batching) and the rollout workers that run it."""
