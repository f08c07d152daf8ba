"""Textual screens of the coop-tui app, one module per screen."""
