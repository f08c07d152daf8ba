"""Agents: everything that can fill a seat (LLM, embedded model, strategy, human, replay)."""
