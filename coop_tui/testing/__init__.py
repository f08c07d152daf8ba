"""Test and benchmark helpers that ship with the package (the loopback LLM server)."""
