"""Stand-in metrics file: building a prompt must never import it."""

raise RuntimeError("the stand-in metrics file was imported")
