"""Shared pytest configuration for ge's Python tests."""
