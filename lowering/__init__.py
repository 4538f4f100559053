"""Passes that convert one level into the next (assign-layouts, fuse, tile, ...)."""
