"""Importers: bring results produced by other tools into the coop-tui database.

Each importer reads a foreign run directory, validates all of it before touching the
database (bad input: one clear message, exit code 2, nothing written), and stores it as
an ordinary run of kind ``import`` so the report, the TUI and export treat it like our own.
"""
